"""Fake sts.py that crashes (non-zero exit after a valid-looking answer)."""
import sys


def main(argv=None):
    sys.stdin.read()
    print("{}")
    sys.stderr.write("Traceback (most recent call last): boom\n")
    return 3
