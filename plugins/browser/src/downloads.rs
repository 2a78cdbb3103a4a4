//! Downloads: the host gives each instance a folder of its own that the
//! browser saves into, and lends it to this plugin read-only at `/downloads`.
//! An acting verb notes what the folder held before it ran; a file that
//! appears meanwhile is a download the action started, reported once it is
//! complete as `{file, path, bytes}` (`path` on the host, where other tools
//! can read it).
//!
//! The settle wait after input watches the folder too: a click on a link that
//! downloads starts no navigation, and without this the plugin would wait for
//! one until the page library's mark expires.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use stephost_plugin::{Args, Failure, Output};

use crate::browser::Browser;
use crate::error::Result;

/// Where the host lends the folder.
const GUEST_DIR: &str = "/downloads";
/// The most entries read from the folder (a page can start many downloads).
const MAX_ENTRIES: usize = 1000;
/// How long an action waits for the downloads it started to complete.
const COMPLETE_WAIT_NS: u64 = 15_000_000_000;
/// How long it waits for the file of a download it saw begin to be listed.
const SHOW_WAIT_NS: u64 = 3_000_000_000;
/// How often it looks meanwhile.
const POLL_NS: u64 = 50_000_000;

/// File name -> size.
type Listing = BTreeMap<String, u64>;

/// What the folder held when the current acting verb started.
#[derive(Default)]
pub(crate) struct Downloads {
    before: Option<Listing>,
    /// The settle wait saw the folder change: a download began, even if the
    /// browser's staging file is gone again before its own file appears.
    seen: bool,
}

impl Downloads {
    /// Notes the folder's contents before an action.
    pub(crate) fn begin(&mut self) {
        self.before = Some(list(Path::new(GUEST_DIR)));
        self.seen = false;
    }

    /// Whether the folder changed since [`Downloads::begin`]: a download
    /// started (or finished) during the action.
    pub(crate) fn started(&mut self) -> bool {
        let changed = self
            .before
            .as_ref()
            .is_some_and(|before| list(Path::new(GUEST_DIR)) != *before);
        self.seen |= changed;
        changed
    }

    /// The downloads the action started, waiting (bounded) until each is
    /// complete; `host_dir` is the folder's host path. Costs one folder read
    /// when nothing was downloaded: the settle wait after input already gave
    /// a download time to appear.
    fn finish(&mut self, host_dir: Option<&str>) -> Vec<Value> {
        let Some(before) = self.before.take() else {
            return Vec::new();
        };
        let mut now = list(Path::new(GUEST_DIR));
        if now == before && !self.seen {
            return Vec::new();
        }
        let start = crate::clock::now_ns();
        loop {
            let fresh = new_entries(&before, &now, host_dir);
            // Under way: a partial file, or a download the settle wait saw
            // begin whose file is not listed yet (Chromium's staging file
            // comes and goes before the download's own file appears).
            let under_way = has_partial(&now) || (fresh.is_empty() && self.seen);
            let waited = crate::clock::now_ns().saturating_sub(start);
            let limit = if fresh.is_empty() {
                SHOW_WAIT_NS
            } else {
                COMPLETE_WAIT_NS
            };
            if !under_way || waited >= limit {
                return fresh;
            }
            crate::clock::sleep_ns(POLL_NS);
            now = list(Path::new(GUEST_DIR));
        }
    }
}

/// Ends the page library's wait marks once a download shows up: the link
/// that started it marked a navigation that will never come, and a later
/// action would otherwise wait for it too.
pub(crate) fn clear_marks(browser: &mut Browser, tab: u32) {
    const CLEAR: &str = "const reg = window.__stephostRefs; \
        if (reg) { reg.navigating = 0; reg.downloading = 0; } return true;";
    let _ = browser.script(tab, "noting a download", false, CLEAR, json!([]));
}

/// Runs an acting verb and adds `downloads` to its value when it started any.
pub(crate) fn around(
    browser: &mut Browser,
    args: &Args,
    run: fn(&mut Browser, &Args) -> std::result::Result<Output, Failure>,
) -> std::result::Result<Output, Failure> {
    browser.downloads.begin();
    let result = run(browser, args);
    let host_dir = browser.download_dir();
    let found = browser.downloads.finish(host_dir.as_deref());
    let mut output = result?;
    if !found.is_empty() {
        let mut value = output.value_json();
        if let Some(map) = value.as_object_mut() {
            map.insert("downloads".into(), Value::Array(found));
            output.value = value.to_string();
        }
    }
    Ok(output)
}

/// `downloads`: every file in the session's download folder.
pub(crate) fn list_verb(browser: &mut Browser) -> Result<Value> {
    let host_dir = browser.download_dir();
    let files = all_entries(&list(Path::new(GUEST_DIR)), host_dir.as_deref());
    Ok(match host_dir {
        Some(dir) => json!({"folder": dir, "downloads": files}),
        None => json!({
            "folder": null,
            "downloads": files,
            "note": "this host gives the browser no download folder, so downloads are off"
        }),
    })
}

