//! Host configuration: limits, engine sizing and where plugins come from.
//!
//! Every field has a default, so the host runs with no file at all. A file is TOML
//! and strict: unknown keys are errors, so a typo never silently keeps a default.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
pub use stephost_batch::Limits;
pub use stephost_runtime::{EngineConfig, PluginsConfig};

/// Mebibyte.
const MIB: u64 = 1024 * 1024;

/// The whole host configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Per-step and per-batch limits.
    pub limits: Limits,
    /// Engine and pool sizing.
    pub engine: EngineConfig,
    /// Which plugins load.
    pub plugins: PluginsConfig,
    /// Sessions.
    pub sessions: SessionsConfig,
    /// The MCP front.
    pub mcp: McpConfig,
    /// The desktop capabilities (blocked key combos, pointer pacing).
    pub desktop: stephost_runtime::DesktopConfig,
    /// The browser behind the `webdriver` capability.
    pub browser: stephost_runtime::BrowserConfig,
    /// Serving many clients: admission and identity.
    pub server: ServerConfig,
    /// Batches saved as tools (`save_batch`).
    pub saved_batches: SavedBatchesConfig,
}

/// Saved batches: where they are kept and how many a tenant may keep.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SavedBatchesConfig {
    /// Offer `save_batch`, `list_batches`, `delete_batch` and the saved
    /// batches' own tools.
    pub enabled: bool,
    /// Where each tenant's saved batches are kept (a JSON file per tenant).
    /// Default: `saved-batches` in the data directory (`$STEPHOST_DATA_DIR`,
    /// else `$XDG_DATA_HOME/stephost`, else `~/.local/share/stephost`).
    pub dir: Option<PathBuf>,
    /// Saved batches one tenant may keep.
    pub max_per_tenant: usize,
    /// Largest saved batch, as JSON text in bytes.
    pub max_bytes: usize,
    /// What one tenant's saved batches may add to its `tools/list` in all,
    /// in bytes: each tool's name, description and schemas as JSON. Checked
    /// at `save_batch`, and when a tenant's file is loaded.
    pub max_list_bytes: usize,
}

impl Default for SavedBatchesConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            dir: None,
            max_per_tenant: 100,
            max_bytes: 256 * 1024,
            max_list_bytes: 1024 * 1024,
        }
    }
}

/// Server-wide settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Batches running at once across all tenants; past it a batch is refused
    /// with `busy` and a retry hint rather than queued.
    pub max_concurrent_batches: usize,
    /// Batches one tenant may run at once, unless its own limit says otherwise.
    pub max_concurrent_batches_per_tenant: usize,
    /// Batches one tenant may start per minute, unless its own limit says otherwise.
    pub batches_per_minute: u32,
    /// This instance's stable name, minted into session ids so a proxy can route
    /// a session to the instance that holds it. Default: `$STEPHOST_INSTANCE`,
    /// else `local`.
    pub instance: Option<String>,
    /// sha256 (hex) of the operator token `/metrics` requires. Without it,
    /// `/metrics` is open when no tenants file is in force and refused when
    /// one is (it names tenants and their activity).
    pub metrics_token_sha256: Option<String>,
    /// How long, after SIGTERM or SIGINT, batches in flight may run on before
    /// they are cancelled, in seconds. New requests get 503 meanwhile.
    pub drain_timeout_s: u64,
    /// Connection-level limits of the HTTP front.
    pub http: HttpLimits,
}

