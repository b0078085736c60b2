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

# two test processes (pytest-xdist), each test file whole in one of them (module fixtures
# are made once): the end-to-end crawls mostly wait on their politeness delays
test: venv
	$(PY) -m pytest -q -n 2 --dist loadfile

test-fast: venv
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow and not bench and not long"

test-long: venv
	$(PY) -m pytest -q -m long

demo: venv
	$(PY) -m pipelines.demo

bench: venv
	$(PY) -m pytest -q -m bench

clean:
	rm -rf $(VENV) *.egg-info demo-crawl
