//! The tool catalog: which MCP tools exist and which dialect serves each.
//!
//! Built once at start-up from the loaded plugins. Two claims on one tool name
//! are a start-up error naming both, never a silent shadow.
//!
//! What is served is chosen by plugin ([`Served`]: `serve --tools`, `[mcp]
//! tools`, or the default): each served plugin brings its verb tools and its
//! domain's batch tools. That choice is about the tool list only: the generic
//! `batch` tool is always there and runs steps of every loaded plugin.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::Value;

use stephost_batch::Catalog as Plugins;
use stephost_batch::dialects::{self, Dialect};
use stephost_contract::{PluginSpec, VerbInfo};

/// The built-in plugins whose tools are served only when named: test fixtures,
/// not tools for agents. `batch` and `stephost run` still run their steps.
const SERVED_WHEN_NAMED: &[&str] = &["testkit"];

/// The built-in plugin served by default only when a display is reachable.
const DESKTOP: &str = "desktop";

/// How long the start-up display probe may take: a `DISPLAY` naming an
/// unreachable TCP host must not hold the server's start for long.
const DISPLAY_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The plugins whose tools a catalog serves, and why the others are left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    plugins: BTreeSet<String>,
    /// Whether the saved-batch tools (`save_batch`, ...) are served.
    saved: bool,
    /// Loaded plugins left out by the default, with the reason.
    left_out: Vec<(String, String)>,
}

/// A `--tools` / `[mcp] tools` entry that names no loaded plugin.
#[derive(Debug, thiserror::Error)]
#[error(
    "--tools / [mcp] tools: `{name}` is not a loaded plugin; the loaded plugins are: {known} (and `{SAVED}` names the saved-batch tools)"
)]
pub struct UnknownPlugin {
    name: String,
    known: String,
}

impl Served {
    /// The plugins `named` chooses among those `registry` loaded; with no
    /// list, the default: every third-party plugin (the operator installed
    /// it), every built-in but the [`SERVED_WHEN_NAMED`] ones, and `desktop`
    /// only when `display()` says a display is reachable (asked only then),
    /// and the saved-batch tools when `saved` (they are on). In a list,
    /// [`SAVED`] names the saved-batch tools.
    pub fn resolve(
        named: Option<&[String]>,
        registry: &Plugins,
        display: impl FnOnce() -> Result<(), String>,
        saved: bool,
    ) -> Result<Self, UnknownPlugin> {
        let loaded: BTreeSet<&str> = registry.names().collect();
        if let Some(named) = named {
            let mut plugins = BTreeSet::new();
            let mut saved_named = false;
            for name in named {
                if name == SAVED && saved {
                    saved_named = true;
                    continue;
                }
                if !loaded.contains(name.as_str()) {
                    return Err(UnknownPlugin {
                        name: name.clone(),
                        known: loaded.iter().copied().collect::<Vec<_>>().join(", "),
                    });
                }
                plugins.insert(name.clone());
            }
            return Ok(Self {
                plugins,
                saved: saved_named,
                left_out: Vec::new(),
            });
        }
        let mut plugins = BTreeSet::new();
        let mut left_out = Vec::new();
        let mut display = Some(display);
        for plugin in registry.plugins() {
            let name = plugin.name();
            // A third-party plugin may take a built-in's name (with the
            // built-in disabled); it is the operator's, so it is served.
            let builtin = plugin.info().source.starts_with("builtin:");
            if builtin && SERVED_WHEN_NAMED.contains(&name) {
                left_out.push((name.to_owned(), "served only when named".to_owned()));
                continue;
            }
            if builtin && name == DESKTOP {
                let probe = display.take().map_or(Ok(()), |probe| probe());
                if let Err(why) = probe {
                    left_out.push((name.to_owned(), format!("no usable X display ({why})")));
                    continue;
                }
            }
            plugins.insert(name.to_owned());
        }
        Ok(Self {
            plugins,
            saved,
            left_out,
        })
    }

