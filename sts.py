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
# (5.1).  `decide` is pure apart from resolving symlinks: state in, Decision out.
###############################################################################


@dataclass
class Decision:
    """The outcome of the ordered checks for one action.before."""

    outcome: str            # allow | report_and_defer | deny_and_explain | require_user_approval
    code: str               # reason code, e.g. MODE_FORBIDS_MUTATION
    family: Optional[str]   # I, H, S, T or None on allow
    detail: str = ""
    next: str = ""


FAMILY_WORDS: Dict[str, str] = {"I": "INTENT", "H": "HASH", "S": "SCOPE", "T": "THRASH"}

# Policy outcome -> the kind of core result the engine returns (core.md 3).
_DECISION_RESULT_KINDS: Dict[str, str] = {
    "allow": "none",
    "report_and_defer": "context",
    "deny_and_explain": "deny",
    "require_user_approval": "deny",
}

# The modes that authorize no repository change (checks 5 and 6).
_MUTATION_FREE_MODES = frozenset(("answer", "review", "monitor"))

# A command repeated this many times with no write in between is thrash
# (decisions.md 2).  The engine counts; `decide` only compares.
THRASH_REPEAT_LIMIT = 3


@dataclass(frozen=True)
class _DecisionRule:
    """How one reason code turns into an outcome, and what to do next.

    outcome names a rule of `_decision_outcome`: "allow", "always_deny",
    "always_defer", "ctl" (defer at watch, deny when armed), "ctl_approval"
    (defer at watch, approval when armed) or "ctl_policy" (like ctl, but
    approval when the governing policy is `ask`).
    """

    family: Optional[str]
    outcome: str
    next: str


# Reason code -> family, outcome rule and default Next wording.  The order of
# evaluation is `_DECISION_CHECKS` below; this table only says what a match means.
DECISION_RULES: Dict[str, _DecisionRule] = {
    "RECOVERY_READ_ONLY": _DecisionRule(None, "allow", ""),
    "STS_LOCK_DAMAGED": _DecisionRule(
        "I", "always_deny",
        "Follow the lock-recovery steps (stop every host using this data dir, then move only "
        "the lock aside); contracts and the delegation ledger are kept."),
    "STATE_DAMAGED": _DecisionRule(
        "I", "always_deny",
        "Restore a known-good backup of the session file or start a new host session; "
        "do not clear unresolved delegation records by hand."),
    "GUARD_SELF_PROTECTION": _DecisionRule(
        "I", "ctl",
        "Leave the guard's own files and data alone; if they really must change, the user "
        "should do it outside the agent (for example with `sts.py uninstall`)."),
    "CONTROL_INACTIVE": _DecisionRule(None, "allow", ""),
    "INVALID_DIRECTIVE": _DecisionRule(
        "S", "ctl", "Have the user fix the reported directive field before delegating."),
    "LIFECYCLE_PROTOCOL_REQUIRED": _DecisionRule(
        "S", "ctl",
        "Upgrade the adapter and the runtime together; reads and writes keep working meanwhile."),
    "MODE_FORBIDS_MUTATION": _DecisionRule(
        "I", "ctl",
        "Report what you found, use a read-only action, or ask the user for a change contract."),
    "MUTABILITY_UNPROVEN": _DecisionRule(
        "I", "ctl_approval",
        "Use a command that is plainly read-only, or ask the user for a change contract."),
    "HASH_NOT_AUTHORIZED": _DecisionRule(
        "H", "ctl_policy",
        "Use a direct alternative, or get `hash=allow` from the user naming who consumes the "
        "hash, what cost it replaces and which decision it changes."),
    "HYPOTHETICAL_UNREACHABLE": _DecisionRule(
        "H", "always_defer",
        "Defer this hardening unless evidence shows the input or state is reachable."),
    "WRITE_PATH_UNPROVEN": _DecisionRule(
        "S", "ctl_approval",
        "Use a patch or edit tool whose paths are visible, or ask the user to approve a "
        "broader boundary."),
    "PATH_OUTSIDE_CONTRACT": _DecisionRule(
        "S", "ctl", "Stay inside the declared files= boundary, or ask the user for a new one."),
    "DEPENDENCY_NOT_AUTHORIZED": _DecisionRule(
        "S", "ctl_policy",
        "Keep to the existing stack, or get `deps=allow` from the user for this dependency."),
    "UNBOUNDED_DELEGATION": _DecisionRule(
        "S", "ctl",
        "Delegate a bounded batch instead, or have the user switch the guard off for this "
        "workflow."),
    "DUPLICATE_ACTION_ID": _DecisionRule(
        "S", "ctl", "Give every delegation call its own id."),
    "DELEGATION_STATE_UNPROVEN": _DecisionRule(
        "S", "ctl",
        "Wait until that call is confirmed complete, or continue in a new host session."),
    "DELEGATION_LIFECYCLE_UNPROVEN": _DecisionRule(
        "S", "ctl",
        "Start a new delegation call instead; messaging and resuming agents stay available "
        "when no finite agent limit is set."),
    "AGENT_BUDGET_EXHAUSTED": _DecisionRule(
        "S", "ctl", "Wait for a delegated call to complete, or ask the user to raise agents=N."),
    "UNAPPROVED_SCOPE_EXPANSION": _DecisionRule(
        "S", "ctl_approval", "Report it, defer it, or get the user's explicit approval first."),
    "STATE_BUSY": _DecisionRule(
        "S", "ctl", "Retry the call in a moment; another hook holds the session state."),
    "REPEATED_WITHOUT_CHANGE": _DecisionRule(
        "T", "always_defer",
        "Change something (code, input or approach) before running it again, or report "
        "what blocks you."),
    "WITHIN_CONTRACT": _DecisionRule(None, "allow", ""),
}

