//! Each tenant's saved batches, kept as a JSON file per tenant under the
//! host's data directory so they survive a restart.
//!
//! A tenant's file is read the first time the tenant's saved batches are
//! needed, and every saved batch in it is checked again against the plugins
//! and tool names of this start: one that no longer checks (a plugin gone, a
//! name now taken by a plugin's tool) is kept in the file and listed with the
//! reason, but offered as no tool. A file that cannot be read as a store is
//! never overwritten: saves are refused, naming it, until an operator looks.
//!
//! Writes replace the file whole (a temporary file renamed over it), under
//! the tenant's lock, so a crash leaves the old file or the new one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use stephost_batch::Problem;
use stephost_batch::saved::{Definition, SavedBatch};

use crate::config::SavedBatchesConfig;
use crate::tenancy::Tenant;

/// The file format's version, written in every file.
const FORMAT: u32 = 1;

/// What a tenant's file holds.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    saved_batches: u32,
    batches: Vec<Definition>,
}

/// One saved batch of a tenant.
#[derive(Clone)]
pub enum Saved {
    /// Checked, and offered as a tool.
    Ready(Arc<SavedBatch>),
    /// Kept, but offered as no tool this start, with the reason.
    Unusable {
        /// What was saved.
        definition: Box<Definition>,
        /// Why it does not check now.
        why: String,
    },
}

impl Saved {
    /// What was saved.
    pub fn definition(&self) -> &Definition {
        match self {
            Self::Ready(saved) => saved.definition(),
            Self::Unusable { definition, .. } => definition,
        }
    }
}

/// Which tool claims a name, when one does: the tenant's other tools, which a
/// saved batch may not take.
pub type Claimed<'a> = &'a (dyn Fn(&str) -> Option<String> + Sync);

/// Why a batch could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// The definition does not check: every problem, each naming its field.
    #[error("the batch does not check: {}", list(.0))]
    Invalid(Vec<Problem>),
    /// Another tool has the name.
    #[error("`{name}` is already {owner}; choose another name")]
    Clash {
        /// The name asked for.
        name: String,
        /// Who has it.
        owner: String,
    },
    /// A saved batch has the name and `replace` was not asked for.
    #[error(
        "a saved batch is already called `{0}`; pass replace: true to replace it, or choose another name"
    )]
    Exists(String),
    /// The tenant keeps as many as it may.
    #[error(
        "this client keeps {0} saved batches, the most it may (saved_batches.max_per_tenant); delete_batch one first"
    )]
    Full(usize),
    /// The definition is larger than a saved batch may be.
    #[error("the batch is {bytes} bytes as JSON, past saved_batches.max_bytes = {max}")]
    TooBig {
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The store cannot be written.
    #[error("saved batches cannot be written: {0}")]
    Store(String),
}

fn list(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why a saved batch could not be deleted.
#[derive(Debug, thiserror::Error)]
pub enum DeleteError {
    /// There is none of that name.
    #[error("no saved batch `{name}` (saved: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names there are.
        known: String,
    },
    /// The store cannot be written.
    #[error("saved batches cannot be written: {0}")]
    Store(String),
}

/// One tenant's saved batches, loaded.
struct TenantStore {
    batches: BTreeMap<String, Saved>,
    /// Why the tenant's file could not be read, when it could not: saves
    /// would overwrite it, so they are refused.
    broken: Option<String>,
}

/// Every tenant's saved batches.
pub struct SavedBatches {
    dir: Option<PathBuf>,
    max_per_tenant: usize,
    max_bytes: usize,
    by_tenant: Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<Option<TenantStore>>>>>,
}

impl SavedBatches {
    /// A store under `dir` (`None`: in memory only) with `config`'s bounds.
    pub fn new(dir: Option<PathBuf>, config: &SavedBatchesConfig) -> Self {
        Self {
            dir,
            max_per_tenant: config.max_per_tenant,
            max_bytes: config.max_bytes,
            by_tenant: Mutex::default(),
        }
    }

