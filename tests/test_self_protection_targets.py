"""Self-protection and files= for write targets the analyzer cannot spell out.

A shell write target may be a glob (`> dir/sts.p?`), a brace list, a variable
(`rm -rf $STS_HOME/*`), a command substitution or `~user`; a removal may name
the working folder itself (`rm -rf .`); a Windows host names paths its own way
(`C:\\Users\\dev\\repo\\lib\\b.js`).  While the guard is armed, a write whose
target could be one of the guard's files is stopped, and ordinary work goes
through.  Everything here runs the real hook code on each host's own payload
shape, with the guard's data folder on tmpfs (no disk sync needed for these).
"""
import json
import os
import shutil
import tempfile

import pytest

import sts
from hooks import hook
from test_self_protection import (CODE, HOSTS, MAIN_WRITE, SHELL_TOOLS, TOOL_EVENTS,
                                  WRITE_TOOLS, _shell_tool, denial, denied_code,
                                  prompt_event)

SHM = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
_ids = iter(range(10 ** 9))


# --- the world: a HOME with the guard's data, a project holding sts.py ----------------

class Place:
    """HOME, the data folder under it, a host config install wrote, and a project
    whose root holds the running sts.py (a copy: the hook protects `sts.__file__`)."""

    def __init__(self, root, monkeypatch):
        self.root = root
        self.home = os.path.join(root, "home")
        self.state = os.path.join(self.home, ".local", "state", "sts")
        self.project = os.path.join(self.home, "work", "proj")
        self.plain = os.path.join(self.home, "work", "plain")   # holds no guard file
        for folder in (self.state, os.path.join(self.project, "src"),
                       os.path.join(self.plain, "build"), os.path.join(self.home, ".claude")):
            os.makedirs(folder)
        self.guard = os.path.join(self.project, "sts.py")
        shutil.copyfile(sts.__file__, self.guard)
        self.settings = os.path.join(self.home, ".claude", "settings.json")
        with open(self.settings, "w") as fh:
            fh.write("{}\n")
        with open(os.path.join(self.state, "installed.json"), "w") as fh:
            json.dump({"paths": [self.settings]}, fh)
        for name in ("a.py", "b.py"):
            with open(os.path.join(self.project, "src", name), "w") as fh:
                fh.write("x = 1\n")
        monkeypatch.setenv("HOME", self.home)
        monkeypatch.setenv("STS_HOME", self.state)
        monkeypatch.setenv("TMPDIR", os.path.join(root, "tmp"))
        os.makedirs(os.path.join(root, "tmp"))
        monkeypatch.setattr(sts, "__file__", self.guard)
        # The hook must never use its own working folder: put it inside the data folder.
        monkeypatch.chdir(self.state)
        self.store = sts.Store(self.state)


@pytest.fixture
def place(monkeypatch):
    root = tempfile.mkdtemp(prefix="sts-targets-", dir=SHM)
    try:
        yield Place(os.path.realpath(root), monkeypatch)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def send(place, host, payload):
    return hook(host, payload, place.store)


def arm(place, host, directive="$stop-that-shit change", cwd=None):
    session = "targets-%d" % next(_ids)
    send(place, host, prompt_event(host, session, cwd or place.project, directive))
    return session


def shell(place, host, session, command, cwd):
    name, build = SHELL_TOOLS[(host, _shell_tool(host))]
    return send(place, host, TOOL_EVENTS[host](session, cwd, name, build(command)))


def write_tool(place, host, session, path, cwd):
    name, build = WRITE_TOOLS[(host, MAIN_WRITE[host])]
    return send(place, host, TOOL_EVENTS[host](session, cwd, name, build(path)))


def verdicts(place, command, cwd=None, directive="$stop-that-shit change"):
    """host -> reason code of the answer (None when the call may run)."""
    out = {}
    for host in HOSTS:
        session = arm(place, host, directive)
        out[host] = denied_code(host, shell(place, host, session, command, cwd or place.project))
    return out


def assert_all(place, command, code, cwd=None, directive="$stop-that-shit change"):
    got = verdicts(place, command, cwd, directive)
    assert set(got.values()) == {code}, (command, got)


# --- the analyzer: what each form of target becomes -----------------------------------

def analysis(command):
    result = sts.analyze_shell(command)
    return result.write_targets, result.write_patterns, result.unknown_target


