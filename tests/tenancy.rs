//! Tenants: isolation of sessions, per-tenant plugins and grants, and every
//! quota enforced with an error that names the limit and its value.

mod common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use stephost::batch::{BatchStatus, Report};
use stephost::config::Config;
use stephost::runtime::Grant;
use stephost::tenancy::{Tenant, TenantConfig, TenantLimits, TenantsFile, hash_token};
use stephost::{BatchOptions, Host};

fn tenant(id: &str, plugins: &[&str], limits: TenantLimits) -> TenantConfig {
    TenantConfig {
        id: id.into(),
        token_sha256: vec![hash_token(&format!("token-{id}"))],
        plugins: plugins.iter().map(|s| s.to_string()).collect(),
        grants: Default::default(),
        limits,
    }
}

async fn host(tenants: Vec<TenantConfig>, edit: impl FnOnce(&mut Config)) -> Host {
    let mut config = Config::default();
    config.engine.max_instances = 64;
    config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
    edit(&mut config);
    Host::start_with_tenants(config, Some(TenantsFile { tenants }))
        .await
        .expect("host starts")
}

fn who(host: &Host, id: &str) -> Arc<Tenant> {
    host.tenants()
        .authenticate(&format!("token-{id}"))
        .expect("token maps to its tenant")
}

async fn run(host: &Host, tenant: &str, session: Option<&str>, batch: Value) -> Report {
    host.run_batch(
        &batch,
        BatchOptions {
            tenant: Some(who(host, tenant)),
            session: session.map(stephost::session::SessionRef::Named),
            ..BatchOptions::default()
        },
    )
    .await
}

fn step(verb: &str, input: Value) -> Value {
    json!({"plugin": "testkit", "verb": verb, "input": input})
}

fn count() -> Value {
    json!({"steps": [step("count", json!({}))]})
}

#[tokio::test]
async fn tokens_map_to_their_tenant_only() {
    let host = host(vec![tenant("a", &["*"], TenantLimits::default())], |_| {}).await;
    assert_eq!(who(&host, "a").id(), "a");
    assert!(host.tenants().authenticate("token-b").is_none());
    assert!(host.tenants().authenticate("").is_none());
    assert!(host.tenants().require_auth());
}

#[tokio::test]
async fn a_tenant_cannot_reach_another_tenants_session() {
    let host = host(
        vec![
            tenant("a", &["*"], TenantLimits::default()),
            tenant("b", &["*"], TenantLimits::default()),
        ],
        |_| {},
    )
    .await;
    for expected in 1..=3 {
        let r = run(&host, "a", Some("shared-name"), count()).await;
        assert_eq!(r.steps[0].value, Some(json!(expected)));
    }
    let b = run(&host, "b", Some("shared-name"), count()).await;
    assert_eq!(
        b.steps[0].value,
        Some(json!(1)),
        "the same id from tenant b is b's own session"
    );
    // A session id minted for a is just as unreachable for b.
    let minted = run(&host, "a", None, count()).await;
    let id = minted.session_id.clone().expect("minted id");
    let err = run(&host, "b", Some(&id), count()).await;
    assert_ne!(
        err.steps.first().and_then(|s| s.value.clone()),
        Some(json!(2))
    );
    assert_eq!(
        err.status,
        BatchStatus::Invalid,
        "another instance-minted id is not b's: {err:#?}"
    );
}

#[tokio::test]
async fn plugins_not_enabled_for_a_tenant_are_refused_by_name() {
    let host = host(vec![tenant("a", &["rf"], TenantLimits::default())], |_| {}).await;
    let r = run(&host, "a", None, count()).await;
    assert_eq!(r.status, BatchStatus::Invalid);
    assert!(
        r.errors[0]
            .message
            .contains("plugin `testkit` is not enabled for tenant `a`"),
        "{:?}",
        r.errors
    );
}

