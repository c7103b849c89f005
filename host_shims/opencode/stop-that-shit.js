// Stop That Shit -- OpenCode plugin shim (V1 plugin API, OpenCode 1.x).
//
// Thin bridge: every forwarded hook becomes one JSON request for
// `python3 -I -S -c "...import sts..." opencode`; the one JSON answer is applied
// here ({} / {"context"} / {"block": true, "reason"}).  All policy lives in sts.py.
// Plain ESM JavaScript, no imports from OpenCode or npm.
//
// Hooks used: chat.message (prompts), tool.execute.before (every tool call),
// tool.execute.after (task results only), event (session.created / .deleted /
// .idle only) and experimental.chat.system.transform (injects the stored
// prompt context; answered locally, never forwarded).

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { accessSync, constants as fsConstants, existsSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const INSTALLED_STS_PY = null; // sts install rewrites this line
const HOST = "opencode";

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
// OpenCode surface
// ---------------------------------------------------------------------------

const SERVICE = "stop-that-shit";
const FORWARDED_EVENTS = new Set(["session.created", "session.deleted", "session.idle"]);
const MAX_ANCESTRY = 32;
const SDK_TIMEOUT_MS = 2000;

// SDK calls answer {data, error, ...}; accept a bare value too.
function sdkData(result) {
  if (result && typeof result === "object" && "data" in result) return result.data;
  return result;
}

function settleWithin(promise, ms) {
  let timer = null;
  const late = new Promise((done) => {
    timer = setTimeout(() => done(undefined), ms);
  });
  return Promise.race([Promise.resolve(promise), late]).finally(() => clearTimeout(timer));
}

// OpenCode 1.18 agents carry `permission` as a rule list; the last rule for
// `edit` or `*` with pattern `*` decides.  The older object form is read too.
function agentCanEdit(agent) {
  const permission = agent ? agent.permission : undefined;
  if (Array.isArray(permission)) {
    let editable = true;
    for (const rule of permission) {
      if (rule && (rule.permission === "edit" || rule.permission === "*") && rule.pattern === "*") {
        editable = rule.action !== "deny";
      }
    }
    return editable;
  }
  if (permission && typeof permission === "object") {
    const edit = permission.edit;
    if (typeof edit === "string") return edit !== "deny";
    if (edit && typeof edit === "object" && typeof edit["*"] === "string") return edit["*"] !== "deny";
  }
  return true;
}

export const StopThatShit = async ({ client, directory } = {}) => {
  const promptContext = new Map(); // sessionID -> text for the system prompt
  const callContext = new Map(); // callID -> watch text for the tool output
  const parentOf = new Map(); // sessionID -> parentID, or null for a root
  const directoryOf = new Map(); // sessionID -> session directory
  let agents = null; // cached client.app.agents() list

  const say = (text) => {
    const fallback = () => {
      try {
        process.stderr.write(text + "\n");
      } catch {
        // nowhere left to say it
      }
    };
    try {
      if (client && client.app && typeof client.app.log === "function") {
        // `body` for the 1.x SDK; the flat keys for the newer client shape.
        const entry = { service: SERVICE, level: "warn", message: text };
        const sent = client.app.log({ body: entry, ...entry });
        if (sent && typeof sent.catch === "function") sent.catch(fallback);
        return;
      }
    } catch {
      // fall through
    }
    fallback();
  };

  const cwdOf = (sessionID) => directoryOf.get(sessionID) || directory || process.cwd();

  // null: a root; undefined: the lookup failed, threw or timed out, so the
  // session may be a child whose parent we cannot name, and must never be
  // taken for a root (a root's prompts set the contract).
  async function lookupParent(sessionID) {
    if (parentOf.has(sessionID)) return parentOf.get(sessionID);
    try {
      if (client && client.session && typeof client.session.get === "function") {
        const info = sdkData(await settleWithin(client.session.get({ path: { id: sessionID }, sessionID }), SDK_TIMEOUT_MS));
        if (info && typeof info === "object" && info.id) {
          const parent = typeof info.parentID === "string" && info.parentID ? info.parentID : null;
          parentOf.set(sessionID, parent);
          if (typeof info.directory === "string" && info.directory) directoryOf.set(sessionID, info.directory);
          return parent;
        }
      }
    } catch {
      // unknown ancestry, reported below
    }
    return undefined;
  }

  // ctx facts for sts.py: the top known ancestor (null when none), and
  // ancestryUnknown when the walk stopped at a session whose parent could not
  // be looked up.  A null parent alone must not read as "root": sts.py gives
  // prompt authority only to a session known to be a root.
  async function ancestryOf(sessionID) {
    if (typeof sessionID !== "string" || !sessionID) return { parentSessionId: null };
    let current = sessionID;
    let unknown = false;
    const seen = new Set([current]);
    for (let level = 0; level < MAX_ANCESTRY; level++) {
      const parent = await lookupParent(current);
      if (parent === undefined) unknown = true;
      if (!parent || seen.has(parent)) break;
      seen.add(parent);
      current = parent;
    }
    const ctx = { parentSessionId: current === sessionID ? null : current };
    if (unknown) ctx.ancestryUnknown = true;
    return ctx;
  }

  async function editableAgent(name) {
    if (typeof name !== "string" || !name) return null;
    try {
      if (!agents && client && client.app && typeof client.app.agents === "function") {
        const list = sdkData(await settleWithin(client.app.agents(), SDK_TIMEOUT_MS));
        if (Array.isArray(list)) agents = list;
      }
    } catch {
      // lookup failure: unknown
    }
    const agent = Array.isArray(agents) ? agents.find((a) => a && a.name === name) : undefined;
    return agent ? agentCanEdit(agent) : null;
  }

  return {
    "chat.message": async (input, output) => {
      try {
        const sessionID = (input && input.sessionID) || (output && output.message && output.message.sessionID);
        const agentName = (output && output.message && output.message.agent) || (input && input.agent);
        const ctx = { ...(await ancestryOf(sessionID)), agentCanEdit: await editableAgent(agentName) };
        const answer = await askSts("chat.message", sessionID, cwdOf(sessionID), { input, output, ctx }, { say });
        // A prompt cannot be rejected here: a block reason is delivered as context.
        const text = textOf(answer.context) || blockReasonOf(answer);
        if (text && sessionID) promptContext.set(sessionID, text);
      } catch (error) {
        say(`Stop That Shit: chat.message shim error (${error && error.message}); continuing without the guard.`);
      }
    },

    "tool.execute.before": async (input, output) => {
      const sessionID = input && input.sessionID;
      let answer;
      let parentSessionId = null;
      try {
        const ctx = await ancestryOf(sessionID);
        parentSessionId = ctx.parentSessionId;
        answer = await askSts("tool.execute.before", sessionID, cwdOf(sessionID), {
          input, output, ctx,
        }, { say, toolCall: true, alsoArmedIf: parentSessionId ? [parentSessionId] : [] });
      } catch (error) {
        const why = `shim error: ${error && error.message}`;
        answer = armedMarkerExists([sessionID, parentSessionId]) ? { block: true, reason: blockedReason(why) } : {};
      }
      const reason = blockReasonOf(answer);
      if (reason) throw new Error(reason);
      const watch = textOf(answer.context);
      if (watch && input && input.callID) callContext.set(input.callID, watch);
    },

    "tool.execute.after": async (input, output) => {
      try {
        const sessionID = input && input.sessionID;
        if (input && typeof input.tool === "string" && input.tool.toLowerCase() === "task") {
          await askSts("tool.execute.after", sessionID, cwdOf(sessionID), {
            input, output, ctx: await ancestryOf(sessionID),
          }, { say });
        }
        const callID = input && input.callID;
        const watch = callID ? callContext.get(callID) : undefined;
        if (watch) {
          callContext.delete(callID);
          if (output && typeof output.output === "string") {
            output.output += `\n\n<stop_that_shit_context>\n${watch}\n</stop_that_shit_context>`;
          }
        }
      } catch {
        // results fail open
      }
    },

    event: async ({ event } = {}) => {
      try {
        if (!event || !FORWARDED_EVENTS.has(event.type)) return;
        const props = event.properties || {};
        const info = props.info && typeof props.info === "object" ? props.info : {};
        const sessionID = info.id || props.sessionID;
        if (typeof sessionID !== "string" || !sessionID) return;
        if (event.type === "session.created") {
          parentOf.set(sessionID, typeof info.parentID === "string" && info.parentID ? info.parentID : null);
          if (typeof info.directory === "string" && info.directory) directoryOf.set(sessionID, info.directory);
        }
        const ctx = await ancestryOf(sessionID);
        // Only a child's idle is a fact (subagent.stop); a root idles every turn.
        if (event.type === "session.idle" && !ctx.parentSessionId) return;
        await askSts("event", sessionID, cwdOf(sessionID), { event, ctx }, { say });
        if (event.type === "session.deleted") promptContext.delete(sessionID);
      } catch {
        // lifecycle fails open
      }
    },

    "experimental.chat.system.transform": async (input, output) => {
      const sessionID = input && input.sessionID;
      const text = sessionID ? promptContext.get(sessionID) : undefined;
      if (text && output && Array.isArray(output.system)) output.system.push(text);
    },
  };
};

// No default export: OpenCode calls every exported function as a plugin.
