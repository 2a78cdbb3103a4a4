// One contract version's `webdriver` interface: included by host.rs once per
// version, with `wit` naming that version's bindings.

use wit::stephost::plugin::webdriver::{Host, SessionError, SessionInfo};
use crate::capabilities::webdriver::files::UploadRule;
use crate::capabilities::webdriver::service::Lease;
use crate::capabilities::HostState;
use crate::capabilities::http::ScopedDestination;

/// Driver endpoints outside W3C WebDriver, refused even inside the instance's
/// own session: Chrome DevTools passthrough (`goog`, `chromium`), Firefox
/// add-on install (`moz`), Selenium file upload (`se`). They reach past the
/// page into the browser and the host's files. The few routes under them a
/// session may use are `vendor.rs`'s `ALLOWED_VENDOR`, each checked there.
const VENDOR_SEGMENTS: &[&str] = &["goog", "chromium", "moz", "se"];

impl Host for HostState {
    async fn session(&mut self) -> Result<SessionInfo, SessionError> {
        if !self.grant.webdriver {
            return Err(SessionError::NotGranted(format!(
                "plugin `{}` has no `webdriver` grant (set webdriver = true under [plugins.grants.{}])",
                self.plugin, self.plugin
            )));
        }
        if let Some(lease) = &self.webdriver.lease {
            if lease.is_alive() {
                return Ok(record(lease, &self.webdriver, &self.services.webdriver.uploads()));
            }
            tracing::warn!(
                plugin = &*self.plugin,
                session = lease.id(),
                "the webdriver driver died; opening a new session"
            );
            self.end_session().await;
        }
        // Open in a task of its own: if this call is dropped (the step timed out
        // while the browser started), the task still finishes, and the lease
        // nobody receives is dropped, which deletes the session.
        let services = self.services.clone();
        let downloads = self.webdriver.downloads.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let _ = tx.send(services.webdriver.open(downloads).await);
        });
        let lease = match rx.await {
            Ok(Ok(lease)) => lease,
            Ok(Err(e)) => return Err(SessionError::Unavailable(e.to_string())),
            Err(_) => return Err(SessionError::Unavailable("the session task ended".into())),
        };
        self.http_gate.add_scope(ScopedDestination {
            host: lease.addr().ip().to_string(),
            port: lease.addr().port(),
            prefix: lease.path(),
            denied_segments: VENDOR_SEGMENTS.iter().map(|s| s.to_string()).collect(),
            vendor: crate::capabilities::webdriver::ALLOWED_VENDOR,
            refused_routes: crate::capabilities::webdriver::REFUSED_ROUTES,
            send_keys: Some(self.services.webdriver.uploads()),
        });
        let session = record(&lease, &self.webdriver, &self.services.webdriver.uploads());
        self.webdriver.lease = Some(lease);
        Ok(session)
    }

    async fn end_session(&mut self) {
        // The gate keeps the old scope on purpose: its session is gone, and
        // removing it would hand the driver's address back to the allow-list
        // (which a broad grant such as `loopback:*` would let through whole).
        drop(self.webdriver.lease.take());
    }
}

/// The session as the plugin sees it. The capabilities carry two host facts
/// the driver does not know, under the host's own prefix: the download folder
/// on the host (the plugin reads it at `/downloads`; agents get host paths) and
/// the folders granted for uploads.
fn record(
    lease: &Lease,
    instance: &crate::capabilities::webdriver::InstanceSession,
    uploads: &UploadRule,
) -> SessionInfo {
    let mut capabilities = lease.capabilities().clone();
    if let Some(map) = capabilities.as_object_mut() {
        if let Some(dir) = &instance.downloads {
            map.insert(
                "stephost:downloadDir".into(),
                dir.path().display().to_string().into(),
            );
        }
        map.insert(
            "stephost:uploadDirs".into(),
            uploads
                .dirs()
                .iter()
                .map(|d| serde_json::Value::from(d.display().to_string()))
                .collect(),
        );
    }
    SessionInfo {
        url: lease.url(),
        browser: lease.kind().as_str().to_owned(),
        capabilities: capabilities.to_string(),
    }
}
