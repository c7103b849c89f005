"""Hermes Agent adapter, driven with what Hermes 0.19.0 really sent."""
import json

import pytest

import sts
from hooks import denial, reason_code
from hooks_shim import (BAD_DIRECTIVE, WORK, LinkStore, answer, audited, first, get_state,
                        hermes_envelope, set_state, shim_raw, translate)

ROOT = "20261130_151252_8e1264"
CHILD = "20261130_151257_2d5de2"


@pytest.fixture
def links(sts_home):
    return LinkStore(str(sts_home))


def real(run, hook, pred=None):
    return hermes_envelope(hook, first(run, hook, pred))


def write_call(run="hermes-deny"):
    return real(run, "pre_tool_call", lambda ev: ev["tool_name"] == "write_file")


def prompt(text, session="20261130_151221_31274d"):
    env = real("hermes-deny", "pre_llm_call")
    env["session_id"] = session
    env["extra"]["user_message"] = text
    return env


def tool(name, args, session=ROOT, call_id="call_x"):
    return {"hook_event_name": "pre_tool_call", "tool_name": name, "tool_input": args,
            "session_id": session, "cwd": WORK, "extra": {"tool_call_id": call_id}}


def action_of(payload, store):
    return translate("hermes", payload, store).event["action"]


# --- translation (independent of the core) ------------------------------------

def test_real_write_file_becomes_action_before(store):
    call = translate("hermes", write_call(), store)
    event = call.event
    assert event["kind"] == "action.before" and event["sessionId"] == "20261130_151221_31274d"
    assert "sourceSessionId" not in event
    action = event["action"]
    assert action["name"] == "write_file" and action["mutability"] == "write"
    assert action["id"] == "call_fake1"           # tool_call_id lives in `extra`
    assert action["affectedPaths"] == ["../probe-hermes"]  # /tmp/run/probe-hermes vs /tmp/run/work
    assert call.tool_call


def test_native_shell_hook_envelope_is_the_same_format(store):
    raw = shim_raw("hermes-deny-shellhook")[0]["raw"]
    event = translate("hermes", raw, store).event
    assert event["action"]["id"] == "call_fake1"
    assert event["action"]["affectedPaths"] == ["../probe-hermes"]


def test_tool_table(store):
    assert action_of(tool("read_file", {"path": "a"}), store)["mutability"] == "read"
    assert action_of(tool("session_search", {}), store)["mutability"] == "read"
    assert action_of(tool("todo", {}), store)["mutability"] == "control"
    for unknown in ("execute_code", "process", "memory", "mcp_github_create_issue", "send_message"):
        assert action_of(tool(unknown, {}), store)["mutability"] == "unknown", unknown
    shell = action_of(tool("terminal", {"command": "ls"}), store)
    assert shell["name"] == "terminal" and shell["command"] == "ls"
    replace = action_of(tool("patch", {"path": WORK + "/src/a.py", "old_string": "a",
                                       "new_string": "b"}), store)
    assert replace["mutability"] == "write" and replace["affectedPaths"] == ["src/a.py"]


def test_v4a_patch_paths(store):
    text = ("*** Begin Patch\n***Add File: new.py\n+x\n*** Update  File: " + WORK + "/src/a.py\n"
            "@@\n-a\n+b\n*** Delete File: old.py\n*** Move File: m.py -> n.py\n"
            "*** UpdateFile: not-a-header\n*** End Patch\n")
    action = action_of(tool("patch", {"mode": "patch", "patch": text}), store)
    assert action["affectedPaths"] == ["new.py", "src/a.py", "old.py", "m.py", "n.py"]


