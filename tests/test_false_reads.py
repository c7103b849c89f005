"""False reads found by attacking the proven reads, each shown for real.

Every case here was once proven read.  Each test first asks the analyzer,
then runs the command (or the program behind it) in a scratch folder and
shows the effect that makes refusing it right: a file written, a program
run, the terminal changed.  The real half is skipped when its program is
missing; the analyzer half always runs.
"""
import http.server
import json
import os
import shutil
import socket
import subprocess
import threading

import pytest

import sts


def _verdict(line):
    return sts.analyze_shell(line).mutability


def _run(argv, cwd, env=None, timeout=60):
    return subprocess.run(argv, cwd=str(cwd), env=dict(os.environ, **(env or {})),
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)


# ---- POSIXLY_CORRECT: options end at the first operand -------------------------
# Set in the user's environment or before the command, it makes a word that
# looks like an option after an operand an operand itself.

def test_uniq_writes_a_second_operand_that_looks_like_an_option(tmp_path):
    for line in ("uniq a.txt -c", "POSIXLY_CORRECT=1 uniq a.txt -c",
                 "env POSIXLY_CORRECT=1 uniq a.txt -c"):
        assert _verdict(line) == "write", line
    assert _verdict("uniq -c a.txt") == "read"
    (tmp_path / "a.txt").write_text("a\na\nb\n")
    _run(["uniq", "a.txt", "-c"], tmp_path, {"POSIXLY_CORRECT": "1"})
    assert (tmp_path / "-c").read_text() == "a\nb\n"      # -c was the output file


def test_gzip_compresses_a_file_named_like_an_option_after_stdin(tmp_path):
    assert _verdict("gzip - -c") != "read"
    assert _verdict("gzip -c -") == "read"
    if not shutil.which("gzip"):
        pytest.skip("gzip not installed")
    (tmp_path / "-c").write_text("secret\n")
    _run(["gzip", "-", "-c"], tmp_path, {"POSIXLY_CORRECT": "1"})
    assert not (tmp_path / "-c").exists() and (tmp_path / "-c.gz").exists()


# ---- programs that first obey a project file -------------------------------------

@pytest.mark.parametrize("line", ["cargo --version", "cargo -V", "rustc --version",
                                  "rustup --version", "cargo --help", "cargo search x",
                                  "sudo cargo --version", "go version", "go list ./...",
                                  "yarn --version", "yarn list", "pnpm --version",
                                  "mvn --version", "mvn -v", "pytest --version",
                                  "pytest -V", "sbt --version", "bazel --version",
                                  "gradle -v", "gradle --version", "pdm --version",
                                  "npm view react", "npm whoami"])
def test_a_project_file_may_pick_what_runs_so_no_form_is_a_read(line):
    assert _verdict(line) != "read"
    culprit = sts.shell_culprit(line, "bash", "MUTABILITY_UNPROVEN")
    assert "project" in culprit, culprit


@pytest.mark.parametrize("name", sorted(sts._PROJECT_PICKS))
def test_no_version_or_help_form_of_a_program_a_project_file_picks_is_a_read(name):
    words = {"--version", "--help", "-h", "-v", "-V", "version", "help", "-version"}
    words |= set(sts._VERSION_WORDS.get(name, ()))
    for word in sorted(words - set(sts._PROJECT_SPARES.get(name, ()))):
        for line in ("%s %s" % (name, word), "sudo %s %s" % (name, word),
                     "env %s %s" % (name, word), "/usr/bin/%s %s" % (name, word)):
            assert _verdict(line) != "read", line


@pytest.mark.parametrize("line", ["npm -v", "npm --version", "java -version", "node --version",
                                  "make -v", "gcc -v", "python3 --version", "mix -v"])
def test_version_forms_of_programs_that_read_no_project_file_stay_read(line):
    assert _verdict(line) == "read", line


def test_gotoolchain_local_makes_go_reads_reads_again():
    for line in ("GOTOOLCHAIN=local go version", "GOTOOLCHAIN=local go list ./..."):
        assert _verdict(line) == "read", line
    for line in ("GOTOOLCHAIN=auto go version", "env GOTOOLCHAIN=local go version",
                 "GOTOOLCHAIN=local cargo --version"):
        assert _verdict(line) != "read", line
    culprit = sts.shell_culprit("go list ./...", "bash", "MUTABILITY_UNPROVEN")
    assert "GOTOOLCHAIN=local go" in culprit, culprit


