//! Variable references inside batch step inputs.
//!
//! A step's `input` is JSON whose string values may refer to results of earlier steps
//! (`${STEP_2.items[0].name}`) or to named variables (`${user.address["zip code"]}`). They are
//! resolved just before the step runs, so a batch can chain tools without a round trip through
//! the caller.
//!
//! Grammar of what sits between `${` and `}` (no whitespace anywhere):
//!
//! ```text
//! reference := target segment*
//! target    := "STEP_" digit+                    (a step; 0 and 1 both mean the first step)
//!            | [A-Za-z_][A-Za-z0-9_]*            (a named variable)
//! segment   := "." [A-Za-z0-9_-]+                (object key; on an array an integer is an index)
//!            | "[" "-"? digit+ "]"               (array index; negative counts from the end)
//!            | "[" '"' chars '"' "]"             (quoted key; \" \' \\ are the only escapes)
//!            | "[" "'" chars "'" "]"
//! ```
//!
//! The scanner is hand-written and linear: every byte is looked at a bounded number of times,
//! because inputs come from untrusted callers and may be large.

use std::fmt::{self, Write as _};

use serde_json::{Map, Value};

/// How references that the host does not own are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnknownPolicy {
    /// Every `${...}` belongs to the host: malformed or unknown references are errors and
    /// `\${` stands for a literal `${`. Used by the generic batch.
    Reject,
    /// `${...}` is shared with a plugin language (Robot Framework uses `${var}`, `${var}[0]`,
    /// `${a + b}`, `\${x}`), so only `STEP_N` references and names the scope knows are
    /// substituted; everything else, `\${` included, is left exactly as written.
    PassThrough,
}

/// What a reference points at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// `STEP_N`, holding N as written (convert with [`step_index`]).
    Step(u64),
    /// A named variable, e.g. `user` in `${user.name}`.
    Name(String),
}

/// One step of a path into a JSON value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathSegment {
    /// `.field`, `["field"]` or `['field']`. On an array, a key that is an integer (`.0`,
    /// `.-1`) is used as an index, so dotted paths work on lists too.
    Key(String),
    /// `[n]`; a negative `n` counts from the end (`[-1]` is the last item).
    Index(i64),
}

/// A parsed `${...}` reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VarRef {
    /// The step or variable the reference starts from.
    pub target: Target,
    /// The path into the target's value; empty for the whole value.
    pub path: Vec<PathSegment>,
    /// The reference exactly as written, e.g. `${STEP_2.items[0]}`, for error messages and
    /// for leaving it untouched under [`UnknownPolicy::PassThrough`].
    pub source: String,
}

impl VarRef {
    /// The 0-based step index this reference reads, if it is a step reference.
    pub fn step_index(&self) -> Option<usize> {
        match self.target {
            Target::Step(n) => Some(step_index(n)),
            Target::Name(_) => None,
        }
    }
}

impl fmt::Display for VarRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// A piece of a parsed string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Part {
    /// Literal text. Under [`UnknownPolicy::Reject`] escapes are already applied (`\${` is
    /// `${` here); under [`UnknownPolicy::PassThrough`] it is the original text.
    Text(String),
    /// A reference to substitute.
    Ref(VarRef),
}

/// A string value split into literal text and references. Adjacent text is always merged into
/// one [`Part::Text`], and empty text is never stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Template {
    /// The pieces, in order.
    pub parts: Vec<Part>,
}

impl Template {
    /// True when there is nothing to substitute.
    pub fn is_literal(&self) -> bool {
        !self.parts.iter().any(|p| matches!(p, Part::Ref(_)))
    }

    /// The reference, when the whole string is exactly one reference; such a string resolves
    /// to the referenced JSON value itself instead of text.
    pub fn whole_ref(&self) -> Option<&VarRef> {
        match self.parts.as_slice() {
            [Part::Ref(r)] => Some(r),
            _ => None,
        }
    }

    /// The references, in order.
    pub fn refs(&self) -> impl Iterator<Item = &VarRef> {
        self.parts.iter().filter_map(|p| match p {
            Part::Ref(r) => Some(r),
            Part::Text(_) => None,
        })
    }
}

/// The answer of a [`Scope`] for a step or a name.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup<'a> {
    /// The result value.
    Value(&'a Value),
    /// The target exists but has no usable value; the text says why (e.g. "step 2 failed",
    /// "step 4 has not run yet"). Always an error, under both policies.
    Unavailable(String),
    /// The scope has never heard of it.
    Unknown,
}

/// Where references are looked up: the results of the current batch and the session's
/// variables.
pub trait Scope {
    /// The result of the step at `index`, which is already converted with [`step_index`].
    /// Steps that exist but have not produced a value (failed, skipped, not run yet, later in
    /// the batch) should answer [`Lookup::Unavailable`] with a reason rather than
    /// [`Lookup::Unknown`], so the error tells the user what happened.
    fn step(&self, index: usize) -> Lookup<'_>;
    /// The value of a named variable.
    fn name(&self, name: &str) -> Lookup<'_>;
}

/// Converts N of `STEP_N` to a 0-based step index.
///
/// Callers write both 0-based and 1-based numbers, so both are accepted; where they collide
/// 1-based wins: 0 is the first step, and N >= 1 is index N-1 (`STEP_1` is also the first
/// step, `STEP_3` the third).
pub fn step_index(n: u64) -> usize {
    match n.checked_sub(1) {
        None => 0,
        // Only reachable on targets whose usize is narrower than u64; such a step cannot
        // exist, and usize::MAX makes the scope answer Unknown.
        Some(m) => usize::try_from(m).unwrap_or(usize::MAX),
    }
}

/// Whether `s` can be used as a variable name (in `${name}` and as a step's `assign_to`):
/// `[A-Za-z_][A-Za-z0-9_]*`, excluding `STEP_<digits>`, which would shadow step references.
pub fn is_valid_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    match bytes.first() {
        Some(&c) if is_ident_start(c) => {}
        _ => return false,
    }
    bytes.iter().all(|&c| is_ident_char(c)) && step_digits(s).is_none()
}

/// Escapes text for a string resolved under [`UnknownPolicy::Reject`], so that it comes out
/// literally: every `${` becomes `\${`.
pub fn escape(s: &str) -> String {
    s.replace("${", "\\${")
}

/// Does this value contain `${` anywhere in a string value? Object keys are not looked at,
/// because they are never substituted.
pub fn contains_refs(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains("${"),
        Value::Array(items) => items.iter().any(contains_refs),
        Value::Object(map) => map.values().any(contains_refs),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// The message for a `${...}` that does not follow the grammar; also the fallback reason in
/// [`VarError::Invalid`].
pub const INVALID_REFERENCE: &str = "not a valid reference (expected STEP_N or a name like my_var, optionally followed by .field or [index])";

/// Why a reference could not be parsed or resolved.
///
/// Every variant carries the reference as written and the field path (`items[0].name` style,
/// relative to the value passed to [`resolve`] or [`collect_refs`]; empty for the value
/// itself) of the string that holds it. `Display` gives `` `${ref}` at path: problem ``; use
/// [`VarError::display_with`] to put the step and the input's own name in front.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VarError {
    /// `${` with no closing `}`.
    #[error("`{reference}`{}: {}", Loc(at), Problem(self))]
    Unterminated {
        /// The text from `${` on, shortened when long.
        reference: String,
        /// Field path of the string.
        at: String,
    },
    /// The text between `${` and `}` does not follow the grammar.
    #[error("`{reference}`{}: {}", Loc(at), Problem(self))]
    Invalid {
        /// The text from `${` to the next `}`, shortened when long.
        reference: String,
        /// Field path of the string.
        at: String,
        /// What is wrong; [`INVALID_REFERENCE`] unless something more precise is known.
        reason: String,
    },
    /// `STEP_N` names a step the scope does not know.
    #[error("`{reference}`{}: {}", Loc(at), Problem(self))]
    UnknownStep {
        /// The reference as written.
        reference: String,
        /// Field path of the string.
        at: String,
        /// N as written.
        step: u64,
        /// N converted with [`step_index`].
        index: usize,
    },
    /// A name the scope does not know (only under [`UnknownPolicy::Reject`]).
    #[error("`{reference}`{}: {}", Loc(at), Problem(self))]
    UnknownName {
        /// The reference as written.
        reference: String,
        /// Field path of the string.
        at: String,
        /// The unknown name.
        name: String,
    },
    /// The scope knows the target but has no value for it.
    #[error("`{reference}`{}: {}", Loc(at), Problem(self))]
    Unavailable {
        /// The reference as written.
        reference: String,
        /// Field path of the string.
        at: String,
        /// The scope's explanation, e.g. "step 2 failed".
        why: String,
    },
    /// The path does not lead anywhere in the target's value.
    #[error("`{reference}`{}: {}", Loc(at), Problem(self))]
    BadPath {
        /// The reference as written.
        reference: String,
        /// Field path of the string.
        at: String,
        /// What went wrong, e.g. "index 5 is out of range (the array has 3 items)".
        problem: String,
    },
}

impl VarError {
    /// The reference as written (shortened for malformed or unterminated ones).
    pub fn reference(&self) -> &str {
        match self {
            Self::Unterminated { reference, .. }
            | Self::Invalid { reference, .. }
            | Self::UnknownStep { reference, .. }
            | Self::UnknownName { reference, .. }
            | Self::Unavailable { reference, .. }
            | Self::BadPath { reference, .. } => reference,
        }
    }

    /// The field path of the string holding the reference (empty for the root value).
    pub fn at(&self) -> &str {
        match self {
            Self::Unterminated { at, .. }
            | Self::Invalid { at, .. }
            | Self::UnknownStep { at, .. }
            | Self::UnknownName { at, .. }
            | Self::Unavailable { at, .. }
            | Self::BadPath { at, .. } => at,
        }
    }

    /// What is wrong, without the reference or the location, e.g. "step 2 (index 1) has no
    /// field `title` (its value is an array)".
    pub fn problem(&self) -> String {
        Problem(self).to_string()
    }

    /// The location joined under `root`: with root `input` and location `items[0]` it is
    /// `input.items[0]`; with an empty location it is `input`.
    pub fn field_path(&self, root: &str) -> String {
        join_path(root, self.at())
    }

    /// The message with a step description and the name of the input in front, e.g. with
    /// prefix `step 3 (label 'login')` and root `input`:
    /// ``step 3 (label 'login'): input.url: `${STEP_2.title}`: step 2 (index 1) has no field `title` (its value is an array)``.
    /// Empty `prefix` or an empty joined path are left out.
    pub fn display_with<'a>(&'a self, prefix: &'a str, root: &'a str) -> impl fmt::Display + 'a {
        WithContext {
            err: self,
            prefix,
            root,
        }
    }

    fn at_mut(&mut self) -> &mut String {
        match self {
            Self::Unterminated { at, .. }
            | Self::Invalid { at, .. }
            | Self::UnknownStep { at, .. }
            | Self::UnknownName { at, .. }
            | Self::Unavailable { at, .. }
            | Self::BadPath { at, .. } => at,
        }
    }

    fn with_at(mut self, at: &str) -> Self {
        at.clone_into(self.at_mut());
        self
    }

    /// Errors bubble up through nested values, and each level puts its own segment in front;
    /// building the path only on failure keeps the successful walk allocation-free.
    fn prepend(mut self, seg: Seg<'_>) -> Self {
        let at = self.at_mut();
        let mut front = String::new();
        push_seg(&mut front, seg);
        *at = join_path(&front, at);
        self
    }
}

/// Formats " at path", or nothing for the root, so root-level errors do not read "at : ".
struct Loc<'a>(&'a str);

impl fmt::Display for Loc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, " at {}", self.0)
        }
    }
}

struct Problem<'a>(&'a VarError);

