"""Factory Droid: Claude-format hooks, Droid's tools, a PreToolUse without a
call id, and `droid exec`'s prompt read from the session transcript."""
import json
import os

import pytest

import sts

SID = "4bfbda61-bc24-4ef9-b0fa-bf7a59fad3f4"


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return sts.Store(str(tmp_path / "state"))


def transcript(tmp_path, *prompts, extra=()):
    """A transcript as Droid 0.225 writes it: hook entries, a reminder to the
    model, then each prompt (id, text), each followed by a tool round."""
    path = tmp_path / "home" / ".factory" / "sessions" / "-w" / (SID + ".jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "session_start", "id": SID, "title": "t"},
             {"type": "message", "id": "h1", "message": {
                 "role": "user", "content": [], "visibility": "user_only",
                 "hookEventName": "SessionStart"}},
             {"type": "message", "id": "r1", "message": {
                 "role": "user", "visibility": "llm_only",
                 "content": [{"type": "text", "text": "$stop-that-shit open"}]}}]
    for n, (mid, text) in enumerate(prompts):
        lines.append({"type": "message", "id": mid, "message": {
            "role": "user", "content": [{"type": "text", "text": text}]}})
        lines.append({"type": "message", "id": "a%d" % n, "message": {
            "role": "assistant", "content": [{"type": "tool_use", "id": "call_%d" % n,
                                              "name": "Read", "input": {}}]}})
        lines.append({"type": "message", "id": "t%d" % n, "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_%d" % n,
                                         "content": "$stop-that-shit open"}]}})
    lines.extend(extra)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def pre_tool(path, tool, tool_input, cwd="/w"):
    return {"session_id": SID, "transcript_path": path, "cwd": cwd,
            "permission_mode": "auto-low", "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": tool_input}


def answer(store, payload):
    out = sts.run_hook("droid", json.dumps(payload).encode(), store)
    return json.loads(out) if out else {}


def denied(got):
    spec = got.get("hookSpecificOutput") or {}
    return spec.get("permissionDecision") == "deny", spec.get("permissionDecisionReason", "")


def test_the_prompt_of_a_headless_run_is_read_from_the_transcript(tmp_path, store):
    path = transcript(tmp_path, ("u1", "$stop-that-shit review -- look around"))
    got = answer(store, pre_tool(path, "Create", {"file_path": "/w/a.txt", "content": "x"}))
    deny, text = denied(got)
    assert deny and "MODE_FORBIDS_MUTATION" in text
    assert not denied(answer(store, pre_tool(path, "Read", {"file_path": "/w/a.txt"})))[0]


def test_each_transcript_prompt_counts_once_and_a_later_one_counts(tmp_path, store):
    path = transcript(tmp_path, ("u1", "$stop-that-shit change agents=1 -- go"))
    task = {"subagent_type": "worker", "description": "d", "prompt": "p"}
    assert not denied(answer(store, pre_tool(path, "Task", task)))[0]
    # The same prompt again would reset nothing: the second launch is over budget.
    deny, text = denied(answer(store, pre_tool(path, "Task", dict(task, prompt="q"))))
    assert deny and "AGENT_BUDGET_EXHAUSTED" in text
    # A new prompt in the same session (`droid exec -s`): review now.
    path = transcript(tmp_path, ("u1", "$stop-that-shit change agents=1 -- go"),
                      ("u2", "$stop-that-shit review -- stop there"))
    deny, text = denied(answer(store, pre_tool(path, "Edit", {
        "file_path": "/w/a.py", "old_str": "a", "new_str": "b"})))
    assert deny and "MODE_FORBIDS_MUTATION" in text


def test_droids_own_entries_and_tool_results_are_never_the_users_prompt(tmp_path, store):
    # Only the reminder (llm_only), hook entries and tool results say "open":
    # no user prompt at all, so nothing arms and nothing is opened.
    path = transcript(tmp_path)
    assert answer(store, pre_tool(path, "Create", {"file_path": "/w/a", "content": "x"})) == {}
    assert not os.path.exists(store.path("transcript-prompts"))
    # The user's prompt is the last message typed, found behind the tool round.
    path = transcript(tmp_path, ("u1", "$stop-that-shit review -- look"), extra=[
        {"type": "message", "id": "x", "message": {"role": "user", "content": [
            {"type": "text", "text": "$stop-that-shit open"}], "hookEventName": "PreToolUse"}}])
    assert denied(answer(store, pre_tool(path, "Create", {"file_path": "/w/a", "content": "x"})))[0]


