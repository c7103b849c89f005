"""How each real host is configured and started for one e2e run.

Every host gets the same treatment: a fresh HOME and XDG folders under the
run folder, a provider that points at the fake model on 127.0.0.1:<port>,
sts wired in the host's own way, and quiet/offline settings.  `configure()`
writes the files and returns the command line and environment.

Three wirings:
  "install" the real guard, wired by `python3 sts.py install <host>` (Codex
            with `--trust`) after the provider config is written: the path a
            user takes, so the e2e run proves the installer too;
  "direct"  the real guard, wired here by hand (used while `sts.py install`
            is not available): the import-form hook command for
            Codex and Claude Code, the shims from host_shims/ for the others;
  "probe"   tests/e2e/probe/: a stand-in that denies calls mentioning
            `e2e-deny`, used to prove the harness itself on every host.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys

import install

HERE = os.path.dirname(os.path.abspath(__file__))
# STS_E2E_REPO runs the suite against sts.py of another checkout.
REPO = os.path.realpath(os.environ.get("STS_E2E_REPO")
                        or os.path.dirname(os.path.dirname(HERE)))
PROBE = os.path.join(HERE, "probe")
PROBE_STS = os.path.join(PROBE, "probe_sts.py")
# STS_E2E_SHIMS lets a developer try shims from another checkout before they merge.
SHIMS = os.environ.get("STS_E2E_SHIMS") or os.path.join(REPO, "host_shims")
MODEL = "fake-model"


class WiringError(RuntimeError):
    """A file the wiring needs (shim, plugin) is missing: the case fails."""


class Run:
    """Paths and facts of one run, shared by the config writers."""

    def __init__(self, root: str, host: str, wiring: str, port: int, prompt: str,
                 contract: str = ""):
        self.root = root
        self.host = host
        self.wiring = wiring
        self.port = port
        self.prompt = prompt      # the whole user prompt, directive included
        self.contract = contract  # the directive arguments alone (OMP's --sts-contract)
        self.home = os.path.join(root, "home")
        self.work = os.path.join(root, "work")
        self.sts_home = os.path.join(root, "sts-home")
        self.tmp = os.path.join(root, "tmp")
        self.xdg = {name: os.path.join(root, "xdg", name)
                    for name in ("config", "data", "cache", "state")}
        for d in [self.home, self.work, self.tmp] + list(self.xdg.values()):
            os.makedirs(d, exist_ok=True)

    @property
    def base_url(self) -> str:
        return "http://127.0.0.1:%d/v1" % self.port


def sts_hook_command(host: str) -> str:
    """The import-form hook command, with the path quoted for a Python string."""
    code = "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % REPO
    return "python3 -I -S -c %s %s" % (shlex.quote(code), host)


def hook_command(run: Run) -> str:
    if run.wiring == "probe":
        return "python3 %s %s" % (shlex.quote(PROBE_STS), run.host)
    return sts_hook_command(run.host)


def base_env(run: Run) -> dict:
    """A small, explicit environment: nothing of the caller's leaks in but PATH and locale."""
    path = os.pathsep.join([install.bin_dir(run.host), os.path.dirname(sys.executable),
                            os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")])
    env = {"PATH": path, "HOME": run.home, "USER": "e2e", "LOGNAME": "e2e",
           "LANG": os.environ.get("LANG", "C.UTF-8"), "TERM": "dumb", "NO_COLOR": "1",
           "TMPDIR": run.tmp, "STS_HOME": run.sts_home, "CI": "1",
           "XDG_CONFIG_HOME": run.xdg["config"], "XDG_DATA_HOME": run.xdg["data"],
           "XDG_CACHE_HOME": run.xdg["cache"], "XDG_STATE_HOME": run.xdg["state"]}
    for key in ("LC_ALL", "TZ", "SSL_CERT_FILE"):
        if key in os.environ:
            env[key] = os.environ[key]
    # What the shims need to find the guard: the interpreter and sts.py.
    env["STS_PYTHON"] = "python3"
    env["STS_PY"] = PROBE_STS if run.wiring == "probe" else os.path.join(REPO, "sts.py")
    env["STS_E2E_HOST"] = run.host
    return env


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def _shim(relpath: str) -> str:
    path = os.path.join(SHIMS, relpath)
    if not os.path.exists(path):
        raise WiringError("sts shim missing: host_shims/%s (not on this branch yet?)" % relpath)
    return path


# ---------------------------------------------------------------------------
# Codex CLI
# ---------------------------------------------------------------------------

CODEX_DELEGATION_MATCHER = ("^(spawn_agent|wait_agent|Agent|multi_agent_v1wait_agent|"
                            "collaborationspawn_agent|collaborationwait_agent)$")


def configure_codex(run: Run):
    codex_home = os.path.join(run.home, ".codex")
    cmd = hook_command(run)

    def group(timeout, matcher=None):
        g = {"hooks": [{"type": "command", "command": cmd, "timeout": timeout}]}
        if matcher is not None:
            g["matcher"] = matcher
        return [g]

    hooks = {"SessionStart": group(5), "UserPromptSubmit": group(5),
             "PreToolUse": group(10, ".*"), "PostToolUse": group(5, CODEX_DELEGATION_MATCHER)}
    if run.wiring != "install":
        _write(os.path.join(codex_home, "hooks.json"), json.dumps({"hooks": hooks}, indent=2))
    _write(os.path.join(codex_home, "config.toml"), """\
model = "gpt-5.5"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake model on loopback"
base_url = "%s"
env_key = "FAKE_MODEL_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
hooks = true
plugins = false
remote_plugin = false
apps = false
in_app_updates = false
""" % run.base_url)
    env = base_env(run)
    env.update(CODEX_HOME=codex_home, FAKE_MODEL_KEY="sk-e2e")
    argv = [install.binary("codex"), "exec", "--skip-git-repo-check", "--json", "-C", run.work]
    if run.wiring != "install":
        # `codex exec` runs only trusted hooks and skips untrusted ones without a
        # word.  Trust is given in the TUI or persisted through `codex app-server`
        # (`sts.py install codex --trust` does that); hand-written hooks have
        # neither, so this run passes the documented bypass flag.
        argv.append("--dangerously-bypass-hook-trust")
    argv.append(run.prompt)
    return argv, env


# ---------------------------------------------------------------------------
# Claude Code
# ---------------------------------------------------------------------------

def configure_claude(run: Run):
    cfg = os.path.join(run.home, ".claude")
    cmd = hook_command(run)

    def group(timeout, matcher=None):
        g = {"hooks": [{"type": "command", "command": cmd, "timeout": timeout}]}
        if matcher is not None:
            g["matcher"] = matcher
        return [g]

    hooks = {"SessionStart": group(5), "UserPromptSubmit": group(5),
             "PreToolUse": group(10, "*"), "PostToolUse": group(5, "*"),
             "PostToolUseFailure": group(5, "*"), "PermissionDenied": group(5, "*"),
             "SubagentStart": group(5), "SessionEnd": group(5)}
    if run.wiring != "install":
        _write(os.path.join(cfg, "settings.json"), json.dumps({"hooks": hooks}, indent=2))
    env = base_env(run)
    env.update(CLAUDE_CONFIG_DIR=cfg, ANTHROPIC_BASE_URL="http://127.0.0.1:%d" % run.port,
               ANTHROPIC_API_KEY="sk-e2e", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1", DISABLE_ERROR_REPORTING="1")
    # Claude's own permission system must not be what stops a write: allow the
    # tools the scenarios use, so a missing file can only mean the hook denied it.
    argv = [install.binary("claude"), "-p", run.prompt, "--output-format", "stream-json",
            "--verbose", "--model", "claude-sonnet-4-5",
            "--allowedTools", "Bash", "Write", "Edit", "Read", "Agent"]
    return argv, env


# ---------------------------------------------------------------------------
# OpenCode
# ---------------------------------------------------------------------------

def configure_opencode(run: Run):
    conf = os.path.join(run.xdg["config"], "opencode")
    plugin_dir = os.path.join(conf, "plugin")
    os.makedirs(plugin_dir, exist_ok=True)
    if run.wiring == "probe":
        shutil.copy(os.path.join(PROBE, "opencode-probe.js"), plugin_dir)
    elif run.wiring == "direct":
        shutil.copy(_shim("opencode/stop-that-shit.js"), plugin_dir)
        shutil.copy(_shim("stop-that-shit-wire.mjs"), conf)  # imported from the folder above
    # OpenCode npm-installs @opencode-ai/plugin into each config folder before it
    # loads plugins (a minute of retries offline) unless this is already there.
    os.makedirs(os.path.join(conf, "node_modules"), exist_ok=True)
    deps = {"@opencode-ai/plugin": install.PINS["opencode"][2]}
    _write(os.path.join(conf, "package.json"), json.dumps({"dependencies": deps}))
    _write(os.path.join(conf, "package-lock.json"), json.dumps(
        {"lockfileVersion": 3, "packages": {"": {"dependencies": deps}}}))
    _write(os.path.join(conf, "opencode.json"), json.dumps({
        "$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
        "model": "fake/" + MODEL, "small_model": "fake/" + MODEL,
        "permission": {"external_directory": "allow"},
        "provider": {"fake": {
            "npm": "@ai-sdk/openai-compatible", "name": "Fake",
            "options": {"baseURL": run.base_url, "apiKey": "sk-e2e"},
            "models": {MODEL: {"name": "Fake model", "tool_call": True,
                               "limit": {"context": 128000, "output": 4096}}}}}}, indent=2))
    env = base_env(run)
    for flag in ("MODELS_FETCH", "AUTOUPDATE", "LSP_DOWNLOAD", "DEFAULT_PLUGINS", "SHARE",
                 "CLAUDE_CODE"):
        env["OPENCODE_DISABLE_" + flag] = "1"
    argv = [install.binary("opencode"), "run", "--print-logs", "--log-level", "INFO",
            "-m", "fake/" + MODEL, run.prompt]
    return argv, env


# ---------------------------------------------------------------------------
# Pi and Oh My Pi
# ---------------------------------------------------------------------------

def _pi_extension(run: Run) -> str:
    if run.wiring == "probe":
        return os.path.join(PROBE, "pi-probe.js")
    return _shim("%s/stop-that-shit.js" % run.host)


def configure_pi(run: Run):
    agent = os.path.join(run.home, ".pi", "agent")
    _write(os.path.join(agent, "models.json"), json.dumps({"providers": {"fake": {
        "baseUrl": run.base_url, "api": "openai-completions", "apiKey": "sk-e2e",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": MODEL, "reasoning": False, "contextWindow": 128000,
                    "maxTokens": 4096}]}}}, indent=2))
    env = base_env(run)
    env["PI_OFFLINE"] = "1"
    argv = [install.binary("pi"), "-p", "--no-session", "--provider", "fake", "--model", MODEL]
    if run.wiring != "install":  # installed: found in ~/.pi/agent/extensions/
        argv += ["-e", _pi_extension(run)]
    argv.append(run.prompt)
    return argv, env


def configure_omp(run: Run):
    agent = os.path.join(run.home, ".omp", "agent")
    _write(os.path.join(agent, "models.yml"), """\
providers:
  fake:
    baseUrl: %s
    api: openai-completions
    apiKey: sk-e2e
    models:
      - id: %s
        reasoning: false
        contextWindow: 128000
        maxTokens: 4096
""" % (run.base_url, MODEL))
    # `task` blocks until its subagents end (the default runs them as background
    # jobs, which `omp -p` abandons when it exits).
    _write(os.path.join(agent, "config.yml"), "async:\n  enabled: false\n")
    env = base_env(run)
    env["PI_OFFLINE"] = "1"
    argv = [install.binary("omp"), "-p", "--no-session", "--no-title", "--no-lsp",
            "--model", "fake/" + MODEL]
    if run.wiring != "install":  # installed: found in ~/.omp/agent/extensions/
        argv += ["-e", _pi_extension(run)]
    if run.wiring != "probe" and run.contract:
        # `omp -p` emits no input event: the shim's flag is the only way to arm it.
        argv += ["--sts-contract", run.contract]
    argv.append(run.prompt)
    return argv, env


# ---------------------------------------------------------------------------
# Hermes Agent
# ---------------------------------------------------------------------------

def configure_hermes(run: Run):
    hermes_home = os.path.join(run.root, "hermes-home")
    plugins = os.path.join(hermes_home, "plugins")
    os.makedirs(plugins, exist_ok=True)
    if run.wiring == "probe":
        name = "sts-e2e-probe"
        shutil.copytree(os.path.join(PROBE, "hermes", name), os.path.join(plugins, name))
    else:
        name = "stop-that-shit"
        if run.wiring == "direct":
            shutil.copytree(_shim("hermes/stop-that-shit"), os.path.join(plugins, name))
    enabled = "plugins:\n  enabled: [%s]\n" % name if run.wiring != "install" else ""
    _write(os.path.join(hermes_home, "config.yaml"), """\
model:
  provider: custom
  base_url: %s
  default: %s
  api_key: sk-e2e
  context_length: 128000
%ssecurity:
  tirith_enabled: false
  allow_lazy_installs: false
""" % (run.base_url, MODEL, enabled))
    env = base_env(run)
    env.update(HERMES_HOME=hermes_home, HERMES_DISABLE_LAZY_INSTALLS="1", TIRITH_ENABLED="false")
    argv = [install.binary("hermes"), "chat", "-Q", "--yolo", "-q", run.prompt]
    return argv, env


# ---------------------------------------------------------------------------
# Gemini CLI, Copilot CLI, Qwen Code
# ---------------------------------------------------------------------------

def _settings_hooks(run: Run, host: str, events):
    """Hand-written hooks for settings.json (direct and probe wiring)."""
    cmd = hook_command(run)
    hooks = {}
    for event, matcher, timeout in events:
        group = {"hooks": [{"type": "command", "command": cmd, "timeout": timeout}]}
        if matcher is not None:
            group["matcher"] = matcher
        hooks[event] = [group]
    return hooks


GEMINI_EVENTS = (("SessionStart", None, 5000), ("BeforeAgent", None, 5000),
                 ("BeforeTool", ".*", 10000),
                 ("AfterTool", "^(invoke_agent|codebase_investigator|cli_help|generalist|"
                               "browser_agent)$", 10000),
                 ("SessionEnd", None, 5000))
QWEN_EVENTS = (("SessionStart", None, 5), ("UserPromptSubmit", None, 5),
               ("PreToolUse", ".*", 10), ("PostToolUse", "^agent$", 10),
               ("PostToolUseFailure", "^agent$", 10), ("SubagentStart", None, 5),
               ("SubagentStop", None, 5), ("SessionEnd", None, 5))
COPILOT_EVENTS = (("sessionStart", 5), ("userPromptSubmitted", 5), ("preToolUse", 10),
                  ("postToolUse", 10), ("subagentStart", 5), ("subagentStop", 5))


def configure_gemini(run: Run):
    folder = os.path.join(run.home, ".gemini")
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "experimental": {"enableAgents": True},
    }
    if run.wiring != "install":
        settings["hooks"] = _settings_hooks(run, "gemini", GEMINI_EVENTS)
    _write(os.path.join(folder, "settings.json"), json.dumps(settings, indent=2))
    env = base_env(run)
    env.update(GEMINI_API_KEY="sk-e2e", GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:%d" % run.port,
               GEMINI_CLI_TRUST_WORKSPACE="true")
    argv = [install.binary("gemini"), "-p", run.prompt, "--yolo", "--model", "gemini-2.5-flash",
            "--output-format", "stream-json"]
    return argv, env


