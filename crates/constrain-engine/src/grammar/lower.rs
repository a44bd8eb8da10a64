//! Lowering: [`Grammar`] (rules over [`Expr`]) -> [`Cfg`] (productions over regular terminals).
//!
//! Every regular sub-expression becomes one terminal, so the Earley parser only sees lexeme
//! boundaries: non-recursive rules are inlined (up to a size budget), tail self-recursion
//! `A ::= x A | y` is rewritten to `x* y` (Arden's rule), and adjacent regular pieces of a
//! sequence are concatenated into a single terminal. Unbounded languages and large rules
//! are terminals of their own, one per language however many places use it.

use std::borrow::Cow;
use std::sync::Arc;

use regex_syntax::hir::{Hir, Repetition};
use rustc_hash::FxHashMap;

use super::builder::Grammar;
use super::expr::{Expr, RuleId, Unordered};
use super::graph::{RegexGraph, Terminal};
use super::hir_size::hir_size;
use crate::error::{Budget, GrammarError};
use crate::limits::{Deadline, Limits};

/// A grammar symbol of the lowered grammar.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Sym {
    /// A terminal: an index into [`Cfg::terminals`].
    T(u32),
    /// A nonterminal: an index into [`Cfg::nonterminals`].
    N(u32),
}

/// A context-free grammar whose terminals are regular languages.
#[derive(Debug, Default)]
pub(crate) struct Cfg {
    /// The regular language of every terminal; none is empty or matches only "".
    pub terminals: Vec<Terminal>,
    /// Names of nonterminals (for diagnostics).
    pub nonterminals: Vec<String>,
    /// Productions `(lhs, rhs)`; every symbol is productive.
    pub productions: Vec<(u32, Vec<Sym>)>,
    /// The start nonterminal.
    pub start: u32,
    /// Items in any order ([`Expr::Unordered`]): their root nonterminals have no productions
    /// here, the parser expands them as inputs reach them.
    pub families: Vec<Family>,
}

/// One lowered [`Expr::Unordered`]: every part as a nonterminal.
#[derive(Clone, Debug)]
pub(crate) struct Family {
    /// The nonterminal standing for the whole, before any item.
    pub root: u32,
    /// Each member's nonterminal, and whether it is required.
    pub members: Vec<(u32, bool)>,
    pub extra: Option<u32>,
    /// `None` when the separator matches nothing: then at most one item.
    pub separator: Option<u32>,
    pub allow_empty: bool,
}

/// Size (as [`hir_size`]) up to which adjacent regular pieces are merged into one terminal.
const MAX_MERGED_SIZE: usize = 20_000;

/// Size (as [`hir_size`]) up to which a non-recursive rule is inlined as one regular
/// expression. A larger rule stays a nonterminal whose parts are lexemes of their own: an
/// object's chain of members inlined whole is one lexeme whose automaton, lexer states and
/// first masks are all built for this grammar alone, while its members' lexemes are small and
/// built only where a sequence reaches them.
const MAX_INLINED_RULE_SIZE: usize = 8_000;

/// Size (as [`hir_size`]) up to which a regular rule is copied into every place that names
/// it, merged there with its neighbours. A larger one is a lexeme of its own, one terminal
/// shared by every use (as an unbounded one is): the 64-bit integer range that every
/// `"type": "integer"` member spells is built once, not once per member.
const MAX_COPIED_RULE_SIZE: usize = 1_000;

/// Hir nesting beyond which a regular expression is kept as a nonterminal instead of inlined.
const MAX_INLINE_DEPTH: usize = 100;
/// Expression nesting accepted at all (front-ends produce far less).
const MAX_EXPR_DEPTH: usize = 1_000;

/// A regular expression with its size, for inlining budgets.
#[derive(Clone, Debug)]
struct Regular {
    hir: Hir,
    size: usize,
}

/// Lowers `grammar` into a [`Cfg`].
pub(crate) fn lower(
    grammar: &Grammar,
    limits: &Limits,
    deadline: &Deadline,
) -> Result<Cfg, GrammarError> {
    for (_, _, body) in grammar.rules() {
        check_depth(body, 0)?;
    }
    let bodies: Vec<Cow<'_, Expr>> = grammar
        .rules()
        .map(|(id, _, body)| {
            rewrite_tail_recursion(id, body).map_or(Cow::Borrowed(body), Cow::Owned)
        })
        .collect();
    let recursive = recursive_rules(&bodies);
    let mut lowerer = Lowerer {
        grammar,
        limits,
        deadline,
        bodies: &bodies,
        regular: vec![None; bodies.len()],
        unbounded: vec![false; bodies.len()],
        large: vec![false; bodies.len()],
        rule_pieces: vec![None; bodies.len()],
        rule_nt: vec![None; bodies.len()],
        cfg: Cfg {
            terminals: Vec::new(),
            nonterminals: Vec::new(),
            productions: Vec::new(),
            start: 0,
            families: Vec::new(),
        },
        terminal_ids: FxHashMap::default(),
        size: 0,
        pending_rules: Vec::new(),
        sizes: Default::default(),
    };
    let start_nt = match lowerer.lower_rules(&recursive) {
        Ok(start_nt) => start_nt,
        Err(e) => {
            // The grammar half lowered may be large: the error need not wait for it to be freed.
            let cfg = std::mem::take(&mut lowerer.cfg);
            drop(lowerer);
            let rewritten: Vec<Expr> = bodies
                .into_iter()
                .filter_map(|body| match body {
                    Cow::Owned(expr) => Some(expr),
                    Cow::Borrowed(_) => None,
                })
                .collect();
            crate::free_in_background((cfg, rewritten));
            return Err(e);
        }
    };
    let start = lowerer.new_nt("<start>");
    lowerer.add_production(start, vec![Sym::N(start_nt)]);
    lowerer.cfg.start = start;
    let mut cfg = lowerer.cfg;
    prune_unproductive(&mut cfg, grammar.rule_name(grammar.start()))?;
    Ok(cfg)
}

