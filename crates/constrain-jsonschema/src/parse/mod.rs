//! From schema JSON to [`Node`]s: every keyword of one schema object is read, checked and
//! folded into the set of values it accepts.

mod array;
mod number;
mod object;
mod string;

use serde_json::{Map, Value};

use crate::ctx::{Ctx, Fail, MAX_SCHEMA_DEPTH};
use crate::document::{Draft, Location};
use crate::error::{pointer_or_root, SchemaError, WarningKind};
use crate::ir::{Node, Typed};
use crate::uri::{escape_token, Uri};

use array::evaluates_every_item;

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