impl fmt::Display for Problem<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            VarError::Unterminated { .. } => f.write_str("unterminated `${` (no closing `}`)"),
            VarError::Invalid { reason, .. } => f.write_str(reason),
            VarError::UnknownStep { step, index, .. } => {
                write!(f, "step {step} (index {index}) does not exist")
            }
            VarError::UnknownName { name, .. } => {
                write!(
                    f,
                    "no variable named `{name}` (names come from an earlier step's assign_to or the session)"
                )?;
                // `${step_1}` is a valid name, so the likely typo would otherwise only be
                // reported as an unknown variable.
                if step_digits(&name.to_ascii_uppercase()).is_some() {
                    write!(
                        f,
                        "; step references are upper case: `${{{}}}`",
                        name.to_ascii_uppercase()
                    )?;
                }
                Ok(())
            }
            VarError::Unavailable { why, .. } => f.write_str(why),
            VarError::BadPath { problem, .. } => f.write_str(problem),
        }
    }
}

struct WithContext<'a> {
    err: &'a VarError,
    prefix: &'a str,
    root: &'a str,
}

impl fmt::Display for WithContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.prefix.is_empty() {
            write!(f, "{}: ", self.prefix)?;
        }
        let path = self.err.field_path(self.root);
        if !path.is_empty() {
            write!(f, "{path}: ")?;
        }
        write!(f, "`{}`: {}", self.err.reference(), Problem(self.err))
    }
}

/// Joins two field paths written in the `items[0].name` style: `a` + `b` is `a.b`, `a` +
/// `[0]` is `a[0]`, and an empty side leaves the other unchanged.
pub fn join_path(front: &str, rest: &str) -> String {
    if front.is_empty() {
        return rest.to_owned();
    }
    if rest.is_empty() {
        return front.to_owned();
    }
    let sep = if rest.starts_with('[') { "" } else { "." };
    format!("{front}{sep}{rest}")
}

/// A segment of a field path (for locations in errors and in [`collect_refs`]).
#[derive(Clone, Copy)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// Appends one segment in the same syntax that references accept, so a reported location can
/// be pasted back into a reference.
fn push_seg(out: &mut String, seg: Seg<'_>) {
    match seg {
        Seg::Index(i) => {
            let _ = write!(out, "[{i}]");
        }
        Seg::Key(k) => push_key(out, k),
    }
}

pub(crate) fn push_key(out: &mut String, key: &str) {
    if !key.is_empty() && key.bytes().all(is_field_char) {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(key);
        return;
    }
    out.push_str("[\"");
    for c in key.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push_str("\"]");
}

fn push_path(out: &mut String, path: &[PathSegment]) {
    for seg in path {
        match seg {
            PathSegment::Key(k) => push_key(out, k),
            PathSegment::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        }
    }
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn is_field_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// The digits of an identifier of the form `STEP_<digits>`.
fn step_digits(ident: &str) -> Option<&str> {
    let rest = ident.strip_prefix("STEP_")?;
    (!rest.is_empty() && rest.bytes().all(|c| c.is_ascii_digit())).then_some(rest)
}

/// A substring that never panics: all offsets used here sit on ASCII bytes or at the ends, so
/// the fallback is never taken, but a fuzzer-found slip should not become a crash.
fn sub(s: &str, start: usize, end: usize) -> &str {
    s.get(start..end).unwrap_or_default()
}

/// Long malformed text would otherwise be repeated whole in error messages.
fn excerpt(s: &str) -> String {
    const MAX_CHARS: usize = 60;
    match s.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", sub(s, 0, cut)),
        None => s.to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Scanning
// ---------------------------------------------------------------------------------------------

#[derive(Debug)]
enum FailKind {
    /// A byte that does not fit the grammar (or the end of input where more was needed).
    Malformed,
    UnclosedQuote,
    BadEscape,
    TooLarge(&'static str),
}

/// Where and why parsing a reference stopped. `pos` is always past the `${`, which is what
/// makes resuming from it under PassThrough linear and always progressing.
#[derive(Debug)]
struct Fail {
    pos: usize,
    kind: FailKind,
}

struct Parsed {
    target: Target,
    path: Vec<PathSegment>,
    /// Offset just past the closing `}`.
    end: usize,
}

/// Parses a reference whose `${` ends just before `start`.
fn parse_ref(s: &str, start: usize) -> Result<Parsed, Fail> {
    let b = s.as_bytes();
    let malformed = |pos| Fail {
        pos,
        kind: FailKind::Malformed,
    };
    let mut i = start;
    if !b.get(i).is_some_and(|&c| is_ident_start(c)) {
        return Err(malformed(i));
    }
    while b.get(i).is_some_and(|&c| is_ident_char(c)) {
        i += 1;
    }
    let ident = sub(s, start, i);
    let target = match step_digits(ident) {
        Some(digits) => Target::Step(digits.parse::<u64>().map_err(|_| Fail {
            pos: start,
            kind: FailKind::TooLarge("step number"),
        })?),
        None => Target::Name(ident.to_owned()),
    };
    let mut path = Vec::new();
    loop {
        match b.get(i) {
            Some(b'}') => {
                return Ok(Parsed {
                    target,
                    path,
                    end: i + 1,
                });
            }
            Some(b'.') => {
                let k0 = i + 1;
                let mut k = k0;
                while b.get(k).is_some_and(|&c| is_field_char(c)) {
                    k += 1;
                }
                if k == k0 {
                    return Err(malformed(k));
                }
                path.push(PathSegment::Key(sub(s, k0, k).to_owned()));
                i = k;
            }
            Some(b'[') => {
                let (seg, next) = parse_bracket(s, i + 1)?;
                path.push(seg);
                i = next;
            }
            _ => return Err(malformed(i)),
        }
    }
}

/// Parses the inside of `[...]` starting just after the `[`; returns the segment and the
/// offset after the `]`.
fn parse_bracket(s: &str, start: usize) -> Result<(PathSegment, usize), Fail> {
    let b = s.as_bytes();
    let malformed = |pos| Fail {
        pos,
        kind: FailKind::Malformed,
    };
    match b.get(start) {
        Some(&quote @ (b'"' | b'\'')) => {
            let mut key = String::new();
            let mut k = start + 1;
            let mut run = k;
            loop {
                match b.get(k) {
                    None => {
                        return Err(Fail {
                            pos: k,
                            kind: FailKind::UnclosedQuote,
                        });
                    }
                    Some(&c) if c == quote => {
                        key.push_str(sub(s, run, k));
                        k += 1;
                        break;
                    }
                    Some(b'\\') => match b.get(k + 1) {
                        Some(&e @ (b'\\' | b'"' | b'\'')) => {
                            key.push_str(sub(s, run, k));
                            key.push(char::from(e));
                            k += 2;
                            run = k;
                        }
                        None => {
                            return Err(Fail {
                                pos: k + 1,
                                kind: FailKind::UnclosedQuote,
                            });
                        }
                        Some(_) => {
                            return Err(Fail {
                                pos: k,
                                kind: FailKind::BadEscape,
                            });
                        }
                    },
                    // Non-ASCII bytes are stepped over one by one; `run` and `k` are only ever
                    // used as cut points at ASCII bytes, so they stay on char boundaries.
                    Some(_) => k += 1,
                }
            }
            if b.get(k) == Some(&b']') {
                Ok((PathSegment::Key(key), k + 1))
            } else {
                Err(malformed(k))
            }
        }
        Some(&c) if c == b'-' || c.is_ascii_digit() => {
            let mut k = if c == b'-' { start + 1 } else { start };
            let digits = k;
            while b.get(k).is_some_and(u8::is_ascii_digit) {
                k += 1;
            }
            if k == digits {
                return Err(malformed(k));
            }
            if b.get(k) != Some(&b']') {
                return Err(malformed(k));
            }
            let n = sub(s, start, k).parse::<i64>().map_err(|_| Fail {
                pos: start,
                kind: FailKind::TooLarge("index"),
            })?;
            Ok((PathSegment::Index(n), k + 1))
        }
        _ => Err(malformed(start)),
    }
}

/// Turns a parse failure of the reference starting at `dollar` into the error reported under
/// [`UnknownPolicy::Reject`].
fn parse_error(s: &str, dollar: usize, fail: Fail) -> VarError {
    let rest = sub(s, dollar, s.len());
    let unterminated = || VarError::Unterminated {
        reference: excerpt(rest),
        at: String::new(),
    };
    let reason = match fail.kind {
        FailKind::UnclosedQuote => {
            return VarError::Invalid {
                reference: excerpt(rest),
                at: String::new(),
                reason: "a quoted key is never closed".to_owned(),
            };
        }
        FailKind::Malformed => INVALID_REFERENCE.to_owned(),
        FailKind::BadEscape => {
            "in a quoted key only \\\", \\' and \\\\ are escapes; write other characters as they are".to_owned()
        }
        FailKind::TooLarge(what) => format!("the {what} is too large"),
    };
    // Quote up to the `}` that most likely ends what the user meant as one reference.
    match sub(s, fail.pos, s.len()).find('}') {
        Some(rel) => VarError::Invalid {
            reference: excerpt(sub(s, dollar, fail.pos + rel + 1)),
            at: String::new(),
            reason,
        },
        None => unterminated(),
    }
}

/// Splits a string into text and references.
///
/// Under [`UnknownPolicy::Reject`] every `${` must start a valid reference and `\${` becomes a
/// literal `${`. Under [`UnknownPolicy::PassThrough`] malformed references and `\${` stay in
/// the text as written, and this never fails; whether a well-formed reference is known is only
/// decided by [`resolve`], which has the scope.
///
/// Under PassThrough a malformed reference is kept as text only up to the point where it
/// stopped following the grammar, and scanning goes on from there, so a step reference nested
/// in plugin syntax (`${{ len(${STEP_1}) }}`) is still found.
pub fn parse_template(s: &str, policy: UnknownPolicy) -> Result<Template, VarError> {
    let b = s.as_bytes();
    let mut parts = Vec::new();
    let mut text = String::new();
    // `lit` is where text not yet copied into `text` starts; `i` is where the search resumes.
    let mut lit = 0;
    let mut i = 0;
    while let Some(rel) = sub(s, i, s.len()).find("${") {
        let dollar = i + rel;
        let open = dollar + 2;
        if dollar > i && b.get(dollar - 1) == Some(&b'\\') {
            if policy == UnknownPolicy::Reject {
                text.push_str(sub(s, lit, dollar - 1));
                text.push_str("${");
                lit = open;
            }
            i = open;
            continue;
        }
        match parse_ref(s, open) {
            Ok(parsed) => {
                text.push_str(sub(s, lit, dollar));
                if !text.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut text)));
                }
                parts.push(Part::Ref(VarRef {
                    target: parsed.target,
                    path: parsed.path,
                    source: sub(s, dollar, parsed.end).to_owned(),
                }));
                lit = parsed.end;
                i = parsed.end;
            }
            Err(fail) => match policy {
                UnknownPolicy::Reject => return Err(parse_error(s, dollar, fail)),
                UnknownPolicy::PassThrough => i = fail.pos.max(open),
            },
        }
    }
    text.push_str(sub(s, lit, s.len()));
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    Ok(Template { parts })
}

/// Every reference in `value`, each with the field path (`items[0].name` style, empty for the
/// root) of the string holding it, in document order. Object keys are not scanned. On the
/// first malformed reference (only possible under [`UnknownPolicy::Reject`]) returns its
/// location and the error (whose own location is set too).
pub fn collect_refs(
    value: &Value,
    policy: UnknownPolicy,
) -> Result<Vec<(String, VarRef)>, (String, VarError)> {
    let mut out = Vec::new();
    let mut path = String::new();
    collect_into(value, policy, &mut path, &mut out)?;
    Ok(out)
}

