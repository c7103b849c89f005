"""Self-protection of the host files that decide whether the guard's hook runs.

A model in change or open mode could otherwise end the guard without touching
any file sts wrote: a project .claude/settings.local.json with
"disableAllHooks", a Gemini CLI hooksConfig.enabled false, a Codex
[features] hooks = false, a plugin dropped into OpenCode's plugin folder, a
Hermes profile switch.  HOST_SETTINGS names those files per host and scope;
these tests write to each of them, through each host's own file tool and its
shell tool, on real folders (HOME, STS_HOME and a project in tmp_path, with
nothing installed, so the protection comes from the names alone).
"""
import itertools
import json
import os
import re

import pytest

import sts
from hooks import denial, deny_reason, hook, hook_process, iter_audit, reason_code
from hooks_shim import request
from test_self_protection import prompt_event

CODE = "GUARD_SELF_PROTECTION"
HOSTS = ("claude", "codex", "gemini", "qwen", "copilot", "opencode", "pi", "omp", "hermes",
         "droid", "kilo", "cline", "vibe")
_ids = itertools.count()

# Every variable a row of HOST_SETTINGS reads: cleared, so the machine's own
# settings never leak into a test.
ENV_VARS = sorted({m for rows in sts.HOST_SETTINGS.values() for _, bases, _ in rows
                   for spec in bases for m in re.findall(r"\$(\w+)", spec)}
                  | {"HERMES_SAFE_MODE", "CODEX_BIN"})


# --- the world ------------------------------------------------------------------------

class World:
    def __init__(self, tmp, monkeypatch):
        self.tmp = tmp
        self.home = tmp / "home"
        self.home.mkdir()
        self.project = tmp / "work" / "proj"
        (self.project / "src").mkdir(parents=True)
        (self.project / "src" / "app.py").write_text("print('app')\n")
        self.state = tmp / "state"
        self.monkeypatch = monkeypatch
        for var in ENV_VARS:
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("HOME", str(self.home))
        monkeypatch.setenv("STS_HOME", str(self.state))
        monkeypatch.chdir(str(tmp))  # the hook must use the event's cwd, not ours
        self.store = sts.Store(str(self.state))

    def h(self, *parts):
        return os.path.join(str(self.home), *parts)

    def p(self, *parts):
        return os.path.join(str(self.project), *parts)

    def real(self, path, text="{}\n"):
        """Make `path` a real file (and its folders), as a host would have it."""
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path


@pytest.fixture
def world(tmp_path, monkeypatch):
    return World(tmp_path, monkeypatch)


# --- each host's events and answers ---------------------------------------------------

def _patch(path):
    return "*** Begin Patch\n*** Update File: %s\n@@\n-old\n+new\n*** End Patch\n" % path


def _tool_event(host, session, cwd, name, args):
    n = next(_ids)
    if host in ("codex", "claude"):
        return {"session_id": session, "turn_id": "t1", "cwd": cwd,
                "hook_event_name": "PreToolUse", "tool_name": name, "tool_input": args,
                "tool_use_id": "call-%d" % n}
    if host == "droid":   # Droid names no tool call
        return {"session_id": session, "cwd": cwd, "permission_mode": "auto-low",
                "hook_event_name": "PreToolUse", "tool_name": name, "tool_input": args}
    if host == "qwen":
        return {"session_id": session, "cwd": cwd, "hook_event_name": "PreToolUse",
                "timestamp": "2026-12-01T14:08:59.727Z", "permission_mode": "yolo",
                "prompt_id": session + "########0", "tool_name": name, "tool_input": args,
                "tool_use_id": "toolu_%d" % n, "tool_call_id": "call_%d" % n}
    if host == "gemini":
        return {"session_id": session, "cwd": cwd, "hook_event_name": "BeforeTool",
                "timestamp": "2026-12-01T14:06:32.%03dZ" % (n % 1000), "tool_name": name,
                "tool_input": args}
    if host == "copilot":
        return {"sessionId": session, "timestamp": 1796133967079 + n, "cwd": cwd,
                "toolName": name, "toolArgs": args, "hook_event_name": "preToolUse"}
    if host == "hermes":
        return {"hook_event_name": "pre_tool_call", "tool_name": name, "tool_input": args,
                "session_id": session, "cwd": cwd, "extra": {"tool_call_id": "c%d" % n}}
    if host == "vibe":
        return {"session_id": session, "transcript_path": _VIBE_JOURNALS.get(session, ""),
                "cwd": cwd, "parent_session_id": None, "hook_event_name": "pre_tool",
                "tool_name": name, "tool_call_id": "call_%d" % n, "tool_input": args}
    if host in ("opencode", "kilo"):
        return request("tool.execute.before", session, {
            "input": {"tool": name, "sessionID": session, "callID": "call_%d" % n},
            "output": {"args": args}}, cwd=cwd, ctx={"parentSessionId": None})
    ctx = {"idle": False, "hasUI": False}
    if host == "omp":
        ctx["sessionFile"] = None
    return request("tool_call", session, {"event": {
        "type": "tool_call", "toolName": name, "toolCallId": "tc%d" % n, "input": args}},
        cwd=cwd, ctx=ctx)


# Vibe has no prompt event: the user's words are a turn in the session's
# journal, read at the session's next tool call (here a harmless one).
_VIBE_JOURNALS = {}


def _vibe_prompt(session, cwd, text):
    folder = _VIBE_JOURNALS.setdefault(
        session, os.path.join(os.path.dirname(cwd), "vibe-journals", session))
    os.makedirs(os.path.join(folder, "journal"), exist_ok=True)
    n = next(_ids)
    with open(os.path.join(folder, "journal", "1.jsonl"), "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"payload": {"method": "turn/start", "client_command_id": "t%d" % n,
                                         "params": {"injected": False, "message": [
                                             {"type": "text", "text": text}]}}}) + "\n")
    return _tool_event("vibe", session, cwd, "vibe.todo", {"action": "read"})


def _prompt_event(host, session, cwd, text):
    if host == "vibe":
        return _vibe_prompt(session, cwd, text)
    if host in ("codex", "claude", "droid"):
        return {"session_id": session, "turn_id": "t1", "cwd": cwd, "prompt_id": "p1",
                "hook_event_name": "UserPromptSubmit", "prompt": text}
    if host == "qwen":
        return {"session_id": session, "cwd": cwd, "hook_event_name": "UserPromptSubmit",
                "prompt_id": session + "########0", "prompt": text, "submitted_prompt": text}
    if host == "gemini":
        return {"session_id": session, "cwd": cwd, "hook_event_name": "BeforeAgent",
                "timestamp": "2026-12-01T14:06:31.450Z", "prompt": text}
    if host == "copilot":
        return {"sessionId": session, "timestamp": 1796133966498, "cwd": cwd, "prompt": text,
                "hook_event_name": "userPromptSubmitted"}
    # hermes, opencode (and Kilo Code, its fork), pi, omp
    return prompt_event("opencode" if host == "kilo" else host, session, cwd, text)


