//! A component examined as the registry would load it, without adding it:
//! every fact and every problem at once, for `stephost plugin check`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use stephost_contract::review::{self, Problem, Severity};
use stephost_contract::{ContractVersion, PluginSpec, RawDescription};
use wasmtime::component::Component;

use crate::bindings::{PluginPre, contract_of};
use crate::capabilities::{self, Capability};
use crate::engine::sha256_hex;
use crate::load_error::LoadError;
use crate::loaded::ComponentFile;
use crate::registry::{Probe, Registry, describe_raw};

/// What loading a component found, stage by stage. A stage that failed
/// leaves the later ones unknown (`None` or empty).
#[derive(Debug, Serialize)]
pub struct Inspection {
    /// The file, as given.
    pub file: String,
    /// Its size.
    pub size_bytes: u64,
    /// sha256 of its bytes, as pins and grants name it.
    pub sha256: String,
    /// How long compiling it from scratch took (what a host without a warm
    /// compile cache spends before it can serve the plugin).
    pub first_compile_ms: Option<f64>,
    /// How long loading it from the compile cache took, when the host has one.
    pub cached_load_ms: Option<f64>,
    /// The contract version it exports.
    pub contract: Option<ContractVersion>,
    /// What it imports and which grant each import needs.
    pub imports: Vec<Import>,
    /// Its plugin name, once describe() answered.
    pub name: Option<String>,
    /// Its description, checked, once describe() answered without errors.
    #[serde(skip)]
    pub spec: Option<Arc<PluginSpec>>,
    /// Everything wrong, errors before warnings within a stage.
    pub problems: Vec<Finding>,
}

/// One import and what it needs.
#[derive(Debug, Clone, Serialize)]
pub struct Import {
    /// The import name (`wasi:http/outgoing-handler@0.2.6`).
    pub name: String,
    /// The grant key it needs (`http`, `desktop`, ...); `None` when every
    /// plugin has it.
    pub grant: Option<&'static str>,
    /// Whether this host offers it at all.
    pub known: bool,
    /// Whether the configured grants give it to this component; unknown
    /// (`None`) until the component has described itself.
    pub granted: Option<bool>,
}

/// Where in loading a problem was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Reading the file.
    Read,
    /// Compiling it.
    Compile,
    /// Its contract version.
    Contract,
    /// What it imports.
    Imports,
    /// Running its describe().
    Describe,
    /// What describe() answered.
    Description,
    /// The operator's grants and pins.
    Grants,
    /// Its name among the other plugins.
    Names,
}

/// One problem, with its stage.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Where it was found.
    pub stage: Stage,
    /// What is wrong, and where in the description when it is there.
    #[serde(flatten)]
    pub problem: Problem,
}

impl Finding {
    /// A problem of `stage` outside the description, stopping the load.
    pub fn error(stage: Stage, message: impl Into<String>) -> Self {
        Self {
            stage,
            problem: Problem {
                severity: Severity::Error,
                verb: None,
                schema: None,
                pointer: None,
                message: message.into(),
            },
        }
    }

    /// Whether it stops the load.
    pub fn severity(&self) -> Severity {
        self.problem.severity
    }
}

impl Inspection {
    /// Whether the host would load it.
    pub fn loads(&self) -> bool {
        self.spec.is_some() && !self.has_errors()
    }

    fn has_errors(&self) -> bool {
        self.problems
            .iter()
            .any(|p| p.severity() == Severity::Error)
    }
}

