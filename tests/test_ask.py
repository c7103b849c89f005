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


# ---- log, explain, status: a denied call looked up -------------------------------


def _denied_session(home, session="s-log", command="git status && rm -rf build"):
    """A review session with one allowed and one denied shell call, through the
    real hook process; returns the deny text."""
    from hooks import hook_process
    for payload in (claude_prompt(session, "$stop-that-shit review -- look"),
                    claude_bash(session, "ls", call="t1"),
                    claude_bash(session, command, call="t2")):
        proc = hook_process("claude", payload, home)
        assert proc.returncode == 0
    return deny_reason(json.loads(proc.stdout))


def test_log_explain_and_status_show_a_denied_call(tmp_path):
    text = _denied_session(tmp_path)
    event_id = next(ln[7:] for ln in text.splitlines() if ln.startswith("Event: "))
    got = sts_cli(tmp_path, "log")
    assert got.returncode == 0, got.stderr
    rows = [ln for ln in got.stdout.splitlines() if ln.startswith("  ") and "claude" in ln]
    assert len(rows) == 2
    key = sts.session_key("s-log")
    assert rows[0].split()[:6] == [rows[0].split()[0], event_id[4:12], "claude", key[:8],
                                   "deny", "MODE_FORBIDS_MUTATION"]
    assert rows[0].endswith("`rm -rf build`: `rm` removes `build`.")
    assert rows[1].split()[4:6] == ["allow", "WITHIN_CONTRACT"]
    # explain takes a unique start of the id, with or without evt_
    for given in (event_id, event_id[:12], event_id[4:12].upper() + "…"):
        out = sts_cli(tmp_path, "explain", given)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0] == "Stop That Shit event " + event_id
        assert "Host: claude, session %s (host id s-log)" % key in lines
        assert "Tool: Bash (write)" in lines
        assert "Command: git status && rm -rf build" in lines
        assert "Contract then: review guard deps=ask hash=deny (armed)" in lines
        assert "Verdict: denied, MODE_FORBIDS_MUTATION" in lines
        assert "Culprit: `rm -rf build`: `rm` removes `build`." in lines
    status = sts_cli(tmp_path, "status", "--session", "s-log")
    assert status.returncode == 0
    assert "    `rm -rf build`: `rm` removes `build`." in status.stdout.splitlines()
    assert all(len(line) <= 80 for line in status.stdout.splitlines())
    for word in ("Host effect", "unobserved", "unlimited", "Full counts"):
        assert word not in status.stdout


def test_log_filters_and_json(tmp_path):
    _denied_session(tmp_path, "s-a")
    _denied_session(tmp_path, "s-b", "touch x")
    doc = json.loads(sts_cli(tmp_path, "log", "--json", "--verdict", "deny").stdout)
    assert [e["decision"]["reasonCode"] for e in doc["events"]] == ["MODE_FORBIDS_MUTATION"] * 2
    assert [e["shown"]["command"] for e in doc["events"]] == ["touch x", "git status && rm -rf build"]
    one = json.loads(sts_cli(tmp_path, "log", "--json", "--session", "s-a").stdout)["events"]
    assert {e["sessionKey"] for e in one} == {sts.session_key("s-a")} and len(one) == 2
    assert len(json.loads(sts_cli(tmp_path, "log", "1", "--json").stdout)["events"]) == 1
    allowed = json.loads(sts_cli(tmp_path, "log", "--json", "--verdict", "allow").stdout)
    assert all("shown" not in e for e in allowed["events"])   # an allowed call keeps no text
    assert sts_cli(tmp_path, "log", "--session", "nobody").returncode == 1
    assert sts_cli(tmp_path, "log", "--verdict", "maybe").returncode == 2


def test_explain_an_ambiguous_or_unknown_prefix_is_an_error(tmp_path):
    store = sts.Store(str(tmp_path))
    ids = []
    for n in range(40):   # enough ids that some share a first hex digit
        rec = {"schemaVersion": 1, "eventId": "evt_%08x-0000-4000-8000-000000000000" % (n * 7),
               "occurredAt": "2026-01-01T00:00:%02d.000Z" % n, "sessionKey": "a" * 24,
               "controlState": "armed", "action": {"toolName": "Bash", "mutability": "read"},
               "decision": {"policyOutcome": "allow", "responseOutcome": "none",
                            "reasonCode": "WITHIN_CONTRACT"}}
        store.append_audit("a" * 24, rec)
        ids.append(rec["eventId"])
    got = sts_cli(tmp_path, "explain", "evt_0000")
    assert got.returncode == 1 and "events start with evt_0000" in got.stderr
    got = sts_cli(tmp_path, "explain", "ffff0000")
    assert got.returncode == 1 and "not found" in got.stderr
    assert sts_cli(tmp_path, "explain", ids[5][:16]).stdout.startswith(
        "Stop That Shit event " + ids[5])
