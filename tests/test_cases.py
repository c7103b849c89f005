"""The Bad/Good cases (issue 8) and the `sts.py cases` replayer that runs them."""
import collections
import io
import json
import os
import re
import subprocess
import sys
from contextlib import redirect_stdout

import pytest

import sts
from hooks import ROOT

CASES_DIR = os.path.join(ROOT, "cases")
CASE_FILES = sorted(f for f in os.listdir(CASES_DIR) if f.endswith(".json"))


def load_all():
    return [sts.load_case(os.path.join(CASES_DIR, f)) for f in CASE_FILES]


def write_case(folder, name, obj):
    path = os.path.join(str(folder), name + ".json")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def hook_name(payload):
    return payload.get("hook_event_name") or payload.get("hook")


# A case that needs nothing but the Codex adapter and the contract: review mode
# and a patch.  Used to check the replayer itself.
def review_patch_case(expect):
    base = {"session_id": "s-case-test", "cwd": "{CWD}", "turn_id": "t1"}
    return {
        "host": "codex", "family": "I", "story": "A patch during a review.",
        "events": [
            dict(base, hook_event_name="UserPromptSubmit",
                 prompt="$stop-that-shit review -- look only"),
            dict(base, hook_event_name="PreToolUse", tool_name="apply_patch",
                 tool_use_id="call_1",
                 tool_input={"command": "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n"
                                        "*** End Patch\n"}),
        ],
        "expect": expect,
    }


# --- the loader ---------------------------------------------------------------

@pytest.mark.parametrize("mutate, message", [
    (lambda c: c.pop("expect"), "expect is missing"),
    (lambda c: c["expect"].update(result="blocked"), "expect.result: 'blocked' is not one of"),
    (lambda c: c["expect"].pop("code"), "expect.code: missing"),
    (lambda c: c["expect"].update(reason="X"), "unknown key 'reason'"),
    (lambda c: c.update(host="cursor"), "host 'cursor' is not one of"),
    (lambda c: c.update(family="X"), "family 'X' is not one of I, H, S, T"),
    (lambda c: c.update(story=""), "story must be one non-empty line"),
    (lambda c: c.update(story="two\nlines"), "story must be one non-empty line"),
    (lambda c: c.update(events=[]), "events must be a non-empty list"),
    (lambda c: c["events"].append("PreToolUse"), "events[2]: a host payload is a JSON object"),
    (lambda c: c["events"].append({"send": {}, "expect": {"result": "deny"}}),
     "events[2].expect.code: missing"),
    (lambda c: c["events"].append({"send": {}, "check": 1}), "unknown key 'check' next to send"),
    (lambda c: c.update(role="ugly"), "role 'ugly' is not bad or good"),
    (lambda c: c.update(pair="p1"), "pair and role go together"),
    (lambda c: c.update(colour="red"), "unknown key 'colour'"),
])
def test_loader_rejects_a_malformed_case_naming_the_problem(tmp_path, mutate, message):
    case = review_patch_case({"result": "deny", "code": "MODE_FORBIDS_MUTATION"})
    mutate(case)
    path = write_case(tmp_path, "broken", case)
    with pytest.raises(sts.CaseError) as info:
        sts.load_case(path)
    assert str(info.value).startswith("broken: ")
    assert message in str(info.value)


@pytest.mark.parametrize("text, message", [
    ("{not json", "not readable JSON"),
    ("[1, 2]", "a case is a JSON object, not list"),
])
def test_loader_rejects_what_is_not_a_case_object(tmp_path, text, message):
    path = write_case(tmp_path, "junk", text)
    with pytest.raises(sts.CaseError, match=re.escape(message)):
        sts.load_case(path)


def test_a_malformed_file_is_a_failed_row_not_a_crash(tmp_path):
    write_case(tmp_path, "junk", "{not json")
    out = io.StringIO()
    with redirect_stdout(out):
        code = sts.cmd_cases([str(tmp_path)])
    lines = out.getvalue().splitlines()
    assert code == 1
    assert re.match(r"junk\s+\?\s+-\s+malformed\s+FAIL$", lines[1])
    assert any(line.startswith("junk: not readable JSON") for line in lines)
    assert lines[-1] == "0 passed, 1 failed"


