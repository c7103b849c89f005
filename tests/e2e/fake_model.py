#!/usr/bin/env python3
"""A scripted fake model server for the end-to-end tests (standard library only).

It listens on 127.0.0.1 only and speaks the three wire APIs the hosts use:

  POST .../responses          OpenAI Responses, server-sent events     (Codex)
  POST .../chat/completions   OpenAI Chat Completions, SSE or JSON     (OpenCode, Pi, Oh My Pi, Hermes)
  POST .../messages           Anthropic Messages, SSE or JSON          (Claude Code)
  POST .../models/<m>:streamGenerateContent  Gemini API, SSE              (Gemini CLI)
  POST .../models/<m>:generateContent, :countTokens                    (Gemini side requests)
  POST .../messages/count_tokens, GET .../models                       (side requests)

What to answer is decided from each request alone (no server-side session),
by a script: a JSON object {"steps": [...], "final_text": "..."}.  A step is

  {"tool": NAME, "args": {...}}          a function call with these arguments
  {"tool": NAME, "input": "raw text"}    a freeform (custom) tool call, e.g. Codex apply_patch
  optional "step": N      only when the conversation already holds N tool results (default 0)
  optional "if": TEXT     only when the user text of the conversation contains TEXT
  optional "unless": TEXT only when it does not
  an args string "{{last.KEY}}" is replaced by KEY of the last tool result
  (parsed as JSON); when that is missing the step does not apply

The first step whose tool is offered in the request and whose conditions hold
becomes one tool call.  Otherwise the answer is plain text: `final_text` once
the conversation holds a tool result, else "ok" (title generation and other
side requests).  So one script drives a parent agent and its subagent: the
subagent's conversation starts from a different user text.

Every request is appended to the log as one JSON line: the API, the path, the
decision, the offered tool names, the tool results seen (the text the host fed
back to the model, where a deny reason must show up) and the body, with
credentials redacted.

    python3 fake_model.py --script FILE --log FILE --port-file FILE [--port N]
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_ID = "fake-model"


def _text_of(content) -> str:
    """Flatten the many shapes of message content into one string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(part) for part in content)
    if isinstance(content, dict):
        for key in ("text", "output", "content"):
            if key in content:
                return _text_of(content[key])
        return ""
    return str(content)


# ---------------------------------------------------------------------------
# Reading a request: offered tools, tool results, user text (per API)
# ---------------------------------------------------------------------------

class Conversation:
    """What the script looks at: offered tools, tool results and user text."""

    def __init__(self, tools, results, user_text):
        self.tools = tools          # name -> {"custom": bool, "namespace": str|None}
        self.results = results      # list of tool-result texts, in order
        self.user_text = user_text  # user-authored text (tool results excluded)


def read_responses(body) -> Conversation:
    tools = {}

    def add(tool, namespace=None):
        if not isinstance(tool, dict):
            return
        if tool.get("type") == "namespace" or isinstance(tool.get("tools"), list):
            for sub in tool.get("tools") or []:
                add(sub, tool.get("name"))
            return
        name = tool.get("name") or (tool.get("function") or {}).get("name") or tool.get("type")
        if name:
            tools[name] = {"custom": tool.get("type") == "custom", "namespace": namespace}

    for tool in body.get("tools") or []:
        add(tool)
    results, users = [], []
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "tool_search_output":
            # Codex loads deferred tools (e.g. the multi_agent_v1 namespace) this way:
            # from then on they are offered to the model.
            for tool in item.get("tools") or []:
                add(tool)
            results.append("tool_search_output")
        elif item.get("type") in ("function_call_output", "custom_tool_call_output",
                                  "local_shell_call_output"):
            results.append(_text_of(item.get("output")))
        elif item.get("role") == "user":
            users.append(_text_of(item.get("content")))
    if isinstance(body.get("input"), str):
        users.append(body["input"])
    return Conversation(tools, results, "\n".join(users))


def read_chat(body) -> Conversation:
    tools = {}
    for tool in body.get("tools") or []:
        name = (tool.get("function") or {}).get("name") or tool.get("name")
        if name:
            tools[name] = {"custom": False, "namespace": None}
    results, users = [], []
    for msg in body.get("messages") or []:
        if msg.get("role") == "tool":
            results.append(_text_of(msg.get("content")))
        elif msg.get("role") == "user":
            users.append(_text_of(msg.get("content")))
    return Conversation(tools, results, "\n".join(users))


