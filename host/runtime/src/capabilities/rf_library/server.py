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
- the process forks at once and stays as the keeper of everything the library
  starts (see "Processes" below); SIGTERM to it ends all of that;
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


# --- Processes (the host's side: capabilities/processes.rs) ---------------------------
#
# Every process of a session carries STEPHOST_PROCS=<tenant>.<session>.<server>. This
# process forks at once: the parent stays behind as the keeper, a child subreaper that
# runs no library code, and the child serves the library. Whatever the library starts
# stays below the keeper however it forks (double forks and setsid() included: an
# orphan re-parents to the nearest subreaper), and the keeper ends all of it when the
# library process exits, when the host asks (SIGTERM) and when the host dies. Each
# subprocess.Popen of the library (RF's Start Process and Run Process, SeleniumLibrary's
# driver) is charged to the session's and the tenant's caps before it starts.

TAG_VAR = "STEPHOST_PROCS"
CAPS_VAR = "STEPHOST_PROCS_CAPS"
# The folder the host made for this process (its working directory, HOME and
# TMPDIR): the keeper removes it when it is done, as the host may be gone by then.
WORKDIR_VAR = "STEPHOST_RF_WORKDIR"
PR_SET_CHILD_SUBREAPER = 36
# How often the keeper checks that the host still runs.
KEEPER_TICK = 0.2


def become_subreaper():
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        one, zero = ctypes.c_ulong(1), ctypes.c_ulong(0)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, one, zero, zero, zero) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    except Exception as e:  # Not Linux, no ctypes: the host's own sweep remains.
        sys.stderr.write(f"stephost: cannot keep the library's processes below this one: {e}\n")


def process_table():
    """{pid: (ppid, zombie, tag)} of every process /proc shows."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            zombie, ppid = fields[0] in (b"Z", b"X"), int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
        tag = None
        if not zombie:
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    environ = f.read()
            except OSError:
                environ = b""
            for entry in environ.split(b"\0"):
                if entry.startswith(TAG_VAR.encode() + b"="):
                    tag = entry[len(TAG_VAR) + 1 :].decode("ascii", "replace")
                    break
        table[int(name)] = (ppid, zombie, tag)
    return table


def below(table, roots):
    """The live processes below `roots` (not the roots themselves)."""
    children = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        for kid in children.get(todo.pop(), ()):
            if kid not in found and not table[kid][1]:
                found.add(kid)
                todo.append(kid)
    return found


def within(tag, scope):
    return tag == scope or tag.startswith(scope + ".")


def members(table, scope):
    """The live processes of `scope` (tagged with it, and what is below those),
    as the host counts them."""
    tagged = {pid for pid, (_, zombie, tag) in table.items() if not zombie and tag and within(tag, scope)}
    return tagged | below(table, tagged)


def end_everything_below():
    """Stops, then kills, every process below this one, round after round until none
    is left (a process forking while it is killed leaves no child); reaps them."""
    me = os.getpid()
    for _ in range(50):
        targets = below(process_table(), [me])
        if not targets:
            break
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in targets:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        time.sleep(0.02)
        reap()


def reap():
    """Waits for every child that exited: {pid: exit code} (128 + N for signal N)."""
    done = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        code = os.waitstatus_to_exitcode(status)
        done[pid] = code if code >= 0 else 128 - code
    return done


def keep(work):
    """Forks: the child runs `work()`, this process becomes its keeper (see above)
    and never returns."""
    become_subreaper()
    workdir = os.environ.pop(WORKDIR_VAR, None)
    watched = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    # Blocked before the fork, so a SIGTERM at any moment is seen by sigtimedwait.
    signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    host = os.getppid()
    child = os.fork()
    if child == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
        work()
        os._exit(0)
    # The host reads the child's stdout to its end: this copy must not hold it open.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    code = 0
    while True:
        info = signal.sigtimedwait(watched, KEEPER_TICK)
        done = info is not None and info.si_signo != signal.SIGCHLD
        exited = reap()
        if child in exited:
            # The host sees the library process's exit code as this one's.
            done, code = True, exited[child]
        if done or os.getppid() != host:
            end_everything_below()
            if workdir:
                import shutil

                shutil.rmtree(workdir, ignore_errors=True)
            os._exit(code)


class Charged:
    """The session's and the tenant's caps, checked before each process starts, under
    the tenant's lock (the host takes it too, so two starts never both see room)."""

    def __init__(self, tag, caps):
        self.caps = caps
        parts = tag.split(".")
        self.session, self.tenant = ".".join(parts[:2]), parts[0]

    def __enter__(self):
        import errno
        import socket

        # An abstract Unix socket name: held by the one socket bound to it.
        self.lock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.lock.bind("\0" + self.caps["lock"])
                break
            except OSError as e:
                if e.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                    self.lock.close()
                    raise RuntimeError(
                        f"cannot start a process: tenant `{self.caps['tenant_id']}` has been starting others for 10 s"
                        if e.errno == errno.EADDRINUSE
                        else f"cannot start a process: the process lock: {e}"
                    ) from None
                time.sleep(0.01)
        try:
            table = process_table()
            self.check(len(members(table, self.session)), len(members(table, self.tenant)))
        except BaseException:
            self.lock.close()
            raise
        return self

    def check(self, session, tenant):
        caps = self.caps
        if session + 1 > caps["session"]:
            raise RuntimeError(
                f"cannot start another process: this session has {session} live processes, and its cap is "
                f"{caps['session_key']} = {caps['session']}; end what it started (`Terminate Process`, "
                "`Close Browser`) or end the session"
            )
        if tenant + 1 > caps["tenant"]:
            raise RuntimeError(
                f"cannot start another process: tenant `{caps['tenant_id']}` has {tenant} live processes across "
                f"its sessions, and its cap is {caps['tenant_key']} = {caps['tenant']}; end what its sessions "
                "started or end sessions"
            )

    def __exit__(self, *exc):
        self.lock.close()


def charge_processes():
    """Makes every subprocess.Popen charged before it starts, and tagged even when
    the library gives the child an environment of its own."""
    tag = os.environ.get(TAG_VAR)
    try:
        caps = json.loads(os.environ.pop(CAPS_VAR))
    except (KeyError, ValueError):
        caps = None
    if not tag:
        return
    original = subprocess.Popen.__init__

    def init(self, *args, **kwargs):
        env_at = 10  # Popen(args, bufsize, executable, stdin, stdout, stderr, preexec_fn, close_fds, shell, cwd, env)
        env = args[env_at] if len(args) > env_at else kwargs.get("env")
        if env is not None:
            env = dict(env)
            if any(isinstance(k, bytes) for k in env):
                env[TAG_VAR.encode()] = tag.encode()
            else:
                env[TAG_VAR] = tag
            if len(args) > env_at:
                args = args[:env_at] + (env,) + args[env_at + 1 :]
            else:
                kwargs["env"] = env
        if caps is None:
            return original(self, *args, **kwargs)
        with Charged(tag, caps):
            original(self, *args, **kwargs)

    subprocess.Popen.__init__ = init


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
        # A variable file is code too: what it starts ends when it is read.
        keep(lambda: load_variables(spec))
    name, args, token = read_input()
    keep(lambda: serve(name, args, token))


def serve(name, args, token):
    charge_processes()
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
