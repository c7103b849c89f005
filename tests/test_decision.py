"""The decision procedure: the ordered checks (the first that matches decides),
files= matching, self-protection, thrash and the STOP / WATCH message."""
import os

import pytest

import sts

MAX = sts.MAX_SAFE_INTEGER


def make_state(mode="change", level="guard", **contract):
    state = sts.default_state()
    contract.setdefault("source", "directive")
    state["contract"].update(mode=mode, level=level, **contract)
    return state


def act(mutability="read", name="Tool", **fields):
    if mutability == "delegate" or fields.get("delegation_lifecycle_unproven"):
        fields.setdefault("id", "call-1")
    return sts.Action(name=name, mutability=mutability, **fields)


def run(action, state, *, declared=True, **kw):
    return sts.decide(action, state, action_id=kw.pop("action_id", action.id),
                      declared=declared, **kw)


def reserve(state, action_id, count=1, **extra):
    action = act("delegate", id=action_id, delegation_count=count, **extra)
    sts.admit(state["delegation"], action, action_id, True)


RECOVERY = {"code": "STATE_DAMAGED", "message": "The session state file cannot be read."}
LOCK_DAMAGED = {"code": "STS_LOCK_DAMAGED", "message": "The session lock file is damaged."}


def recovery_state():
    state = make_state("review", "guard", source="recovery")
    state["delegation"]["unresolved"]["state:damaged"] = "state_unavailable"
    return state


def directive_error_state():
    state = make_state()
    state["directiveError"] = {"code": "INVALID_DIRECTIVE_TOKEN", "token": "fix",
                               "message": "Unknown directive field."}
    return state


def duplicate_state():
    state = make_state()
    reserve(state, "dup")
    return state


def unresolved_state():
    state = make_state(agentBudget=5)
    state["delegation"]["unresolved"]["old"] = "legacy_protocol"
    return state


def full_state():
    state = make_state(agentBudget=1)
    reserve(state, "first")
    return state


# code, state factory, action, decide kwargs, family, outcome when armed
REACHABLE = [
    ("RECOVERY_READ_ONLY", recovery_state, act("read"), {"storage_error": RECOVERY},
     None, "allow"),
    ("STATE_DAMAGED", recovery_state, act("write"), {"storage_error": RECOVERY},
     "I", "deny_and_explain"),
    ("STS_LOCK_DAMAGED", recovery_state, act("write"), {"storage_error": LOCK_DAMAGED},
     "I", "deny_and_explain"),
    ("GUARD_SELF_PROTECTION", make_state, act("write", affected_paths=["/guard/data/x.json"]),
     {"protected_paths": ["/guard/data"]}, "I", "deny_and_explain"),
    ("CONTROL_INACTIVE", lambda: make_state("unconfirmed", "watch"), act("write"), {},
     None, "allow"),
    ("INVALID_DIRECTIVE", directive_error_state, act("delegate"), {}, "S", "deny_and_explain"),
    ("LIFECYCLE_PROTOCOL_REQUIRED", lambda: make_state(agentBudget=3), act("unknown"),
     {"declared": False}, "S", "deny_and_explain"),
    ("MODE_FORBIDS_MUTATION", lambda: make_state("review"), act("write"), {},
     "I", "deny_and_explain"),
    ("MUTABILITY_UNPROVEN", lambda: make_state("answer"), act("unknown"), {},
     "I", "require_user_approval"),
    ("IRREVERSIBLE_ACTION", make_state,
     act("write", irreversible="`git reset --hard` discards uncommitted changes"), {},
     "I", "require_user_approval"),
    ("HASH_NOT_AUTHORIZED", make_state, act("write", hash_intent=True), {},
     "H", "deny_and_explain"),
    ("HYPOTHETICAL_UNREACHABLE", make_state, act("write", reachability="unreachable"), {},
     "H", "report_and_defer"),
    ("WRITE_PATH_UNPROVEN", lambda: make_state(allowedPaths=["src/**"]), act("write"), {},
     "S", "require_user_approval"),
    ("PATH_OUTSIDE_CONTRACT", lambda: make_state(allowedPaths=["src/**"]),
     act("write", affected_paths=["lib/a.js"]), {}, "S", "deny_and_explain"),
    ("DEPENDENCY_NOT_AUTHORIZED", make_state, act("write", dependency_intent=True), {},
     "S", "require_user_approval"),
    ("UNBOUNDED_DELEGATION", lambda: make_state(agentBudget=4),
     act("delegate", unbounded_delegation=True, delegation_count=0), {},
     "S", "deny_and_explain"),
    ("DUPLICATE_ACTION_ID", duplicate_state, act("delegate", id="dup"), {},
     "S", "deny_and_explain"),
    ("DELEGATION_STATE_UNPROVEN", unresolved_state, act("delegate"), {},
     "S", "deny_and_explain"),
    ("DELEGATION_LIFECYCLE_UNPROVEN", lambda: make_state(agentBudget=2),
     act("control", delegation_lifecycle_unproven=True), {}, "S", "deny_and_explain"),
    ("AGENT_BUDGET_EXHAUSTED", full_state, act("delegate"), {}, "S", "deny_and_explain"),
    ("UNAPPROVED_SCOPE_EXPANSION", make_state, act("write", authorization="unapproved_expansion"),
     {}, "S", "require_user_approval"),
    ("REPEATED_WITHOUT_CHANGE", make_state, act("unknown"),
     {"thrash_repeats": sts.THRASH_REPEAT_LIMIT}, "T", "report_and_defer"),
    ("WITHIN_CONTRACT", make_state, act("write"), {}, None, "allow"),
]


