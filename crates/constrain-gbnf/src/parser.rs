//! GBNF text to syntax tree.
//!
//! The accepted language follows llama.cpp's parser (`src/llama-grammar.cpp`):
//!
//! ```text
//! grammar     ::= space* (rule space*)*            (space here includes line breaks)
//! rule        ::= name " "* "::=" space* alternates (line break | end of input)
//! alternates  ::= sequence ("|" space* sequence)*
//! sequence    ::= (item repetition*)*
//! item        ::= "\"" char* "\"" | "[" "^"? (char ("-" char)?)+ "]" | "." | name
//!               | "(" space* alternates ")" | "<[" digits "]>" | "!<[" digits "]>"
//! repetition  ::= "*" | "+" | "?" | "{" m "}" | "{" m "," "}" | "{" m "," n "}" | "{" "," n "}"
//! ```
//!
//! Spaces, tabs and `#` comments may follow every item and operator. A line break ends the rule
//! unless it is inside parentheses or follows `::=` or `|`.

use std::collections::HashMap;

use crate::error::{ErrorKind, GbnfError, Location};
use crate::lexical::{
    is_name_byte, read_char, show_at, show_code_point, skip_space, span_while, CharError,
};
use crate::repetition::RuleCounter;
use crate::syntax::{Node, RuleDef};

/// Levels of groups and stacked repetitions allowed in one rule. Deeper grammars are refused
/// instead of risking the stack, here and in every later pass over the tree.
pub(crate) const MAX_NESTING: usize = 64;

/// Parses `text` into its rule definitions (no checks across rules yet).
pub(crate) fn parse_rules(
    text: &str,
    special_tokens: &HashMap<String, u32>,
) -> Result<Vec<RuleDef>, GbnfError> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        special_tokens,
        counter: RuleCounter::default(),
    };
    let mut rules = Vec::new();
    parser.pos = skip_space(parser.bytes, 0, true);
    while parser.pos < parser.bytes.len() {
        rules.push(parser.rule()?);
    }
    Ok(rules)
}

/// A parsed item of a sequence, with what the checks need to know about it.
struct Item {
    node: Node,
    /// Levels of groups and repetitions inside (0 for a plain item).
    depth: usize,
    /// llama.cpp's rule weight, for the repetition limits.
    rules: u64,
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    special_tokens: &'a HashMap<String, u32>,
    counter: RuleCounter,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn error(&self, kind: ErrorKind, offset: usize) -> GbnfError {
        GbnfError::at(kind, Location::of(self.text, offset))
    }

    fn skip_space(&mut self, newlines: bool) {
        self.pos = skip_space(self.bytes, self.pos, newlines);
    }

    fn rule(&mut self) -> Result<RuleDef, GbnfError> {
        let start = self.pos;
        let end = span_while(self.bytes, start, is_name_byte);
        if end == start {
            let found = show_at(self.text, start);
            let hint = match self.peek() {
                Some(b'|') => ": a line break ends a rule; end the previous line with '|' instead",
                _ => "",
            };
            return Err(self.error(ErrorKind::ExpectedRuleName { found, hint }, start));
        }
        let name = self.text[start..end].to_string();
        self.pos = end;
        self.skip_space(false);
        if !self.bytes[self.pos..].starts_with(b"::=") {
            let kind = ErrorKind::ExpectedDefinition { rule: name };
            return Err(self.error(kind, self.pos));
        }
        self.pos += 3;
        self.skip_space(true);
        let (body, _) = self.alternates(&name, false, 0)?;
        // The rule ends here: at a line break (skipped with the space after it) or the end.
        match self.peek() {
            None | Some(b'\n' | b'\r') => {}
            Some(b) => {
                let hint = match b {
                    b')' => ": no group is open",
                    b':' => ": a new rule must start on a new line",
                    _ => "",
                };
                let kind = ErrorKind::Unexpected {
                    found: show_at(self.text, self.pos),
                    rule: name,
                    hint,
                };
                return Err(self.error(kind, self.pos));
            }
        }
        self.skip_space(true);
        Ok(RuleDef {
            name,
            offset: start,
            body,
        })
    }