# --- the replayer ---------------------------------------------------------------

def test_a_right_expectation_passes(tmp_path):
    case = sts.load_case(write_case(tmp_path, "right", review_patch_case(
        {"result": "deny", "code": "MODE_FORBIDS_MUTATION"})))
    outcome = sts.replay_case(case)
    assert outcome.passed, outcome.problems
    assert outcome.got == "deny MODE_FORBIDS_MUTATION"


@pytest.mark.parametrize("expect, problem", [
    ({"result": "allow", "code": None}, "expected allow, got deny MODE_FORBIDS_MUTATION"),
    ({"result": "deny", "code": "HASH_NOT_AUTHORIZED"},
     "expected deny HASH_NOT_AUTHORIZED, got deny MODE_FORBIDS_MUTATION"),
    ({"result": "deny", "code": None}, "expected deny, got deny MODE_FORBIDS_MUTATION"),
])
def test_a_deliberately_wrong_expectation_fails(tmp_path, expect, problem):
    case = sts.load_case(write_case(tmp_path, "wrong", review_patch_case(expect)))
    outcome = sts.replay_case(case)
    assert not outcome.passed
    assert outcome.problems[0] == problem
    # The failing answer is shown so the author can see why.
    assert any("Reason: MODE_FORBIDS_MUTATION" in p for p in outcome.problems)


def test_a_wrong_expectation_on_an_earlier_event_fails(tmp_path):
    case = review_patch_case({"result": "deny", "code": "MODE_FORBIDS_MUTATION"})
    case["events"][0] = {"send": case["events"][0], "expect": {"result": "allow", "code": None}}
    outcome = sts.replay_case(sts.load_case(write_case(tmp_path, "early", case)))
    assert not outcome.passed
    assert outcome.problems[0].startswith("event 1: expected allow, got context")


def test_the_command_prints_a_table_and_the_count_and_fails_on_a_failure(tmp_path):
    write_case(tmp_path, "a-right", review_patch_case(
        {"result": "deny", "code": "MODE_FORBIDS_MUTATION"}))
    write_case(tmp_path, "b-wrong", review_patch_case({"result": "allow", "code": None}))
    out = io.StringIO()
    with redirect_stdout(out):
        code = sts.cmd_cases([str(tmp_path)])
    lines = out.getvalue().splitlines()
    assert code == 1
    assert lines[0].split() == ["case", "host", "expected", "got"]
    assert re.match(r"a-right\s+codex\s+deny MODE_FORBIDS_MUTAT.*PASS$", lines[1])
    assert re.match(r"b-wrong\s+codex\s+allow\s+deny MODE_FORBIDS_MUTA.*FAIL$", lines[2])
    assert lines[-1] == "1 passed, 1 failed"
    assert all(len(line) <= 80 for line in lines)


def test_the_command_exits_0_when_all_pass_and_takes_a_single_file(tmp_path):
    path = write_case(tmp_path, "only", review_patch_case(
        {"result": "deny", "code": "MODE_FORBIDS_MUTATION"}))
    out = io.StringIO()
    with redirect_stdout(out):
        assert sts.cmd_cases([path]) == 0
    assert out.getvalue().splitlines()[-1] == "1 passed, 0 failed"


def test_the_command_refuses_a_missing_folder_and_extra_arguments(tmp_path, capsys):
    assert sts.cmd_cases([str(tmp_path / "nowhere")]) == 2
    assert sts.cmd_cases(["a", "b"]) == 2
    assert "usage: sts.py cases" in capsys.readouterr().err


