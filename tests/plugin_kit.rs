//! `stephost plugin check`, `plugin new` and `plugin test` through the binary:
//! each broken fixture component's report as a snapshot, exit codes, and a
//! case file run against a real component.
//!
//! The snapshots are the text reports with what changes from build to build
//! (paths, digests, sizes, times) masked. After a deliberate change to the
//! report, `STEPHOST_UPDATE_SNAPSHOTS=1 cargo test --test plugin_kit` rewrites
//! them; review the diff.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// Runs the binary with a compile cache shared by this file's tests (each
/// host start compiles the built-ins once, not once per test); `_scratch` is
/// the test's own folder, kept alive by the caller.
fn stephost(args: &[&str], _scratch: &Path) -> Output {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-kit-cache");
    // One host start fills the cache before the tests' hosts start side by
    // side; otherwise each would compile every built-in at once, on two cores.
    static WARM: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    WARM.get_or_init(|| {
        let _ = Command::new(env!("CARGO_BIN_EXE_stephost"))
            .arg("plugins")
            .env("STEPHOST_CACHE_DIR", &cache)
            .env_remove("STEPHOST_CONFIG")
            .output();
    });
    Command::new(env!("CARGO_BIN_EXE_stephost"))
        .args(args)
        .env("STEPHOST_CACHE_DIR", cache)
        .env_remove("STEPHOST_CONFIG")
        .output()
        .expect("stephost runs")
}

/// A component the host's build made in the plugins workspace.
fn fixture(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release")
        .join(format!("{name}.wasm"));
    assert!(path.is_file(), "{} is built with the host", path.display());
    path
}

/// The text report with the build-dependent parts masked.
fn masked(text: &str, file: &Path) -> String {
    let mut out = text.replace(&file.display().to_string(), "FIXTURE.wasm");
    if let Ok(canonical) = file.canonicalize() {
        out = out.replace(&canonical.display().to_string(), "FIXTURE.wasm");
    }
    let mut masked_lines = Vec::new();
    for line in out.lines() {
        let line = if line.trim_start().starts_with("size ") {
            "  size       <bytes>, sha256 <sha256>".to_owned()
        } else if line.trim_start().starts_with("compile ") {
            "  compile    <times>".to_owned()
        } else {
            mask_versions(line)
        };
        masked_lines.push(line);
    }
    out = masked_lines.join("\n");
    out.push('\n');
    out
}

/// WASI versions move with the toolchain that built the fixture; the
/// contract's do not and stay visible.
fn mask_versions(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("@0.2.") {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        let digits = tail[5..].chars().take_while(char::is_ascii_digit).count();
        out.push_str("@0.2.x");
        rest = &tail[5 + digits..];
    }
    out.push_str(rest);
    out
}

fn snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/snapshots/plugin_check")
        .join(format!("{name}.txt"));
    if std::env::var_os("STEPHOST_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).expect("write the snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "no snapshot {} ({e}); STEPHOST_UPDATE_SNAPSHOTS=1 writes it. The report:\n{actual}",
            path.display()
        )
    });
    assert_eq!(
        expected,
        actual,
        "the report of {name} differs from {}",
        path.display()
    );
}

