//! String keywords: `minLength`, `maxLength`, `pattern` and `format`, read into a
//! [`StringSet`].

use std::rc::Rc;

use serde_json::{Map, Value};

use crate::ctx::Ctx;
use crate::error::{pointer_or_root, SchemaError, WarningKind};
use crate::formats;
use crate::ir::StringSet;
use crate::re::{ecma, Re};
use crate::strings::StringLanguage;

use super::child;

impl Ctx<'_> {
    pub(super) fn string_set(
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
}