def test_rust_toolchain_file_runs_a_folder_of_the_project(tmp_path):
    """rustup's proxies run the binaries of `path` in rust-toolchain.toml."""
    if not (shutil.which("cargo") and shutil.which("rustup")):
        pytest.skip("rustup not installed")
    tools = tmp_path / "tc" / "bin"
    tools.mkdir(parents=True)
    (tmp_path / "tc" / "lib").mkdir()
    for name in ("cargo", "rustc"):
        (tools / name).write_text("#!/bin/sh\ntouch \"%s/ran_$(basename $0)\"\necho 9.9.9\n"
                                  % tmp_path)
        (tools / name).chmod(0o755)
    (tmp_path / "rust-toolchain.toml").write_text(
        '[toolchain]\npath = "%s"\n' % (tmp_path / "tc"))
    for name in ("cargo", "rustc"):
        out = _run([name, "--version"], tmp_path)
        assert out.stdout.strip() == b"9.9.9", out
        assert (tmp_path / ("ran_" + name)).exists()


def test_maven_starts_java_with_the_projects_jvm_options(tmp_path):
    if not shutil.which("mvn"):
        pytest.skip("mvn not installed")
    (tmp_path / ".mvn").mkdir()
    log = tmp_path / "jvm.log"
    (tmp_path / ".mvn" / "jvm.config").write_text("-Xlog:os:file=%s\n" % log)
    _run(["mvn", "--version"], tmp_path, timeout=120)
    assert log.exists()


def test_uv_version_with_a_value_rewrites_the_project():
    assert _verdict("uv version") == "read"
    for line in ("uv version 1.2.3", "uv version --bump patch", "uv version 2.0 --dry-run"):
        assert _verdict(line) != "read", line


# ---- zsh feeds a pipeline stage the pipe, then its own here-document --------------

@pytest.mark.parametrize("line", [
    "echo 'open(\"pwned\", \"w\")' | python3 -I - <<'EOF'\nprint(1)\nEOF\n",
    "echo 'open(\"pwned\", \"w\")' | python3 -I - <<<'print(1)'",
    "echo 'touch pwned' | sh <<'EOF'\nls >/dev/null\nEOF\n"])
def test_zsh_joins_a_pipe_and_a_here_document(tmp_path, line):
    assert _verdict(line) != "read"
    if not shutil.which("zsh"):
        pytest.skip("zsh not installed")
    _run(["bash", "--norc", "--noprofile", "-c", line], tmp_path)
    assert not (tmp_path / "pwned").exists()       # bash: the here-document alone
    _run(["zsh", "-f", "-c", line], tmp_path)
    assert (tmp_path / "pwned").exists()           # zsh: the pipe, then the rest


def test_a_here_document_without_a_pipe_into_it_is_still_proven():
    for line in ("python3 -I - <<'EOF'\nprint(1)\nEOF\n", "python3 -I - <<<'print(1)' | cat",
                 "echo x | ( python3 -I - <<'EOF'\nprint(1)\nEOF\n)"):
        assert _verdict(line) == "read", line


# ---- sockets: a local listener notes every connection -----------------------------

SHELLS = {"bash": ["bash", "--norc", "--noprofile", "-c"], "zsh": ["zsh", "-f", "-c"],
          "dash": ["dash", "-c"]}


class _Listener:
    """A TCP and a UDP socket on 127.0.0.1, one port, that note every
    connection or datagram they get until closed."""

    def __init__(self):
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.tcp.listen(8)
        self.got = []
        self.threads = [threading.Thread(target=self._accept, daemon=True),
                        threading.Thread(target=self._datagram, daemon=True)]
        for thread in self.threads:
            thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                return
            conn.settimeout(2)
            try:
                self.got.append(("tcp", conn.recv(4096)))
            except OSError:
                self.got.append(("tcp", b""))
            conn.close()

    def _datagram(self):
        while True:
            try:
                self.got.append(("udp", self.udp.recvfrom(4096)[0]))
            except OSError:
                return

    def close(self):
        for sock in (self.tcp, self.udp):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        for thread in self.threads:
            thread.join(5)


@pytest.fixture
def listener():
    server = _Listener()
    yield server
    server.close()


def _scratch(tmp_path):
    (tmp_path / ".env").write_text("SECRET=hunter2\n")
    (tmp_path / "a").write_text("a\n")
    return tmp_path


