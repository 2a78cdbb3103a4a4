//! `[browser]`: which browser the `webdriver` capability drives and how.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The browser behind the WebDriver sessions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BrowserKind {
    /// Chromium driven by chromedriver (Debian `chromium`, `chromium-driver`).
    #[default]
    Chromium,
    /// Firefox driven by geckodriver (Debian `firefox-esr`, geckodriver from crates.io).
    Firefox,
}

impl BrowserKind {
    /// `chromium` or `firefox`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chromium => "chromium",
            Self::Firefox => "firefox",
        }
    }
}

impl std::fmt::Display for BrowserKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A browser name that is neither `chromium` nor `firefox`.
#[derive(Debug, thiserror::Error)]
#[error("unknown browser `{0}` (expected chromium or firefox)")]
pub struct UnknownBrowser(String);

impl std::str::FromStr for BrowserKind {
    type Err = UnknownBrowser;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_lowercase().as_str() {
            "chromium" | "chrome" => Ok(Self::Chromium),
            "firefox" | "firefox-esr" => Ok(Self::Firefox),
            _ => Err(UnknownBrowser(text.to_owned())),
        }
    }
}

/// The `[browser]` section.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BrowserConfig {
    /// `chromium` (default) or `firefox`.
    pub kind: BrowserKind,
    /// Run without a window (default). `false` shows the browser, which needs a
    /// display (`DISPLAY`).
    pub headless: bool,
    /// The Chromium executable.
    pub chromium: PathBuf,
    /// The chromedriver executable.
    pub chromedriver: PathBuf,
    /// The Firefox executable; a bare name is looked up on `PATH`.
    pub firefox: PathBuf,
    /// The geckodriver executable; a bare name is looked up on `PATH`, then in
    /// `~/.cargo/bin` (where `cargo install geckodriver` puts it).
    pub geckodriver: PathBuf,
    /// Browser window size in CSS pixels, `[width, height]`.
    pub window_size: [u32; 2],
    /// Further browser command-line arguments.
    pub extra_args: Vec<String>,
    /// How long the driver may take to answer `/status` after it starts, in ms.
    pub driver_start_timeout_ms: u64,
    /// WebDriver page-load timeout, in ms. Keep it below `limits.step_timeout_ms`
    /// so a slow page fails the step instead of timing it out (a timed-out step
    /// loses its plugin instance, and with it the browser).
    pub page_load_timeout_ms: u64,
    /// WebDriver script timeout, in ms (the same reasoning).
    pub script_timeout_ms: u64,
    /// Folders whose files the browser plugin may put into a page's file
    /// inputs (`file_upload`). Absolute, existing folders; files under them
    /// (after resolving symlinks) are allowed, nothing else. Empty (the
    /// default): no uploads.
    pub upload_dirs: Vec<PathBuf>,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            kind: BrowserKind::Chromium,
            headless: true,
            chromium: PathBuf::from("/usr/bin/chromium"),
            chromedriver: PathBuf::from("/usr/bin/chromedriver"),
            firefox: PathBuf::from("firefox-esr"),
            geckodriver: PathBuf::from("geckodriver"),
            window_size: [1280, 800],
            extra_args: Vec::new(),
            driver_start_timeout_ms: 20_000,
            page_load_timeout_ms: 20_000,
            script_timeout_ms: 10_000,
            upload_dirs: Vec::new(),
        }
    }
}

impl BrowserConfig {
    /// Checks ranges; the message names the key.
    pub fn validate(&self) -> Result<(), String> {
        let [w, h] = self.window_size;
        if !(100..=10_000).contains(&w) || !(100..=10_000).contains(&h) {
            return Err(format!(
                "browser.window_size must be two numbers between 100 and 10000, got [{w}, {h}]"
            ));
        }
        for (key, value) in [
            (
                "browser.driver_start_timeout_ms",
                self.driver_start_timeout_ms,
            ),
            ("browser.page_load_timeout_ms", self.page_load_timeout_ms),
            ("browser.script_timeout_ms", self.script_timeout_ms),
        ] {
            if value == 0 {
                return Err(format!("{key} must be at least 1"));
            }
        }
        for dir in &self.upload_dirs {
            if !dir.is_absolute() {
                return Err(format!(
                    "browser.upload_dirs: `{}` is not an absolute path",
                    dir.display()
                ));
            }
            if !dir.is_dir() {
                return Err(format!(
                    "browser.upload_dirs: `{}` is not an existing folder",
                    dir.display()
                ));
            }
        }
        Ok(())
    }