@pytest.mark.parametrize("code,factory,action,kwargs,family,outcome", REACHABLE,
                         ids=[r[0] for r in REACHABLE])
def test_every_reason_code_is_reachable(code, factory, action, kwargs, family, outcome):
    decision = run(action, factory(), **dict(kwargs))
    assert (decision.code, decision.family, decision.outcome) == (code, family, outcome)
    if outcome != "allow":
        assert decision.detail and decision.next


WATCH_LEVEL = [r for r in REACHABLE if r[0] not in (
    "RECOVERY_READ_ONLY", "STATE_DAMAGED", "STS_LOCK_DAMAGED", "CONTROL_INACTIVE",
    "WITHIN_CONTRACT")]


@pytest.mark.parametrize("code,factory,action,kwargs,family,outcome", WATCH_LEVEL,
                         ids=[r[0] for r in WATCH_LEVEL])
def test_watch_level_only_reports(code, factory, action, kwargs, family, outcome):
    state = factory()
    state["contract"]["level"] = "watch"
    decision = run(action, state, **dict(kwargs))
    assert (decision.code, decision.outcome) == (code, "report_and_defer")


def test_lock_behaves_like_guard():
    for code, factory, action, kwargs, family, outcome in REACHABLE[3:]:
        state = factory()
        if state["contract"]["level"] == "guard":
            state["contract"]["level"] = "lock"
        assert run(action, state, **dict(kwargs)).outcome == outcome, code


def test_recovery_denies_everything_but_reads_and_plain_controls_at_every_level():
    for level in ("watch", "guard", "off"):
        state = recovery_state()
        state["contract"]["level"] = level
        assert run(act("control"), state, storage_error=RECOVERY).code == "RECOVERY_READ_ONLY"
        unproven = act("control", delegation_lifecycle_unproven=True)
        decision = run(unproven, state, storage_error=RECOVERY)
        assert (decision.code, decision.outcome) == ("STATE_DAMAGED", "deny_and_explain")
        assert decision.detail == RECOVERY["message"]
        assert run(act("delegate"), state, storage_error=LOCK_DAMAGED).code == "STS_LOCK_DAMAGED"
    # An adapter's own storage code (Oh My Pi) is decided as STATE_DAMAGED.
    forced = {"code": "PARENT_LINK_DAMAGED", "message": "parent link unreadable"}
    assert run(act("write"), recovery_state(), storage_error=forced).code == "STATE_DAMAGED"
    lock = run(act("write"), recovery_state(), storage_error=LOCK_DAMAGED)
    state = run(act("write"), recovery_state(), storage_error=RECOVERY)
    assert lock.next != state.next


def test_off_and_unconfirmed_allow_everything():
    for mode, level in (("review", "off"), ("unconfirmed", "watch"), ("unconfirmed", "off")):
        state = make_state(mode, level, agentBudget=0, hashPolicy="deny")
        for action in (act("write", hash_intent=True), act("delegate", unbounded_delegation=True)):
            decision = run(action, state, declared=False)
            assert (decision.code, decision.outcome) == ("CONTROL_INACTIVE", "allow")


# ---- order ------------------------------------------------------------------


def test_in_review_a_hashing_write_is_intent_and_a_hashing_read_is_hash():
    state = make_state("review")
    assert run(act("write", hash_intent=True), state).family == "I"
    decision = run(act("read", hash_intent=True), state)
    assert (decision.code, decision.family) == ("HASH_NOT_AUTHORIZED", "H")


def test_hash_beats_file_scope():
    state = make_state(allowedPaths=["src/**"])
    decision = run(act("write", hash_intent=True, affected_paths=["lib/x.py"]), state)
    assert decision.code == "HASH_NOT_AUTHORIZED"
    assert run(act("write", hash_intent=True), state).code == "HASH_NOT_AUTHORIZED"


