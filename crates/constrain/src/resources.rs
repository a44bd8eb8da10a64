//! Schema documents a `$ref` may name by URI, read from files (nothing is fetched): `--resource URI=FILE` flags, and the
//! JSON-Schema-Test-Suite's `remotes/` directory, which the suite serves at
//! `http://localhost:1234/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use thiserror::Error;

/// A schema document that cannot be had.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// The file or directory cannot be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{path} is not JSON: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// Two documents under one URI.
    #[error("--resource {uri}: the URI is given twice")]
    Duplicate {
        /// The URI.
        uri: String,
    },
}

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

/// The documents of `args`, read and parsed, for
/// [`SchemaOptions::resources`](crate::SchemaOptions).
pub fn load(args: &[ResourceArg]) -> Result<BTreeMap<String, Value>, ResourceError> {
    let mut resources = BTreeMap::new();
    for arg in args {
        let value = read_json(&arg.path)?;
        if resources.insert(arg.uri.clone(), value).is_some() {
            return Err(ResourceError::Duplicate {
                uri: arg.uri.clone(),
            });
        }
    }
    Ok(resources)
}

/// Every `*.json` file under `dir`, each under `base_uri` followed by its path from `dir`.
pub fn load_directory(
    dir: &Path,
    base_uri: &str,
) -> Result<BTreeMap<String, Value>, ResourceError> {
    let mut resources = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let unreadable = |source| ResourceError::Read {
            path: current.clone(),
            source,
        };
        let entries = std::fs::read_dir(&current).map_err(unreadable)?;
        for entry in entries {
            let path = entry.map_err(unreadable)?.path();
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

fn read_json(path: &Path) -> Result<Value, ResourceError> {
    let text = std::fs::read_to_string(path).map_err(|source| ResourceError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| ResourceError::Json {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
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
