"""Style rules that are checked.

sts.py is one module: a name defined twice at top level silently replaces the
first, and a private name nothing reads is dead code.  Every comment stands
alone: nothing in the repository cites a document that is not in it.  The
banners make a map of the file (`make map`) that stays true, and the file
grows only by decision (LINE_BUDGET), and so does its longest function
(FUNCTION_LINE_MAX).  Each fact is written once: the program registry names
a program once, and the modes, levels and policies are listed only in their
tables.
"""
import ast
import collections
import functools
import os
import re
import pytest

import sts_map
from hooks import ROOT

# The most lines sts.py and each of its Parts may have, as `make map` counts
# them: growth is a decision.  Raising a budget is a one-line change here, in
# the same commit as the growth, with its reason in the commit message.
LINE_BUDGET = {   # lines when set, plus 3%
    "sts.py":                            32_325,  # 31,383 lines when set
    "Part 1: Runtime floor":                436,  # 423 lines when set
    "Part 2: Protocol and contract":      1_527,  # 1,482 lines when set
    "Part 3: Analysis":                  15_116,  # 14,675 lines when set
    "Part 4: Decision and ledger":        3_133,  # 3,041 lines when set
    "Part 5: State and engine":           2_407,  # 2,336 lines when set
    "Part 6: Hosts":                      6_499,  # 6,309 lines when set
    "Part 7: Entry points":               3_024,  # 2,935 lines when set
}

# The most lines one function of sts.py may span, from its `def` to its last
# line (a nested function counts on its own and inside the one that holds
# it): a longer one is split into named steps, so that each reads on one
# screen or two.  Raising it is a decision, like a LINE_BUDGET row.  When set,
# the longest were _writer_targets 163, _ps_words 129, _word_pieces 128,
# _classify_cmd 124 and _py_flow_targets 123.
FUNCTION_LINE_MAX = 170


@functools.lru_cache(maxsize=None)
def sts_tree():
    """sts.py parsed once for every test here (13,000 lines take a while)."""
    with open(os.path.join(ROOT, "sts.py"), encoding="utf-8") as fh:
        return ast.parse(fh.read())


@functools.lru_cache(maxsize=None)
def sts_nodes():
    """Every node of sts.py's tree, walked once."""
    return tuple(ast.walk(sts_tree()))


def top_level_names(tree):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield target.id, node.lineno
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id, node.lineno


def test_no_top_level_name_is_defined_twice():
    tree = sts_tree()
    seen = collections.defaultdict(list)
    for name, line in top_level_names(tree):
        seen[name].append(line)
    twice = {name: lines for name, lines in seen.items() if len(lines) > 1}
    assert twice == {}


def test_sts_imports_only_the_standard_library():
    tree = sts_tree()
    import sys
    stdlib = set(sys.stdlib_module_names) if hasattr(sys, "stdlib_module_names") else None
    modules = set()
    for node in sts_nodes():
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module.split(".")[0])
    modules.discard("__future__")
    if stdlib is not None:
        # _sha2/_sha256: the module's name before and after 3.12; tomllib is
        # standard from 3.11 (sts reads TOML without it on 3.9 and 3.10).
        stdlib = stdlib | {"_sha2", "_sha256", "tomllib"}
        assert modules <= stdlib, modules - stdlib


def test_no_class_is_a_dataclass_at_import():
    """A dataclass costs code generation at import, on every hook run.  The
    three ControlEvent v2 types become dataclasses only when read from the
    module (see _EventType); nothing else is one."""
    tree = sts_tree()
    decorated = [node.name for node in tree.body if isinstance(node, ast.ClassDef)
                 and any("dataclass" in ast.dump(d) for d in node.decorator_list)]
    lazy = [node.name for node in tree.body if isinstance(node, ast.ClassDef)
            and any(getattr(b, "id", None) == "_EventType" for b in node.bases)]
    assert decorated == []
    assert lazy == ["Action", "ActionResult", "ControlEvent"]


