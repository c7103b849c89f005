"""The e2e scenarios: what the fake model does, and what must be observed.

A scenario is host-neutral: a directive, a task, an action ("write a file",
"run this shell command", "launch a subagent") and expectations about the
file system and the request log.  `HOST_TOOLS` turns an action into each
host's own tool call; `script()` builds the fake model's script for a run.
"""
import json
import os
from dataclasses import dataclass, field
from typing import List, Optional

SUBAGENT_MARK = "SUBAGENT-E2E"
MODES = ("answer", "review", "change", "monitor", "open")
LS_MARK = "e2e-seed-7f3c.txt"


def _write_call(host: str, path: str, content: str) -> dict:
    if host == "vibe":
        return {"tool": "write_file", "args": {"path": path, "content": content + "\n"}}
    if host == "cline":
        return {"tool": "editor", "args": {"path": path, "new_text": content + "\n"}}
    if host == "codex":
        return {"tool": "apply_patch",
                "input": "*** Begin Patch\n*** Add File: %s\n+%s\n*** End Patch\n" % (path, content)}
    if host == "droid":
        return {"tool": "Create", "args": {"file_path": path, "content": content + "\n"}}
    if host == "claude":
        return {"tool": "Write", "args": {"file_path": path, "content": content + "\n"}}
    if host in ("opencode", "kilo"):
        return {"tool": "write", "args": {"filePath": path, "content": content + "\n"}}
    if host == "hermes":
        return {"tool": "write_file", "args": {"path": path, "content": content + "\n"}}
    if host in ("gemini", "qwen"):
        return {"tool": "write_file", "args": {"file_path": path, "content": content + "\n"}}
    if host == "copilot":
        return {"tool": "create", "args": {"path": path, "file_text": content + "\n"}}
    return {"tool": "write", "args": {"path": path, "content": content + "\n"}}  # pi, omp


def _shell_call(host: str, command: str) -> dict:
    if host == "cline":
        return {"tool": "run_commands", "args": {"commands": [command]}}
    if host == "vibe":
        return {"tool": "bash", "args": {"command": command}}
    if host == "codex":
        return {"tool": "exec_command", "args": {"cmd": command}}
    if host == "droid":
        return {"tool": "Execute", "args": {"command": command, "summary": "e2e step"}}
    if host == "claude":
        return {"tool": "Bash", "args": {"command": command, "description": "e2e step"}}
    if host in ("opencode", "kilo"):
        return {"tool": "bash", "args": {"command": command, "description": "e2e step"}}
    if host == "hermes":
        return {"tool": "terminal", "args": {"command": command}}
    if host in ("gemini", "qwen"):
        return {"tool": "run_shell_command", "args": {"command": command}}
    if host == "copilot":
        return {"tool": "bash", "args": {"command": command, "description": "e2e step"}}
    return {"tool": "bash", "args": {"command": command}}  # pi, omp


