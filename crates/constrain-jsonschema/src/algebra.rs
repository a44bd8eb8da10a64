//! The set algebra on [`Node`]s: intersection (`allOf`, siblings), complement (`not`,
//! `if`/`else`), exclusive union (`oneOf`) and emptiness.

use std::cmp::Ordering;
use std::rc::Rc;

use crate::ctx::{Ctx, Fail, MAX_BRANCHES};
use crate::error::{SchemaError, WarningKind};
use crate::ir::{
    ArraySet, Contains, Exists, KeyRule, KeySet, Lit, Node, NumberSet, ObjectSet, StringSet, Typed,
};
use crate::number::{compare, number_re, Bound, Decimal, Kind};
use crate::options::Numbers;
use crate::re::{dfa, Re};

/// Whether `set` allows no key but its declared ones (`additionalProperties: false`).
fn only_declared_keys(set: &ObjectSet) -> bool {
    set.rules.iter().any(|r| {
        r.value == Node::Nothing
            && matches!(&r.keys, KeySet::Other { names, langs }
                if langs.is_empty() && names.iter().all(|n| set.prop(n).is_some()))
    })
}

/// The larger of two lower bounds.
pub(crate) fn max_lo(a: Bound, b: Bound) -> Bound {
    match compare(&a.value, &b.value) {
        Ordering::Greater => a,
        Ordering::Less => b,
        Ordering::Equal => Bound {
            value: a.value,
            exclusive: a.exclusive || b.exclusive,
        },
    }
}

/// The smaller of two upper bounds.
pub(crate) fn min_hi(a: Bound, b: Bound) -> Bound {
    match compare(&a.value, &b.value) {
        Ordering::Less => a,
        Ordering::Greater => b,
        Ordering::Equal => Bound {
            value: a.value,
            exclusive: a.exclusive || b.exclusive,
        },
    }
}

fn opt_max_lo(a: &Option<Bound>, b: &Option<Bound>) -> Option<Bound> {
    match (a, b) {
        (Some(x), Some(y)) => Some(max_lo(x.clone(), y.clone())),
        (x, y) => x.clone().or_else(|| y.clone()),
    }
}

fn opt_min_hi(a: &Option<Bound>, b: &Option<Bound>) -> Option<Bound> {
    match (a, b) {
        (Some(x), Some(y)) => Some(min_hi(x.clone(), y.clone())),
        (x, y) => x.clone().or_else(|| y.clone()),
    }
}

