"""The adapters table (sts.ADAPTER_TOOLS) says what every tool of every host
touches; these tests hold it to what the adapters really do, so a reader can
trust the one place that shows the whole mapping."""
import pytest

import sts

HOSTS = sorted(sts.ADAPTERS)


def test_every_host_has_a_table_a_path_rule_and_a_tilde_rule():
    assert set(sts.ADAPTER_TOOLS) == set(HOSTS)
    assert set(sts.HOST_PATH_RULES) == set(HOSTS)
    assert set(sts._HOST_TILDE) == set(HOSTS)


@pytest.mark.parametrize("host", HOSTS)
def test_the_table_lists_exactly_the_tools_the_adapter_classifies(host):
    adapter = sts.ADAPTERS[host]
    assert set(sts.ADAPTER_TOOLS[host]) == set(adapter.TOOLS)


def _rows(kind):
    return [(host, tool, facts) for host in HOSTS
            for tool, facts in sorted(sts.ADAPTER_TOOLS[host].items()) if facts[1] == kind]


def classify(host, tool, tool_input):
    return sts.ADAPTERS[host].classify(tool, tool_input)


@pytest.mark.parametrize("host,tool,facts", _rows("shell"))
def test_shell_tools_get_the_shell_analysis(host, tool, facts):
    action = classify(host, tool, {"command": "sha256sum a.js > a.sha"})
    assert action["mutability"] == "write" and action["hashIntent"] is True
    assert action["shellWriteTargets"] == ["a.sha"]
    assert classify(host, tool, {"command": "ls"})["mutability"] == "read"


@pytest.mark.parametrize("host,tool,facts", _rows("powershell"))
def test_powershell_tools_get_the_powershell_analysis(host, tool, facts):
    action = classify(host, tool, {"command": "Get-FileHash a.js"})
    assert action["hashIntent"] is True
    assert classify(host, tool, {"command": "Remove-Item x"})["mutability"] == "write"


@pytest.mark.parametrize("host,tool,facts", _rows("code"))
def test_code_tools_get_the_analysis_of_the_same_code_in_the_shell(host, tool, facts):
    code = "import hashlib\nhashlib.sha256(b'x')"
    action = classify(host, tool, {"code": code, "language": "py"})
    assert action["hashIntent"] is True and action["mutability"] != "read"
    action = classify(host, tool, {"code": "import os; os.system('npm install lodash')",
                                   "language": "py"})
    assert action["dependencyIntent"] is True


@pytest.mark.parametrize("host,tool,facts", _rows("program"))
def test_program_tools_are_the_same_command_through_the_shell(host, tool, facts):
    action = classify(host, tool, {"op": "start", "application": "npm",
                                   "args": ["install", "lodash"]})
    assert action["dependencyIntent"] is True and action["mutability"] == "write"


@pytest.mark.parametrize("host,tool,facts", _rows("agent"))
def test_agent_tools_are_delegations_or_never_countable(host, tool, facts):
    action = classify(host, tool, {"prompt": "p", "description": "d", "subagent_type": "general",
                                   "goal": "g", "agent": "a", "task": "t",
                                   "tasks": [{"agent": "a", "task": "t"}], "message": "m"})
    assert action["mutability"] == "delegate" or action.get("delegationLifecycleUnproven") \
        or action.get("unboundedDelegation"), action


@pytest.mark.parametrize("host,tool,facts", _rows("input") + _rows("prompt"))
def test_input_and_prompt_tools_are_never_proven_reads(host, tool, facts):
    assert classify(host, tool, {})["mutability"] != "read"


@pytest.mark.parametrize("host,tool,facts", [
    row for row in _rows("shell") + _rows("powershell") + _rows("program") if row[2][2]])
def test_a_working_folder_argument_belongs_to_a_tool_that_runs_something(host, tool, facts):
    assert facts[1] in ("shell", "powershell", "program")


def _named(arg):
    return ["guard.txt"] if arg == "paths" else "guard.txt"


# Write tools, with the other fields their input needs to be read as a write.
WRITE_INPUTS = {"content": "x", "new_string": "x", "old_string": "y", "newString": "x",
                "oldString": "y", "file_text": "x", "new_source": "x", "edits": [],
                "command": "create"}


@pytest.mark.parametrize("host,tool,arg", [
    (host, tool, arg) for host in HOSTS for tool, (paths, runs, _) in
    sorted(sts.ADAPTER_TOOLS[host].items()) for arg in paths
    if ":" not in arg and "[" not in arg
    and sts.ADAPTERS[host].TOOLS[tool] not in ("read", "control")
    and classify(host, tool, dict(WRITE_INPUTS, **{arg: _named(arg)}))["mutability"] == "write"])
def test_every_listed_path_argument_of_a_write_tool_is_a_judged_path(host, tool, arg):
    action = classify(host, tool, dict(WRITE_INPUTS, **{arg: _named(arg)}))
    assert "guard.txt" in action.get("affectedPaths", []), (host, tool, arg, action)


def test_the_write_tools_of_every_host_are_covered_above():
    """Each host has at least one file-writing tool whose path argument is tested."""
    for host in HOSTS:
        writes = [tool for tool, (paths, runs, _) in sts.ADAPTER_TOOLS[host].items()
                  if paths and sts.ADAPTERS[host].TOOLS[tool] not in ("read", "control")]
        assert writes, host
