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
// Starting sts.py, the wire protocol and the failure rule live in
// ../stop-that-shit-wire.mjs, shared by the JS shims; this file is Cline's own.

import { connect, blockReasonOf, textOf } from "../stop-that-shit-wire.mjs";

const INSTALLED_STS_PY = null; // sts install rewrites this line
const HOST = "cline";
const sts = connect(HOST, INSTALLED_STS_PY);

// ---------------------------------------------------------------------------
// Cline surface
// ---------------------------------------------------------------------------

// Cline runs plugins in a sandbox process and fails a hook that takes 3 s
// (the run ends with an error): sts.py gets less, so that the wire module's
// failure rule (block while armed, else go on) decides instead.
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
  const answer = await sts.ask("input", facts.sessionId, facts.cwd,
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
      const answer = await sts.ask("tool_call", facts.sessionId, facts.cwd, {
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
        const answer = await sts.ask("tool_result", facts.sessionId, facts.cwd,
          { event: { toolName: name, toolCallId: call.toolCallId ?? null }, ctx: ctxOf(facts) });
        addContext(facts.agentId, answer.context);
      }
      const appendContext = takeContext(facts.agentId);
      return appendContext ? { appendContext } : undefined;
    },
  },
};
