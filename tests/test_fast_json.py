"""JSON without the json package's start-up: `sts.json` reads and writes
exactly what the standard library's json does.

The hook parses every host event and writes every answer, state file and
audit line through `sts.json`.  These tests hold it to json itself: the same
text for every value and option the hook uses, the same values back, and
json's own exception, type and message, for anything malformed.
"""
import glob
import json
import os
import re
import random
import subprocess
import sys

import pytest

import sts
from hooks import ROOT, KIT

ODD_TEXT = [
    "", "plain", "quote \" backslash \\ slash /", "\b\f\n\r\t", "\x00\x01\x1f\x7f",
    "é ü ß", "日本語", "emoji 😀 pair", "\u2028\u2029", "\ufeffbom", "\U0010ffff",
    "lone \ud800 high", "lone \udfff low", "\udc80\udcff", "\ud83d\ude00 as a pair",
    "tab\tand\nnewline", "\\u0041 not an escape", "</script>", "\x1b[31mred",
]
NUMBERS = [0, -1, 1, 2 ** 53 - 1, 2 ** 53, -2 ** 63, 10 ** 100, -10 ** 300,
           0.0, -0.0, 1.5, -2.25, 1e-7, 1e22, 1.7976931348623157e308, 5e-324,
           0.1 + 0.2, float("nan"), float("inf"), float("-inf"), True, False, None]


def nested(depth, leaf="x"):
    value = leaf
    for n in range(depth):
        value = [value] if n % 2 else {"k%d" % n: value}
    return value


VALUES = ODD_TEXT + NUMBERS + [
    [], {}, [[]], {"a": {}}, [1, "two", 3.0, None, True, [False]], (1, 2),
    {"b": 1, "a": 2, "é": 3, "": 4}, {1: "int key", 2.5: "float", True: "t", None: "n"},
    {"list": ODD_TEXT, "numbers": NUMBERS}, nested(50), nested(199), nested(201),
    nested(600), sts.default_state(),
    {"schemaVersion": 4, "contract": dict(sts.DEFAULT_CONTRACT, allowedPaths=["src/**", "é"]),
     "delegation": {"reservations": {"reservation:a": {"actionId": "a", "pendingCount": 2}},
                    "acceptedActions": {"a": 2}, "unresolved": {}}},
]

OPTIONS = [
    {},                                                   # host answers
    {"ensure_ascii": False},
    {"ensure_ascii": False, "separators": (",", ":")},    # audit lines, ids
    {"indent": 2, "ensure_ascii": False},                 # state files
    {"indent": 2},
    {"indent": 0},
    {"indent": 4, "sort_keys": True},
    {"sort_keys": True},                                  # "did the state change"
    {"sort_keys": True, "default": str},
    {"ensure_ascii": False, "default": str},
    {"separators": (", ", ": "), "indent": 2},
]


