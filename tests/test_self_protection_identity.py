"""Self-protection by identity, not spelling (issue 24, item 3).

A file that exists is compared by what it is (device and inode): a hard link
to the guard made before the session was armed, a hard link to a file in the
guard's data folder or to a host file `install` wrote, and a folder that is a
protected one under another name all reach the protected file.  A name that
does not exist yet is compared the way the file system of its folder does:
case where it folds case (probed at run time on the root itself), Unicode
form on macOS.

What runs here: hard links and bind-free identity on the test machine's own
file system (any POSIX CI); case folding with the probe answered for the
folder (a case-insensitive folder needs a vfat loop mount or `ext4 -O
casefold`, which CI cannot make unprivileged); the macOS normalization rule
with the platform answered as darwin.
"""
import json
import os
import unicodedata

import pytest

import sts
from test_adapter_soundness import ALL, host, stopped

CODE = "GUARD_SELF_PROTECTION"


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A data dir and a project on one file system (hard links need that)."""
    state = tmp_path / "state"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("STS_HOME", str(state))
    return sts.Store(str(state)), str(work)


def _write(h, store, path, call_id="c1"):
    return stopped(h, store, h.write[0], {h.write[1]: path, "content": "x",
                                          "file_text": "x"}, call_id)


def _shell(h, store, line, call_id="c2"):
    return stopped(h, store, h.shell[0], {h.shell[1]: line}, call_id)


@pytest.mark.parametrize("name", ALL)
def test_a_hard_link_to_the_guard_is_the_guard(name, world, tmp_path, monkeypatch):
    store, work = world
    guard = tmp_path / "guard" / "sts.py"
    guard.parent.mkdir()
    guard.write_text("# the guard\n")
    monkeypatch.setattr(sts, "__file__", str(guard))
    os.makedirs(os.path.join(work, "notes"))
    copy = os.path.join(work, "notes", "guard-copy.py")
    os.link(str(guard), copy)                       # made before the session was armed
    h = host(name, work)
    h.say(store, "$stop-that-shit change")
    assert _write(h, store, copy) == CODE
    assert _write(h, store, "notes/guard-copy.py", "c3") == CODE
    assert _shell(h, store, "printf 'x' > notes/guard-copy.py") == CODE
    # An ordinary file beside it, and a plain copy (another file), are not the guard.
    other = os.path.join(work, "notes", "plain-copy.py")
    with open(other, "w") as fh:
        fh.write("# the guard\n")
    assert _write(h, store, other, "c4") is None
    assert _shell(h, store, "printf 'x' > notes/new.py", "c5") is None


@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "opencode"])
def test_a_hard_link_into_the_data_folder_is_a_guard_file(name, world):
    store, work = world
    h = host(name, work)
    h.say(store, "$stop-that-shit change")
    session_file = next(os.path.join(store.path("sessions"), n)
                        for n in os.listdir(store.path("sessions")) if n.endswith(".json"))
    os.link(session_file, os.path.join(work, "state-copy.json"))
    assert _shell(h, store, "echo '{}' > state-copy.json") == CODE
    assert _write(h, store, "state-copy.json", "c3") == CODE


def test_a_hard_link_to_an_installed_host_file_is_that_file(world, tmp_path):
    store, work = world
    hook_config = tmp_path / "home" / ".claude" / "settings.json"
    hook_config.parent.mkdir(parents=True)
    hook_config.write_text("{}")
    os.makedirs(store.root, exist_ok=True)
    with open(store.path("installed.json"), "w") as fh:
        json.dump({"paths": [str(hook_config)]}, fh)
    os.link(str(hook_config), os.path.join(work, "cfg.json"))
    h = host("claude", work)
    h.say(store, "$stop-that-shit change")
    assert _shell(h, store, "printf '{}' > cfg.json") == CODE


def test_an_existing_folder_above_a_target_is_compared_by_identity(world):
    """The walk up from a target: a new file inside the data folder is inside
    it by the folder's device and inode, one beside it is not."""
    store, work = world
    h = host("claude", work)
    h.say(store, "$stop-that-shit change")
    ids = sts._tamper_identities([store.root])
    inside = os.path.join(store.root, "sessions")
    assert sts._tamper_same_file(os.path.join(inside, "new.json"), ids) == store.root
    assert sts._tamper_same_file(os.path.join(work, "new.json"), ids) is None


