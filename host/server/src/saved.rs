//! Each tenant's saved batches, kept as a JSON file per tenant under the
//! host's data directory so they survive a restart.
//!
//! A tenant's file is read the first time the tenant's saved batches are
//! needed, and every saved batch in it is checked again against the plugins
//! and tool names of this start: one that no longer checks (a plugin gone, a
//! name now taken by a plugin's tool) is kept in the file and listed with the
//! reason, but offered as no tool. A file that cannot be read as a store is
//! never overwritten: listing, saving and deleting are refused until an
//! operator looks (the log names the file; the tenant is told only that the
//! store cannot be read, never where the host keeps it).
//!
//! Writes replace the file whole (a temporary file renamed over it), under
//! the tenant's lock, so a crash leaves the old file or the new one; a write
//! that fails removes its temporary file, and one a crash left is removed at
//! the next start. The folder is the host user's alone (0700, files 0600).
//!
//! What a tenant's saved batches add to its `tools/list` is bounded
//! (`saved_batches.max_per_tenant`, `max_list_bytes`) when they are saved and
//! again when a file is loaded, and the list entries are built once per
//! change and shared by every list request, so a list costs the same however
//! often it is asked for.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use stephost_batch::dialects::Dialect as _;
use stephost_batch::saved::{Definition, SavedBatch};
use stephost_batch::{Catalog, Problem};

use crate::config::SavedBatchesConfig;
use crate::tenancy::Tenant;

/// The file format's version, written in every file.
const FORMAT: u32 = 1;
/// What names a temporary file beside a tenant's: `<tenant>.json.tmp-<pid>`.
const TMP_MARK: &str = ".json.tmp-";
/// The folder's mode: saved batches are the host user's alone (they hold
/// tenants' steps, URLs and parameter names).
const DIR_MODE: u32 = 0o700;
/// Each file's mode.
const FILE_MODE: u32 = 0o600;

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
    Ready {
        /// The batch.
        batch: Arc<SavedBatch>,
        /// What its tool adds to `tools/list`, in bytes ([`listed_bytes`]).
        listed_bytes: usize,
    },
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
            Self::Ready { batch, .. } => batch.definition(),
            Self::Unusable { definition, .. } => definition,
        }
    }

    /// What it adds to `tools/list`: nothing unless it is offered.
    fn listed_bytes(&self) -> usize {
        match self {
            Self::Ready { listed_bytes, .. } => *listed_bytes,
            Self::Unusable { .. } => 0,
        }
    }
}

/// Which tool claims a name, when one does: the tenant's other tools, which a
/// saved batch may not take.
pub type Claimed<'a> = &'a (dyn Fn(&str) -> Option<String> + Sync);

/// How the MCP front lists a saved batch as a tool.
pub type ToolOf<'a> = &'a (dyn Fn(&SavedBatch) -> Tool + Sync);

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
        "this client keeps {0} saved batches, the most it may (saved_batches.max_per_tenant = {0}); delete_batch one first"
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
    /// The tenant's saved batches would add too much to its tool list.
    #[error(
        "its tool is {bytes} bytes in tools/list, and with it this client's saved batches would add {total} bytes, past saved_batches.max_list_bytes = {max}; shorten its description and parameter schema, or delete_batch another"
    )]
    ListFull {
        /// What this batch's tool adds.
        bytes: usize,
        /// What all of them would add.
        total: usize,
        /// The limit.
        max: usize,
    },
    /// The store cannot be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
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
    /// The store cannot be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The saved-batch store failed a tenant. What a tenant reads never names
/// the file or the host's data directory: the log does, for the operator.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The tenant's file cannot be read as a store; it is left as it is.
    #[error(
        "this client's saved-batch store cannot be read ({0}); its saved batches are not offered, and none can be saved or deleted, until the host's operator repairs it"
    )]
    Unreadable(String),
    /// A change could not be written, and was not made.
    #[error("the saved-batch store could not be written ({0}); nothing changed")]
    Write(String),
}

