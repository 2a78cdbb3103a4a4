//! A tenant's disk quota over its read-write granted folders.
//!
//! Granted folders of several tenants usually sit on one volume (docs/deploy.md),
//! so without a bound one tenant fills it for all. Every write a plugin makes
//! through WASI into a read-write folder is charged to its tenant's
//! [`DiskQuota`] before it happens ([`super::quota_fs`]), and refused with
//! WASI's `quota` error code past `limits.disk_bytes` or `limits.disk_files`.
//!
//! What counts: every directory entry (file, directory, symbolic link, hard
//! link) is one file; the apparent size (`st_size`) of each regular file is its
//! bytes, once per inode, so a sparse file counts at its full length and a hard
//! link costs no bytes. Directories and symbolic links cost no bytes.
//!
//! The usage is measured once, by walking the folders, when the tenant's first
//! instance with a read-write folder is made; from then on every charge and
//! release keeps it. The walk stops one entry past `disk_files`: a tenant that
//! already holds more than that is over its quota whatever the rest holds.
//! Writers outside the sandbox (processes the host runs for a session) are not
//! charged as they write; [`DiskQuota::remeasure`] catches up after their step.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// How much disk a tenant may hold in its read-write granted folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskLimits {
    /// Bytes of all regular files (`limits.disk_bytes`).
    pub bytes: u64,
    /// Entries: files, directories, links (`limits.disk_files`).
    pub files: u64,
}

/// What a tenant holds in its read-write granted folders.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskUsage {
    /// Bytes of regular files.
    pub bytes: u64,
    /// Entries.
    pub files: u64,
}

/// A write refused because it would pass a quota.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuotaExceeded {
    /// The bytes quota.
    #[error(
        "disk quota of tenant `{tenant}`: {} in granted folders (limits.disk_bytes) reached ({} used{})",
        size_text(*limit),
        size_text(*used),
        more_asked(*asked)
    )]
    Bytes {
        /// The tenant charged.
        tenant: String,
        /// `limits.disk_bytes`.
        limit: u64,
        /// What the tenant held.
        used: u64,
        /// What the write would have added.
        asked: u64,
    },
    /// The file-count quota.
    #[error(
        "disk quota of tenant `{tenant}`: {limit} files in granted folders (limits.disk_files) reached ({used} used)"
    )]
    Files {
        /// The tenant charged.
        tenant: String,
        /// `limits.disk_files`.
        limit: u64,
        /// What the tenant held.
        used: u64,
    },
}

/// The environment variable in which an instance with a read-write folder
/// finds its tenant's quota in the host's words: after a write of the
/// instance was refused, the refusal (which quota, its value, what was used).
/// WASI carries only an error code, and wasi-libc turns a stream write's
/// error into EIO without asking which, so this is how a guest names the
/// quota. It changes while the instance lives: read it from
/// `wasi:cli/environment.get-environment` when a write fails, not from a copy
/// taken at start.
pub(crate) const ENV: &str = "STEPHOST_DISK_QUOTA";

/// How many of the instance's writes were refused so far: a guest that sees
/// this grow since it last looked knows its failed write was one of them.
pub(crate) const ENV_REFUSALS: &str = "STEPHOST_DISK_QUOTA_REFUSALS";

/// One instance's view of its tenant's quota: the quota, and the refusals of
/// its writes, for [`ENV`] and [`ENV_REFUSALS`].
#[derive(Debug)]
pub(crate) struct InstanceDisk {
    pub(crate) quota: std::sync::Arc<DiskQuota>,
    refused: Mutex<Refused>,
}

/// The refusals of one instance's writes.
#[derive(Debug, Default)]
struct Refused {
    count: u64,
    last: Option<QuotaExceeded>,
}

impl InstanceDisk {
    pub(crate) fn new(quota: std::sync::Arc<DiskQuota>) -> Self {
        Self {
            quota,
            refused: Mutex::new(Refused::default()),
        }
    }

    /// [`DiskQuota::charge`], remembering a refusal.
    pub(crate) fn charge(&self, bytes: u64, files: u64) -> Result<(), QuotaExceeded> {
        self.quota.charge(bytes, files).inspect_err(|refusal| {
            let mut refused = self.refused();
            refused.count += 1;
            refused.last = Some(refusal.clone());
        })
    }

    /// [`DiskQuota::release`].
    pub(crate) fn release(&self, bytes: u64, files: u64) {
        self.quota.release(bytes, files);
    }

    /// The variables the instance's environment gets: [`ENV`] (the last
    /// refusal, else the quota) and [`ENV_REFUSALS`].
    pub(crate) fn env(&self) -> [(String, String); 2] {
        let (count, text) = {
            let refused = self.refused();
            (
                refused.count,
                refused.last.as_ref().map(ToString::to_string),
            )
        };
        let text = text.unwrap_or_else(|| {
            let q = &self.quota;
            format!(
                "disk quota of tenant `{}`: {} and {} files in granted folders (limits.disk_bytes, limits.disk_files)",
                q.tenant,
                size_text(q.limits.bytes),
                q.limits.files
            )
        });
        [
            (ENV.to_owned(), text),
            (ENV_REFUSALS.to_owned(), count.to_string()),
        ]
    }

