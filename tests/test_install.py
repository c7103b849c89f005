"""install / uninstall / doctor on temp HOMEs with real files.

Each test runs a copy of sts.py placed in a folder whose name holds spaces, a
quote and non-ASCII characters, next to a host_shims/ folder (the real one when
the repo has it, small stand-ins otherwise), so the pinned paths are exercised."""
import functools
import importlib.util
import itertools
import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap

import pytest

from hooks import place_hooked_sts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOSTS = ["codex", "claude", "opencode", "pi", "omp", "hermes", "gemini", "qwen", "copilot"]
_count = itertools.count()

STANDIN_JS = "// stand-in shim\nconst INSTALLED_STS_PY = null; // sts install rewrites this line\nexport default {};\n"
STANDIN_PY = "# stand-in plugin\nINSTALLED_STS_PY = None  # sts install rewrites this line\n\ndef register(ctx):\n    pass\n"


def _make_shims(dest):
    real = os.path.join(ROOT, "host_shims")
    if os.path.isdir(real):
        shutil.copytree(real, dest)
        return
    with open(os.path.join(dest, "stop-that-shit-wire.mjs"), "w") as fh:
        fh.write("// Stop That Shit -- the wire module (stand-in)\nexport function connect() {}\n")
    for host in ("opencode", "pi", "omp"):
        os.makedirs(os.path.join(dest, host))
        with open(os.path.join(dest, host, "stop-that-shit.js"), "w") as fh:
            fh.write(STANDIN_JS)
    plug = os.path.join(dest, "hermes", "stop-that-shit")
    os.makedirs(plug)
    with open(os.path.join(plug, "plugin.yaml"), "w") as fh:
        fh.write("name: stop-that-shit\nversion: 0.1.0\n")
    with open(os.path.join(plug, "__init__.py"), "w") as fh:
        fh.write(STANDIN_PY)


@functools.lru_cache(maxsize=None)
def _sts_code():
    """sts.py compiled once: each test runs the in-process module of its own
    copy from this code (compiling the whole file costs more than most tests)."""
    path = os.path.join(ROOT, "sts.py")
    with open(path, "rb") as fh:
        return compile(fh.read(), path, "exec", dont_inherit=True)


def _place_sts_py(dest):
    """Copy sts.py to `dest` with the bytecode cache a first hook leaves beside
    it, so the hook processes a test starts load at once (see place_hooked_sts)."""
    place_hooked_sts(dest)


class Env:
    def __init__(self, tmp, monkeypatch, capsys, folder):
        self.tmp = tmp
        self.capsys = capsys
        self.app = tmp / folder
        self.app.mkdir(parents=True)
        _place_sts_py(str(self.app / "sts.py"))
        _make_shims(str(self.app / "host_shims"))
        self.home = tmp / "home"
        self.home.mkdir()
        self.state = tmp / "state"
        self.work = tmp / "work"
        self.work.mkdir()
        monkeypatch.setenv("HOME", str(self.home))
        monkeypatch.setenv("STS_HOME", str(self.state))
        for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "PI_CODING_AGENT_DIR",
                    "HERMES_HOME", "CODEX_BIN", "HERMES_SAFE_MODE", "GEMINI_CLI_HOME",
                    "QWEN_HOME", "COPILOT_HOME"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("PATH", "/usr/bin:/bin:" + os.path.dirname(sys.executable))
        monkeypatch.chdir(self.work)
        name = "sts_copy_%d" % next(_count)
        spec = importlib.util.spec_from_file_location(name, str(self.app / "sts.py"))
        self.sts = importlib.util.module_from_spec(spec)  # __file__ is the copy
        sys.modules[name] = self.sts
        exec(_sts_code(), self.sts.__dict__)
        monkeypatch.setattr(self.sts, "_codex_bin", lambda: os.environ.get("CODEX_BIN"))

    def run(self, verb, *args):
        self.capsys.readouterr()
        rc = getattr(self.sts, "cmd_" + verb)(list(args))
        cap = self.capsys.readouterr()
        self.out, self.err = cap.out, cap.err
        return rc

    def p(self, *parts):
        return os.path.join(str(self.home), *parts)

    def snapshot(self):
        """Every file under HOME and STS_HOME with its bytes (backups included)."""
        found = {}
        for base in (self.home, self.state):
            for d, _, files in os.walk(str(base)):
                for f in files:
                    path = os.path.join(d, f)
                    with open(path, "rb") as fh:
                        found[path] = fh.read()
        return found

    def dirs(self):
        return sorted(d for d, _, _ in os.walk(str(self.home)))

    @property
    def sts_py(self):
        return str(self.app / "sts.py")


@pytest.fixture
def env(ram_path, monkeypatch, capsys):
    return Env(ram_path, monkeypatch, capsys, "my tools/sts ü's dir")


@pytest.fixture
def plain_env(ram_path, monkeypatch, capsys):
    return Env(ram_path, monkeypatch, capsys, "sts")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def backups(path):
    d, name = os.path.split(path)
    return [f for f in os.listdir(d) if f.startswith(name + ".sts-backup-")]


# ---------------------------------------------------------------- the command


