"""sts.py is one module: a name defined twice at top level silently replaces the first."""
import ast
import collections
import functools
import os

from hooks import ROOT


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
        stdlib = stdlib | {"_sha2"}   # CPython 3.12+'s name for _sha256
        assert modules <= stdlib, modules - stdlib


def test_only_the_control_event_types_are_dataclasses():
    """Each dataclass costs code generation at import, on every hook run."""
    tree = sts_tree()
    decorated = [node.name for node in tree.body if isinstance(node, ast.ClassDef)
                 and any(getattr(d, "id", None) == "dataclass" or
                         getattr(getattr(d, "func", None), "id", None) == "dataclass"
                         for d in node.decorator_list)]
    assert decorated == ["Action", "ActionResult", "ControlEvent"]


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
