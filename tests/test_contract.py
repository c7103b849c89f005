"""Task contract: directive grammar, corrections, inspection grammar, context text.

Rows are worked examples: the prompt, the contract before, the contract after.
"""
import copy

import pytest

import sts
from conftest import calls_made

MAX = sts.MAX_SAFE_INTEGER
D = "$stop-that-shit"


def contract(**fields):
    base = dict(sts.DEFAULT_CONTRACT)
    base.update(fields)
    return base


def run(text, previous=None):
    previous = contract() if previous is None else previous
    before = copy.deepcopy(previous)
    outcome = sts.interpret_prompt(previous, text)
    assert previous == before, "interpret_prompt mutated its input"
    return outcome


# --- 2.2 recognition ------------------------------------------------------

@pytest.mark.parametrize("text", [
    D,
    D + " review",
    D + ",review",
    D + ":review",
    D + "\treview",
    D + "\nreview",
    "\n\n  \t\n" + D + " review",
    "   " + D + " review",
    "$STOP-THAT-SHIT review",
    "\r\n" + D + " review",
])
def test_mention_recognized(text):
    assert sts.has_directive_mention(text)


@pytest.mark.parametrize("text", [
    "    " + D + " review",          # indented code
    "\t" + D + " review",
    "> " + D + " review",             # quote
    "- " + D + " review",             # list item
    '"' + D + ' review"',
    "`" + D + " review`",
    "```\n" + D + " review\n```",
    "$" + D + " review",
    "please " + D + " review",
    "",
])
def test_mention_not_recognized_is_plain_text(text):
    assert not sts.has_directive_mention(text)
    outcome = run(text, contract(mode="change", level="guard", source="directive"))
    assert outcome.kind in ("plain", "correction")
    assert outcome.error is None


@pytest.mark.parametrize("text,code", [
    ("Example:\n" + D + " review", "DIRECTIVE_NOT_FIRST_LINE"),     # a later line
    ("Fix the parser.\n\n  " + D + " change files=src/**", "DIRECTIVE_NOT_FIRST_LINE"),
    ("$\u017ftop-that-shit review", "DIRECTIVE_MISSPELT"),  # long s: `s` only under Unicode rules
    ("$stop-that-\u017fhit change", "DIRECTIVE_MISSPELT"),
    ("$STOP-THAT-\u017fHIT open", "DIRECTIVE_MISSPELT"),
    ("$stop-that-shit-x review", "DIRECTIVE_MISSPELT"),
    ("$stop-that-shitchange", "DIRECTIVE_MISSPELT"),
    ("\uff04stop-that-shit review", "DIRECTIVE_MISSPELT"),   # full-width dollar sign
    ("\ufe69stop-that-shit review", "DIRECTIVE_MISSPELT"),   # small dollar sign
    ("$stop_that_shit review", "DIRECTIVE_MISSPELT"),
    ("$ stop-that-shit review", "DIRECTIVE_MISSPELT"),
    ("$stopthatshit review", "DIRECTIVE_MISSPELT"),
    ("\uff04\uff53\uff54\uff4f\uff50\uff0d\uff54\uff48\uff41\uff54\uff0d\uff53\uff48\uff49\uff54"
     " review", "DIRECTIVE_MISSPELT"),                   # full-width letters too
    ("**$stop-that-shit review**", "DIRECTIVE_MISSPELT"),  # bold in Markdown
    ("\u00a0" + D + " review", "DIRECTIVE_MISSPELT"),      # NBSP indentation
    ("Please look.\n\uff04stop-that-shit review", "DIRECTIVE_MISSPELT"),
])
def test_a_line_meant_as_a_directive_is_rejected_aloud(text, code):
    """Not the directive, but meant as one: rejected with a word, the contract kept."""
    assert not sts.has_directive_mention(text)
    previous = contract(mode="change", level="guard", source="directive")
    outcome = run(text, previous)
    assert outcome.kind == "error" and outcome.error["code"] == code
    assert outcome.contract == previous
    assert "directive rejected (%s)" % code in sts.directive_rejected_text(outcome.error)