def test_hook_command_is_the_documented_import_form(plain_env):
    cmd = plain_env.sts.hook_command("codex")
    folder = str(plain_env.app)
    assert cmd == ('python3 -I -S -c "import sys; sys.path.insert(0, %r); import sts; '
                   'sys.exit(sts.main())" codex' % folder)


@pytest.mark.parametrize("folder", ["a b", "ü é ß", "it's", 'say "hi"', "cost $HOME", "back\\slash"])
def test_hook_command_survives_sh_and_shlex(ram_path, monkeypatch, capsys, folder):
    e = Env(ram_path, monkeypatch, capsys, folder)
    cmd = e.sts.hook_command("claude", python=sys.executable)
    # Hermes splits with shlex; Codex and Claude hand it to sh -c: both must see the same argv.
    argv = e.sts.hook_argv("claude", python=sys.executable)
    assert shlex.split(cmd) == argv
    echo = subprocess.run(["/bin/sh", "-c", cmd.replace(sys.executable, "printf '%s\\n'", 1)],
                          capture_output=True, text=True)
    assert echo.stdout.split("\n")[:len(argv) - 1] == argv[1:]
    # And the interpreter really imports this copy (-I drops the cwd from sys.path).
    probe = cmd.replace("import sts; sys.exit(sts.main())", "import sts; print(sts.__file__)")
    got = subprocess.run(["/bin/sh", "-c", probe], capture_output=True, text=True,
                         cwd=str(e.work), input="")
    assert got.returncode == 0, got.stderr
    assert os.path.realpath(got.stdout.strip()) == os.path.realpath(e.sts_py)


def test_read_only_sts_folder_adds_pycache_prefix(env, monkeypatch):
    monkeypatch.setattr(env.sts, "_dir_writable", lambda path: False)
    argv = env.sts.hook_argv("pi")
    assert argv[3:5] == ["-X", "pycache_prefix=" + os.path.join(str(env.state), "pycache")]
    assert shlex.split(env.sts.hook_command("pi")) == argv


# ---------------------------------------------------------------- every host


@pytest.mark.parametrize("host", HOSTS)
def test_install_twice_then_uninstall_leaves_home_as_it_was(env, host):
    before_dirs = env.dirs()
    assert env.run("install", host) == 0, env.err
    first = env.snapshot()
    assert env.run("install", host) == 0, env.err
    assert "nothing changed" in env.out
    assert env.snapshot() == first  # byte for byte, no new backup either
    installed = json.loads(read(str(env.state / "installed.json")))
    wrote = [p for p in first if p.startswith(str(env.home))]
    assert sorted(installed["paths"]) == sorted(wrote)
    assert env.run("uninstall", host) == 0, env.err
    assert [p for p in env.snapshot() if p.startswith(str(env.home))] == []
    assert env.dirs() == before_dirs
    assert json.loads(read(str(env.state / "installed.json")))["paths"] == []


@pytest.mark.parametrize("host", HOSTS)
def test_dry_run_prints_the_diff_and_writes_nothing(env, host):
    assert env.run("install", host, "--dry-run") in (0, 1), env.err
    assert "+++ " in env.out and "dry run" in env.out
    assert env.snapshot() == {}
    assert env.dirs() == [str(env.home)]


def test_claude_merge_keeps_user_hooks_keys_and_formatting(env):
    cfg = env.p(".claude", "settings.json")
    original = textwrap.dedent("""\
        {
            "model": "opus",
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}
                ],
                "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
            },
            "permissions": {"allow": ["Bash(ls)", "Read"]},
            "env": {"A": "ü"}
        }
        """)
    write(cfg, original)
    assert env.run("install", "claude") == 0, env.err
    text = read(cfg)
    data = json.loads(text)
    cmd = env.sts.hook_command("claude")
    pre = data["hooks"]["PreToolUse"]
    assert pre[0] == {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}
    assert pre[1] == {"matcher": "*", "hooks": [{"type": "command", "command": cmd, "timeout": 10}]}
    assert data["hooks"]["Stop"][0]["hooks"][0]["command"] == "notify-send done"
    for ev in ("SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure",
               "PermissionDenied", "SubagentStart", "SessionEnd"):
        assert [h["command"] for g in data["hooks"][ev] for h in g["hooks"]] == [cmd]
    # Unrelated lines keep their exact text, including the compact inner objects.
    for line in ('    "permissions": {"allow": ["Bash(ls)", "Read"]},', '    "env": {"A": "ü"}',
                 '            {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]},',
                 '        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]'):
        assert line in text.split("\n") or line + "," in text.split("\n")
    [bak] = backups(cfg)
    assert read(os.path.join(os.path.dirname(cfg), bak)) == original
    assert env.run("uninstall", "claude") == 0
    assert read(cfg) == original


def test_claude_config_dir_and_compact_file(env, monkeypatch):
    alt = env.tmp / "claude cfg"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(alt))
    write(str(alt / "settings.json"), '{"theme":"dark"}')
    assert env.run("install", "claude") == 0, env.err
    text = read(str(alt / "settings.json"))
    assert "\n" not in text.strip() and text.startswith('{"theme":"dark", "hooks": {')
    assert json.loads(text)["theme"] == "dark"
    assert env.run("uninstall", "claude") == 0
    assert read(str(alt / "settings.json")) == '{"theme":"dark"}'


