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


# Policy outcome -> (CoreResult kind, audit responseOutcome or None = the adapter's deny outcome)
_OUTCOME_RESULTS: Dict[str, Tuple[str, Optional[str]]] = {
    "allow": ("none", "none"),
    "report_and_defer": ("context", "context_returned"),
    "deny_and_explain": ("deny", None),
    "require_user_approval": ("deny", None),
}


def handle_event(event: ControlEvent, store: Store,
                 response_outcome: str = "permission_deny_returned") -> CoreResult:
    """Process one event for its governing session (event.session_id)."""
    key = session_key(event.session_id)
    handler = _KIND_HANDLERS[event.kind]
    return handler(event, key, store, response_outcome)


def _armed(state: dict, storage_error: Optional[dict]) -> bool:
    """What the shims' armed marker means (adapters.md 2.3)."""
    return (storage_error is not None or bool(state.get("directiveError"))
            or control_state(state["contract"]) == "ARMED")


def _refresh_markers(store: Store, event: ControlEvent, key: str, armed: bool) -> None:
    """Keep the armed marker of the governing session and of the emitting child true."""
    try:
        store.set_armed(key, armed)
        source = event.source_session_id
        if source and source != event.session_id:
            store.set_armed(session_key(source), armed)
    except OSError:
        pass  # a marker is a fail-closed hint for the shims, never worth failing a hook


def _context_for(state: dict, storage_error: Optional[dict]) -> str:
    summary = ledger_summary(state["delegation"])
    return contract_context(state["contract"], summary.reserved,
                            bool(summary.unresolved_reasons), storage_error)


def _protected_paths(store: Store) -> List[str]:
    """The self-protection set of decisions.md 3: data dir, this file, installed paths."""
    paths = [store.root, os.path.abspath(__file__)]
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
    needs_paths = bool(action.affected_paths or action.shell_write_targets)
    protected = _protected_paths(store) if needs_paths else []
    thrash = _thrash_repeats(store, key, action)

    def judge(loaded: Loaded) -> Decision:
        return decide(action, loaded.state, action_id=action_id, declared=declared,
                      storage_error=loaded.storage_error, protected_paths=protected,
                      thrash_repeats=thrash)

    if changes_delegation(action, declared):
        def change(loaded: Loaded) -> Tuple[Optional[dict], Tuple[Loaded, Decision]]:
            decision = judge(loaded)
            delegation = loaded.state["delegation"]
            if decision.outcome in ("allow", "report_and_defer"):
                admit(delegation, action, action_id, declared)
                return loaded.state, (loaded, decision)
            if action_id is not None and ledger_summary(delegation, action_id).duplicate:
                mark_denied_duplicate(delegation, action_id)
                return loaded.state, (loaded, decision)
            return None, (loaded, decision)
        try:
            loaded, decision = store.update(key, change)
        except LockTimeout as exc:
            loaded = store.load(key)
            budget = loaded.state["contract"].get("agentBudget", MAX_SAFE_INTEGER)
            if action.mutability != "delegate" and not action.delegation_lifecycle_unproven:
                raise
            if not (_is_int(budget) and budget < MAX_SAFE_INTEGER) or \
                    control_state(loaded.state["contract"]) == "OFF":
                raise
            sys.stderr.write("sts: %s\n" % exc)
            decision = state_busy_decision()
    else:
        loaded = store.load(key)
        decision = judge(loaded)

    state, storage_error = loaded.state, loaded.storage_error
    contract = state["contract"]
    kind, response = _OUTCOME_RESULTS[decision.outcome]
    if response is None:
        response = response_outcome
    event_id = None
    if contract["level"] != "off" or storage_error is not None:
        candidate = new_event_id()
        record = _audit_record(candidate, key, action, state, decision, response)
        if store.append_audit(key, record):
            event_id = candidate
    _refresh_markers(store, event, key, _armed(state, storage_error))
    _thrash_note_write(store, key, action)
    if kind == "none":
        return CoreResult("none", code=decision.code, event_id=event_id)
    text = decision_message(decision, state_label=control_state(contract),
                            mode=contract["mode"], response_outcome=response,
                            event_id=event_id)
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
        # decisions S1: a valid directive keeps the damaged bytes aside and starts fresh.
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
    except LockTimeout as exc:
        if interpret_prompt(DEFAULT_CONTRACT, prompt).kind in ("directive", "correction", "error"):
            return CoreResult("prompt-error",
                              "Stop That Shit could not save this directive because the session "
                              "state is locked by another hook (%s). Resubmit the prompt." % exc,
                              "STS_LOCK_TIMEOUT")
        raise
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
    return CoreResult("context", _context_for(loaded.state, loaded.storage_error))


