// Stop That Shit -- Pi extension shim (@mariozechner/pi-coding-agent 0.73+).
//
// Thin bridge: every forwarded event becomes one JSON request for
// `python3 -I -S -c "...import sts..." pi`; the one JSON answer is applied here
// ({} / {"context"} / {"block": true, "reason"}).  All policy lives in sts.py.
// Plain ESM JavaScript; imports nothing from Pi (Pi's loader only resolves its
// own package names) and nothing from npm.
//
// Events used: input, before_agent_start (answered locally with the stored
// prompt context), tool_call, tool_result (subagent results and watch
// context), session_shutdown.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { accessSync, constants as fsConstants, existsSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const INSTALLED_STS_PY = null; // sts install rewrites this line
const HOST = "pi";

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
// Pi surface
// ---------------------------------------------------------------------------

const CONTEXT_TYPE = "stop-that-shit-context";
const ERROR_TYPE = "stop-that-shit-error";

const promptContext = new Map(); // sessionId -> text for the next before_agent_start
const callContext = new Map(); // sessionId + toolCallId -> watch text for that tool_result

function factsOf(ctx) {
  let sessionId = null;
  let idle = null;
  try {
    sessionId = ctx.sessionManager.getSessionId() ?? null;
  } catch {
    sessionId = null;
  }
  try {
    idle = typeof ctx.isIdle === "function" ? Boolean(ctx.isIdle()) : null;
  } catch {
    idle = null;
  }
  const cwd = ctx && typeof ctx.cwd === "string" && ctx.cwd ? ctx.cwd : process.cwd();
  return { sessionId, cwd, idle, hasUI: Boolean(ctx && ctx.hasUI) };
}

function callKey(facts, toolCallId) {
  return `${facts.sessionId ?? ""}\u0000${toolCallId ?? ""}`;
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
function showError(pi, ctx, text) {
  try {
    if (pi && typeof pi.sendMessage === "function") {
      const sent = pi.sendMessage({ customType: ERROR_TYPE, content: text, display: true }, { triggerTurn: false });
      if (sent && typeof sent.catch === "function") sent.catch(() => notifier(ctx)(text, "error"));
      return;
    }
  } catch {
    // fall through
  }
  notifier(ctx)(text, "error");
}

function contextBlock(text) {
  return { type: "text", text: `<stop_that_shit_context>\n${text}\n</stop_that_shit_context>` };
}

export default function stopThatShit(pi) {
  pi.on("input", async (event, ctx) => {
    try {
      const facts = factsOf(ctx);
      const answer = await askSts("input", facts.sessionId, facts.cwd, {
        event, ctx: { idle: facts.idle, hasUI: facts.hasUI },
      }, { say: notifier(ctx) });
      const reason = blockReasonOf(answer);
      if (reason) {
        showError(pi, ctx, reason);
        return { action: "handled" };
      }
      const text = textOf(answer.context);
      if (text) promptContext.set(facts.sessionId ?? "", text);
    } catch {
      // prompts fail open
    }
    return { action: "continue" };
  });

  pi.on("before_agent_start", async (_event, ctx) => {
    const key = factsOf(ctx).sessionId ?? "";
    const text = promptContext.get(key);
    if (!text) return undefined;
    promptContext.delete(key);
    return { message: { customType: CONTEXT_TYPE, content: text, display: false } };
  });

  pi.on("tool_call", async (event, ctx) => {
    const facts = factsOf(ctx);
    let answer;
    try {
      answer = await askSts("tool_call", facts.sessionId, facts.cwd, {
        event, ctx: { idle: facts.idle, hasUI: facts.hasUI },
      }, { say: notifier(ctx), toolCall: true });
    } catch (error) {
      const why = `shim error: ${error && error.message}`;
      answer = armedMarkerExists([facts.sessionId]) ? { block: true, reason: blockedReason(why) } : {};
    }
    const reason = blockReasonOf(answer);
    if (reason) return { block: true, reason };
    const watch = textOf(answer.context);
    if (watch && event && event.toolCallId) callContext.set(callKey(facts, event.toolCallId), watch);
    return undefined;
  });

  pi.on("tool_result", async (event, ctx) => {
    try {
      const facts = factsOf(ctx);
      if (event && event.toolName === "subagent") {
        await askSts("tool_result", facts.sessionId, facts.cwd, {
          event, ctx: { idle: facts.idle, hasUI: facts.hasUI },
        }, { say: notifier(ctx) });
      }
      const key = callKey(facts, event && event.toolCallId);
      const watch = callContext.get(key);
      if (watch) {
        callContext.delete(key);
        const content = Array.isArray(event.content) ? event.content : [];
        return { content: [...content, contextBlock(watch)] };
      }
    } catch {
      // results fail open
    }
    return undefined;
  });

  pi.on("session_shutdown", async (event, ctx) => {
    try {
      const facts = factsOf(ctx);
      await askSts("session_shutdown", facts.sessionId, facts.cwd, {
        event, ctx: { idle: facts.idle, hasUI: facts.hasUI },
      }, { say: notifier(ctx) });
      promptContext.delete(facts.sessionId ?? "");
    } catch {
      // lifecycle fails open
    }
  });
}
