"""Time the terminal inspection commands on a large data dir.

    python3 tests/bench_runtime.py [--sessions N] [--lines N] [--rounds N] [--keep]
                                   [--sts PATH]

Builds, in a temporary folder, a data dir with N sessions (default 1,000),
each with a schema-4 state file, and N audit lines in total (default
100,000) spread unevenly across their logs, plus an annotations file with a
label or an observed host effect for about 2% of the events.  Then it times
whole processes, interpreter start-up included, exactly as a user types
them:

    python3 sts.py --version          (the floor: start-up and import only)
    python3 sts.py runtime all        (every session, one line each)
    python3 sts.py runtime all --json (the full JSON: every event)
    python3 sts.py status             (the latest session)
    python3 sts.py status --json
    python3 sts.py runtime            (the latest session)
    python3 sts.py explain EVT        (an event in the last log searched)

Prints the median and the best wall-clock time of --rounds runs (default 5)
for each, and the median CPU time of the child process.
Output goes to a pipe that is drained and counted, as a terminal would.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STS_PY = os.path.join(ROOT, "sts.py")
sys.path.insert(0, ROOT)

import sts  # noqa: E402

# (policyOutcome, family, reasonCode, responseOutcome, weight): roughly what a
# guarded session sees, mostly allowed reads with a tail of notes and denials.
_MIX = [
    ("allow", None, "WITHIN_CONTRACT", "none", 60),
    ("allow", None, "CONTROL_INACTIVE", "none", 15),
    ("report_and_defer", "T", "REPEATED_WITHOUT_CHANGE", "context_returned", 6),
    ("report_and_defer", "H", "HYPOTHETICAL_UNREACHABLE", "context_returned", 3),
    ("deny_and_explain", "I", "MODE_FORBIDS_MUTATION", "permission_deny_returned", 8),
    ("require_user_approval", "I", "MUTABILITY_UNPROVEN", "permission_deny_returned", 5),
    ("deny_and_explain", "S", "PATH_OUTSIDE_CONTRACT", "permission_deny_returned", 2),
    ("require_user_approval", "H", "HASH_NOT_AUTHORIZED", "execution_denial_returned", 1),
]
_TOOLS = [("Bash", "unknown"), ("Read", "read"), ("Edit", "write"), ("Grep", "read"),
          ("apply_patch", "write"), ("Agent", "delegate")]
_MODES = [("change", "guard"), ("review", "guard"), ("answer", "lock"), ("unconfirmed", "watch"),
          ("monitor", "watch"), ("change", "off")]


def _event(rng: random.Random, key: str, when: float, mode: str, level: str) -> dict:
    outcome, family, reason, response, _ = rng.choices(_MIX, [m[4] for m in _MIX])[0]
    tool, mutability = rng.choice(_TOOLS)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(when)) + ".%03dZ" % rng.randrange(1000)
    return {
        "schemaVersion": 1, "eventId": "evt_%s" % sts._uuid4_text(), "occurredAt": stamp,
        "sessionKey": key, "policyRevision": {"pluginVersion": sts.VERSION, "controlVersion": 2},
        "controlState": "armed" if level in ("guard", "lock") and mode != "unconfirmed"
        else "observing",
        "action": {"toolName": tool, "mutability": mutability, "delegationCount": 0,
                   "pathCount": 1 if mutability == "write" else 0, "hashIntent": False,
                   "dependencyIntent": False, "unboundedDelegation": False},
        "contract": {"mode": mode, "level": level, "agentBudget": sts.MAX_SAFE_INTEGER,
                     "reservedUpperBound": 0, "countUnproven": False, "hashPolicy": "deny",
                     "dependencyPolicy": "ask", "allowedPathCount": 0},
        "decision": {"policyOutcome": outcome, "family": family, "reasonCode": reason,
                     "responseOutcome": response, "hostEffect": "unobserved"},
    }


def build(root: str, sessions: int, lines: int, seed: int = 8) -> str:
    """Fill `root` as a data dir; returns the id of an event in the last log."""
    rng = random.Random(seed)
    os.makedirs(os.path.join(root, "sessions"), 0o700)
    os.makedirs(os.path.join(root, "runtime"), 0o700)
    keys = [sts.session_key("bench-%d" % i) for i in range(sessions)]
    # Uneven spread: a few long sessions, many short ones, every session >= 1 line.
    weights = [rng.paretovariate(1.5) for _ in keys]
    counts = [1] * sessions
    for i in rng.choices(range(sessions), weights, k=max(lines - sessions, 0)):
        counts[i] += 1
    start = time.time() - 30 * 86400
    annotations = []
    last_id = ""
    for n, (key, count) in enumerate(zip(keys, counts)):
        mode, level = _MODES[n % len(_MODES)]
        state = sts.default_state()
        state["contract"].update(mode=mode, level=level,
                                 source="default" if mode == "unconfirmed" else "directive")
        state_path = os.path.join(root, "sessions", key + ".json")
        with open(state_path, "w", encoding="utf-8") as fh:
            json.dump(state, fh, indent=2)
        when = start + rng.uniform(0, 29 * 86400)
        out = []
        for _ in range(count):
            when += rng.uniform(0.5, 30)
            record = _event(rng, key, when, mode, level)
            out.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False))
            if rng.random() < 0.02:
                note = {"schemaVersion": 1, "annotationId": "ann_" + sts._uuid4_text(),
                        "occurredAt": record["occurredAt"], "eventId": record["eventId"]}
                if rng.random() < 0.5:
                    note["label"] = rng.choice(sts.LABELS)
                else:
                    note["hostEffect"] = rng.choice(sts.HOST_EFFECTS)
                annotations.append(json.dumps(note, separators=(",", ":")))
            last_id = record["eventId"]
        with open(os.path.join(root, "runtime", key + ".jsonl"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(out) + "\n")
        os.utime(state_path, (when, when))
    with open(os.path.join(root, "runtime", "annotations.jsonl"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(annotations) + "\n")
    # explain searches logs in sorted key order: the last key is the worst case.
    last_key = sorted(keys)[-1]
    with open(os.path.join(root, "runtime", last_key + ".jsonl"), encoding="utf-8") as fh:
        last_id = json.loads(fh.read().splitlines()[-1])["eventId"]
    return last_id


def _time(argv, env, rounds: int):
    """Wall-clock and CPU (user + system of the child) seconds per run.

    CPU time is the steadier figure on a shared machine: other processes
    stretch the wall clock, not the work sts does.
    """
    import resource
    times, cpus, size, code = [], [], 0, 0
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              check=False)
        times.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        size, code = len(proc.stdout), proc.returncode
        if code != 0:
            sys.stderr.write(proc.stderr.decode("utf-8", "replace"))
    return statistics.median(times), min(times), statistics.median(cpus), size, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--lines", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the data dir and print it")
    parser.add_argument("--sts", default=STS_PY, help="the sts.py to time (to compare versions)")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="sts-bench-runtime-")
    try:
        root = os.path.join(tmp, "data")
        t0 = time.perf_counter()
        event_id = build(root, args.sessions, args.lines)
        log_bytes = sum(os.path.getsize(os.path.join(root, "runtime", n))
                        for n in os.listdir(os.path.join(root, "runtime")))
        print("data dir: %d sessions, %d audit lines, %.1f MB of logs (built in %.1f s)"
              % (args.sessions, args.lines, log_bytes / 1e6, time.perf_counter() - t0))
        print("python: %s" % sys.version.split()[0])
        env = dict(os.environ, STS_HOME=root)
        base = [sys.executable, args.sts]
        subprocess.run(base + ["--version"], env=env, capture_output=True, check=False)  # warm
        rows = [("--version",), ("runtime", "all"), ("runtime", "all", "--json"), ("status",),
                ("status", "--json"), ("runtime",), ("explain", event_id)]
        print("load average: %.1f on %d CPUs" % (os.getloadavg()[0], os.cpu_count() or 1))
        print("%-24s %10s %10s %10s %11s  %s" % ("command", "median", "best", "cpu", "stdout",
                                                 "exit"))
        for row in rows:
            median, best, cpu, size, code = _time(base + list(row), env, args.rounds)
            label = " ".join(row).replace(event_id, "EVT")
            print("%-24s %8.0fms %8.0fms %8.0fms %10dB  %d"
                  % (label, median * 1e3, best * 1e3, cpu * 1e3, size, code))
        if args.keep:
            print("kept: %s" % root)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
