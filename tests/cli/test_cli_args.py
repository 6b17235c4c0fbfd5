"""Server selection arguments of the client CLI: bad input is exit 2 with one clear line."""

from __future__ import annotations

import pytest

from .test_cli import cli, one_line_error


@pytest.mark.parametrize("port", ["\u0663", "\u00b2", "\uff18\uff10"])
def test_non_ascii_digits_are_not_a_port(port: str) -> None:
    # "٣" would silently have meant port 3; "²" crashed int() with an unrelated message.
    proc = cli("tools", "--server", f"tcp:127.0.0.1:{port}")
    assert proc.returncode == 2
    assert "bad address" in one_line_error(proc)


def test_name_without_config_is_refused_whatever_else_is_given() -> None:
    proc = cli("tools", "--name", "x", "--server", "tcp:127.0.0.1:9")
    assert proc.returncode == 2
    assert "--name needs --config" in one_line_error(proc)