def _handle_lifecycle(event: ControlEvent, key: str, store: Store,
                      response_outcome: str) -> CoreResult:
    """action.after, subagent.*, session.end: ledger facts from declared adapters only."""
    if not event.declared:
        return NO_RESULT
    if event.kind == "session.end" and not event.all_delegations_stopped:
        return NO_RESULT

    def change(loaded: Loaded) -> Tuple[Optional[dict], Loaded]:
        if loaded.storage_error is not None:
            return None, loaded  # recovery: lifecycle facts are lost (core.md 7.5)
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


# --- Thrash bookkeeping (decisions.md 2) --------------------------------------
# A small side file per session holds a digest of the last repeated command,
# how often it ran and whether a write came in between.  Best effort: one
# lock-free replace, a lost update is acceptable, a failure never changes a
# decision.


def _thrash_repeats(store: Store, key: str, action: Action) -> int:
    return 0  # TODO(thrash)


def _thrash_note_write(store: Store, key: str, action: Action) -> None:
    pass  # TODO(thrash)


###############################################################################
# Adapters: shared helpers
#
# Owns what every host adapter shares: path normalization (adapters.md 1.4),
# the name-based fallback classifier (1.5), shell/patch classification
# through the analysis section, and the Adapter base class whose tables map
# host events to kinds and tools to buckets.
###############################################################################


@dataclass
class HookCall:
    """One host event, translated.

    event: the ControlEvent v2 as a JSON dict, or None when the core is not
    asked (then `answer` is the adapter's own answer, e.g. a paused session).
    tool_call: the host will run a tool after this hook (fail-closed rules).
    render: whether a context result reaches the model on this host event.
    """

    host_event: str
    event: Optional[dict] = None
    answer: Optional[CoreResult] = None
    tool_call: bool = False
    render: bool = True
    session_id: Optional[str] = None


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
    """adapters.md 1.4: trim, relativize to cwd, forward slashes, no ./, unique."""
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
                    pass  # another drive: Node keeps the absolute path (core.md 10-P1)
            elif path.startswith("/") and cwd.startswith("/"):
                import posixpath
                trailing = path.endswith("/") and len(path) > 1
                path = posixpath.relpath(path, cwd) + ("/" if trailing else "")
        path = path.replace("\\", "/")
        while path.startswith("./"):
            path = path[2:]
        if path and path not in out:
            out.append(path)
    return out


# adapters.md 1.5: whole words of a tool name, write list first.
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


def _shell_kind(powershell: bool = False) -> str:
    if powershell:
        return "powershell"
    return "unknown" if os.name == "nt" else "bash"


def shell_action(name: str, command: Any, *, powershell: bool = False) -> dict:
    """The action fields of a shell tool call, from the one analyzer."""
    verdict = analyze_shell(command, _shell_kind(powershell))
    action = {"name": name, "mutability": verdict.mutability,
              "hashIntent": verdict.hash_intent, "dependencyIntent": verdict.dependency_intent,
              "shellWriteTargets": list(verdict.write_targets)}
    if verdict.reason is not None:
        action["analysisReason"] = verdict.reason
    if isinstance(command, str):
        action["command"] = command
    return action