impl Lowerer<'_> {
    /// Sizes the regular rules, then lowers every rule the start reaches; returns the start
    /// rule's nonterminal.
    fn lower_rules(&mut self, recursive: &[bool]) -> Result<u32, GrammarError> {
        let bodies = self.bodies;
        for rule in post_order(bodies) {
            self.deadline.check()?;
            if !recursive[rule] {
                self.regular[rule] = self.regular_size(&bodies[rule]).filter(|&(size, depth)| {
                    size <= MAX_INLINED_RULE_SIZE.min(self.limits.max_inline_size)
                        && depth <= MAX_INLINE_DEPTH
                });
                self.large[rule] =
                    self.regular[rule].is_some_and(|(size, _)| size > MAX_COPIED_RULE_SIZE);
                self.unbounded[rule] = self.is_unbounded(&bodies[rule]) || self.large[rule];
            }
        }
        let start_nt = self.nt_of(self.grammar.start());
        while let Some((rule, nt)) = self.pending_rules.pop() {
            self.deadline.check()?;
            self.add_alternatives(nt, &bodies[rule.index()])?;
        }
        Ok(start_nt)
    }
}

struct Lowerer<'a> {
    grammar: &'a Grammar,
    limits: &'a Limits,
    deadline: &'a Deadline,
    /// The rule bodies (tail recursion rewritten).
    bodies: &'a [Cow<'a, Expr>],
    /// Per rule: its size and nesting depth as one regular expression, when the rule is
    /// regular and small enough to inline. Expressions are only built where a terminal needs
    /// them: a rule used in many places is then never kept (or copied) whole.
    regular: Vec<Option<(usize, usize)>>,
    /// Per regular rule: whether its language is unbounded, or it is large (then it is a
    /// lexeme of its own wherever it is used: see [`SeqBuilder::push_regular`]).
    unbounded: Vec<bool>,
    /// Per regular rule: whether it is larger than [`MAX_COPIED_RULE_SIZE`]. Such a rule is
    /// never inlined: an expression that names it is not regular ([`Lowerer::regular_size`]).
    large: Vec<bool>,
    /// Per unbounded regular rule: its one terminal, once built.
    rule_pieces: Vec<Option<Piece>>,
    rule_nt: Vec<Option<u32>>,
    cfg: Cfg,
    /// Terminals by [`fingerprint`]: equal expressions share one terminal.
    terminal_ids: FxHashMap<u64, Vec<u32>>,
    size: usize,
    /// Rules given a nonterminal whose bodies are not lowered yet (a worklist, so that long
    /// chains of rules never deepen the call stack).
    pending_rules: Vec<(RuleId, u32)>,
    /// Sizes of regular expressions of the grammar, by address (see [`Lowerer::hir_size`]).
    sizes: std::cell::RefCell<FxHashMap<usize, usize>>,
}

