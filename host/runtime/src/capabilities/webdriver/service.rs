//! The host-wide WebDriver service: starts drivers and opens one session per
//! plugin instance.
//!
//! Chromium: one chromedriver serves every session of the host. Firefox:
//! geckodriver holds a single session per process, so each session gets its own
//! geckodriver, which goes when the session goes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::client::{self, ClientError};
use super::config::{BrowserConfig, BrowserKind};
use super::driver::{Driver, DriverError};
use super::files::{DownloadDir, UploadRule};
use crate::capabilities::http::HostOwned;

/// How long creating a session (starting the browser) may take.
const NEW_SESSION_TIMEOUT: Duration = Duration::from_secs(60);
/// How long deleting a session may take before the host gives up on it (the
/// driver's process-group kill still ends the browser when the driver goes).
const DELETE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a session could not be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    /// The driver could not be started.
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// The driver did not answer.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The driver refused to create the session.
    #[error("the driver could not start {browser}: {error}: {message}")]
    Refused {
        /// The browser.
        browser: BrowserKind,
        /// WebDriver error code.
        error: String,
        /// Its message.
        message: String,
    },
    /// The profile folder could not be made.
    #[error("cannot create a browser profile folder {path}: {message}")]
    Profile {
        /// The folder.
        path: String,
        /// Why.
        message: String,
    },
}

/// Starts drivers and sessions for the `webdriver` capability. Built once per
/// host (in [`crate::capabilities::Services`]); instances hold [`Lease`]s.
pub struct WebDriverService {
    config: BrowserConfig,
    /// The shared chromedriver, once started.
    shared: tokio::sync::Mutex<Option<Arc<Driver>>>,
    /// Where the driver and browser debugger addresses are registered, so that no
    /// plugin's HTTP grant reaches them.
    host_owned: HostOwned,
    /// `[browser] upload_dirs`, resolved once: what the HTTP gates check
    /// file-input paths against.
    uploads: Arc<UploadRule>,
}

impl WebDriverService {
    /// A service for `config`; nothing starts until the first session. Driver
    /// and debugger addresses go into `host_owned`.
    pub fn new(config: BrowserConfig, host_owned: HostOwned) -> Self {
        let uploads = Arc::new(UploadRule::new(&config.upload_dirs));
        Self {
            config,
            shared: tokio::sync::Mutex::new(None),
            host_owned,
            uploads,
        }
    }

    /// The folders uploads may come from.
    pub(crate) fn uploads(&self) -> Arc<UploadRule> {
        self.uploads.clone()
    }

    /// The configuration in force.
    pub fn config(&self) -> &BrowserConfig {
        &self.config
    }

    /// A driver for a new session: the shared chromedriver (restarted when it
    /// died), or a fresh geckodriver.
    async fn driver(&self) -> Result<Arc<Driver>, DriverError> {
        if self.config.kind == BrowserKind::Firefox {
            let driver = Driver::start(&self.config).await?;
            self.host_owned.add(driver.addr());
            return Ok(driver);
        }
        let mut shared = self.shared.lock().await;
        if let Some(driver) = shared.as_ref().filter(|d| d.is_alive()) {
            return Ok(driver.clone());
        }
        if let Some(dead) = shared.take() {
            self.host_owned.remove(dead.addr());
        }
        let driver = Driver::start(&self.config).await?;
        self.host_owned.add(driver.addr());
        *shared = Some(driver.clone());
        Ok(driver)
    }

