//! The MCP request handler: tools/list and tools/call over any transport.

use std::sync::Arc;

// Logging is deprecated by the 2026-07-28 revision (SEP-2577) but part of
// 2025-11-25, which this server also serves.
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig,
};
#[allow(deprecated)]
use rmcp::model::{LoggingLevel, SetLevelRequestParams};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value};

use super::catalog::{Catalog, Catalogs};
use super::notify::Notifier;
use super::saved_tools;
use crate::config::ResultText;
use crate::session::SessionRef;
use crate::tenancy::Tenant;
use crate::{BatchOptions, Host};
use stephost_batch::dialects::{Dialect, text};
use stephost_batch::{BatchStatus, ContentItem, NoObserver, Observer, Report};

/// Serves one MCP connection (stdio) or one MCP session (HTTP).
#[derive(Clone)]
pub struct StepServer {
    host: Host,
    catalogs: Arc<Catalogs>,
    /// The session of a transport that has connections (stdio).
    connection_session: Option<String>,
    /// The least severe plugin log level the client asked to receive
    /// (`logging/setLevel`); `None` sends no log messages.
    #[allow(deprecated)]
    log_level: Arc<std::sync::Mutex<Option<LoggingLevel>>>,
    /// Whether this connection is told when its tenant's tools change (from
    /// its first `tools/list`: a client that never listed has nothing to
    /// refresh).
    listening: Arc<std::sync::atomic::AtomicBool>,
}

const INSTRUCTIONS: &str = "stephost runs tool steps inside sandboxed WebAssembly plugins. \
Prefer the batch tools (`batch` and the dialect tools such as browser_batch and execute_batch) whenever you \
can see two or more steps ahead: one call replaces many round trips, the whole batch is validated before \
anything runs, results chain into later steps with ${STEP_N} (1-based) and ${name}, and every step is held \
to a time budget. Each single-verb tool is one plugin verb (the `batch` description lists them by plugin) \
and takes the same input as that verb's batch step; use it for the step whose result decides what comes \
next. Sessions: state (a plugin's browser or counters, values stored with assign_to) lives in a session. A \
call without session_id uses this connection's session, or a new one; every result returns the session_id \
it used, so pass it on to keep state across calls and connections.";

impl StepServer {
    /// A handler over `host` with each tenant's tools in `catalogs`.
    /// `connection_session` is the session id calls without `session_id` use,
    /// when the transport has connections.
    pub fn new(host: Host, catalogs: Arc<Catalogs>, connection_session: Option<String>) -> Self {
        Self {
            host,
            catalogs,
            connection_session,
            log_level: Arc::default(),
            listening: Arc::default(),
        }
    }

    /// The host this handler serves.
    pub(super) fn host(&self) -> &Host {
        &self.host
    }

