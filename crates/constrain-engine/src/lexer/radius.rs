//! Radii: how far a lexer state survives the bytes of a byte alphabet, or whole string
//! characters, without dying or ending; and the facts about strings the mask walks ask
//! (free in strings, surviving groups, control bytes). See `text_run` for the exploration.

use std::sync::Arc;

use crate::bytes::TEXT;
use crate::error::MatchError;
use crate::text_run::{
    radius_by_successors, radius_within, MAX_EXPLORED as MAX_TEXT_EXPLORED, MAX_RADIUS,
};

use super::classes::CharClasses;
use super::{LexId, Lexer, LEX_DEAD, UNKNOWN};

/// NFA states `(terminal, state)` that live through string characters together (see
/// [`Lexer::surviving_group`]), sorted.
pub(super) type Group = Arc<[(u32, u32)]>;

/// NFA states of one terminal in a lexer state above which [`Lexer::radius`] does not look
/// for a radius (it is 0): every state it would explore is a set about as large, built for
/// each symbol, which costs more than the walk a radius saves (an unanchored `pattern` under
/// a `maxLength` makes sets of hundreds of states of one terminal). The key position of an
/// object has many terminals with a few states each, and keeps its radius.
pub(super) const LARGE_SET: usize = 32;

/// Printable ASCII bytes but `"` and `\`: the string characters of one byte that every JSON
/// string may hold unescaped.
pub(super) const ASCII_STRING_BYTES: u32 = 93;

/// Lexer states one [`Lexer::string_radius`] explores where characters lead to different
/// states before settling for the depth reached. The key position of an object that allows
/// undeclared keys has a state per prefix of its declared keys, all surviving any string;
/// exploring them all gives it the full radius, so its lexeme walk takes the short string
/// tokens at once (see `mask`).
pub(super) const MAX_STRING_EXPLORED: usize = 128;

/// Characters a counted member has left before its count matters (see
/// `Terminals::survives_as_its_nfa_for`) under which its radius is found by following its
/// counted states to their end rather than capped there: exact, so the last characters of a
/// string with a `maxLength` are decided by one mask of that count (see
/// [`Lexer::exact_string_radius`]), for at most this many more lexer states.
pub(super) const NEAR_COUNT_LIMIT: u8 = 16;

/// Whether a counted state's radius, capped at `room` where its uncounted state's is `free`,
/// is a cap farther from the count's limit than [`NEAR_COUNT_LIMIT`]: more characters may
/// follow, and the radius is not followed to the limit.
pub(super) fn capped_far_from_limit(free: u8, room: u8) -> bool {
    free > room && room >= NEAR_COUNT_LIMIT
}

/// The last transition [`Lexer::next_alike`] built: from which state, to which, and where each
/// member stepped.
#[derive(Default)]
pub(super) struct StepMemo {
    last: Option<(LexId, LexId)>,
    last_targets: Vec<u32>,
    /// Scratch for the targets of the class at hand.
    targets: Vec<u32>,
}

/// What a radius counts: the bytes of one byte alphabet (see `bytes::alphabet_of`), or
/// whole string characters.
#[derive(Clone, Copy)]
pub(super) enum Alphabet {
    Bytes(usize),
    String,
}

/// Where every symbol of an [`Alphabet`] leads from a lexer state.
pub(super) enum AfterSymbol {
    /// Some symbol kills or ends the lexeme on the way.
    Bad,
    /// Every symbol leads to this state.
    Same(LexId),
    /// Symbols lead to different states.
    Various,
}

/// Whether sorted `set` holds every member of `group`.
pub(super) fn holds_all(set: &[(u32, u32)], group: &[(u32, u32)]) -> bool {
    group.iter().all(|member| set.binary_search(member).is_ok())
}

impl Lexer {
    /// The radius of `state` over byte alphabet `alphabet` (see `text_run` and
    /// `bytes::alphabet_of`): bad states are dead or accepting (where a lexeme walk
    /// stops).
    pub(crate) fn radius(&mut self, state: LexId, alphabet: usize) -> Result<u8, MatchError> {
        if let Some(known) = self.memo.byte_radius[state as usize][alphabet] {
            return Ok(known);
        }
        if let Some(radius) = self.counted_radius(state, Alphabet::Bytes(alphabet))? {
            return Ok(radius);
        }
        if alphabet == TEXT {
            if let Some(radius) = self.looping_radius(state) {
                self.memo.byte_radius[state as usize][TEXT] = Some(radius);
                return Ok(radius);
            }
        }
        self.chain_radius(state, Alphabet::Bytes(alphabet))
    }

