"""The sans-I/O framing layer, without any process."""

from __future__ import annotations

import json
import random

import pytest

from mcpline.wire import PREFIX_KEEP, SUFFIX_KEEP, LineBuffer, Oversized, encode


def feed_all(buf: LineBuffer, chunks: list[bytes]) -> list[bytes | Oversized]:
    out: list[bytes | Oversized] = []
    for c in chunks:
        out += buf.feed(c)
    return out


def test_complete_lines_and_partial_tail() -> None:
    buf = LineBuffer()
    assert buf.feed(b'{"a":1}\n{"b":2}\n{"c"') == [b'{"a":1}', b'{"b":2}']
    assert buf.buffered == 4
    assert buf.feed(b":3}\n") == [b'{"c":3}']
    assert buf.buffered == 0


@pytest.mark.parametrize("seed", range(20))
def test_any_chunk_boundaries_give_the_same_lines(seed: int) -> None:
    rng = random.Random(seed)
    msgs = [json.dumps({"id": i, "t": "x" * rng.randrange(0, 300)}).encode() for i in range(50)]
    stream = b"".join(m + (b"\r\n" if i % 3 == 0 else b"\n") for i, m in enumerate(msgs))
    cuts = sorted(rng.sample(range(1, len(stream)), 40))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    assert feed_all(LineBuffer(), chunks) == msgs
    # Byte by byte, too.
    assert feed_all(LineBuffer(), [stream[i : i + 1] for i in range(len(stream))]) == msgs


def test_crlf_stripped_once_blank_lines_skipped() -> None:
    buf = LineBuffer()
    data = b'\n\r\n   \n\t\r\n{"a":1}\r\n\n{"b":2}\r\r\n'
    assert buf.feed(data) == [b'{"a":1}', b'{"b":2}\r']


def test_only_newline_splits() -> None:
    """U+2028, U+2029, a lone \\r and other separators never split a line."""
    line = '{"t":"a\u2028b\u2029c\rd\x0be\x0cf\x1cg\x85h"}'.encode()
    assert LineBuffer().feed(line + b"\n") == [line]


def test_eof_flushes_an_unterminated_line() -> None:
    buf = LineBuffer()
    assert buf.feed(b'{"a":1}\n{"b":') == [b'{"a":1}']
    assert buf.eof() == [b'{"b":']
    assert buf.eof() == []
    buf.feed(b"  \r")
    assert buf.eof() == []


def test_oversized_line_discarded_with_bounded_memory_and_stream_continues() -> None:
    limit = 1000
    buf = LineBuffer(limit)
    head = b'{"jsonrpc":"2.0","id":"big","params":"'
    out = buf.feed(head)
    peak = buf.buffered
    for _ in range(5000):  # 5 MB in 1 kB chunks, never more than the limit held
        out += buf.feed(b"x" * 1000)
        peak = max(peak, buf.buffered)
    out += buf.feed(b'","tail":1}\n{"ok":true}\n')
    assert peak <= limit + PREFIX_KEEP + SUFFIX_KEEP
    big, ok = out
    assert isinstance(big, Oversized)
    assert big.size == len(head) + 5_000_000 + len(b'","tail":1}')
    assert big.prefix.startswith(head) and len(big.prefix) <= PREFIX_KEEP
    assert big.suffix.endswith(b'","tail":1}') and len(big.suffix) <= SUFFIX_KEEP
    assert ok == b'{"ok":true}'


def test_oversized_in_one_chunk_and_at_eof() -> None:
    buf = LineBuffer(10)
    out = buf.feed(b"a" * 11 + b"\nshort\n" + b"b" * 20)
    assert isinstance(out[0], Oversized) and out[0].size == 11 and out[1] == b"short"
    end = buf.eof()
    assert isinstance(end[0], Oversized) and end[0].size == 20
    # Exactly at the limit is fine.
    assert LineBuffer(10).feed(b"c" * 10 + b"\n") == [b"c" * 10]


def test_oversized_across_pieces() -> None:
    buf = LineBuffer(10)
    assert buf.feed(b"abcdef") == []
    out = buf.feed(b"ghijk\nz\n")
    assert isinstance(out[0], Oversized) and out[0].size == 11 and out[0].prefix == b"abcdefghijk"
    assert out[1] == b"z"


def test_invalid_limit() -> None:
    with pytest.raises(ValueError):
        LineBuffer(0)


@pytest.mark.parametrize(
    "value",
    [
        "line\nbreak\r\n",
        "\u2028\u2029",
        "\x00\x1f\x7f",
        "emoji \U0001f600 and \u4e2d",
        "lone \ud800 surrogate",
        {"nested": ["a\nb", {"c": "\u2028"}]},
    ],
)
def test_encode_is_one_line(value: object) -> None:
    raw = encode({"jsonrpc": "2.0", "id": 1, "result": {"v": value}})
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    assert b"\r" not in raw and b"\xe2\x80\xa8" not in raw and b"\xe2\x80\xa9" not in raw
    assert b" " not in raw.replace(b"emoji ", b"").replace(b" and ", b"").replace(
        b"lone ", b""
    ).replace(b" surrogate", b"")  # compact
    decoded = json.loads(raw)
    if isinstance(value, str) and "\ud800" not in value:
        assert decoded["result"]["v"] == value


def test_encode_non_finite_floats_are_null() -> None:
    raw = encode({"a": float("nan"), "b": float("inf")})
    assert raw == b'{"a":null,"b":null}\n'


def test_lone_surrogates_become_replacement_characters_a_strict_reader_accepts() -> None:
    from mcpline import jsonrpc

    raw = encode({"jsonrpc": "2.0", "id": 1, "result": {"v": "a\ud800b", "\udfff": ["\ud83d"]}})
    msg = jsonrpc.parse(raw[:-1])
    assert isinstance(msg, jsonrpc.Response)
    assert msg.result == {"v": "a\ufffdb", "\ufffd": ["\ufffd"]}
    pair = encode({"v": "\ud83d\ude00"})
    assert json.loads(pair) == {"v": "\U0001f600"}