_BUDGET_NEXT_UNKNOWN = (
    "Collect a supported completion result for the earlier delegation first; its outcome "
    "is unknown, so its units stay reserved.")


def family_word(family: Optional[str]) -> str:
    """INTENT, HASH, SCOPE or THRASH for a family letter (`-` when there is none)."""
    return FAMILY_WORDS.get(family or "", "-")


def outcome_result_kind(outcome: str) -> str:
    """"none", "context" or "deny": what the core returns for a policy outcome."""
    return _DECISION_RESULT_KINDS.get(outcome, "none")


def _decision_armed(contract: dict) -> bool:
    # Kept local rather than via control_state so the decision never depends
    # on another section's reading of the invariant.
    return contract.get("level") in ("guard", "lock") and contract.get("mode") != "unconfirmed"


# Outcome rule -> (outcome at watch, outcome when armed).  "ctl_policy" is
# resolved first: approval when the governing policy is `ask`, else plain ctl.
_DECISION_OUTCOMES: Dict[str, Tuple[str, str]] = {
    "allow": ("allow", "allow"),
    "always_deny": ("deny_and_explain", "deny_and_explain"),
    "always_defer": ("report_and_defer", "report_and_defer"),
    "ctl": ("report_and_defer", "deny_and_explain"),
    "ctl_approval": ("report_and_defer", "require_user_approval"),
}


def _decision_outcome(rule: str, armed: bool, policy: Optional[str] = None) -> str:
    if rule == "ctl_policy":
        rule = "ctl_approval" if policy == "ask" else "ctl"
    return _DECISION_OUTCOMES[rule][1 if armed else 0]


def _decision_for(code: str, armed: bool, detail: str = "",
                  next_text: Optional[str] = None, policy: Optional[str] = None) -> Decision:
    rule = DECISION_RULES[code]
    return Decision(_decision_outcome(rule.outcome, armed, policy), code, rule.family, detail,
                    rule.next if next_text is None else next_text)


_STATE_BUSY_DETAIL = ("Another hook holds the session state lock, so the agent limit cannot be "
                      "checked for this delegation.")


def state_busy_decision(contract: Optional[dict] = None) -> Decision:
    """STATE_BUSY (core.md 10-C2): the lock wait ran out for a delegation change.

    The engine calls this only for a delegation-changing action.before under a
    finite budget; the call is neither evaluated nor reserved.  Without the
    contract the guard is taken as armed, since a finite budget was seen.
    """
    if contract is None:
        return _decision_for("STATE_BUSY", True, _STATE_BUSY_DETAIL)
    if contract.get("level") == "off":
        return Decision("allow", "CONTROL_INACTIVE", None)
    return _decision_for("STATE_BUSY", _decision_armed(contract), _STATE_BUSY_DETAIL)


