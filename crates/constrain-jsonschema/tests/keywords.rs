//! Keyword by keyword: schemas compiled and run through the engine, with documents that must
//! be accepted and documents that must be rejected (each spelled compactly and like
//! `json.dumps`).

mod common;

use common::{byte_index, Checked};
use constrain_engine::{Expr, Grammar, RegexGraph};
use constrain_jsonschema::{Escapes, Numbers, Options, PropertyOrder};
use serde_json::{json, Value};

/// The default options, with every spelling of a number the specification allows: these tests
/// are about which values a keyword admits (the spellings generation keeps to are in
/// `tests/numbers.rs`).
fn spec() -> Options {
    Options {
        numbers: Numbers::Any,
        ..Options::default()
    }
}

fn check_with(options: &Options, schema: Value, valid: &[Value], invalid: &[Value]) {
    let index = byte_index();
    let c = Checked::new(&index, &schema, options)
        .unwrap_or_else(|e| panic!("{schema} does not compile: {e}"));
    for v in valid {
        assert_eq!(c.accepts(v), (true, true), "{schema}: should accept {v}");
    }
    for v in invalid {
        assert_eq!(c.accepts(v), (false, false), "{schema}: should reject {v}");
    }
}

fn check(schema: Value, valid: &[Value], invalid: &[Value]) {
    check_with(&spec(), schema, valid, invalid);
}

/// The plain cases of `tests/data/keywords/*.json`, in the JSON-Schema-Test-Suite's format
/// (groups of a schema and documents marked `valid`): each schema compiled with [`spec`], each document accepted or rejected as marked, in both spellings. Every failing
/// document is listed, by file, group and test.
#[test]
fn keyword_cases_from_data_files() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/keywords");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no case files in {}", dir.display());
    let index = byte_index();
    let (mut failures, mut documents) = (Vec::new(), 0);
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a readable case file");
        let groups: Vec<Value> = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not a list of case groups: {e}", file.display()));
        for group in &groups {
            let name = format!("{}: {}", file.display(), group["description"]);
            let c = match Checked::new(&index, &group["schema"], &spec()) {
                Ok(c) => c,
                Err(e) => {
                    failures.push(format!("{name}: does not compile: {e}"));
                    continue;
                }
            };
            for test in group["tests"].as_array().expect("a `tests` array") {
                documents += 1;
                let valid = test["valid"].as_bool().expect("a boolean `valid`");
                let want = (valid, valid);
                let got = c.accepts(&test["data"]);
                if got != want {
                    failures.push(format!(
                        "{name}, {}: {} should be {}, got {got:?} (compact, json.dumps)",
                        test["description"],
                        test["data"],
                        if valid { "accepted" } else { "rejected" }
                    ));
                }
            }
        }
    }
    assert!(documents > 0, "the case files hold no documents");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn any_order() -> Options {
    Options {
        property_order: PropertyOrder::Any,
        ..spec()
    }
}

fn grammar_in_any_order(schema: &Value) -> Grammar {
    constrain_jsonschema::compile(schema, &any_order())
        .unwrap_or_else(|e| panic!("{schema} does not compile: {e}"))
        .grammar
}

#[test]
fn one_of_with_overlapping_object_branches_is_exact() {
    let schema = json!({
        "type": "object",
        "oneOf": [
            {"properties": {"radius": {"type": "number"}}, "required": ["radius"]},
            {"properties": {"length": {"type": "number"}, "width": {"type": "number"}}, "required": ["length", "width"]}
        ]
    });
    check_with(
        &any_order(),
        schema,
        &[
            json!({"radius": 5.0}),
            json!({"length": 1, "width": 2}),
            json!({"radius": 1, "length": 2}),
        ],
        &[
            json!({"radius": 1, "length": 2, "width": 3}),
            json!({}),
            json!({"radius": "x"}),
        ],
    );
}

#[test]
fn one_of_in_schema_order() {
    let schema = json!({"properties": {"dimensions": {"oneOf": [{"properties": {"radius": {"type": "number"}}, "required": ["radius"]}, {"properties": {"length": {"type": "number"}, "width": {"type": "number"}}, "required": ["length", "width"]}], "type": "object"}}});
    check(schema, &[json!({"dimensions": {"radius": 5.0}})], &[]);
}

#[test]
fn types() {
    check(
        json!({"type": "integer"}),
        &[
            json!(0),
            json!(-12),
            json!(1.0),
            json!(12345678901234567890u64),
        ],
        &[json!(1.5), json!("1"), json!(null)],
    );
    check(
        json!({"type": "string"}),
        &[json!(""), json!("héllo \"q\" \\ \n\t😀\u{1}")],
        &[json!(1), json!(null)],
    );
}

