"""Tests for the Analysis section of sts.py: shell verdicts, intents, patches."""
import os
import time

import pytest

import sts

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "analysis_corpus.txt")
MARKERS = {"⏎": "\n", "⟨CR⟩": "\r", "⟨NEL⟩": "\u0085", "⟨TAB⟩": "\t"}


def load_corpus():
    """(line number, label, tags, command) for every labelled line."""
    rows = []
    with open(CORPUS, encoding="utf-8") as fh:
        for number, raw in enumerate(fh, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            head, sep, command = line.partition(" | ")
            assert sep, "line %d has no ' | '" % number
            parts = head.split()
            for marker, char in MARKERS.items():
                command = command.replace(marker, char)
            # Tags may also trail the command (" +H", " -D"): they are never part of it.
            tail_tags = []
            while command[-3:] in (" +H", " -H", " +D", " -D"):
                tail_tags.insert(0, command[-2:])
                command = command[:-3]
            rows.append((number, parts[0], parts[1:] + tail_tags, command))
    return rows


ROWS = load_corpus()


def _shell_of(tags):
    if "@ps" in tags:
        return "powershell"
    if "@win" in tags:
        return "unknown"
    return "bash"


@pytest.mark.parametrize("number,label,tags,command", ROWS,
                         ids=["L%d" % r[0] for r in ROWS])
def test_corpus_label(number, label, tags, command):
    result = sts.analyze_shell(command, _shell_of(tags))
    assert result.mutability in ("read", "write", "unknown")
    if label == "read":
        assert result.mutability == "read", result
        assert result.reason is None
    elif label == "write":
        assert result.mutability == "write", result
    elif label == "unknown":
        assert result.mutability == "unknown", result
    elif label == "notread":
        assert result.mutability != "read", result
    else:  # pragma: no cover - corpus typo
        pytest.fail("bad label %r" % label)
    for tag in tags:
        if tag.startswith("="):
            assert result.reason == tag[1:], result
            assert tag[1:] in sts.ANALYSIS_REASONS
        elif tag == "+H":
            assert result.hash_intent, result
        elif tag == "-H":
            assert not result.hash_intent, result
        elif tag == "+D":
            assert result.dependency_intent, result
        elif tag == "-D":
            assert not result.dependency_intent, result
    if result.reason is not None:
        assert result.reason in sts.ANALYSIS_REASONS


def test_corpus_size_and_mix():
    labels = [r[1] for r in ROWS]
    assert len(ROWS) >= 400
    assert labels.count("read") >= len(ROWS) // 4
    # False reads must be zero: every non-read label is checked above; here we
    # make sure the corpus really has a large share of dangerous lines.
    assert len(ROWS) - labels.count("read") >= 200