fn check_snapshot(fixture_name: &str, snapshot_name: &str) {
    let cache = tempfile::tempdir().expect("tempdir");
    let file = fixture(fixture_name);
    let out = stephost(
        &["plugin", "check", &file.display().to_string()],
        cache.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a broken component exits 1\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    snapshot(snapshot_name, &masked(&stdout, &file));
}

#[test]
fn a_schema_that_is_no_json_schema_is_named_at_every_place() {
    check_snapshot("bad_schema", "bad_schema");
}

#[test]
fn tool_names_that_clash_are_named_with_a_free_rename() {
    check_snapshot("clash", "clash");
}

#[test]
fn an_import_without_its_grant_is_named_with_the_grant() {
    check_snapshot("nettest", "missing_grant");
}

#[test]
fn a_newer_contract_is_named_with_the_versions_served() {
    check_snapshot("future_contract", "future_contract");
}

#[test]
fn an_edited_copy_of_a_released_contract_is_named_as_such() {
    check_snapshot("changed_contract", "changed_contract");
}

#[test]
fn a_panicking_describe_keeps_its_message() {
    check_snapshot("panics", "panicking_describe");
}

#[test]
fn a_file_taking_a_built_in_name_is_refused() {
    check_snapshot("testkit", "builtin_name");
}

#[test]
fn a_grant_in_the_config_is_what_check_judges_by() {
    let cache = tempfile::tempdir().expect("tempdir");
    let config = cache.path().join("stephost.toml");
    std::fs::write(
        &config,
        "[plugins.grants.nettest]\nhttp = [\"127.0.0.1:*\"]\n",
    )
    .expect("config");
    let file = fixture("nettest");
    let out = stephost(
        &[
            "plugin",
            "check",
            "--json",
            "--config",
            &config.display().to_string(),
            &file.display().to_string(),
        ],
        cache.path(),
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_eq!(report["ok"], true);
    let http: Vec<&Value> = report["imports"]
        .as_array()
        .expect("imports")
        .iter()
        .filter(|i| i["grant"] == "http")
        .collect();
    assert!(!http.is_empty(), "{report:#}");
    assert!(http.iter().all(|i| i["granted"] == true), "{report:#}");
    assert_eq!(report["tools"][0]["tool"], "nettest_get");
    assert_eq!(report["contract"], "0.5.0");
}

#[test]
fn the_json_report_places_each_schema_problem() {
    let cache = tempfile::tempdir().expect("tempdir");
    let file = fixture("bad_schema");
    let out = stephost(
        &["plugin", "check", "--json", &file.display().to_string()],
        cache.path(),
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(report["ok"], false);
    let places: Vec<(String, String, String)> = report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter(|p| p["severity"] == "error")
        .map(|p| {
            (
                p["verb"].as_str().unwrap_or_default().to_owned(),
                p["schema"].as_str().unwrap_or_default().to_owned(),
                p["pointer"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(
        places.contains(&(
            "find".into(),
            "input".into(),
            "/properties/text/type".into()
        )),
        "{report:#}"
    );
    assert!(
        places.contains(&(
            "find".into(),
            "input".into(),
            "/properties/limit/minimum".into()
        )),
        "{report:#}"
    );
    assert!(report["size_bytes"].as_u64().is_some_and(|n| n > 1000));
    assert!(report["first_compile_ms"].as_f64().is_some());
}

#[test]
fn a_missing_file_exits_2_and_a_bad_config_3() {
    let cache = tempfile::tempdir().expect("tempdir");
    let out = stephost(&["plugin", "check", "/no/such/file.wasm"], cache.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/file.wasm"));
    let config = cache.path().join("bad.toml");
    std::fs::write(&config, "[plugins]\nno_such_key = 1\n").expect("config");
    let file = fixture("legacy");
    let out = stephost(
        &[
            "plugin",
            "check",
            "--config",
            &config.display().to_string(),
            &file.display().to_string(),
        ],
        cache.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_old_contract_component_passes_and_its_cases_run() {
    let cache = tempfile::tempdir().expect("tempdir");
    let file = fixture("legacy");
    let out = stephost(
        &["plugin", "check", &file.display().to_string()],
        cache.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("contract   0.1.0"), "{stdout}");
    assert!(stdout.contains("legacy_echo"), "{stdout}");
    let cases = cache.path().join("cases.json");
    std::fs::write(
        &cases,
        r#"{"cases": [
            {"name": "echoes", "verb": "echo", "input": {"text": "hi"}, "expect": {"value": "hi"}},
            {"name": "counts", "verb": "count", "expect": {"value": 1}},
            {"name": "counts on", "verb": "count", "expect": {"value": 2}},
            {"name": "fails typed", "verb": "fail", "input": {"code": "not-found", "message": "gone"},
             "expect": {"error": {"code": "not-found", "message_contains": "gone"}}},
            {"name": "refused before it runs", "verb": "echo", "input": {"txt": "hi"},
             "expect": {"invalid": {"message_contains": "txt"}}},
            {"name": "a wrong expectation fails", "verb": "echo", "input": {"text": "hi"}, "expect": {"value": "ho"}}
        ]}"#,
    )
    .expect("cases");
    let out = stephost(
        &[
            "plugin",
            "test",
            "--json",
            &file.display().to_string(),
            &cases.display().to_string(),
        ],
        cache.path(),
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(out.status.code(), Some(1), "{result:#}");
    assert_eq!(
        (result["passed"].clone(), result["failed"].clone()),
        (5.into(), 1.into()),
        "{result:#}"
    );
    let last = &result["cases"][5];
    assert_eq!(last["passed"], false);
    assert!(
        last["mismatches"][0]
            .as_str()
            .is_some_and(|m| m.contains(r#"expected value "ho"; got "hi""#)),
        "{result:#}"
    );
}

#[test]
fn a_case_file_is_checked_before_any_case_runs() {
    let cache = tempfile::tempdir().expect("tempdir");
    let cases = cache.path().join("cases.json");
    std::fs::write(
        &cases,
        r#"{"cases": [{"name": "two kinds", "verb": "echo", "input": {}, "expect": {"value": 1, "error": {}}}]}"#,
    )
    .expect("cases");
    let file = fixture("legacy");
    let out = stephost(
        &[
            "plugin",
            "test",
            &file.display().to_string(),
            &cases.display().to_string(),
        ],
        cache.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cases[0] (`two kinds`)"), "{stderr}");
}

#[test]
fn new_refuses_a_bad_name_and_a_full_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = stephost(&["plugin", "new", "Hello"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("[a-z][a-z0-9-]*"));
    let full = dir.path().join("full");
    std::fs::create_dir(&full).expect("mkdir");
    std::fs::write(full.join("keep"), "").expect("file");
    let out = stephost(
        &[
            "plugin",
            "new",
            "hello",
            "--dir",
            &full.display().to_string(),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not empty"));
    for lang in ["rust", "js", "python"] {
        let target = dir.path().join(lang);
        let out = stephost(
            &[
                "plugin",
                "new",
                "hello-world",
                "--lang",
                lang,
                "--dir",
                &target.display().to_string(),
            ],
            dir.path(),
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(target.join("README.md").is_file());
        assert!(target.join("wit/worlds.wit").is_file());
        assert!(target.join("cases.json").is_file());
    }
    assert!(dir.path().join("rust/sdk/src/lib.rs").is_file());
}

#[test]
fn serve_refuses_a_tool_name_clash_with_exit_3_on_both_transports() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let file = fixture("clash");
    let file = file.display().to_string();
    for transport in [&["serve"][..], &["serve", "--http", "127.0.0.1:0"][..]] {
        let mut args = vec!["--plugins", file.as_str()];
        args.extend_from_slice(transport);
        let out = stephost(&args, scratch.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{transport:?}: {stderr}");
        assert!(
            stderr.contains("MCP tool name `batch` is claimed by both"),
            "{transport:?}: {stderr}"
        );
    }
}
