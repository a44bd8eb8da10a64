//! `uniqueItems` over elements no grammar can keep apart: arrays of strings from a language
//! that never runs out (`{"type": "string"}`, a pattern without a length bound), or of any
//! JSON values at all (no `items`). Distinct elements are not a context-free language, so the
//! grammar generates the array without the constraint and a check beside the automaton
//! ([`check::UniqueCheck`]) refuses a token that would end an element equal to an earlier
//! one, equal as JSON Schema compares values (numbers by value, objects in any key order).
//!
//! The check follows the JSON text, so it must know, from where a value stands (the keys
//! and positions that lead to it), whether an array there is one whose elements must differ.
//! [`Shapes`] answers that: a deterministic automaton over keys and positions whose states
//! are sets of the schema's nodes a value there may belong to, explored from the root. A
//! key not declared by a node leads to every value its rules allow: more nodes than the key
//! may meet, never fewer. Where a set holds an array that must be unique and one that need
//! not be (an `anyOf` of both under one key), which applies depends on more than the path,
//! and the schema is refused; where every array of a set must be unique, the check applies
//! exactly.
//!
//! Refusing never corners the output. Each string language never runs out, so refusing the
//! closing quote of a repeated string leaves endlessly many different strings. Among any
//! values, every prefix of a number, a string or a container has endlessly many different
//! completions (`1` goes on as `12`, `[1` as `[1, 2]`); only `true`, `false` and `null` are
//! one value from their first letter, and a zero from its exponent (`0e`, `-0.0E+`), so the
//! check refuses that byte where the value is already an element.

pub(crate) mod check;

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::ctx::{Ctx, Fail};
use crate::error::SchemaError;
use crate::ir::{ArraySet, KeySet, Lit, Node, ObjectSet, StringSet};
use crate::re::dfa::{self, Dfa};
use crate::re::Re;
use crate::strings::{string_language, StringLanguage};
use serde_json::Value;

/// What `uniqueItems` is enforced on, for errors.
pub(crate) const UNIQUE_ITEMS_SUPPORT: &str = "only arrays of any values (no items schema), of strings that never run out (no maxLength, no pattern or format of bounded length), or of values from a small finite set (enum, boolean, null), can be kept unique, with leading positions (prefixItems) of those or of more booleans and nulls than positions before them, and without contains";

/// Most states of the automaton of shapes of one schema.
const MAX_SHAPES: usize = 4_096;

/// A shape with nothing to check at or below it.
pub(crate) const NONE: u32 = u32::MAX;

/// Where a value stands, as far as uniqueness goes: where its keys and positions lead, and
/// whether an array here keeps its elements distinct.
#[derive(Debug, Default)]
pub(crate) struct Shape {
    /// The shape of the value under each key some node declares.
    pub(crate) keys: FxHashMap<String, u32>,
    /// The shape of the value under any other key.
    pub(crate) other_key: u32,
    /// The shapes of the leading positions of an array.
    pub(crate) prefix: Vec<u32>,
    /// The shape of the other positions.
    pub(crate) items: u32,
    /// Whether an array here must hold distinct elements (strings that never run out, or
    /// any values).
    pub(crate) unique: bool,
}

/// The automaton of shapes; state 0 is the document's value.
#[derive(Debug)]
pub(crate) struct Shapes {
    pub(crate) shapes: Vec<Shape>,
}

/// Most values of a small finite set whose distinct arrays the grammar spells itself (a
/// rule per subset of them).
pub(crate) const MAX_GRAMMAR_UNIQUE_VALUES: usize = 12;

/// Whether the elements of arrays of `a` must differ and only the check can see to it: the
/// grammar spells the distinct arrays of a small finite set of values itself.
pub(crate) fn needs_check(ctx: &mut Ctx<'_>, a: &ArraySet) -> Result<bool, Fail> {
    if !a.unique || a.max.is_some_and(|m| m <= 1) {
        return Ok(false);
    }
    if !a.prefix.is_empty() || !a.contains.is_empty() {
        return Ok(true);
    }
    Ok(finite_values(ctx, &a.items)?.is_none_or(|v| v.len() > MAX_GRAMMAR_UNIQUE_VALUES))
}