def test_each_case_gets_a_fresh_data_dir_and_the_environment_is_restored(tmp_path, sts_home):
    # The second case would see the first case's review contract if state leaked.
    write_case(tmp_path, "a", review_patch_case({"result": "deny", "code": "MODE_FORBIDS_MUTATION"}))
    fresh = review_patch_case({"result": "allow", "code": None})
    fresh["events"] = fresh["events"][1:]
    write_case(tmp_path, "b", fresh)
    out = io.StringIO()
    with redirect_stdout(out):
        assert sts.cmd_cases([str(tmp_path)]) == 0
    assert os.environ["STS_HOME"] == str(sts_home)
    assert not os.path.exists(str(sts_home))


def test_placeholders_are_filled_in_keys_values_and_lists():
    places = {"{STS_HOME}": "/h", "{CWD}": "/w", "{STS_PY}": "/s/sts.py"}
    filled = sts._case_fill({"a": ["{CWD}/x", {"{STS_HOME}": 1}], "b": "{STS_PY} {CWD}", "c": 2},
                            places)
    assert filled == {"a": ["/w/x", {"/h": 1}], "b": "/s/sts.py /w", "c": 2}


def test_a_placeholder_path_into_the_state_folder_reaches_the_guard(tmp_path):
    base = {"session_id": "s-tamper", "cwd": "{CWD}"}
    case = {"host": "claude", "family": "I", "story": "Agent writes into STS_HOME.",
            "events": [dict(base, hook_event_name="UserPromptSubmit",
                            prompt="$stop-that-shit change -- go"),
                       dict(base, hook_event_name="PreToolUse", tool_name="Write",
                            tool_use_id="toolu_1",
                            tool_input={"file_path": "{STS_HOME}/armed/x", "content": ""})],
            "expect": {"result": "deny", "code": "GUARD_SELF_PROTECTION"}}
    outcome = sts.replay_case(sts.load_case(write_case(tmp_path, "tamper", case)))
    assert outcome.passed, outcome.problems


# --- reading the six answer formats ----------------------------------------------

STOP = "STOP / INTENT\nThe guard answered with a permission deny.\nReason: MODE_FORBIDS_MUTATION\n"
WATCH = "WATCH / THRASH\nThe guard returned context.\nReason: REPEATED_WITHOUT_CHANGE\n"


@pytest.mark.parametrize("hook, answer, result, code", [
    ("PreToolUse", "", "allow", None),
    ("PreToolUse", json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": STOP}}), "deny", "MODE_FORBIDS_MUTATION"),
    ("PreToolUse", json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "additionalContext": WATCH}}),
     "context", "REPEATED_WITHOUT_CHANGE"),
    ("UserPromptSubmit", json.dumps({"hookSpecificOutput": {
        "hookEventName": "UserPromptSubmit",
        "additionalContext": "Stop That Shit (active): mode=review; hash=deny."}}),
     "context", None),
    ("UserPromptSubmit", json.dumps({"decision": "block", "reason":
                                     "INVALID_DIRECTIVE_TOKEN: fix is not a field"}),
     "prompt-error", "INVALID_DIRECTIVE_TOKEN"),
    ("pre_tool_call", json.dumps({"action": "block", "message": STOP}),
     "deny", "MODE_FORBIDS_MUTATION"),
    ("pre_llm_call", json.dumps({"context": "Stop That Shit (active): mode=change."}),
     "context", None),
    ("tool.execute.before", "{}", "allow", None),
    ("tool.execute.before", json.dumps({"block": True, "reason": STOP}),
     "deny", "MODE_FORBIDS_MUTATION"),
    ("tool_call", json.dumps({"context": WATCH}), "context", "REPEATED_WITHOUT_CHANGE"),
    ("input", json.dumps({"block": True, "reason": "rejected (CONFLICTING_DIRECTIVE)"}),
     "prompt-error", "CONFLICTING_DIRECTIVE"),
    ("BeforeTool", json.dumps({"decision": "deny", "reason": STOP}),
     "deny", "MODE_FORBIDS_MUTATION"),
    ("BeforeAgent", json.dumps({"decision": "block", "reason":
                                "INVALID_AGENT_LIMIT: needs a whole number"}),
     "prompt-error", "INVALID_AGENT_LIMIT"),
    ("preToolUse", json.dumps({"permissionDecision": "deny", "permissionDecisionReason": STOP}),
     "deny", "MODE_FORBIDS_MUTATION"),
    ("userPromptSubmitted", json.dumps({"additionalContext": "Stop That Shit (active): mode=x."}),
     "context", None),
    ("tool_call", "not json", "unreadable", None),
    ("tool_call", json.dumps({"decision": "approve"}), "unreadable", None),
])
def test_answers_of_every_host_reduce_to_result_and_code(hook, answer, result, code):
    got = sts.read_answer(hook, answer)
    assert (got.result, got.code) == (result, code)


