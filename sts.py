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


@dataclass
class PromptOutcome:
    """How a prompt changes the contract.

    kind: "directive" (a valid `$stop-that-shit` directive), "correction" (a
    natural-language correction), "error" (an invalid directive; `contract`
    is the unchanged previous one) or "plain" (ordinary text).
    """

    kind: str
    contract: Dict[str, Any]
    error: Optional[Dict[str, str]] = None


def control_state(contract: dict) -> str:
    """OFF, OBSERVING or ARMED (core.md 3)."""
    level = contract.get("level")
    if level == "off":
        return "OFF"
    if level in ("guard", "lock") and contract.get("mode") != "unconfirmed":
        return "ARMED"
    return "OBSERVING"


def parse_inspection_command(text: str) -> Optional[Tuple[str, ...]]:
    """('status',) ('runtime', 'this'|'all') ('explain', evt) ('label', evt, label) or None."""
    return None  # TODO(contract)


def interpret_prompt(contract: dict, text: str) -> PromptOutcome:
    """Apply a directive or correction in `text` to `contract` (core.md 2.2-2.6)."""
    return PromptOutcome("plain", dict(contract))  # TODO(contract)


def has_directive_mention(text: str) -> bool:
    """True when the text starts with a `$stop-that-shit` mention (core.md 2.2)."""
    return False  # TODO(contract)


def contract_context(contract: dict, reserved: int, count_unproven: bool,
                     storage_error: Optional[dict] = None) -> str:
    """The one-line contract context of core.md 5.2."""
    return ""  # TODO(contract)


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
    # The UTF-16 round trip joins surrogate pairs and turns each lone one into
    # a single U+FFFD, as Node does; a UTF-8 round trip would give three.
    text = session_id.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    raw = text.encode("utf-8")
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


@dataclass
class Loaded:
    """A session's state as read, and the storage error that forced recovery, if any."""

    state: dict
    storage_error: Optional[dict] = None  # {"code": ..., "message": ...}
    existed: bool = False


def _uuid4_text() -> str:
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def _state_int_ok(value: Any) -> bool:
    # S4: JSON true/false must not pass as 1/0.
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
    """Check a parsed state file against schema 4 (core.md 7.3) and normalize it.

    Raises StateDamaged on the first problem.  Normalizing happens in memory
    only (legacy budget keys dropped, optional fields filled in); the file is
    rewritten only by the next locked update.
    """
    if not isinstance(obj, dict):
        raise _damaged("not a JSON object")
    version = obj.get("schemaVersion")
    if type(version) is not int or version != STATE_SCHEMA_VERSION:
        # S3: the port never wrote schemas 1-3, and a future one cannot be read safely.
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
    """The read-only recovery state of core.md 7.5 for a `{code, message}` error."""
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
    """Whether `pid` may still run; only a confirmed-dead pid lets a lock go (C4)."""
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


