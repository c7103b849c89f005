"""Inline Python proven read-only with `ast`.

`python3 -I -c CODE` (or -P, or the code on a here-document) is a read when
the code keeps to a small subset.  The tricks below each try to reach a write
through that subset; every one must stay unproven.  The proven forms are run
for real, in a folder that plants modules named like the standard ones, to
show that -I keeps them out and that nothing is written.
"""
import os
import subprocess
import sys
import tarfile
import zipfile

import pytest

import sts

TRICKS = [
    # (code, what decided: a fragment of the culprit)
    ("().__class__.__base__.__subclasses__()", "__subclasses__"),
    ('open(*["f", "w"])', 'open(*["f", "w"])'),
    ('print(1, file=open("f", "w"))', "file="),
    ("print(__builtins__)", "__builtins__"),
    ("@print\ndef f(): pass", "def f(): pass"),
    ("(x := 1)", "x := 1"),
    ("[y := 5 for _ in [1]]", "y := 5"),
    ("f\"{open('x', 'w')}\"", "open('x', 'w')"),
    ("f\"{1:{open('x', 'w')}}\"", "open('x', 'w')"),
    ("help()", "help()"),
    ("breakpoint()", "breakpoint()"),
    ("input()", "input()"),
    ("exit()", "exit()"),
    ("quit()", "quit()"),
    ("globals()", "globals()"),
    ("vars()", "vars()"),
    ("locals()", "locals()"),
    ('setattr(str, "a", 1)', "setattr"),
    ('getattr(str, "x")', "getattr"),
    ('type("X", (), {})', "type("),
    ("class X: pass", "class X"),
    ("f = lambda: 1\nf()", "f()"),
    # the modules of the wider subset (issue 29), and what they must not hand out
    ("import re; print(re.functools)", "re.functools"),
    ("import re; re.template('x')", "re.template"),
    ("import collections; collections.abc", "collections.abc"),
    ("import collections; collections.UserDict()", "collections.UserDict"),
    ("print(type(1).__subclasses__())", "__subclasses__"),
    ("print(type(1).mro())", "mro"),
    ("print(type(1).__dict__)", "__dict__"),
    ("g = lambda f=open: 1", "open"),
    ("import re; re.sub('a', lambda m: __import__('os'), 'a')", "__import__"),
    ("print(list(map(lambda s: s.write('x'), [1])))", "write"),
    ("import json; k = lambda json: json.loads('1')", "lambda"),
    ("import itertools; list(itertools.starmap(open, [('x', 'w')]))", "open"),
    ("import collections; collections.defaultdict(open)", "open"),
    ("import datetime; datetime.datetime.now().__class__", "__class__"),
    ("from pathlib import Path; Path('a').replace('b')", "pathlib"),
    ("if 0:\n    from re import compile\ncompile('1', '', 'exec')", "compile"),
    ("import textwrap; textwrap.fill('x', **{'width': 1})", "**"),
    ("import re; re.sub('a', 'b', 'a', file=1)", "file"),
    ('sorted([1], key=lambda v: open("x", "w"))', "lambda"),
    ('exec("1")', "exec("),
    ('eval("1")', "eval("),
    ('compile("1", "f", "exec")', "compile("),
    ('__import__("os")', "__import__"),
    ("import os", "import os"),
    ("import subprocess", "import subprocess"),
    ("import shutil", "import shutil"),
    ('import pathlib; pathlib.Path("x").write_text("y")', "import pathlib"),
    ("from os import system", "from os import system"),
    ("import json.decoder", "import json.decoder"),
    ('open("x", "a")', "may write"),
    ('open("x", "r+")', "may write"),
    ('open("x", "w+b")', "may write"),
    ('m = "w"; open("x", m)', "may write"),
    ('open("x", mode="w")', "may write"),
    ('open("x", "r" if 1 else "w")', "may write"),
    ('open("x", "r", opener=print)', "opener"),
    ("open(1)", "not a literal"),
    ('p = "x"; open(p)', "not a literal"),
    ('open("f").write("x")', "write"),
    ('list(map(open, ["f"], ["w"]))', "open"),
    ('sorted(["f"], key=open)', "open"),
    ('o = open; o("f", "w")', "open"),
    ('for open in [print]: open("x", "w")', 'open("x", "w")'),
    ('exec = print; exec("x")', 'exec("x")'),
    ('import sys; sys.path.insert(0, ".")', "sys.path"),
    ('import sys; p = sys.path; p.append(".")', "sys.path"),
    ('import sys; l = []; l.append(sys.path); l[0].append(".")', "sys.path"),
    ("import sys; max(sys.path, sys.argv).append(1)", "sys.path"),
    ("import sys; sum([], sys.path).append(1)", "sys.path"),
    ('import sys; sys.path += ["."]', "sys.path"),
    ('import sys; sys.path[0:0] = ["."]', "sys.path"),
    ("from sys import path", "from sys import path"),
    ('import sys; d = {"p": sys.path}', "sys.path"),
    ("import sys; print(*sys.path)", "sys.path"),
    ('import sys; sys.stdout.write("x")', "sys.stdout"),
    ("import sys; print(sys.modules)", "sys.modules"),
    ("import sys; sys.exit(0)", "sys.exit"),
    ("import json as j; j.x = 1", "j.x"),
    ("import math; math.pi = 3", "math.pi"),
    ("import json as print", "import json as print"),
    ('import platform; platform.os.system("x")', "platform.os"),
    ('import platform as p; p._syscmd_file("x")', "_syscmd_file"),
    ("print.__self__", "__self__"),
    ('"{0.__class__}".format(1)', "format"),
    ('t = "{0}"; t.format(1)', "format"),
    ('import json; json.loads("1", object_hook=print)', "object_hook"),
    ("import json; json.dumps(1, cls=list)", "cls="),
    ('print(**{"sep": ""})', "**"),
    ("x = 1; x.__class__", "__class__"),
    ('print(1) if __name__ == "__main__" else 0', "__name__"),
    ("async def f(): pass", "async def"),
    ("match 1:\n    case 1: pass", "match 1"),
    ("del x", "del x"),
    ("global x", "global x"),
    ("try:\n    pass\nexcept* ValueError:\n    pass", "try"),
    ("import json\ntry:\n    pass\nexcept Exception as json:\n    pass", "except"),
    # pathlib: a value that may be a path reaches no writer, whatever holds it
    ("from pathlib import Path; Path('a').replace('b')", "replace"),
    ("import pathlib; p = pathlib.Path('a'); p.replace('b')", "replace"),
    ("from pathlib import Path; Path('a').copy('b')", "copy"),
    ("from pathlib import Path; Path('a').write_text('x')", "write_text"),
    ("from pathlib import Path; Path('a').write_bytes(b'x')", "write_bytes"),
    ("from pathlib import Path; Path('a').unlink()", "unlink"),
    ("from pathlib import Path; Path('d').mkdir()", "mkdir"),
    ("from pathlib import Path; Path('d').rmdir()", "rmdir"),
    ("from pathlib import Path; Path('a').rename('b')", "rename"),
    ("from pathlib import Path; Path('a').touch()", "touch"),
    ("from pathlib import Path; Path('a').chmod(0)", "chmod"),
    ("from pathlib import Path; Path('a').symlink_to('b')", "symlink_to"),
    ("from pathlib import Path; Path('a').hardlink_to('b')", "hardlink_to"),
    ("from pathlib import Path; Path('a').open('w')", "open"),
    ("from pathlib import Path; Path('a').open()", "open"),
    ("from pathlib import Path; l = []; l.append(Path('a')); l[0].replace('b')", "replace"),
    ("from pathlib import Path; d = {}; d['k'] = Path('a'); d['k'].replace('b')", "replace"),
    ("from pathlib import Path; x = [p for p in Path('.').glob('*')][0]; x.replace('b')",
     "replace"),
    ("from pathlib import Path; list(map(Path, ['a']))[0].replace('b')", "replace"),
    ("from pathlib import Path as P; q = P('a').parent; q.replace('b')", "replace"),
    ("import pathlib\ndef f(x):\n    return pathlib.Path(x)\nf('a').replace('b')", "replace"),
    ("from pathlib import Path\ntry:\n    raise ValueError(Path('a'))\n"
     "except ValueError as e:\n    e.args[0].replace('b')", "replace"),
    ("from pathlib import Path; sum([], Path('a')).replace('b')", "replace"),
    ("from pathlib import Path; {'k': Path('a')}.get('k').replace('b')", "replace"),
    ("from pathlib import Path; p = 'a'; p = Path(p); p.replace('b')", "replace"),
    ("from pathlib import Path\nfor p in [Path('a')]:\n    pass\np.replace('b')", "replace"),
    ("from pathlib import Path; sorted(['a'], key=lambda s: s.replace('b'))", "replace"),
    ("import pathlib; pathlib.PosixPath('a')", "PosixPath"),
    ("import pathlib; pathlib.os", "pathlib.os"),
    # archives: read modes only, never extract, write or add
    ("import zipfile; zipfile.ZipFile('a.zip').extractall()", "extractall"),
    ("import zipfile; zipfile.ZipFile('a.zip').extract('x')", "extract"),
    ("import zipfile; zipfile.ZipFile('a.zip', 'w')", "mode"),
    ("import zipfile; zipfile.ZipFile('a.zip', mode='a')", "mode"),
    ("import zipfile; m = 'r'; zipfile.ZipFile('a.zip', m)", "mode"),
    ("import zipfile; zipfile.ZipFile('a.zip', 'r', mode='w')", "mode"),
    ("import zipfile; zipfile.ZipFile('a.zip').open('x', 'w')", "open"),
    ("import zipfile; zipfile.ZipFile('a.zip').open('x', mode='w')", "open"),
    ("import zipfile; zipfile.ZipFile('a.zip').writestr('x', 'y')", "writestr"),
    ("import zipfile; zipfile.ZipFile('a.zip').write('x')", "write"),
    ("import zipfile; list(map(zipfile.ZipFile, ['a.zip'], ['w']))", "archive opener"),
    ("from zipfile import ZipFile; list(map(ZipFile, ['a.zip'], ['w']))", "ZipFile"),
    ("from zipfile import ZipFile; ZipFile('a.zip', 'w')", "mode"),
    ("import zipfile; zipfile.Path('a.zip')", "zipfile.Path"),
    ("import tarfile; tarfile.open('a.tar', 'w')", "mode"),
    ("import tarfile; tarfile.open('a.tar', 'x:gz')", "mode"),
    ("import tarfile; tarfile.open('a.tar', 'a')", "mode"),
    ("import tarfile; tarfile.open('a.tar').extractall()", "extractall"),
    ("import tarfile; tarfile.open('a.tar', fileobj=open('a', 'rb'))", "fileobj"),
    ("import tarfile; tarfile.TarFile('a', 'w')", "TarFile"),
    ("from tarfile import open", "open"),
    ("import tarfile; t = tarfile.open; t('a', 'w')", "archive opener"),
    # csv, pprint, ast: their readers and printers only
    ("import csv; csv.writer(open('a', 'w'))", "writer"),
    ("import csv; csv.DictWriter", "DictWriter"),
    ("import csv; csv.field_size_limit(1)", "field_size_limit"),
    ("import pprint; pprint.pprint(1, stream=1)", "stream"),
    ("import pprint; pprint.PrettyPrinter()", "PrettyPrinter"),
    ("import ast; ast.sys.path", "ast.sys"),
    ("import ast; ast.main()", "ast.main"),
    ("import ast; ast.NodeVisitor", "NodeVisitor"),
    ("import ast; compile(ast.parse('1'), 'f', 'exec')", "compile"),
    ("from ast import sys", "from ast import sys"),
    # a local def: its body is proven, it is called by its one name only
    ("def f(): return open('x', 'w')", "may write"),
    ("def f(): pass\nf = print\nf(1)", "f(1)"),
    ("def f(): pass\ndef f(): pass\nf()", "f()"),
    ("def open(p, m): pass", "def open"),
    ("def json(): pass", "def json"),
    ("def f(json): pass", "def f(json)"),
    ("def f():\n    yield 1", "yield"),
    ("def f():\n    global x", "global"),
    ("def f(x=open('a', 'w')): pass", "may write"),
    ("def f(x: open('a', 'w')): pass", "may write"),
    ("def f():\n    import os", "import os"),
    ("def f(): pass\nf.__code__", "__code__"),
    ("def f(): pass\nf(**{})", "**"),
    ("print((lambda: 1)())", "lambda"),
    ("with print: pass", "print"),
    ("\uff45\uff58\uff45\uff43('1')", "calls something outside"),  # NFKC: exec
]