def configure_qwen(run: Run):
    folder = os.path.join(run.home, ".qwen")
    settings = {
        "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "disableAutoUpdate": True},
    }
    if run.wiring != "install":
        settings["hooks"] = _settings_hooks(run, "qwen", QWEN_EVENTS)
    _write(os.path.join(folder, "settings.json"), json.dumps(settings, indent=2))
    env = base_env(run)
    env.update(OPENAI_API_KEY="sk-e2e", OPENAI_BASE_URL=run.base_url, OPENAI_MODEL=MODEL)
    argv = [install.binary("qwen"), "-p", run.prompt, "--yolo", "--auth-type", "openai",
            "--model", MODEL, "--output-format", "stream-json"]
    return argv, env


def configure_copilot(run: Run):
    folder = os.path.join(run.home, ".copilot")
    if run.wiring != "install":
        cmd = hook_command(run)
        hooks = {event: [{"type": "command", "bash": "%s %s" % (cmd, event), "timeoutSec": t}]
                 for event, t in COPILOT_EVENTS}
        _write(os.path.join(folder, "hooks", "stop-that-shit.json"),
               json.dumps({"version": 1, "hooks": hooks}, indent=2))
    env = base_env(run)
    env.update(COPILOT_HOME=folder, COPILOT_OFFLINE="true", COPILOT_AUTO_UPDATE="false",
               COPILOT_PROVIDER_BASE_URL=run.base_url, COPILOT_PROVIDER_TYPE="openai",
               COPILOT_PROVIDER_API_KEY="sk-e2e", COPILOT_MODEL="gpt-4.1")
    argv = [install.binary("copilot"), "-p", run.prompt, "--allow-all-tools", "--no-auto-update",
            "--output-format", "json", "--disable-client-telemetry"]
    return argv, env


