"""The payload fuzzer: every recorded real payload of the nine hosts, mutated.

Seeds are what the hosts really sent (tests/fixtures/payloads): every stdin
object of the command-hook hosts, and the tool and prompt callbacks of the
plugin hosts in the wire format their shims send.  Each seed runs against a
fresh state folder where every session it names is armed in `review`; then
each mutation of it runs through the real hook runner.  What must hold:

- the hook runner never raises (a host would see a traceback and run the tool)
  and always answers with nothing or one JSON object;
- a tool call of the armed session is never allowed, unless the unmutated
  payload was allowed and the mutation keeps its meaning.  Per kind of
  mutation: input the guard cannot read as the host's event (nested deeper
  than this Python reads, over 8 MiB, not UTF-8, a second value, not an
  object, an event name in another case) is denied whatever the seed was; a
  changed, retyped, dropped or added value (nesting this Python reads
  included) keeps a denied call denied; an unknown top-level
  field or a duplicate key whose last value is the original gives the
  seed's own answer.  A duplicate key whose last value differs is another
  call (the hosts' JSON readers keep the last one): only "no traceback".

`make test` runs a fixed seed over every recorded tool call and a sample of
the rest; `make test-all` (the `slow` marker) runs every seed with several
random draws of every mutation.
"""
import copy
import glob
import json
import os
import random
import shutil

import pytest

import sts
from conftest import ram_dir
from hooks import KIT, json_nodes
from hooks_shim import hermes_envelope, request

ARM = "$stop-that-shit review"
# The shims also name the parent or root session (OpenCode, Kilo Code and Oh
# My Pi `parentSessionId`, Cline `rootSessionId`): another value there is
# another governing session.
SESSION_KEYS = ("session_id", "sessionId", "sessionID", "parent_session_id", "parentSessionId",
                "rootSessionId")
SHIM_SESSION = {"pi": "pi-fuzz-session", "omp": "omp-fuzz-session"}


# --- seeds: what the hosts sent ------------------------------------------------

