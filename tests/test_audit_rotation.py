"""The audit stays bounded: dated segments, a total limit, an index that status
and runtime read instead of the log, and nothing written is ever lost.

Every test writes through the real append path (Store.append_audit, as the
hook does) into a real data dir, with STS_AUDIT_MAX_MB set small so that
rotation, folding and removal happen within a few hundred lines.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

import sts
from hooks import ROOT, iter_audit

PY = sys.executable


def event(key, n, *, at=None, reason="MODE_FORBIDS_MUTATION", outcome="deny_and_explain",
          family="I"):
    return {
        "schemaVersion": 1, "eventId": "evt_%08x-0000-4000-8000-%012x" % (n, n),
        "occurredAt": at or "2026-11-30T10:%02d:%02d.%03dZ" % (n // 60000 % 60,
                                                               n // 1000 % 60, n % 1000),
        "sessionKey": key, "policyRevision": {"pluginVersion": sts.VERSION, "controlVersion": 2},
        "controlState": "armed",
        "action": {"toolName": "Write", "mutability": "write", "delegationCount": 0,
                   "pathCount": 1, "hashIntent": False, "dependencyIntent": False,
                   "unboundedDelegation": False},
        "contract": {"mode": "review", "level": "guard", "agentBudget": 1,
                     "reservedUpperBound": 0, "countUnproven": False, "hashPolicy": "deny",
                     "dependencyPolicy": "ask", "allowedPathCount": None},
        "decision": {"policyOutcome": outcome, "family": family, "reasonCode": reason,
                     "responseOutcome": "permission_deny_returned", "hostEffect": "unobserved"},
    }


def all_lines(store):
    """Every event id the readers find, with how often its bytes occur in the logs."""
    data = b""
    for names in sts.audit_files(store).values():
        for name in names:
            with open(store.path("runtime", name), "rb") as fh:
                data += fh.read()
    ids = [record["eventId"] for record in iter_audit(store)]
    return {event_id: data.count(event_id.encode()) for event_id in ids}


def full_scan(store, key):
    """What the index must equal: a tally and the last events from every line."""
    tally, events, counter = sts._Tally(), [], {"damaged": 0}
    for record in iter_audit(store, key, counter):
        tally.add(record, sts._NO_NOTES)
        events.append(record)
    return tally, sorted(events, key=lambda r: r["occurredAt"])[-5:], counter["damaged"]


def assert_index_is_exact(store, key):
    index = sts.audit_index(store, key)
    tally, recent, damaged = full_scan(store, key)
    assert index.tally.to_json() == tally.to_json()
    assert index.recent == recent
    assert index.damaged == damaged


@pytest.fixture
def small_audit(monkeypatch):
    """A limit of 0.5 MB: 32 KiB segments, a fold every 32 KiB (about 45 lines)."""
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0.5")
    return 512 * 1024


# ---- segments -------------------------------------------------------------------


def test_a_log_past_the_segment_size_becomes_dated_segments(store, small_audit):
    key = "a" * 24
    for n in range(300):
        assert store.append_audit(key, event(key, n)) is True
    names = sts.audit_files(store)[key]
    segments, current = names[:-1], names[-1]
    assert current == key + ".jsonl" and len(segments) >= 4
    for name in segments:
        stamp = name[len(key) + 1:-len(".jsonl")]
        assert stamp[8] == "T" and stamp[:8].isdigit()
        assert stamp.rstrip("0123456789").endswith("Z")   # then the process and a count
        assert os.path.getsize(store.path("runtime", name)) >= 32 * 1024
    # Every line once, in order, across the segments and the current log.
    assert [r["eventId"] for r in iter_audit(store, key)] == \
        [event(key, n)["eventId"] for n in range(300)]


def test_the_limit_variable_sets_the_segment_size(monkeypatch):
    for value, limit in (("", 100 << 20), ("100", 100 << 20), ("2", 2 << 20),
                         ("0.5", 512 << 10), ("junk", 100 << 20), ("-3", 100 << 20),
                         ("nan", 100 << 20), ("0", 0)):
        monkeypatch.setenv("STS_AUDIT_MAX_MB", value)
        assert sts.audit_limit_bytes() == limit, value
    assert sts._audit_segment_bytes(100 << 20) == (100 << 20) // 16
    assert sts._audit_segment_bytes(1 << 10) == 32 * 1024   # never tiny segments


def test_the_index_equals_a_full_scan_through_rotations(store, small_audit):
    key = "b" * 24
    rng = random.Random(5)
    mix = [("MODE_FORBIDS_MUTATION", "deny_and_explain", "I"),
           ("WITHIN_CONTRACT", "allow", None), ("REPEATED_WITHOUT_CHANGE", "report_and_defer", "T"),
           ("HASH_NOT_AUTHORIZED", "require_user_approval", "H")]
    for n in range(400):
        reason, outcome, family = rng.choice(mix)
        # Times a little out of order, as concurrent hooks write them.
        at = "2026-11-30T11:%02d:%02d.%03dZ" % (n // 60 % 60, n % 60, rng.randrange(1000))
        store.append_audit(key, event(key, n, at=at, reason=reason, outcome=outcome,
                                      family=family))
    assert len(sts.audit_files(store)[key]) > 4
    assert_index_is_exact(store, key)
    # A damaged line is counted like a full scan counts it...
    with open(store.path("runtime", key + ".jsonl"), "ab") as fh:
        fh.write(b"{not json\n")
    assert_index_is_exact(store, key)
    assert sts.audit_index(store, key).damaged == 1
    # ...and a line without its newline yet is left for the next fold.
    with open(store.path("runtime", key + ".jsonl"), "ab") as fh:
        fh.write(b'{"schemaVersion": 1')
    assert sts.audit_index(store, key).damaged == 1
    assert sts.audit_index(store, key).tally.to_json() == full_scan(store, key)[0].to_json()


def test_a_damaged_or_missing_index_is_rebuilt_from_the_logs(store, small_audit):
    key = "c" * 24
    for n in range(120):
        store.append_audit(key, event(key, n))
    path = store.path("runtime", "index", key + ".json")
    for damage in (b"", b"{", b'{"schemaVersion": 1, "sessionKey": "x", "files": []}',
                   b'{"schemaVersion": 1, "sessionKey": "' + key.encode() +
                   b'", "files": [{"ino": "no"}]}'):
        with open(path, "wb") as fh:
            fh.write(damage)
        assert_index_is_exact(store, key)
    os.unlink(path)
    assert_index_is_exact(store, key)


def test_a_damaged_event_among_the_saved_last_events_means_a_refold(store, small_audit):
    """The saved last events are checked when shown: one that is not a valid
    event (a hand edit, a damaged disk) makes the reader fold the logs again."""
    key = "e" * 24
    for n in range(120):
        store.append_audit(key, event(key, n))
    sts.audit_index(store, key)
    path = store.path("runtime", "index", key + ".json")
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    last = max(doc["files"], key=lambda f: f["recent"][-1][1]["occurredAt"] if f["recent"]
               else "")
    last["recent"][-1][1]["eventId"] = "not an event id"
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    assert_index_is_exact(store, key)
    assert sts.audit_index(store, key).recent[-1]["eventId"] == event(key, 119)["eventId"]


def test_an_index_entry_for_a_reused_inode_is_not_trusted(store, small_audit):
    """A removed file's inode may come back for a new file of the same session."""
    key = "d" * 24
    for n in range(10):
        store.append_audit(key, event(key, n))
    assert sts.audit_index(store, key).tally.row[0] == 10
    log = store.path("runtime", key + ".jsonl")
    saved = open(log, "rb").read()
    with open(log, "wb") as fh:   # same inode, other lines, same length
        fh.write(saved.replace(b"evt_0000", b"evt_1111"))
    index = sts.audit_index(store, key)
    assert index.tally.row[0] == 10
    assert [e["eventId"][:8] for e in index.recent] == ["evt_1111"] * 5


