//! The Earley parser over lexemes, with hash-consed rows.
//!
//! A row is the Earley set at a lexeme boundary. Items point at earlier rows by id, and rows are
//! interned by content, so equal ids mean equal parse futures: a row id is a finite name for an
//! entire parse stack, which is what lets masks be cached per state.
//!
//! Nullable rules are handled as in Aycock and Horspool, "Practical Earley Parsing" (2002): a
//! prediction of a nullable nonterminal also advances over it at once.
//!
//! Families (items in any order, [`Family`]) are expanded when first predicted: a nonterminal
//! per set of members used so far, created as a production of its predecessor needs it.

use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use crate::error::{Budget, MatchError};
use crate::grammar::{Cfg, Family, Sym};
use crate::interner::IdsByHash;

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
    families: Vec<FamilyInfo>,
    /// Family nonterminals whose productions are not built yet.
    unexpanded: FxHashMap<u32, FamilyState>,
    /// The nonterminal of every family state created so far.
    family_nts: FxHashMap<FamilyState, u32>,
    /// The family state of every family nonterminal created so far.
    family_states: FxHashMap<u32, FamilyState>,
    /// Most symbols `syms` may hold once families are expanded.
    max_syms: usize,
}

/// A family with its required members as a bit set.
struct FamilyInfo {
    family: Family,
    required: Box<[u64]>,
}

/// A nonterminal of a family: the members used so far (one bit each), and whether an item
/// came before (then a separator comes first).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct FamilyState {
    family: u32,
    used: Box<[u64]>,
    started: bool,
}

/// What stands at a position of the flattened productions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum SymAt {
    /// The end of a production.
    End,
    Terminal(u32),
    Nonterminal(u32),
}

/// A family nonterminal: the family, and which members its items have used so far.
pub(crate) struct FamilyShape<'a> {
    pub family: &'a Family,
    /// Required members, one bit each.
    pub required: &'a [u64],
    /// Members used before this nonterminal, one bit each.
    pub used: &'a [u64],
    /// Whether an item came before (then a separator comes before the next one).
    pub started: bool,
}

impl FamilyShape<'_> {
    /// Whether member `j` was used before.
    pub(crate) fn is_used(&self, j: usize) -> bool {
        has_bit(self.used, j)
    }

    /// Whether member `j` is required.
    pub(crate) fn is_required(&self, j: usize) -> bool {
        has_bit(self.required, j)
    }
}

/// An item as (position, row it began in), its origin resolved against the row holding it.
fn resolve(item: Item, row: RowId) -> (u32, RowId) {
    let origin = if item.origin == SELF {
        row
    } else {
        item.origin
    };
    (item.pos, origin)
}

fn has_bit(bits: &[u64], i: usize) -> bool {
    bits[i / 64] & (1 << (i % 64)) != 0
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
    ids: IdsByHash,
    scans: FxHashMap<SmallVec<[(RowId, u32); 2]>, RowId>,
    max_rows: usize,
    max_items: usize,
}

