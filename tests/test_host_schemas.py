"""Each pinned host's own tool schemas, read from its installed package, against
the adapters table: a tool that runs commands or writes files and takes a
folder-like parameter (`directory`, `dir_path`, `cwd`, `workdir`, ...) must
have that parameter as its working-folder argument in sts.ADAPTER_TOOLS, or
its relative targets would be judged in the wrong folder (Qwen Code's
`monitor` runs in `directory`).

The packages are the ones the e2e suite installs (tests/e2e/install.py, in
STS_E2E_CACHE).  A host whose package is not there is skipped, saying so;
`python3 tests/e2e/install.py HOST` installs it.
"""
import glob
import os
import re
import sys

import pytest

import sts

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2e"))
import install  # noqa: E402  (the e2e suite's pins and cache)

FOLDER_PARAMS = ("directory", "dir_path", "dirPath", "cwd", "workdir", "work_dir",
                 "working_directory", "workingDirectory", "working_dir", "folder")
# A property of a schema: JSON Schema in JS (`directory: { type: "string"`,
# `"cwd": {"type"`), zod (`cwd: z.string()`), TypeBox (`cwd: Type.Optional(`)
# or a TypeScript declaration (`cwd?: string;`).
_PROPERTY = r"""(?:"|\b)(%s)"?\??\s*:\s*(?:\{\s*"?(?:type|description)"?\s*:|z\.|Type\.|string\b)"""
PROPERTY = re.compile(_PROPERTY % "|".join(FOLDER_PARAMS))
WINDOW = 3000   # how far after a tool's name its schema is looked for


def _runs_or_writes(host, tool):
    handler, paths, runs, _ = sts.ADAPTER_TOOLS[host][tool]
    if handler == "read":
        return False
    return runs in ("shell", "powershell", "code", "program") or bool(paths)


def mapped(host, tool):
    """The tool's parameters the table names: its working folder and its paths."""
    _, paths, _, workdir = sts.ADAPTER_TOOLS[host][tool]
    return {workdir} | {p.split(":")[0].split("[")[0] for p in paths}


def _package_texts(host):
    """(file, text) of the package's JavaScript and TypeScript declarations."""
    folder = install.host_dir(host)
    for pattern in ("node_modules/**/*.js", "node_modules/**/*.mjs", "node_modules/**/*.d.ts",
                    "venv/lib/python*/site-packages/**/*.py"):
        for path in glob.glob(os.path.join(folder, pattern), recursive=True):
            if not os.path.isfile(path) or os.path.getsize(path) > 64 * 1024 * 1024:
                continue
            with open(path, encoding="utf-8", errors="replace") as fh:
                yield path, fh.read()


# Where a tool's schema is declared, in the ways the packages do it (names and
# keys may be constants: `name: SHELL_TOOL_NAME`, `[PARAM_DIR_PATH]: {`):
# a class whose `static Name` names the tool and whose constructor passes
# the schema (Gemini CLI, Qwen Code); a TypeScript `interface <Tool>Input`
# (Claude Code's sdk-tools.d.ts); an object or call that names the tool
# (`name: "bash"`, `"name": "terminal"`, `define("bash", ...)`: OpenCode, Pi,
# Oh My Pi, Hermes, Copilot CLI) followed by its parameters.
CLASS_NAME = re.compile(r"static Name = ([\w.]+);")
INTERFACE = re.compile(r"export interface (\w+)Input \{(.*?)\n\}", re.S)
NAMED = re.compile(r"""(?:\bname["']?\s*:\s*|define\(\s*)(?:["'`]([\w.-]+)["'`]|([A-Z][A-Z0-9_]*)\b)""")
COMPUTED = re.compile(r"\[([A-Z][A-Z0-9_]*)\]\s*:")


CONSTANT = re.compile(r"""\b([A-Z][A-Z0-9_]*)\s*[:=]\s*["']([a-z][\w.-]*)["']""")


def _declarations(text, tools, constants):
    """(tool, schema text) for every declaration of a listed tool in `text`;
    `constants`: NAME -> strings, from every file (a bundle defines its tool
    names in one chunk and the tools in others)."""
    for hit in CLASS_NAME.finditer(text):
        key = hit.group(1).rpartition(".")[2]
        for tool in constants.get(key, set()) & tools:
            yield tool, text[text.rfind("class ", 0, hit.start()):hit.start()]
    for hit in INTERFACE.finditer(text):
        name = hit.group(1)
        tool = name if name in tools else name[4:] if name.startswith("File") else None
        if tool in tools:
            yield tool, hit.group(2)
    every = list(NAMED.finditer(text))    # any declaration ends the one before it
    for k, hit in enumerate(every):
        names = {hit.group(1)} if hit.group(1) else constants.get(hit.group(2), set())
        stop = every[k + 1].start() if k + 1 < len(every) else len(text)
        for tool in names & tools:
            yield tool, text[hit.end():min(stop, hit.end() + WINDOW)]


