//! The grammars shipped in `grammars/`: each parses, compiles, accepts what it promises and
//! refuses the rest.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use constrain_engine::CompiledGrammar;

fn grammars_dir() -> PathBuf {
    constrain_testdata::workspace_root().join("grammars")
}

fn load(name: &str) -> Arc<CompiledGrammar> {
    let path = grammars_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let grammar = constrain_gbnf::parse(&text).unwrap_or_else(|e| panic!("{name}:{e}"));
    common::compile(&grammar)
}

#[test]
fn every_shipped_grammar_parses_and_has_tests() {
    let mut names: Vec<String> = std::fs::read_dir(grammars_dir())
        .expect("grammars directory")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".gbnf"))
        .collect();
    names.sort();
    let tested = [
        "arithmetic.gbnf",
        "c_like.gbnf",
        "chess.gbnf",
        "csv.gbnf",
        "iso8601.gbnf",
        "json.gbnf",
        "list.gbnf",
        "sql_select.gbnf",
    ];
    assert_eq!(
        names, tested,
        "a grammar without tests, or a test without its grammar"
    );
    for name in &names {
        load(name);
    }
}

#[test]
fn json() {
    let accept = [
        "{}",
        "[]",
        "0",
        "-0.5e+10",
        "1E3",
        "\"\"",
        "true",
        "null",
        r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
        r#"{ "a": 1, "b": [ 1, 2 ] }"#,
        "{\n    \"a\": [\n        1,\n        2\n    ],\n    \"b\": \"x\"\n}",
        "{\r\n  \"a\": 1\r\n}",
        r#""escapes: \" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00""#,
        "\"unicode: é 日本 😀 \u{7f}\"",
        "[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]",
        "[1,\t2]",
    ];
    let reject = [
        "",
        "{",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\":1,}",
        "[1,]",
        "[,1]",
        "01",
        "+1",
        ".5",
        "1.",
        "1e",
        "NaN",
        "Infinity",
        "'single'",
        "{a:1}",
        "\"unterminated",
        "\"bad escape \\x41\"",
        "\"short \\u12\"",
        "\"raw\nnewline\"",
        "\"tab\tinside\"",
        "True",
        " {}",
        "{} ",
        // Bounded whitespace: three spaces, two line breaks, or 33 spaces of indentation.
        "{   \"a\":1}",
        "{\n\n\"a\":1}",
        &format!("{{\n{}\"a\":1}}", " ".repeat(33)),
    ];
    common::assert_language("json.gbnf", &load("json.gbnf"), &accept, &reject);
}

#[test]
fn arithmetic() {
    let accept = [
        "1",
        "x",
        "-x",
        "--1",
        "1+2",
        "1 + 2 * 3",
        "2 * (x + 1.5) ^ 2 - sqrt(y, 3)",
        "2^3^4",
        "f()",
        "max(a, b, c)",
        "( 1 )",
        "a1 % b2 / 3.25",
    ];
    let reject = [
        "", "1 +", "+1", "1  + 2", "(1", "1)", "1..2", "f(,)", "1.", "x ^", "1 2", "2 ** 3", "_x",
    ];
    common::assert_language(
        "arithmetic.gbnf",
        &load("arithmetic.gbnf"),
        &accept,
        &reject,
    );
}

#[test]
fn list() {
    let accept = [
        "- one\n",
        "- one\n- two\n",
        "- groceries\n  - milk\n  - eggs\n- call Ada\n",
        "- ünïcödé and punctuation: -*#!\n",
    ];
    let many_sub_items = format!("- x\n{}", "  - y\n".repeat(21));
    let long_item = format!("- {}\n", "y".repeat(201));
    let reject = [
        "",
        "- one",
        "-one\n",
        "* one\n",
        "-  leading space\n",
        "- \n",
        "  - sub-item first\n",
        "- a\n    - too deep\n",
        "- a\r\n",
        "- a\u{2028}b\n",
        "- a\n\n- b\n",
        &many_sub_items,
        &long_item,
    ];
    common::assert_language("list.gbnf", &load("list.gbnf"), &accept, &reject);
}

#[test]
fn chess() {
    let accept = [
        "1. e4",
        "1. e4 e5",
        "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 1/2-1/2",
        "1. d4 d5 2. c4 dxc4 3. e3 b5 4. a4 c6 5. axb5 cxb5 6. Qf3 Nc6 7. Qxa8 *",
        "12. Nbd2 Rfe8 13. R1e2 Qxf2+ 14. Kxf2 Bc5#",
        "40. exd8=Q+ Kxd8 41. b8=N!! e1=R?! 0-1",
        "3. O-O-O! Nf6?",
        "100. Ke2 1-0",
    ];
    let reject = [
        "",
        "e4",
        "1.e4",
        "1. e9",
        "1. i4",
        "1. e8",
        "1. e1",
        "1. e8=K",
        "1. Pe4",
        "1. Nf3 Nc6 Bb5",
        "1. O-O-O-O",
        "0. e4",
        "1. e4 e5 2-0",
        "1. e4  e5",
        "1. exd",
        "1. Nf3+#",
    ];
    common::assert_language("chess.gbnf", &load("chess.gbnf"), &accept, &reject);
}

