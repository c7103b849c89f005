# sts -- developer tasks.  Everything runs with the machine's python3.
#
# The tests need pytest.  When python3 cannot import it, the first `make test`
# makes a virtual environment in .venv/ (git-ignored) and installs pytest
# there; later runs reuse it.
PYTHON ?= python3
VENV := .venv

# The interpreter that runs pytest: python3 itself when it has pytest, else the
# one in .venv.  Recursive (=), so it is evaluated after the `pytest` target ran.
TEST_PYTHON = $(shell $(PYTHON) -c "import pytest" >/dev/null 2>&1 && echo "$(PYTHON)" || echo "$(VENV)/bin/python")

.PHONY: test test-all demo bench bench-instructions e2e pytest map

# The everyday command: every test but the slow ones (marked `slow`), in about
# two minutes on two cores (tests/parallel.py runs two pytest processes), then
# the shipped cases.
test: pytest
	$(TEST_PYTHON) tests/parallel.py -q -m "not slow"
	$(PYTHON) sts.py cases

# Everything `make test` runs plus the slow tests (process storms, the long
# fuzz and concurrency runs).  CI runs this and `make e2e`.
test-all: pytest
	$(TEST_PYTHON) tests/parallel.py -q
	$(PYTHON) sts.py cases

# Make sure TEST_PYTHON can import pytest: nothing to do when python3 can or
# when .venv already has it.
pytest:
	@if ! $(PYTHON) -c "import pytest" >/dev/null 2>&1 \
	    && ! $(VENV)/bin/python -c "import pytest" >/dev/null 2>&1; then \
	    echo "$(PYTHON) cannot import pytest: installing it into $(VENV)/"; \
	    $(PYTHON) -m venv $(VENV) || { echo "cannot make $(VENV): install the venv module (Debian/Ubuntu: apt install python3-venv) or pytest" >&2; exit 1; }; \
	    $(VENV)/bin/python -m pip install --quiet pytest; \
	fi

demo:
	$(PYTHON) sts.py demo

# The map of sts.py: its Parts, their sections and the lines of each, read
# from the banners (`tests/sts_map.py --all` adds the `# ---- name ----` divisions).
map:
	@$(PYTHON) tests/sts_map.py

# Timings live here, never in a unit test: the hook process against the bare
# interpreter, then the analyzer's cost per command and on its largest inputs.
# BENCH_PYTHONS="/path/python3.11 /path/python3.12 ..." times the hook under
# each, every one against its own floor, in one run.  BENCH_BEFORE=/path/sts.py
# times an older sts.py beside this one, interleaved run for run.
# BENCH_DEFAULT=1 arms this sts.py's session from a user default, no directive;
# BENCH_MODE=change times the calls an armed change session allows.
bench:
	$(PYTHON) tests/bench.py $(foreach p,$(BENCH_PYTHONS),--python $(p)) $(if $(BENCH_BEFORE),--before $(BENCH_BEFORE)) $(if $(BENCH_DEFAULT),--default) $(if $(BENCH_MODE),--mode $(BENCH_MODE))
	$(PYTHON) tests/bench_analysis.py

# The same calls counted in instructions (valgrind): steady on a busy machine.
bench-instructions:
	$(PYTHON) tests/bench_instructions.py $(or $(BENCH_PYTHONS),$(PYTHON))

e2e: pytest
	$(TEST_PYTHON) -m pytest -q tests/e2e