@pytest.mark.parametrize("text", [
    "The docs say to type `" + D + " review` first.",
    "```\nExample:\n" + D + " review\n```",
    "Notes:\n> " + D + " review",
    "Notes:\n    " + D + " review",
    "costs $5 to stop that shit",
])
def test_a_directive_quoted_below_the_first_line_changes_nothing(text):
    outcome = run(text, contract(mode="change", level="guard", source="directive"))
    assert outcome.kind == "plain"


@pytest.mark.parametrize("token,meant", [
    ("on", "guard"), ("enable", "guard"), ("read-only", "review"), ("readonly", "review"),
    ("edit", "change"), ("disable", "off"),
])
def test_a_word_for_a_field_says_which_field_was_meant(token, meant):
    outcome = run(D + " " + token, contract(mode="change", level="guard", source="directive"))
    assert outcome.kind == "error" and outcome.error["code"] == "INVALID_DIRECTIVE_TOKEN"
    assert "did you mean `%s`" % meant in outcome.error["message"]


def test_a_later_line_directive_never_applies():
    """`off` below the first line neither turns the guard off nor passes in silence."""
    previous = contract(mode="change", level="guard", source="directive")
    outcome = run("Example:\n" + D + " off", previous)
    assert outcome.kind == "error"
    assert outcome.contract == previous
    assert outcome.changed is False


# --- 2.3 head, tokens and 2.5 merge ----------------------------------------

def test_review_with_task_text_arms_guard():
    out = run(D + " review -- inspect")
    assert out.kind == "directive"
    assert (out.contract["mode"], out.contract["level"]) == ("review", "guard")
    assert out.contract["source"] == "directive"
    assert out.changed


def test_off_on_default():
    out = run(D + " off")
    assert (out.contract["mode"], out.contract["level"]) == ("unconfirmed", "off")
    assert sts.control_state(out.contract) == "OFF"


@pytest.mark.parametrize("text", [D + ": change", D + "\nchange", D, D + " -- change"])
def test_empty_head_keeps_fields_and_sets_source(text):
    out = run(text)
    assert out.kind == "directive"
    assert out.contract == contract(source="directive")


def test_task_words_in_head_are_rejected():
    previous = contract(mode="review", level="guard", source="directive")
    out = run(D + " change fix the bug", previous)
    assert out.kind == "error"
    assert out.error["code"] == "INVALID_DIRECTIVE_TOKEN"
    assert out.error["token"] == "fix"
    assert "fix" in out.error["message"]
    assert out.contract == previous  # no partial update: `change` was not applied
    assert out.changed is False


def test_double_dash_cuts_inside_a_token():
    out = run(D + " change files=a--b.js")
    assert out.contract["allowedPaths"] == ["a"]
    assert out.contract["mode"] == "change"


def test_colon_space_cuts_head_but_drive_colon_does_not():
    out = run(D + " lock change files=C:\\x\\y.js: go")
    assert out.kind == "directive"
    assert (out.contract["mode"], out.contract["level"]) == ("change", "lock")
    assert out.contract["allowedPaths"] == ["C:/x/y.js"]


def test_mode_alone_never_leaves_off():
    out = run(D + " review", contract(mode="change", level="off"))
    assert (out.contract["mode"], out.contract["level"]) == ("review", "off")


def test_level_word_rearms_from_off():
    out = run(D + " guard", contract(mode="change", level="off"))
    assert (out.contract["mode"], out.contract["level"]) == ("change", "guard")


def test_directive_wins_over_correction_after_dashes():
    previous = contract(mode="change", level="guard", source="directive")
    out = run(D + " -- review only", previous)
    assert out.kind == "directive"
    assert out.contract == previous
    assert out.changed is False  # "changed" means the resulting contract differs


def test_level_alone_on_unconfirmed_stays_observing():
    out = run(D + " lock")
    assert (out.contract["mode"], out.contract["level"]) == ("unconfirmed", "watch")
    assert sts.control_state(out.contract) == "OBSERVING"
    assert out.contract["source"] == "directive"


def test_mode_with_explicit_watch_keeps_watch():
    out = run(D + " review watch")
    assert (out.contract["mode"], out.contract["level"]) == ("review", "watch")


