//! The schema document: which draft it follows, where its resources (`$id`) and anchors are,
//! and how a `$ref` resolves to a place in it.

use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::Value;

use crate::uri::{escape_token, percent_decode, pointer_tokens, Uri};

/// The base URI of a document without `$id`.
pub(crate) const DEFAULT_BASE: &str = "constrain:///schema.json";

/// The specification a document follows, as far as it changes the meaning of keywords.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Draft {
    /// Draft 4 and earlier: `id` instead of `$id`.
    Draft4,
    /// Drafts 6 and 7: `$ref` overrides its siblings.
    Draft7,
    /// 2019-09, 2020-12 (and documents that do not say).
    Modern,
}

impl Draft {
    fn from_schema_uri(uri: &str) -> Draft {
        if uri.contains("draft-04") || uri.contains("draft-03") {
            Draft::Draft4
        } else if uri.contains("draft-06") || uri.contains("draft-07") {
            Draft::Draft7
        } else {
            Draft::Modern
        }
    }

    /// The keyword that sets a base URI.
    pub(crate) fn id_keyword(self) -> &'static str {
        if self == Draft::Draft4 {
            "id"
        } else {
            "$id"
        }
    }

    /// The `$id` (draft 4: `id`) of a schema object, unless `$ref` makes it ineffective (up to
    /// draft 7, `$ref` overrides its siblings).
    pub(crate) fn effective_id(self, map: &serde_json::Map<String, Value>) -> Option<&str> {
        if self <= Draft::Draft7 && map.contains_key("$ref") {
            return None;
        }
        map.get(self.id_keyword()).and_then(Value::as_str)
    }
}

/// The name under which `"$recursiveAnchor": true` is kept among the dynamic anchors (no
/// `$dynamicAnchor` can have it: anchor names are never empty).
const RECURSIVE_ANCHOR: &str = "";

/// The dynamic anchors in force where a schema is read: for each name some `$dynamicRef` looks
/// for, the place the outermost resource of the dynamic scope (the resources evaluation went
/// through to get there) gives it. Sorted by name.
///
/// The meaning of a schema depends on it only through the `$dynamicRef`s it reaches, so a
/// schema is read once per scope it is reached in, and documents without dynamic anchors have
/// one scope, the empty one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct DynamicScope(Rc<Vec<(String, String)>>);

impl DynamicScope {
    fn bound(&self, name: &str) -> Option<&String> {
        self.0
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()
            .map(|i| &self.0[i].1)
    }
}

/// A place in the document: a JSON pointer, the base URI in force there, and the dynamic
/// anchors in force when it is reached.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Location {
    pub(crate) pointer: String,
    pub(crate) base: Uri,
    pub(crate) scope: DynamicScope,
}

/// The fragment of `uri` if it is a plain name (an anchor), percent-decoded.
fn plain_name(uri: &Uri) -> Option<String> {
    let fragment = percent_decode(uri.fragment()?)?;
    (!fragment.is_empty() && !fragment.starts_with('/')).then_some(fragment)
}

/// The draft a document declares with `$schema`, or `default`.
fn draft_of(root: &Value, default: Draft) -> Draft {
    root.get("$schema")
        .and_then(Value::as_str)
        .map_or(default, Draft::from_schema_uri)
}

/// Keywords whose value is a schema.
pub(crate) const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
    "items",
    "contentSchema",
];
/// Keywords whose value is an array of schemas.
pub(crate) const SCHEMA_ARRAY_KEYWORDS: &[&str] =
    &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to schemas.
pub(crate) const SCHEMA_MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// One JSON document of schemas: the schema being compiled, or a resource registered under a
/// URI ([`Options::resources`](crate::Options::resources)).
struct Root<'a> {
    value: &'a Value,
    draft: Draft,
}

