"""The engine: one ControlEvent in, one result out, with state, audit and markers kept true."""
import json
import os

import pytest

import sts
from conftest import calls_made
from hooks import hook


def event(kind, session="s-engine", **fields):
    raw = {"protocolVersion": 2, "lifecycleVersion": 2, "kind": kind, "sessionId": session}
    raw.update(fields)
    return sts.ControlEvent.from_dict(raw)


def prompt(store, text, session="s-engine"):
    return sts.handle_event(event("prompt.submit", session, prompt=text), store)


def act(store, session="s-engine", **action):
    action.setdefault("name", "Write")
    action.setdefault("mutability", "write")
    return sts.handle_event(event("action.before", session, action=action), store)


def audit_lines(store, session="s-engine"):
    path = store.path("runtime", sts.session_key(session) + ".jsonl")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_context_is_sent_once_and_again_only_when_it_changes(store):
    first = prompt(store, "$stop-that-shit review")
    assert first.kind == "context" and "mode=review" in first.text
    assert prompt(store, "$stop-that-shit review").kind == "none"
    assert prompt(store, "an ordinary question").kind == "none"
    assert "agents=0/2" in prompt(store, "$stop-that-shit agents=2").text


def test_invalid_directive_keeps_the_contract_and_is_stored(store):
    prompt(store, "$stop-that-shit review")
    result = prompt(store, "$stop-that-shit review please")
    assert result.kind == "prompt-error" and result.code == "INVALID_DIRECTIVE_TOKEN"
    state = store.load(sts.session_key("s-engine")).state
    assert state["contract"]["mode"] == "review"
    assert state["directiveError"]["token"] == "please"
    prompt(store, "$stop-that-shit change")
    assert store.load(sts.session_key("s-engine")).state["directiveError"] is None


def test_inspection_commands_never_change_the_state(store):
    prompt(store, "$stop-that-shit review")
    path = store.path("sessions", sts.session_key("s-engine") + ".json")
    before = open(path, "rb").read()
    result = prompt(store, "$stop-that-shit status")
    assert result.kind == "context" and result.text.startswith("Stop That Shit status")
    assert open(path, "rb").read() == before


def test_every_checked_action_writes_one_audit_line_text_only_for_a_denial(store):
    act(store, affectedPaths=["secret/path.txt"], cwd="/home/u/proj")   # unconfirmed: observing
    prompt(store, "$stop-that-shit review")
    denied = act(store, affectedPaths=["secret/path.txt"], cwd="/home/u/proj")
    lines = audit_lines(store)
    assert [l["decision"]["reasonCode"] for l in lines] == ["CONTROL_INACTIVE", "MODE_FORBIDS_MUTATION"]
    assert [l["controlState"] for l in lines] == ["observing", "armed"]
    assert lines[1]["eventId"] == denied.event_id and ("Event: %s" % denied.event_id) in denied.text
    assert lines[1]["decision"]["responseOutcome"] == "permission_deny_returned"
    raw = open(store.path("runtime", sts.session_key("s-engine") + ".jsonl")).read()
    allowed, kept = raw.splitlines()
    # An allowed call keeps metadata only; a denied one what a person needs to see why.
    assert "secret" not in allowed and "/home/u" not in allowed and "s-engine" not in allowed
    assert "shown" not in lines[0]
    assert lines[1]["shown"]["paths"] == ["secret/path.txt"]
    assert lines[1]["shown"]["cwd"] == "/home/u/proj"
    assert lines[1]["shown"]["sessionId"] == "s-engine"


def test_off_is_not_audited(store):
    prompt(store, "$stop-that-shit off")
    assert act(store).kind == "none"
    assert audit_lines(store) == []


def test_failing_audit_write_keeps_the_decision_and_drops_the_event_line(store):
    prompt(store, "$stop-that-shit review")
    os.makedirs(store.root, exist_ok=True)
    runtime = store.path("runtime")
    if os.path.isdir(runtime):
        os.rmdir(runtime) if not os.listdir(runtime) else None
    with open(runtime, "w") as fh:
        fh.write("not a directory")
    result = act(store)
    assert result.kind == "deny" and result.code == "MODE_FORBIDS_MUTATION"
    assert "\nEvent:" not in result.text and result.event_id is None


