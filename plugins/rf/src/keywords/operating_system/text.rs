//! Text encodings for the file keywords: UTF-8, ASCII and Latin-1, with Python's codec
//! names, error handlers and error messages. Other codecs fail clearly: the sandbox
//! carries no codec tables.

use crate::error::{RfError, RfResult};

/// A supported codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Utf8,
    Ascii,
    Latin1,
}

impl Encoding {
    /// Python's codec lookup for the names it knows these codecs by; `SYSTEM` and
    /// `CONSOLE` are UTF-8, the sandbox's locale.
    pub(crate) fn parse(name: &str) -> RfResult<Encoding> {
        let norm = name.trim().to_lowercase().replace(['-', ' '], "_");
        Ok(match norm.as_str() {
            "system" | "console" | "locale" | "utf_8" | "utf8" | "u8" | "utf" | "cp65001" => {
                Encoding::Utf8
            }
            "ascii" | "us_ascii" | "646" | "us" => Encoding::Ascii,
            "latin_1" | "latin1" | "latin" | "l1" | "iso_8859_1" | "iso8859_1" | "8859"
            | "cp819" | "iso_ir_100" => Encoding::Latin1,
            _ => {
                return Err(RfError::fail(format!(
                    "Encoding '{name}' is not available in the rf sandbox: it reads and writes UTF-8, ASCII and Latin-1 (ISO-8859-1)."
                )));
            }
        })
    }

    fn python_name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Ascii => "ascii",
            Encoding::Latin1 => "latin-1",
        }
    }
}

/// A decoding error handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Errors {
    Strict,
    Ignore,
    Replace,
    BackslashReplace,
}

impl Errors {
    pub(crate) fn parse(name: &str) -> RfResult<Errors> {
        Ok(match name {
            "strict" => Errors::Strict,
            "ignore" => Errors::Ignore,
            "replace" => Errors::Replace,
            "backslashreplace" => Errors::BackslashReplace,
            other => {
                return Err(RfError::py(
                    "LookupError",
                    format!("unknown error handler name '{other}'"),
                ));
            }
        })
    }
}

/// Decodes `bytes`, which start at byte `offset` of the file (for error positions).
pub(crate) fn decode(
    bytes: &[u8],
    encoding: Encoding,
    errors: Errors,
    offset: usize,
) -> RfResult<String> {
    match encoding {
        Encoding::Latin1 => Ok(bytes.iter().map(|&b| char::from(b)).collect()),
        Encoding::Ascii => {
            let mut out = String::with_capacity(bytes.len());
            for (i, &b) in bytes.iter().enumerate() {
                if b < 128 {
                    out.push(char::from(b));
                } else {
                    bad_byte(&mut out, b, errors, || {
                        decode_error(encoding, &[b], offset + i, "ordinal not in range(128)")
                    })?;
                }
            }
            Ok(out)
        }
        Encoding::Utf8 => {
            let mut out = String::with_capacity(bytes.len());
            let mut rest = bytes;
            let mut at = offset;
            loop {
                match std::str::from_utf8(rest) {
                    Ok(text) => {
                        out.push_str(text);
                        return Ok(out);
                    }
                    Err(e) => {
                        let good = e.valid_up_to();
                        // Safe by construction: from_utf8 vouched for these bytes.
                        out.push_str(std::str::from_utf8(&rest[..good]).unwrap_or_default());
                        let bad_len = e.error_len().unwrap_or(rest.len() - good);
                        let bad = &rest[good..good + bad_len];
                        let reason = match e.error_len() {
                            None => "unexpected end of data",
                            Some(_) if is_utf8_start(bad[0]) => "invalid continuation byte",
                            Some(_) => "invalid start byte",
                        };
                        match errors {
                            Errors::Strict => {
                                return Err(decode_error(encoding, bad, at + good, reason));
                            }
                            Errors::Ignore => {}
                            Errors::Replace => out.push('\u{fffd}'),
                            Errors::BackslashReplace => {
                                for b in bad {
                                    out.push_str(&format!("\\x{b:02x}"));
                                }
                            }
                        }
                        rest = &rest[good + bad_len..];
                        at += good + bad_len;
                    }
                }
            }
        }
    }
}

fn is_utf8_start(b: u8) -> bool {
    (0xc2..=0xf4).contains(&b)
}

fn bad_byte(
    out: &mut String,
    b: u8,
    errors: Errors,
    strict: impl FnOnce() -> RfError,
) -> RfResult<()> {
    match errors {
        Errors::Strict => return Err(strict()),
        Errors::Ignore => {}
        Errors::Replace => out.push('\u{fffd}'),
        Errors::BackslashReplace => out.push_str(&format!("\\x{b:02x}")),
    }
    Ok(())
}

/// Python's `UnicodeDecodeError` text.
fn decode_error(encoding: Encoding, bad: &[u8], position: usize, reason: &str) -> RfError {
    let name = encoding.python_name();
    let text = if bad.len() == 1 {
        format!(
            "'{name}' codec can't decode byte 0x{:02x} in position {position}: {reason}",
            bad[0]
        )
    } else {
        format!(
            "'{name}' codec can't decode bytes in position {position}-{}: {reason}",
            position + bad.len() - 1
        )
    };
    RfError::py("UnicodeDecodeError", text)
}

/// Encodes `text` strictly, as Python's `open(..., "w")` does.
pub(crate) fn encode(text: &str, encoding: Encoding) -> RfResult<Vec<u8>> {
    let limit: u32 = match encoding {
        Encoding::Utf8 => return Ok(text.as_bytes().to_vec()),
        Encoding::Ascii => 128,
        Encoding::Latin1 => 256,
    };
    let chars: Vec<char> = text.chars().collect();
    if let Some(start) = chars.iter().position(|&c| u32::from(c) >= limit) {
        let end = chars[start..]
            .iter()
            .position(|&c| u32::from(c) < limit)
            .map_or(chars.len(), |n| start + n);
        let name = encoding.python_name();
        let what = if end - start == 1 {
            format!(
                "can't encode character '{}' in position {start}",
                python_escape(chars[start])
            )
        } else {
            format!("can't encode characters in position {start}-{}", end - 1)
        };
        return Err(RfError::py(
            "UnicodeEncodeError",
            format!("'{name}' codec {what}: ordinal not in range({limit})"),
        ));
    }
    Ok(chars.iter().map(|&c| u32::from(c) as u8).collect())
}

/// How Python's codec errors show a character: `\xe4`, `\u20ac`, `\U0001f600`.
fn python_escape(c: char) -> String {
    let n = u32::from(c);
    if n < 0x100 {
        format!("\\x{n:02x}")
    } else if n < 0x10000 {
        format!("\\u{n:04x}")
    } else {
        format!("\\U{n:08x}")
    }
}
