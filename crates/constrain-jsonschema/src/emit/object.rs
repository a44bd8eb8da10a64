//! Objects: declared properties (in schema order, or in any order), keys that are not
//! declared (grouped into regions of keys that share one value schema), and counts.

use constrain_engine::{Expr, RuleId};

use super::scalar::{quoted, string_of};
use super::Emitter;
use crate::error::SchemaError;
use crate::ir::{KeySet, Node, ObjectSet};
use crate::json_text;
use crate::options::PropertyOrder;
use crate::re::{dfa, Re};

/// Most rules of the counting grammar of one object.
const MAX_OBJECT_STATES: usize = 50_000;
/// Most rules (undeclared-key regions are computed for every subset of them).
const MAX_KEY_RULES: usize = 6;

/// One declared property as it may appear.
struct Member {
    required: bool,
    expr: Expr,
}

impl Emitter<'_, '_> {
    pub(crate) fn object(&mut self, o: &ObjectSet, depth: u32) -> Result<Expr, SchemaError> {
        let pointer = self.pointer.clone();
        let Some(o) = self.ctx.normalize_object(o.clone(), &pointer)? else {
            return Ok(Expr::nothing());
        };
        let o = &o;
        let child = depth + 1;
        let deep = self.layout.too_deep(child);
        let mut members = Vec::new();
        for (name, node) in &o.props {
            let required = o.required.contains(name);
            let mut allowed = *node != Node::Nothing && !deep;
            for lang in &o.names {
                if allowed && !self.ctx.lang_matches(lang, name)? {
                    allowed = false;
                }
            }
            if !allowed {
                if required {
                    return Ok(Expr::nothing());
                }
                continue;
            }
            let key = quoted(json_text::encode(&Re::literal(name)));
            let value = self.emit(node, child)?;
            let expr = Expr::seq(vec![key, self.layout.key_sep(), value]);
            let rule = self.fresh_rule(&format!("member-{name}"), expr)?;
            members.push(Member {
                required,
                expr: Expr::rule(rule),
            });
        }
        let extra = if deep {
            None
        } else {
            self.extra_member(o, child)?
        };
        let allow_empty = o.min == 0 && !members.iter().any(|m| m.required);
        let body = match self.ctx.options.property_order {
            PropertyOrder::Schema => self.ordered(&members, extra, o.min, o.max, depth)?,
            PropertyOrder::Any => self.any_order(&members, extra, o.min, o.max, depth)?,
        };
        Ok(self.layout.container(depth, '{', '}', body, allow_empty))
    }

    /// One member whose key is not declared, or `None` if there can be none.
    fn extra_member(&mut self, o: &ObjectSet, child: u32) -> Result<Option<Expr>, SchemaError> {
        let regions = self.regions(o)?;
        let mut alts = Vec::new();
        for (keys, value) in regions {
            if keys.is_nothing() || value == Node::Nothing {
                continue;
            }
            let key = string_of(&keys);
            let v = self.emit(&value, child)?;
            alts.push(Expr::seq(vec![key, self.layout.key_sep(), v]));
        }
        if alts.is_empty() {
            return Ok(None);
        }
        let rule = self.fresh_rule("member-other", Expr::alt(alts))?;
        Ok(Some(Expr::rule(rule)))
    }