def test_mode_keeps_an_existing_lock_level():
    out = run(D + " review", contract(mode="change", level="lock"))
    assert out.contract["level"] == "lock"


def test_other_fields_persist_across_directives():
    first = run(D + " change agents=2 hash=allow deps=deny files=src/**").contract
    second = run(D + " review", first).contract
    assert second["mode"] == "review"
    assert second["agentBudget"] == 2
    assert second["hashPolicy"] == "allow"
    assert second["dependencyPolicy"] == "deny"
    assert second["allowedPaths"] == ["src/**"]
    third = run(D + " files=docs/**", second).contract
    assert third["allowedPaths"] == ["docs/**"]  # files= replaces the list


@pytest.mark.parametrize("token,value", [
    ("agents=007", 7),
    ("AGENTS=3", 3),
    ("agents=0", 0),
    ("agents=9007199254740991", MAX),
    ("agents=" + "0" * 5000 + "4", 4),
])
def test_agent_limit_values(token, value):
    out = run(D + " change " + token)
    assert out.kind == "directive"
    assert out.contract["agentBudget"] == value
    assert type(out.contract["agentBudget"]) is int


@pytest.mark.parametrize("token", [
    "agents=-1", "agents=1.5", "agents=NaN", "agents=9007199254740992", "agents=",
    "agents", "agents=\u0663", "agents=1e3", "agents=" + "9" * 5000,
])
def test_invalid_agent_limit(token):
    out = run(D + " change " + token)
    assert out.kind == "error"
    assert out.error["code"] == "INVALID_AGENT_LIMIT"
    assert out.error["token"] == token
    assert token[:40] in out.error["message"]
    assert out.contract == contract()


@pytest.mark.parametrize("token", [
    "total-agents", "total-agents=3", "concurrent-agents", "CONCURRENT-AGENTS=2",
])
def test_unsupported_agent_directive(token):
    out = run(D + " " + token)
    assert out.error["code"] == "UNSUPPORTED_AGENT_DIRECTIVE"
    assert out.error["token"] == token
    assert "agents=N" in out.error["message"]


@pytest.mark.parametrize("token", ["fix", "hash=maybe", '"x"', "status", ":review",
                                   "deps=", "files", "hash", "unconfirmed", "mode=review"])
def test_invalid_directive_token(token):
    out = run(D + " " + token)
    assert out.kind == "error"
    assert out.error["code"] == "INVALID_DIRECTIVE_TOKEN"
    assert out.error["token"] == token
    assert "--" in out.error["message"]


def test_policies_any_case():
    out = run(D + " change HASH=Allow Deps=DENY")
    assert out.contract["hashPolicy"] == "allow"
    assert out.contract["dependencyPolicy"] == "deny"


def test_undo_field_parses_persists_and_defaults_to_ask():
    assert run(D + " change").contract["undoPolicy"] == "ask"   # no undo= gives ask
    out = run(D + " change UNDO=Allow")
    assert out.contract["undoPolicy"] == "allow"
    # Alone it changes only itself; a later directive without it keeps it.
    only = run(D + " undo=deny", out.contract).contract
    assert (only["mode"], only["undoPolicy"]) == ("change", "deny")
    assert run(D + " review", only).contract["undoPolicy"] == "deny"
    for bad in ("undo=yes", "undo=", "undo"):
        assert run(D + " change " + bad).error["code"] == "INVALID_DIRECTIVE_TOKEN"
    assert run(D + " undo=ask undo=allow").error["code"] == "CONFLICTING_DIRECTIVE"
    assert "undo=deny;" in sts.contract_fields(only, 0, False)


def test_files_value_keeps_case_and_splits():
    out = run(D + " FILES=Src/A.js|lib\\B.py||")
    assert out.contract["allowedPaths"] == ["Src/A.js", "lib/B.py"]


@pytest.mark.parametrize("token", ["files=", "files=|"])
def test_files_empty_boundary(token):
    assert run(D + " change " + token).contract["allowedPaths"] == []


# The files= forms a new user writes: each is kept as written (globs match as
# git's do, see tests/test_decision.py), or refused with the accepted forms.
ACCEPTED_FILES = ["src/*.py", "*.py", "**/*.py", "src/**/*.py", "src/[ab].py", "src/[!a].py",
                  "src/", "src", "src/**", "src/?.py", "docs/**/README.md", ".", "**",
                  "./src/a.py", "/abs/src/**", "C:/x/y.js", "src/a.py|docs/**|*.md"]
