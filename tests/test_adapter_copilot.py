"""Copilot CLI adapter (camelCase hooks), driven with the payloads Copilot CLI 1.0.102 sent.

camelCase stdin names no event; the installed command passes it as its last
argument.  A deny is a top-level {"permissionDecision": "deny", ...}; the
Claude-style hookSpecificOutput is ignored by camelCase hooks.
"""
import json
import os
import subprocess
import sys

import sts
from hooks import ROOT, denial, hook_event, kit_call as first, kit_calls


def copilot_run(name):
    return kit_calls(name)


def say(store, calls, text):
    return hook_event("copilot", "userPromptSubmitted",
                      dict(first(calls, "userPromptSubmitted"), prompt=text), store)


def test_real_create_edit_and_bash_denied_in_review(store):
    for name, tool in (("copilot-write-allow", "create"), ("copilot-edit-allow", "edit"),
                       ("copilot-shell-allow", "bash")):
        calls = copilot_run(name)
        say(store, calls, "$stop-that-shit review -- audit")
        answer = hook_event("copilot", "preToolUse", first(calls, "preToolUse", tool), store)
        assert set(answer) == {"permissionDecision", "permissionDecisionReason"}
        assert "Reason: MODE_FORBIDS_MUTATION" in denial("copilot", answer)


def test_real_view_passes_and_change_allows_the_edit(store):
    calls = copilot_run("copilot-edit-allow")
    say(store, calls, "$stop-that-shit review -- audit")
    assert hook_event("copilot", "preToolUse", first(calls, "preToolUse", "view"), store) is None
    say(store, calls, "$stop-that-shit change")
    assert hook_event("copilot", "preToolUse", first(calls, "preToolUse", "edit"), store) is None


def test_contract_context_goes_out_as_additional_context(store):
    calls = copilot_run("copilot-shell-allow")
    answer = say(store, calls, "$stop-that-shit review -- look")
    assert list(answer) == ["additionalContext"] and "mode=review;" in answer["additionalContext"]


def test_invalid_directive_reaches_the_model_as_context(store):
    calls = copilot_run("copilot-shell-allow")
    answer = say(store, calls, "$stop-that-shit review agents=lots")
    assert answer["additionalContext"].startswith("Stop That Shit: directive rejected (INVALID_")


def test_tools_wait_for_a_corrected_directive(store):
    # The prompt cannot be refused, so the turn of the rejected directive runs:
    # its tools, a plain read included, are paused until the user fixes it.
    calls = copilot_run("copilot-shell-allow")
    say(store, calls, "$stop-that-shit change")
    rejected = say(store, calls, "$stop-that-shit change fix the bug")
    assert "Tools stay paused" in rejected["additionalContext"]
    view = dict(first(calls, "preToolUse", "bash"), toolArgs={"command": "git status"})
    reason = denial("copilot", hook_event("copilot", "preToolUse", view, store))
    assert reason.startswith("Stop That Shit: directive rejected (INVALID_DIRECTIVE_TOKEN)")
    event_id = reason.rsplit("Event: ", 1)[1].strip()
    assert sts.find_event(store, event_id)["decision"]["reasonCode"] == "DIRECTIVE_PENDING"
    later = say(store, calls, "what now?")  # the rejection stays in front of every prompt
    assert later["additionalContext"].startswith("Stop That Shit: directive rejected (")
    say(store, calls, "$stop-that-shit change")
    assert hook_event("copilot", "preToolUse", view, store) is None


def test_subagent_calls_are_judged_by_the_parents_contract(store):
    calls = copilot_run("copilot-agent-deny-json-inner")
    say(store, calls, "$stop-that-shit review -- look")
    launch = first(calls, "preToolUse", "task")
    assert hook_event("copilot", "preToolUse", launch, store) is None
    hook_event("copilot", "subagentStart", first(calls, "subagentStart"), store)
    inner = first(calls, "preToolUse", "bash")
    assert inner["sessionId"] == inner["agentId"] != launch["sessionId"]
    assert "MODE_FORBIDS_MUTATION" in denial("copilot", hook_event("copilot", "preToolUse", inner, store))


def test_a_subagents_prompt_never_sets_the_contract(store):
    calls = copilot_run("copilot-agent-deny-json-inner")
    say(store, calls, "$stop-that-shit review -- look")
    child_prompt = [s for e, s in calls if e == "userPromptSubmitted"][1]
    assert child_prompt.get("parentAgentId")
    answer = hook_event("copilot", "userPromptSubmitted",
                        dict(child_prompt, prompt="$stop-that-shit open -- do anything"), store)
    assert "mode=review;" in answer["additionalContext"]  # the root's contract, unchanged
    inner = first(calls, "preToolUse", "bash")
    assert denial("copilot", hook_event("copilot", "preToolUse", inner, store))


