"""The hook runner and CLI: a hook fails open, except on a tool call in an armed
session (internal error, input too large or not UTF-8), where it fails closed."""
import dis
import functools
import json
import marshal
import os
import re
import subprocess
import sys

import pytest

import sts
from hooks import ROOT, deny_reason, hook, hook_process, kit_calls, place_hooked_sts

PROMPT = {"hook_event_name": "UserPromptSubmit", "session_id": "s-cli", "cwd": "/w"}
WRITE = {"hook_event_name": "PreToolUse", "session_id": "s-cli", "cwd": "/w",
         "tool_name": "Write", "tool_use_id": "t1",
         "tool_input": {"file_path": "/w/a.txt", "content": "x"}}


def cli(*args, stdin=b"", env=None):
    return subprocess.run([sys.executable, os.path.join(ROOT, "sts.py"), *args], input=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                          timeout=30, check=False)


@pytest.mark.parametrize("raw, why", [
    (b"", b"EmptyInput"),
    (b"   \n", b"EmptyInput"),
    (b"{not json", b"InvalidJSON"),
    (b"[1, 2]", b"InvalidEvent"),
    (b"\xff\xfe\x00garbage", b"UnreadableInput"),
])
def test_garbage_on_stdin_fails_open_with_one_stderr_line(sts_home, raw, why):
    proc = hook_process("claude", raw, sts_home)
    assert proc.returncode == 0
    assert proc.stdout == b""
    assert proc.stderr.count(b"\n") == 1 and why in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_huge_input_is_denied_only_when_the_session_is_armed(sts_home, store):
    hook("claude", dict(PROMPT, prompt="$stop-that-shit review"), store)
    padding = "x" * (sts.STDIN_CAP + 10)
    big = dict(WRITE, tool_input={"file_path": "/w/a", "content": padding})
    proc = hook_process("claude", json.dumps(big).encode(), sts_home)
    assert proc.returncode == 0
    assert "too large" in deny_reason(json.loads(proc.stdout))
    other = dict(big, session_id="s-unarmed")
    proc = hook_process("claude", json.dumps(other).encode(), sts_home)
    assert proc.stdout == b"" and b"failed open" in proc.stderr


def test_unknown_event_and_missing_fields_are_ignored(store):
    assert hook("claude", {"hook_event_name": "Notification", "session_id": "s"}, store) is None
    assert hook("claude", {"hook_event_name": "PreToolUse"}, store) is None
    assert hook("codex", {"hook_event_name": "PreToolUse", "session_id": "s"}, store) is None


def test_internal_error_fails_closed_on_an_armed_tool_call(store, monkeypatch, capsys):
    hook("claude", dict(PROMPT, prompt="$stop-that-shit change"), store)

    def broken(*args, **kwargs):
        raise KeyError("boom")
    monkeypatch.setattr(sts, "handle_event", broken)
    reason = deny_reason(hook("claude", WRITE, store))
    assert "internal error: KeyError" in reason and "$stop-that-shit off" in reason
    assert "failed closed: KeyError" in capsys.readouterr().err


def test_internal_error_fails_open_when_not_armed_or_not_a_tool_call(store, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise KeyError("boom")
    monkeypatch.setattr(sts, "handle_event", broken)
    assert hook("claude", WRITE, store) is None
    assert "failed open: KeyError" in capsys.readouterr().err
    assert hook("claude", dict(PROMPT, prompt="hello"), store) is None


def test_unknown_command_exit_2_at_a_terminal_and_1_in_a_hook():
    """Typed at a terminal, a usage error; from a host (stdin no terminal), a
    hook wired with a wrong host name, which must not block the host (exit 2)."""
    import pty
    import subprocess
    import sys
    from conftest import STS_PY
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, STS_PY, "frobnicate"], stdin=terminal,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(terminal)
        os.close(controller)
    assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1
    assert b"unknown command 'frobnicate'" in proc.stderr
    proc = cli("frobnicate")
    assert proc.returncode == 1 and proc.stderr.count(b"\n") == 1 and proc.stdout == b""
    assert b"'frobnicate' is not a host sts knows" in proc.stderr


