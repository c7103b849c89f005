// Stop That Shit -- Oh My Pi extension shim (@oh-my-pi/pi-coding-agent 18.x).
//
// Thin bridge: every forwarded event becomes one JSON request for
// `python3 -I -S -c "...import sts..." omp`; the one JSON answer is applied here
// ({} / {"context"} / {"block": true, "reason"}).  All policy lives in sts.py;
// starting it, the wire protocol and the failure rule live in
// ../stop-that-shit-wire.mjs, shared by the JS shims.
// Plain ESM JavaScript; imports nothing from Oh My Pi (its loader only resolves its
// own package names) and nothing from npm.
//
// Surfaces used: the --sts-contract flag (read on session_start), the /sts
// command, input (interactive/rpc roots), before_agent_start, tool_call,
// tool_result (task results and watch context), tool_approval_resolved and
// the task:subagent:lifecycle bus event.  Subagents run in this process with
// their own sessions, so session facts live at module level (section 7.4).

import { connect, blockReasonOf, textOf, notifier } from "../stop-that-shit-wire.mjs";

const INSTALLED_STS_PY = null; // sts install rewrites this line
const HOST = "omp";
const sts = connect(HOST, INSTALLED_STS_PY);

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
    await sts.ask(LIFECYCLE, call.sessionId, call.cwd, {
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
          const answer = await sts.ask("command:sts", facts.sessionId, facts.cwd, {
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
      const answer = await sts.ask("session_start", facts.sessionId, facts.cwd, {
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
      const answer = await sts.ask("input", facts.sessionId, facts.cwd, {
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
      const answer = await sts.ask("before_agent_start", facts.sessionId, facts.cwd, {
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
      answer = await sts.ask("tool_call", facts.sessionId, facts.cwd, {
        event, ctx: ctxFacts(facts, root),
      }, { say: notifier(ctx), toolCall: true, alsoArmedIf: root ? [root] : [] });
    } catch (error) {
      answer = sts.shimError([facts.sessionId, root], error);
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
        await sts.ask("tool_result", facts.sessionId, facts.cwd, {
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
      await sts.ask("tool_approval_resolved", facts.sessionId, facts.cwd, {
        event, ctx: ctxFacts(facts, rootFor(facts)),
      }, { say: notifier(ctx) });
    } catch {
      // lifecycle fails open
    }
  });
}
