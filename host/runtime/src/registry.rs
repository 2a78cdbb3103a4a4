//! The plugin registry: loads components, checks what they import, asks each for
//! its verbs and compiles their input schemas.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stephost_contract::{CallBudget, ContractVersion, Fault, PluginSpec, RawDescription};
use tokio_util::sync::CancellationToken;
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::bindings::{PluginPre, contract_of};
use crate::capabilities::{self, AllowList, Capability, Grant, HostState, Services};
use crate::config::PluginsConfig;
use crate::embedded;
use crate::engine::{CompileCache, sha256_hex};
use crate::instance::PluginInstance;
use crate::load_error::LoadError;
use crate::loaded::{ComponentFile, LoadedPlugin};
use crate::pool::Footprint;

/// Time and fuel allowed for a plugin's `describe` at load.
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(10);
const DESCRIBE_FUEL: u64 = 10_000_000_000;

/// Where a component comes from.
pub enum PluginSource<'a> {
    /// Built into the binary.
    Builtin(&'static str, &'static [u8]),
    /// A file.
    File(&'a Path),
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
    pub(crate) plugins: BTreeMap<String, Arc<LoadedPlugin>>,
    /// Plugins loaded on the host but not usable here, with the reason.
    unavailable: BTreeMap<String, String>,
    pub(crate) policy: LoadPolicy,
    pub(crate) engine: Engine,
    pub(crate) cache: Option<CompileCache>,
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
        // The version first: a component of another contract version is named
        // as such, not as a bad import or a type mismatch.
        let contract = contract_of(&component).map_err(|message| LoadError::Contract {
            source_name: source_name.clone(),
            message,
        })?;
        let imports = imports(&self.engine, &component, &source_name, contract)?;
        // Ask the component what it is before its grant is known; the probe
        // instance is granted nothing.
        let probe_pre = capabilities::describe_linker(&self.engine, contract)
            .and_then(|linker| linker.instantiate_pre(&component))
            .and_then(|pre| PluginPre::new(contract, pre))
            .map_err(|e| LoadError::Contract {
                source_name: source_name.clone(),
                message: mismatch(contract, &format!("{e:#}")),
            })?;
        let mut probe = describe(
            Probe {
                engine: &self.engine,
                pre: probe_pre,
                source_name: &source_name,
                digest: &digest,
                contract,
            },
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
                first: existing.info().source.clone(),
                second: source_name,
            });
        }
        let mut plugin = plugin;
        plugin.footprint = Footprint::of_component(&bytes);
        tracing::debug!(plugin = plugin.name(), footprint = %plugin.footprint, slots = plugin.footprint.slots(), "instance pool needs");
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
    pub(crate) fn grant_for(&self, probe: &LoadedPlugin) -> Result<(Grant, String), LoadError> {
        let name = probe.name();
        let digest = &probe.info().sha256;
        let source_name = &probe.info().source;
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

    /// Loads every `.wasm` file in `dir`, in name order; `dir` may also be one
    /// component file (`--plugins target/wasm32-wasip2/release/hello.wasm`).
    pub async fn load_dir(&mut self, dir: &Path) -> Result<Vec<Arc<LoadedPlugin>>, LoadError> {
        let read_err = |source| LoadError::Read {
            path: dir.to_owned(),
            source,
        };
        if std::fs::metadata(dir).map_err(read_err)?.is_file() {
            return Ok(vec![self.load(PluginSource::File(dir)).await?]);
        }
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

    /// Every plugin the host has that is not usable here, with the reason.
    pub fn unavailable_all(&self) -> impl Iterator<Item = (&str, &str)> {
        self.unavailable
            .iter()
            .map(|(name, why)| (name.as_str(), why.as_str()))
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
                && (!plugin.named_by(narrower) || !narrower.digest_matches(&plugin.info().sha256))
            {
                let reason = format!(
                    "for tenant `{tenant}`: plugin `{name}` ({}, sha256 {}) is not the component [tenants.grants.{name}] names by file or sha256",
                    plugin.info().source,
                    plugin.info().sha256
                );
                tracing::warn!(tenant, plugin = %name, "{reason}");
                view.unavailable.insert(name.clone(), reason);
                continue;
            }
            let effective = match grants.get(name) {
                Some(narrower) => plugin.grant().intersect(narrower),
                None => plugin.grant().clone(),
            };
            if let Some(narrower) = grants.get(name) {
                // Dropped like an uncovered HTTP pattern, but said: an operator
                // who lists a folder for a tenant expects it to be there.
                for folder in &narrower.folders {
                    if !effective.folders.iter().any(|f| f.path == folder.path) {
                        tracing::warn!(
                            tenant,
                            plugin = %name,
                            folder = %folder.path.display(),
                            "[tenants.grants.{name}] folders: not inside any folder [plugins.grants.{name}] grants; left out"
                        );
                    }
                }
            }
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
pub(crate) fn imports(
    engine: &Engine,
    component: &Component,
    source_name: &str,
    contract: ContractVersion,
) -> Result<Vec<(String, Capability)>, LoadError> {
    let ty = component.component_type();
    ty.imports(engine)
        .map(|(name, _)| match Capability::for_import(name, contract) {
            Some(capability) => Ok((name.to_owned(), capability)),
            None => Err(LoadError::UnknownImport {
                source_name: source_name.to_owned(),
                import: name.to_owned(),
                hint: match ContractVersion::split(name) {
                    Some((_, version)) => format!(
                        "; the component exports contract {contract} and imports this interface at {}: a component speaks one contract version (this host serves {})",
                        version.unwrap_or("no version"),
                        ContractVersion::supported()
                    ),
                    None => String::new(),
                },
            }),
        })
        .collect()
}

/// Why a component that names contract `contract` does not link against it:
/// its types differ from the released ones, which wasmtime says without
/// naming any version.
pub(crate) fn mismatch(contract: ContractVersion, e: &dyn std::fmt::Display) -> String {
    format!(
        "its interfaces do not match the released contract {contract} that its exports name (was it built from a changed copy of wit/{contract}/? released versions never change): {e}"
    )
}

/// What describing a component needs to know about it.
pub(crate) struct Probe<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) pre: PluginPre<HostState>,
    pub(crate) source_name: &'a str,
    pub(crate) digest: &'a str,
    pub(crate) contract: ContractVersion,
}

/// Instantiates a throwaway instance to ask the plugin what it offers, and
/// checks the answer.
async fn describe(
    probe: Probe<'_>,
    services: Arc<Services>,
    component: Component,
    imports: Vec<(String, Capability)>,
) -> Result<LoadedPlugin, LoadError> {
    let raw = describe_raw(&probe, &services, &component).await?;
    let spec =
        PluginSpec::new(raw, probe.source_name, probe.digest, probe.contract).map_err(|e| {
            LoadError::Describe {
                source_name: probe.source_name.to_owned(),
                message: e.to_string(),
            }
        })?;
    Ok(probe.loaded(spec, services, component, imports))
}

impl Probe<'_> {
    /// The plugin `spec` describes, granted nothing yet.
    pub(crate) fn loaded(
        self,
        spec: PluginSpec,
        services: Arc<Services>,
        component: Component,
        imports: Vec<(String, Capability)>,
    ) -> LoadedPlugin {
        LoadedPlugin {
            name: Arc::from(spec.name()),
            spec: Arc::new(spec),
            pre: self.pre,
            engine: self.engine.clone(),
            allow: AllowList::default(),
            grant: Grant::default(),
            services,
            component,
            imports: Arc::new(imports),
            file: None,
            // Set from the component's bytes once it loads (`Registry::load`).
            footprint: Footprint::MOST,
        }
    }
}

