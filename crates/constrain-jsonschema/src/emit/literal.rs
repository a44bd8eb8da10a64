//! `const` and `enum` values: every JSON spelling of exactly these values.

use constrain_engine::Expr;
use serde_json::Value;

use super::scalar::quoted;
use super::Emitter;
use crate::document::Draft;
use crate::error::{SchemaError, WarningKind};
use crate::ir::{ArraySet, KeyRule, KeySet, Lit, Node, ObjectSet};
use crate::json_text;
use crate::number::Decimal;
use crate::options::{Escapes, Numbers};
use crate::re::{CharSet, Re};

/// Above this many characters of string literals, they are spelled only the way
/// `json.dumps(..., ensure_ascii=False)` writes them (every spelling would make the terminal huge).
const MAX_ALL_SPELLINGS_CHARS: usize = 20_000;

impl Emitter<'_, '_> {
    pub(crate) fn literals(&mut self, values: &[Lit], depth: u32) -> Result<Expr, SchemaError> {
        let mut alts = Vec::new();
        let mut strings = Vec::new();
        let mut numbers = Vec::new();
        for lit in values {
            match &lit.value {
                Value::Null => alts.push(Expr::literal("null")),
                Value::Bool(b) => alts.push(Expr::literal(if *b { "true" } else { "false" })),
                Value::Number(n) => {
                    if let Some(d) = Decimal::from_json(n) {
                        // Draft 4 counts `1.0` as a number but not an integer: an integral
                        // literal is spelled without a fraction, so it stays an integer.
                        let any = self.ctx.options.numbers == Numbers::Any;
                        let fraction_zeros = any && self.ctx.doc.draft != Draft::Draft4;
                        numbers.push(number_literal(&d, fraction_zeros, any));
                    }
                }
                Value::String(s) => strings.push(s.clone()),
                Value::Array(items) => alts.push(self.literal_array(items, depth)?),
                Value::Object(map) => alts.push(self.literal_object(map, depth)?),
            }
        }
        if !numbers.is_empty() {
            alts.push(Expr::from_hir(Re::alt(numbers).to_hir()));
        }
        if !strings.is_empty() {
            let chars: usize = strings.iter().map(|s| s.chars().count()).sum();
            let set = Re::one_of_strings(&strings);
            let mut escapes = self.ctx.options.escapes;
            if escapes == Escapes::Any && chars > MAX_ALL_SPELLINGS_CHARS {
                let pointer = self.pointer.clone();
                self.ctx.warn(
                    &pointer,
                    "enum",
                    WarningKind::CanonicalSpelling,
                    format!("{chars} characters of string literals: only their canonical spelling is accepted"),
                );
                escapes = Escapes::Canonical;
            }
            alts.push(quoted(json_text::encode(&set, escapes)));
        }
        Ok(Expr::alt(alts))
    }

    fn literal_array(&mut self, items: &[Value], depth: u32) -> Result<Expr, SchemaError> {
        let n = items.len() as u64;
        let set = ArraySet {
            prefix: items
                .iter()
                .map(|v| Node::constant(vec![v.clone()]))
                .collect(),
            items: Node::Nothing,
            min: n,
            max: Some(n),
            ..ArraySet::default()
        };
        self.array(&set, depth)
    }

    fn literal_object(
        &mut self,
        map: &serde_json::Map<String, Value>,
        depth: u32,
    ) -> Result<Expr, SchemaError> {
        let names: Vec<String> = map.keys().cloned().collect();
        let set = ObjectSet {
            props: map
                .iter()
                .map(|(k, v)| (k.clone(), Node::constant(vec![v.clone()])))
                .collect(),
            rules: vec![KeyRule {
                keys: KeySet::Other {
                    names: names.clone().into(),
                    langs: Vec::new().into(),
                },
                value: Node::Nothing,
            }],
            required: names,
            ..ObjectSet::default()
        };
        self.object(&set, depth)
    }
}

/// The plain spellings of `d`: its digits, with any number of trailing fraction zeros (for an
/// integral `d`, none unless `fraction_zeros`); zero with a `-` only if `negative_zero`.
pub(crate) fn number_literal(d: &Decimal, fraction_zeros: bool, negative_zero: bool) -> Re {
    let (int, frac) = d.abs().plain_parts();
    let zero = Re::class(CharSet::single('0'));
    let sign = if d.is_zero() && !negative_zero {
        Re::empty()
    } else if d.is_zero() {
        Re::literal("-").optional()
    } else if d.is_negative() {
        Re::literal("-")
    } else {
        Re::empty()
    };
    let tail = if frac.is_empty() && !fraction_zeros {
        Re::empty()
    } else if frac.is_empty() {
        Re::concat(vec![Re::literal("."), Re::repeat(zero, 1, None)]).optional()
    } else {
        Re::concat(vec![
            Re::literal("."),
            Re::literal(&frac),
            Re::repeat(zero, 0, None),
        ])
    };
    Re::concat(vec![sign, Re::literal(&int), tail])
}
