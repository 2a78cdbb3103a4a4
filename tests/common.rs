//! Helpers shared by the host's integration tests.

#![allow(dead_code)]

use serde_json::{Value, json};
use stephost::batch::Report;
use stephost::config::Config;
use stephost::{BatchOptions, Host};

/// A host with small pools and a private compile cache.
pub(crate) async fn host_with(edit: impl FnOnce(&mut Config)) -> Host {
    let mut config = Config::default();
    config.engine.max_instances = 64;
    config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
    edit(&mut config);
    Host::start(config).await.expect("host starts")
}

/// A host with default test settings.
pub(crate) async fn host() -> Host {
    host_with(|_| {}).await
}

/// Runs `batch` in `session`.
pub(crate) async fn run(host: &Host, session: Option<&str>, batch: Value) -> Report {
    host.run_batch(
        &batch,
        BatchOptions {
            session: session.map(stephost::session::SessionRef::Named),
            ..BatchOptions::default()
        },
    )
    .await
}

/// A testkit step.
pub(crate) fn step(verb: &str, input: Value) -> Value {
    json!({"plugin": "testkit", "verb": verb, "input": input})
}

/// The report as JSON, for assertions on the wire shape.
pub(crate) fn to_json(report: &Report) -> Value {
    serde_json::to_value(report).expect("report serializes")
}

/// A folder holding only the nettest component (outbound HTTP, not built in),
/// for loading with `plugins.dirs`.
pub(crate) fn nettest_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let wasm = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release/nettest.wasm");
    std::fs::copy(&wasm, dir.path().join("nettest.wasm"))
        .expect("nettest component is built by host/runtime/build.rs");
    dir
}

/// The component `host/runtime/build.rs` built for the plugin crate `name` (`rf`,
/// `nettest`, ...), to install as a third-party file.
pub(crate) fn built_component(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release")
        .join(format!("{name}.wasm"))
}

/// A folder holding the built components of `crates`, each as `<crate>.wasm`,
/// for loading with `plugins.dirs`.
pub(crate) fn plugins_dir(crates: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in crates {
        std::fs::copy(
            built_component(name),
            dir.path().join(format!("{name}.wasm")),
        )
        .expect("the component is built by host/runtime/build.rs");
    }
    dir
}