@pytest.mark.parametrize("spelling", ["STS.PY", "Sts.py", "sts.PY"])
def test_another_case_of_the_guard_is_the_guard_where_the_folder_folds_case(
        spelling, world, tmp_path, monkeypatch):
    store, work = world
    guard = os.path.join(work, "sts.py")
    with open(guard, "w") as fh:
        fh.write("# the guard\n")
    monkeypatch.setattr(sts, "__file__", guard)
    h = host("claude", work)
    h.say(store, "$stop-that-shit change")
    # This machine's folder tells case apart: STS.PY is another file.
    assert _shell(h, store, "printf x > %s" % spelling) is None
    # Where the probe finds the folder folding case, it is the guard.
    monkeypatch.setattr(sts, "_tamper_case_insensitive", lambda path: True)
    assert _shell(h, store, "printf x > %s" % spelling, "c3") == CODE


def test_another_unicode_form_of_a_protected_name_is_it_on_macos(world, tmp_path, monkeypatch):
    store, work = world
    folder = os.path.join(work, unicodedata.normalize("NFC", "donn\u00e9es"))
    os.makedirs(folder)
    guard = os.path.join(folder, "sts.py")
    with open(guard, "w") as fh:
        fh.write("# the guard\n")
    monkeypatch.setattr(sts, "__file__", guard)
    h = host("claude", work)
    h.say(store, "$stop-that-shit change")
    other_form = os.path.join(unicodedata.normalize("NFD", "donn\u00e9es"), "sts.py")
    assert _shell(h, store, "printf x > %s" % other_form) is None     # Linux: another name
    monkeypatch.setattr(sts.sys, "platform", "darwin")
    assert _shell(h, store, "printf x > %s" % other_form, "c3") == CODE


# --- files= by identity ------------------------------------------------------------

def test_a_file_inside_files_with_another_name_outside_is_outside(world):
    """`src/x.py` hard-linked to `../outside.py`: a write through the name
    inside changes the file outside the boundary."""
    store, work = world
    os.makedirs(os.path.join(work, "src"))
    outside = os.path.join(os.path.dirname(work), "outside.py")
    with open(outside, "w") as fh:
        fh.write("x = 1\n")
    os.link(outside, os.path.join(work, "src", "linked.py"))
    with open(os.path.join(work, "src", "plain.py"), "w") as fh:
        fh.write("x = 1\n")
    h = host("claude", work)
    h.say(store, "$stop-that-shit change files=src/**")
    assert _write(h, store, "src/linked.py") == "PATH_OUTSIDE_CONTRACT"
    assert _shell(h, store, "printf x > src/linked.py") == "PATH_OUTSIDE_CONTRACT"
    assert _write(h, store, "src/plain.py", "c3") is None
    assert _write(h, store, "src/new.py", "c4") is None


def test_the_boundary_folder_under_another_spelling_is_inside(world, monkeypatch):
    """Identity, not spelling: where `SRC` is the folder `src` (a case-folding
    file system), a file under it is inside.  This file system tells case
    apart, so the second name is a link the boundary's resolver is told not
    to follow."""
    store, work = world
    os.makedirs(os.path.join(work, "src"))
    other = os.path.join(work, "SRC")
    os.symlink("src", other)         # another name of the same folder
    # The physical path keeps the spelling `SRC`, as on a case-folding file
    # system, where there is no link to resolve; the folder is `src`.
    monkeypatch.setattr(sts, "_files_realpath", lambda path: path)
    assert sts.paths_outside([other + "/a.py"], ["src/**"], work) == []
    assert sts.paths_outside([os.path.join(work, "lib", "a.py")], ["src/**"], work) == \
        [os.path.join(work, "lib", "a.py")]


def test_a_hard_linked_file_elsewhere_is_no_guard_file(world, tmp_path):
    """Other names of an ordinary file (a package manager's store) are not the
    guard's: only a name inside a protected folder, or a protected file, is."""
    store, work = world
    store_file = tmp_path / "pkg-store" / "index.js"
    store_file.parent.mkdir()
    store_file.write_text("x")
    os.makedirs(os.path.join(work, "node_modules", "pkg"))
    os.link(str(store_file), os.path.join(work, "node_modules", "pkg", "index.js"))
    h = host("claude", work)
    h.say(store, "$stop-that-shit change")
    assert _write(h, store, "node_modules/pkg/index.js") is None
