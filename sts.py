#!/usr/bin/env python3
"""sts -- "Stop That Shit": a guard for AI coding agents.

It stops work nobody asked for (edits during a review, writes outside a file
lock, unrequested dependencies and hashing, subagents over budget) and lets
necessary work through.  One file, standard library only, Python 3.9+.

Hosts call it as a hook, one process per event (the import form below keeps
the bytecode cached)::

    python3 -I -S -c "import sys; sys.path.insert(0, '/abs/dir'); import sts; sys.exit(sts.main())" codex

The plain form works too, only slower::

    python3 sts.py codex|claude|hermes|opencode|pi|omp   < host-event.json
    python3 sts.py status | runtime [all] | explain EVT | label EVT LABEL

Data flows through the sections of this file in order:

    protocol types -> task contract -> analysis -> decision -> delegation
    ledger -> state and audit -> engine -> adapters -> inspection and CLI

Every host adapter only translates: host event -> ControlEvent v2 -> the one
host-free decision core -> host response.  A rule lives in one place, so the
same action gets the same answer on every host.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

VERSION = "0.1.0"
PROTOCOL_VERSION = 2
LIFECYCLE_VERSION = 2


###############################################################################
# Protocol types: ControlEvent v2
#
# Owns the vocabulary every other section speaks: the seven event kinds, the
# five mutability buckets, analyzer reason codes, and the dataclasses that a
# validated event becomes.  Validation follows core.md 1.3: the first failure
# raises EventError naming the field and the bad value.
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
}


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
    # thrash detector (which stores a digest, never the text).
    command: Optional[str] = None

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
        for key in ("affectedPaths", "shellWriteTargets"):
            value = obj.get(key, [])
            if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
                raise _bad(where + key, value)
            paths.append(list(value))
        cwd = obj.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise _bad(where + "cwd", cwd)
        flags = {}
        for key in ("hashIntent", "dependencyIntent", "unboundedDelegation"):
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
        return cls(
            name=name, mutability=mutability, id=action_id,
            affected_paths=paths[0], shell_write_targets=paths[1], cwd=cwd,
            hash_intent=flags["hashIntent"], dependency_intent=flags["dependencyIntent"],
            unbounded_delegation=flags["unboundedDelegation"],
            delegation_lifecycle_unproven=lifecycle_unproven,
            delegation_count=count, analysis_reason=reason, async_launched=async_launched,
            reachability=obj.get("reachability"), authorization=obj.get("authorization"),
            command=obj.get("command"),
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
    """One validated host-free event (core.md 1)."""

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
        """Lifecycle facts count only from adapters that declare version 2 (core.md 1.4)."""
        return (self.protocol_version == 2 and type(self.lifecycle_version) is int
                and self.lifecycle_version == 2)

    @property
    def action_id(self) -> Optional[str]:
        """The call id, namespaced by the child session that sent it (core.md 1.5)."""
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


@dataclass
class CoreResult:
    """What the core answers; adapters render it in the host's own format.

    kind: "none" (allow, or nothing new to say), "context" (text for the
    model), "deny" (stop the call; text is the STOP message) or
    "prompt-error" (an explicit directive was rejected).
    """

    kind: str = "none"
    text: str = ""
    code: Optional[str] = None
    event_id: Optional[str] = None


NO_RESULT = CoreResult()


###############################################################################
# Task contract
#
# Owns the `$stop-that-shit` directive grammar, natural-language corrections
# (English and Chinese), the inspection-command grammar and the contract
# context text.  Pure functions on contract dicts; no I/O.  core.md 2 and 5.2.
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
# upgrade the contract to change (core.md 2.6 rule 5, 10-G4).
READ_ONLY_MODES = frozenset(("answer", "review", "monitor"))
# Budget counters of older releases; the contract no longer has a usage count.
_LEGACY_CONTRACT_KEYS = ("agentsUsed", "totalAgentBudget", "concurrentAgentBudget")
_PLACEHOLDER = "\ufffc"


@dataclass
class PromptOutcome:
    """How a prompt changes the contract.

    kind: "directive" (a valid `$stop-that-shit` directive), "correction" (a
    natural-language correction), "error" (an invalid directive; `contract`
    is the unchanged previous one) or "plain" (ordinary text).
    changed: the resulting contract differs from the previous one (10-G5).
    """

    kind: str
    contract: Dict[str, Any]
    error: Optional[Dict[str, str]] = None
    changed: bool = False


def control_state(contract: dict) -> str:
    """OFF, OBSERVING or ARMED (core.md 3)."""
    level = contract.get("level")
    if level == "off":
        return "OFF"
    if level in ("guard", "lock") and contract.get("mode") != "unconfirmed":
        return "ARMED"
    return "OBSERVING"


# Regexes are compiled on first use: most hook runs are tool calls that never
# read a prompt, so they should not pay for compiling these.  Flags are inline
# so that this table needs no `re` at import time.  `(?a)` keeps \b and \s
# ASCII as in the reference; `\Z` is its end-of-input `$`.
_PATTERNS: Dict[str, str] = {
    # Blank lines, up to three spaces, the mention, then end/space/`,`/`:`.
    "mention": r"(?i)(?:[ \t]*\r?\n)*[ ]{0,3}\$stop-that-shit(?=[\s,:]|\Z)",
    "head_end": r"--|:(?=\s|\Z)|\n",
    "token_split": r"[\s,]+",
    "dquote_special": r'[\\"]',
    "backtick_run": r"`+",
    "inspection": (
        r"(?i)(?:[ \t]*\r?\n)*[ ]{0,3}\$stop-that-shit[ \t]+"
        r"(?:(status)|(runtime)(?:[ \t]+(all))?"
        r"|(explain)[ \t]+(evt_[0-9a-f-]+)"
        r"|(label)[ \t]+(evt_[0-9a-f-]+)[ \t]+(correct|incorrect|inconclusive))"
        r"[ \t]*(?:\r?\n[ \t]*)*\Z"
    ),
    # Correction rules, in priority order (core.md 2.6).
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
    "change": (
        r"(?ai)(?:please\s+)?(?:fix|implement|change|apply|patch)\b"
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
        "`%s` needs a whole number from 0 to %d." % (token, MAX_SAFE_INTEGER))


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
    # be watch (or off): core.md 2.1.
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


# --- prose reduction (core.md 2.6 steps 1-4) --------------------------------

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
    """The prompt with code, quotations and quoted lines blanked out (core.md 2.6)."""
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
    """True when the text starts with a `$stop-that-shit` mention (core.md 2.2)."""
    return isinstance(text, str) and _rx("mention").match(text) is not None


def interpret_prompt(contract: dict, text: str) -> PromptOutcome:
    """Apply a directive or correction in `text` to `contract` (core.md 2.2-2.6).

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


