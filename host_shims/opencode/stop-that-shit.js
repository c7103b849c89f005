// Stop That Shit -- OpenCode plugin shim (V1 plugin API, OpenCode 1.x).
//
// Thin bridge: every forwarded hook becomes one JSON request for
// `python3 -I -S -c "...import sts..." opencode`; the one JSON answer is applied
// here ({} / {"context"} / {"block": true, "reason"}).  All policy lives in sts.py;
// starting it, the wire protocol and the failure rule live in
// ../stop-that-shit-wire.mjs, shared by the JS shims.
// Plain ESM JavaScript, no imports from OpenCode or npm.
//
// Hooks used: chat.message (prompts), tool.execute.before (every tool call),
// tool.execute.after (task results only), event (session.created / .deleted /
// .idle only) and experimental.chat.system.transform (injects the stored
// prompt context; answered locally, never forwarded).

import { connect, blockReasonOf, textOf } from "../stop-that-shit-wire.mjs";

const INSTALLED_STS_PY = null; // sts install rewrites this line
const HOST = "opencode";
const sts = connect(HOST, INSTALLED_STS_PY);

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
        const answer = await sts.ask("chat.message", sessionID, cwdOf(sessionID), { input, output, ctx }, { say });
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
        answer = await sts.ask("tool.execute.before", sessionID, cwdOf(sessionID), {
          input, output, ctx,
        }, { say, toolCall: true, alsoArmedIf: parentSessionId ? [parentSessionId] : [] });
      } catch (error) {
        answer = sts.shimError([sessionID, parentSessionId], error);
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
          await sts.ask("tool.execute.after", sessionID, cwdOf(sessionID), {
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
        await sts.ask("event", sessionID, cwdOf(sessionID), { event, ctx }, { say });
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