@pytest.mark.parametrize("command,targets,patterns", [
    # globs and brace lists are kept as patterns, never dropped
    ("echo x > dir/sts.p?", [], ["dir/sts.p?"]),
    ("echo x >> 'a b'/s[tu]s.py", [], ["a b/s[tu]s.py"]),
    ("echo x | tee out/*.json", [], ["out/*.json"]),
    ("cp evil.py ./sts.*", [], ["./sts.*", "./sts.*/evil.py"]),
    ("echo x > {a,b}/sts.py", ["a/sts.py", "b/sts.py"], []),
    ("echo x > s{t,x}s.p{y,z}", ["sts.py", "sts.pz", "sxs.py", "sxs.pz"], []),
    ("echo x > {a,{b,c}}/f", ["a/f", "b/f", "c/f"], []),
    ("touch log{1..3}.txt", [], ["log*.txt"]),
    ("rm -rf build/*", [], ["build/*", "build/*/**"]),
    ("rm -rf *", [], ["*", "*/**"]),
    ("truncate -s 0 *.log", [], ["*.log"]),
    ("sed -i 's/a/b/' src/*.py", [], ["src/*.py"]),
    ("dd if=/dev/zero of=disk?.img", [], ["disk?.img"]),
    # a literal star in quotes is only itself
    ("echo x > 'a*b'", ["a*b"], []),
    # removals reach everything below what they remove, the working folder included
    ("rm -rf .", ["."], ["./**"]),
    ("rm -rf ..", [".."], ["../**"]),
    ("rm -r -- ./", ["./"], ["./**"]),
    ("rmdir src", ["src"], ["src/**"]),
    ("chmod -R 000 .", ["."], ["./**"]),
    ("git rm -r -q .", ["."], ["./**"]),
    ("mv ../proj ../old", ["../old", "../old/proj", "../proj"], ["../proj/**"]),
    ("find . -delete", [], ["./**"]),
    ("find . -name '*.pyc' -delete", [], ["./**/*.pyc"]),
    ("find src -name x -exec rm -f {} +", [], ["src/**/x"]),
    ("find src -name x -exec rm -rf {} +", [], ["src/**/x", "src/**/x/**"]),
    # a link to a guard file would open it to a later write: its target counts
    ("ln -s ~/.local/state/sts cache", ["cache", "cache/sts", "~/.local/state/sts"],
     ["~/.local/state/sts/**"]),
    ("cp -al /opt/x snap", ["snap", "snap/x", "/opt/x"], ["snap/x/**", "/opt/x/**"]),
    # copies name dest and dest/source (dest may be a folder)
    ("cp /tmp/sts.py .", [".", "./sts.py"], []),
    ("rsync -a --delete src/ out/", ["out/"], ["out/**", "out/*", "out/*/**"]),
    ("install -m 755 tool /usr/local/bin/", ["/usr/local/bin/", "/usr/local/bin/tool"], []),
    # $PWD and $(pwd) are the working folder
    ("echo x > \"$PWD/notes\"", ["./notes"], []),
    ("echo x > $(pwd)/notes", ["./notes"], []),
    ("cd sub && echo x > \"$PWD\"/n", ["sub/./n"], []),
    # a loop variable is each word of its list
    ("for f in a.txt b.txt; do rm \"$f\"; done", ["a.txt", "b.txt"], []),
    ("for f in a b; do rm -r \"$f\"; done", ["a", "b"], ["a/**", "b/**"]),
    ("for f in src/*.py; do sed -i s/a/b/ $f; done", [], ["src/*.py"]),
    # awk, perl -i, sort -o, git --output, curl -o name their files
    ("awk '{print > \"out.txt\"}' in", ["out.txt"], []),
    ("perl -pi -e 's/a/b/' x.txt", ["x.txt"], []),
    ("sort -o sorted.txt in", ["sorted.txt"], []),
    ("git diff --output=d.patch", ["d.patch"], []),
    ("curl -o page.html https://example.com", ["page.html"], []),
    ("gunzip data.csv.gz", ["data.csv.gz", "data.csv"], []),
    ("git archive -o out.tgz HEAD", ["out.tgz"], []),
    ("git format-patch -o out HEAD~2", ["out"], []),
    ("git bundle create all.bundle --all", ["all.bundle"], []),
    ("tar xf deps.tar", ["."], []),
    ("unzip -o a.zip -d vendor", ["vendor"], []),
])
def test_glob_brace_and_removal_targets(command, targets, patterns):
    got_targets, got_patterns, unknown = analysis(command)
    assert (got_targets, got_patterns, unknown) == (targets, patterns, False), command


def test_trusted_variables_resolve_from_the_hook_environment(monkeypatch):
    monkeypatch.setenv("HOME", "/home/dev")
    monkeypatch.setenv("TMPDIR", "/var/tmp/dev")
    monkeypatch.delenv("TMP", raising=False)
    assert analysis('echo x > "$TMPDIR/x"') == (["/var/tmp/dev/x"], [], False)
    assert analysis("echo x > ${HOME}/.bashrc") == (["/home/dev/.bashrc"], [], False)
    assert analysis('echo x > "${TMP:-/tmp}/log"') == (["/tmp/log"], [], False)
    assert analysis("rm -rf $HOME/*") == ([], ["/home/dev/*", "/home/dev/*/**"], False)
    # $(mktemp) is a new name in the temporary folder
    assert analysis("d=$(mktemp -d); echo x > \"$d/y\"")[1] == ["/var/tmp/dev/*/y"]
    # A trusted variable whose value splits or globs when unquoted is not a single path.
    monkeypatch.setenv("TMPDIR", "/var/tmp/my dir")
    assert analysis("echo x > $TMPDIR/x")[2] is True
    assert analysis('echo x > "$TMPDIR/x"') == (["/var/tmp/my dir/x"], [], False)