fn collect_into(
    value: &Value,
    policy: UnknownPolicy,
    path: &mut String,
    out: &mut Vec<(String, VarRef)>,
) -> Result<(), (String, VarError)> {
    match value {
        Value::String(s) => {
            if s.contains("${") {
                let template =
                    parse_template(s, policy).map_err(|e| (path.clone(), e.with_at(path)))?;
                for part in template.parts {
                    if let Part::Ref(r) = part {
                        out.push((path.clone(), r));
                    }
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                push_seg(path, Seg::Index(i));
                collect_into(item, policy, path, out)?;
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let len = path.len();
                push_seg(path, Seg::Key(k));
                collect_into(item, policy, path, out)?;
                path.truncate(len);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------

/// Resolves every reference in `value` against `scope` and returns the new value.
///
/// A string that is exactly one reference becomes the referenced value (numbers stay numbers,
/// objects stay objects); references inside longer strings are spliced in as text, strings
/// raw and everything else as compact JSON. Spliced text is never scanned again, so a value
/// containing `${` cannot inject references.
///
/// Unknown names are errors under [`UnknownPolicy::Reject`] and left verbatim under
/// [`UnknownPolicy::PassThrough`]. `STEP_N` is host syntax under both policies, so an unknown
/// step is an error under both. Unavailable targets and paths that lead nowhere are always
/// errors. Errors carry the field path of the offending string relative to `value`.
///
/// Nothing bounds the size of the result: a value repeated by many references is copied as
/// often. Inputs from callers go through [`resolve_within`] instead.
pub fn resolve(value: &Value, scope: &dyn Scope, policy: UnknownPolicy) -> Result<Value, VarError> {
    if !contains_refs(value) {
        return Ok(value.clone());
    }
    resolve_value(value, scope, policy, &mut Unmetered, 0).map_err(|fail| match fail {
        Stop::Var(e) => e,
        Stop::Limit(never) => match never {},
    })
}

/// As [`resolve`], within `limits`: the size of every piece is counted before it is copied
/// or spliced, and resolution stops with [`ResolveError::Limit`] at the first piece that would
/// take the result past `limits.max_bytes` as compact JSON text or nest its arrays and objects
/// deeper than `limits.max_depth`.
///
/// The count is exact: the compact JSON text of a result that comes back (`to_string()`) is
/// at most `limits.max_bytes` long, and a limit one byte lower refuses it. Literal parts count
/// as written, a whole reference counts its value's compact JSON size and spliced text counts
/// as it will be written inside its string, escapes included. Measuring
/// a referenced value stops as soon as it passes what is left of the budget, so both memory
/// and work stay bounded by the limit however often a big value is referred to. Unlike
/// [`resolve`] a value without references is measured too.
pub fn resolve_within(
    value: &Value,
    scope: &dyn Scope,
    policy: UnknownPolicy,
    limits: InputLimits,
) -> Result<Value, ResolveError> {
    let mut budget = Budget { limits, used: 0 };
    resolve_value(value, scope, policy, &mut budget, 0).map_err(|fail| match fail {
        Stop::Var(e) => ResolveError::Var(e),
        Stop::Limit(e) => ResolveError::Limit(e),
    })
}

/// Why resolution stopped: a reference problem, or a limit of the [`Meter`] in use.
enum Stop<E> {
    Var(VarError),
    Limit(E),
}

impl<E: Relocate> Stop<E> {
    fn prepend(self, seg: Seg<'_>) -> Self {
        match self {
            Self::Var(e) => Self::Var(e.prepend(seg)),
            Self::Limit(e) => Self::Limit(e.prepend(seg)),
        }
    }
}

/// Errors that learn their location while they bubble up through nested values.
trait Relocate {
    fn prepend(self, seg: Seg<'_>) -> Self;
}

impl Relocate for std::convert::Infallible {
    fn prepend(self, _: Seg<'_>) -> Self {
        match self {}
    }
}

impl Relocate for LimitError {
    fn prepend(mut self, seg: Seg<'_>) -> Self {
        let mut front = String::new();
        push_seg(&mut front, seg);
        self.at = join_path(&front, &self.at);
        self
    }
}

/// Accounts for the output of [`resolve_value`] before it is built. Each call names a piece
/// of the compact JSON text of the result; together they spell all of it.
trait Meter {
    type Error: Relocate;
    /// An array or object of `len` items, `level` levels deep (the root value is level 1):
    /// its brackets and commas.
    fn open(&mut self, level: usize, len: usize) -> Result<(), Self::Error>;
    /// An object key with its quotes and colon.
    fn key(&mut self, key: &str) -> Result<(), Self::Error>;
    /// A literal string with its quotes.
    fn string(&mut self, s: &str) -> Result<(), Self::Error>;
    /// The quotes of a string whose content comes in pieces.
    fn quotes(&mut self) -> Result<(), Self::Error>;
    /// Literal text inside a string.
    fn text(&mut self, text: &str) -> Result<(), Self::Error>;
    /// A literal null, boolean or number.
    fn scalar(&mut self, value: &Value) -> Result<(), Self::Error>;
    /// The value of a whole reference `r`, placed inside `depth` arrays and objects.
    fn whole(&mut self, value: &Value, depth: usize, r: &VarRef) -> Result<(), Self::Error>;
    /// The value of `r` spliced into a string.
    fn spliced(&mut self, value: &Value, r: &VarRef) -> Result<(), Self::Error>;
}

/// No accounting at all, for [`resolve`].
struct Unmetered;

impl Meter for Unmetered {
    type Error = std::convert::Infallible;
    fn open(&mut self, _: usize, _: usize) -> Result<(), Self::Error> {
        Ok(())
    }
    fn key(&mut self, _: &str) -> Result<(), Self::Error> {
        Ok(())
    }
    fn string(&mut self, _: &str) -> Result<(), Self::Error> {
        Ok(())
    }
    fn quotes(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
    fn text(&mut self, _: &str) -> Result<(), Self::Error> {
        Ok(())
    }
    fn scalar(&mut self, _: &Value) -> Result<(), Self::Error> {
        Ok(())
    }
    fn whole(&mut self, _: &Value, _: usize, _: &VarRef) -> Result<(), Self::Error> {
        Ok(())
    }
    fn spliced(&mut self, _: &Value, _: &VarRef) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The bytes and depth [`resolve_within`] may still use.
struct Budget {
    limits: InputLimits,
    used: u64,
}

impl Budget {
    fn remaining(&self) -> u64 {
        self.limits.max_bytes.saturating_sub(self.used)
    }

    fn too_large(&self, at_least: u64, r: Option<&VarRef>) -> LimitError {
        LimitError {
            exceeded: Exceeded::Bytes {
                max: self.limits.max_bytes,
                at_least,
            },
            reference: r.map(|r| r.source.clone()),
            at: String::new(),
        }
    }

    fn too_deep(&self, r: Option<&VarRef>) -> LimitError {
        LimitError {
            exceeded: Exceeded::Depth {
                max: self.limits.max_depth,
            },
            reference: r.map(|r| r.source.clone()),
            at: String::new(),
        }
    }

    fn add(&mut self, bytes: u64, r: Option<&VarRef>) -> Result<(), LimitError> {
        let used = self.used.saturating_add(bytes);
        if used > self.limits.max_bytes {
            return Err(self.too_large(used, r));
        }
        self.used = used;
        Ok(())
    }

    /// Text inside a string; its length is a lower bound of its escaped size, so a text
    /// that cannot fit is refused without scanning it.
    fn add_text(&mut self, text: &str, r: Option<&VarRef>) -> Result<(), LimitError> {
        let raw = text.len() as u64;
        if raw > self.remaining() {
            return Err(self.too_large(self.used.saturating_add(raw), r));
        }
        self.add(str_bytes(text, Layer::Json), r)
    }

    fn add_measured(&mut self, measured: Result<u64, Over>, r: &VarRef) -> Result<(), LimitError> {
        match measured {
            Ok(bytes) => self.add(bytes, Some(r)),
            Err(Over::Bytes { at_least }) => {
                Err(self.too_large(self.used.saturating_add(at_least), Some(r)))
            }
            Err(Over::Depth { .. }) => Err(self.too_deep(Some(r))),
        }
    }
}

impl Meter for Budget {
    type Error = LimitError;

    fn open(&mut self, level: usize, len: usize) -> Result<(), LimitError> {
        if level > self.limits.max_depth {
            return Err(self.too_deep(None));
        }
        self.add(container_bytes(len), None)
    }

    fn key(&mut self, key: &str) -> Result<(), LimitError> {
        self.add(2, None)?;
        self.add_text(key, None)?;
        self.add(1, None)
    }

    fn string(&mut self, s: &str) -> Result<(), LimitError> {
        self.add(2, None)?;
        self.add_text(s, None)
    }

    fn quotes(&mut self) -> Result<(), LimitError> {
        self.add(2, None)
    }

    fn text(&mut self, text: &str) -> Result<(), LimitError> {
        self.add_text(text, None)
    }

    fn scalar(&mut self, value: &Value) -> Result<(), LimitError> {
        self.add(scalar_bytes(value), None)
    }

    fn whole(&mut self, value: &Value, depth: usize, r: &VarRef) -> Result<(), LimitError> {
        let levels = self.limits.max_depth.saturating_sub(depth);
        let measured = measure(value, Layer::Json, self.remaining(), levels);
        self.add_measured(measured, r)
    }

    fn spliced(&mut self, value: &Value, r: &VarRef) -> Result<(), LimitError> {
        match value {
            // Strings are spliced raw, without their quotes.
            Value::String(s) => self.add_text(s, Some(r)),
            // Spliced text adds no nesting, however deep the value is.
            other => {
                let measured = measure(other, Layer::InString, self.remaining(), usize::MAX);
                self.add_measured(measured, r)
            }
        }
    }
}

/// `depth` is how many arrays and objects enclose `value` in the result.
fn resolve_value<M: Meter>(
    value: &Value,
    scope: &dyn Scope,
    policy: UnknownPolicy,
    meter: &mut M,
    depth: usize,
) -> Result<Value, Stop<M::Error>> {
    match value {
        Value::String(s) => resolve_str(s, scope, policy, meter, depth),
        Value::Array(items) => {
            meter.open(depth + 1, items.len()).map_err(Stop::Limit)?;
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                out.push(
                    resolve_value(item, scope, policy, meter, depth + 1)
                        .map_err(|e| e.prepend(Seg::Index(i)))?,
                );
            }
            Ok(Value::Array(out))
        }
        Value::Object(map) => {
            meter.open(depth + 1, map.len()).map_err(Stop::Limit)?;
            let mut out = Map::new();
            for (k, item) in map {
                let v = meter
                    .key(k)
                    .map_err(Stop::Limit)
                    .and_then(|()| resolve_value(item, scope, policy, meter, depth + 1))
                    .map_err(|e| e.prepend(Seg::Key(k)))?;
                out.insert(k.clone(), v);
            }
            Ok(Value::Object(out))
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {
            meter.scalar(value).map_err(Stop::Limit)?;
            Ok(value.clone())
        }
    }
}

/// Resolves one string value (the root of its own location). Every piece is metered before
/// it is copied, so a refused piece is never built.
fn resolve_str<M: Meter>(
    s: &str,
    scope: &dyn Scope,
    policy: UnknownPolicy,
    meter: &mut M,
    depth: usize,
) -> Result<Value, Stop<M::Error>> {
    if !s.contains("${") {
        meter.string(s).map_err(Stop::Limit)?;
        return Ok(Value::String(s.to_owned()));
    }
    let template = parse_template(s, policy).map_err(Stop::Var)?;
    if let Some(r) = template.whole_ref() {
        return match lookup(r, scope, policy).map_err(Stop::Var)? {
            Some(v) => {
                meter.whole(v, depth, r).map_err(Stop::Limit)?;
                Ok(v.clone())
            }
            None => {
                meter.string(s).map_err(Stop::Limit)?;
                Ok(Value::String(s.to_owned()))
            }
        };
    }
    meter.quotes().map_err(Stop::Limit)?;
    let mut out = String::with_capacity(s.len());
    for part in &template.parts {
        match part {
            Part::Text(t) => {
                meter.text(t).map_err(Stop::Limit)?;
                out.push_str(t);
            }
            Part::Ref(r) => match lookup(r, scope, policy).map_err(Stop::Var)? {
                Some(v) => {
                    meter.spliced(v, r).map_err(Stop::Limit)?;
                    match v {
                        Value::String(v) => out.push_str(v),
                        // Writing into a String cannot fail.
                        v => {
                            let _ = write!(out, "{v}");
                        }
                    }
                }
                None => {
                    meter.text(&r.source).map_err(Stop::Limit)?;
                    out.push_str(&r.source);
                }
            },
        }
    }
    Ok(Value::String(out))
}

/// The value a reference points at, or `None` when it is to be left as written.
fn lookup<'s>(
    r: &VarRef,
    scope: &'s dyn Scope,
    policy: UnknownPolicy,
) -> Result<Option<&'s Value>, VarError> {
    let found = match &r.target {
        Target::Step(n) => scope.step(step_index(*n)),
        Target::Name(name) => scope.name(name),
    };
    let root = match found {
        Lookup::Value(v) => v,
        Lookup::Unavailable(why) => {
            return Err(VarError::Unavailable {
                reference: r.source.clone(),
                at: String::new(),
                why,
            });
        }
        Lookup::Unknown => {
            return match (&r.target, policy) {
                (Target::Name(_), UnknownPolicy::PassThrough) => Ok(None),
                (Target::Name(name), UnknownPolicy::Reject) => Err(VarError::UnknownName {
                    reference: r.source.clone(),
                    at: String::new(),
                    name: name.clone(),
                }),
                (Target::Step(n), _) => Err(VarError::UnknownStep {
                    reference: r.source.clone(),
                    at: String::new(),
                    step: *n,
                    index: step_index(*n),
                }),
            };
        }
    };
    navigate(root, r)
        .map(Some)
        .map_err(|problem| VarError::BadPath {
            reference: r.source.clone(),
            at: String::new(),
            problem,
        })
}

/// Follows the reference's path from the target's value; the error is the problem text.
fn navigate<'v>(root: &'v Value, r: &VarRef) -> Result<&'v Value, String> {
    let mut cur = root;
    for (depth, seg) in r.path.iter().enumerate() {
        let subject = Subject {
            r,
            walked: r.path.get(..depth).unwrap_or_default(),
        };
        cur = match (seg, cur) {
            (PathSegment::Key(k), Value::Object(map)) => match map.get(k) {
                Some(v) => v,
                None => {
                    return Err(format!("{subject} has no field `{k}` ({})", FieldList(map)));
                }
            },
            (PathSegment::Key(k), Value::Array(items)) => match k.parse::<i64>() {
                Ok(i) => index_into(items, i)?,
                Err(_) => {
                    return Err(format!(
                        "{subject} has no field `{k}` (its value is an array)"
                    ));
                }
            },
            (PathSegment::Key(k), other) => {
                return Err(format!(
                    "{subject} has no field `{k}` (its value is {})",
                    kind_of(other)
                ));
            }
            (PathSegment::Index(i), Value::Array(items)) => index_into(items, *i)?,
            (PathSegment::Index(i), Value::Object(_)) => {
                return Err(format!(
                    "{subject} is an object, not an array; for a key named \"{i}\" write .{i} or [\"{i}\"]"
                ));
            }
            (PathSegment::Index(i), other) => {
                return Err(format!(
                    "{subject} cannot be indexed with [{i}] (its value is {})",
                    kind_of(other)
                ));
            }
        };
    }
    Ok(cur)
}

fn index_into(items: &[Value], i: i64) -> Result<&Value, String> {
    let len = items.len();
    let pos = if i < 0 {
        usize::try_from(i.unsigned_abs())
            .ok()
            .and_then(|back| len.checked_sub(back))
    } else {
        usize::try_from(i).ok()
    };
    match pos.and_then(|p| items.get(p)) {
        Some(v) => Ok(v),
        None => Err(format!(
            "index {i} is out of range ({})",
            match len {
                0 => "the array is empty".to_owned(),
                1 => "the array has 1 item".to_owned(),
                n => format!("the array has {n} items"),
            }
        )),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Names the value a path segment was applied to: "step 2 (index 1)", "`items[0]` of step 2
/// (index 1)", "variable `user`" or "`address` of variable `user`".
struct Subject<'a> {
    r: &'a VarRef,
    walked: &'a [PathSegment],
}

impl fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.walked.is_empty() {
            let mut p = String::new();
            push_path(&mut p, self.walked);
            write!(f, "`{p}` of ")?;
        }
        match &self.r.target {
            Target::Step(n) => write!(f, "step {n} (index {})", step_index(*n)),
            Target::Name(name) => write!(f, "variable `{name}`"),
        }
    }
}

/// Lists an object's fields for "has no field" errors, capped so huge objects do not flood
/// the message.
struct FieldList<'a>(&'a Map<String, Value>);

impl fmt::Display for FieldList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 10;
        if self.0.is_empty() {
            return f.write_str("the object is empty");
        }
        f.write_str("fields: ")?;
        for (i, k) in self.0.keys().take(SHOWN).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            let mut shown = String::new();
            push_key(&mut shown, k);
            f.write_str(&shown)?;
        }
        if self.0.len() > SHOWN {
            write!(f, ", … ({} in all)", self.0.len())?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Size and depth limits
// ---------------------------------------------------------------------------------------------

/// What a step's input may grow to once resolved (`limits.max_input_bytes` and
/// `limits.max_input_depth` of the host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimits {
    /// Largest size as compact JSON text, in bytes.
    pub max_bytes: u64,
    /// Deepest nesting of arrays and objects; the input object itself is level 1.
    pub max_depth: usize,
}

/// The limit a value would pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// Its compact JSON text would be at least `at_least` bytes, more than `max`. Measuring
    /// stops at the first piece past the limit, so the whole size is never known.
    Bytes {
        /// The limit.
        max: u64,
        /// How far the count had got when it stopped; always more than `max`.
        at_least: u64,
    },
    /// Its arrays and objects would nest more than `max` levels deep.
    Depth {
        /// The limit.
        max: usize,
    },
}

