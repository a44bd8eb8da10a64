//! The syntax tree of a Lark grammar: what the text says, before names are resolved.

/// A Lark expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// `"text"`, or `"text"i` when `insensitive`; `text` is already unescaped.
    Literal {
        text: String,
        insensitive: bool,
        offset: usize,
    },
    /// `/pattern/flags`; `pattern` is what Python's `re` receives.
    Regex {
        pattern: String,
        flags: String,
        offset: usize,
    },
    /// `"a".."z"`: one character of the range.
    Range {
        from: char,
        to: char,
    },
    /// A rule, terminal or template parameter; `offset` is where it is written.
    Name {
        name: String,
        offset: usize,
    },
    /// `name{arg, ...}`: a template instance.
    Template {
        name: String,
        args: Vec<Node>,
        offset: usize,
    },
    /// `%json {...}`: a JSON document valid against the schema (llguidance's extension).
    Json {
        schema: String,
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

    /// This node with every name in `params` replaced by its argument (template bodies).
    pub fn substitute(&self, params: &[String], args: &[Node]) -> Node {
        match self {
            Node::Name { name, .. } => match params.iter().position(|p| p == name) {
                Some(i) => args[i].clone(),
                None => self.clone(),
            },
            Node::Template {
                name,
                args: a,
                offset,
            } => Node::Template {
                name: name.clone(),
                args: a.iter().map(|n| n.substitute(params, args)).collect(),
                offset: *offset,
            },
            Node::Seq(parts) => {
                Node::Seq(parts.iter().map(|n| n.substitute(params, args)).collect())
            }
            Node::Alt(parts) => {
                Node::Alt(parts.iter().map(|n| n.substitute(params, args)).collect())
            }
            Node::Repeat { node, min, max } => Node::Repeat {
                node: Box::new(node.substitute(params, args)),
                min: *min,
                max: *max,
            },
            Node::Literal { .. } | Node::Regex { .. } | Node::Range { .. } | Node::Json { .. } => {
                self.clone()
            }
        }
    }

    /// A text that names this node's language exactly (the key of a template instance).
    pub fn key(&self) -> String {
        match self {
            Node::Literal {
                text, insensitive, ..
            } => {
                format!("{text:?}{}", if *insensitive { "i" } else { "" })
            }
            Node::Regex { pattern, flags, .. } => format!("/{pattern:?}/{flags}"),
            Node::Range { from, to } => format!("{from:?}..{to:?}"),
            Node::Json { schema, .. } => format!("%json{schema}"),
            Node::Name { name, .. } => name.clone(),
            Node::Template { name, args, .. } => format!(
                "{name}{{{}}}",
                args.iter().map(Node::key).collect::<Vec<_>>().join(", ")
            ),
            Node::Seq(parts) => format!(
                "({})",
                parts.iter().map(Node::key).collect::<Vec<_>>().join(" ")
            ),
            Node::Alt(parts) => format!(
                "({})",
                parts.iter().map(Node::key).collect::<Vec<_>>().join(" | ")
            ),
            Node::Repeat { node, min, max } => match max {
                Some(max) => format!("{}~{min}..{max}", node.key()),
                None => format!("{}~{min}..", node.key()),
            },
        }
    }
}

/// `name: body` (a rule when `name` is lowercase, a terminal when it is uppercase).
#[derive(Clone, Debug)]
pub(crate) struct Definition {
    pub name: String,
    /// Byte offset of the name in the text.
    pub offset: usize,
    /// A template's parameters (empty for plain rules and terminals).
    pub params: Vec<String>,
    pub body: Node,
}

impl Definition {
    /// Whether this defines a terminal (an uppercase name).
    pub fn is_terminal(&self) -> bool {
        is_terminal_name(&self.name)
    }
}

/// Whether `name` names a terminal: Lark's terminals are uppercase, rules lowercase.
pub(crate) fn is_terminal_name(name: &str) -> bool {
    name.trim_start_matches('_')
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase())
}

/// One import: `name` of the module, bound under `alias`.
#[derive(Clone, Debug)]
pub(crate) struct Import {
    pub name: String,
    pub alias: String,
    pub offset: usize,
}

/// A grammar's statements.
#[derive(Clone, Debug, Default)]
pub(crate) struct Statements {
    pub definitions: Vec<Definition>,
    /// `%ignore` bodies, with their offsets.
    pub ignores: Vec<(Node, usize)>,
    pub imports: Vec<Import>,
}
