//! From schema JSON to [`Node`]s: every keyword of one schema object is read, checked and
//! folded into the set of values it accepts.

use std::rc::Rc;

use serde_json::{Map, Value};

use crate::ctx::{pointer_or_root, Ctx, Fail, MAX_SCHEMA_DEPTH};
use crate::document::{Draft, Location};
use crate::error::{SchemaError, WarningKind};
use crate::formats;
use crate::ir::{
    ArraySet, Contains, Evaluated, EvaluatedItems, KeyRule, KeySet, Node, NumberSet, ObjectSet,
    StringSet, Typed,
};
use crate::number::{Bound, Decimal};
use crate::re::{ecma, Re};
use crate::strings::StringLanguage;
use crate::uri::{escape_token, Uri};
use crate::AdditionalProperties;

/// Keywords that only annotate, or are read elsewhere (`$ref`, `$defs`...).
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$comment",
    "$defs",
    "definitions",
    "$vocabulary",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "$ref",
];

/// Keywords of the validation and applicator vocabularies handled by [`Ctx::parse_object`].
const KNOWN: &[&str] = &[
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "items",
    "prefixItems",
    "additionalItems",
    "maxItems",
    "minItems",
    "uniqueItems",
    "contains",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
];

/// Keywords that draft 7 introduced: in a draft 4 document they are unknown words, ignored.
const CONDITIONALS: [&str; 3] = ["if", "then", "else"];

/// The JSON types a `type` keyword allows.
#[derive(Clone, Copy)]
struct Types {
    null: bool,
    boolean: bool,
    number: bool,
    integer: bool,
    string: bool,
    array: bool,
    object: bool,
}

impl Types {
    fn all() -> Types {
        Types {
            null: true,
            boolean: true,
            number: true,
            integer: true,
            string: true,
            array: true,
            object: true,
        }
    }

    fn none() -> Types {
        Types {
            null: false,
            boolean: false,
            number: false,
            integer: false,
            string: false,
            array: false,
            object: false,
        }
    }
}

fn child(pointer: &str, token: &str) -> String {
    format!("{pointer}/{}", escape_token(token))
}