# ---- the bound --------------------------------------------------------------------


def _session(store, key, lines, written_at, first=0):
    for n in range(first, first + lines):
        store.append_audit(key, event(key, n))
    for name in sts.audit_files(store)[key]:
        os.utime(store.path("runtime", name), (written_at, written_at))


def _total(store):
    return sum(os.path.getsize(store.path("runtime", name))
               for names in sts.audit_files(store).values() for name in names)


def test_idle_sessions_are_removed_oldest_first_and_active_ones_never(store, monkeypatch):
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0")   # no upkeep while the sessions are built
    now = time.time()
    day = 86400
    idle = ["%024x" % n for n in range(1, 6)]     # idle 30, 29, ... 26 days
    active = ["%024x" % n for n in range(10, 13)]  # written within the week
    for age, key in enumerate(idle):
        _session(store, key, 60, now - (30 - age) * day)
    for age, key in enumerate(active):
        _session(store, key, 60, now - age * day)
    sizes = {key: sum(os.path.getsize(store.path("runtime", n))
                      for n in sts.audit_files(store)[key]) for key in idle + active}
    # The smallest limit that removing the two oldest brings within 90% of.
    remaining = sum(sizes.values()) - sizes[idle[0]] - sizes[idle[1]]
    limit = remaining
    while limit - limit // 10 < remaining:
        limit += 1
    removed = store.prune_audit(limit, now=now)
    left = sts.audit_files(store)
    assert idle[0] not in left and idle[1] not in left    # the two oldest went
    assert all(key in left for key in idle[2:] + active)
    assert removed == sizes[idle[0]] + sizes[idle[1]]
    assert _total(store) <= limit - limit // 10
    # Removal is recorded, and a session with nothing left has no index either.
    records = [json.loads(line) for line in open(store.path("runtime", "removed.jsonl"))]
    assert {r["sessionKey"] for r in records} == {idle[0], idle[1]}
    assert sum(r["bytes"] for r in records) == removed
    assert not os.path.exists(store.path("runtime", "index", idle[0] + ".json"))
    # Active sessions stay even when they alone are over the limit.
    assert store.prune_audit(1, now=now) > 0
    assert set(sts.audit_files(store)) == set(active)
    # The caller's own session is active whatever its files' times say.
    for name in sts.audit_files(store)[active[0]]:
        os.utime(store.path("runtime", name), (now - 90 * day, now - 90 * day))
    store.prune_audit(1, keep=active[0], now=now)
    assert active[0] in sts.audit_files(store)