impl Parser {
    pub(crate) fn new(cfg: &Cfg, max_rows: usize, max_items: usize, max_syms: usize) -> Parser {
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
        let nullable_t: Vec<bool> = cfg.terminals.iter().map(|t| t.matches_empty()).collect();
        let families: Vec<FamilyInfo> = cfg
            .families
            .iter()
            .map(|f| {
                let mut required = vec![0u64; f.members.len().div_ceil(64)];
                for (i, _) in f.members.iter().enumerate().filter(|(_, m)| m.1) {
                    required[i / 64] |= 1 << (i % 64);
                }
                FamilyInfo {
                    family: f.clone(),
                    required: required.into(),
                }
            })
            .collect();
        let nullable = nullable_nonterminals(cfg, &nullable_t, &families);
        let mut unexpanded = FxHashMap::default();
        let mut family_nts = FxHashMap::default();
        let mut family_states = FxHashMap::default();
        for (i, info) in families.iter().enumerate() {
            let root = FamilyState {
                family: i as u32,
                used: vec![0; info.required.len()].into(),
                started: false,
            };
            unexpanded.insert(info.family.root, root.clone());
            family_states.insert(info.family.root, root.clone());
            family_nts.insert(root, info.family.root);
        }
        let tables = Tables {
            syms,
            lhs,
            productions,
            nullable,
            nullable_t,
            final_pos: start_pos + 1,
            start_pos,
            families,
            unexpanded,
            family_nts,
            family_states,
            max_syms,
        };
        Parser {
            tables,
            rows: Vec::new(),
            ids: IdsByHash::default(),
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

    /// The symbols of the production beginning at `first`, up to its end.
    pub(crate) fn production(&self, first: u32) -> impl Iterator<Item = SymAt> + '_ {
        (first..)
            .map(|pos| self.sym_at(pos))
            .take_while(|&sym| sym != SymAt::End)
    }

    /// What stands at `pos` of the flattened productions.
    pub(crate) fn sym_at(&self, pos: u32) -> SymAt {
        match self.tables.syms[pos as usize] {
            END => SymAt::End,
            sym if sym & TERMINAL != 0 => SymAt::Terminal(sym & !TERMINAL),
            nt => SymAt::Nonterminal(nt),
        }
    }

    /// The nonterminal whose production holds `pos`.
    pub(crate) fn lhs_at(&self, pos: u32) -> u32 {
        self.tables.lhs[pos as usize]
    }

    /// The grammar's start nonterminal: completing it is accepting the input.
    pub(crate) fn start_nonterminal(&self) -> u32 {
        self.tables.lhs[self.tables.start_pos as usize]
    }

    /// Nonterminals created so far (families create more as inputs reach them).
    pub(crate) fn nonterminal_count(&self) -> usize {
        self.tables.productions.len()
    }

    /// First positions of the productions of `nt` built so far (none for a family
    /// nonterminal not expanded yet: see [`Parser::family_shape`]).
    pub(crate) fn productions_of(&self, nt: u32) -> &[u32] {
        &self.tables.productions[nt as usize]
    }

    /// Whether terminal `t` matches the empty string (items step over it at once).
    pub(crate) fn terminal_is_nullable(&self, t: u32) -> bool {
        self.tables.nullable_t[t as usize]
    }

    /// The items of `row` waiting for nonterminal `nt`, as (position, row they began in).
    pub(crate) fn waiting_for_nonterminal(
        &self,
        row: RowId,
        nt: u32,
    ) -> impl Iterator<Item = (u32, RowId)> + '_ {
        let r = &self.rows[row as usize];
        r.waiting_nt
            .get(&nt)
            .into_iter()
            .flatten()
            .map(move |&i| resolve(r.items[i as usize], row))
    }

    /// The items of `row` waiting for terminal `t`, as (position, row they began in).
    pub(crate) fn waiting_for_terminal(
        &self,
        row: RowId,
        t: u32,
    ) -> impl Iterator<Item = (u32, RowId)> + '_ {
        let r = &self.rows[row as usize];
        r.waiting_t
            .get(&t)
            .into_iter()
            .flatten()
            .map(move |&i| resolve(r.items[i as usize], row))
    }

    /// The nonterminals some item of `row` waits for.
    pub(crate) fn waited_nonterminals(&self, row: RowId) -> impl Iterator<Item = u32> + '_ {
        self.rows[row as usize].waiting_nt.keys().copied()
    }

    /// What a family nonterminal derives, whether or not it is expanded yet: `None` for
    /// other nonterminals.
    pub(crate) fn family_shape(&self, nt: u32) -> Option<FamilyShape<'_>> {
        let state = self.tables.family_states.get(&nt)?;
        let info = &self.tables.families[state.family as usize];
        Some(FamilyShape {
            family: &info.family,
            required: &info.required,
            used: &state.used,
            started: state.started,
        })
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
                    budget: Budget::ItemsPerRow,
                    limit: self.max_items,
                });
            }
            items.push(item);
            let sym = self.tables.syms[item.pos as usize];
            if sym == END {
                let done = self.tables.lhs[item.pos as usize];
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
                if self.tables.nullable_t[(sym & !TERMINAL) as usize] {
                    work.push(Item {
                        pos: item.pos + 1,
                        origin: item.origin,
                    });
                }
            } else {
                waiting_here.entry(sym).or_default().push(item);
                self.tables.expand(sym)?;
                for &p in &self.tables.productions[sym as usize] {
                    work.push(Item {
                        pos: p,
                        origin: SELF,
                    });
                }
                if self.tables.nullable[sym as usize] {
                    work.push(Item {
                        pos: item.pos + 1,
                        origin: item.origin,
                    });
                }
            }
        }
        items.sort_unstable();
        let hash = IdsByHash::hash_of(items.as_slice());
        if let Some(id) = self
            .ids
            .find(hash, |id| self.rows[id as usize].items[..] == items[..])
        {
            return Ok(id);
        }
        if self.rows.len() >= self.max_rows {
            return Err(MatchError::LimitExceeded {
                budget: Budget::Rows,
                limit: self.max_rows,
            });
        }
        let mut waiting_nt: FxHashMap<u32, SmallVec<[u32; 2]>> = FxHashMap::default();
        let mut waiting_t: FxHashMap<u32, SmallVec<[u32; 2]>> = FxHashMap::default();
        let mut accepting = false;
        let t = &self.tables;
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
        self.ids.insert(hash, id);
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

