//! Shared test helpers: compile a schema for a vocabulary of the 256 single bytes and check
//! documents against it, spelled compactly and like Python's `json.dumps`.

#![allow(dead_code)]

use std::sync::Arc;

use constrain_engine::{CompiledGrammar, Limits, Matcher, TokenIndex};
use constrain_jsonschema::{compile, Options};
use serde_json::Value;

/// A vocabulary of every single byte (ids 0..=255) and an end-of-sequence token (256).
pub fn byte_index() -> Arc<TokenIndex> {
    TokenIndex::new(constrain_testdata::byte_vocabulary())
}

/// A schema compiled for the byte vocabulary.
pub struct Checked {
    pub grammar: Arc<CompiledGrammar>,
}

impl Checked {
    pub fn new(
        index: &Arc<TokenIndex>,
        schema: &Value,
        options: &Options,
    ) -> Result<Checked, String> {
        let compiled = compile(schema, options).map_err(|e| e.to_string())?;
        let grammar = CompiledGrammar::new(&compiled.grammar, index.clone(), Limits::default())
            .map_err(|e| format!("engine: {e}"))?;
        Ok(Checked { grammar })
    }

    /// Whether the whole text is accepted (every byte allowed, end allowed after it).
    pub fn accepts_text(&self, text: &str) -> bool {
        let mut m = Matcher::new(self.grammar.clone());
        m.accept_bytes(text.as_bytes()).is_ok() && m.is_accepting()
    }

    /// Whether `value` is accepted spelled compactly and spelled like `json.dumps`
    /// (`Some(true)` both, `Some(false)` neither, `None` when the spellings disagree).
    pub fn accepts(&self, value: &Value) -> (bool, bool) {
        (
            self.accepts_text(&compact(value)),
            self.accepts_text(&python_dumps(value)),
        )
    }
}

/// Compact JSON.
pub fn compact(v: &Value) -> String {
    serde_json::to_string(v).expect("serializes")
}

/// JSON spelled like Python's `json.dumps(v, ensure_ascii=False)`: `", "` and `": "`.
pub fn python_dumps(v: &Value) -> String {
    let mut out = String::new();
    dumps(v, &mut out);
    out
}

fn dumps(v: &Value, out: &mut String) {
    match v {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dumps(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&dump_string(k));
                out.push_str(": ");
                dumps(item, out);
            }
            out.push('}');
        }
        Value::String(s) => out.push_str(&dump_string(s)),
        other => out.push_str(&compact(other)),
    }
}

fn dump_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
