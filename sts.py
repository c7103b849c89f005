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
#
# Every edit is planned first (path, old bytes, new bytes), so --dry-run and
# the real run share one code path, and a file is only written when its bytes
# change: that is what makes a second install a no-op.  JSON is edited by
# splicing text at spans found by a small scanner, so the user's formatting of
# everything else survives byte for byte.  TOML (Codex) and YAML (Hermes) get
# only the few insertions whose safety can be checked line by line; anything
# else is left to the user, with the exact lines to add, and doctor checks them.
###############################################################################

# Events and hook timeouts per command-hook host.  Tool hooks get 10 s, the rest
# 5 s (adapters.md 2.3); matchers as adapters.md 3.6 and 4.6 prescribe.
_CODEX_POST_MATCHER = ("^(spawn_agent|wait_agent|Agent|multi_agent_v1wait_agent|"
                       "collaborationspawn_agent|collaborationwait_agent)$")
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
}

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


# The per-host table: where the user and project layers live (adapters.md 3.6,
# 4.6, 5.6, 6.6, 7.6, 8.7) and what install writes there.  "config" is the JSON
# hooks file for command-hook hosts; shim hosts use _SHIM_FILES instead.
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
    "omp": lambda sid, cwd: {"v": 1, "hook": "before_agent_start", "sessionId": sid, "cwd": cwd,
                             "payload": {"event": {"type": "before_agent_start", "prompt": "",
                                                   "systemPrompt": []},
                                         "ctx": {"idle": True, "hasUI": False, "sessionFile": None,
                                                 "parentSessionId": None}}},
}

# Hosts whose hook may answer with empty stdout; the JS shims need one JSON object.
_SILENT_OK = frozenset(("codex", "claude", "hermes"))

_PIN_MARK = "sts install rewrites this line"
_SHIM_NAME = "stop-that-shit"
_OPENCODE_PLUGIN_PKG = "@opencode-ai/plugin"
_OPENCODE_PLUGIN_VERSION = "1.18.33"  # the version the host kit verified offline


class InstallError(Exception):
    """A clear, user-facing reason why install/uninstall stopped; nothing was written for it."""


class _Manual(Exception):
    """An edit sts cannot prove safe; the user gets the exact lines instead."""


# --------------------------------------------------------------- the command


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
    """The hook command as argv (decisions.md 1): the import form, so bytecode is reused."""
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
    """The import-form hook command (decisions.md 1) for this copy of sts.py, as one
    shell-quoted string (Codex and Claude run it with sh -c; Hermes shlex-splits it)."""
    return " ".join(_sh_quote(w) for w in hook_argv(host, python, sts_path))


# --------------------------------------------------------------- JSON splicing
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


def _hook_group(host: str, event: str, matcher: Optional[str], timeout: int,
                command: str) -> dict:
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
    if hooks is None:
        value = {ev: [_hook_group(host, ev, m, t, command)] for ev, m, t in events}
        return _json_set_member(text, (), "hooks", value), ["hooks"] + ["hooks." + e for e in value]
    if not isinstance(hooks, dict):
        raise InstallError('%s: "hooks" is not a JSON object; it was left unchanged.' % path)
    known = [command] + old_commands
    for ev, matcher, timeout in events:
        want = _hook_group(host, ev, matcher, timeout, command)
        groups = hooks.get(ev)
        if groups is None:
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
        want = _hook_group(host, ev, matcher, timeout, command)
        if not isinstance(groups, list) or want not in groups:
            missing.append(ev)
    if missing:
        return False, "%s lacks the sts hook for %s" % (path, ", ".join(missing))
    return True, "%s runs sts on %d events" % (path, len(_HOOK_EVENTS[host]))


# --------------------------------------------------------------- Codex TOML
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


# --------------------------------------------------------------- Hermes YAML
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


# --------------------------------------------------------------- shims


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


# --------------------------------------------------------------- planning


@dataclass
class _Change:
    path: str
    old: Optional[bytes]
    new: Optional[bytes]  # None: delete the file


@dataclass
class _Plan:
    host: str
    scope: str
    base: str
    changes: List[_Change] = field(default_factory=list)
    files: Dict[str, dict] = field(default_factory=dict)   # record per path
    notes: List[str] = field(default_factory=list)
    manual: List[str] = field(default_factory=list)        # lines the user must add
    dirs: List[str] = field(default_factory=list)          # folders install creates