/// A value that would pass its [`InputLimits`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", LimitDisplay(self))]
pub struct LimitError {
    /// Which limit, and by how much.
    pub exceeded: Exceeded,
    /// The reference whose value would pass it, as written; `None` when the value's own
    /// literal content does.
    pub reference: Option<String>,
    /// Field path (`items[0].name` style, empty for the root) of the string holding the
    /// reference, or of the literal piece that passes the limit (for depth, of the first
    /// array or object too deep).
    pub at: String,
}

impl LimitError {
    /// The location joined under `root`, as [`VarError::field_path`].
    pub fn field_path(&self, root: &str) -> String {
        join_path(root, &self.at)
    }

    /// What would happen, without the reference or the location.
    pub fn problem(&self) -> String {
        let what = if self.reference.is_some() {
            "substituting it would make the input"
        } else {
            "the input would be"
        };
        match self.exceeded {
            Exceeded::Bytes { max, at_least } => {
                format!("{what} at least {at_least} bytes as JSON text, more than {max}")
            }
            Exceeded::Depth { max } => {
                let what = if self.reference.is_some() {
                    "substituting it would nest the input's"
                } else {
                    "the input nests"
                };
                format!("{what} arrays and objects more than {max} levels deep")
            }
        }
    }
}

struct LimitDisplay<'a>(&'a LimitError);

impl fmt::Display for LimitDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        match &e.reference {
            Some(r) => write!(f, "`{r}`{}: ", Loc(&e.at))?,
            None if !e.at.is_empty() => write!(f, "{}: ", e.at)?,
            None => {}
        }
        f.write_str(&e.problem())
    }
}

/// Why [`resolve_within`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// A reference could not be parsed or resolved.
    #[error(transparent)]
    Var(#[from] VarError),
    /// The result would pass its limits; nothing past that point was built.
    #[error(transparent)]
    Limit(#[from] LimitError),
}

/// Checks a value as it stands (no references resolved) against `limits` and returns its size
/// as compact JSON text, `value.to_string().len()`, without building that text. The walk
/// uses no recursion and stops at the first piece past a limit, so its work is bounded by
/// `limits.max_bytes` whatever the value holds.
pub fn check_limits(value: &Value, limits: InputLimits) -> Result<u64, LimitError> {
    measure(value, Layer::Json, limits.max_bytes, limits.max_depth).map_err(|over| match over {
        Over::Bytes { at_least } => LimitError {
            exceeded: Exceeded::Bytes {
                max: limits.max_bytes,
                at_least,
            },
            reference: None,
            at: String::new(),
        },
        Over::Depth { path } => LimitError {
            exceeded: Exceeded::Depth {
                max: limits.max_depth,
            },
            reference: None,
            at: path,
        },
    })
}

/// How the strings of a measured value end up in the JSON text of the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    /// As JSON values: escaped once.
    Json,
    /// Inside the JSON text of a value that is itself spliced into a string, so that text
    /// is escaped again: `"a"` is written `\"a\"`.
    InString,
}

#[derive(Debug)]
enum Over {
    /// The count had reached `at_least` when it passed the limit.
    Bytes { at_least: u64 },
    /// The first array or object too deep, as a field path relative to the measured value.
    Depth { path: String },
}

/// Bytes serde_json writes for the content of string `s` (without its quotes) at `layer`.
fn str_bytes(s: &str, layer: Layer) -> u64 {
    s.bytes()
        .map(|b| match (b, layer) {
            (b'"' | b'\\', Layer::Json) => 2,
            (b'"' | b'\\', Layer::InString) => 4,
            // \b \t \n \f \r
            (0x08 | 0x09 | 0x0a | 0x0c | 0x0d, Layer::Json) => 2,
            (0x08 | 0x09 | 0x0a | 0x0c | 0x0d, Layer::InString) => 3,
            // \u00XX
            (0x00..=0x1f, Layer::Json) => 6,
            (0x00..=0x1f, Layer::InString) => 7,
            _ => 1,
        })
        .sum()
}

/// Both quotes of a string at `layer`.
fn quote_bytes(layer: Layer) -> u64 {
    match layer {
        Layer::Json => 2,
        Layer::InString => 4,
    }
}

/// Brackets and commas of an array or object of `len` items.
fn container_bytes(len: usize) -> u64 {
    2 + len.saturating_sub(1) as u64
}

/// Size of a null, boolean or number; 0 for anything else (strings and containers are
/// measured piece by piece).
fn scalar_bytes(value: &Value) -> u64 {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => {
            let mut count = Count(0);
            // Counting cannot fail; this is the text serde_json writes, without allocating.
            let _ = write!(count, "{n}");
            count.0
        }
        Value::String(_) | Value::Array(_) | Value::Object(_) => 0,
    }
}

/// A `fmt::Write` that only counts bytes.
struct Count(u64);

impl fmt::Write for Count {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 = self.0.saturating_add(s.len() as u64);
        Ok(())
    }
}

/// An array or object being walked by [`measure`], with the child it is at.
enum Frame<'v> {
    Items {
        iter: std::slice::Iter<'v, Value>,
        /// Children taken so far; the current one is `taken - 1`.
        taken: usize,
    },
    Entries {
        iter: serde_json::map::Iter<'v>,
        key: &'v str,
    },
}

