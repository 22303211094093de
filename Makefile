# morlog: set up a virtual environment and run the demo or the tests.
#   make demo   - set up, then run the main job (sample logs, then the upsert pipeline on local Spark)
#   make test   - set up, then lint, type-check and run the whole test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.morlog-installed

.PHONY: setup demo test lint typecheck pytest clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/morlog demo
	$(BIN)/morlog spark-demo

lint: setup
	$(BIN)/ruff check logformat readers writers compat tests

typecheck: setup
	$(BIN)/mypy

pytest: setup
	$(BIN)/python -m pytest

test: lint typecheck pytest

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache .hypothesis
