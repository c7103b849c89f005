"""Helpers that drive the real hook code the way a host does."""
import json
import os
import subprocess
import sys

import sts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIT = os.path.join(ROOT, "tests", "fixtures", "payloads")  # recorded by the host kit


def hook(host, payload, store, event=None):
    """Run one event through the in-process hook runner; parsed answer or None.
    `event` names the event as the command line does, for Copilot's stdin,
    which does not carry it."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    out = sts.run_hook(host, raw, store, event=event)
    return json.loads(out) if out else None


def hook_process(host, payload, sts_home, timeout=20):
    """Run one event through a real `python3 -I -S -c "import sts..." <host>` process."""
    code = "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % ROOT
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    env = dict(os.environ, STS_HOME=str(sts_home))
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, host], input=raw,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                          timeout=timeout, check=False)
    return proc


def json_nodes(value):
    """Every value inside a JSON value, itself first, depth first: the
    objects, lists and strings a recorded payload holds anywhere."""
    yield value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) \
        else ()
    for item in items:
        yield from json_nodes(item)


def kit_events(name):
    """The stdin objects a real host sent in one recorded run of the host kit."""
    path = os.path.join(KIT, name, "hook-stdin.jsonl")
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line)["stdin"] for line in fh if line.strip()]


def deny_reason(answer):
    """The deny text of a Codex/Claude answer, or None when it is not a deny."""
    if not answer:
        return None
    spec = answer.get("hookSpecificOutput", {})
    if spec.get("permissionDecision") == "deny":
        return spec.get("permissionDecisionReason")
    return None


def context_text(answer):
    if not answer:
        return None
    return answer.get("hookSpecificOutput", {}).get("additionalContext")


def kit_calls(name):
    """(event, stdin) of every hook call in one recorded run: the event as the hook
    was registered, which Copilot's camelCase stdin does not carry itself."""
    path = os.path.join(KIT, name, "hook-stdin.jsonl")
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [(row["event"], row["stdin"]) for row in rows]


def hook_event(host, event, payload, store):
    """One event through run_hook with the event name passed as the command line does."""
    return hook(host, payload, store, event)


def kit_call(calls, event, tool=None):
    """The stdin of the first (event, stdin) call of `event` in a recorded run, of
    `tool` when given (named by `tool_name`, or Copilot's `toolName`)."""
    return next(s for e, s in calls if e == event and
                (tool is None or s.get("tool_name", s.get("toolName")) == tool))


def claude_kit(kind="write"):
    """(UserPromptSubmit, PreToolUse) stdin of the recorded Claude Code run
    claude-<kind>-deny-json."""
    events = kit_events("claude-%s-deny-json" % kind)
    prompt = next(e for e in events if e["hook_event_name"] == "UserPromptSubmit")
    tool = next(e for e in events if e["hook_event_name"] == "PreToolUse")
    return prompt, tool


# Where the hosts that do not nest it like Codex, Claude, Qwen and Droid
# (deny_reason) put a deny: (key, the value that means deny, the key of the STOP text).
_DENY_SHAPES = {
    "gemini": ("decision", "deny", "reason"),
    "vibe": ("decision", "deny", "reason"),
    "copilot": ("permissionDecision", "deny", "permissionDecisionReason"),
    "hermes": ("action", "block", "message"),
    "opencode": ("block", True, "reason"),
    "kilo": ("block", True, "reason"),
    "cline": ("block", True, "reason"),
    "pi": ("block", True, "reason"),
    "omp": ("block", True, "reason"),
}


def denial(host, answer):
    """The STOP text of any host's answer, or None when the call may run."""
    if host not in _DENY_SHAPES:
        return deny_reason(answer)
    key, value, text = _DENY_SHAPES[host]
    said = answer.get(key) if answer else None
    return answer.get(text) if said == value and isinstance(said, type(value)) else None


def reason_code(text):
    """The code on the `Reason: <CODE>` line of a STOP message, or None."""
    for line in (text or "").splitlines():
        if line.startswith("Reason:"):
            return line.split(":", 1)[1].strip().split()[0]
    return None


def each_case_on_one_host(hosts, cases):
    """(host, *case) for every host and case, as pytest params: `make test`
    takes each case on one host, the hosts in turn, and `make test-all` (the
    `slow` marker) every pair."""
    import pytest
    return [pytest.param(host, *(case if isinstance(case, tuple) else (case,)),
                         marks=() if hosts[k % len(hosts)] == host else pytest.mark.slow)
            for k, case in enumerate(cases) for host in hosts]


_HOOKED = []   # [(sts.py's mtime in ns, {cache file name: bytes})], read once per test process


def place_hooked_sts(dest):
    """Copy sts.py to the file `dest` as a first hook process leaves it: with
    the bytecode cache that hook wrote beside it (split in parts, see the end
    of sts.py), under sts.py's own mtime, for which that cache holds.

    A test of something else than the first hook then starts where an
    installed sts.py is after one call, without compiling and splitting the
    whole file again (more than a second each).  The cache is this checkout's
    own, made by a real hook process here (the first one of a run pays for
    it, as it would anyway)."""
    import shutil
    import tempfile
    if not _HOOKED:
        home = tempfile.mkdtemp(prefix="sts-first-hook-")
        try:
            proc = hook_process("claude", {"hook_event_name": "SessionStart", "session_id": "s"},
                                home, timeout=60)
        finally:
            shutil.rmtree(home, ignore_errors=True)
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
        mtime = os.stat(os.path.join(ROOT, "sts.py")).st_mtime_ns
        cache = os.path.join(ROOT, "__pycache__")
        files = {}
        for name in os.listdir(cache):
            if name.startswith("sts.") and name.endswith(".pyc"):
                with open(os.path.join(cache, name), "rb") as fh:
                    files[name] = fh.read()
        _HOOKED.append((mtime, files))
    mtime, files = _HOOKED[0]
    shutil.copyfile(os.path.join(ROOT, "sts.py"), dest)
    os.utime(dest, ns=(mtime, mtime))
    cache = os.path.join(os.path.dirname(dest), "__pycache__")
    os.makedirs(cache, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(cache, name), "wb") as fh:
            fh.write(data)


# ---- the audit log as tests read it -------------------------------------------
# sts itself reads the log through its index (State and audit); these two
# read and annotate it the plain way, which only tests need.

def iter_audit(store, key=None, counter=None):
    """The valid RuntimeEvent records of one session's log, or of every log:
    a session's segments oldest first, then its current log, in file order.
    Damaged lines are skipped and counted in counter["damaged"]."""
    files = sts.audit_files(store, key)
    for k in sorted(files):
        for name in files[k]:
            yield from sts._iter_jsonl(store.path("runtime", name), sts.runtime_event_ok, counter)


def annotate_host_effect(store, event_id, effect):
    """Record what a test saw the host do with an event; returns the line.

    The hook always writes `unobserved` (a returned deny does not prove the
    host skipped the call); a test that saw the host says so in an annotation
    line, never by rewriting the log."""
    event_id = event_id.lower() if isinstance(event_id, str) else event_id
    if not sts.event_id_ok(event_id):
        raise ValueError("invalid event id: %r" % (event_id,))
    if effect not in sts.HOST_EFFECTS:
        raise ValueError("invalid host effect: %r" % (effect,))
    record = {"schemaVersion": 1, "annotationId": "ann_" + sts._uuid4_text(),
              "occurredAt": sts.utc_now_iso(), "eventId": event_id, "hostEffect": effect}
    found = sts.find_event(store, event_id)
    if found is not None:
        record["sessionKey"] = found["sessionKey"]
    store.append_annotation(record)
    return record
