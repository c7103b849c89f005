"""Helpers for the Hermes, OpenCode, Pi and Oh My Pi adapter tests.

The recorded payloads live in tests/fixtures/payloads (copied from the host kit).
"""
import json
import os

import sts
from hooks import KIT

WORK = "/tmp/run/work"
COMMAND_HOOK_HOSTS = ("codex", "claude", "hermes", "gemini", "copilot", "qwen")  # the kit rewrote every run's cwd to this


def host_events(name):
    """(callback name, arguments) for every callback a real host gave the probe."""
    path = os.path.join(KIT, name, "host-events.jsonl")
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [(row["name"], row["ev"]) for row in rows]


def first(name, callback, pred=None):
    for got, ev in host_events(name):
        if got == callback and (pred is None or pred(ev)):
            return ev
    raise LookupError("%s has no %s" % (name, callback))


def shim_raw(name):
    path = os.path.join(KIT, name, "shim-to-sts.jsonl")
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line)["event"] for line in fh if line.strip()]


# --- Hermes ---------------------------------------------------------------------

def hermes_envelope(hook, kwargs, cwd=WORK):
    """What the Hermes plugin (and native hooks) put on stdin for one callback."""
    kwargs = dict(kwargs)
    args = kwargs.pop("args", None)
    kwargs.pop("tool_input", None)
    envelope = {"hook_event_name": hook, "tool_name": kwargs.pop("tool_name", None),
                "tool_input": args if isinstance(args, dict) else None,
                "session_id": kwargs.pop("session_id", None) or kwargs.get("parent_session_id"),
                "cwd": cwd, "extra": kwargs}
    return envelope


# --- shims ----------------------------------------------------------------------

def request(hook, session, payload, cwd=WORK, ctx=None):
    body = dict(payload)
    body["ctx"] = dict(ctx or {})
    return {"v": 1, "hook": hook, "sessionId": session, "cwd": cwd, "payload": body}


def answer(host, payload, store):
    """The JSON text sts.py prints for one event, parsed; shims always get an object."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    out = sts.run_hook(host, raw, store)
    if host in COMMAND_HOOK_HOSTS:
        return json.loads(out) if out else None  # silence is their "allow"
    return json.loads(out)


def translate(host, payload, store):
    return sts.ADAPTERS[host].translate(payload, store)


def audited(store, text):
    """The audit record of the event a denial names on its `Event:` line, or None."""
    for line in (text or "").splitlines():
        if line.startswith("Event:"):
            return sts.find_event(store, line.split(":", 1)[1].strip())
    return None


def set_state(store, session, **fields):
    """Write a session state file directly (a pending directive error, a mode)."""
    state = sts.default_state()
    contract = fields.pop("contract", None)
    if contract:
        state["contract"].update(contract)
    state.update(fields)
    store._write_json(store.path("sessions", sts.session_key(session) + ".json"), state)
    return state


def get_state(store, session):
    return store.load(sts.session_key(session)).state


BAD_DIRECTIVE = {"code": "INVALID_DIRECTIVE_TOKEN", "token": "fix",
                 "message": "Unknown directive field `fix`; put task text after `--`."}


class LinkStore(sts.Store):
    """A Store whose child -> root links live in memory.

    Translation tests use it so they do not depend on the state section's
    link files; end-to-end tests use the real Store.
    """

    def __init__(self, root=None):
        super().__init__(root)
        self.links = {}

    def link_root(self, session_id):
        seen, current = {session_id}, session_id
        while current in self.links:
            current = self.links[current]
            if current in seen:
                break
            seen.add(current)
        return None if current == session_id else current

    def write_link(self, child_session_id, root_session_id):
        root = self.link_root(root_session_id) or root_session_id
        if root != child_session_id:
            self.links[child_session_id] = root