REJECTED_FILES = ["src/**,docs/**", "src/** docs/**", "src/**.py", "src/a**", "!src/a.py",
                  "src/{a,b}.py", "src/{a}.py", "~/notes/**", "$HOME/x", "src/[ab.py",
                  "src/[[:alpha:]].py", ":(glob)src/**"]


@pytest.mark.parametrize("value", ACCEPTED_FILES)
def test_files_forms_people_write_are_accepted(value):
    out = run(D + " change files=" + value + " -- fix")
    assert out.error is None, out.error
    assert out.contract["allowedPaths"] == value.split("|")


@pytest.mark.parametrize("value", REJECTED_FILES)
def test_files_forms_the_guard_would_not_match_are_refused(value):
    out = run(D + " change files=" + value + " -- fix")
    assert out.kind == "error"
    assert out.error["code"] == "INVALID_FILES_PATTERN"
    message = out.error["message"]
    # The message names the separator and the accepted forms.
    assert "`|`" in message and "`files=src/**|docs/**`" in message and "`*.py`" in message


def test_files_negated_set_is_read_as_git_reads_it():
    out = run(D + " change files=src/[^a].py")
    assert out.contract["allowedPaths"] == ["src/[!a].py"]
    assert sts.paths_outside(["src/a.py", "src/b.py"], out.contract["allowedPaths"],
                             "/p") == ["src/a.py"]


def test_tokens_split_on_commas():
    out = run(D + " change,lock,,agents=2")
    assert (out.contract["mode"], out.contract["level"], out.contract["agentBudget"]) == \
        ("change", "lock", 2)


@pytest.mark.parametrize("text", [
    "change change", "hash=allow HASH=ALLOW", "agents=1 agents=01",
    "files=a|b files=a|b", "lock LOCK",
])
def test_repeated_equal_values_are_fine(text):
    assert run(D + " " + text).kind == "directive"


@pytest.mark.parametrize("text,token,field", [
    ("change review", "review", "mode"),
    ("guard lock", "lock", "level"),
    ("agents=1 agents=2", "agents=2", "agentBudget"),
    ("hash=allow hash=deny", "hash=deny", "hashPolicy"),
    ("files=a files=b", "files=b", "allowedPaths"),
    ("deps=ask deps=allow", "deps=allow", "dependencyPolicy"),
])
def test_conflicting_values(text, token, field):
    out = run(D + " " + text)
    assert out.kind == "error"
    assert out.error == {"code": "CONFLICTING_DIRECTIVE", "token": token,
                         "message": out.error["message"]}
    assert field in out.error["message"]


def test_first_error_stops_parsing():
    out = run(D + " fix agents=x")
    assert out.error["code"] == "INVALID_DIRECTIVE_TOKEN"


def test_legacy_counters_dropped():
    previous = contract(mode="change", level="guard", agentsUsed=3, totalAgentBudget=9,
                        concurrentAgentBudget=2)
    out = run(D + " review", previous)
    for key in ("agentsUsed", "totalAgentBudget", "concurrentAgentBudget"):
        assert key not in out.contract


def test_directive_result_does_not_share_path_list():
    previous = contract(mode="change", level="guard", allowedPaths=["a"])
    out = run(D + " review", previous)
    out.contract["allowedPaths"].append("b")
    assert previous["allowedPaths"] == ["a"]


def test_error_returns_a_copy():
    previous = contract(mode="change", level="guard", allowedPaths=["a"])
    out = run(D + " bogus", previous)
    assert out.contract == previous and out.contract is not previous
    out.contract["allowedPaths"].append("b")
    assert previous["allowedPaths"] == ["a"]


def test_directive_error_text():
    out = run(D + " agents=-1")
    text = sts.directive_error_text(out.error)
    assert text.startswith("INVALID_AGENT_LIMIT: ")
    assert "agents=-1" in text
    assert sts.directive_error_text({"code": "X"}) == "X: unknown directive error"


