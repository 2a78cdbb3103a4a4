//! Recovery proposals: how a plugin says a failure might heal.
//!
//! The host knows no verb by name, so it cannot know how to heal a failure. The
//! plugin does: a failure may carry, in its `details`, the strategies that could
//! heal it, each a list of calls to the plugin's own verbs:
//!
//! ```json
//! {"classification": "element-not-found",
//!  "recovery": [{"name": "reload_page", "tier": 2, "description": "...",
//!                "actions": [{"verb": "run_keyword", "input": {...}}]}]}
//! ```
//!
//! Between runs the host escalates the way rf-mcp does: the first round is tier 1
//! (a plugin's tier-1 strategy if it proposes one, else just the backoff wait),
//! later rounds take the next untried tier-2 strategy, falling back to any untried
//! one. Every round is recorded in the step's `recovery` log, also when the step
//! ends up passing.

use serde_json::Value;

/// One call of a recovery strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    /// Verb of the failed step's plugin.
    pub verb: String,
    /// Its input object.
    pub input: Value,
    /// What it is for.
    pub description: Option<String>,
}

/// A way out of a failure, proposed by the plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct Strategy {
    /// Name, unique within one failure's list (`reload_page`).
    pub name: String,
    /// 1: local and cheap (dismiss an alert); 2: changes context (reload, go back).
    pub tier: u8,
    /// What it does.
    pub description: Option<String>,
    /// Calls to make, in order.
    pub actions: Vec<Action>,
}

/// What the plugin said about a failure.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Proposal {
    /// The plugin's class of the failure (`element-not-found`).
    pub classification: Option<String>,
    /// Strategies in the plugin's order.
    pub strategies: Vec<Strategy>,
    /// Entries that could not be read, with why; recorded, never fatal.
    pub malformed: Vec<String>,
}

impl Proposal {
    /// Reads `details.classification` and `details.recovery`; anything else in the
    /// details is the plugin's business.
    pub fn from_details(details: Option<&Value>) -> Self {
        let mut out = Self::default();
        let Some(details) = details.and_then(Value::as_object) else {
            return out;
        };
        out.classification = details
            .get("classification")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let Some(list) = details.get("recovery") else {
            return out;
        };
        let Some(list) = list.as_array() else {
            out.malformed
                .push("details.recovery is not an array".to_owned());
            return out;
        };
        for (i, item) in list.iter().enumerate() {
            match parse_strategy(item) {
                Ok(s) => out.strategies.push(s),
                Err(why) => out.malformed.push(format!("details.recovery[{i}]: {why}")),
            }
        }
        out
    }

    /// Whether the plugin proposed anything.
    pub fn is_empty(&self) -> bool {
        self.classification.is_none() && self.strategies.is_empty() && self.malformed.is_empty()
    }

    /// `details` with the proposal written in, in the shape of
    /// [`Proposal::from_details`], where the details do not already carry it:
    /// a report shows what the plugin proposed whichever contract version it
    /// was sent in.
    pub fn merged_into(&self, details: Option<Value>) -> Option<Value> {
        if self.classification.is_none() && self.strategies.is_empty() {
            return details;
        }
        let mut map = match details {
            None => serde_json::Map::new(),
            Some(Value::Object(map)) => map,
            // Details that are not an object have no place for a proposal.
            Some(other) => return Some(other),
        };
        if let Some(class) = &self.classification {
            map.entry("classification")
                .or_insert_with(|| Value::String(class.clone()));
        }
        if !self.strategies.is_empty() {
            map.entry("recovery").or_insert_with(|| {
                Value::Array(self.strategies.iter().map(Strategy::to_json).collect())
            });
        }
        Some(Value::Object(map))
    }

    /// The strategy for recovery round `round` (1-based), skipping names in `tried`.
    pub fn pick(&self, round: u32, tried: &[String]) -> Option<&Strategy> {
        let mut untried = self
            .strategies
            .iter()
            .filter(|s| !tried.iter().any(|t| t == &s.name));
        if round <= 1 {
            // Tier 1 first: a cheap local fix, or none and just the wait.
            untried.find(|s| s.tier <= 1)
        } else {
            let untried: Vec<&Strategy> = untried.collect();
            untried
                .iter()
                .find(|s| s.tier >= 2)
                .or_else(|| untried.first())
                .copied()
        }
    }
}

impl Strategy {
    /// Whether the engine can run this strategy: a name, tier 1 or 2, and for
    /// each action a verb and an object input. The one check for a proposal in
    /// any contract version; the message says what is wrong, for the round's
    /// notes.
    pub fn check(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("missing `name`".into());
        }
        if !(1..=2).contains(&self.tier) {
            return Err("`tier` must be 1 or 2".into());
        }
        for (i, action) in self.actions.iter().enumerate() {
            if action.verb.is_empty() {
                return Err(format!("actions[{i}]: missing `verb`"));
            }
            if !action.input.is_object() {
                return Err(format!("actions[{i}]: `input` must be an object"));
            }
        }
        Ok(())
    }

    /// The strategy as JSON, in the shape [`Proposal::from_details`] reads.
    pub fn to_json(&self) -> Value {
        let mut out = serde_json::json!({
            "name": self.name,
            "tier": self.tier,
            "actions": self.actions.iter().map(|a| {
                let mut action = serde_json::json!({"verb": a.verb, "input": a.input});
                if let Some(d) = &a.description {
                    action["description"] = Value::String(d.clone());
                }
                action
            }).collect::<Vec<_>>(),
        });
        if let Some(d) = &self.description {
            out["description"] = Value::String(d.clone());
        }
        out
    }
}