class Store:
    """The data dir.  Tool-call hooks touch only their own session's files."""

    def __init__(self, root: Optional[str] = None) -> None:
        self.root = root or data_dir()
        # Keys whose damaged file was moved aside during the current update (S1).
        self._preserved: set = set()

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def _state_path(self, key: str) -> str:
        return os.path.join(self.root, "sessions", key + ".json")

    # -- reading -----------------------------------------------------------

    def load(self, key: str) -> Loaded:
        """Lock-free read; damage yields the recovery state (core.md 7.5)."""
        target = self._state_path(key)
        try:
            import stat
            if not stat.S_ISDIR(os.lstat(target + ".lock").st_mode):
                # C5: sts never writes a lock file, so one here is foreign or corrupt.
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

    # -- locking -----------------------------------------------------------

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
        was called from inside `change` (S1): the damaged bytes are then out
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
        """Move a damaged state file aside, bytes untouched (S1); returns the new path."""
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

    # -- writing -----------------------------------------------------------

    def _write_json(self, target: str, obj: Any, indent: Optional[int] = 2) -> None:
        """Durable atomic replace (S2): the old file survives any failure."""
        import time
        directory = os.path.dirname(target)
        _state_mkdirs(directory)
        data = (json.dumps(obj, indent=indent, ensure_ascii=False) + "\n").encode("utf-8")
        tmp = "%s.%d.%d.tmp" % (target, os.getpid(), int(time.time() * 1000))
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o600)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        if os.name != "nt":
            try:
                dfd = os.open(directory, os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
            except OSError:
                pass  # some filesystems refuse a dir fsync; the rename already happened

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
        """Record an observed host effect for an event (decisions.md 4); returns the line."""
        event_id = event_id.lower() if isinstance(event_id, str) else event_id
        if not event_id_ok(event_id):
            raise ValueError("invalid event id: %r" % (event_id,))
        if effect not in HOST_EFFECTS:
            raise ValueError("invalid host effect: %r" % (effect,))
        record = {"schemaVersion": 1, "annotationId": "ann_" + _uuid4_text(),
                  "occurredAt": utc_now_iso(), "eventId": event_id, "hostEffect": effect}
        self.append_annotation(record)
        return record

    # -- markers, links, hosts ------------------------------------------------

    def set_armed(self, key: str, armed: bool) -> None:
        """Keep <data>/armed/<key> present iff the governing contract is armed.

        Best-effort: a marker only matters when sts itself fails, so an error
        here must not fail the hook.  One stat in the common (unchanged) case.
        """
        marker = os.path.join(self.root, "armed", key)
        try:
            os.stat(marker)
            present = True
        except FileNotFoundError:
            present = False
        except OSError:
            return
        if present == bool(armed):
            return
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
            pass

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


# -- audit readers (inspection only; a tool-call hook never reads logs) -----

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
    """`evt_` followed by lower-case hex and dashes (core.md 8.3)."""
    return isinstance(value, str) and _audit_re("event").match(value) is not None


def _time_ok(value: Any) -> bool:
    if not isinstance(value, str) or not _audit_re("time").match(value):
        return False
    from datetime import datetime
    try:
        datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return False
    return True


def runtime_event_ok(record: Any) -> bool:
    """Shape checks of core.md 8.3 for one RuntimeEvent v1 line."""
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
    with fh:
        for raw in fh:
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError):
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


@dataclass
class Annotations:
    """runtime/annotations.jsonl folded per event: the last line of each kind wins."""

    labels: Dict[str, str] = field(default_factory=dict)
    host_effects: Dict[str, str] = field(default_factory=dict)
    records: List[dict] = field(default_factory=list)
    damaged: int = 0


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


_UNRESOLVED_ADVICE = ("Only a confirmed completion or a new host session clears this; "
                      "never reset the ledger by hand.")
_STATUS_RECENT = 5
_INSPECT_WIDTH = 80


class InspectionError(Exception):
    """A lookup that found nothing or a bad argument: one stderr line, exit 1."""


def _reserved_and_reasons(state: dict) -> Tuple[int, List[str]]:
    delegation = state.get("delegation") or {}
    reserved = sum(r.get("pendingCount", 0) + len(r.get("agentIds", []))
                   for r in (delegation.get("reservations") or {}).values())
    # First-seen order, as the reference prints them.
    reasons = list(dict.fromkeys((delegation.get("unresolved") or {}).values()))
    return reserved, reasons


def _fields_line(contract: dict, reserved: int, count_unproven: bool) -> str:
    """`<fields>` of core.md 5.2, from the contract section when it provides it."""
    shared = globals().get("contract_fields")
    if callable(shared):
        try:
            return shared(contract, reserved, count_unproven)
        except TypeError:
            pass  # a different signature: fall back to the spec text below
    paths = contract.get("allowedPaths")
    files = "unbounded" if paths is None else "|".join(paths)
    return "mode=%s; agents=%d/%d reserved%s; hash=%s; deps=%s; files=%s." % (
        contract.get("mode"), reserved, contract.get("agentBudget", MAX_SAFE_INTEGER),
        "; count unproven" if count_unproven else "", contract.get("hashPolicy"),
        contract.get("dependencyPolicy"), files)


def _sorted_events(records) -> List[dict]:
    return sorted(records, key=lambda r: r["occurredAt"])  # sorted() is stable