/// The compact JSON size of `value` at `layer`, or where it passes `max_bytes` or nests more
/// than `max_levels` arrays and objects. Iterative, because values built by substitution
/// can nest deeper than any parser allowed; and every node adds at least one byte, so the
/// walk takes at most `max_bytes + 1` steps.
fn measure(value: &Value, layer: Layer, max_bytes: u64, max_levels: usize) -> Result<u64, Over> {
    let mut size: u64 = 0;
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut next = Some(value);
    loop {
        if let Some(v) = next.take() {
            let add = match v {
                Value::String(s) => {
                    // The raw length is a lower bound of the escaped one: a string that cannot
                    // fit is refused without scanning it.
                    let raw = (s.len() as u64).saturating_add(quote_bytes(layer));
                    if raw > max_bytes.saturating_sub(size) {
                        return Err(Over::Bytes {
                            at_least: size.saturating_add(raw),
                        });
                    }
                    quote_bytes(layer) + str_bytes(s, layer)
                }
                Value::Array(items) => {
                    if stack.len() >= max_levels {
                        return Err(Over::Depth {
                            path: frames_path(&stack),
                        });
                    }
                    stack.push(Frame::Items {
                        iter: items.iter(),
                        taken: 0,
                    });
                    container_bytes(items.len())
                }
                Value::Object(map) => {
                    if stack.len() >= max_levels {
                        return Err(Over::Depth {
                            path: frames_path(&stack),
                        });
                    }
                    stack.push(Frame::Entries {
                        iter: map.iter(),
                        key: "",
                    });
                    container_bytes(map.len())
                }
                scalar => scalar_bytes(scalar),
            };
            size = size.saturating_add(add);
            if size > max_bytes {
                return Err(Over::Bytes { at_least: size });
            }
        }
        let Some(frame) = stack.last_mut() else {
            return Ok(size);
        };
        match frame {
            Frame::Items { iter, taken } => match iter.next() {
                Some(item) => {
                    *taken += 1;
                    next = Some(item);
                }
                None => {
                    stack.pop();
                }
            },
            Frame::Entries { iter, key } => match iter.next() {
                Some((k, item)) => {
                    *key = k;
                    // Quotes, content and colon.
                    let raw = (k.len() as u64).saturating_add(quote_bytes(layer) + 1);
                    if raw > max_bytes.saturating_sub(size) {
                        return Err(Over::Bytes {
                            at_least: size.saturating_add(raw),
                        });
                    }
                    size = size.saturating_add(quote_bytes(layer) + 1 + str_bytes(k, layer));
                    if size > max_bytes {
                        return Err(Over::Bytes { at_least: size });
                    }
                    next = Some(item);
                }
                None => {
                    stack.pop();
                }
            },
        }
    }
}

