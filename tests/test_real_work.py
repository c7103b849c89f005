"""Real work that must not be stopped (issue 29): shell writes under files=
that the analyzer names in full, and the look-alikes that must stay unproven.
"""
import os
import shutil
import subprocess
import sys

import pytest

import sts


# (command, every write named) -- a line named in full is judged by its targets.
KNOWN = [
    ("echo x > src/a.py", True),
    ("printf '%s\\n' a >> src/a.py", True),
    ("cat > src/a.py <<'EOF'\nx\nEOF", True),
    ("sed -i s/a/b/ src/a.py", True),
    ("sed -i -e s/a/b/ -e s/c/d/ src/a.py src/b.py", True),
    ("sed -i 's/a/b/' src/*.py", True),
    ("sed -E -i 's/a/b/w src/log' src/a.py", True),
    ("cp README src/b.py", True),
    ("cp -f src/a.py src/b.py", True),
    ("mv src/a.py src/b.py", True),
    ("touch src/c.py", True),
    ("mkdir -p src/new && echo hi > src/new/a.py", True),
    ("echo x | tee src/a src/b", True),
    ("echo x | tee -a src/a", True),
    ("rm -f src/a.py", True),
    ("rm -rf src/build", True),
    ("rm src/*.pyc", True),
    ("ln -sf a.py src/b.py", True),
    ("install -m 644 README src/README", True),
    ("truncate -s 0 src/log", True),
    ("chmod +x src/run.sh", True),
    ("chmod -R u+w src/gen", True),
    ("unlink src/a", True),
    ("rmdir src/empty", True),
    ("for f in a.py b.py; do sed -i s/x/y/ \"src/$f\"; done", True),
    # find walks real folders only: src/**/*.py names what it reports
    ("find src -name '*.py' -exec sed -i s/a/b/ {} +", True),
    ("find src -name x -exec rm {} +", True),
    ("find src -name x -exec rm -r {} +", True),
    ("find src -name '*.py' -exec mv {} out/ \\;", True),
    ("find src -name x -exec chmod 600 {} +", False),            # follows a found link
    ("find src -name x -exec touch {} +", False),
    ("find src -name x -exec sed --follow-symlinks -i s/a/b/ {} +", False),
    ("find src -follow -name x -exec sed -i s/a/b/ {} +", False),
    ("find -L src -name x -exec sed -i s/a/b/ {} +", False),
    ("find src -name x -execdir sed -i s/a/b/ {} +", False),
    ("find src/*/ -name x -exec sed -i s/a/b/ {} +", False),     # the shell's glob may
    ("find \"$D\" -name x -exec sed -i s/a/b/ {} +", False),       # lead through a link
    ("sed -i s/a/b/ src/*/x; find src -name x -exec sed -i s/a/b/ {} +", False),
    ("find src -name x -exec sed -i s/a/b/ {} src/*/y +", False),
    ("cd src && sed -i s/a/b/ a.py", True),
    ("find src -type f -exec sed -i s/a/b/ {} +", True),
    ("find src -exec chmod 600 {} +", False),
    ("rm src/**/x.py", False),
    ("for f in src/*/x; do rm \"$f\"; done", False),
    ("sudo rm -f src/a", True),
    # look-alikes: a second write, a write elsewhere, or one through a link
    ("sed -i.bak s/a/b/ src/a.py", False),
    ("sed --in-place=.orig s/a/b/ src/a.py", False),
    ("sed -i --follow-symlinks s/a/b/ src/a.py", False),
    ("sed -i -f script.sed src/a.py", False),
    ("sed -i '1e touch /tmp/x' src/a.py", False),
    ("cp -b README src/b.py", False),
    ("cp --parents a/b src/", False),
    ("cp -r templates src/", False),
    ("cp *.md src/", False),
    ("mv -b a src/a", False),
    ("rmdir -p src/a/b", False),
    ("install -s bin src/bin", False),
    ("chown -LR me src", False),
    ("touch src/*.py", False),
    ("truncate -s0 src/*", False),
    ("echo x > src/*.py", False),
    ("echo x > \"$OUT\"", False),
    ("f=src/a; echo x > $f", False),
    ("rm src/*/a.py", False),
    ("rm -rf $DIR", False),
    ("xargs rm < list", False),
    ("find -L src -exec sed -i s/a/b/ {} +", False),
    ("find src -execdir sed -i s/a/b/ x \\;", False),
    ("find src -delete", False),
    ("make", False),
    ("npm test", False),
    ("python3 gen.py > src/out.py", False),
    ("git checkout -- src/a.py", False),
    ("patch -p1 < fix.diff", False),
    ("echo x > src/a.py; make", False),
    ("cd $D && rm a", False),
    ("claude -p hi > src/out", False),
    ("git status", False),
]


