"""Robot Framework's pure-Python standard libraries, run inside the evaluator.

The rf plugin implements BuiltIn, String, Collections, DateTime and
OperatingSystem itself; a standard library that is plain Python over the standard
library (XML, on ElementTree) runs here instead, as Robot Framework's own code
through Robot Framework's own library machinery (`TestLibrary`): the keyword names, argument
specs, argument conversion, error messages and log messages are RF's because they
come from RF. The interpreter has no files, no network and no clock of the host's,
so these libraries are as sandboxed as the expressions.

The plugin calls `import_library` once per `Import Library` and `run` for each
keyword; both answer with plain tuples the value encoding carries (wit/0.5.0/
python.wit). `run` names the library by its name and import arguments, so an
interpreter that started again (after a runaway expression) makes the library
again instead of failing. Values without a JSON form (an XML `Element`) stay in the
evaluator's object table and cross as handles, so a parsed tree is parsed once and
later keywords act on the same object, in place.
"""

import contextlib
import importlib
import inspect
import io
import logging

from robot.errors import DataError
from robot.running.resourcemodel import ResourceFile
from robot.running.testlibraries import TestLibrary
from robot.utils import ErrorDetails

# The libraries this module runs. Anything else goes through the host's library
# server or the plugin's own implementations.
RUNS_HERE = ("XML",)

# Imported at build time, so the snapshot holds them (see evaluator.py).
for _name in RUNS_HERE:
    importlib.import_module(f"robot.libraries.{_name}")

# Libraries by (name, import arguments), one instance each, as Robot Framework
# keeps one instance of a global-scope library.
LIBRARIES = {}

# Log messages longer than this are cut, so a keyword that logs a large tree
# cannot make the answer larger than the host accepts.
MAX_MESSAGE = 100_000
MAX_MESSAGES = 1_000


class Capture(logging.Handler):
    """Collects what a keyword logs through `robot.api.logger` while it runs.
    Outside a running RF test that logger writes to Python's `RobotFramework`
    logger, at these numeric levels."""

    LEVELS = ((logging.ERROR, "ERROR"), (logging.WARNING, "WARN"), (logging.INFO, "INFO"),
              (logging.DEBUG, "DEBUG"))

    def __init__(self):
        super().__init__(level=1)
        self.messages = []

    def emit(self, record):
        if len(self.messages) >= MAX_MESSAGES:
            return
        text = str(record.msg) if not record.args else record.getMessage()
        if len(text) > MAX_MESSAGE:
            text = text[: MAX_MESSAGE - 3] + "..."
        level = next((name for number, name in self.LEVELS if record.levelno >= number), "TRACE")
        self.messages.append((level, text))


RF_LOGGER = logging.getLogger("RobotFramework")
RF_LOGGER.propagate = False
RF_LOGGER.setLevel(1)


@contextlib.contextmanager
def captured():
    """Collects the library logger's messages while the block runs."""
    capture = Capture()
    RF_LOGGER.addHandler(capture)
    try:
        yield capture.messages
    finally:
        RF_LOGGER.removeHandler(capture)


def _spec(args):
    """An argument spec in the remote API's form: `name`, `name=default`, `*args`,
    `*` (named-only follow), `**kwargs`."""
    out = []
    defaults = args.defaults
    for name in args.positional:
        out.append(f"{name}={defaults[name]}" if name in defaults else name)
    if args.var_positional:
        out.append("*" + args.var_positional)
    elif args.named_only:
        out.append("*")
    for name in args.named_only:
        out.append(f"{name}={defaults[name]}" if name in defaults else name)
    if args.var_named:
        out.append("**" + args.var_named)
    return out


def _library(name, args):
    """The library `name` imported with `args`, made on first use."""
    key = (name, tuple(args))
    library = LIBRARIES.get(key)
    if library is None:
        # From the class, not by name: RF's importer starts with
        # `importlib.invalidate_caches()`, which needs `importlib.metadata`, a
        # module this interpreter does not have.
        module = importlib.import_module(f"robot.libraries.{name}")
        library = TestLibrary.from_class(getattr(module, name), name=name, args=tuple(args),
                                         create_keywords=True)
        library.instance  # RF makes a global library's instance on first use
        LIBRARIES[key] = library
    return library


def import_library(name, args):
    """Imports library `name` with `args` (the import's arguments as given; RF
    splits `name=value` itself). Answers ("PASS", keywords, messages), each
    keyword (name, spec, short doc, tags), or ("FAIL", RF's message, messages);
    each message is (level, text)."""
    if name not in RUNS_HERE:
        return ("FAIL", f"Library '{name}' does not run in the sandbox.", [])
    with captured() as messages:
        try:
            library = _library(name, args)
        except DataError as error:
            return ("FAIL", error.message, messages)
        except Exception as error:
            details = ErrorDetails(error)
            messages.append(("DEBUG", details.traceback))
            return ("FAIL", f"Importing library '{name}' failed: {details.message}", messages)
    keywords = [(kw.name, _spec(kw.args), kw.short_doc, list(kw.tags)) for kw in library.keywords]
    return ("PASS", keywords, messages)