impl Tables {
    fn add_production(&mut self, lhs: u32, rhs: &[u32]) {
        self.productions[lhs as usize].push(self.syms.len() as u32);
        self.syms.extend_from_slice(rhs);
        self.syms.push(END);
        self.lhs.extend(std::iter::repeat_n(lhs, rhs.len() + 1));
    }

    /// The nonterminal of `state`, created (unexpanded) on first use.
    fn family_nt(&mut self, state: FamilyState) -> u32 {
        if let Some(&nt) = self.family_nts.get(&state) {
            return nt;
        }
        let nt = self.productions.len() as u32;
        self.productions.push(Vec::new());
        let info = &self.families[state.family as usize];
        let nullable = family_nullable(info, &state.used, state.started, &self.nullable);
        self.nullable.push(nullable);
        self.unexpanded.insert(nt, state.clone());
        self.family_states.insert(nt, state.clone());
        self.family_nts.insert(state, nt);
        nt
    }

    /// Builds the productions of `nt` if it is a family nonterminal not expanded yet: the end
    /// (when every required member is used), or one more item, then the rest.
    fn expand(&mut self, nt: u32) -> Result<(), MatchError> {
        let Some(state) = self.unexpanded.remove(&nt) else {
            return Ok(());
        };
        let f = state.family as usize;
        let (separator, extra, members, allow_empty) = {
            let family = &self.families[f].family;
            (
                family.separator,
                family.extra,
                family.members.len(),
                family.allow_empty,
            )
        };
        let complete = self.families[f]
            .required
            .iter()
            .zip(state.used.iter())
            .all(|(r, u)| r & !u == 0);
        if complete && (state.started || allow_empty) {
            self.add_production(nt, &[]);
        }
        let lead: SmallVec<[u32; 1]> = match (state.started, separator) {
            (false, _) => SmallVec::new(),
            (true, Some(sep)) => SmallVec::from_slice(&[sep]),
            (true, None) => return Ok(()),
        };
        for j in (0..members).filter(|&j| !has_bit(&state.used, j)) {
            let mut used = state.used.clone();
            used[j / 64] |= 1 << (j % 64);
            let next = self.family_nt(FamilyState {
                family: state.family,
                used,
                started: true,
            });
            let member = self.families[f].family.members[j].0;
            let mut rhs = lead.clone();
            rhs.extend([member, next]);
            self.add_production(nt, &rhs);
        }
        if let Some(extra) = extra {
            let next = self.family_nt(FamilyState {
                started: true,
                ..state
            });
            let mut rhs = lead;
            rhs.extend([extra, next]);
            self.add_production(nt, &rhs);
        }
        if self.syms.len() > self.max_syms {
            return Err(MatchError::LimitExceeded {
                budget: Budget::ExpandedGrammarSize,
                limit: self.max_syms,
            });
        }
        Ok(())
    }
}

/// Whether a family nonterminal derives the empty string: every required member not used yet
/// does, at least one item when one is needed, and the separator if any comes between.
fn family_nullable(info: &FamilyInfo, used: &[u64], started: bool, nullable: &[bool]) -> bool {
    let family = &info.family;
    let null = |nt: u32| nullable[nt as usize];
    let mut missing = 0usize;
    for (j, &(nt, required)) in family.members.iter().enumerate() {
        if required && !has_bit(used, j) {
            if !null(nt) {
                return false;
            }
            missing += 1;
        }
    }
    let mut items = missing;
    if items == 0 && !started && !family.allow_empty {
        let free = family
            .members
            .iter()
            .enumerate()
            .any(|(j, &(nt, _))| !has_bit(used, j) && null(nt))
            || family.extra.is_some_and(null);
        if !free {
            return false;
        }
        items = 1;
    }
    let separators = if items == 0 {
        0
    } else {
        items - 1 + usize::from(started)
    };
    separators == 0 || family.separator.is_some_and(null)
}

fn nullable_nonterminals(cfg: &Cfg, nullable_t: &[bool], families: &[FamilyInfo]) -> Vec<bool> {
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
        for info in families {
            let root = info.family.root as usize;
            let none = vec![0; info.required.len()];
            if !nullable[root] && family_nullable(info, &none, false, &nullable) {
                nullable[root] = true;
                changed = true;
            }
        }
        if !changed {
            return nullable;
        }
    }
}
