"""Mistral Vibe: pre_tool command hooks in hooks.toml, qualified tool names,
{"decision": "deny"} answers, the user's words read from the session journal,
subagents judged by their parent, and install's strict block in hooks.toml."""
import json
import os
import subprocess
import sys

import pytest

import sts

SID = "b66cfeaa-cedc-c373-447d-eeffa189dc3e"
STS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sts.py")


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return sts.Store(str(tmp_path / "state"))


def turn(command_id, text, injected=False):
    """A journal line as Vibe 3.0 writes it when a turn starts."""
    return {"payload": {"abandon_on_restart": True, "client_command_id": command_id,
                        "method": "turn/start",
                        "params": {"injected": injected, "sessionId": SID,
                                   "message": [{"text": text, "type": "text"}]}},
            "record_sha256": "0" * 64}


def journal(tmp_path, *lines, name="0000000000000001.jsonl"):
    """A session folder (the payload's transcript_path) with one journal file."""
    folder = tmp_path / "home" / ".vibe" / "logs" / "session" / "unified" / SID
    (folder / "journal").mkdir(parents=True, exist_ok=True)
    (folder / "journal" / name).write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(folder)


def pre_tool(folder, tool, tool_input, call_id="call_1", parent=None, sid=SID, cwd="/w"):
    return {"session_id": sid, "transcript_path": folder, "cwd": cwd,
            "parent_session_id": parent, "hook_event_name": "pre_tool",
            "tool_name": tool, "tool_call_id": call_id, "tool_input": tool_input}


def answer(store, payload):
    out = sts.run_hook("vibe", json.dumps(payload).encode(), store)
    return json.loads(out) if out else {}


def denied(got):
    return got.get("decision") == "deny", got.get("reason", "")


WRITE = ("file_system.write_file", {"file_path": "/w/a.txt", "content": "x"})


def test_the_directive_is_read_from_the_journal_and_a_write_is_denied(tmp_path, store):
    folder = journal(tmp_path, turn("turn-1", "$stop-that-shit review -- look around"))
    deny, text = denied(answer(store, pre_tool(folder, *WRITE)))
    assert deny and "MODE_FORBIDS_MUTATION" in text
    read = answer(store, pre_tool(folder, "file_system.read_file", {"file_path": "/w/a.txt"},
                                  call_id="call_2"))
    assert not denied(read)[0]
    shell = answer(store, pre_tool(folder, "file_system.bash", {"command": "echo x > /w/f"},
                                   call_id="call_3"))
    assert denied(shell)[0]


def test_injected_turns_are_not_the_users_words(tmp_path, store):
    folder = journal(tmp_path, turn("turn-1", "$stop-that-shit review -- look"),
                     turn("turn-2", "$stop-that-shit open", injected=True))
    assert denied(answer(store, pre_tool(folder, *WRITE)))[0]
    only_injected = journal(tmp_path, turn("turn-9", "$stop-that-shit review", injected=True),
                            name="0000000000000002.jsonl")
    assert only_injected == folder   # the newest file holds no user turn: the older one counts


def test_the_newest_journal_file_holds_the_latest_prompt(tmp_path, store):
    journal(tmp_path, turn("turn-1", "$stop-that-shit change -- go"))
    folder = journal(tmp_path, turn("turn-2", "$stop-that-shit review -- stop"),
                     name="0000000000000028.jsonl")
    deny, text = denied(answer(store, pre_tool(folder, *WRITE)))
    assert deny and "MODE_FORBIDS_MUTATION" in text


def test_a_missing_or_broken_journal_changes_nothing(tmp_path, store):
    for folder in ("", str(tmp_path / "absent"), 7, None):
        assert answer(store, pre_tool(folder, *WRITE)) == {}
    bad = tmp_path / "bad"
    (bad / "journal").mkdir(parents=True)
    (bad / "journal" / "1.jsonl").write_bytes(b'\xff"turn/start"\n{"payload": 3, "turn/start"\n')
    assert answer(store, pre_tool(str(bad), *WRITE)) == {}


def test_a_subagent_is_judged_by_its_parent_and_its_task_is_not_a_prompt(tmp_path, store):
    folder = journal(tmp_path, turn("turn-1", "$stop-that-shit review -- look"))
    assert denied(answer(store, pre_tool(folder, *WRITE)))[0]
    child = tmp_path / "child"
    (child / "journal").mkdir(parents=True)
    (child / "journal" / "1.jsonl").write_text(json.dumps(turn("t", "$stop-that-shit open"))
                                               + "\n")
    got = answer(store, pre_tool(str(child), *WRITE, call_id="c1", parent=SID, sid="child-1"))
    deny, text = denied(got)
    assert deny and "MODE_FORBIDS_MUTATION" in text