    /// The driver executable for the configured browser, resolved.
    pub(crate) fn driver_path(&self) -> Option<PathBuf> {
        match self.kind {
            BrowserKind::Chromium => resolve(&self.chromedriver),
            BrowserKind::Firefox => resolve(&self.geckodriver),
        }
    }

    /// The browser executable for the configured browser, resolved.
    pub(crate) fn browser_path(&self) -> Option<PathBuf> {
        match self.kind {
            BrowserKind::Chromium => resolve(&self.chromium),
            BrowserKind::Firefox => resolve(&self.firefox),
        }
    }

    /// What to install when the driver or the browser is missing.
    pub(crate) fn install_hint(&self) -> &'static str {
        match self.kind {
            BrowserKind::Chromium => {
                "install the Debian packages `chromium` and `chromium-driver` (apt-get install chromium chromium-driver), or set browser.chromium / browser.chromedriver"
            }
            BrowserKind::Firefox => {
                "install Firefox (apt-get install firefox-esr) and geckodriver (cargo install geckodriver --locked), or set browser.firefox / browser.geckodriver"
            }
        }
    }
}

/// An executable by path, or a bare name looked up on `PATH` and in `~/.cargo/bin`.
fn resolve(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_owned());
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo").join("bin"));
    }
    dirs.into_iter()
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_by_name() {
        assert_eq!(
            "firefox".parse::<BrowserKind>().ok(),
            Some(BrowserKind::Firefox)
        );
        assert_eq!(
            "Chromium".parse::<BrowserKind>().ok(),
            Some(BrowserKind::Chromium)
        );
        assert!("safari".parse::<BrowserKind>().is_err());
    }

    #[test]
    fn bare_names_resolve_on_path_and_paths_stay() {
        assert!(resolve(Path::new("sh")).is_some(), "sh is on PATH");
        assert!(resolve(Path::new("/nonexistent/chromedriver")).is_none());
        assert!(resolve(Path::new("no-such-program-here")).is_none());
    }

    #[test]
    fn defaults_validate_and_bad_sizes_name_the_key() {
        BrowserConfig::default()
            .validate()
            .expect("defaults are valid");
        let bad = BrowserConfig {
            window_size: [10, 800],
            ..BrowserConfig::default()
        };
        let err = bad.validate().expect_err("too small");
        assert!(err.contains("browser.window_size"), "{err}");
    }

    #[test]
    fn upload_dirs_parse_and_must_be_absolute_existing_folders() {
        let config: BrowserConfig =
            serde_json::from_str(r#"{"upload_dirs": ["/tmp"]}"#).expect("parses");
        assert_eq!(config.upload_dirs, vec![PathBuf::from("/tmp")]);
        config.validate().expect("/tmp is a folder");
        assert!(BrowserConfig::default().upload_dirs.is_empty());
        for (dirs, says) in [
            (vec![PathBuf::from("relative/dir")], "not an absolute path"),
            (
                vec![PathBuf::from("/no/such/folder")],
                "not an existing folder",
            ),
            (
                vec![PathBuf::from("/etc/hostname")],
                "not an existing folder",
            ),
        ] {
            let bad = BrowserConfig {
                upload_dirs: dirs,
                ..BrowserConfig::default()
            };
            let err = bad.validate().expect_err(says);
            assert!(
                err.contains("browser.upload_dirs") && err.contains(says),
                "{err}"
            );
        }
        let typo = serde_json::from_str::<BrowserConfig>(r#"{"upload_dir": ["/tmp"]}"#);
        assert!(typo.is_err(), "unknown keys are refused");
    }
}