# host -> (tool, args for a path): the main file tool and an edit tool.
WRITE = {
    "claude": ("Write", lambda p: {"file_path": p, "content": '{"disableAllHooks": true}\n'}),
    "codex": ("apply_patch", lambda p: {"command": _patch(p)}),
    "gemini": ("write_file", lambda p: {"file_path": p,
                                        "content": '{"hooksConfig": {"enabled": false}}\n'}),
    "qwen": ("write_file", lambda p: {"file_path": p, "content": '{"disableAllHooks": true}\n'}),
    "copilot": ("create", lambda p: {"path": p, "file_text": '{"disableAllHooks": true}\n'}),
    "opencode": ("write", lambda p: {"filePath": p, "content": "export default {}\n"}),
    "pi": ("write", lambda p: {"path": p, "content": "export default () => {}\n"}),
    "omp": ("write", lambda p: {"path": p, "content": "export default () => {}\n"}),
    "hermes": ("write_file", lambda p: {"path": p, "content": "plugins: {enabled: []}\n"}),
    "droid": ("Create", lambda p: {"file_path": p, "content": '{"hooksDisabled": true}\n'}),
    "kilo": ("write", lambda p: {"filePath": p, "content": "export default {}\n"}),
    "cline": ("editor", lambda p: {"path": p, "new_text": '{"disabledPlugins": ["x"]}\n'}),
    "vibe": ("file_system.write_file", lambda p: {"file_path": p, "content": "[[hooks]]\n"}),
}
EDIT = {
    "claude": ("Edit", lambda p: {"file_path": p, "old_string": "{", "new_string": "{ "}),
    "codex": ("Write", lambda p: {"file_path": p, "content": "[features]\nhooks = false\n"}),
    "gemini": ("replace", lambda p: {"file_path": p, "old_string": "{", "new_string": "{ ",
                                     "instruction": "turn hooks off"}),
    "qwen": ("edit", lambda p: {"file_path": p, "old_string": "{", "new_string": "{ "}),
    "copilot": ("edit", lambda p: {"path": p, "old_str": "{", "new_str": "{ "}),
    "opencode": ("edit", lambda p: {"filePath": p, "oldString": "{", "newString": "{ "}),
    "pi": ("edit", lambda p: {"path": p, "edits": [{"oldText": "{", "newText": "{ "}]}),
    "omp": ("edit", lambda p: {"path": p, "old_string": "{", "new_string": "{ "}),
    "hermes": ("patch", lambda p: {"path": p, "old_string": "{", "new_string": "{ "}),
    "droid": ("Edit", lambda p: {"file_path": p, "old_str": "{", "new_str": "{ "}),
    "kilo": ("edit", lambda p: {"filePath": p, "oldString": "{", "newString": "{ "}),
    "cline": ("editor", lambda p: {"path": p, "old_text": "{", "new_text": "{ "}),
    "vibe": ("file_system.search_replace", lambda p: {"file_path": p, "old_string": "true",
                                                       "new_string": "false"}),
}
SHELL = {
    "claude": ("Bash", lambda c: {"command": c, "description": "d"}),
    "codex": ("exec_command", lambda c: {"cmd": c}),
    "gemini": ("run_shell_command", lambda c: {"command": c, "description": "d"}),
    "qwen": ("run_shell_command", lambda c: {"command": c, "description": "d"}),
    "copilot": ("bash", lambda c: {"command": c, "description": "d"}),
    "opencode": ("bash", lambda c: {"command": c, "description": "d"}),
    "pi": ("bash", lambda c: {"command": c}),
    "omp": ("bash", lambda c: {"command": c}),
    "hermes": ("terminal", lambda c: {"command": c}),
    "droid": ("Execute", lambda c: {"command": c, "summary": "s"}),
    "kilo": ("bash", lambda c: {"command": c, "description": "d"}),
    "cline": ("run_commands", lambda c: {"commands": [c]}),
    "vibe": ("file_system.bash", lambda c: {"command": c}),
}
READ = {
    "claude": ("Read", lambda p: {"file_path": p}),
    "codex": ("Read", lambda p: {"file_path": p}),
    "gemini": ("read_file", lambda p: {"file_path": p}),
    "qwen": ("read_file", lambda p: {"file_path": p}),
    "copilot": ("view", lambda p: {"path": p}),
    "opencode": ("read", lambda p: {"filePath": p}),
    "pi": ("read", lambda p: {"path": p}),
    "omp": ("read", lambda p: {"path": p}),
    "hermes": ("read_file", lambda p: {"path": p}),
    "droid": ("Read", lambda p: {"file_path": p}),
    "kilo": ("read", lambda p: {"filePath": p}),
    "cline": ("read_files", lambda p: {"files": [{"path": p}]}),
    "vibe": ("file_system.read_file", lambda p: {"file_path": p}),
}


def send(world, host, payload):
    event = payload.pop("hook_event_name", None) if host == "copilot" else None
    return hook(host, payload, world.store, event)


def arm(world, host, directive="$stop-that-shit change"):
    session = "host-settings-%s-%d" % (host, next(_ids))
    say(world, host, session, directive)
    return session


def say(world, host, session, text):
    send(world, host, _prompt_event(host, session, str(world.project), text))


def use(world, host, session, table, arg, cwd=None):
    name, build = table[host]
    return send(world, host, _tool_event(host, session, cwd or str(world.project), name,
                                         build(arg)))


def assert_protected(host, got, named=None):
    text = denial(host, got)
    assert text is not None, "%s let a write to a host settings file through: %r" % (host, got)
    assert reason_code(text) == CODE, text
    if named is not None:
        assert named in text, text
    return text


# --- the protected files, per host and scope ----------------------------------------
# (label, path) builders; a `env` entry sets the variable first (to a folder in tmp).

def _under(var, *parts):
    def build(w):
        folder = str(w.tmp / ("env-" + var.lower()))
        w.monkeypatch.setenv(var, folder)
        return os.path.join(folder, *parts)
    return build


