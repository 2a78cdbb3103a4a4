//! Plugins: generated bindings, the registry of loaded components, the
//! components built into the binary, and live instances.

pub mod bindings;
pub mod embedded;
pub mod instance;
pub mod registry;

pub use instance::{CallBudget, CallOutcome, Fault, PluginInstance};
pub use registry::{
    LoadError, LoadPolicy, LoadedPlugin, PluginInfo, PluginSource, Registry, Verb, VerbInfo,
};
