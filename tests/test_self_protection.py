"""Self-protection (issue 9): an armed agent cannot switch the guard off by writing
to the guard's own files.

Every test works on real folders: HOME, the data dir (STS_HOME) and a project.
`sts.py install <host>` runs for real against that HOME, once per module, so the
protected set comes from the installed.json that install writes, exactly as in
use; each test then starts from a fresh copy of that installed world, at the same
place.  The folders live in RAM where the machine has a tmpfs (a real disk is not
the point here, and every install and state write is fsynced).  Events go through
`sts.run_hook` in each host's own payload shape.
"""
import itertools
import json
import os
import pathlib
import shutil
import stat

import pytest

import sts
from conftest import ram_dir
from hooks import context_text, denial, deny_reason, each_case_on_one_host, hook, reason_code
from hooks_shim import request

HOSTS = ("codex", "claude", "hermes", "opencode", "pi", "omp")
CODE = "GUARD_SELF_PROTECTION"
_ids = itertools.count()


# --- the world: HOME, STS_HOME, a project, every host installed --------------------

class World:
    """Real folders for one test; the data dir lives under HOME so `~/` reaches it."""

    def __init__(self, tmp, monkeypatch):
        self.tmp = tmp
        self.home = tmp / "home"
        self.state = self.home / ".local" / "state" / "sts"
        self.project = tmp / "work" / "proj"
        monkeypatch.setenv("HOME", str(self.home))
        monkeypatch.setenv("STS_HOME", str(self.state))
        for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "PI_CODING_AGENT_DIR",
                    "HERMES_HOME", "CODEX_BIN", "HERMES_SAFE_MODE"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setattr(sts, "_codex_bin", lambda: None)
        monkeypatch.chdir(str(self.tmp))  # the hook must use the event's cwd, not ours
        self.store = sts.Store(str(self.state))

    def install_every_host(self):
        self.home.mkdir()
        (self.project / "src").mkdir(parents=True)
        for host in HOSTS:
            assert sts.cmd_install([host]) == 0

    def read_installed(self):
        with open(str(self.state / "installed.json"), encoding="utf-8") as fh:
            self.installed = json.load(fh)["paths"]

    def h(self, *parts):
        return os.path.join(str(self.home), *parts)


class Snapshot:
    """Every folder, file (bytes and mode) and symlink under a folder, in memory,
    to put back quickly: one per module instead of six installs per test."""

    def __init__(self, root):
        self.entries = []
        for base, dirs, files in os.walk(root):
            for name in sorted(dirs) + sorted(files):
                path = os.path.join(base, name)
                rel, mode = os.path.relpath(path, root), os.lstat(path).st_mode
                if os.path.islink(path):
                    self.entries.append((rel, "link", os.readlink(path), mode))
                elif os.path.isdir(path):
                    self.entries.append((rel, "dir", None, mode))
                else:
                    with open(path, "rb") as fh:
                        self.entries.append((rel, "file", fh.read(), mode))

    def restore(self, root):
        shutil.rmtree(root, ignore_errors=True)
        os.mkdir(root)
        for rel, kind, data, mode in self.entries:  # os.walk order: parents first
            path = os.path.join(root, rel)
            if kind == "link":
                os.symlink(data, path)
            elif kind == "dir":
                os.mkdir(path)
            else:
                with open(path, "wb") as fh:
                    fh.write(data)
        for rel, kind, _, mode in reversed(self.entries):  # modes last: a folder may be read-only
            if kind != "link":
                os.chmod(os.path.join(root, rel), stat.S_IMODE(mode))


@pytest.fixture(scope="module")
def installed_world():
    """(a snapshot of the world as install left it, the folder each test works in)."""
    base = ram_dir("sts-self-protection-")
    live = pathlib.Path(base) / "world"
    live.mkdir()
    with pytest.MonkeyPatch.context() as monkeypatch:
        World(live, monkeypatch).install_every_host()
    yield Snapshot(str(live)), live
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def world(installed_world, monkeypatch, capsys):
    snapshot, live = installed_world
    snapshot.restore(str(live))
    made = World(live, monkeypatch)
    made.read_installed()
    capsys.readouterr()
    return made


def new_session():
    return "tamper-session-%d" % next(_ids)


def session_file(world, session):
    return os.path.join(str(world.state), "sessions", sts.session_key(session) + ".json")


