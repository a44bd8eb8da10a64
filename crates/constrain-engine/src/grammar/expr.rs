//! Grammar expressions: the one vocabulary every front-end (regex, GBNF, JSON Schema) speaks.
//!
//! An [`Expr`] mixes regular pieces ([`Expr::Regex`], byte-level regular languages) with
//! references to rules ([`Expr::Rule`]), so a front-end never has to decide what is a lexeme:
//! lowering (see `lower.rs`) folds every regular sub-expression into one terminal on its own.

use regex_syntax::hir::{
    self, Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir,
};

use std::sync::Arc;

use super::graph::RegexGraph;
use super::hir_size::hir_size;
use crate::bytes::{special_token_bytes, SPECIAL_TOKEN_MARKER};
use crate::error::GrammarError;

/// Identifies a rule of a [`GrammarBuilder`](crate::GrammarBuilder) / [`Grammar`](crate::Grammar).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(pub(crate) u32);

impl RuleId {
    /// The rule's index in its grammar.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A grammar expression over bytes.
///
/// Text is matched as UTF-8 bytes. Special (control) tokens of a vocabulary are matched as the
/// five bytes `0xFF` followed by the token id in big-endian order (see [`Expr::token`]); `0xFF`
/// never occurs in UTF-8 text, so ordinary grammars can never produce a special token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// A regular language over bytes, matched as a whole (anchored at both ends).
    Regex(Box<Hir>),
    /// A regular language given as a graph (see [`RegexGraph`]), matched as a whole: for
    /// languages whose automaton is small and whose expressions are not. Always a lexeme of
    /// its own.
    Graph(Arc<RegexGraph>),
    /// A reference to a rule.
    Rule(RuleId),
    /// The concatenation of the parts; empty means the empty string.
    Seq(Vec<Expr>),
    /// Any one of the alternatives; empty means the empty language (matches nothing).
    Alt(Vec<Expr>),
    /// `min` to `max` (unbounded when `None`) repetitions.
    Repeat {
        /// The repeated expression.
        expr: Box<Expr>,
        /// Fewest repetitions.
        min: u32,
        /// Most repetitions; `None` for no bound.
        max: Option<u32>,
    },
    /// Items in any order (see [`Unordered`]).
    Unordered(Box<Unordered>),
}

/// Items in any order with `separator` between consecutive ones: each member at most once
/// (a required one exactly once), `extra` any number of times.
///
/// Permutations have no small context-free grammar (one nonterminal per subset of members
/// used). The parser expands this one lazily, a nonterminal for each subset some input
/// actually reaches, so an object whose members may come in any order costs what its inputs
/// visit, not `2^n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unordered {
    /// The members, each with whether it must appear.
    pub members: Vec<UnorderedMember>,
    /// What may appear any number of times between the members (`None`: nothing).
    pub extra: Option<Expr>,
    /// What comes between two consecutive items.
    pub separator: Expr,
    /// Whether no item at all is allowed (when no member is required).
    pub allow_empty: bool,
}

/// One member of [`Unordered`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnorderedMember {
    /// The member's language.
    pub expr: Expr,
    /// Whether the member must appear.
    pub required: bool,
}

impl Expr {
    /// The empty string.
    pub fn empty() -> Expr {
        Expr::Seq(Vec::new())
    }

    /// The empty language: matches nothing.
    pub fn nothing() -> Expr {
        Expr::Alt(Vec::new())
    }

    /// Exactly this text, as UTF-8.
    pub fn literal(text: &str) -> Expr {
        Expr::bytes(text.as_bytes())
    }

    /// Exactly these bytes.
    pub fn bytes(bytes: &[u8]) -> Expr {
        Expr::from_hir(Hir::literal(bytes))
    }