@pytest.mark.parametrize("original", [
    '{\n    "model": "o",\n    "hooks": {}\n}\n',
    '{\n  "hooks": {"Stop": [{"hooks": []}]},\n  "x": [1, 2]\n}\n',
    '{\n\t"hooks": {\n\t\t"PreToolUse": []\n\t}\n}',
    '',
])
def test_json_layouts_merge_and_restore(env, original):
    cfg = env.p(".claude", "settings.json")
    write(cfg, original)
    assert env.run("install", "claude") == 0, env.err
    text = read(cfg)
    data = json.loads(text)
    assert len(data["hooks"]["PreToolUse"]) == 1
    if "\n" in original.strip():  # new lines follow the file's own indentation
        for line in text.split("\n"):
            if line.strip().startswith('"SessionStart"'):
                assert line.startswith(("        ", "\t\t", "    \"", "  \"SessionStart"))
    assert env.run("install", "claude") == 0 and "nothing changed" in env.out
    assert env.run("uninstall", "claude") == 0
    assert read(cfg) == original


def test_stale_sts_group_is_replaced_not_duplicated(env):
    assert env.run("install", "codex") == 0
    assert env.run("install", "codex", "--python", "python3.9") == 0, env.err
    data = json.loads(read(env.p(".codex", "hooks.json")))
    for ev in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "SessionEnd"):
        cmds = [h["command"] for g in data["hooks"][ev] for h in g["hooks"]]
        assert len(cmds) == 1 and cmds[0].startswith("python3.9 -I -S")
    assert env.run("uninstall", "codex") == 0
    assert not os.path.exists(env.p(".codex", "hooks.json"))


def test_codex_hooks_json_shape(env):
    assert env.run("install", "codex") == 0, env.err
    hooks = json.loads(read(env.p(".codex", "hooks.json")))["hooks"]
    assert list(hooks) == ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                           "SessionEnd"]
    assert hooks["PreToolUse"][0]["matcher"] == ".*"
    assert hooks["PreToolUse"][0]["hooks"][0]["timeout"] == 10
    assert hooks["PostToolUse"][0]["matcher"].startswith("^(spawn_agent|wait_agent|Agent|")
    assert "matcher" not in hooks["SessionStart"][0]
    assert read(env.p(".codex", "config.toml")) == "[features]\nhooks = true\n"
    assert "trust" in env.out and "--trust" in env.out


# ---------------------------------------------------------------- Codex TOML


@pytest.mark.parametrize("original, expect", [
    ('model = "o3"\n\n[tui]\ntheme = "x"\n',
     'model = "o3"\n\n[tui]\ntheme = "x"\n\n[features]\nhooks = true\n'),
    ('model = "o3"', 'model = "o3"\n\n[features]\nhooks = true\n'),
    ('[features]\nplugins = false\n\n[tui]\na = 1\n',
     '[features]\nhooks = true\nplugins = false\n\n[tui]\na = 1\n'),
    ('[features]\nhooks = true\n', None),
])
def test_codex_features_minimal_insertion(env, original, expect):
    toml = env.p(".codex", "config.toml")
    write(toml, original)
    assert env.run("install", "codex") == 0, env.err
    assert read(toml) == (expect or original)
    assert env.run("uninstall", "codex") == 0
    assert read(toml) == original


@pytest.mark.parametrize("original", [
    "[features]\nhooks = false\n",
    "features.hooks = false\n",
    "features = { plugins = false }\n",
    'note = """\n[features]\n"""\n',
])
def test_codex_features_not_provably_safe_prints_lines(env, original):
    toml = env.p(".codex", "config.toml")
    write(toml, original)
    assert env.run("install", "codex") == 1
    assert read(toml) == original
    assert "ACTION NEEDED" in env.out and "[features]" in env.out and "hooks = true" in env.out
    assert os.path.exists(env.p(".codex", "hooks.json"))  # the rest is installed


def test_malformed_toml_stops_install(env):
    pytest.importorskip("tomllib")
    toml = env.p(".codex", "config.toml")
    write(toml, 'model = "o3"\nbroken = \n')
    assert env.run("install", "codex") == 2
    assert toml in env.err and "line 2" in env.err
    assert read(toml) == 'model = "o3"\nbroken = \n'
    assert not os.path.exists(env.p(".codex", "hooks.json"))


# ---------------------------------------------------------------- Hermes YAML


@pytest.mark.parametrize("original, expect", [
    ("model:\n  default: fake\n", "model:\n  default: fake\nplugins:\n  enabled:\n    - stop-that-shit\n"),
    ("model:\n  default: fake", "model:\n  default: fake\nplugins:\n  enabled:\n    - stop-that-shit\n"),
    ("plugins:\n  enabled:\n    - other  # mine\n    - x.y\nsecurity:\n  a: 1\n",
     "plugins:\n  enabled:\n    - other  # mine\n    - x.y\n    - stop-that-shit\nsecurity:\n  a: 1\n"),
    ("plugins:\n  enabled:\n  - other\n\n# tail\nb: 2\n",
     "plugins:\n  enabled:\n  - other\n  - stop-that-shit\n\n# tail\nb: 2\n"),
    ("plugins:\n  enabled: [sts-probe]   # kit\nx: 1\n",
     "plugins:\n  enabled: [sts-probe, stop-that-shit]   # kit\nx: 1\n"),
    ("plugins:\n  enabled: []\n", "plugins:\n  enabled: [stop-that-shit]\n"),
    ("plugins:\n    disabled:\n      - foo\nx: 1\n",
     "plugins:\n    enabled:\n      - stop-that-shit\n    disabled:\n      - foo\nx: 1\n"),
    ("plugins:\n  enabled:\n    - stop-that-shit\n", None),
])
def test_hermes_enable_minimal_edit(env, original, expect):
    cfg = env.p(".hermes", "config.yaml")
    write(cfg, original)
    assert env.run("install", "hermes") == 0, env.err + env.out
    assert read(cfg) == (expect or original)
    assert env.run("uninstall", "hermes") == 0
    assert read(cfg) == original