@pytest.mark.parametrize("code,fragment", TRICKS, ids=[t[0][:40] for t in TRICKS])
def test_every_trick_stays_unproven(code, fragment):
    proven, part = sts._py_code_proof(code)
    assert not proven
    if part:
        assert fragment in part.replace("\0", " ") or fragment in code, part
    for spelling in ("python3 -I -c %s", "python -P -c %s"):
        command = spelling % sts_quote(code)
        assert sts.analyze_shell(command).mutability != "read", command


def sts_quote(code):
    return "'" + code.replace("'", "'\"'\"'") + "'"


PROVEN = [
    "print(1 + 1)",
    "f = lambda: 1",
    "import re; print(re.findall(r'\\d+', open('a.txt').read()))",
    "import re; p = re.compile('x', re.I); print([m.group(0) for m in p.finditer('xX')])",
    "import re; print(re.sub('a', lambda m: m.group(0).upper(), 'abc', count=1))",
    "import collections; c = collections.Counter('hello'); print(c.most_common(2))",
    "from collections import defaultdict, Counter\nd = defaultdict(list)\nd['a'].append(1)",
    "import itertools; print(list(itertools.islice(itertools.count(), 5)))",
    "import functools; print(functools.reduce(lambda a, b: a + b, [1, 2, 3]))",
    "import textwrap; print(textwrap.dedent('  x'), textwrap.fill('a b', width=1))",
    "import datetime; print(datetime.datetime.now().isoformat())",
    "from datetime import datetime, timedelta\nprint((datetime.now() - timedelta(days=1)).year)",
    "import json\nd = json.load(open('p.json'))\n"
    "for k, v in sorted(d.items(), key=lambda kv: kv[1]):\n    print(k, type(v).__name__)",
    "import sys; print(sys.version)",
    "import sys; print(sys.version_info >= (3, 8), sys.platform)",
    "print(sum(range(10)), min(3, 4), max([1, 2]), len('abc'))",
    "import json; print(json.dumps({'a': [1, 2]}, indent=2, sort_keys=True))",
    "import json; print(json.loads('[1, 2]')[1])",
    "import platform; print(platform.system(), platform.python_version())",
    "import math; print(math.sqrt(2) * math.pi, math.floor(2.5))",
    "print(sorted(set('hello')), 'a,b'.split(',')[0].upper())",
    "print([x * x for x in range(5) if x % 2], {k: v for k, v in [(1, 2)]})",
    "d = {}\nd['a'] = 1\nfor k in d:\n    print(k, d[k])",
    "print(f\"{1 + 1:>5} {'x'!r}\")",
    "import sys; print([p for p in sys.path if p][:1])",
    "with open('data.json') as f: print(len(f.read().splitlines()))",
    "import json; print(json.load(open('data.json', 'r'))['name'])",
    "print(open('data.json', 'rb').read()[:5])",
    "try:\n    print(int('x'))\nexcept ValueError:\n    print('no')",
    "print(str(3).zfill(4), int('ff', 16), float('1.5'), hex(255))",
    # pathlib reads, ast, pprint, csv readers, archives listed and read, local def
    "from pathlib import Path; print(Path('data.json').read_text())",
    "import pathlib; print([p.name for p in pathlib.Path('.').glob('*.json')])",
    "from pathlib import Path\n"
    "for p in sorted(Path('.').rglob('*.json'), key=lambda p: p.stat().st_mtime):\n"
    "    print(p, p.exists(), p.is_file(), p.is_dir(), p.read_text().replace('a', 'b'))",
    "from pathlib import Path\ntext = Path('data.json').read_text()\nprint(text.replace('x', 'y'))",
    "from pathlib import Path; print(sorted(Path('.').iterdir()), Path('data.json').read_bytes())",
    "import ast\nt = ast.parse(open('data.json').read())\n"
    "print([type(n).__name__ for n in ast.walk(t) if isinstance(n, ast.Expr)])",
    "import ast; print(ast.dump(ast.parse('x = 1'), indent=2), ast.literal_eval('[1, 2]'))",
    "from ast import parse, walk, Name\nprint([n.id for n in walk(parse('a + b')) "
    "if isinstance(n, Name)])",
    "import pprint; pprint.pprint({'a': [1, 2]}, width=20); print(pprint.pformat([1]))",
    "import csv\nwith open('data.csv') as f:\n    for row in csv.DictReader(f):\n"
    "        print(row['name'])",
    "import csv; print([r for r in csv.reader(open('data.csv'), delimiter=',')])",
    "import zipfile\nwith zipfile.ZipFile('data.zip') as z:\n    for i in z.infolist():\n"
    "        print(i.filename, i.file_size, z.read(i.filename)[:10])\n"
    "    print(z.namelist(), z.open('a.txt').read())",
    "import zipfile; print(zipfile.ZipFile('data.zip', 'r').namelist())",
    "import tarfile\nwith tarfile.open('data.tar.gz', 'r:gz') as t:\n"
    "    print(t.getnames(), [m.name for m in t.getmembers()], t.extractfile('a.txt').read())",
    "def double(x):\n    return x * 2\nprint(double(3), sorted([3, 1], key=double))",
    "def f(): pass",
]


