//! Module cycles inside each crate under `crates/`.
//!
//! Modules that depend on each other in a cycle can only be read, tested and changed together;
//! a helper that many modules share belongs in a leaf. This test reads every crate's sources,
//! takes each reference to a module of the same crate (`use crate::…`, `use super::…`, paths
//! such as `crate::a::b(…)` in code, and re-exports followed to where they lead), and finds the
//! strongly connected components among the modules of each parent.
//!
//! A reference from `a::x` to `b::y` is counted as one from `a` to `b`, the two children of the
//! modules' nearest common parent: cycles are looked for among siblings. A module and its own
//! submodules (a parent re-exporting what its children define, a child using its parent's
//! imports) are one unit, not a cycle.
//!
//! `cargo test --test module_cycles -- --nocapture` prints the cycles of every crate.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Crates that still have cycles, each with how many: the test fails if one of them gains a
/// cycle, and if one of them has fewer (then its count goes down, and its line goes at 0).
/// Every other crate has none.
const KNOWN_CYCLES: &[(&str, usize)] = &[];

#[test]
fn no_crate_has_module_cycles_beyond_the_known_ones() {
    let crates = workspace_crates();
    assert!(crates.len() >= 10, "found only {crates:?}");
    let mut failures = Vec::new();
    for (name, src) in &crates {
        let cycles = crate_cycles(src);
        for cycle in &cycles {
            println!("{name}: {cycle}");
        }
        let cycles: Vec<String> = cycles.iter().map(Cycle::to_string).collect();
        let known = KNOWN_CYCLES
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |&(_, count)| count);
        if cycles.len() > known {
            failures.push(format!(
                "{name} has {} cycles:\n  {}",
                cycles.len(),
                cycles.join("\n  ")
            ));
        } else if known > 0 && cycles.len() < known {
            failures.push(format!(
                "{name} has {} cycles, fewer than the {known} KNOWN_CYCLES names: lower it",
                cycles.len()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_cycle_through_a_helper_and_a_re_export_is_found() {
    let dir = std::env::temp_dir().join(format!("module-cycles-{}", std::process::id()));
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write(
        "lib.rs",
        "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\npub use c::Thing;\n",
    );
    // `a` reaches `b` inside a group and through a nested module of `b`.
    write(
        "a.rs",
        "use crate::{b::inner::{f, g as h}, d};\n// use crate::c;\n",
    );
    write("b/mod.rs", "pub(crate) mod inner;\n");
    write(
        "b/inner.rs",
        "fn f() { let s = \"crate::d\"; crate::Thing::new(); }\n",
    );
    // `c` reaches `a` only from code, behind a lifetime and a char literal.
    write(
        "c.rs",
        "fn x<'a>(c: &'a char) -> bool { *c == '{' && super::a::y() }\n",
    );
    // `d` reaches `e` from a module written inline; `e` reaches nothing.
    write("d.rs", "mod tests { use super::super::e; }\n");
    write("e.rs", "");
    let cycles = crate_cycles(&dir);
    fs::remove_dir_all(&dir).unwrap();
    let modules: Vec<&str> = cycles.iter().map(|c| c.modules.as_str()).collect();
    assert_eq!(
        modules,
        ["a → b → c"],
        "the comment and the string are no references"
    );
    assert_eq!(
        cycles[0].uses,
        [
            "a uses crate::b::inner::f",
            "b::inner uses crate::Thing::new",
            "c uses crate::a::y"
        ]
    );
}

/// Each member crate's name and `src` folder.
fn workspace_crates() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut crates: Vec<_> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                p.join("src"),
            )
        })
        .collect();
    crates.sort();
    crates
}

/// A module, as its path from the crate root (`[]` is the root).
type ModPath = Vec<String>;

/// What one crate's sources say about its modules.
#[derive(Default)]
struct Crate {
    modules: BTreeSet<ModPath>,
    /// Per module, the names its `use` items bring in, and the paths (from the root) they name.
    imports: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
    /// Per module, the paths (from the root) it refers to.
    references: BTreeMap<ModPath, Vec<ModPath>>,
    /// Modules declared under `#[cfg(test)]`.
    test_modules: BTreeSet<ModPath>,
}