@pytest.mark.parametrize("original", [
    "plugins: {enabled: [a]}\n",
    "plugins:\n  enabled: a\n",
    "plugins:\n  enabled:\n    - {name: a}\n",
    "<<: *base\nplugins:\n  x: 1\n",
    "a: 1\n---\nb: 2\n",
    "plugins:\n  enabled: [a]\nplugins:\n  enabled: [b]\n",
    "plugins:\n  - a\n",
    "plugins:\n  enabled: ['a']\n",
])
def test_hermes_unprovable_yaml_prints_lines_and_doctor_checks(env, original):
    cfg = env.p(".hermes", "config.yaml")
    write(cfg, original)
    assert env.run("install", "hermes") == 1
    assert read(cfg) == original and not backups(cfg)
    assert "ACTION NEEDED" in env.out
    assert "  plugins:\n    enabled:\n      - stop-that-shit" in env.out
    assert os.path.exists(env.p(".hermes", "plugins", "stop-that-shit", "__init__.py"))
    env.run("doctor")
    assert "hermes" in env.out and "does not enable the plugin" in env.out


def test_hermes_plugin_copy_pins_this_sts_py(env):
    assert env.run("install", "hermes") == 0, env.err
    init = env.p(".hermes", "plugins", "stop-that-shit", "__init__.py")
    ns = {}
    pinned = [ln for ln in read(init).split("\n") if ln.startswith("INSTALLED_STS_PY")]
    exec(pinned[0], ns)
    assert ns["INSTALLED_STS_PY"] == env.sts_py
    src = read(str(env.app / "host_shims" / "hermes" / "stop-that-shit" / "__init__.py"))
    assert [ln for ln in read(init).split("\n") if "INSTALLED_STS_PY" not in ln] == \
        [ln for ln in src.split("\n") if "INSTALLED_STS_PY" not in ln]


# ---------------------------------------------------------------- shims


@pytest.mark.parametrize("host, rel", [
    ("opencode", (".config", "opencode", "plugin", "stop-that-shit.js")),
    ("pi", (".pi", "agent", "extensions", "stop-that-shit.js")),
    ("omp", (".omp", "agent", "extensions", "stop-that-shit.js")),
])
def test_js_shim_copy_pins_this_sts_py(env, host, rel):
    assert env.run("install", host) == 0, env.err
    text = read(env.p(*rel))
    [line] = [ln for ln in text.split("\n") if "INSTALLED_STS_PY =" in ln]
    literal = line.split("=", 1)[1].split(";")[0].strip()
    assert json.loads(literal) == env.sts_py
    assert literal.isascii()  # \u escapes: valid in every JS engine
    assert env.sts._shim_pinned_to(env.p(*rel)) == env.sts_py


JS_SHIM_PATHS = {"opencode": (".config", "opencode", "plugin", "stop-that-shit.js"),
                 "pi": (".pi", "agent", "extensions", "stop-that-shit.js"),
                 "omp": (".omp", "agent", "extensions", "stop-that-shit.js")}


def wire_of(env, host):
    """Where the shim of `host` imports the wire module from: the folder above its own."""
    return os.path.join(os.path.dirname(os.path.dirname(env.p(*JS_SHIM_PATHS[host]))),
                        "stop-that-shit-wire.mjs")


@pytest.mark.parametrize("host", sorted(JS_SHIM_PATHS))
def test_js_shim_install_places_the_wire_module_it_imports(env, host):
    assert env.run("install", host) == 0, env.err
    source = str(env.app / "host_shims" / "stop-that-shit-wire.mjs")
    assert read(wire_of(env, host)) == read(source)
    assert "../stop-that-shit-wire.mjs" in read(str(env.app / "host_shims" / host / "stop-that-shit.js"))
    env.run("doctor", host)
    assert "OK   %s" % host in env.out and wire_of(env, host) + " present" in env.out


def test_the_wire_module_of_an_older_install_is_replaced_a_foreign_file_is_not(env):
    wire = wire_of(env, "pi")
    write(wire, "// Stop That Shit -- the wire module, an older one\n")
    assert env.run("install", "pi") == 0, env.err
    assert read(wire) == read(str(env.app / "host_shims" / "stop-that-shit-wire.mjs"))
    assert env.run("uninstall", "pi") == 0 and not os.path.exists(wire)
    write(wire, "// somebody else's module\n")
    assert env.run("install", "pi") == 2
    assert wire in env.err and read(wire) == "// somebody else's module\n"


