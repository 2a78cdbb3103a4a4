"""Robot Framework's XML library in an RF batch, on third-party XML: openbox's own
configuration (`/etc/xdg/openbox/rc.xml` from Debian's openbox package, with a default
namespace and comments) and its menu. Each call is written as an agent would write it
from the tool description; what it returns, how it fails and the file `Save XML`
writes are checked against real Robot Framework's XML library run here on the same
file, and the saved file is read back with Python's ElementTree.

Also the sandbox around it: files are read from, and written to, only the folders the
host grants the rf plugin; a parsed tree stays one object across steps and batches of
a session and is not seen by another session.
"""

import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from robot.libdoc import LibraryDocumentation
from robot.libraries.XML import XML
from robot.utils import ErrorDetails

from conftest import host_with, rf_batch, rf_step as kw, step_error

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

OPENBOX = Path("/etc/xdg/openbox")
NS = "{http://openbox.org/3.4/rc}"


def grant(*folders):
    """A host config granting rf `folders` [(path, read_only)]."""
    dev = os.environ.get("RF_PLUGIN_DIR")
    plugins = f'[plugins]\ndisable = ["rf"]\ndirs = ["{dev}"]\n' if dev else ""
    file_line = 'file = "rf.wasm"\n' if dev else ""
    items = ", ".join(f'{{ path = "{p}", read_only = {"true" if ro else "false"} }}' for p, ro in folders)
    return f'{plugins}[plugins.grants.rf]\n{file_line}http = ["loopback:*"]\nfolders = [{items}]\n'


@pytest.fixture
def folders(tmp_path):
    """A read-only folder with openbox's files and a writable one, canonical paths."""
    if not (OPENBOX / "rc.xml").is_file():
        pytest.fail("openbox's rc.xml is missing: scripts/test.sh installs the openbox package")
    base = Path(os.path.realpath(tmp_path))
    given, out = base / "given", base / "out"
    given.mkdir()
    out.mkdir()
    for name in ("rc.xml", "menu.xml"):
        shutil.copy(OPENBOX / name, given / name)
    return given, out


def real_rf(call):
    """What real Robot Framework's XML library answers: ("PASS", value) or ("FAIL", message)."""
    try:
        return ("PASS", call(XML()))
    except Exception as error:  # as a running test reports it
        return ("FAIL", ErrorDetails(error).message)


def outcome(step):
    """("PASS", value) or ("FAIL", RF's message): a step's error reads `<kind>: <message>`,
    where a keyword's own failure is of kind `assertion`."""
    if step["status"] == "PASS":
        return ("PASS", step.get("return_value"))
    return ("FAIL", step_error(step).removeprefix("assertion: "))


