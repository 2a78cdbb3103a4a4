"""Robot Framework helper library for differential.py and atest_differential.py: records
each case's or step's outcome.

`Record Case Result    ${result}` stores the `(status, value)` pair that `Run Keyword And
Ignore Error` returned, with the value converted to JSON the way the rf plugin converts
return values (None -> null, tuples and lists -> arrays, dicts -> objects with str()
keys, bytes -> Latin-1 text, NaN and infinities -> their Python text). Log messages of
the case are captured by a listener in differential.py.
"""

import math

RESULTS = {}
# Steps of atest_differential.py that began, for those that end their test.
STARTED = set()


def to_json(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    if type(value).__module__ == "xml.etree.ElementTree":
        # An element has `items()` (its attributes), but it is an object: shown as
        # the plugin shows an object it holds, by its str().
        return str(value)
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return str(value)


def record(key, status, value):
    RESULTS[key] = {"status": "PASS", "value": to_json(value)} if status == "PASS" else {"status": status, "message": value}


class rf_recorder:
    ROBOT_LIBRARY_SCOPE = "GLOBAL"

    def record_case_result(self, case_id, result):
        record(case_id, *result)

    def begin_step(self, step_id):
        STARTED.add(step_id)

    def record_step_pass(self, step_id, value):
        record(step_id, "PASS", value)

    def record_step_fail(self, step_id, message):
        record(step_id, "FAIL", message)