    /// A regular expression in the syntax of the Rust `regex` crate, matched in full.
    ///
    /// Leading `^`/`\A` and trailing `$`/`\z` are redundant and accepted; other look-around
    /// assertions (`\b`, `(?m)^` in the middle, ...) are rejected when the grammar is compiled.
    pub fn regex(pattern: &str) -> Result<Expr, GrammarError> {
        let hir = regex_syntax::ParserBuilder::new()
            .nest_limit(crate::limits::REGEX_NEST_LIMIT)
            .build()
            .parse(pattern)
            .map_err(|e| GrammarError::Regex {
                pattern: pattern.to_string(),
                message: e.to_string(),
            })?;
        Ok(Expr::from_hir(strip_outer_anchors(hir)))
    }

    /// A regular language given as a graph.
    pub fn graph(graph: RegexGraph) -> Expr {
        Expr::Graph(Arc::new(graph))
    }

    /// A regular language given as a `regex-syntax` HIR.
    pub fn from_hir(hir: Hir) -> Expr {
        Expr::Regex(Box::new(hir))
    }

    /// Roughly how many NFA states a regular expression or a graph compiles to (a graph:
    /// one copy of its label per edge), counted up to `cap` (a larger size is `cap + 1`);
    /// `None` for other expressions. For front-ends choosing between two spellings of one
    /// language.
    pub fn nfa_size_estimate(&self, cap: usize) -> Option<usize> {
        match self {
            Expr::Regex(h) => Some(hir_size(h, cap)),
            Expr::Graph(g) => Some(g.nfa_size_estimate(cap)),
            _ => None,
        }
    }

    /// One Unicode scalar value from the inclusive ranges, or not from them when `negated`.
    pub fn char_class(ranges: &[(char, char)], negated: bool) -> Expr {
        let mut class = ClassUnicode::new(
            ranges
                .iter()
                .map(|&(a, b)| ClassUnicodeRange::new(a.min(b), a.max(b))),
        );
        if negated {
            class.negate();
        }
        Expr::from_hir(Hir::class(Class::Unicode(class)))
    }

    /// One byte from the inclusive ranges.
    pub fn byte_class(ranges: &[(u8, u8)]) -> Expr {
        let class = ClassBytes::new(
            ranges
                .iter()
                .map(|&(a, b)| ClassBytesRange::new(a.min(b), a.max(b))),
        );
        Expr::from_hir(Hir::class(Class::Bytes(class)))
    }

    /// Any one Unicode scalar value (as UTF-8).
    pub fn any_char() -> Expr {
        Expr::char_class(&[('\0', char::MAX)], false)
    }

    /// The special token `id` (llama.cpp's `<[id]>`).
    pub fn token(id: u32) -> Expr {
        Expr::bytes(&special_token_bytes(id))
    }

    /// Any one special token other than `id`, or any one character of text
    /// (llama.cpp's `!<[id]>`).
    ///
    /// Text is matched a character at a time, so `(!<[id]>)*` accepts exactly the outputs that
    /// do not contain token `id`, however the text is split into tokens.
    pub fn not_token(id: u32) -> Expr {
        let own = id.to_be_bytes();
        let any_byte = || {
            Hir::class(Class::Bytes(ClassBytes::new([ClassBytesRange::new(
                0, 0xFF,
            )])))
        };
        let mut other_ids = Vec::new();
        for (i, &b) in own.iter().enumerate() {
            let mut parts = vec![Hir::literal(&[SPECIAL_TOKEN_MARKER][..])];
            parts.extend(own[..i].iter().map(|&p| Hir::literal(&[p][..])));
            let mut differ = ClassBytes::new([ClassBytesRange::new(b, b)]);
            differ.negate();
            parts.push(Hir::class(Class::Bytes(differ)));
            parts.extend((i + 1..4).map(|_| any_byte()));
            other_ids.push(Hir::concat(parts));
        }
        Expr::alt(vec![
            Expr::from_hir(Hir::alternation(other_ids)),
            Expr::any_char(),
        ])
    }

    /// The concatenation of `parts`.
    pub fn seq(parts: Vec<Expr>) -> Expr {
        if parts.len() == 1 {
            parts.into_iter().next().unwrap_or_else(Expr::empty)
        } else {
            Expr::Seq(parts)
        }
    }