async def test_keywords_on_openbox_config_agree_with_real_robot_framework(folders):
    given, out = folders
    rc = given / "rc.xml"
    async with host_with(grant((given, True), (out, False))) as s:
        steps = [
            kw("Import Library", "XML"),                                                   # 0
            kw("Parse XML", rc, assign="root"),                                            # 1
            kw("Get Element Count", "${root}", "keyboard/keybind"),                        # 2
            kw("Get Element Attribute", "${root}", "key", "xpath=keyboard/keybind[1]"),    # 3
            kw("Get Element Text", "${root}", "theme/name"),                               # 4
            kw("Get Elements Texts", "${root}", "desktops/*"),                             # 5
            kw("Element Should Exist", "${root}", "mouse/context"),                        # 6
            kw("Get Element Attributes", "${root}", "xpath=keyboard/keybind[2]"),          # 7
            kw("Element Text Should Be", rc, "Clearlooks", "xpath=theme/name"),            # 8
            kw("Get Element Count", rc, "applications/application"),                       # 9: a path again
            kw("Set Element Text", "${root}", "Onyx", "xpath=theme/name"),                 # 10
            kw("Set Element Attribute", "${root}", "key", "W-x", "xpath=keyboard/keybind[1]"),
            kw("Remove Elements", "${root}", "mouse/context"),                             # 12
            kw("Save XML", "${root}", out / "rc.xml"),                                     # 13
            kw("Element Should Not Exist", out / "rc.xml", "mouse/context"),               # 14
            kw("Get Element Text", given / "menu.xml", "menu/item[1]/action/execute"),     # 15
        ]
        result = await rf_batch(s, steps, "xml-openbox")
        assert result["status"] == "PASS", result
        got = {i: outcome(st) for i, st in enumerate(result["steps"])}
        # Calls that fail, each a batch of its own (a batch stops at its first failure).
        failing = {
            16: kw("Element Text Should Be", rc, "Onyx", "xpath=theme/name"),
            17: kw("Parse XML", given / "missing.xml"),
            18: kw("Element Should Exist", "${root}", "mouse/context"),
        }
        for i, step in failing.items():
            one = await rf_batch(s, [step], "xml-openbox")
            assert one["status"] == "FAIL", one
            got[i] = outcome(one["steps"][-1])

        # The same calls through real Robot Framework, on the same files.
        expected = {
            2: real_rf(lambda x: x.get_element_count(str(rc), "keyboard/keybind")),
            3: real_rf(lambda x: x.get_element_attribute(str(rc), "key", xpath="keyboard/keybind[1]")),
            4: real_rf(lambda x: x.get_element_text(str(rc), "theme/name")),
            5: real_rf(lambda x: x.get_elements_texts(str(rc), "desktops/*")),
            7: real_rf(lambda x: x.get_element_attributes(str(rc), xpath="keyboard/keybind[2]")),
            9: real_rf(lambda x: x.get_element_count(str(rc), "applications/application")),
            15: real_rf(lambda x: x.get_element_text(str(given / "menu.xml"), "menu/item[1]/action/execute")),
            16: real_rf(lambda x: x.element_text_should_be(str(rc), "Onyx", xpath="theme/name")),
            17: real_rf(lambda x: x.parse_xml(str(given / "missing.xml"))),
        }
        for i, want in expected.items():
            assert got[i] == want, (i, got[i], want)
        assert got[2][1] == 26 and got[4][1] == "Clearlooks", "the file is openbox's as shipped"
        assert got[16] == ("FAIL", "Clearlooks != Onyx")
        assert got[18][0] == "FAIL", "the tree changed in place: its mouse/context is gone"

        # The file Save XML wrote is byte for byte the one real RF writes for the same change.
        x = XML()
        tree = x.parse_xml(str(rc))
        x.set_element_text(tree, "Onyx", xpath="theme/name")
        x.set_element_attribute(tree, "key", "W-x", xpath="keyboard/keybind[1]")
        x.remove_elements(tree, "mouse/context")
        x.save_xml(tree, out / "by-rf.xml")
        assert (out / "rc.xml").read_bytes() == (out / "by-rf.xml").read_bytes()
        saved = ET.parse(out / "rc.xml").getroot()
        assert saved.find(f"{NS}theme/{NS}name").text == "Onyx"
        assert saved.find(f"{NS}keyboard/{NS}keybind").get("key") == "W-x"
        assert saved.find(f"{NS}mouse/{NS}context") is None
        assert rc.read_bytes() == (OPENBOX / "rc.xml").read_bytes(), "the given file is untouched"

        # The tree is one object for the session: a later batch sees the changes made to it.
        later = await rf_batch(s, [kw("Get Element Text", "${root}", "theme/name"),
                                   kw("Get Element Count", "${root}", "mouse/context")], "xml-openbox")
        assert [st["return_value"] for st in later["steps"]] == ["Onyx", 0], later
        other = await rf_batch(s, [kw("Import Library", "XML"), kw("Get Element Text", "${root}", "theme/name")],
                               "xml-other")
        assert other["steps"][1]["status"] == "FAIL"
        assert "Variable '${root}' not found" in step_error(other["steps"][1]), other


