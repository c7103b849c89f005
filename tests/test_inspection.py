"""status / runtime / explain / label, as prompt commands and from the terminal."""
import json
import os
import time

import pytest

import sts
from test_audit import event

KEY = sts.session_key("s1")


def _arm(store, key=KEY, **changes):
    def change(loaded):
        state = loaded.state
        state["contract"].update(dict(mode="change", level="guard", source="directive"), **changes)
        return state, None
    store.update(key, change)


def _with_ledger(store):
    def change(loaded):
        state = loaded.state
        state["contract"].update(mode="change", level="guard", agentBudget=1, source="directive")
        d = state["delegation"]
        d["acceptedActions"] = {"a1": 1, "a2": 1}
        d["reservations"] = {"reservation:a1": {"actionId": "a1", "pendingCount": 1,
                                                "agentIds": []}}
        d["unresolved"] = {"a2": "reused_action_id", "a3": "unversioned_resume",
                           "a4": "legacy_protocol", "a5": "reused_action_id"}
        state["directiveError"] = {"code": "INVALID_DIRECTIVE_TOKEN", "token": "fix",
                                   "message": "fix is not a directive field"}
        return state, None
    store.update(KEY, change)


def test_status_of_a_fresh_session(store):
    text = sts.inspection_response(("status",), store, KEY)
    assert text.split("\n") == [
        "Stop That Shit status",
        "State: OBSERVING / unconfirmed",
        "Contract: none yet (a new session only watches until a directive sets one)",
        "Set by: nobody yet (the start of every session)",
        "Protection: none yet: no contract is set, so calls are only watched. Set one in a "
        "prompt: `$stop-that-shit review -- <task>`.",
    ]
    assert not os.path.exists(store.path("sessions"))  # read-only


def test_status_with_ledger_error_and_files(store):
    _with_ledger(store)
    before = open(store.path("sessions", KEY + ".json"), "rb").read()
    lines = sts.inspection_response(("status",), store, KEY).split("\n")
    assert lines == [
        "Stop That Shit status",
        "State: ARMED / change",
        "Contract: change guard deps=ask hash=deny undo=ask agents=1",
        "Set by: a $stop-that-shit directive in a prompt",
        "Protection: on: calls outside this contract are stopped.",
        "Subagents: 1 running or unconfirmed, 1 allowed at once",
        "Directive error: INVALID_DIRECTIVE_TOKEN: fix is not a directive field",
        "Unresolved activity: reused_action_id, unversioned_resume, legacy_protocol. Only a "
        "confirmed completion or a new host session clears this; never reset the ledger by hand.",
    ]
    assert open(store.path("sessions", KEY + ".json"), "rb").read() == before


@pytest.mark.parametrize("paths,shown", [([], "files=(none: no path is writable)"), (["src/**", "a.js"], "files=src/**|a.js")])
def test_status_files_rendering(store, paths, shown):
    _arm(store, allowedPaths=paths)
    line = sts.inspection_response(("status",), store, KEY).split("\n")[2]
    assert line == "Contract: change guard %s deps=ask hash=deny undo=ask" % shown


def test_status_in_recovery_shows_storage_line(store):
    os.makedirs(store.path("sessions"))
    with open(store.path("sessions", KEY + ".json"), "w") as fh:
        fh.write("{")
    lines = sts.inspection_response(("status",), store, KEY).split("\n")
    assert lines[1] == "State: ARMED / review"
    assert lines[3] == "Set by: read-only recovery (the session file is damaged)"
    assert lines[4] == "Protection: read-only recovery: reads pass, anything else is stopped."
    assert lines[5].startswith("STATE_DAMAGED: Session state is unreadable")
    assert lines[6].startswith("Unresolved activity: state_unavailable. ")


def test_status_host_effect_shows_observed_value(store):
    rec = event(KEY)
    store.append_audit(KEY, rec)
    store.annotate_host_effect(rec["eventId"], "observed_blocked")
    assert "Last call: the host reported it blocked the call" in \
        sts.inspection_response(("status",), store, KEY)