# ---- files= matching (core.md 4.3, 10-P1, P2, P4) --------------------------


def _files_win_abs(text: str) -> bool:
    return ((len(text) >= 3 and text[1] == ":" and text[0].isascii() and text[0].isalpha()
             and text[2] in "\\/") or text.startswith("\\\\"))


def _files_normalize(path: str) -> str:
    # Node's path.posix.normalize: unlike posixpath.normpath it keeps a
    # trailing "/" and collapses a leading "//" (10-P1).
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
    """One path or pattern in the form that core.md 4.3 compares."""
    text = raw.strip()
    windows = _files_win_abs(text)
    path = text.replace("\\", "/")
    base = cwd.strip() if cwd is not None else None
    if base and windows and _files_win_abs(base):
        import ntpath
        try:
            path = ntpath.relpath(path, base).replace("\\", "/")
        except ValueError:
            pass  # other drive: Node keeps the absolute target (10-P1)
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


def _resolve_for_boundary(paths: List[str], patterns: List[str],
                          cwd: Optional[str]) -> Tuple[List[str], List[str], Optional[str]]:
    """Physical paths, patterns and cwd for matching (10-P4).

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
            return list(paths), list(patterns), cwd
        relative_to = _files_realpath(anchor)
    else:
        return list(paths), list(patterns), cwd

    def resolve_path(raw: str) -> str:
        text = raw.strip()
        if not text or not _files_native(text):
            return raw
        if os.path.isabs(text):
            resolved = _files_realpath(text)
            return _files_keep_slash(text, resolved)
        resolved = _files_realpath(os.path.join(anchor, text))
        if relative_to is not None:
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

    return ([resolve_path(p) for p in paths], [resolve_pattern(p) for p in patterns],
            real_cwd)


def _files_covers(pattern: str, path: str) -> bool:
    if pattern == "**" or pattern == path:
        return True
    if pattern.endswith("/**"):
        stem = pattern[:-3]
        return path == stem or path.startswith(stem + "/")
    return False


def boundary_waives_paths(patterns: List[str], cwd: Optional[str] = None) -> bool:
    """True when a pattern normalizes to `**`, so no visible path is needed (10-P2)."""
    return any(_boundary_form(p, cwd) == "**" for p in patterns)


def paths_outside(paths: List[str], patterns: List[str], cwd: Optional[str] = None, *,
                  resolve: bool = True) -> List[str]:
    """The affected paths (as given) that lie outside `files=` patterns (core.md 4.3).

    With resolve=True symlinks and `..` in the existing part of each path and
    of cwd are resolved first (10-P4); resolve=False is the reference's purely
    lexical reading.
    """
    if resolve:
        real_paths, real_patterns, real_cwd = _resolve_for_boundary(paths, patterns, cwd)
    else:
        real_paths, real_patterns, real_cwd = list(paths), list(patterns), cwd
    cwd_windows = cwd is not None and _files_win_abs(cwd.strip())
    forms = [(_files_win_abs(p.strip()), _boundary_form(p, real_cwd)) for p in real_patterns]
    outside = []
    for raw, real in zip(paths, real_paths):
        path_windows = _files_win_abs(raw.strip())
        target = _boundary_form(real, real_cwd)
        inside = False
        for pattern_windows, pattern in forms:
            if cwd_windows or (path_windows and pattern_windows):
                inside = _files_covers(pattern.lower(), target.lower())
            else:
                inside = _files_covers(pattern, target)
            if inside:
                break
        if not inside:
            outside.append(raw)
    return outside


# ---- self-protection (decisions.md 3) --------------------------------------


def _tamper_target(raw: str, cwd: Optional[str]) -> Optional[str]:
    text = raw.strip()
    if not text:
        return None
    path = os.path.expanduser(text)
    if not os.path.isabs(path):
        base = os.path.expanduser(cwd.strip()) if cwd and cwd.strip() else None
        if base is None:
            try:
                base = os.getcwd()
            except OSError:
                return None
        path = os.path.join(base, path)
    return _files_realpath(path)


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


def protected_hits(action: Action, protected_paths: Any) -> List[str]:
    """Paths of `action` (affected or shell write targets) inside a protected root."""
    # Targets are compared physically, so the roots must be too; the engine
    # may hand over a data dir reached through a symlink (/var on macOS).
    roots = [_files_realpath(os.path.expanduser(r)) for r in protected_paths if r]
    if not roots:
        return []
    hits = []
    for raw in list(action.affected_paths) + list(action.shell_write_targets):
        target = _tamper_target(raw, action.cwd)
        if target is None:
            continue
        folded = target.casefold()
        for root in roots:
            if _tamper_within(target, root) or (_tamper_within(folded, root.casefold())
                                                and _tamper_case_insensitive(root)):
                hits.append(raw)
                break
    return hits


# ---- the ordered checks (core.md 4.2) --------------------------------------


class _DecisionFacts:
    """Prepared inputs of core.md 4.1, shared by the checks."""

    def __init__(self, action: Action, state: dict, action_id: Optional[str], declared: bool,
                 storage_error: Optional[dict], protected_paths: Any,
                 thrash_repeats: int) -> None:
        self.action = action
        self.state = state
        self.contract = state.get("contract") or {}
        self.mode = self.contract.get("mode")
        self.armed = _decision_armed(self.contract)
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


_CheckHit = Optional[Tuple[str, Optional[str], Optional[str]]]  # detail, next override, policy


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
    hits = protected_hits(f.action, f.protected_paths)
    if hits:
        return ("This call would change the guard's own code, configuration or data: %s."
                % ", ".join(hits), None, None)
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
    # 10-L3: the embedded message ends with its own period; avoid "..".
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


def _when_write_path(f: _DecisionFacts) -> _CheckHit:
    if (f.allowed is not None and f.action.mutability in ("write", "unknown")
            and not f.action.affected_paths
            and not boundary_waives_paths(f.allowed, f.action.cwd)):
        return ("The target path is not proven to be inside the files= boundary.", None, None)
    return None


def _when_outside(f: _DecisionFacts) -> _CheckHit:
    if f.allowed is None or not f.action.affected_paths:
        return None
    outside = paths_outside(f.action.affected_paths, f.allowed, f.action.cwd)
    if outside:
        return ("The call writes outside the declared boundary: %s." % ", ".join(outside),
                None, None)
    return None


def _when_dependency(f: _DecisionFacts) -> _CheckHit:
    policy = f.contract.get("dependencyPolicy")
    if f.action.dependency_intent and policy != "allow":
        return ("The call adds a dependency while the contract says deps=%s." % policy,
                None, policy)
    return None


def _when_unbounded(f: _DecisionFacts) -> _CheckHit:
    # decisions.md 10: only a finite budget makes an unbounded fan-out a
    # problem; under the unlimited default it is admitted as unresolved.
    if f.delegate and f.action.unbounded_delegation and f.finite:
        return ("The fan-out of this delegation has no bound, so agents=%d cannot hold "
                "deterministically." % f.budget, None, None)
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


# First match decides.  1a/1b, then self-protection (decisions.md 3), then
# core.md 4.2 steps 2-17, thrash (decisions.md 2), and step 18.
_DECISION_CHECKS: Tuple[Tuple[str, Callable[[_DecisionFacts], _CheckHit]], ...] = (
    ("RECOVERY_READ_ONLY", _when_recovery_read),           # 1a
    ("STS_LOCK_DAMAGED", _when_lock_damaged),              # 1b, lock
    ("STATE_DAMAGED", _when_state_damaged),                # 1b, anything else
    ("GUARD_SELF_PROTECTION", _when_tamper),
    ("CONTROL_INACTIVE", _when_inactive),                  # 2
    ("INVALID_DIRECTIVE", _when_invalid_directive),        # 3
    ("LIFECYCLE_PROTOCOL_REQUIRED", _when_legacy),         # 4
    ("MODE_FORBIDS_MUTATION", _when_mode_write),           # 5
    ("MUTABILITY_UNPROVEN", _when_mode_unknown),           # 6
    ("HASH_NOT_AUTHORIZED", _when_hash),                   # 7
    ("HYPOTHETICAL_UNREACHABLE", _when_unreachable),       # 8
    ("WRITE_PATH_UNPROVEN", _when_write_path),             # 9
    ("PATH_OUTSIDE_CONTRACT", _when_outside),              # 10
    ("DEPENDENCY_NOT_AUTHORIZED", _when_dependency),       # 11
    ("UNBOUNDED_DELEGATION", _when_unbounded),             # 12
    ("DUPLICATE_ACTION_ID", _when_duplicate),              # 13
    ("DELEGATION_STATE_UNPROVEN", _when_state_unproven),   # 14
    ("DELEGATION_LIFECYCLE_UNPROVEN", _when_lifecycle_unproven),  # 15
    ("AGENT_BUDGET_EXHAUSTED", _when_budget),              # 16
    ("UNAPPROVED_SCOPE_EXPANSION", _when_expansion),       # 17
    ("REPEATED_WITHOUT_CHANGE", _when_thrash),
    ("WITHIN_CONTRACT", _when_within),                     # 18
)


def decide(action: Action, state: dict, *, action_id: Optional[str], declared: bool,
           storage_error: Optional[dict] = None, protected_paths: Tuple[str, ...] = (),
           thrash_repeats: int = 0) -> Decision:
    """Run the ordered checks of core.md 4.2 against `state` (schema 4 dict).

    storage_error: {"code", "message"} when the session is in read-only
    recovery (core.md 7.5); `state` is then the recovery state.
    protected_paths: resolved absolute roots the agent must not write
    (decisions.md 3); any sequence of strings.
    thrash_repeats: runs in a row of this same command with no write in
    between, this call included (decisions.md 2); from THRASH_REPEAT_LIMIT
    on, the call is reported.
    """
    facts = _DecisionFacts(action, state, action_id, declared, storage_error,
                           protected_paths, thrash_repeats)
    for code, check in _DECISION_CHECKS:
        hit = check(facts)
        if hit is not None:
            detail, next_text, policy = hit
            if DECISION_RULES[code].outcome == "allow":
                return Decision("allow", code, None, detail, "")
            return _decision_for(code, facts.armed, detail, next_text, policy)
    raise AssertionError("WITHIN_CONTRACT always matches")


# ---- the STOP / WATCH message (core.md 5.1) --------------------------------

_DECISION_RESPONSE_LINES: Dict[str, str] = {
    "context": "The guard returned context and did not deny the call.",
    "execution_denial_returned": "The guard denied the call before it ran.",
    "deny": "The guard answered with a permission deny.",
}


def decision_message(decision: Decision, *, state_label: str, mode: str,
                     response_outcome: str, event_id: Optional[str]) -> str:
    """The multi-line STOP/WATCH message of core.md 5.1.

    state_label is OFF, OBSERVING or ARMED for the contract the decision used
    (recovery shows ARMED / review); event_id is None when the audit failed.
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
    if decision.next:
        lines.append("Next: " + decision.next)
    return "\n".join(lines)


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