def test_help_and_version():
    assert cli("--help").returncode == 0
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.decode().strip() == "sts %s" % sts.VERSION


def test_every_hook_touches_its_host_file(sts_home, store):
    hook("codex", {"hook_event_name": "SessionStart", "session_id": "s"}, store)
    assert os.path.exists(os.path.join(str(sts_home), "hosts", "codex"))


def test_demo_shows_a_real_deny_then_an_allow():
    proc = cli("demo")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert out.count("DENIED") == 1
    assert "Code: I/MODE_FORBIDS_MUTATION" in out
    assert out.index("DENIED") < out.rindex("(no output: allowed)")


def test_a_hook_process_skips_teardown_but_loses_nothing(sts_home):
    """The process ends with os._exit after flushing: the whole answer arrives,
    and the state and audit line are on disk."""
    assert hook_process("claude", dict(PROMPT, prompt="$stop-that-shit review"),
                        sts_home).returncode == 0
    long_path = "/w/" + "d" * 3000 + "/a.txt"
    proc = hook_process("claude", dict(WRITE, tool_input={"file_path": long_path,
                                                          "content": "x"}), sts_home)
    assert proc.returncode == 0 and proc.stderr == b""
    reason = deny_reason(json.loads(proc.stdout))
    assert "Code: I/MODE_FORBIDS_MUTATION" in reason
    store = sts.Store(str(sts_home))
    key = sts.session_key("s-cli")
    assert store.load(key).state["contract"]["mode"] == "review"
    with open(os.path.join(str(sts_home), "runtime", key + ".jsonl"), encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["decision"]["reasonCode"] == "MODE_FORBIDS_MUTATION"


def test_a_hook_whose_reader_left_exits_quietly(sts_home):
    hook_process("claude", dict(PROMPT, prompt="$stop-that-shit review"), sts_home)
    read_end, write_end = os.pipe()
    os.close(read_end)
    code = "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % ROOT
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, "claude"],
                          input=json.dumps(WRITE).encode(), stdout=write_end,
                          stderr=subprocess.PIPE, env=dict(os.environ, STS_HOME=str(sts_home)),
                          timeout=30, check=False)
    os.close(write_end)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr


def test_main_called_with_arguments_returns_instead_of_exiting(store, monkeypatch, capsys):
    """A program that imports sts and calls main([...]) keeps running."""
    class Stdin:
        buffer = __import__("io").BytesIO(json.dumps(WRITE).encode())
    monkeypatch.setattr(sys, "stdin", Stdin)
    assert sts.main(["claude"]) == 0
    assert capsys.readouterr().out == ""  # not armed: allowed, nothing to say


# ---- cold sections: a hook loads only the hot part of the bytecode ------------------

@functools.lru_cache(maxsize=None)
def _top_level_statements():
    """(line index, names it defines, names it reads) of each top-level
    statement of sts.py: the file is parsed once for the tests below."""
    import ast
    with open(os.path.join(ROOT, "sts.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    out = []
    for node in tree.body:
        defines = set()
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defines.add(node.name)
        targets = list(getattr(node, "targets", []))
        if getattr(node, "target", None) is not None:
            targets.append(node.target)   # annotated assignments and for loops
        for target in targets:
            defines.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Load)}
        out.append((node.lineno - 1, defines, reads))
    return out