#[test]
fn json_spellings() {
    let index = byte_index();
    let c = Checked::new(
        &index,
        &json!({"type": "string", "enum": ["é/\"x"]}),
        &spec(),
    )
    .expect("compiles");
    for text in [r#""é/\"x""#, r#""\u00e9\/\u0022x""#, r#""\u00E9/\"\u0078""#] {
        assert!(c.accepts_text(text), "{text}");
    }
    assert!(!c.accepts_text(r#""e/\"x""#));
    let c = Checked::new(&index, &json!({"type": "integer"}), &spec()).expect("compiles");
    for text in ["0", "-0", "10", "10.0", "10.000", " 7 "] {
        assert!(c.accepts_text(text), "{text}");
    }
    for text in ["01", "1.", ".5", "+1", "1e2", "- 1"] {
        assert!(!c.accepts_text(text), "{text}");
    }
    let c = Checked::new(&index, &json!({"type": "number"}), &spec()).expect("compiles");
    for text in ["1e2", "-1.5E-3", "0.0", "1E+9"] {
        assert!(c.accepts_text(text), "{text}");
    }
    let c = Checked::new(
        &index,
        &json!({"type": "string", "minLength": 2, "maxLength": 2}),
        &spec(),
    )
    .expect("compiles");
    assert!(
        c.accepts_text(r#""\ud83d\ude00x""#),
        "a surrogate pair is one character"
    );
    assert!(
        !c.accepts_text(r#""\ud83dx""#),
        "lone surrogates are not text"
    );
}

#[test]
fn enum_and_const() {
    check_with(
        &any_order(),
        json!({"const": {"a": 1, "b": 2}}),
        &[json!({"a": 1, "b": 2}), json!({"b": 2, "a": 1})],
        &[json!({"a": 1}), json!({"a": 1, "b": 2, "c": 3})],
    );
}

#[test]
fn numeric_bounds() {
    check(
        json!({"type": "integer", "minimum": 18446744073709551615u64}),
        &[json!(18446744073709551615u64)],
        &[json!(18446744073709551614u64)],
    );
}

/// A `maxLength` of 64 or more is its characters counted by the engine, from the first
/// character to the last, in any script and with escapes.
#[test]
fn long_length_bounds_are_exact() {
    let text = |n: usize| "é".repeat(n / 2) + &"a".repeat(n - n / 2);
    check(
        json!({"type": "string", "minLength": 70, "maxLength": 100}),
        &[
            json!(text(70)),
            json!(text(100)),
            json!(format!("\"\\\n{}", text(97))),
            json!("😀".repeat(100)),
        ],
        &[json!(text(69)), json!(text(101)), json!("😀".repeat(101))],
    );
    check(
        json!({"type": "string", "maxLength": 64}),
        &[json!(""), json!(text(64))],
        &[json!(text(65))],
    );
    check(
        json!({"type": "string", "pattern": "^[a-z]+$", "minLength": 3, "maxLength": 80}),
        &[json!("abc"), json!("z".repeat(80))],
        &[json!("ab"), json!("z".repeat(81)), json!("abc1")],
    );
}

/// Whether some sequence in `expr` has a regular part that may end after any number of
/// characters before another part: a lexeme of its own that ends anywhere.
fn ends_anywhere_before_more(expr: &Expr) -> bool {
    fn unbounded(e: &Expr) -> bool {
        match e {
            Expr::Regex(h) => h.properties().maximum_len().is_none(),
            Expr::Seq(parts) | Expr::Alt(parts) => parts.iter().any(unbounded),
            Expr::Repeat { expr, max, .. } => max.is_none() || unbounded(expr),
            _ => false,
        }
    }
    match expr {
        Expr::Seq(parts) => {
            parts.iter().rev().skip(1).any(unbounded) || parts.iter().any(ends_anywhere_before_more)
        }
        Expr::Alt(parts) => parts.iter().any(ends_anywhere_before_more),
        Expr::Repeat { expr, .. } => ends_anywhere_before_more(expr),
        _ => false,
    }
}

/// A string whose text ends in an unbounded part (`[a-z]*`, `(x+/?)+`, the rest after a
/// `minLength`) has that part in one expression with the closing quote: on its own, the
/// part would be a lexeme that may end before every character, a second scan waiting for
/// the quote all through the string.
#[test]
fn patterns_ending_unbounded_are_one_lexeme_with_their_quotes() {
    let schemas = [
        json!({"type": "string", "pattern": "^[A-Z][a-z]*$"}),
        json!({"type": "string", "pattern": "^(/)?([^/]+(/)?)+$"}),
        json!({"type": "string", "pattern": "^https://.+$"}),
        json!({"type": "string", "minLength": 20}),
        json!({"type": "string", "pattern": "^[a-z]{2,4}-.*$"}),
    ];
    for schema in schemas {
        let compiled = constrain_jsonschema::compile(&schema, &spec())
            .unwrap_or_else(|e| panic!("{schema} does not compile: {e}"));
        assert!(
            !compiled
                .grammar
                .rules()
                .any(|(_, _, body)| ends_anywhere_before_more(body)),
            "{schema}"
        );
    }
}

/// Declared members in schema order are a chain of rules in which a member that may be
/// absent and the same member present go on with one rule, named once: `(, m)? R`, not
/// `R | , m R`. Inlined, a rule named twice is copied twice, so twelve optional members
/// would make 4,096 copies of the last one.
#[test]
fn optional_members_in_schema_order_name_what_follows_once() {
    fn rules_named(expr: &Expr, out: &mut Vec<constrain_engine::RuleId>) {
        match expr {
            Expr::Rule(r) => out.push(*r),
            _ => parts_of(expr).into_iter().for_each(|p| rules_named(p, out)),
        }
    }
    let properties: serde_json::Map<String, Value> = (0..12)
        .map(|i| (format!("p{i}"), json!({"type": "string", "maxLength": 8})))
        .collect();
    let schema = json!({
        "type": "object", "properties": properties, "required": ["p5"],
        "additionalProperties": false
    });
    let compiled = constrain_jsonschema::compile(&schema, &spec())
        .unwrap_or_else(|e| panic!("{schema} does not compile: {e}"));
    let chain: Vec<_> = compiled
        .grammar
        .rules()
        .filter(|(_, name, _)| name.starts_with("members-"))
        .collect();
    assert!(chain.len() >= 12);
    for (_, name, body) in chain {
        let mut named = Vec::new();
        rules_named(body, &mut named);
        let before = named.len();
        named.sort();
        named.dedup();
        assert_eq!(named.len(), before, "{name} names a rule twice: {body:?}");
    }
    let doc = |keys: &[usize]| {
        let members: Vec<String> = keys.iter().map(|i| format!("\"p{i}\":\"x\"")).collect();
        format!("{{{}}}", members.join(","))
    };
    let checked = Checked::new(&byte_index(), &schema, &spec())
        .unwrap_or_else(|e| panic!("{schema} does not compile: {e}"));
    for keys in [
        &[5][..],
        &[0, 5],
        &[5, 11],
        &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    ] {
        assert!(checked.accepts_text(&doc(keys)), "{}", doc(keys));
    }
    for keys in [&[][..], &[0], &[5, 0], &[0, 5, 5]] {
        assert!(!checked.accepts_text(&doc(keys)), "{}", doc(keys));
    }
}

/// Members with equal sets of numbers name one rule: the 64-bit range every canonical
/// integer spells is written once, and the engine's lowering shares its lexeme.
#[test]
fn equal_number_sets_are_one_rule() {
    let properties: serde_json::Map<String, Value> = (0..10)
        .map(|i| (format!("n{i}"), json!({"type": "integer"})))
        .chain([("m".to_string(), json!({"type": "integer", "minimum": 1}))])
        .collect();
    let schema = json!({"type": "object", "properties": properties});
    let options = Options {
        numbers: Numbers::Canonical,
        ..Options::default()
    };
    let compiled = constrain_jsonschema::compile(&schema, &options)
        .unwrap_or_else(|e| panic!("{schema} does not compile: {e}"));
    let numbers = compiled
        .grammar
        .rules()
        .filter(|(_, name, _)| name.starts_with("number"))
        .count();
    assert_eq!(numbers, 2, "one rule per distinct set of numbers");
    check_with(
        &options,
        schema,
        &[json!({"n0": 9223372036854775807_i64, "n9": -3, "m": 1})],
        &[
            json!({"n0": 1.5}),
            json!({"m": 0}),
            json!({"n3": "1"}),
            json!({"n1": 9223372036854775808_u64}),
        ],
    );
}

/// The expressions `expr` is made of, one level down (none for a leaf or a rule).
fn parts_of(expr: &Expr) -> Vec<&Expr> {
    match expr {
        Expr::Seq(parts) | Expr::Alt(parts) => parts.iter().collect(),
        Expr::Repeat { expr, .. } => vec![expr],
        Expr::Unordered(u) => u
            .members
            .iter()
            .map(|m| &m.expr)
            .chain(u.extra.iter())
            .chain([&u.separator])
            .collect(),
        Expr::Regex(_) | Expr::Graph(_) | Expr::Rule(_) => Vec::new(),
    }
}

/// The largest estimated NFA of one regular expression or graph in `expr`.
fn largest_regular(expr: &Expr) -> usize {
    match expr {
        Expr::Regex(_) | Expr::Graph(_) => expr.nfa_size_estimate(1 << 20).unwrap_or(0),
        _ => parts_of(expr)
            .into_iter()
            .map(largest_regular)
            .max()
            .unwrap_or(0),
    }
}

/// Undeclared keys outside a language-tag pattern: the region's automaton is small, its
/// expression repeats the spelling of every other character along each path; the key is
/// then the automaton's graph.
#[test]
fn keys_whose_expression_is_past_the_budget_are_their_automaton() {
    // A chain of 255 optional characters: a small automaton, an expression past the budget.
    let long = "k".repeat(255);
    let too_long = "k".repeat(256);
    check(
        json!({"type": "object", "patternProperties": {"^[0-9a-zA-Z_-]{1,255}$": {"type": ["number", "string", "boolean"]}}, "additionalProperties": false}),
        &[
            json!({}),
            json!({"abc": 1}),
            json!({"a_b-9": "x", "Z": true}),
            json!({long: 2}),
        ],
        &[
            json!({"": 1}),
            json!({"a b": 1}),
            json!({"abc": null}),
            json!({too_long: 2}),
        ],
    );
}

/// The regular expressions and graphs in `expr`: each one terminal.
fn regular_leaves(expr: &Expr) -> usize {
    match expr {
        Expr::Regex(_) | Expr::Graph(_) => 1,
        _ => parts_of(expr).into_iter().map(regular_leaves).sum(),
    }
}

/// The string-only branches of an `anyOf` (or of a `oneOf` once made disjoint) are one
/// terminal: their automata's union, or their expressions' alternation.
#[test]
fn string_branches_are_one_terminal() {
    let words = json!({"type": "string", "oneOf": [
        {"pattern": "customer"}, {"pattern": "maker"}, {"pattern": "operator"},
        {"pattern": "admin"}, {"pattern": "designer"}
    ]});
    let mixed = json!({"anyOf": [
        {"type": "string", "format": "date"},
        {"type": "string", "pattern": "^x", "maxLength": 3},
        {"type": "string", "minLength": 6, "pattern": "^a"},
        {"type": "integer", "minimum": 0}
    ]});
    let leaves = |schema: &Value| -> usize {
        let compiled = constrain_jsonschema::compile(schema, &spec())
            .unwrap_or_else(|e| panic!("{schema} does not compile: {e}"));
        compiled
            .grammar
            .rules()
            .map(|(_, _, body)| regular_leaves(body))
            .sum()
    };
    // Less the whitespace around the document.
    let terminals = |schema: &Value| leaves(schema) + 1 - leaves(&json!({"type": "string"}));
    assert_eq!(terminals(&words), 1, "{words}");
    check(
        words,
        &[
            json!("customer"),
            json!("a maker here"),
            json!("xadminx"),
            json!("customercustomer"),
            json!("the designer\"s \"tool\""),
        ],
        &[
            json!(""),
            json!("nothing"),
            json!("makeradmin"),
            json!("customer and maker"),
            json!("admin, operator, designer"),
            json!("designer\"s \"operator"),
            json!(1),
        ],
    );
    check(
        mixed,
        &[
            json!("2024-02-29"),
            json!("x"),
            json!("xyz"),
            json!("abcdef"),
            json!("a long é string"),
            json!(7),
        ],
        &[
            json!("2023-02-29"),
            json!("xyzw"),
            json!("abcde"),
            json!("bcdefg"),
            json!(""),
            json!(-1),
            json!(null),
        ],
    );
}

/// The automata (graphs) of the grammar compiled from `schema`, as the grammar holds them.
fn graphs_of(schema: &Value) -> Vec<std::sync::Arc<RegexGraph>> {
    fn collect(expr: &Expr, out: &mut Vec<std::sync::Arc<RegexGraph>>) {
        match expr {
            Expr::Graph(g) => out.push(g.clone()),
            _ => parts_of(expr).into_iter().for_each(|p| collect(p, out)),
        }
    }
    let compiled = constrain_jsonschema::compile(schema, &Options::default())
        .unwrap_or_else(|e| panic!("{schema} does not compile: {e}"));
    let mut graphs = Vec::new();
    for (_, _, body) in compiled.grammar.rules() {
        collect(body, &mut graphs);
    }
    graphs
}

/// A `format` met with a `pattern`: their automaton has under 200 states, its expression is
/// past the budget, so the string's terminal is the automaton, a graph; with a `minLength`,
/// the length is counted in the automaton's states. What they accept: the data file of the
/// same name.
#[test]
fn formats_met_with_patterns_past_the_expression_budget_are_their_automaton() {
    let graphs = graphs_of(
        &json!({"type": "string", "allOf": [{"format": "uri"}, {"pattern": "^https?://"}]}),
    );
    assert_eq!(graphs.len(), 1, "{graphs:?}");
    let states = graphs[0].states().len();
    assert!(states < 200, "{states} states");
    let counted = graphs_of(
        &json!({"type": "string", "format": "uri", "pattern": "^https?://", "minLength": 20}),
    );
    assert_eq!(counted.len(), 1, "{counted:?}");
    assert!(
        counted[0].states().len() > states,
        "the length is counted in the automaton's states: {} states",
        counted[0].states().len()
    );
}

/// The strings that are not a `uri`: an automaton of 180 states whose expression, rebuilt
/// from it, is past the budget, so the terminal is the automaton. What they accept, and a
/// `oneOf` made disjoint through the complement: the data file of the same name.
#[test]
fn complements_past_the_expression_budget_are_their_automaton() {
    let graphs = graphs_of(&json!({"type": "string", "not": {"format": "uri"}}));
    assert_eq!(graphs.len(), 1, "{graphs:?}");
    assert!(
        (100..300).contains(&graphs[0].states().len()),
        "{} states",
        graphs[0].states().len()
    );
}

/// The keys an object leaves open are every key but the declared ones, in every spelling
/// the options allow: checked through the engine for every key of up to three characters
/// of an alphabet that has the declared keys' characters, an escaped one, a control one and
/// characters beyond ASCII, spelled as `json.dumps` does and with every character a `\u`
/// escape (which canonical spelling refuses).
#[test]
fn undeclared_keys_are_every_key_but_the_declared_ones_in_every_spelling() {
    let declared = ["na", "name", "namespace", "kind", "é/", "a\"b"];
    let schema = json!({
        "type": "object",
        "properties": {
            "na": {"type": "string"}, "name": {"type": "string"}, "namespace": {"type": "string"},
            "kind": {"type": "string"}, "é/": {"type": "string"}, "a\"b": {"type": "string"}
        },
        "additionalProperties": {"type": "boolean"}
    });
    let alphabet = [
        'n', 'a', 'm', 'e', 'k', 'x', 'é', '/', '"', '\\', '\n', '😀',
    ];
    let mut keys = vec![String::new()];
    let mut layer = keys.clone();
    for _ in 0..3 {
        layer = layer
            .iter()
            .flat_map(|s| alphabet.iter().map(move |&c| format!("{s}{c}")))
            .collect();
        keys.extend(layer.iter().cloned());
    }
    for word in declared {
        keys.push(word.to_string());
        keys.push(format!("{word}s"));
        keys.push(word.chars().skip(1).collect());
    }
    let escaped = |s: &str| -> String { s.encode_utf16().map(|u| format!("\\u{u:04x}")).collect() };
    let index = byte_index();
    for escapes in [Escapes::Any, Escapes::Canonical] {
        let options = Options {
            property_order: PropertyOrder::Any,
            escapes,
            ..spec()
        };
        let c = Checked::new(&index, &schema, &options).expect("compiles");
        for key in &keys {
            let open = !declared.contains(&key.as_str());
            let canonical = common::compact(&json!(key));
            assert_eq!(
                c.accepts_text(&format!("{{{canonical}:true}}")),
                open,
                "{escapes:?}: {canonical}"
            );
            let spelled = format!("{{\"{}\":true}}", escaped(key));
            let expected = open && (escapes == Escapes::Any || key.is_empty());
            assert_eq!(c.accepts_text(&spelled), expected, "{escapes:?}: {spelled}");
        }
    }
}

#[test]
fn undeclared_keys_cut_by_patterns_are_spelled_as_their_automaton() {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "title": {"type": "string"}},
        "patternProperties": {
            "^(name_(([A-Za-z]{2,3}(-[A-Za-z]{3}){0,2}|[A-Za-z]{5,8})(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?|x(-[A-Za-z0-9]{1,8})+))$": {"type": "string"}
        },
        "additionalProperties": {"type": "integer"}
    });
    let largest = grammar_in_any_order(&schema)
        .rules()
        .map(|(_, _, body)| largest_regular(body))
        .max()
        .unwrap_or(0);
    // As an expression: 11,880; as a graph: 4,907.
    assert!(largest < 8_000, "{largest}");
    check_with(
        &any_order(),
        schema,
        &[
            json!({"name": "n", "name_en": "english", "name_zh-Hant-TW": "t", "title": "x"}),
            json!({"name_x-abc": "private", "other": 3, "name_": 4, "name_e": 5, "nam": 6}),
            json!({"title_en": 1, "name_en-": 2, "é": 7}),
        ],
        &[
            json!({"name_en": 1}),
            json!({"name_de-Latn": 2}),
            json!({"other": "s"}),
            json!({"name": 1}),
            json!({"name_x-a": null}),
        ],
    );
}

/// Keys of unanchored `patternProperties`: each region of keys (one pattern's and not
/// another's) stays exact, whether it is one expression or its automaton.
#[test]
fn many_pattern_properties_are_regions_of_the_keys_they_share() {
    // Twelve disjoint prefixes and no other key: thirteen regions, not 2^13 subsets.
    let names = [
        "name", "url", "type", "size", "mode", "kind", "role", "tags", "note", "path", "host",
        "port",
    ];
    let mut patterns = serde_json::Map::new();
    for (i, n) in names.iter().enumerate() {
        let value = if i % 2 == 0 {
            json!({"type": "string"})
        } else {
            json!({"type": "integer"})
        };
        patterns.insert(format!("^{n}:(en|nl)$"), value);
    }
    check(
        json!({"type": "object", "patternProperties": patterns, "additionalProperties": false}),
        &[
            json!({"name:en": "a", "url:nl": 3, "port:en": 1}),
            json!({"host:nl": "h", "tags:en": 2}),
            json!({}),
        ],
        &[
            json!({"name:en": 1}),
            json!({"url:nl": "x"}),
            json!({"name:de": "a"}),
            json!({"other": 1}),
        ],
    );
    // One pattern over them all and one per name under it: the pairs meet.
    let mut patterns = serde_json::Map::new();
    patterns.insert(
        "^[A-Z0-9-]+$".into(),
        json!({"type": "string", "maxLength": 8}),
    );
    for n in [
        "MD5", "SHA-1", "SHA-256", "SHA-384", "SHA-512", "SHA3-256", "SSDEEP",
    ] {
        patterns.insert(format!("^{n}$"), json!({"type": "string", "minLength": 3}));
    }
    check(
        json!({"type": "object", "patternProperties": patterns, "additionalProperties": false}),
        &[json!({"MD5": "abc", "SHA-1": "abcdefgh", "X": ""})],
        &[
            json!({"MD5": "ab"}),
            json!({"SHA-256": "abcdefghi"}),
            json!({"X": "abcdefghi"}),
            json!({"md5": "abc"}),
        ],
    );
    // The same pattern under several `allOf` branches: one rule, its values met.
    let branches: Vec<Value> = (1..=8)
        .map(|i| json!({"patternProperties": {"^a": {"type": "integer", "minimum": i}}}))
        .collect();
    check(
        json!({"allOf": branches}),
        &[json!({"ab": 8, "b": "x"}), json!({"a": 9})],
        &[json!({"ab": 7}), json!({"a": "8"})],
    );
}

/// Strings of words: 1 to `max_words` words of 1 to `max_word` characters (ASCII letters,
/// `é`, `😀`, a quote, a backslash), joined by runs of 1 to 2 ASCII spaces, tabs or newlines,
/// sometimes with a leading or trailing run.
fn random_sentences(count: usize, max_words: u64, max_word: u64) -> Vec<String> {
    let mut rng = constrain_testdata::XorShift64::new(0x853c_49e6_748f_ea9b);
    let mut below = |n: u64| rng.below(n);
    let letters = ['a', 'Z', 'é', '😀', '"', '\\'];
    let spaces = [' ', '\t', '\n'];
    (0..count)
        .map(|_| {
            let mut s = String::new();
            let words = 1 + below(max_words);
            let edge = below(8);
            for w in 0..words + u64::from(edge == 0) {
                if w > 0 || edge == 1 {
                    for _ in 0..1 + below(2) {
                        s.push(spaces[below(3) as usize]);
                    }
                }
                if w < words {
                    for _ in 0..1 + below(max_word) {
                        s.push(letters[below(6) as usize]);
                    }
                }
            }
            s
        })
        .collect()
}

#[test]
fn patterns_under_length_bounds_are_exact() {
    // Word counts under a length bound, and an unanchored pattern under one: small products
    // of a pattern's automaton and a length counter, and (the last two) a pattern's automaton
    // whose lengths the engine counts.
    let index = byte_index();
    for (schema, sentences) in [
        (
            json!({"type": "string", "pattern": "^(?:\\S+\\s+){0,4}\\S+$", "maxLength": 60}),
            random_sentences(400, 7, 16),
        ),
        (
            json!({"type": "string", "pattern": "^$|(^(?:\\S+\\s+){0,19}\\S+$)", "maxLength": 200}),
            random_sentences(400, 26, 14),
        ),
        (
            json!({"type": "string", "pattern": "^(?:\\S+\\s+){0,49}\\S+$", "minLength": 20, "maxLength": 500}),
            random_sentences(400, 60, 16),
        ),
        (
            json!({"type": "string", "pattern": "[a-zA-Z0-9_.-]+", "minLength": 3, "maxLength": 40}),
            random_sentences(400, 6, 16),
        ),
    ] {
        let compiled = constrain_jsonschema::compile(&schema, &spec()).expect("compiles");
        assert!(
            compiled.warnings.is_empty(),
            "{schema}: {:?}",
            compiled.warnings
        );
        let c = Checked::new(&index, &schema, &spec()).expect("compiles");
        let reference = jsonschema::validator_for(&schema).expect("a valid schema");
        let mut valid = 0;
        for s in sentences {
            let v = json!(s);
            let expected = reference.is_valid(&v);
            assert_eq!(c.accepts(&v), (expected, expected), "{schema}: {v}");
            valid += usize::from(expected);
        }
        // Both sides of each bound are exercised.
        assert!((100..300).contains(&valid), "{schema}: {valid} valid");
    }
}

#[test]
fn formats() {
    let annotations = Options {
        assert_formats: false,
        ..spec()
    };
    check_with(
        &annotations,
        json!({"type": "string", "format": "email"}),
        &[json!("nope")],
        &[],
    );
    let unknown =
        constrain_jsonschema::compile(&json!({"type": "string", "format": "x-custom"}), &spec())
            .expect("compiles");
    assert!(unknown
        .warnings
        .iter()
        .any(|w| w.kind == constrain_jsonschema::WarningKind::UnknownFormat));
    let err =
        constrain_jsonschema::compile(&json!({"properties": {"r": {"format": "regex"}}}), &spec())
            .expect_err("regex");
    assert_eq!(err.pointer(), Some("/properties/r/format"));
}

#[test]
fn arrays() {
    // Any values are kept apart by the check beside the grammar; objects are not.
    constrain_jsonschema::compile(
        &json!({"properties": {"tags": {"type": "array", "uniqueItems": true}}}),
        &spec(),
    )
    .expect("unique values");
    let err = constrain_jsonschema::compile(
        &json!({"properties": {"tags": {"type": "array", "uniqueItems": true, "items": {"type": "object"}}}}),
        &spec(),
    )
    .expect_err("unique objects");
    assert!(
        err.to_string().contains("uniqueItems") && err.to_string().contains("/properties/tags"),
        "{err}"
    );
}

#[test]
fn objects_in_schema_order() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
        "required": ["b"]
    });
    check(
        schema.clone(),
        &[
            json!({"b": "x"}),
            json!({"a": 1, "b": "x"}),
            json!({"a": 1, "b": "x", "c": true, "extra": [1]}),
        ],
        &[
            json!({}),
            json!({"a": 1}),
            json!({"a": "1", "b": "x"}),
            json!({"b": "x", "a": 1}),
        ],
    );
}