/// One tenant's saved batches, loaded.
#[derive(Default)]
struct TenantStore {
    batches: BTreeMap<String, Saved>,
    /// Why the tenant's file could not be read, when it could not: saves
    /// would overwrite it, so they are refused.
    broken: Option<String>,
    /// The tenant's saved tools as `tools/list` shows them, built on the
    /// first list after a change and shared by every list until the next:
    /// a list request copies pointers, not schemas.
    tools: Option<Listed>,
}

/// What a tenant's saved batches add to `tools/list`.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Their tools, shared by every list until the next change.
    pub tools: Arc<[Tool]>,
    /// Their size, as [`listed_bytes`] counts it.
    pub bytes: usize,
}

/// Every tenant's saved batches.
pub struct SavedBatches {
    dir: Option<PathBuf>,
    max_per_tenant: usize,
    max_bytes: usize,
    max_list_bytes: usize,
    by_tenant: Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<Option<TenantStore>>>>>,
}

impl SavedBatches {
    /// A store under `dir` (`None`: in memory only) with `config`'s bounds.
    /// An existing folder is made the host user's alone, and temporary files
    /// a crash left in it are removed.
    pub fn new(dir: Option<PathBuf>, config: &SavedBatchesConfig) -> Self {
        if let Some(dir) = &dir {
            tidy(dir);
        }
        Self {
            dir,
            max_per_tenant: config.max_per_tenant,
            max_bytes: config.max_bytes,
            max_list_bytes: config.max_list_bytes,
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
        let mut store = TenantStore::default();
        let Some(path) = self.file_of(tenant.id()) else {
            return store;
        };
        // Bounded before it is read: a file can hold at most this many bytes
        // of batches and their framing.
        let most = self
            .max_per_tenant
            .saturating_mul(self.max_bytes.saturating_add(64))
            .saturating_add(64);
        // The reasons name no path: they are shown to the tenant.
        let file = match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return store,
            Err(e) => Err(e.to_string()),
            Ok(meta) if !meta.is_file() => Err("its file is not a regular file".to_owned()),
            Ok(meta) if meta.len() > most as u64 => Err(format!(
                "its file is {} bytes, more than saved_batches.max_per_tenant x max_bytes allows",
                meta.len()
            )),
            Ok(_) => std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|bytes| {
                    serde_json::from_slice::<File>(&bytes).map_err(|e| format!("not a store: {e}"))
                })
                .and_then(|file| match file.saved_batches {
                    FORMAT => Ok(file),
                    other => Err(format!(
                        "it is in store format {other}, this host reads {FORMAT}"
                    )),
                }),
        };
        let file = match file {
            Ok(file) => file,
            Err(why) => {
                tracing::error!(tenant = tenant.id(), file = %path.display(), %why, "saved batches unreadable; not offered, saves and deletes refused until it is fixed");
                store.broken = Some(why);
                return store;
            }
        };
        // What is offered is bounded here too: a file written under larger
        // bounds, or edited by hand, offers what fits, in name order.
        let (mut offered, mut listed) = (0_usize, 0_usize);
        for definition in file.batches {
            let name = definition.name.clone();
            let mut saved = check(definition, tenant, claimed);
            if let Saved::Ready { listed_bytes, .. } = &saved {
                let why = if offered >= self.max_per_tenant {
                    Some(format!(
                        "this client already has {offered} saved batches offered, the most it may (saved_batches.max_per_tenant = {})",
                        self.max_per_tenant
                    ))
                } else if listed.saturating_add(*listed_bytes) > self.max_list_bytes {
                    Some(format!(
                        "its tool is {listed_bytes} bytes in tools/list, and with it this client's saved batches would add more than saved_batches.max_list_bytes = {}",
                        self.max_list_bytes
                    ))
                } else {
                    offered += 1;
                    listed += *listed_bytes;
                    None
                };
                if let Some(why) = why {
                    saved = Saved::Unusable {
                        definition: Box::new(saved.definition().clone()),
                        why,
                    };
                }
            }
            if let Saved::Unusable { why, .. } = &saved {
                tracing::warn!(tenant = tenant.id(), batch = %name, %why, "saved batch not offered");
            }
            store.batches.insert(name, saved);
        }
        store
    }

    /// `tenant`'s saved batches, by name.
    ///
    /// # Errors
    /// [`StoreError::Unreadable`] when the tenant's file cannot be read.
    pub async fn list(
        &self,
        tenant: &Tenant,
        claimed: Claimed<'_>,
    ) -> Result<Vec<Saved>, StoreError> {
        let slot = self.slot(tenant.id());
        let mut guard = slot.lock().await;
        let store = guard.get_or_insert_with(|| self.load(tenant, claimed));
        if let Some(why) = &store.broken {
            return Err(StoreError::Unreadable(why.clone()));
        }
        Ok(store.batches.values().cloned().collect())
    }

    /// The tools `tenant`'s saved batches add to `tools/list`, each made by
    /// `tool_of` once per change and shared by every list until the next.
    ///
    /// # Errors
    /// [`StoreError::Unreadable`] when the tenant's file cannot be read.
    pub async fn tools(
        &self,
        tenant: &Tenant,
        claimed: Claimed<'_>,
        tool_of: ToolOf<'_>,
    ) -> Result<Listed, StoreError> {
        let slot = self.slot(tenant.id());
        let mut guard = slot.lock().await;
        let store = guard.get_or_insert_with(|| self.load(tenant, claimed));
        if let Some(why) = &store.broken {
            return Err(StoreError::Unreadable(why.clone()));
        }
        let batches = &store.batches;
        let listed = store.tools.get_or_insert_with(|| Listed {
            tools: batches
                .values()
                .filter_map(|saved| match saved {
                    Saved::Ready { batch, .. } => Some(tool_of(batch)),
                    Saved::Unusable { .. } => None,
                })
                .collect(),
            bytes: batches.values().map(Saved::listed_bytes).sum(),
        });
        Ok(listed.clone())
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
            Saved::Ready { batch, .. } => Some(batch.clone()),
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
        let bytes = json_bytes(&definition);
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
        let listed_bytes = listed_bytes(&saved, tenant.catalog());
        let name = saved.definition().name.clone();
        let slot = self.slot(tenant.id());
        let mut guard = slot.lock().await;
        let store = guard.get_or_insert_with(|| self.load(tenant, claimed));
        if let Some(why) = &store.broken {
            return Err(StoreError::Unreadable(why.clone()).into());
        }
        let replaced = store.batches.contains_key(&name);
        if replaced && !replace {
            return Err(SaveError::Exists(name));
        }
        if !replaced && store.batches.len() >= self.max_per_tenant {
            return Err(SaveError::Full(self.max_per_tenant));
        }
        let others: usize = store
            .batches
            .iter()
            .filter(|(other, _)| **other != name)
            .map(|(_, saved)| saved.listed_bytes())
            .sum();
        let total = others.saturating_add(listed_bytes);
        if total > self.max_list_bytes {
            return Err(SaveError::ListFull {
                bytes: listed_bytes,
                total,
                max: self.max_list_bytes,
            });
        }
        let saved = Arc::new(saved);
        let previous = store.batches.insert(
            name.clone(),
            Saved::Ready {
                batch: saved.clone(),
                listed_bytes,
            },
        );
        if let Err(error) = self.write(tenant.id(), store).await {
            // Nothing kept that is not on disk: the old entry comes back.
            match previous {
                Some(previous) => store.batches.insert(name, previous),
                None => store.batches.remove(&name),
            };
            return Err(error.into());
        }
        store.tools = None;
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
            return Err(StoreError::Unreadable(why.clone()).into());
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
        if let Err(error) = self.write(tenant.id(), store).await {
            store.batches.insert(name.to_owned(), removed);
            return Err(error.into());
        }
        store.tools = None;
        Ok(removed.definition().clone())
    }

    /// Writes `store` as `tenant`'s file: a temporary file beside it, synced,
    /// renamed over it. The error names what failed but not where: the log
    /// has the path.
    async fn write(&self, tenant: &str, store: &TenantStore) -> Result<(), StoreError> {
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
        let bytes = serde_json::to_vec_pretty(&file)
            .map_err(|e| StoreError::Write(format!("cannot encode: {e}")))?;
        let target = path.clone();
        let written = tokio::task::spawn_blocking(move || write_atomically(&target, &bytes))
            .await
            .unwrap_or_else(|e| Err(("writing", std::io::Error::other(e.to_string()))));
        written.map_err(|(step, error)| {
            tracing::error!(tenant, file = %path.display(), step, %error, "saved batches not written");
            StoreError::Write(format!("{step} failed: {error}"))
        })
    }
}

