//! The compiler's view of a schema: the set of JSON values it accepts, split by JSON type.
//!
//! Keywords are folded into one [`Node`] per schema; `allOf` becomes intersection, `not` a
//! complement, `oneOf` a union of provably disjoint parts, so that emission only sees unions,
//! per-type constraints and references to shared definitions.

use std::hash::{Hash, Hasher};
use std::rc::Rc;

use serde_json::Value;

use crate::number::{Bound, Decimal};
use crate::re::Re;

/// Immutable data shared between nodes, with its hash computed once: memo tables keyed by
/// large schemas then hash in constant time, and equal pointers compare without a walk.
#[derive(Debug)]
pub(crate) struct Shared<T>(Rc<(u64, T)>);

impl<T: Hash> Shared<T> {
    pub(crate) fn new(value: T) -> Shared<T> {
        let mut h = rustc_hash::FxHasher::default();
        value.hash(&mut h);
        Shared(Rc::new((h.finish(), value)))
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Shared<T> {
        Shared(self.0.clone())
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0 .1
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Shared<T>) -> bool {
        Rc::ptr_eq(&self.0, &other.0) || (self.0 .0 == other.0 .0 && self.0 .1 == other.0 .1)
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T> Hash for Shared<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0 .0.hash(state);
    }
}

/// Index of a shared definition (a `$ref` target, or a combination of definitions).
pub(crate) type DefId = usize;

/// A set of JSON values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Node {
    /// Every value.
    Any,
    /// No value.
    Nothing,
    /// The values of a shared definition.
    Ref(DefId),
    /// Exactly these values (no two equal as JSON).
    Const(Shared<Vec<Lit>>),
    /// Values of the listed types, each type with its own constraints.
    Typed(Shared<Typed>),
    /// Values in any of the parts.
    AnyOf(Shared<Vec<Node>>),
}

impl Node {
    /// The strings this node accepts when it accepts nothing else.
    pub(crate) fn only_strings(&self) -> Option<&StringSet> {
        match self {
            Node::Typed(t)
                if !t.null
                    && !t.boolean
                    && t.number.is_none()
                    && t.array.is_none()
                    && t.object.is_none() =>
            {
                t.string.as_ref()
            }
            _ => None,
        }
    }

    pub(crate) fn typed(t: Typed) -> Node {
        if t.is_empty() {
            Node::Nothing
        } else {
            Node::Typed(Shared::new(t))
        }
    }

    /// The union of `parts`, flattened and deduplicated.
    pub(crate) fn any_of(parts: Vec<Node>) -> Node {
        let mut out: Vec<Node> = Vec::with_capacity(parts.len());
        let mut seen: rustc_hash::FxHashSet<Node> = rustc_hash::FxHashSet::default();
        for p in parts {
            match p {
                Node::Nothing => {}
                Node::Any => return Node::Any,
                Node::AnyOf(inner) => {
                    for q in inner.iter() {
                        if seen.insert(q.clone()) {
                            out.push(q.clone());
                        }
                    }
                }
                other => {
                    if seen.insert(other.clone()) {
                        out.push(other);
                    }
                }
            }
        }
        match out.len() {
            0 => Node::Nothing,
            1 => out.pop().unwrap_or(Node::Nothing),
            _ => Node::AnyOf(Shared::new(out)),
        }
    }

    pub(crate) fn constant(values: Vec<Value>) -> Node {
        let mut seen = rustc_hash::FxHashSet::default();
        let mut lits: Vec<Lit> = Vec::with_capacity(values.len());
        for v in values {
            let lit = Lit::new(v);
            if seen.insert(lit.key.clone()) {
                lits.push(lit);
            }
        }
        if lits.is_empty() {
            Node::Nothing
        } else {
            Node::Const(Shared::new(lits))
        }
    }
}

/// A JSON value compared as JSON Schema compares values: numbers by value (`1 == 1.0`),
/// objects regardless of key order.
#[derive(Clone, Debug)]
pub(crate) struct Lit {
    pub(crate) value: Value,
    key: String,
}

impl Lit {
    pub(crate) fn new(value: Value) -> Lit {
        let mut key = String::new();
        canonical(&value, &mut key);
        Lit { value, key }
    }
}

impl PartialEq for Lit {
    fn eq(&self, other: &Lit) -> bool {
        self.key == other.key
    }
}

impl Eq for Lit {}