#[test]
fn objects_in_any_order() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["a", "b"],
        "additionalProperties": false
    });
    check_with(
        &any_order(),
        schema,
        &[json!({"a": 1, "b": "x"}), json!({"b": "x", "a": 1})],
        &[json!({"a": 1}), json!({"b": "x", "a": 1, "c": 2})],
    );
    let index = byte_index();
    let c = Checked::new(
        &index,
        &json!({"properties": {"a": {"type": "integer"}}}),
        &any_order(),
    )
    .expect("compiles");
    assert!(
        !c.accepts_text(r#"{"a": 1, "a": 2}"#),
        "a declared property appears once"
    );
}

#[test]
fn many_properties_in_any_order() {
    // 40 declared properties: far too many subsets to spell out, tracked as inputs reach them.
    let properties: serde_json::Map<String, Value> = (0..40)
        .map(|i| (format!("p{i}"), json!({"type": "integer"})))
        .collect();
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": ["p0", "p39"],
    });
    let index = byte_index();
    let c = Checked::new(&index, &schema, &any_order()).expect("compiles");
    let member = |i: usize| format!("\"p{i}\": {i}");
    let backwards: Vec<String> = (0..40).rev().map(member).collect();
    let object = |members: &[String]| format!("{{{}}}", members.join(", "));
    assert!(c.accepts_text(&object(&backwards)));
    assert!(c.accepts_text(&object(&[member(39), "\"extra\": [1]".into(), member(0)])));
    assert!(
        !c.accepts_text(&object(&[member(39), member(5)])),
        "p0 is required"
    );
    assert!(
        !c.accepts_text(&object(&[member(39), member(0), member(39)])),
        "p39 twice"
    );
    assert!(!c.accepts_text(&object(&[member(39), "\"p0\": \"x\"".into()])));
}

