"""Destructive commands are never reads, and review stops each one on every host.

The list is this project's own, kept in the labelled corpus under
"## Destructive commands and bypass spellings": deleting files and whole
trees, the same through quoting tricks, wrappers (command, env, sudo, nohup,
timeout, xargs...), nested shells, eval and encoded payloads, find -delete and
-exec, git history rewriting, raw disks (dd, mkfs, shred), permissions,
shutting the machine down, fork bombs, databases dropped through a client's
-c/-e, cloud, container and cluster deletes, and the same in PowerShell and
cmd.  Each line must not be proven read (the corpus test checks its label);
here each goes through the real hook, in each host's payload shape, in a
review session, and must be stopped there (`make test` asks each line on one
host, the hosts in turn; `make test-all` on every host).
"""
import json
import os
import shutil
import tempfile

import pytest

import sts
from test_analysis import ROWS, _shell_of
from test_self_protection import (HOSTS, SHELL_TOOLS, TOOL_EVENTS, _shell_tool, denial,
                                  prompt_event)

SECTION = "## Destructive commands and bypass spellings"
SHM = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
# What review answers to a call it cannot let through.
STOPS = {"MODE_FORBIDS_MUTATION", "MUTABILITY_UNPROVEN", "GUARD_SELF_PROTECTION",
         "HASH_NOT_AUTHORIZED", "DEPENDENCY_NOT_AUTHORIZED"}


def _section(title):
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "analysis_corpus.txt"), encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    start = next(k for k, line in enumerate(lines, 1) if line.startswith(title))
    end = next((k for k, line in enumerate(lines, 1) if k > start and line.startswith("## ")),
               len(lines) + 1)
    return [row for row in ROWS if start < row[0] < end]


DESTRUCTIVE = _section(SECTION)


def test_the_list_is_broad():
    """Every family named above has lines, and the list is long enough to mean it."""
    commands = [row[3] for row in DESTRUCTIVE]
    assert len(commands) >= 250
    for needle in ("rm -rf /", "\\rm", "command rm", "env rm", "sudo rm", "nohup", "timeout",
                   "xargs", "bash -c", "eval", "base64 -d", "find . -type f -delete",
                   "-exec", "git push --force", "filter-branch", "reset --hard", "dd if=",
                   "mkfs", "shred", ":(){", "DROP DATABASE", "FLUSHALL", "kubectl delete",
                   "terraform destroy", "aws s3 rm", "docker system prune", "Remove-Item",
                   "rd /s /q"):
        assert any(needle in c for c in commands), needle
    assert {row[1] for row in DESTRUCTIVE} <= {"write", "notread", "unknown"}


@pytest.mark.parametrize("number,label,tags,command", DESTRUCTIVE,
                         ids=["L%d" % row[0] for row in DESTRUCTIVE])
def test_never_proven_read(number, label, tags, command):
    shells = [_shell_of(tags)]
    if shells == ["bash"]:
        shells.append("unknown")   # a Windows host whose shell is not named
    for shell in shells:
        verdict = sts.analyze_shell(command, shell)
        assert verdict.mutability != "read", (shell, verdict)
        assert verdict.reason in sts.ANALYSIS_REASONS or verdict.reason is None


@pytest.fixture(scope="module")
def review_sessions():
    """One review session per host, on a data folder on tmpfs."""
    root = tempfile.mkdtemp(prefix="sts-destructive-", dir=SHM)
    store = sts.Store(os.path.join(root, "state"))
    project = os.path.join(root, "proj")
    os.makedirs(project)
    sessions = {}
    for host in HOSTS:
        session = "destructive-" + host
        sts.run_hook(host, json.dumps(prompt_event(host, session, project,
                                                   "$stop-that-shit review")).encode(), store)
        sessions[host] = session
    yield store, project, sessions
    shutil.rmtree(root, ignore_errors=True)


def _ask(store, host, session, cwd, tool, arguments):
    name, build = tool
    payload = TOOL_EVENTS[host](session, cwd, name, build(arguments))
    out = sts.run_hook(host, json.dumps(payload).encode(), store)
    return json.loads(out) if out else None


def _let_through(review_sessions, monkeypatch, hosts_of):
    """(host, command) of each destructive line review let through, each line
    asked on the hosts `hosts_of(its index)` names."""
    store, project, sessions = review_sessions
    monkeypatch.setenv("STS_HOME", store.root)
    # The same sessions let a plain read through: the stops below are review's own.
    for host in HOSTS:
        tool = SHELL_TOOLS[(host, _shell_tool(host))]
        assert denial(host, _ask(store, host, sessions[host], project, tool, "ls -la")) is None
    let_through = []
    for k, (_, _, tags, command) in enumerate(DESTRUCTIVE):
        if "@ps" in tags:
            # Claude Code's PowerShell tool is the one host tool that names PowerShell.
            got = _ask(store, "claude", sessions["claude"], project,
                       ("PowerShell", lambda c: {"command": c}), command)
            text = denial("claude", got)
            if text is None or not any(code in text for code in STOPS):
                let_through.append(("claude/PowerShell", command))
            continue
        if "@win" in tags:
            continue   # the cmd.exe reading needs a Windows host; analysed above
        for host in hosts_of(k):
            tool = SHELL_TOOLS[(host, _shell_tool(host))]
            text = denial(host, _ask(store, host, sessions[host], project, tool, command))
            if text is None or not any(code in text for code in STOPS):
                let_through.append((host, command))
    return let_through


def test_review_stops_every_one_on_a_host_in_turn(review_sessions, monkeypatch):
    """`make test`: each line on one host, the hosts in turn (one engine
    judges them all; test_same_answer.py checks the hosts answer alike)."""
    assert _let_through(review_sessions, monkeypatch,
                        lambda k: [HOSTS[k % len(HOSTS)]]) == []


@pytest.mark.slow   # every line on every host: nine times the work of the test above
def test_review_stops_every_one_on_every_host(review_sessions, monkeypatch):
    assert _let_through(review_sessions, monkeypatch, lambda k: HOSTS) == []
