"""Gemini CLI adapter, driven with the payloads Gemini CLI 0.61.0 sent.

Gemini honours only {"decision": "deny", "reason": ...} (a Claude-style
permissionDecision is ignored, and the tool runs), so every deny must have
that shape; context goes out as hookSpecificOutput.additionalContext on
SessionStart and BeforeAgent.
"""
import json

import pytest

import sts
from hooks import denial, hook, kit_call, kit_calls


def gemini_run(name):
    calls = kit_calls(name)
    prompt = kit_call(calls, "BeforeAgent")
    tools = [s for e, s in calls if e == "BeforeTool"]
    after = [s for e, s in calls if e == "AfterTool"]
    return prompt, tools, after


def say(prompt, text):
    return dict(prompt, prompt=text)


def test_real_write_edit_and_shell_denied_in_review_with_the_gemini_shape(store):
    for name, tool in (("gemini-write-allow", "write_file"), ("gemini-edit-allow", "replace"),
                       ("gemini-shell-allow", "run_shell_command")):
        prompt, tools, _ = gemini_run(name)
        hook("gemini", say(prompt, "$stop-that-shit review -- audit"), store)
        call = next(t for t in tools if t["tool_name"] == tool)
        answer = hook("gemini", call, store)
        assert set(answer) == {"decision", "reason"}, answer  # nothing Gemini would ignore
        assert "Reason: MODE_FORBIDS_MUTATION" in denial("gemini", answer)


def test_real_read_passes_in_review_and_write_passes_in_change(store):
    prompt, tools, _ = gemini_run("gemini-edit-allow")
    hook("gemini", say(prompt, "$stop-that-shit review -- audit"), store)
    read = next(t for t in tools if t["tool_name"] == "read_file")
    assert hook("gemini", read, store) is None
    hook("gemini", say(prompt, "$stop-that-shit change"), store)
    edit = next(t for t in tools if t["tool_name"] == "replace")
    assert hook("gemini", edit, store) is None


@pytest.mark.parametrize("folder,command,code", [
    ("/", "rm -rf srv", "IRREVERSIBLE_ACTION"),       # /srv, named from the tool's folder
    ("/", "rm -rf ./media/*", "IRREVERSIBLE_ACTION"),
    ("/", "rm -rf etc", "GUARD_SELF_PROTECTION"),     # it holds host settings too
    ("$HOME", "rm -rf projects", "STOP"),             # a folder the guard cannot establish
    (None, "rm -rf build", None),                     # the session's own folder: recoverable
])
def test_what_a_command_deletes_is_placed_in_its_dir_path(store, folder, command, code):
    prompt, tools, _ = gemini_run("gemini-shell-allow")
    hook("gemini", say(prompt, "$stop-that-shit change"), store)
    call = next(t for t in tools if t["tool_name"] == "run_shell_command")
    args = {"command": command} if folder is None else {"command": command, "dir_path": folder}
    reason = denial("gemini", hook("gemini", dict(call, tool_input=args), store))
    assert (reason is None) if code is None else (code in (reason or "")), reason


def test_directive_context_reaches_the_model_on_before_agent(store):
    prompt, _, _ = gemini_run("gemini-shell-allow")
    answer = hook("gemini", say(prompt, "$stop-that-shit review -- look"), store)
    spec = answer["hookSpecificOutput"]
    assert spec["hookEventName"] == "BeforeAgent" and "mode=review;" in spec["additionalContext"]


def test_invalid_directive_blocks_the_turn(store):
    prompt, _, _ = gemini_run("gemini-shell-allow")
    answer = hook("gemini", say(prompt, "$stop-that-shit review agents=lots"), store)
    assert answer["decision"] == "block" and "INVALID_AGENT_LIMIT" in answer["reason"]


def test_subagent_calls_carry_the_parents_session_and_its_contract(store):
    prompt, tools, _ = gemini_run("gemini-agent-deny-json-inner")
    hook("gemini", say(prompt, "$stop-that-shit review -- look"), store)
    launch, inner = tools
    assert launch["tool_name"] == "invoke_agent" and inner["session_id"] == launch["session_id"]
    assert hook("gemini", launch, store) is None  # delegation is allowed in review
    assert "MODE_FORBIDS_MUTATION" in denial("gemini", hook("gemini", inner, store))


def test_agents_budget_counts_invoke_agent_and_after_tool_frees_it(store):
    prompt, tools, after = gemini_run("gemini-agent-allow")
    launch = next(t for t in tools if t["tool_name"] == "invoke_agent")
    done = next(a for a in after if a["tool_name"] == "invoke_agent")
    hook("gemini", say(prompt, "$stop-that-shit change agents=1"), store)
    assert hook("gemini", launch, store) is None
    # A second launch while the first runs (another timestamp: a call of its own).
    second = dict(launch, timestamp="2026-12-01T14:09:55.500Z")
    assert "AGENT_BUDGET_EXHAUSTED" in denial("gemini", hook("gemini", second, store))
    assert hook("gemini", done, store) is None  # invoke_agent returned: the agent ended
    third = dict(launch, timestamp="2026-12-01T14:10:30.000Z")
    assert hook("gemini", third, store) is None


