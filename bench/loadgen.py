"""The HTTP load generator of `bench/http_server.py`: wrk 4.1.0, found or provisioned without root.

`wrk_binary` returns a working ``wrk``, first found: ``wrk`` on ``PATH``; the copy already in
the git-ignored ``<repo>/.cache/wrk/`` (a marker names it); a new copy there, ``apt-get
download`` of Debian's ``wrk`` and of the ``lib*`` packages it needs that the machine lacks
(LuaJIT), unpacked with ``dpkg-deb -x`` and run with ``LD_LIBRARY_PATH`` (as
``tests/redis_server.py`` does for redis-server); as root only, ``apt-get install -y wrk``.

`run_wrk` drives one endpoint with one JSON-RPC body, ``connections`` clients in a closed loop
(each sends its next request when the previous reply has arrived), and returns requests/s,
latency percentiles, replies that were not a 200 carrying the expected text, and wrk's own CPU
time (its headroom: a generator that uses a whole core is the bottleneck, not the server).
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "wrk"
ROOT = CACHE / "root"
MARKER = CACHE / "provisioned.json"


class LoadgenError(RuntimeError):
    """No wrk could be had, or a run failed."""


@dataclass(frozen=True)
class Wrk:
    path: Path
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment (``LD_LIBRARY_PATH`` for a provisioned copy)."""
    version: str = ""

    def environ(self) -> dict[str, str]:
        env = dict(os.environ)
        for key, value in self.env.items():
            env[key] = f"{value}{os.pathsep}{env[key]}" if env.get(key) else value
        return env


def _run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=300, stdin=subprocess.DEVNULL
    )
    if proc.returncode != 0:
        raise LoadgenError(f"exit {proc.returncode}: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return proc.stdout


def _checked(wrk: Wrk) -> Wrk:
    """``wrk`` with its version, if it runs (``wrk -v`` exits 1 after printing it)."""
    proc = subprocess.run(
        [str(wrk.path), "-v"], capture_output=True, text=True, env=wrk.environ(), timeout=30
    )
    found = re.search(r"wrk (\S+)", proc.stdout + proc.stderr)
    if not found:
        raise LoadgenError(f"{wrk.path} -v said {proc.stdout + proc.stderr!r}")
    return Wrk(wrk.path, wrk.env, found.group(1))


def _installed(package: str) -> bool:
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True
    ).stdout
    return out.strip() == "install ok installed"


def _download() -> Wrk:
    """``apt-get download`` wrk and the libraries it lacks; unpack them into the cache."""
    shutil.rmtree(CACHE, ignore_errors=True)
    debs = CACHE / "debs"
    debs.mkdir(parents=True)
    wanted = ["wrk"]
    depends = _run(["apt-cache", "depends", "--no-recommends", "--no-suggests", "wrk"])
    groups: list[list[str]] = []
    alternative = False
    for line in depends.splitlines()[1:]:
        found = re.match(r"\s*(\|?)(?:Pre)?Depends: (\S+)", line)
        if found:
            name = found.group(2).strip("<>").split(":")[0]
            if alternative:
                groups[-1].append(name)
            else:
                groups.append([name])
            alternative = found.group(1) == "|"
    for alternatives in groups:
        if not any(_installed(n) for n in alternatives) and alternatives[0].startswith("lib"):
            wanted.append(alternatives[0])
    _run(["apt-get", "-q", "download", *wanted], cwd=debs)
    for deb in sorted(debs.glob("*.deb")):
        _run(["dpkg-deb", "-x", str(deb), str(ROOT)])
    libs = sorted({str(p.parent) for p in ROOT.rglob("*.so*")})
    wrk = _checked(Wrk(ROOT / "usr" / "bin" / "wrk", {"LD_LIBRARY_PATH": os.pathsep.join(libs)}))
    MARKER.write_text(json.dumps({"path": str(wrk.path), "env": wrk.env}))
    return wrk