def test_v4a_patch_reads_intents_file_by_file(store):
    """A V4A patch goes through the same patch reader as every other host: its
    manifests are checked for dependencies, and each file's lines are read with
    that file's path (a .md file is prose)."""
    def patch(*lines):
        return action_of(tool("patch", {"mode": "patch", "patch": "\n".join(
            ("*** Begin Patch",) + lines + ("*** End Patch", ""))}), store)
    added = patch("*** Update File: " + WORK + "/requirements.txt", "@@", " requests==2.31.0",
                  "+flask>=2.0")
    assert added["dependencyIntent"] is True and added["hashIntent"] is False
    bumped = patch("*** Update File: requirements.txt", "@@", "-requests==2.31.0",
                   "+requests==2.32.0")
    assert bumped["dependencyIntent"] is True
    comment = patch("*** Update File: requirements.txt", "@@", " requests==2.31.0", "+# pinned")
    assert comment["dependencyIntent"] is False
    prose = patch("*** Update File: docs/notes.md", "@@", "+Use hashlib.sha256(data).")
    assert prose["hashIntent"] is False
    code = patch("*** Update File: src/App.java", "@@", "+h = hashlib.md5(x)")
    assert code["hashIntent"] is True
    # A header only Hermes' own parser takes still has its lines read (whole).
    odd = patch("*** Update\u00a0File: src/a.py", "@@", "+x = hashlib.md5(b)")
    assert odd["affectedPaths"] == ["src/a.py"] and odd["hashIntent"] is True


def test_absolute_path_keeps_its_dotdot_for_the_core(store):
    """Hermes resolves `<cwd>/src/out/../x` physically: with src/out a link
    elsewhere that is not src/x, so the adapter must not fold the `..` away."""
    action = action_of(tool("write_file", {"path": WORK + "/src/out/../x", "content": "x"}),
                       store)
    assert action["affectedPaths"] == ["src/out/../x"]


@pytest.mark.parametrize("blank", ["\u00a0", "\x0b", "\r", "\u2003"])
def test_v4a_header_with_any_unicode_blank_is_a_header(store, blank):
    """Hermes' parser matches `\\s+` (Unicode), so `***Add<NBSP>File: /etc/x`
    adds /etc/x; a reader that only knew spaces and tabs let it through."""
    text = ("*** Begin Patch\n*** Update File: src/a.py\n@@\n-a\n+b\n"
            "*** Add" + blank + "File: ../evil\n+x\n"
            "***Move" + blank + "File: src/m.py ->" + blank + "../moved\n*** End Patch\n")
    action = action_of(tool("patch", {"mode": "patch", "patch": text}), store)
    assert action["affectedPaths"] == ["src/a.py", "../evil", "src/m.py", "../moved"]


@pytest.mark.parametrize("args,count,bucket", [
    ({"goal": "SUBAGENT: write the probe", "context": "probe"}, 1, "delegate"),
    ({"tasks": [{"goal": "a"}, {"goal": "b"}, {"goal": "c"}]}, 3, "delegate"),
    ({"tasks": json.dumps([{"goal": "a"}, {"goal": "b"}])}, 2, "delegate"),
    ({"tasks": "not json", "goal": "g"}, 1, "delegate"),  # Hermes then runs the goal
    ({"tasks": {"goal": "a"}, "goal": "g"}, 1, "delegate"),
    ({"tasks": "not json"}, 0, "delegate"),
    ({"tasks": [], "goal": "g"}, 1, "delegate"),
    ({}, 0, "delegate"),
    ({"action": "LIST"}, 0, "control"),
    # Hermes 0.19 has no `action`: it ignores the word and starts the children.
    ({"action": "list", "goal": "g"}, 1, "delegate"),
    ({"action": "stop", "tasks": [{"goal": "a"}, {"goal": "b"}]}, 2, "delegate"),
])
def test_delegate_task_counts(store, args, count, bucket):
    action = action_of(tool("delegate_task", args), store)
    assert action["mutability"] == bucket and action["delegationCount"] == count


def test_delegate_without_id_is_dropped(store):
    payload = tool("delegate_task", {"goal": "g"}, call_id=None)
    assert translate("hermes", payload, store) is None
    assert answer("hermes", payload, store) is None


def test_subagent_start_links_child_and_alias_to_the_root(links):
    start = real("hermes-deny-task", "subagent_start")
    event = translate("hermes", start, links).event
    assert event == {"protocolVersion": 2, "lifecycleVersion": 2, "kind": "subagent.start",
                     "sessionId": ROOT, "agentId": CHILD, "agentAlias": "sa-0-2350cc48",
                     "reservationUnknown": True}  # Hermes never names the delegating call
    assert links.link_root(CHILD) == ROOT and links.link_root("sa-0-2350cc48") == ROOT
    child_write = real("hermes-deny-task", "pre_tool_call", lambda ev: ev["session_id"] == CHILD)
    child_event = translate("hermes", child_write, links).event
    assert child_event["sessionId"] == ROOT and child_event["sourceSessionId"] == CHILD
    assert child_event["action"]["id"] == "call_fake3"