    /// `sequence ("|" sequence)*`; returns the node and its depth.
    fn alternates(
        &mut self,
        rule: &str,
        nested: bool,
        groups: usize,
    ) -> Result<(Node, usize), GbnfError> {
        let mut alternatives = Vec::new();
        let mut depth = 0;
        loop {
            let (node, d) = self.sequence(rule, nested, groups)?;
            alternatives.push(node);
            depth = depth.max(d);
            if self.peek() != Some(b'|') {
                break;
            }
            self.pos += 1;
            self.skip_space(true);
        }
        Ok((Node::alt(alternatives), depth))
    }

    fn sequence(
        &mut self,
        rule: &str,
        nested: bool,
        groups: usize,
    ) -> Result<(Node, usize), GbnfError> {
        let mut items: Vec<Item> = Vec::new();
        while let Some(b) = self.peek() {
            let start = self.pos;
            match b {
                b'"' => {
                    let node = self.literal()?;
                    items.push(Item {
                        node,
                        depth: 0,
                        rules: 1,
                    });
                }
                b'[' => {
                    let node = self.class()?;
                    items.push(Item {
                        node,
                        depth: 0,
                        rules: 1,
                    });
                }
                b'.' => {
                    self.pos += 1;
                    items.push(Item {
                        node: Node::AnyChar,
                        depth: 0,
                        rules: 1,
                    });
                }
                b'<' | b'!' => {
                    let node = self.token()?;
                    items.push(Item {
                        node,
                        depth: 0,
                        rules: 1,
                    });
                }
                b'(' => {
                    if groups + 1 > MAX_NESTING {
                        return Err(self.error(ErrorKind::TooDeep { limit: MAX_NESTING }, start));
                    }
                    self.pos += 1;
                    self.skip_space(true);
                    let mark = self.counter.mark();
                    self.counter.add_group();
                    let (node, depth) = self.alternates(rule, true, groups + 1)?;
                    if self.peek() != Some(b')') {
                        let kind = match self.peek() {
                            None => ErrorKind::UnclosedGroup {
                                opened: Location::of(self.text, start),
                            },
                            Some(_) => ErrorKind::Unexpected {
                                found: show_at(self.text, self.pos),
                                rule: rule.to_string(),
                                hint: ": expected ')'",
                            },
                        };
                        return Err(self.error(kind, self.pos));
                    }
                    self.pos += 1;
                    if depth + 1 > MAX_NESTING {
                        return Err(self.error(ErrorKind::TooDeep { limit: MAX_NESTING }, start));
                    }
                    let rules = self.counter.group_weight(mark);
                    items.push(Item {
                        node,
                        depth: depth + 1,
                        rules,
                    });
                }
                b'*' | b'+' | b'?' | b'{' => {
                    let operand = match items.pop() {
                        Some(item) if !is_empty_literal(&item.node) => item,
                        _ => {
                            let kind = ErrorKind::NothingToRepeat {
                                operator: b as char,
                            };
                            return Err(self.error(kind, start));
                        }
                    };
                    let (min, max) = self.repetition_bounds(nested)?;
                    let rules = self
                        .counter
                        .repeat(operand.rules, min, max)
                        .map_err(|k| self.error(k, start))?;
                    let depth = operand.depth + 1;
                    if depth > MAX_NESTING {
                        return Err(self.error(ErrorKind::TooDeep { limit: MAX_NESTING }, start));
                    }
                    let node = Node::Repeat {
                        node: Box::new(operand.node),
                        min,
                        max,
                    };
                    items.push(Item { node, depth, rules });
                }
                _ if is_name_byte(b) => {
                    let end = span_while(self.bytes, start, is_name_byte);
                    let name = self.text[start..end].to_string();
                    self.pos = end;
                    items.push(Item {
                        node: Node::Ref {
                            name,
                            offset: start,
                        },
                        depth: 0,
                        rules: 1,
                    });
                }
                _ => break,
            }
            self.skip_space(nested);
        }
        let depth = items.iter().map(|i| i.depth).max().unwrap_or(0);
        let parts = items.into_iter().map(|i| i.node).collect();
        Ok((Node::seq(parts), depth))
    }

