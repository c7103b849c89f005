// Stop That Shit -- the wire module shared by the JS shims (OpenCode, Pi, Oh My Pi).
//
// One copy of what every JS shim does the same way: find sts.py, start it once
// per hook, speak the wire protocol (one JSON request on stdin; `{}`,
// `{"context"}` or `{"block", "reason"}` back) and apply the failure rule: when
// sts.py cannot answer, a tool call is blocked if and only if the session is
// armed; anything else goes ahead.  Either way the failure is reported once.
//
// It sits one folder above the shims, both here (host_shims/) and where
// `sts install` copies it (the host's config folder, whose plugin or extension
// folder holds the shim), so each shim imports it as "../stop-that-shit-wire.mjs".
// Hosts load only the files in their plugin or extension folders, so they never
// take this module for a plugin of its own.  Node built-ins only.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { accessSync, constants as fsConstants, existsSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const WIRE_DIR = dirname(fileURLToPath(import.meta.url));
const TOOL_HOOKS = new Set(["tool.execute.before", "tool.execute.after", "tool_call", "tool_result"]);

// $STS_PY, else the path `sts install` pinned in the shim, else the sts.py of
// the checkout this module sits in (host_shims/..).
function stsPyPath(installedStsPy) {
  return process.env.STS_PY || installedStsPy || resolve(WIRE_DIR, "..", "sts.py");
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
function stsCommand(host, installedStsPy) {
  const python = process.env.STS_PYTHON || "python3";
  const file = resolve(stsPyPath(installedStsPy));
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
  args.push(host);
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

// Resolves to {answer} or {kind, failure}; never rejects.
function runSts(command, hook, request) {
  return new Promise((settle) => {
    const { python, args } = command;
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

function stderrLine(text) {
  try {
    process.stderr.write(text + "\n");
  } catch {
    // nowhere left to say it
  }
}

// The bridge for one loaded shim: `host` is the argument sts.py gets, and
// `installedStsPy` the shim's pinned path (null when it was not installed).
//   ask(hook, sessionId, cwd, payload, {say, toolCall, alsoArmedIf}) -> answer
//     One round trip.  A failure becomes an answer: a tool call (toolCall)
//     blocks iff an armed marker exists for the session or one of
//     alsoArmedIf (its known root); anything else fails open.  `say` shows
//     the failure in the host, once per kind of failure.
//   shimError(ids, error) -> answer
//     The same rule for an error thrown in the shim around a tool call.
export function connect(host, installedStsPy) {
  const told = new Set();
  async function ask(hook, sessionId, cwd, payload, options) {
    const opts = options || {};
    const request = encodeRequest(hook, sessionId, cwd, payload);
    const result = await runSts(stsCommand(host, installedStsPy), hook, request);
    if (result.answer) return result.answer;
    const blocking = Boolean(opts.toolCall) && armedMarkerExists([sessionId, ...(opts.alsoArmedIf || [])]);
    const kind = `${result.kind}|${blocking}`;
    if (!told.has(kind)) {
      told.add(kind);
      const tail = blocking
        ? "the task contract is armed, so tool calls are blocked until it works again"
        : "continuing without the guard for this event";
      const text = `Stop That Shit: no answer from sts.py for ${hook} (${result.failure}); ${tail}.`;
      try {
        if (opts.say) opts.say(text);
        else stderrLine(text);
      } catch {
        stderrLine(text);
      }
    }
    return blocking ? { block: true, reason: blockedReason(result.failure) } : {};
  }
  function shimError(ids, error) {
    const why = `shim error: ${error && error.message}`;
    return armedMarkerExists(ids) ? { block: true, reason: blockedReason(why) } : {};
  }
  return { ask, shimError };
}

export function textOf(value) {
  return typeof value === "string" && value !== "" ? value : null;
}

export function blockReasonOf(answer) {
  if (!answer || answer.block !== true) return null;
  return textOf(answer.reason) || "Stop That Shit blocked this call.";
}

// Pi and Oh My Pi: a `say` that uses the host's notice line when it has a UI,
// else stderr.
export function notifier(ctx) {
  return (text, level) => {
    try {
      if (ctx && ctx.hasUI && ctx.ui && typeof ctx.ui.notify === "function") {
        ctx.ui.notify(text, level || "warning");
        return;
      }
    } catch {
      // fall through to stderr
    }
    stderrLine(text);
  };
}
