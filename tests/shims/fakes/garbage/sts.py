"""Fake sts.py whose answer is not one JSON object."""
import sys


def main(argv=None):
    sys.stdin.read()
    sys.stdout.write('{"block": false} {"context": "two objects"}\nnot json at all\n')
    return 0
