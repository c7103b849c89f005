// Stop That Shit -- Pi extension shim (@mariozechner/pi-coding-agent 0.73+).
//
// Thin bridge: every forwarded event becomes one JSON request for
// `python3 -I -S -c "...import sts..." pi`; the one JSON answer is applied here
// ({} / {"context"} / {"block": true, "reason"}).  All policy lives in sts.py;
// starting it, the wire protocol and the failure rule live in
// ../stop-that-shit-wire.mjs, shared by the JS shims.
// Plain ESM JavaScript; imports nothing from Pi (Pi's loader only resolves its
// own package names) and nothing from npm.
//
// Events used: input, before_agent_start (answered locally with the stored
// prompt context), tool_call, tool_result (subagent results and watch
// context), session_shutdown.

import { connect, blockReasonOf, textOf, notifier } from "../stop-that-shit-wire.mjs";

const INSTALLED_STS_PY = null; // sts install rewrites this line
const HOST = "pi";
const sts = connect(HOST, INSTALLED_STS_PY);

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
      const answer = await sts.ask("input", facts.sessionId, facts.cwd, {
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
      answer = await sts.ask("tool_call", facts.sessionId, facts.cwd, {
        event, ctx: { idle: facts.idle, hasUI: facts.hasUI },
      }, { say: notifier(ctx), toolCall: true });
    } catch (error) {
      answer = sts.shimError([facts.sessionId], error);
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
        await sts.ask("tool_result", facts.sessionId, facts.cwd, {
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
      await sts.ask("session_shutdown", facts.sessionId, facts.cwd, {
        event, ctx: { idle: facts.idle, hasUI: facts.hasUI },
      }, { say: notifier(ctx) });
      promptContext.delete(facts.sessionId ?? "");
    } catch {
      // lifecycle fails open
    }
  });
}
