"""Run the test suite as two pytest processes at once, one per core.

    python3 tests/parallel.py [pytest options]        (`make test` and `make test-all`)

Most of the suite's time goes to tests that start other programs and wait on
them (Node for the shims, real hook processes racing for a lock, commands run
in real shells).  Those files run in one process, everything else in the
other, each with its own temporary folder (in RAM where the machine has a
usable one, see ram_folder).  The second one's output is
printed when the first one is done; the exit status is the first non-zero
one.  Plain `python3 -m pytest tests` runs the same tests in one process.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# About half of the time of `make test`: the shims under Node, the real
# concurrent hook processes, the oracles and false reads that run commands in
# real shells, and the command-line, install, case, lean-os and fast-json
# tests that start the hook or the CLI as a process.  (Which files go here is
# a matter of balance: both runs should end at about the same time.)
FIRST = ("test_shims.py", "test_concurrency.py", "test_delegation_concurrency.py",
         "test_analysis_oracle.py", "test_false_reads.py", "test_reads_that_leave.py",
         "test_cli.py", "test_install.py", "test_cases.py", "test_fast_os.py",
         "test_fast_json.py")


def ram_folder():
    """/dev/shm when it is a RAM disk we may write in and run programs from
    (some systems mount it noexec), else None: the system's temp folder.

    Every test's tmp_path lives under it.  sts fsyncs each state and config
    write, which costs milliseconds on a disk and nothing in RAM."""
    shm = "/dev/shm"
    try:
        flags = os.statvfs(shm).f_flag
    except (OSError, AttributeError):
        return None
    if flags & getattr(os, "ST_NOEXEC", 0) or flags & getattr(os, "ST_RDONLY", 0) \
            or not os.access(shm, os.W_OK | os.X_OK):
        return None
    return shm


def main(options):
    first = [os.path.join(HERE, name) for name in FIRST]
    groups = ([HERE] + ["--ignore=" + path for path in first], first)
    runs = []
    try:
        for index, paths in enumerate(groups):
            base = tempfile.mkdtemp(prefix="sts-pytest-", dir=ram_folder())
            output = tempfile.TemporaryFile() if index else None  # the first one shows live
            argv = [sys.executable, "-m", "pytest", "--basetemp", os.path.join(base, "tmp")]
            proc = subprocess.Popen(argv + list(options) + paths, stdout=output,
                                    stderr=subprocess.STDOUT if output else None)
            runs.append((proc, output, base))
        status = 0
        for proc, output, _ in runs:
            code = proc.wait()
            if output is not None:
                output.seek(0)
                sys.stdout.flush()
                shutil.copyfileobj(output, sys.stdout.buffer)
                sys.stdout.buffer.flush()
            status = status or code
        return status
    finally:
        for proc, output, base in runs:
            if proc.poll() is None:  # interrupted: stop the other run too
                proc.terminate()
                proc.wait()
            if output is not None:
                output.close()
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