    /// [`Self::next`], reusing the state the last computed class of `memo` led to when every
    /// member of `state` steps alike on `class` (as most classes in a row do in a string
    /// body): one step per member instead of building and interning the set again.
    pub(super) fn next_alike(
        &mut self,
        state: LexId,
        class: usize,
        memo: &mut StepMemo,
    ) -> Result<LexId, MatchError> {
        let known = self.trans.get(state as usize, class);
        if known != UNKNOWN {
            return Ok(known);
        }
        let byte = self.class_rep[class];
        memo.targets.clear();
        memo.targets.extend(
            self.states[state as usize]
                .iter()
                .map(|&(t, s)| self.terminals.step_target(t, s, byte)),
        );
        if memo.last.is_some_and(|(from, _)| from == state) && memo.targets == memo.last_targets {
            let next = memo.last.map_or(LEX_DEAD, |(_, next)| next);
            self.share_with_run(state, class, next);
            return Ok(next);
        }
        let next = self.next(state, class)?;
        std::mem::swap(&mut memo.targets, &mut memo.last_targets);
        memo.last = Some((state, next));
        Ok(next)
    }

    /// The text radius of `state` read off the NFAs when one of its NFA states loops on every
    /// text byte (a string body, free text): the lexeme then never dies on text, and the
    /// radius is one less than the fewest text bytes after which some NFA state of the set
    /// can match (per NFA state, computed once per terminal, so many keys in one set cost
    /// little). `None` without such a loop.
    pub(super) fn looping_radius(&mut self, state: LexId) -> Option<u8> {
        let bytes: Vec<u8> = self.alphabet_classes[TEXT]
            .iter()
            .map(|&c| self.class_rep[c])
            .collect();
        let set = &self.states[state as usize];
        if !set
            .iter()
            .any(|&(t, s)| self.terminals.loops_on_text(t, s, &bytes))
        {
            return None;
        }
        let nearest = set
            .iter()
            .map(|&(t, s)| self.terminals.text_distance(t, s))
            .min()
            .unwrap_or(u8::MAX);
        Some(nearest.saturating_sub(1).min(MAX_RADIUS))
    }

    /// Whether any run of whole string characters (see `bytes::is_string_char`) read
    /// from `state` keeps the lexeme alive and never lets it end: one of its NFA states, or a
    /// group of them (see [`Self::surviving_group`]), lives through every such run, and no
    /// match state is reachable through their bytes. A lexeme walk then takes a whole subtree
    /// of such characters at once, in any script.
    pub(crate) fn free_in_strings(&mut self, state: LexId) -> bool {
        if let Some(known) = self.memo.free_in_strings[state as usize] {
            return known;
        }
        let chars = self.char_classes();
        let set = self.states[state as usize].clone();
        let free = set.iter().any(|&(t, s)| {
            self.loops_on_string_chars(t, s, &chars)
                || self
                    .surviving_group(t, s, &chars)
                    .is_some_and(|group| holds_all(&set, &group))
        }) && !self.match_reachable_in_strings(&set);
        self.memo.free_in_strings[state as usize] = Some(free);
        free
    }

    /// As [`Self::free_in_strings`], for runs of string characters beyond ASCII only: a
    /// lexeme walk then takes a whole subtree of them at once from a state that some ASCII
    /// characters end or kill (the keys an object leaves to a pattern that lists ASCII
    /// characters, say), which most of a multilingual vocabulary is.
    pub(crate) fn free_in_non_ascii(&mut self, state: LexId) -> bool {
        if let Some(known) = self.memo.free_in_non_ascii[state as usize] {
            return known;
        }
        let free = self.free_in_strings(state) || {
            let chars = self.non_ascii_char_classes();
            let set = self.states[state as usize].clone();
            set.iter()
                .any(|&(t, s)| self.loops_on_non_ascii_chars(t, s, &chars))
                && !self.match_reachable_in_strings(&set)
        };
        self.memo.free_in_non_ascii[state as usize] = Some(free);
        free
    }

