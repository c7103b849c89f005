"""A person asks the guard (issue 30): `check`, `log`, `explain`, status and
doctor through the real command line, `python3 sts.py ...`."""
import json
import os
import subprocess
import sys

import pytest

import sts
from hooks import deny_reason, hook

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STS_PY = os.path.join(ROOT, "sts.py")
HOSTS = ("codex", "claude", "hermes", "opencode", "pi", "omp", "gemini", "copilot", "qwen")


def sts_cli(home, *args, stdin=None, cwd=None):
    env = dict(os.environ, STS_HOME=str(home))
    return subprocess.run([sys.executable, STS_PY] + list(args), input=stdin, cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                          universal_newlines=True, timeout=60, check=False)


def tree(root):
    """Every file under root with its bytes: what `touching nothing` must keep."""
    found = {}
    for folder, _dirs, files in os.walk(str(root)):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as fh:
                found[os.path.relpath(path, str(root))] = fh.read()
    return found


def claude_prompt(session, text, cwd="/tmp/w"):
    return {"session_id": session, "cwd": cwd, "hook_event_name": "UserPromptSubmit",
            "prompt": text}


def claude_bash(session, command, cwd="/tmp/w", call="toolu_1"):
    return {"session_id": session, "cwd": cwd, "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": call}


# ---- check --------------------------------------------------------------------


def test_check_denies_with_the_hooks_lines_and_touches_no_session(tmp_path):
    home = tmp_path / "home"
    store = sts.Store(str(home))
    hook("claude", claude_prompt("s1", "$stop-that-shit change -- work"), store)
    hook("claude", claude_bash("s1", "ls"), store)
    before = tree(home)
    got = sts_cli(home, "check", "--contract", "review", "--", "git status && rm -rf build")
    assert got.returncode == 1, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0].startswith("Denied: MODE_FORBIDS_MUTATION")
    assert "Culprit: `rm -rf build`: `rm` removes `build`." in lines
    assert not any(line.startswith("Event:") for line in lines)   # nothing was audited
    assert tree(home) == before


@pytest.mark.parametrize("host", HOSTS)
def test_check_gives_one_answer_on_every_host(tmp_path, host):
    got = sts_cli(tmp_path, "check", "--host", host, "--json", "--contract", "review",
                  "--", "sed -i s/a/b/ f.txt")
    assert got.returncode == 1, got.stderr
    doc = json.loads(got.stdout)
    assert (doc["verdict"], doc["reason"], doc["host"]) == ("deny", "MODE_FORBIDS_MUTATION", host)
    assert doc["instead"] and "sed" in doc["instead"]
    assert not os.path.exists(str(tmp_path / "runtime"))


def test_check_allows_with_exit_0_and_reports_a_missing_contract(tmp_path):
    got = sts_cli(tmp_path, "check", "--contract", "review", "--", "git status")
    assert got.returncode == 0 and got.stdout.startswith("Allowed: WITHIN_CONTRACT"), got
    bare = sts_cli(tmp_path, "check", "--", "rm -rf build")
    assert bare.returncode == 0
    assert "CONTROL_INACTIVE" in bare.stdout and "none yet" in bare.stdout


def test_check_without_a_contract_uses_the_default_a_new_session_gets(tmp_path):
    assert sts_cli(tmp_path, "default", "review").returncode == 0
    before = tree(tmp_path)
    got = sts_cli(tmp_path, "check", "--", "rm -rf build")
    assert got.returncode == 1 and "MODE_FORBIDS_MUTATION" in got.stdout
    assert tree(tmp_path) == before