async def test_files_outside_the_grant_are_refused_and_text_needs_no_grant(folders):
    given, out = folders
    async with host_with(grant((given, True))) as s:
        ok = await rf_batch(s, [
            kw("Import Library", "XML"),
            kw("Parse XML", "<items><item id='1'>a</item><item id='2'>b</item></items>", assign="items"),
            kw("Get Elements Texts", "${items}", "item"),
            kw("Element Attribute Should Be", "${items}", "id", "2", "xpath=item[2]"),
            kw("Element To String", "${items}", "xpath=item[1]"),
        ], "xml-sandbox")
        assert ok["status"] == "PASS", ok
        assert ok["steps"][2]["return_value"] == ["a", "b"]
        assert ok["steps"][4]["return_value"] == '<item id="1">a</item>'

        async def fails(step):
            one = await rf_batch(s, [step], "xml-sandbox")
            assert one["status"] == "FAIL", one
            return outcome(one["steps"][-1])[1]

        assert "outside the folders granted" in await fails(kw("Parse XML", "/etc/xdg/openbox/rc.xml"))
        assert "read-only" in await fails(kw("Save XML", "${items}", given / "new.xml"))
        assert "outside the folders granted" in await fails(kw("Save XML", "${items}", out / "new.xml"))
        assert not (given / "new.xml").exists() and not (out / "new.xml").exists()
        assert ("FAIL", await fails(kw("Parse XML", "<unclosed>"))) == real_rf(lambda x: x.parse_xml("<unclosed>"))
        # Listed like any library's keywords, with RF's names, argument specs and docs.
        listing = await s.call_tool("batch", {"session_id": "xml-sandbox", "steps": [
            {"plugin": "rf", "verb": "keywords", "input": {"library": "XML", "filter": "*element text*"}}]})
        assert not listing.isError, listing.content
        listed = {k["name"]: k for k in listing.structuredContent["steps"][0]["value"]}
        assert set(listed) == {"Get Element Text", "Set Element Text", "Element Text Should Be",
                               "Element Text Should Match"}, listed
        assert listed["Get Element Text"]["args"] == "source, xpath=., normalize_whitespace=False"
        rf_doc = {k.name: k for k in LibraryDocumentation("XML").keywords}
        assert listed["Get Element Text"]["doc"] == rf_doc["Get Element Text"].short_doc
        # RF's own argument check, found before the call and reported as bad input.
        assert await fails(kw("Get Element Count", "${items}", "item", "extra")) == (
            "invalid-input: Keyword 'XML.Get Element Count' expected 1 to 2 arguments, got 3.")


async def test_the_library_survives_an_interpreter_restart(folders):
    """A runaway expression restarts the session's interpreter: XML keywords go on
    working (the library is made again), and a tree parsed before is reported gone."""
    given, _ = folders
    async with host_with(grant((given, True))) as s:
        first = await rf_batch(s, [
            kw("Import Library", "XML"),
            kw("Parse XML", "<a><b>1</b></a>", assign="old"),
            {**kw("Evaluate", "next(x for x in itertools.count() if x < 0)"), "timeout": "500ms"},
        ], "xml-restart")
        assert first["status"] == "TIMEOUT", first
        again = await rf_batch(s, [
            kw("Get Element Count", given / "rc.xml", "keyboard/keybind"),
            kw("Parse XML", "<a><b>2</b></a>", assign="new"),
            kw("Get Element Text", "${new}", "b"),
        ], "xml-restart")
        assert again["status"] == "PASS", again
        assert [st["return_value"] for st in again["steps"]][::2] == [26, "2"]
        gone = await rf_batch(s, [kw("Get Element Text", "${old}", "b")], "xml-restart")
        assert gone["status"] == "FAIL", gone
        message = step_error(gone["steps"][0])
        assert "Keyword 'XML.Get Element Text' failed" in message and "no longer held by the evaluator" in message, gone
