//! The plugin registry: loads components, checks what they import, asks each for
//! its verbs and compiles their input schemas.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wasmtime::Engine;
use wasmtime::component::Component;

use super::bindings::PluginPre;
use super::instance::{CallBudget, PluginInstance};
use crate::capabilities::{self, AllowList, Capability, Grant, HostState, Services};
use crate::engine::{CompileCache, sha256_hex};

/// Time and fuel allowed for a plugin's `describe` at load.
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(10);
const DESCRIBE_FUEL: u64 = 10_000_000_000;

/// One verb of a loaded plugin, with its compiled input schema.
pub struct Verb {
    /// What the plugin said about it.
    pub info: VerbInfo,
    validator: jsonschema::Validator,
}

impl Verb {
    /// Validates `input` against the verb's schema; each problem as
    /// (JSON pointer into the input, message).
    pub fn validate(&self, input: &Value) -> Vec<(String, String)> {
        self.validator
            .iter_errors(input)
            .map(|e| (e.instance_path().to_string(), e.to_string()))
            .collect()
    }
}

/// A verb's description, as listed by `stephost plugins --json` and the MCP front.
#[derive(Debug, Clone, Serialize)]
pub struct VerbInfo {
    /// Verb name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Input JSON Schema.
    pub input_schema: Value,
    /// Output JSON Schema, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Whether it acts on the outside world.
    pub acts_on_world: bool,
}

/// A plugin's description.
#[derive(Debug, Clone, Serialize)]
pub struct PluginInfo {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// What it is for.
    pub description: String,
    /// Whether its verbs keep their bare names as MCP tools.
    pub bare_tool_names: bool,
    /// Where it was loaded from (`builtin` or a path).
    pub source: String,
    /// sha256 of the component bytes.
    pub sha256: String,
    /// Its verbs.
    pub verbs: Vec<VerbInfo>,
}

/// A plugin ready to instantiate.
pub struct LoadedPlugin {
    info: PluginInfo,
    name: Arc<str>,
    verbs: Arc<BTreeMap<String, Verb>>,
    pre: PluginPre<HostState>,
    engine: Engine,
    allow: AllowList,
    grant: Grant,
    services: Arc<Services>,
    component: Component,
    imports: Arc<Vec<(String, Capability)>>,
}