    /// Any one of `alternatives`.
    pub fn alt(alternatives: Vec<Expr>) -> Expr {
        if alternatives.len() == 1 {
            alternatives
                .into_iter()
                .next()
                .unwrap_or_else(Expr::nothing)
        } else {
            Expr::Alt(alternatives)
        }
    }

    /// A reference to `rule`.
    pub fn rule(rule: RuleId) -> Expr {
        Expr::Rule(rule)
    }

    /// `min` to `max` repetitions of `self` (`max = None`: unbounded).
    pub fn repeat(self, min: u32, max: Option<u32>) -> Expr {
        Expr::Repeat {
            expr: Box::new(self),
            min,
            max,
        }
    }

    /// Items in any order (see [`Unordered`]).
    pub fn unordered(unordered: Unordered) -> Expr {
        Expr::Unordered(Box::new(unordered))
    }

    /// Zero or one.
    pub fn optional(self) -> Expr {
        self.repeat(0, Some(1))
    }

    /// Zero or more.
    pub fn star(self) -> Expr {
        self.repeat(0, None)
    }

    /// One or more.
    pub fn plus(self) -> Expr {
        self.repeat(1, None)
    }

    /// Calls `f` on every rule this expression refers to.
    pub fn for_each_rule(&self, f: &mut impl FnMut(RuleId)) {
        match self {
            Expr::Regex(_) | Expr::Graph(_) => {}
            Expr::Rule(r) => f(*r),
            Expr::Seq(parts) | Expr::Alt(parts) => parts.iter().for_each(|p| p.for_each_rule(f)),
            Expr::Repeat { expr, .. } => expr.for_each_rule(f),
            Expr::Unordered(u) => u.parts().for_each(|p| p.for_each_rule(f)),
        }
    }

    /// This expression with every rule reference `r` replaced by `f(r)`: how a grammar's
    /// rules are copied into another builder under new ids.
    pub fn map_rules(&self, f: &impl Fn(RuleId) -> RuleId) -> Expr {
        match self {
            Expr::Regex(_) | Expr::Graph(_) => self.clone(),
            Expr::Rule(r) => Expr::Rule(f(*r)),
            Expr::Seq(parts) => Expr::Seq(parts.iter().map(|p| p.map_rules(f)).collect()),
            Expr::Alt(parts) => Expr::Alt(parts.iter().map(|p| p.map_rules(f)).collect()),
            Expr::Repeat { expr, min, max } => Expr::Repeat {
                expr: Box::new(expr.map_rules(f)),
                min: *min,
                max: *max,
            },
            Expr::Unordered(u) => {
                let mut u = (**u).clone();
                for m in &mut u.members {
                    m.expr = m.expr.map_rules(f);
                }
                u.extra = u.extra.as_ref().map(|e| e.map_rules(f));
                u.separator = u.separator.map_rules(f);
                Expr::Unordered(Box::new(u))
            }
        }
    }
}

impl Unordered {
    /// Every expression inside: members, extra, separator.
    pub(crate) fn parts(&self) -> impl Iterator<Item = &Expr> {
        self.members
            .iter()
            .map(|m| &m.expr)
            .chain(self.extra.as_ref())
            .chain(std::iter::once(&self.separator))
    }
}

/// Removes a leading `^`/`\A` and a trailing `$`/`\z`: every terminal is matched in full anyway.
fn strip_outer_anchors(hir: Hir) -> Hir {
    use hir::{HirKind, Look};
    let is_start = |h: &Hir| {
        matches!(
            h.kind(),
            HirKind::Look(Look::Start | Look::StartLF | Look::StartCRLF)
        )
    };
    let is_end = |h: &Hir| {
        matches!(
            h.kind(),
            HirKind::Look(Look::End | Look::EndLF | Look::EndCRLF)
        )
    };
    match hir.kind() {
        HirKind::Concat(parts) => {
            let mut parts = parts.clone();
            if parts.first().is_some_and(is_start) {
                parts.remove(0);
            }
            if parts.last().is_some_and(is_end) {
                parts.pop();
            }
            Hir::concat(parts)
        }
        _ if is_start(&hir) || is_end(&hir) => Hir::empty(),
        _ => hir,
    }
}
