"""Benchmark: one PreToolUse hook call in an armed session, as a whole process.

Runs the exact hook command `install` writes (the import form, bytecode cached)
and, in the same run and interleaved, the interpreter floor `python3 -I -S -c pass`.
Prints medians and ratios, then repeats with 1,000 session files and 100,000
audit lines present to show the cost does not grow with them, then times
long commands of many shapes, each at the largest size the analyzer still
reads in full (its work limit) and at the 64 KiB cap.

    python3 tests/bench.py [--runs N] [--python PATH ...] [--no-shapes] [--sts PATH]
                           [--before PATH] [--default] [--mode change]

--default arms this sts.py's session from the user default `review`, no
directive.  --mode change arms a change session instead of a review, and
times calls it allows: a read, a shell line that deletes inside the
workspace (judged by undo=) and a file write.

Last, the same read and write on Claude Code, Gemini CLI, Copilot CLI, Qwen
Code and Factory Droid, each in its own payload shape, interleaved with the floor.

--default arms this sts.py's session from a user default of `review` (set with
`sts.py default review`; the prompt holds no directive) instead of the
directive, so the rows show the cost with a default in force; a --before
version is still armed by the directive.

--sts times another sts.py (an older version, to compare) with the same
command form.  --before PATH times another sts.py beside this one, run for
run in the same loop (rows marked `before`), so that both ratios share one
floor and one moment of the machine's load.  Each --python runs the whole benchmark under that interpreter (default: the
one running this script), so one run compares versions side by side.

Two clocks per process: CPU (user + system time of the child, from wait4)
and wall.  The ratios use CPU: on a shared machine other processes stretch
the wall clock of both the floor and the hook, not the work they do.
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
TARGET = 2.0  # at most this many times the floor, on every Python measured
SHAPE_TARGET = 5.0
SHAPE_TIMEOUT = 20  # seconds: an older sts.py may take minutes on a long command


def event(tool_name, tool_input, call_id):
    return json.dumps({"hook_event_name": "PreToolUse", "session_id": SESSION, "cwd": "/repo",
                       "tool_name": tool_name, "tool_use_id": call_id,
                       "tool_input": tool_input}).encode()


def run_once(argv, payload, env, timeout=None):
    """(cpu, wall, stdout): the child is reaped with wait4 to read its CPU time.
    Past `timeout` seconds the child is killed and (inf, inf, None) returned."""
    import threading
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    timer = threading.Timer(timeout, proc.kill) if timeout is not None else None
    if timer is not None:
        timer.start()
    try:
        proc.stdin.write(payload)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if timer is not None:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") \
        else status >> 8
    proc.stdout.close()
    proc.stderr.close()
    if timer is not None and proc.returncode == -9:
        return float("inf"), float("inf"), None
    if proc.returncode != 0:
        raise SystemExit("process failed: %r" % err[-500:])
    return usage.ru_utime + usage.ru_stime, wall, out


def measure(python, hooks, runs, payloads, timeout=None):
    """Interleaved runs of the floor and each payload under each hook
    (hooks: [(prefix, argv, env)], e.g. this sts.py and an older one);
    medians of CPU and wall, keyed prefix + payload name.  A run past
    `timeout` seconds (an older sts.py on a long command) counts as infinite
    and that payload is not run again under that hook."""
    floor_argv = [python, "-I", "-S", "-c", "pass"]
    samples = {"floor": ([], [])}
    for prefix, _, _ in hooks:
        for name in payloads:
            samples[prefix + name] = ([], [])
    for _ in range(runs):
        cpu, wall, _ = run_once(floor_argv, b"", hooks[0][2])
        samples["floor"][0].append(cpu)
        samples["floor"][1].append(wall)
        for name, (payload, check) in payloads.items():
            for prefix, argv, env in hooks:
                if samples[prefix + name][0][-1:] == [float("inf")]:
                    continue
                cpu, wall, out = run_once(argv, payload, env, timeout)
                if out is not None and check is not None and check not in out:
                    raise SystemExit("%s%s: expected %r in the answer, got %r"
                                     % (prefix, name, check, out))
                samples[prefix + name][0].append(cpu)
                samples[prefix + name][1].append(wall)
    return {name: (statistics.median(c), statistics.median(w))
            for name, (c, w) in samples.items()}


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
    floor_cpu, floor_wall = medians["floor"]
    print(title)
    print("  %-24s %9s %7s %9s" % ("", "cpu", "ratio", "wall"))
    for name, (cpu, wall) in medians.items():
        if cpu == float("inf"):
            print("  %-24s   (killed after %d s of wall time)" % (name, SHAPE_TIMEOUT))
            continue
        print("  %-24s %7.1fms %6.2fx %7.1fms" % (name, cpu * 1e3, cpu / floor_cpu, wall * 1e3))


# Long commands, one generator per shape: f(n) repeats the shape n times.
SHAPES = {
    "';' commands": lambda n: "; ".join("ls dir%d" % i for i in range(n)),
    "tiny unknown commands": lambda n: ";".join("a" for _ in range(n)),
    "backtick pairs": lambda n: "echo " + "`ls`" * n,
    "backticks alone": lambda n: "`" * n,
    "$( ) side by side": lambda n: "echo " + "$(ls)" * n,
    "$( ) nested": lambda n: "echo " + "$(echo " * n + "x" + ")" * n,
    "many pipes": lambda n: " | ".join(["cat a"] + ["grep x%d" % i for i in range(n)]),
    "many redirections": lambda n: "cat a" + " 2>/dev/null" * n,
    "many && and ||": lambda n: " && ".join("test -f f%d || ls" % i for i in range(n)),
    "one long quoted word": lambda n: "echo '" + "a" * n + "'",
    "double-quoted $vars": lambda n: 'echo "' + "$HOME/x " * n + '"',
    "heredocs": lambda n: "cat <<EOF\nline\nEOF\n" * n,
    "plain words": lambda n: "ls " + "a " * n,
    "escapes": lambda n: "echo " + "\\a" * n,
    "brace/glob words": lambda n: "ls " + "{a,b}*[x] " * n,
    "[ [ [ patterns": lambda n: "ls " + "[" * n,
    "for loops": lambda n: "; ".join("for f in a b c; do cat $f; done" for _ in range(n)),
    "if chains": lambda n: "; ".join("if test -f x; then cat x; fi" for _ in range(n)),
    "unicode words": lambda n: "ls " + "\u00e9\u65e5\u672c " * n,
    "git options": lambda n: "git log " + " ".join("--author=x%d" % i for i in range(n)),
    "find -name chain": lambda n: "find . " + "-name x -o " * n + "-name y",
    "sed script": lambda n: "sed -n '" + "p;" * n + "' f",
    "sed -e options": lambda n: "sed -n " + " ".join("-e 's/a/b/'" for _ in range(n)) + " f",
    "awk program": lambda n: "awk '{ " + "print $1; " * n + "}' f",
    "grep -e options": lambda n: "grep " + " ".join("-e x%d" % i for i in range(n)) + " f",
    "xargs chain": lambda n: "ls | xargs " * n + "cat",
    "bash -c script": lambda n: "bash -c 'ls " + "a " * n + "'",
    "subshells": lambda n: "(ls); " * n,
    # An agent CLI named over and over as a setup subcommand (which starts
    # nothing): in a line left unread, as a launcher's operands, in its string.
    "agent named, unread line": lambda n: "[[ x ]]; " + "claude mcp " * n,
    "agent named, launcher operands": lambda n: "nohup " + "claude mcp " * n,
    "agent named, launcher string": lambda n: 'tmux new "' + "claude mcp " * n + '"',
    "variables on a command": lambda n: "a=1 " * n + "ls",
    "wrappers before words": lambda n: "nice " * min(n, 30) + "ls " + "a " * n,
    "inline Python": lambda n: "python3 -I -c 'print(1)" + "; print(1)" * n + "'",
    "Python on a heredoc": lambda n: "python3 -I - <<'EOF'\n" + "print(1)\n" * n + "EOF",
    "heredoc of empty lines": lambda n: "cat <<'EOF'\n" + "\n" * n + "EOF",
}
PS_SHAPES = {
    "PowerShell ';' commands": lambda n: "; ".join("Get-Content f%d" % i for i in range(n)),
    "PowerShell words": lambda n: "Get-Content " + "a " * n,
    "PowerShell pipeline": lambda n: " | ".join(["Get-Content a"] + ["Select-String x"] * n),
}


def _largest(make, shell):
    """The largest repetition the analyzer still reads in full: under the
    64 KiB cap and under its work limit (the costliest accepted command)."""
    def fits(n):
        text = make(n)
        return len(text) <= 64 * 1024 and sts.analyze_shell(text, shell).reason != "analysis_limit"
    low, high = 0, 1
    while fits(high):
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return make(max(low, 1))


def shapes():
    """(label, tool, tool_input) for every shape at its largest accepted size,
    plus the same shape at the 64 KiB cap (refused as analysis_limit)."""
    out = []
    for table, tool, shell in ((SHAPES, "Bash", "bash"), (PS_SHAPES, "PowerShell", "powershell")):
        for label, make in table.items():
            out.append((label, tool, {"command": _largest(make, shell)}))
            n = 1
            while len(make(n * 2)) <= 64 * 1024 - 1:
                n *= 2
            low, high = n, n * 2
            while high - low > 1:
                mid = (low + high) // 2
                low, high = (mid, high) if len(make(mid)) <= 64 * 1024 - 1 else (low, mid)
            capped = make(low)
            if capped != out[-1][2]["command"]:
                out.append((label + " at the cap", tool, {"command": capped}))
    return out


# The command-hook hosts, each in its own payload shape: (prompt, read, write).
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
    elif host == "droid":   # a TUI prompt; a tool call names no id
        base = {"session_id": SESSION, "cwd": "/repo", "permission_mode": "auto-low"}
        prompt = dict(base, hook_event_name="UserPromptSubmit", prompt="$stop-that-shit review")
        read = dict(base, hook_event_name="PreToolUse", tool_name="Execute",
                    tool_input={"command": "git status", "summary": "s"})
        write = dict(base, hook_event_name="PreToolUse", tool_name="Create",
                     tool_input={"file_path": "/repo/a.txt", "content": "x"})
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


def bench_hosts(python, runs):
    """The hook's cost per host beside the floor, in one interleaved run."""
    floor_argv = [python, "-I", "-S", "-c", "pass"]
    hosts = ("claude", "gemini", "copilot", "qwen", "droid")
    samples = {"floor": ([], [])}
    plans = {}
    with tempfile.TemporaryDirectory(prefix="sts-bench-hosts-") as home:
        env = dict(os.environ, STS_HOME=home)
        for host in hosts:
            argv = shlex.split(sts.hook_command(host, python=python))
            prompt, read, write = _host_events(host)
            if host == "copilot":
                run_once(argv + ["userPromptSubmitted"], prompt, env)
                argv = argv + ["preToolUse"]
            else:
                run_once(argv, prompt, env)
            out = run_once(argv, write, env)[2]
            if b"deny" not in out:
                raise SystemExit("%s: the write was not denied: %r" % (host, out))
            plans[host] = (argv, read, write)
            samples[host + " read"] = ([], [])
            samples[host + " write"] = ([], [])
        for _ in range(runs):
            cpu, wall, _ = run_once(floor_argv, b"", env)
            samples["floor"][0].append(cpu)
            samples["floor"][1].append(wall)
            for host, (argv, read, write) in plans.items():
                for kind, payload in (("read", read), ("write", write)):
                    cpu, wall, _ = run_once(argv, payload, env)
                    samples["%s %s" % (host, kind)][0].append(cpu)
                    samples["%s %s" % (host, kind)][1].append(wall)
    report("per host, armed review session, %d runs each (median; read allowed, write denied):"
           % runs, {name: (statistics.median(c), statistics.median(w))
                    for name, (c, w) in samples.items()})


