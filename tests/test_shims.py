"""Host shims (host_shims/): OpenCode plugin, Pi and Oh My Pi extensions, Hermes plugin.

The JS shims run under Node through tests/shims/driver.mjs, which imports the
real shim file, stands in for the host object and fires scripted callbacks
(one Node process runs the scenarios one after another, each with a shim
module, environment and stderr of its own).
The Hermes plugin is imported in-process with a fake ``ctx``.

Groups:
* failure paths (a tool call is blocked iff the session is armed) and wire
  protocol -- fake sts.py files under
  tests/shims/fakes/; independent of sts.py's adapters;
* ``test_real_*`` -- the same shims against the real sts.py (scenarios: review
  blocks an edit, change allows it, a child session is judged by the root
  contract).  These need the opencode/pi/omp/hermes adapters in sts.py.
"""
import hashlib
import importlib.util
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from hooks import each_case_on_one_host, place_hooked_sts

import sts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIMS = os.path.join(ROOT, "host_shims")
HERE = os.path.join(ROOT, "tests", "shims")
DRIVER = os.path.join(HERE, "driver.mjs")
FAKES = os.path.join(HERE, "fakes")
JS_SHIMS = {
    "opencode": os.path.join(SHIMS, "opencode", "stop-that-shit.js"),
    "pi": os.path.join(SHIMS, "pi", "stop-that-shit.js"),
    "omp": os.path.join(SHIMS, "omp", "stop-that-shit.js"),
}
WIRE = os.path.join(SHIMS, "stop-that-shit-wire.mjs")
HERMES_PLUGIN = os.path.join(SHIMS, "hermes", "stop-that-shit")
NODE = shutil.which("node")
# Node without its JIT compiler: the same JavaScript, started with about half
# the CPU; a scenario is over long before compiled code would pay off.
# (WebAssembly needs the JIT: turning it off too keeps Node from saying so on
# stderr, which the tests read.)
RUN_NODE = [NODE, "--jitless", "--no-expose-wasm"]

needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")


def fake(name):
    return os.path.join(FAKES, name, "sts.py")


def on_one_host(everyday):
    """Every JS host as pytest params, `everyday` alone in `make test` (the
    others marked slow, for `make test-all`): for what the shared plumbing
    does, one module every shim imports (test_the_plumbing_is_written_once)."""
    return [pytest.param(host, marks=() if host == everyday else pytest.mark.slow)
            for host in sorted(JS_SHIMS)]


# --------------------------------------------------------------------------
# harness
# --------------------------------------------------------------------------


