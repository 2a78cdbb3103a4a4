//! The String library (robot/libraries/String.py). Text arguments may also be bytes;
//! those keywords work on bytes as Latin-1 text and give bytes back, as RF does.

use super::Run;
use super::normalizer::Normalizer;
use crate::args::Bound;
use crate::engine::{Level, Session};
use crate::error::{RfError, RfResult};
use crate::matching::glob_match;
use crate::pyfmt;
use crate::pystr;
use crate::regexp::{self, Flags};
use crate::value::{Value, latin1, plural};

/// The implementation of String keyword `name`.
pub(super) fn lookup(name: &str) -> Option<Run> {
    Some(match name {
        "Convert To Lower Case" => |_, b| map_text(&b.get("string"), |t| t.to_lowercase()),
        "Convert To Upper Case" => |_, b| map_text(&b.get("string"), |t| t.to_uppercase()),
        "Convert To Title Case" => |_, b| {
            let string = b.get("string");
            let exclude = exclude_patterns(&string, &b.get("exclude"))?;
            map_text_result(&string, |t| Ok(title_case(t, &exclude)))
        },
        "Encode String To Bytes" => {
            |_, b| encode(&b.text("string"), &b.text("encoding"), &b.text("errors"))
        }
        "Decode Bytes To String" => |_, b| {
            let bytes = match b.get("bytes") {
                Value::Bytes(x) => x,
                other => other
                    .to_str()
                    .chars()
                    .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                    .collect(),
            };
            decode(&bytes, &b.text("encoding"), &b.text("errors"))
        },
        "Format String" => |_, b| {
            let template = b.get("template");
            let text = text_of(&template);
            let out = pyfmt::format(&text, &b.varargs, &b.kwargs)
                .map_err(|(class, m)| RfError::py(class, m))?;
            Ok(like(&template, out))
        },
        "Get Line Count" => |s, b| {
            let count = pystr::splitlines(&text_of(&b.get("string")), false).len();
            s.info(format!("{count} lines."));
            Ok(Value::Int(count as i64))
        },
        "Split To Lines" => |s, b| {
            let string = b.get("string");
            let start = empty_to(s, b, "start", Value::Int(0));
            let end = empty_to(s, b, "end", Value::Int(0));
            let end = if b.given("end") { end } else { Value::None };
            let lines: Vec<Value> = pystr::splitlines(&text_of(&string), false)
                .into_iter()
                .map(|l| like(&string, l))
                .collect();
            let picked = slice_values(&lines, &start, &end)?;
            s.info(format!(
                "{} line{} returned.",
                picked.len(),
                plural(picked.len())
            ));
            Ok(Value::list(picked))
        },
        "Get Line" => |_, b| {
            let string = b.get("string");
            let lines = pystr::splitlines(&text_of(&string), false);
            let n = b.int("line_number").unwrap_or(0);
            let len = lines.len() as i64;
            let i = if n < 0 { n + len } else { n };
            usize::try_from(i)
                .ok()
                .and_then(|i| lines.get(i).cloned())
                .map(|l| like(&string, l))
                .ok_or_else(|| RfError::py("IndexError", "list index out of range"))
        },
        "Get Lines Containing String" => |s, b| {
            let n = Normalizer::case(&Value::Bool(case_flag(b)));
            let pattern = arg_text(&b.get("string"), &b.get("pattern"))?;
            let pattern = n.normalize(&Value::Str(pattern), false)?.to_str();
            matching_lines(s, &b.get("string"), |line| {
                Ok(n.normalize(&Value::str(line), false)?
                    .to_str()
                    .contains(&pattern))
            })
        },
        "Get Lines Matching Pattern" => |s, b| {
            let n = Normalizer::case(&Value::Bool(case_flag(b)));
            let pattern = arg_text(&b.get("string"), &b.get("pattern"))?;
            let pattern = n.normalize(&Value::Str(pattern), false)?.to_str();
            matching_lines(s, &b.get("string"), |line| {
                let line = n.normalize(&Value::str(line), false)?.to_str();
                Ok(glob_match(&line, &pattern, false, false))
            })
        },
        "Get Lines Matching Regexp" => |s, b| {
            let pattern = arg_text(&b.get("string"), &b.get("pattern"))?;
            // A full match may need another alternative than the leftmost-first match,
            // so the pattern is anchored rather than checking one match's span.
            let pattern = if b.flag("partial_match") {
                pattern
            } else {
                format!("^(?:{pattern})$")
            };
            let re = compile(&pattern, b.opt("flags"))?;
            matching_lines(s, &b.get("string"), |line| Ok(re.is_match(line)))
        },
        "Get Regexp Matches" => get_regexp_matches,
        "Replace String" => |_, b| {
            let string = b.get("string");
            let count = b.int("count").unwrap_or(-1);
            let out = pystr::replace(
                &text_of(&string),
                &arg_text(&string, &b.get("search_for"))?,
                &arg_text(&string, &b.get("replace_with"))?,
                count,
            );
            Ok(like(&string, out))
        },
        "Replace String Using Regexp" => |_, b| {
            let string = b.get("string");
            let count = b.int("count").unwrap_or(-1);
            if count == 0 {
                return Ok(string);
            }
            let pattern = arg_text(&string, &b.get("pattern"))?;
            let replace_with = arg_text(&string, &b.get("replace_with"))?;
            let out = regex_sub(
                &text_of(&string),
                &pattern,
                &replace_with,
                count.max(0),
                b.opt("flags"),
            )?;
            Ok(like(&string, out))
        },
        "Remove String" => |_, b| {
            let string = b.get("string");
            let mut text = text_of(&string);
            for r in &b.varargs {
                text = pystr::replace(&text, &text_of(r), "", -1);
            }
            Ok(like(&string, text))
        },
        "Remove String Using Regexp" => |_, b| {
            let string = b.get("string");
            let mut text = text_of(&string);
            for p in &b.varargs {
                text = regex_sub(&text, &text_of(p), "", 0, b.opt("flags"))?;
            }
            Ok(like(&string, text))
        },
        "Split String" => |s, b| split(s, b, false),
        "Split String From Right" => |s, b| split(s, b, true),
        "Split String To Characters" => |_, b| {
            let string = b.get("string");
            Ok(Value::list(match &string {
                Value::Bytes(x) => x.iter().map(|c| Value::Bytes(vec![*c])).collect(),
                other => other
                    .to_str()
                    .chars()
                    .map(|c| Value::Str(c.to_string()))
                    .collect(),
            }))
        },
        "Fetch From Left" => |_, b| fetch(b, true),
        "Fetch From Right" => |_, b| fetch(b, false),
        "Generate Random String" => generate_random_string,
        "Get Substring" => |s, b| {
            let string = b.get("string");
            let start = empty_to(s, b, "start", Value::Int(0));
            let end = empty_to(s, b, "end", Value::Int(0));
            let end = if b.given("end") { end } else { Value::None };
            let chars: Vec<Value> = match &string {
                Value::Bytes(x) => x.iter().map(|c| Value::Bytes(vec![*c])).collect(),
                other => other
                    .to_str()
                    .chars()
                    .map(|c| Value::Str(c.to_string()))
                    .collect(),
            };
            let picked = slice_values(&chars, &start, &end)?;
            Ok(match string {
                Value::Bytes(_) => Value::Bytes(
                    picked
                        .iter()
                        .flat_map(|v| match v {
                            Value::Bytes(x) => x.clone(),
                            _ => Vec::new(),
                        })
                        .collect(),
                ),
                _ => Value::Str(picked.iter().map(Value::to_str).collect()),
            })
        },
        "Strip String" => |_, b| {
            let string = b.get("string");
            let chars = b
                .opt("characters")
                .map(|c| arg_text(&string, &c))
                .transpose()?;
            let mode = b.text("mode").to_lowercase();
            let text = text_of(&string);
            let out = match mode.as_str() {
                "left" => pystr::strip(&text, chars.as_deref(), true, false),
                "right" => pystr::strip(&text, chars.as_deref(), false, true),
                "none" => text,
                _ => pystr::strip(&text, chars.as_deref(), true, true),
            };
            Ok(like(&string, out))
        },
        "Should Be String" | "Should Be Unicode String" => |_, b| {
            let item = b.get("item");
            if !matches!(item, Value::Str(_)) {
                return Err(RfError::fail(b.msg().unwrap_or_else(|| {
                    format!("{} is {}, not a string.", item.repr(), item.type_name())
                })));
            }
            Ok(Value::None)
        },
        "Should Not Be String" => |_, b| {
            let item = b.get("item");
            if matches!(item, Value::Str(_)) {
                return Err(RfError::fail(
                    b.msg()
                        .unwrap_or_else(|| format!("{} is a string.", item.repr())),
                ));
            }
            Ok(Value::None)
        },
        "Should Be Byte String" => |_, b| {
            let item = b.get("item");
            if !matches!(item, Value::Bytes(_)) {
                return Err(RfError::fail(b.msg().unwrap_or_else(|| {
                    format!("{} is not a byte string.", item.repr())
                })));
            }
            Ok(Value::None)
        },
        "Should Be Lower Case" => |_, b| case_check(b, "lower case", pystr::is_lower),
        "Should Be Upper Case" => |_, b| case_check(b, "upper case", pystr::is_upper),
        "Should Be Title Case" => |_, b| {
            let string = b.get("string");
            let exclude = exclude_patterns(&string, &b.get("exclude"))?;
            let text = text_of(&string);
            if title_case(&text, &exclude) != text {
                return Err(RfError::fail(b.msg().unwrap_or_else(|| {
                    format!("{} is not title case.", string.repr())
                })));
            }
            Ok(Value::None)
        },
        _ => return None,
    })
}

