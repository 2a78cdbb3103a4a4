//! The plugins a batch may use: their verbs and schemas, without the engine
//! that runs them.

use std::collections::BTreeMap;
use std::sync::Arc;

use stephost_contract::PluginSpec;

/// The plugins one caller (a tenant) may plan steps for, by name, and the ones
/// the host has but this caller may not use, with the reason.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    plugins: BTreeMap<String, Arc<PluginSpec>>,
    unavailable: BTreeMap<String, String>,
}

impl Catalog {
    /// A catalog of `plugins`, with `unavailable` ones named and explained.
    pub fn new(
        plugins: impl IntoIterator<Item = Arc<PluginSpec>>,
        unavailable: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        Self {
            plugins: plugins
                .into_iter()
                .map(|p| (p.name().to_owned(), p))
                .collect(),
            unavailable: unavailable.into_iter().collect(),
        }
    }

    /// A plugin by name.
    pub fn get(&self, name: &str) -> Option<&Arc<PluginSpec>> {
        self.plugins.get(name)
    }

    /// Why a plugin the host has is not usable through this catalog.
    pub fn unavailable(&self, name: &str) -> Option<&str> {
        self.unavailable.get(name).map(String::as_str)
    }

    /// All plugins, by name.
    pub fn plugins(&self) -> impl Iterator<Item = &Arc<PluginSpec>> {
        self.plugins.values()
    }

    /// Plugin names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.plugins.keys().map(String::as_str)
    }
}
