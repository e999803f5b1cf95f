//! The content-addressed blob store.
//!
//! Large inputs (thermal images) never travel through the router as base64: they are
//! written here once, named by their SHA-256, and tools receive a URL the router serves
//! (`/blobs/<sha256>`). Writing streams and hashes at the same time and stops at the
//! size limit, so an oversize upload costs at most `limit` bytes of disk, briefly. HTTP
//! bodies come in through [`BlobStore::put_stream`].

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// Default upload limit.
pub const DEFAULT_MAX_BLOB: u64 = 64 * 1024 * 1024;

/// Why a blob could not be stored or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlobError {
    /// The upload exceeds the limit.
    #[error("upload of {} exceeds the blob size limit of {}", human(*.size), human(*.limit))]
    TooLarge {
        /// Bytes seen (at least).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// An empty upload.
    #[error("upload is empty")]
    Empty,
    /// Not a SHA-256 hex digest.
    #[error("{0:?} is not a blob id (64 lowercase hex characters)")]
    BadId(String),
    /// Disk trouble.
    #[error("blob store at {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Bytes in a readable unit.
pub fn human(n: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if n >= 1024 * 1024 { format!("{:.1} MiB", n as f64 / MIB) } else { format!("{n} bytes") }
}

/// A stored blob.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BlobRef {
    /// Hex SHA-256 of the content.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
}

/// Blobs as files named by their hash.
#[derive(Debug, Clone)]
pub struct BlobStore {
    dir: PathBuf,
    limit: u64,
}

fn valid_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl BlobStore {
    /// Opens (creating) the store directory.
    pub fn open(dir: impl Into<PathBuf>, limit: u64) -> Result<Self, BlobError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|source| BlobError::Io { path: dir.clone(), source })?;
        Ok(BlobStore { dir, limit })
    }

    /// The size limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Where a blob lives.
    pub fn path_of(&self, id: &str) -> Result<PathBuf, BlobError> {
        if !valid_id(id) {
            return Err(BlobError::BadId(id.to_owned()));
        }
        Ok(self.dir.join(id))
    }

    /// Stores everything `reader` yields, up to the limit.
    pub async fn put_reader<R: AsyncRead + Unpin>(&self, mut reader: R) -> Result<BlobRef, BlobError> {
        let tmp = self.dir.join(format!(".upload-{}-{}", std::process::id(), next_tmp()));
        let io = |source| BlobError::Io { path: tmp.clone(), source };
        let mut file = tokio::fs::File::create(&tmp).await.map_err(io)?;
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut buf = vec![0u8; 256 * 1024];
        let result = loop {
            let n = match reader.read(&mut buf).await {
                Ok(n) => n,
                Err(e) => break Err(io(e)),
            };
            if n == 0 {
                break Ok(());
            }
            size += n as u64;
            if size > self.limit {
                break Err(BlobError::TooLarge { size, limit: self.limit });
            }
            hasher.update(&buf[..n]);
            if let Err(e) = file.write_all(&buf[..n]).await {
                break Err(io(e));
            }
        };
        let result = match result {
            Ok(()) if size == 0 => Err(BlobError::Empty),
            Ok(()) => file.flush().await.map_err(io),
            Err(e) => Err(e),
        };
        drop(file);
        if let Err(e) = result {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(e);
        }
        let sha256: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
        let dest = self.dir.join(&sha256);
        tokio::fs::rename(&tmp, &dest)
            .await
            .map_err(|source| BlobError::Io { path: dest.clone(), source })?;
        Ok(BlobRef { sha256, size })
    }

    /// Stores a file from disk; a file over the limit is refused before reading it.
    pub async fn put_file(&self, path: &Path) -> Result<BlobRef, BlobError> {
        let io = |source| BlobError::Io { path: path.to_path_buf(), source };
        let meta = tokio::fs::metadata(path).await.map_err(io)?;
        if meta.len() > self.limit {
            return Err(BlobError::TooLarge { size: meta.len(), limit: self.limit });
        }
        let f = tokio::fs::File::open(path).await.map_err(io)?;
        self.put_reader(f).await
    }

    /// Stores a stream of byte chunks (an HTTP request body), up to the limit. A stream that
    /// fails (a body cut at a body-limit layer, a client gone) is an [`BlobError::Io`].
    pub async fn put_stream<S, E>(&self, stream: S) -> Result<BlobRef, BlobError>
    where
        S: futures::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        self.put_reader(StreamReader::new(stream)).await
    }

    /// Reads a blob, `None` if absent.
    pub async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, BlobError> {
        let path = self.path_of(id)?;
        match tokio::fs::read(&path).await {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(BlobError::Io { path, source }),
        }
    }
}

/// `AsyncRead` over a stream of byte chunks.
struct StreamReader<S> {
    stream: S,
    chunk: bytes::Bytes,
}

impl<S> StreamReader<S> {
    fn new(stream: S) -> Self {
        StreamReader { stream, chunk: bytes::Bytes::new() }
    }
}

impl<S, E> AsyncRead for StreamReader<S>
where
    S: futures::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use bytes::Buf as _;
        use std::task::Poll;
        loop {
            if !self.chunk.is_empty() {
                let n = self.chunk.len().min(buf.remaining());
                buf.put_slice(&self.chunk[..n]);
                self.chunk.advance(n);
                return Poll::Ready(Ok(()));
            }
            match std::pin::Pin::new(&mut self.stream).poll_next(cx) {
                Poll::Ready(Some(Ok(c))) => self.chunk = c,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(std::io::Error::other(e.to_string()))),
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

fn next_tmp() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stores_by_hash_and_refuses_oversize() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path(), 1024).unwrap();
        let r = store.put_reader(&b"hello"[..]).await.unwrap();
        assert_eq!(r.sha256, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
        assert_eq!(store.get(&r.sha256).await.unwrap().unwrap(), b"hello");
        let big = vec![7u8; 4096];
        let e = store.put_reader(&big[..]).await.unwrap_err().to_string();
        assert!(e.contains("exceeds the blob size limit of 1024 bytes"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no partial file left behind");
        assert!(matches!(store.get("../etc/passwd").await, Err(BlobError::BadId(_))));
        assert!(matches!(store.put_reader(&b""[..]).await, Err(BlobError::Empty)));
    }
}
