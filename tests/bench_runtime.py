"""Time the terminal inspection commands on a large data dir.

    python3 tests/bench_runtime.py [--sessions N] [--lines N] [--rounds N] [--keep]
                                   [--sts PATH] [--latest-share F] [--form plain|import]
                                   [--before PATH]

Builds, in a temporary folder, a data dir with N sessions (default 1,000),
each with a schema-4 state file, and N audit lines in total (default
100,000) spread unevenly across their logs, plus an annotations file with a
label or an observed host effect for about 2% of the events.  The lines are
appended by the timed sts.py's own Store.append_audit, as its hooks would
write them (so whatever it keeps beside the log is there too), and the
labels name their session, as `label` writes them.  Then it times whole
processes, interpreter start-up included, exactly as a user types them:

    python3 sts.py --version          (the floor: start-up and import only)
    python3 sts.py runtime all        (every session, one line each)
    python3 sts.py runtime all --json (the full JSON: every event)
    python3 sts.py status             (the latest session)
    python3 sts.py status --json
    python3 sts.py runtime            (the latest session)
    python3 sts.py explain EVT        (an event in the last log searched)
    python3 sts.py explain EVT8       (the same by the first 8 hex digits of its id)
    python3 sts.py status --session KEY8  (a session by the start of its key)
    python3 sts.py log                (the last 20 decisions of every session)
    python3 sts.py log --verdict deny (the last 20 denials)
    python3 sts.py log 100 --json

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


def _load(path: str):
    """The sts.py under test, as its own module (it may be another version)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("sts_timed", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sts_timed"] = module
    spec.loader.exec_module(module)
    return module

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
        "host": "claude-code",
        # What a denial or note keeps for a person (see _audit_shown in sts.py).
        **({} if outcome == "allow" else {"shown": {
            "sessionId": "session-%s" % key[:8], "cwd": "/home/u/project",
            "command": "git status && rm -rf build/%d" % rng.randrange(1000),
            "culprit": "Culprit: `rm -rf build`: `rm` removes `build`.",
            "allow": "$stop-that-shit change"}}),
    }