    /// Where the saved batches are kept, if on disk.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    fn slot(&self, tenant: &str) -> Arc<tokio::sync::Mutex<Option<TenantStore>>> {
        self.by_tenant
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(tenant.to_owned())
            .or_default()
            .clone()
    }

    /// The file of `tenant`: its id with every byte outside `[A-Za-z0-9_-]`
    /// written `%XX`, so any id is one file name and no two ids share one.
    fn file_of(&self, tenant: &str) -> Option<PathBuf> {
        let mut name = String::new();
        for byte in tenant.bytes() {
            if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' {
                name.push(char::from(byte));
            } else {
                name.push_str(&format!("%{byte:02X}"));
            }
        }
        Some(self.dir.as_ref()?.join(format!("{name}.json")))
    }

    /// Reads `tenant`'s file and checks each batch in it.
    fn load(&self, tenant: &Tenant, claimed: Claimed<'_>) -> TenantStore {
        let mut store = TenantStore {
            batches: BTreeMap::new(),
            broken: None,
        };
        let Some(path) = self.file_of(tenant.id()) else {
            return store;
        };
        // Bounded before it is read: a file can hold at most this many bytes
        // of batches and their framing.
        let most = self
            .max_per_tenant
            .saturating_mul(self.max_bytes.saturating_add(64))
            .saturating_add(64);
        let file = match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return store,
            Err(e) => Err(e.to_string()),
            Ok(meta) if meta.len() > most as u64 => Err(format!(
                "it is {} bytes, more than saved_batches.max_per_tenant x max_bytes allows",
                meta.len()
            )),
            Ok(_) => std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|bytes| {
                    serde_json::from_slice::<File>(&bytes).map_err(|e| e.to_string())
                }),
        };
        let file = match file {
            Ok(file) if file.saved_batches == FORMAT => file,
            Ok(file) => {
                store.broken = Some(format!(
                    "{} is in store format {}, this host reads {FORMAT}",
                    path.display(),
                    file.saved_batches
                ));
                return store;
            }
            Err(why) => {
                tracing::error!(file = %path.display(), %why, "saved batches unreadable; saves refused until it is fixed");
                store.broken = Some(format!("{} cannot be read: {why}", path.display()));
                return store;
            }
        };
        for definition in file.batches {
            let name = definition.name.clone();
            let saved = check(definition, tenant, claimed);
            if let Saved::Unusable { why, .. } = &saved {
                tracing::warn!(tenant = tenant.id(), batch = %name, %why, "saved batch not offered");
            }
            store.batches.insert(name, saved);
        }
        store
    }

    /// `tenant`'s saved batches, by name.
    pub async fn list(&self, tenant: &Tenant, claimed: Claimed<'_>) -> Vec<Saved> {
        let slot = self.slot(tenant.id());
        let mut guard = slot.lock().await;
        let store = guard.get_or_insert_with(|| self.load(tenant, claimed));
        store.batches.values().cloned().collect()
    }

    /// `tenant`'s saved batch `name`, when it is offered as a tool.
    pub async fn get(
        &self,
        tenant: &Tenant,
        name: &str,
        claimed: Claimed<'_>,
    ) -> Option<Arc<SavedBatch>> {
        let slot = self.slot(tenant.id());
        let mut guard = slot.lock().await;
        let store = guard.get_or_insert_with(|| self.load(tenant, claimed));
        match store.batches.get(name)? {
            Saved::Ready(saved) => Some(saved.clone()),
            Saved::Unusable { .. } => None,
        }
    }

    /// Checks `definition` and keeps it for `tenant`; `Ok(true)` when it
    /// replaced a saved batch of its name.
    pub async fn save(
        &self,
        tenant: &Tenant,
        definition: Definition,
        replace: bool,
        claimed: Claimed<'_>,
    ) -> Result<(Arc<SavedBatch>, bool), SaveError> {
        let bytes = serde_json::to_vec(&definition)
            .map(|b| b.len())
            .unwrap_or(usize::MAX);
        if bytes > self.max_bytes {
            return Err(SaveError::TooBig {
                bytes,
                max: self.max_bytes,
            });
        }
        if let Some(owner) = claimed(&definition.name) {
            return Err(SaveError::Clash {
                name: definition.name,
                owner,
            });
        }
        let saved = SavedBatch::new(definition, tenant.catalog(), tenant.limits())
            .map_err(SaveError::Invalid)?;
        let name = saved.definition().name.clone();
        let slot = self.slot(tenant.id());
        let mut guard = slot.lock().await;
        let store = guard.get_or_insert_with(|| self.load(tenant, claimed));
        if let Some(why) = &store.broken {
            return Err(SaveError::Store(why.clone()));
        }
        let replaced = store.batches.contains_key(&name);
        if replaced && !replace {
            return Err(SaveError::Exists(name));
        }
        if !replaced && store.batches.len() >= self.max_per_tenant {
            return Err(SaveError::Full(self.max_per_tenant));
        }
        let saved = Arc::new(saved);
        let previous = store
            .batches
            .insert(name.clone(), Saved::Ready(saved.clone()));
        if let Err(why) = self.write(tenant.id(), store).await {
            // Nothing kept that is not on disk: the old entry comes back.
            match previous {
                Some(previous) => store.batches.insert(name, previous),
                None => store.batches.remove(&name),
            };
            return Err(SaveError::Store(why));
        }
        Ok((saved, replaced))
    }

    /// Deletes `tenant`'s saved batch `name`; returns what it was.
    pub async fn delete(
        &self,
        tenant: &Tenant,
        name: &str,
        claimed: Claimed<'_>,
    ) -> Result<Definition, DeleteError> {
        let slot = self.slot(tenant.id());
        let mut guard = slot.lock().await;
        let store = guard.get_or_insert_with(|| self.load(tenant, claimed));
        if let Some(why) = &store.broken {
            return Err(DeleteError::Store(why.clone()));
        }
        let Some(removed) = store.batches.remove(name) else {
            let known: Vec<&str> = store.batches.keys().map(String::as_str).collect();
            return Err(DeleteError::Unknown {
                name: name.to_owned(),
                known: if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                },
            });
        };
        if let Err(why) = self.write(tenant.id(), store).await {
            store.batches.insert(name.to_owned(), removed);
            return Err(DeleteError::Store(why));
        }
        Ok(removed.definition().clone())
    }

    /// Writes `store` as `tenant`'s file: a temporary file beside it, synced,
    /// renamed over it.
    async fn write(&self, tenant: &str, store: &TenantStore) -> Result<(), String> {
        let Some(path) = self.file_of(tenant) else {
            return Ok(());
        };
        let file = File {
            saved_batches: FORMAT,
            batches: store
                .batches
                .values()
                .map(|s| s.definition().clone())
                .collect(),
        };
        let bytes = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
        tokio::task::spawn_blocking(move || write_atomically(&path, &bytes))
            .await
            .map_err(|e| e.to_string())?
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write as _;
    let dir = path
        .parent()
        .ok_or_else(|| format!("{} has no folder", path.display()))?;
    let fail = |what: &str, e: std::io::Error| format!("{what} {}: {e}", dir.display());
    std::fs::create_dir_all(dir).map_err(|e| fail("cannot create", e))?;
    let tmp = path.with_extension(format!("json.tmp-{}", std::process::id()));
    let mut file = std::fs::File::create(&tmp).map_err(|e| fail("cannot write in", e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| fail("cannot write in", e))?;
    std::fs::rename(&tmp, path).map_err(|e| fail("cannot rename in", e))
}

/// A saved batch of a file, checked as of this start.
fn check(definition: Definition, tenant: &Tenant, claimed: Claimed<'_>) -> Saved {
    if let Some(owner) = claimed(&definition.name) {
        return Saved::Unusable {
            why: format!("its name is now {owner}"),
            definition: Box::new(definition),
        };
    }
    let kept = definition.clone();
    match SavedBatch::new(definition, tenant.catalog(), tenant.limits()) {
        Ok(saved) => Saved::Ready(Arc::new(saved)),
        Err(problems) => Saved::Unusable {
            definition: Box::new(kept),
            why: format!("it no longer checks: {}", list(&problems)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    async fn host(dir: &Path, disable: &[&str]) -> crate::Host {
        let mut config = crate::config::Config::default();
        config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
        config.plugins.disable = disable.iter().map(|s| (*s).to_owned()).collect();
        config.saved_batches.dir = Some(dir.to_owned());
        match crate::Host::start(config).await {
            Ok(host) => host,
            Err(e) => panic!("host starts: {e:#}"),
        }
    }

    fn greet(name: &str) -> Definition {
        serde_json::from_value(json!({
            "name": name,
            "description": "Echoes",
            "parameters": {"type": "object", "properties": {"v": {}}},
            "steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": "${params.v}"}}]
        }))
        .expect("a definition")
    }

    fn nobody(_: &str) -> Option<String> {
        None
    }

    #[tokio::test]
    async fn what_no_longer_checks_is_kept_and_listed_but_offered_as_no_tool() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = host(dir.path(), &[]).await;
        let tenant = first.tenants().local().clone();
        let store = first.saved();
        store
            .save(&tenant, greet("echo_it"), false, &nobody)
            .await
            .expect("saves");
        store
            .save(&tenant, greet("later_taken"), false, &nobody)
            .await
            .expect("saves");
        assert!(matches!(
            store.save(&tenant, greet("echo_it"), false, &nobody).await,
            Err(SaveError::Exists(_))
        ));

        // Restarted without testkit, and with a tool now called `later_taken`.
        let second = host(dir.path(), &["testkit"]).await;
        let tenant = second.tenants().local().clone();
        let taken = |name: &str| (name == "later_taken").then(|| "the tool of `x.y`".to_owned());
        let listed = second.saved().list(&tenant, &taken).await;
        let why: Vec<String> = listed
            .iter()
            .map(|saved| match saved {
                Saved::Ready(_) => "ready".to_owned(),
                Saved::Unusable { why, .. } => why.clone(),
            })
            .collect();
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(
            why[0].contains("no longer checks") && why[0].contains("testkit"),
            "{why:?}"
        );
        assert_eq!(why[1], "its name is now the tool of `x.y`");
        assert!(
            second
                .saved()
                .get(&tenant, "echo_it", &taken)
                .await
                .is_none()
        );
        // Deleting one keeps the other in the file.
        second
            .saved()
            .delete(&tenant, "echo_it", &taken)
            .await
            .expect("deletes");
        let text = std::fs::read_to_string(dir.path().join("local.json")).expect("file");
        let file: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(file["batches"][0]["name"], "later_taken");
        assert_eq!(file["batches"].as_array().map(Vec::len), Some(1));
    }

    #[tokio::test]
    async fn an_unreadable_file_is_never_overwritten() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("local.json"), "{not json").expect("write");
        let host = host(dir.path(), &[]).await;
        let tenant = host.tenants().local().clone();
        let refused = host
            .saved()
            .save(&tenant, greet("echo_it"), false, &nobody)
            .await
            .expect_err("refused");
        assert!(
            refused.to_string().contains("local.json cannot be read"),
            "{refused}"
        );
        let text = std::fs::read_to_string(dir.path().join("local.json")).expect("file");
        assert_eq!(text, "{not json");
    }

    #[tokio::test]
    async fn a_tenant_keeps_no_more_than_its_bound() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = crate::config::Config::default();
        config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
        let store = SavedBatches::new(
            Some(dir.path().to_owned()),
            &SavedBatchesConfig {
                max_per_tenant: 2,
                max_bytes: 1024,
                ..SavedBatchesConfig::default()
            },
        );
        let host = crate::Host::start(config).await.expect("host");
        let tenant = host.tenants().local().clone();
        for name in ["a1", "a2"] {
            store
                .save(&tenant, greet(name), false, &nobody)
                .await
                .expect("saves");
        }
        assert!(matches!(
            store.save(&tenant, greet("a3"), false, &nobody).await,
            Err(SaveError::Full(2))
        ));
        // Replacing one is no new one.
        store
            .save(&tenant, greet("a2"), true, &nobody)
            .await
            .expect("replaces");
        let mut big = greet("big");
        big.description = "x".repeat(1_500);
        assert!(matches!(
            store.save(&tenant, big, false, &nobody).await,
            Err(SaveError::TooBig { max: 1024, .. })
        ));
    }
}
