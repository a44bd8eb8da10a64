//! DFA minimization by Hopcroft's partition refinement (Hopcroft 1971; the block-splitter
//! formulation of Valmari and Lehtinen 2008): `O(k n log n)` for `n` states and `k` alphabet
//! classes.
//!
//! Moore's round-by-round refinement needs as many rounds as the longest chain of states that
//! only their distance to the end tells apart, and length bounds are exactly such chains
//! (`maxLength: 255` counts 255 states): it is quadratic there. Hopcroft's refinement splits
//! blocks by the predecessors of one splitter at a time and only ever queues the smaller half
//! of a split block.
//!
//! Transitions are labelled with character ranges; the refinement works on the elementary
//! intervals that all the ranges' bounds cut the alphabet into, with an explicit sink state
//! standing for the missing transitions.

/// Most cells of the dense transition table (states x intervals); a larger automaton is left
/// unminimized, which keeps its language.
const MAX_TABLE_CELLS: usize = 8 << 20;

/// The class of every state of the automaton `(trans, accepting)` (same class = same
/// language), or `None` when `late` said to stop or the table would be too large. Classes
/// are numbered from 0, not necessarily densely.
pub(super) fn state_classes(
    trans: &[Vec<(u32, u32, u32)>],
    accepting: &[bool],
    late: impl Fn() -> bool,
) -> Option<Vec<u32>> {
    let n = trans.len();
    let sink = n as u32;
    let states = n + 1;
    let intervals = elementary_intervals(trans);
    let classes = intervals.len();
    if states.saturating_mul(classes) > MAX_TABLE_CELLS {
        return None;
    }
    // Dense table: the target of every state on every interval (the sink when missing).
    let mut delta = vec![sink; states * classes];
    for (s, ranges) in trans.iter().enumerate() {
        let row = &mut delta[s * classes..(s + 1) * classes];
        for &(lo, hi, t) in ranges {
            let first = intervals.partition_point(|&start| start <= lo) - 1;
            let last = intervals.partition_point(|&start| start <= hi) - 1;
            row[first..=last].fill(t);
        }
    }
    let inverse = Inverse::new(&delta, states, classes);

    let mut partition = Partition::new(states, |s| s < n && accepting[s]);
    let mut pending: Vec<u32> = (0..partition.blocks() as u32).collect();
    let mut queued = vec![true; partition.blocks()];
    let mut touched: Vec<u32> = Vec::new();
    let mut steps = 0usize;
    while let Some(splitter) = pending.pop() {
        queued[splitter as usize] = false;
        steps += 1;
        if steps % 256 == 0 && late() {
            return None;
        }
        // The splitter's members, copied: splits below move states between blocks.
        let members: Vec<u32> = partition.members(splitter).to_vec();
        for class in 0..classes {
            for &target in &members {
                for &source in inverse.sources(class, target) {
                    partition.mark(source, &mut touched);
                }
            }
            for block in touched.drain(..) {
                if let Some(new_block) = partition.split_marked(block) {
                    queued.push(false);
                    // Queue the smaller half, or the new one when the old is queued anyway.
                    let smaller = if queued[block as usize]
                        || partition.size(new_block) <= partition.size(block)
                    {
                        new_block
                    } else {
                        block
                    };
                    if !queued[smaller as usize] {
                        queued[smaller as usize] = true;
                        pending.push(smaller);
                    }
                }
            }
        }
    }
    Some(partition.block_of[..n].to_vec())
}

