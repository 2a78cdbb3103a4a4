//! The runtime's part of the host configuration: `[engine]` and `[plugins]`.
//! The server's `Config` composes these with the rest.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::Grant;

/// wasmtime engine settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// Plugin instances that may be live at once (pooling allocator slots).
    pub max_instances: u32,
    /// Slots of the pool one tenant's instances (and their Python evaluators)
    /// may hold, unless its own `limits.max_instances` says otherwise.
    /// Default: `max_instances` shared evenly among the tenants, so no tenant
    /// at its share can take another's slots.
    pub max_instances_per_tenant: Option<u32>,
    /// Largest linear memory any instance may reach, in MiB: the size of one pool
    /// slot. `limits.memory_mib` may be lower, never higher.
    pub max_memory_mib: u64,
    /// Directory for compiled components. Default: `$XDG_CACHE_HOME/stephost` or
    /// `~/.cache/stephost`.
    pub cache_dir: Option<PathBuf>,
    /// Turn the on-disk compile cache off.
    pub disable_cache: bool,
    /// Epoch tick interval in microseconds: how often a running guest checks its
    /// deadline and yields its thread.
    pub epoch_tick_us: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            max_instances: 1_024,
            max_instances_per_tenant: None,
            max_memory_mib: 256,
            cache_dir: None,
            disable_cache: false,
            epoch_tick_us: 1_000,
        }
    }
}

/// Where plugins come from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PluginsConfig {
    /// Load the plugins built into the binary.
    pub builtin: bool,
    /// Built-in plugins to leave out, by name.
    pub disable: Vec<String>,
    /// Extra directories of `.wasm` components.
    pub dirs: Vec<PathBuf>,
    /// What each plugin, by name, may use beyond the basics. A plugin not listed
    /// gets nothing extra. Setting an entry replaces that plugin's default; the
    /// other defaults stay. An entry's `file` and `sha256` tie it to one
    /// component, and the defaults reach only the built-in components (see
    /// `Registry::load`).
    #[serde(deserialize_with = "grants_over_defaults")]
    pub grants: BTreeMap<String, Grant>,
    /// Expected sha256 (hex) of plugins, by name; a component whose bytes
    /// differ is refused at load.
    pub pins: BTreeMap<String, String>,
    /// Refuse every third-party component that has no pin: for shared hosts,
    /// where only reviewed bytes may run. A `pins` entry or a `sha256` in the
    /// grant that applies counts as a pin; built-ins need none.
    pub require_pins: bool,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        Self {
            builtin: true,
            disable: Vec::new(),
            dirs: Vec::new(),
            grants: default_grants(),
            pins: BTreeMap::new(),
            require_pins: false,
        }
    }
}

fn grants_over_defaults<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, Grant>, D::Error> {
    let mut grants = default_grants();
    grants.extend(BTreeMap::<String, Grant>::deserialize(deserializer)?);
    Ok(grants)
}

/// Grants of the built-in plugins: Robot Framework remote libraries on loopback,
/// the desktop for the desktop plugin.
fn default_grants() -> BTreeMap<String, Grant> {
    let mut grants = BTreeMap::new();
    grants.insert(
        "rf".to_owned(),
        Grant {
            http: vec!["loopback:*".to_owned()],
            ..Grant::default()
        },
    );
    // The built-in desktop plugin drives the screen, keyboard and mouse.
    grants.insert(
        "desktop".to_owned(),
        Grant {
            desktop: true,
            ..Grant::default()
        },
    );
    // The built-in browser plugin drives its own WebDriver session.
    grants.insert(
        "browser".to_owned(),
        Grant {
            webdriver: true,
            ..Grant::default()
        },
    );
    grants
}