/// The size of `value` as JSON, counted without writing it out.
fn json_bytes(value: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// What `saved` adds to `tools/list`, in bytes: the JSON of its tool's name,
/// description and input and output schemas, the parts that grow with what
/// a tenant saves (the host's own options every batch tool takes add a
/// fixed hundred or so bytes that are not counted).
pub fn listed_bytes(saved: &SavedBatch, catalog: &Catalog) -> usize {
    json_bytes(&serde_json::json!({
        "name": saved.name(),
        "description": saved.description(catalog),
        "inputSchema": saved.input_schema(catalog),
        "outputSchema": saved.output_schema(),
    }))
}

/// Writes `bytes` as `path` through a temporary file of the host user's
/// alone, removed again when anything fails; the error says which step
/// failed.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), (&'static str, std::io::Error)> {
    let dir = path
        .parent()
        .ok_or(("finding the folder", std::io::ErrorKind::NotFound.into()))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| ("creating the folder", e))?;
    let tmp = path.with_extension(format!("json.tmp-{}", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(FILE_MODE)
            .open(&tmp)
            .map_err(|e| ("creating a temporary file", e))?;
        // `mode` applies only to a file it creates.
        file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
            .map_err(|e| ("creating a temporary file", e))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| ("writing a temporary file", e))?;
        std::fs::rename(&tmp, path).map_err(|e| ("replacing the file", e))
    })();
    if written.is_err()
        && let Err(e) = std::fs::remove_file(&tmp)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(file = %tmp.display(), error = %e, "temporary file of a failed write not removed");
    }
    written
}

