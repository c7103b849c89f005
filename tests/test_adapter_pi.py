"""Pi adapter, driven with what Pi 0.73.1 really sent."""
import json
import os

import pytest

import sts
from hooks import denial, reason_code
from hooks_shim import answer, first, get_state, request, translate

SESSION = "pi-session-1"


def pi_input(text, source="interactive", idle=True):
    ev = dict(first("pi-deny", "input"), text=text, source=source)
    return request("input", SESSION, {"event": ev}, ctx={"idle": idle, "hasUI": False})


def tool_call(run="pi-deny", **changes):
    ev = dict(first(run, "tool_call"), **changes)
    return request("tool_call", SESSION, {"event": ev}, ctx={"idle": False, "hasUI": False})


def action_of(payload, store):
    return translate("pi", payload, store).event["action"]


def subagent(args, call_id="call_s"):
    return tool_call(toolName="subagent", toolCallId=call_id, input=args)


# --- translation -----------------------------------------------------------------

def test_real_input_is_prompt_submit(store):
    event = translate("pi", pi_input("Create the probe file."), store).event
    assert event["kind"] == "prompt.submit" and event["sessionId"] == SESSION
    assert event["prompt"] == "Create the probe file."


def test_skill_form_becomes_the_directive(store):
    event = translate("pi", pi_input("/skill:stop-that-shit review -- look"), store).event
    assert event["prompt"] == "$stop-that-shit review -- look"
    assert sts._replace_skill_form("a /SKILL:stop-that-shit b /skill:stop-that-shit") == \
        "a $stop-that-shit b $stop-that-shit"


def test_extension_input_is_never_authority(store):
    assert translate("pi", pi_input("$stop-that-shit off", source="extension"), store).event is None
    assert answer("pi", pi_input("$stop-that-shit off", source="extension"), store) == {}


@pytest.mark.parametrize("source", [None, "", 7])
def test_input_without_a_source_is_never_authority(store, source):
    """Pi 0.73.1 always names the source (every recorded input says "interactive");
    an input without one is not known to be the user's."""
    payload = pi_input("$stop-that-shit off", source=source)
    if source is None:
        del payload["payload"]["event"]["source"]
    assert translate("pi", payload, store).event is None
    assert answer("pi", payload, store) == {}


def test_busy_plain_text_does_nothing(store):
    payload = pi_input("also look at b.py", idle=False)
    assert translate("pi", payload, store).event["agentBusy"] is True
    assert answer("pi", payload, store) == {}
    assert not os.path.exists(store.path("sessions"))  # nothing written


def test_real_write_and_bash(store):
    action = action_of(tool_call(), store)
    assert action["name"] == "write" and action["mutability"] == "write"
    assert action["id"] == "call_fake1" and action["affectedPaths"] == ["../probe-pi"]
    assert action["completionScope"] == "call"
    shell = action_of(tool_call("pi-deny-bash"), store)
    assert shell["name"] == "bash" and shell["command"] == "echo by-bash > /tmp/run/probe-pi"


def test_paths_as_pi_expands_them(store, monkeypatch):
    """Pi's expandPath drops one leading `@`, makes Unicode spaces plain and
    expands `~`: `@/x` writes /x and `@package.json` writes package.json."""
    monkeypatch.setenv("HOME", "/home/u")
    def paths(path):
        return action_of(tool_call(input={"path": path, "content": "x"}), store)["affectedPaths"]
    assert paths("@/etc/passwd") == ["../../../etc/passwd"]
    assert paths("@src/a.py") == ["src/a.py"]
    assert paths("~/.bashrc") == ["../../../home/u/.bashrc"]
    assert paths("src/a\u00a0b.py") == ["src/a b.py"]
    manifest = action_of(tool_call(input={"path": "@package.json",
                                          "content": '{"dependencies": {"left-pad": "1"}}'}), store)
    assert manifest["dependencyIntent"] is True


def test_tool_table(store):
    edit = action_of(tool_call(toolName="edit", input={
        "path": "/tmp/run/work/src/a.py", "edits": [{"oldText": "a", "newText": "b"}]}), store)
    assert edit["mutability"] == "write" and edit["affectedPaths"] == ["src/a.py"]
    for name in ("read", "grep", "find", "ls"):
        assert action_of(tool_call(toolName=name, input={}), store)["mutability"] == "read"
    for name in ("web_fetch", "github_create_issue", "todo"):  # no name fallback on Pi
        assert action_of(tool_call(toolName=name, input={}), store)["mutability"] == "unknown"
    ps = action_of(tool_call(toolName="powershell", input={"command": "Get-ChildItem"}), store)
    assert ps["command"] == "Get-ChildItem"


