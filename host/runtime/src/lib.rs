//! The stephost runtime: the only crate that runs WebAssembly.
//!
//! It builds the one wasmtime [`Engine`](wasmtime::Engine) of the process
//! (pooling allocator, epochs, fuel, the compile cache), loads plugin
//! components of every supported contract version ([`Registry`]), links each
//! with exactly the capabilities its [`Grant`] allows, and runs calls on
//! instances ([`Instances`]) within the budget the batch engine computed: the
//! one place deadlines, fuel and cancellation are enforced is
//! `instance.rs`. What a plugin says comes out as `stephost-contract` types.

mod bindings;
mod capabilities;
mod config;
mod embedded;
mod engine;
mod inspect;
mod instance;
mod load_error;
mod loaded;
mod pool;
mod registry;
mod runtime;

pub use capabilities::desktop::{DesktopConfig, probe_display};
pub use capabilities::webdriver::{BrowserConfig, BrowserKind};
pub use capabilities::{BadPattern, Capability, FolderError, FolderGrant, Grant, RfLibrariesGrant};
pub use capabilities::{DiskLimits, DiskQuota, DiskUsage, QuotaExceeded};
pub use capabilities::{ProcessCaps, SessionProcesses, TenantProcesses};
pub use config::{EngineConfig, PluginsConfig};
pub use embedded::{EMBEDDED, EmbeddedPlugin};
pub use engine::sha256_hex;
pub use inspect::{Finding, Import, Inspection, Stage};
pub use instance::{InstanceLimits, Instances, PluginInstance};
pub use load_error::LoadError;
pub use loaded::LoadedPlugin;
pub use pool::{Footprint, PoolShare, ShareFull};
pub use registry::{LoadPolicy, PluginSource, Registry};
pub use runtime::{Runtime, RuntimeConfig, StartError};