def test_a_new_session_log_triggers_the_bound(store, monkeypatch):
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0")
    old = time.time() - 40 * 86400
    for n in range(20):
        _session(store, "%024x" % (100 + n), 40, old)
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0.25")
    assert _total(store) > 256 * 1024
    store.append_audit("e" * 24, event("e" * 24, 1))   # the first line of a new session
    assert _total(store) <= 256 * 1024
    assert "e" * 24 in sts.audit_files(store)


def test_a_pruner_killed_after_claiming_a_file_is_finished_by_the_next(store, monkeypatch):
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0")
    _session(store, "f" * 24, 50, time.time() - 40 * 86400)
    name = sts.audit_files(store)["f" * 24][-1]
    claimed = store.path("runtime", name + ".removing")
    os.rename(store.path("runtime", name), claimed)   # where a killed pruner stopped
    store.prune_audit(10 << 20)
    assert not os.path.exists(claimed)
    records = [json.loads(line) for line in open(store.path("runtime", "removed.jsonl"))]
    assert [r["file"] for r in records] == [name]


def test_a_busy_pruner_makes_others_skip_instead_of_wait(store, monkeypatch):
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0")
    _session(store, "9" * 24, 50, time.time() - 40 * 86400)
    os.makedirs(store.path("runtime", ".prune.lock"))
    assert store.prune_audit(1) == 0
    assert "9" * 24 in sts.audit_files(store)
    old = time.time() - 120   # a pruner that died long ago: its lock is taken over
    os.utime(store.path("runtime", ".prune.lock"), (old, old))
    assert store.prune_audit(1) > 0


def test_removed_jsonl_is_compacted_into_one_total(store, monkeypatch):
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0")
    os.makedirs(store.path("runtime"), exist_ok=True)
    with open(store.path("runtime", "removed.jsonl"), "w") as fh:
        for n in range(2000):
            fh.write(json.dumps({"schemaVersion": 1, "removedAt": "2026-11-01T00:00:00.000Z",
                                 "sessionKey": "%024x" % n, "file": "x", "bytes": 1000,
                                 "lastWriteAt": "2026-10-%02dT00:00:00.000Z" % (n % 28 + 1)})
                     + "\n")
    _session(store, "8" * 24, 30, time.time() - 40 * 86400)
    store.prune_audit(1)
    seen = sts.removed_audit(store)
    assert seen["files"] == 2001 and seen["bytes"] >= 2000 * 1000
    assert seen["newestRemoved"] >= "2026-10-28T00:00:00.000Z"
    assert os.path.getsize(store.path("runtime", "removed.jsonl")) < 4096


# ---- what the readers say ---------------------------------------------------------------


def test_runtime_explain_and_label_say_when_older_files_were_removed(store, monkeypatch, capsys):
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0")
    old_key, new_key = "1" * 24, "2" * 24
    _session(store, old_key, 30, time.time() - 40 * 86400)
    _session(store, new_key, 30, time.time(), first=1000)
    gone = event(old_key, 3)["eventId"]
    store.prune_audit(1)
    assert sts.cmd_inspect(["runtime", "all"], store) == 0
    out = capsys.readouterr().out
    assert "Older audit removed: 1 file" in out and "STS_AUDIT_MAX_MB" in out
    assert "Checked actions: 30" in out
    assert sts.cmd_inspect(["runtime", "all", "--json"], store) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["removedAudit"]["files"] == 1 and len(doc["events"]) == 30
    assert sts.cmd_inspect(["explain", gone], store) == 1
    assert "older audit files were removed" in capsys.readouterr().err
    assert sts.cmd_inspect(["label", gone, "correct"], store) == 1
    assert "older audit files were removed" in capsys.readouterr().err
    kept = event(new_key, 1003)["eventId"]
    assert sts.cmd_inspect(["label", kept, "correct"], store) == 0
    label = json.loads(open(store.path("runtime", "annotations.jsonl")).read())
    assert label["sessionKey"] == new_key


def test_status_and_runtime_count_labels_with_or_without_a_session_key(store, capsys):
    key = sts.session_key("labelled")
    for n in range(8):
        store.append_audit(key, event(key, n))
    ids = [event(key, n)["eventId"] for n in range(8)]
    sts.record_label(store, ids[0], "correct")                 # names its session
    with open(store.path("runtime", "annotations.jsonl"), "a") as fh:   # by hand: no key
        fh.write(json.dumps({"eventId": ids[1], "label": "incorrect"}) + "\n")
        fh.write(json.dumps({"eventId": ids[7], "hostEffect": "observed_blocked"}) + "\n")
        fh.write(json.dumps({"eventId": "evt_ffff", "label": "correct"}) + "\n")  # elsewhere
    assert sts.cmd_inspect(["status", "--session", "labelled", "--json"], store) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["labels"] == {"correct": 1, "incorrect": 1, "inconclusive": 0}
    assert doc["summary"]["hostEffects"]["observed_blocked"] == 1
    assert doc["hostEffect"] == "observed_blocked"
    # The lookup of the hand-written lines is remembered in the index.
    saved = json.load(open(store.path("runtime", "index", key + ".json")))
    assert sorted(saved["noted"]["ids"]) == sorted([ids[1], ids[7]])


