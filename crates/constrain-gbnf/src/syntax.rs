//! The syntax tree of a GBNF grammar: what the text says, before any checking.

/// One `name ::= body` definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RuleDef {
    pub name: String,
    /// Byte offset of the name in the text.
    pub offset: usize,
    pub body: Node,
}

/// A GBNF expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// A literal string (possibly empty).
    Literal(String),
    /// One character from the ranges, or not from them when `negated`.
    Class {
        ranges: Vec<(char, char)>,
        negated: bool,
    },
    /// `.`: any one character.
    AnyChar,
    /// `<[id]>`, or `!<[id]>` when `negated`.
    Token {
        id: u32,
        negated: bool,
    },
    /// A reference to a rule; `offset` is where it is written.
    Ref {
        name: String,
        offset: usize,
    },
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

impl Node {
    /// A sequence, without the wrapper when there is one part.
    pub fn seq(mut parts: Vec<Node>) -> Node {
        if parts.len() == 1 {
            parts.pop().unwrap_or(Node::Seq(Vec::new()))
        } else {
            Node::Seq(parts)
        }
    }

    /// An alternation, without the wrapper when there is one alternative.
    pub fn alt(mut alternatives: Vec<Node>) -> Node {
        if alternatives.len() == 1 {
            alternatives.pop().unwrap_or(Node::Alt(Vec::new()))
        } else {
            Node::Alt(alternatives)
        }
    }

    /// Calls `f` with every rule reference, in text order.
    pub fn for_each_ref<'a>(&'a self, f: &mut impl FnMut(&'a str, usize)) {
        match self {
            Node::Ref { name, offset } => f(name, *offset),
            Node::Seq(parts) | Node::Alt(parts) => parts.iter().for_each(|p| p.for_each_ref(f)),
            Node::Repeat { node, .. } => node.for_each_ref(f),
            Node::Literal(_) | Node::Class { .. } | Node::AnyChar | Node::Token { .. } => {}
        }
    }
}