/// The files in the folder, for `tabs_context` (empty when none).
pub(crate) fn all(browser: &mut Browser) -> Vec<Value> {
    let host_dir = browser.download_dir();
    all_entries(&list(Path::new(GUEST_DIR)), host_dir.as_deref())
}

/// Reads the folder (top level, files only, bounded); a folder that is not
/// there reads as empty.
fn list(dir: &Path) -> Listing {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Listing::new();
    };
    entries
        .filter_map(std::result::Result::ok)
        .filter_map(|entry| {
            let meta = entry.metadata().ok()?;
            meta.is_file()
                .then(|| (entry.file_name().to_string_lossy().into_owned(), meta.len()))
        })
        .take(MAX_ENTRIES)
        .collect()
}

/// Whether `name` is a browser's file for a download still under way:
/// Chromium's `.crdownload` and its hidden `.org.chromium.*` staging files,
/// Firefox's `.part`.
fn is_partial(name: &str) -> bool {
    name.ends_with(".crdownload")
        || name.ends_with(".part")
        || name.starts_with(".org.chromium.")
        || name.starts_with(".com.google.Chrome.")
}

fn has_partial(listing: &Listing) -> bool {
    listing.keys().any(|name| is_partial(name))
}

/// Files in `now` that are new or changed since `before`, as reported: a
/// download still under way is listed as `complete: false` under the name it
/// will have; Firefox's empty placeholder beside its `.part` file is left out.
fn new_entries(before: &Listing, now: &Listing, host_dir: Option<&str>) -> Vec<Value> {
    let fresh: Listing = now
        .iter()
        .filter(|(name, size)| before.get(*name) != Some(size))
        .map(|(name, size)| (name.clone(), *size))
        .collect();
    all_entries(&fresh, host_dir)
}

fn all_entries(listing: &Listing, host_dir: Option<&str>) -> Vec<Value> {
    let mut out = Vec::new();
    for (name, size) in listing {
        if name.starts_with(".org.chromium.") || name.starts_with(".com.google.Chrome.") {
            continue;
        }
        let (file, complete) = match name
            .strip_suffix(".crdownload")
            .or_else(|| name.strip_suffix(".part"))
        {
            Some(stem) => (stem, false),
            None => (name.as_str(), true),
        };
        if complete
            && (listing.contains_key(&format!("{name}.part"))
                || listing.contains_key(&format!("{name}.crdownload")))
        {
            continue;
        }
        let path = host_dir.map(|dir| format!("{}/{name}", dir.trim_end_matches('/')));
        let mut entry = json!({"file": file, "path": path, "bytes": size});
        if !complete {
            entry["complete"] = json!(false);
        }
        out.push(entry);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(items: &[(&str, u64)]) -> Listing {
        items.iter().map(|(n, s)| ((*n).to_owned(), *s)).collect()
    }

    #[test]
    fn new_and_changed_files_are_reported_with_host_paths() {
        let before = listing(&[("old.txt", 3)]);
        let now = listing(&[("old.txt", 3), ("report.csv", 12)]);
        assert_eq!(
            new_entries(&before, &now, Some("/tmp/stephost-downloads-1/")),
            vec![
                json!({"file": "report.csv", "path": "/tmp/stephost-downloads-1/report.csv", "bytes": 12})
            ]
        );
        let rewritten = listing(&[("old.txt", 5)]);
        assert_eq!(new_entries(&before, &rewritten, None).len(), 1);
        assert!(new_entries(&before, &before, None).is_empty());
    }

    #[test]
    fn partial_files_read_as_downloads_under_way() {
        for name in [
            "a.bin.crdownload",
            "a.bin.part",
            ".org.chromium.Chromium.x1",
            "Unconfirmed 1.crdownload",
        ] {
            assert!(is_partial(name), "{name}");
        }
        assert!(!is_partial("a.bin"));
        // Firefox: an empty placeholder under the final name beside the .part.
        let now = listing(&[("slow.bin", 0), ("slow.bin.part", 1000)]);
        assert!(has_partial(&now));
        assert_eq!(
            new_entries(&Listing::new(), &now, Some("/d")),
            vec![
                json!({"file": "slow.bin", "path": "/d/slow.bin.part", "bytes": 1000, "complete": false})
            ]
        );
        // Chromium's hidden staging file is never listed.
        let staging = listing(&[(".org.chromium.Chromium.YnfqdN", 0)]);
        assert!(new_entries(&Listing::new(), &staging, None).is_empty());
    }

    #[test]
    fn a_missing_folder_reads_as_empty() {
        assert!(list(Path::new("/no/such/folder")).is_empty());
    }
}
