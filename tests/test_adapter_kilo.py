"""Kilo Code CLI: OpenCode's shim and wire protocol under the host name
`kilo`, Kilo's own tools, and the install that renames the shim's host."""
import json
import os
import subprocess
import sys

import pytest

import sts
from hooks_shim import request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("STS_HOME", str(tmp_path / "state"))
    return sts.Store(str(tmp_path / "state"))


def say(store, session, text):
    return sts.run_hook("kilo", json.dumps(request("chat.message", session, {
        "input": {"sessionID": session},
        "output": {"message": {"id": "msg_1", "role": "user", "sessionID": session,
                               "agent": "code"}, "parts": [{"type": "text", "text": text}]}},
        cwd="/w", ctx={"parentSessionId": None, "agentCanEdit": True})).encode(), store)


def use(store, session, tool, args, call="call_1"):
    out = sts.run_hook("kilo", json.dumps(request("tool.execute.before", session, {
        "input": {"tool": tool, "sessionID": session, "callID": call}, "output": {"args": args}},
        cwd="/w", ctx={"parentSessionId": None})).encode(), store)
    return json.loads(out)


def test_a_review_stops_kilos_write_and_its_background_process(store):
    say(store, "ses_k1", "$stop-that-shit review -- look")
    assert use(store, "ses_k1", "write", {"filePath": "/w/a.txt", "content": "x"})["block"]
    got = use(store, "ses_k1", "background_process", {"command": "echo x > f", "workdir": "/w"})
    assert got["block"] and "MODE_FORBIDS_MUTATION" in got["reason"]
    assert use(store, "ses_k1", "read", {"filePath": "/w/a.txt"}) == {}


def test_agent_manager_and_batch_cannot_be_counted(store):
    say(store, "ses_k2", "$stop-that-shit change agents=2 -- go")
    got = use(store, "ses_k2", "agent_manager", {"action": "start", "prompt": "p"})
    assert got["block"] and "UNBOUNDED_DELEGATION" in got["reason"]
    assert use(store, "ses_k2", "batch", {"tool_calls": []}, call="call_2")["block"]
    assert use(store, "ses_k2", "task", {"description": "d", "prompt": "p",
                                          "subagent_type": "general"}, call="call_3") == {}


@pytest.mark.parametrize("tool,args,mutability", [
    ("send_file", {"path": "/w/secret"}, "unknown"),
    ("board_read", {}, "read"),
    ("schedule_wakeup", {"prompt": "later"}, "control"),
    ("kilo_memory_save", {"text": "x"}, "unknown"),
])
def test_kilos_own_tools(tool, args, mutability):
    assert sts.ADAPTERS["kilo"].classify(tool, args)["mutability"] == mutability


def test_a_wakeup_that_would_set_the_contract_is_self_protected(store):
    say(store, "ses_k3", "$stop-that-shit review -- look")
    got = use(store, "ses_k3", "schedule_wakeup", {"prompt": "$stop-that-shit open"})
    assert got["block"] and "GUARD_SELF_PROTECTION" in got["reason"]


def test_install_gives_kilo_the_opencode_shim_naming_kilo_and_seeds_its_plugin(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               STS_HOME=str(tmp_path / "sts"))
    env.pop("KILO_CONFIG_DIR", None)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "sts.py"), "install", "kilo"],
                         env=env, cwd=str(tmp_path), capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    base = tmp_path / "cfg" / "kilo"
    shim = (base / "plugin" / "stop-that-shit.js").read_text()
    assert 'const HOST = "kilo";' in shim and 'const HOST = "opencode";' not in shim
    assert "@kilocode/plugin" in (base / "package-lock.json").read_text()
    assert (base / "node_modules").is_dir()
    # the wire module the shim imports, one folder above it, as it ships
    assert (base / "stop-that-shit-wire.mjs").read_text() == \
        open(os.path.join(ROOT, "host_shims", "stop-that-shit-wire.mjs"), encoding="utf-8").read()


@pytest.mark.parametrize("command", ["kilo run --pure 'do it'", "npx @kilocode/cli run x",
                                     "droid exec --skip-permissions-unsafe 'go' &",
                                     "npx @factory/cli exec go"])
def test_kilo_or_droid_started_from_the_shell_cannot_be_counted(store, command):
    say(store, "ses_k4", "$stop-that-shit change agents=2 deps=allow -- go")
    got = use(store, "ses_k4", "bash", {"command": command, "description": "d"})
    assert got["block"] and "UNBOUNDED_DELEGATION" in got["reason"], got


@pytest.mark.parametrize("command", ["kilo run -s ses_x 'open'", "droid exec -s abc 'open'"])
def test_kilo_or_droid_told_to_resume_a_session_is_stopped(store, command):
    say(store, "ses_k5", "$stop-that-shit change -- go")
    got = use(store, "ses_k5", "bash", {"command": command, "description": "d"})
    assert got.get("block"), got
