"""The culprit: a deny or note names the part of the call that decided it.

Worked examples first (the forms an agent meets most), then the whole
labelled corpus: every command that is not a plain read gets a culprit, and
every fragment the culprit quotes is part of the command as written.
"""
import json
import os
import re
import subprocess
import sys

import pytest

import sts
from test_analysis import ROWS, _shell_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def culprit(command, code=None, shell="bash", paths=()):
    if code is None:
        verdict = sts.analyze_shell(command, shell)
        code = {"write": "MODE_FORBIDS_MUTATION", "unknown": "MUTABILITY_UNPROVEN"}[
            verdict.mutability]
    return sts.shell_culprit(command, shell, code, paths)


def quoted(line):
    """The backticked fragments of one message line (a fragment cut short ends in …)."""
    return re.findall(r"`([^`]+)`", line)


# ---- worked examples ---------------------------------------------------------


@pytest.mark.parametrize("command,expected", [
    ("git status && rm -rf build", "Culprit: `rm -rf build`: `rm` removes `build`."),
    ("dmesg -c", "Culprit: `dmesg -c` changes the state of the system."),
    ("gzip a.txt -c", "Culprit: `gzip` compresses files in place."),
    ("systemctl restart nginx", "Culprit: `systemctl restart` controls services."),
    # The option or verb that decides, where the program or subcommand alone reads.
    ("git branch -D old", "Culprit: `-D` deletes branch `old`."),
    ("git branch --delete old", "Culprit: `--delete` deletes branch `old`."),
    ("git status; git branch feature", "Culprit: `git branch feature`: `git branch` creates "
     "branch `feature`."),
    ("git tag -d v1", "Culprit: `-d` deletes tag `v1`."),
    ("git tag -a v2 -m x", "Culprit: `-a` creates tag `v2`."),
    ("git stash drop", "Culprit: `drop` deletes a stash entry."),
    ("git remote add up https://x/y.git", "Culprit: `add` adds remote `up`."),
    ("git config user.name me", "Culprit: `git config` sets `user.name`."),
    ("git config --unset user.name", "Culprit: `--unset` removes `user.name`."),
    ("git worktree remove ../w", "Culprit: `remove` removes worktree `../w`."),
    ("docker rm c1", "Culprit: `docker rm` controls containers."),
    ("gh pr merge 12", "Culprit: `gh pr merge` changes something on GitHub."),
    ("tar -xf a.tar", "Culprit: `tar -xf` writes `.`."),   # `tar -tf` only lists
    ("tar --extract -f a.tar -C out", "Culprit: `tar --extract` writes `out`."),
    ("kubectl delete pod p", "Culprit: `kubectl delete` controls a cluster."),
    ("kubectl -n prod delete pod p", "Culprit: `kubectl -n prod delete` controls a cluster."),
    ("systemctl --user stop x", "Culprit: `systemctl --user stop` controls services."),
    ("make test", "Culprit: `make` runs the project's build."),
    ("sed -i -n 1p x.txt", "Culprit: `sed -i` edits `x.txt` in place."),
    ("git diff --output=f", "Culprit: `--output=f` makes git write `f`."),
    ("echo hi > out.txt", "Culprit: `> out.txt` writes a file."),
    ("git log | sort -o out.txt", "Culprit: `sort -o out.txt`: `sort -o` writes `out.txt`."),
    ("git commit -m wip", "Culprit: `git commit` changes the repository."),
    ("echo $(make)", "Culprit: `make` runs the project's build."),
    ("LD_PRELOAD=x.so ls", "Culprit: `LD_PRELOAD=x.so` makes `ls` load other code."),
    ("ls \u2013la", "Culprit: `\u2013la` starts with a Unicode dash, not a plain hyphen."),
])
def test_culprit_names_the_deciding_part(command, expected):
    assert culprit(command).split("\n")[0] == expected