def test_hash_and_dependency_policies():
    write = act("write", hash_intent=True, dependency_intent=True)
    assert run(write, make_state(hashPolicy="ask")).outcome == "require_user_approval"
    assert run(write, make_state(hashPolicy="deny")).outcome == "deny_and_explain"
    decision = run(write, make_state(hashPolicy="allow", dependencyPolicy="deny"))
    assert (decision.code, decision.outcome) == ("DEPENDENCY_NOT_AUTHORIZED", "deny_and_explain")
    decision = run(write, make_state(hashPolicy="allow", dependencyPolicy="ask"))
    assert decision.outcome == "require_user_approval"
    decision = run(write, make_state(hashPolicy="allow", dependencyPolicy="allow"))
    assert decision.code == "WITHIN_CONTRACT"
    assert "hash=ask" in run(write, make_state(hashPolicy="ask")).detail


GONE = "`git clean -fdx` deletes untracked files, which git never had"


def test_undo_policy_decides_an_irreversible_action():
    """ask asks, deny denies, allow skips the row and the later rows judge the call."""
    gone = act("write", irreversible=GONE, hash_intent=True)
    assert run(gone, make_state()).outcome == "require_user_approval"   # the default: ask
    assert run(gone, make_state(undoPolicy="ask")).outcome == "require_user_approval"
    decision = run(gone, make_state(undoPolicy="deny"))
    assert (decision.code, decision.outcome) == ("IRREVERSIBLE_ACTION", "deny_and_explain")
    assert "undo=deny" in decision.detail and "undo=allow" in decision.next
    assert run(gone, make_state(undoPolicy="allow")).code == "HASH_NOT_AUTHORIZED"
    assert run(act("write", irreversible=GONE), make_state(undoPolicy="allow")).code \
        == "WITHIN_CONTRACT"
    # Recoverable work is not this row's business, whatever the policy.
    assert run(act("write"), make_state(undoPolicy="deny")).code == "WITHIN_CONTRACT"
    # In every armed mode that allows changes; a read-only mode answers first.
    for mode in ("change", "open"):
        assert run(gone, make_state(mode)).code == "IRREVERSIBLE_ACTION"
    for mode in ("review", "answer", "monitor"):
        assert run(gone, make_state(mode)).code == "MODE_FORBIDS_MUTATION"
    # Unarmed: nothing to enforce (the original tool's behaviour without a directive).
    assert run(gone, make_state("unconfirmed", "watch")).code == "CONTROL_INACTIVE"
    assert run(gone, make_state(level="off")).code == "CONTROL_INACTIVE"


def test_irreversible_outranks_the_boundary_and_names_its_culprit():
    state = make_state(allowedPaths=["src/**"])
    gone = act("write", irreversible=GONE, affected_paths=["lib/a.js"], command="git clean -fdx")
    decision = run(gone, state)
    assert decision.code == "IRREVERSIBLE_ACTION"
    assert sts.decision_culprit(gone, decision, ["src/**"]) == "Culprit: %s." % GONE
    state["contract"]["undoPolicy"] = "allow"
    assert run(gone, state).code == "PATH_OUTSIDE_CONTRACT"


def test_agents_zero_denies_count_one_but_passes_count_zero():
    state = make_state(agentBudget=0)
    assert run(act("delegate"), state).code == "AGENT_BUDGET_EXHAUSTED"
    assert run(act("delegate", delegation_count=0), state).code == "WITHIN_CONTRACT"


def test_delegation_is_allowed_in_review_and_answer():
    for mode in ("review", "answer", "monitor"):
        decision = run(act("delegate"), make_state(mode, agentBudget=2))
        assert decision.code == "WITHIN_CONTRACT"


def test_budget_counts_reserved_units_and_names_numbers():
    state = make_state(agentBudget=3)
    reserve(state, "a", count=2)
    assert run(act("delegate", id="b"), state).code == "WITHIN_CONTRACT"
    decision = run(act("delegate", id="b", delegation_count=2), state)
    assert decision.code == "AGENT_BUDGET_EXHAUSTED"
    assert "3" in decision.detail and "2 unit" in decision.detail
    plain_next = decision.next
    state["delegation"]["reservations"]["reservation:a"]["resultUnknown"] = True
    assert run(act("delegate", id="b", delegation_count=2), state).next != plain_next


def test_invalid_directive_stops_only_delegation_and_avoids_double_period():
    state = directive_error_state()
    assert run(act("write"), state).code == "WITHIN_CONTRACT"
    decision = run(act("delegate"), state)
    assert decision.detail.endswith("Unknown directive field.")
    assert ".." not in decision.detail
    state["directiveError"] = {"code": "INVALID_AGENT_LIMIT", "token": "agents", "message": ""}
    assert "INVALID_AGENT_LIMIT" in run(act("delegate"), state).detail
    state["directiveError"] = {"message": None}
    assert "unknown directive error" in run(act("delegate"), state).detail


def test_invalid_directive_comes_before_legacy_and_mode():
    state = directive_error_state()
    state["contract"].update(mode="review", agentBudget=1)
    assert run(act("delegate"), state, declared=False).code == "INVALID_DIRECTIVE"