PROTECTED = {
    "claude": {
        "project settings": lambda w: w.p(".claude", "settings.json"),
        "project local settings": lambda w: w.p(".claude", "settings.local.json"),
        "user settings": lambda w: w.h(".claude", "settings.json"),
        "user plugin hooks": lambda w: w.h(".claude", "plugins", "cache", "m", "p", "hooks",
                                           "hooks.json"),
        "trust list": lambda w: w.h(".claude.json"),
        "CLAUDE_CONFIG_DIR settings": _under("CLAUDE_CONFIG_DIR", "settings.json"),
        "managed settings": lambda w: "/etc/claude-code/managed-settings.json",
        "managed drop-in": lambda w: "/etc/claude-code/managed-settings.d/10-off.json",
    },
    "codex": {
        "project config": lambda w: w.p(".codex", "config.toml"),
        "project hooks": lambda w: w.p(".codex", "hooks.json"),
        "user config": lambda w: w.h(".codex", "config.toml"),
        "user hooks": lambda w: w.h(".codex", "hooks.json"),
        "profile config": lambda w: w.h(".codex", "work.config.toml"),
        "CODEX_HOME config": _under("CODEX_HOME", "config.toml"),
        "requirements": lambda w: "/etc/codex/requirements.toml",
    },
    "gemini": {
        "workspace settings": lambda w: w.p(".gemini", "settings.json"),
        "user settings": lambda w: w.h(".gemini", "settings.json"),
        "trusted folders": lambda w: w.h(".gemini", "trustedFolders.json"),
        "GEMINI_CLI_HOME settings": _under("GEMINI_CLI_HOME", ".gemini", "settings.json"),
        "system settings": lambda w: "/etc/gemini-cli/settings.json",
        "system settings by env": _under("GEMINI_CLI_SYSTEM_SETTINGS_PATH"),
    },
    "qwen": {
        "project settings": lambda w: w.p(".qwen", "settings.json"),
        "user settings": lambda w: w.h(".qwen", "settings.json"),
        "trusted folders": lambda w: w.h(".qwen", "trustedFolders.json"),
        "user env file": lambda w: w.h(".qwen", ".env"),
        "home env file": lambda w: w.h(".env"),
        "QWEN_HOME settings": _under("QWEN_HOME", "settings.json"),
        "system defaults": lambda w: "/etc/qwen-code/system-defaults.json",
    },
    "copilot": {
        "repo hooks": lambda w: w.p(".github", "hooks", "off.json"),
        "repo settings": lambda w: w.p(".github", "copilot", "settings.json"),
        "repo local settings": lambda w: w.p(".github", "copilot", "settings.local.json"),
        "user config": lambda w: w.h(".copilot", "config.json"),
        "user settings": lambda w: w.h(".copilot", "settings.json"),
        "user hooks": lambda w: w.h(".copilot", "hooks", "off.json"),
        "COPILOT_HOME hooks": _under("COPILOT_HOME", "hooks", "off.json"),
    },
    "opencode": {
        "project config": lambda w: w.p("opencode.json"),
        "project config jsonc": lambda w: w.p("opencode.jsonc"),
        "project plugin": lambda w: w.p(".opencode", "plugins", "off.js"),
        "project plugin (old name)": lambda w: w.p(".opencode", "plugin", "off.ts"),
        "project tool": lambda w: w.p(".opencode", "tools", "x.ts"),
        "user config": lambda w: w.h(".config", "opencode", "opencode.json"),
        "user plugin": lambda w: w.h(".config", "opencode", "plugin", "off.js"),
        "XDG_CONFIG_HOME config": _under("XDG_CONFIG_HOME", "opencode", "opencode.json"),
        "OPENCODE_CONFIG_DIR plugin": _under("OPENCODE_CONFIG_DIR", "plugins", "off.js"),
        "OPENCODE_CONFIG": _under("OPENCODE_CONFIG"),
        "managed config": lambda w: "/etc/opencode/opencode.json",
    },
    "pi": {
        "project settings": lambda w: w.p(".pi", "settings.json"),
        "project extension": lambda w: w.p(".pi", "extensions", "off.ts"),
        "user settings": lambda w: w.h(".pi", "agent", "settings.json"),
        "user extension": lambda w: w.h(".pi", "agent", "extensions", "off.ts"),
        "PI_CODING_AGENT_DIR extension": _under("PI_CODING_AGENT_DIR", "extensions", "off.ts"),
    },
    "omp": {
        "project settings": lambda w: w.p(".omp", "settings.json"),
        "project extension": lambda w: w.p(".omp", "extensions", "off.ts"),
        "project hook module": lambda w: w.p(".omp", "hooks", "pre", "off.ts"),
        "user config": lambda w: w.h(".omp", "agent", "config.yml"),
        "user extension": lambda w: w.h(".omp", "agent", "extensions", "off.ts"),
        "user env file": lambda w: w.h(".omp", "agent", ".env"),
        "profile extension": lambda w: w.h(".omp", "profiles", "work", "agent", "extensions",
                                           "off.ts"),
        "Claude folder extension": lambda w: w.p(".claude", "extensions", "off.ts"),
        "Codex folder tool": lambda w: w.p(".codex", "tools", "off.ts"),
        "Gemini folder extension": lambda w: w.h(".gemini", "extensions", "off", "index.ts"),
    },
    "hermes": {
        "config": lambda w: w.h(".hermes", "config.yaml"),
        "plugin": lambda w: w.h(".hermes", "plugins", "off", "__init__.py"),
        "env file": lambda w: w.h(".hermes", ".env"),
        "active profile": lambda w: w.h(".hermes", "active_profile"),
        "profile config": lambda w: w.h(".hermes", "profiles", "work", "config.yaml"),
        "hook approvals": lambda w: w.h(".hermes", "shell-hooks-allowlist.json"),
        "project plugin": lambda w: w.p(".hermes", "plugins", "off", "__init__.py"),
        "HERMES_HOME config": _under("HERMES_HOME", "config.yaml"),
        "managed config": lambda w: "/etc/hermes/config.yaml",
    },
    "droid": {
        "user settings": lambda w: w.h(".factory", "settings.json"),
        "user hooks": lambda w: w.h(".factory", "hooks.json"),
        "project settings": lambda w: w.p(".factory", "settings.json"),
        "project local settings": lambda w: w.p(".factory", "settings.local.json"),
        "project hooks": lambda w: w.p(".factory", "hooks.json"),
        "plugin hooks": lambda w: w.h(".factory", "plugins", "p", "hooks", "hooks.json"),
        "session transcript": lambda w: w.h(".factory", "sessions", "-w", "s1.jsonl"),
        "session shell env": lambda w: w.h(".factory", "temp", "env", "droid-env-s1.sh"),
    },
    "kilo": {
        "user config": lambda w: w.h(".config", "kilo", "kilo.json"),
        "user plugin": lambda w: w.h(".config", "kilo", "plugin", "stop-that-shit.js"),
        "project config": lambda w: w.p("kilo.jsonc"),
        "project plugin": lambda w: w.p(".kilo", "plugins", "off.ts"),
        "legacy project tool": lambda w: w.p(".kilocode", "tool", "t.js"),
        "KILO_CONFIG_DIR plugin": _under("KILO_CONFIG_DIR", "plugin", "off.js"),
        "KILO_CONFIG": lambda w: (w.monkeypatch.setenv("KILO_CONFIG", w.h("alt.json")),
                                  w.h("alt.json"))[1],
    },
    "cline": {
        "user settings": lambda w: w.h(".cline", "data", "settings", "global-settings.json"),
        "user plugin": lambda w: w.h(".cline", "plugins", "stop-that-shit.js"),
        "user hook file": lambda w: w.h(".cline", "hooks", "PreToolUse"),
        "project plugin": lambda w: w.p(".cline", "plugins", "off.js"),
        "project hook file": lambda w: w.p(".clinerules", "hooks", "PreToolUse"),
    },
    "vibe": {
        "user hooks": lambda w: w.h(".vibe", "hooks.toml"),
        "user config": lambda w: w.h(".vibe", "config.toml"),
        "trusted folders": lambda w: w.h(".vibe", "trusted_folders.toml"),
        "project hooks": lambda w: w.p(".vibe", "hooks.toml"),
        "plugin hooks": lambda w: w.h(".vibe", "plugins", "p", "ai.mistral.vibe", "hooks.toml"),
        "session journal": lambda w: w.h(".vibe", "logs", "session", "unified", "s1", "journal",
                                         "0000000000000001.jsonl"),
        "VIBE_HOME hooks": _under("VIBE_HOME", "hooks.toml"),
    },
}

