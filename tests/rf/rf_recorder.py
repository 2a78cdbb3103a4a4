"""Robot Framework helper library for differential.py: records each case's outcome.

`Record Case Result    ${result}` stores the `(status, value)` pair that `Run Keyword And
Ignore Error` returned, with the value converted to JSON the way the rf plugin converts
return values (None -> null, tuples and lists -> arrays, dicts -> objects with str()
keys, bytes -> Latin-1 text, NaN and infinities -> their Python text). Log messages of
the case are captured by a listener in differential.py.
"""

import math

RESULTS = {}


def to_json(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return str(value)


class rf_recorder:
    ROBOT_LIBRARY_SCOPE = "GLOBAL"

    def record_case_result(self, case_id, result):
        status, value = result
        if status == "PASS":
            RESULTS[case_id] = {"status": "PASS", "value": to_json(value)}
        else:
            RESULTS[case_id] = {"status": "FAIL", "message": value}
