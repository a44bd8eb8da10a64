//! Whitespace, separators and indentation between JSON tokens.

use constrain_engine::Expr;

use crate::options::{Options, Separators, Whitespace};

/// Deepest nesting the indented layout spells out; deeper values cannot be written in it.
pub(crate) const MAX_INDENT_DEPTH: u32 = 48;

#[derive(Clone, Debug)]
pub(crate) struct Layout {
    whitespace: Whitespace,
    separators: Option<Separators>,
}

impl Layout {
    pub(crate) fn new(options: &Options) -> Layout {
        Layout {
            whitespace: options.whitespace.clone(),
            separators: options.separators.clone(),
        }
    }

    fn indent(&self) -> Option<u32> {
        match self.whitespace {
            Whitespace::Indented(n) => Some(n),
            _ => None,
        }
    }

    /// The depth that matters for the layout (only indentation depends on it).
    pub(crate) fn depth_key(&self, depth: u32) -> u32 {
        if self.indent().is_some() {
            depth.min(MAX_INDENT_DEPTH + 1)
        } else {
            0
        }
    }

    /// Whether values at this depth can no longer be written.
    pub(crate) fn too_deep(&self, depth: u32) -> bool {
        self.indent().is_some() && depth > MAX_INDENT_DEPTH
    }

    /// Optional whitespace between two tokens.
    pub(crate) fn gap(&self) -> Expr {
        match self.whitespace {
            Whitespace::Bounded { max } => ws_class().repeat(0, Some(max)),
            Whitespace::Unbounded => ws_class().star(),
            Whitespace::Compact | Whitespace::Indented(_) => Expr::empty(),
        }
    }

    /// Whitespace before and after the whole document.
    pub(crate) fn outer_gap(&self) -> Expr {
        self.gap()
    }

    fn newline(&self, depth: u32) -> Expr {
        let n = self.indent().unwrap_or(0) as usize * depth as usize;
        Expr::literal(&format!("\n{}", " ".repeat(n)))
    }

    /// Between a key and its value.
    pub(crate) fn key_sep(&self) -> Expr {
        if let Some(s) = &self.separators {
            return Expr::literal(&s.key);
        }
        match self.whitespace {
            Whitespace::Indented(_) => Expr::literal(": "),
            _ => Expr::seq(vec![self.gap(), Expr::literal(":"), self.gap()]),
        }
    }

    /// Between two members or elements of a container at `depth`.
    pub(crate) fn item_sep(&self, depth: u32) -> Expr {
        match (&self.separators, &self.whitespace) {
            (Some(s), Whitespace::Indented(_)) => Expr::seq(vec![
                Expr::literal(s.item.trim_end()),
                self.newline(depth + 1),
            ]),
            (None, Whitespace::Indented(_)) => {
                Expr::seq(vec![Expr::literal(","), self.newline(depth + 1)])
            }
            (Some(s), _) => Expr::literal(&s.item),
            (None, _) => Expr::seq(vec![self.gap(), Expr::literal(","), self.gap()]),
        }
    }

    /// A container at `depth`: `open`, the (non-empty, already separated) `body`, `close`; or
    /// the empty container when `allow_empty`.
    pub(crate) fn container(
        &self,
        depth: u32,
        open: char,
        close: char,
        body: Expr,
        allow_empty: bool,
    ) -> Expr {
        let (o, c) = (
            Expr::literal(&open.to_string()),
            Expr::literal(&close.to_string()),
        );
        let (first, last) = match self.whitespace {
            Whitespace::Indented(_) => (self.newline(depth + 1), self.newline(depth)),
            _ => (self.gap(), self.gap()),
        };
        let full = Expr::seq(vec![o.clone(), first, body, last, c.clone()]);
        if !allow_empty {
            return full;
        }
        let empty = match self.whitespace {
            Whitespace::Indented(_) => Expr::seq(vec![o, c]),
            _ => Expr::seq(vec![o, self.gap(), c]),
        };
        Expr::alt(vec![empty, full])
    }

    /// An object of any number of `member`s (`first` and `member` may differ only in whether
    /// they are the first), or an array of `first` then `element`s.
    pub(crate) fn object(&self, depth: u32, members: Vec<(Expr, Expr)>, allow_empty: bool) -> Expr {
        let (first, rest): (Vec<Expr>, Vec<Expr>) = members.into_iter().unzip();
        let first = Expr::alt(first);
        let rest = Expr::alt(rest);
        let body = Expr::seq(vec![
            first,
            Expr::seq(vec![self.item_sep(depth), rest]).star(),
        ]);
        self.container(depth, '{', '}', body, allow_empty)
    }

    /// An array of any number of elements.
    pub(crate) fn array(&self, depth: u32, first: Expr, element: Expr, allow_empty: bool) -> Expr {
        let body = Expr::seq(vec![
            first,
            Expr::seq(vec![self.item_sep(depth), element]).star(),
        ]);
        self.container(depth, '[', ']', body, allow_empty)
    }
}

/// One JSON whitespace character.
fn ws_class() -> Expr {
    Expr::byte_class(&[(b' ', b' '), (b'\t', b'\t'), (b'\n', b'\n'), (b'\r', b'\r')])
}
