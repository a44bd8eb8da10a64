//! Objects: declared properties (in schema order, or in any order), keys that are not
//! declared (grouped into regions of keys that share one value schema), and counts.

use constrain_engine::{Expr, RuleId, Unordered, UnorderedMember};

use super::scalar::{quoted, string_of};
use super::Emitter;
use crate::error::{SchemaError, WarningKind};
use crate::ir::{KeyRule, KeySet, Node, ObjectSet};
use crate::json_text;
use crate::options::PropertyOrder;
use crate::re::{dfa, Re};

/// Most rules of the counting grammar of one object.
const MAX_OBJECT_STATES: usize = 50_000;
/// Most rules on the undeclared keys of one object (regions of keys are subsets of them).
const MAX_KEY_RULES: usize = 32;

/// Most regions of undeclared keys (sets of rules a key may be in and out of) of one object.
const MAX_KEY_REGIONS: usize = 64;

/// Size (in rough NFA states) above which a key's expression is replaced by its automaton's
/// graph when that is less than half as large: smaller expressions merge with the member's
/// value into one lexeme, which a graph never does.
const MAX_KEY_EXPRESSION_SIZE: usize = 2_000;

/// Most `Exists` constraints on one object (each doubles the states of its grammar).
const MAX_EXISTS: usize = 6;

/// The sets of rules (masks over `langs`, in increasing order) that some key may be in while
/// outside every other, as far as the languages tell; `None` past [`MAX_KEY_REGIONS`].
/// `negated` rules hold the keys outside their language (`additionalProperties`: the keys
/// no pattern and no declared name covers). Found depth first, a rule at a time, a branch
/// dropped once the languages its keys must be in have no string in common: disjoint
/// patterns (`^name:`, `^url:`, ...) make one set each and the empty set, not the `2^n`
/// subsets. Whether a set's keys outside its other rules exist is left to its region.
fn key_rule_masks(names: &[Re], langs: &[Re], negated: &[bool]) -> Option<Vec<u32>> {
    // Where an automaton is past its budget, a branch is kept with its keys unknown.
    let meet = |keys: &Option<dfa::Dfa>, lang: &Re| -> Option<Option<dfa::Dfa>> {
        let Re::Automaton(lang) = lang else {
            return Some(keys.clone());
        };
        let both = match keys {
            None => lang.dfa().clone(),
            Some(k) => match k.intersect(lang.dfa()) {
                Ok(both) => both.minimize(),
                Err(_) => return Some(Some(k.clone())),
            },
        };
        (!both.is_empty()).then_some(Some(both))
    };
    let mut start = None;
    for name in names {
        start = meet(&start, name).unwrap_or(start);
    }
    let mut masks = Vec::new();
    let mut stack = vec![(0usize, 0u32, start)];
    while let Some((i, mask, keys)) = stack.pop() {
        if i == langs.len() {
            if masks.len() == MAX_KEY_REGIONS {
                return None;
            }
            masks.push(mask);
            continue;
        }
        // In rule `i` and out of it: the keys must be in its language on one side.
        for inside in [false, true] {
            let bit = if inside { 1 << i } else { 0 };
            if inside != negated[i] {
                if let Some(keys) = meet(&keys, &langs[i]) {
                    stack.push((i + 1, mask | bit, keys));
                }
            } else {
                stack.push((i + 1, mask | bit, keys.clone()));
            }
        }
    }
    masks.sort_unstable();
    Some(masks)
}

/// `re` as its minimal automaton ([`Re::Automaton`]), if that is within the budgets: the
/// regions of keys combine the languages of an object's rules as automata, each many times.
fn as_automaton(re: &Re) -> Re {
    match dfa::minimal_dfa(re) {
        Ok(d) => Re::Automaton(std::sync::Arc::new(crate::re::Automaton::new(d))),
        Err(_) => re.clone(),
    }
}

/// One member as it may appear: plainly, or as the witness of some of the object's required
/// members (bit `j` of the mask: the object's `some[j]`).
struct Member {
    required: bool,
    expr: Option<Expr>,
    witnesses: Vec<(u32, Expr)>,
}

