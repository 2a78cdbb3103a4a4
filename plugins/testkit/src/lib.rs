//! `testkit`: a stephost plugin whose verbs exercise the host rather than the world.
//!
//! Each verb stands for one behaviour the host must handle: values passing through
//! (`echo`), a guest blocked in a WASI call (`sleep`), a guest that never yields
//! (`spin`), memory limits (`alloc`), failures and retries (`fail`, `flaky`), instance
//! reuse within a session (`count`), traps (`panic`), logging (`log`) and image
//! content (`image`).

mod args;
mod catalog;
mod png;
#[cfg(test)]
mod tests;

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use args::{Args, invalid};
use catalog::verbs;

wit_bindgen::generate!({ path: "../../wit", world: "plugin" });

use exports::stephost::plugin::tool::Guest;
use stephost::plugin::log::{Level, log};
use stephost::plugin::types::{Content, Failure, Image, Output, PluginInfo};

/// Longest `sleep`: one hour, far past any sensible step timeout.
const MAX_SLEEP_MS: u64 = 3_600_000;
/// Largest `alloc`, in MiB. A wasm32 guest cannot reach it (its address space is
/// 4 GiB), so big requests fail as `out-of-memory` or hit the host's limit first.
const MAX_ALLOC_MIB: u64 = 65_536;
/// Most `flaky` failures before a success; keeps the call counter well inside a `u32`.
const MAX_FLAKY_FAILURES: u64 = 1_000_000;
/// Largest `image` side, in pixels.
const MAX_IMAGE_SIDE: u64 = 4_096;
/// Granularity at which `alloc` touches memory (a typical host page).
const PAGE: usize = 4_096;

// Per-instance state. The host gives each session its own component instance, with
// its own linear memory, so these statics live exactly as long as the session. Wasm
// guests are single-threaded; atomics are just the safe way to have mutable statics.
static FLAKY_CALLS: AtomicU32 = AtomicU32::new(0);
static COUNT: AtomicU32 = AtomicU32::new(0);

/// The component's implementation of the `tool` interface.
struct Testkit;

export!(Testkit);

impl Guest for Testkit {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "testkit".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Test verbs that exercise the stephost host: echo values, sleep in a \
                WASI call, spin forever, allocate memory, fail on demand or a set number of times, \
                count calls within a session, panic, log, and return PNG images."
                .into(),
            bare_tool_names: false,
            verbs: verbs(),
        }
    }

    fn invoke(verb: String, input: String) -> Result<Output, Failure> {
        // Each arm names the fields its schema allows: the host validates inputs, but
        // the plugin re-checks everything it reads rather than trusting that.
        match verb.as_str() {
            "echo" => {
                let value = Args::parse(&input, &["value"])?.value("value")?.to_string();
                Ok(Output {
                    content: vec![Content::Text(value.clone())],
                    value,
                })
            }
            "sleep" => {
                let ms = Args::parse(&input, &["ms"])?.int("ms", 0..=MAX_SLEEP_MS, None)?;
                // On wasip2 this is a wasi:clocks poll: the guest blocks in the host,
                // which can time the call out.
                std::thread::sleep(Duration::from_millis(ms));
                ok(json!({ "slept_ms": ms }))
            }
            "spin" => {
                Args::parse(&input, &[])?;
                spin()
            }
            "alloc" => alloc(Args::parse(&input, &["mib"])?.int("mib", 1..=MAX_ALLOC_MIB, None)?),
            "fail" => {
                let args = Args::parse(&input, &["code", "message", "input_fired", "details"])?;
                Err(Failure {
                    code: args.string("code", "failed")?,
                    message: args.string("message", "requested failure")?,
                    input_fired: args.boolean("input_fired", true)?,
                    details: args
                        .get("details")
                        .map(|d| d.to_string())
                        .unwrap_or_default(),
                })
            }
            "flaky" => flaky(&Args::parse(&input, &["failures", "code", "input_fired"])?),
            "count" => {
                Args::parse(&input, &[])?;
                ok(json!(COUNT.fetch_add(1, Ordering::Relaxed) + 1))
            }
            "panic" => {
                let message = Args::parse(&input, &["message"])?
                    .string("message", "testkit panic requested")?;
                panic!("{message}")
            }
            "log" => {
                let args = Args::parse(&input, &["message", "level"])?;
                let message = args.string_required("message")?;
                let level = match args.string("level", "info")?.as_str() {
                    "trace" => Level::Trace,
                    "debug" => Level::Debug,
                    "info" => Level::Info,
                    "warn" => Level::Warn,
                    "error" => Level::Error,
                    other => {
                        let levels = "trace, debug, info, warn, error";
                        let message = format!("`level` must be one of {levels}; got `{other}`");
                        return Err(invalid("level", message));
                    }
                };
                log(level, &message);
                ok(Value::Null)
            }
            "image" => image(&Args::parse(&input, &["width", "height", "color"])?),
            _ => {
                let known: Vec<String> = verbs().into_iter().map(|v| v.name).collect();
                Err(Failure {
                    code: "invalid-input".into(),
                    message: format!(
                        "testkit has no verb `{verb}`; its verbs are: {}",
                        known.join(", ")
                    ),
                    input_fired: false,
                    details: json!({ "verb": verb, "known_verbs": known }).to_string(),
                })
            }
        }
    }
}