    /// Undeclared keys, partitioned by the rules that apply to them: (keys, value schema).
    fn regions(&mut self, o: &ObjectSet) -> Result<Vec<(Re, Node)>, SchemaError> {
        let declared: Vec<String> = o.props.iter().map(|(k, _)| k.clone()).collect();
        let rules: Vec<_> = o
            .rules
            .iter()
            .filter(|r| r.value != Node::Any)
            .cloned()
            .collect();
        let names: Vec<Re> = o.names.iter().map(|r| (**r).clone()).collect();
        let restrict = |this: &mut Self, re: Re| -> Result<Re, SchemaError> {
            if names.is_empty() {
                return Ok(re);
            }
            let mut all = names.clone();
            all.push(re);
            match dfa::intersect_all(&all) {
                Ok(r) => Ok(r),
                Err(e) => {
                    this.unsupported("propertyNames", format!("{e}"))?;
                    Ok(all.pop().unwrap_or_else(Re::nothing))
                }
            }
        };
        if rules.is_empty() {
            let keys = restrict(self, Re::not_in(&declared))?;
            return Ok(vec![(keys, Node::Any)]);
        }
        if let [rule] = &rules[..] {
            if let KeySet::Other {
                names: other_names,
                langs,
            } = &rule.keys
            {
                if langs.is_empty() {
                    let mut excluded = declared.clone();
                    let mut freed = Vec::new();
                    for n in other_names.iter() {
                        if !excluded.contains(n) {
                            excluded.push(n.clone());
                            freed.push(n.clone());
                        }
                    }
                    let mut out =
                        vec![(restrict(self, Re::not_in(&excluded))?, rule.value.clone())];
                    if !freed.is_empty() {
                        out.push((restrict(self, Re::one_of_strings(&freed))?, Node::Any));
                    }
                    return Ok(out);
                }
            }
        }
        if rules.len() > MAX_KEY_RULES {
            self.unsupported("patternProperties", format!("more than {MAX_KEY_RULES} patternProperties/additionalProperties rules on one object"))?;
            let keys = restrict(self, Re::not_in(&declared))?;
            return Ok(vec![(keys, Node::Any)]);
        }
        let langs: Vec<Re> = rules
            .iter()
            .map(|r| match &r.keys {
                KeySet::Lang(re) => (**re).clone(),
                KeySet::Other { names, langs } => {
                    let mut covered: Vec<Re> = langs.iter().map(|l| (**l).clone()).collect();
                    covered.push(Re::one_of_strings(names));
                    Re::alt(covered)
                }
            })
            .collect();
        let negated: Vec<bool> = rules
            .iter()
            .map(|r| matches!(r.keys, KeySet::Other { .. }))
            .collect();
        let mut out = Vec::new();
        for mask in 0u32..(1 << rules.len()) {
            let pointer = self.pointer.clone();
            let mut value = Node::Any;
            for (i, r) in rules.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    value = self.ctx.meet(&value, &r.value, &pointer)?;
                }
            }
            if value == Node::Nothing {
                continue;
            }
            // Keys in rule i's set: its language, or the complement for `additionalProperties`.
            let mut positive = names.clone();
            let mut negative = Vec::new();
            for (i, l) in langs.iter().enumerate() {
                let inside = mask & (1 << i) != 0;
                if inside != negated[i] {
                    positive.push(l.clone());
                } else {
                    negative.push(l.clone());
                }
            }
            let region = match dfa::difference(&positive, &negative) {
                Ok(d) => d,
                Err(e) => {
                    self.unsupported(
                        "patternProperties",
                        format!("keys of patternProperties/additionalProperties: {e}"),
                    )?;
                    continue;
                }
            };
            if region.is_empty() {
                continue;
            }
            let inside: Vec<String> = declared
                .iter()
                .filter(|k| region.matches(k))
                .cloned()
                .collect();
            let re = if inside.is_empty() {
                region.to_re()
            } else {
                region
                    .intersect(
                        &dfa::Dfa::from_re(&Re::not_in(&inside))
                            .map_err(|e| self.too_complex(&e))?,
                    )
                    .and_then(|d| d.to_re())
            };
            match re {
                Ok(re) => out.push((re, value)),
                Err(e) => self.unsupported(
                    "patternProperties",
                    format!("keys of patternProperties/additionalProperties: {e}"),
                )?,
            }
        }
        Ok(out)
    }

    fn too_complex(&self, e: &dfa::TooLarge) -> SchemaError {
        SchemaError::TooComplex {
            pointer: crate::ctx::pointer_or_root(&self.pointer),
            what: e.what.clone(),
            limit: e.limit,
        }
    }

    /// Count states: members so far, saturated where the count no longer matters.
    fn count_cap(min: u64, max: Option<u64>) -> u64 {
        max.unwrap_or(min.max(1))
    }

    /// Declared members in schema order, then undeclared ones; a non-empty sequence.
    fn ordered(
        &mut self,
        members: &[Member],
        extra: Option<Expr>,
        min: u64,
        max: Option<u64>,
        depth: u32,
    ) -> Result<Expr, SchemaError> {
        let p = members.len();
        let cap = Self::count_cap(min, max);
        let states = (p + 1).saturating_mul(cap as usize + 1);
        if states > MAX_OBJECT_STATES {
            return Err(SchemaError::TooComplex {
                pointer: crate::ctx::pointer_or_root(&self.pointer),
                what: "minProperties/maxProperties counting".into(),
                limit: MAX_OBJECT_STATES,
            });
        }
        let sep = self.layout.item_sep(depth);
        let next = |k: u64| {
            if max.is_some() {
                k + 1
            } else {
                (k + 1).min(cap)
            }
        };
        // ids[i][k]: members from index i on, k emitted before.
        let mut ids: Vec<Vec<RuleId>> = Vec::with_capacity(p + 1);
        for i in 0..=p {
            let mut row = Vec::with_capacity(cap as usize + 1);
            for k in 0..=cap {
                row.push(self.declare_rule(&format!("members-{i}-{k}"))?);
            }
            ids.push(row);
        }
        for i in 0..=p {
            for k in 0..=cap {
                let pre = if k > 0 { sep.clone() } else { Expr::empty() };
                let body = if i < p {
                    let mut alts = Vec::new();
                    if !members[i].required {
                        alts.push(Expr::rule(ids[i + 1][k as usize]));
                    }
                    if max.is_none_or(|m| k < m) {
                        alts.push(Expr::seq(vec![
                            pre,
                            members[i].expr.clone(),
                            Expr::rule(ids[i + 1][next(k) as usize]),
                        ]));
                    }
                    Expr::alt(alts)
                } else {
                    // Undeclared members: e of them with min ≤ k + e ≤ max; at least one when
                    // nothing came before (the empty object is handled by the container).
                    let lo = min.saturating_sub(k).max(u64::from(k == 0));
                    let hi = max.map(|m| m.saturating_sub(k));
                    if lo == 0 && k > 0 && (extra.is_none() || hi == Some(0)) {
                        Expr::empty()
                    } else if let Some(x) = &extra {
                        if hi.is_some_and(|h| h < lo) {
                            Expr::nothing()
                        } else {
                            let lo32 = u32::try_from(lo).unwrap_or(u32::MAX);
                            let hi32 = hi.map(|h| u32::try_from(h).unwrap_or(u32::MAX));
                            if k == 0 {
                                Expr::seq(vec![
                                    x.clone(),
                                    Expr::seq(vec![sep.clone(), x.clone()]).repeat(
                                        lo32.saturating_sub(1),
                                        hi32.map(|h| h.saturating_sub(1)),
                                    ),
                                ])
                            } else {
                                Expr::seq(vec![sep.clone(), x.clone()]).repeat(lo32, hi32)
                            }
                        }
                    } else {
                        Expr::nothing()
                    }
                };
                self.define(ids[i][k as usize], body);
            }
        }
        Ok(Expr::rule(ids[0][0]))
    }

    /// Declared members in any order (each at most once), mixed with undeclared ones.
    fn any_order(
        &mut self,
        members: &[Member],
        extra: Option<Expr>,
        min: u64,
        max: Option<u64>,
        depth: u32,
    ) -> Result<Expr, SchemaError> {
        let p = members.len();
        let limit = self.ctx.options.max_any_order_properties as usize;
        if p > limit || p > 20 {
            self.unsupported(
                "properties",
                format!("{p} declared properties in any order (the limit is {limit})"),
            )?;
            return self.ordered(members, extra, min, max, depth);
        }
        let cap = Self::count_cap(min, max);
        let states = (1usize << p).saturating_mul(cap as usize + 1);
        if states > MAX_OBJECT_STATES {
            self.unsupported("properties", format!("{p} declared properties in any order need more than {MAX_OBJECT_STATES} states"))?;
            return self.ordered(members, extra, min, max, depth);
        }
        let sep = self.layout.item_sep(depth);
        let required: usize = members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.required)
            .map(|(i, _)| 1 << i)
            .sum();
        let next = |k: u64| {
            if max.is_some() {
                k + 1
            } else {
                (k + 1).min(cap)
            }
        };
        let mut ids = vec![Vec::with_capacity(cap as usize + 1); 1 << p];
        for (mask, row) in ids.iter_mut().enumerate() {
            for k in 0..=cap {
                row.push(self.declare_rule(&format!("any-{mask}-{k}"))?);
            }
        }
        for mask in 0..(1usize << p) {
            for k in 0..=cap {
                let mut alts = Vec::new();
                if k > 0 && mask & required == required && k >= min {
                    alts.push(Expr::empty());
                }
                if max.is_none_or(|m| k < m) {
                    let pre = if k > 0 { sep.clone() } else { Expr::empty() };
                    for (j, m) in members.iter().enumerate() {
                        if mask & (1 << j) == 0 {
                            alts.push(Expr::seq(vec![
                                pre.clone(),
                                m.expr.clone(),
                                Expr::rule(ids[mask | (1 << j)][next(k) as usize]),
                            ]));
                        }
                    }
                    if let Some(x) = &extra {
                        alts.push(Expr::seq(vec![
                            pre,
                            x.clone(),
                            Expr::rule(ids[mask][next(k) as usize]),
                        ]));
                    }
                }
                self.define(ids[mask][k as usize], Expr::alt(alts));
            }
        }
        Ok(Expr::rule(ids[0][0]))
    }
}
