//! [`CompiledGrammar`]: a grammar bound to a vocabulary, with its lazily built automaton and the
//! token masks of every state visited so far.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use constrain_vocab::Vocabulary;
use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::automaton::{Automaton, StateId, DEAD};
use crate::completion::{self, Completion, Completions};
use crate::error::{GrammarError, MatchError};
use crate::grammar::{lower, Grammar};
use crate::inside_ends::{inside_ends, InsideEnds};
use crate::lexer::LexId;
use crate::limits::{Deadline, Limits};
use crate::mask::{
    lexeme_mask, state_mask_from_lexeme, walk_subtree, BoundaryCache, Inside, LexemeMask,
};
use crate::parser::RowId;
use crate::text_check::BoundTextCheck;
use crate::token_index::{Signature, TokenIndex};

/// A grammar compiled for one vocabulary. `Send + Sync`: share it behind an [`Arc`] between
/// any number of [`Matcher`](crate::Matcher)s; what one of them computes, all reuse.
pub struct CompiledGrammar {
    index: Arc<TokenIndex>,
    /// The grammar's [`TextCheck`](crate::TextCheck), bound to the vocabulary.
    text_check: Option<Arc<dyn BoundTextCheck>>,
    lazy: Mutex<Lazy>,
    masks: RwLock<MaskCache>,
    initial: StateId,
    /// Whether the token budget skips the bound and always takes its exact walk (see
    /// [`CompiledGrammar::set_budget_walk_only`]).
    budget_walk_only: AtomicBool,
    /// [`CompiledGrammar::widest_completion_tokens`], once computed: read before every budgeted
    /// token, without the lock.
    widest_tokens: OnceLock<u64>,
}

/// The parts built on demand, behind one lock.
struct Lazy {
    automaton: Automaton,
    lexeme_masks: FxHashMap<LexId, Arc<LexemeMask>>,
    /// The same masks by lexer state identity (see `Lexer::identity`).
    lexeme_masks_by_identity: FxHashMap<Box<[u32]>, Arc<LexemeMask>>,
    lexeme_mask_bytes: usize,
    boundaries: BoundaryCache,
    /// Shortest completions, computed only for token budgets.
    completions: Completions,
    /// Per state: the most tokens a completion takes after any one allowed token (see
    /// [`CompiledGrammar::fit_to_budget`]).
    widest_after: FxHashMap<StateId, u64>,
    /// Per state: what the budget reads without a walk of the whole trie, `None` where it
    /// takes the walk (see [`CompiledGrammar::budget_view`]).
    budget_views: FxHashMap<StateId, Option<BudgetView>>,
    /// Per lexer state: where tokens that keep its lexeme going end (see
    /// [`completion::token_ends`]).
    token_ends: FxHashMap<LexId, Option<Arc<[LexId]>>>,
    /// Per boundary node and automaton state there: the most tokens a completion takes after
    /// any token below the node.
    widest_below: FxHashMap<(u32, StateId), u64>,
    /// Per lexer state: the tokens that keep its lexeme going, by where they end (`None`
    /// where they end in too many states), and the memory they hold.
    inside_ends: FxHashMap<LexId, Option<Arc<InsideEnds>>>,
    inside_ends_bytes: usize,
}

/// Token masks per automaton state, dropped wholesale when over budget.
struct MaskCache {
    masks: FxHashMap<StateId, Arc<[u32]>>,
    bytes: usize,
    budget: usize,
}