/// Modules that depend on each other in a cycle.
struct Cycle {
    /// The modules, siblings under one parent, named by their paths from the root, in the
    /// order of the cycle where one order visits them all: `a → b → c`.
    modules: String,
    /// For each dependency between two of them, one reference that makes it.
    uses: Vec<String>,
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.modules, self.uses.join("; "))
    }
}

/// The cycles of the crate whose sources are under `src`.
fn crate_cycles(src: &Path) -> Vec<Cycle> {
    let mut krate = Crate::default();
    let mut files = Vec::new();
    collect_files(src, src, &mut files);
    for (path, _) in &files {
        krate.modules.insert(path.clone());
    }
    for (path, file) in &files {
        let tokens = tokenize(&fs::read_to_string(file).unwrap());
        read_module(&mut krate, path, &tokens);
    }
    // Edges between siblings, grouped by their parent, and one reference behind each.
    let mut edges: BTreeMap<ModPath, BTreeSet<(ModPath, ModPath)>> = BTreeMap::new();
    let mut because: BTreeMap<(ModPath, ModPath), String> = BTreeMap::new();
    for (from, targets) in &krate.references {
        if (1..=from.len()).any(|n| krate.test_modules.contains(&from[..n])) {
            continue;
        }
        for target in targets {
            let to = resolve(&krate, target, 0);
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue; // A module and its ancestor.
            }
            let edge = (from[..=common].to_vec(), to[..=common].to_vec());
            because.entry(edge.clone()).or_insert_with(|| {
                format!("{} uses crate::{}", from.join("::"), target.join("::"))
            });
            edges
                .entry(from[..common].to_vec())
                .or_default()
                .insert(edge);
        }
    }
    let mut cycles = Vec::new();
    for group in edges.values() {
        for component in strongly_connected(group) {
            let names: Vec<_> = component.iter().map(|m| m.join("::")).collect();
            let uses = group
                .iter()
                .filter(|(a, b)| component.contains(a) && component.contains(b))
                .map(|edge| because[edge].clone())
                .collect();
            cycles.push(Cycle {
                modules: names.join(" → "),
                uses,
            });
        }
    }
    cycles
}

/// Every `.rs` file under `dir` with its module path (`a/mod.rs` and `a.rs` are `a`).
fn collect_files(src: &Path, dir: &Path, out: &mut Vec<(ModPath, PathBuf)>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_files(src, &path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let relative = path.strip_prefix(src).unwrap().with_extension("");
        let mut module: ModPath = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            module.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            module.pop();
        }
        out.push((module, path));
    }
}

/// The module a path from the root names: the longest prefix that is a module, following the
/// imports of the module reached so far when the next name is one of them.
fn resolve(krate: &Crate, path: &[String], depth: usize) -> ModPath {
    let mut module = Vec::new();
    for (i, name) in path.iter().enumerate() {
        let mut child = module.clone();
        child.push(name.clone());
        if krate.modules.contains(&child) {
            module = child;
            continue;
        }
        let import = krate.imports.get(&module).and_then(|m| m.get(name));
        if let Some(target) = import.filter(|_| depth < 16) {
            let mut target = target.clone();
            target.extend_from_slice(&path[i + 1..]);
            return resolve(krate, &target, depth + 1);
        }
        break;
    }
    module
}

