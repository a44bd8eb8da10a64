//! Grammar text → [`Statements`]: definitions, `%ignore` and `%import`.

use crate::error::{ErrorKind, LarkError};
use crate::lexical::{tokenize, Tok};
use crate::literal;
use crate::syntax::{Definition, Import, Node, Statements};

/// Groups, repetitions and template arguments nested deeper than this are an error, so
/// parsing never recurses without bound.
pub(crate) const MAX_DEPTH: usize = 64;
/// The largest count `~ n` or `~ n..m` may name.
pub(crate) const REPETITION_LIMIT: u64 = 2000;

struct Parser<'a> {
    text: &'a str,
    toks: Vec<(Tok, usize)>,
    pos: usize,
    depth: usize,
}

/// Parses the statements of `text`.
pub(crate) fn parse(text: &str) -> Result<Statements, LarkError> {
    let mut p = Parser {
        text,
        toks: tokenize(text)?,
        pos: 0,
        depth: 0,
    };
    let mut out = Statements::default();
    loop {
        let (tok, offset) = p.peek().clone();
        match tok {
            Tok::End => return Ok(out),
            Tok::Newline => p.pos += 1,
            Tok::Directive(d) => {
                p.pos += 1;
                p.directive(&d, offset, &mut out)?;
            }
            Tok::Modifier(_) | Tok::Rule(_) | Tok::Terminal(_) => {
                let def = p.definition()?;
                out.definitions.push(def);
            }
            _ => return Err(p.unexpected("a rule, a terminal or a %directive")),
        }
    }
}

