//! Command-line front: `stephost run`, `stephost plugins`.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use serde_json::Value;
use stephost::batch::{BatchStatus, Observer, PlannedStep, StepReport, StepStatus};
use stephost::config::Config;
use stephost::mcp::StartingHost;
use stephost::tenancy::TenantsFile;
use stephost::{BatchOptions, Host};

use crate::plugin_kit::{self, PluginCommand};

/// A WebAssembly-plugin step host: validated, time-boxed batches of tool calls.
#[derive(Parser)]
#[command(name = "stephost", version, about)]
struct Cli {
    #[command(flatten)]
    host: HostArgs,
    #[command(subcommand)]
    command: Command,
}

/// What the commands that start a host take, before or after the command name
/// (`stephost --config F serve` and `stephost serve --config F` both work).
/// Not on `hash-token`, which starts none.
#[derive(clap::Args, Default, Clone)]
pub(crate) struct HostArgs {
    /// Configuration file (TOML). Without it, built-in defaults apply.
    #[arg(long, env = "STEPHOST_CONFIG")]
    config: Option<PathBuf>,
    /// Also load this component, or the `.wasm` components in this directory
    /// (repeatable).
    #[arg(long = "plugins", value_name = "PATH")]
    plugin_dirs: Vec<PathBuf>,
    /// Browser for the browser plugin: chromium (default) or firefox. Overrides
    /// `[browser] kind` in the config.
    #[arg(long, env = "STEPHOST_BROWSER", value_name = "KIND")]
    browser: Option<stephost::runtime::BrowserKind>,
}

impl HostArgs {
    /// These, with `more` (given after the command name) added or winning.
    fn merged(&self, more: &HostArgs) -> HostArgs {
        let mut plugin_dirs = self.plugin_dirs.clone();
        plugin_dirs.extend(more.plugin_dirs.iter().cloned());
        HostArgs {
            config: more.config.clone().or_else(|| self.config.clone()),
            plugin_dirs,
            browser: more.browser.or(self.browser),
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run a batch file (`-` reads stdin). The report JSON goes to stdout, progress
    /// to stderr. Exit 0: all steps passed; 1: a step failed or timed out; 2: the
    /// batch is invalid and nothing ran.
    Run {
        /// Batch JSON file, or `-` for stdin.
        file: String,
        /// Session id (for state such as `count`); a fresh session by default.
        #[arg(long)]
        session: Option<String>,
        /// Print the report on one line instead of indented.
        #[arg(long)]
        compact: bool,
        /// No progress lines on stderr.
        #[arg(long, short)]
        quiet: bool,
        /// Validate and check the batch and print its plan (each step's input
        /// resolved as far as it can be, its budget and retry policy) without
        /// running anything: status `planned`, exit 0.
        #[arg(long)]
        dry_run: bool,
        /// Also write Robot Framework's output.xml of the run to FILE (one
        /// test, a keyword per step), for `rebot` to make log.html and
        /// report.html from.
        #[arg(long, value_name = "FILE")]
        rf_output: Option<PathBuf>,
        /// Also write the run's trace to FILE: one self-contained HTML page
        /// with a timeline of the steps and each step's input, value, logs,
        /// error, runs, recovery, budget and images.
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
        #[command(flatten)]
        host: HostArgs,
    },
    /// Serve MCP: over stdio by default, or streamable HTTP at `http://ADDR/mcp`.
    Serve {
        /// Listen for streamable HTTP on this address (e.g. 127.0.0.1:8765; port 0
        /// picks a free port, printed on stderr).
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Tenants file (TOML): every HTTP request then needs
        /// `Authorization: Bearer <token>` of a listed tenant. See
        /// examples/tenants.toml.
        #[arg(long, value_name = "FILE", requires = "http")]
        tenants: Option<PathBuf>,
        /// Plugins whose tools are served, comma-separated (browser, desktop,
        /// rf, testkit, or a plugin from --plugins; `saved` for save_batch and
        /// the saved batches); `batch` is always served and runs steps of
        /// every plugin. Overrides `[mcp] tools`. Default: every plugin but
        /// testkit, desktop only with a reachable X display, and `saved`.
        #[arg(long, value_name = "LIST", value_delimiter = ',')]
        tools: Option<Vec<String>>,
        #[command(flatten)]
        host: HostArgs,
    },
    /// Print the sha256 of an API token, for a tenants file's `token_sha256`.
    HashToken {
        /// The token (`-` reads it from stdin, keeping it out of shell history).
        token: String,
    },
    /// Write, check and test plugins: `plugin new`, `plugin check`, `plugin test`.
    Plugin {
        #[command(subcommand)]
        action: crate::plugin_kit::PluginCommand,
    },
    /// List plugins and their verbs.
    Plugins {
        /// Print JSON with the full input schemas.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        host: HostArgs,
    },
}

/// Exit code for a host that could not start (bad config, bad plugin).
pub(crate) const EXIT_HOST: u8 = 3;

pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("stephost: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_HOST);
        }
    };
    let code = runtime.block_on(async_main(cli));
    // Why a timeout: a stdio server stopped by a signal still has tokio's stdin
    // reader blocked in read(2) on a thread of its own, which would hold the
    // shutdown until the client closes the pipe.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    code
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STEPHOST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// The host's config and tenants, from the command line and the files it names:
/// what can be wrong before any plugin is compiled.
fn host_config(cli: &Cli) -> anyhow::Result<(Config, Option<TenantsFile>)> {
    let args = match &cli.command {
        Command::Run { host, .. } | Command::Serve { host, .. } | Command::Plugins { host, .. } => {
            cli.host.merged(host)
        }
        Command::Plugin {
            action: PluginCommand::Check { host, .. } | PluginCommand::Test { host, .. },
        } => cli.host.merged(host),
        Command::HashToken { .. }
        | Command::Plugin {
            action: PluginCommand::New { .. },
        } => cli.host.clone(),
    };
    let mut config = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    config.plugins.dirs.extend(args.plugin_dirs.iter().cloned());
    if let Some(kind) = args.browser {
        config.browser.kind = kind;
    }
    if let Command::Serve {
        tools: Some(tools), ..
    } = &cli.command
    {
        // Spaces around the commas are allowed; `--tools ""` serves `batch` only.
        config.mcp.tools = Some(
            tools
                .iter()
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty())
                .collect(),
        );
    }
    let tenants = match &cli.command {
        Command::Serve {
            tenants: Some(path),
            ..
        } => Some(TenantsFile::load(path)?),
        _ => None,
    };
    Ok((config, tenants))
}