def _in_shell(shell, line, cwd, timeout=10):
    if not shutil.which(SHELLS[shell][0]):
        pytest.skip("%s not installed" % shell)
    return subprocess.run(SHELLS[shell] + [line], cwd=str(cwd), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=timeout)


# bash opens /dev/tcp and /dev/udp for any redirection, both ways.
SOCKET_LINES = ["cat .env 1</dev/tcp/127.0.0.1/{port}", "cat .env 2</dev/udp/127.0.0.1/{port} >&2",
                "cat .env 3</dev/tcp/127.0.0.1/{port} >&3",
                "{{ cat .env; }} 0<>/dev/tcp/127.0.0.1/{port} >&0",
                "cat < /dev/tcp/127.0.0.1/{port}", "cat .env >/dev/tcp/127.0.0.1/{port}",
                "cat .env >>/dev/udp/127.0.0.1/{port}", "cat .env &>/dev/tcp/127.0.0.1/{port}",
                "cat .env 1<\"/dev/tcp/127.0.0.1/${{P:-{port}}}\""]
# ...and the forms near them that stay proven: no shell connects.
SOCKET_LOOKALIKES = ["cat .env /dev/tcp/127.0.0.1/{port}", "cat <<< /dev/tcp/127.0.0.1/{port}",
                     "cat .env 3>&1 >&3", "cat .env 3>&2 1>&3 2>/dev/null",
                     "cat < ./dev/tcp/127.0.0.1/{port}", "cat .env 2>&- <&0",
                     "ls >/dev/null 2>&1 </dev/null"]


@pytest.mark.parametrize("line", SOCKET_LINES)
def test_a_redirection_naming_a_socket_is_network_use(tmp_path, listener, line):
    line = line.format(port=listener.port)
    assert sts.analyze_shell(line).reason == "network_data_unproven", line
    _in_shell("bash", line, _scratch(tmp_path))
    for _ in range(50):   # the accept thread records it a moment later
        if listener.got:
            break
        threading.Event().wait(0.05)
    assert listener.got, line


@pytest.mark.parametrize("shell", sorted(SHELLS))
@pytest.mark.parametrize("line", SOCKET_LOOKALIKES)
def test_the_proven_forms_near_a_socket_connect_nowhere(tmp_path, listener, shell, line):
    line = line.format(port=listener.port)
    assert _verdict(line) == "read", line
    _in_shell(shell, line, _scratch(tmp_path))
    assert listener.got == [], (shell, line)


@pytest.mark.parametrize("line", ["cat .env >&3", "cat .env 1>&4", "cat .env >&0",
                                  "cat <&3", "cat <&9", "cat < /dev/fd/3", "cat < /proc/self/fd/3",
                                  "cat < /proc/1/fd/5", "cat < /dev/fd/$n", "cat a 3>out >&3",
                                  "cat a 3>&1 1>out >&3 ", "cat a 2>&1 &>out >&2"])
def test_a_descriptor_not_known_to_be_one_of_the_three_is_not_proven(line):
    assert _verdict(line) != "read", line


def test_gh_api_sends_a_field_file_under_get(tmp_path, listener):
    line = "gh api -X GET -F q=@.env http://127.0.0.1:%d/collect" % listener.port
    assert sts.analyze_shell(line).reason == "network_data_unproven"
    if not shutil.which("gh"):
        pytest.skip("gh not installed")
    _run(["gh", "api", "-X", "GET", "-F", "q=@.env",
          "http://127.0.0.1:%d/collect" % listener.port], _scratch(tmp_path),
         {"GH_TOKEN": "x", "GH_CONFIG_DIR": str(tmp_path / "gh")}, timeout=30)
    assert any(b"hunter2" in data for _, data in listener.got), listener.got


# ---- awk: gawk's /inet names, and the program naming its next input ---------------

# (Reading from a UDP name sends nothing, so the runs use TCP; the corpus holds udp rows.)
AWK_NETWORK = [
    "gawk 1 /inet/tcp/0/127.0.0.1/{port}", "awk 1 a /inet4/tcp/0/127.0.0.1/{port}",
    "gawk 'BEGIN{{ARGV[1] = \"/in\" \"et/tcp/0/127.0.0.1/{port}\"; ARGC = 2}} {{print}}'",
    "gawk '{{ARGV[ARGC++] = \"/in\" \"et/tcp/0/127.0.0.1/{port}\"}} 1' .env",
    "gawk '{{n = split(\"a /in\" \"et/tcp/0/127.0.0.1/{port}\", ARGV); ARGC = n + 1}} 1' a",
    "gawk 'BEGIN{{ARGV[1] = \"/in\" \"et/tcp/0/127.0.0.1/{port}\"; SYMTAB[\"ARG\" \"C\"] = 2}} 1'"]


