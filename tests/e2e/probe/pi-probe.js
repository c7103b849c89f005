// Pi / Oh My Pi probe extension for the e2e harness: asks $STS_PY (the probe
// stand-in) on every tool_call and blocks it when told to (the shim answer
// {"block": true, "reason"}).
import { spawnSync } from "node:child_process";

const HOST = process.env.STS_E2E_HOST || "pi";

function ask(hook, cwd, payload) {
  const r = spawnSync(process.env.STS_PYTHON || "python3", [process.env.STS_PY, HOST], {
    input: JSON.stringify({ v: 1, hook, sessionId: "probe", cwd, payload }),
    encoding: "utf8", timeout: 10000,
  });
  try { return JSON.parse(r.stdout || "{}"); } catch { return {}; }
}

export default function (pi) {
  pi.on("tool_call", async (event, ctx) => {
    const answer = ask("tool_call", ctx && ctx.cwd, { event });
    if (answer.block) return { block: true, reason: answer.reason };
    return undefined;
  });
}