def file_write_action(name: str, path: Any, added: Any = None, removed: Any = None,
                      *, whole_file: bool = True) -> dict:
    """A file tool that writes `path`: hash intent from the added text, dependency intent
    when the file is a manifest.  whole_file: `added` is the full new content (Write)."""
    added_text = added if isinstance(added, str) else ""
    path_text = path if isinstance(path, str) else None
    action = {"name": name, "mutability": "write",
              "affectedPaths": [path_text] if path_text else [],
              "hashIntent": bool(added_text) and hash_intent_in_text(added_text, path_text)}
    old = None if whole_file else (removed if isinstance(removed, str) else "")
    action["dependencyIntent"] = bool(added_text) and dependency_intent_in_change(
        path_text, old, added_text)
    return action


def patch_action(name: str, patch_text: Any) -> dict:
    summary = analyze_patch(patch_text)
    return {"name": name, "mutability": "write", "affectedPaths": list(summary.paths),
            "hashIntent": summary.hash_intent, "dependencyIntent": summary.dependency_intent}


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
# Command hooks: JSON on stdin, JSON on stdout, exit 0.  adapters.md 3 and 4.
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
            return json.dumps({"decision": "block", "reason": result.text}, ensure_ascii=False)
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
        return {"name": name, "mutability": fallback_mutability(name)}

    def _shell(self, name: str, tool_input: dict) -> dict:
        return shell_action(name, _first_text(tool_input, "command", "cmd"))

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
        if session is None or not _is_text(tool):
            return None
        tool_input = payload.get("tool_input")
        action = self.classify(tool, tool_input)
        call_id = payload.get("tool_use_id") or payload.get("tool_call_id")
        if _is_text(call_id):
            action["id"] = call_id
        elif action["mutability"] == "delegate" or action.get("delegationLifecycleUnproven"):
            return None  # adapters.md 1.1: a delegate call without id is dropped
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        if cwd:
            action["cwd"] = cwd
        if action.get("affectedPaths"):
            action["affectedPaths"] = normalize_paths(action["affectedPaths"], cwd)
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
    """Codex CLI command hooks (adapters.md 3)."""

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


# Claude Code: the slash form of the directive, at the directive position only.
_CLAUDE_SLASH_FORMS = ("/stop-that-shit:stop-that-shit", "/stop-that-shit")
_CLAUDE_DELEGATION_TOOLS = frozenset(("Agent", "Task"))
_TASK_DONE_STATUSES = frozenset(("completed", "failed", "killed"))


def _claude_slash_to_directive(prompt: str) -> str:
    """Rewrite a leading /stop-that-shit[:stop-that-shit] to $stop-that-shit (adapters.md 1.6)."""
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
    """Claude Code command hooks (adapters.md 4)."""

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
        "Write": "_write_tool", "Edit": "_write_tool", "NotebookEdit": "_notebook",
        "EnterWorktree": "write",
        "Bash": "_shell", "Monitor": "_monitor", "PowerShell": "_powershell",
        "Agent": "delegate", "Task": "delegate", "Workflow": "_workflow",
        **{name: "read" for name in (
            "Read", "Glob", "Grep", "ListAgents", "ListMcpResourcesTool",
            "ReadMcpResourceTool", "LSP", "WebFetch", "WebSearch")},
        **{name: "control" for name in (
            "AskUserQuestion", "CronCreate", "CronDelete", "CronList", "EndConversation",
            "EnterPlanMode", "ExitPlanMode", "ExitWorktree", "PushNotification",
            "ReportFindings", "ScheduleWakeup", "SendMessage", "Skill", "TodoWrite",
            "TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TaskOutput", "TaskStop",
            "ToolSearch", "WaitForMcpServers")},
    }
    LIFECYCLE_UNPROVEN = frozenset(("SendMessage",))

    def classify_unlisted(self, name: str, tool_input: Any) -> dict:
        action = super().classify_unlisted(name, tool_input)
        if action["mutability"] == "write":
            path = _first_text(tool_input, "file_path", "path")
            if path:
                action["affectedPaths"] = [path]
        return action

    def _notebook(self, name: str, tool_input: dict) -> dict:
        path = _first_text(tool_input, "notebook_path")
        source = tool_input.get("new_source")
        action = file_write_action(name, path, source)
        action["dependencyIntent"] = False
        return action

    def _monitor(self, name: str, tool_input: dict) -> dict:
        if "command" not in tool_input and "ws" in tool_input:
            return {"name": name, "mutability": "read"}
        return shell_action(name, tool_input.get("command"))

    def _powershell(self, name: str, tool_input: dict) -> dict:
        return shell_action(name, tool_input.get("command"), powershell=True)

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
                # Model-written text: never contract authority (adapters.md 4.4).
                return self._task_done(payload, note, name)
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
        if expansion not in (None, "slash_command") or \
                command not in ("stop-that-shit", "stop-that-shit:stop-that-shit"):
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
# shims' wire protocol (adapters.md 2).  adapters.md 5-8.
###############################################################################