@pytest.mark.parametrize("command,known", KNOWN)
def test_writes_known_in_full(command, known):
    verdict = sts.analyze_shell(command)
    assert verdict.writes_known is known, (command, verdict)
    if known:
        assert verdict.mutability == "write" and not verdict.unknown_target


def test_sed_script_files_are_targets():
    verdict = sts.analyze_shell("sed -i 's/a/b/w /etc/x' src/a.py")
    assert verdict.writes_known and "/etc/x" in verdict.write_targets


def _decide(command, allowed, cwd):
    action = sts.Action.from_dict(dict(sts.shell_action("Bash", command), cwd=cwd,
                                       command=command))
    state = sts.default_state()
    state["contract"].update(mode="change", level="guard", source="directive",
                             allowedPaths=allowed)
    return sts.decide(action, state, action_id=None, declared=True)


@pytest.fixture
def proj(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("a\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "t.py").write_text("t\n")
    return tmp_path


@pytest.mark.parametrize("command,allowed,code", [
    ("echo x > src/a.py", ["src/**"], "WITHIN_CONTRACT"),
    ("sed -i s/a/b/ src/a.py", ["src/*.py"], "WITHIN_CONTRACT"),
    ("sed -i s/a/b/ src/*.py", ["src/*.py"], "WITHIN_CONTRACT"),
    ("sed -i s/a/b/ src/*.py", ["*.py"], "WITHIN_CONTRACT"),
    ("sed -i s/a/b/ src/*", ["*.py"], "PATH_OUTSIDE_CONTRACT"),
    ("cp README src/b.py", ["src/"], "WITHIN_CONTRACT"),
    ("touch src/c.py", ["src"], "WITHIN_CONTRACT"),
    ("rm src/a.py", ["src/a.py"], "WITHIN_CONTRACT"),
    ("echo x > src/a.txt", ["src/*.py"], "PATH_OUTSIDE_CONTRACT"),
    ("echo x > src/a.py && echo y > lib/a.py", ["src/**"], "PATH_OUTSIDE_CONTRACT"),
    ("rm -rf src", ["src/*.py"], "PATH_OUTSIDE_CONTRACT"),
    ("make", ["src/**"], "WRITE_PATH_UNPROVEN"),
    ("echo x > src/a.py", [], "PATH_OUTSIDE_CONTRACT"),
    ("find src -name '*.py' -exec sed -i s/a/b/ {} +", ["src/**"], "WITHIN_CONTRACT"),
    ("find src -name '*.py' -exec sed -i s/a/b/ {} +", ["*.py"], "WITHIN_CONTRACT"),
    ("find src -name '*.py' -exec sed -i s/a/b/ {} +", ["src/*.py"], "PATH_OUTSIDE_CONTRACT"),
    ("find . -name '*.py' -exec sed -i s/a/b/ {} +", ["src/**"], "PATH_OUTSIDE_CONTRACT"),
    # a link inside the boundary leads where it points
    ("echo x > src/link/t.py", ["src/**"], "PATH_OUTSIDE_CONTRACT"),
    ("rm src/link/*.py", ["src/**"], "PATH_OUTSIDE_CONTRACT"),
    ("sed -i s/a/b/ src/link/t.py", ["src/**"], "PATH_OUTSIDE_CONTRACT"),
])
def test_shell_writes_under_files(proj, command, allowed, code):
    (proj / "src" / "link").symlink_to(proj / "outside")
    assert _decide(command, allowed, str(proj)).code == code


def test_unproven_shell_line_says_what_the_user_types(proj):
    decision = _decide("make -C src", ["src/**"], str(proj))
    assert decision.code == "WRITE_PATH_UNPROVEN"
    assert "`$stop-that-shit change files=**`" in decision.next


def test_a_tools_own_folder_drops_the_whole_reading(proj):
    # Patterns are not re-anchored in a tool's own working folder, so such a
    # line is not judged by them.
    action = sts.shell_action("Bash", "sed -i s/a/b/ src/*.py")
    assert action["shellWritesKnown"] is True
    moved = sts._in_run_folder(dict(action), str(proj / "outside"), True, str(proj))
    assert "shellWritesKnown" not in moved


def test_empty_files_says_no_path_is_writable(proj):
    decision = _decide("echo x > src/a.py", [], str(proj))
    culprit = sts.decision_culprit(
        sts.Action.from_dict(dict(sts.shell_action("Bash", "echo x > src/a.py"),
                                  cwd=str(proj), command="echo x > src/a.py")),
        decision, [])
    assert "no path is writable" in culprit
    assert "files=." not in culprit


def test_rm_of_a_file_does_not_reach_below_it():
    assert sts.analyze_shell("rm src/a.js").write_patterns == []
    assert sts.analyze_shell("unlink .git").write_patterns == []
    assert sts.analyze_shell("chmod 600 src/a.js").write_patterns == []
    assert sts.analyze_shell("rm -r src/a.js").write_patterns == ["src/a.js/**"]
    assert sts.analyze_shell("chmod -R 600 d").write_patterns == ["d/**"]
    assert sts.analyze_shell("rm --recursive d").write_patterns == ["d/**"]
    # rmdir still reaches the folder's contents (judged as the guard's when it holds them)
    assert sts.analyze_shell("rmdir d").write_patterns == ["d/**"]


def test_the_glob_matcher_agrees_with_pathlib_where_both_apply(proj):
    # PurePath.match is git-like for patterns without `**`: a cross-check, not the spec.
    from pathlib import PurePosixPath
    for pattern in ("src/*.py", "src/?.py", "src/[ab].py", "*/a.py"):
        for path in ("src/a.py", "src/ab.py", "lib/a.py", "src/d/a.py"):
            ours = not sts.paths_outside([path], [pattern], os.sep + "p")
            theirs = PurePosixPath(path).match(pattern) and \
                len(PurePosixPath(path).parts) == len(PurePosixPath(pattern).parts)
            assert ours == theirs, (pattern, path)


# ---- wrong reasons -------------------------------------------------------------

@pytest.mark.parametrize("tool_input,paths", [
    ({"url": "https://example.com"}, []),
    ({"url": "https://example.com/.git/config"}, []),
    ({"uri": "https://example.com/a.txt"}, []),
    ({"recipient": "mailto:a@example.com"}, []),
    ({"pages": [{"href": "http://x/y.html"}]}, []),
    # a file: URL, a path key's value and a drive are local paths
    ({"uri": "file:///tmp/a.txt"}, ["/tmp/a.txt"]),
    ({"path": "https://x/a"}, ["https://x/a"]),
    ({"target": "C:/a/b.txt"}, ["C:/a/b.txt"]),
    ({"note": "src/a.py"}, ["src/a.py"]),
])
def test_a_url_names_no_local_path(tool_input, paths):
    assert sts.path_arguments(tool_input) == (paths, True)


@pytest.mark.parametrize("text,path,hashing", [
    ("// TODO: maybe createHash later\n", "a.js", False),
    ("  // crypto.createHash('md5') one day\n", "a.ts", False),
    ("// sha256.Sum256 later\n", "main.go", False),
    ("# use Digest::SHA256 later\n", "a.rb", False),
    # the same names as code, after a comment line, or in a trailing comment
    ("const h = require('crypto').createHash('md5')\n", "a.js", True),
    ("// note\nconst h = crypto.createHash('md5')\n", "a.js", True),
    ("let x = 1; crypto.createHash('md5') // here\n", "a.js", True),
    ("x = Digest::SHA256.hexdigest(y)\n", "a.rb", True),
    ("h := sha256.Sum256(b)\n", "main.go", True),
    # where `#` starts code too, it is read as before
    ("# Digest::SHA256\n", "run.sh", True),
    ("#include <openssl/sha.h>\n", "a.c", True),
])
def test_hash_api_in_a_comment_is_not_hashing(text, path, hashing):
    assert sts.hash_intent_in_text(text, path) is hashing


# ---- plain python3 -c in a folder that shadows nothing ------------------------

PY_READS = [
    'python3 -c "import json; d=json.load(open(\'/tmp/x.json\')); print(d[\'k\'])"',
    "python3 - <<'PY'\nimport json\nprint(json.dumps({'a': 1}))\nPY",
    "cat a.json | python3 -m json.tool",
    "python3 -m json.tool a.json",
    'python -c "import sys; print(sys.version)"',
]
PY_NOT_FOLDER = [
    'python3 -I -c "print(1)"',                       # already proven: no folder needed
    'python3 -c "import os; os.remove(\'x\')"',       # code outside the subset
    'cd sub && python3 -c "print(1)"',                # runs in another folder
    '(cd sub; python3 -c "print(1)")',
    'env -C sub python3 -c "print(1)"',
    'bash -c \'python3 -c "print(1)"\'',
    'PYTHONPATH=lib python3 -c "print(1)"',
    'python3 -m json.tool a.json b.json',             # writes b.json
    "python3 - <<PY\nprint('$HOME')\nPY",            # expanded before Python reads it
]


@pytest.mark.parametrize("command", PY_READS)
def test_plain_python_is_a_read_but_for_the_folder(command):
    verdict = sts.analyze_shell(command)
    assert (verdict.mutability, verdict.python_folder) == ("unknown", True), verdict


@pytest.mark.parametrize("command", PY_NOT_FOLDER)
def test_python_look_alikes_are_not_folder_reads(command):
    assert sts.analyze_shell(command).python_folder is False


@pytest.fixture
def clean_env(monkeypatch):
    for key in list(os.environ):
        if key.startswith("PYTHON") and key not in sts._PY_HARMLESS_ENV:
            monkeypatch.delenv(key)
    return monkeypatch


def _placed(command, cwd):
    action = sts.shell_action("Bash", command)
    action["cwd"] = cwd
    return sts.place_call("claude", "Bash", action, {"command": command}, cwd)


@pytest.mark.parametrize("command", PY_READS)
def test_plain_python_reads_in_a_clean_folder(tmp_path, clean_env, command):
    (tmp_path / "src").mkdir()
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "__pycache__").mkdir()
    placed = _placed(command, str(tmp_path))
    # Python 3.9 has no list of its standard library to check the folder
    # against: there plain Python is never proven.
    expected = "read" if hasattr(sys, "stdlib_module_names") else "unknown"
    assert placed["mutability"] == expected and "pythonFolder" not in placed


@pytest.mark.parametrize("entry", [
    "json.py", "json", "json.pyc", "JSON.py", "json.cpython-311-x86_64-linux-gnu.so",
    "json.abi3.so", "linecache.py", "encodings", "sitecustomize.py", "_colorize.py",
    "re.py", "os.py", "abc.py", "site.py", "codecs.pyc",
])
def test_a_folder_that_may_shadow_a_module_keeps_it_unknown(tmp_path, clean_env, entry):
    target = tmp_path / entry
    if "." in entry:
        target.write_text("raise SystemExit('shadowed')\n")
    else:
        target.mkdir()
    for command in PY_READS:
        placed = _placed(command, str(tmp_path))
        assert placed["mutability"] == "unknown", (entry, command)
        assert "pythonFolder" not in placed


@pytest.mark.parametrize("variable", ["PYTHONPATH", "PYTHONHOME", "PYTHONWARNINGS",
                                      "PYTHONSTARTUP", "PYTHONCASEOK", "PYTHONUSERBASE"])
def test_a_python_variable_keeps_it_unknown(tmp_path, clean_env, variable):
    clean_env.setenv(variable, str(tmp_path))
    assert _placed(PY_READS[0], str(tmp_path))["mutability"] == "unknown"


def test_the_folder_check_is_what_python_does(tmp_path, clean_env):
    # Run the real interpreter: with a json.py in the folder plain -c imports it,
    # which is exactly when the guard keeps the line unknown.
    import subprocess
    import sys
    code = "import json; print(json.__file__)"
    clean = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path),
                           capture_output=True, text=True).stdout
    assert str(tmp_path) not in clean
    assert sts.python_folder_clean(str(tmp_path)) == hasattr(sys, "stdlib_module_names")
    (tmp_path / "json.py").write_text("__file__ = 'shadowed'\n")
    dirty = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path),
                           capture_output=True, text=True).stdout
    assert "shadowed" in dirty and not sts.python_folder_clean(str(tmp_path))