impl Lowerer<'_> {
    /// The regular expression of `expr`, if it is regular given the rules known to be regular
    /// and within the inlining budgets. Sizes are checked before anything is built, so a
    /// too-large expression costs one traversal, not a copy.
    fn as_regular(&self, expr: &Expr) -> Option<Regular> {
        let size = self.regular_within_budget(expr)?;
        Some(Regular {
            hir: self.build_regular(expr),
            size,
        })
    }

    /// The size of `expr` as one regular expression, if [`Lowerer::as_regular`] would build
    /// it: the same test, without the copy.
    fn regular_within_budget(&self, expr: &Expr) -> Option<usize> {
        let (size, depth) = self.regular_size(expr)?;
        (size <= self.limits.max_inline_size && depth <= MAX_INLINE_DEPTH).then_some(size)
    }

    /// The size and nesting depth of `expr` as one regular expression, `None` when it is not
    /// regular. Stops counting (returning a size over the budget) as soon as the budget is
    /// exceeded.
    fn regular_size(&self, expr: &Expr) -> Option<(usize, usize)> {
        let over = self.limits.max_inline_size.saturating_add(1);
        match expr {
            Expr::Regex(h) => Some((self.hir_size(h), 1)),
            // A large rule is a lexeme of its own: what names it is grammar structure.
            Expr::Rule(r) if self.large[r.index()] => None,
            Expr::Rule(r) => self.regular[r.index()],
            Expr::Seq(parts) | Expr::Alt(parts) => {
                let (mut size, mut depth) = (1usize, 0);
                for p in parts {
                    let (s, d) = self.regular_size(p)?;
                    size = size.saturating_add(s);
                    depth = depth.max(d);
                    if size > self.limits.max_inline_size {
                        return Some((over, depth + 1));
                    }
                }
                Some((size, depth + 1))
            }
            Expr::Repeat { expr, min, max } => {
                let (s, d) = self.regular_size(expr)?;
                let copies = max.unwrap_or(*min).max(1) as usize;
                Some((s.saturating_mul(copies).saturating_add(1), d + 1))
            }
            // A graph is a lexeme of its own: it never merges with its neighbours.
            Expr::Unordered(_) | Expr::Graph(_) => None,
        }
    }

    /// The regular expression of `expr`, which [`Lowerer::regular_size`] found regular.
    fn build_regular(&self, expr: &Expr) -> Hir {
        match expr {
            Expr::Regex(h) => (**h).clone(),
            Expr::Rule(r) => self.build_regular(&self.bodies[r.index()]),
            Expr::Seq(parts) => Hir::concat(parts.iter().map(|p| self.build_regular(p)).collect()),
            Expr::Alt(parts) if parts.is_empty() => Hir::fail(),
            Expr::Alt(parts) => alternation(parts.iter().map(|p| self.build_regular(p)).collect()),
            Expr::Repeat { expr, min, max } => Hir::repetition(Repetition {
                min: *min,
                max: *max,
                greedy: true,
                sub: Box::new(self.build_regular(expr)),
            }),
            Expr::Unordered(_) | Expr::Graph(_) => {
                unreachable!("`regular_size` finds no unordered items or graphs regular")
            }
        }
    }

    fn new_nt(&mut self, name: &str) -> u32 {
        self.cfg.nonterminals.push(name.to_string());
        (self.cfg.nonterminals.len() - 1) as u32
    }

    fn add_production(&mut self, lhs: u32, rhs: Vec<Sym>) {
        self.size += rhs.len() + 1;
        self.cfg.productions.push((lhs, rhs));
    }

    fn check_size(&self) -> Result<(), GrammarError> {
        if self.size > self.limits.max_grammar_size {
            return Err(GrammarError::LimitExceeded {
                budget: Budget::GrammarSize,
                limit: self.limits.max_grammar_size,
            });
        }
        Ok(())
    }

    /// The nonterminal standing for grammar rule `rule`; its body is lowered later.
    fn nt_of(&mut self, rule: RuleId) -> u32 {
        if let Some(nt) = self.rule_nt[rule.index()] {
            return nt;
        }
        let nt = self.new_nt(self.grammar.rule_name(rule));
        self.rule_nt[rule.index()] = Some(nt);
        self.pending_rules.push((rule, nt));
        nt
    }

    /// Adds `lhs -> alt` for every top-level alternative of `body`.
    fn add_alternatives(&mut self, lhs: u32, body: &Expr) -> Result<(), GrammarError> {
        match body {
            Expr::Alt(alts) if self.regular_within_budget(body).is_none() => {
                let (words, others) = split_literals(alts);
                if let Some(trie) = words {
                    self.add_hir_alternatives(lhs, &trie)?;
                    // Sizes are cached by address, and the trie is about to be freed.
                    self.sizes.borrow_mut().clear();
                }
                for alt in others {
                    self.add_alternatives(lhs, alt)?;
                }
            }
            Expr::Regex(h) if self.regular_within_budget(body).is_none() => {
                self.add_hir_alternatives(lhs, h)?;
            }
            _ => {
                if let Some(rhs) = self.lower_seq(body)? {
                    self.add_production(lhs, rhs);
                }
            }
        }
        self.check_size()
    }

    /// Lowers `expr` to a symbol string; `None` when it matches nothing.
    fn lower_seq(&mut self, expr: &Expr) -> Result<Option<Vec<Sym>>, GrammarError> {
        let mut seq = SeqBuilder::default();
        self.lower_into(expr, &mut seq)?;
        seq.finish(self)
    }

    fn lower_into(&mut self, expr: &Expr, seq: &mut SeqBuilder) -> Result<(), GrammarError> {
        self.deadline.check()?;
        match expr {
            // Its unbounded parts would be lexemes of their own anyway: lowering part by part
            // lets every use of an unbounded rule share one terminal, built once.
            Expr::Seq(parts) if self.is_unbounded(expr) => {
                for p in parts {
                    self.lower_into(p, seq)?;
                }
                return Ok(());
            }
            Expr::Rule(r) if self.regular[r.index()].is_some() && self.unbounded[r.index()] => {
                match self.rule_piece(*r) {
                    Piece::Terminal(t) => seq.push_sym(Sym::T(t), self),
                    Piece::Empty => {}
                    Piece::Nothing => seq.dead = true,
                }
                return Ok(());
            }
            _ => {}
        }
        if let Some(r) = self.as_regular(expr) {
            seq.push_regular(r, self);
            return Ok(());
        }
        match expr {
            Expr::Regex(h) => self.lower_hir_into(h, seq)?,
            Expr::Graph(g) => self.lower_graph_into(g, seq),
            Expr::Seq(parts) => {
                for p in parts {
                    self.lower_into(p, seq)?;
                }
            }
            Expr::Rule(r) => {
                let nt = self.nt_of(*r);
                seq.push_sym(Sym::N(nt), self);
            }
            Expr::Alt(_) => {
                let nt = self.new_nt("<alt>");
                self.add_alternatives(nt, expr)?;
                seq.push_sym(Sym::N(nt), self);
            }
            Expr::Repeat {
                expr: inner,
                min,
                max,
            } => {
                let unit = self.unit_nt(inner)?;
                self.push_repetition(unit, *min, *max, seq)?;
            }
            Expr::Unordered(u) => {
                let root = self.unordered_nt(u)?;
                seq.push_sym(Sym::N(root), self);
            }
        }
        Ok(())
    }

    /// The root nonterminal of a new [`Family`] for `u`.
    fn unordered_nt(&mut self, u: &Unordered) -> Result<u32, GrammarError> {
        let mut members = Vec::with_capacity(u.members.len());
        for m in &u.members {
            members.push((self.unit_nt(&m.expr)?, m.required));
        }
        let extra = match &u.extra {
            Some(e) => Some(self.unit_nt(e)?),
            None => None,
        };
        let separator = Some(self.unit_nt(&u.separator)?);
        let root = self.new_nt("<unordered>");
        self.size += members.len() + 3;
        self.check_size()?;
        self.cfg.families.push(Family {
            root,
            members,
            extra,
            separator,
            allow_empty: u.allow_empty,
        });
        Ok(root)
    }

    /// Appends `min..=max` (unbounded when `None`) copies of nonterminal `unit` to `seq`.
    fn push_repetition(
        &mut self,
        unit: u32,
        min: u32,
        max: Option<u32>,
        seq: &mut SeqBuilder,
    ) -> Result<(), GrammarError> {
        let count = max.unwrap_or(min) as usize;
        if count.saturating_add(self.size) > self.limits.max_grammar_size {
            return Err(GrammarError::LimitExceeded {
                budget: Budget::RepetitionCount,
                limit: self.limits.max_grammar_size,
            });
        }
        for _ in 0..min {
            seq.push_sym(Sym::N(unit), self);
        }
        match max {
            None => {
                // star -> ε | star unit  (left recursion keeps Earley rows small)
                let star = self.new_nt("<star>");
                self.add_production(star, vec![]);
                self.add_production(star, vec![Sym::N(star), Sym::N(unit)]);
                seq.push_sym(Sym::N(star), self);
            }
            Some(max) if max > min => {
                // opt_k -> ε | unit opt_{k-1}
                let mut opt = self.new_nt("<opt>");
                self.add_production(opt, vec![]);
                self.add_production(opt, vec![Sym::N(unit)]);
                for _ in 1..(max - min) {
                    let next = self.new_nt("<opt>");
                    self.add_production(next, vec![]);
                    self.add_production(next, vec![Sym::N(unit), Sym::N(opt)]);
                    opt = next;
                }
                seq.push_sym(Sym::N(opt), self);
            }
            Some(_) => {}
        }
        self.check_size()
    }

    /// Lowers a regular expression too large to be one terminal: its top level becomes
    /// grammar structure, its parts terminals (or are split further).
    fn lower_hir_into(&mut self, hir: &Hir, seq: &mut SeqBuilder) -> Result<(), GrammarError> {
        use regex_syntax::hir::HirKind;
        self.deadline.check()?;
        let size = self.hir_size(hir);
        if size <= self.limits.max_inline_size {
            seq.push_regular(
                Regular {
                    hir: hir.clone(),
                    size,
                },
                self,
            );
            return Ok(());
        }
        match hir.kind() {
            HirKind::Concat(parts) => {
                for p in parts {
                    self.lower_hir_into(p, seq)?;
                }
            }
            HirKind::Alternation(_) => {
                let nt = self.new_nt("<alt>");
                self.add_hir_alternatives(nt, hir)?;
                seq.push_sym(Sym::N(nt), self);
            }
            HirKind::Repetition(rep) => {
                let unit = self.new_nt("<item>");
                self.add_hir_alternatives(unit, &rep.sub)?;
                self.push_repetition(unit, rep.min, rep.max, seq)?;
            }
            HirKind::Capture(cap) => self.lower_hir_into(&cap.sub, seq)?,
            _ => {
                return Err(GrammarError::LimitExceeded {
                    budget: Budget::InlineSize,
                    limit: self.limits.max_inline_size,
                })
            }
        }
        Ok(())
    }

    /// Adds `lhs -> alt` for every top-level alternative of the regular expression `hir`.
    fn add_hir_alternatives(&mut self, lhs: u32, hir: &Hir) -> Result<(), GrammarError> {
        use regex_syntax::hir::HirKind;
        match hir.kind() {
            HirKind::Alternation(alts) if self.hir_size(hir) > self.limits.max_inline_size => {
                for alt in alts {
                    self.add_hir_alternatives(lhs, alt)?;
                }
            }
            _ => {
                let mut seq = SeqBuilder::default();
                self.lower_hir_into(hir, &mut seq)?;
                if let Some(rhs) = seq.finish(self)? {
                    self.add_production(lhs, rhs);
                }
            }
        }
        self.check_size()
    }

    /// [`hir_size`], remembered per node: splitting a large expression asks again for the
    /// sizes of its parts at every level.
    fn hir_size(&self, hir: &Hir) -> usize {
        let key = hir as *const Hir as usize;
        if let Some(&size) = self.sizes.borrow().get(&key) {
            return size;
        }
        let size = hir_size(hir, self.limits.max_inline_size);
        self.sizes.borrow_mut().insert(key, size);
        size
    }

    /// Whether the language of `expr` may be unbounded in length (an over-approximation:
    /// it only decides where terminals are cut, never what they match).
    fn is_unbounded(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Regex(h) => h.properties().maximum_len().is_none(),
            Expr::Rule(r) => self.regular[r.index()].is_none() || self.unbounded[r.index()],
            Expr::Seq(parts) | Expr::Alt(parts) => parts.iter().any(|p| self.is_unbounded(p)),
            Expr::Repeat { expr, max, .. } => max.is_none() || self.is_unbounded(expr),
            Expr::Unordered(_) | Expr::Graph(_) => true,
        }
    }

    /// The terminal of a regular rule with an unbounded language or a large one, built on
    /// first use.
    fn rule_piece(&mut self, rule: RuleId) -> Piece {
        if let Some(piece) = self.rule_pieces[rule.index()] {
            return piece;
        }
        let hir = self.build_regular(&self.bodies[rule.index()]);
        let props = hir.properties();
        let piece = match (props.minimum_len(), props.maximum_len()) {
            (None, _) => Piece::Nothing,
            (_, Some(0)) => Piece::Empty,
            _ => Piece::Terminal(self.terminal(Terminal::Regex(hir))),
        };
        self.rule_pieces[rule.index()] = Some(piece);
        piece
    }

    /// A nonterminal deriving exactly `expr`.
    fn unit_nt(&mut self, expr: &Expr) -> Result<u32, GrammarError> {
        if let Expr::Rule(r) = expr {
            if self.regular[r.index()].is_none() {
                return Ok(self.nt_of(*r));
            }
        }
        let nt = self.new_nt("<item>");
        self.add_alternatives(nt, expr)?;
        Ok(nt)
    }

    /// Appends the terminal of graph `g` to `seq` (nothing for a graph of only the empty
    /// string; a dead sequence for one of no string).
    fn lower_graph_into(&mut self, g: &Arc<RegexGraph>, seq: &mut SeqBuilder) {
        if g.matches_nothing() {
            seq.dead = true;
        } else if !g.matches_only_empty() {
            let t = self.terminal(Terminal::Graph(g.clone()));
            seq.push_sym(Sym::T(t), self);
        }
    }

    /// The id of `terminal`: one per terminal, however many places use it (equal ones built
    /// apart included).
    fn terminal(&mut self, terminal: Terminal) -> u32 {
        let same = self.terminal_ids.entry(terminal.fingerprint()).or_default();
        if let Some(&id) = same
            .iter()
            .find(|&&id| self.cfg.terminals[id as usize].same(&terminal))
        {
            return id;
        }
        let id = self.cfg.terminals.len() as u32;
        self.cfg.terminals.push(terminal);
        same.push(id);
        id
    }
}

