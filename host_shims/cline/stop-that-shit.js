// Stop That Shit -- Cline CLI plugin shim (cline 3.0, the SDK-based CLI).
//
// Thin bridge: every forwarded hook becomes one JSON request for
// `python3 -I -S -c "...import sts..." cline`; the one JSON answer is applied
// here ({} / {"context"} / {"block": true, "reason"}).  All policy lives in
// sts.py.  Plain ESM JavaScript; imports nothing from Cline and nothing from npm.
//
// Cline loads it from ~/.cline/plugins/ (or <repo>/.cline/plugins/) as an SDK
// plugin with the "hooks" capability.  Hooks used:
//   beforeModel  the newest user message of a root agent's transcript, sent
//                once as `input` (the words reach no hook of their own); a
//                refusal stops the run ({stop, reason});
//   beforeTool   the same, then every tool call as `tool_call`: a block skips
//                that call ({skip: true, reason}) and the run goes on;
//   afterTool    `tool_result` for spawn_agent (its subagent has ended).
// Context goes back to the model as `appendContext`.
//
// The block between BEGIN/END shared shim plumbing is the same as in the
// other JS shims (a shared module may replace it); everything after it is
// Cline's own.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { accessSync, constants as fsConstants, existsSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const INSTALLED_STS_PY = null; // sts install rewrites this line
const HOST = "cline";

// ---------------------------------------------------------------------------
// BEGIN shared shim plumbing
// Shared plumbing (the same block sits in every JS shim so each file can be
// copied on its own): locate sts.py, spawn it once per hook, speak the wire
// protocol (one JSON request on stdin; `{}`, `{"context"}` or `{"block",
// "reason"}` back), and apply the failure rule: when sts.py cannot answer, a
// tool call is blocked if and only if the session is armed; anything else
// goes ahead.  Either way the failure is reported once.
// ---------------------------------------------------------------------------

const SHIM_DIR = dirname(fileURLToPath(import.meta.url));
const TOOL_HOOKS = new Set(["tool.execute.before", "tool.execute.after", "tool_call", "tool_result"]);

function stsPyPath() {
  return process.env.STS_PY || INSTALLED_STS_PY || resolve(SHIM_DIR, "..", "..", "sts.py");
}

function dataDir() {
  const env = process.env;
  if (env.STS_HOME) return env.STS_HOME;
  if (env.XDG_STATE_HOME) return join(env.XDG_STATE_HOME, "stop-that-shit");
  return join(homedir(), ".local", "state", "stop-that-shit");
}

// Same key as sts.py: first 24 hex of sha256 over UTF-8 (Node turns a lone
// surrogate into one U+FFFD; sts.py does the same).
function sessionKey(id) {
  if (!id) return "unknown";
  return createHash("sha256").update(String(id), "utf8").digest("hex").slice(0, 24);
}

function armedMarkerExists(ids) {
  try {
    const dir = join(dataDir(), "armed");
    return ids.some((id) => typeof id === "string" && id !== "" && existsSync(join(dir, sessionKey(id))));
  } catch {
    return false;
  }
}

function timeoutFor(hook) {
  const raw = process.env.STS_TIMEOUT_MS;
  const n = raw ? Number.parseInt(raw, 10) : NaN;
  if (Number.isFinite(n) && n > 0) return n;
  return TOOL_HOOKS.has(hook) ? 10000 : 5000;
}

function isWritableDir(dir) {
  try {
    accessSync(dir, fsConstants.W_OK);
    return true;
  } catch {
    return false;
  }
}

