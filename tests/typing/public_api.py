"""Type-checked (not run) by test_public_api_types: decorators keep the function's type."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from mcpline import ContentBlock, Context, ElicitResult, Server, image
from mcpline.client import Client
from mcpline.server.context import Ready

if sys.version_info >= (3, 11):
    from typing import assert_type
else:
    from typing_extensions import assert_type

server = Server("typed")


@server.tool
def bare(x: int) -> str:
    return str(x)


@server.tool(title="Called", annotations={"read_only": True})
async def called(x: int, ctx: Context) -> float:
    return x / 2


@server.prompt
def plain_prompt(topic: str) -> str:
    return topic


@server.prompt("named", title="Named")
def named_prompt(topic: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": topic}]


@server.resource("note://{name}")
def note(name: str) -> str:
    return name


@server.resource("doc://{name}")
async def doc(name: str) -> bytes:
    return name.encode()


@server.completion(prompt="named", argument="topic")
def complete_topic(value: str) -> list[str]:
    return [value]


@server.tool(strict=True)
def strict_tool(x: int) -> ContentBlock:
    return image(b"", "image/png")


@dataclass
class App:
    name: str


@dataclass
class Profile:
    age: int


async def fetch() -> list[int]:
    return [1]


async def context_api(ctx: Context[App], bare: Context) -> None:
    assert_type(ctx.lifespan, App)
    assert_type(bare.lifespan, Any)
    assert_type(ctx.info("sync form"), Ready[None])
    assert_type(await ctx.info("awaited form"), None)
    assert_type(await ctx.report_progress(1, 2), None)
    assert_type(await ctx.log("notice", {"k": 1}), None)
    assert_type(ctx.elicit("Age?", int), ElicitResult[int])
    assert_type(await ctx.elicit("You?", Profile), ElicitResult[Profile])
    assert_type(ctx.elicit("Form", {"name": str}), ElicitResult[Any])
    assert_type((await ctx.elicit("Age?", int)).data, int | None)
    assert_type(ctx.remember("n", lambda: 3), int)
    assert_type(await ctx.remember("xs", fetch), list[int])
    assert_type(ctx.state_as(Profile), Profile | None)
    assert_type(ctx.client_name, str)
    assert_type(ctx.resource_uri, str | None)


async def use() -> None:
    assert_type(bare(1), str)
    assert_type(await called(1, Context.__new__(Context)), float)
    assert_type(plain_prompt("t"), str)
    assert_type(named_prompt("t"), list[dict[str, str]])
    assert_type(note("n"), str)
    assert_type(await doc("n"), bytes)
    assert_type(complete_topic("v"), list[str])
    assert_type(strict_tool(1), dict[str, Any])


configured = Server(
    "configured", "1.0", title="T", page_size=10, legacy=False, state_ttl=60.0, task_quota="tasks=5"
)


@configured.tool(name="n", title="t", hidden=True, task="optional", scopes=["a"], strict=None)
def options_tool(x: int) -> int:
    return x


@configured.resource("r://x", mime_type="text/plain", ttl_ms=5, cache_scope="public", scopes=["a"])
def options_resource() -> str:
    return "x"


@configured.prompt(name="p", argument_titles={"topic": "Topic"}, scopes=["a"])
def options_prompt(topic: str) -> str:
    return topic


def clients() -> None:
    assert_type(Client.memory(configured, timeout=3.0, era="modern"), Client)
    assert_type(Client.stdio("cmd", env={}, watchdog=False, timeout=1.0), Client)
    assert_type(Client.connect("unix:/x.sock", token="t" * 20, eager=True), Client)
    assert_type(Client.http("http://127.0.0.1:1/mcp", connect_timeout=1.0, verify=False), Client)
    assert_type(options_tool(1), int)
