//! `stephost_plugin`: the guest SDK for stephost plugins on contract
//! `stephost:plugin@0.5.0` (`wit/0.5.0/`).
//!
//! Why it exists: before it, every plugin generated its own bindings, parsed its
//! JSON input with its own copy of `args.rs`, hand-wrote a `match` over verb names
//! next to a separate catalogue (two lists that could drift apart), kept state in
//! its own way (atomics, a `Mutex`, a `thread_local!`) and could not call `log` in
//! a native `cargo test` without aborting the test binary. This crate does each of
//! those once.
//!
//! ```
//! use serde_json::json;
//! use stephost_plugin::{Args, Failure, Output, Plugin, Verb, export_plugin};
//!
//! struct Hello;
//!
//! #[derive(Default)]
//! struct State { greeted: u32 }
//!
//! impl Plugin for Hello {
//!     const NAME: &'static str = "hello";
//!     const VERSION: &'static str = env!("CARGO_PKG_VERSION");
//!     const DESCRIPTION: &'static str = "Greets people.";
//!     type State = State;
//!
//!     fn verbs() -> Vec<Verb<State>> {
//!         let schema = json!({
//!             "type": "object",
//!             "properties": {"name": {"type": "string"}},
//!             "required": ["name"],
//!             "additionalProperties": false,
//!         });
//!         vec![Verb::new("greet", "Returns a greeting for `name`.", schema, greet)]
//!     }
//! }
//!
//! fn greet(state: &mut State, args: &Args) -> Result<Output, Failure> {
//!     state.greeted += 1;
//!     Ok(Output::new(json!(format!("Hello, {}!", args.str("name")?))))
//! }
//!
//! export_plugin!(Hello);
//!
//! // Natively, tests call the plugin through the same dispatch the component uses.
//! let out = stephost_plugin::invoke::<Hello>("greet", r#"{"name": "Ada"}"#).unwrap();
//! assert_eq!(out.value, r#""Hello, Ada!""#);
//! let failure = stephost_plugin::invoke::<Hello>("greet", "{}").unwrap_err();
//! assert_eq!(failure.message, "missing required field `name`");
//! ```
//!
//! What it gives, one module each:
//! - [`Plugin`] and [`Verb`] (`plugin.rs`): one table per plugin that both
//!   `describe` and `invoke` are derived from, per-instance [`Plugin::State`], and
//!   [`export_plugin!`] to register the plugin as the component's `tool` export.
//! - [`Args`] (`args.rs`): reading a verb's input without trusting it; every
//!   problem becomes an `invalid-input` failure naming the field.
//! - [`Failure`], [`FailureCode`], [`RecoveryStrategy`], [`RecoveryAction`]
//!   (`failure.rs`) and [`Output`] (`output.rs`): the WIT types themselves, with
//!   builder methods, so what a plugin returns is exactly what crosses to the host.
//! - [`log()`], [`webdriver`], [`desktop`], [`rf_library`], [`python`]: the
//!   host's imports. In the component
//!   they call the host; in a native build (`cargo test`) they go to [`mock`]
//!   instead, which records log lines and answers capability calls with a fake a
//!   test installs, or an `unsupported`-style error.
//!
//! # One set of bindings for every world
//!
//! The contract has four plugin worlds: `plugin` (log + tool), `browser-plugin`
//! (+ `webdriver`), `desktop-plugin` (+ `screen`, `windows`, `input`) and
//! `rf-plugin` (+ `rf-library`, and `python` from 0.5.0 on). The SDK generates
//! bindings **once**, for a world that includes all four, instead of one
//! world per cargo feature: features are unified across a workspace build, so a
//! `desktop` feature turned on by one plugin would be on for all of them anyway.
//! This is sound because `wit-component` drops every import the plugin's code never
//! calls when it makes the component: a plugin that never calls
//! [`webdriver::session`] does not import `stephost:plugin/webdriver`, and the host
//! decides which grants a plugin needs from exactly those imports. (`pub_export_macro`
//! makes `wit-bindgen` put the imports-only half of the world in this crate and the
//! export half in [`export_plugin!`]'s expansion, so only the plugin crate that
//! exports `tool` carries it.) The generated code is in [`bindings`]; plugins should
//! not need it directly.
//!
//! Per-instance state: the host gives every session its own component instance,
//! and a wasm guest has one thread, so the SDK keeps [`Plugin::State`] in a
//! `thread_local!` cell, created on the first `invoke` and dropped with the
//! instance. Natively each test thread gets its own state; [`mock::reset`] starts
//! a fresh instance within one test.

