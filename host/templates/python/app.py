"""The component's entry point: adapts verbs.py to the `tool` interface of
stephost:plugin@0.5.0. You should not need to change this file."""

import json
import traceback

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log, types

import verbs

# Module level, not on `Tool`: the bindings may make a new `Tool` for every
# call, while the module lives as long as the instance.
_state = verbs.State()

_CODES = {
    "invalid-input": types.FailureCode_InvalidInput,
    "not-found": types.FailureCode_NotFound,
    "world-moved": types.FailureCode_WorldMoved,
    "timeout": types.FailureCode_Timeout,
    "denied": types.FailureCode_Denied,
    "unsupported": types.FailureCode_Unsupported,
    "failed": types.FailureCode_Failed,
}


def _failure(code, message, input_fired, details):
    kind = _CODES.get(code)
    return types.Failure(
        code=kind() if kind else types.FailureCode_Other(code),
        message=message,
        input_fired=input_fired,
        details=details,
        classification=None,
        recovery=[],
    )


def _guarded(run):
    # The bindings return a `result`'s error only when it is raised as
    # `Err(failure)`; any other exception traps the instance and loses its
    # message. So every exception from a verb becomes a failure here.
    try:
        return run()
    except Err:
        raise
    except verbs.Failure as e:
        raise Err(_failure(e.code, e.message, e.input_fired, e.details))
    except Exception as e:
        message = f"{type(e).__name__}: {e}"
        log.log(log.Level.ERROR, traceback.format_exc())
        raise Err(_failure("failed", message, True, ""))


class Tool(exports.Tool):
    def describe(self):
        return types.PluginInfo(
            name=verbs.NAME,
            version=verbs.VERSION,
            description=verbs.DESCRIPTION,
            bare_tool_names=verbs.BARE_TOOL_NAMES,
            verbs=[
                types.VerbInfo(
                    name=name,
                    description=verb.description,
                    input_schema=json.dumps(verb.input),
                    output_schema=json.dumps(verb.output) if verb.output else "",
                    acts_on_world=verb.acts_on_world,
                    checked=False,
                )
                for name, verb in verbs.VERBS.items()
            ],
        )

    def invoke(self, verb, input):
        def run():
            if verb not in verbs.VERBS:
                raise verbs.Failure("invalid-input", f"no verb `{verb}` in {verbs.NAME}", input_fired=False)
            value = verbs.VERBS[verb].run(json.loads(input), _state)
            # An empty value means null to the host.
            return types.Output(value="" if value is None else json.dumps(value), content=[])

        return _guarded(run)

    def check(self, verb, input):
        # No verb is `checked`, so the host never asks; answering ok is enough.
        return None