def test_legacy_only_under_finite_budget_and_only_for_delegate_control_unknown():
    finite = make_state(agentBudget=2)
    assert run(act("read"), finite, declared=False).code == "WITHIN_CONTRACT"
    assert run(act("write"), finite, declared=False).code == "WITHIN_CONTRACT"
    for mut in ("delegate", "control", "unknown"):
        assert run(act(mut), finite, declared=False).code == "LIFECYCLE_PROTOCOL_REQUIRED"
    assert run(act("control"), make_state(), declared=False).code == "WITHIN_CONTRACT"


def test_mode_checks_append_the_analysis_sentence():
    state = make_state("review")
    decision = run(act("unknown", analysis_reason="shell_redirection"), state)
    assert decision.detail.endswith(sts.ANALYSIS_REASONS["shell_redirection"])
    assert "review" in decision.detail
    decision = run(act("write", analysis_reason="git_output_file"), state)
    assert decision.detail.endswith(sts.ANALYSIS_REASONS["git_output_file"])
    # Only the mode checks carry it.
    decision = run(act("unknown", analysis_reason="shell_redirection"),
                   make_state(allowedPaths=["a"]))
    assert decision.code == "WRITE_PATH_UNPROVEN"
    assert sts.ANALYSIS_REASONS["shell_redirection"] not in decision.detail


def test_control_and_read_pass_read_only_modes():
    for mut in ("read", "control"):
        assert run(act(mut), make_state("review")).code == "WITHIN_CONTRACT"


def test_unreachable_reports_at_every_armed_level_after_hash():
    state = make_state()
    decision = run(act("write", reachability="unreachable"), state)
    assert decision.outcome == "report_and_defer"
    assert run(act("write", reachability="unreachable", hash_intent=True), state).code == \
        "HASH_NOT_AUTHORIZED"


def test_unbounded_delegation_needs_a_finite_budget():
    # Under the unlimited default it is allowed (and admitted as unresolved by the
    # ledger); under any finite budget it is denied whenever armed.
    unbounded = act("delegate", unbounded_delegation=True)
    assert run(unbounded, make_state()).code == "WITHIN_CONTRACT"
    assert run(unbounded, make_state(agentBudget=10)).code == "UNBOUNDED_DELEGATION"


def test_scope_checks_in_order():
    state = make_state(agentBudget=1)
    reserve(state, "dup")
    state["delegation"]["unresolved"]["dup"] = "reused_action_id"
    duplicate = act("delegate", id="dup", unbounded_delegation=True)
    assert run(duplicate, state).code == "UNBOUNDED_DELEGATION"
    duplicate.unbounded_delegation = False
    assert run(duplicate, state).code == "DUPLICATE_ACTION_ID"
    assert run(act("delegate", id="new"), state).code == "DELEGATION_STATE_UNPROVEN"
    del state["delegation"]["unresolved"]["dup"]
    lifecycle = act("delegate", id="new", delegation_lifecycle_unproven=True)
    assert run(lifecycle, state).code == "DELEGATION_LIFECYCLE_UNPROVEN"
    assert run(act("delegate", id="new"), state).code == "AGENT_BUDGET_EXHAUSTED"


def test_unresolved_reasons_only_matter_under_finite_budget():
    state = make_state()
    state["delegation"]["unresolved"]["x"] = "unversioned_resume"
    assert run(act("delegate"), state).code == "WITHIN_CONTRACT"
    state["contract"]["agentBudget"] = 9
    decision = run(act("delegate"), state)
    assert decision.code == "DELEGATION_STATE_UNPROVEN"
    assert "unversioned_resume" in decision.detail
    assert run(act("write"), state).code == "WITHIN_CONTRACT"


def test_lifecycle_unproven_only_under_finite_budget():
    resume = act("control", delegation_lifecycle_unproven=True)
    assert run(resume, make_state()).code == "WITHIN_CONTRACT"
    assert run(resume, make_state(agentBudget=MAX)).code == "WITHIN_CONTRACT"


def test_invalid_budget_is_unlimited():
    for bad in (True, -1, "3", None, 1.5):
        state = make_state(agentBudget=bad)
        assert run(act("delegate", delegation_count=50), state).code == "WITHIN_CONTRACT"


def test_thrash_is_last_before_within_and_never_denies():
    limit = sts.THRASH_REPEAT_LIMIT
    assert run(act("unknown"), make_state(), thrash_repeats=limit - 1).code == "WITHIN_CONTRACT"
    for level in ("watch", "guard", "lock"):
        decision = run(act("unknown"), make_state(level=level), thrash_repeats=limit + 2)
        assert (decision.code, decision.family, decision.outcome) == (
            "REPEATED_WITHOUT_CHANGE", "T", "report_and_defer")
    # Every other check wins over thrash; off and unconfirmed never see it.
    state = make_state()
    expansion = act("write", authorization="unapproved_expansion")
    assert run(expansion, state, thrash_repeats=limit).code == "UNAPPROVED_SCOPE_EXPANSION"
    assert run(act("read"), make_state(level="off"), thrash_repeats=limit).code == \
        "CONTROL_INACTIVE"


