//! Capability grants: a plugin that imports outbound HTTP loads only when granted,
//! and reaches only the destinations its grant lists. Refusals happen in the host
//! before any connection is made.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use stephost::batch::{BatchStatus, StepStatus};
use stephost::capabilities::Grant;
use stephost::config::Config;
use stephost::{BatchOptions, Host};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn config(dir: &tempfile::TempDir, http: &[&str]) -> Config {
    let mut config = Config::default();
    config.engine.max_instances = 32;
    config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
    config.plugins.dirs.push(dir.path().to_owned());
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