#[test]
fn dependencies() {
    // Keys that only `required` names are not declared: in schema order they come after the
    // declared ones, so these use any order.
    let check = |schema: Value, valid: &[Value], invalid: &[Value]| {
        check_with(&any_order(), schema, valid, invalid)
    };
    check(
        json!({"dependentRequired": {"a": ["b"]}}),
        &[
            json!({}),
            json!({"b": 1}),
            json!({"a": 1, "b": 2}),
            json!(3),
        ],
        &[json!({"a": 1})],
    );
    check(
        json!({"dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}}}),
        &[json!({"a": 1, "b": "x"}), json!({"b": 2})],
        &[json!({"a": 1, "b": 2})],
    );
    check(
        json!({"dependencies": {"a": ["b"], "c": {"required": ["d"]}}}),
        &[json!({"b": 0, "a": 1}), json!({"d": 0, "c": 0})],
        &[json!({"a": 1}), json!({"c": 1})],
    );
}

/// A `oneOf` whose branches only overlap outside what is known of its instances (the key a
/// dependency implies, the condition of a `then`, the siblings of an `allOf`): within it they
/// are disjoint, and the union needs no complements. Exact either way; here it is also small.
#[test]
fn one_of_branches_disjoint_in_context_stay_a_plain_union() {
    let kinds = json!({"oneOf": [
        {"properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}},
        {"properties": {"kind": {"const": "b"}, "y": {"type": "string"}}},
        {"properties": {"kind": {"const": "c"}, "z": {"type": "boolean"}}}
    ]});
    let schemas = [
        json!({"type": "object", "dependencies": {"kind": kinds.clone()}}),
        json!({"type": "object", "if": {"required": ["kind"]}, "then": kinds.clone()}),
        json!({"type": "object", "required": ["kind"], "allOf": [kinds.clone()]}),
    ];
    for schema in schemas {
        let rules = grammar_in_any_order(&schema).rule_count();
        // With complements of the other branches: 67 to 69 rules.
        assert!(rules < 30, "{schema}: {rules} rules");
        check_with(
            &any_order(),
            schema.clone(),
            &[
                json!({"kind": "a", "x": 1}),
                json!({"y": "s", "kind": "b", "w": null}),
                json!({"kind": "c", "z": true, "x": "not checked here"}),
            ],
            &[
                json!({"kind": "a", "x": "s"}),
                json!({"kind": "b", "y": 2}),
                json!({"kind": "d"}),
                json!({"kind": "c", "z": 0}),
            ],
        );
    }
}

/// Object branches without `type` share every value of the other types (any string
/// satisfies both), not one object: only those values are taken out, and the objects stay
/// as declared (in any order, no complement of the other branch's keys and values).
#[test]
fn one_of_untyped_object_branches_subtract_only_the_types_they_share() {
    let schema = json!({"oneOf": [
        {
            "properties": {
                "type": {"enum": ["InvalidValue"]},
                "key": {"type": "string", "maxLength": 8},
                "value": {"type": "string"},
                "message": {"type": "string"}
            },
            "required": ["type", "key", "value", "message"],
            "additionalProperties": false
        },
        {
            "properties": {"type": {"enum": ["Unhandled"]}, "message": {"type": "string"}},
            "required": ["type", "message"],
            "additionalProperties": false
        }
    ]});
    let rules = grammar_in_any_order(&schema).rule_count();
    // With the other branch subtracted from the objects too: 104 rules.
    assert!(rules < 20, "{rules} rules");
    check_with(
        &any_order(),
        schema,
        &[
            json!({"type": "InvalidValue", "key": "k", "value": "v", "message": "m"}),
            json!({"message": "m", "value": "v", "key": "k", "type": "InvalidValue"}),
            json!({"message": "m", "type": "Unhandled"}),
        ],
        &[
            json!("a string matches both"),
            json!(3),
            json!(null),
            json!([]),
            json!({"type": "Unhandled", "message": "m", "key": "k"}),
            json!({"type": "InvalidValue", "key": "too long a key", "value": "v", "message": "m"}),
            json!({"type": "InvalidValue", "message": "m"}),
        ],
    );
}

/// Closed objects without required members share only `{}`: each branch is its objects
/// that are not empty, a count rather than a member required to exist (which, for any
/// order, spelled every order of the members with and without it).
#[test]
fn one_of_closed_objects_sharing_only_the_empty_one() {
    let schema = json!({"oneOf": [
        {"type": "object", "additionalProperties": false, "properties": {
            "columns": {"type": "integer"}, "names": {"type": "array"},
            "types": {"type": "array"}, "rows": {"type": "array"}
        }},
        {"type": "object", "additionalProperties": false, "properties": {
            "version": {"type": "string"}, "reference": {"type": "string"},
            "definition": {"type": "boolean"}
        }}
    ]});
    let rules = grammar_in_any_order(&schema).rule_count();
    // With a member required to exist: 109 rules.
    assert!(rules < 30, "{rules} rules");
    check_with(
        &any_order(),
        schema,
        &[
            json!({"rows": [], "columns": 2}),
            json!({"types": ["a"], "names": [], "rows": [[1]], "columns": 1}),
            json!({"version": "1", "definition": true}),
        ],
        &[
            json!({}),
            json!({"rows": [], "version": "1"}),
            json!({"columns": "2"}),
            json!({"other": 1}),
        ],
    );
}

/// Each complement of a `propertyNames` requires a member with a key in its set; five of
/// them, under a `maxProperties` of three, leave a few ways to cover every set.
#[test]
fn five_members_required_to_exist() {
    let schema = json!({
        "type": "object",
        "patternProperties": {"^[0-9]$": {"type": "array", "minItems": 2}},
        "additionalProperties": false,
        "not": {"anyOf": [
            {"propertyNames": {"not": {"enum": ["1", "3"]}}},
            {"propertyNames": {"not": {"enum": ["2", "7", "9"]}}},
            {"propertyNames": {"not": {"enum": ["2", "3", "11"]}}},
            {"propertyNames": {"not": {"enum": ["2", "4", "5"]}}},
            {"propertyNames": {"not": {"enum": ["1", "2", "5"]}}}
        ]},
        "maxProperties": 3
    });
    for options in [spec(), any_order()] {
        check_with(
            &options,
            schema.clone(),
            &[
                json!({"1": [0, 0], "2": [0, 0]}),
                json!({"2": [1, 2], "3": [1, 2], "5": [1, 2]}),
                json!({"3": [1, 2], "2": [1, 2]}),
            ],
            &[
                json!({"1": [0, 0], "3": [0, 0]}),
                json!({"2": [0, 0]}),
                json!({"1": [0], "2": [0, 0]}),
                json!({"1": [0, 0], "2": [0, 0], "3": [0, 0], "4": [0, 0]}),
                json!({}),
            ],
        );
    }
}

/// `unevaluatedProperties` in a subschema parsed within a context reads its own annotations
/// only, not those of the schema around it.
#[test]
fn one_of_in_context_keeps_unevaluated_properties_local() {
    let schema = json!({
        "properties": {"a": {"type": "integer"}},
        "dependentSchemas": {"a": {
            "oneOf": [
                {"properties": {"k": {"const": 1}}, "required": ["k"]},
                {"properties": {"k": {"const": 2}}, "required": ["k"]}
            ],
            "unevaluatedProperties": false
        }}
    });
    check_with(
        &any_order(),
        schema,
        &[json!({}), json!({"k": 2}), json!({"k": 1, "b": 2})],
        &[
            json!({"a": 1, "k": 2}),
            json!({"a": 1}),
            json!({"a": 1, "k": 1}),
        ],
    );
}

#[test]
fn references() {
    let schema = json!({
        "$defs": {
            "positive": {"type": "integer", "minimum": 1},
            "a/b~c": {"type": "string"},
            "node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}, "v": {"$ref": "#/$defs/positive"}}, "additionalProperties": false},
            "anchored": {"$anchor": "here", "type": "boolean"}
        },
        "type": "object",
        "properties": {
            "n": {"$ref": "#/$defs/node"},
            "s": {"$ref": "#/$defs/a~1b~0c"},
            "p": {"$ref": "#/%24defs/positive"},
            "h": {"$ref": "#here"},
            "m": {"$ref": "#/$defs/positive", "maximum": 9}
        }
    });
    check(
        schema,
        &[json!({"n": {"next": {"next": {}}, "v": 1}, "s": "x", "p": 3, "h": true, "m": 9})],
        &[
            json!({"n": {"next": {"v": 0}}}),
            json!({"s": 1}),
            json!({"p": 0}),
            json!({"h": 1}),
            json!({"m": 10}),
        ],
    );
    let draft7 = json!({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"i": {"type": "integer"}}, "properties": {"a": {"$ref": "#/definitions/i", "type": "string"}}});
    check(draft7, &[json!({"a": 1})], &[json!({"a": "x"})]);
    let with_ids = json!({
        "$id": "https://example.com/root.json",
        "$defs": {"b": {"$id": "other/b.json", "type": "integer"}},
        "properties": {"x": {"$ref": "other/b.json"}}
    });
    check(with_ids, &[json!({"x": 1})], &[json!({"x": "1"})]);
}

#[test]
fn registered_resources_resolve_references_by_uri() {
    let mut options = spec();
    options.resources.insert(
        "https://example.com/types.json".into(),
        json!({
            "$defs": {
                "positive": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
                "tag": {"$anchor": "tag", "type": "string", "maxLength": 3}
            }
        }),
    );
    let schema = json!({
        "$id": "https://example.com/tool.json",
        "properties": {
            "n": {"$ref": "https://example.com/types.json#/$defs/positive"},
            "t": {"$ref": "types.json#/$defs/tags"},
            "a": {"$ref": "types.json#tag"}
        }
    });
    check_with(
        &options,
        schema.clone(),
        &[json!({"n": 2, "t": ["ab", "xyz"], "a": "q"})],
        &[
            json!({"n": 0}),
            json!({"t": ["long"]}),
            json!({"t": [1]}),
            json!({"a": 1}),
        ],
    );
    // Unregistered, a reference outside the document is an error naming where it is.
    let err = constrain_jsonschema::compile(&schema, &spec()).unwrap_err();
    assert!(
        matches!(&err, constrain_jsonschema::SchemaError::UnresolvedRef { pointer, .. } if pointer == "/properties/n/$ref"),
        "{err}"
    );
    // The schema itself keeps a URI it defines: its own `$defs/positive` wins.
    let own = json!({
        "$id": "https://example.com/types.json",
        "$defs": {"positive": {"type": "integer", "minimum": 10}},
        "$ref": "https://example.com/types.json#/$defs/positive"
    });
    check_with(&options, own, &[json!(10)], &[json!(2)]);
    // An error inside a resource says which document it is in.
    let mut bad = spec();
    bad.resources
        .insert("https://example.com/bad.json".into(), json!({"type": 5}));
    let err = constrain_jsonschema::compile(&json!({"$ref": "https://example.com/bad.json"}), &bad)
        .unwrap_err();
    assert!(
        err.to_string().contains("https://example.com/bad.json#"),
        "{err}"
    );
}

#[test]
fn dynamic_references_bind_to_the_outermost_dynamic_anchor() {
    // A generic list whose items the schema extending it chooses.
    let mut options = spec();
    options.resources.insert(
        "https://example.com/list.json".into(),
        json!({
            "$id": "https://example.com/list.json",
            "type": "array",
            "items": {"$dynamicRef": "#item"},
            "$defs": {"item": {"$dynamicAnchor": "item"}}
        }),
    );
    let strings = json!({
        "$id": "https://example.com/strings.json",
        "$ref": "list.json",
        "$defs": {"item": {"$dynamicAnchor": "item", "type": "string"}}
    });
    check_with(
        &options,
        strings,
        &[json!([]), json!(["a", "b"])],
        &[json!([1]), json!(["a", null])],
    );
    // Used directly, the list binds the anchor itself: anything goes.
    let direct = json!({"$ref": "https://example.com/list.json"});
    check_with(&options, direct, &[json!([1, "a", null])], &[json!({})]);
    // A plain `$anchor` of the same name does not bind: the list's own anchor stays.
    let plain = json!({
        "$id": "https://example.com/plain.json",
        "$ref": "list.json",
        "$defs": {"item": {"$anchor": "item", "type": "string"}}
    });
    check_with(&options, plain, &[json!([1, "a"])], &[]);
    // One schema reached in two scopes is read once in each.
    let both = json!({
        "$id": "https://example.com/both.json",
        "properties": {
            "strings": {"$ref": "strings.json"},
            "any": {"$ref": "list.json"}
        },
        "$defs": {"strings": {
            "$id": "strings.json",
            "$ref": "list.json",
            "$defs": {"item": {"$dynamicAnchor": "item", "type": "string"}}
        }}
    });
    check_with(
        &options,
        both,
        &[json!({"strings": ["a"], "any": [1]})],
        &[json!({"strings": [1]})],
    );
}

#[test]
fn recursive_references_bind_to_the_outermost_recursive_anchor() {
    // Draft 2019-09: a tree whose extension forbids undeclared keys all the way down.
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2019-09/schema",
        "$id": "https://example.com/strict-tree.json",
        "$recursiveAnchor": true,
        "$ref": "tree.json",
        "unevaluatedProperties": false,
        "$defs": {"tree": {
            "$id": "tree.json",
            "$recursiveAnchor": true,
            "type": "object",
            "properties": {
                "data": true,
                "children": {"type": "array", "items": {"$recursiveRef": "#"}}
            }
        }}
    });
    check(
        schema,
        &[json!({"children": [{"data": 1, "children": []}]})],
        &[json!({"children": [{"daat": 1}]}), json!({"x": 1})],
    );
}

