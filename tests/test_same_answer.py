"""One logical action, nine hosts, one answer (issue 4).

Each case arms the same contract on every host, sends the same action in
that host's own tool shape, and reads the decision code from the `Reason:`
line of the host's denial.  The codes must agree across hosts.
"""
import pytest

from hooks import denial, reason_code
from hooks_shim import answer, request

CWD = "/tmp/same/work"
SESSION = "same-answer-session"
HOSTS = ("codex", "claude", "hermes", "opencode", "pi", "omp", "gemini", "copilot", "qwen")


def _abs(path):
    return CWD + "/" + path


# --- per host: a prompt, a file write, a shell command, a subagent -----------------

def codex_prompt(text):
    return {"session_id": SESSION, "turn_id": "turn-1", "cwd": CWD, "model": "gpt-5.5",
            "hook_event_name": "UserPromptSubmit", "prompt": text}


def codex_tool(kind, arg, call_id):
    base = {"session_id": SESSION, "turn_id": "turn-1", "cwd": CWD,
            "hook_event_name": "PreToolUse", "tool_use_id": call_id}
    if kind == "write":  # what Codex 0.171 really sends: a freeform apply_patch
        patch = "*** Begin Patch\n*** Add File: %s\n+x = 1\n*** End Patch\n" % _abs(arg)
        return dict(base, tool_name="apply_patch", tool_input={"command": patch})
    if kind == "shell":
        return dict(base, tool_name="Bash", tool_input={"command": arg})
    return dict(base, tool_name="spawn_agent", tool_input={"message": "help"})


def claude_prompt(text):
    return {"session_id": SESSION, "cwd": CWD, "prompt_id": "p-1", "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit", "prompt": text}


def claude_tool(kind, arg, call_id):
    base = {"session_id": SESSION, "cwd": CWD, "hook_event_name": "PreToolUse",
            "tool_use_id": call_id}
    if kind == "write":
        return dict(base, tool_name="Write", tool_input={"file_path": _abs(arg), "content": "x = 1\n"})
    if kind == "shell":
        return dict(base, tool_name="Bash", tool_input={"command": arg})
    return dict(base, tool_name="Agent", tool_input={"description": "d", "prompt": "p",
                                                     "subagent_type": "general-purpose"})


def hermes_prompt(text):
    return {"hook_event_name": "pre_llm_call", "tool_name": None, "tool_input": None,
            "session_id": SESSION, "cwd": CWD,
            "extra": {"user_message": text, "turn_id": "turn-1", "platform": "cli"}}


def hermes_tool(kind, arg, call_id):
    name, args = {"write": ("write_file", {"path": _abs(arg), "content": "x = 1\n"}),
                  "shell": ("terminal", {"command": arg}),
                  "agent": ("delegate_task", {"goal": "help", "context": "c"})}[kind]
    return {"hook_event_name": "pre_tool_call", "tool_name": name, "tool_input": args,
            "session_id": SESSION, "cwd": CWD, "extra": {"tool_call_id": call_id}}


def opencode_prompt(text):
    return request("chat.message", SESSION, {
        "input": {"sessionID": SESSION},
        "output": {"message": {"id": "msg_1", "role": "user", "sessionID": SESSION, "agent": "build"},
                   "parts": [{"type": "text", "text": text}]}},
        cwd=CWD, ctx={"parentSessionId": None, "agentCanEdit": True})


def opencode_tool(kind, arg, call_id):
    name, args = {"write": ("write", {"filePath": _abs(arg), "content": "x = 1\n"}),
                  "shell": ("bash", {"command": arg, "description": "d"}),
                  "agent": ("task", {"description": "d", "prompt": "p",
                                     "subagent_type": "general"})}[kind]
    return request("tool.execute.before", SESSION, {
        "input": {"tool": name, "sessionID": SESSION, "callID": call_id},
        "output": {"args": args}}, cwd=CWD, ctx={"parentSessionId": None})


def pi_prompt(text):
    return request("input", SESSION, {"event": {"type": "input", "text": text,
                                                "source": "interactive"}},
                   cwd=CWD, ctx={"idle": True, "hasUI": False})


def pi_tool(kind, arg, call_id):
    name, args = {"write": ("write", {"path": _abs(arg), "content": "x = 1\n"}),
                  "shell": ("bash", {"command": arg}),
                  "agent": ("subagent", {"agent": "scout", "task": "help"})}[kind]
    return request("tool_call", SESSION, {"event": {"type": "tool_call", "toolName": name,
                                                    "toolCallId": call_id, "input": args}},
                   cwd=CWD, ctx={"idle": False, "hasUI": False})