def test_variables_the_line_sets_take_every_value_it_gives(monkeypatch):
    monkeypatch.delenv("OUT", raising=False)
    targets, patterns, unknown = analysis('OUT=build/x; cp a "$OUT"')
    assert "build/x" in targets and not unknown
    # `export` and `declare` set them as well; a branch counts everywhere.
    assert "dist/y" in analysis('export OUT=dist/y && cp a "$OUT"')[0]
    both = analysis('if true; then D=a; else D=b; fi; rm -rf "$D/x"')[0]
    assert "a/x" in both and "b/x" in both
    # The environment's value is one of them: STS_HOME set by the line still reaches
    # the real one the line might leave untouched.
    monkeypatch.setenv("STS_HOME", "/data/sts")
    assert "/data/sts/x" in analysis('[ -n "$X" ] || STS_HOME=/tmp; rm -rf "$STS_HOME/x"')[0]


@pytest.mark.parametrize("command", [
    "rm -rf $STS_HOME/*",                          # a variable the guard does not read
    'echo off > "$XDG_STATE_HOME/stop-that-shit/x"',
    'cp a "$OUT"',
    "echo x > ~root/.bashrc",                      # ~user
    "echo x > ~-/f",                               # the previous folder
    "echo x > ~1/f",                               # the folder stack
    "echo x > $(git rev-parse --show-toplevel)/x",  # a substitution
    "echo x > `cat where`/x",
    "echo x > \"${P%/*}\"/x",                      # an expansion other than ${NAME:-word}
    "echo x > $1",
    "read d; rm -rf \"$d\"",                       # read sets it from input
    "eval d=/x; rm -rf \"$d\"",                    # eval may set anything
    "source env.sh && rm -rf \"$HOME/x\"",
    "for f; do rm \"$f\"; done",                   # the positional parameters
    "for f in $(ls); do rm \"$f\"; done",
    "ls | xargs rm",                               # names from input
    "find . -name x | xargs -I{} mv {} /tmp",      # mv removes what it moves
    "cd \"$X\" && rm -f notes",                    # a folder the guard cannot follow
    "sort $OPTS in.txt",                           # may become -o FILE
    'find "$D" -name x',                           # may become -delete
    "git log $ARGS",                               # may become --output=FILE
    "sed -n \"$SCRIPT\" f",                        # may hold a w FILE command
    "awk '{print > $1}' in",
    "dd if=a of=$OUT",
    "tee -a \"$LOG\"",
    "ln -s \"$T\" link",
    "sudo rm -rf \"$D\"",
    "env X=1 rm -f \"$D\"",
    "bash -c 'rm -rf \"$D\"'",
    "echo x > $((1+2))$X",
])
def test_unestablished_targets_are_unknown(command):
    assert sts.analyze_shell(command).unknown_target is True, command


@pytest.mark.parametrize("command", [
    "rm -rf build", "echo x > out.txt", "cp a b", "git checkout -- src/a.py",
    "mkdir -p a/{b,c}", "touch notes.md", "echo $HOME > f", "cat $X > out.txt",
    "python3 -c 'open(\"x\", \"w\")'",   # a program's own writes are not targets at all
])
def test_spelled_out_targets_are_not_unknown(command):
    assert sts.analyze_shell(command).unknown_target is False, command


# --- self-protection through the hook: unestablished targets ---------------------------

@pytest.mark.parametrize("command", [
    "echo off > ~/.local/state/st?/installed.json",
    "echo '{}' > ~/.claude/setting[s].json",
    "rm -f ~/.claude/*.json",
    "cp /dev/null ~/.{claude,codex}/settings.json",
    "rm -rf ~/.local/state/*",
    "truncate -s 0 $HOME/.local/state/sts/installed.json",
    "echo x > \"${HOME}/.claude/settings.json\"",
    "rm -rf $STS_HOME/*",
    "echo x > \"$STS_HOME/sessions/k.json\"",
    "rm -rf \"$(dirname ~/.claude/settings.json)\"",
    "for d in ~/.claude ~/.cache; do rm -rf \"$d\"; done",
    "T=~/.claude; rm -rf \"$T\"",
    "echo x > ~nobody/x",
    # the same reached another way
    "cd ~/.local/state/sts && tar xf /tmp/e.tar",
    "cd ~/.local/state && rm -rf s*",
    "pushd ~/.local/state/sts && rm -f *.json",
    "shopt -s nocaseglob; rm -rf ~/.local/state/STS*",
    "IFS=.; rm -rf $HOME",
    "find ~ -name installed.json -delete",
    "find / -path '*state*' -delete",
    'rm -rf "${HOME}"/.local/state/"${X:-sts}"',
    'd=.local/state/sts; rm -rf ~/"$d"',
    "echo x 1<> ~/.claude/settings.json",
    "exec 3>~/.claude/settings.json",
    "echo x >| ~/.claude/settings.json",
    "echo x > ~/.local/state/sts/sessions/$(date +%s).json",
    'while read f; do rm "$f"; done < list.txt',
    "ls | xargs -I{} mv {} /tmp",
    "sudo -u root find ~/.local -delete",
    "bash -c 'rm -rf $STS_HOME'",
    "git archive -o ~/.claude/settings.json HEAD",
    "git bundle create ~/.local/state/sts/b HEAD",
    # an option that writes a file its table does not name, or whose value
    # may split into more options
    "yq -i '.permissions = {}' ~/.claude/settings.json",
    "sort -k $K -o ~/.claude/settings.json a.txt",
    "env -C $D rm -f settings.json",
])
def test_unestablished_targets_that_may_be_guard_files_are_stopped(place, command):
    assert_all(place, command, CODE)


