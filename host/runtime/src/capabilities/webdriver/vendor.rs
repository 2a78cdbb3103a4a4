//! The driver endpoints outside W3C WebDriver that a browser session may use.
//!
//! A session's HTTP gate refuses the drivers' vendor segments (`goog`,
//! `chromium`, `moz`, `se`): they reach past the page into the browser
//! (Chrome DevTools can read any origin's cookies, open files, install
//! scripts) and the host's files (add-on install, Selenium upload). The few
//! routes under them that the browser plugin needs are listed here, each with
//! what the gate checks before the request leaves:
//!
//! - `GET moz/screenshot/full` (geckodriver): a PNG of the whole document. It
//!   draws nothing a W3C element screenshot of `<html>` could not (Marionette
//!   caps either canvas at 32,767 px a side); the plugin calls it only for pages
//!   within its own height bound.
//! - `POST goog/cdp/execute` (chromedriver's DevTools passthrough), only with a
//!   body naming one command of [`ALLOWED_CDP`] whose parameters that
//!   command's rule accepts. The body is read (at most [`MAX_CDP_BODY`]) and
//!   sent on unchanged; any other command, parameter or shape is answered by
//!   the gate and never reaches the driver.
//!
//! Adding a route or a command here opens it for every browser session; each
//! entry says why it is safe.

use serde_json::{Map, Value};

/// The largest DevTools passthrough body the gate reads; a longer one is refused.
pub(crate) const MAX_CDP_BODY: usize = 16 * 1024;

/// The longest side of a captured bitmap, in pixels (CSS pixels times the
/// capture's `scale`; the device pixel ratio, which the operator sets, comes
/// on top).
pub(crate) const MAX_CAPTURE_SIDE: f64 = 16_384.0;

/// The most pixels in one captured bitmap (16,384 x 2,048: 128 MiB as RGBA).
pub(crate) const MAX_CAPTURE_PIXELS: f64 = 16_384.0 * 2_048.0;

/// The largest magnification a capture may ask for.
pub(crate) const MAX_CAPTURE_SCALE: f64 = 4.0;

/// What the gate reads of a request to an allowed vendor route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inspect {
    /// Nothing: the route takes no body that matters.
    Nothing,
    /// A DevTools passthrough body, checked by [`check_cdp_body`].
    Cdp,
}

/// One vendor route a session may reach: its method and its path after the
/// session prefix, matched exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VendorRoute {
    method: &'static str,
    path: &'static str,
    inspect: Inspect,
}

/// Driver routes outside W3C WebDriver that carry no vendor segment, refused
/// under a session like the vendor segments: chromedriver's
/// `GET screenshot/full` renders the whole document with no bound on its size
/// (the plugin's full-page capture goes through the bounded DevTools clip).
pub(crate) const REFUSED_ROUTES: &[&str] = &["/screenshot/full"];

/// The vendor routes open under a WebDriver session.
pub(crate) const ALLOWED_VENDOR: &[VendorRoute] = &[
    VendorRoute {
        method: "GET",
        path: "/moz/screenshot/full",
        inspect: Inspect::Nothing,
    },
    VendorRoute {
        method: "POST",
        path: "/goog/cdp/execute",
        inspect: Inspect::Cdp,
    },
];

/// A rule for one DevTools command's `params`: `Err` says what is wrong.
type ParamsRule = fn(&Map<String, Value>) -> Result<(), String>;

/// The DevTools commands the passthrough may carry, each with its rule.
pub(crate) const ALLOWED_CDP: &[(&str, ParamsRule)] = &[
    ("Page.captureScreenshot", capture_screenshot),
    ("Page.addScriptToEvaluateOnNewDocument", add_script),
];

/// What the gate must read of a request to `rest` (the path after the
/// session prefix) with `method`, when `routes` opens it; `None`: not an
/// allowed vendor route (its vendor segment stays refused).
pub(crate) fn route(routes: &[VendorRoute], method: &http::Method, rest: &str) -> Option<Inspect> {
    routes
        .iter()
        .find(|r| r.path == rest && method.as_str() == r.method)
        .map(|r| r.inspect)
}

