"""Differential fuzzer for the read verdict of sts.analyze_shell.

Not a pytest module (the name does not start with test_).  Run it as root:

    python3 tests/fuzz_reads.py [--count N] [--seed S] [--jobs 2] [--out DIR] [--dress P]

1. Harvest the real options of every program the analyzer can prove read
   (`PROG --help`, `git SUB -h`), run in the sandbox below.
2. Combine them into candidate lines (values, clusters, abbreviations,
   operands, `--`, wrappers, pipes, redirections), mutate the corpus reads,
   and dress some in the forms zsh reads otherwise ($~x, $=x, >!, =cmd,
   <->, $x[...], noglob, a bare `< f`...) or that move the shell (cd,
   pushd, subshells); keep only the lines analyze_shell calls "read": those
   are claims.
3. Run every claim for real under each shell a host may use (bash, zsh
   without startup files, sh) and look for an effect.  The sandbox is a new
   network, mount and pid namespace (`unshare -n -m -p -f`) with fresh
   tmpfs on /tmp, /var/tmp, /dev/shm and /run/lock, this checkout remounted
   read-only, and the command itself runs as nobody with no capabilities,
   `timeout 3`, stdin from /dev/null, in a scratch git repository with a
   scratch HOME.  Every file under the tmpfs mounts is snapshotted (type,
   size, mtime, mode, content hash) before and after; any difference is a
   candidate false read.  Marker payloads (`touch /tmp/PWN_...`, ./x, ./evil)
   catch options that run a program.  A listener on 127.0.0.1:LISTEN_PORT
   (TCP and UDP, inside the sandbox's network namespace) takes every
   connection: any during a claim's run is a finding too.  NETWORK_FORMS are
   lines near the network, consuming and outliving forms (/dev/tcp, gawk's
   /inet, gh api, a terminal, a background job) aimed at it.

Output: DIR/claims.txt (every line run), DIR/findings.jsonl (line, shell,
changed paths, exit status, stderr head) and DIR/runs.json (runs per shell),
plus a summary on stdout.
"""
import argparse
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import sts  # noqa: E402

NOBODY = 65534
SETPRIV = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
           "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
TMPFS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
TEMPLATE = "/tmp/tpl"          # root-only 0700: nobody cannot reach or change it
SCRATCH = "/tmp/s"
REPO = SCRATCH + "/repo"
HOME = SCRATCH + "/home"
ENV = {"HOME": HOME, "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
       "GIT_CONFIG_NOSYSTEM": "1", "PAGER": "cat", "GIT_PAGER": "cat", "LC_ALL": "C.UTF-8",
       "TERM": "dumb", "USER": "nobody", "x": "-o1",
       # what zsh runs for a redirection with no command: a marker, not a pager
       "NULLCMD": REPO + "/x", "READNULLCMD": REPO + "/x"}
MARK = "/tmp/PWN"
# Every claim runs under each of these that is installed: no startup files.
SHELLS = (("bash", ["bash", "--norc", "--noprofile", "-c"]), ("zsh", ["zsh", "-f", "-c"]),
          ("sh", ["sh", "-c"]))

# Files of the scratch repository.  A few are named like options; x and
# evil leave a marker when run, and so do the git hooks and dotfiles.
_MARKER_SCRIPT = "#!/bin/sh\ntouch %s_$(basename \"$0\")\ncat \"$@\" 2>/dev/null\n" % MARK
FILES = {
    "a.txt": "foo\nbar\n", "b.txt": "bar\nbaz\n", "a": "x\n", "b": "y\n", "F": "f\n",
    "README.md": "# r\n", "src/app.py": "def main():\n    pass\n", "src/a.js": "let a = 1\n",
    "data.json": '{"a": [1, 2]}\n', "data.csv": "a,b\n1,2\n", "list.txt": "a.txt\nb.txt\n",
    "data.yaml": "a: [1, 2]\n",
    "-o": "opt\n", "--output": "opt\n", "-n": "opt\n", "-rf": "opt\n", "-delete": "opt\n",
    "--help": "opt\n", "-e": "opt\n",
    "Makefile": "all:\n\ttouch %s_make\nversion:\n\ttouch %s_make\n" % (MARK, MARK),
    "package.json": '{"name": "p", "version": "1.0.0", "scripts": {"test": "touch %s_npm", '
                    '"preinstall": "touch %s_npm", "prepare": "touch %s_npm"}, '
                    '"dependencies": {}}\n' % (MARK, MARK, MARK),
    "Cargo.toml": '[package]\nname = "p"\nversion = "0.1.0"\nedition = "2021"\nbuild = "b.rs"\n',
    "b.rs": 'fn main() { std::fs::write("%s_cargo", "").unwrap(); }\n' % MARK,
    "src/main.rs": "fn main() {}\n",
    "pyproject.toml": '[project]\nname = "p"\nversion = "0"\n',
    "setup.py": "open('%s_setup', 'w')\n" % MARK,
    "go.mod": "module p\n\ngo 1.21\n", "main.go": "package main\nfunc main() {}\n",
    "x": _MARKER_SCRIPT, "evil": _MARKER_SCRIPT, "magic": "0 string foo FOO\n",
    # zsh's <-> matches 1; $f[PATH=pbin] would make pbin/ls and pbin/git run.
    "1": "1\n", "pbin/ls": _MARKER_SCRIPT, "pbin/git": _MARKER_SCRIPT,
    "pbin/cat": _MARKER_SCRIPT, "src/src/a.txt": "nested\n",
}
EXECUTABLE = ("x", "evil", "pbin/ls", "pbin/git", "pbin/cat")
HOOKS = ("pre-commit", "post-checkout", "post-commit", "post-merge", "pre-push",
         "post-rewrite", "pre-auto-gc", "reference-transaction", "post-index-change",
         "fsmonitor-watchman", "pre-rebase")
