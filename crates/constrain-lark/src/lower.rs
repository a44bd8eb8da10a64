//! [`Statements`] → the grammar core's [`Grammar`].
//!
//! Terminals (uppercase) are regular: each becomes one regular expression, built from its
//! literals, patterns and the terminals it names. Rules (lowercase) become rules of the
//! grammar; template instances become rules named after their arguments.
//!
//! `%ignore`: every occurrence of a terminal in a rule (named, or an anonymous literal)
//! becomes `IGNORED* TERMINAL`, and the start rule is followed by `IGNORED*`, where `IGNORED`
//! is any one of the ignored terminals. So ignored text may come before the first token,
//! between any two tokens and after the last one, never inside a token: where Lark's dynamic
//! lexer lets it (it tries the ignored terminals at every point where the parser expects a
//! terminal, and once the start rule is complete).

use std::collections::HashMap;

use constrain_engine::{Expr, Grammar, GrammarBuilder, RuleId};
use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, Repetition};

use crate::error::{ErrorKind, LarkError, Location};
use crate::pyregex;
use crate::syntax::{is_terminal_name, Definition, Node, Statements};

/// Template instances beyond this are an error (a template that instantiates itself with
/// growing arguments never ends).
pub(crate) const MAX_INSTANCES: usize = 1000;
/// The longest an instance's arguments may be written (arguments that grow with each
/// instance would otherwise double before the count runs out).
pub(crate) const MAX_INSTANCE_KEY: usize = 4096;

/// The terminals of one text (the grammar, or the built-in `common` module).
struct Terminals<'a> {
    text: &'a str,
    defs: HashMap<&'a str, &'a Definition>,
    /// Imported names: alias → name in `common`, and where the import is written.
    imports: HashMap<String, (String, usize)>,
    common: Option<Box<Terminals<'a>>>,
    done: HashMap<String, Hir>,
    visiting: Vec<String>,
}

impl<'a> Terminals<'a> {
    fn new(text: &'a str, statements: &'a Statements) -> Result<Terminals<'a>, LarkError> {
        let mut defs: HashMap<&str, &Definition> = HashMap::new();
        for def in statements.definitions.iter().filter(|d| d.is_terminal()) {
            if let Some(first) = defs.insert(&def.name, def) {
                return Err(duplicate(text, &def.name, first.offset, def.offset));
            }
        }
        Ok(Terminals {
            text,
            defs,
            imports: HashMap::new(),
            common: None,
            done: HashMap::new(),
            visiting: Vec::new(),
        })
    }

    /// The regular language of the terminal `name`, named at `offset`.
    fn hir(&mut self, name: &str, offset: usize) -> Result<Hir, LarkError> {
        if let Some(hir) = self.done.get(name) {
            return Ok(hir.clone());
        }
        if let Some((original, at)) = self.imports.get(name).cloned() {
            let common = self.common.as_mut().ok_or_else(|| {
                LarkError::at(ErrorKind::UnknownImport(original.clone()), self.text, at)
            })?;
            if !common.defs.contains_key(original.as_str()) {
                return Err(LarkError::at(
                    ErrorKind::UnknownImport(format!("common.{original}")),
                    self.text,
                    at,
                ));
            }
            let hir = common.hir(&original, 0)?;
            self.done.insert(name.to_string(), hir.clone());
            return Ok(hir);
        }
        let Some(def) = self.defs.get(name).copied() else {
            return Err(LarkError::at(
                ErrorKind::Undefined {
                    what: "terminal",
                    name: name.to_string(),
                },
                self.text,
                offset,
            ));
        };
        if self.visiting.iter().any(|v| v == name) {
            return Err(LarkError::at(
                ErrorKind::RecursiveTerminal(name.to_string()),
                self.text,
                def.offset,
            ));
        }
        self.visiting.push(name.to_string());
        let hir = self.node(&def.body, name);
        self.visiting.pop();
        let hir = hir?;
        self.done.insert(name.to_string(), hir.clone());
        Ok(hir)
    }

    /// The regular language of `node`, part of the terminal `owner`.
    fn node(&mut self, node: &Node, owner: &str) -> Result<Hir, LarkError> {
        Ok(match node {
            Node::Literal {
                text,
                insensitive,
                offset,
            } => {
                literal_hir(text, *insensitive).map_err(|k| LarkError::at(k, self.text, *offset))?
            }
            Node::Regex {
                pattern,
                flags,
                offset,
            } => regex_hir(pattern, flags).map_err(|k| LarkError::at(k, self.text, *offset))?,
            Node::Range { from, to } => {
                Hir::class(Class::Unicode(ClassUnicode::new([ClassUnicodeRange::new(
                    *from, *to,
                )])))
            }
            Node::Name { name, offset } => {
                if !is_terminal_name(name) {
                    return Err(LarkError::at(
                        ErrorKind::RuleInTerminal {
                            terminal: owner.to_string(),
                            rule: name.clone(),
                        },
                        self.text,
                        *offset,
                    ));
                }
                self.hir(name, *offset)?
            }
            Node::Json { offset, .. } => {
                return Err(LarkError::at(
                    ErrorKind::Json(format!(
                        "a JSON document is a rule's part, not part of the terminal {owner}"
                    )),
                    self.text,
                    *offset,
                ))
            }
            Node::Template { name, offset, .. } => {
                return Err(LarkError::at(
                    ErrorKind::RuleInTerminal {
                        terminal: owner.to_string(),
                        rule: name.clone(),
                    },
                    self.text,
                    *offset,
                ))
            }
            Node::Seq(parts) => Hir::concat(
                parts
                    .iter()
                    .map(|p| self.node(p, owner))
                    .collect::<Result<_, _>>()?,
            ),
            Node::Alt(parts) => Hir::alternation(
                parts
                    .iter()
                    .map(|p| self.node(p, owner))
                    .collect::<Result<_, _>>()?,
            ),
            Node::Repeat { node, min, max } => Hir::repetition(Repetition {
                min: *min,
                max: *max,
                greedy: true,
                sub: Box::new(self.node(node, owner)?),
            }),
        })
    }
}

