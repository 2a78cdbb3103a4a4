"""The plugin's verbs.

This module never imports the component bindings (`wit_world`), so
`python -m unittest` runs it under plain CPython; app.py adapts it to the
contract.
"""

import json

NAME = "{{name}}"
VERSION = "0.1.0"
DESCRIPTION = "Greets people by name and counts how often it was asked to count."
# False: over MCP the tools are named `<plugin>_<verb>`, so they cannot clash
# with another plugin's `greet`.
BARE_TOOL_NAMES = False

SCHEMA = "https://json-schema.org/draft/2020-12/schema"


class Failure(Exception):
    """A failure the caller should see as a failed step.

    `code` is one of the contract's codes (`invalid-input`, `not-found`, ...)
    or a kebab-case code of your own. Any other exception is reported as
    `failed`.
    """

    def __init__(self, code, message, *, input_fired=True, details=None):
        super().__init__(message)
        self.code = code
        self.message = message
        # Say False only when you can prove nothing reached the outside world:
        # the host decides whether a retry is safe by it.
        self.input_fired = input_fired
        self.details = "" if details is None else json.dumps(details)


class State:
    """What one instance remembers. The host keeps one instance per session,
    so this lives as long as the session does."""

    def __init__(self):
        self.counted = 0


def greet(args, state):
    name = args["name"]
    # A schema cannot say "not only spaces", so that is checked here.
    if not name.strip():
        raise Failure(
            "invalid-input",
            "`name` is blank: give the name of someone to greet",
            input_fired=False,
            details={"field": "name"},
        )
    return {"greeting": f"Hello, {name}!"}


def count(args, state):
    state.counted += 1
    return {"count": state.counted}


class Verb:
    def __init__(self, run, description, input, output=None, acts_on_world=False):
        self.run = run
        self.description = description
        self.input = input
        self.output = output
        self.acts_on_world = acts_on_world


# In the order they are listed. The host checks `input` before a verb runs,
# so `run` only sees inputs that match it.
VERBS = {
    "greet": Verb(
        greet,
        'Greets someone by name. Returns {"greeting": "Hello, NAME!"}.',
        input={
            "$schema": SCHEMA,
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1, "description": "Who to greet."}},
            "required": ["name"],
            "additionalProperties": False,
        },
        output={
            "$schema": SCHEMA,
            "type": "object",
            "properties": {"greeting": {"type": "string"}},
            "required": ["greeting"],
        },
    ),
    "count": Verb(
        count,
        'Counts how many times it has run in this session, starting at 1. Returns {"count": N}.',
        input={"$schema": SCHEMA, "type": "object", "properties": {}, "additionalProperties": False},
        output={
            "$schema": SCHEMA,
            "type": "object",
            "properties": {"count": {"type": "integer", "minimum": 1}},
            "required": ["count"],
        },
    ),
}