    /// The string radius of `state`: like the text radius (see `text_run`), counted in whole
    /// string characters of any script (see `bytes::is_string_char`), every byte of
    /// which must keep the lexeme alive and not ended. A string body with `maxLength` has the
    /// characters it has left, whatever their script.
    pub(crate) fn string_radius(&mut self, state: LexId) -> Result<u8, MatchError> {
        if let Some(known) = self.memo.string_radius[state as usize] {
            return Ok(known);
        }
        if let Some(radius) = self.counted_radius(state, Alphabet::String)? {
            return Ok(radius);
        }
        let radius = if self.free_in_strings(state) {
            MAX_RADIUS
        } else {
            match self.radius_of_one_terminal(state)? {
                Some(radius) => radius,
                None => return self.chain_radius(state, Alphabet::String),
            }
        };
        self.memo.string_radius[state as usize] = Some(radius);
        Ok(radius)
    }

    /// The string radius of `state` when it is exact: every run of that many string
    /// characters leads to one state, where no further string character can begin (a string
    /// body with `maxLength`, counting what it has left). A token of string characters (a cut
    /// last one counting as one: not even its first byte can follow the last) is then
    /// allowed from `state` exactly when it has no more characters than that, and a
    /// lexeme walk decides all of them at once (see `mask::lexeme_mask`).
    pub(crate) fn exact_string_radius(&mut self, state: LexId) -> Result<Option<u8>, MatchError> {
        if let Some(known) = self.memo.exact_string_radius[state as usize] {
            return Ok(known);
        }
        let radius = self.find_exact_string_radius(state)?;
        self.memo.exact_string_radius[state as usize] = Some(radius);
        Ok(radius)
    }

    /// [`Self::exact_string_radius`], not cached.
    pub(super) fn find_exact_string_radius(
        &mut self,
        state: LexId,
    ) -> Result<Option<u8>, MatchError> {
        // A few characters leading apart rule it out at once, before every character is
        // stepped through (the states of a counted pattern are costly to build).
        let mut first = None;
        for &byte in b"a0 Z-" {
            let next = self.next(state, self.byte_class[byte as usize] as usize)?;
            if first.is_some_and(|first| first != next) {
                return Ok(None);
            }
            first = Some(next);
        }
        let radius = self.string_radius(state)?;
        if radius >= MAX_RADIUS {
            return Ok(None);
        }
        if let Some((free, room)) = self.uncounted_radius(state, Alphabet::String)? {
            if capped_far_from_limit(free, room) {
                // More characters can follow.
                return Ok(None);
            }
        }
        let mut at = state;
        for _ in 0..radius {
            match self.after_any_symbol(at, Alphabet::String)? {
                AfterSymbol::Same(next) => at = next,
                AfterSymbol::Bad | AfterSymbol::Various => return Ok(None),
            }
        }
        // No string character may begin: every class of a first byte leads nowhere.
        let chars = self.char_classes();
        for &class in chars.iter().flat_map(|sequence| sequence[0].iter()) {
            if self.next(at, class)? != LEX_DEAD {
                return Ok(None);
            }
        }
        Ok(Some(radius))
    }

    /// The radius over `alphabet` of a state with members that count edges (`None` for
    /// others): that of the same state without counts, within the room its counts leave;
    /// within [`NEAR_COUNT_LIMIT`] of their limit, that of the few counted states left,
    /// followed to their end where they form a chain.
    pub(super) fn counted_radius(
        &mut self,
        state: LexId,
        alphabet: Alphabet,
    ) -> Result<Option<u8>, MatchError> {
        let Some((free, room)) = self.uncounted_radius(state, alphabet)? else {
            return Ok(None);
        };
        let capped = free.min(room);
        if free <= room || capped_far_from_limit(free, room) {
            *self.cached_radius(state, alphabet) = Some(capped);
            return Ok(Some(capped));
        }
        self.chain_radius_or(state, alphabet, Some(capped))
            .map(Some)
    }