def _target(world, host, label):
    path = PROTECTED[host][label](world)
    if not path.startswith("/etc/"):
        world.real(path)  # on disk, as the host has it
    return path


# --- writes through each host's file tools and its shell ---------------------------

@pytest.mark.parametrize("host", HOSTS)
def test_file_tools_and_the_shell_cannot_write_a_host_settings_file(world, host):
    session = arm(world, host)
    for label in PROTECTED[host]:
        target = _target(world, host, label)
        for table in (WRITE, EDIT):
            assert_protected(host, use(world, host, session, table, target), named=target)
        for command in ("echo '{\"disableAllHooks\": true}' > %s" % target,
                        "sed -i 's/{/{ /' %s" % target, "rm -f %s" % target):
            assert_protected(host, use(world, host, session, SHELL, command))


@pytest.mark.parametrize("host", HOSTS)
def test_a_hard_link_to_a_host_settings_file_is_that_file(world, host):
    """Made before the session was armed (a backup script, a checkout), another
    name of a host file leads to the same bytes: `notes/cfg-N` is compared by
    what it is, not by its name, whichever folder of the table it links into."""
    session = arm(world, host)
    notes = world.p("notes")
    os.makedirs(notes)
    for n, label in enumerate(PROTECTED[host]):
        target = _target(world, host, label)
        if target.startswith("/etc/"):
            continue   # system folders: not made by a test
        if os.path.isdir(target):
            target = world.real(os.path.join(target, "inside.json"))
        alias = os.path.join(notes, "cfg-%d.json" % n)
        os.link(target, alias)
        assert_protected(host, use(world, host, session, WRITE, alias))
        assert_protected(host, use(world, host, session, SHELL,
                                   "printf '{}' > notes/cfg-%d.json" % n))
    # A file of the project with two names of its own is no host file.
    plain = world.real(world.p("src", "twice.py"))
    os.link(plain, os.path.join(notes, "twice.py"))
    assert denial(host, use(world, host, session, WRITE, os.path.join(notes, "twice.py"))) is None
    assert denial(host, use(world, host, session, SHELL, "printf x > notes/twice.py")) is None


@pytest.mark.parametrize("host", HOSTS)
def test_with_the_guard_off_the_same_writes_run(world, host):
    session = arm(world, host, "$stop-that-shit off")
    for label in PROTECTED[host]:
        target = _target(world, host, label)
        assert denial(host, use(world, host, session, WRITE, target)) is None, label
        got = use(world, host, session, SHELL, "echo '{}' > %s" % target)
        assert denial(host, got) is None, label


@pytest.mark.parametrize("host", HOSTS)
def test_reads_of_host_settings_stay_allowed(world, host):
    session = arm(world, host, "$stop-that-shit review")
    for label in PROTECTED[host]:
        target = _target(world, host, label)
        assert denial(host, use(world, host, session, READ, target)) is None, label
        got = use(world, host, session, SHELL, "cat %s" % target)
        assert denial(host, got) is None, label


@pytest.mark.parametrize("host", HOSTS)
def test_open_mode_and_every_mode_are_protected_watch_only_reports(world, host):
    target = world.real(world.p(".claude", "settings.local.json"))
    for directive in ("$stop-that-shit open", "$stop-that-shit review",
                      "$stop-that-shit change files=.claude/**"):
        session = arm(world, host, directive)
        assert_protected(host, use(world, host, session, WRITE, target))
    session = arm(world, host, "$stop-that-shit change watch")
    assert denial(host, use(world, host, session, WRITE, target)) is None
    record = list(iter_audit(world.store, sts.session_key(session)))[-1]["decision"]
    assert (record["reasonCode"], record["policyOutcome"]) == (CODE, "report_and_defer")


def _move_patch(src, dest):
    return ("*** Begin Patch\n*** Update File: %s\n*** Move to: %s\n@@\n-old\n+new\n"
            "*** End Patch\n" % (src, dest))


# Every tool of every host that writes a file, as (host, tool, args for the path).
ALL_WRITES = [
    ("claude", "Write", lambda p: {"file_path": p, "content": "{}"}),
    ("claude", "Edit", lambda p: {"file_path": p, "old_string": "{", "new_string": "["}),
    ("claude", "NotebookEdit", lambda p: {"notebook_path": p, "new_source": "x"}),
    ("claude", "MultiEdit", lambda p: {"file_path": p, "edits": [{"old_string": "{",
                                                                 "new_string": "["}]}),
    ("claude", "mcp__fs__write_file", lambda p: {"path": p, "content": "{}"}),
    ("codex", "apply_patch", lambda p: {"command": _patch(p)}),
    ("codex", "apply_patch", lambda p: {"command": _move_patch("src/app.py", p)}),
    ("codex", "apply_patch", lambda p: {
        "command": "*** Begin Patch\n*** Delete File: %s\n*** End Patch\n" % p}),
    ("codex", "Write", lambda p: {"file_path": p, "content": "{}"}),
    ("codex", "Edit", lambda p: {"file_path": p, "old_string": "{", "new_string": "["}),
    ("gemini", "write_file", lambda p: {"file_path": p, "content": "{}"}),
    ("gemini", "replace", lambda p: {"file_path": p, "old_string": "{", "new_string": "[",
                                     "instruction": "x"}),
    ("gemini", "mcp_fs_write_file", lambda p: {"path": p, "content": "{}"}),
    ("qwen", "write_file", lambda p: {"file_path": p, "content": "{}"}),
    ("qwen", "edit", lambda p: {"file_path": p, "old_string": "{", "new_string": "["}),
    ("qwen", "notebook_edit", lambda p: {"notebook_path": p, "new_source": "x"}),
    ("copilot", "create", lambda p: {"path": p, "file_text": "{}"}),
    ("copilot", "edit", lambda p: {"path": p, "old_str": "{", "new_str": "["}),
    ("copilot", "str_replace_editor", lambda p: {"command": "create", "path": p,
                                                 "file_text": "{}"}),
    ("copilot", "str_replace_editor", lambda p: {"command": "str_replace", "path": p,
                                                 "old_str": "{", "new_str": "["}),
    ("copilot", "apply_patch", lambda p: _patch(p)),
    ("opencode", "write", lambda p: {"filePath": p, "content": "{}"}),
    ("opencode", "edit", lambda p: {"filePath": p, "oldString": "{", "newString": "["}),
    ("opencode", "apply_patch", lambda p: {"patchText": _patch(p)}),
    ("pi", "write", lambda p: {"path": p, "content": "{}"}),
    ("pi", "edit", lambda p: {"path": p, "edits": [{"oldText": "{", "newText": "["}]}),
    ("omp", "write", lambda p: {"path": p, "content": "{}"}),
    ("omp", "edit", lambda p: {"path": p, "old_string": "{", "new_string": "["}),
    ("omp", "edit", lambda p: {"input": "*** Edit File: %s\n*** Find\n{\n*** Replace\n[\n" % p}),
    ("hermes", "write_file", lambda p: {"path": p, "content": "{}"}),
    ("hermes", "patch", lambda p: {"path": p, "old_string": "{", "new_string": "["}),
    ("hermes", "patch", lambda p: {"mode": "patch", "patch": _patch(p)}),
]
SHELLS = [(host,) + SHELL[host] for host in HOSTS] + [
    ("codex", "Bash", lambda c: {"command": c}),
    ("codex", "shell_command", lambda c: {"command": c}),
    ("claude", "PowerShell", lambda c: {"command": c}),
    ("copilot", "powershell", lambda c: {"command": c}),
    ("pi", "powershell", lambda c: {"command": c}),
]


