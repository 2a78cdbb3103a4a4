//! The saved-batch tools: `save_batch`, `list_batches`, `delete_batch`, the
//! saved batches' own tools in each tenant's list, and telling the clients
//! that listed a tenant's tools when they change
//! (`notifications/tools/list_changed`).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value, json};

use stephost_batch::dialects::Dialect;
use stephost_batch::saved::{Definition, MAX_DESCRIPTION_CHARS, SavedBatch};

use super::catalog::{Catalog, add_batch_options};
use crate::saved::{DeleteError, SaveError, Saved, StoreError};
use crate::tenancy::Tenant;

pub(super) const SAVE: &str = "save_batch";
pub(super) const LIST: &str = "list_batches";
pub(super) const DELETE: &str = "delete_batch";

/// The definitions of the server's saved-batch tools. Short: they are in the
/// list of every client that has them.
pub(super) fn tools() -> Vec<Tool> {
    let object = |value: Value| match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    };
    let save = Tool::new(
        SAVE,
        "Save a batch that works as a tool of its own for this client: steps as `batch` takes them, \
with ${params.NAME} for each parameter declared in `parameters` (a JSON Schema of the tool's arguments). \
Checked now; the tool is in tools/list at once and after restarts. list_batches, delete_batch manage them.",
        object(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_-]{0,63}$"},
                "description": {"type": "string", "maxLength": MAX_DESCRIPTION_CHARS},
                "parameters": {"type": "object"},
                "steps": {"type": "array", "minItems": 1, "items": {"type": "object"}},
                "on_failure": {"type": "string", "enum": ["stop", "continue"]},
                "timeout_ms": {"type": "integer", "minimum": 1},
                "replace": {"type": "boolean", "default": false}
            },
            "required": ["name", "description", "steps"],
            "additionalProperties": false
        })),
    )
    .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).open_world(false));
    let list = Tool::new(
        LIST,
        "This client's saved batches: name, description, parameters, steps, and why one is not offered.",
        object(json!({"type": "object", "properties": {}, "additionalProperties": false})),
    )
    .with_annotations(ToolAnnotations::new().read_only(true).open_world(false));
    let delete = Tool::new(
        DELETE,
        "Delete a saved batch and its tool.",
        object(json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": false
        })),
    )
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .open_world(false),
    );
    vec![save, list, delete]
}

/// Whether `name` is one of the saved-batch tools.
pub(super) fn is_own(name: &str) -> bool {
    matches!(name, SAVE | LIST | DELETE)
}

/// Every saved batch answers with `batch`'s report: one output schema,
/// shared by all their tools.
static REPORT_SCHEMA: LazyLock<Arc<JsonObject>> =
    LazyLock::new(|| match stephost_batch::dialects::batch::report_schema() {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    });

/// The tool a saved batch is in `tools/list`.
pub(super) fn tool_of(saved: &SavedBatch, tenant: &Tenant) -> Tool {
    let mut input = match saved.input_schema(tenant.catalog()) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    add_batch_options(&mut input, saved.name());
    Tool::new(
        saved.name().to_owned(),
        saved.description(tenant.catalog()),
        Arc::new(input),
    )
    .with_raw_output_schema(REPORT_SCHEMA.clone())
}

/// The longest a `tools/list` waits for its turn; one that would wait
/// longer is refused.
const MAX_LIST_WAIT: Duration = Duration::from_secs(10);

/// A `tools/list` refused: the tenant asks for its tools faster than
/// `mcp.tool_lists_per_minute` and its queue is full.
#[derive(Debug, thiserror::Error)]
#[error(
    "too many tools/list requests from this client: at most mcp.tool_lists_per_minute = {per_minute} a minute, {burst} at once (a list counts once per MiB its saved batches add); retry in {retry_after_s} s"
)]
pub(super) struct ListRefused {
    pub(super) per_minute: u32,
    pub(super) burst: u32,
    pub(super) retry_after_s: u64,
}

