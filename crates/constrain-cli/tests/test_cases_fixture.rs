//! `constrain test-cases` on the committed case file, and on files made to fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `constrain test-cases` with `args`.
fn test_cases(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_constrain"))
        .arg("test-cases")
        .args(args)
        .output()
        .expect("the constrain binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn fixture_cases() -> PathBuf {
    constrain_testdata::fixture("gbnf/test_cases.json")
}

fn write_temp(name: &str, content: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, content).expect("temporary file is writable");
    path
}

#[test]
fn fixture_cases_pass_at_byte_level() {
    let output = test_cases(&[fixture_cases().as_os_str()]);
    let out = stdout(&output);
    // 6 grammars build, 38 strings, 4 build failures, 5 parser cases.
    assert_eq!(
        out,
        "48 passed, 0 failed\n",
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success());
}

#[test]
fn fixture_cases_pass_token_by_token() {
    let tokenizer = constrain_testdata::fixture_tokenizer();
    let output = test_cases(&[
        fixture_cases().as_os_str(),
        "--tokenizer".as_ref(),
        tokenizer.as_os_str(),
    ]);
    let out = stdout(&output);
    // The 27 UTF-8 strings are also checked through the tokenizer; the 6 with special
    // tokens are not, and the output says so.
    assert!(
        out.ends_with("75 passed, 0 failed\n"),
        "{out}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(out.contains("note: 6 strings hold special tokens"), "{out}");
    assert!(output.status.success());
}

#[test]
fn failures_are_reported_one_per_line() {
    let cases = r#"[
        {"id": "wrong/0", "grammar": "root ::= [0-9]+", "root": "root",
         "passing": ["12", "1a"], "failing": ["3", ""], "string_encoding": "utf-8"},
        {"id": "wrong/1", "grammar": "root ::= undefined-rule", "root": "root",
         "passing": ["x"], "failing": []},
        {"id": "wrong/2", "grammar": "root ::= \"ok\"", "root": "root", "reason": "it is fine"},
        {"id": "wrong/3", "grammar": "root ::= (", "should_parse": true}
    ]"#;
    let path = write_temp("failing_cases.json", cases);
    let output = test_cases(&[path.as_os_str()]);
    let out = stdout(&output);
    let expected = [
        "FAIL wrong/0: passing[1] \"1a\" [bytes]: not accepted: refused at byte 1",
        "FAIL wrong/0: failing[0] \"3\" [bytes]: accepted, but must be rejected",
        "FAIL wrong/1: the grammar does not parse: 1:10: undefined rule 'undefined-rule' (1 string checks not run)",
        "FAIL wrong/2: the grammar builds with root 'root', but must be refused (it is fine)",
        "FAIL wrong/3: the grammar must parse, but: 1:11: '(' opened at 1:10 is never closed",
        // wrong/0: builds, "12", "" rejected; wrong/1: build + 1 string; wrong/2; wrong/3.
        "3 passed, 6 failed",
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), expected);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn unknown_formats_and_missing_files_are_errors() {
    let path = write_temp("not_cases.json", r#"{"grammar": "root ::= \"a\""}"#);
    let output = test_cases(&[path.as_os_str()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not a file of test cases"));

    let output = test_cases(&["/nonexistent/cases.json".as_ref()]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn root_option_names_the_default_start_rule() {
    let path = write_temp(
        "rootless.json",
        r#"[{"id": "r/0", "grammar": "start ::= \"go\"", "passing": ["go"]}]"#,
    );
    let output = test_cases(&[path.as_os_str()]);
    assert!(
        stdout(&output).ends_with("0 passed, 2 failed\n"),
        "{}",
        stdout(&output)
    );
    let output = test_cases(&[path.as_os_str(), "--root".as_ref(), "start".as_ref()]);
    assert_eq!(stdout(&output), "2 passed, 0 failed\n");
}