@pytest.mark.parametrize("line", AWK_NETWORK)
def test_awk_reaching_a_connection_is_not_proven(tmp_path, listener, line):
    line = line.format(port=listener.port)
    assert _verdict(line) != "read", line
    if not shutil.which("gawk"):
        pytest.skip("gawk not installed")
    # gawk itself, under the name awk too: run as gawk so the check is real
    _in_shell("bash", line.replace("awk", "gawk", 1) if line.startswith("awk") else line,
              _scratch(tmp_path), timeout=5)
    for _ in range(50):
        if listener.got:
            break
        threading.Event().wait(0.05)
    assert listener.got, line


AWK_LOOKALIKES = ["awk '{{print $1}}' a inet/tcp/0/127.0.0.1/{port}",
                  "awk 'BEGIN{{print \"inet/tcp/0/127.0.0.1/{port}\"}}'",
                  "awk -v ARGS=1 1 a", "awk -v x={port} '{{print x}}' a"]


@pytest.mark.parametrize("shell", sorted(SHELLS))
@pytest.mark.parametrize("line", AWK_LOOKALIKES)
def test_awk_reads_near_them_connect_nowhere(tmp_path, listener, shell, line):
    line = line.format(port=listener.port)
    assert _verdict(line) == "read", line
    if not shutil.which("gawk"):
        pytest.skip("gawk not installed")
    _in_shell(shell, "g" + line, _scratch(tmp_path))
    assert listener.got == [], (shell, line)


# ---- programs whose option parser is not getopt ------------------------------------
# Each line writes for real; its getopt reading (a value attached inside the
# cluster, or a letter cluster) saw only reads.

OWN_PARSER_WRITES = [
    ("xxd -ps in out", "out"), ("xxd -r -ps dump.hex target", "target"),
    ("xxd -rps dump.xxd target", "target"),   # -r alone: the rest of the word is ignored ("xxd --revert -p dump.hex target", "target"),
    ("xxd -pu in out", "out"), ("xxd -ps -c 16 in out", "out"),
    ("tree -Lo 1 target", "target"), ("tree -aLo 2 target", "target"),
    ("tree -oL target 1", "target"), ("tree -L 1 -Io x target", "target"),
]


@pytest.mark.parametrize("line,written", OWN_PARSER_WRITES)
def test_a_program_with_its_own_parser_is_read_its_way(tmp_path, line, written):
    result = sts.analyze_shell(line)
    assert result.mutability == "write" and written in result.write_targets, (line, result)
    program = line.split()[0]
    if not shutil.which(program):
        pytest.skip("%s not installed" % program)
    (tmp_path / "in").write_text("hi\n")
    (tmp_path / "dump.hex").write_text("6869\n")
    (tmp_path / "dump.xxd").write_text("00000000: 6869 0a  hi.\n")
    (tmp_path / "target").write_text("keep\n")
    _in_shell("bash", line, tmp_path)
    assert (tmp_path / written).exists() and (tmp_path / written).read_text() != "keep\n", line


@pytest.mark.parametrize("line", ["xxd -ps in", "xxd -g1 -l 64 in", "xxd -c16 -u in",
                                  "xxd -s 1 in", "tree -L 2 -a", "tree -aL 1", "tree -I x -L 1",
                                  "tree --charset=ascii -L 1"])
def test_their_reads_stay_proven_and_write_nothing(tmp_path, line):
    assert _verdict(line) == "read", line
    program = line.split()[0]
    if not shutil.which(program):
        pytest.skip("%s not installed" % program)
    (tmp_path / "in").write_text("hi\n")
    (tmp_path / "x").mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    for shell in sorted(SHELLS):
        if shutil.which(SHELLS[shell][0]):
            _in_shell(shell, line, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "in").read_text() == "hi\n"


@pytest.mark.parametrize("line", ["xxd -cols 4 in", "xxd -seek 1 in", "xxd -Z in", "tree -L1",
                                  # getopt (busybox's xxd) reads these otherwise
                                  "xxd -r1 in", "xxd --runs in", "xxd -a1 in",
                                  "fuser -nk tcp 8080", "fuser -vnk tcp 80", "fuser -n tcp -k 80"])
