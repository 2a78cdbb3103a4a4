//! The plugin registry: loads components, checks what they import, asks each for
//! its verbs and compiles their input schemas.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wasmtime::Engine;
use wasmtime::component::Component;

use super::bindings::PluginPre;
use super::embedded;
use super::instance::{CallBudget, PluginInstance};
use crate::capabilities::{self, AllowList, Capability, Grant, HostState, Services};
use crate::config::PluginsConfig;
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
    /// The file it was loaded from; `None` for a built-in.
    file: Option<Arc<ComponentFile>>,
}

/// Where a third-party component was found, for matching grants' `file`.
#[derive(Debug)]
struct ComponentFile {
    /// Canonical path of the file.
    canonical: PathBuf,
    /// The folder it was found in, as given: a relative `file` is relative to it.
    dir: Option<PathBuf>,
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
                    hint: String::new(),
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
            file: self.file.clone(),
        })
    }

    /// Whether `grant`'s `file` names the file this plugin was loaded from.
    fn named_by(&self, grant: &Grant) -> bool {
        match &self.file {
            Some(file) => grant.names_file(Some(&file.canonical), file.dir.as_deref()),
            None => grant.file.is_none(),
        }
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
        "plugin `{plugin}` ({source_name}) imports `{import}`, which needs the `{grant}` grant; it has not been granted (set it under [plugins.grants.{plugin}]){hint}"
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
        /// Why a grant under that name did not apply, if one exists (starts
        /// with `; `), else empty.
        hint: String,
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
    /// A third-party component claims the name of a built-in plugin that is
    /// enabled.
    #[error(
        "two plugins are named `{name}`: the built-in one and {source_name}, whose describe() claims the built-in's name; a file may not take the name of an enabled built-in. Give that plugin a name of its own in its describe(), or, to replace the built-in, disable it (`[plugins] disable = [\"{name}\"]`) and grant the file by path (`[plugins.grants.{name}]` with `file = \"{file}\"`): a file taking a built-in's name gets only a grant that names it, never the built-in's default"
    )]
    ClaimsBuiltinName {
        /// Where it came from.
        source_name: String,
        /// The name it claims.
        name: String,
        /// Its canonical path, for the grant to add.
        file: PathBuf,
    },
    /// The component's digest differs from the one its grant is tied to.
    #[error(
        "plugin `{plugin}` ({source_name}) has sha256 {actual}, but [plugins.grants.{plugin}] is tied to sha256 {expected}; refusing a changed component (review it, then update the grant's sha256)"
    )]
    GrantDigestMismatch {
        /// Plugin name.
        plugin: String,
        /// Where it came from.
        source_name: String,
        /// The grant's digest.
        expected: String,
        /// The file's digest.
        actual: String,
    },
    /// `[plugins] require_pins` is set and a third-party component has no pin.
    #[error(
        "plugin `{plugin}` ({source_name}) is not pinned, and [plugins] require_pins refuses unpinned third-party components; after reviewing the file, add `{plugin} = \"{actual}\"` under [plugins.pins] (or `sha256 = \"{actual}\"` to its [plugins.grants.{plugin}])"
    )]
    Unpinned {
        /// Plugin name.
        plugin: String,
        /// Where it came from.
        source_name: String,
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

/// What the operator decided about which components may load and what they
/// get: the `[plugins]` keys the registry enforces at load.
#[derive(Debug, Clone, Default)]
pub struct LoadPolicy {
    /// Grants by plugin name (`[plugins.grants]`), applied as [`Registry::load`]
    /// describes.
    pub grants: BTreeMap<String, Grant>,
    /// Expected sha256 (hex) by plugin name (`[plugins.pins]`).
    pub pins: BTreeMap<String, String>,
    /// Refuse third-party components with no pin (`[plugins] require_pins`).
    pub require_pins: bool,
    /// Names of the plugins built into the binary, loaded or not.
    pub builtin_names: BTreeSet<String>,
    /// The built-ins the operator left out: a file may take one of these
    /// names only when a grant names that file.
    pub disabled_builtins: BTreeSet<String>,
}

impl LoadPolicy {
    /// The policy of `plugins`, with the built-ins of this binary.
    pub fn from_config(plugins: &PluginsConfig) -> Self {
        let builtin_names: BTreeSet<String> = embedded::EMBEDDED
            .iter()
            .map(|p| p.name.to_owned())
            .collect();
        // `builtin = false` leaves every built-in out, as far as replacing one goes.
        let disabled_builtins = builtin_names
            .iter()
            .filter(|name| !plugins.builtin || plugins.disable.contains(name))
            .cloned()
            .collect();
        Self {
            grants: plugins.grants.clone(),
            pins: plugins.pins.clone(),
            require_pins: plugins.require_pins,
            builtin_names,
            disabled_builtins,
        }
    }
}

/// Every loaded plugin, by name.
pub struct Registry {
    plugins: BTreeMap<String, Arc<LoadedPlugin>>,
    /// Plugins loaded on the host but not usable here, with the reason.
    unavailable: BTreeMap<String, String>,
    policy: LoadPolicy,
    engine: Engine,
    cache: Option<CompileCache>,
    services: Arc<Services>,
}

impl Registry {
    /// Host-wide services the plugins' capabilities share.
    pub(crate) fn services(&self) -> &Arc<Services> {
        &self.services
    }

    /// An empty registry; `policy` says which components may load and what
    /// each may use beyond the basics.
    pub fn new(
        engine: &Engine,
        cache: Option<CompileCache>,
        policy: LoadPolicy,
        services: Arc<Services>,
    ) -> Self {
        Self {
            plugins: BTreeMap::new(),
            unavailable: BTreeMap::new(),
            policy,
            engine: engine.clone(),
            cache,
            services,
        }
    }

    /// Loads one component and adds it.
    ///
    /// A built-in gets the grant under its name unless that grant names a
    /// `file`. A file gets the grant under the name its describe() reports only
    /// when the grant's `file` (if set) is this file; a grant's `sha256` (if set)
    /// must match or the component is refused. A file may take a built-in's
    /// name only while that built-in is disabled, and then gets only a grant
    /// that names the file.
    pub async fn load(&mut self, source: PluginSource<'_>) -> Result<Arc<LoadedPlugin>, LoadError> {
        let read_err = |path: &Path, source| LoadError::Read {
            path: path.to_owned(),
            source,
        };
        let (source_name, bytes, file): (String, std::borrow::Cow<'_, [u8]>, _) = match source {
            PluginSource::Builtin(name, bytes) => (format!("builtin:{name}"), bytes.into(), None),
            PluginSource::File(path) => {
                let bytes = std::fs::read(path).map_err(|e| read_err(path, e))?;
                // Grants name files by canonical path, so a symlink or `..`
                // neither dodges nor fakes a grant's `file`.
                let canonical = std::fs::canonicalize(path).map_err(|e| read_err(path, e))?;
                let file = ComponentFile {
                    canonical,
                    dir: path.parent().map(Path::to_owned),
                };
                (
                    path.display().to_string(),
                    bytes.into(),
                    Some(Arc::new(file)),
                )
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
        let mut probe = describe(
            &self.engine,
            probe_pre,
            &source_name,
            digest,
            self.services.clone(),
            component,
            imports,
        )
        .await?;
        probe.file = file;
        let (grant, hint) = self.grant_for(&probe)?;
        let plugin = probe.granted(&grant).map_err(|e| match e {
            LoadError::NotGranted {
                plugin,
                source_name,
                import,
                grant,
                ..
            } => LoadError::NotGranted {
                plugin,
                source_name,
                import,
                grant,
                hint,
            },
            other => other,
        })?;
        if let Some(existing) = self.plugins.get(plugin.name()) {
            return Err(LoadError::Duplicate {
                name: plugin.name().to_owned(),
                first: existing.info.source.clone(),
                second: source_name,
            });
        }
        let plugin = Arc::new(plugin);
        if plugin.file.is_none() {
            // describe() is the authority on a built-in's name; should it differ
            // from the crate name, no file may take it either.
            self.policy.builtin_names.insert(plugin.name().to_owned());
        }
        self.plugins
            .insert(plugin.name().to_owned(), plugin.clone());
        Ok(plugin)
    }

    /// The grant `probe` gets under the policy, or why it may not load; with
    /// a hint for a `NotGranted` error when a grant under its name exists but
    /// does not apply.
    fn grant_for(&self, probe: &LoadedPlugin) -> Result<(Grant, String), LoadError> {
        let name = probe.name();
        let digest = &probe.info.sha256;
        let source_name = &probe.info.source;
        let policy = &self.policy;
        let entry = policy.grants.get(name);
        let claims_builtin = probe.file.is_some() && policy.builtin_names.contains(name);
        if let Some(file) = &probe.file
            && claims_builtin
            && !policy.disabled_builtins.contains(name)
        {
            return Err(LoadError::ClaimsBuiltinName {
                source_name: source_name.clone(),
                name: name.to_owned(),
                file: file.canonical.clone(),
            });
        }
        if let Some(pinned) = policy.pins.get(name)
            && !pinned.eq_ignore_ascii_case(digest)
        {
            return Err(LoadError::PinMismatch {
                plugin: name.to_owned(),
                source_name: source_name.clone(),
                pinned: pinned.clone(),
                actual: digest.clone(),
            });
        }
        // An entry without `file` under a built-in's name is the built-in's
        // grant (its default, or the operator's version of it): never for a
        // file that merely reports the same name.
        let applies = entry.filter(|g| probe.named_by(g) && (!claims_builtin || g.file.is_some()));
        if let Some(grant) = applies
            && let Some(expected) = &grant.sha256
            && !grant.digest_matches(digest)
        {
            return Err(LoadError::GrantDigestMismatch {
                plugin: name.to_owned(),
                source_name: source_name.clone(),
                expected: expected.clone(),
                actual: digest.clone(),
            });
        }
        let pinned = policy.pins.contains_key(name) || applies.is_some_and(|g| g.sha256.is_some());
        if probe.file.is_some() && policy.require_pins && !pinned {
            return Err(LoadError::Unpinned {
                plugin: name.to_owned(),
                source_name: source_name.clone(),
                actual: digest.clone(),
            });
        }
        let wanted_file = entry.and_then(|g| g.file.as_ref());
        let hint = match (applies, wanted_file, &probe.file) {
            (Some(_), _, _) => String::new(),
            (None, Some(wanted), Some(file)) => {
                let wanted = match &file.dir {
                    Some(dir) if wanted.is_relative() => dir.join(wanted),
                    _ => wanted.clone(),
                };
                format!(
                    "; [plugins.grants.{name}] is for the file {}, and this one is {}",
                    wanted.display(),
                    file.canonical.display()
                )
            }
            (None, Some(_), None) => format!(
                "; [plugins.grants.{name}] names a file, so it does not apply to the built-in"
            ),
            (None, None, Some(file)) if claims_builtin => format!(
                "; `{name}` is the name of a built-in plugin, so this file gets only a grant that names it (add `file = \"{}\"` there), never the built-in's",
                file.canonical.display()
            ),
            (None, None, _) => String::new(),
        };
        Ok((applies.cloned().unwrap_or_default(), hint))
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
            policy: LoadPolicy {
                grants: BTreeMap::new(),
                ..self.policy.clone()
            },
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
            // A tenant's `file` and `sha256` narrow too: the tenant uses the
            // plugin only if it is the component they name.
            if let Some(narrower) = grants.get(name)
                && (!plugin.named_by(narrower) || !narrower.digest_matches(&plugin.info.sha256))
            {
                let reason = format!(
                    "for tenant `{tenant}`: plugin `{name}` ({}, sha256 {}) is not the component [tenants.grants.{name}] names by file or sha256",
                    plugin.info.source, plugin.info.sha256
                );
                tracing::warn!(tenant, plugin = %name, "{reason}");
                view.unavailable.insert(name.clone(), reason);
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
            view.policy.grants.insert(name.clone(), effective);
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
        file: None,
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
        file: None,
    })
}

fn valid_plugin_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}
