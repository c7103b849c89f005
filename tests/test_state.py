"""Session state on disk: schema 4, validation, recovery, atomic writes, links, markers."""
import json
import os
import stat
import time

import pytest

import sts


def _state_file(store, key):
    return store.path("sessions", key + ".json")


def _put(store, key, raw: bytes):
    os.makedirs(store.path("sessions"), exist_ok=True)
    with open(_state_file(store, key), "wb") as fh:
        fh.write(raw)


def _valid():
    state = sts.default_state()
    state["contract"].update(mode="review", level="guard", agentBudget=1, source="directive")
    state["delegation"]["acceptedActions"] = {"a1": 1}
    state["delegation"]["reservations"] = {"reservation:a1": {
        "actionId": "a1", "asyncLaunched": None, "pendingCount": 1, "agentIds": [],
        "completionScope": "children", "observedRunning": False,
        "notStartedAmbiguous": False, "resultUnknown": False, "reportedAliases": []}}
    return state


def test_session_key_is_the_first_24_hex_of_sha256_over_utf8():
    assert sts.session_key("s1") == "e8bc163c82eee18733288c7d"
    assert sts.session_key("") == "unknown"
    assert sts.session_key("a\udc80b") == sts.session_key("a\ufffdb")
    assert sts.session_key("\ud83d\ude00") == sts.session_key("\U0001f600")


def test_data_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("STS_HOME", str(tmp_path / "h"))
    assert sts.data_dir() == str(tmp_path / "h")
    monkeypatch.delenv("STS_HOME")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "x"))
    assert sts.data_dir() == str(tmp_path / "x" / "stop-that-shit")


def test_missing_file_is_default_and_load_creates_nothing(store, sts_home, tmp_path):
    store.folder = str(tmp_path)   # no repository, no user default: the plain default
    loaded = store.load("k" * 24)
    assert loaded.state == dict(sts.default_state(), repoDefaultPath=None)
    assert loaded.storage_error is None and not loaded.existed
    assert not sts_home.exists()


def test_update_writes_pretty_json_0600_in_0700_dirs(store, sts_home):
    key = sts.session_key("w")
    result = store.update(key, lambda l: (_valid(), "done"))
    assert result == "done"
    path = _state_file(store, key)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert text.endswith("}\n") and '\n  "contract": {' in text
    assert json.loads(text) == _valid()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    for d in (sts_home, sts_home / "sessions"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert os.listdir(store.path("sessions")) == [key + ".json"]
    loaded = store.load(key)
    assert loaded.existed and loaded.storage_error is None and loaded.state == _valid()


def test_update_returning_none_writes_nothing(store):
    key = sts.session_key("none")
    assert store.update(key, lambda l: (None, 5)) == 5
    assert not os.path.exists(_state_file(store, key))
    assert not os.path.exists(_state_file(store, key) + ".lock")


def test_change_exception_propagates_and_releases_lock(store):
    key = sts.session_key("boom")

    def boom(loaded):
        raise RuntimeError("x")
    with pytest.raises(RuntimeError):
        store.update(key, boom)
    assert not os.path.exists(_state_file(store, key) + ".lock")


def test_failed_write_keeps_old_target_removes_temp_and_propagates(store):
    target = store.path("sessions", "x.json")
    os.makedirs(os.path.join(target, "blocker"))  # os.replace cannot overwrite a full dir
    with pytest.raises(OSError):
        store._write_json(target, _valid())
    assert os.path.isdir(os.path.join(target, "blocker"))
    assert [n for n in os.listdir(store.path("sessions")) if n.endswith(".tmp")] == []


def test_one_atomic_writer_keeps_a_mode_and_a_link_when_asked(tmp_path):
    """_replace_file is every atomic write of sts (state, thrash counts, host
    configs): mode=None keeps the file's own mode; a link at the target is
    followed only when the caller resolves it (as install does), and a link
    planted at a temp name is never written through."""
    real = tmp_path / "config.json"
    real.write_text("old")
    os.chmod(real, 0o640)
    sts._replace_file(str(real), b"new", mode=None)
    assert real.read_text() == "new"
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640
    link = tmp_path / "link.json"
    link.symlink_to(real)
    sts._atomic_write(str(link), b"newer")
    assert link.is_symlink() and real.read_text() == "newer"
    fresh = tmp_path / "fresh.json"
    sts._replace_file(str(fresh), b"{}")
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "fresh.json",
                                                          "link.json"]


