//! Syntax tree to the grammar core's [`Grammar`].

use constrain_engine::{Expr, Grammar, GrammarBuilder, RuleId};

use crate::error::{ErrorKind, GbnfError};
use crate::syntax::{Node, RuleDef};

/// Builds the grammar of `rules` (already checked) that starts at `rules[root]`.
///
/// Rules keep their names and their order, so rule `i` of the text is rule id `i`.
pub(crate) fn lower(rules: &[RuleDef], root: usize) -> Result<Grammar, GbnfError> {
    let mut builder = GrammarBuilder::new();
    let ids: Vec<RuleId> = rules.iter().map(|r| builder.rule_id(&r.name)).collect();
    for (rule, &id) in rules.iter().zip(&ids) {
        let body = lower_node(&rule.body, &mut builder);
        builder.define(id, body).map_err(to_error)?;
    }
    builder.build(ids[root]).map_err(to_error)
}

fn to_error(e: constrain_engine::GrammarError) -> GbnfError {
    GbnfError::global(ErrorKind::Grammar(e))
}

fn lower_node(node: &Node, builder: &mut GrammarBuilder) -> Expr {
    match node {
        Node::Literal(text) => Expr::literal(text),
        Node::Class { ranges, negated } => Expr::char_class(ranges, *negated),
        Node::AnyChar => Expr::any_char(),
        Node::Token { id, negated: false } => Expr::token(*id),
        Node::Token { id, negated: true } => Expr::not_token(*id),
        Node::Ref { name, .. } => Expr::rule(builder.rule_id(name)),
        Node::Seq(parts) => Expr::seq(parts.iter().map(|p| lower_node(p, builder)).collect()),
        Node::Alt(alternatives) => Expr::alt(
            alternatives
                .iter()
                .map(|a| lower_node(a, builder))
                .collect(),
        ),
        Node::Repeat { node, min, max } => lower_node(node, builder).repeat(*min, *max),
    }
}