def _fill(store):
    """Two sessions with a known mix of outcomes; returns the event ids of KEY."""
    other = sts.session_key("s2")
    recs = [
        event(KEY, at="2026-01-01T00:00:03.000Z"),
        event(KEY, reason="WITHIN_CONTRACT", family=None, outcome="allow", response="none",
              at="2026-01-01T00:00:01.000Z"),
        event(KEY, reason="HYPOTHETICAL_UNREACHABLE", family="H", outcome="report_and_defer",
              response="context_returned", at="2026-01-01T00:00:02.000Z"),
        event(KEY, reason="MODE_FORBIDS_MUTATION", outcome="deny_and_explain",
              at="2026-01-01T00:00:04.000Z"),
    ]
    for rec in recs:
        assert store.append_audit(KEY, rec)
    store.append_audit(other, event(other, response="execution_denial_returned",
                                    outcome="deny_and_explain", reason="MODE_FORBIDS_MUTATION"))
    with open(store.path("runtime", KEY + ".jsonl"), "a") as fh:
        fh.write("{not json\n")
    return [r["eventId"] for r in recs]


def test_runtime_this_and_all(store):
    ids = _fill(store)
    assert sts.inspection_response(("label", ids[0], "correct"), store, KEY).startswith(
        "Stop That Shit label recorded: ")
    sts.inspection_response(("label", ids[0], "incorrect"), store, KEY)  # last wins
    sts.inspection_response(("label", ids[1], "inconclusive"), store, KEY)
    with open(store.path("runtime", "annotations.jsonl"), "a") as fh:
        fh.write("[]\n")
    assert sts.inspection_response(("runtime", "this"), store, KEY).split("\n") == [
        "Stop That Shit runtime (host effect not observed)",
        "Checked actions: 4",
        "Context responses: 1",
        "Permission-deny responses: 2",
        "Labels: correct=0; incorrect=1; inconclusive=1",
        "Damaged records ignored: 2",
    ]
    assert sts.inspection_response(("runtime", "all"), store, KEY).split("\n") == [
        "Stop That Shit runtime (host effect not observed)",
        "Checked actions: 5",
        "Context responses: 1",
        "Permission-deny responses: 2",
        "Execution-denial responses: 1",
        "Labels: correct=0; incorrect=1; inconclusive=1",
        "Damaged records ignored: 2",
    ]


def test_explain_text_and_not_found(store):
    rec = event(KEY, analysis="shell_command_unproven")
    store.append_audit(KEY, rec)
    assert sts.inspection_response(("explain", rec["eventId"].upper().replace("EVT_", "evt_")),
                                   store, None).split("\n") == [
        "Stop That Shit event %s" % rec["eventId"],
        "When: %s %s UTC" % (rec["occurredAt"][:10], rec["occurredAt"][11:19]),
        "Host: -, session %s" % KEY,
        "Tool: Bash (unknown)",
        "Contract then: review guard deps=ask hash=deny agents=1 (armed)",
        "Verdict: denied until the user approves, MUTABILITY_UNPROVEN",
        "Analysis: the program is not on the read-only list.",
        "Next: " + sts._DECISION_ROWS["MUTABILITY_UNPROVEN"].next,
        "Kept: metadata only (written by an older sts); the audit keeps the command, "
        "paths and culprit of denied and noted calls.",
        "What the host did: not reported (the host does not say what it did after a hook)",
        "Label: unlabeled",
    ]
    plain = event(KEY, state="observing", mode="unconfirmed", reason="CONTROL_INACTIVE",
                  family=None, outcome="allow", response="none", tool="Edit", mutability="write",
                  paths=2)
    store.append_audit(KEY, plain)
    store.annotate_host_effect(plain["eventId"], "observed_ran")
    sts.inspection_response(("label", plain["eventId"], "correct"), store, KEY)
    text = sts.inspection_response(("explain", plain["eventId"]), store, KEY).split("\n")
    assert text[3:] == ["Tool: Edit (write)", "Paths: 2 (not kept)",
                        "Contract then: none yet (a new session only watches until a "
                        "directive sets one) (observing)",
                        "Verdict: allowed, CONTROL_INACTIVE",
                        "Kept: metadata only (an allowed call); the audit keeps the command, "
                        "paths and culprit of denied and noted calls.",
                        "What the host did: the host reported it ran the call",
                        "Label: correct"]
    missing = "evt_00000000-0000-4000-8000-000000000000"
    assert sts.inspection_response(("explain", missing), store, KEY) == \
        "Stop That Shit runtime event not found: " + missing
    assert sts.inspection_response(("label", missing, "correct"), store, KEY) == \
        "Stop That Shit runtime event not found: " + missing