    /// Whether `plugin`'s tools are served.
    pub fn includes(&self, plugin: &str) -> bool {
        self.plugins.contains(plugin)
    }

    /// Whether the saved-batch tools are served.
    pub fn saved(&self) -> bool {
        self.saved
    }

    /// One line for the operator: what is served and what is left out, and why.
    pub fn summary(&self) -> String {
        let mut served: Vec<&str> = self.plugins.iter().map(String::as_str).collect();
        if self.saved {
            served.push("saved batches");
        }
        let mut line = if served.is_empty() {
            "serving the `batch` tool only".to_owned()
        } else {
            format!("serving the tools of {}", served.join(", "))
        };
        if !self.left_out.is_empty() {
            let out: Vec<String> = self
                .left_out
                .iter()
                .map(|(name, why)| format!("{name}: {why}"))
                .collect();
            line.push_str(&format!(
                " (left out: {}; `serve --tools` names the plugins to serve)",
                out.join("; ")
            ));
        }
        line
    }
}

/// A tool before its name is checked: name, who claims it, the dialect serving
/// it, (for single verbs) whether it acts on the world, and whether it is an
/// alias (callable, not listed).
struct Entry {
    name: String,
    owner: String,
    serves: Serves,
    acts: Option<bool>,
    alias: bool,
}

/// What answers a tool's calls.
enum Serves {
    /// A dialect, whose batches the host runs.
    Dialect(Arc<dyn Dialect>),
    /// The server itself (the saved-batch tools), with the tool's definition.
    Host(Box<Tool>),
}

/// Tools by name, in listing order.
pub struct Catalog {
    /// What `tools/list` shows: aliases left out.
    tools: Vec<Tool>,
    /// Every callable tool served by a dialect, aliases included.
    by_name: BTreeMap<String, Arc<dyn Dialect>>,
    /// Who claims each name, the server's own tools included.
    owners: BTreeMap<String, String>,
    /// Whether the tenant's saved batches are served.
    saved: bool,
}

/// Each serving tenant's catalog, by tenant id, and who to tell when a
/// tenant's tools change.
pub struct Catalogs {
    by_tenant: BTreeMap<String, Arc<Catalog>>,
    served: Served,
    listeners: super::saved_tools::Listeners,
}

