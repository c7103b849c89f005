"""Tests for the Analysis section of sts.py: shell verdicts, intents, patches."""
import os
import subprocess
import sys

import pytest

import sts
from conftest import calls_made

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "analysis_corpus.txt")
MARKERS = {"⏎": "\n", "⟨CR⟩": "\r", "⟨NEL⟩": "\u0085", "⟨TAB⟩": "\t"}


def parse_row(number, line):
    """(line number, label, tags, command) of one line `LABEL [TAGS] | COMMAND`."""
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
    return (number, parts[0], parts[1:] + tail_tags, command)


def load_corpus():
    """(line number, label, tags, command) for every labelled line."""
    rows = []
    with open(CORPUS, encoding="utf-8") as fh:
        for number, raw in enumerate(fh, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            rows.append(parse_row(number, line))
    return rows


def load_examples():
    """The examples sts.py gives beside its option tables: `#: LABEL [TAGS] | COMMAND`."""
    rows = []
    with open(sts.__file__, encoding="utf-8") as fh:
        for number, raw in enumerate(fh, 1):
            line = raw.strip()
            if line.startswith("#: "):
                rows.append(parse_row(number, line[3:]))
    return rows


ROWS = load_corpus()


def _shell_of(tags):
    if "@ps" in tags:
        return "powershell"
    if "@win" in tags:
        return "unknown"
    return "bash"


def test_every_corpus_line_holds_its_label():
    """Every labelled line, in one test: each line that fails is reported with
    its line number and what the analyzer said (one test per line would
    cost `make test` more in pytest's bookkeeping than in the analysis)."""
    failures = []
    for number, label, tags, command in ROWS:
        try:
            check_label(label, tags, command)
        except Exception as exc:   # an assert that failed, or the analyzer raised
            text = str(exc) if isinstance(exc, AssertionError) else "%s: %s" % (
                type(exc).__name__, exc)
            why = "\n    ".join(line for line in text.splitlines() if line.strip())
            failures.append("analysis_corpus.txt:%d: %s | %r\n    %s"
                            % (number, " ".join([label] + tags), command, why))
    assert not failures, "%d corpus line(s) fail:\n%s" % (len(failures), "\n".join(failures))


@pytest.mark.slow   # the same lines as above, one test each (-k L<line> picks one)
@pytest.mark.parametrize("number,label,tags,command", ROWS,
                         ids=["L%d" % r[0] for r in ROWS])
def test_corpus_label(number, label, tags, command):
    check_label(label, tags, command)


EXAMPLES = load_examples()


@pytest.mark.parametrize("number,label,tags,command", EXAMPLES,
                         ids=["sts.py:%d" % r[0] for r in EXAMPLES])
def test_table_examples(number, label, tags, command):
    """The examples beside each option table in sts.py hold, like corpus lines."""
    check_label(label, tags, command)


def test_every_table_has_examples():
    """Each program judged by a table shows at least one example of its own."""
    tables = {name for name, handler in sts._PROGRAMS.items()
              if isinstance(handler, sts._Opts)}
    shown = set()
    for _, _, _, command in EXAMPLES:
        for part in command.replace("|", ";").split(";"):
            words = part.split()
            if words:
                shown.add(words[0])
    assert len(EXAMPLES) > 60
    assert sorted(tables - shown) == []


def test_every_table_names_only_fields_the_class_knows():
    """A row sets only the fields it names (the others are the class's
    defaults), so a misspelt field would be ignored without a word: none is."""
    import gc
    rows = [o for o in gc.get_objects() if type(o) is sts._Opts]
    assert len(rows) > 100
    inner = {"text", "_short", "_long", "_effects", "_streams"}
    assert [sorted(set(vars(row)) - sts._Opts.FIELDS - inner) for row in rows
            if set(vars(row)) - sts._Opts.FIELDS - inner] == []
    with pytest.raises(AssertionError):   # what the check above would find
        row = sts._Opts("-a", permutte=False)
        assert not set(vars(row)) - sts._Opts.FIELDS - inner


def check_label(label, tags, command):
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
            # runs_packages: a dependency change unless the project declares them,
            # which a line alone never shows (the shell action carries it as one).
            assert result.dependency_intent or result.runs_packages, result
        elif tag == "-D":
            assert not result.dependency_intent and not result.runs_packages, result
        elif tag == "+A":
            assert result.starts_agent, result
        elif tag == "-A":
            assert result.starts_agent is None, result
        elif tag == "+R":
            assert result.starts_agent and result.resumes_session, result
        elif tag == ">?":
            assert result.unknown_target, result
        elif tag == ">-?":
            assert not result.unknown_target, result
        elif tag.startswith(">-"):
            assert tag[2:] not in result.write_targets, result
        elif tag.startswith(">"):
            assert tag[1:] in result.write_targets, result
    if result.reason is not None:
        assert result.reason in sts.ANALYSIS_REASONS


def test_corpus_size_and_mix():
    labels = [r[1] for r in ROWS]
    assert len(ROWS) >= 400
    assert labels.count("read") >= len(ROWS) // 4
    # False reads must be zero: every non-read label is checked above; here we
    # make sure the corpus really has a large share of dangerous lines.
    assert len(ROWS) - labels.count("read") >= 200


# ------------------------------------------------------------ hash intent ----

HASH_CASES = [
    # (added text, path, removed text, expected): code that computes a hash or
    # digest is hash intent; a call only kept from the removed text is not new.
    ("const h = crypto.createHash('sha256')", "src/a.js", None, True),
    ("createHash('sha256')", "docs/a.md", None, False),
    ("hashlib.new('sha256', data)", "src/a.py", None, True),
    ("from hashlib import sha256", "a.py", None, True),
    ("hmac.new(k, m, 'sha256')", "a.py", None, True),
    ("sum := md5.Sum(b)", "src/a.go", None, True),
    ("h := sha256.New()", "main.go", None, True),
    ("$h = hash('sha256', $s);", "src/a.php", None, True),
    ("var h = SHA256.HashData(bytes);", "src/A.cs", None, True),
    ("SHA256.hash(data: d)", "src/a.swift", None, True),
    ("sha256sum dist/*.zip", "scripts/release.sh", None, True),
    ("RUN sha256sum -c x", "Dockerfile", None, True),
    ("let d = Sha256::digest(b);", "src/a.rs", None, True),
    ("let h = blake3::hash(b);", "src/a.rs", None, True),
    ("h = Digest::SHA256.hexdigest(x)", "a.rb", None, True),
    ('MessageDigest md = MessageDigest.getInstance("SHA-256");', "A.java", None, True),
    ('val md = MessageDigest.getInstance("MD5")', "A.kt", None, True),
    ("bcrypt.hash(pw, 10)", "a.ts", None, True),
    ("x = hashlib.sha256(b)", None, None, True),          # notebook cell: no path
    ("x = hashlib.sha256(b)", "weird.ext", None, True),   # unknown extension: all languages
    # existing call kept by an edit is not new intent
    ("const h = createHash('sha256').update(b)", "src/a.js",
     "const h = createHash('sha256').update(a)", False),
    # a second call on top of an existing one is
    ("createHash('md5')\ncreateHash('md5')", "a.js", "createHash('md5')", True),
    # hash-table protocols and data are not hashing
    ("def __hash__(self): return hash(self.x)", "a.py", None, False),
    ("public int hashCode() { return 1; }", "A.java", None, False),
    ("#[derive(Hash, Eq)]", "a.rs", None, False),
    ('"integrity": "sha512-abc"', "package-lock.json", None, False),
    ("", "a.py", None, False),
    # Any language's hashing API in any code file (not only the extension's own)
    ("h = hashlib.md5(x)", "src/App.java", None, True),
    ('MessageDigest.getInstance("SHA-256")', "src/lib.rs", None, True),
    ("let d = Sha256::digest(b);", "src/a.go", None, True),
    ("var h = SHA256.HashData(bytes);", "app.kt", None, True),
    ("h = hashlib.md5(x)", "notes.txt", None, False),             # data and prose stay unread
    ("h = hashlib.md5(x)", "README", None, False),
    # Aliases, bindings and dynamic lookups
    ("import hashlib as h\nx = h.sha256(b)", "a.py", None, True),
    ("import hashlib as h\nx = h.new('md5', b)", "a.py", None, True),
    ("from hashlib import sha256 as s\ns(b)", "a.py", None, True),
    ("from zlib import crc32 as c\nc(data)", "a.py", None, True),
    ("m = __import__('hashlib')\nm.md5(b)", "a.py", None, True),
    ("getattr(__import__('hash' + 'lib'), 'md' + '5')(b)", "a.py", None, True),
    ("import importlib\nm = importlib.import_module('hashlib')", "a.py", None, True),
    ("f = getattr(hashlib, name)", "a.py", None, True),
    ("mod = sys.modules['hashlib']", "a.py", None, True),
    ("import { createHash as ch } from 'crypto'", "a.ts", None, True),
    ("const { hash } = require('node:crypto')", "a.js", None, True),
    ("const ch = crypto['createHash']", "a.js", None, True),
    ("h := sha256.Sum256(b)", "main.go", None, True),
    ('import s "crypto/sha256"', "main.go", None, True),
    ("x := s.Sum256(b)", "main.go", None, True),            # the alias imported elsewhere
    ("using S = System.Security.Cryptography.SHA256;", "A.cs", None, True),
    ("require 'digest'", "a.rb", None, True),
    ("use md5;", "a.rs", None, True),
    ("type H = Hmac<Sha256>;", "a.rs", None, True),
    ("#include <openssl/sha.h>", "a.c", None, True),
    ("XXH64(buf, len, 0)", "a.c", None, True),
    (":crypto.hash(:sha256, x)", "a.ex", None, True),
    ("sha256.convert(bytes)", "a.dart", None, True),
    ("SELECT md5(name) FROM t", "q.sql", None, True),
    ("file(SHA256 ${f} out)", "CMakeLists.txt", None, True),
    ("[System.Security.Cryptography.SHA256]::Create()", "a.ps1", None, True),
    ("$h = hash('sha256', $s);", "a.py", None, True),     # a digest named to a hash() call
    ("array_map('sha1', $a);", "a.php", None, True),
    # Hashing programs run from code or a script
    ("subprocess.run(['sha256sum', path])", "a.py", None, True),
    ('exec.Command("openssl", "dgst", f)', "main.go", None, True),   # an argv list
    ("subprocess.run(['git', 'hash-object', p])", "a.py", None, True),
    ('exec.Command("sha256sum", f)', "main.go", None, True),
    ("os.system('openssl dgst -sha256 x')", "a.py", None, True),
    ("sha256sum dist/*.zip", "bin/release", None, True),   # a script without extension
    ('"scripts": {"sum": "sha256sum dist/*"}', "package.json", None, True),
    ('"scripts": {"build": "tsc"}', "package.json", None, False),
    # Notebooks: code cells in any language, shell escapes; markdown cells are prose
    ('{"cells":[{"cell_type":"markdown","source":["hashlib.md5(x)"]}]}', "a.ipynb", None, False),
    ('{"cells":[{"cell_type":"code","source":["!sha256sum a"]}]}', "a.ipynb", None, True),
    ('{"cells":[{"cell_type":"code","source":["digest::digest(x)"]}]}', "a.ipynb", None, True),
    ("%%bash\nsha256sum a", "a.ipynb", None, True),
    # Mentions are not hashing: comments, docstrings, dict keys, other APIs
    ("# we might use sha256 later\nx = 1", "a.py", None, False),
    ('"""Return the sha256 (hex) of data."""\nx = 1', "a.py", None, False),
    ("# hashlib.sha256(b) is slow\nx = 1", "a.py", None, False),
    ("x = {'sha256': digest_value}", "a.py", None, False),
    ("let m: HashMap<String, u32> = HashMap::new();", "a.rs", None, False),
    ("const id = crypto.randomUUID()", "a.js", None, False),
    ("import crypto from 'crypto'\nconst b = crypto.randomBytes(8)", "a.js", None, False),
    ("secrets.compare_digest(a, b)", "a.py", None, False),
    ("import hmac\nok = hmac.compare_digest(a, b)", "a.py", None, False),  # constant-time compare
    ("if hmac.Equal(a, b) {", "a.go", None, False),
    ("digest = emailDigest(user)", "a.js", None, False),
    ("md2html(text)", "a.py", None, False),
    ("BCryptGenRandom(NULL, buf, n, 0)", "a.c", None, False),
    ("x = getattr(obj, 'name')", "a.py", None, False),
    # Names and code hidden in literals: joined, reversed, decoded, then run
    ("m = __import__(''.join(['hash', 'lib']))", "a.py", None, True),
    ("m = __import__('bilhsah'[::-1])", "a.py", None, True),
    ("m = __import__(chr(104) + chr(97) + 'shlib')", "a.py", None, True),
    ("m = __import__(bytes.fromhex('686173686c6962').decode())", "a.py", None, True),
    ("import codecs\nm = __import__(codecs.decode('unfuyvo', 'rot13'))", "a.py", None, True),
    ("import base64\nexec(base64.b64decode('aW1wb3J0IGhhc2hsaWI='))", "a.py", None, True),
    ("exec('import hash' + 'lib')", "a.py", None, True),
    ("eval(compile('__import__(\"hashlib\")', 'x', 'eval'))", "a.py", None, True),
    ("const c = require(atob('Y3J5cHRv'));\nc[atob('Y3JlYXRlSGFzaA==')]('md5')", "a.js", None, True),
    ("const c = require('cry' + 'pto');\nc['create' + 'Hash']('sha256')", "a.js", None, True),
    ("require('otpyrc'.split('').reverse().join(''))['createHash']('md5')", "a.js", None, True),
    ("require('crypto')[['create', 'Hash'].join('')]('md5')", "a.ts", None, True),
    ("subtle['di' + 'gest']('SHA-256', d)", "a.js", None, True),
    ("eval(atob('cmVxdWlyZSgiY3J5cHRvIikuY3JlYXRlSGFzaCgibWQ1Iik='))", "a.js", None, True),
    ("eval(Buffer.from('637265617465486173682827736861312729', 'hex').toString())", "a.js",
     None, True),
    # ... while the same shapes around other names and code stay what they are
    ("importlib.import_module('app.' + plugin)", "a.py", None, False),
    ("print(eval('1+2'))", "a.py", None, False),
    ("exec(base64.b64decode('cHJpbnQoMSk='))", "a.py", None, False),
    ("const c = require(atob('ZnM='))", "a.js", None, False),
    ("const s = 'hello' + ' ' + 'world'", "a.js", None, False),
]


@pytest.mark.parametrize("text,path,removed,expected", HASH_CASES)
def test_hash_intent_in_text(text, path, removed, expected):
    assert sts.hash_intent_in_text(text, path, removed_text=removed) is expected


# ------------------------------------------------------ dependency intent ----

DEP_CASES = [
    # (path, old, new, expected): a manifest change that adds a dependency or
    # points one at another source is dependency intent; metadata is not.
    ("package.json", None, '{"name": "x", "dependencies": {"lodash": "^4.17.21"}}', True),
    ("package.json", '"lodash": "^4.17.21"', '"lodash": "^4.17.21",\n"axios": "^1.6.0"', True),
    ("package.json", '"lodash": "^4.17.21"', '"lodash": "^4.17.21",\n"axios": "1.6.0"', True),
    ("package.json", '"dependencies": {\n"lodash": "^4.17.21"\n}',
     '"dependencies": {\n"lodash": "^4.17.21",\n"axios": "1.6.0"\n}', True),
    # A version change of a kept dependency brings in new code (True)...
    ("package.json", '"lodash": "^4.17.20"', '"lodash": "^4.17.21"', True),
    ("package.json", '"lodash": "^4.17.21",\n"axios": "^1.6.0"', '"lodash": "^4.17.21"', False),
    ("package.json", '"name": "x"', '"name": "x",\n"overrides": {"minimist": "1.2.8"}', True),
    ("package.json", '{"devDependencies": {"a": "1"}}', '{"dependencies": {"a": "1"}}', True),
    ("package.json", '"version": "1.0.0"', '"version": "1.0.1"', False),
    # Declarations outside the language manifests: images, submodules, CI
    # actions, hooks, import maps, URL and registry imports, script metadata
    ("Dockerfile", "FROM python:3.11\n", "FROM python:3.12\n", True),
    ("Dockerfile", "FROM python:3.11\n", "FROM python:3.11\nRUN pip install requests\n", True),
    ("Dockerfile", "FROM a\n", "FROM a\nRUN apt-get update && \\\n    apt-get install -y jq\n", True),
    ("Dockerfile", "FROM a\n", 'FROM a\nRUN ["npm", "install", "lodash"]\n', True),
    ("Dockerfile", "FROM a\n", "FROM a\nADD https://example.com/y.tgz /y\n", True),
    ("docker/app.Dockerfile", None, "FROM node:20\n", True),
    ("Dockerfile", "FROM a\n", "FROM a\nRUN pip install -r requirements.txt\n", False),
    ("Containerfile", "FROM a\n", "FROM a\nWORKDIR /app\nCOPY . .\n", False),
    (".github/workflows/ci.yml", "- uses: actions/checkout@v3\n", "- uses: actions/checkout@v4\n",
     True),
    (".github/workflows/ci.yml", "- uses: actions/checkout@v4\n",
     "- uses: actions/checkout@v4\n- run: make test\n", False),
    (".pre-commit-config.yaml", "  rev: v1\n", "  rev: v2\n", True),
    (".gitmodules", "", '[submodule "x"]\n\tpath = x\n\turl = https://example.com/x\n', True),
    ("import_map.json", '{"imports": {}}', '{"imports": {"x": "https://esm.sh/x"}}', True),
    ("src/main.ts", "", 'import x from "https://esm.sh/lodash"\n', True),
    ("src/main.ts", "", 'import x from "npm:lodash@4"\n', True),
    ("src/a.js", "", 'const x = await import("jsr:@std/path")\n', True),
    ("src/main.ts", 'import x from "npm:lodash"\n', 'import x from "npm:lodash"\nx()\n', False),
    ("src/main.ts", "", 'const r = await fetch("https://example.com")\n', False),
    ("tool.py", None, '# /// script\n# dependencies = ["requests"]\n# ///\nimport requests\n', True),
    ("tool.py", '# /// script\n# dependencies = ["requests"]\n# ///\n',
     '# /// script\n# dependencies = ["requests"]\n# ///\nprint(1)\n', False),
    ("package.json", '{"dependencies": {"a": "^1"}}', '{"dependencies": {"a": "github:x/a"}}',
     True),
    ("requirements.txt", "requests==2.31.0", "requests==2.31.0\nhttpx==0.27.0", True),
    ("requirements.txt", "requests==2.31.0\nhttpx==0.27.0", "requests==2.31.0", False),
    ("requirements.txt", "requests==2.31.0", "requests==2.31.0  # pinned", False),
    ("requirements.txt", "requests==2.31.0", "requests==2.32.0", True),
    ("requirements.txt", "requests==2.31.0", "requests == 2.31.0", False),  # only blanks
    ("requirements.txt", "requests", "requests[socks]", True),
    ("requirements.txt", "requests",
     "requests\n--extra-index-url https://pkgs.example.com/simple", True),
    ("requirements.txt", None, "httpx >= 0.27, < 1\n", True),
    ("requirements-dev.txt", None, "pytest\n", True),
    ("dev-requirements.txt", None, "pytest\n", True),
    ("requirements/dev.txt", None, "pytest\n", True),
    ("pyproject.toml", '"httpx",', '"httpx",\n"rich",', True),
    ("pyproject.toml", "", '[dependency-groups]\ndev = ["pytest"]', True),
    ("pyproject.toml", '[build-system]\nrequires = ["setuptools"]',
     '[build-system]\nrequires = ["setuptools", "cython"]', True),
    ("pyproject.toml", '[project]\ndependencies = ["httpx>=0.1"]',
     '[project]\ndependencies = ["httpx>=0.2"]', True),
    ("pyproject.toml", '[project]\nversion = "0.1"', '[project]\nversion = "0.2"', False),
    ("pyproject.toml", 'version = "0.1"', 'version = "0.2"', False),
    ("pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.9"',
     '[tool.poetry.dependencies]\npython = "^3.9"\nrequests = "^2"', True),
    ("Cargo.toml", 'serde = "1"', 'serde = "1"\ntokio = "1"', True),
    ("Cargo.toml", '[dependencies]\nserde = "1"', '[dependencies]\nserde = "1"\ntokio = "1"', True),
    ("Cargo.toml", "[package.metadata]", "[dependencies]", True),
    ("Cargo.toml", '[dependencies]\nserde = "1"', '[dependencies]\nserde = "1.0.100"', True),
    ("Cargo.toml", 'version = "0.1.0"', 'version = "0.2.0"', False),
    ("Cargo.toml", '[dependencies]\nserde = "1"', '[dependencies]\nserde = { git = "https://x" }',
     True),
    ("go.mod", "require (\n\tgolang.org/x/sys v0.1.0\n)",
     "require (\n\tgolang.org/x/sys v0.1.0\n\tgithub.com/pkg/errors v0.9.1\n)", True),
    ("go.mod", "go 1.22", "go 1.22\nreplace github.com/pkg/errors => ../errors", True),
    ("go.mod", "require golang.org/x/sys v0.1.0", "require golang.org/x/sys v0.2.0", True),
    ("Gemfile", None, 'source "https://rubygems.org"\ngem "rails"\n', True),
    ("Gemfile", 'source "https://rubygems.org"', 'source "https://gems.example.com"', True),
    ("Gemfile", 'gem "rails", "~> 7.0"', 'gem "rails", "~> 7.1"', True),
    ("Pipfile", None, '[packages]\nrequests = "*"\n', True),
    ("src/App.csproj", '<PackageReference Include="A" Version="1" />',
     '<PackageReference Include="A" Version="2" />', True),
    ("src/App.csproj", '<PackageReference Include="A" Version="1" />',
     '<PackageReference Include="A" Version="1" />\n<PackageReference Include="B" Version="1" />',
     True),
    ("composer.json", '"require": {"php": ">=8"}',
     '"require": {"php": ">=8", "monolog/monolog": "^3"}', True),
    ("README.md", None, "npm install lodash", False),
    (None, None, "x", False),
    # Version changes of a kept dependency, and specs compared without blanks
    ("Cargo.toml", 'serde = "1"', 'serde = "1.0.200"', True),
    ("pyproject.toml", '[tool.poetry.dependencies]\nrequests = "^2.31"',
     '[tool.poetry.dependencies]\nrequests = "^2.32"', True),
    ("Pipfile", '[packages]\nrequests = "==2.31"', '[packages]\nrequests = "==2.32"', True),
    ("composer.json", '"monolog/monolog": "^3.0"', '"monolog/monolog": "^3.5"', True),
    ("package-lock.json", '"node_modules/a": {"version": "1.0.0"}',
     '"node_modules/a": {"version": "1.0.1"}', True),
    ("package-lock.json", '"a": 1,\n"b": 2', '"a": 1', False),      # a lockfile losing entries
    ("yarn.lock", None, 'lodash@^4:\n  version "4.17.21"\n', True),
    (".npmrc", "", "registry=https://r.example/\n", True),           # where packages come from
    # Every ecosystem's manifest: additions count, metadata does not
    ("setup.py", None, 'setup(name="x", install_requires=["requests>=2", "httpx"])', True),
    ("setup.py", '    "requests>=2",\n    ],', '    "requests>=2",\n    "httpx",\n    ],', True),
    ("setup.py", 'version="1.0",', 'version="1.1",', False),
    ("setup.py", 'entry_points={"console_scripts": ["x=pkg.mod:main"]},',
     'entry_points={"console_scripts": ["x=pkg.mod:main", "y=pkg.mod:other"]},', False),
    ("setup.cfg", "[options]\ninstall_requires =\n    requests\n",
     "[options]\ninstall_requires =\n    requests\n    httpx\n", True),
    ("setup.cfg", "[metadata]\nversion = 1\n", "[metadata]\nversion = 2\n", False),
    ("environment.yml", "dependencies:\n  - numpy=1.2\n", "dependencies:\n  - numpy=1.3\n", True),
    ("environment.yml", "dependencies:\n  - pip:\n    - requests\n",
     "dependencies:\n  - pip:\n    - requests\n    - httpx\n", True),
    ("environment.yml", "channels:\n  - defaults\n", "channels:\n  - defaults\n  - conda-forge\n",
     True),
    ("environment.yml", "name: env1\n", "name: env2\n", False),
    ("pom.xml", "<dependency><groupId>g</groupId><artifactId>a</artifactId><version>1</version>"
     "</dependency>", "<dependency><groupId>g</groupId><artifactId>a</artifactId><version>2"
     "</version></dependency>", True),
    ("pom.xml", "<junit.version>4</junit.version>", "<junit.version>5</junit.version>", True),
    ("pom.xml", "<name>x</name>", "<name>y</name>", False),
    ("build.gradle", "dependencies {\n}",
     "dependencies {\n    implementation 'com.squareup.okhttp3:okhttp:4.12.0'\n}", True),
    ("build.gradle.kts", 'implementation("g:a:1.0")', 'implementation("g:a:1.0")\n'
     'implementation(libs.retrofit)', True),
    ("build.gradle", "plugins {\n  id 'java'\n}",
     "plugins {\n  id 'java'\n  id 'org.springframework.boot' version '3.2.0'\n}", True),
    ("build.gradle", "sourceCompatibility = 11", "sourceCompatibility = 17", False),
    ("gradle/libs.versions.toml", '[versions]\nokhttp = "4.11.0"\n',
     '[versions]\nokhttp = "4.12.0"\n', True),
    ("build.sbt", 'libraryDependencies += "org" %% "cats" % "2.9.0"',
     'libraryDependencies += "org" %% "cats" % "2.10.0"', True),
    ("build.sbt", 'scalaVersion := "2.13.10"', 'scalaVersion := "2.13.12"', False),
    ("x.gemspec", "spec.add_dependency 'rack'",
     "spec.add_dependency 'rack'\nspec.add_dependency 'thor', '~> 1'", True),
    ("Directory.Packages.props", '<PackageVersion Include="A" Version="1" />',
     '<PackageVersion Include="A" Version="2" />', True),
    ("App.csproj", '<TargetFramework>net6.0</TargetFramework>',
     '<TargetFramework>net8.0</TargetFramework>', False),
    ("packages.config", '<package id="A" version="1" />',
     '<package id="A" version="1" />\n<package id="B" version="1" />', True),
    ("vcpkg.json", '{"dependencies": ["fmt"]}', '{"dependencies": ["fmt", "zlib"]}', True),
    ("conanfile.txt", "[requires]\nzlib/1.2.13\n", "[requires]\nzlib/1.3\n", True),
    ("conanfile.txt", "[generators]\nCMakeDeps\n", "[generators]\nCMakeDeps\nCMakeToolchain\n",
     False),
    ("conanfile.py", 'self.requires("zlib/1.2.13")',
     'self.requires("zlib/1.2.13")\n        self.requires("boost/1.83.0")', True),
    ("DESCRIPTION", "Imports: dplyr\n", "Imports: dplyr, ggplot2\n", True),
    ("DESCRIPTION", "Version: 1.0\n", "Version: 1.1\n", False),
    (".git/description", None, "Imports: dplyr\n", False),
    ("Project.toml", '[compat]\nJSON = "0.21"\n', '[compat]\nJSON = "0.22"\n', True),
    ("Project.toml", '[compat]\njulia = "1.6"\n', '[compat]\njulia = "1.9"\n', False),
    ("x.cabal", "  build-depends:\n      base\n    , text\n",
     "  build-depends:\n      base\n    , text\n    , lens\n", True),
    ("x.cabal", "  exposed-modules: Foo\n", "  exposed-modules: Foo\n                   Bar\n", False),
    ("package.yaml", "dependencies:\n- base\n", "dependencies:\n- base\n- text\n", True),
    ("stack.yaml", "resolver: lts-21.0\n", "resolver: lts-22.0\n", True),
    ("deps.edn", '{:deps {org.clojure/clojure {:mvn/version "1.11.1"}}}',
     '{:deps {org.clojure/clojure {:mvn/version "1.12.0"}}}', True),
    ("project.clj", ':dependencies [[org.clojure/clojure "1.11.1"]]',
     ':dependencies [[org.clojure/clojure "1.11.1"] [ring "1.9.0"]]', True),
    ("mix.exs", '{:phoenix, "~> 1.7"}', '{:phoenix, "~> 1.7"},\n      {:jason, "~> 1.4"}', True),
    ("mix.exs", 'version: "0.1.0",', 'version: "0.2.0",', False),
    ("rebar.config", '{deps, [{cowboy, "2.9.0"}]}.', '{deps, [{cowboy, "2.9.0"}, {jsx, "3.1.0"}]}.',
     True),
    ("pubspec.yaml", "  http: ^1.1.0\n", "  http: ^1.2.0\n", True),
    ("pubspec.yaml", "environment:\n  sdk: '>=3.0.0 <4.0.0'\n",
     "environment:\n  sdk: '>=3.1.0 <4.0.0'\n", False),
    ("Package.swift", '.package(url: "https://github.com/apple/swift-log", from: "1.0.0")',
     '.package(url: "https://github.com/apple/swift-log", from: "1.5.0")', True),
    ("Podfile", "pod 'Alamofire', '~> 5.0'", "pod 'Alamofire', '~> 5.0'\npod 'SnapKit'", True),
    ("Cartfile", 'github "Alamofire/Alamofire" ~> 5.0', 'github "Alamofire/Alamofire" ~> 5.1', True),
    ("x.nimble", 'requires "nim >= 1.6"', 'requires "nim >= 1.6", "jester >= 0.5"', True),
    ("x.opam", 'depends: [ "ocaml" {>= "4.14"} ]', 'depends: [ "ocaml" {>= "4.14"} "lwt" ]', True),
    ("x.opam", 'synopsis: "a"', 'synopsis: "b"', False),
    ("dune-project", "(depends (ocaml (>= 4.14)))", "(depends (ocaml (>= 4.14)) (lwt (>= 5.0)))",
     True),
    ("dune", "(libraries lwt)", "(libraries lwt cohttp)", True),
    ("shard.yml", "dependencies:\n  kemal:\n    github: kemalcr/kemal\n    version: 1.0\n",
     "dependencies:\n  kemal:\n    github: kemalcr/kemal\n    version: 1.1\n", True),
    ("build.zig.zon", '.dependencies = .{\n},', '.dependencies = .{\n    .zap = .{\n        .url = '
     '"https://x/zap.tar.gz",\n        .hash = "1220abc",\n    },\n},', True),
    ("flake.nix", 'inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-23.05";',
     'inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-23.11";', True),
    ("flake.nix", 'packages = with pkgs; [ git ];', 'packages = with pkgs; [ git jq ];', True),
    ("pixi.toml", '[dependencies]\npython = "3.11"\n', '[dependencies]\npython = "3.11"\n'
     'numpy = ">=1.26"\n', True),
    ("pixi.toml", '[project]\nname = "a"\n', '[project]\nname = "b"\n', False),
    ("Brewfile", 'brew "jq"', 'brew "jq"\nbrew "yq"', True),
    ("Chart.yaml", "dependencies:\n  - name: redis\n    version: 17.0.0\n",
     "dependencies:\n  - name: redis\n    version: 18.0.0\n", True),
    ("Chart.yaml", "version: 0.1.0\n", "version: 0.2.0\n", False),
]


@pytest.mark.parametrize("path,old,new,expected", DEP_CASES)
def test_dependency_intent_in_change(path, old, new, expected):
    assert sts.dependency_intent_in_change(path, old, new) is expected


@pytest.mark.parametrize("path,kind", [
    ("package.json", "npm"), ("a/b/Package.JSON", "npm"), ("C:\\w\\composer.json", "composer"),
    ("pyproject.toml", "pyproject"), ("requirements.txt", "requirements"),
    ("requirements-dev.txt", "requirements"), ("Cargo.toml", "cargo"), ("go.mod", "gomod"),
    ("Gemfile", "gemfile"), ("src/App.csproj", "csproj"), ("README.md", None),
    ("package-lock.json", "lock"), ("go.sum", "lock"), ("", None), (None, None),
    ("setup.py", "setuppy"), ("app/build.gradle.kts", "gradle"), ("x.gemspec", "gemspec"),
    ("lib/App.fsproj", "csproj"), ("pom.xml", "maven"), ("DESCRIPTION", "rdesc"),
    ("x.cabal", "cabal"), ("pubspec.yaml", "yaml"), ("environment-dev.yml", "yaml"),
    ("Package.swift", "swiftpm"), ("flake.nix", "nix"), ("~/.m2/settings.xml", "registry"),
    ("settings.xml", None), (".cargo/config.toml", "registry"), ("config.toml", None),
])
def test_manifest_kind(path, kind):
    assert sts.manifest_kind(path) == kind


# ---------------------------------------------------------------- patches ----

def _patch(*lines):
    return "\n".join(("*** Begin Patch",) + lines + ("*** End Patch",))


def test_patch_paths_and_added_text():
    s = sts.analyze_patch(_patch("*** Add File: a/b.py", "+import os", "+print(1)",
                                 "*** Delete File: old.txt",
                                 "*** Update File: src/x.js", "*** Move to: src/y.js", "@@",
                                 "-a", "+b"))
    assert s.paths == ["a/b.py", "old.txt", "src/x.js", "src/y.js"]
    assert s.added_text.splitlines() == ["import os", "print(1)", "b"]
    assert not s.hash_intent and not s.dependency_intent


def test_patch_hash_only_for_added_code_lines():
    added = sts.analyze_patch(_patch("*** Update File: src/a.js", "@@", "+createHash('sha256')"))
    assert added.hash_intent
    # Markdown, context lines and removals are not hash intent (4 H95, H96).
    assert not sts.analyze_patch(_patch("*** Update File: README.md", "@@",
                                        "+Use createHash('sha256') here")).hash_intent
    assert not sts.analyze_patch(_patch("*** Update File: src/a.cjs", "@@",
                                        " createHash('sha256')")).hash_intent
    assert not sts.analyze_patch(_patch("*** Update File: src/a.js", "@@",
                                        "-createHash('sha256')", "+const x = 1")).hash_intent
    # Re-indenting an existing call is not new intent either.
    assert not sts.analyze_patch(_patch("*** Update File: src/a.js", "@@",
                                        "-createHash('sha256')",
                                        "+    createHash('sha256')")).hash_intent


def test_patch_dependency_intent():
    assert sts.analyze_patch(_patch("*** Update File: Cargo.toml", "@@ [dependencies]",
                                    ' serde = "1"', '+tokio = "1"')).dependency_intent
    assert sts.analyze_patch(_patch("*** Update File: Cargo.toml", "@@", ' serde = "1"',
                                    '+tokio = "1"')).dependency_intent
    # A version bump brings in new code; a reformatted line does not.
    assert sts.analyze_patch(_patch("*** Update File: package.json", "@@",
                                    '-    "lodash": "^4.17.20"',
                                    '+    "lodash": "^4.17.21"')).dependency_intent
    assert not sts.analyze_patch(_patch("*** Update File: package.json", "@@",
                                        '-    "lodash": "^4.17.20"',
                                        '+    "lodash":   "^4.17.20"')).dependency_intent
    # Renaming a file into a manifest brings its declarations (4 I127).
    assert sts.analyze_patch(_patch("*** Update File: manifest.txt", "*** Move to: package.json",
                                    "@@", ' {"dependencies":{"demo":"1"}}')).dependency_intent
    assert sts.analyze_patch(_patch("*** Add File: requirements.txt", "+flask")).dependency_intent
    assert not sts.analyze_patch(_patch("*** Delete File: requirements.txt")).dependency_intent


def test_unified_diff_is_understood():
    s = sts.analyze_patch("--- a/package.json\n+++ b/package.json\n@@ -1,3 +1,4 @@\n"
                          '   "dependencies": {\n+    "axios": "^1.6.0",\n')
    assert s.paths == ["package.json"]
    assert s.dependency_intent


def test_v4a_patch_variant():
    s = sts.analyze_patch("***Add File: x.py\n+hashlib.md5(b)\n*** Move File: a.txt -> b.txt\n",
                          v4a=True)
    assert s.paths == ["x.py", "a.txt", "b.txt"]
    assert s.hash_intent
    # The strict Codex grammar does not accept the V4A spelling.
    assert sts.analyze_patch("***Add File: x.py\n+hashlib.md5(b)\n").paths == []


@pytest.mark.parametrize("value", [None, 42, "", "no headers at all"])
def test_patch_garbage(value):
    s = sts.analyze_patch(value)
    assert s.paths == [] and not s.hash_intent and not s.dependency_intent


# ---------------------------------------------------------- write targets ----

@pytest.mark.parametrize("command,targets", [
    ("echo hi > out.txt", ["out.txt"]),
    ("ls >> ~/log.txt 2>&1", ["~/log.txt"]),
    ("rm -rf build dist", ["build", "dist"]),
    ("rm -- -weird", ["-weird"]),
    ("touch -d yesterday a b", ["a", "b"]),
    ("mkdir -p -m 755 out", ["out"]),
    # dst may be a folder that receives src under its own name
    ("cp -r src dst", ["dst", "dst/src"]),
    ("mv -t dest a b", ["dest", "dest/a", "dest/b", "a", "b"]),  # mv sources vanish too
    # a link to a guard file would open it to later writes: its target counts
    ("ln -s target link", ["link", "link/target", "target"]),
    ("chmod +x run.sh", ["run.sh"]),
    ("truncate -s 0 log", ["log"]),
    ("dd if=/dev/zero of=disk.img", ["disk.img"]),
    ("ls | tee a.txt b.txt", ["a.txt", "b.txt"]),
    ("sed -i 's/a/b/' x.py y.py", ["x.py", "y.py"]),
    ("sed 's/a/b/w out' x", ["out"]),
    ("sort -o sorted.txt in.txt", ["sorted.txt"]),
    ("git checkout -- a.py b.py", ["a.py", "b.py"]),
    ("git restore src/x.py", ["src/x.py"]),
    ("git diff --output=d.txt", ["d.txt"]),
    ("find . -fprint list.txt", ["list.txt"]),
    ("cd sub && rm a", ["sub/a"]),
    ("cd /etc; echo x > hosts", ["/etc/hosts", "hosts"]),   # the cd may fail
    ("rm $X", []),
    ("curl -o page.html https://x", ["page.html"]),
    ("bash -c 'rm -f x'", ["x"]),
    ("sudo tee /etc/hosts < f", ["/etc/hosts"]),
])
def test_write_targets(command, targets):
    result = sts.analyze_shell(command)
    assert result.mutability == "write"
    assert result.write_targets == targets


def test_read_has_no_targets():
    assert sts.analyze_shell("cat a > /dev/null; ls").write_targets == []


# ------------------------------------------------------------- interfaces ----

@pytest.mark.parametrize("value", [None, 3, "", "   ", "\n\t"])
def test_empty_or_non_string_command(value):
    result = sts.analyze_shell(value)
    assert result.mutability == "unknown"
    assert result.reason == "shell_syntax_unproven"


def test_every_emitted_reason_is_known():
    for _, _, tags, command in ROWS:
        reason = sts.analyze_shell(command, _shell_of(tags)).reason
        assert reason is None or reason in sts.ANALYSIS_REASONS


def test_unknown_shell_takes_the_worst_reading():
    # cmd.exe does not treat ' as a quote: the option escapes its quotes there.
    line = "git diff --no-index a.txt b.txt ' --output=victim.txt '"
    assert sts.analyze_shell(line, "bash").mutability == "read"
    assert sts.analyze_shell(line, "unknown").mutability == "write"
    # PowerShell splits at NEL; bash would have refused the character anyway.
    nel = "git diff --no-index a.txt b.txt\u0085--output=victim.txt"
    assert sts.analyze_shell(nel, "powershell").mutability == "write"


def test_a_powershell_run_holds_only_what_means_nothing_in_a_word():
    """_ps_words copies a run of these at once; the set is spelled out for
    the import's sake and must stay printable ASCII without blanks, quotes,
    what ends a word and what it refuses."""
    assert sts._PS_PLAIN == frozenset(map(chr, range(0x21, 0x7f))) \
        - frozenset("'\"\r\n;|&>" + sts._PS_REFUSE)


def test_powershell_native_sort_is_not_the_cmdlet():
    # On Linux/macOS pwsh, `sort` runs the native program, which can write.
    assert sts.analyze_shell("sort -o out.txt in.txt", "powershell").mutability == "write"


# ---------------------------------------------------------------- limits ----

def _work(command, shell="bash"):
    """(analysis, calls made): see conftest.calls_made.  Timings are in
    tests/bench_analysis.py."""
    return calls_made(sts.analyze_shell, command, shell)


def _grows_linearly(make, n, shell="bash", power=1):
    """make(2n) costs at most about 2**power times make(n): with power 1 linear,
    not a quadratic re-scan (4x) or an exponential one (far more)."""
    small, large = _work(make(n), shell)[1], _work(make(2 * n), shell)[1]
    return large <= 1.25 * 2 ** power * small + 50, (n, small, large)


@pytest.mark.parametrize("shell", ["bash", "powershell", "unknown"])
def test_one_megabyte_command_is_refused_before_any_scan(shell):
    result, work = _work("ls " + "a" * (1 << 20), shell)
    assert (result.mutability, result.reason) == ("unknown", "analysis_limit")
    assert _work("ls " + "a" * (4 << 20), shell)[1] == work  # the length is never scanned


def test_a_long_line_within_the_work_limit_is_read_in_full():
    assert sts.analyze_shell("ls " + "a " * 3000).mutability == "read"
    assert sts.analyze_shell("; ".join("ls dir%d" % i for i in range(600))).mutability == "read"
    assert sts.analyze_shell("cat a" + " 2>/dev/null" * 600).mutability == "read"
    assert sts.analyze_shell("git log " + "--oneline " * 1500).mutability == "read"


# Shapes under the 64 KiB cap that cost far more to read than their length
# suggests; each is refused as a whole, whatever it holds.
COSTLY = {
    "32,000 tiny commands": ";".join("a" for _ in range(32000)),
    "30,000 words": "ls " + "a " * 30000,
    "5,000 redirections": "cat a" + " 2>/dev/null" * 5000,
    "64 KiB of backticks": "`" * 65535,
    "16,000 substitutions": "echo " + "`ls`" * 16000,
    "a 60 KiB sed script": "sed -n '" + "p;" * 30000 + "' f",
    "work inside bash -c": "bash -c 'ls " + "a " * 20000 + "'",
    "5,000 ;-joined commands": "; ".join("ls dir%d" % i for i in range(5000)),
    "16,000 quoted words": "echo " + "'a' " * 16000,
    "12,000 double-quoted variables": "echo " + '"$a" ' * 12000,
    "3,000 heredocs": "cat <<EOF\nline\nEOF\n" * 3000,
    "one 64 KiB word": "echo " + "a" * 65000,
    # Refused syntax first: the intent scan of its 5,000 commands spends the work too.
    "an unread line of 5,000 commands": "[[ a ]]; " + "; ".join("ls d%d" % i for i in range(5000)),
}


@pytest.mark.parametrize("shell", ["bash", "powershell", "unknown"])
@pytest.mark.parametrize("name", sorted(COSTLY))
def test_a_line_that_costs_too_much_to_read_is_analysis_limit(name, shell):
    result = sts.analyze_shell(COSTLY[name], shell)
    if shell == "powershell":
        # PowerShell refuses most of these shapes as syntax or as writes
        # before it has read far; what matters is that none is a read.
        assert result.mutability != "read"
    else:
        assert (result.mutability, result.reason) == ("unknown", "analysis_limit")


@pytest.mark.parametrize("hidden", ["sha256sum secrets.txt", "pip install leftpad",
                                    "cp payload ~/.local/state/stop-that-shit/x"])
@pytest.mark.parametrize("padding", ["; ls a" * 1500, " " + "a " * 9000 + ";", ""])
def test_padding_past_a_limit_hides_no_hash_dependency_or_write(hidden, padding):
    """A line beyond the length, depth or work limit proves nothing: it may
    hash, add a dependency or write anywhere, so padding cannot hide one."""
    for command in (hidden + padding, hidden + "; " + "#" * 70000,
                    hidden + "; echo " + "$(echo " * 40 + "x" + ")" * 40):
        if command == hidden:
            continue
        result = sts.analyze_shell(command)
        assert result.reason == "analysis_limit", command[:60]
        assert result.hash_intent and result.dependency_intent and result.unknown_target


def test_the_work_limit_is_shared_by_every_shell_and_nested_script():
    """`unknown` reads a line as bash, PowerShell and cmd; a script inside
    bash -c is read by the same reader: all spend one budget."""
    line = "type " + "a " * 1800
    assert sts.analyze_shell(line, "bash").mutability == "read"
    assert sts.analyze_shell(line, "unknown").reason == "analysis_limit"
    nested = "bash -c 'ls " + "a " * 2500 + "'; " + "; ".join("ls d%d" % i for i in range(400))
    assert sts.analyze_shell(nested).reason == "analysis_limit"


def test_reading_a_long_line_grows_linearly_up_to_the_work_limit():
    ok, detail = _grows_linearly(lambda n: "ls " + "a " * n, 1500)
    assert ok, detail


def test_a_variable_costs_a_look_up_per_letter_of_its_name():
    """`a=1 a=1 ... ls`: each name is checked against the variables that
    change what a program runs, through a table made once, not a walk of
    ninety patterns and sixty telling parts for every name."""
    for name, label in (("TZ", "read"), ("LC_MONETARY", "read"), ("a", "unknown"),
                        ("MY_LONGER_NAME_X", "unknown")):
        result, calls = _work((name + "=1 ") * 1000 + "ls")
        assert result.mutability == label
        assert calls <= 40 * 1000, (name, calls)
    assert sts.analyze_shell("MY_CONF=1 " * 1000 + "ls").reason == "state_change"


@pytest.mark.parametrize("head,line", [("cat <<'EOF'", ""), ("cat <<EOF", "a"),
                                       ("cat > f.txt <<'EOF'", "x y"), ("cat <<-EOF", "\tb")])
def test_a_heredoc_body_costs_no_call_a_line(head, line):
    """The closing line is found with str.find and an unquoted body is
    searched as a whole: 60 KB of lines cost a few calls (a line at a time
    took a tenth of a second for 60,000 empty lines).  With `<<-` each line
    loses its tabs: one call a line."""
    lines = 60000 // (len(line) + 1)
    command = head + "\n" + (line + "\n") * lines + ("\tEOF" if "<<-" in head else "EOF")
    result, calls = _work(command)
    assert result.mutability == ("write" if ">" in head else "read")
    assert calls <= (lines if "<<-" in head else 0) + 300, calls


def test_a_line_is_searched_once_for_output_moved_onto_a_file(monkeypatch):
    """Every command of a line shares the line's text, which says whether
    `1<f` or `>&3` may leave standard output on a file: searched once per
    line, not once per command (400 here-documents searched 7.6 KB 400
    times, 190 ms, in C where the work count does not see it)."""
    real = sts._an_rx("std_moves", sts._STD_MOVES)
    searched = []

    class Counting:
        def search(self, text):
            searched.append(len(text))
            return real.search(text)

    monkeypatch.setitem(sts._RE_CACHE, "std_moves", Counting())
    line = "cat <<EOF\nline\nEOF\n" * 399
    assert sts.analyze_shell(line).mutability == "read"
    assert sum(searched) <= len(line), len(searched)
    # Found wherever it stands, as before.
    for line in ("exec 1<sts.py; " + "ls; " * 50 + "echo x >/dev/stdout",
                 "ls; " * 50 + "{ echo x >/dev/stdout; } 1<sts.py"):
        assert sts.analyze_shell(line).mutability == "write", line


def test_inline_python_longer_than_the_proof_takes_is_not_parsed():
    """60 KiB of Python on a here-document, or 27 KB after -c, took 140 ms
    and 70 ms to parse and walk; over 4 KiB the code is not proven, so it is
    not parsed (see test_inline_code)."""
    for command in ("python3 -I - <<'EOF'\n" + "print(1)\n" * 7000 + "EOF",
                    "python3 -I -c '" + "print(1);" * 3000 + "'"):
        result, calls = _work(command)
        assert (result.mutability, result.reason) == ("unknown", "interpreter_code")
        assert calls <= 3000, calls


@pytest.mark.parametrize("line", ["open('x.py')", "x = ['a', 'b']", "print('a')"])
def test_the_literals_of_code_on_a_heredoc_cost_no_call_each(line):
    """Code fed to an interpreter is searched for the commands and paths its
    literals spell out; thousands of copies of a few literals are looked at
    once each (a walk of every one cost 95 calls a line)."""
    for lines in (1000, 2000):
        result, calls = _work("python3 -I - <<'EOF'\n" + (line + "\n") * lines + "EOF")
        assert result.mutability == "unknown" and calls <= 5000, (lines, calls)


@pytest.mark.parametrize("short,long", [
    ("x", "-name"), ("x", "src/lib/module_name.py"), ("x", "--author=somebody"),
    ('"x"', '"quoted text, and more of it"'), ("'x'", "'single-quoted text'"),
    ('"$x"', '"$HOME/src/lib/module_name.py"')])
def test_a_word_costs_the_same_whatever_its_length(short, long):
    """A long line is mostly words: a word's plain characters are taken as
    one run, so 1,000 long words cost no more calls than 1,000 short ones
    (a call per character made `find . -name x -o ...` the costliest line)."""
    few = _work("echo " + (short + " ") * 1000)[1]
    many = _work("echo " + (long + " ") * 1000)[1]
    assert many <= few * 1.1 + 50, (few, many)


NESTED = {
    "command substitutions": lambda d: "echo " + "$(echo " * d + "x" + ")" * d,
    "subshells": lambda d: "( " * d + "ls" + " )" * d,
    "bash -c": lambda d: "bash -c " + "'bash -c \"" * (d // 2) + "ls" + "\"'" * (d // 2),
    "sudo": lambda d: "sudo " * d + "ls",
    "env": lambda d: "env " * d + "ls",
}


@pytest.mark.parametrize("name", sorted(NESTED))
def test_deep_nesting_is_bounded(name):
    make = NESTED[name]
    assert sts.analyze_shell(make(40)).mutability == "unknown"
    for depth in (10, 40):  # inside the nesting limit, and past it
        ok, detail = _grows_linearly(make, depth)
        assert ok, detail


def test_deep_nesting_reason_is_analysis_limit():
    deep = "echo " + "$(echo " * 40 + "x" + ")" * 40
    assert sts.analyze_shell(deep).reason == "analysis_limit"
    assert sts.analyze_shell("( " * 40 + "ls" + " )" * 40).reason == "analysis_limit"
    assert sts.analyze_shell("nice " * 40 + "ls").reason == "analysis_limit"
    assert sts.analyze_shell("nice " * 10 + "ls").mutability == "read"
    # Ten levels are fine: nesting itself is not suspicious.
    assert sts.analyze_shell("echo " + "$(echo " * 10 + "x" + ")" * 10).mutability == "read"
    assert sts.analyze_shell("( " * 10 + "ls" + " )" * 10).mutability == "read"
    # $($(ls)) runs ls's output as a program: never read.
    assert sts.analyze_shell("echo $($(ls))").mutability == "unknown"


# Each at n = 10,000 is the input analysed; the growth is checked from n = 2,500.
PATHOLOGICAL = {
    "double quotes": lambda n: '"' * n,
    "single quotes": lambda n: "'" * n,
    "alternating quotes": lambda n: "'\"" * (n // 2),
    "quoted quotes": lambda n: "echo " + '"\'"' * (n * 3 // 10),
    "backslashes": lambda n: "echo " + "\\" * (n + 1),
    "backquotes": lambda n: "ls " + "`" * (n - 1),
    "parameter openings": lambda n: "echo " + "${" * (n // 2),
    "process substitutions": lambda n: "ls " + "<(" * (n // 2),
    "heredocs": lambda n: "cat <<EOF\n" * (n * 3 // 10),
    "a long word, then pipes": lambda n: "x" * (6 * n) + " | " * (n // 100),
    "awk with quotes": lambda n: "awk '" + '"' * (2 * n) + "' f",
    "sed with s/": lambda n: "sed '" + "s/" * n + "' f",
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_input_costs_linear_work(name):
    make = PATHOLOGICAL[name]
    for shell in ("bash", "powershell", "unknown"):
        result = sts.analyze_shell(make(10000), shell)
        assert result.mutability in ("unknown", "write", "read")
        if name.startswith("sed"):
            assert result.mutability != "read"
        ok, detail = _grows_linearly(make, 2500, shell)
        assert ok, (shell, detail)


@pytest.mark.parametrize("command", ['"' * 10001, "'" * 10001, "echo " + "$(" * 5000,
                                     "ls " + "`" * 9999, "cat <<EOF\n" * 3000])
def test_unterminated_pathological_input_is_unknown(command):
    result = sts.analyze_shell(command)
    assert result.mutability == "unknown"


# ------------------------------------------------------------ measures ----

def test_no_false_reads_and_read_recall():
    """False reads: 0.  Read recall counts the true reads left unproven (~read)."""
    false_reads = [r for r in ROWS if r[1] != "read"
                   and "~read" not in r[2]
                   and sts.analyze_shell(r[3], _shell_of(r[2])).mutability == "read"]
    assert false_reads == []
    proven = sum(1 for r in ROWS if r[1] == "read")
    left = [r for r in ROWS if "~read" in r[2]]
    for r in left:
        assert sts.analyze_shell(r[3], _shell_of(r[2])).mutability != "read"
    recall = proven / float(proven + len(left))
    # 0.941 before issue 27, whose classes leave 23 true reads unproven on
    # purpose (variables off the allow-list, background jobs, npm and
    # `git remote show`, which obey the project's configuration): 0.918.
    assert recall >= 0.915, recall


# Ways a model could reach a write through a command that looks like a read ->
# corpus lines that exercise each of them.
BYPASS_CLASSES = {
    "env prefix, env, sudo, command, builtin": ["FOO=1 rm -rf x", "env rm x", "sudo rm x",
                                                "command rm x", "builtin cd / && rm x"],
    "bash -c, sh -c, eval": ["bash -c 'rm -rf x'", "sh -c \"echo hi > f\"", "eval rm x"],
    "xargs": ["ls | xargs rm"],
    "find actions": ["find . -delete", "find . -name x -exec rm {} \\;", "find . -fprint out.txt"],
    "in-place editors": ["sed -i 's/a/b/' a.txt", "sed --i 's/a/b/' a.txt",
                         "perl -pi -e 's/a/b/' a.txt"],
    "inline code": ["python3 -c \"open('x','w').write('y')\"", "node -e \"console.log(1)\""],
    "awk": ["awk '{print > \"out\"}' a.txt", "awk '{system(\"rm x\")}' a"],
    "git config/alias": ["git -c alias.x='!rm y' x", "git config user.name Bob"],
    "pagers, editors": ["less a.txt", "vim a.txt"],
    "fd duplication": ["git status 2>&1"],
    "writers": ["dd if=/dev/zero of=disk.img bs=1M count=1", "curl -o out.html https://example.com",
                "wget https://example.com/a.zip", "tar -xzf a.tgz", "unzip a.zip"],
    "lookalikes": ["ｒｍ x", "сat a.txt", "ls –la"],
    "backslash-newline, $'...'": ["r\\\nm x", "$'\\x72m' x"],
    "CR in bash": ["git diff --no-index a.txt b.txt\rls --output=victim.txt",
                   "rg foo\rls --pre=rm victim.txt"],
    "NEL in PowerShell": ["git diff --no-index a.txt b.txt\u0085--output=victim.txt"],
    "cmd ^ and '": ["rg --p^re=helper x",
                    "git diff --no-index a.txt b.txt ' --output=victim.txt '"],
    "option abbreviation": ["sort --o=f in.txt", "sed --i 's/a/b/' a.txt"],
    "session state": ["alias ls='rm -rf'", "PATH=./bin:$PATH ls", "export FOO=1"],
    "zsh expands what bash leaves alone": [
        "for x in '*(e:touch pwned:)'; do ls $~x; done", "for x in 'touch pwned'; do $=x; done",
        "echo $f[PATH=5]; ls", "=touch pwned", "< f", "{ ls } always { touch pwned }",
        "uniq f <-> /dev/null", "ls ~[proj]", "emulate sh -c 'touch pwned'"],
    "where a command runs": ["cd x; touch y", "cd x &>/dev/null && touch y",
                             "true | cd x; touch y", "git -C sub checkout -- a",
                             "env -C sub rm a", "tar -C a -C b -xf x.tar"],
}


@pytest.mark.parametrize("klass", sorted(BYPASS_CLASSES))
def test_bypass_class_is_in_the_corpus(klass):
    by_command = {r[3]: r for r in ROWS}
    for command in BYPASS_CLASSES[klass]:
        assert command in by_command, command
        row = by_command[command]
        expected = "read" if klass == "fd duplication" else None
        verdict = sts.analyze_shell(command, _shell_of(row[2])).mutability
        if expected:
            assert verdict == expected
        else:
            assert verdict != "read", command


# Large inputs for the manifest and hash scans: each must answer (their cost is
# measured in tests/bench_analysis.py; the scans are regular expressions, so a
# count of calls would not see a slow one).
MANIFEST_STRESS = [
    ("Gemfile", "gem" + " " * 1000000),
    ("src/App.csproj", "<PackageReference " * 100000),
    ("package.json", '"a' * 300000),
    ("requirements.txt", "a" + " " * 300000 + "x"),
    ("pyproject.toml", "[" * 200000),
    ("go.mod", "require (" + "\n" * 200000),
    ("setup.py", "install_requires=[" * 20000),
    ("pom.xml", "<dependency>" * 20000),
    ("build.gradle", "implementation '" * 20000),
    ("conanfile.py", '"a/1" ' * 20000),
    ("pubspec.yaml", "dependencies:\n" + "  - a\n" * 20000),
]
HASH_STRESS = [
    ("a.ps1", "certutil " * 100000),
    ("a.js", "createHash " * 100000 + "("),
    (None, "hashlib." * 100000),
    ("a.js", "sha256" * 50000),
    ("a.js", "sha1" + "a" * 100000 + "("),
    ("a.js", "'sha256'" * 20000),
    ("a.js", "{" + " hash " * 20000),
    ("a.sh", "sha256sum " * 50000),
    ("a.py", "from a import " + "sha1, " * 30000),
    ("a.py", "import hashlib\n" + "h.new('md5')\n" * 20000),
]


@pytest.mark.parametrize("path,text", MANIFEST_STRESS)
def test_large_manifests_get_an_answer(path, text):
    assert sts.dependency_intent_in_change(path, text, text + "\n") in (True, False)


@pytest.mark.parametrize("path,text", HASH_STRESS)
def test_large_texts_get_a_hash_answer(path, text):
    assert sts.hash_intent_in_text(text, path) in (True, False)


def test_code_without_hashing_words_costs_no_pattern_and_no_ast():
    """The hook path: ordinary code is read with substring tests only."""
    probe = ("import sys; sys.path.insert(0, %r); import sts; "
             "r = sts.hash_intent_in_text('def f(x):\\n    return x + 1\\n' * 200, 'src/a.py'); "
             "print(r, 'ast' in sys.modules, len([k for k in sts._RULE_RX if k != 'triggers']))"
             % os.path.dirname(HERE))
    out = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["False", "False", "0"]   # substring tests only: no pattern compiled
    hashing = probe.replace("return x + 1", "return hashlib.md5(x)")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", hashing], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[:2] == ["True", "False"]     # a call in plain code: sure without a parse
    mention = probe.replace("return x + 1", "return x  # not hashlib.md5(x)")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", mention], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[:2] == ["False", "True"]     # only in a comment: the parse decides


def test_oversized_manifest_is_assumed_to_add():
    assert sts.dependency_intent_in_change("package.json", None, " " * (5 << 20)) is True


def test_apply_patch_through_the_shell_reports_patch_paths():
    line = ("apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: src/a.js\n+x\n"
            "*** Delete File: old.txt\n*** End Patch\nPATCH")
    result = sts.analyze_shell(line)
    assert result.mutability == "write"
    assert result.write_targets == ["src/a.js", "old.txt"]


# (build a command n levels deep, n, shell).  A level may cost work in
# proportion to the levels around it (at most quadratic, and the depth limit
# bounds it), never a re-analysis of everything inside it (exponential).
NESTINGS = {
    "assignment values are read once": (lambda n: "a=$(" * n + "ls" + ")" * n, 30, "bash"),
    "empty native arguments judged twice": (lambda n: "pwsh -c " * n + "rg x ''", 15,
                                            "powershell"),
    "xargs": (lambda n: "xargs " * n + "ls", 20, "bash"),
    "find -exec": (lambda n: "find . -exec " * n + "ls {} ;" * n, 10, "bash"),
    "eval": (lambda n: "bash -c '" + "eval " * n + "ls'", 20, "bash"),
}


@pytest.mark.parametrize("name", sorted(NESTINGS))
def test_nesting_never_explodes(name):
    make, n, shell = NESTINGS[name]
    for depth in (n // 2, n):
        assert sts.analyze_shell(make(2 * depth), shell).mutability in ("read", "unknown",
                                                                           "write")
        ok, detail = _grows_linearly(make, depth, shell, power=2)
        assert ok, detail


def test_random_argument_soup_never_raises():
    """The internals raise nothing but their own give-up signal on any input."""
    import random
    rng = random.Random(11)
    programs = sorted(sts._PROGRAMS)
    tokens = ["-", "--", "-o", "-e", "-i", "-n", "-c", "-x", "-C", "-S", "-u", "-t", "-f", "-I",
              "=", "a", '""', "''", "$x", "*", "{}", ";", "+", "--output", "--list", "install",
              "add", "get", "list", "show", "x=1", "dgst", "-hashfile", "api", "-X", "POST",
              "--version", "tool", "-g", "-m", "json.tool", "http://a", ">", "2>&1", "<<", "|"]
    for _ in range(3000):
        line = rng.choice(programs) + " " + " ".join(
            rng.choice(tokens) for _ in range(rng.randint(0, 6)))
        for shell in ("bash", "powershell", "unknown"):
            sts._analyze_any(line, shell)


@pytest.mark.parametrize("command,targets", [
    ("Remove-Item a.txt", ["a.txt"]),
    ("Set-Content -Path a.txt -Value x", ["a.txt"]),
    ("Out-File -FilePath log.txt", ["log.txt"]),
    ("New-Item -ItemType File -Path x.txt", ["x.txt"]),
    ("rm -Recurse -Force build", ["build"]),
    ("Copy-Item a b", ["b"]),
    ("Move-Item -Path a -Destination d/", ["d/"]),
])
def test_powershell_write_targets(command, targets):
    result = sts.analyze_shell(command, "powershell")
    assert result.mutability == "write"
    assert result.write_targets == targets


# ------------------------------------------------ the shell is not always bash ----
# Codex and Claude Code run a command in the user's shell: zsh on macOS, sh
# (dash) on some systems.  A form zsh expands where bash sees text must never
# be proven read, in whatever place of a line it stands.

ZSH_FORMS = [
    "$~x", "$=x", "$^x", "$+x", "${~x}", "${=x}", "${^x}", "${+x}", "${(e)x}", "${(P)x}",
    "${(%)x}", "${(f)x}", "${(s: :)x}", "${(j: :)x}", "$x[PATH=5]", "$x[1]", "$#x[1]",
    "$@[1]", "$1[2]", "*(e:touch y:)", "f(+fn)", "f(N)", "*(#q.)", "(a|b)", "~[dir]",
    "~[dir]/x", "<1-9>", "<->", "=(touch y)",
]
# Where a word can stand; X is replaced by the form.
ZSH_PLACES = [
    "ls X", "ls -- X", "ls a X b", "X", "echo X > /dev/null", "cat < X", "ls > X",
    "for i in a; do ls X; done", "for i in X; do ls; done", "if true; then ls X; fi",
    "ls $(echo X)", "echo `echo X`", "ls | grep X", "true && ls X", "(ls X)", "{ ls X; }",
    "LC_ALL=C ls X", "env ls X", "command ls X", "timeout 5 ls X", "xargs ls X < /dev/null",
    "bash -c 'ls X'", "sh -c \"ls X\"", "eval 'ls X'", "noglob ls X", "cd src && ls X",
    "git -C src log X", "find . -name X", "test -n X",
]
# Expansions that run only inside double quotes too.
ZSH_QUOTED = ["$~x", "$=x", "$^x", "$+x", "$x[PATH=5]", "$#x[1]", "$@[1]"]


@pytest.mark.parametrize("form", ZSH_FORMS)
def test_zsh_forms_are_never_read_in_any_place(form):
    proven = [place.replace("X", form) for place in ZSH_PLACES
              if sts.analyze_shell(place.replace("X", form)).mutability == "read"]
    assert proven == []


@pytest.mark.parametrize("form", ZSH_QUOTED)
def test_zsh_forms_inside_double_quotes_are_not_read(form):
    for line in ('echo "%s"' % form, 'ls -- "a%sb"' % form, 'cat "%s" > /dev/null' % form):
        assert sts.analyze_shell(line).mutability != "read", line


@pytest.mark.parametrize("place", ZSH_PLACES)
def test_plain_words_in_the_same_places_stay_read(place):
    # The refusals above are about the zsh forms, not about the places.
    line = place.replace("X", "a.txt") if place != "X" else "ls"
    if place in ("ls > X",):
        line = "ls > /dev/null"
    assert sts.analyze_shell(line).mutability == "read", line


@pytest.mark.parametrize("op", [">!", ">>!", ">&!", "&>!", "2>!", "1>>!"])
@pytest.mark.parametrize("spacing", [" ", ""])
def test_clobber_redirections_write_both_readings(op, spacing):
    # zsh writes the next word; bash and sh write `!` (or `!word`) and pass the word on.
    result = sts.analyze_shell("ls %s%starget" % (op, spacing))
    assert result.mutability == "write"
    assert "target" in result.write_targets
    assert ("!" if spacing else "!target") in result.write_targets


@pytest.mark.parametrize("line,targets", [
    # bash: cp a b c; zsh: cp a b (the destination may be a folder: dest/source too)
    ("cp a b >! c", ["!", "b", "b/a", "c", "c/a", "c/b"]),
    (">! x rm -rf y", ["!", "x", "y"]),           # bash runs `x rm -rf y`, zsh `rm -rf y`
    ("mv a >! b c", ["!", "a", "b", "c", "c/a", "c/b"]),
])
def test_clobber_word_is_judged_with_and_without(line, targets):
    result = sts.analyze_shell(line)
    assert result.mutability == "write"
    assert sorted(result.write_targets) == sorted(targets)


@pytest.mark.parametrize("line", [
    "< f", "<f", "< f | cat", "<<< x", "> /dev/null", "2>/dev/null", "<<EOF⏎x⏎EOF",
    "< f; ls", "ls && < f", "echo $(ls; < f)",
])
def test_a_redirection_alone_runs_a_program_in_zsh(line):
    result = sts.analyze_shell(line.replace("⏎", "\n"))
    assert result.mutability != "read"


@pytest.mark.parametrize("line", [
    "cat < f", "echo $(< f)", "echo $( < f )", "echo `<f`", "(ls) < f", "{ ls; } < f",
    "for x in a; do ls; done < f", "if true; then ls; fi < f", "while false; do ls; done < f",
    "ls 2>/dev/null", "ls >/dev/null 2>&1",
])
def test_redirections_of_a_command_or_group_stay_read(line):
    assert sts.analyze_shell(line).mutability == "read"


@pytest.mark.parametrize("line", [
    "(ls) rm x", "(ls) > f rm x", "{ ls; } rm x", "if true; then ls; fi rm x",
    "for x in a; do ls; done rm x", "(ls) x=1", "(ls) (rm x)", "() ls", "() { ls; }",
])
def test_words_after_a_group_are_refused(line):
    assert sts.analyze_shell(line).mutability != "read"


@pytest.mark.parametrize("line", [
    "if (true) then ls; fi", "if { true; } then ls; fi", "for x in a; do if true; then ls; fi done",
    "{ { ls; } }", "while false; do (ls) done",
])
def test_reserved_words_after_a_group_still_parse(line):
    assert sts.analyze_shell(line).mutability == "read"


@pytest.mark.parametrize("line", [
    "grep $'\\t' a.txt", "printf $'%s\\n' a", "ls &>/dev/null", "ls &>>/dev/null",
])
def test_dash_readings_of_ansi_c_and_ampersand_redirection(line):
    # dash reads $'\t' as `$` and a quoted `\t`: a read there too; `a &> f` as
    # `a &` then `> f`, a job left in the background, which may outlive the shell.
    result = sts.analyze_shell(line)
    if "&>" in line:
        assert (result.mutability, result.reason) == ("unknown", "state_change")
    else:
        assert result.mutability == "read"


@pytest.mark.parametrize("line,targets", [
    ("cd x &>/dev/null && touch y", ["x/y", "y"]),    # dash: cd ran in the background
    ("cd x &> /dev/null; touch y", ["x/y", "y"]),
    ("ls &> out", ["out"]),
])
def test_dash_reading_adds_its_targets(line, targets):
    result = sts.analyze_shell(line)
    assert sorted(result.write_targets) == sorted(targets)


# ------------------------------------------------------- where a command runs ----
# A write target is named from the folder the shell is in when the command
# runs.  Every folder it may be in counts: a cd may fail, a subshell keeps its
# cd, && and || choose a side.

MOVERS = ["cd x", "builtin cd x", "command cd x", "eval cd x", "eval 'cd x'", "time cd x",
          "noglob cd x", "nocorrect cd x", "chdir x", "pushd x", "cd -P x", "cd -L -- x",
          "cd x/", "pushd -q x"]
WRITERS = [("touch y", "y"), ("rm -f y", "y"), ("echo hi > y", "y"), ("ls | tee y", "y"),
           ("cp a y", "y"), ("mkdir y", "y"), ("sed -i s/a/b/ y", "y"), ("ls >> y", "y"),
           ("git checkout -- y", "y"), ("truncate -s 0 y", "y")]
# connector -> (the writer may run after the move succeeded, after it failed)
CONNECTORS = {" && ": (True, False), " || ": (False, True), "; ": (True, True),
              "\n": (True, True), " 2>/dev/null; ": (True, True), " || true; ": (True, True),
              " >/dev/null && ": (True, False), " &>/dev/null && ": (True, True),
              " && true; ": (True, True), " & ": (False, True), " | cat; ": (False, True)}


def _moved(writer_target, mover):
    return "x/" + writer_target if not mover.startswith("eval") else "x/" + writer_target


@pytest.mark.parametrize("mover", MOVERS)
@pytest.mark.parametrize("connector", sorted(CONNECTORS))
def test_targets_follow_every_folder_the_shell_may_be_in(mover, connector):
    after_ok, after_failed = CONNECTORS[connector]
    if mover.startswith("eval") and connector in (" && ", " >/dev/null && ", " || "):
        after_ok = after_failed = True   # eval's status is not read as the cd's: both kept
    for writer, target in WRITERS:
        result = sts.analyze_shell(mover + connector + writer)
        found = result.write_targets
        assert ("x/" + target in found) == after_ok, (mover + connector + writer, found)
        assert (target in found) == after_failed, (mover + connector + writer, found)
        assert not result.unknown_target


@pytest.mark.parametrize("wrapper", ["(%s);", "echo $(%s);", "echo `%s`;", ": $(%s);",
                                     "bash -c '%s';", "sh -c '%s';", "zsh -c '%s';", "env %s;",
                                     "nohup %s;", "timeout 5 %s;", "nice %s;", "xargs %s <f;",
                                     "%s &", "%s | cat;", "cat <(%s);", "(%s) >/dev/null;"])
def test_a_cd_that_stays_in_its_own_shell(wrapper):
    # A subshell, a substitution, another shell, an external program, a
    # background job or a pipeline stage (not the last) keeps its folder to itself.
    line = (wrapper % "cd x") + " touch y"
    result = sts.analyze_shell(line)
    assert result.write_targets == ["y"], line
    assert not result.unknown_target


@pytest.mark.parametrize("line", [
    "cd $d; touch y", "cd \"$d\" && touch y", "cd -; touch y", "cd +1 && touch y",
    "cd -2 && touch y", "popd; touch y", "popd && touch y", "pushd +1 && touch y",
    "pushd && touch y", "cd a b && touch y", "source ./e.sh; touch y", ". ./e.sh; touch y",
    "trap 'cd /' DEBUG; touch y", "eval \"$c\"; touch y", "for c in cd; do $c x; touch y; done",
    "$c x; touch y", "command $c x; touch y", "HOME=/tmp cd; touch y", "CDPATH=/ cd x; touch y",
    "export CDPATH=/tmp; cd x && touch y", "read CDPATH; cd x && touch y",
    "for d in a b; do cd $d; done; touch y", "while true; do cd x; done; touch y",
    "emulate sh -c 'cd /'; touch y", "fc -e - ; touch y", "r; touch y", "dirs a b; popd; touch y",
    "$(cd x); touch y", "`echo cd` x; touch y",
])
def test_an_unknown_folder_sets_the_opaque_flag(line):
    result = sts.analyze_shell(line)
    assert result.mutability == "write"
    assert result.unknown_target, (line, result)


@pytest.mark.parametrize("line,targets", [
    ("cd /etc && echo x > hosts", ["/etc/hosts"]),
    ("cd ~/p && rm a", ["~/p/a"]),
    ("cd && rm a", ["~/a"]),
    ("cd x && rm /abs ~/h", ["/abs", "~/h"]),
    ("cd x && cd y && rm a", ["x/y/a"]),
    ("cd x && cd /y && rm a", ["/y/a"]),
    ("cd x; cd y && rm a", ["x/y/a", "y/a"]),
    ("cd a/.. && rm b", ["a/../b", "b"]),          # logical (cd -L) and physical
    ("cd x && cd .. && rm b", ["x/../b", "b"]),
    ("pushd x && pushd y && popd && rm a", ["x/a"]),
    ("pushd x && popd && popd && rm a", []),         # the second popd leaves the line's stack
    ("(cd x && rm a) && rm b", ["x/a", "b"]),
    ("{ cd x && rm a; } && rm b", ["x/a", "x/b"]),
    ("cd x && { rm a; rm b; }", ["x/a", "x/b"]),
    ("cd x || { rm a; exit 1; }; rm b", ["a", "x/b"]),
    ("! cd x && rm a", ["x/a", "a"]),
    ("cd x && rm a | cat && rm b", ["x/a", "x/b"]),
    ("if cd x; then rm a; else rm b; fi", ["a", "x/a", "b", "x/b"]),
    ("for f in a; do rm $f; done; cd x && rm b", ["a", "x/b"]),   # $f is each list word
    ("for f in a; do (cd x && rm b); done; rm c", ["x/b", "c"]),
    ("git -C x -C y checkout -- a", ["x/y/a"]),
    ("git -C /r diff --output=o", ["/r/o"]),
    ("cd x && git -C y restore a", ["x/y/a"]),
    ("env -C x --unset=A rm a", ["x/a"]),
    ("env --chdir x rm a", ["x/a"]),
    ("sudo -u bob -D x rm a", ["x/a"]),
    ("sudo --chdir=/srv rm a", ["/srv/a"]),
    ("tar -C a -C b -xf t.tar", ["a", "a/b"]),
    ("tar xvfC t.tar out", ["out"]),
    ("tar --directory=out -xf t.tar", ["out"]),
    ("tar -C out -czf t.tgz x", ["t.tgz"]),
    ("cd x && tar -xf t.tar -C y", ["x/y"]),
    ("patch -d src -p1 -i p.diff", ["src"]),
    ("patch -d src -o out.c a.c -i p.diff", ["src/out.c", "src"]),
    ("unzip a.zip -d out", ["out"]),
])
def test_write_targets_from_where_each_command_runs(line, targets):
    result = sts.analyze_shell(line)
    assert result.write_targets == targets, (line, result)


@pytest.mark.parametrize("line", [
    "git -C $d checkout -- a", "env -C $d rm a", "env -C \"$d\" rm a", "sudo -D $d rm a",
    "tar -C $d -xf t.tar", "patch -d $d -i p.diff", "unzip a.zip -d $d",
    "git -C src -C $d restore a",
])
def test_an_expansion_as_the_folder_sets_the_opaque_flag(line):
    result = sts.analyze_shell(line)
    assert result.mutability == "write" and result.unknown_target, (line, result)
    assert not any(t.endswith("/a") for t in result.write_targets)


def test_cdpath_in_the_environment_makes_a_bare_cd_unknown(monkeypatch):
    monkeypatch.delenv("CDPATH", raising=False)
    assert sts.analyze_shell("cd x && rm a").write_targets == ["x/a"]
    assert not sts.analyze_shell("cd x && rm a").unknown_target
    monkeypatch.setenv("CDPATH", "/srv")
    result = sts.analyze_shell("cd x && rm a")
    assert result.write_targets == ["x/a"] and result.unknown_target
    # CDPATH is never searched for /x, ./x, ../x or ~.
    for line in ("cd ./x && rm a", "cd ../x && rm a", "cd /x && rm a", "cd ~ && rm a"):
        assert not sts.analyze_shell(line).unknown_target, line


@pytest.mark.parametrize("line,shell,targets,opaque", [
    ("cd x; Remove-Item a", "powershell", ["a", "x/a"], False),
    ("Set-Location -Path sub; Remove-Item a", "powershell", ["sub", "a", "sub/a"], False),
    ("sl ..; ri sts.py", "powershell", ["sts.py", "../sts.py"], False),
    ("popd; Remove-Item a", "powershell", ["a"], True),
    ("Push-Location x; Remove-Item a", "powershell", ["a", "x/a"], False),
    ("cd x & rm a", "unknown", ["a", "x/a"], False),
    ("cd /d D:\\w & rm a", "unknown", ["a", "D:\\w/a"], False),
])
def test_location_changes_in_powershell_and_cmd(line, shell, targets, opaque):
    result = sts.analyze_shell(line, shell)
    assert result.write_targets == targets, result
    assert result.unknown_target is opaque


def test_many_cds_stay_bounded():
    # Each cd may fail: 2^n folders; past a bound the folder is unknown, and
    # the work grows with the line, not with the number of folders.
    cds = lambda n: "; ".join("cd d%d" % k for k in range(n)) + "; rm a"
    assert sts.analyze_shell(cds(40)).unknown_target
    ok, detail = _grows_linearly(cds, 40)
    assert ok, detail
    loops = lambda n: "for a in 1; do " * n + "cd x; " + "done; " * n + "rm y"
    assert sts.analyze_shell(loops(30)).unknown_target
    ok, detail = _grows_linearly(loops, 12, power=2)   # each loop scans what it holds
    assert ok, detail


def test_an_over_limit_line_is_its_own_culprit_in_every_family():
    """Nothing in a line past a limit decided; the denial says so, at no cost."""
    for code in ("MUTABILITY_UNPROVEN", "HASH_NOT_AUTHORIZED", "DEPENDENCY_NOT_AUTHORIZED"):
        text, calls = calls_made(sts.shell_culprit, "ls " + "[" * 65000, "bash", code, (),
                                 "analysis_limit")
        assert text.startswith("Culprit: the command is too long") and "too much to read" in text
        assert calls < 100


def test_finding_a_culprit_reads_at_most_half_as_much_again():
    """A denial reads the line a second time to name the culprit, with half
    the budget: a long line gets no culprit line instead of a full re-read."""
    short = "ls a; rm x"
    assert "`rm x`" in sts.shell_culprit(short, "bash", "MODE_FORBIDS_MUTATION")
    long_line = "; ".join("ls d%d" % i for i in range(600)) + "; rm x"
    assert sts.analyze_shell(long_line).mutability == "write"   # read in full the first time
    reading = _work(long_line)[1]
    text, culprit = calls_made(sts.shell_culprit, long_line, "bash", "MODE_FORBIDS_MUTATION")
    assert text == "" and culprit <= reading * 0.6


def test_a_line_that_spent_over_half_is_not_read_again_for_its_culprit():
    """The hook reads its line, then names the culprit of a denial: a line
    whose first reading spent more than half the budget would run out on the
    second, so it is not read again; any other line in between is."""
    long_line = "; ".join("ls d%d" % i for i in range(600)) + "; rm x"
    assert sts.analyze_shell(long_line).mutability == "write"
    text, calls = calls_made(sts.shell_culprit, long_line, "bash", "MODE_FORBIDS_MUTATION")
    assert text == "" and calls < 50
    sts.analyze_shell("ls")   # another line read last: the culprit reading runs, and runs out
    text, calls = calls_made(sts.shell_culprit, long_line, "bash", "MODE_FORBIDS_MUTATION")
    assert text == "" and calls > 1000
    # A line within half the budget still gets its culprit, on every host shell.
    short = "; ".join("ls d%d" % i for i in range(100)) + "; rm x"
    for shell in ("bash", "unknown"):
        assert sts.analyze_shell(short, shell).mutability == "write"
        assert "`rm x`" in sts.shell_culprit(short, shell, "MODE_FORBIDS_MUTATION")


def test_the_agent_scan_of_an_unread_line_reads_only_words_that_name_an_agent(monkeypatch):
    """An unread line's words are searched for an agent CLI it would start;
    only words that hold an agent's name are looked at closely, so 64 KiB of
    path-like words costs little whether or not the line names an agent."""
    paths = " ".join("$HOME/d%d/x" % i for i in range(7000))
    hidden = "x; " * 3000 + "node_modules\\@openai\\codex\\bin\\codex.js exec hi; " + paths
    assert sts.analyze_shell(hidden[:65535]).starts_agent == "codex"
    plain = _work(("ls " + paths)[:65535])[1]
    result, named = _work(("ls " + paths)[:65000] + "; claude -p hi")
    assert result.starts_agent == "claude"
    monkeypatch.setattr(sts, "_names_an_agent", lambda text: False)
    reading = _work(("ls " + paths)[:65535])[1]   # the same line without the scan
    # Looking at each of 7,000 path words closely cost three times the reading.
    assert plain <= 1.5 * reading and named <= 1.5 * plain, (reading, plain, named)


def test_a_launchers_command_string_without_an_agent_name_costs_no_call_a_word():
    """`tmux new "..."`, `ssh host "..."`: the string is searched for an
    agent CLI it would start, and only when it holds a name are its words
    looked at (one by one, 3,000 words cost 80,000 calls)."""
    for command in ('tmux new "' + "ls a " * 3000 + '"', 'ssh host "' + "cat x; " * 2000 + '"'):
        result, calls = _work(command)
        assert result.mutability == "unknown" and result.starts_agent is None
        assert calls <= 1000, calls
    assert sts.analyze_shell('tmux new "' + "ls a " * 3000 + 'claude -p hi"').starts_agent \
        == "claude"


@pytest.mark.parametrize("command", [
    "rm -rf $x", "rm `pwd`/x", "[[ -f a ]] && claude -p hi", 'tmux new "claude -p hi"',
    "[[ x ]]; " + "claude mcp " * 3000, 'ssh host "codex exec y"', "[[ x ]]; rm a b"])
def test_splitting_words_and_finding_agent_names_compiles_no_pattern(command):
    """These run in the hook for a denied line: `import re` alone costs a
    hook about as much as the bare interpreter, so the words of an unread
    line and of a launcher's string are split with str.translate and split,
    agent names found with substring tests, and a line is searched for a
    named hashing program only when it holds part of one's name."""
    sts._RE_CACHE.clear()
    for code in ("MUTABILITY_UNPROVEN", "MODE_FORBIDS_MUTATION"):
        result = sts.analyze_shell(command)
        assert result.mutability != "read"
        sts.shell_culprit(command, "bash", code, (), result.reason)
    assert sts._RE_CACHE == {}, sorted(sts._RE_CACHE)
    assert sts.analyze_shell("h=sha256sum; $h f").hash_intent   # that search still runs


# A line that names an agent CLI thousands of times, each time as a setup
# subcommand that starts nothing: every name is looked at, with the words
# after it (a copy of those for each name was quadratic).
AGENT_REPEATS = {
    "an unread line": lambda n: "[[ x ]]; " + "claude mcp " * n,
    "a launcher's operands": lambda n: "nohup " + "claude mcp " * n,
    "a launcher's command string": lambda n: 'tmux new "' + "claude mcp " * n + '"',
}


class _CountedWords(list):
    """Words that count how many of them are read, one at a time or as a
    slice (a slice copies every word in it)."""
    read = 0

    def __getitem__(self, key):
        part = list.__getitem__(self, key)
        _CountedWords.read += len(part) if isinstance(key, slice) else 1
        return part


@pytest.mark.parametrize("name", sorted(AGENT_REPEATS))
def test_an_agent_named_again_and_again_costs_linear_work(name, monkeypatch):
    make = AGENT_REPEATS[name]
    result = sts.analyze_shell(make(1500))
    assert result.mutability == "unknown" and result.starts_agent is None
    assert sts.analyze_shell(make(1500) + " claude -p hi").starts_agent == "claude"
    ok, detail = _grows_linearly(make, 600)
    assert ok, detail
    # The words of the text, as the agent scan reads them.
    split = sts._agent_tokens
    monkeypatch.setattr(sts, "_agent_tokens", lambda text: _CountedWords(split(text)))
    read = []
    for n in (600, 1200):   # (within the work limit: the reading reaches every word)
        _CountedWords.read = 0
        sts.analyze_shell(make(n))
        read.append(_CountedWords.read)
    assert read[1] <= 2.5 * read[0] + 50, read