def test_doctor_fails_on_a_missing_or_changed_wire_module(env):
    assert env.run("install", "omp") == 0
    wire = wire_of(env, "omp")
    write(wire, read(wire) + "// changed\n")
    assert env.run("doctor", "omp") == 1
    assert "FAIL omp" in env.out and wire + " differs from the one in host_shims/" in env.out
    os.unlink(wire)
    assert env.run("doctor", "omp") == 1
    assert wire + " is missing" in env.out and "install omp" in env.out


def test_uninstall_without_a_record_removes_the_wire_module_beside_this_shim(env):
    assert env.run("install", "opencode") == 0
    os.unlink(str(env.state / "installed.json"))
    wire = wire_of(env, "opencode")
    assert env.run("uninstall", "opencode") == 0, env.err
    assert not os.path.exists(env.p(*JS_SHIM_PATHS["opencode"])) and not os.path.exists(wire)


def test_pi_agent_dir_override(env, monkeypatch):
    agent = env.tmp / "pi agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    assert env.run("install", "pi") == 0
    assert os.path.exists(str(agent / "extensions" / "stop-that-shit.js"))


def test_foreign_file_at_shim_path_is_not_overwritten(env):
    dest = env.p(".pi", "agent", "extensions", "stop-that-shit.js")
    write(dest, "// somebody else's extension\n")
    assert env.run("install", "pi") == 2
    assert dest in env.err
    assert read(dest) == "// somebody else's extension\n"


def test_opencode_seed_only_into_a_clean_config_folder(env):
    assert env.run("install", "opencode") == 0
    lock = json.loads(read(env.p(".config", "opencode", "package-lock.json")))
    assert "@opencode-ai/plugin" in lock["packages"][""]["dependencies"]
    assert os.path.isdir(env.p(".config", "opencode", "node_modules"))
    assert env.run("uninstall", "opencode") == 0
    assert not os.path.exists(env.p(".config", "opencode"))


def test_opencode_leaves_existing_npm_files_alone(env):
    pkg = env.p(".config", "opencode", "package.json")
    write(pkg, '{"dependencies": {"x": "1"}}\n')
    assert env.run("install", "opencode") == 0
    assert read(pkg) == '{"dependencies": {"x": "1"}}\n'
    assert "npm-install" in env.out
    assert not os.path.exists(env.p(".config", "opencode", "package-lock.json"))


# ---------------------------------------------------------------- bad input


def test_malformed_json_is_never_overwritten(env):
    cfg = env.p(".claude", "settings.json")
    bad = '{\n  "model": "opus",\n  "hooks": {},\n}\n'
    write(cfg, bad)
    assert env.run("install", "claude") == 2
    # Where json reports the error: the closing brace (line 4), or from 3.13 on
    # the trailing comma itself (line 3).
    assert cfg in env.err and ("line 4" in env.err or "line 3" in env.err)
    assert read(cfg) == bad and not backups(cfg)
    assert not os.path.exists(str(env.state / "installed.json"))


@pytest.mark.parametrize("text, words", [
    ('[1, 2]', "top level"),
    ('{"hooks": []}', '"hooks" is not a JSON object'),
    ('{"hooks": {"PreToolUse": {}}}', '"hooks.PreToolUse" is not a JSON array'),
    ('{"hooks": {}, "hooks": {}}', "twice"),
    ('{"hooks": null}', '"hooks" is not a JSON object'),
    ('{"hooks": {"SessionEnd": null}}', '"hooks.SessionEnd" is not a JSON array'),
])
def test_unexpected_json_shapes_stop_install(env, text, words):
    cfg = env.p(".codex", "hooks.json")
    write(cfg, text)
    assert env.run("install", "codex") == 2
    assert words in env.err and cfg in env.err
    assert read(cfg) == text


def test_non_utf8_config_is_refused(env):
    cfg = env.p(".claude", "settings.json")
    os.makedirs(os.path.dirname(cfg))
    with open(cfg, "wb") as fh:
        fh.write(b'{\n"a": "\xff"}\n')
    assert env.run("install", "claude") == 2
    assert "line 2" in env.err and "UTF-8" in env.err


def test_read_only_config_folder_gives_a_clear_error(env, monkeypatch):
    cfg_dir = env.p(".claude")
    os.makedirs(cfg_dir)
    real_access = os.access
    monkeypatch.setattr(env.sts.os, "access",
                        lambda p, m: False if p == cfg_dir else real_access(p, m))
    assert env.run("install", "claude") == 2
    assert "read-only" in env.err and cfg_dir in env.err
    assert os.listdir(cfg_dir) == []


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores modes")
def test_read_only_config_folder_for_real(env):
    cfg_dir = env.p(".claude")
    os.makedirs(cfg_dir)
    os.chmod(cfg_dir, 0o555)
    try:
        assert env.run("install", "claude") == 2
        assert "read-only" in env.err
    finally:
        os.chmod(cfg_dir, 0o755)


def test_unknown_host_and_options(env):
    assert env.run("install", "vim") == 2 and "usage" in env.err
    assert env.run("install", "pi", "--scope", "global") == 2
    assert env.run("install", "pi", "--bogus") == 2
    assert env.run("install", "pi", "--trust") == 2 and "codex only" in env.err


