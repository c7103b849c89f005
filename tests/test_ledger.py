"""The delegation ledger: admission, lifecycle facts, binding children to
reservations and releasing them."""
import copy
import json

import sts


def make_state(mode="change", level="guard", **contract):
    state = sts.default_state()
    contract.setdefault("source", "directive")
    state["contract"].update(mode=mode, level=level, **contract)
    return state


def delegate(action_id="a1", count=None, **fields):
    return sts.Action(name="Agent", mutability="delegate", id=action_id,
                      delegation_count=count, **fields)


def accept(ledger, action_id="a1", count=None, declared=True, **fields):
    sts.admit(ledger, delegate(action_id, count, **fields), action_id, declared)


def event(kind, *, declared=True, **fields):
    raw = {"protocolVersion": 2, "kind": kind, "sessionId": "root"}
    if declared:
        raw["lifecycleVersion"] = 2
    raw.update(fields)
    return sts.ControlEvent.from_dict(raw)


def after(action_id, lifecycle=None, **fields):
    action = {"id": action_id}
    if lifecycle is not None:
        action["lifecycle"] = lifecycle
    extra = {k: fields.pop(k) for k in list(fields) if k in ("sourceSessionId",)}
    if "completionScope" in fields:
        action["completionScope"] = fields.pop("completionScope")
    action.update(fields)
    return event("action.after", action=action, **extra)


def start(agent_id, reservation_id=None, alias=None):
    return event("subagent.start", agentId=agent_id, reservationId=reservation_id,
                 agentAlias=alias)


def stop(agent_id):
    return event("subagent.stop", agentId=agent_id)


def apply(ledger, ev):
    return sts.apply_lifecycle_fact(ledger, ev)


def reserved(ledger):
    return sts.ledger_summary(ledger).reserved


def fresh():
    return sts.default_state()["delegation"]


# ---- admission --------------------------------------------------------------


def engine_step(state, action, declared=True):
    """What the engine does for one action.before under the lock."""
    decision = sts.decide(action, state, action_id=action.id, declared=declared)
    sts.apply_admission(state["delegation"], action, action.id, declared, decision)
    return decision


def test_apply_admission_reports_whether_to_write():
    state = make_state(agentBudget=1)
    read = sts.Action(name="Read", mutability="read")
    decision = sts.decide(read, state, action_id=None, declared=True)
    assert sts.apply_admission(state["delegation"], read, None, True, decision) is False
    first = delegate("a1")
    decision = sts.decide(first, state, action_id="a1", declared=True)
    assert sts.apply_admission(state["delegation"], first, "a1", True, decision) is True
    over = delegate("a2")
    decision = sts.decide(over, state, action_id="a2", declared=True)
    assert decision.code == "AGENT_BUDGET_EXHAUSTED"
    assert sts.apply_admission(state["delegation"], over, "a2", True, decision) is False
    assert "a2" not in state["delegation"]["acceptedActions"]


def test_ten_sequential_admissions_under_agents_3_allow_exactly_3():
    state = make_state(agentBudget=3)
    outcomes = [engine_step(state, delegate("call-%d" % i)).outcome for i in range(10)]
    assert outcomes.count("allow") == 3
    assert outcomes[:3] == ["allow"] * 3
    assert reserved(state["delegation"]) == 3
    assert sorted(state["delegation"]["acceptedActions"]) == ["call-0", "call-1", "call-2"]


def test_watch_admits_over_budget_and_keeps_counting():
    state = make_state(level="watch", agentBudget=1)
    for i in range(3):
        assert engine_step(state, delegate("w%d" % i)).outcome in ("allow", "report_and_defer")
    assert reserved(state["delegation"]) == 3


def test_off_and_unconfirmed_still_admit():
    for mode, level in (("change", "off"), ("unconfirmed", "watch")):
        state = make_state(mode, level, agentBudget=0)
        engine_step(state, delegate("x", 2))
        assert reserved(state["delegation"]) == 2


def test_new_admission_shape():
    ledger = fresh()
    accept(ledger, "a1", 2)
    assert ledger["acceptedActions"] == {"a1": 2}
    assert ledger["reservations"]["reservation:a1"] == {
        "actionId": "a1", "asyncLaunched": None, "pendingCount": 2, "agentIds": [],
        "completionScope": "children", "observedRunning": False,
        "notStartedAmbiguous": False, "resultUnknown": False, "reportedAliases": []}
    assert ledger["unresolved"] == {}
    accept(ledger, "p1", completion_scope="call")
    assert ledger["reservations"]["reservation:p1"]["completionScope"] == "call"