@pytest.fixture
def env(tmp_path, ram_path):
    """A clean environment with its own STS_HOME (in RAM); no STS_* leaks in."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("STS_", "FAKE_"))}
    base["STS_HOME"] = str(ram_path / "sts-home")
    base["HOME"] = str(tmp_path / "home")
    base.pop("XDG_STATE_HOME", None)
    base["FAKE_LOG"] = str(tmp_path / "fake-log.jsonl")
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    return base


@pytest.fixture
def work(tmp_path):
    return str(tmp_path / "work")


class DriverServer:
    """One `node driver.mjs --serve` for this file, started on first use: a
    Node start-up costs more than most scenarios (see the driver's header).
    A driver that dies or hangs fails that test and is started afresh."""

    def __init__(self):
        self.proc = None

    def run(self, scenario, env, timeout):
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            self.said = tempfile.TemporaryFile()   # Node's own stderr
            self.proc = subprocess.Popen(RUN_NODE + [DRIVER, "--serve"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.said)
            self.buffer = b""
        request = {"scenario": scenario, "env": env, "cwd": os.getcwd()}
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
            line = self._line(time.monotonic() + timeout)
        except OSError:
            line = None
        if line is None:
            self.said.seek(0)
            why = self.said.read().decode(errors="replace")
            self.stop()
            pytest.fail("the driver gave no answer in %g s:\n%s" % (timeout, why))
        return json.loads(line)

    def _line(self, deadline):
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return None   # it died
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout, self.said):
                stream.close()
            self.proc = None


DRIVER_SERVER = DriverServer()


@pytest.fixture(scope="module", autouse=True)
def _stop_the_driver():
    yield
    DRIVER_SERVER.stop()


def run_driver(env, host, steps, init=None, timeout=60, shim=None):
    """Run one scenario (see tests/shims/driver.mjs) under `env`; what the shim did."""
    scenario = {"host": host, "shim": shim or JS_SHIMS[host], "steps": steps, "init": init or {}}
    reply = DRIVER_SERVER.run(scenario, env, timeout)
    assert "error" not in reply, "driver failed:\n%s\n%s" % (reply["error"], reply["stderr"])
    record = reply["record"]
    record["stderr"] = reply["stderr"]
    return record


def fake_log(env):
    try:
        with open(env["FAKE_LOG"]) as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError:
        return []


def marker_key(session_id):
    """The marker key: first 24 hex of sha256 over UTF-8; a lone surrogate
    counts as one U+FFFD (what Node does, and what sts.session_key does)."""
    if not session_id:
        return "unknown"
    text = session_id.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def arm(env, session_id):
    """Create the armed marker sts.py would keep for this session."""
    folder = os.path.join(env["STS_HOME"], "armed")
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, marker_key(session_id)), "w").close()


def shown(record):
    """Every failure/feedback text the shim showed in the host or on stderr."""
    texts = [n["message"] for n in record["notifies"]]
    texts += [str(entry) for entry in record["logs"]]
    texts += [line for line in record["stderr"].splitlines() if line.strip()]
    return texts


# -- host-shaped events --------------------------------------------------------


def pi_ctx(session, work, idle=True, has_ui=False, session_file=None):
    return {"sessionId": session, "cwd": work, "idle": idle, "hasUI": has_ui, "sessionFile": session_file}


def pi_input(text, ctx, source="interactive"):
    return {"on": "input", "event": {"type": "input", "text": text, "source": source}, "ctx": ctx}


def pi_write(path, ctx, call_id="call_w1"):
    return {"on": "tool_call", "ctx": ctx,
            "event": {"type": "tool_call", "toolName": "write", "toolCallId": call_id,
                      "input": {"path": path, "content": "x\n"}}}


def oc_message(session, text, agent="build", msg_id="msg_1"):
    return {"hook": "chat.message",
            "input": {"sessionID": session, "agent": agent, "messageID": msg_id},
            "output": {"message": {"id": msg_id, "role": "user", "sessionID": session, "agent": agent},
                       "parts": [{"type": "text", "text": text, "id": "prt_" + msg_id,
                                  "messageID": msg_id, "sessionID": session}]}}


def oc_write(session, path, call_id="call_w1"):
    return {"hook": "tool.execute.before",
            "input": {"tool": "write", "sessionID": session, "callID": call_id},
            "output": {"args": {"filePath": path, "content": "x\n"}}}


def oc_created(session, work, parent=None):
    info = {"id": session, "directory": work, "title": "t"}
    if parent:
        info["parentID"] = parent
    return {"hook": "event", "event": {"type": "session.created", "properties": {"sessionID": session, "info": info}}}


OC_AGENTS = [
    {"name": "build", "permission": [{"permission": "*", "pattern": "*", "action": "allow"}]},
    {"name": "plan", "permission": [{"permission": "*", "pattern": "*", "action": "allow"},
                                    {"permission": "edit", "pattern": "*", "action": "deny"},
                                    {"permission": "edit", "pattern": ".opencode/plans/*", "action": "allow"}]},
]


def tool_step(host, session, work, path, call_id="call_w1", **kw):
    """A write of `path` in `session`, shaped for the host."""
    if host == "opencode":
        return oc_write(session, path, call_id)
    return pi_write(path, pi_ctx(session, work, **kw), call_id)


def tool_result(host, record, index=-1):
    """(blocked, reason) of a tool step's result."""
    result = record["results"][index]
    if host == "opencode":
        return result["threw"] is not None, result["threw"]
    returned = result["returned"] or {}
    assert result["threw"] is None, result
    return returned.get("block") is True, returned.get("reason")


# -- Hermes plugin in-process ---------------------------------------------------


class FakeHermesCtx:
    def __init__(self):
        self.hooks = {}

    def register_hook(self, name, fn):
        self.hooks.setdefault(name, []).append(fn)

    def fire(self, name, **kwargs):
        results = [fn(**kwargs) for fn in self.hooks.get(name, [])]
        return results[-1] if results else None


def load_hermes(monkeypatch, env):
    for key in [k for k in os.environ if k.startswith(("STS_", "FAKE_"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith(("STS_", "FAKE_")) or key in ("HOME",):
            monkeypatch.setenv(key, value)
    name = "sts_hermes_plugin_%d" % time.monotonic_ns()
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERMES_PLUGIN, "__init__.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ctx = FakeHermesCtx()
    module.register(ctx)
    return module, ctx


def hermes_prompt(ctx, session, text, **extra):
    kwargs = dict(session_id=session, task_id="task-1", turn_id=session + ":t1", user_message=text,
                  conversation_history=[{"role": "user", "content": text}], is_first_turn=True,
                  model="fake-model", platform="cli", sender_id="")
    kwargs.update(extra)
    return ctx.fire("pre_llm_call", **kwargs)


def hermes_tool(ctx, session, tool, args, call_id="call_h1", task_id="task-1"):
    return ctx.fire("pre_tool_call", tool_name=tool, args=args, task_id=task_id, session_id=session,
                    tool_call_id=call_id, turn_id=session + ":t1", api_request_id="api:1",
                    middleware_trace=[])


# ==========================================================================
# Files and static shape
# ==========================================================================


def test_shim_files_exist_with_install_lines():
    for path in JS_SHIMS.values():
        text = open(path, encoding="utf-8").read()
        assert "const INSTALLED_STS_PY = null; // sts install rewrites this line" in text.splitlines()
        assert "require(" not in text
    hermes = open(os.path.join(HERMES_PLUGIN, "__init__.py"), encoding="utf-8").read()
    assert "INSTALLED_STS_PY = None  # sts install rewrites this line" in hermes.splitlines()
    yaml = open(os.path.join(HERMES_PLUGIN, "plugin.yaml"), encoding="utf-8").read()
    assert "name: stop-that-shit" in yaml
    for hook in ("pre_llm_call", "pre_tool_call", "post_tool_call", "subagent_start",
                 "subagent_stop", "on_session_end"):
        assert hook in yaml


def imports(path):
    return [line for line in open(path, encoding="utf-8") if line.startswith("import ")]


def test_js_shims_import_the_wire_module_and_it_only_node_builtins():
    for path in JS_SHIMS.values():
        assert imports(path) and all(line.rstrip().endswith(' from "../stop-that-shit-wire.mjs";')
                                     for line in imports(path)), path
    assert imports(WIRE) and all(' from "node:' in line for line in imports(WIRE))


def test_the_plumbing_is_written_once():
    """Starting sts.py, the armed markers, the timeouts and the failure answer
    live in the wire module only; a shim holds its host's events."""
    plumbing = ("spawn(", "createHash", "env.STS_PY ", "STS_PYTHON", "STS_TIMEOUT_MS", "STS_HOME",
                '"armed"', "could not evaluate this call", "process.env", "node:")
    wire = open(WIRE, encoding="utf-8").read()
    assert [word for word in plumbing if word not in wire] == []
    for path in JS_SHIMS.values():
        text = open(path, encoding="utf-8").read()
        assert [word for word in plumbing if word in text] == [], path


@needs_node
def test_js_shims_parse_under_node():
    for path in list(JS_SHIMS.values()) + [WIRE]:
        proc = subprocess.run([NODE, "--check", path], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


# ==========================================================================
# Failure paths (blocked iff armed): no sts.py adapters needed
# ==========================================================================

# The sleeper never answers: any limit times out, so a short one keeps the
# wait short (test_timeout_kills_the_child gives it time to write its pid).
FAILURES = {
    "timeout": ("sleeper", {"STS_TIMEOUT_MS": "100"}, "timeout"),
    "garbage": ("garbage", {}, "JSON"),
    "crash": ("crasher", {}, "status 3"),
    "silent": ("silent", {}, "printed nothing"),
    "no-python": ("echo", {"STS_PYTHON": "/nonexistent/python3"}, "not found"),
}


def failure_env(env, tmp_path, kind):
    name, extra, _ = FAILURES[kind]
    env = dict(env)
    env["STS_PY"] = fake(name)
    env["FAKE_PID_FILE"] = str(tmp_path / "pids")
    env.update(extra)
    return env


@needs_node
@pytest.mark.parametrize("host,kind", each_case_on_one_host(sorted(JS_SHIMS), sorted(FAILURES)))
@pytest.mark.parametrize("armed", [True, False], ids=["armed", "unarmed"])
def test_tool_call_failure_blocks_iff_armed(tmp_path, env, work, host, kind, armed):
    env = failure_env(env, tmp_path, kind)
    session = "ses_fail_1"
    if armed:
        arm(env, session)
    rec = run_driver(env, host, [tool_step(host, session, work, work + "/a.txt")])
    blocked, reason = tool_result(host, rec)
    assert blocked is armed
    if armed:
        assert "could not evaluate this call" in reason
        assert FAILURES[kind][2] in reason
        assert "armed" in reason
    texts = shown(rec)
    assert len(texts) == 1, texts
    assert FAILURES[kind][2] in texts[0]
    if kind == "timeout":  # the configured limit, not the child's own 60 s
        assert "timeout after 100 ms" in texts[0]


@needs_node
@pytest.mark.parametrize("host", on_one_host("pi"))
def test_timeout_kills_the_child(tmp_path, env, work, host):
    # Long enough for the sleeper to start and write its pid on a busy machine.
    env = dict(failure_env(env, tmp_path, "timeout"), STS_TIMEOUT_MS="400")
    arm(env, "ses_k")
    rec = run_driver(env, host, [tool_step(host, "ses_k", work, work + "/a.txt")])
    assert tool_result(host, rec)[0] is True
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert pids
    deadline = time.time() + 5
    for pid in pids:
        while time.time() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            # a zombie still answers kill(0); check its state
            try:
                with open("/proc/%d/stat" % pid) as fh:
                    if fh.read().split(") ")[1].startswith("Z"):
                        break
            except OSError:
                break
            time.sleep(0.05)
        else:
            pytest.fail("sts child %d still running after the timeout" % pid)


@needs_node
@pytest.mark.parametrize("host", on_one_host("omp"))
def test_failure_is_reported_once(tmp_path, env, work, host):
    env = failure_env(env, tmp_path, "garbage")
    arm(env, "ses_once")
    steps = [tool_step(host, "ses_once", work, work + "/a.txt", call_id="c%d" % i) for i in range(3)]
    rec = run_driver(env, host, steps)
    for i in range(3):
        assert tool_result(host, rec, i)[0] is True
    assert len(shown(rec)) == 1


@needs_node
@pytest.mark.parametrize("host", sorted(JS_SHIMS))
def test_non_tool_hooks_fail_open_even_when_armed(tmp_path, env, work, host):
    env = failure_env(env, tmp_path, "garbage")
    arm(env, "ses_open")
    if host == "opencode":
        steps = [oc_message("ses_open", "$stop-that-shit change"),
                 {"hook": "tool.execute.after", "input": {"tool": "task", "sessionID": "ses_open", "callID": "c1"},
                  "output": {"output": "done", "metadata": {}}},
                 oc_created("ses_child", work, parent="ses_open")]
    else:
        ctx = pi_ctx("ses_open", work)
        steps = [pi_input("$stop-that-shit change", ctx),
                 {"on": "before_agent_start", "event": {"type": "before_agent_start", "prompt": "x"}, "ctx": ctx}]
        if host == "pi":
            steps.append({"on": "session_shutdown", "event": {"type": "session_shutdown"}, "ctx": ctx})
        else:
            steps.append({"on": "session_start", "event": {"type": "session_start"}, "ctx": ctx})
    rec = run_driver(env, host, steps)
    for result in rec["results"]:
        assert result["threw"] is None
    if host == "pi":
        assert rec["results"][0]["returned"] == {"action": "continue"}
    if host == "omp":
        assert rec["results"][0]["returned"] == {}
    assert rec["messages"] == []
    assert len(shown(rec)) >= 1


@needs_node
def test_opencode_failure_goes_to_app_log(tmp_path, env, work):
    env = failure_env(env, tmp_path, "no-python")
    rec = run_driver(env, "opencode", [oc_write("ses_l", work + "/a.txt")])
    assert rec["stderr"].strip() == ""
    assert len(rec["logs"]) == 1
    body = rec["logs"][0]["body"]
    assert body["service"] == "stop-that-shit" and body["level"] == "warn"
    assert "not found" in body["message"]


@needs_node
@pytest.mark.parametrize("host", ["pi", "omp"])
def test_pi_failure_uses_notify_with_ui_and_stderr_without(tmp_path, env, work, host):
    env = failure_env(env, tmp_path, "no-python")
    with_ui = run_driver(env, host, [pi_write(work + "/a", pi_ctx("s1", work, has_ui=True))])
    assert [n["level"] for n in with_ui["notifies"]] == ["warning"]
    assert "not found" in with_ui["notifies"][0]["message"]
    assert with_ui["stderr"].strip() == ""
    headless = run_driver(env, host, [pi_write(work + "/a", pi_ctx("s1", work, has_ui=False))])
    assert headless["notifies"] == []
    assert "not found" in headless["stderr"]


@needs_node
@pytest.mark.parametrize("host", on_one_host("opencode"))
def test_marker_follows_the_data_dir_rules(tmp_path, env, work, host):
    """No STS_HOME: $XDG_STATE_HOME/stop-that-shit, else ~/.local/state/stop-that-shit."""
    env = failure_env(env, tmp_path, "garbage")
    del env["STS_HOME"]
    odd = "ses_\u00fc_\U0001f600_\ud800"
    xdg = dict(env, XDG_STATE_HOME=str(tmp_path / "xdg"))
    arm(dict(xdg, STS_HOME=str(tmp_path / "xdg" / "stop-that-shit")), odd)
    rec = run_driver(xdg, host, [tool_step(host, odd, work, work + "/a")])
    assert tool_result(host, rec)[0] is True
    home_env = dict(env)
    arm(dict(home_env, STS_HOME=os.path.join(env["HOME"], ".local", "state", "stop-that-shit")), "ses_h")
    rec = run_driver(home_env, host, [tool_step(host, "ses_h", work, work + "/a")])
    assert tool_result(host, rec)[0] is True
    rec = run_driver(home_env, host, [tool_step(host, "ses_other", work, work + "/a")])
    assert tool_result(host, rec)[0] is False


@needs_node
def test_omp_child_failure_blocks_when_root_is_armed(tmp_path, env, work):
    """A child only the shim has linked (process-root fallback) inherits the root's marker."""
    env = failure_env(env, tmp_path, "garbage")
    root, child = pi_ctx("ses_root", work), pi_ctx("ses_child", work)
    arm(env, "ses_root")
    # the root's own calls: broken answer + armed marker -> blocked
    steps = [{"on": "session_start", "event": {"type": "session_start"}, "ctx": root},
             {"on": "tool_call", "ctx": root, "event": {"type": "tool_call", "toolName": "read", "toolCallId": "r1",
                                                         "input": {"path": "a"}}}]
    rec = run_driver(env, "omp", steps)
    assert tool_result("omp", rec)[0] is True
    # the task call gets a real answer; only the child's call breaks, and
    # only the root (not the child) has a marker
    env_echo = dict(env, STS_PY=fake("echo"),
                    FAKE_ANSWERS=json.dumps([{"session": "ses_child", "raw": "garbage"}]))
    del env_echo["FAKE_PID_FILE"]
    steps = [{"on": "session_start", "event": {"type": "session_start"}, "ctx": root},
             {"on": "tool_call", "ctx": root, "event": {"type": "tool_call", "toolName": "task", "toolCallId": "t1",
                                                        "input": {"tasks": [{"name": "a", "agent": "task", "task": "go"}]}}},
             {"on": "session_start", "event": {"type": "session_start"}, "ctx": child},
             pi_write(work + "/a", child)]
    rec = run_driver(env_echo, "omp", steps)
    assert tool_result("omp", rec, 1)[0] is False
    blocked, reason = tool_result("omp", rec, 3)
    assert blocked and "not print one JSON object" in reason


# -- Hermes failure paths -------------------------------------------------------

HERMES_FAILURES = {
    "timeout": ("sleeper", {"STS_TIMEOUT_MS": "100"}, "timeout"),
    "garbage": ("garbage", {}, "JSON"),
    "crash": ("crasher", {}, "status 3"),
    "no-python": ("echo", {"STS_PYTHON": "/nonexistent/python3"}, "not found"),
}


@pytest.mark.parametrize("kind", sorted(HERMES_FAILURES))
@pytest.mark.parametrize("armed", [True, False], ids=["armed", "unarmed"])
def test_hermes_pre_tool_call_failure_blocks_iff_armed(tmp_path, env, monkeypatch, caplog, kind, armed):
    name, extra, needle = HERMES_FAILURES[kind]
    env = dict(env, STS_PY=fake(name), FAKE_PID_FILE=str(tmp_path / "pids"), **extra)
    if armed:
        arm(env, "20261130_1")
    module, ctx = load_hermes(monkeypatch, env)
    with caplog.at_level("WARNING", logger="stop-that-shit"):
        out = hermes_tool(ctx, "20261130_1", "write_file", {"path": "/w/a", "content": "x"})
        again = hermes_tool(ctx, "20261130_1", "write_file", {"path": "/w/b", "content": "x"}, call_id="c2")
    if armed:
        assert out["action"] == "block"
        assert needle in out["message"] and "armed" in out["message"]
        assert again["action"] == "block"
    else:
        assert out is None and again is None
    warnings = [r.getMessage() for r in caplog.records if r.name == "stop-that-shit"]
    assert len(warnings) == 1 and needle in warnings[0]
    if kind == "timeout":  # the configured limit, not the child's own 60 s
        assert "timeout after 100 ms" in warnings[0]


def test_hermes_other_hooks_fail_open_when_armed(tmp_path, env, monkeypatch):
    env = dict(env, STS_PY=fake("garbage"))
    arm(env, "20261130_2")
    module, ctx = load_hermes(monkeypatch, env)
    assert hermes_prompt(ctx, "20261130_2", "$stop-that-shit change") is None
    assert ctx.fire("post_tool_call", tool_name="write_file", args={}, session_id="20261130_2",
                    tool_call_id="c1", result="{}") is None
    assert ctx.fire("on_session_end", session_id="20261130_2") is None


def test_hermes_child_failure_uses_root_marker(tmp_path, env, monkeypatch):
    env = dict(env, STS_PY=fake("echo"),
               FAKE_ANSWERS=json.dumps([{"hook": "pre_tool_call", "raw": "oops"}]))
    arm(env, "root_s")
    module, ctx = load_hermes(monkeypatch, env)
    ctx.fire("subagent_start", parent_session_id="root_s", parent_turn_id="t", parent_subagent_id=None,
             child_session_id="child_s", child_subagent_id="sa-0-1", child_role="leaf", child_goal="go")
    out = hermes_tool(ctx, "child_s", "write_file", {"path": "/w/a", "content": "x"}, task_id="sa-0-1")
    assert out["action"] == "block"
    assert hermes_tool(ctx, "stranger", "write_file", {"path": "/w/a"}) is None


# ==========================================================================
# Wire protocol with a scripted fake sts.py
# ==========================================================================


def echo_env(env, answers=()):
    return dict(env, STS_PY=fake("echo"), FAKE_ANSWERS=json.dumps(list(answers)))


@needs_node
@pytest.mark.parametrize("host", sorted(JS_SHIMS))
def test_command_form_and_request_envelope(tmp_path, env, work, host):
    env = echo_env(env)
    rec = run_driver(env, host, [tool_step(host, "ses_env", work, work + "/a.txt", call_id="call_x")],
                     init={"directory": work})
    assert tool_result(host, rec)[0] is False
    (call,) = fake_log(env)
    assert call["argv"] == [host]
    assert call["isolated"] == 1 and call["no_site"] == 1
    req = call["request"]
    assert req["v"] == 1 and req["sessionId"] == "ses_env" and req["cwd"] == work
    assert req["hook"] == ("tool.execute.before" if host == "opencode" else "tool_call")
    if host == "opencode":
        assert req["payload"]["input"]["callID"] == "call_x"
        assert req["payload"]["output"]["args"]["filePath"] == work + "/a.txt"
        # no session.created and session.get answers NotFound: not known to be a root
        assert req["payload"]["ctx"] == {"parentSessionId": None, "ancestryUnknown": True}
    else:
        assert req["payload"]["event"]["toolCallId"] == "call_x"
        assert req["payload"]["event"]["input"]["path"] == work + "/a.txt"
        assert req["payload"]["ctx"]["idle"] is True and req["payload"]["ctx"]["hasUI"] is False
        if host == "omp":
            assert req["payload"]["ctx"]["parentSessionId"] is None
            assert "sessionFile" in req["payload"]["ctx"]


@needs_node
def test_default_sts_path_is_relative_to_the_shim(tmp_path, env, work):
    """Without STS_PY the shim runs ../../sts.py from host_shims/<host>/ (a copy here)."""
    tree = tmp_path / "tree"
    (tree / "host_shims" / "pi").mkdir(parents=True)
    shutil.copy(JS_SHIMS["pi"], tree / "host_shims" / "pi" / "stop-that-shit.js")
    shutil.copy(WIRE, tree / "host_shims")
    shutil.copy(fake("echo"), tree / "sts.py")
    scenario = {"host": "pi", "shim": str(tree / "host_shims" / "pi" / "stop-that-shit.js"),
                "steps": [pi_write(work + "/a", pi_ctx("s", work))]}
    (tmp_path / "sc.json").write_text(json.dumps(scenario))
    proc = subprocess.run(RUN_NODE + [DRIVER, str(tmp_path / "sc.json")], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert [c["argv"] for c in fake_log(env)] == [["pi"]]
    # INSTALLED_STS_PY wins over the relative path, STS_PY over both
    shim = tree / "host_shims" / "pi" / "stop-that-shit.js"
    other = tmp_path / "other dir"
    other.mkdir()
    shutil.copy(fake("garbage"), other / "sts.py")
    text = shim.read_text().replace("const INSTALLED_STS_PY = null; // sts install rewrites this line",
                                    "const INSTALLED_STS_PY = %s; // sts install rewrites this line"
                                    % json.dumps(str(other / "sts.py")))
    shim.write_text(text)
    proc = subprocess.run(RUN_NODE + [DRIVER, str(tmp_path / "sc.json")], env=env, capture_output=True, text=True)
    assert "did not print one JSON object" in proc.stderr
    assert len(fake_log(env)) == 1
    proc = subprocess.run(RUN_NODE + [DRIVER, str(tmp_path / "sc.json")], env=dict(env, STS_PY=fake("echo")),
                          capture_output=True, text=True)
    assert proc.returncode == 0 and len(fake_log(env)) == 2


INSTALLED_SHIM = {"opencode": (".config", "opencode", "plugin", "stop-that-shit.js"),
                  "pi": (".pi", "agent", "extensions", "stop-that-shit.js"),
                  "omp": (".omp", "agent", "extensions", "stop-that-shit.js")}


@needs_node
@pytest.mark.parametrize("host", on_one_host("pi"))
def test_installed_shim_imports_the_installed_wire_module(tmp_path, env, work, host):
    """`sts install` copies the shim and, one folder above it, the wire module
    it imports; the copy runs the sts.py it was pinned to (here a fake put in
    place of the installing sts.py afterwards), wherever the checkout is."""
    app = tmp_path / "app"
    app.mkdir()
    place_hooked_sts(str(app / "sts.py"))
    shutil.copytree(SHIMS, app / "host_shims")
    install_env = {k: v for k, v in env.items() if k not in ("XDG_CONFIG_HOME", "PI_CODING_AGENT_DIR")}
    proc = subprocess.run([sys.executable, str(app / "sts.py"), "install", host], env=install_env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    shutil.rmtree(app / "host_shims")   # the copies must not need the checkout
    shutil.copy(fake("echo"), app / "sts.py")
    shim = os.path.join(env["HOME"], *INSTALLED_SHIM[host])
    rec = run_driver(dict(echo_env(env), STS_PY=""), host, [tool_step(host, "ses_i", work, work + "/a")],
                     shim=shim)
    assert "Stop That Shit" not in rec["stderr"]   # (Node may warn about the seeded package.json)
    assert [c["argv"] for c in fake_log(env)] == [[host]]


@needs_node
def test_opencode_answers_are_applied(tmp_path, env, work):
    env = echo_env(env, [
        {"hook": "chat.message", "answer": {"context": "CONTRACT: review"}},
        {"hook": "tool.execute.before", "tool": "write", "answer": {"block": True, "reason": "STOP / I\nno edits"}},
        {"hook": "tool.execute.before", "tool": "bash", "answer": {"context": "WATCH / H\nhashing"}},
        {"hook": "tool.execute.before", "answer": {}, "extra": "ignored"},
    ])
    steps = [
        oc_message("ses_a", "$stop-that-shit review -- look"),
        {"hook": "experimental.chat.system.transform", "input": {"sessionID": "ses_a"}, "output": {"system": ["base"]}},
        {"hook": "experimental.chat.system.transform", "input": {"sessionID": "ses_b"}, "output": {"system": ["base"]}},
        oc_write("ses_a", work + "/a.txt"),
        {"hook": "tool.execute.before", "input": {"tool": "bash", "sessionID": "ses_a", "callID": "call_b"},
         "output": {"args": {"command": "sha256sum x"}}},
        {"hook": "tool.execute.after", "input": {"tool": "bash", "sessionID": "ses_a", "callID": "call_b"},
         "output": {"title": "", "output": "abc  x", "metadata": {}}},
        {"hook": "tool.execute.before", "input": {"tool": "read", "sessionID": "ses_a", "callID": "call_r"},
         "output": {"args": {"filePath": "a"}}},
        {"hook": "experimental.chat.system.transform", "input": {"sessionID": "ses_a"}, "output": {"system": []}},
    ]
    rec = run_driver(env, "opencode", steps, init={"directory": work, "agents": OC_AGENTS})
    r = rec["results"]
    assert r[1]["output"]["system"] == ["base", "CONTRACT: review"]
    assert r[2]["output"]["system"] == ["base"]
    assert r[3]["threw"] == "STOP / I\nno edits"
    assert r[4]["threw"] is None
    assert r[5]["output"]["output"] == "abc  x\n\n<stop_that_shit_context>\nWATCH / H\nhashing\n</stop_that_shit_context>"
    assert r[6]["threw"] is None
    assert r[7]["output"]["system"] == ["CONTRACT: review"]  # kept for every later turn
    hooks = [c["request"]["hook"] for c in fake_log(env)]
    # tool.execute.after is forwarded only for task
    assert hooks == ["chat.message", "tool.execute.before", "tool.execute.before", "tool.execute.before"]
    assert shown(rec) == []


@needs_node
def test_opencode_agent_can_edit_and_events(tmp_path, env, work):
    env = echo_env(env)
    steps = [
        oc_message("ses_root", "hello", agent="build", msg_id="m1"),
        oc_message("ses_root", "hello", agent="plan", msg_id="m2"),
        oc_message("ses_root", "hello", agent="mystery", msg_id="m3"),
        {"hook": "event", "event": {"type": "message.part.updated", "properties": {"part": {}}}},
        {"hook": "event", "event": {"type": "session.status", "properties": {"sessionID": "ses_root"}}},
        {"hook": "event", "event": {"type": "session.idle", "properties": {"sessionID": "ses_root"}}},
        oc_created("ses_child", work, parent="ses_root"),
        oc_created("ses_grandchild", work, parent="ses_child"),
        oc_write("ses_grandchild", work + "/a.txt"),
        {"hook": "tool.execute.after", "input": {"tool": "task", "sessionID": "ses_root", "callID": "call_t"},
         "output": {"title": "", "output": "<task id=\"ses_child\" state=\"completed\">", "metadata": {"sessionId": "ses_child"}}},
        {"hook": "event", "event": {"type": "session.idle", "properties": {"sessionID": "ses_child"}}},
        {"hook": "event", "event": {"type": "session.deleted", "properties": {"info": {"id": "ses_root"}}}},
    ]
    run_driver(env, "opencode", steps, init={"directory": work, "agents": OC_AGENTS})
    reqs = [c["request"] for c in fake_log(env)]
    assert [r["payload"]["ctx"]["agentCanEdit"] for r in reqs[:3]] == [True, False, None]
    rest = [(r["hook"], r["sessionId"], (r["payload"].get("event") or {}).get("type"), r["payload"]["ctx"]["parentSessionId"])
            for r in reqs[3:]]
    assert rest == [
        ("event", "ses_child", "session.created", "ses_root"),
        ("event", "ses_grandchild", "session.created", "ses_root"),
        ("tool.execute.before", "ses_grandchild", None, "ses_root"),
        ("tool.execute.after", "ses_root", None, None),
        ("event", "ses_child", "session.idle", "ses_root"),
        ("event", "ses_root", "session.deleted", None),
    ]


@needs_node
def test_opencode_ancestry_from_the_sdk(tmp_path, env, work):
    """A child created before the plugin loaded is found through client.session.get."""
    env = echo_env(env)
    sessions = {"ses_old_child": {"parentID": "ses_old_root", "directory": work + "/sub"},
                "ses_old_root": {"directory": work}}
    run_driver(env, "opencode", [oc_write("ses_old_child", "a")], init={"directory": "/elsewhere", "sessions": sessions})
    (call,) = fake_log(env)
    assert call["request"]["payload"]["ctx"]["parentSessionId"] == "ses_old_root"
    assert call["request"]["cwd"] == work + "/sub"


@needs_node
# "hang" waits out the shim's 2 s SDK timeout twice: slow.
@pytest.mark.parametrize("lookup", ["throw", pytest.param("hang", marks=pytest.mark.slow),
                                    "missing"])
def test_opencode_failed_ancestry_lookup_is_not_a_root(tmp_path, env, work, lookup):
    """A null parent after a failed lookup must not read as "root": a root's prompts
    set the contract, a child's never do."""
    env = echo_env(env)
    init = {"directory": work, "agents": OC_AGENTS}
    if lookup != "missing":
        init["sessionLookup"] = lookup
    run_driver(env, "opencode", [oc_message("ses_who", "$stop-that-shit off"),
                                           oc_write("ses_who", work + "/a.txt")], init=init)
    ctxs = [c["request"]["payload"]["ctx"] for c in fake_log(env)]
    assert [(c["parentSessionId"], c.get("ancestryUnknown")) for c in ctxs] == [(None, True)] * 2


@needs_node
def test_opencode_known_root_and_partial_ancestry(tmp_path, env, work):
    """A looked-up root carries no flag; a child whose grandparent cannot be
    looked up names the parent it knows and still says ancestry is unknown."""
    env = echo_env(env)
    sessions = {"ses_r": {"directory": work}, "ses_c": {"parentID": "ses_gone", "directory": work}}
    run_driver(env, "opencode", [oc_write("ses_r", "a"), oc_write("ses_c", "a")],
               init={"directory": work, "sessions": sessions})
    ctxs = [c["request"]["payload"]["ctx"] for c in fake_log(env)]
    assert ctxs == [{"parentSessionId": None},
                    {"parentSessionId": "ses_gone", "ancestryUnknown": True}]


@needs_node
def test_pi_answers_are_applied(tmp_path, env, work):
    env = echo_env(env, [
        {"hook": "input", "session": "s_bad", "answer": {"block": True, "reason": "INVALID_DIRECTIVE_TOKEN"}},
        {"hook": "input", "answer": {"context": "CONTRACT: review"}},
        {"hook": "tool_call", "tool": "write", "answer": {"block": True, "reason": "STOP / I"}},
        {"hook": "tool_call", "tool": "bash", "answer": {"context": "WATCH / H"}},
    ])
    ctx = pi_ctx("s_ok", work)
    steps = [
        pi_input("$stop-that-shit review", ctx),
        {"on": "before_agent_start", "event": {"type": "before_agent_start", "prompt": "x"}, "ctx": ctx},
        {"on": "before_agent_start", "event": {"type": "before_agent_start", "prompt": "x"}, "ctx": ctx},
        pi_write(work + "/a", ctx),
        {"on": "tool_call", "ctx": ctx, "event": {"type": "tool_call", "toolName": "bash", "toolCallId": "b1", "input": {"command": "md5sum a"}}},
        {"on": "tool_result", "ctx": ctx, "event": {"type": "tool_result", "toolName": "bash", "toolCallId": "b1",
                                                     "content": [{"type": "text", "text": "out"}], "isError": False}},
        {"on": "tool_result", "ctx": ctx, "event": {"type": "tool_result", "toolName": "subagent", "toolCallId": "s1",
                                                     "content": [], "isError": False, "details": {"mode": "single", "results": []}}},
        pi_input("$stop-that-shit bogus", pi_ctx("s_bad", work)),
        {"on": "session_shutdown", "event": {"type": "session_shutdown"}, "ctx": ctx},
    ]
    rec = run_driver(env, "pi", steps)
    r = [x["returned"] for x in rec["results"]]
    assert r[0] == {"action": "continue"}
    assert r[1] == {"message": {"customType": "stop-that-shit-context", "content": "CONTRACT: review", "display": False}}
    assert r[2] is None  # delivered once
    assert r[3] == {"block": True, "reason": "STOP / I"}
    assert r[4] is None
    assert r[5] == {"content": [{"type": "text", "text": "out"},
                                {"type": "text", "text": "<stop_that_shit_context>\nWATCH / H\n</stop_that_shit_context>"}]}
    assert r[6] is None
    assert r[7] == {"action": "handled"}
    assert rec["messages"] == [{"message": {"customType": "stop-that-shit-error", "content": "INVALID_DIRECTIVE_TOKEN",
                                            "display": True}, "options": {"triggerTurn": False}}]
    hooks = [c["request"]["hook"] for c in fake_log(env)]
    assert hooks == ["input", "tool_call", "tool_call", "tool_result", "input", "session_shutdown"]
    assert sorted(rec["hooks"]) == ["before_agent_start", "input", "session_shutdown", "tool_call", "tool_result"]


@needs_node
def test_pi_input_carries_idle(tmp_path, env, work):
    env = echo_env(env)
    run_driver(env, "pi", [pi_input("hi", pi_ctx("s", work, idle=False, has_ui=True))])
    (call,) = fake_log(env)
    assert call["request"]["payload"]["ctx"] == {"idle": False, "hasUI": True}
    assert call["request"]["payload"]["event"] == {"type": "input", "text": "hi", "source": "interactive"}


@needs_node
def test_omp_surfaces(tmp_path, env, work):
    env = echo_env(env, [
        {"hook": "session_start", "session": "r", "answer": {"context": "CONTRACT: review (flag)"}},
        {"hook": "command:sts", "session": "r", "answer": {"context": "Status: review"}},
        {"hook": "command:sts", "answer": {"block": True, "reason": "child commands cannot change root authority"}},
        {"hook": "before_agent_start", "answer": {"context": "ROOT CONTRACT"}},
        {"hook": "input", "answer": {"block": True, "reason": "resubmit when idle"}},
    ])
    root = pi_ctx("r", work, session_file="/s/r.jsonl")
    child = pi_ctx("c", work)  # --no-session child: no session file
    late = pi_ctx("late", work)
    task = {"type": "tool_call", "toolName": "task", "toolCallId": "t1",
            "input": {"context": "x", "tasks": [{"name": "A", "agent": "task", "task": "SUBAGENT: go"}]}}
    steps = [
        {"flags": {"sts-contract": "review -- look"}},
        {"on": "session_start", "event": {"type": "session_start"}, "ctx": root},
        {"on": "before_agent_start", "event": {"type": "before_agent_start", "prompt": "p"}, "ctx": root},
        {"command": "sts", "args": "status", "ctx": root},
        {"on": "input", "event": {"type": "input", "text": "x", "source": "extension"}, "ctx": root},
        {"on": "input", "event": {"type": "input", "text": "$stop-that-shit change", "source": "rpc"}, "ctx": root},
        {"on": "tool_call", "event": task, "ctx": root},
        {"bus": "task:subagent:lifecycle", "data": {"id": "A", "parentToolCallId": "t1", "status": "started"}},
        {"settle": True},
        {"on": "session_start", "event": {"type": "session_start"}, "ctx": child, "instance": 1},
        {"on": "before_agent_start", "event": {"type": "before_agent_start", "prompt": "Complete assignment"}, "ctx": child, "instance": 1},
        {"on": "input", "event": {"type": "input", "text": "$stop-that-shit off", "source": "interactive"}, "ctx": child, "instance": 1},
        {"command": "sts", "args": "off", "ctx": child, "instance": 1},
        pi_write(work + "/a", child) | {"instance": 1},
        {"bus": "task:subagent:lifecycle", "data": {"id": "A", "parentToolCallId": "t1", "status": "completed"}},
        {"settle": True},
        {"on": "tool_result", "ctx": root, "event": {"type": "tool_result", "toolName": "task", "toolCallId": "t1", "isError": False,
                                                      "content": [{"type": "text", "text": "done"}], "details": {"results": []}}},
        {"on": "session_start", "event": {"type": "session_start"}, "ctx": late},
        {"on": "tool_approval_resolved", "event": {"toolCallId": "t1", "toolName": "task", "approved": False}, "ctx": child},
    ]
    rec = run_driver(env, "omp", steps)
    assert rec["flags"]["sts-contract"]["type"] == "string"
    assert rec["commands"] == ["sts", "sts"]
    res = {i: x for i, x in enumerate(rec["results"])}
    # flag context is delivered by before_agent_start without a second call
    assert res[1]["returned"]["message"]["content"] == "CONTRACT: review (flag)"
    assert res[3]["returned"] == {}  # extension input: never forwarded
    assert res[4]["returned"] == {"handled": True}
    assert res[8]["returned"]["message"] == {"customType": "stop-that-shit-context", "content": "ROOT CONTRACT", "display": False}
    assert res[9]["returned"] == {}  # child input is never forwarded
    assert [m["message"]["content"] for m in rec["messages"]] == [
        "Status: review", "resubmit when idle", "child commands cannot change root authority"]
    assert {m["message"]["customType"] for m in rec["messages"]} == {"stop-that-shit-context", "stop-that-shit-error"}
    assert all(m["options"] == {"triggerTurn": False} and m["message"]["display"] is True for m in rec["messages"])
    calls = [(c["request"]["hook"], c["request"]["sessionId"], c["request"]["payload"]["ctx"].get("parentSessionId"))
             for c in fake_log(env)]
    assert calls == [
        ("session_start", "r", None),
        ("command:sts", "r", None),
        ("input", "r", None),
        ("tool_call", "r", None),
        ("task:subagent:lifecycle", "r", None),
        ("session_start", "c", "r"),
        ("before_agent_start", "c", "r"),
        ("command:sts", "c", "r"),
        ("tool_call", "c", "r"),
        ("task:subagent:lifecycle", "r", None),
        ("tool_result", "r", None),
        ("session_start", "late", None),  # no task in flight any more: a new root
    ]
    reqs = [c["request"] for c in fake_log(env)]
    assert reqs[0]["payload"]["ctx"]["flag"] == "review -- look"
    assert reqs[0]["payload"]["ctx"]["sessionFile"] == "/s/r.jsonl"
    assert reqs[1]["payload"]["args"] == "status"
    assert reqs[4]["payload"]["event"]["parentToolCallId"] == "t1"


@needs_node
def test_omp_lifecycle_events_reach_sts_in_order(tmp_path, env, work):
    env = echo_env(env)
    root = pi_ctx("r", work)
    task = {"type": "tool_call", "toolName": "task", "toolCallId": "t1", "input": {"tasks": [{"task": "x"}]}}
    steps = [{"on": "tool_call", "event": task, "ctx": root}]
    for status in ("started", "completed"):
        for child in ("A", "B"):
            steps.append({"bus": "task:subagent:lifecycle",
                          "data": {"id": child, "parentToolCallId": "t1", "status": status}})
    steps.append({"bus": "task:subagent:lifecycle", "data": {"id": "A", "parentToolCallId": "t1", "status": "completed"}})
    steps.append({"bus": "task:subagent:lifecycle", "data": {"id": "Z", "parentToolCallId": "unknown", "status": "started"}})
    run_driver(env, "omp", steps)
    seen = [(c["request"]["payload"]["event"]["id"], c["request"]["payload"]["event"]["status"])
            for c in fake_log(env) if c["request"]["hook"] == "task:subagent:lifecycle"]
    # in order, duplicates dropped, unknown calls dropped
    assert seen == [("A", "started"), ("B", "started"), ("A", "completed"), ("B", "completed")]


@needs_node
def test_omp_approval_rejection_is_forwarded_for_tracked_task(tmp_path, env, work):
    env = echo_env(env)
    root = pi_ctx("r", work)
    task = {"type": "tool_call", "toolName": "task", "toolCallId": "t9", "input": {"tasks": [{"task": "x"}]}}
    steps = [
        {"on": "tool_call", "event": task, "ctx": root},
        {"on": "tool_approval_resolved", "event": {"toolCallId": "t9", "toolName": "task", "approved": True}, "ctx": root},
        {"on": "tool_approval_resolved", "event": {"toolCallId": "nope", "toolName": "task", "approved": False}, "ctx": root},
        {"on": "tool_approval_resolved", "event": {"toolCallId": "t9", "toolName": "task", "approved": False}, "ctx": root},
    ]
    run_driver(env, "omp", steps)
    assert [c["request"]["hook"] for c in fake_log(env)] == ["tool_call", "tool_approval_resolved"]


@needs_node
def test_omp_watch_context_appended_as_plain_text(tmp_path, env, work):
    env = echo_env(env, [{"hook": "tool_call", "answer": {"context": "WATCH / T"}}])
    ctx = pi_ctx("r", work)
    steps = [{"on": "tool_call", "ctx": ctx, "event": {"type": "tool_call", "toolName": "bash", "toolCallId": "b", "input": {"command": "ls"}}},
             {"on": "tool_result", "ctx": ctx, "event": {"type": "tool_result", "toolName": "bash", "toolCallId": "b",
                                                          "content": [{"type": "text", "text": "o"}], "isError": False}}]
    rec = run_driver(env, "omp", steps)
    assert rec["results"][1]["returned"] == {"content": [{"type": "text", "text": "o"}, {"type": "text", "text": "WATCH / T"}]}


@needs_node
def test_payload_serialisation_drops_functions_and_cycles(tmp_path, env, work):
    """Host objects with functions/cycles still reach sts.py as plain JSON, untruncated."""
    env = echo_env(env)
    big = "y" * 300000
    driver = tmp_path / "cyc.mjs"
    driver.write_text(
        "import { pathToFileURL } from 'node:url';\n"
        "const mod = await import(pathToFileURL(%s).href);\n"
        "const handlers = {};\n"
        "mod.default({ on: (n, f) => { handlers[n] = f; }, sendMessage() {} });\n"
        "const ev = { type: 'tool_call', toolName: 'write', toolCallId: 'c', input: { path: 'a', content: %s },"
        " fn() {}, n: 10n, when: new Date(0) };\n"
        "ev.self = ev; ev.list = [ev, () => 1];\n"
        "const ctx = { cwd: %s, hasUI: false, isIdle: () => true, sessionManager: { getSessionId: () => 's' } };\n"
        "console.log(JSON.stringify(await handlers.tool_call(ev, ctx) ?? null));\n"
        % (json.dumps(JS_SHIMS["pi"]), json.dumps(big), json.dumps(work)))
    proc = subprocess.run(RUN_NODE + [str(driver)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    (call,) = fake_log(env)
    event = call["request"]["payload"]["event"]
    assert event["input"]["content"] == big
    assert event["self"] is None and event["list"] == [None, None]
    assert "fn" not in event and event["n"] == "10" and event["when"] == "1970-01-01T00:00:00.000Z"


# -- Hermes protocol -----------------------------------------------------------


def test_hermes_envelope_and_answers(tmp_path, env, monkeypatch, work):
    env = echo_env(env, [
        {"hook": "pre_llm_call", "answer": {"context": "CONTRACT"}},
        {"hook": "pre_tool_call", "tool": "write_file", "answer": {"action": "block", "message": "STOP / I"}},
        {"hook": "pre_tool_call", "tool": "terminal", "answer": {"decision": "block", "reason": "legacy"}},
    ])
    monkeypatch.chdir(work)
    module, ctx = load_hermes(monkeypatch, env)
    assert sorted(ctx.hooks) == sorted(module.HOOKS)
    assert hermes_prompt(ctx, "h1", "$stop-that-shit review") == {"context": "CONTRACT"}
    assert hermes_tool(ctx, "h1", "write_file", {"path": "a", "content": "x"}) == {"action": "block", "message": "STOP / I"}
    assert hermes_tool(ctx, "h1", "terminal", {"command": "rm -rf x"}) == {"action": "block", "message": "legacy"}
    assert hermes_tool(ctx, "h1", "read_file", {"path": "a"}) is None
    assert ctx.fire("subagent_start", parent_session_id="h1", parent_turn_id="t", parent_subagent_id=None,
                    child_session_id="h2", child_subagent_id="sa-0", child_role="leaf", child_goal="g") is None
    calls = fake_log(env)
    assert all(c["argv"] == ["hermes"] and c["isolated"] == 1 and c["no_site"] == 1 for c in calls)
    prompt = calls[0]["request"]
    assert prompt["hook_event_name"] == "pre_llm_call" and prompt["session_id"] == "h1"
    assert prompt["tool_name"] is None and prompt["tool_input"] is None and prompt["cwd"] == work
    assert prompt["extra"]["user_message"] == "$stop-that-shit review"
    assert "session_id" not in prompt["extra"]
    tool = calls[1]["request"]
    assert tool == {"hook_event_name": "pre_tool_call", "tool_name": "write_file",
                    "tool_input": {"path": "a", "content": "x"}, "session_id": "h1", "cwd": work,
                    "extra": {"task_id": "task-1", "tool_call_id": "call_h1", "turn_id": "h1:t1",
                              "api_request_id": "api:1", "middleware_trace": []}}
    start = calls[4]["request"]
    assert start["session_id"] == "h1" and start["extra"]["child_session_id"] == "h2"
    assert start["extra"]["parent_session_id"] == "h1"


def test_hermes_cwd_is_the_folder_hermes_resolves_file_paths_against(tmp_path, env, monkeypatch,
                                                                      work):
    """Hermes anchors relative write_file paths at the task's terminal folder,
    which `terminal: cd /other/repo` (a read) moves; the envelope must carry
    that folder, not the process folder, or `src/x` would be judged in the
    wrong place."""
    import sys
    import types
    env = echo_env(env, [{"hook": "pre_tool_call", "tool": "write_file", "answer": {}}])
    monkeypatch.chdir(work)
    other = str(tmp_path / "other-repo")
    fake = types.ModuleType("tools.file_tools")
    fake._resolve_base_dir = lambda task_id: other if task_id == "task-1" else work
    monkeypatch.setitem(sys.modules, "tools", types.ModuleType("tools"))
    monkeypatch.setitem(sys.modules, "tools.file_tools", fake)
    module, ctx = load_hermes(monkeypatch, env)
    hermes_tool(ctx, "h1", "write_file", {"path": "src/x", "content": "x"})
    assert fake_log(env)[0]["request"]["cwd"] == other


def test_hermes_odd_kwargs_are_serialised(tmp_path, env, monkeypatch):
    env = echo_env(env)
    module, ctx = load_hermes(monkeypatch, env)
    loop = []
    loop.append(loop)
    hermes_prompt(ctx, "h", "hi", conversation_history=[object(), loop, float("nan"), b"raw", {1: 2}])
    (call,) = fake_log(env)
    history = call["request"]["extra"]["conversation_history"]
    assert history[0].startswith("<object object")
    assert history[1] == [None] and history[2] is None and history[3] == "raw" and history[4] == {"1": 2}


def test_hermes_default_sts_path(tmp_path, env, monkeypatch):
    tree = tmp_path / "tree"
    shutil.copytree(HERMES_PLUGIN, tree / "host_shims" / "hermes" / "stop-that-shit")
    shutil.copy(fake("echo"), tree / "sts.py")
    for key in [k for k in os.environ if k.startswith(("STS_", "FAKE_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("STS_HOME", env["STS_HOME"])
    monkeypatch.setenv("FAKE_LOG", env["FAKE_LOG"])
    spec = importlib.util.spec_from_file_location(
        "sts_hermes_copy", str(tree / "host_shims" / "hermes" / "stop-that-shit" / "__init__.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ctx = FakeHermesCtx()
    module.register(ctx)
    hermes_prompt(ctx, "h", "hi")
    assert len(fake_log(env)) == 1


# ==========================================================================
# Against the real sts.py: needs the opencode/pi/omp/hermes adapters on main
# ==========================================================================

REVIEW = "$stop-that-shit review -- inspect the parser"
CHANGE = "$stop-that-shit change -- fix the parser"


@pytest.fixture
def real_env(env):
    env = dict(env)
    env.pop("STS_PY", None)  # the shims find ../../sts.py themselves
    # These tests check the answers.  The first hook of a fresh checkout
    # compiles and splits sts.py's bytecode; on a busy machine that can pass
    # the shims' own limit (5 s), which the failure-path tests cover.
    env["STS_TIMEOUT_MS"] = "60000"
    return env


def real_js(tmp_path, env, work, host, prompt, session="ses_real_root"):
    """Prompt `prompt` in a root session, then write work/a.txt."""
    target = os.path.join(work, "a.txt")
    if host == "opencode":
        steps = [oc_created(session, work), oc_message(session, prompt),
                 {"hook": "experimental.chat.system.transform", "input": {"sessionID": session}, "output": {"system": []}},
                 oc_write(session, target)]
        return run_driver(env, host, steps, init={"directory": work, "agents": OC_AGENTS})
    ctx = pi_ctx(session, work)
    steps = [{"on": "session_start", "event": {"type": "session_start"}, "ctx": ctx}] if host == "omp" else []
    steps += [pi_input(prompt, ctx),
              {"on": "before_agent_start", "event": {"type": "before_agent_start", "prompt": prompt}, "ctx": ctx},
              pi_write(target, ctx)]
    return run_driver(env, host, steps)


def prompt_context_delivered(host, rec):
    if host == "opencode":
        return bool(rec["results"][2]["output"]["system"])
    returned = rec["results"][-2]["returned"] or {}
    return bool((returned.get("message") or {}).get("content"))


@needs_node
@pytest.mark.parametrize("host", sorted(JS_SHIMS))
def test_real_review_contract_blocks_an_edit(tmp_path, real_env, work, host):
    rec = real_js(tmp_path, real_env, work, host, REVIEW)
    blocked, reason = tool_result(host, rec)
    assert blocked, rec
    assert "could not evaluate" not in reason
    assert "STOP" in reason
    assert shown(rec) == [], "sts.py did not answer: %s" % shown(rec)
    assert prompt_context_delivered(host, rec)


@needs_node
@pytest.mark.parametrize("host", sorted(JS_SHIMS))
def test_real_change_contract_allows_the_edit(tmp_path, real_env, work, host):
    rec = real_js(tmp_path, real_env, work, host, CHANGE)
    blocked, _ = tool_result(host, rec)
    assert not blocked
    assert shown(rec) == [], "sts.py did not answer: %s" % shown(rec)
    assert prompt_context_delivered(host, rec)


@needs_node
def test_real_opencode_child_session_judged_by_root(tmp_path, real_env, work):
    steps = [oc_created("ses_root", work), oc_message("ses_root", REVIEW),
             {"hook": "tool.execute.before", "input": {"tool": "task", "sessionID": "ses_root", "callID": "call_t"},
              "output": {"args": {"description": "probe", "prompt": "SUBAGENT: write", "subagent_type": "general"}}},
             oc_created("ses_child", work, parent="ses_root"),
             oc_message("ses_child", CHANGE, agent="general", msg_id="m_child"),
             oc_write("ses_child", os.path.join(work, "a.txt"), call_id="call_c")]
    rec = run_driver(real_env, "opencode", steps, init={"directory": work, "agents": OC_AGENTS})
    assert rec["results"][2]["threw"] is None  # delegation is allowed in review
    blocked, reason = tool_result("opencode", rec)
    assert blocked and "could not evaluate" not in reason
    assert shown(rec) == []


@needs_node
def test_real_opencode_unresolvable_session_cannot_set_the_contract(tmp_path, real_env, work):
    """The lookup throws and no session.created was seen: the prompt is no authority
    (it may be a child's), so no contract context is delivered and the edit is not blocked
    by a contract that session tried to set."""
    steps = [oc_message("ses_lost", REVIEW),
             {"hook": "experimental.chat.system.transform", "input": {"sessionID": "ses_lost"}, "output": {"system": []}},
             oc_write("ses_lost", os.path.join(work, "a.txt"))]
    rec = run_driver(real_env, "opencode", steps,
                     init={"directory": work, "agents": OC_AGENTS, "sessionLookup": "throw"})
    assert rec["results"][1]["output"]["system"] == []
    blocked, _ = tool_result("opencode", rec)
    assert not blocked
    assert shown(rec) == []


@needs_node
def test_real_pi_input_without_source_cannot_set_the_contract(tmp_path, real_env, work):
    """Real Pi always names the input source; one without it is no authority."""
    ctx = pi_ctx("pi_nosrc", work)
    nosrc = pi_input(REVIEW, ctx)
    del nosrc["event"]["source"]
    steps = [nosrc, {"on": "before_agent_start", "event": {"type": "before_agent_start", "prompt": REVIEW}, "ctx": ctx},
             pi_write(os.path.join(work, "a.txt"), ctx)]
    rec = run_driver(real_env, "pi", steps)
    assert not prompt_context_delivered("pi", rec)
    assert tool_result("pi", rec)[0] is False
    assert shown(rec) == []


@needs_node
def test_real_omp_child_session_judged_by_root(tmp_path, real_env, work):
    root, child = pi_ctx("omp_root", work), pi_ctx("omp_child", work)
    task = {"type": "tool_call", "toolName": "task", "toolCallId": "call_t",
            "input": {"context": "probe", "tasks": [{"name": "Probe", "agent": "task", "task": "SUBAGENT: write"}]}}
    steps = [{"on": "session_start", "event": {"type": "session_start"}, "ctx": root},
             pi_input(REVIEW, root),
             {"on": "tool_call", "event": task, "ctx": root},
             {"on": "session_start", "event": {"type": "session_start"}, "ctx": child, "instance": 1},
             {"on": "before_agent_start", "event": {"type": "before_agent_start", "prompt": "Complete assignment thoroughly:\n\n" + CHANGE},
              "ctx": child, "instance": 1},
             pi_write(os.path.join(work, "a.txt"), child, call_id="call_c") | {"instance": 1}]
    rec = run_driver(real_env, "omp", steps)
    assert (rec["results"][2]["returned"] or {}).get("block") is not True
    blocked, reason = tool_result("omp", rec)
    assert blocked and "could not evaluate" not in reason
    assert shown(rec) == []


@needs_node
@pytest.mark.parametrize("how", ["flag", "command"])
def test_real_omp_headless_contract(tmp_path, real_env, work, how):
    """omp -p has no input event: --sts-contract or /sts arm the session."""
    ctx = pi_ctx("omp_headless", work)
    if how == "flag":
        steps = [{"flags": {"sts-contract": "review -- inspect"}},
                 {"on": "session_start", "event": {"type": "session_start"}, "ctx": ctx}]
    else:
        steps = [{"on": "session_start", "event": {"type": "session_start"}, "ctx": ctx},
                 {"command": "sts", "args": "review -- inspect", "ctx": ctx}]
    steps.append(pi_write(os.path.join(work, "a.txt"), ctx))
    rec = run_driver(real_env, "omp", steps)
    blocked, reason = tool_result("omp", rec)
    assert blocked and "could not evaluate" not in reason
    assert shown(rec) == []


@needs_node
@pytest.mark.parametrize("host", on_one_host("pi"))
def test_real_armed_marker_then_broken_python(tmp_path, real_env, work, host):
    """sts.py keeps the armed marker; when python later breaks, the shim blocks."""
    real_js(tmp_path, real_env, work, host, REVIEW)
    assert os.path.exists(os.path.join(real_env["STS_HOME"], "armed", marker_key("ses_real_root")))
    broken = dict(real_env, STS_PYTHON="/nonexistent/python3")
    rec = run_driver(broken, host, [tool_step(host, "ses_real_root", work, os.path.join(work, "b.txt"))])
    blocked, reason = tool_result(host, rec)
    assert blocked and "could not evaluate" in reason


@pytest.mark.parametrize("session_id", ["ses_dd2fd03e4ffeHtcyol7Wux4N0K", "20261130_151307_7a7d23",
                                        "\u00fc\U0001f600", "a\ud800b", "x\udc00", ""])
def test_real_marker_key_matches_sts_session_key(session_id):
    """The shims' key function and sts.py's must agree, odd ids included."""
    assert sts.session_key(session_id) == marker_key(session_id)


def real_hermes(monkeypatch, env):
    return load_hermes(monkeypatch, {k: v for k, v in env.items() if k != "STS_PY"})


def test_real_hermes_review_blocks_and_change_allows(tmp_path, real_env, monkeypatch, work):
    monkeypatch.chdir(work)
    module, ctx = real_hermes(monkeypatch, real_env)
    ctx_answer = hermes_prompt(ctx, "20261130_151307_aaaaaa", REVIEW)
    assert isinstance(ctx_answer, dict) and ctx_answer.get("context")
    out = hermes_tool(ctx, "20261130_151307_aaaaaa", "write_file", {"path": os.path.join(work, "a.txt"), "content": "x\n"})
    assert out and out["action"] == "block" and "could not evaluate" not in out["message"]
    ctx_answer = hermes_prompt(ctx, "20261130_151307_bbbbbb", CHANGE)
    assert isinstance(ctx_answer, dict) and ctx_answer.get("context")
    out = hermes_tool(ctx, "20261130_151307_bbbbbb", "write_file", {"path": os.path.join(work, "a.txt"), "content": "x\n"},
                      call_id="call_h2")
    assert out is None


def test_real_hermes_prompt_with_parent_session_id_is_not_root_authority(tmp_path, real_env, monkeypatch, work):
    """The plugin falls back to parent_session_id for a missing session_id; the
    prompt is still a child's and cannot arm the parent."""
    monkeypatch.chdir(work)
    module, ctx = real_hermes(monkeypatch, real_env)
    parent = "20261130_151307_cccccc"
    assert hermes_prompt(ctx, "", REVIEW, session_id=None, parent_session_id=parent) is None
    out = hermes_tool(ctx, parent, "write_file", {"path": os.path.join(work, "a.txt"), "content": "x\n"})
    assert out is None


def test_real_hermes_child_judged_by_root(tmp_path, real_env, monkeypatch, work):
    monkeypatch.chdir(work)
    module, ctx = real_hermes(monkeypatch, real_env)
    root, child = "20261130_151307_root00", "20261130_151312_child0"
    assert hermes_prompt(ctx, root, REVIEW).get("context")
    delegate = hermes_tool(ctx, root, "delegate_task", {"goal": "SUBAGENT: write the probe"}, call_id="call_d")
    assert delegate is None
    ctx.fire("subagent_start", parent_session_id=root, parent_turn_id=root + ":t1", parent_subagent_id=None,
             child_session_id=child, child_subagent_id="sa-0-b871da00", child_role="leaf",
             child_goal="SUBAGENT: write the probe")
    hermes_prompt(ctx, child, "SUBAGENT: write the probe", platform="subagent", task_id="sa-0-b871da00")
    out = hermes_tool(ctx, child, "write_file", {"path": os.path.join(work, "a.txt"), "content": "x\n"},
                      call_id="call_c", task_id="sa-0-b871da00")
    assert out and out["action"] == "block" and "could not evaluate" not in out["message"]
