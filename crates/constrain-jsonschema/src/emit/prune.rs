//! Removing what can never match before the grammar is built: references to rules with an
//! empty language, and the alternatives, sequences and repetitions that contain them.
//!
//! Emission produces such parts naturally (a property whose schema is `false`, a branch that
//! an intersection emptied); dropping them keeps every rule of the built grammar productive.

use constrain_engine::{Expr, RuleId, Unordered, UnorderedMember};
use rustc_hash::{FxHashMap, FxHashSet};

/// Whether an expression is the empty language, as built by [`Expr::nothing`].
pub(crate) fn is_nothing(e: &Expr) -> bool {
    match e {
        Expr::Alt(v) => v.is_empty(),
        Expr::Regex(h) => h.properties().minimum_len().is_none(),
        Expr::Graph(g) => g.matches_nothing(),
        _ => false,
    }
}

fn productive(e: &Expr, rules: &FxHashSet<RuleId>) -> bool {
    match e {
        Expr::Regex(_) | Expr::Graph(_) => !is_nothing(e),
        Expr::Rule(r) => rules.contains(r),
        Expr::Seq(parts) => parts.iter().all(|p| productive(p, rules)),
        Expr::Alt(parts) => parts.iter().any(|p| productive(p, rules)),
        Expr::Repeat { expr, min, .. } => *min == 0 || productive(expr, rules),
        Expr::Unordered(u) => {
            let live = |e: &Expr| productive(e, rules);
            let required = u.members.iter().filter(|m| m.required).count();
            let items = if required == 0 && !u.allow_empty {
                if !u.members.iter().any(|m| live(&m.expr)) && !u.extra.as_ref().is_some_and(live) {
                    return false;
                }
                1
            } else {
                required
            };
            u.members.iter().all(|m| !m.required || live(&m.expr))
                && (items < 2 || live(&u.separator))
        }
    }
}

/// The rules that derive at least one string.
///
/// A worklist: a rule's body is looked at again only when a rule it mentions has just become
/// productive. (Passes over every rule until nothing changes take one pass per link of the
/// longest chain of rules, each waiting for the next: quadratic, and minutes for a schema of
/// 14,000 optional properties, each the head of the chain of the ones after it.)
pub(crate) fn productive_rules(
    bodies: &FxHashMap<RuleId, Expr>,
) -> Result<FxHashSet<RuleId>, crate::SchemaError> {
    let mut users: FxHashMap<RuleId, Vec<RuleId>> = FxHashMap::default();
    for (r, e) in bodies {
        let mut mentioned = FxHashSet::default();
        rules_in(e, &mut mentioned);
        for m in mentioned {
            users.entry(m).or_default().push(*r);
        }
    }
    let mut set = FxHashSet::default();
    let mut todo: Vec<RuleId> = bodies.keys().copied().collect();
    while let Some(r) = todo.pop() {
        if crate::deadline::expired_sampled() {
            crate::deadline::check("")?;
        }
        if set.contains(&r) || !bodies.get(&r).is_some_and(|e| productive(e, &set)) {
            continue;
        }
        set.insert(r);
        if let Some(waiting) = users.get(&r) {
            todo.extend(waiting.iter().copied().filter(|u| !set.contains(u)));
        }
    }
    Ok(set)
}

/// Every rule `e` mentions.
fn rules_in(e: &Expr, out: &mut FxHashSet<RuleId>) {
    match e {
        Expr::Regex(_) | Expr::Graph(_) => {}
        Expr::Rule(r) => {
            out.insert(*r);
        }
        Expr::Seq(parts) | Expr::Alt(parts) => parts.iter().for_each(|p| rules_in(p, out)),
        Expr::Repeat { expr, .. } => rules_in(expr, out),
        Expr::Unordered(u) => {
            u.members.iter().for_each(|m| rules_in(&m.expr, out));
            if let Some(extra) = &u.extra {
                rules_in(extra, out);
            }
            rules_in(&u.separator, out);
        }
    }
}

/// `e` without unproductive parts (the empty language if nothing is left).
pub(crate) fn prune(e: Expr, live: &FxHashSet<RuleId>) -> Expr {
    match e {
        Expr::Regex(_) | Expr::Graph(_) => {
            if is_nothing(&e) {
                Expr::nothing()
            } else {
                e
            }
        }
        Expr::Rule(r) => {
            if live.contains(&r) {
                e
            } else {
                Expr::nothing()
            }
        }
        Expr::Seq(parts) => {
            let mut out = Vec::with_capacity(parts.len());
            for p in parts {
                let p = prune(p, live);
                if is_nothing(&p) {
                    return Expr::nothing();
                }
                if !matches!(&p, Expr::Seq(v) if v.is_empty()) {
                    out.push(p);
                }
            }
            Expr::seq(out)
        }
        Expr::Alt(parts) => {
            let out: Vec<Expr> = parts
                .into_iter()
                .map(|p| prune(p, live))
                .filter(|p| !is_nothing(p))
                .collect();
            Expr::alt(out)
        }
        Expr::Repeat { expr, min, max } => {
            let inner = prune(*expr, live);
            if is_nothing(&inner) {
                return if min == 0 {
                    Expr::empty()
                } else {
                    Expr::nothing()
                };
            }
            if max == Some(0) {
                return Expr::empty();
            }
            inner.repeat(min, max)
        }
        Expr::Unordered(u) => {
            let Unordered {
                members,
                extra,
                separator,
                allow_empty,
            } = *u;
            let mut kept = Vec::with_capacity(members.len());
            for m in members {
                let expr = prune(m.expr, live);
                match (is_nothing(&expr), m.required) {
                    (true, true) => return Expr::nothing(),
                    (true, false) => {}
                    (false, required) => kept.push(UnorderedMember { expr, required }),
                }
            }
            let u = Unordered {
                members: kept,
                extra: extra.map(|e| prune(e, live)).filter(|e| !is_nothing(e)),
                separator: prune(separator, live),
                allow_empty,
            };
            let e = Expr::unordered(u);
            if productive(&e, live) {
                e
            } else {
                Expr::nothing()
            }
        }
    }
}
