#!/usr/bin/env python3
"""Generates plugins/rf/src/keywords/catalog.rs from Robot Framework's own libraries.

The catalog holds every keyword of BuiltIn, String, Collections and DateTime with the argument
spec and one-line documentation that RF itself reports, and how many arguments each
"run keyword variant" resolves before passing the rest on. The plugin implements most of
them; the rest fail with `unsupported`, but their names still take part in keyword
lookup and "did you mean" suggestions exactly as in RF.

Run with the venv that has robotframework:  .venv/bin/python tests/rf/gen_catalog.py
"""

import pathlib
import robot
import robot.libraries.BuiltIn  # registers the run keyword variants
from robot.libdocpkg import LibraryDocumentation
from robot.running import RUN_KW_REGISTER

OUT = pathlib.Path(__file__).resolve().parents[2] / "plugins/rf/src/keywords/catalog.rs"


def rust_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'



lines = [
    "//! Every keyword of Robot Framework's BuiltIn, String, Collections and DateTime libraries:",
    "//! name, argument spec and one-line documentation as RF reports them, and for \"run",
    "//! keyword variants\" how many leading arguments are resolved normally. Generated from",
    f"//! Robot Framework {robot.version.get_version()} by tests/rf/gen_catalog.py; do not edit by hand.",
    "",
    "/// A keyword as Robot Framework's libdoc describes it.",
    "pub(crate) struct KwInfo {",
    "    /// The library: `BuiltIn`, `String`, `Collections` or `DateTime`.",
    "    pub(crate) library: &'static str,",
    "    /// The keyword name.",
    "    pub(crate) name: &'static str,",
    "    /// The argument spec in libdoc syntax.",
    "    pub(crate) args: &'static str,",
    "    /// The first sentence of the documentation.",
    "    pub(crate) doc: &'static str,",
    "    /// For run-keyword variants, the number of leading arguments resolved normally.",
    "    pub(crate) resolve: Option<usize>,",
    "}",
    "",
    "/// The catalog, library by library, keywords in libdoc order.",
    "pub(crate) static CATALOG: &[KwInfo] = &[",
]
# DateTime's and OperatingSystem's keywords are in the catalog but a session sees
# them only after `Import Library`, as in RF.
for lib in ["BuiltIn", "String", "Collections", "DateTime", "OperatingSystem"]:
    doc = LibraryDocumentation(lib)
    for kw in doc.keywords:
        resolve = None
        reg = RUN_KW_REGISTER._libs.get(lib)
        if reg is not None:
            key = kw.name.lower().replace(" ", "_")
            if key in reg:
                resolve = reg[key][0] if isinstance(reg[key], tuple) else reg[key]
        short = " ".join(kw.short_doc.split())
        lines.append("    KwInfo {")
        lines.append(f"        library: {rust_str(lib)},")
        lines.append(f"        name: {rust_str(kw.name)},")
        lines.append(f"        args: {rust_str(str(kw.args))},")
        lines.append(f"        doc: {rust_str(short)},")
        lines.append(f"        resolve: {'None' if resolve is None else f'Some({resolve})'},")
        lines.append("    },")
lines.append("];")
OUT.write_text("\n".join(lines) + "\n")
print(f"wrote {OUT}")