# ---------------------------------------------------------------------------
# Factory Droid
# ---------------------------------------------------------------------------

DROID_EVENTS = (("SessionStart", None, 5), ("UserPromptSubmit", None, 5),
                ("PreToolUse", "*", 10), ("PostToolUse", "^Task$", 10),
                ("SubagentStop", None, 5), ("SessionEnd", None, 5))


def configure_droid(run: Run):
    folder = os.path.join(run.home, ".factory")
    _write(os.path.join(folder, "settings.json"), json.dumps({
        "customModels": [{"model": MODEL, "displayName": "Fake", "baseUrl": run.base_url,
                          "apiKey": "sk-e2e", "provider": "generic-chat-completion-api",
                          "maxOutputTokens": 4096}]}, indent=2))
    if run.wiring != "install":
        _write(os.path.join(folder, "hooks.json"),
               json.dumps(_settings_hooks(run, "droid", DROID_EVENTS), indent=2))
    env = base_env(run)
    argv = [install.binary("droid"), "exec", "--skip-permissions-unsafe", "-m", "custom:Fake-0",
            "-o", "json", "--cwd", run.work, run.prompt]
    return argv, env


# ---------------------------------------------------------------------------
# Kilo Code CLI (a fork of OpenCode: the same shim, its own folders)
# ---------------------------------------------------------------------------

