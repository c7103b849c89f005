"""Self-tests of the e2e harness: fake model, judging, host-effect record, collection rule.

Fast and offline (no host needed); collected with the rest of tests/e2e.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import json
import os
import urllib.request
from types import SimpleNamespace

import pytest

import fake_model
import harness
import scenarios


def _load_e2e_conftest():
    """This folder's conftest.py by path (another conftest module is also loaded)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conftest.py")
    spec = importlib.util.spec_from_file_location("sts_e2e_conftest_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


e2e_conftest = _load_e2e_conftest()


@pytest.fixture
def server(tmp_path):
    started = []

    def start(steps, final="FINAL"):
        log = str(tmp_path / "requests.jsonl")
        srv = fake_model.start({"steps": steps, "final_text": final}, log)
        started.append(srv)
        return srv, log
    yield start
    for srv in started:
        srv.shutdown()
        srv.server_close()


def post(srv, path, body):
    url = "http://127.0.0.1:%d%s" % (srv.server_address[1], path)
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer secret"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.headers.get("Content-Type"), resp.read().decode()


def sse_data(text):
    return [json.loads(line[6:]) for line in text.splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def test_listens_on_loopback_only(server):
    srv, _ = server([])
    assert srv.server_address[0] == "127.0.0.1"


def test_responses_custom_tool_then_final_text(server):
    srv, log = server([{"tool": "apply_patch", "input": "*** Begin Patch\n"}])
    tools = [{"type": "custom", "name": "apply_patch"}, {"type": "function", "name": "x"}]
    _, body = post(srv, "/v1/responses", {"tools": tools, "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]})
    done = [e for e in sse_data(body) if e["type"] == "response.completed"][0]
    item = done["response"]["output"][0]
    assert item["type"] == "custom_tool_call" and item["input"] == "*** Begin Patch\n"
    _, body = post(srv, "/v1/responses", {"tools": tools, "input": [
        {"type": "custom_tool_call_output", "call_id": item["call_id"], "output": "DENIED X"}]})
    done = [e for e in sse_data(body) if e["type"] == "response.completed"][0]
    assert done["response"]["output"][0]["content"][0]["text"] == "FINAL"
    entries = fake_model.read_log(log)
    assert [e["decision"] for e in entries] == [["tool", "apply_patch"], ["text", "FINAL"]]
    assert entries[1]["toolResults"] == ["DENIED X"]
    assert entries[0]["headers"]["Authorization"] == "<redacted>"


def test_responses_tool_search_then_namespaced_tool_with_id_from_result(server):
    srv, _ = server([
        {"tool": "tool_search", "args": {"query": "agent"}},
        {"tool": "spawn_agent", "step": 1, "args": {"message": "go"}},
        {"tool": "wait_agent", "step": 2, "args": {"targets": ["{{last.agent_id}}"]}}])
    base = [{"type": "tool_search", "execution": "client"}]
    _, body = post(srv, "/v1/responses", {"tools": base, "input": []})
    item = sse_data(body)[-1]["response"]["output"][0]
    assert item["type"] == "tool_search_call"
    loaded = {"type": "tool_search_output", "call_id": item["call_id"], "tools": [
        {"type": "namespace", "name": "multi_agent_v1", "tools": [
            {"type": "function", "name": "spawn_agent"},
            {"type": "function", "name": "wait_agent"}]}]}
    _, body = post(srv, "/v1/responses", {"tools": base, "input": [loaded]})
    item = sse_data(body)[-1]["response"]["output"][0]
    assert item["name"] == "spawn_agent" and item["namespace"] == "multi_agent_v1"
    spawned = {"type": "function_call_output", "call_id": item["call_id"],
               "output": json.dumps({"agent_id": "agent-42"})}
    _, body = post(srv, "/v1/responses", {"tools": base, "input": [loaded, spawned]})
    item = sse_data(body)[-1]["response"]["output"][0]
    assert item["name"] == "wait_agent"
    assert json.loads(item["arguments"]) == {"targets": ["agent-42"]}
    denied = dict(spawned, output="blocked: no agent id here")
    _, body = post(srv, "/v1/responses", {"tools": base, "input": [loaded, denied]})
    assert sse_data(body)[-1]["response"]["output"][0]["type"] == "message"


@pytest.mark.parametrize("stream", [True, False])
def test_chat_completions_tool_call(server, stream):
    srv, _ = server([{"tool": "write", "args": {"path": "/w/a.txt"}}])
    req = {"stream": stream, "tools": [{"type": "function", "function": {"name": "write"}}],
           "messages": [{"role": "user", "content": "go"}]}
    ctype, body = post(srv, "/v1/chat/completions", req)
    if stream:
        assert ctype == "text/event-stream" and body.rstrip().endswith("data: [DONE]")
        chunks = sse_data(body)
        call = chunks[1]["choices"][0]["delta"]["tool_calls"][0]
        args = chunks[2]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
        assert call["function"]["name"] == "write"
        assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    else:
        msg = json.loads(body)["choices"][0]["message"]
        args = msg["tool_calls"][0]["function"]["arguments"]
    assert json.loads(args) == {"path": "/w/a.txt"}


def test_anthropic_subagent_is_told_apart_by_user_text(server):
    srv, log = server([
        {"tool": "Agent", "unless": "CHILD", "args": {"prompt": "CHILD: write"}},
        {"tool": "Write", "if": "CHILD", "args": {"file_path": "/w/sub.txt"}}])
    tools = [{"name": "Agent"}, {"name": "Write"}]
    _, body = post(srv, "/v1/messages", {"stream": True, "tools": tools,
                                         "messages": [{"role": "user", "content": "parent"}]})
    starts = [e for e in sse_data(body) if e["type"] == "content_block_start"]
    assert starts[0]["content_block"]["name"] == "Agent"
    _, body = post(srv, "/v1/messages", {"tools": tools, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "CHILD: write"}]}]})
    assert json.loads(body)["content"][0]["name"] == "Write"
    _, body = post(srv, "/v1/messages", {"tools": tools, "messages": [
        {"role": "user", "content": "parent"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Agent",
                                           "input": {"prompt": "CHILD: write"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [{"type": "text", "text": "STOP / SCOPE"}]}]}]})
    assert json.loads(body)["content"][0]["text"] == "FINAL"
    entries = fake_model.read_log(log)
    assert entries[2]["toolResults"] == ["STOP / SCOPE"]
    assert "CHILD" not in entries[2]["userText"]