# ---------------------------------------------------------------- scope


def test_project_scope_writes_into_the_repository(env, monkeypatch):
    repo = env.tmp / "repo ü"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    monkeypatch.chdir(str(repo / "src"))
    assert env.run("install", "claude", "--scope", "project") == 0, env.err
    assert os.path.exists(str(repo / ".claude" / "settings.json"))
    assert env.run("install", "omp", "--scope", "project") == 0, env.err
    assert os.path.exists(str(repo / ".omp" / "extensions" / "stop-that-shit.js"))
    assert not os.path.exists(env.p(".claude"))
    assert env.run("uninstall", "claude", "--scope", "project") == 0
    assert env.run("uninstall", "omp", "--scope", "project") == 0
    assert sorted(os.listdir(str(repo))) == [".git", "src"]


# ---------------------------------------------------------------- doctor


def test_doctor_reports_wiring_state_folder_and_last_event(env):
    assert env.run("install", "claude") == 0
    os.makedirs(str(env.state / "hosts"))
    write(str(env.state / "hosts" / "claude"), "")
    env.run("doctor")
    lines = env.out.split("\n")
    assert any(ln.startswith("OK   sts") and "writable" in ln for ln in lines)
    assert any(ln.startswith("OK   claude") and "wired" in ln for ln in lines)
    assert any(ln.startswith("OK   claude") and "last event" in ln for ln in lines)
    assert any("claude" in ln and ("command works" in ln or "hook command failed" in ln)
               for ln in lines)
    assert not any(ln.startswith(("OK   codex", "FAIL codex")) for ln in lines)


def test_doctor_fails_when_a_hook_was_removed(env):
    assert env.run("install", "claude") == 0
    cfg = env.p(".claude", "settings.json")
    data = json.loads(read(cfg))
    del data["hooks"]["PreToolUse"]
    write(cfg, json.dumps(data))
    assert env.run("doctor", "claude") == 1
    assert "FAIL claude" in env.out and "PreToolUse" in env.out
    assert "fix: python3" in env.out and "install claude" in env.out


def test_doctor_runs_the_installed_command(env, monkeypatch):
    """The harmless event must reach main(): patch this copy's main to prove it ran."""
    assert env.run("install", "hermes") == 0
    with open(env.sts_py, "a", encoding="utf-8") as fh:
        fh.write("\n\ndef main(argv=None):\n    import sys, json\n"
                 "    ev = json.load(sys.stdin)\n"
                 "    sys.stdout.write('' if ev['hook_event_name'] == 'on_session_start' else 'x')\n"
                 "    return 0 if sys.argv[1:] == ['hermes'] else 3\n")
    env.run("doctor", "hermes")
    assert "OK   hermes   command works" in env.out, env.out


# ---------------------------------------------------------------- Codex trust

FAKE_CODEX = r'''#!/usr/bin/env python3
import hashlib, json, os, sys
home = os.environ["CODEX_HOME"]
hooks_path = os.path.join(home, "hooks.json")
state_path = os.path.join(home, "fake-trust.json")
def state():
    try:
        return json.load(open(state_path))
    except OSError:
        return {}
snake = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit",
         "PreToolUse": "pre_tool_use", "PostToolUse": "post_tool_use", "SessionEnd": "session_end"}
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m, params, res = msg["method"], msg.get("params") or {}, {}
    if m == "hooks/list":
        st, hooks = state(), []
        for ev, groups in json.load(open(hooks_path))["hooks"].items():
            for gi, g in enumerate(groups):
                for hi, h in enumerate(g["hooks"]):
                    key = "%s:%s:%d:%d" % (hooks_path, snake.get(ev, ev), gi, hi)
                    cur = "sha256:" + hashlib.sha256(h["command"].encode()).hexdigest()
                    s = st.get(key)
                    status = "trusted" if s and s["trusted_hash"] == cur else ("modified" if s else "untrusted")
                    hooks.append({"key": key, "eventName": ev, "command": h["command"],
                                  "currentHash": cur, "trustStatus": status, "isManaged": False})
        res = {"data": [{"cwd": params["cwds"][0], "hooks": hooks}]}
    elif m == "config/value/write":
        st = state()
        st[params["keyPath"][len('hooks.state."'):-1]] = params["value"]
        json.dump(st, open(state_path, "w"))
    print(json.dumps({"id": msg["id"], "result": res}), flush=True)
'''


@pytest.fixture
def fake_codex(env, monkeypatch):
    path = str(env.tmp / "bin" / "codex")
    write(path, FAKE_CODEX.replace("/usr/bin/env python3", sys.executable))
    os.chmod(path, 0o755)
    monkeypatch.setenv("CODEX_BIN", path)
    monkeypatch.setenv("CODEX_HOME", env.p(".codex"))
    return path