/// The starts of the intervals that every range bound cuts the scalar values into, sorted;
/// the first is 0, so every value falls in one of them.
fn elementary_intervals(trans: &[Vec<(u32, u32, u32)>]) -> Vec<u32> {
    let mut starts = vec![0u32];
    for ranges in trans {
        for &(lo, hi, _) in ranges {
            starts.push(lo);
            if let Some(after) = hi.checked_add(1) {
                starts.push(after);
            }
        }
    }
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// The sources of every `(interval, target)` transition, in one flat array.
struct Inverse {
    /// `offsets[class * (states + 1) + target]` .. the next one: the range of `sources`.
    offsets: Vec<u32>,
    sources: Vec<u32>,
    states: usize,
}

impl Inverse {
    fn new(delta: &[u32], states: usize, classes: usize) -> Inverse {
        let stride = states + 1;
        let mut offsets = vec![0u32; classes * stride + 1];
        for s in 0..states {
            for class in 0..classes {
                offsets[class * stride + delta[s * classes + class] as usize + 1] += 1;
            }
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut fill = offsets.clone();
        let mut sources = vec![0u32; states * classes];
        for s in 0..states {
            for class in 0..classes {
                let slot = &mut fill[class * stride + delta[s * classes + class] as usize];
                sources[*slot as usize] = s as u32;
                *slot += 1;
            }
        }
        Inverse {
            offsets,
            sources,
            states,
        }
    }

    fn sources(&self, class: usize, target: u32) -> &[u32] {
        let at = class * (self.states + 1) + target as usize;
        &self.sources[self.offsets[at] as usize..self.offsets[at + 1] as usize]
    }
}

/// A partition of the states into blocks, each a contiguous slice of `elements`; marked
/// states are gathered at the front of their block.
struct Partition {
    elements: Vec<u32>,
    position: Vec<u32>,
    block_of: Vec<u32>,
    /// Per block: its slice of `elements` and how many of its states are marked.
    start: Vec<u32>,
    end: Vec<u32>,
    marked: Vec<u32>,
}

impl Partition {
    /// Two blocks (one if every state is on the same side): the states `first` holds, then
    /// the others.
    fn new(states: usize, first: impl Fn(usize) -> bool) -> Partition {
        let mut elements: Vec<u32> = (0..states as u32).filter(|&s| first(s as usize)).collect();
        let split = elements.len() as u32;
        elements.extend((0..states as u32).filter(|&s| !first(s as usize)));
        let mut position = vec![0u32; states];
        for (at, &s) in elements.iter().enumerate() {
            position[s as usize] = at as u32;
        }
        let total = states as u32;
        let (start, end) = if split == 0 || split == total {
            (vec![0], vec![total])
        } else {
            (vec![0, split], vec![split, total])
        };
        let mut block_of = vec![0u32; states];
        if start.len() == 2 {
            for &s in &elements[split as usize..] {
                block_of[s as usize] = 1;
            }
        }
        let marked = vec![0; start.len()];
        Partition {
            elements,
            position,
            block_of,
            start,
            end,
            marked,
        }
    }

    fn blocks(&self) -> usize {
        self.start.len()
    }

    fn size(&self, block: u32) -> u32 {
        self.end[block as usize] - self.start[block as usize]
    }

    fn members(&self, block: u32) -> &[u32] {
        &self.elements[self.start[block as usize] as usize..self.end[block as usize] as usize]
    }

    /// Marks `state` (once), noting its block in `touched` when it is the block's first mark.
    fn mark(&mut self, state: u32, touched: &mut Vec<u32>) {
        let block = self.block_of[state as usize] as usize;
        let at = self.position[state as usize];
        let first_unmarked = self.start[block] + self.marked[block];
        if at < first_unmarked {
            return;
        }
        if self.marked[block] == 0 {
            touched.push(block as u32);
        }
        let other = self.elements[first_unmarked as usize];
        self.elements.swap(at as usize, first_unmarked as usize);
        self.position[other as usize] = at;
        self.position[state as usize] = first_unmarked;
        self.marked[block] += 1;
    }

    /// Moves the marked states of `block` into a new block, unless all or none are marked;
    /// clears the marks either way.
    fn split_marked(&mut self, block: u32) -> Option<u32> {
        let b = block as usize;
        let marked = std::mem::take(&mut self.marked[b]);
        if marked == 0 || marked == self.end[b] - self.start[b] {
            return None;
        }
        let new_block = self.start.len() as u32;
        let (from, to) = (self.start[b], self.start[b] + marked);
        self.start.push(from);
        self.end.push(to);
        self.marked.push(0);
        self.start[b] = to;
        for &s in &self.elements[from as usize..to as usize] {
            self.block_of[s as usize] = new_block;
        }
        Some(new_block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Moore's refinement, round by round until nothing splits: the oracle.
    fn moore_classes(trans: &[Vec<(u32, u32, u32)>], accepting: &[bool]) -> Vec<u32> {
        let mut class: Vec<u32> = accepting.iter().map(|&a| u32::from(a)).collect();
        loop {
            let mut signatures = std::collections::HashMap::new();
            let next: Vec<u32> = (0..trans.len())
                .map(|s| {
                    // Per character of a small alphabet: the target's class, or none.
                    let sig: Vec<Option<u32>> = (0..8u32)
                        .map(|c| {
                            trans[s]
                                .iter()
                                .find(|&&(lo, hi, _)| lo <= c && c <= hi)
                                .map(|&(_, _, t)| class[t as usize])
                        })
                        .collect();
                    let len = signatures.len() as u32;
                    *signatures.entry((class[s], sig)).or_insert(len)
                })
                .collect();
            let same = same_partition(&next, &class);
            class = next;
            if same {
                return class;
            }
        }
    }

    fn same_partition(a: &[u32], b: &[u32]) -> bool {
        let mut pairs = std::collections::HashMap::new();
        let mut back = std::collections::HashMap::new();
        a.iter()
            .zip(b)
            .all(|(x, y)| *pairs.entry(x).or_insert(y) == y && *back.entry(y).or_insert(x) == x)
    }

    /// A small generator, so the test needs no crate for randomness.
    struct Lcg(u64);
    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    #[test]
    fn hopcroft_finds_moores_partition_on_random_automata() {
        let mut rng = Lcg(1);
        for _ in 0..2000 {
            let n = 1 + rng.below(12) as usize;
            let trans: Vec<Vec<(u32, u32, u32)>> = (0..n)
                .map(|_| {
                    // Disjoint sorted ranges over 0..8, some characters missing.
                    let mut out = Vec::new();
                    let mut c = 0u32;
                    while c < 8 {
                        let hi = (c + rng.below(3) as u32).min(7);
                        if rng.below(4) != 0 {
                            out.push((c, hi, rng.below(n as u64) as u32));
                        }
                        c = hi + 1;
                    }
                    out
                })
                .collect();
            let accepting: Vec<bool> = (0..n).map(|_| rng.below(3) == 0).collect();
            let fast = state_classes(&trans, &accepting, || false).expect("no deadline");
            // Moore's oracle on the same automaton with the missing transitions made explicit.
            let mut full = trans.clone();
            for ranges in &mut full {
                let mut filled = Vec::new();
                let mut c = 0u32;
                for &(lo, hi, t) in ranges.iter() {
                    if c < lo {
                        filled.push((c, lo - 1, n as u32));
                    }
                    filled.push((lo, hi, t));
                    c = hi + 1;
                }
                if c < 8 {
                    filled.push((c, 7, n as u32));
                }
                *ranges = filled;
            }
            full.push(vec![(0, 7, n as u32)]);
            let mut with_sink = accepting.clone();
            with_sink.push(false);
            let slow = moore_classes(&full, &with_sink);
            assert!(
                same_partition(&fast, &slow[..n]),
                "{trans:?} {accepting:?}: {fast:?} vs {slow:?}"
            );
        }
    }

    #[test]
    fn a_long_counting_chain_keeps_one_class_per_distance_to_its_end() {
        // Strings of at most 4,000 'a's, written with a redundant twin for every state.
        let n = 8_000u32;
        let trans: Vec<Vec<(u32, u32, u32)>> = (0..n)
            .map(|s| {
                let next = s + 2;
                if next < n {
                    vec![(97, 97, next ^ (s & 1))]
                } else {
                    Vec::new()
                }
            })
            .collect();
        let accepting = vec![true; n as usize];
        let classes = state_classes(&trans, &accepting, || false).expect("no deadline");
        let distinct: std::collections::HashSet<u32> = classes.iter().copied().collect();
        assert_eq!(distinct.len(), 4_000);
        assert_eq!(classes[0], classes[1]);
        assert_ne!(classes[0], classes[2]);
    }
}
