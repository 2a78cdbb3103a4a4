//! Host files a browser session touches: the download folder the host makes for
//! each plugin instance, and the folders the operator lets uploads come from
//! (`[browser] upload_dirs`).
//!
//! The plugin never names host files itself except through one WebDriver
//! command, Element Send Keys (`POST /session/ID/element/EL/value`): on a file
//! input the driver reads every line of its text as a host path and hands the
//! file to the page. [`UploadRule`] is what the instance's HTTP gate checks
//! those bodies against, so no spelling of a path (a symlink, `..`, a relative
//! name) reaches a file outside the granted folders.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the download folder appears inside the plugin (read-only).
pub(crate) const GUEST_DOWNLOADS: &str = "/downloads";

/// The largest Element Send Keys body the gate reads; a longer one is refused.
pub(crate) const MAX_SEND_KEYS_BODY: usize = 64 * 1024;

/// One instance's download folder under the host's temporary directory:
/// the browser saves there, the plugin sees it read-only at
/// [`GUEST_DOWNLOADS`]. Removed when the last holder goes (the instance, and
/// the session delete that runs after it), so never while the browser may
/// still write into it.
#[derive(Debug)]
pub(crate) struct DownloadDir {
    path: PathBuf,
}

impl DownloadDir {
    /// Makes a fresh folder (`stephost-downloads-<uuid>`), private to the host user.
    pub(crate) fn create() -> std::io::Result<Arc<Self>> {
        let path = std::env::temp_dir().join(format!(
            "stephost-downloads-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&path)?;
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(Arc::new(Self { path }))
    }

    /// The folder on the host.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DownloadDir {
    fn drop(&mut self) {
        match std::fs::remove_dir_all(&self.path) {
            Ok(()) => tracing::debug!(dir = %self.path.display(), "download folder removed"),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                tracing::warn!(dir = %self.path.display(), %error, "cannot remove the download folder");
            }
        }
    }
}

/// Why the gate refused an Element Send Keys body.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum UploadRefused {
    /// The text names a host file, and no folder is granted.
    #[error(
        "{path} is a file on the host, and no folder is granted for uploads (set [browser] upload_dirs = [\"/some/folder\"] to allow files under it)"
    )]
    NothingGranted {
        /// The path as the plugin wrote it.
        path: String,
    },
    /// The text names a host file outside every granted folder.
    #[error(
        "{path} is outside the folders granted for uploads ({dirs}); [browser] upload_dirs lists them"
    )]
    Outside {
        /// The path as the plugin wrote it.
        path: String,
        /// The granted folders.
        dirs: String,
    },
    /// The body is not the `{"text": "..."}` the plugin sends.
    #[error("the send-keys request is not {{\"text\": string}} of at most {max} bytes: {why}")]
    BadBody {
        /// The limit.
        max: usize,
        /// What was wrong.
        why: String,
    },
}

/// The folders uploads may come from, canonical. Empty: none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct UploadRule {
    dirs: Vec<PathBuf>,
}

impl UploadRule {
    /// A rule for these folders; one that cannot be resolved (gone since the
    /// config was checked) is left out and logged, never widened.
    pub(crate) fn new(dirs: &[PathBuf]) -> Self {
        let dirs = dirs
            .iter()
            .filter_map(|dir| match std::fs::canonicalize(dir) {
                Ok(canonical) if canonical.is_dir() => Some(canonical),
                Ok(_) => {
                    tracing::warn!(dir = %dir.display(), "browser.upload_dirs entry is not a folder; left out");
                    None
                }
                Err(error) => {
                    tracing::warn!(dir = %dir.display(), %error, "browser.upload_dirs entry cannot be resolved; left out");
                    None
                }
            })
            .collect();
        Self { dirs }
    }

    /// The granted folders, canonical.
    pub(crate) fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Checks an Element Send Keys body and returns the body to send: every
    /// line of `text` that names an existing host file or folder must lie,
    /// once resolved (symlinks, `..`, relative to the driver's working
    /// directory, which is the host's), under a granted folder, and is
    /// replaced by its canonical path, so what the driver opens is what was
    /// checked. Lines naming nothing pass unchanged: they are text for a text
    /// field, and a file input refuses them.
    pub(crate) fn check_body(&self, body: &[u8]) -> Result<Vec<u8>, UploadRefused> {
        let bad = |why: &str| UploadRefused::BadBody {
            max: MAX_SEND_KEYS_BODY,
            why: why.to_owned(),
        };
        if body.len() > MAX_SEND_KEYS_BODY {
            return Err(bad("too long"));
        }
        let value: serde_json::Value = serde_json::from_slice(body).map_err(|_| bad("not JSON"))?;
        let object = value.as_object().ok_or_else(|| bad("not an object"))?;
        // Drivers also read older field names (`value`: an array of
        // characters); only `text` is checked, so nothing else may come along.
        if object.keys().any(|k| k != "text") {
            return Err(bad("fields other than `text`"));
        }
        let text = object
            .get("text")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| bad("no `text` string"))?;
        let checked = self.check_text(text)?;
        Ok(serde_json::json!({ "text": checked })
            .to_string()
            .into_bytes())
    }

    /// [`UploadRule::check_body`] on the text alone.
    pub(crate) fn check_text(&self, text: &str) -> Result<String, UploadRefused> {
        let mut lines = Vec::new();
        for line in text.split('\n') {
            if line.contains('\0') {
                return Err(UploadRefused::BadBody {
                    max: MAX_SEND_KEYS_BODY,
                    why: "a NUL character".into(),
                });
            }
            let Ok(canonical) = std::fs::canonicalize(line) else {
                lines.push(line.to_owned());
                continue;
            };
            if self.dirs.iter().any(|dir| canonical.starts_with(dir)) {
                lines.push(canonical.to_string_lossy().into_owned());
                continue;
            }
            return Err(if self.dirs.is_empty() {
                UploadRefused::NothingGranted {
                    path: line.to_owned(),
                }
            } else {
                UploadRefused::Outside {
                    path: line.to_owned(),
                    dirs: self
                        .dirs
                        .iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                }
            });
        }
        Ok(lines.join("\n"))
    }
}