def test_side_requests_get_plain_text(server):
    srv, _ = server([{"tool": "write", "args": {}}])
    _, body = post(srv, "/v1/chat/completions", {"messages": [{"role": "user", "content": "t"}]})
    assert json.loads(body)["choices"][0]["message"]["content"] == "ok"


# ---------------------------------------------------------------------------
# Judging and the host-effect record
# ---------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def explain_reads_annotations(monkeypatch):
    """Stand-in for `sts.py explain`: shows the last annotated effect of the event."""
    def explain(sts_home, event_id):   # event_id: a start of the id, as `log` prints it
        effect = "unobserved"
        path = os.path.join(sts_home, "runtime", "annotations.jsonl")
        if os.path.exists(path):
            with open(path) as fh:
                for line in fh:
                    rec = json.loads(line)
                    if rec.get("eventId", "").startswith(event_id):
                        effect, event_id = rec.get("hostEffect", effect), rec["eventId"]
        words = harness.EFFECT_SHOWN.get(effect, "What the host did: not reported")
        return "Stop That Shit event %s\nCommand: x\nVerdict: denied, X\n%s\n" % (
            event_id, words)

    def denied_in_log(sts_home):
        folder = os.path.join(sts_home, "runtime")
        with open(os.path.join(folder, "abc.jsonl")) as fh:
            return [json.loads(line)["eventId"] for line in fh if line.strip()]
    monkeypatch.setattr(harness, "explain", explain)
    monkeypatch.setattr(harness, "denied_in_log", denied_in_log)


def fake_run(tmp_path, host, scenario, tool_result, files=(), audit=(), rc=0):
    root = tmp_path / "run"
    work = root / "work"
    work.mkdir(parents=True)
    for name in files:
        (work / name).write_text("x")
    (root / "result.json").write_text(json.dumps({"netns": True, "rc": rc, "timed_out": False}))
    steps = scenarios.script(scenarios.BY_NAME[scenario], host, str(work))["steps"]
    context = "Stop That Shit (active): mode=%s; agents=0/1 reserved." % (
        scenarios.BY_NAME[scenario].mode)
    log = [{"api": "chat", "decision": ["tool", steps[0]["tool"]], "tools": [steps[0]["tool"]],
            "toolResults": [], "userText": "task", "body": {"messages": [context]}},
           {"api": "chat", "decision": ["text", "E2E-DONE"], "tools": [steps[0]["tool"]],
            "toolResults": [tool_result], "userText": "task"}]
    (root / "requests.jsonl").write_text("".join(json.dumps(e) + "\n" for e in log))
    runtime = root / "sts-home" / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "abc.jsonl").write_text("".join(json.dumps(e) + "\n" for e in audit))
    return str(root)


