"""Intent survives wrappers: every bash line of the analysis corpus, run
through each wrapper the analyzer sees through, means what it means alone.

`time git checkout other -- dir/` is the same dependency change as
`git checkout other -- dir/`; `nice -n 5 cat > a.py <<EOF` writes the same
hashing code to the same file.  For each line and wrapper: the same hash and
dependency intent, the same write targets, the same "writes where the guard
cannot tell" flag, and the same mutability, except that `nohup` and `sudo`
leave a proven read unproven (nohup may write nohup.out; sudo runs as
another user), never the other way, and an unproven line may gain intent (a
substituted `$(which sha256sum)` may run), never lose it.

Lines whose first word is not a program (a keyword, a builtin, an
assignment, a redirection) are left out: a wrapper runs a program, so
`nice cd x` is another command, not the same one wrapped.  `make test` takes
one wrapper per line in turn; `make test-all` (the `slow` marker) every pair.
"""
import re

import pytest

import sts
from test_analysis import ROWS, _shell_of

WRAPPERS = ("time ", "nice -n 5 ", "nohup ", "timeout 5 ", "env ", "env -i ", "command ",
            "builtin ", "stdbuf -oL ", "sudo ", "sudo -u root ", "exec ",
            "time nice -n 5 env ")
STRICTER = ("nohup ", "sudo ", "sudo -u root ")
# Words a wrapper does not run as the program they name here.
NOT_PROGRAMS = frozenset((
    "time if then else elif fi for while until do done case esac function select { } ! [[ (( "
    "cd export source . eval exec set unset alias unalias read local declare typeset readonly "
    "shift trap return exit break continue let ulimit umask hash type builtin command wait "
    "jobs fg bg disown shopt enable history pushd popd dirs getopts mapfile readarray caller "
    "complete compgen fc times suspend logout bind noglob nocorrect r").split())
BUILTINS = frozenset(("echo", "printf", "test", "[", "true", "false", ":", "pwd", "kill"))


def wrapped(wrapper, command):
    if wrapper == "exec ":
        return "(exec %s\n)" % command    # in a subshell; `)` on its own line (heredocs, comments)
    return wrapper + command


def cases():
    out = []
    for number, label, tags, command in ROWS:
        if _shell_of(tags) != "bash":
            continue
        first = re.match(r"\s*([A-Za-z0-9_./+-]+)(\s|$)", command)
        if not first or first.group(1) in NOT_PROGRAMS or "=" in first.group(1):
            continue
        out.append((number, command))
    return out


CASES = cases()


def signature(line):
    v = sts.analyze_shell(line, "bash")
    return (v.mutability, v.hash_intent, v.dependency_intent, tuple(sorted(v.write_targets)),
            bool(v.unknown_target))


def check(number, command, wrapper):
    if wrapper == "builtin " and re.match(r"\s*(\S+)", command).group(1) not in BUILTINS:
        return None     # `builtin` runs builtins only
    alone, line = signature(command), signature(wrapped(wrapper, command))
    if line == alone:
        return None
    if wrapper in STRICTER and line[4] and not alone[4]:
        # nohup may also write nohup.out, here or in the home folder; what
        # sudo runs is unproven, and an unproven command may write any path
        # it names (a /proc path of the writing process is an unknown target).
        line = line[:4] + (False,)
        if line == alone:
            return None
    if wrapper in STRICTER and alone[0] == "read" and line[0] == "unknown" \
            and line[3:] == alone[3:] and line[1] >= alone[1] and line[2] >= alone[2]:
        return None     # unproven, and intent only gained (`$(which sha256sum)` may run it)
    return "line %d: %r alone %s, %r %s" % (number, command, alone, wrapper.strip(), line)


def test_the_corpus_has_lines_for_every_wrapper():
    assert len(CASES) >= 1500


def test_one_wrapper_per_corpus_line_keeps_its_intent():
    problems = [p for k, (number, command) in enumerate(CASES)
                for p in [check(number, command, WRAPPERS[k % len(WRAPPERS)])] if p]
    assert not problems, "\n".join(problems[:20])


@pytest.mark.slow
@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_every_wrapper_on_every_corpus_line_keeps_its_intent(wrapper):
    problems = [p for number, command in CASES for p in [check(number, command, wrapper)] if p]
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("line,dep", [
    ("time git checkout other-ref -- folder/", True),
    ("nice -n 5 git restore -s other .", True),
    ("env -i git checkout other package.json", True),
    ("(exec git checkout other -- .\n)", True),
    ("sudo git checkout HEAD -- package.json", False),
    ("time rm package.json", False),
])
def test_the_issues_wrapped_dependency_changes(line, dep):
    assert sts.analyze_shell(line, "bash").dependency_intent is dep


@pytest.mark.parametrize("line,target", [
    ("time git config alias.x '!rm y'", ".git/config"),
    ("nice cat > a.py <<'EOF'\nimport hashlib\nx = hashlib.sha256(b)\nEOF", "a.py"),
])
def test_wrapped_writes_keep_their_targets(line, target):
    assert target in sts.analyze_shell(line, "bash").write_targets


@pytest.mark.parametrize("line", ["time git apply fix.patch", "nohup patch -p1 < fix.diff",
                                  "timeout 5 git stash apply"])
def test_a_wrapped_patch_still_writes_where_the_guard_cannot_tell(line):
    assert sts.analyze_shell(line, "bash").unknown_target
