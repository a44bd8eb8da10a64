//! MaskBench data files: one JSON Schema with its test instances per file.
//!
//! A file is `{"schema": ..., "tests": [{"description", "valid", "data"}, ...], ...}`; other
//! members (`meta`, `description`, validator messages) are ignored.

use std::fs;
use std::path::{Path, PathBuf};

use super::json_text::Json;

/// One schema file.
#[derive(Debug)]
pub struct SchemaFile {
    /// The file name, which identifies the schema in reports (`Github_easy---o12368.json`).
    pub id: String,
    /// The schema.
    pub schema: serde_json::Value,
    /// The instances, in file order.
    pub tests: Vec<Instance>,
}

/// One test instance of a schema.
#[derive(Debug)]
pub struct Instance {
    /// Whether the instance conforms to the schema.
    pub valid: bool,
    /// The instance, with its number text kept.
    pub data: Json,
}

/// The `*.json` files of `dir`, sorted by file name.
pub fn list_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

/// The report id of a file: its name.
pub fn file_id(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Reads one schema file; the error says what is wrong and where.
pub fn load(path: &Path) -> Result<SchemaFile, String> {
    let text = fs::read_to_string(path).map_err(|err| format!("cannot read: {err}"))?;
    let root = Json::parse(&text).map_err(|err| format!("not JSON: {err}"))?;
    let schema = root.get("schema").ok_or("no \"schema\" member")?;
    let schema = schema.to_serde().map_err(|err| format!("/schema: {err}"))?;
    let tests = match root.get("tests") {
        None => Vec::new(),
        Some(tests) => {
            let tests = tests.as_array().ok_or("\"tests\" is not an array")?;
            tests
                .iter()
                .enumerate()
                .map(|(i, test)| {
                    let valid = test
                        .get("valid")
                        .and_then(Json::as_bool)
                        .ok_or_else(|| format!("/tests/{i}: no boolean \"valid\""))?;
                    let data = test
                        .get("data")
                        .ok_or_else(|| format!("/tests/{i}: no \"data\""))?;
                    Ok(Instance {
                        valid,
                        data: data.clone(),
                    })
                })
                .collect::<Result<_, String>>()?
        }
    };
    Ok(SchemaFile {
        id: file_id(path),
        schema,
        tests,
    })
}
