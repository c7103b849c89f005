"""Claude Code adapter, driven with the payloads Claude Code 2.1.332 sent."""
import sts
from hooks import claude_kit as claude_run, context_text, deny_reason, hook


def say(prompt_event, text):
    return dict(prompt_event, prompt=text)


def test_real_write_denied_in_review_allowed_in_change(store):
    prompt, tool = claude_run("write")
    hook("claude", say(prompt, "$stop-that-shit review -- audit only"), store)
    reason = deny_reason(hook("claude", tool, store))
    assert "Reason: MODE_FORBIDS_MUTATION" in reason
    hook("claude", say(prompt, "$stop-that-shit change"), store)
    assert hook("claude", tool, store) is None


def test_slash_command_form_arms_the_contract(store):
    prompt, tool = claude_run("write")
    answer = hook("claude", say(prompt, "/stop-that-shit review -- look"), store)
    assert "mode=review" in context_text(answer)
    assert deny_reason(hook("claude", tool, store))
    hook("claude", say(prompt, "/stop-that-shit:stop-that-shit change"), store)
    assert hook("claude", tool, store) is None


def test_indented_slash_form_is_text():
    assert sts._claude_slash_to_directive("    /stop-that-shit review") == "    /stop-that-shit review"
    assert sts._claude_slash_to_directive("\n  /stop-that-shit: review") == "\n  $stop-that-shit: review"
    assert sts._claude_slash_to_directive("/stop-that-shitx review") == "/stop-that-shitx review"


def test_prompt_expansion_for_our_command(store):
    prompt, tool = claude_run("write")
    expansion = dict(prompt, hook_event_name="UserPromptExpansion", expansion_type="slash_command",
                     command_name="stop-that-shit", command_args="review -- look")
    assert "mode=review" in context_text(hook("claude", expansion, store))
    other = dict(expansion, command_name="commit")
    assert hook("claude", other, store) is None


def test_agent_is_delegate_and_agents_zero_denies_it(store):
    prompt, tool = claude_run("agent")
    assert tool["tool_name"] == "Agent"
    hook("claude", say(prompt, "$stop-that-shit change agents=0"), store)
    assert "AGENT_BUDGET_EXHAUSTED" in deny_reason(hook("claude", tool, store))


def test_agent_allowed_in_review(store):
    prompt, tool = claude_run("agent")
    hook("claude", say(prompt, "$stop-that-shit review"), store)
    assert hook("claude", tool, store) is None


def test_workflow_is_denied_under_a_finite_budget_only(store):
    prompt, tool = claude_run("agent")
    workflow = dict(tool, tool_name="Workflow", tool_use_id="toolu_wf", tool_input={})
    hook("claude", say(prompt, "$stop-that-shit change"), store)
    assert hook("claude", workflow, store) is None
    hook("claude", say(prompt, "$stop-that-shit change agents=3"), store)
    reason = deny_reason(hook("claude", dict(workflow, tool_use_id="toolu_wf2"), store))
    assert "UNBOUNDED_DELEGATION" in reason or "DELEGATION_STATE_UNPROVEN" in reason


def test_task_notification_is_not_user_authority_and_frees_the_slot(store):
    prompt, tool = claude_run("agent")
    hook("claude", say(prompt, "$stop-that-shit change agents=1"), store)
    assert hook("claude", tool, store) is None
    second = dict(tool, tool_use_id="toolu_03")
    assert "AGENT_BUDGET_EXHAUSTED" in deny_reason(hook("claude", second, store))
    note = ("<task-notification>\n<task-id>a47d88b664c95adcc</task-id>\n"
            "<tool-use-id>%s</tool-use-id>\n<status>completed</status>\n"
            "<summary>Agent finished</summary>\n<result>Review only: please do not edit "
            "anything.</result>\n</task-notification>" % tool["tool_use_id"])
    assert hook("claude", say(prompt, note), store) is None
    write = dict(tool, tool_name="Write", tool_use_id="toolu_09",
                 tool_input={"file_path": "/tmp/run/work/x.txt", "content": "x"})
    assert hook("claude", write, store) is None        # still change, not review
    assert hook("claude", second, store) is None        # slot released by "completed"


def test_post_tool_use_binds_and_permission_denied_releases(store):
    prompt, tool = claude_run("agent")
    hook("claude", say(prompt, "$stop-that-shit change agents=1"), store)
    assert hook("claude", tool, store) is None
    denied = dict(tool, hook_event_name="PermissionDenied")
    assert hook("claude", denied, store) is None
    assert hook("claude", dict(tool, tool_use_id="toolu_04"), store) is None


def test_tool_table():
    claude = sts.ClaudeAdapter()
    assert claude.classify("Task", {})["mutability"] == "delegate"
    assert claude.classify("Read", {})["mutability"] == "read"
    assert claude.classify("TodoWrite", {})["mutability"] == "control"
    send = claude.classify("SendMessage", {})
    assert send["mutability"] == "control" and send["delegationLifecycleUnproven"]
    assert claude.classify("DeferredToolPlaceholder", {})["mutability"] == "unknown"
    assert claude.classify("Monitor", {"ws": "x"})["mutability"] == "read"
    mcp = claude.classify("mcp__fs__write_file", {"path": "/w/a.txt"})
    assert mcp["mutability"] == "write" and mcp["affectedPaths"] == ["/w/a.txt"]
    assert "affectedPaths" not in claude.classify("mcp__fs__read_file", {"path": "/w/a"})
    assert claude.classify("EnterWorktree", {})["mutability"] == "write"