def _reservation(action_id, pending):
    return {"actionId": action_id, "pendingCount": pending, "agentIds": [],
            "completionScope": "children", "asyncLaunched": None, "observedRunning": False,
            "resultUnknown": False, "notStartedAmbiguous": False, "reportedAliases": []}


def test_subagent_start_binds_only_a_sole_open_call(links):
    state = sts.default_state()
    state["delegation"]["reservations"] = {"reservation:call_fake1": _reservation("call_fake1", 1)}
    state["delegation"]["acceptedActions"] = {"call_fake1": 1, "call_two": 2}
    set_state(links, ROOT, delegation=state["delegation"])
    start = real("hermes-deny-task", "subagent_start")
    answer("hermes", start, links)
    bound = get_state(links, ROOT)["delegation"]["reservations"]["reservation:call_fake1"]
    assert bound["agentIds"] == [CHILD] and bound["pendingCount"] == 0
    state["delegation"]["reservations"] = {"reservation:call_fake1": _reservation("call_fake1", 1),
                                           "reservation:call_two": _reservation("call_two", 2)}
    set_state(links, ROOT, delegation=state["delegation"])
    answer("hermes", start, links)  # two owners: no guess
    reservations = get_state(links, ROOT)["delegation"]["reservations"]
    assert [r["agentIds"] for r in reservations.values()] == [[], []]


def test_child_found_by_task_id_alone(links):
    links.write_link("sa-0-2350cc48", ROOT)
    child_write = real("hermes-deny-task", "pre_tool_call", lambda ev: ev["session_id"] == CHILD)
    assert translate("hermes", child_write, links).event["sessionId"] == ROOT


def test_child_prompt_is_never_authority(links):
    child_prompt = real("hermes-deny-task", "pre_llm_call", lambda ev: ev["session_id"] == CHILD)
    assert translate("hermes", child_prompt, links) is None  # unlinked subagent: nothing
    links.write_link(CHILD, ROOT)
    event = translate("hermes", child_prompt, links).event
    assert event["kind"] == "session.start" and event["sessionId"] == ROOT
    assert event["sourceSessionId"] == CHILD and "prompt" not in event


@pytest.mark.parametrize("where", ["extra", "top"])
def test_prompt_naming_a_parent_session_is_never_authority(links, where):
    """REAL 0.19.0 pre_llm_call never carries parent_session_id; one that does is a
    child's, even without platform "subagent" and without its own session_id."""
    env = prompt("$stop-that-shit off")
    env["extra"]["platform"] = "cli"
    del env["session_id"]  # the native hook would fall back to the parent id
    (env["extra"] if where == "extra" else env)["parent_session_id"] = ROOT
    assert translate("hermes", env, links) is None
    assert answer("hermes", env, links) is None
    env["session_id"] = CHILD
    assert translate("hermes", env, links) is None  # unlinked child: nothing
    links.write_link(CHILD, ROOT)
    event = translate("hermes", env, links).event
    assert event["kind"] == "session.start" and event["sessionId"] == ROOT


def test_root_prompt_is_prompt_submit(store):
    event = translate("hermes", real("hermes-deny", "pre_llm_call"), store).event
    assert event["kind"] == "prompt.submit" and event["prompt"] == "Create the probe file."
    assert event["turnId"].startswith("20261130_151221_31274d:")


def test_post_tool_call_facts(store):
    post = real("hermes-deny-task", "post_tool_call", lambda ev: ev["tool_name"] == "delegate_task")
    post["extra"]["result"] = json.dumps({"status": "dispatched", "mode": "background", "count": 1,
                                          "delegation_id": "deleg_1"})
    call = translate("hermes", post, store)
    assert call.event["action"] == {"id": "call_fake1", "lifecycle": "running"}
    assert not call.render
    post["extra"]["result"] = {"results": [{"status": "completed"}, {"status": "error"}]}
    assert translate("hermes", post, store).event["action"]["lifecycle"] == "joined"
    post["extra"]["result"] = {"status": "dispatched", "mode": "background",
                               "subagent_ids": ["sa-1", 7]}
    assert translate("hermes", post, store).event["action"]["agentAliases"] == ["sa-1"]
    other = real("hermes-deny-task", "post_tool_call", lambda ev: ev["tool_name"] == "terminal")
    assert translate("hermes", other, store) is None


