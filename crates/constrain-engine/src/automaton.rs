//! The matcher automaton: lexer and parser combined into one lazily built DFA over bytes.
//!
//! A state is the set of live scans `(row, lexer state)`: lexemes in progress, each started at a
//! row (Earley set). Reading a byte advances every scan; when a lexeme can end, the parser builds
//! (or finds) the row after it, and a fresh scan starts there. Lexemes are not greedy: a scan
//! that could end keeps going too, so the language is exactly the grammar's. Because rows and
//! lexer states are interned, so are these states, and every transition is computed once.

use smallvec::SmallVec;

use crate::error::{Budget, GrammarError, MatchError};
use crate::grammar::Cfg;
use crate::interner::IdsByHash;
use crate::lexer::{LexId, Lexer, LEX_DEAD};
use crate::limits::{Deadline, Limits};
use crate::parser::{Parser, RowId};
use crate::text_run::MAX_RADIUS;
use crate::token_index::SHORT_STRING;
use crate::transitions::TransitionTable;

/// Index of an automaton state.
pub(crate) type StateId = u32;

/// The state with no continuation at all.
pub(crate) const DEAD: StateId = 0;

const UNKNOWN: u32 = u32::MAX;

/// Lexemes in progress, sorted; and whether the input read so far is a complete sentence.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Config {
    pub scans: SmallVec<[(RowId, LexId); 2]>,
    pub accepting: bool,
}

pub(crate) struct Automaton {
    pub lexer: Lexer,
    pub parser: Parser,
    configs: Vec<Config>,
    ids: IdsByHash,
    /// Per state and byte class: the next state, `UNKNOWN` until computed.
    trans: TransitionTable,
    initial: StateId,
    max_states: usize,
    /// Per state: its text radius (`None` until asked).
    text_radius: Vec<Option<u8>>,
    /// While the first mask is computed (part of compiling): when to give up.
    deadline: Option<Deadline>,
}

impl Automaton {
    pub(crate) fn new(
        cfg: Cfg,
        limits: &Limits,
        deadline: &Deadline,
    ) -> Result<Automaton, GrammarError> {
        let parser = Parser::new(
            &cfg,
            limits.max_rows,
            limits.max_items_per_row,
            limits.max_grammar_size.saturating_mul(2),
        );
        let lexer = Lexer::new(cfg.terminals, limits, deadline)?;
        let classes = lexer.classes();
        let mut automaton = Automaton {
            lexer,
            parser,
            configs: Vec::new(),
            ids: IdsByHash::default(),
            trans: TransitionTable::new(classes, UNKNOWN),
            initial: DEAD,
            max_states: limits.max_states,
            text_radius: Vec::new(),
            deadline: None,
        };
        let dead = automaton.intern(Config {
            scans: SmallVec::new(),
            accepting: false,
        });
        debug_assert_eq!(dead.ok(), Some(DEAD));
        automaton.initial = automaton.initial_state().map_err(|e| match e {
            MatchError::LimitExceeded { budget, limit } => {
                GrammarError::LimitExceeded { budget, limit }
            }
            other => GrammarError::Unsupported {
                what: other.to_string(),
            },
        })?;
        Ok(automaton)
    }

    fn initial_state(&mut self) -> Result<StateId, MatchError> {
        let row = self.parser.initial()?;
        let mut config = Config {
            scans: SmallVec::new(),
            accepting: self.parser.row(row).accepting(),
        };
        self.start_scan(row, &mut config)?;
        self.intern(config)
    }

    /// The state before any input.
    pub(crate) fn initial(&self) -> StateId {
        self.initial
    }

    pub(crate) fn classes(&self) -> usize {
        self.lexer.classes()
    }

    /// Adds a scan at the start of `row` if it expects any terminal.
    fn start_scan(&mut self, row: RowId, config: &mut Config) -> Result<(), MatchError> {
        let expected = self.parser.row(row).expected();
        if !expected.is_empty() {
            let expected: SmallVec<[u32; 8]> = expected.into();
            let lex = self.lexer.start(&expected)?;
            config.scans.push((row, lex));
        }
        Ok(())
    }