    /// For a state with members that count edges: the radius over `alphabet` of the same
    /// state without counts, and the room its counts leave (see [`Self::without_counts`]).
    pub(super) fn uncounted_radius(
        &mut self,
        state: LexId,
        alphabet: Alphabet,
    ) -> Result<Option<(u8, u8)>, MatchError> {
        let Some((uncounted, room)) = self.without_counts(state)? else {
            return Ok(None);
        };
        let free = match alphabet {
            Alphabet::Bytes(a) => self.radius(uncounted, a)?,
            Alphabet::String => self.string_radius(uncounted)?,
        };
        Ok(Some((free, room)))
    }

    /// `state` with the counts of its members that count edges dropped, and how many
    /// characters it survives as that state does (see `Terminals::survives_as_its_nfa_for`),
    /// when it has such members. Its radii are those of that state within that room:
    /// exploring the counted states would meet new ones at every count, the uncounted ones
    /// recur.
    pub(super) fn without_counts(
        &mut self,
        state: LexId,
    ) -> Result<Option<(LexId, u8)>, MatchError> {
        let members = &self.states[state as usize];
        if !members
            .iter()
            .any(|&(t, s)| self.terminals.uncounted(t, s).is_some())
        {
            return Ok(None);
        }
        let room = members
            .iter()
            .map(|&(t, s)| self.terminals.survives_as_its_nfa_for(t, s))
            .min()
            .unwrap_or(0)
            .min(u32::from(MAX_RADIUS)) as u8;
        let mut uncounted: Vec<(u32, u32)> = members
            .iter()
            .map(|&(t, s)| (t, self.terminals.uncounted(t, s).unwrap_or(s)))
            .collect();
        Ok(Some((self.intern(&mut uncounted)?, room)))
    }

    /// The largest string radius of the NFA states of one terminal of `state`, as a lexer
    /// state of their own, when no other member can end on string characters: `state`
    /// survives at least as long. `None` for a state of one terminal, when that radius is 0
    /// or when another member can end.
    ///
    /// The key position of an object that allows undeclared keys is such a state: the
    /// undeclared key (any string but the declared ones) never dies, but it has a state per
    /// prefix of a declared key, and exploring them beside every declared key's progress
    /// would build the same states many times over.
    pub(super) fn radius_of_one_terminal(
        &mut self,
        state: LexId,
    ) -> Result<Option<u8>, MatchError> {
        let set = self.states[state as usize].clone();
        if set.first().map(|m| m.0) == set.last().map(|m| m.0) {
            return Ok(None);
        }
        let mut best: Option<(u8, usize, usize)> = None;
        let mut start = 0;
        for group in set.chunk_by(|a, b| a.0 == b.0) {
            let end = start + group.len();
            let mut members = group.to_vec();
            let alone = self.intern(&mut members)?;
            let radius = self.string_radius(alone)?;
            if best.is_none_or(|(r, _, _)| radius > r) {
                best = Some((radius, start, end));
            }
            if radius == MAX_RADIUS {
                break;
            }
            start = end;
        }
        let Some((radius, start, end)) = best.filter(|&(radius, _, _)| radius > 0) else {
            return Ok(None);
        };
        let others: Vec<(u32, u32)> = set[..start].iter().chain(&set[end..]).copied().collect();
        Ok((!self.match_reachable_in_strings(&others)).then_some(radius))
    }

    /// The radius of `state` over `alphabet`, following the chain of states every symbol
    /// leads to alike (a body counting what it has left) and numbering it back from where it
    /// ends: one step per state for the whole chain, where exploring from each of its states
    /// would cost one per state and depth. Where symbols lead apart (the keys of an object),
    /// a little breadth-first exploration decides.
    pub(super) fn chain_radius(
        &mut self,
        state: LexId,
        alphabet: Alphabet,
    ) -> Result<u8, MatchError> {
        self.chain_radius_or(state, alphabet, None)
    }

