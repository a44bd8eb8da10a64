//! Finite sets of strings as prefix-shared expressions: the set itself (enums, property names)
//! and its complement (keys that are not declared, strings other than the excluded ones).

use std::collections::BTreeMap;

use super::{CharSet, Re};

#[derive(Default)]
struct Trie {
    end: bool,
    children: BTreeMap<char, Trie>,
}

impl Trie {
    fn build(strings: &[String]) -> Trie {
        let mut root = Trie::default();
        for s in strings {
            let mut node = &mut root;
            for c in s.chars() {
                node = node.children.entry(c).or_default();
            }
            node.end = true;
        }
        root
    }

    fn set(&self) -> Re {
        let mut alts = Vec::with_capacity(self.children.len() + 1);
        if self.end {
            alts.push(Re::empty());
        }
        for (&c, child) in &self.children {
            alts.push(prefixed(c.to_string(), child.set()));
        }
        trie_alt(alts)
    }

    /// The strings outside the set: those with a character outside a small alphabet (a
    /// run of alphabet characters, that character, then anything), and those within the
    /// alphabet that stop at a node that ends no word or leave the trie (a path, then an
    /// alphabet character no word continues with there, then anything).
    ///
    /// `alphabet` is printable ASCII but the quote and the backslash, and every character a
    /// word uses. Each node's departure class is kept to it: the rest of the
    /// characters, which as JSON text is the large part (escapes, raw multi-byte characters,
    /// `\u` escapes, surrogate pairs), is spelled once for the whole set instead of once per
    /// node. A fixed alphabet keeps the departure classes the same from one set to the next,
    /// so their spellings are reused; without the two escaped characters the canonical
    /// spelling of a departure class is a single character class.
    /// The trailing "anything" is shared, which keeps the expression as small as the trie.
    fn complement(&self, alphabet: &CharSet) -> Re {
        Re::alt(vec![
            Re::concat(vec![
                Re::repeat(Re::class(alphabet.clone()), 0, None),
                Re::class(alphabet.complement()),
                Re::any_string(),
            ]),
            self.unfinished(),
            Re::concat(vec![self.departures(alphabet), Re::any_string()]),
        ])
    }

    /// Paths to nodes that end no word.
    fn unfinished(&self) -> Re {
        let mut alts = Vec::with_capacity(self.children.len() + 1);
        if !self.end {
            alts.push(Re::empty());
        }
        for (&c, child) in &self.children {
            let rest = child.unfinished();
            if !rest.is_nothing() {
                alts.push(prefixed(c.to_string(), rest));
            }
        }
        trie_alt(alts)
    }

    /// A path followed by a character of `alphabet` that leaves the trie.
    fn departures(&self, alphabet: &CharSet) -> Re {
        let mut alts = Vec::with_capacity(self.children.len() + 1);
        let firsts = CharSet::from_ranges(self.children.keys().map(|&c| (c as u32, c as u32)));
        let leaving = alphabet.difference(&firsts);
        if !leaving.is_empty() {
            alts.push(Re::Class(leaving));
        }
        for (&c, child) in &self.children {
            alts.push(prefixed(c.to_string(), child.departures(alphabet)));
        }
        trie_alt(alts)
    }
}

/// `path` then `rest`, as [`Re::concat`] would simplify it: `rest` is never nothing here.
fn prefixed(path: String, rest: Re) -> Re {
    match rest {
        Re::Literal(tail) => Re::Literal(path + &tail),
        Re::Concat(mut parts) => {
            if let Some(Re::Literal(head)) = parts.first_mut() {
                head.insert_str(0, &path);
            } else {
                parts.insert(0, Re::Literal(path));
            }
            Re::Concat(parts)
        }
        other => Re::Concat(vec![Re::Literal(path), other]),
    }
}