/// Text of a `str | bytes` argument (bytes as Latin-1).
fn text_of(v: &Value) -> String {
    match v {
        Value::Bytes(b) => latin1(b),
        other => other.to_str(),
    }
}

/// A text argument (pattern, separator, replacement) used on `subject`. On bytes RF
/// converts such arguments to bytes as Latin-1 and refuses text that does not fit.
fn arg_text(subject: &Value, arg: &Value) -> RfResult<String> {
    let text = text_of(arg);
    if matches!(subject, Value::Bytes(_)) && matches!(arg, Value::Str(_)) {
        fits_latin1(&text)?;
    }
    Ok(text)
}

/// RF's `_ensure_bytes` check: every code point below 256.
fn fits_latin1(text: &str) -> RfResult<()> {
    match text.chars().find(|&c| u32::from(c) > 255) {
        Some(c) => Err(RfError::value(format!(
            "String '{text}' cannot be converted to bytes: Characters must have code point \
             below 256, but '{c}' has code point {}.",
            u32::from(c)
        ))),
        None => Ok(()),
    }
}

/// `text` as the same kind as `original`: bytes in, bytes out.
fn like(original: &Value, text: String) -> Value {
    match original {
        Value::Bytes(_) => Value::Bytes(
            text.chars()
                .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                .collect(),
        ),
        _ => Value::Str(text),
    }
}