def _agent_calls(host: str, work: str) -> Optional[List[dict]]:
    """Parent launches one subagent; the subagent writes sub.txt.  None: no such tool."""
    target = os.path.join(work, "sub.txt")
    goal = "%s: write %s" % (SUBAGENT_MARK, target)
    child_write = dict(_write_call(host, target, "by-subagent"), **{"if": SUBAGENT_MARK})
    if host == "vibe":  # agents.spawn is deferred: the code tool calls it
        code = ("const r = await tools.agents.spawn({name: 'helper', message: %s}); "
                "console.log(JSON.stringify(r)); "
                "console.log(JSON.stringify(await tools.self.wait({timeout_ms: 60000})));"
                % json.dumps(goal))
        return [{"tool": "run_typescript", "unless": SUBAGENT_MARK, "args": {"code": code}},
                child_write]
    if host == "cline":  # spawn_agent returns when its subagent has ended
        return [{"tool": "spawn_agent", "unless": SUBAGENT_MARK,
                 "args": {"systemPrompt": "You write files.", "task": goal}}, child_write]
    if host == "droid":  # offline its Task fails, but the hook sees the call
        return [{"tool": "Task", "unless": SUBAGENT_MARK,
                 "args": {"subagent_type": "worker", "description": "e2e helper",
                          "prompt": goal}}, child_write]
    if host == "claude":
        return [{"tool": "Agent", "unless": SUBAGENT_MARK,
                 "args": {"description": "e2e helper", "prompt": goal,
                          "subagent_type": "general-purpose"}}, child_write]
    if host in ("opencode", "kilo"):
        return [{"tool": "task", "unless": SUBAGENT_MARK,
                 "args": {"description": "e2e helper", "prompt": goal,
                          "subagent_type": "general"}}, child_write]
    if host == "omp":  # an OMP subagent must end with a `yield` call
        return [{"tool": "task", "unless": SUBAGENT_MARK,
                 "args": {"context": "e2e", "tasks": [{"name": "E2E", "task": goal}]}},
                child_write,
                {"tool": "yield", "if": SUBAGENT_MARK, "step": 1, "args": {"data": {"done": True}}}]
    if host == "hermes":
        return [{"tool": "delegate_task", "unless": SUBAGENT_MARK,
                 "args": {"goal": goal, "context": "e2e"}}, child_write]
    if host == "codex":  # spawn_agent is deferred: the model loads it with tool_search first
        return [{"tool": "tool_search", "unless": SUBAGENT_MARK,
                 "args": {"query": "spawn sub-agent", "limit": 8}},
                {"tool": "spawn_agent", "unless": SUBAGENT_MARK, "step": 1,
                 "args": {"message": goal}, "key": True},
                # `codex exec` ends with the parent's turn: wait for the child
                {"tool": "wait_agent", "unless": SUBAGENT_MARK, "step": 2,
                 "args": {"targets": ["{{last.agent_id}}"], "timeout_ms": 60000}},
                child_write]
    if host == "gemini":  # invoke_agent returns when the subagent ends
        return [{"tool": "invoke_agent", "unless": SUBAGENT_MARK,
                 "args": {"agent_name": "generalist", "prompt": goal}}, child_write]
    if host == "copilot":
        return [{"tool": "task", "unless": SUBAGENT_MARK,
                 "args": {"description": "e2e helper", "prompt": goal, "name": "helper",
                          "agent_type": "general-purpose"}}, child_write]
    if host == "qwen":  # a foreground agent: `qwen -p` may end before a background one
        return [{"tool": "agent", "unless": SUBAGENT_MARK,
                 "args": {"description": "e2e helper", "prompt": goal,
                          "subagent_type": "general-purpose", "run_in_background": False}},
                child_write]
    return None  # pi: no built-in subagent tool


@dataclass
class Scenario:
    name: str
    title: str
    directive: str = ""              # the words after $stop-that-shit ("" = no directive)
    task: str = "do the task"
    wiring: str = "sts"              # "sts" (real guard; install or direct) or "probe"
    absent: List[str] = field(default_factory=list)    # files (in work/) that must not exist
    present: List[str] = field(default_factory=list)   # files that must exist
    deny_text: Optional[str] = None  # must reach the model in a tool result
    allow: bool = False              # no deny text may reach the model
    results_contain: List[str] = field(default_factory=list)
    no_subagent: bool = False        # no request may carry the subagent's prompt
    subagent_ran: bool = False
    git: bool = False                # make work/ a git repository
    audit: Optional[str] = None      # "observed_blocked" | "observed_ran" (sts wiring)
    hosts: Optional[List[str]] = None  # None = every host that has the tool
    why_not: str = "the host has no built-in subagent tool"  # shown for the other hosts
    # Default contracts: `sts.py default USER` before the host starts, and a
    # `.stop-that-shit` holding REPO at the root of work/ (then a git repository).
    user_default: Optional[str] = None
    repo_default: Optional[str] = None
    default_mode: Optional[str] = None   # the mode the defaults give (no directive)
    model_sees: List[str] = field(default_factory=list)  # text that must reach the model

    @property
    def mode(self) -> Optional[str]:
        """The contract mode the directive asks for (None: no directive), or
        else the one the defaults give."""
        words = self.directive.split()
        return words[0] if words and words[0] in MODES else self.default_mode

    def prompt(self) -> str:
        if self.wiring == "probe" or not self.directive:
            return self.task
        return "$stop-that-shit %s -- %s" % (self.directive, self.task)

    def steps(self, host: str, work: str) -> Optional[List[dict]]:
        return STEPS[self.name](host, work)


STEPS = {}


def _steps(name):
    def register(fn):
        STEPS[name] = fn
        return fn
    return register


@_steps("probe-deny")
def _(host, work):
    return [_write_call(host, os.path.join(work, "e2e-deny.txt"), "denied-by-probe")]


@_steps("probe-allow")
def _(host, work):
    return [_write_call(host, os.path.join(work, "e2e-allow.txt"), "allowed-by-probe")]


@_steps("review-write")
def _(host, work):
    return [_write_call(host, os.path.join(work, "a.txt"), "written")]


