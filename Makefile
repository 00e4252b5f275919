# Two commands set everything up on a fresh machine: `make quickstart` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
QUICKSTART_OUT ?= previews
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: quickstart test install install-test clean

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

quickstart: install
	@for ds in dsprites shapes3d; do for v in original noisy; do \
	  $(PY) -m benchmark.data preview --dataset=$$ds --variant=$$v \
	    --out=$(QUICKSTART_OUT)/$$ds-$$v.png --verbosity=-1 || exit 1; \
	done; done
	@echo "Preview sheets are in $(QUICKSTART_OUT)/"

test: install-test
	$(PY) -m pytest -n 2 -q tests

clean:
	rm -rf $(VENV) $(QUICKSTART_OUT) .pytest_cache
