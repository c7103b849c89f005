// Stop That Shit -- Oh My Pi extension shim (@oh-my-pi/pi-coding-agent 18.x).
//
// Thin bridge: every forwarded event becomes one JSON request for
// `python3 -I -S -c "...import sts..." omp`; the one JSON answer is applied here
// ({} / {"context"} / {"block": true, "reason"}).  All policy lives in sts.py.
// Plain ESM JavaScript; imports nothing from Oh My Pi (its loader only resolves its
// own package names) and nothing from npm.
//
// Surfaces used: the --sts-contract flag (read on session_start), the /sts
// command, input (interactive/rpc roots), before_agent_start, tool_call,
// tool_result (task results and watch context), tool_approval_resolved and
// the task:subagent:lifecycle bus event.  Subagents run in this process with
// their own sessions, so session facts live at module level (section 7.4).

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { accessSync, constants as fsConstants, existsSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const INSTALLED_STS_PY = null; // sts install rewrites this line
const HOST = "omp";

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
// Oh My Pi surface
// ---------------------------------------------------------------------------

const CONTEXT_TYPE = "stop-that-shit-context";
const ERROR_TYPE = "stop-that-shit-error";
const FLAG = "sts-contract";
const LIFECYCLE = "task:subagent:lifecycle";
const PROMPT_SOURCES = new Set(["interactive", "rpc"]);
const ENDED = new Set(["completed", "failed", "aborted", "cancelled", "canceled", "error"]);

// Module level on purpose: subagents load this module once per process and
// may get their own `pi` object, but they share this state.
const shared = {
  processRoot: null, // first session seen without a link
  rootOf: new Map(), // sessionId -> root sessionId, or null for a root
  fileRoot: new Map(), // child sessionFile -> root sessionId (from lifecycle events)
  taskCalls: new Map(), // toolCallId -> {sessionId, rootId, cwd, background, live:Set, done}
  promptContext: new Map(), // sessionId -> text for the next before_agent_start
  callContext: new Map(), // sessionId + toolCallId -> watch text for that tool_result
  buses: new WeakSet(), // event buses already subscribed
  seenLifecycle: new Set(), // lifecycle events already forwarded
  lastCtx: null, // a recent ctx, to show bus-event failures
  lifecycleQueue: Promise.resolve(), // bus events reach sts.py one at a time, in order
};

function factsOf(ctx) {
  let sessionId = null;
  let sessionFile = null;
  let idle = null;
  try {
    sessionId = ctx.sessionManager.getSessionId() ?? null;
  } catch {
    sessionId = null;
  }
  try {
    const file = ctx.sessionManager.getSessionFile();
    sessionFile = typeof file === "string" && file ? file : null;
  } catch {
    sessionFile = null;
  }
  try {
    idle = typeof ctx.isIdle === "function" ? Boolean(ctx.isIdle()) : null;
  } catch {
    idle = null;
  }
  const cwd = ctx && typeof ctx.cwd === "string" && ctx.cwd ? ctx.cwd : process.cwd();
  if (ctx) shared.lastCtx = ctx;
  return { sessionId, sessionFile, cwd, idle, hasUI: Boolean(ctx && ctx.hasUI) };
}

// The root whose task call may have started a session right now: the
// process root if it has one in flight, else the only root that has one.
function rootWithTaskInFlight() {
  const roots = new Set();
  for (const call of shared.taskCalls.values()) {
    if (!call.done) roots.add(call.rootId || call.sessionId);
  }
  if (shared.processRoot && roots.has(shared.processRoot)) return shared.processRoot;
  return roots.size === 1 ? [...roots][0] : null;
}

// Root session of `facts.sessionId` (null when it is a root itself).
function rootFor(facts) {
  const id = facts.sessionId;
  if (typeof id !== "string" || !id) return null;
  if (shared.rootOf.has(id)) {
    const known = shared.rootOf.get(id);
    if (known || !facts.sessionFile || !shared.fileRoot.has(facts.sessionFile)) return known;
  }
  let root = null;
  if (facts.sessionFile && shared.fileRoot.has(facts.sessionFile)) {
    root = shared.fileRoot.get(facts.sessionFile);
  } else if (!facts.sessionFile && shared.processRoot && shared.processRoot !== id && !shared.rootOf.has(id)) {
    root = rootWithTaskInFlight();
  }
  if (root === id) root = null;
  shared.rootOf.set(id, root);
  if (!root && !shared.processRoot) shared.processRoot = id;
  return root;
}

function ctxFacts(facts, root) {
  return { idle: facts.idle, hasUI: facts.hasUI, sessionFile: facts.sessionFile, parentSessionId: root };
}

function callKey(sessionId, toolCallId) {
  return `${sessionId ?? ""}\u0000${toolCallId ?? ""}`;
}

function notifier(ctx) {
  return (text, level) => {
    try {
      if (ctx && ctx.hasUI && ctx.ui && typeof ctx.ui.notify === "function") {
        ctx.ui.notify(text, level || "warning");
        return;
      }
    } catch {
      // fall through to stderr
    }
    try {
      process.stderr.write(text + "\n");
    } catch {
      // nowhere left to say it
    }
  };
}

// A visible message that starts no model turn; notify/stderr if that fails.
function showMessage(pi, ctx, customType, text) {
  const fallback = () => notifier(ctx)(text, customType === ERROR_TYPE ? "error" : "info");
  try {
    if (pi && typeof pi.sendMessage === "function") {
      const sent = pi.sendMessage({ customType, content: text, display: true }, { triggerTurn: false });
      if (sent && typeof sent.catch === "function") sent.catch(fallback);
      return;
    }
  } catch {
    // fall through
  }
  fallback();
}

function contextMessage(text) {
  return { message: { customType: CONTEXT_TYPE, content: text, display: false } };
}

async function onLifecycle(data) {
  try {
    if (!data || typeof data !== "object") return;
    const call = shared.taskCalls.get(data.parentToolCallId);
    if (!call) return; // not a call this shim saw: cannot say which session it belongs to
    const seen = JSON.stringify([data.parentToolCallId, data.id ?? null, data.status ?? null]);
    if (shared.seenLifecycle.has(seen)) return;
    shared.seenLifecycle.add(seen);
    const root = call.rootId || call.sessionId;
    if (typeof data.sessionFile === "string" && data.sessionFile) shared.fileRoot.set(data.sessionFile, root);
    const childId = data.id ?? null;
    if (ENDED.has(data.status)) {
      call.live.delete(childId);
      if (call.background && call.live.size === 0) call.done = true;
    } else {
      call.live.add(childId);
      call.sawChild = true;
    }
    const ctx = shared.lastCtx;
    await askSts(LIFECYCLE, call.sessionId, call.cwd, {
      event: data,
      ctx: { idle: null, hasUI: Boolean(ctx && ctx.hasUI), sessionFile: null, parentSessionId: call.rootId },
    }, { say: notifier(ctx) });
  } catch {
    // lifecycle fails open
  }
}

export default function stopThatShit(pi) {
  try {
    pi.registerFlag(FLAG, {
      type: "string",
      description: "Stop That Shit task contract for this run, e.g. \"review -- look only\"",
    });
  } catch {
    // an older host without flags: /sts still works
  }

  try {
    pi.registerCommand("sts", {
      description: "Stop That Shit: set or inspect the task contract (/sts review -- ..., /sts status)",
      handler: async (args, ctx) => {
        try {
          const facts = factsOf(ctx);
          const root = rootFor(facts);
          const answer = await askSts("command:sts", facts.sessionId, facts.cwd, {
            args: typeof args === "string" ? args : Array.isArray(args) ? args.join(" ") : "",
            ctx: ctxFacts(facts, root),
          }, { say: notifier(ctx) });
          const reason = blockReasonOf(answer);
          if (reason) showMessage(pi, ctx, ERROR_TYPE, reason);
          else if (textOf(answer.context)) showMessage(pi, ctx, CONTEXT_TYPE, answer.context);
        } catch {
          // commands fail open
        }
      },
    });
  } catch {
    // no command support
  }

  if (pi.events && typeof pi.events.on === "function" && !shared.buses.has(pi.events)) {
    shared.buses.add(pi.events);
    try {
      pi.events.on(LIFECYCLE, (data) => {
        shared.lifecycleQueue = shared.lifecycleQueue.then(() => onLifecycle(data));
      });
    } catch {
      // no bus: background children keep their reservation
    }
  }

  pi.on("session_start", async (event, ctx) => {
    try {
      const facts = factsOf(ctx);
      const root = rootFor(facts);
      let flag = null;
      try {
        const value = typeof pi.getFlag === "function" ? pi.getFlag(FLAG) : null;
        flag = typeof value === "string" ? value : null;
      } catch {
        flag = null;
      }
      const answer = await askSts("session_start", facts.sessionId, facts.cwd, {
        event, ctx: { ...ctxFacts(facts, root), flag },
      }, { say: notifier(ctx) });
      const reason = blockReasonOf(answer);
      if (reason) showMessage(pi, ctx, ERROR_TYPE, reason);
      else if (textOf(answer.context)) shared.promptContext.set(facts.sessionId ?? "", answer.context);
    } catch {
      // lifecycle fails open
    }
  });

  pi.on("input", async (event, ctx) => {
    try {
      const facts = factsOf(ctx);
      const root = rootFor(facts);
      if (!event || !PROMPT_SOURCES.has(event.source) || root) return {};
      const answer = await askSts("input", facts.sessionId, facts.cwd, {
        event, ctx: ctxFacts(facts, root),
      }, { say: notifier(ctx) });
      const reason = blockReasonOf(answer);
      if (reason) {
        showMessage(pi, ctx, ERROR_TYPE, reason);
        return { handled: true };
      }
      if (textOf(answer.context)) shared.promptContext.set(facts.sessionId ?? "", answer.context);
    } catch {
      // prompts fail open
    }
    return {};
  });

  pi.on("before_agent_start", async (event, ctx) => {
    try {
      const facts = factsOf(ctx);
      const root = rootFor(facts);
      const key = facts.sessionId ?? "";
      const stored = shared.promptContext.get(key);
      if (stored) {
        shared.promptContext.delete(key);
        return contextMessage(stored);
      }
      const answer = await askSts("before_agent_start", facts.sessionId, facts.cwd, {
        event, ctx: ctxFacts(facts, root),
      }, { say: notifier(ctx) });
      const text = textOf(answer.context);
      return text ? contextMessage(text) : undefined;
    } catch {
      return undefined;
    }
  });

  pi.on("tool_call", async (event, ctx) => {
    const facts = factsOf(ctx);
    let root = null;
    let answer;
    try {
      root = rootFor(facts);
      answer = await askSts("tool_call", facts.sessionId, facts.cwd, {
        event, ctx: ctxFacts(facts, root),
      }, { say: notifier(ctx), toolCall: true, alsoArmedIf: root ? [root] : [] });
    } catch (error) {
      const why = `shim error: ${error && error.message}`;
      answer = armedMarkerExists([facts.sessionId, root]) ? { block: true, reason: blockedReason(why) } : {};
    }
    const reason = blockReasonOf(answer);
    if (reason) return { block: true, reason };
    const id = event && event.toolCallId;
    if (event && event.toolName === "task" && id) {
      shared.taskCalls.set(id, {
        sessionId: facts.sessionId, rootId: root, cwd: facts.cwd, background: false, live: new Set(), sawChild: false, done: false,
      });
    }
    const watch = textOf(answer.context);
    if (watch && id) shared.callContext.set(callKey(facts.sessionId, id), watch);
    return undefined;
  });

  pi.on("tool_result", async (event, ctx) => {
    try {
      const facts = factsOf(ctx);
      const root = rootFor(facts);
      const id = event && event.toolCallId;
      if (event && event.toolName === "task") {
        const call = shared.taskCalls.get(id);
        if (call) {
          const details = event.details && typeof event.details === "object" ? event.details : {};
          if (details.async) {
            call.background = true;
            if (call.live.size === 0 && call.sawChild) call.done = true;
          } else {
            call.done = true;
          }
        }
        await askSts("tool_result", facts.sessionId, facts.cwd, {
          event, ctx: ctxFacts(facts, root),
        }, { say: notifier(ctx) });
      }
      const key = callKey(facts.sessionId, id);
      const watch = shared.callContext.get(key);
      if (watch) {
        shared.callContext.delete(key);
        const content = Array.isArray(event.content) ? event.content : [];
        return { content: [...content, { type: "text", text: watch }] };
      }
    } catch {
      // results fail open
    }
    return undefined;
  });

  pi.on("tool_approval_resolved", async (event, ctx) => {
    try {
      if (!event || event.approved !== false || event.toolName !== "task") return;
      const facts = factsOf(ctx);
      const call = shared.taskCalls.get(event.toolCallId);
      if (!call || call.sessionId !== facts.sessionId) return;
      call.done = true;
      await askSts("tool_approval_resolved", facts.sessionId, facts.cwd, {
        event, ctx: ctxFacts(facts, rootFor(facts)),
      }, { say: notifier(ctx) });
    } catch {
      // lifecycle fails open
    }
  });
}