DAMAGED = {
    "truncated": json.dumps(_valid()).encode()[:40],
    "zero bytes": b"",
    "invalid utf-8": b'{"schemaVersion": 4, "x": "\xff\xfe"}',
    "not an object": b"[1, 2]",
    "future schema": json.dumps(dict(_valid(), schemaVersion=5)).encode(),
    "old schema": json.dumps(dict(_valid(), schemaVersion=3)).encode(),
    "bool schema": json.dumps(dict(_valid(), schemaVersion=True)).encode(),
    "contract missing mode": json.dumps(dict(_valid(), contract={
        k: v for k, v in _valid()["contract"].items() if k != "mode"})).encode(),
    "boolean budget": json.dumps(dict(_valid(), contract=dict(
        _valid()["contract"], agentBudget=True))).encode(),
    "budget over MAX": json.dumps(dict(_valid(), contract=dict(
        _valid()["contract"], agentBudget=2 ** 53))).encode(),
    "list mode": json.dumps(dict(_valid(), contract=dict(
        _valid()["contract"], mode=["review"]))).encode(),
    "paths not strings": json.dumps(dict(_valid(), contract=dict(
        _valid()["contract"], allowedPaths=[1]))).encode(),
    "undo policy out of range": json.dumps(dict(_valid(), contract=dict(
        _valid()["contract"], undoPolicy="sometimes"))).encode(),
    "undo policy not text": json.dumps(dict(_valid(), contract=dict(
        _valid()["contract"], undoPolicy=["allow"]))).encode(),
    "reservation over accepted": json.dumps(_valid()).replace(
        '"pendingCount": 1', '"pendingCount": 2').encode(),
    "reservation not accepted": json.dumps(_valid()).replace(
        '"actionId": "a1"', '"actionId": "zz"').encode(),
    "duplicate seen ids": json.dumps(dict(_valid(), delegation=dict(
        _valid()["delegation"], agentIdsSeen=["a", "a"]))).encode(),
    "unresolved empty reason": json.dumps(dict(_valid(), delegation=dict(
        _valid()["delegation"], unresolved={"x": ""}))).encode(),
    "nested too deep": b"[" * 100000 + b"]" * 100000,
    # Reading these as empty would forget an unproven count or an accepted id,
    # and so grant delegation budget the ledger never proved free.
    "unresolved missing": json.dumps(dict(_valid(), delegation={
        k: v for k, v in _valid()["delegation"].items() if k != "unresolved"})).encode(),
    "acceptedActions missing": json.dumps(dict(_valid(), delegation=dict({
        k: v for k, v in _valid()["delegation"].items() if k != "acceptedActions"},
        reservations={}))).encode(),
}


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_damaged_state_gives_recovery_and_keeps_bytes(store, name):
    key = sts.session_key("dmg-" + name)
    raw = DAMAGED[name]
    _put(store, key, raw)
    before = os.stat(_state_file(store, key))
    loaded = store.load(key)
    assert loaded.existed
    assert loaded.storage_error["code"] == "STATE_DAMAGED"
    assert "read-only recovery" in loaded.storage_error["message"]
    contract = loaded.state["contract"]
    assert (contract["mode"], contract["level"], contract["source"]) == ("review", "guard", "recovery")
    assert loaded.state["delegation"]["unresolved"] == {"state:damaged": "state_unavailable"}
    # A locked update sees the same recovery and must not write.
    seen = store.update(key, lambda l: (sts.default_state(), l.storage_error["code"]))
    assert seen == "STATE_DAMAGED"
    with open(_state_file(store, key), "rb") as fh:
        assert fh.read() == raw
    after = os.stat(_state_file(store, key))
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)


def test_state_path_unreadable_as_file_is_damaged(store):
    key = sts.session_key("dir")
    os.makedirs(_state_file(store, key))
    assert store.load(key).storage_error["code"] == "STATE_DAMAGED"


def test_preserve_damaged_moves_bytes_aside_and_allows_fresh_state(store):
    key = sts.session_key("s1-damaged")
    raw = b'{"schemaVersion": 4, "contr'
    _put(store, key, raw)
    kept = []

    def apply_directive(loaded):
        assert loaded.storage_error["code"] == "STATE_DAMAGED"
        kept.append(store.preserve_damaged(key))
        fresh = sts.default_state()
        fresh["contract"].update(mode="change", level="guard", source="directive")
        fresh["delegation"]["unresolved"]["state:damaged"] = "state_unavailable"
        return fresh, None
    store.update(key, apply_directive)
    name = os.path.basename(kept[0])
    assert name.startswith(key + ".json.damaged-") and name.endswith("Z")
    with open(kept[0], "rb") as fh:
        assert fh.read() == raw
    loaded = store.load(key)
    assert loaded.storage_error is None and loaded.state["contract"]["mode"] == "change"
    # Without a preserve call, a later recovery stays read-only again.
    _put(store, key, b"{")
    store.update(key, lambda l: (sts.default_state(), None))
    with open(_state_file(store, key), "rb") as fh:
        assert fh.read() == b"{"


