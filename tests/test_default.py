"""Default contracts: the user default (`sts.py default`), a repository's
`.stop-that-shit` that may only tighten it, read once per session."""
import json
import os
import subprocess
import sys

import pytest

import sts
from conftest import STS_PY, calls_made
from hooks import context_text, deny_reason, hook


@pytest.fixture
def repo(ram_path, monkeypatch):
    """A git repository (a `.git` folder is what marks one) as the session's folder."""
    root = ram_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    monkeypatch.chdir(root)
    return root


def cli(sts_home, *args, cwd=None, home=None):
    env = dict(os.environ, STS_HOME=str(sts_home))
    if home is not None:
        env["HOME"] = str(home)
        for var in ("CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "PI_CODING_AGENT_DIR"):
            env.pop(var, None)
    return subprocess.run([sys.executable, STS_PY] + list(args), cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)


def set_default(sts_home, text):
    """`sts.py default TEXT`, in this process (the command-line tests above run it for real)."""
    assert os.environ["STS_HOME"] == str(sts_home)
    assert sts.cmd_default([text]) == 0


def claude(kind, session, root, **more):
    base = {"session_id": session, "cwd": str(root), "hook_event_name": kind}
    base.update(more)
    return base


def write_call(session, root, path, n=1):
    return claude("PreToolUse", session, root, tool_name="Write", tool_use_id="t%d" % n,
                  tool_input={"file_path": str(path), "content": "x = 1\n"})


def shell_call(session, root, command, n=1):
    return claude("PreToolUse", session, root, tool_name="Bash", tool_use_id="b%d" % n,
                  tool_input={"command": command})


# ---- the command ------------------------------------------------------------


def test_default_is_set_shown_and_turned_off_from_the_command_line(sts_home, ram_path):
    proc = cli(sts_home, "default", cwd=str(ram_path))
    assert proc.returncode == 0 and "none set" in proc.stdout
    set_default(sts_home, "change hash=deny deps=ask")
    stored = json.loads((sts_home / "default.json").read_text())
    assert stored["contract"] == "change hash=deny deps=ask"
    proc = cli(sts_home, "default", cwd=str(ram_path))
    assert "`change hash=deny deps=ask`" in proc.stdout and "mode=change;" in proc.stdout
    assert os.stat(sts_home / "default.json").st_mode & 0o777 == 0o600
    set_default(sts_home, "$stop-that-shit review")   # the directive's own form works too
    assert json.loads((sts_home / "default.json").read_text())["contract"] == "review"
    set_default(sts_home, "off")
    assert "only watched" in cli(sts_home, "default", cwd=str(ram_path)).stdout


@pytest.mark.parametrize("text,code", [
    ("chnage", "INVALID_DIRECTIVE_TOKEN"),
    ("review agents=-1", "INVALID_AGENT_LIMIT"),
    ("review change", "CONFLICTING_DIRECTIVE"),
    ("total-agents=3", "UNSUPPORTED_AGENT_DIRECTIVE"),
    ("review -- and a task", "INVALID_DEFAULT"),
])
def test_an_invalid_default_is_refused_with_the_directives_words(sts_home, text, code):
    set_default(sts_home, "review")
    proc = cli(sts_home, "default", text)
    assert proc.returncode == 2
    assert "default rejected (%s)" % code in proc.stderr
    if code != "INVALID_DEFAULT":
        error = sts.interpret_prompt(sts.DEFAULT_CONTRACT, "$stop-that-shit " + text).error
        assert error["message"] in proc.stderr
    assert json.loads((sts_home / "default.json").read_text())["contract"] == "review"


# ---- sessions that start from it ---------------------------------------------


def test_no_default_stored_keeps_a_session_only_watched(store, repo):
    assert hook("claude", write_call("s", repo, repo / "a.py"), store) is None
    answer = hook("claude", claude("SessionStart", "s2", repo, source="startup"), store)
    assert "only watching" in context_text(answer)


def test_default_off_keeps_a_session_only_watched(store, sts_home, repo):
    set_default(sts_home, "off")
    assert hook("claude", write_call("s", repo, repo / "a.py"), store) is None


def test_a_review_default_stops_an_edit_of_a_session_without_a_directive(store, sts_home, repo):
    set_default(sts_home, "review")
    start = hook("claude", claude("SessionStart", "s", repo, source="startup"), store)
    first = context_text(start).splitlines()[0]
    assert first.startswith("Stop That Shit (active, contract from the user default): mode=review;")
    reason = deny_reason(hook("claude", write_call("s", repo, repo / "a.py"), store))
    assert "MODE_FORBIDS_MUTATION" in reason
    # A session whose first event is a tool call starts from it just the same.
    assert "MODE_FORBIDS_MUTATION" in deny_reason(
        hook("claude", write_call("t", repo, repo / "a.py"), store))


def test_a_directive_replaces_the_default_for_its_session(store, sts_home, repo):
    set_default(sts_home, "change files=src/** hash=ask")
    hook("claude", claude("UserPromptSubmit", "s", repo, prompt="$stop-that-shit review"), store)
    contract = store.load(sts.session_key("s")).state["contract"]
    # Replaced whole: the default's files= and hash= do not linger.
    assert (contract["mode"], contract["allowedPaths"], contract["hashPolicy"]) == \
        ("review", None, "deny")
    hook("claude", claude("UserPromptSubmit", "o", repo, prompt="$stop-that-shit off"), store)
    assert hook("claude", write_call("o", repo, repo / "a.py"), store) is None
    # Plain text keeps the default.
    hook("claude", claude("UserPromptSubmit", "p", repo, prompt="look at the parser"), store)
    assert "PATH_OUTSIDE_CONTRACT" in deny_reason(
        hook("claude", write_call("p", repo, repo / "a.py"), store))


@pytest.mark.parametrize("text", ["please fix the parser", "Fix it.", "implement the cache",
                                  "修复这个 bug", "请修改解析器"])
def test_plain_language_never_widens_a_default(store, sts_home, repo, text):
    """Nearly every task begins "fix ...": under a review default it stays review."""
    set_default(sts_home, "review")
    hook("claude", claude("UserPromptSubmit", "s", repo, prompt=text), store)
    assert "MODE_FORBIDS_MUTATION" in deny_reason(
        hook("claude", write_call("s", repo, repo / "a.py"), store))
    hook("claude", claude("UserPromptSubmit", "s", repo, prompt="$stop-that-shit change"), store)
    assert hook("claude", write_call("s", repo, repo / "a.py", 2), store) is None


def test_plain_language_narrows_a_default(store, sts_home, repo):
    set_default(sts_home, "change")
    hook("claude", claude("UserPromptSubmit", "s", repo, prompt="不要改代码，先解释"), store)
    assert "MODE_FORBIDS_MUTATION" in deny_reason(
        hook("claude", write_call("s", repo, repo / "a.py"), store))


def test_the_default_is_read_once_per_session(store, sts_home, repo, monkeypatch):
    """Kept on the session's state: a later tool call reads neither default,
    and a default changed mid-session governs only new sessions."""
    set_default(sts_home, "review")
    hook("claude", write_call("s", repo, repo / "a.py", 1), store)
    assert (sts_home / "sessions" / (sts.session_key("s") + ".json")).exists()
    set_default(sts_home, "open")
    reads = []
    for name in ("read_user_default", "read_repo_default", "repo_default_path"):
        original = getattr(sts, name)
        monkeypatch.setattr(sts, name, lambda *a, _f=original, _n=name: reads.append(_n) or _f(*a))
    later = hook("claude", write_call("s", repo, repo / "a.py", 2), store)
    assert reads == []
    assert "MODE_FORBIDS_MUTATION" in deny_reason(later)
    fresh = sts.Store(str(sts_home))
    assert hook("claude", write_call("new", repo, repo / "a.py", 3), fresh) is None
    assert sorted(set(reads)) == ["read_repo_default", "read_user_default", "repo_default_path"]
    del reads[:]
    assert hook("claude", write_call("new", repo, repo / "a.py", 4), fresh) is None
    assert reads == []


def test_a_later_tool_call_costs_what_it_cost_before_defaults(store, sts_home, repo):
    """The second call of a session under a default does the same work as one
    under the same contract typed as a directive."""
    set_default(sts_home, "review")
    hook("claude", write_call("d", repo, repo / "a.py", 1), store)
    hook("claude", claude("UserPromptSubmit", "t", repo, prompt="$stop-that-shit review"), store)
    hook("claude", write_call("t", repo, repo / "a.py", 1), store)
    read = shell_call("d", repo, "git status", 5)
    hook("claude", read, store)   # caches of the analysis warm
    _, with_default = calls_made(hook, "claude", read, store)
    _, typed = calls_made(hook, "claude", dict(read, session_id="t"), store)
    assert with_default <= typed * 1.05


def test_status_says_where_the_contract_came_from(store, sts_home, repo):
    set_default(sts_home, "review")
    hook("claude", write_call("s", repo, repo / "a.py"), store)
    proc = cli(sts_home, "status", "--session", "s", cwd=str(repo))
    assert "Contract from: the user default" in proc.stdout
    (repo / ".stop-that-shit").write_text("files=src/**\n")
    hook("claude", write_call("r", repo, repo / "a.py"), sts.Store(str(sts_home)))
    proc = cli(sts_home, "status", "--session", "r", cwd=str(repo))
    assert "Contract from: %s over the user default" % (repo / ".stop-that-shit") \
        in proc.stdout.replace("\n  ", " ")


def test_doctor_shows_the_default(sts_home, ram_path):
    proc = cli(sts_home, "doctor", cwd=str(ram_path), home=ram_path)
    assert "default contract none set" in proc.stdout
    set_default(sts_home, "review")
    proc = cli(sts_home, "doctor", cwd=str(ram_path), home=ram_path)
    assert "OK   sts      default contract `review`" in proc.stdout
    (sts_home / "default.json").write_text('{"contract": "reveiw"}')
    proc = cli(sts_home, "doctor", cwd=str(ram_path), home=ram_path)
    assert "WARN sts      default contract `reveiw` is invalid" in proc.stdout


def test_a_damaged_user_default_leaves_sessions_watched(store, sts_home, repo):
    sts_home.mkdir(parents=True)
    (sts_home / "default.json").write_text("not json")
    assert hook("claude", write_call("s", repo, repo / "a.py"), store) is None


# ---- protection ----------------------------------------------------------------


@pytest.mark.parametrize("make_call", [
    lambda s, root, target: write_call(s, root, target),
    lambda s, root, target: shell_call(s, root, "echo open > %s" % target),
    lambda s, root, target: shell_call(s, root, "rm -f %s" % target),
    lambda s, root, target: shell_call(s, root, "cp /dev/null ./%s" % os.path.relpath(target, root)),
])
@pytest.mark.parametrize("which", ["user", "repo"])
def test_both_defaults_are_protected_while_armed(store, sts_home, repo, make_call, which):
    set_default(sts_home, "open")
    (repo / ".stop-that-shit").write_text("hash=deny\n")
    target = sts_home / "default.json" if which == "user" else repo / ".stop-that-shit"
    reason = deny_reason(hook("claude", make_call("s", repo, target), store))
    assert "GUARD_SELF_PROTECTION" in reason
    if which == "repo":
        assert "default contract" in reason


# ---- how a repository default combines with the user's ---------------------------

COMBINATIONS = [
    # (user default, repository line, expected contract fields, repository words ignored)
    ("change", "files=src/**", {"mode": "change", "allowedPaths": ["src/**"]}, []),
    ("change", "review", {"mode": "review", "level": "guard"}, []),
    ("open", "change", {"mode": "change"}, []),
    ("open", "hash=deny deps=deny undo=deny",
     {"hashPolicy": "deny", "dependencyPolicy": "deny", "undoPolicy": "deny"}, []),
    ("open hash=allow deps=allow undo=allow", "hash=ask deps=ask undo=ask",
     {"hashPolicy": "ask", "dependencyPolicy": "ask", "undoPolicy": "ask"}, []),
    ("change agents=4", "agents=1", {"agentBudget": 1}, []),
    ("change", "agents=2", {"agentBudget": 2}, []),
    ("change files=src/**", "files=src/parser/**|docs/**",
     {"allowedPaths": ["src/parser/**"]}, ["files=docs/**"]),
    # A folder that climbs out of the user's by `..` is not inside it.
    ("change files=src/**", "files=src/../etc/**", {"allowedPaths": []}, ["files=src/../etc/**"]),
    ("change files=src/a.py|src/b.py", "files=src/**", {"allowedPaths": ["src/a.py", "src/b.py"]},
     ["files=src/**"]),
    ("review watch", "guard", {"mode": "review", "level": "guard"}, []),
    ("change", "lock", {"level": "lock"}, []),
    # A repository can never widen: each field tried.
    ("review", "change", {"mode": "review"}, ["change"]),
    ("review", "open", {"mode": "review"}, ["open"]),
    ("change", "open", {"mode": "change"}, ["open"]),
    ("change", "off", {"mode": "change", "level": "guard"}, []),     # `off`: no default at all
    ("change", "watch", {"level": "guard"}, ["watch"]),
    ("change", "review off", {"mode": "review", "level": "guard"}, ["off"]),
    ("change files=src/**", "files=**", {"allowedPaths": ["src/**"]}, ["files=**"]),
    ("change files=src/**", "files=../**|/etc/**", {"allowedPaths": []},
     ["files=../**|/etc/**"]),
    ("change", "hash=allow", {"hashPolicy": "deny"}, ["hash=allow"]),
    ("change deps=deny", "deps=allow", {"dependencyPolicy": "deny"}, ["deps=allow"]),
    ("change undo=deny", "undo=ask", {"undoPolicy": "deny"}, ["undo=ask"]),
    ("change agents=1", "agents=5", {"agentBudget": 1}, ["agents=5"]),
    # No user default (or off): the repository's stricter fields still hold.
    (None, "review", {"mode": "review", "level": "guard"}, []),
    ("off", "change files=src/**", {"mode": "change", "allowedPaths": ["src/**"]}, []),
    (None, "hash=allow", {"mode": "unconfirmed", "level": "watch", "hashPolicy": "deny"},
     ["hash=allow"]),
]


@pytest.mark.parametrize("user,line,expected,ignored", COMBINATIONS)
def test_a_repository_default_only_tightens(sts_home, repo, user, line, expected, ignored):
    if user is not None:
        set_default(sts_home, user)
    (repo / ".stop-that-shit").write_text("# this repository's default\n%s\n" % line)
    contract, path = sts.session_defaults(str(sts_home), str(repo / "src"))
    assert path == str(repo / ".stop-that-shit")
    for key, value in expected.items():
        assert contract[key] == value, key
    if ignored:
        assert "ignored as wider than the user default: %s" % " ".join(ignored) \
            in contract["origin"]
    else:
        assert "ignored" not in contract.get("origin", "")


def test_a_repository_default_on_a_real_session(store, sts_home, repo):
    set_default(sts_home, "change")
    (repo / ".stop-that-shit").write_text("files=src/** hash=allow\n")
    start = hook("claude", claude("SessionStart", "s", repo, source="startup"), store)
    first = context_text(start).splitlines()[0]
    assert "contract from %s over the user default" % (repo / ".stop-that-shit") in first
    assert "hash=allow" in first   # said to be ignored
    assert "PATH_OUTSIDE_CONTRACT" in deny_reason(
        hook("claude", write_call("s", repo, repo / "a.py", 1), store))
    assert hook("claude", write_call("s", repo, repo / "src" / "a.py", 2), store) is None


@pytest.mark.parametrize("line", ["chnage", "review -- task", "＄stop-that-shit review"])
def test_an_invalid_repository_file_gives_the_user_default(sts_home, repo, line):
    set_default(sts_home, "change")
    (repo / ".stop-that-shit").write_text(line + "\n")
    contract, _ = sts.session_defaults(str(sts_home), str(repo))
    assert (contract["mode"], contract["source"]) == ("change", "user-default")


def test_outside_a_repository_there_is_no_repository_default(sts_home, ram_path):
    (ram_path / ".stop-that-shit").write_text("review\n")
    contract, path = sts.session_defaults(str(sts_home), str(ram_path))
    assert path is None and contract["mode"] == "unconfirmed"


# ---- install --------------------------------------------------------------------


def test_install_sets_a_default_only_when_none_is_set(sts_home, ram_path):
    home = ram_path / "home"
    home.mkdir()
    proc = cli(sts_home, "install", "claude", home=home, cwd=str(ram_path))
    assert proc.returncode == 0, proc.stderr
    assert "default contract `%s`" % sts.INSTALL_DEFAULT in proc.stdout
    assert "python3 sts.py default" in proc.stdout
    stored = json.loads((sts_home / "default.json").read_text())
    assert stored["contract"] == sts.INSTALL_DEFAULT and stored["setBy"] == "install"
    set_default(sts_home, "review")
    proc = cli(sts_home, "install", "claude", home=home, cwd=str(ram_path))
    assert "default contract `review`" in proc.stdout
    assert json.loads((sts_home / "default.json").read_text())["contract"] == "review"
    proc = cli(sts_home, "install", "claude", "--default", "off", home=home, cwd=str(ram_path))
    assert json.loads((sts_home / "default.json").read_text())["contract"] == "off"
    assert "default contract off" in proc.stdout
    proc = cli(sts_home, "install", "claude", "--default", "reveiw", home=home, cwd=str(ram_path))
    assert proc.returncode == 2 and "default rejected (INVALID_DIRECTIVE_TOKEN)" in proc.stderr
    assert json.loads((sts_home / "default.json").read_text())["contract"] == "off"


def test_the_install_default_lets_ordinary_work_through(store, sts_home, repo):
    set_default(sts_home, sts.INSTALL_DEFAULT)
    assert hook("claude", write_call("s", repo, repo / "a.py", 1), store) is None
    dep = write_call("s", repo, repo / "requirements.txt", 2)
    dep["tool_input"]["content"] = "requests==2.32.0\n"
    assert hook("claude", dep, store) is None
    assert hook("claude", shell_call("s", repo, "pytest -q", 3), store) is None
    assert hook("claude", shell_call("s", repo, "rm -rf build", 4), store) is None


@pytest.mark.parametrize("command", ["git push --force", "git reset --hard HEAD~3"])
def test_the_install_default_stops_an_irreversible_action(store, sts_home, repo, command):
    set_default(sts_home, sts.INSTALL_DEFAULT)
    assert "IRREVERSIBLE_ACTION" in deny_reason(hook("claude", shell_call("s", repo, command),
                                                     store))


@pytest.mark.parametrize("command", [
    "python3 %s default off" % STS_PY,
    "python3 %s default 'open hash=allow'" % STS_PY,
    "cd %s && python3 sts.py uninstall claude" % os.path.dirname(STS_PY),
    "python3 /tmp/a-copy/sts.py install pi --default off",
    "./sts.py default off",
])
def test_the_model_cannot_run_the_guards_own_command_to_change_it(store, sts_home, repo, command):
    set_default(sts_home, sts.INSTALL_DEFAULT)
    reason = deny_reason(hook("claude", shell_call("s", repo, command), store))
    assert "GUARD_SELF_PROTECTION" in reason and "the guard's own command" in reason


@pytest.mark.parametrize("command", ["python3 %s status" % STS_PY, "python3 %s doctor" % STS_PY,
                                     "python3 tools/sts.py.bak default"])
def test_reading_commands_of_the_guard_stay_allowed(store, sts_home, repo, command):
    set_default(sts_home, sts.INSTALL_DEFAULT)
    reason = deny_reason(hook("claude", shell_call("s", repo, command), store))
    assert reason is None or "GUARD_SELF_PROTECTION" not in reason