def test_forms_their_parsers_read_otherwise_are_not_proven(line):
    assert _verdict(line) != "read", line


def test_every_table_names_a_parser_the_scanner_knows():
    tables = [v for v in vars(sts).values() if isinstance(v, sts._Opts)]
    assert tables and {t.parser for t in tables} <= {"getopt", "word", "next", "git", "go"}
    assert {t.parser for t in tables} == {"getopt", "word", "next", "git", "go"}


# ---- network reads that obey the project's configuration ---------------------------

def _npm_project(tmp_path, npmrc):
    project = tmp_path / "p"
    project.mkdir()
    (project / "package.json").write_text('{"name": "p", "version": "1.0.0"}')
    (project / ".npmrc").write_text(npmrc)
    return project


def _npm(args, project, tmp_path, env=None):
    if not shutil.which("npm"):
        pytest.skip("npm not installed")
    return _run(["npm"] + args, project, dict({"HOME": str(tmp_path / "home"),
                                               "npm_config_cache": str(tmp_path / "cache")},
                                              **(env or {})), timeout=120)


def test_npm_whoami_sends_a_variable_the_project_names_to_its_registry(tmp_path, listener):
    line = "npm whoami"
    assert _verdict(line) != "read"
    registry = "http://127.0.0.1:%d/" % listener.port
    project = _npm_project(tmp_path, "registry=%s\n//127.0.0.1:%d/:_authToken=${SECRET}\n"
                           % (registry, listener.port))
    _npm(["whoami"], project, tmp_path, {"SECRET": "hunter2-token"})
    assert any(b"hunter2-token" in data for _, data in listener.got), listener.got


@pytest.mark.parametrize("verb", [["ls"], ["pkg", "get", "name"], ["config", "get", "x"]])
def test_npm_writes_its_log_where_the_projects_npmrc_says(tmp_path, verb):
    assert _verdict("npm " + " ".join(verb)) != "read"
    logs = tmp_path / "elsewhere"
    project = _npm_project(tmp_path, "logs-dir=%s\n" % logs)
    _npm(verb, project, tmp_path)
    assert logs.is_dir() and list(logs.iterdir()), verb


def test_npm_version_reads_no_project_file(tmp_path):
    assert _verdict("npm --version") == "read" and _verdict("npm -v") == "read"
    logs = tmp_path / "elsewhere"
    project = _npm_project(tmp_path, "logs-dir=%s\n" % logs)
    out = _npm(["--version"], project, tmp_path)
    assert out.stdout.strip() and not logs.exists()


def test_git_remote_show_connects_with_the_repositorys_ssh_command(tmp_path):
    assert _verdict("git remote show origin") != "read"
    assert _verdict("git remote show -n origin") == "read"
    if not shutil.which("git"):
        pytest.skip("git not installed")
    marker = tmp_path / "ran"
    _run(["git", "init", "-q"], tmp_path)
    _run(["git", "remote", "add", "origin", "ssh://example.invalid/r.git"], tmp_path)
    _run(["git", "config", "core.sshCommand", "touch %s; false" % marker], tmp_path)
    _run(["git", "remote", "show", "-n", "origin"], tmp_path)
    assert not marker.exists()
    _run(["git", "remote", "show", "origin"], tmp_path)
    assert marker.exists()


# ---- reads that consume or outlive -----------------------------------------------

@pytest.mark.parametrize("line", [
    "sleep {t} &", "sleep {t} >/dev/null 2>&1 &", "(sleep {t} &)", "{{ sleep {t} & }}",
    "sleep {t} & echo started", "true && sleep {t} &", "sleep {t} | cat &"])
def test_a_background_job_outlives_the_shell(tmp_path, line):
    """Each form leaves `sleep` running after the shell has exited (the
    marker is the sleep's unusual length); the test ends it by its pid."""
    marker = "47.%d" % (abs(hash(line)) % 100000)
    line = line.format(t=marker)
    assert _verdict(line) != "read", line
    assert "outlive" in sts.shell_culprit(line, "bash", "MUTABILITY_UNPROVEN")
    # (not _in_shell: its pipes would stay open in the job, and the run wait for it)
    subprocess.run(SHELLS["bash"] + [line], cwd=str(tmp_path), stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20)
    left = []
    for _ in range(100):   # a forked job may not have started sleep yet
        for pid in os.listdir("/proc"):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as fh:
                    if fh.read().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                        left.append(int(pid))
            except OSError:
                continue
        if left:
            break
        threading.Event().wait(0.05)
    for pid in left:
        os.kill(pid, 9)
    assert left, line