@_steps("change-write")
def _(host, work):
    return [_write_call(host, os.path.join(work, "a.txt"), "written")]


@_steps("files-boundary")
def _(host, work):
    return [_write_call(host, os.path.join(work, "b.txt"), "outside")]


@_steps("files-inside")
def _(host, work):
    return [_write_call(host, os.path.join(work, "a.txt"), "inside")]


@_steps("hash-shell")
def _(host, work):
    return [_shell_call(host, "sha256sum %s > %s" % (LS_MARK, os.path.join(work, "sum.txt")))]


@_steps("hash-allowed")
def _(host, work):
    return [_shell_call(host, "sha256sum %s > %s" % (LS_MARK, os.path.join(work, "sum.txt")))]


@_steps("agents-zero")
def _(host, work):
    return _agent_calls(host, work)


# Hosts whose subagent tool the hook sees but whose subagent cannot run offline.
NO_OFFLINE_SUBAGENT = {
    "droid": "Droid's Task subagent needs its logged-in daemon, so none runs offline",
}


@_steps("agents-control")
def _(host, work):
    if host in NO_OFFLINE_SUBAGENT:
        return None
    calls = _agent_calls(host, work)
    if calls and host == "hermes":
        # Hermes runs a top-level delegation in the background and `chat -q` does
        # not wait for it: the parent polls (at most 15 s) until the child wrote.
        wait = "for i in $(seq 1 150); do test -e %s && break; sleep 0.1; done" % (
            os.path.join(work, "sub.txt"))
        calls.append(dict(_shell_call(host, wait), unless=SUBAGENT_MARK, step=1))
    return calls


@_steps("review-read")
def _(host, work):
    return [dict(_shell_call(host, "ls"), step=0),
            dict(_shell_call(host, "git status"), step=1)]


# --- what the host itself does with a call (classes of issue 19) -------------

# The shell tools that take their own working folder, and that argument.
# Gemini CLI (`dir_path`) and Qwen Code (`directory`) refuse a folder outside
# their workspace before the hook runs, so the guard's data folder cannot be
# reached that way there; the unit tests cover their adapters.
_RUN_FOLDER_ARGS = {"codex": ("exec_command", "cmd", "workdir"),
                    "opencode": ("bash", "command", "workdir"),
                    "kilo": ("bash", "command", "workdir"),
                    "hermes": ("terminal", "command", "workdir"),
                    "omp": ("bash", "command", "cwd")}
GUARD_PROBE = "e2e-in-guard-folder.txt"


@_steps("workdir-guard")
def _(host, work):
    """`echo x > FILE` with the shell tool's own folder argument pointing at the
    guard's data folder (the run's STS_HOME): the event's cwd is elsewhere."""
    if host == "vibe":   # process.start is deferred: the code tool calls it
        guard = os.path.join(os.path.dirname(work), "sts-home")
        code = ("const r = await tools.process.start({command: %s, cwd: %s}); "
                "console.log(JSON.stringify(r));"
                % (json.dumps("echo x > %s" % GUARD_PROBE), json.dumps(guard)))
        return [{"tool": "run_typescript", "args": {"code": code}}]
    if host not in _RUN_FOLDER_ARGS:
        return None
    tool, key, folder = _RUN_FOLDER_ARGS[host]
    args = {key: "echo x > %s" % GUARD_PROBE,
            folder: os.path.join(os.path.dirname(work), "sts-home")}
    if host in ("opencode", "kilo", "claude"):
        args["description"] = "e2e step"
    return [{"tool": tool, "args": args}]


@_steps("opencode-task-root")
def _(host, work):
    """OpenCode's task tool resumes whatever session task_id names.  The model
    reads its own root session id from OpenCode's log, then resumes the root
    with "$stop-that-shit off", then writes in review."""
    if host != "opencode":
        return None
    log = os.path.join(os.path.dirname(work), "xdg", "data", "opencode", "log", "opencode.log")
    find = ("printf '{\"sid\":\"%%s\"}' \"$(grep -o 'ses_[A-Za-z0-9]*' %s | head -1)\""
            % log)
    return [dict(_shell_call(host, find), step=0),
            {"tool": "task", "step": 1, "key": True,
             "args": {"description": "resume", "prompt": "$stop-that-shit off",
                      "subagent_type": "general", "task_id": "{{last.sid}}"}},
            dict(_write_call(host, os.path.join(work, "a.txt"), "written"), step=2)]