impl LoadedPlugin {
    /// Its description.
    pub fn info(&self) -> &PluginInfo {
        &self.info
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn name_arc(&self) -> Arc<str> {
        self.name.clone()
    }

    /// A verb by name.
    pub fn verb(&self, name: &str) -> Option<&Verb> {
        self.verbs.get(name)
    }

    /// Verb names, in the order the plugin lists them.
    pub fn verb_names(&self) -> impl Iterator<Item = &str> {
        self.info.verbs.iter().map(|v| v.name.as_str())
    }

    pub(crate) fn pre(&self) -> &PluginPre<HostState> {
        &self.pre
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Where its outbound HTTP may go. The host may add destinations at run time.
    pub fn allow_list(&self) -> &AllowList {
        &self.allow
    }

    /// What it was granted.
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    pub(crate) fn services(&self) -> &Arc<Services> {
        &self.services
    }

    /// The same plugin linked for `grant`: only what the grant allows is linked,
    /// and an import the grant does not cover is an error naming the grant.
    pub fn granted(&self, grant: &Grant) -> Result<LoadedPlugin, LoadError> {
        for (import, capability) in self.imports.iter() {
            if !grant.allows(*capability) {
                return Err(LoadError::NotGranted {
                    plugin: self.name().to_owned(),
                    source_name: self.info.source.clone(),
                    import: import.clone(),
                    grant: capability.grant_key().unwrap_or("basic"),
                });
            }
        }
        let allow = grant.allow_list().map_err(|e| LoadError::BadGrant {
            plugin: self.name().to_owned(),
            message: e.to_string(),
        })?;
        let pre = capabilities::linker(&self.engine, grant)
            .and_then(|linker| linker.instantiate_pre(&self.component))
            .and_then(PluginPre::new)
            .map_err(|e| LoadError::Compile {
                source_name: self.info.source.clone(),
                message: format!("{e:#}"),
            })?;
        Ok(LoadedPlugin {
            info: self.info.clone(),
            name: self.name.clone(),
            verbs: self.verbs.clone(),
            pre,
            engine: self.engine.clone(),
            allow,
            grant: grant.clone(),
            services: self.services.clone(),
            component: self.component.clone(),
            imports: self.imports.clone(),
        })
    }
}

/// Where a component comes from.
pub enum PluginSource<'a> {
    /// Built into the binary.
    Builtin(&'static str, &'static [u8]),
    /// A file.
    File(&'a Path),
}

/// A plugin that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("plugin {path}: cannot read: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a valid component for this engine.
    #[error("plugin {source_name}: not a loadable component: {message}")]
    Compile {
        /// Where it came from.
        source_name: String,
        /// wasmtime's message.
        message: String,
    },
    /// The component imports something the host does not offer at all.
    #[error("plugin {source_name}: imports `{import}`, which this host does not provide")]
    UnknownImport {
        /// Where it came from.
        source_name: String,
        /// The import.
        import: String,
    },
    /// The component imports a capability its grant does not include.
    #[error(
        "plugin `{plugin}` ({source_name}) imports `{import}`, which needs the `{grant}` grant; it has not been granted (set it under [plugins.grants.{plugin}])"
    )]
    NotGranted {
        /// Plugin name.
        plugin: String,
        /// Where it came from.
        source_name: String,
        /// The import.
        import: String,
        /// The grant key that would allow it.
        grant: &'static str,
    },
    /// The component's digest differs from the one pinned in the config.
    #[error(
        "plugin `{plugin}` ({source_name}) has sha256 {actual}, but [plugins.pins] pins it to {pinned}; refusing a changed component"
    )]
    PinMismatch {
        /// Plugin name.
        plugin: String,
        /// Where it came from.
        source_name: String,
        /// The pinned digest.
        pinned: String,
        /// The file's digest.
        actual: String,
    },
    /// The grant itself is malformed.
    #[error("plugin `{plugin}`: bad grant: {message}")]
    BadGrant {
        /// Plugin name.
        plugin: String,
        /// What is wrong.
        message: String,
    },
    /// `describe` failed or returned nonsense.
    #[error("plugin {source_name}: {message}")]
    Describe {
        /// Where it came from.
        source_name: String,
        /// What went wrong.
        message: String,
    },
    /// Two plugins have the same name.
    #[error("two plugins are named `{name}`: {first} and {second}; disable one in the config")]
    Duplicate {
        /// The name.
        name: String,
        /// First source.
        first: String,
        /// Second source.
        second: String,
    },
}

/// Every loaded plugin, by name.
pub struct Registry {
    plugins: BTreeMap<String, Arc<LoadedPlugin>>,
    /// Plugins loaded on the host but not usable here, with the reason.
    unavailable: BTreeMap<String, String>,
    grants: BTreeMap<String, Grant>,
    pins: BTreeMap<String, String>,
    engine: Engine,
    cache: Option<CompileCache>,
    services: Arc<Services>,
}

impl Registry {
    /// Host-wide services the plugins' capabilities share.
    pub(crate) fn services(&self) -> &Arc<Services> {
        &self.services
    }

    /// An empty registry; `grants` says what each plugin, by name, may use beyond
    /// the basics.
    pub fn new(
        engine: &Engine,
        cache: Option<CompileCache>,
        grants: BTreeMap<String, Grant>,
        pins: BTreeMap<String, String>,
        services: Arc<Services>,
    ) -> Self {
        Self {
            plugins: BTreeMap::new(),
            unavailable: BTreeMap::new(),
            grants,
            pins,
            engine: engine.clone(),
            cache,
            services,
        }
    }

