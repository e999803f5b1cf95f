//! Where image bytes come from: [`ImageSource`] turns the `image` argument of `analyze_thermal_image` into bytes.
//!
//! The seam exists because images should not travel as megabytes of base64 through every hop: the router keeps
//! them in a content-addressed blob store and passes a URL (`http://127.0.0.1:PORT/blobs/<sha256>`) or a resource
//! link instead. [`DefaultImageSource`] handles what a standalone server can resolve by itself:
//!
//! - `data:[<media type>];base64,<data>` URLs and bare base64 (whitespace ignored);
//! - `http://` and `https://` URLs, streamed with a size limit;
//! - `file://` URLs, only inside a directory the operator allowed ([`ImageSourceConfig::allow_dir`]).
//!
//! Every path enforces the same byte limit ([`DEFAULT_MAX_IMAGE_BYTES`] unless configured) *before* holding the
//! whole image in memory where it can: base64 by its length, HTTP by `Content-Length` and then while streaming,
//! files by their metadata. Other URI schemes are an error that says which forms are accepted; an embedding
//! application (the router) wraps or replaces this source to resolve its own schemes.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use base64::Engine as _;
use futures::StreamExt as _;

use crate::error::{Error, Result};

/// Default largest image accepted, in bytes (64 MiB).
pub const DEFAULT_MAX_IMAGE_BYTES: u64 = 64 * 1024 * 1024;

/// Default time limit for fetching an image over HTTP.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Resolves the `image` argument (a data URL, base64 or a URI) to bytes.
///
/// Implementations must honour their own size limit and report it by name ([`Error::ImageTooLarge`]).
#[async_trait::async_trait]
pub trait ImageSource: Send + Sync + std::fmt::Debug {
    /// The bytes of the image named by `image`.
    ///
    /// # Errors
    /// [`Error::ImageTooLarge`] beyond the limit, [`Error::ImageFetch`] when the reference cannot be resolved.
    async fn fetch(&self, image: &str) -> Result<Vec<u8>>;
}

/// Settings of [`DefaultImageSource`].
#[derive(Debug, Clone)]
pub struct ImageSourceConfig {
    /// Largest image accepted, in bytes.
    pub max_bytes: u64,
    /// Directory from which `file://` URLs may be read; `None` refuses every `file://` URL.
    pub allow_dir: Option<PathBuf>,
    /// Time limit of one HTTP fetch (connect + body).
    pub fetch_timeout: Duration,
}

impl Default for ImageSourceConfig {
    fn default() -> Self {
        Self { max_bytes: DEFAULT_MAX_IMAGE_BYTES, allow_dir: None, fetch_timeout: DEFAULT_FETCH_TIMEOUT }
    }
}

/// The built-in [`ImageSource`]: base64 / `data:`, `http(s)://`, and `file://` inside an allowed directory.
#[derive(Debug, Clone)]
pub struct DefaultImageSource {
    config: ImageSourceConfig,
    /// Canonical form of `config.allow_dir`, computed once (`None` when not configured or not resolvable).
    allow_dir: Option<PathBuf>,
    http: reqwest::Client,
}

impl Default for DefaultImageSource {
    fn default() -> Self {
        Self::new(ImageSourceConfig::default())
    }
}

impl DefaultImageSource {
    /// A source with `config`.
    pub fn new(config: ImageSourceConfig) -> Self {
        let allow_dir = config.allow_dir.as_ref().and_then(|d| d.canonicalize().ok());
        let http = reqwest::Client::builder()
            .timeout(config.fetch_timeout)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self { config, allow_dir, http }
    }

    /// The configuration in force.
    pub fn config(&self) -> &ImageSourceConfig {
        &self.config
    }

    fn too_large(&self, source_desc: impl Into<String>, size: u64) -> Error {
        Error::ImageTooLarge { source_desc: source_desc.into(), size, limit: self.config.max_bytes }
    }

    fn decode_base64(&self, data: &str, source_desc: &str) -> Result<Vec<u8>> {
        let cleaned: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        // The decoded size follows from the text length: refuse before allocating.
        let estimate = cleaned.trim_end_matches('=').len() as u64 * 3 / 4;
        if estimate > self.config.max_bytes {
            return Err(self.too_large(source_desc, estimate));
        }
        let engine = if cleaned.contains(['-', '_']) {
            &base64::engine::general_purpose::URL_SAFE
        } else {
            &base64::engine::general_purpose::STANDARD
        };
        let padded = match cleaned.len() % 4 {
            2 => format!("{cleaned}=="),
            3 => format!("{cleaned}="),
            _ => cleaned,
        };
        engine.decode(padded.as_bytes()).map_err(|e| Error::ImageFetch {
            source_desc: source_desc.to_owned(),
            message: format!(
                "not valid base64 ({e}); give a data: URL, base64 image bytes, an http(s):// URL or a file:// URL"
            ),
        })
    }

    fn decode_data_url(&self, url: &str) -> Result<Vec<u8>> {
        let desc = "data: URL";
        let rest = url.get(5..).unwrap_or_default();
        let Some((meta, data)) = rest.split_once(',') else {
            return Err(Error::ImageFetch {
                source_desc: desc.into(),
                message: "missing `,` between the media type and the data".into(),
            });
        };
        if !meta.split(';').any(|p| p.eq_ignore_ascii_case("base64")) {
            return Err(Error::ImageFetch {
                source_desc: desc.into(),
                message: "only base64 data: URLs are supported (`data:image/jpeg;base64,...`)".into(),
            });
        }
        self.decode_base64(data, desc)
    }

