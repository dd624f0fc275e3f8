//! What can go wrong reading settings; every error names the file (or `--settings`).

use std::path::PathBuf;

/// A settings file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file exists but could not be read.
    #[error("cannot read settings file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not JSON, or a known key with a value of the wrong type.
    #[error("{origin}, line {line} column {column}: {message}; fix or remove it")]
    Parse {
        /// The file, or `--settings`.
        origin: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// serde's description.
        message: String,
    },
    /// Well-formed JSON with a value troupe cannot accept.
    #[error("{origin}: `{key}`: {message}")]
    Invalid {
        /// The file, or `--settings`.
        origin: String,
        /// The offending key, dotted (`permissions.defaultMode`).
        key: String,
        /// What is wrong and what would be right.
        message: String,
    },
}
