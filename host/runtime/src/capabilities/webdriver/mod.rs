//! The `webdriver` capability: a real browser, driven over W3C WebDriver.
//!
//! - [`WebDriverService`] is the host-wide service
//!   ([`super::Services::webdriver`]): it starts the driver on loopback on first
//!   use (chromedriver + Chromium by default; geckodriver + Firefox when
//!   `[browser] kind = "firefox"` or `--browser firefox`) and opens sessions
//!   with capabilities built from `[browser]`, never from the plugin.
//! - Each plugin instance gets one session ([`InstanceSession`], in
//!   [`super::HostState`]); its `wasi:http` gate is scoped to that session's URL
//!   only, so the plugin reaches neither the driver's new-session endpoint (whose
//!   capabilities could name any executable) nor another instance's browser.
//!   Dropping the instance deletes the session; dropping the driver kills its
//!   process group, browsers included.
//! - `host.rs` implements the WIT interface; `client.rs` is the host's own few
//!   HTTP requests to the driver; `driver.rs` the driver process; `vendor.rs`
//!   the few driver vendor endpoints a session may still reach.

mod bindings;
mod client;
mod config;
mod driver;
mod files;
mod host;
mod service;
mod vendor;

use std::sync::Arc;

use wasmtime::component::{HasSelf, Linker};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

pub use config::{BrowserConfig, BrowserKind};
pub(crate) use service::WebDriverService;

use super::HostState;
use files::DownloadDir;
pub(crate) use files::{MAX_SEND_KEYS_BODY, UploadRefused, UploadRule, is_send_keys};
use service::Lease;
pub(crate) use vendor::{
    ALLOWED_VENDOR, Inspect, MAX_CDP_BODY, REFUSED_ROUTES, VendorRefused, VendorRoute,
    check_cdp_body, route as vendor_route,
};

/// The session a plugin instance holds, if any. Dropped with the instance,
/// which deletes the session.
#[derive(Default)]
pub(crate) struct InstanceSession {
    lease: Option<Lease>,
    /// Where this instance's browsers save downloads; every session of the
    /// instance uses it, and it goes when the instance and its last session do.
    downloads: Option<Arc<DownloadDir>>,
}

impl InstanceSession {
    /// The state for a new instance: with the `webdriver` grant it gets a
    /// download folder of its own (a failure to make one is logged, and that
    /// instance's browsers then refuse downloads).
    pub(crate) fn new(granted: bool) -> Self {
        let downloads = granted
            .then(|| match DownloadDir::create() {
                Ok(dir) => Some(dir),
                Err(error) => {
                    tracing::warn!(%error, "cannot create a download folder; downloads are off for this instance");
                    None
                }
            })
            .flatten();
        Self {
            lease: None,
            downloads,
        }
    }

    /// Lends the download folder to the plugin, read-only at `/downloads`, so
    /// it can report what a click saved without any new interface.
    pub(crate) fn preopen(&mut self, wasi: &mut WasiCtxBuilder) {
        let Some(dir) = &self.downloads else {
            return;
        };
        if let Err(error) =
            wasi.preopened_dir(dir.path(), files::GUEST_DOWNLOADS, FsPerms::ReadOnly)
        {
            tracing::warn!(%error, dir = %dir.path().display(), "cannot lend the download folder; downloads are off for this instance");
            self.downloads = None;
        }
    }
}

impl std::fmt::Debug for InstanceSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceSession")
            .field("session", &self.lease.as_ref().map(Lease::id))
            .field(
                "downloads",
                &self.downloads.as_ref().map(|d| d.path().to_owned()),
            )
            .finish()
    }
}

/// Links `stephost:plugin/webdriver`.
pub(crate) fn add_to_linker(
    linker: &mut Linker<HostState>,
    contract: stephost_contract::ContractVersion,
) -> wasmtime::Result<()> {
    match contract {
        stephost_contract::ContractVersion::V0_1 => {
            bindings::v0_1::WebdriverCapability::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        stephost_contract::ContractVersion::V0_2 => {
            bindings::v0_2::WebdriverCapability::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        stephost_contract::ContractVersion::V0_3 => {
            bindings::v0_3::WebdriverCapability::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        stephost_contract::ContractVersion::V0_4 => {
            bindings::v0_4::WebdriverCapability::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        stephost_contract::ContractVersion::V0_5 => {
            bindings::v0_5::WebdriverCapability::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        other => Err(wasmtime::Error::msg(format!(
            "contract version {other} has no host interfaces in this build"
        ))),
    }
}

/// Whether `name` (unversioned) is the webdriver interface.
pub(crate) fn is_webdriver_import(name: &str) -> bool {
    name == "stephost:plugin/webdriver"
}
