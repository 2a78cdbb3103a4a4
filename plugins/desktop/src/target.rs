//! Which window a step means: `target` as a title substring, or an object
//! `{title, class, id, exact}`, resolved against the live window list.

use serde_json::{Value, json};

use stephost_plugin::desktop::windows::WindowInfo;
use stephost_plugin::{Failure, FailureCode};

use crate::args::{Args, invalid};

/// A window query.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Query {
    pub(crate) title: Option<String>,
    pub(crate) class: Option<String>,
    pub(crate) id: Option<u64>,
    pub(crate) exact: bool,
}

impl Query {
    /// Reads `target` (string or object), or the flat fields `title`, `class`,
    /// `exact` (and `windowTitle`, the name other desktop tools use). `None`
    /// when the input names no window.
    pub(crate) fn from_args(args: &Args) -> Result<Option<Self>, Failure> {
        let mut query = match args.get("target") {
            None => Query::default(),
            Some(Value::String(s)) => Query {
                title: Some(s.clone()),
                ..Query::default()
            },
            Some(Value::Object(map)) => {
                let sub = Args::from(map.clone());
                for key in map.keys() {
                    if !["title", "class", "id", "exact"].contains(&key.as_str()) {
                        return Err(invalid(
                            "target",
                            format!(
                                "unknown field `target.{key}`; expected title, class, id, exact"
                            ),
                        ));
                    }
                }
                Query {
                    title: sub.opt_str("title")?.map(str::to_owned),
                    class: sub.opt_str("class")?.map(str::to_owned),
                    id: sub
                        .opt_int("id", 1..=i64::from(u32::MAX))?
                        .map(|n| n as u64),
                    exact: sub.boolean("exact", false)?,
                }
            }
            Some(other) => {
                return Err(invalid(
                    "target",
                    format!(
                        "`target` must be a window title or {{title, class, id, exact}}, got {other}"
                    ),
                ));
            }
        };
        for (field, slot) in [("title", 0), ("windowTitle", 0), ("class", 1)] {
            if args.get(field).is_some() {
                let text = args.str(field)?.to_owned();
                if slot == 0 {
                    query.title = Some(text);
                } else {
                    query.class = Some(text);
                }
            }
        }
        if args.get("exact").is_some() {
            query.exact = args.boolean("exact", false)?;
        }
        if query.title.is_none() && query.class.is_none() && query.id.is_none() {
            return Ok(None);
        }
        Ok(Some(query))
    }

    /// The query as text, for messages.
    pub(crate) fn describe(&self) -> String {
        let how = if self.exact { "=" } else { "~" };
        let mut parts = Vec::new();
        if let Some(id) = self.id {
            parts.push(format!("id=0x{id:x}"));
        }
        if let Some(t) = &self.title {
            parts.push(format!("title{how}{t:?}"));
        }
        if let Some(c) = &self.class {
            parts.push(format!("class{how}{c:?}"));
        }
        parts.join(" ")
    }

    fn text_matches(&self, want: &Option<String>, have: &[&str]) -> bool {
        let Some(want) = want else { return true };
        let want = want.to_lowercase();
        have.iter().any(|h| {
            let h = h.to_lowercase();
            if self.exact {
                h == want
            } else {
                h.contains(&want)
            }
        })
    }

    /// Whether `w` matches.
    pub(crate) fn matches(&self, w: &WindowInfo) -> bool {
        self.id.is_none_or(|id| id == w.id)
            && self.text_matches(&self.title, &[&w.title])
            && self.text_matches(&self.class, &[&w.class, &w.instance])
    }

    /// The best match in `windows` (bottom to top): an exact title beats a
    /// substring, then the focused window, then the top-most.
    pub(crate) fn pick<'a>(&self, windows: &'a [WindowInfo]) -> Result<&'a WindowInfo, Failure> {
        let matching: Vec<&WindowInfo> = windows.iter().filter(|w| self.matches(w)).collect();
        let exact_title = |w: &&&WindowInfo| {
            self.title
                .as_ref()
                .is_some_and(|t| w.title.eq_ignore_ascii_case(t))
        };
        matching
            .iter()
            .rev()
            .find(|w| exact_title(w) && w.focused)
            .or_else(|| matching.iter().rev().find(exact_title))
            .or_else(|| matching.iter().rev().find(|w| w.focused))
            .or_else(|| matching.last())
            .copied()
            .ok_or_else(|| not_found(self, windows))
    }
}

/// `not-found` listing what is there, so the caller can correct the query.
fn not_found(query: &Query, windows: &[WindowInfo]) -> Failure {
    let titles: Vec<String> = windows
        .iter()
        .rev()
        .take(20)
        .map(|w| format!("{:?} ({})", w.title, w.class))
        .collect();
    Failure::new(
        FailureCode::NotFound,
        format!(
            "no window matches {}; open windows: {}",
            query.describe(),
            if titles.is_empty() {
                "none".into()
            } else {
                titles.join(", ")
            }
        ),
    )
    .with_input_fired(false)
    .with_details(json!({ "query": query.describe() }))
}

