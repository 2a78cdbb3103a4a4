"""A Robot Framework library with flaky keywords and a recovery keyword, served over RF's
remote interface, for the rf plugin's recovery tests (`execute_batch` with
`on_failure: "recover"`).

Run `python remote_flaky.py [PORT] [--tags=info|method|doc|none] [--clear-items]` (0 picks a
free port; `--clear-items` adds a data-deleting keyword tagged plain `recovery`):
it prints `PORT <n>` on stdout once the server listens, then serves until killed.

robotremoteserver 1.1.1 serves neither `get_library_information` nor `get_keyword_tags`,
so by itself it hides the tags of `@keyword(tags=...)` from RF. `--tags` picks how this
server reports them:
- `info` (default): `get_library_information` with per-keyword `args`, `doc` and `tags`
  (RF 4+ servers), and `get_keyword_tags`;
- `method`: `get_keyword_tags` only (RF 3.0.2+ servers);
- `doc`: a `Tags: ...` line at the end of the documentation (all RF can see through a
  stock robotremoteserver);
- `none`: the stock server: RF sees no tags.
"""

import sys

from robot.api.deco import keyword


class RemoteFlaky:
    """A widget that breaks, a counter that times out, and a log of recovery keywords."""

    def __init__(self):
        self._widget_ok = False
        self._failures_left = 0
        self._counter_calls = 0
        self._log = []

    def read_widget(self):
        """Returns "ready" if the widget was reset; fails as an element that is not there.

        Reading breaks the widget again, so every test starts from a broken one.
        """
        if not self._widget_ok:
            raise AssertionError("Element 'widget' not found")
        self._widget_ok = False
        return "ready"

    @keyword(tags=["recovery:element-not-found"])
    def reset_widget(self):
        """Resets the widget.

        `Read Widget` passes once after this. Tagged for the rf plugin's recovery.
        """
        self._widget_ok = True
        self._log.append("Reset Widget")

    def arm_counter(self, failures):
        """Makes the next `failures` calls of `Flaky Counter` fail."""
        self._failures_left = int(failures)
        self._counter_calls = 0

    def flaky_counter(self):
        """Fails with a timeout while armed; then returns how many calls it took."""
        self._counter_calls += 1
        if self._failures_left > 0:
            self._failures_left -= 1
            raise AssertionError(
                f"Timeout: counter not ready after call {self._counter_calls}"
            )
        return self._counter_calls

    def lookup_item(self, name):
        """Fails with a KeyError: an error no recovery pattern recognizes."""
        return {"known": 1}[name]

    def go_back(self):
        """Pretends to navigate back (a well-known recovery keyword)."""
        print("Went back")
        self._log.append("Go Back")

    def get_log(self):
        """Returns the recovery keywords called so far, oldest first."""
        return list(self._log)

    def clear_log(self):
        """Empties the log that `Get Log` returns."""
        self._log.clear()


class RemoteFlakyWithClear(RemoteFlaky):
    """The same, plus a keyword that deletes data (served with `--clear-items`)."""

    @keyword(tags=["recovery"])
    def clear_items(self):
        """Deletes the stored items: tagged plain `recovery`, for page and element errors.

        It must never run for an error the rf plugin does not recognize (a KeyError).
        """
        self._log.append("Clear Items")


def serve(port, tags_via, library):
    from robotremoteserver import RobotRemoteServer

    class Server(RobotRemoteServer):
        def _register_functions(self, server):
            super()._register_functions(server)
            if tags_via in ("info", "method"):
                server.register_function(self.get_keyword_tags)
            if tags_via == "info":
                server.register_function(self.get_library_information)

        def get_library_information(self):
            info = {
                name: {
                    "args": self.get_keyword_arguments(name),
                    "doc": self.get_keyword_documentation(name),
                    "tags": self.get_keyword_tags(name),
                }
                for name in self.get_keyword_names()
            }
            # RF (Libdoc) reads the library's own docs from these entries.
            for name in ("__intro__", "__init__"):
                info[name] = {"doc": self.get_keyword_documentation(name)}
            return info

        def get_keyword_documentation(self, name):
            doc = super().get_keyword_documentation(name)
            # RF also asks about `__intro__` and `__init__`, which have no tags.
            keyword = tags_via == "doc" and not name.startswith("__")
            tags = self.get_keyword_tags(name) if keyword else []
            return f"{doc}\n\nTags: {', '.join(tags)}" if tags else doc

    server = Server(library, host="127.0.0.1", port=port, serve=False)
    server.activate()  # binds, so that port 0 has become a real port
    print(f"PORT {server.server_port}", flush=True)
    server.serve(log=False)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    modes = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--tags=")]
    mode = modes[-1] if modes else "info"
    if mode not in ("info", "method", "doc", "none"):
        sys.exit(f"unknown --tags mode {mode!r}; use info, method, doc or none")
    library = RemoteFlakyWithClear() if "--clear-items" in sys.argv[1:] else RemoteFlaky()
    serve(int(args[0]) if args else 0, mode, library)