def test_no_folder_no_read(clean_env):
    action = sts.shell_action("Bash", PY_READS[0])
    assert sts.place_call("claude", "Bash", action, {"command": PY_READS[0]}, None)[
        "mutability"] == "unknown"


# ---- running a package the project declares ------------------------------------

# A wrapper that runs the line's own command in the same folder changes
# nothing here (`timeout 60 npx jest` is `npx jest`); one that moves does.
DECLARED_RUNS = ["npx mocha", "npx eslint .", "npx jest", "npx tsc --noEmit",
                 "timeout 60 npx jest", "time nice -n 5 npx eslint .",
                 "npx prisma generate", "npx tsx script.ts", "npx playwright test",
                 "npx -y eslint", "pnpm exec eslint", "npm exec -- eslint .", "bunx eslint",
                 "bun x eslint", "yarn exec eslint", "uvx ruff check ."]
ALWAYS_DEPENDENCY = ["npx eslint@9", "npx -p cowsay cowsay", "pnpm dlx eslint", "pnpx eslint",
                     "npx ./bin/x", "cd web && npx eslint", "env -C web npx jest",
                     "npx --registry=https://r.example eslint", "uvx --from ruff ruff",
                     "uvx ruff@0.5", "npm -g exec eslint"]


@pytest.fixture
def node_project(tmp_path):
    (tmp_path / "package.json").write_text(
        '{"devDependencies": {"mocha": "^10", "eslint": "^9", "jest": "^29", "prisma": "^5",'
        ' "tsx": "^4", "@playwright/test": "^1"}}')
    bin_dir = tmp_path / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    for name in ("tsc", "playwright"):
        (bin_dir / name).write_text("#!/bin/sh\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["requests>=2"]\n'
        '[dependency-groups]\ndev = ["Ruff >=0.5", "pytest"]\n')
    return tmp_path