# Protected targets by kind; each is a function of the world (and the session).
TARGETS = {
    "session-file": lambda w, s: session_file(w, s),
    "installed-json": lambda w, s: os.path.join(str(w.state), "installed.json"),
    "new-file-in-state": lambda w, s: os.path.join(str(w.state), "sessions", "forged.json"),
    "audit-log": lambda w, s: os.path.join(str(w.state), "runtime", sts.session_key(s) + ".jsonl"),
    "running-sts.py": lambda w, s: os.path.realpath(sts.__file__),
    "claude-settings": lambda w, s: w.h(".claude", "settings.json"),
    "codex-hooks": lambda w, s: w.h(".codex", "hooks.json"),
    "codex-config": lambda w, s: w.h(".codex", "config.toml"),
    "opencode-plugin": lambda w, s: w.h(".config", "opencode", "plugin", "stop-that-shit.js"),
    "pi-extension": lambda w, s: w.h(".pi", "agent", "extensions", "stop-that-shit.js"),
    "omp-extension": lambda w, s: w.h(".omp", "agent", "extensions", "stop-that-shit.js"),
    "hermes-plugin": lambda w, s: w.h(".hermes", "plugins", "stop-that-shit", "__init__.py"),
    "hermes-config": lambda w, s: w.h(".hermes", "config.yaml"),
}


STATE_KINDS = ("session-file", "installed-json", "new-file-in-state", "audit-log")


# --- path forms: (the path the agent names, the cwd of the event) -------------------

def form_absolute(w, target, monkeypatch):
    return target, str(w.project)


def form_relative(w, target, monkeypatch):
    # A plain relative name, resolved against the event's cwd (the target's folder).
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    return os.path.basename(target), parent


def form_dotdot(w, target, monkeypatch):
    rel = os.path.relpath(target, str(w.project / "src"))
    assert rel.startswith("..")
    return rel, str(w.project / "src")


def form_dotdot_inside_absolute(w, target, monkeypatch):
    rel = os.path.relpath(target, str(w.project))
    return os.path.join(str(w.project), "src", "..", rel), str(w.project)


def form_symlink(w, target, monkeypatch):
    # A link inside the project pointing at the folder that holds the target; for the
    # data dir that is the state folder itself (or a folder inside it).
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    link = w.project / "innocent"
    os.symlink(parent, str(link))
    return os.path.join("innocent", os.path.basename(target)), str(w.project)


def form_symlink_to_state(w, target, monkeypatch):
    # A link to the state folder itself, named like an ordinary project folder.
    link = w.project / "cache"
    os.symlink(str(w.state), str(link))
    rel = os.path.relpath(target, str(w.state))
    assert not rel.startswith("..")
    return os.path.join(str(link), rel), str(w.project)


def form_tilde(w, target, monkeypatch):
    home = str(w.home)
    if not target.startswith(home + os.sep):
        # The running sts.py lives outside the temp HOME: point HOME at an ancestor of it
        # for this one call (install already ran, installed.json stays where it is).
        home = os.path.dirname(os.path.dirname(target))
        monkeypatch.setenv("HOME", home)
    return "~/" + os.path.relpath(target, home), str(w.project)


FORMS = {
    "absolute": form_absolute, "relative": form_relative, "dotdot": form_dotdot,
    "dotdot-in-absolute": form_dotdot_inside_absolute, "symlink": form_symlink,
    "symlink-to-state": form_symlink_to_state, "tilde": form_tilde,
}


# --- per host: the prompt, the write tools and the shell tools ----------------------

def _patch(path, verb="Update"):
    body = "@@\n-old\n+new\n" if verb == "Update" else "+new\n"
    return "*** Begin Patch\n*** %s File: %s\n%s*** End Patch\n" % (verb, path, body)


def codex_event(session, cwd, name, args):
    return {"session_id": session, "turn_id": "t1", "cwd": cwd, "hook_event_name": "PreToolUse",
            "tool_name": name, "tool_input": args, "tool_use_id": "call-%d" % next(_ids)}


def claude_event(session, cwd, name, args):
    return {"session_id": session, "cwd": cwd, "hook_event_name": "PreToolUse",
            "tool_name": name, "tool_input": args, "tool_use_id": "toolu_%d" % next(_ids)}


def hermes_event(session, cwd, name, args):
    return {"hook_event_name": "pre_tool_call", "tool_name": name, "tool_input": args,
            "session_id": session, "cwd": cwd, "extra": {"tool_call_id": "c%d" % next(_ids)}}


def opencode_event(session, cwd, name, args):
    return request("tool.execute.before", session, {
        "input": {"tool": name, "sessionID": session, "callID": "call_%d" % next(_ids)},
        "output": {"args": args}}, cwd=cwd, ctx={"parentSessionId": None})


def pi_event(session, cwd, name, args):
    return request("tool_call", session, {"event": {
        "type": "tool_call", "toolName": name, "toolCallId": "tc%d" % next(_ids), "input": args}},
        cwd=cwd, ctx={"idle": False, "hasUI": False})


def omp_event(session, cwd, name, args):
    return request("tool_call", session, {"event": {
        "type": "tool_call", "toolName": name, "toolCallId": "tc%d" % next(_ids), "input": args}},
        cwd=cwd, ctx={"idle": False, "hasUI": False, "sessionFile": None})