/// How far a window manager's frame may reach past a client's area: the title
/// bar above, borders elsewhere. The plugin sees client areas only; this is
/// for telling which window a point without a target is on.
pub(crate) const TITLE_BAR: i32 = 40;
pub(crate) const BORDER: i32 = 8;

/// The top-most window under (x, y) in `windows` (bottom to top): the first,
/// from the top, whose client area holds the point or, when `managed` says a
/// window manager draws frames, whose frame would.
pub(crate) fn window_at(
    windows: &[WindowInfo],
    x: i32,
    y: i32,
    mut managed: impl FnMut() -> bool,
) -> Option<&WindowInfo> {
    let mut frames: Option<bool> = None;
    windows.iter().rev().find(|w| {
        let g = &w.geometry;
        let (left, top) = (i64::from(g.x), i64::from(g.y));
        let (right, bottom) = (left + i64::from(g.width), top + i64::from(g.height));
        let (px, py) = (i64::from(x), i64::from(y));
        if (left..right).contains(&px) && (top..bottom).contains(&py) {
            return true;
        }
        let (b, t) = (i64::from(BORDER), i64::from(TITLE_BAR));
        (left - b..right + b).contains(&px)
            && (top - t..bottom + b).contains(&py)
            && *frames.get_or_insert_with(&mut managed)
    })
}

/// A window as JSON for results.
pub(crate) fn window_json(w: &WindowInfo) -> Value {
    json!({
        "id": w.id,
        "title": w.title,
        "class": w.class,
        "instance": w.instance,
        "pid": w.pid,
        "x": w.geometry.x,
        "y": w.geometry.y,
        "width": w.geometry.width,
        "height": w.geometry.height,
        "focused": w.focused,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use stephost_plugin::desktop::Rect;

    fn win(id: u64, title: &str, class: &str, focused: bool) -> WindowInfo {
        WindowInfo {
            id,
            title: title.into(),
            class: class.into(),
            instance: class.to_lowercase(),
            pid: None,
            geometry: Rect {
                x: 0,
                y: 0,
                width: 10,
                height: 10,
            },
            focused,
        }
    }

    fn query(v: Value) -> Option<Query> {
        let Value::Object(map) = v else { panic!() };
        Query::from_args(&Args::from(map)).expect("parses")
    }

    #[test]
    fn targets_parse_from_strings_objects_and_flat_fields() {
        assert_eq!(
            query(json!({"target": "Notes"}))
                .expect("q")
                .title
                .as_deref(),
            Some("Notes")
        );
        let q = query(json!({"target": {"class": "XTerm", "exact": true}})).expect("q");
        assert_eq!((q.class.as_deref(), q.exact), (Some("XTerm"), true));
        assert_eq!(
            query(json!({"windowTitle": "A"}))
                .expect("q")
                .title
                .as_deref(),
            Some("A")
        );
        assert!(query(json!({"x": 1})).is_none());
    }

    #[test]
    fn pick_prefers_exact_then_focused_then_topmost() {
        let list = vec![
            win(1, "notes - draft", "Tk", false),
            win(2, "Notes", "Tk", false),
            win(3, "more notes", "XTerm", true),
        ];
        let q = |t: &str| Query {
            title: Some(t.into()),
            ..Query::default()
        };
        assert_eq!(q("notes").pick(&list).expect("found").id, 2, "exact title");
        assert_eq!(q("note").pick(&list).expect("found").id, 3, "focused");
        let by_class = Query {
            class: Some("tk".into()),
            ..Query::default()
        };
        assert_eq!(by_class.pick(&list).expect("found").id, 2, "top-most");
        let missing = q("nothing").pick(&list).expect_err("none");
        assert_eq!(missing.code, FailureCode::NotFound);
        assert!(missing.message.contains("\"Notes\""), "{}", missing.message);
    }

    #[test]
    fn the_window_under_a_point_is_the_top_most_and_frames_count_under_a_manager() {
        let mut low = win(1, "low", "Tk", false);
        low.geometry = Rect {
            x: 0,
            y: 0,
            width: 300,
            height: 300,
        };
        let mut high = win(2, "high", "Tk", true);
        high.geometry = Rect {
            x: 100,
            y: 100,
            width: 100,
            height: 100,
        };
        let list = vec![low, high];
        let id = |x, y, wm: bool| window_at(&list, x, y, || wm).map(|w| w.id);
        assert_eq!(id(150, 150, false), Some(2));
        assert_eq!(id(50, 50, false), Some(1));
        // On the title bar of the top window: its frame under a manager, the
        // window below without one.
        assert_eq!(id(150, 80, true), Some(2));
        assert_eq!(id(150, 80, false), Some(1));
        assert_eq!(id(400, 400, true), None);
    }
}