def _dep(command, cwd):
    action = sts.shell_action("Bash", command)
    action["cwd"] = cwd
    placed = sts.place_call("claude", "Bash", action, {"command": command}, cwd)
    assert "runsPackages" not in placed
    return placed["dependencyIntent"]


@pytest.mark.parametrize("command", DECLARED_RUNS)
def test_running_a_declared_package_is_no_dependency_change(node_project, command):
    if command.startswith("uvx"):
        pytest.importorskip("tomllib")
    assert _dep(command, str(node_project)) is False
    # from a folder inside the project, npm finds the same package.json
    sub = node_project / "src"
    sub.mkdir()
    if not command.startswith("uvx"):
        assert _dep(command, str(sub)) is False


@pytest.mark.parametrize("command", DECLARED_RUNS)
def test_the_same_runs_elsewhere_are_dependency_changes(tmp_path, command):
    assert _dep(command, str(tmp_path)) is True            # no project there
    assert sts.analyze_shell(command).runs_packages         # and without a folder
    action = sts.shell_action("Bash", command)
    assert action["dependencyIntent"] is True


@pytest.mark.parametrize("command", ALWAYS_DEPENDENCY + ["npx cowsay", "uvx black",
                                                         "npx typescript-cli"])
def test_undeclared_or_fetched_packages_stay_dependency_changes(node_project, command):
    assert _dep(command, str(node_project)) is True