@pytest.mark.parametrize("code", PROVEN, ids=[c[:40] for c in PROVEN])
def test_proven_code_is_a_read_only_with_the_safe_path_flag(code):
    assert sts._py_code_proof(code) == (True, "")
    quoted = sts_quote(code)
    assert sts.analyze_shell("python3 -I -c %s" % quoted).mutability == "read"
    assert sts.analyze_shell("python3 -P -c %s" % quoted).mutability == "read"
    assert sts.analyze_shell("python3 -Ic %s" % quoted).mutability == "read"
    assert sts.analyze_shell("python3 -I - <<'EOF'\n%s\nEOF" % code).mutability == "read"
    # Without -I or -P the working folder comes first on the import path.
    assert sts.analyze_shell("python3 -c %s" % quoted).mutability != "read"


def test_how_python_is_invoked_matters():
    code = "'print(1)'"
    for command in ("python3 -I x.py -c %s" % code,      # runs x.py
                    "python3 -I -m json.tool -c %s" % code,
                    "python3 -I -i -c %s" % code,         # then reads more code from stdin
                    "python3 -I -W error::x.Y -c %s" % code,
                    "python3 -I -X importtime -c %s" % code,
                    "python3 -I -c \"$CODE\"",
                    "python3 -I - <<EOF\nprint('$HOME')\nEOF",   # expanded before python reads it
                    "python3 -I - <<'EOF' < other.py\nprint(1)\nEOF",  # stdin is other.py
                    "cat x.py | python3 -I",
                    "PYTHONPATH=. python3 -I -c %s" % code):
        assert sts.analyze_shell(command).mutability != "read", command
    assert sts.analyze_shell("python3 -I <<< 'print(2)'").mutability == "read"
    assert sts.analyze_shell("python3.12 -I -c %s" % code).mutability == "read"


