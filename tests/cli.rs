//! The `stephost` binary: exit codes, report on stdout, progress on stderr,
//! plugin listing, extra plugin folders, the compile cache.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn stephost(args: &[&str], stdin: Option<&str>, cache: &Path) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_stephost"))
        .args(args)
        .env("STEPHOST_CACHE_DIR", cache)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("stephost starts");
    if let Some(text) = stdin
        && let Some(mut pipe) = child.stdin.take()
    {
        pipe.write_all(text.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("stephost exits")
}

fn report(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not a JSON report ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
fn quickstart_passes_with_exit_0() {
    let cache = tempfile::tempdir().expect("tempdir");
    let out = stephost(&["run", "examples/quickstart.json"], None, cache.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = report(&out);
    assert_eq!(report["status"], "passed", "{report}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[1/"), "progress lines on stderr: {stderr}");
    // The main job is RF and a browser flow, not only test verbs: the page
    // the browser read greets the name the RF step made.
    let steps = report["steps"].as_array().expect("steps");
    let plugins: Vec<&str> = steps.iter().filter_map(|s| s["plugin"].as_str()).collect();
    assert!(
        plugins.contains(&"rf") && plugins.contains(&"browser"),
        "{plugins:?}"
    );
    let page = steps
        .iter()
        .find(|s| s["verb"] == "get_page_text")
        .expect("a get_page_text step");
    assert!(
        page["value"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Welcome, Ada Lovelace!")),
        "{page}"
    );
}

#[test]
fn chaining_example_passes_with_exit_0() {
    let cache = tempfile::tempdir().expect("tempdir");
    let out = stephost(&["run", "examples/chaining.json"], None, cache.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(report(&out)["status"], "passed");
}

#[test]
fn exit_codes_follow_the_outcome() {
    let cache = tempfile::tempdir().expect("tempdir");
    let failed = r#"{"steps":[{"plugin":"testkit","verb":"fail","input":{}}]}"#;
    let out = stephost(&["run", "-"], Some(failed), cache.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(report(&out)["status"], "failed");

    let timed_out = r#"{"steps":[{"plugin":"testkit","verb":"spin","input":{},"timeout_ms":100}]}"#;
    let out = stephost(&["run", "-"], Some(timed_out), cache.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(report(&out)["status"], "timed_out");

    let invalid = r#"{"steps":[{"plugin":"testkit","verb":"nope"}]}"#;
    let out = stephost(&["run", "-"], Some(invalid), cache.path());
    assert_eq!(out.status.code(), Some(2));
    let report = report(&out);
    assert_eq!(report["status"], "invalid");
    assert_eq!(report["errors"][0]["field"], "steps[0].verb");

    let out = stephost(&["run", "-"], Some("{not json"), cache.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid JSON"));
}

#[test]
fn plugins_lists_verbs_with_schemas() {
    let cache = tempfile::tempdir().expect("tempdir");
    let out = stephost(&["plugins", "--json"], None, cache.path());
    assert_eq!(out.status.code(), Some(0));
    let list: Value = serde_json::from_slice(&out.stdout).expect("json");
    let testkit = list
        .as_array()
        .and_then(|l| l.iter().find(|p| p["name"] == "testkit"))
        .expect("testkit listed");
    let verbs: Vec<&str> = testkit["verbs"]
        .as_array()
        .expect("verbs")
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    for verb in [
        "echo", "sleep", "spin", "alloc", "fail", "flaky", "count", "panic",
    ] {
        assert!(verbs.contains(&verb), "{verb} missing from {verbs:?}");
    }
    let echo = &testkit["verbs"].as_array().expect("verbs")[0];
    assert_eq!(echo["input_schema"]["type"], "object");

    let out = stephost(&["plugins"], None, cache.path());
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("testkit") && table.contains("echo"),
        "{table}"
    );
}

#[test]
fn a_second_start_loads_from_the_compile_cache() {
    let cache = tempfile::tempdir().expect("tempdir");
    let out = stephost(&["plugins", "--json"], None, cache.path());
    assert_eq!(out.status.code(), Some(0));
    let artifacts: Vec<_> = walk(cache.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert!(!artifacts.is_empty(), "compiled components are cached");
    let before: Vec<_> = artifacts
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .expect("mtime")
        })
        .collect();
    let out = stephost(&["plugins", "--json"], None, cache.path());
    assert_eq!(out.status.code(), Some(0));
    let after: Vec<_> = artifacts
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .expect("mtime")
        })
        .collect();
    assert_eq!(
        before, after,
        "the second start reused the artifacts instead of recompiling"
    );
}

#[test]
fn a_plugin_folder_with_a_name_clash_is_refused_naming_both() {
    let cache = tempfile::tempdir().expect("tempdir");
    let dir = tempfile::tempdir().expect("tempdir");
    let wasm = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release/testkit.wasm");
    std::fs::copy(&wasm, dir.path().join("testkit-copy.wasm")).expect("copy component");
    let out = stephost(
        &["--plugins", dir.path().to_str().expect("utf8"), "plugins"],
        None,
        cache.path(),
    );
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("two plugins are named `testkit`") && stderr.contains("testkit-copy.wasm"),
        "{stderr}"
    );
}

#[test]
fn a_plugin_folder_loads_extra_components() {
    let cache = tempfile::tempdir().expect("tempdir");
    let dir = tempfile::tempdir().expect("tempdir");
    let wasm = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release/testkit.wasm");
    std::fs::copy(&wasm, dir.path().join("testkit.wasm")).expect("copy component");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[plugins]\nbuiltin = false\n").expect("config");
    let out = stephost(
        &[
            "--config",
            config.to_str().expect("utf8"),
            "--plugins",
            dir.path().to_str().expect("utf8"),
            "plugins",
            "--json",
        ],
        None,
        cache.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(
        list[0]["source"]
            .as_str()
            .is_some_and(|s| s.ends_with("testkit.wasm")),
        "{list}"
    );
    // One component file works as well as its folder.
    let file = dir.path().join("testkit.wasm");
    let out = stephost(
        &[
            "--config",
            config.to_str().expect("utf8"),
            "--plugins",
            file.to_str().expect("utf8"),
            "plugins",
            "--json",
        ],
        None,
        cache.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let list: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list[0]["name"], "testkit", "{list}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn the_example_tenants_file_is_valid_and_hash_token_matches_it() {
    let cache = tempfile::tempdir().expect("tempdir");
    let out = stephost(&["hash-token", "demo-token-acme"], None, cache.path());
    assert_eq!(out.status.code(), Some(0));
    let hash = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/tenants.toml"
    ))
    .expect("example");
    assert!(
        example.contains(&hash),
        "examples/tenants.toml lists the demo token's hash"
    );
    let file: stephost::tenancy::TenantsFile = toml::from_str(&example).expect("parses");
    file.validate().expect("valid");
    assert_eq!(file.tenants.len(), 2);
}

/// `serve` ends in order on SIGTERM (what `docker stop` and Kubernetes send), over
/// stdio and over HTTP, with exit code 0.
#[test]
fn serve_shuts_down_in_order_on_sigterm() {
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};
    let cache = tempfile::tempdir().expect("tempdir");
    for args in [&["serve"][..], &["serve", "--http", "127.0.0.1:0"][..]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_stephost"))
            .args(args)
            .env("STEPHOST_CACHE_DIR", cache.path())
            .env("STEPHOST_LOG", "info")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("stephost starts");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        // Ready once the host says so (and, over HTTP, where it listens).
        let ready = if args.len() > 1 {
            "127.0.0.1:"
        } else {
            "host ready"
        };
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            let line = line.expect("stderr line");
            let done = line.contains(ready);
            seen.push(line);
            if done {
                break;
            }
        }
        assert!(
            seen.iter().any(|l| l.contains(ready)),
            "{args:?} never got ready: {seen:#?}"
        );
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let started = Instant::now();
        let exit = loop {
            if let Some(exit) = child.try_wait().expect("wait") {
                break exit;
            }
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "{args:?} did not stop after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(exit.success(), "{args:?}: {exit:?}");
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        assert!(
            rest.iter().any(|l| l.contains("shutting down")),
            "{args:?}: {rest:#?}"
        );
    }
}

/// Over stdio `serve` answers `initialize` while the plugins still compile (an
/// empty compile cache: seconds), and the first request that needs them waits
/// and gets the full answer. A host that cannot start still exits with 3.
#[test]
fn serve_answers_initialize_before_the_plugins_compile() {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::mpsc;
    use std::time::Duration;
    let cache = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_stephost"))
        .arg("serve")
        .env("STEPHOST_CACHE_DIR", cache.path())
        .env("STEPHOST_LOG", "info")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("stephost starts");
    let (events, seen) = mpsc::channel();
    let err_events = events.clone();
    let stderr = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("host ready") && err_events.send("host ready".to_owned()).is_err() {
                return;
            }
        }
    });
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if events.send(line).is_err() {
                return;
            }
        }
    });
    let mut stdin = child.stdin.take().expect("stdin");
    let mut send = |line: &str| {
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    };
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cli-test","version":"0"}}}"#,
    );
    let first = seen
        .recv_timeout(Duration::from_secs(60))
        .expect("an answer");
    assert!(first.contains("\"serverInfo\""), "{first}");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#);
    let mut order = Vec::new();
    let tools = loop {
        let event = seen
            .recv_timeout(Duration::from_secs(300))
            .expect("tools/list answered");
        if event.contains("\"id\":2") {
            break event;
        }
        order.push(event);
    };
    // The handshake came first; the plugins were ready only later.
    assert_eq!(order, ["host ready"], "{order:?}");
    let tools: Value = serde_json::from_str(&tools).expect("JSON");
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"execute_batch") && names.contains(&"batch"),
        "{names:?}"
    );
    // The end of stdin ends the server.
    drop(stdin);
    child.wait().expect("exits");

    let dir = tempfile::tempdir().expect("tempdir");
    let wasm = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release/testkit.wasm");
    std::fs::copy(&wasm, dir.path().join("testkit-copy.wasm")).expect("copy component");
    let out = stephost(
        &["--plugins", dir.path().to_str().expect("utf8"), "serve"],
        None,
        cache.path(),
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("two plugins are named `testkit`"));
}