/// Records the imports and references of the file module `file_module` (and of the modules
/// written inline in it).
fn read_module(krate: &mut Crate, file_module: &ModPath, tokens: &[String]) {
    // The modules open at this point, with the brace depth at which each one closes.
    let mut stack: Vec<(ModPath, usize)> = vec![(file_module.clone(), 0)];
    let mut depth: usize = 0;
    let mut i = 0;
    while i < tokens.len() {
        let current = stack.last().unwrap().0.clone();
        match tokens[i].as_str() {
            "{" => depth += 1,
            "}" => {
                // Braces inside macro bodies need not balance in the tokens kept here.
                depth = depth.saturating_sub(1);
                if stack.len() > 1 && stack.last().unwrap().1 == depth {
                    stack.pop();
                }
            }
            "mod" if tokens.get(i + 2).is_some_and(|t| t == "{" || t == ";") => {
                let mut module = current.clone();
                module.push(tokens[i + 1].clone());
                if test_only(tokens, i) {
                    krate.test_modules.insert(module.clone());
                }
                if tokens[i + 2] == "{" {
                    krate.modules.insert(module.clone());
                    stack.push((module, depth));
                    depth += 1;
                }
                i += 3;
                continue;
            }
            "use" => {
                let end = (i..tokens.len())
                    .find(|&j| tokens[j] == ";")
                    .unwrap_or(tokens.len());
                let mut items = Vec::new();
                use_tree(&tokens[i + 1..end], &mut Vec::new(), &mut items);
                for (path, name) in items {
                    if let Some(absolute) = absolute(krate, &current, &path) {
                        if let Some(name) = name {
                            let imports = krate.imports.entry(current.clone()).or_default();
                            imports.insert(name, absolute.clone());
                        }
                        krate
                            .references
                            .entry(current.clone())
                            .or_default()
                            .push(absolute);
                    }
                }
                i = end + 1;
                continue;
            }
            "crate" | "super" | "self" if tokens.get(i + 1).is_some_and(|t| t == "::") => {
                let preceded = i > 0 && matches!(tokens[i - 1].as_str(), "::" | "$");
                let mut path = vec![tokens[i].clone()];
                let mut j = i + 1;
                while tokens.get(j).is_some_and(|t| t == "::")
                    && tokens.get(j + 1).is_some_and(|t| is_ident(t))
                {
                    path.push(tokens[j + 1].clone());
                    j += 2;
                }
                if !preceded {
                    if let Some(absolute) = absolute(krate, &current, &path) {
                        krate
                            .references
                            .entry(current.clone())
                            .or_default()
                            .push(absolute);
                    }
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

/// Whether the `mod` at `at` has a `#[cfg(test)]` among its attributes.
fn test_only(tokens: &[String], at: usize) -> bool {
    let mut end = at;
    // Skip a visibility: `pub`, `pub(crate)`, `pub(super)`.
    if end >= 1 && tokens[end - 1] == "pub" {
        end -= 1;
    } else if end >= 4 && tokens[end - 1] == ")" && tokens[end - 4] == "pub" {
        end -= 4;
    }
    while end >= 1 && tokens[end - 1] == "]" {
        let Some(open) = (0..end - 1).rev().find(|&j| tokens[j] == "[") else {
            return false;
        };
        if tokens[open + 1..end - 1] == ["cfg", "(", "test", ")"] {
            return true;
        }
        end = open;
    }
    false
}

/// A path written in `module` as a path from the root; `None` for other crates' paths.
fn absolute(krate: &Crate, module: &ModPath, path: &[String]) -> Option<ModPath> {
    let mut base = module.clone();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self" | "super") => {
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "self" => {}
                    "super" => {
                        base.pop()?;
                    }
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        Some(first) => {
            // A child module or a name this module imported; anything else is another crate.
            let mut child = module.clone();
            child.push(first.to_string());
            let imported = krate
                .imports
                .get(module)
                .is_some_and(|m| m.contains_key(first));
            if !krate.modules.contains(&child) && !imported {
                return None;
            }
        }
        None => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The paths of a use tree (the tokens between `use` and `;`), each with the name it brings in
/// (`None` for globs).
fn use_tree(
    tokens: &[String],
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let depth_before = prefix.len();
    let mut i = 0;
    if tokens.first().is_some_and(|t| t == "::") {
        i = 1;
    }
    while i < tokens.len() {
        let token = tokens[i].as_str();
        match token {
            "::" => {}
            "{" => {
                // Split the group at its top-level commas.
                let close = matching(tokens, i);
                let mut start = i + 1;
                let mut level = 0;
                for j in i + 1..close {
                    match tokens[j].as_str() {
                        "{" => level += 1,
                        "}" => level -= 1,
                        "," if level == 0 => {
                            use_tree(&tokens[start..j], prefix, out);
                            start = j + 1;
                        }
                        _ => {}
                    }
                }
                use_tree(&tokens[start..close], prefix, out);
                prefix.truncate(depth_before);
                return;
            }
            "*" => {
                out.push((prefix.clone(), None));
                prefix.truncate(depth_before);
                return;
            }
            "as" => {
                let alias = tokens.get(i + 1).cloned().filter(|a| a != "_");
                out.push((prefix.clone(), alias));
                prefix.truncate(depth_before);
                return;
            }
            _ if is_ident(token) => prefix.push(token.to_string()),
            _ => {}
        }
        i += 1;
    }
    if prefix.len() > depth_before {
        let name = prefix.last().filter(|n| n.as_str() != "self").cloned();
        // `use a::b::{self}` brings in `b`.
        let name = name.or_else(|| prefix.iter().rev().nth(1).cloned());
        out.push((prefix.clone(), name));
    }
    prefix.truncate(depth_before);
}

/// The index of the `}` closing the `{` at `open`.
fn matching(tokens: &[String], open: usize) -> usize {
    let mut level = 0;
    for (j, t) in tokens.iter().enumerate().skip(open) {
        match t.as_str() {
            "{" => level += 1,
            "}" => {
                level -= 1;
                if level == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

fn is_ident(token: &str) -> bool {
    token.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// The tokens that matter for paths: identifiers, `::` and single punctuation characters, with
/// comments, string and character literals left out.
fn tokenize(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut level = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    level += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    level -= 1;
                    i += 2;
                    if level == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(&chars, i + 1);
        } else if (c == 'r' || c == 'b') && raw_string_start(&chars, i).is_some() {
            let (hashes, quote) = raw_string_start(&chars, i).unwrap();
            i = quote + 1;
            while i < chars.len() {
                if chars[i] == '"'
                    && chars[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes
                {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
        } else if c == '\'' {
            if next == Some('\\') {
                // An escaped character literal.
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3; // A character literal.
            } else {
                i += 1; // A lifetime's quote.
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // `r#ident` is the identifier `ident`.
            if word == "r"
                && chars.get(i) == Some(&'#')
                && chars.get(i + 1).is_some_and(|c| c.is_alphabetic())
            {
                continue;
            }
            tokens.push(word);
        } else if c == ':' && next == Some(':') {
            tokens.push("::".to_string());
            i += 2;
        } else {
            if c != '#' {
                tokens.push(c.to_string());
            }
            i += 1;
        }
    }
    tokens
}

/// The index after the closing quote of a string whose text starts at `i`.
fn skip_string(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// For a raw or byte string starting at `i` (`r"`, `r#"`, `br#"`, `b"`): the number of `#`s and
/// the index of the opening quote.
fn raw_string_start(chars: &[char], i: usize) -> Option<(usize, usize)> {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if chars[j] == 'b' {
        j += 1;
    }
    let raw = chars.get(j) == Some(&'r');
    if raw {
        j += 1;
    }
    let hashes = chars[j..].iter().take_while(|&&c| c == '#').count();
    if !raw && hashes > 0 {
        return None;
    }
    (chars.get(j + hashes) == Some(&'"') && j > i).then_some((hashes, j + hashes))
}

/// The strongly connected components of more than one module, each in an order that follows
/// its edges from its smallest member where one such order exists.
fn strongly_connected(edges: &BTreeSet<(ModPath, ModPath)>) -> Vec<Vec<ModPath>> {
    let nodes: BTreeSet<&ModPath> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    let reaches = |from: &ModPath| {
        let mut seen = BTreeSet::from([from.clone()]);
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for (a, b) in edges {
                if *a == m && seen.insert(b.clone()) {
                    todo.push(b.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&ModPath, BTreeSet<ModPath>> =
        nodes.iter().map(|&n| (n, reaches(n))).collect();
    let mut done = BTreeSet::new();
    let mut components = Vec::new();
    for &node in &nodes {
        if done.contains(node) {
            continue;
        }
        let component: Vec<ModPath> = nodes
            .iter()
            .filter(|&&m| reach[node].contains(m) && reach[m].contains(node))
            .map(|&m| m.clone())
            .collect();
        done.extend(component.iter().cloned());
        if component.len() > 1 {
            components.push(order(component, edges));
        }
    }
    components
}

/// The members of a component in the order of a walk along its edges from the first, where a
/// simple path visits them all; otherwise sorted.
fn order(component: Vec<ModPath>, edges: &BTreeSet<(ModPath, ModPath)>) -> Vec<ModPath> {
    let mut path = vec![component[0].clone()];
    while path.len() < component.len() {
        let last = path.last().unwrap();
        let next = component
            .iter()
            .find(|m| !path.contains(m) && edges.contains(&(last.clone(), (*m).clone())));
        match next {
            Some(m) => path.push(m.clone()),
            None => return component,
        }
    }
    path
}
