//! Building a [`Grammar`]: named rules whose bodies are [`Expr`]s.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::expr::{Expr, RuleId};
use crate::error::GrammarError;
use crate::text_check::TextCheck;

/// Collects rules, then checks them into a [`Grammar`].
///
/// Rules may be referred to before they are defined ([`GrammarBuilder::rule_id`]), which is how
/// recursive grammars are written.
///
/// ```
/// use constrain_engine::{Expr, GrammarBuilder};
///
/// let mut b = GrammarBuilder::new();
/// let list = b.rule_id("list");
/// let item = b.add_rule("item", Expr::regex("[0-9]+")?)?;
/// b.define(list, Expr::seq(vec![
///     Expr::literal("["),
///     Expr::seq(vec![Expr::rule(item), Expr::seq(vec![Expr::literal(","), Expr::rule(item)]).star()]).optional(),
///     Expr::literal("]"),
/// ]))?;
/// let grammar = b.build(list)?;
/// assert_eq!(grammar.rule_name(grammar.start()), "list");
/// # Ok::<(), constrain_engine::GrammarError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct GrammarBuilder {
    names: Vec<String>,
    bodies: Vec<Option<Expr>>,
    by_name: FxHashMap<String, RuleId>,
}

impl GrammarBuilder {
    /// An empty builder.
    pub fn new() -> GrammarBuilder {
        GrammarBuilder::default()
    }

    /// The id of the rule called `name`, declaring it if it is new.
    pub fn rule_id(&mut self, name: &str) -> RuleId {
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        let id = RuleId(self.names.len() as u32);
        self.names.push(name.to_string());
        self.bodies.push(None);
        self.by_name.insert(name.to_string(), id);
        id
    }

    /// The id of the rule called `name`, if it was declared.
    pub fn lookup(&self, name: &str) -> Option<RuleId> {
        self.by_name.get(name).copied()
    }

    /// Whether `rule` has a body yet.
    pub fn is_defined(&self, rule: RuleId) -> bool {
        self.bodies.get(rule.index()).is_some_and(|b| b.is_some())
    }

    /// Gives `rule` its body. Defining a rule twice is an error.
    pub fn define(&mut self, rule: RuleId, body: Expr) -> Result<(), GrammarError> {
        let slot = self
            .bodies
            .get_mut(rule.index())
            .ok_or(GrammarError::UnknownRuleId(rule.0))?;
        if slot.is_some() {
            return Err(GrammarError::DuplicateRule {
                name: self.names[rule.index()].clone(),
            });
        }
        *slot = Some(body);
        Ok(())
    }

    /// Declares and defines the rule `name` in one step.
    pub fn add_rule(&mut self, name: &str, body: Expr) -> Result<RuleId, GrammarError> {
        let id = self.rule_id(name);
        self.define(id, body)?;
        Ok(id)
    }

    /// Adds a rule under a fresh name derived from `hint` (for helper rules of front-ends).
    pub fn fresh_rule(&mut self, hint: &str, body: Expr) -> RuleId {
        let mut name = hint.to_string();
        let mut n = 1usize;
        while self.by_name.contains_key(&name) {
            name = format!("{hint}-{n}");
            n += 1;
        }
        let id = self.rule_id(&name);
        self.bodies[id.index()] = Some(body);
        id
    }

    /// Copies every rule of `grammar` into this builder, names prefixed with `prefix`, and
    /// returns the id its start rule has here: how grammars are composed (one inside a
    /// sequence, alternatives of several). A grammar with a [`TextCheck`] beside it cannot be
    /// embedded: the check reads the whole output, not the part this grammar would cover.
    ///
    /// ```
    /// use constrain_engine::{Expr, Grammar, GrammarBuilder};
    ///
    /// let digits = Grammar::from_regex("[0-9]+")?;
    /// let mut b = GrammarBuilder::new();
    /// let inner = b.embed(&digits, "n.")?;
    /// let root = b.add_rule("root", Expr::seq(vec![Expr::literal("#"), Expr::rule(inner)]))?;
    /// let grammar = b.build(root)?;
    /// assert_eq!(grammar.rule_count(), 2);
    /// # Ok::<(), constrain_engine::GrammarError>(())
    /// ```
    pub fn embed(&mut self, grammar: &Grammar, prefix: &str) -> Result<RuleId, GrammarError> {
        if grammar.text_check().is_some() {
            return Err(GrammarError::Unsupported {
                what: "a grammar with a check beside it (such as a schema's 'uniqueItems' over \
                       objects or strings) inside a larger constraint; give it as the only \
                       constraint"
                    .into(),
            });
        }
        let ids: Vec<RuleId> = grammar
            .rules()
            .map(|(_, name, _)| self.rule_id(&format!("{prefix}{name}")))
            .collect();
        for (id, _, body) in grammar.rules() {
            self.define(ids[id.index()], body.map_rules(&|r| ids[r.index()]))?;
        }
        Ok(ids[grammar.start().index()])
    }