impl Registry {
    /// Examines the component at `path` as [`load`](Self::load) would (the
    /// same compile, contract, import, describe, grant, pin and name checks
    /// against this registry's policy and plugins), collecting every problem
    /// instead of stopping at the first, and adds nothing.
    pub async fn inspect(&self, path: &Path) -> Inspection {
        let file = path.display().to_string();
        let mut found = Inspection {
            file: file.clone(),
            size_bytes: 0,
            sha256: String::new(),
            first_compile_ms: None,
            cached_load_ms: None,
            contract: None,
            imports: Vec::new(),
            name: None,
            spec: None,
            problems: Vec::new(),
        };
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) => {
                found.problems.push(Finding::error(
                    Stage::Read,
                    format!("cannot read {file}: {e}"),
                ));
                return found;
            }
        };
        found.size_bytes = bytes.len() as u64;
        found.sha256 = sha256_hex(&bytes);
        let digest = found.sha256.clone();
        let started = Instant::now();
        let component = match Component::new(&self.engine, &bytes) {
            Ok(component) => component,
            Err(e) => {
                found.problems.push(Finding::error(
                    Stage::Compile,
                    format!("not a loadable component: {e:#}"),
                ));
                return found;
            }
        };
        found.first_compile_ms = Some(ms(started.elapsed()));
        if let Some(cache) = &self.cache {
            // Stored so the host's next start maps it instead of compiling.
            match cache.put(&component, &digest) {
                Ok(()) => {
                    let started = Instant::now();
                    if cache.load(&self.engine, &bytes, &digest).is_ok() {
                        found.cached_load_ms = Some(ms(started.elapsed()));
                    }
                }
                Err(e) => tracing::warn!("could not write the compile cache: {e:#}"),
            }
        }
        let contract = match contract_of(&component) {
            Ok(contract) => contract,
            Err(message) => {
                found.imports = raw_imports(&self.engine, &component);
                found
                    .problems
                    .push(Finding::error(Stage::Contract, message));
                return found;
            }
        };
        found.contract = Some(contract);
        let ty = component.component_type();
        found.imports = ty
            .imports(&self.engine)
            .map(|(name, _)| {
                let capability = Capability::for_import(name, contract);
                Import {
                    name: name.to_owned(),
                    grant: capability.and_then(Capability::grant_key),
                    known: capability.is_some(),
                    granted: None,
                }
            })
            .collect();
        let imports = match crate::registry::imports(&self.engine, &component, &file, contract) {
            Ok(imports) => imports,
            Err(e) => {
                found
                    .problems
                    .push(Finding::error(Stage::Imports, e.to_string()));
                return found;
            }
        };
        let probe_pre = capabilities::describe_linker(&self.engine, contract)
            .and_then(|linker| linker.instantiate_pre(&component))
            .and_then(|pre| PluginPre::new(contract, pre));
        let probe = match probe_pre {
            Ok(pre) => Probe {
                engine: &self.engine,
                pre,
                source_name: &file,
                digest: &digest,
                contract,
            },
            Err(e) => {
                found.problems.push(Finding::error(
                    Stage::Contract,
                    crate::registry::mismatch(contract, &format!("{e:#}")),
                ));
                return found;
            }
        };
        let services = self.services().clone();
        let raw = match describe_raw(&probe, &services, &component).await {
            Ok(raw) => raw,
            Err(e) => {
                found
                    .problems
                    .push(Finding::error(Stage::Describe, e.to_string()));
                return found;
            }
        };
        found.name = Some(raw.name.clone());
        found.problems.extend(described(&raw));
        if found.has_errors() {
            return found;
        }
        let spec = match PluginSpec::new(raw, &file, &digest, contract) {
            Ok(spec) => spec,
            Err(e) => {
                found
                    .problems
                    .push(Finding::error(Stage::Description, e.to_string()));
                return found;
            }
        };
        let mut plugin = probe.loaded(spec, services, component, imports);
        plugin.file = std::fs::canonicalize(path).ok().map(|canonical| {
            Arc::new(ComponentFile {
                canonical,
                dir: path.parent().map(Path::to_owned),
            })
        });
        self.judge(&plugin, &mut found);
        found.spec = Some(plugin.spec().clone());
        found
    }

    /// The grant, pin and name verdicts on a described `plugin`.
    fn judge(&self, plugin: &crate::LoadedPlugin, found: &mut Inspection) {
        let mut claims_builtin = false;
        match self.grant_for(plugin) {
            Ok((grant, hint)) => {
                // One problem per missing grant, naming its first import.
                let mut missing = std::collections::BTreeSet::new();
                for import in &mut found.imports {
                    let capability = found
                        .contract
                        .and_then(|contract| Capability::for_import(&import.name, contract));
                    let granted = capability.is_some_and(|c| grant.allows(c));
                    // rf-library is linked for every plugin and refuses each
                    // call the grant does not list: loadable, but usable only
                    // with libraries granted.
                    let usable = granted
                        && (capability != Some(Capability::RfLibrary)
                            || !grant.rf_libraries.is_empty());
                    import.granted = Some(usable);
                    if !granted
                        && let Some(key) = import.grant
                        && missing.insert(key)
                    {
                        let error = LoadError::NotGranted {
                            plugin: plugin.name().to_owned(),
                            source_name: found.file.clone(),
                            import: import.name.clone(),
                            grant: key,
                            hint: hint.clone(),
                        };
                        found
                            .problems
                            .push(Finding::error(Stage::Grants, error.to_string()));
                    }
                }
                if let Err(e) = grant.allow_list() {
                    found.problems.push(Finding::error(
                        Stage::Grants,
                        format!("[plugins.grants.{}]: {e}", plugin.name()),
                    ));
                }
            }
            Err(e) => {
                // That is the duplicate-name problem for a built-in, said
                // with its remedy; the generic one below would repeat it.
                claims_builtin = matches!(e, LoadError::ClaimsBuiltinName { .. });
                found
                    .problems
                    .push(Finding::error(Stage::Grants, e.to_string()));
            }
        }
        let same_file = |existing: &crate::LoadedPlugin| match (&existing.file, &plugin.file) {
            (Some(a), Some(b)) => a.canonical == b.canonical,
            _ => false,
        };
        // The configuration may load the very file being checked: that is the
        // plugin itself, not a second one of its name.
        if let Some(existing) = self
            .plugins
            .get(plugin.name())
            .filter(|e| !claims_builtin && !same_file(e))
        {
            let error = LoadError::Duplicate {
                name: plugin.name().to_owned(),
                first: existing.info().source.clone(),
                second: found.file.clone(),
            };
            found
                .problems
                .push(Finding::error(Stage::Names, error.to_string()));
        }
    }
}

/// The review of a describe() answer, as findings.
fn described(raw: &RawDescription) -> Vec<Finding> {
    review::review(raw)
        .into_iter()
        .map(|problem| Finding {
            stage: Stage::Description,
            problem,
        })
        .collect()
}

/// The imports of a component whose contract is unknown: its stephost ones
/// cannot be judged, the others (WASI) are what they are in any version.
fn raw_imports(engine: &wasmtime::Engine, component: &Component) -> Vec<Import> {
    component
        .component_type()
        .imports(engine)
        .map(|(name, _)| {
            let capability = match ContractVersion::split(name) {
                Some(_) => None,
                None => Capability::for_import(name, ContractVersion::LATEST),
            };
            Import {
                name: name.to_owned(),
                grant: capability.and_then(Capability::grant_key),
                known: capability.is_some(),
                granted: None,
            }
        })
        .collect()
}

fn ms(elapsed: Duration) -> f64 {
    (elapsed.as_secs_f64() * 1e4).round() / 10.0
}
