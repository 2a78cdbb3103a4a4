//! The tool catalog: which MCP tools exist and which dialect serves each.
//!
//! Built once at start-up from the loaded plugins. Two claims on one tool name
//! are a start-up error naming both, never a silent shadow.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::Value;

use crate::dialects::{self, Dialect};
use crate::plugins::Registry;

/// A tool before its name is checked: name, who claims it, the dialect serving
/// it, and (for single verbs) whether it acts on the world.
struct Entry {
    name: String,
    owner: String,
    dialect: Arc<dyn Dialect>,
    acts: Option<bool>,
}

/// Tools by name, in listing order.
pub struct Catalog {
    tools: Vec<Tool>,
    by_name: BTreeMap<String, Arc<dyn Dialect>>,
}

/// Each serving tenant's catalog, by tenant id.
pub struct Catalogs {
    by_tenant: BTreeMap<String, Arc<Catalog>>,
}

impl Catalogs {
    /// A catalog for every tenant `host` serves, from that tenant's plugins.
    pub fn build(host: &crate::Host) -> Result<Self, NameClash> {
        let mcp = &host.config().mcp;
        let mut by_tenant = BTreeMap::new();
        let tenants = host.tenants();
        for tenant in tenants.serving().iter().chain([tenants.local()]) {
            let catalog = Catalog::build(tenant.registry(), &mcp.tool_names, mcp.verb_tools)?;
            by_tenant.insert(tenant.id().to_owned(), Arc::new(catalog));
        }
        Ok(Self { by_tenant })
    }

    /// The catalog of tenant `id`.
    pub fn get(&self, id: &str) -> Option<&Arc<Catalog>> {
        self.by_tenant.get(id)
    }
}

/// A tool name claimed twice.
#[derive(Debug, thiserror::Error)]
#[error(
    "MCP tool name `{name}` is claimed by both {first} and {second}; give one another name in the config, e.g. [mcp.tool_names] \"{second}\" = \"{suggestion}\""
)]
pub struct NameClash {
    name: String,
    first: String,
    second: String,
    suggestion: String,
}

impl Catalog {
    /// Builds the catalog: the generic `batch` tool, the dialect tools whose
    /// plugins are loaded, and one tool per plugin verb. `renames` maps
    /// `plugin.verb` to a tool name.
    pub fn build(
        registry: &Registry,
        renames: &BTreeMap<String, String>,
        verb_tools: bool,
    ) -> Result<Self, NameClash> {
        let mut entries: Vec<Entry> = Vec::new();
        let mut builtin: Vec<Arc<dyn Dialect>> = vec![
            Arc::new(dialects::batch::Batch),
            Arc::new(dialects::browser_batch::BrowserBatch),
            Arc::new(dialects::run_macro::RunMacro),
            Arc::new(dialects::do_steps::DoSteps),
        ];
        // The RF tools share one resume memory per catalog, so per tenant.
        builtin.extend(dialects::execute_batch::dialects());
        for dialect in builtin {
            if dialect.available(registry) {
                entries.push(Entry {
                    name: dialect.name().to_owned(),
                    owner: format!("the built-in `{}` tool", dialect.name()),
                    dialect,
                    acts: None,
                });
            }
        }
        if verb_tools {
            for plugin in registry.plugins() {
                for verb in plugin.verb_names() {
                    let key = format!("{}.{verb}", plugin.name());
                    let name = renames.get(&key).cloned().unwrap_or_else(|| {
                        if plugin.info().bare_tool_names {
                            sanitize(verb)
                        } else {
                            sanitize(&format!("{}_{verb}", plugin.name()))
                        }
                    });
                    let single = dialects::single::SingleVerb::new(
                        name.clone(),
                        plugin.clone(),
                        verb.to_owned(),
                    );
                    let acts = single.acts_on_world();
                    entries.push(Entry {
                        name,
                        owner: key,
                        dialect: Arc::new(single),
                        acts: Some(acts),
                    });
                }
            }
        }
        let mut by_name: BTreeMap<String, Arc<dyn Dialect>> = BTreeMap::new();
        let mut owners: BTreeMap<String, String> = BTreeMap::new();
        let mut tools = Vec::new();
        for Entry {
            name,
            owner,
            dialect,
            acts,
        } in entries
        {
            if let Some(first) = owners.get(&name) {
                return Err(NameClash {
                    suggestion: sanitize(&owner.replace('.', "_")),
                    name,
                    first: first.clone(),
                    second: owner,
                });
            }
            let mut tool = Tool::new(
                name.clone(),
                dialect.description(registry),
                Arc::new(as_object(dialect.input_schema(registry))),
            )
            .with_raw_output_schema(Arc::new(as_object(dialect.output_schema())));
            if let Some(acts) = acts {
                tool = tool.with_annotations(
                    ToolAnnotations::new()
                        .read_only(!acts)
                        .destructive(false)
                        .open_world(acts),
                );
            }
            tools.push(tool);
            owners.insert(name.clone(), owner);
            by_name.insert(name, dialect);
        }
        Ok(Self { tools, by_name })
    }

    /// Every tool, for `tools/list`.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The dialect serving `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Dialect>> {
        self.by_name.get(name)
    }
}

fn as_object(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// MCP tool names: `[A-Za-z0-9_-]`, at most 64 characters.
fn sanitize(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    out.truncate(64);
    out
}
