"""sts.json against the json package on big state files, in one process.

    python3 tests/bench_json.py [--reservations N]

Builds a schema-4 state with N reservations (default 20,000; about 5 MB as
written), then times, best of several runs, reading it (json.loads) and
writing it as state files are written (indent=2, ensure_ascii=False) and as
audit lines are (compact), with both.  The two texts must be identical.
"""
import json
import sys
import time

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0])
import sts  # noqa: E402


def best(function, runs=15):
    out = None
    for _ in range(runs):
        start = time.process_time()
        function()
        took = time.process_time() - start
        out = took if out is None or took < out else out
    return out


def main():
    count = 20000
    if "--reservations" in sys.argv:
        count = int(sys.argv[sys.argv.index("--reservations") + 1])
    state = sts.default_state()
    delegation = state["delegation"]
    for n in range(count):
        action = "call_%06d_é" % n
        delegation["acceptedActions"][action] = 2
        delegation["reservations"]["reservation:" + action] = {
            "actionId": action, "asyncLaunched": None, "pendingCount": 1,
            "agentIds": ["agent-%d" % n], "completionScope": "children", "observedRunning": False,
            "notStartedAmbiguous": False, "resultUnknown": False, "reportedAliases": []}
    text = json.dumps(state, indent=2, ensure_ascii=False)
    assert sts.json.dumps(state, indent=2, ensure_ascii=False) == text
    assert sts.json.loads(text) == json.loads(text)
    print("python %s, state of %d reservations, %.1f MB" % (
        sys.version.split()[0], count, len(text.encode()) / 1e6))
    rows = [
        ("read", lambda: json.loads(text), lambda: sts.json.loads(text)),
        ("write indent=2", lambda: json.dumps(state, indent=2, ensure_ascii=False),
         lambda: sts.json.dumps(state, indent=2, ensure_ascii=False)),
        ("write compact", lambda: json.dumps(state, ensure_ascii=False, separators=(",", ":")),
         lambda: sts.json.dumps(state, ensure_ascii=False, separators=(",", ":"))),
    ]
    for label, plain, fast in rows:
        a, b = best(plain), best(fast)
        print("  %-16s json %7.1f ms   sts.json %7.1f ms   (%.2fx)" % (label, a * 1e3, b * 1e3,
                                                                     b / a))


if __name__ == "__main__":
    main()