/// The index of the schema document and of the resources it may refer to.
///
/// A place in the schema being compiled is a JSON pointer (`/properties/a`); a place in a
/// registered resource is its URI, `#` and a pointer (`https://example.com/a.json#/$defs/b`), so
/// that every place has one name, and errors say which document they are in.
pub(crate) struct Document<'a> {
    /// The draft of the schema being compiled.
    pub(crate) draft: Draft,
    /// The schema being compiled, then the registered resources.
    roots: Vec<Root<'a>>,
    /// Registered resource URI → its index in `roots`.
    root_by_uri: FxHashMap<String, usize>,
    /// Resource URI (no fragment) → pointer of the resource's root.
    resources: FxHashMap<String, String>,
    /// (resource URI, anchor name) → pointer.
    anchors: FxHashMap<(String, String), String>,
    /// Resource URI → the names of its `$dynamicAnchor`s (with the pointers they mark).
    dynamic_anchors: FxHashMap<String, Vec<(String, String)>>,
    /// The anchor names some `$dynamicRef` looks for: only their bindings matter.
    dynamic_names: FxHashSet<String>,
    /// Pointer → base URI in force inside that schema.
    bases: FxHashMap<String, Uri>,
    /// Some schema has `unevaluatedProperties`: the properties each object schema evaluates
    /// are collected.
    pub(crate) has_unevaluated_properties: bool,
    /// Some schema has `unevaluatedItems`: the elements each array schema evaluates are
    /// collected.
    pub(crate) has_unevaluated_items: bool,
}