/// What a regular piece lowers to.
#[derive(Copy, Clone, Debug)]
enum Piece {
    Terminal(u32),
    /// Only the empty string: no symbol.
    Empty,
    /// The empty language: the production is dropped.
    Nothing,
}

/// Accumulates the symbols of one production, concatenating adjacent regular pieces.
#[derive(Default)]
struct SeqBuilder {
    syms: Vec<Sym>,
    pending: Vec<Hir>,
    pending_size: usize,
    dead: bool,
}

impl SeqBuilder {
    /// Appends a regular piece. Unbounded pieces (string bodies, numbers, free text) stay
    /// lexemes of their own: then every context that uses them shares one terminal, its lexer
    /// states and their cached lexeme masks, instead of one copy per neighbouring literal.
    /// Large pieces stay lexemes of their own too: merging only saves lexeme boundaries
    /// between small pieces, while a merged terminal costs NFA states for its whole length.
    fn push_regular(&mut self, r: Regular, lowerer: &mut Lowerer<'_>) {
        let unbounded = r.hir.properties().maximum_len().is_none();
        let merged = self.pending_size + r.size;
        if unbounded || merged > MAX_MERGED_SIZE.min(lowerer.limits.max_inline_size) {
            self.flush(lowerer);
        }
        self.pending_size += r.size;
        self.pending.push(r.hir);
        if unbounded {
            self.flush(lowerer);
        }
    }