/// The clients that listed each tenant's tools, to be told when they
/// change, and the pace of each tenant's lists.
#[derive(Default)]
pub(super) struct Listeners {
    peers: Mutex<Vec<(String, Peer<RoleServer>)>>,
    /// Per tenant, when its next list is due if it keeps to its rate (the
    /// theoretical arrival time of the generic cell rate algorithm).
    next_list: Mutex<HashMap<String, Instant>>,
}

impl Listeners {
    /// Waits until `tenant` may list its tools: `per_minute` turns a
    /// minute, a second's worth of them at once, the rest spaced evenly. A
    /// list takes `turns` of them (one per MiB that saved batches add to it,
    /// at least one), so what a tenant's lists make the host serialize is
    /// bounded in bytes a second whatever its lists hold. Lists past that
    /// wait their turn, so a burst of concurrent lists is answered a few at
    /// a time and never builds up in memory together; one whose turn is
    /// more than [`MAX_LIST_WAIT`] away is refused.
    pub(super) async fn pace(
        &self,
        tenant: &str,
        per_minute: u32,
        turns: u32,
    ) -> Result<(), ListRefused> {
        let per_minute = per_minute.max(1);
        let burst = (per_minute / 60).max(1);
        let interval = Duration::from_secs(60) / per_minute;
        let now = Instant::now();
        let at = {
            let mut next = self
                .next_list
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // Generic cell rate: `due` is when the tenant's turns run out if
            // it keeps to the rate; a list may go `burst` turns before that.
            let due = next.get(tenant).copied().unwrap_or(now).max(now) + interval * turns.max(1);
            let at = due.checked_sub(interval * burst).unwrap_or(now).max(now);
            let wait = at - now;
            if wait > MAX_LIST_WAIT {
                return Err(ListRefused {
                    per_minute,
                    burst,
                    retry_after_s: (wait - MAX_LIST_WAIT).as_secs().max(1),
                });
            }
            next.insert(tenant.to_owned(), due);
            at
        };
        if at > now {
            tokio::time::sleep_until(at.into()).await;
        }
        Ok(())
    }

    /// Tells `peer` of `tenant`'s changes from now on; connections gone are
    /// forgotten here, so the list is as long as the live connections.
    pub(super) fn add(&self, tenant: &str, peer: Peer<RoleServer>) {
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        peers.retain(|(_, p)| !p.is_transport_closed());
        peers.push((tenant.to_owned(), peer));
    }

    /// Sends `notifications/tools/list_changed` to every live client of
    /// `tenant`. A client gone is skipped; the change stands either way.
    pub(super) async fn changed(&self, tenant: &str) {
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
            peers.retain(|(_, p)| !p.is_transport_closed());
            peers
                .iter()
                .filter(|(t, _)| t == tenant)
                .map(|(_, p)| p.clone())
                .collect()
        };
        for peer in peers {
            if let Err(error) = peer.notify_tool_list_changed().await {
                tracing::debug!(%error, "tools/list_changed not delivered");
            }
        }
    }
}

/// A tool result for the saved-batch tools: the text a model reads, the
/// structured JSON, and whether it is an error.
fn result(text: String, structured: Value, is_error: bool) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result.is_error = Some(is_error);
    result
}

/// An error result naming each problem: `{saved: false, errors: [...]}`.
fn refused(tool: &str, errors: Vec<Value>, lines: Vec<String>) -> CallToolResult {
    let text = format!("{tool} refused:\n{}", lines.join("\n"));
    result(text, json!({"ok": false, "errors": errors}), true)
}

fn problem_json(field: &str, message: &str, step: Option<usize>) -> Value {
    let mut out = json!({"field": field, "message": message});
    if let Some(step) = step {
        out["step"] = json!(step + 1);
    }
    out
}

/// A saved-batch tool refused because the store failed: an error naming
/// the store, never where the host keeps it.
fn store_refused(tool: &str, error: &StoreError) -> CallToolResult {
    let message = error.to_string();
    refused(
        tool,
        vec![problem_json("(store)", &message, None)],
        vec![message],
    )
}