/// Makes an existing store folder and its files the host user's alone (an
/// older host made them readable by everyone), and removes temporary files
/// a crash left: those of no live process, or of this one. Each change is
/// logged; a failure is logged and leaves the rest to be done.
fn tidy(dir: &Path) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            tracing::error!(dir = %dir.display(), error = %e, "saved-batch folder unreadable");
            return;
        }
    };
    narrow(dir, DIR_MODE);
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if let Some((_, pid)) = name.split_once(TMP_MARK) {
            if writer_alive(pid) {
                continue;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    tracing::info!(file = %path.display(), "removed the temporary file of an unfinished write")
                }
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "temporary file not removed")
                }
            }
        } else if name.ends_with(".json") {
            narrow(&path, FILE_MODE);
        }
    }
}

/// Whether `pid` (from a temporary file's name) is another process that is
/// running, and so may be writing its file now.
fn writer_alive(pid: &str) -> bool {
    let Ok(pid) = pid.parse::<i32>() else {
        return false;
    };
    if u32::try_from(pid).ok() == Some(std::process::id()) {
        return false;
    }
    rustix::process::Pid::from_raw(pid).is_some_and(|pid| {
        !matches!(
            rustix::process::test_kill_process(pid),
            Err(rustix::io::Errno::SRCH)
        )
    })
}

