//! How long a state survives text: the *text radius* lets a trie walk take a whole subtree of
//! text bytes (see `bytes::is_text_byte`) in one step.
//!
//! A state's radius is the largest `r` (capped) such that every string of `r` or fewer text
//! bytes read from it passes only through good states (alive, and for a lexeme walk also not
//! accepting). A subtree of text bytes no deeper than the radius of the state at its root is
//! then allowed token for token, exactly as walking it would find. A string body that loops on
//! text has the full radius; one with a `maxLength` has the characters it has left.

use std::hash::Hash;

use rustc_hash::FxHashSet;

use crate::error::MatchError;

/// The largest radius computed; deeper subtrees are walked.
pub(crate) const MAX_RADIUS: u8 = 64;

/// States explored for one radius before settling for the depth reached so far.
pub(crate) const MAX_EXPLORED: usize = 80;

/// The radius of `start` over an alphabet of classes, exploring breadth first: layer `k`
/// holds the states first reached by `k` symbols. `step(state, class)` returns the next state and
/// whether it is bad. The search stops early, with the full radius, once a layer brings no
/// state not seen before (every longer string then only visits states already found good),
/// and after at most `max_explored` states, with the depth reached so far. When it ends
/// because nothing new was found, `closed` receives every state seen: all of them have the
/// full radius too (what they reach is among them, and good), so a caller can remember it.
pub(crate) fn radius_within<S: Copy + Eq + Hash>(
    start: S,
    text_classes: &[usize],
    max_explored: usize,
    mut step: impl FnMut(S, usize) -> Result<(S, bool), MatchError>,
    closed: &mut Vec<S>,
) -> Result<u8, MatchError> {
    radius_by_successors(
        start,
        max_explored,
        |state, out| {
            for &class in text_classes {
                let (next, bad) = step(state, class)?;
                if bad {
                    return Ok(true);
                }
                out.push(next);
            }
            Ok(false)
        },
        closed,
    )
}

/// [`radius_within`] where one symbol is not one class: `successors(state, out)` pushes the
/// states every symbol leads to (repeats allowed) and returns whether one of them, or a state
/// on the way, is bad.
pub(crate) fn radius_by_successors<S: Copy + Eq + Hash>(
    start: S,
    max_explored: usize,
    mut successors: impl FnMut(S, &mut Vec<S>) -> Result<bool, MatchError>,
    closed: &mut Vec<S>,
) -> Result<u8, MatchError> {
    let mut seen: FxHashSet<S> = FxHashSet::default();
    seen.insert(start);
    let mut layer = vec![start];
    let mut next_layer = Vec::new();
    let mut after = Vec::new();
    for depth in 0..MAX_RADIUS {
        next_layer.clear();
        for &state in &layer {
            after.clear();
            if successors(state, &mut after)? {
                return Ok(depth);
            }
            // A state seen before had every successor checked when it was first reached
            // (at its least depth): only new states go on to the next layer.
            next_layer.extend(after.iter().filter(|&&next| seen.insert(next)));
        }
        if next_layer.is_empty() {
            closed.extend(seen);
            return Ok(MAX_RADIUS);
        }
        if seen.len() > max_explored {
            return Ok(depth + 1);
        }
        std::mem::swap(&mut layer, &mut next_layer);
    }
    Ok(MAX_RADIUS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_radius(
        start: u32,
        classes: &[usize],
        step: impl FnMut(u32, usize) -> Result<(u32, bool), MatchError>,
    ) -> Result<u8, MatchError> {
        radius_within(start, classes, MAX_EXPLORED, step, &mut Vec::new())
    }

    /// States 0..=n of a counter over one class; state n + 1 is bad.
    fn counter(n: u32) -> impl FnMut(u32, usize) -> Result<(u32, bool), MatchError> {
        move |s, _| Ok((s + 1, s + 1 > n))
    }

    #[test]
    fn a_counter_survives_what_it_has_left() {
        assert_eq!(text_radius(0, &[0], counter(5)), Ok(5));
        assert_eq!(text_radius(3, &[0], counter(5)), Ok(2));
        assert_eq!(text_radius(5, &[0], counter(5)), Ok(0));
        assert_eq!(text_radius(0, &[0], counter(1000)), Ok(MAX_RADIUS));
    }

    #[test]
    fn a_loop_survives_forever_and_one_bad_class_ends_it() {
        assert_eq!(
            text_radius(7, &[0, 1], |s, _| Ok((s, false))),
            Ok(MAX_RADIUS)
        );
        // Two states alternating, one class bad from the second.
        let step = |s: u32, c: usize| Ok((1 - s, s == 1 && c == 1));
        assert_eq!(text_radius(0, &[0, 1], step), Ok(1));
        assert_eq!(text_radius(1, &[0, 1], step), Ok(0));
    }

    #[test]
    fn a_closed_search_hands_back_every_state_it_saw() {
        // 0 -> 1 -> 2 -> 0 on class 0, 1 -> 3 on class 1, 3 loops: all good.
        let step = |s: u32, c: usize| {
            let next = match (s, c) {
                (1, 1) | (3, _) => 3,
                _ => (s + 1) % 3,
            };
            Ok((next, false))
        };
        let mut closed = Vec::new();
        assert_eq!(
            radius_within(0, &[0, 1], 80, step, &mut closed),
            Ok(MAX_RADIUS)
        );
        closed.sort_unstable();
        assert_eq!(closed, [0, 1, 2, 3]);
        // Cut short by the exploration bound: nothing is handed back.
        let mut closed = Vec::new();
        assert_eq!(radius_within(0, &[0], 2, counter(1000), &mut closed), Ok(2));
        assert!(closed.is_empty());
    }
}