# --- 2.6 natural-language corrections --------------------------------------

@pytest.mark.parametrize("text", ["stop", "Stop.", "STOP NOW!", "stop now", "停止", "停下来。",
                                  "  stop !! ", "停止！"])
def test_stop_arms_answer(text):
    out = run(text)
    assert out.kind == "correction"
    assert (out.contract["mode"], out.contract["level"]) == ("answer", "guard")
    assert out.contract["source"] == "explicit-stop"
    assert sts.control_state(out.contract) == "ARMED"


@pytest.mark.parametrize("text", ["stop the server", "please stop", "don't stop", "stopping"])
def test_stop_must_be_the_whole_text(text):
    assert run(text).kind == "plain"


@pytest.mark.parametrize("text,mode", [
    ("Review only, please.", "review"),
    ("Fix it. Review only.", "review"),
    ("- review only", "review"),
    ("Please do not edit anything yet", "review"),
    ("don't change the repository", "review"),
    ("do not fix the files", "review"),
    ("Do not edit the file", "review"),
    ("don't change the code", "review"),
    ("don't edit the repo.", "review"),
    ("只审查这个模块", "review"),
    ("只看不改", "review"),
    ("不要修改任何东西", "review"),
    ("不要修改代码", "review"),
    ("不要修改文件", "review"),
    # The grown list: orders not to change anything, in English and Chinese.
    ("Don\u2019t edit anything", "review"),          # a typographic apostrophe
    ("do not modify any files", "review"),
    ("Please don't touch anything, just explain.", "review"),
    ("never write to the repo", "review"),
    ("Make no changes; tell me why it fails.", "review"),
    ("Explain it without changing anything.", "review"),
    ("Stay read-only.", "review"),
    ("read-only mode: look at the logs", "review"),
    ("只读", "review"),
    ("请只读，看看这个 bug", "review"),
    ("这次只读即可。", "review"),
    ("不要改代码", "review"),
    ("别改文件，先解释", "review"),
    ("不许动代码", "review"),
    ("禁止修改仓库", "review"),
    ("只读不改", "review"),
    ("仅审查", "review"),
    ("Don't make any changes.", "review"),
    ("do not make edits, just report", "review"),
    ("测试不要修改。", "review"),
    ("请勿编辑", "review"),
    ("Answer only.", "answer"),
    ("只回答问题", "answer"),
    ("monitor only", "monitor"),
    ("只监控", "monitor"),
    ("只观察，不要运行修复操作", "monitor"),
    ("请只观察即可。", "monitor"),
    ("先看日志。接下来只监控就好", "monitor"),
    ("看看：只观察一下\n然后汇报", "monitor"),
])
def test_corrections(text, mode):
    out = run(text)
    assert out.kind == "correction"
    assert out.contract["mode"] == mode
    assert out.contract["level"] == "guard"
    assert out.contract["source"] == "natural-explicit"


@pytest.mark.parametrize("text", [
    '"review only" is an example',
    "the phrase `review only` is code",
    "``review `only` here`` is code",
    "> review only",
    "    review only",
    "\treview only",
    "```\nreview only\n```",
    "~~~~\nreview only\n~~~\nstill fenced\n",
    "he said 'review only' once",
    "\u201creview only\u201d",
    "\u2018review only\u2019",
    "「只审查」",
    "『只回答』",
    "只观察实际定时轮次",                 # an object follows: not a standalone clause
    "previewed only once",               # ASCII word boundary
    "the monitor-only flag",             # `-` is not whitespace
    "don't edit anythingelse",
    "do not edit the repositoryx",
    "他说'只回答'",
    # Words of the grown list used to describe, not to order.
    "the file is read-only",
    "这个文件是只读的",
    "只读文件会被跳过",
    "mount it read-only, then fix the parser",
    "Modify?",
    "Change: the parser",
    "Do not modify? Why not.",
])
def test_non_corrections(text):
    out = run(text)
    assert out.kind == "plain"
    assert out.contract == contract()


def test_fence_closes_and_prose_after_counts():
    out = run("```python\nx = 1\n```\nreview only")
    assert out.contract["mode"] == "review"


