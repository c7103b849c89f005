"""Cline CLI 3.0: the plugin shim's wire protocol (Pi's, with Cline's agent
ids in ctx), Cline's tools as its installed package defines them, subagents
judged by their root, and the install of the plugin."""
import json
import os
import shutil
import subprocess
import sys

import pytest

import sts
from hooks_shim import request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT_AGENT = "agent_root"


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("STS_HOME", str(tmp_path / "state"))
    return sts.Store(str(tmp_path / "state"))


def ctx(session, parent=None, root=None, agent=ROOT_AGENT):
    return {"agentId": agent, "parentAgentId": parent,
            "rootSessionId": root if parent else session}


def say(store, session, text, **more):
    out = sts.run_hook("cline", json.dumps(request("input", session, {
        "event": {"type": "input", "text": '<user_input mode="act">%s</user_input>' % text,
                  "source": "user"}}, cwd="/w", ctx=ctx(session, **more))).encode(), store)
    return json.loads(out)


def use(store, session, tool, args, call="call_1", **more):
    out = sts.run_hook("cline", json.dumps(request("tool_call", session, {
        "event": {"toolName": tool, "toolCallId": call, "input": args}},
        cwd="/w", ctx=ctx(session, **more))).encode(), store)
    return json.loads(out)


def done(store, session, call, **more):
    out = sts.run_hook("cline", json.dumps(request("tool_result", session, {
        "event": {"toolName": "spawn_agent", "toolCallId": call}},
        cwd="/w", ctx=ctx(session, **more))).encode(), store)
    return json.loads(out)


def test_the_directive_inside_clines_user_input_wrapper_arms_review(store):
    assert "mode=review" in say(store, "conv_1", "$stop-that-shit review -- look")["context"]
    got = use(store, "conv_1", "editor", {"path": "/w/a.txt", "new_text": "x"})
    assert got["block"] and "MODE_FORBIDS_MUTATION" in got["reason"]
    assert use(store, "conv_1", "read_files", {"files": [{"path": "/w/a.txt"}]}) == {}
    assert use(store, "conv_1", "run_commands", {"commands": ["ls", "git status"]}) == {}


@pytest.mark.parametrize("args", [
    {"commands": ["ls", "echo x > out.txt"]},
    {"commands": [{"command": "tee", "args": ["out.txt"]}]},
    {"commands": "echo x > out.txt"},
    {"command": "echo x > out.txt"},
    {"cmd": "echo x > out.txt"},
    ["ls", "echo x > out.txt"],
    [{"command": "cp", "args": ["a", "out.txt"]}],
    {"command": "cp", "args": ["a", "out.txt"]},
    "echo x > out.txt",
])
def test_every_form_of_run_commands_is_the_same_shell_write(args):
    action = sts.ADAPTERS["cline"].classify("run_commands", args)
    assert action["mutability"] == "write", (args, action)


@pytest.mark.parametrize("args", [
    {"commands": ["ls", 42]}, {"commands": [{"command": "rm", "args": "-rf /"}]}, {}, None, 7,
])
def test_a_run_commands_input_that_cannot_be_read_is_never_a_read(args):
    assert sts.ADAPTERS["cline"].classify("run_commands", args)["mutability"] != "read"


def test_a_direct_program_is_judged_as_its_quoted_argv():
    action = sts.ADAPTERS["cline"].classify(
        "run_commands", {"commands": [{"command": "sha256sum", "args": ["a b.js"]}]})
    assert action["hashIntent"] is True


@pytest.mark.parametrize("tool,args,mutability", [
    ("editor", {"path": "/w/a.txt", "old_text": "a", "new_text": "b"}, "write"),
    ("editor", {"path": "/w/a.txt", "new_text": "b", "insert_line": 3}, "write"),
    ("apply_patch", {"input": "*** Begin Patch\n*** Add File: b.txt\n+x\n*** End Patch\n"},
     "write"),
    ("image_generation", {"prompt": "a cat"}, "write"),
    ("search_codebase", {"queries": ["x"]}, "read"),
    ("fetch_web_content", {"requests": []}, "read"),
    ("ask_question", {"question": "q", "options": ["a", "b"]}, "control"),
    ("team_status", {}, "read"),
    ("team_send_message", {"agentId": "a", "message": "m"}, "control"),
    ("mcp_server__do_it", {}, "unknown"),
])
def test_clines_own_tools(tool, args, mutability):
    assert sts.ADAPTERS["cline"].classify(tool, args)["mutability"] == mutability


