# Everything runs inside a project-local virtual environment that the targets create.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow test-all bench install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m hiercvx.cli demo

test: $(STAMP)
	$(PY) -m pytest -q -m "not slow" -p no:cacheprovider

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow -p no:cacheprovider

test-all: $(STAMP)
	$(PY) -m pytest -q -m "" -p no:cacheprovider

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]' || true
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