// argv for spawn (never a shell): the import form, so bytecode is reused.
function stsCommand() {
  const python = process.env.STS_PYTHON || "python3";
  const file = resolve(stsPyPath());
  const dir = dirname(file);
  const args = ["-I", "-S"];
  if (!isWritableDir(dir)) args.push("-X", "pycache_prefix=" + join(dataDir(), "pycache"));
  const stem = basename(file).endsWith(".py") ? basename(file).slice(0, -3) : "";
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(stem)) {
    // A JSON string literal is also a valid Python string literal.
    const code = `import sys; sys.path.insert(0, ${JSON.stringify(dir)}); import ${stem}; sys.exit(${stem}.main())`;
    args.push("-c", code);
  } else {
    args.push(file);
  }
  args.push(HOST);
  return { python, args };
}

// Host objects -> plain JSON: functions dropped, cycles -> null, nothing cut.
function plain(value, stack) {
  if (value === null) return null;
  const kind = typeof value;
  if (kind === "string" || kind === "boolean") return value;
  if (kind === "number") return Number.isFinite(value) ? value : null;
  if (kind === "bigint") return value.toString();
  if (kind !== "object") return undefined;
  if (stack.includes(value)) return null;
  if (typeof value.toJSON === "function") {
    try {
      return plain(value.toJSON(), stack);
    } catch {
      return null;
    }
  }
  stack.push(value);
  try {
    if (Array.isArray(value)) {
      return value.map((item) => {
        const p = plain(item, stack);
        return p === undefined ? null : p;
      });
    }
    const out = {};
    for (const key of Object.keys(value)) {
      let item;
      try {
        item = value[key];
      } catch {
        continue;
      }
      const p = plain(item, stack);
      if (p !== undefined) out[key] = p;
    }
    return out;
  } finally {
    stack.pop();
  }
}

function encodeRequest(hook, sessionId, cwd, payload) {
  let body;
  try {
    body = plain(payload, []);
  } catch {
    body = {};
  }
  return JSON.stringify({ v: 1, hook, sessionId: sessionId ?? null, cwd: cwd ?? null, payload: body ?? {} });
}

function spawnFailure(error, python) {
  if (error && error.code === "ENOENT") return `cannot start ${python}: not found`;
  return `cannot start ${python}: ${(error && (error.code || error.message)) || "unknown error"}`;
}

// Resolves to {answer} or {failure}; never rejects.
function runSts(hook, request) {
  return new Promise((settle) => {
    const { python, args } = stsCommand();
    const limit = timeoutFor(hook);
    let done = false;
    let timer = null;
    const finish = (result) => {
      if (done) return;
      done = true;
      if (timer) clearTimeout(timer);
      settle(result);
    };
    let child;
    try {
      child = spawn(python, args, { stdio: ["pipe", "pipe", "pipe"], windowsHide: true });
    } catch (error) {
      finish({ kind: "spawn", failure: spawnFailure(error, python) });
      return;
    }
    const out = [];
    const err = [];
    let errSize = 0;
    child.on("error", (error) => finish({ kind: "spawn", failure: spawnFailure(error, python) }));
    child.stdout.on("data", (chunk) => out.push(chunk));
    child.stderr.on("data", (chunk) => {
      if (errSize < 16384) {
        err.push(chunk);
        errSize += chunk.length;
      }
    });
    child.stdin.on("error", () => {});
    timer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
      finish({ kind: "timeout", failure: `timeout after ${limit} ms` });
    }, limit);
    child.on("close", (code, signal) => {
      if (signal) return finish({ kind: "exit", failure: `sts.py killed by ${signal}` });
      if (code !== 0) {
        const lines = Buffer.concat(err).toString("utf8").trim().split("\n");
        const last = lines[lines.length - 1] || "";
        return finish({ kind: "exit", failure: `sts.py exited with status ${code}${last ? ": " + last.slice(0, 200) : ""}` });
      }
      const text = Buffer.concat(out).toString("utf8").trim();
      let answer;
      try {
        answer = JSON.parse(text);
      } catch {
        answer = undefined;
      }
      if (!answer || typeof answer !== "object" || Array.isArray(answer)) {
        return finish({ kind: "output", failure: text ? "sts.py did not print one JSON object" : "sts.py printed nothing" });
      }
      finish({ answer });
    });
    try {
      child.stdin.end(request);
    } catch {
      // reported through "error"/"close"
    }
  });
}

