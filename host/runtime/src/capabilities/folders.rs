//! Folder grants: host directories lent to a plugin instance's WASI context.
//!
//! A granted folder is preopened at the same path inside the guest as on the host,
//! so what a user writes (`/srv/data/report.txt`) is the real path. Paths are
//! stored canonical (absolute, no `..`, no symbolic links), which makes "inside"
//! a plain component-prefix test. The folders of one grant never overlap: a
//! read-only folder nested in a read-write one would protect nothing, because the
//! outer preopen reaches the inner folder's files too.
//!
//! Confinement below a preopen is wasmtime-wasi's (cap-std): a path or symbolic
//! link that leads outside the preopened directory is refused by the host, so
//! only the preopens decide what a guest can reach.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// One folder of a grant (`folders = [{ path = "/srv/data", read_only = false }]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FolderGrant {
    /// The host directory, lent at the same path inside the plugin. Absolute;
    /// made canonical when the config is loaded.
    pub path: PathBuf,
    /// Whether the plugin may only read. Defaults to `true`: writing needs an
    /// explicit `read_only = false`.
    #[serde(default = "read_only_default")]
    pub read_only: bool,
}

fn read_only_default() -> bool {
    true
}

/// Why a grant's `folders` are not usable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FolderError {
    /// A path is relative.
    #[error("`{0}` is not an absolute path")]
    Relative(PathBuf),
    /// A path does not name an existing directory.
    #[error("`{path}` is not an existing directory ({why})")]
    Missing {
        /// The path as configured.
        path: PathBuf,
        /// What the filesystem said.
        why: String,
    },
    /// A path is not valid UTF-8, so the guest could not name it.
    #[error("`{0}` is not valid UTF-8")]
    NotUtf8(PathBuf),
    /// A path is not in canonical form (set programmatically without
    /// [`canonicalize`]).
    #[error("`{path}` is not canonical (it resolves to `{canonical}`)")]
    NotCanonical {
        /// The path as configured.
        path: PathBuf,
        /// Its canonical form.
        canonical: PathBuf,
    },
    /// Two folders are the same directory.
    #[error("`{0}` is listed twice")]
    Duplicate(PathBuf),
    /// One folder lies inside another.
    #[error("`{inner}` lies inside `{outer}`; granted folders must not overlap")]
    Overlap {
        /// The nested folder.
        inner: PathBuf,
        /// The folder containing it.
        outer: PathBuf,
    },
}

/// Replaces each path by its canonical form where it has one; paths that do not
/// resolve are left for [`check`] to report.
pub(crate) fn canonicalize(folders: &mut [FolderGrant]) {
    for folder in folders {
        if folder.path.is_absolute()
            && let Ok(canonical) = std::fs::canonicalize(&folder.path)
        {
            folder.path = canonical;
        }
    }
}

