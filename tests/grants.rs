//! Capability grants: a plugin that imports outbound HTTP loads only when granted,
//! and reaches only the destinations its grant lists. Refusals happen in the host
//! before any connection is made. Grants follow what the operator installed (the
//! built-in bytes, a file, a digest), never only the name a component reports.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use stephost::batch::{BatchStatus, StepStatus};
use stephost::config::Config;
use stephost::runtime::Grant;
use stephost::{BatchOptions, Host};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn config(dir: &tempfile::TempDir, http: &[&str]) -> Config {
    config_in(dir.path(), http)
}

fn config_in(dir: &Path, http: &[&str]) -> Config {
    let mut config = Config::default();
    config.engine.max_instances = 32;
    config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
    config.plugins.dirs.push(dir.to_owned());
    if !http.is_empty() {
        config.plugins.grants.insert(
            "nettest".into(),
            Grant {
                http: http.iter().map(|s| s.to_string()).collect(),
                ..Grant::default()
            },
        );
    }
    config
}

/// A one-response HTTP server counting the connections it accepts.
async fn server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    (port, hits)
}

async fn get(host: &Host, url: String) -> stephost::batch::Report {
    host.run_batch(
        &json!({"steps": [{"plugin": "nettest", "verb": "get", "input": {"url": url}}]}),
        BatchOptions::default(),
    )
    .await
}

