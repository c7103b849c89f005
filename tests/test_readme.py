"""README: the Quick start and "Differences from the original tool", kept honest.

The Quick start is the first thing a new user runs, so its commands run here
on a fresh home and must answer as their comments say.  People who move from
the original JavaScript tool read the list of differences first, so a line in
it must stay true.  Each test below quotes the line it keeps (the quote must
still be in the list) and shows the behaviour through the real hook runner,
with events in the shape the hosts sent (tests/fixtures/payloads).
"""
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

import sts
from hooks import (ROOT, claude_kit, context_text, deny_reason, hook, hook_process, kit_events,
                   reason_code)
from hooks_shim import first, hermes_envelope

SECTION_TITLE = "## Differences from the original tool"


def section():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    start = text.index(SECTION_TITLE)
    end = text.find("\n## ", start + len(SECTION_TITLE))
    return text[start:end if end >= 0 else len(text)]


def listed(quote):
    """The README list still says `quote` (so the test below checks a real line)."""
    assert quote in section(), "README no longer lists: %s" % quote


def rows():
    return [line for line in section().splitlines()
            if line.startswith("| ") and not line.startswith(("| sts |", "| --- |"))]


# ---- the quick start ---------------------------------------------------------

def quick_start_commands():
    """The `python3 sts.py …` lines of the Quick start's first shell block."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    block = text.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("python3 sts.py ")]


def test_the_quick_start_does_what_its_comments_say(tmp_path):
    # A fresh machine: an empty home and data folder, and no host variables
    # that would send `install` elsewhere.  Each line runs in order; a comment
    # naming a reason code means the line is a denied `check` with that code.
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "LANG": "C.UTF-8",
           "STS_HOME": str(tmp_path / "state")}
    commands = quick_start_commands()
    assert [c.split()[2] for c in commands] == ["demo", "check", "install", "doctor", "check",
                                                "default", "check"]
    # The import form, as the hooks run it: Python then loads cached bytecode
    # instead of compiling sts.py for each line.
    code = "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % ROOT
    for line in commands:
        words = shlex.split(line, comments=True)
        if words[2] == "demo":
            continue   # tests/test_cli.py runs the demo
        proc = subprocess.run([sys.executable, "-c", code] + words[2:],
                              cwd=work, env=env, capture_output=True, text=True, timeout=60)
        reason = re.search(r"#.*?\b([A-Z][A-Z_]{5,})\b", line)
        if reason:
            assert proc.returncode == 1 and ("Denied: " + reason.group(1)) in proc.stdout, line
        else:
            assert proc.returncode == 0, (line, proc.stdout, proc.stderr)
    assert (home / ".claude" / "settings.json").is_file()


# ---- proven reads: pointers into the corpus ------------------------------------

def test_every_corpus_section_the_readme_names_exists():
    # The README lists no reads itself: it names sections of the labelled
    # corpus, so each quoted name must open (or, ending in "…", start) one.
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    table = text.split("## Proven reads", 1)[1].split("\n\n| What |", 1)[1].split("\n\n", 1)[0]
    names = re.findall(r'"([^"]+)"', "\n".join(row.split(" | ")[-1] for row in
                                                 table.splitlines()[2:]))
    with open(os.path.join(ROOT, "tests", "analysis_corpus.txt"), encoding="utf-8") as fh:
        sections = [line[3:] for line in fh if line.startswith("## ")]
    assert len(names) >= 10
    for name in names:
        start = name[:-1].rstrip() if name.endswith("…") else None
        assert any(s.rstrip("\n") == name or (start and s.startswith(start))
                   or (not start and s.startswith(name + ":")) or
                   (not start and s.startswith(name + " ")) for s in sections), name


# ---- the list itself ---------------------------------------------------------

def test_every_line_says_what_and_why():
    found = rows()
    assert len(found) >= 40
    for line in found:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        assert len(cells) == 2 and all(cells), line


def test_the_list_names_no_document_outside_the_repository():
    from test_style import _CITATION
    assert _CITATION.findall(section()) == []


# ---- Claude Code events, as Claude Code 2.1.332 sent them --------------------

def say(store, text):
    prompt, _ = claude_kit()
    return hook("claude", dict(prompt, prompt=text), store)


def call(store, tool_name, tool_input, call_id="toolu_t1"):
    _, tool = claude_kit()
    event = dict(tool, tool_name=tool_name, tool_input=tool_input, tool_use_id=call_id)
    return hook("claude", event, store)


def bash(store, command, call_id="toolu_t1"):
    return call(store, "Bash", {"command": command}, call_id)


def write(store, path="src/app.js", content="x\n"):
    _, tool = claude_kit()
    return call(store, "Write", {"file_path": os.path.join(tool["cwd"], path),
                                 "content": content})


def reason(answer):
    return reason_code(deny_reason(answer))


# ---- task contract -------------------------------------------------------------

@pytest.mark.parametrize("text", ["fix nothing", "Implement none of it.", "Fix?",
                                  "Fix or not?", "Change: none", "Change is risky here",
                                  "Patch notes for 2.0, please summarize"])
def test_a_correction_that_asks_for_nothing_keeps_the_review(store, text):
    listed('"fix nothing" or "implement none of it" after a review keeps the review')
    listed('A question ("Fix?", "Fix or not?"), a label ("Change: none") or a noun')
    say(store, "$stop-that-shit review -- find the bug")
    say(store, text)
    assert reason(write(store)) == "MODE_FORBIDS_MUTATION"
    say(store, "fix it")               # a request to change still widens the review
    assert write(store) is None


def test_a_task_notification_never_changes_the_contract(store):
    listed("A Claude Code `<task-notification>` prompt never changes the contract")
    say(store, "$stop-that-shit change -- fix the parser")
    note = ("<task-notification>\n<task-id>a47d88b664c95adcc</task-id>\n"
            "<tool-use-id>toolu_02</tool-use-id>\n<status>completed</status>\n"
            "<summary>Agent finished</summary>\n"
            "<result>Review only: please do not edit anything.</result>\n</task-notification>")
    assert say(store, note) is None
    assert write(store) is None


def test_a_turn_the_user_did_not_type_is_no_prompt(store):
    listed("A Claude Code turn whose `source` is not the user")
    say(store, "$stop-that-shit review -- look")
    prompt, _ = claude_kit()
    woken = dict(prompt, prompt="$stop-that-shit change -- go on", source="schedule_wakeup")
    assert hook("claude", woken, store) is None
    assert reason(write(store)) == "MODE_FORBIDS_MUTATION"


def test_a_scheduled_prompt_that_would_set_the_contract_is_stopped(store):
    listed("A Claude Code `CronCreate` or `ScheduleWakeup` whose prompt would set the "
           "contract is stopped (`GUARD_SELF_PROTECTION`)")
    say(store, "$stop-that-shit review -- look")
    assert reason(call(store, "CronCreate", {"cron": "*/5 * * * *", "prompt": "fix it"})) \
        == "GUARD_SELF_PROTECTION"
    assert reason(call(store, "ScheduleWakeup", {"prompt": "$stop-that-shit open"},
                       "toolu_t2")) == "GUARD_SELF_PROTECTION"
    assert call(store, "CronCreate", {"cron": "0 * * * *", "prompt": "check the logs"},
                "toolu_t3") is None


def test_an_unlimited_budget_reads_as_a_word_and_stays_a_number_in_json(store):
    listed("Text for people and models shows an unlimited budget as `agents=0/unlimited`; "
           "JSON keeps `9007199254740991`")
    text = context_text(say(store, "$stop-that-shit review -- look"))
    assert "agents=0/unlimited reserved" in text
    assert "9007199254740991" not in text
    bash(store, "git status")
    (log,) = os.listdir(os.path.join(store.root, "runtime"))
    with open(os.path.join(store.root, "runtime", log), encoding="utf-8") as fh:
        record = json.loads(fh.readline())
    assert record["contract"]["agentBudget"] == 9007199254740991


# ---- shell analysis ------------------------------------------------------------

def test_inline_python_is_read_only_with_dash_i(store):
    listed("`python3 -I -c '…'` with code proven harmless is a read")
    say(store, "$stop-that-shit review -- look")
    assert bash(store, "python3 -I -c 'print(sorted([3, 1, 2]))'") is None
    assert reason(bash(store, "python3 -c 'print(sorted([3, 1, 2]))'")) \
        == "MUTABILITY_UNPROVEN"


def test_a_carriage_return_stays_inside_a_bash_word(store):
    listed("a carriage return stays inside a bash word")
    say(store, "$stop-that-shit review -- look")
    # The original split here and proved two reads; bash runs one git diff
    # whose --output overwrites victim.txt.
    line = "git diff --no-index a.txt b.txt\rls --output=victim.txt"
    assert reason(bash(store, line)) == "MODE_FORBIDS_MUTATION"


@pytest.mark.parametrize("command", ["sudo rm x", "bash -c 'rm -rf x'", "find . -delete",
                                     "git branch scratch", "sed -i 's/a/b/' a.txt"])
def test_a_write_behind_a_wrapper_is_named_a_write(store, command):
    listed("Writes behind wrappers, shells and options are writes")
    say(store, "$stop-that-shit review -- look")
    assert reason(bash(store, command)) == "MODE_FORBIDS_MUTATION"


def test_a_digest_printer_is_stopped_as_hashing(store):
    listed("A digest printer (`sha256sum f`) is a read with hash intent")
    say(store, "$stop-that-shit review -- look")
    assert reason(bash(store, "sha256sum dist/app.zip")) == "HASH_NOT_AUTHORIZED"
    say(store, "$stop-that-shit hash=allow")
    assert bash(store, "sha256sum dist/app.zip", "toolu_t2") is None


# ---- hash and dependency intent ------------------------------------------------

@pytest.mark.parametrize("command", ["npm install", "npm ci", "pip install -r requirements.txt",
                                     "bundle install"])
def test_restoring_declared_dependencies_passes_deps_deny(store, command):
    listed("Restoring what the manifest declares is no dependency change")
    say(store, "$stop-that-shit change deps=deny -- build it")
    assert bash(store, command) is None
    assert reason(bash(store, "npm install lodash", "toolu_t2")) == "DEPENDENCY_NOT_AUTHORIZED"


def test_a_doc_file_is_not_scanned_for_hashing(store):
    listed("Doc and data files (`.md`, `.txt`, `.json`, …) are not scanned for hashing")
    say(store, "$stop-that-shit change -- document the cache")
    code = "const key = createHash('sha256').update(url).digest('hex');\n"
    assert write(store, "docs/cache.md", "Keys are made like this:\n\n" + code) is None
    assert reason(write(store, "src/cache.js", code)) == "HASH_NOT_AUTHORIZED"


def test_a_patch_to_a_doc_file_is_not_scanned_for_hashing(store):
    listed("in a patch neither")
    events = kit_events("codex-patch-deny-json")
    prompt = next(e for e in events if e["hook_event_name"] == "UserPromptSubmit")
    tool = next(e for e in events if e["hook_event_name"] == "PreToolUse")
    hook("codex", dict(prompt, prompt="$stop-that-shit change -- notes"), store)
    patch = ("*** Begin Patch\n*** Update File: %s\n@@\n+Use createHash('sha256') here.\n"
             "*** End Patch\n")
    doc = dict(tool, tool_input={"command": patch % "README.md"})
    assert hook("codex", doc, store) is None
    code = dict(tool, tool_use_id="call_9", tool_input={"command": patch % "src/a.js"})
    assert reason(hook("codex", code, store)) == "HASH_NOT_AUTHORIZED"


def test_an_edit_that_keeps_a_hash_call_is_not_new_hashing(store):
    listed("An edit that keeps an existing hash call is not new hashing")
    say(store, "$stop-that-shit change -- fix the cache key")
    _, tool = claude_kit()
    path = os.path.join(tool["cwd"], "src/cache.js")
    kept = {"file_path": path, "old_string": "createHash('sha256').update(a)",
            "new_string": "createHash('sha256').update(b)"}
    assert call(store, "Edit", kept) is None
    added = dict(kept, old_string="update(a)", new_string="createHash('md5').update(a)")
    assert reason(call(store, "Edit", added, "toolu_t2")) == "HASH_NOT_AUTHORIZED"


# ---- decision and message ------------------------------------------------------

def test_the_message_keeps_the_original_lines_and_adds_culprit_and_instead(sts_home):
    listed("The STOP/WATCH message adds `Culprit:` (the part of the call that decided) and, "
           "where a read-only way exists, `Instead:`, just before `Next:`")
    prompt, tool = claude_kit("bash")
    # A real hook process, the way a host runs it.
    hook_process("claude", dict(prompt, prompt="$stop-that-shit review -- look"), sts_home)
    proc = hook_process("claude", dict(tool, tool_input={"command": "sed -i 's/a/b/' a.txt"}),
                        sts_home)
    text = deny_reason(json.loads(proc.stdout))
    heads = [line.split(":")[0] if ":" in line else line for line in text.splitlines()]
    assert heads == ["STOP / INTENT", "The guard answered with a permission deny.", "Reason",
                     "Detail", "Code", "State", "Event", "Culprit", "Instead", "Next", "Allow"]
    assert text.splitlines()[-1] == ("Allow: the user can send `$stop-that-shit change` as a "
                                     "prompt to allow this.")
    assert "`sed -i`" in text.splitlines()[7]


def test_thrash_is_a_note_never_a_deny(store):
    listed("Thrash (`T`): the same read or test command three times with no write between")
    say(store, "$stop-that-shit review -- look")
    assert bash(store, "git status") is None
    assert bash(store, "git status") is None
    third = bash(store, "git status")
    assert deny_reason(third) is None
    assert context_text(third).startswith("WATCH / THRASH\n")


def test_a_write_to_a_path_the_guard_cannot_establish_is_stopped_while_armed(store):
    listed("While armed, a shell line that writes to a path the guard cannot establish")
    say(store, "$stop-that-shit open -- anything goes")
    assert reason(bash(store, 'cp notes.txt "$OUT"')) == "GUARD_SELF_PROTECTION"
    assert bash(store, "cp notes.txt build/notes.txt", "toolu_t2") is None


def test_a_shell_target_outside_files_is_named_outside(store):
    listed("Under `files=`, a shell line's write targets are checked")
    say(store, "$stop-that-shit change files=src/** -- go")
    assert reason(bash(store, "echo x > lib/out.txt")) == "PATH_OUTSIDE_CONTRACT"
    assert bash(store, "echo x > src/out.txt", "toolu_t2") is None
    assert bash(store, "sed -i s/a/b/ src/out.txt && cp src/out.txt src/b.txt", "toolu_t3") \
        is None
    unproven = bash(store, "make -C src", "toolu_t4")
    assert reason(unproven) == "WRITE_PATH_UNPROVEN"
    assert "`$stop-that-shit change files=**`" in deny_reason(unproven)


def test_files_globs_as_people_write_them(store):
    listed("`files=` globs match as git's do")
    say(store, "$stop-that-shit change files=src/*.py -- go")
    assert bash(store, "echo x > src/a.py") is None
    assert reason(bash(store, "echo x > src/a.txt", "toolu_t2")) == "PATH_OUTSIDE_CONTRACT"
    say(store, "$stop-that-shit change files=src/**,docs/** -- go")
    assert reason(bash(store, "echo x > docs/a.md", "toolu_t3")) == "PATH_OUTSIDE_CONTRACT"


def test_rm_without_recursion_writes_the_file_only(store):
    listed("`rm f`, `unlink f`, `chmod 600 f` (no recursive flag) write `f` only")
    say(store, "$stop-that-shit change files=src/a.js -- go")
    assert bash(store, "rm src/a.js") is None
    assert reason(bash(store, "rm -r src/a.js", "toolu_t2")) is None


def test_files_dot_star_star_is_the_whole_tree(store):
    listed("`files=./**` lets writes with no named path through, like `files=**`")
    say(store, "$stop-that-shit change files=src/** -- go")
    assert reason(bash(store, "make build")) == "WRITE_PATH_UNPROVEN"
    say(store, "$stop-that-shit change files=./** -- go")
    assert bash(store, "make build") is None


def test_a_delegation_that_cannot_be_counted_is_stopped_under_a_limit_only(store):
    listed("is stopped only under a finite `agents=N`; with no limit it passes")
    say(store, "$stop-that-shit change -- go")
    assert call(store, "Workflow", {}, "toolu_w1") is None
    say(store, "$stop-that-shit agents=3")
    assert reason(call(store, "Workflow", {}, "toolu_w2")) == "UNBOUNDED_DELEGATION"


def test_an_agent_started_from_the_shell_cannot_be_counted(store):
    listed("A coding agent started from the shell (`claude -p … &`, `codex exec`")
    say(store, "$stop-that-shit change -- go")
    assert bash(store, "claude -p 'write the tests' &") is None   # no limit: it runs
    say(store, "$stop-that-shit agents=2")
    assert reason(bash(store, "claude -p 'write the tests' &", "toolu_t2")) \
        == "UNBOUNDED_DELEGATION"


# ---- hosts ---------------------------------------------------------------------

def test_claude_task_is_a_delegation(store):
    listed("Claude Code `Task` is a delegation, like `Agent`")
    prompt, agent = claude_kit("agent")
    hook("claude", dict(prompt, prompt="$stop-that-shit change agents=0 -- go"), store)
    task = dict(agent, tool_name="Task", tool_use_id="toolu_task")
    assert reason(hook("claude", task, store)) == "AGENT_BUDGET_EXHAUSTED"


def test_codex_goal_tools_are_not_writes(store):
    listed("Codex `get_goal` is a read, `create_goal` and `update_goal` controls")
    events = kit_events("codex-shell-deny-json")
    prompt = next(e for e in events if e["hook_event_name"] == "UserPromptSubmit")
    tool = next(e for e in events if e["hook_event_name"] == "PreToolUse")
    hook("codex", dict(prompt, prompt="$stop-that-shit review -- look"), store)
    for name in ("get_goal", "create_goal", "update_goal"):
        assert hook("codex", dict(tool, tool_name=name, tool_input={"goal": "x"}), store) is None
    # Typed into a program the hook cannot name: it may write anything, the
    # guard's files included (see input_action), so self-protection stops it first.
    stdin = dict(tool, tool_name="write_stdin", tool_input={"chars": "y\n"})
    assert reason(hook("codex", stdin, store)) == "GUARD_SELF_PROTECTION"


def hermes(hook_name, pred=None):
    return hermes_envelope(hook_name, first("hermes-deny", hook_name, pred))


def test_hermes_watch_note_is_audited_and_not_sent(store):
    listed("A watch note for a Hermes `pre_tool_call` is audited (`context_returned`) "
           "and not sent")
    prompt = hermes("pre_llm_call")
    prompt["extra"]["user_message"] = "$stop-that-shit watch review -- look"
    hook("hermes", prompt, store)
    write_file = hermes("pre_tool_call", lambda ev: ev["tool_name"] == "write_file")
    write_file["session_id"] = prompt["session_id"]
    assert hook("hermes", write_file, store) is None
    (log,) = os.listdir(os.path.join(store.root, "runtime"))
    with open(os.path.join(store.root, "runtime", log), encoding="utf-8") as fh:
        (record,) = [json.loads(line) for line in fh]
    assert record["decision"]["reasonCode"] == "MODE_FORBIDS_MUTATION"
    assert record["decision"]["responseOutcome"] == "context_returned"


def test_hermes_search_and_skill_views_are_reads(store):
    listed("Hermes `session_search`, `skill_view` and `skills_list` are reads")
    prompt = hermes("pre_llm_call")
    prompt["extra"]["user_message"] = "$stop-that-shit review -- look"
    hook("hermes", prompt, store)
    base = hermes("pre_tool_call", lambda ev: ev["tool_name"] == "write_file")
    base["session_id"] = prompt["session_id"]
    for name, args in (("session_search", {"query": "x"}), ("skill_view", {"name": "x"}),
                       ("skills_list", {})):
        assert hook("hermes", dict(base, tool_name=name, tool_input=args), store) is None
    memory = dict(base, tool_name="memory", tool_input={"action": "add"})
    assert hook("hermes", memory, store)["action"] == "block"


def test_more_reads_that_agents_run(store):
    listed("`docker compose logs` (a daemon read, like `docker ps`)")
    say(store, "$stop-that-shit review -- look")
    for number, command in enumerate(["docker compose logs --tail 50 web",
                                      "curl -s -X GET https://example.com/api",
                                      "curl -I -x http://proxy:3128 https://example.com",
                                      "git log -i --grep=fix --oneline",
                                      "tshark -r cap.pcap -Y http"]):
        assert reason(bash(store, command, "toolu_r%d" % number)) is None, command
    for number, command in enumerate(["curl -X POST https://example.com/api",
                                      "tshark -r cap.pcap -w out.pcap",
                                      "tshark -r cap.pcap -X lua_script:x.lua"]):
        assert reason(bash(store, command, "toolu_s%d" % number)) is not None, command