def test_state_busy_decision():
    armed = sts.state_busy_decision(make_state(agentBudget=2)["contract"])
    assert (armed.code, armed.family, armed.outcome) == ("STATE_BUSY", "S", "deny_and_explain")
    assert armed.detail and armed.next
    watch = sts.state_busy_decision(make_state(level="watch")["contract"])
    assert watch.outcome == "report_and_defer"
    assert sts.state_busy_decision(make_state(level="off")["contract"]).outcome == "allow"
    bare = sts.state_busy_decision()
    assert (bare.code, bare.outcome) == ("STATE_BUSY", "deny_and_explain")


# ---- files= matching ---------------------------------------------------------


def outside(paths, patterns, cwd=None):
    return sts.paths_outside(paths, patterns, cwd)


def test_files_double_star_examples():
    assert outside(["src", "./src/a/b.js", "src2/a.js"], ["src/**"]) == ["src2/a.js"]


def test_files_folder_forms_cover_everything_below():
    # `src/`, `src` and `src/**` are one boundary, as a folder in git's pathspecs.
    for form in ("src/", "src", "src/**", "./src/"):
        assert outside(["src/a.js", "src", "src/d/e.js", "src2/a.js", "a.js", "../src/a.js"],
                       [form], "/proj") == ["src2/a.js", "a.js", "../src/a.js"], form


@pytest.mark.parametrize("pattern,inside,out", [
    ("src/*.py", ["src/a.py", "src/.b.py"], ["src/d/e.py", "a.py", "src/a.pyc", "srcx/a.py"]),
    ("*.py", ["a.py", "src/a.py", "src/d/e.py"], ["a.pyc", "../a.py", "/etc/a.py"]),
    ("**/*.py", ["a.py", "src/d/e.py"], ["a.js", "../x/a.py"]),
    ("src/**/*.py", ["src/a.py", "src/d/e/f.py"], ["a.py", "src/a.js", "lib/src/a.py"]),
    ("src/[ab].py", ["src/a.py", "src/b.py"], ["src/c.py", "src/ab.py"]),
    ("src/[!a].py", ["src/b.py"], ["src/a.py"]),
    ("src/?.py", ["src/a.py"], ["src/ab.py", "src/.py"]),
    ("docs/**/README.md", ["docs/README.md", "docs/a/b/README.md"], ["README.md"]),
    ("sr?", ["src/a.py", "srx", "lib/src/a.py"], ["sr/a.py", "srcc"]),
    ("README.md", ["README.md"], ["docs/README.md"]),
    (".", ["a", "src/b"], ["../a", "/etc/x"]),
])
def test_files_globs_match_as_git_does(pattern, inside, out):
    assert outside(inside + out, [pattern], "/proj") == out


def test_files_glob_never_reaches_outside_the_folder(tmp_path):
    # A wildcard never matches `..` or the root; a link inside leads where it points.
    (tmp_path / "src").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "src" / "link").symlink_to(tmp_path / "elsewhere")
    cwd = str(tmp_path)
    assert outside(["src/link/a.py", "src/a.py"], ["src/**/*.py"], cwd) == ["src/link/a.py"]
    assert outside(["../a.py", "/a.py"], ["*.py", "**/*"], cwd) == ["../a.py", "/a.py"]


def test_files_dot_double_star_covers_everything():
    assert outside(["a", "deep/x/y", "../up"], ["./**"]) == []


def test_files_absolute_pattern_needs_cwd():
    assert outside(["src/a.js"], ["/proj/src/a.js"], "/proj") == []
    assert outside(["src/a.js"], ["/proj/src/a.js"]) == ["src/a.js"]
    assert outside(["/proj/src/a.js"], ["src/**"], "/proj") == []
    assert outside(["/x/a"], ["src/**"], "/proj") == ["/x/a"]


def test_files_posix_normalization():
    assert outside(["src/../src/a.js"], ["src/a.js"]) == []
    assert outside(["/p/src/"], ["src"], "/p") == []
    assert outside(["/p"], ["."], "/p") == []
    assert outside([" src/a.js "], ["src\\a.js"]) == []
    assert outside(["src/a.js"], ["SRC/a.js"]) == ["src/a.js"]


def test_files_node_style_normalization():
    # Paths normalize as Node's path module does: a leading "//" collapses, a
    # trailing "/" stays.
    assert sts.paths_outside(["//src/a.js"], ["/src/a.js"], resolve=False) == []
    assert outside(["src/lib/"], ["src/lib/"]) == []
    assert outside(["src/lib"], ["src/lib/"]) == []
    assert outside(["src/lib/"], ["src/**"]) == []