fn opt_min(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

fn push_unique<T: PartialEq + Clone>(into: &mut Vec<T>, items: &[T]) {
    for i in items {
        if !into.contains(i) {
            into.push(i.clone());
        }
    }
}

/// Emptiness checks look this many definitions deep.
const EMPTY_DEPTH: usize = 6;

impl Ctx<'_> {
    pub(crate) fn fail_to_error(&self, f: Fail, pointer: &str) -> SchemaError {
        match f {
            Fail::Error(e) => e,
            Fail::InProgress(d) => SchemaError::Invalid {
                pointer: crate::error::pointer_or_root(&self.defs[d.0].pointer),
                message: format!(
                    "the schema refers to itself without progress (a $ref/allOf/not cycle), reached from {}",
                    crate::error::pointer_or_root(pointer)
                ),
            },
        }
    }

    /// The values in both `a` and `b`.
    pub(crate) fn meet(&mut self, a: &Node, b: &Node, pointer: &str) -> Result<Node, SchemaError> {
        self.burn(pointer)?;
        match (a, b) {
            (Node::Any, x) | (x, Node::Any) => Ok(x.clone()),
            (Node::Nothing, _) | (_, Node::Nothing) => Ok(Node::Nothing),
            _ if a == b => Ok(a.clone()),
            (Node::Const(values), other) | (other, Node::Const(values)) => {
                let mut kept = Vec::with_capacity(values.len());
                for lit in values.iter() {
                    match self.accepts(other, &lit.value) {
                        Ok(true) => kept.push(lit.clone()),
                        Ok(false) => {}
                        Err(Fail::InProgress(_)) => {
                            return Ok(Node::Ref(self.meet_def(a.clone(), b.clone(), pointer)?))
                        }
                        Err(Fail::Error(e)) => return Err(e),
                    }
                }
                Ok(if kept.is_empty() {
                    Node::Nothing
                } else {
                    Node::Const(crate::ir::Shared::new(kept))
                })
            }
            (Node::AnyOf(xs), Node::AnyOf(ys)) => {
                if xs.len() * ys.len() > MAX_BRANCHES {
                    return Err(SchemaError::TooComplex {
                        pointer: crate::error::pointer_or_root(pointer),
                        what: format!(
                            "alternatives of combined anyOf/oneOf ({} × {})",
                            xs.len(),
                            ys.len()
                        ),
                        limit: MAX_BRANCHES,
                    });
                }
                let mut out = Vec::new();
                for x in xs.iter() {
                    for y in ys.iter() {
                        out.push(self.meet(x, y, pointer)?);
                    }
                }
                Ok(Node::any_of(out))
            }
            (Node::AnyOf(xs), other) | (other, Node::AnyOf(xs)) => {
                let mut out = Vec::with_capacity(xs.len());
                for x in xs.iter() {
                    out.push(self.meet(x, other, pointer)?);
                }
                Ok(Node::any_of(out))
            }
            (Node::Ref(_), _) | (_, Node::Ref(_)) => {
                Ok(Node::Ref(self.meet_def(a.clone(), b.clone(), pointer)?))
            }
            (Node::Typed(x), Node::Typed(y)) => self.meet_typed(x, y, pointer),
        }
    }

    fn meet_typed(&mut self, x: &Typed, y: &Typed, pointer: &str) -> Result<Node, SchemaError> {
        let mut t = Typed {
            null: x.null && y.null,
            boolean: x.boolean && y.boolean,
            ..Typed::default()
        };
        if let (Some(a), Some(b)) = (&x.number, &y.number) {
            t.number = meet_numbers(a, b);
        }
        if let (Some(a), Some(b)) = (&x.string, &y.string) {
            t.string = meet_strings(a, b);
        }
        if let (Some(a), Some(b)) = (&x.array, &y.array) {
            t.array = self.meet_arrays(a, b, pointer)?;
        }
        if let (Some(a), Some(b)) = (&x.object, &y.object) {
            t.object = self.meet_objects(a, b, pointer)?;
        }
        Ok(Node::typed(t))
    }

    fn meet_arrays(
        &mut self,
        a: &ArraySet,
        b: &ArraySet,
        pointer: &str,
    ) -> Result<Option<ArraySet>, SchemaError> {
        let len = a.prefix.len().max(b.prefix.len());
        let mut prefix = Vec::with_capacity(len);
        for i in 0..len {
            prefix.push(self.meet(a.item(i), b.item(i), pointer)?);
        }
        let items = self.meet(&a.items, &b.items, pointer)?;
        let mut contains = a.contains.clone();
        push_unique(&mut contains, &b.contains);
        let mut evaluated = a.evaluated.clone();
        evaluated.prefix = evaluated.prefix.max(b.evaluated.prefix);
        evaluated.all |= b.evaluated.all;
        push_unique(&mut evaluated.contains, &b.evaluated.contains);
        let set = ArraySet {
            prefix,
            items,
            min: a.min.max(b.min),
            max: opt_min(a.max, b.max),
            contains,
            unique: a.unique || b.unique,
            evaluated,
            approximate: a.approximate || b.approximate,
        };
        Ok(normalize_array(set))
    }

    fn meet_objects(
        &mut self,
        a: &ObjectSet,
        b: &ObjectSet,
        pointer: &str,
    ) -> Result<Option<ObjectSet>, SchemaError> {
        let mut props = Vec::with_capacity(a.props.len() + b.props.len());
        for (k, n) in &a.props {
            let other = match b.prop(k) {
                Some(m) => m.clone(),
                None => self.rule_value(b, k, pointer)?,
            };
            props.push((k.clone(), self.meet(n, &other, pointer)?));
        }
        for (k, n) in &b.props {
            if a.prop(k).is_some() {
                continue;
            }
            let other = self.rule_value(a, k, pointer)?;
            props.push((k.clone(), self.meet(&other, n, pointer)?));
        }
        let mut rules = a.rules.clone();
        push_unique(&mut rules, &b.rules);
        let mut required = a.required.clone();
        push_unique(&mut required, &b.required);
        let mut names = a.names.clone();
        push_unique(&mut names, &b.names);
        let mut some = a.some.clone();
        push_unique(&mut some, &b.some);
        let mut evaluated = a.evaluated.clone();
        push_unique(&mut evaluated.names, &b.evaluated.names);
        push_unique(&mut evaluated.langs, &b.evaluated.langs);
        evaluated.all |= b.evaluated.all;
        let set = ObjectSet {
            props,
            rules,
            required,
            min: a.min.max(b.min),
            max: opt_min(a.max, b.max),
            names,
            some,
            evaluated,
            approximate: a.approximate || b.approximate,
        };
        self.normalize_object(set, pointer)
    }

    /// The schema the rules of `set` give to the undeclared key `key`.
    pub(crate) fn rule_value(
        &mut self,
        set: &ObjectSet,
        key: &str,
        pointer: &str,
    ) -> Result<Node, SchemaError> {
        let mut node = Node::Any;
        for rule in &set.rules {
            if self.key_in(&rule.keys, key)? {
                node = self.meet(&node, &rule.value, pointer)?;
            }
        }
        Ok(node)
    }

    pub(crate) fn key_in(&mut self, keys: &KeySet, key: &str) -> Result<bool, SchemaError> {
        match keys {
            KeySet::Lang(re) => self.lang_matches(re, key),
            KeySet::Other { names, langs } => {
                if names.iter().any(|n| n == key) {
                    return Ok(false);
                }
                for l in langs.iter() {
                    if self.lang_matches(l, key)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    /// Declares every required key (so emission sees it) and detects impossible sets.
    pub(crate) fn normalize_object(
        &mut self,
        mut set: ObjectSet,
        pointer: &str,
    ) -> Result<Option<ObjectSet>, SchemaError> {
        for k in set.required.clone() {
            if set.prop(&k).is_none() {
                let v = self.rule_value(&set, &k, pointer)?;
                set.props.push((k, v));
            }
        }
        if set
            .required
            .iter()
            .any(|k| set.prop(k) == Some(&Node::Nothing))
        {
            return Ok(None);
        }
        if only_declared_keys(&set) && !set.some.is_empty() {
            // A member that must exist with any value, under any key the object may have,
            // is any member: the object is not empty. (Left as a constraint, it is a state
            // bit of the object's grammar: a `oneOf` of closed objects that share `{}`
            // spelled every order of the members twice.)
            let mut kept = Vec::new();
            for e in std::mem::take(&mut set.some) {
                let mut any_member = e.value == Node::Any;
                for (name, node) in &set.props {
                    if any_member && *node != Node::Nothing {
                        any_member = self.lang_matches(&e.keys, name)?;
                    }
                }
                if any_member {
                    set.min = set.min.max(1);
                } else {
                    kept.push(e);
                }
            }
            set.some = kept;
        }
        if set
            .max
            .is_some_and(|m| set.min > m || (set.required.len() as u64) > m)
        {
            return Ok(None);
        }
        Ok(Some(set))
    }

    /// Exactly one of `parts` (each intersected with `base`).
    pub(crate) fn one_of(
        &mut self,
        base: &Node,
        parts: Vec<Node>,
        pointer: &str,
    ) -> Result<Node, SchemaError> {
        let mut branches = Vec::with_capacity(parts.len());
        for p in &parts {
            let b = self.meet(base, p, pointer)?;
            if !self.is_empty(&b, 0) {
                branches.push(b);
            }
        }
        if branches.len() <= 1 {
            return Ok(Node::any_of(branches));
        }
        let n = branches.len();
        // Per branch: the branches it may overlap with, and their intersection.
        let mut overlaps: Vec<Vec<(usize, Node)>> = vec![Vec::new(); n];
        let mut any_overlap = None;
        for i in 0..n {
            for j in i + 1..n {
                let both = self.meet(&branches[i], &branches[j], pointer)?;
                if !self.is_empty(&both, 0) {
                    overlaps[i].push((j, both.clone()));
                    overlaps[j].push((i, both));
                    any_overlap.get_or_insert((i, j));
                }
            }
        }
        let Some((i0, j0)) = any_overlap else {
            return Ok(Node::any_of(branches));
        };
        // Exact: each branch minus the branches it may overlap with, where they overlap.
        let mut exact = Vec::with_capacity(n);
        for i in 0..n {
            let mut x = branches[i].clone();
            for (j, both) in std::mem::take(&mut overlaps[i]) {
                let subtracted = match self.restricted_to_shared_types(&both, &branches[j], pointer)
                {
                    Ok(part) => part,
                    Err(e) => match exceeded(&e) {
                        Some(what) => {
                            return self.one_of_fallback(branches, pointer, i0, j0, &what)
                        }
                        None => return Err(e),
                    },
                };
                let not_j = match self.complement(&subtracted, pointer) {
                    Ok(c) => c,
                    Err(SchemaError::Unsupported { reason, .. }) => {
                        return self.one_of_fallback(branches, pointer, i0, j0, &reason);
                    }
                    Err(e) => match exceeded(&e) {
                        Some(what) => {
                            return self.one_of_fallback(branches, pointer, i0, j0, &what)
                        }
                        None => return Err(e),
                    },
                };
                x = match self.meet(&x, &not_j, pointer) {
                    Ok(x) => x,
                    Err(e) => match exceeded(&e) {
                        Some(what) => {
                            return self.one_of_fallback(branches, pointer, i0, j0, &what)
                        }
                        None => return Err(e),
                    },
                };
            }
            exact.push(x);
        }
        Ok(Node::any_of(exact))
    }

    /// Branch `b` restricted to the JSON types of `both`, its intersection with the branch it
    /// is subtracted from.
    ///
    /// Branches without a `type` keyword overlap in every type the other leaves open (two
    /// object schemas both accept every string): subtracting all of `b` from `a` would spell
    /// out the complement of `b`'s object constraints where only its strings were shared.
    fn restricted_to_shared_types(
        &mut self,
        both: &Node,
        b: &Node,
        pointer: &str,
    ) -> Result<Node, SchemaError> {
        let mut shared = [false; 6];
        for (k, slot) in shared.iter_mut().enumerate() {
            let mut one = [false; 6];
            one[k] = true;
            let part = self.meet(both, &Node::typed(Typed::of_types(one)), pointer)?;
            *slot = !self.is_empty(&part, 0);
        }
        if shared.iter().all(|&s| s) {
            return Ok(b.clone());
        }
        self.meet(b, &Node::typed(Typed::of_types(shared)), pointer)
    }

    fn one_of_fallback(
        &mut self,
        branches: Vec<Node>,
        pointer: &str,
        i: usize,
        j: usize,
        reason: &str,
    ) -> Result<Node, SchemaError> {
        let message =
            format!("branches {i} and {j} may both match and cannot be separated ({reason})");
        if self.options.lenient {
            self.warn(
                pointer,
                "oneOf",
                WarningKind::OneOfAsAnyOf,
                format!("{message}: compiled as anyOf"),
            );
            return Ok(Node::any_of(branches));
        }
        Err(SchemaError::Unsupported {
            keyword: "oneOf".into(),
            pointer: crate::error::pointer_or_root(pointer),
            reason: message,
        })
    }

    /// Whether `node` provably accepts nothing (`false` when unsure).
    pub(crate) fn is_empty(&mut self, node: &Node, depth: usize) -> bool {
        if depth > EMPTY_DEPTH || self.burn("").is_err() {
            return false;
        }
        match node {
            Node::Nothing => true,
            Node::Any | Node::Const(_) => false,
            Node::AnyOf(parts) => parts.iter().all(|p| self.is_empty(p, depth)),
            Node::Ref(d) => match self.body(*d) {
                Ok(b) => self.is_empty(&b, depth + 1),
                Err(_) => false,
            },
            Node::Typed(t) => {
                if t.null || t.boolean {
                    return false;
                }
                if let Some(n) = &t.number {
                    if !number_set_empty(n) {
                        return false;
                    }
                }
                if let Some(s) = &t.string {
                    // Subset languages prove nothing: their supersets do.
                    let langs = s
                        .langs
                        .iter()
                        .map(|l| {
                            self.subset_langs
                                .get(l)
                                .cloned()
                                .unwrap_or_else(|| l.clone())
                        })
                        .collect();
                    if !string_set_empty(&StringSet { langs, ..s.clone() }) {
                        return false;
                    }
                }
                if let Some(a) = &t.array {
                    let empty = (0..a.min.min(a.prefix.len() as u64 + 1) as usize)
                        .any(|i| self.is_empty(a.item(i), depth + 1))
                        || a.contains
                            .iter()
                            .any(|c| c.min > 0 && self.is_empty(&c.node, depth + 1));
                    if !empty {
                        return false;
                    }
                }
                if let Some(o) = &t.object {
                    let required: Vec<Node> = o
                        .required
                        .iter()
                        .filter_map(|k| o.prop(k).cloned())
                        .collect();
                    if !required.iter().any(|n| self.is_empty(n, depth + 1)) {
                        return false;
                    }
                }
                true
            }
        }
    }

    /// The values not in `node`.
    pub(crate) fn complement(&mut self, node: &Node, pointer: &str) -> Result<Node, SchemaError> {
        self.burn(pointer)?;
        match node {
            Node::Any => Ok(Node::Nothing),
            Node::Nothing => Ok(Node::Any),
            Node::Ref(_) => Ok(Node::Ref(self.not_def(node.clone(), pointer)?)),
            Node::AnyOf(parts) => {
                let mut acc = Node::Any;
                for p in parts.iter() {
                    let c = self.complement(p, pointer)?;
                    acc = self.meet(&acc, &c, pointer)?;
                }
                Ok(acc)
            }
            Node::Const(values) => self.complement_const(values, pointer),
            Node::Typed(t) => self.complement_typed(t, pointer),
        }
    }

    fn unsupported_not(&self, pointer: &str, what: &str) -> SchemaError {
        SchemaError::Unsupported {
            keyword: "not".into(),
            pointer: crate::error::pointer_or_root(pointer),
            reason: format!("the complement of {what} cannot be expressed"),
        }
    }

    fn complement_typed(&mut self, t: &Typed, pointer: &str) -> Result<Node, SchemaError> {
        let mut parts = Vec::new();
        let mut full = Typed {
            null: !t.null,
            boolean: !t.boolean,
            ..Typed::default()
        };
        match &t.number {
            None => full.number = Some(NumberSet::default()),
            Some(n) => {
                for piece in complement_number(n) {
                    parts.push(Node::typed(Typed {
                        number: Some(piece),
                        ..Typed::default()
                    }));
                }
            }
        }
        match &t.string {
            None => full.string = Some(StringSet::default()),
            Some(s) => {
                for piece in self.complement_string(s, pointer)? {
                    parts.push(Node::typed(Typed {
                        string: Some(piece),
                        ..Typed::default()
                    }));
                }
            }
        }
        match &t.array {
            None => full.array = Some(ArraySet::default()),
            Some(a) => {
                for piece in self.complement_array(a, pointer)? {
                    parts.push(Node::typed(Typed {
                        array: Some(piece),
                        ..Typed::default()
                    }));
                }
            }
        }
        match &t.object {
            None => full.object = Some(ObjectSet::default()),
            Some(o) => {
                for piece in self.complement_object(o, pointer)? {
                    parts.push(Node::typed(Typed {
                        object: Some(piece),
                        ..Typed::default()
                    }));
                }
            }
        }
        parts.insert(0, Node::typed(full));
        Ok(Node::any_of(parts))
    }

    fn complement_string(
        &mut self,
        s: &StringSet,
        pointer: &str,
    ) -> Result<Vec<StringSet>, SchemaError> {
        let mut out = Vec::new();
        if s.min_len > 0 {
            out.push(StringSet {
                max_len: Some(s.min_len - 1),
                ..StringSet::default()
            });
        }
        if let Some(m) = s.max_len {
            out.push(StringSet {
                min_len: m.saturating_add(1),
                ..StringSet::default()
            });
        }
        for l in &s.langs {
            if self.subset_langs.contains_key(l) {
                return Err(self.unsupported_not(pointer, "a format enforced on a subset of its strings (date-time, time, email, hostname)"));
            }
            let c = match self.complements.get(l) {
                Some(known) => known.clone(),
                None => {
                    let c = dfa::complement(l).map(Rc::new);
                    self.complements.insert(l.clone(), c.clone());
                    c
                }
            }
            .map_err(|e| SchemaError::Unsupported {
                keyword: "not".into(),
                pointer: crate::error::pointer_or_root(pointer),
                reason: format!("complement of a pattern: {e}"),
            })?;
            out.push(StringSet {
                langs: vec![c],
                ..StringSet::default()
            });
        }
        Ok(out)
    }

    fn complement_array(
        &mut self,
        a: &ArraySet,
        pointer: &str,
    ) -> Result<Vec<ArraySet>, SchemaError> {
        if a.unique {
            return Err(self.unsupported_not(pointer, "uniqueItems"));
        }
        if a.approximate {
            return Err(self.unsupported_not(
                pointer,
                "an array whose unevaluatedItems depend on which anyOf branches match",
            ));
        }
        let mut out = Vec::new();
        if a.min > 0 {
            out.push(ArraySet {
                max: Some(a.min - 1),
                ..ArraySet::default()
            });
        }
        if let Some(m) = a.max {
            out.push(ArraySet {
                min: m.saturating_add(1),
                ..ArraySet::default()
            });
        }
        for (i, p) in a.prefix.iter().enumerate() {
            if *p == Node::Any {
                continue;
            }
            let mut prefix = vec![Node::Any; i];
            prefix.push(self.complement(p, pointer)?);
            out.push(ArraySet {
                prefix,
                min: i as u64 + 1,
                ..ArraySet::default()
            });
        }
        if a.items != Node::Any {
            if !a.prefix.is_empty() {
                return Err(self.unsupported_not(pointer, "items after prefixItems"));
            }
            let c = self.complement(&a.items, pointer)?;
            out.push(ArraySet {
                contains: vec![Contains {
                    node: c,
                    min: 1,
                    max: None,
                }],
                ..ArraySet::default()
            });
        }
        for c in &a.contains {
            if c.min > 0 {
                out.push(ArraySet {
                    contains: vec![Contains {
                        node: c.node.clone(),
                        min: 0,
                        max: Some(c.min - 1),
                    }],
                    ..ArraySet::default()
                });
            }
            if let Some(m) = c.max {
                out.push(ArraySet {
                    contains: vec![Contains {
                        node: c.node.clone(),
                        min: m + 1,
                        max: None,
                    }],
                    ..ArraySet::default()
                });
            }
        }
        Ok(out)
    }

    fn complement_object(
        &mut self,
        o: &ObjectSet,
        pointer: &str,
    ) -> Result<Vec<ObjectSet>, SchemaError> {
        if o.approximate {
            return Err(self.unsupported_not(
                pointer,
                "an object whose unevaluatedProperties depend on which anyOf branches match",
            ));
        }
        let mut out = Vec::new();
        let declared: Vec<String> = o.props.iter().map(|(k, _)| k.clone()).collect();
        // A rule is broken by an undeclared key of its set with a value outside its schema.
        for rule in &o.rules {
            if rule.value == Node::Any {
                continue;
            }
            let keys = match &rule.keys {
                KeySet::Lang(re) => {
                    dfa::difference(&[(**re).clone()], &[Re::one_of_strings(&declared)])
                }
                KeySet::Other { names, langs } => {
                    let mut excluded: Vec<Re> = langs.iter().map(|l| (**l).clone()).collect();
                    let mut all_names = declared.clone();
                    all_names.extend(names.iter().cloned());
                    excluded.push(Re::one_of_strings(&all_names));
                    dfa::difference(&[], &excluded)
                }
            };
            let keys = keys
                .and_then(|d| d.to_re())
                .map_err(|e| SchemaError::Unsupported {
                    keyword: "not".into(),
                    pointer: crate::error::pointer_or_root(pointer),
                    reason: format!("complement of additionalProperties/patternProperties: {e}"),
                })?;
            let value = self.complement(&rule.value, pointer)?;
            out.push(ObjectSet {
                some: vec![Exists {
                    keys: Rc::new(keys),
                    value,
                }],
                ..ObjectSet::default()
            });
        }
        // propertyNames is broken by any key outside its language.
        for names in &o.names {
            let keys = dfa::complement(names).map_err(|e| SchemaError::Unsupported {
                keyword: "not".into(),
                pointer: crate::error::pointer_or_root(pointer),
                reason: format!("complement of propertyNames: {e}"),
            })?;
            out.push(ObjectSet {
                some: vec![Exists {
                    keys: Rc::new(keys),
                    value: Node::Any,
                }],
                ..ObjectSet::default()
            });
        }
        // A required member is broken when every member avoids it.
        for e in &o.some {
            let value = self.complement(&e.value, pointer)?;
            out.push(ObjectSet {
                rules: vec![KeyRule {
                    keys: KeySet::Lang(e.keys.clone()),
                    value,
                }],
                ..ObjectSet::default()
            });
        }
        for k in &o.required {
            out.push(ObjectSet {
                props: vec![(k.clone(), Node::Nothing)],
                ..ObjectSet::default()
            });
        }
        for (k, n) in &o.props {
            if *n == Node::Any {
                continue;
            }
            let c = self.complement(n, pointer)?;
            if c == Node::Nothing {
                continue;
            }
            out.push(ObjectSet {
                props: vec![(k.clone(), c)],
                required: vec![k.clone()],
                ..ObjectSet::default()
            });
        }
        if o.min > 0 {
            out.push(ObjectSet {
                max: Some(o.min - 1),
                ..ObjectSet::default()
            });
        }
        if let Some(m) = o.max {
            out.push(ObjectSet {
                min: m.saturating_add(1),
                ..ObjectSet::default()
            });
        }
        Ok(out)
    }

    fn complement_const(&mut self, values: &[Lit], pointer: &str) -> Result<Node, SchemaError> {
        use serde_json::Value;
        let mut t = Typed::all();
        let mut parts = Vec::new();
        let mut numbers = Vec::new();
        let mut strings = Vec::new();
        let mut arrays = Vec::new();
        let mut objects = Vec::new();
        let (mut t_true, mut t_false) = (true, true);
        for lit in values {
            match &lit.value {
                Value::Null => t.null = false,
                Value::Bool(true) => t_true = false,
                Value::Bool(false) => t_false = false,
                Value::Number(n) => {
                    if let Some(d) = Decimal::from_json(n) {
                        numbers.push(d);
                    }
                }
                Value::String(s) => strings.push(s.clone()),
                Value::Array(_) => arrays.push(lit.value.clone()),
                Value::Object(_) => objects.push(lit.value.clone()),
            }
        }
        t.boolean = t_true && t_false;
        if t_true != t_false {
            parts.push(Node::constant(vec![Value::Bool(t_true)]));
        }
        if !numbers.is_empty() {
            t.number = None;
            numbers.sort_by(compare);
            numbers.dedup_by(|a, b| compare(a, b) == Ordering::Equal);
            let mut lo: Option<Bound> = None;
            for d in &numbers {
                parts.push(Node::typed(Typed {
                    number: Some(NumberSet {
                        lo: lo.clone(),
                        hi: Some(Bound {
                            value: d.clone(),
                            exclusive: true,
                        }),
                        ..NumberSet::default()
                    }),
                    ..Typed::default()
                }));
                lo = Some(Bound {
                    value: d.clone(),
                    exclusive: true,
                });
            }
            parts.push(Node::typed(Typed {
                number: Some(NumberSet {
                    lo,
                    ..NumberSet::default()
                }),
                ..Typed::default()
            }));
        }
        if !strings.is_empty() {
            t.string = Some(StringSet {
                langs: vec![Rc::new(Re::not_in(&strings))],
                ..StringSet::default()
            });
        }
        let mut node = Node::any_of({
            let mut v = vec![Node::typed(Typed {
                array: None,
                object: None,
                ..t.clone()
            })];
            v.extend(parts);
            v
        });
        // Arrays and objects: the complement of each excluded value, intersected.
        let mut structured = Node::typed(Typed {
            array: t.array.clone(),
            object: t.object.clone(),
            ..Typed::default()
        });
        for v in arrays.iter().chain(&objects) {
            let c = self.complement_value(v, pointer)?;
            structured = self.meet(&structured, &c, pointer)?;
        }
        node = Node::any_of(vec![node, structured]);
        Ok(node)
    }

    /// Every value but `v` (an array or object), restricted to its own type's complement
    /// plus all values of other types.
    fn complement_value(
        &mut self,
        v: &serde_json::Value,
        pointer: &str,
    ) -> Result<Node, SchemaError> {
        use serde_json::Value;
        let mut others = Typed::all();
        let mut parts = Vec::new();
        match v {
            Value::Array(items) => {
                others.array = None;
                let n = items.len() as u64;
                if n > 0 {
                    parts.push(ArraySet {
                        max: Some(n - 1),
                        ..ArraySet::default()
                    });
                }
                parts.push(ArraySet {
                    min: n + 1,
                    ..ArraySet::default()
                });
                for (i, item) in items.iter().enumerate() {
                    let mut prefix = vec![Node::Any; i];
                    prefix.push(self.complement(&Node::constant(vec![item.clone()]), pointer)?);
                    parts.push(ArraySet {
                        prefix,
                        min: n,
                        max: Some(n),
                        ..ArraySet::default()
                    });
                }
                let mut nodes = vec![Node::typed(others)];
                nodes.extend(parts.into_iter().map(|a| {
                    Node::typed(Typed {
                        array: Some(a),
                        ..Typed::default()
                    })
                }));
                Ok(Node::any_of(nodes))
            }
            Value::Object(map) => {
                others.object = None;
                let keys: Vec<String> = map.keys().cloned().collect();
                let mut sets = Vec::new();
                for (k, val) in map {
                    sets.push(ObjectSet {
                        props: vec![(k.clone(), Node::Nothing)],
                        ..ObjectSet::default()
                    });
                    let c = self.complement(&Node::constant(vec![val.clone()]), pointer)?;
                    sets.push(ObjectSet {
                        props: vec![(k.clone(), c)],
                        required: vec![k.clone()],
                        ..ObjectSet::default()
                    });
                }
                sets.push(ObjectSet {
                    required: keys.clone(),
                    min: keys.len() as u64 + 1,
                    ..ObjectSet::default()
                });
                let mut nodes = vec![Node::typed(others)];
                for s in sets {
                    if let Some(s) = self.normalize_object(s, pointer)? {
                        nodes.push(Node::typed(Typed {
                            object: Some(s),
                            ..Typed::default()
                        }));
                    }
                }
                Ok(Node::any_of(nodes))
            }
            other => self.complement(&Node::constant(vec![other.clone()]), pointer),
        }
    }
}

/// The numbers outside `n`, as a union of sets.
fn complement_number(n: &NumberSet) -> Vec<NumberSet> {
    let mut out = Vec::new();
    for m in &n.multiple_of {
        out.push(NumberSet {
            not_multiple_of: vec![m.clone()],
            ..NumberSet::default()
        });
    }
    for m in &n.not_multiple_of {
        out.push(NumberSet {
            multiple_of: vec![m.clone()],
            ..NumberSet::default()
        });
    }
    if let Some(b) = &n.lo {
        out.push(NumberSet {
            hi: Some(Bound {
                value: b.value.clone(),
                exclusive: !b.exclusive,
            }),
            ..NumberSet::default()
        });
    }
    if let Some(b) = &n.hi {
        out.push(NumberSet {
            lo: Some(Bound {
                value: b.value.clone(),
                exclusive: !b.exclusive,
            }),
            ..NumberSet::default()
        });
    }
    if n.integer {
        out.push(NumberSet {
            fractional: true,
            ..NumberSet::default()
        });
    }
    if n.fractional {
        out.push(NumberSet {
            integer: true,
            ..NumberSet::default()
        });
    }
    out
}

fn meet_numbers(a: &NumberSet, b: &NumberSet) -> Option<NumberSet> {
    let integer = a.integer || b.integer;
    let fractional = a.fractional || b.fractional;
    if integer && fractional {
        return None;
    }
    let mut multiple_of = a.multiple_of.clone();
    push_unique(&mut multiple_of, &b.multiple_of);
    let mut not_multiple_of = a.not_multiple_of.clone();
    push_unique(&mut not_multiple_of, &b.not_multiple_of);
    let set = NumberSet {
        integer,
        fractional,
        lo: opt_max_lo(&a.lo, &b.lo),
        hi: opt_min_hi(&a.hi, &b.hi),
        multiple_of,
        not_multiple_of,
    };
    if number_set_empty(&set) {
        return None;
    }
    Some(set)
}

fn number_set_empty(n: &NumberSet) -> bool {
    // A multiple of `m` is a multiple of every divisor of `m`.
    for m in &n.multiple_of {
        if n.not_multiple_of
            .iter()
            .any(|k| m.is_multiple_of(k) == Some(true))
        {
            return true;
        }
    }
    if let (Some(lo), Some(hi)) = (&n.lo, &n.hi) {
        match compare(&lo.value, &hi.value) {
            Ordering::Greater => return true,
            Ordering::Equal if lo.exclusive || hi.exclusive => return true,
            _ => {}
        }
    }
    if n.integer && (n.lo.is_some() || n.hi.is_some()) {
        return number_re(n.lo.as_ref(), n.hi.as_ref(), Kind::Integer, Numbers::Any).is_nothing();
    }
    false
}

fn meet_strings(a: &StringSet, b: &StringSet) -> Option<StringSet> {
    let mut langs = a.langs.clone();
    push_unique(&mut langs, &b.langs);
    let set = StringSet {
        min_len: a.min_len.max(b.min_len),
        max_len: opt_min(a.max_len, b.max_len),
        langs,
    };
    if set.max_len.is_some_and(|m| set.min_len > m) {
        return None;
    }
    Some(set)
}

fn string_set_empty(s: &StringSet) -> bool {
    if s.max_len.is_some_and(|m| s.min_len > m) {
        return true;
    }
    if s.langs.is_empty() {
        return false;
    }
    match crate::strings::string_re(s) {
        Ok(re) => re.is_nothing() || dfa::is_empty(&re).unwrap_or(false),
        Err(_) => false,
    }
}

/// Tightens bounds from the element schemas and detects impossible arrays.
pub(crate) fn normalize_array(mut set: ArraySet) -> Option<ArraySet> {
    if let Some(i) = set.prefix.iter().position(|p| *p == Node::Nothing) {
        set.max = Some(set.max.map_or(i as u64, |m| m.min(i as u64)));
        set.prefix.truncate(i);
    }
    if set.items == Node::Nothing {
        let n = set.prefix.len() as u64;
        set.max = Some(set.max.map_or(n, |m| m.min(n)));
    }
    if let Some(m) = set.max {
        if (m as usize) < set.prefix.len() {
            set.prefix.truncate(m as usize);
        }
    }
    while set.prefix.last().is_some_and(|p| *p == set.items) {
        set.prefix.pop();
    }
    if set.max.is_some_and(|m| set.min > m) {
        return None;
    }
    for c in &set.contains {
        if c.max.is_some_and(|m| c.min > m)
            || set.max.is_some_and(|m| c.min > m)
            || (c.min > 0 && c.node == Node::Nothing)
        {
            return None;
        }
    }
    Some(set)
}

/// What a budget error says ran out, for the `oneOf` fallback's message: a bound of the
/// compiler's own or a budget of `Limits` (the deadline) alike.
fn exceeded(e: &SchemaError) -> Option<String> {
    match e {
        SchemaError::TooComplex { what, .. } => Some(what.clone()),
        SchemaError::LimitExceeded { budget, .. } => Some(budget.to_string()),
        _ => None,
    }
}
