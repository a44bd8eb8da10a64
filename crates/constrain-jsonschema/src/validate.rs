//! Whether a concrete JSON value belongs to a [`Node`]: used to filter `enum`/`const` values by
//! the constraints around them, so that literals are checked once, at compile time.

use serde_json::Value;

use crate::ctx::{Ctx, Fail};
use crate::ir::{ArraySet, Lit, Node, NumberSet, ObjectSet, StringSet, Typed};
use crate::number::{compare, Decimal};

impl Ctx<'_> {
    pub(crate) fn accepts(&mut self, node: &Node, value: &Value) -> Result<bool, Fail> {
        match node {
            Node::Any => Ok(true),
            Node::Nothing => Ok(false),
            Node::Const(values) => {
                let lit = Lit::new(value.clone());
                Ok(values.contains(&lit))
            }
            Node::AnyOf(parts) => {
                for p in parts.iter() {
                    if self.accepts(p, value)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Node::Ref(d) => {
                let body = self.body(*d)?;
                self.accepts(&body, value)
            }
            Node::Typed(t) => self.accepts_typed(t, value),
        }
    }

    fn accepts_typed(&mut self, t: &Typed, value: &Value) -> Result<bool, Fail> {
        Ok(match value {
            Value::Null => t.null,
            Value::Bool(_) => t.boolean,
            Value::Number(n) => match (&t.number, Decimal::from_json(n)) {
                (Some(set), Some(d)) => number_accepts(set, &d),
                _ => false,
            },
            Value::String(s) => match &t.string {
                Some(set) => self.string_accepts(set, s)?,
                None => false,
            },
            Value::Array(items) => match &t.array {
                Some(set) => self.array_accepts(set, items)?,
                None => false,
            },
            Value::Object(map) => match &t.object {
                Some(set) => self.object_accepts(set, map)?,
                None => false,
            },
        })
    }

    fn string_accepts(&mut self, set: &StringSet, s: &str) -> Result<bool, Fail> {
        let len = s.chars().count() as u64;
        if len < set.min_len || set.max_len.is_some_and(|m| len > m) {
            return Ok(false);
        }
        for l in &set.langs {
            if !self.lang_matches(l, s)? {
                // Outside a subset language but inside its superset: undecided.
                if let Some(superset) = self.subset_langs.get(l).cloned() {
                    if self.lang_matches(&superset, s)? {
                        return Err(Fail::Error(crate::SchemaError::Unsupported {
                            keyword: "format".into(),
                            pointer: "/".into(),
                            reason: format!("cannot decide whether the literal {s:?} is of a format enforced on a subset of its strings"),
                        }));
                    }
                }
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn array_accepts(&mut self, set: &ArraySet, items: &[Value]) -> Result<bool, Fail> {
        let n = items.len() as u64;
        if n < set.min || set.max.is_some_and(|m| n > m) {
            return Ok(false);
        }
        for (i, item) in items.iter().enumerate() {
            let schema = set.item(i).clone();
            if !self.accepts(&schema, item)? {
                return Ok(false);
            }
        }
        for c in &set.contains {
            let mut count = 0u64;
            for item in items {
                if self.accepts(&c.node, item)? {
                    count += 1;
                }
            }
            if count < c.min || c.max.is_some_and(|m| count > m) {
                return Ok(false);
            }
        }
        if set.unique {
            let lits: Vec<Lit> = items.iter().map(|v| Lit::new(v.clone())).collect();
            for i in 0..lits.len() {
                if lits[i + 1..].contains(&lits[i]) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn object_accepts(
        &mut self,
        set: &ObjectSet,
        map: &serde_json::Map<String, Value>,
    ) -> Result<bool, Fail> {
        let n = map.len() as u64;
        if n < set.min || set.max.is_some_and(|m| n > m) {
            return Ok(false);
        }
        if set.required.iter().any(|k| !map.contains_key(k)) {
            return Ok(false);
        }
        for e in &set.some {
            let mut found = false;
            for (k, v) in map {
                if self.lang_matches(&e.keys, k)? && self.accepts(&e.value, v)? {
                    found = true;
                    break;
                }
            }
            if !found {
                return Ok(false);
            }
        }
        for (k, v) in map {
            for l in &set.names {
                if !self.lang_matches(l, k)? {
                    return Ok(false);
                }
            }
            let schema = match set.prop(k) {
                Some(s) => s.clone(),
                None => self.rule_value(set, k, "")?,
            };
            if !self.accepts(&schema, v)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

pub(crate) fn number_accepts(set: &NumberSet, d: &Decimal) -> bool {
    use std::cmp::Ordering;
    if set.integer && !d.is_integer() || set.fractional && d.is_integer() {
        return false;
    }
    if let Some(lo) = &set.lo {
        match compare(d, &lo.value) {
            Ordering::Less => return false,
            Ordering::Equal if lo.exclusive => return false,
            _ => {}
        }
    }
    if let Some(hi) = &set.hi {
        match compare(d, &hi.value) {
            Ordering::Greater => return false,
            Ordering::Equal if hi.exclusive => return false,
            _ => {}
        }
    }
    // Where divisibility cannot be decided, the value is left out.
    set.multiple_of
        .iter()
        .all(|m| d.is_multiple_of(m).unwrap_or(false))
        && set
            .not_multiple_of
            .iter()
            .all(|m| d.is_multiple_of(m) == Some(false))
}
