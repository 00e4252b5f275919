# Two commands set everything up on a fresh machine: `make quickstart` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export TF_CPP_MIN_LOG_LEVEL ?= 3

.PHONY: quickstart test test-slow test-all install install-test clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# The stamps re-run pip only when setup.py changes.
$(VENV)/.installed: setup.py | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: setup.py | $(PY)
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# The quickstart study (gin_configs/studies/quickstart.gin): beta-VAE on the ellipse
# dSprites, original / a known factor-dependent mixing (wave) / noise of the same energy,
# 3 seeds each, then its report (hypotheses and intervals first).
quickstart: install
	$(PY) -m benchmark.study --gin_file=studies/quickstart.gin
	$(PY) -m benchmark.report --results=runs/quickstart --verbosity=-1
	@echo "Quickstart report: runs/quickstart/report/report.md"

# The fast loop (tests marked slow left out), then the slow end-to-end tests; CI runs both.
test: install-test
	$(PY) -m pytest -n 2 -q -m "not slow" --durations=15 tests

test-slow: install-test
	$(PY) -m pytest -n 2 -q -m slow --durations=15 tests

test-all: test test-slow

clean:
	rm -rf $(VENV) runs/quickstart .pytest_cache