def build(root: str, sessions: int, lines: int, seed: int = 8, timed=sts,
          latest_share: float = 0.0) -> str:
    """Fill `root` as a data dir; returns the id of an event in the last log."""
    rng = random.Random(seed)
    store = timed.Store(root)
    os.makedirs(os.path.join(root, "sessions"), 0o700)
    os.makedirs(os.path.join(root, "runtime"), 0o700)
    keys = [sts.session_key("bench-%d" % i) for i in range(sessions)]
    # Uneven spread: a few long sessions, many short ones, every session >= 1 line.
    weights = [rng.paretovariate(1.5) for _ in keys]
    counts = [1] * sessions
    heavy = int(lines * latest_share)   # the latest session's own share, when asked
    for i in rng.choices(range(sessions), weights, k=max(lines - sessions - heavy, 0)):
        counts[i] += 1
    counts[-1] += heavy
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
        for _ in range(count):
            when += rng.uniform(0.5, 30)
            record = _event(rng, key, when, mode, level)
            if not store.append_audit(key, record):
                raise SystemExit("could not append to %s" % root)
            if rng.random() < 0.02:
                note = {"schemaVersion": 1, "annotationId": "ann_" + sts._uuid4_text(),
                        "occurredAt": record["occurredAt"], "eventId": record["eventId"],
                        "sessionKey": key}
                if rng.random() < 0.5:
                    note["label"] = rng.choice(sts.LABELS)
                else:
                    note["hostEffect"] = rng.choice(sts.HOST_EFFECTS)
                annotations.append(json.dumps(note, separators=(",", ":")))
            last_id = record["eventId"]
        if n == sessions - 1 and latest_share:
            when = time.time()   # the heavy session is the one status picks
        os.utime(state_path, (when, when))
    with open(os.path.join(root, "runtime", "annotations.jsonl"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(annotations) + "\n")
    # explain searches logs in sorted key order: the last key is the worst case.
    last_key = sorted(keys)[-1]
    last_log = sorted(n for n in os.listdir(os.path.join(root, "runtime"))
                      if n.startswith(last_key) and n.endswith(".jsonl"))[-1]
    with open(os.path.join(root, "runtime", last_log), encoding="utf-8") as fh:
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
    parser.add_argument("--form", choices=("plain", "import"), default="plain",
                        help="plain: python3 sts.py CMD (compiles sts.py every time); import: "
                             "the hook's import form, from cached bytecode")
    parser.add_argument("--latest-share", type=float, default=0.0,
                        help="put this share of the lines in the latest session (status's)")
    parser.add_argument("--keep", action="store_true", help="keep the data dir and print it")
    parser.add_argument("--sts", default=STS_PY, help="the sts.py to time (to compare versions)")
    parser.add_argument("--before", default=None,
                        help="another sts.py, timed beside --sts on a data dir it wrote "
                             "itself (rows marked `before`), round for round")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="sts-bench-runtime-")
    try:
        versions = [("", args.sts)] + ([("before ", args.before)] if args.before else [])
        plans = []
        for prefix, path in versions:
            root = os.path.join(tmp, "data" + prefix.strip())
            t0 = time.perf_counter()
            event_id = build(root, args.sessions, args.lines, timed=_load(path),
                             latest_share=args.latest_share)
            sys.modules.pop("sts_timed", None)
            log_bytes = sum(os.path.getsize(os.path.join(root, "runtime", n))
                            for n in os.listdir(os.path.join(root, "runtime"))
                            if n.endswith(".jsonl"))
            print("%sdata dir (%s): %d sessions, %d audit lines, %.1f MB of logs (built in "
                  "%.1f s)" % (prefix, path, args.sessions, args.lines, log_bytes / 1e6,
                               time.perf_counter() - t0))
            env = dict(os.environ, STS_HOME=root)
            base = [sys.executable, path]
            if args.form == "import":
                base = [sys.executable, "-I", "-S", "-c",
                        "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())"
                        % os.path.dirname(os.path.abspath(path))]
            subprocess.run(base + ["--version"], env=env, capture_output=True, check=False)
            plans.append((prefix, base, env, event_id))
        print("python: %s" % sys.version.split()[0])
        rows = [("--version",), ("runtime", "all"), ("runtime", "all", "--json"), ("status",),
                ("status", "--json"), ("runtime",), ("explain", "EVT"), ("explain", "EVT8"),
                ("status", "--session", "KEY8"), ("log",), ("log", "--verdict", "deny"),
                ("log", "100", "--json")]
        print("load average: %.1f on %d CPUs" % (os.getloadavg()[0], os.cpu_count() or 1))
        print("%-31s %10s %10s %10s %11s  %s" % ("command", "median", "best", "cpu", "stdout",
                                                 "exit"))
        for row in rows:
            runs = {prefix: [] for prefix, _, _, _ in plans}
            for _ in range(args.rounds):   # the versions take turns
                for prefix, base, env, event_id in plans:
                    words = {"EVT": event_id, "EVT8": event_id[:12],
                             "KEY8": min(os.listdir(os.path.join(env["STS_HOME"],
                                                                 "sessions")))[:8]}
                    argv = base + [words.get(word, word) for word in row]
                    runs[prefix].append(_time(argv, env, 1))
            for prefix, _, _, _ in plans:
                got = runs[prefix]
                wall = [g[0] for g in got]
                print("%-31s %8.0fms %8.0fms %8.0fms %10dB  %d"
                      % (prefix + " ".join(row), statistics.median(wall) * 1e3,
                         min(wall) * 1e3, statistics.median(g[2] for g in got) * 1e3,
                         got[-1][3], got[-1][4]))
        if args.keep:
            print("kept: %s" % tmp)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