def test_count_zero_reserves_nothing_but_is_accepted():
    ledger = fresh()
    accept(ledger, "z", 0)
    assert ledger["acceptedActions"] == {"z": 0}
    assert ledger["reservations"]["reservation:z"]["pendingCount"] == 0
    assert reserved(ledger) == 0


def test_uncertainty_reasons_and_their_precedence():
    ledger = fresh()
    accept(ledger, "u", unbounded_delegation=True)
    accept(ledger, "r", delegation_lifecycle_unproven=True)
    accept(ledger, "l", declared=False, unbounded_delegation=True,
           delegation_lifecycle_unproven=True)
    accept(ledger, "b", unbounded_delegation=True, delegation_lifecycle_unproven=True)
    assert ledger["unresolved"] == {"u": "unbounded_execution", "r": "unversioned_resume",
                                    "l": "legacy_protocol", "b": "unbounded_execution"}
    resume = sts.Action(name="SendMessage", mutability="control", id="c",
                        delegation_lifecycle_unproven=True)
    sts.admit(ledger, resume, "c", True)
    assert ledger["acceptedActions"]["c"] == 0
    assert ledger["unresolved"]["c"] == "unversioned_resume"


def test_legacy_action_without_id_is_unidentified():
    ledger = fresh()
    legacy = sts.Action(name="Tool", mutability="unknown")
    sts.admit(ledger, legacy, None, False)
    assert ledger["acceptedActions"] == {"legacy:unidentified": 0}
    assert ledger["unresolved"] == {"legacy:unidentified": "legacy_protocol"}
    sts.admit(ledger, legacy, None, False)
    assert ledger["unresolved"] == {"legacy:unidentified": "reused_action_id"}


def test_duplicate_let_through_marks_reused_only():
    ledger = fresh()
    accept(ledger, "a1", 2)
    before = copy.deepcopy(ledger["reservations"])
    accept(ledger, "a1", 5)
    assert ledger["acceptedActions"] == {"a1": 2}
    assert ledger["reservations"] == before
    assert ledger["unresolved"] == {"a1": "reused_action_id"}


def test_denied_duplicate_marks_original_ambiguous():
    state = make_state(agentBudget=5)
    engine_step(state, delegate("a1"))
    decision = engine_step(state, delegate("a1"))
    assert decision.code == "DUPLICATE_ACTION_ID"
    reservation = state["delegation"]["reservations"]["reservation:a1"]
    assert reservation["notStartedAmbiguous"] is True
    assert state["delegation"]["unresolved"] == {}
    # Other denials change nothing, so the id can be retried.
    state = make_state(agentBudget=0)
    snapshot = copy.deepcopy(state["delegation"])
    assert engine_step(state, delegate("b1")).outcome == "deny_and_explain"
    assert state["delegation"] == snapshot
    sts.mark_denied_duplicate(state["delegation"], "missing")
    assert state["delegation"] == snapshot


def test_changes_delegation():
    assert sts.changes_delegation(delegate(), True)
    resume = sts.Action(name="x", mutability="control", id="c",
                        delegation_lifecycle_unproven=True)
    assert sts.changes_delegation(resume, True)
    for mut in ("control", "unknown"):
        action = sts.Action(name="x", mutability=mut)
        assert not sts.changes_delegation(action, True)
        assert sts.changes_delegation(action, False)
    for mut in ("read", "write"):
        assert not sts.changes_delegation(sts.Action(name="x", mutability=mut), False)


def test_summary():
    ledger = fresh()
    accept(ledger, "a", 2)
    accept(ledger, "b", 1)
    ledger["reservations"]["reservation:b"]["resultUnknown"] = True
    ledger["unresolved"].update({"x": "reused_action_id", "y": "unversioned_resume",
                                 "z": "reused_action_id", "w": "legacy_protocol"})
    summary = sts.ledger_summary(ledger, "a")
    assert summary == sts.LedgerSummary(3, ["reused_action_id", "unversioned_resume",
                                            "legacy_protocol"], 1, True)
    assert sts.ledger_summary(ledger, "c").duplicate is False
    assert sts.ledger_summary(ledger, None).duplicate is False


# ---- lifecycle facts --------------------------------------------------------