/// Why the tool catalog could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// Two tools claim one name.
    #[error(transparent)]
    NameClash(#[from] NameClash),
    /// The tools list names a plugin that is not loaded.
    #[error(transparent)]
    UnknownPlugin(#[from] UnknownPlugin),
}

impl Catalogs {
    /// A catalog for every tenant `host` serves, from that tenant's plugins
    /// among the served ones (`[mcp] tools`, which `serve --tools` sets).
    pub fn build(host: &crate::Host) -> Result<Self, CatalogError> {
        let mcp = &host.config().mcp;
        // Chosen once against every loaded plugin, so the display is probed
        // once and a name a tenant's grants leave out is no error.
        let served = served_by(host)?;
        let mut by_tenant = BTreeMap::new();
        let tenants = host.tenants();
        for tenant in tenants.serving().iter().chain([tenants.local()]) {
            let catalog =
                Catalog::build(tenant.catalog(), &mcp.tool_names, mcp.verb_tools, &served)?;
            by_tenant.insert(tenant.id().to_owned(), Arc::new(catalog));
        }
        Ok(Self {
            by_tenant,
            served,
            listeners: super::saved_tools::Listeners::default(),
        })
    }

    /// The clients to tell when a tenant's tools change.
    pub(super) fn listeners(&self) -> &super::saved_tools::Listeners {
        &self.listeners
    }

    /// The catalog of tenant `id`.
    pub fn get(&self, id: &str) -> Option<&Arc<Catalog>> {
        self.by_tenant.get(id)
    }

    /// Which plugins' tools are served.
    pub fn served(&self) -> &Served {
        &self.served
    }
}

/// Every MCP tool name the local tenant's catalog claims, with who claims
/// it (`the built-in \`batch\` tool`, `plugin.verb`): what a new plugin's
/// tool names must not take.
pub fn claimed_names(host: &crate::Host) -> Result<BTreeMap<String, String>, UnknownPlugin> {
    let mcp = &host.config().mcp;
    let served = served_by(host)?;
    let catalog = host.tenants().local().catalog();
    Ok(entries(catalog, &mcp.tool_names, mcp.verb_tools, &served)
        .into_iter()
        .map(|entry| (entry.name, entry.owner))
        .collect())
}

/// What `host`'s config serves, the display probed when the default asks.
fn served_by(host: &crate::Host) -> Result<Served, UnknownPlugin> {
    Served::resolve(
        host.config().mcp.tools.as_deref(),
        host.catalog(),
        || stephost_runtime::probe_display(DISPLAY_PROBE_TIMEOUT),
        host.config().saved_batches.enabled,
    )
}

/// The tool name `plugin.verb` gets: the configured rename, or its default.
pub fn tool_name_for(
    plugin: &PluginSpec,
    verb: &str,
    renames: &BTreeMap<String, String>,
) -> String {
    renames
        .get(&format!("{}.{verb}", plugin.name()))
        .cloned()
        .unwrap_or_else(|| dialects::single::tool_name(plugin, verb))
}

/// A tool name for `owner` that none of `claimed` takes.
pub fn suggest_name(owner: &str, claimed: &BTreeMap<String, String>) -> String {
    free_name(owner, &claimed.keys().cloned().collect())
}

/// The name `--tools` gives the saved-batch tools.
pub const SAVED: &str = "saved";

/// The host's own options of every batch tool, whatever its dialect.
pub(super) fn add_batch_options(schema: &mut serde_json::Map<String, Value>, tool: &str) {
    let properties = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Some(properties) = properties.as_object_mut() {
        properties.insert(
            "dry_run".into(),
            serde_json::json!({
                "type": "boolean",
                "description": "Return the plan; run nothing"
            }),
        );
        properties.insert(
            "trace".into(),
            serde_json::json!({
                "type": "boolean",
                "description": "Keep an HTML trace (resources/read)"
            }),
        );
        if tool == super::server::RF_OUTPUT_TOOL {
            properties.insert(
                "output_xml".into(),
                serde_json::json!({
                    "type": "boolean",
                    "description": "Also return RF's output.xml (for rebot) as `output_xml`"
                }),
            );
        }
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

/// A tool name for `owner` (`plugin.verb`) that no entry claims: its default
/// name when free, else that name with `_2`, `_3`, ... (two verbs that sanitize
/// to one name would otherwise be told to take the name they clash on).
fn free_name(owner: &str, taken: &std::collections::BTreeSet<String>) -> String {
    let base = dialects::single::sanitize_tool_name(&owner.replace('.', "_"));
    if !taken.contains(&base) {
        return base;
    }
    (2..)
        .map(|n| {
            let suffix = format!("_{n}");
            let keep = 64usize.saturating_sub(suffix.len());
            let mut head: String = base.chars().take(keep).collect();
            head.push_str(&suffix);
            head
        })
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or(base)
}

/// Every tool a catalog of `registry` would hold, before names are checked.
fn entries(
    registry: &Plugins,
    renames: &BTreeMap<String, String>,
    verb_tools: bool,
    served: &Served,
) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    for (domain, dialect) in dialects::builtin() {
        if domain.is_none_or(|plugin| served.includes(plugin)) && dialect.available(registry) {
            entries.push(Entry {
                name: dialect.name().to_owned(),
                owner: format!("the built-in `{}` tool", dialect.name()),
                serves: Serves::Dialect(dialect),
                acts: None,
                alias: false,
            });
        }
    }
    if served.saved() {
        for tool in super::saved_tools::tools() {
            entries.push(Entry {
                name: tool.name.to_string(),
                owner: format!("the built-in `{}` tool", tool.name),
                serves: Serves::Host(Box::new(tool)),
                acts: None,
                alias: false,
            });
        }
    }
    if verb_tools {
        for plugin in registry.plugins().filter(|p| served.includes(p.name())) {
            for info in &plugin.info().verbs {
                let verb = info.name.as_str();
                let key = format!("{}.{verb}", plugin.name());
                let name = tool_name_for(plugin, verb, renames);
                let single = dialects::single::SingleVerb::new(
                    name.clone(),
                    plugin.clone(),
                    verb.to_owned(),
                );
                let acts = single.acts_on_world();
                entries.push(Entry {
                    name,
                    owner: key,
                    serves: Serves::Dialect(Arc::new(single)),
                    acts: Some(acts),
                    alias: alias_of(plugin, info).is_some(),
                });
            }
        }
    }
    entries
}

impl Catalog {
    /// Builds the catalog: the generic `batch` tool, the dialect tools whose
    /// plugins are loaded and served, and one tool per verb of each served
    /// plugin (an alias verb callable but not listed). `renames` maps
    /// `plugin.verb` to a tool name.
    pub fn build(
        registry: &Plugins,
        renames: &BTreeMap<String, String>,
        verb_tools: bool,
        served: &Served,
    ) -> Result<Self, NameClash> {
        let entries = entries(registry, renames, verb_tools, served);
        // Every name claimed, so a clash's suggested rename is one that is free.
        let taken: std::collections::BTreeSet<String> =
            entries.iter().map(|e| e.name.clone()).collect();
        let mut by_name: BTreeMap<String, Arc<dyn Dialect>> = BTreeMap::new();
        let mut owners: BTreeMap<String, String> = BTreeMap::new();
        let mut tools = Vec::new();
        for Entry {
            name,
            owner,
            serves,
            acts,
            alias,
        } in entries
        {
            if let Some(first) = owners.get(&name) {
                return Err(NameClash {
                    suggestion: free_name(&owner, &taken),
                    name,
                    first: first.clone(),
                    second: owner,
                });
            }
            owners.insert(name.clone(), owner);
            let dialect = match serves {
                Serves::Dialect(dialect) => dialect,
                Serves::Host(tool) => {
                    tools.push(*tool);
                    continue;
                }
            };
            if alias {
                // Callable under its own name (clients written against it
                // keep working), but its definition is its original's: listing
                // both would spend a model's context on the same tool twice.
                by_name.insert(name, dialect);
                continue;
            }
            let mut input_schema = as_object(dialect.input_schema(registry));
            if super::server::BATCH_TOOLS.contains(&dialect.name()) {
                add_batch_options(&mut input_schema, dialect.name());
            }
            let mut tool = Tool::new(
                name.clone(),
                dialect.description(registry),
                Arc::new(input_schema),
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
            by_name.insert(name, dialect);
        }
        Ok(Self {
            tools,
            by_name,
            owners,
            saved: served.saved(),
        })
    }

    /// Every tool, for `tools/list`.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Who claims `name` (a tool of this catalog), as an error names it.
    pub fn owner(&self, name: &str) -> Option<String> {
        self.owners.get(name).map(|owner| {
            if owner.starts_with("the ") {
                owner.clone()
            } else {
                format!("the tool of {owner}")
            }
        })
    }

    /// Whether the tenant's saved batches are served.
    pub fn serves_saved(&self) -> bool {
        self.saved
    }

    /// The dialect serving `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Dialect>> {
        self.by_name.get(name)
    }
}

/// The verb `info` of `plugin` is another name for, if it is an alias; the
/// WIT `verb-info` has no field for it, so the plugin says it one of two ways:
///
/// - explicitly, with the JSON Schema annotation `"x-stephost-alias-of":
///   "VERB"` at the top of the alias's input schema (validators ignore
///   unknown `x-` keywords);
/// - by the convention the built-in plugins follow, a description starting
///   `Same as VERB` — trusted only when VERB's input schema and
///   `acts_on_world` are the alias's too, so a verb that merely resembles
///   another, or a description that happens to start that way, stays listed.
///
/// The original must exist in the same plugin and not itself be an alias, so
/// two verbs naming each other are both listed.
fn alias_of<'a>(plugin: &'a PluginSpec, info: &VerbInfo) -> Option<&'a str> {
    let original = claimed_original(info)?;
    let target = plugin.info().verbs.iter().find(|v| v.name == original)?;
    if target.name == info.name || claimed_original(target).is_some() {
        return None;
    }
    let explicit = info
        .input_schema
        .get(ALIAS_KEYWORD)
        .and_then(Value::as_str)
        .is_some();
    let same_shape =
        target.input_schema == info.input_schema && target.acts_on_world == info.acts_on_world;
    (explicit || same_shape).then_some(target.name.as_str())
}