    async fn fetch_http(&self, url: &str) -> Result<Vec<u8>> {
        let fail = |message: String| Error::ImageFetch { source_desc: url.to_owned(), message };
        let response = self.http.get(url).send().await.map_err(|e| fail(format!("request failed: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            return Err(fail(format!("server answered HTTP {status}")));
        }
        if let Some(len) = response.content_length()
            && len > self.config.max_bytes
        {
            return Err(self.too_large(url, len));
        }
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| fail(format!("reading the body failed: {e}")))?;
            let size = body.len() as u64 + chunk.len() as u64;
            if size > self.config.max_bytes {
                return Err(self.too_large(url, size));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    async fn read_file(&self, url: &str) -> Result<Vec<u8>> {
        let fail = |message: String| Error::ImageFetch { source_desc: url.to_owned(), message };
        let Some(dir) = &self.allow_dir else {
            return Err(fail(
                "file:// URLs are refused: this server was not configured with a directory to read images from"
                    .into(),
            ));
        };
        let parsed = url::Url::parse(url).map_err(|e| fail(format!("not a valid file URL ({e})")))?;
        let path = parsed.to_file_path().map_err(|()| fail("not a local file path".into()))?;
        let canonical =
            tokio::fs::canonicalize(&path).await.map_err(|e| fail(format!("cannot open: {e}")))?;
        if !canonical.starts_with(dir) {
            return Err(fail(format!("outside the allowed directory {}", dir.display())));
        }
        let meta = tokio::fs::metadata(&canonical).await.map_err(|e| fail(format!("cannot stat: {e}")))?;
        if !meta.is_file() {
            return Err(fail("not a regular file".into()));
        }
        if meta.len() > self.config.max_bytes {
            return Err(self.too_large(url, meta.len()));
        }
        tokio::fs::read(&canonical).await.map_err(|e| fail(format!("cannot read: {e}")))
    }
}

/// The scheme of `s` (`http`, `data`, `file`, …) when it looks like a URI rather than base64.
fn scheme(s: &str) -> Option<&str> {
    let (scheme, rest) = s.split_once(':')?;
    let valid = !scheme.is_empty()
        && scheme.len() <= 32
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    // `data:` has no `//`; every other scheme we could meet in a resource link does.
    (valid && (scheme.eq_ignore_ascii_case("data") || rest.starts_with("//"))).then_some(scheme)
}

#[async_trait::async_trait]
impl ImageSource for DefaultImageSource {
    async fn fetch(&self, image: &str) -> Result<Vec<u8>> {
        let image = image.trim();
        if image.is_empty() {
            return Err(Error::InvalidArgument {
                field: "image",
                message: "empty; give a data: URL, base64 image bytes or a URL".into(),
            });
        }
        match scheme(image).map(str::to_ascii_lowercase).as_deref() {
            Some("data") => self.decode_data_url(image),
            Some("http" | "https") => self.fetch_http(image).await,
            Some("file") => self.read_file(image).await,
            Some(other) => Err(Error::ImageFetch {
                source_desc: image.chars().take(200).collect(),
                message: format!(
                    "unsupported URI scheme `{other}`; this server resolves data:, http(s):// and (when allowed) \
                     file:// URLs"
                ),
            }),
            None => self.decode_base64(image, "inline base64"),
        }
    }
}

/// Whether `path` lies inside `dir` after both are canonicalised (used by embedders that pre-check paths).
pub fn is_inside(path: &Path, dir: &Path) -> bool {
    match (path.canonicalize(), dir.canonicalize()) {
        (Ok(p), Ok(d)) => p.starts_with(d),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
    }

    #[test]
    fn base64_and_data_urls_decode() {
        let src = DefaultImageSource::default();
        assert_eq!(block(src.fetch("aGVsbG8=")).unwrap(), b"hello");
        assert_eq!(block(src.fetch("aGVs\nbG8")).unwrap(), b"hello");
        assert_eq!(block(src.fetch("data:image/jpeg;base64,aGVsbG8=")).unwrap(), b"hello");
        let err = block(src.fetch("data:text/plain,hello")).unwrap_err().to_string();
        assert!(err.contains("only base64 data: URLs"), "{err}");
        let err = block(src.fetch("!!!")).unwrap_err().to_string();
        assert!(err.starts_with("cannot fetch image from inline base64: not valid base64"), "{err}");
    }

    #[test]
    fn limits_and_schemes_are_named() {
        let src = DefaultImageSource::new(ImageSourceConfig { max_bytes: 4, ..ImageSourceConfig::default() });
        let err = block(src.fetch("aGVsbG8gd29ybGQ=")).unwrap_err().to_string();
        assert_eq!(err, "image from inline base64 is 11 bytes, over the 4 byte limit (max_image_bytes)");
        let err = block(src.fetch("file:///etc/passwd")).unwrap_err().to_string();
        assert!(err.contains("file:// URLs are refused"), "{err}");
        let err = block(src.fetch("switchboard://blobs/abc")).unwrap_err().to_string();
        assert!(err.contains("unsupported URI scheme `switchboard`"), "{err}");
    }

    #[test]
    fn files_only_inside_the_allowed_directory() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("a.jpg");
        std::fs::write(&inside, b"abc").unwrap();
        let src = DefaultImageSource::new(ImageSourceConfig {
            allow_dir: Some(dir.path().to_path_buf()),
            ..ImageSourceConfig::default()
        });
        let url = url::Url::from_file_path(&inside).unwrap().to_string();
        assert_eq!(block(src.fetch(&url)).unwrap(), b"abc");
        let err = block(src.fetch("file:///etc/hostname")).unwrap_err().to_string();
        assert!(err.contains("outside the allowed directory") || err.contains("cannot open"), "{err}");
        assert!(is_inside(&inside, dir.path()));
    }
}
