"""Stop That Shit -- Hermes Agent plugin (Hermes 0.19+).

Thin bridge: each hook call is turned into the native command-hook envelope
(``hook_event_name``, ``tool_name``, ``tool_input``, ``session_id``, ``cwd``,
``extra``) and handed to ``sts.py hermes``, run with this interpreter in the
import form.  Whatever dict sts.py prints is returned to Hermes unchanged
(``{"action": "block", "message": ...}`` on ``pre_tool_call``,
``{"context": ...}`` on ``pre_llm_call``); no output means ``None``.

When sts.py cannot answer (interpreter missing, timeout, crash, output that is
not one JSON object) the plugin says so once through ``logging`` and fails
open -- except ``pre_tool_call`` while the session's armed marker file exists,
which is blocked.  Standard library only; nothing is imported from Hermes.
"""

import hashlib
import json
import logging
import math
import os
import re
import subprocess
import sys
import threading

INSTALLED_STS_PY = None  # sts install rewrites this line

HOOKS = ("pre_llm_call", "pre_tool_call", "post_tool_call",
         "subagent_start", "subagent_stop", "on_session_end")
TOOL_HOOKS = ("pre_tool_call", "post_tool_call")
ENVELOPE_KEYS = ("tool_name", "args", "session_id")

_LOG = logging.getLogger("stop-that-shit")
_lock = threading.Lock()
_told = set()     # failure kinds already reported
_parents = {}     # child session id / child subagent id -> root session id
_task_sessions = {}  # task id -> the session id it was last seen with


def _sts_py():
    here = os.path.dirname(os.path.abspath(__file__))
    return (os.environ.get("STS_PY") or INSTALLED_STS_PY
            or os.path.normpath(os.path.join(here, "..", "..", "..", "sts.py")))


def _data_dir():
    root = os.environ.get("STS_HOME")
    if root:
        return root
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        return os.path.join(xdg, "stop-that-shit")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "stop-that-shit")


def _session_key(session_id):
    """Same key as sts.py: first 24 hex of sha256 over UTF-8.

    The UTF-16 round trip joins surrogate pairs and makes each lone surrogate
    one U+FFFD, as Node (and sts.py) do.
    """
    if not session_id:
        return "unknown"
    text = str(session_id).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    raw = text.encode("utf-8")
    return hashlib.sha256(raw).hexdigest()[:24]


def _armed(*session_ids):
    try:
        folder = os.path.join(_data_dir(), "armed")
        return any(isinstance(sid, str) and sid and os.path.exists(os.path.join(folder, _session_key(sid)))
                   for sid in session_ids)
    except Exception:
        return False


def _timeout_seconds(hook):
    try:
        ms = int(os.environ.get("STS_TIMEOUT_MS", ""))
    except ValueError:
        ms = 0
    if ms <= 0:
        ms = 10000 if hook in TOOL_HOOKS else 5000
    return ms / 1000.0


def _command():
    python = os.environ.get("STS_PYTHON") or sys.executable or "python3"
    path = os.path.abspath(_sts_py())
    folder, name = os.path.split(path)
    argv = [python, "-I", "-S"]
    if not os.access(folder, os.W_OK):
        argv += ["-X", "pycache_prefix=" + os.path.join(_data_dir(), "pycache")]
    stem = name[:-3] if name.endswith(".py") else ""
    if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", stem):
        code = "import sys; sys.path.insert(0, %r); import %s; sys.exit(%s.main())" % (folder, stem, stem)
        argv += ["-c", code]
    else:
        argv.append(path)
    return argv + ["hermes"]


