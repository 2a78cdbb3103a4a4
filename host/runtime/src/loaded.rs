//! A loaded plugin: its checked description and its component, linked for
//! one grant.

use std::path::PathBuf;
use std::sync::Arc;

use stephost_contract::{PluginInfo, PluginSpec};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::bindings::PluginPre;
use crate::capabilities::{self, AllowList, Capability, Grant, HostState, Services};
use crate::load_error::LoadError;
use crate::pool::Footprint;

/// A plugin ready to instantiate: what it said ([`PluginSpec`], which the
/// batch engine plans against) and how to run it (its linked component and
/// grant).
pub struct LoadedPlugin {
    pub(crate) spec: Arc<PluginSpec>,
    pub(crate) name: Arc<str>,
    pub(crate) pre: PluginPre<HostState>,
    pub(crate) engine: Engine,
    pub(crate) allow: AllowList,
    pub(crate) grant: Grant,
    pub(crate) services: Arc<Services>,
    pub(crate) component: Component,
    pub(crate) imports: Arc<Vec<(String, Capability)>>,
    /// The file it was loaded from; `None` for a built-in.
    pub(crate) file: Option<Arc<ComponentFile>>,
    /// What one instance takes from the pool (its Python evaluator apart).
    pub(crate) footprint: Footprint,
}

/// Where a third-party component was found, for matching grants' `file`.
#[derive(Debug)]
pub(crate) struct ComponentFile {
    /// Canonical path of the file.
    pub(crate) canonical: PathBuf,
    /// The folder it was found in, as given: a relative `file` is relative to it.
    pub(crate) dir: Option<PathBuf>,
}

impl LoadedPlugin {
    /// What it said about itself, checked and compiled.
    pub fn spec(&self) -> &Arc<PluginSpec> {
        &self.spec
    }

    /// Its description.
    pub fn info(&self) -> &PluginInfo {
        self.spec.info()
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn name_arc(&self) -> Arc<str> {
        self.name.clone()
    }

    pub(crate) fn pre(&self) -> &PluginPre<HostState> {
        &self.pre
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn allow_list(&self) -> &AllowList {
        &self.allow
    }

    /// What it was granted.
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    pub(crate) fn services(&self) -> &Arc<Services> {
        &self.services
    }

    /// What one instance takes from the instance pool, its Python evaluator
    /// apart.
    pub fn footprint(&self) -> Footprint {
        self.footprint
    }

    /// The evaluator's footprint when this plugin imports the `python`
    /// capability (it starts one per instance on its first expression).
    pub fn evaluator_footprint(&self) -> Option<Footprint> {
        self.imports
            .iter()
            .any(|(_, capability)| *capability == Capability::Python)
            .then(|| self.services.python.footprint())
            .flatten()
    }

    /// Pool slots one session's instance of this plugin may hold: its own and
    /// its Python evaluator's.
    pub fn slots_per_session(&self) -> u32 {
        self.footprint.slots() + self.evaluator_footprint().map_or(0, |f| f.slots())
    }

    /// The same plugin linked for `grant`: only what the grant allows is linked,
    /// and an import the grant does not cover is an error naming the grant.
    pub fn granted(&self, grant: &Grant) -> Result<LoadedPlugin, LoadError> {
        for (import, capability) in self.imports.iter() {
            if !grant.allows(*capability) {
                return Err(LoadError::NotGranted {
                    plugin: self.name().to_owned(),
                    source_name: self.info().source.clone(),
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
        let contract = self.spec.contract();
        let pre = capabilities::linker(&self.engine, grant, contract)
            .and_then(|linker| linker.instantiate_pre(&self.component))
            .and_then(|pre| PluginPre::new(contract, pre))
            .map_err(|e| LoadError::Compile {
                source_name: self.info().source.clone(),
                message: format!("{e:#}"),
            })?;
        Ok(LoadedPlugin {
            spec: self.spec.clone(),
            name: self.name.clone(),
            pre,
            engine: self.engine.clone(),
            allow,
            grant: grant.clone(),
            services: self.services.clone(),
            component: self.component.clone(),
            imports: self.imports.clone(),
            file: self.file.clone(),
            footprint: self.footprint,
        })
    }

    /// Whether `grant`'s `file` names the file this plugin was loaded from.
    pub(crate) fn named_by(&self, grant: &Grant) -> bool {
        match &self.file {
            Some(file) => grant.names_file(Some(&file.canonical), file.dir.as_deref()),
            None => grant.file.is_none(),
        }
    }
}