def test_files_windows_paths():
    cwd = "C:\\proj"
    assert outside(["C:\\proj\\src\\a.js"], ["src/**"], cwd) == []
    assert outside(["c:/Proj/SRC/b.js"], ["src/**"], cwd) == []
    assert outside(["src\\a.js"], ["SRC/**"], cwd) == []
    assert outside(["C:\\other\\a.js"], ["src/**"], cwd) == ["C:\\other\\a.js"]
    # Another drive keeps the absolute path (there is no relative path to it).
    assert outside(["D:\\proj\\src\\a.js"], ["src/**"], cwd) == ["D:\\proj\\src\\a.js"]
    assert outside(["D:\\x\\y.js"], ["d:/X/y.js"], cwd) == []
    # Without a Windows cwd, only two Windows-absolute spellings compare case-insensitively.
    assert outside(["C:\\x\\y.js"], ["c:/X/Y.JS"]) == []
    assert outside(["x/y.js"], ["X/y.js"]) == ["x/y.js"]


def test_files_empty_boundary_is_all_outside():
    state = make_state(allowedPaths=[])
    assert run(act("write", affected_paths=["a"]), state).code == "PATH_OUTSIDE_CONTRACT"
    assert run(act("write"), state).code == "WRITE_PATH_UNPROVEN"


def test_write_path_unproven_waived_by_double_star_including_normalized_forms():
    # The normalized pattern is compared, so `./**` waives it too.
    for patterns in (["**"], ["./**"], ["src/**", "**"]):
        state = make_state(allowedPaths=patterns)
        assert run(act("unknown"), state).code == "WITHIN_CONTRACT", patterns
    for patterns in (["src/**"], ["*"], ["**/"]):
        state = make_state(allowedPaths=patterns)
        assert run(act("unknown"), state).code == "WRITE_PATH_UNPROVEN", patterns
    # Reads and delegations need no visible path.
    state = make_state(allowedPaths=["src/**"])
    assert run(act("read"), state).code == "WITHIN_CONTRACT"


def test_path_check_applies_to_any_mutability():
    state = make_state(allowedPaths=["src/**"])
    decision = run(act("read", affected_paths=["lib/a", "src/b", "docs/c"]), state)
    assert decision.code == "PATH_OUTSIDE_CONTRACT"
    assert "lib/a, docs/c" in decision.detail


def test_symlink_inside_boundary_leading_outside_is_outside(tmp_path):
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(str(elsewhere), str(proj / "src" / "link"))
    cwd = str(proj)
    assert outside(["src/link/f.txt"], ["src/**"], cwd) == ["src/link/f.txt"]
    assert outside([str(proj / "src" / "link" / "f.txt")], ["src/**"], cwd) != []
    assert outside(["src/real.txt", "src/new/dir/f"], ["src/**"], cwd) == []
    # The purely lexical reading is still available.
    assert sts.paths_outside(["src/link/f.txt"], ["src/**"], cwd, resolve=False) == []
    state = make_state(allowedPaths=["src/**"])
    escaping = act("write", affected_paths=["src/link/f.txt"], cwd=cwd)
    assert run(escaping, state).code == "PATH_OUTSIDE_CONTRACT"


def test_symlinked_cwd_and_dotdot_resolve_physically(tmp_path):
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    os.symlink(str(real), str(tmp_path / "alias"))
    cwd = str(tmp_path / "alias")
    assert outside(["src/a.js", str(tmp_path / "alias" / "src" / "b.js")], ["src/**"], cwd) == []
    assert outside(["src/a.js"], [str(tmp_path / "alias" / "src" / "a.js")], cwd) == []
    # A symlink into the boundary from outside resolves inside.
    os.symlink(str(real / "src"), str(real / "shortcut"))
    assert outside(["shortcut/a.js"], ["src/**"], cwd) == []
    assert outside(["src/../other/a.js"], ["src/**"], cwd) == ["src/../other/a.js"]


def test_dotdot_after_a_symlink_must_be_inside_read_both_ways(tmp_path):
    """`src/link/../b/f`: the kernel follows link first (src/x/b/f, inside);
    Node's path.resolve drops `link/..` first (src/b/f, and src/b leads
    outside).  Pi, OMP and OpenCode write the second, Codex and Hermes the
    first, so the path is inside only if both readings are."""
    proj = tmp_path / "proj"
    (proj / "src" / "x" / "y").mkdir(parents=True)
    (tmp_path / "elsewhere" / "deep").mkdir(parents=True)
    os.symlink("x/y", str(proj / "src" / "link"))
    os.symlink(str(tmp_path / "elsewhere"), str(proj / "src" / "b"))
    os.symlink(str(tmp_path / "elsewhere" / "deep"), str(proj / "src" / "out"))
    cwd = str(proj)
    assert outside(["src/link/../b/f"], ["src/**"], cwd) == ["src/link/../b/f"]
    # The kernel's reading: src/out/.. is elsewhere/, though lexically it is src/.
    assert outside(["src/out/../x"], ["src/**"], cwd) == ["src/out/../x"]
    assert outside(["src/x/../link/f", "src/link/../x/f"], ["src/**"], cwd) == []