def test_codex_trust_marks_only_the_sts_hooks(env, fake_codex):
    write(env.p(".codex", "hooks.json"), json.dumps({"hooks": {"PreToolUse": [
        {"matcher": ".*", "hooks": [{"type": "command", "command": "echo user hook"}]}]}}))
    env.run("doctor", "codex")
    assert "codex lists no sts hook" in env.out
    assert env.run("install", "codex") == 0
    assert not os.path.exists(env.p(".codex", "fake-trust.json"))  # never without --trust
    env.run("doctor", "codex")
    assert "FAIL codex    5 of 5 sts hooks are not trusted" in env.out
    assert "install codex --trust" in env.out
    assert env.run("install", "codex", "--trust") == 0, env.out + env.err
    assert env.out.count("trusted") >= 5
    trust = json.loads(read(env.p(".codex", "fake-trust.json")))
    assert len(trust) == 5 and not any(":pre_tool_use:0:" in k for k in trust)
    env.run("doctor", "codex")
    assert "OK   codex    all 5 sts hooks are trusted" in env.out


def test_codex_trust_without_codex_is_an_action_not_a_crash(env):
    assert env.run("install", "codex", "--trust") == 1
    assert "ACTION NEEDED" in env.out and "trust" in env.out
    assert os.path.exists(env.p(".codex", "hooks.json"))


def test_doctor_checks_codex_project_trust(env, monkeypatch):
    repo = env.tmp / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(str(repo))
    assert env.run("install", "codex", "--scope", "project") == 0, env.err
    assert "trust_level" in env.out
    assert os.path.exists(str(repo / ".codex" / "hooks.json"))
    env.run("doctor", "codex")
    assert "FAIL codex    Codex reads" in env.out
    write(env.p(".codex", "config.toml"), '[projects.%s]\ntrust_level = "trusted"\n' % json.dumps(str(repo)))
    env.run("doctor", "codex")
    assert "OK   codex    project %s is trusted" % repo in env.out
    assert "OK   codex    wired" in env.out


def test_uninstall_dry_run_writes_nothing(env):
    assert env.run("install", "claude") == 0
    before = env.snapshot()
    assert env.run("uninstall", "claude", "--dry-run") == 0
    assert "--- " in env.out and "-" in env.out and "dry run" in env.out
    assert env.snapshot() == before


def test_symlinked_config_stays_a_symlink(env):
    real = env.tmp / "dotfiles" / "settings.json"
    write(str(real), '{"model": "opus"}\n')
    os.makedirs(env.p(".claude"))
    os.symlink(str(real), env.p(".claude", "settings.json"))
    assert env.run("install", "claude") == 0, env.err
    assert os.path.islink(env.p(".claude", "settings.json"))
    assert "hooks" in json.loads(read(str(real)))
    assert env.run("uninstall", "claude") == 0
    assert read(str(real)) == '{"model": "opus"}\n'


def test_uninstall_without_a_record_still_removes_this_sts(env):
    assert env.run("install", "claude") == 0
    os.unlink(str(env.state / "installed.json"))
    assert env.run("uninstall", "claude") == 0
    data = json.loads(read(env.p(".claude", "settings.json")))
    assert all(g == [] for g in data.get("hooks", {}).values())


# ---------------------------------------------------------------- Gemini, Qwen, Copilot


def test_gemini_hooks_use_milliseconds_and_keep_the_users_settings(env):
    cfg = env.p(".gemini", "settings.json")
    original = ('{\n  "theme": "Dracula",\n  "hooks": {\n    "BeforeTool": [\n      {"matcher": '
                '"write_file", "hooks": [{"type": "command", "command": "lint.sh"}]}\n    ]\n'
                '  }\n}\n')
    write(cfg, original)
    assert env.run("install", "gemini") == 0, env.err
    data = json.loads(read(cfg))
    assert data["theme"] == "Dracula"
    before = data["hooks"]["BeforeTool"]
    assert before[0]["hooks"][0]["command"] == "lint.sh"  # the user's hook stays first
    ours = before[1]
    assert ours["matcher"] == ".*" and ours["hooks"][0]["timeout"] == 10000
    assert ours["hooks"][0]["command"].endswith(" gemini")
    assert data["hooks"]["AfterTool"][0]["matcher"].startswith("^(invoke_agent|")
    assert set(data["hooks"]) == {"BeforeTool", "SessionStart", "BeforeAgent", "AfterTool",
                                  "SessionEnd"}
    assert backups(cfg)
    assert env.run("uninstall", "gemini") == 0
    assert read(cfg) == original


def test_gemini_cli_home_moves_the_user_folder(env, monkeypatch):
    other = env.tmp / "gemini home"
    monkeypatch.setenv("GEMINI_CLI_HOME", str(other))
    assert env.run("install", "gemini") == 0, env.err
    assert os.path.exists(str(other / ".gemini" / "settings.json"))
    assert not os.path.exists(env.p(".gemini"))


def test_qwen_hooks_use_seconds_and_qwen_home(env, monkeypatch):
    home = env.tmp / "qwen home"
    monkeypatch.setenv("QWEN_HOME", str(home))
    assert env.run("install", "qwen") == 0, env.err
    data = json.loads(read(str(home / "settings.json")))
    pre = data["hooks"]["PreToolUse"][0]
    assert pre["matcher"] == ".*" and pre["hooks"][0]["timeout"] == 10
    assert data["hooks"]["PostToolUse"][0]["matcher"] == "^agent$"
    assert {"SubagentStart", "SubagentStop", "UserPromptSubmit"} <= set(data["hooks"])