fn duplicate(text: &str, name: &str, first: usize, second: usize) -> LarkError {
    LarkError::at(
        ErrorKind::Duplicate(name.to_string(), Location::of(text, first)),
        text,
        second,
    )
}

/// A string literal's language: exactly the text, or the text in any case (Python's
/// `re.IGNORECASE`, by simple case folding).
fn literal_hir(text: &str, insensitive: bool) -> Result<Hir, ErrorKind> {
    if !insensitive {
        return Ok(Hir::literal(text.as_bytes()));
    }
    let escaped: String = text
        .chars()
        .map(|c| format!("\\x{{{:X}}}", c as u32))
        .collect();
    pattern_hir(&format!("(?i:{escaped})"))
}

/// A `/pattern/flags` literal's language.
fn regex_hir(pattern: &str, flags: &str) -> Result<Hir, ErrorKind> {
    let mut rust_flags = String::new();
    for f in flags.chars() {
        match f {
            'i' | 's' | 'm' => rust_flags.push(f),
            'u' => {}
            _ => {
                return Err(ErrorKind::Unsupported {
                    construct: format!("the regular expression flag '{f}'"),
                    why: "only i, m, s and u have an exact equivalent",
                })
            }
        }
    }
    let translated = pyregex::translate(pattern).map_err(|message| ErrorKind::Regex {
        pattern: pattern.to_string(),
        message,
    })?;
    let wrapped = if rust_flags.is_empty() {
        format!("(?:{translated})")
    } else {
        format!("(?{rust_flags}:{translated})")
    };
    pattern_hir(&wrapped).map_err(|e| match e {
        ErrorKind::Grammar(g) => ErrorKind::Regex {
            pattern: pattern.to_string(),
            message: g.to_string(),
        },
        other => other,
    })
}

fn pattern_hir(pattern: &str) -> Result<Hir, ErrorKind> {
    match Expr::regex(pattern)? {
        Expr::Regex(hir) => Ok(*hir),
        _ => Ok(Hir::fail()),
    }
}