@pytest.mark.parametrize("command,instead", [
    # the read-only way to do the same thing, when the guard knows one
    ("sed -i -n 1p x.txt", "`sed -n '1,20p' FILE`"),
    ("git diff --output=f", "`git diff` without `--output` prints to the terminal"),
    ("grep -r TODO . > todo.txt", "`rg` prints the matches without a file"),
    ("git log --oneline > log.txt", "leave out `> log.txt` and read the output directly"),
    ("sort -o out.txt in.txt", "the same command without `-o out.txt` only reads"),
    ("git clean -fdx", "`git clean -n` lists what would be removed"),
    ("GIT_EXTERNAL_DIFF=x git diff",
     "the same command without `GIT_EXTERNAL_DIFF=x` only reads"),
    # an option that changes the system, in a program that otherwise only shows
    ("dmesg -T -c", "the same command without `-c` only reads"),
    ("journalctl -u nginx --rotate", "the same command without `--rotate` only reads"),
    ("iconv -f latin1 -t utf-8 -o out.txt a.txt", "the same command without `-o out.txt`"),
])
def test_instead_names_a_read_only_way(command, instead):
    lines = culprit(command).split("\n")
    assert lines[1].startswith("Instead: ") and instead in lines[1], lines


def test_no_instead_when_no_read_does_the_same():
    # Removing files, building, committing: nothing read-only does that.
    for command in ("rm -rf build", "make", "git commit -m x", "echo hi > f"):
        assert "Instead:" not in culprit(command), command


def test_the_segment_inside_a_wrapper_or_substitution_is_named():
    assert culprit("bash -c 'ls; rm a'").startswith("Culprit: `rm a`: `rm` removes `a`.")
    assert culprit("sudo rm x") == "Culprit: `rm` removes `x`."
    assert culprit("ls | xargs rm") == "Culprit: `xargs rm`: `rm` removes files."
    assert culprit("cat <(rm x)").startswith("Culprit: `rm x`:")
    assert culprit("if true; then rm x; fi").startswith("Culprit: `rm x`:")


def test_a_part_that_is_not_written_as_such_is_not_quoted():
    # `r''m` runs rm, but the text "rm" is not in the command: it is not quoted.
    line = culprit("r''m -rf x")
    assert "`rm`" not in line and "`x`" in line
    # A control character is named by its code point, never shown raw.
    line = culprit("git status\r")
    assert "\r" not in line
    line = culprit("cat a\u200bb")
    assert "U+200B" in line and "\u200b" not in line


def test_hash_and_dependency_culprits_name_the_call():
    line = culprit('python3 -c "import hashlib;print(hashlib.sha256(b\'x\').hexdigest())"',
                   "HASH_NOT_AUTHORIZED")
    assert "hashlib.sha256" in line
    assert culprit("git status && sha256sum a", "HASH_NOT_AUTHORIZED") == \
        "Culprit: `sha256sum a`: `sha256sum` computes a hash."
    assert culprit("git log; npm install left-pad", "DEPENDENCY_NOT_AUTHORIZED") == \
        "Culprit: `npm install left-pad`: `npm install` adds or changes packages."
    assert culprit("echo flask >> requirements.txt", "DEPENDENCY_NOT_AUTHORIZED") == \
        "Culprit: `>> requirements.txt` writes into a manifest."


def test_outside_and_protected_paths_pick_the_segment_that_writes_them():
    line = culprit("touch src/a.py && touch docs/b.md", "PATH_OUTSIDE_CONTRACT",
                   paths=["docs/b.md"])
    assert line == "Culprit: `touch docs/b.md`: `touch` creates or changes `docs/b.md`."


def test_thrash_names_the_whole_command():
    assert sts.shell_culprit("pytest -x", "bash", "REPEATED_WITHOUT_CHANGE") == \
        "Culprit: `pytest -x`, run again with no change in between."


def test_decisions_about_state_or_delegation_have_no_culprit():
    for code in ("STATE_DAMAGED", "AGENT_BUDGET_EXHAUSTED", "INVALID_DIRECTIVE"):
        assert sts.shell_culprit("rm x", "bash", code) == ""


# ---- the whole corpus ------------------------------------------------------------


def _codes(result):
    codes = []
    if result.mutability == "write":
        codes.append("MODE_FORBIDS_MUTATION")
    elif result.mutability == "unknown":
        codes.append("MUTABILITY_UNPROVEN")
    if result.hash_intent:
        codes.append("HASH_NOT_AUTHORIZED")
    if result.dependency_intent:
        codes.append("DEPENDENCY_NOT_AUTHORIZED")
    return codes