def omp_prompt(text):
    return request("input", SESSION, {"event": {"type": "input", "text": text,
                                                "source": "interactive"}},
                   cwd=CWD, ctx={"idle": True, "hasUI": False, "sessionFile": None})


def omp_tool(kind, arg, call_id):
    if kind == "agent":
        name, args = "task", {"context": "c", "tasks": [{"name": "A", "agent": "task", "task": "help"}]}
        return _omp_call(name, args, call_id)
    name, args = {"write": ("write", {"path": _abs(arg), "content": "x = 1\n"}),
                  "shell": ("bash", {"command": arg})}[kind]
    return _omp_call(name, args, call_id)


def _omp_call(name, args, call_id):
    return request("tool_call", SESSION, {"event": {"type": "tool_call", "toolName": name,
                                                    "toolCallId": call_id, "input": args}},
                   cwd=CWD, ctx={"idle": False, "hasUI": False, "sessionFile": None})


def gemini_prompt(text):
    return {"session_id": SESSION, "cwd": CWD, "hook_event_name": "BeforeAgent",
            "timestamp": "2026-12-01T14:00:00.000Z", "prompt": text}


def gemini_tool(kind, arg, call_id):
    name, args = {"write": ("write_file", {"file_path": _abs(arg), "content": "x = 1\n"}),
                  "shell": ("run_shell_command", {"command": arg}),
                  "agent": ("invoke_agent", {"agent_name": "generalist", "prompt": "help"})}[kind]
    return {"session_id": SESSION, "cwd": CWD, "hook_event_name": "BeforeTool",
            "timestamp": "2026-12-01T14:00:01.000Z", "tool_name": name, "tool_input": args}


# Copilot's camelCase stdin names no event: the command line does, and run_hook
# puts it in the payload as hook_event_name (what these drivers send directly).
def copilot_prompt(text):
    return {"hook_event_name": "userPromptSubmitted", "sessionId": SESSION,
            "timestamp": 1796134000000, "cwd": CWD, "prompt": text}


def copilot_tool(kind, arg, call_id):
    name, args = {"write": ("create", {"path": _abs(arg), "file_text": "x = 1\n"}),
                  "shell": ("bash", {"command": arg, "description": "d"}),
                  "agent": ("task", {"description": "d", "prompt": "p", "name": "n",
                                     "agent_type": "general-purpose"})}[kind]
    return {"hook_event_name": "preToolUse", "sessionId": SESSION, "timestamp": 1796134000100,
            "cwd": CWD, "toolName": name, "toolArgs": args}


def qwen_prompt(text):
    return {"session_id": SESSION, "cwd": CWD, "hook_event_name": "UserPromptSubmit",
            "prompt_id": SESSION + "########0", "prompt": text, "submitted_prompt": text}


def qwen_tool(kind, arg, call_id):
    name, args = {"write": ("write_file", {"file_path": _abs(arg), "content": "x = 1\n"}),
                  "shell": ("run_shell_command", {"command": arg}),
                  "agent": ("agent", {"description": "d", "prompt": "p",
                                      "subagent_type": "general-purpose"})}[kind]
    return {"session_id": SESSION, "cwd": CWD, "hook_event_name": "PreToolUse",
            "tool_name": name, "tool_input": args, "tool_use_id": "toolu_" + call_id,
            "tool_call_id": call_id}


DRIVERS = {
    "codex": (codex_prompt, codex_tool), "claude": (claude_prompt, claude_tool),
    "hermes": (hermes_prompt, hermes_tool), "opencode": (opencode_prompt, opencode_tool),
    "pi": (pi_prompt, pi_tool), "omp": (omp_prompt, omp_tool),
    "gemini": (gemini_prompt, gemini_tool), "copilot": (copilot_prompt, copilot_tool),
    "qwen": (qwen_prompt, qwen_tool),
}


def decision_code(host, directive, kind, arg, store):
    """Arm `directive` on a fresh session of `host`, send one action, read the code."""
    prompt, tool = DRIVERS[host]
    answer(host, prompt(directive), store)
    got = answer(host, tool(kind, arg, "call_same_1"), store)
    text = denial(host, got)
    return reason_code(text) if text else None


