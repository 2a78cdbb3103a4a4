//! The saved-batch tools: `save_batch`, `list_batches`, `delete_batch`, the
//! saved batches' own tools in each tenant's list, and telling the clients
//! that listed a tenant's tools when they change
//! (`notifications/tools/list_changed`).

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value, json};

use stephost_batch::dialects::Dialect;
use stephost_batch::saved::{Definition, MAX_DESCRIPTION_CHARS, SavedBatch};

use super::catalog::{Catalog, add_batch_options};
use crate::saved::{DeleteError, SaveError, Saved};
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

/// The tool a saved batch is in `tools/list`.
pub(super) fn tool_of(saved: &SavedBatch, tenant: &Tenant) -> Tool {
    let mut input = match saved.input_schema(tenant.catalog()) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    add_batch_options(&mut input, saved.name());
    let output = match saved.output_schema() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    Tool::new(
        saved.name().to_owned(),
        saved.description(tenant.catalog()),
        Arc::new(input),
    )
    .with_raw_output_schema(Arc::new(output))
}

/// The clients that listed each tenant's tools, to be told when they change.
#[derive(Default)]
pub(super) struct Listeners {
    peers: Mutex<Vec<(String, Peer<RoleServer>)>>,
}

impl Listeners {
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
            let saved = store.list(tenant, &claimed).await;
            let mut lines = Vec::new();
            let batches: Vec<Value> = saved
                .iter()
                .map(|entry| {
                    let definition = entry.definition();
                    let mut out = serde_json::to_value(definition).unwrap_or(Value::Null);
                    match entry {
                        Saved::Ready(_) => {
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
                Err(e) => {
                    let message = e.to_string();
                    (
                        refused(
                            DELETE,
                            vec![problem_json("(batch)", &message, None)],
                            vec![message],
                        ),
                        false,
                    )
                }
            }
        }
    }
}