def test_joined_frees_every_unit_and_the_unresolved_entry():
    ledger = fresh()
    accept(ledger, "a1", 3, unbounded_delegation=True)
    apply(ledger, start("k1", "a1"))
    assert apply(ledger, after("a1", "joined")) is True
    assert ledger["reservations"] == {} and ledger["unresolved"] == {}
    assert ledger["acceptedActions"] == {"a1": 3}
    assert apply(ledger, after("a1", "joined")) is False


def test_completed_flag_means_joined():
    ledger = fresh()
    accept(ledger, "a1")
    apply(ledger, after("a1", completed=True))
    assert reserved(ledger) == 0


def test_whole_call_fact_ignored_for_reused_ids():
    ledger = fresh()
    accept(ledger, "a1")
    accept(ledger, "a1")
    assert apply(ledger, after("a1", "joined")) is False
    assert reserved(ledger) == 1
    assert ledger["unresolved"] == {"a1": "reused_action_id"}


def test_whole_call_fact_ignored_for_unknown_ids():
    ledger = fresh()
    accept(ledger, "a1")
    assert apply(ledger, after("other", "joined")) is False
    assert apply(ledger, after("other", "not_started")) is False


def test_unresolved_without_reservation_clears_on_joined():
    ledger = fresh()
    ledger["unresolved"]["gone"] = "unversioned_resume"
    assert apply(ledger, after("gone", "not_started")) is True
    assert ledger["unresolved"] == {}


def test_not_started_rules():
    ledger = fresh()
    accept(ledger, "plain", 2)
    assert apply(ledger, after("plain", "not_started")) is True
    assert "reservation:plain" not in ledger["reservations"]

    accept(ledger, "ran", 1)
    apply(ledger, after("ran", "running"))
    assert apply(ledger, after("ran", "not_started")) is False
    assert reserved(ledger) == 1
    apply(ledger, after("ran", "joined"))
    assert reserved(ledger) == 0

    accept(ledger, "kids", 2)
    apply(ledger, start("c1", "kids"))
    assert apply(ledger, after("kids", "not_started")) is False
    assert reserved(ledger) == 2

    accept(ledger, "amb", 1)
    sts.mark_denied_duplicate(ledger, "amb")
    assert apply(ledger, after("amb", "not_started")) is False
    assert apply(ledger, after("amb", "joined")) is True


def test_running_and_unknown_flags():
    ledger = fresh()
    accept(ledger, "a1", 2)
    apply(ledger, after("a1", "running"))
    res = ledger["reservations"]["reservation:a1"]
    assert (res["observedRunning"], res["resultUnknown"]) == (True, False)
    apply(ledger, after("a1", "unknown"))
    res = ledger["reservations"]["reservation:a1"]
    assert (res["observedRunning"], res["resultUnknown"]) == (True, True)
    assert sts.ledger_summary(ledger).unknown_results == 1
    apply(ledger, after("a1", "running"))
    assert ledger["reservations"]["reservation:a1"]["resultUnknown"] is False
    assert apply(ledger, after("nope", "running")) is False


def test_after_binds_agent_only_for_child_scope():
    ledger = fresh()
    accept(ledger, "a1", 2)
    apply(ledger, after("a1", "running", agentId="k1"))
    res = ledger["reservations"]["reservation:a1"]
    assert (res["pendingCount"], res["agentIds"]) == (1, ["k1"])
    assert ledger["agentIdsSeen"] == ["k1"]
    accept(ledger, "p1", 1, completion_scope="call")
    apply(ledger, after("p1", "running", agentId="k2"))
    assert ledger["reservations"]["reservation:p1"]["agentIds"] == []
    apply(ledger, after("a1", "running", agentId="k3", completionScope="call"))
    assert ledger["reservations"]["reservation:a1"]["agentIds"] == ["k1"]


def test_ended_agent_ids_release_after_the_main_fact():
    ledger = fresh()
    accept(ledger, "a1", 1)
    apply(ledger, after("a1", "running", agentId="k1", endedAgentIds=["k1"]))
    assert ledger["reservations"] == {}
    assert ledger["stoppedAgentIds"] == ["k1"]
    assert reserved(ledger) == 0


def test_aliases_reported_then_started():
    ledger = fresh()
    accept(ledger, "a1", 2)
    apply(ledger, after("a1", "running", agentAliases=["scout", "fixer"]))
    assert ledger["reservations"]["reservation:a1"]["reportedAliases"] == ["scout", "fixer"]
    apply(ledger, start("k9", alias="scout"))
    assert ledger["agentAliases"] == {"scout": "k9"}
    assert ledger["reservations"]["reservation:a1"]["agentIds"] == ["k9"]
    apply(ledger, stop("k9"))
    assert reserved(ledger) == 1