# --- Shared by the four hosts -------------------------------------------------


@dataclass
class ShimCall(HookCall):
    """A HookCall that remembers the governing root and the store.

    Rendering on these hosts depends on state the core result does not carry
    (a pending directive error, the current contract line), so render() needs
    to know which session governs and where its state lives.
    """

    root: Optional[str] = None
    store: Optional[Store] = None
    child: bool = False


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
    """core.md 7.5: review / guard / source recovery, count unproven."""
    state = default_state()
    state["contract"].update(mode="review", level="guard", source="recovery")
    state["delegation"]["unresolved"]["state:damaged"] = "state_unavailable"
    return state


def recovery_result(action: dict, error: dict, response_outcome: str) -> CoreResult:
    """An adapter-forced recovery (core.md 7.5, PARENT_LINK_DAMAGED): the core's
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
    """adapters.md 8.4: what Hermes and OpenCode say while a directive is rejected."""
    code = error.get("code") or "INVALID_DIRECTIVE"
    message = error.get("message") or "the directive could not be parsed"
    return ("Stop That Shit rejected the last $stop-that-shit directive (%s): %s The previous "
            "task contract still applies. Tools stay paused until the user sends a corrected "
            "directive." % (code, message.rstrip(".") + "."))


def _rejected_text(result: CoreResult) -> str:
    """The visible error for hosts that swallow a rejected input (Pi, Oh My Pi)."""
    return ("Stop That Shit rejected this directive: %s. The previous task contract still "
            "applies; correct the directive and send it again." % result.text.rstrip(". "))


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
        return {"name": name, "mutability": "unknown"}  # Hermes, Pi, OMP: no name fallback

    def _shell(self, name: str, tool_input: dict) -> dict:
        return shell_action(name, tool_input.get("command"))

    def _powershell(self, name: str, tool_input: dict) -> dict:
        return shell_action(name, tool_input.get("command"), powershell=True)

    def fields(self, session: str, root: str, **more: Any) -> dict:
        if session != root:
            more["sourceSessionId"] = session
        return more

    def before_call(self, name: str, session: str, root: str, action: dict,
                    call_id: Any, cwd: Any, store: Store, **more: Any) -> Optional[ShimCall]:
        """action.before for `root`; None when a delegate call has no id (adapters.md 1.1)."""
        if _is_text(call_id):
            action["id"] = call_id
        elif _needs_call_id(action):
            return None
        cwd = cwd if isinstance(cwd, str) and cwd else None
        if cwd:
            action["cwd"] = cwd
        if action.get("affectedPaths"):
            action["affectedPaths"] = normalize_paths(action["affectedPaths"], cwd)
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
    """OpenCode, Pi, Oh My Pi: the shims' wire protocol (adapters.md 2).

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


# --- Hermes Agent (adapters.md 8) ----------------------------------------------
# V4A patch headers: spaces after *** optional, at least one before File:.
_V4A_FILE_OPS = ("Update", "Add", "Delete", "Move")
_HERMES_DONE = frozenset(("completed", "failed", "error", "success"))
_HERMES_JOINED = frozenset(("completed", "failed", "error"))