def prompt_event(host, session, cwd, text):
    if host == "codex":
        return {"session_id": session, "turn_id": "t1", "cwd": cwd, "model": "gpt-5.5",
                "hook_event_name": "UserPromptSubmit", "prompt": text}
    if host == "claude":
        return {"session_id": session, "cwd": cwd, "prompt_id": "p1",
                "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
                "prompt": text}
    if host == "hermes":
        return {"hook_event_name": "pre_llm_call", "tool_name": None, "tool_input": None,
                "session_id": session, "cwd": cwd,
                "extra": {"user_message": text, "turn_id": "t1", "platform": "cli"}}
    if host == "opencode":
        return request("chat.message", session, {
            "input": {"sessionID": session},
            "output": {"message": {"id": "msg_%d" % next(_ids), "role": "user",
                                   "sessionID": session, "agent": "build"},
                       "parts": [{"type": "text", "text": text}]}},
            cwd=cwd, ctx={"parentSessionId": None, "agentCanEdit": True})
    ctx = {"idle": True, "hasUI": False}
    if host == "omp":
        ctx["sessionFile"] = None
    return request("input", session, {"event": {"type": "input", "text": text,
                                                "source": "interactive"}}, cwd=cwd, ctx=ctx)


TOOL_EVENTS = {"codex": codex_event, "claude": claude_event, "hermes": hermes_event,
               "opencode": opencode_event, "pi": pi_event, "omp": omp_event}

# (host, tool label) -> (tool name, args for a path)
WRITE_TOOLS = {
    ("codex", "apply_patch"): ("apply_patch", lambda p: {"command": _patch(p)}),
    ("codex", "apply_patch-add"): ("apply_patch", lambda p: {"command": _patch(p, "Add")}),
    ("codex", "Write"): ("Write", lambda p: {"file_path": p, "content": "{}\n"}),
    ("codex", "Edit"): ("Edit", lambda p: {"file_path": p, "old_string": "a", "new_string": "b"}),
    ("claude", "Write"): ("Write", lambda p: {"file_path": p, "content": "{}\n"}),
    ("claude", "Edit"): ("Edit", lambda p: {"file_path": p, "old_string": "a",
                                            "new_string": "b"}),
    ("claude", "NotebookEdit"): ("NotebookEdit", lambda p: {"notebook_path": p,
                                                            "new_source": "x = 1"}),
    ("hermes", "write_file"): ("write_file", lambda p: {"path": p, "content": "{}\n"}),
    ("hermes", "patch"): ("patch", lambda p: {"path": p, "old_string": "a", "new_string": "b"}),
    ("hermes", "patch-v4a"): ("patch", lambda p: {"mode": "patch", "patch": _patch(p)}),
    ("opencode", "write"): ("write", lambda p: {"filePath": p, "content": "{}\n"}),
    ("opencode", "edit"): ("edit", lambda p: {"filePath": p, "oldString": "a", "newString": "b"}),
    ("opencode", "apply_patch"): ("apply_patch", lambda p: {"patchText": _patch(p)}),
    ("pi", "write"): ("write", lambda p: {"path": p, "content": "{}\n"}),
    ("pi", "edit"): ("edit", lambda p: {"path": p, "edits": [{"oldText": "a", "newText": "b"}]}),
    ("omp", "write"): ("write", lambda p: {"path": p, "content": "{}\n"}),
    ("omp", "edit"): ("edit", lambda p: {"path": p, "old_string": "a", "new_string": "b"}),
    ("omp", "edit-anchored"): ("edit", lambda p: {
        "input": "*** Edit File: %s\n*** Find\na\n*** Replace\nb\n" % p}),
}
MAIN_WRITE = {"codex": "apply_patch", "claude": "Write", "hermes": "write_file",
              "opencode": "write", "pi": "write", "omp": "write"}
SHELL_TOOLS = {
    ("codex", "Bash"): ("Bash", lambda c: {"command": c}),
    ("codex", "exec_command"): ("exec_command", lambda c: {"cmd": c}),
    ("claude", "Bash"): ("Bash", lambda c: {"command": c, "description": "d"}),
    ("hermes", "terminal"): ("terminal", lambda c: {"command": c}),
    ("opencode", "bash"): ("bash", lambda c: {"command": c, "description": "d"}),
    ("pi", "bash"): ("bash", lambda c: {"command": c}),
    ("omp", "bash"): ("bash", lambda c: {"command": c}),
}


# --- driving a host ---------------------------------------------------------------

def send(world, host, payload):
    return hook(host, payload, world.store)


def arm(world, host, directive="$stop-that-shit change", cwd=None):
    session = new_session()
    say(world, host, session, directive, cwd)
    return session


def say(world, host, session, text, cwd=None):
    return send(world, host, prompt_event(host, session, cwd or str(world.project), text))


