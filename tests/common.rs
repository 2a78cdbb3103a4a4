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
            session_id: session,
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
        .expect("nettest component is built by host/build.rs");
    dir
}
