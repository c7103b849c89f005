"""OpenCode adapter, driven with what OpenCode 1.18.33 really sent."""
import json

import pytest

import sts
from hooks import denial, reason_code
from hooks_shim import (BAD_DIRECTIVE, LinkStore, answer, audited, first, get_state, request,
                        set_state, translate)

RUN = "opencode-deny-task"
ROOT = "ses_dd2fc9112ffe0DhPowRIxLfkHV"
CHILD = "ses_dd2fc85f9ffeM6wF5KgenM58zL"


@pytest.fixture
def links(sts_home):
    return LinkStore(str(sts_home))


def message(session=ROOT, text=None, ctx=None):
    ev = first(RUN, "chat.message", lambda ev: ev["input"]["sessionID"] == session)
    ev = json.loads(json.dumps(ev))
    if text is not None:
        ev["output"]["parts"][0]["text"] = text
    return request("chat.message", session, ev, ctx=ctx or {"parentSessionId": None,
                                                             "agentCanEdit": True})


def before(session, tool=None, args=None, call_id="call_x", ctx=None):
    ev = {"input": {"tool": tool, "sessionID": session, "callID": call_id},
          "output": {"args": args or {}}}
    if call_id is None:
        del ev["input"]["callID"]
    return request("tool.execute.before", session, ev, ctx=ctx)


def real_before(pred):
    ev = first(RUN, "tool.execute.before", pred)
    return request("tool.execute.before", ev["input"]["sessionID"], ev)


def event_req(name, ctx=None):
    ev = first(RUN, "event:" + name)
    return request("event", ev["properties"]["sessionID"], {"event": ev}, ctx=ctx)


def action_of(payload, store):
    return translate("opencode", payload, store).event["action"]


# --- translation -----------------------------------------------------------------

def test_real_chat_message_is_prompt_submit(store):
    event = translate("opencode", message(), store).event
    assert event["kind"] == "prompt.submit" and event["sessionId"] == ROOT
    assert event["prompt"] == '"Create the probe file."'  # a quoted plain text stays as sent
    assert event["turnId"] == "msg_22d036f63001gRlMlWcTDhiity"
    assert event["host"]["agentType"] == "build"


def test_opencode_run_quoting_is_unwrapped_for_the_directive_only():
    assert sts.unwrap_run_quoting('"$stop-that-shit review -- look at \\"x\\""') == \
        '$stop-that-shit review -- look at "x"'
    assert sts.unwrap_run_quoting('"/skill:stop-that-shit review"') == "/skill:stop-that-shit review"
    assert sts.unwrap_run_quoting('"Create the probe file."') == '"Create the probe file."'
    assert sts.unwrap_run_quoting('"$stop-that-shit review" "and" "x"') == \
        '"$stop-that-shit review" "and" "x"'


def test_synthetic_and_ignored_parts_are_dropped():
    parts = [{"type": "text", "text": "one"}, {"type": "text", "text": "hidden", "synthetic": True},
             {"type": "file", "text": "f"}, {"type": "text", "text": "x", "ignored": True},
             {"type": "text", "text": "two"}]
    assert sts.opencode_message_text(parts) == "one\ntwo"


def test_child_message_never_reaches_the_core(store):
    child = message(CHILD, "$stop-that-shit off", ctx={"parentSessionId": ROOT})
    call = translate("opencode", child, store)
    assert call.event is None
    assert answer("opencode", child, store) == {}


def test_unknown_ancestry_gives_no_prompt_authority(store):
    """A session the shim could not look up may be a child: never prompt authority."""
    lost = message(ROOT, "$stop-that-shit review -- look",
                   ctx={"parentSessionId": None, "ancestryUnknown": True, "agentCanEdit": True})
    assert translate("opencode", lost, store).event is None
    assert answer("opencode", lost, store) == {}
    assert get_state(store, ROOT)["contract"]["source"] == "default"


def test_unknown_ancestry_tool_call_is_still_judged(links):
    """Only authority is withheld: tool calls keep the stored link, else the session itself."""
    links.write_link(CHILD, ROOT)
    payload = before(CHILD, "read", call_id="c1", ctx={"parentSessionId": None, "ancestryUnknown": True})
    assert translate("opencode", payload, links).event["sessionId"] == ROOT
    alone = before("ses_alone", "read", call_id="c2", ctx={"parentSessionId": None, "ancestryUnknown": True})
    assert translate("opencode", alone, links).event["sessionId"] == "ses_alone"


