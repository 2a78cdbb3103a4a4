//! The `rf-library` capability: real Robot Framework libraries that the host
//! runs, one Python process per instance and library, reached over `wasi:http`
//! with RF's remote library interface. Without an `rf_libraries` grant listing
//! the library, [`start`] answers [`LibraryError::NotGranted`] naming the key.
//! In a native build these calls go to [`crate::mock`].

pub use crate::bindings::stephost::plugin::rf_library::{LibraryError, LibraryServer};

host_fn! {
    /// The server of library `name` imported with `args`: started on first
    /// use, the same one afterwards.
    rf_library::start(name: &str, args: &[String]) -> Result<LibraryServer, LibraryError>
}

host_fn! {
    /// The libraries this instance may start.
    rf_library::granted() -> Vec<String>
}

host_fn! {
    /// The variables of RF variable file `path` imported with `args`: a JSON
    /// array of `[name, value]` pairs, as real Robot Framework reads the file.
    rf_library::load_variables(path: &str, args: &[String]) -> Result<String, LibraryError>
}
