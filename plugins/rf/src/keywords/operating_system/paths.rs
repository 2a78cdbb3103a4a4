//! POSIX path text the way Python's `posixpath` and RF's `normpath` treat it. Pure
//! string work: nothing here touches the filesystem.

use unicode_normalization::UnicodeNormalization;

/// `posixpath.normpath`: collapses `//`, `.` and `..` without looking at the disk.
/// Two leading slashes stay two (POSIX leaves their meaning to the system).
pub(crate) fn normpath(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let initial = if path.starts_with("//") && !path.starts_with("///") {
        2
    } else if path.starts_with('/') {
        1
    } else {
        0
    };
    let mut parts: Vec<&str> = Vec::new();
    for comp in path.split('/') {
        if comp.is_empty() || comp == "." {
            continue;
        }
        if comp != ".." || (initial == 0 && parts.is_empty()) || parts.last() == Some(&"..") {
            parts.push(comp);
        } else if !parts.is_empty() {
            parts.pop();
        }
    }
    let joined = format!("{}{}", "/".repeat(initial), parts.join("/"));
    if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

/// `posixpath.join(base, *parts)`: an absolute part starts over.
pub(crate) fn join<S: AsRef<str>>(base: &str, parts: &[S]) -> String {
    let mut path = base.to_string();
    for part in parts {
        let part = part.as_ref();
        if part.starts_with('/') {
            path = part.to_string();
        } else if path.is_empty() || path.ends_with('/') {
            path.push_str(part);
        } else {
            path.push('/');
            path.push_str(part);
        }
    }
    path
}

/// `posixpath.split`: (head, tail), the head without trailing slashes unless it is
/// all slashes.
pub(crate) fn split(path: &str) -> (String, String) {
    let i = path.rfind('/').map_or(0, |i| i + 1);
    let (head, tail) = (&path[..i], &path[i..]);
    let head = if !head.is_empty() && head.chars().any(|c| c != '/') {
        head.trim_end_matches('/')
    } else {
        head
    };
    (head.to_string(), tail.to_string())
}

/// `posixpath.dirname`.
pub(crate) fn dirname(path: &str) -> String {
    split(path).0
}

/// `posixpath.basename`.
pub(crate) fn basename(path: &str) -> String {
    let i = path.rfind('/').map_or(0, |i| i + 1);
    path[i..].to_string()
}

/// `posixpath.splitext`: leading dots of the file name are not an extension.
pub(crate) fn splitext(path: &str) -> (String, String) {
    let sep = path.rfind('/').map_or(-1, |i| i as isize);
    let Some(dot) = path.rfind('.') else {
        return (path.to_string(), String::new());
    };
    if dot as isize > sep {
        let name_start = (sep + 1) as usize;
        if path[name_start..dot].chars().any(|c| c != '.') {
            return (path[..dot].to_string(), path[dot..].to_string());
        }
    }
    (path.to_string(), String::new())
}

/// RF's `Normalize Path`: `normpath` (with RF's NFC normalization), `.` for
/// nothing. `~` is not expanded: the sandbox has no home directory.
pub(crate) fn normalize_path(path: &str) -> String {
    let nfc: String = path.nfc().collect();
    normpath(&nfc)
}

/// RF's `abspath(normalize_path(path))`: relative paths are taken from `cwd`.
pub(crate) fn absnorm(path: &str, cwd: &str) -> String {
    let normal = normalize_path(path);
    if normal.starts_with('/') {
        normal
    } else {
        normpath(&join(cwd, &[normal]))
    }
}

/// RF's `Split Extension`: trailing dots stay with the extension, or with the
/// base when there is no extension.
pub(crate) fn split_extension(path: &str) -> (String, String) {
    let path = normalize_path(path);
    let base = basename(&path);
    let dots = base.matches('.').count();
    if base.starts_with(&".".repeat(dots)) {
        return (path, String::new());
    }
    let stripped = path.trim_end_matches('.');
    let trailing = ".".repeat(path.len() - stripped.len());
    let (mut basepath, extension) = splitext(stripped);
    let mut extension = extension
        .strip_prefix('.')
        .map(str::to_string)
        .unwrap_or(extension);
    if !extension.is_empty() {
        extension.push_str(&trailing);
    } else {
        basepath.push_str(&trailing);
    }
    (basepath, extension)
}

/// Whether `path` is `folder` or lies below it, by whole components (both
/// normalized and absolute): `/srv/data2` is not inside `/srv/data`.
pub(crate) fn inside(path: &str, folder: &str) -> bool {
    if folder == "/" {
        return path.starts_with('/');
    }
    path == folder
        || path
            .strip_prefix(folder)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Whether glob would treat `text` as a pattern (Python's `glob.has_magic`).
pub(crate) fn has_magic(text: &str) -> bool {
    text.contains(['*', '?', '['])
}