@pytest.mark.parametrize("command", [
    "rm -rf build/*",
    "rm -rf build dist",
    'echo x > "$TMPDIR/x"',
    "echo x > ${TMPDIR:-/tmp}/y",
    "d=$(mktemp -d) && cp src/a.py \"$d/\"",
    "for f in src/*.py; do sed -i 's/x/y/' \"$f\"; done",
    "sed -i 's/x = 1/x = 2/' src/*.py",
    "find . -name '*.pyc' -delete",
    "mkdir -p out/{a,b} && touch out/{a,b}/x",
    "OUT=build/out.txt; echo x > \"$OUT\"",
    "cp src/a.py .",
    "git add .",
    "echo x > \"$PWD/notes.md\"",
    "tar xzf /tmp/deps.tgz",
    "unzip -o /tmp/a.zip -d build",
    "set -e; rm -rf build/*",
])
def test_ordinary_change_work_goes_through(place, command):
    assert_all(place, command, None, cwd=place.project)


@pytest.mark.parametrize("command,code", [
    # Syntax the analyzer does not read may wrap any write: when the line names a
    # program that writes files, or redirects output, its target is unknown.
    ("[[ 1 ]] && rm -rf ~/.local/state/sts", CODE),
    ("case x in x) rm -rf ~/.claude;; esac", CODE),
    ("function f { rm -rf ~/.claude; }; f", CODE),
    ("(( 1 )) && echo x > ~/.claude/settings.json", CODE),
    ("[[ -f a ]] && git checkout -- .", CODE),
    ("select x in a; do sed -i d ~/.claude/settings.json; done", CODE),
    # ...and a line that names none is left to the other checks.
    ("[[ -f a ]] && git status", None),
    ("[[ -n \"$X\" ]] && python3 build.py", None),
    ("[[ -f a ]] && echo ok >/dev/null 2>&1", None),
])
def test_writes_inside_syntax_the_analyzer_does_not_read(place, command, code):
    assert_all(place, command, code)


@pytest.mark.parametrize("command,code", [
    # Inline code can write any file it names, and any file it finds at run time:
    # the path literals are its targets, home, environment and listings unknown ones.
    ("python3 -c \"open('sts.py', 'w').write('')\"", CODE),
    ("python3 -c \"import os; os.remove(os.path.expanduser('~/.claude/settings.json'))\"", CODE),
    ("python3 -c \"import os; open(os.environ['HOME'] + '/.bashrc', 'a')\"", CODE),
    ("python3 -c \"import shutil, pathlib; shutil.rmtree(pathlib.Path.home() / '.local')\"", CODE),
    ("node -e \"require('fs').unlinkSync(process.env.STS_HOME + '/installed.json')\"", CODE),
    ("perl -e \"unlink 'sts.py'\"", CODE),
    ("ruby -e \"File.write('sts.py', '')\"", CODE),
    ("python3 - <<'EOF'\nopen('sts.py', 'w')\nEOF", CODE),
    ("node <<'EOF'\nrequire('fs').writeFileSync('sts.py', '')\nEOF", CODE),
    ("python3 -c \"$CODE\"", CODE),
    # ...and code that names only its own files goes through.
    ("python3 -c \"open('build/out.txt', 'w').write('x')\"", None),
    ("python3 -c \"print(open('src/a.py').read())\"", None),
    ("node -e \"console.log(require('fs').readFileSync('src/a.py', 'utf8'))\"", None),
])
def test_inline_code_names_its_targets(place, command, code):
    assert_all(place, command, code, cwd=place.project)


RENAME_INTO_GUARD = "diff --git a/x b/sts.py\nrename from x\nrename to sts.py\n"
EDIT_GUARD = "--- a/sts.py\n+++ b/sts.py\n@@ -1 +1 @@\n-x\n+y\n"
EDIT_SOURCE = "--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


@pytest.mark.parametrize("command,code", [
    # A patch on stdin names its files; a patch file, a piped patch or one
    # applied from another folder changes files the line does not name.
    ("git apply <<'EOF'\n%sEOF" % EDIT_GUARD, CODE),
    ("patch -p1 <<'EOF'\n%sEOF" % EDIT_GUARD, CODE),
    ("git apply <<'EOF'\n%sEOF" % RENAME_INTO_GUARD, CODE),
    ("git apply fix.patch", CODE),
    ("patch -p1 < fix.diff", CODE),
    ("cat fix.diff | git apply", CODE),
    ("git -C ../other apply <<'EOF'\n%sEOF" % EDIT_SOURCE, CODE),
    ("git apply <<'EOF'\n%sEOF" % EDIT_SOURCE, None),
    ("patch -p1 <<'EOF'\n%sEOF" % EDIT_SOURCE, None),
])
def test_patches_applied_through_the_shell(place, command, code):
    assert_all(place, command, code, cwd=place.project)