def corpus_culprits():
    """(command, code, culprit text) for every corpus line that is denied somewhere."""
    out = []
    for _, _, tags, command in ROWS:
        shell = _shell_of(tags)
        for code in _codes(sts.analyze_shell(command, shell)):
            out.append((command, code, sts.shell_culprit(command, shell, code)))
    return out


CORPUS_CULPRITS = corpus_culprits()


def test_every_denied_corpus_line_names_a_culprit_found_in_the_command():
    assert len(CORPUS_CULPRITS) >= 500
    for command, code, text in CORPUS_CULPRITS:
        lines = text.split("\n")
        assert lines[0].startswith("Culprit: "), (command, code, text)
        assert all(line.startswith(("Culprit: ", "Instead: ")) for line in lines), text
        assert quoted(lines[0]), (command, code, text)   # it names a part, not only a rule
        for fragment in quoted(lines[0]):
            assert fragment in command, (command, code, text)
        assert "\0" not in text and not sts._invisible(text.replace("\n", " ")), text


def test_culprit_lines_stay_short():
    lengths = sorted(len(line) for _, _, text in CORPUS_CULPRITS for line in text.split("\n"))
    assert lengths[-1] <= 240, lengths[-5:]
    assert lengths[len(lengths) // 2] <= 100


# ---- the message and the engine ----------------------------------------------------


def hook(host, payload, home):
    code = "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % ROOT
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, host],
                          input=json.dumps(payload).encode(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=dict(os.environ, STS_HOME=str(home)),
                          timeout=60, check=True)
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_a_real_deny_keeps_its_first_lines_and_adds_the_culprit_before_next(sts_home, tmp_path):
    base = {"session_id": "s-culprit", "cwd": str(tmp_path / "repo")}
    hook("claude", dict(base, hook_event_name="UserPromptSubmit",
                        prompt="$stop-that-shit review"), sts_home)
    out = hook("claude", dict(base, hook_event_name="PreToolUse", tool_name="Bash",
                              tool_use_id="c1",
                              tool_input={"command": "git status && rm -rf build"}), sts_home)
    lines = out["hookSpecificOutput"]["permissionDecisionReason"].split("\n")
    assert lines[0] == "STOP / INTENT"
    assert lines[2] == "Reason: MODE_FORBIDS_MUTATION"
    assert lines[3] == "Detail: Mode review does not allow changes to the repository."
    assert lines[4] == "Code: I/MODE_FORBIDS_MUTATION"
    assert lines[5] == "State: ARMED / review"
    assert lines[6].startswith("Event: evt_")
    assert lines[7] == "Culprit: `rm -rf build`: `rm` removes `build`."
    assert lines[8].startswith("Next: ")
    assert lines[9] == "Allow: the user can send `$stop-that-shit change` as a prompt to allow this."
    # The audit keeps, for a person's `explain`, the command and the culprit of a denial.
    event = sts.find_event(sts.Store(str(sts_home)), lines[6][len("Event: "):])
    assert event["shown"]["command"] == "git status && rm -rf build"
    assert event["shown"]["culprit"] == lines[7]
    assert event["shown"]["allow"] == "$stop-that-shit change"


def _event(action, session="s-lazy"):
    return sts.ControlEvent.from_dict({"protocolVersion": 2, "lifecycleVersion": 2,
                                       "kind": "action.before", "sessionId": session,
                                       "action": action})


def _arm(store, directive, session="s-lazy"):
    sts.handle_event(sts.ControlEvent.from_dict({
        "protocolVersion": 2, "lifecycleVersion": 2, "kind": "prompt.submit",
        "sessionId": session, "prompt": directive}), store)


def test_the_culprit_is_only_worked_out_for_a_deny(store, monkeypatch):
    _arm(store, "$stop-that-shit review")
    calls = []
    real = sts.shell_culprit
    monkeypatch.setattr(sts, "shell_culprit", lambda *a: calls.append(a) or real(*a))
    allowed = sts.handle_event(_event(sts.shell_action("Bash", "git status")), store)
    assert allowed.kind == "none" and calls == []
    denied = sts.handle_event(_event(sts.shell_action("Bash", "make test")), store)
    assert denied.kind == "deny" and len(calls) == 1
    assert "Culprit: `make` runs the project's build." in denied.text


