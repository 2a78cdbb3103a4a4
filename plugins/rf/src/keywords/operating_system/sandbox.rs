//! What the OperatingSystem keywords may touch, and the filesystem calls they make.
//!
//! The host lends the rf plugin the folders of its grant (`folders` in
//! `[plugins.grants.rf]`) as WASI preopens at their own paths; nothing else of the
//! filesystem exists for the instance. Every path is checked against those folders
//! before it is used, so a path outside them fails naming the path and the config
//! key, instead of with whatever errno WASI would give. The host's preopens remain
//! the real boundary (a symbolic link out of a folder is refused there).
//!
//! OS errors are reported as Python reports them (`FileNotFoundError: [Errno 2] No
//! such file or directory: '/x'`), with Linux errno numbers whatever the sandbox's
//! own numbering, since that is what RF prints on the machines it runs on.

use std::io::{self, Read};

use super::paths;
use crate::error::{RfError, RfResult};
use crate::value::str_repr;

/// Largest file Get File, Get Binary File and Log File read (8 MiB): the text is
/// held in memory and returned in the step result, which the host bounds too.
pub(crate) const MAX_READ_BYTES: u64 = 8 * 1024 * 1024;

/// Most entries one directory listing (or glob) returns.
pub(crate) const MAX_LIST_ITEMS: usize = 10_000;

/// Deepest directory tree Copy Directory, Remove Directory and Empty Directory walk.
pub(crate) const MAX_TREE_DEPTH: usize = 64;

/// Most entries Copy Directory, Remove Directory and Empty Directory touch in one call.
pub(crate) const MAX_TREE_ITEMS: usize = 100_000;

/// The config key that grants folders, for messages.
pub(crate) const GRANT_KEY: &str = "`folders` in [plugins.grants.rf] of the host config";

/// A folder the host lent this instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Folder {
    /// Its path, the same inside the sandbox as on the host.
    pub(crate) path: String,
    /// Whether the grant is read-only.
    pub(crate) read_only: bool,
}

#[cfg(target_arch = "wasm32")]
thread_local! {
    static FOLDERS: Vec<Folder> = discover();
}

/// The preopens WASI gives this instance; a directory whose descriptor may not
/// mutate is read-only.
#[cfg(target_arch = "wasm32")]
fn discover() -> Vec<Folder> {
    use wasi::filesystem::types::DescriptorFlags;
    wasi::filesystem::preopens::get_directories()
        .into_iter()
        .map(|(descriptor, name)| Folder {
            path: paths::normpath(&name),
            read_only: descriptor
                .get_flags()
                .map_or(true, |f| !f.contains(DescriptorFlags::MUTATE_DIRECTORY)),
        })
        .filter(|f| f.path.starts_with('/'))
        .collect()
}

/// The folders granted to this instance.
#[cfg(target_arch = "wasm32")]
pub(crate) fn folders() -> Vec<Folder> {
    FOLDERS.with(Clone::clone)
}

#[cfg(not(target_arch = "wasm32"))]
thread_local! {
    static FOLDERS: std::cell::RefCell<Vec<Folder>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The folders granted to this instance: natively, what a test set.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn folders() -> Vec<Folder> {
    FOLDERS.with(|f| f.borrow().clone())
}

/// Natively there are no preopens: unit tests say what is granted.
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) fn set_folders(folders: Vec<Folder>) {
    FOLDERS.with(|f| *f.borrow_mut() = folders);
}

/// The sandbox's working directory, which relative paths start from: the first
/// granted folder (`/` when none is).
pub(crate) fn cwd() -> String {
    folders()
        .into_iter()
        .next()
        .map_or_else(|| "/".to_string(), |f| f.path)
}