@pytest.mark.parametrize("command,code", [
    # What would make a later `git status` or `git diff` run code: a hook git
    # runs by itself, a setting that names a program.  Other settings are work.
    ("echo 'touch /tmp/x' > .git/hooks/post-index-change", CODE),
    ("cp /tmp/evil .git/hooks/pre-commit", CODE),
    ("git config core.fsmonitor 'touch /tmp/x'", CODE),
    ("git config --local diff.external ./x", CODE),
    ("git config set core.hooksPath .githooks", CODE),
    ("git config --global alias.st '!sh -c x'", CODE),
    ("git config --add include.path ../other.cfg", CODE),
    ("git config diff.bin.textconv ./x", CODE),
    ("echo '[core] fsmonitor = x' >> .git/config", CODE),
    ("printf '[alias]\\n s = !sh\\n' >> ~/.gitconfig", CODE),
    ("git config user.email dev@example.com", None),
    ("git config --get core.pager", None),
    ("git config --unset core.pager", None),
    ("git status", None),
    ("git add -A && git commit -m x", None),
])
def test_git_hooks_and_settings_that_run_code(place, command, code):
    os.makedirs(os.path.join(place.project, ".git", "hooks"), exist_ok=True)
    assert_all(place, command, code, cwd=place.project)


@pytest.mark.parametrize("command,code", [
    # Config that turns a proven read into a write or a program run
    ("echo 'output = /tmp/x' >> ~/.curlrc", CODE),
    ("echo 'output_document = /tmp/x' > ~/.wgetrc", CODE),
    ("cp /tmp/evil.yaml ~/.kube/config", CODE),
    ("echo 'pager: sh' >> ~/.config/gh/config.yml", CODE),
    ("echo 'log-file /tmp/x' >> ~/.gnupg/gpg.conf", CODE),
    # (appended: `>` over a file outside the workspace is a matter of undo=)
    ("echo 'x' >> ~/notes.txt", None),
])
def test_tool_settings_that_make_reads_run_code(place, command, code):
    os.makedirs(os.path.join(place.project, ".git", "hooks"), exist_ok=True)
    assert_all(place, command, code, cwd=place.project)


def test_powershell_writes_behind_a_variable_are_unknown_targets(place):
    session = arm(place, "claude")
    for command, code in (("Remove-Item $env:USERPROFILE\\.claude -Recurse", CODE),
                          ("Set-Content -Path $p -Value x", CODE),
                          ("Get-Content $env:USERPROFILE\\notes.txt", None)):
        payload = TOOL_EVENTS["claude"](session, place.project, "PowerShell",
                                        {"command": command})
        assert denied_code("claude", send(place, "claude", payload)) == code, command


def test_an_unknown_target_is_stopped_with_its_own_advice(place):
    for host in HOSTS:
        session = arm(place, host)
        text = denial(host, shell(place, host, session, 'cp a "$OUT"', place.project))
        assert "Code: I/%s" % CODE in text
        assert "cannot establish" in text and "literal path" in text


def test_watch_and_off_do_not_stop_unknown_targets(place):
    for host in HOSTS:
        session = arm(place, host, "$stop-that-shit change watch")
        assert denial(host, shell(place, host, session, "rm -rf $STS_HOME/*",
                                  place.project)) is None
        session = arm(place, host, "$stop-that-shit off")
        assert denial(host, shell(place, host, session, "rm -rf $STS_HOME/*",
                                  place.project)) is None


# --- removals of a folder holding a guard file, the working folder included ------------

@pytest.mark.parametrize("command", [
    "rm -rf .", "rm -rf ./", "rm -rf ..", "rm -rf *", "rm -rf -- *", "rm -rf ./*",
    "rm -rf \"$PWD\"", "rm -rf $(pwd)", "rm -rf ../proj", "rm -r .", "\\rm -rf .",
    "command rm -rf .", "sudo rm -rf .", "env rm -rf .", "find . -delete", "find . -exec rm {} +",
    "find . -name 'sts.*' -delete", "git rm -r -f .", "git clean -fdx .", "chmod -R 000 .",
    "mv . ../elsewhere", "mv ../proj ../moved", "rm -rf s*", "shred -u *.py",
    "cd .. && rm -rf proj", "bash -c 'rm -rf .'", "rmdir ../proj", "rsync -a --delete /tmp/empty/ .",
    "sed -i 's/def/xdef/' *.py", "echo x > s?s.py", "rm -rf {sts,x}.py",
])
def test_removing_the_folder_that_holds_the_guard_is_stopped(place, command):
    assert_all(place, command, CODE, cwd=place.project)


@pytest.mark.parametrize("command", [
    "rm -rf .", "rm -rf *", "find . -delete", "chmod -R 755 .", "git rm -r -q .",
    "sed -i 's/a/b/' *", "rm -rf \"$PWD\"",
])
def test_the_same_removals_in_a_folder_without_guard_files_go_through(place, command):
    # (Removing or re-permissioning the workspace as a whole is irreversible,
    # a matter of undo=: allowed here, so that only self-protection is asked.)
    assert_all(place, command, None, cwd=place.plain,
               directive="$stop-that-shit change undo=allow")