def test_subagent_stop_only_on_a_final_status(store):
    stop = real("hermes-deny-task", "subagent_stop")
    event = translate("hermes", stop, store).event
    assert event["kind"] == "subagent.stop" and event["agentId"] == CHILD
    stop["extra"]["child_status"] = "success"  # Hermes' docstring spelling
    assert translate("hermes", stop, store).event["kind"] == "subagent.stop"
    stop["extra"]["child_status"] = "timeout"
    assert translate("hermes", stop, store) is None


def test_session_end_and_ignored_hooks(links):
    end = real("hermes-deny-task", "on_session_end", lambda ev: ev["session_id"] == ROOT)
    call = translate("hermes", end, links)
    assert call.event["kind"] == "session.end" and not call.render
    links.write_link(CHILD, ROOT)
    child_end = real("hermes-deny-task", "on_session_end", lambda ev: ev["session_id"] == CHILD)
    assert translate("hermes", child_end, links) is None
    for hook in ("on_session_start", "post_llm_call"):
        assert translate("hermes", real("hermes-deny-task", hook), links) is None


def test_pending_directive_error_pauses_every_tool_through_the_core(store, links):
    # Hermes cannot refuse the prompt of a rejected directive, so it says so
    # on every tool call and the core pauses them all, each one audited.
    set_state(links, ROOT, directiveError=BAD_DIRECTIVE)
    links.write_link(CHILD, ROOT)
    for payload in (tool("read_file", {"path": "a"}),
                    real("hermes-deny-task", "pre_tool_call", lambda ev: ev["session_id"] == CHILD)):
        assert translate("hermes", payload, links).event["promptsRefusable"] is False
        got = answer("hermes", payload, links)
        assert got["action"] == "block"
        assert got["message"].startswith("Stop That Shit: directive rejected "
                                         "(INVALID_DIRECTIVE_TOKEN)")
        assert "paused" in got["message"]
        record = audited(links, got["message"])
        assert record["decision"]["reasonCode"] == "DIRECTIVE_PENDING"
        assert record["decision"]["responseOutcome"] == "permission_deny_returned"


def test_rendering():
    adapter = sts.HOST_ADAPTERS_B["hermes"]
    pre_tool = sts.HookCall("pre_tool_call", tool_call=True)
    pre_llm = sts.HookCall("pre_llm_call")
    deny = json.loads(adapter.render(sts.CoreResult("deny", "STOP / I\nReason: X"), pre_tool))
    assert deny == {"action": "block", "message": "STOP / I\nReason: X"}
    assert adapter.render(sts.CoreResult("context", "WATCH / H"), pre_tool) == ""
    assert json.loads(adapter.render(sts.CoreResult("context", "ctx"), pre_llm)) == {"context": "ctx"}
    error = sts.CoreResult("prompt-error", "INVALID_AGENT_LIMIT: agents=x must be a number",
                           "INVALID_AGENT_LIMIT")
    text = json.loads(adapter.render(error, pre_llm))["context"]
    assert "INVALID_AGENT_LIMIT" in text and "agents=x" in text and "paused" in text
    assert adapter.render(sts.NO_RESULT, pre_llm) == ""
    assert adapter.response_outcome == "permission_deny_returned"


def test_garbage_is_ignored(store):
    assert answer("hermes", {"hook_event_name": "pre_tool_call"}, store) is None
    assert answer("hermes", {"hook_event_name": "transform_tool_result"}, store) is None
    assert answer("hermes", b"[1, 2]", store) is None


# --- end to end (needs the contract, decision, ledger and state sections) -------

def test_e2e_review_denies_write_change_allows(store):
    answer("hermes", prompt("$stop-that-shit review -- audit"), store)
    got = answer("hermes", write_call(), store)
    assert reason_code(denial("hermes", got)) == "MODE_FORBIDS_MUTATION"
    answer("hermes", prompt("$stop-that-shit change"), store)
    assert answer("hermes", write_call(), store) is None