def _read(path: str) -> Optional[bytes]:
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
    import hashlib
    return hashlib.sha256(data).hexdigest()


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
        raw = _read(cfg)
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
        plan.notes.append(_CODEX_TRUST_NOTE)
        if scope == "project":
            plan.notes.append(
                "Codex reads %s only for trusted projects: trust %s in Codex (it asks on first "
                "start), or add to %s:\n  [projects.%s]\n  trust_level = \"trusted\""
                % (os.path.join(base, "hooks.json"), _project_root(),
                   os.path.join(_HOSTS["codex"]["user"](), "config.toml"),
                   json.dumps(_project_root(), ensure_ascii=False)))
    for src, dst in _SHIM_FILES.get(host, ()):
        source = os.path.join(_shims_dir(), *src.split("/"))
        raw_src = _read(source)
        if raw_src is None:
            raise InstallError("the shim %s is missing; install needs the host_shims/ folder "
                               "that ships next to sts.py." % source)
        new = _pin_shim(dst, _text(source, raw_src), _sts_path()).encode("utf-8")
        dest = os.path.join(base, *dst.split("/"))
        old = _read(dest)
        if old is not None and old != new and _PIN_MARK.encode() not in old:
            raise InstallError("%s exists and is not an sts shim; move it away and run install "
                               "again." % dest)
        _change(plan, dest, old, new)
        rec = dict(prior.get(dest) or {"type": "file", "created_file": old is None})
        rec["sha256"] = _sha(new)
        plan.files[dest] = rec
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


_CODEX_TRUST_NOTE = (
    "Codex runs only hooks you trust, and skips untrusted ones without a word. sts does not "
    "trust them silently, because trust is Codex's consent step for code it will run. To trust "
    "exactly the sts hooks, run `python3 sts.py install codex --trust`: it asks `codex "
    "app-server` to list the hooks and marks only the sts ones as trusted, with the hash Codex "
    "itself computes. Or start `codex` and approve them when it asks. Re-trust after every "
    "install that changes the command; `python3 sts.py doctor` says when.")


def _plan_codex_features(plan: _Plan, toml: str, prior: Dict[str, dict]) -> None:
    raw = _read(toml)
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
    offline) unless node_modules/ exists and package-lock.json lists it (adapters.md 5.6).
    sts seeds both only into a folder that has none of them, so it never edits npm's files."""
    pkg, lock, mods = (os.path.join(base, n) for n in ("package.json", "package-lock.json",
                                                      "node_modules"))
    seed = os.path.join(mods, ".sts-seed")
    if any(p in prior for p in (pkg, lock, seed)):
        for p in (pkg, lock, seed):
            if p in prior:
                plan.files[p] = prior[p]
        return
    lock_raw = _read(lock)
    if lock_raw is not None and _OPENCODE_PLUGIN_PKG.encode() in lock_raw and os.path.isdir(mods):
        return
    if lock_raw is not None or _read(pkg) is not None or os.path.exists(mods):
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
    raw = _read(cfg)
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
    for path, rec in files.items():
        raw = _read(path)
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


# --------------------------------------------------------------- applying


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
    """Temp file beside the target, then rename; a symlinked config keeps its link."""
    import stat
    real = os.path.realpath(path)
    tmp = "%s.sts-tmp-%d" % (real, os.getpid())
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        mode = None
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


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


# --------------------------------------------------------------- installed.json
#
# decisions.md 3: the self-protection check protects every path listed under
# "paths".  "installs" keeps, per host, scope and folder, what install did, so
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


def installed_paths(root: Optional[str] = None) -> List[str]:
    """Paths install wrote (shims and changed host configs), for self-protection."""
    path = os.path.join(root or data_dir(), "installed.json")
    try:
        with open(path, encoding="utf-8") as fh:
            paths = json.load(fh).get("paths")
    except (OSError, ValueError, AttributeError):
        return []
    return [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []


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


# --------------------------------------------------------------- Codex trust


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


# --------------------------------------------------------------- commands


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
            if not (host == "codex" and opts.get("--trust") and note is _CODEX_TRUST_NOTE):
                out.write("note: %s\n" % note)
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


# --------------------------------------------------------------- doctor


def _probe(host: str, command: str) -> Tuple[bool, str]:
    """Run the installed command the way the host does, with a harmless event, against
    a throwaway STS_HOME: it must exit 0 and print nothing or one JSON object."""
    import shlex
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix="sts-doctor-") as tmp:
        env = dict(os.environ, STS_HOME=os.path.join(tmp, "state"))
        event = _PROBE_EVENTS[host]("sts-doctor-" + os.urandom(6).hex(), tmp)
        # Codex and Claude hand the command to sh -c; Hermes and the shims split it.
        argv = ["/bin/sh", "-c", command] if host in _HOOK_EVENTS else shlex.split(command)
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
            if pinned == _sts_path():
                check("OK", host, "shim %s points at this sts.py" % dest)
            elif pinned:
                check("FAIL", host, "shim %s points at %s, not this sts.py" % (dest, pinned), fix_s)
            else:
                check("FAIL", host, "shim %s is missing or not an sts shim" % dest, fix_s)
        if host == "codex":
            _doctor_codex(base, scope, command, fix_s, check)
    if host == "hermes":
        _doctor_hermes(command, fix, check)
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


def _doctor_hermes(command: str, fix: str, check: Callable[..., None]) -> None:
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
