//! The default plugins, built in.
//!
//! `host/runtime/build.rs` compiles every plugin crate of the `plugins/` workspace to a
//! WebAssembly component (`cargo build --release --target wasm32-wasip2`) and embeds
//! the bytes here, so `target/release/stephost` is self-contained: it runs the default
//! plugins with no `.wasm` files beside it. Plugins from a plugins folder are loaded
//! the same way as these, from bytes.

/// A plugin component compiled into the host binary.
#[derive(Debug, Clone, Copy)]
pub struct EmbeddedPlugin {
    /// The plugin crate's package name (`testkit`). The plugin's own `describe()`
    /// remains the authority on the name it registers under.
    pub name: &'static str,
    /// The component's bytes, as built for `wasm32-wasip2`.
    pub bytes: &'static [u8],
}

/// Every embedded plugin, in the order `plugins/Cargo.toml` lists them.
pub static EMBEDDED: &[EmbeddedPlugin] = include!(concat!(env!("OUT_DIR"), "/embedded_plugins.rs"));

/// The Python evaluator component (`host/runtime/python`): CPython with Robot
/// Framework, built by componentize-py, and its SHA-256 (hex). `None` in a host
/// built with `STEPHOST_NO_PYTHON_EVALUATOR=1`.
pub(crate) const PYTHON_EVALUATOR: Option<(&[u8], &str)> =
    include!(concat!(env!("OUT_DIR"), "/embedded_evaluator.rs"));
