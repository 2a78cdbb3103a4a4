"""The host's Python evaluator: Robot Framework's own `evaluate_expression`, run by
CPython compiled to a WebAssembly component (componentize-py), one interpreter per
plugin instance.

The rf plugin evaluates what its own evaluator covers and asks this one for the
rest (`math.ceil(1.001)`, `lambda`, type objects, `bytearray`), so an expression
means what it means in Robot Framework: the same variables as objects (`$name`),
the same automatic module imports, the same failure messages.

Values cross as JSON text (the encoding in wit/0.5.0/python.wit). What the
encoding has no form for (an object of a class an expression made, a `Decimal`)
stays here, in this interpreter's object table, and crosses as its handle with the
views of it the plugin's keywords read (`str`, `repr`, `bool`, `len`, the items of
a small collection); an expression that names it later gets the object back.

componentize-py runs this module's top level once at build time and snapshots the
interpreter, so everything imported here costs nothing per call or per instance.
"""

import collections.abc
import datetime
import importlib
import json
import numbers
import os
import sys
import types

# Imported here so componentize-py's build-time snapshot holds them: an expression
# that names one (RF imports modules on demand) then finds it already loaded.
# `robot` is there for `robot.__version__`.
PRELOADED = (
    "builtins", "collections", "decimal", "fractions", "functools", "itertools", "math",
    "operator", "os", "random", "re", "string", "typing", "robot",
)
for _name in PRELOADED:
    importlib.import_module(_name)

from robot.errors import DataError
from robot.utils import DotDict, type_name
from robot.variables.evaluation import evaluate_expression

# Robot Framework's standard libraries that run in this interpreter (XML), in the
# snapshot like the modules above; the rf plugin calls them through expressions
# naming this module.
importlib.import_module("stephost_libraries")

import wit_world
from componentize_py_types import Err

# Nesting deeper than this is refused both ways: the host's JSON and the plugin's
# values are bounded in depth too.
MAX_DEPTH = 64
INT64 = range(-(2**63), 2**63)
# The integer digits CPython converts by default; past that `str(int)` raises.
sys.set_int_max_str_digits(4300)


# Objects without a form of their own, by handle, oldest first. The table is
# bounded so a loop that makes objects cannot fill the interpreter's memory; an
# object pushed out is reported as gone when an expression names it.
MAX_OBJECTS = 4096
MAX_VIEW_ITEMS = 10_000
OBJECTS = {}
HANDLES = {}  # id(object) -> handle, for the objects in OBJECTS
# Handles name this interpreter: a restarted one (after a trap) has a new prefix,
# so a stale handle is reported as gone instead of naming another object. It is
# drawn on first use, not at import, which componentize-py runs at build time.
PREFIX = None
COUNTER = 0


class Unencodable(Exception):
    pass


def hold(value):
    """The handle of `value`, entering it in the table if it is new."""
    global PREFIX, COUNTER
    handle = HANDLES.get(id(value))
    if handle is not None:
        return handle
    if PREFIX is None:
        PREFIX = os.urandom(8).hex()
    COUNTER += 1
    handle = "%s-%d" % (PREFIX, COUNTER)
    OBJECTS[handle] = value
    HANDLES[id(value)] = handle
    while len(OBJECTS) > MAX_OBJECTS:
        oldest = next(iter(OBJECTS))
        del HANDLES[id(OBJECTS.pop(oldest))]
    return handle


def held(handle):
    try:
        return OBJECTS[handle]
    except (KeyError, TypeError):
        raise Unencodable(
            "an object made by an earlier expression is no longer held by the evaluator "
            "(it keeps the latest %d, and none across a restart)" % MAX_OBJECTS
        )


def safe(view, value, default):
    """`view(value)`, or `default` when the object's own method raises."""
    try:
        return view(value)
    except Exception:
        return default


def exact_number(value):
    """The int or float a number of another type equals exactly, else None."""
    if not isinstance(value, numbers.Number):
        return None
    plain = complex(value)
    if plain.imag:
        return None
    real = plain.real
    if real != real or real in (float("inf"), float("-inf")):
        return None
    plain = int(real) if real.is_integer() else real
    if plain != value or (isinstance(plain, int) and plain not in INT64):
        return None
    return plain


def object_form(value, depth):
    cls = type(value)
    form = {
        "handle": hold(value),
        "class": cls.__name__,
        "module": getattr(cls, "__module__", "builtins") or "builtins",
        "type_name": safe(type_name, value, cls.__name__),
        "hashable": safe(lambda v: hash(v) is not None, value, False),
        "value_eq": cls.__eq__ is not object.__eq__,
        "number": safe(exact_number, value, None),
        "str": safe(str, value, "<unprintable %s object>" % cls.__name__),
        "repr": safe(repr, value, "<unprintable %s object>" % cls.__name__),
        "truthy": safe(bool, value, True),
        "len": safe(len, value, None),
    }
    # Items are sent for collections small enough to copy (a `range(10**9)` is a
    # Sequence too); iterators are not read, as that would consume them.
    small = isinstance(form["len"], int) and form["len"] <= MAX_VIEW_ITEMS
    if small and isinstance(value, collections.abc.Mapping):
        form["mapping"] = safe(
            lambda v: [[encode(k, depth + 2), encode(v[k], depth + 2)] for k in v],
            value,
            None,
        )
    elif small and isinstance(value, collections.abc.Collection):
        form["items"] = safe(
            lambda v: [encode(item, depth + 2) for item in v], value, None
        )
    return {"object": {k: v for k, v in form.items() if v is not None}}


