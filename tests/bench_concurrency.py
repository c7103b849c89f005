"""Measure hook latency under concurrency, and how long the session lock is held.

    python3 tests/bench_concurrency.py [--rounds N]

Part 1: hook latency.  N hook processes (N = 1, 8, 32) run at the same time on
one Claude session armed with `change agents=1000000` (a large finite budget,
so every Agent call is admitted and each one takes the lock).  Two kinds:
`Agent` PreToolUse calls (locked read-decide-reserve-write) and `Read`
PreToolUse calls (lock-free).  Two clocks per hook:

  * whole  - spawn to answer: the real command form, interpreter start-up
             included, all N spawned back to back and fed at once;
  * hook   - stdin to answer: the N processes are started, wait at their
             stdin read, and are released together (sts's own work plus
             waiting for the lock).

Part 2: lock hold time per event.  The same engine runs in hook processes
whose Store is wrapped to time, with perf_counter, the span from the moment
_acquire returns the lock to the moment update releases it, and inside it
the time spent in the durable write (_write_json: write, fsync, rename,
directory fsync).  Measured for Agent calls (reserve), a changed directive
(prompt) and PostToolUse facts, at 1 and 32 concurrent hooks.

Prints the median and 99th percentile (nearest rank) of each.
"""
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import sts  # noqa: E402
import test_delegation_concurrency as tdc  # noqa: E402

SESSION = "bench-concurrency"

# The real hook, with the lock span and the write inside it timed.
_INSTRUMENTED = r"""
import sys, time
sys.path.insert(0, %r)
import sts
_acquire, _write = sts.Store._acquire, sts.Store._write_json
_held = {}
def acquire(self, key):
    owner = _acquire(self, key)
    _held["t"], _held["w"] = time.perf_counter(), 0.0
    return owner
def write_json(self, target, obj, indent=2):
    t = time.perf_counter()
    try:
        return _write(self, target, obj, indent)
    finally:
        if "t" in _held:
            _held["w"] += time.perf_counter() - t
_update = sts.Store.update
def update(self, key, change):
    try:
        return _update(self, key, change)
    finally:
        if "t" in _held:
            sys.stderr.write("LOCK_HELD %%.6f %%.6f\n" %% (time.perf_counter() - _held["t"],
                                                          _held["w"]))
            _held.clear()
sts.Store._acquire, sts.Store._write_json, sts.Store.update = acquire, write_json, update
sys.exit(sts.main())
""" % os.path.dirname(HERE)


def pct(values, p):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100.0 * len(ordered)) - 1)]


def ms(value):
    return "%7.1f" % (value * 1000.0)


def arm(home, directive):
    tdc.arm("claude", tdc.claude_prompt(SESSION, directive), home)


def agent_payloads(n, tag):
    return [tdc.claude_agent(SESSION, "toolu_%s_%d" % (tag, i)) for i in range(n)]


def read_payloads(n, tag):
    return [tdc.claude_tool(SESSION, "Read", "toolu_%s_%d" % (tag, i),
                            {"file_path": "/repo/src/f%d.py" % i}) for i in range(n)]


def check(runs, kind):
    """The number of STATE_BUSY answers (a timed-out lock wait); anything else must allow."""
    busy = 0
    for run in runs:
        verdict = tdc.claude_verdict(run)
        if verdict == ("deny", "STATE_BUSY"):
            busy += 1
        elif verdict != ("allow", None):
            raise SystemExit("%s hook was not allowed: %r %s" % (kind, verdict, run.stderr))
    return busy


def fresh_home(parent, tag):
    """A new STS_HOME with an armed session and an empty ledger (state stays small)."""
    home = os.path.join(parent, tag)
    arm(home, "$stop-that-shit change agents=1000000")
    return home