impl Parser<'_> {
    fn peek(&self) -> &(Tok, usize) {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }

    fn next(&mut self) -> (Tok, usize) {
        let t = self.peek().clone();
        self.pos += 1;
        t
    }

    fn error(&self, kind: ErrorKind, offset: usize) -> LarkError {
        LarkError::at(kind, self.text, offset)
    }

    fn unexpected(&self, expected: &'static str) -> LarkError {
        let (tok, offset) = self.peek();
        self.error(
            ErrorKind::Unexpected {
                found: tok.describe(),
                expected,
            },
            *offset,
        )
    }

    fn expect(&mut self, tok: Tok, expected: &'static str) -> Result<(), LarkError> {
        if self.peek().0 == tok {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    /// The end of a statement: a line break or the end of the text.
    fn end_of_statement(&mut self) -> Result<(), LarkError> {
        match self.peek().0 {
            Tok::Newline => {
                self.pos += 1;
                Ok(())
            }
            Tok::End => Ok(()),
            _ => Err(self.unexpected("the end of the line")),
        }
    }

    fn definition(&mut self) -> Result<Definition, LarkError> {
        if let Tok::Modifier(_) = self.peek().0 {
            // `?rule` inlines a rule in the tree and `!rule` keeps its tokens: the language
            // is the same.
            self.pos += 1;
        }
        let (tok, offset) = self.next();
        let name = match tok {
            Tok::Rule(n) | Tok::Terminal(n) => n,
            _ => {
                return Err(self.error(
                    ErrorKind::Unexpected {
                        found: tok.describe(),
                        expected: "a name",
                    },
                    offset,
                ))
            }
        };
        let terminal = matches!(tok_kind(&name), NameKind::Terminal);
        let mut params = Vec::new();
        if self.peek().0 == Tok::LBrace && !terminal {
            self.pos += 1;
            loop {
                match self.next() {
                    (Tok::Rule(p), _) => params.push(p),
                    _ => {
                        self.pos -= 1;
                        return Err(self.unexpected("a template parameter (a lowercase name)"));
                    }
                }
                match self.next().0 {
                    Tok::Comma => {}
                    Tok::RBrace => break,
                    _ => {
                        self.pos -= 1;
                        return Err(self.unexpected("',' or '}'"));
                    }
                }
            }
        }
        if self.peek().0 == Tok::Dot {
            // A priority, `.n`: it picks among parses (and, for terminals, among lexer
            // matches), which a recognizer does not do: the language is the same.
            self.pos += 1;
            match self.next().0 {
                Tok::Number(_) => {}
                _ => {
                    self.pos -= 1;
                    return Err(self.unexpected("a priority number after '.'"));
                }
            }
        }
        self.expect(Tok::Colon, "':'")?;
        let body = self.expansions(terminal)?;
        self.end_of_statement()?;
        Ok(Definition {
            name,
            offset,
            params,
            body,
        })
    }

    fn directive(
        &mut self,
        name: &str,
        offset: usize,
        out: &mut Statements,
    ) -> Result<(), LarkError> {
        match name {
            "ignore" => {
                let body = self.expansions(true)?;
                self.end_of_statement()?;
                out.ignores.push((body, offset));
            }
            "import" => self.import(offset, out)?,
            "declare" => return Err(self.error(
                ErrorKind::Unsupported {
                    construct: "%declare".into(),
                    why:
                        "declared terminals come from a post-lexer, and nothing produces them here",
                },
                offset,
            )),
            "override" | "extend" => {
                return Err(self.error(
                    ErrorKind::Unsupported {
                        construct: format!("%{name}"),
                        why:
                            "only the common terminals are imported, so there is nothing to change",
                    },
                    offset,
                ))
            }
            _ => {
                return Err(self.error(
                    ErrorKind::Unsupported {
                        construct: format!("%{name}"),
                        why: "unknown directive",
                    },
                    offset,
                ))
            }
        }
        Ok(())
    }

    /// `%import a.b.NAME`, `%import a.b.NAME -> ALIAS`, `%import a.b (N1, N2)`.
    fn import(&mut self, offset: usize, out: &mut Statements) -> Result<(), LarkError> {
        let mut path = Vec::new();
        loop {
            match self.next() {
                (Tok::Rule(n) | Tok::Terminal(n), _) => path.push(n),
                (Tok::Dot, o) if path.is_empty() => {
                    return Err(self.error(ErrorKind::UnknownImport("a relative module".into()), o))
                }
                _ => {
                    self.pos -= 1;
                    return Err(self.unexpected("a module path"));
                }
            }
            if self.peek().0 != Tok::Dot {
                break;
            }
            self.pos += 1;
        }
        let mut names = Vec::new();
        if self.peek().0 == Tok::LPar {
            self.pos += 1;
            loop {
                match self.next() {
                    (Tok::Rule(n) | Tok::Terminal(n), o) => names.push((n.clone(), n, o)),
                    _ => {
                        self.pos -= 1;
                        return Err(self.unexpected("a name to import"));
                    }
                }
                match self.next().0 {
                    Tok::Comma => {}
                    Tok::RPar => break,
                    _ => {
                        self.pos -= 1;
                        return Err(self.unexpected("',' or ')'"));
                    }
                }
            }
        } else {
            if path.len() < 2 {
                return Err(self.error(ErrorKind::UnknownImport(path.join(".")), offset));
            }
            let name = path.pop().unwrap_or_default();
            let alias = if self.peek().0 == Tok::Arrow {
                self.pos += 1;
                match self.next() {
                    (Tok::Rule(n) | Tok::Terminal(n), _) => n,
                    _ => {
                        self.pos -= 1;
                        return Err(self.unexpected("a name after '->'"));
                    }
                }
            } else {
                name.clone()
            };
            names.push((name, alias, offset));
        }
        self.end_of_statement()?;
        if path != ["common"] {
            return Err(self.error(ErrorKind::UnknownImport(path.join(".")), offset));
        }
        for (name, alias, offset) in names {
            out.imports.push(Import {
                name,
                alias,
                offset,
            });
        }
        Ok(())
    }

    fn enter(&mut self) -> Result<(), LarkError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let offset = self.peek().1;
            return Err(self.error(ErrorKind::TooDeep { limit: MAX_DEPTH }, offset));
        }
        Ok(())
    }

    /// `alias ('|' alias)*`, where an alias is a sequence, maybe followed by `-> name`.
    fn expansions(&mut self, terminal: bool) -> Result<Node, LarkError> {
        self.enter()?;
        let mut alternatives = Vec::new();
        loop {
            let mut parts = Vec::new();
            while let Some(item) = self.expr(terminal)? {
                parts.push(item);
            }
            if self.peek().0 == Tok::Arrow {
                let at = self.peek().1;
                if terminal {
                    return Err(self.error(
                        ErrorKind::Unexpected {
                            found: "'->'".into(),
                            expected: "an expression (terminals have no aliases)",
                        },
                        at,
                    ));
                }
                // An alias names the tree node; the language is the same.
                self.pos += 1;
                match self.next().0 {
                    Tok::Rule(_) => {}
                    _ => {
                        self.pos -= 1;
                        return Err(self.unexpected("a rule name after '->'"));
                    }
                }
            }
            alternatives.push(Node::seq(parts));
            if self.peek().0 != Tok::Or {
                break;
            }
            self.pos += 1;
        }
        self.depth -= 1;
        Ok(Node::alt(alternatives))
    }

    /// An atom with its repetition, or `None` at what ends a sequence.
    fn expr(&mut self, terminal: bool) -> Result<Option<Node>, LarkError> {
        let Some(atom) = self.atom(terminal)? else {
            return Ok(None);
        };
        let (min, max) = match self.peek().0 {
            Tok::Op('*') => (0, None),
            Tok::Op('+') => (1, None),
            Tok::Op('?') => (0, Some(1)),
            Tok::Tilde => {
                self.pos += 1;
                let (min, at) = self.count()?;
                let max = if self.peek().0 == Tok::DotDot {
                    self.pos += 1;
                    self.count()?.0
                } else {
                    min
                };
                if max < min {
                    return Err(self.error(ErrorKind::RepetitionBoundsReversed { min, max }, at));
                }
                return Ok(Some(Node::Repeat {
                    node: Box::new(atom),
                    min,
                    max: Some(max),
                }));
            }
            _ => return Ok(Some(atom)),
        };
        self.pos += 1;
        Ok(Some(Node::Repeat {
            node: Box::new(atom),
            min,
            max,
        }))
    }

    /// A repetition count, checked against [`REPETITION_LIMIT`].
    fn count(&mut self) -> Result<(u32, usize), LarkError> {
        let (tok, at) = self.next();
        let Tok::Number(n) = tok else {
            self.pos -= 1;
            return Err(self.unexpected("a repetition count"));
        };
        let value: u64 = n.trim_start_matches('+').parse().map_err(|_| {
            self.error(
                ErrorKind::Unexpected {
                    found: format!("'{n}'"),
                    expected: "a repetition count (0 or more)",
                },
                at,
            )
        })?;
        if value > REPETITION_LIMIT {
            return Err(self.error(
                ErrorKind::TooManyRepetitions {
                    count: value,
                    limit: REPETITION_LIMIT,
                },
                at,
            ));
        }
        Ok((value as u32, at))
    }

    fn atom(&mut self, terminal: bool) -> Result<Option<Node>, LarkError> {
        let (tok, offset) = self.peek().clone();
        Ok(Some(match tok {
            Tok::LPar | Tok::LBra => {
                self.pos += 1;
                let inner = self.expansions(terminal)?;
                if tok == Tok::LPar {
                    self.expect(Tok::RPar, "')'")?;
                    inner
                } else {
                    self.expect(Tok::RBra, "']'")?;
                    Node::Repeat {
                        node: Box::new(inner),
                        min: 0,
                        max: Some(1),
                    }
                }
            }
            Tok::Str(raw) => {
                self.pos += 1;
                let (text, insensitive) =
                    literal::string(&raw).map_err(|k| self.error(k, offset))?;
                if self.peek().0 == Tok::DotDot {
                    self.pos += 1;
                    let (end, end_offset) = self.next();
                    let Tok::Str(end_raw) = end else {
                        self.pos -= 1;
                        return Err(self.unexpected("a string after '..'"));
                    };
                    let (end, _) =
                        literal::string(&end_raw).map_err(|k| self.error(k, end_offset))?;
                    let single = |s: &str| {
                        let mut c = s.chars();
                        c.next().filter(|_| c.next().is_none())
                    };
                    match (single(&text), single(&end)) {
                        (Some(from), Some(to)) if from <= to => Node::Range { from, to },
                        _ => {
                            return Err(self
                                .error(ErrorKind::BadRange(format!("{raw}..{end_raw}")), offset))
                        }
                    }
                } else {
                    Node::Literal {
                        text,
                        insensitive,
                        offset,
                    }
                }
            }
            Tok::Json(raw) => {
                self.pos += 1;
                if terminal {
                    return Err(self.error(
                        ErrorKind::Json(
                            "a JSON document is a rule's part, not a terminal's (a terminal is \
                             a regular language)"
                                .into(),
                        ),
                        offset,
                    ));
                }
                let schema: serde_json::Value = serde_json::from_str(&raw)
                    .map_err(|e| self.error(ErrorKind::Json(format!("not JSON: {e}")), offset))?;
                Node::Json {
                    schema: schema.to_string(),
                    offset,
                }
            }
            Tok::Regexp(raw) => {
                self.pos += 1;
                let (pattern, flags) = literal::regex(&raw).map_err(|k| self.error(k, offset))?;
                Node::Regex {
                    pattern,
                    flags,
                    offset,
                }
            }
            Tok::Rule(name) | Tok::Terminal(name) => {
                self.pos += 1;
                if self.peek().0 == Tok::LBrace {
                    self.pos += 1;
                    self.enter()?;
                    let mut args = Vec::new();
                    loop {
                        let Some(arg) = self.expr(terminal)? else {
                            return Err(self.unexpected("a template argument"));
                        };
                        args.push(arg);
                        match self.next().0 {
                            Tok::Comma => {}
                            Tok::RBrace => break,
                            _ => {
                                self.pos -= 1;
                                return Err(self.unexpected("',' or '}'"));
                            }
                        }
                    }
                    self.depth -= 1;
                    Node::Template { name, args, offset }
                } else {
                    Node::Name { name, offset }
                }
            }
            _ => return Ok(None),
        }))
    }
}

enum NameKind {
    Rule,
    Terminal,
}

fn tok_kind(name: &str) -> NameKind {
    if crate::syntax::is_terminal_name(name) {
        NameKind::Terminal
    } else {
        NameKind::Rule
    }
}