def folder_parameters(host):
    """{tool: {folder parameter names}} for the host's listed tools that run
    commands or write files, as their schemas in the package declare them."""
    tools = {tool for tool in sts.ADAPTER_TOOLS[host] if _runs_or_writes(host, tool)}
    texts = [text for _, text in _package_texts(host)]
    constants = {}
    for text in texts:
        for key, value in CONSTANT.findall(text):
            if value in tools or value in FOLDER_PARAMS:
                constants.setdefault(key, set()).add(value)
    found = {}
    for text in texts:
        for tool, schema in _declarations(text, tools, constants):
            # `[PARAM_DIR_PATH]: {` (a computed key) reads as the name it holds.
            schema = COMPUTED.sub(lambda m: "%s:" % min(constants.get(m.group(1), {"x"})),
                                  schema)
            params = {m.group(1) for m in PROPERTY.finditer(schema)}
            if params:
                found.setdefault(tool, set()).update(params)
    return found


@pytest.mark.parametrize("host", sorted(install.PINS))
def test_every_folder_parameter_of_a_tool_that_runs_or_writes_is_mapped(host):
    if not os.path.isdir(install.host_dir(host)):
        pytest.skip("%s %s is not installed in %s (python3 tests/e2e/install.py %s)" % (
            host, install.PINS[host][2], install.cache_root(), host))
    found = folder_parameters(host)
    known = {tool for tool, row in sts.ADAPTER_TOOLS[host].items() if row[3]}
    if known and not known & set(found):
        # The table knows folder arguments the reader does not see: it cannot
        # read this package's schemas (a compiled binary, another schema
        # style), so it can say nothing about the others either.
        pytest.skip("%s: no schema of %s found in the package; nothing checked" % (
            host, sorted(known)))
    unmapped = {tool: sorted(params - mapped(host, tool)) for tool, params in found.items()
                if params - mapped(host, tool)}
    print("%s: folder parameters found %s" % (host, {t: sorted(p) for t, p in found.items()}))
    assert not unmapped, "%s: tools whose folder parameter the table does not map: %s" % (
        host, unmapped)


def test_the_property_pattern_reads_each_schema_style():
    """The reader finds a folder parameter in every way the hosts write schemas."""
    for text in ('directory: {\n  type: "string",', '"dir_path": {"type": "string"}',
                 "cwd: z.string().optional()", "cwd: Type.Optional(Type.String())",
                 "workdir?: string;", '"working_directory": {"description": "x"'):
        assert PROPERTY.search(text), text
    for text in ("directory = path.join(a, b)", "const cwd = process.cwd();",
                 "if (workdir) {", '"cwd"'):
        assert not PROPERTY.search(text), text


FAKE_BUNDLE = '''
var ToolNames = { SHELL: "run_shell_command", MONITOR: "monitor", READ: "read_file" };
var ShellTool = class _ShellTool extends Base { constructor(c) { super(_ShellTool.Name, {
  properties: { command: { type: "string" }, directory: { type: "string" } } }); }
  static Name = ToolNames.SHELL; };
var MonitorTool = class _MonitorTool extends Base { constructor(c) { super(_MonitorTool.Name, {
  properties: { command: { type: "string" }, directory: { type: "string", description: "x" },
  max_events: { type: "integer" } } }); }
  static Name = ToolNames.MONITOR; };
const cwd = process.cwd();
var ReadTool = class _ReadTool extends Base { constructor(c) { super(_ReadTool.Name, {
  properties: { file_path: { type: "string" } } }); }
  static Name = ToolNames.READ; };
'''


def test_the_reader_finds_an_unmapped_folder_parameter(tmp_path, monkeypatch):
    """What the test above would say of the table before Qwen's `monitor` row
    named `directory`: run on a package laid out as the e2e cache lays it out."""
    monkeypatch.setenv("STS_E2E_CACHE", str(tmp_path))
    bundle = tmp_path / ("qwen-%s" % install.PINS["qwen"][2]) / "node_modules" / "pkg"
    bundle.mkdir(parents=True)
    (bundle / "cli.js").write_text(FAKE_BUNDLE)
    assert folder_parameters("qwen") == {"run_shell_command": {"directory"},
                                         "monitor": {"directory"}}
    test_every_folder_parameter_of_a_tool_that_runs_or_writes_is_mapped("qwen")
    rows = dict(sts.ADAPTER_TOOLS["qwen"], monitor=("_monitor", (), "shell", ""))
    monkeypatch.setitem(sts.ADAPTER_TOOLS, "qwen", rows)
    with pytest.raises(AssertionError, match="monitor"):
        test_every_folder_parameter_of_a_tool_that_runs_or_writes_is_mapped("qwen")