    /// Opens a new session whose browser saves downloads into `downloads`
    /// (without one, Chromium refuses downloads).
    pub(crate) async fn open(
        &self,
        downloads: Option<Arc<DownloadDir>>,
    ) -> Result<Lease, OpenError> {
        let driver = self.driver().await?;
        let profile = match self.config.kind {
            BrowserKind::Chromium => {
                let dir = std::env::temp_dir().join(format!(
                    "stephost-chromium-{}",
                    uuid::Uuid::new_v4().simple()
                ));
                std::fs::create_dir_all(&dir).map_err(|e| OpenError::Profile {
                    path: dir.display().to_string(),
                    message: e.to_string(),
                })?;
                driver.track_profile(dir.clone());
                Some(dir)
            }
            // geckodriver makes a fresh temporary profile per session itself.
            BrowserKind::Firefox => None,
        };
        let body = json!({"capabilities": {"alwaysMatch": capabilities(
            &self.config,
            profile.as_deref(),
            downloads.as_deref().map(DownloadDir::path),
        )}});
        let answer = client::request(
            driver.addr(),
            http::Method::POST,
            "/session",
            Some(&body),
            NEW_SESSION_TIMEOUT,
        )
        .await;
        let refused = |error: String, message: String| {
            if let Some(dir) = &profile {
                driver.remove_profile(dir);
            }
            OpenError::Refused {
                browser: self.config.kind,
                error,
                message,
            }
        };
        let (status, answer) = match answer {
            Ok(answer) => answer,
            Err(e) => return Err(refused("no answer".into(), e.to_string())),
        };
        if let Some((error, message)) = client::webdriver_error(status, &answer) {
            return Err(refused(error, message));
        }
        let value = answer.get("value").cloned().unwrap_or(Value::Null);
        let Some(id) = value
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Err(refused(
                "bad answer".into(),
                format!("no sessionId in {value}"),
            ));
        };
        tracing::info!(browser = %self.config.kind, session = %id, driver = %driver.addr(), "webdriver session opened");
        driver.track_session(&id);
        let capabilities = value.get("capabilities").cloned().unwrap_or(Value::Null);
        // The browser's own debugging endpoint (Chromium's DevTools port) drives
        // every tab of it: as much the host's as the driver is.
        let mut owned = Vec::new();
        if let Some(addr) = debugger_addr(&capabilities) {
            self.host_owned.add(addr);
            owned.push(addr);
        }
        if self.config.kind == BrowserKind::Firefox {
            owned.push(driver.addr());
        }
        Ok(Lease {
            capabilities,
            driver,
            id,
            profile,
            downloads,
            host_owned: self.host_owned.clone(),
            owned,
        })
    }
}

/// The browser's debugging endpoint from new-session capabilities:
/// `goog:chromeOptions.debuggerAddress` or `moz:debuggerAddress` (`host:port`).
fn debugger_addr(capabilities: &Value) -> Option<SocketAddr> {
    let text = capabilities
        .pointer("/goog:chromeOptions/debuggerAddress")
        .or_else(|| capabilities.get("moz:debuggerAddress"))
        .and_then(Value::as_str)?;
    let (host, port) = text.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let ip = match host.trim_start_matches('[').trim_end_matches(']') {
        "localhost" => std::net::IpAddr::from([127, 0, 0, 1]),
        other => other.parse().ok()?,
    };
    Some(SocketAddr::new(ip, port))
}

/// The new-session capabilities for `config`.
fn capabilities(
    config: &BrowserConfig,
    profile: Option<&std::path::Path>,
    downloads: Option<&std::path::Path>,
) -> Value {
    let [width, height] = config.window_size;
    // `ignore`: an open dialog stays open and the next command fails with
    // "unexpected alert open", which the plugin turns into an error naming its
    // `dialog` verb. The default would dismiss the dialog behind the agent's back.
    let timeouts = json!({
        "pageLoad": config.page_load_timeout_ms,
        "script": config.script_timeout_ms,
        "implicit": 0
    });
    match config.kind {
        BrowserKind::Chromium => {
            let mut args: Vec<String> = Vec::new();
            if config.headless {
                args.push("--headless=new".into());
            }
            args.extend(
                [
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    // These machines have no network beyond what tests serve;
                    // background fetches would only stall and log.
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                    "--no-default-browser-check",
                ]
                .map(String::from),
            );
            args.push(format!("--window-size={width},{height}"));
            if let Some(dir) = profile {
                args.push(format!("--user-data-dir={}", dir.display()));
            }
            args.extend(config.extra_args.iter().cloned());
            let binary = config
                .browser_path()
                .unwrap_or_else(|| config.chromium.clone());
            // Downloads land in the session's own folder without asking
            // (chromedriver applies the folder to headless Chromium too);
            // without a folder there are none, rather than into ~/Downloads.
            let prefs = match downloads {
                Some(dir) => json!({
                    "download.default_directory": dir,
                    "download.prompt_for_download": false,
                    "download.directory_upgrade": true,
                    "download_restrictions": 0,
                    "safebrowsing.enabled": false
                }),
                None => json!({"download_restrictions": 3}),
            };
            json!({
                "browserName": "chrome",
                "unhandledPromptBehavior": "ignore",
                "pageLoadStrategy": "normal",
                "timeouts": timeouts,
                "goog:chromeOptions": {"binary": binary, "args": args, "prefs": prefs}
            })
        }
        BrowserKind::Firefox => {
            let mut args: Vec<String> = Vec::new();
            if config.headless {
                args.push("-headless".into());
            }
            args.push(format!("--width={width}"));
            args.push(format!("--height={height}"));
            args.extend(config.extra_args.iter().cloned());
            let binary = config
                .browser_path()
                .unwrap_or_else(|| config.firefox.clone());
            // The closed network: no update, telemetry or captive-portal checks.
            let mut prefs = json!({
                "app.update.disabledForTesting": true,
                "browser.shell.checkDefaultBrowser": false,
                "datareporting.policy.dataSubmissionEnabled": false,
                "network.captive-portal-service.enabled": false,
                "network.connectivity-service.enabled": false,
                "toolkit.telemetry.reportingpolicy.firstRun": false
            });
            if let Some(dir) = downloads {
                // Save every download into the session's folder without a
                // dialog or the downloads panel, and write the partial file
                // there too (not in /tmp), so the plugin sees it start.
                let more = json!({
                    "browser.download.dir": dir,
                    "browser.download.folderList": 2,
                    "browser.download.useDownloadDir": true,
                    "browser.download.always_ask_before_handling_new_types": false,
                    "browser.download.start_downloads_in_tmp_dir": false,
                    "browser.download.manager.showWhenStarting": false,
                    "browser.download.alwaysOpenPanel": false,
                    "browser.download.panel.shown": true,
                    "browser.helperApps.neverAsk.saveToDisk": SAVE_WITHOUT_ASKING
                });
                if let (Some(prefs), Some(more)) = (prefs.as_object_mut(), more.as_object()) {
                    prefs.extend(more.clone());
                }
            }
            json!({
                "browserName": "firefox",
                "unhandledPromptBehavior": "ignore",
                "pageLoadStrategy": "normal",
                "timeouts": timeouts,
                "moz:firefoxOptions": {"binary": binary, "args": args, "prefs": prefs}
            })
        }
    }
}

