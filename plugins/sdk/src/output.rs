//! Successful results, as the contract types them, with builders.
//!
//! `value` is JSON text on the wire; [`Output::new`] takes a JSON value so that it
//! cannot be anything else (a value that is not JSON fails the step in the host).

use serde_json::Value;

pub use crate::bindings::stephost::plugin::types::{Content, Image, Output};

impl Output {
    /// A result with this value and no content. The value is what `${STEP_N}` and
    /// `assign_to` see, so make it structured JSON rather than prose.
    pub fn new(value: Value) -> Self {
        Output {
            value: value.to_string(),
            content: Vec::new(),
        }
    }

    /// Adds a text item shown alongside the value (prose: a text that only
    /// repeats the value is dropped by the host).
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(Content::Text(text.into()));
        self
    }

    /// Adds an image item (`image/png` and the encoded bytes).
    pub fn with_image(mut self, mime: impl Into<String>, data: Vec<u8>) -> Self {
        self.content.push(Content::Image(Image {
            mime: mime.into(),
            data,
        }));
        self
    }

    /// The value as JSON (`null` when empty, as the host reads it, or not JSON).
    pub fn value_json(&self) -> Value {
        serde_json::from_str(&self.value).unwrap_or(Value::Null)
    }

    /// The text items, in order.
    pub fn texts(&self) -> Vec<&str> {
        self.content
            .iter()
            .filter_map(|c| match c {
                Content::Text(text) => Some(text.as_str()),
                Content::Image(_) => None,
            })
            .collect()
    }
}