impl<'a> Document<'a> {
    /// Indexes `root`, the schema to compile, and `resources`, schemas it may name by URI.
    pub(crate) fn new(
        root: &'a Value,
        resources: &'a std::collections::BTreeMap<String, Value>,
    ) -> Document<'a> {
        let draft = draft_of(root, Draft::Modern);
        let mut doc = Document {
            draft,
            roots: vec![Root { value: root, draft }],
            root_by_uri: FxHashMap::default(),
            resources: FxHashMap::default(),
            anchors: FxHashMap::default(),
            dynamic_anchors: FxHashMap::default(),
            dynamic_names: FxHashSet::default(),
            bases: FxHashMap::default(),
            has_unevaluated_properties: false,
            has_unevaluated_items: false,
        };
        let base = Uri::parse(DEFAULT_BASE);
        doc.resources.insert(base.to_string(), String::new());
        doc.index_root(root, String::new(), base, draft);
        for (uri, value) in resources {
            let base = Uri::parse(uri).without_fragment();
            let key = base.to_string();
            // The schema being compiled keeps a URI it gives itself.
            if doc.resources.contains_key(&key) {
                continue;
            }
            let prefix = format!("{key}#");
            let draft = draft_of(value, draft);
            doc.root_by_uri.insert(key.clone(), doc.roots.len());
            doc.roots.push(Root { value, draft });
            doc.resources.insert(key, prefix.clone());
            doc.index_root(value, prefix, base, draft);
        }
        doc
    }

    fn index_root(&mut self, value: &'a Value, pointer: String, base: Uri, draft: Draft) {
        let mut stack = vec![(value, pointer, base, 0usize)];
        while let Some((value, pointer, base, depth)) = stack.pop() {
            if depth > 1000 {
                continue;
            }
            self.index(value, pointer, base, depth, draft, &mut stack);
        }
    }

    /// Records the resources and anchors of one schema and queues its subschemas.
    fn index(
        &mut self,
        value: &'a Value,
        pointer: String,
        base: Uri,
        depth: usize,
        draft: Draft,
        stack: &mut Vec<(&'a Value, String, Uri, usize)>,
    ) {
        let Value::Object(map) = value else { return };
        // The base a schema is read with; its own `$id` is applied when it is read.
        self.bases.insert(pointer.clone(), base.clone());
        let mut base = base;
        if let Some(id) = draft.effective_id(map) {
            if let Some(name) = id.strip_prefix('#') {
                // Drafts 6/7: `"$id": "#name"` is a plain-name anchor.
                self.anchors.insert(
                    (base.without_fragment().to_string(), name.to_string()),
                    pointer.clone(),
                );
            } else {
                let resolved = base.resolve(id);
                if let Some(fragment) = resolved
                    .fragment()
                    .filter(|f| !f.is_empty() && !f.starts_with('/'))
                {
                    self.anchors.insert(
                        (
                            resolved.without_fragment().to_string(),
                            fragment.to_string(),
                        ),
                        pointer.clone(),
                    );
                }
                base = resolved.without_fragment();
                self.resources
                    .entry(base.to_string())
                    .or_insert_with(|| pointer.clone());
            }
        }
        for kw in ["$anchor", "$dynamicAnchor"] {
            if let Some(name) = map.get(kw).and_then(Value::as_str) {
                self.anchors
                    .entry((base.to_string(), name.to_string()))
                    .or_insert_with(|| pointer.clone());
            }
        }
        if let Some(name) = map.get("$dynamicAnchor").and_then(Value::as_str) {
            self.dynamic_anchors
                .entry(base.to_string())
                .or_default()
                .push((name.to_string(), pointer.clone()));
        }
        // Draft 2019-09's form: a resource whose root says `"$recursiveAnchor": true` is a
        // dynamic anchor without a name, which `"$recursiveRef": "#"` looks for.
        if map.get("$recursiveAnchor") == Some(&Value::Bool(true))
            && self.resources.get(&base.to_string()) == Some(&pointer)
        {
            self.dynamic_anchors
                .entry(base.to_string())
                .or_default()
                .push((RECURSIVE_ANCHOR.to_string(), pointer.clone()));
        }
        if let Some(reference) = map.get("$dynamicRef").and_then(Value::as_str) {
            if let Some(name) = plain_name(&Uri::parse(reference)) {
                self.dynamic_names.insert(name);
            }
        }
        self.has_unevaluated_properties |= map.contains_key("unevaluatedProperties");
        self.has_unevaluated_items |= map.contains_key("unevaluatedItems");
        if map.contains_key("$recursiveRef") {
            self.dynamic_names.insert(RECURSIVE_ANCHOR.to_string());
        }
        for (key, sub) in map {
            let key_ptr = format!("{pointer}/{}", escape_token(key));
            if SCHEMA_MAP_KEYWORDS.contains(&key.as_str()) {
                if let Value::Object(children) = sub {
                    for (name, child) in children {
                        stack.push((
                            child,
                            format!("{key_ptr}/{}", escape_token(name)),
                            base.clone(),
                            depth + 1,
                        ));
                    }
                }
            } else if SCHEMA_ARRAY_KEYWORDS.contains(&key.as_str()) && sub.is_array() {
                if let Value::Array(children) = sub {
                    for (i, child) in children.iter().enumerate() {
                        stack.push((child, format!("{key_ptr}/{i}"), base.clone(), depth + 1));
                    }
                }
            } else if SCHEMA_KEYWORDS.contains(&key.as_str()) {
                stack.push((sub, key_ptr, base.clone(), depth + 1));
            }
        }
    }

    /// The base URI a schema at `pointer` is read with, before its own `$id` (the document's
    /// own base if it is not a schema the index has seen).
    pub(crate) fn base_at(&self, pointer: &str) -> Uri {
        if let Some(b) = self.bases.get(pointer) {
            return b.clone();
        }
        Uri::parse(DEFAULT_BASE)
    }

    /// The pointer `reference` (a `$ref` value) leads to, from a schema whose base is `base`.
    pub(crate) fn resolve(&self, base: &Uri, reference: &str) -> Result<String, String> {
        let target = base.resolve(reference);
        let resource = target.without_fragment().to_string();
        let Some(root_ptr) = self.resources.get(&resource) else {
            return Err(format!(
                "'{resource}' is neither part of this document nor a registered resource \
                 (references are never fetched)"
            ));
        };
        let fragment = target.fragment().unwrap_or("");
        let fragment =
            percent_decode(fragment).ok_or("the fragment is not valid percent-encoded UTF-8")?;
        let pointer = if fragment.is_empty() {
            root_ptr.clone()
        } else if fragment.starts_with('/') {
            let pointer = format!("{root_ptr}{fragment}");
            if self.value_at(&pointer).is_none() {
                return Err(format!("nothing at JSON pointer '{fragment}'"));
            }
            pointer
        } else {
            self.anchors
                .get(&(resource, fragment.clone()))
                .cloned()
                .ok_or_else(|| format!("no anchor named '{fragment}'"))?
        };
        // Draft 4 reads `1.0` as a number, not an integer, and the grammar has one reading.
        if (self.draft_at(&pointer) == Draft::Draft4) != (self.draft == Draft::Draft4) {
            return Err("it mixes draft 4 schemas with later drafts".into());
        }
        Ok(pointer)
    }

    /// The pointer a `$dynamicRef` (or, with `recursive`, a `$recursiveRef`) leads to under
    /// `scope`: where `$ref` would lead, unless that schema declares the dynamic anchor the
    /// reference names; then the place the outermost resource of the dynamic scope gives
    /// that anchor.
    pub(crate) fn resolve_dynamic(
        &self,
        base: &Uri,
        reference: &str,
        recursive: bool,
        scope: &DynamicScope,
    ) -> Result<String, String> {
        let target = self.resolve(base, reference)?;
        let (name, anchored) = if recursive {
            let anchored = self
                .value_at(&target)
                .and_then(|v| v.get("$recursiveAnchor"))
                == Some(&Value::Bool(true));
            (RECURSIVE_ANCHOR.to_string(), anchored)
        } else {
            let Some(name) = plain_name(&base.resolve(reference)) else {
                return Ok(target);
            };
            let anchored = self
                .value_at(&target)
                .and_then(|v| v.get("$dynamicAnchor"))
                .and_then(Value::as_str)
                == Some(name.as_str());
            (name, anchored)
        };
        match scope.bound(&name) {
            Some(outermost) if anchored => Ok(outermost.clone()),
            _ => Ok(target),
        }
    }

    /// `scope` after entering the resource `resource`: its dynamic anchors bind the names no
    /// outer resource has bound. `None` when nothing changes.
    pub(crate) fn enter(&self, scope: &DynamicScope, resource: &Uri) -> Option<DynamicScope> {
        if self.dynamic_names.is_empty() {
            return None;
        }
        let anchors = self.dynamic_anchors.get(&resource.to_string())?;
        let mut bindings = None::<Vec<(String, String)>>;
        for (name, pointer) in anchors {
            let current = bindings.as_deref().unwrap_or(&scope.0);
            if !self.dynamic_names.contains(name) || current.iter().any(|(bound, _)| bound == name)
            {
                continue;
            }
            let list = bindings.get_or_insert_with(|| scope.0.to_vec());
            list.push((name.clone(), pointer.clone()));
            list.sort();
        }
        bindings.map(|b| DynamicScope(Rc::new(b)))
    }

    /// The draft of the document `pointer` is in.
    pub(crate) fn draft_at(&self, pointer: &str) -> Draft {
        self.split(pointer)
            .map_or(self.draft, |(root, _)| self.roots[root].draft)
    }

    /// The document a place is in (its index in `roots`) and the pointer inside it.
    fn split<'p>(&self, pointer: &'p str) -> Option<(usize, &'p str)> {
        if pointer.is_empty() || pointer.starts_with('/') {
            return Some((0, pointer));
        }
        let (uri, local) = pointer.split_once('#')?;
        Some((*self.root_by_uri.get(uri)?, local))
    }

    /// The value at a place.
    pub(crate) fn value_at(&self, pointer: &str) -> Option<&'a Value> {
        let (root, local) = self.split(pointer)?;
        let mut v = self.roots[root].value;
        for token in pointer_tokens(local)? {
            v = match v {
                Value::Object(m) => m.get(&token)?,
                Value::Array(a) => a.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_pointers_anchors_and_ids() {
        let schema = json!({
            "$id": "https://example.com/root.json",
            "$defs": {
                "a/b": {"$anchor": "slash"},
                "c%d": {"type": "string"},
                "tilde~x": {"type": "integer"},
                "nested": {"$id": "nested.json", "$defs": {"inner": {"$anchor": "in"}}}
            }
        });
        let resources = Default::default();
        let doc = Document::new(&schema, &resources);
        let base = Uri::parse("https://example.com/root.json");
        assert_eq!(
            doc.resolve(&base, "#/$defs/a~1b"),
            Ok("/$defs/a~1b".to_string())
        );
        assert_eq!(
            doc.resolve(&base, "#/$defs/c%25d"),
            Ok("/$defs/c%d".to_string())
        );
        assert_eq!(
            doc.resolve(&base, "#/$defs/tilde~0x"),
            Ok("/$defs/tilde~0x".to_string())
        );
        assert_eq!(doc.resolve(&base, "#slash"), Ok("/$defs/a~1b".to_string()));
        assert_eq!(
            doc.resolve(&base, "nested.json#in"),
            Ok("/$defs/nested/$defs/inner".to_string())
        );
        assert_eq!(
            doc.resolve(&base, "https://example.com/nested.json"),
            Ok("/$defs/nested".to_string())
        );
        assert_eq!(doc.resolve(&base, "#"), Ok(String::new()));
        assert!(doc.resolve(&base, "#/$defs/missing").is_err());
        assert!(doc.resolve(&base, "https://other.example/x.json").is_err());
        assert!(doc.resolve(&base, "#nope").is_err());
    }
}
