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