fn map_text(v: &Value, f: impl Fn(&str) -> String) -> RfResult<Value> {
    match v {
        // Python's bytes.lower()/upper() change ASCII letters only.
        Value::Bytes(b) => {
            let upper = f("a") == "A";
            Ok(Value::Bytes(
                b.iter()
                    .map(|c| {
                        if upper {
                            c.to_ascii_uppercase()
                        } else {
                            c.to_ascii_lowercase()
                        }
                    })
                    .collect(),
            ))
        }
        other => Ok(Value::Str(f(&other.to_str()))),
    }
}

fn map_text_result(v: &Value, f: impl Fn(&str) -> RfResult<String>) -> RfResult<Value> {
    Ok(like(v, f(&text_of(v))?))
}

fn compile(pattern: &str, flags: Option<Value>) -> RfResult<regex::Regex> {
    let flags = Flags::parse(flags.map(|f| f.to_str()).as_deref()).map_err(RfError::value)?;
    regexp::compile(pattern, flags).map_err(RfError::fail)
}

fn regex_sub(
    text: &str,
    pattern: &str,
    repl: &str,
    count: i64,
    flags: Option<Value>,
) -> RfResult<String> {
    let re = compile(pattern, flags)?;
    let repl = regexp::replacement(repl).map_err(RfError::fail)?;
    let limit = usize::try_from(count).unwrap_or(0);
    Ok(re.replacen(text, limit, repl.as_str()).into_owned())
}