def read_gemini(body) -> Conversation:
    tools = {}
    for group in body.get("tools") or []:
        for decl in (group or {}).get("functionDeclarations") or []:
            if decl.get("name"):
                tools[decl["name"]] = {"custom": False, "namespace": None}
    results, users = [], []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            if not isinstance(part, dict):
                continue
            if "functionResponse" in part:
                response = (part["functionResponse"] or {}).get("response")
                results.append(_text_of(response) if not isinstance(response, dict)
                               else json.dumps(response, ensure_ascii=False))
            elif content.get("role") == "user" and isinstance(part.get("text"), str):
                users.append(part["text"])
    return Conversation(tools, results, "\n".join(users))


def answer_gemini(decision, body: dict, stream: bool) -> bytes:
    if decision[0] == "tool":
        part = {"functionCall": {"name": decision[1]["tool"], "args": decision[1].get("args", {})}}
    else:
        config = body.get("generationConfig") or {}
        text = decision[1]
        if config.get("responseMimeType") == "application/json" or config.get("responseSchema") \
                or config.get("responseJsonSchema"):
            # Side requests (routing, next speaker) want JSON back.
            text = json.dumps({"reasoning": "fake", "next_speaker": "user",
                               "model_choice": "flash"})
        part = {"text": text}
    chunk = {"candidates": [{"content": {"role": "model", "parts": [part]},
                             "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                               "totalTokenCount": 15},
             "modelVersion": MODEL_ID}
    if stream:
        return ("data: %s\r\n\r\n" % json.dumps(chunk)).encode()
    return json.dumps(chunk).encode()


def read_anthropic(body) -> Conversation:
    tools = {t.get("name"): {"custom": False, "namespace": None}
             for t in body.get("tools") or [] if isinstance(t, dict) and t.get("name")}
    results, users = [], []
    for msg in body.get("messages") or []:
        content = msg.get("content")
        if msg.get("role") != "user":
            continue
        if isinstance(content, str):
            users.append(content)
            continue
        for block in content or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                results.append(_text_of(block.get("content")))
            elif block.get("type") == "text":
                users.append(block.get("text", ""))
    return Conversation(tools, results, "\n".join(users))


# ---------------------------------------------------------------------------
# The script
# ---------------------------------------------------------------------------

def _fill(value, results):
    """Replace "{{last.KEY}}" by KEY of the last tool result (parsed as JSON).

    Lets a step refer to an id the host made up, e.g. Codex's wait_agent
    targets the agent_id that spawn_agent returned.  LookupError if missing.
    """
    if isinstance(value, dict):
        return {k: _fill(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, results) for v in value]
    if isinstance(value, str) and value.startswith("{{last.") and value.endswith("}}"):
        key = value[len("{{last."):-2]
        try:
            obj = json.loads(results[-1])
        except (IndexError, ValueError):
            raise LookupError(key)
        if not isinstance(obj, dict) or key not in obj:
            raise LookupError(key)
        return obj[key]
    return value


class Script:
    def __init__(self, spec: dict):
        self.steps = list(spec.get("steps") or [])
        self.final_text = spec.get("final_text") or "E2E-DONE"

    def decide(self, conv: Conversation):
        """-> ("tool", step, tool_info) or ("text", text)."""
        done = len(conv.results)
        for step in self.steps:
            info = conv.tools.get(step["tool"])
            if info is None or step.get("step", 0) != done:
                continue
            if "if" in step and step["if"] not in conv.user_text:
                continue
            if "unless" in step and step["unless"] in conv.user_text:
                continue
            if "args" in step:
                try:
                    step = dict(step, args=_fill(step["args"], conv.results))
                except LookupError:
                    continue  # the value it needs is not in the last tool result
            return ("tool", step, info)
        return ("text", self.final_text if done else "ok")


# ---------------------------------------------------------------------------
# Writing an answer (per API)
# ---------------------------------------------------------------------------

def _sse(events) -> bytes:
    return "".join("event: %s\ndata: %s\n\n" % (name, json.dumps(data))
                   for name, data in events).encode()


def answer_responses(decision, n: int) -> bytes:
    if decision[0] == "tool":
        step, info = decision[1], decision[2]
        if step["tool"] == "tool_search":  # Codex's client-side deferred-tool discovery
            item = {"type": "tool_search_call", "id": "tsc_%d" % n, "call_id": "call_%d" % n,
                    "execution": "client", "arguments": step.get("args", {}),
                    "status": "completed"}
        elif info["custom"]:
            item = {"type": "custom_tool_call", "id": "ctc_%d" % n, "call_id": "call_%d" % n,
                    "name": step["tool"], "input": step.get("input", ""), "status": "completed"}
        else:
            args = step.get("args")
            if args is None:  # a freeform step offered as a function tool
                args = {"input": step.get("input", "")}
            item = {"type": "function_call", "id": "fc_%d" % n, "call_id": "call_%d" % n,
                    "name": step["tool"], "arguments": json.dumps(args), "status": "completed"}
        if info.get("namespace"):
            item["namespace"] = info["namespace"]
    else:
        item = {"type": "message", "role": "assistant", "id": "msg_%d" % n,
                "status": "completed",
                "content": [{"type": "output_text", "text": decision[1], "annotations": []}]}
    rid = "resp_%d" % n
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 15}
    events = [("response.created", {"type": "response.created",
                                    "response": {"id": rid, "status": "in_progress"}}),
              ("response.output_item.added", {"type": "response.output_item.added",
                                              "output_index": 0, "item": item})]
    if item["type"] == "message":
        events.append(("response.output_text.delta", {
            "type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
            "content_index": 0, "delta": decision[1]}))
    events += [("response.output_item.done", {"type": "response.output_item.done",
                                              "output_index": 0, "item": item}),
               ("response.completed", {"type": "response.completed", "response": {
                   "id": rid, "status": "completed", "output": [item], "usage": usage}})]
    return _sse(events)


def answer_chat(decision, n: int, body: dict):
    """-> (content type, payload)."""
    model = body.get("model") or MODEL_ID
    if decision[0] == "tool":
        call = {"id": "call_%d" % n, "type": "function",
                "function": {"name": decision[1]["tool"],
                             "arguments": json.dumps(decision[1].get("args", {}))}}
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": decision[1]}, "stop"
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    base = {"id": "chatcmpl-%d" % n, "created": int(time.time()), "model": model}
    if not body.get("stream"):
        return "application/json", json.dumps(dict(
            base, object="chat.completion", usage=usage,
            choices=[{"index": 0, "message": message, "finish_reason": finish}])).encode()
    chunks = [{"role": "assistant", "content": ""}]
    if decision[0] == "tool":
        fn = message["tool_calls"][0]["function"]
        chunks.append({"tool_calls": [{"index": 0, "id": "call_%d" % n, "type": "function",
                                       "function": {"name": fn["name"], "arguments": ""}}]})
        chunks.append({"tool_calls": [{"index": 0, "function": {"arguments": fn["arguments"]}}]})
    else:
        chunks.append({"content": decision[1]})
    out = []
    for i, delta in enumerate(chunks + [{}]):
        last = i == len(chunks)
        out.append(dict(base, object="chat.completion.chunk", choices=[
            {"index": 0, "delta": delta, "finish_reason": finish if last else None}]))
    if (body.get("stream_options") or {}).get("include_usage"):
        out.append(dict(base, object="chat.completion.chunk", choices=[], usage=usage))
    payload = "".join("data: %s\n\n" % json.dumps(c) for c in out) + "data: [DONE]\n\n"
    return "text/event-stream", payload.encode()


def answer_anthropic(decision, n: int, body: dict):
    model = body.get("model") or MODEL_ID
    if decision[0] == "tool":
        block = {"type": "tool_use", "id": "toolu_%02d" % n, "name": decision[1]["tool"],
                 "input": decision[1].get("args", {})}
        stop = "tool_use"
    else:
        block, stop = {"type": "text", "text": decision[1]}, "end_turn"
    usage = {"input_tokens": 10, "output_tokens": 5,
             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    mid = "msg_%d" % n
    if not body.get("stream"):
        return "application/json", json.dumps({
            "id": mid, "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop, "stop_sequence": None,
            "usage": usage}).encode()
    if block["type"] == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    return "text/event-stream", _sse([
        ("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": start}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"})])


# ---------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------

SECRET_HEADERS = ("authorization", "x-api-key", "api-key", "cookie")


class FakeModel(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: dict, log_path: str, port: int = 0):
        super().__init__(("127.0.0.1", port), Handler)
        self.script = Script(script)
        self.log_path = log_path
        self.lock = threading.Lock()
        self.count = 0

    def next_number(self) -> int:
        with self.lock:
            self.count += 1
            return self.count

    def log(self, entry: dict) -> None:
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self.lock, open(self.log_path, "a", encoding="utf-8") as fh:
            fh.write(line)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeModel

    def log_message(self, *args):  # quiet
        pass

    def _headers(self):
        return {k: ("<redacted>" if k.lower() in SECRET_HEADERS else v)
                for k, v in self.headers.items()}

    def _send(self, code: int, ctype: str, payload: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def do_GET(self):
        n = self.server.next_number()
        path = self.path.split("?")[0].rstrip("/")
        self.server.log({"n": n, "t": time.time(), "method": "GET", "path": self.path,
                         "headers": self._headers()})
        if path.endswith("/models"):
            self._send(200, "application/json", json.dumps({"object": "list", "data": [
                {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "fake",
                 "context_length": 128000}]}).encode())
        else:
            self._send(404, "application/json",
                       b'{"error":{"type":"not_found_error","message":"fake model server"}}')

    do_HEAD = do_GET

    def do_POST(self):
        n = self.server.next_number()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                body = {"_body": body}
        except ValueError:
            body = {"_raw": raw[:4000].decode("utf-8", "replace")}
        path = self.path.split("?")[0].rstrip("/")
        entry = {"n": n, "t": time.time(), "method": "POST", "path": self.path,
                 "headers": self._headers()}
        if path.endswith(":countTokens"):
            entry.update(api="gemini", decision=["count_tokens"], body=body)
            self.server.log(entry)
            self._send(200, "application/json", b'{"totalTokens": 10}')
            return
        if path.endswith((":streamGenerateContent", ":generateContent")):
            conv = read_gemini(body)
            decision = self.server.script.decide(conv)
            entry.update(api="gemini", tools=sorted(conv.tools), toolResults=conv.results,
                         userText=conv.user_text[-4000:],
                         decision=(["tool", decision[1]["tool"]] if decision[0] == "tool"
                                   else ["text", decision[1]]), body=body)
            self.server.log(entry)
            stream = path.endswith(":streamGenerateContent")
            self._send(200, "text/event-stream" if stream else "application/json",
                       answer_gemini(decision, body, stream))
            return
        if path.endswith("/messages/count_tokens"):
            entry.update(api="anthropic", decision=["count_tokens"], body=body)
            self.server.log(entry)
            self._send(200, "application/json", b'{"input_tokens": 10}')
            return
        if path.endswith("/responses"):
            api, conv = "responses", read_responses(body)
        elif path.endswith("/chat/completions"):
            api, conv = "chat", read_chat(body)
        elif path.endswith("/messages"):
            api, conv = "anthropic", read_anthropic(body)
        else:
            entry.update(api=None, decision=["404"], body=body)
            self.server.log(entry)
            self._send(404, "application/json",
                       b'{"error":{"type":"not_found_error","message":"fake model server"}}')
            return
        decision = self.server.script.decide(conv)
        entry.update(api=api, tools=sorted(conv.tools), toolResults=conv.results,
                     userText=conv.user_text[-4000:],
                     decision=(["tool", decision[1]["tool"]] if decision[0] == "tool"
                               else ["text", decision[1]]),
                     body=body)
        self.server.log(entry)
        if api == "responses":
            self._send(200, "text/event-stream", answer_responses(decision, n))
        elif api == "chat":
            self._send(200, *answer_chat(decision, n, body))
        else:
            self._send(200, *answer_anthropic(decision, n, body))


def start(script: dict, log_path: str, port: int = 0) -> FakeModel:
    """Start the server in a daemon thread; returns it (server.server_address[1] = port)."""
    server = FakeModel(script, log_path, port)
    threading.Thread(target=server.serve_forever, name="fake-model", daemon=True).start()
    return server


def read_log(path: str):
    """The request log as a list of dicts (missing file -> [])."""
    try:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError:
        return []


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--script", required=True, help="JSON file with the scenario script")
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    with open(args.script) as fh:
        script = json.load(fh)
    server = FakeModel(script, args.log, args.port)
    with open(args.port_file, "w") as fh:
        fh.write(str(server.server_address[1]))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