    /// Reads one possibly escaped character at the current position.
    fn char(&mut self) -> Result<u32, GbnfError> {
        let start = self.pos;
        let (c, end) = read_char(self.text, start).map_err(|e| {
            let kind = match e {
                CharError::UnknownEscape(c) => ErrorKind::UnknownEscape(c),
                CharError::BadHex { escape, digits } => ErrorKind::BadHexEscape { escape, digits },
                CharError::EndOfInput => ErrorKind::UnterminatedLiteral,
            };
            self.error(kind, start)
        })?;
        self.pos = end;
        Ok(c)
    }

    fn scalar(&self, c: u32, offset: usize) -> Result<char, GbnfError> {
        char::from_u32(c).ok_or_else(|| self.error(ErrorKind::InvalidCodePoint(c), offset))
    }

    fn literal(&mut self) -> Result<Node, GbnfError> {
        let open = self.pos;
        self.pos += 1;
        let mut text = String::new();
        loop {
            match self.peek() {
                None => return Err(self.error(ErrorKind::UnterminatedLiteral, open)),
                Some(b'"') => break,
                Some(_) => {
                    let at = self.pos;
                    let c = self.char().map_err(|e| match e.kind() {
                        ErrorKind::UnterminatedLiteral => {
                            self.error(ErrorKind::UnterminatedLiteral, open)
                        }
                        _ => e,
                    })?;
                    text.push(self.scalar(c, at)?);
                }
            }
        }
        self.pos += 1;
        Ok(Node::Literal(text))
    }

    fn class(&mut self) -> Result<Node, GbnfError> {
        let open = self.pos;
        self.pos += 1;
        let negated = self.peek() == Some(b'^');
        if negated {
            self.pos += 1;
        }
        let mut ranges = Vec::new();
        loop {
            match self.peek() {
                None => return Err(self.error(ErrorKind::UnterminatedClass, open)),
                Some(b']') => break,
                Some(_) => {}
            }
            let at = self.pos;
            let from = self.char().map_err(|e| unterminated_class(e, self, open))?;
            let is_range = self.peek() == Some(b'-')
                && !matches!(self.bytes.get(self.pos + 1), Some(b']') | None);
            if !is_range {
                let c = self.scalar(from, at)?;
                ranges.push((c, c));
                continue;
            }
            self.pos += 1;
            let to_at = self.pos;
            let to = self.char().map_err(|e| unterminated_class(e, self, open))?;
            if from > to {
                let kind = ErrorKind::ReversedRange {
                    from: show_code_point(from),
                    to: show_code_point(to),
                };
                return Err(self.error(kind, at));
            }
            if to > char::MAX as u32 {
                return Err(self.error(ErrorKind::InvalidCodePoint(to), to_at));
            }
            push_scalar_ranges(&mut ranges, from, to);
        }
        self.pos += 1;
        if self.pos == open + 2 + usize::from(negated) {
            return Err(self.error(ErrorKind::EmptyClass, open));
        }
        Ok(Node::Class { ranges, negated })
    }

    /// `<[id]>`, `!<[id]>`, or a declared `<name>` / `!<name>`.
    fn token(&mut self) -> Result<Node, GbnfError> {
        let start = self.pos;
        let negated = self.peek() == Some(b'!');
        if negated {
            self.pos += 1;
        }
        if self.peek() != Some(b'<') {
            return Err(self.error(ErrorKind::BadToken("'!' must be followed by '<'"), start));
        }
        self.pos += 1;
        let id = if self.peek() == Some(b'[') {
            let digits = self.pos + 1;
            let end = span_while(self.bytes, digits, |b| b.is_ascii_digit());
            if end == digits {
                return Err(self.error(
                    ErrorKind::BadToken("expected a token id after '<['"),
                    digits,
                ));
            }
            let id = self.text[digits..end].parse::<u32>().map_err(|_| {
                self.error(
                    ErrorKind::BadToken("token id does not fit in 32 bits"),
                    digits,
                )
            })?;
            if !self.bytes[end..].starts_with(b"]>") {
                return Err(
                    self.error(ErrorKind::BadToken("expected ']>' after the token id"), end)
                );
            }
            self.pos = end + 2;
            id
        } else {
            let name_start = self.pos;
            let end = span_while(self.bytes, name_start, |b| {
                !matches!(b, b'>' | b'\n' | b'\r')
            });
            if self.bytes.get(end) != Some(&b'>') {
                return Err(self.error(ErrorKind::BadToken("expected '>' to close the token"), end));
            }
            let name = &self.text[name_start..end];
            let full = format!("<{name}>");
            let id = self.special_tokens.get(&full).copied();
            self.pos = end + 1;
            id.ok_or_else(|| self.error(ErrorKind::UnknownTokenName(name.to_string()), start))?
        };
        Ok(Node::Token { id, negated })
    }