fn describe_folders(folders: &[Folder]) -> String {
    if folders.is_empty() {
        return "none are granted".into();
    }
    folders
        .iter()
        .map(|f| {
            format!(
                "'{}' {}",
                f.path,
                if f.read_only {
                    "read-only"
                } else {
                    "read-write"
                }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The folder `path` (absolute, normalized) lies in, or the sandbox's refusal.
pub(crate) fn folder_of(path: &str) -> RfResult<Folder> {
    let all = folders();
    // POSIX lets `//x` mean something else, Linux does not: compare as `/x`.
    let probe = if path.starts_with("//") {
        format!("/{}", path.trim_start_matches('/'))
    } else {
        path.to_string()
    };
    // Nested grants cannot happen (the host refuses overlapping folders), so
    // the first match is the only one.
    all.iter()
        .find(|f| paths::inside(&probe, &f.path))
        .cloned()
        .ok_or_else(|| {
            RfError::denied(format!(
                "Path '{path}' is outside the folders granted to the rf plugin ({}); the host grants folders with {GRANT_KEY}.",
                describe_folders(&all)
            ))
        })
}

/// Checks that `path` may be read.
pub(crate) fn readable(path: &str) -> RfResult<()> {
    folder_of(path).map(|_| ())
}

/// Checks that `path` may be changed (created, written, removed).
pub(crate) fn writable(path: &str) -> RfResult<()> {
    let folder = folder_of(path)?;
    if folder.read_only {
        return Err(read_only(path, &folder));
    }
    Ok(())
}

fn read_only(path: &str, folder: &Folder) -> RfError {
    RfError::denied(format!(
        "Cannot change '{path}': the folder '{}' is granted to the rf plugin read-only (`read_only` of {GRANT_KEY}).",
        folder.path
    ))
}

/// An OS error as Python words it: `FileNotFoundError: [Errno 2] No such file or
/// directory: '/x'` (with ` -> '/y'` for two-path calls).
pub(crate) fn os_error(error: &io::Error, path: &str, other: Option<&str>) -> RfError {
    let target = match other {
        Some(o) => format!("{} -> {}", str_repr(path), str_repr(o)),
        None => str_repr(path),
    };
    match linux_errno(error) {
        Some(Errno::NotCapable) => escaped(path),
        // WASI answers "not permitted" for a write through a read-only preopen
        // and for a path a symbolic link leads out of the preopen.
        Some(Errno::Known(1)) if cfg!(target_arch = "wasm32") => match folder_of(path) {
            Ok(folder) if folder.read_only => read_only(path, &folder),
            _ => escaped(path),
        },
        Some(Errno::Known(n)) if let Some(quota) = disk_quota_refusal(n) => {
            let (class, text) = describe_errno(EDQUOT);
            RfError::py(
                class,
                format!("[Errno {EDQUOT}] {text}: {target} ({quota})"),
            )
        }
        Some(Errno::Known(n)) => {
            let (class, text) = describe_errno(n);
            RfError::py(class, format!("[Errno {n}] {text}: {target}"))
        }
        None => RfError::py("OSError", format!("{}: {target}", kind_text(error))),
    }
}

/// Linux's "Disk quota exceeded", which a write refused at the tenant's disk
/// quota fails with (WASI `quota`).
const EDQUOT: i32 = 122;

/// Linux's "Input/output error".
const EIO: i32 = 5;

/// The environment variable in which the host describes the instance's disk
/// quota, and after a refused write the refusal (which quota, its value).
const DISK_QUOTA_ENV: &str = "STEPHOST_DISK_QUOTA";

/// The environment variable counting the host's refusals of this instance's
/// writes.
const DISK_REFUSALS_ENV: &str = "STEPHOST_DISK_QUOTA_REFUSALS";

/// The refusals of this instance's writes already reported.
static REPORTED_REFUSALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// When a failure with Linux errno `n` is the host refusing a write at the
/// tenant's disk quota, the host's words for it. EDQUOT always is; EIO is when
/// the host refused a write since the last failure reported: wasi-libc turns
/// the error of a stream write into EIO without asking the host which it was.
fn disk_quota_refusal(n: i32) -> Option<String> {
    if n != EDQUOT && n != EIO {
        return None;
    }
    let words = host_env(DISK_QUOTA_ENV);
    let refusals = host_env(DISK_REFUSALS_ENV).and_then(|c| c.parse::<u64>().ok());
    let fresh = refusals.is_some_and(|count| {
        REPORTED_REFUSALS.fetch_max(count, std::sync::atomic::Ordering::Relaxed) < count
    });
    if n == EIO && !fresh {
        return None;
    }
    Some(words.unwrap_or_else(|| {
        "the tenant's disk quota in granted folders (limits.disk_bytes, limits.disk_files) is reached".into()
    }))
}

/// A variable of the environment the host gives now: the host changes the
/// disk quota's while the instance lives, so it is asked each time rather than
/// read from std's copy of the environment taken at start.
#[cfg(target_arch = "wasm32")]
fn host_env(name: &str) -> Option<String> {
    wasi::cli::environment::get_environment()
        .into_iter()
        .find_map(|(key, value)| (key == name).then_some(value))
}

/// Natively: the process environment.
#[cfg(not(target_arch = "wasm32"))]
fn host_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The refusal for a path that resolves outside every granted folder.
fn escaped(path: &str) -> RfError {
    RfError::denied(format!(
        "Path '{path}' leads outside the folders granted to the rf plugin (through a symbolic link) or needs a permission the sandbox does not give ({}); the host grants folders with {GRANT_KEY}.",
        describe_folders(&folders())
    ))
}

enum Errno {
    /// A Linux errno number.
    Known(i32),
    /// WASI's "not capable": the sandbox itself said no.
    NotCapable,
}

/// The Linux errno for `error`, from the platform's own number.
fn linux_errno(error: &io::Error) -> Option<Errno> {
    let raw = error.raw_os_error()?;
    if cfg!(target_arch = "wasm32") {
        // wasi-libc's numbering (the WASI preview 1 errno table).
        let linux = match raw {
            2 => 13,  // EACCES
            8 => 9,   // EBADF
            10 => 16, // EBUSY
            19 => EDQUOT,
            20 => 17, // EEXIST
            22 => 27, // EFBIG
            28 => 22, // EINVAL
            29 => 5,  // EIO
            31 => 21, // EISDIR
            32 => 40, // ELOOP
            34 => 31, // EMLINK
            37 => 36, // ENAMETOOLONG
            44 => 2,  // ENOENT
            48 => 12, // ENOMEM
            51 => 28, // ENOSPC
            52 => 38, // ENOSYS
            54 => 20, // ENOTDIR
            55 => 39, // ENOTEMPTY
            58 => 95, // ENOTSUP
            63 => 1,  // EPERM
            69 => 30, // EROFS
            74 => 26, // ETXTBSY
            75 => 18, // EXDEV
            76 => return Some(Errno::NotCapable),
            _ => return None,
        };
        Some(Errno::Known(linux))
    } else {
        Some(Errno::Known(raw))
    }
}

/// Python's exception class and `strerror` for a Linux errno.
fn describe_errno(n: i32) -> (&'static str, &'static str) {
    match n {
        1 => ("PermissionError", "Operation not permitted"),
        2 => ("FileNotFoundError", "No such file or directory"),
        5 => ("OSError", "Input/output error"),
        9 => ("OSError", "Bad file descriptor"),
        12 => ("OSError", "Cannot allocate memory"),
        13 => ("PermissionError", "Permission denied"),
        16 => ("OSError", "Device or resource busy"),
        17 => ("FileExistsError", "File exists"),
        18 => ("OSError", "Invalid cross-device link"),
        20 => ("NotADirectoryError", "Not a directory"),
        21 => ("IsADirectoryError", "Is a directory"),
        22 => ("OSError", "Invalid argument"),
        26 => ("OSError", "Text file busy"),
        27 => ("OSError", "File too large"),
        28 => ("OSError", "No space left on device"),
        30 => ("OSError", "Read-only file system"),
        31 => ("OSError", "Too many links"),
        36 => ("OSError", "File name too long"),
        38 => ("OSError", "Function not implemented"),
        39 => ("OSError", "Directory not empty"),
        40 => ("OSError", "Too many levels of symbolic links"),
        95 => ("OSError", "Operation not supported"),
        EDQUOT => ("OSError", "Disk quota exceeded"),
        _ => ("OSError", "Unknown error"),
    }
}

fn kind_text(error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::NotFound => "No such file or directory".into(),
        io::ErrorKind::PermissionDenied => "Permission denied".into(),
        io::ErrorKind::AlreadyExists => "File exists".into(),
        _ => error.kind().to_string(),
    }
}

// ---------------------------------------------------------------------------
// Queries, as os.path answers them: any error is "no".

/// `os.path.exists`.
pub(crate) fn exists(path: &str) -> bool {
    std::fs::metadata(path).is_ok()
}

/// `os.path.lexists`.
pub(crate) fn lexists(path: &str) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// `os.path.isdir`.
pub(crate) fn is_dir(path: &str) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_dir())
}

/// `os.path.isfile`.
pub(crate) fn is_file(path: &str) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// The names in directory `path`, sorted and NFC-normalized as RF's `_list_dir`
/// gives them, at most [`MAX_LIST_ITEMS`].
pub(crate) fn list_names(path: &str) -> RfResult<Vec<String>> {
    let mut names = list_names_unsorted(path)?;
    names.sort();
    Ok(names)
}

/// The names in directory `path` in the order the directory gives them (Python's
/// `os.scandir`, which glob uses), at most [`MAX_LIST_ITEMS`].
fn list_names_unsorted(path: &str) -> RfResult<Vec<String>> {
    use unicode_normalization::UnicodeNormalization;
    let entries = std::fs::read_dir(path).map_err(|e| os_error(&e, path, None))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| os_error(&e, path, None))?;
        if names.len() == MAX_LIST_ITEMS {
            return Err(RfError::fail(format!(
                "Directory '{path}' has more than {MAX_LIST_ITEMS} items; the rf sandbox lists at most {MAX_LIST_ITEMS} in one call."
            )));
        }
        names.push(
            entry
                .file_name()
                .to_string_lossy()
                .nfc()
                .collect::<String>(),
        );
    }
    Ok(names)
}