def test_validate_state_normalizes_in_memory():
    raw = _valid()
    raw["contract"]["agentsUsed"] = 3
    raw["contract"]["totalAgentBudget"] = 4
    raw["concurrentAgentBudget"] = 2
    raw["futureExtra"] = {"kept": True}
    del raw["delegation"]["agentAliases"]
    state = sts.validate_state(raw)
    assert "agentsUsed" not in state["contract"] and "totalAgentBudget" not in state["contract"]
    assert "concurrentAgentBudget" not in state and state["futureExtra"] == {"kept": True}
    assert state["delegation"]["agentAliases"] == {}
    unconfirmed = _valid()
    unconfirmed["contract"].update(mode="unconfirmed", level="lock")
    assert sts.validate_state(unconfirmed)["contract"]["level"] == "watch"


def test_a_state_written_before_undo_existed_reads_as_undo_ask():
    raw = _valid()
    raw["contract"].pop("undoPolicy", None)
    assert sts.validate_state(raw)["contract"]["undoPolicy"] == "ask"
    raw["contract"]["undoPolicy"] = "allow"
    assert sts.validate_state(raw)["contract"]["undoPolicy"] == "allow"


def test_legacy_keys_vanish_on_next_write(store):
    key = sts.session_key("legacy")
    raw = _valid()
    raw["contract"]["agentsUsed"] = 3
    _put(store, key, json.dumps(raw).encode())
    store.update(key, lambda l: (l.state, None))
    with open(_state_file(store, key)) as fh:
        assert "agentsUsed" not in fh.read()


def test_recovery_state_shape():
    state = sts.recovery_state({"code": "PARENT_LINK_DAMAGED", "message": "m"})
    assert state["storageError"] == {"code": "PARENT_LINK_DAMAGED", "message": "m"}
    assert state["contract"]["mode"] == "review" and state["contract"]["level"] == "guard"
    assert sts.control_state(state["contract"]) == "ARMED"


def test_armed_marker_follows_set_armed(store, sts_home):
    key = sts.session_key("armed")
    assert not store.armed_marker(key)
    store.set_armed(key, False)
    assert not (sts_home / "armed").exists()
    store.set_armed(key, True)
    assert store.armed_marker(key)
    mtime = os.stat(store.path("armed", key)).st_mtime_ns
    time.sleep(0.01)
    store.set_armed(key, True)  # unchanged: not rewritten
    assert os.stat(store.path("armed", key)).st_mtime_ns == mtime
    assert stat.S_IMODE(os.stat(store.path("armed", key)).st_mode) == 0o600
    store.set_armed(key, False)
    assert not store.armed_marker(key)


def test_links_resolve_to_the_root(store):
    assert store.link_root("root") is None
    store.write_link("child", "root")
    store.write_link("grandchild", "child")  # stored flattened: points at root
    assert store.link_root("child") == "root"
    assert store.link_root("grandchild") == "root"
    with open(store.path("links", sts.session_key("grandchild") + ".json")) as fh:
        assert json.load(fh) == {"rootSessionId": "root"}
    store.write_link("root", "root")  # self link ignored
    assert store.link_root("root") is None
    store.write_link("child", "child")
    assert store.link_root("child") == "root"
    assert sorted(store.linked_children("root")) == sorted(
        [sts.session_key("child"), sts.session_key("grandchild")])


def test_a_root_linked_later_extends_the_chain(store):
    store.write_link("c", "b")
    store.write_link("b", "a")
    assert store.link_root("c") == "a"
    store.write_link("a", "c")  # would close a loop: the root of c is a itself
    assert store.link_root("a") is None


@pytest.mark.parametrize("raw", [b"", b"{", b"[]", b'{"rootSessionId": ""}', b'{"x": 1}', b"\xff"])
def test_damaged_link_raises_parent_link_damaged(store, raw):
    os.makedirs(store.path("links"))
    with open(store.path("links", sts.session_key("kid") + ".json"), "wb") as fh:
        fh.write(raw)
    with pytest.raises(sts.StateDamaged) as info:
        store.link_root("kid")
    assert info.value.code == "PARENT_LINK_DAMAGED"
    assert info.value.storage_error["code"] == "PARENT_LINK_DAMAGED"


def test_link_loop_is_damage_not_a_hang(store):
    os.makedirs(store.path("links"))
    for a, b in (("x", "y"), ("y", "x")):
        with open(store.path("links", sts.session_key(a) + ".json"), "w") as fh:
            json.dump({"rootSessionId": b}, fh)
    with pytest.raises(sts.StateDamaged):
        store.link_root("x")


def test_touch_host_updates_mtime(store):
    store.touch_host("codex")
    path = store.path("hosts", "codex")
    assert os.path.getsize(path) == 0
    old = time.time() - 100
    os.utime(path, (old, old))
    store.touch_host("codex")
    assert os.stat(path).st_mtime > old + 50
    store.touch_host("../evil")
    assert not os.path.exists(store.path("evil"))


def test_new_event_id_is_uuid4_shaped():
    import re
    ids = {sts.new_event_id() for _ in range(100)}
    assert len(ids) == 100
    for evt in ids:
        assert re.fullmatch(r"evt_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", evt)


def test_lock_timeout_names_the_key():
    assert "abc123" in str(sts.LockTimeout("abc123"))
