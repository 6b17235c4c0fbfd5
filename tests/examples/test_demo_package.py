"""`mcpline demo` serves examples/quickstart.py itself, shipped as package data.

The examples directory is mapped onto the private package ``mcpline._examples`` in
pyproject.toml: the editable install resolves it to the source tree, a wheel carries a copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ..proc import EXAMPLES, REPO

PY = sys.executable
QUICKSTART = EXAMPLES / "quickstart.py"
DEMO_SAYS = ("calculator 1.0.0", "result: 5.0", "Cannot divide by zero", "exited with code 0")


def test_the_package_list_covers_every_package_of_the_source_tree() -> None:
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    src = REPO / "src"
    found = {".".join(p.parent.relative_to(src).parts) for p in src.rglob("__init__.py")}
    assert sorted(config["packages"]) == sorted(found | {"mcpline._examples"})
    assert config["package-dir"] == {"": "src", "mcpline._examples": "examples"}


def test_the_demo_serves_the_installed_quickstart_file(tmp_path: Path) -> None:
    code = "from mcpline.cli.demo import find_quickstart; print(find_quickstart())"
    proc = subprocess.run(
        [PY, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    served = Path(proc.stdout.strip())
    assert served.read_bytes() == QUICKSTART.read_bytes()
    assert not (REPO / "src" / "mcpline" / "cli" / "demo_server.py").exists()


def _copy_tree(dest: Path) -> Path:
    """What a build needs, without caches or a stale ``build/`` directory."""
    junk = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    dest.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, dest / name)
    for name in ("src", "examples"):
        shutil.copytree(REPO / name, dest / name, ignore=junk)
    return dest


def test_a_wheel_ships_the_quickstart_and_its_demo_runs_from_it(tmp_path: Path) -> None:
    tree = _copy_tree(tmp_path / "tree")
    build = subprocess.run(
        [PY, "-m", "pip", "wheel", str(tree), "--no-deps", "-q", "-w", str(tmp_path / "dist")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp_path / "dist").glob("mcpline-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        shipped = zf.read("mcpline/_examples/quickstart.py")
    assert shipped == QUICKSTART.read_bytes()
    # Nothing lands beside the mcpline package: no example becomes a top-level module.
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"mcpline"}
    assert "mcpline/_examples/__init__.py" in names
    assert not [n for n in names if "servers/" in n or n.endswith("demo_server.py")]

    site = tmp_path / "site"
    install = subprocess.run(
        [PY, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    demo = subprocess.run(
        [PY, "-c", "import sys; from mcpline.cli import main; sys.exit(main(['demo']))"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=elsewhere,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert demo.returncode == 0, demo.stderr
    assert f"starting {site / 'mcpline' / '_examples' / 'quickstart.py'}" in demo.stdout
    for fragment in DEMO_SAYS:
        assert fragment in demo.stdout, demo.stdout
