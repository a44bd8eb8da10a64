//! Number keywords: `minimum`, `maximum`, their exclusive forms and `multipleOf`, read into a
//! [`NumberSet`].

use serde_json::{Map, Value};

use crate::ctx::Ctx;
use crate::error::SchemaError;
use crate::ir::NumberSet;
use crate::number::{Bound, Decimal};

use super::child;

impl Ctx<'_> {
    pub(super) fn number(
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

    pub(super) fn number_set(
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
}

pub(super) fn tighter_lo(old: Option<Bound>, new: Bound) -> Option<Bound> {
    match old {
        None => Some(new),
        Some(o) => Some(crate::algebra::max_lo(o, new)),
    }
}

pub(super) fn tighter_hi(old: Option<Bound>, new: Bound) -> Option<Bound> {
    match old {
        None => Some(new),
        Some(o) => Some(crate::algebra::min_hi(o, new)),
    }
}
