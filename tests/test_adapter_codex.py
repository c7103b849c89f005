"""Codex CLI adapter, driven with the payloads Codex 0.171.0 really sent."""
import json
import os

import pytest

import sts
from hooks import context_text, deny_reason, hook, hook_process, kit_events


def codex_run(kind):
    """SessionStart, UserPromptSubmit and the PreToolUse of one recorded Codex run."""
    events = kit_events("codex-%s-deny-json" % kind)
    start = next(e for e in events if e["hook_event_name"] == "SessionStart")
    prompt = next(e for e in events if e["hook_event_name"] == "UserPromptSubmit")
    tool = next(e for e in events if e["hook_event_name"] == "PreToolUse")
    return start, prompt, tool


def with_prompt(event, text):
    return dict(event, prompt=text)


def test_real_shell_write_is_denied_under_review_with_a_nonempty_reason(store):
    start, prompt, tool = codex_run("shell")
    assert context_text(hook("codex", start, store))  # the watch-only notice
    answer = hook("codex", with_prompt(prompt, "$stop-that-shit review -- look only"), store)
    assert "mode=review" in context_text(answer)
    reason = deny_reason(hook("codex", tool, store))
    assert reason and reason.strip()           # Codex ignores an empty reason
    assert "MODE_FORBIDS_MUTATION" in reason or "MUTABILITY_UNPROVEN" in reason
    assert reason.startswith("STOP / INTENT")


def test_real_patch_is_denied_under_review_and_allowed_under_change(store):
    _, prompt, tool = codex_run("patch")
    hook("codex", with_prompt(prompt, "$stop-that-shit review"), store)
    reason = deny_reason(hook("codex", tool, store))
    assert "Code: I/MODE_FORBIDS_MUTATION" in reason
    assert "State: ARMED / review" in reason
    hook("codex", with_prompt(prompt, "$stop-that-shit change"), store)
    assert hook("codex", tool, store) is None   # allow prints nothing


def test_an_ordinary_prompt_leaves_the_session_observing(store):
    _, prompt, tool = codex_run("patch")
    answer = hook("codex", prompt, store)
    assert "$stop-that-shit review" in context_text(answer)
    assert hook("codex", tool, store) is None


def test_patch_paths_feed_the_files_boundary(store):
    _, prompt, tool = codex_run("patch")
    hook("codex", with_prompt(prompt, "$stop-that-shit change files=src/**"), store)
    reason = deny_reason(hook("codex", tool, store))
    assert "PATH_OUTSIDE_CONTRACT" in reason and "probe-file" in reason
    hook("codex", with_prompt(prompt, "$stop-that-shit change files=probe-file"), store)
    assert hook("codex", tool, store) is None


def test_exec_command_with_cmd_is_analysed(store):
    _, prompt, tool = codex_run("shell")
    hook("codex", with_prompt(prompt, "$stop-that-shit review"), store)
    read = dict(tool, tool_name="exec_command", tool_input={"cmd": "ls -la"})
    assert hook("codex", read, store) is None
    write = dict(tool, tool_name="exec_command", tool_input={"cmd": "rm -rf build"})
    assert deny_reason(hook("codex", write, store))


@pytest.mark.parametrize("tool_name,key", [("exec_command", "cmd"), ("shell_command", "command")])
def test_a_write_in_the_folder_workdir_names_is_judged_in_that_folder(
        store, sts_home, tmp_path, tool_name, key):
    """exec_command and shell_command run in their `workdir`: a relative write
    there lands in that folder, here the guard's own data folder, though the
    event's cwd is an ordinary one."""
    _, prompt, tool = codex_run("shell")
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    tool = dict(tool, cwd=str(work))
    hook("codex", with_prompt(prompt, "$stop-that-shit change"), store)
    sts_home.mkdir(parents=True, exist_ok=True)
    for folder in (str(sts_home), os.path.relpath(str(sts_home), str(work))):
        call = dict(tool, tool_name=tool_name,
                    tool_input={key: "echo x > installed.json", "workdir": folder})
        assert "GUARD_SELF_PROTECTION" in deny_reason(hook("codex", call, store)), folder
    ordinary = dict(tool, tool_name=tool_name,
                    tool_input={key: "echo x > installed.json", "workdir": "sub"})
    assert hook("codex", ordinary, store) is None
    action = sts.ADAPTERS["codex"].translate(ordinary, store).event["action"]
    assert action["shellWriteTargets"] == [str(work / "sub" / "installed.json")]