def _rows(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _host_of(folder):
    return os.path.basename(folder).split("-")[0]


def seeds():
    """(id, host, event from the command line, payload) of every recorded event."""
    out = []
    for folder in sorted(glob.glob(os.path.join(KIT, "*"))):
        host = _host_of(folder)
        stdin = os.path.join(folder, "hook-stdin.jsonl")
        events = os.path.join(folder, "host-events.jsonl")
        if os.path.exists(stdin):
            for n, row in enumerate(_rows(stdin)):
                event = row.get("event") if host == "copilot" else None
                out.append(("%s#%d" % (os.path.basename(folder), n), host, event, row["stdin"]))
        elif os.path.exists(events):
            for n, row in enumerate(_rows(events)):
                payload = _shim_payload(host, row["name"], row["ev"])
                if payload is not None:
                    out.append(("%s#%d" % (os.path.basename(folder), n), host, None, payload))
                    if host == "opencode":
                        # Kilo Code runs OpenCode's shim: the same wire, another host name.
                        out.append(("kilo:%s#%d" % (os.path.basename(folder), n), "kilo", None,
                                    copy.deepcopy(payload)))
    return out


def _shim_payload(host, name, ev):
    """A plugin callback as its shim puts it on sts.py's stdin (tool calls and prompts)."""
    if host == "hermes" and name in ("pre_tool_call", "pre_llm_call"):
        return hermes_envelope(name, ev)
    if host == "opencode" and name == "tool.execute.before":
        return request(name, ev["input"]["sessionID"], ev, ctx={"parentSessionId": None})
    if host == "opencode" and name == "chat.message":
        return request(name, ev["input"]["sessionID"], ev,
                       ctx={"parentSessionId": None, "agentCanEdit": True})
    if host == "cline" and name == "beforeTool":
        # The plugin's beforeTool, as the Cline shim puts it on the wire.
        return request("tool_call", ev["session_id"], {"event": {
            "toolName": ev["tool_name"], "toolCallId": ev["tool_call_id"],
            "input": ev["tool_input"]}}, ctx={"agentId": ev["agent_id"],
                                               "parentAgentId": ev["parent_agent_id"],
                                               "rootSessionId": ev["session_id"]})
    if host in ("pi", "omp") and name in ("tool_call", "input"):
        ctx = {"idle": name == "input", "hasUI": False}
        if host == "omp":
            ctx.update(sessionFile=None, parentSessionId=None)
        return request(name, SHIM_SESSION[host], {"event": ev}, ctx=ctx)
    return None


SEEDS = seeds()
TOOL_EVENTS = {name.lower() for name in ("PreToolUse", "pre_tool_call", "tool.execute.before",
                                         "tool_call", "BeforeTool", "preToolUse", "pre_tool")}


def is_tool_seed(event, payload):
    name = payload.get("hook_event_name") or payload.get("hook") or event
    return isinstance(name, str) and name.lower() in TOOL_EVENTS


# --- running one payload ----------------------------------------------------------

def sessions_in(value):
    found = []
    for node in json_nodes(value):
        for key, item in node.items() if isinstance(node, dict) else ():
            if key in SESSION_KEYS and isinstance(item, str) and item and item not in found:
                found.append(item)
    return found


def arm(store, payload):
    for session in sessions_in(payload):
        event = sts.ControlEvent.from_dict({
            "protocolVersion": 2, "lifecycleVersion": 2, "kind": "prompt.submit",
            "sessionId": session, "prompt": ARM})
        sts.handle_event(event, store)
        assert store.armed_marker(sts.session_key(session))


def run(store, host, event, raw, capsys):
    """(verdict, answer text): 'deny', 'allow'; a raise or a traceback fails."""
    out = sts.run_hook(host, raw, store, event=event)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert isinstance(out, str)
    answer = json.loads(out) if out.strip() else None
    assert answer is None or isinstance(answer, dict), out
    return ("deny" if blocked(answer) else "allow"), out


def blocked(answer):
    if not answer:
        return False
    spec = answer.get("hookSpecificOutput") or {}
    return (spec.get("permissionDecision") == "deny" or answer.get("permissionDecision") == "deny"
            or answer.get("decision") in ("deny", "block") or answer.get("action") == "block"
            or answer.get("block") is True)


# --- mutations ----------------------------------------------------------------------
# Each takes (payload, rng) and returns (raw bytes, keeps_meaning) or None when
# it does not apply.  Paths are lists of keys and indexes into the payload.

def paths(value, prefix=()):
    out = []
    if isinstance(value, dict):
        for key, item in value.items():
            out.append(prefix + (key,))
            out.extend(paths(item, prefix + (key,)))
    elif isinstance(value, list):
        for index, item in enumerate(value[:8]):
            out.append(prefix + (index,))
            out.extend(paths(item, prefix + (index,)))
    return out


def _not_session(path):
    """A session id changed to another string names another session: that
    changes the meaning, and the hosts write it, not the model."""
    return not any(k in SESSION_KEYS for k in path if isinstance(k, str))


def _tool_paths(payload):
    """Paths inside the tool's arguments first: the model writes those."""
    every = [p for p in paths(payload) if _not_session(p)]
    args = [p for p in every if any(k in ("tool_input", "toolArgs", "args", "input") for k in p
                                    if isinstance(k, str))]
    return args or every


def _set(payload, path, value):
    target = payload
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


def _get(payload, path):
    for key in path:
        payload = payload[key]
    return payload


def _dump(payload):
    return json.dumps(payload).encode("utf-8")


def _changed(payload, rng, pick, value):
    choices = pick(payload)
    if not choices:
        return None
    mutated = copy.deepcopy(payload)
    _set(mutated, rng.choice(choices), value)
    return _dump(mutated), False


def deep_list(payload, rng):
    depth = rng.choice((3000, 20000))   # past every reader's limit (1000 is tested in test_cli)
    return _inject(payload, rng, "[" * depth + "]" * depth)


def deep_object(payload, rng):
    depth = rng.choice((3000, 5000))
    return _inject(payload, rng, '{"a":' * depth + "1" + "}" * depth)


def _inject(payload, rng, text):
    """The payload with the JSON text `text` at a random argument path."""
    choices = _tool_paths(payload)
    if not choices:
        return None
    marker = "__fuzz_marker_%d__" % rng.randrange(10 ** 9)
    mutated = copy.deepcopy(payload)
    _set(mutated, rng.choice(choices), marker)
    return json.dumps(mutated).replace('"%s"' % marker, text).encode("utf-8"), False


def long_string(payload, rng):
    size = rng.choice((70 * 1024, 1024 * 1024))
    return _changed(payload, rng, _tool_paths, "A" * size)


def oversize(payload, rng):
    return _changed(payload, rng, _tool_paths, "B" * (sts.STDIN_CAP + 16))


def huge_number(payload, rng):
    text = rng.choice(("1e400", "-1e400", "NaN", "Infinity", "-Infinity", "9" * 5000,
                       "1" + "0" * 400, "-0", "1.7976931348623157e309"))
    choices = [p for p in paths(payload) if not isinstance(_get(payload, p), (dict, list))]
    if not choices:
        return None
    marker = "__fuzz_number__"
    mutated = copy.deepcopy(payload)
    _set(mutated, rng.choice(choices), marker)
    return json.dumps(mutated).replace('"%s"' % marker, text).encode("utf-8"), False


def duplicate_key_same(payload, rng):
    """`"k": other, "k": original`: the last one wins in every JSON reader the
    hosts use, so the meaning is the original's."""
    key = rng.choice(sorted(payload))
    decoy = rng.choice(('"Read"', "null", "1", '{"x": 1}', '"/etc/passwd"'))
    text = json.dumps(payload)
    return text.replace("{", '{"%s": %s, ' % (key, decoy), 1).encode("utf-8"), True


def duplicate_key_other(payload, rng):
    key = rng.choice(sorted(payload))
    decoy = rng.choice(('"Read"', "null", "1", '{"x": 1}', '"view"', '"read_file"'))
    text = json.dumps(payload)
    return (text[:-1] + ', "%s": %s}' % (key, decoy)).encode("utf-8"), False


def lone_surrogate(payload, rng):
    choices = [p for p in paths(payload) if isinstance(_get(payload, p), str) and _not_session(p)]
    if not choices:
        return None
    marker = "__fuzz_surrogate__"
    mutated = copy.deepcopy(payload)
    path = rng.choice(choices)
    _set(mutated, path, marker + _get(payload, path))
    surrogate = rng.choice(("\\udc80", "\\ud800", "\\udfff\\ud800"))
    return json.dumps(mutated).replace(marker, surrogate).encode("utf-8"), False


TYPES = (None, 0, -1, 1.5, True, False, "", "x", [], {}, [1, "a"], {"k": "v"})


def retype(payload, rng):
    choices = [p for p in paths(payload) if _not_session(p)]
    path = rng.choice(choices)
    value = rng.choice([t for t in TYPES if type(t) is not type(_get(payload, path))])
    mutated = copy.deepcopy(payload)
    _set(mutated, path, value)
    return _dump(mutated), False


def drop(payload, rng):
    path = rng.choice(paths(payload))
    mutated = copy.deepcopy(payload)
    parent = _get(mutated, path[:-1])
    parent.pop(path[-1])
    return _dump(mutated), False


def add_field(payload, rng):
    mutated = copy.deepcopy(payload)
    name = rng.choice(("fuzz_extra", "zz_unknown", "x-fuzz"))
    mutated[name] = rng.choice(TYPES + ("A" * 100000,))
    return _dump(mutated), True


def add_inner_field(payload, rng):
    """An extra property inside the tool arguments (hosts that validate
    arguments without removing extras pass it on)."""
    dicts = [p for p in _tool_paths(payload) if isinstance(_get(payload, p), dict)]
    if not dicts:
        return None
    mutated = copy.deepcopy(payload)
    target = _get(mutated, rng.choice(dicts))
    target[rng.choice(("tool_response", "hook_event_name", "session_id", "zz"))] = \
        rng.choice(TYPES)
    return _dump(mutated), False


def event_case(payload, rng):
    key = "hook_event_name" if "hook_event_name" in payload else "hook"
    if not isinstance(payload.get(key), str):
        return None
    mutated = dict(payload)
    name = payload[key]
    mutated[key] = rng.choice((name.lower(), name.upper(), name.swapcase(),
                               name[:1].swapcase() + name[1:]))
    if mutated[key] == name:
        return None
    return _dump(mutated), False


def input_as_string(payload, rng):
    dicts = [p for p in _tool_paths(payload) if isinstance(_get(payload, p), dict)]
    if not dicts:
        return None
    path = rng.choice(dicts)
    mutated = copy.deepcopy(payload)
    _set(mutated, path, json.dumps(_get(payload, path)))
    return _dump(mutated), False


def second_value(payload, rng):
    tail = rng.choice((' {"x": 1}', " []", " 1", json.dumps(payload), "\n" + json.dumps(payload)))
    return (json.dumps(payload) + tail).encode("utf-8"), False


def wrapped(payload, rng):
    text = rng.choice(("[%s]" % json.dumps(payload), json.dumps(json.dumps(payload)), "[]",
                       '"%s"' % "a" * 10, "null", "42"))
    return text.encode("utf-8"), False


def broken_bytes(payload, rng):
    raw = _dump(payload)
    cut = rng.randrange(1, max(2, len(raw)))
    return rng.choice((raw[:cut], b"\xef\xbb\xbf" + raw, raw[:cut] + b"\xff\xfe" + raw[cut:],
                       raw.replace(b"{", b"{\x00", 1))), False


# What each kind of mutation must give (see the module docstring).
MUTATIONS = {
    deep_list: "deep", deep_object: "deep", oversize: "unreadable",
    second_value: "unreadable", wrapped: "unreadable", broken_bytes: "unreadable",
    event_case: "unreadable",
    long_string: "value", huge_number: "value", lone_surrogate: "value", retype: "value",
    drop: "value", add_inner_field: "value", input_as_string: "value",
    add_field: "same", duplicate_key_same: "same",
    duplicate_key_other: "other",
}


# --- the property -----------------------------------------------------------------

def fuzz_seed(host, event, payload, rng, rounds, capsys, tally):
    """The first broken promise for this seed, or None.  Every run has its own
    armed state folder, so no run sees what an earlier one left (a reserved
    agent, a thrash count)."""
    tool = is_tool_seed(event, payload)
    before = run_armed(host, event, payload, _dump(payload), capsys)
    for mutate, kind in MUTATIONS.items():
        if mutate is oversize and rounds == 1 and rng.random() < 0.9:
            continue   # 8 MiB each: the everyday run takes a tenth of them
        for _ in range(rounds):
            made = mutate(copy.deepcopy(payload), rng)
            if made is None:
                continue
            raw = made[0]
            if kind == "deep":
                kind = "value" if _json_reads(raw) else "unreadable"
            verdict = run_armed(host, event, payload, raw, capsys)
            tally[0] += 1
            expected = {"unreadable": "deny", "value": "deny" if before == "deny" else None,
                        "same": before, "other": None}[kind] if tool else None
            if expected is not None and verdict != expected:
                return "%s (%s) gave %s for a tool call of an armed session; unmutated: " \
                    "%s: %r" % (mutate.__name__, kind, verdict, before, raw[:300])
    return None


def _json_reads(raw):
    """Whether this Python reads the nesting: 3.13 reads 5,000 levels, 3.11
    not 1,000.  What it reads is a changed value, judged as one."""
    try:
        json.loads(raw)
    except RecursionError:
        return False
    return True


def run_armed(host, event, payload, raw, capsys):
    home = ram_dir("sts-fuzz-")
    try:
        store = sts.Store(home)
        arm(store, payload)
        return run(store, host, event, raw, capsys)[0]
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _tool_of(payload):
    for key in ("tool_name", "toolName"):
        if key in payload:
            return payload[key]
    body = payload.get("payload") or {}
    inner = body.get("event") or body.get("input") or {}
    return inner.get("toolName") or inner.get("tool")


def _everyday():
    """The first recorded call of each tool on each host, and of each other event."""
    chosen, seen = [], set()
    for name, host, event, payload in SEEDS:
        kind = (host, _tool_of(payload)) if is_tool_seed(event, payload) else \
            (host, event or payload.get("hook_event_name") or payload.get("hook"))
        if kind not in seen:
            seen.add(kind)
            chosen.append((name, host, event, payload))
    return chosen


def test_the_seeds_cover_every_host():
    hosts = {host for _, host, _, payload in SEEDS if is_tool_seed(_, payload)}
    assert hosts == set(sts.ADAPTERS), hosts


def test_fixed_seed_fuzz_of_every_recorded_tool(capsys):
    rng = random.Random(24)
    tally, found = [0], []
    for name, host, event, payload in _everyday():
        problem = fuzz_seed(host, event, payload, rng, 1, capsys, tally)
        if problem:
            found.append("%s (%s): %s" % (name, host, problem))
    with capsys.disabled():
        print("\nfuzz: %d payloads, %d mutated runs" % (len(_everyday()), tally[0]))
    assert not found, "\n".join(found[:10])


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_long_fuzz_of_every_recorded_payload(seed, capsys):
    rng = random.Random(seed * 7919)
    tally, found = [0], []
    for name, host, event, payload in SEEDS:
        problem = fuzz_seed(host, event, payload, rng, 4, capsys, tally)
        if problem:
            found.append("%s (%s): %s" % (name, host, problem))
    with capsys.disabled():
        print("\nfuzz seed %d: %d payloads, %d mutated runs" % (seed, len(SEEDS), tally[0]))
    assert not found, "\n".join(found[:10])


def test_a_call_that_does_not_name_its_own_session_is_denied_while_one_is_armed(capsys):
    # A Cline call without its `sessionId` still names the agent and its
    # parent (ctx.parentAgentId): those say nothing about which session it
    # is, so while any session is armed the call cannot run unjudged.
    name, host, event, payload = next(s for s in SEEDS if s[1] == "cline" and
                                      "run_commands" in json.dumps(s[3]))
    assert run_armed(host, event, payload, _dump(payload), capsys) == "deny"
    dropped = copy.deepcopy(payload)
    dropped.pop("sessionId")
    assert "parentAgentId" in json.dumps(dropped)
    assert run_armed(host, event, payload, _dump(dropped), capsys) == "deny"