def test_label_found_in_another_sessions_log(store):
    other = sts.session_key("s2")
    rec = event(other)
    store.append_audit(other, rec)
    assert sts.inspection_response(("label", rec["eventId"], "CORRECT"), store, KEY) == \
        "Stop That Shit label recorded: %s = correct" % rec["eventId"]
    assert sts.read_annotations(store).labels == {rec["eventId"]: "correct"}


def test_label_that_cannot_be_recorded(store):
    rec = event(KEY)
    store.append_audit(KEY, rec)
    os.makedirs(store.path("runtime", "annotations.jsonl"))
    assert sts.inspection_response(("label", rec["eventId"], "correct"), store, KEY).startswith(
        "Stop That Shit label could not be recorded")


# -- terminal ---------------------------------------------------------------

def _cli(store, capsys, *args):
    code = sts.cmd_inspect(list(args), store)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_status_uses_latest_session_or_session_flag(store, capsys):
    _arm(store, sts.session_key("old"), mode="review")
    _arm(store, sts.session_key("new"), mode="change")
    old = time.time() - 100
    os.utime(store.path("sessions", sts.session_key("old") + ".json"), (old, old))
    code, out, err = _cli(store, capsys, "status")
    assert code == 0 and err == ""
    assert out.split("\n")[1] == "State: ARMED / change"
    assert "no checked actions yet." in out
    code, out, _ = _cli(store, capsys, "status", "--session", "old")
    assert code == 0 and out.split("\n")[1] == "State: ARMED / review"
    code, out, err = _cli(store, capsys, "status", "--session=never-seen")
    assert code == 1 and out == "" and "no session never-seen" in err   # not a made-up one
    key = sts.session_key("old")   # the key `runtime all` lists, and a start of it
    for given in (key, key[:8].upper()):
        code, out, _ = _cli(store, capsys, "status", "--session", given)
        assert code == 0 and out.split("\n")[1] == "State: ARMED / review"


def test_cli_status_details_fit_80_columns(store, capsys):
    _arm(store)
    _fill(store)
    code, out, _ = _cli(store, capsys, "status", "--session", "s1")
    assert code == 0
    lines = out.rstrip("\n").split("\n")
    assert lines[:2] == ["Stop That Shit status", "State: ARMED / change"]
    assert "Checked actions: 4 (allowed 1, denied 2, watch notes 1)" in lines
    assert "  I intent                2       2       0" in lines
    assert all(len(line) <= 80 for line in lines)


def test_cli_runtime_text_and_json(store, capsys):
    ids = _fill(store)
    sts.inspection_response(("label", ids[2], "correct"), store, KEY)
    code, out, _ = _cli(store, capsys, "runtime", "--session", "s1")
    assert code == 0 and "Checked actions: 4\n" in out
    code, out, _ = _cli(store, capsys, "runtime", "all")
    assert code == 0 and "Checked actions: 5\n" in out and "Execution-denial responses: 1" in out
    code, out, _ = _cli(store, capsys, "runtime", "--all", "--json")
    doc = json.loads(out)
    assert doc["schemaVersion"] == 1 and len(doc["events"]) == 5
    times = [e["occurredAt"] for e in doc["events"]]
    assert times == sorted(times)
    summary = doc["summary"]
    assert summary["checkedActions"] == 5 and summary["executionDenialResponses"] == 1
    assert summary["reasons"]["MODE_FORBIDS_MUTATION"] == 2
    assert summary["labels"] == {"correct": 1, "incorrect": 0, "inconclusive": 0}
    assert summary["damagedRecords"] == 1
    assert [e["label"] for e in doc["events"] if e["eventId"] == ids[2]] == ["correct"]
    assert len(doc["annotations"]) == 1
    code, out, _ = _cli(store, capsys, "runtime", "--session", "s1", "--json")
    assert "executionDenialResponses" not in json.loads(out)["summary"]


def test_cli_explain_and_label(store, capsys):
    rec = event(KEY)
    store.append_audit(KEY, rec)
    code, out, _ = _cli(store, capsys, "explain", rec["eventId"])
    assert code == 0 and out.startswith("Stop That Shit event " + rec["eventId"] + "\n")
    code, out, _ = _cli(store, capsys, "label", rec["eventId"], "Inconclusive", "--json")
    assert code == 0 and json.loads(out)["label"] == "inconclusive"
    code, out, _ = _cli(store, capsys, "explain", rec["eventId"], "--json")
    doc = json.loads(out)
    assert doc["event"]["eventId"] == rec["eventId"] and len(doc["annotations"]) == 1
    code, out, _ = _cli(store, capsys, "label", rec["eventId"], "correct")
    assert code == 0 and out == "Stop That Shit label recorded: %s = correct\n" % rec["eventId"]


