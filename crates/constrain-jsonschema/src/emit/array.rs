//! Arrays: leading positions, the rest, counts, `contains` and `uniqueItems`.

use constrain_engine::Expr;
use serde_json::Value;

use super::Emitter;
use crate::ctx::pointer_or_root;
use crate::error::SchemaError;
use crate::ir::{ArraySet, Lit, Node};

/// Largest count spelled out in a grammar (`minItems`, `maxItems`...).
const MAX_COUNT: u64 = 100_000;
/// Most states of the counting grammars of `contains` and `uniqueItems`.
const MAX_COUNTING_STATES: usize = 4_096;

impl Emitter<'_, '_> {
    fn count(&self, n: u64, keyword: &str) -> Result<u32, SchemaError> {
        if n > MAX_COUNT {
            return Err(SchemaError::TooComplex {
                pointer: pointer_or_root(&self.pointer),
                what: format!("'{keyword}' of {n}"),
                limit: MAX_COUNT as usize,
            });
        }
        Ok(n as u32)
    }

    pub(crate) fn array(&mut self, a: &ArraySet, depth: u32) -> Result<Expr, SchemaError> {
        if self.layout.too_deep(depth + 1) {
            return Ok(if a.min == 0 {
                self.layout
                    .container(depth, '[', ']', Expr::nothing(), true)
            } else {
                Expr::nothing()
            });
        }
        if a.max == Some(0) {
            return Ok(if a.min == 0 {
                self.layout
                    .container(depth, '[', ']', Expr::nothing(), true)
            } else {
                Expr::nothing()
            });
        }
        if a.unique && a.max.is_none_or(|m| m > 1) {
            return self.unique_array(a, depth);
        }
        if !a.contains.is_empty() {
            return self.contains_array(a, depth);
        }
        let child = depth + 1;
        let mut prefix = Vec::with_capacity(a.prefix.len());
        for p in &a.prefix {
            prefix.push(self.emit(p, child)?);
        }
        let item = self.emit(&a.items, child)?;
        let body = self.elements(&prefix, item, a.min, a.max, depth)?;
        Ok(self.layout.container(depth, '[', ']', body, a.min == 0))
    }

    /// The non-empty element sequences: `prefix` at the leading positions, then `item`s,
    /// `min..=max` in all.
    fn elements(
        &mut self,
        prefix: &[Expr],
        item: Expr,
        min: u64,
        max: Option<u64>,
        depth: u32,
    ) -> Result<Expr, SchemaError> {
        let sep = self.layout.item_sep(depth);
        let k = prefix.len() as u64;
        let lo = self.count(min.saturating_sub(k), "minItems")?;
        let hi = match max {
            Some(m) => Some(self.count(m.saturating_sub(k), "maxItems")?),
            None => None,
        };
        // The elements after the prefix, given that `first` says whether none came before.
        let rest = |first: bool| -> Expr {
            if first {
                let more = Expr::seq(vec![sep.clone(), item.clone()])
                    .repeat(lo.saturating_sub(1), hi.map(|h| h.saturating_sub(1)));
                if hi == Some(0) {
                    Expr::nothing()
                } else {
                    Expr::seq(vec![item.clone(), more])
                }
            } else {
                Expr::seq(vec![sep.clone(), item.clone()]).repeat(lo, hi)
            }
        };
        // Built from the last prefix position backwards.
        let mut tail = rest(prefix.is_empty());
        let mut tail_after = rest(false);
        for i in (0..prefix.len()).rev() {
            let allowed = max.is_none_or(|m| (i as u64) < m);
            let stop_ok = (i as u64) >= min;
            let take_first = if allowed {
                Expr::seq(vec![prefix[i].clone(), tail_after.clone()])
            } else {
                Expr::nothing()
            };
            let take_rest = if allowed {
                Expr::seq(vec![sep.clone(), prefix[i].clone(), tail_after.clone()])
            } else {
                Expr::nothing()
            };
            let stop = if stop_ok {
                Expr::empty()
            } else {
                Expr::nothing()
            };
            tail = take_first;
            tail_after = Expr::alt(vec![stop, take_rest]);
            if i > 0 {
                let r = self.fresh_rule("elements", tail_after.clone())?;
                tail_after = Expr::rule(r);
            }
        }
        Ok(tail)
    }