def test_code_longer_than_the_proof_takes_is_not_proven():
    """Parsing costs a node per two or three characters of dense code: code
    over 4 KiB is not parsed (a program that reads has no room to be that
    long in the subset), and a proof spends the line's work."""
    fits = 'print("%s")' % ("x" * (sts._PY_MAX_CODE - 9))
    over = 'print("%s")' % ("x" * (sts._PY_MAX_CODE - 8))
    assert sts._py_code_proof(fits) == (True, "")
    assert sts._py_code_proof(over) == (False, "\0is too long to prove")
    assert sts.analyze_shell("python3 -I -c '%s'" % fits).mutability == "read"
    over_line = sts.analyze_shell("python3 -I -c '%s'" % over)
    assert (over_line.mutability, over_line.reason) == ("unknown", "interpreter_code")
    assert "the code is too long to prove" in sts.shell_culprit(
        "python3 -I -c '%s'" % over, "bash", "MUTABILITY_UNPROVEN", (), "interpreter_code")
    # Each proof spends a unit per two characters: a line holds one of 4 KiB.
    assert sts.analyze_shell("; ".join(["python3 -I -c '%s'" % fits] * 2)).reason \
        == "analysis_limit"
    short = "; ".join(["python3 -I -c 'print(\"%s\")'" % ("x" * 990)] * 4)
    assert sts.analyze_shell(short).mutability == "read"