def test_a_bin_name_is_not_a_package_name(tmp_path):
    # typescript declared but not installed: `npx tsc` would fetch the package `tsc`.
    (tmp_path / "package.json").write_text('{"devDependencies": {"typescript": "^5"}}')
    assert _dep("npx tsc", str(tmp_path)) is True


def test_code_and_dockerfiles_that_run_npx_stay_dependency_changes(node_project):
    assert sts.code_action("eval", "py", "import os; os.system('npx eslint .')")[
        "dependencyIntent"] is True
    # In an image the project's packages are not the ones on this disk.
    assert sts._image_line("RUN npx eslint .") is True
    assert sts._image_line("RUN echo hi") is False


# ---- inline Python whose write targets follow from literals --------------------

@pytest.mark.parametrize("code,targets", [
    ("import shutil\nfor p in ('node_modules', 'bin'): shutil.rmtree(p)", ["node_modules", "bin"]),
    ("import shutil, os; [shutil.rmtree(os.path.join('build', d)) for d in ['a', 'b']]",
     ["build/a", "build/b"]),
    ("import shutil; p = 'dist'; shutil.rmtree(p)", ["dist"]),
    ("from shutil import rmtree as r; r('build')", ["build"]),
    ("import shutil; s = 'a'\nfor p in (s, 'b'): shutil.rmtree(p)", ["a", "b"]),
    ("import shutil; shutil.rmtree('out' + '/gen')", ["out/gen"]),
])
def test_python_write_targets_follow_from_literals(code, targets):
    verdict = sts.analyze_shell("python3 -c %s" % sts_quote(code))
    assert not verdict.unknown_target, verdict
    # (a literal that reads like a path, `'/gen'`, stays a target of its own too)
    assert [t for t in verdict.write_targets if t in targets] == targets
    assert verdict.write_patterns == [t + "/**" for t in targets]