# --- contract context (core.md 5.2) ----------------------------------------

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


def contract_fields(contract: dict, reserved: int, count_unproven: bool) -> str:
    """The exact `<fields>` line of core.md 5.2 (also used by `status`)."""
    budget = contract.get("agentBudget")
    if not _is_int(budget):
        budget = MAX_SAFE_INTEGER
    paths = contract.get("allowedPaths")
    files = "|".join(paths) if isinstance(paths, list) else "unbounded"
    return "mode=%s; agents=%d/%d reserved%s; hash=%s; deps=%s; files=%s." % (
        contract.get("mode", DEFAULT_CONTRACT["mode"]), reserved, budget,
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
    """The one-line contract context of core.md 5.2.

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
# path extraction.  Pure functions; every adapter calls these.  analysis.md.
###############################################################################


@dataclass
class ShellAnalysis:
    """Verdict on one shell command line.

    mutability is "read" only when every simple command is proven read-only.
    write_targets lists the paths the line provably writes (redirections,
    tee, cp/mv/rm/... targets) when they can be established.
    """

    mutability: str
    reason: Optional[str] = None
    hash_intent: bool = False
    dependency_intent: bool = False
    write_targets: List[str] = field(default_factory=list)


def analyze_shell(command: Any, shell: str = "bash") -> ShellAnalysis:
    """Classify one command line; shell is "bash", "powershell" or "unknown"."""
    if not isinstance(command, str) or not command.strip():
        return ShellAnalysis("unknown", "shell_syntax_unproven")
    return ShellAnalysis("unknown", "shell_command_unproven")  # TODO(analysis)


def hash_intent_in_text(added_text: str, path: Optional[str] = None) -> bool:
    """True when code added to `path` computes a hash/digest (analysis.md 2, 5.7)."""
    return False  # TODO(analysis)


def dependency_intent_in_change(path: Optional[str], old_text: Optional[str],
                                new_text: Optional[str]) -> bool:
    """True when a manifest change adds a dependency (analysis.md 3)."""
    return False  # TODO(analysis)


@dataclass
class PatchSummary:
    """Paths and added text of a Codex-style `*** Begin Patch` text."""

    paths: List[str]
    added_text: str
    hash_intent: bool
    dependency_intent: bool


def analyze_patch(patch_text: Any) -> PatchSummary:
    """Paths (Add/Update/Delete File, Move to), added lines and intents of a patch."""
    return PatchSummary([], "", False, False)  # TODO(analysis)


###############################################################################
# Decision
#
# Owns the ordered checks of core.md 4.2 (plus self-protection and thrash
# from decisions.md), `files=` matching (4.3) and the STOP/WATCH message
# (5.1).  `decide` is pure: state in, Decision out.
###############################################################################


@dataclass
class Decision:
    """The outcome of the ordered checks for one action.before."""

    outcome: str            # allow | report_and_defer | deny_and_explain | require_user_approval
    code: str               # reason code, e.g. MODE_FORBIDS_MUTATION
    family: Optional[str]   # I, H, S, T or None on allow
    detail: str = ""
    next: str = ""


def decide(action: Action, state: dict, *, action_id: Optional[str], declared: bool,
           storage_error: Optional[dict] = None) -> Decision:
    """Run the ordered checks of core.md 4.2 against `state` (schema 4 dict)."""
    contract = state["contract"]
    if contract["level"] == "off" or contract["mode"] == "unconfirmed":
        return Decision("allow", "CONTROL_INACTIVE", None)
    return Decision("allow", "WITHIN_CONTRACT", None)  # TODO(decision)


def decision_message(decision: Decision, *, state_label: str, mode: str,
                     response_outcome: str, event_id: Optional[str]) -> str:
    """The multi-line STOP/WATCH message of core.md 5.1."""
    return "%s / %s\nReason: %s" % ("STOP", decision.family, decision.code)  # TODO(decision)


###############################################################################
# Delegation ledger
#
# Owns `state["delegation"]`: reservations keyed by the host's action id,
# admission, lifecycle facts and the summary the decision reads.  core.md 6.
###############################################################################


@dataclass
class LedgerSummary:
    reserved: int
    unresolved_reasons: List[str]
    unknown_results: int
    duplicate: bool


def ledger_summary(delegation: dict, action_id: Optional[str] = None) -> LedgerSummary:
    """Reserved upper bound, unresolved reasons, unknown results, duplicate id."""
    reserved = sum(r["pendingCount"] + len(r["agentIds"])
                   for r in delegation.get("reservations", {}).values())
    unresolved = sorted(set(delegation.get("unresolved", {}).values()))
    return LedgerSummary(reserved, unresolved, 0,
                         action_id is not None and action_id in delegation.get("acceptedActions", {}))


def changes_delegation(action: Action, declared: bool) -> bool:
    """Whether admission must run under the session lock (core.md 4.1)."""
    legacy = not declared and action.mutability in ("delegate", "control", "unknown")
    return action.mutability == "delegate" or action.delegation_lifecycle_unproven or legacy


def admit(delegation: dict, action: Action, action_id: Optional[str], declared: bool) -> None:
    """Record an accepted delegation-changing action (core.md 6.2)."""
    # TODO(ledger)


def mark_denied_duplicate(delegation: dict, action_id: str) -> None:
    """A denied duplicate marks the original reservation notStartedAmbiguous."""
    # TODO(ledger)


def apply_lifecycle_fact(delegation: dict, event: ControlEvent) -> bool:
    """Apply action.after / subagent.* / session.end facts; True when changed (core.md 6.3)."""
    return False  # TODO(ledger)


###############################################################################
# State and audit
#
# Owns everything on disk: the data dir, session keys, schema-4 state with
# validation, the cross-process lock, atomic durable writes, read-only
# recovery, armed markers, session links, and the append-only runtime audit.
# core.md 7 and 8; decisions.md 5 and 7.
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


def session_key(session_id: str) -> str:
    """First 24 hex chars of SHA-256 of the UTF-8 id (lone surrogates -> U+FFFD)."""
    import hashlib
    if not session_id:
        return "unknown"
    raw = session_id.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")
    return hashlib.sha256(raw).hexdigest()[:24]


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


class StateDamaged(Exception):
    """The state file cannot be trusted; the session enters read-only recovery."""


class LockTimeout(Exception):
    """The session lock could not be taken within the bounded wait."""


@dataclass
class Loaded:
    """A session's state as read, and the storage error that forced recovery, if any."""

    state: dict
    storage_error: Optional[dict] = None  # {"code": ..., "message": ...}
    existed: bool = False


class Store:
    """The data dir.  Tool-call hooks touch only their own session's files."""

    def __init__(self, root: Optional[str] = None) -> None:
        self.root = root or data_dir()

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def load(self, key: str) -> Loaded:
        """Lock-free read; damage yields the recovery state (core.md 7.5)."""
        try:
            with open(self.path("sessions", key + ".json"), "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return Loaded(default_state())
        return Loaded(json.loads(raw), None, True)  # TODO(state): validation, recovery

    def update(self, key: str, change: Callable[[Loaded], Tuple[Optional[dict], Any]]) -> Any:
        """Lock, load, call change(loaded) -> (new_state or None, result), write, unlock."""
        loaded = self.load(key)  # TODO(state): locking
        new_state, result = change(loaded)
        if new_state is not None and loaded.storage_error is None:
            self._write_json(self.path("sessions", key + ".json"), new_state)
        return result

    def _write_json(self, target: str, obj: Any) -> None:
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        tmp = target + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
        os.replace(tmp, target)  # TODO(state): fsync, pid-named temp

    def append_audit(self, key: str, record: dict) -> bool:
        """One O_APPEND write of one JSON line; False (never raise) on failure."""
        return False  # TODO(audit)

    def set_armed(self, key: str, armed: bool) -> None:
        """Keep <data>/armed/<key> present iff the governing contract is armed."""
        # TODO(state)

    def armed_marker(self, key: str) -> bool:
        return os.path.exists(self.path("armed", key))

    def link_root(self, session_id: str) -> Optional[str]:
        """The root session id a child session is linked to, or None."""
        return None  # TODO(state)

    def write_link(self, child_session_id: str, root_session_id: str) -> None:
        """Persist child -> root (OpenCode, Hermes, Oh My Pi children)."""
        # TODO(state)

    def touch_host(self, host: str) -> None:
        """Doctor's "last event per host": an empty file whose mtime is the answer."""
        # TODO(state)


def new_event_id() -> str:
    """evt_ + a UUID v4, without importing uuid (it costs ~7 ms at start-up)."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return "evt_%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def utc_now_iso() -> str:
    """ISO-8601 UTC with milliseconds and Z."""
    import time
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % (int(now * 1000) % 1000)


###############################################################################
# Engine
#
# Owns the glue: one validated ControlEvent in, one CoreResult out.  It picks
# the governing session, runs the decision or the contract update under the
# right lock, writes the audit line and keeps the armed marker true.  No
# host knowledge lives here.
###############################################################################


def handle_event(event: ControlEvent, store: Store,
                 response_outcome: str = "permission_deny_returned") -> CoreResult:
    """Process one event for its governing session."""
    return NO_RESULT  # TODO(engine)


###############################################################################
# Adapters: shared helpers
#
# Owns what every host adapter shares: path normalization (adapters.md 1.4),
# the name-based fallback classifier (1.5), shell/patch classification
# through the analysis section, and the Adapter base class whose tables map
# host events to kinds and tools to buckets.
###############################################################################


###############################################################################
# Adapters: Codex and Claude Code
#
# Command hooks: JSON on stdin, JSON on stdout, exit 0.  adapters.md 3 and 4.
###############################################################################


###############################################################################
# Adapters: Hermes, OpenCode, Pi and Oh My Pi
#
# Hermes speaks the native command-hook format (its plugin in host_shims/
# builds the same envelope); OpenCode, Pi and Oh My Pi arrive through the
# shims' wire protocol (adapters.md 2).  adapters.md 5-8.
###############################################################################


###############################################################################
# Install, uninstall and doctor
#
# Owns wiring sts into each host's configuration: the hook command form of
# decisions.md 1, merging JSON configs without losing the user's keys,
# backups, idempotence, the shims' copies, and the doctor's checks.
###############################################################################


def hook_command(host: str, python: str = "python3") -> str:
    """The import-form hook command (decisions.md 1) for this copy of sts.py."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % here
    return '%s -I -S -c "%s" %s' % (python, code, host)  # TODO(install): quoting per format


def cmd_install(args: List[str]) -> int:
    """python3 sts.py install <host> [--scope user|project] [--dry-run]"""
    sys.stderr.write("sts: install is not built yet\n")
    return 2  # TODO(install)


def cmd_uninstall(args: List[str]) -> int:
    """python3 sts.py uninstall <host> [--scope user|project] [--dry-run]"""
    sys.stderr.write("sts: uninstall is not built yet\n")
    return 2  # TODO(install)


def cmd_doctor(args: List[str]) -> int:
    """python3 sts.py doctor: one OK/WARN/FAIL line per check."""
    sys.stderr.write("sts: doctor is not built yet\n")
    return 2  # TODO(install)


###############################################################################
# Inspection
#
# Owns the read side: status, runtime, explain and label, both as prompt
# commands (core.md 2.7, 8.4) and from the terminal (core.md 10-L1).  Only
# these read audit logs; a tool-call hook never does.
###############################################################################


def inspection_response(command: Tuple[str, ...], store: Store, key: Optional[str]) -> str:
    """Text answer to an inspection command typed in a prompt, for session `key`."""
    return "Stop That Shit status"  # TODO(inspection)


def cmd_inspect(args: List[str], store: Store) -> int:
    """status|runtime|explain|label from the terminal, with --session ID, --all, --json."""
    sys.stderr.write("sts: inspection is not built yet\n")
    return 2  # TODO(inspection)


###############################################################################
# CLI
#
# Owns the hook runner with its fail-open / fail-closed rules (core.md 10-C1,
# A3) and main().
###############################################################################


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point for hooks and the CLI; returns the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        sys.stderr.write(__doc__)
        return 2
    return 0  # TODO(cli)


if __name__ == "__main__":
    sys.exit(main())