    fn push_sym(&mut self, sym: Sym, lowerer: &mut Lowerer<'_>) {
        self.flush(lowerer);
        self.syms.push(sym);
    }

    fn flush(&mut self, lowerer: &mut Lowerer<'_>) {
        if self.pending.is_empty() {
            return;
        }
        let hir = Hir::concat(std::mem::take(&mut self.pending));
        self.pending_size = 0;
        let props = hir.properties();
        match (props.minimum_len(), props.maximum_len()) {
            (None, _) => self.dead = true,
            (_, Some(0)) => {}
            _ => {
                let t = lowerer.terminal(Terminal::Regex(hir));
                self.syms.push(Sym::T(t));
            }
        }
    }

    fn finish(mut self, lowerer: &mut Lowerer<'_>) -> Result<Option<Vec<Sym>>, GrammarError> {
        self.flush(lowerer);
        Ok((!self.dead).then_some(self.syms))
    }
}

/// Rewrites `A ::= x1 A | ... | y1 | ...` (A only in tail position) to `(x1|...)* (y1|...)`.
fn rewrite_tail_recursion(rule: RuleId, body: &Expr) -> Option<Expr> {
    let alts: &[Expr] = match body {
        Expr::Alt(alts) => alts,
        other => std::slice::from_ref(other),
    };
    let parts = |alt: &'_ Expr| -> Vec<Expr> {
        match alt {
            Expr::Seq(parts) => parts.clone(),
            other => vec![other.clone()],
        }
    };
    // Decide first, copy after: most rules are not tail recursive.
    let tail_call = |alt: &Expr| {
        let last = match alt {
            Expr::Seq(parts) => parts.last(),
            other => Some(other),
        };
        matches!(last, Some(Expr::Rule(r)) if *r == rule)
    };
    let mut any = false;
    for alt in alts {
        if tail_call(alt) {
            let init = match alt {
                Expr::Seq(parts) => &parts[..parts.len() - 1],
                _ => &[],
            };
            if init.iter().any(|e| refers_to(e, rule)) {
                return None;
            }
            any = true;
        } else if refers_to(alt, rule) {
            return None;
        }
    }
    if !any {
        return None;
    }
    let (recursive, bases): (Vec<&Expr>, Vec<&Expr>) = alts.iter().partition(|a| tail_call(a));
    let prefixes = recursive
        .into_iter()
        .map(|alt| {
            let mut init = parts(alt);
            init.pop();
            Expr::seq(init)
        })
        .collect();
    Some(Expr::seq(vec![
        Expr::alt(prefixes).star(),
        Expr::alt(bases.into_iter().cloned().collect()),
    ]))
}