def test_aliases_started_then_reported():
    ledger = fresh()
    accept(ledger, "a1", 1)
    apply(ledger, start("k9", alias="scout"))
    assert reserved(ledger) == 1 and ledger["agentIdsSeen"] == []
    apply(ledger, after("a1", "running", agentAliases=["scout"]))
    assert ledger["reservations"]["reservation:a1"]["agentIds"] == ["k9"]


def test_aliases_never_bind_call_scoped_reservations():
    ledger = fresh()
    accept(ledger, "p1", 1, completion_scope="call")
    apply(ledger, after("p1", "running", agentAliases=["scout"]))
    apply(ledger, start("k9", alias="scout"))
    assert ledger["reservations"]["reservation:p1"]["agentIds"] == []
    assert ledger["reservations"]["reservation:p1"]["pendingCount"] == 1


def test_subagent_start_binds_only_by_explicit_reservation_id():
    ledger = fresh()
    accept(ledger, "a1", 2)
    assert apply(ledger, start("k1")) is False   # never FIFO
    assert apply(ledger, start("k1", "missing")) is False
    assert apply(ledger, start("k1", "a1")) is True
    assert ledger["reservations"]["reservation:a1"]["agentIds"] == ["k1"]
    # Duplicate starts are harmless.
    assert apply(ledger, start("k1", "a1")) is False
    accept(ledger, "p1", 1, completion_scope="call")
    assert apply(ledger, start("k2", "p1")) is False


def test_a_host_that_never_names_the_call_binds_only_the_one_open_call():
    # Hermes 0.19 and Copilot start children without saying which call did.
    ledger = fresh()
    unnamed = event("subagent.start", agentId="k1", reservationUnknown=True)
    accept(ledger, "a1", 2)
    accept(ledger, "p1", 1, completion_scope="call")  # freed per call: never a child's owner
    assert apply(ledger, unnamed) is True
    assert ledger["reservations"]["reservation:a1"]["agentIds"] == ["k1"]
    accept(ledger, "a2", 1)
    assert apply(ledger, event("subagent.start", agentId="k2", reservationUnknown=True)) is False
    assert "k2" not in ledger["agentIdsSeen"]  # two open calls: no guess


def test_start_does_not_overdraw_a_reservation():
    ledger = fresh()
    accept(ledger, "a1", 1)
    apply(ledger, start("k1", "a1"))
    apply(ledger, start("k2", "a1"))
    assert ledger["reservations"]["reservation:a1"]["agentIds"] == ["k1"]
    assert "k2" not in ledger["agentIdsSeen"]


def test_release_frees_and_deletes_empty_reservation():
    ledger = fresh()
    accept(ledger, "a1", 2)
    apply(ledger, start("k1", "a1"))
    apply(ledger, start("k2", "a1"))
    apply(ledger, stop("k1"))
    assert reserved(ledger) == 1
    apply(ledger, stop("k2"))
    assert ledger["reservations"] == {}
    assert ledger["stoppedAgentIds"] == ["k1", "k2"]
    assert apply(ledger, stop("k2")) is False   # idempotent
    assert apply(ledger, stop("never-bound")) is True
    assert ledger["stoppedAgentIds"][-1] == "never-bound"


def test_stop_before_start_spends_a_pending_unit():
    ledger = fresh()
    accept(ledger, "a1", 2)
    apply(ledger, stop("k1"))
    assert reserved(ledger) == 2
    apply(ledger, start("k1", "a1"))
    res = ledger["reservations"]["reservation:a1"]
    assert (res["pendingCount"], res["agentIds"]) == (1, [])
    assert "k1" in ledger["agentIdsSeen"]
    apply(ledger, stop("k2"))
    apply(ledger, start("k2", "a1"))
    assert ledger["reservations"] == {}
    assert apply(ledger, start("k2", "a1")) is False


def test_stopped_agent_without_pending_unit_is_ignored():
    ledger = fresh()
    accept(ledger, "a1", 1)
    apply(ledger, start("k1", "a1"))
    apply(ledger, stop("k2"))
    assert apply(ledger, start("k2", "a1")) is False
    assert "k2" not in ledger["agentIdsSeen"]


