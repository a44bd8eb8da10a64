//! The Earley parser over lexemes, with hash-consed rows.
//!
//! A row is the Earley set at a lexeme boundary. Items point at earlier rows by id, and rows are
//! interned by content, so equal ids mean equal parse futures: a row id is a finite name for an
//! entire parse stack, which is what lets masks be cached per state.
//!
//! Nullable rules are handled as in Aycock and Horspool, "Practical Earley Parsing" (2002): a
//! prediction of a nullable nonterminal also advances over it at once.

use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use crate::error::MatchError;
use crate::grammar::{Cfg, Sym};

/// Index of an interned row.
pub(crate) type RowId = u32;

/// Origin marker: the item was predicted in the row that holds it.
const SELF: u32 = u32::MAX;
/// Symbol code of the end of a production.
const END: u32 = u32::MAX;
/// Symbol codes with this bit are terminals.
const TERMINAL: u32 = 1 << 31;

/// An Earley item: a position in the flattened productions and the row it started in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Item {
    pos: u32,
    origin: u32,
}

/// The flattened grammar: every production's symbols, each followed by `END`.
struct Tables {
    syms: Vec<u32>,
    /// Left-hand side of the production each position belongs to.
    lhs: Vec<u32>,
    /// First position of every production of each nonterminal.
    productions: Vec<Vec<u32>>,
    nullable: Vec<bool>,
    /// Terminals whose language contains the empty string: items step over them at once, and
    /// the lexer only ever scans non-empty lexemes.
    nullable_t: Vec<bool>,
    /// Position of `<start> -> S •`.
    final_pos: u32,
    start_pos: u32,
}

/// An interned Earley set.
pub(crate) struct Row {
    items: Box<[Item]>,
    /// Terminals some item expects next, sorted.
    expected: Box<[u32]>,
    /// Items waiting for each nonterminal (indices into `items`).
    waiting_nt: FxHashMap<u32, SmallVec<[u32; 2]>>,
    /// Items waiting for each terminal (indices into `items`).
    waiting_t: FxHashMap<u32, SmallVec<[u32; 2]>>,
    /// Whether the start symbol is complete here.
    accepting: bool,
}

impl Row {
    pub(crate) fn expected(&self) -> &[u32] {
        &self.expected
    }

    pub(crate) fn accepting(&self) -> bool {
        self.accepting
    }
}

/// All rows built so far for one grammar.
pub(crate) struct Parser {
    tables: Tables,
    rows: Vec<Row>,
    ids: FxHashMap<Box<[Item]>, RowId>,
    scans: FxHashMap<SmallVec<[(RowId, u32); 2]>, RowId>,
    max_rows: usize,
    max_items: usize,
}

impl Parser {
    pub(crate) fn new(cfg: &Cfg, max_rows: usize, max_items: usize) -> Parser {
        let n = cfg.nonterminals.len();
        let mut syms = Vec::new();
        let mut lhs = Vec::new();
        let mut productions = vec![Vec::new(); n];
        let mut start_pos = 0;
        for (l, rhs) in &cfg.productions {
            let first = syms.len() as u32;
            productions[*l as usize].push(first);
            if *l == cfg.start {
                start_pos = first;
            }
            for s in rhs {
                syms.push(match s {
                    Sym::T(t) => TERMINAL | t,
                    Sym::N(n) => *n,
                });
                lhs.push(*l);
            }
            syms.push(END);
            lhs.push(*l);
        }
        let nullable_t: Vec<bool> = cfg
            .terminals
            .iter()
            .map(|h| h.properties().minimum_len() == Some(0))
            .collect();
        let nullable = nullable_nonterminals(cfg, &nullable_t);
        let tables = Tables {
            syms,
            lhs,
            productions,
            nullable,
            nullable_t,
            final_pos: start_pos + 1,
            start_pos,
        };
        Parser {
            tables,
            rows: Vec::new(),
            ids: FxHashMap::default(),
            scans: FxHashMap::default(),
            max_rows,
            max_items,
        }
    }

    pub(crate) fn row(&self, id: RowId) -> &Row {
        &self.rows[id as usize]
    }

    pub(crate) fn row_count(&self) -> usize {
        self.rows.len()
    }

    /// The row before any input.
    pub(crate) fn initial(&mut self) -> Result<RowId, MatchError> {
        let start = Item {
            pos: self.tables.start_pos,
            origin: SELF,
        };
        self.build(vec![start])
    }

