"""The hook runner and CLI: a hook fails open, except on a tool call in an armed
session (internal error, input too large or not UTF-8), where it fails closed."""
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


def test_a_hook_process_skips_teardown_but_loses_nothing(sts_home):
    """The process ends with os._exit after flushing: the whole answer arrives,
    and the state and audit line are on disk."""
    assert hook_process("claude", dict(PROMPT, prompt="$stop-that-shit review"),
                        sts_home).returncode == 0
    long_path = "/w/" + "d" * 3000 + "/a.txt"
    proc = hook_process("claude", dict(WRITE, tool_input={"file_path": long_path,
                                                          "content": "x"}), sts_home)
    assert proc.returncode == 0 and proc.stderr == b""
    reason = deny_reason(json.loads(proc.stdout))
    assert "Code: I/MODE_FORBIDS_MUTATION" in reason
    store = sts.Store(str(sts_home))
    key = sts.session_key("s-cli")
    assert store.load(key).state["contract"]["mode"] == "review"
    with open(os.path.join(str(sts_home), "runtime", key + ".jsonl"), encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["decision"]["reasonCode"] == "MODE_FORBIDS_MUTATION"


def test_a_hook_whose_reader_left_exits_quietly(sts_home):
    hook_process("claude", dict(PROMPT, prompt="$stop-that-shit review"), sts_home)
    read_end, write_end = os.pipe()
    os.close(read_end)
    code = "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % ROOT
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, "claude"],
                          input=json.dumps(WRITE).encode(), stdout=write_end,
                          stderr=subprocess.PIPE, env=dict(os.environ, STS_HOME=str(sts_home)),
                          timeout=30, check=False)
    os.close(write_end)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr


def test_main_called_with_arguments_returns_instead_of_exiting(store, monkeypatch, capsys):
    """A program that imports sts and calls main([...]) keeps running."""
    class Stdin:
        buffer = __import__("io").BytesIO(json.dumps(WRITE).encode())
    monkeypatch.setattr(sys, "stdin", Stdin)
    assert sts.main(["claude"]) == 0
    assert capsys.readouterr().out == ""  # not armed: allowed, nothing to say
