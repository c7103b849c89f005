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

# Public interface (what adapters call):
#   analyze_shell(command, shell)      -> ShellAnalysis (read only when proven)
#   analyze_patch(text, v4a=False)     -> PatchSummary (paths, added text, intents)
#   hash_intent_in_text(added, path, removed_text=None)
#   dependency_intent_in_change(path, old, new), manifest_kind(path)
# Trust boundary (analysis.md 5.6): configuration and session state (git
# config such as core.fsmonitor or diff.external, .ripgreprc, PATH,
# aliases and functions defined earlier in a persistent shell) are not
# seen here; commands that change them are reported as state_change.


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


_MAX_COMMAND = 64 * 1024  # decisions.md 8
_MAX_DEPTH = 32
_RANK = {"read": 0, "unknown": 1, "write": 2}
_RE_CACHE: Dict[str, Any] = {}


def _rx(key: str, pattern: str, flags: int = 0) -> Any:
    """Compile on first use: most hook runs never need a given pattern."""
    rx = _RE_CACHE.get(key)
    if rx is None:
        import re
        rx = _RE_CACHE[key] = re.compile(pattern, flags)
    return rx


class _Give(Exception):
    """Raised anywhere inside the analyzer to stop with a non-read verdict."""

    def __init__(self, reason: str, mut: str = "unknown") -> None:
        Exception.__init__(self, reason)
        self.reason = reason
        self.mut = mut


class _V:
    """Verdict of one simple command (or of a whole line once combined)."""

    __slots__ = ("mut", "reason", "targets", "hash", "dep")

    def __init__(self, mut: str = "read", reason: Optional[str] = None,
                 targets: Optional[List[str]] = None, hash_: bool = False,
                 dep: bool = False) -> None:
        self.mut = mut
        self.reason = reason
        self.targets = targets if targets is not None else []
        self.hash = hash_
        self.dep = dep

    def join(self, other: "_V") -> "_V":
        """Worst verdict wins; the reason is the first one at that level."""
        if _RANK[other.mut] > _RANK[self.mut]:
            self.mut, self.reason = other.mut, other.reason
        elif other.mut == self.mut and self.reason is None:
            self.reason = other.reason
        self.targets.extend(other.targets)
        self.hash = self.hash or other.hash
        self.dep = self.dep or other.dep
        return self

    def cap(self, reason: str) -> "_V":
        """A wrapper we cannot see through: a write stays a write, a read becomes unknown."""
        if self.mut == "read":
            self.mut, self.reason = "unknown", reason
        return self


def _read() -> _V:
    return _V()


def _unknown(reason: str = "shell_command_unproven") -> _V:
    return _V("unknown", reason)


def _write(targets: Optional[List[str]] = None, reason: Optional[str] = None) -> _V:
    return _V("write", reason, list(targets or []))


# ---------------------------------------------------------------- words ----


class _W:
    """One shell word after quote removal.

    text is the static value (dynamic pieces stand as NUL).  dyn: holds an
    expansion; split: an unquoted expansion that may split into several
    words; glob: unquoted pattern or brace characters; lead: the first
    character is a static literal other than '-', so whatever the word
    expands to cannot be taken for an option.
    """

    __slots__ = ("text", "dyn", "split", "glob", "lead", "quoted")

    def __init__(self, text: str, dyn: bool = False, split: bool = False, glob: bool = False,
                 lead: bool = True, quoted: bool = False) -> None:
        self.text = text
        self.dyn = dyn
        self.split = split
        self.glob = glob
        self.lead = lead
        self.quoted = quoted

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


_STDIN_ITEM = _W("\0", dyn=True, split=True, lead=False)  # what xargs/find feed in


class _Cmd:
    __slots__ = ("words", "assigns", "redirs", "stdin", "stdin_literal")

    def __init__(self) -> None:
        self.words: List[_W] = []
        self.assigns: List[Tuple[str, _W]] = []
        self.redirs: List[Tuple[str, Optional[_W]]] = []
        self.stdin: Optional[str] = None   # heredoc body
        self.stdin_literal = False         # the delimiter was quoted: no expansion in the body

    def empty(self) -> bool:
        return not (self.words or self.assigns or self.redirs)


# ---------------------------------------------------------- characters ----

# NUL, C0 controls other than TAB/LF/CR, DEL, C1 (NEL included), Unicode
# spaces other than U+0020, bidi controls and zero-width characters: shells
# and terminals disagree about them, so they are refused outright (5.3).
_BAD_CHARS = ("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00a0\u1680\u2000-\u200f"
              "\u2028-\u202f\u205f-\u206f\u3000\ufeff\u061c]")


def _has_bad_char(text: str) -> bool:
    return _rx("bad", _BAD_CHARS).search(text) is not None


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


# ------------------------------------------------------------ bash parser ----

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