impl std::hash::Hash for Lit {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

/// A text that is equal for values JSON Schema considers equal.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push('n'),
        Value::Bool(b) => out.push(if *b { 't' } else { 'f' }),
        Value::Number(n) => {
            out.push('#');
            match Decimal::from_json(n) {
                Some(d) => out.push_str(&format!("{d:?}")),
                None => out.push_str(&n.to_string()),
            }
        }
        Value::String(s) => {
            out.push('"');
            out.push_str(&serde_json::to_string(s).unwrap_or_default());
        }
        Value::Array(items) => {
            out.push('[');
            for i in items {
                canonical(i, out);
                out.push(',');
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (k, v) in entries {
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                canonical(v, out);
                out.push(',');
            }
            out.push('}');
        }
    }
}

/// Values of several JSON types; `None` (or `false`) leaves a type out.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) struct Typed {
    pub(crate) null: bool,
    pub(crate) boolean: bool,
    pub(crate) number: Option<NumberSet>,
    pub(crate) string: Option<StringSet>,
    pub(crate) array: Option<ArraySet>,
    pub(crate) object: Option<ObjectSet>,
}

impl Typed {
    /// Every value, as per-type sets without constraints.
    pub(crate) fn all() -> Typed {
        Typed {
            null: true,
            boolean: true,
            number: Some(NumberSet::default()),
            string: Some(StringSet::default()),
            array: Some(ArraySet::default()),
            object: Some(ObjectSet::default()),
        }
    }

    /// Every value of the types flagged in `types`: null, boolean, number (integers
    /// included), string, array, object.
    pub(crate) fn of_types(types: [bool; 6]) -> Typed {
        let all = Typed::all();
        Typed {
            null: types[0],
            boolean: types[1],
            number: all.number.filter(|_| types[2]),
            string: all.string.filter(|_| types[3]),
            array: all.array.filter(|_| types[4]),
            object: all.object.filter(|_| types[5]),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        !self.null
            && !self.boolean
            && self.number.is_none()
            && self.string.is_none()
            && self.array.is_none()
            && self.object.is_none()
    }

    /// Whether it accepts every value.
    pub(crate) fn is_all(&self) -> bool {
        self.null
            && self.boolean
            && self.number.as_ref().is_some_and(NumberSet::is_all)
            && self.string.as_ref().is_some_and(StringSet::is_all)
            && self.array.as_ref().is_some_and(ArraySet::is_all)
            && self.object.as_ref().is_some_and(ObjectSet::is_all)
    }
}

/// Numbers (or integers) within bounds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) struct NumberSet {
    pub(crate) integer: bool,
    /// Only numbers with a non-zero fractional part (the complement of `integer`).
    pub(crate) fractional: bool,
    pub(crate) lo: Option<Bound>,
    pub(crate) hi: Option<Bound>,
    /// Positive divisors the value must be a multiple of.
    pub(crate) multiple_of: Vec<Decimal>,
    /// Positive divisors the value must not be a multiple of (complements of `multipleOf`).
    pub(crate) not_multiple_of: Vec<Decimal>,
}

impl NumberSet {
    pub(crate) fn is_all(&self) -> bool {
        !self.integer
            && !self.fractional
            && self.lo.is_none()
            && self.hi.is_none()
            && self.multiple_of.is_empty()
            && self.not_multiple_of.is_empty()
    }
}

/// Strings by length (in code points) and regular languages they must all belong to.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) struct StringSet {
    pub(crate) min_len: u64,
    pub(crate) max_len: Option<u64>,
    /// Full-match languages (patterns already turned into search languages), all required.
    pub(crate) langs: Vec<Rc<Re>>,
}

impl StringSet {
    pub(crate) fn is_all(&self) -> bool {
        self.min_len == 0 && self.max_len.is_none() && self.langs.is_empty()
    }
}

/// Arrays: a schema per leading position, one for the rest, bounds and `contains`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ArraySet {
    pub(crate) prefix: Vec<Node>,
    pub(crate) items: Node,
    pub(crate) min: u64,
    pub(crate) max: Option<u64>,
    pub(crate) contains: Vec<Contains>,
    pub(crate) unique: bool,
    /// Elements evaluated, for `unevaluatedItems` (not a constraint).
    pub(crate) evaluated: EvaluatedItems,
    /// The set is a subset of what the schema allows (`unevaluatedItems` over `anyOf`
    /// branches): its complement would be too large, so it is never taken.
    pub(crate) approximate: bool,
}

