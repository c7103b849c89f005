"""One logical action, nine hosts, one answer (issue 4).

Each case arms the same contract on every host, sends the same action in
that host's own tool shape, and reads the decision code from the `Reason:`
line of the host's denial.  The codes must agree across hosts.
"""
import pytest

from hooks_shim import answer, block_reason, reason_code, request

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


def deny_text(host, got):
    if host in ("codex", "claude", "qwen"):
        from hooks import deny_reason
        return deny_reason(got)
    if host == "gemini":
        return got.get("reason") if got and got.get("decision") == "deny" else None
    if host == "copilot":
        return got.get("permissionDecisionReason") \
            if got and got.get("permissionDecision") == "deny" else None
    return block_reason(host, got)


def decision_code(host, directive, kind, arg, store):
    """Arm `directive` on a fresh session of `host`, send one action, read the code."""
    prompt, tool = DRIVERS[host]
    answer(host, prompt(directive), store)
    got = answer(host, tool(kind, arg, "call_same_1"), store)
    text = deny_text(host, got)
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