/// Reads all of file `path`, refusing one larger than [`MAX_READ_BYTES`].
pub(crate) fn read_bounded(path: &str) -> RfResult<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| os_error(&e, path, None))?;
    let too_big = |size: u64| {
        RfError::fail(format!(
            "File '{path}' is {size} bytes, larger than the {MAX_READ_BYTES} bytes (8 MiB) the rf sandbox reads into memory at once; Grep File reads large files line by line."
        ))
    };
    if let Ok(meta) = file.metadata() {
        if meta.is_dir() {
            return Err(os_error(
                &io::Error::from_raw_os_error(if cfg!(target_arch = "wasm32") { 31 } else { 21 }),
                path,
                None,
            ));
        }
        if meta.len() > MAX_READ_BYTES {
            return Err(too_big(meta.len()));
        }
    }
    let mut bytes = Vec::new();
    // The size can grow between the check and the read: the read stops one past.
    file.take(MAX_READ_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| os_error(&e, path, None))?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Python's `glob.glob(pattern)` for an absolute pattern, in directory order as
/// glob gives them (RF sorts only for messages); at most [`MAX_LIST_ITEMS`] matches. Names starting with a dot match only a pattern
/// that starts with one, as in glob.
pub(crate) fn glob(pattern: &str) -> RfResult<Vec<String>> {
    if !paths::has_magic(pattern) {
        return Ok(if lexists(pattern) {
            vec![pattern.to_string()]
        } else {
            Vec::new()
        });
    }
    let components: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    // Start below the literal prefix: in the sandbox the folders above a granted
    // one do not exist, so walking down from `/` would find nothing.
    let first_magic = components
        .iter()
        .position(|c| paths::has_magic(c))
        .unwrap_or(components.len());
    let root = if pattern.starts_with('/') { "/" } else { "" };
    let prefix = format!("{root}{}", components[..first_magic].join("/"));
    if !prefix.is_empty() && !is_dir(&prefix) {
        return Ok(Vec::new());
    }
    let mut current = vec![prefix];
    for (i, comp) in components.iter().enumerate().skip(first_magic) {
        let last = i + 1 == components.len();
        let mut next = Vec::new();
        for base in &current {
            if paths::has_magic(comp) {
                let dir = if base.is_empty() { "." } else { base.as_str() };
                let Ok(names) = list_names_unsorted(dir) else {
                    continue;
                };
                let Ok(re) = regex::Regex::new(&crate::matching::glob_to_regex(comp)) else {
                    continue;
                };
                for name in names {
                    if name.starts_with('.') && !comp.starts_with('.') {
                        continue;
                    }
                    if re.is_match(&name) {
                        let path = paths::join(base, &[name]);
                        if last || is_dir(&path) {
                            next.push(path);
                        }
                    }
                }
            } else {
                let path = paths::join(base, &[comp]);
                if (last && lexists(&path)) || (!last && is_dir(&path)) {
                    next.push(path);
                }
            }
            if next.len() > MAX_LIST_ITEMS {
                return Err(RfError::fail(format!(
                    "Pattern '{pattern}' matches more than {MAX_LIST_ITEMS} paths; the rf sandbox expands at most {MAX_LIST_ITEMS} in one call."
                )));
            }
        }
        current = next;
    }
    Ok(current)
}