def _host_effect(event: dict, notes: Annotations) -> str:
    observed = notes.host_effects.get(event["eventId"])
    return observed or str(event["decision"].get("hostEffect") or "unobserved")


def _status_lines(store: Store, key: str,
                  with_events: bool = False) -> Tuple[List[str], List[dict], Annotations]:
    loaded = store.load(key)
    state = loaded.state
    contract = state["contract"]
    reserved, reasons = _reserved_and_reasons(state)
    notes = read_annotations(store)
    # The log is only needed for the terminal's details or when some effect
    # was observed; otherwise the answer is "unobserved" without reading it.
    events = _sorted_events(iter_audit(store, key)) if with_events or notes.host_effects else []
    effect = _host_effect(events[-1], notes) if events else "unobserved"
    lines = ["Stop That Shit status",
             "State: %s / %s" % (control_state(contract), contract.get("mode")),
             _fields_line(contract, reserved, bool(reasons)),
             "Authority source: %s" % contract.get("source")]
    if loaded.storage_error:
        lines.append("%s: %s" % (loaded.storage_error.get("code"),
                                 loaded.storage_error.get("message")))
    error = state.get("directiveError")
    if isinstance(error, dict):
        lines.append("Directive error: %s: %s" % (error.get("code"), error.get("message")))
    if reasons:
        lines.append("Unresolved activity: %s. %s" % (", ".join(reasons), _UNRESOLVED_ADVICE))
    lines += ["Host effect: %s" % effect, "Full counts: see runtime."]
    return lines, events, notes


def _inspect_fit(text: str) -> str:
    return text if len(text) <= _INSPECT_WIDTH else text[:_INSPECT_WIDTH - 3] + "..."