@pytest.mark.parametrize("index", range(len(ALL_WRITES)))
def test_every_write_tool_of_every_host_is_checked(world, index):
    host, tool, build = ALL_WRITES[index]
    session = arm(world, host)
    for target in (world.real(world.p(".claude", "settings.local.json")),
                   world.real(world.h(".config", "opencode", "opencode.json"))):
        got = send(world, host, _tool_event(host, session, world.p(), tool, build(target)))
        assert_protected(host, got, named=target)
        got = send(world, host, _tool_event(host, session, world.p(), tool,
                                            build(world.p("src", "app.py"))))
        assert denial(host, got) is None, (tool, denial(host, got))


@pytest.mark.parametrize("index", range(len(SHELLS)))
def test_every_shell_tool_of_every_host_is_checked(world, index):
    host, tool, build = SHELLS[index]
    session = arm(world, host)
    powershell = tool.lower() == "powershell"
    write = ("Set-Content -Path .gemini/settings.json -Value x" if powershell
             else "echo x > .gemini/settings.json")
    got = send(world, host, _tool_event(host, session, world.p(), tool, build(write)))
    assert_protected(host, got)
    harmless = "Set-Content -Path src/app.py -Value x" if powershell else "echo x > src/app.py"
    got = send(world, host, _tool_event(host, session, world.p(), tool, build(harmless)))
    assert denial(host, got) is None


# --- shell forms, folders and path spellings ----------------------------------------

SHELL_FORMS = [
    "echo x | tee .claude/settings.local.json",
    "printf '{}' >> .gemini/settings.json",
    "cp /tmp/evil.json .qwen/settings.json",
    "mv .github/hooks/stop-that-shit.json /tmp/x.json",
    "ln -sf /dev/null .codex/hooks.json",
    "truncate -s 0 opencode.json",
    "git checkout -- .pi/settings.json",
    "bash -c 'echo off > .omp/settings.json'",
    "cd .claude && echo '{}' > settings.json",
    "install -m 644 /tmp/evil.json .github/copilot/settings.local.json",
    "echo 'plugins: {}' > ~/.hermes/config.yaml",
    "cp /tmp/evil.js ~/.config/opencode/plugins/",
    "echo off > ~/.omp/agent/.env",
]


@pytest.mark.parametrize("host", ["claude", "gemini", "opencode", "hermes"])
def test_shell_forms_that_write_a_settings_file(world, host):
    session = arm(world, host)
    for command in SHELL_FORMS:
        assert_protected(host, use(world, host, session, SHELL, command))


FOLDER_COMMANDS = [
    "rm -rf .claude", "mv .gemini .gemini-off", "rm -r .opencode/plugins",
    "rm -rf ~/.pi/agent/extensions", "mv ~/.config/opencode /tmp/oc", "rm -rf ~/.hermes",
    "rm -rf .github", "cp settings.json .claude/", "mv ~/.copilot ~/.copilot.bak",
]


@pytest.mark.parametrize("host", ["codex", "qwen", "pi"])
def test_removing_or_filling_a_folder_that_holds_host_settings(world, host):
    world.real(world.p("settings.json"))
    session = arm(world, host)
    for command in FOLDER_COMMANDS:
        assert_protected(host, use(world, host, session, SHELL, command))


def test_the_working_folder_inside_a_settings_folder_is_not_a_holder(world):
    # A Claude Code worktree lives in .claude/worktrees/<name>: naming the working
    # folder or its parents (`git add .`, `cp x ..`) says nothing about the settings.
    tree = world.project / ".claude" / "worktrees" / "w1"
    (tree / "src").mkdir(parents=True)
    session = arm(world, "claude")
    for command in ("git add .", "cp /etc/hostname ..", "touch src/a.py", "cp /etc/hostname ../.."):
        got = use(world, "claude", session, SHELL, command, cwd=str(tree))
        assert denial("claude", got) is None, command
    got = use(world, "claude", session, SHELL, "echo x > ../../settings.json", cwd=str(tree))
    assert_protected("claude", got)


def test_path_spellings_reach_the_same_file(world):
    target = world.real(world.p(".claude", "settings.local.json"))
    user = world.real(world.h(".gemini", "settings.json"))
    link = world.project / "cfg"
    os.symlink(os.path.dirname(user), str(link))
    session = arm(world, "claude")
    for named, cwd in ((".claude/settings.local.json", world.p()),
                       ("./src/../.claude//settings.local.json", world.p()),
                       ("../.claude/settings.local.json", world.p("src")),
                       (target, world.p("src")),
                       ("~/.gemini/settings.json", world.p()),
                       ("cfg/settings.json", world.p()),          # through a link
                       (os.path.join(str(link), "settings.json"), "/")):
        assert_protected("claude", use(world, "claude", session, WRITE, named, cwd=cwd))
        got = use(world, "claude", session, SHELL, "echo x > %s" % named, cwd=cwd)
        assert_protected("claude", got)


def test_a_home_reached_through_a_link_is_matched_by_name(world):
    # ~/.claude is the same folder under any spelling of the home: the name decides.
    alias = world.tmp / "alias-home"
    os.symlink(str(world.home), str(alias))
    world.real(world.h(".codex", "config.toml"))
    session = arm(world, "codex")
    got = use(world, "codex", session, WRITE, str(alias / ".codex" / "config.toml"))
    assert_protected("codex", got)