#[tokio::test]
async fn a_plugin_importing_ungranted_http_does_not_load() {
    let dir = common::nettest_dir();
    let err = match Host::start(config(&dir, &[])).await {
        Ok(_) => panic!("nettest must not load without the http grant"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("plugin `nettest`"), "{err}");
    assert!(err.contains("imports `wasi:http/"), "{err}");
    assert!(err.contains("`http` grant"), "{err}");
}

#[tokio::test]
async fn granted_destinations_are_reached_and_others_refused_before_connecting() {
    let (allowed, allowed_hits) = server("hello").await;
    let (other, other_hits) = server("secret").await;
    let dir = common::nettest_dir();
    let allow = format!("127.0.0.1:{allowed}");
    let host = Host::start(config(&dir, &[&allow]))
        .await
        .expect("host starts");

    let ok = get(&host, format!("http://127.0.0.1:{allowed}/")).await;
    assert_eq!(ok.status, BatchStatus::Passed, "{ok:#?}");
    assert_eq!(
        ok.steps[0].value,
        Some(json!({"status": 200, "body": "hello"}))
    );
    assert_eq!(allowed_hits.load(Ordering::SeqCst), 1);

    for url in [
        format!("http://127.0.0.1:{other}/"),
        format!("http://localhost:{other}/"),
        format!("http://localhost:{allowed}/"),
    ] {
        let refused = get(&host, url.clone()).await;
        assert_eq!(refused.steps[0].status, StepStatus::Failed, "{url}");
        let error = refused.steps[0].error.as_ref().expect("error");
        assert_eq!(error.code, "denied", "{url}: {error:?}");
        assert!(
            refused.steps[0]
                .notes
                .iter()
                .any(|n| n.contains("refused outbound HTTP") && n.contains(&allow)),
            "the report names the refusal and the grant: {:?}",
            refused.steps[0].notes
        );
    }
    assert_eq!(
        other_hits.load(Ordering::SeqCst),
        0,
        "no connection was made to a refused address"
    );
    assert_eq!(
        allowed_hits.load(Ordering::SeqCst),
        1,
        "`localhost` is not `127.0.0.1` unless granted"
    );
}

#[tokio::test]
async fn loopback_grants_cover_every_loopback_name() {
    let (port, hits) = server("lo").await;
    let dir = common::nettest_dir();
    let host = Host::start(config(&dir, &["loopback:*"]))
        .await
        .expect("host starts");
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://localhost:{port}/"),
    ] {
        let report = get(&host, url.clone()).await;
        assert_eq!(report.status, BatchStatus::Passed, "{url}: {report:#?}");
    }
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_desktop_plugin_loads_only_with_the_desktop_grant() {
    let mut config = Config::default();
    config.engine.max_instances = 32;
    config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
    assert!(
        config.plugins.grants["desktop"].desktop,
        "the built-in desktop plugin is granted by default"
    );
    let host = Host::start(config.clone()).await.expect("starts");
    assert!(host.registry().get("desktop").is_some());
    drop(host);

    config
        .plugins
        .grants
        .insert("desktop".into(), Grant::default());
    let err = match Host::start(config).await {
        Ok(_) => panic!("the desktop plugin must not load without the desktop grant"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("plugin `desktop`"), "{err}");
    assert!(err.contains("imports `stephost:plugin/"), "{err}");
    assert!(err.contains("`desktop` grant"), "{err}");
}

#[tokio::test]
async fn a_loopback_grant_cannot_reach_the_hosts_own_mcp_server() {
    let (port, hits) = server("lo").await;
    let dir = common::nettest_dir();
    let host = Host::start(config(&dir, &["loopback:*"]))
        .await
        .expect("host starts");
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port");
    let shutdown = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn(stephost::mcp::serve_http(
        host.clone(),
        free,
        shutdown.clone(),
    ));
    // Wait until it listens.
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(free).await.is_ok() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for url in [
        format!("http://127.0.0.1:{}/healthz", free.port()),
        format!("http://localhost:{}/mcp", free.port()),
        format!("http://[::1]:{}/metrics", free.port()),
    ] {
        let refused = get(&host, url.clone()).await;
        let error = refused.steps[0].error.as_ref().expect("refused");
        assert_eq!(error.code, "denied", "{url}: {error:?}");
        assert!(
            refused.steps[0]
                .notes
                .iter()
                .any(|n| n.contains("an address of the host itself")),
            "{url}: {:?}",
            refused.steps[0].notes
        );
    }
    let ok = get(&host, format!("http://127.0.0.1:{port}/")).await;
    assert_eq!(
        ok.status,
        BatchStatus::Passed,
        "other loopback ports stay open: {ok:#?}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    shutdown.cancel();
    let _ = serving.await;
}

/// The error `Host::start` fails with.
async fn refused(config: Config) -> String {
    match Host::start(config).await {
        Ok(host) => panic!(
            "the host must refuse to start; it loaded {:?}",
            host.registry().names().collect::<Vec<_>>()
        ),
        Err(e) => format!("{e:#}"),
    }
}

fn digest(path: &Path) -> String {
    stephost::runtime::sha256_hex(&std::fs::read(path).expect("component readable"))
}

fn canonical(path: &Path) -> String {
    path.canonicalize()
        .expect("path exists")
        .display()
        .to_string()
}

#[tokio::test]
async fn a_file_claiming_an_enabled_builtin_name_is_refused() {
    // The built-in rf's own bytes, installed as a file: its describe() says `rf`.
    let dir = common::plugins_dir(&["rf"]);
    let file = dir.path().join("rf.wasm");
    let err = refused(config(&dir, &[])).await;
    for part in [
        format!(
            "two plugins are named `rf`: the built-in one and {}, whose describe() claims the built-in's name",
            file.display()
        ),
        "Give that plugin a name of its own in its describe()".to_owned(),
        r#"`[plugins] disable = ["rf"]`"#.to_owned(),
        format!(
            r#"`[plugins.grants.rf]` with `file = "{}"`"#,
            canonical(&file)
        ),
        "never the built-in's default".to_owned(),
    ] {
        assert!(err.contains(&part), "missing {part:?} in: {err}");
    }
}

#[tokio::test]
async fn a_file_claiming_a_disabled_builtin_gets_only_a_grant_naming_it() {
    let dir = common::plugins_dir(&["rf"]);
    let file = dir.path().join("rf.wasm");
    let mut config = config(&dir, &[]);
    config.plugins.disable.push("rf".into());
    assert_eq!(
        config.plugins.grants["rf"].http,
        ["loopback:*"],
        "the built-in's default grant is still configured"
    );
    // rf imports wasi:http, so without the default grant it cannot load.
    let err = refused(config.clone()).await;
    for part in [
        format!("plugin `rf` ({})", file.display()),
        "needs the `http` grant".to_owned(),
        format!(
            r#"`rf` is the name of a built-in plugin, so this file gets only a grant that names it (add `file = "{}"` there)"#,
            canonical(&file)
        ),
    ] {
        assert!(err.contains(&part), "missing {part:?} in: {err}");
    }

    // `builtin = false` leaves every built-in out, and still no default applies.
    let mut none_built_in = config.clone();
    none_built_in.plugins.disable.clear();
    none_built_in.plugins.builtin = false;
    let err = refused(none_built_in).await;
    assert!(err.contains("needs the `http` grant"), "{err}");

    // A grant naming the file (relative to its folder) is all it gets.
    config.plugins.grants.insert(
        "rf".into(),
        Grant {
            http: vec!["127.0.0.1:9".into()],
            file: Some("rf.wasm".into()),
            ..Grant::default()
        },
    );
    let host = Host::start(config).await.expect("host starts");
    let rf = host.registry().get("rf").expect("the replacement rf loads");
    assert_eq!(rf.info().source, file.display().to_string());
    assert_eq!(rf.grant().http, ["127.0.0.1:9"], "no loopback:*");
}

#[tokio::test]
async fn a_file_claiming_a_disabled_builtin_name_gets_nothing_by_name() {
    // testkit imports nothing granted, so a copy loads in place of the
    // disabled built-in; an entry under its name without `file` is not its.
    let dir = common::plugins_dir(&["testkit"]);
    let mut config = config(&dir, &[]);
    config.plugins.disable.push("testkit".into());
    config.plugins.grants.insert(
        "testkit".into(),
        Grant {
            http: vec!["loopback:*".into()],
            ..Grant::default()
        },
    );
    let host = Host::start(config).await.expect("host starts");
    let testkit = host.registry().get("testkit").expect("the copy loads");
    assert!(
        testkit.info().source.ends_with("testkit.wasm"),
        "{}",
        testkit.info().source
    );
    assert_eq!(testkit.grant(), &Grant::default());
}

#[tokio::test]
async fn a_grant_with_a_file_applies_only_to_that_file() {
    let (port, hits) = server("tied").await;
    let granted = common::plugins_dir(&["nettest"]);
    let granted_file = granted.path().join("nettest.wasm");
    let grant = Grant {
        http: vec![format!("127.0.0.1:{port}")],
        file: Some(granted_file.clone()),
        ..Grant::default()
    };

    // The same bytes in another folder are not the granted file.
    let other = common::plugins_dir(&["nettest"]);
    let mut config = config(&other, &[]);
    config
        .plugins
        .grants
        .insert("nettest".into(), grant.clone());
    let err = refused(config).await;
    assert!(err.contains("plugin `nettest`"), "{err}");
    assert!(err.contains("`http` grant"), "{err}");
    assert!(
        err.contains(&format!(
            "[plugins.grants.nettest] is for the file {}, and this one is {}",
            granted_file.display(),
            canonical(&other.path().join("nettest.wasm"))
        )),
        "{err}"
    );

    // The granted file itself, reached through a symlink in another folder and
    // named with `..`, is: paths are compared canonical.
    let links = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(&granted_file, links.path().join("nettest.wasm")).expect("symlink");
    let dotted = granted
        .path()
        .join("..")
        .join(granted.path().file_name().expect("tempdir has a name"))
        .join("nettest.wasm");
    let mut config = config_in(links.path(), &[]);
    config.plugins.grants.insert(
        "nettest".into(),
        Grant {
            file: Some(dotted),
            ..grant
        },
    );
    let host = Host::start(config).await.expect("host starts");
    let ok = get(&host, format!("http://127.0.0.1:{port}/")).await;
    assert_eq!(ok.status, BatchStatus::Passed, "{ok:#?}");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_grant_with_a_wrong_sha256_refuses_the_component() {
    let dir = common::plugins_dir(&["nettest"]);
    let actual = digest(&dir.path().join("nettest.wasm"));
    let wrong = "0".repeat(64);
    let mut config = config(&dir, &["loopback:*"]);
    let grant = config.plugins.grants.get_mut("nettest").expect("granted");
    grant.sha256 = Some(wrong.clone());
    let err = refused(config.clone()).await;
    assert!(
        err.contains(&format!(
            "plugin `nettest` ({}) has sha256 {actual}, but [plugins.grants.nettest] is tied to sha256 {wrong}",
            dir.path().join("nettest.wasm").display()
        )),
        "{err}"
    );

    // The right digest, in any case, loads.
    let grant = config.plugins.grants.get_mut("nettest").expect("granted");
    grant.sha256 = Some(actual.to_uppercase());
    let host = Host::start(config).await.expect("host starts");
    assert!(host.registry().get("nettest").is_some());
}

#[tokio::test]
async fn require_pins_refuses_unpinned_third_party_components() {
    let dir = common::plugins_dir(&["nettest"]);
    let actual = digest(&dir.path().join("nettest.wasm"));
    let mut config = config(&dir, &["loopback:*"]);
    config.plugins.require_pins = true;
    let err = refused(config.clone()).await;
    for part in [
        format!(
            "plugin `nettest` ({}) is not pinned",
            dir.path().join("nettest.wasm").display()
        ),
        "[plugins] require_pins".to_owned(),
        format!(r#"add `nettest = "{actual}"` under [plugins.pins]"#),
        format!(r#"`sha256 = "{actual}"` to its [plugins.grants.nettest]"#),
    ] {
        assert!(err.contains(&part), "missing {part:?} in: {err}");
    }

    // A pin admits it; the built-ins need none.
    let mut pinned = config.clone();
    pinned.plugins.pins.insert("nettest".into(), actual.clone());
    let host = Host::start(pinned).await.expect("host starts");
    for name in ["nettest", "testkit", "rf", "browser", "desktop"] {
        assert!(host.registry().get(name).is_some(), "{name} loads");
    }
    drop(host);

    // So does a grant's sha256.
    let mut tied = config.clone();
    let grant = tied.plugins.grants.get_mut("nettest").expect("granted");
    grant.sha256 = Some(actual);
    let host = Host::start(tied).await.expect("host starts");
    assert!(host.registry().get("nettest").is_some());
    drop(host);

    // A pin that differs is still refused as changed.
    let mut wrong = config;
    wrong.plugins.pins.insert("nettest".into(), "0".repeat(64));
    let err = refused(wrong).await;
    assert!(err.contains("[plugins.pins] pins it to"), "{err}");
}

#[tokio::test]
async fn builtins_keep_their_default_grants() {
    let host = common::host().await;
    let registry = host.registry();
    let grant = |name: &str| {
        registry
            .get(name)
            .unwrap_or_else(|| panic!("{name} is built in"))
            .grant()
            .clone()
    };
    assert_eq!(grant("rf").http, ["loopback:*"]);
    assert!(grant("desktop").desktop);
    assert!(grant("browser").webdriver);
    assert_eq!(grant("testkit"), Grant::default());
    drop(host);

    // A grant that names a file is for a replacement, never for the built-in.
    let mut config = Config::default();
    config.engine.max_instances = 32;
    config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
    config.plugins.grants.insert(
        "rf".into(),
        Grant {
            http: vec!["loopback:*".into()],
            file: Some("/nowhere/rf.wasm".into()),
            ..Grant::default()
        },
    );
    let err = refused(config).await;
    assert!(err.contains("plugin `rf` (builtin:rf)"), "{err}");
    assert!(
        err.contains("[plugins.grants.rf] names a file, so it does not apply to the built-in"),
        "{err}"
    );
}

#[tokio::test]
async fn a_tenant_grant_naming_another_digest_leaves_the_plugin_unavailable() {
    let dir = common::plugins_dir(&["nettest"]);
    let actual = digest(&dir.path().join("nettest.wasm"));
    let host = Host::start(config(&dir, &["loopback:*"]))
        .await
        .expect("host starts");
    let mut grants = BTreeMap::new();
    grants.insert(
        "nettest".to_owned(),
        Grant {
            http: vec!["loopback:*".into()],
            sha256: Some("0".repeat(64)),
            ..Grant::default()
        },
    );
    let view = host.registry().for_tenant("t1", &["*".into()], &grants);
    assert!(view.get("nettest").is_none());
    let reason = view.unavailable("nettest").expect("a reason");
    assert!(reason.contains("[tenants.grants.nettest]"), "{reason}");
    assert!(
        view.get("testkit").is_some(),
        "other plugins are unaffected"
    );

    grants.get_mut("nettest").expect("listed").sha256 = Some(actual);
    let view = host.registry().for_tenant("t1", &["*".into()], &grants);
    assert!(view.get("nettest").is_some());
}

#[test]
fn grant_file_sha256_and_require_pins_parse() {
    let config = Config::parse(
        r#"
[plugins]
require_pins = true

[plugins.grants.hello]
http = ["api.example.com:443"]
file = "hello.wasm"
sha256 = "ab"
"#,
    )
    .expect("parses");
    assert!(config.plugins.require_pins);
    let hello = &config.plugins.grants["hello"];
    assert_eq!(hello.file.as_deref(), Some(Path::new("hello.wasm")));
    assert_eq!(hello.sha256.as_deref(), Some("ab"));
    assert_eq!(config.plugins.grants["rf"].file, None, "defaults kept");
    let err = Config::parse(
        "[plugins.grants.hello]
path = \"x.wasm\"\n",
    )
    .expect_err("unknown key");
    assert!(err.to_string().contains("path"), "{err}");
}

/// An rf step running one keyword.
fn rf(keyword: &str, args: &[&str]) -> serde_json::Value {
    json!({"plugin": "rf", "verb": "run_keyword", "input": {"keyword": keyword, "args": args}})
}

#[tokio::test]
async fn an_instance_sees_only_its_granted_folders() {
    use stephost::runtime::FolderGrant;
    let granted = tempfile::tempdir().expect("tempdir");
    let other = tempfile::tempdir().expect("tempdir");
    let granted_path = canonical(granted.path());
    let other_path = canonical(other.path());
    std::fs::write(other.path().join("secret.txt"), "secret").expect("write");
    std::fs::write(granted.path().join("mine.txt"), "mine").expect("write");
    // Links that point out of the granted folder: WASI (cap-std) must refuse them.
    std::os::unix::fs::symlink(
        other.path().join("secret.txt"),
        granted.path().join("link.txt"),
    )
    .expect("symlink");
    std::os::unix::fs::symlink(other.path(), granted.path().join("up")).expect("symlink");
    let host = common::host_with(|c| {
        c.plugins.grants.insert(
            "rf".into(),
            Grant {
                // rf imports wasi:http (remote libraries), so it keeps its loopback grant.
                http: vec!["loopback:*".into()],
                folders: vec![FolderGrant {
                    path: granted.path().to_owned(),
                    read_only: false,
                }],
                ..Grant::default()
            },
        );
    })
    .await;
    let g = |rel: &str| format!("{granted_path}/{rel}");
    let o = |rel: &str| format!("{other_path}/{rel}");
    let report = host
        .run_batch(
            &json!({"on_failure": "continue", "steps": [
                rf("Import Library", &["OperatingSystem"]),
                rf("Get File", &[&g("mine.txt")]),
                rf("List Directory", &[&granted_path]),
                rf("Get File", &[&o("secret.txt")]),
                rf("Get File", &[&g("link.txt")]),
                rf("Create File", &[&g("up/planted.txt"), "x"]),
                rf("List Directory", &[&g("up")]),
                rf("List Directory", &["/"]),
            ]}),
            BatchOptions::default(),
        )
        .await;
    let steps = &report.steps;
    let message = |i: usize| {
        steps[i]
            .error
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_default()
    };
    assert_eq!(steps[0].status, StepStatus::Passed, "{}", message(0));
    assert_eq!(steps[1].value, Some(json!("mine")));
    assert_eq!(steps[2].value, Some(json!(["link.txt", "mine.txt", "up"])));
    for (i, step) in steps.iter().enumerate().skip(3) {
        assert_eq!(step.status, StepStatus::Failed, "step {i}");
        let m = message(i);
        assert!(!m.contains("secret\""), "{m}");
    }
    assert!(message(3).contains("is outside the folders granted to the rf plugin"));
    assert!(message(3).contains("[plugins.grants.rf]"));
    assert!(message(7).contains("Path '/' is outside the folders granted"));
    // Through the links: refused by the host, whatever the guest thought.
    for i in 4..7 {
        assert!(
            message(i).contains("leads outside the folders granted")
                || message(i).contains("does not exist"),
            "step {i}: {}",
            message(i)
        );
    }
    assert!(!other.path().join("planted.txt").exists());
    assert_eq!(
        std::fs::read_to_string(other.path().join("secret.txt")).expect("read"),
        "secret"
    );
}

#[tokio::test]
async fn a_tenants_disk_quota_stops_writes_before_they_happen() {
    use stephost::runtime::FolderGrant;
    const KIB: usize = 1024;
    let granted = tempfile::tempdir().expect("tempdir");
    let root = canonical(granted.path());
    // Already there when the host starts: the first instance counts it.
    std::fs::write(granted.path().join("old.txt"), vec![b'o'; KIB]).expect("write");
    let host = common::host_with(|c| {
        c.limits.disk_bytes = 64 * KIB as u64;
        c.limits.disk_files = 4;
        c.plugins.grants.insert(
            "rf".into(),
            Grant {
                http: vec!["loopback:*".into()],
                folders: vec![FolderGrant {
                    path: granted.path().to_owned(),
                    read_only: false,
                }],
                ..Grant::default()
            },
        );
    })
    .await;
    let p = |rel: &str| format!("{root}/{rel}");
    let forty = "a".repeat(40 * KIB);
    let sixty = "b".repeat(60 * KIB);
    let report = host
        .run_batch(
            &json!({"on_failure": "continue", "steps": [
                rf("Import Library", &["OperatingSystem"]),
                // 1 KiB + 40 KiB, 2 entries.
                rf("Create File", &[&p("a.txt"), &forty]),
                // Would be 81 KiB: refused at 64 KiB, never past it (the guest
                // writes in pieces, so what fits may be appended).
                rf("Append To File", &[&p("a.txt"), &forty]),
                rf("Copy File", &[&p("a.txt"), &p("c.txt")]),
                // Truncating gives the 40 KiB back.
                rf("Create File", &[&p("a.txt"), ""]),
                rf("Create File", &[&p("b.txt"), &sixty]),
                // The fourth entry.
                rf("Create Directory", &[&p("d")]),
                rf("Create File", &[&p("d/x.txt"), "x"]),
                // Removing gives an entry and 60 KiB back.
                rf("Remove File", &[&p("b.txt")]),
                rf("Create File", &[&p("d/x.txt"), "x"]),
            ]}),
            BatchOptions::default(),
        )
        .await;
    let steps = &report.steps;
    let message = |i: usize| {
        steps[i]
            .error
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_default()
    };
    let passed = [0, 1, 4, 5, 6, 8, 9];
    for i in passed {
        assert_eq!(
            steps[i].status,
            StepStatus::Passed,
            "step {i}: {}",
            message(i)
        );
    }
    for i in [2, 3] {
        assert_eq!(steps[i].status, StepStatus::Failed, "step {i}");
        let m = message(i);
        assert!(
            m.starts_with("OSError: [Errno 122] Disk quota exceeded: '"),
            "step {i}: {m}"
        );
        assert!(
            m.contains("64 KiB in granted folders (limits.disk_bytes) reached"),
            "step {i}: {m}"
        );
        assert!(!m.contains("Input/output"), "step {i}: {m}");
    }
    assert_eq!(steps[7].status, StepStatus::Failed);
    assert!(
        message(7).contains("4 files in granted folders (limits.disk_files) reached"),
        "{}",
        message(7)
    );
    // On disk: nothing of the refused writes, no copy, no leftover temporary file.
    let mut names: Vec<String> = std::fs::read_dir(granted.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "d", "old.txt"]);
    assert_eq!(
        std::fs::metadata(granted.path().join("a.txt"))
            .expect("a.txt")
            .len(),
        0
    );
    assert!(granted.path().join("d/x.txt").is_file());
}