    /// Checks that every referenced rule is defined and returns the grammar starting at `start`.
    pub fn build(self, start: RuleId) -> Result<Grammar, GrammarError> {
        if start.index() >= self.names.len() || self.bodies[start.index()].is_none() {
            let name = self.names.get(start.index()).cloned().unwrap_or_default();
            return Err(GrammarError::UndefinedStart { name });
        }
        let rules: Vec<RuleDef> = self
            .names
            .into_iter()
            .zip(self.bodies)
            .map(|(name, body)| RuleDef { name, body })
            .collect();
        for rule in &rules {
            if let Some(body) = &rule.body {
                let mut missing = None;
                body.for_each_rule(&mut |r| {
                    if missing.is_none() && rules[r.index()].body.is_none() {
                        missing = Some(r);
                    }
                });
                if let Some(r) = missing {
                    return Err(GrammarError::UndefinedRule {
                        name: rules[r.index()].name.clone(),
                        referenced_from: rule.name.clone(),
                    });
                }
            }
        }
        let rules = rules
            .into_iter()
            .map(|r| (r.name, r.body.unwrap_or_else(Expr::nothing)))
            .collect();
        Ok(Grammar {
            rules,
            start,
            text_check: None,
        })
    }
}

struct RuleDef {
    name: String,
    body: Option<Expr>,
}

/// A checked, front-end-neutral grammar: rules with [`Expr`] bodies and a start rule.
///
/// Compile it for a vocabulary with [`CompiledGrammar::new`](crate::CompiledGrammar::new).
#[derive(Clone, Debug)]
pub struct Grammar {
    rules: Vec<(String, Expr)>,
    start: RuleId,
    text_check: Option<Arc<dyn TextCheck>>,
}

impl Grammar {
    /// The grammar of one regular expression (Rust `regex` syntax), matched in full.
    ///
    /// ```
    /// let g = constrain_engine::Grammar::from_regex(r"\d{3}-\d{4}")?;
    /// # Ok::<(), constrain_engine::GrammarError>(())
    /// ```
    pub fn from_regex(pattern: &str) -> Result<Grammar, GrammarError> {
        let mut b = GrammarBuilder::new();
        let start = b.add_rule("root", Expr::regex(pattern)?)?;
        b.build(start)
    }

    /// The start rule.
    pub fn start(&self) -> RuleId {
        self.start
    }

    /// The number of rules.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// The name of `rule`.
    pub fn rule_name(&self, rule: RuleId) -> &str {
        &self.rules[rule.index()].0
    }

    /// The body of `rule`.
    pub fn rule_body(&self, rule: RuleId) -> &Expr {
        &self.rules[rule.index()].1
    }

    /// All rules, in id order.
    pub fn rules(&self) -> impl Iterator<Item = (RuleId, &str, &Expr)> {
        self.rules
            .iter()
            .enumerate()
            .map(|(i, (n, e))| (RuleId(i as u32), n.as_str(), e))
    }

    /// The grammar with `check` run beside it: its language is then the grammar's strings
    /// that `check` keeps.
    pub fn with_text_check(mut self, check: Arc<dyn TextCheck>) -> Grammar {
        self.text_check = Some(check);
        self
    }

    /// The check run beside the grammar, if any.
    pub fn text_check(&self) -> Option<&Arc<dyn TextCheck>> {
        self.text_check.as_ref()
    }
}
