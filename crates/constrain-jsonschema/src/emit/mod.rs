//! From [`Node`]s to grammar rules.
//!
//! Every shared definition becomes one rule (so recursion is a rule referring to itself), and
//! structurally equal object/array schemas share one rule. Layout (whitespace, separators,
//! indentation) comes from [`Layout`].

mod array;
mod layout;
mod literal;
mod object;
mod prune;
mod scalar;

use constrain_engine::{Expr, GrammarBuilder, RuleId};
use rustc_hash::FxHashMap;

use crate::ctx::{Ctx, Fail};
use crate::error::{pointer_or_root, SchemaError};
use crate::ir::{DefId, Node, StringSet, Typed};
pub(crate) use layout::Layout;

/// Most rules one grammar may have.
pub(crate) const MAX_RULES: usize = 50_000;

pub(crate) struct Emitter<'c, 'a> {
    pub(crate) ctx: &'c mut Ctx<'a>,
    pub(crate) b: GrammarBuilder,
    pub(crate) layout: Layout,
    /// Rule of each (definition, depth).
    def_rules: FxHashMap<(DefId, u32), RuleId>,
    /// Definitions whose rule is declared but not yet defined.
    pending: Vec<(DefId, u32)>,
    /// Shared rules of structured schemas.
    memo: FxHashMap<(Node, u32), RuleId>,
    /// Rule of a schema-less value, per nesting budget left.
    any_rules: FxHashMap<(u32, u32), RuleId>,
    /// Rule of the undeclared members of an object (`None`: there are none), by what they
    /// depend on: the variants of one object (per branch of a `oneOf`, per subset of the
    /// members seen...) share it instead of each spelling the complement of its keys again.
    extra_rules: FxHashMap<object::ExtraKey, Option<RuleId>>,
    /// The rule of each set of numbers met so far (`None`: the set is empty): an object's
    /// integer members all spell the same 64-bit range, built once.
    numbers: FxHashMap<crate::ir::NumberSet, Option<RuleId>>,
    /// Rule bodies, given to the builder once unproductive parts are pruned.
    bodies: FxHashMap<RuleId, Expr>,
    declared: Vec<RuleId>,
    /// Next suffix per rule-name hint.
    name_counts: FxHashMap<String, u32>,
    rules: usize,
    /// Where errors are reported: the definition being emitted.
    pub(crate) pointer: String,
    /// Where the first array generated without its uniqueness, left to the check beside
    /// the grammar (see [`crate::unique`]), is.
    pub(crate) unique_by_check_at: Option<String>,
}

impl<'c, 'a> Emitter<'c, 'a> {
    pub(crate) fn new(ctx: &'c mut Ctx<'a>) -> Emitter<'c, 'a> {
        let layout = Layout::new(ctx.options);
        Emitter {
            ctx,
            b: GrammarBuilder::new(),
            layout,
            def_rules: FxHashMap::default(),
            pending: Vec::new(),
            memo: FxHashMap::default(),
            any_rules: FxHashMap::default(),
            extra_rules: FxHashMap::default(),
            numbers: FxHashMap::default(),
            bodies: FxHashMap::default(),
            declared: Vec::new(),
            name_counts: FxHashMap::default(),
            rules: 0,
            pointer: String::new(),
            unique_by_check_at: None,
        }
    }

    /// The grammar of a document whose value is in `root`.
    pub(crate) fn finish(
        mut self,
        root: &Node,
    ) -> Result<(constrain_engine::Grammar, Vec<crate::Warning>), SchemaError> {
        let value = match self.emit(root, 0).and_then(|v| self.drain().map(|()| v)) {
            Ok(value) => value,
            Err(e) => {
                constrain_engine::free_in_background(std::mem::take(&mut self.bodies));
                return Err(e);
            }
        };
        let doc = Expr::seq(vec![
            self.layout.outer_gap(),
            value,
            self.layout.outer_gap(),
        ]);
        let start = self.declare_rule("document")?;
        self.define(start, doc);
        let live = prune::productive_rules(&self.bodies)?;
        if !live.contains(&start) {
            return Err(SchemaError::Unsatisfiable {
                pointer: "/".into(),
            });
        }
        for (rule, body) in std::mem::take(&mut self.bodies) {
            if live.contains(&rule) {
                self.b.define(rule, prune::prune(body, &live))?;
            }
        }
        // Unproductive rules are no longer referenced; they still need a body to build.
        for rule in self.declared.clone() {
            if !self.b.is_defined(rule) {
                self.b.define(rule, Expr::nothing())?;
            }
        }
        let mut grammar = self.b.build(start)?;
        if let Some(pointer) = self.unique_by_check_at.take() {
            match crate::unique::shapes(self.ctx, root, &pointer) {
                Ok(shapes) => grammar = grammar.with_text_check(crate::unique::text_check(shapes)),
                Err(SchemaError::Unsupported { reason, .. }) if self.ctx.options.lenient => {
                    self.ctx.warn(
                        &pointer,
                        "uniqueItems",
                        crate::error::WarningKind::Dropped,
                        reason,
                    );
                }
                Err(e) => return Err(e),
            }
        }
        Ok((grammar, std::mem::take(&mut self.ctx.warnings)))
    }