/// What the component's `describe()` answers, unchecked, from a throwaway
/// instance granted nothing.
pub(crate) async fn describe_raw(
    probe: &Probe<'_>,
    services: &Arc<Services>,
    component: &Component,
) -> Result<RawDescription, LoadError> {
    let source_name = probe.source_name;
    let err = |message: String| LoadError::Describe {
        source_name: source_name.to_owned(),
        message,
    };
    let unnamed = Arc::new(PluginSpec::placeholder(
        source_name,
        probe.digest,
        probe.contract,
    ));
    let throwaway = Arc::new(LoadedPlugin {
        spec: unnamed,
        name: Arc::from(source_name),
        pre: probe.pre.clone(),
        engine: probe.engine.clone(),
        allow: AllowList::default(),
        grant: Grant::default(),
        services: services.clone(),
        component: component.clone(),
        imports: Arc::new(Vec::new()),
        file: None,
        footprint: Footprint::MOST,
    });
    let budget = CallBudget {
        deadline: Instant::now() + DESCRIBE_TIMEOUT,
        timeout: DESCRIBE_TIMEOUT,
        fuel: DESCRIBE_FUEL,
        cancel: CancellationToken::new(),
    };
    let mut instance = PluginInstance::new(throwaway, 64 * 1024 * 1024, 100, &budget)
        .await
        .map_err(|e| {
            let text = e.to_string();
            // wasmtime checks an export's function types only when the
            // instance looks them up, and says so without any version.
            if text.contains("type mismatch") {
                LoadError::Contract {
                    source_name: source_name.to_owned(),
                    message: mismatch(probe.contract, &text),
                }
            } else {
                err(format!("instantiation failed: {text}"))
            }
        })?;
    instance.describe(&budget).await.map_err(|fault| {
        err(match fault {
            // describe() has budgets of its own, not the steps' config keys.
            Fault::OutOfFuel(fuel) => format!(
                "describe() used all of its fuel ({fuel} units, fixed for describe(), not limits.fuel_per_step): it must answer without heavy work"
            ),
            Fault::Timeout(ms) => format!(
                "describe() did not answer within {ms} ms (fixed for describe(), not limits.step_timeout_ms): it must answer without waiting"
            ),
            other => format!("describe() failed: {other}"),
        })
    })
}
