"""Cost of the analysis: python3 tests/bench_analysis.py

Prints median, p95 and worst case of sts.analyze_shell over the labelled
corpus (each command timed several times, best run kept, so scheduler noise
does not count), then the pathological inputs (the analyzer refuses a command
over 64 KiB or nested more than 32 deep), then the large manifests, hash texts
and prompts of the unit tests.  Each line over its budget is marked OVER, and
the exit status is 1 if any is; those budgets count CPU time (process_time),
so other work on the machine does not push a line over.  (The unit tests
assert how the work grows, never a time.)
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import sts  # noqa: E402
from test_analysis import HASH_STRESS, MANIFEST_STRESS, ROWS, _shell_of  # noqa: E402

MEDIAN_BUDGET = 0.001    # seconds per corpus command, median
PATHOLOGICAL_BUDGET = 1.0
SCAN_BUDGET = 2.0        # one large manifest, hash text or prompt (up to ~1 MB)


def best_of(command, shell, runs=5):
    best = None
    for _ in range(runs):
        start = time.perf_counter()
        sts.analyze_shell(command, shell)
        took = time.perf_counter() - start
        best = took if best is None or took < best else best
    return best


def timed(fn, *args):
    """CPU seconds of one call."""
    start = time.process_time()
    fn(*args)
    return time.process_time() - start


def over(took, budget):
    return "" if took <= budget else "  OVER (budget %.0f ms)" % (budget * 1e3)


def main():
    slow = 0
    for _, _, tags, command in ROWS:      # warm the lazily compiled patterns
        sts.analyze_shell(command, _shell_of(tags))
    costs = sorted((best_of(c, _shell_of(t)), c) for _, _, t, c in ROWS)
    n = len(costs)
    print("corpus: %d commands" % n)
    print("  median %.1f us%s" % (costs[n // 2][0] * 1e6, over(costs[n // 2][0], MEDIAN_BUDGET)))
    slow += costs[n // 2][0] > MEDIAN_BUDGET
    print("  p95    %.1f us" % (costs[int(n * 0.95)][0] * 1e6))
    print("  worst  %.1f us  %r" % (costs[-1][0] * 1e6, costs[-1][1][:60]))
    patho = {
        "10,000 nested double quotes": '"' * 10000,
        "10,000 alternating quotes": "'\"" * 5000,
        "1 MB command": "ls " + "a" * (1 << 20),
        "64 KiB - 1 of words": ("ls " + "a " * 40000)[:65535],
        "5,000 $( opening": "echo " + "$(" * 5000,
        "40 nested $(echo": "echo " + "$(echo " * 40 + "x" + ")" * 40,
        "3,000 heredocs": "cat <<EOF\n" * 3000,
        "awk with 20,000 quotes": "awk '" + '"' * 20000 + "' f",
        "sed with 10,000 s/": "sed '" + "s/" * 10000 + "' f",
    }
    print("pathological inputs (bash / powershell / unknown):")
    for label, command in patho.items():
        row = []
        for shell in ("bash", "powershell", "unknown"):
            start = time.process_time()
            result = sts.analyze_shell(command, shell)
            took = time.process_time() - start
            slow += took > PATHOLOGICAL_BUDGET
            row.append("%s %.2f ms%s" % (result.mutability, took * 1e3,
                                         over(took, PATHOLOGICAL_BUDGET)))
        print("  %-30s %s" % (label, " | ".join(row)))
    print("large inputs to the other scans:")
    scans = [("manifest %s, %d chars" % (path, len(text)), sts.dependency_intent_in_change,
              (path, text, text + "\n")) for path, text in MANIFEST_STRESS]
    scans += [("hash text %s, %d chars" % (path, len(text)), sts.hash_intent_in_text,
               (text, path)) for path, text in HASH_STRESS]
    prompt = ("Some prose with 'quotes' and \"more\" and `code` here.\n" * 20000
              + "    indented\n```\nfenced\n```\nreview only")
    quotes = " 'a" * 20000 + ' \\"' * 20000 + ' "' + "`" * 3 + " `x" * 20000
    scans += [("prompt, %d chars" % len(text), sts.interpret_prompt,
               (dict(sts.DEFAULT_CONTRACT), text)) for text in (prompt, quotes)]
    for label, fn, args in scans:
        took = min(timed(fn, *args) for _ in range(3))
        slow += took > SCAN_BUDGET
        print("  %-40s %7.1f ms%s" % (label, took * 1e3, over(took, SCAN_BUDGET)))
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