def test_hash_intent_sees_the_same_code():
    assert sts.analyze_shell("python3 -I -c 'import hashlib; hashlib.sha256(b\"x\")'").hash_intent
    verdict = sts.analyze_shell("python3 -I -c 'print(1)'")
    assert verdict.mutability == "read" and not verdict.hash_intent


@pytest.fixture
def planted(tmp_path):
    """A working folder whose modules shadow the standard ones and leave a mark when run."""
    for name in ("json", "math", "platform", "linecache", "traceback", "re", "codecs",
                 "encodings", "warnings", "subprocess"):
        (tmp_path / (name + ".py")).write_text(
            "open(%r, 'w').close()\n" % str(tmp_path / ("RAN_" + name)))
    (tmp_path / "data.json").write_text('{"name": "demo"}\n')
    (tmp_path / "data.csv").write_text("name,n\ndemo,1\n")
    (tmp_path / "a.txt").write_text("a\n")
    with zipfile.ZipFile(str(tmp_path / "data.zip"), "w") as z:
        z.write(str(tmp_path / "a.txt"), "a.txt")
    with tarfile.open(str(tmp_path / "data.tar.gz"), "w:gz") as t:
        t.add(str(tmp_path / "a.txt"), "a.txt")
    return tmp_path


def _snapshot(folder):
    return sorted((p, os.path.getmtime(os.path.join(folder, p))) for p in os.listdir(folder))


def test_proven_code_runs_for_real_and_writes_nothing(planted):
    before = _snapshot(planted)
    for code in PROVEN:
        command = "%s -I -c %s" % (sys.executable, sts_quote(code))
        subprocess.run(command, shell=True, cwd=str(planted), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60, check=False)
    assert _snapshot(planted) == before


def test_without_the_flag_the_working_folder_decides(planted):
    """Why -I is required: the same code, run plainly, runs a planted module:
    json up to 3.12; from 3.13 on linecache, which -c imports before any code."""
    subprocess.run([sys.executable, "-c", "import json"], cwd=str(planted),
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, check=False)
    assert (planted / "RAN_json").exists() or (planted / "RAN_linecache").exists()