@pytest.mark.parametrize("args,count,unbounded", [
    ({"agent": "scout", "task": "look"}, 1, False),
    ({"tasks": [{"agent": "a", "task": "x"}, {"agent": "b", "task": "y"}]}, 2, False),
    ({"chain": [{"agent": "a", "task": "x"}, {"agent": "b", "task": "{previous}"}]}, 1, False),
    ({}, 0, True),
    ({"agent": "a", "task": "x", "tasks": [{"agent": "b", "task": "y"}]}, 0, True),
    ({"tasks": []}, 0, True),
])
def test_subagent_counts(store, args, count, unbounded):
    action = action_of(subagent(args), store)
    assert action["mutability"] == "delegate" and action["delegationCount"] == count
    assert action.get("unboundedDelegation", False) is unbounded


def test_subagent_without_id_is_dropped(store):
    payload = subagent({"agent": "a", "task": "b"})
    del payload["payload"]["event"]["toolCallId"]
    assert answer("pi", payload, store) == {}


def test_subagent_results(store):
    base = {"type": "tool_result", "toolName": "subagent", "toolCallId": "call_s",
            "content": [{"type": "text", "text": "done"}], "isError": False,
            "details": {"mode": "parallel", "results": []}}
    result = translate("pi", request("tool_result", SESSION, {"event": base}), store)
    assert result.event["action"] == {"lifecycle": "joined", "id": "call_s"} and not result.render
    running = dict(base, details={"mode": "single", "results": [], "asyncLaunched": True})
    assert translate("pi", request("tool_result", SESSION, {"event": running}),
                     store).event["action"]["lifecycle"] == "running"
    odd = dict(base, details={"mode": "swarm", "results": []})
    assert translate("pi", request("tool_result", SESSION, {"event": odd}),
                     store).event["action"]["lifecycle"] == "unknown"
    write = dict(base, toolName="write")
    assert translate("pi", request("tool_result", SESSION, {"event": write}), store).event is None


def test_shutdown_is_session_end(store):
    ev = first("pi-deny", "session_shutdown")
    call = translate("pi", request("session_shutdown", SESSION, {"event": ev}), store)
    assert call.event["kind"] == "session.end" and not call.render


def test_rendering():
    adapter = sts.HOST_ADAPTERS_B["pi"]
    error = sts.CoreResult("prompt-error", "INVALID_DIRECTIVE_TOKEN: unknown field `fix`",
                           "INVALID_DIRECTIVE_TOKEN")
    shown = json.loads(adapter.render(error, sts.HookCall("input")))
    assert shown["block"] is True and "INVALID_DIRECTIVE_TOKEN" in shown["reason"]
    assert json.loads(adapter.render(sts.CoreResult("deny", "STOP"), sts.HookCall("tool_call"))) == \
        {"block": True, "reason": "STOP"}
    assert adapter.render(sts.NO_RESULT, sts.HookCall("input")) == "{}"
    assert adapter.response_outcome == "execution_denial_returned"


def test_unmapped_hooks_answer_an_empty_object(store):
    for hook in ("session_start", "before_agent_start", "turn_end"):
        assert answer("pi", request(hook, SESSION, {"event": {"type": hook}}), store) == {}


# --- end to end ----------------------------------------------------------------

def test_e2e_review_denies_the_real_write(store):
    got = answer("pi", pi_input("/skill:stop-that-shit review -- audit"), store)
    assert "context" in got
    assert reason_code(denial("pi", answer("pi", tool_call(), store))) == "MODE_FORBIDS_MUTATION"
    assert reason_code(denial("pi", answer("pi", tool_call("pi-deny-bash"), store)))


def test_e2e_directive_mid_turn_is_refused(store):
    got = answer("pi", pi_input("$stop-that-shit off", idle=False), store)
    assert got["block"] is True and "mid-turn" in got["reason"]
    assert get_state(store, SESSION)["contract"]["level"] == "watch"
    got = answer("pi", pi_input("review only", idle=False), store)  # a correction waits too
    assert got["block"] is True


def test_e2e_invalid_directive_is_a_visible_error(store):
    got = answer("pi", pi_input("$stop-that-shit change please"), store)
    assert got["block"] is True and "INVALID_DIRECTIVE_TOKEN" in got["reason"]


def test_e2e_subagent_budget(store):
    answer("pi", pi_input("$stop-that-shit change agents=1"), store)
    assert answer("pi", subagent({"agent": "a", "task": "b"}, "c1"), store) == {}
    got = answer("pi", subagent({"tasks": [{"agent": "a", "task": "x"}]}, "c2"), store)
    assert reason_code(denial("pi", got)) == "AGENT_BUDGET_EXHAUSTED"
    done = {"type": "tool_result", "toolName": "subagent", "toolCallId": "c1", "content": [],
            "isError": False, "details": {"mode": "single", "results": [{}]}}
    answer("pi", request("tool_result", SESSION, {"event": done}), store)
    assert answer("pi", subagent({"agent": "a", "task": "b"}, "c3"), store) == {}


def test_e2e_real_process_prints_one_object(sts_home):
    from hooks import hook_process
    proc = hook_process("pi", tool_call(), sts_home)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {}  # `{}` is still printed