def test_status_reads_the_index_not_the_log(store, monkeypatch, capsys):
    key = sts.session_key("long")
    for n in range(2000):
        store.append_audit(key, event(key, n))
    sts.audit_index(store, key)   # as a reader or the hook's last fold left it
    read = []
    real_open = open

    def counting_open(path, mode="r", *args, **kwargs):
        if str(path).endswith(".jsonl") and "annotations" not in str(path) \
                and "removed" not in str(path):
            read.append(os.path.basename(str(path)))
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    assert sts.cmd_inspect(["status", "--session", "long"], store) == 0
    assert sts.cmd_inspect(["runtime", "--session", "long"], store) == 0
    assert read == []
    out = capsys.readouterr().out
    assert "Checked actions: 2000" in out


# ---- full and read-only disks ---------------------------------------------------------


def test_failing_rename_and_index_writes_lose_nothing(store, small_audit, monkeypatch):
    """Rotation and folding fail (as on a read-only or full disk): every
    append still succeeds and every line stays readable, once."""
    key = "3" * 24

    def refuse(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sts.os, "rename", refuse)
    monkeypatch.setattr(sts.os, "replace", refuse)
    for n in range(200):
        assert store.append_audit(key, event(key, n)) is True
    assert sts.audit_files(store)[key] == [key + ".jsonl"]   # no rotation happened
    assert sorted(all_lines(store).values()) == [1] * 200
    monkeypatch.undo()
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0.5")
    for n in range(1000, 1060):                             # rotation works again later
        store.append_audit(key, event(key, n))
    assert len(sts.audit_files(store)[key]) > 1
    assert_index_is_exact(store, key)


def test_rotations_in_the_same_millisecond_keep_every_segment(store, small_audit, monkeypatch):
    """Segments are named by the millisecond they were made in, then the
    process and a count: when two share a millisecond (a busy machine), the
    second is never written over the first, and every reader finds it."""
    import time
    key = "4" * 24
    monkeypatch.setattr(time, "time", lambda: 1764600000.25)    # one frozen millisecond
    for n in range(200):                                        # about four segments
        assert store.append_audit(key, event(key, n)) is True
    names = sts.audit_files(store)[key]
    assert len(names) >= 4 and names[-1] == key + ".jsonl"
    assert len(set(names)) == len(names)
    lines = all_lines(store)
    assert len(lines) == 200 and set(lines.values()) == {1}
    assert_index_is_exact(store, key)


@pytest.fixture
def tiny_disk(tmp_path):
    """A real 300 KiB tmpfs (needs root and mount); skipped where it cannot be made."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mount_point)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % done.stderr.decode().strip())
    yield str(mount_point)
    subprocess.run(["umount", "-l", str(mount_point)])


def test_a_full_disk_loses_no_written_line_and_fails_no_call(tiny_disk, monkeypatch):
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0.5")
    store = sts.Store(os.path.join(tiny_disk, "home"))
    with open(os.path.join(tiny_disk, "filler"), "wb") as fh:
        fh.write(b"x" * 40000)
    key = "4" * 24
    written = []
    for n in range(1000):
        if store.append_audit(key, event(key, n)):
            written.append(event(key, n)["eventId"])
    assert 100 < len(written) < 1000     # the disk filled up on the way
    lines = all_lines(store)
    assert sorted(lines) == sorted(written) and set(lines.values()) == {1}
    # Space comes back (the user cleans up): the next lines are read in full,
    # even one glued to a line the full disk cut short.
    os.unlink(os.path.join(tiny_disk, "filler"))
    for n in range(2000, 2010):
        assert store.append_audit(key, event(key, n))
        written.append(event(key, n)["eventId"])
    lines = all_lines(store)
    assert sorted(lines) == sorted(written) and set(lines.values()) == {1}
    assert_index_is_exact(store, key)
    # The answer a hook gives does not depend on the disk: run one for real.
    payload = {"hook_event_name": "PreToolUse", "session_id": "full", "cwd": "/repo",
               "tool_name": "Read", "tool_use_id": "r1", "tool_input": {"file_path": "/repo/a"}}
    code = "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % ROOT
    done = subprocess.run([PY, "-I", "-S", "-c", code, "claude"],
                          input=json.dumps(payload).encode(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=dict(os.environ, STS_HOME=store.root),
                          timeout=30)
    assert done.returncode == 0


def test_a_read_only_disk_keeps_every_line_readable(tiny_disk, monkeypatch, capsys):
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0.5")
    store = sts.Store(os.path.join(tiny_disk, "home"))
    key = sts.session_key("ro")
    for n in range(100):
        store.append_audit(key, event(key, n))
    before = all_lines(store)
    subprocess.run(["mount", "-o", "remount,ro", tiny_disk], check=True)
    try:
        for n in range(100, 150):
            assert store.append_audit(key, event(key, n)) is False   # fails open, no raise
        assert store.prune_audit(1) == 0
        assert all_lines(store) == before
        assert sts.cmd_inspect(["status", "--session", "ro"], store) == 0
        assert "Checked actions: 100" in capsys.readouterr().out
    finally:
        subprocess.run(["mount", "-o", "remount,rw", tiny_disk], check=True)


# ---- real processes: concurrency and SIGKILL -------------------------------------------

# A hook-like writer: the real run_hook path, one Write denial per call, each
# acknowledged event id printed (and flushed) once its answer exists.
WRITER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import sts
store = sts.Store(sys.argv[2])
session, count = sys.argv[3], int(sys.argv[4])
for n in range(count):
    payload = {"hook_event_name": "PreToolUse", "session_id": session, "cwd": "/repo",
               "tool_name": "Write", "tool_use_id": "c%d" % n,
               "tool_input": {"file_path": "/repo/f%d.txt" % n, "content": "x"}}
    out = sts.run_hook("claude", json.dumps(payload).encode(), store)
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    sys.stdout.write(reason.split("Event: ")[1].split()[0] + "\n")
    sys.stdout.flush()
"""