/// The values of `node` if it is a finite set.
pub(crate) fn finite_values(ctx: &mut Ctx<'_>, node: &Node) -> Result<Option<Vec<Lit>>, Fail> {
    let node = ctx.expand(node)?;
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
                match finite_values(ctx, p)? {
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

/// The shapes of `root`, with the places of arrays that need the check marked unique.
/// Errors name `pointer` (where the emitter first left an array to the check) when a set
/// mixes arrays that must be unique with arrays that need not be, or unique arrays whose
/// elements are not strings.
pub(crate) fn shapes(ctx: &mut Ctx<'_>, root: &Node, pointer: &str) -> Result<Shapes, SchemaError> {
    let refuse = |reason: &str| SchemaError::Unsupported {
        keyword: "uniqueItems".into(),
        pointer: crate::error::pointer_or_root(pointer),
        reason: reason.into(),
    };
    let mut explorer = Explorer {
        ctx,
        index: FxHashMap::default(),
        sets: Vec::new(),
    };
    let start = explorer.state(std::slice::from_ref(root))?;
    let mut shapes: Vec<Shape> = Vec::new();
    let mut next = start as usize;
    while next < explorer.sets.len() {
        if explorer.sets.len() > MAX_SHAPES {
            return Err(SchemaError::TooComplex {
                pointer: crate::error::pointer_or_root(pointer),
                what: "places in the document where unique arrays are told apart".into(),
                limit: MAX_SHAPES,
            });
        }
        let set = explorer.sets[next].clone();
        next += 1;
        let mut shape = Shape::default();
        // Objects: a child per declared key, one for the rest.
        let mut names: Vec<String> = Vec::new();
        for node in &set {
            if let Some(o) = object_of(node) {
                for (k, _) in &o.props {
                    if !names.contains(k) {
                        names.push(k.clone());
                    }
                }
            }
        }
        for name in names {
            let children: Vec<Node> = set
                .iter()
                .flat_map(|node| match object_of(node) {
                    Some(o) => match o.prop(&name) {
                        Some(value) => vec![value.clone()],
                        None => undeclared_values(o),
                    },
                    None => open_values(node),
                })
                .collect();
            shape.keys.insert(name, explorer.state(&children)?);
        }
        let others: Vec<Node> = set
            .iter()
            .flat_map(|node| match object_of(node) {
                Some(o) => undeclared_values(o),
                None => open_values(node),
            })
            .collect();
        shape.other_key = explorer.state(&others)?;
        // Arrays: a child per leading position, one for the rest.
        let leading = set
            .iter()
            .filter_map(array_of)
            .map(|a| a.prefix.len())
            .max()
            .unwrap_or(0);
        for i in 0..leading {
            let children: Vec<Node> = set
                .iter()
                .flat_map(|node| match array_of(node) {
                    Some(a) => vec![a.item(i).clone()],
                    None => open_values(node),
                })
                .collect();
            shape.prefix.push(explorer.state(&children)?);
        }
        let items: Vec<Node> = set
            .iter()
            .flat_map(|node| match array_of(node) {
                Some(a) => vec![a.items.clone()],
                None => open_values(node),
            })
            .collect();
        shape.items = explorer.state(&items)?;
        // Uniqueness: all arrays of the set, or none.
        let mut checked = false;
        for node in &set {
            if let Some(a) = array_of(node) {
                checked |= needs_check(explorer.ctx, a).map_err(fail_error)?;
            }
        }
        if checked {
            for node in &set {
                let unique = match node {
                    Node::Typed(t) => match &t.array {
                        Some(a) => a.unique,
                        None => continue,
                    },
                    Node::Nothing => continue,
                    Node::Const(values) if values.iter().all(|v| !v.value.is_array()) => continue,
                    _ => false,
                };
                if !unique {
                    return Err(refuse("an array here may be one that must keep its elements distinct or one that need not, depending on more than where it stands"));
                }
            }
            for node in &set {
                if let Some(a) = array_of(node) {
                    if !check_can_keep_unique(explorer.ctx, a).map_err(fail_error)? {
                        return Err(refuse(UNIQUE_ITEMS_SUPPORT));
                    }
                }
            }
            shape.unique = true;
        }
        shapes.push(shape);
    }
    prune(&mut shapes);
    Ok(Shapes { shapes })
}

/// Whether the elements of `a` can be left to the check, which must never corner the
/// output (see the module documentation): with no `contains` counted beside them, every
/// position takes any value, strings from one language that never runs out, or (a leading
/// position) literals `true`, `false`, `null` more than the positions before it, so that one
/// of them is always new and the check refuses the others from their first letter.
pub(crate) fn check_can_keep_unique(ctx: &mut Ctx<'_>, a: &ArraySet) -> Result<bool, Fail> {
    if !a.contains.is_empty() {
        return Ok(false);
    }
    let mut explorer = Explorer {
        ctx,
        index: FxHashMap::default(),
        sets: Vec::new(),
    };
    for (before, node) in a.prefix.iter().enumerate() {
        if !explorer.never_cornered(node, Some(before))? {
            return Ok(false);
        }
    }
    explorer.never_cornered(&a.items, None)
}

/// Values of an object's undeclared keys: every rule's value, and any value where a key may
/// meet no rule (more than any one key meets).
fn undeclared_values(o: &ObjectSet) -> Vec<Node> {
    let mut values: Vec<Node> = o.rules.iter().map(|r| r.value.clone()).collect();
    if !o
        .rules
        .iter()
        .any(|r| matches!(r.keys, KeySet::Other { .. }))
    {
        values.push(Node::Any);
    }
    values
}

/// What a node that is not an object (or array) set says of the values inside a value:
/// nothing for `Nothing` and typed sets, anything for `Any` and literals.
fn open_values(node: &Node) -> Vec<Node> {
    match node {
        Node::Any | Node::Const(_) => vec![Node::Any],
        _ => Vec::new(),
    }
}

fn object_of(node: &Node) -> Option<&ObjectSet> {
    match node {
        Node::Typed(t) => t.object.as_ref(),
        _ => None,
    }
}

fn array_of(node: &Node) -> Option<&ArraySet> {
    match node {
        Node::Typed(t) => t.array.as_ref(),
        _ => None,
    }
}

/// Drops what leads to no unique array: the check follows such values without looking.
fn prune(shapes: &mut [Shape]) {
    let n = shapes.len();
    let mut relevant: Vec<bool> = shapes.iter().map(|s| s.unique).collect();
    loop {
        let mut changed = false;
        for i in 0..n {
            if relevant[i] {
                continue;
            }
            let s = &shapes[i];
            let leads = s
                .keys
                .values()
                .chain(std::iter::once(&s.other_key))
                .chain(s.prefix.iter())
                .chain(std::iter::once(&s.items))
                .any(|&c| c != NONE && relevant[c as usize]);
            if leads {
                relevant[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let keep = |c: u32| {
        if c != NONE && relevant[c as usize] {
            c
        } else {
            NONE
        }
    };
    for s in shapes.iter_mut() {
        for c in s.keys.values_mut() {
            *c = keep(*c);
        }
        s.keys.retain(|_, c| *c != NONE);
        s.other_key = keep(s.other_key);
        for c in s.prefix.iter_mut() {
            *c = keep(*c);
        }
        s.items = keep(s.items);
    }
}

/// Sets of nodes, numbered as they are met.
struct Explorer<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    index: FxHashMap<Vec<Node>, u32>,
    sets: Vec<Vec<Node>>,
}

impl Explorer<'_, '_> {
    /// The number of the set of `nodes` (references expanded, unions flattened).
    fn state(&mut self, nodes: &[Node]) -> Result<u32, SchemaError> {
        let mut set: Vec<Node> = Vec::new();
        let mut seen: FxHashSet<Node> = FxHashSet::default();
        let mut stack: Vec<Node> = nodes.iter().rev().cloned().collect();
        while let Some(node) = stack.pop() {
            let node = self.ctx.expand(&node).map_err(fail_error)?;
            match node {
                Node::Nothing => {}
                Node::AnyOf(parts) => stack.extend(parts.iter().rev().cloned()),
                other => {
                    if seen.insert(other.clone()) {
                        set.push(other);
                    }
                }
            }
        }
        // One order for equal sets.
        set.sort_by_cached_key(node_hash);
        if let Some(&id) = self.index.get(&set) {
            return Ok(id);
        }
        let id = self.sets.len() as u32;
        self.index.insert(set.clone(), id);
        self.sets.push(set);
        Ok(id)
    }

    /// Whether the check can keep the values of `node` apart from those before them without
    /// cornering the output: any values; strings that never run out; at a leading position
    /// with `before` positions ahead of it, more literals (`true`, `false`, `null`) than
    /// that; or no value at all.
    fn never_cornered(&mut self, node: &Node, before: Option<usize>) -> Result<bool, Fail> {
        match self.ctx.expand(node)? {
            Node::Any | Node::Nothing => return Ok(true),
            _ => {}
        }
        if let Some(before) = before {
            if let Some(values) = finite_values(self.ctx, node)? {
                let literals = values
                    .iter()
                    .all(|v| v.value.is_null() || v.value.is_boolean());
                if literals && values.len() > before {
                    return Ok(true);
                }
            }
        }
        Ok(self
            .strings_automaton(node)?
            .is_some_and(|strings| strings.never_runs_out()))
    }

    /// The strings of `node` as one automaton, when it holds strings only, each set of them
    /// generated exactly (not a subset) and without a `maxLength`; `None` otherwise.
    fn strings_automaton(&mut self, node: &Node) -> Result<Option<Dfa>, Fail> {
        let node = self.ctx.expand(node)?;
        if let Some(s) = node.only_strings() {
            return exact_strings(s).map_err(too_large);
        }
        Ok(match node {
            Node::Nothing => Some(Dfa::from_re(&Re::nothing()).map_err(too_large)?),
            Node::Const(values) => {
                let mut words = Vec::with_capacity(values.len());
                for v in values.iter() {
                    match v.value.as_str() {
                        Some(w) => words.push(Re::literal(w)),
                        None => return Ok(None),
                    }
                }
                Some(dfa::minimal_dfa(&Re::alt(words)).map_err(too_large)?)
            }
            Node::AnyOf(parts) => {
                let mut union: Option<Dfa> = None;
                for p in parts.iter() {
                    let Some(d) = self.strings_automaton(p)? else {
                        return Ok(None);
                    };
                    union = Some(match union {
                        None => d,
                        Some(u) => u.union(&d).map_err(too_large)?,
                    });
                }
                union
            }
            _ => None,
        })
    }
}

/// The automaton of the strings of `s`, if the grammar generates them exactly and they have
/// no upper length bound.
fn exact_strings(s: &StringSet) -> Result<Option<Dfa>, dfa::TooLarge> {
    if s.max_len.is_some() {
        return Ok(None);
    }
    if matches!(string_language(s)?, StringLanguage::Subset(_)) {
        return Ok(None);
    }
    let langs: Vec<Re> = s.langs.iter().map(|l| (**l).clone()).collect();
    let pattern = match langs.split_first() {
        Some((first, rest)) => dfa::intersection_automaton(first, rest)?,
        None => Dfa::from_re(&Re::any_string())?,
    };
    let min = u32::try_from(s.min_len).unwrap_or(u32::MAX);
    Ok(Some(if min == 0 {
        pattern
    } else {
        pattern.intersect(&dfa::at_least_dfa(min))?.minimize()
    }))
}

fn too_large(e: dfa::TooLarge) -> Fail {
    Fail::Error(e.into_error(String::new()))
}

fn fail_error(f: Fail) -> SchemaError {
    match f {
        Fail::Error(e) => e,
        Fail::InProgress(_) => SchemaError::TooComplex {
            pointer: String::new(),
            what: "a definition met again while being computed".into(),
            limit: 0,
        },
    }
}

fn node_hash(node: &Node) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    node.hash(&mut h);
    h.finish()
}

/// The check of a schema whose unique arrays need one, for [`constrain_engine::Grammar::with_text_check`].
pub(crate) fn text_check(shapes: Shapes) -> Arc<dyn constrain_engine::TextCheck> {
    Arc::new(check::UniqueCheck::new(shapes))
}