/// RF's deprecated empty-string arguments: warn and use `instead`.
fn empty_to(s: &mut Session, b: &Bound, name: &str, instead: Value) -> Value {
    let v = b.get(name);
    if matches!(&v, Value::Str(t) if t.is_empty()) {
        s.log(
            Level::Warn,
            format!(
                "Using an empty string as a value with argument '{name}' is deprecated. Use '{}' instead.",
                instead.to_str()
            ),
        );
        return instead;
    }
    v
}

fn slice_values(items: &[Value], start: &Value, end: &Value) -> RfResult<Vec<Value>> {
    let bound = |v: &Value| match v {
        Value::None => Ok(None),
        Value::Int(i) => Ok(Some(*i)),
        Value::Bool(b) => Ok(Some(i64::from(*b))),
        _ => Err(RfError::py(
            "TypeError",
            "slice indices must be integers or None or have an __index__ method",
        )),
    };
    let picks = crate::pynum::slice_indices(items.len(), bound(start)?, bound(end)?, None)
        .map_err(RfError::value)?;
    Ok(picks.into_iter().map(|i| items[i].clone()).collect())
}

fn case_flag(b: &Bound) -> bool {
    match b.opt("case_insensitive") {
        Some(v) => v.truthy(),
        None => b.flag("ignore_case"),
    }
}

fn matching_lines(
    s: &mut Session,
    string: &Value,
    matches: impl Fn(&str) -> RfResult<bool>,
) -> RfResult<Value> {
    let lines = pystr::splitlines(&text_of(string), false);
    let mut hits = Vec::new();
    for line in &lines {
        if matches(line)? {
            hits.push(line.clone());
        }
    }
    s.info(format!(
        "{} out of {} lines matched.",
        hits.len(),
        lines.len()
    ));
    Ok(like(string, hits.join("\n")))
}

fn get_regexp_matches(_s: &mut Session, b: &Bound) -> RfResult<Value> {
    let string = b.get("string");
    let text = text_of(&string);
    let re = compile(&arg_text(&string, &b.get("pattern"))?, b.opt("flags"))?;
    let groups: Vec<Value> = b
        .varargs
        .iter()
        .map(|g| match g {
            Value::Str(t) => crate::pynum::parse_int(t, 10)
                .map(Value::Int)
                .unwrap_or_else(|_| g.clone()),
            other => other.clone(),
        })
        .collect();
    let mut out = Vec::new();
    for caps in re.captures_iter(&text) {
        let group = |g: &Value| -> RfResult<Value> {
            let m = match g {
                Value::Int(i) => usize::try_from(*i).ok().and_then(|i| {
                    if i < caps.len() {
                        Some(caps.get(i))
                    } else {
                        None
                    }
                }),
                other => {
                    let name = other.to_str();
                    re.capture_names()
                        .flatten()
                        .any(|n| n == name)
                        .then(|| caps.name(&name))
                }
            };
            match m {
                Some(Some(m)) => Ok(like(&string, m.as_str().to_string())),
                Some(None) => Ok(Value::None),
                None => Err(RfError::py("IndexError", "no such group")),
            }
        };
        out.push(match groups.as_slice() {
            [] => like(&string, caps.get(0).map_or("", |m| m.as_str()).to_string()),
            [one] => group(one)?,
            many => Value::tuple(many.iter().map(group).collect::<RfResult<_>>()?),
        });
    }
    Ok(Value::list(out))
}

fn split(s: &mut Session, b: &Bound, right: bool) -> RfResult<Value> {
    let string = b.get("string");
    let separator = empty_to(s, b, "separator", Value::None);
    let sep = match &separator {
        Value::None => None,
        other => Some(arg_text(&string, other)?),
    };
    let max = b.int("max_split").unwrap_or(-1);
    let text = text_of(&string);
    let parts = if right {
        pystr::rsplit(&text, sep.as_deref(), max)
    } else {
        pystr::split(&text, sep.as_deref(), max)
    }
    .map_err(RfError::value)?;
    Ok(Value::list(
        parts.into_iter().map(|p| like(&string, p)).collect(),
    ))
}