/// A component built against the frozen contract 0.1.0 (the `legacy` fixture,
/// raw bindings from wit/0.1.0, no SDK) loads beside the built-in plugins,
/// which speak the latest version, and runs in one batch with them: its results chain, its
/// instance keeps state, its string failure codes and its recovery proposal
/// in `details` work as they did.
#[test]
fn a_contract_0_1_component_runs_beside_the_latest_plugins() {
    let cache = tempfile::tempdir().expect("tempdir");
    let dir = tempfile::tempdir().expect("tempdir");
    let wasm = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release/legacy.wasm");
    std::fs::copy(&wasm, dir.path().join("legacy.wasm")).expect("copy the 0.1.0 fixture");
    let plugins_dir = dir.path().to_str().expect("utf8");
    let out = stephost(
        &["--plugins", plugins_dir, "plugins", "--json"],
        None,
        cache.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).expect("json");
    let contract = |name: &str| {
        list.as_array()
            .and_then(|l| l.iter().find(|p| p["name"] == name))
            .map(|p| p["contract"].clone())
    };
    assert_eq!(contract("legacy"), Some(Value::from("0.1.0")), "{list}");
    assert_eq!(contract("testkit"), Some(Value::from("0.5.0")), "{list}");

    let batch = r#"{"steps": [
        {"plugin": "testkit", "verb": "echo", "input": {"value": "from 0.2"}},
        {"plugin": "legacy", "verb": "echo", "input": {"text": "${STEP_1} via 0.1"}},
        {"plugin": "legacy", "verb": "count", "input": {}},
        {"plugin": "legacy", "verb": "count", "input": {}},
        {"plugin": "legacy", "verb": "fail", "input": {"code": "flaky", "message": "try again"},
         "retry": {"attempts": 2, "on": ["flaky"], "recover": true}}
    ], "on_failure": "continue"}"#;
    let out = stephost(
        &["--plugins", plugins_dir, "run", "-"],
        Some(batch),
        cache.path(),
    );
    let report = report(&out);
    let steps = report["steps"].as_array().expect("steps");
    assert_eq!(steps[1]["value"], "from 0.2 via 0.1", "{report}");
    assert_eq!(
        steps[3]["value"], 2,
        "one instance kept its count: {report}"
    );
    let failed = &steps[4];
    assert_eq!(failed["status"], "failed", "{report}");
    assert_eq!(failed["error"]["code"], "flaky", "{report}");
    assert_eq!(failed["attempts"], 2, "{report}");
    let round = &failed["recovery"][0];
    assert_eq!(round["classification"], "flaky", "{report}");
    assert_eq!(round["actions"][0]["verb"], "count", "{report}");
    assert_eq!(round["actions"][0]["status"], "passed", "{report}");
}

