//! The tenants file: who may use the host, with which token, plugins, grants
//! and limits.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use stephost_runtime::Grant;

/// The whole tenants file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TenantsFile {
    /// The tenants.
    #[serde(default)]
    pub tenants: Vec<TenantConfig>,
}

/// One tenant.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    /// Tenant id: `[a-z0-9][a-z0-9_-]*`, shown in logs and metrics.
    pub id: String,
    /// sha256 (hex) of each API token the tenant may use
    /// (`stephost hash-token TOKEN` prints it). Tokens themselves are never stored.
    pub token_sha256: Vec<String>,
    /// Plugins the tenant may use; `["*"]` for all.
    #[serde(default = "all_plugins")]
    pub plugins: Vec<String>,
    /// What each plugin is granted for this tenant, intersected with the
    /// host's grant for that plugin. A plugin not listed keeps the host's grant.
    #[serde(default)]
    pub grants: BTreeMap<String, Grant>,
    /// Limits; each unset key falls back to the host's.
    #[serde(default)]
    pub limits: TenantLimits,
}

fn all_plugins() -> Vec<String> {
    vec!["*".to_owned()]
}

/// A tenant's limits. Every key is optional; the effective value is the
/// tenant's if set, capped by the host's.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TenantLimits {
    /// Linear memory per plugin instance, in MiB.
    pub memory_mib: Option<u64>,
    /// Fuel per step.
    pub fuel_per_step: Option<u64>,
    /// Largest step timeout, in ms.
    pub max_step_timeout_ms: Option<u64>,
    /// Largest batch timeout, in ms.
    pub max_batch_timeout_ms: Option<u64>,
    /// Most steps per batch.
    pub max_steps_per_batch: Option<usize>,
    /// Largest result of one step, in bytes.
    pub max_result_bytes: Option<u64>,
    /// Largest total of results in one batch report, in bytes.
    pub max_report_bytes: Option<u64>,
    /// Largest total of a session's `assign_to` variables, in bytes.
    pub max_session_vars_bytes: Option<u64>,
    /// Largest resolved input of one step, in bytes.
    pub max_input_bytes: Option<u64>,
    /// Bytes of files in all of its read-write granted folders together.
    pub disk_bytes: Option<u64>,
    /// Entries (files, directories, links) in all of its read-write granted
    /// folders together.
    pub disk_files: Option<u64>,
    /// Batches running at once.
    pub max_concurrent_batches: Option<usize>,
    /// Live sessions.
    pub max_sessions: Option<usize>,
    /// Slots of the instance pool its instances and Python evaluators may
    /// hold at once (`engine.max_instances` counts them).
    pub max_instances: Option<u32>,
    /// Batches started per minute.
    pub batches_per_minute: Option<u32>,
}

/// A tenants file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TenantsError {
    /// Unreadable.
    #[error("cannot read tenants file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not valid TOML for the schema.
    #[error("tenants file {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: Box<toml::de::Error>,
    },
    /// The file lists no tenant: serving it would mean serving nobody, or,
    /// worse, everybody without authentication.
    #[error(
        "the tenants file lists no tenants: add a [[tenants]] entry, or leave out --tenants to serve one local tenant without authentication on loopback"
    )]
    NoTenants,
    /// The tenants' session caps add up to more than the host's.
    #[error(
        "the tenants' session caps (limits.max_sessions, else sessions.max_sessions_per_tenant) add up to {total}, past sessions.max_sessions = {host}; raise sessions.max_sessions or lower the tenants' caps, so that no tenant at its own cap can fill the host"
    )]
    SessionCapsExceedHost {
        /// Sum of the tenants' caps.
        total: usize,
        /// `sessions.max_sessions`.
        host: usize,
    },
    /// The tenants' shares of the instance pool add up to more than the pool.
    #[error(
        "the tenants' shares of the instance pool (limits.max_instances, else engine.max_instances_per_tenant, else engine.max_instances shared evenly) add up to {total} slots, past engine.max_instances = {pool}; raise engine.max_instances to at least {total} or lower the tenants' shares, so that no tenant at its own share can take another's slots"
    )]
    InstanceSharesExceedPool {
        /// Sum of the tenants' shares.
        total: u64,
        /// `engine.max_instances`.
        pool: u32,
    },
    /// A value is wrong.
    #[error("tenants file: tenant `{tenant}`: {problem}")]
    Invalid {
        /// Tenant id.
        tenant: String,
        /// What is wrong.
        problem: String,
    },
}

