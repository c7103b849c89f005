"""A person asks the guard (issue 30): `check`, `log`, `explain`, status and
doctor through the real command line, `python3 sts.py ...`."""
import json
import os
import subprocess
import sys

import pytest

import sts
from hooks import deny_reason, hook

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STS_PY = os.path.join(ROOT, "sts.py")
HOSTS = ("codex", "claude", "hermes", "opencode", "pi", "omp", "gemini", "copilot", "qwen")


def sts_cli(home, *args, stdin=None, cwd=None):
    env = dict(os.environ, STS_HOME=str(home))
    return subprocess.run([sys.executable, STS_PY] + list(args), input=stdin, cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                          universal_newlines=True, timeout=60, check=False)


def tree(root):
    """Every file under root with its bytes: what `touching nothing` must keep."""
    found = {}
    for folder, _dirs, files in os.walk(str(root)):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as fh:
                found[os.path.relpath(path, str(root))] = fh.read()
    return found


def claude_prompt(session, text, cwd="/tmp/w"):
    return {"session_id": session, "cwd": cwd, "hook_event_name": "UserPromptSubmit",
            "prompt": text}


def claude_bash(session, command, cwd="/tmp/w", call="toolu_1"):
    return {"session_id": session, "cwd": cwd, "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": call}


# ---- check --------------------------------------------------------------------


def test_check_denies_with_the_hooks_lines_and_touches_no_session(tmp_path):
    home = tmp_path / "home"
    store = sts.Store(str(home))
    hook("claude", claude_prompt("s1", "$stop-that-shit change -- work"), store)
    hook("claude", claude_bash("s1", "ls"), store)
    before = tree(home)
    got = sts_cli(home, "check", "--contract", "review", "--", "git status && rm -rf build")
    assert got.returncode == 1, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0].startswith("Denied: MODE_FORBIDS_MUTATION")
    assert "Culprit: `rm -rf build`: `rm` removes `build`." in lines
    assert not any(line.startswith("Event:") for line in lines)   # nothing was audited
    assert tree(home) == before


@pytest.mark.parametrize("host", HOSTS)
def test_check_gives_one_answer_on_every_host(tmp_path, host):
    got = sts_cli(tmp_path, "check", "--host", host, "--json", "--contract", "review",
                  "--", "sed -i s/a/b/ f.txt")
    assert got.returncode == 1, got.stderr
    doc = json.loads(got.stdout)
    assert (doc["verdict"], doc["reason"], doc["host"]) == ("deny", "MODE_FORBIDS_MUTATION", host)
    assert doc["instead"] and "sed" in doc["instead"]
    assert not os.path.exists(str(tmp_path / "runtime"))


def test_check_allows_with_exit_0_and_reports_a_missing_contract(tmp_path):
    got = sts_cli(tmp_path, "check", "--contract", "review", "--", "git status")
    assert got.returncode == 0 and got.stdout.startswith("Allowed: WITHIN_CONTRACT"), got
    bare = sts_cli(tmp_path, "check", "--", "rm -rf build")
    assert bare.returncode == 0
    assert "CONTROL_INACTIVE" in bare.stdout and "none yet" in bare.stdout


def test_check_a_file_tool_against_the_files_lock(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    tmp_path = tmp_path / "home"   # the data dir, outside the work folder
    out = sts_cli(tmp_path, "check", "--contract", "change files=src/**", "--tool", "Write",
                  "--path", "docs/a.md", cwd=str(work))
    assert out.returncode == 1
    assert "Culprit: `docs/a.md` is outside the lock `files=src/**`." in out.stdout
    inside = sts_cli(tmp_path, "check", "--host", "copilot", "--contract", "change files=src/**",
                     "--path", "src/a.py", cwd=str(work))
    assert inside.returncode == 0, inside.stdout
    dep = sts_cli(tmp_path, "check", "--json", "--contract", "change", "--path", "package.json",
                  "--content", '{"dependencies": {"left-pad": "1.3.0"}}', cwd=str(work))
    assert json.loads(dep.stdout)["reason"] == "DEPENDENCY_NOT_AUTHORIZED"


def test_check_reads_a_host_event_and_the_sessions_own_contract(tmp_path):
    store = sts.Store(str(tmp_path))
    hook("claude", claude_prompt("s2", "$stop-that-shit review -- look"), store)
    before = tree(tmp_path)
    event = json.dumps(claude_bash("s2", "touch x"))
    got = sts_cli(tmp_path, "check", stdin=event)
    assert got.returncode == 1 and "MODE_FORBIDS_MUTATION" in got.stdout
    # The same event under a contract given on the command line.
    assert sts_cli(tmp_path, "check", "--contract", "change", stdin=event).returncode == 0
    assert tree(tmp_path) == before


def test_check_keeps_the_real_data_dir_guarded(tmp_path):
    home = tmp_path / "home"
    got = sts_cli(home, "check", "--json", "--contract", "change", "--", "rm -rf %s" % home)
    assert json.loads(got.stdout)["reason"] == "GUARD_SELF_PROTECTION"
    assert not home.exists()


@pytest.mark.parametrize("args", [
    [], ["--host", "clade", "--", "ls"], ["--contract", "bogus=1", "--", "ls"],
    ["--tool", "Write"], ["--frob", "--", "ls"], ["--input", "{not json", "--tool", "x"],
])
def test_check_usage_errors_exit_2(tmp_path, args):
    got = sts_cli(tmp_path, "check", *args, stdin="")
    assert got.returncode == 2
    assert got.stderr.strip() and not got.stdout


@pytest.mark.parametrize("contract", ["review", pytest.param("change files=src/**",
                                                             marks=pytest.mark.slow)])
def test_check_gives_the_hooks_verdict_on_every_corpus_line(ram_path, capsys, monkeypatch,
                                                             contract):
    """Every analysis-corpus line: `check` (main's command line, in this
    process for speed) answers as the hook answers the same Claude Code call
    in a real session: the same verdict, exit code and Culprit lines."""
    from test_analysis import ROWS
    work = str(ram_path / "w")
    os.makedirs(work)
    home = str(ram_path / "home")
    monkeypatch.setenv("STS_HOME", home)   # the data dir both guard
    store = sts.Store(home)
    hook("claude", claude_prompt("corpus", "$stop-that-shit %s -- go" % contract, work), store)
    mismatches = []
    for number, _label, _tags, command in ROWS:
        answer = hook("claude", claude_bash("corpus", command, work, "t%d" % number), store)
        text = deny_reason(answer) or ""
        context = (answer or {}).get("hookSpecificOutput", {}).get("additionalContext", "")
        hook_verdict = "deny" if text else "note" if "WATCH /" in context else "allow"
        if hook_verdict == "note":
            continue   # a thrash note needs the session's history, which check never has
        culprit = [ln for ln in text.splitlines() if ln.startswith("Culprit: ")]
        code = sts.main(["check", "--json", "--cwd", work, "--contract", contract, "--", command])
        doc = json.loads(capsys.readouterr().out)
        mine = [ln for ln in (doc["message"] or "").splitlines() if ln.startswith("Culprit: ")]
        if (doc["verdict"], code, mine) != (hook_verdict, int(hook_verdict == "deny"), culprit):
            mismatches.append("%d %s: check %s %s, hook %s %s" % (
                number, command, doc["verdict"], mine, hook_verdict, culprit))
    assert len(ROWS) > 2000 and not mismatches, "\n".join(mismatches[:20])