    /// The caller's tenant: the one the HTTP front authenticated, else local.
    fn tenant(&self, ctx: &RequestContext<RoleServer>) -> Arc<Tenant> {
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Arc<Tenant>>())
            .cloned()
            .unwrap_or_else(|| self.host.tenants().local().clone())
    }

    /// The tools `tenant` sees.
    fn catalog(&self, tenant: &Tenant) -> Result<&Arc<Catalog>, McpError> {
        self.catalogs.get(tenant.id()).ok_or_else(|| {
            McpError::internal_error(
                format!("no tool catalog for tenant `{}`", tenant.id()),
                None,
            )
        })
    }

    /// The transport session a call without `session_id` uses: the
    /// connection's (stdio), else the HTTP session's (`Mcp-Session-Id`, whose
    /// owner the HTTP front has checked), else none (a fresh one per call).
    /// The host session takes the transport's id as it is, so an id a client
    /// passes on routes to this instance like the header does.
    fn transport_session(&self, ctx: &RequestContext<RoleServer>) -> Option<String> {
        if let Some(id) = &self.connection_session {
            return Some(id.clone());
        }
        let parts = ctx.extensions.get::<http::request::Parts>()?;
        let header = parts.headers.get("mcp-session-id")?.to_str().ok()?;
        Some(header.to_owned())
    }

    /// Runs a call of the batch or verb tool `dialect` serves; `saved` when it
    /// is a saved batch (which takes the batch tools' options).
    async fn call(
        &self,
        dialect: &Arc<dyn Dialect>,
        args: Map<String, Value>,
        ctx: RequestContext<RoleServer>,
        saved: bool,
    ) -> CallToolResult {
        let named = dialect.session_for(&args);
        let transport = self.transport_session(&ctx);
        let session = match (&named, &transport) {
            (Some(id), _) => SessionRef::Named(id),
            (None, Some(id)) => SessionRef::Transport(id),
            (None, None) => SessionRef::Fresh,
        };
        let session_id = named.clone().or_else(|| transport.clone());
        let tenant = self.tenant(&ctx);
        // Admitted before anything is computed for the request and held
        // until its answer is built (`Host::admit`): mapping the arguments,
        // a saved batch's parameter schema, the plan, a trace and output.xml
        // all run within the tenant's concurrency limit.
        let admission = match self.host.admit(&tenant) {
            Ok(admission) => admission,
            Err(error) => {
                let report = Report::rejected(
                    new_batch_id(),
                    session_id,
                    dialect.entry_count(&args),
                    error,
                );
                return render(
                    dialect.as_ref(),
                    &args,
                    &report,
                    self.host.config().mcp.result_text,
                );
            }
        };
        // `dry_run` belongs to the host, not to any dialect's arguments: taken
        // out before the dialect maps them, put on the batch it maps them to.
        let mut args = args;
        let options = HostOptions::take(
            &mut args,
            saved || BATCH_TOOLS.contains(&dialect.name()),
            dialect.name() == RF_OUTPUT_TOOL,
        );
        let mut generic = None;
        let mapped = match &options {
            Ok(options) => {
                // Inline for the built-in dialects: `resume_batch` keys its
                // claim by where the arguments live, so they must not move
                // between mapping and rendering.
                let mapped = if saved {
                    let (mapped, returned) = map_saved_arguments(dialect, args, &tenant).await;
                    args = returned;
                    mapped
                } else {
                    dialect.to_batch(&args, tenant.catalog(), tenant.limits())
                };
                mapped.map(|mut batch| {
                    if options.dry_run
                        && let Some(obj) = batch.as_object_mut()
                    {
                        obj.insert("dry_run".into(), Value::Bool(true));
                    }
                    batch
                })
            }
            Err(problems) => Err(problems.clone()),
        };
        let options = options.unwrap_or_default();
        let report = match mapped {
            Ok(batch) => {
                #[allow(deprecated)]
                let min_level = *self.log_level.lock().unwrap_or_else(|e| e.into_inner());
                let progress =
                    Notifier::start(ctx.peer.clone(), ctx.meta.get_progress_token(), min_level);
                let observer: &dyn Observer = match &progress {
                    Some(sink) => sink,
                    None => &NoObserver,
                };
                let report = self
                    .host
                    .run_batch(
                        &batch,
                        BatchOptions {
                            tenant: Some(tenant.clone()),
                            session: Some(session),
                            observer,
                            cancel: ctx.ct.clone(),
                            policy: dialect.policy(),
                            admission: Some(&admission),
                        },
                    )
                    .await;
                if let Some(sink) = progress {
                    sink.finish().await;
                }
                generic = Some(batch);
                report
            }
            Err(problems) => Report::invalid(
                new_batch_id(),
                session_id,
                dialect.entry_count(&args),
                problems,
            ),
        };
        let mut result = render(
            dialect.as_ref(),
            &args,
            &report,
            self.host.config().mcp.result_text,
        );
        if report.status != BatchStatus::Planned
            && let Some(batch) = &generic
        {
            if options.output_xml {
                attach_output_xml(&mut result, batch, &report);
            }
            if options.trace {
                self.attach_trace(&mut result, batch, &report, &tenant);
            }
        }
        drop(admission);
        result
    }
}

