"""The e2e suite is collected only when asked for.

`make test` runs `pytest -q tests` and must stay fast and offline, so the files
in this folder are ignored unless pytest was pointed at this folder (or a file
or test in it) explicitly, e.g. `make e2e` = `pytest -q tests/e2e`, or
STS_E2E=1 is set.  Nothing is skipped: the tests are simply not collected.

When collected, one session-wide `matrix` installs the hosts the selected
tests need (in parallel) and runs the cases with modest parallelism
(STS_E2E_JOBS, default 3); each test waits for its own case.  The terminal
summary prints one PASS/FAIL line per case with the host's version, the
install and wall times, and `N passed, N failed`.
"""
import os
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _use_here() -> None:
    """Make this folder's modules importable; only once the suite was asked for,
    so that `make test` loads this conftest without any side effect."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)


def _asked_for(config) -> bool:
    if os.environ.get("STS_E2E") == "1":
        return True
    base = str(config.invocation_params.dir)
    paths = [str(a) for a in config.invocation_params.args if not str(a).startswith("-")]
    for arg in paths or ["."]:  # no path given: pytest collects from where it was started
        path = os.path.realpath(os.path.join(base, arg.split("::")[0]))
        if path == HERE or path.startswith(HERE + os.sep):
            return True
    return False


def pytest_ignore_collect(collection_path, config):
    path = os.path.realpath(str(collection_path))
    if path.startswith(HERE + os.sep) and not _asked_for(config):
        return True
    return None


class Matrix:
    """Installs and cases running in the background; tests wait for their case."""

    def __init__(self, cases, jobs: int):
        import concurrent.futures
        _use_here()
        import harness
        import install
        self.harness = harness
        self.t0 = time.monotonic()
        self.session_dir = os.path.join(harness.runs_root(), time.strftime("%Y%m%d-%H%M%S-")
                                        + str(os.getpid()))
        harness.prune_runs(keep=int(os.environ.get("STS_E2E_KEEP_SESSIONS", "3")) - 1)
        os.makedirs(self.session_dir, exist_ok=True)
        self.cases = list(cases)
        self.installs = {}
        hosts = list(dict.fromkeys(h for h, _ in self.cases))
        self._install_pool = concurrent.futures.ThreadPoolExecutor(3, "e2e-install")
        for host in hosts:
            self.installs[host] = self._install_pool.submit(self._install, install, host)
        self._case_pool = concurrent.futures.ThreadPoolExecutor(jobs, "e2e-case")
        self.futures = {case: self._case_pool.submit(self._run, *case) for case in self.cases}
        self.results = {}
        self.wall = None

    @staticmethod
    def _install(install, host):
        t0 = time.monotonic()
        info = install.install(host)
        info["wall"] = round(time.monotonic() - t0, 1)
        return info

    def _run(self, host, scenario):
        harness = self.harness
        try:
            self.installs[host].result()
        except Exception as exc:  # noqa: BLE001 - the host's cases fail loudly
            res = harness.CaseResult(host, scenario, harness.install.PINS[host][2])
            res.problems.append("install failed: %s" % exc)
            return res
        try:
            return harness.run_case(host, scenario, self.session_dir)
        except Exception as exc:  # noqa: BLE001
            res = harness.CaseResult(host, scenario, harness.install.PINS[host][2])
            res.problems.append("harness error: %s: %s" % (type(exc).__name__, exc))
            return res

    def result(self, host, scenario):
        res = self.futures[(host, scenario)].result()
        self.results[(host, scenario)] = res
        if len(self.results) == len(self.cases):
            self.wall = time.monotonic() - self.t0
        return res

    def close(self):
        for fut in self.futures.values():
            fut.cancel()
        self._case_pool.shutdown(wait=True)
        self._install_pool.shutdown(wait=True)


_MATRIX = []


@pytest.fixture(scope="session")
def matrix(request):
    cases = []
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if spec is not None and "host" in spec.params and "scenario" in spec.params:
            cases.append((spec.params["host"], spec.params["scenario"]))
    m = Matrix(cases, int(os.environ.get("STS_E2E_JOBS", "3")))
    _MATRIX.append(m)
    yield m
    m.close()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _MATRIX:
        return
    m = _MATRIX[0]
    tr = terminalreporter
    tr.section("sts e2e: real hosts, offline, effect checked on disk")
    for host, fut in m.installs.items():
        if fut.done() and fut.exception() is None:
            info = fut.result()
            tr.write_line("install %-8s %-8s %s" % (
                host, info["version"],
                "cached (%.1fs check)" % info["wall"] if info["cached"]
                else "installed in %.1fs" % info["seconds"]))
        elif fut.done():
            tr.write_line("install %-8s FAILED: %s" % (host, fut.exception()))
    passed = failed = 0
    for case in m.cases:
        res = m.results.get(case)
        if res is None:
            continue
        tr.write_line(res.line())
        if not res.ok:
            tr.write_line("     run folder: %s" % res.run_dir)
        passed += res.ok
        failed += not res.ok
    import test_hosts
    for host, scenario, why in test_hosts.NOT_APPLICABLE:
        if any(h == host for h, _ in m.cases):
            tr.write_line("N/A  %-8s %-8s %-15s %s" % (host, "", scenario, why))
    wirings = sorted({r.wiring for r in m.results.values() if r.wiring not in ("", "probe")})
    if wirings:
        tr.write_line("sts wired by: %s" % ", ".join(
            {"install": "`python3 sts.py install <host>` (Codex with --trust)",
             "direct": "hook configs and shims written by the harness (STS_E2E_WIRE=direct, "
             "or sts.py install not available)"}[w]
            for w in wirings))
    if m.wall is not None:
        tr.write_line("e2e wall time %.1fs for %d cases (%s jobs); runs in %s" % (
            m.wall, len(m.cases), os.environ.get("STS_E2E_JOBS", "3"), m.session_dir))
    notes = sorted({n for r in m.results.values() for n in r.notes if n.startswith("no network")})
    for note in notes:
        tr.write_line("WARNING: %s" % note)
    tr.write_line("%d passed, %d failed" % (passed, failed))
