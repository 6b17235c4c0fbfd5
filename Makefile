# One command each: `make demo` (install + run the demo), `make test` (install + run every test),
# `make docs` (install the doc tools + build the site into site/, warnings as errors).
# Without make (Windows): `python -m scripts.ci test` / `python -m scripts.ci lint`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	touch $@

.PHONY: install demo test lint bench docs
install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/mcpline demo

test: $(BIN)/.installed
	$(BIN)/python -m pytest

# ruff, ruff format, mypy --strict (also as Windows and macOS see the code), actionlint on
# .github/workflows: the list is scripts/ci.py's, which hosted CI runs without make.
lint: $(BIN)/.installed
	$(BIN)/python -m scripts.ci lint

# The site, built offline with warnings as errors (a broken link or a bad docstring fails it).
$(BIN)/.docs-installed: pyproject.toml $(BIN)/.installed
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $@

docs: $(BIN)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir site

bench: $(BIN)/.installed
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/run.py
	$(BIN)/python bench/client.py
	$(BIN)/python bench/http_client.py
	$(BIN)/python bench/scaling.py
	$(BIN)/python bench/http_server.py
	$(BIN)/python bench/bridge.py

# Two revisions of src/ benchmarked interleaved, ratios B ÷ A: make compare A=main [B=.]
.PHONY: compare
compare: $(BIN)/.installed
	$(BIN)/python bench/compare.py $(A) $(or $(B),.)