_RESERVATION_PREFIX = "reservation:"
UNIDENTIFIED_ACTION_ID = "legacy:unidentified"
REUSED_ACTION_ID = "reused_action_id"


def ledger_summary(delegation: dict, action_id: Optional[str] = None) -> LedgerSummary:
    """Reserved upper bound, unresolved reasons, unknown results, duplicate id (core.md 6.1)."""
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
    """Whether admission must run under the session lock (core.md 4.1)."""
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
    """Record an accepted delegation-changing action (core.md 6.2).

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
    """All of core.md 6.2 after `decide`; True when the ledger must be written.

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
    """Move one pending unit of reservation `key` to child `agent_id` (core.md 6.3 Bind)."""
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
    """A child stopped (core.md 6.3 Release); idempotent."""
    if not agent_id:
        return
    key = _ledger_bound_in(ledger, agent_id)
    if key is not None:
        ledger["reservations"][key]["agentIds"].remove(agent_id)
        _ledger_drop_if_spent(ledger, key)
    _ledger_add_unique(ledger["stoppedAgentIds"], agent_id)


def _ledger_reservation_key(ledger: dict, event: ControlEvent, raw: str) -> Optional[str]:
    # reservationId names the delegating call; accept the stored key form
    # too, and the child-namespaced id (core.md 1.5).
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
    """Apply action.after / subagent.* / session.end facts; True when changed (core.md 6.3).

    Undeclared (legacy) events carry no trustworthy facts (core.md 1.4) and
    change nothing.
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