def test_git_add_and_copies_into_the_working_folder_stay_allowed(place):
    # Naming the working folder as the place a write goes is not removing it.
    for command in ("git add .", "cp /etc/hostname .", "touch .", "mkdir -p ./src"):
        assert_all(place, command, None, cwd=place.project)
    # ...unless the copy lands on the guard itself.
    assert_all(place, "cp /tmp/x.py ./sts.py", CODE, cwd=place.project)
    assert_all(place, "cp /tmp/sts.py .", CODE, cwd=place.project)


def test_a_glob_that_matches_a_link_into_the_data_folder(place):
    os.symlink(place.state, os.path.join(place.plain, "cache"))
    for command in ("rm -rf c*/installed.json", "echo x > ca?he/installed.json",
                    "rm -rf ./*/sessions"):
        assert_all(place, command, CODE, cwd=place.plain)
    # a glob that matches nothing of the guard's
    assert_all(place, "rm -rf b*/x", None, cwd=place.plain)


def test_linking_to_a_guard_file_is_stopped(place):
    for command in ("ln -s ~/.local/state/sts cache", "ln -s ~/.claude/settings.json s.json",
                    "ln ~/.claude/settings.json hard.json", "cp -s ~/.claude/settings.json x",
                    "ln -sf ../proj/sts.py guard.py", "ln -s ~ h"):
        assert_all(place, command, CODE, cwd=place.plain)
    assert_all(place, "ln -s ../plain/build b", None, cwd=place.plain)


# --- files=: a write that may land outside the lock is outside -------------------------

@pytest.mark.parametrize("command,code", [
    # an unknown target could be a guard file: that check comes first
    ('cp a "$OUT"', CODE),
    ("rm -rf $X/*", CODE),
    ("echo x > ../*.txt", "PATH_OUTSIDE_CONTRACT"),
    ("echo x > /tmp/x", "PATH_OUTSIDE_CONTRACT"),
    ("rm -rf *", "PATH_OUTSIDE_CONTRACT"),
    ("echo x > src/../../x", "PATH_OUTSIDE_CONTRACT"),
    # inside, by programs whose every write is named: judged by those targets
    ("sed -i s/a/b/ src/*.py", None),
    ("rm -f src/a.py", None),
    ("echo x > src/a.py && touch src/b.py && cp src/a.py src/c.py", None),
    # inside, but the program may write elsewhere too: approval as before
    ("make -C src", "WRITE_PATH_UNPROVEN"),
    ("sed -i.bak s/a/b/ src/a.py", "WRITE_PATH_UNPROVEN"),
    ("rm src/*/a.py", "WRITE_PATH_UNPROVEN"),
])
def test_files_boundary_treats_unestablished_targets_as_outside(place, command, code):
    for host in HOSTS:
        # undo=allow: a target outside the workspace is undo='s first, files= here.
        session = arm(place, host, "$stop-that-shit change files=src/** undo=allow")
        got = denied_code(host, shell(place, host, session, command, place.plain))
        assert got == code, (host, command, got)


def test_files_boundary_of_everything_waives_it(place):
    for host in HOSTS:
        session = arm(place, host, "$stop-that-shit change files=**")
        assert denial(host, shell(place, host, session, "echo x > /tmp/*.txt",
                                  place.plain)) is None


def _decide(action, allowed):
    state = sts.default_state()
    state["contract"].update(mode="change", level="guard", source="directive",
                             allowedPaths=allowed)
    return sts.decide(action, state, action_id=None, declared=True).code


def test_files_boundary_alone_reads_an_unknown_target_as_outside():
    # Without self-protection in the way (no protected set), files= decides by itself.
    unknown = sts.Action(name="Bash", mutability="write", cwd="/proj",
                         unknown_write_target=True)
    assert _decide(unknown, ["src/**"]) == "PATH_OUTSIDE_CONTRACT"
    assert _decide(unknown, ["**"]) == "WITHIN_CONTRACT"
    inside = sts.Action(name="Bash", mutability="write", cwd="/proj",
                        shell_write_patterns=["src/*.py", "src/gen/**"])
    assert _decide(inside, ["src/**"]) == "WRITE_PATH_UNPROVEN"
    for pattern in ("*.py", "src/../*.py", "/etc/*", "sr?/x"):
        outside = sts.Action(name="Bash", mutability="write", cwd="/proj",
                             shell_write_patterns=[pattern])
        assert _decide(outside, ["src/**"]) == "PATH_OUTSIDE_CONTRACT", pattern
    exact = sts.Action(name="Bash", mutability="write", cwd="/proj",
                       shell_write_targets=["/proj/src/a.py", "/etc/hosts"])
    assert _decide(exact, ["src/**"]) == "PATH_OUTSIDE_CONTRACT"


# --- Windows paths: absolute on every OS, never the hook's own folder -------------------

WIN_CWD = "C:\\Users\\dev\\repo"