/// The elements that the array keywords of a schema evaluate (with those of the in-place
/// subschemas it was combined with): what `unevaluatedItems` leaves alone. Collected only in
/// documents that have `unevaluatedItems`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) struct EvaluatedItems {
    /// The first this many elements (`prefixItems`).
    pub(crate) prefix: usize,
    /// Every element (`items`, `unevaluatedItems`).
    pub(crate) all: bool,
    /// The elements that match one of these (`contains`).
    pub(crate) contains: Vec<Node>,
}

impl Default for ArraySet {
    fn default() -> ArraySet {
        ArraySet {
            prefix: Vec::new(),
            items: Node::Any,
            min: 0,
            max: None,
            contains: Vec::new(),
            unique: false,
            evaluated: EvaluatedItems::default(),
            approximate: false,
        }
    }
}

impl ArraySet {
    pub(crate) fn is_all(&self) -> bool {
        self.prefix.iter().all(|p| *p == Node::Any)
            && self.items == Node::Any
            && self.min == 0
            && self.max.is_none()
            && self.contains.is_empty()
            && !self.unique
            // Kept for `unevaluatedItems`, which reads what it evaluates.
            && self.evaluated == EvaluatedItems::default()
    }

    /// The schema of the element at `index`.
    pub(crate) fn item(&self, index: usize) -> &Node {
        self.prefix.get(index).unwrap_or(&self.items)
    }
}

/// Between `min` and `max` elements must belong to `node`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Contains {
    pub(crate) node: Node,
    pub(crate) min: u64,
    pub(crate) max: Option<u64>,
}

/// Which keys a [`KeyRule`] applies to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum KeySet {
    /// Keys in the language (a `patternProperties` pattern, as a search language).
    Lang(Rc<Re>),
    /// Keys that are none of `names` and in none of `langs` (`additionalProperties`).
    Other {
        names: Rc<[String]>,
        langs: Rc<[Rc<Re>]>,
    },
}

/// Values of the keys in `keys` (and not declared in the same object set) must be in `value`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct KeyRule {
    pub(crate) keys: KeySet,
    pub(crate) value: Node,
}

/// At least one member (declared or not) has a key in `keys` and a value in `value`: what the
/// complement of `additionalProperties`, `patternProperties` or `propertyNames` requires.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Exists {
    pub(crate) keys: Rc<Re>,
    pub(crate) value: Node,
}

/// The keys an object schema's `properties`, `patternProperties` and `additionalProperties`
/// evaluate (with those of the in-place subschemas it was combined with): what
/// `unevaluatedProperties` leaves alone. Collected only in documents that have
/// `unevaluatedProperties`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) struct Evaluated {
    pub(crate) names: Vec<String>,
    pub(crate) langs: Vec<Rc<Re>>,
    /// Every key (an `additionalProperties` or `unevaluatedProperties` was applied).
    pub(crate) all: bool,
}

/// Objects: declared properties (in schema order), rules for the other keys, requirements.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) struct ObjectSet {
    /// Declared properties; their schemas already include every rule that applies to them.
    pub(crate) props: Vec<(String, Node)>,
    /// Rules for keys that are not declared.
    pub(crate) rules: Vec<KeyRule>,
    pub(crate) required: Vec<String>,
    pub(crate) min: u64,
    pub(crate) max: Option<u64>,
    /// Every key (declared or not) must be in all of these languages.
    pub(crate) names: Vec<Rc<Re>>,
    /// Members that must exist.
    pub(crate) some: Vec<Exists>,
    /// Keys evaluated, for `unevaluatedProperties` (not a constraint).
    pub(crate) evaluated: Evaluated,
    /// The set is a subset of what the schema allows (`unevaluatedProperties` over `anyOf`
    /// branches that may both match): fine to generate from, but not to complement.
    pub(crate) approximate: bool,
}

impl ObjectSet {
    pub(crate) fn is_all(&self) -> bool {
        self.props.iter().all(|(_, n)| *n == Node::Any)
            && self.rules.iter().all(|r| r.value == Node::Any)
            && self.required.is_empty()
            && self.min == 0
            && self.max.is_none()
            && self.names.is_empty()
            && self.some.is_empty()
            // Kept for `unevaluatedProperties`, which reads what it evaluates.
            && self.evaluated == Evaluated::default()
    }

    pub(crate) fn prop(&self, name: &str) -> Option<&Node> {
        self.props.iter().find(|(k, _)| k == name).map(|(_, n)| n)
    }
}
