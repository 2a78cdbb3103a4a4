"""One Robot Framework library, served over RF's remote library interface.

stephost runs this as `PYTHON -c <this file>` in the operator's Python environment,
one process per session, library and import arguments (`capabilities/rf_library`).

Protocol with the host:
- input from the environment: STEPHOST_RF_LIBRARY = {"name": ..., "args": [...]}
  (JSON; RF import arguments, `name=value` allowed) and STEPHOST_RF_TOKEN, the only
  URL path the server answers under;
- one line of JSON on stdout, then stdout is closed: {"ready": {"port", "name",
  "keywords"}} once listening on 127.0.0.1, or {"error": "<RF's message>"} and exit 1
  when the library does not import (exit 2 for a bad environment);
- or, with STEPHOST_RF_VARIABLES = {"path": ..., "args": [...]} instead: one line
  {"variables": [[name, value], ...]} (the variable file as RF's own importer reads
  it) or {"error": "<RF's message>"}, then exit;
- XML-RPC at POST /TOKEN: get_library_information, get_keyword_names,
  get_keyword_arguments, get_keyword_documentation, get_keyword_tags,
  get_keyword_types and run_keyword, with robotremoteserver's result struct.

The library is imported and its keywords are run by Robot Framework's own code
(TestLibrary, the keywords' argument specs and converters, RF's error reporting), so
names, argument errors, conversion and failure messages are RF's. Keywords run one at a
time in the main thread, where RF's logger API is effective.
"""

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from xmlrpc.client import Binary, dumps
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

MAX_BODY = 16 * 1024 * 1024
MAX_RESULT = 16 * 1024 * 1024
# How far a returned object is opened up into a struct, and how wide.
MAX_DEPTH = 3
MAX_MEMBERS = 100
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def say(message, code=None):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
    if code is not None:
        sys.exit(code)


def read_input():
    try:
        spec = json.loads(os.environ["STEPHOST_RF_LIBRARY"])
        name, args = spec["name"], [str(a) for a in spec.get("args", [])]
        token = os.environ["STEPHOST_RF_TOKEN"]
    except (KeyError, TypeError, ValueError) as e:
        say({"error": f"stephost library server: bad input ({type(e).__name__}: {e})"}, 2)
    if not token or "/" in token:
        say({"error": "stephost library server: bad token"}, 2)
    return name, args, token


def data_error(error):
    """RF's message, without the traceback and the PYTHONPATH listing it appends."""
    return str(error).split("\nTraceback")[0].split("\nPYTHONPATH:")[0].strip()


def import_library(name, args):
    try:
        from robot.errors import DataError
        from robot.running.testlibraries import TestLibrary
    except ImportError as e:
        say({"error": f"Importing library '{name}' failed: Robot Framework 7 is not installed in {sys.executable} ({e})"}, 2)
    try:
        return TestLibrary.from_name(name, args=args or None, create_keywords=True)
    except DataError as e:
        say({"error": data_error(e)}, 1)
    except Exception as e:  # A library whose import code itself blows up.
        say({"error": f"Importing library '{name}' failed: {type(e).__name__}: {e}"}, 1)


def argument_spec(spec):
    """RF's remote argument strings: `a`, `b=default`, `*varargs`, `c`, `**kwargs`."""
    def one(name):
        return f"{name}={spec.defaults[name]}" if name in spec.defaults else name

    items = [one(n) for n in list(spec.positional_only) + list(spec.positional_or_named)]
    if spec.var_positional:
        items.append(f"*{spec.var_positional}")
    elif spec.named_only:
        items.append("*")
    items += [one(n) for n in spec.named_only]
    if spec.var_named:
        items.append(f"**{spec.var_named}")
    return items


class Output:
    """What a keyword printed and logged, in order, as RF's `*LEVEL* message` lines."""

    def __init__(self):
        self.buffer = io.StringIO()

    def log(self, msg, level="INFO", html=False, console=None):
        from robot.utils import safe_str

        if not isinstance(msg, str):
            msg = safe_str(msg)
        level = "HTML" if html else str(level).upper()
        if level not in ("TRACE", "DEBUG", "INFO", "HTML", "WARN", "ERROR", "CONSOLE"):
            raise ValueError(f"Invalid log level '{level}'.")
        if level == "CONSOLE":
            level = "INFO"
        self.start_line()
        self.buffer.write(f"*{level}* {msg}\n")

    def start_line(self):
        text = self.buffer.getvalue()
        if text and not text.endswith("\n"):
            self.buffer.write("\n")

    def text(self):
        return self.buffer.getvalue().rstrip("\n")