def test_check_a_file_tool_against_the_files_lock(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    tmp_path = tmp_path / "home"   # the data dir, outside the work folder
    out = sts_cli(tmp_path, "check", "--contract", "change files=src/**", "--tool", "Write",
                  "--path", "docs/a.md", cwd=str(work))
    assert out.returncode == 1
    assert "Culprit: `docs/a.md` is outside the lock `files=src/**`." in out.stdout
    inside = sts_cli(tmp_path, "check", "--host", "copilot", "--contract", "change files=src/**",
                     "--path", "src/a.py", cwd=str(work))
    assert inside.returncode == 0, inside.stdout
    dep = sts_cli(tmp_path, "check", "--json", "--contract", "change", "--path", "package.json",
                  "--content", '{"dependencies": {"left-pad": "1.3.0"}}', cwd=str(work))
    assert json.loads(dep.stdout)["reason"] == "DEPENDENCY_NOT_AUTHORIZED"


def test_check_reads_a_host_event_and_the_sessions_own_contract(tmp_path):
    store = sts.Store(str(tmp_path))
    hook("claude", claude_prompt("s2", "$stop-that-shit review -- look"), store)
    before = tree(tmp_path)
    event = json.dumps(claude_bash("s2", "touch x"))
    got = sts_cli(tmp_path, "check", stdin=event)
    assert got.returncode == 1 and "MODE_FORBIDS_MUTATION" in got.stdout
    # The same event under a contract given on the command line.
    assert sts_cli(tmp_path, "check", "--contract", "change", stdin=event).returncode == 0
    assert tree(tmp_path) == before


def test_check_keeps_the_real_data_dir_guarded(tmp_path):
    home = tmp_path / "home"
    got = sts_cli(home, "check", "--json", "--contract", "change", "--", "rm -rf %s" % home)
    assert json.loads(got.stdout)["reason"] == "GUARD_SELF_PROTECTION"
    assert not home.exists()


@pytest.mark.parametrize("args", [
    [], ["--host", "clade", "--", "ls"], ["--contract", "bogus=1", "--", "ls"],
    ["--tool", "Write"], ["--frob", "--", "ls"], ["--input", "{not json", "--tool", "x"],
])
def test_check_usage_errors_exit_2(tmp_path, args):
    got = sts_cli(tmp_path, "check", *args, stdin="")
    assert got.returncode == 2
    assert got.stderr.strip() and not got.stdout


@pytest.mark.parametrize("contract", ["review", pytest.param("change files=src/**",
                                                             marks=pytest.mark.slow)])
def test_check_gives_the_hooks_verdict_on_every_corpus_line(ram_path, capsys, monkeypatch,
                                                             contract):
    """Every analysis-corpus line: `check` (main's command line, in this
    process for speed) answers as the hook answers the same Claude Code call
    in a real session: the same verdict, exit code and Culprit lines."""
    from test_analysis import ROWS
    work = str(ram_path / "w")
    os.makedirs(work)
    home = str(ram_path / "home")
    monkeypatch.setenv("STS_HOME", home)   # the data dir both guard
    store = sts.Store(home)
    hook("claude", claude_prompt("corpus", "$stop-that-shit %s -- go" % contract, work), store)
    mismatches = []
    for number, _label, _tags, command in ROWS:
        answer = hook("claude", claude_bash("corpus", command, work, "t%d" % number), store)
        text = deny_reason(answer) or ""
        context = (answer or {}).get("hookSpecificOutput", {}).get("additionalContext", "")
        hook_verdict = "deny" if text else "note" if "WATCH /" in context else "allow"
        if hook_verdict == "note":
            continue   # a thrash note needs the session's history, which check never has
        culprit = [ln for ln in text.splitlines() if ln.startswith("Culprit: ")]
        code = sts.main(["check", "--json", "--cwd", work, "--contract", contract, "--", command])
        doc = json.loads(capsys.readouterr().out)
        mine = [ln for ln in (doc["message"] or "").splitlines() if ln.startswith("Culprit: ")]
        if (doc["verdict"], code, mine) != (hook_verdict, int(hook_verdict == "deny"), culprit):
            mismatches.append("%d %s: check %s %s, hook %s %s" % (
                number, command, doc["verdict"], mine, hook_verdict, culprit))
    assert len(ROWS) > 2000 and not mismatches, "\n".join(mismatches[:20])


# ---- log, explain, status: a denied call looked up -------------------------------


def _denied_session(home, session="s-log", command="git status && rm -rf build"):
    """A review session with one allowed and one denied shell call, through the
    real hook process; returns the deny text."""
    from hooks import hook_process
    for payload in (claude_prompt(session, "$stop-that-shit review -- look"),
                    claude_bash(session, "ls", call="t1"),
                    claude_bash(session, command, call="t2")):
        proc = hook_process("claude", payload, home)
        assert proc.returncode == 0
    return deny_reason(json.loads(proc.stdout))


def test_log_explain_and_status_show_a_denied_call(tmp_path):
    text = _denied_session(tmp_path)
    event_id = next(ln[7:] for ln in text.splitlines() if ln.startswith("Event: "))
    got = sts_cli(tmp_path, "log")
    assert got.returncode == 0, got.stderr
    rows = [ln for ln in got.stdout.splitlines() if ln.startswith("  ") and "claude" in ln]
    assert len(rows) == 2
    key = sts.session_key("s-log")
    assert rows[0].split()[:6] == [rows[0].split()[0], event_id[4:12], "claude", key[:8],
                                   "deny", "MODE_FORBIDS_MUTATION"]
    assert rows[0].endswith("`rm -rf build`: `rm` removes `build`.")
    assert rows[1].split()[4:6] == ["allow", "WITHIN_CONTRACT"]
    # explain takes a unique start of the id, with or without evt_
    for given in (event_id, event_id[:12], event_id[4:12].upper() + "…"):
        out = sts_cli(tmp_path, "explain", given)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0] == "Stop That Shit event " + event_id
        assert "Host: claude, session %s (host id s-log)" % key in lines
        assert "Tool: Bash (write)" in lines
        assert "Command: git status && rm -rf build" in lines
        assert "Contract then: review guard deps=ask hash=deny undo=ask (armed)" in lines
        assert "Verdict: denied, MODE_FORBIDS_MUTATION" in lines
        assert "Culprit: `rm -rf build`: `rm` removes `build`." in lines
    status = sts_cli(tmp_path, "status", "--session", "s-log")
    assert status.returncode == 0
    assert "    `rm -rf build`: `rm` removes `build`." in status.stdout.splitlines()
    assert all(len(line) <= 80 for line in status.stdout.splitlines())
    for word in ("Host effect", "unobserved", "unlimited", "Full counts"):
        assert word not in status.stdout


