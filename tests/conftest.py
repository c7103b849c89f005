"""Shared fixtures: every test gets its own STS_HOME on real disk."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import sts  # noqa: E402

STS_PY = os.path.join(ROOT, "sts.py")


@pytest.fixture
def sts_home(tmp_path, monkeypatch):
    home = tmp_path / "sts-home"
    monkeypatch.setenv("STS_HOME", str(home))
    return home


@pytest.fixture
def store(sts_home):
    return sts.Store(str(sts_home))


def pytest_configure(config):
    # Real-process stress tests (many processes, SIGKILL, minutes of CPU on a
    # busy machine): `make test` may deselect them with -m "not slow".
    config.addinivalue_line("markers", "slow: a real-process stress test; run by make test-all")