def _arm_review(store, session):
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": "/repo",
               "prompt": "$stop-that-shit review"}
    assert "mode=review" in sts.run_hook("claude", json.dumps(payload).encode(), store)


def concurrent_writers(store, writers, calls, rotations):
    session = "concurrent"
    _arm_review(store, session)
    env = dict(os.environ, STS_HOME=store.root, STS_AUDIT_MAX_MB="0.5")
    procs = [subprocess.Popen([PY, "-c", WRITER, ROOT, store.root, session, str(calls)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for _ in range(writers)]
    acked = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-2000:]
        acked += out.decode().split()
    assert len(acked) == writers * calls
    lines = all_lines(store)
    assert sorted(lines) == sorted(acked)           # none lost, none extra
    assert set(lines.values()) == {1}               # none doubled
    key = sts.session_key(session)
    assert len(sts.audit_files(store)[key]) > rotations   # it did rotate, while they wrote
    assert_index_is_exact(store, key)


def test_8_concurrent_hooks_during_rotation_lose_and_double_nothing(store):
    concurrent_writers(store, 8, 30, 3)


@pytest.mark.slow
def test_32_concurrent_hooks_during_rotation_lose_and_double_nothing(store):
    concurrent_writers(store, 32, 60, 10)


@pytest.mark.slow
def test_a_hook_killed_while_writing_loses_and_doubles_nothing(store):
    """The everyday version of the SIGKILL storm below: three rounds."""
    kill_writers(store, rounds=3, min_killed=3, min_files=2)


@pytest.mark.slow
def test_sigkill_during_rotation_loses_and_doubles_nothing(store):
    kill_writers(store, rounds=24, min_killed=20, min_files=6)


def kill_writers(store, rounds, min_killed, min_files):
    session = "killed"
    _arm_review(store, session)
    env = dict(os.environ, STS_HOME=store.root, STS_AUDIT_MAX_MB="0.5")
    rng = random.Random(9)
    acked, killed = [], 0
    key = sts.session_key(session)
    # Rounds of four writers killed at random moments, until the log has
    # rotated a few times (on a busy machine a round writes little).
    done = 0
    while done < rounds or (len(sts.audit_files(store).get(key, [])) < min_files
                            and done < rounds * 4):
        done += 1
        procs = [subprocess.Popen([PY, "-c", WRITER, ROOT, store.root, session, "4000"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
                 for _ in range(4)]
        time.sleep(rng.uniform(0.3, 1.5))
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed += 1
        for proc in procs:
            out, _ = proc.communicate(timeout=600)
            acked += out.decode().split()
    assert killed >= min_killed
    lines = all_lines(store)
    # Every acknowledged line is there once; a killed hook's last line may be
    # there without its acknowledgement, never twice.
    assert set(acked) <= set(lines)
    assert set(lines.values()) == {1}
    assert len(lines) - len(acked) <= killed
    assert len(sts.audit_files(store)[key]) >= min_files
    # Whatever state the killed folds and rotations left, the index is exact.
    assert_index_is_exact(store, key)
    leftovers = [n for n in os.listdir(store.path("runtime")) if n.endswith(".removing")]
    assert leftovers == []


# ---- real hook processes: 32 at once, and killed ---------------------------------
# Each call here is its own `python3 -I -S -c "import sts ..." claude` process,
# the command install writes: spawned, held at its stdin read until all 32 of a
# wave are there, then fed together, so they append, fold and rotate at once.

def _hook_wave(session, home, count, kills=None):
    """Start `count` Claude Code hooks, wait until each reads, then give each its
    write.  `kills` maps a hook's number to a delay: that hook is SIGKILLed that
    long after its input if it is still running.  Returns the hooks and how many
    were killed."""
    from test_delegation_concurrency import spawn_hook, wait_until_reading
    procs = [spawn_hook("claude", home) for _ in range(count)]
    wait_until_reading(procs)
    killed = 0
    for n, proc in enumerate(procs):
        payload = {"hook_event_name": "PreToolUse", "session_id": session, "cwd": "/repo",
                   "tool_name": "Write", "tool_use_id": "w%d" % n,
                   "tool_input": {"file_path": "/repo/f%d.txt" % n, "content": "x"}}
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        proc.stdin = None
        if kills and n in kills:
            time.sleep(kills[n])
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed += 1
    return procs, killed


def _acked(proc, timeout=120):
    """The event id a finished hook named in its denial, or None."""
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        assert proc.returncode == -signal.SIGKILL, err.decode()[-2000:]
        return None
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    return reason.split("Event: ")[1].split()[0]


@pytest.mark.slow
def test_32_concurrent_hook_processes_rotate_without_losing_or_doubling_a_line(
        store, monkeypatch):
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0.5")   # 32 KiB segments: a rotation every ~45 lines
    session = "wave"
    _arm_review(store, session)
    key = sts.session_key(session)
    acked = []
    for _ in range(8):
        acked += [_acked(proc) for proc in _hook_wave(session, store.root, 32)[0]]
    assert None not in acked and len(acked) == 256
    lines = all_lines(store)
    assert sorted(lines) == sorted(acked)          # none lost, none extra
    assert set(lines.values()) == {1}              # none doubled
    assert len(sts.audit_files(store)[key]) >= 4   # the waves rotated the log several times
    assert_index_is_exact(store, key)


@pytest.mark.slow
def test_hook_processes_killed_during_rotation_lose_or_double_no_line(store, monkeypatch):
    """Half of each wave of 32 is SIGKILLed at a random moment after its input:
    an acknowledged line is there once; a killed hook's line is there at most once."""
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0.5")
    session = "wave-killed"
    _arm_review(store, session)
    key = sts.session_key(session)
    rng = random.Random(16)
    # One hook alone says how long a hook takes here from its input to its
    # answer: each victim is killed at a random moment within that time.
    procs, _ = _hook_wave(session, store.root, 1)
    started = time.monotonic()
    acked = [_acked(procs[0])]
    window = time.monotonic() - started
    killed = 0
    for _ in range(8):
        kills = {n: rng.uniform(0.0, window) for n in rng.sample(range(32), 16)}
        procs, wave_killed = _hook_wave(session, store.root, 32, kills)
        killed += wave_killed
        acked += [event_id for event_id in map(_acked, procs) if event_id is not None]
    sys.stderr.write("%d hooks killed, %d answered\n" % (killed, len(acked)))
    assert killed >= 16
    lines = all_lines(store)
    assert set(acked) <= set(lines)
    assert set(lines.values()) == {1}
    assert len(lines) - len(acked) <= killed
    assert len(sts.audit_files(store)[key]) >= 3
    assert_index_is_exact(store, key)
    assert [n for n in os.listdir(store.path("runtime")) if n.endswith(".removing")] == []


# ---- a full or read-only disk without root: the faults injected into real hooks -----
# The tmpfs tests above need root to mount a disk.  These run anywhere with
# /proc: each hook is a real process whose os functions fail as a full disk
# (ENOSPC once a number of bytes is written, a short write first) or a
# read-only one (EROFS on every change) fails them, under the data dir only.

FAULTY_HOOK = r"""
import errno, os, sys
sys.path.insert(0, sys.argv[1])
home, kind, budget = os.path.realpath(sys.argv[2]), sys.argv[3], [int(sys.argv[4])]

def mine(path):
    try:
        return os.path.realpath(os.fsdecode(path)).startswith(home + os.sep)
    except (TypeError, ValueError):
        return False

def fd_mine(fd):
    try:
        return mine(os.readlink("/proc/self/fd/%d" % fd))
    except OSError:
        return False

real_write, real_open = os.write, os.open
def write(fd, data):
    if not fd_mine(fd):
        return real_write(fd, data)
    if kind == "erofs" or budget[0] <= 0:
        raise OSError(errno.EROFS if kind == "erofs" else errno.ENOSPC, "injected")
    done = real_write(fd, bytes(data)[:budget[0]])   # a short write, as a filling disk does
    budget[0] -= done
    return done

def open_(path, flags, *args, **kwargs):
    if kind == "erofs" and mine(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
        raise OSError(errno.EROFS, "injected")
    return real_open(path, flags, *args, **kwargs)

def refuse(real):
    def call(*args, **kwargs):
        if kind == "erofs" and any(mine(a) for a in args if isinstance(a, (str, bytes))):
            raise OSError(errno.EROFS, "injected")
        return real(*args, **kwargs)
    return call

os.write, os.open = write, open_
for name in ("rename", "replace", "unlink", "mkdir", "rmdir", "makedirs"):
    setattr(os, name, refuse(getattr(os, name)))
import sts
# main() with its argument, so it returns: this test is about the disk.  A
# bare main() after an import as no hook would first make sure the bytecode
# cache is split (a tenth of a second in each of these 24 hooks).
sys.exit(sts.main(["claude"]))
"""


def _faulty_hook(store, kind, budget, payload):
    env = dict(os.environ, STS_HOME=store.root, STS_AUDIT_MAX_MB="0.5")
    return subprocess.run([PY, "-I", "-S", "-c", FAULTY_HOOK, ROOT, store.root, kind,
                           str(budget)], input=json.dumps(payload).encode(), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to map fds to paths")
@pytest.mark.parametrize("kind", ["enospc", "erofs"])
def test_hooks_on_a_failing_disk_during_rotation_lose_nothing_and_block_no_allowed_call(
        store, monkeypatch, kind):
    monkeypatch.setenv("STS_AUDIT_MAX_MB", "0.5")
    session = "disk-" + kind
    _arm_review(store, session)
    key = sts.session_key(session)
    for n in range(40):   # near the first segment's end (32 KiB), past a fold
        store.append_audit(key, event(key, n))
    before = all_lines(store)
    assert set(before.values()) == {1}
    rng = random.Random(28)
    read = {"hook_event_name": "PreToolUse", "session_id": session, "cwd": "/repo",
            "tool_name": "Read", "tool_use_id": "r", "tool_input": {"file_path": "/repo/a.py"}}
    write = dict(read, tool_name="Write", tool_use_id="w",
                 tool_input={"file_path": "/repo/a.py", "content": "x"})
    for n in range(12):
        # Bytes the disk still takes: none, part of a line, a line and a bit.
        budget = rng.choice([0, 1, 300, 900, 4000])
        allowed = _faulty_hook(store, kind, budget, dict(read, tool_use_id="r%d" % n))
        assert allowed.returncode == 0, allowed.stderr.decode()[-2000:]
        assert b"deny" not in allowed.stdout and b"block" not in allowed.stdout, allowed.stdout
        denied = _faulty_hook(store, kind, budget, dict(write, tool_use_id="w%d" % n))
        assert denied.returncode == 0, denied.stderr.decode()[-2000:]
        assert b'"deny"' in denied.stdout
    after = all_lines(store)
    assert {i: after.get(i) for i in before} == before   # every earlier line, once
    if kind == "erofs":
        assert after == before                           # nothing could be written
    else:
        assert 0 < len(after) - len(before) < 24         # some lines fit, some did not
    # The disk works again: appends, rotation and the index carry on.
    for n in range(100, 160):
        assert store.append_audit(key, event(key, n))
    lines = all_lines(store)
    assert all(lines[event(key, n)["eventId"]] == 1 for n in range(100, 160))
    assert len(sts.audit_files(store)[key]) > 1
    assert_index_is_exact(store, key)


# ---- the summary of every session: what `runtime all` reuses -----------------------------


def runtime_all(store):
    """`runtime all` as the CLI computes it: summary, session rows, session count."""
    summary, rows, _, _, count = sts._runtime(store, None)
    return summary, rows, count


def from_every_line(store):
    """The same answer from every line of every log and every state file (--json's way)."""
    summary, rows, _, _, count = sts._runtime(store, None, keep_events=True)
    return summary, rows, count


def _state(store, key, mode):
    state = sts.default_state()
    state["contract"].update(mode=mode, level="guard", source="directive")
    with open(store.path("sessions", key + ".json"), "w") as fh:
        json.dump(state, fh, indent=2)


def _three_sessions(store):
    keys = [sts.session_key("summary-%d" % i) for i in range(3)]
    os.makedirs(store.path("sessions"), exist_ok=True)
    for i, key in enumerate(keys):
        _state(store, key, "review")
        for n in range(10 * i + 5):
            outcome = ("allow", "deny_and_explain")[n % 2]
            store.append_audit(key, event(key, 1000 * i + n, outcome=outcome))
    return keys


def test_runtime_all_from_its_summary_equals_every_line_after_each_change(store, small_audit):
    """Each change a hook, a user or a damaged disk can make, then `runtime all`:
    the answer is the one read from every line and every state file."""
    keys = _three_sessions(store)
    summary_file = store.path("runtime", "index", "all.json")

    def same():
        assert runtime_all(store) == from_every_line(store)
        assert runtime_all(store) == from_every_line(store)   # the second from the summary

    same()
    assert os.path.exists(summary_file)
    # A hook appends; enough lines to cut segments (the file names change).
    for n in range(200):
        store.append_audit(keys[0], event(keys[0], 5000 + n))
    assert len(sts.audit_files(store)[keys[0]]) > 2
    same()
    # The contract changes in place: same inode, same size ("review" -> "answer").
    path = store.path("sessions", keys[1] + ".json")
    data = open(path, "rb").read()
    with open(path, "r+b") as fh:
        fh.write(data.replace(b'"review"', b'"answer"'))
    same()
    assert [r["contract"]["mode"] for r in runtime_all(store)[1]
            if r["sessionKey"] == keys[1]] == ["answer"]
    # A damaged state file, then a lock that is a file (not sts's folder): damaged.
    with open(store.path("sessions", keys[2] + ".json"), "w") as fh:
        fh.write("{not json")
    same()
    _state(store, keys[2], "change")
    same()
    open(store.path("sessions", keys[2] + ".json.lock"), "w").close()
    same()
    assert [r["state"] for r in runtime_all(store)[1] if r["sessionKey"] == keys[2]] == \
        ["damaged"]
    os.unlink(store.path("sessions", keys[2] + ".json.lock"))
    same()
    # Labels: one that names its session, one written by hand without it.
    sts.record_label(store, event(keys[1], 1001)["eventId"], "correct")
    same()
    with open(store.path("runtime", "annotations.jsonl"), "a") as fh:
        fh.write(json.dumps({"eventId": event(keys[2], 2003)["eventId"],
                             "hostEffect": "observed_blocked"}) + "\n")
    same()
    assert runtime_all(store)[0]["hostEffects"]["observed_blocked"] == 1
    assert runtime_all(store)[0]["labels"]["correct"] == 1
    # A damaged line in a log.
    with open(store.path("runtime", keys[1] + ".jsonl"), "ab") as fh:
        fh.write(b'{"schemaVersion":1,"cut\n')
    same()
    assert runtime_all(store)[0]["damagedRecords"] == 1
    # A session whose files are all gone, and a session with a state file only.
    for name in sts.audit_files(store)[keys[0]]:
        os.unlink(store.path("runtime", name))
    os.unlink(store.path("sessions", keys[0] + ".json"))
    lone = sts.session_key("state only")
    _state(store, lone, "change")
    same()
    assert runtime_all(store)[2] == 3
    # The summary itself damaged, cut short, from another version, or removed.
    good = open(summary_file, "rb").read()
    for bad in (b"", b"{", good[:len(good) // 2], b"[]",
                good.replace(b'"version":"%s"' % sts.VERSION.encode(), b'"version":"0.0.0"'),
                b'{"schemaVersion":1,"version":"%s","sessions":{"%s":{"logs":7,"tally":[]}}}'
                % (sts.VERSION.encode(), keys[1].encode())):
        with open(summary_file, "wb") as fh:
            fh.write(bad)
        same()
    # An entry whose files still match but whose saved counts are damaged.
    runtime_all(store)
    for damage in ({"row": "x"}, {"families": {"I": [1, -1, 0, 0]}}, {"reasons": []},
                   {"last": 7}, {"responses": {"none": 1.5}}):
        doc = json.load(open(summary_file))
        doc["sessions"][keys[1]]["tally"].update(damage)
        with open(summary_file, "w") as fh:
            json.dump(doc, fh)
        same()
    os.unlink(summary_file)
    same()


def test_a_second_runtime_all_reads_no_index_and_no_state_file(store, monkeypatch):
    keys = _three_sessions(store)
    runtime_all(store)
    opened = []
    real_open = open

    def counting_open(path, *args, **kwargs):
        opened.append(os.path.relpath(str(path), store.root))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    first = runtime_all(store)
    assert sorted(opened) == [os.path.join("runtime", name) for name in
                              ("annotations.jsonl", os.path.join("index", "all.json"),
                               "removed.jsonl")]
    # One session written since: only its index and log are read (its state
    # file is unchanged, so not even that).
    store.append_audit(keys[1], event(keys[1], 77))
    del opened[:]
    second = runtime_all(store)
    assert second[0]["checkedActions"] == first[0]["checkedActions"] + 1
    touched = {name for name in opened if keys[1] in name or "sessions" in name}
    assert touched == {os.path.join("runtime", "index", keys[1] + ".json"),
                       os.path.join("runtime", keys[1] + ".jsonl")}


def test_runtime_all_on_a_read_only_summary_folder_still_answers(store, monkeypatch):
    _three_sessions(store)

    def refuse(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(sts.Store, "_write_json", refuse)
    assert runtime_all(store) == from_every_line(store)
    assert not os.path.exists(store.path("runtime", "index", "all.json"))


# Run `runtime all` in a loop (some of the runs SIGKILLed) while hooks write.
READER = r"""
import sys
sys.path.insert(0, sys.argv[1])
import sts
store = sts.Store(sys.argv[2])
for _ in range(int(sys.argv[3])):
    sts._runtime(store, None)
"""


def test_runtime_all_under_concurrent_hooks_and_a_killed_reader(store):
    """Readers that race hooks, or die half-way through writing the summary,
    never leave a summary that a later `runtime all` trusts wrongly."""
    sessions = ["race-%d" % i for i in range(4)]
    for session in sessions:
        _arm_review(store, session)
    env = dict(os.environ, STS_HOME=store.root, STS_AUDIT_MAX_MB="0.5")
    writers = [subprocess.Popen([PY, "-c", WRITER, ROOT, store.root, session, "40"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
               for session in sessions]
    readers = [subprocess.Popen([PY, "-c", READER, ROOT, store.root, "15"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
               for _ in range(2)]
    rng = random.Random(3)
    killed = 0
    # Each victim reads without end, so it is always killed part-way through,
    # at a random moment; at least one dies even if the writers finish first.
    while killed == 0 or any(w.poll() is None for w in writers):
        victim = subprocess.Popen([PY, "-c", READER, ROOT, store.root, "1000000"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.05, 0.4))
        assert victim.poll() is None, victim.communicate()[1].decode()[-2000:]
        victim.send_signal(signal.SIGKILL)
        killed += 1
        victim.communicate()
    for proc in writers + readers:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-2000:]
    summary, rows, count = runtime_all(store)
    assert (summary, rows, count) == from_every_line(store)
    assert summary["checkedActions"] == 4 * 40 and count == 4