#[test]
fn complements_of_multiple_of() {
    check(
        json!({"not": {"multipleOf": 0.5}}),
        &[json!(0.25), json!(1.3), json!(-7.01)],
        // Every non-number is valid against `multipleOf`, so none is against its `not`.
        &[json!(0), json!(1), json!(1.5), json!(-2.5), json!("x")],
    );
    // Only plain spellings: `1e1` is 10, a multiple of 0.5.
    let index = byte_index();
    let c = Checked::new(&index, &json!({"not": {"multipleOf": 0.5}}), &spec()).expect("compiles");
    assert!(!c.accepts_text("1e1"));
    // `oneOf` of overlapping multiples: one or the other, not both.
    // Several remainders at once: multiples of 88 and of 3 or 5, not both. Their
    // expression is past the budget; the automaton is the terminal.
    let remainders = json!({
        "type": "number",
        "allOf": [
            {"minimum": 1},
            {"oneOf": [{"multipleOf": 3}, {"multipleOf": 5}, {"multipleOf": 15}]},
            {"oneOf": [{"allOf": [{"not": {"multipleOf": 5}}, {"not": {"multipleOf": 3}}]}, {"multipleOf": 8}]},
            {"oneOf": [{"not": {"multipleOf": 8}}, {"multipleOf": 11}]}
        ]
    });
    check(
        remainders,
        &[json!(264), json!(440), json!(528), json!(264.0)],
        &[
            json!(88),
            json!(1320),
            json!(3),
            json!(265),
            json!(0),
            json!(-264),
            json!(264.5),
        ],
    );
    // Multiples of 6 are multiples of 3: nothing is left.
    let err = constrain_jsonschema::compile(
        &json!({"type": "number", "multipleOf": 6, "not": {"multipleOf": 3}}),
        &spec(),
    )
    .unwrap_err();
    assert!(
        matches!(err, constrain_jsonschema::SchemaError::Unsatisfiable { .. }),
        "{err}"
    );
}