/// The alternation of one trie level's branches, which start with distinct characters (or
/// are the empty string or a departure class): no duplicates to remove, nothing nested.
fn trie_alt(mut alts: Vec<Re>) -> Re {
    match alts.len() {
        0 => Re::nothing(),
        1 => alts.pop().unwrap_or_else(Re::nothing),
        _ => Re::Alt(alts),
    }
}

impl Re {
    /// Exactly the given strings.
    pub(crate) fn one_of_strings(strings: &[String]) -> Re {
        Trie::build(strings).set()
    }

    /// Every string except the given ones.
    pub(crate) fn not_in(strings: &[String]) -> Re {
        Trie::build(strings).complement(&complement_alphabet(strings))
    }
}

/// The alphabet of the complement of `strings` (see `Trie::complement`): printable ASCII but
/// the quote and the backslash, and every character of `strings`.
fn complement_alphabet(strings: &[String]) -> CharSet {
    let used = CharSet::from_ranges(
        strings
            .iter()
            .flat_map(|s| s.chars())
            .map(|c| (c as u32, c as u32)),
    );
    used.union(&CharSet::from_ranges([
        (0x20, 0x21),
        (0x23, 0x5B),
        (0x5D, 0x7E),
    ]))
}

/// A trie laid out flat, the root first, and the alphabet of its complement: what an
/// automaton of the complement is built from (`json_text::quoted_not_in`).
pub(crate) struct FlatTrie {
    /// Per node: whether a word ends there, and its children by character.
    pub(crate) nodes: Vec<(bool, Vec<(char, u32)>)>,
    /// As in `Trie::complement`: a node's departures are the characters of this set no
    /// word continues with there; a string with a character outside it is in the complement.
    pub(crate) alphabet: CharSet,
}

impl FlatTrie {
    pub(crate) fn of(strings: &[String]) -> FlatTrie {
        fn flatten(node: &Trie, out: &mut Vec<(bool, Vec<(char, u32)>)>) -> u32 {
            let at = out.len();
            out.push((node.end, Vec::with_capacity(node.children.len())));
            for (&c, child) in &node.children {
                let id = flatten(child, out);
                out[at].1.push((c, id));
            }
            at as u32
        }
        let mut nodes = Vec::new();
        flatten(&Trie::build(strings), &mut nodes);
        FlatTrie {
            nodes,
            alphabet: complement_alphabet(strings),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::re::dfa::Dfa;

    #[test]
    fn set_and_complement() {
        let words: Vec<String> = ["ab", "abc", "b", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let set = Dfa::from_re(&Re::one_of_strings(&words)).expect("small");
        let not = Dfa::from_re(&Re::not_in(&words)).expect("small");
        for w in ["ab", "abc", "b", "", "a", "abcd", "ba", "c", "bb"] {
            let member = words.iter().any(|x| x == w);
            assert_eq!(set.matches(w), member, "{w}");
            assert_eq!(not.matches(w), !member, "{w}");
        }
    }

    #[test]
    fn complement_holds_for_every_short_string() {
        let sets: [&[&str]; 5] = [
            &["ab", "abc", "b", "é"],
            &["name", "namespace", "kind"],
            &["a\"b", "\\", "b"],
            &[""],
            &[],
        ];
        let alphabet = ['a', 'b', 'c', 'é', 'z', '😀', 'n', '\n', '"', '\\'];
        for words in sets {
            let words: Vec<String> = words.iter().map(|s| s.to_string()).collect();
            let not = Dfa::from_re(&Re::not_in(&words)).expect("small");
            // Every string of up to four characters of `alphabet`, and the words.
            let mut strings = vec![String::new()];
            let mut layer = strings.clone();
            for _ in 0..4 {
                layer = layer
                    .iter()
                    .flat_map(|s| alphabet.iter().map(move |&c| format!("{s}{c}")))
                    .collect();
                strings.extend(layer.iter().cloned());
            }
            strings.extend(words.iter().cloned());
            for s in &strings {
                assert_eq!(not.matches(s), !words.contains(s), "{words:?}: {s:?}");
            }
        }
    }
}
