//! What the targets fuzz against: the built-in plugins as the planner knows them,
//! the default limits, and the MCP tools the server would serve for them.
//!
//! The planner and the dialects know plugins only as [`PluginSpec`]s in a
//! [`Catalog`], so no host is started and no plugin is compiled or run: the specs
//! are built from `fuzz/catalog.json`, a snapshot of what the built-in plugins
//! describe (`stephost plugins --json` without the per-build fields `source`,
//! `sha256` and `contract`), compiled into every target. `scripts/fuzz_catalog.sh`
//! writes it and `--check`s it against a built binary. This module must never
//! need the WebAssembly runtime: that is what keeps the fuzz build short.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::Value;
use stephost_batch::dialects::single::tool_name;
use stephost_batch::dialects::{self, Dialect, single::SingleVerb};
use stephost_batch::{Catalog, Limits};
use stephost_contract::{ContractVersion, PluginSpec, RawDescription, RawVerb};

/// The snapshot of the built-in plugins' descriptions (`scripts/fuzz_catalog.sh`).
const SNAPSHOT: &str = include_str!("../catalog.json");

/// The command that rewrites [`SNAPSHOT`], for messages.
const REGENERATE: &str = "scripts/fuzz_catalog.sh";

/// The plugins, limits and tools every target uses.
pub struct Fixture {
    /// Every built-in plugin of the snapshot, as the host's local tenant sees them.
    pub catalog: Catalog,
    /// The default `[limits]`.
    pub limits: Limits,
    /// Every MCP tool of a server serving every plugin, in the server's order:
    /// the built-in batch dialects whose plugins are loaded, then one
    /// [`SingleVerb`] per verb of each plugin (aliases included: they are
    /// callable tools too).
    pub tools: Vec<Arc<dyn Dialect>>,
}

/// The process-wide fixture, built on first use.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(build)
}

/// A plugin in the snapshot: `plugins --json` without the per-build fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotPlugin {
    name: String,
    version: String,
    description: String,
    bare_tool_names: bool,
    verbs: Vec<SnapshotVerb>,
}

/// A verb in the snapshot, schemas as JSON values.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotVerb {
    name: String,
    description: String,
    input_schema: Value,
    #[serde(default)]
    output_schema: Option<Value>,
    acts_on_world: bool,
    checked: bool,
}

impl SnapshotPlugin {
    /// The plugin as its `describe` would have answered: schemas as JSON text.
    fn into_raw(self) -> RawDescription {
        RawDescription {
            name: self.name,
            version: self.version,
            description: self.description,
            bare_tool_names: self.bare_tool_names,
            verbs: self
                .verbs
                .into_iter()
                .map(|v| RawVerb {
                    name: v.name,
                    description: v.description,
                    input_schema: v.input_schema.to_string(),
                    output_schema: v.output_schema.map_or_else(String::new, |s| s.to_string()),
                    acts_on_world: v.acts_on_world,
                    checked: v.checked,
                })
                .collect(),
        }
    }
}

fn build() -> Fixture {
    let snapshot: Vec<SnapshotPlugin> = serde_json::from_str(SNAPSHOT).unwrap_or_else(|e| {
        panic!(
            "fuzz fixture: fuzz/catalog.json does not parse ({e}); regenerate it with {REGENERATE}"
        )
    });
    assert!(
        !snapshot.is_empty(),
        "fuzz fixture: fuzz/catalog.json lists no plugin; regenerate it with {REGENERATE}"
    );
    let specs: Vec<Arc<PluginSpec>> = snapshot
        .into_iter()
        .map(|plugin| {
            let source = format!("builtin:{}", plugin.name);
            let spec = PluginSpec::new(
                plugin.into_raw(),
                &source,
                "snapshot",
                ContractVersion::LATEST,
            )
            .unwrap_or_else(|e| panic!("fuzz fixture: {source} in fuzz/catalog.json: {e}"));
            Arc::new(spec)
        })
        .collect();
    let catalog = Catalog::new(specs, []);
    let tools = tools(&catalog);
    Fixture {
        catalog,
        limits: Limits::default(),
        tools,
    }
}

/// The tools `host/server/src/mcp/catalog.rs` builds when every plugin is served
/// and nothing is renamed, in its order. A name claimed twice is a start-up error
/// there, and so a fixture error here.
fn tools(catalog: &Catalog) -> Vec<Arc<dyn Dialect>> {
    let mut tools: Vec<Arc<dyn Dialect>> = dialects::builtin()
        .into_iter()
        .map(|(_, dialect)| dialect)
        .filter(|dialect| dialect.available(catalog))
        .collect();
    for plugin in catalog.plugins() {
        for verb in plugin.verb_names() {
            tools.push(Arc::new(SingleVerb::new(
                tool_name(plugin, verb),
                plugin.clone(),
                verb.to_owned(),
            )));
        }
    }
    let mut names = BTreeSet::new();
    for tool in &tools {
        assert!(
            names.insert(tool.name().to_owned()),
            "fuzz fixture: two MCP tools are named `{}`",
            tool.name()
        );
    }
    tools
}