CASES = [
    # (directive, action kind, argument, expected code; None = allowed)
    ("$stop-that-shit review -- audit", "write", "src/a.py", "MODE_FORBIDS_MUTATION"),
    ("$stop-that-shit change files=src/a.py", "write", "other/b.py", "PATH_OUTSIDE_CONTRACT"),
    ("$stop-that-shit change deps=ask", "shell", "npm install left-pad", "DEPENDENCY_NOT_AUTHORIZED"),
    ("$stop-that-shit change hash=deny", "shell", "sha256sum README.md", "HASH_NOT_AUTHORIZED"),
    ("$stop-that-shit change agents=0", "agent", "-", "AGENT_BUDGET_EXHAUSTED"),
    ("$stop-that-shit change files=src/a.py", "write", "src/a.py", None),
]


@pytest.mark.parametrize("directive,kind,arg,expected", CASES,
                         ids=[c[3] or "allowed" for c in CASES])
def test_same_action_same_code_on_every_host(tmp_path, monkeypatch, directive, kind, arg, expected):
    import sts
    codes = {}
    for host in HOSTS:
        home = tmp_path / host  # a fresh data dir: every host starts from the same default
        monkeypatch.setenv("STS_HOME", str(home))
        codes[host] = decision_code(host, directive, kind, arg, sts.Store(str(home)))
    assert codes == {host: expected for host in HOSTS}


# --- hash and dependency intent in what each host writes -----------------------
#
# The same content, written whole or as an edit (and as a patch where the host
# has a patch tool), must be judged the same on every host: hashing in a file of
# any language, aliases, version changes of a kept dependency, every manifest.

def _patch_text(path, old, new, v4a=False):
    body = ["-" + line for line in old.splitlines()] + ["+" + line for line in new.splitlines()]
    return "\n".join(["*** Begin Patch", "*** Update File: " + _abs(path), "@@"] + body
                     + ["*** End Patch", ""])


def _hermes_call(name, args, call_id):
    return {"hook_event_name": "pre_tool_call", "tool_name": name, "tool_input": args,
            "session_id": SESSION, "cwd": CWD, "extra": {"tool_call_id": call_id}}


def _shim_call(host, name, args, call_id):
    if host == "opencode":
        return request("tool.execute.before", SESSION, {
            "input": {"tool": name, "sessionID": SESSION, "callID": call_id},
            "output": {"args": args}}, cwd=CWD, ctx={"parentSessionId": None})
    ctx = {"idle": False, "hasUI": False}
    if host == "omp":
        ctx["sessionFile"] = None
    return request("tool_call", SESSION, {"event": {"type": "tool_call", "toolName": name,
                                                    "toolCallId": call_id, "input": args}},
                   cwd=CWD, ctx=ctx)


def _command_call(host, name, args, call_id):
    if host == "copilot":
        return {"hook_event_name": "preToolUse", "sessionId": SESSION, "timestamp": 1796134000100,
                "cwd": CWD, "toolName": name, "toolArgs": args}
    event = "BeforeTool" if host == "gemini" else "PreToolUse"
    return {"session_id": SESSION, "cwd": CWD, "hook_event_name": event, "tool_name": name,
            "tool_input": args, "tool_use_id": call_id, "tool_call_id": call_id,
            "turn_id": "turn-1", "timestamp": "2026-12-01T14:00:01.000Z"}


def host_change(host, kind, path, old, new, call_id="call_intent_1"):
    """One host's own tool call that turns `old` into `new` in `path`.

    kind "write": the whole new content; "edit": a string replacement; "patch":
    the host's patch tool (None when the host has none).
    """
    full = _abs(path)
    if kind == "write":
        added = "\n".join("+" + line for line in new.splitlines())
        table = {"codex": ("apply_patch", {"command": "*** Begin Patch\n*** Add File: %s\n%s\n"
                                                      "*** End Patch\n" % (full, added)}),
                 "claude": ("Write", {"file_path": full, "content": new}),
                 "hermes": ("write_file", {"path": full, "content": new}),
                 "opencode": ("write", {"filePath": full, "content": new}),
                 "pi": ("write", {"path": full, "content": new}),
                 "omp": ("write", {"path": full, "content": new}),
                 "gemini": ("write_file", {"file_path": full, "content": new}),
                 "copilot": ("create", {"path": full, "file_text": new}),
                 "qwen": ("write_file", {"file_path": full, "content": new})}
    elif kind == "edit":
        table = {"codex": ("apply_patch", {"command": _patch_text(path, old, new)}),
                 "claude": ("Edit", {"file_path": full, "old_string": old, "new_string": new}),
                 "hermes": ("patch", {"mode": "replace", "path": full, "old_string": old,
                                      "new_string": new}),
                 "opencode": ("edit", {"filePath": full, "oldString": old, "newString": new}),
                 "pi": ("edit", {"path": full, "edits": [{"oldText": old, "newText": new}]}),
                 "omp": ("edit", {"path": full, "old_string": old, "new_string": new}),
                 "gemini": ("replace", {"file_path": full, "old_string": old, "new_string": new}),
                 "copilot": ("edit", {"path": full, "old_str": old, "new_str": new}),
                 "qwen": ("edit", {"file_path": full, "old_string": old, "new_string": new})}
    else:
        table = {"codex": ("apply_patch", {"command": _patch_text(path, old, new)}),
                 "claude": ("MultiEdit", {"file_path": full, "edits": [
                     {"old_string": old, "new_string": new}]}),
                 "hermes": ("patch", {"mode": "patch", "patch": _patch_text(path, old, new)}),
                 "opencode": ("apply_patch", {"patchText": _patch_text(path, old, new)}),
                 "omp": ("edit", {"input": _patch_text(path, old, new)}),
                 "copilot": ("apply_patch", {"input": _patch_text(path, old, new)})}
    if host not in table:
        return None
    name, args = table[host]
    if host == "hermes":
        return _hermes_call(name, args, call_id)
    if host in ("opencode", "pi", "omp"):
        return _shim_call(host, name, args, call_id)
    return _command_call(host, name, args, call_id)