def test_backtick_fence_with_backtick_in_info_string_is_not_a_fence():
    # "```a`b" is not a fence opener, so the next line is prose.
    assert run("```a`b\nreview only").contract["mode"] == "review"


def test_shorter_closing_fence_does_not_close():
    assert run("````\n```\nreview only\n````\n").kind == "plain"


def test_unclosed_inline_code_is_literal():
    assert run("a `stray backtick, review only").contract["mode"] == "review"


def test_apostrophes_inside_words_are_not_quotes():
    out = run("it's fine, don't edit anything")
    assert out.contract["mode"] == "review"


def test_escaped_double_quote_stays_inside_quote():
    assert run('"say \\" review only" ok').kind == "plain"


def test_first_matching_rule_wins():
    assert run("answer only, review only").contract["mode"] == "review"
    assert run("monitor only and answer only").contract["mode"] == "answer"


@pytest.mark.parametrize("text", [
    "fix it", "Please fix the parser", "implement it", "change the default",
    "apply the patch", "patch it", "修复这个问题", "请修改配置", "实现它", "应用补丁",
    "把这个bug修复", "把它改掉",
])
@pytest.mark.parametrize("previous_mode", ["answer", "review", "monitor"])
def test_rule5_upgrades_read_only_mode(text, previous_mode):
    out = run(text, contract(mode=previous_mode, level="guard", source="directive"))
    assert out.kind == "correction"
    assert (out.contract["mode"], out.contract["level"]) == ("change", "guard")
    assert out.contract["source"] == "natural-explicit"


@pytest.mark.parametrize("previous_mode", ["unconfirmed", "open", "change"])
def test_rule5_needs_prior_read_only_mode(previous_mode):
    previous = contract(mode=previous_mode,
                        level="watch" if previous_mode == "unconfirmed" else "guard")
    out = run("fix it", previous)
    assert out.kind == "plain"
    assert out.contract == previous


@pytest.mark.parametrize("text", [
    "fixing it", "we should fix it", "please, fix it", "prefix it",
    "看一下再修复", "把\n修复",
])
def test_rule5_must_start_the_prose(text):
    assert run(text, contract(mode="review", level="guard")).kind == "plain"


@pytest.mark.parametrize("text", [
    "fix nothing, only review", "implement nothing yet", "change no files",
    "apply none of the patches", "Patch not yet",
])
def test_rule5_never_widens_on_a_negated_object(text):
    """A verb whose object is a negation: `fix nothing` must not switch a review to change."""
    assert run(text, contract(mode="review", level="guard")).kind == "plain"


@pytest.mark.parametrize("text", [
    "Fix?", "Apply? No, just explain it.", "Fix or not? Tell me what you think.",
    "Change: none, this is a question", "fix-it ticket 12: what does it ask for?",
    "Change is risky here; what do you think?", "Patch notes for 2.0, please summarize",
    "Change's scope is unclear", "Change\u2019s scope is unclear",
])
def test_rule5_never_widens_on_a_question_label_or_noun(text):
    """A user sentence that does not ask for a change keeps review (only rule 5 widens)."""
    previous = contract(mode="review", level="guard", source="directive")
    out = run(text, previous)
    assert out.kind == "plain" and out.contract == previous


def test_rule5_still_upgrades_with_a_later_restriction():
    out = run("fix it and do not touch the docs", contract(mode="review", level="guard"))
    assert out.contract["mode"] == "change"


def test_correction_while_off_keeps_off():
    out = run("review only", contract(mode="change", level="off"))
    assert out.kind == "correction"
    assert (out.contract["mode"], out.contract["level"]) == ("review", "off")


def test_stop_while_off_stays_off():
    out = run("stop", contract(level="off"))
    assert (out.contract["mode"], out.contract["level"]) == ("answer", "off")


def test_correction_keeps_lock_and_other_fields():
    previous = contract(mode="change", level="lock", agentBudget=2, allowedPaths=["src/**"],
                        hashPolicy="allow")
    out = run("review only", previous)
    assert out.contract == dict(previous, mode="review", source="natural-explicit")


def test_crlf_lines():
    assert run("```\r\nreview only\r\n```\r\n").kind == "plain"
    assert run("note\r\nreview only\r\n").contract["mode"] == "review"