    /// The state after a byte of class `class`.
    #[inline]
    pub(crate) fn next(&mut self, state: StateId, class: usize) -> Result<StateId, MatchError> {
        let known = self.trans.get(state as usize, class);
        if known != UNKNOWN {
            return Ok(known);
        }
        let next = self.compute_next(state, class)?;
        self.trans.set(state as usize, class, next);
        Ok(next)
    }

    /// The state after `byte`.
    #[inline]
    pub(crate) fn next_byte(&mut self, state: StateId, byte: u8) -> Result<StateId, MatchError> {
        let class = self.lexer.byte_classes()[byte as usize] as usize;
        self.next(state, class)
    }

    /// Bounds the work of building states (and lexer states and terminal automata) by
    /// `deadline`, or lifts the bound.
    pub(crate) fn set_deadline(&mut self, deadline: Option<Deadline>) {
        self.deadline = deadline;
        self.lexer.set_deadline(deadline);
    }

    fn compute_next(&mut self, state: StateId, class: usize) -> Result<StateId, MatchError> {
        if let Some(deadline) = &self.deadline {
            deadline.check_match()?;
        }
        let scans = self.configs[state as usize].scans.clone();
        let mut next = Config {
            scans: SmallVec::new(),
            accepting: false,
        };
        let mut ended: SmallVec<[(RowId, LexId); 2]> = SmallVec::new();
        for (row, lex) in scans {
            let lex = self.lexer.next(lex, class)?;
            if lex != LEX_DEAD {
                if self.lexer.extends(lex) {
                    next.scans.push((row, lex));
                }
                if self.lexer.can_end(lex) {
                    ended.push((row, lex));
                }
            }
        }
        if !ended.is_empty() {
            let row = {
                let completions: SmallVec<[(RowId, &[u32]); 2]> = ended
                    .iter()
                    .map(|&(row, lex)| (row, self.lexer.accepts(lex)))
                    .collect();
                self.parser.scan(&completions)?
            };
            next.accepting = self.parser.row(row).accepting();
            self.start_scan(row, &mut next)?;
        }
        next.scans.sort_unstable();
        next.scans.dedup();
        self.intern(next)
    }

    /// The state after bytes that take the only scan `(row, _)` of a state to lexer state
    /// `end` without passing a point where its lexeme could end: what [`Automaton::next`]
    /// builds at the last of them (the scan goes on where `end` extends, and where the lexeme
    /// may end there, the row after it starts a scan). [`DEAD`] when nothing follows.
    pub(crate) fn after_lexeme_bytes(
        &mut self,
        row: RowId,
        end: LexId,
    ) -> Result<StateId, MatchError> {
        let mut next = Config {
            scans: SmallVec::new(),
            accepting: false,
        };
        if end == LEX_DEAD {
            return Ok(DEAD);
        }
        if self.lexer.extends(end) {
            next.scans.push((row, end));
        }
        if self.lexer.can_end(end) {
            let accepts: SmallVec<[u32; 4]> = self.lexer.accepts(end).into();
            let after = self.parser.scan(&[(row, &accepts[..])])?;
            next.accepting = self.parser.row(after).accepting();
            self.start_scan(after, &mut next)?;
        }
        next.scans.sort_unstable();
        next.scans.dedup();
        self.intern(next)
    }

    fn intern(&mut self, config: Config) -> Result<StateId, MatchError> {
        let hash = IdsByHash::hash_of(&config);
        if let Some(id) = self
            .ids
            .find(hash, |id| self.configs[id as usize] == config)
        {
            return Ok(id);
        }
        if self.configs.len() >= self.max_states {
            return Err(MatchError::LimitExceeded {
                budget: Budget::States,
                limit: self.max_states,
            });
        }
        let id = self.configs.len() as StateId;
        self.ids.insert(hash, id);
        self.configs.push(config);
        self.trans.push_row();
        self.text_radius.push(None);
        Ok(id)
    }

