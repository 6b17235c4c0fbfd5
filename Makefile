# One command each: `make demo` (install + run the demo), `make test` (install + run every test,
# then list the 15 slowest), `make test-fast` (the unit and in-memory tests, well under a
# minute), `make flakes` (the suite several times under heavy load; POSIX only), `make docs`
# (install the doc tools + build the site into site/, warnings as errors).
# Without make (Windows): `python -m scripts.ci test` / `python -m scripts.ci lint`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	touch $@

.PHONY: install demo test test-fast flakes lint bench docs
install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/mcpline demo

# Python's byte-code caches (git-ignored __pycache__) are written even where the environment
# sets PYTHONDONTWRITEBYTECODE, as many containers do: the suite starts hundreds of Python
# processes that import mcpline, and each xdist worker rewrites every test module's asserts;
# without the caches each would compile it all again, run after run.
test: $(BIN)/.installed
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest

# The tests marked `fast` (tests/conftest.py): unit tests and the in-memory driver's tests,
# no process, no socket, no download.
test-fast: $(BIN)/.installed
	$(BIN)/python -m pytest -m fast

# The suite RUNS times beside busy loops, disk writers, process spawners and loopback
# churners (scripts/flakes.py), then every test that failed at least once. POSIX only.
# `make flakes RUNS=1 FLAKES_ARGS='-- tests/cli'` for a short look.
RUNS ?= 5
FLAKES_ARGS ?=
flakes: $(BIN)/.installed
	$(BIN)/python -m scripts.flakes --runs $(RUNS) $(FLAKES_ARGS)

# ruff, ruff format, mypy --strict (also as Windows and macOS see the code; tests/ as Linux
# sees it), actionlint on .github/workflows: the list is scripts/ci.py's, which hosted CI runs
# without make.
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