def test_e2e_child_write_is_judged_by_the_parent_contract(store):
    root_prompt = real("hermes-deny-task", "pre_llm_call", lambda ev: ev["session_id"] == ROOT)
    root_prompt["extra"]["user_message"] = "$stop-that-shit review -- look"
    assert "context" in answer("hermes", root_prompt, store)
    answer("hermes", real("hermes-deny-task", "subagent_start"), store)
    child_prompt = real("hermes-deny-task", "pre_llm_call", lambda ev: ev["session_id"] == CHILD)
    child_prompt["extra"]["user_message"] = "$stop-that-shit change"
    answer("hermes", child_prompt, store)  # a child's text never changes the root contract
    child_write = real("hermes-deny-task", "pre_tool_call", lambda ev: ev["session_id"] == CHILD)
    got = answer("hermes", child_write, store)
    assert reason_code(denial("hermes", got)) == "MODE_FORBIDS_MUTATION"


def test_e2e_invalid_directive_pauses_tools_until_corrected(store):
    got = answer("hermes", prompt("$stop-that-shit change fix the bug"), store)
    assert "INVALID_DIRECTIVE_TOKEN" in got["context"] and "paused" in got["context"]
    read = tool("read_file", {"path": "a"}, session="20261130_151221_31274d")
    assert "INVALID_DIRECTIVE_TOKEN" in denial("hermes", answer("hermes", read, store))
    later = answer("hermes", prompt("what now?"), store)
    assert later["context"].startswith("Stop That Shit: directive rejected (")
    answer("hermes", prompt("$stop-that-shit change"), store)
    assert answer("hermes", read, store) is None


def test_e2e_agents_zero_denies_delegate_task(store):
    answer("hermes", prompt("$stop-that-shit change agents=0", ROOT), store)
    delegate = real("hermes-deny-task", "pre_tool_call", lambda ev: ev["tool_name"] == "delegate_task")
    got = answer("hermes", delegate, store)
    assert reason_code(denial("hermes", got)) == "AGENT_BUDGET_EXHAUSTED"


def test_e2e_control_word_does_not_hide_a_delegation(store):
    answer("hermes", prompt("$stop-that-shit change agents=1", ROOT), store)
    batch = tool("delegate_task", {"action": "list", "tasks": [{"goal": "a"}, {"goal": "b"}]})
    assert reason_code(denial("hermes", answer("hermes", batch, store))) == \
        "AGENT_BUDGET_EXHAUSTED"
    broken = tool("delegate_task", {"tasks": "[{", "goal": "g"}, call_id="call_y")
    assert answer("hermes", broken, store) is None  # one unit: the goal runs
    again = tool("delegate_task", {"tasks": "[{", "goal": "g"}, call_id="call_z")
    assert reason_code(denial("hermes", answer("hermes", again, store))) == \
        "AGENT_BUDGET_EXHAUSTED"


def test_e2e_finished_background_child_frees_its_slot(store):
    answer("hermes", prompt("$stop-that-shit change agents=1", ROOT), store)
    delegate = real("hermes-deny-task", "pre_tool_call", lambda ev: ev["tool_name"] == "delegate_task")
    assert answer("hermes", delegate, store) is None
    answer("hermes", real("hermes-deny-task", "subagent_start"), store)
    answer("hermes", real("hermes-deny-task", "post_tool_call",
                          lambda ev: ev["tool_name"] == "delegate_task"), store)
    second = dict(delegate, extra=dict(delegate["extra"], tool_call_id="call_next"))
    assert reason_code(denial("hermes", answer("hermes", second, store))) == \
        "AGENT_BUDGET_EXHAUSTED"
    answer("hermes", real("hermes-deny-task", "subagent_stop"), store)
    assert answer("hermes", second, store) is None


def test_e2e_real_process_allows_silently(sts_home):
    from hooks import hook_process
    import hooks_shim  # noqa: F401 - registers the adapters in this process only
    proc = hook_process("hermes", write_call(), sts_home)
    assert proc.returncode == 0 and proc.stdout == b""  # no contract: allowed, silent
