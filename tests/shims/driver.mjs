// Test driver: load a real shim, stand in for its host, fire a scripted
// sequence of callbacks and print what the shim did as one JSON object.
//
//   node driver.mjs <scenario.json>      one scenario; its record on stdout
//   node driver.mjs --serve              one scenario per line of stdin:
//       {scenario, env, cwd} -> one line {record, stderr} or {error, stderr}
//
// scenario = {host: "opencode"|"pi"|"omp", shim: "<abs path>", init?: {...}, steps: [...]}
// OpenCode steps: {hook, input?, output?, event?}
// Pi/OMP steps:   {on, event, ctx, instance?} | {command, args, ctx, instance?}
//                 | {bus, data} | {flags: {...}} | {settle: true}
// ctx = {sessionId, sessionFile?, cwd, idle?, hasUI?}
//
// A shim handles bus events in the background (the host does not wait for
// them).  {settle: true} waits until every sts.py the shim started has ended
// and the shim has read its answer, so the next step comes after them; the
// record is printed after the same wait.  No fixed sleeps: a busy machine
// only makes the wait longer.
//
// --serve saves a Node start-up per scenario (tests/test_shims.py runs dozens).
// Each scenario still gets a shim of its own (the module imported afresh, so
// none of its state carries over), the environment and working folder it
// names, and what the shim writes to stderr; a scenario starts only when
// every sts.py of the one before has ended.
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { readFileSync } from "node:fs";

// Count the shim's children: spawn is wrapped before the shim is imported
// (syncBuiltinESMExports hands the wrapper to its `import { spawn }`).
let running = 0;
const realSpawn = childProcess.spawn;
childProcess.spawn = function countedSpawn(...args) {
  const child = realSpawn.apply(this, args);
  running += 1;
  let ended = false;
  const end = () => {
    if (!ended) {
      ended = true;
      running -= 1;
    }
  };
  child.once("close", end);
  child.once("error", end);
  return child;
};
syncBuiltinESMExports();

// The shim registers its own "close" listener after ours, and what it does
// next runs before the next timer: a poll that sees no child is past both.
async function settle() {
  const deadline = Date.now() + 30000;
  do {
    if (Date.now() > deadline) throw new Error(`settle: ${running} sts.py call(s) still running after 30 s`);
    await new Promise((r) => setTimeout(r, 5));
  } while (running > 0);
}

function describeError(error) {
  return error instanceof Error ? error.message : String(error);
}

async function timed(fn) {
  const start = Date.now();
  try {
    const returned = await fn();
    return { returned: returned === undefined ? null : returned, threw: null, ms: Date.now() - start };
  } catch (error) {
    return { returned: null, threw: describeError(error), ms: Date.now() - start };
  }
}

async function runOpenCode(scenario, mod, record) {
  const init = scenario.init || {};
  const client = {
    app: {
      log: async (arg) => {
        record.logs.push(arg);
        return { data: true };
      },
      agents: async () => {
        if (init.agentsFail) throw new Error("agents unavailable");
        return { data: init.agents || [] };
      },
    },
    session: {
      get: async ({ path }) => {
        if (init.sessionLookup === "throw") throw new Error("session lookup unavailable");
        if (init.sessionLookup === "hang") return new Promise(() => {});
        const info = (init.sessions || {})[path.id];
        if (!info) return { error: { name: "NotFound" }, data: undefined };
        return { data: { id: path.id, ...info } };
      },
    },
  };
  if (init.noClient) delete client.app;
  const hooks = await mod.StopThatShit({ client, directory: init.directory, worktree: init.directory });
  record.hooks = Object.keys(hooks).sort();
  for (const step of scenario.steps) {
    if (step.settle) {
      await settle();
      continue;
    }
    const input = step.input ?? {};
    const output = step.output ?? {};
    const fn = hooks[step.hook];
    let result;
    if (!fn) result = { returned: null, threw: null, missing: true };
    else if (step.hook === "event") result = await timed(() => fn({ event: step.event }));
    else result = await timed(() => fn(input, output));
    result.hook = step.hook;
    result.output = output;
    record.results.push(result);
  }
}