def test_log_filters_and_json(tmp_path):
    _denied_session(tmp_path, "s-a")
    _denied_session(tmp_path, "s-b", "touch x")
    doc = json.loads(sts_cli(tmp_path, "log", "--json", "--verdict", "deny").stdout)
    assert [e["decision"]["reasonCode"] for e in doc["events"]] == ["MODE_FORBIDS_MUTATION"] * 2
    assert [e["shown"]["command"] for e in doc["events"]] == ["touch x", "git status && rm -rf build"]
    one = json.loads(sts_cli(tmp_path, "log", "--json", "--session", "s-a").stdout)["events"]
    assert {e["sessionKey"] for e in one} == {sts.session_key("s-a")} and len(one) == 2
    assert len(json.loads(sts_cli(tmp_path, "log", "1", "--json").stdout)["events"]) == 1
    allowed = json.loads(sts_cli(tmp_path, "log", "--json", "--verdict", "allow").stdout)
    assert all("shown" not in e for e in allowed["events"])   # an allowed call keeps no text
    assert sts_cli(tmp_path, "log", "--session", "nobody").returncode == 1
    assert sts_cli(tmp_path, "log", "--verdict", "maybe").returncode == 2


def test_explain_an_ambiguous_or_unknown_prefix_is_an_error(tmp_path):
    store = sts.Store(str(tmp_path))
    ids = []
    for n in range(40):   # enough ids that some share a first hex digit
        rec = {"schemaVersion": 1, "eventId": "evt_%08x-0000-4000-8000-000000000000" % (n * 7),
               "occurredAt": "2026-01-01T00:00:%02d.000Z" % n, "sessionKey": "a" * 24,
               "controlState": "armed", "action": {"toolName": "Bash", "mutability": "read"},
               "decision": {"policyOutcome": "allow", "responseOutcome": "none",
                            "reasonCode": "WITHIN_CONTRACT"}}
        store.append_audit("a" * 24, rec)
        ids.append(rec["eventId"])
    got = sts_cli(tmp_path, "explain", "evt_0000")
    assert got.returncode == 1 and "events start with evt_0000" in got.stderr
    got = sts_cli(tmp_path, "explain", "ffff0000")
    assert got.returncode == 1 and "not found" in got.stderr
    assert sts_cli(tmp_path, "explain", ids[5][:16]).stdout.startswith(
        "Stop That Shit event " + ids[5])


# ---- a misspelt host name, and doctor ---------------------------------------------