def run(name, args, keyword, positional, named):
    """Runs `keyword` of library `name` imported with `args`, with the arguments
    the plugin split as RF splits a dynamic library's (`named`: [name, value]
    pairs); RF converts them by the keyword's types and defaults and checks them.
    Answers ("PASS", value, messages) or ("FAIL", message, messages, traceback)."""
    with captured() as messages:
        try:
            library = _library(name, args)
        except Exception as error:
            return ("FAIL", f"Importing library '{name}' failed: {ErrorDetails(error).message}", messages, "")
        kw = next((k for k in library.keywords if k.name == keyword), None)
        if kw is None:
            return ("FAIL", f"No keyword with name '{keyword}' found.", messages, "")
        try:
            args, kwargs = kw.args.resolve(list(positional), dict(named), resolve_named=False)
            method = getattr(library.instance, kw.method_name)
            if (name, kw.name) == ("XML", "Save Xml"):
                return _saved(library.instance, method, args, kwargs, messages)
            value = method(*args, **dict(kwargs))
        except DataError as error:
            return ("FAIL", error.message, messages, "")
        except Exception as error:
            details = ErrorDetails(error)
            return ("FAIL", details.message, messages, details.traceback)
    return ("PASS", value, messages)


def _saved(xml, method, args, kwargs, messages):
    """`Save XML` with no file to write: the interpreter has none. Answers
    ("SAVE", path, the bytes RF's keyword writes, messages), and the plugin writes
    them into a folder the host granted it, or refuses."""
    bound = inspect.signature(method).bind(*args, **dict(kwargs))
    bound.apply_defaults()
    element = xml.get_element(bound.arguments["source"])
    tree = xml.etree.ElementTree(element)
    out = io.BytesIO()
    # As RF's keyword writes with ElementTree: the declaration always.
    tree.write(out, encoding=bound.arguments["encoding"], xml_declaration=True)
    return ("SAVE", str(bound.arguments["path"]), out.getvalue(), messages)


def resource(text, source):
    """Parses resource file `text` (read by the plugin from `source`) with Robot
    Framework's own parser. Answers ("PASS", imports, variables, keywords) or ("FAIL",
    RF's message): imports (type, name, args, alias), variables (name, values,
    separator), keywords (name, arguments in the remote API's form, body as `_body`
    answers it, line, `[Setup]`, `[Teardown]`)."""
    try:
        parsed = ResourceFile.from_string(text)
    except DataError as error:
        return ("FAIL", error.message.replace("'None'", repr(source)))
    imports = [(item.type, item.name, list(item.args), item.alias) for item in parsed.imports]
    variables = [(v.name, list(v.value), v.separator) for v in parsed.variables]
    keywords = [(kw.name, _spec(kw.args), _body(kw.body), kw.lineno, _fixture(kw.has_setup and kw.setup),
                 _fixture(kw.has_teardown and kw.teardown)) for kw in parsed.keywords]
    return ("PASS", imports, variables, keywords)


def _fixture(keyword):
    """A keyword's `[Setup]` or `[Teardown]` as a one-call body; none for none (or
    `NONE`)."""
    return [("KEYWORD", keyword.name, list(keyword.args), [])] if keyword else []


def _body(items):
    """A keyword body as the plugin runs it, each item a tuple led by its type:
    ("KEYWORD", name, args, assign), ("RETURN", values), ("IF", [(branch type,
    condition, body)]), ("FOR", flavor, assign, values, start, mode, fill, body),
    ("WHILE", condition, limit, on_limit, on_limit_message, body), ("TRY",
    [(branch type, patterns, pattern type, assign, body)]), ("VAR", name, values,
    scope, separator), ("GROUP", name, body), ("BREAK",), ("CONTINUE",); ("INVALID", RF's message, line)
    for what RF's parser found wrong, which fails when reached, as in RF; (type,
    line) for anything else."""
    body = []
    for item in items:
        kind = item.type
        error = getattr(item, "error", None)
        if error:
            body.append(("INVALID", error, item.lineno))
        elif kind == "KEYWORD":
            body.append(("KEYWORD", item.name, list(item.args), list(item.assign)))
        elif kind == "RETURN":
            body.append(("RETURN", list(item.values)))
        elif kind == "IF/ELSE ROOT":
            body.append(("IF", [(b.type, b.condition, _body(b.body)) for b in item.body]))
        elif kind == "FOR":
            body.append(("FOR", item.flavor, list(item.assign), list(item.values), item.start, item.mode,
                         item.fill, _body(item.body)))
        elif kind == "WHILE":
            body.append(("WHILE", item.condition, item.limit, item.on_limit, item.on_limit_message,
                         _body(item.body)))
        elif kind == "TRY/EXCEPT ROOT":
            body.append(("TRY", [(b.type, list(b.patterns), b.pattern_type, b.assign, _body(b.body))
                                 for b in item.body]))
        elif kind == "VAR":
            body.append(("VAR", item.name, list(item.value), item.scope, item.separator))
        elif kind == "GROUP":
            body.append(("GROUP", item.name, _body(item.body)))
        elif kind in ("BREAK", "CONTINUE"):
            body.append((kind,))
        else:
            body.append((kind, item.lineno))
    return body
