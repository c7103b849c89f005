"""The measured list of tests/undo_corpus.txt: irreversible actions are stopped
in `change` mode under the default undo=ask, their recoverable look-alikes pass.

Every line goes through the real hook (sts.run_hook, in each host's payload
shape, the hosts in turn) from a workspace that is a git repository under a
throwaway HOME; nothing on the list is ever run.  The guard's data folder
lives outside HOME, so that `rm -rf ~` is judged by undo= rather than by
self-protection (which still answers first for the lines that reach it).
"""
import json
import os
import shutil
import tempfile

import pytest

import sts
from test_self_protection import (HOSTS, MAIN_WRITE, SHELL_TOOLS, TOOL_EVENTS, WRITE_TOOLS,
                                  _shell_tool, denial, denied_code, prompt_event)

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "undo_corpus.txt")
MARKERS = {"⏎": "\n"}
SHM = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
# The answers that stop an irreversible line: undo= itself, or self-protection
# when the line also reaches the guard's own files (it is checked first).
STOPS = {"IRREVERSIBLE_ACTION", "GUARD_SELF_PROTECTION"}
LABELS = ("stop", "pass", "miss", "over")


def load():
    rows = []
    with open(CORPUS, encoding="utf-8") as fh:
        for number, raw in enumerate(fh, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            label, _, command = line.partition(" | ")
            assert label in LABELS and command, "undo_corpus.txt:%d" % number
            for marker, text in MARKERS.items():
                command = command.replace(marker, text)
            rows.append((number, label, command))
    return rows


ROWS = load()


class Workspace:
    """HOME, a git repository under it, a sibling folder, TMPDIR, and the
    guard's data folder beside HOME."""

    def __init__(self, root, monkeypatch):
        self.home = os.path.join(root, "home")
        self.project = os.path.join(self.home, "work", "proj")
        state = os.path.join(root, "state")
        for folder in (os.path.join(self.project, ".git"), os.path.join(self.project, "src"),
                       os.path.join(self.home, "work", "other"), state,
                       os.path.join(root, "tmp")):
            os.makedirs(folder)
        with open(os.path.join(self.project, ".git", "HEAD"), "w") as fh:
            fh.write("ref: refs/heads/main\n")
        monkeypatch.setenv("HOME", self.home)
        monkeypatch.setenv("STS_HOME", state)
        monkeypatch.setenv("TMPDIR", os.path.join(root, "tmp"))
        monkeypatch.chdir(state)
        self.store = sts.Store(state)
        self.calls = 0

    def send(self, host, payload):
        out = sts.run_hook(host, json.dumps(payload).encode(), self.store)
        return json.loads(out) if out else None

    def ask(self, host, command, directive="$stop-that-shit change"):
        """(reason code or None, STOP text) of one call in a fresh session."""
        self.calls += 1
        session = "undo-%d" % self.calls
        self.send(host, prompt_event(host, session, self.project, directive))
        name, build = SHELL_TOOLS[(host, _shell_tool(host))]
        got = self.send(host, TOOL_EVENTS[host](session, self.project, name, build(command)))
        return denied_code(host, got), denial(host, got)


@pytest.fixture(scope="module")
def workspace():
    monkeypatch = pytest.MonkeyPatch()
    root = os.path.realpath(tempfile.mkdtemp(prefix="sts-undo-", dir=SHM))
    try:
        yield Workspace(root, monkeypatch)
    finally:
        monkeypatch.undo()
        shutil.rmtree(root, ignore_errors=True)


def test_the_list_is_long_and_covers_every_class():
    stops = [c for _, label, c in ROWS if label == "stop"]
    passes = [c for _, label, c in ROWS if label == "pass"]
    assert len(stops) >= 400 and len(passes) >= 400, (len(stops), len(passes))
    for needle in ("reset --hard", "clean -f", "stash drop", "branch -D", "reflog expire",
                   "filter-branch", "push --force", "gh repo delete", "rm -rf ~",
                   "LaunchAgents", "> ~/.bashrc", "mkfs", "dd if=", "shutdown", "kubectl delete",
                   "terraform destroy", "DROP TABLE", "FLUSHALL", "-X DELETE", "rclone purge",
                   "shutil.rmtree", "execSync", "FileUtils.rm_rf", "sudo ", "env -S",
                   "GIT_WORK_TREE", "git -C", "--git-dir", "parallel ", "xargs -J", "\\\n",
                   "bash -c", "-exec", "nice ", "timeout ", "nohup "):
        assert any(needle in c for c in stops), needle
    for needle in ("rm -rf node_modules", "git reset --soft", "git push origin main",
                   "git clean -n", "kubectl get", "terraform plan", "git rm src/old.py",
                   "docker rm web"):
        assert any(needle in c for c in passes), needle


def _holds(workspace, host, label, command, code):
    if label == "stop":
        return code in STOPS
    if label in ("miss", "over"):
        return (code == "IRREVERSIBLE_ACTION") == (label == "over")
    # A look-alike goes through, or is stopped by a check of its own that
    # stops it just the same when undo= allows everything.
    return code is None or (code != "IRREVERSIBLE_ACTION" and workspace.ask(
        host, command, "$stop-that-shit change undo=allow")[0] == code)


def test_every_line_is_decided_as_labelled(workspace):
    """One measurement: every line, its host in turn; the counts are in the
    failure message (and printed with -s)."""
    wrong = []
    counts = dict((label, 0) for label in LABELS)
    outright = 0
    for k, (number, label, command) in enumerate(ROWS):
        host = HOSTS[k % len(HOSTS)]
        code, _ = workspace.ask(host, command)
        counts[label] += 1
        outright += label == "pass" and code is None
        if not _holds(workspace, host, label, command, code):
            wrong.append("undo_corpus.txt:%d %s (%s) | %r" % (number, label, code, command))
    summary = ("%d irreversible lines stopped, %d not yet (miss); %d look-alikes let through "
               "by undo= (%d pass outright, the others stopped by another check), %d still "
               "stopped (over)" % (counts["stop"], counts["miss"], counts["pass"], outright,
                                   counts["over"]))
    print(summary)
    assert not wrong, summary + "\n" + "\n".join(wrong)
    assert counts["stop"] >= 400 and outright >= 400, summary


@pytest.mark.parametrize("command,culprit", [
    ("git reset --hard", "`git reset --hard` discards uncommitted changes"),
    ("sudo nice -n 5 git clean -fdx", "`git clean -fdx` deletes untracked files"),
    ("kubectl -n prod delete ns prod", "deletes resources in the cluster"),
    ("rm -rf ~/projects", "outside the workspace"),
])
def test_the_message_names_the_part_and_what_to_type(workspace, command, culprit):
    code, text = workspace.ask("claude", command)
    assert code == "IRREVERSIBLE_ACTION"
    assert culprit in text and "undo=allow" in text and "Ask the user" in text


@pytest.mark.parametrize("host", HOSTS)
def test_a_file_tool_writing_where_the_machine_starts_programs_is_stopped(workspace, host):
    """A new file in ~/Library/LaunchAgents loses nothing, but it runs at the
    next login: it acts beyond the workspace.  The same tool writing inside
    the workspace goes through."""
    name, build = WRITE_TOOLS[(host, MAIN_WRITE[host])]
    for path, code in ((os.path.join(workspace.home, "Library", "LaunchAgents", "x.plist"),
                        "IRREVERSIBLE_ACTION"),
                       (os.path.join(workspace.project, "src", "x.plist"), None)):
        workspace.calls += 1
        session = "undo-w%d" % workspace.calls
        workspace.send(host, prompt_event(host, session, workspace.project,
                                          "$stop-that-shit change"))
        got = workspace.send(host, TOOL_EVENTS[host](session, workspace.project, name,
                                                     build(path)))
        assert denied_code(host, got) == code, (host, path)


@pytest.mark.parametrize("command,gone", [
    ("Remove-Item -Recurse -Force ~/projects", True),
    ("Remove-Item -Recurse -Force C:/Users/me/projects", True),
    ("Set-Content ~/.bashrc x", True),
    ("Clear-Content ~/.bashrc", True),
    ("Move-Item ~/projects ~/old", True),
    ("Format-Volume -DriveLetter D", True),
    ("Clear-Disk -Number 1 -RemoveData", True),
    ("Stop-Computer", True),
    ("Restart-Computer -Force", True),
    ("Stop-Service -Name Spooler", True),
    ("git reset --hard", True),
    ("Remove-Item -Recurse -Force build", False),
    ("Add-Content ~/.bashrc x", False),
    ("Out-File -Append ~/x.txt", False),
    ("Copy-Item a.txt b.txt", False),
    ("Format-Table x", False),
    ("Get-ChildItem ~/projects", False),
    ("git reset --soft HEAD~1", False),
])
def test_powershell_lines_are_judged_the_same_way(workspace, command, gone):
    action = sts.Action.from_dict(dict(sts.shell_action("Bash", command, powershell=True),
                                       cwd=workspace.project))
    assert bool(sts.irreversible_part(action)) == gone, command


def test_undo_allow_and_deny_on_a_sample(workspace):
    """undo=allow lets the stopped lines through (the other checks still judge
    them); undo=deny denies where ask asked."""
    sample = [c for _, label, c in ROWS if label == "stop"][::25]
    for command in sample:
        code, _ = workspace.ask("codex", command, "$stop-that-shit change undo=allow")
        assert code != "IRREVERSIBLE_ACTION", command
        code, text = workspace.ask("claude", command, "$stop-that-shit change undo=deny")
        assert code in STOPS, command