def test_session_end_alone_frees_nothing():
    ledger = fresh()
    accept(ledger, "a1", unbounded_delegation=True)
    assert apply(ledger, event("session.end")) is False
    assert apply(ledger, event("session.end", allDelegationsStopped=False)) is False
    assert reserved(ledger) == 1
    assert apply(ledger, event("session.start")) is False


def test_session_end_with_all_delegations_stopped_clears_reservations_and_unresolved():
    ledger = fresh()
    accept(ledger, "a1", 2, unbounded_delegation=True)
    apply(ledger, start("k1", "a1"))
    apply(ledger, start("k0", alias="al"))
    assert apply(ledger, event("session.end", allDelegationsStopped=True)) is True
    assert ledger["reservations"] == {} and ledger["unresolved"] == {}
    assert ledger["acceptedActions"] == {"a1": 2}
    assert ledger["agentIdsSeen"] == ["k1"]
    assert ledger["agentAliases"] == {"al": "k0"}
    # Accepted ids stay duplicates after the clear.
    state = make_state(agentBudget=2)
    state["delegation"] = ledger
    assert engine_step(state, delegate("a1")).code == "DUPLICATE_ACTION_ID"


def test_undeclared_facts_change_nothing():
    ledger = fresh()
    accept(ledger, "a1")
    snapshot = copy.deepcopy(ledger)
    for ev in (event("action.after", declared=False, action={"id": "a1", "completed": True}),
               event("session.end", declared=False, allDelegationsStopped=True),
               event("subagent.stop", declared=False, agentId="k1")):
        assert apply(ledger, ev) is False
    assert ledger == snapshot


def test_namespaced_ids_from_child_sessions():
    ledger = fresh()
    child = event("action.before", sourceSessionId="child",
                  action={"name": "Agent", "mutability": "delegate", "id": "t1"})
    assert child.action_id == json.dumps(["child", "t1"], separators=(",", ":"))
    sts.admit(ledger, child.action, child.action_id, True)
    accept(ledger, "t1")   # the root's own call with the same raw id
    assert reserved(ledger) == 2 and ledger["unresolved"] == {}
    apply(ledger, after("t1", "joined"))
    assert list(ledger["reservations"]) == ['reservation:["child","t1"]']
    apply(ledger, after("t1", "joined", sourceSessionId="child"))
    assert ledger["reservations"] == {}


def test_a_result_with_an_unknown_stamp_finds_its_one_call():
    # Gemini and Copilot give calls no id: the adapter names a delegation
    # `host:stamp:digest`, and its result knows only host and digest.
    ledger = fresh()
    accept(ledger, "gemini:1001:abcd")
    child = event("action.before", sourceSessionId="child",
                  action={"name": "task", "mutability": "delegate", "id": "gemini:1002:abcd"})
    sts.admit(ledger, child.action, child.action_id, True)
    result = after("gemini:-:abcd", "joined", stampUnknown=True)
    assert apply(ledger, result) is True
    assert list(ledger["reservations"]) == ['reservation:["child","gemini:1002:abcd"]']
    assert apply(ledger, after("gemini:-:abcd", "joined", stampUnknown=True,
                               sourceSessionId="child")) is True
    assert ledger["reservations"] == {}
    accept(ledger, "gemini:1003:abcd")
    accept(ledger, "gemini:1004:abcd")
    assert apply(ledger, result) is False  # two equal calls are never guessed apart
    accept(ledger, "copilot:1005:beef")
    assert apply(ledger, after("gemini:-:beef", "joined", stampUnknown=True)) is False


def test_missing_optional_keys_are_tolerated():
    ledger = {"reservations": {}, "acceptedActions": {}}
    accept(ledger, "a1")
    assert apply(ledger, start("k1", "a1")) is True
    assert ledger["agentIdsSeen"] == ["k1"]


def test_child_session_start_finds_its_namespaced_reservation():
    ledger = fresh()
    child = event("action.before", sourceSessionId="child",
                  action={"name": "Agent", "mutability": "delegate", "id": "t1"})
    sts.admit(ledger, child.action, child.action_id, True)
    assert apply(ledger, start("k1", "t1")) is False   # the root has no call t1
    from_child = event("subagent.start", sourceSessionId="child", agentId="k1",
                       reservationId="t1")
    assert apply(ledger, from_child) is True
    assert ledger["reservations"]['reservation:["child","t1"]']["agentIds"] == ["k1"]


def test_clearing_an_empty_ledger_reports_no_change():
    ledger = fresh()
    assert apply(ledger, event("session.end", allDelegationsStopped=True)) is False