def test_copilot_hook_file_names_each_event_in_its_command(env):
    assert env.run("install", "copilot") == 0, env.err
    path = env.p(".copilot", "hooks", "stop-that-shit.json")
    data = json.loads(read(path))
    assert data["version"] == 1
    for event, hooks in data["hooks"].items():
        assert len(hooks) == 1 and hooks[0]["type"] == "command"
        assert shlex.split(hooks[0]["bash"])[-2:] == ["copilot", event]
    assert data["hooks"]["preToolUse"][0]["timeoutSec"] == 10


def test_copilot_will_not_overwrite_a_foreign_hook_file(env):
    path = env.p(".copilot", "hooks", "stop-that-shit.json")
    write(path, '{"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "mine"}]}}')
    assert env.run("install", "copilot") == 2
    assert "not an sts hook file" in env.err
    assert "mine" in read(path)


def test_copilot_and_gemini_project_scope_say_what_trust_they_need(env, monkeypatch):
    repo = env.tmp / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(str(repo))
    assert env.run("install", "copilot", "--scope", "project") == 0, env.err
    assert os.path.exists(str(repo / ".github" / "hooks" / "stop-that-shit.json"))
    assert "--trust-folder" in env.out
    assert env.run("install", "gemini", "--scope", "project") == 0, env.err
    assert "trusted folder" in env.out and "GEMINI_CLI_TRUST_WORKSPACE" in env.out
    assert env.run("uninstall", "copilot", "--scope", "project") == 0
    assert env.run("uninstall", "gemini", "--scope", "project") == 0
    assert sorted(os.listdir(str(repo))) == [".git"]


@pytest.mark.parametrize("host, rel", [("gemini", (".gemini", "settings.json")),
                                       ("qwen", (".qwen", "settings.json"))])
def test_malformed_new_host_settings_are_never_overwritten(env, host, rel):
    cfg = env.p(*rel)
    write(cfg, '{"hooks": {,}}')
    assert env.run("install", host) == 2
    assert "not valid JSON" in env.err and "line 1" in env.err
    assert read(cfg) == '{"hooks": {,}}'


@pytest.mark.parametrize("host", ["gemini", "qwen", "copilot"])
def test_doctor_runs_each_new_hosts_command(env, host):
    assert env.run("install", host) == 0, env.err
    assert env.run("doctor", host) == 0, env.out
    assert "OK   %-8s wired" % host in env.out
    assert "OK   %-8s command works" % host in env.out


def test_doctor_sees_a_removed_copilot_hook_file_and_disabled_hooks(env):
    assert env.run("install", "copilot") == 0
    write(env.p(".copilot", "config.json"), '{"disableAllHooks": true}')
    assert env.run("doctor", "copilot") == 1
    assert "disableAllHooks" in env.out
    os.unlink(env.p(".copilot", "hooks", "stop-that-shit.json"))
    assert env.run("doctor", "copilot") == 1
    assert "does not exist" in env.out


def test_new_host_configs_are_in_the_protected_set(env):
    for host in ("gemini", "qwen", "copilot"):
        assert env.run("install", host) == 0, env.err
    paths = json.loads(read(str(env.state / "installed.json")))["paths"]
    assert env.p(".gemini", "settings.json") in paths
    assert env.p(".qwen", "settings.json") in paths
    assert env.p(".copilot", "hooks", "stop-that-shit.json") in paths


# ---------------------------------------------------------------- the guard gone

def test_doctor_says_loudly_when_the_sts_py_a_hook_runs_is_gone(env):
    """A hook that cannot start does not block: doctor names the missing file
    and what the host then does, for a command hook and for a shim."""
    assert env.run("install", "claude") == 0 and env.run("install", "opencode") == 0
    os.rename(env.sts_py, env.sts_py + ".moved")
    assert env.run("doctor", "claude", "opencode") == 1
    lines = env.out.splitlines()
    hook = [ln for ln in lines if ln.startswith("FAIL claude") and "GUARD MISSING" in ln]
    shim = [ln for ln in lines if ln.startswith("FAIL opencode") and "GUARD MISSING" in ln]
    assert hook and env.sts_py in hook[0] and "every tool call runs without the guard" in hook[0], \
        env.out
    assert shim and env.sts_py in shim[0] and "while a session is armed" in shim[0]


def test_doctor_says_nothing_of_a_missing_guard_when_it_is_there(env):
    assert env.run("install", "claude") == 0
    env.run("doctor", "claude")
    assert "GUARD MISSING" not in env.out


def test_session_start_warns_when_an_installed_guard_file_is_gone(env):
    assert env.run("install", "claude") == 0 and env.run("install", "pi") == 0
    store = env.sts.Store()
    start = {"session_id": "s-start", "cwd": str(env.work), "hook_event_name": "SessionStart",
             "source": "startup"}
    quiet = json.loads(env.sts.run_hook("claude", json.dumps(start).encode(), store))
    assert "WARNING" not in quiet["hookSpecificOutput"]["additionalContext"]
    shim = env.p(".pi", "agent", "extensions", "stop-that-shit.js")
    os.remove(shim)
    loud = json.loads(env.sts.run_hook("claude", json.dumps(start).encode(), store))
    text = loud["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("WARNING: Stop That Shit is not fully installed: %s is missing" % shim)
    assert "python3 sts.py doctor" in text