fn refers_to(expr: &Expr, rule: RuleId) -> bool {
    let mut found = false;
    expr.for_each_rule(&mut |r| found |= r == rule);
    found
}

fn check_depth(expr: &Expr, depth: usize) -> Result<(), GrammarError> {
    if depth > MAX_EXPR_DEPTH {
        return Err(GrammarError::LimitExceeded {
            budget: Budget::ExprNesting,
            limit: MAX_EXPR_DEPTH,
        });
    }
    match expr {
        Expr::Regex(_) | Expr::Graph(_) | Expr::Rule(_) => Ok(()),
        Expr::Seq(parts) | Expr::Alt(parts) => {
            parts.iter().try_for_each(|p| check_depth(p, depth + 1))
        }
        Expr::Repeat { expr, .. } => check_depth(expr, depth + 1),
        Expr::Unordered(u) => u.parts().try_for_each(|p| check_depth(p, depth + 1)),
    }
}

fn references(body: &Expr) -> Vec<usize> {
    let mut refs = Vec::new();
    body.for_each_rule(&mut |r| refs.push(r.index()));
    refs.sort_unstable();
    refs.dedup();
    refs
}

/// Rules in post-order of the reference graph (callees before callers), iteratively.
fn post_order(bodies: &[Cow<'_, Expr>]) -> Vec<usize> {
    let refs: Vec<Vec<usize>> = bodies.iter().map(|b| references(b)).collect();
    let mut state = vec![0u8; bodies.len()]; // 0 new, 1 open, 2 done
    let mut order = Vec::with_capacity(bodies.len());
    for root in 0..bodies.len() {
        if state[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        state[root] = 1;
        while let Some((node, next)) = stack.last_mut() {
            if let Some(&child) = refs[*node].get(*next) {
                *next += 1;
                if state[child] == 0 {
                    state[child] = 1;
                    stack.push((child, 0));
                }
            } else {
                state[*node] = 2;
                order.push(*node);
                stack.pop();
            }
        }
    }
    order
}

/// Which rules lie on a reference cycle (Tarjan's strongly connected components, iteratively).
fn recursive_rules(bodies: &[Cow<'_, Expr>]) -> Vec<bool> {
    let n = bodies.len();
    let refs: Vec<Vec<usize>> = bodies.iter().map(|b| references(b)).collect();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut recursive = vec![false; n];
    let mut counter = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut call = vec![(root, 0usize)];
        index[root] = counter;
        low[root] = counter;
        counter += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut next)) = call.last_mut() {
            if let Some(&w) = refs[v].get(*next) {
                *next += 1;
                if index[w] == usize::MAX {
                    index[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut component = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        component.push(w);
                        if w == v {
                            break;
                        }
                    }
                    let cyclic = component.len() > 1 || refs[v].contains(&v);
                    for w in component {
                        recursive[w] = cyclic;
                    }
                }
            }
        }
    }
    recursive
}