def outcome(function, *args, **kwargs):
    """The value returned or the exception raised, as something comparable."""
    try:
        return "ok", repr(function(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return "raised", type(exc).__name__, str(exc)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(sorted(o)) or "default")
def test_every_value_is_written_as_json_writes_it(options):
    for value in VALUES:
        assert outcome(sts.json.dumps, value, **options) == outcome(json.dumps, value, **options)


def test_what_json_cannot_write_fails_with_json_s_own_error():
    circular = []
    circular.append(circular)
    looped = {}
    looped["self"] = looped
    cases = [
        (object(), {}), ({"a": object()}, {"indent": 2}), ({(1, 2): "tuple key"}, {}),
        ({(1, 2): "tuple key"}, {"indent": 2}), (circular, {}), (looped, {"indent": 2}),
        (float("nan"), {"allow_nan": False}), ({"a": 1, 2: "b"}, {"sort_keys": True}),
        ({"a": 1, 2: "b"}, {"sort_keys": True, "indent": 2}), (10 ** 5000, {}),
        ({"x": {1, 2}}, {"default": sorted, "indent": 2}), ({1, 2}, {"default": list}),
    ]
    for value, options in cases:
        mine, theirs = outcome(sts.json.dumps, value, **options), \
            outcome(json.dumps, value, **options)
        assert mine == theirs, (value, options)
    # The two that json can write after all must also come out the same.
    assert sts.json.dumps({"x": {1, 2}}, default=sorted, indent=2) == '{\n  "x": [\n    1,\n    2\n  ]\n}'


def test_every_text_json_writes_reads_back_as_json_reads_it():
    for value in VALUES:
        for options in OPTIONS:
            try:
                text = json.dumps(value, **options)
            except (TypeError, ValueError):
                continue  # mixed key types cannot be sorted
            assert outcome(sts.json.loads, text) == outcome(json.loads, text)
            data = text.encode("utf-8", "surrogatepass")
            assert outcome(sts.json.loads, data) == outcome(json.loads, data)


MALFORMED = [
    "", " ", "\n\t ", "{", "}", "[1 2]", "[1,]", '{"a":1,}', '{"a" 1}', "{'a': 1}", "nul",
    "tru", "01", "1.", "-", ".5", "1e", "+1", "0x10", '"unterminated', '"bad \\x escape"',
    '"bad \\u12 escape"', '"raw \x01 control"', '"raw \n newline"', "[1] [2]", "1 2",
    '{"a": 1} x', "\ufeff{}", "/* comment */ {}", "[" * 100000, "{\"a\":" * 100000,
    "NaN", "-Infinity", "Infinity", "[NaN, Infinity, -Infinity]", "nan", "inf",
    "9" * 5000, "1" + "0" * 400 + ".5", "1e400", "-1e400", "[1e-400]",
]


def test_malformed_text_fails_with_json_s_exception_and_message():
    for text in MALFORMED:
        assert outcome(sts.json.loads, text) == outcome(json.loads, text), text[:40]
        data = text.encode("utf-8")
        assert outcome(sts.json.loads, data) == outcome(json.loads, data), text[:40]


def test_bytes_in_every_encoding_json_detects_read_the_same():
    samples = ['{"a": "é😀"}', "[1, 2]", '"x"', "7", "{}"]
    encodings = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32",
                 "utf-32-le", "utf-32-be", "latin-1"]
    for text in samples:
        for encoding in encodings:
            data = text.encode(encoding, "replace")
            assert outcome(sts.json.loads, data) == outcome(json.loads, data), (text, encoding)
            assert outcome(sts.json.loads, bytearray(data)) == outcome(json.loads, data)
    for data in (b"", b"\x00", b"\x80", b"\xff\xfe", b"{\x00}", b'"\xed\xa0\x80"',
                 b'"\xc3\x28"', b"7\x00"):
        assert outcome(sts.json.loads, data) == outcome(json.loads, data), data
    assert outcome(sts.json.loads, 7) == outcome(json.loads, 7)


def random_value(rng, depth=0):
    kind = rng.randrange(9 if depth < 6 else 6)
    if kind == 0:
        return rng.choice(ODD_TEXT) + "".join(chr(rng.randrange(0x30000))
                                              for _ in range(rng.randrange(6)))
    if kind == 1:
        return rng.randrange(-10 ** 20, 10 ** 20)
    if kind == 2:
        return rng.choice([rng.random() * 10 ** rng.randrange(-30, 30), -rng.random()])
    if kind in (3, 4, 5):
        return rng.choice(NUMBERS)
    if kind in (6, 7):
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    return {random_value(rng, 6) if rng.random() < 0.1 else rng.choice(ODD_TEXT) + str(n):
            random_value(rng, depth + 1) for n in range(rng.randrange(5))}


def test_random_values_and_damaged_texts_match_json():
    rng = random.Random(16)
    for _ in range(1500):
        value = random_value(rng)
        options = rng.choice(OPTIONS)
        mine = outcome(sts.json.dumps, value, **options)
        assert mine == outcome(json.dumps, value, **options), (value, options)
        if mine[0] != "ok":
            continue
        text = json.dumps(value, **options)
        assert outcome(sts.json.loads, text) == outcome(json.loads, text)
        if text:  # one byte removed, replaced or doubled
            at = rng.randrange(len(text))
            for damaged in (text[:at] + text[at + 1:], text[:at] + rng.choice('{}[],:"\\ 1') +
                            text[at + 1:], text[:at] + text[at] + text[at:]):
                assert outcome(sts.json.loads, damaged) == outcome(json.loads, damaged), damaged


def test_other_names_are_the_real_json_module_s():
    assert sts.json.JSONDecodeError is json.JSONDecodeError
    assert sts.json.dump is json.dump
    with pytest.raises(json.JSONDecodeError):
        sts.json.loads("{")