    /// A lower bound of the text radius of `state` (see `text_run`; the bad state is
    /// [`DEAD`]): unbounded when every text byte leads back to `state`, else 0. Exploring
    /// further would build automaton states (parser rows) that no input may ever need; the
    /// lexer's radius (`Lexer::text_radius`) covers counted strings.
    pub(crate) fn text_radius(&mut self, state: StateId) -> Result<u8, MatchError> {
        if let Some(known) = self.text_radius[state as usize] {
            return Ok(known);
        }
        let mut radius = if state == DEAD { 0 } else { MAX_RADIUS };
        for i in 0..self.lexer.text_classes().len() {
            if radius == 0 {
                break;
            }
            let class = self.lexer.text_classes()[i];
            if self.next(state, class)? != state {
                radius = 0;
            }
        }
        self.text_radius[state as usize] = Some(radius);
        Ok(radius)
    }

    /// Whether the input read to reach `state` is a complete sentence.
    pub(crate) fn is_accepting(&self, state: StateId) -> bool {
        self.configs[state as usize].accepting
    }

    /// The scans of `state`: lexemes in flight, each with the row it began at.
    pub(crate) fn scans(&self, state: StateId) -> &[(RowId, LexId)] {
        &self.configs[state as usize].scans
    }

    /// Whether no byte can follow `state`.
    pub(crate) fn is_finished(&self, state: StateId) -> bool {
        self.configs[state as usize].scans.is_empty()
    }

    /// The lexer state of the only scan of `state`, if there is exactly one.
    pub(crate) fn single_scan(&self, state: StateId) -> Option<LexId> {
        match self.configs[state as usize].scans.as_slice() {
            [(_, lex)] => Some(*lex),
            _ => None,
        }
    }

    /// A state per scan of `state`, each holding that scan alone, when there are several and
    /// one of them reads string characters for long: it survives at least [`SHORT_STRING`]
    /// of them, whatever they are.
    ///
    /// Inside a string (two branches' values, a string that may end, values of branches
    /// whose lexemes began at different bytes), a walk of the whole automaton visits most of
    /// the vocabulary for every such state, where lexeme walks take whole subtrees at once
    /// and are done once per lexer state; elsewhere (a number that may go on or end) it is
    /// short, and masks per scan would only crowd the cache.
    pub(crate) fn scans_apart(
        &mut self,
        state: StateId,
    ) -> Result<Option<SmallVec<[StateId; 4]>>, MatchError> {
        if self.configs[state as usize].scans.len() < 2 {
            return Ok(None);
        }
        for i in 0..self.configs[state as usize].scans.len() {
            let lex = self.configs[state as usize].scans[i].1;
            if self.lexer.string_radius(lex)? >= SHORT_STRING {
                return self.scans_alone(state);
            }
        }
        Ok(None)
    }

    /// A state per scan of `state`, each holding that scan alone, when there are several.
    ///
    /// The scans of a state step apart, and a row the parser builds from several ending
    /// lexemes holds the items each would give alone, whose continuations add up: what may
    /// follow a state is what may follow any one of its scans. So its mask is the union of
    /// theirs, and a completion of the state one of them reaches after some bytes completes
    /// the state `state` reaches after them too.
    pub(crate) fn scans_alone(
        &mut self,
        state: StateId,
    ) -> Result<Option<SmallVec<[StateId; 4]>>, MatchError> {
        let scans = self.configs[state as usize].scans.clone();
        if scans.len() < 2 {
            return Ok(None);
        }
        let mut alone = SmallVec::with_capacity(scans.len());
        for scan in scans {
            let mut only = SmallVec::new();
            only.push(scan);
            alone.push(self.intern(Config {
                scans: only,
                accepting: false,
            })?);
        }
        Ok(Some(alone))
    }

    /// Sizes of the lazily built parts, for diagnostics.
    pub(crate) fn stats(&self) -> (usize, usize, usize) {
        (
            self.configs.len(),
            self.parser.row_count(),
            self.lexer.state_count(),
        )
    }
}