/// Never returns: the stand-in for a guest stuck in a computation.
fn spin() -> ! {
    // black_box hides the counter from the optimiser so the loop stays a real loop.
    let mut n = 0u64;
    loop {
        n = black_box(n.wrapping_add(1));
    }
}

/// Allocates and touches `mib` MiB so the memory is really committed, then frees it.
fn alloc(mib: u64) -> Result<Output, Failure> {
    let oom = |message: String| Failure {
        code: "out-of-memory".into(),
        message,
        input_fired: false,
        details: String::new(),
    };
    let bytes = usize::try_from(mib)
        .ok()
        .and_then(|m| m.checked_mul(1 << 20))
        .ok_or_else(|| {
            oom(format!(
                "{mib} MiB does not fit in this guest's address space"
            ))
        })?;
    let mut buf: Vec<u8> = Vec::new();
    buf.try_reserve_exact(bytes)
        .map_err(|e| oom(format!("could not allocate {mib} MiB: {e}")))?;
    for page in buf.spare_capacity_mut().chunks_mut(PAGE) {
        page[0].write(1);
    }
    black_box(&buf);
    // The linear memory stays grown after the free: wasm memories never shrink.
    ok(json!({ "allocated_mib": mib }))
}

/// Fails the first `failures` calls of a round, then succeeds and starts a new round.
fn flaky(args: &Args) -> Result<Output, Failure> {
    let failures = args.int("failures", 0..=MAX_FLAKY_FAILURES, None)?;
    let code = args.string("code", "world-moved")?;
    let input_fired = args.boolean("input_fired", false)?;
    let calls = FLAKY_CALLS.fetch_add(1, Ordering::Relaxed) + 1;
    if u64::from(calls) <= failures {
        return Err(Failure {
            code,
            message: format!("flaky: requested failure {calls} of {failures}"),
            input_fired,
            details: json!({ "calls": calls, "failures": failures }).to_string(),
        });
    }
    FLAKY_CALLS.store(0, Ordering::Relaxed);
    ok(json!({ "calls": calls }))
}

/// Returns a solid-colour PNG as image content.
fn image(args: &Args) -> Result<Output, Failure> {
    let width = args.int("width", 1..=MAX_IMAGE_SIDE, None)? as u32;
    let height = args.int("height", 1..=MAX_IMAGE_SIDE, None)? as u32;
    let color = match args.get("color") {
        None => [255, 0, 0],
        Some(v) => rgb(v).ok_or_else(|| {
            invalid(
                "color",
                "`color` must be an array of three integers 0-255: [red, green, blue]",
            )
        })?,
    };
    let data = png::solid_rgb(width, height, color);
    let [r, g, b] = color;
    let text = format!(
        "{width}x{height} PNG filled with rgb({r}, {g}, {b}), {} bytes",
        data.len()
    );
    Ok(Output {
        value: json!({ "width": width, "height": height }).to_string(),
        content: vec![
            Content::Image(Image {
                mime: "image/png".into(),
                data,
            }),
            Content::Text(text),
        ],
    })
}

/// Reads `[r, g, b]`.
fn rgb(value: &Value) -> Option<[u8; 3]> {
    match value.as_array()?.as_slice() {
        [r, g, b] => Some([byte(r)?, byte(g)?, byte(b)?]),
        _ => None,
    }
}

/// Reads one colour channel.
fn byte(value: &Value) -> Option<u8> {
    value.as_u64().and_then(|n| u8::try_from(n).ok())
}

/// A successful result with this value and no content.
fn ok(value: Value) -> Result<Output, Failure> {
    Ok(Output {
        value: value.to_string(),
        content: Vec::new(),
    })
}