    fn refused(&self) -> std::sync::MutexGuard<'_, Refused> {
        // Two plain fields, consistent after any panic.
        self.refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `, 4 KiB more asked`, or nothing when the refused call asked for no bytes
/// (a new entry refused because the tenant is already over its bytes).
fn more_asked(asked: u64) -> String {
    if asked == 0 {
        String::new()
    } else {
        format!(", {} more asked", size_text(asked))
    }
}

/// `64 MiB`, `1 GiB`, `4 KiB`, or a plain number of bytes when not a whole
/// number of any of those.
pub(crate) fn size_text(bytes: u64) -> String {
    const KIB: u64 = 1024;
    for (unit, name) in [(KIB * KIB * KIB, "GiB"), (KIB * KIB, "MiB"), (KIB, "KiB")] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{} {name}", bytes / unit);
        }
    }
    format!("{bytes} bytes")
}

/// One tenant's disk quota, shared by all of the tenant's instances.
#[derive(Debug)]
pub struct DiskQuota {
    tenant: String,
    limits: DiskLimits,
    /// The tenant's read-write folders, none inside another.
    roots: Vec<PathBuf>,
    usage: Mutex<DiskUsage>,
    /// Set once the folders were walked.
    measured: tokio::sync::OnceCell<()>,
    /// Whether the last charge was refused, so a refusal is logged once per
    /// run of refusals rather than for every write of a loop.
    refusing: AtomicBool,
}

impl DiskQuota {
    /// A quota of `limits` for `tenant` over `folders` (its read-write granted
    /// folders, canonical; duplicates and folders inside another are dropped,
    /// so nothing is counted twice).
    pub fn new(
        tenant: &str,
        limits: DiskLimits,
        folders: impl IntoIterator<Item = PathBuf>,
    ) -> Self {
        let mut roots: Vec<PathBuf> = folders.into_iter().collect();
        roots.sort();
        roots.dedup();
        let outermost: Vec<PathBuf> = roots
            .iter()
            .filter(|r| !roots.iter().any(|o| o != *r && r.starts_with(o)))
            .cloned()
            .collect();
        Self {
            tenant: tenant.to_owned(),
            limits,
            roots: outermost,
            usage: Mutex::new(DiskUsage::default()),
            measured: tokio::sync::OnceCell::new(),
            refusing: AtomicBool::new(false),
        }
    }

    /// The limits.
    pub fn limits(&self) -> DiskLimits {
        self.limits
    }

    /// The folders charged.
    pub fn folders(&self) -> &[PathBuf] {
        &self.roots
    }

    /// What the tenant holds, as far as the quota knows.
    pub fn usage(&self) -> DiskUsage {
        *self.lock()
    }

    /// Walks the folders the first time any instance needs the usage; later
    /// calls wait for that walk and return. The walk runs off the async threads.
    pub async fn measure_once(&self) {
        self.measured
            .get_or_init(|| async {
                let usage = self.walk().await;
                *self.lock() = usage;
                tracing::debug!(tenant = %self.tenant, bytes = usage.bytes, files = usage.files, "measured the disk usage of the tenant's folders");
            })
            .await;
    }

    /// Walks the folders again and takes what they hold as the usage: for
    /// writers the sandbox does not see (processes the host runs for a
    /// session). A charge made while the walk runs, for bytes not yet on disk,
    /// is lost; the next measure puts it back.
    pub async fn remeasure(&self) {
        self.measure_once().await;
        let usage = self.walk().await;
        *self.lock() = usage;
    }