#![warn(missing_docs)]

/// The bindings `wit-bindgen` generates for `wit/0.5.0`, for a world that includes
/// every plugin world (see the crate docs for why one world). Plugins use the
/// re-exports and wrappers of this crate instead.
#[allow(missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        inline: "
            package stephost:plugin-sdk;

            world sdk {
                include stephost:plugin/plugin@0.5.0;
                include stephost:plugin/browser-plugin@0.5.0;
                include stephost:plugin/desktop-plugin@0.5.0;
                include stephost:plugin/rf-plugin@0.5.0;
            }
        ",
        path: "../../wit/0.5.0",
        world: "sdk",
        generate_all,
        // The `tool` export is made in the plugin crate, by `export_plugin!`.
        pub_export_macro: true,
        default_bindings_module: "::stephost_plugin::bindings",
        export_macro_name: "__export_tool",
        // So tests can compare failures, strategies and outputs whole.
        additional_derives: [PartialEq],
    });
}

/// Defines `pub fn $name(args) -> ret` that calls the generated import
/// `bindings::stephost::plugin::$interface::$name` in the component and the
/// installed [`mock::MockHost`] method of the same name in a native build.
macro_rules! host_fn {
    ($(#[$doc:meta])* $interface:ident :: $name:ident ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        $(#[$doc])*
        pub fn $name($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "wasm32")]
            {
                crate::bindings::stephost::plugin::$interface::$name($($arg),*)
            }
            #[cfg(not(target_arch = "wasm32"))]
            {
                crate::mock::with_host(|host| host.$name($($arg),*))
            }
        }
    };
}

mod args;
pub mod desktop;
mod failure;
mod log;
#[cfg(not(target_arch = "wasm32"))]
pub mod mock;
mod output;
mod plugin;
pub mod python;
pub mod rf_library;
pub mod webdriver;

pub use args::Args;
pub use failure::{Failure, FailureCode, RecoveryAction, RecoveryStrategy};
pub use log::{Level, log};
pub use output::{Content, Image, Output};
pub use plugin::{
    Checker, Handler, Plugin, PluginInfo, Verb, VerbInfo, check, describe, invoke, invoke_with,
};

/// Registers `$plugin` (a type implementing [`Plugin`]) as the component's
/// `stephost:plugin/tool@0.5.0` export. Use it once, in the plugin crate's root.
///
/// It implements the generated `Guest` trait for `$plugin` by forwarding to
/// [`describe`] and [`invoke`], then (in a wasm build) invokes `wit-bindgen`'s
/// export macro, which also embeds the world's type information that
/// `wit-component` reads.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ident) => {
        impl $crate::bindings::exports::stephost::plugin::tool::Guest for $plugin {
            fn describe() -> $crate::PluginInfo {
                $crate::describe::<$plugin>()
            }

            fn invoke(
                verb: ::std::string::String,
                input: ::std::string::String,
            ) -> ::core::result::Result<$crate::Output, $crate::Failure> {
                $crate::invoke::<$plugin>(&verb, &input)
            }

            fn check(
                verb: ::std::string::String,
                input: ::std::string::String,
            ) -> ::core::result::Result<(), $crate::Failure> {
                $crate::check::<$plugin>(&verb, &input)
            }
        }

        // Only a wasm build is a component. Natively (tests, `cargo build`) there is
        // nothing to export to, and a native shared library could not export these
        // symbol names (`stephost:plugin/tool@0.5.0#invoke`) anyway.
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::__export_tool!($plugin with_types_in $crate::bindings);

        // Natively, this stands in for the exports as the root that keeps the
        // plugin's verbs from counting as dead code.
        #[cfg(not(target_arch = "wasm32"))]
        #[allow(dead_code)]
        fn __stephost_plugin_native_root() {
            let _ = $crate::describe::<$plugin>;
            let _ = $crate::invoke::<$plugin>;
            let _ = $crate::check::<$plugin>;
        }
    };
}

#[cfg(test)]
mod tests;