def hook_argv_for(python, host, sts_path=None):
    """The installed hook command, or the same form for another sts.py."""
    if sts_path is None:
        return shlex.split(sts.hook_command(host, python=python))
    folder = os.path.dirname(os.path.abspath(sts_path))
    return [python, "-I", "-S", "-c", "import sys; sys.path.insert(0, %r); import sts; "
            "sys.exit(sts.main())" % folder, host]


def _ratio_text(ratio):
    return ("killed after %d s" % SHAPE_TIMEOUT) if ratio == float("inf") else "%.2fx" % ratio


def _worst(medians, prefix):
    """(name, ratio to the floor) of the costliest payload of one hook."""
    mine = [(n, m) for n, m in medians.items() if n != "floor"
            and n.startswith("before ") == (prefix == "before ")]
    name, (cpu, _) = max(mine, key=lambda item: item[1][0])
    return name, cpu / medians["floor"][0]


# Payloads of an armed change session: every one is allowed.
CHANGE_PAYLOADS = {
    "read (allowed)": (event("Bash", {"command": "git status"}, "c-read"), None),
    "shell delete (allowed)": (event("Bash", {"command": "rm -rf build dist && git status"},
                                     "c-shell"), None),
    "write (allowed)": (event("Write", {"file_path": "/repo/a.txt", "content": "x"},
                              "c-write"), None),
}


