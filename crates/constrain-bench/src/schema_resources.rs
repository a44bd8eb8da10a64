//! Schema documents a `$ref` may name by URI: `--resource URI=FILE` flags, and the
//! JSON-Schema-Test-Suite's `remotes/` directory, which the suite serves at
//! `http://localhost:1234/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::Value;

/// The base URI the suite's `remotes/` files are retrieved by (the suite's README).
pub const SUITE_REMOTES_URI: &str = "http://localhost:1234/";

/// One `--resource URI=FILE` argument (split at the last `=`).
#[derive(Clone, Debug)]
pub struct ResourceArg {
    /// The URI references name the document by.
    pub uri: String,
    /// The file holding it.
    pub path: PathBuf,
}

impl std::str::FromStr for ResourceArg {
    type Err = String;

    fn from_str(text: &str) -> Result<ResourceArg, String> {
        // A URI's query may hold `=`; file names rarely do.
        match text.rsplit_once('=') {
            Some((uri, path)) if !uri.is_empty() && !path.is_empty() => Ok(ResourceArg {
                uri: uri.to_string(),
                path: PathBuf::from(path),
            }),
            _ => Err(format!("expected URI=FILE, got {text:?}")),
        }
    }
}

/// The documents of `args`, read and parsed.
pub fn load(args: &[ResourceArg]) -> anyhow::Result<BTreeMap<String, Value>> {
    let mut resources = BTreeMap::new();
    for arg in args {
        let value = read_json(&arg.path)?;
        if resources.insert(arg.uri.clone(), value).is_some() {
            bail!("--resource {}: the URI is given twice", arg.uri);
        }
    }
    Ok(resources)
}

/// Every `*.json` file under `dir`, each under `base_uri` followed by its path from `dir`.
pub fn load_directory(dir: &Path, base_uri: &str) -> anyhow::Result<BTreeMap<String, Value>> {
    let mut resources = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = std::fs::read_dir(&current)
            .with_context(|| format!("listing {}", current.display()))?;
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let relative = path.strip_prefix(dir).unwrap_or(&path);
                let parts: Vec<_> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect();
                resources.insert(format!("{base_uri}{}", parts.join("/")), read_json(&path)?);
            }
        }
    }
    Ok(resources)
}

/// The suite's `remotes/` directory, for a directory of suite files (`tests/draft2020-12`) or
/// one of them: `../../remotes` from the directory, if it is there.
pub fn suite_remotes(path: &Path) -> Option<PathBuf> {
    let dir = if path.is_dir() { path } else { path.parent()? };
    let remotes = dir.parent()?.parent()?.join("remotes");
    remotes.is_dir().then_some(remotes)
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_arguments_split_at_the_last_equals_sign() {
        let arg: ResourceArg = "https://example.com/a.json?v=2=types.json".parse().unwrap();
        assert_eq!(arg.uri, "https://example.com/a.json?v=2");
        assert_eq!(arg.path, PathBuf::from("types.json"));
        assert!("no-equals-sign".parse::<ResourceArg>().is_err());
        assert!("=file.json".parse::<ResourceArg>().is_err());
    }

    #[test]
    fn directories_map_to_uris_by_relative_path() {
        let dir = std::env::temp_dir().join(format!("constrain-resources-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("nested")).unwrap();
        std::fs::write(dir.join("a.json"), r#"{"type": "integer"}"#).unwrap();
        std::fs::write(dir.join("nested/b.json"), r#"{"type": "string"}"#).unwrap();
        std::fs::write(dir.join("notes.txt"), "not a schema").unwrap();
        let resources = load_directory(&dir, SUITE_REMOTES_URI).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let uris: Vec<_> = resources.keys().map(String::as_str).collect();
        assert_eq!(
            uris,
            [
                "http://localhost:1234/a.json",
                "http://localhost:1234/nested/b.json"
            ]
        );
    }
}