def test_every_private_top_level_name_is_used():
    """A private helper or table nothing reads is dead code left behind."""
    tree = sts_tree()
    used = {node.id for node in sts_nodes() if isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)}
    used |= {node.attr for node in sts_nodes() if isinstance(node, ast.Attribute)}
    used |= {node.value for node in sts_nodes()  # getattr(self, "_bucket") tables
             if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    unused = sorted(name for name, _ in top_level_names(tree)
                    if name.startswith("_") and not name.startswith("__") and name not in used)
    assert unused == []


def _section_lines(title):
    """(first, last) line of the bannered section whose title line is `# <title>`."""
    with open(os.path.join(ROOT, "sts.py"), encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    banner = "#" * 79
    starts = [i + 1 for i, line in enumerate(lines) if line == banner
              and i + 1 < len(lines) and lines[i + 1].startswith("# ")
              and lines[i + 1][2:].strip()]
    titles = {lines[n][2:].strip(): n for n in starts}
    first = titles[title]
    later = [n for n in starts if n > first]
    return first, (later[0] if later else len(lines))


def test_nothing_outside_the_state_section_calls_a_private_part_of_store():
    """The State and audit section owns the files on disk; everything else goes
    through Store's public methods, so a write is durable and locked the same
    way wherever it comes from."""
    store = next(node for node in sts_tree().body
                 if isinstance(node, ast.ClassDef) and node.name == "Store")
    private = {node.name for node in store.body if isinstance(node, ast.FunctionDef)
               and node.name.startswith("_") and not node.name.startswith("__")}
    private |= {node.attr for node in ast.walk(store) if isinstance(node, ast.Attribute)
                and node.attr.startswith("_") and not node.attr.startswith("__")
                and getattr(node.value, "id", None) == "self"}
    assert {"_write_json", "_acquire", "_state_path"} <= private  # the rule has teeth
    first, last = _section_lines("State and audit")
    own = {}  # a class outside the section may have a private method of the same name
    for node in sts_nodes():
        if isinstance(node, ast.ClassDef) and node.name != "Store":
            names = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
            for inner in ast.walk(node):
                own[id(inner)] = names
    outside = sorted(
        (node.lineno, node.attr) for node in sts_nodes()
        if isinstance(node, ast.Attribute) and node.attr in private
        and not first <= node.lineno <= last
        and not (getattr(node.value, "id", None) in ("self", "cls")
                 and node.attr in own.get(id(node), ())))
    assert outside == []


# ---- comments that stand alone ------------------------------------------------
#
# The code was written from specification documents that are not in this
# repository.  A comment, docstring or test that cites them ("see <spec
# file> 4.2", a decision label, a bare section number) sends a reader where
# they cannot follow; say the rule in words instead, where it is applied.

# A spec file, a decision label (ten, dash, letter, digit), the section sign,
# a bare spec label in parentheses (a letter and a digit), the design notes
# the project started from, the short name of the reference implementation.
_CITATION = re.compile(
    r"\b(?:core|adapters|analysis|decisions)\.md\b"
    r"|\b10-[A-Z][0-9]\b"
    r"|\u00a7"
    r"|\((?:[SCLDAGPV][0-9])(?:(?:, ?|/)[SCLDAGPV]?[0-9])*\)"
    r"|\bdesign\s+card\b"
    r"|\bREF\b")
# In comments and docstrings also a bare section number in parentheses.
_SECTION = re.compile(r"\((?:[1-9]\.[0-9]+[a-z]?)(?:(?:, |/| and |-)[1-9]\.[0-9]+)*\)")
_TEXT_FILES = (".py", ".js", ".mjs", ".md", ".txt", ".json", ".jsonl", ".yaml", ".toml", ".sh")
_NOT_OURS = ("__pycache__", ".git", ".venv", "node_modules", ".e2e-cache", ".pytest_cache")
# What the hosts themselves sent, recorded as it was: not our words.
_RECORDED = os.path.join("tests", "fixtures", "payloads") + os.sep


def _repository_texts():
    for base, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in _NOT_OURS)
        for name in sorted(files):
            path = os.path.join(base, name)
            rel = os.path.relpath(path, ROOT)
            if rel.startswith(_RECORDED):
                continue
            if name.endswith(_TEXT_FILES) or name == "Makefile" or rel == os.path.join(".ci", "run"):
                with open(path, encoding="utf-8") as fh:
                    yield rel, fh.read()


def _python_comments_and_docstrings(text):
    """(line, text) of every comment and docstring of a Python source."""
    import io
    import tokenize
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield getattr(node, "lineno", 1), doc


def test_no_text_in_the_repository_cites_a_document_outside_it():
    found = ["%s:%d: %s" % (rel, number, hit.group(0))
             for rel, text in _repository_texts()
             for number, line in enumerate(text.split("\n"), 1)
             for hit in _CITATION.finditer(line)]
    assert found == []


@pytest.mark.slow   # tokenizes every Python file of the repository
def test_no_comment_or_docstring_cites_a_section_number():
    found = []
    for rel, text in _repository_texts():
        if rel.endswith(".py"):
            pieces = _python_comments_and_docstrings(text)
        elif rel.endswith((".js", ".mjs")):
            pieces = ((n, line.partition("//")[2]) for n, line in enumerate(text.split("\n"), 1)
                      if "//" in line)
        else:
            continue
        found += ["%s:%d: %s" % (rel, n, hit.group(0)) for n, piece in pieces
                  for hit in _SECTION.finditer(piece)]
    assert found == []


def test_the_citation_patterns_catch_what_they_are_for():
    cited = ["see " + "core" + ".md 4.2", "(" + "S2)", "10-" + "P1 says", "\u00a7" + "2.3",
             "as the design" + " card asks", "R" + "EF V1"]
    assert all(_CITATION.search(text) for text in cited)
    assert _SECTION.search("refused outright (" + "5.3).")
    plain = ["C0 and C1 controls", "S1-codex is a case", "python 3.11", "sqrt(2.5)",
             "sha256 over UTF-8", "Node 20"]
    assert not any(_CITATION.search(text) for text in plain)


# ---- the module docstring's map -------------------------------------------------

def _sections():
    """(first line, title) of each top-level section banner of sts.py."""
    with open(os.path.join(ROOT, "sts.py"), encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    return [(number + 2, lines[number + 1][2:].split(":")[0].strip())
            for number, line in enumerate(lines[:-1])
            if line == "#" * 79 and re.match(r"# [A-Z]", lines[number + 1])]


def test_the_docstring_lists_the_parts_and_sections_in_file_order():
    doc = ast.get_docstring(sts_tree()).split("\n")
    first = next(n for n, line in enumerate(doc) if line.startswith("  Part 1: "))
    listed = []   # (Part title, [section names])
    for line in doc[first:doc.index("", first)]:
        if line.startswith("  Part "):
            listed.append((line.strip(), []))
        else:
            entry = re.match(r"^    ([A-Z][a-z]+(?: [a-z]+)*(?:, [A-Z]+)?)  ", line)
            if entry:
                listed[-1][1].extend(entry.group(1).split(", "))
    _, parts = sts_map.read_map(sts_map.source_lines())
    in_file = [(part.title, list(dict.fromkeys(
        section.title.split(":")[0].split(",")[0] for section in part.children)))
        for part in parts]
    assert listed == in_file


def test_each_section_uses_only_the_sections_above_it_but_the_named_three():
    """The module docstring says the file reads as layers, and names the calls
    that reach down; this keeps that true."""
    starts = _sections()
    order = ["(top)"] + list(dict.fromkeys(title for _, title in starts))

    def section_of(line):
        found = "(top)"
        for start, title in starts:
            if line >= start:
                found = title
        return found

    defined = {}
    for node in sts_tree().body:
        for name, line in top_level_names(ast.Module(body=[node], type_ignores=[])):
            defined[name] = section_of(line)
    down = set()
    for node in sts_tree().body:
        here = section_of(node.lineno)
        for sub in ast.walk(node):
            # A hot section reaches a cold one's name through _cold("name"),
            # the loader (in the CLI section): that names `name`, not _cold.
            name = sub.id if isinstance(sub, ast.Name) and sub.id != "_cold" else \
                sub.args[0].value if isinstance(sub, ast.Call) \
                and getattr(sub.func, "id", None) == "_cold" and sub.args \
                and isinstance(sub.args[0], ast.Constant) else None
            if name in defined and order.index(defined[name]) > order.index(here):
                down.add((here, name))
    assert down == {("Decision", "ledger_summary"), ("Engine", "inspection_response"),
                    ("Cases", "ADAPTERS"), ("Cases", "run_hook")}


# ---- adapters only translate ---------------------------------------------------

# What only the engine may do: judge a call, change the ledger or the
# contract, read or write the session state.
_ENGINE_ONLY = {"decide", "handle_event", "apply_admission", "apply_lifecycle_fact",
                "state_busy_decision", "recovery_state", "default_state"}
_STATE_METHODS = {"load", "update", "preserve_damaged"}


def test_the_adapters_never_judge_and_never_touch_the_session_state():
    """An adapter turns a host event into a ControlEvent and the core's answer
    into the host's; a rule in an adapter would give one host its own answer."""
    starts = _sections()
    adapter_lines = []
    for index, (start, title) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else 10 ** 9
        if title == "Adapters":
            adapter_lines.append((start, end))
    assert len(adapter_lines) >= 4  # shared helpers and the three host groups

    def in_adapters(node):
        return any(a <= getattr(node, "lineno", 0) < b for a, b in adapter_lines)
    found = []
    for node in sts_nodes():
        if not isinstance(node, ast.Call) or not in_adapters(node):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in _ENGINE_ONLY:
            found.append((node.lineno, func.id))
        elif isinstance(func, ast.Attribute) and func.attr in _STATE_METHODS \
                and getattr(func.value, "id", None) == "store":
            found.append((node.lineno, "store." + func.attr))
        elif isinstance(func, ast.Name) and func.id == "CoreResult" and node.args \
                and getattr(node.args[0], "value", None) == "deny":
            found.append((node.lineno, "CoreResult(deny)"))
    # The one answer an adapter gives itself: Oh My Pi's `/sts` typed in a
    # child session, refused because it can never reach the root's contract.
    assert [name for _, name in found] == ["CoreResult(deny)"]


# ---- banners: the map of the file -------------------------------------------
#
# Three levels, each with one form (tests/sts_map.py reads them):
#   a Part: a rule of `=`, `# Part N: Title`, what the Part is, its sections
#     and their sizes, a rule of `=`;
#   a section: a rule of 79 `#`, `# Title`, `#`, `# Owns ...` and more lines,
#     a rule of 79 `#`;
#   a division: `# ---- name ---...`, exactly 79 wide.

def _lines():
    return sts_map.source_lines()


def test_every_section_banner_has_one_form():
    lines = _lines()
    wrong = []
    for n, line in enumerate(lines[:-1]):
        if line != "#" * 79 or not re.match(r"# [A-Z]", lines[n + 1]):
            continue
        title = lines[n + 1][2:]
        end = next(m for m in range(n + 1, len(lines)) if lines[m] == "#" * 79)
        # A plain title; only the adapters' sections are one family, named after it.
        plain = re.fullmatch(r"[A-Z][a-z]+(?: [a-z]+)*(?:, [a-z]+)*(?: and [a-z]+)?|CLI", title)
        family = re.fullmatch(r"Adapters: [A-Za-z ,]+", title)
        if not (plain or family) or lines[n + 2] != "#" \
                or not lines[n + 3].startswith("# Owns ") \
                or not all(text == "#" or text.startswith("# ") for text in lines[n + 1:end]):
            wrong.append((n + 2, title))
    assert wrong == []


def test_every_division_is_79_wide():
    wrong = [(n, line) for n, line in enumerate(_lines(), 1)
             if re.match(r"\s*# -{3,}", line)
             and (len(line) != 79 or not re.fullmatch(r" *# ---- \S.*? -+", line))]
    assert wrong == []


def test_the_parts_are_numbered_and_hold_every_section():
    _, parts = sts_map.read_map(_lines())
    assert len(parts) >= 5
    assert [re.match(r"Part (\d+): ", part.title).group(1) for part in parts] == \
        [str(n) for n in range(1, len(parts) + 1)]
    in_parts = [section.title.split(":")[0] for part in parts for section in part.children]
    assert in_parts == [title for _, title in _sections()]


def test_each_part_banner_lists_its_sections_with_true_sizes():
    """A banner's sizes are rounded, and may drift a little before someone
    runs `python3 tests/sts_map.py --update`; a tenth off (at least 60
    lines) is stale."""
    lines = _lines()
    _, parts = sts_map.read_map(lines)
    stated = sts_map.stated(lines)
    real = sts_map.real(lines)
    for part in parts:
        listed = sorted((key for key in stated if key[0] == part.title), key=stated.get)
        assert [key[1] for key in listed] == \
            [section.title for section in part.children] + [sts_map.WHOLE], part.title
    stale = {key: (size, real[key]) for key, (_, size) in stated.items()
             if abs(size - real[key]) > max(60, real[key] // 10)}
    assert stale == {}, "run python3 tests/sts_map.py --update"


def test_the_map_prints_every_part_and_section(tmp_path):
    """`make map` on a small file of the same form: the size it prints is
    the lines from a banner to the next one of its level or above."""
    import subprocess
    import sys
    rule, part = "#" * 79, "# " + "=" * 77
    text = ["x = 0", part, "# Part 1: One", part, rule, "# Alpha", "#", "# Owns a.", rule,
            "a = 1", "# ---- inner ---", "b = 2", part, "# Part 2: Two", part, rule,
            "# Beta", "#", "# Owns b.", rule, "c = 3"]
    path = tmp_path / "sts.py"
    path.write_text("\n".join(text) + "\n")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "sts_map.py"), "--all",
                          str(path)], capture_output=True, text=True, check=True).stdout
    rows = [re.split(r"\s{2,}", row.strip()) for row in out.strip().split("\n")]
    assert rows == [["sts.py", "21", "line"], ["(before Part 1: docstring, imports)", "1", "1"],
                    ["Part 1: One", "11", "2"], ["Alpha", "8", "5"], ["inner", "2", "11"],
                    ["Part 2: Two", "9", "13"], ["Beta", "6", "16"]]


# ---- growth budget ----------------------------------------------------------

# The most bytes the hot part of the split bytecode cache may have, per
# interpreter, as a first hook leaves it: every hook process reads and
# unmarshals it, about half of a hook's work.  Set at this round's size plus
# 3%; raising one is a decision, in the commit that grows it.
HOT_BYTECODE_BUDGET = {
    "cpython-39":    656_638,  # 637,512 bytes when set
    "cpython-310":   655_825,  # 636,723 bytes when set
    "cpython-311": 1_077_936,  # 1,046,539 bytes when set
    "cpython-312":   954_590,  # 926,786 bytes when set
    "cpython-313":   980_693,  # 952,129 bytes when set
}


def test_the_hot_bytecode_stays_within_its_budget(tmp_path):
    import sys
    from hooks import place_hooked_sts
    tag = sys.implementation.cache_tag
    if tag not in HOT_BYTECODE_BUDGET:
        pytest.skip("no hot-bytecode budget for %s" % tag)
    place_hooked_sts(str(tmp_path / "sts.py"))
    size = os.path.getsize(str(tmp_path / "__pycache__" / ("sts.%s.hot.pyc" % tag)))
    assert size <= HOT_BYTECODE_BUDGET[tag], (
        "the hot part is %d bytes: shrink it, or raise HOT_BYTECODE_BUDGET in the same "
        "commit, with the reason" % size)


def test_sts_stays_within_its_line_budget():
    lines = _lines()
    _, parts = sts_map.read_map(lines)
    sizes = dict({"sts.py": len(lines)}, **{part.title: part.lines for part in parts})
    assert set(LINE_BUDGET) == set(sizes), "a Part was added or renamed: give it a budget"
    over = {name: (size, LINE_BUDGET[name]) for name, size in sizes.items()
            if size > LINE_BUDGET[name]}
    assert over == {}, "shrink, or raise its LINE_BUDGET row in the same commit, with the reason"


def functions_longer_than(tree, limit):
    """(name, first line, lines) of every function in tree spanning more
    than `limit` lines, the longest first.  A class a function defines
    (loaded only when first used) is not the function's length: its
    methods are measured one by one."""
    spans = [(node.end_lineno - node.lineno + 1
              - sum(c.end_lineno - c.lineno + 1 for c in node.body if isinstance(c, ast.ClassDef)),
              node.lineno, node.name)
             for node in ast.walk(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return [(name, line, size) for size, line, name in sorted(spans, key=lambda s: (-s[0], s[1]))
            if size > limit]


def test_the_function_length_check_counts_from_def_to_last_line():
    source = ("class K:\n    def m(self):\n        x = 1\n\n        return x\n\n\n"
              "def f():\n    def g():\n        pass\n    return g\n\n\n"
              "def h():\n    class L:\n        def n(self):\n            pass\n    return L\n")
    tree = ast.parse(source)
    assert functions_longer_than(tree, 3) == [("m", 2, 4), ("f", 8, 4)]
    assert functions_longer_than(tree, 4) == []
    assert functions_longer_than(tree, 1) == [("m", 2, 4), ("f", 8, 4), ("g", 9, 2),
                                              ("h", 14, 2), ("n", 16, 2)]


def test_no_function_of_sts_is_longer_than_the_max():
    over = functions_longer_than(sts_tree(), FUNCTION_LINE_MAX)
    assert over == [], "split these into named steps: %r" % over


def test_every_name_sts_reads_is_defined_somewhere():
    """A name read but bound nowhere in the module is a NameError waiting for
    the call that reaches it (a constant removed as dead while a later change
    came to use it)."""
    import builtins
    bound = set(dir(builtins)) | {"__file__", "__cached__"}
    for node in ast.walk(sts_tree()):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    read = {n.id for n in ast.walk(sts_tree()) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}
    assert sorted(read - bound) == []


# ---- each fact written once -------------------------------------------------

def _top_level_value(name):
    """The value node of the top-level assignment to `name` in sts.py."""
    for node in sts_tree().body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return node.value
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name
                                                for t in node.targets):
            return node.value
    raise AssertionError("sts.py assigns no %s" % name)


def _keys_named_twice(literal, namespace):
    """Key -> the lines that name it, for every key a dict literal names more
    than once.  A `**expression` entry names the keys of what the expression
    evaluates to in `namespace` (the module), so a name in a `dict.fromkeys`
    row or a comprehension counts as well as a plain `"name": handler`."""
    lines = collections.defaultdict(list)
    for key, value in zip(literal.keys, literal.values):
        if key is not None:
            lines[ast.literal_eval(key)].append(key.lineno)
            continue
        spread = eval(compile(ast.Expression(value), "sts.py", "eval"), namespace)
        for name in spread:
            lines[name].append(value.lineno)
    return {name: found for name, found in lines.items() if len(found) > 1}


def test_the_program_registry_names_each_program_once():
    """In a dict literal a later entry silently replaces an earlier one, so a
    program named twice has a handler nobody reads."""
    import sts
    twice = _keys_named_twice(_top_level_value("_PROGRAMS"), vars(sts))
    assert twice == {}


def test_the_twice_named_check_sees_every_kind_of_entry():
    literal = ast.parse('{**dict.fromkeys(("a", "b"), 0), "b": 1, **{k: 2 for k in ("c", "a")},'
                        ' "d": 3}', mode="eval").body
    assert _keys_named_twice(literal, {}) == {"a": [1, 1], "b": [1, 1]}


# name -> (the words, how many of them make a literal a list of them, whether
# the literal must hold nothing else).  Policy words are also the hook's
# verdict words (allow, deny, ask, note), so only a literal made of policy
# words alone counts as a list of policies.
_CONTRACT_WORDS = {
    "MODES": (frozenset(("unconfirmed", "open", "change", "monitor", "review", "answer")), False),
    "LEVELS": (frozenset(("off", "watch", "guard", "lock")), False),
    "POLICIES": (frozenset(("allow", "ask", "deny")), True),
}
# Literals that name modes for another reason: the correction rules are named
# after the mode each one sets.
_NAMES_MODES_OTHERWISE = frozenset(("_PATTERNS",))


def _word_lists(tree):
    """(top-level name, line, words) for each tuple, list, set or dict-keys
    literal of `tree` with two or more string constants."""
    for statement in tree.body:
        owner = getattr(statement, "name", None)
        if isinstance(statement, ast.Assign):
            owner = getattr(statement.targets[0], "id", None)
        elif isinstance(statement, ast.AnnAssign):
            owner = getattr(statement.target, "id", None)
        for node in ast.walk(statement):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                items = node.elts
            elif isinstance(node, ast.Dict):
                items = [key for key in node.keys if key is not None]
            else:
                continue
            words = [i.value for i in items
                     if isinstance(i, ast.Constant) and isinstance(i.value, str)]
            if len(words) >= 2:
                yield owner, node.lineno, frozenset(words)


def _contract_word_lists(tree):
    """(table, owner, line) for each literal outside a table that lists two
    or more of the table's words."""
    for owner, line, words in _word_lists(tree):
        for table, (names, alone) in _CONTRACT_WORDS.items():
            if owner == table or (table == "MODES" and owner in _NAMES_MODES_OTHERWISE):
                continue
            if len(words & names) >= 2 and (not alone or words <= names):
                yield table, owner, line


def test_modes_levels_and_policies_are_listed_only_in_their_tables():
    """A second list of the modes (levels, policies) drifts from the first;
    the others are derived from the table or look a row up in it."""
    assert sorted(_contract_word_lists(sts_tree())) == []


def test_the_list_check_finds_a_second_list():
    tree = ast.parse('MODES = {"review": 1, "answer": 2}\n'
                     'READ_ONLY = frozenset(("answer", "review"))\n'
                     'def f(level):\n    return level in ("guard", "lock")\n'
                     'VERDICTS = ("allow", "deny", "note")\nPOLICY = {"ask": 1, "deny": 2}\n')
    assert sorted(_contract_word_lists(tree)) == [
        ("LEVELS", "f", 4), ("MODES", "READ_ONLY", 2), ("POLICIES", "POLICY", 6)]