def test_another_letter_case_counts_only_where_the_file_system_ignores_it(world, monkeypatch):
    upper = world.p(".Claude", "Settings.Local.json")
    session = arm(world, "claude")
    monkeypatch.setattr(sts, "_tamper_case_insensitive", lambda path: False)
    assert denial("claude", use(world, "claude", session, WRITE, upper)) is None
    monkeypatch.setattr(sts, "_tamper_case_insensitive", lambda path: True)
    assert_protected("claude", use(world, "claude", session, WRITE, upper))


def test_windows_paths_are_matched_the_way_windows_reads_them(world):
    session = arm(world, "claude")
    for named, cwd in ((r"C:\Program Files\ClaudeCode\managed-settings.json", "C:\\work"),
                       (r"c:/program files/claudecode/Managed-Settings.json", "C:\\work"),
                       (r".claude\settings.local.json", "C:\\work\\proj"),
                       (r"C:\Users\me\.codex\config.toml", "C:\\work"),
                       # Names Windows reads as the same file.
                       (r".claude.\settings.local.json", "C:\\work\\proj"),
                       (r".claude \settings.local.json. ", "C:\\work\\proj"),
                       (r".claude\settings.local.json::$DATA", "C:\\work\\proj"),
                       (r"\\?\C:\work\proj\.gemini\settings.json", "C:\\work")):
        got = use(world, "claude", session, WRITE, named, cwd=cwd)
        assert_protected("claude", got)


# --- what stays writable -------------------------------------------------------------

LOOKALIKES = [
    "docs/settings.json", "src/.claude-notes", "settings.local.json", "hooks.json",
    "config.toml", ".claude/notes.md", ".claude/agents/reviewer.md",
    ".claude/commands/fix.md", ".claude/settings.json.bak", ".claude-settings.json",
    ".gemini/GEMINI.md", ".github/workflows/ci.yml", ".github/copilot-instructions.md",
    "opencode.json.orig", "docs/opencode.md", ".opencode/agent/plan.md",
    ".pi/skills/x/SKILL.md", ".omp/notes.md", ".hermes/notes.md", ".env", ".env.local",
    "src/config.yaml", "plugins/x.js", "extensions/y.ts", ".codex/AGENTS.md",
    "settings/.claude.json.example",
]


@pytest.mark.parametrize("host", HOSTS)
def test_files_with_the_same_names_elsewhere_stay_writable(world, host):
    session = arm(world, host)
    for rel in LOOKALIKES:
        path = world.real(world.p(rel))
        got = use(world, host, session, WRITE, path)
        assert denial(host, got) is None, (rel, denial(host, got))
        got = use(world, host, session, SHELL, "echo x >> %s" % rel)
        assert denial(host, got) is None, (rel, denial(host, got))
    # (`>>`: emptying a file outside the workspace first is a matter of undo=)
    for command in ("mkdir -p .claude/agents", "git add .", "touch src/app.py",
                    "echo x >> ~/notes.txt", "rm -rf build"):
        assert denial(host, use(world, host, session, SHELL, command)) is None, command


def test_an_unset_variable_protects_nothing_extra(world):
    # Without CODEX_HOME, a folder named like its usual value is an ordinary folder.
    session = arm(world, "codex")
    path = world.real(str(world.tmp / "env-codex_home" / "config.toml"))
    assert denial("codex", use(world, "codex", session, WRITE, path)) is None


# --- the message ---------------------------------------------------------------------

def test_the_message_names_the_file_the_host_and_the_way_out(world):
    target = world.real(world.p(".gemini", "settings.json"))
    session = arm(world, "gemini")
    text = assert_protected("gemini", use(world, "gemini", session, WRITE, target),
                            named=target)
    detail = next(line for line in text.splitlines() if line.startswith("Detail:"))
    assert "Gemini CLI" in detail and "settings file" in detail
    assert "whether the guard's hook runs" in detail
    follow = next(line for line in text.splitlines() if line.startswith("Next:"))
    # The way out comes first: the user turns the guard off for the session.
    assert follow.index("`$stop-that-shit off`") < follow.index("by hand")
    assert "STOP / INTENT" in text


def test_the_culprit_is_the_part_of_the_line_that_writes_the_settings(world):
    session = arm(world, "claude")
    for command, part in (("echo x > a.txt && echo y > .claude/settings.json",
                           "> .claude/settings.json"),
                          ("cp a b && cp c opencode.json", "opencode.json")):
        text = assert_protected("claude", use(world, "claude", session, SHELL, command))
        culprit = next(line for line in text.splitlines() if line.startswith("Culprit:"))
        assert part in culprit and "a.txt" not in culprit and "`b`" not in culprit, culprit


def test_a_folder_hit_says_which_entry_it_reaches(world):
    session = arm(world, "opencode")
    got = use(world, "opencode", session, SHELL, "rm -rf .opencode")
    text = assert_protected("opencode", got)
    assert "holds .opencode/plugin/" in text and "OpenCode" in text


def test_a_file_install_wrote_keeps_the_install_wording(world, monkeypatch, capsys):
    monkeypatch.setattr(sts, "_codex_bin", lambda: None)
    assert sts.cmd_install(["claude"]) == 0
    capsys.readouterr()
    session = arm(world, "claude")
    target = world.h(".claude", "settings.json")
    text = assert_protected("claude", use(world, "claude", session, WRITE, target))
    assert "sts.py install" in text and "decides whether the guard's hook runs" not in text


# --- the decision core, directly ------------------------------------------------------

def _state(mode="change", level="guard"):
    state = sts.default_state()
    state["contract"].update(mode=mode, level=level, source="directive")
    return state


def _action(paths=(), shell=(), cwd=None):
    return sts.Action(name="Write", mutability="write", affected_paths=list(paths),
                      shell_write_targets=list(shell), cwd=cwd)


@pytest.mark.parametrize("mode", ["answer", "review", "change", "monitor", "open"])
def test_decide_stops_a_settings_write_in_every_mode(world, mode):
    settings = sts.host_settings()
    action = _action([".claude/settings.local.json"], cwd=world.p())
    decision = sts.decide(action, _state(mode), action_id=None, declared=True,
                          protected_paths=[settings])
    assert (decision.code, decision.family, decision.outcome) == (CODE, "I", "deny_and_explain")
    off = sts.decide(action, _state(mode, "off"), action_id=None, declared=True,
                     protected_paths=[settings])
    assert off.outcome == "allow"
    # Without the host settings in the protected set, the file is an ordinary one.
    plain = sts.decide(action, _state("change"), action_id=None, declared=True,
                       protected_paths=[str(world.state)])
    assert plain.code == "WITHIN_CONTRACT"


def test_host_settings_follow_the_environment(world, monkeypatch):
    elsewhere = str(world.tmp / "claude-config")
    hits = sts.host_settings_matches(_action([elsewhere + "/settings.json"], cwd="/"),
                                     [sts.host_settings()])
    assert hits == []
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", elsewhere)
    hits = sts.host_settings_matches(_action([elsewhere + "/settings.json"], cwd="/"),
                                     [sts.host_settings()])
    assert [(raw, rel) for raw, _, (rel, _, _, _) in hits] == [
        (elsewhere + "/settings.json", "is")]
    # A relative value depends on the host's working folder: left out, not guessed.
    monkeypatch.setenv("CODEX_HOME", "relative/codex")
    assert all("relative" not in base[1] for bases in sts.host_settings().bases.values()
               for base in bases)


