//! The OperatingSystem library (robot/libraries/OperatingSystem.py), inside the folders
//! the host grants the rf plugin.
//!
//! File and directory keywords behave as in RF, messages and log lines included, for
//! paths inside a granted folder ([`sandbox`]); any other path fails naming it and the
//! config key that grants folders. Relative paths start from the first granted folder.
//! Environment variables are the session's own: an environment that starts empty, is
//! changed by `Set Environment Variable` and friends, and is what `%{NAME}` reads. There
//! are no processes, so `Run` and its variants fail saying so.

pub(crate) mod paths;
pub(crate) mod sandbox;
mod text;

use std::io::{BufRead, Read, Write};

use super::Run;
use crate::args::Bound;
use crate::engine::{Level, Session};
use crate::error::{RfError, RfResult};
use crate::timefmt;
use crate::value::{Value, plural, seq2str};
use sandbox::{
    Budget, exists, glob_or_self, is_dir, is_file, list_names, os_error, readable, writable,
};

/// The implementation of OperatingSystem keyword `name`.
pub(super) fn lookup(name: &str) -> Option<Run> {
    Some(match name {
        "Run" | "Run And Return Rc" | "Run And Return Rc And Output" => |_, b| {
            Err(RfError::fail(format!(
                "Cannot run command '{}': the rf sandbox has no processes. Run commands from a real Robot Framework served through the remote interface (Import Library    Remote    http://host:port).",
                b.text("command")
            )))
        },
        "Get File" => |s, b| {
            let path = absnorm_readable(&b.text("path"))?;
            link(s, "Getting file '%s'.", &[&path]);
            get_file(b, &path)
        },
        "Log File" => |s, b| {
            let path = absnorm_readable(&b.text("path"))?;
            link(s, "Getting file '%s'.", &[&path]);
            let content = get_file(b, &path)?;
            s.info(content.to_str());
            Ok(content)
        },
        "Get Binary File" => |s, b| {
            let path = absnorm_readable(&b.text("path"))?;
            link(s, "Getting file '%s'.", &[&path]);
            Ok(Value::Bytes(sandbox::read_bounded(&path)?))
        },
        "Grep File" => grep_file,
        "Should Exist" => |s, b| {
            let path = absnorm_readable(&b.text("path"))?;
            if glob_or_self(&path)?.is_empty() {
                return Err(failure(b, format!("Path '{path}' does not exist.")));
            }
            link(s, "Path '%s' exists.", &[&path]);
            Ok(Value::None)
        },
        "Should Not Exist" => |s, b| {
            let path = absnorm_readable(&b.text("path"))?;
            let matches = glob_or_self(&path)?;
            if !matches.is_empty() {
                return Err(failure(b, matches_error("Path", &path, matches)));
            }
            link(s, "Path '%s' does not exist.", &[&path]);
            Ok(Value::None)
        },
        "File Should Exist" => |s, b| exist_check(s, b, Kind::File, true),
        "File Should Not Exist" => |s, b| exist_check(s, b, Kind::File, false),
        "Directory Should Exist" => |s, b| exist_check(s, b, Kind::Directory, true),
        "Directory Should Not Exist" => |s, b| exist_check(s, b, Kind::Directory, false),
        "Wait Until Removed" => |s, b| wait_until(s, b, false),
        "Wait Until Created" => |s, b| wait_until(s, b, true),
        "Directory Should Be Empty" => |s, b| {
            let path = absnorm_readable(&b.text("path"))?;
            directory_should_be_empty(s, &path, b.msg())?;
            Ok(Value::None)
        },
        "Directory Should Not Be Empty" => |s, b| {
            let path = absnorm_readable(&b.text("path"))?;
            let items = list_dir(s, &path, None, false)?;
            if items.is_empty() {
                return Err(failure(b, format!("Directory '{path}' is empty.")));
            }
            let n = items.len();
            link(
                s,
                &format!("Directory '%s' contains {n} item{}.", plural(n)),
                &[&path],
            );
            Ok(Value::None)
        },
        "File Should Be Empty" => |s, b| file_emptiness(s, b, true),
        "File Should Not Be Empty" => |s, b| file_emptiness(s, b, false),
        "Create File" => |s, b| {
            let path = write_text(b, false)?;
            link(s, "Created file '%s'.", &[&path]);
            Ok(Value::None)
        },
        "Append To File" => |s, b| {
            let path = write_text(b, true)?;
            link(s, "Appended to file '%s'.", &[&path]);
            Ok(Value::None)
        },
        "Create Binary File" => |s, b| {
            let content = match b.get("content") {
                Value::Bytes(bytes) => bytes,
                other => other.to_str().into_bytes(),
            };
            let path = write_bytes(&b.text("path"), |_| Ok(content), false)?;
            link(s, "Created binary file '%s'.", &[&path]);
            Ok(Value::None)
        },
        "Remove File" => |s, b| {
            remove_file(s, &b.text("path"))?;
            Ok(Value::None)
        },
        "Remove Files" => |s, b| {
            for path in &b.varargs {
                remove_file(s, &path.to_str())?;
            }
            Ok(Value::None)
        },
        "Empty Directory" => |s, b| {
            let path = absnorm_writable(&b.text("path"))?;
            let mut budget = Budget::new();
            for item in list_dir(s, &path, None, true)? {
                if is_dir(&item) && !is_symlink(&item) {
                    sandbox::remove_tree(&item, &mut budget)?;
                } else {
                    std::fs::remove_file(&item).map_err(|e| os_error(&e, &item, None))?;
                }
            }
            link(s, "Emptied directory '%s'.", &[&path]);
            Ok(Value::None)
        },
        "Create Directory" => |s, b| {
            let path = absnorm_readable(&b.text("path"))?;
            if is_dir(&path) {
                link(s, "Directory '%s' already exists.", &[&path]);
            } else if exists(&path) {
                return Err(RfError::fail(format!("Path '{path}' is not a directory.")));
            } else {
                writable(&path)?;
                sandbox::make_dirs(&path)?;
                link(s, "Created directory '%s'.", &[&path]);
            }
            Ok(Value::None)
        },
        "Remove Directory" => |s, b| {
            let path = absnorm_readable(&b.text("path"))?;
            if !exists(&path) {
                link(s, "Directory '%s' does not exist.", &[&path]);
                return Ok(Value::None);
            }
            if !is_dir(&path) {
                return Err(RfError::fail(format!("Path '{path}' is not a directory.")));
            }
            writable(&path)?;
            if b.flag("recursive") {
                sandbox::remove_tree(&path, &mut Budget::new())?;
            } else {
                directory_should_be_empty(
                    s,
                    &path,
                    Some(format!("Directory '{path}' is not empty.")),
                )?;
                std::fs::remove_dir(&path).map_err(|e| os_error(&e, &path, None))?;
            }
            link(s, "Removed directory '%s'.", &[&path]);
            Ok(Value::None)
        },
        "Copy File" => |s, b| {
            let (source, dest) = prepare_copy_file(&b.text("source"), &b.text("destination"))?;
            if !same_file_logged(s, &source, &dest) {
                writable(&dest)?;
                copy_file(&source, &dest)?;
                link(s, "Copied file from '%s' to '%s'.", &[&source, &dest]);
            }
            Ok(Value::Str(dest))
        },
        "Move File" => |s, b| {
            let (source, dest) = prepare_copy_file(&b.text("source"), &b.text("destination"))?;
            move_file(s, &source, &dest)?;
            Ok(Value::Str(dest))
        },
        "Copy Files" => |s, b| {
            let (sources, dest) = prepare_copy_files(&b.varargs)?;
            for source in sources {
                let (source, dest) = prepare_copy_file(&source, &dest)?;
                if !same_file_logged(s, &source, &dest) {
                    writable(&dest)?;
                    copy_file(&source, &dest)?;
                    link(s, "Copied file from '%s' to '%s'.", &[&source, &dest]);
                }
            }
            Ok(Value::None)
        },
        "Move Files" => |s, b| {
            let (sources, dest) = prepare_copy_files(&b.varargs)?;
            for source in sources {
                let (source, dest) = prepare_copy_file(&source, &dest)?;
                move_file(s, &source, &dest)?;
            }
            Ok(Value::None)
        },
        "Copy Directory" => |s, b| {
            let (source, dest) = prepare_copy_dir(&b.text("source"), &b.text("destination"))?;
            writable(&dest)?;
            if sandbox::lexists(&dest) {
                return Err(os_error(&exists_error(), &dest, None));
            }
            sandbox::copy_tree(&source, &dest, &mut Budget::new())?;
            link(s, "Copied directory from '%s' to '%s'.", &[&source, &dest]);
            Ok(Value::None)
        },
        "Move Directory" => |s, b| {
            let (source, dest) = prepare_copy_dir(&b.text("source"), &b.text("destination"))?;
            writable(&source)?;
            writable(&dest)?;
            sandbox::move_path(&source, &dest)?;
            link(s, "Moved directory from '%s' to '%s'.", &[&source, &dest]);
            Ok(Value::None)
        },
        "Get Environment Variable" => |s, b| {
            let name = b.text("name");
            match s.store.env.get(&name) {
                Some(value) => Ok(Value::str(value)),
                None => match b.opt("default") {
                    Some(default) => Ok(default),
                    None => Err(RfError::fail(format!(
                        "Environment variable '{name}' does not exist."
                    ))),
                },
            }
        },
        "Set Environment Variable" => |s, b| {
            set_env(s, b.text("name"), b.text("value"));
            Ok(Value::None)
        },
        "Append To Environment Variable" => |s, b| {
            let name = b.text("name");
            let mut values: Vec<String> = Vec::new();
            if let Some(initial) = s.store.env.get(&name).filter(|v| !v.is_empty()) {
                values.push(initial.clone());
            }
            values.extend(b.varargs.iter().map(Value::to_str));
            let separator = b.text("separator");
            set_env(s, name, values.join(&separator));
            Ok(Value::None)
        },
        "Remove Environment Variable" => |s, b| {
            for name in b.varargs.iter().map(Value::to_str) {
                let removed = s.store.env.remove(&name);
                if removed.is_some_and(|v| !v.is_empty()) {
                    s.info(format!("Environment variable '{name}' deleted."));
                } else {
                    s.info(format!("Environment variable '{name}' does not exist."));
                }
            }
            Ok(Value::None)
        },
        "Environment Variable Should Be Set" => |s, b| {
            let name = b.text("name");
            match s.store.env.get(&name).filter(|v| !v.is_empty()).cloned() {
                Some(value) => {
                    s.info(format!(
                        "Environment variable '{name}' is set to '{value}'."
                    ));
                    Ok(Value::None)
                }
                None => Err(failure(
                    b,
                    format!("Environment variable '{name}' is not set."),
                )),
            }
        },
        "Environment Variable Should Not Be Set" => |s, b| {
            let name = b.text("name");
            if let Some(value) = s.store.env.get(&name).filter(|v| !v.is_empty()) {
                return Err(failure(
                    b,
                    format!("Environment variable '{name}' is set to '{value}'."),
                ));
            }
            s.info(format!("Environment variable '{name}' is not set."));
            Ok(Value::None)
        },
        "Get Environment Variables" => |s, _| Ok(env_dict(s)),
        "Log Environment Variables" => |s, b| {
            let level = Level::parse(&b.text("level")).unwrap_or(Level::Info);
            let mut names: Vec<(String, String)> = s
                .store
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            names.sort_by_key(|(k, _)| k.to_lowercase());
            for (name, value) in names {
                s.log(level, format!("{name} = {value}"));
            }
            Ok(env_dict(s))
        },
        "Join Path" => |_, b| {
            let parts: Vec<String> = b.varargs.iter().map(Value::to_str).collect();
            Ok(Value::Str(join_path(&b.text("base"), &parts)))
        },
        "Join Paths" => |_, b| {
            let base = b.text("base");
            Ok(Value::list(
                b.varargs
                    .iter()
                    .map(|p| Value::Str(join_path(&base, &[p.to_str()])))
                    .collect(),
            ))
        },
        "Normalize Path" => |_, b| Ok(Value::Str(paths::normalize_path(&b.text("path")))),
        "Split Path" => |_, b| {
            let (head, tail) = paths::split(&paths::normalize_path(&b.text("path")));
            Ok(Value::tuple(vec![Value::Str(head), Value::Str(tail)]))
        },
        "Split Extension" => |_, b| {
            let (base, ext) = paths::split_extension(&b.text("path"));
            Ok(Value::tuple(vec![Value::Str(base), Value::Str(ext)]))
        },
        "Get Modified Time" => |s, b| {
            let path = absnorm_readable(&b.text("path"))?;
            let meta = std::fs::metadata(&path)
                .map_err(|_| RfError::fail(format!("Path '{path}' does not exist.")))?;
            let epoch = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs() as i64);
            let mtime = timefmt::get_time(&b.text("format"), epoch);
            link(
                s,
                &format!("Last modified time of '%s' is {}.", mtime.to_str()),
                &[&path],
            );
            Ok(mtime)
        },
        "Set Modified Time" => |s, b| {
            let mtime = timefmt::parse_time(&b.get("mtime")).map_err(RfError::value)?;
            let path = absnorm_readable(&b.text("path"))?;
            if !exists(&path) {
                return Err(RfError::fail(format!("File '{path}' does not exist.")));
            }
            if !is_file(&path) {
                return Err(RfError::fail(format!(
                    "Path '{path}' is not a regular file."
                )));
            }
            writable(&path)?;
            set_mtime(&path, mtime)?;
            let stamp = timefmt::get_time("timestamp", mtime).to_str();
            link(
                s,
                &format!("Set modified time of '%s' to {stamp}."),
                &[&path],
            );
            Ok(Value::None)
        },
        "Get File Size" => |s, b| {
            let (path, size) = file_size(&b.text("path"))?;
            link(
                s,
                &format!("Size of file '%s' is {size} byte{}.", plural(size as usize)),
                &[&path],
            );
            Ok(Value::Int(size as i64))
        },
        "List Directory" => |s, b| {
            let items = listing(s, b, Filter::All)?;
            let n = items.len();
            s.info(format!("{n} item{}:\n{}", plural(n), items.join("\n")));
            Ok(Value::list(items.into_iter().map(Value::Str).collect()))
        },
        "List Files In Directory" => |s, b| {
            let items = listing(s, b, Filter::Files)?;
            let n = items.len();
            s.info(format!("{n} file{}:\n{}", plural(n), items.join("\n")));
            Ok(Value::list(items.into_iter().map(Value::Str).collect()))
        },
        "List Directories In Directory" => |s, b| {
            let items = listing(s, b, Filter::Directories)?;
            let n = items.len();
            s.info(format!("{n} {}:\n{}", directories(n), items.join("\n")));
            Ok(Value::list(items.into_iter().map(Value::Str).collect()))
        },
        "Count Items In Directory" => |s, b| {
            let n = listing(s, b, Filter::All)?.len();
            s.info(format!("{n} item{}.", plural(n)));
            Ok(Value::Int(n as i64))
        },
        "Count Files In Directory" => |s, b| {
            let n = listing(s, b, Filter::Files)?.len();
            s.info(format!("{n} file{}.", plural(n)));
            Ok(Value::Int(n as i64))
        },
        "Count Directories In Directory" => |s, b| {
            let n = listing(s, b, Filter::Directories)?.len();
            s.info(format!("{n} {}.", directories(n)));
            Ok(Value::Int(n as i64))
        },
        "Touch" => |s, b| {
            let path = absnorm_readable(&b.text("path"))?;
            if is_dir(&path) {
                return Err(RfError::fail(format!(
                    "Cannot touch '{path}' because it is a directory."
                )));
            }
            if !exists(&paths::dirname(&path)) {
                return Err(RfError::fail(format!(
                    "Cannot touch '{path}' because its parent directory does not exist."
                )));
            }
            writable(&path)?;
            if exists(&path) {
                set_mtime(&path, timefmt::now().round() as i64)?;
                link(s, "Touched existing file '%s'.", &[&path]);
            } else {
                std::fs::File::create(&path).map_err(|e| os_error(&e, &path, None))?;
                link(s, "Touched new file '%s'.", &[&path]);
            }
            Ok(Value::None)
        },
        _ => return None,
    })
}

