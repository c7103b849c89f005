// OpenCode probe plugin for the e2e harness: asks $STS_PY (the probe stand-in)
// before each tool call and throws to block it.  Speaks the shim wire protocol
// (host_shims/README.md).
import { spawnSync } from "node:child_process";

function ask(hook, sessionId, cwd, payload) {
  const r = spawnSync(process.env.STS_PYTHON || "python3", [process.env.STS_PY, "opencode"], {
    input: JSON.stringify({ v: 1, hook, sessionId, cwd, payload }),
    encoding: "utf8", timeout: 10000,
  });
  try { return JSON.parse(r.stdout || "{}"); } catch { return {}; }
}

export const StsE2EProbe = async ({ directory }) => ({
  "tool.execute.before": async (input, output) => {
    const answer = ask("tool.execute.before", input.sessionID, directory,
                       { input, output: { args: output.args } });
    if (answer.block) throw new Error(answer.reason);
  },
});