    /// Arrays with one `contains` (and no `prefixItems`): a grammar that counts elements and
    /// matches.
    fn contains_array(&mut self, a: &ArraySet, depth: u32) -> Result<Expr, SchemaError> {
        if a.contains.len() > 1 || !a.prefix.is_empty() {
            self.unsupported(
                "contains",
                "several 'contains' or 'contains' with 'prefixItems'",
            )?;
            let plain = ArraySet {
                contains: Vec::new(),
                ..a.clone()
            };
            return self.array(&plain, depth);
        }
        let c = &a.contains[0];
        let pointer = self.pointer.clone();
        let matching = self.ctx.meet(&a.items, &c.node, &pointer)?;
        let other = if c.max.is_some() {
            match self.ctx.complement(&c.node, &pointer) {
                Ok(not_c) => self.ctx.meet(&a.items, &not_c, &pointer)?,
                Err(SchemaError::Unsupported { reason, .. }) => {
                    self.unsupported("maxContains", reason)?;
                    a.items.clone()
                }
                Err(e) => return Err(e),
            }
        } else {
            a.items.clone()
        };
        let child = depth + 1;
        let m_expr = self.emit(&matching, child)?;
        let o_expr = self.emit(&other, child)?;
        let sep = self.layout.item_sep(depth);
        let lo = a.min.max(c.min);
        let t_cap = self.count(a.max.unwrap_or(lo.max(1)), "maxItems")? as usize;
        let m_cap = self.count(c.max.unwrap_or(c.min), "minContains")? as usize;
        if (t_cap + 1) * (m_cap + 1) > MAX_COUNTING_STATES {
            self.unsupported(
                "contains",
                format!("counting needs more than {MAX_COUNTING_STATES} states"),
            )?;
            let plain = ArraySet {
                contains: Vec::new(),
                ..a.clone()
            };
            return self.array(&plain, depth);
        }
        // Rule (t, m): t elements so far (saturated at t_cap when unbounded), m matches.
        let mut ids = vec![vec![None; m_cap + 1]; t_cap + 1];
        for (t, row) in ids.iter_mut().enumerate() {
            for (m, slot) in row.iter_mut().enumerate() {
                if t > 0 {
                    *slot = Some(self.declare_rule(&format!("contains-{t}-{m}"))?);
                }
            }
        }
        let next_t = |t: usize| {
            if a.max.is_none() {
                (t + 1).min(t_cap)
            } else {
                t + 1
            }
        };
        let next_m = |m: usize| {
            if c.max.is_none() {
                (m + 1).min(m_cap)
            } else {
                m + 1
            }
        };
        let mut start = Expr::nothing();
        for t in 0..=t_cap {
            for m in 0..=m_cap {
                if t == 0 && m > 0 {
                    continue;
                }
                let mut alts = Vec::new();
                if t > 0 && (t as u64) >= lo && (m as u64) >= c.min {
                    alts.push(Expr::empty());
                }
                let can_grow = a.max.is_none_or(|mx| (t as u64) < mx);
                if can_grow {
                    let pre = if t > 0 { sep.clone() } else { Expr::empty() };
                    let t2 = next_t(t);
                    if let Some(r) = ids.get(t2).and_then(|row| row.get(m)).copied().flatten() {
                        alts.push(Expr::seq(vec![pre.clone(), o_expr.clone(), Expr::rule(r)]));
                    }
                    if c.max.is_none_or(|mx| (m as u64) < mx) {
                        let m2 = next_m(m);
                        if let Some(r) = ids.get(t2).and_then(|row| row.get(m2)).copied().flatten()
                        {
                            alts.push(Expr::seq(vec![pre, m_expr.clone(), Expr::rule(r)]));
                        }
                    }
                }
                let body = Expr::alt(alts);
                match ids[t][m] {
                    Some(r) => self.define(r, body),
                    None => start = body,
                }
            }
        }
        let allow_empty = lo == 0 && c.min == 0;
        Ok(self.layout.container(depth, '[', ']', start, allow_empty))
    }