#[tokio::test]
async fn step_and_batch_caps_are_named() {
    let limits = TenantLimits {
        max_steps_per_batch: Some(2),
        max_step_timeout_ms: Some(500),
        max_batch_timeout_ms: Some(1000),
        ..TenantLimits::default()
    };
    let host = host(vec![tenant("a", &["*"], limits)], |_| {}).await;
    let three = vec![step("echo", json!({"value": 1})); 3];
    let r = run(&host, "a", None, json!({ "steps": three })).await;
    assert!(
        r.errors[0].message.contains("limits.max_steps_per_batch"),
        "{:?}",
        r.errors
    );
    assert!(r.errors[0].message.contains("is 2"), "{:?}", r.errors);
    let r = run(
        &host,
        "a",
        None,
        json!({"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": 1}, "timeout_ms": 501}], "timeout_ms": 1001}),
    )
    .await;
    let text: Vec<String> = r.errors.iter().map(ToString::to_string).collect();
    assert!(
        text.iter()
            .any(|e| e.contains("between 1 and 500 (limits.max_step_timeout_ms)")),
        "{text:?}"
    );
    assert!(
        text.iter()
            .any(|e| e.contains("between 1 and 1000 (limits.max_batch_timeout_ms)")),
        "{text:?}"
    );
    // The default step timeout is capped too: a runaway step ends at 500 ms.
    let r = run(
        &host,
        "a",
        None,
        json!({"steps": [step("spin", json!({}))]}),
    )
    .await;
    assert_eq!(r.status, BatchStatus::TimedOut);
    assert!(r.time_ms < 900.0, "{}", r.time_ms);
}

#[tokio::test]
async fn memory_and_fuel_are_the_tenants() {
    let limits = TenantLimits {
        memory_mib: Some(32),
        fuel_per_step: Some(40_000_000),
        ..TenantLimits::default()
    };
    let host = host(
        vec![
            tenant("small", &["*"], limits),
            tenant("big", &["*"], TenantLimits::default()),
        ],
        |_| {},
    )
    .await;
    let r = run(
        &host,
        "small",
        None,
        json!({"steps": [step("alloc", json!({"mib": 48}))]}),
    )
    .await;
    let error = r.steps[0].error.as_ref().expect("memory limit");
    assert_eq!(error.code, "memory-limit");
    assert!(error.message.contains("32 MiB"), "{}", error.message);
    let r = run(
        &host,
        "big",
        None,
        json!({"steps": [step("alloc", json!({"mib": 48}))]}),
    )
    .await;
    assert_eq!(
        r.status,
        BatchStatus::Passed,
        "the other tenant keeps the host's limit"
    );
    let r = run(
        &host,
        "small",
        None,
        json!({"steps": [step("spin", json!({}))]}),
    )
    .await;
    let error = r.steps[0].error.as_ref().expect("fuel");
    assert_eq!(error.code, "out-of-fuel");
    assert!(error.message.contains("40000000"), "{}", error.message);
}