    async fn walk(&self) -> DiskUsage {
        let roots = self.roots.clone();
        let cap = self.limits.files.saturating_add(1);
        tokio::task::spawn_blocking(move || walk(&roots, cap))
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "the walk of granted folders failed; counting them as empty");
                DiskUsage::default()
            })
    }

    /// Charges `bytes` and `files` if both fit, before they are spent.
    /// Charging nothing always succeeds, also for a tenant already over its
    /// quota (rewriting a file in place costs nothing).
    pub(crate) fn charge(&self, bytes: u64, files: u64) -> Result<(), QuotaExceeded> {
        if bytes == 0 && files == 0 {
            return Ok(());
        }
        let refused = {
            let mut usage = self.lock();
            if usage.bytes.saturating_add(bytes) > self.limits.bytes {
                Some(QuotaExceeded::Bytes {
                    tenant: self.tenant.clone(),
                    limit: self.limits.bytes,
                    used: usage.bytes,
                    asked: bytes,
                })
            } else if usage.files.saturating_add(files) > self.limits.files {
                Some(QuotaExceeded::Files {
                    tenant: self.tenant.clone(),
                    limit: self.limits.files,
                    used: usage.files,
                })
            } else {
                usage.bytes += bytes;
                usage.files += files;
                None
            }
        };
        match refused {
            None => {
                self.refusing.store(false, Ordering::Relaxed);
                Ok(())
            }
            Some(refusal) => {
                if !self.refusing.swap(true, Ordering::Relaxed) {
                    tracing::info!(tenant = %self.tenant, "{refusal}");
                }
                Err(refusal)
            }
        }
    }

    /// Gives back what a removal, a truncation or a failed write freed.
    pub(crate) fn release(&self, bytes: u64, files: u64) {
        let mut usage = self.lock();
        usage.bytes = usage.bytes.saturating_sub(bytes);
        usage.files = usage.files.saturating_sub(files);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DiskUsage> {
        // The guarded value is two counters, consistent after any panic.
        self.usage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What `roots` hold, counted as a charge would count it, stopping once
/// `cap` entries were seen. Symbolic links are counted, never followed;
/// unreadable directories count as empty.
pub(crate) fn walk(roots: &[PathBuf], cap: u64) -> DiskUsage {
    let mut usage = DiskUsage::default();
    let mut linked = HashSet::new();
    let mut pending: Vec<PathBuf> = roots.to_vec();
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if usage.files >= cap {
                return usage;
            }
            usage.files += 1;
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            usage.bytes = usage.bytes.saturating_add(entry_bytes(&meta, &mut linked));
            if meta.is_dir() {
                pending.push(path);
            }
        }
    }
    usage
}

/// The bytes an entry costs: a regular file's size, once per inode.
fn entry_bytes(meta: &std::fs::Metadata, linked: &mut HashSet<(u64, u64)>) -> u64 {
    if !meta.is_file() {
        return 0;
    }
    if meta.nlink() > 1 && !linked.insert((meta.dev(), meta.ino())) {
        return 0;
    }
    meta.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size_text(64 * MIB), "64 MiB");
        assert_eq!(size_text(1024 * MIB), "1 GiB");
        assert_eq!(size_text(4096), "4 KiB");
        assert_eq!(size_text(1000), "1000 bytes");
        assert_eq!(size_text(0), "0 bytes");
    }

    #[test]
    fn charges_past_either_limit_are_refused_and_name_the_key() {
        let quota = DiskQuota::new(
            "acme",
            DiskLimits {
                bytes: MIB,
                files: 2,
            },
            Vec::new(),
        );
        quota.charge(MIB - 10, 1).expect("fits");
        let err = quota.charge(11, 0).expect_err("one byte too many");
        assert_eq!(
            err.to_string(),
            "disk quota of tenant `acme`: 1 MiB in granted folders (limits.disk_bytes) reached (1048566 bytes used, 11 bytes more asked)"
        );
        quota.charge(10, 1).expect("exactly the limit");
        let err = quota.charge(0, 1).expect_err("a third file");
        assert!(
            err.to_string()
                .contains("2 files in granted folders (limits.disk_files)"),
            "{err}"
        );
        quota.charge(0, 0).expect("nothing is always free");
        assert_eq!(
            quota.usage(),
            DiskUsage {
                bytes: MIB,
                files: 2
            }
        );
        quota.release(MIB, 1);
        quota.release(MIB, 5);
        assert_eq!(
            quota.usage(),
            DiskUsage::default(),
            "releases never go below zero"
        );
    }

    #[tokio::test]
    async fn the_walk_counts_entries_and_bytes_once_per_inode_and_stops_at_the_cap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::create_dir_all(root.join("a/b")).expect("mkdir");
        std::fs::write(root.join("a/b/one"), vec![0u8; 1000]).expect("write");
        std::fs::write(root.join("two"), vec![0u8; 24]).expect("write");
        std::fs::hard_link(root.join("two"), root.join("a/two-again")).expect("link");
        std::os::unix::fs::symlink("/etc/passwd", root.join("out")).expect("symlink");
        // a, a/b, a/b/one, two, a/two-again, out
        assert_eq!(
            walk(std::slice::from_ref(&root), 100),
            DiskUsage {
                bytes: 1024,
                files: 6
            }
        );
        assert_eq!(walk(std::slice::from_ref(&root), 3).files, 3);

        let quota = DiskQuota::new(
            "acme",
            DiskLimits {
                bytes: MIB,
                files: 100,
            },
            [root.clone(), root.join("a"), root.clone()],
        );
        assert_eq!(
            quota.folders(),
            std::slice::from_ref(&root),
            "nested and repeated folders count once"
        );
        quota.measure_once().await;
        assert_eq!(
            quota.usage(),
            DiskUsage {
                bytes: 1024,
                files: 6
            }
        );
        std::fs::write(root.join("three"), vec![0u8; 3]).expect("write");
        quota.measure_once().await;
        assert_eq!(quota.usage().files, 6, "measured once");
        quota.remeasure().await;
        assert_eq!(
            quota.usage(),
            DiskUsage {
                bytes: 1027,
                files: 7
            }
        );
    }
}