def test_a_subagent_is_judged_by_its_roots_contract_and_cannot_set_one(store):
    say(store, "conv_root", "$stop-that-shit review -- look")
    child = dict(parent=ROOT_AGENT, root="conv_root", agent="agent_child")
    # The subagent's task is its parent's words: a directive there changes nothing.
    assert "context" not in say(store, "conv_child", "$stop-that-shit change -- go", **child)
    got = use(store, "conv_child", "editor", {"path": "/w/a.txt", "new_text": "x"}, **child)
    assert got["block"] and "MODE_FORBIDS_MUTATION" in got["reason"]


def test_a_subagent_whose_root_the_shim_could_not_learn_only_reads(store):
    child = {"agentId": "agent_child", "parentAgentId": "agent_gone", "rootSessionId": None}

    def call(tool, args):
        return json.loads(sts.run_hook("cline", json.dumps(request("tool_call", "conv_child", {
            "event": {"toolName": tool, "toolCallId": "c1", "input": args}},
            cwd="/w", ctx=child)).encode(), store))

    out = call("editor", {"path": "/w/a.txt", "new_text": "x"})
    assert out["block"] and "STATE_DAMAGED" in out["reason"] and "root" in out["reason"]
    assert call("read_files", {"files": [{"path": "/w/a.txt"}]}) == {}


def test_agents_n_counts_spawn_agent_and_frees_its_place_when_it_returns(store):
    say(store, "conv_a", "$stop-that-shit change agents=1 -- delegate")
    spawn = {"systemPrompt": "s", "task": "t"}
    assert use(store, "conv_a", "spawn_agent", spawn, call="c1") == {}
    got = use(store, "conv_a", "spawn_agent", spawn, call="c2")
    assert got["block"] and "AGENT_BUDGET_EXHAUSTED" in got["reason"]
    done(store, "conv_a", "c1")
    assert use(store, "conv_a", "spawn_agent", spawn, call="c3") == {}


def test_teammates_cannot_be_counted(store):
    say(store, "conv_t", "$stop-that-shit change agents=3 -- go")
    got = use(store, "conv_t", "team_spawn_teammate", {"agentId": "a", "rolePrompt": "r"})
    assert got["block"] and "UNBOUNDED_DELEGATION" in got["reason"]


@pytest.mark.parametrize("path", [
    "~/.cline/plugins/stop-that-shit.js", "~/.cline/data/settings/global-settings.json",
    "/w/.cline/plugins/x.js", "/w/.clinerules/hooks/PreToolUse"])
def test_the_files_that_decide_whether_the_plugin_loads_are_self_protected(store, path):
    say(store, "conv_s", "$stop-that-shit change -- go")
    got = use(store, "conv_s", "editor", {"path": os.path.expanduser(path), "new_text": "{}"})
    assert got["block"] and "GUARD_SELF_PROTECTION" in got["reason"], got


def test_install_puts_the_pinned_plugin_in_clines_plugins_folder_and_doctor_checks_it(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), STS_HOME=str(tmp_path / "sts"))
    sts_py = os.path.join(ROOT, "sts.py")
    out = subprocess.run([sys.executable, sts_py, "install", "cline"], env=env,
                         cwd=str(tmp_path), capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    shim = (tmp_path / ".cline" / "plugins" / "stop-that-shit.js").read_text()
    assert 'const HOST = "cline";' in shim and repr(sts_py)[1:-1] in shim
    assert (tmp_path / ".cline" / "stop-that-shit-wire.mjs").is_file()   # imported from ../
    doctor = subprocess.run([sys.executable, sts_py, "doctor"], env=env, cwd=str(tmp_path),
                            capture_output=True, timeout=120, text=True)
    assert "cline" in doctor.stdout.lower()
    out = subprocess.run([sys.executable, sts_py, "uninstall", "cline"], env=env,
                         cwd=str(tmp_path), capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert not (tmp_path / ".cline" / "plugins" / "stop-that-shit.js").exists()


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_shim_is_plain_esm_that_node_can_load():
    shim = os.path.join(ROOT, "host_shims", "cline", "stop-that-shit.js")
    code = ("import(%s).then(m => { const p = m.default; "
            "console.log(p.name, p.manifest.capabilities.join(), Object.keys(p.hooks).sort().join()); })"
            % json.dumps("file://" + shim))
    out = subprocess.run(["node", "-e", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["stop-that-shit", "hooks", "afterTool,beforeModel,beforeTool"]


@pytest.mark.parametrize("command", ["cline --json 'fix it' &", "npx cline -y 'go'",
                                     "nohup cline -P openai-compatible 'go'"])
def test_cline_started_from_the_shell_cannot_be_counted(store, command):
    say(store, "conv_sh", "$stop-that-shit change agents=2 deps=allow -- go")
    got = use(store, "conv_sh", "run_commands", {"commands": [command]})
    assert got["block"] and "UNBOUNDED_DELEGATION" in got["reason"], got