def intent_codes(tmp_path, monkeypatch, directive, kind, path, old, new):
    """The decision code of one change on every host that has a tool for it."""
    import sts
    codes = {}
    for host in HOSTS:
        payload = host_change(host, kind, path, old, new)
        if payload is None:
            continue
        home = tmp_path / (host + kind)
        monkeypatch.setenv("STS_HOME", str(home))
        store = sts.Store(str(home))
        answer(host, DRIVERS[host][0](directive), store)
        text = denial(host, answer(host, payload, store))
        codes[host] = reason_code(text) if text else None
    return codes


HASH = "HASH_NOT_AUTHORIZED"
DEP = "DEPENDENCY_NOT_AUTHORIZED"
KEPT = "kept"          # allowed as an edit (the call was there already); a write adds it
DECLARED = "declared"  # allowed as an edit; a whole new manifest declares what it holds

INTENT_CASES = [
    # (directive, path, old text, new text, expected code)
    # Hashing in a file of another language than its API's
    ("hash=deny", "src/App.java", "int x = 1;", "h = hashlib.md5(x)", HASH),
    ("hash=deny", "src/lib.rs", "let x = 1;", 'let md = MessageDigest.getInstance("SHA-256");', HASH),
    ("hash=deny", "src/main.go", "x := 1", "h := sha256.Sum256(b)", HASH),
    # ... through an alias or binding
    ("hash=deny", "src/a.py", "x = 1", "import hashlib as h\nx = h.new('md5', b)", HASH),
    ("hash=deny", "src/a.py", "x = 1", "m = __import__('hash' + 'lib')\nx = m.md5(b)", HASH),
    ("hash=deny", "src/a.ts", "let x = 1;", "import { createHash as ch } from 'crypto';", HASH),
    ("hash=deny", "src/a.js", "let x = 1;", "const { hash } = require('node:crypto');", HASH),
    ("hash=deny", "src/a.cs", "int x = 1;", "using S = System.Security.Cryptography.SHA256;", HASH),
    # ... or a hashing program started from code
    ("hash=deny", "tools/sum.py", "x = 1", "subprocess.run(['sha256sum', path])", HASH),
    # Not new hashing: an existing call kept, prose, comments, docstrings
    ("hash=deny", "src/a.js", "const h = createHash('sha256').update(a);",
     "const h = createHash('sha256').update(b);", KEPT),
    ("hash=deny", "docs/notes.md", "x", "Use hashlib.sha256(data) for this.", None),
    ("hash=deny", "src/a.py", "x = 1", "# the sha256 (hex) of each file is checked in CI\nx = 2",
     None),
    ("hash=deny", "src/a.py", "x = 1", '"""Return the sha256 (hex) of data."""\nx = 2', None),
    # A version change of a kept dependency brings in new code
    ("deps=ask", "requirements.txt", "requests==2.31.0", "requests==2.32.0", DEP),
    ("deps=ask", "package.json", '    "lodash": "^4.17.20"', '    "lodash": "^4.17.21"', DEP),
    ("deps=ask", "go.mod", "require golang.org/x/sys v0.1.0", "require golang.org/x/sys v0.2.0",
     DEP),
    # Every ecosystem's manifest
    ("deps=ask", "requirements.txt", "requests==2.31.0", "requests==2.31.0\nflask>=2.0", DEP),
    ("deps=ask", "setup.py", 'install_requires=["requests"],',
     'install_requires=["requests", "httpx"],', DEP),
    ("deps=ask", "pom.xml", "<dependencies>",
     "<dependencies>\n<dependency><groupId>g</groupId><artifactId>a</artifactId>"
     "<version>1</version></dependency>", DEP),
    ("deps=ask", "app/build.gradle.kts", "dependencies {",
     'dependencies {\n    implementation("com.squareup.okhttp3:okhttp:4.12.0")', DEP),
    ("deps=ask", "pubspec.yaml", "dependencies:\n  flutter:\n    sdk: flutter",
     "dependencies:\n  flutter:\n    sdk: flutter\n  http: ^1.1.0", DEP),
    ("deps=deny", "mix.exs", '{:phoenix, "~> 1.7"}', '{:phoenix, "~> 1.7"},\n{:jason, "~> 1.4"}',
     DEP),
    # Not a dependency change: metadata, comments
    ("deps=ask", "package.json", '    "version": "1.0.0"', '    "version": "1.0.1"', None),
    ("deps=ask", "requirements.txt", "requests==2.31.0", "requests==2.31.0  # pinned", DECLARED),
    ("deps=ask", "pom.xml", "<description>a</description>", "<description>b</description>", None),
]