/// RF's `_glob`: the path itself when it exists, else what it matches as a pattern.
pub(crate) fn glob_or_self(path: &str) -> RfResult<Vec<String>> {
    if exists(path) {
        Ok(vec![path.to_string()])
    } else {
        glob(path)
    }
}

/// A walk budget for recursive operations, so a deep or huge tree fails clearly
/// instead of exhausting the instance.
pub(crate) struct Budget {
    items: usize,
}

impl Budget {
    pub(crate) fn new() -> Self {
        Self { items: 0 }
    }

    fn enter(&mut self, root: &str, depth: usize) -> RfResult<()> {
        self.items += 1;
        if depth > MAX_TREE_DEPTH {
            return Err(RfError::fail(format!(
                "Directory '{root}' is nested deeper than {MAX_TREE_DEPTH} levels; the rf sandbox walks at most {MAX_TREE_DEPTH}."
            )));
        }
        if self.items > MAX_TREE_ITEMS {
            return Err(RfError::fail(format!(
                "Directory '{root}' holds more than {MAX_TREE_ITEMS} items; the rf sandbox walks at most {MAX_TREE_ITEMS} in one call."
            )));
        }
        Ok(())
    }
}

/// `shutil.rmtree(path)`, bounded. Symbolic links are removed, never followed.
pub(crate) fn remove_tree(path: &str, budget: &mut Budget) -> RfResult<()> {
    remove_tree_at(path, path, 0, budget)
}