/// What the undeclared members of an object depend on, when no member is required to exist.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ExtraKey {
    declared: Vec<String>,
    rules: Vec<KeyRule>,
    names: Vec<std::rc::Rc<Re>>,
    depth: u32,
}

/// Undeclared keys that share one value schema.
struct Region {
    keys: Keys,
    value: Node,
}

impl Region {
    fn of(keys: Re, value: Node) -> Region {
        Region {
            keys: Keys::Expression(keys),
            value,
        }
    }

    /// Every key but `words`, with its value schema.
    fn all_but(words: Vec<String>, value: Node) -> Region {
        Region {
            keys: Keys::AllBut(words),
            value,
        }
    }
}

/// The keys of a region.
enum Keys {
    /// Every key but these: the common case (the keys an object does not declare), a graph
    /// built straight from their trie, with no expression unless a witness needs one.
    AllBut(Vec<String>),
    Expression(Re),
    /// The keys of a minimal automaton (cut from patterns and declared keys), whose
    /// expression is rebuilt only where one is needed: the key itself is often its graph.
    Automaton(dfa::Dfa),
}

impl Keys {
    /// The keys as an expression (built, for [`Keys::AllBut`] and [`Keys::Automaton`]);
    /// `None` past the budget.
    fn expression(&self) -> Option<std::borrow::Cow<'_, Re>> {
        match self {
            Keys::AllBut(words) => Some(std::borrow::Cow::Owned(Re::not_in(words))),
            Keys::Expression(re) => Some(std::borrow::Cow::Borrowed(re)),
            Keys::Automaton(a) => a.to_re().ok().map(std::borrow::Cow::Owned),
        }
    }

    fn is_nothing(&self) -> bool {
        match self {
            Keys::Expression(re) => re.is_nothing(),
            Keys::Automaton(a) => a.is_empty(),
            Keys::AllBut(_) => false,
        }
    }
}

/// What the state machines of an object put together.
struct Parts {
    members: Vec<Member>,
    /// Undeclared members.
    extra: Member,
    /// Mask of all `Exists` bits.
    full: u32,
    min: u64,
    max: Option<u64>,
}