/// The defaults docs/architecture.md lists are the ones the code has: every
/// key in its TOML block equals `Config::default()`, and no `[limits]` or
/// `[engine]` key is left out.
#[test]
fn documented_defaults_are_the_defaults() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/architecture.md"
    ))
    .expect("docs/architecture.md");
    let block = doc
        .split("\n## Configuration")
        .nth(1)
        .and_then(|section| section.split("```toml").nth(1))
        .and_then(|block| block.split("```").next())
        .expect("a ```toml block under ## Configuration");
    let documented: toml::Table = toml::from_str(block).expect("the documented defaults are TOML");
    let defaults = toml::Table::try_from(stephost::config::Config::default()).expect("serializes");

    fn compare(path: &str, doc: &toml::Table, code: &toml::Table, wrong: &mut Vec<String>) {
        for (key, value) in doc {
            let place = format!("{path}{key}");
            match (value, code.get(key)) {
                (toml::Value::Table(d), Some(toml::Value::Table(c))) => {
                    compare(&format!("{place}."), d, c, wrong);
                }
                (value, Some(actual)) if value == actual => {}
                (value, actual) => wrong.push(format!(
                    "{place}: documented {value}, the code has {}",
                    actual.map_or("no such key".to_owned(), ToString::to_string)
                )),
            }
        }
    }
    let mut wrong = Vec::new();
    compare("", &documented, &defaults, &mut wrong);
    for section in ["limits", "engine"] {
        let code = defaults.get(section).and_then(toml::Value::as_table);
        let doc = documented.get(section).and_then(toml::Value::as_table);
        for key in code.into_iter().flat_map(|t| t.keys()) {
            if !doc.is_some_and(|d| d.contains_key(key)) {
                wrong.push(format!("[{section}] {key} is not documented"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md disagrees with the code:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn run_dry_run_prints_the_plan_and_runs_nothing() {
    let cache = tempfile::tempdir().expect("tempdir");
    let out = stephost(
        &["run", "--dry-run", "examples/quickstart.json"],
        None,
        cache.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = report(&out);
    assert_eq!(report["status"], "planned", "{report}");
    assert_eq!(report["steps_executed"], 0);
    let steps = report["plan"]["steps"].as_array().expect("plan steps");
    assert!(steps.len() > 3, "{report}");
    assert!(steps.iter().all(|s| s["status"] == "planned"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("[1/"), "no step started: {stderr}");
    assert!(stderr.contains("planned:"), "{stderr}");
}