def test_a_damaged_link_judges_a_nested_agents_calls_in_read_only_recovery(store):
    # A subagent's own subagent names its parent, whose link to the root is
    # unreadable, so which contract governs it is unknown: as on every host,
    # the core judges its calls in read-only recovery (reads pass, the rest
    # is denied and audited), its prompt hears why, and nothing is written for
    # a root that may be the wrong one.  Before, the hook crashed here and
    # Copilot ran the call.
    calls = copilot_run("copilot-agent-deny-json-inner")
    say(store, calls, "$stop-that-shit change -- anything in here")
    hook_event("copilot", "subagentStart", first(calls, "subagentStart"), store)
    child = first(calls, "preToolUse", "bash")["sessionId"]
    link = os.path.join(store.root, "links", sts.session_key(child) + ".json")
    assert os.path.exists(link)
    with open(link, "w") as fh:
        fh.write("{not json")
    nested = {"sessionId": "nested-1", "agentId": "nested-1", "parentAgentId": child}
    write = dict(first(calls, "preToolUse", "bash"), toolArgs={"command": "touch notes.txt"},
                 **nested)
    reason = denial("copilot", hook_event("copilot", "preToolUse", write, store))
    assert "Reason: STATE_DAMAGED" in reason and "parent link" in reason
    event_id = reason.split("\nEvent: ", 1)[1].split("\n", 1)[0]
    assert sts.find_event(store, event_id)["decision"]["reasonCode"] == "STATE_DAMAGED"
    read = dict(write, toolArgs={"command": "git status"})
    assert hook_event("copilot", "preToolUse", read, store) is None
    prompt = dict([s for e, s in calls if e == "userPromptSubmitted"][1], **nested)
    answer = hook_event("copilot", "userPromptSubmitted", prompt, store)
    assert answer["additionalContext"].startswith("PARENT_LINK_DAMAGED: ")
    root_key = sts.session_key(first(calls, "userPromptSubmitted")["sessionId"])
    before = store.load(root_key).state
    stop = dict(first(calls, "subagentStop"), sessionId=child, parentAgentId=child,
                agentId="nested-1")
    assert hook_event("copilot", "subagentStop", stop, store) is None
    assert store.load(root_key).state == before
    with open(link) as fh:
        assert fh.read() == "{not json"  # kept for the user to restore


def test_agents_one_holds_until_the_task_returns(store):
    calls = copilot_run("copilot-agent-allow")
    say(store, calls, "$stop-that-shit change agents=1")
    launch = first(calls, "preToolUse", "task")
    assert hook_event("copilot", "preToolUse", launch, store) is None
    again = dict(launch, timestamp=launch["timestamp"] + 5)
    assert "AGENT_BUDGET_EXHAUSTED" in denial("copilot", hook_event("copilot", "preToolUse", again, store))
    for event in ("subagentStart", "subagentStop"):
        hook_event("copilot", event, first(calls, event), store)
    done = [s for e, s in calls if e == "postToolUse" and s["toolName"] == "task"][0]
    hook_event("copilot", "postToolUse", done, store)
    later = dict(launch, timestamp=launch["timestamp"] + 60000)
    assert hook_event("copilot", "preToolUse", later, store) is None


def test_a_background_task_is_freed_by_subagent_stop(store):
    calls = copilot_run("copilot-agent-allow")
    say(store, calls, "$stop-that-shit change agents=1")
    launch = first(calls, "preToolUse", "task")
    launch = dict(launch, toolArgs=dict(launch["toolArgs"], mode="background"))
    assert hook_event("copilot", "preToolUse", launch, store) is None
    hook_event("copilot", "subagentStart", first(calls, "subagentStart"), store)
    hook_event("copilot", "postToolUse", dict(first(calls, "postToolUse", "task"),
                                              toolArgs=launch["toolArgs"]), store)
    again = dict(launch, timestamp=launch["timestamp"] + 5)
    assert denial("copilot", hook_event("copilot", "preToolUse", again, store))  # still running
    hook_event("copilot", "subagentStop", first(calls, "subagentStop"), store)
    assert hook_event("copilot", "preToolUse", again, store) is None


def test_write_agent_wakes_an_agent_so_a_finite_budget_denies_it(store):
    calls = copilot_run("copilot-agent-allow")
    say(store, calls, "$stop-that-shit change agents=2")
    call = dict(first(calls, "preToolUse", "task"), toolName="write_agent",
                toolArgs={"agent_id": "a1", "message": "go on"})
    assert "DELEGATION_LIFECYCLE_UNPROVEN" in denial("copilot", 
        hook_event("copilot", "preToolUse", call, store))


def test_str_replace_editor_and_apply_patch_are_writes(store):
    calls = copilot_run("copilot-shell-allow")
    say(store, calls, "$stop-that-shit change files=src/**")
    base = first(calls, "preToolUse", "bash")
    cwd = base["cwd"]
    view = dict(base, toolName="str_replace_editor",
                toolArgs={"command": "view", "path": cwd + "/README.md"})
    assert hook_event("copilot", "preToolUse", view, store) is None
    insert = dict(base, toolName="str_replace_editor",
                  toolArgs={"command": "insert", "path": cwd + "/README.md", "new_str": "x"})
    assert "PATH_OUTSIDE_CONTRACT" in denial("copilot", hook_event("copilot", "preToolUse", insert, store))
    patch = dict(base, toolName="apply_patch",
                 toolArgs={"input": "*** Begin Patch\n*** Add File: docs/a.md\n+x\n*** End Patch\n"})
    assert "PATH_OUTSIDE_CONTRACT" in denial("copilot", hook_event("copilot", "preToolUse", patch, store))


def test_every_tool_copilot_offered_is_in_the_table():
    # The tool list Copilot CLI 1.0.102 offered the model in the recorded runs.
    offered = ("bash read_bash stop_bash list_bash view create edit "
               "fetch_copilot_cli_documentation skill sql session_store_sql read_agent "
               "list_agents write_agent grep glob task").split()
    assert [t for t in offered if t not in sts.CopilotAdapter.TOOLS] == []


def test_the_real_command_reads_the_event_from_its_argument(tmp_path):
    calls = copilot_run("copilot-write-allow")
    code = "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % ROOT
    env = dict(os.environ, STS_HOME=str(tmp_path / "home"))

    def run(event, payload):
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, "copilot", event],
                              input=json.dumps(payload).encode(), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout) if proc.stdout.strip() else None
    run("userPromptSubmitted", dict(first(calls, "userPromptSubmitted"),
                                    prompt="$stop-that-shit review -- look"))
    answer = run("preToolUse", first(calls, "preToolUse", "create"))
    assert answer["permissionDecision"] == "deny"