def test_a_hook_with_an_unknown_host_name_does_not_block_the_host(tmp_path):
    """`sts.py clade` in Claude Code's settings: exit 2 would block every
    prompt; the hook answers nothing, exits 1 (shown, not blocking) with one line."""
    event = json.dumps(claude_prompt("s", "$stop-that-shit review -- x"))
    for argv in ([STS_PY, "clade"],
                 ["-I", "-S", "-c", "import sys; sys.path.insert(0, %r); import sts; "
                  "sys.exit(sts.main())" % ROOT, "clade"]):
        proc = subprocess.run([sys.executable] + argv, input=event, universal_newlines=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                              env=dict(os.environ, STS_HOME=str(tmp_path)))
        assert proc.returncode == 1 and proc.stdout == ""
        assert proc.stderr.count("\n") == 1 and "'clade'" in proc.stderr
        assert "did you mean claude?" in proc.stderr and "doctor" in proc.stderr
    assert not os.path.exists(str(tmp_path / "sessions"))


def doctor(home, state, *args):
    env = dict(os.environ, HOME=str(home), STS_HOME=str(state))
    for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "PI_CODING_AGENT_DIR",
                "HERMES_HOME", "GEMINI_CLI_HOME", "QWEN_HOME", "COPILOT_HOME"):
        env.pop(var, None)
    return subprocess.run([sys.executable, STS_PY] + list(args), env=env, cwd=str(home),
                          universal_newlines=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120)


def test_doctor_after_uninstall_says_not_wired_not_fail(tmp_path):
    home, state = tmp_path / "home", tmp_path / "state"
    (home / ".claude").mkdir(parents=True)   # Claude Code's own folder stays after uninstall
    (home / ".claude" / "settings.json").write_text('{"theme": "dark"}\n')
    assert doctor(home, state, "install", "claude").returncode == 0
    assert doctor(home, state, "uninstall", "claude").returncode == 0
    got = doctor(home, state, "doctor", "--json")
    doc = json.loads(got.stdout)
    claude = [c for c in doc["checks"] if c["host"] == "claude"]
    assert [c["status"] for c in claude] == ["OFF"] and "not wired" in claude[0]["text"]
    assert got.returncode == 0 and doc["counts"]["FAIL"] == 0
    text = doctor(home, state, "doctor").stdout
    assert "OFF  claude   not wired" in text and text.rstrip().endswith("1 not wired")


def test_doctor_names_a_wrong_host_name_and_a_missing_copilot_event(tmp_path):
    home, state = tmp_path / "home", tmp_path / "state"
    home.mkdir()
    assert doctor(home, state, "install", "claude").returncode == 0
    assert doctor(home, state, "install", "copilot").returncode == 0
    cfg = home / ".claude" / "settings.json"
    cfg.write_text(cfg.read_text().replace(" claude\"", " clade\"", 1))
    copilot = [p for p in (home / ".copilot").rglob("*.json") if "sts" in p.read_text()]
    assert len(copilot) == 1
    data = json.loads(copilot[0].read_text())
    hook = data["hooks"]["preToolUse"][0]
    hook["bash"] = hook["bash"].rsplit(" ", 1)[0]   # the event name dropped
    copilot[0].write_text(json.dumps(data))
    got = doctor(home, state, "doctor", "--json")
    assert got.returncode == 1
    fails = [c for c in json.loads(got.stdout)["checks"] if c["status"] == "FAIL"]
    assert any(c["host"] == "claude" and "'clade'" in c["text"] and "did you mean claude" in
               c["text"] for c in fails), fails
    assert any(c["host"] == "copilot" and "with no event name under preToolUse" in c["text"]
               for c in fails), fails


def test_doctor_reports_a_damaged_session_file_and_what_to_do(tmp_path):
    home, state = tmp_path / "home", tmp_path / "state"
    home.mkdir()
    store = sts.Store(str(state))
    hook("claude", claude_prompt("good", "$stop-that-shit review -- x"), store)
    bad = state / "sessions" / (sts.session_key("bad") + ".json")
    bad.write_text("{not json")
    got = doctor(home, state, "doctor", "--json")
    checks = json.loads(got.stdout)["checks"]
    damaged = [c for c in checks if "session file" in c["text"] and c["status"] == "FAIL"]
    assert len(damaged) == 1 and str(bad) in damaged[0]["text"]
    assert "STATE_DAMAGED" in damaged[0]["text"] and ".damaged-" in damaged[0]["fix"]
    assert got.returncode == 1