    /// Arrays of distinct elements drawn from a small finite set of values.
    fn unique_array(&mut self, a: &ArraySet, depth: u32) -> Result<Expr, SchemaError> {
        let values = if a.prefix.is_empty() && a.contains.is_empty() {
            self.finite_values(&a.items)?
        } else {
            None
        };
        let Some(values) = values.filter(|v| v.len() <= 12) else {
            self.unsupported("uniqueItems", "only arrays whose elements come from a small finite set (enum, boolean, null) can be kept unique")?;
            let plain = ArraySet {
                unique: false,
                ..a.clone()
            };
            return self.array(&plain, depth);
        };
        let n = values.len();
        let child = depth + 1;
        let mut exprs = Vec::with_capacity(n);
        for v in &values {
            exprs.push(self.literals(std::slice::from_ref(v), child)?);
        }
        let sep = self.layout.item_sep(depth);
        let states = 1usize << n;
        if states > MAX_COUNTING_STATES {
            self.unsupported(
                "uniqueItems",
                format!("counting needs more than {MAX_COUNTING_STATES} states"),
            )?;
            let plain = ArraySet {
                unique: false,
                ..a.clone()
            };
            return self.array(&plain, depth);
        }
        let mut ids = vec![None; states];
        for (mask, slot) in ids.iter_mut().enumerate().skip(1) {
            *slot = Some(self.declare_rule(&format!("unique-{mask}"))?);
        }
        let mut start = Expr::nothing();
        for mask in 0..states {
            let used = mask.count_ones() as u64;
            let mut alts = Vec::new();
            if mask != 0 && used >= a.min {
                alts.push(Expr::empty());
            }
            if a.max.is_none_or(|m| used < m) {
                for (i, e) in exprs.iter().enumerate() {
                    if mask & (1 << i) != 0 {
                        continue;
                    }
                    let pre = if mask != 0 {
                        sep.clone()
                    } else {
                        Expr::empty()
                    };
                    if let Some(r) = ids[mask | (1 << i)] {
                        alts.push(Expr::seq(vec![pre, e.clone(), Expr::rule(r)]));
                    }
                }
            }
            let body = Expr::alt(alts);
            match ids[mask] {
                Some(r) => self.define(r, body),
                None => start = body,
            }
        }
        Ok(self.layout.container(depth, '[', ']', start, a.min == 0))
    }

    /// The values of `node` if it is a finite set.
    fn finite_values(&mut self, node: &Node) -> Result<Option<Vec<Lit>>, SchemaError> {
        let node = self.ctx.expand(node).map_err(|f| self.fail(f))?;
        Ok(match &node {
            Node::Nothing => Some(Vec::new()),
            Node::Const(values) => Some(values.to_vec()),
            Node::Typed(t)
                if t.number.is_none()
                    && t.string.is_none()
                    && t.array.is_none()
                    && t.object.is_none() =>
            {
                let mut v = Vec::new();
                if t.null {
                    v.push(Lit::new(Value::Null));
                }
                if t.boolean {
                    v.push(Lit::new(Value::Bool(false)));
                    v.push(Lit::new(Value::Bool(true)));
                }
                Some(v)
            }
            Node::AnyOf(parts) => {
                let mut all: Vec<Lit> = Vec::new();
                for p in parts.iter() {
                    match self.finite_values(p)? {
                        Some(vs) => {
                            for v in vs {
                                if !all.contains(&v) {
                                    all.push(v);
                                }
                            }
                        }
                        None => return Ok(None),
                    }
                }
                Some(all)
            }
            _ => None,
        })
    }
}
