# sts -- developer tasks.  Everything runs with the machine's python3.
PYTHON ?= python3

.PHONY: test demo bench e2e

# The one test command: README, CI and developers all run this.
test:
	$(PYTHON) -m pytest -q tests
	$(PYTHON) sts.py cases

demo:
	$(PYTHON) sts.py demo

# BENCH_PYTHONS="/path/python3.11 /path/python3.12 ..." times each in one run.
bench:
	$(PYTHON) tests/bench.py $(foreach p,$(BENCH_PYTHONS),--python $(p))

e2e:
	$(PYTHON) -m pytest -q tests/e2e