/// A saved batch's arguments mapped to a generic batch, and the arguments
/// back.
///
/// The mapping validates the arguments against a schema its
/// tenant wrote and copies parameters into its steps: work that grows with
/// what the tenant chose, so it runs on a blocking thread (under the
/// admission the caller holds), never on a worker that serves every
/// tenant's connections.
async fn map_saved_arguments(
    dialect: &Arc<dyn Dialect>,
    args: Map<String, Value>,
    tenant: &Arc<Tenant>,
) -> (
    Result<Value, Vec<stephost_batch::Problem>>,
    Map<String, Value>,
) {
    let dialect = dialect.clone();
    let tenant = tenant.clone();
    let task = tokio::task::spawn_blocking(move || {
        let mapped = dialect.to_batch(&args, tenant.catalog(), tenant.limits());
        (mapped, args)
    });
    match task.await {
        Ok(done) => done,
        Err(e) => {
            tracing::error!(error = %e, "mapping a saved batch's arguments panicked");
            let problem = stephost_batch::Problem {
                step: None,
                label: None,
                field: "(arguments)".into(),
                message: "the host failed while binding the parameters; this is a bug in the host, not in the call".into(),
            };
            (Err(vec![problem]), Map::new())
        }
    }
}

/// The tools that run batches and so take the host's batch options
/// (`dry_run`); a single verb's tool and `resume_batch` do not.
pub(super) const BATCH_TOOLS: &[&str] = &[
    "batch",
    "execute_batch",
    "browser_batch",
    "run_macro",
    "do_steps",
];

/// The tool whose calls can ask for Robot Framework's `output.xml`.
pub(super) const RF_OUTPUT_TOOL: &str = "execute_batch";

impl StepServer {
    /// Keeps the run's trace page for the tenant and names it in the result
    /// (`trace` in the structured content, a line of text).
    fn attach_trace(
        &self,
        result: &mut CallToolResult,
        batch: &Value,
        report: &Report,
        tenant: &Tenant,
    ) {
        let html = stephost_batch::trace::trace_html(batch, report, tenant.limits());
        let bytes = html.len();
        let note = match self.host.traces().put(tenant.id(), &report.batch_id, html) {
            Some(uri) => {
                if let Some(Value::Object(structured)) = result.structured_content.as_mut() {
                    structured.insert("trace".into(), Value::String(uri.clone()));
                }
                format!("trace: {uri} (an HTML page, {bytes} bytes; resources/read returns it)")
            }
            None => {
                format!("trace not kept: {bytes} bytes is more than a tenant's trace store holds")
            }
        };
        result.content.push(ContentBlock::text(note));
    }
}

/// Robot Framework's `output.xml` of the batch, in the structured result
/// (`output_xml`) for the client to save and hand to `rebot`, and named in
/// the text a model reads.
fn attach_output_xml(result: &mut CallToolResult, batch: &Value, report: &Report) {
    let xml = stephost_batch::rf_output::output_xml(batch, report, std::time::SystemTime::now());
    let note = format!(
        "output.xml (Robot Framework, {} bytes) is in the structured result's `output_xml`; `rebot` makes log.html and report.html from it",
        xml.len()
    );
    if let Some(Value::Object(structured)) = result.structured_content.as_mut() {
        structured.insert("output_xml".into(), Value::String(xml));
    }
    result.content.push(ContentBlock::text(note));
}

/// The host's own options of a batch tool call, taken out of its arguments
/// before the dialect sees them (each dialect's format stays its seed's).
#[derive(Debug, Clone, Copy, Default)]
struct HostOptions {
    /// Answer the plan instead of running.
    dry_run: bool,
    /// Keep a trace page of the run, for `resources/read`.
    trace: bool,
    /// Return Robot Framework's output.xml (execute_batch).
    output_xml: bool,
}