@pytest.mark.parametrize("args", [
    ("explain", "evt_00000000-0000-4000-8000-000000000000"),
    ("label", "evt_00000000-0000-4000-8000-000000000000", "correct"),
    ("label", "EVT_KNOWN", "wrong"),
    ("status",),  # no session at all
])
def test_cli_failures_are_one_stderr_line_exit_1(store, capsys, args):
    rec = event(KEY)
    if args[0] != "status":
        store.append_audit(KEY, rec)
    args = tuple(rec["eventId"] if a == "EVT_KNOWN" else a for a in args)
    code, out, err = _cli(store, capsys, *args)
    assert code == 1 and out == "" and err.count("\n") == 1


@pytest.mark.parametrize("args", [
    (), ("stats",), ("explain",), ("label", "evt_1"), ("status", "extra"), ("status", "--all"),
    ("runtime", "sometimes"), ("status", "--session"), ("status", "--bogus"),
    ("explain", "evt_1", "evt_2"),
])
def test_cli_usage_errors_exit_2(store, capsys, args):
    code, out, err = _cli(store, capsys, *args)
    assert code == 2 and out == "" and err.startswith("usage:")


def test_cli_runs_in_a_real_process(store):
    import subprocess
    import sys
    from conftest import ROOT
    rec = event(KEY)
    store.append_audit(KEY, rec)
    code = ("import sys; sys.path.insert(0, %r); import sts;"
            "sys.exit(sts.cmd_inspect(sys.argv[1:], sts.Store()))" % ROOT)
    env = dict(os.environ, STS_HOME=store.root)
    done = subprocess.run([sys.executable, "-c", code, "explain", rec["eventId"]],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "Label: unlabeled" in done.stdout
    done = subprocess.run([sys.executable, "-c", code, "label", rec["eventId"], "nope"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


# -- terminal layout, counts and JSON (issue 8) -------------------------------

def _status_out(store, capsys, *extra):
    code, out, err = _cli(store, capsys, "status", *extra)
    assert code == 0 and err == ""
    return out.rstrip("\n").split("\n")


def _section(lines, title_start):
    """The lines of one block of the terminal status, title included."""
    start = next(i for i, line in enumerate(lines) if line.startswith(title_start))
    end = next((i for i in range(start, len(lines)) if lines[i] == ""), len(lines))
    return lines[start:end]


def test_cli_status_layout_counts_and_tables(store, capsys):
    _arm(store)
    ids = _fill(store)
    # Two more denials and a thrash note, so that the top three has an order.
    for n, (reason, family, outcome) in enumerate([
            ("MODE_FORBIDS_MUTATION", "I", "deny_and_explain"),
            ("PATH_OUTSIDE_CONTRACT", "S", "deny_and_explain"),
            ("MODE_FORBIDS_MUTATION", "I", "deny_and_explain"),
            ("REPEATED_WITHOUT_CHANGE", "T", "report_and_defer")]):
        store.append_audit(KEY, event(KEY, reason=reason, family=family, outcome=outcome,
                                      response="context_returned"
                                      if outcome == "report_and_defer"
                                      else "permission_deny_returned",
                                      at="2026-01-01T00:01:0%d.000Z" % n))
    lines = _status_out(store, capsys, "--session", "s1")
    # The status lines come first; an unlimited budget is not mentioned.
    assert lines[:6] == [
        "Stop That Shit status",
        "State: ARMED / change",
        "Contract: change guard deps=ask hash=deny undo=ask",
        "Set by: a $stop-that-shit directive in a prompt",
        "Protection: on: calls outside this contract are stopped.",
        "",
    ]
    assert "Session %s, last activity 2026-01-01 00:01 UTC" % KEY in lines
    assert "Checked actions: 8 (allowed 1, denied 5, watch notes 2)" in lines
    assert _section(lines, "By family") == [
        "By family           checked  denied   notes",
        "  I intent                4       4       0",
        "  H hash                  1       0       1",
        "  S scope                 1       1       0",
        "  T thrash                1       0       1",
        "  - none (allowed)        1       0       0",
    ]
    assert _section(lines, "By reason") == [
        "By reason                     checked  denied   notes",
        "  I MODE_FORBIDS_MUTATION           3       3       0",
        "  H HYPOTHETICAL_UNREACHABLE        1       0       1",
        "  I MUTABILITY_UNPROVEN             1       1       0",
        "  S PATH_OUTSIDE_CONTRACT           1       1       0",
        "  T REPEATED_WITHOUT_CHANGE         1       0       1",
        "  - WITHIN_CONTRACT                 1       0       0",
    ]
    # Ties break by name; only three are shown.
    assert _section(lines, "Top denied") == [
        "Top denied reasons (of 5 denials):",
        "  1. MODE_FORBIDS_MUTATION      3",
        "  2. MUTABILITY_UNPROVEN        1",
        "  3. PATH_OUTSIDE_CONTRACT      1",
    ]
    recent = _section(lines, "Last 5 events")
    assert len(recent) == 12 and recent[0].startswith("Last 5 events (oldest first, UTC;")
    assert recent[-1].startswith("Why: python3 sts.py explain <event>")
    # The latest five by time, not by file order: 00:00:04 was written fourth
    # and is in; 00:00:03, written first, is out.
    assert recent[1] == "  2026-01-01 00:00:04  deny   %s  I/MODE_FORBIDS_MUTATION" % ids[3][:12]
    assert recent[2] == "    Bash (unknown)"   # (these events keep no command: see test_ask)
    assert recent[3].startswith("  2026-01-01 00:01:00  deny   evt_")
    assert recent[9].endswith("  T/REPEATED_WITHOUT_CHANGE")
    assert all(len(line) <= 80 for line in lines)


def test_cli_status_shows_the_tool_of_an_event_that_keeps_no_text(store, capsys):
    """An event of an older sts (or an allowed call) keeps no command or path:
    the status names its tool and kind, and makes up nothing."""
    _arm(store, allowedPaths=["src/**"])
    store.append_audit(KEY, event(KEY, tool="Edit", mutability="write", paths=3))
    text = "\n".join(_status_out(store, capsys, "--session", "s1"))
    assert "\n    Edit (write)\n" in text
    assert "Contract: change guard files=src/** deps=ask hash=deny undo=ask" in text
    assert text.count("src/") == 1


def _long_session(store):
    """Everything long at once: files=, unresolved reasons, a directive error,
    a long tool name with control characters and an absurd reason code."""
    def change(loaded):
        state = loaded.state
        state["contract"].update(mode="change", level="lock", agentBudget=3, source="directive",
                                 allowedPaths=["src/very/long/directory/name/number/%d/**" % n
                                               for n in range(6)])
        state["delegation"]["unresolved"] = {"a%d" % n: "reason_number_%d_unproven" % n
                                             for n in range(8)}
        state["directiveError"] = {"code": "INVALID_DIRECTIVE_TOKEN", "token": "x",
                                   "message": "the token " + "y" * 150 + " is not a field"}
        return state, None
    store.update(KEY, change)
    reason = "VERY_" * 30 + "LONG"
    for n in range(3):
        store.append_audit(KEY, event(KEY, tool="mcp__server__" + "t" * 90 + "\x1b[31m",
                                      reason=reason, family="S", outcome="deny_and_explain",
                                      at="2026-01-01T00:00:0%d.000Z" % n))
    return reason


def test_cli_every_line_fits_80_columns_even_when_everything_is_long(store, capsys):
    reason = _long_session(store)
    lines = _status_out(store, capsys, "--session", "s1")
    too_long = [line for line in lines if len(line) > 80]
    assert too_long == []
    text = "\n".join(lines)
    assert "\x1b" not in text  # control characters never reach the terminal
    # Wrapped lines keep their leading word and continue indented.
    assert lines[2].startswith("Contract: change lock files=src/very/long/")
    assert lines[3].startswith("  ")
    assert any(line.startswith("Unresolved activity: reason_number_0_unproven") for line in lines)
    assert any(line.startswith("Directive error: INVALID_DIRECTIVE_TOKEN") for line in lines)
    # The fields text survives the wrapping, broken only between patterns.
    fields = lines[2:lines.index("Set by: a $stop-that-shit directive in a prompt")]
    spec = sts.inspection_response(("status",), store, KEY).split("\n")[2]
    assert "".join(fields).replace(" ", "") == spec.replace(" ", "")
    for n in range(6):
        assert any("src/very/long/directory/name/number/%d/**" % n in line for line in fields)
    # The event line keeps its reason visible and shortens the tool name.
    recent = _section(lines, "Last 3 events")
    assert recent[1].startswith("  2026-01-01 00:00:00  deny   evt_")
    assert "  S/" + reason[:20] in recent[1] and recent[1].endswith("...")
    assert recent[2].startswith("    mcp__server__") and recent[2].endswith("...")
    top = _section(lines, "Top denied")
    assert top[1].startswith("  1. " + reason[:40]) and top[1].endswith("...      3")
    code, out, _ = _cli(store, capsys, "runtime", "all")
    assert code == 0 and all(len(line) <= 80 for line in out.split("\n"))


def test_prompt_status_keeps_its_exact_lines_when_long(store):
    """Only the terminal wraps; the prompt answer keeps each line whole."""
    _long_session(store)
    lines = sts.inspection_response(("status",), store, KEY).split("\n")
    assert lines[2].startswith("Contract: change lock files=src/very/long/directory/")
    assert lines[2].endswith("number/5/** deps=ask hash=deny undo=ask agents=3") and len(lines[2]) > 80
    assert lines[3] == "Set by: a $stop-that-shit directive in a prompt"


def test_cli_status_json_shape(store, capsys):
    _arm(store)
    ids = _fill(store)
    store.annotate_host_effect(ids[3], "observed_blocked")
    sts.inspection_response(("label", ids[3], "correct"), store, KEY)
    code, out, _ = _cli(store, capsys, "status", "--session", "s1", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["sessionKey"] == KEY and doc["controlState"] == "ARMED"
    assert doc["contract"]["mode"] == "change"
    # Scripts read the budget as a number: 2**53 - 1 means unlimited (README).
    assert doc["contract"]["agentBudget"] == sts.MAX_SAFE_INTEGER
    assert doc["hostEffect"] == "observed_blocked"  # the latest event, 00:00:04
    assert doc["lastActivity"] == "2026-01-01T00:00:04.000Z"
    assert doc["counts"] == {"checked": 4, "allowed": 1, "denied": 2, "notes": 1}
    assert doc["byFamily"] == {
        "-": {"checked": 1, "allowed": 1, "denied": 0, "notes": 0},
        "H": {"checked": 1, "allowed": 0, "denied": 0, "notes": 1},
        "I": {"checked": 2, "allowed": 0, "denied": 2, "notes": 0},
    }
    assert doc["byReason"]["MODE_FORBIDS_MUTATION"] == {
        "family": "I", "checked": 1, "allowed": 0, "denied": 1, "notes": 0}
    assert doc["topDenied"] == [{"reasonCode": "MODE_FORBIDS_MUTATION", "denied": 1},
                                {"reasonCode": "MUTABILITY_UNPROVEN", "denied": 1}]
    assert doc["summary"]["checkedActions"] == 4 and doc["summary"]["damagedRecords"] == 1
    recent = doc["recentEvents"]
    assert [e["occurredAt"][-9:-5] for e in recent] == ["0:01", "0:02", "0:03", "0:04"]
    assert recent[-1]["hostEffect"] == "observed_blocked" and recent[-1]["label"] == "correct"
    assert recent[0]["hostEffect"] == "unobserved" and recent[0]["label"] is None


def _session_rows(out):
    lines = out.rstrip("\n").split("\n")
    head = lines.index(next(line for line in lines if line.startswith("SESSION KEY")))
    return lines[head:]


def test_cli_runtime_all_one_line_per_session_sorted_by_activity(store, capsys):
    quiet, busy, damaged, unlogged = (sts.session_key(n) for n in ("q", "b", "d", "u"))
    _arm(store, busy, mode="review")
    store.append_audit(busy, event(busy, at="2026-03-01T10:00:00.000Z"))
    store.append_audit(busy, event(busy, reason="WITHIN_CONTRACT", family=None, outcome="allow",
                                   response="none", at="2026-03-01T10:05:00.000Z"))
    store.append_audit(quiet, event(quiet, reason="REPEATED_WITHOUT_CHANGE", family="T",
                                    outcome="report_and_defer", response="context_returned",
                                    at="2026-02-01T09:00:00.000Z"))
    os.makedirs(store.path("sessions"), exist_ok=True)
    with open(store.path("sessions", damaged + ".json"), "w") as fh:
        fh.write("{")
    _arm(store, unlogged, mode="answer", level="lock")
    past = 1577836800  # 2020-01-01T00:00:00Z: the state file's time is its last activity
    os.utime(store.path("sessions", unlogged + ".json"), (past, past))
    os.utime(store.path("sessions", damaged + ".json"), (past + 60, past + 60))
    code, out, err = _cli(store, capsys, "runtime", "all")
    assert code == 0 and err == ""
    assert out.startswith("Stop That Shit runtime (host effect not observed)\n"
                          "Checked actions: 3\n")
    assert "\nSessions: 4 (oldest activity first; times in UTC)\n" in out
    assert _session_rows(out) == [
        "SESSION KEY              LAST ACTIVITY     CONTRACT         CHECKED DENIED NOTES",
        "%s 2020-01-01 00:00  answer/lock            0      0     0" % unlogged,
        "%s 2020-01-01 00:01  (damaged state)        0      0     0" % damaged,
        "%s 2026-02-01 09:00  (no state)             1      0     1" % quiet,
        "%s 2026-03-01 10:05  review/guard           2      1     0" % busy,
        "TOTAL (4 sessions)                                                3      1     1",
    ]
    assert all(len(line) <= 80 for line in out.split("\n"))
    # --session narrows runtime to that session's row, without a total.
    code, out, _ = _cli(store, capsys, "runtime", "--session", "b")
    assert code == 0 and "Checked actions: 2\n" in out
    assert _session_rows(out)[1:] == [
        "%s 2026-03-01 10:05  review/guard           2      1     0" % busy]


def test_cli_runtime_all_json_sessions(store, capsys):
    ids = _fill(store)
    _arm(store)
    code, out, _ = _cli(store, capsys, "runtime", "all", "--json")
    assert code == 0
    doc = json.loads(out)
    assert sorted(doc) == ["annotations", "events", "schemaVersion", "sessions", "summary"]
    assert [e["eventId"] for e in doc["events"]][:4] == [ids[1], ids[2], ids[0], ids[3]]
    mine = [row for row in doc["sessions"] if row["sessionKey"] == KEY]
    assert mine == [{"sessionKey": KEY, "lastActivity": "2026-01-01T00:00:04.000Z",
                     "state": "ok", "contract": {"mode": "change", "level": "guard"},
                     "checked": 4, "allowed": 1, "denied": 2, "notes": 1}]
    other = [row for row in doc["sessions"] if row["sessionKey"] != KEY]
    assert len(other) == 1 and other[0]["state"] == "missing" and other[0]["contract"] is None
    assert other[0]["denied"] == 1
    # One event per line: a 100,000-event answer stays cheap to write and to grep.
    assert sum(1 for line in out.split("\n") if line.startswith('    {"schemaVersion"')) == 5


def test_cli_empty_data_dir(store, capsys, sts_home):
    for args in (("status",), ("runtime",), ("status", "--json")):
        code, out, err = _cli(store, capsys, *args)
        assert code == 1 and out == ""
        assert err.count("\n") == 1 and "no session in %s yet" % sts_home in err
    code, out, err = _cli(store, capsys, "runtime", "all")
    assert code == 0 and err == ""
    assert out.split("\n")[1] == "Checked actions: 0"
    assert "Sessions: none in %s yet." % sts_home in out
    code, out, _ = _cli(store, capsys, "runtime", "all", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["events"] == [] and doc["sessions"] == []
    # A named session that never ran is an error, not a made-up empty session.
    for command in ("status", "runtime"):
        code, out, err = _cli(store, capsys, command, "--session", "fresh")
        assert code == 1 and out == "" and "no session fresh" in err


def test_observed_blocked_shows_in_explain_and_status(store, capsys):
    _arm(store)
    first = event(KEY, at="2026-01-01T00:00:01.000Z")
    last = event(KEY, at="2026-01-01T00:00:02.000Z")
    store.append_audit(KEY, first)
    store.append_audit(KEY, last)
    lines = _status_out(store, capsys, "--session", "s1")
    assert not any(line.startswith("Last call:") for line in lines)   # nothing to say
    store.annotate_host_effect(last["eventId"], "observed_blocked")
    lines = _status_out(store, capsys, "--session", "s1")
    blocked = "the host reported it blocked the call"
    assert "Last call: " + blocked in lines
    assert "    Bash (unknown) (%s)" % blocked in lines
    assert "    Bash (unknown)" in lines   # the first event: nothing reported
    code, out, _ = _cli(store, capsys, "explain", last["eventId"])
    assert code == 0 and "\nWhat the host did: %s\n" % blocked in out
    assert "Last call: " + blocked in sts.inspection_response(("status",), store, KEY)
    assert "What the host did: " + blocked in sts.inspection_response(
        ("explain", last["eventId"]), store, KEY)
    # The later annotation wins, and the log itself is never rewritten.
    store.annotate_host_effect(last["eventId"], "observed_ran")
    assert "Last call: the host reported it ran the call" in sts.inspection_response(
        ("status",), store, KEY)
    with open(store.path("runtime", KEY + ".jsonl")) as fh:
        assert '"hostEffect":"unobserved"' in fh.read()


def test_explain_finds_only_a_valid_record_with_that_exact_id(store):
    wanted = event(KEY)
    eid = wanted["eventId"]
    # The id appears first inside another record's tool name and in a damaged
    # line; neither is the event.
    store.append_audit(KEY, event(KEY, tool="copy-of-" + eid))
    with open(store.path("runtime", KEY + ".jsonl"), "a") as fh:
        fh.write('{"eventId":"%s", broken\n' % eid)
    assert sts.find_event(store, eid) is None
    store.append_audit(sts.session_key("s2"), wanted)
    assert sts.find_event(store, eid.upper().replace("EVT_", "evt_")) == wanted
    assert sts.find_event(store, "evt_") is None and sts.find_event(store, "nope") is None


def test_impossible_times_are_damaged_records(store):
    """The faster time check rejects what strptime rejected: Feb 30, hour 24, second 60."""
    for at in ("2026-02-30T00:00:00.000Z", "2026-01-01T24:00:00.000Z",
               "2026-01-01T00:60:00.000Z", "2026-01-01T00:00:60.000Z",
               "0000-01-01T00:00:00.000Z"):
        store.append_audit(KEY, event(KEY, at=at))
    store.append_audit(KEY, event(KEY, at="2024-02-29T23:59:59.999Z"))
    text = sts.inspection_response(("runtime",), store, KEY).split("\n")
    assert text[1] == "Checked actions: 1" and text[-1] == "Damaged records ignored: 5"


def test_runtime_all_reads_each_log_once(store, monkeypatch):
    """One pass: every log is opened once and annotations are read once."""
    for name in ("a", "b", "c"):
        key = sts.session_key(name)
        _arm(store, key)
        store.append_audit(key, event(key))
    opened = []
    real_open = open

    def counting_open(path, *args, **kwargs):
        opened.append(os.path.basename(str(path)))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    code = sts.cmd_inspect(["runtime", "all"], store)
    logs = [name for name in opened if name.endswith(".jsonl")]
    assert code == 0
    assert sorted(logs) == sorted(["annotations.jsonl", "removed.jsonl"] +
                                  [sts.session_key(n) + ".jsonl" for n in "abc"])
    # Once each index has every line (the hook's folds keep them so), no log
    # is opened at all.
    for name in "abc":
        sts.audit_index(store, sts.session_key(name))
    del opened[:]
    assert sts.cmd_inspect(["runtime", "all"], store) == 0
    assert sorted(n for n in opened if n.endswith(".jsonl")) == ["annotations.jsonl",
                                                                 "removed.jsonl"]


def test_cli_runtime_all_in_a_real_process(store):
    import subprocess
    import sys
    from conftest import STS_PY
    _arm(store)
    _fill(store)
    env = dict(os.environ, STS_HOME=store.root)
    done = subprocess.run([sys.executable, STS_PY, "runtime", "all"], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0 and done.stderr == ""
    assert "TOTAL (2 sessions)" in done.stdout
    done = subprocess.run([sys.executable, STS_PY, "status", "--session", "s1"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "Checked actions: 4 (allowed 1" in done.stdout


def test_runtime_all_skips_an_unreadable_log(store, capsys):
    good, bad = sts.session_key("good"), sts.session_key("bad")
    store.append_audit(good, event(good))
    os.makedirs(store.path("runtime", bad + ".jsonl"))  # opening it fails
    code, out, err = _cli(store, capsys, "runtime", "all")
    assert code == 0 and err == ""
    assert "Checked actions: 1\n" in out and "Unreadable logs skipped: 1\n" in out
    code, out, _ = _cli(store, capsys, "runtime", "all", "--json")
    assert json.loads(out)["summary"]["unreadableLogs"] == 1
    assert "Unreadable" not in sts.inspection_response(("runtime",), store, good)
