"""How big the audit gets: simulate many tool calls and measure the data dir.

    python3 tests/bench_audit.py [--calls N] [--days D] [--seed S]

Appends N audit lines (default 1,000,000) through Store.append_audit, the
path every hook takes, with the default STS_AUDIT_MAX_MB unless the
environment sets it.  The calls fall into sessions of uneven length, one
after another with a few overlapping, spread over D simulated days (default
120): the clock the upkeep reads and the files' modification times follow
the simulation, so idle sessions age as they would.  Prints the audit's size
on disk every tenth of the way and at the end, with the number of files, the
index and the removal record, and the time per call.
"""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import sts  # noqa: E402


def line(rng, key, n, now):
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % (n % 1000)
    outcome, family, reason = rng.choice((("allow", None, "WITHIN_CONTRACT"),) * 6 + (
        ("deny_and_explain", "I", "MODE_FORBIDS_MUTATION"),
        ("report_and_defer", "T", "REPEATED_WITHOUT_CHANGE")))
    return {"schemaVersion": 1, "eventId": "evt_" + sts._uuid4_text(), "occurredAt": stamp,
            "sessionKey": key, "policyRevision": {"pluginVersion": sts.VERSION,
                                                  "controlVersion": 2},
            "controlState": "armed",
            "action": {"toolName": rng.choice(("Bash", "Read", "Edit", "Grep")),
                       "mutability": "read", "delegationCount": 0, "pathCount": 0,
                       "hashIntent": False, "dependencyIntent": False,
                       "unboundedDelegation": False},
            "contract": {"mode": "change", "level": "guard", "agentBudget": sts.MAX_SAFE_INTEGER,
                         "reservedUpperBound": 0, "countUnproven": False, "hashPolicy": "deny",
                         "dependencyPolicy": "ask", "allowedPathCount": None},
            "decision": {"policyOutcome": outcome, "family": family, "reasonCode": reason,
                         "responseOutcome": "none", "hostEffect": "unobserved"},
            "host": "claude-code",
            # A denial or note also keeps what a person needs to see why (_audit_shown).
            **({} if outcome == "allow" else {"shown": {
                "sessionId": "sim-%s" % key[:8], "cwd": "/home/u/project",
                "command": "git status && rm -rf build/%d" % (n % 1000),
                "culprit": "Culprit: `rm -rf build`: `rm` removes `build`.",
                "allow": "$stop-that-shit change"}})}


def disk(root):
    """(bytes of logs, log files, bytes of index files, bytes of removed.jsonl)."""
    logs = files = index = removed = 0
    runtime = os.path.join(root, "runtime")
    for name in os.listdir(runtime):
        path = os.path.join(runtime, name)
        if name.endswith(".jsonl") and name not in ("annotations.jsonl", "removed.jsonl"):
            logs += os.path.getsize(path)
            files += 1
        elif name == "removed.jsonl":
            removed = os.path.getsize(path)
    folder = os.path.join(runtime, "index")
    if os.path.isdir(folder):
        index = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
    return logs, files, index, removed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000000)
    parser.add_argument("--days", type=float, default=120)
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="sts-bench-audit-")
    clock = [time.time() - args.days * 86400]
    real_time = time.time
    time.time = lambda: clock[0]   # the upkeep's clock: stamps, segment names, idleness
    try:
        store = sts.Store(os.path.join(tmp, "data"))
        step = args.days * 86400 / args.calls
        open_sessions = []
        done, session_no, started = 0, 0, real_time()
        print("limit: %s=%s (%.0f MB), %d calls over %g simulated days" % (
            sts.AUDIT_LIMIT_ENV, os.environ.get(sts.AUDIT_LIMIT_ENV, "unset"),
            sts.audit_limit_bytes() / 2 ** 20, args.calls, args.days))
        report_every = max(args.calls // 10, 1)
        while done < args.calls:
            # One to three sessions at a time; each runs for a heavy-tailed
            # number of calls (median ~250, some in the tens of thousands).
            while len(open_sessions) < rng.choice((1, 1, 2, 3)):
                session_no += 1
                length = min(int(rng.paretovariate(1.2) * 150), 50000)
                open_sessions.append([sts.session_key("sim-%d" % session_no), length])
            current = rng.choice(open_sessions)
            key = current[0]
            clock[0] += step * rng.uniform(0.2, 1.8)
            if not store.append_audit(key, line(rng, key, done, clock[0])):
                raise SystemExit("append failed")
            # The files' times follow the simulated clock: the log just written,
            # or, when this call renamed it to a segment, that segment.
            log = store.path("runtime", key + ".jsonl")
            try:
                os.utime(log, (clock[0], clock[0]))
            except FileNotFoundError:
                newest = sts.audit_files(store, key).get(key, [])[-1:]
                for name in newest:
                    os.utime(store.path("runtime", name), (clock[0], clock[0]))
            current[1] -= 1
            if current[1] <= 0:
                open_sessions.remove(current)
            done += 1
            if done % report_every == 0 or done == args.calls:
                logs, files, index, removed = disk(store.root)
                print("%8d calls: logs %6.1f MB in %5d files, index %5.1f MB, removed.jsonl "
                      "%4.0f KB, %5d sessions so far, %.0f us per call" % (
                          done, logs / 1e6, files, index / 1e6, removed / 1e3, session_no,
                          (real_time() - started) / done * 1e6))
        time.time = real_time
        summary = sts.removed_audit(store)
        print("removed: %d files (%.0f MB) of %d sessions" % (
            summary["files"], summary["bytes"] / 1e6, len(summary["sessions"])))
    finally:
        time.time = real_time
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