    /// [`Self::chain_radius`], except that where symbols lead apart, `state` gets `apart`
    /// when given, without exploring: near the most edges of a counted pattern whose
    /// characters lead apart, an exploration at every count would build lexer states by the
    /// thousand (a pattern's automaton times the counts left times its spellings).
    pub(super) fn chain_radius_or(
        &mut self,
        state: LexId,
        alphabet: Alphabet,
        apart: Option<u8>,
    ) -> Result<u8, MatchError> {
        if self.largest_group(state) > LARGE_SET {
            *self.cached_radius(state, alphabet) = Some(0);
            return Ok(0);
        }
        let mut chain = vec![state];
        let last = loop {
            let at = chain[chain.len() - 1];
            match self.after_any_symbol(at, alphabet)? {
                AfterSymbol::Bad => break 0,
                AfterSymbol::Same(next) if chain.contains(&next) => break MAX_RADIUS,
                AfterSymbol::Same(next) => {
                    if let Some(known) = *self.cached_radius(next, alphabet) {
                        break known.saturating_add(1).min(MAX_RADIUS);
                    }
                    if chain.len() > MAX_RADIUS as usize {
                        // `state` survives the most asked for; the states after it are left
                        // to find theirs (a bound from this chain would be lower).
                        *self.cached_radius(state, alphabet) = Some(MAX_RADIUS);
                        return Ok(MAX_RADIUS);
                    }
                    chain.push(next);
                }
                AfterSymbol::Various => match apart {
                    Some(radius) => {
                        *self.cached_radius(state, alphabet) = Some(radius);
                        return Ok(radius);
                    }
                    None => break self.explored_radius(at, alphabet)?,
                },
            }
        };
        let mut radius = last;
        for &at in chain.iter().rev() {
            *self.cached_radius(at, alphabet) = Some(radius);
            radius = radius.saturating_add(1).min(MAX_RADIUS);
        }
        Ok(self.cached_radius(state, alphabet).unwrap_or(0))
    }

    /// The most NFA states of one terminal in lexer state `state`.
    pub(super) fn largest_group(&self, state: LexId) -> usize {
        self.states[state as usize]
            .chunk_by(|a, b| a.0 == b.0)
            .map(<[_]>::len)
            .max()
            .unwrap_or(0)
    }

    pub(super) fn cached_radius(&mut self, state: LexId, alphabet: Alphabet) -> &mut Option<u8> {
        match alphabet {
            Alphabet::Bytes(a) => &mut self.memo.byte_radius[state as usize][a],
            Alphabet::String => &mut self.memo.string_radius[state as usize],
        }
    }

    /// Where every symbol of `alphabet` leads from `state`.
    pub(super) fn after_any_symbol(
        &mut self,
        state: LexId,
        alphabet: Alphabet,
    ) -> Result<AfterSymbol, MatchError> {
        let mut same = None;
        match alphabet {
            Alphabet::Bytes(a) => {
                let mut memo = StepMemo::default();
                for i in 0..self.alphabet_classes[a].len() {
                    let next = self.next_alike(state, self.alphabet_classes[a][i], &mut memo)?;
                    if self.stops_walk(next) {
                        return Ok(AfterSymbol::Bad);
                    }
                    if same.is_some_and(|s| s != next) {
                        return Ok(AfterSymbol::Various);
                    }
                    same = Some(next);
                }
            }
            Alphabet::String => {
                let mut after = Vec::new();
                if self.after_any_char(state, &mut after, &mut StepMemo::default())? {
                    return Ok(AfterSymbol::Bad);
                }
                match after[..] {
                    [next] => same = Some(next),
                    _ => return Ok(AfterSymbol::Various),
                }
            }
        }
        Ok(same.map_or(AfterSymbol::Bad, AfterSymbol::Same))
    }

    /// The radius of `state` over `alphabet` by breadth-first exploration (see `text_run`).
    /// An exploration that closes (every state reachable survives forever) gives each state
    /// it saw the full radius: a walk goes on into those states and would explore again.
    pub(super) fn explored_radius(
        &mut self,
        state: LexId,
        alphabet: Alphabet,
    ) -> Result<u8, MatchError> {
        let mut closed = Vec::new();
        let radius = match alphabet {
            Alphabet::Bytes(a) => {
                let classes = std::mem::take(&mut self.alphabet_classes[a]);
                let mut memo = StepMemo::default();
                let radius = radius_within(
                    state,
                    &classes,
                    MAX_TEXT_EXPLORED,
                    |s, class| {
                        let next = self.next_alike(s, class, &mut memo)?;
                        Ok((next, self.stops_walk(next)))
                    },
                    &mut closed,
                );
                self.alphabet_classes[a] = classes;
                radius?
            }
            Alphabet::String => {
                let mut memo = StepMemo::default();
                radius_by_successors(
                    state,
                    MAX_STRING_EXPLORED,
                    |s, out| self.after_any_char(s, out, &mut memo),
                    &mut closed,
                )?
            }
        };
        for s in closed {
            *self.cached_radius(s, alphabet) = Some(MAX_RADIUS);
        }
        Ok(radius)
    }