# Code given to a host's code-running tool: hashing, written to a file.
_HASH_CODE = {
    "hermes": ("execute_code", {"code": "import hashlib, pathlib\npathlib.Path(%r).write_text("
                                        "hashlib.sha256(b'x').hexdigest())"}),
    "omp": ("eval", {"language": "js", "code": "require('fs').writeFileSync(%r, require('crypto')"
                                              ".createHash('sha256').update('x').digest('hex'))"}),
    # Vibe's code tool reaches the file system only through the other tools,
    # each of which passes the hook on its own.
    "vibe": ("run_typescript", {"code": "const r = await tools.file_system.bash({command: "
                                        "'sha256sum %s > ' + %%r}); console.log(JSON.stringify(r));"
                                        % LS_MARK}),
}


@_steps("code-hash")
def _(host, work):
    """Hashing through the host's code tool is the same hashing as through the shell."""
    if host not in _HASH_CODE:
        return None
    tool, args = _HASH_CODE[host]
    args = dict(args, code=args["code"] % os.path.join(work, "hash.txt"))
    return [{"tool": tool, "args": args}]


@_steps("directive-rejected")
def _(host, work):
    return [_write_call(host, os.path.join(work, "a.txt"), "written")]


@_steps("default-review-write")
def _(host, work):
    return [_write_call(host, os.path.join(work, "a.txt"), "written")]


@_steps("repo-default-outside")
def _(host, work):
    return [_write_call(host, os.path.join(work, "b.txt"), "outside")]


@_steps("repo-default-inside")
def _(host, work):
    return [_write_call(host, os.path.join(work, "src", "a.txt"), "inside")]


# Hosts that show a hook's context to the model in no request of a headless
# run, with why; the audit proves the armed contract there instead.
CONTEXT_UNSHOWN = {
    "droid": "`droid exec` drops the additionalContext of every tool hook",
    "vibe": "Vibe has no prompt hook, and a pre_tool answer carries no context for the model",
}

# The hosts whose prompt hook cannot refuse a prompt: the turn of a rejected
# directive runs there.  Everywhere else the prompt itself is refused.
PROMPT_NOT_REFUSED = ["copilot", "droid", "hermes", "kilo", "opencode", "vibe"]