def decode(value, depth=0):
    if depth > MAX_DEPTH:
        raise Unencodable("a value nests deeper than %d levels" % MAX_DEPTH)
    if isinstance(value, list):
        return [decode(v, depth + 1) for v in value]
    if not isinstance(value, dict):
        return value
    if "dict" in value:
        items = [(decode(k, depth + 1), decode(v, depth + 1)) for k, v in value["dict"]]
        return DotDict(items) if value.get("dot") else dict(items)
    ((kind, body),) = value.items()
    if kind == "tuple":
        return tuple(decode(v, depth + 1) for v in body)
    if kind == "bytes":
        return body.encode("latin-1")
    if kind == "bytearray":
        return bytearray(body.encode("latin-1"))
    if kind == "int":
        return int(body)
    if kind == "float":
        return float(body)
    if kind == "datetime":
        return datetime.datetime(*body)
    if kind == "date":
        return datetime.date(*body)
    if kind == "timedelta":
        days, seconds, micros = body
        return datetime.timedelta(days=days, seconds=seconds, microseconds=micros)
    if kind == "text":
        return body
    if kind == "object":
        return held(body.get("handle"))
    raise Unencodable("unknown value form %r" % kind)


def encode(value, depth=0):
    if depth > MAX_DEPTH:
        raise Unencodable("a value nests deeper than %d levels" % MAX_DEPTH)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if value in INT64 else {"int": str(value)}
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return {"float": repr(value)}
        return value
    if isinstance(value, bytes):
        return {"bytes": value.decode("latin-1")}
    if isinstance(value, bytearray):
        return {"bytearray": bytes(value).decode("latin-1")}
    if isinstance(value, list):
        return [encode(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [encode(v, depth + 1) for v in value]}
    if isinstance(value, (dict, types.MappingProxyType)):
        items = [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]
        return {"dict": items, "dot": isinstance(value, DotDict)}
    if isinstance(value, datetime.datetime) and value.tzinfo is None:
        return {
            "datetime": [
                value.year,
                value.month,
                value.day,
                value.hour,
                value.minute,
                value.second,
                value.microsecond,
            ]
        }
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return {"date": [value.year, value.month, value.day]}
    if isinstance(value, datetime.timedelta):
        return {"timedelta": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType)):
        # Nothing a keyword reads in these but their text, and holding every
        # module or function an expression names would fill the table.
        return {"text": str(value)}
    return object_form(value, depth)


class Store:
    """The part of RF's VariableStore that evaluation reads: `$name` lookups."""

    def __init__(self, values):
        self.values = values

    def __contains__(self, name):
        return name in self.values

    def __getitem__(self, name):
        return self.values[name]

    def __iter__(self):
        return iter(self.values)

    def as_dict(self, decoration=True):
        return dict(self.values)


class Variables:
    def __init__(self, store):
        self.store = store


MUTABLE = (list, dict, bytearray)


def changeable(value):
    """Whether an expression can change `value` in place, as far as the plugin sees."""
    return isinstance(value, MUTABLE) or id(value) in HANDLES


class WitWorld(wit_world.WitWorld):
    def evaluate(self, expression, variables, namespace, modules):
        try:
            pairs = json.loads(variables)
            values = {name: decode(value) for name, value in pairs}
            # An object's views are compared, not its handle.
            before = {
                name: json.dumps(encode(values[name]))
                for name, _ in pairs
                if id(values[name]) in HANDLES
            }
            before.update(
                (name, json.dumps(value))
                for name, value in pairs
                if isinstance(values[name], MUTABLE)
            )
            extra = {name: decode(value) for name, value in json.loads(namespace)}
        except (ValueError, TypeError, Unencodable) as error:
            raise Err("the evaluator got values it cannot read: %s" % error)
        try:
            result = evaluate_expression(
                expression, Variables(Store(values)), modules or None, extra
            )
        except DataError as error:
            raise Err(str(error))
        try:
            truthy = bool(result)
        except Exception as error:  # a __bool__ that raises, as RF would see it
            raise Err(
                "Evaluating expression %r failed: %s: %s"
                % (expression, type(error).__name__, error)
            )
        try:
            changed = []
            for name, value in values.items():
                if name in before and changeable(value):
                    now = encode(value)
                    if json.dumps(now) != before[name]:
                        changed.append([name, now])
            return json.dumps(
                {"value": encode(result), "truthy": truthy, "changed": changed}
            )
        except (Unencodable, RecursionError, ValueError) as error:
            raise Err(
                "Evaluating expression %r failed: its value cannot be returned: %s"
                % (expression, error)
            )