    /// Adds to `after` every state one string character leads to from `state` (each once);
    /// returns whether some character ends or kills the lexeme on the way (`after` is then
    /// incomplete).
    pub(super) fn after_any_char(
        &mut self,
        state: LexId,
        after: &mut Vec<LexId>,
        memo: &mut StepMemo,
    ) -> Result<bool, MatchError> {
        let chars = self.char_classes();
        let whole = through_each_char(
            &chars,
            state,
            |&at, class| {
                let to = self.next_alike(at, class, memo)?;
                Ok((!self.stops_walk(to)).then_some(to))
            },
            |reached| {
                for &to in reached {
                    if !after.contains(&to) {
                        after.push(to);
                    }
                }
                true
            },
        )?;
        Ok(!whole)
    }

    /// Whether a match state is reachable from `set` through bytes of string characters
    /// (any byte from 0x80 on: more paths than UTF-8 allows, which only errs towards "yes"),
    /// read off each member's NFA (see `Terminals::reaches_match_in_strings`).
    pub(super) fn match_reachable_in_strings(&mut self, set: &[(u32, u32)]) -> bool {
        // A terminal that counts its edges may reach a match its counts forbid, or not one
        // they allow; "yes" is the cautious answer.
        set.iter().any(|&(t, s)| {
            self.terminals.uncounted(t, s).is_some()
                || self.terminals.reaches_match_in_strings(t, s)
        })
    }

    /// Whether a control byte (U+0000 to U+001F, which JSON strings escape) kills `state`
    /// after any run of string characters: none of its NFA states reaches, through bytes of
    /// string characters, one that reads a control byte or is a match (see
    /// `Terminals::reaches_control_in_strings`). A token of string characters and then a
    /// control byte, read from a state with the string radius for them, is then rejected
    /// whatever follows (see `mask::lexeme_mask`).
    pub(crate) fn controls_die_in_strings(&mut self, state: LexId) -> bool {
        if let Some(known) = self.memo.controls_die[state as usize] {
            return known;
        }
        let members = &self.states[state as usize];
        let die = !members
            .iter()
            .any(|&(t, s)| self.terminals.reaches_control_in_strings(t, s));
        self.memo.controls_die[state as usize] = Some(die);
        die
    }

    /// The NFA states around `s` of terminal `t` that live through any run of string
    /// characters together, when there are such: the set the first printable ASCII byte `s`
    /// reads leads it back into, from which every character leads back into a set holding
    /// all of it or one holding a state that loops on every character (see
    /// [`Self::loops_on_string_chars`]). A lexer state holding all of them lives through any
    /// run too. The undeclared key of an object has such a set: a loop over the characters
    /// its declared keys use, with the way out to any string on every other character; no one
    /// of its states lives alone. Remembered per NFA state.
    pub(super) fn surviving_group(&mut self, t: u32, s: u32, chars: &CharClasses) -> Option<Group> {
        if let Some(known) = self.memo.surviving_groups.get(&(t, s)) {
            return known.clone();
        }
        let group = self.surviving_group_uncached(t, s, chars);
        self.memo.surviving_groups.insert((t, s), group.clone());
        group
    }

    pub(super) fn surviving_group_uncached(
        &mut self,
        t: u32,
        s: u32,
        chars: &CharClasses,
    ) -> Option<Group> {
        // Only a state reading most of ASCII is looked at (a key's letters are not). A member
        // that counts its edges is new at every count, and runs out at its bound.
        if self.terminals.uncounted(t, s).is_some() {
            return None;
        }
        let (read, first) = self.terminals.ascii_string_bytes_read(t, s);
        if read < ASCII_STRING_BYTES / 2 {
            return None;
        }
        let byte = first?;
        let group = self.terminals.step_set(&[(t, s)], byte);
        if group.binary_search(&(t, s)).is_err() {
            return None;
        }
        let step = |set: &Vec<(u32, u32)>, class: usize| Ok(self.set_after_class(set, class));
        let mut after: Vec<Vec<(u32, u32)>> = Vec::new();
        let collect = |reached: &[Vec<(u32, u32)>]| {
            after.extend(reached.iter().cloned());
            true
        };
        if !through_each_char(chars, group.clone(), step, collect).unwrap_or(false) {
            return None;
        }
        let survives = after.iter().all(|set| {
            holds_all(set, &group)
                || set
                    .iter()
                    .any(|&(tt, ss)| self.loops_on_string_chars(tt, ss, chars))
        });
        survives.then(|| group.into())
    }

