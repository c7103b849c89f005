"""Instructions of one hook call, as a ratio to the bare interpreter.

    python3 tests/bench_instructions.py [--runs N] [PYTHON ...]

Counts what `make bench` times, with valgrind's callgrind instead of a
clock: the installed hook command (the import form) on one call of an armed
review session (a read allowed, a write denied, a shell line denied) and of
an armed change session (a shell line that deletes in the workspace,
allowed), each over `PYTHON -I -S -c pass`.  A count is the same on a busy
machine, so it shows changes of a few percent that CPU time hides; it
still moves by a few tenths of a percent from run to run (each process
hashes strings with a seed of its own, and `-I` keeps PYTHONHASHSEED out),
so each figure is the median of --runs processes (default 5).  Each
Python runs this checkout's sts.py from a bytecode cache warmed first.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SESSION = "bench-session"


def event(tool, args, call_id):
    return json.dumps({"hook_event_name": "PreToolUse", "session_id": SESSION, "cwd": "/repo",
                       "tool_name": tool, "tool_use_id": call_id, "tool_input": args}).encode()


def prompt(mode):
    return json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": SESSION,
                       "cwd": "/repo", "prompt": "$stop-that-shit " + mode}).encode()


CALLS = {
    "review": [("read (allowed)", event("Bash", {"command": "git status"}, "r")),
               ("write (denied)", event("Write", {"file_path": "/repo/a.txt", "content": "x"},
                                        "w")),
               ("shell (denied)", event("Bash", {"command": "git status && rm -rf build"},
                                        "s"))],
    "change": [("shell delete (allowed)",
                event("Bash", {"command": "rm -rf build dist && git status"}, "d"))],
}


def instructions(argv, data, env):
    """Instructions the process ran (callgrind's total)."""
    with tempfile.NamedTemporaryFile(prefix="sts-callgrind-") as out:
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out.name]
                       + argv, input=data, env=env, capture_output=True, check=True)
        for line in open(out.name, encoding="utf-8"):
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise SystemExit("callgrind wrote no total")


def median_of(runs, argv, data, env):
    return statistics.median(instructions(argv, data, env) for _ in range(runs))


def main(pythons, runs):
    for python in pythons:
        hook = [python, "-I", "-S", "-c", "import sys; sys.path.insert(0, %r); import sts; "
                "sys.exit(sts.main())" % ROOT, "claude"]
        version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        print("=== Python %s" % version)
        for mode, calls in CALLS.items():
            with tempfile.TemporaryDirectory(prefix="sts-bench-") as home:
                env = dict(os.environ, STS_HOME=home)
                subprocess.run(hook, input=prompt(mode), env=env, capture_output=True,
                               check=True)
                subprocess.run(hook, input=event("Bash", {"command": "ls"}, "warm"), env=env,
                               capture_output=True, check=True)
                floor = median_of(runs, [python, "-I", "-S", "-c", "pass"], b"", env)
                for name, data in calls:
                    count = median_of(runs, hook, data, env)
                    print("  %-6s %-24s %6.3fx  (%d over %d)" % (mode, name, count / floor,
                                                                 count, floor))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("pythons", nargs="*")
    options = parser.parse_args()
    main(options.pythons or [sys.executable], options.runs)