/// The input-schema keyword by which a verb declares itself an alias.
const ALIAS_KEYWORD: &str = "x-stephost-alias-of";

/// The verb `info` says it is another name for, by either marker, unchecked.
fn claimed_original(info: &VerbInfo) -> Option<&str> {
    if let Some(original) = info.input_schema.get(ALIAS_KEYWORD).and_then(Value::as_str) {
        return Some(original);
    }
    let rest = info
        .description
        .strip_prefix("Same as ")?
        .trim_start_matches('`');
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    let original = &rest[..end];
    (!original.is_empty()).then_some(original)
}

fn as_object(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clash_suggests_a_name_nobody_claims() {
        let taken = |names: &[&str]| names.iter().map(ToString::to_string).collect();
        // `p.a.b` and `p.a_b` both default to `p_a_b`: suggesting it again says nothing.
        assert_eq!(free_name("p.a.b", &taken(&["p_a_b"])), "p_a_b_2");
        assert_eq!(free_name("p.a.b", &taken(&["p_a_b", "p_a_b_2"])), "p_a_b_3");
        assert_eq!(free_name("p.x", &taken(&["p_a_b"])), "p_x");
        let long = format!("p.{}", "v".repeat(80));
        let base = dialects::single::sanitize_tool_name(&long.replace('.', "_"));
        let free = free_name(&long, &taken(&[base.as_str()]));
        assert!(
            free.len() <= 64 && free.ends_with("_2") && free != base,
            "{free}"
        );
    }

    /// A host with the built-in plugins but those in `disable`.
    async fn host(disable: &[&str]) -> crate::Host {
        let mut config = crate::config::Config::default();
        config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
        config.plugins.disable = disable.iter().map(|s| (*s).to_owned()).collect();
        match crate::Host::start(config).await {
            Ok(host) => host,
            Err(e) => panic!("host starts: {e:#}"),
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn listed(catalog: &Catalog) -> BTreeSet<String> {
        catalog.tools().iter().map(|t| t.name.to_string()).collect()
    }

    #[tokio::test]
    async fn the_default_leaves_out_testkit_and_desktop_without_a_display() {
        let host = host(&[]).await;
        let registry = host.catalog();
        let headless = Served::resolve(None, registry, || Err("DISPLAY is not set".into()), true)
            .expect("resolves");
        assert!(headless.includes("browser") && headless.includes("rf"));
        assert!(!headless.includes("desktop") && !headless.includes("testkit"));
        assert!(headless.summary().contains("DISPLAY is not set"));
        let with_display = Served::resolve(None, registry, || Ok(()), true).expect("resolves");
        assert!(with_display.includes("desktop") && !with_display.includes("testkit"));
        // Named, a plugin is served whatever the probe would say (it is not asked).
        let named = Served::resolve(
            Some(&names(&["desktop", "testkit"])),
            registry,
            || panic!("the display is not probed for a named list"),
            true,
        )
        .expect("resolves");
        assert!(!named.saved(), "saved batches are served when named");
        assert!(named.includes("desktop") && named.includes("testkit") && !named.includes("rf"));
        let catalog =
            Catalog::build(registry, &BTreeMap::new(), true, &headless).expect("no clash");
        let tools = listed(&catalog);
        assert!(tools.contains("batch") && tools.contains("browser_batch"));
        assert!(
            !tools.iter().any(|n| n.starts_with("testkit_")),
            "{tools:?}"
        );
        assert!(!tools.contains("run_macro") && !tools.contains("do_steps"));
        // Left out means not callable as a tool either; `batch` still runs it.
        assert!(catalog.get("testkit_echo").is_none());
    }

    #[tokio::test]
    async fn an_unknown_name_is_an_error_naming_the_known_ones() {
        let host = host(&[]).await;
        let err = Served::resolve(
            Some(&names(&["browser", "nosuch"])),
            host.catalog(),
            || Ok(()),
            true,
        )
        .expect_err("unknown");
        let text = err.to_string();
        assert!(text.contains("`nosuch`"), "{text}");
        assert!(text.contains("browser, desktop, rf, testkit"), "{text}");
    }

    #[tokio::test]
    async fn aliases_are_callable_but_listed_once() {
        let host = host(&[]).await;
        let registry = host.catalog();
        let served = Served::resolve(Some(&names(&["desktop"])), registry, || Ok(()), true)
            .expect("resolves");
        let catalog = Catalog::build(registry, &BTreeMap::new(), true, &served).expect("no clash");
        let tools = listed(&catalog);
        for (alias, original) in [("activate", "focus_window"), ("wait_until", "wait_for")] {
            assert!(tools.contains(original), "{original} listed: {tools:?}");
            assert!(!tools.contains(alias), "{alias} not listed: {tools:?}");
            assert!(catalog.get(alias).is_some(), "{alias} callable");
        }
        // A verb sharing its schema with another but not claiming to be it stays.
        assert!(tools.contains("list_windows"));
    }

    #[tokio::test]
    async fn each_domain_tool_is_mapped_to_the_plugin_its_dialect_needs() {
        // The mapping here and each dialect's own `available()` must agree:
        // without the plugin a dialect is mapped to, that dialect is off.
        let full = host(&[]).await;
        for plugin in ["browser", "desktop", "rf"] {
            let without = host(&[plugin]).await;
            for (domain, dialect) in dialects::builtin() {
                assert!(dialect.available(full.catalog()), "{}", dialect.name());
                assert_eq!(
                    dialect.available(without.catalog()),
                    domain != Some(plugin),
                    "{} without {plugin}",
                    dialect.name()
                );
            }
        }
    }

    #[test]
    fn the_description_convention_needs_a_verb_name() {
        let info = |description: &str| VerbInfo {
            name: "x".into(),
            description: description.into(),
            input_schema: serde_json::json!({}),
            output_schema: None,
            acts_on_world: false,
            checked: false,
        };
        assert_eq!(
            claimed_original(&info("Same as wait_for.")),
            Some("wait_for")
        );
        assert_eq!(
            claimed_original(&info("Same as `focus_window`: raise")),
            Some("focus_window")
        );
        assert_eq!(claimed_original(&info("Same as: nothing")), None);
        assert_eq!(claimed_original(&info("Waits. Same as wait_for.")), None);
        let explicit = VerbInfo {
            input_schema: serde_json::json!({"x-stephost-alias-of": "y"}),
            ..info("Anything")
        };
        assert_eq!(claimed_original(&explicit), Some("y"));
    }

    #[test]
    fn the_config_names_the_served_plugins() {
        let config =
            crate::config::Config::parse("[mcp]\ntools = [\"browser\", \"rf\"]\n").expect("parses");
        assert_eq!(config.mcp.tools, Some(names(&["browser", "rf"])));
        assert_eq!(crate::config::Config::default().mcp.tools, None);
    }
}
