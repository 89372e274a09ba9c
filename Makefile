# Everything runs inside a project-local virtual environment that the targets create.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow test-all bench bench-targets bench-page install clean docs

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

# The full-size benchmark rows, one after another in one run, each script printing its own
# ratios against the peers it runs beside; `make bench-page PAGE_SOURCE="--from-log $(TARGETS_LOG)"`
# turns the log into the benchmarks page.
TARGETS_LOG ?= benchmarks/results/targets.log
bench-targets: $(STAMP)
	mkdir -p $(dir $(TARGETS_LOG))
	( date -u; uptime; git rev-parse --short HEAD; \
	  set -x; \
	  $(PY) benchmarks/bench_engine.py --repeat 1 --imageclef && \
	  $(PY) benchmarks/bench_sibling_fun.py --rows funcat && \
	  $(PY) benchmarks/bench_orthogonal_engine.py --solvers dual_cd && \
	  $(PY) benchmarks/bench_go.py --rows go --only HierarchicalSVC --max-iter 300 --cap 1500 && \
	  $(PY) benchmarks/bench_go.py --rows go --only NormalizedHierarchicalSVC --max-iter 20 --cap 1500 && \
	  $(PY) benchmarks/bench_labelsets.py && \
	  $(PY) benchmarks/bench_nhsvm_labelsets.py --hinge-peer && \
	  date -u; uptime ) 2>&1 | tee $(TARGETS_LOG)

# The benchmarks page (docs/benchmarks.md and its figure): the quick rows measured now, or a log.
# PAGE_SOURCE="--run --labelsets --n 300" adds the label-set rows on 300 training rows.
PAGE_SOURCE ?= --run
bench-page: $(STAMP)
	$(PY) benchmarks/page.py $(PAGE_SOURCE)

# The documentation site, warnings as errors; MathJax comes from npm and is served by the site.
MATHJAX := docs/_vendor/node_modules/mathjax/es5/tex-chtml.js
$(MATHJAX):
	npm install --prefix docs/_vendor --no-save --no-package-lock --no-audit --no-fund mathjax@3

docs: $(STAMP) $(MATHJAX)
	$(PY) -m pip install --quiet -e '.[docs]'
	rm -rf docs/generated  # API stubs of names that no longer exist would be read again
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) build *.egg-info
