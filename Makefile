# One command each: `make demo` (install + run the demo), `make test` (install + run every test).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	touch $@

.PHONY: install demo test lint bench
install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/mcpline demo

test: $(BIN)/.installed
	$(BIN)/python -m pytest

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests examples bench
	$(BIN)/ruff format --check src tests examples bench
	$(BIN)/mypy src examples bench

bench: $(BIN)/.installed
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/run.py
	$(BIN)/python bench/client.py
	$(BIN)/python bench/scaling.py
	$(BIN)/python bench/http.py
