//! The instance pool is shared by every tenant, so each tenant may hold only its
//! share of it (issue 39, finding 4): instances and their Python evaluators are
//! charged, in the pool's own units, to the tenant whose session holds them. A
//! tenant at its share gets `busy` naming the share; another tenant never does.

mod common;

use std::sync::Arc;

use serde_json::{Value, json};
use stephost::batch::{BatchStatus, Report};
use stephost::config::Config;
use stephost::runtime::Footprint;
use stephost::tenancy::{Tenant, TenantConfig, TenantLimits, TenantsFile, hash_token};
use stephost::{BatchOptions, Host};

fn tenant(id: &str, limits: TenantLimits) -> TenantConfig {
    TenantConfig {
        id: id.into(),
        token_sha256: vec![hash_token(&format!("token-{id}"))],
        plugins: vec!["*".into()],
        grants: Default::default(),
        limits,
    }
}

async fn host(
    tenants: Vec<TenantConfig>,
    edit: impl FnOnce(&mut Config),
) -> Result<Host, anyhow::Error> {
    let mut config = Config::default();
    config.engine.max_instances = 64;
    config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
    edit(&mut config);
    Host::start_with_tenants(config, Some(TenantsFile { tenants })).await
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

fn rf(keyword: &str, args: &[&str]) -> Value {
    json!({"plugin": "rf", "verb": "run_keyword", "input": {"keyword": keyword, "args": args}})
}

/// One step that needs CPython: an `rf` instance and its evaluator.
fn python() -> Value {
    json!({"steps": [rf("Evaluate", &["math.pi"])]})
}

fn echo() -> Value {
    json!({"steps": [common::step("echo", json!({"value": 1}))]})
}

/// What the allocator holds in use, read from `/metrics`.
fn pool_live(host: &Host) -> Footprint {
    let text = host.metrics_text();
    let read = |resource: &str| {
        let prefix = format!("stephost_pool_live{{resource=\"{resource}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {prefix} in\n{text}")) as u32
    };
    Footprint {
        component_instances: read("component_instances"),
        core_instances: read("core_instances"),
        memories: read("memories"),
        tables: read("tables"),
        stacks: read("stacks"),
    }
}

fn minus(a: Footprint, b: Footprint) -> Footprint {
    Footprint {
        component_instances: a.component_instances - b.component_instances,
        core_instances: a.core_instances - b.core_instances,
        memories: a.memories - b.memories,
        tables: a.tables - b.tables,
        stacks: a.stacks - b.stacks,
    }
}

fn passed(report: &Report) -> bool {
    report.status == BatchStatus::Passed
}

fn first_error(report: &Report) -> (String, String) {
    report
        .steps
        .iter()
        .find_map(|s| s.error.as_ref())
        .map(|e| (e.code.as_str().to_owned(), e.message.clone()))
        .unwrap_or_default()
}

#[tokio::test]
async fn what_an_instance_is_charged_is_what_the_pool_counts() {
    let host = host(vec![tenant("a", TenantLimits::default())], |_| {})
        .await
        .expect("host starts");
    let a = who(&host, "a");
    let idle = pool_live(&host);
    assert_eq!(idle, Footprint::default(), "nothing live at start");

    let testkit = host.registry().get("testkit").expect("testkit").footprint();
    assert!(passed(&run(&host, "a", Some("t"), echo()).await));
    assert_eq!(pool_live(&host), testkit, "a testkit instance");
    assert_eq!(a.slots().in_use(), testkit.slots());

    let rf_plugin = host.registry().get("rf").expect("rf");
    let set = json!({"steps": [rf("Set Variable", &["1"])]});
    assert!(passed(&run(&host, "a", Some("r"), set).await));
    let with_rf = pool_live(&host);
    assert_eq!(
        minus(with_rf, testkit),
        rf_plugin.footprint(),
        "an rf instance"
    );

    let report = run(&host, "a", Some("r"), python()).await;
    assert!(passed(&report), "{report:#?}");
    let evaluator = rf_plugin
        .evaluator_footprint()
        .expect("built with the evaluator");
    assert_eq!(
        minus(pool_live(&host), with_rf),
        evaluator,
        "the rf instance's Python evaluator"
    );
    assert_eq!(
        a.slots().in_use(),
        testkit.slots() + rf_plugin.footprint().slots() + evaluator.slots()
    );
    assert_eq!(
        rf_plugin.slots_per_session(),
        rf_plugin.footprint().slots() + evaluator.slots()
    );
    eprintln!(
        "testkit: {testkit} = {} slot(s); rf: {} = {} slot(s); evaluator: {evaluator} = {} slot(s)",
        testkit.slots(),
        rf_plugin.footprint(),
        rf_plugin.footprint().slots(),
        evaluator.slots()
    );
    for plugin in host.registry().plugins() {
        eprintln!(
            "{}: {} = {} slot(s) a session",
            plugin.name(),
            plugin.footprint(),
            plugin.slots_per_session()
        );
    }
    let metrics = host.metrics_text();
    let expected = format!(
        "stephost_instance_slots_in_use{{tenant=\"a\"}} {}",
        a.slots().in_use()
    );
    assert!(
        metrics.contains(&expected),
        "missing {expected}:\n{metrics}"
    );
    assert!(
        metrics.contains("stephost_instance_slots_share{tenant=\"a\"} 64"),
        "{metrics}"
    );

    // Ending the sessions gives everything back, the evaluator's slots too.
    assert!(host.sessions().remove("a", "r"));
    assert!(host.sessions().remove("a", "t"));
    assert_eq!(pool_live(&host), Footprint::default());
    assert_eq!(a.slots().in_use(), 0);
}

