//! A structural tag lowered to one grammar: compositions become expressions, the schemas,
//! regular expressions and grammars inside are compiled by their front-ends (each once, however
//! often the tree names it), and free text becomes the regular language of
//! [`free_text`](crate::structural_tag::free_text).
//!
//! Unlimited formats (`any_text`, `triggered_tags`, `tags_with_separator`) take the end texts
//! of the tag they close, the *tail*: text then runs until the first end text, and tags stop
//! where an end text comes instead of another tag. At the end of the output there is no tail,
//! and they run until generation ends.

use constrain_engine::{Expr, Grammar, GrammarBuilder, GrammarError};
use serde_json::Value;

use super::{Builder, Constraint, Error};
use crate::structural_tag::{self, free_text, Ending, Format, Kind, StructuralTagError, Tag};

impl Builder<'_> {
    /// The grammar of the structural tag `value`.
    pub(super) fn structural_tag(&mut self, value: &Value) -> Result<Grammar, Error> {
        let limits = self.limits();
        limits.check_source_len(value.to_string().len())?;
        let format = structural_tag::parse(value, limits.max_schema_depth)?;
        // Leaves are embedded in this grammar's builder: keep them apart from those of a
        // composition this structural tag is itself a part of.
        let outer = std::mem::take(&mut self.embedded);
        let mut b = GrammarBuilder::new();
        let root = Lowering {
            builder: self,
            b: &mut b,
        }
        .format(&format, None);
        self.embedded = outer;
        let root = b.add_rule("root", root?)?;
        Ok(b.build(root)?)
    }
}

/// The walk that lowers one structural tag into `b`.
struct Lowering<'a, 'o> {
    builder: &'a mut Builder<'o>,
    b: &'a mut GrammarBuilder,
}

/// An error at `pointer` of the structural tag.
fn at(pointer: &str, message: &str) -> Error {
    Error::StructuralTag(StructuralTagError::new(pointer, message))
}

/// Whether nothing inside `format` says where it stops: free text, triggered tags and tags with
/// a separator, and what ends with one of them.
fn unlimited(format: &Format) -> bool {
    match &format.kind {
        Kind::AnyText { .. } | Kind::TriggeredTags { .. } | Kind::TagsWithSeparator { .. } => true,
        Kind::Sequence(items) => items.last().is_some_and(unlimited),
        Kind::Or(items) => items.iter().any(unlimited),
        _ => false,
    }
}

/// Whether `format` is free text with excluded strings, which XGrammar lets stand before
/// other formats in a sequence (it then runs until what follows).
fn excluding(format: &Format) -> bool {
    match &format.kind {
        Kind::AnyText { excludes } | Kind::TriggeredTags { excludes, .. } => !excludes.is_empty(),
        _ => false,
    }
}

fn literals(texts: &[String]) -> Expr {
    Expr::alt(texts.iter().map(|t| Expr::literal(t)).collect())
}

