//! `file_upload`: host files into a page's `<input type=file>`, by ref.
//!
//! The files go through WebDriver's Element Send Keys, whose text the driver
//! reads as host paths. Which paths may go is the host's decision, not this
//! plugin's: the instance's HTTP gate checks every send-keys body against
//! `[browser] upload_dirs` (after resolving symlinks) and answers a refusal
//! itself, so nothing reaches the driver. The checks here only give clearer
//! messages sooner.

use serde_json::{Value, json};

use crate::args::{Args, BrowserArgs};
use crate::browser::Browser;
use crate::error::{Result, fail, failed, invalid};
use crate::webdriver::Doing;

/// The key WebDriver marks an element reference with.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";
/// The most files in one call.
const MAX_FILES: usize = 64;

/// Runs `file_upload`.
pub(crate) fn run(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    let reference = args.str("ref")?;
    let paths = paths(args)?;
    let granted = browser.upload_dirs()?;
    if granted.is_empty() {
        return Err(fail(
            "denied",
            "no folder is granted for uploads: the host operator lists the folders files may come \
             from under [browser] upload_dirs in the stephost config",
            false,
        ));
    }
    let found = crate::page::call(
        browser,
        tab,
        "element",
        &format!("locating {reference}"),
        false,
        json!({ "ref": reference }),
    )?;
    let what = crate::page::what(&found);
    let kind = (
        found.get("tag").and_then(Value::as_str).unwrap_or(""),
        found.get("type").and_then(Value::as_str).unwrap_or(""),
    );
    if kind != ("input", "file") {
        return Err(invalid(
            "ref",
            format!("{what} is not a file input (<input type=file>); find the page's file chooser"),
        ));
    }
    if found.get("disabled").and_then(Value::as_bool) == Some(true) {
        return Err(invalid("ref", format!("{what} is disabled")));
    }
    if paths.len() > 1 && found.get("multiple").and_then(Value::as_bool) != Some(true) {
        return Err(invalid(
            "paths",
            format!(
                "{what} takes one file (it has no `multiple` attribute); {} were given",
                paths.len()
            ),
        ));
    }
    let element = element_id(&found).ok_or_else(|| {
        failed(
            format!("locating {reference}: the browser gave no element reference"),
            false,
        )
    })?;
    let doing = Doing {
        tab: Some(tab),
        what: &format!("uploading to {what}"),
        acts: true,
    };
    browser.cmd(
        &doing,
        "POST",
        &format!("/element/{element}/value"),
        Some(json!({ "text": paths.join("\n") })),
    )?;
    // What the page now holds: the input's own file list.
    let files = browser
        .script(
            tab,
            "reading the chosen files",
            false,
            "return Array.from(arguments[0].files || []).map((f) => ({name: f.name, bytes: f.size}));",
            json!([{ ELEMENT_KEY: element }]),
        )
        .unwrap_or(Value::Null);
    Ok(json!({"tabId": tab, "ref": reference, "element": what, "files": files}))
}

/// `paths`: one or more absolute host paths, each a line of its own.
fn paths(args: &Args) -> Result<Vec<String>> {
    let list = args.get("paths").and_then(Value::as_array).ok_or_else(|| {
        invalid(
            "paths",
            "`paths` is a list of absolute file paths on the host",
        )
    })?;
    if list.is_empty() || list.len() > MAX_FILES {
        return Err(invalid(
            "paths",
            format!("`paths` takes 1 to {MAX_FILES} files"),
        ));
    }
    let mut out = Vec::with_capacity(list.len());
    for item in list {
        let path = item
            .as_str()
            .ok_or_else(|| invalid("paths", "every entry of `paths` is a string"))?;
        check_path(path)?;
        out.push(path.to_owned());
    }
    Ok(out)
}

/// A path the driver will read as exactly one absolute path.
fn check_path(path: &str) -> Result<()> {
    if !path.starts_with('/') {
        return Err(invalid(
            "paths",
            format!(
                "{path:?} is not an absolute path (the browser's files are the host's; give the full path)"
            ),
        ));
    }
    if path.contains(['\n', '\r', '\0']) {
        return Err(invalid(
            "paths",
            "a path may not contain line breaks or NUL",
        ));
    }
    Ok(())
}

/// The WebDriver element id in a page-library answer's `el`.
fn element_id(found: &Value) -> Option<String> {
    found
        .get("el")?
        .get(ELEMENT_KEY)?
        .as_str()
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_be_absolute_single_lines() {
        let args = |v: Value| Args::parse(&json!({ "paths": v }).to_string()).expect("args");
        assert_eq!(
            paths(&args(json!(["/srv/up/a.txt", "/srv/up/b.txt"]))).expect("ok"),
            vec!["/srv/up/a.txt".to_owned(), "/srv/up/b.txt".to_owned()]
        );
        for bad in [
            json!([]),
            json!(["a.txt"]),
            json!(["/srv/up/a.txt\n/etc/passwd"]),
            json!([5]),
            json!("/srv/up/a.txt"),
        ] {
            let e = paths(&args(bad.clone())).expect_err(&bad.to_string());
            assert!(e.details.contains("\"paths\""), "{bad}: {}", e.details);
        }
    }

    #[test]
    fn element_references_are_read_from_script_answers() {
        let found = json!({"status": "ok", "el": {ELEMENT_KEY: "f.1.e5"}});
        assert_eq!(element_id(&found).as_deref(), Some("f.1.e5"));
        assert_eq!(element_id(&json!({"el": {}})), None);
    }
}