def use(world, host, session, tool, arg, cwd, table):
    name, build = table[(host, tool)]
    return send(world, host, TOOL_EVENTS[host](session, cwd, name, build(arg)))


def denied_code(host, got):
    text = denial(host, got)
    return reason_code(text) if text else None


def last_audit(world, host, session):
    records = list(sts.iter_audit(world.store, sts.session_key(session)))
    assert records, "no audit line for %s" % host
    return records[-1]["decision"]


def assert_self_protection_deny(world, host, got, named=None):
    text = denial(host, got)
    assert text is not None, "%s let a write to the guard through: %r" % (host, got)
    assert reason_code(text) == CODE
    assert "Code: I/%s" % CODE in text
    if named is not None:
        assert named in text  # the message says what was protected
    return text


# --- the table: protected targets x path forms x hosts -----------------------------

TABLE = [(kind, form) for kind in sorted(TARGETS) for form in sorted(FORMS)
         if form != "symlink-to-state" or kind in STATE_KINDS]


def every_host(cases):
    return each_case_on_one_host(HOSTS, cases)


@pytest.mark.parametrize("host,kind,form", every_host(TABLE))
def test_write_tool_into_the_protected_set_is_denied(world, monkeypatch, host, form, kind):
    session = arm(world, host)
    target = TARGETS[kind](world, session)
    named, cwd = FORMS[form](world, target, monkeypatch)
    got = use(world, host, session, MAIN_WRITE[host], named, cwd, WRITE_TOOLS)
    assert_self_protection_deny(world, host, got)
    decision = last_audit(world, host, session)
    assert (decision["reasonCode"], decision["family"]) == (CODE, "I")
    assert decision["policyOutcome"] == "deny_and_explain"


def test_installed_json_lists_every_kind_of_file_the_table_covers(world):
    # The table only means something when install really listed these files.
    listed = set(world.installed)
    for kind, target in TARGETS.items():
        if kind in STATE_KINDS or kind == "running-sts.py":
            continue
        assert target(world, "x") in listed, kind
    assert os.path.realpath(sts.__file__) not in listed  # protected as __file__, not listed


@pytest.mark.parametrize("host,tool", sorted(WRITE_TOOLS))
@pytest.mark.parametrize("kind", ["session-file", "claude-settings", "opencode-plugin",
                                  "running-sts.py"])
def test_every_write_tool_of_every_host_is_checked(world, host, tool, kind):
    session = arm(world, host)
    target = TARGETS[kind](world, session)
    got = use(world, host, session, tool, target, str(world.project), WRITE_TOOLS)
    assert_self_protection_deny(world, host, got)


def test_symlink_in_the_project_pointing_at_the_state_folder(world):
    for host in HOSTS:
        session = arm(world, host)
        link = world.project / ("state-link-" + host)
        os.symlink(str(world.state), str(link))
        relative = os.path.join(link.name, "sessions", sts.session_key(session) + ".json")
        got = use(world, host, session, MAIN_WRITE[host], relative, str(world.project),
                  WRITE_TOOLS)
        assert_self_protection_deny(world, host, got)
        # The same through the shell.
        got = use(world, host, session, _shell_tool(host), "echo '{}' > " + relative,
                  str(world.project), SHELL_TOOLS)
        assert_self_protection_deny(world, host, got)


def test_open_mode_is_protected_too(world):
    for host in HOSTS:
        session = arm(world, host, "$stop-that-shit open")
        got = use(world, host, session, MAIN_WRITE[host], world.h(".claude", "settings.json"),
                  str(world.project), WRITE_TOOLS)
        assert_self_protection_deny(world, host, got)
        # An ordinary write in open mode is untouched.
        got = use(world, host, session, MAIN_WRITE[host], str(world.project / "src" / "a.py"),
                  str(world.project), WRITE_TOOLS)
        assert denial(host, got) is None


# --- shell commands ------------------------------------------------------------------

def _shell_tool(host):
    return next(tool for (h, tool) in sorted(SHELL_TOOLS) if h == host)


SHELL_FORMS = {
    "redirect": "echo '{\"contract\": {}}' > {T}",
    "append": "printf x >> {T}",
    "tee": "echo x | tee {T}",
    "tee-append": "echo x | tee -a /dev/null {T}",
    "cp": "cp /etc/hostname {T}",
    "mv-into": "mv src/a.py {T}",
    "rm": "rm -f {T}",
    "unlink": "unlink {T}",
    "shred": "shred -u -n 1 {T}",
    "ln-s": "ln -sf /dev/null {T}",
    "sed-i": "sed -i 's/guard/off/' {T}",
    "git-checkout": "git checkout -- {T}",
    "truncate": "truncate -s 0 {T}",
    "bash-c": "bash -c 'echo off > {T}'",
    "cd-then-rm": "cd {D} && rm -f {B}",
    "find-delete": "find {D} -name '*.json' -delete",
    "tar-C": "tar xf /tmp/evil.tar -C {D}",
    "unzip-d": "unzip -o /tmp/evil.zip -d {D}",
}


