"""The os of a hook process: `sts._LeanOs` answers what the real os answers.

A hook process does not import os (a fifth of an interpreter start-up); it
uses posix's own calls and `_LeanPath`, which must give exactly what
posixpath gives for every path a call can name: odd spellings, symbolic
links (chains, loops, dangling, relative, through `..`), missing names, a
home folder.  These tests hold it to posixpath on real files, and check that
a real hook process runs without os and answers as the whole module does.
"""
import json
import os
import posixpath
import random
import subprocess
import sys

import pytest

import sts
from hooks import ROOT

pytestmark = pytest.mark.skipif(not hasattr(sts._posix, "_path_normpath"),
                                reason="a Python before 3.11 (or Windows) uses the real os")

LEAN = sts._LeanPath()

SPELLINGS = ["", ".", "..", "/", "//", "///", "a", "a/", "a//", "/a", "//a", "///a", "a/b",
             "a/./b", "a/../b", "../a", "../../a", "/..", "/../a", "a/b/..", "a/b/../..",
             "a/b/../../..", "./", "./a/", "a/.", "a/..", "/a/b/c/", "~", "~/", "~/a", "~x",
             "~x/a", "~/../a", "a~", "é/ü", "a b/c", "\udcff/x", ".hidden", "a/.../b", "//a/b/"]


def _odd_paths(seed, count):
    rng = random.Random(seed)
    parts = ["a", "b", ".", "..", "", "~", "x y", "é", "...", "link", "loop", "file", "missing"]
    out = []
    for _ in range(count):
        path = "/".join(rng.choice(parts) for _ in range(rng.randint(0, 6)))
        out.append(("/" * rng.randint(0, 3)) + path + ("/" * rng.randint(0, 2)))
    return out


@pytest.mark.parametrize("name", ["isabs", "split", "dirname", "basename", "normpath"])
def test_lexical_functions_answer_as_posixpath(name):
    for path in SPELLINGS + _odd_paths(1, 2000):
        assert getattr(LEAN, name)(path) == getattr(posixpath, name)(path), path


def test_join_answers_as_posixpath():
    rng = random.Random(2)
    words = SPELLINGS + _odd_paths(3, 200)
    for _ in range(3000):
        parts = [rng.choice(words) for _ in range(rng.randint(1, 4))]
        assert LEAN.join(*parts) == posixpath.join(*parts), parts


def test_other_types_and_functions_are_posixpath_s_own():
    assert LEAN.join(b"a", b"b") == b"a/b"
    assert LEAN.normpath(b"a/../b") == b"b"
    assert LEAN.realpath(b"/") == b"/"
    assert LEAN.relpath("/a/b", "/a") == "b"   # not one of the dozen: posixpath's
    with pytest.raises(TypeError):
        LEAN.join("a", b"b")


