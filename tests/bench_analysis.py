"""Cost of sts.analyze_shell per command: python3 tests/bench_analysis.py

Prints median, p95 and worst case over the labelled corpus (each command
timed several times, best run kept, so scheduler noise does not count),
then the pathological inputs of decisions.md 8.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import sts  # noqa: E402
from test_analysis import ROWS, _shell_of  # noqa: E402


def best_of(command, shell, runs=5):
    best = None
    for _ in range(runs):
        start = time.perf_counter()
        sts.analyze_shell(command, shell)
        took = time.perf_counter() - start
        best = took if best is None or took < best else best
    return best


def main():
    for _, _, tags, command in ROWS:      # warm the lazily compiled patterns
        sts.analyze_shell(command, _shell_of(tags))
    costs = sorted((best_of(c, _shell_of(t)), c) for _, _, t, c in ROWS)
    n = len(costs)
    print("corpus: %d commands" % n)
    print("  median %.1f us" % (costs[n // 2][0] * 1e6))
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
            start = time.perf_counter()
            result = sts.analyze_shell(command, shell)
            row.append("%s %.2f ms" % (result.mutability, (time.perf_counter() - start) * 1e3))
        print("  %-30s %s" % (label, " | ".join(row)))


if __name__ == "__main__":
    main()