def test_a_failing_culprit_never_breaks_the_deny(store, monkeypatch):
    _arm(store, "$stop-that-shit review")

    def broken(*args):
        raise RuntimeError("bug")
    monkeypatch.setattr(sts, "shell_culprit", broken)
    # (In a known folder: a relative target with none could be a guard file.)
    denied = sts.handle_event(_event(dict(sts.shell_action("Bash", "rm x"), cwd="/p")), store)
    assert denied.kind == "deny" and "Culprit:" not in denied.text
    assert "Reason: MODE_FORBIDS_MUTATION" in denied.text


def test_a_file_tool_outside_the_lock_names_the_path_and_the_lock(store):
    _arm(store, "$stop-that-shit change files=src/**|README.md")
    action = sts.file_write_action("Write", "docs/x.md", "text")
    action["cwd"] = "/p"
    denied = sts.handle_event(_event(action), store)
    assert denied.code == "PATH_OUTSIDE_CONTRACT"
    assert "Culprit: `docs/x.md` is outside the lock `files=src/**|README.md`." in denied.text


def test_a_file_write_that_adds_hashing_names_the_line(store):
    _arm(store, "$stop-that-shit change")
    content = "import os\n\ndef key(b):\n    return hashlib.sha256(b).hexdigest()\n"
    action = dict(sts.file_write_action("Write", "src/k.py", content), cwd="/p")
    denied = sts.handle_event(_event(action), store)
    assert denied.code == "HASH_NOT_AUTHORIZED"
    assert "Culprit: `return hashlib.sha256(b).hexdigest()` in `src/k.py` adds hashing." \
        in denied.text


def test_a_manifest_edit_names_the_dependency_line(store):
    _arm(store, "$stop-that-shit change")
    old = '{\n  "dependencies": {\n    "a": "1"\n  }\n}\n'
    new = '{\n  "dependencies": {\n    "a": "1",\n    "left-pad": "^1.3.0"\n  }\n}\n'
    action = dict(sts.file_write_action("Edit", "package.json", new, old, whole_file=False),
                  cwd="/p")
    denied = sts.handle_event(_event(action), store)
    assert denied.code == "DEPENDENCY_NOT_AUTHORIZED"
    assert '`"left-pad": "^1.3.0"` in `package.json` adds a dependency.' in denied.text


def test_the_skill_shows_the_message_the_guard_really_gives():
    with open(os.path.join(ROOT, "skills", "stop-that-shit", "SKILL.md"), encoding="utf-8") as fh:
        skill = fh.read()
    block = skill.split("```\nSTOP / INTENT\n", 1)[1].split("```", 1)[0]
    shown = [line for line in block.split("\n") if line.startswith(("Culprit:", "Instead:"))]
    assert shown == culprit("sed -i -n 1p x.txt").split("\n")


def test_a_shell_write_under_a_lock_names_the_target_outside_it(store):
    _arm(store, "$stop-that-shit change files=src/**")
    action = sts.shell_action("Bash", "sed -i s/a/b/ src/a.py docs/x.md")
    action["cwd"] = "/repo"
    denied = sts.handle_event(_event(action), store)
    # docs/x.md is a target the analyzer names, and it lies outside the lock.
    assert denied.code == "PATH_OUTSIDE_CONTRACT"
    lines = [line for line in denied.text.split("\n") if line.startswith(("Culprit", "Instead"))]
    # No Instead: a read-only way does not help a change that must stay inside the lock.
    assert lines == ["Culprit: `sed -i` edits `docs/x.md` in place; the lock is `files=src/**`."]


def test_self_protection_names_the_segment_that_reaches_the_guard(store, sts_home):
    _arm(store, "$stop-that-shit change")
    action = sts.shell_action("Bash", "git status && echo '{}' > sessions/x.json")
    action["cwd"] = str(sts_home)
    denied = sts.handle_event(_event(action), store)
    assert denied.code == "GUARD_SELF_PROTECTION"
    assert "Culprit: `echo '{}' > sessions/x.json`: `> sessions/x.json` writes a file." \
        in denied.text
