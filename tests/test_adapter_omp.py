"""Oh My Pi adapter, driven with what Oh My Pi 18.2.3 really sent."""
import json
import os

import pytest

import sts
from hooks import denial, reason_code
from hooks_shim import (LinkStore, answer, audited, first, get_state, request, set_state,
                        translate)

ROOT = "omp-root"
CHILD = "omp-child"
RUN = "omp-deny-task"


@pytest.fixture
def links(sts_home):
    return LinkStore(str(sts_home))


def req(hook, event, session=ROOT, **ctx):
    full = {"idle": True, "hasUI": False, "sessionFile": None, "parentSessionId": None}
    full.update(ctx)
    return request(hook, session, {"event": event}, ctx=full)


def tool(name, args, session=ROOT, call_id="call_x", **ctx):
    return req("tool_call", {"type": "tool_call", "toolName": name, "toolCallId": call_id,
                             "input": args}, session, **ctx)


def command(args, session=ROOT, **ctx):
    return request("command:sts", session, {"args": args}, ctx=ctx)


def action_of(payload, store):
    return translate("omp", payload, store).event["action"]


def lifecycle(status, call_id="call_fake1", child="0-Probe", session_file=None, session=ROOT):
    ev = {"id": child, "agent": "task", "agentSource": "bundled", "status": status,
          "parentToolCallId": call_id, "index": 0}
    if session_file:
        ev["sessionFile"] = session_file
    return req("task:subagent:lifecycle", ev, session)


# --- translation -----------------------------------------------------------------

def test_flag_on_a_root_session_start_arms_the_contract(store):
    start = first(RUN, "session_start")
    event = translate("omp", req("session_start", start, flag="review -- look"), store).event
    assert event["kind"] == "prompt.submit" and event["prompt"] == "$stop-that-shit review -- look"
    assert translate("omp", req("session_start", start), store).event is None
    child = req("session_start", start, CHILD, flag="off", parentSessionId=ROOT)
    assert translate("omp", child, store).event is None  # children see the same argv


def test_sts_command(store):
    call = translate("omp", command(" change agents=2 ", idle=True), store)
    assert call.event["prompt"] == "$stop-that-shit change agents=2"
    child = command("off", CHILD, parentSessionId=ROOT)
    got = answer("omp", child, store)
    assert got["block"] is True and "child commands cannot change root authority" in got["reason"]


def test_input_sources_and_forms(store):
    text = first("pi-deny", "input")  # OMP's interactive input has Pi's shape
    assert translate("omp", req("input", dict(text, text="/sts review")), store).event["prompt"] \
        == "$stop-that-shit review"
    flag_form = dict(text, text="--sts-contract review -- x")
    assert translate("omp", req("input", flag_form), store).event["prompt"] == \
        "$stop-that-shit review -- x"
    assert translate("omp", req("input", dict(text, source="rpc")), store).event is not None
    for source in ("extension", None):
        assert translate("omp", req("input", dict(text, source=source)), store).event is None
    child = req("input", text, CHILD, parentSessionId=ROOT)
    assert translate("omp", child, store).event is None


def test_indented_or_quoted_sts_forms_are_pasted_text_not_commands(store):
    # 4+ spaces, a tab or NBSP before the mention is code or a paste, not a directive.
    set_state(store, ROOT, contract={"mode": "review", "level": "guard", "source": "directive"})
    text = first("pi-deny", "input")
    for pasted in ("    /sts change", "\t/sts open", "\u00a0/sts change",
                   "\n\n    --sts-contract change hash=allow", "> /sts change"):
        event = translate("omp", req("input", dict(text, text=pasted)), store).event
        assert not event["prompt"].startswith("$stop-that-shit")
        answer("omp", req("input", dict(text, text=pasted)), store)
        assert get_state(store, ROOT)["contract"]["mode"] == "review"
    event = translate("omp", req("input", dict(text, text="\n   /sts change\nnext")), store).event
    assert event["prompt"] == "$stop-that-shit change\nnext"