    /// The row after lexemes end at the same position: for each `(row, terminals)`, the items
    /// of `row` waiting for one of `terminals` step over it.
    pub(crate) fn scan(&mut self, completions: &[(RowId, &[u32])]) -> Result<RowId, MatchError> {
        let key: SmallVec<[(RowId, u32); 2]> = completions
            .iter()
            .flat_map(|&(r, ts)| ts.iter().map(move |&t| (r, t)))
            .collect();
        if let Some(&id) = self.scans.get(&key) {
            return Ok(id);
        }
        let mut kernel = Vec::new();
        for &(r, t) in &key {
            let row = &self.rows[r as usize];
            if let Some(waiting) = row.waiting_t.get(&t) {
                for &i in waiting {
                    let item = row.items[i as usize];
                    let origin = if item.origin == SELF { r } else { item.origin };
                    kernel.push(Item {
                        pos: item.pos + 1,
                        origin,
                    });
                }
            }
        }
        let id = self.build(kernel)?;
        self.scans.insert(key, id);
        Ok(id)
    }

    /// Closes `kernel` under prediction and completion, then interns the row.
    fn build(&mut self, kernel: Vec<Item>) -> Result<RowId, MatchError> {
        let t = &self.tables;
        let mut items: Vec<Item> = Vec::with_capacity(kernel.len() * 4);
        let mut seen: FxHashSet<Item> = FxHashSet::default();
        let mut waiting_here: FxHashMap<u32, SmallVec<[Item; 2]>> = FxHashMap::default();
        let mut work = kernel;
        while let Some(item) = work.pop() {
            if !seen.insert(item) {
                continue;
            }
            if items.len() >= self.max_items {
                return Err(MatchError::LimitExceeded {
                    what: "Earley items in one row",
                    limit: self.max_items,
                });
            }
            items.push(item);
            let sym = t.syms[item.pos as usize];
            if sym == END {
                let done = t.lhs[item.pos as usize];
                if item.origin == SELF {
                    if let Some(waiting) = waiting_here.get(&done) {
                        work.extend(waiting.iter().map(|w| Item {
                            pos: w.pos + 1,
                            origin: w.origin,
                        }));
                    }
                } else {
                    let origin = &self.rows[item.origin as usize];
                    if let Some(waiting) = origin.waiting_nt.get(&done) {
                        for &i in waiting {
                            let w = origin.items[i as usize];
                            let o = if w.origin == SELF {
                                item.origin
                            } else {
                                w.origin
                            };
                            work.push(Item {
                                pos: w.pos + 1,
                                origin: o,
                            });
                        }
                    }
                }
            } else if sym & TERMINAL != 0 {
                if t.nullable_t[(sym & !TERMINAL) as usize] {
                    work.push(Item {
                        pos: item.pos + 1,
                        origin: item.origin,
                    });
                }
            } else {
                waiting_here.entry(sym).or_default().push(item);
                for &p in &t.productions[sym as usize] {
                    work.push(Item {
                        pos: p,
                        origin: SELF,
                    });
                }
                if t.nullable[sym as usize] {
                    work.push(Item {
                        pos: item.pos + 1,
                        origin: item.origin,
                    });
                }
            }
        }
        items.sort_unstable();
        if let Some(&id) = self.ids.get(items.as_slice()) {
            return Ok(id);
        }
        if self.rows.len() >= self.max_rows {
            return Err(MatchError::LimitExceeded {
                what: "parser rows",
                limit: self.max_rows,
            });
        }
        let mut waiting_nt: FxHashMap<u32, SmallVec<[u32; 2]>> = FxHashMap::default();
        let mut waiting_t: FxHashMap<u32, SmallVec<[u32; 2]>> = FxHashMap::default();
        let mut accepting = false;
        for (i, item) in items.iter().enumerate() {
            let sym = t.syms[item.pos as usize];
            if sym == END {
                accepting |= item.pos == t.final_pos;
            } else if sym & TERMINAL != 0 {
                waiting_t.entry(sym & !TERMINAL).or_default().push(i as u32);
            } else {
                waiting_nt.entry(sym).or_default().push(i as u32);
            }
        }
        let mut expected: Vec<u32> = waiting_t.keys().copied().collect();
        expected.sort_unstable();
        let id = self.rows.len() as RowId;
        let items: Box<[Item]> = items.into();
        self.ids.insert(items.clone(), id);
        self.rows.push(Row {
            items,
            expected: expected.into(),
            waiting_nt,
            waiting_t,
            accepting,
        });
        Ok(id)
    }
}

fn nullable_nonterminals(cfg: &Cfg, nullable_t: &[bool]) -> Vec<bool> {
    let mut nullable = vec![false; cfg.nonterminals.len()];
    loop {
        let mut changed = false;
        for (lhs, rhs) in &cfg.productions {
            let is_nullable = |s: &Sym| match s {
                Sym::N(n) => nullable[*n as usize],
                Sym::T(t) => nullable_t[*t as usize],
            };
            if !nullable[*lhs as usize] && rhs.iter().all(is_nullable) {
                nullable[*lhs as usize] = true;
                changed = true;
            }
        }
        if !changed {
            return nullable;
        }
    }
}