/// Types Firefox saves without asking even where it would otherwise offer to
/// open them (its list is by MIME type; anything else follows
/// `always_ask_before_handling_new_types`).
const SAVE_WITHOUT_ASKING: &str = "application/octet-stream,application/zip,application/pdf,\
    application/json,application/xml,text/plain,text/csv,text/xml,image/png,image/jpeg";

/// One open session, owned by one plugin instance. Dropping it deletes the
/// session (the browser closes) in the background.
pub(crate) struct Lease {
    driver: Arc<Driver>,
    id: String,
    capabilities: Value,
    profile: Option<PathBuf>,
    /// The instance's download folder, held until the browser has quit.
    downloads: Option<Arc<DownloadDir>>,
    host_owned: HostOwned,
    /// Host-owned addresses that live as long as this session.
    owned: Vec<SocketAddr>,
}

impl Lease {
    /// The session id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The driver's address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.driver.addr()
    }

    /// `http://127.0.0.1:PORT/session/ID`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/session/{}", self.driver.addr(), self.id)
    }

    /// `/session/ID`.
    pub(crate) fn path(&self) -> String {
        format!("/session/{}", self.id)
    }

    /// The browser.
    pub(crate) fn kind(&self) -> BrowserKind {
        self.driver.kind()
    }

    /// The capabilities the driver answered with.
    pub(crate) fn capabilities(&self) -> &Value {
        &self.capabilities
    }

    /// Whether the driver behind it still runs.
    pub(crate) fn is_alive(&self) -> bool {
        self.driver.is_alive()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // The cleanup owns a reference to the driver, so a geckodriver (one per
        // session) stops only after its browser has been asked to quit.
        for addr in self.owned.drain(..) {
            self.host_owned.remove(addr);
        }
        let driver = self.driver.clone();
        let path = self.path();
        let id = std::mem::take(&mut self.id);
        let profile = self.profile.take();
        let downloads = self.downloads.take();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let result = client::request(
                        driver.addr(),
                        http::Method::DELETE,
                        &path,
                        None,
                        DELETE_TIMEOUT,
                    )
                    .await;
                    let outcome = match result {
                        Ok((status, _)) => Ok(status),
                        Err(error) => Err(error.to_string()),
                    };
                    deleted(&driver, &id, profile.as_deref(), outcome);
                    drop(downloads);
                });
            }
            // No runtime (a plain thread, or the host shutting down): delete on a
            // thread of its own so the dropping thread never blocks.
            Err(_) => {
                std::thread::spawn(move || {
                    let outcome = if client::delete_blocking(driver.addr(), &path, DELETE_TIMEOUT) {
                        Ok(200)
                    } else {
                        Err("no 200 answer".to_owned())
                    };
                    deleted(&driver, &id, profile.as_deref(), outcome);
                    drop(downloads);
                });
            }
        }
    }
}

/// Logs how a session delete went and removes the session's profile folder.
fn deleted(
    driver: &Driver,
    id: &str,
    profile: Option<&std::path::Path>,
    outcome: Result<u16, String>,
) {
    driver.untrack_session(id);
    match outcome {
        Ok(200) => tracing::info!(session = %id, "webdriver session deleted"),
        Ok(status) => {
            tracing::debug!(session = %id, status, "webdriver session delete refused (already gone?)");
        }
        Err(error) => tracing::warn!(session = %id, %error, "webdriver session delete failed"),
    }
    if let Some(dir) = profile {
        driver.remove_profile(dir);
    }
}
