"""The session state is read once per event, on every host.

An adapter only translates: it never reads the session state itself.  The
engine reads it once (inside the lock when the event may write), and every
answer, the pause for a rejected directive and the contract line included,
is rendered from the engine's result.  Each case runs one host's session
through the hook runner and counts `Store.load` calls per event.
"""
import json
import os

import pytest

import sts
from hooks_shim import request
from test_same_answer import CWD, DRIVERS, HOSTS, SESSION

CHILD = "loads-child"
AGENT_CALL = "call_agent_1"


def _hook(**fields):
    return dict({"session_id": SESSION, "cwd": CWD}, **fields)


# --- per host: the events a session sends besides prompts and tool calls ---------
# name -> builder(kind) for "start", "result", "child-start", "child-stop", "end";
# a host without that event has no entry.

def _codex(kind):
    agent = "0f6c2e47-6d1c-4b55-9a57-2b1f6d3c9e01"
    return {
        "start": _hook(hook_event_name="SessionStart", source="startup"),
        "result": _hook(hook_event_name="PostToolUse", tool_name="spawn_agent",
                        tool_use_id=AGENT_CALL, tool_response={"agent_id": agent}),
        "end": _hook(hook_event_name="SessionEnd"),
    }.get(kind)


def _claude(kind):
    return {
        "start": _hook(hook_event_name="SessionStart", source="startup"),
        "result": _hook(hook_event_name="PostToolUse", tool_name="Agent", tool_use_id=AGENT_CALL,
                        tool_response={"status": "async_launched", "agentId": CHILD}),
        "child-start": _hook(hook_event_name="SubagentStart", agent_id=CHILD),
        "end": _hook(hook_event_name="SessionEnd"),
    }.get(kind)


def _hermes(kind):
    def event(hook, **extra):
        return {"hook_event_name": hook, "tool_name": None, "tool_input": None,
                "session_id": SESSION, "cwd": CWD, "extra": extra}
    result = json.dumps({"status": "dispatched", "mode": "background"})
    return {
        "result": dict(event("post_tool_call", tool_call_id=AGENT_CALL, result=result),
                       tool_name="delegate_task"),
        "child-start": event("subagent_start", parent_session_id=SESSION,
                             child_session_id=CHILD, child_subagent_id="sa-1"),
        "child-stop": event("subagent_stop", parent_session_id=SESSION,
                            child_session_id=CHILD, child_status="completed"),
        "end": event("on_session_end"),
    }.get(kind)


def _opencode(kind):
    def event(body):
        return request("event", SESSION, {"event": body}, cwd=CWD)
    return {
        "result": request("tool.execute.after", SESSION, {
            "input": {"tool": "task", "sessionID": SESSION, "callID": AGENT_CALL},
            "output": {"output": "done", "metadata": {"sessionId": CHILD}}}, cwd=CWD),
        "child-start": event({"type": "session.created", "properties": {
            "info": {"id": CHILD, "parentID": SESSION}}}),
        "child-stop": event({"type": "session.idle", "properties": {"sessionID": CHILD}}),
        "end": event({"type": "session.deleted", "properties": {"info": {"id": SESSION}}}),
    }.get(kind)


def _pi_like(host):
    def build(kind):
        ctx = {"idle": False, "hasUI": False}
        tool = "subagent" if host == "pi" else "task"
        details = {"mode": "single", "results": []} if host == "pi" else {"results": []}
        return {
            "result": request("tool_result", SESSION, {"event": {
                "type": "tool_result", "toolName": tool, "toolCallId": AGENT_CALL,
                "content": [], "isError": False, "details": details}}, cwd=CWD, ctx=ctx),
            "end": request("session_shutdown", SESSION, {"event": {}}, cwd=CWD, ctx=ctx),
        }.get(kind)
    return build


def _gemini(kind):
    return {
        "start": _hook(hook_event_name="SessionStart", source="startup"),
        "result": _hook(hook_event_name="AfterTool", tool_name="invoke_agent",
                        tool_input={"agent_name": "generalist", "prompt": "help"}),
        "end": _hook(hook_event_name="SessionEnd"),
    }.get(kind)


def _copilot(kind):
    base = {"sessionId": SESSION, "timestamp": 1796134000200, "cwd": CWD}
    return {
        "start": dict(base, hook_event_name="sessionStart", source="new"),
        "result": dict(base, hook_event_name="postToolUse", toolName="task",
                       toolArgs={"description": "d", "prompt": "p", "name": "n",
                                 "agent_type": "general-purpose"}),
        "child-start": dict(base, hook_event_name="subagentStart", agentId=CHILD),
        "child-stop": dict(base, hook_event_name="subagentStop", agentId=CHILD),
    }.get(kind)


def _qwen(kind):
    return {
        "start": _hook(hook_event_name="SessionStart", source="startup"),
        "result": _hook(hook_event_name="PostToolUse", tool_name="agent",
                        tool_use_id="toolu_" + AGENT_CALL, tool_call_id=AGENT_CALL,
                        tool_response="The agent finished."),
        "child-start": _hook(hook_event_name="SubagentStart", agent_id=CHILD),
        "child-stop": _hook(hook_event_name="SubagentStop", agent_id=CHILD),
        "end": _hook(hook_event_name="SessionEnd"),
    }.get(kind)