def test_output_to_the_terminal_passes_the_captured_output(tmp_path):
    line = "echo escaped > /dev/tty"
    assert _verdict(line) != "read"
    if not shutil.which("script"):
        pytest.skip("script not installed")
    # The shell's own output goes nowhere; the terminal still shows the word.
    out = _run(["script", "-qc", "sh -c '%s' >/dev/null 2>&1" % line, "/dev/null"], tmp_path)
    assert b"escaped" in out.stdout


@pytest.mark.parametrize("line", [
    "cat /proc/kmsg", "dd if=/proc/kmsg count=1", "head < /proc/kmsg", "cat /proc/./kmsg",
    "cat /proc/km?g", "cat /proc/[k]msg", "cd /proc; cat kmsg", "tail -f /proc/kmsg",
    "cat /sys/kernel/tracing/trace_pipe", "cat /sys/kernel/debug/tracing/trace_pipe",
    "cat /dev/watchdog", "cat /dev/watchdog1", "grep x /dev/watchdog", "od -c /dev/ttyS0",
    "cat a > /dev/tty", "cat a >> /dev/tty1", "cat a 2> /dev/console", "cat a >/dev/pts/0",
    "read x </dev/tty", "cat a | tee /dev/tty", "cat /dev/serial/by-id/usb-x"])
def test_reads_that_consume_or_reach_the_terminal_are_not_proven(line):
    assert _verdict(line) != "read", line


@pytest.mark.parametrize("line", ["cat /proc/meminfo", "cat /proc/self/status", "dmesg",
                                  "grep kmsgs a", "ls /dev", "echo x > /dev/null",
                                  "echo x > /dev/stderr", "ls -la >/dev/null 2>&1"])
def test_reads_near_them_stay_proven(line):
    assert _verdict(line) == "read", line


# ---- variables before a command: an allow-list ------------------------------------

def _readme():
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "README.md"), encoding="utf-8") as fh:
        return fh.read()


@pytest.mark.parametrize("name", sorted(sts._SAFE_ENV))
def test_every_allowed_variable_is_proven_and_its_reason_documented(name):
    real = name.replace("*", "ALL")
    value = "" if sts._SAFE_ENV[name] == "empty" else "C"
    assert _verdict("%s=%s ls" % (real, value)) == "read"
    assert _verdict("env %s=%s ls" % (real, value)) == "read"
    table = _readme().split("#### Variables before a command", 1)[1].split("\n\n| Name", 1)[1]
    row = next((r for r in table.split("\n") if "`%s`" % name in r), None)
    assert row and row.count("|") == 4 and len(row.split("|")[3].strip()) > 10, name


def _other_names():
    """Names off the list: every family the denial table explains, names near
    the allowed ones, lower case, proxies, and plain made-up names."""
    names = {p.replace("*", "X") for p, _ in sts._ENV_WHY}
    names |= {"GREP", "GREP_OPTIONS", "LESSKEY", "WGETRC", "CURL_HOME", "http_proxy",
              "ALL_PROXY", "no_proxy", "CI", "DEBUG", "FOO", "foo", "a", "LANGX", "TERMINFO",
              "TZDIR", "LOCPATH", "NLSPATH", "COLUMNS_X", "XLC_ALL", "LC", "GCONV_PATH",
              "TEXTDOMAINDIR", "MANOPT", "RIPGREP_CONFIG", "SHELLOPTS", "EXINIT", "VIMINIT"}
    one_value = {"PAGER", "GIT_PAGER", "MANPAGER"} | set(sts._PICKS_PINNED_BY)
    return sorted(n for n in names - one_value
                  if n not in sts._SAFE_ENV and not n.startswith("LC_"))


@pytest.mark.parametrize("name", _other_names())
def test_any_other_variable_before_a_read_is_not_proven(name):
    for line in ("%s=1 ls" % name, "env %s=1 git status" % name, "TZ=UTC %s= ls" % name):
        assert _verdict(line) != "read", line


@pytest.mark.parametrize("line", ["LC_ALL=../../x ls", "LANG=/tmp/l ls", "LANGUAGE=$L ls",
                                  "TERM=../t ls", "TERM=\"$T\" ls", "LC_CTYPE=`x` ls",
                                  "RIPGREP_CONFIG_PATH=x rg a", "PAGER=less git log",
                                  "GIT_PAGER=$P git log", "MANPAGER=x ls",
                                  "GOTOOLCHAIN=auto go version"])