# --- the shipped cases --------------------------------------------------------------

def test_every_shipped_case_loads():
    assert len(CASE_FILES) >= 48
    for case in load_all():
        assert case.pair and case.role and case.differs, case.name
        assert case.name == "%s-%s" % (case.pair, case.role)


def pairs():
    grouped = collections.defaultdict(dict)
    for case in load_all():
        grouped[case.pair][case.role] = case
    return grouped


def test_cases_come_in_bad_good_pairs_that_differ_in_one_fact():
    for pair_id, members in pairs().items():
        assert set(members) == {"bad", "good"}, pair_id
        bad, good = members["bad"], members["good"]
        # Everything that frames the pair is shared.
        assert (bad.host, bad.family, bad.differs) == (good.host, good.family, good.differs)
        assert len(bad.steps) == len(good.steps), pair_id
        assert [hook_name(s.payload) for s in bad.steps] == \
            [hook_name(s.payload) for s in good.steps], pair_id
        # One event carries the one changed fact; all others are identical.
        changed = [i for i, (b, g) in enumerate(zip(bad.steps, good.steps))
                   if b.payload != g.payload]
        assert len(changed) == 1, (pair_id, changed)
        # ... and that fact changes the outcome.
        assert bad.expect != good.expect, pair_id
        assert bad.story != good.story, pair_id


def test_the_bad_case_is_never_a_plain_allow():
    for members in pairs().values():
        bad = members["bad"]
        assert bad.expect["result"] != "allow" or bad.expect.get("audit"), bad.name


def test_pairs_cover_every_family_and_every_host_several_times():
    found = pairs()
    assert len(found) >= 24
    by_family = collections.Counter(m["bad"].family for m in found.values())
    by_host = collections.Counter(m["bad"].host for m in found.values())
    assert all(by_family[f] >= 4 for f in "IHST"), by_family
    assert all(by_host[h] >= 3 for h in sts.CASE_HOSTS), by_host
    hosts_per_family = collections.defaultdict(set)
    for members in found.values():
        hosts_per_family[members["bad"].family].add(members["bad"].host)
    assert all(hosts_per_family[f] == set(sts.CASE_HOSTS) for f in "IHST"), hosts_per_family


def test_thrash_is_only_ever_context_and_self_protection_yields_to_off():
    for members in pairs().values():
        bad, good = members["bad"], members["good"]
        if bad.family == "T":
            assert "REPEATED_WITHOUT_CHANGE" in (bad.expect["code"], bad.expect.get("audit"))
            assert bad.expect["result"] in ("context", "allow")  # never a deny
    guard = [m for m in pairs().values()
             if m["bad"].expect["code"] == "GUARD_SELF_PROTECTION"]
    assert len(guard) >= 1
    for members in guard:
        prompts = [json.dumps(s.payload) for s in members["good"].steps]
        assert any("$stop-that-shit off" in p for p in prompts)
        assert members["good"].expect["result"] == "allow"


def test_the_readme_tables_every_pair():
    with open(os.path.join(CASES_DIR, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    for pair_id, members in pairs().items():
        assert "| %s |" % pair_id in readme, pair_id
        assert members["bad"].differs in readme, pair_id


def test_all_shipped_cases_pass():
    out = io.StringIO()
    with redirect_stdout(out):
        code = sts.cmd_cases([])
    text = out.getvalue()
    assert text.splitlines()[-1] == "%d passed, 0 failed" % len(CASE_FILES), text
    assert code == 0


def test_the_cases_command_runs_from_the_terminal():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "sts.py"), "cases",
                           os.path.join(CASES_DIR, CASE_FILES[0])],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, check=False)
    last = proc.stdout.decode().splitlines()[-1]
    assert re.match(r"^\d+ passed, \d+ failed$", last)
    assert proc.returncode == (0 if last.endswith(" 0 failed") else 1)