/// Takes group and other permissions off `path` when it has any.
fn narrow(path: &Path, mode: u32) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.file_type().is_symlink() || meta.permissions().mode() & 0o077 == 0 {
        return;
    }
    match std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
        Ok(()) => {
            tracing::info!(path = %path.display(), mode = format!("{mode:o}"), "saved-batch store made the host user's alone")
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "saved-batch store permissions not narrowed")
        }
    }
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
        Ok(batch) => Saved::Ready {
            listed_bytes: listed_bytes(&batch, tenant.catalog()),
            batch: Arc::new(batch),
        },
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

    fn plain_tool(saved: &SavedBatch) -> Tool {
        Tool::new(
            saved.name().to_owned(),
            "a saved batch",
            Arc::new(serde_json::Map::new()),
        )
    }

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777
    }

    fn bounded(dir: &Path, max_per_tenant: usize, max_list_bytes: usize) -> SavedBatches {
        SavedBatches::new(
            Some(dir.to_owned()),
            &SavedBatchesConfig {
                max_per_tenant,
                max_bytes: 1024,
                max_list_bytes,
                ..SavedBatchesConfig::default()
            },
        )
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
        let listed = second
            .saved()
            .list(&tenant, &taken)
            .await
            .expect("readable");
        let why: Vec<String> = listed
            .iter()
            .map(|saved| match saved {
                Saved::Ready { .. } => "ready".to_owned(),
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
    async fn an_unreadable_file_is_an_error_that_names_no_path_and_is_never_overwritten() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("local.json"), "{not json").expect("write");
        let host = host(dir.path(), &[]).await;
        let tenant = host.tenants().local().clone();
        let store = host.saved();
        let Err(listed) = store.list(&tenant, &nobody).await else {
            panic!("an unreadable store lists as an error");
        };
        let tools = store
            .tools(&tenant, &nobody, &plain_tool)
            .await
            .expect_err("an error");
        let saved = store
            .save(&tenant, greet("echo_it"), false, &nobody)
            .await
            .expect_err("refused");
        let deleted = store
            .delete(&tenant, "echo_it", &nobody)
            .await
            .expect_err("refused");
        for refused in [
            listed.to_string(),
            tools.to_string(),
            saved.to_string(),
            deleted.to_string(),
        ] {
            assert!(
                refused.contains(
                    "saved-batch store cannot be read (not a store: key must be a string"
                ),
                "{refused}"
            );
            assert!(
                !refused.contains(&*dir.path().to_string_lossy())
                    && !refused.contains("local.json"),
                "{refused}"
            );
        }
        let text = std::fs::read_to_string(dir.path().join("local.json")).expect("file");
        assert_eq!(text, "{not json");
    }

    #[tokio::test]
    async fn a_tenant_keeps_no_more_than_its_bound() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = crate::config::Config::default();
        config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
        let store = bounded(dir.path(), 2, 1 << 20);
        let host = crate::Host::start(config).await.expect("host");
        let tenant = host.tenants().local().clone();
        for name in ["a1", "a2"] {
            store
                .save(&tenant, greet(name), false, &nobody)
                .await
                .expect("saves");
        }
        let full = store
            .save(&tenant, greet("a3"), false, &nobody)
            .await
            .expect_err("full");
        assert!(matches!(full, SaveError::Full(2)), "{full}");
        assert!(
            full.to_string()
                .contains("saved_batches.max_per_tenant = 2"),
            "{full}"
        );
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

    #[tokio::test]
    async fn what_saved_batches_add_to_the_list_is_bounded_and_built_once_per_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = crate::config::Config::default();
        config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
        let host = crate::Host::start(config).await.expect("host");
        let tenant = host.tenants().local().clone();
        let one = {
            let batch =
                SavedBatch::new(greet("a1"), tenant.catalog(), tenant.limits()).expect("checks");
            listed_bytes(&batch, tenant.catalog())
        };
        // Room for two such tools and a half.
        let max = one * 5 / 2;
        let store = bounded(dir.path(), 100, max);
        let mut saved = Vec::new();
        let refused = loop {
            let name = format!("a{}", saved.len() + 1);
            match store.save(&tenant, greet(&name), false, &nobody).await {
                Ok(_) => saved.push(name),
                Err(e) => break e,
            }
        };
        assert_eq!(saved, ["a1", "a2"]);
        assert!(
            matches!(refused, SaveError::ListFull { bytes, total, max: m } if bytes == one && total == 3 * one && m == max),
            "{refused}"
        );
        assert!(
            refused
                .to_string()
                .contains(&format!("saved_batches.max_list_bytes = {max}")),
            "{refused}"
        );
        // Replacing one counts it once.
        store
            .save(&tenant, greet("a2"), true, &nobody)
            .await
            .expect("replaces");

        let first = store
            .tools(&tenant, &nobody, &plain_tool)
            .await
            .expect("tools");
        let again = store
            .tools(&tenant, &nobody, &plain_tool)
            .await
            .expect("tools");
        assert!(
            Arc::ptr_eq(&first.tools, &again.tools),
            "shared until a change"
        );
        let names: Vec<&str> = first.tools.iter().map(|t| &*t.name).collect();
        assert_eq!(names, ["a1", "a2"]);
        assert_eq!(first.bytes, 2 * one);
        store.delete(&tenant, "a1", &nobody).await.expect("deletes");
        let after = store
            .tools(&tenant, &nobody, &plain_tool)
            .await
            .expect("tools");
        assert!(
            !Arc::ptr_eq(&first.tools, &after.tools),
            "rebuilt after a change"
        );
        assert_eq!((after.tools.len(), after.bytes), (1, one));

        // A file with more than fits (written under larger bounds) offers
        // what fits, in name order, and lists the rest with the reason.
        let text = serde_json::to_string(&json!({
            "saved_batches": 1,
            "batches": [greet("b1"), greet("b2"), greet("b3")]
        }))
        .expect("json");
        std::fs::write(dir.path().join("local.json"), text).expect("write");
        let reloaded = bounded(dir.path(), 100, max);
        let listed = reloaded.list(&tenant, &nobody).await.expect("readable");
        let offered: Vec<bool> = listed
            .iter()
            .map(|s| matches!(s, Saved::Ready { .. }))
            .collect();
        assert_eq!(offered, [true, true, false]);
        let Saved::Unusable { why, .. } = &listed[2] else {
            unreachable!("checked above")
        };
        assert!(
            why.contains(&format!("saved_batches.max_list_bytes = {max}")),
            "{why}"
        );
        let counted = bounded(dir.path(), 1, 1 << 20);
        let listed = counted.list(&tenant, &nobody).await.expect("readable");
        let offered = listed
            .iter()
            .filter(|s| matches!(s, Saved::Ready { .. }))
            .count();
        assert_eq!(offered, 1);
    }

    #[tokio::test]
    async fn the_store_is_the_host_users_alone_and_a_failed_write_leaves_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("saved-batches");
        let mut config = crate::config::Config::default();
        config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
        let host = crate::Host::start(config).await.expect("host");
        let tenant = host.tenants().local().clone();
        let store = bounded(&root, 100, 1 << 20);
        store
            .save(&tenant, greet("a1"), false, &nobody)
            .await
            .expect("saves");
        assert_eq!(mode_of(&root), 0o700);
        assert_eq!(mode_of(&root.join("local.json")), 0o600);

        // The rename fails: the file became a folder with something in it.
        std::fs::remove_file(root.join("local.json")).expect("remove");
        std::fs::create_dir(root.join("local.json")).expect("mkdir");
        std::fs::write(root.join("local.json").join("x"), "x").expect("write");
        let failed = store
            .save(&tenant, greet("a2"), false, &nobody)
            .await
            .expect_err("not written");
        let text = failed.to_string();
        assert!(
            text.starts_with(
                "the saved-batch store could not be written (replacing the file failed: "
            ),
            "{text}"
        );
        assert!(!text.contains(&*dir.path().to_string_lossy()), "{text}");
        let left: Vec<String> = std::fs::read_dir(&root)
            .expect("dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["local.json"], "no temporary file is left");
        let names: Vec<String> = store
            .list(&tenant, &nobody)
            .await
            .expect("readable")
            .iter()
            .map(|s| s.definition().name.clone())
            .collect();
        assert_eq!(names, ["a1"], "what was not written is not kept");
        std::fs::remove_dir_all(root.join("local.json")).expect("rm");

        // An older host's modes, and a crash's temporary files: tidied at
        // start, but for one a live process may still be writing.
        std::fs::write(root.join("local.json"), "{}").expect("write");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::set_permissions(
            root.join("local.json"),
            std::fs::Permissions::from_mode(0o644),
        )
        .expect("chmod");
        let dead = root.join("local.json.tmp-2147483646");
        let ours = root.join(format!("local.json.tmp-{}", std::process::id()));
        // Process 1 is always running.
        let parent = root.join("other.json.tmp-1");
        for file in [&dead, &ours, &parent] {
            std::fs::write(file, "{half").expect("write");
        }
        let _tidied = bounded(&root, 100, 1 << 20);
        assert_eq!(mode_of(&root), 0o700);
        assert_eq!(mode_of(&root.join("local.json")), 0o600);
        assert!(!dead.exists() && !ours.exists());
        assert!(parent.exists(), "a live writer's file is left alone");
    }
}