def _count_line(title: str, counts: Dict[str, int]) -> List[str]:
    import textwrap
    body = "; ".join("%s=%d" % kv for kv in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return textwrap.wrap("%s: %s" % (title, body), _INSPECT_WIDTH, subsequent_indent="  ",
                         break_on_hyphens=False)


def _status_details(events: List[dict]) -> List[str]:
    """The terminal's extra status lines: counts and the latest events, metadata only."""
    if not events:
        return ["Events in this session: 0"]
    families: Dict[str, int] = {}
    reasons: Dict[str, int] = {}
    for event in events:
        decision = event["decision"]
        family = decision.get("family") or "none"
        families[str(family)] = families.get(str(family), 0) + 1
        reasons[decision["reasonCode"]] = reasons.get(decision["reasonCode"], 0) + 1
    lines = ["Events in this session: %d" % len(events)]
    lines += _count_line("By family", families) + _count_line("By reason", reasons)
    lines.append("Last events:")
    for event in events[-_STATUS_RECENT:]:
        decision = event["decision"]
        code = decision["reasonCode"]
        if decision.get("family"):
            code = "%s/%s" % (decision["family"], code)
        lines.append(_inspect_fit("  %s %s %s %s" % (
            event["occurredAt"], event["action"]["toolName"], decision["policyOutcome"], code)))
        lines.append("    " + event["eventId"])
    return lines


def _runtime_summary(events, notes: Annotations, counter: dict) -> Tuple[dict, List[dict]]:
    """Counts over a stream of in-scope events; the events are kept for --json only."""
    kept: List[dict] = []
    summary: Dict[str, Any] = {"checkedActions": 0, "contextResponses": 0,
                               "permissionDenyResponses": 0, "executionDenialResponses": 0,
                               "reasons": {}, "labels": {name: 0 for name in LABELS},
                               "hostEffects": {name: 0 for name in HOST_EFFECTS}}
    outcome_keys = {"context_returned": "contextResponses",
                    "permission_deny_returned": "permissionDenyResponses",
                    "execution_denial_returned": "executionDenialResponses"}
    for event in events:
        kept.append(event)
        summary["checkedActions"] += 1
        response = outcome_keys.get(event["decision"]["responseOutcome"])
        if response:
            summary[response] += 1
        code = event["decision"]["reasonCode"]
        summary["reasons"][code] = summary["reasons"].get(code, 0) + 1
        label = notes.labels.get(event["eventId"])
        if label:
            summary["labels"][label] += 1
        effect = notes.host_effects.get(event["eventId"])
        if effect:
            summary["hostEffects"][effect] += 1
    summary["damagedRecords"] = counter.get("damaged", 0) + notes.damaged
    return summary, kept


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
    effects = summary["hostEffects"]
    if any(effects.values()):
        # Only confirmed effects (decisions.md 4) are counted; the rest stay unobserved.
        lines.append("Observed host effects: blocked=%d; ran=%d"
                     % (effects["observed_blocked"], effects["observed_ran"]))
    return "\n".join(lines)


def _inspect_runtime(store: Store, key: Optional[str]) -> Tuple[dict, List[dict], Annotations]:
    notes = read_annotations(store)
    counter = {"damaged": 0}
    summary, events = _runtime_summary(iter_audit(store, key, counter), notes, counter)
    return summary, _sorted_events(events), notes


def find_event(store: Store, event_id: str) -> Optional[dict]:
    """The event with this exact id in any session's log (ids are lower-cased, L2)."""
    event_id = event_id.lower()
    for record in iter_audit(store):
        if record["eventId"] == event_id:
            return record
    return None


def _explain_text(event: dict, notes: Annotations) -> str:
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


def inspection_response(command: Tuple[str, ...], store: Store, key: Optional[str]) -> str:
    """Text answer to an inspection command typed in a prompt, for session `key`.

    Reads without the lock and writes nothing but a label's annotation line.
    """
    name = command[0] if command else ""
    if name == "status":
        return "\n".join(_status_lines(store, key or "unknown")[0])
    if name == "runtime":
        scope = command[1] if len(command) > 1 else "this"
        summary, _, _ = _inspect_runtime(store, None if scope == "all" else (key or "unknown"))
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


_INSPECT_USAGE = ("usage: sts.py status | runtime [all] | explain EVT | label EVT LABEL "
          "[--session ID] [--all] [--json]")


def _latest_session_key(store: Store) -> Optional[str]:
    """The most recently modified session state, else the most recent runtime log."""
    for sub, suffix in (("sessions", ".json"), ("runtime", ".jsonl")):
        best, best_time = None, -1.0
        try:
            names = os.listdir(store.path(sub))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name in names:
            key = name[:-len(suffix)]
            if not name.endswith(suffix) or name == "annotations.jsonl" or \
                    not (key == "unknown" or (len(key) == 24 and
                                              all(c in "0123456789abcdef" for c in key))):
                continue
            try:
                mtime = os.stat(store.path(sub, name)).st_mtime
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


def _inspect_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


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
                raise InspectionError("sts: no session found in %s" % store.root)
        if command == "status":
            lines, events, notes = _status_lines(store, key, with_events=True)
            if as_json:
                loaded = store.load(key)
                reserved, reasons = _reserved_and_reasons(loaded.state)
                counter = {"damaged": 0}
                summary, _ = _runtime_summary(iter(events), notes, counter)
                _inspect_json({"schemaVersion": 1, "sessionKey": key,
                            "controlState": control_state(loaded.state["contract"]),
                            "contract": loaded.state["contract"], "reservedUpperBound": reserved,
                            "countUnproven": bool(reasons), "unresolved": reasons,
                            "directiveError": loaded.state.get("directiveError"),
                            "storageError": loaded.storage_error,
                            "hostEffect": lines[-2].split(": ", 1)[1],
                            "summary": summary,
                            "recentEvents": events[-_STATUS_RECENT:]})
            else:
                sys.stdout.write("\n".join(lines + _status_details(events)) + "\n")
            return 0
        if command == "runtime":
            summary, events, notes = _inspect_runtime(store, None if all_logs else key)
            if as_json:
                ids = {e["eventId"] for e in events}
                if not summary["executionDenialResponses"]:
                    del summary["executionDenialResponses"]
                _inspect_json({"schemaVersion": 1,
                            "events": [dict(e, label=notes.labels.get(e["eventId"]))
                                       for e in events],
                            "summary": summary,
                            "annotations": [a for a in notes.records if a["eventId"] in ids]})
            else:
                sys.stdout.write(_runtime_text(summary) + "\n")
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