async fn async_main(cli: Cli) -> ExitCode {
    if let Command::HashToken { token } = &cli.command {
        return hash_token(token);
    }
    if let Command::Plugin {
        action: PluginCommand::New { name, lang, dir },
    } = &cli.command
    {
        return plugin_kit::new(name, *lang, dir.as_deref());
    }
    // Listening starts before the host does, so a SIGTERM during start-up also
    // ends the server in order.
    let shutdown = tokio_util::sync::CancellationToken::new();
    if matches!(cli.command, Command::Serve { .. }) {
        let on_signal = shutdown.clone();
        let signals = ShutdownSignals::install();
        tokio::spawn(async move {
            signals.recv().await;
            on_signal.cancel();
        });
    }
    let (config, tenants) = match host_config(&cli) {
        Ok(prepared) => prepared,
        Err(e) => {
            eprintln!("stephost: {e:#}");
            return ExitCode::from(EXIT_HOST);
        }
    };
    if let Command::Plugin { action } = &cli.command {
        return match action {
            PluginCommand::Check { file, json, .. } => plugin_kit::check(config, file, *json).await,
            PluginCommand::Test {
                file, cases, json, ..
            } => plugin_kit::test(config, file, cases, *json).await,
            PluginCommand::New { .. } => ExitCode::SUCCESS,
        };
    }
    if let Command::Serve { http: None, .. } = &cli.command {
        // Over stdio the handshake does not wait for the plugins to compile.
        let max_line_bytes = config.server.http.max_body_bytes;
        let drain = std::time::Duration::from_secs(config.server.drain_timeout_s);
        let starting = StartingHost::spawn(Host::start_with_tenants(config, tenants));
        // Boxed: the serving future nested in this one is too deep for layout.
        return Box::pin(serve_stdio(starting, max_line_bytes, drain, shutdown))
            .await
            .unwrap_or_else(|e| {
                eprintln!("stephost: {e:#}");
                ExitCode::from(2)
            });
    }
    let host = match Host::start_with_tenants(config, tenants).await {
        Ok(host) => host,
        Err(e) => {
            eprintln!("stephost: {e:#}");
            return ExitCode::from(EXIT_HOST);
        }
    };
    let result = match &cli.command {
        Command::Run {
            file,
            session,
            compact,
            quiet,
            dry_run,
            rf_output,
            trace,
            ..
        } => {
            let how = RunHow {
                compact: *compact,
                quiet: *quiet,
                dry_run: *dry_run,
                rf_output: rf_output.as_deref(),
                trace: trace.as_deref(),
            };
            run(&host, file, session.as_deref(), how).await
        }
        Command::Plugins { json, .. } => plugins(&host, *json),
        // Over HTTP the host is started before the listener opens.
        Command::Serve {
            http: Some(addr), ..
        } => {
            match stephost::mcp::serve_http(host, *addr, shutdown).await {
                // A catalog that cannot be built (two tools claiming one name)
                // is the host failing to start, as over stdio: exit 3, not 2.
                Err(e) if e.downcast_ref::<stephost::mcp::CatalogError>().is_some() => {
                    eprintln!("stephost: {e:#}");
                    return ExitCode::from(EXIT_HOST);
                }
                served => served.map(|()| ExitCode::SUCCESS),
            }
        }
        // Served above, before the host was started.
        Command::Serve { http: None, .. } => Ok(ExitCode::SUCCESS),
        Command::HashToken { .. } | Command::Plugin { .. } => Ok(ExitCode::SUCCESS),
    };
    result.unwrap_or_else(|e| {
        eprintln!("stephost: {e:#}");
        ExitCode::from(2)
    })
}