def test_a_tool_call_loads_neither_json_nor_re_nor_dataclasses(sts_home):
    """The import chain the fast path exists to avoid, in a real hook process
    judging the tool calls of an armed session."""
    code = ("import sys; sys.path.insert(0, %r); import sts\n"
            "sts.main(['claude'])\n"
            "print(' '.join(sorted(m for m in ('json', 're', 'enum', 'dataclasses', 'inspect',"
            " 'typing', 'functools', 'collections') if m in sys.modules)))" % ROOT)
    env = dict(os.environ, STS_HOME=str(sts_home))
    arm = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": "/repo",
           "prompt": "$stop-that-shit review -- look"}
    subprocess.run([sys.executable, "-I", "-S", "-c", code], input=json.dumps(arm).encode(),
                   env=env, stdout=subprocess.PIPE, timeout=30, check=True)
    for payload in (
        {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/repo", "tool_name": "Bash",
         "tool_use_id": "c1", "tool_input": {"command": "git status && ls -la | grep x"}},
        {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/repo",
         "tool_name": "Write", "tool_use_id": "c2",
         "tool_input": {"file_path": "/repo/a.txt", "content": "x"}},
        {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/repo", "tool_name": "Read",
         "tool_use_id": "c3", "tool_input": {"file_path": "/repo/README.md"}},
        # A denied removal: self-protection matches its write pattern `build/**`.
        {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/repo", "tool_name": "Bash",
         "tool_use_id": "c4", "tool_input": {"command": "git status && rm -rf build"}},
    ):
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, "claude"],
                              input=json.dumps(payload).encode(), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        assert proc.returncode == 0, proc.stderr
        *answer, loaded = proc.stdout.decode().split("\n")[:-1]
        assert loaded == "", (payload["tool_name"], loaded)
        assert ('"deny"' in "".join(answer)) == (payload["tool_use_id"] in ("c2", "c4"))


def test_malformed_stdin_gets_json_s_message_and_fails_open(sts_home):
    env = dict(os.environ, STS_HOME=str(sts_home))
    code = "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % ROOT
    for raw in (b'{"hook_event_name": "PreToolUse",', b"[1 2]", b"\xef\xbb\xbf{}", b"{" * 50000):
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, "claude"], input=raw,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        assert proc.returncode == 0 and proc.stdout == b""
        lines = proc.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("sts: failed open: "), lines
        try:
            json.loads(raw.decode("utf-8"))
        except ValueError as exc:
            assert lines[0] == "sts: failed open: InvalidJSON: the input is not JSON (%s)" % (
                str(exc).split(":")[0])
        except RecursionError:
            assert lines[0] == ("sts: failed open: RecursionError: the event is nested too "
                                "deeply to read")


def _run_all_kit_events(monkeypatch, tmp_path, codec):
    """Every recorded host event and every case event through run_hook; every
    answer and every data file written."""
    counter = iter(range(10 ** 6))
    monkeypatch.setattr(sts, "json", codec)
    monkeypatch.setattr(sts, "_uuid4_text",
                        lambda: "00000000-0000-4000-8000-%012d" % next(counter))
    monkeypatch.setattr(sts, "utc_now_iso", lambda: "2026-11-30T00:00:00.000Z")
    home = tmp_path / "home"  # the same path for both runs: denials name it
    store = sts.Store(str(home))
    answers = []
    for path in sorted(glob.glob(os.path.join(KIT, "*", "hook-stdin.jsonl"))):
        host = os.path.basename(os.path.dirname(path)).split("-")[0]
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    event = json.loads(line)
                    answers.append(sts.run_hook(event.get("host", host),
                                                json.dumps(event["stdin"]).encode(), store))
    for path in sorted(glob.glob(os.path.join(ROOT, "cases", "*.json"))):
        with open(path, encoding="utf-8") as fh:
            case = json.loads(fh.read().replace("{STS_HOME}", str(home))
                              .replace("{CWD}", "/repo").replace("{STS_PY}", sts.__file__))
        for event in case["events"]:
            answers.append(sts.run_hook(case["host"], json.dumps(event).encode(), store))
    files = {}
    for root, _, names in os.walk(str(home)):
        for name in names:
            with open(os.path.join(root, name), "rb") as fh:
                # An audit index names its log by inode and modification
                # time, which are the file system's numbers, not the codec's.
                files[os.path.relpath(os.path.join(root, name), str(home))] = re.sub(
                    rb'"(ino|mtime)": ?[0-9]+', rb'"\1": 0', fh.read())
    os.rename(str(home), str(tmp_path / codec.__class__.__name__))
    return answers, files


def test_every_recorded_host_event_gives_json_s_bytes(monkeypatch, tmp_path):
    """Answers, state files and audit lines of the host kit's real events and
    of the cases, byte for byte."""
    fast = _run_all_kit_events(monkeypatch, tmp_path, sts.json)
    plain = _run_all_kit_events(monkeypatch, tmp_path, json)
    assert len(fast[0]) > 200 and any(name.startswith("runtime") for name in fast[1])
    assert fast == plain