def _linear(make, n):
    """interpret_prompt on make(2n) makes at most about twice the calls it makes
    on make(n): linear in the prompt, never a re-scan per line or per quote."""
    small = calls_made(run, make(n))[1]
    large = calls_made(run, make(2 * n))[1]
    return large <= 2.5 * small + 50, (n, small, large)


def test_large_prompt_is_read_in_linear_work():
    def make(n):
        return ("Some prose with 'quotes' and \"more\" and `code` here.\n" * n
                + "    indented\n```\nfenced\n```\nreview only")
    assert run(make(20000)).contract["mode"] == "review"
    ok, detail = _linear(make, 2500)
    assert ok, detail


def test_pathological_quotes_are_read_in_linear_work():
    def make(n):
        return " 'a" * n + ' \\"' * n + ' "' + "`" * 3 + " `x" * n
    assert run(make(20000)).kind == "plain"
    ok, detail = _linear(make, 2500)
    assert ok, detail


# --- 2.7 inspection grammar -------------------------------------------------

EVT = "evt_6b370aca-81a8-4514-bfcd-e6835430bba9"


@pytest.mark.parametrize("text,expected", [
    (D + " status", ("status",)),
    ("\n  \n  " + D + "\tSTATUS  \n\n", ("status",)),
    (D + " runtime", ("runtime", "this")),
    (D + " runtime all", ("runtime", "all")),
    (D + " Runtime   ALL", ("runtime", "all")),
    (D + " explain " + EVT, ("explain", EVT)),
    (D + " explain " + EVT.upper().replace("EVT_", "evt_"), ("explain", EVT)),
    (D + " label " + EVT + " correct", ("label", EVT, "correct")),
    (D + " label " + EVT + " CORRECT", ("label", EVT, "correct")),
    (D + " label " + EVT + " Incorrect", ("label", EVT, "incorrect")),
    (D + " label " + EVT + " inconclusive", ("label", EVT, "inconclusive")),
])
def test_inspection_commands(text, expected):
    assert sts.parse_inspection_command(text) == expected


@pytest.mark.parametrize("text", [
    D + " status please",
    D + " status -- now",
    D + " explain",
    D + " label " + EVT + " wrong",
    D + " label " + EVT,
    D + " runtime some",
    D + "status",
    "    " + D + " status",
    "please " + D + " status",
    D + " explain evt_xyz",
    D + " status\nmore text",
    D,
])
def test_non_inspection_commands(text):
    assert sts.parse_inspection_command(text) is None


@pytest.mark.parametrize("text,token", [
    (D + " status please", "status"),
    (D + " status -- now", "status"),
    (D + " explain", "explain"),
    (D + " label " + EVT + " wrong", "label"),
])
def test_failed_commands_become_directive_errors(text, token):
    out = run(text)
    assert out.error["code"] == "INVALID_DIRECTIVE_TOKEN"
    assert out.error["token"] == token


# --- 5.2 contract context ---------------------------------------------------

def test_context_recovery():
    err = {"code": "STATE_DAMAGED", "message": "The state file cannot be read."}
    text = sts.contract_context(contract(mode="review", level="guard"), 0, True, err)
    assert text == "STATE_DAMAGED: The state file cannot be read."


def test_context_off():
    text = sts.contract_context(contract(mode="change", level="off"), 0, False)
    assert "off" in text
    assert "mode=" not in text


def test_context_unconfirmed():
    text = sts.contract_context(contract(), 0, False)
    assert "$stop-that-shit review" in text
    assert "change" in text
    assert "mode=" not in text
    assert "\n" not in text


def test_context_active_fields_and_ladder():
    c = contract(mode="review", level="guard", source="directive")
    text = sts.contract_context(c, 0, False)
    fields = ("mode=review; agents=0/unlimited reserved; hash=deny; deps=ask; undo=ask; "
              "files=unbounded.")
    assert text.startswith("Stop That Shit (active): " + fields + " ")
    for needle in ("requested", "necessary", "reachable evidence", "acceptance",
                   "findings", "guardrail, not a security boundary"):
        assert needle in text
    assert "\n" not in text