def test_doctor_sees_a_folder_that_cannot_hold_the_bytecode_cache(tmp_path):
    """A read-only checkout (here: a __pycache__ that is a file, which stops
    root as well): install adds -X pycache_prefix= under the state folder,
    and doctor says so."""
    from hooks import place_hooked_sts
    app = tmp_path / "app"
    app.mkdir()
    place_hooked_sts(str(app / "sts.py"))
    import shutil
    shutil.rmtree(str(app / "__pycache__"), ignore_errors=True)
    (app / "__pycache__").write_text("not a folder")
    home, state = tmp_path / "home", tmp_path / "state"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), STS_HOME=str(state))
    run = lambda *a: subprocess.run([sys.executable, str(app / "sts.py")] + list(a), env=env,  # noqa: E731
                                    universal_newlines=True, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, timeout=120)
    assert run("install", "claude").returncode == 0
    prefix = "pycache_prefix=" + str(state / "pycache")
    assert prefix in (home / ".claude" / "settings.json").read_text()
    checks = json.loads(run("doctor", "--json").stdout)["checks"]
    said = [c for c in checks if "bytecode cache" in c["text"]]
    assert len(said) == 1 and str(state / "pycache") in said[0]["text"]
    assert "-X pycache_prefix=" in said[0]["text"]


# ---- a denial says what to type, and typing it allows the call -------------------


@pytest.mark.parametrize("contract,tool_input", [
    ("review", {"command": "git status && rm -rf build"}),
    ("answer", {"command": "git branch -D old"}),
    ("change files=src/**", {"command": "cp a docs/b.md"}),   # a shell write: files=**
    ("change files=src/**|README.md", {"file_path": "docs/y.txt", "content": "y"}),
    ("change files=src/**", {"file_path": "/etc/hosts.d/x", "content": "y"}),
    ("change", {"command": "npm install left-pad"}),
    ("change", {"command": "sha256sum README.md"}),
])
def test_the_allow_line_is_a_directive_that_allows_the_call(tmp_path, contract, tool_input):
    work = tmp_path / "w"
    (work / "src").mkdir(parents=True)
    store = sts.Store(str(tmp_path / "home"))
    hook("claude", claude_prompt("s-allow", "$stop-that-shit %s -- go" % contract, str(work)),
         store)
    call = dict(claude_bash("s-allow", "", str(work)), tool_input=tool_input)
    if "file_path" in tool_input:
        call["tool_name"] = "Write"
    # Each denial's Allow line, sent as a prompt, gets the call past that rule;
    # a call that two rules stop (`git branch -D` in answer: a change, and one
    # that cannot be undone) needs the second line too.
    typed = []
    for n in range(3):
        text = deny_reason(hook("claude", dict(call, tool_use_id="a%d" % n), store))
        if text is None:
            break
        last = text.splitlines()[-1]
        assert last.startswith("Allow: the user can send `$stop-that-shit ") and \
            last.endswith("` as a prompt to allow this."), text
        typed.append(last.split("`")[1])
        hook("claude", claude_prompt("s-allow", typed[-1], str(work)), store)
    assert text is None and 1 <= len(typed) <= 2, typed


def test_no_allow_line_where_no_contract_change_allows_it(tmp_path):
    """Self-protection is the user's to lift by hand (its Next line says how)."""
    home = tmp_path / "home"
    got = sts_cli(home, "check", "--contract", "change", "--", "rm -rf %s" % home)
    assert "GUARD_SELF_PROTECTION" in got.stdout and "\nAllow:" not in got.stdout


def test_explain_shows_the_code_of_a_denied_code_tool_call(tmp_path):
    """A code tool (Hermes execute_code) has no command line: the audit keeps
    its program, `explain` shows it, and the Culprit quotes the line."""
    from test_adapter_soundness import Hermes
    home = tmp_path / "home"
    store = sts.Store(str(home))
    h = Hermes(str(tmp_path / "w"))
    h.say(store, "$stop-that-shit change -- tidy up")
    code = "import hashlib\nprint(hashlib.sha256(b'x').hexdigest())"
    text = h.blocked(h.call(store, "execute_code", {"code": code}))
    assert "HASH_NOT_AUTHORIZED" in text
    assert "Culprit: `import hashlib` adds hashing." in text
    event_id = next(ln[7:] for ln in text.splitlines() if ln.startswith("Event: "))
    out = sts_cli(home, "explain", event_id[:12])
    assert out.returncode == 0, out.stderr
    assert "Code: " + code in out.stdout
