"""Fake sts.py for protocol tests.

Appends {"argv", "flags", "request"} to $FAKE_LOG (one JSON line per call) and
answers from $FAKE_ANSWERS, a JSON list of rules {"hook"?, "tool"?, "session"?,
"answer"}; the first rule whose given keys match the request wins, else {}.
For Hermes envelopes the rule's "hook" matches hook_event_name and "raw" (a
string) is printed verbatim instead of a JSON answer.
"""
import json
import os
import sys


def _tool(request):
    payload = request.get("payload") or {}
    for key in ("event", "input"):
        item = payload.get(key) or {}
        for name in ("toolName", "tool"):
            if isinstance(item.get(name), str):
                return item[name]
    return request.get("tool_name")


def main(argv=None):
    raw = sys.stdin.read()
    request = json.loads(raw)
    with open(os.environ["FAKE_LOG"], "a") as fh:
        fh.write(json.dumps({"argv": sys.argv[1:], "isolated": sys.flags.isolated,
                             "no_site": sys.flags.no_site, "request": request}) + "\n")
    hook = request.get("hook") or request.get("hook_event_name")
    session = request.get("sessionId") or request.get("session_id")
    for rule in json.loads(os.environ.get("FAKE_ANSWERS") or "[]"):
        if "hook" in rule and rule["hook"] != hook:
            continue
        if "tool" in rule and rule["tool"] != _tool(request):
            continue
        if "session" in rule and rule["session"] != session:
            continue
        if "raw" in rule:
            sys.stdout.write(rule["raw"])
        else:
            print(json.dumps(rule["answer"]))
        return 0
    if "hook_event_name" not in request:
        print("{}")
    return 0