def test_real_write_and_child_write(links):
    links.write_link(CHILD, ROOT)
    event = translate("opencode", real_before(lambda ev: ev["input"]["tool"] == "write"), links).event
    assert event["sessionId"] == ROOT and event["sourceSessionId"] == CHILD
    action = event["action"]
    assert action["name"] == "write" and action["mutability"] == "write"
    assert action["id"] == "call_fake3" and action["affectedPaths"] == ["../probe-opencode"]


def test_parent_hint_from_the_shim_is_stored_as_a_link(links):
    payload = before(CHILD, "read", call_id="c1", ctx={"parentSessionId": ROOT})
    assert translate("opencode", payload, links).event["sessionId"] == ROOT
    assert links.link_root(CHILD) == ROOT
    no_hint = before(CHILD, "read", call_id="c2")
    assert translate("opencode", no_hint, links).event["sourceSessionId"] == CHILD


def test_tool_table(store):
    task = action_of(real_before(lambda ev: ev["input"]["tool"] == "task"), store)
    assert task == {"name": "task", "mutability": "delegate", "delegationCount": 1,
                    "id": "call_fake2", "cwd": "/tmp/run/work"}
    resumed = action_of(before(ROOT, "task", {"prompt": "more", "task_id": "ses_old"}), store)
    assert resumed["mutability"] == "control" and resumed["delegationLifecycleUnproven"]
    assert action_of(before(ROOT, "Grep", {"pattern": "x"}), store)["mutability"] == "read"
    assert action_of(before(ROOT, "todowrite"), store)["mutability"] == "control"
    edit = action_of(before(ROOT, "edit", {"filePath": "/tmp/run/work/src/a.py",
                                           "oldString": "a", "newString": "b"}), store)
    assert edit["mutability"] == "write" and edit["affectedPaths"] == ["src/a.py"]
    plugin = action_of(before(ROOT, "github_create_issue", {"filePath": "notes.md"}), store)
    assert plugin["mutability"] == "write" and plugin["affectedPaths"] == ["notes.md"]
    assert action_of(before(ROOT, "github_list_issues"), store)["mutability"] == "read"
    assert action_of(before(ROOT, "frobnicate"), store)["mutability"] == "unknown"
    assert action_of(before(ROOT, "bash", {"command": "ls"}), store)["command"] == "ls"
    assert action_of(before(ROOT, "apply_patch", {"patchText": "*** Begin Patch"}),
                     store)["mutability"] == "write"


def test_apply_patch_headers_without_a_blank_after_the_colon(store):
    """OpenCode 1.18 reads `*** Add File:` + trim(), so `*** Add File:../x`
    and `*** Move to:\t../x` write those files."""
    patch = ("*** Begin Patch\n*** Add File:../outside.txt\n+x\n"
             "*** Update File: src/a.py\n*** Move to:\t../moved.py\n@@\n-a\n+b\n"
             "*** End Patch")
    action = action_of(before(ROOT, "apply_patch", {"patchText": patch}), store)
    assert action["affectedPaths"] == ["../outside.txt", "src/a.py", "../moved.py"]


def test_task_without_call_id_is_dropped(store):
    assert answer("opencode", before(ROOT, "task", {"prompt": "p"}, call_id=None), store) == {}


def test_real_task_result_joins_the_child(store):
    ev = first(RUN, "tool.execute.after")
    call = translate("opencode", request("tool.execute.after", ROOT, ev), store)
    assert call.event["kind"] == "action.after" and not call.render
    assert call.event["action"] == {"id": "call_fake2", "lifecycle": "joined", "agentId": CHILD}
    ev["output"]["metadata"]["background"] = True
    assert sts.OpenCodeAdapter.task_result(ev["output"])["lifecycle"] == "running"
    ev["output"]["metadata"]["background"] = "yes"
    assert sts.OpenCodeAdapter.task_result(ev["output"]) == {"lifecycle": "unknown"}
    other = dict(ev, input=dict(ev["input"], tool="write"))
    assert translate("opencode", request("tool.execute.after", ROOT, other), store).event is None


