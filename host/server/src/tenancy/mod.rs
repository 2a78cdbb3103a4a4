//! Tenancy: who is calling, what they may use, and how much of it.
//!
//! Every batch runs for a [`Tenant`]: the CLI and stdio use the built-in local
//! tenant; the HTTP front, given a tenants file, maps each bearer token to its
//! tenant. A tenant sees its own view of the plugins (only those enabled for it,
//! each linked for the host's grant narrowed by the tenant's), its own limits,
//! and its own sessions.

pub(crate) mod auth;
mod file;
pub(crate) mod metrics;
mod quota;

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use file::{TenantConfig, TenantLimits, TenantsError, TenantsFile};
pub use metrics::Metrics;
pub use quota::{Admission, Rejection, ServerQuota, TenantQuota};

use stephost_batch::{Catalog, LimitCaps, Limits};
use stephost_runtime::{DiskLimits, DiskQuota, PoolShare, Registry};

use crate::config::Config;

/// Id of the tenant the CLI and stdio run as.
pub const LOCAL_TENANT: &str = "local";

/// One tenant, ready to serve.
pub struct Tenant {
    id: String,
    limits: Limits,
    max_sessions: usize,
    max_sessions_key: &'static str,
    quota: TenantQuota,
    registry: Registry,
    catalog: Catalog,
    slots: Arc<PoolShare>,
    disk: Arc<DiskQuota>,
}

impl Tenant {
    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its effective limits: its own, capped by the host's.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Most live sessions.
    pub fn max_sessions(&self) -> usize {
        self.max_sessions
    }

    /// The config key that sets [`Tenant::max_sessions`], for error messages.
    pub fn max_sessions_key(&self) -> &'static str {
        self.max_sessions_key
    }

    /// Its admission state.
    pub fn quota(&self) -> &TenantQuota {
        &self.quota
    }

    /// The plugins it may use, as the runtime runs them.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The plugins it may use, as the batch engine plans against them.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Its share of the instance pool, which its sessions' instances and
    /// Python evaluators are charged to.
    pub fn slots(&self) -> &Arc<PoolShare> {
        &self.slots
    }

    /// Its disk quota over its read-write granted folders, which every write
    /// its sessions' instances make there is charged to.
    pub fn disk(&self) -> &Arc<DiskQuota> {
        &self.disk
    }
}

/// Every tenant of a host.
pub struct Tenants {
    local: Arc<Tenant>,
    by_token_hash: HashMap<String, Arc<Tenant>>,
    listed: Vec<Arc<Tenant>>,
}

impl Tenants {
    /// The tenants of `file` (or only the local tenant without one), with views
    /// of `base`, the host's registry.
    ///
    /// Fails when the tenants' session caps add up to more than the host's
    /// (`sessions.max_sessions`): then one tenant at its own cap could still
    /// fill the host and lock the others out.
    pub fn build(
        config: &Config,
        base: &Registry,
        file: Option<&TenantsFile>,
    ) -> Result<Self, TenantsError> {
        let local_config = TenantConfig {
            id: LOCAL_TENANT.to_owned(),
            token_sha256: Vec::new(),
            plugins: vec!["*".to_owned()],
            grants: Default::default(),
            limits: TenantLimits::default(),
        };
        let listed_configs = file.map(|f| f.tenants.as_slice()).unwrap_or_default();
        // Without a per-tenant default, the host's sessions are shared evenly.
        let share = config
            .sessions
            .max_sessions_per_tenant
            .unwrap_or_else(|| (config.sessions.max_sessions / listed_configs.len().max(1)).max(1));
        // Likewise the instance pool's slots.
        let pool = config.engine.max_instances;
        let slot_share = config
            .engine
            .max_instances_per_tenant
            .unwrap_or_else(|| (pool / listed_configs.len().max(1) as u32).max(1));
        let shares = Shares {
            sessions: share,
            slots: slot_share,
        };
        let local = Arc::new(tenant(config, base, &local_config, shares));
        let mut by_token_hash = HashMap::new();
        let mut listed = Vec::new();
        for tenant_config in listed_configs {
            let tenant = Arc::new(tenant(config, base, tenant_config, shares));
            for hash in &tenant_config.token_sha256 {
                by_token_hash.insert(hash.to_ascii_lowercase(), tenant.clone());
            }
            listed.push(tenant);
        }
        let total: usize = listed.iter().map(|t| t.max_sessions).sum();
        if total > config.sessions.max_sessions {
            return Err(TenantsError::SessionCapsExceedHost {
                total,
                host: config.sessions.max_sessions,
            });
        }
        // Charges within every share then fit in every total of the pool
        // (`Footprint::SLOT`), so a tenant at its share never takes another's.
        let total: u64 = listed.iter().map(|t| u64::from(t.slots.limit())).sum();
        if total > u64::from(pool) {
            return Err(TenantsError::InstanceSharesExceedPool { total, pool });
        }
        for tenant in listed.iter().chain(listed.is_empty().then_some(&local)) {
            warn_if_share_too_small(tenant);
        }
        Ok(Self {
            local,
            by_token_hash,
            listed,
        })
    }

    /// Whether callers must present a token (a tenants file was given).
    pub fn require_auth(&self) -> bool {
        !self.listed.is_empty()
    }

    /// The tenant whose token this is.
    pub fn authenticate(&self, token: &str) -> Option<Arc<Tenant>> {
        self.by_token_hash.get(&hash_token(token)).cloned()
    }