def test_execution_denial_outcome_is_audited_for_shim_hosts(store):
    prompt(store, "$stop-that-shit review")
    ev = event("action.before", action={"name": "write", "mutability": "write"})
    result = sts.handle_event(ev, store, "execution_denial_returned")
    assert result.text.splitlines()[1] == "The guard denied the call before it ran."
    assert audit_lines(store)[-1]["decision"]["responseOutcome"] == "execution_denial_returned"


def test_armed_marker_follows_the_contract_and_reaches_linked_children(store):
    key = sts.session_key("s-engine")
    store.write_link("child-1", "s-engine")
    prompt(store, "$stop-that-shit review")
    assert store.armed_marker(key) and store.armed_marker(sts.session_key("child-1"))
    prompt(store, "$stop-that-shit off")
    assert not store.armed_marker(key) and not store.armed_marker(sts.session_key("child-1"))


def test_damaged_state_recovers_read_only_then_a_directive_starts_fresh(store):
    key = sts.session_key("s-engine")
    os.makedirs(store.path("sessions"), exist_ok=True)
    damaged = b'{"schemaVersion": 4, "contract": '
    with open(store.path("sessions", key + ".json"), "wb") as fh:
        fh.write(damaged)
    assert act(store, name="Read", mutability="read").kind == "none"
    denied = act(store)
    assert denied.kind == "deny" and denied.code == "STATE_DAMAGED"
    assert prompt(store, "hello").text.startswith("STATE_DAMAGED:")
    result = prompt(store, "$stop-that-shit change")
    assert result.kind == "context" and "damaged" in result.text
    kept = [n for n in os.listdir(store.path("sessions")) if ".damaged-" in n]
    assert len(kept) == 1
    assert open(store.path("sessions", kept[0]), "rb").read() == damaged
    assert act(store).kind == "none"          # change mode, fresh state
    state = store.load(key).state
    assert state["delegation"]["unresolved"] == {"state:damaged": "state_unavailable"}


def test_lock_timeout_on_a_finite_budget_delegation_is_state_busy(store, monkeypatch):
    prompt(store, "$stop-that-shit change agents=2")

    def busy(key, change):
        raise sts.LockTimeout(key)
    monkeypatch.setattr(store, "update", busy)
    result = act(store, name="Agent", mutability="delegate", id="call-1")
    assert result.kind == "deny" and result.code == "STATE_BUSY"


def test_lifecycle_facts_from_undeclared_adapters_are_ignored(store):
    prompt(store, "$stop-that-shit change agents=1")
    assert act(store, name="Agent", mutability="delegate", id="a1").kind == "none"
    legacy = sts.ControlEvent.from_dict({"protocolVersion": 2, "kind": "action.after",
                                         "sessionId": "s-engine",
                                         "action": {"id": "a1", "lifecycle": "joined"}})
    sts.handle_event(legacy, store)
    assert act(store, name="Agent", mutability="delegate", id="a2").code == "AGENT_BUDGET_EXHAUSTED"
    sts.handle_event(event("action.after", action={"id": "a1", "lifecycle": "joined"}), store)
    assert act(store, name="Agent", mutability="delegate", id="a3").kind == "none"


def test_thrash_is_reported_on_the_third_repeat_and_reset_by_a_write(store):
    prompt(store, "$stop-that-shit change")
    read = {"name": "Bash", "mutability": "read", "command": "git  status"}
    assert act(store, **read).kind == "none"
    assert act(store, **dict(read, command="git status")).kind == "none"
    third = act(store, **read)
    assert third.kind == "context" and "REPEATED_WITHOUT_CHANGE" in third.text
    assert third.text.startswith("WATCH / THRASH")
    # A write in a known folder (with no folder a relative path could be anywhere,
    # the guard's own files included, and self-protection would stop it).
    act(store, name="Write", mutability="write", affectedPaths=["a.txt"], cwd="/proj")
    assert act(store, **read).kind == "none"


def test_thrash_counts_test_commands_but_not_other_unknown_commands(store):
    prompt(store, "$stop-that-shit change")
    tests = {"name": "Bash", "mutability": "unknown", "command": "python3 -m pytest -q"}
    results = [act(store, **tests).kind for _ in range(3)]
    assert results == ["none", "none", "context"]
    other = {"name": "Bash", "mutability": "unknown", "command": "make build"}
    assert [act(store, **other).kind for _ in range(3)] == ["none", "none", "none"]


