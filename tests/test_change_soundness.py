"""Soundness of the shell in change mode (issue 28), class by class.

Each class is tried two ways.  First the line really runs in bash in a
scratch folder, to show that the form does what the attack needs (a file of
that folder is deleted or changed); then the same line goes through the real
hook of every host, armed under `$stop-that-shit change`, with the guard's
data folder or a project holding the running sts.py as the place, and must
be stopped.  Look-alikes that change nothing of the guard's must go through.
"""
import os
import shutil
import subprocess
import tempfile

import pytest

import sts
from test_self_protection import CODE
from test_self_protection_targets import (SHM, Place, arm, assert_all, denied_code,  # noqa: F401
                                          place, shell, write_tool)

BASH = shutil.which("bash")


def run_in_scratch(command, files=("victim",), dirs=("d",)):
    """Run `command` in bash in a fresh folder holding `files` and `dirs`;
    return the names left there (the oracle: the form really writes)."""
    root = tempfile.mkdtemp(prefix="sts-oracle-", dir=SHM)
    try:
        for d in dirs:
            os.makedirs(os.path.join(root, d))
            with open(os.path.join(root, d, "victim"), "w") as fh:
                fh.write("keep\n")
        for f in files:
            with open(os.path.join(root, f), "w") as fh:
                fh.write("keep\n")
        subprocess.run([BASH, "-c", command], cwd=root, env={"PATH": os.environ["PATH"],
                       "HOME": root, "D": os.path.join(root, "d")},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        left = {}
        for base, _, names in os.walk(root):
            for name in names:
                path = os.path.join(base, name)
                with open(path, errors="replace") as fh:
                    left[os.path.relpath(path, root)] = fh.read()
        return left
    finally:
        shutil.rmtree(root, ignore_errors=True)


def changed(left, name="victim"):
    return left.get(name) != "keep\n"


# --- 1. paths that mean the writing process ------------------------------------------

# Each names `victim` in the folder the shell is in, or in the folder a
# descriptor holds, without naming that folder.
PROCESS_FORMS = [
    "rm -f /proc/self/cwd/victim",
    "rm -rf /proc/thread-self/cwd/victim",
    "rm -f //proc/./self//cwd/victim",
    "rm -f /proc/self/cwd/d/../victim",
    "rm -f /dev/fd/../cwd/victim",
    "rm -f /proc/$$/cwd/victim",
    "rm -f /proc/$BASHPID/cwd/victim",
    "exec 3<.; rm -f /proc/self/fd/3/victim",
    "exec 3<.; rm -f /dev/fd/3/victim",
    "exec 4<.; cd /tmp && rm -f /dev/fd/4/victim",
    "echo x > /proc/self/cwd/victim",
    "truncate -s0 /proc/self/cwd/victim",
    "P=/proc/self/cwd; rm -f $P/victim",
    "rm -f /proc/self/cwd/vic*",
    "rm -f /proc/self/root$PWD/victim",
    "cd /proc/self/cwd && rm -f victim",
    "echo x 1<victim >/dev/stdout",
    "exec 1<victim; echo x >/dev/stdout",
    "echo x 3<victim >/dev/fd/3",
    "exec 3<victim; echo x >&3 >/dev/stdout",
    "{ echo x > /dev/stdout; } 1<victim",
    "bash -c 'echo x >/dev/stderr' 2<victim",
    "echo x | tee /dev/stdout 1<victim",
    "cp /dev/null /dev/stdin <victim",
]


@pytest.mark.parametrize("command", PROCESS_FORMS)
def test_process_paths_really_write_and_are_never_proven_read(command):
    assert changed(run_in_scratch(command)), command
    result = sts.analyze_shell(command)
    assert result.mutability != "read", command
    # Never named from the hook's own process: each is placed from the shell's
    # folder (a relative name) or left unknown.
    for t in result.write_targets + result.write_patterns:
        assert not t.startswith(("/proc", "/dev/fd", "/dev/std", "//proc")), (command, t)


@pytest.mark.parametrize("command", [
    "rm -rf /proc/self/cwd/sessions /proc/self/cwd/armed",
    "rm -rf /proc/thread-self/cwd/sessions",
    "rm -rf /proc/self/cwd",
    "rm -rf /proc/self/cwd/s*",
    "exec 3<.; rm -rf /proc/self/fd/3/sessions",
    "exec 3<.; rm -rf /dev/fd/3/installed.json",
    "rm -rf /dev/fd/../cwd/sessions",
    "rm -rf /proc/$$/cwd/sessions",
    "find /proc/self/cwd -delete",
    "ln -s /proc/self/cwd ~/l; rm -rf ~/l/sessions",
    "ln -s /dev/fd ~/f; exec 3<.; rm -rf ~/f/3/sessions",
    "echo off > /proc/self/cwd/installed.json",
    "echo off 1<installed.json >/dev/stdout",
])
def test_process_paths_into_the_data_folder_are_stopped(place, command):
    # The example: `cd "$STS_HOME" && rm -rf /proc/self/cwd/sessions`.
    assert_all(place, 'cd "$STS_HOME" && ' + command, CODE, cwd=place.plain)
    assert_all(place, command, CODE, cwd=place.state)


def test_process_paths_from_a_known_folder_are_placed_there(place):
    # The folder the analyzer tracks places /proc/self/cwd: the guard's
    # folder is stopped, a folder without guard files goes through.
    assert_all(place, "cd %s && rm -f /proc/self/cwd/sts.py" % place.project, CODE,
               cwd=place.plain)
    assert_all(place, "rm -f /proc/self/cwd/sts.py", CODE, cwd=place.project)
    assert_all(place, "rm -rf /proc/self/cwd/build", None, cwd=place.plain)
    assert_all(place, "cd build && rm -f /proc/self/cwd/x", None, cwd=place.plain)


def test_a_link_to_the_writers_folder_is_not_followed_in_the_hook(place):
    os.symlink("/proc/self/cwd", os.path.join(place.plain, "here"))
    os.symlink("/dev/fd", os.path.join(place.plain, "fds"))
    # The hook's own folder is the data folder (see Place): resolving the
    # link in the hook would name the data folder's files, or miss them.
    assert_all(place, "rm -rf here/sessions", CODE, cwd=place.plain)
    assert_all(place, "rm -rf fds/3/sessions", CODE, cwd=place.plain)
    assert_all(place, "rm -rf h*/sessions", CODE, cwd=place.plain)


@pytest.mark.parametrize("host", ["claude", "codex", "opencode"])
@pytest.mark.parametrize("path", ["/proc/self/cwd/sts.py", "/dev/fd/3/sts.py",
                                  "/proc/1/cwd/sts.py", "/proc/self/root/tmp/x"])
def test_write_tools_naming_process_paths_are_stopped(place, host, path):
    session = arm(place, host)
    assert denied_code(host, write_tool(place, host, session, path, place.project)) == CODE


@pytest.mark.parametrize("command", [
    "cat /proc/self/status",
    "ls -l /proc/self/fd/",
    "cat /proc/cpuinfo > build/cpu.txt",
    "echo x > /dev/stdout",
    "echo x >/dev/stderr 2>&1",
    "echo x >&2",
    "cmd 2>&1 | tee /dev/stderr",
    "readlink /proc/self/cwd",
])
def test_process_path_look_alikes_go_through(place, command):
    assert_all(place, command, None, cwd=place.plain)
    assert sts.resolve_event_path("/proc/self/cwd/x", "/tmp") is None
    assert sts.resolve_event_path("x", "/dev/fd/3") is None


# --- 4. writers not modelled: what a command not proven read names, it may write ---------

# (command, file of the scratch folder it really changes)
UNMODELLED_WRITERS = [
    ("awk -i inplace '{print \"x\"}' victim", "victim"),
    ("cmake -E remove victim", "victim"),
    ("cmake -E rename victim gone", "victim"),
    ("cmake -E copy /dev/null d/victim", "d/victim"),
    ("git config -f victim a.b c", "victim"),
    ("openssl rand -out victim 10", "victim"),
    ("ssh-keygen -q -N '' -f victim <<<y", None),
    ("python3 -m json.tool --indent 1 /dev/null victim", None),
    ("split -b 1 d/victim victim", "victimaa"),
    ("tar --remove-files -cf a.tar victim", "victim"),
    ("zip -qm a.zip victim", "victim"),
    ("fallocate -l 10 victim", "victim"),
    ("echo x | sponge victim", "victim"),
    ("ruby -i -pe '$_=\"x\"' victim", "victim"),
    ("printf '1d\\nw\\n' | ed -s victim", "victim"),
    ("sqlite3 victim.db 'create table t(x)'", "victim.db"),
    ("printf 'int main(){}' | gcc -x c -o victim -", "victim"),
    ("shfmt -w victim", None),
    ("black -q victim", None),
    ("gio trash victim", None),
    ("trash-put victim", None),
    ("mmv victim gone", None),
    ("prename s/victim/gone/ victim", None),
    ("clang-format -i victim", None),
    ("[[ -f victim ]] && fallocate -l 10 victim", "victim"),
    ("sudo -n fallocate -l 10 victim", None),
    ("make -C d -f /dev/null victim", None),
]


def _have(command):
    word = command.split()[0]
    word = command.split()[2] if word in ("echo", "printf", "[[", "sudo") else word
    word = {"[[": "fallocate", "-f": "fallocate"}.get(word, word)
    if word == "awk":   # `-i inplace` is GNU awk's: mawk refuses the option
        return b"GNU Awk" in subprocess.run(["awk", "--version"], capture_output=True).stdout
    return shutil.which(word) is not None


@pytest.mark.parametrize("command,file", UNMODELLED_WRITERS)
def test_unmodelled_writers_name_what_they_write(command, file):
    if file is not None and _have(command):
        assert changed(run_in_scratch(command), file), command
    result = sts.analyze_shell(command)
    assert result.mutability != "read", command
    wanted = {"victimaa": "victim"}.get(file, file or "victim").split("/")[-1]
    assert any(p.split("/")[-1] == wanted or p.endswith("/" + wanted + "/**")
               for p in result.named_paths + result.write_targets), (command, result)


@pytest.mark.parametrize("command", [
    "black sts.py",
    "ruff format sts.py",
    "isort sts.py",
    "clang-format -i sts.py",
    "shfmt -w sts.py",
    "awk -i inplace 1 sts.py",
    "cmake -E remove sts.py",
    "cmake -E copy /tmp/x sts.py",
    "git checkout-index -f sts.py",
    "openssl rand -out sts.py 10",
    "ssh-keygen -f sts.py",
    "wget -O sts.py http://example.com/",
    "wget --output-document=sts.py http://example.com/",
    "aria2c -o sts.py http://example.com/",
    "curl -sSo sts.py http://example.com/",
    "echo x | sponge sts.py",
    "ruby -i -pe 1 sts.py",
    "ed sts.py",
    "ex sts.py",
    "vim -es sts.py",
    "sqlite3 sts.py",
    "gcc -o sts.py a.c",
    "gcc -osts.py a.c",
    "split -b 1 x sts.py",
    "tar --remove-files -cf /tmp/a.tar sts.py",
    "zip -m /tmp/a.zip sts.py",
    "fallocate -p -l 1 sts.py",
    "gio trash sts.py",
    "trash-put sts.py",
    "mmv x sts.py",
    "prename 's/x/y/' sts.py",
    "file-rename 's/x/y/' sts.py",
    "black .",
    "black *.py",
    "npx prettier --write .",
    "sudo black sts.py",
    "bash -c 'black sts.py'",
    "cd src && black ../sts.py",
    "make --directory=. sts.py",
    "git -C .. -C proj checkout-index -f sts.py",
    "[[ -f a ]] && black sts.py",
    "F=sts.py; black \"$F\"",
])
def test_unmodelled_writers_naming_the_guard_are_stopped(place, command):
    assert_all(place, command, CODE, cwd=place.project)


@pytest.mark.parametrize("command", [
    "git config -f ~/.bash_profile b.c '$(id)'",
    "sqlite3 ~/.local/state/sts/installed.json .dump",
    "black ~/.claude",
    "openssl req -new -out ~/.claude/settings.json",
    "cmake -E copy_directory /tmp/x ~/.local/state/sts",
    "ssh-keygen -f ~/.local/state/sts/armed/x",
    "tar --remove-files -cf /tmp/a.tar -C ~/.local/state sts",
])
def test_unmodelled_writers_naming_guard_folders_are_stopped(place, command):
    assert_all(place, command, CODE, cwd=place.plain)


@pytest.mark.parametrize("command", [
    "black src/a.py",
    "black .",
    "gcc -o build/out src/a.c",
    "git add .",
    "git commit -m 'sts.py'",
    "cp ~/.claude/settings.json build/",
    "python3 -m pytest src",
    "make -C build",
    "tar czf /tmp/a.tgz src",
])
def test_unmodelled_writers_naming_other_files_go_through(place, command):
    assert_all(place, command, None, cwd=place.plain)
    assert_all(place, command.replace("build", "src"), None, cwd=place.project) \
        if "." not in command.split()[1:] and "sts" not in command else None


# --- 2. long options as getopt reads them ----------------------------------------------

@pytest.mark.parametrize("command", [
    "cp --ta=d victim", "cp --target-dir=d victim", "cp --t d victim", "cp -td victim",
    "mv --target=d victim", "install --target-d=d victim", "ln --target=d victim",
    "ln --tar d victim", "cp --target-directory d victim",
])
def test_abbreviated_target_directory_is_read_as_getopt_reads_it(command):
    # The oracle: GNU getopt takes the prefix, and d/victim appears (a copy or a link).
    left = run_in_scratch(command, dirs=("d",)) if not command.startswith(("mv", "ln")) \
        else None
    if left is not None:
        assert left.get("d/victim") == "keep\n"
    result = sts.analyze_shell(command)
    assert "d/victim" in result.write_targets, (command, result)


@pytest.mark.parametrize("command", [
    "cp --ta=%s sts.py", "cp --target-dir=%s src/a.py", "mv --target=%s src/a.py",
    "install --target-d=%s src/a.py", "ln --targ %s src/a.py", "cp --t %s src/a.py",
    "rsync --remove x %s", "gzip --decomp %s/x.gz",
    "cp --target-directory=%s src/a.py", "cp -t%s src/a.py", "mv -t %s src/a.py",
])
def test_abbreviated_options_into_the_data_folder_are_stopped(place, command):
    assert_all(place, command % "$HOME/.local/state/sts", CODE, cwd=place.project)


@pytest.mark.parametrize("command", [
    "cp --bogus-option src/a.py build/", "cp --s src/a.py build/",   # --sparse/--suffix...
    "rsync --remo x build/",              # --remote-option or --remove-source-files
    "mv --no-t-such a b",
])
def test_unknown_or_ambiguous_prefixes_leave_the_target_unknown(command):
    result = sts.analyze_shell(command)
    assert result.mutability == "write" and result.unknown_target, (command, result)


def test_writer_tables_take_every_prefix_of_their_own_options():
    # Every unambiguous prefix of every option of each writer's table
    # resolves to that option, and a prefix two options share to none.
    for name, text in sts._WRITER_LONGS.items():
        names = [e.lstrip("-").rstrip(":?") for e in text.split()]
        for opt in names:
            for cut in range(1, len(opt) + 1):
                pre = opt[:cut]
                hits = [o for o in names if o.startswith(pre)]
                got = sts._writer_long(name, pre)[0]
                if pre in names:
                    assert got == pre, (name, pre, got)
                elif len(set(hits)) == 1:
                    assert got == opt, (name, pre, got)
                else:
                    assert got is None, (name, pre, got)


# --- 3. options that move where a command runs --------------------------------------------

@pytest.mark.parametrize("command", [
    "find d -name victim -execdir rm victim \\;",
    "find . -execdir rm -f victim \\;",
    "cmake -E chdir d rm victim",
    "cmake -E chdir d rm ../victim",
    "git init -q r && git --work-tree=d --git-dir=r/.git clean -fdxq",
    "git init -q r && GIT_WORK_TREE=d git --git-dir=r/.git clean -fdxq",
])
def test_moved_commands_really_write_there_and_are_never_read(command):
    if command.startswith("cmake") and not shutil.which("cmake"):
        pass
    else:
        left = run_in_scratch(command)
        assert "d/victim" not in left or "victim" not in left, command
    assert sts.analyze_shell(command).mutability != "read"


@pytest.mark.parametrize("command", [
    "find ~/.local/state -execdir rm -f installed.json \\;",
    "find ~/.local -name sts -execdir rm -rf sts \\;",
    "cmake -E chdir ~/.local/state/sts rm installed.json",
    "cmake -E chdir ~/.local/state/sts/sessions rm -rf ../armed",
    "cmake -E chdir $D rm installed.json",
    "git --work-tree=$HOME/.local/state/sts clean -fdx",
    "git --work=$HOME/.local/state/sts checkout -- .",
    "git --git-dir=x/.git --work-tree=$HOME/.local/state/sts reset --hard",
    "git --work-tree ~/.local/state/sts restore .",
    "git --work-tree=$HOME/.local/state/sts stash -u",
    "GIT_WORK_TREE=$HOME/.local/state/sts git clean -fdx",
    "unshare --wd=$HOME/.local/state/sts rm installed.json",
    "nsenter --wd=$HOME/.local/state/sts rm installed.json",
    "systemd-run --user --working-directory=$HOME/.local/state/sts rm installed.json",
    "parallel --wd $HOME/.local/state/sts rm ::: installed.json",
    "tmux new -d -c ~/.local/state/sts 'rm installed.json'",
])
def test_commands_moved_into_the_data_folder_are_stopped(place, command):
    assert_all(place, command, CODE, cwd=place.plain)


@pytest.mark.parametrize("command", [
    "find build -execdir rm -f x.o \\;",
    "cmake -E chdir build make",
    "git --work-tree=build status",
    "tmux new -d -c build 'make'",
])
def test_commands_moved_elsewhere_go_through(place, command):
    assert_all(place, command, None, cwd=place.plain)


# --- 6. install verbs behind global options -----------------------------------------------

@pytest.mark.parametrize("command", [
    "pip --log F install ./x.whl", "pip --log=F install x", "pip --isol install x",
    "pip3 --cache-dir /tmp/c install x", "pip -q --proxy http://p:1 install x",
    "uv -q add x", "uv --quiet add x", "uv --directory d add x", "uv --project d add x",
    "uv --cache-dir /tmp/c pip install x",
    "cargo --config 'a=1' add x", "cargo -C d add x", "cargo -Z x add y",
    "apt-get -o Debug::X=1 install x", "apt-get -c f install x", "apt -y install x",
    "composer -d DIR require x", "composer --working-dir DIR require x",
    "poetry -C DIR add x", "poetry --project DIR add x", "pdm -p DIR add x",
    "go -C DIR get x", "gem --config-file F install x", "gem --config-f F install x",
    "pipenv --python 3.11 install x", "dotnet --diagnostics add package x",
    "deno --quiet add x", "deno -L debug add x",
])
def test_install_verbs_behind_global_options_carry_dependency_intent(command):
    result = sts.analyze_shell(command)
    assert result.dependency_intent and result.mutability != "read", (command, result)


@pytest.mark.parametrize("command", [
    "pip --no-such-option install x", "uv --bogus add x", "cargo --frob add x",
    "apt-get --what install x", "composer --nope require x", "go -x get y",
    "pip --log $F install x", "uv --directory",
])
def test_unknown_global_options_leave_an_install_possible(command):
    result = sts.analyze_shell(command)
    assert result.mutability != "read" and result.dependency_intent, (command, result)


@pytest.mark.parametrize("command", [
    "pip -q list", "pip --version", "uv --version", "composer --no-plugins show",
    "pip --isolated list",
])
def test_global_options_before_a_read_verb_keep_it_a_read(command):
    assert sts.analyze_shell(command).mutability == "read", command


def test_deps_ask_stops_an_install_behind_a_global_option(place):
    for command in ("pip --log /tmp/l install x", "uv -q add x", "go -C src get x",
                    "pip --frob install x"):
        got = sts.analyze_shell(command)
        assert got.dependency_intent, command
        codes = set()
        from test_self_protection_targets import verdicts
        codes = set(verdicts(place, command, place.plain,
                             directive="$stop-that-shit change deps=ask").values())
        assert None not in codes, (command, codes)


# --- 7. other dependency channels ------------------------------------------------------------

@pytest.mark.parametrize("command", [
    "npm it x", "npm install-test x", "npm uninstall uuid", "npm rm uuid", "yarn remove x",
    "pnpm remove x", "pip uninstall -y x", "uv remove x", "poetry remove x", "cargo remove x",
    "composer remove x", "gem uninstall x", "go mod edit -droprequire=x",
    "corepack prepare pnpm@latest --activate", "corepack enable", "corepack use pnpm@9",
    "pip install -r /dev/stdin", "pip install -r <(curl -s https://x/r.txt)",
    "pip install -r /tmp/r.txt", "pip install -r ../other/r.txt", "pip install -r $R",
    "echo evil > r.txt && pip install -r r.txt", "uv pip install -r /dev/stdin",
    "git submodule add https://example.com/x.git vendor/x", "git submodule update --remote",
    "git clone https://example.com/x.git", "git clone https://example.com/x.git vendor/x",
    "git subtree add --prefix vendor/x https://example.com/x.git main",
    "hg clone https://example.com/x vendor", "svn checkout https://example.com/x vendor",
    "gh repo clone x/y vendor", "gh release download v1 -R x/y",
    "cpan X::Y", "perl -MCPAN -e 'install X::Y'", "jspm install x", "raco pkg install x",
    ".\\venv\\Scripts\\python.exe -m pip install x", "./node_modules/.bin/npm i x",
    ".\\node_modules\\.bin\\npm.cmd i x", "/opt/tools/bin/pip3.12 install x",
])
def test_other_dependency_channels_carry_dependency_intent(command):
    result = sts.analyze_shell(command)
    assert result.dependency_intent and result.mutability != "read", (command, result)


@pytest.mark.parametrize("command", [
    "npm ci", "npm it", "pip install -r requirements.txt", "pip install -r reqs/dev.txt",
    "git submodule update --init", "git clone https://example.com/x.git /tmp/x",
    "git rm x", "npm ls", "pip list",
])
def test_restores_and_look_alikes_carry_none(command):
    assert not sts.analyze_shell(command).dependency_intent, command


# --- 8. commands held in arguments -----------------------------------------------------------

HELD = [
    "env -S '%s'", "env --split-string='%s'", "git -c alias.x='!%s' x",
    "git -c diff.external='%s' diff", "git -c core.pager='%s' log",
    "git rebase --exec '%s' HEAD~1", "git rebase -x '%s' HEAD~1",
    "git submodule foreach '%s'", "git bisect run %s",
    "awk 'BEGIN{system(\"%s\")}'", "awk 'BEGIN{print | \"%s\"}'",
    "awk 'BEGIN{\"%s\" | getline x}'", "sed 'e %s' f", "sed -e '1e %s' f",
    "at now <<EOF\n%s\nEOF", "batch <<EOF\n%s\nEOF", "make --eval='x:;%s' x",
    "script -qc '%s' /dev/null", "script --command='%s' /dev/null",
    "vim -c '!%s' -c q", "vim -c ':!%s'", "vim +'!%s'", "tclsh <<EOF\nexec %s\nEOF",
    "expect -c 'spawn %s'", "osascript -e 'do shell script \"%s\"'",
]


@pytest.mark.parametrize("form", HELD)
def test_commands_held_in_arguments_are_read_for_every_intent(form):
    dep = sts.analyze_shell(form % "npm install left-pad")
    assert dep.dependency_intent and dep.mutability != "read", form
    digest = sts.analyze_shell(form % "sha256sum a.txt")
    assert digest.hash_intent, form
    agent = sts.analyze_shell(form % "claude -p hello")
    assert agent.starts_agent == "claude", form
    assert not sts.analyze_shell(form % "ls -l").dependency_intent, form


@pytest.mark.parametrize("command", [
    "sed 's/a/b/e' f", "sed e f", "awk '{print | cmd}' f", "awk -f prog.awk f",
    "awk 'BEGIN{system(c)}'", "echo 'npm i x' | at now", "at -f jobs.txt now",
    "git -c alias.x=\"!$CMD\" x", "git rebase --exec \"$CMD\" HEAD~1",
    "make -f /dev/stdin", "vim -S session.vim", "env -iS\"$X\"",
    "git submodule foreach \"$CMD\"", "echo puts | tclsh",
])
def test_held_commands_whose_text_is_not_known_are_unknown_for_every_intent(command):
    result = sts.analyze_shell(command)
    assert result.mutability != "read" and result.starts_agent == "?", (command, result)


@pytest.mark.parametrize("command", [
    "git log", "awk '$0 ~ /a|b/ {print}' f", "awk 'a || b {print}' f", "sed -n 1p f",
    "git filter-branch -h", "tclsh build.tcl",
])
def test_held_command_look_alikes_keep_their_verdict(command):
    result = sts.analyze_shell(command)
    assert result.starts_agent is None and not result.dependency_intent, command


def test_a_held_write_into_the_data_folder_is_stopped(place):
    for command in ("git rebase --exec 'rm -rf ~/.local/state/sts' HEAD~1",
                    "env -S 'rm -rf ~/.local/state/sts'",
                    "awk 'BEGIN{system(\"rm -f ~/.claude/settings.json\")}'",
                    "vim -c '!rm -f sts.py' -c q"):
        assert_all(place, command, CODE, cwd=place.project)


# --- 5. text typed into a running program -----------------------------------------------------

def _typed(host, tool, tool_input, place):
    """The answer to one typed input on `host`, armed under change (plus `extra`)."""
    from test_self_protection import TOOL_EVENTS
    session = arm(place, host, "$stop-that-shit change")
    from test_self_protection_targets import send
    return session, send(place, host, TOOL_EVENTS[host](session, place.project, tool,
                                                          tool_input))


@pytest.mark.parametrize("host,tool,key,extra", [
    ("codex", "write_stdin", "chars", {"session_id": 3}),
    ("hermes", "process", "data", {"action": "write", "session_id": "p1"}),
    ("hermes", "process", "data", {"action": "submit", "session_id": "p1"}),
])
@pytest.mark.parametrize("typed", ["rm -f sts.py\n", "echo x > ~/.claude/settings.json\r",
                                   "python3 -c 'import os; os.remove(\"sts.py\")'\n",
                                   "x = open('sts.py', 'w')\n"])
def test_typed_input_that_may_touch_the_guard_is_stopped(place, host, tool, key, extra, typed):
    _, got = _typed(host, tool, dict(extra, **{key: typed}), place)
    assert denied_code(host, got) == CODE, (host, typed, got)


@pytest.mark.parametrize("typed,intent", [
    ("npm install left-pad\n", "dependency_intent"), ("sha256sum a.txt\n", "hash_intent"),
    ("import hashlib\n", None), ("claude -p hi\n", None),
])
def test_typed_input_is_read_for_every_intent(typed, intent):
    action = sts.input_action("write_stdin", typed)
    assert action["mutability"] != "read" and action["unknownWriteTarget"]
    assert action.get("startsAgent") in ("?", "claude")
    if intent is not None:
        assert action[{"dependency_intent": "dependencyIntent",
                       "hash_intent": "hashIntent"}[intent]], typed


@pytest.mark.parametrize("chars", ["", "\n", "\r", "\x03", "\x04"])
def test_polls_and_control_keys_go_through(place, chars):
    _, got = _typed("codex", "write_stdin", {"session_id": 3, "chars": chars}, place)
    assert denied_code("codex", got) is None, repr(chars)
    _, got = _typed("hermes", "process", {"action": "poll", "session_id": "p1"}, place)
    assert denied_code("hermes", got) is None


def test_typed_input_under_deps_ask_is_stopped_even_when_unread(place):
    from test_self_protection import TOOL_EVENTS
    from test_self_protection_targets import send
    session = arm(place, "codex", "$stop-that-shit change deps=ask")
    # `level=watch`-free: the self-protection stop comes first, so try the
    # dependency rule on a typed line that names no file either.
    got = send(place, "codex", TOOL_EVENTS["codex"](session, place.project, "write_stdin",
                                                    {"session_id": 1, "chars": "pip install x\n"}))
    assert denied_code("codex", got) is not None


# --- 9. hashing the detector missed ------------------------------------------------------------

@pytest.mark.parametrize("text,path", [
    ("import crypt\nh = crypt.crypt('pw', crypt.mksalt())\n", "a.py"),
    ("from crypt import crypt as c\nc('pw', 'ab')\n", "a.py"),
    ("c = __import__('cr' + 'ypt')\nc.crypt('pw', 'ab')\n", "a.py"),
    ("my $h = crypt($pw, $salt);\n", "a.pl"),
    ("<?php $h = crypt($pw, '$2y$10$abc');\n", "a.php"),
    ("h = 'pw'.crypt('ab')\n", "a.rb"),
    ("let h = Digest.string \"x\" |> Digest.to_hex\n", "a.ml"),
    ("let h = Digest.file \"a.txt\"\n", "a.ml"),
    ("const h = Bun.hash('x');\n", "a.ts"),
    ("const h = Bun.hash.wyhash('x');\n", "a.js"),
    ("const h = new Bun.CryptoHasher('sha256');\n", "a.ts"),
    ("import uuid\nu = uuid.uuid5(uuid.NAMESPACE_DNS, 'x')\n", "a.py"),
    ("import { v5 as uuidv5 } from 'uuid';\nuuidv5('x', ns);\n", "a.ts"),
    ("u := uuid.NewSHA1(ns, []byte(\"x\"))\n", "a.go"),
    ("UUID u = UUID.nameUUIDFromBytes(b);\n", "A.java"),
    ("import zlib\nc = zlib.crc32(b'x')\n", "a.py"),
])
def test_hashing_the_detector_missed_is_found(text, path):
    assert sts.hash_intent_in_text(text, path), (path, text)


@pytest.mark.parametrize("text,path", [
    ("x = cipher.decrypt(data)\n", "a.py"), ("token = f.encrypt(data)\n", "a.py"),
    ("import uuid\nu = uuid.uuid4()\n", "a.py"), ("d = {hash(k): v for k, v in x}\n", "a.py"),
    ("int h = s.hashCode();\n", "A.java"), ("# crypt(3) is not used here\nx = 1\n", "a.py"),
    ("const bun = require('bun-types');\n", "a.js"),
])
def test_hashing_look_alikes_are_not_found(text, path):
    assert not sts.hash_intent_in_text(text, path), (path, text)


@pytest.mark.parametrize("command", [
    "python3 -c \"import crypt; print(crypt.crypt('a', 'ab'))\"",
    "perl -e 'print crypt(\"a\", \"ab\")'", "php -r 'echo crypt(\"a\", \"ab\");'",
    "bun -e 'console.log(Bun.hash(\"x\"))'",
    "python3 -c 'import uuid; print(uuid.uuid5(uuid.NAMESPACE_URL, \"x\"))'",
])
def test_inline_hashing_the_detector_missed_is_found(command):
    assert sts.analyze_shell(command).hash_intent, command


@pytest.mark.parametrize("command", [
    # verdict_diff's look-alikes: a subcommand's own -c, env's command's own
    # words, a version query, an awk program after `--`
    "git diff-files -c diff.external=./x", "git grep x -c alias.x=!./x",
    "env -i ss - -- -hVnaloempTisbEZz460tMSudwxHOK", "osascript --version", "apt -v",
    "awk -- '{print}' f", "cpan --version", "osascript -v", "mawk -V $x = -p",
])
def test_held_command_readers_leave_these_reads_alone(command):
    assert sts.analyze_shell(command).mutability == "read", command


@pytest.mark.parametrize("command", ["hg --version", "corepack --version", "svn --version"])
def test_new_package_manager_rows_prove_no_version_read(command):
    assert sts.analyze_shell(command).mutability != "read", command
