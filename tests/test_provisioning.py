"""The provisioning of the tests' external tools (`tests.provisioning`, used by
`tests.conformance.provision` and `tests.redis_server`): retried on network errors, verified,
and a failure that says what failed and how to retry. Against a fake on 127.0.0.1 that fails
on purpose, never the network."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import shutil
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import provisioning
from .conformance import provision
from .provisioning import ProvisionError, fingerprint, intact, retrying, run

FETCH = (
    "import sys, urllib.request\n"
    "data = urllib.request.urlopen(sys.argv[1], timeout=30).read()\n"
    "open(sys.argv[2], 'wb').write(data)\n"
)
"""A download as the provisioning runs one: a child process that prints urllib's error."""


class Flaky(http.server.ThreadingHTTPServer):
    """Answers ``status`` to the first ``failures`` requests, then serves ``files``."""

    def __init__(self, failures: int, status: int = 503) -> None:
        super().__init__(("127.0.0.1", 0), FlakyHandler)
        self.failures = failures
        self.status = status
        self.files: dict[str, bytes] = {}
        self.seen: list[tuple[int, str]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class FlakyHandler(http.server.BaseHTTPRequestHandler):
    server: Flaky

    def do_GET(self) -> None:
        with self.server.lock:
            failing = self.server.failures > 0
            self.server.failures -= failing
        body = self.server.files.get(self.path.split("?")[0])
        status = self.server.status if failing else 200 if body is not None else 404
        self.server.seen.append((status, self.path))
        payload = body if status == 200 and body is not None else b"{}"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def flaky(request: pytest.FixtureRequest) -> Iterator[Flaky]:
    failures, status = getattr(request, "param", (2, 503))
    server = Flaky(failures, status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def download(url: str, into: Path) -> None:
    run([sys.executable, "-c", FETCH, url, str(into)], f"downloading {url}", timeout=60)


def test_a_download_that_fails_twice_on_the_network_is_retried_with_backoff(
    flaky: Flaky, tmp_path: Path
) -> None:
    content = b"the tool" * 1000
    flaky.files["/tool"] = content
    target = tmp_path / "tool"
    slept: list[float] = []
    retrying(lambda: download(flaky.url + "/tool", target), "the tool", "retry me", slept.append)
    assert [status for status, _ in flaky.seen] == [503, 503, 200]
    assert slept == list(provisioning.BACKOFF)
    assert fingerprint(target) == {
        "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(),
    }


@pytest.mark.parametrize("flaky", [(99, 503)], indirect=True)
def test_a_network_that_keeps_failing_says_what_failed_and_how_to_retry(
    flaky: Flaky, tmp_path: Path
) -> None:
    slept: list[float] = []
    with pytest.raises(ProvisionError) as caught:
        retrying(
            lambda: download(flaky.url + "/tool", tmp_path / "tool"),
            "installing the tool",
            "python -m tool --force",
            slept.append,
        )
    message = str(caught.value)
    assert message.startswith("installing the tool failed 3 times on the network")
    assert "HTTP Error 503" in message
    assert message.endswith("To retry: python -m tool --force")
    assert caught.value.transient and len(flaky.seen) == 3 and len(slept) == 2


@pytest.mark.parametrize("flaky", [(0, 200)], indirect=True)
def test_a_failure_that_is_not_the_network_is_not_retried(flaky: Flaky, tmp_path: Path) -> None:
    slept: list[float] = []
    with pytest.raises(ProvisionError) as caught:
        retrying(
            lambda: download(flaky.url + "/missing", tmp_path / "tool"),
            "installing the tool",
            "python -m tool --force",
            slept.append,
        )
    assert flaky.seen == [(404, "/missing")] and slept == []
    assert "HTTP Error 404" in str(caught.value) and not caught.value.transient
    assert str(caught.value).endswith("To retry: python -m tool --force")


def tiny_package(url: str) -> dict[str, bytes]:
    """A registry's files for ``tiny-pkg@1.0.0``: its packument and its tarball."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        manifest = json.dumps({"name": "tiny-pkg", "version": "1.0.0"}).encode()
        info = tarfile.TarInfo("package/package.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
    tarball = buffer.getvalue()
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    packument = {
        "name": "tiny-pkg",
        "dist-tags": {"latest": "1.0.0"},
        "versions": {
            "1.0.0": {
                "name": "tiny-pkg",
                "version": "1.0.0",
                "dist": {"tarball": f"{url}/tiny-pkg/-/tiny-pkg-1.0.0.tgz", "integrity": integrity},
            }
        },
    }
    return {"/tiny-pkg": json.dumps(packument).encode(), "/tiny-pkg/-/tiny-pkg-1.0.0.tgz": tarball}


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm, as the provisioning does")
def test_npm_install_against_a_registry_that_fails_twice(
    flaky: Flaky, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flaky.files.update(tiny_package(flaky.url))
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", flaky.url + "/")
    monkeypatch.setenv("NPM_CONFIG_FETCH_RETRIES", "0")  # npm's own retries would hide ours
    monkeypatch.setenv("NPM_CONFIG_CACHE", str(tmp_path / "npm-cache"))
    monkeypatch.setattr(provisioning, "BACKOFF", (0.0, 0.0))
    prefix = tmp_path / "prefix"
    provision.npm_install(prefix, "tiny-pkg@1.0.0")
    installed = json.loads((prefix / "node_modules" / "tiny-pkg" / "package.json").read_text())
    assert installed["version"] == "1.0.0"
    assert [status for status, _ in flaky.seen][:3] == [503, 503, 200]


def test_a_changed_or_truncated_cache_is_not_trusted(tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    tool.write_bytes(b"x" * 4096)
    recorded = fingerprint(tool)
    assert intact(tool, recorded)
    tool.write_bytes(b"x" * 1000)  # half a download
    assert not intact(tool, recorded)
    other = tmp_path / "other"
    other.write_bytes(b"y" * 4096)  # the same size, other bytes
    assert not intact(other, recorded)
    assert not intact(tmp_path / "gone", recorded)
    assert not intact(tool, {"size": 1000})  # a marker that vouches for nothing


def test_a_marker_whose_file_changed_means_install_again(tmp_path: Path) -> None:
    entry = tmp_path / "index.js"
    entry.write_text("console.log('the suite')\n")
    provision.write_marker(tmp_path, "pkg", "1.0.0", artefact=fingerprint(entry))
    assert provision.is_current(tmp_path, "pkg", "1.0.0", entry)
    assert not provision.is_current(tmp_path, "pkg", "2.0.0", entry)
    entry.write_text("console.log('half of')")
    assert not provision.is_current(tmp_path, "pkg", "1.0.0", entry)
    (tmp_path / provision.MARKER).unlink()  # an install that never finished
    entry.write_text("console.log('the suite')\n")
    assert not provision.is_current(tmp_path, "pkg", "1.0.0", entry)