def configure_kilo(run: Run):
    conf = os.path.join(run.xdg["config"], "kilo")
    plugin_dir = os.path.join(conf, "plugin")
    os.makedirs(plugin_dir, exist_ok=True)
    if run.wiring == "probe":
        shutil.copy(os.path.join(PROBE, "opencode-probe.js"), plugin_dir)
    elif run.wiring == "direct":
        with open(_shim("opencode/stop-that-shit.js"), encoding="utf-8") as fh:
            text = fh.read().replace('const HOST = "opencode";', 'const HOST = "kilo";')
        _write(os.path.join(plugin_dir, "stop-that-shit.js"), text)
        shutil.copy(_shim("stop-that-shit-wire.mjs"), conf)  # imported from the folder above
    if run.wiring != "install":  # (install seeds these itself)
        # Kilo npm-installs @kilocode/plugin before it loads plugins (70 s offline).
        os.makedirs(os.path.join(conf, "node_modules"), exist_ok=True)
        deps = {"@kilocode/plugin": install.PINS["kilo"][2]}
        _write(os.path.join(conf, "package.json"), json.dumps({"dependencies": deps}))
        _write(os.path.join(conf, "package-lock.json"), json.dumps(
            {"lockfileVersion": 3, "packages": {"": {"dependencies": deps}}}))
    _write(os.path.join(conf, "kilo.json"), json.dumps({
        "autoupdate": False, "share": "disabled",
        "model": "fake/" + MODEL, "small_model": "fake/" + MODEL, "enabled_providers": ["fake"],
        "permission": {"external_directory": "allow", "bash": "allow", "edit": "allow"},
        "provider": {"fake": {
            "npm": "@ai-sdk/openai-compatible", "name": "Fake",
            "options": {"baseURL": run.base_url, "apiKey": "sk-e2e"},
            "models": {MODEL: {"name": "Fake model", "tool_call": True,
                               "limit": {"context": 128000, "output": 4096}}}}}}, indent=2))
    env = base_env(run)
    for flag in ("MODELS_FETCH", "AUTOUPDATE", "LSP_DOWNLOAD", "DEFAULT_PLUGINS", "SHARE",
                 "CLAUDE_CODE", "SESSION_INGEST", "CODEBASE_INDEXING", "PRESENCE"):
        env["KILO_DISABLE_" + flag] = "1"
    argv = [install.binary("kilo"), "run", "--print-logs", "--log-level", "INFO", "--auto",
            "-m", "fake/" + MODEL, run.prompt]
    return argv, env


