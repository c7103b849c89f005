"""The adapters table (sts.ADAPTER_TOOLS) is the one place a host's tools are
listed: how a call is classified, which arguments name paths, what it runs
and where.  These tests hold it to the tools the hosts really used in the
recorded runs and to what the adapters really do with each row, so a reader
can trust the one place that shows the whole mapping."""
import glob
import json
import os
import re

import pytest

import sts
from hooks import KIT, json_nodes

HOSTS = sorted(sts.ADAPTERS)
MUTABILITIES = ("read", "write", "control", "delegate", "unknown")
RUNS = ("", "shell", "powershell", "code", "program", "agent", "input", "prompt")


def test_every_host_has_a_table_a_path_rule_and_a_tilde_rule():
    assert set(sts.ADAPTER_TOOLS) == set(HOSTS)
    assert set(sts.HOST_PATH_RULES) == set(HOSTS)
    assert set(sts._HOST_TILDE) == set(HOSTS)


@pytest.mark.parametrize("host", HOSTS)
def test_the_adapter_classifies_by_its_own_rows_of_the_table(host):
    """No second list to fall out of step: the adapter's TOOLS is the table's
    dict for its host, not a copy."""
    assert sts.ADAPTERS[host].TOOLS is sts.ADAPTER_TOOLS[host]


@pytest.mark.parametrize("host", HOSTS)
def test_every_row_names_a_handler_the_adapter_has_and_known_kinds(host):
    adapter = sts.ADAPTERS[host]
    for tool, row in sts.ADAPTER_TOOLS[host].items():
        handler, paths, runs, workdir = row
        assert handler in MUTABILITIES or (
            handler.startswith("_") and callable(getattr(adapter, handler, None))), (tool, row)
        assert isinstance(paths, tuple) and all(isinstance(p, str) and p for p in paths), tool
        assert runs in RUNS and isinstance(workdir, str), (tool, row)


def _tool_names(value, found):
    """Every tool name a recorded host event carries: `tool_name`/`toolName`,
    or `tool` beside the call's id or input (OpenCode, the Hermes probe)."""
    for node in json_nodes(value):
        if isinstance(node, dict):
            found.update(node[key] for key in ("tool_name", "toolName")
                         if isinstance(node.get(key), str))
            if isinstance(node.get("tool"), str) and ("callID" in node or "input" in node):
                found.add(node["tool"])
    return found


def _offered_in_prompt(value, found):
    """The tools Pi lists to the model under "Available tools:" in the system
    prompt it recorded (`- name: what it does`)."""
    for node in json_nodes(value):
        if isinstance(node, str) and "Available tools:" in node:
            listing = node.split("Available tools:", 1)[1].split("\n\n", 1)[0]
            found.update(re.findall(r"^- ([\w-]+):", listing, re.M))
    return found


def recorded_tools():
    """host -> the tool names its recorded runs used or offered.  Copilot's
    PascalCase runs are left out: that flavour renames the tools to Claude
    Code's, and install writes the camelCase one."""
    tools = {}
    for folder in sorted(glob.glob(os.path.join(KIT, "*-*"))):
        name = os.path.basename(folder)
        if name.endswith("-pascal"):
            continue
        found = tools.setdefault(name.split("-")[0], set())
        for path in glob.glob(os.path.join(folder, "*.jsonl")):
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        event = json.loads(line)
                        _tool_names(event, found)
                        _offered_in_prompt(event, found)
    return tools


RECORDED = recorded_tools()


def test_the_recorded_runs_cover_every_host_that_has_them():
    assert {"codex", "claude", "hermes", "opencode", "pi", "omp", "gemini", "copilot", "qwen",
            "droid", "cline"} <= {host for host, tools in RECORDED.items() if tools}
    assert {"read", "bash", "edit", "write"} <= RECORDED["pi"]   # offered, not only called


@pytest.mark.parametrize("host", sorted(RECORDED))
def test_every_tool_a_recorded_run_used_or_offered_is_in_the_table(host):
    adapter = sts.ADAPTERS[host]
    key = getattr(adapter, "tool_key", None) or adapter.canonical_tool
    missing = sorted(tool for tool in RECORDED[host] if key(tool) not in sts.ADAPTER_TOOLS[host])
    assert missing == [], host


def _rows(kind):
    return [(host, tool, row) for host in HOSTS
            for tool, row in sorted(sts.ADAPTER_TOOLS[host].items()) if row[2] == kind]


