"""Programs that only read in some modes, run for real.

A compressor writes unless it only shows (-l, -t) or writes to standard
output (-c); `kill` signals unless it lists signals or sends signal 0.  The
analyzer proves the showing forms and refuses the rest.  Here both sides
meet real processes in a scratch folder: each proven form leaves the folder
as it was, and each refused look-alike really changes it, so refusing it is
no false alarm.  A test is skipped when its program is missing.
"""
import os
import shutil
import subprocess

import pytest

import sts


def _tree(root):
    """Relative path -> (size, mtime_ns) for every file under root."""
    out = {}
    for base, _, files in os.walk(str(root)):
        for name in files:
            path = os.path.join(base, name)
            st = os.lstat(path)
            out[os.path.relpath(path, str(root))] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture
def packed(tmp_path):
    """a.txt with its .gz, .bz2, .xz and .zst copies (for the tools present), b.txt
    with none, and c.txt's packed copies without c.txt (so unpacking writes it)."""
    for name in ("a.txt", "c.txt"):
        (tmp_path / name).write_text("alpha\nbeta\n" * 50)
        for tool, args in (("gzip", ["-k"]), ("bzip2", ["-k"]), ("xz", ["-k"]),
                           ("zstd", ["-q", "-k"])):
            if shutil.which(tool):
                subprocess.run([tool] + args + [name], cwd=str(tmp_path), check=True)
    (tmp_path / "c.txt").unlink()
    (tmp_path / "b.txt").write_text("gamma\n" * 50)
    return tmp_path


def _run(line, cwd, env=None):
    subprocess.run(["bash", "--norc", "--noprofile", "-c", line], cwd=str(cwd),
                   env=dict(os.environ, **(env or {})), stdin=subprocess.DEVNULL,
                   capture_output=True, timeout=20)


# (program needed, proven line)
SHOWS = [
    ("gzip", "gzip -l a.txt.gz"), ("gzip", "gzip -t a.txt.gz"), ("gzip", "gzip -dc a.txt.gz"),
    ("gzip", "gunzip -c a.txt.gz | head -1"), ("gzip", "cat a.txt | gzip -9 | gunzip"),
    ("bzip2", "bzip2 -t a.txt.bz2"), ("bzip2", "bzip2 -dc a.txt.bz2"),
    ("xz", "xz -l a.txt.xz"), ("xz", "xz -t a.txt.xz"), ("xz", "xz -dc a.txt.xz"),
    ("zstd", "zstd -l a.txt.zst"), ("zstd", "zstd -t a.txt.zst"), ("zstd", "zstd -dc a.txt.zst"),
]

# (program needed, refused line, extra environment): each really writes.
WRITES = [
    ("gzip", "gzip b.txt -c", {"POSIXLY_CORRECT": "1"}),   # -c is a file name here
    ("xz", "xz -t b.txt -z", {}),                            # the last mode wins
    ("xz", "xz -l c.txt.xz -d", {}),
    ("zstd", "zstd -t c.txt.zst -d", {}),
    ("bzip2", "bzip2 -t b.txt -z", {}),
    ("bzip2", "bzip2 -t -d c.txt.bz2", {}),
]


@pytest.mark.parametrize("tool,line", SHOWS, ids=[s[1] for s in SHOWS])
def test_a_showing_form_is_proven_and_changes_nothing(packed, tool, line):
    if not shutil.which(tool):
        pytest.skip("%s not installed" % tool)
    assert sts.analyze_shell(line).mutability == "read"
    before = _tree(packed)
    _run(line, packed)
    assert _tree(packed) == before


@pytest.mark.parametrize("tool,line,env", WRITES, ids=[w[1] for w in WRITES])
def test_a_look_alike_that_writes_is_refused(packed, tool, line, env):
    if not shutil.which(tool):
        pytest.skip("%s not installed" % tool)
    prefix = "".join("%s=%s " % kv for kv in env.items())
    assert sts.analyze_shell(prefix + line).mutability == "write"
    before = _tree(packed)
    _run(line, packed, env)
    assert _tree(packed) != before, line


def test_kill_lists_and_probes_but_never_signals(tmp_path):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        for line in ("kill -l", "kill -0 %d" % sleeper.pid):
            assert sts.analyze_shell(line).mutability == "read"
            _run(line, tmp_path)
            assert sleeper.poll() is None, line
        line = "kill %d" % sleeper.pid
        assert sts.analyze_shell(line).mutability == "write"
        _run(line, tmp_path)
        assert sleeper.wait(timeout=10) is not None
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize("form", ["/bin/kill -0 {pid} -s 9", "env kill -0 {pid} -s KILL",
                                  "timeout 5 kill -0 {pid} --signal=KILL"])
def test_procps_kill_takes_a_signal_after_the_pid(tmp_path, form):
    """The shells' kill stops at the first PID; procps kill permutes its options."""
    assert sts.analyze_shell(form.format(pid=1234)).mutability == "write"
    if not os.path.exists("/bin/kill"):
        pytest.skip("no /bin/kill")
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        _run(form.format(pid=sleeper.pid), tmp_path)
        if sleeper.poll() is None and "procps" not in subprocess.run(
                ["/bin/kill", "--version"], capture_output=True, text=True).stdout:
            pytest.skip("/bin/kill is not procps")
        assert sleeper.wait(timeout=10) is not None
    finally:
        sleeper.kill()
        sleeper.wait()