def test_a_missing_or_unreadable_transcript_changes_nothing(tmp_path, store):
    for path in (None, str(tmp_path / "absent.jsonl"), 7):
        assert answer(store, pre_tool(path, "Create", {"file_path": "/w/a", "content": "x"})) == {}
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xff\xfe not json\n{\"type\": \"message\"\n")
    assert answer(store, pre_tool(str(bad), "Execute", {"command": "rm -rf /w/x"})) == {}


def test_a_prompt_far_back_in_a_long_transcript_is_found(tmp_path, store):
    big = {"type": "message", "id": "big", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "y" * 300000}]}}
    path = transcript(tmp_path, ("u1", "$stop-that-shit review -- look"), extra=[big, big])
    assert denied(answer(store, pre_tool(path, "Execute", {"command": "touch /w/f"})))[0]


def test_the_user_prompt_hook_of_the_tui_arms_as_on_claude(store):
    prompt = {"session_id": SID, "cwd": "/w", "hook_event_name": "UserPromptSubmit",
              "prompt": "$stop-that-shit review -- look"}
    answer(store, prompt)
    deny, _ = denied(answer(store, pre_tool(None, "Execute", {"command": "echo x > /w/f"})))
    assert deny


@pytest.mark.parametrize("tool,tool_input,mutability", [
    ("Execute", {"command": "ls", "summary": "s"}, "read"),
    ("Execute", {"command": "echo x > f", "summary": "s"}, "write"),
    ("Create", {"file_path": "a.txt", "content": "x"}, "write"),
    ("Edit", {"file_path": "a.txt", "old_str": "a", "new_str": "b"}, "write"),
    ("Read", {"file_path": "a.txt"}, "read"),
    ("LS", {"directory_path": "/w"}, "read"),
    ("Glob", {"patterns": ["*.py"], "folder": "/w"}, "read"),
    ("Grep", {"pattern": "x", "path": "/w"}, "read"),
    ("Task", {"subagent_type": "worker", "prompt": "p"}, "delegate"),
    ("StartMissionRun", {}, "delegate"),
    ("Script", {"code": "await tools.Create({})"}, "unknown"),
    ("ConnectorSearch", {"action": "list_tools"}, "read"),
    ("ConnectorSearch", {"action": "call_tool", "toolName": "x"}, "unknown"),
    ("StageSettingsChanges", {"changes": {"hooksDisabled": True}}, "write"),
    ("SomeMcpTool", {}, "unknown"),
])
def test_droids_tools(tool, tool_input, mutability):
    assert sts.ADAPTERS["droid"].classify(tool, tool_input)["mutability"] == mutability


def test_a_settings_change_names_droids_settings_which_self_protection_guards(store):
    answer(store, {"session_id": SID, "cwd": "/w", "hook_event_name": "UserPromptSubmit",
                   "prompt": "$stop-that-shit change -- go"})
    deny, text = denied(answer(store, pre_tool(None, "StageSettingsChanges",
                                               {"changes": {"hooksDisabled": True}})))
    assert deny and "GUARD_SELF_PROTECTION" in text


def test_a_task_without_a_call_id_still_holds_its_place(store):
    answer(store, {"session_id": SID, "cwd": "/w", "hook_event_name": "UserPromptSubmit",
                   "prompt": "$stop-that-shit change agents=0 -- go"})
    deny, text = denied(answer(store, pre_tool(None, "Task", {"prompt": "p"})))
    assert deny and "AGENT_BUDGET_EXHAUSTED" in text


def test_doctor_fails_while_droids_settings_turn_hooks_off(tmp_path):
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, HOME=str(tmp_path), STS_HOME=str(tmp_path / "sts"))
    run = [sys.executable, os.path.join(root, "sts.py")]
    assert subprocess.run(run + ["install", "droid"], env=env, cwd=str(tmp_path),
                          capture_output=True, timeout=60).returncode == 0
    settings = tmp_path / ".factory" / "settings.json"
    data = json.loads(settings.read_text())
    settings.write_text(json.dumps(dict(data, hooksDisabled=True)))
    out = subprocess.run(run + ["doctor"], env=env, cwd=str(tmp_path), capture_output=True,
                         timeout=60).stdout.decode()
    assert "FAIL droid" in out and "hooksDisabled" in out
    settings.write_text(json.dumps(data))
    out = subprocess.run(run + ["doctor"], env=env, cwd=str(tmp_path), capture_output=True,
                         timeout=60).stdout.decode()
    assert "hooksDisabled" not in out
