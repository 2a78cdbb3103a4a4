//! The MCP request handler: tools/list and tools/call over any transport.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::catalog::Catalog;
use crate::batch::{
    ContentItem, NoObserver, Observer, PlannedStep, Report, StepReport, StepStatus,
};
use crate::dialects::{Dialect, session_arg};
use crate::{BatchOptions, Host};

/// Serves one MCP connection (stdio) or one MCP session (HTTP).
#[derive(Clone)]
pub struct StepServer {
    host: Host,
    catalog: Arc<Catalog>,
    /// The session of a transport that has connections (stdio).
    connection_session: Option<String>,
}

const INSTRUCTIONS: &str = "stephost runs tool steps inside sandboxed WebAssembly plugins. \
Prefer the batch tools (`batch` and the dialect tools) whenever you can see two or more steps ahead: \
one call replaces many round trips, the whole batch is validated before anything runs, results chain \
into later steps with ${STEP_N} (1-based) and ${name}, and every step is held to a time budget. \
Single-verb tools are there for the step whose result decides what comes next. Pass session_id to keep \
state across calls; every result says which session it used.";

impl StepServer {
    /// A handler over `host` with the tools in `catalog`. `connection_session`
    /// is the session id calls without `session_id` use, when the transport has
    /// connections.
    pub fn new(host: Host, catalog: Arc<Catalog>, connection_session: Option<String>) -> Self {
        Self {
            host,
            catalog,
            connection_session,
        }
    }

    /// The session a call without `session_id` uses: the connection's, else the
    /// HTTP session's (`Mcp-Session-Id`), else none (a fresh one per call).
    fn default_session(&self, ctx: &RequestContext<RoleServer>) -> Option<String> {
        if let Some(id) = &self.connection_session {
            return Some(id.clone());
        }
        let parts = ctx.extensions.get::<http::request::Parts>()?;
        let header = parts.headers.get("mcp-session-id")?.to_str().ok()?;
        Some(format!("mcp-{header}"))
    }

    async fn call(
        &self,
        dialect: &Arc<dyn Dialect>,
        args: Map<String, Value>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let session_id = session_arg(&args)
            .map(str::to_owned)
            .or_else(|| self.default_session(&ctx));
        let registry = self.host.registry();
        let report = match dialect.to_batch(&args, registry) {
            Ok(batch) => {
                let progress = ctx
                    .meta
                    .get_progress_token()
                    .map(|token| ProgressSink::start(ctx.peer.clone(), token));
                let observer: &dyn Observer = match &progress {
                    Some(sink) => sink,
                    None => &NoObserver,
                };
                let report = self
                    .host
                    .run_batch(
                        &batch,
                        BatchOptions {
                            session_id: session_id.as_deref(),
                            observer,
                            cancel: ctx.ct.clone(),
                            policy: dialect.policy(),
                        },
                    )
                    .await;
                if let Some(sink) = progress {
                    sink.finish().await;
                }
                report
            }
            Err(problems) => Report::invalid(new_batch_id(), session_id, 0, problems),
        };
        render(
            dialect.as_ref(),
            &report,
            dialect.name() != "batch" && report.steps.len() == 1,
        )
    }
}

fn new_batch_id() -> String {
    format!("b-{}", uuid::Uuid::new_v4().simple())
}

/// The tool result: structured content in the dialect's shape, a text rendering,
/// and each image after a text item naming its step.
fn render(dialect: &dyn Dialect, report: &Report, include_step_text: bool) -> CallToolResult {
    let mut structured = dialect.render(report);
    strip_image_data(&mut structured);
    let mut text = report.summary();
    for problem in &report.errors {
        text.push_str(&format!("\n- {problem}"));
    }
    text.push_str("\n\n");
    text.push_str(&serde_json::to_string(&structured).unwrap_or_default());
    let mut content = vec![ContentBlock::text(text)];
    for step in &report.steps {
        for item in &step.content {
            match item {
                ContentItem::Text { text } if include_step_text => {
                    content.push(ContentBlock::text(text.clone()));
                }
                ContentItem::Text { .. } => {}
                ContentItem::Image {
                    mime_type,
                    data,
                    label,
                } => {
                    content.push(ContentBlock::text(format!("[{label}]")));
                    content.push(ContentBlock::image(data.clone(), mime_type.clone()));
                }
            }
        }
    }
    let mut result = CallToolResult::success(content);
    result.structured_content = Some(structured);
    result.is_error = Some(report.status != crate::batch::BatchStatus::Passed);
    result
}

/// Images travel as MCP image content; the structured copy keeps only their
/// label and type.
fn strip_image_data(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("image") && map.contains_key("data")
            {
                map.insert(
                    "data".into(),
                    Value::String("(sent as image content)".into()),
                );
            }
            for item in map.values_mut() {
                strip_image_data(item);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_image_data),
        _ => {}
    }
}

impl ServerHandler for StepServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("stephost", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(
            self.catalog.tools().to_vec(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(dialect) = self.catalog.get(&request.name).cloned() else {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool `{}`; tools/list shows the tools on offer",
                    request.name
                ),
                None,
            ));
        };
        let args = request.arguments.unwrap_or_default();
        if let Some(id) = args.get("session_id")
            && !id.is_string()
        {
            return Err(McpError::invalid_params(
                format!("`session_id` must be a string, got {id}"),
                None,
            ));
        }
        Ok(self.call(&dialect, args, context).await.into())
    }
}

/// Sends a progress notification after each step, in order.
struct ProgressSink {
    tx: mpsc::UnboundedSender<ProgressNotificationParam>,
    task: tokio::task::JoinHandle<()>,
    token: ProgressToken,
}

impl ProgressSink {
    fn start(peer: Peer<RoleServer>, token: ProgressToken) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<ProgressNotificationParam>();
        let task = tokio::spawn(async move {
            while let Some(param) = rx.recv().await {
                if let Err(error) = peer.notify_progress(param).await {
                    tracing::debug!(%error, "progress notification not delivered");
                    break;
                }
            }
        });
        Self { tx, task, token }
    }

    /// Waits until every notification is handed to the transport, so they all
    /// arrive before the result.
    async fn finish(self) {
        drop(self.tx);
        let _ = self.task.await;
    }
}

impl Observer for ProgressSink {
    fn step_started(&self, _step: &PlannedStep, _total: usize) {}

    fn step_finished(&self, step: &StepReport, done: usize, total: usize) {
        let status = match step.status {
            StepStatus::Passed => "passed",
            StepStatus::Failed => "failed",
            StepStatus::TimedOut => "timed out",
            StepStatus::Cancelled => "cancelled",
        };
        let name = step
            .label
            .clone()
            .unwrap_or_else(|| format!("{}.{}", step.plugin, step.verb));
        let mut message = format!("step {}: {name} {status}", step.index + 1);
        if let Some(error) = &step.error {
            message.push_str(&format!(" ({})", error.code));
        }
        let param = ProgressNotificationParam::new(self.token.clone(), done as f64)
            .with_total(total as f64)
            .with_message(message);
        let _ = self.tx.send(param);
    }
}
