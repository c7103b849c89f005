"""Oracles for the Analysis section: real shells and real git.

1. argv agreement: the parser's words for a simple command must equal the
   argv bash, zsh and sh (dash) pass, on fuzzed text full of quotes, escapes
   and odd bytes.
2. read means read: every git line proven read is run in a scratch
   repository; none may create a file or change a ref.  The corpus reads and
   fuzzed reads run under each shell and leave the tree as it was.
3. what zsh runs: the corpus lines tagged @zsh change something under real
   zsh, so denying them is no false alarm.
4. where a command runs: lines that cd, pushd, subshell or -C are run under
   each shell; every file they change is among the write targets named, or
   the analysis said the folder is unknown.
Each is skipped when its tool is missing.
"""
import os
import random
import shutil
import subprocess

import pytest

import sts

BASH = shutil.which("bash")
GIT = shutil.which("git")
# How each shell is run: no startup files, as a host's `-c` with a clean config.
SHELLS = {"bash": ["--norc", "--noprofile", "-c"], "zsh": ["-f", "-c"], "dash": ["-c"]}


def _shells(fast):
    """Every shell as a test parameter; those not in `fast` only in `make test-all`."""
    return [name if name in fast else pytest.param(name, marks=pytest.mark.slow)
            for name in sorted(SHELLS)]


def _shell(name):
    path = shutil.which(name)
    if path is None:
        pytest.skip("%s not installed" % name)
    return [path] + SHELLS[name]

PIECES = [
    "a", "b1", "-x", "--long=v", "''", '""', "'s p'", '"d q"', '"a\\"b"', '"\\$x"', "'\\'",
    "\\ ", "\\\\", "x\\#y", "a#b", "\\\n", "$'\\x41\\t'", "$'\\101'", "$'a\\'b'", '"\\\\n"',
    "\r", "x\ry", "é", "'é'", "a=b", "-", "--", "\\'", '\\"', "'$'", '"`"'.replace("`", "'"),
    "{}", "%", "^", ",", "!", "@", ":",
]