/// Whether the OperatingSystem library can be imported: some folder is granted,
/// or the error saying which config key grants them.
pub(crate) fn check_importable() -> RfResult<()> {
    if sandbox::folders().is_empty() {
        return Err(RfError::fail(format!(
            "Importing library 'OperatingSystem' failed: the host grants the rf plugin no folders, and the sandbox has no other filesystem; grant folders with {}, for example folders = [{{ path = \"/srv/data\", read_only = false }}].",
            sandbox::GRANT_KEY
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Helpers shared by the keywords above.

/// RF's `_absnorm`, then the sandbox's check that the path may be read.
fn absnorm_readable(path: &str) -> RfResult<String> {
    let path = paths::absnorm(path, &sandbox::cwd());
    readable(&path)?;
    Ok(path)
}

/// RF's `_absnorm`, then the sandbox's check that the path may be changed.
fn absnorm_writable(path: &str) -> RfResult<String> {
    let path = paths::absnorm(path, &sandbox::cwd());
    writable(&path)?;
    Ok(path)
}

/// RF's `_link`: an HTML log line with each path as a `file://` link.
fn link(s: &mut Session, template: &str, paths: &[&str]) {
    let mut out = String::new();
    let mut rest = template;
    for path in paths {
        let Some(at) = rest.find("%s") else {
            break;
        };
        out.push_str(&rest[..at]);
        out.push_str(&format!("<a href=\"file://{path}\">{path}</a>"));
        rest = &rest[at + 2..];
    }
    out.push_str(rest);
    s.info(out);
}

/// RF's `_fail(msg, default)`: the user's message when given and not empty.
fn failure(b: &Bound, default: String) -> RfError {
    RfError::fail(b.msg().filter(|m| !m.is_empty()).unwrap_or(default))
}

fn matches_error(kind: &str, path: &str, mut matches: Vec<String>) -> String {
    let is_glob = path.contains(['*', '?']) || (path.contains('[') && path.contains(']'));
    if !is_glob {
        return format!("{kind} '{path}' exists.");
    }
    matches.sort();
    format!(
        "{kind} '{path}' matches {}.",
        seq2str(&matches, "'", ", ", " and ")
    )
}

#[derive(Clone, Copy)]
enum Kind {
    File,
    Directory,
}

fn exist_check(s: &mut Session, b: &Bound, kind: Kind, should: bool) -> RfResult<Value> {
    let path = absnorm_readable(&b.text("path"))?;
    let (label, test): (&str, fn(&str) -> bool) = match kind {
        Kind::File => ("File", is_file),
        Kind::Directory => ("Directory", is_dir),
    };
    let matches: Vec<String> = glob_or_self(&path)?
        .into_iter()
        .filter(|p| test(p))
        .collect();
    if should && matches.is_empty() {
        return Err(failure(b, format!("{label} '{path}' does not exist.")));
    }
    if !should && !matches.is_empty() {
        return Err(failure(b, matches_error(label, &path, matches)));
    }
    let verb = if should { "exists" } else { "does not exist" };
    link(s, &format!("{label} '%s' {verb}."), &[&path]);
    Ok(Value::None)
}

fn wait_until(s: &mut Session, b: &Bound, created: bool) -> RfResult<Value> {
    let path = absnorm_readable(&b.text("path"))?;
    // RF: a timeout of None or zero waits for ever; here the host's step timeout
    // ends the wait first.
    let timeout = match b.opt("timeout") {
        None => -1.0,
        Some(Value::Float(f)) => f,
        Some(Value::Int(i)) => i as f64,
        Some(other) => timefmt::timestr_to_secs(&other).map_err(RfError::value)?,
    };
    let timeout = if timeout == 0.0 { -1.0 } else { timeout };
    let deadline = timefmt::now() + timeout;
    while glob_or_self(&path)?.is_empty() == created {
        if timeout >= 0.0 && timefmt::now() > deadline {
            let what = if created { "created" } else { "removed" };
            return Err(RfError::fail(format!(
                "'{path}' was not {what} in {}.",
                timefmt::secs_to_timestr(timeout, false)
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let what = if created { "created" } else { "removed" };
    link(s, &format!("'%s' was {what}."), &[&path]);
    Ok(Value::None)
}

/// RF's `_list_dir`: the log line, then the sorted names (or paths), filtered.
fn list_dir(
    s: &mut Session,
    path: &str,
    pattern: Option<&str>,
    absolute: bool,
) -> RfResult<Vec<String>> {
    link(s, "Listing contents of directory '%s'.", &[path]);
    if !is_dir(path) {
        return Err(RfError::fail(format!("Directory '{path}' does not exist.")));
    }
    let mut items = list_names(path)?;
    if let Some(pattern) = pattern.filter(|p| !p.is_empty()) {
        let re = regex::Regex::new(&crate::matching::glob_to_regex(pattern))
            .map_err(|e| RfError::fail(format!("Invalid pattern '{pattern}': {e}")))?;
        items.retain(|i| re.is_match(i));
    }
    if absolute {
        let base = paths::normpath(path);
        items = items
            .into_iter()
            .map(|i| paths::join(&base, &[i]))
            .collect();
    }
    Ok(items)
}

#[derive(Clone, Copy)]
enum Filter {
    All,
    Files,
    Directories,
}

fn listing(s: &mut Session, b: &Bound, filter: Filter) -> RfResult<Vec<String>> {
    let raw = b.text("path");
    let path = absnorm_readable(&raw)?;
    let pattern = b.opt("pattern").map(|p| p.to_str());
    let items = list_dir(s, &path, pattern.as_deref(), b.flag("absolute"))?;
    let test: fn(&str) -> bool = match filter {
        Filter::All => return Ok(items),
        Filter::Files => is_file,
        Filter::Directories => is_dir,
    };
    Ok(items
        .into_iter()
        .filter(|i| test(&paths::join(&path, std::slice::from_ref(i))))
        .collect())
}

fn directories(n: usize) -> &'static str {
    if n == 1 { "directory" } else { "directories" }
}

fn directory_should_be_empty(s: &mut Session, path: &str, msg: Option<String>) -> RfResult<()> {
    let items = list_dir(s, path, None, false)?;
    if !items.is_empty() {
        let contents = seq2str(&items, "'", ", ", ", ");
        return Err(RfError::fail(msg.filter(|m| !m.is_empty()).unwrap_or_else(
            || format!("Directory '{path}' is not empty. Contents: {contents}."),
        )));
    }
    link(s, "Directory '%s' is empty.", &[path]);
    Ok(())
}

/// The normalized path of the existing file `path` and its size in bytes.
fn file_size(path: &str) -> RfResult<(String, u64)> {
    let path = absnorm_readable(path)?;
    if !is_file(&path) {
        return Err(RfError::fail(format!("File '{path}' does not exist.")));
    }
    let size = std::fs::metadata(&path)
        .map_err(|e| os_error(&e, &path, None))?
        .len();
    Ok((path, size))
}

fn file_emptiness(s: &mut Session, b: &Bound, empty: bool) -> RfResult<Value> {
    let (path, size) = file_size(&b.text("path"))?;
    if empty && size > 0 {
        return Err(failure(
            b,
            format!(
                "File '{path}' is not empty. Size: {size} byte{}.",
                plural(size as usize)
            ),
        ));
    }
    if !empty && size == 0 {
        return Err(failure(b, format!("File '{path}' is empty.")));
    }
    if empty {
        link(s, "File '%s' is empty.", &[&path]);
    } else {
        link(s, &format!("File '%s' contains {size} bytes."), &[&path]);
    }
    Ok(Value::None)
}

fn get_file(b: &Bound, path: &str) -> RfResult<Value> {
    let encoding = text::Encoding::parse(&b.text("encoding"))?;
    let errors = text::Errors::parse(&b.text("encoding_errors"))?;
    let bytes = sandbox::read_bounded(path)?;
    let text = text::decode(&bytes, encoding, errors, 0)?;
    Ok(Value::Str(text.replace("\r\n", "\n")))
}

/// Longest line Grep File reads; a longer one fails the keyword.
const MAX_LINE_BYTES: usize = 1024 * 1024;

fn grep_file(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let path = absnorm_readable(&b.text("path"))?;
    let pattern = b.text("pattern");
    let regex = if b.flag("regexp") {
        crate::regexp::compile(&pattern, crate::regexp::Flags::default()).map_err(RfError::fail)?
    } else {
        regex::Regex::new(&crate::matching::glob_to_regex(&format!("*{pattern}*")))
            .map_err(|e| RfError::fail(e.to_string()))?
    };
    let encoding = text::Encoding::parse(&b.text("encoding"))?;
    let errors = text::Errors::parse(&b.text("encoding_errors"))?;
    link(s, "Reading file '%s'.", &[&path]);
    let file = std::fs::File::open(&path).map_err(|e| os_error(&e, &path, None))?;
    let mut reader = std::io::BufReader::new(file);
    let mut matches: Vec<String> = Vec::new();
    let mut matched_bytes = 0usize;
    let mut lines = 0usize;
    let mut offset = 0usize;
    let mut chunk = Vec::new();
    loop {
        chunk.clear();
        let n = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut chunk)
            .map_err(|e| os_error(&e, &path, None))?;
        if n == 0 {
            break;
        }
        if n > MAX_LINE_BYTES && !chunk.ends_with(b"\n") {
            return Err(RfError::fail(format!(
                "File '{path}' has a line longer than {MAX_LINE_BYTES} bytes, more than the rf sandbox's Grep File reads."
            )));
        }
        let decoded = text::decode(&chunk, encoding, errors, offset)?;
        offset += n;
        // Python's universal newlines: `\r\n`, `\r` and `\n` all end a line.
        let terminated = decoded.ends_with('\n');
        let mut body = decoded.strip_suffix('\n').unwrap_or(&decoded);
        if terminated {
            body = body.strip_suffix('\r').unwrap_or(body);
        }
        let mut pieces: Vec<&str> = body.split('\r').collect();
        if !terminated && pieces.len() > 1 && pieces.last() == Some(&"") {
            pieces.pop();
        }
        for line in pieces {
            lines += 1;
            if regex.is_match(line) {
                matched_bytes += line.len() + 1;
                if matched_bytes as u64 > sandbox::MAX_READ_BYTES {
                    return Err(RfError::fail(format!(
                        "Grep File of '{path}' matched more than {} bytes (8 MiB), more than the rf sandbox returns at once.",
                        sandbox::MAX_READ_BYTES
                    )));
                }
                matches.push(line.to_string());
            }
        }
    }
    s.info(format!("{} out of {lines} lines matched.", matches.len()));
    Ok(Value::Str(matches.join("\n")))
}

/// RF's `_write_to_file` for text: parent folders made, then the file written (or
/// appended to) in the encoding. Returns the normalized path.
fn write_text(b: &Bound, append: bool) -> RfResult<String> {
    let encoding = text::Encoding::parse(&b.text("encoding"))?;
    let content = b.text("content");
    write_bytes(
        &b.text("path"),
        |_| text::encode(&content, encoding),
        append,
    )
}

fn write_bytes(
    path: &str,
    content: impl FnOnce(&str) -> RfResult<Vec<u8>>,
    append: bool,
) -> RfResult<String> {
    let path = absnorm_writable(path)?;
    let parent = paths::dirname(&path);
    if !exists(&parent) {
        sandbox::make_dirs(&parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .append(append)
        .truncate(!append)
        .open(&path)
        .map_err(|e| os_error(&e, &path, None))?;
    // As in Python, the file is opened (and truncated) before the content is
    // encoded, so an encoding error leaves it empty.
    let bytes = content(&path)?;
    file.write_all(&bytes)
        .map_err(|e| os_error(&e, &path, None))?;
    Ok(path)
}

fn remove_file(s: &mut Session, raw: &str) -> RfResult<()> {
    let path = absnorm_readable(raw)?;
    let matches = glob_or_self(&path)?;
    if matches.is_empty() {
        link(s, "File '%s' does not exist.", &[&path]);
    }
    for m in matches {
        if !is_file(&m) {
            return Err(RfError::fail(format!("Path '{path}' is not a file.")));
        }
        writable(&m)?;
        std::fs::remove_file(&m).map_err(|e| os_error(&e, &m, None))?;
        link(s, "Removed file '%s'.", &[&m]);
    }
    Ok(())
}

fn is_symlink(path: &str) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// RF's `_prepare_copy_file`: (source file, destination path).
fn prepare_copy_file(source: &str, dest: &str) -> RfResult<(String, String)> {
    let source = normalize_source(source)?;
    let dest = normalize_destination(dest)?;
    let dest = if is_dir(&dest) {
        paths::join(&dest, &[paths::basename(&source)])
    } else {
        dest
    };
    readable(&dest)?;
    Ok((source, dest))
}

fn normalize_source(source: &str) -> RfResult<String> {
    let source = absnorm_readable(source)?;
    let sources = glob_or_self(&source)?;
    if sources.len() > 1 {
        return Err(RfError::fail(format!(
            "Multiple matches with source pattern '{source}'."
        )));
    }
    let source = sources.into_iter().next().unwrap_or(source);
    if !exists(&source) {
        return Err(RfError::fail(format!(
            "Source file '{source}' does not exist."
        )));
    }
    if !is_file(&source) {
        return Err(RfError::fail(format!(
            "Source file '{source}' is not a regular file."
        )));
    }
    Ok(source)
}

fn normalize_destination(dest: &str) -> RfResult<String> {
    let cwd = sandbox::cwd();
    // RF asks `isdir` of the path as given, relative to the working directory.
    let is_directory = is_dir(&paths::absnorm(dest, &cwd)) || dest.ends_with(['/', '\\']);
    let dest = absnorm_readable(dest)?;
    let directory = if is_directory {
        dest.clone()
    } else {
        paths::dirname(&dest)
    };
    ensure_destination_directory(&directory)?;
    Ok(dest)
}

fn ensure_destination_directory(path: &str) -> RfResult<()> {
    if !exists(path) {
        writable(path)?;
        sandbox::make_dirs(path)
    } else if !is_dir(path) {
        Err(RfError::fail(format!(
            "Destination '{path}' exists and is not a directory."
        )))
    } else {
        Ok(())
    }
}

fn same_file_logged(s: &mut Session, a: &str, b: &str) -> bool {
    if exists(a) && exists(b) && sandbox::same_file(a, b) {
        link(
            s,
            "Source '%s' and destination '%s' point to the same file.",
            &[a, b],
        );
        return true;
    }
    false
}

/// RF's `_atomic_copy`: the copy is written beside the destination, then renamed
/// over it, so a reader never sees half a file.
fn copy_file(source: &str, dest: &str) -> RfResult<()> {
    let dir = paths::dirname(dest);
    // No process ids in WASI: the clock makes the name unlikely to clash.
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let temp = paths::join(
        &dir,
        &[format!(".{}.rf-copy-{stamp}", paths::basename(dest))],
    );
    if let Err(e) = std::fs::copy(source, &temp) {
        let _ = std::fs::remove_file(&temp);
        return Err(os_error(&e, source, Some(dest)));
    }
    std::fs::rename(&temp, dest).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        os_error(&e, source, Some(dest))
    })
}

fn move_file(s: &mut Session, source: &str, dest: &str) -> RfResult<()> {
    if same_file_logged(s, dest, source) {
        return Ok(());
    }
    writable(source)?;
    writable(dest)?;
    sandbox::move_path(source, dest)?;
    link(s, "Moved file from '%s' to '%s'.", &[source, dest]);
    Ok(())
}

/// RF's `_prepare_copy_files`: the sources (globbed) and the destination folder.
fn prepare_copy_files(items: &[Value]) -> RfResult<(Vec<String>, String)> {
    if items.len() < 2 {
        return Err(RfError::fail(
            "Must contain destination and at least one source.",
        ));
    }
    let mut sources = Vec::new();
    for pattern in &items[..items.len() - 1] {
        let path = absnorm_readable(&pattern.to_str())?;
        sources.extend(glob_or_self(&path)?);
    }
    let dest = absnorm_readable(&items[items.len() - 1].to_str())?;
    ensure_destination_directory(&dest)?;
    Ok((sources, dest))
}

/// RF's `_prepare_copy_dir`: (source folder, destination folder to create).
fn prepare_copy_dir(source: &str, dest: &str) -> RfResult<(String, String)> {
    let source = absnorm_readable(source)?;
    let dest = absnorm_readable(dest)?;
    if !exists(&source) {
        return Err(RfError::fail(format!("Source '{source}' does not exist.")));
    }
    if !is_dir(&source) {
        return Err(RfError::fail(format!(
            "Source '{source}' is not a directory."
        )));
    }
    if exists(&dest) && !is_dir(&dest) {
        return Err(RfError::fail(format!(
            "Destination '{dest}' is not a directory."
        )));
    }
    let dest = if exists(&dest) {
        paths::join(&dest, &[paths::basename(&source)])
    } else {
        let parent = paths::dirname(&dest);
        if !exists(&parent) {
            writable(&parent)?;
            sandbox::make_dirs(&parent)?;
        }
        dest
    };
    readable(&dest)?;
    Ok((source, dest))
}

fn exists_error() -> std::io::Error {
    std::io::Error::from_raw_os_error(if cfg!(target_arch = "wasm32") { 20 } else { 17 })
}

fn set_mtime(path: &str, epoch: i64) -> RfResult<()> {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(epoch.max(0) as u64);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| os_error(&e, path, None))?;
    file.set_modified(time)
        .map_err(|e| os_error(&e, path, None))
}

/// RF's `Join Path`: `os.path.join`, then `Normalize Path`.
fn join_path(base: &str, parts: &[String]) -> String {
    paths::normalize_path(&paths::join(base, parts))
}

fn set_env(s: &mut Session, name: String, value: String) {
    s.info(format!(
        "Environment variable '{name}' set to value '{value}'."
    ));
    s.store.env.insert(name, value);
}

fn env_dict(s: &Session) -> Value {
    Value::dict(
        s.store
            .env
            .iter()
            .map(|(k, v)| (Value::str(k), Value::str(v)))
            .collect(),
        false,
    )
}

#[cfg(test)]
mod tests;