def test_lock_timeout_under_an_unlimited_budget_fails_open_but_is_audited(store, monkeypatch, capsys):
    prompt(store, "$stop-that-shit change")

    def busy(key, change):
        raise sts.LockTimeout(key)
    monkeypatch.setattr(store, "update", busy)
    result = act(store, name="Agent", mutability="delegate", id="call-1")
    assert result.kind == "none"
    assert audit_lines(store)[-1]["action"]["toolName"] == "Agent"
    assert "sts:" in capsys.readouterr().err


def test_a_directive_that_cannot_be_saved_is_reported_not_lost(store, monkeypatch):
    import errno
    prompt(store, "$stop-that-shit review")
    state_file = store.path("sessions", sts.session_key("s-engine") + ".json")
    before = open(state_file, "rb").read()

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(sts.os, "replace", disk_full)
    result = prompt(store, "$stop-that-shit change")
    assert result.kind == "prompt-error" and result.code == "STATE_WRITE_FAILED"
    assert "previous contract still applies" in result.text
    monkeypatch.undo()
    assert open(state_file, "rb").read() == before
    assert not [n for n in os.listdir(store.path("sessions")) if n.endswith(".tmp")]
    assert act(store).code == "MODE_FORBIDS_MUTATION"      # still review


def test_an_unusable_lock_path_is_recovery_not_silence(store):
    prompt(store, "$stop-that-shit review")
    sessions = store.path("sessions")
    os.rename(sessions, sessions + ".moved")
    with open(sessions, "w") as fh:
        fh.write("x")
    result = prompt(store, "$stop-that-shit change")
    assert result.kind == "context" and result.code == "STS_LOCK_DAMAGED"
    assert "read-only recovery" in result.text


def test_thrash_side_file_is_private(store):
    prompt(store, "$stop-that-shit change")
    act(store, name="Bash", mutability="read", command="git status")
    path = store.path("thrash", sts.session_key("s-engine") + ".json")
    assert os.stat(path).st_mode & 0o777 == 0o600


# --- host facts: what an adapter tells the engine instead of deciding itself --------

def test_a_rejected_directive_pauses_every_call_where_the_prompt_ran(store):
    prompt(store, "$stop-that-shit off")
    prompt(store, "$stop-that-shit change fix it")  # rejected: `fix` is no directive field
    read = {"name": "Read", "mutability": "read"}
    assert act(store, **read).kind == "none"  # a host that refused the prompt: no pause
    paused = sts.handle_event(event("action.before", action=read, promptsRefusable=False), store)
    assert paused.kind == "deny" and paused.code == "DIRECTIVE_PENDING"
    assert paused.text.startswith("Stop That Shit: directive rejected (INVALID_DIRECTIVE_TOKEN)")
    assert "Tools stay paused" in paused.text
    # Audited even under `off`, and `explain` finds it by the event the text names.
    assert paused.text.endswith("Event: " + paused.event_id)
    assert audit_lines(store)[-1]["decision"]["reasonCode"] == "DIRECTIVE_PENDING"
    prompt(store, "$stop-that-shit change")
    again = sts.handle_event(event("action.before", action=read, promptsRefusable=False), store)
    assert again.kind == "none"


def test_a_prompt_or_start_says_what_holds_after_it(store):
    prompt(store, "$stop-that-shit review")
    rejected = prompt(store, "$stop-that-shit review please")
    assert rejected.directive_error["token"] == "please"
    assert rejected.contract_line.startswith("Stop That Shit (active): mode=review;")
    later = prompt(store, "what now?")
    assert later.directive_error["token"] == "please" and "mode=review" in later.contract_line
    start = sts.handle_event(event("session.start"), store)
    assert start.directive_error["token"] == "please"
    child = sts.handle_event(event("session.start", sourceSessionId="s-child"), store)
    assert child.directive_error is None and child.contract_line == ""  # the user's turn only
    assert prompt(store, "$stop-that-shit change").directive_error is None


def test_an_agent_that_can_edit_turns_review_into_change(store):
    prompt(store, "$stop-that-shit review")

    def say(text, can_edit):
        return sts.handle_event(event("prompt.submit", prompt=text, agentCanEdit=can_edit),
                                store)
    mode = lambda: store.load(sts.session_key("s-engine")).state["contract"]["mode"]  # noqa: E731
    say("go on", False)
    assert mode() == "review"
    say("review only, go on", True)  # a correction in the same message still wins
    assert mode() == "review"
    say("   ", True)  # no user text: not the user speaking
    assert mode() == "review"
    result = say("go on", True)
    contract = store.load(sts.session_key("s-engine")).state["contract"]
    assert contract["mode"] == "change" and contract["source"] == "host"
    assert "mode=change" in result.text