/// Connection-level limits of the streamable HTTP front.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HttpLimits {
    /// Time a client has to send a request's complete headers, in ms.
    pub header_read_timeout_ms: u64,
    /// A connection with no request in flight is closed after this long, in seconds.
    pub idle_timeout_s: u64,
    /// Open connections across all peers; past it new connections are closed at once.
    pub max_connections: usize,
    /// Open connections from one peer address.
    pub max_connections_per_peer: usize,
    /// Largest request body (one JSON-RPC message), in bytes; also the longest
    /// line the stdio front reads.
    pub max_body_bytes: usize,
    /// What the requests of one tenant in flight may cost once parsed: each
    /// JSON body is charged its bytes plus an estimate of what its values
    /// take in memory, from headers read to answer sent; past it, 503.
    pub max_inflight_bytes_per_tenant: u64,
    /// The same, over all tenants together.
    pub max_inflight_bytes: u64,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            header_read_timeout_ms: 10_000,
            idle_timeout_s: 60,
            max_connections: 1_024,
            max_connections_per_peer: 256,
            max_body_bytes: 4 * MIB as usize,
            max_inflight_bytes_per_tenant: 256 * MIB,
            max_inflight_bytes: 1024 * MIB,
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_concurrent_batches: 256,
            max_concurrent_batches_per_tenant: 64,
            batches_per_minute: 6_000,
            instance: None,
            metrics_token_sha256: None,
            drain_timeout_s: 30,
            http: HttpLimits::default(),
        }
    }
}

impl ServerConfig {
    /// The instance name in force.
    pub fn instance_name(&self) -> String {
        self.instance
            .clone()
            .or_else(|| std::env::var("STEPHOST_INSTANCE").ok())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "local".to_owned())
    }
}

/// Session settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SessionsConfig {
    /// A session unused for this long is dropped with its plugin instances, in seconds.
    pub idle_timeout_s: u64,
    /// Most live sessions, across all tenants.
    pub max_sessions: usize,
    /// Most live sessions of one tenant whose own `limits.max_sessions` is
    /// unset. Default: `max_sessions` shared evenly among the tenants, so no
    /// tenant reaching its cap can fill the host's.
    pub max_sessions_per_tenant: Option<usize>,
    /// A session minted for a call that named none is dropped after this long
    /// unused, in seconds, until a call names its id (then `idle_timeout_s`
    /// applies). Stateless clients that never pass the id back leave nothing
    /// behind for long.
    pub unclaimed_idle_timeout_s: u64,
    /// Most live processes one session may have: the RF library servers the
    /// host runs for it (two processes each, a supervisor and the library),
    /// and everything those start (`Start Process`, a browser and its
    /// driver), counted before each one the host or a library starts.
    pub max_processes_per_session: usize,
    /// Most live processes of all of one tenant's sessions together.
    pub max_processes_per_tenant: usize,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        Self {
            idle_timeout_s: 1_800,
            max_sessions: 1_000,
            max_sessions_per_tenant: None,
            unclaimed_idle_timeout_s: 60,
            max_processes_per_session: stephost_runtime::ProcessCaps::default().per_session,
            max_processes_per_tenant: stephost_runtime::ProcessCaps::default().per_tenant,
        }
    }
}

/// MCP front settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// Offer one tool per plugin verb besides the batch tools.
    pub verb_tools: bool,
    /// Tool names by `plugin.verb`, to resolve two plugins claiming one name.
    pub tool_names: std::collections::BTreeMap<String, String>,
    /// The plugins whose tools are served (`browser`, `desktop`, `rf`,
    /// `testkit`, or a third-party plugin's name): each brings its verb tools
    /// and its domain's batch tools; `batch` is always served and runs steps of
    /// every loaded plugin whatever this says. `serve --tools` overrides it.
    /// Unset: every loaded plugin except `testkit`, and `desktop` only when an
    /// X display is reachable at start.
    pub tools: Option<Vec<String>>,
    /// Extra `Host` header values the HTTP server accepts (it accepts loopback
    /// names and the bound address by default, against DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// Browser origins (`scheme://host:port`, `:*` for any port) whose requests
    /// the HTTP server accepts besides loopback ones; a request with any other
    /// `Origin` header gets 403. Requests without `Origin` (non-browser
    /// clients) are not affected.
    pub allowed_origins: Vec<String>,
    /// What a tool result's text content says: `lines` (plain lines for a
    /// model to read; the structured content has the JSON) or `json` (the
    /// structured JSON as text, for clients written to parse the text).
    pub result_text: ResultText,
    /// `tools/list` requests one tenant may make a minute; a second's worth
    /// are answered at once, the rest wait their turn, and one that would
    /// wait more than 10 s is refused.
    pub tool_lists_per_minute: u32,
}