/// Builds the grammar of `statements` (the text `text`) from the rule `start`.
pub(crate) fn lower(
    text: &str,
    statements: &Statements,
    start: &str,
    json: Option<&crate::JsonSchemaCompiler>,
) -> Result<Grammar, LarkError> {
    let common_statements;
    let mut terminals = Terminals::new(text, statements)?;
    if !statements.imports.is_empty() {
        common_statements = crate::parser::parse(crate::common::COMMON)?;
        terminals.common = Some(Box::new(Terminals::new(
            crate::common::COMMON,
            &common_statements,
        )?));
        for import in &statements.imports {
            if let Some(def) = terminals.defs.get(import.alias.as_str()) {
                return Err(duplicate(text, &import.alias, def.offset, import.offset));
            }
            if !is_terminal_name(&import.alias) {
                return Err(LarkError::at(
                    ErrorKind::UnknownImport(format!(
                        "common.{} (common has terminals only)",
                        import.name
                    )),
                    text,
                    import.offset,
                ));
            }
            terminals
                .imports
                .insert(import.alias.clone(), (import.name.clone(), import.offset));
        }
    }
    // Every terminal is checked, used or not, so a grammar's errors do not depend on its use.
    let mut names: Vec<(&str, usize)> = terminals
        .defs
        .values()
        .map(|d| (d.name.as_str(), d.offset))
        .collect();
    names.sort_by_key(|&(_, offset)| offset);
    for (name, offset) in names {
        terminals.hir(name, offset)?;
    }
    let imported: Vec<(String, usize)> = terminals
        .imports
        .iter()
        .map(|(a, (_, o))| (a.clone(), *o))
        .collect();
    for (alias, offset) in imported {
        terminals.hir(&alias, offset)?;
    }

    let mut ignored = Vec::new();
    for (node, offset) in &statements.ignores {
        let hir = terminals.node(node, "%ignore")?;
        check_width(&hir, "%ignore", text, *offset)?;
        ignored.push(hir);
    }
    let ignored = (!ignored.is_empty()).then(|| {
        Hir::repetition(Repetition {
            min: 0,
            max: None,
            greedy: true,
            sub: Box::new(Hir::alternation(ignored)),
        })
    });

    let mut lowering = Lowering {
        text,
        builder: GrammarBuilder::new(),
        terminals,
        ignored,
        rules: HashMap::new(),
        templates: HashMap::new(),
        terminal_rules: HashMap::new(),
        instances: HashMap::new(),
        pending: Vec::new(),
        json,
        schemas: HashMap::new(),
    };
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for def in statements.definitions.iter().filter(|d| !d.is_terminal()) {
        if let Some(first) = seen.insert(&def.name, def.offset) {
            return Err(duplicate(text, &def.name, first, def.offset));
        }
        if def.params.is_empty() {
            let id = lowering.builder.rule_id(&def.name);
            lowering.rules.insert(def.name.clone(), id);
        } else {
            lowering.templates.insert(def.name.clone(), def);
        }
    }
    let Some(&start_id) = lowering.rules.get(start) else {
        return Err(LarkError::global(ErrorKind::MissingStart(
            start.to_string(),
        )));
    };
    for def in statements
        .definitions
        .iter()
        .filter(|d| !d.is_terminal() && d.params.is_empty())
    {
        let body = lowering.expr(&def.body)?;
        let id = lowering.rules[&def.name];
        lowering.builder.define(id, body).map_err(grammar_error)?;
    }
    while let Some((id, body)) = lowering.pending.pop() {
        let body = lowering.expr(&body)?;
        lowering.builder.define(id, body).map_err(grammar_error)?;
    }
    let root = match lowering.ignored.clone() {
        None => start_id,
        Some(ignored) => lowering
            .builder
            .add_rule(
                "$start",
                Expr::seq(vec![Expr::rule(start_id), Expr::from_hir(ignored)]),
            )
            .map_err(grammar_error)?,
    };
    lowering.builder.build(root).map_err(grammar_error)
}

fn grammar_error(e: constrain_engine::GrammarError) -> LarkError {
    LarkError::global(ErrorKind::Grammar(e))
}

fn check_width(hir: &Hir, name: &str, text: &str, offset: usize) -> Result<(), LarkError> {
    if hir.properties().minimum_len() == Some(0) {
        return Err(LarkError::at(
            ErrorKind::ZeroWidthTerminal(name.to_string()),
            text,
            offset,
        ));
    }
    Ok(())
}

struct Lowering<'a> {
    text: &'a str,
    builder: GrammarBuilder,
    terminals: Terminals<'a>,
    /// `IGNORED*`, when the grammar ignores anything.
    ignored: Option<Hir>,
    rules: HashMap<String, RuleId>,
    templates: HashMap<String, &'a Definition>,
    /// A rule per named terminal used in rules: `IGNORED* TERMINAL`.
    terminal_rules: HashMap<String, RuleId>,
    /// Template instances by key.
    instances: HashMap<String, RuleId>,
    /// Instances whose bodies are still to lower.
    pending: Vec<(RuleId, Node)>,
    /// Compiles `%json` schemas.
    json: Option<&'a crate::JsonSchemaCompiler>,
    /// `%json` grammars embedded so far, by schema.
    schemas: HashMap<String, RuleId>,
}

