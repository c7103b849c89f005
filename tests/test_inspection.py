"""status / runtime / explain / label, as prompt commands and from the terminal (core.md 8.4, 10-L1)."""
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
        "mode=unconfirmed; agents=0/9007199254740991 reserved; hash=deny; deps=ask; "
        "files=unbounded.",
        "Authority source: default",
        "Host effect: unobserved",
        "Full counts: see runtime.",
    ]
    assert not os.path.exists(store.path("sessions"))  # read-only


def test_status_with_ledger_error_and_files(store):
    _with_ledger(store)
    before = open(store.path("sessions", KEY + ".json"), "rb").read()
    lines = sts.inspection_response(("status",), store, KEY).split("\n")
    assert lines == [
        "Stop That Shit status",
        "State: ARMED / change",
        "mode=change; agents=1/1 reserved; count unproven; hash=deny; deps=ask; files=unbounded.",
        "Authority source: directive",
        "Directive error: INVALID_DIRECTIVE_TOKEN: fix is not a directive field",
        "Unresolved activity: reused_action_id, unversioned_resume, legacy_protocol. Only a "
        "confirmed completion or a new host session clears this; never reset the ledger by hand.",
        "Host effect: unobserved",
        "Full counts: see runtime.",
    ]
    assert open(store.path("sessions", KEY + ".json"), "rb").read() == before


@pytest.mark.parametrize("paths,shown", [([], "files="), (["src/**", "a.js"], "files=src/**|a.js")])
def test_status_files_rendering(store, paths, shown):
    _arm(store, allowedPaths=paths)
    assert shown + "." in sts.inspection_response(("status",), store, KEY).split("\n")[2]


def test_status_in_recovery_shows_storage_line(store):
    os.makedirs(store.path("sessions"))
    with open(store.path("sessions", KEY + ".json"), "w") as fh:
        fh.write("{")
    lines = sts.inspection_response(("status",), store, KEY).split("\n")
    assert lines[1] == "State: ARMED / review"
    assert lines[3] == "Authority source: recovery"
    assert lines[4].startswith("STATE_DAMAGED: Session state is unreadable")
    assert lines[5].startswith("Unresolved activity: state_unavailable. ")


def test_status_host_effect_shows_observed_value(store):
    rec = event(KEY)
    store.append_audit(KEY, rec)
    store.annotate_host_effect(rec["eventId"], "observed_blocked")
    assert "Host effect: observed_blocked" in sts.inspection_response(("status",), store, KEY)


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
        "State: ARMED / review",
        "Action: Bash (unknown); paths=0",
        "Analysis: the program is not on the read-only list.",
        "Decision: require_user_approval / MUTABILITY_UNPROVEN",
        "Response: permission_deny_returned",
        "Host effect: unobserved",
        "Label: unlabeled",
    ]
    plain = event(KEY, state="observing", mode="unconfirmed", reason="CONTROL_INACTIVE",
                  family=None, outcome="allow", response="none", tool="Edit", mutability="write",
                  paths=2)
    store.append_audit(KEY, plain)
    store.annotate_host_effect(plain["eventId"], "observed_ran")
    sts.inspection_response(("label", plain["eventId"], "correct"), store, KEY)
    text = sts.inspection_response(("explain", plain["eventId"]), store, KEY).split("\n")
    assert text[1:] == ["State: OBSERVING / unconfirmed", "Action: Edit (write); paths=2",
                        "Decision: allow / CONTROL_INACTIVE", "Response: none",
                        "Host effect: observed_ran", "Label: correct"]
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
    assert "Events in this session: 0" in out
    code, out, _ = _cli(store, capsys, "status", "--session", "old")
    assert code == 0 and out.split("\n")[1] == "State: ARMED / review"
    code, out, _ = _cli(store, capsys, "status", "--session=never-seen")
    assert code == 0 and out.split("\n")[1] == "State: OBSERVING / unconfirmed"


def test_cli_status_details_fit_80_columns(store, capsys):
    _arm(store)
    _fill(store)
    code, out, _ = _cli(store, capsys, "status", "--session", "s1")
    assert code == 0
    lines = out.rstrip("\n").split("\n")
    assert lines[:2] == ["Stop That Shit status", "State: ARMED / change"]
    assert "Events in this session: 4" in lines
    assert any(line.startswith("By family: I=2") for line in lines)
    assert any("MODE_FORBIDS_MUTATION=1" in line for line in lines)
    # The reference lines keep their exact form; the added detail lines fit 80 columns.
    details = lines[lines.index("Full counts: see runtime.") + 1:]
    assert details and all(len(line) <= 80 for line in details)


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