def bench_python(python, runs, with_shapes, sts_path=None, before=None, mode="review",
                 from_default=False):
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                             stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    hook_argv = hook_argv_for(python, "claude", sts_path)
    command = " ".join(shlex.quote(a) for a in hook_argv)
    print("=== Python %s: %s" % (version, command))
    if before is not None:
        print("    'before' rows: the same command form for %s, interleaved" % before)
    with tempfile.TemporaryDirectory(prefix="sts-bench-") as home:
        hooks = [("", hook_argv, dict(os.environ, STS_HOME=os.path.join(home, "after")))]
        if before is not None:   # each version with a data dir of its own
            hooks.append(("before ", hook_argv_for(python, "claude", before),
                          dict(os.environ, STS_HOME=os.path.join(home, "before"))))
        prompt = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": SESSION,
                             "cwd": "/repo", "prompt": "$stop-that-shit " + mode}).encode()
        plain = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": SESSION,
                            "cwd": "/repo", "prompt": "look at the parser"}).encode()
        if from_default:
            print("    this sts.py's session is armed by the user default `%s`, no directive"
                  % mode)
            subprocess.run([python, os.path.join(sts_path and os.path.dirname(sts_path) or ROOT,
                                                 "sts.py"), "default", mode],
                           env=hooks[0][2], check=True, stdout=subprocess.DEVNULL)
        for label, argv, env in hooks:
            out = run_once(argv, plain if from_default and not label else prompt, env)[2]
            if ("mode=" + mode).encode() not in out:
                raise SystemExit("could not arm the session: %r" % out)
            run_once(argv, event("Bash", {"command": "ls"}, "warm"), env)  # warm the bytecode
        payloads = {
            "read (allowed)": (event("Bash", {"command": "git status"}, "c-read"), None),
            "write (denied)": (event("Write", {"file_path": "/repo/a.txt", "content": "x"},
                                     "c-write"), b'"deny"'),
            # A denied shell line: its message names the culprit (the analysis runs again).
            "shell (denied)": (event("Bash", {"command": "git status && rm -rf build"},
                                     "c-shell"), b'"deny"'),
        }
        if mode == "change":
            payloads = CHANGE_PAYLOADS
        base = measure(python, hooks, runs, payloads)
        report("armed %s session, %d runs each (median):" % (mode, runs), base)
        for _, _, env in hooks:
            populate(env["STS_HOME"], 1000, 100000)
        scaled = measure(python, hooks, runs, payloads)
        report("same, with 1,000 session files and 100,000 audit lines:", scaled)
        growth = scaled["read (allowed)"][0] / base["read (allowed)"][0]
        print("growth with scale (read, cpu): %.2fx" % growth)
        worst = _worst(base, "")[1]
        print("target: at most %.1fx floor -> %s (%.2fx)"
              % (TARGET, "OK" if worst <= TARGET else "OVER", worst))
        result = {"version": version, "worst": worst}
        if before is not None:
            result["before"] = _worst(base, "before ")[1]
            print("before: %.2fx floor" % result["before"])
        if with_shapes:
            shape_runs = max(3, runs // 4)
            payloads = {"%s (%s, %d B)" % (label, tool, len(args["command"])):
                        (event(tool, args, "c-shape"), None)
                        for label, tool, args in shapes()}
            medians = measure(python, hooks, shape_runs, payloads, timeout=SHAPE_TIMEOUT)
            report("long commands under the 64 KiB cap, %d runs each (median):" % shape_runs,
                   medians)
            result["shape"] = _worst(medians, "")
            print("worst shape: %s, %.2fx floor -> %s" % (
                result["shape"][0], result["shape"][1],
                "OK" if result["shape"][1] < SHAPE_TARGET else "OVER"))
            if before is not None:
                result["before shape"] = _worst(medians, "before ")
                print("before, worst shape: %s, %s" % (result["before shape"][0],
                                                       _ratio_text(result["before shape"][1])))
    if sts_path is None:   # an older sts.py may not know these hosts
        bench_hosts(python, max(3, runs // 3))
    return result


def main():
    runs = 30
    pythons = []
    args = sys.argv[1:]
    if "--runs" in args:
        runs = int(args[args.index("--runs") + 1])
    for n, arg in enumerate(args):
        if arg == "--python":
            pythons.append(args[n + 1])
    other = args[args.index("--sts") + 1] if "--sts" in args else None
    before = args[args.index("--before") + 1] if "--before" in args else None
    mode = args[args.index("--mode") + 1] if "--mode" in args else "review"
    results = [bench_python(python, runs, "--no-shapes" not in args, other, before, mode,
                            "--default" in args)
               for python in pythons or [sys.executable]]
    if len(results) > 1 or before is not None:
        print("=== summary (CPU ratio to the floor of the same Python, same run)")
        for result in results:
            line = "  Python %-8s hook %.2fx" % (result["version"], result["worst"])
            if "before" in result:
                line += " (before %.2fx)" % result["before"]
            if "shape" in result:
                line += ", worst long command %.2fx (%s)" % (result["shape"][1],
                                                             result["shape"][0])
            if "before shape" in result:
                line += " (before %s: %s)" % (_ratio_text(result["before shape"][1]),
                                              result["before shape"][0][len("before "):])
            print(line)


if __name__ == "__main__":
    main()