#[tokio::test]
async fn a_tenant_at_its_share_gets_busy_and_the_other_never_does() {
    // Two tenants share 16 slots evenly: 8 each, one and a half rf sessions
    // with Python.
    let host = host(
        vec![
            tenant("hostile", TenantLimits::default()),
            tenant("victim", TenantLimits::default()),
        ],
        |c| c.engine.max_instances = 16,
    )
    .await
    .expect("host starts");
    let hostile = who(&host, "hostile");
    let victim = who(&host, "victim");
    assert_eq!(hostile.slots().limit(), 8);

    // Session-less calls, each minting an unclaimed session: at its share the
    // tenant's least recently used idle one makes room, so all of them run, and
    // the victim's calls in fresh sessions run between them.
    let mut hostile_failed = Vec::new();
    for i in 0..30 {
        let report = run(&host, "hostile", None, python()).await;
        if !passed(&report) {
            hostile_failed.push((i, first_error(&report)));
        }
        let id = format!("v-{i}");
        let report = run(&host, "victim", Some(&id), python()).await;
        assert!(
            passed(&report),
            "victim after the hostile tenant's session-less call {i}: {report:#?}"
        );
        assert!(host.sessions().remove("victim", &id));
    }
    assert!(hostile_failed.is_empty(), "{hostile_failed:?}");
    assert!(hostile.slots().in_use() <= 8);

    // Sessions it keeps (named ones) are never dropped for it: it reaches its
    // share and is told so, by name.
    let mut refused = None;
    for i in 0..10 {
        let id = format!("h{i}");
        let report = run(&host, "hostile", Some(&id), python()).await;
        if !passed(&report) {
            refused = Some(first_error(&report));
            break;
        }
    }
    let (code, message) = refused.expect("the hostile tenant reaches its share");
    assert_eq!(code, "busy", "{message}");
    for needle in [
        "tenant `hostile`",
        "engine.max_instances_per_tenant = 8",
        "DELETE",
    ] {
        assert!(message.contains(needle), "missing {needle:?} in {message}");
    }
    assert!(hostile.slots().in_use() <= 8);

    // The victim's ordinary calls, Python included, all run.
    for i in 0..3 {
        let id = format!("v{i}");
        let report = run(&host, "victim", Some(&id), echo()).await;
        assert!(passed(&report), "victim testkit {i}: {report:#?}");
    }
    let report = run(&host, "victim", Some("v-python"), python()).await;
    assert!(passed(&report), "victim python: {report:#?}");
    assert!(victim.slots().in_use() <= 8);

    // Ending one of its sessions gives the hostile tenant room again.
    assert!(host.sessions().remove("hostile", "h0"));
    let report = run(&host, "hostile", Some("h-again"), python()).await;
    assert!(passed(&report), "{report:#?}");
}

#[tokio::test]
async fn shares_are_validated_at_start() {
    let err = host(
        vec![
            tenant(
                "a",
                TenantLimits {
                    max_instances: Some(40),
                    ..TenantLimits::default()
                },
            ),
            tenant("b", TenantLimits::default()),
        ],
        |_| {},
    )
    .await
    .err()
    .expect("40 + 32 slots do not fit in 64");
    let text = format!("{err:#}");
    assert!(text.contains("add up to 72"), "{text}");
    assert!(text.contains("engine.max_instances = 64"), "{text}");

    let host = host(
        vec![
            tenant(
                "a",
                TenantLimits {
                    max_instances: Some(40),
                    ..TenantLimits::default()
                },
            ),
            tenant("b", TenantLimits::default()),
        ],
        |c| c.engine.max_instances_per_tenant = Some(24),
    )
    .await
    .expect("40 + 24 fit");
    assert_eq!(who(&host, "a").slots().limit(), 40);
    assert_eq!(who(&host, "a").slots().key(), "limits.max_instances");
    assert_eq!(who(&host, "b").slots().limit(), 24);

    let err = Config::parse("[engine]\nmax_instances = 8\nmax_instances_per_tenant = 9\n")
        .expect_err("a share past the pool");
    assert!(
        err.to_string().contains("engine.max_instances_per_tenant"),
        "{err}"
    );
}