    /// Loads one component and adds it.
    pub async fn load(&mut self, source: PluginSource<'_>) -> Result<Arc<LoadedPlugin>, LoadError> {
        let (source_name, bytes): (String, std::borrow::Cow<'_, [u8]>) = match source {
            PluginSource::Builtin(name, bytes) => (format!("builtin:{name}"), bytes.into()),
            PluginSource::File(path) => {
                let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
                    path: path.to_owned(),
                    source,
                })?;
                (path.display().to_string(), bytes.into())
            }
        };
        let digest = sha256_hex(&bytes);
        let started = Instant::now();
        let component = match &self.cache {
            Some(cache) => cache.load(&self.engine, &bytes, &digest),
            None => Component::new(&self.engine, &bytes),
        }
        .map_err(|e| LoadError::Compile {
            source_name: source_name.clone(),
            message: format!("{e:#}"),
        })?;
        tracing::debug!(plugin = %source_name, elapsed_ms = started.elapsed().as_secs_f64() * 1e3, "component ready");
        let imports = imports(&self.engine, &component, &source_name)?;
        let compile_err = |e: wasmtime::Error| LoadError::Compile {
            source_name: source_name.clone(),
            message: format!("{e:#}"),
        };
        // Ask the component what it is before its grant is known; the probe
        // instance is granted nothing.
        let probe_pre = capabilities::describe_linker(&self.engine)
            .and_then(|linker| linker.instantiate_pre(&component))
            .and_then(PluginPre::new)
            .map_err(compile_err)?;
        let probe = describe(
            &self.engine,
            probe_pre,
            &source_name,
            digest,
            self.services.clone(),
            component,
            imports,
        )
        .await?;
        if let Some(pinned) = self.pins.get(probe.name())
            && !pinned.eq_ignore_ascii_case(&probe.info.sha256)
        {
            return Err(LoadError::PinMismatch {
                plugin: probe.name().to_owned(),
                source_name,
                pinned: pinned.clone(),
                actual: probe.info.sha256.clone(),
            });
        }
        let grant = self.grants.get(probe.name()).cloned().unwrap_or_default();
        let plugin = probe.granted(&grant)?;
        if let Some(existing) = self.plugins.get(plugin.name()) {
            return Err(LoadError::Duplicate {
                name: plugin.name().to_owned(),
                first: existing.info.source.clone(),
                second: source_name,
            });
        }
        let plugin = Arc::new(plugin);
        self.plugins
            .insert(plugin.name().to_owned(), plugin.clone());
        Ok(plugin)
    }

    /// Loads every `.wasm` file in `dir`, in name order.
    pub async fn load_dir(&mut self, dir: &Path) -> Result<Vec<Arc<LoadedPlugin>>, LoadError> {
        let read_err = |source| LoadError::Read {
            path: dir.to_owned(),
            source,
        };
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(read_err)? {
            let path = entry.map_err(read_err)?.path();
            if path.extension().is_some_and(|ext| ext == "wasm") {
                paths.push(path);
            }
        }
        paths.sort();
        let mut loaded = Vec::new();
        for path in paths {
            loaded.push(self.load(PluginSource::File(&path)).await?);
        }
        Ok(loaded)
    }

    /// A plugin by name.
    pub fn get(&self, name: &str) -> Option<&Arc<LoadedPlugin>> {
        self.plugins.get(name)
    }

    /// Why a plugin the host has is not usable through this registry.
    pub fn unavailable(&self, name: &str) -> Option<&str> {
        self.unavailable.get(name).map(String::as_str)
    }

    /// The view one tenant gets: only the plugins in `allowed` (`*` for all),
    /// each linked for the host's grant narrowed by the tenant's. A plugin whose
    /// imports the narrowed grant does not cover is unavailable, with the reason.
    pub fn for_tenant(
        &self,
        tenant: &str,
        allowed: &[String],
        grants: &BTreeMap<String, Grant>,
    ) -> Registry {
        let all = allowed.iter().any(|a| a == "*");
        let mut view = Registry {
            plugins: BTreeMap::new(),
            unavailable: BTreeMap::new(),
            grants: BTreeMap::new(),
            pins: self.pins.clone(),
            engine: self.engine.clone(),
            cache: self.cache.clone(),
            services: self.services.clone(),
        };
        for (name, plugin) in &self.plugins {
            if !all && !allowed.iter().any(|a| a == name) {
                view.unavailable.insert(
                    name.clone(),
                    format!("plugin `{name}` is not enabled for tenant `{tenant}`"),
                );
                continue;
            }
            let effective = match grants.get(name) {
                Some(narrower) => plugin.grant().intersect(narrower),
                None => plugin.grant().clone(),
            };
            if &effective == plugin.grant() {
                view.plugins.insert(name.clone(), plugin.clone());
                continue;
            }
            match plugin.granted(&effective) {
                Ok(variant) => {
                    view.plugins.insert(name.clone(), Arc::new(variant));
                }
                Err(e) => {
                    tracing::warn!(tenant, plugin = %name, "{e}");
                    view.unavailable
                        .insert(name.clone(), format!("for tenant `{tenant}`: {e}"));
                }
            }
            view.grants.insert(name.clone(), effective);
        }
        view
    }

    /// All plugins, by name.
    pub fn plugins(&self) -> impl Iterator<Item = &Arc<LoadedPlugin>> {
        self.plugins.values()
    }

    /// Plugin names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.plugins.keys().map(String::as_str)
    }
}