def _shell_command(form, target):
    return (SHELL_FORMS[form].replace("{T}", target)
            .replace("{D}", os.path.dirname(target)).replace("{B}", os.path.basename(target)))


@pytest.mark.parametrize("host,tool", sorted(SHELL_TOOLS))
@pytest.mark.parametrize("form", sorted(SHELL_FORMS))
def test_shell_write_to_the_state_folder_is_denied(world, host, tool, form):
    session = arm(world, host)
    command = _shell_command(form, session_file(world, session))
    got = use(world, host, session, tool, command, str(world.project), SHELL_TOOLS)
    assert_self_protection_deny(world, host, got)


@pytest.mark.parametrize("host,kind,form", every_host(
    [(kind, form) for kind in sorted(TARGETS)
     for form in ("redirect", "sed-i", "git-checkout", "rm")]))
def test_shell_write_to_every_kind_of_protected_file(world, host, kind, form):
    session = arm(world, host)
    command = _shell_command(form, TARGETS[kind](world, session))
    got = use(world, host, session, _shell_tool(host), command, str(world.project), SHELL_TOOLS)
    assert_self_protection_deny(world, host, got)


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("form", ["relative", "dotdot", "symlink", "tilde"])
def test_shell_targets_use_the_same_path_forms(world, monkeypatch, host, form):
    session = arm(world, host)
    named, cwd = FORMS[form](world, session_file(world, session), monkeypatch)
    got = use(world, host, session, _shell_tool(host), "echo off > " + named, cwd, SHELL_TOOLS)
    assert_self_protection_deny(world, host, got)


def test_tilde_reaches_host_configs_through_the_shell(world):
    for host in HOSTS:
        session = arm(world, host)
        for command in ("echo '{}' > ~/.claude/settings.json",
                        "sed -i /sts/d ~/.codex/hooks.json",
                        "rm ~/.pi/agent/extensions/stop-that-shit.js",
                        "cp /dev/null ~/.hermes/plugins/stop-that-shit/__init__.py"):
            got = use(world, host, session, _shell_tool(host), command, str(world.project),
                      SHELL_TOOLS)
            assert_self_protection_deny(world, host, got)


def test_moving_a_protected_file_away_is_denied(world):
    # mv removes its sources: moving the hook config out of the way silences the guard.
    for host in HOSTS:
        session = arm(world, host)
        for command in ("mv ~/.claude/settings.json /tmp/settings.json.bak",
                        "mv -t /tmp ~/.codex/hooks.json",
                        "mv %s %s" % (session_file(world, session), world.project / "x.json")):
            got = use(world, host, session, _shell_tool(host), command, str(world.project),
                      SHELL_TOOLS)
            assert_self_protection_deny(world, host, got)


def test_copying_into_a_protected_files_folder_under_its_name_is_denied(world):
    # `cp x dir/` writes dir/x: a planted settings.json lands on the protected one.
    (world.project / "settings.json").write_text("{}\n")
    (world.project / "stop-that-shit.js").write_text("export default {};\n")
    for host in HOSTS:
        session = arm(world, host)
        for command in ("cp settings.json ~/.claude/",
                        "cp -f stop-that-shit.js ~/.pi/agent/extensions",
                        "mv stop-that-shit.js ~/.omp/agent/extensions/",
                        "ln -sf /dev/null -t ~/.config/opencode/plugin stop-that-shit.js"):
            got = use(world, host, session, _shell_tool(host), command, str(world.project),
                      SHELL_TOOLS)
            assert_self_protection_deny(world, host, got)


def test_removing_a_folder_that_holds_protected_files_is_denied(world):
    for host in HOSTS:
        session = arm(world, host)
        for command in ("rm -rf ~/.codex", "rm -rf ~/.local/state",
                        "mv ~/.config/opencode ~/.config/opencode.off",
                        "rm -r ~/.hermes/plugins"):
            got = use(world, host, session, _shell_tool(host), command, str(world.project),
                      SHELL_TOOLS)
            assert_self_protection_deny(world, host, got)


def test_unestablished_shell_targets_are_stopped_while_armed(world):
    # The guard cannot expand `$STS_HOME` (it is not a variable it trusts): the write may
    # land on its own files, so self-protection stops it, in change mode as in review.
    for host in HOSTS:
        for mode in ("review", "change"):
            session = arm(world, host, "$stop-that-shit " + mode)
            got = use(world, host, session, _shell_tool(host), 'echo off > "$STS_HOME/x"',
                      str(world.project), SHELL_TOOLS)
            assert denied_code(host, got) == CODE
        # A program that writes where its own code decides is left to the other rules.
        session = arm(world, host, "$stop-that-shit review")
        got = use(world, host, session, _shell_tool(host),
                  "python3 -c 'open(\"/etc/x\", \"w\")'", str(world.project), SHELL_TOOLS)
        assert denied_code(host, got) in ("MODE_FORBIDS_MUTATION", "MUTABILITY_UNPROVEN")