    /// Reads `*`, `+`, `?` or `{…}` and returns the bounds.
    fn repetition_bounds(&mut self, nested: bool) -> Result<(u32, Option<u32>), GbnfError> {
        let op = self.peek();
        self.pos += 1;
        match op {
            Some(b'*') => return Ok((0, None)),
            Some(b'+') => return Ok((1, None)),
            Some(b'?') => return Ok((0, Some(1))),
            _ => {}
        }
        let open = self.pos - 1;
        let inline_space = |p: &mut Self| p.skip_space(nested);
        inline_space(self);
        let min = self.count()?;
        inline_space(self);
        let (min, max) = match self.peek() {
            Some(b'}') => match min {
                Some(m) => (m, Some(m)),
                None => {
                    return Err(
                        self.error(ErrorKind::BadRepetition("expected a number in '{}'"), open)
                    )
                }
            },
            Some(b',') => {
                self.pos += 1;
                inline_space(self);
                let max = self.count()?;
                inline_space(self);
                if self.peek() != Some(b'}') {
                    return Err(self.error(ErrorKind::BadRepetition("expected '}'"), self.pos));
                }
                if min.is_none() && max.is_none() {
                    return Err(self.error(
                        ErrorKind::BadRepetition("'{,}' gives no bound; use '*'"),
                        open,
                    ));
                }
                (min.unwrap_or(0), max)
            }
            _ => {
                return Err(self.error(
                    ErrorKind::BadRepetition("expected ',' or '}' after the count"),
                    self.pos,
                ))
            }
        };
        self.pos += 1;
        if let Some(max) = max.filter(|&max| max < min) {
            return Err(self.error(ErrorKind::RepetitionBoundsReversed { min, max }, open));
        }
        Ok((min, max))
    }

    /// An optional decimal count.
    fn count(&mut self) -> Result<Option<u32>, GbnfError> {
        let start = self.pos;
        let end = span_while(self.bytes, start, |b| b.is_ascii_digit());
        if end == start {
            return Ok(None);
        }
        let digits = &self.text[start..end];
        let n = digits.parse::<u32>().map_err(|_| {
            self.error(
                ErrorKind::RepetitionCountOverflow(digits.to_string()),
                start,
            )
        })?;
        self.pos = end;
        Ok(Some(n))
    }
}

fn is_empty_literal(node: &Node) -> bool {
    matches!(node, Node::Literal(s) if s.is_empty())
}

/// Inside a class, running out of text means the class is unterminated.
fn unterminated_class(e: GbnfError, p: &Parser<'_>, open: usize) -> GbnfError {
    match e.kind() {
        ErrorKind::UnterminatedLiteral => p.error(ErrorKind::UnterminatedClass, open),
        _ => e,
    }
}

/// Adds the Unicode scalar values of `from..=to` (which may span surrogates, never matched).
fn push_scalar_ranges(ranges: &mut Vec<(char, char)>, from: u32, to: u32) {
    const SURROGATES: (u32, u32) = (0xD800, 0xDFFF);
    let pieces = [
        (from, to.min(SURROGATES.0 - 1)),
        (from.max(SURROGATES.1 + 1), to),
    ];
    for (a, b) in pieces {
        if a <= b {
            if let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b)) {
                ranges.push((a, b));
            }
        }
    }
}
