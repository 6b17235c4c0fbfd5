"""Ask the client for input in the middle of a tool call (MRTR), over stdio.

Start it as ``python examples/mrtr.py`` (or ``mcpline run examples/mrtr.py``) from a client that
answers elicitations: ``mcpline call greet -- python examples/mrtr.py`` asks on the terminal
(``--input`` gives the answers on a pipe); with mcpline's client in Python::

    def on_elicit(params: dict) -> dict:  # params: message, requestedSchema
        return {"action": "accept", "content": {"name": "Ada"}}

    async with Client.stdio(sys.executable, ["examples/mrtr.py"], on_elicit=on_elicit) as c:
        print(await c.call_tool("greet"))

* ``greet`` asks one question with ``ctx.ask``: the first call raises `InputRequired` for it,
  the client's retry carries the answer and ``ctx.ask`` returns it.
* ``book_table`` asks two questions in two rounds, the second depending on the first answer.
  A retry carries only the answers to the latest questions, so what was learnt in round one
  travels in ``InputRequired(requests, state)`` and comes back as ``ctx.state`` (the framework
  signs it; a tampered state never reaches this code).

A modern (2026-07-28) client gets ``input_required`` results and retries; a legacy one
(``initialize``) is sent real ``elicitation/create`` requests. The handlers are the same.
"""

from __future__ import annotations

from mcpline import Context, InputRequest, InputRequired, Server, elicit

server = Server("mrtr-example", version="1.0.0")

FREE_TIMES: dict[str, list[str]] = {
    "friday": ["19:00", "21:30"],
    "saturday": ["12:30", "20:00"],
}


@server.tool()
def greet(ctx: Context) -> str:
    """Ask for the user's name, then greet them."""
    answer = ctx.ask("who", elicit("What is your name?", {"name": str}))
    if answer["action"] != "accept":
        return "Hello, whoever you are!"
    return f"Hello, {answer['content']['name']}!"


def choose(message: str, field: str, choices: list[str]) -> InputRequest:
    """A form with one required field whose value must be one of ``choices``."""
    prop = {"type": "string", "enum": choices}
    schema = {"type": "object", "properties": {field: prop}, "required": [field]}
    return elicit(message, schema)


def which_day() -> InputRequest:
    return choose("Which day?", "day", list(FREE_TIMES))


def what_time(day: str) -> InputRequest:
    return choose(f"What time on {day}?", "time", FREE_TIMES[day])


@server.tool()
def book_table(ctx: Context, guests: int) -> str:
    """Book a table for ``guests``: asks for a day, then for a time still free that day."""
    day = ctx.state["day"] if ctx.state else None
    if day is None:
        # Question 1: ctx.ask raises InputRequired until a retry carries the answer.
        answer = ctx.ask("day", which_day())
        if answer["action"] != "accept":
            return "No booking made."
        day = answer["content"]["day"]
        # Question 2 depends on answer 1: ask it and keep the day in the request's state.
        raise InputRequired({"time": what_time(day)}, state={"day": day})
    # The retry with answer 2: the day is back in ctx.state, and the time was checked against
    # that day's choices before ctx.ask returns it.
    answer = ctx.ask("time", what_time(day))
    if answer["action"] != "accept":
        return "No booking made."
    return f"Booked a table for {guests} on {day} at {answer['content']['time']}."


if __name__ == "__main__":
    server.run()