@pytest.mark.parametrize("code", [
    "import shutil; p = 'dist'; p = '/etc'; shutil.rmtree(p)",     # bound twice
    "import shutil, sys; shutil.rmtree(sys.argv[1])",
    "import shutil as s; r = s.rmtree; r('x')",                     # handed on
    "import shutil; list(map(shutil.rmtree, ['x']))",
    "import shutil; sh = shutil; sh.rmtree('x')",
    "import shutil; getattr(shutil, 'rmtree')('x')",
    "import shutil\ndef f(p): shutil.rmtree(p)\nf('x')",            # a parameter
    "import shutil, glob\nfor p in glob.glob('*'): shutil.rmtree(p)",
    "import shutil; x = ['a']; x.append('/etc'); [shutil.rmtree(p) for p in x]",
    "import shutil; exec('p = 1'); shutil.rmtree('a')",
    "import shutil; globals()['p'] = '/'; shutil.rmtree('a')",
])
def test_python_write_targets_that_do_not_follow_stay_unknown(code):
    verdict = sts.analyze_shell("python3 -c %s" % sts_quote(code))
    assert verdict.mutability != "read" and verdict.unknown_target, (code, verdict)


def sts_quote(code):
    return "'" + code.replace("'", "'\"'\"'") + "'"


# patch and git apply from a here-document: the diff's headers name every file.
DIFF = "--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-a\n+b\n"


def _fed(command, diff=DIFF):
    return "%s <<'EOF'\n%sEOF" % (command, diff)


