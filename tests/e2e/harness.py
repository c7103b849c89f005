#!/usr/bin/env python3
"""Run one host once against the fake model, isolated, and judge the effect.

Parent side (`run_case`): makes the run folder, starts the child below inside
a private network namespace (`unshare -n`, when available), then reads what
happened: the files in the work folder, the fake model's request log, the
sts audit, and writes the host-effect annotation (what the host was seen to do).

Child side (`python3 harness.py --child SPEC`): brings up loopback, starts the
fake model on 127.0.0.1, writes the host's config, runs the host with a time
bound, kills its whole process group afterwards, and writes result.json.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import fake_model  # noqa: E402
import hosts  # noqa: E402
import install  # noqa: E402
import scenarios  # noqa: E402

HOST_TIMEOUT = float(os.environ.get("STS_E2E_TIMEOUT", "120"))
DENY_OUTCOMES = ("permission_deny_returned", "execution_denial_returned")
EVENT_RE = re.compile(r"\b(evt_[0-9a-f][0-9a-f-]{7,})")


# ---------------------------------------------------------------------------
# Isolation
# ---------------------------------------------------------------------------

_NETNS = None
_STS_WIRING = []


def session_sts_wiring() -> str:
    """"install" or "direct", decided once per process (hosts.sts_wiring)."""
    if not _STS_WIRING:
        _STS_WIRING.append(hosts.sts_wiring())
    return _STS_WIRING[0]


def netns_available() -> bool:
    """True when `unshare -n` works here (root or CAP_SYS_ADMIN)."""
    global _NETNS
    if _NETNS is None:
        try:
            _NETNS = subprocess.run(["unshare", "-n", "--", "true"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, timeout=20).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            _NETNS = False
    return _NETNS


def loopback_up() -> None:
    """Bring `lo` up in a fresh network namespace (SIOCGIFFLAGS/SIOCSIFFLAGS)."""
    import fcntl
    import socket
    import struct
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, req)[:18])[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 0x1))


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_leftovers(root: str) -> List[str]:
    """Kill, one by one by pid, the processes a run left behind that name its
    folder in their argv (Cline leaves a detached `cline --cline-hub-daemon
    --cwd <run>/work` after every command, outside the host's process group).
    This process and its ancestors are spared.  -> the lines killed."""
    spared, pid = set(), os.getpid()
    while pid > 1 and pid not in spared:
        spared.add(pid)
        try:
            with open("/proc/%d/stat" % pid) as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    killed = []
    mark = (root.rstrip("/") + "/").encode()
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not name.isdigit() or int(name) in spared:
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as fh:
                argv = fh.read().replace(b"\0", b" ")
        except OSError:
            continue
        if mark in argv:
            try:
                os.kill(int(name), signal.SIGKILL)
                killed.append("%s %s" % (name, argv[:200].decode("utf-8", "replace")))
            except OSError:
                pass
    return killed


# ---------------------------------------------------------------------------
# Child: one host run
# ---------------------------------------------------------------------------

def child_main(spec_path: str) -> int:
    with open(spec_path) as fh:
        spec = json.load(fh)
    root = spec["root"]
    result = {"netns": spec["netns"], "rc": None, "seconds": None, "timed_out": False,
              "error": None}
    try:
        if spec["netns"]:
            loopback_up()
        scenario = scenarios.BY_NAME[spec["scenario"]]
        if spec["wiring"] == "probe" and scenario.wiring != "probe":
            import dataclasses
            scenario = dataclasses.replace(scenario, wiring="probe")
        server = fake_model.start(spec["script"], os.path.join(root, "requests.jsonl"))
        port = server.server_address[1]
        run = hosts.Run(root, spec["host"], spec["wiring"], port, scenario.prompt(),
                        scenario.directive if scenario.directive else "")
        with open(os.path.join(run.work, scenarios.LS_MARK), "w") as fh:
            fh.write("seed\n")
        if scenario.git or scenario.repo_default:
            subprocess.run(["git", "init", "-q", run.work], check=True)
        if scenario.repo_default:
            os.makedirs(os.path.join(run.work, "src"), exist_ok=True)
            with open(os.path.join(run.work, ".stop-that-shit"), "w") as fh:
                fh.write(scenario.repo_default + "\n")
        if scenario.user_default and scenario.wiring == "sts":
            # Set as a user would, before install (which keeps a default already set).
            subprocess.run(["python3", os.path.join(hosts.REPO, "sts.py"), "default",
                            scenario.user_default], check=True, stdout=subprocess.DEVNULL,
                           env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                "STS_HOME": os.path.join(root, "sts-home"),
                                "LANG": "C.UTF-8"})
        argv, env = hosts.configure(run)
        result["argv"] = argv
        with open(os.path.join(root, "host.stdout"), "wb") as out, \
                open(os.path.join(root, "host.stderr"), "wb") as err:
            t0 = time.monotonic()
            proc = subprocess.Popen(argv, cwd=run.work, env=env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err, start_new_session=True)
            try:
                result["rc"] = proc.wait(timeout=spec["timeout"])
            except subprocess.TimeoutExpired:
                result["timed_out"] = True
                _kill_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    _kill_group(proc.pid, signal.SIGKILL)
                    proc.wait()
                result["rc"] = proc.returncode
            finally:
                # The host's own process group: whatever it left behind, and the
                # host itself if this child is interrupted.
                _kill_group(proc.pid, signal.SIGKILL)
            result["seconds"] = round(time.monotonic() - t0, 2)
        server.shutdown()
    except hosts.WiringError as exc:
        result["error"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - recorded, judged by the parent
        result["error"] = "%s: %s" % (type(exc).__name__, exc)
    result["leftovers_killed"] = stop_leftovers(root)
    with open(os.path.join(root, "result.json"), "w") as fh:
        json.dump(result, fh, indent=1)
    return 0


# ---------------------------------------------------------------------------
# Parent: start a run, judge it
# ---------------------------------------------------------------------------

@dataclass
class CaseResult:
    host: str
    scenario: str
    version: str
    ok: bool = False
    seconds: float = 0.0
    problems: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    run_dir: str = ""
    wiring: str = ""

    def line(self) -> str:
        head = "%s %-8s %-8s %-15s %6.1fs" % ("PASS" if self.ok else "FAIL", self.host,
                                              self.version, self.scenario, self.seconds)
        if not self.ok:
            head += "  " + "; ".join(self.problems)
        return head


def runs_root() -> str:
    base = os.environ.get("STS_E2E_RUNS")
    if not base:
        import tempfile
        base = os.path.join(tempfile.gettempdir(), "sts-e2e-runs")
    return os.path.realpath(base)


SESSION_RE = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9]+$")


def prune_runs(keep: int) -> None:
    """Delete all but the newest `keep` session folders this suite made under runs_root()."""
    import shutil
    root = runs_root()
    try:
        names = sorted(n for n in os.listdir(root) if SESSION_RE.match(n))
    except OSError:
        return
    for name in names[:max(0, len(names) - keep)]:
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def new_run_dir(session_dir: str, host: str, scenario: str) -> str:
    path = os.path.join(session_dir, "%s-%s-%s" % (host, scenario, uuid.uuid4().hex[:6]))
    os.makedirs(path)
    return os.path.realpath(path)


def run_case(host: str, scenario_name: str, session_dir: str,
             wiring: Optional[str] = None) -> CaseResult:
    """Run one case end to end; never raises for a host failure (it becomes a FAIL).

    `wiring` overrides the scenario's ("probe" lets a developer try an sts
    scenario's script on a host whose shim is not there yet).
    """
    scenario = scenarios.BY_NAME[scenario_name]
    if wiring == "probe" and scenario.wiring != "probe":
        import dataclasses
        scenario = dataclasses.replace(scenario, wiring="probe", audit=None)
    if scenario.wiring == "probe":
        wiring = "probe"
    elif wiring not in ("install", "direct"):
        wiring = session_sts_wiring()
    res = CaseResult(host, scenario_name, install.PINS[host][2])
    root = new_run_dir(session_dir, host, scenario_name)
    res.run_dir = root
    work = os.path.join(root, "work")
    script = scenarios.script(scenario, host, work)
    netns = netns_available()
    res.wiring = wiring
    spec = {"root": root, "host": host, "scenario": scenario_name, "script": script,
            "netns": netns, "timeout": HOST_TIMEOUT, "wiring": wiring}
    spec_path = os.path.join(root, "spec.json")
    with open(spec_path, "w") as fh:
        json.dump(spec, fh, indent=1)
    child = [sys.executable, os.path.abspath(__file__), "--child", spec_path]
    if netns:
        child = ["unshare", "-n", "--"] + child
    t0 = time.monotonic()
    with open(os.path.join(root, "child.stderr"), "wb") as err:
        try:
            subprocess.run(child, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=err, timeout=HOST_TIMEOUT + 60)
        except subprocess.TimeoutExpired:
            res.problems.append("harness child ran past %.0f s" % (HOST_TIMEOUT + 60))
    res.seconds = round(time.monotonic() - t0, 1)
    judge(res, scenario, root)
    res.ok = not res.problems
    with open(os.path.join(root, "verdict.json"), "w") as fh:
        json.dump({"ok": res.ok, "problems": res.problems, "notes": res.notes,
                   "seconds": res.seconds, "version": res.version, "wiring": res.wiring},
                  fh, indent=1)
    return res


def _read_json(path: str):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _read_jsonl(path: str) -> list:
    out = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return out


def judge(res: CaseResult, scenario, root: str) -> None:
    """Fill res.problems: every expectation the observation does not meet."""
    p = res.problems
    result = _read_json(os.path.join(root, "result.json"))
    if result is None:
        p.append("no result.json (child crashed; see child.stderr)")
        return
    if result.get("error"):
        p.append(result["error"])
        return
    if result.get("timed_out"):
        p.append("host ran past %.0f s and was killed" % HOST_TIMEOUT)
    elif result.get("rc") != 0:
        p.append("host exited %s" % result.get("rc"))
    if not result.get("netns"):
        res.notes.append("no network namespace: not isolated from the network")
    work = os.path.join(root, "work")
    requests = fake_model.read_log(os.path.join(root, "requests.jsonl"))
    model_posts = [r for r in requests if r.get("api") in ("responses", "chat", "anthropic",
                                                            "gemini")]
    if not model_posts:
        p.append("the host never called the fake model")
        return
    steps = scenarios.script(scenario, res.host, work)["steps"]
    called = {r["decision"][1] for r in model_posts if r.get("decision", [None])[0] == "tool"}
    keys = [s["tool"] for s in steps if s.get("key")] or [steps[0]["tool"]]
    for tool in keys:
        if tool not in called:  # the action under test never happened: prove nothing
            offered = sorted({t for r in model_posts for t in r.get("tools") or []})
            p.append("the model never got to call %s (offered: %s)" % (tool, ", ".join(offered)))
    results = []
    for r in model_posts:
        for text in r.get("toolResults") or []:
            if text not in results:
                results.append(text)
    joined = "\n".join(results)
    for name in scenario.absent:
        if os.path.lexists(os.path.join(work, name)):
            p.append("%s exists (the action ran)" % name)
    for name in scenario.present:
        if not os.path.exists(os.path.join(work, name)):
            p.append("%s does not exist (the action did not run)" % name)
    hidden = scenarios.REASON_HIDDEN.get((res.host, scenario.name))
    if scenario.deny_text and hidden:
        # The host shows the model a fixed text for this deny, never the
        # reason: that text must come back, and the audit holds the reason.
        if hidden[0] not in joined:
            p.append("the host's own deny text %r never reached the model" % hidden[0])
        else:
            res.notes.append("deny reason: %s" % hidden[1])
    elif scenario.deny_text and scenario.deny_text not in joined:
        seen = " | ".join(_gist(t) for t in results if t.strip())
        p.append("deny text %s never reached the model as a tool result (it saw: %s)"
                 % (scenario.deny_text, seen or "no tool result"))
    if scenario.allow:
        for marker in ("E2E_PROBE_DENY", "STOP /"):
            if marker in joined:
                p.append("a deny (%s) reached the model" % marker)
    for text in scenario.results_contain:
        if text not in joined:
            p.append("no tool result shows %r (the command did not run)" % text)
    sub_requests = [r for r in model_posts if scenarios.SUBAGENT_MARK in (r.get("userText") or "")]
    if scenario.no_subagent and sub_requests:
        p.append("a subagent ran (%d model request(s) from it)" % len(sub_requests))
    if scenario.subagent_ran and not sub_requests:
        p.append("no subagent ran")
    if scenario.wiring == "sts" and scenario.mode and res.host in scenarios.CONTEXT_UNSHOWN:
        # The host gives a hook's context to no model request: that the
        # directive armed the contract is proven by the audit instead.
        armed = [e for e in audit_events(os.path.join(root, "sts-home"))
                 if e.get("controlState") == "armed"
                 and (e.get("contract") or {}).get("mode") == scenario.mode]
        if not armed:
            p.append("no audit event under an armed %s contract" % scenario.mode)
        else:
            res.notes.append("contract context: %s; armed %s proven by %d audit event(s)"
                             % (scenarios.CONTEXT_UNSHOWN[res.host], scenario.mode, len(armed)))
    elif scenario.wiring == "sts" and scenario.mode:
        # The directive must have armed the contract, and the model must have been
        # told: without this an allow case would pass with the guard inactive.
        marker = "mode=%s;" % scenario.mode
        if not any(marker in json.dumps(r.get("body"), ensure_ascii=False) for r in model_posts):
            p.append("the contract context (%s) never reached the model" % marker)
    if scenario.wiring == "sts" and res.host in scenarios.CONTEXT_UNSHOWN:
        # No context reaches the model there: a `files=` lock is proven by the
        # audit (a deny shows the judged files; an allow counts the lock's
        # patterns); the wording of the context cannot be shown.
        events = audit_events(os.path.join(root, "sts-home"))
        for text in scenario.model_sees:
            if text.startswith("files="):
                patterns = text[len("files="):].split(",")
                if not any(patterns == (e.get("shown") or {}).get("files")
                           or (e.get("controlState") == "armed" and
                               (e.get("contract") or {}).get("allowedPathCount") == len(patterns))
                           for e in events):
                    p.append("no audit event judged under %s" % text)
            else:
                res.notes.append("context %r: not shown on this host" % text)
    elif scenario.wiring == "sts":
        for text in scenario.model_sees:
            if not any(text in json.dumps(r.get("body"), ensure_ascii=False) for r in model_posts):
                p.append("%r never reached the model (the contract context)" % text)
    if scenario.wiring == "probe":
        probe = _read_jsonl(os.path.join(root, "sts-home", "probe.jsonl"))
        if not probe:
            p.append("the probe hook was never consulted")
    if scenario.audit and scenario.wiring == "sts":
        record_host_effect(res, scenario, root, joined, blocked_ok=not p)


REASON_RE = re.compile(r"Reason: ([A-Z][A-Z0-9_]*)")


def _gist(text: str) -> str:
    """One short line for a failure message: the deny's reason code, else the first line."""
    m = REASON_RE.search(text)
    if m:
        return "a deny with %s" % m.group(1)
    return text.strip().splitlines()[0][:140]


def audit_events(sts_home: str) -> list:
    folder = os.path.join(sts_home, "runtime")
    events = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return events
    for name in names:
        if name.endswith(".jsonl") and name != "annotations.jsonl":
            events.extend(_read_jsonl(os.path.join(folder, name)))
    return events


def record_host_effect(res: CaseResult, scenario, root: str, tool_text: str,
                       blocked_ok: bool) -> None:
    """Find the audit events of this run and annotate the observed host effect."""
    sts_home = os.path.join(root, "sts-home")
    events = audit_events(sts_home)
    by_id = {e.get("eventId"): e for e in events}
    if scenario.audit == "observed_blocked":
        cited = [m for m in EVENT_RE.findall(tool_text) if m in by_id]
        chosen = [by_id[m] for m in dict.fromkeys(cited)]
        if not chosen:
            chosen = [e for e in events
                      if (e.get("decision") or {}).get("reasonCode") == scenario.deny_text
                      and (e.get("decision") or {}).get("responseOutcome") in DENY_OUTCOMES]
        if not chosen:
            res.problems.append("no audit event for the %s deny in runtime/*.jsonl"
                                % scenario.deny_text)
            return
        bad = [e for e in chosen
               if (e.get("decision") or {}).get("responseOutcome") not in DENY_OUTCOMES]
        if bad:
            res.problems.append("audit event %s is not a deny" % bad[0].get("eventId"))
            return
    else:
        allowed = [e for e in events if (e.get("decision") or {}).get("policyOutcome") == "allow"]
        chosen = [e for e in allowed if e.get("controlState") == "armed"
                  and (e.get("contract") or {}).get("mode") == scenario.mode]
        if not chosen:
            seen = ", ".join(sorted({"%s/%s %s" % (e.get("controlState"),
                                                   (e.get("contract") or {}).get("mode"),
                                                   (e.get("decision") or {}).get("reasonCode"))
                                     for e in allowed})) or "none"
            res.problems.append("no allow event under an armed %s contract in runtime/*.jsonl "
                                "(allow events seen: %s)" % (scenario.mode, seen))
            return
    if not blocked_ok:
        return  # the effect was not the expected one: record nothing
    for event in chosen:
        annotate(sts_home, event["eventId"], scenario.audit)
    res.notes.append("annotated %s: %s" % (scenario.audit,
                                           ", ".join(e["eventId"] for e in chosen)))
    # Read the record back the way a user would: `sts.py explain` must show it,
    # by the start of its id as `log` prints it, and a deny must be in `log`.
    event_id = chosen[0]["eventId"]
    shown = explain(sts_home, event_id[:12])
    if EFFECT_SHOWN[scenario.audit] not in shown or event_id not in shown:
        res.problems.append("`sts.py explain %s` does not show %s (%s)"
                            % (event_id[:12], EFFECT_SHOWN[scenario.audit],
                               " ".join(shown.split())[:160] or "no output"))
    if scenario.audit == "observed_blocked":
        # A denied call names what it would have done: its command, code or
        # paths, or, for an agent it would have started, the tool as a delegation.
        if "Verdict: denied" not in shown or not re.search(
                r"^(?:(?:Command|Code|Paths): |Tool: .* \(delegate\)$)", shown, re.M):
            res.problems.append("`sts.py explain %s` shows no denied command or paths (%s)"
                                % (event_id[:12], " ".join(shown.split())[:160]))
        if event_id not in denied_in_log(sts_home):
            res.problems.append("`sts.py log --verdict deny` does not list %s" % event_id)


# What `sts.py explain` says of a recorded host effect.
EFFECT_SHOWN = {"observed_blocked": "What the host did: the host reported it blocked the call",
                "observed_ran": "What the host did: the host reported it ran the call"}


def _sts_cli(sts_home: str, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "STS_HOME": sts_home,
           "HOME": os.path.dirname(sts_home), "LANG": "C.UTF-8"}
    try:
        proc = subprocess.run(["python3", os.path.join(hosts.REPO, "sts.py")] + list(args),
                              env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "%s failed: %s" % (args[0], exc)
    return proc.stdout + proc.stderr


def explain(sts_home: str, event_id: str) -> str:
    return _sts_cli(sts_home, "explain", event_id)


def denied_in_log(sts_home: str) -> List[str]:
    """The event ids `sts.py log --verdict deny --json` lists."""
    try:
        doc = json.loads(_sts_cli(sts_home, "log", "100", "--verdict", "deny", "--json"))
        return [e["eventId"] for e in doc["events"]]
    except (ValueError, KeyError, TypeError):
        return []


def annotate(sts_home: str, event_id: str, effect: str) -> None:
    """The observed host effect: one line in runtime/annotations.jsonl, in its
    documented format (tests/hooks.py annotate_host_effect writes the same)."""
    import datetime
    now = datetime.datetime.now(datetime.timezone.utc)
    line = {"schemaVersion": 1, "annotationId": "ann_%s" % uuid.uuid4(),
            "occurredAt": now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000),
            "eventId": event_id, "hostEffect": effect}
    folder = os.path.join(sts_home, "runtime")
    os.makedirs(folder, exist_ok=True)
    fd = os.open(os.path.join(folder, "annotations.jsonl"),
                 os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        sys.exit(child_main(sys.argv[2]))
    sys.stderr.write("usage: harness.py --child SPEC.json (started by the e2e tests)\n")
    sys.exit(2)
