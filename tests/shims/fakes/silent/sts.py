"""Fake sts.py that prints nothing at all."""
import sys


def main(argv=None):
    sys.stdin.read()
    return 0
