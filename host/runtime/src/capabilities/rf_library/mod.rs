//! `stephost:plugin/rf-library` (contract 0.4.0 on): real Robot Framework
//! libraries, each served by a Python process the host starts.
//!
//! The sandbox runs no arbitrary Python, so a library such as `Process` or a
//! team's own is imported by real Robot Framework in the operator's Python
//! environment (`[plugins.grants.NAME.rf_libraries]`), one process per instance,
//! library and import arguments. The process speaks RF's remote library
//! interface (`server.py`, embedded) on a loopback port under a random path. The
//! port is one of the host's own addresses, so no HTTP grant opens it; the
//! instance that started it gets a scope for exactly that path. The process,
//! with everything it started however it forked, ends when the instance is
//! dropped, when its session ends and when the host dies; each one is charged
//! to the session's and its tenant's caps on live processes before it starts
//! (`capabilities/processes.rs`).

mod server;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use wasmtime::component::{HasSelf, Linker};

use crate::capabilities::HostState;
use crate::capabilities::http::ScopedDestination;

pub(crate) use self::server::Server;

/// Host-side bindings (world `rf-library-capability`), from 0.4.0 on.
pub(crate) mod bindings {
    #![allow(missing_docs, unreachable_pub)]

    /// Contract 0.4.0.
    pub(crate) mod v0_4 {
        wasmtime::component::bindgen!({
            path: "../../wit/0.4.0",
            world: "rf-library-capability",
            imports: { default: async },
        });
    }

    /// Contract 0.5.0 (rf-library unchanged).
    pub(crate) mod v0_5 {
        wasmtime::component::bindgen!({
            path: "../../wit/0.5.0",
            world: "rf-library-capability",
            imports: { default: async },
        });
    }
}

/// Most servers one instance may run at once. Each is a Python process, so a
/// session importing library after library must not fork without end (the
/// session's and tenant's caps on live processes bound them too).
pub(crate) const MAX_SERVERS_PER_INSTANCE: usize = 8;
/// Most servers one instance may start over its life: a library that exits
/// as soon as it is used must not make each import fork another process.
const MAX_STARTS_PER_INSTANCE: usize = 64;
/// Most import arguments, and their total bytes: they go into an environment
/// variable of the child.
const MAX_ARGS: usize = 64;
const MAX_ARG_BYTES: usize = 64 * 1024;
/// Longest library name accepted (a module path such as `team.libs.Billing`).
const MAX_NAME_BYTES: usize = 256;

/// The `rf_libraries` part of a grant: which Robot Framework libraries the
/// plugin may have the host run, and in which Python environment.
///
/// ```toml
/// [plugins.grants.rf.rf_libraries]
/// python = "/opt/rf/bin/python"
/// libraries = ["Process", "RequestsLibrary"]
/// pythonpath = ["/srv/team-libraries"]
/// ```
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RfLibrariesGrant {
    /// The interpreter of an environment where Robot Framework 7 and the
    /// libraries are installed. A tenant cannot change it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<PathBuf>,
    /// Library names as `Import Library` writes them (`Process`,
    /// `RequestsLibrary`, `team.Billing`), compared exactly.
    pub libraries: Vec<String>,
    /// Folders put on the child's `PYTHONPATH` (a team's own libraries). A
    /// tenant cannot change them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pythonpath: Vec<PathBuf>,
}

impl RfLibrariesGrant {
    /// Whether it lists no library.
    pub fn is_empty(&self) -> bool {
        self.libraries.is_empty()
    }

    /// Whether it says nothing at all (no library, no environment).
    pub fn is_unset(&self) -> bool {
        self.libraries.is_empty() && self.python.is_none() && self.pythonpath.is_empty()
    }

    /// The host's grant narrowed by a tenant's: the libraries both list; the
    /// environment stays the host's.
    pub(crate) fn intersect(&self, tenant: &RfLibrariesGrant) -> RfLibrariesGrant {
        RfLibrariesGrant {
            python: self.python.clone(),
            libraries: tenant
                .libraries
                .iter()
                .filter(|name| self.libraries.contains(name))
                .cloned()
                .collect(),
            pythonpath: self.pythonpath.clone(),
        }
    }

    /// Checks the host's grant from the config: libraries need an
    /// interpreter, and the interpreter and folders must be absolute.
    pub fn check(&self) -> Result<(), String> {
        self.check_names()?;
        if self.is_unset() {
            return Ok(());
        }
        let Some(python) = &self.python else {
            return Err(
                "names no `python` (the interpreter of an environment with Robot Framework and the libraries installed)"
                    .into(),
            );
        };
        if !python.is_absolute() {
            return Err(format!(
                "python `{}` is not an absolute path",
                python.display()
            ));
        }
        if let Some(dir) = self.pythonpath.iter().find(|p| !p.is_absolute()) {
            return Err(format!(
                "pythonpath `{}` is not an absolute path",
                dir.display()
            ));
        }
        Ok(())
    }

