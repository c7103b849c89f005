"""The verdict-diff guard: which shell lines does a change of the analyzer judge otherwise?

    python3 tests/verdict_diff.py OLD_CHECKOUT [NEW_CHECKOUT] [--show N] [--seed N]

Both checkouts judge the same lines, each in a process of its own: every
corpus line of both, the fuzzer's generated lines, and for every program the
analyzer knows, lines made of its own options (taken from either checkout's
tables and handlers): each option alone, with a value attached and detached,
abbreviated, in clusters, with `--` and operands before and after, behind a
wrapper, in a pipeline.  It prints every line whose verdict (label, reason,
write targets and patterns, unknown target, hash and dependency intent,
agent start) differs, grouped by the shape of the change, and exits 1 when
any does.  A refactor of the analyzer should print none; a change made on
purpose prints exactly the lines it meant, and the corpus gets a row for it.

Make the old checkout with `git worktree add /tmp/before <commit>`.
"""

import argparse
import collections
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))


# ------------------------------------------------------ inside one checkout ----

def _load(root):
    sys.path.insert(0, os.path.join(root, "tests"))
    sys.path.insert(0, root)
    import sts  # noqa: E402  (the checkout's own)
    return sts


def _option_words(text, acc):
    """Options named in a string: '-abc' clusters, '--name:', '--a=-b' and
    plain option words."""
    for word in text.split():
        if not word.startswith("-") or len(word) < 2:
            continue
        word = word.split("=", 1)[0] if word.startswith("--") else word
        word = word.rstrip(":?")
        if word.startswith("--"):
            acc.add(word)
        elif len(word) > 2 and word[1:].isalnum():
            acc.update("-" + ch for ch in word[1:])
            acc.add(word)
        else:
            acc.add(word)