def judged(host, scenario, root):
    res = harness.CaseResult(host, scenario, "1")
    harness.judge(res, scenarios.BY_NAME[scenario], root)
    return res


def event(evt, outcome, code, response, state="armed", mode="change"):
    return {"schemaVersion": 1, "eventId": evt, "controlState": state,
            "contract": {"mode": mode, "level": "guard"},
            "decision": {"policyOutcome": outcome, "reasonCode": code,
                         "responseOutcome": response, "hostEffect": "unobserved"}}


def annotations(root):
    path = os.path.join(root, "sts-home", "runtime", "annotations.jsonl")
    with open(path) as fh:
        return [json.loads(line) for line in fh]


def test_blocked_write_is_annotated_with_the_cited_event(tmp_path):
    evt = "evt_1fdd4d6f-7ef7-4981-b42b-436080dc7a60"
    text = "STOP / INTENT\nReason: MODE_FORBIDS_MUTATION\nEvent: %s\n" % evt
    root = fake_run(tmp_path, "pi", "review-write", text, audit=[
        event(evt, "deny_and_explain", "MODE_FORBIDS_MUTATION", "execution_denial_returned",
              mode="review")])
    res = judged("pi", "review-write", root)
    assert res.problems == []
    [line] = annotations(root)
    assert line["eventId"] == evt and line["hostEffect"] == "observed_blocked"


def test_record_must_read_back_through_explain(tmp_path, monkeypatch):
    evt = "evt_5fdd4d6f-7ef7-4981-b42b-436080dc7a60"
    root = fake_run(tmp_path, "codex", "change-write", "Success.", files=["a.txt"], audit=[
        event(evt, "allow", "WITHIN_CONTRACT", "none")])
    monkeypatch.setattr(harness, "explain", lambda home, e: "What the host did: not reported")
    res = judged("codex", "change-write", root)
    assert any("does not show What the host did: the host reported it ran" in p
               for p in res.problems)


def test_write_that_happened_fails_and_records_nothing(tmp_path):
    evt = "evt_2fdd4d6f-7ef7-4981-b42b-436080dc7a60"
    text = "STOP / INTENT\nReason: MODE_FORBIDS_MUTATION\nEvent: %s\n" % evt
    root = fake_run(tmp_path, "pi", "review-write", text, files=["a.txt"], audit=[
        event(evt, "deny_and_explain", "MODE_FORBIDS_MUTATION", "execution_denial_returned")])
    res = judged("pi", "review-write", root)
    assert any("a.txt exists" in p for p in res.problems)
    assert not os.path.exists(os.path.join(root, "sts-home", "runtime", "annotations.jsonl"))


def test_deny_without_audit_event_fails(tmp_path):
    root = fake_run(tmp_path, "claude", "hash-shell", "Reason: HASH_NOT_AUTHORIZED")
    res = judged("claude", "hash-shell", root)
    assert any("no audit event" in p for p in res.problems)


def test_deny_text_must_reach_the_model(tmp_path):
    root = fake_run(tmp_path, "claude", "files-boundary", "File created successfully")
    res = judged("claude", "files-boundary", root)
    assert any("PATH_OUTSIDE_CONTRACT never reached the model" in p for p in res.problems)


def test_allowed_write_is_annotated_observed_ran(tmp_path):
    evt = "evt_3fdd4d6f-7ef7-4981-b42b-436080dc7a60"
    root = fake_run(tmp_path, "codex", "change-write", "Success.", files=["a.txt"], audit=[
        event(evt, "allow", "WITHIN_CONTRACT", "none")])
    res = judged("codex", "change-write", root)
    assert res.problems == []
    assert annotations(root)[0]["hostEffect"] == "observed_ran"


def test_allow_under_an_inactive_guard_proves_nothing(tmp_path):
    evt = "evt_4fdd4d6f-7ef7-4981-b42b-436080dc7a60"
    root = fake_run(tmp_path, "codex", "change-write", "Success.", files=["a.txt"], audit=[
        event(evt, "allow", "CONTROL_INACTIVE", "none", state="observing", mode="unconfirmed")])
    res = judged("codex", "change-write", root)
    assert any("no allow event under an armed change contract" in p for p in res.problems)