function blockedReason(why) {
  return `Stop That Shit could not evaluate this call (${why}); the task contract is armed, so the call is blocked. Fix python3/sts.py or turn the guard off.`;
}

// One hook round trip.  Failures become an answer: tool-call hooks block iff an
// armed marker exists for the session (or its known root); everything else
// fails open.  `say` shows the failure in the host; each kind is said once.
const toldFailures = new Set();
async function askSts(hook, sessionId, cwd, payload, options) {
  const opts = options || {};
  const result = await runSts(hook, encodeRequest(hook, sessionId, cwd, payload));
  if (result.answer) return result.answer;
  const blocking = Boolean(opts.toolCall) && armedMarkerExists([sessionId, ...(opts.alsoArmedIf || [])]);
  const kind = `${result.kind}|${blocking}`;
  if (!toldFailures.has(kind)) {
    toldFailures.add(kind);
    const tail = blocking
      ? "the task contract is armed, so tool calls are blocked until it works again"
      : "continuing without the guard for this event";
    const text = `Stop That Shit: no answer from sts.py for ${hook} (${result.failure}); ${tail}.`;
    try {
      if (opts.say) opts.say(text);
      else process.stderr.write(text + "\n");
    } catch {
      try {
        process.stderr.write(text + "\n");
      } catch {
        // nowhere left to say it
      }
    }
  }
  return blocking ? { block: true, reason: blockedReason(result.failure) } : {};
}

function textOf(value) {
  return typeof value === "string" && value !== "" ? value : null;
}

function blockReasonOf(answer) {
  if (!answer || answer.block !== true) return null;
  return textOf(answer.reason) || "Stop That Shit blocked this call.";
}
// END shared shim plumbing

// ---------------------------------------------------------------------------
// Cline surface
// ---------------------------------------------------------------------------

// Cline runs plugins in a sandbox process and fails a hook that takes 3 s
// (the run ends with an error): sts.py gets less, so that the failure rule
// above (block while armed, else go on) decides instead.
if (!process.env.STS_TIMEOUT_MS) process.env.STS_TIMEOUT_MS = "2500";

// Subagents run in this process, each with its own agent and conversation id.
// agentId -> the root conversation it answers to, learned from each agent's
// own hooks (a parent always runs a hook before its spawn_agent starts a child).
const rootOf = new Map();
const sentInput = new Map(); // agentId -> id of the last user message sent as `input`
const pendingContext = new Map(); // agentId -> context text for the next appendContext
// The session's workspace (Cline's file tools resolve relative paths there),
// from setup(); the process folder only when Cline gave none.
let workspaceRoot = null;

function factsOf(snapshot) {
  const s = snapshot && typeof snapshot === "object" ? snapshot : {};
  const agentId = typeof s.agentId === "string" && s.agentId ? s.agentId : null;
  const parentAgentId = typeof s.parentAgentId === "string" && s.parentAgentId ? s.parentAgentId : null;
  const sessionId = typeof s.conversationId === "string" && s.conversationId ? s.conversationId : agentId;
  let rootSessionId = null;
  if (!parentAgentId) rootSessionId = sessionId;
  else if (rootOf.has(parentAgentId)) rootSessionId = rootOf.get(parentAgentId);
  if (agentId && rootSessionId) rootOf.set(agentId, rootSessionId);
  return { agentId, parentAgentId, sessionId, rootSessionId, cwd: workspaceRoot || process.cwd() };
}

function ctxOf(facts) {
  return { agentId: facts.agentId, parentAgentId: facts.parentAgentId, rootSessionId: facts.rootSessionId };
}

function messageText(message) {
  if (!message || message.role !== "user") return null;
  const content = message.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return null;
  const parts = content.filter((p) => p && p.type === "text" && typeof p.text === "string");
  return parts.length ? parts.map((p) => p.text).join("\n") : null;
}

