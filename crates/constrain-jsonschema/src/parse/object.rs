//! Object keywords: `properties`, `patternProperties`, `additionalProperties`,
//! `propertyNames`, `required`, counts, dependencies and `unevaluatedProperties`, read into an
//! [`ObjectSet`].

use std::rc::Rc;

use serde_json::{Map, Value};

use crate::ctx::Ctx;
use crate::error::SchemaError;
use crate::ir::{Evaluated, KeyRule, KeySet, Node, ObjectSet, Typed};
use crate::re::Re;
use crate::uri::Uri;
use crate::AdditionalProperties;

use super::{child, has_in_place_applicator, Types};

impl Ctx<'_> {
    pub(super) fn object_set(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
        base: &Uri,
        depth: usize,
    ) -> Result<Option<ObjectSet>, SchemaError> {
        let mut set = ObjectSet::default();
        let mut patterns: Vec<(Rc<Re>, Node)> = Vec::new();
        if let Some(v) = map.get("patternProperties") {
            let ptr = child(pointer, "patternProperties");
            let Value::Object(pp) = v else {
                return Err(self.invalid(&ptr, "'patternProperties' must be an object"));
            };
            for (pat, sub) in pp {
                let sub_ptr = child(&ptr, pat);
                let node = self.parse_schema(sub, &sub_ptr, base, depth + 1)?;
                if let Some(re) = self.pattern(pat, &sub_ptr, "patternProperties")? {
                    patterns.push((Rc::new(re), node));
                }
            }
        }
        if let Some(v) = map.get("properties") {
            let ptr = child(pointer, "properties");
            let Value::Object(props) = v else {
                return Err(self.invalid(&ptr, "'properties' must be an object"));
            };
            for (name, sub) in props {
                let mut node = self.parse_schema(sub, &child(&ptr, name), base, depth + 1)?;
                for (re, pnode) in &patterns {
                    if self.lang_matches(re, name)? {
                        node = self.meet(&node, pnode, &ptr)?;
                    }
                }
                set.props.push((name.clone(), node));
            }
        }
        for (re, node) in &patterns {
            set.rules.push(KeyRule {
                keys: KeySet::Lang(re.clone()),
                value: node.clone(),
            });
        }
        let mut additional = self.sub(map, "additionalProperties", pointer, base, depth)?;
        if additional.is_none() {
            if let Some(u) = map.get("unevaluatedProperties") {
                let ptr = child(pointer, "unevaluatedProperties");
                let in_place = has_in_place_applicator(map);
                // With in-place applicators, it is applied after them (see `parse_object`).
                if !in_place {
                    additional = Some(self.parse_schema(u, &ptr, base, depth + 1)?);
                }
            }
        }
        if additional.is_none()
            && self.options.additional_properties == AdditionalProperties::Strict
            && map.contains_key("properties")
        {
            additional = Some(Node::Nothing);
        }
        if self.doc.has_unevaluated_properties {
            set.evaluated = Evaluated {
                names: set.props.iter().map(|(k, _)| k.clone()).collect(),
                langs: patterns.iter().map(|(re, _)| re.clone()).collect(),
                all: additional.is_some(),
            };
        }
        if let Some(value) = additional {
            let names: Vec<String> = set.props.iter().map(|(k, _)| k.clone()).collect();
            let langs: Vec<Rc<Re>> = patterns.iter().map(|(re, _)| re.clone()).collect();
            set.rules.push(KeyRule {
                keys: KeySet::Other {
                    names: names.into(),
                    langs: langs.into(),
                },
                value,
            });
        }
        if let Some(v) = map.get("required") {
            let ptr = child(pointer, "required");
            match v {
                Value::Array(names) => {
                    for n in names {
                        let Some(n) = n.as_str() else {
                            return Err(self.invalid(&ptr, "'required' entries must be strings"));
                        };
                        if !set.required.iter().any(|r| r == n) {
                            set.required.push(n.to_string());
                        }
                    }
                }
                // Draft 3 put a boolean `required` on the property itself; it is ignored.
                Value::Bool(_) => {}
                _ => return Err(self.invalid(&ptr, "'required' must be an array of strings")),
            }
        }
        set.min = self.count(map, "minProperties", pointer)?.unwrap_or(0);
        set.max = self.count(map, "maxProperties", pointer)?;
        if let Some(names) = self.sub(map, "propertyNames", pointer, base, depth)? {
            let ptr = child(pointer, "propertyNames");
            if let Some(re) = self.names_lang(&names, &ptr)? {
                set.names.push(Rc::new(re));
            }
        }
        Ok(Some(set))
    }

    /// `node` with `unevaluatedProperties: u` applied to every object it allows: keys that
    /// none of its (combined) `properties`, `patternProperties` and `additionalProperties`
    /// evaluated must have values in `u`.
    pub(super) fn unevaluated_properties(
        &mut self,
        node: &Node,
        u: &Node,
        pointer: &str,
    ) -> Result<Node, SchemaError> {
        self.each_typed_branch(node, "unevaluatedProperties", pointer, 0, &mut |ctx, t| {
            let Some(o) = t.object.as_ref().filter(|o| !o.evaluated.all) else {
                return Ok(Node::typed(t.clone()));
            };
            let mut o = o.clone();
            let names = o.evaluated.names.clone();
            let langs = o.evaluated.langs.clone();
            for (k, n) in o.props.iter_mut() {
                let mut evaluated = names.contains(k);
                for l in &langs {
                    evaluated = evaluated || ctx.lang_matches(l, k)?;
                }
                if !evaluated {
                    *n = ctx.meet(n, u, pointer)?;
                }
            }
            o.rules.push(KeyRule {
                keys: KeySet::Other {
                    names: names.into(),
                    langs: langs.into(),
                },
                value: u.clone(),
            });
            o.evaluated.all = true;
            Ok(Node::typed(Typed {
                object: ctx.normalize_object(o, pointer)?,
                ..t.clone()
            }))
        })
    }

    /// Whether `node` is a finite set of at most a dozen values (without following references).
    pub(super) fn small_finite(&self, node: &Node) -> bool {
        match node {
            Node::Nothing => true,
            Node::Const(values) => values.len() <= crate::unique::MAX_GRAMMAR_UNIQUE_VALUES,
            Node::Typed(t) => {
                t.number.is_none() && t.string.is_none() && t.array.is_none() && t.object.is_none()
            }
            Node::AnyOf(parts) => parts.iter().all(|p| self.small_finite(p)),
            Node::Any | Node::Ref(_) => false,
        }
    }

    /// The language of the strings a `propertyNames` schema accepts (`None`: all).
    pub(crate) fn names_lang(
        &mut self,
        node: &Node,
        pointer: &str,
    ) -> Result<Option<Re>, SchemaError> {
        let node = self
            .expand(node)
            .map_err(|f| self.fail_to_error(f, pointer))?;
        Ok(match &node {
            Node::Any => None,
            Node::Nothing => Some(Re::nothing()),
            Node::Const(values) => Some(Re::alt(
                values
                    .iter()
                    .filter_map(|l| l.value.as_str().map(Re::literal))
                    .collect(),
            )),
            Node::Typed(t) => match &t.string {
                None => Some(Re::nothing()),
                Some(s) if s.is_all() => None,
                Some(s) => match crate::strings::string_re(s) {
                    Ok(re) => Some(re),
                    Err(e) => {
                        self.unsupported(pointer, "propertyNames", format!("{e}"))?;
                        None
                    }
                },
            },
            Node::AnyOf(parts) => {
                let mut alts = Vec::new();
                for p in parts.iter() {
                    match self.names_lang(p, pointer)? {
                        None => return Ok(None),
                        Some(re) => alts.push(re),
                    }
                }
                Some(Re::alt(alts))
            }
            Node::Ref(_) => None,
        })
    }

    /// `dependentRequired`, `dependentSchemas` and draft 7 `dependencies`.
    pub(super) fn dependencies(
        &mut self,
        mut node: Node,
        map: &Map<String, Value>,
        pointer: &str,
        base: &Uri,
        depth: usize,
        types: Types,
    ) -> Result<Node, SchemaError> {
        if !types.object {
            return Ok(node);
        }
        let mut required: Vec<(String, Vec<String>, String)> = Vec::new();
        let mut schemas: Vec<(String, Node)> = Vec::new();
        for key in ["dependentRequired", "dependentSchemas", "dependencies"] {
            let Some(v) = map.get(key) else { continue };
            let ptr = child(pointer, key);
            let Value::Object(deps) = v else {
                return Err(self.invalid(&ptr, format!("'{key}' must be an object")));
            };
            for (name, dep) in deps {
                let dep_ptr = child(&ptr, name);
                match dep {
                    Value::Array(names) if key != "dependentSchemas" => {
                        let names = names
                            .iter()
                            .map(|n| {
                                n.as_str().map(str::to_string).ok_or_else(|| {
                                    self.invalid(&dep_ptr, "dependency names must be strings")
                                })
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        required.push((name.clone(), names, dep_ptr));
                    }
                    _ if key != "dependentRequired" => {
                        // Its instances are objects with `name`, and in the schema so far.
                        let present = self.meet(&node, &present_key(name), &dep_ptr)?;
                        let n = self.parse_within(dep, &dep_ptr, base, depth + 1, &present)?;
                        schemas.push((name.clone(), n));
                    }
                    _ => {
                        return Err(self.invalid(
                            &dep_ptr,
                            "'dependentRequired' values must be arrays of names",
                        ))
                    }
                }
            }
        }
        for (name, names, dep_ptr) in required {
            if names.is_empty() {
                continue;
            }
            let mut all = vec![name.clone()];
            all.extend(names);
            let with = ObjectSet {
                required: all,
                ..ObjectSet::default()
            };
            let alt = self.dependency(
                &name,
                Node::typed(Typed {
                    object: Some(with),
                    ..Typed::default()
                }),
                &dep_ptr,
            )?;
            node = self.meet(&node, &alt, &dep_ptr)?;
        }
        for (name, n) in schemas {
            if n == Node::Any {
                continue;
            }
            let dep_ptr = child(pointer, &name);
            let with = self.meet(&present_key(&name), &n, &dep_ptr)?;
            let alt = self.dependency(&name, with, &dep_ptr)?;
            node = self.meet(&node, &alt, &dep_ptr)?;
        }
        Ok(node)
    }

    /// Non-objects, objects without `name`, or `with`.
    pub(super) fn dependency(
        &mut self,
        name: &str,
        with: Node,
        _pointer: &str,
    ) -> Result<Node, SchemaError> {
        let mut others = Typed::all();
        others.object = None;
        let without = ObjectSet {
            props: vec![(name.to_string(), Node::Nothing)],
            ..ObjectSet::default()
        };
        Ok(Node::any_of(vec![
            Node::typed(others),
            Node::typed(Typed {
                object: Some(without),
                ..Typed::default()
            }),
            with,
        ]))
    }
}

/// The objects that have the key `name`.
pub(super) fn present_key(name: &str) -> Node {
    Node::typed(Typed {
        object: Some(ObjectSet {
            required: vec![name.to_string()],
            ..ObjectSet::default()
        }),
        ..Typed::default()
    })
}
