"""Prompts with typed arguments, and completion of their values, over stdio.

Serve it with ``python examples/prompts.py`` (or ``mcpline run examples/prompts.py``) and try::

    mcpline prompts -- python examples/prompts.py
    mcpline get explain --args '{"language": "go", "function": "make", "words": "50"}' \\
        -- python examples/prompts.py

* Prompt arguments travel as strings and reach the function converted to the annotated type
  (``words: int``); a value that does not convert is -32602. An argument with a default is
  optional; ``Annotated[str, "..."]`` gives it a description.
* ``completion/complete`` suggests values while the user types: ``complete_language`` and
  ``complete_function`` are completers (``context`` holds the arguments already chosen), and
  ``tone``, a ``Literal``, completes itself with its choices.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcpline import Server, assistant, user

server = Server("prompts-example", version="1.0.0")

FUNCTIONS: dict[str, list[str]] = {
    "go": ["append", "len", "make"],
    "python": ["enumerate", "len", "sorted", "zip"],
    "rust": ["clone", "iter", "unwrap"],
}


@server.prompt(title="Code review")
def review(
    code: Annotated[str, "The code to review"],
    language: Annotated[str, "Its programming language"],
    tone: Annotated[Literal["gentle", "direct"], "How to phrase the review"] = "gentle",
) -> list[dict[str, Any]]:
    """Ask for a review of a piece of code."""
    return [
        user(f"Review this {language} code. Be {tone}.\n\n{code}"),
        assistant("Here is my review, point by point:"),
    ]


@server.prompt(title="Explain a function")
def explain(
    language: Annotated[str, "A programming language"],
    function: Annotated[str, "A built-in function of that language"],
    words: Annotated[int, "The longest answer wanted, in words"] = 100,
) -> str:
    """Ask for an explanation of a built-in function."""
    return f"Explain {language}'s {function} in at most {words} words."


@server.completion(prompt="review", argument="language")
@server.completion(prompt="explain", argument="language")
def complete_language(value: str) -> list[str]:
    """The languages that start with what was typed."""
    return [lang for lang in FUNCTIONS if lang.startswith(value.lower())]


@server.completion(prompt="explain", argument="function")
def complete_function(value: str, context: dict[str, str]) -> list[str]:
    """The functions of the language already chosen (of every language if none is)."""
    language = context.get("language")
    if language in FUNCTIONS:
        names = FUNCTIONS[language]
    else:
        names = sorted({name for names in FUNCTIONS.values() for name in names})
    return [name for name in names if name.startswith(value)]


if __name__ == "__main__":
    server.run()
