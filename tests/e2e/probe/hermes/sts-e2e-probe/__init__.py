"""Hermes probe plugin for the e2e harness: pre_tool_call -> $STS_PY -> block."""
import json
import os
import subprocess
import sys


def _pre_tool_call(**kwargs):
    payload = {k: v for k, v in kwargs.items() if isinstance(v, (str, int, float, bool, dict, list))
               or v is None}
    request = {"v": 1, "hook": "pre_tool_call", "sessionId": kwargs.get("session_id"),
               "cwd": os.getcwd(), "payload": payload}
    try:
        proc = subprocess.run([sys.executable, os.environ["STS_PY"], "hermes"],
                              input=json.dumps(request, default=str), capture_output=True,
                              text=True, timeout=10)
        answer = json.loads(proc.stdout or "{}")
    except Exception:  # the probe fails open
        return None
    if answer.get("block"):
        return {"action": "block", "message": answer.get("reason") or "blocked"}
    return None


def register(ctx):
    ctx.register_hook("pre_tool_call", _pre_tool_call)