struct Progress;

impl Observer for Progress {
    fn step_started(&self, step: &PlannedStep, total: usize) {
        eprintln!("[{}/{total}] {} ...", step.index() + 1, step.display_name());
    }

    fn step_finished(&self, step: &StepReport, _done: usize, total: usize) {
        let status = match step.status {
            StepStatus::Passed => "passed",
            StepStatus::Failed => "FAILED",
            StepStatus::TimedOut => "TIMED OUT",
            StepStatus::Cancelled => "cancelled",
        };
        let mut line = format!(
            "[{}/{total}] {} {status} in {:.1} ms",
            step.index + 1,
            step.label
                .clone()
                .unwrap_or_else(|| format!("{}.{}", step.plugin, step.verb)),
            step.time_ms
        );
        if step.attempts > 1 {
            line.push_str(&format!(" after {} runs", step.attempts));
        }
        if let Some(error) = &step.error {
            line.push_str(&format!(": {}: {}", error.code, error.message));
        }
        eprintln!("{line}");
    }
}

/// How `run` prints, whether it runs at all, and what else it writes.
struct RunHow<'a> {
    compact: bool,
    quiet: bool,
    dry_run: bool,
    rf_output: Option<&'a std::path::Path>,
    trace: Option<&'a std::path::Path>,
}

async fn run(
    host: &Host,
    file: &str,
    session: Option<&str>,
    RunHow {
        compact,
        quiet,
        dry_run,
        rf_output,
        trace,
    }: RunHow<'_>,
) -> anyhow::Result<ExitCode> {
    let text = if file == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the batch from stdin")?;
        text
    } else {
        std::fs::read_to_string(file).with_context(|| format!("cannot read batch file {file}"))?
    };
    let mut request: Value =
        serde_json::from_str(&text).with_context(|| format!("{file} is not valid JSON"))?;
    if dry_run && let Some(batch) = request.as_object_mut() {
        batch.insert("dry_run".into(), Value::Bool(true));
    }
    let observer = Progress;
    let quiet_observer = stephost::batch::NoObserver;
    let opts = BatchOptions {
        session: session.map(stephost::session::SessionRef::Named),
        observer: if quiet { &quiet_observer } else { &observer },
        ..BatchOptions::default()
    };
    let report = host.run_batch(&request, opts).await;
    if let Some(path) = rf_output
        && report.status != BatchStatus::Planned
    {
        let xml =
            stephost::batch::rf_output::output_xml(&request, &report, std::time::SystemTime::now());
        std::fs::write(path, xml)
            .with_context(|| format!("cannot write the output.xml {}", path.display()))?;
    }
    if let Some(path) = trace
        && report.status != BatchStatus::Planned
    {
        let limits = host.tenants().local().limits();
        let html = stephost::batch::trace::trace_html(&request, &report, limits);
        std::fs::write(path, html)
            .with_context(|| format!("cannot write the trace {}", path.display()))?;
    }
    let json = if compact {
        serde_json::to_string(&report)
    } else {
        serde_json::to_string_pretty(&report)
    }
    .context("cannot render the report")?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{json}").context("cannot write the report")?;
    if !quiet {
        eprintln!("{}", report.summary());
        for problem in &report.errors {
            eprintln!("  - {problem}");
        }
    }
    Ok(match report.status {
        BatchStatus::Passed | BatchStatus::Planned => ExitCode::SUCCESS,
        BatchStatus::Invalid | BatchStatus::Rejected => ExitCode::from(2),
        _ => ExitCode::from(1),
    })
}

