"""The append-only runtime audit (one line per judged tool call, one O_APPEND write
each), its readers, and the host-effect annotations."""
import json
import os
import stat

import pytest

import sts
from hooks import iter_audit, annotate_host_effect


def event(key="k" * 24, *, tool="Bash", mutability="unknown", reason="MUTABILITY_UNPROVEN",
          family="I", outcome="require_user_approval", response="permission_deny_returned",
          state="armed", mode="review", analysis=None, at=None, event_id=None, paths=0):
    action = {"toolName": tool, "mutability": mutability, "delegationCount": 0,
              "pathCount": paths, "hashIntent": False, "dependencyIntent": False,
              "unboundedDelegation": False}
    if analysis:
        action["analysisReason"] = analysis
    return {
        "schemaVersion": 1, "eventId": event_id or sts.new_event_id(),
        "occurredAt": at or sts.utc_now_iso(), "sessionKey": key,
        "policyRevision": {"pluginVersion": sts.VERSION, "controlVersion": 2},
        "controlState": state, "action": action,
        "contract": {"mode": mode, "level": "guard", "agentBudget": 1, "reservedUpperBound": 0,
                     "countUnproven": False, "hashPolicy": "deny", "dependencyPolicy": "ask",
                     "allowedPathCount": 0},
        "decision": {"policyOutcome": outcome, "family": family, "reasonCode": reason,
                     "responseOutcome": response, "hostEffect": "unobserved"},
    }


def _log(store, key):
    return store.path("runtime", key + ".jsonl")


def test_append_writes_one_compact_line_with_private_modes(store, sts_home):
    rec = event(tool="Écrire")
    assert store.append_audit("k" * 24, rec) is True
    with open(_log(store, "k" * 24), "rb") as fh:
        data = fh.read()
    assert data.count(b"\n") == 1 and data.endswith(b"\n")
    assert "Écrire".encode() in data  # ensure_ascii=False
    assert b": " not in data and b", " not in data  # compact separators
    assert json.loads(data) == rec
    assert stat.S_IMODE(os.stat(_log(store, "k" * 24)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store.path("runtime")).st_mode) == 0o700


def test_append_failure_returns_false_when_runtime_is_a_file(store, sts_home):
    os.makedirs(str(sts_home))
    with open(store.path("runtime"), "w") as fh:
        fh.write("not a dir")
    assert store.append_audit("k" * 24, event()) is False
    with open(store.path("runtime")) as fh:
        assert fh.read() == "not a dir"


def test_append_failure_returns_false_for_unencodable_record(store):
    assert store.append_audit("k" * 24, {"bad": "\udc80"}) is False
    assert store.append_audit("k" * 24, {"bad": object()}) is False


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions")
def test_append_failure_returns_false_without_permission(store, sts_home):
    os.makedirs(store.path("runtime"))
    os.chmod(store.path("runtime"), 0o500)
    try:
        assert store.append_audit("k" * 24, event()) is False
    finally:
        os.chmod(store.path("runtime"), 0o700)


def test_readers_skip_blank_and_count_damaged_lines(store):
    good = [event(at="2026-01-01T00:00:0%d.000Z" % i) for i in range(3)]
    os.makedirs(store.path("runtime"))
    bad_shapes = [
        dict(event(), schemaVersion=2), dict(event(), eventId="EVT_1"),
        dict(event(), occurredAt="yesterday"), dict(event(), controlState="off"),
        dict(event(), decision=dict(event()["decision"], reasonCode="lower_case")),
        dict(event(), action=dict(event()["action"], toolName=5)),
        dict(event(), occurredAt="2026-02-30T00:00:00.000Z"),
    ]
    with open(_log(store, "a" * 24), "wb") as fh:
        fh.write(json.dumps(good[0]).encode() + b"\n\n   \n")
        fh.write(b"{truncated\n\xff\xfe\n[]\n")
        for rec in bad_shapes:
            fh.write(json.dumps(rec).encode() + b"\n")
        fh.write(json.dumps(good[1]).encode() + b"\n")
    store.append_audit("b" * 24, good[2])
    counter = {}
    assert list(iter_audit(store, "a" * 24, counter)) == good[:2]
    assert counter["damaged"] == 3 + len(bad_shapes)
    everything = {}
    assert [r["eventId"] for r in iter_audit(store, None, everything)] == \
        [r["eventId"] for r in good]
    assert everything["damaged"] == 3 + len(bad_shapes)
    assert list(iter_audit(store, "c" * 24)) == []  # a missing log is empty


def test_annotations_last_wins_and_count_damaged(store):
    evt = sts.new_event_id()
    other = sts.new_event_id()
    os.makedirs(store.path("runtime"))
    lines = [
        {"schemaVersion": 1, "annotationId": "ann_1", "occurredAt": sts.utc_now_iso(),
         "eventId": evt, "label": "incorrect"},
        {"eventId": evt, "hostEffect": "observed_ran"},  # the minimal host-effect form
        {"schemaVersion": 1, "annotationId": "ann_2", "occurredAt": sts.utc_now_iso(),
         "eventId": evt, "label": "correct"},
        {"eventId": evt, "label": "WRONG"},
        {"eventId": "nope", "label": "correct"},
        {"eventId": other, "hostEffect": "observed_maybe"},
    ]
    with open(store.path("runtime", "annotations.jsonl"), "w") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")
        fh.write("garbage\n")
    annotate_host_effect(store, evt.upper().replace("EVT_", "evt_"), "observed_blocked")
    notes = sts.read_annotations(store)
    assert notes.labels == {evt: "correct"}
    assert notes.host_effects == {evt: "observed_blocked"}
    assert notes.damaged == 4
    assert len(notes.records) == 4


def test_annotate_host_effect_validates(store):
    with pytest.raises(ValueError):
        annotate_host_effect(store, sts.new_event_id(), "ran")
    with pytest.raises(ValueError):
        annotate_host_effect(store, "evt_xyz", "observed_ran")
    rec = annotate_host_effect(store, sts.new_event_id(), "observed_ran")
    assert rec["annotationId"].startswith("ann_") and rec["hostEffect"] == "observed_ran"


def test_no_annotations_file_is_empty(store):
    notes = sts.read_annotations(store)
    assert notes.labels == {} and notes.damaged == 0
