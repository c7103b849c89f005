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
    paths, runs, _ = sts.ADAPTER_TOOLS[host][tool]
    if sts.ADAPTERS[host].TOOLS.get(tool) == "read":
        return False
    return runs in ("shell", "powershell", "code", "program") or bool(paths)


def mapped(host, tool):
    """The tool's parameters the table names: its working folder and its paths."""
    paths, _, workdir = sts.ADAPTER_TOOLS[host][tool]
    return {workdir} | {p.split(":")[0].split("[")[0] for p in paths}


def _package_texts(host):
    """(file, text) of the package's JavaScript and TypeScript declarations."""
    folder = install.host_dir(host)
    for pattern in ("node_modules/**/*.js", "node_modules/**/*.mjs", "node_modules/**/*.d.ts",
                    "venv/lib/python*/site-packages/**/*.py"):
        for path in glob.glob(os.path.join(folder, pattern), recursive=True):
            if os.path.getsize(path) > 64 * 1024 * 1024:
                continue
            with open(path, encoding="utf-8", errors="replace") as fh:
                yield path, fh.read()


def folder_parameters(host):
    """{tool: {folder parameter names}} for the host's listed tools that run
    commands or write files, as their schemas in the package declare them."""
    tools = {tool for tool in sts.ADAPTER_TOOLS[host] if _runs_or_writes(host, tool)}
    names = re.compile(r"""["'`](%s)["'`]""" % "|".join(re.escape(t) for t in sorted(tools)))
    found = {}
    for _, text in _package_texts(host):
        for hit in names.finditer(text):
            window = text[hit.end():hit.end() + WINDOW]
            # The schema of this tool ends where another listed tool's name starts.
            other = names.search(window)
            window = window[:other.start()] if other else window
            params = {m.group(1) for m in PROPERTY.finditer(window)}
            if params:
                found.setdefault(hit.group(1), set()).update(params)
    return found


@pytest.mark.parametrize("host", sorted(install.PINS))
def test_every_folder_parameter_of_a_tool_that_runs_or_writes_is_mapped(host):
    if not os.path.isdir(install.host_dir(host)):
        pytest.skip("%s %s is not installed in %s (python3 tests/e2e/install.py %s)" % (
            host, install.PINS[host][2], install.cache_root(), host))
    found = folder_parameters(host)
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
class ShellTool { static Name = "run_shell_command"; schema = { properties: {
  command: { type: "string" }, directory: { type: "string", description: "where" } } } }
class MonitorTool { static Name = "monitor"; schema = { properties: {
  command: { type: "string" }, directory: { type: "string", description: "where" },
  timeout_ms: { type: "number" } } } }
const cwd = process.cwd();
class ReadTool { static Name = "read_file"; schema = { properties: {
  file_path: { type: "string" } } } }
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
    rows = dict(sts.ADAPTER_TOOLS["qwen"], monitor=((), "shell", ""))
    monkeypatch.setitem(sts.ADAPTER_TOOLS, "qwen", rows)
    with pytest.raises(AssertionError, match="monitor"):
        test_every_folder_parameter_of_a_tool_that_runs_or_writes_is_mapped("qwen")