impl HostOptions {
    /// Takes the options a tool has out of `args` (a batch tool's, and
    /// `output_xml` when `rf_output`); a non-boolean is a problem naming its
    /// field.
    fn take(
        args: &mut Map<String, Value>,
        batch_tool: bool,
        rf_output: bool,
    ) -> Result<Self, Vec<stephost_batch::Problem>> {
        let mut problems = Vec::new();
        let mut flag = |name: &str, offered: bool| -> bool {
            if !offered {
                return false;
            }
            match args.remove(name) {
                None | Some(Value::Null) | Some(Value::Bool(false)) => false,
                Some(Value::Bool(true)) => true,
                Some(other) => {
                    problems.push(stephost_batch::Problem {
                        step: None,
                        label: None,
                        field: name.into(),
                        message: format!("must be true or false, got {other}"),
                    });
                    false
                }
            }
        };
        let options = Self {
            dry_run: flag("dry_run", batch_tool),
            trace: flag("trace", batch_tool),
            output_xml: flag("output_xml", rf_output),
        };
        if problems.is_empty() {
            Ok(options)
        } else {
            Err(problems)
        }
    }
}

/// A dry run's result, the same for every batch tool: their own shapes
/// report what ran, and nothing did. The host's report, with the plan, is
/// the structured content; a model reads one line per planned step.
fn planned(report: &Report, output_schema: &Value) -> CallToolResult {
    let mut structured = serde_json::to_value(report).unwrap_or(Value::Null);
    fill_required(&mut structured, output_schema, report);
    let mut lines = vec![report.summary()];
    if let Some(plan) = &report.plan {
        lines.push(format!(
            "on_failure: {}; batch timeout {} ms",
            plan.on_failure, plan.timeout_ms
        ));
        for step in &plan.steps {
            let runs = match step.retry.attempts {
                1 => String::new(),
                n => format!(", up to {n} runs"),
            };
            lines.push(format!(
                "[{}] {}.{} {} ({} ms{runs})",
                step.index + 1,
                step.plugin,
                step.verb,
                json_head(&step.input, PLAN_LINE_INPUT_BYTES),
                step.budget.timeout_ms
            ));
            for open in &step.unresolved {
                lines.push(format!("    {} unresolved: {}", open.field, open.reason));
            }
        }
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(lines.join("\n"))]);
    result.structured_content = Some(structured);
    result
}

/// How much of a planned step's input its line of text shows: a model reads
/// the line, the structured result has the input whole, and the text must not
/// double what a plan may hold.
const PLAN_LINE_INPUT_BYTES: usize = 400;