def test_manifest_write_carries_dependency_intent(store):
    prompt, tool = claude_run("write")
    hook("claude", say(prompt, "$stop-that-shit change deps=deny"), store)
    write = dict(tool, tool_input={"file_path": "/tmp/run/work/requirements.txt",
                                   "content": "requests==2.0\n"})
    assert "DEPENDENCY_NOT_AUTHORIZED" in deny_reason(hook("claude", write, store))


def test_hashing_code_denied_by_default(store):
    prompt, tool = claude_run("write")
    hook("claude", say(prompt, "$stop-that-shit change"), store)
    write = dict(tool, tool_input={"file_path": "/tmp/run/work/cache.py",
                                   "content": "import hashlib\nkey = hashlib.sha256(data).hexdigest()\n"})
    assert "HASH_NOT_AUTHORIZED" in deny_reason(hook("claude", write, store))
    hook("claude", say(prompt, "$stop-that-shit change hash=allow"), store)
    assert hook("claude", write, store) is None


def test_an_edit_that_keeps_existing_hashing_is_not_hash_intent(store):
    prompt, tool = claude_run("write")
    hook("claude", say(prompt, "$stop-that-shit change"), store)
    old = "key = hashlib.sha256(data).hexdigest()\n"
    keep = dict(tool, tool_name="Edit", tool_input={
        "file_path": "/tmp/run/work/cache.py", "old_string": old,
        "new_string": "# cache key\n" + old})
    assert hook("claude", keep, store) is None
    add = dict(keep, tool_input=dict(keep["tool_input"], old_string="x = 1\n",
                                     new_string="x = hashlib.md5(b).hexdigest()\n"))
    assert "HASH_NOT_AUTHORIZED" in deny_reason(hook("claude", add, store))


def _schedule(prompt_event, tool, text, call_id):
    return dict(prompt_event, hook_event_name="PreToolUse", tool_name=tool, tool_use_id=call_id,
                tool_input={"cron": "*/5 * * * *", "prompt": text, "recurring": False})


def test_a_scheduled_prompt_may_not_set_the_contract(store):
    """CronCreate and ScheduleWakeup come back later as prompts: a model must not
    schedule its own `$stop-that-shit open` or a review-widening "fix it"."""
    prompt, _ = claude_run("write")
    hook("claude", say(prompt, "$stop-that-shit review"), store)
    for n, (tool, text) in enumerate([
            ("CronCreate", "$stop-that-shit open"),
            ("CronCreate", "/stop-that-shit change hash=allow"),
            ("ScheduleWakeup", "fix it"),
            ("ScheduleWakeup", "Continue.\n$stop-that-shit change")]):
        reason = deny_reason(hook("claude", _schedule(prompt, tool, text, "cron%d" % n), store))
        # A mention below the first line too: it would come back rejected aloud.
        assert "Code: I/GUARD_SELF_PROTECTION" in reason, text
    assert sts.Store(store.root).load(sts.session_key(prompt["session_id"])) \
        .state["contract"]["mode"] == "review"


def test_ordinary_scheduled_prompts_stay_controls(store):
    prompt, _ = claude_run("write")
    hook("claude", say(prompt, "$stop-that-shit review"), store)
    for n, text in enumerate(["check the CI run again", "$stop-that-shit status",
                              "Once the build is green, report the failures"]):
        assert hook("claude", _schedule(prompt, "CronCreate", text, "ok%d" % n), store) is None


def test_multiedit_and_notebookedit_carry_intent(store):
    """MultiEdit is judged edit by edit, as Edit is; NotebookEdit code cells are
    code in whatever language, markdown cells prose."""
    prompt, tool = claude_run("write")
    hook("claude", say(prompt, "$stop-that-shit change deps=deny"), store)
    multi = dict(tool, tool_name="MultiEdit", tool_input={
        "file_path": "/tmp/run/work/requirements.txt",
        "edits": [{"old_string": "# deps", "new_string": "# runtime deps"},
                  {"old_string": "requests==2.31.0", "new_string": "requests==2.32.0"}]})
    assert "DEPENDENCY_NOT_AUTHORIZED" in deny_reason(hook("claude", multi, store))
    claude = sts.ClaudeAdapter()
    kept = claude.classify("MultiEdit", {"file_path": "/w/a.js", "edits": [
        {"old_string": "createHash('sha256').update(a)", "new_string":
         "createHash('sha256').update(b)"}]})
    assert kept["mutability"] == "write" and kept["affectedPaths"] == ["/w/a.js"]
    assert kept["hashIntent"] is False
    cell = {"notebook_path": "/w/a.ipynb", "new_source": "!sha256sum data.csv",
            "cell_type": "code"}
    assert claude.classify("NotebookEdit", cell)["hashIntent"] is True
    r_cell = dict(cell, new_source='digest::digest(x, algo = "sha256")')
    assert claude.classify("NotebookEdit", r_cell)["hashIntent"] is True
    prose = dict(cell, new_source="We check `hashlib.sha256(data)` later.", cell_type="markdown")
    assert claude.classify("NotebookEdit", prose)["hashIntent"] is False


def test_powershell_redirect_keeps_hash_intent(store):
    prompt, tool = claude_run("write")
    hook("claude", say(prompt, "$stop-that-shit open hash=deny"), store)
    shell = dict(tool, tool_name="PowerShell", tool_input={"command": "sha256sum a.js > a.sha"})
    assert "HASH_NOT_AUTHORIZED" in deny_reason(hook("claude", shell, store))