/// Why the gate refused a DevTools passthrough body.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum VendorRefused {
    /// Not `{"cmd": string, "params": object}` of at most [`MAX_CDP_BODY`] bytes.
    #[error(
        "the DevTools request is not {{\"cmd\": string, \"params\": object}} of at most {max} bytes: {why}"
    )]
    BadBody {
        /// The limit.
        max: usize,
        /// What was wrong.
        why: String,
    },
    /// A command outside [`ALLOWED_CDP`].
    #[error("the DevTools command {cmd} is not open to plugins (open: {open})")]
    Command {
        /// The command asked for.
        cmd: String,
        /// The commands that are open.
        open: String,
    },
    /// An allowed command with parameters its rule refuses.
    #[error("{cmd}: {why}")]
    Params {
        /// The command.
        cmd: String,
        /// What its rule refused.
        why: String,
    },
}

/// Checks a `goog/cdp/execute` body against [`ALLOWED_CDP`]; the body passes
/// unchanged when it is accepted.
pub(crate) fn check_cdp_body(body: &[u8]) -> Result<(), VendorRefused> {
    let bad = |why: &str| VendorRefused::BadBody {
        max: MAX_CDP_BODY,
        why: why.to_owned(),
    };
    if body.len() > MAX_CDP_BODY {
        return Err(bad("too long"));
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| bad("not JSON"))?;
    let object = value.as_object().ok_or_else(|| bad("not an object"))?;
    if object.keys().any(|k| k != "cmd" && k != "params") {
        return Err(bad("fields other than `cmd` and `params`"));
    }
    let cmd = object
        .get("cmd")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no `cmd` string"))?;
    let params = object
        .get("params")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("no `params` object"))?;
    let (_, rule) = ALLOWED_CDP
        .iter()
        .find(|(name, _)| *name == cmd)
        .ok_or_else(|| VendorRefused::Command {
            cmd: cmd.to_owned(),
            open: ALLOWED_CDP
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    rule(params).map_err(|why| VendorRefused::Params {
        cmd: cmd.to_owned(),
        why,
    })
}

/// `Page.captureScreenshot`: a PNG of a bounded rectangle of the page. Only
/// `format: "png"`, `captureBeyondViewport` and a `clip` (required) whose
/// bitmap stays within [`MAX_CAPTURE_SIDE`] a side and [`MAX_CAPTURE_PIXELS`];
/// it reads pixels the page already shows and nothing else.
fn capture_screenshot(params: &Map<String, Value>) -> Result<(), String> {
    for (key, value) in params {
        match key.as_str() {
            "format" if value == "png" => {}
            "captureBeyondViewport" if value.is_boolean() => {}
            "clip" => {}
            other => return Err(format!("the parameter `{other}` = {value} is not allowed")),
        }
    }
    let clip = params
        .get("clip")
        .and_then(Value::as_object)
        .ok_or("a `clip` {x, y, width, height, scale} is required")?;
    let mut numbers = [0.0; 5];
    for (key, value) in clip {
        let slot = ["x", "y", "width", "height", "scale"]
            .iter()
            .position(|k| k == key)
            .ok_or_else(|| format!("`clip.{key}` is not allowed"))?;
        numbers[slot] = value
            .as_f64()
            .filter(|n| n.is_finite())
            .ok_or_else(|| format!("`clip.{key}` must be a finite number"))?;
    }
    if clip.len() != 5 {
        return Err("`clip` needs x, y, width, height and scale".into());
    }
    let [x, y, width, height, scale] = numbers;
    if x < 0.0 || y < 0.0 || width <= 0.0 || height <= 0.0 {
        return Err("`clip` must have x, y >= 0 and width, height > 0".into());
    }
    if !(scale > 0.0 && scale <= MAX_CAPTURE_SCALE) {
        return Err(format!(
            "`clip.scale` must be above 0 and at most {MAX_CAPTURE_SCALE}"
        ));
    }
    let (w, h) = (width * scale, height * scale);
    if w > MAX_CAPTURE_SIDE || h > MAX_CAPTURE_SIDE || w * h > MAX_CAPTURE_PIXELS {
        return Err(format!(
            "a {w:.0} x {h:.0} px capture is larger than {MAX_CAPTURE_SIDE} px a side or \
             {MAX_CAPTURE_PIXELS} pixels"
        ));
    }
    Ok(())
}

/// `Page.addScriptToEvaluateOnNewDocument`: page JavaScript run at the start
/// of every new document of the session's current tab (the browser plugin's
/// console and network hook). Only `source`, a string: no `worldName`, no
/// `includeCommandLineAPI` (DevTools' console helpers, such as `copy()` to
/// the clipboard), no `runImmediately`. It is no more power than Execute
/// Script, which already runs any JavaScript in any page of this session: the
/// same page realm of the same tab, only earlier, and gone with the session.
/// It reaches no other tab, no browser state and no host file.
fn add_script(params: &Map<String, Value>) -> Result<(), String> {
    for (key, value) in params {
        match key.as_str() {
            "source" if value.is_string() => {}
            "source" => return Err("`source` must be a string".into()),
            other => return Err(format!("the parameter `{other}` is not allowed")),
        }
    }
    if !params.contains_key("source") {
        return Err("`source` is required".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn page_scripts_for_new_documents_carry_only_their_source() {
        let add = |params: Value| {
            let body = json!({"cmd": "Page.addScriptToEvaluateOnNewDocument", "params": params});
            check_cdp_body(body.to_string().as_bytes())
        };
        assert_eq!(
            add(json!({"source": "(() => { console.log(1); })();"})),
            Ok(())
        );
        for params in [
            json!({}),
            json!({"source": 5}),
            json!({"source": "1", "includeCommandLineAPI": true}),
            json!({"source": "1", "worldName": "x"}),
            json!({"source": "1", "runImmediately": true}),
        ] {
            assert!(
                matches!(add(params.clone()), Err(VendorRefused::Params { .. })),
                "{params}"
            );
        }
        // The plugin's hook is about 11 KiB; a body past the bound is refused.
        let long = json!({"source": "a".repeat(MAX_CDP_BODY)});
        assert!(matches!(add(long), Err(VendorRefused::BadBody { .. })));
        // Its removal and the other DevTools script commands stay shut.
        for cmd in [
            "Page.removeScriptToEvaluateOnNewDocument",
            "Runtime.addBinding",
            "Runtime.evaluate",
            "Page.setBypassCSP",
        ] {
            let body = json!({"cmd": cmd, "params": {"source": "1"}}).to_string();
            assert!(
                matches!(
                    check_cdp_body(body.as_bytes()),
                    Err(VendorRefused::Command { .. })
                ),
                "{cmd}"
            );
        }
    }

    fn shot(clip: Value) -> Vec<u8> {
        json!({"cmd": "Page.captureScreenshot", "params": {"format": "png", "captureBeyondViewport": true, "clip": clip}})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn only_listed_routes_with_their_method_are_open() {
        let get = http::Method::GET;
        let post = http::Method::POST;
        assert_eq!(
            route(ALLOWED_VENDOR, &get, "/moz/screenshot/full"),
            Some(Inspect::Nothing)
        );
        assert_eq!(
            route(ALLOWED_VENDOR, &post, "/goog/cdp/execute"),
            Some(Inspect::Cdp)
        );
        for (method, rest) in [
            (&post, "/moz/screenshot/full"),
            (&get, "/goog/cdp/execute"),
            (&post, "/moz/addon/install"),
            (&post, "/moz/addon/uninstall"),
            (&post, "/moz/context"),
            (&get, "/moz/screenshot/full/x"),
            (&get, "/moz/screenshot"),
            (&post, "/goog/cdp/executeAsync"),
            (&post, "/goog/cast/set_sink_to_use"),
            (&post, "/chromium/send_command_and_get_result"),
            (&post, "/chromium/send_command"),
            (&post, "/se/file"),
            (&post, "/goog/cdp/execute/"),
            (&post, "/GOOG/cdp/execute"),
        ] {
            assert_eq!(route(ALLOWED_VENDOR, method, rest), None, "{method} {rest}");
        }
        assert_eq!(route(&[], &get, "/moz/screenshot/full"), None);
    }

    #[test]
    fn bounded_screenshots_pass() {
        let clip = json!({"x": 0, "y": 0, "width": 1280, "height": 16384, "scale": 1});
        assert_eq!(check_cdp_body(&shot(clip)), Ok(()));
        let zoom = json!({"x": 10.5, "y": 2000, "width": 300, "height": 200, "scale": 4});
        assert_eq!(check_cdp_body(&shot(zoom)), Ok(()));
        let bare = json!({"cmd": "Page.captureScreenshot", "params": {"clip": {"x": 0, "y": 0, "width": 1, "height": 1, "scale": 1}}});
        assert_eq!(check_cdp_body(bare.to_string().as_bytes()), Ok(()));
    }

    #[test]
    fn oversized_or_unbounded_screenshots_are_refused() {
        for clip in [
            json!({"x": 0, "y": 0, "width": 1280, "height": 16385, "scale": 1}),
            json!({"x": 0, "y": 0, "width": 16385, "height": 10, "scale": 1}),
            json!({"x": 0, "y": 0, "width": 4096, "height": 16384, "scale": 1}),
            json!({"x": 0, "y": 0, "width": 1280, "height": 8000, "scale": 2.5}),
            json!({"x": 0, "y": 0, "width": 10, "height": 10, "scale": 5}),
            json!({"x": 0, "y": 0, "width": 10, "height": 10, "scale": 0}),
            json!({"x": 0, "y": 0, "width": 0, "height": 10, "scale": 1}),
            json!({"x": -5, "y": 0, "width": 10, "height": 10, "scale": 1}),
            json!({"x": 0, "y": 0, "width": 10, "height": 10}),
            json!({"x": 0, "y": 0, "width": "10", "height": 10, "scale": 1}),
            json!({"x": 0, "y": 0, "width": 10, "height": 10, "scale": 1, "z": 1}),
            json!("everything"),
        ] {
            assert!(
                matches!(
                    check_cdp_body(&shot(clip.clone())),
                    Err(VendorRefused::Params { .. })
                ),
                "{clip}"
            );
        }
        let no_clip = json!({"cmd": "Page.captureScreenshot", "params": {"format": "png", "captureBeyondViewport": true}});
        assert!(check_cdp_body(no_clip.to_string().as_bytes()).is_err());
        let clip = json!({"x": 0, "y": 0, "width": 10, "height": 10, "scale": 1});
        for extra in [
            json!({"format": "jpeg"}),
            json!({"fromSurface": false}),
            json!({"captureBeyondViewport": "yes"}),
            json!({"optimizeForSpeed": true}),
        ] {
            let mut params = json!({"clip": clip});
            params
                .as_object_mut()
                .expect("object")
                .extend(extra.as_object().expect("object").clone());
            let body = json!({"cmd": "Page.captureScreenshot", "params": params}).to_string();
            assert!(
                matches!(
                    check_cdp_body(body.as_bytes()),
                    Err(VendorRefused::Params { .. })
                ),
                "{extra}"
            );
        }
    }

    #[test]
    fn other_commands_and_shapes_are_refused() {
        for cmd in [
            "Runtime.evaluate",
            "Page.navigate",
            "Network.getAllCookies",
            "Storage.getCookies",
            "Browser.setDownloadBehavior",
            "Target.createTarget",
            "Page.printToPDF",
            "Emulation.setDeviceMetricsOverride",
            "page.captureScreenshot",
            "Page.captureScreenshot ",
        ] {
            let body = json!({"cmd": cmd, "params": {}}).to_string();
            let err = check_cdp_body(body.as_bytes()).expect_err(cmd);
            assert!(matches!(err, VendorRefused::Command { .. }), "{cmd}: {err}");
            assert!(err.to_string().contains("Page.captureScreenshot"), "{err}");
        }
        for body in [
            &b"not json"[..],
            br#"["Page.captureScreenshot"]"#,
            br#"{"cmd": "Page.captureScreenshot"}"#,
            br#"{"cmd": 5, "params": {}}"#,
            br#"{"cmd": "Page.captureScreenshot", "params": [], "sessionId": "x"}"#,
            br#"{"cmd": "Page.captureScreenshot", "params": "x"}"#,
        ] {
            assert!(
                matches!(check_cdp_body(body), Err(VendorRefused::BadBody { .. })),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let long = format!(
            r#"{{"cmd":"Page.captureScreenshot","params":{{"pad":"{}"}}}}"#,
            "a".repeat(MAX_CDP_BODY)
        );
        assert!(matches!(
            check_cdp_body(long.as_bytes()),
            Err(VendorRefused::BadBody { .. })
        ));
    }
}