# ---------------------------------------------------------------------------
# Cline CLI 3.x (the SDK-based CLI: a plugin in ~/.cline/plugins/)
# ---------------------------------------------------------------------------

def configure_cline(run: Run):
    env = base_env(run)
    cline = install.binary("cline")
    # `cline auth` writes the provider into ~/.cline (no login needed).
    with open(os.path.join(run.root, "cline-auth.out"), "wb") as out:
        proc = subprocess.run([cline, "auth", "-p", "openai-compatible", "-k", "sk-e2e",
                               "-b", run.base_url, "-m", MODEL], cwd=run.work, env=env,
                              stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                              timeout=120, start_new_session=True)
    if proc.returncode != 0:
        raise WiringError("`cline auth` exited %d (see cline-auth.out)" % proc.returncode)
    plugins = os.path.join(run.home, ".cline", "plugins")
    os.makedirs(plugins, exist_ok=True)
    if run.wiring in ("probe", "direct"):  # the probe is sts.py's stand-in behind the same shim
        shutil.copy(_shim("cline/stop-that-shit.js"), plugins)
        shutil.copy(_shim("stop-that-shit-wire.mjs"), os.path.dirname(plugins))  # (imported)
    # Cline gives up loading plugins after 4 s and then runs without them; on a
    # loaded machine the sandbox that imports them can take longer than that.
    env["CLINE_PLUGIN_IMPORT_TIMEOUT_MS"] = "60000"
    argv = [cline, "--json", "-P", "openai-compatible", "-m", MODEL, "--auto-approve", "true",
            run.prompt]
    return argv, env


