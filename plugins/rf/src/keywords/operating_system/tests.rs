//! OperatingSystem through the engine, on the real filesystem in a temporary folder that
//! the test "grants". Expected messages are Robot Framework 7.5's (the e2e differential
//! in tests/e2e/test_rf_operating_system.py checks them against RF itself).

use std::path::PathBuf;

use super::paths;
use super::sandbox::{self, Folder};
use crate::engine::Session;
use crate::error::Code;
use crate::keywords::tests::{NoNetwork, err, ok};
use crate::value::Value;

/// A temporary folder, deleted on drop.
struct Temp(PathBuf);

impl Temp {
    fn new(tag: &str) -> Temp {
        let base = std::env::temp_dir().canonicalize().expect("temp dir");
        let dir = base.join(format!(
            "rf-os-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        Temp(dir)
    }

    fn path(&self, rel: &str) -> String {
        if rel.is_empty() {
            self.0.display().to_string()
        } else {
            format!("{}/{rel}", self.0.display())
        }
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A session with OperatingSystem imported and `folders` granted.
fn session(folders: &[(&str, bool)]) -> Session {
    sandbox::set_folders(
        folders
            .iter()
            .map(|(p, ro)| Folder {
                path: p.to_string(),
                read_only: *ro,
            })
            .collect(),
    );
    let mut s = Session::new(Box::new(NoNetwork));
    ok(&mut s, "Import Library", &["OperatingSystem"]);
    s.take_logs();
    s
}

fn logs(s: &mut Session) -> Vec<String> {
    s.take_logs().into_iter().map(|l| l.message).collect()
}

fn a(path: &str) -> String {
    format!("<a href=\"file://{path}\">{path}</a>")
}

#[test]
fn path_text_matches_posixpath() {
    assert_eq!(paths::normpath("a//b/./c/../d/"), "a/b/d");
    assert_eq!(paths::normpath("/../x"), "/x");
    assert_eq!(paths::normpath("../../x"), "../../x");
    assert_eq!(paths::normpath("//x"), "//x");
    assert_eq!(paths::normpath("///x"), "/x");
    assert_eq!(paths::normpath(""), ".");
    assert_eq!(paths::join("a", &["b", "/c", "d"]), "/c/d");
    assert_eq!(paths::join("a/", &["b"]), "a/b");
    assert_eq!(paths::split("/a/b/"), ("/a/b".into(), "".into()));
    assert_eq!(paths::split("//x"), ("//".into(), "x".into()));
    assert_eq!(paths::splitext(".bashrc"), (".bashrc".into(), "".into()));
    assert_eq!(
        paths::splitext("a/b.tar.gz"),
        ("a/b.tar".into(), ".gz".into())
    );
    assert_eq!(
        paths::split_extension("file.ext..."),
        ("file".into(), "ext...".into())
    );
    assert_eq!(
        paths::split_extension("file..."),
        ("file...".into(), "".into())
    );
    assert_eq!(paths::split_extension("..."), ("...".into(), "".into()));
    assert_eq!(paths::absnorm("x/../y", "/srv/d"), "/srv/d/y");
    assert!(paths::inside("/srv/data/x", "/srv/data"));
    assert!(paths::inside("/srv/data", "/srv/data"));
    assert!(!paths::inside("/srv/data2", "/srv/data"));
    assert!(paths::inside("/x", "/"));
}

#[test]
fn path_keywords_need_no_grant() {
    let mut s = session(&[("/nowhere", false)]);
    assert_eq!(ok(&mut s, "Join Path", &["my", "path"]).repr(), "'my/path'");
    assert_eq!(
        ok(&mut s, "Join Path", &["my/", "/abs", "x/"]).repr(),
        "'/abs/x'"
    );
    assert_eq!(
        ok(&mut s, "Join Paths", &["base", "a", "b/../c"]).repr(),
        "['base/a', 'base/c']"
    );
    assert_eq!(ok(&mut s, "Normalize Path", &["abc/../"]).repr(), "'.'");
    assert_eq!(
        ok(&mut s, "Split Path", &["/a/b/c.txt"]).repr(),
        "('/a/b', 'c.txt')"
    );
    assert_eq!(
        ok(&mut s, "Split Extension", &["file.1.txt"]).repr(),
        "('file.1', 'txt')"
    );
}

#[test]
fn files_are_created_read_and_removed_with_rfs_logs() {
    let t = Temp::new("files");
    let root = t.path("");
    let mut s = session(&[(&root, false)]);
    let f = t.path("sub/a.txt");
    ok(&mut s, "Create File", &[&f, "line 1\\nline 2\\r\\n"]);
    assert_eq!(logs(&mut s), [format!("Created file '{}'.", a(&f))]);
    ok(&mut s, "Append To File", &[&f, "more"]);
    assert_eq!(
        std::fs::read_to_string(&f).expect("read"),
        "line 1\nline 2\r\nmore"
    );
    assert_eq!(
        ok(&mut s, "Get File", &[&f]).repr(),
        "'line 1\\nline 2\\nmore'"
    );
    assert_eq!(
        ok(&mut s, "Grep File", &[&f, "line"]).repr(),
        "'line 1\\nline 2'"
    );
    assert_eq!(
        logs(&mut s).last().map(String::as_str),
        Some("2 out of 3 lines matched.")
    );
    assert_eq!(
        ok(&mut s, "Grep File", &[&f, "^l.*2$", "regexp=True"]).repr(),
        "'line 2'"
    );
    assert_eq!(ok(&mut s, "Get File Size", &[&f]).repr(), "19");
    ok(&mut s, "File Should Exist", &[&f]);
    ok(&mut s, "File Should Not Be Empty", &[&f]);
    ok(&mut s, "Should Exist", &[&t.path("sub/*.txt")]);
    assert_eq!(
        err(&mut s, "File Should Not Exist", &[&t.path("sub/*.txt")]).1,
        format!("File '{}' matches '{f}'.", t.path("sub/*.txt"))
    );
    assert_eq!(
        err(&mut s, "Directory Should Not Exist", &[&t.path("sub")]).1,
        format!("Directory '{}' exists.", t.path("sub"))
    );
    assert_eq!(
        err(&mut s, "File Should Be Empty", &[&f]).1,
        format!("File '{f}' is not empty. Size: 19 bytes.")
    );
    assert_eq!(
        err(&mut s, "File Should Exist", &[&t.path("nope"), "custom"]).1,
        "custom"
    );
    logs(&mut s);
    ok(&mut s, "Remove File", &[&f]);
    assert_eq!(logs(&mut s), [format!("Removed file '{}'.", a(&f))]);
    ok(&mut s, "Remove File", &[&f]);
    assert_eq!(logs(&mut s), [format!("File '{}' does not exist.", a(&f))]);
    let (_, message) = err(&mut s, "Get File", &[&f]);
    assert_eq!(
        message,
        format!("FileNotFoundError: [Errno 2] No such file or directory: '{f}'")
    );
}

#[test]
fn encodings_and_binary_files() {
    let t = Temp::new("enc");
    let mut s = session(&[(&t.path(""), false)]);
    let f = t.path("x.bin");
    ok(&mut s, "Create Binary File", &[&f, "\\x00\\xff"]);
    assert_eq!(std::fs::read(&f).expect("read"), [0, 255]);
    assert_eq!(ok(&mut s, "Get Binary File", &[&f]).repr(), "b'\\x00\\xff'");
    assert_eq!(
        err(&mut s, "Get File", &[&f]).1,
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 1: invalid start byte"
    );
    assert_eq!(
        ok(&mut s, "Get File", &[&f, "encoding_errors=replace"]).repr(),
        "'\\x00\u{fffd}'"
    );
    assert_eq!(ok(&mut s, "Get File", &[&f, "latin-1"]).repr(), "'\\x00ÿ'");
    assert_eq!(
        err(&mut s, "Create File", &[&f, "äö-x", "ASCII"]).1,
        "UnicodeEncodeError: 'ascii' codec can't encode characters in position 0-1: ordinal not in range(128)"
    );
    ok(&mut s, "Create File", &[&f, "ä", "ISO-8859-1"]);
    assert_eq!(std::fs::read(&f).expect("read"), [0xe4]);
    assert!(
        err(&mut s, "Get File", &[&f, "UTF-16"])
            .1
            .contains("not available in the rf sandbox")
    );
}

#[test]
fn directories_listing_copy_and_move() {
    let t = Temp::new("dirs");
    let mut s = session(&[(&t.path(""), false)]);
    let d = t.path("d");
    ok(&mut s, "Create Directory", &[&t.path("d/inner")]);
    ok(&mut s, "Create File", &[&t.path("d/b.txt"), "b"]);
    ok(&mut s, "Create File", &[&t.path("d/a.txt"), "a"]);
    ok(&mut s, "Create File", &[&t.path("d/.hidden"), ""]);
    logs(&mut s);
    assert_eq!(
        ok(&mut s, "List Directory", &[&d]).repr(),
        "['.hidden', 'a.txt', 'b.txt', 'inner']"
    );
    assert_eq!(
        logs(&mut s),
        [
            format!("Listing contents of directory '{}'.", a(&d)),
            "4 items:\n.hidden\na.txt\nb.txt\ninner".to_string()
        ]
    );
    assert_eq!(
        ok(
            &mut s,
            "List Files In Directory",
            &[&d, "*.txt", "absolute=yes"]
        )
        .repr(),
        format!("['{d}/a.txt', '{d}/b.txt']")
    );
    assert_eq!(
        ok(&mut s, "List Directories In Directory", &[&d]).repr(),
        "['inner']"
    );
    assert_eq!(ok(&mut s, "Count Items In Directory", &[&d]).repr(), "4");
    assert_eq!(
        ok(&mut s, "Count Files In Directory", &[&d, "?.txt"]).repr(),
        "2"
    );
    assert_eq!(
        ok(&mut s, "Count Directories In Directory", &[&d]).repr(),
        "1"
    );
    assert_eq!(
        err(&mut s, "Directory Should Be Empty", &[&d]).1,
        format!("Directory '{d}' is not empty. Contents: '.hidden', 'a.txt', 'b.txt', 'inner'.")
    );
    // Copy File into a folder keeps the name and returns the destination.
    assert_eq!(
        ok(&mut s, "Copy File", &[&t.path("d/a.txt"), &t.path("e/")]).repr(),
        Value::Str(t.path("e/a.txt")).repr()
    );
    ok(&mut s, "Copy Files", &[&t.path("d/*.txt"), &t.path("f")]);
    assert_eq!(
        ok(&mut s, "List Directory", &[&t.path("f")]).repr(),
        "['a.txt', 'b.txt']"
    );
    ok(
        &mut s,
        "Move File",
        &[&t.path("f/a.txt"), &t.path("f/c.txt")],
    );
    ok(&mut s, "Move Files", &[&t.path("f/*.txt"), &t.path("g")]);
    assert_eq!(
        ok(&mut s, "List Directory", &[&t.path("g")]).repr(),
        "['b.txt', 'c.txt']"
    );
    ok(&mut s, "Copy Directory", &[&d, &t.path("copy")]);
    assert_eq!(
        std::fs::read_to_string(t.path("copy/b.txt")).expect("copied"),
        "b"
    );
    ok(&mut s, "Move Directory", &[&t.path("copy"), &t.path("g")]);
    ok(&mut s, "Directory Should Exist", &[&t.path("g/copy/inner")]);
    assert_eq!(
        err(&mut s, "Remove Directory", &[&t.path("g")]).1,
        format!("Directory '{}' is not empty.", t.path("g"))
    );
    ok(&mut s, "Empty Directory", &[&t.path("g")]);
    ok(&mut s, "Directory Should Be Empty", &[&t.path("g")]);
    ok(&mut s, "Remove Directory", &[&t.path("g")]);
    ok(&mut s, "Remove Directory", &[&d, "recursive=True"]);
    ok(&mut s, "Directory Should Not Exist", &[&d]);
    assert_eq!(
        err(&mut s, "Copy Files", &[&t.path("x")]).1,
        "Must contain destination and at least one source."
    );
}

#[test]
fn times_touch_and_waits() {
    let t = Temp::new("time");
    let mut s = session(&[(&t.path(""), false)]);
    let f = t.path("f");
    ok(&mut s, "Touch", &[&f]);
    ok(&mut s, "Set Modified Time", &[&f, "1700000000"]);
    assert_eq!(
        ok(&mut s, "Get Modified Time", &[&f]).repr(),
        "'2023-11-14 22:13:20'"
    );
    assert_eq!(
        ok(&mut s, "Get Modified Time", &[&f, "epoch"]).repr(),
        "1700000000"
    );
    ok(&mut s, "Wait Until Created", &[&f, "1s"]);
    assert_eq!(
        err(&mut s, "Wait Until Removed", &[&f, "0.2"]).1,
        format!("'{f}' was not removed in 200 milliseconds.")
    );
    assert_eq!(
        err(&mut s, "Touch", &[&t.path("")]).1,
        format!("Cannot touch '{}' because it is a directory.", t.path(""))
    );
}

#[test]
fn the_sandbox_refuses_paths_outside_the_grant_and_writes_to_read_only_folders() {
    let rw = Temp::new("rw");
    let ro = Temp::new("ro");
    std::fs::write(ro.path("kept.txt"), "keep").expect("write");
    let mut s = session(&[(&rw.path(""), false), (&ro.path(""), true)]);
    let (code, message) = err(&mut s, "Get File", &["/etc/passwd"]);
    assert_eq!(code, Code::Denied);
    assert!(
        message.starts_with("Path '/etc/passwd' is outside the folders granted to the rf plugin ("),
        "{message}"
    );
    assert!(message.contains("[plugins.grants.rf]"), "{message}");
    assert!(!message.contains("Errno"), "{message}");
    // `..` cannot climb out, and a sibling sharing a name prefix is not inside.
    let climb = format!("{}/../escape.txt", rw.path(""));
    assert!(
        err(&mut s, "Create File", &[&climb])
            .1
            .contains("is outside the folders")
    );
    let sibling = format!("{}2/x", rw.path(""));
    assert!(
        err(&mut s, "Create File", &[&sibling])
            .1
            .contains("is outside the folders")
    );
    let (code, message) = err(&mut s, "Remove File", &[&ro.path("kept.txt")]);
    assert_eq!(code, Code::Denied);
    assert!(message.contains("read-only"), "{message}");
    assert_eq!(
        ok(&mut s, "Get File", &[&ro.path("kept.txt")]).repr(),
        "'keep'"
    );
    assert!(
        err(&mut s, "Create File", &[&ro.path("new.txt")])
            .1
            .contains("read-only")
    );
    // Relative paths start from the first granted folder.
    ok(&mut s, "Create File", &["rel.txt", "r"]);
    assert_eq!(
        std::fs::read_to_string(rw.path("rel.txt")).expect("read"),
        "r"
    );
}

#[test]
fn import_needs_a_grant_and_supports_aliases() {
    sandbox::set_folders(Vec::new());
    let mut s = Session::new(Box::new(NoNetwork));
    let (_, message) = err(&mut s, "Import Library", &["OperatingSystem"]);
    assert!(message.contains("[plugins.grants.rf]"), "{message}");
    assert_eq!(
        err(&mut s, "Create File", &["/x"]).1,
        "No keyword with name 'Create File' found."
    );
    let t = Temp::new("alias");
    sandbox::set_folders(vec![Folder {
        path: t.path(""),
        read_only: false,
    }]);
    ok(&mut s, "Import Library", &["OperatingSystem", "AS", "OS"]);
    ok(&mut s, "OS.Create File", &[&t.path("x"), "1"]);
    ok(&mut s, "Create File", &[&t.path("y"), "2"]);
    assert_eq!(
        err(&mut s, "Run", &["ls"]).1,
        "Cannot run command 'ls': the rf sandbox has no processes. Run commands from a real Robot Framework served through the remote interface (Import Library    Remote    http://host:port)."
    );
}

#[test]
fn the_environment_is_the_sessions_own() {
    let t = Temp::new("env");
    let mut s = session(&[(&t.path(""), false)]);
    assert_eq!(
        err(&mut s, "Get Environment Variable", &["HOME"]).1,
        "Environment variable 'HOME' does not exist."
    );
    assert_eq!(
        ok(&mut s, "Get Environment Variable", &["HOME", "none"]).repr(),
        "'none'"
    );
    ok(&mut s, "Set Environment Variable", &["GREETING", "hi"]);
    ok(
        &mut s,
        "Append To Environment Variable",
        &["GREETING", "there", "separator=-"],
    );
    assert_eq!(
        ok(&mut s, "Set Variable", &["%{GREETING}"]).repr(),
        "'hi-there'"
    );
    ok(&mut s, "Environment Variable Should Be Set", &["GREETING"]);
    assert_eq!(
        ok(&mut s, "Get Environment Variables", &[]).repr(),
        "{'GREETING': 'hi-there'}"
    );
    logs(&mut s);
    ok(
        &mut s,
        "Remove Environment Variable",
        &["GREETING", "OTHER"],
    );
    assert_eq!(
        logs(&mut s),
        [
            "Environment variable 'GREETING' deleted.",
            "Environment variable 'OTHER' does not exist."
        ]
    );
    assert_eq!(
        err(&mut s, "Environment Variable Should Be Set", &["GREETING"]).1,
        "Environment variable 'GREETING' is not set."
    );
}

#[test]
fn huge_files_and_directories_are_bounded() {
    let t = Temp::new("big");
    let mut s = session(&[(&t.path(""), false)]);
    let f = t.path("big");
    let file = std::fs::File::create(&f).expect("create");
    file.set_len(sandbox::MAX_READ_BYTES + 1).expect("grow");
    let message = err(&mut s, "Get File", &[&f]).1;
    assert!(
        message.contains("larger than the 8388608 bytes"),
        "{message}"
    );
    assert!(err(&mut s, "Get Binary File", &[&f]).1.contains("8 MiB"));
    // Grep File streams: a large file of short lines is fine.
    std::fs::write(&f, "x\n".repeat(600_000)).expect("write");
    assert_eq!(ok(&mut s, "Grep File", &[&f, "y"]).repr(), "''");
}

#[test]
fn a_write_refused_at_the_disk_quota_names_the_quota() {
    // Linux's EDQUOT natively; in the component, WASI's `quota` (wasi-libc 19).
    let refused = std::io::Error::from_raw_os_error(122);
    let message = sandbox::os_error(&refused, "/srv/acme/big.txt", None).to_string();
    assert!(
        message.starts_with("OSError: [Errno 122] Disk quota exceeded: '/srv/acme/big.txt' ("),
        "{message}"
    );
    // Without the host's words (natively, no STEPHOST_DISK_QUOTA), the keys still.
    assert!(
        message.contains("limits.disk_bytes") && message.contains("limits.disk_files"),
        "{message}"
    );
    assert!(!message.contains("Input/output"), "{message}");
}
