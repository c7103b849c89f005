"""Oracles for the Analysis section (analysis.md 5.8): real bash and real git.

1. argv agreement: the parser's words for a simple command must equal the
   argv bash passes, on fuzzed text full of quotes, escapes and odd bytes.
2. read means read: every git line proven read is run in a scratch
   repository; none may create a file or change a ref.
Both are skipped when the tool is missing.
"""
import os
import random
import shutil
import subprocess

import pytest

import sts

BASH = shutil.which("bash")
GIT = shutil.which("git")

PIECES = [
    "a", "b1", "-x", "--long=v", "''", '""', "'s p'", '"d q"', '"a\\"b"', '"\\$x"', "'\\'",
    "\\ ", "\\\\", "x\\#y", "a#b", "\\\n", "$'\\x41\\t'", "$'\\101'", "$'a\\'b'", '"\\\\n"',
    "\r", "x\ry", "é", "'é'", "a=b", "-", "--", "\\'", '\\"', "'$'", '"`"'.replace("`", "'"),
    "{}", "%", "^", ",", "!", "@", ":",
]


def _words(line):
    items = sts._Bash(line, 0).parse()
    if len(items) != 1 or not isinstance(items[0], sts._Cmd):
        return None
    cmd = items[0]
    if cmd.assigns or cmd.redirs or not all(w.static for w in cmd.words):
        return None
    return [w.text for w in cmd.words]


@pytest.mark.skipif(BASH is None, reason="bash not installed")
def test_argv_agrees_with_bash():
    rng = random.Random(58)
    lines = []
    for _ in range(400):
        parts = ["f"] + [rng.choice(PIECES) for _ in range(rng.randint(1, 6))] + ["z"]
        line = " ".join(parts)
        try:
            words = _words(line)
        except sts._Give:
            continue
        if words is not None:
            lines.append((line, words))
    assert len(lines) > 200
    script = ["f() { printf '%s\\0' \"$@\"; printf '\\1'; }"]
    for line, _ in lines:
        script.append(line)
    out = subprocess.run([BASH, "--norc", "--noprofile", "-c", "\n".join(script)],
                         capture_output=True, env={"PATH": os.environ.get("PATH", ""),
                                                   "LC_ALL": "C.UTF-8"}).stdout
    records = out.split(b"\x01")[:-1]
    assert len(records) == len(lines)
    for (line, words), record in zip(lines, records):
        got = [p.decode("utf-8", "surrogateescape") for p in record.split(b"\0")[:-1]]
        assert got == words[1:], line


def _git(repo, *args):
    return subprocess.run([GIT] + list(args), cwd=repo, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=20,
                          env=dict(os.environ, GIT_PAGER="cat", PAGER="cat",
                                   GIT_CONFIG_NOSYSTEM="1", HOME=str(repo)))


@pytest.mark.skipif(GIT is None, reason="git not installed")
@pytest.mark.parametrize("lines", [400, pytest.param(1500, marks=pytest.mark.slow)])
def test_git_reads_never_write(tmp_path, lines):
    repo = tmp_path
    _git(repo, "init", "-q")
    (repo / "a").write_text("a\n")
    _git(repo, "add", "a")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    (repo / "evil").write_text("#!/bin/sh\ntouch o1\ncat \"$1\"\n")
    os.chmod(str(repo / "evil"), 0o755)
    tokens = ["--", "--output=o1", "--output", "o1", "-n", "-S", "-G", "-O", "-I", "-L", "-U",
              "-C", "-M", "--stat", "--format", "--pretty", "--author", "--grep", "-p", "-s",
              "-u", "-z", "HEAD", "a", "--word-diff-regex", "--color", "--abbrev", "-1",
              "--decorate", "--decorate-refs", "--no-index", "-e", "--ext-diff", "--textconv",
              "--relative", "--since", "--skip", "--unified", "--src-prefix", "-c", "-m", "-w",
              "--open-files-in-pager", "--contents", "-l", "-O./evil", "--sort", "--list",
              "--open-files-in-pager=./evil", "-t", "-r", "--points-at", "--contains"]
    subs = ["diff", "log", "show", "status", "grep", "blame", "ls-files", "rev-list", "shortlog",
            "branch", "tag", "describe", "cat-file", "ls-tree", "rev-parse", "for-each-ref"]
    rng = random.Random(7)
    refs = _git(repo, "for-each-ref").stdout
    checked = 0
    for _ in range(lines):  # the same seed: the short run is the start of the long one
        sub = rng.choice(subs)
        args = [rng.choice(tokens) for _ in range(rng.randint(1, 5))]
        line = " ".join(["git", sub] + args)
        if sts.analyze_shell(line).mutability != "read":
            continue
        checked += 1
        _git(repo, sub, *args)
        assert not (repo / "o1").exists(), line
        assert _git(repo, "for-each-ref").stdout == refs, line
    assert checked > lines // 8


# Programs that would reach the network or block; their verdicts are covered
# by the corpus labels, they are just not executed here.
_NOT_RUN = ("tail -f", "gh ", "curl", "npm ", "docker", "kubectl", "go ", "cargo", "composer",
            "bundle", "poetry", "uv ", "pip", "dotnet", "yarn", "sleep", "ping", "dig",
            "nslookup", "host ", "while read", "xargs\n")


def _snapshot(root):
    """Relative path -> (size, mtime_ns, mode) for every file and directory."""
    snap = {}
    for base, dirs, files in os.walk(str(root)):
        for name in dirs + files:
            path = os.path.join(base, name)
            st = os.lstat(path)
            snap[os.path.relpath(path, str(root))] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return snap