impl CompiledGrammar {
    /// Compiles `grammar` for the vocabulary of `index`, within `limits`, and computes the
    /// mask of the initial state: the compile-time budget covers both, so a grammar that is
    /// returned is ready to serve its first token.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use constrain_engine::{CompiledGrammar, Grammar, Limits, Matcher, TokenIndex};
    /// use constrain_vocab::{TokenKind, Vocabulary};
    ///
    /// let vocab = Vocabulary::from_tokens(
    ///     ["a", "b", "ab", "</s>"].iter().enumerate().map(|(i, t)| {
    ///         let kind = if *t == "</s>" { TokenKind::EndOfSequence } else { TokenKind::Text };
    ///         (i as u32, t.as_bytes().to_vec(), kind)
    ///     }),
    /// )?;
    /// let index = TokenIndex::new(Arc::new(vocab));
    /// let grammar = CompiledGrammar::new(&Grammar::from_regex("(ab)+")?, index, Limits::default())?;
    /// let mut matcher = Matcher::new(grammar);
    /// let mut mask = vec![0u32; matcher.grammar().mask_words()];
    /// matcher.fill_mask(&mut mask)?;
    /// assert_eq!(mask[0], 0b0101); // "a" and "ab"; not "b", not yet "</s>"
    /// matcher.accept_token(2)?;
    /// assert!(matcher.is_accepting());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(
        grammar: &Grammar,
        index: Arc<TokenIndex>,
        limits: Limits,
    ) -> Result<Arc<CompiledGrammar>, GrammarError> {
        let deadline = Deadline::of(&limits);
        let cfg = lower(grammar, &limits, &deadline)?;
        let mut automaton = Automaton::new(cfg, &limits, &deadline)?;
        let initial = automaton.initial();
        automaton.set_deadline(Some(deadline));
        let text_check = grammar.text_check().map(|check| check.bind(&index));
        let compiled = Arc::new(CompiledGrammar {
            index,
            text_check,
            lazy: Mutex::new(Lazy {
                automaton,
                lexeme_masks: FxHashMap::default(),
                lexeme_masks_by_identity: FxHashMap::default(),
                lexeme_mask_bytes: 0,
                boundaries: BoundaryCache::default(),
                completions: Completions::default(),
                widest_after: FxHashMap::default(),
                budget_views: FxHashMap::default(),
                token_ends: FxHashMap::default(),
                widest_below: FxHashMap::default(),
                inside_ends: FxHashMap::default(),
                inside_ends_bytes: 0,
            }),
            masks: RwLock::new(MaskCache {
                masks: FxHashMap::default(),
                bytes: 0,
                budget: limits.mask_cache_bytes,
            }),
            initial,
            budget_walk_only: AtomicBool::new(false),
            widest_tokens: OnceLock::new(),
        });
        // The first mask is part of compiling: within the same budget, and ready for every
        // matcher.
        let first = compiled.mask(initial);
        compiled.lazy.lock().automaton.set_deadline(None);
        match first {
            Ok(_) => Ok(compiled),
            Err(e) => {
                // The automaton built so far may be large: the error need not wait for it to
                // be freed.
                crate::free_in_background(compiled);
                Err(match e {
                    MatchError::LimitExceeded { budget, limit } => {
                        GrammarError::LimitExceeded { budget, limit }
                    }
                    other => GrammarError::Unsupported {
                        what: format!("the first mask: {other}"),
                    },
                })
            }
        }
    }

    /// The vocabulary this grammar was compiled for.
    pub fn vocabulary(&self) -> &Arc<Vocabulary> {
        self.index.vocabulary()
    }

    /// The token index this grammar was compiled for.
    pub fn token_index(&self) -> &Arc<TokenIndex> {
        &self.index
    }

    /// Words of a token mask: `ceil(logits_width / 32)`.
    pub fn mask_words(&self) -> usize {
        self.index.mask_words()
    }

    /// The check run beside the automaton, bound to the vocabulary.
    pub(crate) fn text_check(&self) -> Option<&Arc<dyn BoundTextCheck>> {
        self.text_check.as_ref()
    }

    pub(crate) fn initial(&self) -> StateId {
        self.initial
    }

    /// Runs `f` with the automaton locked.
    pub(crate) fn with_automaton<R>(&self, f: impl FnOnce(&mut Automaton) -> R) -> R {
        f(&mut self.lazy.lock().automaton)
    }

    /// Makes the token budget decide every mask by its walk of the trie, as it did before it
    /// had a bound (`true`), or take the bound first (`false`, the default). The masks are
    /// the same either way; this exists to measure and to test the bound against the walk.
    #[doc(hidden)]
    pub fn set_budget_walk_only(&self, walk_only: bool) {
        self.budget_walk_only.store(walk_only, Ordering::Relaxed);
    }

    /// The cached mask of `state` (without end-of-sequence bits), computing it on first visit.
    pub(crate) fn mask(&self, state: StateId) -> Result<Arc<[u32]>, MatchError> {
        if let Some(mask) = self.cached_mask(state) {
            return Ok(mask);
        }
        let mut lazy = self.lazy.lock();
        self.mask_locked(&mut lazy, state)
    }

    fn cached_mask(&self, state: StateId) -> Option<Arc<[u32]>> {
        self.masks.read().masks.get(&state).cloned()
    }

    fn mask_locked(&self, lazy: &mut Lazy, state: StateId) -> Result<Arc<[u32]>, MatchError> {
        if let Some(mask) = self.cached_mask(state) {
            return Ok(mask);
        }
        // Built in place in its shared allocation: a mask is tens of kilobytes, and a copy
        // per new state shows in the time per mask.
        let mask: Arc<[u32]> = if state == DEAD {
            vec![0u32; self.mask_words()].into()
        } else if let Some(lex) = lazy.automaton.single_scan(state) {
            let lexeme = self.lexeme_mask(lazy, lex, Sharing::BySignature)?;
            let mut mask = lexeme.inside.to_shared_mask(self.mask_words());
            let words = Arc::get_mut(&mut mask).expect("a new Arc is not shared");
            state_mask_from_lexeme(
                &mut lazy.automaton,
                &self.index,
                state,
                &lexeme,
                &mut lazy.boundaries,
                words,
            )?;
            mask
        } else if let Some(apart) = lazy.automaton.scans_apart(state)? {
            let mut mask = vec![0u32; self.mask_words()];
            for alone in apart {
                let part = self.mask_locked(lazy, alone)?;
                mask.iter_mut().zip(part.iter()).for_each(|(m, p)| *m |= p);
            }
            mask.into()
        } else {
            let mut mask = vec![0u32; self.mask_words()];
            walk_subtree(&mut lazy.automaton, &self.index, 0, state, &mut mask)?;
            mask.into()
        };
        let mut cache = self.masks.write();
        cache.bytes += mask.len() * 4;
        if cache.bytes > cache.budget / 2 {
            cache.masks.clear();
            cache.bytes = mask.len() * 4;
        }
        cache.masks.insert(state, mask.clone());
        Ok(mask)
    }

    /// The lexeme walk from `lex`: from this grammar's cache (by lexer state, then by its
    /// identity), from another grammar's through the token index (by signature, unless
    /// `sharing` says otherwise), or computed now.
    fn lexeme_mask(
        &self,
        lazy: &mut Lazy,
        lex: LexId,
        sharing: Sharing,
    ) -> Result<Arc<LexemeMask>, MatchError> {
        if let Some(m) = lazy.lexeme_masks.get(&lex) {
            return Ok(m.clone());
        }
        let identity = lazy
            .automaton
            .lexer
            .identity(lex, self.index.longest_token());
        let known = identity
            .as_ref()
            .and_then(|id| lazy.lexeme_masks_by_identity.get(id))
            .cloned();
        let m = match known {
            Some(m) => m,
            None => {
                let m = self.shared_or_walked(lazy, lex, sharing)?;
                lazy.lexeme_mask_bytes += m.bytes();
                if let Some(id) = identity {
                    lazy.lexeme_mask_bytes += id.len() * 4;
                    lazy.lexeme_masks_by_identity.insert(id, m.clone());
                }
                m
            }
        };
        lazy.lexeme_mask_bytes += 16;
        if lazy.lexeme_mask_bytes > self.masks.read().budget / 2 {
            lazy.lexeme_masks.clear();
            lazy.lexeme_masks_by_identity.clear();
            lazy.lexeme_mask_bytes = m.bytes();
        }
        lazy.lexeme_masks.insert(lex, m.clone());
        Ok(m)
    }

    /// The lexeme walk from `lex`: the one another grammar shared through the token index (by
    /// signature), or computed now and shared. A state of members of several terminals (an
    /// object's key position) is computed as the union of its parts' (see
    /// [`Lexer::parts_by_terminal`]); one of many terminals (a large object's keys, which
    /// other grammars seldom share) is looked up by signature neither as a whole nor by part:
    /// a signature costs a few microseconds, and hundreds of them a millisecond.
    ///
    /// [`Lexer::parts_by_terminal`]: crate::lexer::Lexer::parts_by_terminal
    fn shared_or_walked(
        &self,
        lazy: &mut Lazy,
        lex: LexId,
        sharing: Sharing,
    ) -> Result<Arc<LexemeMask>, MatchError> {
        let sharing = if lazy.automaton.lexer.terminals_in(lex) > MAX_SHARED_PARTS {
            Sharing::WithinGrammar
        } else {
            sharing
        };
        let signature = match sharing {
            Sharing::BySignature => lazy
                .automaton
                .lexer
                .signature(lex, self.index.longest_token())
                .map(Signature::new),
            Sharing::WithinGrammar => None,
        };
        if let Some(m) = signature
            .as_ref()
            .and_then(|sig| self.index.shared_lexeme_mask(sig))
        {
            return Ok(m);
        }
        let parts = lazy
            .automaton
            .lexer
            .parts_by_terminal(lex, MIN_TERMINALS_TO_SPLIT)?;
        let m = if parts.is_empty() {
            Arc::new(lexeme_mask(&mut lazy.automaton, &self.index, lex)?)
        } else {
            self.union_of_parts(lazy, &parts, sharing)?
        };
        if let Some(sig) = signature {
            self.index.share_lexeme_mask(sig, m.clone());
        }
        Ok(m)
    }

    /// The lexeme walk of a lexer state as the union of those of its `parts` (each cached as
    /// any lexer state's, and shared as `sharing` says): the tokens inside any part, and
    /// every part's boundaries.
    fn union_of_parts(
        &self,
        lazy: &mut Lazy,
        parts: &[LexId],
        sharing: Sharing,
    ) -> Result<Arc<LexemeMask>, MatchError> {
        let mut inside = vec![0u32; self.mask_words()].into_boxed_slice();
        let mut boundaries: Vec<(u32, Box<[u8]>)> = Vec::new();
        for &part in parts {
            let m = self.lexeme_mask(lazy, part, sharing)?;
            m.inside.add_to(&mut inside);
            boundaries.extend(m.boundaries.iter().cloned());
        }
        boundaries.sort_unstable_by_key(|&(node, _)| node);
        boundaries.dedup_by_key(|&mut (node, _)| node);
        Ok(Arc::new(LexemeMask {
            inside: Inside::from_mask(inside),
            boundaries,
        }))
    }

    /// The shortest completion of `state` (see [`Completion`]), `None` where nothing
    /// completes it.
    pub(crate) fn completion(&self, state: StateId) -> Result<Option<Completion>, MatchError> {
        let mut lazy = self.lazy.lock();
        let Lazy {
            automaton,
            completions,
            ..
        } = &mut *lazy;
        completions.of_state(automaton, &self.index, state)
    }

    /// Tokens the shortest completion of `state` takes (`u64::MAX` where none).
    pub(crate) fn completion_tokens(&self, state: StateId) -> Result<u64, MatchError> {
        Ok(self
            .completion(state)?
            .map_or(u64::MAX, |c| c.tokens.len() as u64))
    }

    /// Clears from `mask` (the allowed tokens at `state`) every token after which the shortest
    /// completion (as [`CompiledGrammar::completion_after`] counts it) takes more than `room`
    /// tokens, but `keep` (the next token of a completion known to fit). Returns whether any
    /// token was cleared.
    ///
    /// For a state of one scan, what the budget needs is kept per state ([`BudgetView`]):
    /// while it is ample this is a lookup and a comparison; as it runs out, only the subtrees
    /// below the lexeme's boundaries are walked, unless a token inside the lexeme must go too.
    /// Otherwise, and then, the walk of the whole trie
    /// ([`CompiledGrammar::fit_to_budget_exactly`]) decides. Both refuse the same tokens. A
    /// state of several scans keeps what fits from any of its scans alone.
    pub(crate) fn fit_to_budget(
        &self,
        state: StateId,
        mask: &mut [u32],
        room: u64,
        keep: Option<u32>,
    ) -> Result<bool, MatchError> {
        if let Some(alone) = self.scans_alone(state)? {
            return self.fit_to_budget_by_scan(&alone, mask, room, keep);
        }
        if self.budget_walk_only.load(Ordering::Relaxed) {
            return self.fit_to_budget_exactly(state, mask, room, keep);
        }
        let Some(view) = self.budget_view(state) else {
            return self.fit_to_budget_exactly(state, mask, room, keep);
        };
        let view = self.refined_budget_view(state, view, room);
        let mut narrowed = false;
        if view.inside > room {
            match self.refuse_inside(state, view.lex, mask, room, keep)? {
                Some(refused) => narrowed = refused,
                None => return self.fit_to_budget_exactly(state, mask, room, keep),
            }
        }
        if view.below <= room {
            return Ok(narrowed);
        }
        // Tokens that pass a boundary of the lexeme: read below each boundary.
        let mut refused = Vec::new();
        let lexeme = {
            let mut lazy = self.lazy.lock();
            self.lexeme_mask(&mut lazy, view.lex, Sharing::BySignature)?
        };
        for (node, path) in &lexeme.boundaries {
            let at = self.with_automaton(|a| walk(a, state, path))?;
            if at == DEAD {
                continue;
            }
            self.walk_completions(*node as usize, at, Some(&*mask), |token, tokens| {
                if tokens > room && Some(token) != keep {
                    refused.push(token);
                }
            })?;
        }
        for &t in &refused {
            mask[(t >> 5) as usize] &= !(1 << (t & 31));
        }
        Ok(narrowed || !refused.is_empty())
    }

    /// Clears from `mask` the tokens that keep the lexeme of `state` (of one scan, in lexer
    /// state `lex`) going and end where the completion takes more than `room` tokens, but
    /// `keep`: one completion per end ([`InsideEnds`]). Returns whether one was set; `None`
    /// where the tokens end in too many states (the walk of the whole trie decides then).
    fn refuse_inside(
        &self,
        state: StateId,
        lex: LexId,
        mask: &mut [u32],
        room: u64,
        keep: Option<u32>,
    ) -> Result<Option<bool>, MatchError> {
        let mut lazy = self.lazy.lock();
        let row = lazy.automaton.scans(state)[0].0;
        if self.no_end_fits(&mut lazy, row, lex, room)? {
            // Every token inside goes: the lexeme walk's own, without grouping them.
            let lexeme = self.lexeme_mask(&mut lazy, lex, Sharing::BySignature)?;
            return Ok(Some(lexeme.inside.remove_from(mask, keep)));
        }
        let Some(groups) = self.inside_ends(&mut lazy, lex)? else {
            return Ok(None);
        };
        let Lazy {
            automaton,
            completions,
            ..
        } = &mut *lazy;
        let mut refused = false;
        for (end, tokens) in &groups.by_end {
            let after = tokens_after_end(automaton, completions, &self.index, row, *end)?;
            if after.is_some_and(|n| n > room) {
                refused |= tokens.remove_from(mask, keep);
            }
        }
        Ok(Some(refused))
    }

    /// Whether no lexer state a token could end in inside the lexeme of scan `(row, lex)`
    /// (those [`completion::token_ends`] lists, when few enough to read each) leaves a
    /// completion of at most `room` tokens.
    fn no_end_fits(
        &self,
        lazy: &mut Lazy,
        row: RowId,
        lex: LexId,
        room: u64,
    ) -> Result<bool, MatchError> {
        let Some(ends) = self.token_ends(lazy, lex)? else {
            return Ok(false);
        };
        if ends.len() > EXACT_TOKEN_ENDS {
            return Ok(false);
        }
        let Lazy {
            automaton,
            completions,
            ..
        } = lazy;
        for &end in ends.iter() {
            let after = tokens_after_end(automaton, completions, &self.index, row, end)?;
            if after.is_some_and(|n| n <= room) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// [`inside_ends`] of `lex`, kept per lexer state within a memory budget.
    fn inside_ends(
        &self,
        lazy: &mut Lazy,
        lex: LexId,
    ) -> Result<Option<Arc<InsideEnds>>, MatchError> {
        if let Some(known) = lazy.inside_ends.get(&lex) {
            return Ok(known.clone());
        }
        let groups = inside_ends(
            &mut lazy.automaton.lexer,
            &self.index,
            lex,
            EXACT_TOKEN_ENDS,
        )?
        .map(Arc::new);
        let bytes = groups.as_ref().map_or(0, |g| g.bytes());
        if lazy.inside_ends_bytes + bytes > MAX_INSIDE_ENDS_BYTES {
            lazy.inside_ends.clear();
            lazy.inside_ends_bytes = 0;
        }
        lazy.inside_ends_bytes += bytes;
        lazy.inside_ends.insert(lex, groups.clone());
        Ok(groups)
    }

    /// Whether `room` tokens are known to hold the shortest completion after any token at
    /// `state`, from its bound alone: then the budget changes nothing there, and nothing
    /// else of it needs computing.
    pub(crate) fn budget_is_ample(&self, state: StateId, room: u64) -> bool {
        !self.budget_walk_only.load(Ordering::Relaxed)
            && (self.widest_completion_tokens() <= room || self.bound_after(state) <= room)
    }

    /// At most how many bytes the shortest completion of any state takes, `None` where that
    /// is unbounded (see `completion::widest`). This exists to test that bound.
    #[doc(hidden)]
    pub fn widest_completion_bytes(&self) -> Result<Option<u64>, MatchError> {
        let mut lazy = self.lazy.lock();
        let Lazy {
            automaton,
            completions,
            ..
        } = &mut *lazy;
        completions.widest_completion(automaton, &self.index)
    }

    /// At most how many tokens the shortest completion of any state takes: the grammar's
    /// widest completion in bytes, where the vocabulary spells every byte alone (a text of
    /// `n` bytes then takes at most `n` tokens); `u64::MAX` where there is none. Kept.
    fn widest_completion_tokens(&self) -> u64 {
        *self.widest_tokens.get_or_init(|| {
            if !self.index.spells_every_byte() {
                return u64::MAX;
            }
            match self.widest_completion_bytes() {
                Ok(Some(bytes)) => bytes,
                _ => u64::MAX,
            }
        })
    }

    /// [`CompiledGrammar::fit_to_budget`] at a state of several scans, given a state per scan
    /// alone: a token fits where it fits from one of them, and each is fitted as a state of
    /// one scan (by its bound while that is ample).
    fn fit_to_budget_by_scan(
        &self,
        alone: &[StateId],
        mask: &mut [u32],
        room: u64,
        keep: Option<u32>,
    ) -> Result<bool, MatchError> {
        let walk_only = self.budget_walk_only.load(Ordering::Relaxed);
        if !walk_only && alone.iter().all(|&s| self.bound_after(s) <= room) {
            return Ok(false);
        }
        let mut fits = vec![0u32; mask.len()];
        for &s in alone {
            let mut part = self.mask(s)?.to_vec();
            part.iter_mut().zip(mask.iter()).for_each(|(p, m)| *p &= m);
            self.fit_to_budget(s, &mut part, room, None)?;
            fits.iter_mut().zip(&part).for_each(|(f, p)| *f |= p);
        }
        if let Some(k) = keep {
            fits[(k >> 5) as usize] |= 1 << (k & 31);
        }
        let mut narrowed = false;
        for (m, f) in mask.iter_mut().zip(&fits) {
            narrowed |= *m & !f != 0;
            *m &= f;
        }
        Ok(narrowed)
    }

    /// A state per scan of `state` alone, where it has several (see
    /// [`Automaton::scans_alone`]).
    fn scans_alone(&self, state: StateId) -> Result<Option<SmallVec<[StateId; 4]>>, MatchError> {
        self.with_automaton(|a| a.scans_alone(state))
    }

    /// The shortest completion the token budget counts after a token of `bytes` that leads
    /// from `state` to `next`: that of `next` where `state` has one scan. Where it has
    /// several, the one of fewest tokens among those of the states each scan alone leads to:
    /// each completes `next` too (see [`Automaton::scans_alone`]), and a state of several
    /// scans then allows under a budget what one of its scans allows alone, so its bound is
    /// theirs.
    pub(crate) fn completion_after(
        &self,
        state: StateId,
        bytes: &[u8],
        next: StateId,
    ) -> Result<Option<Completion>, MatchError> {
        let Some(alone) = self.scans_alone(state)? else {
            return self.completion(next);
        };
        let mut best: Option<Completion> = None;
        for s in alone {
            let at = self.with_automaton(|a| walk(a, s, bytes))?;
            if at == DEAD {
                continue;
            }
            if let Some(c) = self.completion(at)? {
                if best
                    .as_ref()
                    .is_none_or(|b| c.tokens.len() < b.tokens.len())
                {
                    best = Some(c);
                }
            }
        }
        Ok(best)
    }

    /// [`CompiledGrammar::fit_to_budget`] by a walk of the whole trie: the most tokens a
    /// completion takes after any allowed token is kept per state, so where the budget is
    /// ample this is one lookup and one comparison; where it is not, a walk of the trie from
    /// `state` reads each allowed token's completion.
    pub(crate) fn fit_to_budget_exactly(
        &self,
        state: StateId,
        mask: &mut [u32],
        room: u64,
        keep: Option<u32>,
    ) -> Result<bool, MatchError> {
        let known = self.lazy.lock().widest_after.get(&state).copied();
        if known.is_some_and(|widest| widest <= room) {
            return Ok(false);
        }
        let mut refused = Vec::new();
        let mut widest = 0u64;
        self.walk_completions(0, state, Some(&*mask), |token, tokens| {
            widest = widest.max(tokens);
            if tokens > room && Some(token) != keep {
                refused.push(token);
            }
        })?;
        // Without a text check, `mask` is the grammar's, and the walk found what
        // `widest_after` keeps.
        if self.text_check.is_none() {
            self.lazy.lock().widest_after.insert(state, widest);
        }
        for &t in &refused {
            mask[(t >> 5) as usize] &= !(1 << (t & 31));
        }
        Ok(!refused.is_empty())
    }

    /// The most tokens the shortest completion takes (as
    /// [`CompiledGrammar::completion_after`] counts it) after any token allowed at `state` (by
    /// the grammar alone), from walks of the whole trie; kept per state.
    pub(crate) fn widest_after(&self, state: StateId) -> Result<u64, MatchError> {
        if let Some(&w) = self.lazy.lock().widest_after.get(&state) {
            return Ok(w);
        }
        let widest = match self.scans_alone(state)? {
            None => {
                let base = self.mask(state)?;
                let mut widest = 0u64;
                self.walk_completions(0, state, Some(&base), |_, tokens| {
                    widest = widest.max(tokens)
                })?;
                widest
            }
            Some(alone) => {
                let mut least: FxHashMap<u32, u64> = FxHashMap::default();
                for s in alone {
                    let base = self.mask(s)?;
                    self.walk_completions(0, s, Some(&base), |token, tokens| {
                        let known = least.entry(token).or_insert(tokens);
                        *known = (*known).min(tokens);
                    })?;
                }
                least.values().copied().max().unwrap_or(0)
            }
        };
        self.lazy.lock().widest_after.insert(state, widest);
        Ok(widest)
    }

    /// A bound on [`CompiledGrammar::widest_after`] from the state's [`BudgetView`],
    /// `u64::MAX` where it has none.
    pub(crate) fn bound_after(&self, state: StateId) -> u64 {
        match self.scans_alone(state) {
            Ok(Some(alone)) => alone
                .iter()
                .map(|&s| self.bound_after(s))
                .max()
                .unwrap_or(0),
            Ok(None) => self
                .budget_view(state)
                .map_or(u64::MAX, |v| v.inside.max(v.below)),
            Err(_) => u64::MAX,
        }
    }

    /// The [`BudgetView`] of `state`, computed on first use and kept; `None` for a state of
    /// several scans, and where computing it met a limit (the walk decides then: a view
    /// never fails a mask).
    fn budget_view(&self, state: StateId) -> Option<BudgetView> {
        if let Some(known) = self.lazy.lock().budget_views.get(&state) {
            return *known;
        }
        let view = self.compute_budget_view(state).unwrap_or(None);
        self.lazy.lock().budget_views.insert(state, view);
        view
    }

    fn compute_budget_view(&self, state: StateId) -> Result<Option<BudgetView>, MatchError> {
        let mut lazy = self.lazy.lock();
        let Some(lex) = lazy.automaton.single_scan(state) else {
            return Ok(None);
        };
        let row = lazy.automaton.scans(state)[0].0;
        let Some(ends) = self.token_ends(&mut lazy, lex)? else {
            return Ok(None);
        };
        // Every token that keeps the lexeme going ends in the state after one of `ends`:
        // bounded first in bytes, which costs a search over lexer states, and computed end
        // by end only where that bound does not do (see `refined_budget_view`).
        let Lazy {
            automaton,
            completions,
            ..
        } = &mut *lazy;
        let (inside, inside_exact) =
            match bytes_after_lexeme_bound(automaton, completions, &self.index, row, &ends)? {
                Some(bound) => (bound, false),
                None if ends.len() <= EXACT_TOKEN_ENDS => (
                    widest_after_ends(automaton, completions, &self.index, row, &ends)?,
                    true,
                ),
                None => return Ok(None),
            };
        // The others lie below the boundaries of the lexeme's walk (the mask's subtrees).
        let lexeme = self.lexeme_mask(&mut lazy, lex, Sharing::BySignature)?;
        drop(lazy);
        let mut below = 0u64;
        for (node, path) in &lexeme.boundaries {
            let at = self.with_automaton(|a| walk(a, state, path))?;
            if at == DEAD {
                continue;
            }
            let known = self.lazy.lock().widest_below.get(&(*node, at)).copied();
            let widest = match known {
                Some(w) => w,
                None => {
                    let mut widest = 0u64;
                    self.walk_completions(*node as usize, at, None, |_, tokens| {
                        widest = widest.max(tokens)
                    })?;
                    self.lazy.lock().widest_below.insert((*node, at), widest);
                    widest
                }
            };
            below = below.max(widest);
        }
        Ok(Some(BudgetView {
            lex,
            inside,
            inside_exact,
            below,
        }))
    }

    /// `view` (of `state`) with its bound inside the lexeme computed end by end where it
    /// was bounded in bytes and that bound exceeds `room`, and there are few enough ends.
    fn refined_budget_view(&self, state: StateId, view: BudgetView, room: u64) -> BudgetView {
        if view.inside_exact || view.inside <= room {
            return view;
        }
        let refined = (|| -> Result<Option<BudgetView>, MatchError> {
            let mut lazy = self.lazy.lock();
            let row = lazy.automaton.scans(state)[0].0;
            let Some(ends) = self.token_ends(&mut lazy, view.lex)? else {
                return Ok(None);
            };
            if ends.len() > EXACT_TOKEN_ENDS {
                return Ok(None);
            }
            let Lazy {
                automaton,
                completions,
                ..
            } = &mut *lazy;
            let inside = widest_after_ends(automaton, completions, &self.index, row, &ends)?;
            Ok(Some(BudgetView {
                inside: inside.min(view.inside),
                inside_exact: true,
                ..view
            }))
        })();
        let refined = refined.ok().flatten().unwrap_or(BudgetView {
            inside_exact: true,
            ..view
        });
        self.lazy.lock().budget_views.insert(state, Some(refined));
        refined
    }

    /// [`completion::token_ends`] of `lex`, kept per lexer state.
    fn token_ends(&self, lazy: &mut Lazy, lex: LexId) -> Result<Option<Arc<[LexId]>>, MatchError> {
        if let Some(known) = lazy.token_ends.get(&lex) {
            return Ok(known.clone());
        }
        let ends =
            completion::token_ends(&mut lazy.automaton.lexer, lex, self.index.longest_token())?
                .map(Arc::from);
        lazy.token_ends.insert(lex, ends.clone());
        Ok(ends)
    }

    /// Walks the token trie below node `root` from `state`, calling `visit(token, completion
    /// tokens after it)` for every token that leads to a live state and is set in `allowed`
    /// when given (text and special tokens; end-of-sequence is not in the trie).
    fn walk_completions(
        &self,
        root: usize,
        state: StateId,
        allowed: Option<&[u32]>,
        mut visit: impl FnMut(u32, u64),
    ) -> Result<(), MatchError> {
        let mut lazy = self.lazy.lock();
        let Lazy {
            automaton,
            completions,
            ..
        } = &mut *lazy;
        let index = &self.index;
        let nodes = index.nodes();
        let classes = *automaton.lexer.byte_classes();
        let end = nodes[root].subtree_end as usize;
        let mut stack: Vec<(u32, StateId)> = vec![(end as u32, state)];
        let mut i = root + 1;
        while i < end {
            while stack.last().is_some_and(|&(e, _)| e as usize <= i) {
                stack.pop();
            }
            let parent = stack.last().map_or(DEAD, |&(_, s)| s);
            let node = nodes[i];
            let next = automaton.next(parent, classes[node.byte as usize] as usize)?;
            if next == DEAD {
                i = node.subtree_end as usize;
                continue;
            }
            let mut tokens_after = None;
            for &t in index.tokens_of(i) {
                if allowed.is_some_and(|a| a[(t >> 5) as usize] >> (t & 31) & 1 == 0) {
                    continue;
                }
                let after = match tokens_after {
                    Some(n) => n,
                    None => {
                        let n = completions
                            .of_state(automaton, index, next)?
                            .map_or(u64::MAX, |c| c.tokens.len() as u64);
                        tokens_after = Some(n);
                        n
                    }
                };
                visit(t, after);
            }
            if node.subtree_end as usize > i + 1 {
                stack.push((node.subtree_end, next));
            }
            i += 1;
        }
        Ok(())
    }

    /// Sizes of the lazily built automaton: (states, parser rows, lexer states).
    pub fn automaton_size(&self) -> (usize, usize, usize) {
        self.lazy.lock().automaton.stats()
    }
}

/// What the token budget needs of a state of one scan `(row, lex)`, read without a walk of
/// the whole trie. A token allowed there either keeps the lexeme going to its last byte, and
/// then ends in the state [`Automaton::after_lexeme_bytes`] gives for one of the lexer states
/// [`completion::token_ends`] lists (a superset of where tokens end: the bound is never
/// below the truth), bounded in bytes first and read end by end where that does not do; or
/// it passes a point where the lexeme may end, below one of the boundaries of the lexeme's
/// walk (see `mask`), where it is read exactly.
#[derive(Clone, Copy, Debug)]
struct BudgetView {
    lex: LexId,
    /// At least the most tokens a completion takes after a token that keeps the lexeme
    /// going: exactly that where `inside_exact`, else a bound in bytes.
    inside: u64,
    inside_exact: bool,
    /// The most tokens a completion takes after a token below a boundary.
    below: u64,
}

/// Memory the token budget keeps for [`InsideEnds`] of one grammar.
const MAX_INSIDE_ENDS_BYTES: usize = 16 << 20;

/// Lexer states [`completion::token_ends`] lists beyond which the budget bounds the
/// completions after them in bytes ([`bytes_after_lexeme_bound`]) instead of computing each.
const EXACT_TOKEN_ENDS: usize = 256;

/// A bound on the tokens of the shortest completion after any token that takes scan `(row,
/// _)` to one of `ends` within its lexeme, read off the lexer: the most bytes to the end of
/// the lexeme from any of them, plus the most that complete the row after any terminal it
/// expects. A text of `n` bytes takes at most `n` tokens where the vocabulary spells every
/// byte alone (longest-match tokenization then moves at least a byte a token); `None` where
/// it does not, or where a bound is not found.
fn bytes_after_lexeme_bound(
    automaton: &mut Automaton,
    completions: &mut Completions,
    index: &TokenIndex,
    row: RowId,
    ends: &[LexId],
) -> Result<Option<u64>, MatchError> {
    if !index.spells_every_byte() {
        return Ok(None);
    }
    let Some(tail) = completions.widest_tail(automaton, index, row)? else {
        return Ok(None);
    };
    Ok(completions
        .bytes_to_end_bound(&mut automaton.lexer, ends)?
        .map(|to_end| to_end.saturating_add(tail)))
}

/// The most tokens the shortest completion takes after any token that takes scan `(row, _)`
/// to one of `ends` within its lexeme: the completion of the state after each.
fn widest_after_ends(
    automaton: &mut Automaton,
    completions: &mut Completions,
    index: &TokenIndex,
    row: RowId,
    ends: &[LexId],
) -> Result<u64, MatchError> {
    let mut widest = 0u64;
    for &end in ends {
        if let Some(tokens) = tokens_after_end(automaton, completions, index, row, end)? {
            widest = widest.max(tokens);
        }
    }
    Ok(widest)
}

/// Tokens the shortest completion takes after a token that takes scan `(row, _)` to `end`
/// within its lexeme (`u64::MAX` where nothing completes it), `None` where no input ends
/// there alive.
fn tokens_after_end(
    automaton: &mut Automaton,
    completions: &mut Completions,
    index: &TokenIndex,
    row: RowId,
    end: LexId,
) -> Result<Option<u64>, MatchError> {
    let after = automaton.after_lexeme_bytes(row, end)?;
    if after == DEAD {
        return Ok(None);
    }
    let completion = completions.of_state(automaton, index, after)?;
    Ok(Some(completion.map_or(u64::MAX, |c| c.tokens.len() as u64)))
}

/// The state after `bytes` from `state` ([`DEAD`] once dead).
fn walk(a: &mut Automaton, mut state: StateId, bytes: &[u8]) -> Result<StateId, MatchError> {
    for &b in bytes {
        state = a.next_byte(state, b)?;
        if state == DEAD {
            break;
        }
    }
    Ok(state)
}

/// Whether a lexeme walk is looked up among, and given to, other grammars' (by signature, see
/// `Lexer::signature`), or kept within this grammar's caches.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sharing {
    BySignature,
    WithinGrammar,
}

/// Terminals a lexer state needs for its lexeme walk to be the union of its parts' (see
/// [`Lexer::parts_by_terminal`](crate::lexer::Lexer::parts_by_terminal)). The parts recur in
/// many states (the members of an object that may come next, whichever came before), but each
/// costs a walk and a pass over the mask: with few terminals, one walk of the state costs less.
const MIN_TERMINALS_TO_SPLIT: usize = 4;

/// Most terminals of a lexer state whose lexeme walk, and those of its parts, are looked up
/// by signature among other grammars' (see `CompiledGrammar::shared_or_walked`).
const MAX_SHARED_PARTS: usize = 8;

impl std::fmt::Debug for CompiledGrammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (states, rows, lexer_states) = self.automaton_size();
        f.debug_struct("CompiledGrammar")
            .field("states", &states)
            .field("rows", &rows)
            .field("lexer_states", &lexer_states)
            .finish_non_exhaustive()
    }
}