def test_a_directive_typed_mid_turn_is_refused_and_plain_text_left_alone(store):
    prompt(store, "$stop-that-shit review")
    path = store.path("sessions", sts.session_key("s-engine") + ".json")
    before = open(path, "rb").read()

    def busy(text):
        return sts.handle_event(event("prompt.submit", prompt=text, agentBusy=True), store)
    for text in ("$stop-that-shit change", "fix it"):  # a directive, a correction
        refused = busy(text)
        assert refused.kind == "prompt-error" and refused.code == "DIRECTIVE_NOT_IDLE"
        assert "Resubmit it when the agent is idle" in refused.text
    assert busy("also look at b.py").kind == "none"
    assert busy("$stop-that-shit status").text.startswith("Stop That Shit status")
    assert open(path, "rb").read() == before


def test_a_call_whose_governing_session_is_unknown_is_judged_in_recovery(store):
    prompt(store, "$stop-that-shit change")  # this session's own state is never used
    damaged = {"code": "PARENT_LINK_DAMAGED", "message": "The parent link is unreadable."}

    def call(**action):
        return sts.handle_event(event("action.before", action=action, storageError=damaged),
                                store)
    assert call(name="Read", mutability="read").kind == "none"
    denied = call(name="Write", mutability="write", affectedPaths=["a.txt"])
    assert denied.kind == "deny" and denied.code == "STATE_DAMAGED"
    assert "The parent link is unreadable." in denied.text and denied.event_id
    assert audit_lines(store)[-1]["decision"]["reasonCode"] == "STATE_DAMAGED"
    assert store.load(sts.session_key("s-engine")).state["contract"]["mode"] == "change"


def test_a_prompt_whose_governing_session_is_unknown_is_told_why_and_changes_nothing(store):
    prompt(store, "$stop-that-shit review")
    path = store.path("sessions", sts.session_key("s-engine") + ".json")
    before = open(path, "rb").read()
    damaged = {"code": "PARENT_LINK_DAMAGED", "message": "The parent link is unreadable."}
    told = sts.handle_event(event("session.start", storageError=damaged), store)
    assert (told.kind, told.code) == ("context", "PARENT_LINK_DAMAGED")
    assert told.text == "PARENT_LINK_DAMAGED: The parent link is unreadable."
    assert open(path, "rb").read() == before  # the contract stays review
    assert store.armed_marker(sts.session_key("s-engine"))  # a shim fails closed meanwhile


# ---- the cost of one long call through the whole hook ----------------------
# The analyzer counts its own work; the steps around it (the denial's
# culprit, the paths a command not proven read names, the code it may run)
# must grow with the command as linearly.  Inline Python whose 31 KB named
# paths were unescaped a letter at a time took 140 ms in the hook.

# name -> (the command at size n, calls the hook may make per byte of it:
# about twice today's count; a letter-at-a-time loop makes ten or more).
LONG_SHAPES = {
    "inline Python": (lambda n: "python3 -I -c 'print(1)" + "; print(1)" * n + "'", 1.5),
    "Python on a heredoc": (lambda n: "python3 -I - <<'EOF'\n" + "print(1)\n" * n + "EOF", 0.3),
    "here-documents": (lambda n: "cat <<EOF\nline\nEOF\n" * (n // 4), 6),
    "tiny unknown commands": (lambda n: ";".join("a" for _ in range(n // 4)), 160),
    "an agent named in a string": (lambda n: 'tmux new "' + "claude mcp " * (n // 4) + '"', 7),
}


@pytest.mark.parametrize("name", sorted(LONG_SHAPES))
def test_a_long_call_costs_the_hook_linear_work(name, sts_home):
    store = sts.Store(str(sts_home))
    base = {"session_id": "s-long", "cwd": "/repo"}
    hook("claude", dict(base, hook_event_name="UserPromptSubmit",
                        prompt="$stop-that-shit review"), store)

    make, per_byte = LONG_SHAPES[name]

    def cost(n):
        call = dict(base, hook_event_name="PreToolUse", tool_name="Bash", tool_use_id="t%d" % n,
                    tool_input={"command": make(n)})
        return calls_made(hook, "claude", call, store)[1]

    cost(200)   # the first call builds the caches a hook process builds
    small, large = cost(800), cost(1600)
    assert large <= 2.5 * small + 200, (small, large)
    assert large <= per_byte * len(make(1600)), (large, len(make(1600)))