    /// Checks a tenant's grant, which only narrows the library list (the
    /// environment is the host's).
    pub fn check_names(&self) -> Result<(), String> {
        match self.libraries.iter().find(|n| !valid_name(n)) {
            Some(name) => Err(format!(
                "library `{name}` is not a Python module or class name (letters, digits, `_` and `.`)"
            )),
            None => Ok(()),
        }
    }
}

/// A library name as Python imports it: dotted identifiers. Robot Framework
/// also takes file paths, which a grant never lists (they would let a session
/// pick the file).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name.split('.').all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
}

/// The servers one instance started; each is stopped when this is dropped
/// (with the instance).
#[derive(Default)]
pub(crate) struct InstanceServers {
    servers: Vec<Server>,
    /// Servers started over the instance's life, the ones that exited included.
    started: usize,
}

impl InstanceServers {
    /// Whether the instance ever started one: then processes outside the
    /// sandbox may have written to its folders.
    pub(crate) fn started_any(&self) -> bool {
        self.started > 0
    }
}

/// Links `stephost:plugin/rf-library` for a component of `contract` (0.4.0 on;
/// before that the interface does not exist and nothing is linked).
pub(crate) fn add_to_linker(
    linker: &mut Linker<HostState>,
    contract: stephost_contract::ContractVersion,
) -> wasmtime::Result<()> {
    match contract {
        stephost_contract::ContractVersion::V0_1
        | stephost_contract::ContractVersion::V0_2
        | stephost_contract::ContractVersion::V0_3 => Ok(()),
        stephost_contract::ContractVersion::V0_4 => {
            bindings::v0_4::RfLibraryCapability::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        stephost_contract::ContractVersion::V0_5 => {
            bindings::v0_5::RfLibraryCapability::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        other => Err(wasmtime::Error::msg(format!(
            "contract version {other} has no host interfaces in this build"
        ))),
    }
}

/// Whether `name` (unversioned) is the rf-library interface.
pub(crate) fn is_rf_library_import(name: &str) -> bool {
    name == "stephost:plugin/rf-library"
}

// The `rf-library` host interface: `impls.rs` is included once per contract
// version with that version's bindings as `wit`, so a version adds a module
// here, not a copy of the code.

/// Contract 0.4.0.
mod v0_4 {
    use super::bindings::v0_4 as wit;
    include!("impls.rs");
}

/// Contract 0.5.0 (rf-library unchanged).
mod v0_5 {
    use super::bindings::v0_5 as wit;
    include!("impls.rs");
}

/// Where variable file `path` may be read from: its canonical path when it is
/// inside a folder of `grant` (a Python file only in a read-only one: it is code
/// the host would run, and a writable folder lets the session write it), None
/// when it does not exist there; the refusal names the key that would allow it.
fn variable_file(
    plugin: &str,
    path: &str,
    grant: &crate::capabilities::Grant,
) -> Result<Option<PathBuf>, String> {
    let key = format!("[plugins.grants.{plugin}]");
    if grant.rf_libraries.python.is_none() {
        return Err(format!(
            "variable file '{path}' cannot be imported: the host reads variable files with Robot Framework in the operator's Python environment, and this session's grant names none (`python` under [plugins.grants.{plugin}.rf_libraries])"
        ));
    }
    // `..` taken out as the plugin's own path logic does (RF's normpath), so
    // that "inside" below is about the real place.
    let mut given = PathBuf::new();
    for part in std::path::Path::new(path).components() {
        match part {
            std::path::Component::ParentDir => {
                given.pop();
            }
            std::path::Component::CurDir => {}
            other => given.push(other),
        }
    }
    let given = given.as_path();
    if !given.is_absolute() {
        return Err(format!(
            "variable file '{path}' cannot be imported: give its absolute path (inside a folder of `folders` under {key})"
        ));
    }
    // Canonical, so a symbolic link cannot lead out of the folder.
    let Ok(real) = std::fs::canonicalize(given) else {
        let inside = grant.folders.iter().any(|f| given.starts_with(&f.path));
        return if inside {
            Ok(None)
        } else {
            Err(outside(path, &key, grant))
        };
    };
    let Some(folder) = grant.folders.iter().find(|f| real.starts_with(&f.path)) else {
        return Err(outside(path, &key, grant));
    };
    let python_code = !matches!(
        real.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("yaml" | "yml" | "json")
    );
    if python_code && !folder.read_only {
        return Err(format!(
            "variable file '{path}' cannot be imported: a Python variable file is code the host would run, so it is read only from a folder granted read-only (`read_only = true` in `folders` under {key}), and `{}` is writable; YAML and JSON variable files are read from any granted folder",
            folder.path.display()
        ));
    }
    if !real.is_file() {
        return Ok(None);
    }
    Ok(Some(real))
}

fn outside(path: &str, key: &str, grant: &crate::capabilities::Grant) -> String {
    let folders = if grant.folders.is_empty() {
        "grants none".to_string()
    } else {
        let list: Vec<String> = grant
            .folders
            .iter()
            .map(|f| f.path.display().to_string())
            .collect();
        format!("grants {}", list.join(", "))
    };
    format!(
        "variable file '{path}' is outside the folders granted to this plugin (`folders` under {key}); this session's grant {folders}"
    )
}

/// Why `name` may not start, naming the key that would allow it.
fn not_granted(plugin: &str, name: &str, grant: &RfLibrariesGrant) -> String {
    let listed = if grant.libraries.is_empty() {
        "lists none".to_string()
    } else {
        format!("lists {}", grant.libraries.join(", "))
    };
    format!(
        "library '{name}' is not enabled for this session: an operator enables it with `libraries = [\"{name}\"]` under [plugins.grants.{plugin}.rf_libraries] (with `python`, the interpreter of an environment where it is installed), and a tenant's grant must list it too; this session's grant {listed}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_module_paths() {
        assert!(valid_name("Process"));
        assert!(valid_name("team.libs.Billing"));
        assert!(valid_name("_private"));
        assert!(!valid_name(""));
        assert!(!valid_name("../x"));
        assert!(!valid_name("/srv/lib.py"));
        assert!(!valid_name("a..b"));
        assert!(!valid_name("1abc"));
        assert!(!valid_name(&"a".repeat(MAX_NAME_BYTES + 1)));
    }

    #[test]
    fn a_tenant_narrows_the_libraries_and_keeps_the_environment() {
        let host = RfLibrariesGrant {
            python: Some("/opt/rf/bin/python".into()),
            libraries: vec!["Process".into(), "RequestsLibrary".into()],
            pythonpath: vec!["/srv/libs".into()],
        };
        let tenant = RfLibrariesGrant {
            python: Some("/tmp/evil/python".into()),
            libraries: vec!["RequestsLibrary".into(), "Telnet".into()],
            pythonpath: vec!["/tmp/evil".into()],
        };
        let both = host.intersect(&tenant);
        assert_eq!(both.libraries, vec!["RequestsLibrary".to_string()]);
        assert_eq!(both.python, host.python);
        assert_eq!(both.pythonpath, host.pythonpath);
    }

    #[test]
    fn config_checks_name_the_problem() {
        let mut g = RfLibrariesGrant {
            libraries: vec!["Process".into()],
            ..Default::default()
        };
        assert!(g.check().is_err_and(|e| e.contains("no `python`")));
        g.python = Some("python3".into());
        assert!(g.check().is_err_and(|e| e.contains("absolute")));
        g.python = Some("/usr/bin/python3".into());
        assert_eq!(g.check(), Ok(()));
        g.libraries.push("../evil".into());
        assert!(g.check().is_err_and(|e| e.contains("`../evil`")));
        assert_eq!(RfLibrariesGrant::default().check(), Ok(()));
    }

    #[test]
    fn variable_files_come_only_from_granted_folders() {
        use crate::capabilities::{FolderGrant, Grant};
        let root = tempfile::tempdir().expect("temp dir");
        let root = std::fs::canonicalize(root.path()).expect("canonical");
        let (ro, rw) = (root.join("ro"), root.join("rw"));
        for dir in [&ro, &rw] {
            std::fs::create_dir(dir).expect("dir");
            for file in ["v.py", "v.yaml", "v.json"] {
                std::fs::write(dir.join(file), "X = 1\n").expect("file");
            }
        }
        std::os::unix::fs::symlink("/etc/hostname", rw.join("out.yaml")).expect("link");
        let grant = Grant {
            folders: vec![
                FolderGrant {
                    path: ro.clone(),
                    read_only: true,
                },
                FolderGrant {
                    path: rw.clone(),
                    read_only: false,
                },
            ],
            rf_libraries: RfLibrariesGrant {
                python: Some("/usr/bin/python3".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let check = |path: &std::path::Path| variable_file("rf", &path.to_string_lossy(), &grant);
        assert_eq!(check(&ro.join("v.py")), Ok(Some(ro.join("v.py"))));
        assert_eq!(check(&rw.join("v.yaml")), Ok(Some(rw.join("v.yaml"))));
        assert_eq!(check(&rw.join("v.json")), Ok(Some(rw.join("v.json"))));
        assert_eq!(check(&ro.join("missing.py")), Ok(None));
        assert!(check(&rw.join("v.py")).is_err_and(|e| e.contains("read_only = true")));
        assert!(check(&rw.join("out.yaml")).is_err_and(|e| e.contains("outside the folders")));
        assert!(check(&ro.join("../rw/../../v.py")).is_err_and(|e| e.contains("outside")));
        assert!(check(std::path::Path::new("v.py")).is_err_and(|e| e.contains("absolute")));
        let no_python = Grant {
            rf_libraries: RfLibrariesGrant::default(),
            ..grant.clone()
        };
        assert!(
            variable_file("rf", &ro.join("v.yaml").to_string_lossy(), &no_python)
                .is_err_and(|e| e.contains("[plugins.grants.rf.rf_libraries]"))
        );
    }

    #[test]
    fn the_refusal_names_the_key() {
        let text = not_granted("rf", "Process", &RfLibrariesGrant::default());
        assert!(text.contains("[plugins.grants.rf.rf_libraries]"), "{text}");
        assert!(text.contains("libraries = [\"Process\"]"), "{text}");
        assert!(text.contains("lists none"), "{text}");
    }
}