def test_a_config_folder_in_another_unicode_form_is_it_where_the_folder_ignores_that(
        world, monkeypatch):
    """CLAUDE_CONFIG_DIR written composed (é), the call spelling it decomposed
    (e + accent): one folder on macOS, whose file systems ignore the form; on a
    folder that tells them apart, two folders."""
    composed = str(world.tmp / "Caf\u00e9")
    decomposed = str(world.tmp / "Cafe\u0301")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", composed)
    action = _action([decomposed + "/settings.json"], cwd="/")
    for folds, expected in ((True, [decomposed + "/settings.json"]), (False, [])):
        monkeypatch.setattr(sts, "_tamper_case_insensitive", lambda path, folds=folds: folds)
        hits = sts.host_settings_matches(action, [sts.host_settings()])
        assert [raw for raw, _, _ in hits] == expected


def test_relative_paths_without_a_working_folder_are_matched_by_name(world, monkeypatch):
    probes = []
    monkeypatch.setattr(sts, "_tamper_case_insensitive", lambda path: probes.append(path))
    hits = sts.host_settings_matches(
        _action([".qwen/settings.json", "src/a.py", ".QWEN/Settings.json"], cwd=None),
        [sts.host_settings()])
    # Another letter case cannot be probed without a folder (the hook's own is never
    # used): it is taken to be the same file.
    assert [raw for raw, _, _ in hits] == [".qwen/settings.json", ".QWEN/Settings.json"]
    assert probes == []


def test_the_protected_set_carries_the_host_settings_only_when_paths_are_named(world):
    protected = sts._protected_paths(world.store)
    assert sum(isinstance(p, sts.HostSettings) for p in protected) == 1
    # The guard's own roots still match as before, and the extra entry is skipped there.
    assert sts.protected_hits(_action([str(world.state / "x")]), protected) == [
        str(world.state / "x")]


def test_a_real_hook_process_protects_a_project_settings_file(world):
    session = "host-settings-process"
    target = world.real(world.p(".claude", "settings.local.json"))
    event = _prompt_event("claude", session, world.p(), "$stop-that-shit change")
    assert hook_process("claude", event, world.state).returncode == 0
    event = _tool_event("claude", session, world.p(), "Write",
                        {"file_path": ".claude/settings.local.json",
                         "content": '{"disableAllHooks": true}'})
    proc = hook_process("claude", event, world.state)
    assert proc.returncode == 0, proc.stderr
    text = deny_reason(json.loads(proc.stdout))
    assert reason_code(text) == CODE and target in text


# --- glob patterns of shell targets ------------------------------------------------
# The analyzer gives a glob target or a whole folder changed (`rm -rf d` -> d/**) as a
# pattern; a wildcard only expands to names that exist, so patterns are expanded on disk.

def _pattern_hits(patterns, cwd):
    return [(pattern, shown, relation, spelled) for pattern, shown, (relation, _, _, spelled)
            in sts.host_settings_pattern_matches(patterns, cwd, [sts.host_settings()])]


def test_a_glob_that_expands_to_a_settings_file_reaches_it(world):
    world.real(world.p(".claude", "settings.json"))
    world.real(world.p("docs", "a.json"))
    (world.project / "build" / "x").mkdir(parents=True)
    cwd = world.p()
    for pattern in (".claude/*.json", ".claude/*", "*/settings.json", ".c*/settings.local.json",
                    ".c*", "*", "*/**", "./**", world.p() + "/**"):
        assert _pattern_hits([pattern], cwd), pattern
    for pattern in ("docs/*.json", "src/*.py", "*.py", "build/**", "build/*", "build/*/**",
                    "docs/**", "opencode.js*", "dist/*"):
        assert _pattern_hits([pattern], cwd) == [], pattern


def test_a_pattern_that_writes_out_an_entrys_names_reaches_it_before_it_exists(world):
    # `cp -r x/. .gemini` gives .gemini/*: whatever x holds lands there, settings.json too.
    cwd = world.p()
    for pattern in (".gemini/*", ".opencode/plugins/*", ".github/hooks/*.json", ".github/*/x.json",
                    ".omp/profiles/*/agent/extensions/*", "sub/.codex/*.toml"):
        assert _pattern_hits([pattern], cwd), pattern
    # A wildcard never stands for the first name of an entry: `dist/*` would then hold
    # dist/.claude, and every folder would hold settings.
    assert _pattern_hits(["./*", "*/*.json", "dist/*/**"], cwd) == []


def test_a_whole_folder_changed_is_checked_for_settings_directly_in_it(world):
    world.real(str(world.tmp / "other" / ".gemini" / "settings.json"))
    (world.tmp / "empty" / ".claude" / "agents").mkdir(parents=True)
    assert _pattern_hits([str(world.tmp / "other") + "/**"], world.p())
    # A .claude folder holding no settings file is not a settings folder.
    assert _pattern_hits([str(world.tmp / "empty") + "/**"], world.p()) == []


def test_globs_in_user_and_env_folders(world, monkeypatch):
    world.real(world.h(".codex", "config.toml"))
    monkeypatch.setenv("HERMES_HOME", str(world.tmp / "hermes-home"))
    world.real(str(world.tmp / "hermes-home" / "config.yaml"))
    assert _pattern_hits(["~/.c*/config.toml"], "/")
    assert _pattern_hits([str(world.tmp / "hermes-home") + "/*.yaml"], "/")
    assert _pattern_hits(["~/.q*/settings.json"], "/") == []  # nothing there to expand to


def test_patterns_the_disk_cannot_answer_are_judged_by_names(world):
    # No working folder, or a Windows path on this machine: the names decide.
    assert _pattern_hits([".claude/*.json"], None)
    assert _pattern_hits([r"C:\proj\.claude\*"], "C:\\proj")
    assert _pattern_hits([r"C:\Users\me\.config\opencode\plugin*\x.js"], "C:\\")
    assert _pattern_hits(["src/*.py", "docs/*.json", "*/settings.json"], None) == []


def test_a_listing_past_the_limit_leaves_the_names_to_decide(world, monkeypatch):
    monkeypatch.setattr(sts, "_GLOB_LIST_LIMIT", 1)
    for name in ("a", "b", "c"):
        world.real(world.p("many", name, ".claude", "settings.json"))
    assert _pattern_hits(["many/*/.claude/settings.json"], world.p())  # by names
    assert _pattern_hits(["many/*/*/settings.json"], world.p()) == []  # would need a listing
    monkeypatch.setattr(sts, "_GLOB_LIST_LIMIT", 4096)
    assert _pattern_hits(["many/*/*/settings.json"], world.p())


# --- the table and its documentation ---------------------------------------------------