    /// The NFA states one byte of `class` leads the members of `set` to, sorted; `None` when
    /// it leads none anywhere.
    pub(super) fn set_after_class(
        &mut self,
        set: &[(u32, u32)],
        class: usize,
    ) -> Option<Vec<(u32, u32)>> {
        let next = self.terminals.step_set(set, self.class_rep[class]);
        (!next.is_empty()).then_some(next)
    }

    /// Whether NFA state `s` of terminal `t` comes back to itself after every string character
    /// (`chars`, from [`Self::char_classes`]): every NFA set a character leads to holds it.
    /// Remembered per NFA state: the same states recur in many lexer states.
    pub(super) fn loops_on_string_chars(&mut self, t: u32, s: u32, chars: &CharClasses) -> bool {
        self.loops_on(t, s, chars, false)
    }

    /// As [`Self::loops_on_string_chars`], for the characters beyond ASCII (`chars`, from
    /// [`Self::non_ascii_char_classes`]).
    pub(super) fn loops_on_non_ascii_chars(&mut self, t: u32, s: u32, chars: &CharClasses) -> bool {
        self.loops_on(t, s, chars, true)
    }

    /// Whether `(t, s)` loops on every character of `chars`, remembered by whether those are
    /// the characters beyond ASCII only.
    pub(super) fn loops_on(
        &mut self,
        t: u32,
        s: u32,
        chars: &CharClasses,
        beyond_ascii: bool,
    ) -> bool {
        if let Some(&loops) = self.memo.loops_in_strings.get(&(t, s, beyond_ascii)) {
            return loops;
        }
        let loops = self.loops_through(t, s, chars);
        self.memo
            .loops_in_strings
            .insert((t, s, beyond_ascii), loops);
        loops
    }

    /// Whether every NFA set a character of `chars` leads `(t, s)` to holds it.
    pub(super) fn loops_through(&mut self, t: u32, s: u32, chars: &CharClasses) -> bool {
        let step = |set: &Vec<(u32, u32)>, class: usize| Ok(self.set_after_class(set, class));
        let holds = |sets: &[Vec<(u32, u32)>]| sets.iter().all(|set| set.contains(&(t, s)));
        through_each_char(chars, vec![(t, s)], step, holds).unwrap_or(false)
    }
}

/// Steps `start` through one string character per UTF-8 sequence of `chars`, byte by byte,
/// the values reached so far moving together (each kept once): where patterns split the UTF-8
/// ranges finely this costs the sum of the classes, not their product. `step` gives the value
/// after a byte class, or `None` where that ends the walk; `reached` gets each sequence's
/// values after its last byte and says whether to go on. `Ok(false)` when either stopped.
pub(super) fn through_each_char<S: PartialEq>(
    chars: &CharClasses,
    start: S,
    mut step: impl FnMut(&S, usize) -> Result<Option<S>, MatchError>,
    mut reached: impl FnMut(&[S]) -> bool,
) -> Result<bool, MatchError> {
    let start = [start];
    let mut values: Vec<S> = Vec::new();
    let mut next: Vec<S> = Vec::new();
    for sequence in chars.iter() {
        for (position, classes) in sequence.iter().enumerate() {
            let from: &[S] = if position == 0 { &start } else { &values };
            for value in from {
                for &class in classes.iter() {
                    let Some(to) = step(value, class)? else {
                        return Ok(false);
                    };
                    if !next.contains(&to) {
                        next.push(to);
                    }
                }
            }
            std::mem::swap(&mut values, &mut next);
            next.clear();
        }
        if !reached(&values) {
            return Ok(false);
        }
    }
    Ok(true)
}
