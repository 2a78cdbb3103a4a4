//! The browser's own input readers, on top of the SDK's [`Args`] (which reads the
//! generic types and names the field in every complaint): tab ids and viewport
//! points, whose messages say where the values come from.

pub(crate) use stephost_plugin::Args;

use serde_json::Value;

use crate::error::{Result, invalid};
use crate::page::Target;

/// Readers for the fields several browser verbs share.
pub(crate) trait BrowserArgs {
    /// `tabId`: the tab a page-acting verb acts on.
    fn tab(&self) -> Result<u32>;
    /// An optional `[x, y]` point, rounded to whole CSS pixels.
    fn point(&self, field: &str) -> Result<Option<(i64, i64)>>;
    /// The element named by a ref (`ref_field`) or a description
    /// (`find_field`), if either is given; both at once is a mistake.
    fn target<'a>(&'a self, ref_field: &str, find_field: &str) -> Result<Option<Target<'a>>>;
}

impl BrowserArgs for Args {
    fn tab(&self) -> Result<u32> {
        let value = self.get("tabId").ok_or_else(|| {
            invalid(
                "tabId",
                "`tabId` is required: say which tab (tabs_context lists them, tabs_create opens one)",
            )
        })?;
        value
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                invalid(
                    "tabId",
                    format!("`tabId` must be a tab id (a whole number from 1), got {value}"),
                )
            })
    }

    fn target<'a>(&'a self, ref_field: &str, find_field: &str) -> Result<Option<Target<'a>>> {
        match (self.opt_str(ref_field)?, self.opt_str(find_field)?) {
            (Some(_), Some(_)) => Err(invalid(
                find_field,
                format!("give `{ref_field}` or `{find_field}`, not both"),
            )),
            (Some(r), None) => Ok(Some(Target::Ref(r))),
            (None, Some(q)) if q.trim().is_empty() => Err(invalid(
                find_field,
                format!("`{find_field}` describes the element (\"Save button\"); it is empty"),
            )),
            (None, Some(q)) => Ok(Some(Target::Find(q))),
            (None, None) => Ok(None),
        }
    }

    fn point(&self, field: &str) -> Result<Option<(i64, i64)>> {
        let Some(value) = self.get(field) else {
            return Ok(None);
        };
        let bad = || {
            invalid(
                field,
                format!("`{field}` must be [x, y] in CSS pixels of the viewport, got {value}"),
            )
        };
        let items = value.as_array().filter(|a| a.len() == 2).ok_or_else(bad)?;
        let coordinate = |v: &Value| v.as_f64().filter(|v| v.is_finite() && *v >= 0.0);
        let x = coordinate(&items[0]).ok_or_else(bad)?;
        let y = coordinate(&items[1]).ok_or_else(bad)?;
        if x > 100_000.0 || y > 100_000.0 {
            return Err(bad());
        }
        Ok(Some((x.round() as i64, y.round() as i64)))
    }
}