    /// Gives a declared rule its body.
    pub(crate) fn define(&mut self, rule: RuleId, body: Expr) {
        self.bodies.insert(rule, body);
    }

    /// Defines the rules of definitions referenced so far, until none is left.
    fn drain(&mut self) -> Result<(), SchemaError> {
        while let Some((def, depth)) = self.pending.pop() {
            let rule = self.def_rules[&(def, depth)];
            let saved = std::mem::replace(&mut self.pointer, self.ctx.defs[def].pointer.clone());
            let body = match self.ctx.body(def) {
                Ok(b) => b,
                Err(f) => return Err(self.ctx.fail_to_error(f, &self.pointer.clone())),
            };
            if let Node::Ref(_) = body {
                // A chain of references: make sure it reaches a schema.
                self.ctx
                    .expand(&body)
                    .map_err(|f| self.ctx.fail_to_error(f, &self.pointer.clone()))?;
            }
            let expr = self.emit(&body, depth)?;
            self.pointer = saved;
            self.define(rule, expr);
        }
        Ok(())
    }

    pub(crate) fn fresh_rule(&mut self, hint: &str, body: Expr) -> Result<RuleId, SchemaError> {
        let rule = self.declare_rule(hint)?;
        self.define(rule, body);
        Ok(rule)
    }

    pub(crate) fn declare_rule(&mut self, hint: &str) -> Result<RuleId, SchemaError> {
        self.count_rule()?;
        // A counter per hint keeps naming linear (probing suffixes would be quadratic).
        let counter = self.name_counts.entry(hint.to_string()).or_insert(0);
        let mut name = if *counter == 0 {
            hint.to_string()
        } else {
            format!("{hint}-{counter}")
        };
        while self.b.lookup(&name).is_some() {
            *counter += 1;
            name = format!("{hint}-{counter}");
        }
        *counter += 1;
        let rule = self.b.rule_id(&name);
        self.declared.push(rule);
        Ok(rule)
    }

    fn count_rule(&mut self) -> Result<(), SchemaError> {
        self.rules += 1;
        if self.rules > MAX_RULES {
            return Err(SchemaError::TooComplex {
                pointer: pointer_or_root(&self.pointer),
                what: "grammar rules".into(),
                limit: MAX_RULES,
            });
        }
        Ok(())
    }

    /// A keyword that cannot be enforced here (error, or warning under `lenient`).
    pub(crate) fn unsupported(
        &mut self,
        keyword: &str,
        reason: impl Into<String>,
    ) -> Result<(), SchemaError> {
        let pointer = self.pointer.clone();
        self.ctx.unsupported(&pointer, keyword, reason)
    }

    pub(crate) fn fail(&self, f: Fail) -> SchemaError {
        self.ctx.fail_to_error(f, &self.pointer)
    }