@pytest.mark.parametrize("command,targets", [
    (_fed("patch -p1"), ["src/a.py", "src/a.py.orig", "src/a.py.rej"]),
    (_fed("patch --strip=1 --no-backup-if-mismatch -r -"), ["src/a.py", "src/a.py.orig"]),
    (_fed("patch -p0"), ["a/src/a.py", "b/src/a.py"]),
    (_fed("patch -p1 -d sub"), ["sub/src/a.py", "sub/src/a.py.rej"]),
    (_fed("patch -p1 -o out.py"), ["out.py", "out.py.rej"]),
    (_fed("patch -p1 -b -N -s"), ["src/a.py", "src/a.py.orig"]),
    (_fed("git apply"), ["src/a.py"]),
    (_fed("git apply -p1 -v --recount"), ["src/a.py"]),
    (_fed("git apply --directory=lib"), ["lib/src/a.py"]),
    (_fed("git apply --reject"), ["src/a.py", "src/a.py.rej"]),
    # a wrapper runs the same patch in the same folder (intent survives wrappers)
    (_fed("sudo patch -p1"), ["src/a.py", "src/a.py.orig", "src/a.py.rej"]),
    # a removed line that reads like a header stays a line of the hunk
    (_fed("patch -p1", "--- a/src/a.py\n+++ b/src/a.py\n@@ -1,2 +1,2 @@\n--- x\n"
                       "+++ y\n-a\n+b\n"), ["src/a.py"]),
    # GNU patch renames and changes modes from git's headers alone
    (_fed("patch -p1", "diff --git a/x b/y\nsimilarity index 100%\nrename from x\n"
                       "rename to y\n"), ["x", "y"]),
])
def test_a_patch_on_stdin_names_its_files(command, targets):
    verdict = sts.analyze_shell(command)
    assert verdict.mutability == "write" and verdict.writes_known, verdict
    assert [t for t in targets if t not in verdict.write_targets] == []


@pytest.mark.parametrize("command", [
    "patch -p1 < fix.diff",                       # the diff is not on the line
    "cat fix.diff | patch -p1",
    _fed("patch"),                                # without -p patch picks base names
    _fed("patch -p1 src/b.py"),                   # a file named on the line
    _fed("patch -p1 -i other.diff"),
    _fed("patch -p1 -B bak/"),                    # backups named elsewhere
    _fed("patch -p1 -V numbered"),
    _fed("patch -p1 -z .bak"),
    _fed("patch -p1 -g 1"),                       # gets the file from RCS/SCCS
    _fed("patch -p1 -o -"),
    _fed("patch -p1 -p0"),
    _fed("patch -p$N"),
    "patch -p1 <<EOF\n--- a/$F\n+++ b/$F\n@@ -1 +1 @@\n-a\n+b\nEOF",
    _fed("patch -p1", "1d\n"),                   # an ed script: patch runs ed
    _fed("patch -p1", "*** a/src/a.py\n--- b/src/a.py\n"),   # a context diff
    _fed("patch -p1", "Binary files a/x and b/x differ\n"),
    _fed("patch -p1", "--- a/src/a b.py\n+++ b/src/a b.py\n@@ -1 +1 @@\n-a\n+b\n"),
    _fed("patch -p1", '--- "a/src/a.py"\n+++ "b/src/a.py"\n@@ -1 +1 @@\n-a\n+b\n'),
    _fed("patch -p1", DIFF + "-c\n"),             # a line past the hunk's count
    _fed("patch -p1", "--- a/src/a.py\n+++ b/src/a.py\n@@ -1,3 +1,3 @@\n-a\n+b\n"),
    _fed("patch -p3"),                            # as many parts as the name has
    _fed("git apply --index"),
    _fed("git apply --3way"),
    _fed("git apply --unsafe-paths"),
    _fed("git apply --include=src/*"),
    _fed("git apply", "diff --git a/src/a.py b/src/a.py\n" + DIFF),  # names from the top level
    _fed("git -C sub apply"),
])
def test_a_patch_that_may_write_unnamed_stays_unproven(command):
    verdict = sts.analyze_shell(command)
    assert verdict.mutability != "read" and not verdict.writes_known, (command, verdict)


@pytest.mark.parametrize("command,allowed,code", [
    (_fed("patch -p1"), ["src/**"], "WITHIN_CONTRACT"),
    (_fed("git apply"), ["src/*.py"], "WITHIN_CONTRACT"),
    (_fed("patch -p1"), ["src/a.py"], "PATH_OUTSIDE_CONTRACT"),   # a.py.rej beside it
    (_fed("patch -p1 -d outside"), ["src/**"], "PATH_OUTSIDE_CONTRACT"),
    (_fed("patch -p1", DIFF.replace("src/a.py", "outside/t.py")), ["src/**"],
     "PATH_OUTSIDE_CONTRACT"),
    (_fed("patch -p1", DIFF.replace("src/a.py", "src/../outside/t.py")), ["src/**"],
     "PATH_OUTSIDE_CONTRACT"),
    (_fed("patch -p1", DIFF.replace("src/a.py", "src/link/t.py")), ["src/**"],
     "PATH_OUTSIDE_CONTRACT"),
])
def test_patch_under_files(proj, command, allowed, code):
    (proj / "src" / "link").symlink_to(proj / "outside")
    assert _decide(command, allowed, str(proj)).code == code