def test_tool_table_buckets():
    codex = sts.CodexAdapter()
    assert codex.classify("get_goal", {})["mutability"] == "read"
    assert codex.classify("update_goal", {})["mutability"] == "control"
    assert codex.classify("write_stdin", {})["mutability"] == "unknown"
    assert codex.classify("spawn_agent", {})["mutability"] == "delegate"
    assert codex.classify("collaborationspawn_agent", {})["mutability"] == "delegate"
    resume = codex.classify("multi_agent_v1resume_agent", {})
    assert resume["mutability"] == "control" and resume["delegationLifecycleUnproven"]
    assert "delegationLifecycleUnproven" not in codex.classify("send_message", {})
    assert codex.classify("mcp__github__create_issue", {})["mutability"] == "write"
    assert codex.classify("mcp__fs__read_file", {})["mutability"] == "read"
    assert codex.classify("mcp__x__frobnicate", {})["mutability"] == "unknown"
    assert codex.classify("view_image", {})["mutability"] == "read"


def test_spawn_agent_budget_and_release_by_wait_agent(store):
    _, prompt, tool = codex_run("shell")
    hook("codex", with_prompt(prompt, "$stop-that-shit change agents=1"), store)
    spawn = dict(tool, tool_name="spawn_agent", tool_use_id="call_a", tool_input={"message": "x"})
    assert hook("codex", spawn, store) is None
    second = dict(spawn, tool_use_id="call_b")
    assert "AGENT_BUDGET_EXHAUSTED" in deny_reason(hook("codex", second, store))
    agent = "0198a3b2-1c4d-7e5f-8a9b-0c1d2e3f4a5b"
    after = dict(spawn, hook_event_name="PostToolUse",
                 tool_response=json.dumps({"agent_id": agent}))
    assert hook("codex", after, store) is None
    wait = dict(tool, hook_event_name="PostToolUse", tool_name="wait_agent", tool_use_id="call_w",
                tool_input={"targets": [agent]},
                tool_response={"timed_out": False, "status": {agent: {"completed": "done"}}})
    assert hook("codex", wait, store) is None
    assert hook("codex", second, store) is None   # the slot was released


@pytest.mark.parametrize("name", ["spawn_agents_on_csv", "Spawn_Agent", "multi_agent_v2spawn_agent"])
def test_unlisted_spawn_tools_are_unbounded_delegations(store, name):
    # A tool that starts agents must never pass as `unknown`, which change mode allows
    # without a reservation; its fan-out cannot be counted, so a finite budget denies it.
    action = sts.CodexAdapter().classify(name, {"csv_path": "jobs.csv"})
    assert action["mutability"] == "delegate" and action["unboundedDelegation"]
    _, prompt, tool = codex_run("shell")
    hook("codex", with_prompt(prompt, "$stop-that-shit change agents=2"), store)
    batch = dict(tool, tool_name=name, tool_use_id="call_csv", tool_input={"csv_path": "jobs.csv"})
    assert "UNBOUNDED_DELEGATION" in deny_reason(hook("codex", batch, store))


def test_an_mcp_spawn_tool_keeps_the_name_fallback():
    assert sts.CodexAdapter().classify("mcp__x__spawn_agent", {})["mutability"] == "unknown"


