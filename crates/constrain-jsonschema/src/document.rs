//! The schema document: which draft it follows, where its resources (`$id`) and anchors are,
//! and how a `$ref` resolves to a place in it.

use rustc_hash::FxHashMap;
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
}

/// A place in the document: a JSON pointer and the base URI in force there.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Location {
    pub(crate) pointer: String,
    pub(crate) base: Uri,
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

/// The index of one schema document.
pub(crate) struct Document<'a> {
    pub(crate) root: &'a Value,
    pub(crate) draft: Draft,
    /// Resource URI (no fragment) → pointer of the resource's root.
    resources: FxHashMap<String, String>,
    /// (resource URI, anchor name) → pointer.
    anchors: FxHashMap<(String, String), String>,
    /// Pointer → base URI in force inside that schema.
    bases: FxHashMap<String, Uri>,
}

impl<'a> Document<'a> {
    pub(crate) fn new(root: &'a Value) -> Document<'a> {
        let draft = root
            .get("$schema")
            .and_then(Value::as_str)
            .map_or(Draft::Modern, Draft::from_schema_uri);
        let mut doc = Document {
            root,
            draft,
            resources: FxHashMap::default(),
            anchors: FxHashMap::default(),
            bases: FxHashMap::default(),
        };
        let base = Uri::parse(DEFAULT_BASE);
        doc.resources.insert(base.to_string(), String::new());
        let mut stack = vec![(root, String::new(), base, 0usize)];
        while let Some((value, pointer, base, depth)) = stack.pop() {
            if depth > 1000 {
                continue;
            }
            doc.index(value, pointer, base, depth, &mut stack);
        }
        doc
    }

    /// Records the resources and anchors of one schema and queues its subschemas.
    fn index(
        &mut self,
        value: &'a Value,
        pointer: String,
        base: Uri,
        depth: usize,
        stack: &mut Vec<(&'a Value, String, Uri, usize)>,
    ) {
        let Value::Object(map) = value else { return };
        // The base a schema is read with; its own `$id` is applied when it is read.
        self.bases.insert(pointer.clone(), base.clone());
        let mut base = base;
        let id_kw = self.draft.id_keyword();
        // In drafts up to 7, `$ref` makes siblings (including `$id`) ineffective.
        let ref_overrides = self.draft <= Draft::Draft7 && map.contains_key("$ref");
        if let Some(id) = map
            .get(id_kw)
            .and_then(Value::as_str)
            .filter(|_| !ref_overrides)
        {
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
                "'{resource}' is not part of this document (remote references are not fetched)"
            ));
        };
        let fragment = target.fragment().unwrap_or("");
        let fragment =
            percent_decode(fragment).ok_or("the fragment is not valid percent-encoded UTF-8")?;
        if fragment.is_empty() {
            return Ok(root_ptr.clone());
        }
        if fragment.starts_with('/') {
            let pointer = format!("{root_ptr}{fragment}");
            if self.value_at(&pointer).is_none() {
                return Err(format!("nothing at JSON pointer '{fragment}'"));
            }
            return Ok(pointer);
        }
        self.anchors
            .get(&(resource, fragment.clone()))
            .cloned()
            .ok_or_else(|| format!("no anchor named '{fragment}'"))
    }

    /// The value at a JSON pointer.
    pub(crate) fn value_at(&self, pointer: &str) -> Option<&'a Value> {
        let mut v = self.root;
        for token in pointer_tokens(pointer)? {
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
        let doc = Document::new(&schema);
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
