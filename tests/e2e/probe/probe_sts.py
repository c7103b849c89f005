#!/usr/bin/env python3
"""A stand-in for `sts.py <host>` used to prove the harness before sts.py is ready.

    python3 probe_sts.py HOST < event.json

It denies every tool call whose input mentions `e2e-deny` and allows the rest.
Codex, Claude Code and Qwen Code get their native PreToolUse deny, Gemini CLI and Mistral Vibe
{"decision": "deny"} and Copilot CLI a top-level permissionDecision (its event
name comes as the second argument); the probe shims for
OpenCode, Pi, Oh My Pi and Hermes get the shim answer {"block": true, "reason"}.  Every event is appended to $STS_HOME/probe.jsonl, so a test
can tell that the hook was consulted.
"""
import json
import os
import sys

REASON = ("E2E_PROBE_DENY: the end-to-end probe hook blocked this call. "
          "Do not retry it.")
TOOL_HOOKS = ("PreToolUse", "tool.execute.before", "tool_call", "pre_tool_call", "BeforeTool",
              "pre_tool",
              "preToolUse")


def main() -> int:
    host = sys.argv[1] if len(sys.argv) > 1 else "?"
    raw = sys.stdin.read()
    try:
        event = json.loads(raw)
    except ValueError:
        sys.stderr.write("probe_sts: stdin is not JSON\n")
        return 0
    if host == "copilot" and isinstance(event, dict) and len(sys.argv) > 2:
        event["hook_event_name"] = sys.argv[2]  # camelCase stdin names no event
    home = os.environ.get("STS_HOME")
    if home:
        os.makedirs(home, exist_ok=True)
        with open(os.path.join(home, "probe.jsonl"), "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"host": host, "event": event}) + "\n")
    native = isinstance(event, dict) and "hook_event_name" in event
    hook = event.get("hook_event_name") if native else event.get("hook")
    deny = hook in TOOL_HOOKS and "e2e-deny" in json.dumps(event)
    if native and host in ("gemini", "vibe"):
        if deny:  # Gemini ignores permissionDecision
            print(json.dumps({"decision": "deny", "reason": REASON}))
        return 0
    if native and host == "copilot":
        if deny:
            print(json.dumps({"permissionDecision": "deny", "permissionDecisionReason": REASON}))
        return 0
    if native:
        if deny:
            print(json.dumps({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny",
                "permissionDecisionReason": REASON}}))
        return 0
    print(json.dumps({"block": True, "reason": REASON} if deny else {}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
