"""Benchmark: one PreToolUse hook call in an armed session, as a whole process.

Runs the exact hook command `install` writes (the import form, bytecode cached)
and, in the same run and interleaved, the interpreter floor `python3 -I -S -c pass`.
Prints medians and ratios, then repeats with 1,000 session files and 100,000
audit lines present to show the cost does not grow with them.

    python3 tests/bench.py [--runs N]

Last, the same read and write on Claude Code, Gemini CLI, Copilot CLI and Qwen
Code, each in its own payload shape, interleaved with the floor.
"""
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import sts  # noqa: E402

SESSION = "bench-session"


def event(tool_name, tool_input, call_id):
    return json.dumps({"hook_event_name": "PreToolUse", "session_id": SESSION, "cwd": "/repo",
                       "tool_name": tool_name, "tool_use_id": call_id,
                       "tool_input": tool_input}).encode()


def timed(argv, payload, env):
    start = time.perf_counter()
    proc = subprocess.run(argv, input=payload, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit("hook failed: %r" % proc.stderr)
    return elapsed, proc.stdout


def measure(hook_argv, env, runs):
    floor_argv = [sys.executable, "-I", "-S", "-c", "pass"]
    read = event("Bash", {"command": "git status"}, "c-read")
    write = event("Write", {"file_path": "/repo/a.txt", "content": "x"}, "c-write")
    # A denied shell line: its message names the culprit (the analysis runs again).
    shell = event("Bash", {"command": "git status && rm -rf build"}, "c-shell")
    samples = {"floor": [], "read (allowed)": [], "write (denied)": [], "shell (denied)": []}
    for _ in range(runs):
        samples["floor"].append(timed(floor_argv, b"", env)[0])
        samples["read (allowed)"].append(timed(hook_argv, read, env)[0])
        elapsed, out = timed(hook_argv, write, env)
        if b'"deny"' not in out:
            raise SystemExit("the write was not denied: %r" % out)
        samples["write (denied)"].append(elapsed)
        elapsed, out = timed(hook_argv, shell, env)
        if b'"deny"' not in out:
            raise SystemExit("the shell line was not denied: %r" % out)
        samples["shell (denied)"].append(elapsed)
    return {name: statistics.median(values) for name, values in samples.items()}


def populate(home, sessions, audit_lines):
    """Fill the data dir with other sessions and a long audit log for this session."""
    os.makedirs(os.path.join(home, "sessions"), exist_ok=True)
    state = json.dumps(sts.default_state())
    for index in range(sessions):
        with open(os.path.join(home, "sessions", "%024x.json" % index), "w") as fh:
            fh.write(state)
    key = sts.session_key(SESSION)
    line = json.dumps({"schemaVersion": 1, "eventId": "evt_00000000-0000-4000-8000-000000000000",
                       "occurredAt": "2026-11-30T00:00:00.000Z", "sessionKey": key,
                       "controlState": "armed"}) + "\n"
    os.makedirs(os.path.join(home, "runtime"), exist_ok=True)
    with open(os.path.join(home, "runtime", key + ".jsonl"), "a") as fh:
        fh.write(line * audit_lines)


def report(title, medians):
    floor = medians["floor"]
    print(title)
    for name, value in medians.items():
        print("  %-16s %7.1f ms  %5.2fx floor" % (name, value * 1000, value / floor))


# The new command-hook hosts, each in its own payload shape: (prompt, read, write).
# Copilot's command ends in the event name, as install writes it.
def _host_events(host):
    if host == "gemini":
        base = {"session_id": SESSION, "cwd": "/repo", "timestamp": "2026-12-01T00:00:00.000Z"}
        prompt = dict(base, hook_event_name="BeforeAgent", prompt="$stop-that-shit review")
        read = dict(base, hook_event_name="BeforeTool", tool_name="run_shell_command",
                    tool_input={"command": "git status"})
        write = dict(base, hook_event_name="BeforeTool", tool_name="write_file",
                     tool_input={"file_path": "/repo/a.txt", "content": "x"})
    elif host == "copilot":
        base = {"sessionId": SESSION, "cwd": "/repo", "timestamp": 1796134000000}
        prompt = dict(base, prompt="$stop-that-shit review")
        read = dict(base, toolName="bash", toolArgs={"command": "git status", "description": "d"})
        write = dict(base, toolName="create", toolArgs={"path": "/repo/a.txt", "file_text": "x"})
    else:  # qwen, and claude for reference
        base = {"session_id": SESSION, "cwd": "/repo", "prompt_id": "p"}
        prompt = dict(base, hook_event_name="UserPromptSubmit", prompt="$stop-that-shit review",
                      submitted_prompt="$stop-that-shit review")
        shell, write_tool = (("Bash", "Write") if host == "claude"
                             else ("run_shell_command", "write_file"))
        read = dict(base, hook_event_name="PreToolUse", tool_name=shell, tool_use_id="r",
                    tool_input={"command": "git status"})
        write = dict(base, hook_event_name="PreToolUse", tool_name=write_tool, tool_use_id="w",
                     tool_input={"file_path": "/repo/a.txt", "content": "x"})
    return [json.dumps(e).encode() for e in (prompt, read, write)]


def bench_hosts(runs):
    """The hook's cost per host beside the floor, in one interleaved run."""
    floor_argv = [sys.executable, "-I", "-S", "-c", "pass"]
    hosts = ("claude", "gemini", "copilot", "qwen")
    samples = {"floor": []}
    plans = {}
    with tempfile.TemporaryDirectory(prefix="sts-bench-hosts-") as home:
        env = dict(os.environ, STS_HOME=home)
        for host in hosts:
            argv = shlex.split(sts.hook_command(host, python=sys.executable))
            prompt, read, write = _host_events(host)
            if host == "copilot":
                timed(argv + ["userPromptSubmitted"], prompt, env)
                argv = argv + ["preToolUse"]
            else:
                timed(argv, prompt, env)
            out = timed(argv, write, env)[1]
            if b"deny" not in out:
                raise SystemExit("%s: the write was not denied: %r" % (host, out))
            plans[host] = (argv, read, write)
            samples[host + " read"] = []
            samples[host + " write"] = []
        for _ in range(runs):
            samples["floor"].append(timed(floor_argv, b"", env)[0])
            for host, (argv, read, write) in plans.items():
                samples[host + " read"].append(timed(argv, read, env)[0])
                samples[host + " write"].append(timed(argv, write, env)[0])
    report("per host, armed review session, %d runs each (median; read allowed, write denied):"
           % runs, {name: statistics.median(v) for name, v in samples.items()})


def main():
    runs = 30
    if "--runs" in sys.argv:
        runs = int(sys.argv[sys.argv.index("--runs") + 1])
    command = sts.hook_command("claude", python=sys.executable)
    hook_argv = shlex.split(command)
    print("hook command: %s" % command)
    with tempfile.TemporaryDirectory(prefix="sts-bench-") as home:
        env = dict(os.environ, STS_HOME=home)
        prompt = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": SESSION,
                             "cwd": "/repo", "prompt": "$stop-that-shit review"}).encode()
        out = timed(hook_argv, prompt, env)[1]
        if b"mode=review" not in out:
            raise SystemExit("could not arm the session: %r" % out)
        timed(hook_argv, event("Bash", {"command": "ls"}, "warm"), env)  # warm the bytecode cache
        base = measure(hook_argv, env, runs)
        report("armed review session, %d runs each (median):" % runs, base)
        populate(home, 1000, 100000)
        scaled = measure(hook_argv, env, runs)
        report("same, with 1,000 session files and 100,000 audit lines:", scaled)
        growth = scaled["read (allowed)"] / base["read (allowed)"]
        print("growth with scale (read): %.2fx" % growth)
        target = 3.0
        worst = max(base["read (allowed)"], base["write (denied)"],
                    base["shell (denied)"]) / base["floor"]
        print("target: at most %.1fx floor -> %s (%.2fx)" % (target, "OK" if worst <= target else "OVER", worst))
    bench_hosts(runs)


if __name__ == "__main__":
    main()