@pytest.mark.parametrize("path,inside", [
    ("C:\\Users\\dev\\repo\\lib\\b.js", True),
    ("C:/Users/dev/repo/lib/b.js", True),
    ("c:\\users\\dev\\REPO\\lib\\c.js", True),
    ("lib\\b.js", True),
    ("lib/b.js", True),
    ("C:\\Users\\dev\\other\\b.js", False),
    ("D:\\repo\\lib\\b.js", False),
    ("\\\\server\\share\\lib\\b.js", False),
    ("C:\\Users\\dev\\repo\\..\\x.js", False),
])
@pytest.mark.parametrize("host", HOSTS)
def test_windows_paths_are_judged_by_files_not_by_self_protection(place, host, path, inside):
    # The hook runs inside the data folder (see Place): a POSIX reading of the path
    # joined to the hook's folder would land there and be taken for the guard's files.
    session = arm(place, host, "$stop-that-shit change files=lib/**", cwd=WIN_CWD)
    got = write_tool(place, host, session, path, WIN_CWD)
    assert denied_code(host, got) == (None if inside else "PATH_OUTSIDE_CONTRACT"), got
    session = arm(place, host, "$stop-that-shit change", cwd=WIN_CWD)
    assert denial(host, write_tool(place, host, session, path, WIN_CWD)) is None


@pytest.mark.parametrize("host", HOSTS)
def test_a_relative_write_without_a_folder_is_not_placed_in_the_hooks_folder(place, host):
    # No working folder in the event: the folder is unknown, not the hook's own (which
    # is the data folder here); a relative target could be anywhere, a guard file too.
    session = arm(place, host)
    name, build = WRITE_TOOLS[(host, MAIN_WRITE[host])]
    payload = TOOL_EVENTS[host](session, None, name, build("installed.json"))
    payload.pop("cwd", None)
    got = denied_code(host, send(place, host, payload))
    assert got in (CODE, None), got
    if got is None:
        # Hosts whose shim always sends a folder fill it in; the event then has one.
        assert host in ("opencode", "pi", "omp")


def test_resolve_event_path_by_the_rules_of_the_path(monkeypatch, tmp_path):
    monkeypatch.chdir(str(tmp_path))
    resolve = sts.resolve_event_path
    assert resolve("C:\\a\\..\\b\\c.js", None) == "C:\\b\\c.js" or os.name == "nt"
    assert resolve("C:/x/y", "/proj") in ("C:\\x\\y", "C:/x/y")
    assert resolve("lib\\b.js", WIN_CWD, physical=False) == WIN_CWD + "\\lib\\b.js"
    assert resolve("//srv/share/x", WIN_CWD, physical=False) == "\\\\srv\\share\\x"
    assert resolve("//srv/share/x", "/proj", physical=False) == "//srv/share/x" or \
        resolve("//srv/share/x", "/proj", physical=False) == "/srv/share/x"
    assert resolve("a/b", None) is None
    assert resolve("a/b", "relative/folder") is None
    assert resolve("a/../b", "/proj", physical=False) == "/proj/b"
    assert resolve("/etc/hosts", None, physical=False) == "/etc/hosts"
    assert resolve("", "/proj") is None
    monkeypatch.setenv("HOME", "/home/dev")
    assert resolve("~/x", None, physical=False) == "/home/dev/x"


# --- the command-hook hosts added later (Gemini CLI, Copilot CLI, Qwen Code) -----------
#
# Their events come from the recorded runs, with the folder and the path swapped in.

def _recorded(name, event, tool_key, tool):
    from hooks import kit_call, kit_calls
    calls = kit_calls(name)
    prompt = next(s for e, s in calls if e in ("BeforeAgent", "UserPromptSubmit",
                                               "userPromptSubmitted"))
    return prompt, kit_call(calls, event, tool)


NEW_HOSTS = {
    # host: (recorded run, tool event, tool key, write tool, args key, path key, shell tool)
    "gemini": ("gemini-write-allow", "BeforeTool", "tool_name", "write_file", "tool_input",
               "file_path", "run_shell_command"),
    "qwen": ("qwen-write-allow", "PreToolUse", "tool_name", "write_file", "tool_input",
             "file_path", "run_shell_command"),
    "copilot": ("copilot-write-allow", "preToolUse", "toolName", "create", "toolArgs", "path",
                "bash"),
}


def _new_host_send(place, host, event, payload):
    return hook(host, payload, place.store, event)


def _new_host_session(place, host, cwd, directive):
    run, event, key, tool, args_key, path_key, _ = NEW_HOSTS[host]
    prompt, call = _recorded(run, event, key, tool)
    session = "targets-%d" % next(_ids)
    sid = "sessionId" if "sessionId" in prompt else "session_id"
    prompt_event_name = {"gemini": "BeforeAgent", "qwen": "UserPromptSubmit",
                         "copilot": "userPromptSubmitted"}[host]
    extra = {"submitted_prompt": directive} if host == "qwen" else {}
    _new_host_send(place, host, prompt_event_name,
                   dict(prompt, cwd=cwd, prompt=directive, **{sid: session}, **extra))
    return session, call, sid


@pytest.mark.parametrize("host", sorted(NEW_HOSTS))
@pytest.mark.parametrize("path,inside", [("C:\\Users\\dev\\repo\\lib\\b.js", True),
                                         ("C:/Users/dev/repo/lib/b.js", True),
                                         ("lib\\b.js", True),
                                         ("D:\\repo\\lib\\b.js", False),
                                         ("\\\\server\\share\\b.js", False)])
