"""The official conformance suite through ``mcpline bridge --http``, in front of
``examples/servers/everything.py`` and of npm's legacy-only ``server-everything``.

``collect()`` runs both requirement sets (and the pending 2026-07-28 suite) against each
bridge; ``render(runs)`` is the Markdown of the ``## Bridge`` part of ``docs/conformance.md``.
As a script it rewrites that part (between its own markers, leaving the rest of the file):

    python -m tests.bridge.compare docs/conformance.md
"""

from __future__ import annotations

import contextlib
import datetime
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

from ..conformance import harness, provision
from ..conformance.compare import SELECTIONS, count, required, run_all, scenario_rows
from . import everything_npm
from .util import EVERYTHING, Proc, bridge_http

REPO = Path(__file__).resolve().parents[2]
TARGETS = {
    "everything.py": [sys.executable, str(EVERYTHING)],
    "server-everything": None,  # the npm package, provisioned on first use
}
BEGIN = "<!-- bridge:begin"
END = "<!-- bridge:end -->"


OPTIONS = ["--pool", "2", "--session-rate", "1000", "--max-sessions-per-client", "16"]
"""The suite opens a legacy session per scenario, back to back, from one address: far more
than the per-client spawn rate a bridge allows by default."""


def collect() -> dict[str, dict[str, harness.ServerRun]]:
    """{target: {selection title: run}}, each target behind its own bridge (pool of 2), and
    server-everything over its own Streamable HTTP transport, for comparison."""
    provision.provision()
    out: dict[str, dict[str, harness.ServerRun]] = {}
    for name, argv in TARGETS.items():
        server = argv if argv is not None else everything_npm.command()
        with bridge_http(*server, options=OPTIONS) as (url, _):
            out[name] = run_all(url, judged=name == "everything.py")
    with native_everything() as url:
        out["server-everything native"] = run_all(url)
    return out


@contextlib.contextmanager
def native_everything() -> Iterator[str]:
    """npm's server-everything on its own HTTP transport (a free port), its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = Proc(everything_npm.command("streamableHttp"), {"PORT": str(port)})
    try:
        proc.wait_for("listening on port")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.stop()


def render(runs: dict[str, dict[str, harness.ServerRun]]) -> str:
    ours, npm = runs["everything.py"], runs["server-everything"]
    native = runs["server-everything native"]
    lines = [
        f"The same suite (`@modelcontextprotocol/conformance@{provision.CONFORMANCE_VERSION}`, "
        f"server scenarios) through `mcpline bridge --http 127.0.0.1:PORT {' '.join(OPTIONS)} "
        "-- SERVER`: "
        "the stdio server `examples/servers/everything.py` (dual-era: 2026-07-28 requests "
        "forwarded to the pool, each legacy session a process of its own), and npm's "
        f"`{everything_npm.PACKAGE}@{everything_npm.VERSION}` (legacy-only: 2026-07-28 requests "
        "translated onto legacy sessions the bridge opened, legacy sessions forwarded).",
        "",
        f"Generated on {datetime.date.today().isoformat()} with "
        "`python -m tests.bridge.compare docs/conformance.md`; "
        "`tests/bridge/test_bridge_conformance.py` runs the same and fails on any required "
        "scenario of everything.py that does not pass (server-everything is recorded, not "
        "judged: it implements another fixture contract, so the scenarios that call the "
        "suite's own tools, prompts and resources by name cannot pass against it).",
        "",
        "The last column is server-everything on its own Streamable HTTP transport "
        "(`node dist/index.js streamableHttp`), for comparison: what the bridge adds.",
        "",
        "| selection | everything.py via the bridge | server-everything via the bridge "
        "| server-everything, its own HTTP |",
        "|---|---|---|---|",
    ]
    for sel in SELECTIONS:
        if sel.requirements:
            a, b, c = (
                required(ours[sel.title]),
                required(npm[sel.title]),
                required(native[sel.title]),
            )
            what = "required scenarios passing"
        else:
            a, b, c = ours[sel.title].results, npm[sel.title].results, native[sel.title].results
            what = "scenarios passing"
        lines.append(f"| {sel.title}: {what} | {count(a)} | {count(b)} | {count(c)} |")
    for sel in SELECTIONS:
        lines += ["", f"#### {sel.title} (bridge)", ""]
        lines += [
            "| scenario | scored | everything.py | server-everything | server-everything, "
            "its own HTTP |",
            "|---|---|---|---|---|",
        ]
        lines += scenario_rows([r[sel.title].by_scenario() for r in (ours, npm, native)])
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    """``document`` with its bridge part replaced by ``section`` (appended, under a
    ``## Bridge`` heading, when the document has none yet)."""
    start = document.find(BEGIN)
    end = document.find(END)
    if start < 0 or end < start:
        tail = "" if document.endswith("\n") or not document else "\n"
        return (
            f"{document}{tail}\n## Bridge\n\n{BEGIN} (python -m tests.bridge.compare "
            f"docs/conformance.md rewrites this part) -->\n{section}{END}\n"
        )
    start = document.index("\n", start) + 1
    return document[:start] + section + document[end:]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else REPO / "docs" / "conformance.md"
    old = target.read_text("utf-8") if target.exists() else ""
    target.write_text(splice(old, render(collect())), "utf-8")
    print(f"wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