fn fetch(b: &Bound, left: bool) -> RfResult<Value> {
    let string = b.get("string");
    let marker = arg_text(&string, &b.get("marker"))?;
    let parts = pystr::split(&text_of(&string), Some(&marker), -1).map_err(RfError::value)?;
    let part = if left { parts.first() } else { parts.last() };
    Ok(like(&string, part.cloned().unwrap_or_default()))
}

fn generate_random_string(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let length = empty_to(s, b, "length", Value::Int(8));
    let to_int = |v: &Value| -> RfResult<i64> {
        match v {
            Value::Int(i) => Ok(*i),
            Value::Bool(b) => Ok(i64::from(*b)),
            other => crate::pynum::parse_int(&other.to_str(), 10).map_err(|_| {
                RfError::value(format!(
                    "Cannot convert 'length' argument {} to an integer.",
                    other.repr()
                ))
            }),
        }
    };
    let length = match &length {
        Value::Str(t)
            if t.split_once('-').is_some_and(|(a, c)| {
                !a.is_empty()
                    && !c.is_empty()
                    && a.bytes().all(|x| x.is_ascii_digit())
                    && c.bytes().all(|x| x.is_ascii_digit())
            }) =>
        {
            let (lo, hi) = t.split_once('-').unwrap_or(("0", "0"));
            let (lo, hi) = (to_int(&Value::str(lo))?, to_int(&Value::str(hi))?);
            if hi < lo {
                return Err(RfError::value(format!(
                    "empty range for randrange() ({lo}, {}, {})",
                    hi + 1,
                    hi + 1 - lo
                )));
            }
            lo + s.random_below(usize::try_from(hi - lo + 1).unwrap_or(1)) as i64
        }
        other => to_int(other)?,
    };
    let mut chars = b.text("chars");
    let arabic: String = (1536u32..1792).filter_map(char::from_u32).collect();
    let lower = "abcdefghijklmnopqrstuvwxyz";
    let upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    for (marker, value) in [
        ("[LOWER]", lower.to_string()),
        ("[UPPER]", upper.to_string()),
        ("[LETTERS]", format!("{lower}{upper}")),
        ("[NUMBERS]", "0123456789".to_string()),
        ("[ARABIC]", arabic),
        ("[POLISH]", format!("{lower}{upper}ąćęłńóśźżĄĆĘŁŃÓŚŹŻ")),
    ] {
        chars = chars.replace(marker, &value);
    }
    let pool: Vec<char> = chars.chars().collect();
    if pool.is_empty() && length > 0 {
        return Err(RfError::value("empty range for randrange() (0, 0, 0)"));
    }
    let n = usize::try_from(length).unwrap_or(0).min(10_000_000);
    let out: String = (0..n).map(|_| pool[s.random_below(pool.len())]).collect();
    Ok(Value::Str(out))
}

fn case_check(b: &Bound, what: &str, test: fn(&str) -> bool) -> RfResult<Value> {
    let string = b.get("string");
    if !test(&text_of(&string)) {
        return Err(RfError::fail(
            b.msg()
                .unwrap_or_else(|| format!("{} is not {what}.", string.repr())),
        ));
    }
    Ok(Value::None)
}

fn exclude_patterns(string: &Value, exclude: &Value) -> RfResult<Vec<regex::Regex>> {
    let patterns: Vec<String> = match exclude {
        Value::None => Vec::new(),
        Value::Str(s) if s.is_empty() => Vec::new(),
        Value::Str(s) => s.split(',').map(|p| p.trim().to_string()).collect(),
        Value::Bytes(b) => latin1(b).split(',').map(|p| p.trim().to_string()).collect(),
        other => other
            .list_items()
            .unwrap_or_default()
            .iter()
            .map(text_of)
            .collect(),
    };
    if matches!(string, Value::Bytes(_)) {
        for p in &patterns {
            fits_latin1(p)?;
        }
    }
    patterns
        .iter()
        .map(|p| {
            regexp::compile_full(p, Flags::default()).map_err(|e| {
                RfError::value(format!(
                    "Compiling exclude pattern '{p}' to a regular expression failed: {}",
                    e.trim_start_matches("error: ")
                ))
            })
        })
        .collect()
}

