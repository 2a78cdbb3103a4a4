//! RF's `Normalizer` (robot/libraries/normalizer.py): what `ignore_case`, `strip_spaces`,
//! `collapse_spaces`, `ignore_order` and `ignore_keys` do to compared values.

use crate::error::{RfError, RfResult};
use crate::pystr;
use crate::value::{Value, py_sort};

/// The normalization options of one comparison.
#[derive(Debug, Clone, Default)]
pub(crate) struct Normalizer {
    key_case: bool,
    value_case: bool,
    strip_leading: bool,
    strip_trailing: bool,
    collapse: bool,
    ignore_order: bool,
    ignore_keys: Vec<Value>,
    /// Which case flag applies right now (keys or values).
    case: bool,
}

impl Normalizer {
    /// From keyword arguments as RF converted them: `ignore_case` may be a bool or
    /// `KEY(S)`/`VALUE(S)`, `strip_spaces` a bool or `LEADING`/`TRAILING`.
    pub(crate) fn new(ignore_case: &Value, strip_spaces: &Value, collapse: bool) -> Self {
        let (key_case, value_case) = match ignore_case {
            Value::Str(s) => {
                let up = s.to_uppercase();
                (
                    !matches!(up.as_str(), "VALUE" | "VALUES"),
                    !matches!(up.as_str(), "KEY" | "KEYS"),
                )
            }
            other => (other.truthy(), other.truthy()),
        };
        let (strip_leading, strip_trailing) = match strip_spaces {
            Value::Str(s) => {
                let up = s.to_uppercase();
                (up != "TRAILING", up != "LEADING")
            }
            other => (other.truthy(), other.truthy()),
        };
        Self {
            key_case,
            value_case,
            strip_leading,
            strip_trailing,
            collapse,
            case: ignore_case.truthy(),
            ..Self::default()
        }
    }

    /// Only case.
    pub(crate) fn case(ignore_case: &Value) -> Self {
        Self::new(ignore_case, &Value::Bool(false), false)
    }

    /// Adds `ignore_order`.
    pub(crate) fn with_order(mut self, ignore_order: bool) -> Self {
        self.ignore_order = ignore_order;
        self
    }

    /// Adds `ignore_keys`.
    pub(crate) fn with_ignored_keys(mut self, keys: Vec<Value>) -> RfResult<Self> {
        let mut normalized = Vec::new();
        for k in keys {
            normalized.push(self.key(&k)?);
        }
        self.ignore_keys = normalized;
        Ok(self)
    }

    /// Whether any option is on (RF's `bool(normalizer)`).
    pub(crate) fn active(&self) -> bool {
        self.case
            || self.strip_leading
            || self.strip_trailing
            || self.collapse
            || self.ignore_order
            || !self.ignore_keys.is_empty()
    }

    fn string(&self, s: &str) -> String {
        let mut out = if self.case {
            crate::pystr::casefold(s)
        } else {
            s.to_string()
        };
        if self.strip_leading || self.strip_trailing {
            out = pystr::strip(&out, None, self.strip_leading, self.strip_trailing);
        }
        if self.collapse {
            let mut collapsed = String::with_capacity(out.len());
            let mut in_space = false;
            for c in out.chars() {
                if pystr::is_space(c) {
                    if !in_space {
                        collapsed.push(' ');
                    }
                    in_space = true;
                } else {
                    collapsed.push(c);
                    in_space = false;
                }
            }
            out = collapsed;
        }
        out
    }

    /// RF's `normalize(value, mapping_to_list)`.
    pub(crate) fn normalize(&self, value: &Value, mapping_to_list: bool) -> RfResult<Value> {
        if !self.active() {
            return Ok(value.clone());
        }
        Ok(match value {
            Value::Str(s) => Value::Str(self.string(s)),
            Value::Bytes(b) => {
                let text: String = crate::value::latin1(b);
                Value::Bytes(
                    self.string(&text)
                        .chars()
                        .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                        .collect(),
                )
            }
            Value::Dict(d) if mapping_to_list => {
                let keys: Vec<Value> = d.borrow().items.iter().map(|(k, _)| k.clone()).collect();
                self.list(keys, false)?
            }
            Value::Dict(d) => {
                let d = d.borrow();
                let mut out: Vec<(Value, Value)> = Vec::new();
                for (k, v) in &d.items {
                    let nk = self.key(k)?;
                    if self.ignore_keys.iter().any(|i| crate::value::py_eq(i, &nk)) {
                        continue;
                    }
                    if out.iter().any(|(o, _)| crate::value::py_eq(o, &nk)) {
                        return Err(RfError::fail(format!(
                            "Dictionary {} contains multiple keys that are normalized to '{}'. Try normalizing only dictionary values like 'ignore_case=values'.",
                            Value::Dict(std::rc::Rc::new(std::cell::RefCell::new(d.clone())))
                                .to_str(),
                            nk.to_str()
                        )));
                    }
                    out.push((nk, self.value(v)?));
                }
                Value::dict(out, d.dot)
            }
            Value::List(l) => {
                let items = l.borrow().clone();
                self.list(items, false)?
            }
            Value::Tuple(t) => self.list(t.as_ref().clone(), true)?,
            other => other.clone(),
        })
    }

    fn list(&self, items: Vec<Value>, tuple: bool) -> RfResult<Value> {
        let mut out = Vec::with_capacity(items.len());
        for v in &items {
            out.push(self.normalize(v, false)?);
        }
        if self.ignore_order {
            py_sort(&mut out).map_err(|e| RfError::py("TypeError", e))?;
        }
        Ok(if tuple {
            Value::tuple(out)
        } else {
            Value::list(out)
        })
    }

    /// RF's `normalize_key`.
    pub(crate) fn key(&self, key: &Value) -> RfResult<Value> {
        let mut n = self.clone();
        n.case = self.key_case;
        n.normalize(key, false)
    }

    /// RF's `normalize_value`.
    pub(crate) fn value(&self, value: &Value) -> RfResult<Value> {
        let mut n = self.clone();
        n.case = self.value_case;
        n.normalize(value, false)
    }
}