/// `value` as compact JSON, cut after `max` bytes (at a character boundary)
/// with what was left out said; never writes out more than `max` bytes of it.
fn json_head(value: &Value, max: usize) -> String {
    struct Head {
        out: Vec<u8>,
        max: usize,
        cut: bool,
    }
    impl std::io::Write for Head {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = self.max.saturating_sub(self.out.len());
            if buf.len() > room {
                self.out.extend_from_slice(&buf[..room]);
                self.cut = true;
                return Err(std::io::Error::other("cut"));
            }
            self.out.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut head = Head {
        out: Vec::with_capacity(max.min(4096)),
        max,
        cut: false,
    };
    // An error is only the cut.
    let _ = serde_json::to_writer(&mut head, value);
    let mut text = String::from_utf8_lossy(&head.out).into_owned();
    if head.cut {
        // A cut inside a character leaves a replacement character: drop it.
        while text.ends_with('\u{FFFD}') {
            text.pop();
        }
        text.push_str(" ... (cut; the structured result has it whole)");
    }
    text
}

/// Adds what the tool's output schema requires and the host's report does not
/// carry (`summary`, `results`, `error_count`), empty, so clients that check
/// every reply against the schema accept a dry run's.
fn fill_required(structured: &mut Value, schema: &Value, report: &Report) {
    let Some(obj) = structured.as_object_mut() else {
        return;
    };
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    for key in required {
        if obj.contains_key(key) {
            continue;
        }
        let ty = schema
            .pointer(&format!("/properties/{key}/type"))
            .and_then(Value::as_str);
        let empty = match (key, ty) {
            ("summary", _) | (_, Some("string")) => Value::String(report.summary()),
            (_, Some("integer" | "number")) => Value::from(0),
            (_, Some("object")) => Value::Object(Map::new()),
            (_, Some("boolean")) => Value::Bool(false),
            _ => Value::Array(Vec::new()),
        };
        obj.insert(key.to_owned(), empty);
    }
}

fn new_batch_id() -> String {
    format!("b-{}", uuid::Uuid::new_v4().simple())
}

/// The tool result: structured content in the dialect's shape (the full JSON,
/// images reduced to their label), and content a model reads: plain lines,
/// each image after the line naming it. With `[mcp] result_text = "json"` the
/// text is the structured JSON instead, for clients written to parse it.
fn render(
    dialect: &dyn Dialect,
    args: &Map<String, Value>,
    report: &Report,
    text_form: ResultText,
) -> CallToolResult {
    if report.status == BatchStatus::Planned {
        return planned(report, &dialect.output_schema());
    }
    let mut structured = dialect.render_call(args, report);
    let single = dialect.name() != "batch" && report.steps.len() == 1;
    let items = dialect
        .content(report, &structured)
        .unwrap_or_else(|| text::report_content(report, single));
    strip_image_data(&mut structured);
    let mut content = Vec::with_capacity(items.len());
    if text_form == ResultText::Json {
        content.push(ContentBlock::text(structured.to_string()));
    }
    // Consecutive texts are joined: one block of lines reads (and costs) less
    // than many one-line blocks.
    let mut pending = String::new();
    for item in items {
        match item {
            ContentItem::Text { text } if text_form == ResultText::Lines => {
                if !pending.is_empty() {
                    pending.push('\n');
                }
                pending.push_str(&text);
            }
            ContentItem::Text { .. } => {}
            ContentItem::Image {
                mime_type,
                data,
                label,
            } => {
                if text_form == ResultText::Json {
                    pending = format!("[{label}]");
                }
                if !pending.is_empty() {
                    content.push(ContentBlock::text(std::mem::take(&mut pending)));
                }
                content.push(ContentBlock::image(data, mime_type));
            }
        }
    }
    if !pending.is_empty() {
        content.push(ContentBlock::text(pending));
    }
    let mut result = CallToolResult::success(content);
    result.structured_content = Some(structured);
    result.is_error = Some(dialect.is_error(report));
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

/// What `initialize` answers: the same before and after the host is ready.
// `enable_logging` is deprecated by 2026-07-28 but part of 2025-11-25.
#[allow(deprecated)]
pub(super) fn server_info() -> ServerConfig {
    ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .enable_resources()
            .build(),
    )
    .with_server_info(Implementation::new("stephost", env!("CARGO_PKG_VERSION")))
    .with_instructions(INSTRUCTIONS)
}

impl ServerHandler for StepServer {
    fn get_info(&self) -> ServerConfig {
        server_info()
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self.log_level.lock().unwrap_or_else(|e| e.into_inner()) = Some(request.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let tenant = self.tenant(&context);
        let resources = self
            .host
            .traces()
            .list(tenant.id())
            .into_iter()
            .map(|entry| {
                let name = entry
                    .uri
                    .strip_prefix(crate::traces::TRACE_PREFIX)
                    .unwrap_or(&entry.uri)
                    .to_owned();
                let mut resource = Resource::new(entry.uri, format!("trace {name}"))
                    .with_description("The trace page of a batch run with `trace: true`");
                resource.mime_type = Some("text/html".into());
                resource.size = u64::try_from(entry.bytes).ok();
                resource
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let tenant = self.tenant(&context);
        // A trace page is up to 64 MiB and its answer a copy of it: reads are
        // admitted like tool calls, so a tenant's concurrent reads are bounded
        // by its `max_concurrent_batches`.
        let _admission = self.host.admit(&tenant).map_err(|error| {
            McpError::new(
                rmcp::model::ErrorCode(-32000),
                format!("{}: {}", error.code.as_str(), error.message),
                error.details,
            )
        })?;
        match self.host.traces().get(tenant.id(), &request.uri) {
            Some(html) => {
                Ok(
                    ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
                        uri: request.uri,
                        mime_type: Some("text/html".into()),
                        text: html.to_string(),
                        meta: None,
                    }])
                    .into(),
                )
            }
            // SEP-2164: an unknown resource is invalid params, naming its URI.
            None => Err(McpError::invalid_params(
                format!(
                    "no trace `{}` for this client: traces are kept per tenant for an hour (64 per tenant); run the batch again with `trace: true`",
                    request.uri
                ),
                Some(serde_json::json!({"uri": request.uri})),
            )),
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tenant = self.tenant(&context);
        let catalog = self.catalog(&tenant)?;
        let mut saved = None;
        if catalog.serves_saved() {
            if !self
                .listening
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                self.catalogs
                    .listeners()
                    .add(tenant.id(), context.peer.clone());
            }
            let claimed = |name: &str| catalog.owner(name);
            let tool_of =
                |saved: &stephost_batch::saved::SavedBatch| saved_tools::tool_of(saved, &tenant);
            // Built once per change of the tenant's saved batches; each list
            // copies pointers to the shared schemas.
            match self.host.saved().tools(&tenant, &claimed, &tool_of).await {
                Ok(listed) => saved = Some(listed),
                // The tenant's other tools stay usable; list_batches tells it
                // why none of its saved batches is offered, the log names the
                // file for the operator.
                Err(error) => {
                    tracing::warn!(tenant = tenant.id(), %error, "saved batches not listed");
                }
            }
        }
        // Paced per tenant, by size: each answer is serialized whole, so
        // lists asked for faster than the rate would pile up in memory and
        // take CPU that other tenants' calls need.
        let per_minute = self.host.config().mcp.tool_lists_per_minute;
        let turns = saved.as_ref().map_or(1, |listed| {
            u32::try_from(listed.bytes.div_ceil(1024 * 1024)).unwrap_or(u32::MAX)
        });
        if let Err(refused) = self
            .catalogs
            .listeners()
            .pace(tenant.id(), per_minute, turns)
            .await
        {
            return Err(McpError::new(
                rmcp::model::ErrorCode(-32000),
                refused.to_string(),
                Some(serde_json::json!({
                    "limit": "mcp.tool_lists_per_minute",
                    "value": refused.per_minute,
                    "retry_after_s": refused.retry_after_s,
                })),
            ));
        }
        let mut tools = catalog.tools().to_vec();
        if let Some(listed) = saved {
            tools.extend(listed.tools.iter().cloned());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tenant = self.tenant(&context);
        let catalog = self.catalog(&tenant)?.clone();
        let args = request.arguments.unwrap_or_default();
        let (dialect, saved) = match catalog.get(&request.name) {
            Some(dialect) => (dialect.clone(), false),
            None if catalog.serves_saved() && saved_tools::is_own(&request.name) => {
                // Saving checks and plans the batch: the tenant's work, admitted as a batch.
                let _admission = match self.host.admit(&tenant) {
                    Ok(admission) => admission,
                    Err(error) => {
                        let mut result = rmcp::model::CallToolResult::error(vec![
                            rmcp::model::ContentBlock::text(format!(
                                "{}: {}",
                                error.code.as_str(),
                                error.message
                            )),
                        ]);
                        result.structured_content = Some(serde_json::json!({
                            "ok": false,
                            "errors": [{"field": "(request)", "code": error.code.as_str(), "message": error.message}],
                        }));
                        return Ok(result.into());
                    }
                };
                let (result, changed) =
                    saved_tools::call(&self.host, &tenant, &catalog, &request.name, args).await;
                if changed {
                    self.catalogs.listeners().changed(tenant.id()).await;
                }
                return Ok(result.into());
            }
            None => {
                let claimed = |name: &str| catalog.owner(name);
                let found = if catalog.serves_saved() {
                    self.host
                        .saved()
                        .get(&tenant, &request.name, &claimed)
                        .await
                } else {
                    None
                };
                match found {
                    Some(saved) => (saved as Arc<dyn Dialect>, true),
                    None => {
                        return Err(McpError::invalid_params(
                            format!(
                                "unknown tool `{}`; tools/list shows the tools on offer",
                                request.name
                            ),
                            None,
                        ));
                    }
                }
            }
        };
        if let Some(id) = args.get("session_id")
            && !id.is_string()
        {
            return Err(McpError::invalid_params(
                format!("`session_id` must be a string, got {id}"),
                None,
            ));
        }
        Ok(self.call(&dialect, args, context, saved).await.into())
    }
}