def test_reads_of_protected_files_stay_allowed(world):
    for host in HOSTS:
        session = arm(world, host)
        for command in ("cat ~/.claude/settings.json", "ls %s" % world.state,
                        "grep -n sts %s" % os.path.realpath(sts.__file__)):
            got = use(world, host, session, _shell_tool(host), command, str(world.project),
                      SHELL_TOOLS)
            assert denial(host, got) is None, command


# --- the message -------------------------------------------------------------------

def test_deny_message_names_what_was_protected_and_how_to_proceed(world):
    for host in HOSTS:
        session = arm(world, host)
        target = world.h(".claude", "settings.json")
        got = use(world, host, session, MAIN_WRITE[host], target, str(world.project),
                  WRITE_TOOLS)
        text = assert_self_protection_deny(world, host, got, named=target)
        detail = next(line for line in text.splitlines() if line.startswith("Detail:"))
        assert "host configuration" in detail or "hook configuration" in detail
        follow = next(line for line in text.splitlines() if line.startswith("Next:"))
        assert "$stop-that-shit off" in follow  # the user's way out, by prompt ...
        assert "sts.py" in follow  # ... or the CLI, run by the user
        assert "STOP / INTENT" in text


@pytest.mark.parametrize("kind,word", [("session-file", "data"),
                                       ("running-sts.py", "code"),
                                       ("pi-extension", "shim"),
                                       ("codex-config", "configuration")])
def test_deny_detail_says_which_part_of_the_guard(world, kind, word):
    session = arm(world, "claude")
    target = TARGETS[kind](world, session)
    got = use(world, "claude", session, "Write", target, str(world.project), WRITE_TOOLS)
    text = assert_self_protection_deny(world, "claude", got, named=target)
    detail = next(line for line in text.splitlines() if line.startswith("Detail:"))
    assert word in detail


# --- levels: watch reports, off allows ---------------------------------------------

@pytest.mark.parametrize("host", HOSTS)
def test_watch_level_reports_instead_of_denying(world, host):
    session = arm(world, host, "$stop-that-shit change watch")
    got = use(world, host, session, MAIN_WRITE[host], session_file(world, session),
              str(world.project), WRITE_TOOLS)
    assert denial(host, got) is None
    decision = last_audit(world, host, session)
    assert (decision["reasonCode"], decision["policyOutcome"]) == (CODE, "report_and_defer")
    if host in ("codex", "claude"):
        assert "WATCH / INTENT" in context_text(got) and CODE in context_text(got)
    elif host in ("opencode", "pi", "omp"):
        assert CODE in json.dumps(got)


@pytest.mark.parametrize("host", HOSTS)
def test_off_level_allows(world, host):
    session = arm(world, host, "$stop-that-shit off")
    got = use(world, host, session, MAIN_WRITE[host], world.h(".codex", "hooks.json"),
              str(world.project), WRITE_TOOLS)
    assert denial(host, got) is None


@pytest.mark.parametrize("host", HOSTS)
def test_the_users_off_directive_still_changes_the_contract(world, host):
    session = arm(world, host)
    target = world.h(".hermes", "config.yaml")
    got = use(world, host, session, MAIN_WRITE[host], target, str(world.project), WRITE_TOOLS)
    assert_self_protection_deny(world, host, got)
    # The user turns the guard off by prompt; the state file is written by the guard
    # itself, not by the agent, so the protection never stands in the way.
    say(world, host, session, "$stop-that-shit off")
    with open(session_file(world, session), encoding="utf-8") as fh:
        assert json.load(fh)["contract"]["level"] == "off"
    got = use(world, host, session, MAIN_WRITE[host], target, str(world.project), WRITE_TOOLS)
    assert denial(host, got) is None
    # And re-arming protects again.
    say(world, host, session, "$stop-that-shit change guard")
    got = use(world, host, session, MAIN_WRITE[host], target, str(world.project), WRITE_TOOLS)
    assert_self_protection_deny(world, host, got)


def test_the_users_cli_is_not_an_agent_action(world, capsys):
    # `sts.py uninstall` run by the user edits the protected files; no hook is involved.
    assert sts.cmd_uninstall(["claude"]) == 0
    capsys.readouterr()
    assert not os.path.exists(world.h(".claude", "settings.json"))


# --- ordinary project files stay writable ------------------------------------------