/// The field path of the child each frame is at, shortened when long: a path of hostile
/// keys would otherwise make an error as big as the input.
fn frames_path(stack: &[Frame<'_>]) -> String {
    const MAX_PATH_BYTES: usize = 200;
    let mut path = String::new();
    for frame in stack {
        if path.len() > MAX_PATH_BYTES {
            path.push('…');
            break;
        }
        match frame {
            Frame::Items { taken, .. } => push_seg(&mut path, Seg::Index(taken.saturating_sub(1))),
            Frame::Entries { key, .. } => push_seg(&mut path, Seg::Key(key)),
        }
    }
    path
}

#[cfg(test)]
mod test_support {
    use std::collections::BTreeMap;

    use serde_json::Value;

    use super::{Lookup, Scope};

    /// A step slot in [`TestScope`].
    pub(super) enum Slot {
        Done(Value),
        Failed(String),
    }

    /// A scope over fixed values, standing in for a batch in progress.
    #[derive(Default)]
    pub(super) struct TestScope {
        pub(super) steps: Vec<Slot>,
        pub(super) names: BTreeMap<String, Value>,
    }

    impl TestScope {
        pub(super) fn with_steps(steps: impl IntoIterator<Item = Value>) -> Self {
            Self {
                steps: steps.into_iter().map(Slot::Done).collect(),
                names: BTreeMap::new(),
            }
        }

        pub(super) fn name(mut self, name: &str, value: Value) -> Self {
            self.names.insert(name.to_owned(), value);
            self
        }
    }

    impl Scope for TestScope {
        fn step(&self, index: usize) -> Lookup<'_> {
            match self.steps.get(index) {
                Some(Slot::Done(v)) => Lookup::Value(v),
                Some(Slot::Failed(why)) => Lookup::Unavailable(why.clone()),
                None => Lookup::Unknown,
            }
        }

        fn name(&self, name: &str) -> Lookup<'_> {
            self.names.get(name).map_or(Lookup::Unknown, Lookup::Value)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::test_support::{Slot, TestScope};
    use super::*;

    const R: UnknownPolicy = UnknownPolicy::Reject;
    const P: UnknownPolicy = UnknownPolicy::PassThrough;

    fn scope() -> TestScope {
        TestScope::with_steps([
            json!({"id": 7, "title": "first", "items": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}),
            json!([10, 20, 30]),
            json!("third"),
            json!(null),
        ])
        .name(
            "user",
            json!({"name": "Ada", "address": {"zip code": "12345", "city": "Paris"}, "0": "zero"}),
        )
        .name("list", json!([1, 2, 3]))
        .name("n", json!(42))
        .name("flag", json!(true))
        .name("text", json!("hello"))
        .name("weird", json!("${STEP_1}"))
    }

    fn ok(input: Value, policy: UnknownPolicy) -> Value {
        match resolve(&input, &scope(), policy) {
            Ok(v) => v,
            Err(e) => panic!("resolving {input} failed: {e}"),
        }
    }

    fn err(input: Value, policy: UnknownPolicy) -> VarError {
        match resolve(&input, &scope(), policy) {
            Ok(v) => panic!("resolving {input} should fail, got {v}"),
            Err(e) => e,
        }
    }

    fn one_ref(s: &str) -> VarRef {
        match parse_template(s, R).map(|t| t.whole_ref().cloned()) {
            Ok(Some(r)) => r,
            other => panic!("{s} is not one reference: {other:?}"),
        }
    }

    fn key(k: &str) -> PathSegment {
        PathSegment::Key(k.to_owned())
    }

    #[test]
    fn step_numbers_accept_zero_and_one_based() {
        assert_eq!(step_index(0), 0);
        assert_eq!(step_index(1), 0);
        assert_eq!(step_index(2), 1);
        assert_eq!(step_index(3), 2);
        assert_eq!(
            step_index(u64::MAX),
            usize::try_from(u64::MAX - 1).unwrap_or(usize::MAX)
        );
        assert_eq!(ok(json!("${STEP_0.id}"), R), json!(7));
        assert_eq!(ok(json!("${STEP_1.id}"), R), json!(7));
        assert_eq!(ok(json!("${STEP_2}"), R), json!([10, 20, 30]));
        assert_eq!(ok(json!("${STEP_3}"), R), json!("third"));
        assert_eq!(ok(json!("${STEP_003}"), R), json!("third"));
        assert_eq!(one_ref("${STEP_3}").step_index(), Some(2));
        assert_eq!(one_ref("${user}").step_index(), None);
    }

    #[test]
    fn names_are_validated() {
        for good in [
            "a", "_", "my_var", "A1", "STEP_", "STEP_x", "STEP_1a", "step_1", "x_STEP_1",
        ] {
            assert!(is_valid_name(good), "{good}");
        }
        for bad in [
            "", "1a", "a-b", "a.b", "a b", "é", "STEP_1", "STEP_0", "STEP_007", "$x",
        ] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn step_prefix_is_case_sensitive_and_digits_only() {
        assert_eq!(one_ref("${STEP_12}").target, Target::Step(12));
        assert_eq!(one_ref("${step_1}").target, Target::Name("step_1".into()));
        assert_eq!(one_ref("${Step_1}").target, Target::Name("Step_1".into()));
        assert_eq!(one_ref("${STEP_1a}").target, Target::Name("STEP_1a".into()));
        assert_eq!(one_ref("${STEP_}").target, Target::Name("STEP_".into()));
    }

    #[test]
    fn parses_paths() {
        let r = one_ref("${STEP_2.items[0].name}");
        assert_eq!(r.target, Target::Step(2));
        assert_eq!(
            r.path,
            vec![key("items"), PathSegment::Index(0), key("name")]
        );
        assert_eq!(r.source, "${STEP_2.items[0].name}");
        assert_eq!(r.to_string(), "${STEP_2.items[0].name}");

        let r = one_ref(r#"${user.address["zip code"]}"#);
        assert_eq!(r.target, Target::Name("user".into()));
        assert_eq!(r.path, vec![key("address"), key("zip code")]);

        assert_eq!(one_ref("${list[-1]}").path, vec![PathSegment::Index(-1)]);
        assert_eq!(one_ref("${list[-0]}").path, vec![PathSegment::Index(0)]);
        assert_eq!(one_ref("${a['k ey']}").path, vec![key("k ey")]);
        assert_eq!(one_ref("${a.0}").path, vec![key("0")]);
        assert_eq!(one_ref("${a.my-key_2}").path, vec![key("my-key_2")]);
        assert_eq!(
            one_ref(r#"${a["q\"uo\\te'}$"]['it\'s']}"#).path,
            vec![key("q\"uo\\te'}$"), key("it's")]
        );
        assert_eq!(one_ref(r#"${a[""]}"#).path, vec![key("")]);
        assert_eq!(one_ref("${a['é ü']}").path, vec![key("é ü")]);
    }

    #[test]
    fn template_helpers() {
        let t = parse_template("plain", R).unwrap_or_default();
        assert!(t.is_literal());
        assert!(t.whole_ref().is_none());
        assert_eq!(t.parts, vec![Part::Text("plain".into())]);

        assert_eq!(parse_template("", R), Ok(Template::default()));

        let t = parse_template("a ${x} b ${STEP_1} c", R).unwrap_or_default();
        assert!(!t.is_literal());
        assert!(t.whole_ref().is_none());
        assert_eq!(t.parts.len(), 5);
        let targets: Vec<_> = t.refs().map(|r| r.target.clone()).collect();
        assert_eq!(targets, vec![Target::Name("x".into()), Target::Step(1)]);

        // Escapes merge into the surrounding text instead of producing extra parts.
        let t = parse_template(r"a \${x} b", R).unwrap_or_default();
        assert_eq!(t.parts, vec![Part::Text("a ${x} b".into())]);

        let t = parse_template("${x}${y}", R).unwrap_or_default();
        assert_eq!(t.parts.len(), 2);
        assert!(t.whole_ref().is_none());
    }

    #[test]
    fn whole_reference_keeps_json_type() {
        assert_eq!(ok(json!("${n}"), R), json!(42));
        assert_eq!(ok(json!("${flag}"), R), json!(true));
        assert_eq!(ok(json!("${STEP_4}"), R), json!(null));
        assert_eq!(ok(json!("${list}"), R), json!([1, 2, 3]));
        assert_eq!(
            ok(json!("${user.address}"), R),
            json!({"zip code": "12345", "city": "Paris"})
        );
        assert_eq!(ok(json!("${text}"), R), json!("hello"));
        // Surrounding whitespace makes it text, not a whole reference.
        assert_eq!(ok(json!(" ${n}"), R), json!(" 42"));
    }

    #[test]
    fn splices_into_longer_strings() {
        assert_eq!(ok(json!("hi ${user.name}!"), R), json!("hi Ada!"));
        assert_eq!(ok(json!("n=${n}"), R), json!("n=42"));
        assert_eq!(ok(json!("${flag}/${STEP_4}"), R), json!("true/null"));
        assert_eq!(ok(json!("l=${list}"), R), json!("l=[1,2,3]"));
        assert_eq!(
            ok(json!("a=${user.address}"), R),
            json!(r#"a={"city":"Paris","zip code":"12345"}"#)
        );
        assert_eq!(ok(json!("${text}${text}"), R), json!("hellohello"));
        // Spliced values are not scanned again, so a value cannot smuggle in a reference.
        assert_eq!(ok(json!("x ${weird}"), R), json!("x ${STEP_1}"));
        assert_eq!(ok(json!("${weird}"), R), json!("${STEP_1}"));
    }

    #[test]
    fn walks_arrays_and_objects_but_not_keys() {
        let input = json!({
            "${n}": ["${n}", {"deep": "v=${STEP_3}"}, 5, null],
            "plain": "no refs",
        });
        assert_eq!(
            ok(input, R),
            json!({"${n}": [42, {"deep": "v=third"}, 5, null], "plain": "no refs"})
        );
    }

    #[test]
    fn paths_reach_into_values() {
        assert_eq!(ok(json!("${STEP_1.items[1].name}"), R), json!("b"));
        assert_eq!(ok(json!("${STEP_1.items[-1].name}"), R), json!("c"));
        assert_eq!(ok(json!("${STEP_1.items[-3].name}"), R), json!("a"));
        assert_eq!(ok(json!("${list[-1]}"), R), json!(3));
        assert_eq!(
            ok(json!(r#"${user.address["zip code"]}"#), R),
            json!("12345")
        );
        assert_eq!(ok(json!("${user.address['zip code']}"), R), json!("12345"));
        assert_eq!(ok(json!("${user['name']}"), R), json!("Ada"));
        // `.0` is an index on arrays and a key on objects.
        assert_eq!(ok(json!("${list.0}"), R), json!(1));
        assert_eq!(ok(json!("${list.-1}"), R), json!(3));
        assert_eq!(ok(json!("${STEP_2.2}"), R), json!(30));
        assert_eq!(ok(json!("${user.0}"), R), json!("zero"));
        assert_eq!(ok(json!(r#"${user["0"]}"#), R), json!("zero"));
    }

    #[test]
    fn escapes_under_reject_become_literal() {
        assert_eq!(ok(json!(r"\${STEP_1}"), R), json!("${STEP_1}"));
        assert_eq!(
            ok(json!(r"cost: \${n} vs ${n}"), R),
            json!("cost: ${n} vs 42")
        );
        assert_eq!(ok(json!(r"\${not a ref"), R), json!("${not a ref"));
        // Only `\${` is special; other backslashes are kept.
        assert_eq!(ok(json!(r"C:\dir\${n}"), R), json!(r"C:\dir${n}"));
        assert_eq!(ok(json!(r"\\${n}"), R), json!(r"\${n}"));
        assert_eq!(ok(json!(r"a\b"), R), json!(r"a\b"));
        assert_eq!(ok(json!(r"\${"), R), json!("${"));
        assert_eq!(escape("a ${b} ${c"), r"a \${b} \${c");
        assert_eq!(ok(json!(escape("a ${b} ${c")), R), json!("a ${b} ${c"));
    }

    #[test]
    fn escapes_under_pass_through_are_untouched() {
        assert_eq!(ok(json!(r"\${n}"), P), json!(r"\${n}"));
        assert_eq!(ok(json!(r"\${STEP_1}"), P), json!(r"\${STEP_1}"));
        assert_eq!(ok(json!(r"x \${n} ${n}"), P), json!(r"x \${n} 42"));
    }

    #[test]
    fn pass_through_leaves_plugin_syntax_alone() {
        for s in [
            "${var}[0]",
            "@{list}",
            "&{dict}",
            "%{HOME}",
            "${a + b}",
            "${ n }",
            "${}",
            "${var",
            "${n.",
            "${n[",
            "${n['x",
            r"${n['\x']}",
            "${STEP_99999999999999999999999}",
            "${n[99999999999999999999]}",
            "Log    ${unknown}    level=${LEVEL}",
            "${{ 1 + 2 }}",
            "$",
            "${",
            "}${",
        ] {
            assert_eq!(ok(json!(s), P), json!(s), "{s}");
        }
        // A whole unknown reference stays the string it was.
        assert_eq!(ok(json!("${unknown.x[0]}"), P), json!("${unknown.x[0]}"));
    }

    #[test]
    fn pass_through_substitutes_steps_and_known_names() {
        assert_eq!(ok(json!("${n}"), P), json!(42));
        assert_eq!(ok(json!("${STEP_3}"), P), json!("third"));
        assert_eq!(
            ok(json!("Log  ${text} ${other}"), P),
            json!("Log  hello ${other}")
        );
        // Known names are substituted even in Robot's item-access form; the `[0]` stays text.
        assert_eq!(ok(json!("${list}[0]"), P), json!("[1,2,3][0]"));
        // A step reference nested in plugin syntax is still found.
        assert_eq!(
            ok(json!("${{ len(${STEP_2}) }}"), P),
            json!("${{ len([10,20,30]) }}")
        );
        assert_eq!(ok(json!("${var_${n}}"), P), json!("${var_42}"));
        assert_eq!(ok(json!("${a + ${n}}"), P), json!("${a + 42}"));
    }

    #[test]
    fn pass_through_still_rejects_bad_steps_and_paths() {
        assert!(matches!(
            err(json!("${STEP_9}"), P),
            VarError::UnknownStep {
                step: 9,
                index: 8,
                ..
            }
        ));
        assert!(matches!(err(json!("${n.x}"), P), VarError::BadPath { .. }));
        let s = TestScope {
            steps: vec![Slot::Failed("step 1 failed".into())],
            ..TestScope::default()
        };
        assert!(matches!(
            resolve(&json!("${STEP_1}"), &s, P),
            Err(VarError::Unavailable { .. })
        ));
    }

    #[test]
    fn error_messages_match_the_documented_style() {
        let e = err(json!({"items": [{"x": "${STEP_2[5]}"}]}), R);
        assert_eq!(
            e.to_string(),
            "`${STEP_2[5]}` at items[0].x: index 5 is out of range (the array has 3 items)"
        );
        let e = err(json!({"items": ["${STEP_1.items[5]}"]}), R);
        assert_eq!(
            e.to_string(),
            "`${STEP_1.items[5]}` at items[0]: index 5 is out of range (the array has 3 items)"
        );
        assert_eq!(e.at(), "items[0]");
        assert_eq!(e.reference(), "${STEP_1.items[5]}");

        let e = err(json!({"url": "${STEP_2.title}"}), R);
        assert_eq!(
            e.to_string(),
            "`${STEP_2.title}` at url: step 2 (index 1) has no field `title` (its value is an array)"
        );
        assert_eq!(
            e.display_with("step 3 (label 'login')", "input")
                .to_string(),
            "step 3 (label 'login'): input.url: `${STEP_2.title}`: step 2 (index 1) has no field `title` (its value is an array)"
        );
        assert_eq!(
            e.display_with("", "").to_string(),
            "url: `${STEP_2.title}`: step 2 (index 1) has no field `title` (its value is an array)"
        );
        assert_eq!(e.field_path("input"), "input.url");
        assert_eq!(
            e.problem(),
            "step 2 (index 1) has no field `title` (its value is an array)"
        );

        let e = err(json!({"text": "say ${foo bar} now"}), R);
        assert_eq!(
            e.to_string(),
            "`${foo bar}` at text: not a valid reference (expected STEP_N or a name like my_var, optionally followed by .field or [index])"
        );

        // At the root there is no location.
        let e = err(json!("${nope}"), R);
        assert_eq!(
            e.to_string(),
            "`${nope}`: no variable named `nope` (names come from an earlier step's assign_to or the session)"
        );
        assert_eq!(
            e.display_with("step 1", "input").to_string(),
            format!("step 1: input: {e}")
        );
    }

    #[test]
    fn malformed_references_are_errors_under_reject() {
        for (s, want) in [
            ("${", "`${`: unterminated `${` (no closing `}`)"),
            (
                "a ${STEP_1",
                "`${STEP_1`: unterminated `${` (no closing `}`)",
            ),
            (
                "${foo bar",
                "`${foo bar`: unterminated `${` (no closing `}`)",
            ),
            ("${n.", "`${n.`: unterminated `${` (no closing `}`)"),
            ("${}", &format!("`${{}}`: {INVALID_REFERENCE}")),
            ("${ n }", &format!("`${{ n }}`: {INVALID_REFERENCE}")),
            ("${a + b}", &format!("`${{a + b}}`: {INVALID_REFERENCE}")),
            ("${1x}", &format!("`${{1x}}`: {INVALID_REFERENCE}")),
            ("${n[x]}", &format!("`${{n[x]}}`: {INVALID_REFERENCE}")),
            ("${n[]}", &format!("`${{n[]}}`: {INVALID_REFERENCE}")),
            ("${n[-]}", &format!("`${{n[-]}}`: {INVALID_REFERENCE}")),
            ("${n['a'}", &format!("`${{n['a'}}`: {INVALID_REFERENCE}")),
            ("${n..x}", &format!("`${{n..x}}`: {INVALID_REFERENCE}")),
            (
                "${STEP_99999999999999999999}",
                "`${STEP_99999999999999999999}`: the step number is too large",
            ),
            (
                "${n[99999999999999999999]}",
                "`${n[99999999999999999999]}`: the index is too large",
            ),
            ("${n['abc}", "`${n['abc}`: a quoted key is never closed"),
            (
                r"${n['a\n']}",
                r#"`${n['a\n']}`: in a quoted key only \", \' and \\ are escapes; write other characters as they are"#,
            ),
        ] {
            match resolve(&json!(s), &scope(), R) {
                Err(e) => assert_eq!(e.to_string(), want, "{s}"),
                Ok(v) => panic!("{s} resolved to {v}"),
            }
        }
    }

    #[test]
    fn long_malformed_references_are_shortened() {
        let s = format!("${{{}", "x ".repeat(500));
        let e = err(json!(s), R);
        assert!(matches!(e, VarError::Unterminated { .. }));
        assert!(e.reference().chars().count() <= 61, "{}", e.reference());
        assert!(e.reference().ends_with('…'));
    }

    #[test]
    fn lookup_errors() {
        let e = err(json!("${STEP_9}"), R);
        assert_eq!(
            e.to_string(),
            "`${STEP_9}`: step 9 (index 8) does not exist"
        );
        let e = err(json!("${step_2}"), R);
        assert_eq!(
            e.to_string(),
            "`${step_2}`: no variable named `step_2` (names come from an earlier step's assign_to or the session); step references are upper case: `${STEP_2}`"
        );
        let s = TestScope {
            steps: vec![Slot::Done(json!(1)), Slot::Failed("step 2 failed".into())],
            ..TestScope::default()
        };
        let e = resolve(&json!({"a": ["x", "${STEP_2.x}"]}), &s, R);
        assert_eq!(
            e.map_err(|e| e.to_string()),
            Err("`${STEP_2.x}` at a[1]: step 2 failed".to_owned())
        );
    }

    #[test]
    fn path_errors() {
        for (s, want) in [
            (
                "${STEP_1.nope}",
                "step 1 (index 0) has no field `nope` (fields: id, items, title)",
            ),
            (
                "${STEP_1.items[0].nme}",
                "`items[0]` of step 1 (index 0) has no field `nme` (fields: name)",
            ),
            (
                "${n.x}",
                "variable `n` has no field `x` (its value is a number)",
            ),
            (
                "${STEP_4.x}",
                "step 4 (index 3) has no field `x` (its value is null)",
            ),
            (
                "${text[0]}",
                "variable `text` cannot be indexed with [0] (its value is a string)",
            ),
            (
                "${user[0]}",
                "variable `user` is an object, not an array; for a key named \"0\" write .0 or [\"0\"]",
            ),
            (
                "${list[3]}",
                "index 3 is out of range (the array has 3 items)",
            ),
            (
                "${list[-4]}",
                "index -4 is out of range (the array has 3 items)",
            ),
            (
                "${list.99999999999999999999999}",
                "variable `list` has no field `99999999999999999999999` (its value is an array)",
            ),
            (
                "${list[-9223372036854775808]}",
                "index -9223372036854775808 is out of range (the array has 3 items)",
            ),
            (
                r#"${user.address["zip"]}"#,
                "`address` of variable `user` has no field `zip` (fields: city, [\"zip code\"])",
            ),
        ] {
            let e = err(json!(s), R);
            assert!(matches!(e, VarError::BadPath { .. }), "{s}");
            assert_eq!(e.problem(), want, "{s}");
        }
        let empty = TestScope::with_steps([json!([]), json!([1]), json!({})]);
        let problem = |s: &str| resolve(&json!(s), &empty, R).map_err(|e| e.problem());
        assert_eq!(
            problem("${STEP_1[0]}"),
            Err("index 0 is out of range (the array is empty)".into())
        );
        assert_eq!(
            problem("${STEP_2[1]}"),
            Err("index 1 is out of range (the array has 1 item)".into())
        );
        assert_eq!(
            problem("${STEP_3.a}"),
            Err("step 3 (index 2) has no field `a` (the object is empty)".into())
        );
    }

    #[test]
    fn field_list_is_capped() {
        let big: serde_json::Map<String, Value> =
            (0..15).map(|i| (format!("k{i:02}"), json!(i))).collect();
        let s = TestScope::with_steps([Value::Object(big)]);
        let e = resolve(&json!("${STEP_1.zz}"), &s, R).map_err(|e| e.problem());
        assert_eq!(
            e,
            Err("step 1 (index 0) has no field `zz` (fields: k00, k01, k02, k03, k04, k05, k06, k07, k08, k09, … (15 in all))".into())
        );
    }

    #[test]
    fn error_locations_quote_odd_keys() {
        let e = err(json!({"a b": {"c": [["${nope}"]]}}), R);
        assert_eq!(e.at(), r#"["a b"].c[0][0]"#);
        assert_eq!(e.field_path("input"), r#"input["a b"].c[0][0]"#);
        let e = err(json!([{"q\"\\": "${nope}"}]), R);
        assert_eq!(e.at(), r#"[0]["q\"\\"]"#);
        assert_eq!(e.field_path("input"), r#"input[0]["q\"\\"]"#);
        assert_eq!(join_path("", "x"), "x");
        assert_eq!(join_path("x", ""), "x");
        assert_eq!(join_path("x", "[1]"), "x[1]");
        assert_eq!(join_path("x", "y"), "x.y");
    }

    #[test]
    fn collect_refs_reports_locations() {
        let v = json!({
            "url": "https://x/${STEP_1.id}",
            "items": [{"name": "${user.name} and ${STEP_2[0]}"}, 3, "plain"],
            "${key}": "not scanned? no: ${n}",
        });
        let found = collect_refs(&v, R).unwrap_or_default();
        let got: Vec<(String, String)> = found.into_iter().map(|(at, r)| (at, r.source)).collect();
        assert_eq!(
            got,
            vec![
                (r#"["${key}"]"#.to_owned(), "${n}".to_owned()),
                ("items[0].name".to_owned(), "${user.name}".to_owned()),
                ("items[0].name".to_owned(), "${STEP_2[0]}".to_owned()),
                ("url".to_owned(), "${STEP_1.id}".to_owned()),
            ]
        );
        let root = collect_refs(&json!("${x}"), R).unwrap_or_default();
        assert_eq!(root.len(), 1);
        assert_eq!(root.first().map(|(at, _)| at.as_str()), Some(""));
        assert_eq!(collect_refs(&json!({"a": 1}), R), Ok(vec![]));

        match collect_refs(&json!({"a": [1, "${bad ref}"]}), R) {
            Err((at, e)) => {
                assert_eq!(at, "a[1]");
                assert_eq!(e.at(), "a[1]");
                assert!(matches!(e, VarError::Invalid { .. }));
            }
            Ok(v) => panic!("expected an error, got {v:?}"),
        }
        // Under PassThrough malformed text is not a reference, and escapes are not either.
        let found = collect_refs(&json!(r"${a + b} \${c} ${d}[0] @{e}"), P).unwrap_or_default();
        let names: Vec<_> = found.into_iter().map(|(_, r)| r.target).collect();
        assert_eq!(names, vec![Target::Name("d".into())]);
    }

    #[test]
    fn contains_refs_looks_at_string_values_only() {
        assert!(contains_refs(&json!("a${b")));
        assert!(contains_refs(&json!([1, {"x": ["${"]}])));
        assert!(!contains_refs(&json!({"${x}": 1})));
        assert!(!contains_refs(&json!(["$", "{", "$ {", null, 1.5, true])));
    }

    #[test]
    fn values_without_references_come_back_unchanged() {
        let v = json!({"a": [1, 2, {"b": "$x {y} $"}], "c": null});
        assert_eq!(resolve(&v, &scope(), R), Ok(v.clone()));
        assert_eq!(resolve(&v, &scope(), P), Ok(v));
    }

    const ROOMY: InputLimits = InputLimits {
        max_bytes: u64::MAX,
        max_depth: usize::MAX,
    };

    fn limits(max_bytes: u64, max_depth: usize) -> InputLimits {
        InputLimits {
            max_bytes,
            max_depth,
        }
    }

    fn limit_err(input: &Value, scope: &TestScope, limits: InputLimits) -> LimitError {
        match resolve_within(input, scope, R, limits) {
            Err(ResolveError::Limit(e)) => e,
            other => panic!("resolving {input} should pass a limit, got {other:?}"),
        }
    }

    /// Builds `[[...[leaf]...]]` without recursion.
    fn nested(levels: usize, leaf: Value) -> Value {
        let mut v = leaf;
        for _ in 0..levels {
            v = Value::Array(vec![v]);
        }
        v
    }

    /// Drops a deeply nested value without recursion; serde_json's own drop recurses.
    fn drop_nested(mut v: Value) {
        while let Value::Array(mut items) = v {
            v = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn sizes_are_those_serde_json_writes() {
        for v in [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-12345678901234_i64),
            json!(u64::MAX),
            json!(1.5e300),
            json!(-0.000123),
            json!(""),
            json!("plain"),
            json!("quote \" backslash \\ slash / del \u{7f}"),
            json!("\u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1f} é 🦀"),
            json!([]),
            json!({}),
            json!([1, [2, [3, {}]], {"k\"ey\n": ["v\u{1}", null]}]),
            json!({"a": {"b": {"c": "d"}}, "e": [true, false], "": ""}),
        ] {
            let want = v.to_string().len() as u64;
            assert_eq!(check_limits(&v, ROOMY), Ok(want), "{v}");
            assert_eq!(
                measure(&v, Layer::Json, u64::MAX, usize::MAX).ok(),
                Some(want)
            );
            // Spliced into a string, a value's JSON text is escaped once more.
            let spliced = Value::String(v.to_string()).to_string().len() as u64 - 2;
            assert_eq!(
                measure(&v, Layer::InString, u64::MAX, usize::MAX).ok(),
                Some(spliced),
                "{v} spliced"
            );
        }
    }

    #[test]
    fn check_limits_stops_at_the_first_piece_past_the_limit() {
        let v = json!({"a": "x".repeat(100), "b": "y".repeat(1_000_000)});
        match check_limits(&v, limits(50, 64)) {
            Err(LimitError {
                exceeded: Exceeded::Bytes { max: 50, at_least },
                reference: None,
                at,
            }) => {
                // `{"a":` and the first string: the second was never looked at.
                assert!(at_least > 50 && at_least < 120, "{at_least}");
                assert_eq!(at, "");
            }
            other => panic!("{other:?}"),
        }
        let size = v.to_string().len() as u64;
        assert_eq!(check_limits(&v, limits(size, 1)), Ok(size));
        assert!(check_limits(&v, limits(size - 1, 1)).is_err());
    }

    #[test]
    fn check_limits_names_the_first_container_too_deep() {
        let v = json!({"a": [1, {"b c": [[2]]}]});
        assert_eq!(check_limits(&v, limits(u64::MAX, 5)).map(|_| ()), Ok(()));
        let e = check_limits(&v, limits(u64::MAX, 4)).err();
        assert_eq!(
            e,
            Some(LimitError {
                exceeded: Exceeded::Depth { max: 4 },
                reference: None,
                at: r#"a[1]["b c"][0]"#.into(),
            })
        );
        assert_eq!(
            e.map(|e| e.to_string()),
            Some(
                r#"a[1]["b c"][0]: the input nests arrays and objects more than 4 levels deep"#
                    .into()
            )
        );
        // The root counts as level 1.
        assert!(check_limits(&json!({}), limits(u64::MAX, 0)).is_err());
        assert_eq!(check_limits(&json!(1), limits(u64::MAX, 0)), Ok(1));
    }

    #[test]
    fn depth_is_checked_without_recursion() {
        // Far deeper than any stack would survive with one frame per level.
        let deep = nested(1_000_000, json!(1));
        let e = check_limits(&deep, limits(u64::MAX, 64)).err();
        assert!(
            matches!(
                e,
                Some(LimitError {
                    exceeded: Exceeded::Depth { max: 64 },
                    ..
                })
            ),
            "{e:?}"
        );
        // Resolution refuses before it recurses past the limit, too.
        let input = Value::Array(vec![deep]);
        let e = limit_err(&input, &TestScope::default(), limits(u64::MAX, 64));
        assert_eq!(e.exceeded, Exceeded::Depth { max: 64 });
        assert!(e.at.starts_with("[0][0][0]"), "{}", e.at);
        drop_nested(input);
    }

    #[test]
    fn long_paths_in_depth_errors_are_shortened() {
        let mut v = json!(1);
        for _ in 0..100 {
            v = json!({"k".repeat(50): v});
        }
        let e = check_limits(&v, limits(u64::MAX, 64)).err();
        let at = e.map(|e| e.at).unwrap_or_default();
        assert!(at.len() < 300 && at.ends_with('…'), "{at}");
    }

    #[test]
    fn resolve_within_counts_the_result_exactly() {
        let s = scope();
        for input in [
            json!({"a": "${user}", "b": ["${list}", "n=${n}", "${text}${text}"], "c": 1.25}),
            json!({"q": "say \"${user.address}\"\n", "e": r"\${n} ${flag}", "z": "${STEP_4}"}),
            json!(["${weird}", "x ${weird}", {"k\u{1}": "${STEP_2}"}]),
        ] {
            let out = resolve(&input, &s, R).unwrap_or_default();
            let size = out.to_string().len() as u64;
            assert_eq!(
                resolve_within(&input, &s, R, limits(size, 64)),
                Ok(out.clone())
            );
            let e = limit_err(&input, &s, limits(size - 1, 64));
            assert!(
                matches!(e.exceeded, Exceeded::Bytes { max, at_least } if max == size - 1 && at_least > max),
                "{e:?}"
            );
        }
        // Under PassThrough what is left as written counts as written.
        let input = json!({"a": "${unknown}", "b": "x ${unknown} ${n}"});
        let out = resolve(&input, &s, P).unwrap_or_default();
        let size = out.to_string().len() as u64;
        assert_eq!(resolve_within(&input, &s, P, limits(size, 64)), Ok(out));
        assert!(resolve_within(&input, &s, P, limits(size - 1, 64)).is_err());
    }

    #[test]
    fn a_repeated_whole_reference_is_charged_each_time() {
        let kib = "x".repeat(1_024);
        let s = TestScope::with_steps([json!(kib)]);
        // `{"value":[...]}` with its 8,191 commas is 8,203 bytes, and each item 1,026 more:
        // 40 items fit in 49,743 bytes, 41 do not.
        let input = json!({"value": vec!["${STEP_1}"; 8_192]});
        let e = limit_err(&input, &s, limits(49_743, 64));
        assert_eq!(e.reference.as_deref(), Some("${STEP_1}"));
        assert_eq!(e.at, "value[40]");
        assert_eq!(e.field_path("input"), "input.value[40]");
        assert!(
            matches!(e.exceeded, Exceeded::Bytes { max: 49_743, at_least } if at_least > 49_743 && at_least <= 49_743 + 1_026),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "`${{STEP_1}}` at value[40]: substituting it would make the input at least {} bytes as JSON text, more than 49743",
                match e.exceeded {
                    Exceeded::Bytes { at_least, .. } => at_least,
                    Exceeded::Depth { .. } => 0,
                }
            )
        );
    }

    #[test]
    fn a_repeated_spliced_reference_is_charged_each_time() {
        let s = TestScope::with_steps([json!("x".repeat(1_024)), json!({"a": "\"q\""})]);
        let input = json!({"value": "${STEP_1}".repeat(8_192)});
        let e = limit_err(&input, &s, limits(100_000, 64));
        assert_eq!(e.reference.as_deref(), Some("${STEP_1}"));
        assert_eq!(e.at, "value");
        // A spliced value counts as written inside its string, escapes included.
        let input = json!({"v": "<${STEP_2}>"});
        let out = resolve(&input, &s, R).unwrap_or_default();
        assert_eq!(out, json!({"v": r#"<{"a":"\"q\""}>"#}));
        let size = out.to_string().len() as u64;
        assert_eq!(resolve_within(&input, &s, R, limits(size, 64)), Ok(out));
        assert!(resolve_within(&input, &s, R, limits(size - 1, 64)).is_err());
    }

    #[test]
    fn literal_text_after_substitutions_counts_too() {
        let s = TestScope::with_steps([json!("x".repeat(100))]);
        let input = json!({"a": "${STEP_1}", "b": "y".repeat(100)});
        let e = limit_err(&input, &s, limits(150, 64));
        assert_eq!(e.reference, None);
        assert_eq!(e.at, "b");
        assert_eq!(
            e.to_string(),
            format!(
                "b: the input would be at least {} bytes as JSON text, more than 150",
                match e.exceeded {
                    Exceeded::Bytes { at_least, .. } => at_least,
                    Exceeded::Depth { .. } => 0,
                }
            )
        );
    }

    #[test]
    fn whole_references_add_their_depth_and_spliced_ones_do_not() {
        let s = TestScope::with_steps([nested(10, json!("leaf"))]);
        // The input object and `a` make 2 levels; the value adds 10.
        let input = json!({"a": ["${STEP_1}"]});
        assert!(resolve_within(&input, &s, R, limits(u64::MAX, 12)).is_ok());
        let e = limit_err(&input, &s, limits(u64::MAX, 11));
        assert_eq!(e.exceeded, Exceeded::Depth { max: 11 });
        assert_eq!(e.reference.as_deref(), Some("${STEP_1}"));
        assert_eq!(e.at, "a[0]");
        assert_eq!(
            e.to_string(),
            "`${STEP_1}` at a[0]: substituting it would nest the input's arrays and objects more than 11 levels deep"
        );
        let spliced = json!({"a": ["text ${STEP_1}"]});
        assert!(resolve_within(&spliced, &s, R, limits(u64::MAX, 2)).is_ok());
    }

    #[test]
    fn reference_errors_keep_their_type_under_limits() {
        let e = resolve_within(&json!({"a": ["${nope}"]}), &scope(), R, ROOMY);
        assert!(
            matches!(&e, Err(ResolveError::Var(VarError::UnknownName { at, .. })) if at == "a[0]"),
            "{e:?}"
        );
    }
}

#[cfg(test)]
mod props {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::test_support::TestScope;
    use super::*;

    fn policy() -> impl Strategy<Value = UnknownPolicy> {
        prop_oneof![
            Just(UnknownPolicy::Reject),
            Just(UnknownPolicy::PassThrough)
        ]
    }

    /// Strings built from the grammar's own tokens, so the scanner's edge cases come up far
    /// more often than in uniformly random text.
    fn tricky() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just("${".to_owned()),
                Just("}".to_owned()),
                Just("\\".to_owned()),
                Just("$".to_owned()),
                Just("{".to_owned()),
                Just(".".to_owned()),
                Just("[".to_owned()),
                Just("]".to_owned()),
                Just("\"".to_owned()),
                Just("'".to_owned()),
                Just("-".to_owned()),
                Just(" ".to_owned()),
                Just("é".to_owned()),
                "STEP_[0-9]{1,3}",
                "[a-z_][a-z0-9_]{0,3}",
                "[0-9]{1,25}",
                "\\PC{0,3}",
            ],
            0..24,
        )
        .prop_map(|v| v.concat())
    }

    fn any_text() -> impl Strategy<Value = String> {
        prop_oneof![any::<String>(), tricky()]
    }

    /// Text with no `${`, built rather than filtered so that high case counts do not run into
    /// proptest's limit on rejected inputs. Repeating the removal is needed because removing
    /// one `{` can bring a `$` and a later `{` together.
    fn text_without_refs() -> impl Strategy<Value = String> {
        any_text().prop_map(|mut s| {
            while s.contains("${") {
                s = s.replace("${", "$");
            }
            s
        })
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any_text().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(any_text(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn depth_of(v: &Value) -> usize {
        match v {
            Value::Array(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
            Value::Object(map) => 1 + map.values().map(depth_of).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// With room to spare `resolve_within` is `resolve`; its size and depth limits hold
    /// exactly at the result's own size and depth and fail one below.
    fn check_budgeted(
        input: &Value,
        scope: &TestScope,
        policy: UnknownPolicy,
    ) -> Result<(), TestCaseError> {
        let at = |max_bytes, max_depth| InputLimits {
            max_bytes,
            max_depth,
        };
        let unbudgeted = resolve(input, scope, policy);
        let budgeted = resolve_within(input, scope, policy, at(u64::MAX, usize::MAX));
        prop_assert_eq!(&budgeted, &unbudgeted.clone().map_err(ResolveError::Var));
        let Ok(out) = unbudgeted else { return Ok(()) };
        let (size, depth) = (out.to_string().len() as u64, depth_of(&out));
        prop_assert_eq!(
            resolve_within(input, scope, policy, at(size, depth)),
            Ok(out.clone())
        );
        let short = resolve_within(input, scope, policy, at(size - 1, usize::MAX));
        prop_assert!(
            matches!(&short, Err(ResolveError::Limit(LimitError { exceeded: Exceeded::Bytes { at_least, .. }, .. })) if *at_least > size - 1),
            "{:?}",
            short
        );
        if depth > 0 {
            let shallow = resolve_within(input, scope, policy, at(u64::MAX, depth - 1));
            prop_assert!(
                matches!(
                    &shallow,
                    Err(ResolveError::Limit(LimitError {
                        exceeded: Exceeded::Depth { .. },
                        ..
                    }))
                ),
                "{:?}",
                shallow
            );
        }
        Ok(())
    }

    fn scope_with(v: &Value) -> TestScope {
        TestScope::with_steps([json!(0), v.clone()])
            .name("v", v.clone())
            .name("n", json!(1))
            .name("s", json!("str"))
    }

    proptest! {
        #[test]
        fn never_panics(s in any_text(), policy in policy(), v in json_value()) {
            let scope = scope_with(&v);
            let _ = parse_template(&s, policy);
            let _ = resolve(&Value::String(s.clone()), &scope, policy);
            let _ = collect_refs(&json!({"k": [s.clone()]}), policy);
            if let Err(e) = resolve(&json!([{"x": s}]), &scope, policy) {
                let _ = e.display_with("step 1", "input").to_string();
            }
        }

        #[test]
        fn resolve_never_panics_on_values(v in json_value(), policy in policy()) {
            let scope = scope_with(&v);
            let _ = resolve(&v, &scope, policy);
            let _ = collect_refs(&v, policy);
        }

        #[test]
        fn text_without_refs_is_unchanged(s in text_without_refs(), policy in policy()) {
            let v = Value::String(s);
            prop_assert_eq!(resolve(&v, &TestScope::default(), policy), Ok(v.clone()));
            let t = parse_template(v.as_str().unwrap_or_default(), policy);
            prop_assert!(t.is_ok_and(|t| t.is_literal()));
        }

        #[test]
        fn whole_reference_returns_exact_value(v in json_value(), policy in policy()) {
            let scope = scope_with(&v);
            for r in ["${STEP_2}", "${v}"] {
                prop_assert_eq!(resolve(&json!(r), &scope, policy), Ok(v.clone()));
            }
        }

        #[test]
        fn indexed_reference_returns_the_item(items in prop::collection::vec(json_value(), 1..5), i in 0usize..5) {
            let i = i % items.len();
            let scope = scope_with(&Value::Array(items.clone()));
            let back = i64::try_from(items.len() - i).unwrap_or(0);
            for r in [format!("${{v[{i}]}}"), format!("${{v.{i}}}"), format!("${{STEP_2[-{back}]}}")] {
                prop_assert_eq!(resolve(&json!(r), &scope, UnknownPolicy::Reject), Ok(items[i].clone()));
            }
        }

        #[test]
        fn splicing_a_string_is_concatenation(
            pre in text_without_refs(),
            val in any_text(),
            post in text_without_refs(),
            policy in policy(),
        ) {
            // A trailing backslash would turn the reference into an escape.
            let pre = pre.trim_end_matches('\\');
            let scope = scope_with(&Value::String(val.clone()));
            let input = Value::String(format!("{pre}${{v}}{post}"));
            prop_assert_eq!(
                resolve(&input, &scope, policy),
                Ok(Value::String(format!("{pre}{val}{post}")))
            );
        }

        #[test]
        fn escaping_yields_literal_text(s in any_text()) {
            let escaped = Value::String(escape(&s));
            prop_assert_eq!(
                resolve(&escaped, &TestScope::default(), UnknownPolicy::Reject),
                Ok(Value::String(s))
            );
        }

        #[test]
        fn pass_through_with_empty_scope_is_identity_or_step_error(s in any_text()) {
            let v = Value::String(s);
            match resolve(&v, &TestScope::default(), UnknownPolicy::PassThrough) {
                Ok(out) => prop_assert_eq!(out, v),
                Err(e) => prop_assert!(matches!(e, VarError::UnknownStep { .. }), "{}", e),
            }
        }

        #[test]
        fn resolve_within_agrees_with_resolve_and_counts_exactly(
            input in json_value(),
            v in json_value(),
            policy in policy(),
        ) {
            check_budgeted(&input, &scope_with(&v), policy)?;
        }

        #[test]
        fn resolve_within_counts_substituted_values_exactly(
            pieces in prop::collection::vec(
                prop_oneof![
                    Just("${v}"), Just("${STEP_2}"), Just("<${v}>"), Just("${s}${n}${v}"),
                    Just("${v} \"${v}\""), Just("lit\n"), Just(r"\${v}"),
                ],
                0..6,
            ),
            v in json_value(),
            policy in policy(),
        ) {
            let items: Vec<Value> = pieces.iter().map(|p| json!({"k": [*p]})).collect();
            check_budgeted(&Value::Array(items), &scope_with(&v), policy)?;
        }

        #[test]
        fn valid_names_round_trip(name in "[A-Za-z_][A-Za-z0-9_]{0,8}") {
            let r = parse_template(&format!("${{{name}}}"), UnknownPolicy::Reject);
            let target = r.ok().and_then(|t| t.whole_ref().map(|r| r.target.clone()));
            if is_valid_name(&name) {
                prop_assert_eq!(target, Some(Target::Name(name)));
            } else {
                prop_assert!(matches!(target, Some(Target::Step(_))));
            }
        }

        #[test]
        fn collect_refs_agrees_with_parse(s in any_text(), policy in policy()) {
            let from_parse = parse_template(&s, policy).map(|t| t.refs().cloned().collect::<Vec<_>>());
            let from_collect = collect_refs(&Value::String(s), policy)
                .map(|v| v.into_iter().map(|(_, r)| r).collect::<Vec<_>>())
                .map_err(|(_, e)| e);
            prop_assert_eq!(from_parse, from_collect);
        }
    }
}
