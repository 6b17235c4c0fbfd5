"""Resources: fixed URIs, URI templates with typed variables, and change notifications.

A notebook kept in memory, served over stdio: ``python examples/resources.py`` (or
``mcpline run examples/resources.py``). Try it from the command line::

    mcpline resources -- python examples/resources.py
    mcpline read notes:///ideas/garden -- python examples/resources.py
    mcpline read notes://by-number/2 -- python examples/resources.py

* ``notes://about`` (a constant) and ``notes://index`` (a function) are static resources,
  listed by ``resources/list``.
* A URI with ``{variables}`` is a template (``resources/templates/list``): the variables of the
  requested URI reach the function pct-decoded and converted to the annotated types, so
  ``notes://by-number/{number}`` gets an ``int`` (``by-number/two`` is "resource not found").
* ``{name}`` is one path segment: a ``/``, even written ``%2F``, never reaches the function.
  ``{+path}`` may hold ``/``: ``notes:///{+path}`` reads ``ideas/garden``. (To turn such a
  value into a file path, use ``safe_path``: see examples/files.py.)
* ``write_note`` changes a note and calls ``server.resource_updated(uri)``: every
  ``subscriptions/listen`` subscribed to that URI gets ``notifications/resources/updated``.
"""

from __future__ import annotations

from mcpline import ResourceNotFoundError, Server, UriTemplate

server = Server("notebook", version="1.0.0")

# The templates, kept as objects so that URIs are built with the same pct-encoding rules
# (for not-found errors and change notifications).
NOTE = UriTemplate("notes:///{+path}")
FOLDER = UriTemplate("notes://folder/{name}")
BY_NUMBER = UriTemplate("notes://by-number/{number}")

NOTES: dict[str, str] = {
    "todo": "Water the plants.",
    "ideas/garden": "Grow tomatoes on the balcony.",
    "ideas/kitchen": "Bake bread on Sundays.",
}

server.add_resource(
    "notes://about",
    "A notebook kept in memory. Notes are named like paths: ideas/garden.",
    name="about",
)


@server.resource("notes://index", mime_type="application/json")
def index() -> dict[str, list[str]]:
    """The names of every note, in order."""
    return {"notes": sorted(NOTES)}


@server.resource(str(NOTE), mime_type="text/plain")
def note(path: str) -> str:
    """One note, by its full name (which may contain ``/``)."""
    if path not in NOTES:
        raise ResourceNotFoundError(NOTE.expand(path=path))
    return NOTES[path]


@server.resource(str(FOLDER), mime_type="application/json")
def folder(name: str) -> dict[str, list[str]]:
    """The notes directly in one folder (``name`` is a single path segment)."""
    inside = sorted(n for n in NOTES if n.startswith(name + "/"))
    if not inside:
        raise ResourceNotFoundError(FOLDER.expand(name=name))
    return {"folder": [n.removeprefix(name + "/") for n in inside]}


@server.resource(str(BY_NUMBER), mime_type="text/plain")
def by_number(number: int) -> str:
    """The note at position ``number`` (from 1) of the index."""
    names = sorted(NOTES)
    if not 1 <= number <= len(names):
        raise ResourceNotFoundError(BY_NUMBER.expand(number=number))
    return NOTES[names[number - 1]]


@server.tool()
def write_note(path: str, text: str) -> str:
    """Create or replace the note ``path``; subscribers of its URI are told."""
    is_new = path not in NOTES
    NOTES[path] = text
    uri = NOTE.expand(path=path)
    server.resource_updated(uri)
    if is_new:
        server.resource_updated("notes://index")
    return uri


if __name__ == "__main__":
    server.run()