#[test]
fn csv() {
    let accept = [
        "a",
        "a,b,c",
        "a,b\n1,2\n",
        "name,age,note\r\nAda,36,\"says \"\"hi\"\", often\"\r\n",
        ",",
        "a,,c",
        "\"\"",
        "\"multi\nline\",x",
        "x\ny,z",
    ];
    let reject = [
        "", "\n", "a\n\nb", "a\n\n", "a\"b", "\"open", "\"a\"b", "\"a\" ,b", "a\rb",
    ];
    common::assert_language("csv.gbnf", &load("csv.gbnf"), &accept, &reject);
}

#[test]
fn c_like() {
    let gcd = "int gcd(int a, int b) {\n    while (b != 0) { int t = b; b = a % b; a = t; }\n    return a;\n}\n";
    let accept = [
        "int main(void) { return 0; }",
        gcd,
        "// entry point\nvoid run(char *s, float* v, int**p) {\n  int i;\n  for (i = 0; i < 10; i++) {\n    v[i] += f(i, s[i]) * -2.5;\n  }\n  if (!p) return; else { **p = 'x'; }\n  print(\"done\\n\");\n}",
        "bool f(){if(a&&b||c)x=1;else y=2;}",
        "int a() {}\nint b() {}",
        "long f(int n) { long xs[16] = 0; for (;;) break; do_it(); continue; }",
    ];
    let blank_lines = format!("int f() {{{}}}", "\n".repeat(25));
    let reject = [
        "",
        "main() {}",
        "int main() { return 0 }",
        "int main() { return 0;",
        "intmain() {}",
        "int main() { x = ; }",
        "int main() { if x { } }",
        "int main() { returnx; }",
        "int f(int) {}",
        "int f() { int x = 08; }",
        "int f() { s = \"unterminated; }",
        "int f() { x = 1 + ; }",
        "int f() { else {} }",
        &blank_lines,
    ];
    common::assert_language("c_like.gbnf", &load("c_like.gbnf"), &accept, &reject);
}

#[test]
fn iso8601() {
    let accept = [
        "2024-02-29",
        "1999-12-31",
        "2024-04-30",
        "2024-02-29T13:05:00Z",
        "2024-12-31T23:59:60.123+02:00",
        "0001-01-01T00:00:00-12:00",
        "2024-06-01T12:00:00.123456789Z",
    ];
    let reject = [
        "2024-02-30",
        "2024-04-31",
        "2024-13-01",
        "2024-00-10",
        "2024-01-00",
        "2024-1-01",
        "24-01-01",
        "2024-01-01T24:00:00Z",
        "2024-01-01T12:60:00Z",
        "2024-01-01T12:00:61Z",
        "2024-01-01T12:00:00",
        "2024-01-01T12:00Z",
        "2024-01-01 12:00:00Z",
        "2024-01-01T12:00:00.Z",
        "2024-01-01T12:00:00+2:00",
    ];
    common::assert_language("iso8601.gbnf", &load("iso8601.gbnf"), &accept, &reject);
}

#[test]
fn sql_select() {
    let accept = [
        "SELECT * FROM users;",
        "SELECT DISTINCT name FROM users u WHERE u.age >= 18 AND name LIKE 'A%';",
        "SELECT name, COUNT(*) AS n FROM users u LEFT JOIN orders o ON o.user_id = u.id\nWHERE u.age >= 18 GROUP BY name ORDER BY n DESC LIMIT 10;",
        "SELECT a FROM t WHERE b IN (1, 2, 'x') OR NOT (c IS NOT NULL);",
        "SELECT price * 1.5 AS p FROM items WHERE price BETWEEN 1 AND 100 ORDER BY p, name ASC;",
        "SELECT AVG(DISTINCT score) FROM s GROUP BY team HAVING COUNT(*) > 3;",
        "SELECT 'it''s' FROM t;",
    ];
    let reject = [
        "",
        "SELECT * FROM users",
        "select * from users;",
        "DELETE FROM users;",
        "SELECT * FROM users; DROP TABLE users;",
        "SELECT * FROM users WHERE;",
        "SELECT  * FROM users;",
        "SELECT * FROM users LIMIT -1;",
        "SELECT * FROM Users;",
        "SELECT 'open FROM t;",
        "UPDATE users SET a = 1;",
    ];
    common::assert_language(
        "sql_select.gbnf",
        &load("sql_select.gbnf"),
        &accept,
        &reject,
    );
}