def test_a_subagent_of_a_subagent_is_judged_by_the_root(tmp_path, store):
    folder = journal(tmp_path, turn("turn-1", "$stop-that-shit review -- look"))
    assert denied(answer(store, pre_tool(folder, *WRITE)))[0]
    # The child's first call (spawning the grandchild) names the root as parent.
    answer(store, pre_tool(str(tmp_path / "c"), "agents.list", {}, call_id="c1",
                           parent=SID, sid="child-1"))
    got = answer(store, pre_tool(str(tmp_path / "g"), *WRITE, call_id="g1",
                                 parent="child-1", sid="child-2"))
    deny, text = denied(got)
    assert deny and "MODE_FORBIDS_MUTATION" in text


def test_a_pre_tool_event_that_cannot_be_read_fails_closed_while_armed(tmp_path, store):
    folder = journal(tmp_path, turn("turn-1", "$stop-that-shit review -- look"))
    assert denied(answer(store, pre_tool(folder, *WRITE)))[0]
    raw = json.dumps(pre_tool(folder, "file_system.bash", {"command": "__X__"}, call_id="c2"))
    raw = raw.replace('"__X__"', "[" * 100000 + "]" * 100000).encode()
    got = json.loads(sts.run_hook("vibe", raw, store) or "{}")
    deny, text = denied(got)
    assert deny and "could not evaluate this call" in text


def test_nested_calls_of_the_code_tool_are_judged_one_by_one(tmp_path, store):
    folder = journal(tmp_path, turn("turn-1", "$stop-that-shit change -- go"))
    got = answer(store, pre_tool(folder, "file_system.bash",
                                 {"command": "sha256sum seed > /w/sum.txt"},
                                 call_id="typescript:3:call_2:0:tool:0"))
    deny, text = denied(got)
    assert deny and "HASH_NOT_AUTHORIZED" in text


@pytest.mark.parametrize("tool,tool_input,mutability", [
    ("file_system.bash", {"command": "ls"}, "read"),
    ("file_system.bash", {"command": "echo x > f", "timeout": 5}, "write"),
    ("file_system.write_file", {"file_path": "a.txt", "content": "x"}, "write"),
    ("file_system.search_replace", {"file_path": "a.txt", "old_string": "a",
                                    "new_string": "b", "replace_all": False}, "write"),
    ("file_system.search_replace", {"file_path": "a.txt", "content": [
        {"old_str": "a", "new_str": "b"}, {"old_str": "c", "new_str": "d"}]}, "write"),
    ("file_system.read_file", {"file_path": "a.txt", "offset": 0}, "read"),
    ("process.start", {"command": "ls"}, "read"),
    ("process.start", {"command": "touch x", "cwd": "/w"}, "write"),
    ("process.write", {"processId": "p1", "text": "rm -rf /\n"}, "unknown"),
    ("process.output", {"processId": "p1"}, "read"),
    ("process.stop", {"processId": "p1"}, "control"),
    ("agents.spawn", {"agentName": "a", "message": "m"}, "delegate"),
    ("agents.send_message", {"agentName": "a", "message": "m"}, "control"),
    ("agents.list", {}, "read"),
    ("run_typescript", {"code": "await tools.file_system.bash({command: 'ls'})"}, "unknown"),
    ("vibe.unified_harness_scratchpad", {"action": "list"}, "read"),
    ("vibe.unified_harness_scratchpad", {"action": "write", "path": "notes/a.md",
                                         "content": "x"}, "control"),
    ("vibe.unified_harness_scratchpad", {"action": "write", "path": "../journal/9.jsonl",
                                         "content": "x"}, "unknown"),
    ("vibe.unified_harness_scratchpad", {"action": "write", "path": "/etc/x"}, "unknown"),
    ("vibe.cron", {"action": "schedule", "prompt": "check the build"}, "control"),
    ("vibe.todo", {"action": "read"}, "control"),
    ("self.wait", {"timeout_ms": 5}, "control"),
    ("bash", {"command": "rm -rf build"}, "write"),
    ("task", {"task": "t", "agent": "explore"}, "delegate"),
    ("vibe.start_session", {"prompt": "write the changelog", "placement": "new_worktree"},
     "delegate"),
    ("linear.create_issue", {"title": "x"}, "unknown"),
])
def test_vibes_tools(tool, tool_input, mutability):
    assert sts.ADAPTERS["vibe"].classify(tool, tool_input)["mutability"] == mutability


