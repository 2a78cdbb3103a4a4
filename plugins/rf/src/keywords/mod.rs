//! The keywords of Robot Framework's BuiltIn, String, Collections and DateTime libraries.
//! BuiltIn, String and Collections are there from the start; DateTime, as in RF, only
//! once imported (see `Session::import_library`).
//!
//! [`catalog`] lists every keyword with RF's own argument spec and documentation; each
//! library module maps names to implementations. A catalog keyword without an
//! implementation (those that need a running test or suite, such as `Set Tags`) still
//! takes part in lookup and suggestions, and fails saying it is not supported here.

mod builtin;
pub(crate) use builtin::RunContext;
pub(crate) mod catalog;
mod collections;
mod datetime;
mod normalizer;
pub(crate) mod operating_system;
mod run;
mod string;

use std::collections::HashMap;

use crate::args::{Bound, Spec};
use crate::engine::Session;
use crate::error::RfResult;
use crate::matching::normalize_name;
use crate::value::Value;
use catalog::{CATALOG, KwInfo};

/// A keyword implementation.
pub(crate) type Run = fn(&mut Session, &Bound) -> RfResult<Value>;

/// A keyword of a library implemented here.
pub struct Keyword {
    /// What RF says about it.
    pub(crate) info: &'static KwInfo,
    /// Its parsed argument spec.
    pub(crate) spec: Spec,
    /// The normalized name, for lookup.
    pub(crate) norm: String,
    /// The implementation; `None` for keywords the sandbox cannot offer.
    pub(crate) run: Option<Run>,
}

thread_local! {
    // Built once per instance and leaked: the registry lives as long as the instance.
    static REGISTRY: &'static [Keyword] = Box::leak(build().into_boxed_slice());
    // Every lookup of a keyword by name goes through this (a scan of the registry
    // with string compares was a fifth of a batch step's time).
    static BY_NAME: &'static HashMap<String, Vec<&'static Keyword>> = Box::leak(Box::new(index(registry())));
}

/// Every keyword of BuiltIn, String, Collections and DateTime.
pub(crate) fn registry() -> &'static [Keyword] {
    REGISTRY.with(|r| *r)
}

/// The keywords whose normalized name is `norm` (one per library that has it).
pub(crate) fn named(norm: &str) -> &'static [&'static Keyword] {
    BY_NAME.with(|m| m.get(norm).map_or(&[][..], Vec::as_slice))
}

fn index(keywords: &'static [Keyword]) -> HashMap<String, Vec<&'static Keyword>> {
    let mut map: HashMap<String, Vec<&'static Keyword>> = HashMap::new();
    for kw in keywords {
        map.entry(kw.norm.clone()).or_default().push(kw);
    }
    map
}

fn build() -> Vec<Keyword> {
    CATALOG
        .iter()
        .map(|info| Keyword {
            info,
            spec: Spec::parse(info.args),
            norm: normalize_name(info.name),
            run: match info.library {
                "BuiltIn" => builtin::lookup(info.name).or_else(|| run::lookup(info.name)),
                "String" => string::lookup(info.name),
                "OperatingSystem" => operating_system::lookup(info.name),
                "DateTime" => datetime::lookup(info.name),
                _ => collections::lookup(info.name),
            },
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
