"""A small Robot Framework library served over RF's remote interface, for the rf plugin's
remote-library tests.

Run `python remote_calc.py [PORT]` (0 picks a free port): it prints `PORT <n>` on
stdout once the server listens, then serves until killed.
"""

import sys


class ContinuableError(AssertionError):
    ROBOT_CONTINUE_ON_FAILURE = True


class FatalError(AssertionError):
    ROBOT_EXIT_ON_FAILURE = True


class RemoteCalc:
    """Arithmetic and a few keywords that exercise the remote protocol's corners."""

    def add_numbers(self, a, b):
        """Adds two integers given as text."""
        return int(a) + int(b)

    def divide(self, a, b):
        """Divides; fails with ZeroDivisionError for b == 0."""
        return int(a) / int(b)

    def concatenate(self, *parts):
        """Joins the parts with spaces."""
        return " ".join(parts)

    def greet(self, name, greeting="Hello"):
        """Returns a greeting."""
        return f"{greeting}, {name}!"

    def options(self, **options):
        """Returns the named arguments sorted by name, as `key=value` strings."""
        return [f"{k}={v}" for k, v in sorted(options.items())]

    def echo(self, value):
        """Returns the argument as it arrived."""
        return value

    def types(self):
        """Returns one value of each XML-RPC type."""
        return {"int": 42, "float": 1.5, "bool": True, "list": [1, "two", [3]], "dict": {"k": "v"}, "none": None}

    def log_things(self):
        """Logs at several levels and returns nothing."""
        print("first message")
        print("*WARN* careful now")
        print("*INFO* back to info")

    def fail_plainly(self, message="plain failure"):
        """Fails with AssertionError."""
        raise AssertionError(message)

    def fail_with_value_error(self):
        """Fails with ValueError."""
        raise ValueError("not a good value")

    def fail_continuable(self):
        """Fails, but lets the test continue."""
        raise ContinuableError("soft failure")

    def fail_fatally(self):
        """Fails and stops the whole run."""
        raise FatalError("hard failure")

    def count_calls(self):
        """Counts calls across the server's lifetime."""
        self._calls = getattr(self, "_calls", 0) + 1
        return self._calls


if __name__ == "__main__":
    from robotremoteserver import RobotRemoteServer

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = RobotRemoteServer(RemoteCalc(), host="127.0.0.1", port=port, serve=False)
    server.activate()  # binds, so that port 0 has become a real port
    print(f"PORT {server.server_port}", flush=True)
    server.serve(log=False)