# --- the payloads look like what the real hosts sent ------------------------------

def find_kit():
    from hooks import KIT   # the recorded payloads, vendored in tests/fixtures
    return KIT


def kit_fields():
    """(host, hook) -> the field names the real host sent, from the recorded runs."""
    kit = find_kit()
    seen = collections.defaultdict(set)
    for run in os.listdir(kit):
        host = run.split("-")[0]
        for name in ("hook-stdin.jsonl", "host-events.jsonl"):
            path = os.path.join(kit, run, name)
            if not os.path.exists(path):
                continue
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    record = json.loads(line)
                    if "stdin" in record:
                        event = record["stdin"]
                        # Copilot's camelCase stdin names no event; the kit recorded it.
                        hook = event.get("hook_event_name") or record["event"]
                        seen[(host, hook)] |= set(event)
                    elif isinstance(record.get("ev"), dict):
                        event = record["ev"]
                        seen[(host, record["name"])] |= set(event)
                        for part in ("input", "output"):
                            if isinstance(event.get(part), dict):
                                seen[(host, record["name"], part)] |= set(event[part])
    return seen


# Events no recorded run holds, with the fields the host's installed source
# sends: `droid exec` never fires UserPromptSubmit (Droid 0.225.2, its
# executeUserPromptSubmitHooks).
SOURCE_FIELDS = {
    ("droid", "UserPromptSubmit"): {"session_id", "transcript_path", "cwd", "permission_mode",
                                    "hook_event_name", "message_id", "prompt", "has_images"},
}
HERMES_STDIN = {"hook_event_name", "tool_name", "tool_input", "session_id", "cwd", "extra"}
SHIM_REQUEST = {"v", "hook", "sessionId", "cwd", "payload"}


def test_case_payloads_only_use_fields_the_real_hosts_send():
    seen = kit_fields()
    for case in load_all():
        for step in case.steps:
            event = step.payload
            if case.host in ("codex", "claude", "gemini", "qwen", "droid", "vibe"):
                known = seen[(case.host, event["hook_event_name"])] or \
                    SOURCE_FIELDS.get((case.host, event["hook_event_name"]), set())
                assert set(event) <= known, (case.name, set(event) - known)
            elif case.host == "copilot":
                # hook_event_name is what run_hook adds from the command line.
                known = seen[("copilot", event["hook_event_name"])] | {"hook_event_name"}
                assert set(event) <= known, (case.name, set(event) - known)
            elif case.host == "hermes":
                assert set(event) == HERMES_STDIN, case.name
                known = seen[("hermes", event["hook_event_name"])]
                assert set(event["extra"]) <= known, (case.name, set(event["extra"]) - known)
            else:
                assert set(event) == SHIM_REQUEST and event["v"] == 1, case.name
                body = event["payload"]
                assert isinstance(body.get("ctx"), dict), case.name
                # Kilo Code runs OpenCode's shim: the same fields as OpenCode's.
                if case.host in ("opencode", "kilo") and event["hook"] == "event":
                    # A bus event (session.created, ...) as the shim forwards it.
                    known = seen[("opencode", "event:" + body["event"]["type"])]
                    assert known and set(body["event"]) <= known, (case.name, body["event"])
                elif case.host in ("opencode", "kilo"):
                    for part in ("input", "output"):
                        known = seen[("opencode", event["hook"], part)]
                        assert set(body[part]) <= known, (case.name, part, set(body[part]) - known)
                elif (case.host, event["hook"]) in seen:
                    known = seen[(case.host, event["hook"])]
                    assert set(body["event"]) <= known, (case.name, set(body["event"]) - known)
