//! Array keywords: `items`, `prefixItems`, `contains`, counts, `uniqueItems` and
//! `unevaluatedItems`, read into an [`ArraySet`].

use serde_json::{Map, Value};

use crate::ctx::{Ctx, Fail};
use crate::error::SchemaError;
use crate::ir::{ArraySet, Contains, EvaluatedItems, Node, Typed};
use crate::uri::Uri;

use super::{child, has_in_place_applicator};

impl Ctx<'_> {
    pub(super) fn array_set(
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

    /// `node` with `unevaluatedItems: u` applied to every array it allows: elements that
    /// none of its (combined) `prefixItems`, `items` and `contains` evaluated must be in `u`.
    pub(super) fn unevaluated_items(
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
}

/// Whether the array keywords of `map` evaluate every element: `items` (a schema), or the
/// `additionalItems` after draft 7's array of `items`.
pub(super) fn evaluates_every_item(map: &Map<String, Value>) -> bool {
    match map.get("items") {
        Some(Value::Array(_)) => map.contains_key("additionalItems"),
        Some(_) => true,
        None => false,
    }
}