def test_agents_zero_denies_the_launch(store):
    prompt, tools, _ = gemini_run("gemini-agent-allow")
    hook("gemini", say(prompt, "$stop-that-shit change agents=0"), store)
    launch = next(t for t in tools if t["tool_name"] == "invoke_agent")
    assert "AGENT_BUDGET_EXHAUSTED" in denial("gemini", hook("gemini", launch, store))


def test_after_tool_with_two_identical_open_launches_frees_nothing(store):
    prompt, tools, after = gemini_run("gemini-agent-allow")
    launch = next(t for t in tools if t["tool_name"] == "invoke_agent")
    done = next(a for a in after if a["tool_name"] == "invoke_agent")
    hook("gemini", say(prompt, "$stop-that-shit change agents=3"), store)
    hook("gemini", launch, store)
    hook("gemini", dict(launch, timestamp="2026-12-01T14:09:55.100Z"), store)
    hook("gemini", done, store)  # which of the two ended is unknown: nothing is guessed
    state = store.load(sts.session_key(launch["session_id"])).state
    assert sts.ledger_summary(state["delegation"]).reserved == 2


def test_shell_dir_path_is_where_the_command_runs(store, sts_home):
    prompt, tools, _ = gemini_run("gemini-shell-allow")
    hook("gemini", say(prompt, "$stop-that-shit change -- tidy"), store)
    shell = next(t for t in tools if t["tool_name"] == "run_shell_command")
    os_dir = str(sts_home)
    call = dict(shell, tool_input={"command": "rm -f sessions/x.json", "dir_path": os_dir})
    assert "GUARD_SELF_PROTECTION" in denial("gemini", hook("gemini", call, store))
    plain = dict(shell, tool_input={"command": "rm -f build.log"})
    assert hook("gemini", plain, store) is None


def test_unlisted_tools_use_the_name_fallback(store):
    prompt, tools, _ = gemini_run("gemini-shell-allow")
    hook("gemini", say(prompt, "$stop-that-shit review -- look"), store)
    base = tools[0]
    mcp_write = dict(base, tool_name="mcp_github_create_issue", tool_input={"title": "t"})
    mcp_odd = dict(base, tool_name="mcp_x_frobnicate", tool_input={})
    mcp_read = dict(base, tool_name="mcp_fs_read_file", tool_input={"path": "a"})
    assert "MODE_FORBIDS_MUTATION" in denial("gemini", hook("gemini", mcp_write, store))
    assert "MUTABILITY_UNPROVEN" in denial("gemini", hook("gemini", mcp_odd, store))
    assert hook("gemini", mcp_read, store) is None


def test_every_builtin_tool_of_gemini_0_61_is_in_the_table():
    # ALL_BUILTIN_TOOL_NAMES of the installed 0.61.0, plus the legacy alias
    # and the two background-process tools registered beside them.
    builtin = ("glob write_todos write_file google_web_search web_fetch replace "
               "run_shell_command grep_search read_many_files read_file list_directory "
               "activate_skill ask_user tracker_create_task tracker_update_task tracker_get_task "
               "tracker_list_tasks tracker_add_dependency tracker_visualize get_internal_docs "
               "enter_plan_mode exit_plan_mode update_topic complete_task invoke_agent "
               "read_mcp_resource list_mcp_resources search_file_content "
               "list_background_processes read_background_output").split()
    missing = [t for t in builtin if t not in sts.GeminiAdapter.TOOLS]
    assert missing == []


def test_internal_error_while_armed_fails_closed_in_gemini_shape(store, monkeypatch):
    prompt, tools, _ = gemini_run("gemini-shell-allow")
    hook("gemini", say(prompt, "$stop-that-shit review -- look"), store)

    def broken(*a, **k):
        raise RuntimeError("boom")
    monkeypatch.setattr(sts, "handle_event", broken)
    answer = hook("gemini", tools[0], store)
    assert answer["decision"] == "deny" and "internal error" in answer["reason"]


def test_installed_settings_file_is_protected(store, sts_home, tmp_path):
    settings = tmp_path / "home" / ".gemini" / "settings.json"
    (sts_home).mkdir(exist_ok=True)
    (sts_home / "installed.json").write_text(json.dumps({"version": 1, "paths": [str(settings)],
                                                        "installs": {}}))
    prompt, tools, _ = gemini_run("gemini-write-allow")
    hook("gemini", say(prompt, "$stop-that-shit change -- go"), store)
    write = next(t for t in tools if t["tool_name"] == "write_file")
    call = dict(write, tool_input={"file_path": str(settings), "content": "{}"})
    assert "GUARD_SELF_PROTECTION" in denial("gemini", hook("gemini", call, store))


def test_session_start_context_in_front_of_the_prompt_does_not_hide_the_directive(store):
    # Gemini 0.61 -p puts the SessionStart context in front of the first prompt.
    prompt, tools, _ = gemini_run("gemini-write-allow")
    hook("gemini", dict(prompt, hook_event_name="SessionStart", source="startup"), store)
    text = ("<hook_context>Stop That Shit is only watching: no task mode has been confirmed."
            "</hook_context>\n\n$stop-that-shit review -- look")
    answer = hook("gemini", say(prompt, text), store)
    assert "mode=review;" in answer["hookSpecificOutput"]["additionalContext"]
    write = next(t for t in tools if t["tool_name"] == "write_file")
    assert "MODE_FORBIDS_MUTATION" in denial("gemini", hook("gemini", write, store))