/// The form of a tool result's text content.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ResultText {
    /// Plain lines: a summary, then the steps with their values as text.
    #[default]
    Lines,
    /// The structured result's JSON.
    Json,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            verb_tools: true,
            tool_names: Default::default(),
            tools: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            result_text: ResultText::default(),
            tool_lists_per_minute: 600,
        }
    }
}

/// A configuration file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML for this schema.
    #[error("config file {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: Box<toml::de::Error>,
    },
    /// A value is out of range.
    #[error("config: `{field}` {problem}")]
    Invalid {
        /// Dotted key.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
}

impl Config {
    /// Reads and validates a TOML file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text).map_err(|e| match e {
            ConfigError::Parse { source, .. } => ConfigError::Parse {
                path: path.to_owned(),
                source,
            },
            other => other,
        })
    }

    /// Parses and validates TOML text.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|source| ConfigError::Parse {
            path: PathBuf::from("<inline>"),
            source: Box::new(source),
        })?;
        config.canonicalize();
        config.validate()?;
        Ok(config)
    }

    /// Puts paths that are compared later into canonical form (granted folders),
    /// so that [`Config::validate`] sees what the host will use.
    pub fn canonicalize(&mut self) {
        for grant in self.plugins.grants.values_mut() {
            grant.canonicalize_folders();
        }
    }

    /// Checks ranges and relations between values.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let l = &self.limits;
        let e = &self.engine;
        let invalid = |field, problem: String| Err(ConfigError::Invalid { field, problem });
        if l.memory_mib == 0 || l.memory_mib > e.max_memory_mib {
            return invalid(
                "limits.memory_mib",
                format!(
                    "must be between 1 and engine.max_memory_mib ({}), got {}",
                    e.max_memory_mib, l.memory_mib
                ),
            );
        }
        if e.max_memory_mib == 0 || e.max_memory_mib > 4096 {
            return invalid(
                "engine.max_memory_mib",
                format!("must be between 1 and 4096, got {}", e.max_memory_mib),
            );
        }
        // Each slot's async stack has its own guard-page mapping; past ~30,000
        // slots Linux's default vm.max_map_count (65,530) refuses the pool.
        if e.max_instances == 0 || e.max_instances > 30_000 {
            return invalid(
                "engine.max_instances",
                format!("must be between 1 and 30000, got {}", e.max_instances),
            );
        }
        if let Some(n) = e.max_instances_per_tenant
            && (n == 0 || n > e.max_instances)
        {
            return invalid(
                "engine.max_instances_per_tenant",
                format!(
                    "must be between 1 and engine.max_instances ({}), got {n}",
                    e.max_instances
                ),
            );
        }
        if !(100..=100_000).contains(&e.epoch_tick_us) {
            return invalid(
                "engine.epoch_tick_us",
                format!("must be between 100 and 100000, got {}", e.epoch_tick_us),
            );
        }
        if l.fuel_per_step == 0 {
            return invalid("limits.fuel_per_step", "must be at least 1".into());
        }
        for (field, value, max, max_name) in [
            (
                "limits.step_timeout_ms",
                l.step_timeout_ms,
                l.max_step_timeout_ms,
                "limits.max_step_timeout_ms",
            ),
            (
                "limits.batch_timeout_ms",
                l.batch_timeout_ms,
                l.max_batch_timeout_ms,
                "limits.max_batch_timeout_ms",
            ),
        ] {
            if value == 0 || value > max {
                return invalid(
                    field,
                    format!("must be between 1 and {max_name} ({max}), got {value}"),
                );
            }
        }
        if l.max_steps_per_batch == 0 {
            return invalid("limits.max_steps_per_batch", "must be at least 1".into());
        }
        for (plugin, grant) in &self.plugins.grants {
            if let Err(e) = grant.allow_list() {
                return Err(ConfigError::Invalid {
                    field: "plugins.grants",
                    problem: format!("[plugins.grants.{plugin}] http: {e}"),
                });
            }
            if let Err(e) = grant.check_folders() {
                return Err(ConfigError::Invalid {
                    field: "plugins.grants",
                    problem: format!("[plugins.grants.{plugin}] folders: {e}"),
                });
            }
            if let Err(e) = grant.rf_libraries.check() {
                return Err(ConfigError::Invalid {
                    field: "plugins.grants",
                    problem: format!("[plugins.grants.{plugin}.rf_libraries] {e}"),
                });
            }
        }
        if let Err(e) = self.desktop.validate() {
            return invalid("desktop.blocked_keys", e.to_string());
        }
        let d = &self.desktop;
        for (field, value) in [
            ("desktop.pointer_settle_ms", d.pointer_settle_ms),
            ("desktop.button_hold_ms", d.button_hold_ms),
            ("desktop.click_interval_ms", d.click_interval_ms),
        ] {
            // Pacing is per click; a second would make every click sequence crawl.
            if value > 1_000 {
                return invalid(field, format!("must be between 0 and 1000, got {value}"));
            }
        }
        if let Err(problem) = self.browser.validate() {
            return invalid("browser", problem);
        }
        let srv = &self.server;
        if srv.max_concurrent_batches == 0
            || srv.max_concurrent_batches_per_tenant == 0
            || srv.batches_per_minute == 0
        {
            return invalid(
                "server",
                "max_concurrent_batches, max_concurrent_batches_per_tenant and batches_per_minute must be at least 1".into(),
            );
        }
        let instance = srv.instance_name();
        if instance.len() > 63
            || !instance
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return invalid(
                "server.instance",
                format!("`{instance}` must be at most 63 characters of A-Z a-z 0-9 - _"),
            );
        }
        if l.max_attempts == 0 {
            return invalid("limits.max_attempts", "must be at least 1".into());
        }
        if l.max_input_bytes == 0 {
            return invalid("limits.max_input_bytes", "must be at least 1".into());
        }
        // Inputs within the depth limit still meet recursive code (serialization, schema
        // checks, drop); the cap keeps their stack use far below a thread's.
        const MAX_INPUT_DEPTH: usize = 1_024;
        if !(1..=MAX_INPUT_DEPTH).contains(&l.max_input_depth) {
            return invalid(
                "limits.max_input_depth",
                format!(
                    "must be between 1 and {MAX_INPUT_DEPTH}, got {}",
                    l.max_input_depth
                ),
            );
        }
        self.validate_serving()
    }

    /// Checks the session and HTTP front settings.
    fn validate_serving(&self) -> Result<(), ConfigError> {
        let invalid = |field, problem: String| Err(ConfigError::Invalid { field, problem });
        let sessions = &self.sessions;
        if sessions.max_sessions == 0 {
            return invalid("sessions.max_sessions", "must be at least 1".into());
        }
        let saved = &self.saved_batches;
        if !(1..=10_000).contains(&saved.max_per_tenant) {
            return invalid(
                "saved_batches.max_per_tenant",
                format!("must be between 1 and 10000, got {}", saved.max_per_tenant),
            );
        }
        if !(1024..=16 * MIB as usize).contains(&saved.max_bytes) {
            return invalid(
                "saved_batches.max_bytes",
                format!("must be between 1024 and 16777216, got {}", saved.max_bytes),
            );
        }
        if !(1024..=64 * MIB as usize).contains(&saved.max_list_bytes) {
            return invalid(
                "saved_batches.max_list_bytes",
                format!(
                    "must be between 1024 and 67108864, got {}",
                    saved.max_list_bytes
                ),
            );
        }
        if self.mcp.tool_lists_per_minute == 0 {
            return invalid("mcp.tool_lists_per_minute", "must be at least 1".into());
        }
        if let Some(n) = sessions.max_sessions_per_tenant
            && (n == 0 || n > sessions.max_sessions)
        {
            return invalid(
                "sessions.max_sessions_per_tenant",
                format!(
                    "must be between 1 and sessions.max_sessions ({}), got {n}",
                    sessions.max_sessions
                ),
            );
        }
        // A library server alone is two processes.
        for (field, n) in [
            (
                "sessions.max_processes_per_session",
                sessions.max_processes_per_session,
            ),
            (
                "sessions.max_processes_per_tenant",
                sessions.max_processes_per_tenant,
            ),
        ] {
            if !(2..=100_000).contains(&n) {
                return invalid(field, format!("must be between 2 and 100000, got {n}"));
            }
        }
        if sessions.idle_timeout_s == 0 || sessions.unclaimed_idle_timeout_s == 0 {
            return invalid(
                "sessions",
                "idle_timeout_s and unclaimed_idle_timeout_s must be at least 1".into(),
            );
        }
        let http = &self.server.http;
        if http.header_read_timeout_ms == 0 || http.idle_timeout_s == 0 {
            return invalid(
                "server.http",
                "header_read_timeout_ms and idle_timeout_s must be at least 1".into(),
            );
        }
        if http.max_connections == 0
            || http.max_connections_per_peer == 0
            || http.max_connections_per_peer > http.max_connections
        {
            return invalid(
                "server.http.max_connections_per_peer",
                format!(
                    "must be between 1 and server.http.max_connections ({}), got {}",
                    http.max_connections, http.max_connections_per_peer
                ),
            );
        }
        if http.max_body_bytes < 1024 {
            return invalid(
                "server.http.max_body_bytes",
                format!("must be at least 1024, got {}", http.max_body_bytes),
            );
        }
        // A budget below one largest body would refuse every large request;
        // one above the host's could never be reached.
        if http.max_inflight_bytes_per_tenant < http.max_body_bytes as u64
            || http.max_inflight_bytes_per_tenant > http.max_inflight_bytes
        {
            return invalid(
                "server.http.max_inflight_bytes_per_tenant",
                format!(
                    "must be between server.http.max_body_bytes ({}) and server.http.max_inflight_bytes ({}), got {}",
                    http.max_body_bytes,
                    http.max_inflight_bytes,
                    http.max_inflight_bytes_per_tenant
                ),
            );
        }
        Ok(())
    }

    /// Where saved batches are kept: `[saved_batches] dir`, else
    /// `saved-batches` in the data directory; `None` when there is no home
    /// to put it in (they are then kept in memory only).
    pub fn saved_batches_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.saved_batches.dir {
            return Some(dir.clone());
        }
        let data =
            if let Some(dir) = std::env::var_os("STEPHOST_DATA_DIR").filter(|d| !d.is_empty()) {
                PathBuf::from(dir)
            } else if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
                PathBuf::from(dir).join("stephost")
            } else {
                PathBuf::from(std::env::var_os("HOME")?)
                    .join(".local")
                    .join("share")
                    .join("stephost")
            };
        Some(data.join("saved-batches"))
    }

    /// The compile cache directory, if caching is on.
    pub fn cache_dir(&self) -> Option<PathBuf> {
        if self.engine.disable_cache {
            return None;
        }
        if let Some(dir) = &self.engine.cache_dir {
            return Some(dir.clone());
        }
        if let Some(dir) = std::env::var_os("STEPHOST_CACHE_DIR") {
            return Some(PathBuf::from(dir));
        }
        if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir).join("stephost"));
        }
        std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache").join("stephost"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        Config::default().validate().expect("defaults validate");
        assert_eq!(Config::default().limits.memory_mib, 256);
        assert_eq!(Config::default().limits.batch_timeout_ms, 120_000);
    }

    #[test]
    fn empty_file_is_defaults() {
        assert_eq!(Config::parse("").expect("parses"), Config::default());
    }

    #[test]
    fn unknown_keys_are_errors() {
        let err = Config::parse("[limits]\nmemory_mb = 10\n").expect_err("unknown key");
        assert!(err.to_string().contains("memory_mb"), "{err}");
    }

    #[test]
    fn grants_merge_over_the_defaults() {
        let config =
            Config::parse("[plugins.grants.mine]\nhttp = [\"example.com:443\"]\n").expect("parses");
        assert_eq!(config.plugins.grants["mine"].http, ["example.com:443"]);
        assert_eq!(
            config.plugins.grants["rf"].http,
            ["loopback:*"],
            "defaults kept"
        );
        let err =
            Config::parse("[plugins.grants.mine]\nhttp = [\"nope\"]\n").expect_err("bad pattern");
        assert!(err.to_string().contains("[plugins.grants.mine]"), "{err}");
    }

    #[test]
    fn granted_folders_are_checked_and_made_canonical() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::create_dir_all(root.join("data/inner")).expect("mkdir");
        let parse =
            |folders: &str| Config::parse(&format!("[plugins.grants.rf]\nfolders = [{folders}]\n"));
        let dotted = root.join("data/inner/..");
        let config = parse(&format!(
            "{{ path = \"{}\", read_only = false }}",
            dotted.display()
        ))
        .expect("parses");
        let folders = &config.plugins.grants["rf"].folders;
        assert_eq!(folders[0].path, root.join("data"), "canonical");
        assert!(!folders[0].read_only);
        let config = parse(&format!("{{ path = \"{}\" }}", root.display())).expect("parses");
        assert!(
            config.plugins.grants["rf"].folders[0].read_only,
            "read-only by default"
        );
        for (folders, wanted) in [
            (
                "{ path = \"relative/dir\" }".to_owned(),
                "is not an absolute path",
            ),
            (
                format!("{{ path = \"{}/missing\" }}", root.display()),
                "is not an existing directory",
            ),
            (
                format!(
                    "{{ path = \"{0}/data\" }}, {{ path = \"{0}/data/inner/..\" }}",
                    root.display()
                ),
                "is listed twice",
            ),
            (
                format!(
                    "{{ path = \"{0}/data\" }}, {{ path = \"{0}/data/inner\" }}",
                    root.display()
                ),
                "must not overlap",
            ),
        ] {
            let err = parse(&folders).expect_err(&folders).to_string();
            assert!(err.contains("[plugins.grants.rf] folders"), "{err}");
            assert!(err.contains(wanted), "{folders}: {err}");
        }
        let err = parse("{ path = \"/tmp\", writable = true }").expect_err("unknown key");
        assert!(err.to_string().contains("writable"), "{err}");
    }

    #[test]
    fn out_of_range_names_the_field() {
        let err = Config::parse("[limits]\nmemory_mib = 512\n").expect_err("too big");
        assert!(err.to_string().contains("limits.memory_mib"), "{err}");
        let err = Config::parse("[limits]\nstep_timeout_ms = 0\n").expect_err("zero");
        assert!(err.to_string().contains("limits.step_timeout_ms"), "{err}");
        let err = Config::parse("[desktop]\nbutton_hold_ms = 5000\n").expect_err("too slow");
        assert!(err.to_string().contains("desktop.button_hold_ms"), "{err}");
        let config = Config::parse("[desktop]\npointer_settle_ms = 0\nclick_interval_ms = 1000\n")
            .expect("the edges are valid");
        assert_eq!(config.desktop.pointer_settle_ms, 0);
    }

    #[test]
    fn input_limits_are_range_checked() {
        for (text, field) in [
            ("max_input_bytes = 0", "limits.max_input_bytes"),
            ("max_input_depth = 0", "limits.max_input_depth"),
            ("max_input_depth = 1025", "limits.max_input_depth"),
        ] {
            let err = Config::parse(&format!("[limits]\n{text}\n")).expect_err(text);
            assert!(err.to_string().contains(field), "{text}: {err}");
        }
        let config = Config::parse("[limits]\nmax_input_bytes = 1\nmax_input_depth = 1024\n")
            .expect("the edges are valid");
        assert_eq!(config.limits.max_input_bytes, 1);
    }

    #[test]
    fn process_caps_are_range_checked() {
        for (text, field) in [
            (
                "max_processes_per_session = 1",
                "sessions.max_processes_per_session",
            ),
            (
                "max_processes_per_tenant = 0",
                "sessions.max_processes_per_tenant",
            ),
        ] {
            let err = Config::parse(&format!("[sessions]\n{text}\n")).expect_err(text);
            assert!(err.to_string().contains(field), "{text}: {err}");
        }
        let config = Config::parse("[sessions]\nmax_processes_per_session = 2\n")
            .expect("the edge is valid");
        assert_eq!(config.sessions.max_processes_per_session, 2);
        assert_eq!(config.sessions.max_processes_per_tenant, 256);
    }
}