/// A strategy as contract 0.1.0 writes it in `details`: absent fields read as
/// empty (a missing `tier` as 2, the 0.1.0 default) and [`Strategy::check`]
/// says what is wrong.
fn parse_strategy(item: &Value) -> Result<Strategy, String> {
    let obj = item.as_object().ok_or("not an object")?;
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let tier = match obj.get("tier") {
        None | Some(Value::Null) => 2,
        // Out of range reads as 0, which the check refuses.
        Some(t) => t.as_u64().and_then(|t| u8::try_from(t).ok()).unwrap_or(0),
    };
    let mut strategy = Strategy {
        name: text(item, "name").unwrap_or_default(),
        tier,
        description: text(item, "description"),
        actions: Vec::new(),
    };
    // Name and tier first, as they are written first.
    strategy.check()?;
    strategy.actions = obj
        .get("actions")
        .and_then(Value::as_array)
        .ok_or("missing `actions` array")?
        .iter()
        .map(|a| Action {
            verb: text(a, "verb").unwrap_or_default(),
            input: a
                .get("input")
                .cloned()
                .unwrap_or(Value::Object(Default::default())),
            description: text(a, "description"),
        })
        .collect();
    strategy.check()?;
    Ok(strategy)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn details() -> Value {
        json!({
            "keyword": "Read Widget",
            "classification": "element-not-found",
            "recovery": [
                {"name": "dismiss", "tier": 1, "actions": [{"verb": "run_keyword", "input": {"keyword": "Handle Alert"}}]},
                {"name": "Reset Widget", "tier": 2, "description": "library", "actions": [{"verb": "run_keyword", "input": {"keyword": "Lib.Reset Widget"}}]},
                {"name": "navigate_back", "tier": 2, "actions": []},
                {"tier": 2, "actions": []},
                {"name": "x", "tier": 7, "actions": []},
                {"name": "y", "actions": [{"verb": "v", "input": 3}]}
            ]
        })
    }

    #[test]
    fn reads_strategies_and_reports_malformed_ones() {
        let d = details();
        let p = Proposal::from_details(Some(&d));
        assert_eq!(p.classification.as_deref(), Some("element-not-found"));
        let names: Vec<&str> = p.strategies.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["dismiss", "Reset Widget", "navigate_back"]);
        assert_eq!(p.malformed.len(), 3, "{:?}", p.malformed);
        assert!(p.malformed[0].contains("recovery[3]") && p.malformed[0].contains("name"));
        assert!(p.malformed[1].contains("tier"));
        assert!(p.malformed[2].contains("input"));
        assert_eq!(p.strategies[1].actions[0].verb, "run_keyword");
    }

    #[test]
    fn escalates_from_tier_one_to_tier_two() {
        let d = details();
        let p = Proposal::from_details(Some(&d));
        assert_eq!(p.pick(1, &[]).map(|s| s.name.as_str()), Some("dismiss"));
        let tried = vec!["dismiss".to_owned()];
        assert_eq!(p.pick(1, &tried), None, "round 1 only takes tier 1");
        assert_eq!(
            p.pick(2, &tried).map(|s| s.name.as_str()),
            Some("Reset Widget")
        );
        let tried = vec!["Reset Widget".to_owned(), "navigate_back".to_owned()];
        assert_eq!(
            p.pick(3, &tried).map(|s| s.name.as_str()),
            Some("dismiss"),
            "later rounds fall back to any untried strategy"
        );
        let all: Vec<String> = p.strategies.iter().map(|s| s.name.clone()).collect();
        assert_eq!(p.pick(4, &all), None);
    }

    #[test]
    fn a_typed_proposal_writes_itself_into_details_once() {
        let d = details();
        let p = Proposal::from_details(Some(&d));
        // Details that already carry the proposal (contract 0.1) stay as they are.
        assert_eq!(p.merged_into(Some(d.clone())), Some(d));
        let typed = Proposal {
            classification: Some("element-not-found".into()),
            strategies: p.strategies.clone(),
            malformed: Vec::new(),
        };
        let merged = typed.merged_into(Some(json!({"keyword": "Read Widget"})));
        let again = Proposal::from_details(merged.as_ref());
        assert_eq!(again.strategies, p.strategies);
        assert_eq!(again.classification.as_deref(), Some("element-not-found"));
        assert_eq!(Proposal::default().merged_into(None), None);
    }

    #[test]
    fn one_check_for_every_version() {
        let strategy = |name: &str, tier, verb: &str, input: Value| Strategy {
            name: name.into(),
            tier,
            description: None,
            actions: vec![Action {
                verb: verb.into(),
                input,
                description: None,
            }],
        };
        assert_eq!(strategy("s", 2, "v", json!({})).check(), Ok(()));
        let why = |s: Strategy| s.check().err().unwrap_or_default();
        assert_eq!(why(strategy("", 0, "", json!(1))), "missing `name`");
        assert_eq!(why(strategy("s", 0, "", json!(1))), "`tier` must be 1 or 2");
        assert_eq!(
            why(strategy("s", 1, "", json!(1))),
            "actions[0]: missing `verb`"
        );
        assert_eq!(
            why(strategy("s", 1, "v", Value::Null)),
            "actions[0]: `input` must be an object"
        );
    }

    #[test]
    fn no_details_no_strategies() {
        assert_eq!(Proposal::from_details(None), Proposal::default());
        let p = Proposal::from_details(Some(&json!({"recovery": "x"})));
        assert!(p.strategies.is_empty());
        assert_eq!(p.malformed.len(), 1);
        assert_eq!(
            Proposal::from_details(Some(&json!("text"))),
            Proposal::default()
        );
    }
}
