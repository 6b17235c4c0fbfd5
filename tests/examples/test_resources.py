"""examples/resources.py through the raw driver (in memory): static resources, templates with
typed variables, ``{+path}`` against ``{name}``, and ``resource_updated`` reaching a subscribed
listen."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ..proc import EXAMPLES, ServerProcess

pytestmark = pytest.mark.driver("memory")

NOT_FOUND = -32602
ACK = "notifications/subscriptions/acknowledged"
UPDATED = "notifications/resources/updated"


@pytest.fixture
def notes(spawn: Callable[..., ServerProcess]) -> ServerProcess:
    return spawn(EXAMPLES / "resources.py")


def read(p: ServerProcess, uri: str) -> dict[str, Any]:
    return p.request("resources/read", {"uri": uri})


def content(p: ServerProcess, uri: str) -> dict[str, Any]:
    r = read(p, uri)
    assert "result" in r, r
    (entry,) = r["result"]["contents"]
    assert entry["uri"] == uri
    return dict(entry)


def not_found(p: ServerProcess, uri: str) -> dict[str, Any]:
    r = read(p, uri)
    assert "result" not in r, r
    assert r["error"]["code"] == NOT_FOUND and r["error"]["data"] == {"uri": uri}, r
    return dict(r["error"])


def test_static_resources_and_templates_are_listed(notes: ServerProcess) -> None:
    listed = notes.request("resources/list")["result"]["resources"]
    assert [r["uri"] for r in listed] == ["notes://about", "notes://index"]
    templates = notes.request("resources/templates/list")["result"]["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == [
        "notes:///{+path}",
        "notes://folder/{name}",
        "notes://by-number/{number}",
    ]
    assert templates[0]["description"] == "One note, by its full name (which may contain ``/``)."


def test_static_reads(notes: ServerProcess) -> None:
    about = content(notes, "notes://about")
    assert about["mimeType"] == "text/plain" and about["text"].startswith("A notebook")
    index = content(notes, "notes://index")
    assert index["mimeType"] == "application/json"
    assert json.loads(index["text"]) == {"notes": ["ideas/garden", "ideas/kitchen", "todo"]}


def test_a_reserved_variable_carries_slashes(notes: ServerProcess) -> None:
    assert content(notes, "notes:///ideas/garden")["text"] == "Grow tomatoes on the balcony."
    assert content(notes, "notes:///ideas%2Fkitchen")["text"] == "Bake bread on Sundays."
    assert content(notes, "notes:///todo")["text"] == "Water the plants."
    not_found(notes, "notes:///ideas/nothing")


def test_a_segment_variable_never_holds_a_slash(notes: ServerProcess) -> None:
    folder = content(notes, "notes://folder/ideas")
    assert json.loads(folder["text"]) == {"folder": ["garden", "kitchen"]}
    not_found(notes, "notes://folder/nothing")
    # ideas/garden is a note, not a folder: a decoded '/' does not fit {name} at all.
    not_found(notes, "notes://folder/ideas%2Fgarden")
    not_found(notes, "notes://folder/ideas/garden")


def test_a_typed_variable_is_converted(notes: ServerProcess) -> None:
    assert content(notes, "notes://by-number/1")["text"] == "Grow tomatoes on the balcony."
    assert content(notes, "notes://by-number/3")["text"] == "Water the plants."
    not_found(notes, "notes://by-number/4")
    error = not_found(notes, "notes://by-number/two")
    assert "does not fit template" in error["message"]


def notifications_until_quiet(p: ServerProcess, msg: dict[str, Any]) -> list[dict[str, Any]]:
    """Send ``msg`` and return every notification written until the server has answered it and
    a later ``server/discover`` (whatever its updates caused has been written by then)."""
    p.send(msg)
    resp, seen = p.read_until(msg["id"])
    assert "result" in resp, resp
    probe = p.request_msg("server/discover")
    p.send(probe)
    return seen + p.read_until(probe["id"])[1]


def test_writing_a_note_notifies_its_subscribers(notes: ServerProcess) -> None:
    watched = ["notes:///todo", "notes://index"]
    listen = notes.request_msg(
        "subscriptions/listen", {"notifications": {"resourceSubscriptions": watched}}
    )
    notes.send(listen)
    ack = notes.read()
    assert ack["method"] == ACK and ack["params"]["notifications"]["resourceSubscriptions"]

    def write(path: str, text: str) -> list[str]:
        call = notes.request_msg(
            "tools/call", {"name": "write_note", "arguments": {"path": path, "text": text}}
        )
        seen = notifications_until_quiet(notes, call)
        return [n["params"]["uri"] for n in seen if n.get("method") == UPDATED]

    assert write("todo", "Water the plants twice.") == ["notes:///todo"]
    assert content(notes, "notes:///todo")["text"] == "Water the plants twice."
    # A new note changes the index; its own URI has no subscriber.
    assert write("ideas/music", "Learn the cello.") == ["notes://index"]
    assert json.loads(content(notes, "notes://index")["text"])["notes"][2] == "ideas/music"
    assert write("ideas/garden", "Grow beans.") == []
