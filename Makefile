# Two commands for a fresh clone: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv test test-fast test-long demo bench clean

venv: $(STAMP)

$(STAMP): setup.py requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip wheel
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

test: venv
	$(PY) -m pytest -q

test-fast: venv
	$(PY) -m pytest -q -m "not slow and not bench and not long"

test-long: venv
	$(PY) -m pytest -q -m long

demo: venv
	$(PY) -m pipelines.demo

bench: venv
	$(PY) -m pytest -q -m bench

clean:
	rm -rf $(VENV) *.egg-info demo-crawl