impl Lowering<'_> {
    /// The rule of a `%json` schema's documents, compiled once per schema.
    fn json_rule(&mut self, schema: &str, offset: usize) -> Result<RuleId, LarkError> {
        if let Some(&id) = self.schemas.get(schema) {
            return Ok(id);
        }
        let at = |message: String| LarkError::at(ErrorKind::Json(message), self.text, offset);
        let Some(compile) = self.json else {
            return Err(at(
                "no JSON Schema compiler was given (compile through the constrain facade)".into(),
            ));
        };
        let value: serde_json::Value =
            serde_json::from_str(schema).map_err(|e| at(format!("not JSON: {e}")))?;
        let grammar = compile(&value).map_err(at)?;
        let prefix = format!("%json{}.", self.schemas.len() + 1);
        let id = self
            .builder
            .embed(&grammar, &prefix)
            .map_err(grammar_error)?;
        self.schemas.insert(schema.to_string(), id);
        Ok(id)
    }

    /// One token: the terminal, after any ignored text.
    fn token(&self, hir: Hir) -> Expr {
        match &self.ignored {
            Some(ignored) => Expr::seq(vec![Expr::from_hir(ignored.clone()), Expr::from_hir(hir)]),
            None => Expr::from_hir(hir),
        }
    }

    fn anonymous(&mut self, node: &Node, offset: usize) -> Result<Expr, LarkError> {
        let hir = self.terminals.node(node, "in a rule")?;
        check_width(&hir, &node.key(), self.text, offset)?;
        Ok(self.token(hir))
    }

    fn expr(&mut self, node: &Node) -> Result<Expr, LarkError> {
        Ok(match node {
            Node::Literal { offset, .. } | Node::Regex { offset, .. } => {
                self.anonymous(node, *offset)?
            }
            Node::Range { .. } => self.anonymous(node, 0)?,
            Node::Name { name, offset } if is_terminal_name(name) => {
                if let Some(&id) = self.terminal_rules.get(name) {
                    return Ok(Expr::rule(id));
                }
                let hir = self.terminals.hir(name, *offset)?;
                check_width(&hir, name, self.text, *offset)?;
                let body = self.token(hir);
                let id = self.builder.rule_id(name);
                self.builder.define(id, body).map_err(grammar_error)?;
                self.terminal_rules.insert(name.clone(), id);
                Expr::rule(id)
            }
            Node::Name { name, offset } => match self.rules.get(name) {
                Some(&id) => Expr::rule(id),
                None => {
                    let what = if self.templates.contains_key(name) {
                        "rule (it is a template: give its arguments)"
                    } else {
                        "rule"
                    };
                    return Err(LarkError::at(
                        ErrorKind::Undefined {
                            what,
                            name: name.clone(),
                        },
                        self.text,
                        *offset,
                    ));
                }
            },
            Node::Template { name, args, offset } => {
                let Some(def) = self.templates.get(name).copied() else {
                    return Err(LarkError::at(
                        ErrorKind::Undefined {
                            what: "template",
                            name: name.clone(),
                        },
                        self.text,
                        *offset,
                    ));
                };
                if def.params.len() != args.len() {
                    return Err(LarkError::at(
                        ErrorKind::TemplateArity {
                            name: name.clone(),
                            expected: def.params.len(),
                            found: args.len(),
                        },
                        self.text,
                        *offset,
                    ));
                }
                let key = node.key();
                if let Some(&id) = self.instances.get(&key) {
                    return Ok(Expr::rule(id));
                }
                if self.instances.len() >= MAX_INSTANCES || key.len() > MAX_INSTANCE_KEY {
                    return Err(LarkError::at(
                        ErrorKind::TooManyInstances(MAX_INSTANCES),
                        self.text,
                        *offset,
                    ));
                }
                let id = self.builder.rule_id(&key);
                self.instances.insert(key, id);
                self.pending
                    .push((id, def.body.substitute(&def.params, args)));
                Expr::rule(id)
            }
            Node::Json { schema, offset } => {
                let rule = self.json_rule(schema, *offset)?;
                match &self.ignored {
                    Some(ignored) => {
                        Expr::seq(vec![Expr::from_hir(ignored.clone()), Expr::rule(rule)])
                    }
                    None => Expr::rule(rule),
                }
            }
            Node::Seq(parts) => Expr::seq(
                parts
                    .iter()
                    .map(|p| self.expr(p))
                    .collect::<Result<_, _>>()?,
            ),
            Node::Alt(parts) => Expr::alt(
                parts
                    .iter()
                    .map(|p| self.expr(p))
                    .collect::<Result<_, _>>()?,
            ),
            Node::Repeat { node, min, max } => self.expr(node)?.repeat(*min, *max),
        })
    }
}