def wrk_binary() -> Wrk:
    """A working wrk (see the module docstring); `LoadgenError` if there is none."""
    on_path = shutil.which("wrk")
    if on_path:
        return _checked(Wrk(Path(on_path)))
    try:
        data = json.loads(MARKER.read_text())
        return _checked(Wrk(Path(data["path"]), dict(data["env"])))
    except (OSError, ValueError, KeyError, LoadgenError):
        pass
    try:
        return _download()
    except (LoadgenError, OSError) as exc:
        if os.geteuid() != 0:
            raise LoadgenError(f"cannot provision wrk: {exc}") from None
        _run(["apt-get", "install", "-y", "-q", "wrk"])
        return _checked(Wrk(Path(shutil.which("wrk") or "/usr/bin/wrk")))


LUA = r"""
wrk.method = "POST"
wrk.body = __BODY__
__HEADERS__
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0 end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, __EXPECT__, 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local b = 0
  for _, t in ipairs(threads) do b = b + t:get("bad") end
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bad":%d,"errors":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%.1f,"max_us":%d}\n',
    summary.requests, summary.duration, b, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean,
    latency.max))
end
"""


def _lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string of ASCII is a valid Lua string literal


def script(body: bytes, headers: dict[str, str], expect: str) -> str:
    """The Lua script that POSTs ``body`` with ``headers`` and counts replies that are not a
    200 containing ``expect``."""
    lines = "\n".join(
        f"wrk.headers[{_lua_string(k)}] = {_lua_string(v)}" for k, v in headers.items()
    )
    return (
        LUA.replace("__BODY__", _lua_string(body.decode("ascii")))
        .replace("__HEADERS__", lines)
        .replace("__EXPECT__", _lua_string(expect))
    )


@dataclass
class WrkResult:
    requests: int
    seconds: float
    bad: int
    """Replies that were not a 200 with the expected text, plus socket errors."""
    p50: float
    p90: float
    p99: float
    mean: float
    cpu: float
    """wrk's own CPU seconds (user + system) during the run."""

    @property
    def per_s(self) -> float:
        return self.requests / self.seconds

    @property
    def generator_load(self) -> float:
        """wrk's CPU as a fraction of one core over the run (1.0: it was the bottleneck)."""
        return self.cpu / self.seconds


def _children_cpu() -> float:
    """CPU seconds of this process's children that have been waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_wrk(
    wrk: Wrk,
    url: str,
    body: bytes,
    headers: dict[str, str],
    expect: str,
    *,
    connections: int,
    seconds: float,
    threads: int = 1,
    during: Callable[[], None] | None = None,
) -> WrkResult:
    """One wrk run; ``during`` is called once, mid-run (to sample the server, say)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(script(body, headers, expect))
        lua = fh.name
    argv = [
        str(wrk.path),
        f"-t{min(threads, connections)}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",  # whole seconds only
        "--timeout",
        "30s",
        "-s",
        lua,
        url,
    ]
    try:
        before = _children_cpu()
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=wrk.environ(), text=True
        )
        if during is not None:
            time.sleep(seconds / 2)
            during()
        out, err = proc.communicate(timeout=seconds + 60)
        cpu = _children_cpu() - before  # wrk is the only child reaped meanwhile
    finally:
        os.unlink(lua)
    found = re.search(r"WRKJSON (\{.*\})", out)
    if proc.returncode != 0 or not found:
        raise LoadgenError(f"wrk failed ({proc.returncode}): {out[-1500:]}\n{err[-1500:]}")
    data = json.loads(found.group(1))
    return WrkResult(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        bad=data["bad"] + data["errors"],
        p50=data["p50_us"] / 1e6,
        p90=data["p90_us"] / 1e6,
        p99=data["p99_us"] / 1e6,
        mean=data["mean_us"] / 1e6,
        cpu=cpu,
    )


__all__ = ["LoadgenError", "Wrk", "WrkResult", "run_wrk", "script", "wrk_binary"]