def _v4a_paths(patch_text: Any) -> List[str]:
    """Paths named by a Hermes V4A patch, read the way Hermes' own parser reads
    them: `***`, optional blanks, Add/Update/Delete/Move, blanks, `File:`;
    Move names both sides of `A -> B`."""
    if not isinstance(patch_text, str):
        return []
    paths: List[str] = []
    for line in patch_text.split("\n"):
        if not line.startswith("***"):
            continue
        rest = line[3:].lstrip()
        word = next((w for w in _V4A_FILE_OPS if rest.startswith(w)), None)
        if word is None:
            continue
        tail = rest[len(word):]
        if tail[:1] not in (" ", "\t") or not tail.lstrip().startswith("File:"):
            continue
        target = tail.lstrip()[len("File:"):].strip()
        if word != "Move":
            if target:
                paths.append(target)
            continue
        source, arrow, dest = target.partition("->")
        if arrow and source.strip() and dest.strip():
            paths.extend((source.strip(), dest.strip()))
    return paths


def _added_lines(patch_text: str) -> str:
    return "\n".join(line[1:] for line in patch_text.splitlines()
                     if line.startswith("+") and not line.startswith("+++"))


def hermes_delegation_count(tool_input: Any) -> int:
    """adapters.md 8.3: tasks (array or its JSON text) else goal else 0."""
    if not isinstance(tool_input, dict):
        return 0
    tasks = tool_input.get("tasks")
    if isinstance(tasks, str):
        try:
            tasks = json.loads(tasks)
        except ValueError:
            return 0
        if not isinstance(tasks, list):
            return 0
    if isinstance(tasks, list) and tasks:
        return len(tasks)
    return 1 if _is_text(tool_input.get("goal")) else 0