def _hot_names_used_cold(titles=sts._COLD_SECTIONS):
    """Names hot code uses that only cold sections (or the hosts part, with
    its titles) define (must be none)."""
    with open(os.path.join(ROOT, "sts.py"), encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    start, end = sts._cold_range(lines, titles)
    assert 0 < start < end < len(lines)
    # Hot code: neither these sections nor the cold ones (which load the
    # hosts part before they run).
    first, last = sts._cold_range(lines)
    cold, hot, hot_reads = set(), set(), set()
    for index, defines, reads in _top_level_statements():
        if start <= index < end:
            cold |= defines
        elif not first <= index < last:
            hot |= defines
            hot_reads |= reads
    cold_only = cold - hot
    return sorted(hot_reads & cold_only), cold_only


def test_hot_code_reaches_cold_names_only_through_cold():
    used, cold_only = _hot_names_used_cold()
    assert used == []
    assert {"cmd_install", "cmd_inspect", "inspection_response", "cmd_cases"} <= cold_only


def test_hot_code_reaches_the_other_hosts_only_through_adapters():
    """A Codex or Claude Code hook runs without the other hosts' part: no code
    outside it names what only it defines (cold code loads it first)."""
    used, hosts_only = _hot_names_used_cold(sts._HOST_SECTIONS + sts._MORE_SECTIONS)
    assert used == []
    assert {"HermesAdapter", "OmpAdapter", "GeminiAdapter", "QwenAdapter", "DroidAdapter",
            "HOST_ADAPTERS_B", "HOST_ADAPTERS_C", "HOST_ADAPTERS_D"} <= hosts_only


def test_nothing_outside_the_more_part_names_what_only_it_defines():
    """The hooks of the older hosts run without the "more" part (the hosts
    added last): no code outside it, the hosts part included, names its
    definitions; they reach the rest through ADAPTERS."""
    with open(os.path.join(ROOT, "sts.py"), encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    start, end = sts._cold_range(lines, sts._MORE_SECTIONS)
    assert 0 < start < end < len(lines)
    more, other, other_reads = set(), set(), set()
    for index, defines, reads in _top_level_statements():
        if start <= index < end:
            more |= defines
        else:
            other |= defines
            other_reads |= reads
    only = more - other
    assert {"DroidAdapter", "HOST_ADAPTERS_D"} <= only
    assert sorted(other_reads & only) == []


def _copy_sts(tmp_path, hooked=False):
    """A folder with a copy of sts.py: no bytecode cache yet, or (hooked) the
    cache its first hook process leaves, split in parts."""
    folder = tmp_path / "app"
    folder.mkdir()
    if hooked:
        place_hooked_sts(str(folder / "sts.py"))
    else:
        with open(os.path.join(ROOT, "sts.py"), "rb") as src, \
                open(str(folder / "sts.py"), "wb") as dst:
            dst.write(src.read())
    return str(folder)


def _run(folder, code, argv=(), stdin=b"", env=None):
    return subprocess.run([sys.executable, "-I", "-S", "-c",
                           "import sys; sys.path.insert(0, %r)\n" % folder + code, *argv],
                          input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, timeout=60, check=False)


HOOK = "import sts; sys.exit(sts.main())"
PROBE = ("import sts\nprint(sts._SLIM, 'cmd_install' in vars(sts), sts._SOURCE_STAMP is not None)")
HOSTS_PROBE = ("import sts\nprint('HermesAdapter' in vars(sts), 'cmd_install' in vars(sts),"
               " ','.join(sts.ADAPTERS), 'importlib.util' in sys.modules,"
               " 'DroidAdapter' in vars(sts))")
OLDER_HOSTS = "codex,claude,hermes,opencode,pi,omp,gemini,copilot,qwen"
EVERY_HOST = ",".join((OLDER_HOSTS,) + sts._MORE_HOSTS)
LEAN_PROBE = ("import sts\nprint(sts.decide.__doc__ is not None,"
              " bool(sts.decide.__annotations__),"
              " '__future__' in sys.modules)")


def test_a_hook_splits_the_cache_and_later_hooks_load_only_the_hot_part(tmp_path):
    folder = _copy_sts(tmp_path)
    env = dict(os.environ, STS_HOME=str(tmp_path / "home"))
    cache = os.path.join(folder, "__pycache__")
    assert _run(folder, HOOK, ["claude"], json.dumps(dict(PROMPT, prompt="$stop-that-shit review"))
                .encode(), env).returncode == 0
    names = sorted(os.listdir(cache))
    assert [name.split(".", 2)[-1] for name in names] == [
        "cold.pyc", "full.pyc", "hosts.pyc", "hot-lazy.pyc", "hot.pyc", "more.pyc", "pyc"]
    assert os.path.getsize(os.path.join(cache, names[6])) < 8000   # the loader alone
    # The whole module is the very bytecode Python's import wrote before the split.
    with open(os.path.join(cache, names[1]), "rb") as fh:
        whole = marshal.loads(fh.read()[16:])
    assert whole.co_filename == os.path.join(folder, "sts.py")
    assert any(getattr(c, "co_name", "") == "_split_bytecode" for c in whole.co_consts)
    # A Codex or Claude Code hook: not even the other hosts' adapters; any
    # other host's hook: those, still without the cold part; anyone else: all.
    # (and no import of importlib.util on the way: it costs more than the part).
    # The hosts added last (the "more" part) load only in their own hooks.
    for host in ("claude", "codex"):
        assert _run(folder, HOSTS_PROBE, [host]).stdout.split() == [
            b"False", b"False", b"codex,claude", b"False", b"False"]
    for host in ("hermes", "omp", "gemini", "qwen"):
        assert _run(folder, HOSTS_PROBE, [host]).stdout.split() == [
            b"True", b"False", OLDER_HOSTS.encode(), b"False", b"False"]
    for host in sts._MORE_HOSTS:
        assert _run(folder, HOSTS_PROBE, [host]).stdout.split() == [
            b"True", b"False", EVERY_HOST.encode(), b"False", b"True"]
    assert _run(folder, HOSTS_PROBE).stdout.split()[:3] == [b"True", b"True", EVERY_HOST.encode()]
    # A hook process: the hot part only, without what only a reader of the
    # code uses (docstrings and annotations of functions, the __future__
    # import).
    assert _run(folder, PROBE, ["claude"]).stdout.split() == [b"True", b"False", b"True"]
    assert _run(folder, LEAN_PROBE, ["claude"]).stdout.split() == [b"False", b"False", b"False"]
    # Anyone else: the whole module, exactly as Python's import gives it.
    assert _run(folder, PROBE).stdout.split() == [b"False", b"True", b"False"]
    assert _run(folder, LEAN_PROBE).stdout.split() == [b"True", b"True", b"True"]
    assert _run(folder, "from sts import cmd_doctor, find_event; print('ok')").stdout == b"ok\n"
    # The same answers as the whole module gives, including those that need a
    # cold section (a status typed in the prompt).
    for payload in (WRITE, dict(PROMPT, prompt="$stop-that-shit status"),
                    dict(PROMPT, prompt="$stop-that-shit runtime")):
        split = _run(folder, HOOK, ["claude"], json.dumps(payload).encode(), env)
        whole = hook_process("claude", payload, tmp_path / "home")
        assert split.returncode == whole.returncode == 0 and split.stderr == b""
        got, want = json.loads(split.stdout), json.loads(whole.stdout)
        for answer in (got, want):   # event ids differ: one line each
            spec = answer["hookSpecificOutput"]
            for field in ("permissionDecisionReason", "additionalContext"):
                if field in spec:
                    spec[field] = "\n".join(line for line in spec[field].split("\n")
                                            if not line.startswith("Event: "))
        assert got == want
    # The CLI in the import form: its commands are all cold.
    out = _run(folder, HOOK, ["status"], env=env)
    assert out.returncode == 0 and b"Stop That Shit status" in out.stdout


def test_a_process_that_imported_the_whole_module_then_hooks_does_not_split_again(tmp_path):
    """`import sts` first (the whole module), then sys.argv made a hook's and
    main() called bare: it answers, and leaves a split cache as it is."""
    folder = _copy_sts(tmp_path, hooked=True)
    env = dict(os.environ, STS_HOME=str(tmp_path / "home"))
    assert _run(folder, HOOK, ["claude"], json.dumps(dict(PROMPT, prompt="$stop-that-shit review"))
                .encode(), env).returncode == 0
    cache = os.path.join(folder, "__pycache__")
    stamps = {name: os.stat(os.path.join(cache, name)).st_mtime_ns for name in os.listdir(cache)}
    late = _run(folder, "import sts\nsys.argv = ['-c', 'claude']\nprint(sts._SLIM)\nsts.main()",
                stdin=json.dumps(WRITE).encode(), env=env)
    assert late.returncode == 0 and late.stderr == b""
    assert late.stdout.startswith(b"False\n") and b"MODE_FORBIDS_MUTATION" in late.stdout
    assert {name: os.stat(os.path.join(cache, name)).st_mtime_ns
            for name in os.listdir(cache)} == stamps


# Frozen by the import: more than before it (3.12 starts with objects frozen).
GC_PROBE = ("import gc\nbefore = gc.get_freeze_count()\nimport sts\n"
            "print(gc.isenabled(), gc.get_freeze_count() > before,"
            " [n for n in vars(sts) if n.startswith('_loader')])")


def test_the_loader_runs_the_hot_part_with_the_collector_off_and_leaves_it_on(tmp_path):
    """What the import made is frozen in a hook process only; every process
    gets the collector back on, and the loader leaves no name behind."""
    folder = _copy_sts(tmp_path, hooked=True)
    assert _run(folder, GC_PROBE, ["claude"]).stdout.split() == [b"True", b"True", b"[]"]
    assert _run(folder, GC_PROBE).stdout.split() == [b"True", b"False", b"[]"]
    off = "import gc\ngc.disable()\n" + GC_PROBE   # a program that keeps it off: still off
    assert _run(folder, off).stdout.split() == [b"False", b"False", b"[]"]


@pytest.mark.parametrize("damage", ["cut"] + [pytest.param(d, marks=pytest.mark.slow) for d in (
    "missing", "empty", "another header")])   # each compiles the whole file again
def test_a_missing_or_damaged_hot_part_means_the_whole_file_then_a_new_split(tmp_path, damage):
    folder = _copy_sts(tmp_path, hooked=True)
    env = dict(os.environ, STS_HOME=str(tmp_path / "home"))
    cache = os.path.join(folder, "__pycache__")
    hot = os.path.join(cache, "sts.%s.hot.pyc" % sys.implementation.cache_tag)
    data = open(hot, "rb").read()
    if damage == "missing":
        os.unlink(hot)
    else:
        with open(hot, "wb") as fh:
            fh.write({"empty": b"", "cut": data[:100],
                      "another header": data[:8] + b"\0" * 8 + data[16:]}[damage])
    # The whole module from sts.py, the same answer, and the cache split anew.
    assert _run(folder, PROBE, ["claude"]).stdout.split() == [b"False", b"True", b"False"]
    out = _run(folder, HOOK, ["claude"], json.dumps(WRITE).encode(), env)
    assert out.returncode == 0 and out.stderr == b""
    assert _run(folder, PROBE, ["claude"]).stdout.split() == [b"True", b"False", b"True"]


def test_a_cold_part_keeps_its_line_numbers(tmp_path):
    folder = _copy_sts(tmp_path, hooked=True)
    with open(os.path.join(folder, "sts.py"), encoding="utf-8") as fh:
        wanted = [n for n, line in enumerate(fh, 1) if line.startswith("def cmd_install(")]
    # In a hook process, whose parts are compiled without docstrings: every
    # line of the hot and the cold part still names its line in sts.py.
    # (dis.findlinestarts: co_lines is 3.10+)
    lines = lambda code: sorted({n for _, n in dis.findlinestarts(code) if n is not None})
    out = _run(folder, "import sts, dis\nprint(sts._SLIM, sts._cold('cmd_install').__code__.co_firstlineno,"
                       " (lambda c: sorted({n for _, n in dis.findlinestarts(c) if n is not None}))"
                       "(sts.decide.__code__) == %r)" % (lines(sts.decide.__code__),), ["claude"])
    assert out.stdout.split() == [b"True", str(wanted[0]).encode(), b"True"], out.stderr


@pytest.mark.slow
def test_a_damaged_cold_cache_is_rebuilt_from_the_source(tmp_path):
    folder = _copy_sts(tmp_path, hooked=True)
    env = dict(os.environ, STS_HOME=str(tmp_path / "home"))
    cache = os.path.join(folder, "__pycache__")
    cold = os.path.join(cache, "sts.%s.cold.pyc" % sys.implementation.cache_tag)
    for damage in (b"", b"\x00" * 40, open(cold, "rb").read()[:100]):
        with open(cold, "wb") as fh:
            fh.write(damage)
        out = _run(folder, HOOK, ["claude"], json.dumps(dict(PROMPT, prompt="$stop-that-shit "
                                                             "status")).encode(), env)
        assert out.returncode == 0 and b"Stop That Shit status" in out.stdout, out.stderr


@pytest.mark.slow
def test_a_changed_source_is_compiled_whole_then_split_again(tmp_path):
    folder = _copy_sts(tmp_path, hooked=True)
    with open(os.path.join(folder, "sts.py"), "a", encoding="utf-8") as fh:
        fh.write("\n# an edit\n")
    later = os.stat(os.path.join(folder, "sts.py")).st_mtime + 5
    os.utime(os.path.join(folder, "sts.py"), (later, later))
    # Python sees the new mtime and compiles the whole file; the next hook splits it.
    assert _run(folder, PROBE, ["claude"]).stdout.split()[0] == b"False"
    assert _run(folder, HOOK, ["claude"], b"{}").returncode == 0
    assert _run(folder, PROBE, ["claude"]).stdout.split() == [b"True", b"False", b"True"]


def test_no_cache_at_all_only_means_no_split(tmp_path):
    """-B (a host that writes no bytecode): every hook compiles the whole file
    and answers as usual; there is nothing to split and nothing is written."""
    folder = _copy_sts(tmp_path)
    env = dict(os.environ, STS_HOME=str(tmp_path / "home"))
    out = subprocess.run([sys.executable, "-B", "-I", "-S", "-c",
                          "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())"
                          % folder, "claude"], input=json.dumps(WRITE).encode(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
    assert out.returncode == 0 and out.stderr == b""
    assert not os.path.exists(os.path.join(folder, "__pycache__"))


LAZY_PROBE = ("import sts, types\n"
              "def stubs(): return {n for n, v in vars(sts).items()"
              " if isinstance(v, types.FunctionType) and '_unstub' in v.__code__.co_names}\n"
              "before = stubs()\n"
              "seen = sts._sed_script\n"
              "answer = sts.run_hook('claude', sys.stdin.buffer.read())\n"
              "print(len(before) > 50, '_sed_script' in before,"
              " '_sed_script' in stubs(), seen is sts._sed_script)\n"
              "print(answer)")


@pytest.mark.parametrize("damage", ["kept", "missing", pytest.param(
    "cut", marks=pytest.mark.slow)])
def test_the_hot_parts_lazy_functions_load_on_first_call(tmp_path, damage):
    """In a hook process the functions of the rarely run sections are stubs
    until called; a call loads the function's code into the same function
    object (from the lazy file, or compiled from sts.py when that file is
    missing or cut short), and the answer is the whole module's."""
    folder = _copy_sts(tmp_path, hooked=True)
    lazy = os.path.join(folder, "__pycache__", "sts.%s.hot-lazy.pyc" % sys.implementation.cache_tag)
    if damage == "missing":
        os.unlink(lazy)
    elif damage == "cut":
        data = open(lazy, "rb").read()
        with open(lazy, "wb") as fh:
            fh.write(data[:200])
    env = dict(os.environ, STS_HOME=str(tmp_path / "home"))
    assert _run(folder, HOOK, ["claude"], json.dumps(dict(PROMPT, prompt="$stop-that-shit review"))
                .encode(), env).returncode == 0
    # A sed line runs the sed section (and npm the package managers').
    payload = dict(WRITE, tool_name="Bash", tool_input={
        "command": "sed -n 1p a.txt && npm install left-pad"})
    out = _run(folder, LAZY_PROBE, ["claude"], json.dumps(payload).encode(), env)
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    first, answer = out.stdout.decode().split("\n", 1)
    assert first.split() == ["True", "True", "False", "True"]
    whole = hook_process("claude", payload, tmp_path / "home")
    strip = lambda text: "\n".join(line for line in text.split("\n") if "Event: " not in line)
    assert strip(answer.strip()) == strip(whole.stdout.decode().strip())


@pytest.mark.parametrize("damage", ["kept", "missing", pytest.param(
    "cut", marks=pytest.mark.slow)])
def test_another_hosts_hook_loads_the_hosts_part_and_answers_as_the_whole_module(tmp_path,
                                                                                  damage):
    """A Hermes hook in a split cache (its part intact, missing or cut short:
    then compiled from sts.py) denies the same write the whole module denies."""
    folder = _copy_sts(tmp_path, hooked=True)
    cache = os.path.join(folder, "__pycache__")
    hosts = os.path.join(cache, "sts.%s.hosts.pyc" % sys.implementation.cache_tag)
    if damage == "missing":
        os.unlink(hosts)
    elif damage == "cut":
        data = open(hosts, "rb").read()
        with open(hosts, "wb") as fh:
            fh.write(data[:200])
    from test_adapter_hermes import real, write_call
    write = write_call()
    review = real("hermes-deny", "pre_llm_call")
    review["extra"]["user_message"] = "$stop-that-shit review"
    review["session_id"] = write["session_id"]
    answers = []
    for home, run in ((tmp_path / "split", lambda p, env: _run(folder, HOOK, ["hermes"],
                                                               json.dumps(p).encode(), env)),
                      (tmp_path / "whole", lambda p, env: hook_process("hermes", p,
                                                                       env["STS_HOME"]))):
        env = dict(os.environ, STS_HOME=str(home))
        assert run(review, env).returncode == 0
        out = run(write, env)
        assert out.returncode == 0 and out.stderr == b"", out.stderr
        answers.append(re.sub(r"evt_[0-9a-f-]+", "evt_", out.stdout.decode()))
    assert answers[0] == answers[1] and "MODE_FORBIDS_MUTATION" in answers[0]
    assert _run(folder, HOSTS_PROBE, ["hermes"]).stdout.split()[0] == b"True"


# --- one failure rule: a tool event of an armed session is denied, saying why -------

from test_adapter_soundness import ALL, host  # noqa: E402  (the nine hosts' own payloads)


def _deep(depth):
    return json.loads("[" * 10 + "]" * 10) if depth < 10 else "[" * depth + "]" * depth


def _with_deep_argument(payload, depth=100_000):
    """The payload with one extra tool argument nested `depth` levels deep, as a
    host that passes unknown properties on sends it (valid JSON).  A thousand
    levels already stop json before 3.13; 3.13's decoder reads those and gives
    up further down, so the tests nest deeper than any of them reads."""
    text = json.dumps(payload)
    return text.replace('"__deep__"', _deep(depth)).encode()


@pytest.mark.parametrize("name", ALL)
def test_an_argument_nested_too_deep_to_read_is_denied_while_armed(name, store, tmp_path):
    h = host(name, str(tmp_path))
    _, write = h.tool(h.write[0], {h.write[1]: os.path.join(ROOT, "sts.py"), "content": "x",
                                   "extra": "__deep__"}, "call_deep")
    raw = _with_deep_argument(write)
    event = "preToolUse" if name == "copilot" else None
    assert sts.run_hook(name, raw, store, event=event) in ("", "{}")  # unarmed: the host goes on
    h.say(store, "$stop-that-shit review")
    answer = json.loads(sts.run_hook(name, raw, store, event=event))
    assert "could not evaluate" in h.blocked(answer) or "GUARD_SELF_PROTECTION" in h.blocked(answer)


@pytest.mark.parametrize("name", ["codex", "claude", "gemini", "copilot", "qwen"])
def test_deep_nesting_through_a_real_hook_process_is_denied_while_armed(name, sts_home,
                                                                        tmp_path):
    """The issue's case on the command-hook hosts: a real process, exit 0, a deny."""
    h = host(name, str(tmp_path))
    store = sts.Store(str(sts_home))
    h.say(store, "$stop-that-shit review")
    _, write = h.tool(h.write[0], {h.write[1]: "a.txt", "content": "x", "extra": "__deep__"},
                      "call_deep")
    code = "import sys; sys.path.insert(0, %r); import sts; sys.exit(sts.main())" % ROOT
    argv = [sys.executable, "-I", "-S", "-c", code, name] + (["preToolUse"] if name == "copilot"
                                                             else [])
    proc = subprocess.run(argv, input=_with_deep_argument(write),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                          env=dict(os.environ, STS_HOME=str(sts_home)), check=False)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr
    reason = h.blocked(json.loads(proc.stdout))
    assert "nested too deeply" in reason and "$stop-that-shit off" in reason


@pytest.mark.parametrize("raw", [
    b'{"session_id": "s-cli", "hook_event_name": "PreToolUse", "tool_name": "Write", ',
    b'[{"session_id": "s-cli", "hook_event_name": "PreToolUse", "tool_name": "Write"}]',
    json.dumps(json.dumps(WRITE)).encode(),
    json.dumps(WRITE).encode() + b' {"tool_name": "Read"}',
    b"\xef\xbb\xbf" + json.dumps(WRITE).encode(),
    json.dumps(WRITE).encode().replace(b'"x"', b'"\xff"'),
])
def test_input_that_does_not_parse_is_denied_when_its_head_names_an_armed_tool_call(raw, store):
    assert hook("claude", raw, store) is None                    # nothing armed: fail open
    hook("claude", dict(PROMPT, prompt="$stop-that-shit review"), store)
    assert "could not evaluate" in deny_reason(hook("claude", raw, store))


@pytest.mark.parametrize("raw", [b"[]", b'"a bare string"', b"42", b"null"])
def test_input_that_names_nothing_is_denied_while_any_session_is_armed(raw, store):
    """No event and no session to tell: any armed session may be the one."""
    assert hook("claude", raw, store) is None
    hook("claude", dict(PROMPT, prompt="$stop-that-shit review"), store)
    assert "could not evaluate" in deny_reason(hook("claude", raw, store))


def test_unparseable_input_of_another_event_or_session_fails_open(store, capsys):
    hook("claude", dict(PROMPT, prompt="$stop-that-shit review"), store)
    prompt = json.dumps(dict(PROMPT, prompt="hello")).encode()
    assert hook("claude", prompt[:-5], store) is None             # a cut-off prompt
    other = json.dumps(dict(WRITE, session_id="s-other")).encode()
    assert hook("claude", other[:-5], store) is None              # a session not armed
    assert capsys.readouterr().err.count("failed open") == 2


@pytest.mark.parametrize("wired", [None, "preToolUze", "PreToolUse", "pretooluse"])
def test_a_copilot_hook_wired_without_its_event_or_with_a_typo_denies_an_armed_write(
        wired, store):
    calls = kit_calls("copilot-shell-allow")
    prompt = next(stdin for event, stdin in calls if event == "userPromptSubmitted")
    tool = next(stdin for event, stdin in calls if event == "preToolUse")
    write = dict(tool, toolName="create", toolArgs={"path": "notes.txt", "file_text": "x"})
    raw = json.dumps(write).encode()
    assert sts.run_hook("copilot", raw, store, event=wired) == ""          # unarmed
    sts.run_hook("copilot", json.dumps(dict(prompt, prompt="$stop-that-shit review")).encode(),
                 store, event="userPromptSubmitted")
    answer = json.loads(sts.run_hook("copilot", raw, store, event=wired))
    assert answer["permissionDecision"] == "deny"
    assert "could not" in answer["permissionDecisionReason"]
    if wired in (None, "preToolUze"):
        # A result event wired without its name is not a tool about to run.
        after = dict(write, toolResult={"resultType": "success"})
        assert sts.run_hook("copilot", json.dumps(after).encode(), store, event=wired) == ""


@pytest.mark.parametrize("failure", [RecursionError("deep"), MemoryError(),
                                     UnicodeEncodeError("utf-8", "\udc80", 0, 1, "surrogate"),
                                     OSError(5, "I/O error"), sts.LockTimeout("k")])
def test_every_failure_class_denies_an_armed_tool_call_and_passes_a_prompt(failure, store,
                                                                          monkeypatch, capsys):
    hook("claude", dict(PROMPT, prompt="$stop-that-shit review"), store)

    def broken(*args, **kwargs):
        raise failure
    monkeypatch.setattr(sts, "handle_event", broken)
    reason = deny_reason(hook("claude", WRITE, store))
    assert "could not evaluate" in reason and "$stop-that-shit off" in reason
    assert hook("claude", dict(PROMPT, prompt="hello"), store) is None
    err = capsys.readouterr().err
    assert "failed closed: %s" % type(failure).__name__ in err and "failed open" in err