#[tokio::test]
async fn concurrent_batches_beyond_the_cap_are_rejected_busy() {
    let limits = TenantLimits {
        max_concurrent_batches: Some(1),
        ..TenantLimits::default()
    };
    let host = host(
        vec![
            tenant("a", &["*"], limits),
            tenant("b", &["*"], TenantLimits::default()),
        ],
        |_| {},
    )
    .await;
    let busy_host = host.clone();
    let long = tokio::spawn(async move {
        run(
            &busy_host,
            "a",
            Some("one"),
            json!({"steps": [step("sleep", json!({"ms": 600}))]}),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let r = run(&host, "a", Some("two"), count()).await;
    assert_eq!(r.status, BatchStatus::Rejected);
    let error = r.error.as_ref().expect("why");
    assert_eq!(error.code, "busy");
    assert!(
        error.message.contains("limits.max_concurrent_batches = 1"),
        "{}",
        error.message
    );
    let other = run(&host, "b", None, count()).await;
    assert_eq!(
        other.status,
        BatchStatus::Passed,
        "another tenant is not held up"
    );
    assert_eq!(long.await.expect("joined").status, BatchStatus::Passed);
    assert_eq!(
        run(&host, "a", Some("two"), count()).await.status,
        BatchStatus::Passed
    );
}

#[tokio::test]
async fn the_server_wide_cap_is_named_too() {
    let host = host(vec![tenant("a", &["*"], TenantLimits::default())], |c| {
        c.server.max_concurrent_batches = 1;
    })
    .await;
    let busy_host = host.clone();
    let long = tokio::spawn(async move {
        run(
            &busy_host,
            "a",
            Some("one"),
            json!({"steps": [step("sleep", json!({"ms": 500}))]}),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let r = run(&host, "a", Some("two"), count()).await;
    let error = r.error.as_ref().expect("busy");
    assert!(
        error.message.contains("server.max_concurrent_batches = 1"),
        "{}",
        error.message
    );
    assert!(error.message.contains("retry after"), "{}", error.message);
    long.await.expect("joined");
}

#[tokio::test]
async fn rate_and_session_limits_are_named() {
    let limits = TenantLimits {
        batches_per_minute: Some(3),
        max_sessions: Some(2),
        ..TenantLimits::default()
    };
    let host = host(vec![tenant("a", &["*"], limits)], |_| {}).await;
    assert_eq!(
        run(&host, "a", Some("s1"), count()).await.status,
        BatchStatus::Passed
    );
    assert_eq!(
        run(&host, "a", Some("s2"), count()).await.status,
        BatchStatus::Passed
    );
    let r = run(&host, "a", Some("s3"), count()).await;
    assert!(
        r.errors[0].message.contains("limits.max_sessions = 2"),
        "{:?}",
        r.errors
    );
    let r = run(&host, "a", Some("s1"), count()).await;
    assert_eq!(r.status, BatchStatus::Rejected);
    let error = r.error.as_ref().expect("rate");
    assert_eq!(error.code, "rate-limited");
    assert!(
        error.message.contains("limits.batches_per_minute = 3"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn tenant_grants_narrow_the_hosts_and_never_widen_them() {
    let dir = common::nettest_dir();
    let mut narrow = tenant("narrow", &["*"], TenantLimits::default());
    narrow.grants.insert(
        "nettest".into(),
        Grant {
            http: vec!["127.0.0.1:1".into(), "example.com:443".into()],
            ..Grant::default()
        },
    );
    let mut none = tenant("none", &["*"], TenantLimits::default());
    none.grants.insert("nettest".into(), Grant::default());
    let host = host(
        vec![
            narrow,
            none,
            tenant("full", &["*"], TenantLimits::default()),
        ],
        |c| {
            c.plugins.dirs.push(dir.path().to_owned());
            c.plugins.grants.insert(
                "nettest".into(),
                Grant {
                    http: vec!["loopback:*".into()],
                    ..Grant::default()
                },
            );
        },
    )
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let get = json!({"steps": [{"plugin": "nettest", "verb": "get", "input": {"url": format!("http://127.0.0.1:{port}/")}}]});
    let narrow = run(&host, "narrow", None, get.clone()).await;
    assert_eq!(
        narrow.steps[0].error.as_ref().map(|e| e.code.as_str()),
        Some("denied")
    );
    let note = narrow.steps[0].notes.join(" ");
    assert!(
        note.contains("127.0.0.1:1") && !note.contains("example.com"),
        "only the covered pattern stays: {note}"
    );
    let none = run(&host, "none", None, get.clone()).await;
    assert_eq!(none.status, BatchStatus::Invalid);
    assert!(
        none.errors[0].message.contains("`http` grant"),
        "{:?}",
        none.errors
    );
    // The full tenant keeps the host's loopback grant and reaches the listener.
    let accept = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        if let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = [0u8; 1024];
            let _ = socket.read(&mut buf).await;
            let _ = socket
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                .await;
        }
    });
    let full = run(&host, "full", None, get).await;
    assert_eq!(full.status, BatchStatus::Passed, "{full:#?}");
    accept.await.expect("joined");
}

#[tokio::test]
async fn metrics_count_batches_steps_and_failures_per_tenant() {
    let host = host(vec![tenant("a", &["*"], TenantLimits::default())], |_| {}).await;
    run(&host, "a", Some("m"), json!({"steps": [step("echo", json!({"value": 1})), step("fail", json!({"code": "not-found"}))]})).await;
    let text = host.metrics_text();
    for needle in [
        "stephost_batches_total{tenant=\"a\",status=\"failed\"} 1",
        "stephost_steps_total{tenant=\"a\",plugin=\"testkit\",status=\"passed\"} 1",
        "stephost_step_failures_total{tenant=\"a\",code=\"not-found\"} 1",
        "stephost_live_sessions{tenant=\"a\"} 1",
        "stephost_live_instances{tenant=\"a\"} 1",
        "stephost_pool_instances_max 64",
        "# TYPE stephost_step_duration_seconds histogram",
    ] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
}