#[test]
fn references_across_draft_4_and_later_drafts_are_refused() {
    let mut options = spec();
    options.resources.insert(
        "https://example.com/old.json".into(),
        json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}),
    );
    let err = constrain_jsonschema::compile(
        &json!({"items": {"$ref": "https://example.com/old.json"}}),
        &options,
    )
    .unwrap_err();
    assert!(
        matches!(&err, constrain_jsonschema::SchemaError::UnresolvedRef { pointer, reason, .. } if pointer == "/items/$ref" && reason.contains("draft 4")),
        "{err}"
    );
}

#[test]
fn annotations_and_unknown_keywords_are_ignored_with_warnings() {
    let schema = json!({"type": "integer", "title": "t", "description": "d", "default": 1, "examples": [1], "deprecated": true, "x-vendor": {"k": 1}});
    let c = constrain_jsonschema::compile(&schema, &spec()).expect("compiles");
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert_eq!(c.warnings[0].keyword, "x-vendor");
    assert_eq!(c.warnings[0].pointer, "/x-vendor");
}

#[test]
fn draft_4_has_no_conditionals() {
    // `if`/`then`/`else` came with draft 7: in a draft 4 document they are unknown words.
    let conditional =
        |uri: &str| json!({"$schema": uri, "if": {"minimum": 10}, "then": {"multipleOf": 2}});
    check(
        conditional("http://json-schema.org/draft-04/schema#"),
        &[json!(11), json!(12), json!(3)],
        &[],
    );
    check(
        conditional("http://json-schema.org/draft-07/schema#"),
        &[json!(12), json!(3)],
        &[json!(11)],
    );
    let c = constrain_jsonschema::compile(
        &conditional("http://json-schema.org/draft-04/schema#"),
        &spec(),
    )
    .expect("compiles");
    let words: Vec<&str> = c.warnings.iter().map(|w| w.keyword.as_str()).collect();
    assert_eq!(words, ["if", "then"]);
}