def test_before_agent_start_asks_for_the_root_contract(store):
    child_start = first(RUN, "before_agent_start", lambda ev: "SUBAGENT" in ev["prompt"])
    event = translate("omp", req("before_agent_start", child_start, CHILD,
                                 parentSessionId=ROOT), store).event
    assert event["kind"] == "session.start" and event["sessionId"] == ROOT
    assert event["sourceSessionId"] == CHILD and "prompt" not in event


def test_real_task_and_child_write(store):
    task_ev = first(RUN, "tool_call", lambda ev: ev["toolName"] == "task")
    action = action_of(req("tool_call", task_ev), store)
    assert action["mutability"] == "delegate" and action["delegationCount"] == 1
    assert action["id"] == "call_fake1" and "unboundedDelegation" not in action
    assert "completionScope" not in action
    write_ev = first(RUN, "tool_call", lambda ev: ev["toolName"] == "write")
    event = translate("omp", req("tool_call", write_ev, CHILD, parentSessionId=ROOT), store).event
    assert event["sessionId"] == ROOT and event["sourceSessionId"] == CHILD
    assert event["action"]["affectedPaths"] == ["../probe-omp"]


@pytest.mark.parametrize("args,count,unbounded", [
    ({"tasks": [{"task": "a"}, {"task": "b"}, {"task": "c"}]}, 3, False),
    ({"tasks": [{"task": "a"}, {"name": "no task"}]}, 2, True),
    ({"task": "single"}, 1, False),
    ({"context": "nothing"}, 1, True),
    ({"tasks": "oops"}, 1, True),
])
def test_task_batches(store, args, count, unbounded):
    action = action_of(tool("task", args), store)
    assert action["delegationCount"] == count
    assert action.get("unboundedDelegation", False) is unbounded


def test_write_targets(store):
    assert action_of(tool("write", {"path": "proc://12/kill"}), store)["mutability"] == "control"
    assert action_of(tool("write", {"path": "proc://12/stdin", "content": "y"}),
                     store)["mutability"] == "unknown"
    mail = action_of(tool("write", {"path": "agent://Probe", "content": "hi"}), store)
    assert mail["mutability"] == "unknown" and mail["delegationLifecycleUnproven"]
    assert mail.get("affectedPaths") is None
    assert answer("omp", tool("write", {"path": "agent://x"}, call_id=None), store) == {}


def test_paths_as_omp_expands_them(store, monkeypatch):
    """OMP's expandPath drops a stray `:` and an `@` before an absolute or home
    path, decodes file:// URLs and expands `~name` to <home>/name."""
    monkeypatch.setenv("HOME", "/home/u")
    def paths(path):
        return action_of(tool("write", {"path": path, "content": "x"}), store)["affectedPaths"]
    assert paths("@/etc/passwd") == ["../../../etc/passwd"]
    assert paths(":/etc/passwd") == ["../../../etc/passwd"]
    assert paths("file:///etc/pass%77d") == ["../../../etc/passwd"]
    assert paths("~x/y") == ["../../../home/u/x/y"]
    assert paths("@src/a.py") == ["@src/a.py"]  # a literal name for OMP
    edit = action_of(tool("edit", {"path": "@/tmp/run/work/src/a.py",
                                   "edits": [{"rename": ":/etc/b"}]}), store)
    assert edit["affectedPaths"] == ["src/a.py", "../../../etc/b"]


def test_hub_eval_and_tables(store):
    assert action_of(tool("hub", {"op": "wait"}), store)["mutability"] == "read"
    assert action_of(tool("hub", {"op": "cancel", "ids": ["j"]}), store)["mutability"] == "control"
    send = action_of(tool("hub", {"op": "send", "to": "Probe", "message": "m"}), store)
    assert send["mutability"] == "unknown" and send["delegationLifecycleUnproven"]
    stdin = action_of(tool("hub", {"op": "send", "name": "server", "text": "q"}), store)
    assert stdin["mutability"] == "unknown" and "delegationLifecycleUnproven" not in stdin
    assert action_of(tool("hub", {"op": "start", "application": "x"}), store)["mutability"] == "unknown"
    evaluated = action_of(tool("eval", {"code": "1"}), store)
    assert evaluated["mutability"] == "unknown" and evaluated["delegationLifecycleUnproven"]
    for name, bucket in (("glob", "read"), ("web_search", "read"), ("yield", "control"),
                         ("ask", "control"), ("browser", "unknown")):
        assert action_of(tool(name, {}), store)["mutability"] == bucket, name


