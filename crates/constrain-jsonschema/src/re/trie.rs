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
        for (c, child) in &self.children {
            alts.push(Re::concat(vec![Re::Literal(c.to_string()), child.set()]));
        }
        Re::alt(alts)
    }

    /// The strings outside the set: those that stop at a node that ends no word, and those
    /// that leave the trie (a path, then a character no word continues with, then anything).
    /// The trailing "anything" is shared, which keeps the expression as small as the trie.
    fn complement(&self) -> Re {
        Re::alt(vec![
            self.unfinished(),
            Re::concat(vec![self.departures(), Re::any_string()]),
        ])
    }

    /// Paths to nodes that end no word.
    fn unfinished(&self) -> Re {
        let mut alts = Vec::with_capacity(self.children.len() + 1);
        if !self.end {
            alts.push(Re::empty());
        }
        for (c, child) in &self.children {
            alts.push(Re::concat(vec![
                Re::Literal(c.to_string()),
                child.unfinished(),
            ]));
        }
        Re::alt(alts)
    }

    /// A path followed by a character that leaves the trie.
    fn departures(&self) -> Re {
        let mut alts = Vec::with_capacity(self.children.len() + 1);
        let firsts = CharSet::from_ranges(self.children.keys().map(|&c| (c as u32, c as u32)));
        alts.push(Re::class(firsts.complement()));
        for (c, child) in &self.children {
            alts.push(Re::concat(vec![
                Re::Literal(c.to_string()),
                child.departures(),
            ]));
        }
        Re::alt(alts)
    }
}

impl Re {
    /// Exactly the given strings.
    pub(crate) fn one_of_strings(strings: &[String]) -> Re {
        Trie::build(strings).set()
    }

    /// Every string except the given ones.
    pub(crate) fn not_in(strings: &[String]) -> Re {
        Trie::build(strings).complement()
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
}