impl TenantsFile {
    /// Reads and validates a tenants file.
    pub fn load(path: &Path) -> Result<Self, TenantsError> {
        let text = std::fs::read_to_string(path).map_err(|source| TenantsError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut file: TenantsFile =
            toml::from_str(&text).map_err(|source| TenantsError::Parse {
                path: path.to_owned(),
                source: Box::new(source),
            })?;
        file.canonicalize();
        file.validate()?;
        Ok(file)
    }

    /// Puts the tenants' granted folders into canonical form, as the host's are.
    pub fn canonicalize(&mut self) {
        for tenant in &mut self.tenants {
            for grant in tenant.grants.values_mut() {
                grant.canonicalize_folders();
            }
        }
    }

    /// Checks ids, hashes and grants.
    pub fn validate(&self) -> Result<(), TenantsError> {
        if self.tenants.is_empty() {
            return Err(TenantsError::NoTenants);
        }
        let mut seen_ids = std::collections::BTreeSet::new();
        let mut seen_tokens = std::collections::BTreeMap::new();
        for tenant in &self.tenants {
            let invalid = |problem: String| TenantsError::Invalid {
                tenant: tenant.id.clone(),
                problem,
            };
            if !valid_id(&tenant.id) {
                return Err(invalid(
                    "ids are lower-case `[a-z0-9][a-z0-9_-]*`, at most 64 characters".into(),
                ));
            }
            if !seen_ids.insert(tenant.id.clone()) {
                return Err(invalid("listed twice".into()));
            }
            if tenant.token_sha256.is_empty() {
                return Err(invalid(
                    "token_sha256 is empty: the tenant could never authenticate".into(),
                ));
            }
            for hash in &tenant.token_sha256 {
                if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(invalid(format!(
                        "token_sha256 entry `{hash}` is not 64 hex digits (use `stephost hash-token TOKEN`)"
                    )));
                }
                if let Some(other) =
                    seen_tokens.insert(hash.to_ascii_lowercase(), tenant.id.clone())
                {
                    return Err(invalid(format!("shares a token with tenant `{other}`")));
                }
            }
            for (plugin, grant) in &tenant.grants {
                grant
                    .allow_list()
                    .map_err(|e| invalid(format!("[tenants.grants.{plugin}] http: {e}")))?;
                grant
                    .check_folders()
                    .map_err(|e| invalid(format!("[tenants.grants.{plugin}] folders: {e}")))?;
                grant
                    .rf_libraries
                    .check_names()
                    .map_err(|e| invalid(format!("[tenants.grants.{plugin}.rf_libraries] {e}")))?;
            }
            let l = &tenant.limits;
            for (name, value) in [
                ("memory_mib", l.memory_mib),
                ("fuel_per_step", l.fuel_per_step),
                ("max_step_timeout_ms", l.max_step_timeout_ms),
                ("max_batch_timeout_ms", l.max_batch_timeout_ms),
                ("max_input_bytes", l.max_input_bytes),
                (
                    "max_steps_per_batch",
                    l.max_steps_per_batch.map(|v| v as u64),
                ),
                (
                    "max_concurrent_batches",
                    l.max_concurrent_batches.map(|v| v as u64),
                ),
                ("max_sessions", l.max_sessions.map(|v| v as u64)),
                ("max_instances", l.max_instances.map(u64::from)),
                ("batches_per_minute", l.batches_per_minute.map(u64::from)),
            ] {
                if value == Some(0) {
                    return Err(invalid(format!("limits.{name} must be at least 1")));
                }
            }
        }
        Ok(())
    }
}

fn valid_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    id.len() <= 64
        && bytes
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn parse(text: &str) -> Result<TenantsFile, String> {
        let mut file: TenantsFile = toml::from_str(text).map_err(|e| e.to_string())?;
        file.canonicalize();
        file.validate().map_err(|e| e.to_string())?;
        Ok(file)
    }

    #[test]
    fn a_minimal_tenant_parses_with_defaults() {
        let file = parse(&format!(
            "[[tenants]]\nid = \"acme\"\ntoken_sha256 = [\"{HASH}\"]\n"
        ))
        .expect("valid");
        assert_eq!(file.tenants[0].plugins, ["*"]);
        assert_eq!(file.tenants[0].limits, TenantLimits::default());
    }

    #[test]
    fn tenant_folders_are_checked_like_the_hosts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        let tenant = |folders: &str| {
            format!(
                "[[tenants]]\nid = \"acme\"\ntoken_sha256 = [\"{HASH}\"]\n[tenants.grants.rf]\nfolders = [{folders}]\n"
            )
        };
        let file =
            parse(&tenant(&format!("{{ path = \"{}/.\" }}", root.display()))).expect("valid");
        assert_eq!(file.tenants[0].grants["rf"].folders[0].path, root);
        let err = parse(&tenant(&format!(
            "{{ path = \"{}/nope\" }}",
            root.display()
        )))
        .expect_err("missing folder");
        assert!(err.contains("[tenants.grants.rf] folders"), "{err}");
        assert!(err.contains("tenant `acme`"), "{err}");
    }

    #[test]
    fn mistakes_are_named() {
        let err = parse("[[tenants]]\nid = \"Acme\"\ntoken_sha256 = []\n").expect_err("bad id");
        assert!(err.contains("lower-case"), "{err}");
        let err =
            parse("[[tenants]]\nid = \"a\"\ntoken_sha256 = [\"abc\"]\n").expect_err("bad hash");
        assert!(err.contains("64 hex digits"), "{err}");
        let err = parse(&format!(
            "[[tenants]]\nid = \"a\"\ntoken_sha256 = [\"{HASH}\"]\n[[tenants]]\nid = \"b\"\ntoken_sha256 = [\"{HASH}\"]\n"
        ))
        .expect_err("shared token");
        assert!(err.contains("shares a token with tenant `a`"), "{err}");
        let err = parse(&format!("[[tenants]]\nid = \"a\"\ntoken_sha256 = [\"{HASH}\"]\n[tenants.limits]\nmax_sessions = 0\n"))
            .expect_err("zero");
        assert!(err.contains("limits.max_sessions"), "{err}");
        let err = parse(&format!(
            "[[tenants]]\nid = \"a\"\ntoken_sha256 = [\"{HASH}\"]\ncolour = 1\n"
        ))
        .expect_err("unknown key");
        assert!(err.contains("colour"), "{err}");
    }
}