impl Lowering<'_, '_> {
    /// The expression of `format`; `tail` holds the end texts that stop it when it is
    /// unlimited and closes a tag.
    fn format(&mut self, format: &Format, tail: Option<&[String]>) -> Result<Expr, Error> {
        let pointer = format.pointer.as_str();
        Ok(match &format.kind {
            Kind::ConstString(text) => Expr::literal(text),
            Kind::JsonSchema(schema) => {
                self.leaf(pointer, Constraint::JsonSchema(schema.clone()))?
            }
            Kind::Grammar(text) => self.leaf(pointer, Constraint::Gbnf(text.clone()))?,
            Kind::Regex(pattern) => self.leaf(pointer, Constraint::Regex(pattern.clone()))?,
            Kind::AnyText { excludes } => self.free(tail, &[], excludes, None)?,
            Kind::Sequence(items) => {
                let mut parts = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let last = i + 1 == items.len();
                    if !last && unlimited(item) && !excluding(item) {
                        return Err(at(
                            &item.pointer,
                            "only the last element of a sequence may be unlimited (any_text, \
                             triggered_tags, tags_with_separator): nothing would end it",
                        ));
                    }
                    parts.push(self.format(item, if last { tail } else { None })?);
                }
                Expr::seq(parts)
            }
            Kind::Or(items) => {
                if items.iter().any(unlimited) && !items.iter().all(unlimited) {
                    return Err(at(
                        pointer,
                        "the elements of an \"or\" must be all unlimited (any_text, \
                         triggered_tags, tags_with_separator) or all limited",
                    ));
                }
                let alternatives = items
                    .iter()
                    .map(|item| self.format(item, tail))
                    .collect::<Result<_, _>>()?;
                Expr::alt(alternatives)
            }
            Kind::Tag(tag) => {
                let rest = self.tag_rest(tag)?;
                Expr::seq(vec![Expr::literal(&tag.begin), rest])
            }
            Kind::TriggeredTags {
                triggers,
                tags,
                at_least_one,
                stop_after_first,
                excludes,
            } => self.triggered(
                triggers,
                tags,
                (*at_least_one, *stop_after_first),
                excludes,
                tail,
            )?,
            Kind::TagsWithSeparator {
                tags,
                separator,
                at_least_one,
                stop_after_first,
            } => {
                let mut any = Vec::with_capacity(tags.len());
                for tag in tags {
                    let rest = self.tag_rest(tag)?;
                    any.push(Expr::seq(vec![Expr::literal(&tag.begin), rest]));
                }
                let any = Expr::rule(self.b.fresh_rule("tags", Expr::alt(any)));
                let end = tail.map_or_else(Expr::empty, literals);
                let tags = if *stop_after_first {
                    any
                } else {
                    Expr::seq(vec![
                        any.clone(),
                        Expr::seq(vec![Expr::literal(separator), any]).star(),
                    ])
                };
                let some = Expr::seq(vec![tags, end.clone()]);
                if *at_least_one {
                    some
                } else {
                    Expr::alt(vec![some, end])
                }
            }
        })
    }

    /// What follows a tag's begin text: its content, then an end text. An unlimited content
    /// runs until the first end text, which it includes.
    fn tag_rest(&mut self, tag: &Tag) -> Result<Expr, Error> {
        let body = if unlimited(&tag.content) {
            let ends: Vec<String> = tag.end.iter().filter(|e| !e.is_empty()).cloned().collect();
            if ends.is_empty() {
                return Err(at(
                    &format!("{}/end", tag.pointer),
                    "the content is unlimited, so a non-empty end text must stop it",
                ));
            }
            self.format(&tag.content, Some(&ends))?
        } else {
            let content = self.format(&tag.content, None)?;
            Expr::seq(vec![content, literals(&tag.end)])
        };
        Ok(Expr::rule(self.b.fresh_rule("tag", body)))
    }

    /// Free text in which each trigger opens one of the tags whose begin text starts with it.
    /// `(at_least_one, stop_after_first)`: the output starts with a tag; it ends after one.
    fn triggered(
        &mut self,
        triggers: &[String],
        tags: &[Tag],
        (at_least_one, stop_after_first): (bool, bool),
        excludes: &[String],
        tail: Option<&[String]>,
    ) -> Result<Expr, Error> {
        let mut opened_by: Vec<Vec<Expr>> = vec![Vec::new(); triggers.len()];
        let mut whole = Vec::with_capacity(tags.len());
        for tag in tags {
            let matching: Vec<usize> = (0..triggers.len())
                .filter(|&i| tag.begin.starts_with(triggers[i].as_str()))
                .collect();
            let &[trigger] = matching.as_slice() else {
                return Err(at(
                    &format!("{}/begin", tag.pointer),
                    if matching.is_empty() {
                        "the begin text must start with one of the triggers"
                    } else {
                        "the begin text starts with more than one trigger"
                    },
                ));
            };
            let rest = self.tag_rest(tag)?;
            let after_trigger = &tag.begin[triggers[trigger].len()..];
            opened_by[trigger].push(Expr::seq(vec![Expr::literal(after_trigger), rest.clone()]));
            whole.push(Expr::seq(vec![Expr::literal(&tag.begin), rest]));
        }
        let end = tail.map_or_else(Expr::empty, literals);
        let to_end = self.free(tail, triggers, excludes, None)?;
        let mut opened = Vec::new();
        for (i, group) in opened_by.into_iter().enumerate() {
            if !group.is_empty() {
                let text = self.free(tail, triggers, excludes, Some(i))?;
                opened.push(Expr::seq(vec![text, Expr::alt(group)]));
            }
        }
        let opened = Expr::rule(self.b.fresh_rule("opened", Expr::alt(opened)));
        let first = Expr::alt(whole);
        Ok(match (at_least_one, stop_after_first) {
            (false, false) => Expr::seq(vec![opened.star(), to_end]),
            (false, true) => Expr::alt(vec![to_end, Expr::seq(vec![opened, end])]),
            (true, false) => Expr::seq(vec![first, opened.star(), to_end]),
            (true, true) => Expr::seq(vec![first, end]),
        })
    }

    /// Free text without `triggers` and `excludes` that ends at `trigger` (when given), else at
    /// the first of the `tail`'s end texts (which it includes), else with the output.
    fn free(
        &mut self,
        tail: Option<&[String]>,
        triggers: &[String],
        excludes: &[String],
        trigger: Option<usize>,
    ) -> Result<Expr, Error> {
        let ending = match (trigger, tail) {
            (Some(i), _) => Ending::Trigger(i),
            (None, Some(_)) => Ending::Stop,
            (None, None) => Ending::Output,
        };
        let max_edges = self.builder.limits().max_grammar_size;
        Ok(free_text(
            tail.unwrap_or(&[]),
            triggers,
            excludes,
            ending,
            max_edges,
        )?)
    }

    /// A schema, regular expression or grammar inside the tag, compiled by its front-end and
    /// embedded once; its errors name the part's pointer (budgets excepted, which concern the
    /// whole compilation).
    fn leaf(&mut self, pointer: &str, constraint: Constraint) -> Result<Expr, Error> {
        self.builder.expr(self.b, &constraint).map_err(|e| match e {
            Error::Grammar(GrammarError::LimitExceeded { .. }) => e,
            e => Error::StructuralTagPart {
                pointer: pointer.to_string(),
                source: Box::new(e),
            },
        })
    }
}