def test_hashline_edit_paths():
    text = ("*** Begin Patch\n[src/a.py#1A2B]\nPUT 3.=3:\n+x = 1\n[\"docs/b c.md\"#ffff]\n"
            "MV docs/moved.md\n*** End Patch\n")
    paths, added = sts.omp_edit_paths(text)
    assert paths == ["src/a.py", "docs/b c.md", "docs/moved.md"] and added == "x = 1"
    anchored = "*** Edit File: lib/c.py\n*** Find\nold\n*** Replace\nnew\n"
    assert sts.omp_edit_paths(anchored)[0] == ["lib/c.py"]
    assert sts.omp_edit_paths("[not a header]\n+[x#1234]\n")[0] == []


def test_edit_tool_forms(store):
    hashline = action_of(tool("edit", {"input": "[/tmp/run/work/src/a.py#00ff]\nREM\n"}), store)
    assert hashline["mutability"] == "write" and hashline["affectedPaths"] == ["src/a.py"]
    renamed = action_of(tool("edit", {"path": "a.py", "edits": [
        {"op": "update", "diff": "@@", "rename": "b.py"}]}), store)
    assert renamed["affectedPaths"] == ["a.py", "b.py"]
    replace = action_of(tool("edit", {"path": "c.py", "old_string": "a", "new_string": "b"}), store)
    assert replace["affectedPaths"] == ["c.py"]


def test_task_result(store):
    result = first(RUN, "tool_result", lambda ev: ev["toolName"] == "task")
    call = translate("omp", req("tool_result", result), store)
    assert call.event["action"] == {"lifecycle": "joined", "id": "call_fake1"} and not call.render
    aborted = json.loads(json.dumps(result))
    aborted["details"]["results"][0]["aborted"] = True
    assert translate("omp", req("tool_result", aborted), store).event["action"]["lifecycle"] == "unknown"
    background = json.loads(json.dumps(result))
    background["details"]["async"] = {"jobId": "j"}
    assert translate("omp", req("tool_result", background),
                     store).event["action"]["lifecycle"] == "unknown"
    yielded = first(RUN, "tool_result", lambda ev: ev["toolName"] == "yield")
    assert translate("omp", req("tool_result", yielded), store).event is None


def test_lifecycle_bus(store):
    started = translate("omp", lifecycle("started"), store).event
    agent = json.dumps([ROOT, "call_fake1", "0-Probe"], separators=(",", ":"))
    assert started["kind"] == "action.after"
    assert started["action"] == {"id": "call_fake1", "lifecycle": "running", "agentId": agent}
    stopped = translate("omp", lifecycle("completed"), store).event
    assert stopped["kind"] == "subagent.stop" and stopped["agentId"] == agent
    assert translate("omp", lifecycle("failed"), store).event["kind"] == "subagent.stop"
    assert translate("omp", lifecycle("aborted"), store).event is None


def test_session_file_links_the_child(store, tmp_path):
    session_file = str(tmp_path / "child.jsonl")
    translate("omp", lifecycle("started", session_file=session_file), store)
    with open(sts.omp_link_path(store, session_file)) as fh:
        assert json.load(fh) == {"rootSessionId": ROOT}
    write = tool("write", {"path": "a.txt", "content": "x"}, CHILD, sessionFile=session_file)
    event = translate("omp", write, store).event
    assert event["sessionId"] == ROOT and event["sourceSessionId"] == CHILD


