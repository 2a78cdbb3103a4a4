//! `rf`: a stephost plugin that runs Robot Framework keywords with Robot Framework's own
//! semantics.
//!
//! BuiltIn, String, Collections and (once imported) DateTime keywords run here, in the
//! sandbox: keyword-name matching, named arguments, `${variables}` (kept for the whole
//! session), argument conversion, return values, log messages and failure messages all
//! follow RF 7. Any other RF library is reachable through RF's remote library interface: the plugin
//! speaks XML-RPC over the host's `wasi:http` outgoing handler, which the host
//! allow-lists per plugin.
//!
//! Layout: [`plugin`] holds the verbs; [`engine`] the session, keyword lookup and
//! execution; [`keywords`] the libraries; [`variables`], [`args`], [`expr`] RF's variable
//! syntax, argument handling and the safe expression evaluator; [`remote`] the XML-RPC
//! client; [`recovery`] the recovery strategies a failed keyword proposes. This file
//! only registers [`plugin::Rf`] as the component's export.

pub mod args;
pub mod engine;
pub mod error;
pub mod expr;
pub mod keywords;
pub mod matching;
pub mod plugin;
pub mod pyfmt;
pub mod pyjson;
mod pylib;
pub mod pynum;
pub mod pystr;
pub mod recovery;
pub mod regexp;
pub mod remote;
mod resource;
pub mod timefmt;
pub mod value;
pub mod variables;

// The component's `tool` export. The SDK's imports fall back to its mock host in a
// native build, so this needs no `cfg`: the unit tests run the same code.
stephost_plugin::export_plugin!(Rf);

pub use plugin::Rf;