def _lookalikes(world):
    p = world.project
    (p / ".claude").mkdir(exist_ok=True)
    (p / ".codex").mkdir(exist_ok=True)
    (p / "stop-that-shit").mkdir(exist_ok=True)
    (p / "tools").mkdir(exist_ok=True)
    (p / "tools" / "sts.py").write_text("print('not the guard')\n")
    # (A project's .claude/settings.json or .codex/hooks.json is a host settings
    # file, protected by name: see test_host_settings.py.)
    return [str(p / "settings.json"), str(p / ".claude" / "notes.md"),
            str(p / ".codex" / "notes.md"), str(p / "hooks.json"), str(p / "config.toml"),
            str(p / "tools" / "sts.py"), str(p / "sts.py"),
            str(p / "stop-that-shit" / "state.json"), str(p / "stop-that-shit.js"),
            str(p / "installed.json"), str(p / "sessions" / "k.json"),
            # siblings whose names only start like a protected path
            str(world.state) + "-backup/x.json", world.h(".claude", "settings.json.local"),
            world.h(".codex", "hooks.json2")]


@pytest.mark.parametrize("host", HOSTS)
def test_files_with_similar_names_stay_writable(world, host):
    # undo=allow: some look-alikes lie in HOME, outside the workspace, where
    # `>` is irreversible; this test is about self-protection alone.
    session = arm(world, host, "$stop-that-shit change undo=allow")
    for path in _lookalikes(world):
        for tool in [t for (h, t) in sorted(WRITE_TOOLS) if h == host]:
            got = use(world, host, session, tool, path, str(world.project), WRITE_TOOLS)
            assert denial(host, got) is None, (tool, path, got)
        rel = os.path.relpath(path, str(world.project))
        got = use(world, host, session, _shell_tool(host), "echo x > %s && sed -i s/x/y/ %s"
                  % (rel, rel), str(world.project), SHELL_TOOLS)
        assert denial(host, got) is None, (path, got)


def test_a_project_folder_named_like_the_data_dir_is_not_protected(world):
    fake = world.project / ".local" / "state" / "sts"
    fake.mkdir(parents=True)
    for host in HOSTS:
        session = arm(world, host)
        got = use(world, host, session, MAIN_WRITE[host], ".local/state/sts/sessions/x.json",
                  str(world.project), WRITE_TOOLS)
        assert denial(host, got) is None


# --- case -----------------------------------------------------------------------------

def _case_sensitive_here(path):
    upper = path.upper()
    return upper != path and not os.path.exists(upper)


def test_other_case_is_not_protected_on_a_case_sensitive_file_system(world):
    target = session_file(world, "x")
    other = os.path.join(str(world.home), ".LOCAL", "STATE", "STS", "sessions", "x.json")
    if not _case_sensitive_here(str(world.state)):
        pytest.skip("this file system ignores case")
    assert sts.protected_hits(_action([other], str(world.project)), [str(world.state)]) == []
    assert sts.protected_hits(_action([target], str(world.project)),
                              [str(world.state)]) == [target]
    for host in HOSTS:
        session = arm(world, host)
        got = use(world, host, session, MAIN_WRITE[host], other, str(world.project),
                  WRITE_TOOLS)
        assert denial(host, got) is None


def test_other_case_is_protected_when_the_file_system_ignores_case(world, monkeypatch):
    monkeypatch.setattr(sts, "_tamper_case_insensitive", lambda path: True)
    other = os.path.join(str(world.home), ".LOCAL", "State", "sts", "Sessions", "x.json")
    assert sts.protected_hits(_action([other], None), [str(world.state)]) == [other]
    session = arm(world, "claude")
    got = use(world, "claude", session, "Write", world.h(".Claude", "SETTINGS.json"),
              str(world.project), WRITE_TOOLS)
    assert_self_protection_deny(world, "claude", got)


def test_case_probe_on_real_folders(tmp_path):
    folder = tmp_path / "Probe"
    folder.mkdir()
    sensitive = not os.path.exists(str(tmp_path / "PROBE"))
    assert sts._tamper_case_insensitive(str(folder)) is (not sensitive)
    # A path whose letters are all absent on disk climbs to an existing ancestor.
    assert sts._tamper_case_insensitive(str(folder / "missing" / "deeper")) is (not sensitive)


def _action(paths, cwd, shell=()):
    return sts.Action(name="Write", mutability="write", affected_paths=list(paths),
                      shell_write_targets=list(shell), cwd=cwd)


# --- the decision core, directly ----------------------------------------------------

def _state(mode="change", level="guard"):
    state = sts.default_state()
    state["contract"].update(mode=mode, level=level, source="directive")
    return state


