//! Why a plugin did not load.

use std::path::PathBuf;

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
    /// The component was built against a contract version the host does not
    /// serve, or exports no plugin interface.
    #[error("plugin {source_name}: {message}")]
    Contract {
        /// Where it came from.
        source_name: String,
        /// Which version it speaks and which the host serves.
        message: String,
    },
    /// The component imports something the host does not offer at all.
    #[error("plugin {source_name}: imports `{import}`, which this host does not provide{hint}")]
    UnknownImport {
        /// Where it came from.
        source_name: String,
        /// The import.
        import: String,
        /// For a stephost interface of another contract version, which ones
        /// the host serves (starts with `; `), else empty.
        hint: String,
    },
    /// The component imports a capability its grant does not include.
    #[error(
        "plugin `{plugin}` ({source_name}) imports `{import}`, which needs the `{grant}` grant; it has not been granted (set it under [plugins.grants.{plugin}], e.g. `{}`){hint}",
        grant_example(grant)
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

/// A config line that grants `key`, for messages.
fn grant_example(key: &str) -> &'static str {
    match key {
        "http" => "http = [\"api.example.com:443\"]",
        "desktop" => "desktop = true",
        "webdriver" => "webdriver = true",
        "rf_libraries" => "[plugins.grants.NAME.rf_libraries] with libraries = [\"Process\"]",
        _ => "see docs/plugins.md, The sandbox",
    }
}