class Capture:
    """Routes stdout, stderr, RF's logger API and `logging` into one Output for a call."""

    def __init__(self):
        self.current = None
        from robot.output import librarylogger

        librarylogger.write = self.write
        import logging

        class Handler(logging.Handler):
            def emit(handler, record):
                level = {"CRITICAL": "ERROR", "WARNING": "WARN", "NOTSET": "INFO"}.get(record.levelname, record.levelname)
                self.write(handler.format(record), level if level in ("DEBUG", "INFO", "WARN", "ERROR") else "INFO")

        root = logging.getLogger()
        root.addHandler(Handler())
        root.setLevel(logging.DEBUG)

    def write(self, msg, level="INFO", html=False, console=None):
        if self.current is not None:
            self.current.log(msg, level, html, console)

    def __enter__(self):
        self.current = Output()
        self.saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = self.current.buffer
        return self.current

    def __exit__(self, *exc):
        sys.stdout, sys.stderr = self.saved
        self.current = None


def convert(value, depth=0):
    """A return value in XML-RPC's types, as robotremoteserver converts them, except
    that an object becomes a struct of its public attributes (so `${result.stdout}`
    works on Process's result, `${resp.status_code}` on a response). A value that
    will not be opened up (its iteration or attributes raise) becomes its text."""
    try:
        return convert_value(value, depth)
    except Exception:
        try:
            return str(value)
        except Exception:
            return f"<{type(value).__name__} object>"


def convert_value(value, depth):
    if value is None:
        return ""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if INT_MIN <= value <= INT_MAX else str(value)
    if isinstance(value, (str, float)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return Binary(bytes(value))
    if isinstance(value, Mapping):
        return {str(k): convert(v, depth + 1) for k, v in list(value.items())[:100_000]}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [convert(v, depth + 1) for v in value]
    if depth >= MAX_DEPTH:
        return str(value)
    members = {}
    for name in dir(value):
        if name.startswith("_") or len(members) >= MAX_MEMBERS:
            continue
        try:
            member = getattr(value, name)
        except Exception:
            continue
        if callable(member) or isinstance(member, type):
            continue
        members[name] = convert(member, depth + 1)
    return members or str(value)


class Library:
    """The remote API over one TestLibrary."""

    def __init__(self, lib):
        self.lib = lib
        self.keywords = {kw.name: kw for kw in lib.keywords}
        self.capture = Capture()

    def find(self, name):
        if name in self.keywords:
            return self.keywords[name]
        from robot.utils import normalize

        wanted = normalize(name, ignore="_")
        for kw in self.lib.keywords:
            if normalize(kw.name, ignore="_") == wanted:
                return kw
        return None

    def get_keyword_names(self):
        return list(self.keywords)

    def get_library_information(self):
        info = {
            name: {
                "args": argument_spec(kw.args),
                "doc": kw.doc or "",
                "tags": list(kw.tags),
                "types": [],
            }
            for name, kw in self.keywords.items()
        }
        info["__intro__"] = {"doc": self.lib.doc or ""}
        info["__init__"] = {"doc": self.lib.init.doc or "", "args": argument_spec(self.lib.init.args)}
        return info

    def get_keyword_arguments(self, name):
        if name == "__init__":
            return argument_spec(self.lib.init.args)
        kw = self.find(name)
        return argument_spec(kw.args) if kw else ["*args"]

    def get_keyword_documentation(self, name):
        if name == "__intro__":
            return self.lib.doc or ""
        if name == "__init__":
            return self.lib.init.doc or ""
        kw = self.find(name)
        return (kw.doc or "") if kw else ""

    def get_keyword_tags(self, name):
        kw = self.find(name)
        return list(kw.tags) if kw else []

    def get_keyword_types(self, name):
        # The server converts arguments itself, with the keyword's own types.
        return []

    def run_keyword(self, name, args, kwargs=None):
        result = {"status": "FAIL", "output": "", "return": "", "error": "", "traceback": ""}
        with self.capture as output:
            try:
                kw = self.find(name)
                if kw is None:
                    raise RuntimeError(f"No keyword with name '{name}' found.")
                positional, named = kw.resolve_arguments(list(args), dict(kwargs or {}))
                value = kw.method(*positional, **dict(named))
                result["return"] = convert(value)
                if len(dumps((result["return"],), allow_none=False)) > MAX_RESULT:
                    raise RuntimeError(f"The return value is over {MAX_RESULT // (1024 * 1024)} MiB.")
                result["status"] = "PASS"
            except Exception as error:
                from robot.utils import ErrorDetails

                details = ErrorDetails(error)
                result["return"] = ""
                result["error"] = details.message
                result["traceback"] = details.traceback
                if getattr(error, "ROBOT_CONTINUE_ON_FAILURE", False):
                    result["continuable"] = True
                if getattr(error, "ROBOT_EXIT_ON_FAILURE", False):
                    result["fatal"] = True
        result["output"] = output.text()
        return result

    def stop_remote_server(self):
        # The host stops this process; a session may not.
        return False

    def _dispatch(self, method, params):
        if method.startswith("_") or not hasattr(self, method) or method in ("find", "capture", "lib", "keywords"):
            raise Exception(f'method "{method}" is not supported')
        return getattr(self, method)(*params)


def handler_for(token):
    class Handler(SimpleXMLRPCRequestHandler):
        rpc_paths = (f"/{token}", f"/{token}/", f"/{token}/RPC2")

        def do_POST(self):
            try:
                length = int(self.headers.get("content-length", "0"))
            except ValueError:
                length = -1
            if length < 0 or length > MAX_BODY:
                self.send_response(413)
                self.send_header("Content-length", "0")
                self.end_headers()
                return
            super().do_POST()

        def log_message(self, *args):
            pass

    return Handler


# Processes the library started. RF's Process library starts each in a session
# of its own (so that `Terminate Process` can end its group), which takes them out
# of this process's group, the one the host kills: this process ends them itself.
STARTED = []


def track_started_processes():
    original = subprocess.Popen.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        STARTED[:] = [p for p in STARTED if p.returncode is None]
        STARTED.append(self)

    subprocess.Popen.__init__ = init


def stop(*_):
    for process in list(STARTED):
        try:
            # Only a process not yet reaped: its pid cannot be someone else's.
            if process.poll() is not None:
                continue
            # A leader's whole group (what it started too), else the process.
            if os.getpgid(process.pid) == process.pid:
                os.killpg(process.pid, signal.SIGKILL)
            else:
                os.kill(process.pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(0)


def exit_with_parent():
    parent = os.getppid()
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            stop()


def to_json(value, depth=0):
    """A variable's value for the rf plugin, typed: JSON's null, booleans, strings,
    64-bit integers, finite floats and arrays (lists) as they are; anything else a
    one-key object: {"dict": [[key, value], ...], "dot": bool} (dot: RF's DotDict),
    {"tuple": [...]}, {"bytes": latin-1 text}, {"int": digits}, {"float": "nan"},
    {"text": str(value)} for the rest."""
    from robot.utils import DotDict

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else {"int": str(value)}
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else {"float": repr(value)}
    if depth < 32:
        if isinstance(value, Mapping):
            items = [[to_json(k, depth + 1), to_json(v, depth + 1)] for k, v in value.items()]
            return {"dict": items, "dot": isinstance(value, DotDict)}
        if isinstance(value, list):
            return [to_json(v, depth + 1) for v in value]
        if isinstance(value, tuple):
            return {"tuple": [to_json(v, depth + 1) for v in value]}
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value).decode("latin-1")}
    return {"text": str(value)}