def _strings(obj, depth, seen, acc, sts):
    """Every string a handler can reach: its constants, closures and the
    private tables it names, to `depth` steps."""
    if depth < 0 or id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, str):
        acc.add(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _strings(k, depth, seen, acc, sts)
            _strings(v, depth - 1, seen, acc, sts)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for x in obj:
            _strings(x, depth if isinstance(x, str) else depth - 1, seen, acc, sts)
    elif isinstance(obj, types.FunctionType):
        _code(obj.__code__, depth, seen, acc, obj.__globals__, sts)
        for cell in obj.__closure__ or ():
            try:
                _strings(cell.cell_contents, depth - 1, seen, acc, sts)
            except ValueError:
                pass
    elif isinstance(obj, types.CodeType):
        _code(obj, depth, seen, acc, {}, sts)
    elif getattr(type(obj), "__module__", "") == "sts":
        # An option table object (whatever its class is called in this checkout).
        call = getattr(type(obj), "__call__", None)
        if isinstance(call, types.FunctionType):
            _strings(call, depth - 1, seen, acc, sts)
        for name in getattr(type(obj), "__slots__", ()) or vars(obj):
            _strings(getattr(obj, name, None), depth - 1, seen, acc, sts)


def _code(code, depth, seen, acc, glb, sts):
    for c in code.co_consts:
        _strings(c, depth, seen, acc, sts)
    for n in code.co_names:
        g = glb.get(n)
        if g is None or isinstance(g, types.ModuleType) or n == "_PROGRAMS" \
                or not n.startswith("_"):
            continue
        if isinstance(g, (types.FunctionType, dict, tuple, frozenset, list)) \
                or getattr(type(g), "__module__", "") == "sts":
            _strings(g, depth - 1, seen, acc, sts)


def _pool(obj, sts):
    acc = set()
    _strings(obj, 3, set(), acc, sts)
    out = set()
    for s in acc:
        if not s or len(s) > 400 or "\n" in s or "%" in s:
            continue
        if " " in s.strip():
            if all(w.startswith("-") for w in s.split()):
                _option_words(s, out)
            continue
        if s.startswith("-"):
            _option_words(s, out)
        elif re.match(r"^[a-z][a-z0-9_.:-]*=?$", s):
            if len(s) > 1:
                out.add(s if not s.endswith("=") else "--" + s)   # verbs and long names
                if not s.endswith("="):
                    out.add("--" + s)
            else:
                out.add("-" + s)
        elif re.match(r"^[A-Za-z0-9]{2,30}$", s):
            out.update("-" + ch for ch in s[:12])    # maybe a string of short letters
    return sorted(out)


def options(root):
    """program -> the option words (and verbs) its handler can know."""
    sts = _load(root)
    progs = sorted(set(sts._PROGRAMS) | set(getattr(sts, "_WRITERS", {}))
                   | set(getattr(sts, "_READ_MODES", {})))
    out = {}
    for p in progs:
        h = sts._PROGRAMS.get(p)
        pool = set(_pool(h, sts)) if h is not None else set()
        modes = getattr(sts, "_READ_MODES", {}).get(p)
        if modes is not None:
            pool |= set(_pool(modes, sts))
        out[p] = sorted(pool)
    out["git"] = sorted(set(out.get("git", ())) | set(_pool(sts._git, sts)))
    return out


def record(root, lines_file, out_file):
    sts = _load(root)
    with open(lines_file, encoding="utf-8") as fh:
        items = [json.loads(x) for x in fh]
    with open(out_file, "w", encoding="utf-8") as fh:
        for command, shell in items:
            try:
                r = sts.analyze_shell(command, shell)
                rec = {"m": r.mutability, "r": r.reason, "h": r.hash_intent,
                       "d": r.dependency_intent, "t": r.write_targets, "p": r.write_patterns,
                       "u": r.unknown_target, "a": r.starts_agent, "rs": r.resumes_session}
            except Exception as exc:   # a crash is a verdict too
                rec = {"x": repr(exc)[:80]}
            fh.write(json.dumps(rec, sort_keys=True) + "\n")


def corpus(root):
    _load(root)
    from test_analysis import ROWS, _shell_of
    return [(c, _shell_of(t)) for _, _, t, c in ROWS]


# ------------------------------------------------------------- the lines ----

VALUES = ["F", "./x", "x", "a.txt", "/tmp/PWN_v", "'touch /tmp/PWN_c'", "-", "1", "0",
          "$x", "$(ls)", "a*", "~/o", "/etc/passwd", "out.txt", "=", "2", "-1", "{}", "tcp"]
OPERANDS = ["a.txt", "b.txt", ".", "src", "HEAD", "-", "a.tar", "a.txt.gz", "data.json",
            "package.json", "requirements.txt", "claude", "-p", "123", "%1", "/dev/null",
            "main", "status", "show", "list"]
WRAPPERS = ["env", "env -i", "env -C src", "command", "nice", "timeout 5", "exec",
            "builtin", "POSIXLY_CORRECT=1", "sudo", "xargs", "time"]
MUTANTS = ["-o", "-i", "--output=o1", "-e", "-f", "-x", "-c", "-n", "-d", "-r", "-w",
           "-exec", "-delete", "-t", "-C", "--", "-O", "-T", "-s", "-p", "-0", "-z"]


def _shorts(pool):
    return [p for p in pool if len(p) == 2 and p[0] == "-" and p[1] != "-"]


def _one(pool, rng):
    opt = rng.choice(pool)
    val = rng.choice(VALUES)
    form = rng.randrange(9)
    if opt.startswith("--"):
        return [opt, opt + "=" + val, opt + " " + val, opt[:max(3, len(opt) - 2)],
                opt[:max(3, len(opt) // 2)], opt, opt + " " + val, opt + "=", opt][form]
    if opt.startswith("-") and len(opt) == 2:
        if form < 3:
            return opt
        if form < 5:
            return opt + " " + val
        if form < 6:
            return opt + val.strip("'\"")
        shorts = _shorts(pool)
        cluster = "-" + "".join(p[1] for p in rng.sample(shorts, min(len(shorts),
                                                                      rng.randint(1, 3))))
        return cluster + opt[1] + rng.choice(["", " " + val])
    return opt + rng.choice(["", "", " " + val])


def _each_alone(prog, pool):
    """Every option alone, with a value attached and detached, before and after an operand."""
    out = []
    for opt in pool:
        out += ["%s %s" % (prog, opt), "%s %s a.txt" % (prog, opt),
                "%s a.txt %s" % (prog, opt), "%s %s out.txt a.txt" % (prog, opt),
                "%s -- %s" % (prog, opt), "%s %s -- a.txt" % (prog, opt)]
        if opt.startswith("--"):
            out += ["%s %s=out.txt a.txt" % (prog, opt), "%s %s a.txt" % (prog, opt[:-1])]
        elif len(opt) == 2:
            out += ["%s %sout.txt a.txt" % (prog, opt), "%s %s1 a.txt" % (prog, opt)]
    return out


def _random_lines(prog, pool, rng, n):
    out = []
    for _ in range(n):
        words = [prog]
        for _ in range(rng.randint(0, 5)):
            r = rng.random()
            if r < 0.65 and pool:
                words.append(_one(pool, rng))
            elif r < 0.72:
                words.append("--")
            else:
                words.append(rng.choice(OPERANDS))
        if rng.random() < 0.4:
            words.append(rng.choice(OPERANDS))
        line = " ".join(words)
        r = rng.random()
        if r < 0.06:
            line = rng.choice(WRAPPERS) + " " + line
        elif r < 0.09:
            line += " > out.txt"
        elif r < 0.12:
            line = "git log | " + line
        out.append(line)
    return out


def generate(pools, rows, seed, per_program):
    rng = random.Random(seed)
    lines = []
    for prog in sorted(pools):
        pool = pools[prog]
        lines += _each_alone(prog, pool)
        lines += _random_lines(prog, pool, rng, per_program)
    gitpool = pools.get("git", [])
    for sub in sorted(s for s in gitpool if not s.startswith("-")):
        for _ in range(20):
            words = ["git", sub] + [_one(gitpool, rng) for _ in range(rng.randint(0, 4))]
            lines.append(" ".join(words + ([rng.choice(OPERANDS)] if rng.random() < .4 else [])))
    try:
        sys.path.insert(0, HERE)
        import fuzz_reads as fz
        table = {p: {o: False for o in pool} for p, pool in pools.items()}
        fz.DRESSED.clear()
        lines += fz.generate(table, sorted(s for s in gitpool if not s.startswith("-"))[:80],
                             random.Random(seed + 1), 12000)
    except (ImportError, AttributeError, TypeError):
        pass
    plain = [c for c, shell in rows if shell == "bash"]
    for _ in range(6000):
        words = rng.choice(plain).split(" ")
        words.insert(rng.randint(1, len(words)), rng.choice(VALUES + MUTANTS))
        lines.append(" ".join(words))
    seen, items = set(), []
    for item in list(rows) + [(line, "bash") for line in lines]:
        if item not in seen:
            seen.add(item)
            items.append(item)
    return items


# ----------------------------------------------------------------- diff ----

def _run(root, mode, *args):
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), "--inside", mode,
                             root] + list(args), stdout=subprocess.PIPE, text=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new", nargs="?", default=os.path.dirname(HERE))
    ap.add_argument("--show", type=int, default=5, help="lines shown for each kind of change")
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--per-program", type=int, default=200)
    a = ap.parse_args(argv)
    roots = [os.path.abspath(a.old), os.path.abspath(a.new)]
    procs = [_run(r, "options") for r in roots] + [_run(r, "corpus") for r in roots]
    outs = [json.loads(p.communicate()[0]) for p in procs]
    pools = collections.defaultdict(set)
    for found in outs[:2]:
        for prog, pool in found.items():
            pools[prog].update(pool)
    rows = list(dict.fromkeys(tuple(x) for x in outs[2] + outs[3]))
    items = generate({p: sorted(v) for p, v in pools.items()}, rows, a.seed, a.per_program)
    with tempfile.TemporaryDirectory() as tmp:
        lines_file = os.path.join(tmp, "lines.jsonl")
        with open(lines_file, "w", encoding="utf-8") as fh:
            for item in items:
                fh.write(json.dumps(item) + "\n")
        outs = [os.path.join(tmp, "old.jsonl"), os.path.join(tmp, "new.jsonl")]
        procs = [_run(r, "record", lines_file, o) for r, o in zip(roots, outs)]
        for p in procs:
            p.communicate()
            if p.returncode:
                print("a checkout failed to judge the lines")
                return 2
        with open(outs[0], encoding="utf-8") as fa, open(outs[1], encoding="utf-8") as fb:
            old = [json.loads(x) for x in fa]
            new = [json.loads(x) for x in fb]
    kinds = collections.defaultdict(list)
    for (command, shell), x, y in zip(items, old, new):
        if x != y:
            fields = tuple(k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k))
            kinds[(x.get("m"), y.get("m"), fields, command.split()[0] if command.split()
                   else "")].append((command, shell, x, y))
    changed = sum(len(v) for v in kinds.values())
    print("%d lines (%d programs); %d verdicts differ" % (len(items), len(pools), changed))
    for (was, now, fields, prog), hits in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        print("\n%d  %s: %s -> %s (%s)" % (len(hits), prog, was, now, ", ".join(fields)))
        for command, shell, x, y in hits[:a.show]:
            print("   %s%s" % (repr(command)[:150], "" if shell == "bash" else " [%s]" % shell))
            for k in fields:
                print("      %s: %r -> %r" % (k, x.get(k), y.get(k)))
    return 1 if changed else 0


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--inside":
        mode, root = sys.argv[2], sys.argv[3]
        if mode == "options":
            print(json.dumps(options(root)))
        elif mode == "corpus":
            print(json.dumps(corpus(root)))
        else:
            record(root, sys.argv[4], sys.argv[5])
        sys.exit(0)
    sys.exit(main())