OTHER_EVENTS = {"codex": _codex, "claude": _claude, "hermes": _hermes, "opencode": _opencode,
                "pi": _pi_like("pi"), "omp": _pi_like("omp"), "gemini": _gemini,
                "copilot": _copilot, "qwen": _qwen}


def session(host):
    """(label, payload) for one session of `host`: arming, reading, writing,
    delegating, a rejected directive and its correction, status."""
    prompt, tool = DRIVERS[host]
    other = OTHER_EVENTS[host]
    steps = [
        ("start", other("start")),
        ("directive", prompt("$stop-that-shit change agents=2")),
        ("plain prompt", prompt("please look at the tests")),
        ("status", prompt("$stop-that-shit status")),
        ("read", tool("shell", "git status", "call_read_1")),
        ("write", tool("write", "src/a.py", "call_write_1")),
        ("delegate", tool("agent", "-", AGENT_CALL)),
        ("delegation result", other("result")),
        ("child start", other("child-start")),
        ("child stop", other("child-stop")),
        ("rejected directive", prompt("$stop-that-shit change fix it")),
        ("tool while rejected", tool("shell", "git status", "call_read_2")),
        ("prompt while rejected", prompt("what now?")),
        ("corrected directive", prompt("$stop-that-shit review")),
        ("denied write", tool("write", "src/b.py", "call_write_2")),
        ("end", other("end")),
    ]
    return [(label, payload) for label, payload in steps if payload is not None]


@pytest.fixture
def loads(monkeypatch):
    """Counts Store.load calls (Store.update reads through it too)."""
    counter = {"n": 0}
    real = sts.Store.load

    def counting(self, key):
        counter["n"] += 1
        return real(self, key)
    monkeypatch.setattr(sts.Store, "load", counting)
    return counter


def _loads_per_event(host, steps, store, loads):
    seen = {}
    for label, payload in steps:
        before = loads["n"]
        sts.run_hook(host, json.dumps(payload).encode(), store)
        seen[label] = loads["n"] - before
    return seen


@pytest.mark.parametrize("host", HOSTS)
def test_every_event_reads_the_state_at_most_once(host, store, loads):
    seen = _loads_per_event(host, session(host), store, loads)
    assert {label: n for label, n in seen.items() if n > 1} == {}
    # Every prompt and tool call is judged against the state: exactly one read.
    judged = ("directive", "plain prompt", "status", "read", "write", "delegate",
              "rejected directive", "tool while rejected", "prompt while rejected",
              "corrected directive", "denied write")
    assert {label: seen[label] for label in judged} == {label: 1 for label in judged}


@pytest.mark.parametrize("host", ("pi", "omp"))
def test_a_prompt_typed_mid_turn_reads_the_state_at_most_once(host, store, loads):
    prompt = DRIVERS[host][0]
    busy = [(text, prompt(text)) for text in ("also check b.py", "$stop-that-shit off")]
    for _, payload in busy:
        payload["payload"]["ctx"]["idle"] = False
    seen = _loads_per_event(host, busy, store, loads)
    # Plain text is read against the contract once; a directive needs no read.
    assert seen == {"also check b.py": 1, "$stop-that-shit off": 0}


def test_an_oh_my_pi_command_reads_the_state_once(store, loads):
    command = request("command:sts", SESSION, {"args": "change"}, cwd=CWD,
                      ctx={"idle": True, "hasUI": False, "sessionFile": None})
    seen = _loads_per_event("omp", [("first", command), ("again", command)], store, loads)
    assert seen == {"first": 1, "again": 1}


@pytest.mark.parametrize("host", ("hermes", "opencode", "omp", "copilot"))
def test_a_call_whose_parent_link_is_damaged_reads_no_state(host, store, loads):
    # Judged in read-only recovery: no session's state is the right one to read.
    target = store.path("links", sts.session_key(CHILD) + ".json")
    store.create_json(target, {"rootSessionId": ""})
    _, tool = DRIVERS[host]
    payload = tool("write", "src/a.py", "call_child_1")
    text = json.dumps(payload).replace(SESSION, CHILD)
    before = loads["n"]
    out = sts.run_hook(host, text.encode(), store)
    assert loads["n"] == before
    assert "STATE_DAMAGED" in out and "parent link" in out


@pytest.mark.parametrize("host", ("hermes", "opencode", "omp", "copilot"))
def test_a_prompt_whose_parent_link_is_damaged_is_answered_by_the_core(host, store, loads):
    # Which contract governs the prompt is unknown, so it sets none: the core
    # answers with the storage error (Oh My Pi, which can refuse input, shows
    # it as a refusal), reads no state, and arms the session, so a shim that
    # cannot reach sts.py blocks its tools as sts.py would.
    target = store.path("links", sts.session_key(CHILD) + ".json")
    store.create_json(target, {"rootSessionId": ""})
    prompt, _ = DRIVERS[host]
    text = json.dumps(prompt("$stop-that-shit open")).replace(SESSION, CHILD)
    before = loads["n"]
    out = sts.run_hook(host, text.encode(), store)
    assert loads["n"] == before
    assert "PARENT_LINK_DAMAGED: " in out and "parent link" in out
    if host == "omp":
        assert json.loads(out)["block"] is True
    assert store.armed_marker(sts.session_key(CHILD))
    assert not os.path.exists(store.path("sessions", sts.session_key(CHILD) + ".json"))