def classify(host, tool, tool_input):
    return sts.ADAPTERS[host].classify(tool, tool_input)


@pytest.mark.parametrize("host,tool,row", _rows("shell"))
def test_shell_tools_get_the_shell_analysis(host, tool, row):
    action = classify(host, tool, {"command": "sha256sum a.js > a.sha"})
    assert action["mutability"] == "write" and action["hashIntent"] is True
    assert action["shellWriteTargets"] == ["a.sha"]
    assert classify(host, tool, {"command": "ls"})["mutability"] == "read"


@pytest.mark.parametrize("host,tool,row", _rows("powershell"))
def test_powershell_tools_get_the_powershell_analysis(host, tool, row):
    action = classify(host, tool, {"command": "Get-FileHash a.js"})
    assert action["hashIntent"] is True
    assert classify(host, tool, {"command": "Remove-Item x"})["mutability"] == "write"


@pytest.mark.parametrize("host,tool,row", _rows("code"))
def test_code_tools_get_the_analysis_of_the_same_code_in_the_shell(host, tool, row):
    code = "import hashlib\nhashlib.sha256(b'x')"
    action = classify(host, tool, {"code": code, "language": "py"})
    assert action["hashIntent"] is True and action["mutability"] != "read"
    action = classify(host, tool, {"code": "import os; os.system('npm install lodash')",
                                   "language": "py"})
    assert action["dependencyIntent"] is True


@pytest.mark.parametrize("host,tool,row", _rows("program"))
def test_program_tools_are_the_same_command_through_the_shell(host, tool, row):
    action = classify(host, tool, {"op": "start", "application": "npm",
                                   "args": ["install", "lodash"]})
    assert action["dependencyIntent"] is True and action["mutability"] == "write"


@pytest.mark.parametrize("host,tool,row", _rows("agent"))
def test_agent_tools_are_delegations_or_never_countable(host, tool, row):
    action = classify(host, tool, {"prompt": "p", "description": "d", "subagent_type": "general",
                                   "goal": "g", "agent": "a", "task": "t",
                                   "tasks": [{"agent": "a", "task": "t"}], "message": "m"})
    assert action["mutability"] == "delegate" or action.get("delegationLifecycleUnproven") \
        or action.get("unboundedDelegation"), action


@pytest.mark.parametrize("host,tool,row", _rows("input") + _rows("prompt"))
def test_input_and_prompt_tools_are_never_proven_reads(host, tool, row):
    assert classify(host, tool, {})["mutability"] != "read"


@pytest.mark.parametrize("host,tool,row", [
    (host, tool, row) for host in HOSTS
    for tool, row in sorted(sts.ADAPTER_TOOLS[host].items()) if row[3]])
def test_a_working_folder_argument_belongs_to_a_tool_that_runs_something(host, tool, row):
    assert row[2] in ("shell", "powershell", "program")


def _named(arg):
    return ["guard.txt"] if arg == "paths" else "guard.txt"


# Write tools, with the other fields their input needs to be read as a write.
WRITE_INPUTS = {"content": "x", "new_string": "x", "old_string": "y", "newString": "x",
                "oldString": "y", "file_text": "x", "new_source": "x", "edits": [],
                "command": "create"}


@pytest.mark.parametrize("host,tool,arg", [
    (host, tool, arg) for host in HOSTS for tool, (handler, paths, runs, _) in
    sorted(sts.ADAPTER_TOOLS[host].items()) for arg in paths
    if ":" not in arg and "[" not in arg and handler not in ("read", "control")
    and classify(host, tool, dict(WRITE_INPUTS, **{arg: _named(arg)}))["mutability"] == "write"])
def test_every_listed_path_argument_of_a_write_tool_is_a_judged_path(host, tool, arg):
    action = classify(host, tool, dict(WRITE_INPUTS, **{arg: _named(arg)}))
    assert "guard.txt" in action.get("affectedPaths", []), (host, tool, arg, action)


def test_the_write_tools_of_every_host_are_covered_above():
    """Each host has at least one file-writing tool whose path argument is tested."""
    for host in HOSTS:
        writes = [tool for tool, (handler, paths, runs, _) in sts.ADAPTER_TOOLS[host].items()
                  if paths and handler not in ("read", "control")]
        assert writes, host