/// Answers a call of one of the saved-batch tools; `Some(changed)` tells
/// whether the tenant's tools changed.
pub(super) async fn call(
    host: &crate::Host,
    tenant: &Tenant,
    catalog: &Catalog,
    name: &str,
    args: Map<String, Value>,
) -> (CallToolResult, bool) {
    let claimed = |name: &str| catalog.owner(name);
    let store = host.saved();
    match name {
        SAVE => {
            let replace = match args.get("replace") {
                None | Some(Value::Null) | Some(Value::Bool(false)) => false,
                Some(Value::Bool(true)) => true,
                Some(other) => {
                    let message = format!("must be true or false, got {other}");
                    return (
                        refused(
                            SAVE,
                            vec![problem_json("replace", &message, None)],
                            vec![format!("replace: {message}")],
                        ),
                        false,
                    );
                }
            };
            let mut fields = args;
            fields.remove("replace");
            let definition: Definition = match serde_json::from_value(Value::Object(fields)) {
                Ok(definition) => definition,
                Err(e) => {
                    let message = e.to_string();
                    return (
                        refused(
                            SAVE,
                            vec![problem_json("(arguments)", &message, None)],
                            vec![message],
                        ),
                        false,
                    );
                }
            };
            match store.save(tenant, definition, replace, &claimed).await {
                Ok((saved, replaced)) => {
                    let parameters = saved.parameter_names();
                    let verbs = saved.verbs();
                    let text = format!(
                        "{} `{}` as a tool ({} steps: {}; parameters: {}); tools/list offers it now",
                        if replaced { "replaced" } else { "saved" },
                        saved.name(),
                        verbs.len(),
                        verbs.join(", "),
                        if parameters.is_empty() {
                            "none".to_owned()
                        } else {
                            parameters.join(", ")
                        }
                    );
                    let structured = json!({
                        "ok": true,
                        "name": saved.name(),
                        "replaced": replaced,
                        "parameters": parameters,
                        "steps": verbs.len(),
                    });
                    (result(text, structured, false), true)
                }
                Err(SaveError::Invalid(problems)) => {
                    let errors = problems
                        .iter()
                        .map(|p| problem_json(&p.field, &p.message, p.step))
                        .collect();
                    let lines = problems.iter().map(ToString::to_string).collect();
                    (refused(SAVE, errors, lines), false)
                }
                Err(SaveError::Store(error)) => (store_refused(SAVE, &error), false),
                Err(other) => {
                    let field = match &other {
                        SaveError::Clash { .. } | SaveError::Exists(_) => "name",
                        _ => "(batch)",
                    };
                    let message = other.to_string();
                    (
                        refused(
                            SAVE,
                            vec![problem_json(field, &message, None)],
                            vec![format!("{field}: {message}")],
                        ),
                        false,
                    )
                }
            }
        }
        LIST => {
            let saved = match store.list(tenant, &claimed).await {
                Ok(saved) => saved,
                Err(error) => return (store_refused(LIST, &error), false),
            };
            let mut lines = Vec::new();
            let batches: Vec<Value> = saved
                .iter()
                .map(|entry| {
                    let definition = entry.definition();
                    let mut out = serde_json::to_value(definition).unwrap_or(Value::Null);
                    match entry {
                        Saved::Ready { .. } => {
                            out["offered"] = json!(true);
                            lines.push(format!(
                                "{}: {} ({} steps)",
                                definition.name,
                                definition.description,
                                definition.steps.len()
                            ));
                        }
                        Saved::Unusable { why, .. } => {
                            out["offered"] = json!(false);
                            out["why"] = json!(why);
                            lines.push(format!("{}: not offered: {why}", definition.name));
                        }
                    }
                    out
                })
                .collect();
            if lines.is_empty() {
                lines.push("no saved batches; save_batch saves one".to_owned());
            }
            (
                result(lines.join("\n"), json!({"batches": batches}), false),
                false,
            )
        }
        _ => {
            let Some(name) = args.get("name").and_then(Value::as_str) else {
                let message = "`name` is required: the saved batch to delete";
                return (
                    refused(
                        DELETE,
                        vec![problem_json("name", message, None)],
                        vec![message.to_owned()],
                    ),
                    false,
                );
            };
            match store.delete(tenant, name, &claimed).await {
                Ok(definition) => (
                    result(
                        format!("deleted `{}` and its tool", definition.name),
                        json!({"ok": true, "name": definition.name}),
                        false,
                    ),
                    true,
                ),
                Err(e @ DeleteError::Unknown { .. }) => {
                    let message = e.to_string();
                    (
                        refused(
                            DELETE,
                            vec![problem_json("name", &message, None)],
                            vec![format!("name: {message}")],
                        ),
                        false,
                    )
                }
                Err(DeleteError::Store(error)) => (store_refused(DELETE, &error), false),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_tenants_lists_are_paced_and_a_long_queue_is_refused() {
        let listeners = Listeners::default();
        let started = Instant::now();
        // 600 a minute: ten at once, then one every 100 ms.
        for _ in 0..10 {
            listeners.pace("a", 600, 1).await.expect("within the burst");
        }
        assert!(started.elapsed() < Duration::from_millis(80));
        listeners.pace("a", 600, 1).await.expect("waits its turn");
        assert!(started.elapsed() >= Duration::from_millis(90));
        let other = Instant::now();
        listeners.pace("b", 600, 1).await.expect("another tenant");
        assert!(other.elapsed() < Duration::from_millis(50), "not slowed");

        // 60 a minute, one at once: eleven turns fit in ten seconds of
        // waiting (each taken when first polled), the twelfth does not.
        for _ in 0..11 {
            let waiting = tokio::time::timeout(Duration::ZERO, listeners.pace("c", 60, 1)).await;
            assert!(!matches!(waiting, Ok(Err(_))), "queued");
        }
        let refused = listeners.pace("c", 60, 1).await.expect_err("refused");
        assert_eq!(
            (refused.per_minute, refused.burst, refused.retry_after_s),
            (60, 1, 1)
        );
        assert!(
            refused
                .to_string()
                .contains("at most mcp.tool_lists_per_minute = 60"),
            "{refused}"
        );

        // A list of 5 MiB takes five turns: at 600 a minute, ten at once,
        // the first two go, the third waits 0.5 s.
        let started = Instant::now();
        for _ in 0..2 {
            listeners.pace("d", 600, 5).await.expect("within the burst");
        }
        assert!(started.elapsed() < Duration::from_millis(80));
        listeners.pace("d", 600, 5).await.expect("waits its turns");
        assert!(started.elapsed() >= Duration::from_millis(450));
    }

    #[tokio::test]
    async fn a_saved_tool_is_what_the_list_bound_counts() {
        let mut config = crate::config::Config::default();
        config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
        let host = match crate::Host::start(config).await {
            Ok(host) => host,
            Err(e) => panic!("host starts: {e:#}"),
        };
        let tenant = host.tenants().local().clone();
        let definition: Definition = serde_json::from_value(json!({
            "name": "greet",
            "description": "Echoes ".repeat(200),
            "parameters": {"type": "object", "properties": {"v": {"description": "x".repeat(5000)}}},
            "steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": "${params.v}"}}]
        }))
        .expect("a definition");
        let saved = SavedBatch::new(definition, tenant.catalog(), tenant.limits()).expect("checks");
        let tool = tool_of(&saved, &tenant);
        let listed = serde_json::to_vec(&tool).expect("json").len();
        let counted = crate::saved::listed_bytes(&saved, tenant.catalog());
        // The count leaves out only the host's own options, a fixed few.
        assert!(
            counted <= listed && listed <= counted + 256,
            "{counted} counted, {listed} listed"
        );
        assert_eq!(
            tool.output_schema.as_deref(),
            saved.output_schema().as_object(),
            "the shared output schema is the saved batch's"
        );
    }
}