def load_variables(spec):
    try:
        path, args = spec["path"], [str(a) for a in spec.get("args", [])]
    except (KeyError, TypeError) as e:
        say({"error": f"stephost variable loader: bad input ({type(e).__name__}: {e})"}, 2)
    try:
        from robot.errors import DataError
        from robot.variables.filesetter import VariableFileSetter
    except ImportError as e:
        say({"error": f"Robot Framework 7 is not installed in {sys.executable} ({e})"}, 2)
    if not os.path.isfile(path):
        say({"error": f"Variable file '{path}' does not exist."}, 1)
    capture = io.StringIO()
    saved = sys.stdout
    sys.stdout = capture
    try:
        # The loop over files is RF's, so is every message (`Processing variable
        # file '...' failed: ...`).
        variables = VariableFileSetter(None)._import_if_needed(path, args or None)
    except DataError as e:
        sys.stdout = saved
        say({"error": data_error(e)}, 1)
    finally:
        sys.stdout = saved
    text = json.dumps({"variables": [[str(name), to_json(value)] for name, value in variables]})
    if len(text) > MAX_RESULT:
        say({"error": f"Variable file '{path}' has more than {MAX_RESULT // (1024 * 1024)} MiB of variables."}, 1)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    sys.exit(0)


def main():
    variables = os.environ.get("STEPHOST_RF_VARIABLES")
    if variables is not None:
        try:
            spec = json.loads(variables)
        except ValueError as e:
            say({"error": f"stephost variable loader: bad input ({e})"}, 2)
        load_variables(spec)
    name, args, token = read_input()
    track_started_processes()
    # The host asks with SIGTERM, then kills the group a moment later.
    signal.signal(signal.SIGTERM, stop)
    threading.Thread(target=exit_with_parent, daemon=True).start()
    lib = import_library(name, args)
    server = SimpleXMLRPCServer(
        ("127.0.0.1", 0), requestHandler=handler_for(token), logRequests=False, allow_none=True, encoding="UTF-8"
    )
    server.register_instance(Library(lib))
    say({"ready": {"port": server.server_address[1], "name": lib.name, "keywords": len(lib.keywords)}})
    # Nobody reads stdout from here on: a library printing outside a call must not
    # fill a pipe and hang.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    server.serve_forever()


main()
