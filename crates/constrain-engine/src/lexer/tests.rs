//! The lexer's tests: byte classes, radii, string facts and signatures, each checked against
//! an exploration or a reading of the NFAs.

use regex_syntax::hir::Hir;

use super::radius::StepMemo;
use super::*;
use crate::text_run::{
    radius_by_successors, radius_within, MAX_EXPLORED as MAX_TEXT_EXPLORED, MAX_RADIUS,
};

fn lexer(patterns: &[&str]) -> Lexer {
    let hirs: Vec<Hir> = patterns
        .iter()
        .map(|p| regex_syntax::parse(p).expect("valid pattern"))
        .collect();
    let terminals = hirs.into_iter().map(Terminal::Regex).collect();
    Lexer::new(terminals, &Limits::default(), &Deadline::after(None)).expect("builds")
}

fn read(lexer: &mut Lexer, terminal: u32, text: &[u8]) -> LexId {
    let mut state = lexer.start(&[terminal]).expect("starts");
    for &b in text {
        let class = lexer.byte_classes()[b as usize] as usize;
        state = lexer.next(state, class).expect("within limits");
    }
    state
}

/// The members `state` steps to on `class`, built for that class alone, without looking
/// at or filling the transition table.
fn stepped(lexer: &mut Lexer, state: LexId, class: usize) -> Vec<(u32, u32)> {
    let mut set = Vec::new();
    lexer
        .step_members(state, class, &mut set)
        .expect("within limits");
    set.sort_unstable();
    set.dedup();
    set
}

#[test]
fn a_step_is_shared_only_with_classes_no_member_tells_apart() {
    let mut lexer = lexer(&[
        r#""[^"\\\x00-\x1F]*""#,
        r#""(apple|zebra|mango)""#,
        r#"[a-m]+[0-9]{2}"#,
        r#"[^\x00-\x1F]*"#,
        r#""[^"\\\x00-\x1F]{0,3}x""#,
    ]);
    let classes = lexer.classes();
    let mut states = Vec::new();
    for (terminal, text) in [
        (0, &b"\"ab"[..]),
        (1, b"\"ma"),
        (2, b"abc"),
        (3, b"q\xc3"),
        (4, b"\"a"),
    ] {
        states.push(read(&mut lexer, terminal, text));
    }
    states.push(lexer.start(&[0, 1, 2, 3, 4]).expect("starts"));
    for (i, state) in states.into_iter().enumerate() {
        // From the middle on, up or down: most classes are then reached through a
        // neighbour's run before they are asked for.
        let mut order: Vec<usize> = (0..classes).collect();
        order.rotate_left(classes / 2);
        if i % 2 == 1 {
            order.reverse();
        }
        for class in order {
            let next = lexer.next(state, class).expect("within limits");
            let expected = stepped(&mut lexer, state, class);
            assert_eq!(
                lexer.states[next as usize].as_ref(),
                expected.as_slice(),
                "state {state}, class {class} (byte {})",
                lexer.class_rep[class]
            );
        }
    }
}