impl Emitter<'_, '_> {
    pub(crate) fn object(&mut self, o: &ObjectSet, depth: u32) -> Result<Expr, SchemaError> {
        let pointer = self.pointer.clone();
        let Some(o) = self.ctx.normalize_object(o.clone(), &pointer)? else {
            return Ok(Expr::nothing());
        };
        let o = &o;
        if o.some.len() > MAX_EXISTS {
            self.unsupported("not", format!("more than {MAX_EXISTS} members required to exist (complements of additionalProperties)"))?;
        }
        let some: Vec<_> = o.some.iter().take(MAX_EXISTS).cloned().collect();
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
            let key = quoted(json_text::encode(
                &Re::literal(name),
                self.ctx.options.escapes,
            ));
            let value = self.emit(node, child)?;
            let expr = Expr::seq(vec![key.clone(), self.layout.key_sep(), value]);
            let rule = self.fresh_rule(&format!("member-{name}"), expr)?;
            // Witness variants: the value also in the required members' schemas.
            let mut witnesses = Vec::new();
            for mask in 1u32..(1 << some.len()) {
                let mut v = node.clone();
                let mut applies = true;
                for (j, e) in some.iter().enumerate() {
                    if mask & (1 << j) != 0 {
                        applies &= self.ctx.lang_matches(&e.keys, name)?;
                        v = self.ctx.meet(&v, &e.value, &pointer)?;
                    }
                }
                if applies && v != Node::Nothing {
                    let value = self.emit(&v, child)?;
                    witnesses.push((
                        mask,
                        Expr::seq(vec![key.clone(), self.layout.key_sep(), value]),
                    ));
                }
            }
            members.push(Member {
                required,
                expr: Some(Expr::rule(rule)),
                witnesses,
            });
        }
        let extra = if deep {
            Member {
                required: false,
                expr: None,
                witnesses: Vec::new(),
            }
        } else {
            self.extra_member(o, &some, child)?
        };
        if extra.expr.is_some() && o.min >= 2 {
            // Two undeclared members may spell the same key (`"f"`, `"\u0066"`), and a
            // parser keeps one: toward minProperties they count once.
            if o.min > members.len() as u64 + 1 {
                self.unsupported(
                    "minProperties",
                    format!(
                        "{} properties with at most {} declared: undeclared keys cannot be kept distinct",
                        o.min,
                        members.len()
                    ),
                )?;
            } else {
                self.ctx.warn(
                    &pointer,
                    "minProperties",
                    WarningKind::Narrowed,
                    "undeclared keys count once toward minProperties (they could repeat)",
                );
            }
        }
        let allow_empty = o.min == 0 && some.is_empty() && !members.iter().any(|m| m.required);
        let parts = Parts {
            members,
            extra,
            full: (1 << some.len()) - 1,
            min: o.min,
            max: o.max,
        };
        let body = match self.ctx.options.property_order {
            PropertyOrder::Schema => self.ordered(&parts, depth)?,
            PropertyOrder::Any => self.any_order(&parts, depth)?,
        };
        Ok(self.layout.container(depth, '{', '}', body, allow_empty))
    }

    /// Members whose key is not declared (with their witness variants).
    fn extra_member(
        &mut self,
        o: &ObjectSet,
        some: &[crate::ir::Exists],
        child: u32,
    ) -> Result<Member, SchemaError> {
        // With no member required to exist there are no witness variants, and the rest
        // depends only on these.
        let cache_key = some.is_empty().then(|| ExtraKey {
            declared: o.props.iter().map(|(k, _)| k.clone()).collect(),
            rules: o.rules.clone(),
            names: o.names.clone(),
            depth: self.layout.depth_key(child),
        });
        if let Some(&rule) = cache_key.as_ref().and_then(|k| self.extra_rules.get(k)) {
            return Ok(Member {
                required: false,
                expr: rule.map(Expr::rule),
                witnesses: Vec::new(),
            });
        }
        let pointer = self.pointer.clone();
        let regions = self.regions(o)?;
        let mut alts = Vec::new();
        let mut witnesses: Vec<(u32, Vec<Expr>)> =
            (1u32..(1 << some.len())).map(|m| (m, Vec::new())).collect();
        for Region { keys, value } in regions {
            if keys.is_nothing() || value == Node::Nothing {
                continue;
            }
            let key = self.key_of(&keys)?;
            let v = self.emit(&value, child)?;
            alts.push(Expr::seq(vec![key, self.layout.key_sep(), v]));
            let expression = if witnesses.is_empty() {
                None
            } else {
                keys.expression()
            };
            for (mask, exprs) in witnesses.iter_mut() {
                let Some(keys) = &expression else {
                    self.unsupported(
                        "not",
                        "keys of a member required to exist among keys whose expression is past the budget",
                    )?;
                    break;
                };
                let mut langs = vec![keys.as_ref().clone()];
                let mut v = value.clone();
                for (j, e) in some.iter().enumerate() {
                    if *mask & (1 << j) != 0 {
                        langs.push((*e.keys).clone());
                        v = self.ctx.meet(&v, &e.value, &pointer)?;
                    }
                }
                if v == Node::Nothing {
                    continue;
                }
                let witness_keys = match dfa::intersect_all(&langs) {
                    Ok(k) => k,
                    Err(e) => {
                        self.unsupported(
                            "not",
                            format!("keys of a member required to exist: {e}"),
                        )?;
                        continue;
                    }
                };
                if witness_keys.is_nothing() || dfa::is_empty(&witness_keys).unwrap_or(false) {
                    continue;
                }
                let value = self.emit(&v, child)?;
                exprs.push(Expr::seq(vec![
                    string_of(&witness_keys, self.ctx.options.escapes, &pointer)?,
                    self.layout.key_sep(),
                    value,
                ]));
            }
        }
        let rule = if alts.is_empty() {
            None
        } else {
            Some(self.fresh_rule("member-other", Expr::alt(alts))?)
        };
        if let Some(key) = cache_key {
            self.extra_rules.insert(key, rule);
        }
        let expr = rule.map(Expr::rule);
        let mut ws = Vec::new();
        for (mask, exprs) in witnesses {
            if !exprs.is_empty() {
                ws.push((
                    mask,
                    Expr::rule(self.fresh_rule("member-witness", Expr::alt(exprs))?),
                ));
            }
        }
        Ok(Member {
            required: false,
            expr,
            witnesses: ws,
        })
    }

    /// Undeclared keys, partitioned by the rules that apply to them, each part with its value
    /// schema.
    fn regions(&mut self, o: &ObjectSet) -> Result<Vec<Region>, SchemaError> {
        let declared: Vec<String> = o.props.iter().map(|(k, _)| k.clone()).collect();
        // Rules over the same keys (one pattern under several `allOf` branches) are one
        // rule, their values met.
        let mut rules: Vec<KeyRule> = Vec::new();
        for r in o.rules.iter().filter(|r| r.value != Node::Any) {
            match rules.iter_mut().find(|known| known.keys == r.keys) {
                Some(known) => {
                    let pointer = self.pointer.clone();
                    known.value = self.ctx.meet(&known.value, &r.value, &pointer)?;
                }
                None => rules.push(r.clone()),
            }
        }
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
            if names.is_empty() {
                return Ok(vec![Region::all_but(declared, Node::Any)]);
            }
            let keys = restrict(self, Re::not_in(&declared))?;
            return Ok(vec![Region::of(keys, Node::Any)]);
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
                    let mut out = vec![if names.is_empty() {
                        Region::all_but(excluded, rule.value.clone())
                    } else {
                        Region::of(restrict(self, Re::not_in(&excluded))?, rule.value.clone())
                    }];
                    if !freed.is_empty() {
                        out.push(Region::of(
                            restrict(self, Re::one_of_strings(&freed))?,
                            Node::Any,
                        ));
                    }
                    return Ok(out);
                }
            }
        }
        if rules.len() > MAX_KEY_RULES {
            self.unsupported("patternProperties", format!("more than {MAX_KEY_RULES} patternProperties/additionalProperties rules on one object"))?;
            let keys = restrict(self, Re::not_in(&declared))?;
            return Ok(vec![Region::of(keys, Node::Any)]);
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
            .map(|re| as_automaton(&re))
            .collect();
        let names: Vec<Re> = names.iter().map(as_automaton).collect();
        let negated: Vec<bool> = rules
            .iter()
            .map(|r| matches!(r.keys, KeySet::Other { .. }))
            .collect();
        let Some(masks) = key_rule_masks(&names, &langs, &negated) else {
            self.unsupported("patternProperties", format!("more than {MAX_KEY_REGIONS} sets of patternProperties/additionalProperties rules that keys of one object may be in"))?;
            let keys = restrict(self, Re::not_in(&declared))?;
            return Ok(vec![Region::of(keys, Node::Any)]);
        };
        let mut out = Vec::new();
        for mask in masks {
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
            let automaton = if inside.is_empty() {
                Ok(region)
            } else {
                region.intersect(
                    &dfa::Dfa::from_re(&Re::not_in(&inside)).map_err(|e| self.too_complex(&e))?,
                )
            }
            .map(|d| d.minimize());
            match automaton {
                Ok(automaton) => out.push(Region {
                    keys: Keys::Automaton(automaton),
                    value,
                }),
                Err(e) => self.unsupported(
                    "patternProperties",
                    format!("keys of patternProperties/additionalProperties: {e}"),
                )?,
            }
        }
        Ok(out)
    }

    /// The JSON text of a key in `keys`: every key but some as a graph of their trie, the
    /// expression, or the graph of the automaton when that is smaller. Regions cut by
    /// patterns and declared keys have small automata whose expressions repeat the large
    /// spelling of "any other character" (raw multi-byte characters, escapes) once per path:
    /// 12,000 NFA states, 2 ms to build at the first key of each object, where the graph
    /// spells it once per state. The expression is rebuilt only as far as it could still be
    /// chosen: a `^[0-9a-z_-]{1,255}$` key would take 10 ms to pass its own budget.
    fn key_of(&self, keys: &Keys) -> Result<Expr, SchemaError> {
        let escapes = self.ctx.options.escapes;
        let automaton = match keys {
            Keys::AllBut(words) => {
                return Ok(Expr::graph(json_text::quoted_not_in(words, escapes)?));
            }
            Keys::Expression(re) => return string_of(re, escapes, &self.pointer),
            Keys::Automaton(a) => a,
        };
        let graph = Expr::graph(json_text::quoted_graph(automaton, escapes)?);
        // The graph spells each transition once, the expression each class it holds once, in
        // as many NFA states: an expression of more nodes than twice the transitions (with
        // room for the pieces state elimination builds on the way) would lose to the graph.
        let chosen_up_to = MAX_KEY_EXPRESSION_SIZE.max(automaton.size().saturating_mul(4));
        let Ok(re) = automaton.to_re_within(chosen_up_to) else {
            return Ok(graph);
        };
        // Counted far enough to compare: past a million, either is too large anyway.
        let size = |e: &Expr| e.nfa_size_estimate(1 << 20);
        let g = size(&graph);
        let expr = string_of(&re, escapes, &self.pointer)?;
        Ok(match (size(&expr), g) {
            (Some(e), Some(g)) if e > MAX_KEY_EXPRESSION_SIZE && g < e / 2 => graph,
            _ => expr,
        })
    }

    fn too_complex(&self, e: &dfa::TooLarge) -> SchemaError {
        e.clone()
            .into_error(crate::error::pointer_or_root(&self.pointer))
    }

    /// Count states: members so far, saturated where the count no longer matters.
    fn count_cap(min: u64, max: Option<u64>) -> u64 {
        max.unwrap_or(min.max(1))
    }

    fn check_states(&self, states: usize, what: &str) -> Result<(), SchemaError> {
        if states > MAX_OBJECT_STATES {
            return Err(SchemaError::TooComplex {
                pointer: crate::error::pointer_or_root(&self.pointer),
                what: what.into(),
                limit: MAX_OBJECT_STATES,
            });
        }
        Ok(())
    }

    /// `here₁ then₁ | here₂ then₂ | ...`, written `(here₁ | here₂ | ...) then` where every
    /// way goes on with the same rule: inlined, the chain of an object's optional members
    /// then grows with their number, where `x R | R` would copy `R` at every member.
    fn factored(ways: Vec<(Expr, RuleId)>) -> Expr {
        match ways.first() {
            Some(&(_, then)) if ways.iter().all(|&(_, t)| t == then) => {
                let here = Expr::alt(ways.into_iter().map(|(here, _)| here).collect());
                Expr::seq(vec![here, Expr::rule(then)])
            }
            _ => Expr::alt(
                ways.into_iter()
                    .map(|(here, then)| Expr::seq(vec![here, Expr::rule(then)]))
                    .collect(),
            ),
        }
    }

    /// The ways `member` may come next: (witness bits gained, expression).
    fn variants(member: &Member) -> Vec<(u32, Expr)> {
        let mut v: Vec<(u32, Expr)> = member.expr.iter().map(|e| (0, e.clone())).collect();
        v.extend(member.witnesses.iter().cloned());
        v
    }

    /// Declared members in schema order, then undeclared ones; a non-empty sequence.
    fn ordered(&mut self, parts: &Parts, depth: u32) -> Result<Expr, SchemaError> {
        let (min, max) = (parts.min, parts.max);
        let p = parts.members.len();
        let cap = Self::count_cap(min, max) as usize;
        let sats = parts.full as usize + 1;
        self.check_states(
            (p + 1).saturating_mul(cap + 1).saturating_mul(sats),
            "minProperties/maxProperties counting",
        )?;
        let extra = Self::variants(&parts.extra);
        // With witnesses to collect, undeclared members come one at a time (else in one go).
        let one_at_a_time = parts.full != 0 || extra.len() > 1;
        if one_at_a_time && parts.extra.expr.is_some() && min >= 2 {
            // There undeclared members count like declared ones, but they could repeat a key.
            self.unsupported(
                "minProperties",
                "counting undeclared members next to required-member witnesses (they could repeat a key)",
            )?;
        }
        let sep = self.layout.item_sep(depth);
        let next = |k: usize| {
            if max.is_some() {
                k + 1
            } else {
                (k + 1).min(cap)
            }
        };
        // ids[i][k][sat]: members from index i on, k emitted before, witnesses `sat` seen.
        let mut ids: Vec<Vec<Vec<RuleId>>> = Vec::with_capacity(p + 1);
        for i in 0..=p {
            let mut row = Vec::with_capacity(cap + 1);
            for k in 0..=cap {
                let mut cell = Vec::with_capacity(sats);
                for sat in 0..sats {
                    cell.push(self.declare_rule(&format!("members-{i}-{k}-{sat}"))?);
                }
                row.push(cell);
            }
            ids.push(row);
        }
        for i in 0..=p {
            for k in 0..=cap {
                for sat in 0..sats {
                    let pre = if k > 0 { sep.clone() } else { Expr::empty() };
                    let can_grow = max.is_none_or(|m| (k as u64) < m);
                    let body = if i < p {
                        let member = &parts.members[i];
                        // (what comes here, the rule of what follows)
                        let mut ways = Vec::new();
                        if !member.required {
                            ways.push((Expr::empty(), ids[i + 1][k][sat]));
                        }
                        if can_grow {
                            for (bits, e) in Self::variants(member) {
                                let then = ids[i + 1][next(k)][sat | bits as usize];
                                ways.push((Expr::seq(vec![pre.clone(), e]), then));
                            }
                        }
                        Self::factored(ways)
                    } else if !one_at_a_time {
                        self.plain_extras(parts, k as u64, &sep)
                    } else {
                        // Undeclared members one at a time, until counts and witnesses are met
                        // (a minProperties of 2 or more that undeclared members would have to
                        // reach is refused by `object`, they could repeat a key).
                        let mut alts = Vec::new();
                        if k > 0 && (k as u64) >= min && sat == parts.full as usize {
                            alts.push(Expr::empty());
                        }
                        if can_grow {
                            for (bits, e) in &extra {
                                alts.push(Expr::seq(vec![
                                    pre.clone(),
                                    e.clone(),
                                    Expr::rule(ids[p][next(k)][sat | *bits as usize]),
                                ]));
                            }
                        }
                        Expr::alt(alts)
                    };
                    self.define(ids[i][k][sat], body);
                }
            }
        }
        Ok(Expr::rule(ids[0][0][0]))
    }

    /// The undeclared members after `k` members: `e` of them with `min ≤ k + e ≤ max`, at
    /// least one when nothing came before (the empty object is the container's business).
    ///
    /// Undeclared members may repeat a key, so toward `min` they count once: `min` needs at
    /// least `min - 1` declared members before them.
    fn plain_extras(&self, parts: &Parts, k: u64, sep: &Expr) -> Expr {
        let (min, max) = (parts.min, parts.max);
        let lo = min.saturating_sub(k).max(u64::from(k == 0));
        let hi = max.map(|m| m.saturating_sub(k));
        let Some(x) = &parts.extra.expr else {
            return if lo == 0 {
                Expr::empty()
            } else {
                Expr::nothing()
            };
        };
        if min.saturating_sub(k) >= 2 {
            return Expr::nothing();
        }
        if hi.is_some_and(|h| h < lo) {
            return Expr::nothing();
        }
        let lo32 = u32::try_from(lo).unwrap_or(u32::MAX);
        let hi32 = hi.map(|h| u32::try_from(h).unwrap_or(u32::MAX));
        if k == 0 {
            Expr::seq(vec![
                x.clone(),
                Expr::seq(vec![sep.clone(), x.clone()])
                    .repeat(lo32.saturating_sub(1), hi32.map(|h| h.saturating_sub(1))),
            ])
        } else {
            Expr::seq(vec![sep.clone(), x.clone()]).repeat(lo32, hi32)
        }
    }

    /// Declared members in any order (each at most once), mixed with undeclared ones.
    ///
    /// Without counts to keep or witnesses to collect this is the engine's
    /// [`Expr::Unordered`], expanded lazily for any number of members; otherwise the states
    /// (subsets of members, counts, witnesses) are spelled out here, for few members.
    fn any_order(&mut self, parts: &Parts, depth: u32) -> Result<Expr, SchemaError> {
        let (min, max) = (parts.min, parts.max);
        let required = parts.members.iter().filter(|m| m.required).count() as u64;
        if parts.full == 0 && max.is_none() && min <= required.max(1) {
            return Ok(Expr::unordered(Unordered {
                members: parts
                    .members
                    .iter()
                    .map(|m| UnorderedMember {
                        expr: m.expr.clone().unwrap_or_else(Expr::nothing),
                        required: m.required,
                    })
                    .collect(),
                extra: parts.extra.expr.clone(),
                separator: self.layout.item_sep(depth),
                allow_empty: false,
            }));
        }
        let p = parts.members.len();
        let limit = self.ctx.options.max_any_order_properties as usize;
        let cap = Self::count_cap(min, max) as usize;
        let sats = parts.full as usize + 1;
        let too_many = if p > limit || p > 20 {
            Some(format!("the limit is {limit}"))
        } else {
            let states = (1usize << p).saturating_mul(cap + 1).saturating_mul(sats);
            (states > MAX_OBJECT_STATES).then(|| format!("more than {MAX_OBJECT_STATES} states"))
        };
        if let Some(why) = too_many {
            // Schema order is a subset of the valid documents: narrower, never wrong.
            let pointer = self.pointer.clone();
            self.ctx.warn(
                &pointer,
                "properties",
                WarningKind::Narrowed,
                format!(
                    "{p} declared properties counted in any order ({why}): kept in schema order"
                ),
            );
            return self.ordered(parts, depth);
        }
        let sep = self.layout.item_sep(depth);
        let required: usize = parts
            .members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.required)
            .map(|(i, _)| 1 << i)
            .sum();
        let next = |k: usize| {
            if max.is_some() {
                k + 1
            } else {
                (k + 1).min(cap)
            }
        };
        let mut ids = vec![vec![Vec::with_capacity(sats); cap + 1]; 1 << p];
        for (mask, row) in ids.iter_mut().enumerate() {
            for (k, cell) in row.iter_mut().enumerate() {
                for sat in 0..sats {
                    cell.push(self.declare_rule(&format!("any-{mask}-{k}-{sat}"))?);
                }
            }
        }
        let extra = Self::variants(&parts.extra);
        for mask in 0..(1usize << p) {
            for k in 0..=cap {
                for sat in 0..sats {
                    let mut alts = Vec::new();
                    // Undeclared members may repeat a key: toward `min` they count once.
                    let declared = mask.count_ones() as usize;
                    let distinct = declared + usize::from(k > declared);
                    if k > 0
                        && mask & required == required
                        && (distinct as u64) >= min
                        && sat == parts.full as usize
                    {
                        alts.push(Expr::empty());
                    }
                    if max.is_none_or(|m| (k as u64) < m) {
                        let pre = if k > 0 { sep.clone() } else { Expr::empty() };
                        for (j, m) in parts.members.iter().enumerate() {
                            if mask & (1 << j) == 0 {
                                for (bits, e) in Self::variants(m) {
                                    alts.push(Expr::seq(vec![
                                        pre.clone(),
                                        e,
                                        Expr::rule(
                                            ids[mask | (1 << j)][next(k)][sat | bits as usize],
                                        ),
                                    ]));
                                }
                            }
                        }
                        for (bits, e) in &extra {
                            alts.push(Expr::seq(vec![
                                pre.clone(),
                                e.clone(),
                                Expr::rule(ids[mask][next(k)][sat | *bits as usize]),
                            ]));
                        }
                    }
                    self.define(ids[mask][k][sat], Expr::alt(alts));
                }
            }
        }
        Ok(Expr::rule(ids[0][0][0]))
    }
}