/// Whether a request under a WebDriver session is one whose text a driver
/// may read as host paths: Element Send Keys (`element/EL/value`), and the
/// legacy send-keys-to-the-active-element (`keys`) some drivers still answer.
/// `rest` is the path after the session prefix.
pub(crate) fn is_send_keys(method: &http::Method, rest: &str) -> bool {
    if method != http::Method::POST {
        return false;
    }
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    matches!(segments.as_slice(), [.., "element", _, "value"] | ["keys"])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = std::fs::canonicalize(dir.path()).expect("canonical");
        (dir, path)
    }

    #[test]
    fn files_in_granted_folders_pass_as_canonical_paths() {
        let (_keep, granted) = folder();
        std::fs::write(granted.join("a.txt"), b"a").expect("write");
        std::fs::create_dir_all(granted.join("sub")).expect("mkdir");
        std::fs::write(granted.join("sub/b.txt"), b"b").expect("write");
        let rule = UploadRule::new(std::slice::from_ref(&granted));
        let text = format!(
            "{}\n{}/sub/../sub/b.txt",
            granted.join("a.txt").display(),
            granted.display()
        );
        assert_eq!(
            rule.check_text(&text).expect("granted"),
            format!(
                "{}\n{}",
                granted.join("a.txt").display(),
                granted.join("sub/b.txt").display()
            )
        );
        assert_eq!(
            rule.check_text("hello world").expect("plain text"),
            "hello world"
        );
    }

    #[test]
    fn files_outside_and_symlink_escapes_are_refused() {
        let (_keep, granted) = folder();
        let (_keep2, other) = folder();
        std::fs::write(other.join("secret"), b"s").expect("write");
        std::os::unix::fs::symlink(other.join("secret"), granted.join("link")).expect("symlink");
        let rule = UploadRule::new(std::slice::from_ref(&granted));
        for text in [
            other.join("secret").display().to_string(),
            granted.join("link").display().to_string(),
            format!(
                "{}/../{}/secret",
                granted.display(),
                other.file_name().expect("name").to_string_lossy()
            ),
            "/etc/passwd".to_owned(),
            format!("{}\n/etc/passwd", granted.display()),
        ] {
            let err = rule.check_text(&text).expect_err(&text);
            assert!(
                matches!(err, UploadRefused::Outside { .. }),
                "{text}: {err}"
            );
            assert!(err.to_string().contains("upload_dirs"), "{err}");
        }
        assert!(rule.check_text("/etc/passwd\0").is_err());
    }

    #[test]
    fn without_a_grant_no_host_file_passes() {
        let rule = UploadRule::new(&[]);
        let err = rule.check_text("/etc/hostname").expect_err("no grant");
        assert!(matches!(err, UploadRefused::NothingGranted { .. }), "{err}");
        assert!(err.to_string().contains("[browser] upload_dirs"), "{err}");
        assert!(rule.check_text("/").is_err(), "folders count too");
        assert!(rule.check_text(".").is_err(), "relative names resolve");
        assert_eq!(
            rule.check_text("/no/such/file").expect("names nothing"),
            "/no/such/file"
        );
    }

    #[test]
    fn bodies_other_than_text_are_refused() {
        let (_keep, granted) = folder();
        let rule = UploadRule::new(std::slice::from_ref(&granted));
        assert_eq!(
            rule.check_body(br#"{"text":"hi"}"#).expect("text"),
            br#"{"text":"hi"}"#.to_vec()
        );
        for body in [
            &br#"{"text":"hi","value":["/","e","t","c"]}"#[..],
            br#"{"value":["a"]}"#,
            br#"["/etc/passwd"]"#,
            b"not json",
            br#"{"text":5}"#,
        ] {
            assert!(
                matches!(rule.check_body(body), Err(UploadRefused::BadBody { .. })),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let long = format!(r#"{{"text":"{}"}}"#, "a".repeat(MAX_SEND_KEYS_BODY));
        assert!(rule.check_body(long.as_bytes()).is_err());
    }

    #[test]
    fn send_keys_paths_are_recognized() {
        let post = http::Method::POST;
        assert!(is_send_keys(&post, "/element/abc/value"));
        assert!(is_send_keys(&post, "/shadow/s1/element/abc/value"));
        assert!(is_send_keys(&post, "/keys"));
        assert!(!is_send_keys(&http::Method::GET, "/element/abc/value"));
        assert!(!is_send_keys(&post, "/element/abc/click"));
        assert!(!is_send_keys(&post, "/execute/sync"));
    }

    #[test]
    fn download_folders_go_with_their_last_holder() {
        let dir = DownloadDir::create().expect("create");
        let path = dir.path().to_owned();
        std::fs::write(path.join("f"), b"x").expect("write");
        let other = dir.clone();
        drop(dir);
        assert!(path.is_dir(), "still held");
        drop(other);
        assert!(!path.exists(), "removed");
    }
}