#[test]
fn free_in_strings_needs_a_loop_and_no_end_on_string_characters() {
    let mut lexer = lexer(&[
        r#""[^"\\\x00-\x1F]*""#,
        r#""[a-z]*""#,
        r#""[^"\\\x00-\x1F]{0,3}""#,
        r#"[^\x00-\x1F]*"#,
    ]);
    let body = read(&mut lexer, 0, br#""ab"#);
    assert!(
        lexer.free_in_strings(body),
        "a string body loops on every character"
    );
    let ascii = read(&mut lexer, 1, br#""ab"#);
    assert!(!lexer.free_in_strings(ascii), "[a-z] does not loop on 'é'");
    let counted = read(&mut lexer, 2, br#""ab"#);
    assert!(!lexer.free_in_strings(counted), "a counted body runs out");
    let text = read(&mut lexer, 3, b"ab");
    assert!(
        !lexer.free_in_strings(text),
        "free text may end after any character"
    );
    let both = lexer.start(&[0, 1]).expect("starts");
    let both = lexer
        .next(both, lexer.byte_classes()[b'"' as usize] as usize)
        .expect("steps");
    assert!(lexer.free_in_strings(both), "one looping member is enough");
}

#[test]
fn free_in_non_ascii_needs_a_loop_on_every_character_beyond_ascii() {
    let mut lexer = lexer(&[
        r#""[^adilosw"\\\x00-\x1F]*""#,
        r#""[a-zé]*""#,
        r#"[^adilosw\x00-\x1F]*"#,
    ]);
    let without_letters = read(&mut lexer, 0, br#""xyz"#);
    assert!(!lexer.free_in_strings(without_letters), "'a' kills it");
    assert!(
        lexer.free_in_non_ascii(without_letters),
        "it loops on every character beyond ASCII"
    );
    let some_beyond = read(&mut lexer, 1, br#""ab"#);
    assert!(!lexer.free_in_non_ascii(some_beyond), "'ü' kills it");
    let text = read(&mut lexer, 2, b"xyz");
    assert!(
        !lexer.free_in_non_ascii(text),
        "free text may end after any character"
    );
}

#[test]
fn exact_string_radius_needs_every_character_to_lead_alike() {
    let mut lexer = lexer(&[
        r#""[^"\\\x00-\x1F]{0,3}""#,
        r#""[a-z]*[0-9][^"\\\x00-\x1F]{2}""#,
    ]);
    let counted = read(&mut lexer, 0, br#""a"#);
    assert_eq!(lexer.exact_string_radius(counted), Ok(Some(2)));
    let before_digit = read(&mut lexer, 1, br#""ab"#);
    assert_eq!(
        lexer.exact_string_radius(before_digit),
        Ok(None),
        "a digit and a letter lead apart"
    );
    let after_digit = read(&mut lexer, 1, br#""ab7"#);
    assert_eq!(lexer.exact_string_radius(after_digit), Ok(Some(2)));
}

#[test]
fn controls_die_in_strings_only_where_no_string_path_reads_one() {
    let mut lexer = lexer(&[
        r#""[^"\\\x00-\x1F]*"[\t\n ]*,"#,
        r#""[^"\\]*""#,
        r#""[a-z]*\n?""#,
        r#""(?:[^"\\\x00-\x1F]|\\n)*""#,
    ]);
    let body = read(&mut lexer, 0, br#""ab"#);
    assert!(
        lexer.controls_die_in_strings(body),
        "a JSON string body: the newline after its quote is out of reach"
    );
    let raw = read(&mut lexer, 1, br#""ab"#);
    assert!(
        !lexer.controls_die_in_strings(raw),
        "a body that takes raw control bytes"
    );
    let later = read(&mut lexer, 2, br#""ab"#);
    assert!(
        !lexer.controls_die_in_strings(later),
        "a newline some characters on"
    );
    let escaped = read(&mut lexer, 3, br#""ab"#);
    assert!(
        lexer.controls_die_in_strings(escaped),
        "an escape spells a newline with string characters"
    );
    let both = lexer.start(&[0, 1]).expect("starts");
    let both = lexer
        .next(both, lexer.byte_classes()[b'"' as usize] as usize)
        .expect("steps");
    assert!(
        !lexer.controls_die_in_strings(both),
        "one member that reads them is enough"
    );
}

/// A class of scattered three-byte characters: its byte boundaries split the UTF-8
/// continuation range into dozens of classes, so that string characters span thousands
/// of class sequences.
fn scattered_chars() -> String {
    let chars: String = (0..40u32)
        .filter_map(|i| char::from_u32(0x1000 + i * 0x41))
        .collect();
    format!("[{chars}]x")
}

/// The string radius an unbounded exploration of lexer states finds.
fn fully_explored_string_radius(lexer: &mut Lexer, state: LexId) -> u8 {
    let mut memo = StepMemo::default();
    radius_by_successors(
        state,
        usize::MAX,
        |s, out| lexer.after_any_char(s, out, &mut memo),
        &mut Vec::new(),
    )
    .expect("within limits")
}

#[test]
fn a_key_position_takes_the_radius_of_its_undeclared_key() {
    // Declared keys, and an undeclared key that no single NFA state keeps alive (its
    // first character picks a branch), as an object's key position holds them.
    let keys: Vec<String> = (0..30).map(|i| format!(r#""k{i:02}bcdef": 1"#)).collect();
    let undeclared = r#""(?:k[^"\\\x00-\x1F]*|[^"\\\x00-\x1Fk][^"\\\x00-\x1F]*)": 2"#;
    let free_text = r#"[^\x00-\x1F]*"#;
    let mut patterns: Vec<&str> = keys.iter().map(String::as_str).collect();
    patterns.push(undeclared);
    patterns.push(free_text);
    let quote = |lexer: &mut Lexer, terminals: &[u32]| {
        let start = lexer.start(terminals).expect("starts");
        let class = lexer.byte_classes()[b'"' as usize] as usize;
        lexer.next(start, class).expect("steps")
    };
    let declared: Vec<u32> = (0..keys.len() as u32).collect();
    let with_undeclared: Vec<u32> = (0..=keys.len() as u32).collect();

    let mut lexer = lexer(&patterns);
    let position = quote(&mut lexer, &with_undeclared);
    assert!(!lexer.free_in_strings(position), "no member loops alone");
    assert_eq!(lexer.string_radius(position), Ok(MAX_RADIUS));
    let mut fresh = super::tests::lexer(&patterns);
    let position = quote(&mut fresh, &with_undeclared);
    assert_eq!(
        fully_explored_string_radius(&mut fresh, position),
        MAX_RADIUS
    );

    let only_declared = quote(&mut lexer, &declared);
    assert_eq!(lexer.string_radius(only_declared), Ok(0));

    // A member that may end on string characters bounds the state, whatever the others.
    let mut with_text = with_undeclared.clone();
    with_text.push(keys.len() as u32 + 1);
    let position = quote(&mut lexer, &with_text);
    let radius = lexer.string_radius(position).expect("within limits");
    let mut fresh = super::tests::lexer(&patterns);
    let position = quote(&mut fresh, &with_text);
    assert_eq!(radius, fully_explored_string_radius(&mut fresh, position));
    assert!(radius < MAX_RADIUS);
}

#[test]
fn an_exact_string_radius_is_the_characters_a_counted_body_has_left() {
    let mut lexer = lexer(&[
        r#""[^"\\\x00-\x1F]{0,5}""#,
        r#""[a-z]{0,5}""#,
        r#""(?:[^"\\\x00-\x1F]{0,3}|[0-9]{0,9})""#,
        r#""[^"\\\x00-\x1F]*""#,
    ]);
    for (text, left) in [(&br#"""#[..], 5), (br#""ab"#, 3), (br#""abcde"#, 0)] {
        let body = read(&mut lexer, 0, text);
        assert_eq!(
            lexer.exact_string_radius(body),
            Ok(Some(left)),
            "after {text:?}"
        );
    }
    let letters = read(&mut lexer, 1, br#""ab"#);
    assert_eq!(
        lexer.exact_string_radius(letters),
        Ok(None),
        "'é' kills it at once"
    );
    let either = read(&mut lexer, 2, br#""1"#);
    assert_eq!(
        lexer.exact_string_radius(either),
        Ok(None),
        "digits go on after 3"
    );
    let endless = read(&mut lexer, 3, br#""ab"#);
    assert_eq!(lexer.exact_string_radius(endless), Ok(None));
}

#[test]
fn string_radii_do_not_depend_on_how_finely_classes_split_characters() {
    let bodies = [
        r#""[^"\\\x00-\x1F]*""#,
        r#""[^"\\\x00-\x1F]{0,3}""#,
        r#""(?:[a-z]|[^"\\\x00-\x1F]{2}){0,5}""#,
    ];
    let splitter = scattered_chars();
    let mut split = lexer(&[bodies[0], bodies[1], bodies[2], &splitter]);
    assert!(
        split.classes() > 40,
        "the splitter makes {} classes",
        split.classes()
    );
    let mut plain = lexer(&bodies);
    for t in 0..bodies.len() as u32 {
        for text in [&br#"""#[..], br#""a"#, br#""ab"#] {
            let (a, b) = (read(&mut split, t, text), read(&mut plain, t, text));
            assert_eq!(
                split.string_radius(a).expect("within limits"),
                plain.string_radius(b).expect("within limits"),
                "{} after {text:?}",
                bodies[t as usize]
            );
            assert_eq!(split.free_in_strings(a), plain.free_in_strings(b));
        }
    }
    let body = read(&mut split, 0, br#""ab"#);
    assert!(split.free_in_strings(body), "a string body loops");
    assert_eq!(split.string_radius(body), Ok(MAX_RADIUS));
}

/// The radius the generic exploration of lexer states finds.
fn explored_radius(lexer: &mut Lexer, state: LexId) -> u8 {
    let classes = lexer.text_classes().to_vec();
    let step = |s, class| {
        let next = lexer.next(s, class)?;
        Ok((next, next == LEX_DEAD || !lexer.accepts(next).is_empty()))
    };
    radius_within(state, &classes, MAX_TEXT_EXPLORED, step, &mut Vec::new()).expect("within limits")
}

#[test]
fn looping_radius_agrees_with_exploring() {
    let patterns = [
        r#""[^"\\\x00-\x1F]*""#,
        r#"[a-z ]*x{3}[a-z]{0,2}"#,
        r#"(?:[ -~]*|ab{5}c)"#,
        r#"[ -~]*(?:"|[0-9]{3}z)"#,
        r#"[ -~]*abc"#,
        r#""key": "[^"]*""#,
    ];
    let mut checked = 0;
    for (t, _) in patterns.iter().enumerate() {
        for text in [
            &b""[..],
            b"\"",
            b"\"ke",
            b"ab",
            b"abx",
            b"xx",
            b"a1",
            b"a12",
        ] {
            let mut lexer = lexer(&patterns);
            let state = read(&mut lexer, t as u32, text);
            if state == LEX_DEAD || !lexer.accepts(state).is_empty() {
                continue;
            }
            if let Some(radius) = lexer.looping_radius(state) {
                let explored = explored_radius(&mut lexer, state);
                assert_eq!(radius, explored, "{} after {text:?}", patterns[t]);
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "only {checked} looping states checked");
}

#[test]
fn chain_radii_agree_with_exploring() {
    let patterns = [
        r#""[a-z ]{0,100}""#,
        r#""[ -~]{2,20}""#,
        r#"[a-z]{3,40}x"#,
        r#"(?:ab){0,30}c"#,
        r#""(?:[a-z]{0,5}|[0-9]{0,50})""#,
        // Letters and other text lead to different states, all surviving forever.
        r#""(?:[a-z][ -~]|[ -`{-~][ -~]){0,1000}""#,
    ];
    let mut checked = 0;
    for (t, pattern) in patterns.iter().enumerate() {
        for depth in [0usize, 1, 2, 5, 17, 19, 39, 45, 70, 99, 100] {
            let text: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'a', depth))
                .collect();
            // From the start, after the quote, and after `depth` letters.
            for prefix in [&text[..0], &text[..1], &text[..]] {
                let mut chained = lexer(&patterns);
                let state = read(&mut chained, t as u32, prefix);
                if chained.stops_walk(state) {
                    continue;
                }
                // Ask a later state first too, so chains meet radii already known.
                let later = read(&mut chained, t as u32, &text[..text.len().min(3)]);
                if !chained.stops_walk(later) {
                    chained.radius(later, TEXT).expect("within limits");
                }
                let radius = chained.radius(state, TEXT).expect("within limits");
                let mut fresh = lexer(&patterns);
                let state = read(&mut fresh, t as u32, prefix);
                let explored = explored_radius(&mut fresh, state);
                assert_eq!(radius, explored, "{pattern} after {prefix:?}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 60, "only {checked} states checked");
}

#[test]
fn signatures_within_a_depth_read_alike_far_from_a_count_limit() {
    let mut lexer = lexer(&[r#"[a-z]{0,40}""#, r#"[a-z]*""#]);
    let after = |lexer: &mut Lexer, n: usize| read(lexer, 0, "a".repeat(n).as_bytes());
    let (five, ten, thirty_five) = (
        after(&mut lexer, 5),
        after(&mut lexer, 10),
        after(&mut lexer, 35),
    );
    assert_ne!(five, ten, "a lexer state per count");
    // Within 8 bytes, 35 and 30 characters left read alike; 5 left end sooner.
    assert_eq!(lexer.signature(five, 8), lexer.signature(ten, 8));
    assert_ne!(lexer.signature(five, 8), lexer.signature(thirty_five, 8));
    // The whole graphs differ, and so do the graphs within as many bytes as they count.
    assert_ne!(
        lexer.signature(five, u32::MAX),
        lexer.signature(ten, u32::MAX)
    );
    assert_ne!(lexer.signature(five, 31), lexer.signature(ten, 31));
    // A cut graph never reads like the whole one, nor like one cut elsewhere.
    let open = read(&mut lexer, 1, b"ab");
    assert_ne!(lexer.signature(open, 8), lexer.signature(five, 8));
    assert_ne!(lexer.signature(five, 8), lexer.signature(five, 9));
}

#[test]
fn signatures_see_the_future_not_the_past() {
    let mut lexer = lexer(&[
        r#""name": "[a-z ]*""#,
        r#""city": "[a-z ]*""#,
        r#""zip": "[0-9]*""#,
    ]);
    let name = read(&mut lexer, 0, br#""name": "al"#);
    let city = read(&mut lexer, 1, br#""city": "par"#);
    let zip = read(&mut lexer, 2, br#""zip": "75"#);
    assert_ne!(name, city, "different terminals, different lexer states");
    assert_eq!(
        lexer.signature(name, u32::MAX),
        lexer.signature(city, u32::MAX)
    );
    assert_ne!(
        lexer.signature(name, u32::MAX),
        lexer.signature(zip, u32::MAX)
    );
    let key = read(&mut lexer, 0, br#""na"#);
    assert_ne!(
        lexer.signature(key, u32::MAX),
        lexer.signature(name, u32::MAX)
    );
}

#[test]
fn an_undeclared_key_is_free_in_strings_though_no_one_state_loops() {
    // The shape of the keys an object leaves open: a run of printable ASCII (the
    // characters of its declared keys and more), then, on any other character, anything.
    let mut lexer = lexer(&[
        r#""[ !#-\[\]-~]*([^ -~][^"\\\x00-\x1F]*)?""#,
        r#""[ !#-\[\]-~]*""#,
        r#""[ !#-\[\]-~]*([^ -~][^"\\\x00-\x1F]*)?"x"#,
    ]);
    let key = read(&mut lexer, 0, br#""ab"#);
    let chars = lexer.char_classes();
    let members = lexer.states[key as usize].clone();
    assert!(
        members
            .iter()
            .all(|&(t, s)| !lexer.loops_on_string_chars(t, s, &chars)),
        "no one state loops on every character"
    );
    assert!(
        lexer.free_in_strings(key),
        "the ASCII loop and its way out live through any run together"
    );
    assert_eq!(lexer.string_radius(key).expect("within limits"), MAX_RADIUS);
    let ascii = read(&mut lexer, 1, br#""ab"#);
    assert!(
        !lexer.free_in_strings(ascii),
        "without a way out, 'é' kills it"
    );
    let ending = read(&mut lexer, 2, br#""ab"#);
    assert!(
        lexer.free_in_strings(ending),
        "a match after the quote is not reached through string characters"
    );
}

#[test]
fn a_dot_that_leaves_out_the_line_separators_is_free_in_strings() {
    // `^.+@.+$` as JSON text: ECMA-262's `.` matches neither U+2028 nor U+2029.
    let dot = r#"[^"\\\x00-\x1F\x{2028}\x{2029}]"#;
    let mut lexer = lexer(&[
        &format!(r#""{dot}+@{dot}+""#),
        r#""[^"\\\x00-\x1F\x{2029}]*""#,
    ]);
    let address = read(&mut lexer, 0, br#""user@ex"#);
    assert!(lexer.free_in_strings(address));
    assert_eq!(
        lexer.string_radius(address).expect("within limits"),
        MAX_RADIUS
    );
    let one_left_out = read(&mut lexer, 1, br#""ab"#);
    assert!(
        lexer.free_in_strings(one_left_out),
        "U+2029 is not a string character"
    );
    assert!(!crate::bytes::is_string_char('\u{2028}'));
    assert!(crate::bytes::is_string_char('\u{2027}') && crate::bytes::is_string_char('\u{202A}'));
}

#[test]
fn members_living_through_any_text_are_one_part() {
    let mut lexer = lexer(&[
        r#""name": [a-z]+"#,
        r#""nick": [a-z]+"#,
        r#""[^"]*hipchat[^"]*""#,
        r#""[^"]*github[^"]*""#,
        r#""[^"]*jira[^"]*""#,
    ]);
    let quote = lexer.byte_classes()[b'"' as usize] as usize;
    let all = lexer.start(&[0, 1, 2, 3, 4]).expect("starts");
    let key = lexer.next(all, quote).expect("steps");
    let parts = lexer.parts_by_terminal(key, 4).expect("splits");
    let terminals: Vec<Vec<u32>> = parts
        .iter()
        .map(|&part| {
            let mut ts: Vec<u32> = lexer.states[part as usize].iter().map(|m| m.0).collect();
            ts.dedup();
            ts
        })
        .collect();
    assert_eq!(terminals, [vec![0], vec![1], vec![2, 3, 4]]);
    let patterns = lexer.start(&[2, 3, 4]).expect("starts");
    let patterns = lexer.next(patterns, quote).expect("steps");
    assert!(
        lexer
            .parts_by_terminal(patterns, 3)
            .expect("splits")
            .is_empty(),
        "a state of only such members is walked whole"
    );
}

#[test]
fn a_state_of_many_terminals_splits_into_one_part_per_terminal() {
    let mut lexer = lexer(&[r#""name": [a-z]+"#, r#""nick": [a-z]+"#, "[0-9]+", "[a-z]+"]);
    let all = lexer.start(&[0, 1, 2, 3]).expect("starts");
    assert!(lexer.parts_by_terminal(all, 5).expect("splits").is_empty());
    let parts = lexer.parts_by_terminal(all, 4).expect("splits");
    assert_eq!(parts.len(), 4);
    for (t, &part) in parts.iter().enumerate() {
        assert!(lexer.states[part as usize]
            .iter()
            .all(|&(u, _)| u == t as u32));
        assert_eq!(
            part,
            lexer.start(&[t as u32]).expect("starts"),
            "terminal {t}"
        );
    }
    // After `"n`, two terminals are left: fewer than asked for.
    let quote = lexer
        .next(all, lexer.byte_class[usize::from(b'"')] as usize)
        .expect("steps");
    let n = lexer
        .next(quote, lexer.byte_class[usize::from(b'n')] as usize)
        .expect("steps");
    assert!(lexer.parts_by_terminal(n, 3).expect("splits").is_empty());
    assert_eq!(lexer.parts_by_terminal(n, 2).expect("splits").len(), 2);
}