#[test]
fn unsupported_keywords_are_errors_unless_lenient() {
    let schema = json!({"properties": {"a": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}}}});
    let err = constrain_jsonschema::compile(&schema, &spec()).expect_err("unsupported");
    assert!(
        matches!(err, constrain_jsonschema::SchemaError::Unsupported { ref keyword, ref pointer, .. } if keyword == "uniqueItems" && pointer == "/properties/a"),
        "{err}"
    );
    let lenient = Options {
        lenient: true,
        ..spec()
    };
    let c = constrain_jsonschema::compile(&schema, &lenient).expect("lenient compiles");
    assert!(c.warnings.iter().any(
        |w| w.kind == constrain_jsonschema::WarningKind::Dropped && w.keyword == "uniqueItems"
    ));
    // An email address may be short: the branches overlap, and an `email` enforced on a subset
    // of its addresses has no complement.
    let overlapping = json!({"oneOf": [{"type": "string", "format": "email"}, {"type": "string", "maxLength": 8}]});
    let err = constrain_jsonschema::compile(&overlapping, &spec()).expect_err("oneOf");
    assert!(err.to_string().contains("oneOf"), "{err}");
    let c = constrain_jsonschema::compile(&overlapping, &lenient).expect("lenient compiles");
    assert!(c
        .warnings
        .iter()
        .any(|w| w.kind == constrain_jsonschema::WarningKind::OneOfAsAnyOf));
}

#[test]
fn complements_of_open_and_closed_objects() {
    let one_of = json!({"oneOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false},
        {"type": "object", "properties": {"b": {"type": "integer"}}, "additionalProperties": false}
    ]});
    check(
        one_of.clone(),
        &[json!({"a": 1}), json!({"b": 2})],
        &[json!({}), json!({"a": 1, "b": 2}), json!({"c": 1})],
    );
    check_with(
        &any_order(),
        one_of,
        &[json!({"a": 1}), json!({"b": 2})],
        &[json!({}), json!({"b": 2, "a": 1})],
    );
}

#[test]
fn min_properties_never_counts_a_repeated_undeclared_key_twice() {
    // `{"x": 1, "\u0078": 2}` has one property: undeclared members cannot make up two.
    let err = constrain_jsonschema::compile(
        &json!({"type": "object", "properties": {"a": {}}, "minProperties": 3}),
        &spec(),
    )
    .unwrap_err();
    assert!(
        matches!(err, constrain_jsonschema::SchemaError::Unsupported { ref keyword, .. } if keyword == "minProperties"),
        "{err}"
    );
    // One declared and one undeclared member make two distinct keys.
}
