"""The human check reports quote the server through the terminal rule; JSON stays exact."""

from __future__ import annotations

import io

import pytest

from mcpline.check.model import FAIL, PASS, CheckResult
from mcpline.check.report import summary_line, to_json, write_rich, write_text

HOSTILE = "reply \x1b]52;c;ZXZpbA==\x07 then \x1b[2K\r\u202eevil [/]"
RESULTS = [
    CheckResult("errors.parse-error", "errors", FAIL, "rule (spec: basic/index#messages)", HOSTILE),
    CheckResult("discover.result", "discover", PASS, "rule", HOSTILE),
]
FACTS = {"server": "name\x1b[31m", "era": "dual-era"}
RAW = ("\x1b", "\x07", "\r", "\u202e")


def test_text_report_shows_server_text_escaped() -> None:
    out = io.StringIO()
    write_text(out, RESULTS, FACTS, ["server"], verbose=True)
    text = out.getvalue()
    assert not any(c in text for c in RAW), repr(text)
    assert "\\x1b]52;c;ZXZpbA==\\x07" in text
    assert "\\u202eevil [/]" in text
    assert "name\\x1b[31m" in summary_line(RESULTS, FACTS)


def test_rich_report_shows_server_text_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    write_rich(RESULTS, FACTS, ["server"], verbose=True)
    text = capsys.readouterr().out
    assert not any(c in text for c in RAW), repr(text)
    assert "\\x07" in text and "[/]" in text


def test_json_report_keeps_what_was_seen_exact() -> None:
    checks = to_json(RESULTS, FACTS, ["server"])["checks"]
    assert checks[0]["seen"] == HOSTILE