fn remove_tree_at(root: &str, path: &str, depth: usize, budget: &mut Budget) -> RfResult<()> {
    budget.enter(root, depth)?;
    let meta = std::fs::symlink_metadata(path).map_err(|e| os_error(&e, path, None))?;
    if !meta.is_dir() {
        return std::fs::remove_file(path).map_err(|e| os_error(&e, path, None));
    }
    for name in list_names(path)? {
        remove_tree_at(root, &paths::join(path, &[name]), depth + 1, budget)?;
    }
    std::fs::remove_dir(path).map_err(|e| os_error(&e, path, None))
}

/// `shutil.copytree(source, dest)`, bounded: `dest` must not exist; links are
/// followed, as copytree does by default.
pub(crate) fn copy_tree(source: &str, dest: &str, budget: &mut Budget) -> RfResult<()> {
    copy_tree_at(source, source, dest, 0, budget)
}

fn copy_tree_at(
    root: &str,
    source: &str,
    dest: &str,
    depth: usize,
    budget: &mut Budget,
) -> RfResult<()> {
    budget.enter(root, depth)?;
    std::fs::create_dir(dest).map_err(|e| os_error(&e, dest, None))?;
    for name in list_names(source)? {
        let from = paths::join(source, std::slice::from_ref(&name));
        let to = paths::join(dest, &[name]);
        if is_dir(&from) {
            copy_tree_at(root, &from, &to, depth + 1, budget)?;
        } else {
            budget.enter(root, depth + 1)?;
            std::fs::copy(&from, &to).map_err(|e| os_error(&e, &from, Some(&to)))?;
        }
    }
    Ok(())
}

/// `os.makedirs(path)`.
pub(crate) fn make_dirs(path: &str) -> RfResult<()> {
    std::fs::create_dir_all(path).map_err(|e| {
        // Something is there that cannot be followed: a link leading out of the
        // folder (or one that leads nowhere).
        if e.kind() == io::ErrorKind::AlreadyExists && !exists(path) {
            escaped(path)
        } else {
            os_error(&e, path, None)
        }
    })
}

/// `shutil.move(source, dest)`: a rename, else a copy and a removal (a rename
/// across two granted folders may not be possible).
pub(crate) fn move_path(source: &str, dest: &str) -> RfResult<()> {
    let dest = if is_dir(dest) {
        let inside = paths::join(dest, &[paths::basename(source.trim_end_matches('/'))]);
        if exists(&inside) {
            return Err(RfError::py(
                "Error",
                format!("Destination path '{inside}' already exists"),
            ));
        }
        inside
    } else {
        dest.to_string()
    };
    match std::fs::rename(source, &dest) {
        Ok(()) => Ok(()),
        Err(e) if !exists(source) => Err(os_error(&e, source, Some(&dest))),
        Err(_) => {
            if is_dir(source) {
                copy_tree(source, &dest, &mut Budget::new())?;
                remove_tree(source, &mut Budget::new())
            } else {
                std::fs::copy(source, &dest).map_err(|e| os_error(&e, source, Some(&dest)))?;
                std::fs::remove_file(source).map_err(|e| os_error(&e, source, None))
            }
        }
    }
}

/// `os.path.samefile`. Natively: the same device and inode. std's WASI metadata
/// extensions are unstable, so in the component two paths are the same file when
/// they are the same normalized path (links to a file are not recognized).
pub(crate) fn same_file(a: &str, b: &str) -> bool {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(target_arch = "wasm32")]
    {
        paths::normpath(a) == paths::normpath(b) && exists(a)
    }
}