DOTFILES = (".bashrc", ".bash_profile", ".profile", ".bash_logout", ".zshrc")


# ------------------------------------------------------------ sandbox ----

def _drop(cmd, cwd, timeout=5, stdin=subprocess.DEVNULL):
    """Run cmd as nobody (inside the sandbox only)."""
    try:
        return subprocess.run(SETPRIV + cmd, cwd=cwd, env=ENV, stdin=stdin,
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def _kill_strays():
    """Kill what the last command left running: every process of nobody.
    We are in our own pid namespace, so these are only ours."""
    for _ in range(3):
        found = False
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                if os.stat("/proc/" + pid).st_uid == NOBODY:
                    os.kill(int(pid), signal.SIGKILL)
                    found = True
            except (OSError, ProcessLookupError):
                pass
        if not found:
            return
        time.sleep(0.02)


def _build_template():
    os.makedirs(TEMPLATE, mode=0o755)
    base = TEMPLATE + "/s"
    for d in (base, base + "/repo", base + "/home"):
        os.mkdir(d)
        os.chown(d, NOBODY, NOBODY)
    repo = base + "/repo"
    old = 1577836800   # 2020-01-01: no racily clean index entries
    for name, text in FILES.items():
        path = os.path.join(repo, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)
        if name in EXECUTABLE:
            os.chmod(path, 0o755)
    for name in DOTFILES:
        with open(os.path.join(base, "home", name), "w") as fh:
            fh.write("touch %s_dotfile%s\n" % (MARK, name))
    subprocess.run(["chown", "-R", "%d:%d" % (NOBODY, NOBODY), base], check=True)
    real_env = dict(ENV, HOME=base + "/home")

    def git(*args):
        subprocess.run(SETPRIV + ["git"] + list(args), cwd=repo, env=real_env,
                       capture_output=True, check=True)
    git("init", "-q", "-b", "main")
    git("config", "user.name", "t")
    git("config", "user.email", "t@t")
    # Each run gets a fresh copy (new inodes and ctimes): compare only what
    # a copy keeps, so that `git status` has no stat cache to refresh.
    git("config", "core.checkStat", "minimal")
    git("config", "core.trustctime", "false")
    git("add", ".")
    git("commit", "-qm", "one")
    git("tag", "v1")
    git("branch", "feature")
    with open(repo + "/a.txt", "a") as fh:
        fh.write("more\n")
    git("commit", "-qam", "two")
    with open(repo + "/a.txt", "a") as fh:
        fh.write("stashed\n")
    git("stash", "-q")
    with open(repo + "/b.txt", "a") as fh:
        fh.write("dirty\n")          # an unstaged change for diff/status
    with open(repo + "/untracked.txt", "w") as fh:
        fh.write("u\n")
    subprocess.run(["tar", "cf", repo + "/a.tar", "-C", repo, "a.txt"], check=True)
    subprocess.run(["gzip", "-k", repo + "/a.txt"], check=False)
    for packer in (["bzip2", "-k"], ["xz", "-k"], ["zstd", "-q", "-k"]):
        if shutil.which(packer[0]):
            subprocess.run(packer + [repo + "/a.txt"], check=False)
    with zipfile.ZipFile(repo + "/a.zip", "w") as archive:
        archive.writestr("a.txt", FILES["a.txt"])
    subprocess.run(["chown", "-R", "%d:%d" % (NOBODY, NOBODY), base], check=True)
    hooks = repo + "/.git/hooks"
    for name in HOOKS:
        with open(os.path.join(hooks, name), "w") as fh:
            fh.write(_MARKER_SCRIPT)
        os.chmod(os.path.join(hooks, name), 0o755)
        os.chown(os.path.join(hooks, name), NOBODY, NOBODY)
    for dirpath, dirs, files in os.walk(base):
        for name in dirs + files:
            os.utime(os.path.join(dirpath, name), (old, old), follow_symlinks=False)
    # Refresh the index stat cache once, so that `git status` finds nothing to rewrite.
    subprocess.run(SETPRIV + ["git", "status"], cwd=repo, env=real_env, capture_output=True)
    os.chmod(TEMPLATE, 0o700)


def _snapshot():
    snap = {}
    for top in TMPFS:
        for dirpath, dirs, files in os.walk(top):
            if dirpath == "/tmp":
                dirs[:] = [d for d in dirs if d != "tpl"]
            for name in dirs + files:
                path = os.path.join(dirpath, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                digest = ""
                if stat.S_ISREG(st.st_mode) and st.st_size < (1 << 22):
                    try:
                        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                        with os.fdopen(fd, "rb") as fh:
                            digest = hashlib.sha1(fh.read()).hexdigest()
                    except OSError:
                        digest = "?"
                elif stat.S_ISLNK(st.st_mode):
                    digest = os.readlink(path)
                mtime = st.st_mtime_ns if not stat.S_ISDIR(st.st_mode) else 0
                snap[path] = (stat.S_IFMT(st.st_mode), st.st_size, mtime, st.st_mode, digest)
            if dirpath in TMPFS:
                pass
    return snap


def _reset():
    for top in TMPFS:
        for name in os.listdir(top):
            if top == "/tmp" and name == "tpl":
                continue
            path = os.path.join(top, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
    subprocess.run(["cp", "-a", TEMPLATE + "/s", SCRATCH], check=True)
    os.chmod("/tmp", 0o1777)


LISTEN_PORT = 4747


class _Listener:
    """Notes every TCP connection and UDP datagram to 127.0.0.1:LISTEN_PORT."""

    def __init__(self):
        import socket
        import threading
        self.got = []
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("127.0.0.1", LISTEN_PORT))
        self.tcp.listen(16)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", LISTEN_PORT))
        threading.Thread(target=self._accept, daemon=True).start()
        threading.Thread(target=self._datagram, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                return
            self.got.append("tcp")
            conn.close()

    def _datagram(self):
        while True:
            try:
                self.udp.recvfrom(4096)
            except OSError:
                return
            self.got.append("udp")

    def take(self):
        time.sleep(0.05)    # a connection made as the claim exited is noted by now
        got, self.got = self.got, []
        return got


def runner(infile, outfile, verbose=False):
    """Inside the namespaces, as root: mount, build, run every claim as nobody
    under each installed shell; DIR/runs-N.json counts the runs per shell."""
    with open(infile, encoding="utf-8") as fh:
        lines = [json.loads(x) for x in fh]
    shells = [(name, argv) for name, argv in SHELLS if shutil.which(argv[0])]
    runs = {name: 0 for name, _ in shells}
    out = open(outfile, "a", encoding="utf-8")
    runs_out = open(infile + ".runs.json", "w")   # opened before /tmp is replaced
    for top in TMPFS:
        os.makedirs(top, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "none", top], check=True)
    # The checkout this script lives in is made read-only too (nobody
    # could not write it anyway; this also covers a checkout nobody owns).
    subprocess.run(["mount", "--bind", ROOT, ROOT], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", ROOT], check=True)
    _build_template()
    _reset()
    subprocess.run(["ip", "link", "set", "lo", "up"], stderr=subprocess.DEVNULL)
    listener = _Listener()
    # The fresh copy's own snapshot is the baseline; ignore directory mtimes
    # (they are in the listing) and keep everything else.
    for n, line in enumerate(lines):
        for shell, argv in shells:
            _reset()
            before = _snapshot()
            t0 = time.time()
            try:
                res = subprocess.run(SETPRIV + ["timeout", "-s", "KILL", "3"] + argv + [line],
                                     cwd=REPO, env=ENV, stdin=subprocess.DEVNULL,
                                     capture_output=True, timeout=6)
                rc, err = res.returncode, res.stderr[:300].decode("utf-8", "replace")
                if verbose:
                    print("%s$ %s\n[rc %s] %s%s" % (
                        shell, line, rc, res.stdout[:600].decode("utf-8", "replace"), err),
                        file=sys.stderr)
            except subprocess.TimeoutExpired:
                rc, err = "timeout", ""
            runs[shell] += 1
            _kill_strays()
            after = _snapshot()
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            changed += ["connection to 127.0.0.1:%d (%s)" % (LISTEN_PORT, kind)
                        for kind in sorted(set(listener.take()))]
            if changed:
                detail = {k: [before.get(k), after.get(k)] for k in changed[:8]}
                out.write(json.dumps({"line": line, "shell": shell, "changed": changed[:30],
                                      "rc": rc, "err": err, "detail": detail,
                                      "secs": round(time.time() - t0, 2)}) + "\n")
                out.flush()
    out.close()
    json.dump(runs, runs_out)
    runs_out.close()


def _sandboxed(args):
    return ["unshare", "-n", "-m", "-p", "-f", "--mount-proc", "--propagation", "private",
            sys.executable, os.path.abspath(__file__)] + args


# ---------------------------------------------------------- harvesting ----

_OPT = re.compile(r"(?<![\w./-])(--?[A-Za-z0-9][A-Za-z0-9_-]*)(\[?=|\s+[A-Z<{\[][A-Za-z_<>{}\[\]|.-]*)?")


def _harvest_script(progs, git_subs):
    """A shell script printing PROG<TAB>help-text records, run as nobody."""
    parts = []
    for p in progs:
        parts.append("printf '\\1%s\\2'; timeout 3 %s --help 2>&1 | head -c 60000; "
                     "timeout 3 %s -h 2>&1 | head -c 20000" % (p, p, p))
    for s in git_subs:
        parts.append("printf '\\1git %s\\2'; timeout 3 git %s -h 2>&1 | head -c 60000" % (s, s))
    return "\n".join(parts)


def harvest(progs, git_subs, tmpdir):
    """{program: {option: takes_value}} from the real help texts."""
    script = os.path.join(tmpdir, "harvest.sh")
    with open(script, "w") as fh:
        fh.write(_harvest_script(progs, git_subs))
    os.chmod(script, 0o644)
    os.chmod(tmpdir, 0o755)
    res = subprocess.run(["unshare", "-n"] + SETPRIV + ["bash", script], cwd="/",
                         env=dict(ENV, HOME="/nonexistent"), stdin=subprocess.DEVNULL,
                         capture_output=True, timeout=600)
    table = {}
    for record in res.stdout.decode("utf-8", "replace").split("\1")[1:]:
        name, _, text = record.partition("\2")
        opts = table.setdefault(name, {})
        for m in _OPT.finditer(text):
            opt, arg = m.group(1), m.group(2)
            if len(opt) > 2 and not opt.startswith("--") and name not in ("find",) \
                    and not name.startswith("git "):
                continue        # -abc in prose: a cluster, not an option
            opts[opt] = opts.get(opt, False) or bool(arg)
    return table


# ----------------------------------------------------------- generation ----

VALUES = ["F", "./x", "x", "a.txt", "/tmp/PWN_v", "'touch /tmp/PWN_c'", "./evil", "-", "1",
          "{}", "o1", "~/o1", "HEAD", "main", ".", "*", "a{,.out}", "'$(touch /tmp/PWN_s)'",
          "\"$x\"", "--", "-o", "magic", "/tmp/PWN_w"]
OPERANDS = ["a.txt", "b.txt", ".", "src", "HEAD", "-", "a.tar", "a.txt.gz", "data.json",
            "o1", "F", "*.txt", "x", "a.txt.bz2", "a.txt.xz", "a.txt.zst", "a.zip", "data.yaml"]
WRAPPERS = ["env", "env -i", "env -C src", "command", "nice", "nice -n 5", "timeout 5",
            "timeout -k 1 5", "stdbuf -o0", "time", "xargs", "exec", "builtin", "env --",
            "LC_ALL=C", "TZ=UTC", "NO_COLOR=1"]
JOINS = [" ; ", " | ", " && ", " || ", " & "]
SUFFIXES = ["", " > /dev/null", " 2>&1", " < a.txt", " | head", " 2>/dev/null", " >&2",
            " | cat -n", ""]
SCRIPTS = {
    "sed": ["'s/a/b/w /tmp/PWN_w'", "'e touch /tmp/PWN_e'", "'1e touch /tmp/PWN_e'",
            "-n 'w /tmp/PWN_w'", "'s/a/touch \\/tmp\\/PWN_e/e'", "'R /tmp/PWN_r'",
            "'W /tmp/PWN_w'", "'1{p;w /tmp/PWN_w\n}'", "-s 'w/tmp/PWN_w'", "'y/a/b/;w /tmp/PWN'",
            "'s/x/y/gw /tmp/PWN_w'", "'s/x/y/;e'", "-z 'e'", "'a\\' ", "'1F'", "'v'",
            "'Q'", "'s/x/y/m;w /tmp/PWN'", "'/x/I w /tmp/PWN'"],
    "awk": ["'{print > \"/tmp/PWN_w\"}'", "'BEGIN{system(\"touch /tmp/PWN_e\")}'",
            "'BEGIN{\"touch /tmp/PWN_e\" | getline}'", "'BEGIN{print | \"sh\"}'",
            "'BEGIN { printf \"x\" > \"/tmp/PWN\" }'", "'BEGIN{print >>\"/tmp/PWN\"}'",
            "'{print $1}'", "'BEGIN{getline < \"a.txt\"}'", "'BEGIN{cmd=\"touch /tmp/PWN\"; cmd|getline}'",
            "'@load \"filefuncs\"'", "-f x", "-E x", "-i inplace '{print}'",
            "'BEGIN{fflush(); close(\"x\")}'", "'BEGIN { print |& \"cat\" }'",
            "-v 'x=1' '{print x}'", "'{ print > $1 }'", "'{print}' OFS=, a.txt"],
    "find": ["-fprint /tmp/PWN_w", "-fls /tmp/PWN_w", "-fprintf /tmp/PWN_w x",
             "-fprint0 /tmp/PWN", "-exec touch /tmp/PWN_e \\;", "-execdir ./x \\;",
             "-ok ./x \\;", "-okdir touch /tmp/PWN \\;", "-delete", "-name '*.txt' -delete",
             "-exec cat {} +", "-newer a.txt", "-printf '%p\\n'", "-files0-from list.txt",
             "-D exec", "-O3", "-H", "-L", "-P"],
    "jq": ["-n 'input'", "--rawfile a a.txt .", "-L . 'import \"x\" as x; .'", "'$__loc__'",
           "-n '\"x\" | debug'", "--seq .", "-f magic", "--tab ."],
    "npm": ["ls", "view p", "docs", "bugs p", "repo", "fund p", "help ls", "outdated", "explain p",
            "config get x", "pkg get name", "query :root", "--browser=./x", "--viewer=browser",
            "--logs-dir=/tmp/PWN_l", "--cache=/tmp/PWN_c", "--userconfig=magic", "--prefix=src",
            "--foreground-scripts", "--script-shell=./x", "--json", "-g"],
    "pip": ["list", "show pip", "freeze", "check", "debug", "config list", "cache dir", "hash a.txt",
            "--log=/tmp/PWN_l", "--cache-dir=/tmp/PWN_c", "--python=./x", "--isolated", "-v",
            "--path=/tmp/PWN_p", "--target /tmp/PWN_t", "--report=/tmp/PWN_r"],
    "curl": ["https://e.com", "-o /tmp/PWN_o", "-w '%{output}'", "-K magic", "--config magic",
             "-D /tmp/PWN_d", "--trace /tmp/PWN_t", "--trace-ascii /tmp/PWN_t", "--stderr /tmp/PWN_e",
             "--libcurl /tmp/PWN_l", "-c /tmp/PWN_c", "--etag-save /tmp/PWN_e", "--hsts /tmp/PWN_h",
             "--alt-svc /tmp/PWN_a", "-T a.txt", "-d @a.txt", "-X POST", "-F a=@a.txt"],
    "tar": ["-tf a.tar", "tf a.tar", "-tvf a.tar", "--list --file=a.tar", "-I ./x", "--to-command=./x",
            "--checkpoint-action=exec=./x", "--use-compress-program=./x", "-x", "-O", "--index-file=/tmp/PWN_i"],
    "sort": ["-o /tmp/PWN_o", "--output=/tmp/PWN_o", "--compress-program=./x", "-T /tmp", "-S 1K", "-m"],
    "date": ["-s 2020-01-01", "--set=x", "+%s", "-d @0", "-f a.txt", "-r a.txt", "-I"],
    "openssl": ["dgst -sha256 a.txt", "sha256 -out /tmp/PWN_o a.txt", "dgst -sign magic a.txt",
                "version", "dgst -r a.txt", "-engine ./x"],
    "unzip": ["-l a.zip", "-t a.zip", "-p a.zip", "-Z a.zip", "-d /tmp/PWN_d"],
    "xxd": ["-r a.txt /tmp/PWN_x", "a.txt /tmp/PWN_x", "-i a.txt", "-r -p a.txt"],
    "tee": ["/tmp/PWN_t", "-a", "-p", "--output-error=exit", "/dev/null"],
    "uniq": ["a.txt /tmp/PWN_u", "-c", "-D"],
    "file": ["-C -m magic", "-m magic", "-p", "--preserve-date", "-z", "-Z"],
    "kubectl": ["get pods", "config view", "--kubeconfig=magic", "--profile=cpu", "-s x",
                "--cache-dir=/tmp/PWN_k", "--log-file=/tmp/PWN_l", "--v=9", "--alsologtostderr"],
    "docker": ["ps", "images", "compose config", "-o /tmp/PWN_o", "--config=/tmp/PWN_c",
               "--context=x", "-H unix:///tmp/PWN_s", "-l debug", "inspect x"],
    "cargo": ["tree", "metadata", "--version", "search x", "-Z unstable-options", "--config a=b",
              "--manifest-path Cargo.toml", "read-manifest", "locate-project", "pkgid", "verify-project"],
    "gpg": ["--print-md SHA256 a.txt", "--print-mds a.txt", "--homedir /tmp/PWN_g"],
    "hostname": ["-f", "-s", "-F magic", "x"],
    "gzip": ["-l a.txt.gz", "-t a.txt.gz", "-dc a.txt.gz", "a.txt", "-k a.txt", "a.txt -c",
             "-r .", "-d", "-S .x a.txt"],
    "bzip2": ["-t a.txt.bz2", "-dc a.txt.bz2", "-z", "-d", "a.txt", "-k a.txt"],
    "xz": ["-l a.txt.xz", "-t a.txt.xz", "-dc a.txt.xz", "-z", "-d", "a.txt", "--files=list.txt"],
    "zstd": ["-l a.txt.zst", "-t a.txt.zst", "-dc a.txt.zst", "-o /tmp/PWN_z", "--rm", "-z",
             "-d", "a.txt"],
    "journalctl": ["--vacuum-time=1d", "--rotate", "--cursor-file=/tmp/PWN_c", "--flush",
                   "-u x", "-n 5", "-b -1", "--setup-keys", "--update-catalog"],
    "systemctl": ["status", "show", "list-units", "restart x", "-H x", "cat x", "is-active x",
                  "edit x", "help x"],
    "ip": ["addr", "route", "link", "-b list.txt", "-batch list.txt", "link set lo down", "a s",
           "netns exec x ./x", "monitor file a.txt"],
    "ss": ["-K", "-D /tmp/PWN_d", "-tlnp", "-F magic", "-a"],
    "sysctl": ["-w kernel.x=1", "kernel.hostname", "-p magic", "-a", "kernel.x=1"],
    "dmesg": ["-c", "-C", "-n 1", "-T", "-F a.txt"],
    "yq": ["'.a' data.yaml", "-i '.a' data.yaml", "-s '.a' data.yaml",
           "--in-place '.a' data.yaml", "-y . data.json"],
    "iconv": ["-o /tmp/PWN_o a.txt", "-l", "-f utf8 -t ascii a.txt"],
    "getent": ["passwd", "-s x passwd", "hosts localhost", "group"],
    "fuser": ["-k a.txt", "a.txt"],
    "mount": ["-l", "-a", "-t proc"],
    "zipinfo": ["a.zip", "-M a.zip", "-1 a.zip"],
    "git": [],
}
# Programs whose handler is more than "inert": they get most of the runs.
_WEIGHT_INERT = 1
_WEIGHT_OTHER = 6
GIT_VALUES = ["--output=/tmp/PWN_w", "--output /tmp/PWN_w", "-O./x", "--ext-diff",
              "--open-files-in-pager=./x", "-c core.pager=./x", "--exec-path=.",
              "-c diff.external=./x", "--textconv", "--contents=a.txt", "-C .",
              "--git-dir=.git", "--work-tree=src", "--no-optional-locks", "-c alias.x=!./x"]


def analysis_targets():
    """Program names the analyzer may prove read, and git subcommands it reads."""
    progs = sorted(p for p in set(sts._PROGRAMS) | set(sts._READ_MODES)
                   if shutil.which(p) and sts._PROGRAMS.get(p) is not sts._pager
                   and re.match(r"^[a-z0-9.+_-]+$", p))
    git_help = subprocess.run(["git", "help", "-a"], capture_output=True, text=True).stdout
    subs = sorted(set(re.findall(r"^   ([a-z][a-z0-9-]+)", git_help, re.M)))
    reads = []
    for s in subs:
        for probe in ("git %s" % s, "git %s --help-me-not" % s, "git %s HEAD" % s,
                      "git %s -l" % s, "git %s list" % s, "git %s show" % s):
            if sts.analyze_shell(probe).mutability == "read":
                reads.append(s)
                break
    return progs, reads


def _abbrev(opt, rng):
    if opt.startswith("--") and len(opt) > 4:
        return opt[:rng.randint(3, len(opt) - 1)]
    return opt


def _one_option(opts, rng):
    """One option word (or two), with a value in some spelling."""
    opt, takes = rng.choice(opts)
    val = rng.choice(VALUES)
    form = rng.randrange(10)
    if opt.startswith("--"):
        if form < 3:
            return opt
        if form < 5:
            return "%s=%s" % (opt, val)
        if form < 7:
            return "%s %s" % (opt, val)
        if form < 8:
            return _abbrev(opt, rng) + ("=" + val if takes else "")
        return _abbrev(opt, rng) + " " + val
    if len(opt) == 2:
        if form < 3:
            return opt
        if form < 6:
            return "%s %s" % (opt, val)
        if form < 8:
            return opt + val.strip("'\"")
        others = [o for o, _ in opts if len(o) == 2 and o[1] != "-" and not o.startswith("--")]
        cluster = "-" + "".join(o[1] for o in rng.sample(others, min(len(others), rng.randint(1, 3))))
        return cluster + opt[1] + rng.choice(["", val.strip("'\""), " " + val])
    return opt + rng.choice(["", " " + val])


def _simple(prog, opts, rng):
    words = [prog]
    if prog in SCRIPTS and SCRIPTS[prog] and rng.random() < 0.5:
        words.append(rng.choice(SCRIPTS[prog]))
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.6 and opts:
            words.append(_one_option(opts, rng))
        elif r < 0.75 and prog in SCRIPTS and SCRIPTS[prog]:
            words.append(rng.choice(SCRIPTS[prog]))
        elif r < 0.8:
            words.append("--")
        else:
            words.append(rng.choice(OPERANDS))
    if rng.random() < 0.5:
        words.append(rng.choice(OPERANDS))
    if rng.random() < 0.2 and opts:
        words.append(_one_option(opts, rng))   # an option after the operands
    return " ".join(words)


# Forms zsh reads otherwise, and lines that move the shell first.  L is the
# line, P its program; most of these must never be claimed read, and the
# ones that are (noglob, cd src && ...) run under every shell.
ZSH_TEMPLATES = [
    "for x in 'a.txt(e:touch /tmp/PWN_q:)'; do @P@ $~x; done",
    "for x in '*(e:touch /tmp/PWN_q:)'; do @P@ ${~x}; done",
    "for x in 'touch /tmp/PWN_q'; do $=x; done", "for x in '@P@'; do ${=x}; done",
    "@L@ >! /tmp/PWN_z", "@L@ >>! /tmp/PWN_z", "@L@ &>! /tmp/PWN_z", "@L@ >&! /tmp/PWN_z",
    "@L@ 2>!/tmp/PWN_z", "echo $f[PATH=pbin]; @L@", "echo \"$f[PATH=pbin]\"; @L@",
    "echo $#f[PATH=pbin]; @L@", "@P@ <-> /dev/null", "@P@ a.txt <-> /dev/null", "noglob @L@",
    "nocorrect @L@", "=@P@ a.txt", "=touch /tmp/PWN_q", "{ @L@ } always { touch /tmp/PWN_a }",
    "< a.txt", "<a.txt | @L@", "@L@ }", "() { @L@ }", "() @L@", "@P@ ${(e)x}", "@P@ $+x",
    "@P@ =git", "@P@ ~[x]", "emulate sh -c '@L@'", "(cd src; @L@)", "cd src && @L@",
    "cd src; @L@", "cd src || @L@", "pushd src >/dev/null; @L@; popd", "cd src 2>/dev/null && @L@",
    "cd src &>/dev/null; @L@", "@L@ &>/dev/null", "@L@ &>>/dev/null", "builtin cd src && @L@",
    "eval 'cd src' && @L@", "@L@ | cd src", "true | cd src; @L@",
    "for d in src; do (cd $d && @L@); done", "@P@ $'a.txt'", "@P@ a.txt $'\\x2do' /tmp/PWN_o",
    "r", "fc -l", "dirs src; popd; @L@", "chdir src && @L@", "time @L@",
    "read x <<EOF\n$f[PATH=pbin]\nEOF\n@L@", "@L@ <<EOF\n$#f[PATH=pbin]\nEOF\nls",
    # Paths of the writing process (issue 28): a descriptor left on a file
    # opened for reading, then opened again by name for writing.
    "@L@ 1<a.txt >/dev/stdout", "exec 1<a.txt; @L@ >/dev/stdout", "@L@ 3<a.txt >/dev/fd/3",
    "exec 3<a.txt; @L@ >&3 >/dev/stdout", "{ @L@ >/dev/stdout; } 1<a.txt",
    "@L@ | tee /dev/stdout 1<a.txt", "@L@ >/proc/self/cwd/PWN_p", "exec 3<src; @L@ >/dev/fd/3/PWN_p",
    "cd /proc/self/cwd && @L@", "@P@ /proc/self/cwd/a.txt", "@P@ /dev/fd/0 <a.txt",
    # Text typed into a running shell (Codex write_stdin): the line as a shell reads it.
    "printf '%s\\n' @Q@ | bash", "bash <<'EOF'\n@L@\nEOF", "bash -s <<<@Q@",
]


DRESSED = set()     # the lines _zsh_form made, to count the claims among them


def _zsh_form(line, rng):
    prog = line.split()[0] if line.split() else "ls"
    template = rng.choice(ZSH_TEMPLATES)
    dressed = template.replace("@P@", prog).replace("@Q@", shlex.quote(line)).replace("@L@", line)
    DRESSED.add(dressed)
    return dressed


def _wrap(line, rng):
    r = rng.random()
    if r < 0.15:
        w = rng.choice(WRAPPERS)
        if w == "xargs":
            return "echo a.txt | xargs " + line
        return w + " " + line
    if r < 0.2:
        return "bash -c %s" % shlex.quote(line)
    if r < 0.23:
        return "sh -c %s _ a.txt" % shlex.quote(line)
    return line


# Lines near the forms that reach the network, consume or outlive ({p}: the
# listener's port); the analyzer proves some, and those must connect nowhere.
NETWORK_FORMS = [
    "cat a.txt 1</dev/tcp/127.0.0.1/{p}", "cat a.txt 3</dev/tcp/127.0.0.1/{p} >&3",
    "cat a.txt 2</dev/udp/127.0.0.1/{p} >&2", "cat < /dev/tcp/127.0.0.1/{p}",
    "cat a.txt /dev/tcp/127.0.0.1/{p}", "cat <<< /dev/tcp/127.0.0.1/{p}",
    "cat a.txt 3>&1 >&3", "cat a.txt 3>&2 1>&3 2>/dev/null", "cat < ./dev/tcp/127.0.0.1/{p}",
    "cat a.txt >&3", "cat <&3", "cat < /dev/fd/3",
    "awk 1 /inet/tcp/0/127.0.0.1/{p}", "gawk 1 a.txt /inet4/tcp/0/127.0.0.1/{p}",
    "awk 'BEGIN{{ARGV[1]=\"/in\" \"et/tcp/0/127.0.0.1/{p}\"; ARGC=2}} 1'",
    "gawk '{{ARGV[ARGC++]=\"/inet/tcp/0/127.0.0.1/{p}\"}} 1' a.txt",
    "awk '{{print $1}}' a.txt inet/tcp/0/127.0.0.1/{p}", "awk -v x={p} '{{print x}}' a.txt",
    "gh api -X GET -F q=@a.txt http://127.0.0.1:{p}/c", "gh api http://127.0.0.1:{p}/c",
    "echo x > /dev/tty", "cat a.txt & wait",
    "sleep 1 &", "LC_ALL=C cat a.txt", "GREP=./x zgrep a a.txt.gz",
]


def generate(table, git_subs, rng, count, dress=0.2):
    out = []
    progs = [p for p in table if not p.startswith("git ") and p != "git"]
    weights = [_WEIGHT_INERT if sts._PROGRAMS.get(p) is sts._inert else _WEIGHT_OTHER
               for p in progs]
    corpus = []
    try:
        from test_analysis import ROWS
        corpus = [r[3] for r in ROWS if r[1] == "read" and "@ps" not in r[2]
                  and "@win" not in r[2]]
    except Exception:  # pragma: no cover - the corpus is optional here
        pass
    for _ in range(count):
        r = rng.random()
        if r < 0.35 and git_subs:
            sub = rng.choice(git_subs)
            opts = list(table.get("git " + sub, {}).items()) + [(o, False) for o in GIT_VALUES]
            head = "git"
            if rng.random() < 0.15:
                head += " " + rng.choice(GIT_VALUES + ["--no-pager", "-P", "-C src",
                                                       "--literal-pathspecs"])
            line = _simple(head + " " + sub, opts, rng)
        elif r < 0.75:
            prog = rng.choices(progs, weights)[0]
            line = _simple(prog, list(table[prog].items()), rng)
        elif corpus and r < 0.92:
            base = shlex.split(rng.choice(corpus), posix=False) if rng.random() < 1 else []
            if not base:
                continue
            prog = base[0]
            key = prog if prog != "git" else "git " + (base[1] if len(base) > 1 else "")
            opts = list(table.get(key, table.get(prog, {})).items())
            if not opts:
                opts = [(v, False) for v in VALUES]
            pos = rng.randint(1, len(base))
            if rng.random() < 0.5 or len(base) < 2:
                base.insert(pos, _one_option(opts, rng))
            else:
                base[min(pos, len(base) - 1)] = _one_option(opts, rng)
            line = " ".join(base)
        else:
            line = rng.choice(NETWORK_FORMS).format(p=LISTEN_PORT)
        line = _wrap(line, rng) + rng.choice(SUFFIXES)
        if rng.random() < dress:
            line = _zsh_form(line, rng)
        if rng.random() < 0.1:
            other = _simple(rng.choice(progs), list(table[rng.choice(progs)].items()), rng)
            line = line + rng.choice(JOINS) + other
        out.append(line)
    return out


def is_claim(line):
    try:
        return sts.analyze_shell(line).mutability == "read"
    except Exception as exc:   # the analyzer must never raise; say so if it does
        print("analyze_shell raised on %r: %r" % (line, exc), file=sys.stderr)
        return False


# ---------------------------------------------------------------- main ----

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=6000, help="claims to run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="/tmp/fuzz_reads")
    ap.add_argument("--lines", help="run these lines (one a line) instead of generating")
    ap.add_argument("--dress", type=float, default=0.2,
                    help="share of lines dressed in a zsh form or a shell move")
    ap.add_argument("--verbose", action="store_true", help="print what each line printed")
    ap.add_argument("--runner", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.runner:
        runner(*args.runner, verbose=args.verbose)
        return 0
    if os.geteuid() != 0:
        print("run as root: the sandbox needs namespaces; commands still run as nobody")
        return 2
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    if args.lines:
        with open(args.lines, encoding="utf-8") as fh:
            claims = [x.rstrip("\n").replace("⏎", "\n") for x in fh if x.strip()]
        generated = len(claims)
    else:
        progs, git_subs = analysis_targets()
        table = harvest(progs, git_subs, args.out)
        with open(os.path.join(args.out, "options.json"), "w") as fh:
            json.dump(table, fh, indent=0, sort_keys=True)
        print("programs %d, git read subcommands %d, options %d" % (
            len(progs), len(git_subs), sum(len(v) for v in table.values())))
        claims, seen, generated = [], set(), 0
        per_head = {}
        while len(claims) < args.count and generated < args.count * 200:
            for line in generate(table, git_subs, rng, 5000, args.dress):
                generated += 1
                if line in seen:
                    continue
                seen.add(line)
                head = " ".join(line.split()[:2])
                if per_head.get(head, 0) >= max(40, args.count // 60):
                    continue     # spread the runs over the programs
                if is_claim(line):
                    per_head[head] = per_head.get(head, 0) + 1
                    claims.append(line)
    claims = claims[:args.count]
    print("generated %d lines, %d claimed read" % (generated, len(claims)))
    with open(os.path.join(args.out, "claims.txt"), "w", encoding="utf-8") as fh:
        fh.write("".join(c.replace("\n", "⏎") + "\n" for c in claims))
    findings = os.path.join(args.out, "findings.jsonl")
    open(findings, "w").close()
    procs = []
    for k in range(args.jobs):
        shard = os.path.join(args.out, "shard%d.jsonl" % k)
        with open(shard, "w", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(c) + "\n" for c in claims[k::args.jobs]))
        os.chmod(args.out, 0o755)
        procs.append(subprocess.Popen(_sandboxed(["--runner", shard, findings]
                                                 + (["--verbose"] if args.verbose else []))))
    for p in procs:
        p.wait()
    with open(findings, encoding="utf-8") as fh:
        found = [json.loads(x) for x in fh]
    runs = {}
    for k in range(args.jobs):
        try:
            with open(os.path.join(args.out, "shard%d.jsonl.runs.json" % k)) as fh:
                for shell, count in json.load(fh).items():
                    runs[shell] = runs.get(shell, 0) + count
        except (OSError, ValueError):
            pass
    with open(os.path.join(args.out, "runs.json"), "w") as fh:
        json.dump(runs, fh)
    zsh_forms = sum(1 for c in claims if c in DRESSED)
    print("ran %d claims (%s; %d dressed in a zsh or cd form), %d runs with an effect (%s)" % (
        len(claims), ", ".join("%s %d" % kv for kv in sorted(runs.items())), zsh_forms,
        len(found), findings))
    by_shell = {}
    for f in found:
        by_shell[f.get("shell", "?")] = by_shell.get(f.get("shell", "?"), 0) + 1
    if by_shell:
        print("effects per shell: %s" % ", ".join("%s %d" % kv for kv in sorted(by_shell.items())))
    for effect, lines in sorted(summarize(found).items(), key=lambda kv: -len(kv[1])):
        print("%5d  %s" % (len(lines), effect))
        for line in sorted(lines, key=len)[:3]:
            print("         %s" % line.replace("\n", "⏎"))
    return 1 if found else 0


# Effects that are not the command's doing as such: git refreshes its index
# stat cache on status/diff (and so runs the post-index-change hook), npm
# keeps a debug log in ~/.npm/_logs.  Reported apart; see the final report.
_NOISE = (re.compile(r"^/tmp/s/repo/\.git/index$"), re.compile(r"^/tmp/PWN_post-index-change$"),
          re.compile(r"^/tmp/s/home(/\.npm(/_logs(/.*-debug-0\.log)?)?)?$"),
          re.compile(r"^/tmp/s/home/\.npm/_update-notifier-last-checked$"))


def summarize(found):
    """{effect class: [lines]}; the class is the changed paths with digits folded."""
    groups = {}
    for f in found:
        real = [c for c in f["changed"] if not any(rx.match(c) for rx in _NOISE)]
        key = "noise: " + " ".join(f["changed"]) if not real else " ".join(real)
        key = re.sub(r"[0-9]+", "N", key)
        groups.setdefault(key[:160], []).append(f["line"])
    return groups


if __name__ == "__main__":
    sys.exit(main())