def test_symlink_resolution_without_cwd_uses_process_directory(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    os.symlink(str(tmp_path.parent), str(tmp_path / "src" / "up"))
    monkeypatch.chdir(tmp_path)
    assert outside(["src/a.js", "src/"], ["src/**"]) == []
    assert outside(["src/up/a.js"], ["src/**"]) == ["src/up/a.js"]


def test_absolute_path_and_pattern_through_a_symlinked_directory(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(str(tmp_path / "real"), str(tmp_path / "alias"))
    via_alias = str(tmp_path / "alias" / "a.js")
    via_real = str(tmp_path / "real" / "a.js")
    assert outside([via_alias], [via_real]) == []
    assert outside([via_real], [via_alias]) == []
    assert outside([via_alias], [str(tmp_path / "real" / "b.js")]) == [via_alias]


# ---- self-protection --------------------------------------------------------


@pytest.fixture
def guarded(tmp_path, monkeypatch):
    home = tmp_path / "home"
    data = home / ".local" / "state" / "stop-that-shit"
    (data / "sessions").mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    sts_file = tmp_path / "bin" / "sts.py"
    sts_file.parent.mkdir()
    sts_file.write_text("# sts\n")
    return {"data": str(data), "work": str(work), "sts": str(sts_file), "tmp": tmp_path}


def tamper(paths, g, *, targets=(), state=None, cwd=None):
    action = act("write", affected_paths=list(paths), shell_write_targets=list(targets),
                 cwd=g["work"] if cwd is None else cwd)
    return run(action, state or make_state(), protected_paths=[g["data"], g["sts"]])


def test_tamper_absolute_relative_dotdot_home_and_shell_targets(guarded):
    g = guarded
    hit = tamper([g["data"] + "/sessions/k.json"], g)
    assert (hit.code, hit.family, hit.outcome) == ("GUARD_SELF_PROTECTION", "I",
                                                    "deny_and_explain")
    assert tamper(["../bin/sts.py"], g).code == "GUARD_SELF_PROTECTION"
    assert tamper(["sub/../../home/.local/state/stop-that-shit/x"], g).code == \
        "GUARD_SELF_PROTECTION"
    assert tamper(["~/.local/state/stop-that-shit/sessions/new.json"], g).code == \
        "GUARD_SELF_PROTECTION"
    assert tamper([], g, targets=["~/.local/state/stop-that-shit"]).code == \
        "GUARD_SELF_PROTECTION"
    assert tamper(["src/app.py"], g).code == "WITHIN_CONTRACT"
    # A sibling whose name merely starts like the data dir is not inside.
    assert tamper([g["data"] + "-old/x"], g).code == "WITHIN_CONTRACT"
    assert tamper([g["sts"] + ".bak"], g).code == "WITHIN_CONTRACT"


def test_tamper_through_a_symlink(guarded):
    g = guarded
    os.symlink(g["data"], os.path.join(g["work"], "innocent"))
    assert tamper(["innocent/sessions/k.json"], g).code == "GUARD_SELF_PROTECTION"


def test_tamper_roots_given_through_a_symlink_are_resolved(guarded):
    g = guarded
    alias = str(g["tmp"] / "data-alias")
    os.symlink(g["data"], alias)
    action = act("write", affected_paths=[g["data"] + "/x"], cwd=g["work"])
    decision = run(action, make_state(), protected_paths=[alias])
    assert decision.code == "GUARD_SELF_PROTECTION"
    action = act("write", affected_paths=[alias + "/sessions/k.json"], cwd=g["work"])
    assert run(action, make_state(), protected_paths=[g["data"]]).code == \
        "GUARD_SELF_PROTECTION"


def test_tamper_outcomes_by_level_and_place_in_order(guarded):
    g = guarded
    path = [g["data"] + "/x"]
    assert tamper(path, g, state=make_state(level="watch")).outcome == "report_and_defer"
    assert tamper(path, g, state=make_state("unconfirmed", "watch")).outcome == \
        "report_and_defer"
    assert tamper(path, g, state=make_state(level="lock")).outcome == "deny_and_explain"
    off = tamper(path, g, state=make_state(level="off"))
    assert off.outcome == "allow"
    # Before every contract check, after recovery.
    review = make_state("review", allowedPaths=["src/**"])
    assert tamper(path, g, state=review).code == "GUARD_SELF_PROTECTION"
    read = run(act("read", affected_paths=path, cwd=g["work"]), recovery_state(),
               storage_error=RECOVERY, protected_paths=[g["data"]])
    assert read.code == "RECOVERY_READ_ONLY"


def test_tamper_case_only_matters_on_case_insensitive_file_systems(guarded):
    g = guarded
    upper = g["data"].replace("stop-that-shit", "STOP-THAT-SHIT") + "/x"
    insensitive = sts._tamper_case_insensitive(g["data"])
    expected = "GUARD_SELF_PROTECTION" if insensitive else "WITHIN_CONTRACT"
    assert tamper([upper], g).code == expected


# ---- message ----------------------------------------------------------------


def test_stop_message_lines_exactly():
    decision = run(act("write"), make_state("review"))
    text = sts.decision_message(decision, state_label="ARMED", mode="review",
                                response_outcome="permission_deny_returned",
                                event_id="evt_1fdd4d6f-7ef7-4981-b42b-436080dc7a60")
    lines = text.split("\n")
    assert lines[0] == "STOP / INTENT"
    assert "permission deny" in lines[1]
    assert lines[2:] == [
        "Reason: MODE_FORBIDS_MUTATION",
        "Detail: " + decision.detail,
        "Code: I/MODE_FORBIDS_MUTATION",
        "State: ARMED / review",
        "Event: evt_1fdd4d6f-7ef7-4981-b42b-436080dc7a60",
        "Next: " + decision.next,
    ]


def test_watch_message_and_optional_lines():
    decision = run(act("write", reachability="unreachable"), make_state())
    text = sts.decision_message(decision, state_label="ARMED", mode="change",
                                response_outcome="context_returned", event_id=None)
    lines = text.split("\n")
    assert lines[0] == "WATCH / HASH"
    assert "did not deny" in lines[1]
    assert "State: ARMED / change" in lines
    assert not any(line.startswith("Event:") for line in lines)
    bare = sts.Decision("deny_and_explain", "X_CODE", "S")
    lines = sts.decision_message(bare, state_label="OBSERVING", mode="change",
                                 response_outcome="execution_denial_returned",
                                 event_id="evt_1").split("\n")
    assert lines[0] == "STOP / SCOPE"
    assert "before it ran" in lines[1]
    assert lines[2:] == ["Reason: X_CODE", "Code: S/X_CODE", "State: OBSERVING / change",
                         "Event: evt_1"]


def test_three_response_lines_differ():
    deny = sts.Decision("require_user_approval", "MUTABILITY_UNPROVEN", "I", "d", "n")
    defer = sts.Decision("report_and_defer", "REPEATED_WITHOUT_CHANGE", "T", "d", "n")
    kw = dict(state_label="ARMED", mode="change", event_id=None)
    permission = sts.decision_message(deny, response_outcome="permission_deny_returned", **kw)
    execution = sts.decision_message(deny, response_outcome="execution_denial_returned", **kw)
    context = sts.decision_message(defer, response_outcome="context_returned", **kw)
    assert len({permission.split("\n")[1], execution.split("\n")[1],
                context.split("\n")[1]}) == 3
    assert context.startswith("WATCH / THRASH\n")


def test_family_words_and_result_kinds():
    assert [sts.family_word(f) for f in "IHST"] == ["INTENT", "HASH", "SCOPE", "THRASH"]
    assert sts.outcome_result_kind("allow") == "none"
    assert sts.outcome_result_kind("report_and_defer") == "context"
    assert sts.outcome_result_kind("deny_and_explain") == "deny"
    assert sts.outcome_result_kind("require_user_approval") == "deny"


def test_every_code_in_the_table_has_a_family_letter_or_allows():
    for row in sts.DECISION_TABLE:
        assert row.code.isupper()
        assert (row.family is None) == (row.outcome == "allow"), row.code


def test_one_table_holds_each_code_once_in_the_order_of_the_checks():
    codes = [row.code for row in sts.DECISION_TABLE]
    assert len(codes) == len(set(codes))
    # Only STATE_BUSY is decided outside `decide` (by the engine, when the lock
    # wait runs out); every other row is a check, and the last one always matches.
    assert [row.code for row in sts.DECISION_TABLE if row.check is None] == ["STATE_BUSY"]
    assert codes[-1] == "WITHIN_CONTRACT"
    # Damaged state, then the pause for a rejected directive whose turn ran
    # anyway (every tool waits, at every level), then self-protection, then
    # whether anything is enforced.
    assert codes[1:7] == ["RECOVERY_READ_ONLY", "STS_LOCK_DAMAGED", "STATE_DAMAGED",
                          "DIRECTIVE_PENDING", "GUARD_SELF_PROTECTION", "CONTROL_INACTIVE"]
    assert codes[-2] == "REPEATED_WITHOUT_CHANGE"
    for row in sts.DECISION_TABLE:
        assert row.outcome in ("allow", "always_deny", "always_defer", "deny_when_armed",
                               "approval_when_armed", "policy_when_armed"), row.code