@pytest.mark.skipif(shutil.which("patch") is None or shutil.which("git") is None,
                    reason="GNU patch or git is not installed")
@pytest.mark.parametrize("command", [
    _fed("patch -p1"), _fed("patch -p1 -b"), _fed("git apply"),
    _fed("patch -p1", DIFF.replace("-a\n", "-zzz\n")),     # rejected: .rej and .orig
    _fed("patch -p1 -d src", DIFF.replace("src/a.py", "a.py")),
])
def test_a_patch_writes_only_what_it_names(tmp_path, command):
    """Run for real: every file that appears or changes is one of the targets."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("a\n")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    subprocess.run(command, shell=True, cwd=str(tmp_path), stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, timeout=60, check=False)
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    changed = sorted(str(p.relative_to(tmp_path)) for p in after
                     if before.get(p) != after[p])
    assert changed, command
    targets = [os.path.normpath(t) for t in sts.analyze_shell(command).write_targets]
    assert [c for c in changed if c not in targets] == []


@pytest.mark.parametrize("command,read", [
    ('for f in dist/*.zip; do unzip -l "$f"; done', True),
    ("for f in a.zip b.zip; do unzip -l $f; done", True),
    ('for f in ./[-]*.zip; do unzip -l "$f"; done', True),
    ('for f in *.zip; do unzip -l "$f"; done', False),      # may match --t.zip
    ("for f in dist/*.zip; do unzip -l $f; done", False),   # a name with spaces splits
    ('for f in -t a.zip; do unzip -l "$f"; done', False),
    ('for f in a.zip; do unzip -l "$f"; done; f=--t; unzip -l $f', False),
    ('for f in dist; do unzip -l "$f"/*.zip; done', False),
    ('for f in dist/*.zip; do unzip -l "$f" -x "$g"; done', False),
    ('unzip -l "$f"', False),
    ('read f; unzip -l "$f"', False),
])
def test_unzip_listing_of_a_loop_variable(command, read):
    assert (sts.analyze_shell(command).mutability == "read") is read, command


@pytest.mark.skipif(shutil.which("unzip") is None, reason="unzip is not installed")
def test_a_listed_loop_leaves_the_folder_as_it_was(tmp_path):
    import zipfile
    (tmp_path / "dist").mkdir()
    for name in ("a.zip", "b c.zip"):
        with zipfile.ZipFile(str(tmp_path / "dist" / name), "w") as z:
            z.writestr("inner.txt", "x")
    command = 'for f in dist/*.zip; do unzip -l "$f"; done'
    assert sts.analyze_shell(command).mutability == "read"
    before = sorted(p.name for p in tmp_path.rglob("*"))
    done = subprocess.run(command, shell=True, cwd=str(tmp_path), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60, check=False)
    assert done.stdout.count(b"inner.txt") == 2
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_find_reports_no_path_through_a_linked_folder(tmp_path):
    """Run for real: what `find src -name x -exec sed -i` edits lies in src's
    real folders; a file behind a linked folder is left as it was."""
    (tmp_path / "src" / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "src" / "sub" / "x.py").write_text("a\n")
    (tmp_path / "outside" / "x.py").write_text("a\n")
    (tmp_path / "src" / "link").symlink_to(tmp_path / "outside")
    command = "find src -name '*.py' -exec sed -i s/a/b/ {} +"
    assert sts.analyze_shell(command).writes_known
    subprocess.run(command, shell=True, cwd=str(tmp_path), stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, timeout=60, check=False)
    assert (tmp_path / "src" / "sub" / "x.py").read_text() == "b\n"
    assert (tmp_path / "outside" / "x.py").read_text() == "a\n"