impl Ctx<'_> {
    fn invalid(&self, pointer: &str, message: impl Into<String>) -> SchemaError {
        SchemaError::Invalid {
            pointer: pointer_or_root(pointer),
            message: message.into(),
        }
    }

    /// The set of values a schema (object or boolean) accepts.
    pub(crate) fn parse_schema(
        &mut self,
        value: &Value,
        pointer: &str,
        base: &Uri,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        match value {
            Value::Bool(true) => Ok(Node::Any),
            Value::Bool(false) => Ok(Node::Nothing),
            Value::Object(map) => {
                if depth > MAX_SCHEMA_DEPTH {
                    return Err(SchemaError::TooComplex {
                        pointer: pointer_or_root(pointer),
                        what: "schema nesting depth".into(),
                        limit: MAX_SCHEMA_DEPTH,
                    });
                }
                let base = self.own_base(map, pointer, base);
                let inner = self.doc.enter(&self.scope, &base);
                let outer = inner.map(|inner| std::mem::replace(&mut self.scope, inner));
                let parsed = self.parse_object(map, pointer, &base, depth);
                if let Some(outer) = outer {
                    self.scope = outer;
                }
                parsed
            }
            _ => Err(self.invalid(pointer, "a schema must be an object or a boolean")),
        }
    }

    /// Parses a subschema whose instances are known to be in `context` (the condition of a
    /// `then`, the present key of a dependency, the siblings of an `allOf` or `anyOf`).
    ///
    /// Only a `oneOf` directly in it reads the context: its branches, restricted to it, may be
    /// disjoint where the bare branches overlap (the variants of a dependency differ in the
    /// value of the key whose presence the dependency implies), and disjoint branches need no
    /// complements. The result may then be restricted to `context`, which every caller
    /// intersects it with anyway.
    fn parse_within(
        &mut self,
        value: &Value,
        pointer: &str,
        base: &Uri,
        depth: usize,
        context: &Node,
    ) -> Result<Node, SchemaError> {
        self.within = (*context != Node::Any).then(|| context.clone());
        let parsed = self.parse_schema(value, pointer, base, depth);
        self.within = None;
        parsed
    }

    fn sub(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        pointer: &str,
        base: &Uri,
        depth: usize,
    ) -> Result<Option<Node>, SchemaError> {
        match map.get(key) {
            None => Ok(None),
            Some(v) => self
                .parse_schema(v, &child(pointer, key), base, depth + 1)
                .map(Some),
        }
    }

    fn sub_array(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        pointer: &str,
        base: &Uri,
        depth: usize,
    ) -> Result<Option<Vec<Node>>, SchemaError> {
        self.sub_array_within(map, key, pointer, base, depth, &Node::Any)
    }

    /// What is known of the instance of a schema object: `node`, what its keywords parsed so
    /// far allow, within the context it was parsed in (see [`Ctx::parse_within`]).
    fn known(
        &mut self,
        within: &Option<Node>,
        node: &Node,
        pointer: &str,
    ) -> Result<Node, SchemaError> {
        match within {
            Some(context) => self.meet(context, node, pointer),
            None => Ok(node.clone()),
        }
    }

    /// [`Ctx::sub_array`] with each item parsed within `context` (see [`Ctx::parse_within`]).
    fn sub_array_within(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        pointer: &str,
        base: &Uri,
        depth: usize,
        context: &Node,
    ) -> Result<Option<Vec<Node>>, SchemaError> {
        let Some(v) = map.get(key) else {
            return Ok(None);
        };
        let ptr = child(pointer, key);
        let Value::Array(items) = v else {
            return Err(self.invalid(&ptr, format!("'{key}' must be an array of schemas")));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            out.push(self.parse_within(item, &format!("{ptr}/{i}"), base, depth + 1, context)?);
        }
        Ok(Some(out))
    }

    /// The base URI inside a schema object read with `base`: changed by its `$id`, unless
    /// that is a plain-name anchor or ineffective ([`Draft::effective_id`]).
    fn own_base(&self, map: &Map<String, Value>, pointer: &str, base: &Uri) -> Uri {
        match self.doc.draft_at(pointer).effective_id(map) {
            Some(id) if !id.starts_with('#') => base.resolve(id).without_fragment(),
            _ => base.clone(),
        }
    }

    /// Where the schema object's reference `kw` (`$ref`, `$dynamicRef` or `$recursiveRef`)
    /// leads, with the dynamic scope in force.
    fn reference(
        &self,
        map: &Map<String, Value>,
        kw: &str,
        pointer: &str,
        base: &Uri,
    ) -> Result<Option<Location>, SchemaError> {
        let Some(r) = map.get(kw) else {
            return Ok(None);
        };
        let ref_ptr = child(pointer, kw);
        let Some(r) = r.as_str() else {
            return Err(self.invalid(&ref_ptr, format!("'{kw}' must be a string")));
        };
        let target = match kw {
            "$ref" => self.doc.resolve(base, r),
            _ => self
                .doc
                .resolve_dynamic(base, r, kw == "$recursiveRef", &self.scope),
        }
        .map_err(|reason| SchemaError::UnresolvedRef {
            reference: r.to_string(),
            pointer: pointer_or_root(&ref_ptr),
            reason,
        })?;
        Ok(Some(Location {
            base: self.doc.base_at(&target),
            pointer: target,
            scope: self.scope.clone(),
        }))
    }

    fn parse_object(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
        base: &Uri,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        // Only this schema object is parsed within the context, not its subschemas; and not
        // one with `unevaluatedProperties`, which must not see the context's annotations.
        let within = self
            .within
            .take()
            .filter(|_| !map.contains_key("unevaluatedProperties"));
        let draft = self.doc.draft_at(pointer);
        let mut node = Node::Any;
        for kw in ["$ref", "$dynamicRef", "$recursiveRef"] {
            let Some(target) = self.reference(map, kw, pointer, base)? else {
                continue;
            };
            let def = self.schema_def(target)?;
            if draft <= Draft::Draft7 {
                return Ok(Node::Ref(def));
            }
            // Several references all apply (`$ref` beside `$dynamicRef`).
            node = match node {
                Node::Any => Node::Ref(def),
                _ => self.meet(&node, &Node::Ref(def), pointer)?,
            };
        }
        for key in map.keys() {
            let k = key.as_str();
            if ANNOTATIONS.contains(&k)
                || (KNOWN.contains(&k) && !(draft == Draft::Draft4 && CONDITIONALS.contains(&k)))
                || (k == "id" && draft == Draft::Draft4)
            {
                continue;
            }
            self.warn(
                &child(pointer, k),
                k,
                WarningKind::UnknownKeyword,
                "not a JSON Schema keyword: ignored",
            );
        }

        let types = self.types(map, pointer)?;
        let typed = self.typed(map, types, pointer, base, depth)?;
        node = self.meet(&node, &typed, pointer)?;

        if let Some(v) = map.get("const") {
            node = self.meet(&node, &Node::constant(vec![v.clone()]), pointer)?;
        }
        if let Some(v) = map.get("enum") {
            let Value::Array(values) = v else {
                return Err(self.invalid(&child(pointer, "enum"), "'enum' must be an array"));
            };
            node = self.meet(&node, &Node::constant(values.clone()), pointer)?;
        }
        let context = if map.contains_key("allOf") || map.contains_key("anyOf") {
            self.known(&within, &node, pointer)?
        } else {
            Node::Any
        };
        if let Some(parts) = self.sub_array_within(map, "allOf", pointer, base, depth, &context)? {
            for p in parts {
                node = self.meet(&node, &p, pointer)?;
            }
        }
        if let Some(parts) = self.sub_array_within(map, "anyOf", pointer, base, depth, &context)? {
            node = self.meet(&node, &Node::any_of(parts), pointer)?;
        }
        if let Some(parts) = self.sub_array(map, "oneOf", pointer, base, depth)? {
            let known = self.known(&within, &node, pointer)?;
            node = self.one_of(&known, parts, &child(pointer, "oneOf"))?;
        }
        if let Some(n) = self.sub(map, "not", pointer, base, depth)? {
            let c = self.complement_or_drop(&n, &child(pointer, "not"), "not")?;
            node = self.meet(&node, &c, pointer)?;
        }
        // Draft 4 has no conditionals: there `if` is an unknown word, its subschema unread.
        let cond = if draft == Draft::Draft4 {
            None
        } else {
            self.sub(map, "if", pointer, base, depth)?
        };
        if let Some(cond) = cond {
            let then = match map.get("then") {
                Some(v) => {
                    let ptr = child(pointer, "then");
                    let known = self.known(&within, &node, &ptr)?;
                    let context = self.meet(&known, &cond, &ptr)?;
                    Some(self.parse_within(v, &ptr, base, depth + 1, &context)?)
                }
                None => None,
            };
            let otherwise = self.sub(map, "else", pointer, base, depth)?;
            // `unevaluatedProperties` and `unevaluatedItems` see the annotations of a passing
            // `if`: keep it even when there is no `then` or `else`.
            let keep =
                map.contains_key("unevaluatedProperties") || map.contains_key("unevaluatedItems");
            let c = self.if_then_else(cond, then, otherwise, keep, &child(pointer, "if"))?;
            node = self.meet(&node, &c, pointer)?;
        }
        node = self.dependencies(node, map, pointer, base, depth, types)?;
        if let Some(u) = map.get("unevaluatedProperties") {
            let in_place = has_in_place_applicator(map);
            if in_place && map.get("additionalProperties").is_none() {
                let ptr = child(pointer, "unevaluatedProperties");
                let u = self.parse_schema(u, &ptr, base, depth + 1)?;
                if u != Node::Any {
                    // Annotations of branches that simplification merged away (an `anyOf` with
                    // a `true` branch...) are lost, which only makes the result stricter:
                    // marked as a subset, it is never complemented.
                    node = mark_approximate(
                        &self.unevaluated_properties(&node, &u, &ptr)?,
                        Narrowed::Objects,
                    );
                }
            }
        }
        if let Some(u) = map.get("unevaluatedItems") {
            if (has_in_place_applicator(map) || map.contains_key("contains"))
                && !evaluates_every_item(map)
            {
                let ptr = child(pointer, "unevaluatedItems");
                let u = self.parse_schema(u, &ptr, base, depth + 1)?;
                if u != Node::Any {
                    // As for properties: each `anyOf` branch alone evaluates less.
                    node = mark_approximate(
                        &self.unevaluated_items(&node, &u, &ptr)?,
                        Narrowed::Arrays,
                    );
                }
            }
        }
        Ok(node)
    }

    /// `node` with `apply` applied to each of its typed branches, through unions and
    /// references, for the `unevaluated*` keyword `keyword`: a branch that allows every value
    /// is `Typed::all()`, and a literal is kept where that allows it.
    fn each_typed_branch(
        &mut self,
        node: &Node,
        keyword: &str,
        pointer: &str,
        depth: usize,
        apply: &mut dyn FnMut(&mut Self, &Typed) -> Result<Node, SchemaError>,
    ) -> Result<Node, SchemaError> {
        let unsupported = |reason: &str| SchemaError::Unsupported {
            keyword: keyword.into(),
            pointer: pointer_or_root(pointer),
            reason: reason.into(),
        };
        if depth > 16 {
            return Err(unsupported(
                "references nested too deeply to collect the annotations it reads",
            ));
        }
        match node {
            Node::Nothing => Ok(Node::Nothing),
            Node::Any => apply(self, &Typed::all()),
            Node::Const(_) => {
                // Literals evaluate nothing.
                let any = apply(self, &Typed::all())?;
                self.meet(node, &any, pointer)
            }
            Node::AnyOf(parts) => {
                let mut out = Vec::with_capacity(parts.len());
                for p in parts.iter() {
                    out.push(self.each_typed_branch(p, keyword, pointer, depth, apply)?);
                }
                // An instance matching several branches has the annotations of all of them;
                // each branch alone evaluates less, so the union may only be a subset.
                Ok(Node::any_of(out))
            }
            Node::Ref(_) => {
                let body = match self.expand(node) {
                    Ok(b) => b,
                    Err(Fail::InProgress(_)) => {
                        return Err(unsupported("on a schema that refers to itself"))
                    }
                    Err(Fail::Error(e)) => return Err(e),
                };
                self.each_typed_branch(&body, keyword, pointer, depth + 1, apply)
            }
            Node::Typed(t) => apply(self, t),
        }
    }

    /// `node` with `unevaluatedItems: u` applied to every array it allows: elements that
    /// none of its (combined) `prefixItems`, `items` and `contains` evaluated must be in `u`.
    fn unevaluated_items(
        &mut self,
        node: &Node,
        u: &Node,
        pointer: &str,
    ) -> Result<Node, SchemaError> {
        self.each_typed_branch(node, "unevaluatedItems", pointer, 0, &mut |ctx, t| {
            let Some(a) = t.array.as_ref().filter(|a| !a.evaluated.all) else {
                return Ok(Node::typed(t.clone()));
            };
            let mut a = a.clone();
            // An element past the evaluated prefix is in `u` unless a `contains` evaluated it.
            let mut unevaluated = vec![u.clone()];
            unevaluated.extend(a.evaluated.contains.iter().cloned());
            let unevaluated = Node::any_of(unevaluated);
            let evaluated = a.evaluated.prefix;
            while a.prefix.len() < evaluated {
                a.prefix.push(a.items.clone());
            }
            for p in a.prefix.iter_mut().skip(evaluated) {
                *p = ctx.meet(p, &unevaluated, pointer)?;
            }
            a.items = ctx.meet(&a.items, &unevaluated, pointer)?;
            a.evaluated.all = true;
            Ok(Node::typed(Typed {
                array: crate::algebra::normalize_array(a),
                ..t.clone()
            }))
        })
    }

    /// `node` with `unevaluatedProperties: u` applied to every object it allows: keys that
    /// none of its (combined) `properties`, `patternProperties` and `additionalProperties`
    /// evaluated must have values in `u`.
    fn unevaluated_properties(
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

    /// `if`/`then`/`else`: (if ∧ then) ∪ (¬if ∧ else).
    fn if_then_else(
        &mut self,
        cond: Node,
        then: Option<Node>,
        otherwise: Option<Node>,
        keep_condition: bool,
        pointer: &str,
    ) -> Result<Node, SchemaError> {
        let then = then.unwrap_or(Node::Any);
        let otherwise = otherwise.unwrap_or(Node::Any);
        if then == Node::Any && otherwise == Node::Any && !keep_condition {
            return Ok(Node::Any);
        }
        if then == Node::Any && !keep_condition {
            // cond ∪ (¬cond ∧ else) = cond ∪ else
            return Ok(Node::any_of(vec![cond, otherwise]));
        }
        let yes = self.meet(&cond, &then, pointer)?;
        let not_cond = match self.complement(&cond, pointer) {
            Ok(n) => n,
            // Only kept for its annotations: without them `unevaluatedProperties` is stricter.
            Err(SchemaError::Unsupported { .. }) if then == Node::Any && otherwise == Node::Any => {
                return Ok(Node::Any)
            }
            Err(SchemaError::Unsupported { reason, .. }) => {
                self.unsupported(
                    pointer,
                    "if",
                    format!("cannot negate the condition: {reason}"),
                )?;
                return Ok(Node::any_of(vec![then, otherwise]));
            }
            Err(e) => return Err(e),
        };
        let no = self.meet(&not_cond, &otherwise, pointer)?;
        Ok(Node::any_of(vec![yes, no]))
    }

    /// The complement of `n`; with `lenient`, an uncomplementable `not` is dropped.
    fn complement_or_drop(
        &mut self,
        n: &Node,
        pointer: &str,
        keyword: &str,
    ) -> Result<Node, SchemaError> {
        match self.complement(n, pointer) {
            Ok(c) => Ok(c),
            Err(SchemaError::Unsupported { reason, .. }) => {
                self.unsupported(pointer, keyword, reason)?;
                Ok(Node::Any)
            }
            Err(e) => Err(e),
        }
    }

    fn types(&self, map: &Map<String, Value>, pointer: &str) -> Result<Types, SchemaError> {
        let Some(t) = map.get("type") else {
            return Ok(Types::all());
        };
        let ptr = child(pointer, "type");
        let names: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .ok_or_else(|| self.invalid(&ptr, "'type' entries must be strings"))
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(self.invalid(&ptr, "'type' must be a string or an array of strings")),
        };
        let mut types = Types::none();
        for name in names {
            match name {
                "null" => types.null = true,
                "boolean" => types.boolean = true,
                "number" => types.number = true,
                "integer" => types.integer = true,
                "string" => types.string = true,
                "array" => types.array = true,
                "object" => types.object = true,
                "any" => types = Types::all(),
                other => return Err(self.invalid(&ptr, format!("unknown type '{other}'"))),
            }
        }
        Ok(types)
    }

    fn typed(
        &mut self,
        map: &Map<String, Value>,
        types: Types,
        pointer: &str,
        base: &Uri,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        let mut t = Typed {
            null: types.null,
            boolean: types.boolean,
            ..Typed::default()
        };
        if types.number || types.integer {
            t.number = self.number_set(map, pointer, !types.number)?;
        }
        if types.string {
            t.string = self.string_set(map, pointer)?;
        }
        if types.array {
            t.array = self.array_set(map, pointer, base, depth)?;
        }
        if types.object {
            t.object = self.object_set(map, pointer, base, depth)?;
        }
        if t.is_all() {
            return Ok(Node::Any);
        }
        Ok(Node::typed(t))
    }

    fn number(
        &self,
        map: &Map<String, Value>,
        key: &str,
        pointer: &str,
    ) -> Result<Option<Decimal>, SchemaError> {
        match map.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => Decimal::from_json(n).map(Some).ok_or_else(|| {
                self.invalid(
                    &child(pointer, key),
                    format!("'{key}' is not a finite number"),
                )
            }),
            Some(_) => Err(self.invalid(&child(pointer, key), format!("'{key}' must be a number"))),
        }
    }

    fn count(
        &self,
        map: &Map<String, Value>,
        key: &str,
        pointer: &str,
    ) -> Result<Option<u64>, SchemaError> {
        let Some(v) = self.number(map, key, pointer)? else {
            return Ok(None);
        };
        if v.is_negative() || !v.is_integer() {
            return Err(self.invalid(
                &child(pointer, key),
                format!("'{key}' must be a non-negative integer"),
            ));
        }
        Ok(Some(v.to_u128().map_or(u64::MAX, |x| {
            u64::try_from(x).unwrap_or(u64::MAX)
        })))
    }

    fn number_set(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
        integer: bool,
    ) -> Result<Option<NumberSet>, SchemaError> {
        let mut set = NumberSet {
            integer,
            ..NumberSet::default()
        };
        let draft4_flag = |key: &str| map.get(key).and_then(Value::as_bool);
        let minimum = self.number(map, "minimum", pointer)?;
        let maximum = self.number(map, "maximum", pointer)?;
        if let Some(v) = minimum {
            set.lo = Some(Bound {
                value: v,
                exclusive: draft4_flag("exclusiveMinimum") == Some(true),
            });
        }
        if let Some(v) = maximum {
            set.hi = Some(Bound {
                value: v,
                exclusive: draft4_flag("exclusiveMaximum") == Some(true),
            });
        }
        if draft4_flag("exclusiveMinimum").is_none() {
            if let Some(v) = self.number(map, "exclusiveMinimum", pointer)? {
                set.lo = tighter_lo(
                    set.lo.take(),
                    Bound {
                        value: v,
                        exclusive: true,
                    },
                );
            }
        }
        if draft4_flag("exclusiveMaximum").is_none() {
            if let Some(v) = self.number(map, "exclusiveMaximum", pointer)? {
                set.hi = tighter_hi(
                    set.hi.take(),
                    Bound {
                        value: v,
                        exclusive: true,
                    },
                );
            }
        }
        if let Some(m) = self.number(map, "multipleOf", pointer)? {
            if m.is_negative() || m.is_zero() {
                return Err(self.invalid(
                    &child(pointer, "multipleOf"),
                    "'multipleOf' must be greater than 0",
                ));
            }
            set.multiple_of.push(m);
        }
        Ok(Some(set))
    }

    fn string_set(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
    ) -> Result<Option<StringSet>, SchemaError> {
        let mut set = StringSet {
            min_len: self.count(map, "minLength", pointer)?.unwrap_or(0),
            max_len: self.count(map, "maxLength", pointer)?,
            langs: Vec::new(),
        };
        if let Some(p) = map.get("pattern") {
            let ptr = child(pointer, "pattern");
            let Some(p) = p.as_str() else {
                return Err(self.invalid(&ptr, "'pattern' must be a string"));
            };
            if let Some(re) = self.pattern(p, &ptr, "pattern")? {
                set.langs.push(Rc::new(re));
            }
        }
        if let Some(f) = map.get("format") {
            let ptr = child(pointer, "format");
            let Some(name) = f.as_str() else {
                return Err(self.invalid(&ptr, "'format' must be a string"));
            };
            if self.options.assert_formats {
                match formats::format_re(name) {
                    Some(re) => {
                        let re = Rc::new(re);
                        if let Some(superset) = formats::superset_re(name) {
                            self.subset_langs.insert(re.clone(), Rc::new(superset));
                        }
                        set.langs.push(re);
                    }
                    None if formats::NOT_REGULAR.contains(&name) => {
                        self.unsupported(
                            &ptr,
                            "format",
                            format!("format '{name}' is not a regular language"),
                        )?;
                    }
                    None => self.warn(
                        &ptr,
                        "format",
                        WarningKind::UnknownFormat,
                        format!("unknown format '{name}': not enforced"),
                    ),
                }
            }
        }
        if set.min_len > crate::strings::MAX_LENGTH_BOUND {
            return Err(SchemaError::TooComplex {
                pointer: pointer_or_root(&child(pointer, "minLength")),
                what: format!("minLength of {}", set.min_len),
                limit: crate::strings::MAX_LENGTH_BOUND as usize,
            });
        }
        let capped = crate::strings::capped(&set);
        if let (Some(m), Some(c)) = (set.max_len, capped.max_len) {
            if c < m {
                self.warn(
                    &child(pointer, "maxLength"),
                    "maxLength",
                    WarningKind::Narrowed,
                    format!("maxLength {m} is generated as {c}: longer strings are not produced"),
                );
            }
        }
        // Check now, where the keywords are, that the constraints combine.
        match crate::strings::string_language(&capped) {
            Ok(StringLanguage::Exact(_) | StringLanguage::Automaton { .. }) => {}
            Ok(StringLanguage::Subset(_)) => self.warn(
                &child(pointer, "maxLength"),
                "maxLength",
                WarningKind::Narrowed,
                "length bounds and pattern/format do not combine exactly within the budget: only strings whose parts share the length evenly are generated",
            ),
            Err(e) => {
                self.unsupported(pointer, "pattern", format!("patterns/formats do not combine: {e}"))?;
                set.langs.clear();
            }
        }
        Ok(Some(set))
    }

    /// A pattern's search language; `None` when it is dropped (lenient).
    pub(crate) fn pattern(
        &mut self,
        pattern: &str,
        pointer: &str,
        keyword: &str,
    ) -> Result<Option<Re>, SchemaError> {
        match ecma::search_language(pattern) {
            Ok(re) => {
                if re.has_looks() {
                    match crate::re::dfa::intersect_all(&[re]) {
                        Ok(r) => Ok(Some(r)),
                        Err(e) => {
                            self.unsupported(
                                pointer,
                                keyword,
                                format!(
                                    "pattern {pattern:?}: automaton exceeds {} {}",
                                    e.limit, e.what
                                ),
                            )?;
                            Ok(None)
                        }
                    }
                } else {
                    Ok(Some(re))
                }
            }
            Err(e) if e.unsupported => {
                self.unsupported(pointer, keyword, format!("pattern {pattern:?}: {e}"))?;
                Ok(None)
            }
            Err(e) => Err(self.invalid(pointer, format!("invalid pattern {pattern:?}: {e}"))),
        }
    }

    fn array_set(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
        base: &Uri,
        depth: usize,
    ) -> Result<Option<ArraySet>, SchemaError> {
        let mut set = ArraySet::default();
        let tuple_items = matches!(map.get("items"), Some(Value::Array(_)));
        if let Some(prefix) = self.sub_array(map, "prefixItems", pointer, base, depth)? {
            set.prefix = prefix;
            if let Some(items) = self.sub(map, "items", pointer, base, depth)? {
                set.items = items;
            }
        } else if tuple_items {
            // Draft 7 tuple form: `items` is the prefix, `additionalItems` the rest.
            set.prefix = self
                .sub_array(map, "items", pointer, base, depth)?
                .unwrap_or_default();
            if let Some(rest) = self.sub(map, "additionalItems", pointer, base, depth)? {
                set.items = rest;
            }
        } else if let Some(items) = self.sub(map, "items", pointer, base, depth)? {
            set.items = items;
        }
        set.min = self.count(map, "minItems", pointer)?.unwrap_or(0);
        set.max = self.count(map, "maxItems", pointer)?;
        if let Some(c) = self.sub(map, "contains", pointer, base, depth)? {
            let min = self.count(map, "minContains", pointer)?.unwrap_or(1);
            let max = self.count(map, "maxContains", pointer)?;
            set.contains.push(Contains { node: c, min, max });
        }
        match map.get("uniqueItems") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => {
                // Distinct elements are tracked by the grammar when they come from a small
                // finite set, by the check beside it when they are strings that never run
                // out (see `crate::unique`).
                set.unique = set.max.is_none_or(|m| m > 1);
                if set.unique
                    && !(set.prefix.is_empty()
                        && set.contains.is_empty()
                        && self.small_finite(&set.items))
                {
                    let by_check = match crate::unique::check_can_keep_unique(self, &set) {
                        Ok(can) => can,
                        Err(Fail::InProgress(_)) => false,
                        Err(Fail::Error(e)) => return Err(e),
                    };
                    if !by_check {
                        self.unsupported(
                            pointer,
                            "uniqueItems",
                            crate::unique::UNIQUE_ITEMS_SUPPORT,
                        )?;
                        set.unique = false;
                    }
                }
            }
            Some(_) => {
                return Err(self.invalid(
                    &child(pointer, "uniqueItems"),
                    "'uniqueItems' must be a boolean",
                ))
            }
        }
        if self.doc.has_unevaluated_items {
            set.evaluated = EvaluatedItems {
                prefix: set.prefix.len(),
                all: evaluates_every_item(map),
                contains: set.contains.iter().map(|c| c.node.clone()).collect(),
            };
        }
        if let Some(u) = map.get("unevaluatedItems") {
            // Next to in-place applicators it is applied to the whole schema (`parse_object`).
            if !set.evaluated.all && !has_in_place_applicator(map) && set.contains.is_empty() {
                let ptr = child(pointer, "unevaluatedItems");
                set.items = self.parse_schema(u, &ptr, base, depth + 1)?;
                set.evaluated.all = true;
            }
        }
        Ok(Some(set))
    }

    fn object_set(
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

    /// Whether `node` is a finite set of at most a dozen values (without following references).
    fn small_finite(&self, node: &Node) -> bool {
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
    fn dependencies(
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
    fn dependency(&mut self, name: &str, with: Node, _pointer: &str) -> Result<Node, SchemaError> {
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
fn present_key(name: &str) -> Node {
    Node::typed(Typed {
        object: Some(ObjectSet {
            required: vec![name.to_string()],
            ..ObjectSet::default()
        }),
        ..Typed::default()
    })
}

/// Whether the array keywords of `map` evaluate every element: `items` (a schema), or the
/// `additionalItems` after draft 7's array of `items`.
fn evaluates_every_item(map: &Map<String, Value>) -> bool {
    match map.get("items") {
        Some(Value::Array(_)) => map.contains_key("additionalItems"),
        Some(_) => true,
        None => false,
    }
}

/// Which sets an `unevaluated*` keyword narrowed.
#[derive(Clone, Copy)]
enum Narrowed {
    Objects,
    Arrays,
}

/// `node` with every object (or array) set marked as a subset of what its schema allows.
fn mark_approximate(node: &Node, narrowed: Narrowed) -> Node {
    match node {
        Node::AnyOf(parts) => Node::any_of(
            parts
                .iter()
                .map(|p| mark_approximate(p, narrowed))
                .collect(),
        ),
        Node::Typed(t) => {
            let mut t = (**t).clone();
            match narrowed {
                Narrowed::Objects => t.object.iter_mut().for_each(|o| o.approximate = true),
                Narrowed::Arrays => t.array.iter_mut().for_each(|a| a.approximate = true),
            }
            Node::typed(t)
        }
        other => other.clone(),
    }
}

fn tighter_lo(old: Option<Bound>, new: Bound) -> Option<Bound> {
    match old {
        None => Some(new),
        Some(o) => Some(crate::algebra::max_lo(o, new)),
    }
}

fn tighter_hi(old: Option<Bound>, new: Bound) -> Option<Bound> {
    match old {
        None => Some(new),
        Some(o) => Some(crate::algebra::min_hi(o, new)),
    }
}

/// Whether `map` has an in-place applicator, whose evaluated properties
/// `unevaluatedProperties` (and items, `unevaluatedItems`) must see.
fn has_in_place_applicator(map: &Map<String, Value>) -> bool {
    const IN_PLACE: &[&str] = &[
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
        "dependentSchemas",
        "dependencies",
    ];
    IN_PLACE.iter().any(|k| map.contains_key(*k))
}
