"""Profile the mcpline bench server under load (cProfile, or py-spy when asked).

    .venv/bin/python bench/profile_server.py                 # cProfile, top 30 by own time
    .venv/bin/python bench/profile_server.py --sort cumtime
    .venv/bin/python bench/profile_server.py --py-spy        # needs py-spy (bench extra)

The server runs in its own process, driven by the raw driver with ``--window`` calls in
flight for ``--seconds``. cProfile sees the event-loop thread only (sync tools run on worker
threads); py-spy samples every thread, native frames excluded.
"""

from __future__ import annotations

import argparse
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from driver import Session, Spec  # noqa: E402

BOOT = """
import cProfile, runpy, sys
out, path = sys.argv[1], sys.argv[2]
sys.argv = [path]
prof = cProfile.Profile()
try:
    prof.runcall(runpy.run_path, path, run_name="__main__")
finally:
    prof.dump_stats(out)
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--server", default=str(HERE / "servers" / "mcpline_server.py"))
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--window", type=int, default=100)
    ap.add_argument("--tool", default="echo")
    ap.add_argument("--text", default="hello", help="echo argument")
    ap.add_argument("--sort", default="tottime")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--py-spy", action="store_true", help="sample with py-spy instead")
    ap.add_argument("--uvloop", action="store_true", help="let the server use uvloop")
    args = ap.parse_args(argv)

    env = {"MCPLINE_UVLOOP": "1" if args.uvloop else "0"}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "server.prof")
        if args.py_spy:
            argv_ = [sys.executable, args.server]
        else:
            argv_ = [sys.executable, "-c", BOOT, out, args.server]
        s = Session(Spec("profiled", argv_, env))
        spy = None
        try:
            s.start()
            for _ in range(50):
                s.call(args.tool, {"text": args.text})
            if args.py_spy:
                exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
                flame = str(HERE / "results" / "profile.svg")
                spy = subprocess.Popen(
                    [
                        exe,
                        "record",
                        "--pid",
                        str(s.pid),
                        "--threads",
                        "--rate",
                        "500",
                        "--duration",
                        str(int(args.seconds) + 1),
                        "--output",
                        flame,
                    ],
                    stdout=subprocess.DEVNULL,
                )
                time.sleep(0.5)
            res = s.throughput(args.seconds, args.window, args.tool, {"text": args.text})
            print(
                f"{res['calls']:,.0f} calls, {res['per_s']:,.0f}/s, "
                f"{res['cpu_per_call'] * 1e6:,.1f} µs server CPU per call "
                "(profiler overhead included)"
            )
            if spy is not None:
                spy.wait(timeout=60)
                print(f"py-spy flame graph: {flame}")
            s.close_and_time_exit()
        finally:
            s.kill()
        if not args.py_spy:
            stats = pstats.Stats(out)
            stats.sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
