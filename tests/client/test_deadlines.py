"""Request deadlines share one timer per session: each request still expires on its own."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from mcpline import Client
from mcpline.client import RequestTimeout

from ..proc import FIXTURES
from .util import Fake, run


def test_each_request_times_out_at_its_own_deadline(tmp_path: Path) -> None:
    """A long deadline armed first must not delay a shorter one set later; later deadlines
    are still honoured after the earliest fired; answered calls are untouched."""
    fake = Fake(tmp_path)
    ended: dict[str, float] = {}

    async def main() -> None:
        async with Client.stdio(**fake.client_kwargs()) as c:
            await c.discover()
            t0 = time.monotonic()

            async def slow(label: str, timeout: float) -> None:
                with pytest.raises(RequestTimeout, match=f"no answer within {timeout:g}s"):
                    await c.call_tool("slow", {}, timeout=timeout)
                ended[label] = time.monotonic() - t0

            long = asyncio.ensure_future(slow("long", 2.0))
            await asyncio.sleep(0.05)  # the 2 s deadline is armed first
            short = asyncio.ensure_future(slow("short", 0.3))
            middle = asyncio.ensure_future(slow("middle", 1.0))
            # Meanwhile calls that are answered come back normally.
            for _ in range(20):
                assert (await c.call_tool("echo", {"n": 1}, timeout=10))["content"]
            await asyncio.gather(long, short, middle)
            # The connection is still usable afterwards.
            assert (await c.call_tool("echo", {}))["content"]

    run(main())
    # Generous upper bounds (a loaded machine); the order is the point.
    assert 0.25 <= ended["short"] < ended["middle"] < ended["long"]
    assert ended["long"] < 20  # each its own deadline, not the 60 s default
    cancelled = [m for m in fake.received() if m.get("method") == "notifications/cancelled"]
    assert len(cancelled) == 3


def test_client_deadline_bounds_the_probe_the_fallback_and_the_requests(tmp_path: Path) -> None:
    """A server that answers nothing: the per-request timeout and the 5 s probe would each
    take longer than the deadline; the deadline ends it, and later requests fail at once."""
    mute = [str(FIXTURES / "timeout_server.py"), "mute"]

    async def main() -> None:
        async with Client.stdio(
            sys.executable, mute, timeout=30, deadline=1.0, close_grace=0.5
        ) as c:
            t0 = time.monotonic()
            with pytest.raises(RequestTimeout, match="deadline of 1s"):
                await c.list_tools()
            assert time.monotonic() - t0 < 4.5  # not the 5 s probe nor the 30 s timeout
            t1 = time.monotonic()
            with pytest.raises(RequestTimeout):
                await c.discover()
            assert time.monotonic() - t1 < 5  # at once, not after the 30 s timeout

    run(main())