def test_every_host_has_project_or_user_rows_and_clean_entries():
    # One key per host, plus "shell" (the startup files every host's shell reads) and
    # "git" and "tools" (hooks and config that make a later read run code).
    assert set(sts.HOST_SETTINGS) - {"shell", "git", "tools"} == set(HOSTS) == set(sts.ADAPTERS)
    for host, rows in sts.HOST_SETTINGS.items():
        assert host in ("shell", "tools") or any("**" in bases for _, bases, _ in rows), host
        for what, bases, entries in rows:
            assert what and bases and entries, host
            for entry in entries:
                assert not entry.startswith("/") and ".." not in entry.split("/"), entry


HOST_NAMES = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI",
              "qwen": "Qwen Code", "copilot": "Copilot CLI", "opencode": "OpenCode", "pi": "Pi",
              "omp": "Oh My Pi", "hermes": "Hermes Agent", "droid": "Factory Droid",
              "kilo": "Kilo Code", "cline": "Cline CLI", "vibe": "Mistral Vibe",
              "shell": "Every host's shell",
              "git": "git, on every host", "tools": "curl, wget, kubectl, gh, gpg"}


def readme_table():
    """HOST_SETTINGS as host_shims/README.md shows it, one line per row."""
    lines = ["| Host | What | Where | Names |", "| --- | --- | --- | --- |"]
    for host, rows in sts.HOST_SETTINGS.items():
        for what, bases, entries in rows:
            where = "; ".join("any folder" if b == "**" else "`%s`" % b for b in bases)
            names = ", ".join("`%s`" % e if e else "(that file)" for e in entries)
            lines.append("| %s | %s | %s | %s |" % (HOST_NAMES[host], what, where, names))
    return "\n".join(lines) + "\n"


def test_the_readme_shows_the_table_as_it_is():
    # The host detail lives beside the shims; the main README points there.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "host_shims", "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    assert readme_table() in readme, "update host_shims/README.md with:\n" + readme_table()


# --- patterns through the shell --------------------------------------------------------
# The analyzer gives glob targets and whole folders changed as patterns.

GLOB_COMMANDS = [
    "rm .claude/*.json", "rm -rf *", "rm -rf .", "cp -r /tmp/stage/. .gemini",
    "rm ~/.c*/config.toml", "echo x | tee .opencode/plugins/*.js", "rm -rf ../proj",
    "find . -name '*.json' -delete",
]


@pytest.mark.parametrize("command", GLOB_COMMANDS)
def test_globs_and_whole_folders_through_the_shell(world, command):
    world.real(world.p(".claude", "settings.json"))
    world.real(world.p(".opencode", "plugins", "a.js"))
    world.real(world.h(".codex", "config.toml"))
    session = arm(world, "claude")
    assert_protected("claude", use(world, "claude", session, SHELL, command))


@pytest.mark.parametrize("command", ["rm -rf dist/*", "rm -rf build", "rm src/*.pyc",
                                     "cp -r /tmp/stage/. dist", "rm -f *.log"])
def test_globs_elsewhere_go_through(world, command):
    world.real(world.p(".claude", "settings.json"))
    world.real(world.p("dist", "a.js"))
    session = arm(world, "claude")
    assert denial("claude", use(world, "claude", session, SHELL, command)) is None


# --- the shell's own startup files ------------------------------------------------------
# Every host's shell tool runs a shell that reads these before each command.

SHELL_STARTUP = [".bashrc", ".bash_profile", ".profile", ".zshenv", ".zshrc", ".zprofile"]


@pytest.mark.parametrize("host", HOSTS)
def test_shell_startup_files_in_home_are_protected(world, host):
    session = arm(world, host)
    for name in SHELL_STARTUP:
        target = world.real(world.h(name), "# the user's own\n")
        assert_protected(host, use(world, host, session, WRITE, target), named=target)
        for command in ("echo \"alias ls='rm -rf .'\" >> ~/%s" % name,
                        "sed -i 's/^/#/' ~/%s" % name, "cp /dev/null ~/%s" % name):
            assert_protected(host, use(world, host, session, SHELL, command))
    # Claude Code's CLAUDE_ENV_FILE lives in a per-session folder under ~/.claude.
    env_file = world.real(world.h(".claude", "session-env", "s1", "hook-0.sh"), "")
    assert_protected(host, use(world, host, session, WRITE, env_file), named=env_file)


def test_shell_startup_files_named_by_the_environment_are_protected(world, monkeypatch):
    zdot = world.tmp / "zdot"
    monkeypatch.setenv("ZDOTDIR", str(zdot))
    bash_env = world.real(str(world.tmp / "bash-env.sh"), "")
    monkeypatch.setenv("BASH_ENV", bash_env)
    session = arm(world, "claude")
    for target in (world.real(str(zdot / ".zshenv"), ""), bash_env):
        assert_protected("claude", use(world, "claude", session, WRITE, target), named=target)


def test_tables_carried_by_a_split_cache_are_the_tables_parsed(monkeypatch):
    # A split cache carries the parsed tables; a hook loads them instead of
    # parsing HOST_SETTINGS again.  They must be what parsing gives, and
    # tables parsed under another kind of system must not be used.
    snapshot = sts._settings_snapshot()
    monkeypatch.setattr(sts, "_SETTINGS_CACHE", {})
    parsed = (sts._settings_static(), sts._settings_anywhere(), sts._settings_firsts())
    assert parsed[0][0] and parsed[1] and parsed[2]
    monkeypatch.setattr(sts, "_SETTINGS_CACHE", {})
    monkeypatch.setattr(sts, "_SETTINGS_PRECOMPUTED", snapshot)
    loaded = (sts._settings_static(), sts._settings_anywhere(), sts._settings_firsts())
    assert loaded == parsed
    assert sts.host_settings({}, "/home/u") == host_settings_parsed({}, "/home/u", monkeypatch)
    # Another system's tables (a stand-in that holds nothing) are ignored.
    foreign = dict(snapshot, **{"os.name": "other", "static": __import__("marshal").dumps(
        (frozenset(), [], []))})
    monkeypatch.setattr(sts, "_SETTINGS_CACHE", {})
    monkeypatch.setattr(sts, "_SETTINGS_PRECOMPUTED", foreign)
    assert sts._settings_static() == parsed[0]


def host_settings_parsed(environ, home, monkeypatch):
    monkeypatch.setattr(sts, "_SETTINGS_PRECOMPUTED", None)
    monkeypatch.setattr(sts, "_SETTINGS_CACHE", {})
    return sts.host_settings(environ, home)


def test_startup_file_names_elsewhere_stay_writable(world):
    session = arm(world, "claude")
    for rel in ("dotfiles/.bashrc", ".zshrc", "docs/.profile"):
        path = world.real(world.p(rel))
        assert denial("claude", use(world, "claude", session, WRITE, path)) is None, rel
    off = arm(world, "claude", "$stop-that-shit off")
    target = world.real(world.h(".bashrc"))
    assert denial("claude", use(world, "claude", off, WRITE, target)) is None