def test_expanduser_answers_as_posixpath(monkeypatch, tmp_path):
    lean_os = sts._LeanOs()
    monkeypatch.setattr(sts, "os", lean_os)
    for home in ("/home/me", "/home/me/", "/", "//", "", "rel/home"):
        lean_os.environ["HOME"] = home
        monkeypatch.setenv("HOME", home)
        for path in SPELLINGS:
            assert LEAN.expanduser(path) == posixpath.expanduser(path), (home, path)
    del lean_os.environ["HOME"]
    monkeypatch.delenv("HOME")
    for path in ("~", "~/a", "~root/x", "a"):   # no HOME: the password database
        assert LEAN.expanduser(path) == posixpath.expanduser(path), path


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A folder with every kind of link a path can go through."""
    root = tmp_path / "t"
    (root / "a" / "b").mkdir(parents=True)
    (root / "file").write_text("x")
    (root / "a" / "b" / "inner").write_text("x")
    links = {
        "up": "..", "self": ".", "abs": str(root / "a"), "rel": "a/b", "chain": "rel",
        "dangling": "missing/x", "loop": "loop2", "loop2": "loop", "selfloop": "selfloop",
        "tofile": "file", "a/b/back": "../..", "a/b/deep": "../../chain/inner",
        "a/dotdot": "b/../../up", "slash": "/", "long": "chain/../rel/../a",
    }
    for name, target in links.items():
        os.symlink(target, str(root / name))
    monkeypatch.chdir(str(root / "a"))
    return root


def test_realpath_answers_as_posixpath_through_every_kind_of_link(tree):
    names = ["up", "self", "abs", "rel", "chain", "dangling", "loop", "loop2", "selfloop",
             "tofile", "a", "b", "back", "deep", "dotdot", "slash", "long", "file", "inner",
             "missing", ".", "..", ""]
    rng = random.Random(4)
    paths = SPELLINGS + [str(tree)] + ["../" * n for n in range(4)]
    for _ in range(4000):
        path = "/".join(rng.choice(names) for _ in range(rng.randint(1, 5)))
        paths.append(rng.choice([str(tree) + "/", "", "./", "../", "//"]) + path)
    for path in paths:
        assert LEAN.realpath(path) == posixpath.realpath(path), path


def test_a_chain_longer_than_the_limit_is_posixpath_s_answer(tmp_path):
    for n in range(sts._MAX_LINKS + 5):
        os.symlink("l%d" % (n + 1), str(tmp_path / ("l%d" % n)))
    (tmp_path / ("l%d" % (sts._MAX_LINKS + 5))).write_text("end")
    path = str(tmp_path / "l0")
    assert LEAN.realpath(path) == posixpath.realpath(path) == str(tmp_path / "l45")


def test_file_kind_checks_answer_as_genericpath(tree):
    for path in ["up", "abs", "dangling", "loop", "tofile", "file", "missing", "", "b",
                 "b/inner", "x\0y", str(tree / "a" / "b" / "inner")]:
        for name in ("exists", "lexists", "isdir", "isfile", "islink"):
            assert getattr(LEAN, name)(path) == getattr(posixpath, name)(path), (name, path)


def test_the_environment_is_os_environ_and_the_calls_are_posix_s():
    lean = sts._LeanOs()
    assert lean.environ == dict(os.environ)
    assert lean.stat is os.stat and lean.open is os.open and lean._exit is os._exit
    assert lean.O_CREAT == os.O_CREAT and lean.SEEK_CUR == os.SEEK_CUR
    assert (lean.name, lean.sep, lean.devnull) == (os.name, os.sep, os.devnull)
    assert lean.makedirs is os.makedirs   # written in Python by os: the real one
    assert lean.path.samefile is os.path.samefile


def test_the_hook_hosts_are_the_adapters():
    assert sorted(sts._HOOK_HOSTS) == sorted(sts.ADAPTERS)


def test_a_hook_process_runs_without_os_and_answers_as_the_real_os_does(tmp_path):
    """Only a hook process uses _LeanOs; its answers (a read, a denied write,
    a denied line that names a guard file) are those of a run on the real os."""
    probe = ("import sys; sys.path.insert(0, %r); import sts\n"
             "real_exit = sts._posix._exit\n"
             "def leave(code):\n"
             "    sys.stderr.write('MODULES %%s %%s\\n' %% ('os' in sys.modules, type(sts.os).__name__))\n"
             "    sys.stderr.flush()\n"
             "    real_exit(code)\n"
             "sts.os._exit = leave\n"
             "sts._split_bytecode = lambda: None\n"   # (the first hook after a change splits the cache)
             "sts.main()" % ROOT)
    base = {"session_id": "lean", "cwd": str(tmp_path), "tool_use_id": "t"}
    events = [dict(base, hook_event_name="UserPromptSubmit", prompt="$stop-that-shit review"),
              dict(base, hook_event_name="PreToolUse", tool_name="Bash",
                   tool_input={"command": "git status"}),
              dict(base, hook_event_name="PreToolUse", tool_name="Write",
                   tool_input={"file_path": str(tmp_path / "a.txt"), "content": "x"}),
              dict(base, hook_event_name="PreToolUse", tool_name="Bash",
                   tool_input={"command": "ls ~/.claude/ && echo x > ~/.claude/settings.json"})]
    # The real os: imported by a process that is no hook (its first argument
    # is not a host), then asked as a hook; from the cached bytecode, where
    # `python3 sts.py claude` would compile the whole file for each event.
    real = ("import sys; sys.path.insert(0, %r); import sts\n"
            "assert type(sts.os).__name__ == 'module'\n"
            "sys.exit(sts.main(sys.argv[2:]))" % ROOT)
    answers = {}
    for kind in ("lean", "real", "lean again"):
        env = dict(os.environ, STS_HOME=str(tmp_path / kind.split()[0]),
                   HOME=str(tmp_path / "home"))
        for n, event in enumerate(events):
            argv = ([sys.executable, "-I", "-S", "-c", probe, "claude"] if kind != "real" else
                    [sys.executable, "-I", "-S", "-c", real, "real-os", "claude"])
            out = subprocess.run(argv, input=json.dumps(event).encode(), env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            assert out.returncode == 0
            if kind != "real":
                # (the first call in a new data folder makes its folders with os.makedirs)
                imported = "False" if kind == "lean again" else out.stderr.split()[1].decode()
                assert out.stderr.decode().split() == ["MODULES", imported, "_LeanOs"], (n, kind)
            if kind != "lean again":
                text = out.stdout.decode()
                answers.setdefault(n, []).append(
                    "\n".join(line for line in text.split("\\n") if not line.startswith("Event: ")))
    for n, (lean, real) in answers.items():
        assert lean == real, events[n]
    assert "MODE_FORBIDS_MUTATION" in answers[2][0] and "settings.json" in answers[3][0]