def _plain(value, stack=()):
    """Kwargs -> JSON-safe data: unknown objects become text, cycles None."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if any(value is seen for seen in stack):
        return None
    inner = stack + (value,)
    if isinstance(value, dict):
        return {str(k): _plain(v, inner) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v, inner) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    try:
        return str(value)
    except Exception:
        return None


def _cwd(task_id=None):
    """The folder Hermes resolves a relative file path against.

    Hermes anchors write_file/patch paths at the task's live terminal folder,
    which a read-only `cd` in `terminal` moves; the process folder would let
    `cd /other/repo` then `write_file src/x` land outside files=.  So ask
    Hermes' own resolver (in-process), and use the process folder only when
    that is not available (native hooks, other Hermes versions).
    """
    if task_id:
        try:
            from tools.file_tools import _resolve_base_dir
            base = str(_resolve_base_dir(str(task_id)))
            if os.path.isabs(base):
                return base
        except Exception:
            pass
    try:
        return os.getcwd()
    except OSError:
        return None


def envelope(hook, kwargs):
    """The native command-hook stdin Hermes itself would send, so sts reads plugin
    and command-hook events alike."""
    args = kwargs.get("args")
    return {
        "hook_event_name": hook,
        "tool_name": kwargs.get("tool_name"),
        "tool_input": args if isinstance(args, dict) else None,
        "session_id": kwargs.get("session_id") or kwargs.get("parent_session_id"),
        "cwd": _cwd(kwargs.get("task_id") if hook == "pre_tool_call" else None),
        "extra": {k: v for k, v in kwargs.items() if k not in ENVELOPE_KEYS},
    }


def _run(hook, request):
    """(answer dict or None, None) on success, (None, why) on failure."""
    argv = _command()
    limit = _timeout_seconds(hook)
    try:
        data = json.dumps(_plain(request), ensure_ascii=False).encode("utf-8")
    except Exception as exc:  # pragma: no cover - _plain returns JSON-safe data
        return None, "request not serialisable: %s" % exc
    try:
        proc = subprocess.run(argv, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=limit)
    except FileNotFoundError:
        return None, "cannot start %s: not found" % argv[0]
    except subprocess.TimeoutExpired:
        return None, "timeout after %d ms" % int(limit * 1000)
    except OSError as exc:
        return None, "cannot start %s: %s" % (argv[0], exc.strerror or exc)
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        last = (": " + lines[-1][:200]) if lines else ""
        return None, "sts.py exited with status %d%s" % (proc.returncode, last)
    text = proc.stdout.decode("utf-8", "replace").strip()
    if not text:
        return None, None
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return None, "sts.py did not print one JSON object"
    return answer, None


def _blocked_reason(why):
    return ("Stop That Shit could not evaluate this call (%s); the task contract is armed, so the "
            "call is blocked. Fix python3/sts.py or turn the guard off." % why)


def _tell_once(hook, why, blocking):
    kind = (why.split(":")[0].split(" after ")[0], blocking)
    with _lock:
        if kind in _told:
            return
        _told.add(kind)
    tail = ("the task contract is armed, so tool calls are blocked until it works again"
            if blocking else "continuing without the guard for this event")
    _LOG.warning("Stop That Shit: no answer from sts.py for %s (%s); %s.", hook, why, tail)


def _root_of(session_id):
    with _lock:
        return _parents.get(session_id) if session_id else None


def _remember_child(kwargs):
    parent = kwargs.get("parent_session_id")
    if not isinstance(parent, str) or not parent:
        return
    with _lock:
        root = _parents.get(parent, parent)
        for key in ("child_session_id", "child_subagent_id"):
            child = kwargs.get(key)
            if isinstance(child, str) and child and child != root:
                _parents[child] = root


def _render(answer):
    if not answer:
        return None
    if answer.get("decision") == "block" and "action" not in answer:
        reason = answer.get("reason")
        return {"action": "block", "message": reason if isinstance(reason, str) and reason
                else "Stop That Shit blocked this call."}
    return answer


def _with_session(kwargs):
    """Tools that execute_code calls from its sandbox reach pre_tool_call with
    an empty session id and the session's task id: name the session the task
    was last seen with, so the call is judged by that session's contract."""
    session, task = kwargs.get("session_id"), kwargs.get("task_id")
    if not isinstance(task, str) or not task:
        return kwargs
    with _lock:
        if isinstance(session, str) and session:
            _task_sessions[task] = session
            return kwargs
        known = _task_sessions.get(task)
    return dict(kwargs, session_id=known) if known else kwargs


def handle(hook, kwargs):
    """One hook call: ask sts.py, return what Hermes should get."""
    if hook == "subagent_start":
        _remember_child(kwargs)
    kwargs = _with_session(kwargs)
    request = envelope(hook, kwargs)
    answer, why = _run(hook, request)
    if why is None:
        return _render(answer)
    blocking = False
    if hook == "pre_tool_call":
        sid = request.get("session_id")
        blocking = _armed(sid, _root_of(sid), _root_of(kwargs.get("task_id")))
    _tell_once(hook, why, blocking)
    return {"action": "block", "message": _blocked_reason(why)} if blocking else None


def _callback(hook):
    def callback(*_args, **kwargs):
        try:
            return handle(hook, kwargs)
        except Exception as exc:  # a shim bug must not break Hermes
            why = "plugin error: %s" % exc
            if hook == "pre_tool_call":
                sid = kwargs.get("session_id") or kwargs.get("parent_session_id")
                if _armed(sid, _root_of(sid), _root_of(kwargs.get("task_id"))):
                    _tell_once(hook, why, True)
                    return {"action": "block", "message": _blocked_reason(why)}
            _tell_once(hook, why, False)
            return None
    callback.__name__ = "stop_that_shit_" + hook
    return callback


def register(ctx):
    """Hermes plugin entry point."""
    for hook in HOOKS:
        ctx.register_hook(hook, _callback(hook))