def _sole_open_reservation(store: Store, root: str) -> Optional[str]:
    """The one delegation call that still has an unbound unit, else None.

    Hermes 0.19 background results carry no subagent ids, so nothing would
    ever bind a child to its delegate_task call and a finite budget would stay
    spent (adapters.md 8.5).  A child is bound only when exactly one call can
    own it; with two candidates nothing is guessed (never first-in-first-out).
    """
    reservations = store.load(session_key(root)).state["delegation"].get("reservations")
    open_keys = [key for key, item in (reservations or {}).items()
                 if isinstance(item, dict) and item.get("completionScope") != "call"
                 and isinstance(item.get("pendingCount"), int) and item["pendingCount"] > 0]
    return open_keys[0] if len(open_keys) == 1 else None


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
            return ""  # Hermes shows context on prompts only (adapters.md 8.4)
        if result.kind == "prompt-error":
            error = {"code": result.code, "message": result.text.partition(": ")[2] or result.text}
            return _json({"context": directive_pause_text(error)})
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

    # -- tools --
    def _write_file(self, name: str, tool_input: dict) -> dict:
        return file_write_action(name, tool_input.get("path"), tool_input.get("content"))

    def _patch(self, name: str, tool_input: dict) -> dict:
        if tool_input.get("mode") == "patch":
            text = tool_input.get("patch")
            if not isinstance(text, str):
                text = _first_text(tool_input, "patch_text", "content", "input") or ""
            paths = _v4a_paths(text)
            added = _added_lines(text)
            return {"name": name, "mutability": "write", "affectedPaths": paths,
                    "hashIntent": bool(added) and hash_intent_in_text(added, None),
                    "dependencyIntent": False}
        return file_write_action(name, tool_input.get("path"), tool_input.get("new_string"),
                                 tool_input.get("old_string"), whole_file=False)

    def _delegate(self, name: str, tool_input: dict) -> dict:
        verb = tool_input.get("action")
        if isinstance(verb, str) and verb.lower() in ("list", "steer", "stop"):
            return {"name": name, "mutability": "control", "delegationCount": 0}
        return {"name": name, "mutability": "delegate",
                "delegationCount": hermes_delegation_count(tool_input)}

    # -- events --
    def on_prompt(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        if session is None:
            return None
        try:
            root = self.resolve(payload, store)
        except _LinkDamaged as exc:
            text = "%s: %s" % (exc.error["code"], exc.error["message"])
            return ShimCall(name, None, answer=CoreResult("context", text), session_id=session)
        child = root != session or self.field(payload, "platform") == "subagent"
        if child:
            if root == session:
                return None  # an unlinked subagent: no root to speak for, and no authority
            # Model-written goal text: answer the root's contract, never parse it.
            event = self.envelope("session.start", root, sourceSessionId=session,
                                  host={"family": self.family})
            return ShimCall(name, event, session_id=session, root=root, store=store, child=True)
        prompt = self.field(payload, "user_message")
        if not isinstance(prompt, str):
            return None
        turn = self.field(payload, "turn_id") or self.extra(payload).get("parent_turn_id")
        event = self.envelope("prompt.submit", root, prompt=prompt, turnId=turn,
                              host={"family": self.family})
        return ShimCall(name, event, session_id=session, root=root, store=store)

    def on_pre_tool(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        session = self.session_of(payload)
        tool = payload.get("tool_name")
        if session is None or not _is_text(tool):
            return None
        call_id = self.field(payload, "tool_call_id")
        action = self.classify(tool, payload.get("tool_input"))
        try:
            root = self.resolve(payload, store)
        except _LinkDamaged as exc:
            return self.damaged_tool_call(name, session, action, call_id, exc.error)
        pending = _pending_directive_error(store, root)
        if pending:  # adapters.md 8.2: paused, without asking the core (not audited)
            return _block(name, directive_pause_text(pending), session, tool_call=True)
        return self.before_call(name, session, root, action, call_id, payload.get("cwd"), store,
                                turnId=self.field(payload, "turn_id"))

    def on_post_tool(self, payload: dict, store: Store, name: str) -> Optional[HookCall]:
        # Only delegation results carry ledger facts; others would cost a lock.
        session = self.session_of(payload)
        call_id = self.field(payload, "tool_call_id")
        if session is None or payload.get("tool_name") != "delegate_task" or not _is_text(call_id):
            return None
        try:
            root = self.resolve(payload, store)
        except _LinkDamaged:
            return None  # recovery: lifecycle facts are lost (core.md 7.5)
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
            # adapters.md 8.5: the child's own events must find the root contract.
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


# --- OpenCode (adapters.md 5) ---------------------------------------------------
_DIRECTIVE_HEADS = ("$stop-that-shit", "/skill:stop-that-shit")


def opencode_message_text(parts: Any) -> str:
    """adapters.md 1.6: text parts that are neither synthetic nor ignored, joined by \\n."""
    if not isinstance(parts, list):
        return ""
    texts = [p["text"] for p in parts
             if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
             and not p.get("synthetic") and not p.get("ignored")]
    return "\n".join(texts)


def unwrap_run_quoting(text: str) -> str:
    """adapters.md 5.7: `opencode run` wraps an argument holding spaces in double quotes.

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
    decides (adapters.md 5.1).  None means unknown (treated as editable).
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
    if isinstance(value, dict):  # REF's object form {edit: "deny"}
        edit = value.get("edit")
        if isinstance(edit, dict):
            edit = edit.get("*")
        if isinstance(edit, str):
            return edit != "deny"
    return None


def promote_editable_agent(store: Store, root: str, text: str, can_edit: Optional[bool]) -> bool:
    """OpenCode editable-agent promotion (adapters.md 5.1): review -> change, source host.

    Runs before the prompt itself is interpreted, so a correction in the same
    message ("review only") still wins.  Returns True when it promoted.
    """
    if can_edit is False or has_directive_mention(text):
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
        action = {"name": name, "mutability": fallback_mutability(name)}
        if action["mutability"] == "write":
            path = _first_text(tool_input, "filePath", "file_path", "path")
            if path:
                action["affectedPaths"] = [path]
        return action

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
        error = {"code": result.code, "message": result.text.partition(": ")[2] or result.text}
        return self._with_contract(directive_pause_text(error), call)

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
        if not isinstance(inner, dict) or not _is_text(inner.get("tool")):
            return None
        args = output.get("args") if isinstance(output, dict) else None
        action = self.classify(inner["tool"], args)
        try:
            session, root = self.session_and_root(payload, body, store, inner)
        except _LinkDamaged as exc:
            session = self.session_of(payload) or "unknown"
            return self.damaged_tool_call(name, session, action, inner.get("callID"), exc.error)
        if session is None:
            return None
        pending = _pending_directive_error(store, root)
        if pending:  # adapters.md 5.3: every tool call waits for a corrected directive
            return _block(name, directive_pause_text(pending), session, tool_call=True)
        return self.before_call(name, session, root, action, inner.get("callID"),
                                self.cwd_of(payload), store)

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
        """adapters.md 5.4: the child session id binds the call; background keeps it running."""
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
            # A child that went idle has finished its run (REF V1).
            stop = self.envelope("subagent.stop", root, agentId=session, sourceSessionId=session)
            return ShimCall(name, stop, render=False, session_id=session, root=root, store=store)
        return None  # session.created only stores the link; a deleted child never frees the root


# --- Pi (adapters.md 6) ---------------------------------------------------------
_PI_SKILL_FORM = "/skill:stop-that-shit"
_PI_ASYNC_FLAGS = ("async_launched", "asyncLaunched", "run_in_background", "runInBackground",
                   "background")


def _replace_skill_form(text: str) -> str:
    """Every /skill:stop-that-shit (any case) becomes $stop-that-shit (adapters.md 1.6)."""
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
    """adapters.md 6.2: (count, unbounded) for the example `subagent` extension."""
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
        return file_write_action(name, args.get("path"), args.get("content"))

    def _edit(self, name: str, args: dict) -> dict:
        path = args.get("path")
        edits = args.get("edits")
        pairs = [(e.get("oldText"), e.get("newText")) for e in edits if isinstance(e, dict)] \
            if isinstance(edits, list) else [(args.get("oldText"), args.get("newText"))]
        path_text = path if isinstance(path, str) else None
        added = "\n".join(new for _, new in pairs if isinstance(new, str))
        return {"name": name, "mutability": "write",
                "affectedPaths": [path_text] if path_text else [],
                "hashIntent": bool(added) and hash_intent_in_text(added, path_text),
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
        if event.get("source") == "extension" or not isinstance(text, str):
            return None  # text an extension injected is never user authority
        session = self.session_of(payload)
        if session is None:
            return None
        return self.prompt_call(name, payload, body, store, self.normalize_prompt(text),
                                session, session)

    def on_tool_call(self, payload: dict, body: dict, store: Store, name: str) -> Optional[HookCall]:
        event = self.event_of(body)
        tool = event.get("toolName")
        if not _is_text(tool):
            return None
        action = self.classify(tool, event.get("input"))
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
                                self.cwd_of(payload), store)

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


# --- Oh My Pi (adapters.md 7) ---------------------------------------------------
_OMP_HUB_OPS = {
    **{op: "read" for op in ("wait", "inbox", "list", "jobs", "ps", "logs", "describe")},
    "cancel": "control", "stop": "control",
}
_OMP_INPUT_SOURCES = frozenset(("interactive", "rpc"))
_OMP_PREFIXES = ("/sts", "--sts-contract")
_HASHLINE_OPS = ("PUT", "CUT", "REM", "MV")
_HEX = frozenset("0123456789abcdefABCDEF")


def _omp_directive_form(text: str) -> str:
    """OMP's `/sts <args>` and `--sts-contract <args>` mean `$stop-that-shit <args>`."""
    text = _replace_skill_form(text)
    stripped = text.lstrip()
    for prefix in _OMP_PREFIXES:
        if stripped.lower().startswith(prefix):
            rest = stripped[len(prefix):]
            if rest == "" or rest[0] in " \t\n=":
                return "$stop-that-shit" + (" " + rest[1:] if rest[:1] == "=" else rest)
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


def omp_task_shape(tool_input: Any) -> Tuple[int, bool]:
    """adapters.md 7.2: (count, unbounded) of an OMP `task` call."""
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
        "eval": "_spawner", "subagent": "_spawner",
    }

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

    # -- tools --
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
        return file_write_action(name, path, args.get("content"))

    def _edit(self, name: str, args: dict) -> dict:
        text = args.get("input") if isinstance(args.get("input"), str) else args.get("_input")
        paths: List[str] = []
        hash_hit = dependency_hit = False
        if isinstance(text, str):
            found, added = omp_edit_paths(text)
            summary = analyze_patch(text)  # the Codex-style transport
            paths = found + [p for p in summary.paths if p not in found]
            hash_hit = summary.hash_intent or (bool(added) and hash_intent_in_text(added, None))
            dependency_hit = summary.dependency_intent or (bool(added) and any(
                dependency_intent_in_change(p, "", added) for p in found))
        for key in ("path", "_path"):
            if _is_text(args.get(key)):
                paths.append(args[key])
        if isinstance(args.get("paths"), list):
            paths.extend(p for p in args["paths"] if _is_text(p))
        edits = args.get("edits")
        for entry in edits if isinstance(edits, list) else []:
            if not isinstance(entry, dict):
                continue
            if _is_text(entry.get("rename")):
                paths.append(entry["rename"])
            if entry.get("op") == "create" and isinstance(entry.get("diff"), str):
                target = args.get("path") if isinstance(args.get("path"), str) else None
                hash_hit = hash_hit or hash_intent_in_text(entry["diff"], target)
                dependency_hit = dependency_hit or dependency_intent_in_change(
                    target, None, entry["diff"])
        if isinstance(args.get("new_string"), str):
            target = args.get("path") if isinstance(args.get("path"), str) else None
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
        action = {"name": name, "mutability": _OMP_HUB_OPS.get(op, "unknown")}
        if op == "send" and not _is_text(args.get("name")):
            action["delegationLifecycleUnproven"] = True  # a message to an agent, not a process
        return action

    def _spawner(self, name: str, args: dict) -> dict:
        return {"name": name, "mutability": "unknown", "delegationLifecycleUnproven": True}

    # -- events --
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


ADAPTERS: Dict[str, Adapter] = {
    "codex": CodexAdapter(),
    "claude": ClaudeAdapter(),
}

STDIN_CAP = 8 * 1024 * 1024      # decisions.md 6: larger input is not parsed
_SCAN_CAP = 64 * 1024
# Host event names after which the host runs a tool (fail-closed candidates).
_TOOL_HOOK_NAMES = ("PreToolUse", "pre_tool_call", "tool.execute.before", "tool_call")

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
    """Armed by marker, or by a readable contract at guard/lock (core.md 10-C1)."""
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


def run_hook(host: str, raw: bytes, store: Optional[Store] = None) -> str:
    """One host event in, the host's answer out ('' = nothing).  Never raises."""
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
        return _unreadable_input(adapter, raw, store)
    if not text.strip():
        return _fail_open("EmptyInput", "no event on stdin")
    try:
        payload = json.loads(text)
    except ValueError as exc:
        return _fail_open("InvalidJSON", str(exc).split(":")[0])
    if not isinstance(payload, dict):
        return _fail_open("InvalidEvent", "the event is not a JSON object")
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
    except Exception as exc:  # noqa: BLE001 - the catch must live in sts.py (core.md 10-C1)
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


def _unreadable_input(adapter: Adapter, raw: bytes, store: Store) -> str:
    """decisions.md 6: deny only when the scanned session is armed and this is a tool hook."""
    session = _scan_for(raw, ("session_id", "sessionId"))
    hook = _scan_for(raw, ("hook_event_name", "hook"))
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
  codex | claude | hermes | opencode | pi | omp

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


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point for hooks and the CLI; returns the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help", "help"):
        (sys.stdout if args else sys.stderr).write(_USAGE)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command in ADAPTERS:
        try:
            answer = run_hook(command, _read_stdin())
        except Exception as exc:  # noqa: BLE001 - last resort: never a traceback in a hook
            answer = _fail_open(type(exc).__name__, "unexpected failure")
        if answer:
            sys.stdout.write(answer + "\n")
        return 0
    if command == "--version":
        sys.stdout.write("sts %s\n" % VERSION)
        return 0
    handler = _COMMANDS.get(command)
    if handler is None:
        sys.stderr.write("sts: unknown command %r (see --help)\n" % command)
        return 2
    return handler(rest)


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
}


if __name__ == "__main__":
    sys.exit(main())