function addContext(agentId, text) {
  if (!agentId || !textOf(text)) return;
  const old = pendingContext.get(agentId);
  pendingContext.set(agentId, old ? `${old}\n\n${text}` : text);
}

function takeContext(agentId) {
  const text = pendingContext.get(agentId);
  pendingContext.delete(agentId);
  return text || undefined;
}

// The newest message the user wrote in this agent's transcript: a user-role
// message of text parts only, not one Cline made itself.  No hook sees the
// input arrive; the transcript of the next hook shows it.
function latestUserInput(snapshot) {
  const messages = snapshot && Array.isArray(snapshot.messages) ? snapshot.messages : [];
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const m = messages[i];
    if (!m || m.role !== "user") continue;
    // Cline's own user-role messages (reminders, hook context) carry userRunSpan.
    if (m.metadata && typeof m.metadata === "object" && "userRunSpan" in m.metadata) continue;
    const text = messageText(m);
    if (text === null) continue;
    return { id: typeof m.id === "string" ? m.id : `#${i}`, text };
  }
  return null;
}

// Sends a root agent's newest user message as `input` once; -> its answer or null.
async function sendInput(facts, snapshot) {
  if (!facts.agentId || facts.parentAgentId) return null; // a subagent's task is its parent's words
  const found = latestUserInput(snapshot);
  if (!found || sentInput.get(facts.agentId) === found.id) return null;
  sentInput.set(facts.agentId, found.id);
  const answer = await askSts("input", facts.sessionId, facts.cwd,
    { event: { type: "input", text: found.text, source: "user" }, ctx: ctxOf(facts) });
  addContext(facts.agentId, answer.context);
  return answer;
}

export default {
  name: "stop-that-shit",
  manifest: { capabilities: ["hooks"] },
  setup: (api, ctx) => {
    const root = ctx && ctx.workspaceInfo && ctx.workspaceInfo.rootPath;
    if (typeof root === "string" && root) workspaceRoot = root;
  },
  hooks: {
    beforeModel: async (context) => {
      const snapshot = context && context.snapshot;
      const answer = await sendInput(factsOf(snapshot), snapshot);
      const reason = blockReasonOf(answer);
      return reason ? { stop: true, reason } : undefined;
    },
    beforeTool: async (context) => {
      const snapshot = context && context.snapshot;
      const facts = factsOf(snapshot);
      const refused = blockReasonOf(await sendInput(facts, snapshot));
      if (refused) return { skip: true, reason: refused };
      const call = (context && context.toolCall) || {};
      const toolName = context && context.tool && typeof context.tool.name === "string"
        ? context.tool.name : (typeof call.toolName === "string" ? call.toolName : null);
      const answer = await askSts("tool_call", facts.sessionId, facts.cwd, {
        event: { toolName, toolCallId: call.toolCallId ?? null, input: context ? context.input : null },
        ctx: ctxOf(facts),
      }, { toolCall: true, alsoArmedIf: facts.rootSessionId ? [facts.rootSessionId] : [] });
      const reason = blockReasonOf(answer);
      if (reason) return { skip: true, reason };
      addContext(facts.agentId, answer.context);
      const appendContext = takeContext(facts.agentId);
      return appendContext ? { appendContext } : undefined;
    },
    afterTool: async (context) => {
      const facts = factsOf(context && context.snapshot);
      const name = context && context.tool && context.tool.name;
      const call = (context && context.toolCall) || {};
      if (name === "spawn_agent") {
        const answer = await askSts("tool_result", facts.sessionId, facts.cwd,
          { event: { toolName: name, toolCallId: call.toolCallId ?? null }, ctx: ctxOf(facts) });
        addContext(facts.agentId, answer.context);
      }
      const appendContext = takeContext(facts.agentId);
      return appendContext ? { appendContext } : undefined;
    },
  },
};