def test_windows_paths_on_the_later_hosts(place, host, path, inside):
    run, event, key, tool, args_key, path_key, _ = NEW_HOSTS[host]
    session, call, sid = _new_host_session(place, host, WIN_CWD,
                                           "$stop-that-shit change files=lib/**")
    payload = dict(call, cwd=WIN_CWD, **{sid: session})
    payload[args_key] = dict(call[args_key], **{path_key: path})
    text = denial(host, _new_host_send(place, host, event, payload))
    assert (text is None) == inside, text
    if not inside:
        assert "PATH_OUTSIDE_CONTRACT" in text


@pytest.mark.parametrize("host", sorted(NEW_HOSTS))
def test_unknown_targets_and_removals_on_the_later_hosts(place, host):
    run, event, key, tool, args_key, path_key, shell_tool = NEW_HOSTS[host]
    session, call, sid = _new_host_session(place, host, place.project, "$stop-that-shit change")
    for command, stopped in (("rm -rf $STS_HOME/*", True), ("rm -rf .", True),
                             ("echo x > ~/.claude/setting?.json", True),
                             ("rm -rf build/*", False), ('echo x > "$TMPDIR/x"', False)):
        payload = dict(call, cwd=place.project, **{sid: session, key: shell_tool,
                                                   args_key: {"command": command}})
        text = denial(host, _new_host_send(place, host, event, payload))
        assert (text is not None and CODE in text) == stopped, (host, command, text)


def test_the_wire_carries_patterns_and_rejects_a_malformed_list(tmp_path):
    base = {"name": "Bash", "mutability": "write", "cwd": str(tmp_path)}
    action = sts.Action.from_dict(dict(base, shellWritePatterns=["*.py"],
                                       unknownWriteTarget=True))
    assert action.shell_write_patterns == ["*.py"] and action.unknown_write_target
    for bad in ("*.py", [1], {"a": 1}):
        with pytest.raises(sts.EventError):
            sts.Action.from_dict(dict(base, shellWritePatterns=bad))
    # The analyzer's own answer reaches the wire the same way.
    shell = sts.shell_action("Bash", "rm -f ~/.claude/*.json")
    assert shell["shellWritePatterns"] == ["~/.claude/*.json"]   # rm without -r: no folder
    assert "unknownWriteTarget" not in shell
    assert shell["shellWritesKnown"] is True
    assert "shellWritesKnown" not in sts.shell_action("Bash", "make")
    assert sts.shell_action("Bash", 'rm -f "$X"')["unknownWriteTarget"] is True


# --- a name removed as itself: rm and unlink of a folder fail -------------------------

@pytest.mark.parametrize("command,code", [
    ("rm .git", None), ("rm -f .git", None), ("unlink .git", None), ("rm -d .git", None),
    ("rm -fv -- .git", None), ("shred .git", None),
    # below the name, the name of a guard folder itself, or another write to the name
    ("rm -r .git", CODE), ("rm -rf .git", CODE), ("rm --recursive .git", CODE),
    ("rmdir .git", CODE), ("chmod 000 .git", CODE), ("mv .git x", CODE),
    ("rm .git/hooks", CODE), ("rm -f .git/hooks/pre-commit", CODE),
    ("unzip -o a.zip -d .git", CODE), ("tar -xf a.tar -C .git", CODE),
    ("rm .git; unzip -o a.zip -d .git", CODE), ("rm .git && tar -xf a.tar -C .git", CODE),
    ("cp x .git", CODE), ("ln -sf x .git", CODE), ("cd .git && rm hooks", CODE),
])
def test_a_name_removed_as_itself_holds_no_guard_file(place, command, code):
    # (what a removal cannot undo is a matter of undo=: allowed here, so that
    # only self-protection is asked)
    os.makedirs(os.path.join(place.project, ".git", "hooks"), exist_ok=True)
    assert_all(place, command, code, cwd=place.project,
               directive="$stop-that-shit change undo=allow")


def test_the_flat_names_reach_the_wire_and_are_dropped_when_re_anchored(tmp_path):
    assert sts.shell_action("Bash", "rm -f .git")["shellFlatTargets"] == [".git"]
    for command in ("rm -rf .git", "rm .git; unzip a.zip -d .git", "cd sub && rm .git",
                    "rm $X", "chmod 600 .git"):
        assert "shellFlatTargets" not in sts.shell_action("Bash", command), command
    moved = sts._in_run_folder(sts.shell_action("Bash", "rm .git"), "/elsewhere", True,
                               str(tmp_path))
    assert "shellFlatTargets" not in moved
    with pytest.raises(sts.EventError):
        sts.Action.from_dict({"name": "Bash", "mutability": "write", "shellFlatTargets": ".git"})


def test_rm_without_recursion_leaves_a_folder_and_what_it_holds(tmp_path):
    """Run for real in a scratch folder: the reason `rm .git` is spared."""
    import subprocess
    hook = tmp_path / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True)
    hook.write_text("x\n")
    for command in ("rm .git", "rm -f .git", "rm -d .git", "unlink .git"):
        subprocess.run(command, shell=True, cwd=str(tmp_path), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60, check=False)
        assert hook.read_text() == "x\n", command