def _words(line, dash=False):
    items = [x for x in sts._Bash(line, 0, dash).parse() if not isinstance(x, str)]
    if len(items) != 1 or not isinstance(items[0], sts._Cmd):
        return None
    cmd = items[0]
    if cmd.assigns or cmd.redirs or not all(w.static for w in cmd.words):
        return None
    return [w.text for w in cmd.words]


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_argv_agrees_with_each_shell(shell):
    argv = _shell(shell)
    rng = random.Random(58)
    lines = []
    for _ in range(400):
        parts = ["f"] + [rng.choice(PIECES) for _ in range(rng.randint(1, 6))] + ["z"]
        line = " ".join(parts)
        try:
            words = _words(line, dash=shell == "dash")   # dash: $'...' is `$` and a string
        except sts._Give:
            continue
        if words is not None:
            lines.append((line, words))
    assert len(lines) > 200
    script = ["f() { printf '%s\\0' \"$@\"; printf '\\1'; }"]
    for line, _ in lines:
        script.append(line)
    out = subprocess.run(argv + ["\n".join(script)],
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


@pytest.mark.skipif(GIT is None, reason="git needed")
@pytest.mark.parametrize("shell", _shells(fast=()))   # every corpus read, run: make test-all
def test_corpus_reads_leave_the_tree_unchanged(tmp_path, shell):
    argv = _shell(shell)
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
            subprocess.run(argv + [command], cwd=str(work),
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


@pytest.mark.skipif(GIT is None, reason="git needed")
@pytest.mark.parametrize("shell", sorted(SHELLS))
@pytest.mark.parametrize("lines", [150, pytest.param(700, marks=pytest.mark.slow)])
def test_fuzzed_reads_leave_the_tree_unchanged(tmp_path, shell, lines):
    """Random lines over the allowlisted programs: whatever is proven read is run."""
    argv = _shell(shell)
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
            subprocess.run(argv + [line], cwd=str(work), env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=5)
        except subprocess.TimeoutExpired:
            pass
        assert state() == before, line
    assert ran > lines // 5


# ------------------------------------------------------------- zsh and sh ----

def _tree(root):
    """Relative path -> (kind, size, mtime, content) of every file; folders by
    name only, since a file made inside one changes its time."""
    snap = {}
    for base, dirs, files in os.walk(str(root)):
        for name in dirs + files:
            path = os.path.join(base, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, str(root))
            if os.path.isdir(path) and not os.path.islink(path):
                snap[rel] = ("dir",)
            elif os.path.islink(path):
                snap[rel] = ("link", os.readlink(path))
            else:
                with open(path, "rb") as fh:
                    snap[rel] = ("file", st.st_size, st.st_mtime_ns, fh.read())
    return snap


def _changed(before, after):
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def _marker_script(path, touch):
    path.write_text("#!/bin/sh\n%s pwned\n" % touch)
    os.chmod(str(path), 0o755)


@pytest.fixture
def zsh_scratch(tmp_path):
    """f and 1 to glob, d/ls and 5/ls that leave `pwned` when run."""
    touch = shutil.which("touch")
    root = tmp_path / "w"
    for folder in ("d", "5", "home"):
        (root / folder).mkdir(parents=True)
    (root / "f").write_text("f\n")
    (root / "1").write_text("1\n")
    _marker_script(root / "d" / "ls", touch)
    _marker_script(root / "5" / "ls", touch)
    return root


def test_zsh_runs_what_the_corpus_denies(zsh_scratch):
    """Each corpus line tagged @zsh changes the scratch folder under real zsh
    (a bare redirection runs $READNULLCMD or $NULLCMD, here d/ls)."""
    argv = _shell("zsh")
    from test_analysis import ROWS
    rows = [r for r in ROWS if "@zsh" in r[2]]
    assert len(rows) >= 30
    root = zsh_scratch
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(root / "home"), "LC_ALL": "C.UTF-8",
           "READNULLCMD": str(root / "d" / "ls"), "NULLCMD": str(root / "d" / "ls")}
    quiet = []
    for _, label, tags, command in rows:
        assert sts.analyze_shell(command).mutability != "read", command
        before = _tree(root)
        try:
            subprocess.run(argv + [command], cwd=str(root), env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=10)
        except subprocess.TimeoutExpired:
            pass
        changed = _changed(before, _tree(root))
        if not changed:
            quiet.append(command)
        for path in changed:       # put the folder back for the next line
            if path in ("pwned", "!", "pwned!") or path.startswith("pwned"):
                os.unlink(str(root / path))
        if (root / "1").read_text() != "1\n":
            (root / "1").write_text("1\n")
    assert quiet == []


# Lines that move the shell before they write, run for real.
WHERE_LINES = [
    "cd x; touch y", "cd x && touch y", "cd x || touch y", "cd x 2>/dev/null; touch y",
    "cd x &>/dev/null && touch y", "cd x >/dev/null 2>&1 && touch y", "(cd x; touch z); touch y",
    "cd x & wait; touch y", "true | cd x; touch y", "cd x | true; touch y",
    "{ cd x; } > out; touch a", "if cd x; then touch a; fi; touch b",
    "pushd x; touch a; popd; touch b", "pushd x && popd && touch b", "cd && touch a",
    "cd ~; touch a", "builtin cd x && touch a", "command cd x && touch a",
    "eval cd x && touch a", "eval 'cd x; touch a'; touch b", "time cd x && touch a",
    "bash -c 'cd x; touch a'; touch b", "echo $(cd x); touch a", "cd l/.. && touch a",
    "cd x && cd .. && touch b", "cd x/ && touch a", "for d in x; do cd $d; done; touch a",
    "export CDPATH=sub; cd x && touch a", "popd; touch b", "cd x || exit 1; touch y",
    "chdir x && touch a", "noglob cd x && touch a", "nocorrect cd x && touch a",
    "cd x; cd x; touch y", "cd -P l && touch a", "cd - && touch a", "cd x && echo hi > y",
    "cd x; ls > y", "cd x && ls | tee y", "cd x && mkdir -p n/m", "cd x && rm -f a",
    "cd x && { touch a; }", "{ cd x && touch a; } && touch b",
    "cd x || { touch a; exit 1; }; touch b", "env -C x touch a", "env --chdir=x touch a",
    "tar -C out -xf t.tar", "cd x && tar -xf ../t.tar", "tar -xf t.tar -C x",
    "tar -C x -C inner -xf ../../t.tar", "cd x; sh -c 'cd inner; touch a'; touch b",
    "cd x && (cd inner && touch a) && touch b", "cd x\ntouch y", "cd x &&\ntouch y",
    "! cd x || touch y", "cd x && true | touch y", "cd x && true & touch y; wait",
    "cd x || true & touch y; wait", "cd x & touch y; wait",
]


def _where_scratch(root, variant):
    """x a folder (with a, inner/, inner/z), missing, or a plain file."""
    if root.exists():
        shutil.rmtree(str(root))
    for folder in ("home", "out", "sub/x"):
        (root / folder).mkdir(parents=True)
    if variant == "folder":
        (root / "x" / "inner").mkdir(parents=True)
        (root / "x" / "a").write_text("a\n")
        (root / "x" / "inner" / "z").write_text("z\n")
        os.symlink("x/inner", str(root / "l"))
    elif variant == "file":
        (root / "x").write_text("not a folder\n")
    (root / "m").write_text("m\n")
    subprocess.run(["tar", "cf", str(root / "t.tar"), "-C", str(root), "m"], check=True)


def _covers(path, targets, root, home):
    """A changed path is covered when it is a target, lies in one (tar -C
    out) or is a folder made on the way to one (mkdir -p n/m)."""
    real = os.path.realpath(os.path.join(str(root), path))
    for target in targets:
        if target.startswith("~"):
            target = str(home) + target[1:]
        full = os.path.realpath(os.path.join(str(root), target))
        if real == full or real.startswith(full + os.sep) or full.startswith(real + os.sep):
            return True
    return False


@pytest.mark.skipif(shutil.which("tar") is None, reason="tar needed")
@pytest.mark.parametrize("shell", _shells(fast=("zsh",)))
def test_targets_cover_what_each_shell_writes(tmp_path, shell, monkeypatch):
    argv = _shell(shell)
    monkeypatch.delenv("CDPATH", raising=False)
    root = tmp_path / "w"
    home = root / "home"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "LC_ALL": "C.UTF-8"}
    missed = []
    for line in WHERE_LINES:
        result = sts.analyze_shell(line)
        for variant in ("folder", "missing", "file"):
            _where_scratch(root, variant)
            before = _tree(root)
            try:
                subprocess.run(argv + [line], cwd=str(root), env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=10)
            except subprocess.TimeoutExpired:
                pass
            changed = _changed(before, _tree(root))
            if result.unknown_target:
                continue
            stray = [p for p in changed if not _covers(p, result.write_targets, root, home)]
            if stray:
                missed.append((line, variant, stray, result.write_targets))
    assert missed == []