    /// The local tenant (CLI, stdio, HTTP without a tenants file).
    pub fn local(&self) -> &Arc<Tenant> {
        &self.local
    }

    /// Every tenant: the local one and those of the file.
    pub fn all(&self) -> impl Iterator<Item = &Arc<Tenant>> {
        std::iter::once(&self.local).chain(&self.listed)
    }

    /// The tenants that serve requests: those of the file, else the local one.
    pub fn serving(&self) -> Vec<Arc<Tenant>> {
        if self.listed.is_empty() {
            vec![self.local.clone()]
        } else {
            self.listed.clone()
        }
    }
}

/// sha256 of a token, hex: what the tenants file stores.
pub fn hash_token(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What a tenant gets when its own limits do not say.
#[derive(Debug, Clone, Copy)]
struct Shares {
    /// Live sessions.
    sessions: usize,
    /// Instance-pool slots.
    slots: u32,
}

/// Says at start when a tenant's share of the pool cannot hold one session's
/// instance of some plugin it may use (with its Python evaluator): its calls
/// of that plugin would all answer `busy`.
fn warn_if_share_too_small(tenant: &Tenant) {
    let Some(plugin) = tenant
        .registry
        .plugins()
        .max_by_key(|p| p.slots_per_session())
    else {
        return;
    };
    let needed = plugin.slots_per_session();
    let share = &tenant.slots;
    if needed > share.limit() {
        tracing::warn!(
            tenant = tenant.id(),
            plugin = plugin.name(),
            needed,
            share = share.limit(),
            key = share.key(),
            "a session's `{}` instance needs {needed} instance-pool slots (with its Python evaluator), more than tenant `{}`'s share ({} = {}): its calls will answer busy; raise {} (and engine.max_instances)",
            plugin.name(),
            tenant.id(),
            share.key(),
            share.limit(),
            share.key()
        );
    }
}

fn tenant(config: &Config, base: &Registry, t: &TenantConfig, shares: Shares) -> Tenant {
    let share = shares.sessions;
    let own = &t.limits;
    let limits = config.limits.capped_by(&LimitCaps {
        memory_mib: own.memory_mib,
        fuel_per_step: own.fuel_per_step,
        max_step_timeout_ms: own.max_step_timeout_ms,
        max_batch_timeout_ms: own.max_batch_timeout_ms,
        max_steps_per_batch: own.max_steps_per_batch,
        max_result_bytes: own.max_result_bytes,
        max_report_bytes: own.max_report_bytes,
        max_session_vars_bytes: own.max_session_vars_bytes,
        max_input_bytes: own.max_input_bytes,
        disk_bytes: own.disk_bytes,
        disk_files: own.disk_files,
    });
    let server = &config.server;
    let max_concurrent = t
        .limits
        .max_concurrent_batches
        .unwrap_or(server.max_concurrent_batches_per_tenant);
    let per_minute = t
        .limits
        .batches_per_minute
        .unwrap_or(server.batches_per_minute);
    let (max_sessions, max_sessions_key) = match t.limits.max_sessions {
        Some(own) => (own, "limits.max_sessions"),
        None => (share, "sessions.max_sessions_per_tenant"),
    };
    let max_sessions = max_sessions.min(config.sessions.max_sessions);
    // Unset, `engine.max_instances_per_tenant` is the pool shared evenly.
    let (slots, slots_key) = match t.limits.max_instances {
        Some(own) => (own, "limits.max_instances"),
        None => (shares.slots, "engine.max_instances_per_tenant"),
    };
    let sessions = &config.sessions;
    let frees = format!(
        "its slots come back as its sessions end: end one (DELETE its MCP session) or reuse a session_id instead of starting new ones; unused sessions are dropped after {} s ({} s for one no call has named again, and at the share such an idle one makes room first)",
        sessions.idle_timeout_s, sessions.unclaimed_idle_timeout_s
    );
    let slots = PoolShare::new(
        &t.id,
        slots.min(config.engine.max_instances),
        slots_key,
        frees,
    );
    let registry = base.for_tenant(&t.id, &t.plugins, &t.grants);
    let disk = Arc::new(disk_quota(&t.id, &limits, &registry));
    Tenant {
        id: t.id.clone(),
        limits,
        max_sessions,
        max_sessions_key,
        quota: TenantQuota::new(&t.id, max_concurrent, per_minute),
        catalog: catalog_of(&registry),
        registry,
        slots,
        disk,
    }
}

/// The tenant's disk quota, over the read-write folders of every plugin it
/// may use (a folder two of its plugins share is counted once).
fn disk_quota(id: &str, limits: &Limits, registry: &Registry) -> DiskQuota {
    let folders = registry
        .plugins()
        .flat_map(|p| p.grant().folders.iter())
        .filter(|f| !f.read_only)
        .map(|f| f.path.clone());
    let limits = DiskLimits {
        bytes: limits.disk_bytes,
        files: limits.disk_files,
    };
    DiskQuota::new(id, limits, folders)
}

/// What the batch engine sees of `registry`: each plugin's spec, and why the
/// others are unavailable.
pub fn catalog_of(registry: &Registry) -> Catalog {
    Catalog::new(
        registry.plugins().map(|p| p.spec().clone()),
        registry
            .unavailable_all()
            .map(|(name, why)| (name.to_owned(), why.to_owned())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_hashes_are_sha256_hex() {
        assert_eq!(
            hash_token("test"),
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        );
    }
}