def test_damaged_parent_link_is_recovery(store, tmp_path):
    session_file = str(tmp_path / "child.jsonl")
    target = sts.omp_link_path(store, session_file)
    os.makedirs(os.path.dirname(target))
    with open(target, "w") as fh:
        fh.write("{broken")
    write = tool("write", {"path": "a.txt", "content": "x"}, CHILD, sessionFile=session_file)
    call = translate("omp", write, store)
    # Judged in recovery under the child's own id, never against a guessed root.
    assert call.event["sessionId"] == CHILD and call.tool_call
    assert call.event["storageError"]["code"] == "PARENT_LINK_DAMAGED"
    got = answer("omp", write, store)  # decided as a damaged state file, and audited
    assert reason_code(got["reason"]) == "STATE_DAMAGED" and "parent link" in got["reason"]
    assert audited(store, got["reason"])["decision"]["reasonCode"] == "STATE_DAMAGED"
    got = answer("omp", req("input", first("pi-deny", "input"), CHILD, sessionFile=session_file),
                 store)
    assert got["block"] is True and "PARENT_LINK_DAMAGED" in got["reason"]
    with open(target) as fh:
        assert fh.read() == "{broken"  # preserved


def test_approval_refused_is_not_started(store):
    ev = {"type": "tool_approval_resolved", "sessionId": ROOT, "toolCallId": "call_t",
          "toolName": "task", "approved": False}
    assert translate("omp", req("tool_approval_resolved", ev), store).event["action"] == \
        {"id": "call_t", "lifecycle": "not_started"}
    for change in ({"approved": True}, {"toolName": "bash"}, {"sessionId": "other"}):
        assert translate("omp", req("tool_approval_resolved", dict(ev, **change)), store).event is None


def test_child_shutdown_never_closes_the_root(store):
    assert translate("omp", req("session_shutdown", {}, CHILD, parentSessionId=ROOT),
                     store).event is None
    assert translate("omp", req("session_shutdown", {}), store).event["kind"] == "session.end"


# --- end to end ----------------------------------------------------------------

def test_e2e_flag_arms_review_and_child_write_is_denied(store):
    got = answer("omp", req("session_start", {"type": "session_start"}, flag="review -- look"), store)
    assert "context" in got
    write_ev = first(RUN, "tool_call", lambda ev: ev["toolName"] == "write")
    got = answer("omp", req("tool_call", write_ev, CHILD, parentSessionId=ROOT), store)
    assert reason_code(denial("omp", got)) == "MODE_FORBIDS_MUTATION"


def test_e2e_bad_flag_is_a_visible_error(store):
    got = answer("omp", req("session_start", {"type": "session_start"}, flag="review fix it"), store)
    assert got["block"] is True and "INVALID_DIRECTIVE_TOKEN" in got["reason"]


def test_e2e_command_answers_visibly_and_waits_for_idle(store):
    got = answer("omp", command("change", idle=True), store)
    assert "context" in got
    again = answer("omp", command("change", idle=True), store)
    assert again.get("context")  # unchanged contract: still a visible answer
    busy = answer("omp", command("off", idle=False), store)
    assert busy["block"] is True and get_state(store, ROOT)["contract"]["level"] == "guard"


def test_e2e_agents_one_and_lifecycle_release(store):
    answer("omp", command("change agents=1", idle=True),
           store)
    assert answer("omp", tool("task", {"tasks": [{"task": "a"}]}, call_id="t1"), store) == {}
    answer("omp", lifecycle("started", "t1", "0-A"), store)
    denied = answer("omp", tool("task", {"tasks": [{"task": "b"}]}, call_id="t2"), store)
    assert reason_code(denial("omp", denied)) == "AGENT_BUDGET_EXHAUSTED"
    answer("omp", lifecycle("completed", "t1", "0-A"), store)
    answer("omp", req("tool_result", {"type": "tool_result", "toolName": "task", "toolCallId": "t1",
                                      "content": [], "isError": False,
                                      "details": {"results": [{"aborted": False}]}}), store)
    assert answer("omp", tool("task", {"tasks": [{"task": "c"}]}, call_id="t3"), store) == {}


def test_e2e_damaged_link_denies_writes_allows_reads(store, tmp_path):
    session_file = str(tmp_path / "child.jsonl")
    target = sts.omp_link_path(store, session_file)
    os.makedirs(os.path.dirname(target))
    with open(target, "w") as fh:
        fh.write("[]")
    write = tool("write", {"path": "a.txt", "content": "x"}, CHILD, sessionFile=session_file)
    assert denial("omp", answer("omp", write, store))
    read = tool("read", {"path": "a.txt"}, CHILD, sessionFile=session_file)
    assert answer("omp", read, store) == {}