# ---------------------------------------------------------------------------
# Mistral Vibe 3.x (hooks.toml command hooks; its Python CLI drives a Rust core)
# ---------------------------------------------------------------------------

def vibe_hooks_toml(command: str) -> str:
    """The hand-written wiring: one strict pre_tool hook for every tool (a
    crash or a non-zero exit denies instead of letting the call through)."""
    return ('[[hooks]]\nname = "stop-that-shit"\ntype = "pre_tool"\ncommand = %s\n'
            'timeout = 30.0\nstrict = true\n' % json.dumps(command))


def configure_vibe(run: Run):
    folder = os.path.join(run.home, ".vibe")
    _write(os.path.join(folder, "config.toml"), (
        'active_model = "fake"\nenable_telemetry = false\nenable_update_checks = false\n\n'
        '[[providers]]\nname = "fake"\napi_base = "%s"\napi_key_env_var = "FAKE_API_KEY"\n'
        'api_style = "openai"\nbackend = "generic"\n\n'
        '[[models]]\nname = "%s"\nprovider = "fake"\nalias = "fake"\n') % (run.base_url, MODEL))
    if run.wiring != "install":
        _write(os.path.join(folder, "hooks.toml"), vibe_hooks_toml(hook_command(run)))
    env = base_env(run)
    env.update({"FAKE_API_KEY": "sk-e2e", "VIBE_HOME": folder})
    argv = [install.binary("vibe"), "-p", run.prompt, "--auto-approve", "--trust",
            "--output", "json"]
    return argv, env