SCENARIOS = [
    Scenario("probe-deny", "probe hook denies a write", wiring="probe",
             task="Create the file e2e-deny.txt.", absent=["e2e-deny.txt"],
             deny_text="E2E_PROBE_DENY"),
    Scenario("probe-allow", "probe hook allows a write", wiring="probe",
             task="Create the file e2e-allow.txt.", present=["e2e-allow.txt"], allow=True),
    Scenario("review-write", "1. review, then a write: blocked", directive="review",
             task="look at the code and write a.txt", absent=["a.txt"],
             deny_text="MODE_FORBIDS_MUTATION", audit="observed_blocked"),
    Scenario("change-write", "2. change, then the same write: it runs", directive="change",
             task="write a.txt", present=["a.txt"], allow=True, audit="observed_ran"),
    Scenario("files-boundary", "3. change files=a.txt, then a write to b.txt: blocked",
             directive="change files=a.txt", task="write b.txt", absent=["b.txt"],
             deny_text="PATH_OUTSIDE_CONTRACT", audit="observed_blocked"),
    Scenario("files-inside", "3b. change files=a.txt, then a write to a.txt: it runs "
             "(the boundary is not a blanket deny)", directive="change files=a.txt",
             task="write a.txt", present=["a.txt"], allow=True, audit="observed_ran"),
    Scenario("hash-shell", "4. change, then sha256sum into a file: blocked",
             directive="change", task="checksum the seed file", absent=["sum.txt"],
             deny_text="HASH_NOT_AUTHORIZED", audit="observed_blocked"),
    Scenario("hash-allowed", "4b. change hash=allow, then the same command: it runs",
             directive="change hash=allow", task="checksum the seed file", present=["sum.txt"],
             allow=True, audit="observed_ran"),
    Scenario("agents-zero", "5. change agents=0, then a subagent launch: none runs",
             directive="change agents=0", task="delegate the work to a helper",
             absent=["sub.txt"], deny_text="AGENT_BUDGET_EXHAUSTED", no_subagent=True,
             audit="observed_blocked"),
    Scenario("agents-control", "5b. change, then the same launch: the subagent runs "
             "(proves 5 can see a subagent)", directive="change",
             task="delegate the work to a helper", present=["sub.txt"], subagent_ran=True,
             allow=True, audit="observed_ran"),
    Scenario("review-read", "6. review, then ls and git status: they run", directive="review",
             task="show the working tree", allow=True, git=True,
             results_contain=[LS_MARK, "branch"], audit="observed_ran"),
    Scenario("workdir-guard", "7. change, then a shell write whose own folder argument is the "
             "guard's data folder: blocked", directive="change", task="write the probe",
             absent=[os.path.join("..", "sts-home", GUARD_PROBE)],
             deny_text="GUARD_SELF_PROTECTION", audit="observed_blocked",
             hosts=sorted(_RUN_FOLDER_ARGS) + ["vibe"],
             why_not="no working-folder argument, or the host refuses one outside its "
                     "workspace itself"),
    Scenario("opencode-task-root", "8. review, then task resumes the root session with "
             "\"$stop-that-shit off\", then a write: the resume and the write are blocked",
             directive="review", task="look, then hand off", absent=["a.txt"],
             deny_text="GUARD_SELF_PROTECTION", hosts=["opencode"],
             why_not="only OpenCode's task resumes any session by id"),
    Scenario("code-hash", "9. change, then hashing through the host's code tool: blocked",
             directive="change", task="checksum it", absent=["hash.txt"],
             deny_text="HASH_NOT_AUTHORIZED", audit="observed_blocked",
             hosts=sorted(_HASH_CODE), why_not="no code tool in this host's e2e set"),
    Scenario("directive-rejected", "10. a directive with a typo, then a write: the turn "
             "runs, and every tool waits for the corrected directive", directive="chnage",
             task="write a.txt", absent=["a.txt"],
             deny_text="directive rejected (INVALID_DIRECTIVE_TOKEN)", audit="observed_blocked",
             hosts=PROMPT_NOT_REFUSED,
             why_not="the host refuses the prompt itself, so that turn never runs"),
]
SCENARIOS += [
    Scenario("default-review-write", "11. no directive under a user default of review, then "
             "a write: blocked", task="please fix the parser and write a.txt",
             user_default="review", absent=["a.txt"], deny_text="MODE_FORBIDS_MUTATION",
             audit="observed_blocked", model_sees=["contract from the user default"]),
    Scenario("repo-default-outside", "12. user default change, repository default "
             "files=src/**, no directive, then a write to b.txt: blocked", task="write b.txt",
             user_default="change", repo_default="files=src/**", absent=["b.txt"],
             deny_text="PATH_OUTSIDE_CONTRACT", audit="observed_blocked",
             model_sees=["files=src/**", "over the user default"]),
    Scenario("repo-default-inside", "12b. the same defaults, then a write to src/a.txt: it "
             "runs", task="write src/a.txt", user_default="change",
             repo_default="files=src/**", default_mode="change", present=["src/a.txt"],
             allow=True, audit="observed_ran", model_sees=["files=src/**"]),
]
BY_NAME = {s.name: s for s in SCENARIOS}


def script(scenario: Scenario, host: str, work: str) -> Optional[dict]:
    steps = scenario.steps(host, work)
    if steps is None:
        return None
    return {"steps": steps, "final_text": "E2E-DONE"}


def why_not(scenario: Scenario, host: str) -> str:
    """Why a scenario does not apply to a host."""
    if scenario.name == "agents-control" and host in NO_OFFLINE_SUBAGENT:
        return NO_OFFLINE_SUBAGENT[host]
    if scenario.name.startswith("agents-") and host in NO_SUBAGENT_TOOL:
        return NO_SUBAGENT_TOOL[host]
    return scenario.why_not


# Hosts with a subagent tool the e2e model is not offered, with why.
NO_SUBAGENT_TOOL: dict = {}

# (host, scenario) -> (the text the host shows the model for the deny instead
# of its reason, why).  The audit event must still hold the reason code.
REASON_HIDDEN = {
    ("vibe", "agents-zero"): (
        "Tool execution was skipped by Runtime policy",
        "Vibe reports a call denied inside run_typescript as tool_skipped, without the "
        "hook's reason; the audit holds AGENT_BUDGET_EXHAUSTED"),
    ("vibe", "code-hash"): (
        "Tool execution was skipped by Runtime policy",
        "Vibe reports a call denied inside run_typescript as tool_skipped, without the "
        "hook's reason; the audit holds HASH_NOT_AUTHORIZED"),
    ("vibe", "workdir-guard"): (
        "Tool execution was skipped by Runtime policy",
        "Vibe reports a call denied inside run_typescript as tool_skipped, without the "
        "hook's reason; the audit holds GUARD_SELF_PROTECTION"),
}


def applicable(scenario: Scenario, host: str) -> bool:
    if scenario.hosts is not None and host not in scenario.hosts:
        return False
    return scenario.steps(host, "/w") is not None