function fakeCtx(spec, record) {
  const c = spec || {};
  return {
    cwd: c.cwd,
    hasUI: Boolean(c.hasUI),
    isIdle: () => c.idle !== false,
    sessionManager: {
      getSessionId: () => c.sessionId,
      getSessionFile: () => c.sessionFile,
    },
    ui: {
      notify: (message, level) => record.notifies.push({ message, level, sessionId: c.sessionId }),
    },
  };
}

async function runPiLike(scenario, mod, record) {
  const bus = { listeners: new Map() };
  bus.on = (name, fn) => {
    if (!bus.listeners.has(name)) bus.listeners.set(name, []);
    bus.listeners.get(name).push(fn);
  };
  bus.emit = (name, data) => {
    for (const fn of bus.listeners.get(name) || []) fn(data);
  };
  const flagValues = {};
  const instances = [];
  function instance(n) {
    while (instances.length <= n) {
      const handlers = new Map();
      const commands = new Map();
      const pi = {
        on: (name, fn) => {
          if (!handlers.has(name)) handlers.set(name, []);
          handlers.get(name).push(fn);
        },
        registerFlag: (name, options) => {
          record.flags[name] = options;
        },
        getFlag: (name) => flagValues[name],
        registerCommand: (name, options) => {
          commands.set(name, options);
          record.commands.push(name);
        },
        sendMessage: (message, options) => {
          record.messages.push({ message, options });
        },
        events: bus,
      };
      mod.default(pi);
      instances.push({ pi, handlers, commands });
    }
    return instances[n];
  }
  instance(0);
  record.hooks = [...instances[0].handlers.keys()].sort();
  for (const step of scenario.steps) {
    if (step.settle) {
      await settle();
      continue;
    }
    if (step.flags) {
      Object.assign(flagValues, step.flags);
      continue;
    }
    if (step.bus) {
      bus.emit(step.bus, step.data);
      record.results.push({ bus: step.bus, returned: null, threw: null });
      continue;
    }
    const inst = instance(step.instance || 0);
    const ctx = fakeCtx(step.ctx, record);
    let result;
    if (step.command) {
      const command = inst.commands.get(step.command);
      result = command ? await timed(() => command.handler(step.args ?? "", ctx)) : { missing: true };
      result.command = step.command;
    } else {
      const list = inst.handlers.get(step.on) || [];
      result = await timed(async () => {
        let last;
        for (const fn of list) {
          const r = await fn(step.event, ctx);
          if (r !== undefined) last = r;
        }
        return last;
      });
      if (!list.length) result.missing = true;
      result.on = step.on;
    }
    record.results.push(result);
  }
}

let imported = 0;

async function runScenario(scenario) {
  // A query of its own: a new instance of the shim module, its state fresh.
  imported += 1;
  const mod = await import(`${pathToFileURL(scenario.shim).href}?scenario=${imported}`);
  const record = { results: [], messages: [], notifies: [], logs: [], flags: {}, commands: [], hooks: [] };
  if (scenario.host === "opencode") await runOpenCode(scenario, mod, record);
  else await runPiLike(scenario, mod, record);
  await settle(); // background work (bus events) finishes and shows its failures first
  return record;
}

async function serve() {
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  let failures = [];
  process.on("unhandledRejection", (error) => failures.push(`unhandled rejection: ${describeError(error)}`));
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (!line.trim()) continue;
    const { scenario, env, cwd } = JSON.parse(line);
    for (const key of Object.keys(process.env)) delete process.env[key];
    Object.assign(process.env, env);
    process.chdir(cwd);
    const said = [];
    const keep = (chunk, encoding, done) => {
      said.push(String(chunk));
      if (typeof encoding === "function") encoding();
      else if (typeof done === "function") done();
      return true;
    };
    process.stderr.write = keep;
    process.stdout.write = keep; // a shim never prints; nothing may break the replies
    failures = [];
    let reply;
    try {
      const record = await runScenario(scenario);
      reply = failures.length ? { error: failures.join("\n") } : { record };
    } catch (error) {
      reply = { error: error instanceof Error ? error.stack || error.message : String(error) };
    } finally {
      process.stderr.write = err;
      process.stdout.write = out;
    }
    reply.stderr = said.join("");
    out(JSON.stringify(reply) + "\n");
  }
}

if (process.argv[2] === "--serve") {
  await serve();
} else {
  const record = await runScenario(JSON.parse(readFileSync(process.argv[2], "utf8")));
  process.stdout.write(JSON.stringify(record) + "\n");
}
