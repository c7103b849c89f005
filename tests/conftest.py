"""Shared fixtures: every test gets its own STS_HOME (in RAM where there is a tmpfs).

Tests marked `slow` (process storms, the long fuzz and concurrency runs) are
left out of `make test` and run by `make test-all` and CI.  Each has a smaller
sibling in the everyday run that asserts the same, except for what only many
rounds can show (how rarely a writer waits out the lock) and the shim's SDK
timeout (its siblings take the other failure paths).
"""
import contextlib
import os
import shutil
import sys
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import sts  # noqa: E402

STS_PY = os.path.join(ROOT, "sts.py")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: a long run (many processes or iterations); `make test-all` runs it, "
                   "`make test` leaves it out")


def ram_dir(prefix="sts-test-"):
    """A new folder in RAM (tmpfs) when the machine has one, else on disk.

    For tests where a real disk is not the point: sts fsyncs every state and
    config write, which costs milliseconds on a disk and nothing in RAM."""
    shm = "/dev/shm"
    base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None
    return tempfile.mkdtemp(prefix=prefix, dir=base)


@pytest.fixture
def ram_path():
    """Like tmp_path, but in RAM (see ram_dir); removed after the test."""
    import pathlib
    path = ram_dir()
    yield pathlib.Path(path)
    shutil.rmtree(path, ignore_errors=True)


def calls_made(fn, *args):
    """(fn(*args), how many Python and C function calls it made).

    A count of work, not a clock: it is the same on a busy machine, so a test
    can assert how a cost grows with its input without ever flaking.  (Work
    inside one C call, such as a regular expression's, is not seen.)"""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event == "call" or event == "c_call":
            calls += 1
    sys.setprofile(count)
    try:
        result = fn(*args)
    finally:
        sys.setprofile(None)
    return result, calls


class FakeClock:
    """time.monotonic and time.sleep for code that waits, without the waiting.

    sts polls for a session lock with time.sleep until time.monotonic passes a
    deadline.  Under this clock a sleep moves the clock on at once, so a test
    sees exactly how long the code chose to wait (`waited`), whatever the load
    on the machine, and pays nothing for it."""

    def __init__(self):
        self.now = 1000.0
        self.waited = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        self.waited += seconds


@contextlib.contextmanager
def fake_clock():
    """Run the body under a FakeClock (see there); yields the clock."""
    clock = FakeClock()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, "monotonic", clock.monotonic)
        patch.setattr(time, "sleep", clock.sleep)
        yield clock


@pytest.fixture
def sts_home(monkeypatch):
    """The test's own data dir, in RAM where the machine has a tmpfs (see
    ram_dir): sts fsyncs every state write, and thousands of tests write."""
    import pathlib
    base = ram_dir()
    home = pathlib.Path(base) / "sts-home"
    monkeypatch.setenv("STS_HOME", str(home))
    yield home
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def store(sts_home):
    return sts.Store(str(sts_home))