def test_an_allowed_name_with_a_value_it_does_not_allow_is_not_proven(line):
    assert _verdict(line) != "read", line


def test_a_variable_zgrep_obeys_runs_its_value(tmp_path):
    line = "GREP=./evil zgrep x f.gz"
    assert _verdict(line) != "read"
    assert _verdict("zgrep x f.gz") == "read"
    if not (shutil.which("zgrep") and shutil.which("gzip")):
        pytest.skip("zgrep not installed")
    _run(["sh", "-c", "echo x | gzip > f.gz"], tmp_path)
    (tmp_path / "evil").write_text("#!/bin/sh\ntouch pwned\n")
    (tmp_path / "evil").chmod(0o755)
    _in_shell("bash", line, tmp_path)
    assert (tmp_path / "pwned").exists()


# The proven forms near the network, dressed as the fuzzer dresses lines
# (tests/fuzz_reads.py, NETWORK_FORMS): behind a wrapper, with a suffix.
# Only claims (lines the analyzer proves) run; no shell may connect.
DRESS_WRAPPERS = ["", "env ", "command ", "nice ", "LC_ALL=C ", "timeout 5 "]
DRESS_SUFFIXES = ["", " 2>&1", " | cat", " </dev/null", "; true", " >/dev/null 2>&1"]


def _dressed():
    lines = []
    for k, form in enumerate(SOCKET_LOOKALIKES + AWK_LOOKALIKES):
        for j, wrapper in enumerate(DRESS_WRAPPERS):
            lines.append(wrapper + form + DRESS_SUFFIXES[(k + j) % len(DRESS_SUFFIXES)])
    return lines


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_dressed_forms_near_the_network_connect_nowhere(tmp_path, listener, shell):
    if not shutil.which(SHELLS[shell][0]):
        pytest.skip("%s not installed" % shell)
    claims = [line.format(port=listener.port) for line in _dressed()]
    claims = [line for line in claims if _verdict(line) == "read"]
    assert len(claims) > len(_dressed()) // 2, claims     # most stay proven
    scratch = _scratch(tmp_path)
    for line in claims:
        _in_shell(shell, line.replace("awk", "gawk", 1) if shutil.which("gawk") else line,
                  scratch)
        assert listener.got == [], (shell, line)


# ---- tar's TAPE may name an archive on another machine ----------------------------

def test_tar_runs_a_remote_shell_for_a_tape_on_another_machine(tmp_path):
    assert _verdict("TAPE=localhost:/x tar -t") != "read"
    assert _verdict("tar -t") == "read"
    if not (shutil.which("tar") and shutil.which("strace")):
        pytest.skip("tar or strace not installed")
    trace = tmp_path / "trace"
    _run(["strace", "-f", "-e", "trace=execve", "-o", str(trace), "tar", "-t"], tmp_path,
         {"TAPE": "localhost:/x"})
    started = [line for line in trace.read_text().splitlines() if "execve(" in line]
    assert any("rmt" in line for line in started), started   # rsh localhost .../rmt


# ---- a message bus address may name a program -----------------------------------

@pytest.mark.parametrize("line,bare", [
    ("DBUS_SYSTEM_BUS_ADDRESS=unixexec:path=./x systemctl status", "systemctl status"),
    ("DBUS_SESSION_BUS_ADDRESS=unixexec:path=./x systemctl --user status",
     "systemctl --user status"),
    ("env DBUS_SYSTEM_BUS_ADDRESS=unixexec:path=./x hostnamectl", "hostnamectl"),
    ("DBUS_STARTER_ADDRESS=x timedatectl", "timedatectl")])
def test_a_bus_address_before_a_systemd_tool_is_refused(line, bare):
    assert _verdict(line) != "read"
    assert _verdict(bare) == "read"