@pytest.mark.parametrize("fields,reserved,unproven,expected", [
    (dict(mode="change", agentBudget=1), 1, True,
     "mode=change; agents=1/1 reserved; count unproven; hash=deny; deps=ask; undo=ask; files=unbounded."),
    (dict(mode="change", allowedPaths=[]), 0, False,
     "mode=change; agents=0/unlimited reserved; hash=deny; deps=ask; undo=ask; "
     "files=(none: no path is writable)."),
    (dict(mode="review", allowedPaths=["src/**", "a.js"], hashPolicy="allow",
          dependencyPolicy="deny", agentBudget=3), 2, False,
     "mode=review; agents=2/3 reserved; hash=allow; deps=deny; undo=ask; files=src/**|a.js."),
    (dict(mode="open", agentBudget=True), 0, False,
     "mode=open; agents=0/unlimited reserved; hash=deny; deps=ask; undo=ask; files=unbounded."),
])
def test_contract_fields(fields, reserved, unproven, expected):
    c = contract(level="guard", **fields)
    assert sts.contract_fields(c, reserved, unproven) == expected
    assert expected in sts.contract_context(c, reserved, unproven)


def test_budget_reads_as_a_word_only_when_unlimited():
    # The largest finite budget is a number; the 2**53 - 1 that means "no limit"
    # is never shown to a person or a model as 16 digits.
    assert sts.budget_text(MAX - 1) == str(MAX - 1)
    assert sts.budget_text(MAX) == "unlimited"
    assert sts.budget_text(0) == "0"
    c = contract(mode="change", level="guard")
    assert "agents=0/unlimited reserved" in sts.contract_context(c, 0, False)
    assert str(MAX) not in sts.contract_context(c, 0, False)
    assert "agents=0/%d reserved" % (MAX - 1) in sts.contract_context(
        contract(mode="change", level="guard", agentBudget=MAX - 1), 0, False)


def test_context_does_not_mutate():
    c = contract(mode="change", level="lock", allowedPaths=["a"])
    before = copy.deepcopy(c)
    sts.contract_context(c, 1, True)
    sts.contract_fields(c, 1, True)
    assert c == before


def test_context_changes_with_reserved_count():
    c = contract(mode="change", level="guard")
    assert sts.contract_context(c, 0, False) != sts.contract_context(c, 1, False)
    assert sts.contract_context(c, 1, False) != sts.contract_context(c, 1, True)


@pytest.mark.parametrize("c", [contract(), contract(level="off"),
                               contract(mode="review", level="guard")])
def test_context_warning_prefix(c):
    plain = sts.contract_context(c, 0, False)
    warned = sts.contract_context(c, 0, False, warning="Check the field.")
    assert warned == "Warning: Check the field. " + plain


def test_recovery_ignores_warning():
    err = {"code": "STS_LOCK_DAMAGED", "message": "The lock is damaged."}
    assert sts.contract_context(contract(), 0, False, err, warning="x") == \
        "STS_LOCK_DAMAGED: The lock is damaged."


def test_changed_flag_for_corrections():
    previous = contract(mode="review", level="guard", source="natural-explicit")
    out = run("review only", previous)
    assert out.kind == "correction" and out.changed is False
    out = run("review only", contract(mode="change", level="guard"))
    assert out.changed is True


def test_plain_prompt_is_unchanged_copy():
    previous = contract(mode="review", level="guard", allowedPaths=["x"])
    out = run("please look at the parser", previous)
    assert out.kind == "plain" and out.changed is False
    assert out.contract == previous and out.contract is not previous


@pytest.mark.parametrize("text", [
    "it's review only, ok' said",        # apostrophe after a letter does not open
    "'don't review only",                # nor close when a letter follows
    "'review only'd",
    "\\'review only'",                   # escaped opener
    "'review only\\' here",              # escaped closer
    "say '\u4e2d review only",           # unmatched opener stays prose
])
def test_single_quote_boundaries_keep_prose(text):
    assert run(text).contract["mode"] == "review"


@pytest.mark.parametrize("text", [
    "'review only'", "('review only')", "x 'review only'.", "'a' then 'review only'",
])
def test_single_quotes_hide_text(text):
    assert run(text).kind == "plain"