/// Drops productions that use nonterminals deriving no finite string, and such parts of
/// families.
fn prune_unproductive(cfg: &mut Cfg, start_name: &str) -> Result<(), GrammarError> {
    let mut productive = vec![false; cfg.nonterminals.len()];
    loop {
        let mut changed = false;
        for (lhs, rhs) in &cfg.productions {
            if !productive[*lhs as usize]
                && rhs.iter().all(|s| match s {
                    Sym::T(_) => true,
                    Sym::N(n) => productive[*n as usize],
                })
            {
                productive[*lhs as usize] = true;
                changed = true;
            }
        }
        for family in &cfg.families {
            if !productive[family.root as usize] && family_productive(family, &productive) {
                productive[family.root as usize] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    if !productive[cfg.start as usize] {
        return Err(GrammarError::EmptyLanguage {
            rule: start_name.to_string(),
        });
    }
    cfg.productions.retain(|(lhs, rhs)| {
        productive[*lhs as usize]
            && rhs.iter().all(|s| match s {
                Sym::T(_) => true,
                Sym::N(n) => productive[*n as usize],
            })
    });
    let live = |nt: &u32| productive[*nt as usize];
    for family in &mut cfg.families {
        family.members.retain(|(nt, _)| live(nt));
        family.extra = family.extra.filter(live);
        family.separator = family.separator.filter(live);
    }
    Ok(())
}

/// Whether a family derives some string, given the nonterminals known to: its required
/// members must, and so must enough items and a separator to put between them.
fn family_productive(family: &Family, productive: &[bool]) -> bool {
    let live = |nt: u32| productive[nt as usize];
    let required = family.members.iter().filter(|(_, r)| *r).count();
    if family.members.iter().any(|&(nt, r)| r && !live(nt)) {
        return false;
    }
    let items = if required == 0 && !family.allow_empty {
        let any_item =
            family.members.iter().any(|&(nt, _)| live(nt)) || family.extra.is_some_and(live);
        if !any_item {
            return false;
        }
        1
    } else {
        required
    };
    items < 2 || family.separator.is_some_and(live)
}

/// Literal alternatives from which on they are merged into a trie.
const MIN_TRIE_LITERALS: usize = 16;

/// Alternatives from which literal-only ones are merged into a trie: a long list of words (a big
/// `enum`, say) then costs NFA states in proportion to its distinct prefixes, not its size.
fn alternation(hirs: Vec<Hir>) -> Hir {
    use regex_syntax::hir::HirKind;
    let literals = hirs
        .iter()
        .filter(|h| matches!(h.kind(), HirKind::Literal(_)))
        .count();
    if literals < MIN_TRIE_LITERALS {
        return Hir::alternation(hirs);
    }
    let mut words = Vec::with_capacity(literals);
    let mut others = Vec::new();
    for h in hirs {
        match h.kind() {
            HirKind::Literal(lit) => words.push(lit.0.to_vec()),
            _ => others.push(h),
        }
    }
    words.sort_unstable();
    words.dedup();
    others.push(literal_trie(&words));
    Hir::alternation(others)
}

/// Splits alternatives into the trie of their literals (when there are enough of them for
/// [`alternation`] to merge) and the rest, so a huge word list never becomes one production
/// per word.
fn split_literals(alts: &[Expr]) -> (Option<Hir>, Vec<&Expr>) {
    use regex_syntax::hir::HirKind;
    let is_literal =
        |e: &Expr| matches!(e, Expr::Regex(h) if matches!(h.kind(), HirKind::Literal(_)));
    let mut words = Vec::new();
    let mut others = Vec::new();
    for alt in alts {
        match alt {
            Expr::Regex(h) if is_literal(alt) => {
                if let HirKind::Literal(lit) = h.kind() {
                    words.push(lit.0.to_vec());
                }
            }
            _ => others.push(alt),
        }
    }
    if words.len() < MIN_TRIE_LITERALS {
        return (None, alts.iter().collect());
    }
    words.sort_unstable();
    words.dedup();
    (Some(literal_trie(&words)), others)
}

/// The trie of sorted, distinct `words` as one expression, built bottom-up without recursion.
fn literal_trie(words: &[Vec<u8>]) -> Hir {
    // Each frame is a trie node: its depth and the alternatives collected for it so far; the
    // frame closes when the next word no longer shares its prefix.
    struct Frame {
        depth: usize,
        alternatives: Vec<Hir>,
        ends_here: bool,
    }
    fn close(frame: Frame, edge: u8) -> Hir {
        let mut alternatives = frame.alternatives;
        if frame.ends_here {
            alternatives.push(Hir::empty());
        }
        let rest = if alternatives.len() == 1 {
            alternatives.pop().unwrap_or_else(Hir::empty)
        } else {
            Hir::alternation(alternatives)
        };
        Hir::concat(vec![Hir::literal(&[edge][..]), rest])
    }
    let mut stack: Vec<Frame> = vec![Frame {
        depth: 0,
        alternatives: Vec::new(),
        ends_here: false,
    }];
    let mut path: Vec<u8> = Vec::new();
    for word in words {
        let common = word.iter().zip(&path).take_while(|(a, b)| a == b).count();
        while stack.len() > common + 1 {
            let frame = stack.pop().unwrap_or(Frame {
                depth: 0,
                alternatives: Vec::new(),
                ends_here: false,
            });
            let edge = path[frame.depth - 1];
            let hir = close(frame, edge);
            if let Some(parent) = stack.last_mut() {
                parent.alternatives.push(hir);
            }
        }
        path.truncate(common);
        for &b in &word[common..] {
            path.push(b);
            stack.push(Frame {
                depth: path.len(),
                alternatives: Vec::new(),
                ends_here: false,
            });
        }
        if let Some(top) = stack.last_mut() {
            top.ends_here = true;
        }
    }
    while stack.len() > 1 {
        let frame = stack.pop().unwrap_or(Frame {
            depth: 0,
            alternatives: Vec::new(),
            ends_here: false,
        });
        let edge = path[frame.depth - 1];
        let hir = close(frame, edge);
        if let Some(parent) = stack.last_mut() {
            parent.alternatives.push(hir);
        }
    }
    let root = stack.pop().unwrap_or(Frame {
        depth: 0,
        alternatives: Vec::new(),
        ends_here: false,
    });
    let mut alternatives = root.alternatives;
    if root.ends_here {
        alternatives.push(Hir::empty());
    }
    Hir::alternation(alternatives)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pattern: &str) -> Hir {
        regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(pattern)
            .expect("valid pattern")
    }

    #[test]
    fn equal_graphs_built_apart_share_one_terminal() {
        use crate::grammar::{GrammarBuilder, GraphState};
        // `a+` as a graph, built twice; and a graph of `b`, and one of nothing.
        let graph = |byte: &str, looping: bool| {
            let back = if looping { vec![(0, 1)] } else { Vec::new() };
            let states = vec![
                GraphState {
                    edges: vec![(0, 1)],
                    accepting: false,
                },
                GraphState {
                    edges: back,
                    accepting: true,
                },
            ];
            Expr::graph(RegexGraph::new(vec![parse(byte)], states).expect("valid"))
        };
        let nothing = Expr::graph(
            RegexGraph::new(
                vec![parse("a")],
                vec![GraphState {
                    edges: Vec::new(),
                    accepting: false,
                }],
            )
            .expect("valid"),
        );
        let mut b = GrammarBuilder::new();
        let root = b.rule_id("root");
        let body = Expr::alt(vec![
            Expr::seq(vec![Expr::literal("x"), graph("a", true)]),
            Expr::seq(vec![Expr::literal("y"), graph("a", true)]),
            Expr::seq(vec![Expr::literal("z"), graph("b", false)]),
            Expr::seq(vec![Expr::literal("w"), nothing]),
        ]);
        b.define(root, body).expect("defines");
        let grammar = b.build(root).expect("builds");
        let cfg = lower(&grammar, &Limits::default(), &Deadline::after(None)).expect("lowers");
        let graphs = cfg
            .terminals
            .iter()
            .filter(|t| matches!(t, Terminal::Graph(_)))
            .count();
        assert_eq!(graphs, 2, "one terminal for both `a+` graphs, one for `b`");
        // The branch through the empty graph is dropped: x, y, z and the start remain.
        assert_eq!(cfg.productions.len(), 4, "{:?}", cfg.productions);
    }

    /// A large bounded rule named in several places (bare, inside alternatives, inside
    /// another rule) is one terminal; a small one is copied into its neighbours' lexemes.
    #[test]
    fn a_large_rule_is_one_terminal_shared_by_its_uses() {
        use crate::grammar::GrammarBuilder;
        let lower_with = |large: Hir| {
            let mut b = GrammarBuilder::new();
            let root = b.rule_id("root");
            let shared = b.rule_id("shared");
            b.define(shared, Expr::from_hir(large)).expect("defines");
            let wrapper = b.rule_id("wrapper");
            let wrapped = Expr::seq(vec![Expr::literal("w"), Expr::rule(shared)]);
            b.define(wrapper, wrapped).expect("defines");
            let body = Expr::seq(vec![
                Expr::literal("a"),
                Expr::rule(shared),
                Expr::rule(wrapper),
                Expr::alt(vec![
                    Expr::empty(),
                    Expr::seq(vec![Expr::literal(",b"), Expr::rule(shared)]),
                ]),
                Expr::alt(vec![
                    Expr::literal(",c"),
                    Expr::seq(vec![Expr::literal(",d"), Expr::rule(shared)]),
                ]),
            ]);
            b.define(root, body).expect("defines");
            let grammar = b.build(root).expect("builds");
            lower(&grammar, &Limits::default(), &Deadline::after(None)).expect("lowers")
        };
        // Eight-digit numbers without a leading zero: a few hundred in `hir_size`, doubled.
        let large = parse("([1-9][0-9]{7}|[1-9][0-9]{7}(x[1-9][0-9]{7}){3})(y[0-9]{20}){0,20}");
        assert!(hir_size(&large, usize::MAX) > MAX_COPIED_RULE_SIZE);
        let cfg = lower_with(large.clone());
        for t in &cfg.terminals {
            match t {
                Terminal::Regex(h) if *h == large => {}
                Terminal::Regex(h) => assert!(
                    h.properties().maximum_len() <= Some(2),
                    "only the literals are lexemes besides the rule: {h:?}"
                ),
                Terminal::Graph(g) => panic!("no graph here: {g:?}"),
            }
        }
        let alone = cfg
            .terminals
            .iter()
            .filter(|t| matches!(t, Terminal::Regex(h) if *h == large))
            .count();
        assert_eq!(alone, 1, "{:?}", cfg.terminals);
        let small = parse("[1-9][0-9]{2}");
        let cfg = lower_with(small.clone());
        assert!(
            !cfg.terminals
                .iter()
                .any(|t| matches!(t, Terminal::Regex(h) if *h == small)),
            "a small rule is merged with its neighbours: {:?}",
            cfg.terminals
        );
    }
}
