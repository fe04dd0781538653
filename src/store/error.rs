//! `StoreError`: what can go wrong below the store's API.

use super::codec::CodecError;
use super::keys::KeyError;

/// A failure of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// RocksDB reported an I/O or internal error.
    #[error("rocksdb: {0}")]
    Rocks(#[from] rocksdb::Error),
    /// A stored value did not decode: the data is corrupt or was written by another schema.
    #[error("corrupt value in `{table}` at key {key}: {source}")]
    Decode {
        /// Column family.
        table: &'static str,
        /// Key, hex.
        key: String,
        /// Codec failure.
        source: CodecError,
    },
    /// A stored key had the wrong shape.
    #[error("corrupt key in `{table}`: {source}")]
    Key {
        /// Column family.
        table: &'static str,
        /// Key failure.
        source: KeyError,
    },
    /// A value could not be encoded.
    #[error("encode for `{table}`: {source}")]
    Encode {
        /// Column family.
        table: &'static str,
        /// Codec failure.
        source: CodecError,
    },
    /// The data directory holds another schema version.
    #[error(
        "the data directory holds schema version {found}, this build needs {expected}: \
         restart with --reindex to rebuild the index (the node's data is not touched)"
    )]
    SchemaMismatch {
        /// Version on disk.
        found: u32,
        /// Version this build writes.
        expected: u32,
    },
    /// A scan ran past its reader's deadline (the request it serves is out of time).
    #[error("read stopped: the request's time is up")]
    Deadline,
    /// The directory a replica, a snapshot or an account command was pointed at holds no store.
    #[error("{0} is not a rockscout data directory (no RocksDB store in it)")]
    NotAStore(std::path::PathBuf),
    /// Another process holds the directory's lock (RocksDB allows one writer per directory).
    #[error("the data directory {0} is in use by another process (a running rockscout); stop it first")]
    InUse(std::path::PathBuf),
    /// A directory of the store could not be created or made owner-only.
    #[error("{0}: {1}")]
    Dir(std::path::PathBuf, std::io::Error),
    /// The data directory was created by a different program or is missing required rows.
    #[error("store is inconsistent: {0}")]
    Inconsistent(String),
}

impl StoreError {
    /// Whether the storage itself failed (disk full, I/O error) rather than the data: the same write can succeed once
    /// the operator frees space or fixes the disk, so writers pause and retry instead of stopping the daemon.
    /// RocksDB refuses every write after such an error until it recovers by itself (for a full disk: within 5 s of
    /// 64 MiB, its largest memtable, being free).
    pub fn is_io(&self) -> bool {
        matches!(self, StoreError::Rocks(e) if e.kind() == rocksdb::ErrorKind::IOError)
    }
}

/// Result alias of the store.
pub type StoreResult<T> = Result<T, StoreError>;