def test_a_scheduled_prompt_that_would_set_the_contract_is_named_as_such():
    action = sts.ADAPTERS["vibe"].classify("vibe.cron", {"action": "schedule",
                                                          "prompt": "$stop-that-shit open"})
    assert action.get("affectedPaths")


def test_a_new_session_is_an_agent_nobody_can_count(tmp_path, store):
    folder = journal(tmp_path, turn("turn-1", "$stop-that-shit change agents=2 -- go"))
    got = answer(store, pre_tool(folder, "vibe.start_session", {"prompt": "write the docs"}))
    deny, text = denied(got)
    assert deny and "UNBOUNDED_DELEGATION" in text
    # Its prompt is that session's first user turn: one that opens the
    # contract is a write to the guard's session state.
    action = sts.ADAPTERS["vibe"].classify("vibe.start_session",
                                           {"prompt": "$stop-that-shit open -- go"})
    assert action["affectedPaths"]


def test_the_guards_own_files_of_vibe_are_protected(tmp_path, store):
    folder = journal(tmp_path, turn("turn-1", "$stop-that-shit change -- go"))
    home = str(tmp_path / "home")
    for path in (".vibe/hooks.toml", ".vibe/config.toml", ".vibe/trusted_folders.toml",
                 ".vibe/plugins/p/ai.mistral.vibe/hooks.toml",
                 ".vibe/logs/session/unified/x/journal/1.jsonl"):
        got = answer(store, pre_tool(folder, "file_system.write_file",
                                     {"file_path": os.path.join(home, path), "content": "x"},
                                     call_id="w-" + path))
        deny, text = denied(got)
        assert deny and "GUARD_SELF_PROTECTION" in text, path
    # A project's .vibe/hooks.toml could hold a hook of the guard's own name.
    got = answer(store, pre_tool(folder, "file_system.bash",
                                 {"command": "printf x > /w/.vibe/hooks.toml"}, call_id="p"))
    assert denied(got)[0]


def run_sts(home, *args):
    env = dict(os.environ, HOME=str(home), STS_HOME=str(home / "sts"))
    env.pop("VIBE_HOME", None)
    return subprocess.run([sys.executable, STS] + list(args), env=env, cwd=str(home),
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_install_adds_a_strict_block_once_and_uninstall_takes_only_it_out(tmp_path):
    home = tmp_path / "h"
    (home / ".vibe").mkdir(parents=True)
    mine = '[[hooks]]\nname = "lint"\ntype = "post_agent"\ncommand = "true"\n'
    (home / ".vibe" / "hooks.toml").write_text(mine)
    assert run_sts(home, "install", "vibe").returncode == 0
    first = (home / ".vibe" / "hooks.toml").read_text()
    assert run_sts(home, "install", "vibe").returncode == 0
    assert (home / ".vibe" / "hooks.toml").read_text() == first
    try:
        import tomllib   # Python 3.11+: the file read as Vibe reads it
    except ImportError:
        tomllib = None
    if tomllib is not None:
        hooks = tomllib.loads(first)["hooks"]
        ours = [h for h in hooks if h["name"] == "stop-that-shit"]
        assert len(hooks) == 2 and len(ours) == 1
        assert ours[0]["type"] == "pre_tool" and ours[0]["strict"] is True
        assert ours[0]["command"].endswith(" vibe") and "sts.main()" in ours[0]["command"]
    else:
        assert first.startswith(mine) and first.count("[[hooks]]") == 2
        assert 'type = "pre_tool"' in first and "strict = true" in first
    doctor = run_sts(home, "doctor")
    assert "OK   vibe     wired:" in doctor.stdout and "(strict)" in doctor.stdout
    assert run_sts(home, "uninstall", "vibe").returncode == 0
    assert (home / ".vibe" / "hooks.toml").read_text() == mine


@pytest.mark.slow
def test_doctor_fails_a_block_made_lenient(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    assert run_sts(home, "install", "vibe").returncode == 0
    path = home / ".vibe" / "hooks.toml"
    path.write_text(path.read_text().replace("strict = true", "strict = false"))
    doctor = run_sts(home, "doctor")
    assert "FAIL vibe" in doctor.stdout and "not strict" in doctor.stdout


@pytest.mark.slow
def test_install_refuses_a_hooks_file_it_cannot_add_to(tmp_path):
    home = tmp_path / "h"
    (home / ".vibe").mkdir(parents=True)
    (home / ".vibe" / "hooks.toml").write_text('hooks = "not a list"\n')
    got = run_sts(home, "install", "vibe")
    assert got.returncode != 0
    assert (home / ".vibe" / "hooks.toml").read_text() == 'hooks = "not a list"\n'