def test_wait_agent_that_timed_out_releases_nothing(store):
    codex = sts.CodexAdapter()
    agent = "0198a3b2-1c4d-7e5f-8a9b-0c1d2e3f4a5b"
    base = {"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "wait_agent",
            "tool_use_id": "w", "tool_input": {"targets": [agent]}}
    assert codex.translate(dict(base, tool_response={"timed_out": True, "status": {}}), store) is None
    errored = dict(base, tool_response={"timed_out": False, "status": {agent: {"errored": "x"}}})
    assert codex.translate(errored, store) is None
    path_alias = dict(base, tool_response={"timed_out": False, "status": {"/root/a": "shutdown"}})
    assert codex.translate(path_alias, store) is None


def test_delegate_without_id_cannot_be_counted_so_it_is_denied_while_armed(store):
    _, prompt, tool = codex_run("shell")
    spawn = {k: v for k, v in tool.items() if k != "tool_use_id"}
    spawn.update(tool_name="spawn_agent", tool_input={})
    assert hook("codex", spawn, store) is None          # unarmed: the host keeps working
    hook("codex", with_prompt(prompt, "$stop-that-shit change agents=0"), store)
    assert "could not be read as a tool call" in deny_reason(hook("codex", spawn, store))


def test_invalid_directive_blocks_the_prompt_and_keeps_the_contract(store):
    _, prompt, tool = codex_run("patch")
    hook("codex", with_prompt(prompt, "$stop-that-shit review"), store)
    answer = hook("codex", with_prompt(prompt, "$stop-that-shit change fix the bug"), store)
    assert answer["decision"] == "block"
    assert "INVALID_DIRECTIVE_TOKEN" in answer["reason"]
    assert deny_reason(hook("codex", tool, store))   # still review


def test_post_tool_use_and_session_end_render_nothing(store):
    start, prompt, tool = codex_run("shell")
    assert hook("codex", dict(tool, hook_event_name="PostToolUse", tool_response="ok"), store) is None
    assert hook("codex", dict(start, hook_event_name="SessionEnd", reason="other"), store) is None
    assert hook("codex", dict(start, hook_event_name="Stop"), store) is None


def test_real_process_round_trip(sts_home):
    _, prompt, tool = codex_run("patch")
    proc = hook_process("codex", with_prompt(prompt, "$stop-that-shit review"), sts_home)
    assert proc.returncode == 0 and b"mode=review" in proc.stdout
    proc = hook_process("codex", tool, sts_home)
    assert proc.returncode == 0
    answer = json.loads(proc.stdout)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert proc.stderr == b""


def test_an_indented_patch_header_still_names_its_file(store):
    """Codex trims hunk lines, so ` *** Add File: ../x` writes ../x: it must count."""
    _, prompt, tool = codex_run("patch")
    hook("codex", with_prompt(prompt, "$stop-that-shit change files=src/**"), store)
    patch = ("*** Begin Patch\n*** Add File: src/a.txt\n+x\n"
             " *** Add File: ../outside.txt\n+z\n*** End Patch\n")
    reason = deny_reason(hook("codex", dict(tool, tool_input={"command": patch}), store))
    assert "PATH_OUTSIDE_CONTRACT" in reason and "../outside.txt" in reason


@pytest.mark.parametrize("hidden", [
    # Rust's trim() drops an NBSP before the header: Codex writes ../outside.txt.
    "\u00a0*** Add File: ../outside.txt\n+z\n",
    # Rust's lines() splits at "\n" only: the path is src/a<U+2028>/../../outside.txt.
    "*** Add File: src/a\u2028/../../outside.txt\n+z\n",
])
def test_a_patch_header_only_codex_reads_still_names_its_file(store, hidden):
    """Both patches were applied by the real Codex 0.171 apply_patch; each
    writes outside the boundary while a splitlines()/lstrip() reader saw only src/."""
    _, prompt, tool = codex_run("patch")
    hook("codex", with_prompt(prompt, "$stop-that-shit change files=src/**"), store)
    patch = "*** Begin Patch\n*** Add File: src/ok.txt\n+x\n" + hidden + "*** End Patch\n"
    reason = deny_reason(hook("codex", dict(tool, tool_input={"command": patch}), store))
    assert reason and "PATH_OUTSIDE_CONTRACT" in reason
