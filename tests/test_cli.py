"""The hook runner and CLI: fail open or closed as core.md 10-C1/A3 and decisions.md 6 say."""
import json
import os
import subprocess
import sys

import pytest

import sts
from hooks import ROOT, deny_reason, hook, hook_process

PROMPT = {"hook_event_name": "UserPromptSubmit", "session_id": "s-cli", "cwd": "/w"}
WRITE = {"hook_event_name": "PreToolUse", "session_id": "s-cli", "cwd": "/w",
         "tool_name": "Write", "tool_use_id": "t1",
         "tool_input": {"file_path": "/w/a.txt", "content": "x"}}


def cli(*args, stdin=b"", env=None):
    return subprocess.run([sys.executable, os.path.join(ROOT, "sts.py"), *args], input=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                          timeout=30, check=False)


@pytest.mark.parametrize("raw, why", [
    (b"", b"EmptyInput"),
    (b"   \n", b"EmptyInput"),
    (b"{not json", b"InvalidJSON"),
    (b"[1, 2]", b"InvalidEvent"),
    (b"\xff\xfe\x00garbage", b"UnreadableInput"),
])
def test_garbage_on_stdin_fails_open_with_one_stderr_line(sts_home, raw, why):
    proc = hook_process("claude", raw, sts_home)
    assert proc.returncode == 0
    assert proc.stdout == b""
    assert proc.stderr.count(b"\n") == 1 and why in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_huge_input_is_denied_only_when_the_session_is_armed(sts_home, store):
    hook("claude", dict(PROMPT, prompt="$stop-that-shit review"), store)
    padding = "x" * (sts.STDIN_CAP + 10)
    big = dict(WRITE, tool_input={"file_path": "/w/a", "content": padding})
    proc = hook_process("claude", json.dumps(big).encode(), sts_home)
    assert proc.returncode == 0
    assert "too large" in deny_reason(json.loads(proc.stdout))
    other = dict(big, session_id="s-unarmed")
    proc = hook_process("claude", json.dumps(other).encode(), sts_home)
    assert proc.stdout == b"" and b"failed open" in proc.stderr


def test_unknown_event_and_missing_fields_are_ignored(store):
    assert hook("claude", {"hook_event_name": "Notification", "session_id": "s"}, store) is None
    assert hook("claude", {"hook_event_name": "PreToolUse"}, store) is None
    assert hook("codex", {"hook_event_name": "PreToolUse", "session_id": "s"}, store) is None


def test_internal_error_fails_closed_on_an_armed_tool_call(store, monkeypatch, capsys):
    hook("claude", dict(PROMPT, prompt="$stop-that-shit change"), store)

    def broken(*args, **kwargs):
        raise KeyError("boom")
    monkeypatch.setattr(sts, "handle_event", broken)
    reason = deny_reason(hook("claude", WRITE, store))
    assert "internal error: KeyError" in reason and "$stop-that-shit off" in reason
    assert "failed closed: KeyError" in capsys.readouterr().err


def test_internal_error_fails_open_when_not_armed_or_not_a_tool_call(store, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise KeyError("boom")
    monkeypatch.setattr(sts, "handle_event", broken)
    assert hook("claude", WRITE, store) is None
    assert "failed open: KeyError" in capsys.readouterr().err
    assert hook("claude", dict(PROMPT, prompt="hello"), store) is None


def test_unknown_command_and_host_exit_2():
    proc = cli("frobnicate")
    assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1


def test_help_and_version():
    assert cli("--help").returncode == 0
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.decode().strip() == "sts %s" % sts.VERSION


def test_every_hook_touches_its_host_file(sts_home, store):
    hook("codex", {"hook_event_name": "SessionStart", "session_id": "s"}, store)
    assert os.path.exists(os.path.join(str(sts_home), "hosts", "codex"))


def test_demo_shows_a_real_deny_then_an_allow():
    proc = cli("demo")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert out.count("DENIED") == 1
    assert "Code: I/MODE_FORBIDS_MUTATION" in out
    assert out.index("DENIED") < out.rindex("(no output: allowed)")