def test_session_events(links):
    created = first(RUN, "event:session.created", lambda ev: "parentID" in ev["properties"]["info"])
    call = translate("opencode", request("event", CHILD, {"event": created}), links)
    assert call.event is None and links.link_root(CHILD) == ROOT
    idle = first(RUN, "event:session.idle", lambda ev: ev["properties"]["sessionID"] == CHILD)
    stop = translate("opencode", request("event", CHILD, {"event": idle}), links).event
    assert stop == {"protocolVersion": 2, "lifecycleVersion": 2, "kind": "subagent.stop",
                    "sessionId": ROOT, "agentId": CHILD, "sourceSessionId": CHILD}
    root_idle = first(RUN, "event:session.idle", lambda ev: ev["properties"]["sessionID"] == ROOT)
    assert translate("opencode", request("event", ROOT, {"event": root_idle}), links).event is None
    deleted = {"type": "session.deleted", "properties": {"info": {"id": ROOT}}}
    end = translate("opencode", request("event", ROOT, {"event": deleted}), links)
    assert end.event["kind"] == "session.end" and not end.render
    child_deleted = {"type": "session.deleted", "properties": {"info": {"id": CHILD}}}
    assert translate("opencode", request("event", CHILD, {"event": child_deleted}), links).event is None


@pytest.mark.parametrize("rules,editable", [
    ([{"permission": "*", "pattern": "*", "action": "allow"}], True),          # build
    ([{"permission": "*", "pattern": "*", "action": "allow"},
      {"permission": "edit", "pattern": "*", "action": "deny"},
      {"permission": "edit", "pattern": ".opencode/plans/*.md", "action": "allow"}], False),  # plan
    ([{"permission": "edit", "pattern": "*", "action": "deny"},
      {"permission": "*", "pattern": "*", "action": "ask"}], True),
    ({"permission": {"edit": "deny"}}, False),
    (None, None), (True, True), (False, False),
])
def test_agent_edit_rules(rules, editable):
    assert sts.opencode_agent_can_edit(rules) is editable


def test_editable_agent_promotes_review_to_change(store):
    set_state(store, ROOT, contract={"mode": "review", "level": "guard", "source": "directive"})
    assert translate("opencode", message(ctx={"agentCanEdit": False}), store) \
        .event["agentCanEdit"] is False
    answer("opencode", message(ctx={"agentCanEdit": False}), store)
    assert get_state(store, ROOT)["contract"]["mode"] == "review"
    answer("opencode", message(ctx={"agentCanEdit": None}), store)  # unknown counts as editable
    contract = get_state(store, ROOT)["contract"]
    assert contract["mode"] == "change" and contract["source"] == "host"
    assert contract["level"] == "guard"


def test_a_message_without_user_text_never_promotes(store):
    # Only synthetic/ignored parts (a plugin's noReply prompt): not the user asking.
    set_state(store, ROOT, contract={"mode": "review", "level": "guard", "source": "directive"})
    for flag in ("synthetic", "ignored"):
        injected = message(ctx={"agentCanEdit": True})
        for part in injected["payload"]["output"]["parts"]:
            part[flag] = True
        answer("opencode", injected, store)
        assert get_state(store, ROOT)["contract"]["mode"] == "review"
    answer("opencode", message(text=" \n", ctx={"agentCanEdit": True}), store)
    assert get_state(store, ROOT)["contract"]["mode"] == "review"


def test_no_promotion_while_a_directive_error_is_pending(store):
    set_state(store, ROOT, contract={"mode": "review", "level": "guard"},
              directiveError=BAD_DIRECTIVE)
    answer("opencode", message(), store)
    assert get_state(store, ROOT)["contract"]["mode"] == "review"


