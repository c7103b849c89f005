"""Fake sts.py that never answers in time (records its pid first)."""
import os
import sys
import time


def main(argv=None):
    sys.stdin.read()
    pid_file = os.environ.get("FAKE_PID_FILE")
    if pid_file:
        with open(pid_file, "a") as fh:
            fh.write("%d\n" % os.getpid())
    time.sleep(60)
    print("{}")
    return 0