def test_contract_context_must_reach_the_model(tmp_path):
    root = fake_run(tmp_path, "pi", "review-write", "Reason: MODE_FORBIDS_MUTATION")
    with open(os.path.join(root, "requests.jsonl")) as fh:
        lines = [json.loads(x) for x in fh]
    lines[0]["body"] = {"messages": ["no contract here"]}
    with open(os.path.join(root, "requests.jsonl"), "w") as fh:
        fh.write("".join(json.dumps(e) + "\n" for e in lines))
    res = judged("pi", "review-write", root)
    assert "the contract context (mode=review;) never reached the model" in res.problems


def test_host_crash_is_a_failure(tmp_path):
    root = fake_run(tmp_path, "pi", "probe-allow", "ok", files=["e2e-allow.txt"], rc=1)
    assert "host exited 1" in judged("pi", "probe-allow", root).problems


# ---------------------------------------------------------------------------
# Collection rule: make test must not collect this folder
# ---------------------------------------------------------------------------

def fake_config(cwd, *args):
    return SimpleNamespace(invocation_params=SimpleNamespace(dir=cwd, args=args))


def test_collected_only_when_asked(monkeypatch):
    monkeypatch.delenv("STS_E2E", raising=False)
    here = e2e_conftest.HERE
    repo = os.path.dirname(os.path.dirname(here))
    assert not e2e_conftest._asked_for(fake_config(repo, "-q", "tests"))
    assert not e2e_conftest._asked_for(fake_config(repo))
    assert e2e_conftest._asked_for(fake_config(repo, "-q", "tests/e2e"))
    assert e2e_conftest._asked_for(fake_config(repo, "tests/e2e/test_hosts.py::test_host_effect"))
    assert e2e_conftest._asked_for(fake_config(here))
    monkeypatch.setenv("STS_E2E", "1")
    assert e2e_conftest._asked_for(fake_config(repo, "tests"))


# ---------------------------------------------------------------------------
# Install cache: reused only when complete and at the pinned version
# ---------------------------------------------------------------------------

def test_install_is_reused_only_when_complete_and_pinned(tmp_path, monkeypatch):
    import install
    monkeypatch.setenv("STS_E2E_CACHE", str(tmp_path))
    folder = tmp_path / "pi-0.73.1"
    assert install.host_dir("pi") == str(folder)
    assert not install.installed("pi")
    pkg = folder / "node_modules" / "@mariozechner" / "pi-coding-agent"
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"version": "0.73.1"}))
    bindir = folder / "node_modules" / ".bin"
    bindir.mkdir()
    (bindir / "pi").write_text("#!/bin/sh\n")
    (bindir / "pi").chmod(0o755)
    assert not install.installed("pi")  # no stamp: an install that never finished
    (folder / "sts-e2e-installed.json").write_text(json.dumps(
        {"packages": install.PINS["pi"][1], "version": "0.73.1"}))
    assert install.installed("pi")
    assert install.install("pi")["cached"] is True
    (pkg / "package.json").write_text(json.dumps({"version": "0.74.0"}))
    assert not install.installed("pi")  # someone changed it: not the pinned host


# ---------------------------------------------------------------------------
# Isolation: a case's namespace has loopback and nothing else
# ---------------------------------------------------------------------------

def test_private_network_namespace_has_only_a_working_loopback():
    import subprocess
    import sys as _sys
    if not harness.netns_available():
        pytest.skip("`unshare -n` is not available here (needs root or CAP_SYS_ADMIN); "
                    "the matrix then warns that its runs are not isolated")
    probe = (
        "import socket, sys; sys.path.insert(0, %r); import harness\n"
        "harness.loopback_up()\n"
        "names = [n for _, n in socket.if_nameindex()]\n"
        "srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1)\n"
        "c = socket.create_connection(srv.getsockname(), timeout=5)\n"
        "print(','.join(names))\n") % os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(["unshare", "-n", "--", _sys.executable, "-c", probe],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "lo"


def test_leftovers_naming_the_run_folder_are_stopped_and_others_are_not(tmp_path):
    """A detached process whose argv names the run folder (Cline's hub daemon)
    is killed after the run; one that does not name it is left alone."""
    import subprocess
    run = tmp_path / "run"
    (run / "work").mkdir(parents=True)
    code = "import time; time.sleep(60)"
    mine = subprocess.Popen([sys.executable, "-c", code, "--cwd", str(run / "work")],
                            start_new_session=True)
    other = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "elsewhere")],
                             start_new_session=True)
    try:
        killed = harness.stop_leftovers(str(run))
        assert mine.wait(timeout=10) is not None
        assert [line.split()[0] for line in killed] == [str(mine.pid)]
        assert other.poll() is None
    finally:
        for proc in (mine, other):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