def test_pending_directive_error_pauses_root_and_child_tools(links):
    set_state(links, ROOT, directiveError=BAD_DIRECTIVE)
    links.write_link(CHILD, ROOT)
    for session in (ROOT, CHILD):
        got = answer("opencode", before(session, "read", {"filePath": "a"}), links)
        assert got["block"] is True and "INVALID_DIRECTIVE_TOKEN" in got["reason"]
        record = audited(links, got["reason"])  # the pause is audited like any denial
        assert record["decision"]["reasonCode"] == "DIRECTIVE_PENDING"
        assert record["decision"]["responseOutcome"] == "execution_denial_returned"
    got = answer("opencode", message(), links)
    assert "INVALID_DIRECTIVE_TOKEN" in got["context"] and "paused" in got["context"]


def test_rendering():
    adapter = sts.HOST_ADAPTERS_B["opencode"]
    tool_call = sts.HookCall("tool.execute.before", tool_call=True)
    assert json.loads(adapter.render(sts.CoreResult("deny", "STOP"), tool_call)) == \
        {"block": True, "reason": "STOP"}
    assert json.loads(adapter.render(sts.CoreResult("context", "WATCH"), tool_call)) == \
        {"context": "WATCH"}
    assert adapter.render(sts.NO_RESULT, tool_call) == "{}"
    quiet = sts.HookCall("tool.execute.after", render=False)
    assert adapter.render(sts.CoreResult("context", "x"), quiet) == "{}"
    error = sts.CoreResult("prompt-error", "CONFLICTING_DIRECTIVE: two modes", "CONFLICTING_DIRECTIVE")
    text = json.loads(adapter.render(error, sts.HookCall("chat.message")))["context"]
    assert "CONFLICTING_DIRECTIVE" in text and "paused" in text
    assert adapter.response_outcome == "execution_denial_returned"


def test_every_answer_is_one_json_object(store):
    assert answer("opencode", request("message.part.updated", ROOT, {}), store) == {}
    assert answer("opencode", {"v": 1, "hook": "chat.message", "payload": []}, store) == {}


# --- end to end ----------------------------------------------------------------

def test_e2e_review_denies_child_write(store):
    answer("opencode", message(text='"$stop-that-shit review -- look"',
                               ctx={"agentCanEdit": False}), store)
    assert get_state(store, ROOT)["contract"]["mode"] == "review"
    created = first(RUN, "event:session.created", lambda ev: "parentID" in ev["properties"]["info"])
    answer("opencode", request("event", CHILD, {"event": created}), store)
    got = answer("opencode", real_before(lambda ev: ev["input"]["tool"] == "write"), store)
    assert reason_code(denial("opencode", got)) == "MODE_FORBIDS_MUTATION"
    assert "before it ran" in got["reason"] or "execution" in got["reason"].lower()


def test_e2e_editable_agent_turns_review_into_change(store):
    answer("opencode", message(text="$stop-that-shit review", ctx={"agentCanEdit": True}), store)
    write = before(ROOT, "write", {"filePath": "/tmp/run/work/a.txt", "content": "x"})
    assert denial("opencode", answer("opencode", write, store))
    answer("opencode", message(text="now do it", ctx={"agentCanEdit": True}), store)
    assert answer("opencode", write, store) == {}


def test_e2e_directive_error_pauses_then_clears(store):
    got = answer("opencode", message(text="$stop-that-shit change agents=x"), store)
    assert "INVALID_AGENT_LIMIT" in got["context"]
    assert denial("opencode", answer("opencode", before(ROOT, "read"), store))
    answer("opencode", message(text="$stop-that-shit change"), store)
    assert answer("opencode", before(ROOT, "read", call_id="c2"), store) == {}


def test_e2e_allowed_call_answers_an_empty_object(store):
    assert answer("opencode", before(ROOT, "read"), store) == {}


def created(child, parent=ROOT):
    """OpenCode's session.created event for a subagent session of `parent`."""
    ev = {"type": "session.created",
          "properties": {"sessionID": child, "info": {"id": child, "parentID": parent}}}
    return request("event", child, {"event": ev})


def test_e2e_task_continuation_denied_under_a_finite_budget(store):
    answer("opencode", message(text="$stop-that-shit change agents=2"), store)
    answer("opencode", created("ses_old"), store)
    got = answer("opencode", before(ROOT, "task", {"prompt": "p", "task_id": "ses_old"}), store)
    assert reason_code(denial("opencode", got)) == "DELEGATION_LIFECYCLE_UNPROVEN"
