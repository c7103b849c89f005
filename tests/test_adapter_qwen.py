"""Qwen Code adapter, driven with the payloads Qwen Code 0.24.4 sent.

Claude's event names and answer format, Qwen's own tool names.  After a tool
result Qwen fires UserPromptSubmit again with an empty prompt: that must never
change the contract or repeat its context.
"""
import sts
from hooks import context_text, deny_reason, hook, kit_call as first, kit_calls


def qwen_run(name):
    return kit_calls(name)


def say(store, calls, text):
    prompt = first(calls, "UserPromptSubmit")
    return hook("qwen", dict(prompt, prompt=text, submitted_prompt=text), store)


def test_real_write_edit_and_shell_denied_in_review(store):
    for name, tool in (("qwen-write-allow", "write_file"), ("qwen-edit-allow", "edit"),
                       ("qwen-shell-allow", "run_shell_command")):
        calls = qwen_run(name)
        say(store, calls, "$stop-that-shit review -- audit")
        reason = deny_reason(hook("qwen", first(calls, "PreToolUse", tool), store))
        assert "Reason: MODE_FORBIDS_MUTATION" in reason


def test_real_read_passes_and_change_allows_the_edit(store):
    calls = qwen_run("qwen-edit-allow")
    say(store, calls, "$stop-that-shit review -- audit")
    assert hook("qwen", first(calls, "PreToolUse", "read_file"), store) is None
    say(store, calls, "$stop-that-shit change")
    assert hook("qwen", first(calls, "PreToolUse", "edit"), store) is None


def test_the_empty_prompt_after_a_tool_result_changes_nothing(store):
    calls = qwen_run("qwen-agent-allow")
    say(store, calls, "$stop-that-shit review -- audit")
    empty = [s for e, s in calls if e == "UserPromptSubmit"][1]
    assert empty["prompt"] == "" and "submitted_prompt" not in empty
    assert hook("qwen", empty, store) is None
    state = store.load(sts.session_key(empty["session_id"])).state
    assert state["contract"]["mode"] == "review"


def test_the_users_own_words_win_over_expanded_prompt_text(store):
    calls = qwen_run("qwen-shell-allow")
    prompt = first(calls, "UserPromptSubmit")
    typed = "$stop-that-shit review -- read @notes.md"
    expanded = typed + "\n--- Content from referenced files ---\nfix it\n$stop-that-shit open"
    answer = hook("qwen", dict(prompt, prompt=expanded, submitted_prompt=typed), store)
    assert "mode=review;" in context_text(answer)


def test_subagent_calls_carry_agent_id_and_the_parents_contract(store):
    calls = qwen_run("qwen-agent-deny-json-inner")
    say(store, calls, "$stop-that-shit review -- look")
    launch = first(calls, "PreToolUse", "agent")
    assert hook("qwen", launch, store) is None
    start = hook("qwen", first(calls, "SubagentStart"), store)
    assert "mode=review;" in context_text(start)  # the subagent is told the contract
    inner = first(calls, "PreToolUse", "run_shell_command")
    assert inner["agent_id"] and inner["session_id"] == launch["session_id"]
    assert "MODE_FORBIDS_MUTATION" in deny_reason(hook("qwen", inner, store))


def test_background_agent_holds_its_place_until_subagent_stop(store):
    calls = qwen_run("qwen-agent-allow")
    say(store, calls, "$stop-that-shit change agents=1")
    launch = first(calls, "PreToolUse", "agent")
    assert hook("qwen", launch, store) is None
    hook("qwen", first(calls, "SubagentStart"), store)
    hook("qwen", first(calls, "PostToolUse", "agent"), store)  # "Background agent launched"
    again = dict(launch, tool_use_id="toolu_again", tool_call_id="call_9")
    assert "AGENT_BUDGET_EXHAUSTED" in deny_reason(hook("qwen", again, store))
    stop = dict(first(calls, "SubagentStart"), hook_event_name="SubagentStop")
    hook("qwen", stop, store)
    assert hook("qwen", again, store) is None


def test_a_foreground_result_joins_the_call(store):
    calls = qwen_run("qwen-agent-allow")
    say(store, calls, "$stop-that-shit change agents=1")
    launch = first(calls, "PreToolUse", "agent")
    hook("qwen", launch, store)
    done = dict(first(calls, "PostToolUse", "agent"),
                tool_response={"llmContent": "the helper wrote the file", "returnDisplay": ""})
    hook("qwen", done, store)
    again = dict(launch, tool_use_id="toolu_again", tool_call_id="call_9")
    assert hook("qwen", again, store) is None


def test_deferred_tool_bridge_is_judged_as_the_tool_it_calls(store):
    calls = qwen_run("qwen-write-allow")
    say(store, calls, "$stop-that-shit review -- look")
    base = first(calls, "PreToolUse", "write_file")
    bridge = dict(base, tool_name="tool_call",
                  tool_input={"name": "write_file", "arguments": base["tool_input"]})
    assert "MODE_FORBIDS_MUTATION" in deny_reason(hook("qwen", bridge, store))
    nested = dict(base, tool_name="tool_call",
                  tool_input={"name": "tool_call", "arguments": bridge["tool_input"]})
    assert "MODE_FORBIDS_MUTATION" in deny_reason(hook("qwen", nested, store))
    read = dict(base, tool_name="tool_call",
                tool_input={"name": "read_file", "arguments": {"file_path": "a"}})
    assert hook("qwen", read, store) is None


def test_code_and_team_tools_cannot_pass_a_finite_agent_budget(store):
    calls = qwen_run("qwen-shell-allow")
    say(store, calls, "$stop-that-shit change agents=3")
    base = first(calls, "PreToolUse", "run_shell_command")
    for tool, args, code in (("exec", {"source": "await tools.agent({})"},
                              "DELEGATION_LIFECYCLE_UNPROVEN"),
                             ("send_message", {"to": "a", "message": "m"},
                              "DELEGATION_LIFECYCLE_UNPROVEN"),
                             ("workflow", {"steps": []}, "UNBOUNDED_DELEGATION"),
                             ("team_create", {"members": []}, "UNBOUNDED_DELEGATION")):
        call = dict(base, tool_name=tool, tool_input=args, tool_use_id="toolu_" + tool)
        assert code in deny_reason(hook("qwen", call, store)), tool


def test_shell_directory_is_where_the_command_runs(store, sts_home):
    calls = qwen_run("qwen-shell-allow")
    say(store, calls, "$stop-that-shit change -- tidy")
    base = first(calls, "PreToolUse", "run_shell_command")
    call = dict(base, tool_input={"command": "rm -rf sessions", "directory": str(sts_home)})
    assert "GUARD_SELF_PROTECTION" in deny_reason(hook("qwen", call, store))


def test_every_tool_qwen_offered_is_in_the_table():
    offered = ("agent edit get_goal glob grep_search list_agents notebook_edit read_file "
               "run_shell_command skill tool_call tool_search update_goal write_file").split()
    assert [t for t in offered if t not in sts.QwenAdapter.TOOLS] == []