/// The component's imports with the capability each needs. Refuses a component
/// that imports anything the host does not offer, before any of its code runs.
fn imports(
    engine: &Engine,
    component: &Component,
    source_name: &str,
) -> Result<Vec<(String, Capability)>, LoadError> {
    let ty = component.component_type();
    ty.imports(engine)
        .map(|(name, _)| match Capability::for_import(name) {
            Some(capability) => Ok((name.to_owned(), capability)),
            None => Err(LoadError::UnknownImport {
                source_name: source_name.to_owned(),
                import: name.to_owned(),
            }),
        })
        .collect()
}

/// Instantiates a throwaway instance to ask the plugin what it offers.
async fn describe(
    engine: &Engine,
    pre: PluginPre<HostState>,
    source_name: &str,
    digest: String,
    services: Arc<Services>,
    component: Component,
    imports: Vec<(String, Capability)>,
) -> Result<LoadedPlugin, LoadError> {
    let err = |message: String| LoadError::Describe {
        source_name: source_name.to_owned(),
        message,
    };
    let probe = Arc::new(LoadedPlugin {
        info: PluginInfo {
            name: source_name.to_owned(),
            version: String::new(),
            description: String::new(),
            bare_tool_names: false,
            source: source_name.to_owned(),
            sha256: digest.clone(),
            verbs: Vec::new(),
        },
        name: Arc::from(source_name),
        verbs: Arc::new(BTreeMap::new()),
        pre: pre.clone(),
        engine: engine.clone(),
        allow: AllowList::default(),
        grant: Grant::default(),
        services: services.clone(),
        component: component.clone(),
        imports: Arc::new(Vec::new()),
    });
    let budget = CallBudget {
        deadline: Instant::now() + DESCRIBE_TIMEOUT,
        timeout: DESCRIBE_TIMEOUT,
        fuel: DESCRIBE_FUEL,
        cancel: CancellationToken::new(),
    };
    let mut instance = PluginInstance::new(probe, 64 * 1024 * 1024, 100, &budget)
        .await
        .map_err(|e| err(format!("instantiation failed: {e}")))?;
    let raw = instance
        .describe(&budget)
        .await
        .map_err(|e| err(format!("describe() failed: {e}")))?;
    if !valid_plugin_name(&raw.name) {
        return Err(err(format!(
            "describe() returned the name `{}`; plugin names are lower-case `[a-z][a-z0-9-]*`",
            raw.name
        )));
    }
    let mut verbs = BTreeMap::new();
    let mut infos = Vec::new();
    for v in raw.verbs {
        let input_schema: Value = serde_json::from_str(&v.input_schema)
            .map_err(|e| err(format!("verb `{}`: input schema is not JSON: {e}", v.name)))?;
        let validator = jsonschema::validator_for(&input_schema).map_err(|e| {
            err(format!(
                "verb `{}`: input schema is not a valid JSON Schema: {e}",
                v.name
            ))
        })?;
        let output_schema =
            if v.output_schema.trim().is_empty() {
                None
            } else {
                Some(serde_json::from_str(&v.output_schema).map_err(|e| {
                    err(format!("verb `{}`: output schema is not JSON: {e}", v.name))
                })?)
            };
        let info = VerbInfo {
            name: v.name.clone(),
            description: v.description,
            input_schema,
            output_schema,
            acts_on_world: v.acts_on_world,
        };
        if v.name.is_empty() || verbs.contains_key(&v.name) {
            return Err(err(format!(
                "verb name `{}` is empty or listed twice",
                v.name
            )));
        }
        infos.push(info.clone());
        verbs.insert(v.name, Verb { info, validator });
    }
    Ok(LoadedPlugin {
        name: Arc::from(raw.name.as_str()),
        info: PluginInfo {
            name: raw.name,
            version: raw.version,
            description: raw.description,
            bare_tool_names: raw.bare_tool_names,
            source: source_name.to_owned(),
            sha256: digest,
            verbs: infos,
        },
        verbs: Arc::new(verbs),
        pre,
        engine: engine.clone(),
        allow: AllowList::default(),
        grant: Grant::default(),
        services,
        component,
        imports: Arc::new(imports),
    })
}

fn valid_plugin_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}