/// RF's `Convert To Title Case`: the first letter of each lower-case word upper-cased,
/// words matching an exclude pattern left alone, whitespace kept as it is.
fn title_case(text: &str, exclude: &[regex::Regex]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if !word.is_empty() {
            if pystr::is_lower(word) && !exclude.iter().any(|e| e.is_match(word)) {
                let mut done = false;
                for c in word.chars() {
                    if !done && c.is_alphabetic() {
                        out.extend(c.to_uppercase());
                        done = true;
                    } else {
                        out.push(c);
                    }
                }
            } else {
                out.push_str(word);
            }
            word.clear();
        }
    };
    for c in text.chars() {
        if pystr::is_space(c) {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn encode(text: &str, encoding: &str, errors: &str) -> RfResult<Value> {
    let enc = encoding.to_lowercase().replace('_', "-");
    let limit = match enc.as_str() {
        "utf-8" | "utf8" => return Ok(Value::Bytes(text.as_bytes().to_vec())),
        "latin-1" | "latin1" | "iso-8859-1" => 0x100,
        "ascii" | "us-ascii" => 0x80,
        _ => {
            return Err(RfError::py(
                "LookupError",
                format!("unknown encoding: {encoding}"),
            ));
        }
    };
    let mut out = Vec::new();
    for (i, c) in text.chars().enumerate() {
        let n = u32::from(c);
        if n < limit {
            out.push(n as u8);
        } else {
            match errors {
                "ignore" => {}
                "replace" => out.push(b'?'),
                _ => {
                    // Python shows the character escaped: \xe4, \u20ac, \U0001f600.
                    let shown = if n < 0x100 {
                        format!("\\x{n:02x}")
                    } else if n < 0x10000 {
                        format!("\\u{n:04x}")
                    } else {
                        format!("\\U{n:08x}")
                    };
                    return Err(RfError::py(
                        "UnicodeEncodeError",
                        format!(
                            "'{}' codec can't encode character '{shown}' in position {i}: ordinal not in range({limit})",
                            if limit == 0x80 { "ascii" } else { "latin-1" }
                        ),
                    ));
                }
            }
        }
    }
    Ok(Value::Bytes(out))
}

fn decode(bytes: &[u8], encoding: &str, errors: &str) -> RfResult<Value> {
    let enc = encoding.to_lowercase().replace('_', "-");
    match enc.as_str() {
        "utf-8" | "utf8" => match std::str::from_utf8(bytes) {
            Ok(t) => Ok(Value::str(t)),
            Err(e) => match errors {
                "ignore" => Ok(Value::Str(
                    String::from_utf8_lossy(bytes).replace('\u{fffd}', ""),
                )),
                "replace" => Ok(Value::Str(String::from_utf8_lossy(bytes).into_owned())),
                _ => Err(RfError::py(
                    "UnicodeDecodeError",
                    format!(
                        "'utf-8' codec can't decode byte 0x{:02x} in position {}: invalid start byte",
                        bytes[e.valid_up_to()],
                        e.valid_up_to()
                    ),
                )),
            },
        },
        "latin-1" | "latin1" | "iso-8859-1" => Ok(Value::Str(latin1(bytes))),
        "ascii" | "us-ascii" => {
            let mut out = String::new();
            for (i, b) in bytes.iter().enumerate() {
                if *b < 0x80 {
                    out.push(char::from(*b));
                } else {
                    match errors {
                        "ignore" => {}
                        "replace" => out.push('\u{fffd}'),
                        _ => {
                            return Err(RfError::py(
                                "UnicodeDecodeError",
                                format!(
                                    "'ascii' codec can't decode byte 0x{b:02x} in position {i}: ordinal not in range(128)"
                                ),
                            ));
                        }
                    }
                }
            }
            Ok(Value::Str(out))
        }
        _ => Err(RfError::py(
            "LookupError",
            format!("unknown encoding: {encoding}"),
        )),
    }
}
