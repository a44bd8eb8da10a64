//! Arrays: leading positions, the rest, counts, `contains` and `uniqueItems`.

use constrain_engine::Expr;

use super::Emitter;
use crate::error::{pointer_or_root, SchemaError};
use crate::ir::{ArraySet, Node};

/// Largest count spelled out in a grammar (`minItems`, `maxItems`...).
const MAX_COUNT: u64 = 100_000;
/// Most states of the counting grammars of `contains` and `uniqueItems`.
const MAX_COUNTING_STATES: usize = 4_096;
/// Most `contains` counted at once on one array (each element is of one kind per subset).
const MAX_CONTAINS: usize = 3;

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

    /// Arrays with `contains` (at most [`MAX_CONTAINS`] of them): a grammar that counts the
    /// elements and, per `contains`, the elements matching it. Each element is of one kind per
    /// subset of the `contains` it matches: its schema (`prefixItems` or `items`) within those,
    /// and outside the others that have a maximum (without one, a match need not be counted).
    fn contains_array(&mut self, a: &ArraySet, depth: u32) -> Result<Expr, SchemaError> {
        let k = a.contains.len();
        let pointer = self.pointer.clone();
        let mut outside = Vec::with_capacity(k);
        for c in &a.contains {
            outside.push(match c.max {
                None => None,
                Some(_) => match self.ctx.complement(&c.node, &pointer) {
                    Ok(not_c) => Some(not_c),
                    Err(SchemaError::Unsupported { reason, .. }) => {
                        self.unsupported("maxContains", reason)?;
                        None
                    }
                    Err(e) => return Err(e),
                },
            });
        }
        let p = a.prefix.len();
        let lo = a.contains.iter().fold(a.min, |lo, c| lo.max(c.min));
        // Unbounded, the element count saturates where the prefix and the minimums are behind.
        let t_cap = self.count(a.max.unwrap_or(lo.max(1).max(p as u64)), "maxItems")? as usize;
        let mut caps = Vec::with_capacity(k);
        for c in &a.contains {
            caps.push(self.count(c.max.unwrap_or(c.min), "minContains")? as usize);
        }
        let states = caps
            .iter()
            .fold(t_cap + 1, |n, cap| n.saturating_mul(cap + 1));
        if k > MAX_CONTAINS || states > MAX_COUNTING_STATES {
            let reason = if k > MAX_CONTAINS {
                format!("more than {MAX_CONTAINS} 'contains' on one array")
            } else {
                format!("counting needs more than {MAX_COUNTING_STATES} states")
            };
            self.unsupported("contains", reason)?;
            let plain = ArraySet {
                contains: Vec::new(),
                ..a.clone()
            };
            return self.array(&plain, depth);
        }
        // kinds[i][subset]: the element at index i (past the prefix: `p`) matching exactly
        // the `contains` of `subset` (among those counted up to a maximum).
        let child = depth + 1;
        let mut kinds = Vec::with_capacity(p + 1);
        for i in 0..=p {
            let mut row = Vec::with_capacity(1 << k);
            for subset in 0..1usize << k {
                let mut node = a.item(i).clone();
                for (j, c) in a.contains.iter().enumerate() {
                    let within = if subset >> j & 1 == 1 {
                        Some(&c.node)
                    } else {
                        outside[j].as_ref()
                    };
                    if let Some(within) = within {
                        node = self.ctx.meet(&node, within, &pointer)?;
                    }
                }
                row.push(match node {
                    Node::Nothing => None,
                    node => Some(self.emit(&node, child)?),
                });
            }
            kinds.push(row);
        }
        let sep = self.layout.item_sep(depth);
        // State (t, m): t elements so far (saturated at t_cap when unbounded), m[j] matches of
        // the j-th `contains` (saturated at its minimum when it has no maximum).
        let index = |t: usize, m: &[usize]| {
            m.iter()
                .zip(&caps)
                .fold(t, |acc, (&mj, &cap)| acc * (cap + 1) + mj)
        };
        let decode = |mut s: usize| {
            let mut m = vec![0; k];
            for j in (0..k).rev() {
                m[j] = s % (caps[j] + 1);
                s /= caps[j] + 1;
            }
            (s, m)
        };
        let mut ids = vec![None; states];
        for (s, slot) in ids.iter_mut().enumerate() {
            let (t, m) = decode(s);
            if t > 0 {
                let counts: Vec<String> = m.iter().map(usize::to_string).collect();
                *slot = Some(self.declare_rule(&format!("contains-{t}-{}", counts.join("-")))?);
            }
        }
        let mut start = Expr::nothing();
        for s in 0..states {
            let (t, m) = decode(s);
            if t == 0 && m.iter().any(|&mj| mj > 0) {
                continue;
            }
            let mut alts = Vec::new();
            if t > 0
                && (t as u64) >= lo
                && m.iter().zip(&a.contains).all(|(&mj, c)| mj as u64 >= c.min)
            {
                alts.push(Expr::empty());
            }
            if a.max.is_none_or(|mx| (t as u64) < mx) {
                let pre = if t > 0 { sep.clone() } else { Expr::empty() };
                let t2 = if a.max.is_none() {
                    (t + 1).min(t_cap)
                } else {
                    t + 1
                };
                for (subset, kind) in kinds[t.min(p)].iter().enumerate() {
                    let Some(kind) = kind else { continue };
                    let mut m2 = m.clone();
                    let mut allowed = true;
                    for (j, c) in a.contains.iter().enumerate() {
                        if subset >> j & 1 == 0 {
                            continue;
                        }
                        match c.max {
                            Some(mx) if m[j] as u64 >= mx => allowed = false,
                            Some(_) => m2[j] += 1,
                            None => m2[j] = (m[j] + 1).min(caps[j]),
                        }
                    }
                    if !allowed {
                        continue;
                    }
                    if let Some(r) = ids.get(index(t2, &m2)).copied().flatten() {
                        alts.push(Expr::seq(vec![pre.clone(), kind.clone(), Expr::rule(r)]));
                    }
                }
            }
            let body = Expr::alt(alts);
            match ids[s] {
                Some(r) => self.define(r, body),
                None => start = body,
            }
        }
        let allow_empty = lo == 0;
        Ok(self.layout.container(depth, '[', ']', start, allow_empty))
    }

    /// Arrays of distinct elements: drawn from a small finite set of values, a rule per
    /// subset of them used so far; strings that never run out, the array as it is and the
    /// check beside the grammar (see [`crate::unique`]) keeping them apart.
    fn unique_array(&mut self, a: &ArraySet, depth: u32) -> Result<Expr, SchemaError> {
        let values = if a.prefix.is_empty() && a.contains.is_empty() {
            crate::unique::finite_values(self.ctx, &a.items).map_err(|f| self.fail(f))?
        } else {
            None
        };
        let Some(values) = values.filter(|v| v.len() <= crate::unique::MAX_GRAMMAR_UNIQUE_VALUES)
        else {
            let plain = ArraySet {
                unique: false,
                ..a.clone()
            };
            if crate::unique::check_can_keep_unique(self.ctx, a).map_err(|f| self.fail(f))? {
                // Distinct strings are not a context-free language: the grammar has the
                // array, the check beside it keeps the elements apart.
                self.unique_by_check_at
                    .get_or_insert_with(|| self.pointer.clone());
            } else {
                self.unsupported("uniqueItems", crate::unique::UNIQUE_ITEMS_SUPPORT)?;
            }
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
}