def test_sd_bus_runs_the_program_a_unixexec_address_names(tmp_path):
    """systemd tools refuse to run unless /run/systemd/system exists, so the
    check runs in a mount namespace of its own where it does."""
    tool = shutil.which("hostnamectl")
    if not tool or os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs hostnamectl, root and unshare")
    marker = tmp_path / "ran"
    prog = tmp_path / "bus"
    prog.write_text("#!/bin/sh\ntouch %s\n" % marker)
    prog.chmod(0o755)
    script = ("mount -t tmpfs none /run && mkdir -p /run/systemd/system && "
              "DBUS_SYSTEM_BUS_ADDRESS=unixexec:path=%s timeout 10 %s" % (prog, tool))
    out = _run(["unshare", "-m", "--", "sh", "-c", script], tmp_path)
    if b"mount" in out.stderr and not marker.exists():
        pytest.skip("no mount namespace here: %r" % out.stderr[:200])
    assert marker.exists(), out


# ---- kubectl reads `_` in a flag name as `-` ----------------------------------------

class _FakeApi(http.server.BaseHTTPRequestHandler):
    """Just enough of a Kubernetes API server for `kubectl get pods`."""
    BODIES = {
        "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0"},
        "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []},
        "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
        "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
             "verbs": ["get", "list"]}]},
        "/api/v1/namespaces/default/pods": {"kind": "PodList", "apiVersion": "v1",
                                            "metadata": {}, "items": []},
    }

    def do_GET(self):
        body = self.BODIES.get(self.path.split("?")[0])
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(body or {"kind": "Status", "code": 404}).encode())

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("line", ["kubectl get pods --cache_dir=x",
                                  "kubectl get pods --cache_dir x",
                                  "kubectl cluster-info dump --output_directory=x",
                                  "kubectl version --profile_output=x --profile cpu"])
def test_kubectl_flag_spelled_with_underscores_is_refused(line):
    assert _verdict(line) != "read"
    assert _verdict("kubectl get pods -o wide") == "read"


def test_kubectl_writes_its_cache_where_cache_dir_with_an_underscore_says(tmp_path):
    if not shutil.which("kubectl"):
        pytest.skip("kubectl not installed")
    server = http.server.HTTPServer(("127.0.0.1", 0), _FakeApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config = tmp_path / "kubeconfig"
        config.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "x",
            "clusters": [{"name": "c", "cluster": {
                "server": "http://127.0.0.1:%d" % server.server_port}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u",
                                                   "namespace": "default"}}]}))
        cache = tmp_path / "elsewhere"
        _run(["kubectl", "get", "pods", "--cache_dir=%s" % cache], tmp_path,
             {"KUBECONFIG": str(config), "HOME": str(tmp_path)})
        assert (cache / "discovery").is_dir()
    finally:
        server.shutdown()


# ---- tput init and reset set the terminal's modes ----------------------------------

@pytest.mark.parametrize("cap", ["reset", "init"])
def test_tput_init_and_reset_change_the_terminal(tmp_path, cap):
    assert _verdict("tput " + cap) != "read"
    assert _verdict("tput cols") == "read"
    if not (shutil.which("tput") and shutil.which("script")):
        pytest.skip("tput or script not installed")
    inner = "stty -echo; TERM=xterm tput %s >/dev/null; stty -a" % cap
    out = _run(["script", "-qc", inner, "/dev/null"], tmp_path, {"TERM": "xterm"})
    words = out.stdout.decode("utf-8", "replace").split()
    assert "echo" in words and "-echo" not in words, words   # echo is back on


# ---- through the real hook, in review mode ------------------------------------------

HOOK_CASES = [
    "uniq a.txt -c", "gzip - -c", "cargo --version", "go list ./...", "yarn --version",
    "DBUS_SYSTEM_BUS_ADDRESS=unixexec:path=./x systemctl status",
    "kubectl get pods --cache_dir=x", "tput reset", "TAPE=host:/x tar -t",
    "echo 'open(\"x\", \"w\")' | python3 -I - <<'EOF'\nprint(1)\nEOF\n",
    "unlink --help", "/bin/kill -0 1234 -s 9",
    "COMSPEC=x python3 -I -c 'import platform; print(platform.uname())'"]


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_review_mode_denies_each_false_read_and_allows_the_read(tmp_path, monkeypatch, host):
    from test_same_answer import decision_code
    for k, line in enumerate(HOOK_CASES + ["uniq -c a.txt"]):
        home = tmp_path / ("%s%d" % (host, k))
        monkeypatch.setenv("STS_HOME", str(home))
        code = decision_code(host, "$stop-that-shit review -- audit", "shell", line,
                             sts.Store(str(home)))
        if line == "uniq -c a.txt":
            assert code is None, line
        else:
            assert code in ("MUTABILITY_UNPROVEN", "MODE_FORBIDS_MUTATION"), (line, code)