    /// The grammar of the values of `node`, nested `depth` levels deep (only indentation
    /// depends on the depth).
    pub(crate) fn emit(&mut self, node: &Node, depth: u32) -> Result<Expr, SchemaError> {
        crate::deadline::check(&self.pointer)?;
        let depth = self.layout.depth_key(depth);
        match node {
            Node::Any => self.any_value(depth, self.ctx.options.max_untyped_depth),
            Node::Nothing => Ok(Expr::nothing()),
            Node::Ref(d) => Ok(Expr::rule(self.def_rule(*d, depth)?)),
            Node::Const(values) => self.literals(values, depth),
            Node::AnyOf(parts) => {
                let strings: Vec<&StringSet> =
                    parts.iter().filter_map(Node::only_strings).collect();
                let union = if strings.len() >= 2 {
                    self.strings_union(&strings)?
                } else {
                    None
                };
                let mut alts = Vec::with_capacity(parts.len());
                for p in parts.iter() {
                    if union.is_some() && p.only_strings().is_some() {
                        continue;
                    }
                    match self.emit(p, depth) {
                        Ok(alt) => alts.push(alt),
                        Err(e) => {
                            constrain_engine::free_in_background(alts);
                            return Err(e);
                        }
                    }
                }
                alts.extend(union);
                Ok(Expr::alt(alts))
            }
            Node::Typed(t) => {
                if t.array.is_some() || t.object.is_some() {
                    let key = (node.clone(), depth);
                    if let Some(&r) = self.memo.get(&key) {
                        return Ok(Expr::rule(r));
                    }
                    let rule = self.declare_rule("schema")?;
                    self.memo.insert(key, rule);
                    let expr = self.typed(t, depth)?;
                    self.define(rule, expr);
                    return Ok(Expr::rule(rule));
                }
                self.typed(t, depth)
            }
        }
    }

    fn def_rule(&mut self, def: DefId, depth: u32) -> Result<RuleId, SchemaError> {
        if let Some(&r) = self.def_rules.get(&(def, depth)) {
            return Ok(r);
        }
        let name = self.ctx.defs[def].name.clone();
        let hint = if depth == 0 {
            name
        } else {
            format!("{name}@{depth}")
        };
        let rule = self.declare_rule(&hint)?;
        self.def_rules.insert((def, depth), rule);
        self.pending.push((def, depth));
        Ok(rule)
    }

    fn typed(&mut self, t: &Typed, depth: u32) -> Result<Expr, SchemaError> {
        let mut alts = Vec::new();
        if t.null {
            alts.push(Expr::literal("null"));
        }
        if t.boolean {
            alts.push(Expr::regex("true|false")?);
        }
        if let Some(n) = &t.number {
            alts.push(self.number(n)?);
        }
        if let Some(s) = &t.string {
            alts.push(self.string(s)?);
        }
        if let Some(a) = &t.array {
            alts.push(self.array(a, depth)?);
        }
        if let Some(o) = &t.object {
            alts.push(self.object(o, depth)?);
        }
        Ok(Expr::alt(alts))
    }

    /// Any JSON value, with at most `budget` levels of arrays/objects (`u32::MAX`: no limit).
    pub(crate) fn any_value(&mut self, depth: u32, budget: u32) -> Result<Expr, SchemaError> {
        let key = (depth, budget);
        if let Some(&r) = self.any_rules.get(&key) {
            return Ok(Expr::rule(r));
        }
        let rule = self.declare_rule(if budget == u32::MAX {
            "value"
        } else {
            "value-bounded"
        })?;
        self.any_rules.insert(key, rule);
        let mut alts = vec![
            Expr::regex("null|true|false")?,
            scalar::any_number(self.ctx.options.numbers)?,
            scalar::any_string(self.ctx.options.escapes),
        ];
        if budget > 0 {
            let inner_budget = if budget == u32::MAX {
                u32::MAX
            } else {
                budget - 1
            };
            let child_depth = self.layout.depth_key(depth + 1);
            let child = self.any_value(child_depth, inner_budget)?;
            let member = Expr::seq(vec![
                scalar::any_string(self.ctx.options.escapes),
                self.layout.key_sep(),
                child.clone(),
            ]);
            alts.push(
                self.layout
                    .object(depth, vec![(member.clone(), member)], true),
            );
            alts.push(self.layout.array(depth, child.clone(), child, true));
        }
        self.define(rule, Expr::alt(alts));
        Ok(Expr::rule(rule))
    }
}

/// Compiles the document `ctx` describes into a grammar.
pub(crate) fn compile_root(
    ctx: &mut Ctx<'_>,
    root: Node,
) -> Result<(constrain_engine::Grammar, Vec<crate::Warning>), SchemaError> {
    Emitter::new(ctx).finish(&root)
}