def latency(rounds):
    rows = []
    with tempfile.TemporaryDirectory(prefix="sts-bench-") as parent:
        for n in (1, 8, 32):
            reps = rounds * 4 if n == 1 else max(3, rounds * 32 // (n * 4))
            for kind, make in (("Agent (locked)", agent_payloads), ("Read (lock-free)",
                                                                     read_payloads)):
                whole, hook, busy = [], [], 0
                for rep in range(reps):
                    home = fresh_home(parent, "w%d%s%d" % (n, kind[0], rep))
                    runs = tdc.run_hooks("claude", home, make(n, "w"), together=False)
                    busy += check(runs, kind)
                    whole += [r.total for r in runs]
                    home = fresh_home(parent, "h%d%s%d" % (n, kind[0], rep))
                    runs = tdc.run_hooks("claude", home, make(n, "h"))
                    busy += check(runs, kind)
                    hook += [r.latency for r in runs]
                rows.append((n, kind, len(whole), whole, hook, busy))
    print("Hook latency, one session, N concurrent hooks (ms)")
    print("%-4s %-17s %5s | %9s %8s | %8s %8s | %s" % (
        "N", "kind", "hooks", "whole p50", "p99", "hook p50", "p99", "STATE_BUSY"))
    for n, kind, count, whole, hook, busy in rows:
        print("%-4d %-17s %5d | %9s %8s | %8s %8s | %d of %d" % (
            n, kind, count, ms(statistics.median(whole)), ms(pct(whole, 99)),
            ms(statistics.median(hook)), ms(pct(hook, 99)), busy, 2 * count))


def lock_hold(rounds):
    argv_code = _INSTRUMENTED
    rows = []
    with tempfile.TemporaryDirectory(prefix="sts-bench-lock-") as parent:
        def run_batch(home, payloads):
            env = dict(os.environ, STS_HOME=home)
            procs = [subprocess.Popen([sys.executable, "-I", "-S", "-c", argv_code, "claude"],
                                      env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE) for _ in payloads]
            tdc.wait_until_reading(procs)
            for proc, payload in zip(procs, payloads):
                proc.stdin.write(json.dumps(payload).encode())
                proc.stdin.close()
            held, writes = [], []
            for proc in procs:
                proc.stdin = None
                _, err = proc.communicate()
                for line in err.decode().splitlines():
                    if line.startswith("LOCK_HELD "):
                        hold, write = line.split()[1:]
                        held.append(float(hold))
                        writes.append(float(write))
            return held, writes

        directives = ("$stop-that-shit change agents=1000000 -- a",
                      "$stop-that-shit review agents=999999 -- b")
        for n in (1, 32):
            reps = rounds * 4 if n == 1 else max(2, rounds // 4)
            for kind in ("Agent call", "directive", "PostToolUse"):
                held, writes = [], []
                for rep in range(reps):
                    home = fresh_home(parent, "l%d%s%d" % (n, kind[0], rep))
                    if kind == "Agent call":
                        payloads = agent_payloads(n, "lk")
                    elif kind == "directive":
                        # Each one changes the contract, so each one writes.
                        payloads = [tdc.claude_prompt(SESSION, directives[(rep + i) % 2] + str(i))
                                    for i in range(n)]
                    else:
                        # Joined facts for admitted calls: each one frees a unit and writes.
                        for payload in agent_payloads(n, "lk"):
                            sts.run_hook("claude", json.dumps(payload).encode(), sts.Store(home))
                        payloads = [tdc.claude("PostToolUse", SESSION, tool_name="Agent",
                                               tool_use_id="toolu_lk_%d" % i, tool_input={},
                                               tool_response={"status": "completed"})
                                    for i in range(n)]
                    h, w = run_batch(home, payloads)
                    held += h
                    writes += w
                rows.append((n, kind, held, writes))
    print()
    print("Lock hold per event (ms): acquire returned -> released; 'write' = durable write inside")
    print("%-4s %-12s %6s | %8s %8s | %8s %8s" % ("N", "event", "holds", "held p50", "p99",
                                                  "write p50", "p99"))
    for n, kind, held, writes in rows:
        if not held:
            continue
        print("%-4d %-12s %6d | %8s %8s | %8s %8s" % (
            n, kind, len(held), ms(statistics.median(held)), ms(pct(held, 99)),
            ms(statistics.median(writes)), ms(pct(writes, 99))))


def main():
    rounds = 10
    if "--rounds" in sys.argv:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1])
    print("python %s, %d CPUs, load average %s" % (
        sys.version.split()[0], os.cpu_count() or 0,
        " ".join("%.1f" % x for x in os.getloadavg())))
    t0 = time.monotonic()
    latency(rounds)
    lock_hold(rounds)
    print()
    print("bench took %.0f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
