"""The README's commands without ``make``: ``python -m scripts.ci test|lint|all``.

``test`` is ``make test``: create ``.venv`` (if needed), install ``.[test,dev]`` into it when
``pyproject.toml`` is newer than the last install, run ``python -m pytest``. ``lint`` is
``make lint``: ruff, ruff format, mypy --strict (as Linux, Windows and macOS see the code;
the tests as Linux sees them), and actionlint on the workflows. The hosted CI workflow
(.github/workflows/ci.yml) calls this on Linux, macOS and Windows; run it from the
repository's root with any Python >= 3.10.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = BIN / ".installed"
LINT_PATHS = ["src", "tests", "examples", "bench", "scripts"]
TYPED_PATHS = ["src", "examples", "bench", "scripts"]
TESTS = "tests"
"""Type-checked as Linux sees them, wherever lint runs (the suite simulates Windows on Linux)."""
OTHER_PLATFORMS = [("win32", ["src", "examples", "scripts"]), ("darwin", TYPED_PATHS)]
"""mypy again as each other OS sees the code (bench/ is POSIX-only: select on pipes)."""
WORKFLOWS = ROOT / ".github" / "workflows"


def run(*cmd: str | Path) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], cwd=ROOT, check=True)


def install() -> None:
    """The ``.venv`` that ``make install`` builds, with the test and dev extras."""
    if not PYTHON.exists():
        print(f"+ python -m venv {VENV}", flush=True)
        venv.create(VENV, with_pip=True)
    pyproject = ROOT / "pyproject.toml"
    if STAMP.exists() and STAMP.stat().st_mtime >= pyproject.stat().st_mtime:
        return
    run(PYTHON, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    run(PYTHON, "-m", "pip", "install", "--quiet", "-e", ".[test,dev]")
    STAMP.touch()


def tool(name: str) -> Path:
    exe = BIN / (name + ".exe" if os.name == "nt" else name)
    if exe.exists():
        return exe
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"scripts.ci: {name} is not installed (pip install -e '.[dev]')")
    return Path(found)


def lint() -> None:
    run(tool("ruff"), "check", *LINT_PATHS)
    run(tool("ruff"), "format", "--check", *LINT_PATHS)
    run(tool("mypy"), *TYPED_PATHS)
    run(tool("mypy"), "--platform", "linux", TESTS)
    for platform, paths in OTHER_PLATFORMS:
        run(tool("mypy"), "--platform", platform, *paths)
    workflows = sorted(WORKFLOWS.glob("*.yml"))
    if not workflows:
        raise SystemExit("scripts.ci: no workflow to lint")
    run(tool("actionlint"), *[w.relative_to(ROOT) for w in workflows])


def test(pytest_args: list[str]) -> None:
    run(PYTHON, "-m", "pytest", *pytest_args)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.ci", description=__doc__)
    ap.add_argument("what", choices=["install", "test", "lint", "all"])
    ap.add_argument("pytest_args", nargs="*", help="passed to pytest (after --)")
    args = ap.parse_args(argv)
    try:
        install()
        if args.what in ("lint", "all"):
            lint()
        if args.what in ("test", "all"):
            test(args.pytest_args)
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