class _Bash:
    """A recursive-descent reader for the POSIX/bash subset of analysis.md 5.3.

    It never executes or expands anything: every simple command, including
    those inside substitutions, subshells and compound commands, is
    collected flat in `items`; the line is read only if each one is.
    """

    def __init__(self, src: str, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise _Give("analysis_limit")
        self.s = src
        self.n = len(src)
        self.i = 0
        self.depth = depth
        self.items: List[Any] = []   # _Cmd or a ready _V
        self.heredocs: List[Tuple[str, bool, bool, _Cmd]] = []

    # -- driver ---------------------------------------------------------
    def parse(self) -> List[Any]:
        self._list(None, 0)
        if self.heredocs:
            raise _Give("shell_syntax_unproven")
        return self.items

    def _list(self, closer: Optional[str], nest: int) -> None:
        """Read commands until `closer` (')' or '`' handled by callers) or the end."""
        s, n = self.s, self.n
        cmd = _Cmd()
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
                self.i += 1
                self._finish(cmd)
                cmd = _Cmd()
                self._read_heredocs()
                had_cmd = had_cmd and need_cmd
                at_start = True
                continue
            if c == ")":
                if closer != ")" or need_cmd:
                    raise _Give("shell_syntax_unproven")
                self.i += 1
                self._finish(cmd)
                return
            if c == "(":
                if not cmd.empty() or not at_start:
                    raise _Give("shell_syntax_unproven")
                if s.startswith("((", self.i):
                    raise _Give("shell_syntax_unproven")
                if nest + 1 > _MAX_DEPTH or self.depth + nest + 1 > _MAX_DEPTH:
                    raise _Give("analysis_limit")
                self.i += 1
                self._list(")", nest + 1)
                # Redirections may follow the group; words may not.
                cmd = _Cmd()
                at_start = False
                had_cmd, need_cmd = True, False
                continue
            if c in ";&|":
                op = self._operator()
                if op in ("&>", "&>>"):
                    self._redirection(cmd, op)
                    at_start = False
                    continue
                if op == ";;" or op == ";&" or op == ";;&":
                    raise _Give("shell_syntax_unproven")
                if cmd.empty() and not had_cmd:
                    raise _Give("shell_syntax_unproven")
                self._finish(cmd)
                cmd = _Cmd()
                had_cmd = False
                need_cmd = op in ("|", "||", "&&", "|&")
                at_start = True
                continue
            if c in "<>" or (c.isdigit() and self._fd_redirect_ahead()):
                op = self._redir_op()
                self._redirection(cmd, op)
                at_start = False
                continue
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
            if at_start and not word.quoted and word.static:
                text = word.text
                if text in _RESERVED_SKIP:
                    if not cmd.empty():
                        raise _Give("shell_syntax_unproven")
                    had_cmd = text in ("}", "fi", "done")
                    need_cmd = text in ("!", "if", "then", "elif", "else", "do", "while",
                                        "until", "{")
                    continue
                if text in _RESERVED_REFUSE:
                    raise _Give("shell_syntax_unproven")
                if text == "for":
                    self._for_header()
                    need_cmd, had_cmd = False, True
                    continue
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

    def _finish(self, cmd: _Cmd) -> None:
        if not cmd.empty():
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
            self.i += 1
            self._nested(")")
            if kind == ">":
                # The inner commands are collected; what they do with the data is unproven.
                self.items.append(_unknown("shell_syntax_unproven"))
            cmd.words.append(_W("/dev/fd/63", dyn=True, lead=True))
            return
        while self.i < self.n and self.s[self.i] in " \t":
            self.i += 1
        if self.s.startswith(("<(", ">("), self.i):
            # Output into a process substitution: the inner commands are
            # collected; what they do with the data is not proven.
            self.i += 2
            self._nested(")")
            self.items.append(_unknown("shell_syntax_unproven"))
            return
        if kind in ("<<", "<<-"):
            word = self._word()
            if word.dyn:
                raise _Give("shell_syntax_unproven")
            self.heredocs.append((word.text, word.quoted, kind == "<<-", cmd))
            cmd.redirs.append((fd + kind, None))
            return
        if self.i >= self.n or self.s[self.i] in _META:
            raise _Give("shell_syntax_unproven")
        word = self._word()
        cmd.redirs.append((fd + kind, word))

    def _read_heredocs(self) -> None:
        """Consume pending heredoc bodies after a newline; bodies are data, never commands."""
        s = self.s
        pending, self.heredocs = self.heredocs, []
        for delim, quoted, strip, owner in pending:
            body: List[str] = []
            while True:
                if self.i >= self.n:
                    raise _Give("shell_syntax_unproven")
                end = s.find("\n", self.i)
                if end < 0:
                    end = self.n
                line = s[self.i:end]
                self.i = min(end + 1, self.n)
                check = line.lstrip("\t") if strip else line
                if check == delim:
                    break
                if not quoted and ("`" in line or "$(" in line or "${" in line or "$[" in line):
                    raise _Give("shell_syntax_unproven")
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
        if not name.static or not _is_name(name.text):
            raise _Give("shell_syntax_unproven")
        while True:
            while self.i < self.n and s[self.i] in " \t":
                self.i += 1
            if self.i >= self.n or s[self.i] in ";\n":
                return
            if s[self.i] in _META:
                raise _Give("shell_syntax_unproven")
            self._word()  # the list; nested substitutions are collected as commands

    def _nested(self, closer: str) -> None:
        if self.depth + 1 > _MAX_DEPTH:
            raise _Give("analysis_limit")
        self.depth += 1
        try:
            self._list(closer, 0)
        finally:
            self.depth -= 1

    # -- words ------------------------------------------------------------
    def _word(self) -> _W:
        s, n = self.s, self.n
        out: List[str] = []
        dyn = split = glob = quoted = False
        lead: Optional[bool] = None   # decided by the first character
        brace = False

        def first(is_literal: bool, ch: str) -> None:
            nonlocal lead
            if lead is None:
                lead = is_literal and ch != "-"

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
                d = self._dquote(out, first)
                dyn = dyn or d
                continue
            if c == "$":
                nxt = s[self.i + 1] if self.i + 1 < n else ""
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
        return _W(text, dyn=dyn, split=split, glob=glob, lead=lead, quoted=quoted)

    def _dquote(self, out: List[str], first: Callable[[bool, str], None]) -> bool:
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
                    dyn = True
                    continue
            if c == "`":
                self._backtick()
                first(False, "")
                out.append("\0")
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
                end = s.find("))", i + 3)
                if end < 0 or any(ch not in _ARITH_OK for ch in s[i + 3:end]):
                    raise _Give("shell_syntax_unproven")
                self.i = end + 2
                return True
            self.i = i + 2
            self._nested(")")
            return True
        if nxt == "{":
            end = s.find("}", i + 2)
            body = s[i + 2:end] if end > 0 else ""
            if end < 0 or not body or any(ch not in _PARAM_OK for ch in body):
                raise _Give("shell_syntax_unproven")
            self.i = end + 1
            return True
        if nxt == "[":
            raise _Give("shell_syntax_unproven")
        if nxt and (nxt in _NAME_START):
            j = i + 1
            while j < n and s[j] in _NAME_CHARS:
                j += 1
            self.i = j
            return True
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            self.i = i + 2
            return True
        return False

    def _backtick(self) -> None:
        end = self.s.find("`", self.i + 1)
        if end < 0:
            raise _Give("shell_syntax_unproven")
        body = self.s[self.i + 1:end]
        if "\\" in body:
            raise _Give("shell_syntax_unproven")
        self.i = end + 1
        sub = _Bash(body, self.depth + 1)
        sub.items = self.items
        sub.parse()


# ---------------------------------------------------------- classification ----

_DEV_SINKS = frozenset(("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1",
                        "/dev/fd/2"))
_BIN_DIRS = frozenset(("/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin",
                       "/opt/homebrew/bin", "/usr/local/sbin"))
# Prefix assignments that only change presentation (5.3); anything else
# (GIT_*, LESSOPEN, LD_PRELOAD, PATH...) can change what a program does.
_SAFE_ENV = frozenset(("LANG", "LANGUAGE", "TZ", "NO_COLOR", "TERM", "COLUMNS", "LINES",
                       "CLICOLOR", "CLICOLOR_FORCE", "FORCE_COLOR", "GREP_COLOR", "GREP_COLORS",
                       "RIPGREP_CONFIG_PATH", "TIME_STYLE", "POSIXLY_CORRECT"))
_SAFE_PAGERS = frozenset(("cat", ""))


def _env_ok(name: str, value: _W) -> bool:
    if name.startswith("LC_") or name in _SAFE_ENV:
        return name != "RIPGREP_CONFIG_PATH" or value.text == ""
    if name in ("PAGER", "GIT_PAGER", "MANPAGER"):
        return value.static and value.text in _SAFE_PAGERS
    return False


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
    __slots__ = ("depth", "shell")

    def __init__(self, depth: int, shell: str) -> None:
        self.depth = depth
        self.shell = shell

    def deeper(self) -> "_Ctx":
        if self.depth + 1 > _MAX_DEPTH:
            raise _Give("analysis_limit")
        return _Ctx(self.depth + 1, self.shell)


def _classify_cmd(cmd: _Cmd, ctx: _Ctx) -> _V:
    v = _V()
    for op, target in cmd.redirs:
        v.join(_redir_verdict(op, target))
    env_capped = False
    for name, value in cmd.assigns:
        if not _env_ok(name, value):
            env_capped = True
    if not cmd.words:
        if cmd.assigns:
            return v.join(_unknown("state_change"))
        return v
    inner = _classify_argv(cmd.words, ctx)
    if cmd.stdin is not None:
        inner = _stdin_program(cmd, inner, ctx)
    if env_capped:
        inner.cap("state_change")
    v.join(inner)
    if v.mut == "write" and v.targets:
        content = _written_text(cmd)
        for t in v.targets:
            # A write straight into a manifest can add a dependency...
            if manifest_kind(t) is not None and not v.dep:
                v.dep = _redirect_dep(cmd, t)
            # ...and code written through the shell can add hashing.
            if content and not v.hash and _langs_for(t) is not None:
                v.hash = hash_intent_in_text(content, t)
    if cmd.stdin and _cmd_name(cmd) in ("apply_patch", "applypatch"):
        patch = analyze_patch(cmd.stdin)
        v.targets.extend(patch.paths)
        v.hash = v.hash or patch.hash_intent
        v.dep = v.dep or patch.dependency_intent
    return v


_STDIN_SHELLS = frozenset(("bash", "sh", "zsh", "dash", "ksh"))
_STDIN_CODE = {"python": "x.py", "python3": "x.py", "node": "x.js", "ruby": "x.rb", "perl": None,
               "php": "x.php", "deno": "x.ts", "bun": "x.js"}


def _stdin_program(cmd: _Cmd, verdict: _V, ctx: _Ctx) -> _V:
    """A heredoc fed to a shell is a script we can read; fed to an interpreter, code to scan."""
    name = _cmd_name(cmd)
    body = cmd.stdin or ""
    if name in _STDIN_SHELLS and all(w.static and w.text in ("-s", "-e", "-x", "-u", "-eu",
                                                             "-ex", "-eux", "-")
                                     for w in cmd.words[1:]):
        if not cmd.stdin_literal and "$" in body:
            return verdict     # the body is expanded before the shell reads it
        return _analyze_bash(body, ctx.deeper())
    if name in _STDIN_CODE:
        verdict.hash = verdict.hash or hash_intent_in_text(body, _STDIN_CODE[name])
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


def _redirect_dep(cmd: _Cmd, target: str) -> bool:
    """Dependency intent of text written into a manifest by echo/printf redirection."""
    words = cmd.words
    name = _program_name(words[0]) if words else None
    redirected = any(w is not None and w.static and w.text == target for _, w in cmd.redirs)
    if not redirected and name in _NO_CONTENT_WRITERS:
        return False   # removing, touching or restoring a manifest adds nothing
    text = _written_text(cmd)
    if text is not None:
        return dependency_intent_in_change(target, None, text)
    return True


def _redir_verdict(op: str, target: Optional[_W]) -> _V:
    kind = op.lstrip("0123456789")
    if target is None or kind in ("<", "<<<"):
        return _read()
    if kind in ("<&", ">&"):
        if target.static and (target.text == "-" or target.text.isdigit()):
            return _read()
        if kind == "<&":
            raise _Give("shell_syntax_unproven")
    if target.static and target.text in _DEV_SINKS:
        return _read()
    targets = [target.text] if target.static else []
    return _write(targets, "shell_redirection")


_UNICODE_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"


def _version_only(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if len(args) == 1 and args[0].static and args[0].text in ("--version", "-V", "-v",
                                                              "version", "-version"):
        return _read()
    return _unknown()


def _classify_argv(words: List[_W], ctx: _Ctx) -> _V:
    if not words:
        return _read()
    name = _program_name(words[0])
    if name is None:
        if words[0].static and words[0].text.lower().endswith(("/rm", "/rmdir", "/mv", "/cp")):
            return _write()
        return _unknown("shell_command_unproven" if words[0].static else "shell_syntax_unproven")
    handler = _PROGRAMS.get(name)
    args = words[1:]
    if any(w.text and w.text[0] in _UNICODE_DASHES for w in args):
        return _unknown()   # looks like an option to a reader, is not one to the program
    if handler is None:
        if name in _WRITERS:
            return _write(_writer_targets(name, args))
        return _unknown()
    return handler(name, args, ctx)


# ------------------------------------------------------- generic options ----

class _OptSpec:
    """GNU-style option model: short flags, short options with a value, long options."""

    __slots__ = ("short", "short_val", "long", "deny", "permute")

    def __init__(self, short: str = "", short_val: str = "", long: Optional[Dict[str, int]] = None,
                 deny: Optional[Dict[str, str]] = None, permute: bool = True) -> None:
        self.short = short
        self.short_val = short_val
        self.long = long or {}         # name -> 0 flag, 1 needs a value, 2 optional "=value"
        self.deny = deny or {}         # option -> "write" | "exec"
        self.permute = permute         # False: options end at the first operand (xxd)


def _resolve_long(spec: _OptSpec, name: str) -> Optional[str]:
    if name in spec.long:
        return name
    hits = [k for k in spec.long if k.startswith(name)]
    return hits[0] if len(hits) == 1 else None


def _parse_opts(args: List[_W], spec: _OptSpec) -> Tuple[Optional[_V], List[_W], List[Tuple[str, Optional[_W]]]]:
    """Walk GNU-style arguments.

    Returns (failure verdict or None, operands, [(option, value)]).  Options
    may follow operands (GNU permutes); an opaque word in option position
    is refused because it could turn into any option.
    """
    operands: List[_W] = []
    seen: List[Tuple[str, Optional[_W]]] = []
    i, n = 0, len(args)
    dd = False
    while i < n:
        w = args[i]
        i += 1
        if dd:
            operands.append(w)
            continue
        if w.opaque:
            return _unknown("shell_syntax_unproven"), operands, seen
        t = w.text
        if t == "--":
            dd = True
            continue
        if t == "-" or not t.startswith("-"):
            operands.append(w)
            dd = not spec.permute
            continue
        if t.startswith("--"):
            key, eq, val = t[2:].partition("=")
            canon = _resolve_long(spec, key)
            if canon is None:
                return _unknown(), operands, seen
            arity = spec.long[canon]
            value: Optional[_W] = None
            if eq:
                if arity == 0:
                    return _unknown(), operands, seen
                value = _lit(val)
            elif arity == 1:
                if i >= n:
                    return _unknown("option_value_missing"), operands, seen
                value = args[i]
                i += 1
            seen.append((canon, value))
            continue
        j = 1
        while j < len(t):
            ch = t[j]
            if ch in spec.short_val:
                rest = t[j + 1:]
                if rest:
                    seen.append((ch, _lit(rest)))
                elif i < n:
                    seen.append((ch, args[i]))
                    i += 1
                else:
                    return _unknown("option_value_missing"), operands, seen
                break
            if ch not in spec.short:
                return _unknown(), operands, seen
            seen.append((ch, None))
            j += 1
    return None, operands, seen


def _apply_deny(spec: _OptSpec, seen: List[Tuple[str, Optional[_W]]]) -> Optional[_V]:
    out: Optional[_V] = None
    for opt, value in seen:
        effect = spec.deny.get(opt)
        if effect is None:
            continue
        if effect == "write":
            v = _write([value.text] if value is not None and value.static else [])
        else:
            v = _unknown("shell_execution_option")
        out = v if out is None else out.join(v)
    return out


def _spec_program(spec: _OptSpec, max_operands: Optional[int] = None,
                  write_operand: Optional[int] = None) -> Callable[[str, List[_W], _Ctx], _V]:
    def handler(name: str, args: List[_W], ctx: _Ctx) -> _V:
        fail, operands, seen = _parse_opts(args, spec)
        if fail is not None:
            return fail
        denied = _apply_deny(spec, seen)
        if denied is not None:
            return denied
        if write_operand is not None and len(operands) > write_operand:
            w = operands[write_operand]
            if not (w.static and (w.text == "-" or w.text in _DEV_SINKS)):
                return _write([w.text] if w.static else [])
        if max_operands is not None and len(operands) > max_operands:
            return _unknown()
        return _read()
    return handler


def _inert(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """No argument of these programs can write or run anything."""
    return _V(hash_=name in _HASH_PROGRAMS)


# ------------------------------------------------------------- writers ----

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
}


def _writer_targets(name: str, args: List[_W]) -> List[str]:
    """Paths a writer provably modifies; unknown shapes give none (the verdict stays write)."""
    valued = _VALUED_WRITER_OPTS.get(name)
    if name == "dd":
        return [w.text[3:] for w in args if w.static and w.text.startswith("of=")]
    if valued is None:
        return []
    operands: List[str] = []
    target_dir: Optional[str] = None
    i, dd = 0, False
    while i < len(args):
        w = args[i]
        i += 1
        t = w.text
        if not dd and t == "--":
            dd = True
            continue
        if not dd and t.startswith("-") and t != "-":
            if t.startswith("--"):
                if t.startswith("--target-directory="):
                    target_dir = t.split("=", 1)[1]
                elif t in ("--target-directory", "--reference", "--suffix", "--mode",
                           "--owner", "--group", "--date", "--size") and i < len(args):
                    if t == "--target-directory":
                        target_dir = args[i].text
                    i += 1
                continue
            letters = t[1:]
            for k, ch in enumerate(letters):
                if ch in valued:
                    if k == len(letters) - 1 and i < len(args):
                        if ch == "t":
                            target_dir = args[i].text
                        i += 1
                    elif ch == "t":
                        target_dir = letters[k + 1:]
                    break
            continue
        if w.static:
            operands.append(t)
        else:
            operands.append("")
    if name in ("chmod", "chown", "chgrp") and operands:
        operands = operands[1:]
    if name in ("cp", "mv", "ln", "install"):
        if target_dir is not None:
            return [target_dir]
        if len(operands) >= 2:
            operands = operands[-1:]
        elif name == "ln" and operands:
            return []
        else:
            return []
    return [t for t in operands if t]


# ------------------------------------------------------------ wrappers ----

def _payload(args: List[_W], ctx: _Ctx) -> _V:
    return _classify_argv(args, ctx.deeper())


def _skip_wrapper_opts(args: List[_W], flags: str, valued: str,
                       long_valued: Tuple[str, ...] = (), long_flags: Tuple[str, ...] = ()) -> Optional[int]:
    """Index of the payload after the wrapper's own options, or None if unsure."""
    i = 0
    while i < len(args):
        w = args[i]
        if w.opaque or not w.static:
            return None
        t = w.text
        if t == "--":
            return i + 1
        if not t.startswith("-") or t == "-":
            return i
        if t.startswith("--"):
            key = t.split("=", 1)[0]
            if key in long_valued:
                i += 1 if "=" in t else 2
                continue
            if key in long_flags:
                i += 1
                continue
            return None
        j = 1
        while j < len(t):
            if t[j] in valued:
                i += 1 if j + 1 < len(t) else 2
                break
            if t[j] not in flags:
                return None
            j += 1
        else:
            i += 1
    return i


def _w_transparent(flags: str = "", valued: str = "", long_valued: Tuple[str, ...] = (),
                   long_flags: Tuple[str, ...] = (), numeric_first: bool = False,
                   capped: Optional[str] = None) -> Callable[[str, List[_W], _Ctx], _V]:
    def handler(name: str, args: List[_W], ctx: _Ctx) -> _V:
        if name in ("nice",) and args and args[0].static and args[0].text[1:].isdigit() \
                and args[0].text.startswith("-"):
            args = args[1:]
        start = _skip_wrapper_opts(args, flags, valued, long_valued, long_flags)
        if start is None:
            return _unknown()
        rest = args[start:]
        if numeric_first:
            if not rest or not rest[0].static:
                return _unknown()
            rest = rest[1:]
        if not rest:
            return _read() if capped is None else _unknown(capped)
        v = _payload(rest, ctx)
        return v.cap(capped) if capped else v
    return handler


def _w_command(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if args and args[0].static and args[0].text in ("-v", "-V"):
        return _read()
    rest = args
    while rest and rest[0].static and rest[0].text in ("-p", "--"):
        rest = rest[1:]
    return _payload(rest, ctx) if rest else _read()


def _w_env(name: str, args: List[_W], ctx: _Ctx) -> _V:
    capped = False
    i = 0
    while i < len(args):
        w = args[i]
        if w.opaque:
            return _unknown("shell_syntax_unproven")
        t = w.text
        if t in ("-i", "--ignore-environment", "-0", "--null", "-"):
            i += 1
        elif t in ("-u", "--unset", "-C", "--chdir"):
            i += 2
        elif t.startswith(("--unset=", "--chdir=")) or (t.startswith(("-u", "-C")) and len(t) > 2):
            i += 1
        elif t == "--":
            i += 1
            break
        elif t.startswith("-"):
            return _unknown()
        elif "=" in t and _is_name(t.split("=", 1)[0]):
            key, _, val = t.partition("=")
            if not _env_ok(key, _lit(val)):
                capped = True
            i += 1
        else:
            break
    rest = args[i:]
    if not rest:
        return _read()
    v = _payload(rest, ctx)
    return v.cap("state_change") if capped else v


def _w_xargs(name: str, args: List[_W], ctx: _Ctx) -> _V:
    start = _skip_wrapper_opts(
        args, flags="0rtxpo", valued="nLPsdEaI",
        long_valued=("--max-args", "--max-procs", "--max-chars", "--delimiter", "--arg-file",
                     "--eof", "--max-lines", "--replace"),
        long_flags=("--null", "--no-run-if-empty", "--verbose", "--exit", "--interactive",
                    "--open-tty", "--process-slot-var"))
    if start is None:
        return _unknown()
    replace = None
    for k, w in enumerate(args[:start]):
        if w.text == "-I" and k + 1 < start:
            replace = args[k + 1].text
        elif w.text.startswith("-I") and len(w.text) > 2:
            replace = w.text[2:]
    rest = list(args[start:]) or [_lit("echo")]
    if replace:
        rest = [rest[0]] + [_STDIN_ITEM if replace in w.text else w for w in rest[1:]]
    else:
        rest.append(_STDIN_ITEM)
    return _payload(rest, ctx)


def _shell_flags_ok(flag: str) -> bool:
    return flag.startswith("-") and all(ch in "eulxc" for ch in flag[1:])


def _w_sh(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """bash -c STRING: the string is parsed as its own line."""
    if len(args) == 1 and args[0].static and args[0].text in ("--version", "-version"):
        return _read()
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
        return _unknown("shell_syntax_unproven")
    return _analyze_bash(code.text, ctx.deeper())


def _w_eval(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if not all(w.static for w in args):
        return _unknown("shell_syntax_unproven")
    return _analyze_bash(" ".join(w.text for w in args), ctx.deeper())


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
            i += 2
            continue
        if t in ("-command", "-c") and i + 1 < len(args):
            rest = args[i + 1:]
            if not all(x.static for x in rest):
                return _unknown("shell_syntax_unproven")
            return _analyze_powershell(" ".join(x.text for x in rest), ctx.deeper())
        if t in ("-encodedcommand", "-enc", "-e", "-ec") and i + 1 < len(args):
            import binascii
            try:
                code = binascii.a2b_base64(args[i + 1].text).decode("utf-16-le")
            except (ValueError, UnicodeDecodeError):
                return _unknown("shell_syntax_unproven")
            return _analyze_powershell(code, ctx.deeper())
        if t in ("-version", "--version", "-v"):
            return _read()
        return _unknown()
    return _unknown()


def _w_cmd(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if args and args[0].static and args[0].text.lower() in ("/c", "/k"):
        rest = args[1:]
        if rest and all(x.static for x in rest):
            return _analyze_cmd(" ".join(x.text for x in rest), ctx.deeper())
    return _unknown()


def _w_sudo(name: str, args: List[_W], ctx: _Ctx) -> _V:
    start = _skip_wrapper_opts(args, flags="EHnkSAbP", valued="ugCDhprtT",
                               long_valued=("--user", "--group", "--chdir"),
                               long_flags=("--preserve-env", "--non-interactive"))
    if start is None or start >= len(args):
        return _unknown()
    return _payload(args[start:], ctx).cap("shell_command_unproven")


# ----------------------------------------------------------------- git ----

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
_GIT_TARGET_SUBS = frozenset(("checkout", "restore", "rm", "mv", "add", "stage"))

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
            return _unknown("shell_syntax_unproven")
        t = w.text
        if t == "--":
            break
        if not t.startswith("-") or t == "-":
            continue
        if t.startswith("--"):
            key, eq, val = t[2:].partition("=")
            if key in deny:
                if deny[key] == "write":
                    value = val if eq else (args[i].text if i < n else "")
                    return _write([value] if value else [], "git_output_file")
                return _unknown("shell_execution_option")
            arity = longs.get(key)
            if arity is None:
                return _unknown("git_arguments_unproven")
            if eq and arity == 0:
                return _unknown("git_arguments_unproven")
            if not eq and arity == 1:
                if i >= n:
                    return _unknown("option_value_missing")
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
            return _unknown("shell_execution_option")
        if ch in short_val:
            if len(t) == 2 or (ch == "n" and not t[2:].isdigit() and len(t) > 2):
                if len(t) > 2:
                    return _unknown("git_arguments_unproven")
                if i >= n:
                    return _unknown("option_value_missing")
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
            return _unknown("git_arguments_unproven")
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
    """git branch: listing is read, creation/deletion/moves are writes (1.3)."""
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
    return _read()


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
    return _read()


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
        return _read()
    if operands and operands[0] in ("set", "unset", "rename-section", "remove-section", "edit"):
        return _write()
    if reading or len(operands) == 1:
        return _read()
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


def _git_action(sub: str, args: List[_W]) -> _V:
    reads, writes = _GIT_READ_ACTIONS[sub]
    action = args[0].text if args else ""
    if sub == "reflog" and action.startswith("-"):
        return _git_rev(args)
    if args and not args[0].static:
        return _unknown("shell_syntax_unproven")
    if action in writes:
        return _write()
    if action not in reads:
        if action.startswith("-") and "" in reads and sub in ("remote",):
            return _read() if all(w.text in ("-v", "--verbose") for w in args) else \
                _unknown("git_arguments_unproven")
        return _unknown("git_arguments_unproven")
    if sub == "reflog":
        return _git_rev(args[1:] if action else args)
    for w in args[1:]:
        if w.opaque or (w.text.startswith("-") and w.text not in ("-v", "--verbose",
                                                                   "--recursive", "-n")):
            return _unknown("git_arguments_unproven")
    return _read()


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
    return _read()


def _git_targets(sub: str, args: List[_W]) -> List[str]:
    if sub not in _GIT_TARGET_SUBS:
        return []
    words = [w for w in args if w.static]
    if "--" in [w.text for w in words]:
        k = [w.text for w in words].index("--")
        return [w.text for w in words[k + 1:]]
    if sub in ("restore", "rm", "add", "stage"):
        return [w.text for w in words if not w.text.startswith("-")]
    if sub == "mv":
        ops = [w.text for w in words if not w.text.startswith("-")]
        return ops
    return []


def _git(name: str, args: List[_W], ctx: _Ctx) -> _V:
    i, n = 0, len(args)
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
            i += 2
        elif t in ("--version", "-v"):
            return _read() if i + 1 == n else _unknown("git_arguments_unproven")
        else:
            break
    if i >= n:
        return _unknown("git_arguments_unproven")
    sub_w = args[i]
    sub = sub_w.text
    rest = args[i + 1:]
    if sub.startswith("-"):
        return _unknown("git_arguments_unproven")
    if sub in _GIT_WRITE_SUBS:
        return _write(_git_targets(sub, rest))
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
    elif sub == "format-patch":
        v = _read() if any(w.text == "--stdout" for w in rest) else _write()
    elif sub == "archive":
        if any(w.text.startswith(("--remote", "--exec")) for w in rest):
            v = _unknown("shell_execution_option")
        elif any(w.text.startswith(("--output", "-o")) for w in rest):
            v = _write()
        else:
            v = _unknown("git_arguments_unproven")
    elif sub == "symbolic-ref":
        v = _read() if len([w for w in rest if not w.text.startswith("-")]) <= 1 else _write()
    else:
        return _unknown("git_arguments_unproven")
    return v


# ----------------------------------------------------------- ripgrep ----

_RG_VALUED = frozenset((
    "regexp", "file", "pre-glob", "dfa-size-limit", "encoding", "engine", "max-count",
    "regex-size-limit", "threads", "glob", "iglob", "ignore-file", "max-depth", "max-filesize",
    "type", "type-not", "type-add", "type-clear", "after-context", "before-context", "color",
    "colors", "context", "context-separator", "field-context-separator",
    "field-match-separator", "hyperlink-format", "max-columns", "path-separator", "replace",
    "sort", "sortr", "generate",
))


def _rg(name: str, args: List[_W], ctx: _Ctx) -> _V:
    """ripgrep accepts options anywhere; only --pre and --hostname-bin run programs (1.4)."""
    i, n = 0, len(args)
    while i < n:
        w = args[i]
        i += 1
        if w.opaque:
            return _unknown("shell_syntax_unproven")
        t = w.text
        if t == "--":
            break
        if not t.startswith("-") or t == "-":
            continue
        if t.startswith("--"):
            key, eq, _ = t[2:].partition("=")
            if key in ("pre", "hostname-bin"):
                return _unknown("shell_execution_option")
            if key in _RG_VALUED and not eq:
                if i >= n:
                    return _unknown("option_value_missing")
                if args[i].opaque:
                    return _unknown("shell_syntax_unproven")
                i += 1
            continue
        for k, ch in enumerate(t[1:]):
            if ch in "efEmjgdtTABCMr":
                if k == len(t) - 2:
                    if i >= n:
                        return _unknown("option_value_missing")
                    if args[i].opaque:
                        return _unknown("shell_syntax_unproven")
                    i += 1
                break
    return _read()


# --------------------------------------------------------------- find ----

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
    while i < n and not args[i].opaque and not args[i].text.startswith("-") \
            and args[i].text not in ("!", "(", ")", ","):
        i += 1   # starting points
    while i < n:
        w = args[i]
        i += 1
        if not w.static and not (w.glob and w.lead):
            return _unknown("shell_syntax_unproven")
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
            target = [args[i].text] if k and i < n and args[i].static else []
            result.join(_write(target))
            i += k
            continue
        if t in _FIND_EXEC:
            j = i
            while j < n and not (args[j].static and args[j].text in (";", "+")):
                j += 1
            if j >= n:
                return _unknown("shell_syntax_unproven")
            payload = [(_STDIN_ITEM if "{}" in a.text else a) for a in args[i:j]]
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
        return _unknown()
    return result


def _fd(name: str, args: List[_W], ctx: _Ctx) -> _V:
    for w in args:
        if w.opaque:
            return _unknown("shell_syntax_unproven")
        t = w.text
        if t == "--":
            break
        if t.startswith(("--exec", "-x", "-X")) or (t.startswith("-") and not t.startswith("--")
                                                    and ("x" in t or "X" in t)):
            return _unknown("shell_execution_option")
    return _read()


# ---------------------------------------------------------------- sed ----

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
            while j < n and s[j] not in ";\n":
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


_SED_SPEC = _OptSpec(
    short="nrEsuz", short_val="elf",
    long={"quiet": 0, "silent": 0, "expression": 1, "file": 1, "in-place": 2, "line-length": 1,
          "null-data": 0, "zero-terminated": 0, "regexp-extended": 0, "separate": 0,
          "sandbox": 0, "unbuffered": 0, "posix": 0, "debug": 0, "follow-symlinks": 0,
          "help": 0, "version": 0, "binary": 0})


def _sed(name: str, args: List[_W], ctx: _Ctx) -> _V:
    # -i takes an optional attached suffix, so handle it before the generic walk.
    inplace = False
    rest: List[_W] = []
    for w in args:
        t = w.text
        if w.static and t.startswith("-") and not t.startswith("--") and "i" in t[1:]:
            head = t[1:t.index("i", 1)]
            if all(ch in "nrEsuz" for ch in head):
                inplace = True
                if head:
                    rest.append(_lit("-" + head))
                continue
        if w.static and t.startswith("--") and len(t) > 2:
            key = t[2:].split("=", 1)[0]
            if key and "in-place".startswith(key) and not "file".startswith(key):
                inplace = True
                continue
        rest.append(w)
    fail, operands, seen = _parse_opts(rest, _SED_SPEC)
    scripts = [v for o, v in seen if o in ("e", "expression")]
    if any(o in ("f", "file") for o, _ in seen):
        return _unknown()
    if not scripts:
        if fail is not None and not inplace:
            return fail
        if not operands:
            return _unknown("shell_syntax_unproven") if not inplace else _write()
        scripts = [operands[0]]
        operands = operands[1:]
    if inplace:
        return _write([w.text for w in operands if w.static])
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
            return _unknown("shell_execution_option")
        if kind == "unknown":
            return _unknown()
        if kind == "write":
            verdict = "write"
    if verdict == "write":
        return _write([f for f in written if f and f not in _DEV_SINKS])
    return _read()


# ---------------------------------------------------------------- awk ----

def _awk_blank_regex(text: str) -> str:
    """Blank /regex/ literals; a '/' only opens one where an operand cannot end."""
    out = []
    prev = ""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and (prev == "" or prev in "(,~!{;&|\n"):
            j = i + 1
            while j < n and text[j] != "/" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if j < n and text[j] == "/":
                out.append("//")
                i = j + 1
                prev = "/"
                continue
        out.append(c)
        if c not in " \t":
            prev = c
        i += 1
    return "".join(out)


def _awk_program(code: str) -> str:
    """'read', 'write' (print/printf redirected to a file) or 'unknown'."""
    # Blank out string literals so their contents do not count.
    out = []
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == '"':
            j = i + 1
            while j < n and code[j] != '"':
                j += 2 if code[j] == "\\" else 1
            out.append('""')
            i = j + 1
            continue
        out.append(c)
        i += 1
    low = code.lower()
    for bad in ("system", "getline", "close", "fflush", "@", "extension", "load"):
        if bad in low:
            return "unknown"
    text = _awk_blank_regex("".join(out))
    if "|" in text.replace("||", ""):
        return "unknown"
    if ">" not in text:
        return "read"
    # A '>' inside a print/printf statement (outside parentheses) redirects output.
    for m in _rx("awkprint", r"\bprintf?\b").finditer(text):
        depth = 0
        for ch in text[m.end():]:
            if ch in ";}\n":
                break
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif ch == ">" and depth <= 0:
                return "write"
    return "read"


def _awk(name: str, args: List[_W], ctx: _Ctx) -> _V:
    i, n = 0, len(args)
    program: Optional[_W] = None
    while i < n:
        w = args[i]
        if not w.static:
            return _unknown("shell_syntax_unproven")
        t = w.text
        if t == "--":
            i += 1
            break
        if t in ("-F", "-v"):
            i += 2
            continue
        if t.startswith(("-F", "-v")) and len(t) > 2:
            i += 1
            continue
        if t in ("--version", "-V", "--help"):
            return _read()
        if t.startswith("-"):
            return _unknown()  # -f progfile, -i include, -E, --exec ...
        break
    if i >= n:
        return _unknown("shell_syntax_unproven")
    program = args[i]
    if not program.static:
        return _unknown("shell_syntax_unproven")
    kind = _awk_program(program.text)
    if kind == "write":
        return _write()
    if kind == "unknown":
        return _unknown("interpreter_code")
    return _read()


# ------------------------------------------------------- interpreters ----

_CODE_WRITES = ("open(", ".write", "write_text", "write_bytes", "remove(", "unlink", "rmtree",
                "rename(", "shutil.", "writefile", "appendfile", "rmsync", "mkdir", "fs.rm",
                "subprocess", "os.system", "child_process", "exec(", "spawn", "file.write",
                "fileutils", "system(", "`")


def _interp(lang: str) -> Callable[[str, List[_W], _Ctx], _V]:
    code_flags = {"python": ("-c",), "node": ("-e", "--eval", "-p", "--print"),
                  "perl": ("-e", "-E"), "ruby": ("-e",), "php": ("-r",),
                  "deno": ("eval",), "bun": ("-e", "--eval")}[lang]

    def handler(name: str, args: List[_W], ctx: _Ctx) -> _V:
        texts = [w.text for w in args]
        if len(args) == 1 and texts[0] in ("--version", "-V", "-v", "version"):
            return _read()
        if lang == "python" and len(args) >= 2 and texts[0] == "-m":
            mod = texts[1]
            if mod == "json.tool" and all(w.static for w in args[2:]):
                ops = [t for t in texts[2:] if not t.startswith("-")]
                if len(ops) >= 2:
                    return _write([ops[1]])
                return _read() if all(w.static and not w.glob for w in args[2:]) else _unknown()
            if mod == "pip":
                return _pip("pip", args[2:], ctx)
            if mod in ("venv", "ensurepip"):
                return _write()
            return _unknown()
        if lang == "perl" and any(t.startswith("-") and not t.startswith("--") and "i" in t
                                  and not t.startswith(("-I", "-e")) for t in texts):
            ops = [t for t in texts if not t.startswith("-")]
            return _write(ops[1:] if ops else [])
        for k, t in enumerate(texts):
            if t in code_flags or (lang == "perl" and t.startswith("-") and t[-1:] in "eE"
                                   and not t.startswith("--")):
                if k + 1 >= len(texts):
                    return _unknown("option_value_missing")
                code = args[k + 1]
                v = _unknown("interpreter_code")
                if code.static:
                    low = code.text.lower()
                    if any(p in low for p in _CODE_WRITES) and ("'w" in low or '"w' in low
                                                                or "'a" in low or '"a' in low
                                                                or "write" in low or "unlink" in low
                                                                or "remove" in low or "rm" in low):
                        v = _write()
                    path = {"python": "x.py", "node": "x.js", "bun": "x.js", "deno": "x.ts",
                            "ruby": "x.rb", "php": "x.php", "perl": None}[lang]
                    v.hash = hash_intent_in_text(code.text, path)
                return v
        return _unknown()
    return handler


# ------------------------------------------------------ package managers ----

_NPM_INSTALL = frozenset(("i", "in", "ins", "inst", "insta", "instal", "install", "isnt",
                          "isnta", "isntal", "isntall", "add"))
_NPM_RESTORE = frozenset(("ci", "clean-install", "ic", "install-clean", "isntall-clean",
                          "install-ci-test", "cit", "it", "install-test"))
_NPM_WRITE = frozenset(("uninstall", "remove", "rm", "r", "un", "unlink", "update", "up",
                        "upgrade", "udpate", "publish", "unpublish", "init", "create", "link",
                        "ln", "prune", "dedupe", "ddp", "version", "pack", "rebuild", "rb",
                        "deprecate", "dist-tag", "owner", "access", "login", "logout", "adduser",
                        "star", "unstar", "cache", "set", "import", "patch", "shrinkwrap"))
_NPM_READ = frozenset(("ls", "list", "la", "ll", "view", "v", "info", "show", "outdated",
                       "explain", "why", "help", "root", "prefix", "bin", "search", "s", "find",
                       "docs", "bugs", "repo", "fund", "doctor", "ping", "whoami", "licenses",
                       "config-get", "query", "sbom", "audit"))
_NPM_EXEC = frozenset(("exec", "x", "dlx", "npx", "bunx"))
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
        return _read()
    if name in ("npx", "bunx", "pnpx"):
        return _V("unknown", "shell_command_unproven", dep=True)
    verb, rest, is_global = _pm_verb(args)
    if verb is None:
        if name in ("yarn",) and not args:
            return _write()   # bare `yarn` installs what is declared
        return _unknown()
    if name == "yarn" and verb == "global" and rest and rest[0].text == "add":
        return _V("write", dep=True)
    ops, g = _operands_of(rest, ("--prefix", "-w", "--workspace", "--filter", "--tag", "-C"))
    is_global = is_global or g
    if verb in _NPM_INSTALL or (name in ("bun", "pnpm", "yarn") and verb == "a"):
        if ops or verb == "add":
            return _V("write", dep=True)
        return _write()
    if verb in _NPM_RESTORE or (name == "bun" and verb == "install"):
        return _write()
    if verb in _NPM_EXEC:
        return _V("unknown", "shell_command_unproven", dep=True)
    if verb in _NPM_WRITE:
        return _write()
    if verb in _NPM_READ:
        if verb == "audit" and rest and rest[0].text == "fix":
            return _write()
        return _read()
    if verb == "config" or verb == "c":
        return _read() if rest and rest[0].text in ("get", "list", "ls") else _write()
    if verb == "pkg":
        return _read() if rest and rest[0].text == "get" else _write()
    return _unknown()


_PIP_READ = frozenset(("list", "show", "freeze", "check", "help", "search", "index", "inspect",
                       "debug", "hash"))


def _pip(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if len(args) == 1 and args[0].text in ("--version", "-V"):
        return _read()
    verb, rest, _ = _pm_verb(args)
    if verb is None:
        return _unknown()
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
        return _V("write", dep=bool(adds))
    if verb == "uninstall":
        return _write()
    if verb == "config":
        return _read() if rest and rest[0].text in ("list", "get", "debug") else _write()
    if verb == "cache":
        return _read() if rest and rest[0].text in ("dir", "info", "list") else _write()
    if verb in _PIP_READ:
        return _read()
    return _unknown()


def _uv(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args]
    if name == "uvx":
        return _V("unknown", dep=True, reason="shell_command_unproven")
    if texts[:1] in (["--version"], ["-V"], ["version"]):
        return _read()
    if not texts:
        return _unknown()
    verb = texts[0]
    if verb == "pip":
        return _pip("pip", args[1:], ctx)
    if verb == "add":
        return _V("write", dep=True)
    if verb in ("sync", "lock", "remove", "venv", "init", "export"):
        return _write()
    if verb == "tool":
        sub = texts[1] if len(texts) > 1 else ""
        if sub in ("install", "run", "upgrade"):
            return _V("unknown" if sub == "run" else "write", dep=True,
                      reason="shell_command_unproven" if sub == "run" else None)
        if sub in ("list", "dir"):
            return _read()
        return _write()
    if verb == "run":
        dep = any(t.startswith("--with") for t in texts)
        return _V("unknown", "shell_command_unproven", dep=dep)
    if verb in ("tree",):
        return _read()
    return _unknown()


def _poetry(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args if not w.text.startswith("-")]
    if [w.text for w in args] in (["--version"], ["-V"]):
        return _read()
    verb = texts[0] if texts else ""
    if name == "pipenv" and verb == "install":
        return _V("write", dep=len(texts) > 1)
    if name in ("conda", "mamba", "micromamba") and verb in ("install", "create"):
        return _V("write", dep=True)
    if name == "pipx":
        if verb in ("install", "run", "inject"):
            return _V("write" if verb != "run" else "unknown", dep=True,
                      reason="shell_command_unproven" if verb == "run" else None)
        if verb == "list":
            return _read()
        return _write()
    if verb == "add":
        return _V("write", dep=True)
    if verb in ("install", "lock", "remove", "update", "sync", "init", "new", "build", "publish",
                "uninstall", "clean", "export"):
        return _write()
    if verb in ("show", "check", "list", "info", "env", "search", "graph", "--version"):
        if verb == "env" and len(texts) > 1 and texts[1] not in ("info", "list"):
            return _write()
        return _read()
    return _unknown()


def _cargo(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args]
    verb = next((t for t in texts if not t.startswith(("-", "+"))), "")
    if texts[:1] in (["--version"], ["-V"], ["version"]):
        return _read()
    if verb == "add":
        return _V("write", dep=True)
    if verb == "install":
        return _V("write", dep=True)
    if verb in ("remove", "rm", "update", "fetch", "new", "init", "generate-lockfile",
                "vendor", "publish", "clean", "fix", "fmt", "package", "uninstall", "login"):
        return _write()
    if verb in ("tree", "search", "locate-project", "pkgid", "read-manifest", "version",
                "help", "verify-project"):
        return _read()
    return _unknown()


def _go(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args]
    verb = texts[0] if texts else ""
    if verb == "get":
        return _V("write", dep=True)
    if verb == "install":
        return _V("write", dep=any("@" in t for t in texts[1:]))
    if verb == "mod":
        sub = texts[1] if len(texts) > 1 else ""
        if sub in ("graph", "why", "verify"):
            return _read()
        return _write()
    if verb == "work":
        return _write()
    if verb == "version":
        return _read()
    if verb == "env":
        return _write() if any(t in ("-w", "-u") for t in texts) else _read()
    if verb in ("list", "doc"):
        return _read() if all(w.static for w in args) else _unknown()
    if verb in ("fmt", "generate", "clean"):
        return _write()
    return _unknown()


def _gem(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args if not w.text.startswith("-")]
    verb = texts[0] if texts else ""
    if [w.text for w in args] in (["--version"], ["-v"], ["-V"]):
        return _read()
    if name == "gem":
        if verb == "install":
            return _V("write", dep=True)
        if verb in ("list", "search", "info", "contents", "environment", "which", "query",
                    "specification", "help", "outdated"):
            return _read()
        return _write()
    if verb == "add":
        return _V("write", dep=True)
    if verb in ("install", "update", "remove", "lock", "init", "clean", "binstubs", "config",
                "cache", "package", "pristine"):
        if verb == "config" and len(texts) <= 2 and "set" not in texts:
            return _read()
        return _write()
    if verb in ("list", "show", "info", "outdated", "check", "platform", "help", "doctor"):
        return _read()
    return _unknown()


def _composer(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args if not w.text.startswith("-")]
    verb = texts[0] if texts else ""
    if [w.text for w in args] in (["--version"], ["-V"]):
        return _read()
    if verb in ("require", "req"):
        return _V("write", dep=True)
    if verb in ("global",) and len(texts) > 1 and texts[1] in ("require", "req"):
        return _V("write", dep=True)
    if verb in ("show", "info", "outdated", "validate", "licenses", "depends", "why",
                "prohibits", "why-not", "search", "diagnose", "check-platform-reqs", "fund",
                "status", "audit", "suggests", "help", "list"):
        return _read()
    if verb in ("install", "i", "update", "u", "upgrade", "remove", "rm", "dump-autoload",
                "init", "create-project", "config", "bump", "reinstall", "clear-cache"):
        return _write()
    return _unknown()


def _dotnet(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args]
    low = [t.lower() for t in texts]
    if low in (["--version"], ["--info"], ["--list-sdks"], ["--list-runtimes"]):
        return _read()
    verb = low[0] if low else ""
    if verb == "add":
        return _V("write", dep="package" in low)
    if verb == "package" and len(low) > 1 and low[1] == "add":
        return _V("write", dep=True)
    if verb == "tool" and len(low) > 1 and low[1] in ("install", "run", "exec"):
        return _V("write", dep=True)
    if verb == "list" or (verb == "package" and len(low) > 1 and low[1] == "list"):
        return _read()
    if verb in ("restore", "remove", "new", "clean", "publish", "pack", "nuget", "sln",
                "format", "workload", "tool"):
        return _write()
    return _unknown()


def _system_pm(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args if not w.text.startswith("-")]
    verb = texts[0] if texts else ""
    if [w.text for w in args] in (["--version"], ["-v"], ["-V"]):
        return _read()
    if verb in ("install", "add", "reinstall", "-S", "in", "upgrade", "tap"):
        return _V("write", dep=True)
    if verb in ("list", "search", "show", "info", "policy", "depends", "rdepends", "deps",
                "leaves", "outdated", "config", "doctor", "--version", "madison", "home",
                "desc", "uses"):
        return _read()
    if any(w.text in ("-S", "-Sy", "-Syu") for w in args):
        return _V("write", dep=True)
    return _write()


# ------------------------------------------------------- small programs ----

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
        files.append(t if w.static else "")
    if not files:
        return _read()
    return _write([f for f in files if f])


def _cd(name: str, args: List[_W], ctx: _Ctx) -> _V:
    ops = [w for w in args if not (w.static and w.text in ("-L", "-P", "-e", "-@"))]
    return _read() if len(ops) <= 1 else _unknown()


def _printf(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if args and args[0].text.startswith("-v") or (args and args[0].opaque):
        return _unknown("state_change")
    return _read()


def _set(name: str, args: List[_W], ctx: _Ctx) -> _V:
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
    return _read() if args else _read()


def _date(name: str, args: List[_W], ctx: _Ctx) -> _V:
    for w in args:
        t = w.text
        if w.opaque:
            return _unknown("shell_syntax_unproven")
        if t.startswith(("-s", "--set", "--se")) and not t.startswith("--r"):
            return _unknown("state_change")
        if t.startswith(("+", "-")):
            continue
        if not t.startswith("-"):
            return _unknown("state_change")
    return _read()


def _hostname(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if all(w.static and w.text.startswith("-") and w.text not in ("-F", "--file", "-b", "--boot")
           for w in args):
        return _read()
    return _unknown("state_change")


def _openssl(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args]
    verb = texts[0] if texts else ""
    digest = verb in ("dgst", "md5", "sha1", "sha256", "sha512", "sha384", "sha224", "mac",
                      "passwd", "kdf", "sha3-256", "blake2b512", "blake2s256", "rmd160")
    if verb in ("version",) or texts == ["--version"]:
        return _read()
    if any(t in ("-out", "-keyout") for t in texts):
        return _V("write", hash_=digest)
    if digest and verb in ("dgst", "md5", "sha1", "sha256", "sha512", "sha384", "sha224") \
            and all(w.static and not w.text.startswith(("-sign", "-verify", "-prverify",
                                                         "-engine", "-passin", "-rand",
                                                         "-writerand", "-provider"))
                    for w in args):
        return _V(hash_=True)   # prints a digest and nothing else
    if digest or verb in ("x509", "s_client", "asn1parse", "ciphers", "list", "rand", "base64",
                          "enc"):
        return _V("unknown", "shell_command_unproven", hash_=digest)
    return _unknown()


def _hash_unproven(name: str, args: List[_W], ctx: _Ctx) -> _V:
    return _V("unknown", "shell_command_unproven", hash_=True)


def _certutil(name: str, args: List[_W], ctx: _Ctx) -> _V:
    hashes = any(w.text.lower() in ("-hashfile", "/hashfile") for w in args)
    if hashes and args and args[0].text.lower() in ("-hashfile", "/hashfile") and len(args) <= 3:
        return _V(hash_=True)
    return _V("unknown", "shell_command_unproven", hash_=hashes)


def _gpg(name: str, args: List[_W], ctx: _Ctx) -> _V:
    hashes = any(w.text in ("--print-md", "--print-mds") for w in args)
    if hashes and args[0].text in ("--print-md", "--print-mds") and all(
            not w.text.startswith("-") for w in args[1:]):
        return _V(hash_=True)
    return _V("unknown", "shell_command_unproven", hash_=hashes)


def _tar(name: str, args: List[_W], ctx: _Ctx) -> _V:
    first = args[0].text if args else ""
    mode = first.lstrip("-")
    if args and all(w.static for w in args):
        if (mode[:1] == "t" or "--list" in [w.text for w in args]) and "--to-command" not in first:
            if not any(w.text.startswith(("--to-command", "--use-compress-program", "-I",
                                          "--checkpoint-action", "--info-script", "-F",
                                          "--new-volume-script", "--rsh-command"))
                       for w in args):
                return _read()
    if mode[:1] == "c" and len(args) > 1 and "f" in mode:
        return _write([args[1].text] if args[1].static else [])
    return _write()


def _unzip(name: str, args: List[_W], ctx: _Ctx) -> _V:
    if args and args[0].static and args[0].text in ("-l", "-v", "-Z", "-t", "-p", "-z"):
        return _read()
    return _write()


def _curl_writes(args: List[_W]) -> Optional[_V]:
    texts = [w.text for w in args]
    for k, t in enumerate(texts):
        if t in ("-o", "--output") and k + 1 < len(texts):
            return _write([texts[k + 1]])
        if t in ("-O", "--remote-name", "--remote-name-all", "-J", "-D", "--dump-header",
                 "-c", "--cookie-jar", "--output-dir") or t.startswith("-o"):
            return _write()
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
            i += 1
            continue
        return _unknown()
    return _read()


def _pager(name: str, args: List[_W], ctx: _Ctx) -> _V:
    return _unknown()


_SORT_SPEC = _OptSpec(
    short="bdfgiMhnRrVcCmsuz", short_val="kotST",
    long={"ignore-leading-blanks": 0, "dictionary-order": 0, "ignore-case": 0,
          "general-numeric-sort": 0, "ignore-nonprinting": 0, "month-sort": 0,
          "human-numeric-sort": 0, "numeric-sort": 0, "random-sort": 0, "random-source": 1,
          "reverse": 0, "sort": 1, "version-sort": 0, "batch-size": 1, "check": 2,
          "compress-program": 1, "debug": 0, "files0-from": 1, "field-separator": 1, "key": 1,
          "merge": 0, "output": 1, "stable": 0, "buffer-size": 1, "temporary-directory": 1,
          "parallel": 1, "unique": 0, "zero-terminated": 0, "help": 0, "version": 0},
    deny={"o": "write", "output": "write", "compress-program": "exec"})
_UNIQ = _spec_program(_OptSpec(
    short="cdDiuz", short_val="fsw",
    long={"count": 0, "repeated": 0, "all-repeated": 2, "skip-fields": 1, "group": 2,
          "ignore-case": 0, "skip-chars": 1, "unique": 0, "zero-terminated": 0,
          "check-chars": 1, "help": 0, "version": 0}), write_operand=1)
_TREE = _spec_program(_OptSpec(
    short="adlfxpsughDFqNQrtvUCASniJX", short_val="LPIoH",
    long={"noreport": 0, "charset": 1, "dirsfirst": 0, "filesfirst": 0, "gitignore": 0,
          "prune": 0, "matchdirs": 0, "sort": 1, "du": 0, "si": 0, "filelimit": 1, "timefmt": 1,
          "version": 0, "help": 0, "fromfile": 0, "info": 0, "hyperlink": 0, "metafirst": 0},
    deny={"o": "write"}))
_XXD = _spec_program(_OptSpec(
    short="aCEeipruhdvb", short_val="cglsonR",
    long={"autoskip": 0, "bits": 0, "cols": 1, "capitalize": 0, "EBCDIC": 0, "groupsize": 1,
          "include": 0, "len": 1, "name": 1, "postscript": 0, "plain": 0, "ps": 0,
          "revert": 0, "seek": 1, "uppercase": 0, "version": 0, "help": 0}, permute=False),
    write_operand=1)
_FILE = _spec_program(_OptSpec(
    short="bcdEhiIkLlNnprsSvz0ZC", short_val="eFfmP",
    long={"brief": 0, "mime": 0, "mime-type": 0, "mime-encoding": 0, "dereference": 0,
          "no-dereference": 0, "keep-going": 0, "raw": 0, "special-files": 0,
          "uncompress": 0, "extension": 0, "apple": 0, "files-from": 1, "separator": 1,
          "exclude": 1, "help": 0, "version": 0, "print0": 0, "no-pad": 0, "no-buffer": 0,
          "preserve-date": 0, "compile": 0, "checking-printout": 0, "magic-file": 1,
          "parameter": 1, "exclude-quiet": 1, "list": 0},
    # -p restores access/modification times after reading: a metadata write.
    deny={"C": "write", "compile": "write", "p": "write", "preserve-date": "write"}))


_HASH_PROGRAMS = frozenset((
    "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "shasum", "b2sum",
    "b3sum", "cksum", "sum", "md5", "sha1", "sha256", "sha512", "xxhsum", "xxh32sum",
    "xxh64sum", "xxh128sum", "rhash", "hashdeep", "md5deep", "sha256deep", "get-filehash",
))

# Hash tools with an output or update option: hash intent, never proven read.
_HASH_WITH_OUTPUT = frozenset(("get-filehash", "rhash", "hashdeep", "md5deep", "sha256deep"))

_INERT = (
    "cat", "head", "tail", "wc", "nl", "od", "hexdump", "strings", "stat", "du", "df", "ls",
    "dir", "vdir", "realpath", "readlink", "basename", "dirname", "pwd", "echo", "true", "false",
    "test", "[", "which", "whereis", "type", "uname", "whoami", "id", "groups", "printenv",
    "grep", "egrep", "fgrep", "zgrep", "zcat", "bzcat", "xzcat", "cut", "tr", "paste",
    "column", "jq", "diff", "cmp", "comm", "seq", "expr", "sleep", "nproc", "tac", "rev",
    "fold", "fmt", "expand", "unexpand", "base64", "base32", "cal", "locale", "uptime", "free",
    "ps", "pgrep", "join", "look", "numfmt", "tty", "arch", "getconf", "lscpu", "sw_vers",
    "wait", ":", "pushd", "popd", "dirs", "lsof", "users", "who", "w", "last", "nm",
    "objdump", "readelf", "size", "diff3", "colordiff", "pr", "ts", "yes", "factor",
    "logname", "jobs", "nslookup", "dig", "host", "ping", "tput", "tokei", "read",
    "findstr", "where",
) + tuple(_HASH_PROGRAMS - _HASH_WITH_OUTPUT)
# Left out on purpose: ack/ag (--pager runs a program), sdiff (-o writes),
# ldd (may run the binary), cloc/scc (report files), history (-w writes).


_PROGRAMS: Dict[str, Callable[[str, List[_W], _Ctx], _V]] = {}
for _p in _INERT:
    _PROGRAMS[_p] = _inert
_PROGRAMS.update({
    "git": _git, "rg": _rg, "find": _find, "fd": _fd, "fdfind": _fd, "sed": _sed, "gsed": _sed,
    "awk": _awk, "gawk": _awk, "mawk": _awk, "nawk": _awk,
    "sort": _spec_program(_SORT_SPEC), "uniq": _UNIQ, "tree": _TREE, "xxd": _XXD, "file": _FILE,
    "tee": _tee, "cd": _cd, "printf": _printf, "set": _set, "date": _date, "hostname": _hostname,
    "less": _pager, "more": _pager, "most": _pager, "man": _pager, "vi": _pager, "vim": _pager,
    "nvim": _pager, "nano": _pager, "emacs": _pager, "view": _pager,
    "command": _w_command, "builtin": _w_command, "exec": _w_command,
    "time": _w_transparent(flags="pv"), "nice": _w_transparent(valued="n",
                                                               long_valued=("--adjustment",)),
    "timeout": _w_transparent(flags="v", valued="sk", long_valued=("--signal", "--kill-after"),
                              long_flags=("--preserve-status", "--foreground", "--verbose"),
                              numeric_first=True),
    "stdbuf": _w_transparent(valued="ioe", long_valued=("--input", "--output", "--error")),
    "nohup": _w_transparent(capped="shell_command_unproven"),
    "env": _w_env, "xargs": _w_xargs, "sudo": _w_sudo, "doas": _w_sudo,
    "bash": _w_sh, "sh": _w_sh, "zsh": _w_sh, "dash": _w_sh, "ksh": _w_sh,
    "eval": _w_eval, "pwsh": _w_pwsh, "powershell": _w_pwsh, "powershell.exe": _w_pwsh,
    "pwsh.exe": _w_pwsh, "cmd": _w_cmd, "cmd.exe": _w_cmd,
    "python": _interp("python"), "python3": _interp("python"), "py": _interp("python"),
    "python2": _interp("python"), "node": _interp("node"), "nodejs": _interp("node"),
    "perl": _interp("perl"), "ruby": _interp("ruby"), "php": _interp("php"),
    "deno": _interp("deno"),
    "npm": _npm, "pnpm": _npm, "yarn": _npm, "bun": _npm, "npx": _npm, "bunx": _npm,
    "pnpx": _npm,
    "pip": _pip, "pip3": _pip, "uv": _uv, "uvx": _uv, "poetry": _poetry, "pipenv": _poetry,
    "pipx": _poetry, "conda": _poetry, "mamba": _poetry, "micromamba": _poetry,
    "cargo": _cargo, "go": _go, "gem": _gem, "bundle": _gem, "bundler": _gem,
    "composer": _composer, "dotnet": _dotnet,
    "apt": _system_pm, "apt-get": _system_pm, "brew": _system_pm, "dnf": _system_pm,
    "yum": _system_pm, "apk": _system_pm, "pacman": _system_pm, "zypper": _system_pm,
    "port": _system_pm, "choco": _system_pm, "winget": _system_pm, "scoop": _system_pm,
    "get-filehash": _hash_unproven, "rhash": _hash_unproven, "hashdeep": _hash_unproven, "md5deep": _hash_unproven,
    "sha256deep": _hash_unproven,
    "openssl": _openssl, "certutil": _certutil, "certutil.exe": _certutil, "gpg": _gpg,
    "tar": _tar, "unzip": _unzip, "curl": _curl,
    "export": lambda n, a, c: _unknown("state_change"),
})
for _p in ("alias", "unalias", "unset", "source", ".", "trap", "shopt", "declare", "typeset",
           "local", "readonly", "ulimit", "umask", "enable", "exit", "logout", "return",
           "bind", "complete", "setopt", "unsetopt", "autoload", "disown", "fg", "bg",
           "shift", "getopts", "mapfile", "readarray", "let"):
    _PROGRAMS[_p] = lambda n, a, c: _unknown("state_change")
_BUN_EVAL = _interp("bun")
_PROGRAMS["bun"] = lambda n, a, c: (_BUN_EVAL(n, a, c) if a and a[0].text in ("-e", "--eval")
                                   else _npm(n, a, c))


def _gh(name: str, args: List[_W], ctx: _Ctx) -> _V:
    texts = [w.text for w in args]
    if texts in (["--version"], ["version"]):
        return _read()
    if len(texts) < 2 or not all(w.static for w in args):
        return _unknown()
    group, verb = texts[0], texts[1]
    reads = {"pr": ("view", "list", "diff", "checks", "status"),
             "issue": ("view", "list", "status"), "repo": ("view", "list"),
             "run": ("view", "list"), "release": ("view", "list"), "workflow": ("view", "list"),
             "search": ("issues", "prs", "repos", "code", "commits"), "auth": ("status",)}
    if group == "api":
        rest = texts[1:]
        method = "GET"
        for k, t in enumerate(rest):
            if t in ("-X", "--method") and k + 1 < len(rest):
                method = rest[k + 1].upper()
            elif t.startswith(("-f", "-F", "--field", "--raw-field", "--input")):
                method = "POST" if method == "GET" else method
        return _read() if method == "GET" else _write()
    if verb in reads.get(group, ()):
        if any(t in ("--web", "-w") for t in texts):
            return _unknown()
        return _read()
    if group in reads or group in ("gist", "label", "secret", "variable"):
        return _write()
    return _unknown()


_PROGRAMS["gh"] = _gh


def _subcommand_reads(table: Dict[str, Tuple[str, ...]]) -> Callable[[str, List[_W], _Ctx], _V]:
    """Tools whose read-only verbs are known; every other verb is unproven."""
    def handler(name: str, args: List[_W], ctx: _Ctx) -> _V:
        words = [w.text for w in args]
        if words in (["--version"], ["version"], ["-v"]):
            return _read()
        if not args or not all(w.static for w in args):
            return _unknown()
        if words[0] in table.get("", ()):
            return _read()
        if len(words) > 1 and words[1] in table.get(words[0], ()):
            return _read()
        return _unknown()
    return handler


_PROGRAMS["docker"] = _subcommand_reads({
    "": ("ps", "images", "info", "version"),
    "image": ("ls", "inspect", "history"), "container": ("ls", "inspect"),
    "compose": ("ps", "config", "ls"), "network": ("ls", "inspect"), "volume": ("ls", "inspect")})
_PROGRAMS["kubectl"] = _subcommand_reads({
    "": ("get", "describe", "explain", "api-resources", "api-versions", "cluster-info",
         "version", "top"),
    "config": ("view", "get-contexts", "current-context")})
for _p in ("rustc", "rustup", "gcc", "g++", "clang", "cc", "java", "javac", "tsc", "kotlin",
           "swift", "docker", "kubectl", "terraform", "cmake", "make", "gradle", "mvn", "helm",
           "psql", "sqlite3", "ruff", "black", "mypy", "pytest", "eslint", "prettier", "jest",
           "vitest", "bazel", "ninja", "zig", "ghc", "stack", "elixir", "mix", "erl", "lua",
           "php", "R", "julia", "scala", "sbt", "flutter", "dart", "nvm", "pyenv", "rbenv"):
    _PROGRAMS.setdefault(_p.lower(), _version_only)
del _p


# ------------------------------------------------------------- drivers ----

def _combine(items: List[Any], ctx: _Ctx) -> _V:
    total = _V()
    base: Optional[str] = ""    # where relative targets live after a `cd`; None = unknown
    for item in items:
        if isinstance(item, _V):
            total.join(item)
            continue
        v = _classify_cmd(item, ctx)
        if v.targets and base != "":
            v.targets = [t if t.startswith(("/", "~")) else base.rstrip("/") + "/" + t
                         for t in v.targets] if base is not None else []
        total.join(v)
        words = item.words
        if words and words[0].static and words[0].text in ("cd", "pushd"):
            ops = [w for w in words[1:] if not w.text.startswith("-")]
            if len(ops) == 1 and ops[0].static and base is not None:
                target = ops[0].text
                base = target if target.startswith(("/", "~")) or base == "" \
                    else base.rstrip("/") + "/" + target
            else:
                base = None
    return total


def _analyze_bash(text: str, ctx: _Ctx) -> _V:
    if len(text) > _MAX_COMMAND:
        return _unknown("analysis_limit")
    if _has_bad_char(text):
        return _unknown("control_character")
    stripped = text.strip(" \t\n")
    if not stripped:
        return _unknown("shell_syntax_unproven")
    try:
        items = _Bash(stripped, ctx.depth).parse()
        return _combine(items, ctx)
    except _Give as g:
        return _V(g.mut, g.reason)
    except RecursionError:
        return _unknown("analysis_limit")


# -- PowerShell: a conservative subset (5.4) -------------------------------

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


def _ps_words(text: str) -> List[Any]:
    """Split a PowerShell line into commands of (word, quoted) pairs; refuse the rest."""
    cmds: List[List[Tuple[str, bool]]] = []
    cur: List[Tuple[str, bool]] = []
    i, n = 0, len(text)
    need = False
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
                raise _Give("shell_syntax_unproven")
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
            raise _Give("shell_redirection", "write")
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
                raise _Give("shell_syntax_unproven")
            if c in "\u2013\u2014\u2015" or not c.isascii():
                raise _Give("shell_syntax_unproven")
            word.append(c)
            i += 1
        cur.append(("".join(word), quoted))
        need = False
    if need:
        raise _Give("shell_syntax_unproven")
    if cur:
        cmds.append(cur)
    if not cmds:
        raise _Give("shell_syntax_unproven")
    return cmds


def _analyze_powershell(text: str, ctx: _Ctx) -> _V:
    if len(text) > _MAX_COMMAND:
        return _unknown("analysis_limit")
    if _rx("psbad", "[\x00-\x08\x0e-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u061c]"
           ).search(text):
        return _unknown("control_character")
    try:
        cmds = _ps_words(text.strip(_PS_SPACE + "\r\n"))
    except _Give as g:
        return _V(g.mut, g.reason)
    total = _V()
    for cmd in cmds:
        total.join(_ps_command(cmd, ctx))
    return total


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


def _ps_command(cmd: List[Tuple[str, bool]], ctx: _Ctx) -> _V:
    prog = cmd[0][0].lower()
    if prog.endswith(".exe"):
        prog = prog[:-4]
    args = cmd[1:]
    if prog in _PS_WRITE_CMDLETS:
        return _write(_ps_targets(args, prog in _PS_COPIERS))
    if prog in _PS_READ_CMDLETS:
        if any(a.lower().startswith("-outfile") or a.lower().startswith("-outvariable")
               for a, q in args if not q):
            return _write()
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


# -- cmd.exe: only enough to refuse what cmd would reinterpret (5.4) ---------

def _analyze_cmd(text: str, ctx: _Ctx) -> _V:
    if any(ch in text for ch in "^%!()"):
        return _unknown("shell_syntax_unproven")
    total = _V()
    i, n = 0, len(text)
    cur: List[_W] = []
    while i <= n:
        c = text[i] if i < n else "\n"
        if c in " \t":
            i += 1
            continue
        if c in "\r\n&|":
            if cur:
                total.join(_classify_argv(cur, ctx))
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
            return total.join(_write([], "shell_redirection"))
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


def _analyze_any(command: str, shell: str) -> _V:
    ctx = _Ctx(0, shell)
    if shell == "powershell":
        return _analyze_powershell(command, ctx)
    if shell == "unknown":
        # Windows: the interpreter is not known, so every candidate must agree.
        v = _analyze_bash(command, ctx)
        v.join(_analyze_powershell(command, ctx))
        return v.join(_analyze_cmd(command, ctx))
    return _analyze_bash(command, ctx)


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
    seen = []
    for t in v.targets:
        if t and t not in seen:
            seen.append(t)
    return ShellAnalysis(v.mut, reason, v.hash, v.dep, seen)


# ------------------------------------------------------------ hash intent ----

_HASH_CODE = {
    "js": (r"\bcreateHash\s*\(|\bcreateHmac\s*\(|\bsubtle\s*\.\s*digest\s*\(|\bbcrypt\s*\."
           r"\s*hash(Sync)?\s*\(|\bargon2\s*\.\s*hash\s*\(|\bpbkdf2(Sync)?\s*\(|\bscrypt(Sync)?"
           r"\s*\(|\bCryptoJS\s*\.\s*(MD5|SHA\d+|SHA3|HmacSHA\d+|RIPEMD160)\b|\bhash\s*\.\s*"
           r"(sha256|sha1|sha512|md5)\b"),
    "py": (r"\bhashlib\s*\.\s*(md5|sha1|sha224|sha256|sha384|sha512|blake2b|blake2s|sha3_\d+|"
           r"shake_\d+|new|file_digest|pbkdf2_hmac|scrypt)\s*\(|\bfrom\s+hashlib\s+import\b|"
           r"\bhmac\s*\.\s*(new|digest)\s*\(|\bbcrypt\s*\.\s*hashpw\s*\(|\b(zlib|binascii)\s*\."
           r"\s*crc32\s*\(|\bxxhash\s*\.|\bmmh3\s*\."),
    "go": (r"\b(md5|sha1|sha256|sha512|sha3|blake2b|blake2s|crc32|crc64|fnv|adler32)\s*\.\s*"
           r"(New\w*|Sum\w*|Checksum\w*)\s*\(|\bhmac\s*\.\s*New\s*\(|\bbcrypt\s*\.\s*"
           r"GenerateFromPassword\s*\(|\bxxhash\s*\.\s*(Sum64|New)"),
    "rs": (r"\b(Sha1|Sha224|Sha256|Sha384|Sha512|Sha3_256|Sha3_512|Md5|Blake2b\w*|Blake2s\w*|"
           r"Blake3|Hmac)\s*::|\bblake3\s*::\s*hash\s*\(|\bmd5\s*::\s*compute\s*\(|\bring\s*::"
           r"\s*digest\b|\bdigest\s*::\s*digest\s*\(|\bcrc32fast\s*::|\bsha2\s*::|\bxxhash_rust\b|"
           r"\btwox_hash\b"),
    "java": (r"\bMessageDigest\s*\.\s*getInstance\s*\(|\bDigestUtils\s*\.\s*\w+\s*\(|\bMac\s*\."
             r"\s*getInstance\s*\(|\bHashing\s*\.\s*(sha\d+|md5|murmur3_\w+|crc32\w*|sipHash24|"
             r"farmHashFingerprint64|goodFastHash)\s*\(|\bBCrypt\s*\.\s*hashpw\s*\(|\bnew\s+"
             r"CRC32C?\s*\(|\bSecretKeyFactory\s*\.\s*getInstance\s*\("),
    "cs": (r"\b(SHA1|SHA256|SHA384|SHA512|MD5|SHA3_256|HMACSHA\d+|HMACMD5|IncrementalHash)\s*"
           r"\.\s*(Create\w*|HashData\w*|TryHashData\w*)\s*\(|\bnew\s+HMAC(SHA\d+|MD5)\s*\(|"
           r"\bPasswordHasher\s*[<(]|\bRfc2898DeriveBytes\b|\.\s*ComputeHash\s*\("),
    "rb": (r"\bDigest\s*::\s*\w+|\bOpenSSL\s*::\s*(HMAC|Digest)\b|\bBCrypt\s*::\s*Password\s*\."
           r"\s*create\b|\bZlib\s*\.\s*crc32\b"),
    "php": (r"\b(hash|hash_hmac|hash_file|hash_init|hash_pbkdf2|md5|sha1|md5_file|sha1_file|"
            r"crc32|password_hash)\s*\("),
    "c": (r"\bEVP_Digest\w*\s*\(|\bEVP_(md5|sha\d+)\s*\(|\b(SHA\d+|MD5)(_Init|_Update|_Final)?"
          r"\s*\(|\bHMAC\s*\(|\bcrypto_generichash\w*\s*\(|\bCC_(SHA\d+|MD5)\s*\("),
    "swift": (r"\b(SHA256|SHA384|SHA512)\s*\.\s*hash\s*\(|\bInsecure\s*\.\s*(MD5|SHA1)\b|"
              r"\bHMAC\s*<|\bCC_(SHA\d+|MD5)\s*\("),
    "sh": (r"(^|[\s;&|(`])(Get-FileHash|md5sum|sha1sum|sha224sum|sha256sum|sha384sum|sha512sum|"
           r"shasum|b2sum|b3sum|cksum|xxhsum|xxh64sum|rhash|hashdeep)\b|\bopenssl\s+(dgst|md5|"
           r"sha1|sha256|sha512|mac|passwd|kdf)\b|\bgpg\s+--print-md"),
}
_HASH_ALL_EXCEPT = ("php", "sh")   # too generic for files of unknown type
_EXT_LANG = {
    "js": "js", "jsx": "js", "ts": "js", "tsx": "js", "cjs": "js", "mjs": "js", "cts": "js",
    "mts": "js", "vue": "js", "svelte": "js",
    "py": "py", "pyw": "py", "ipynb": "py", "go": "go", "rs": "rs",
    "java": "java", "kt": "java", "kts": "java", "scala": "java", "groovy": "java",
    "cs": "cs", "fs": "cs", "vb": "cs", "rb": "rb", "rake": "rb", "php": "php",
    "c": "c", "cc": "c", "cpp": "c", "cxx": "c", "h": "c", "hpp": "c", "m": "c", "mm": "c",
    "swift": "swift", "sh": "sh", "bash": "sh", "zsh": "sh", "ps1": "sh", "psm1": "sh",
    "bat": "sh", "cmd": "sh", "mk": "sh", "yml": "sh", "yaml": "sh",
    "lua": None, "pl": None, "ex": None, "exs": None, "dart": None,
}
_NON_CODE_EXT = frozenset(("md", "markdown", "rst", "txt", "adoc", "json", "lock", "csv", "tsv",
                           "svg", "html", "htm", "css", "scss", "toml", "ini", "cfg", "xml",
                           "sum", "log", "png", "jpg", "gif", "pdf", "snap"))
_SHELL_NAMES = frozenset(("makefile", "gnumakefile", "dockerfile", "containerfile", "justfile",
                          "procfile", "vagrantfile"))


def _langs_for(path: Optional[str]) -> Optional[Tuple[str, ...]]:
    """Languages whose patterns apply to `path`; () for data files, None for all."""
    if not path:
        return None
    base = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if base in _SHELL_NAMES or base.startswith("dockerfile"):
        return ("sh",)
    if base == "gemfile" or base == "rakefile":
        return ("rb",)
    if "." not in base:
        return None
    ext = base.rsplit(".", 1)[1]
    if ext in _NON_CODE_EXT:
        return ()
    if ext in _EXT_LANG:
        lang = _EXT_LANG[ext]
        if lang is None:
            return None
        return (lang,)
    return None


def _hash_rx(lang: str) -> Any:
    flags = 2 | 8   # re.IGNORECASE | re.MULTILINE without importing re here
    return _rx("hash-" + lang, _HASH_CODE[lang], flags)


def _hash_hits(text: str, langs: Optional[Tuple[str, ...]]) -> List[str]:
    if not text:
        return []
    chosen = langs if langs is not None else tuple(k for k in _HASH_CODE
                                                   if k not in _HASH_ALL_EXCEPT)
    hits: List[str] = []
    for lang in chosen:
        for m in _hash_rx(lang).finditer(text):
            hits.append(" ".join(m.group(0).lower().split()))
    if "sh" in chosen and "certutil" in text.lower():
        # certutil ... -hashfile on one line; plain string tests keep this linear.
        for line in text.lower().splitlines():
            if "certutil" in line and "-hashfile" in line.split("certutil", 1)[1]:
                hits.append("certutil -hashfile")
    return hits


def hash_intent_in_text(added_text: str, path: Optional[str] = None, *,
                        removed_text: Optional[str] = None) -> bool:
    """True when code added to `path` computes a hash/digest (analysis.md 2, 5.7).

    With `removed_text` (an Edit's old string, a patch's '-' lines) a call
    that was already there and is only kept is not new intent.
    """
    if not isinstance(added_text, str) or not added_text:
        return False
    langs = _langs_for(path)
    if langs == ():
        return False
    hits = _hash_hits(added_text, langs)
    if not hits:
        return False
    if not removed_text:
        return True
    before = _hash_hits(removed_text, langs)
    for h in hits:
        if h in before:
            before.remove(h)
        else:
            return True
    return False


# ------------------------------------------------------ dependency intent ----

def manifest_kind(path: Optional[str]) -> Optional[str]:
    """The manifest family of a path, by its final component (case-insensitive)."""
    if not isinstance(path, str) or not path:
        return None
    norm = path.replace("\\", "/").rstrip("/")
    base = norm.rsplit("/", 1)[-1].lower()
    parent = norm.rsplit("/", 2)[-2].lower() if norm.count("/") >= 1 else ""
    fixed = {"package.json": "npm", "composer.json": "composer", "pyproject.toml": "pyproject",
             "pipfile": "pipfile", "cargo.toml": "cargo", "go.mod": "gomod", "gemfile": "gemfile",
             "deno.json": "npm", "deno.jsonc": "npm"}
    if base in fixed:
        return fixed[base]
    if base.endswith((".csproj", ".fsproj", ".vbproj")) or base in (
            "directory.packages.props", "packages.config"):
        return "csproj"
    if base.endswith((".txt", ".in")) and ("requirements" in base or "constraints" in base
                                           or parent == "requirements"):
        return "requirements"
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


def _looks_source(spec: str) -> bool:
    """A dependency spec that points somewhere other than the default registry."""
    s = spec.strip().lower()
    return any(s.startswith(p) for p in ("git", "http", "file:", "link:", "npm:", "github:",
                                         "gitlab:", "bitbucket:", "portal:", "patch:", "./",
                                         "../", "/", "ssh:")) or ("/" in s and ":" not in s
                                                                  and not s[:1].isdigit()
                                                                  and "#" in s)


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
    for m in _rx("jsonfrag", r'"((?:[^"\\\n]|\\.)*)"\s*:\s*("(?:[^"\\\n]|\\.)*"|\{|\[)|[{}\[\]]'
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
        elif scope == "" and key not in _NPM_META and _rx(
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
    m = _rx("pep508", r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$").match(item)
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
            keys[("req", name)] = line
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
    "package-mode", "requires",
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
            for item in _rx("tomlstr", r'"([^"\n]*)"|\'([^\'\n]*)\'').findall(line):
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
                for item in _rx("tomlstr", r'"([^"\n]*)"|\'([^\'\n]*)\'').findall(line):
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
            for item in _rx("tomlstr", r'"([^"\n]*)"|\'([^\'\n]*)\'').findall(value):
                _toml_item(keys, scope, key, item[0] or item[1], section is None)
            continue
        if value.startswith("["):
            for item in _rx("tomlstr", r'"([^"\n]*)"|\'([^\'\n]*)\'').findall(value):
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
               "default-features", "testpaths", "select", "ignore"):
        return
    if scope == "build-system" and low != "requires":
        return
    if scope is not None and scope.startswith("project") and scope == "project" \
            and low not in ("dependencies",):
        return
    name = _req_name(item)
    if name:
        keys[((scope or "?") + ":" + low, name)] = ""
    elif "/" in item or "://" in item:
        keys[("source", item)] = ""


def _toml_entry(keys: Dict[Tuple[str, str], str], kind: str, section: Optional[str],
                scope: Optional[str], base_key: str, key: str, value: str) -> None:
    low = base_key.lower()
    if section is None:
        # Fragment mode: a `name = spec` line counts unless it is well-known metadata.
        if low in _TOML_META:
            return
        if value.startswith("{") or _rx("tomlver", r'["\'][\^~<>=*]|["\']\d|["\']\*').match(value):
            keys[("?", _pep503(base_key) if kind != "cargo" else base_key.replace("_", "-"))] \
                = value
            if any(s in value for s in ("git", "path", "registry", "url")):
                keys[("source", key + "=" + value)] = ""
        return
    if scope is None or scope in ("build-system",) or scope == "project":
        return
    if scope.startswith(("project", "tool.uv", "tool.pdm")) and "dependencies" not in scope:
        return
    if low in ("python",):
        return
    name = _pep503(base_key) if kind != "cargo" else base_key.replace("_", "-")
    keys[(scope, name)] = ""
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
        if word in ("require", "replace", "exclude", "retract", "tool", "godebug", "ignore") \
                and rest.strip().startswith("("):
            block = word
            continue
        if word in ("require", "replace", "exclude", "tool"):
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
        keys[("require", parts[0])] = ""


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
            keys[("gem", name)] = ""
            if any(k in line for k in ("git:", "path:", "source:", "github:", ":git", ":path")):
                keys[("source", " ".join(line.split()))] = ""
        elif line.startswith(("source", "git_source", "gemspec")):
            keys[("source", " ".join(line.split()))] = ""
    return keys


_XML_DEP_TAGS = frozenset(("packagereference", "packageversion", "package", "projectreference",
                           "packagesource", "add"))
_XML_DEP_ATTRS = ("include", "id", "key")


def _csproj_keys(text: str) -> Dict[Tuple[str, str], str]:
    """PackageReference-style elements, scanned tag by tag (linear on any input)."""
    keys: Dict[Tuple[str, str], str] = {}
    for chunk in text.split("<")[1:]:
        tag = chunk.split(">", 1)[0][:2000]
        parts = tag.replace("\n", " ").replace("\t", " ").split(" ", 1)
        name = parts[0].strip().lower()
        if name not in _XML_DEP_TAGS or len(parts) < 2:
            continue
        low = parts[1].lower()
        for attr in _XML_DEP_ATTRS:
            k = low.find(attr + "=")
            while k > 0 and low[k - 1] not in " \t\n":
                k = low.find(attr + "=", k + 1)
            if k >= 0:
                value = low[k + len(attr) + 1:].lstrip()
                if value[:1] in ('"', "'"):
                    end_q = value.find(value[0], 1)
                    if end_q > 0:
                        keys[(name, value[1:end_q])] = ""
                        break
    return keys


def _manifest_keys(kind: str, text: str) -> Dict[Tuple[str, str], str]:
    if kind in ("npm", "composer"):
        return _npm_keys(text)
    if kind == "requirements":
        return _req_keys(text)
    if kind in ("pyproject", "cargo", "pipfile"):
        return _toml_keys(text, kind)
    if kind == "gomod":
        return _gomod_keys(text)
    if kind == "gemfile":
        return _gemfile_keys(text)
    if kind == "csproj":
        return _csproj_keys(text)
    return {}


_MAX_MANIFEST = 4 << 20


def dependency_intent_in_change(path: Optional[str], old_text: Optional[str],
                                new_text: Optional[str]) -> bool:
    """True when a manifest change adds a dependency (analysis.md 3, 5.8).

    A Write passes old_text None (or the file's current content when the
    caller has it); an Edit passes the replaced fragment and its
    replacement.  Names are compared, so a version bump is not an addition;
    a change of where packages come from (registry, index, git/path
    source, overrides, replace) counts.
    """
    kind = manifest_kind(path)
    if kind is None or not isinstance(new_text, str):
        return False
    if len(new_text) > _MAX_MANIFEST or (old_text and len(old_text) > _MAX_MANIFEST):
        return True   # too large to compare: assume the worst

    new = _manifest_keys(kind, new_text)
    old = _manifest_keys(kind, old_text) if isinstance(old_text, str) else {}
    for key, value in new.items():
        if key[0] == "section":
            continue
        if key not in old:
            # A fragment without a header has scope "?": the same name on the
            # other side, under any scope, is the same declaration.
            if any(k[1] == key[1] and "?" in (k[0], key[0]) for k in old):
                continue
            return True
        if key[0] == "source" and old[key] != value:
            return True
        if key[0] != "source" and value and _looks_source(value.strip('"')) \
                and old[key] != value:
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


# ---------------------------------------------------------------- patches ----

@dataclass
class PatchSummary:
    """Paths and added text of a Codex-style `*** Begin Patch` text."""

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
    if not line.startswith("***"):
        return None
    if not v4a:
        for verb, kind in (("*** Add File: ", "add"), ("*** Update File: ", "update"),
                           ("*** Delete File: ", "delete"), ("*** Move to: ", "move")):
            if line.startswith(verb):
                return kind, line[len(verb):].strip()
        return ("other", "")
    m = _rx("v4a", r"\*\*\*\s*(Add|Update|Delete|Move)\s+(File|to)\s*:\s*(.*)$").match(line)
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
    files: List[_PatchFile] = []
    cur: Optional[_PatchFile] = None
    lines = patch_text.splitlines()
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
                elif kind == "move" and cur is not None:
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
