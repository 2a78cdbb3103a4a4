//! `testkit`: a stephost plugin whose verbs exercise the host rather than the world.
//!
//! Each verb stands for one behaviour the host must handle: values passing through
//! (`echo`), a guest blocked in a WASI call (`sleep`), a guest that never yields
//! (`spin`), memory limits (`alloc`), failures and retries (`fail`, `flaky`), instance
//! reuse within a session (`count`), traps (`panic`), logging (`log`) and image
//! content (`image`).

mod catalog;
mod png;
#[cfg(test)]
mod tests;

use std::hint::black_box;
use std::time::Duration;

use serde_json::{Map, Value, json};
use stephost_plugin::{
    Args, Content, Failure, FailureCode, Level, Output, Plugin, RecoveryAction, RecoveryStrategy,
    Verb, export_plugin, log,
};

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

/// The plugin.
struct Testkit;

/// Per-instance (so per-session) state: the SDK keeps one per instance.
#[derive(Default)]
struct State {
    /// Calls of `flaky` in the current round.
    flaky_calls: u32,
    /// Calls of `count`.
    count: u32,
}

impl Plugin for Testkit {
    const NAME: &'static str = "testkit";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str = "Test verbs that exercise the stephost host: echo values, \
        sleep in a WASI call, spin forever, allocate memory, fail on demand or a set number of \
        times, count calls within a session, panic, log, and return PNG images.";
    type State = State;

    fn verbs() -> Vec<Verb<State>> {
        catalog::verbs()
    }
}

export_plugin!(Testkit);

/// An integer field within `min..=max` (the schemas' bounds), as `u64`.
fn uint(args: &Args, field: &str, min: u64, max: u64) -> Result<u64, Failure> {
    // The bounds are this file's constants, all far inside i64.
    let n = args.int(field, min as i64..=max as i64)?;
    Ok(n as u64)
}

fn echo(_: &mut State, args: &Args) -> Result<Output, Failure> {
    // Serialized once for both: echo is the step the engine benchmarks use, so
    // it costs what a plugin's minimum costs.
    let text = args.value("value")?.to_string();
    Ok(Output {
        value: text.clone(),
        content: vec![Content::Text(text)],
    })
}

fn sleep(_: &mut State, args: &Args) -> Result<Output, Failure> {
    let ms = uint(args, "ms", 0, MAX_SLEEP_MS)?;
    // On wasip2 this is a wasi:clocks poll: the guest blocks in the host, which can
    // time the call out.
    std::thread::sleep(Duration::from_millis(ms));
    ok(json!({ "slept_ms": ms }))
}

fn spin_verb(_: &mut State, _: &Args) -> Result<Output, Failure> {
    spin()
}

fn alloc_verb(_: &mut State, args: &Args) -> Result<Output, Failure> {
    alloc(uint(args, "mib", 1, MAX_ALLOC_MIB)?)
}

/// Fails as asked. A `details` object in the 0.1.0 style (with `classification`
/// and `recovery` keys) is split: those two become the typed fields, so host tests
/// written against the old contract keep proposing the same recovery; anything
/// else stays in `details`.
fn fail(_: &mut State, args: &Args) -> Result<Output, Failure> {
    let mut failure = Failure::new(
        args.str_or("code", "failed")?,
        args.str_or("message", "requested failure")?,
    )
    .with_input_fired(args.boolean("input_fired", true)?);
    match args.get("details").cloned() {
        Some(Value::Object(mut details)) => {
            let classification = details.remove("classification");
            let recovery = details.remove("recovery");
            if let Some(Value::String(class)) = classification {
                failure = failure.with_classification(class);
            }
            for strategy in recovery
                .as_ref()
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                failure = failure.with_recovery(lift_strategy(strategy));
            }
            if !details.is_empty() {
                failure = failure.with_details(Value::Object(details));
            }
        }
        Some(other) => failure = failure.with_details(other),
        None => {}
    }
    Err(failure)
}

/// A 0.1.0-style strategy object as the typed record, read as 0.1.0 read it: a
/// missing `tier` is 2. Lenient on purpose: other fields that are missing or of
/// the wrong type become empty (an empty name, tier 0, an empty verb), which the
/// host reports as malformed, as it did the JSON.
fn lift_strategy(strategy: &Value) -> RecoveryStrategy {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let tier = match strategy.get("tier") {
        None | Some(Value::Null) => 2,
        Some(t) => t.as_u64().and_then(|t| u8::try_from(t).ok()).unwrap_or(0),
    };
    let mut lifted = RecoveryStrategy::new(text(strategy, "name").unwrap_or_default(), tier);
    lifted.description = text(strategy, "description");
    let actions = strategy.get("actions").and_then(Value::as_array);
    for action in actions.into_iter().flatten() {
        let input = action
            .get("input")
            .cloned()
            .unwrap_or(Value::Object(Map::new()));
        let mut call = RecoveryAction::new(text(action, "verb").unwrap_or_default(), input);
        call.description = text(action, "description");
        lifted = lifted.with_action(call);
    }
    lifted
}

fn count(state: &mut State, _: &Args) -> Result<Output, Failure> {
    state.count += 1;
    ok(json!(state.count))
}

fn panic_verb(_: &mut State, args: &Args) -> Result<Output, Failure> {
    let message = args.str_or("message", "testkit panic requested")?;
    panic!("{message}")
}

fn log_verb(_: &mut State, args: &Args) -> Result<Output, Failure> {
    let message = args.str("message")?;
    let name = args.str_or("level", "info")?;
    let Some(level) = Level::from_name(name) else {
        let levels = "trace, debug, info, warn, error";
        return Err(Failure::invalid_input(format!(
            "`level` must be one of {levels}; got `{name}`"
        ))
        .with_field("level"));
    };
    log(level, message);
    ok(Value::Null)
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
    let oom = |message: String| Failure::new("out-of-memory", message).with_input_fired(false);
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
fn flaky(state: &mut State, args: &Args) -> Result<Output, Failure> {
    let failures = uint(args, "failures", 0, MAX_FLAKY_FAILURES)?;
    let code = args.str_or("code", "world-moved")?;
    let input_fired = args.boolean("input_fired", false)?;
    state.flaky_calls += 1;
    let calls = state.flaky_calls;
    if u64::from(calls) <= failures {
        return Err(Failure::new(
            FailureCode::from_name(code),
            format!("flaky: requested failure {calls} of {failures}"),
        )
        .with_input_fired(input_fired)
        .with_details(json!({ "calls": calls, "failures": failures })));
    }
    state.flaky_calls = 0;
    ok(json!({ "calls": calls }))
}

/// Returns a solid-colour PNG as image content.
fn image(_: &mut State, args: &Args) -> Result<Output, Failure> {
    // Bounded by MAX_IMAGE_SIDE, so the casts are exact.
    let width = uint(args, "width", 1, MAX_IMAGE_SIDE)? as u32;
    let height = uint(args, "height", 1, MAX_IMAGE_SIDE)? as u32;
    let color = match args.get("color") {
        None => [255, 0, 0],
        Some(v) => rgb(v).ok_or_else(|| {
            Failure::invalid_input(
                "`color` must be an array of three integers 0-255: [red, green, blue]",
            )
            .with_field("color")
        })?,
    };
    let data = png::solid_rgb(width, height, color);
    let [r, g, b] = color;
    let text = format!(
        "{width}x{height} PNG filled with rgb({r}, {g}, {b}), {} bytes",
        data.len()
    );
    Ok(Output::new(json!({ "width": width, "height": height }))
        .with_image("image/png", data)
        .with_text(text))
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
    Ok(Output::new(value))
}
