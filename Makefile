# One command each: `make demo` (install + run the demo), `make test` (install + run every test).
# Without make (Windows): `python -m scripts.ci test` / `python -m scripts.ci lint`.
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

# ruff, ruff format, mypy --strict (also as Windows and macOS see the code), actionlint on
# .github/workflows: the list is scripts/ci.py's, which hosted CI runs without make.
lint: $(BIN)/.installed
	$(BIN)/python -m scripts.ci lint

bench: $(BIN)/.installed
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/run.py
	$(BIN)/python bench/client.py
	$(BIN)/python bench/http_client.py
	$(BIN)/python bench/scaling.py
	$(BIN)/python bench/http.py
	$(BIN)/python bench/bridge.py