@pytest.mark.skipif(BASH is None or GIT is None, reason="bash and git needed")
def test_corpus_reads_leave_the_tree_unchanged(tmp_path):
    from test_analysis import ROWS  # the labelled corpus
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, HOME=str(tmp_path), GIT_PAGER="cat", PAGER="cat",
               GIT_CONFIG_NOSYSTEM="1", LC_ALL="C.UTF-8")
    for name, text in {"a.txt": "foo\nbar\n", "b.txt": "bar\n", "a": "x\n", "b": "y\n",
                       "README.md": "# r\nsha256sum\n", "package.json": '{"dependencies": {}}',
                       "src/app.py": "def main():\n    pass\n", "src/a.py": "import os\n",
                       "data.csv": "a,b\n1,2\n", "list.txt": "a.txt\n", "nums.txt": "1\n2\n",
                       "log.txt": "x\n", "names.txt": "b\na\n", "config.ini": "# c\nk=v\n",
                       "file.txt": "a|b\n", "SHA256SUMS": "", "data.json": "[]",
                       "counts.txt": "a\n"}.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    subprocess.run([GIT, "init", "-q"], cwd=str(work), env=env)
    subprocess.run([GIT, "add", "."], cwd=str(work), env=env)
    subprocess.run([GIT, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
                   cwd=str(work), env=env)
    # git refreshes its index stat cache on status/diff: that is a read for us.
    subprocess.run([GIT, "status"], cwd=str(work), env=env, capture_output=True)
    before = _snapshot(work)
    ran = 0
    for _, label, tags, command in ROWS:
        if label != "read" or "@ps" in tags or "@win" in tags:
            continue
        if any(word in command + "\n" for word in _NOT_RUN):
            continue
        try:
            subprocess.run([BASH, "--norc", "--noprofile", "-c", command], cwd=str(work),
                           env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=5)
        except subprocess.TimeoutExpired:
            pass
        ran += 1
        after = _snapshot(work)
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)
                   and k not in (".git", ".git/index")}
        assert not changed, (command, sorted(changed))
        before = after
    assert ran > 250


_FUZZ_PROGRAMS = [
    "sort", "sed", "awk", "find", "tree", "uniq", "xxd", "file", "tee", "date", "printf", "env",
    "xargs", "timeout 5", "nice", "cat", "grep", "ls", "head", "echo", "jq", "git diff",
    "git log", "git branch", "git tag", "git status", "git show", "git config", "git stash",
    "cut", "tr", "wc", "diff", "stat", "command", "bash -c", "sh -c",
]
_FUZZ_ARGS = [
    "-o", "o1", "--output=o1", "-i", "--in-place", "-n", "p", "w o1", "s/a/b/w o1", "1p",
    "'{print > \"o1\"}'", "'{print}'", "-delete", "-fprint", "-exec", "touch", "{}", "\\;",
    "+", "-name", "a", "a.txt", "b.txt", ">", "o1", ">>", "2>&1", "|", "&&", ";", "-", "--",
    "-e", "--o=o1", "-C", "1", "$(touch o1)", "`touch o1`", '"$x"', "*", "-f", "-R", "-v",
    "x=1", "-u", "./evil", "-O", "-s", "--set", "2020", "'e touch o1'", "s/x/y/e", "-x", "-p",
    "new", "-d", "-D", "-m", "--list", "-l", "--global", "k", "v", "push", "pop", "list",
    "show", "'touch o1'", "'ls'", "--pre", "-c",
]


@pytest.mark.skipif(BASH is None or GIT is None, reason="bash and git needed")
@pytest.mark.parametrize("lines", [150, pytest.param(700, marks=pytest.mark.slow)])
def test_fuzzed_reads_leave_the_tree_unchanged(tmp_path, lines):
    """Random lines over the allowlisted programs: whatever is proven read is run."""
    work = tmp_path / "w"
    work.mkdir()
    env = dict(os.environ, HOME=str(tmp_path), GIT_PAGER="cat", PAGER="cat", x="-o1",
               GIT_CONFIG_NOSYSTEM="1")
    for name, text in {"a.txt": "a\nb\n", "b.txt": "b\n", "a": "x\n"}.items():
        (work / name).write_text(text)
    (work / "evil").write_text("#!/bin/sh\ntouch o1\ncat \"$1\"\n")
    os.chmod(str(work / "evil"), 0o755)
    for args in (["init", "-q"], ["add", "."],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
                 ["status"]):
        subprocess.run([GIT] + args, cwd=str(work), env=env, capture_output=True)

    def state():
        files = {k: v for k, v in _snapshot(work).items()
                 if k != ".git" and not k.startswith(".git" + os.sep)}
        git = [subprocess.run([GIT] + a, cwd=str(work), env=env, capture_output=True,
                              text=True).stdout
               for a in (["for-each-ref"], ["stash", "list"], ["config", "--local", "-l"])]
        return files, git

    before = state()
    rng = random.Random(2024)
    ran = 0
    for _ in range(lines):  # the same seed: the short run is the start of the long one
        line = " ".join([rng.choice(_FUZZ_PROGRAMS)]
                        + [rng.choice(_FUZZ_ARGS) for _ in range(rng.randint(0, 5))])
        if sts.analyze_shell(line).mutability != "read":
            continue
        ran += 1
        try:
            subprocess.run([BASH, "-c", line], cwd=str(work), env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=5)
        except subprocess.TimeoutExpired:
            pass
        assert state() == before, line
    assert ran > lines // 5