/// Checks that every folder is an absolute, canonical, UTF-8 path of an existing
/// directory, and that no two are the same or nested.
pub(crate) fn check(folders: &[FolderGrant]) -> Result<(), FolderError> {
    for folder in folders {
        let path = &folder.path;
        if !path.is_absolute() {
            return Err(FolderError::Relative(path.clone()));
        }
        if path.to_str().is_none() {
            return Err(FolderError::NotUtf8(path.clone()));
        }
        let canonical = std::fs::canonicalize(path).map_err(|e| FolderError::Missing {
            path: path.clone(),
            why: e.to_string(),
        })?;
        if !canonical.is_dir() {
            return Err(FolderError::Missing {
                path: path.clone(),
                why: "not a directory".into(),
            });
        }
        if &canonical != path {
            return Err(FolderError::NotCanonical {
                path: path.clone(),
                canonical,
            });
        }
    }
    for (i, a) in folders.iter().enumerate() {
        for b in &folders[i + 1..] {
            if a.path == b.path {
                return Err(FolderError::Duplicate(a.path.clone()));
            }
            for (inner, outer) in [(a, b), (b, a)] {
                if inner.path.starts_with(&outer.path) {
                    return Err(FolderError::Overlap {
                        inner: inner.path.clone(),
                        outer: outer.path.clone(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// The tenant's folders that lie inside one of the host's (by path components:
/// `/srv/data2` is not inside `/srv/data`), read-only when either side says so.
/// A tenant folder outside every host folder is dropped: a tenant narrows, it
/// never widens.
pub(crate) fn intersect(host: &[FolderGrant], tenant: &[FolderGrant]) -> Vec<FolderGrant> {
    tenant
        .iter()
        .filter_map(|wanted| {
            let outer = host.iter().find(|h| wanted.path.starts_with(&h.path))?;
            Some(FolderGrant {
                path: wanted.path.clone(),
                read_only: wanted.read_only || outer.read_only,
            })
        })
        .collect()
}

/// Preopens each folder at its own path. A folder that cannot be opened (removed
/// since the config was loaded) is left out with a warning: the instance then
/// simply does not see it.
pub(crate) fn preopen(folders: &[FolderGrant], plugin: &str, builder: &mut WasiCtxBuilder) {
    for folder in folders {
        let Some(guest) = folder.path.to_str() else {
            continue;
        };
        let perms = if folder.read_only {
            FsPerms::ReadOnly
        } else {
            FsPerms::ReadWrite
        };
        if let Err(error) = builder.preopened_dir(&folder.path, guest, perms) {
            tracing::warn!(%error, plugin, folder = guest, "cannot lend a granted folder; the instance will not see it");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Whether `path` lies inside one of `folders` (component-wise).
    fn covered(folders: &[FolderGrant], path: &Path) -> bool {
        folders.iter().any(|f| path.starts_with(&f.path))
    }

    fn grant(path: &Path, read_only: bool) -> FolderGrant {
        FolderGrant {
            path: path.to_owned(),
            read_only,
        }
    }

    #[test]
    fn paths_must_be_absolute_existing_canonical_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::create_dir(root.join("a")).expect("mkdir");
        std::fs::write(root.join("file"), "x").expect("write");

        assert_eq!(
            check(&[grant(Path::new("rel/dir"), true)]),
            Err(FolderError::Relative("rel/dir".into()))
        );
        assert!(matches!(
            check(&[grant(&root.join("missing"), true)]),
            Err(FolderError::Missing { .. })
        ));
        assert!(matches!(
            check(&[grant(&root.join("file"), true)]),
            Err(FolderError::Missing { .. })
        ));
        let dotted = root.join("a/../a");
        assert!(matches!(
            check(&[grant(&dotted, true)]),
            Err(FolderError::NotCanonical { .. })
        ));
        let mut folders = vec![grant(&dotted, true)];
        canonicalize(&mut folders);
        assert_eq!(folders[0].path, root.join("a"));
        assert_eq!(check(&folders), Ok(()));
    }

    #[test]
    fn symbolic_links_are_resolved_before_comparing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::create_dir(root.join("real")).expect("mkdir");
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).expect("symlink");
        let mut folders = vec![
            grant(&root.join("real"), true),
            grant(&root.join("link"), false),
        ];
        canonicalize(&mut folders);
        assert_eq!(
            check(&folders),
            Err(FolderError::Duplicate(root.join("real"))),
            "a link to a granted folder is the same folder"
        );
    }

    #[test]
    fn folders_must_not_overlap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::create_dir_all(root.join("a/b")).expect("mkdir");
        std::fs::create_dir(root.join("ab")).expect("mkdir");
        assert_eq!(
            check(&[
                grant(&root.join("a"), false),
                grant(&root.join("a/b"), true)
            ]),
            Err(FolderError::Overlap {
                inner: root.join("a/b"),
                outer: root.join("a"),
            })
        );
        // `ab` shares a string prefix with `a`, not a path prefix.
        assert_eq!(
            check(&[grant(&root.join("a"), false), grant(&root.join("ab"), true)]),
            Ok(())
        );
    }

    #[test]
    fn tenants_narrow_by_components_and_never_widen_to_read_write() {
        let host = vec![
            grant(Path::new("/srv/data"), false),
            grant(Path::new("/srv/ro"), true),
        ];
        let tenant = vec![
            grant(Path::new("/srv/data/acme"), false),
            grant(Path::new("/srv/data2"), false),
            grant(Path::new("/srv/ro/acme"), false),
            grant(Path::new("/srv"), false),
            grant(Path::new("/etc"), true),
        ];
        let got = intersect(&host, &tenant);
        assert_eq!(
            got,
            vec![
                grant(Path::new("/srv/data/acme"), false),
                grant(Path::new("/srv/ro/acme"), true),
            ]
        );
        assert!(covered(&got, Path::new("/srv/data/acme/x")));
        assert!(!covered(&got, Path::new("/srv/data/other")));
        // A tenant may make a read-write folder read-only.
        assert_eq!(
            intersect(&host, &[grant(Path::new("/srv/data"), true)]),
            vec![grant(Path::new("/srv/data"), true)]
        );
        assert!(intersect(&[], &tenant).is_empty());
    }
}