@pytest.mark.parametrize("mode", ["answer", "review", "change", "monitor", "open"])
def test_the_check_runs_before_the_mode_checks_in_every_mode(tmp_path, mode):
    root = tmp_path / "data"
    root.mkdir()
    action = _action([str(root / "x")], str(tmp_path))
    decision = sts.decide(action, _state(mode), action_id=None, declared=True,
                          protected_paths=[str(root)])
    assert (decision.code, decision.family, decision.outcome) == (
        CODE, "I", "deny_and_explain")
    watched = sts.decide(action, _state(mode, "watch"), action_id=None, declared=True,
                         protected_paths=[str(root)])
    assert (watched.code, watched.outcome) == (CODE, "report_and_defer")
    off = sts.decide(action, _state(mode, "off"), action_id=None, declared=True,
                     protected_paths=[str(root)])
    assert off.code == "CONTROL_INACTIVE" and off.outcome == "allow"


def test_shell_targets_count_and_files_boundary_is_unchanged(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    state = _state()
    state["contract"]["allowedPaths"] = ["**"]
    action = sts.Action(name="Bash", mutability="write", shell_write_targets=["../data/k"],
                        cwd=str(tmp_path / "proj"))
    decision = sts.decide(action, state, action_id=None, declared=True,
                          protected_paths=[str(root)])
    assert decision.code == CODE
    assert sts.decide(action, state, action_id=None, declared=True,
                      protected_paths=[]).code != CODE


def test_a_symlinked_data_dir_is_compared_physically(tmp_path):
    real = tmp_path / "real-data"
    real.mkdir()
    alias = tmp_path / "alias-data"
    os.symlink(str(real), str(alias))
    assert sts.protected_hits(_action([str(real / "k.json")], None), [str(alias)])
    assert sts.protected_hits(_action([str(alias / "k.json")], None), [str(real)])


def test_a_folder_holding_guard_files_is_protected_but_the_working_folder_is_not(tmp_path):
    data = tmp_path / "proj" / ".tools" / "data"
    data.mkdir(parents=True)
    cwd = str(tmp_path / "proj")
    roots = [str(data)]
    shell = sts.Action(name="Bash", mutability="write", cwd=cwd,
                       shell_write_targets=[".tools", "../proj/.tools/"])
    assert sts.protected_hits(shell, roots) == [".tools", "../proj/.tools/"]
    # `git add .`, `cp x .`, `cp x ..`: the working folder and its ancestors hold
    # everything, so naming them says nothing about the guard's files.
    for target in (".", "..", cwd, str(tmp_path)):
        action = sts.Action(name="Bash", mutability="write", cwd=cwd,
                            shell_write_targets=[target])
        assert sts.protected_hits(action, roots) == [], target
    # A sibling folder that only shares a prefix holds nothing.
    sibling = sts.Action(name="Bash", mutability="write", cwd=cwd,
                         shell_write_targets=[".tools/dat", ".tools/data-old"])
    assert sts.protected_hits(sibling, roots) == []


def test_project_scope_install_protects_its_files_and_leaves_the_project_usable(world, capsys,
                                                                                 monkeypatch):
    (world.project / ".git").mkdir()
    monkeypatch.chdir(str(world.project))
    assert sts.cmd_install(["claude", "--scope", "project"]) == 0
    capsys.readouterr()
    project_settings = str(world.project / ".claude" / "settings.json")
    with open(str(world.state / "installed.json"), encoding="utf-8") as fh:
        assert project_settings in json.load(fh)["paths"]
    monkeypatch.chdir(str(world.tmp))
    for host in HOSTS:
        session = arm(world, host)
        got = use(world, host, session, MAIN_WRITE[host], ".claude/settings.json",
                  str(world.project), WRITE_TOOLS)
        assert_self_protection_deny(world, host, got, named=project_settings)
        for command in ("rm -rf .claude", "mv .claude .claude-off",
                        "git checkout -- .claude/settings.json"):
            got = use(world, host, session, _shell_tool(host), command, str(world.project),
                      SHELL_TOOLS)
            assert_self_protection_deny(world, host, got)
        for command in ("git add .", "cp /etc/hostname .", "touch src/a.py",
                        "echo x > .claude/notes.md", "mkdir -p .claude/agents"):
            got = use(world, host, session, _shell_tool(host), command, str(world.project),
                      SHELL_TOOLS)
            assert denial(host, got) is None, command


def test_a_real_hook_process_protects_the_sts_py_it_runs(world):
    from hooks import hook_process
    session = new_session()
    say(world, "claude", session, "$stop-that-shit change")
    running = os.path.realpath(os.path.join(os.path.dirname(sts.__file__), "sts.py"))
    for path in (running, session_file(world, session)):
        event = claude_event(session, str(world.project), "Edit",
                             {"file_path": path, "old_string": "a", "new_string": "b"})
        proc = hook_process("claude", event, world.state)
        assert proc.returncode == 0, proc.stderr
        text = deny_reason(json.loads(proc.stdout))
        assert reason_code(text) == CODE and path in text