@pytest.mark.parametrize("kind", ["write", "edit", "patch"])
@pytest.mark.parametrize("directive,path,old,new,expected", INTENT_CASES,
                         ids=["%s-%s-%d" % (c[4] or "allowed", c[1], k)
                              for k, c in enumerate(INTENT_CASES)])
def test_hash_and_dependency_intent_on_every_host(tmp_path, monkeypatch, kind, directive, path,
                                                  old, new, expected):
    if expected in (KEPT, DECLARED):
        expected = (HASH if expected == KEPT else DEP) if kind == "write" else None
    codes = intent_codes(tmp_path, monkeypatch, "$stop-that-shit change " + directive, kind,
                         path, old, new)
    assert codes and codes == {host: expected for host in codes}


@pytest.mark.parametrize("host,tool", [("claude", "PowerShell"), ("pi", "powershell"),
                                       ("omp", "powershell")])
def test_powershell_redirection_keeps_hash_intent(tmp_path, monkeypatch, host, tool):
    """`>` in PowerShell once stopped the reading before the program was known."""
    import sts
    for command, expected in (("sha256sum a.js > a.sha", HASH),
                              ("Get-FileHash a.zip > h.txt", HASH),
                              ("npm install left-pad > log.txt", DEP),
                              ("git status > s.txt", None)):
        home = tmp_path / (host + str(abs(hash(command))))
        monkeypatch.setenv("STS_HOME", str(home))
        store = sts.Store(str(home))
        answer(host, DRIVERS[host][0]("$stop-that-shit open hash=deny deps=deny"), store)
        args = {"command": command}
        if host in ("pi", "omp"):
            payload = _shim_call(host, tool, args, "call_ps_1")
        else:
            payload = _command_call(host, tool, args, "call_ps_1")
        text = denial(host, answer(host, payload, store))
        assert (reason_code(text) if text else None) == expected, (host, command)


# Hosts whose prompt hook cannot refuse a prompt: the turn of a rejected
# directive runs anyway there, so every tool waits for the corrected one.
PROMPT_NOT_REFUSED = ("hermes", "opencode", "copilot")


def test_a_rejected_directive_pauses_tools_wherever_its_turn_ran(tmp_path, monkeypatch):
    import sts
    got = {}
    for host in HOSTS:
        home = tmp_path / host
        monkeypatch.setenv("STS_HOME", str(home))
        store = sts.Store(str(home))
        prompt, tool = DRIVERS[host]
        answer(host, prompt("$stop-that-shit change"), store)
        answer(host, prompt("$stop-that-shit change fix the bug"), store)
        text = denial(host, answer(host, tool("shell", "git status", "call_paused"), store))
        paused = bool(text) and text.startswith("Stop That Shit: directive rejected")
        # Everywhere else the previous contract judges the call, and only a
        # delegation is stopped while the directive is invalid.
        agent = reason_code(denial(host, answer(host, tool("agent", "-", "call_agent"),
                                                   store)))
        answer(host, prompt("$stop-that-shit change"), store)
        again = denial(host, answer(host, tool("shell", "git status", "call_again"), store))
        got[host] = (paused, agent, again)
    assert got == {host: (True, None, None) if host in PROMPT_NOT_REFUSED
                   else (False, "INVALID_DIRECTIVE", None) for host in HOSTS}