fn plugins(host: &Host, json: bool) -> anyhow::Result<ExitCode> {
    let infos: Vec<_> = host
        .registry()
        .plugins()
        .map(|p| p.info().clone())
        .collect();
    let mut stdout = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string_pretty(&infos).context("cannot render plugins")?;
        writeln!(stdout, "{text}")?;
        return Ok(ExitCode::SUCCESS);
    }
    for info in &infos {
        writeln!(stdout, "{} {} ({})", info.name, info.version, info.source)?;
        writeln!(stdout, "  {}", info.description)?;
        let width = info.verbs.iter().map(|v| v.name.len()).max().unwrap_or(0);
        for verb in &info.verbs {
            let acts = if verb.acts_on_world { "acts" } else { "pure" };
            let first_line = verb.description.lines().next().unwrap_or("");
            writeln!(stdout, "  {:width$}  {acts}  {first_line}", verb.name)?;
        }
        writeln!(stdout)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `serve` over stdio while the host starts beside it: a host that cannot start
/// ends the process with [`EXIT_HOST`], as before the handshake.
async fn serve_stdio(
    starting: StartingHost,
    max_line_bytes: usize,
    drain: std::time::Duration,
    shutdown: tokio_util::sync::CancellationToken,
) -> anyhow::Result<ExitCode> {
    // On a signal, batches in flight get the drain deadline while the
    // transport keeps running, so their answers are still written.
    let drained = async {
        shutdown.cancelled().await;
        if let Some(host) = starting.ready() {
            host.drain(drain).await;
        }
        // Let the last answer reach stdout.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let failed = async {
        match starting.wait().await {
            Err(why) => why,
            Ok(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        served = stephost::mcp::serve_stdio(starting.clone(), max_line_bytes) => {
            if let Err(e) = served {
                // No client (stdin closed before the handshake): the host's own
                // failure, if it has one, is what the operator needs to see.
                if let Err(why) = starting.wait().await {
                    eprintln!("stephost: {why}");
                    return Ok(ExitCode::from(EXIT_HOST));
                }
                return Err(e);
            }
        }
        why = failed => {
            eprintln!("stephost: {why}");
            return Ok(ExitCode::from(EXIT_HOST));
        }
        () = drained => {}
    }
    if let Some(host) = starting.ready() {
        host.sessions().clear();
    }
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C and SIGTERM (what `docker stop` and Kubernetes send): either shuts
/// the server down in order, so running requests end, sessions drop, browser
/// sessions are deleted and the drivers stopped instead of leaving browsers
/// behind.
struct ShutdownSignals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl ShutdownSignals {
    fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let term = signal(SignalKind::terminate())
                .inspect_err(|e| {
                    tracing::warn!(
                        "cannot listen for SIGTERM ({e}); only Ctrl-C shuts down in order"
                    );
                })
                .ok();
            Self { term }
        }
        #[cfg(not(unix))]
        Self {}
    }

    async fn recv(mut self) {
        #[cfg(unix)]
        match self.term.as_mut() {
            Some(term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        tracing::info!("shutting down");
    }
}

fn hash_token(token: &str) -> ExitCode {
    let token = if token == "-" {
        let mut text = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut text) {
            eprintln!("stephost: cannot read the token from stdin: {e}");
            return ExitCode::from(2);
        }
        text.trim().to_owned()
    } else {
        token.to_owned()
    };
    if token.is_empty() {
        eprintln!("stephost: the token is empty");
        return ExitCode::from(2);
    }
    println!("{}", stephost::tenancy::hash_token(&token));
    ExitCode::SUCCESS
}
