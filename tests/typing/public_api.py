"""Type-checked (not run) by test_public_api_types: decorators keep the function's type."""

from __future__ import annotations

import sys

from mcpline import Context, Server

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


@server.resource_template("doc://{name}")
async def doc(name: str) -> bytes:
    return name.encode()


@server.completion(prompt="named", argument="topic")
def complete_topic(value: str) -> list[str]:
    return [value]


async def use() -> None:
    assert_type(bare(1), str)
    assert_type(await called(1, Context.__new__(Context)), float)
    assert_type(plain_prompt("t"), str)
    assert_type(named_prompt("t"), list[dict[str, str]])
    assert_type(note("n"), str)
    assert_type(await doc("n"), bytes)
    assert_type(complete_topic("v"), list[str])