CONFIGURE = {"codex": configure_codex, "claude": configure_claude,
             "opencode": configure_opencode, "pi": configure_pi, "omp": configure_omp,
             "hermes": configure_hermes, "gemini": configure_gemini, "qwen": configure_qwen,
             "copilot": configure_copilot, "droid": configure_droid, "kilo": configure_kilo,
             "cline": configure_cline, "vibe": configure_vibe}


def configure(run: Run):
    """Write the host's config for this run (and wire sts); -> (argv, env)."""
    argv, env = CONFIGURE[run.host](run)
    if run.wiring == "install":
        sts_install(run, env)
    return argv, env


def sts_install(run: Run, env: dict) -> None:
    """`python3 sts.py install <host>` into this run's homes, as a user would."""
    cmd = ["python3", os.path.join(REPO, "sts.py"), "install", run.host]
    if run.host == "codex":
        cmd.append("--trust")  # persists trust through `codex app-server`
    log = os.path.join(run.root, "sts-install.out")
    with open(log, "wb") as out:
        try:
            proc = subprocess.run(cmd, cwd=run.work, env=env, stdin=subprocess.DEVNULL,
                                  stdout=out, stderr=subprocess.STDOUT, timeout=120)
        except subprocess.TimeoutExpired:
            raise WiringError("`sts.py install %s` ran past 120 s" % run.host)
    if proc.returncode != 0:
        with open(log, encoding="utf-8", errors="replace") as fh:
            tail = " ".join(fh.read().split())[-300:]
        raise WiringError("`sts.py install %s` exited %d: %s" % (run.host, proc.returncode, tail))


def install_available() -> bool:
    """True when this checkout's `sts.py install` works (a dry run into a scratch home)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="sts-e2e-probe-install-") as tmp:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp,
               "STS_HOME": os.path.join(tmp, "sts"), "XDG_CONFIG_HOME": os.path.join(tmp, "cfg"),
               "CODEX_HOME": os.path.join(tmp, "codex"), "CLAUDE_CONFIG_DIR": os.path.join(tmp, "cl")}
        try:
            proc = subprocess.run(["python3", os.path.join(REPO, "sts.py"), "install", "claude",
                                   "--dry-run"], env=env, cwd=tmp, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return proc.returncode == 0


def sts_wiring() -> str:
    """How the sts scenarios are wired: STS_E2E_WIRE=install|direct, default auto."""
    choice = os.environ.get("STS_E2E_WIRE", "auto")
    if choice in ("install", "direct"):
        return choice
    return "install" if install_available() else "direct"
