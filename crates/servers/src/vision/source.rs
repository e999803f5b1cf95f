//! Where image bytes come from: [`ImageSource`] turns the `image` argument of `analyze_thermal_image` into bytes.
//!
//! The seam exists because images should not travel as megabytes of base64 through every hop: the router keeps
//! them in a content-addressed blob store and passes a reference instead. [`DefaultImageSource`] resolves:
//!
//! - `data:[<media type>];base64,<data>` URLs and bare base64 (whitespace ignored);
//! - **blob references**, read directly from the blob directory ([`ImageSourceConfig::blob_dir`]), never over
//!   HTTP: `blob:<sha256>` and the router's URL form `http://127.0.0.1:PORT/blobs/<sha256>` (any loopback host);
//! - other `http://` and `https://` URLs **only** when the allowlist ([`ImageSourceConfig::http_allow`], see
//!   [`allow`]) permits them, checked after DNS resolution and again on every redirect (redirects are followed
//!   here, one hop at a time, never by the HTTP client), with no proxy in between.
//!
//! `file://` URLs are never read. A tool argument comes from whichever MCP client called, so every network
//! reference is treated as hostile: by default nothing but the blob store and inline data is read, and no error
//! message ever carries bytes that a fetched resource returned (status codes and sizes only).
//!
//! Every path enforces the same byte limit ([`DEFAULT_MAX_IMAGE_BYTES`] unless configured) *before* holding the
//! whole image in memory where it can: base64 by its length, blobs by their file size, HTTP by `Content-Length`
//! and then while streaming.

pub mod allow;

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use base64::Engine as _;
use futures::StreamExt as _;

pub use self::allow::AllowRule;
use crate::error::{Error, Result};

/// Default largest image accepted, in bytes (64 MiB).
pub const DEFAULT_MAX_IMAGE_BYTES: u64 = 64 * 1024 * 1024;

/// Default time limit for fetching an image over HTTP (per hop).
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Most redirects followed for one allowlisted image URL.
pub const MAX_REDIRECTS: usize = 5;

/// Most addresses one host name may resolve to that are considered.
const MAX_RESOLVED: usize = 16;

/// Resolves the `image` argument (a data URL, base64 or a URI) to bytes.
///
/// Implementations must honour their own size limit and report it by name ([`Error::ImageTooLarge`]).
#[async_trait::async_trait]
pub trait ImageSource: Send + Sync + std::fmt::Debug {
    /// The bytes of the image named by `image`.
    ///
    /// # Errors
    /// [`Error::ImageTooLarge`] beyond the limit, [`Error::ImageFetch`] when the reference cannot be resolved or
    /// is not allowed.
    async fn fetch(&self, image: &str) -> Result<Vec<u8>>;
}

/// Settings of [`DefaultImageSource`].
#[derive(Debug, Clone)]
pub struct ImageSourceConfig {
    /// Largest image accepted, in bytes.
    pub max_bytes: u64,
    /// The router's blob directory (files named by their lower-case hex SHA-256); `None` refuses blob references.
    pub blob_dir: Option<PathBuf>,
    /// Hosts, addresses and CIDR blocks other `http(s)://` images may come from; empty (the default) refuses
    /// every URL that is not a blob reference.
    pub http_allow: Vec<AllowRule>,
    /// Time limit of one HTTP request (connect + body), per redirect hop.
    pub fetch_timeout: Duration,
}

impl Default for ImageSourceConfig {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_IMAGE_BYTES,
            blob_dir: None,
            http_allow: Vec::new(),
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
        }
    }
}

/// The built-in [`ImageSource`]: base64 / `data:`, blob references, allowlisted `http(s)://`.
#[derive(Debug, Clone, Default)]
pub struct DefaultImageSource {
    config: ImageSourceConfig,
}

/// Whether `id` is a blob id (64 hex digits; normalised to lower case by the caller).
fn valid_blob_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The blob id of a blob reference: `blob:<sha256>` (also `blob:sha256:<hex>`) or an `http(s)` URL on a loopback
/// host whose path is exactly `/blobs/<sha256>` (the router's own blob route).
pub fn blob_id(image: &str) -> Option<String> {
    let image = image.trim();
    if image.len() > 5 && image[..5].eq_ignore_ascii_case("blob:") {
        let rest = &image[5..];
        let rest = rest.strip_prefix("sha256:").unwrap_or(rest);
        return valid_blob_id(rest).then(|| rest.to_ascii_lowercase());
    }
    let url = url::Url::parse(image).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let loopback = match url.host()? {
        url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    };
    let mut segments = url.path_segments()?;
    let (Some("blobs"), Some(id), None) = (segments.next(), segments.next(), segments.next()) else {
        return None;
    };
    (loopback && valid_blob_id(id)).then(|| id.to_ascii_lowercase())
}

/// Whether `image` names something fetched over the network (an `http(s)` URL that is not a blob reference):
/// the bytes then come from a third party, and no error about them may quote them.
pub fn is_network_reference(image: &str) -> bool {
    matches!(scheme(image.trim()).map(str::to_ascii_lowercase).as_deref(), Some("http" | "https"))
        && blob_id(image).is_none()
}

/// A reqwest failure in words, without anything the peer sent.
fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        format!("no complete answer within {timeout:?}")
    } else if e.is_connect() {
        "could not connect".into()
    } else if e.is_body() || e.is_decode() {
        "reading the body failed".into()
    } else {
        "the request failed".into()
    }
}

impl DefaultImageSource {
    /// A source with `config`.
    pub fn new(config: ImageSourceConfig) -> Self {
        Self { config }
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
                "not valid base64 ({e}); give a data: URL, base64 image bytes or a blob reference \
                 (blob:<sha256>)"
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

    async fn read_blob(&self, id: &str) -> Result<Vec<u8>> {
        let desc = format!("blob {id}");
        let fail = |message: String| Error::ImageFetch { source_desc: desc.clone(), message };
        let Some(dir) = &self.config.blob_dir else {
            return Err(fail(
                "this server has no blob store configured (a standalone server takes images inline as data: \
                 URLs or base64)"
                    .into(),
            ));
        };
        let path = dir.join(id);
        let meta = match tokio::fs::metadata(&path).await {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(fail(
                    "no such blob in the blob store (upload it to the router's /blobs first)".into(),
                ));
            }
            Err(e) => return Err(fail(format!("cannot read the blob store: {}", e.kind()))),
        };
        if !meta.is_file() {
            return Err(fail("not a regular file in the blob store".into()));
        }
        if meta.len() > self.config.max_bytes {
            return Err(self.too_large(desc, meta.len()));
        }
        tokio::fs::read(&path).await.map_err(|e| fail(format!("cannot read the blob: {}", e.kind())))
    }

    /// The addresses `url` may be fetched from, or why none may.
    async fn permitted_addrs(&self, url: &url::Url) -> std::result::Result<Vec<SocketAddr>, String> {
        let rules = &self.config.http_allow;
        if !url.username().is_empty() || url.password().is_some() {
            return Err("URLs with credentials are refused".into());
        }
        let port = url.port_or_known_default().ok_or("the URL has no port")?;
        let (listed, ips) = match url.host() {
            Some(url::Host::Domain(d)) => {
                let listed = allow::name_listed(rules, d, port);
                if !listed && !rules.iter().any(|r| matches!(r, AllowRule::Net { .. })) {
                    return Err(format!("host {d} is not in the allowlist"));
                }
                let addrs = tokio::net::lookup_host((d, port))
                    .await
                    .map_err(|_| format!("cannot resolve host {d}"))?;
                (listed, addrs.take(MAX_RESOLVED).map(|a| a.ip()).collect::<Vec<_>>())
            }
            Some(url::Host::Ipv4(ip)) => (false, vec![ip.into()]),
            Some(url::Host::Ipv6(ip)) => (false, vec![ip.into()]),
            None => return Err("the URL has no host".into()),
        };
        let mut first_refusal = None;
        let mut permitted = Vec::new();
        for ip in ips {
            match allow::refusal(rules, listed, ip, port) {
                None => permitted.push(SocketAddr::new(ip, port)),
                Some(why) => {
                    first_refusal.get_or_insert(why);
                }
            }
        }
        if permitted.is_empty() {
            return Err(first_refusal.unwrap_or_else(|| "the host resolved to no address".into()));
        }
        Ok(permitted)
    }

    async fn fetch_http(&self, original: &str) -> Result<Vec<u8>> {
        let fail = |message: String| Error::ImageFetch { source_desc: original.to_owned(), message };
        if self.config.http_allow.is_empty() {
            return Err(fail(
                "http(s) images are refused: this server reads only the router's blob store (blob:<sha256>) and \
                 data: URLs unless its allowlist (http_allow) names the host"
                    .into(),
            ));
        }
        let mut url = url::Url::parse(original).map_err(|e| fail(format!("not a valid URL ({e})")))?;
        for hop in 0..=MAX_REDIRECTS {
            let addrs = match self.permitted_addrs(&url).await {
                Ok(a) => a,
                // The first URL is the caller's own; a redirect target comes from the answering server and is
                // not quoted back.
                Err(why) if hop == 0 => return Err(fail(format!("refused: {why}"))),
                Err(_) => {
                    return Err(fail(format!(
                        "redirect {hop} refused: its target is not in the allowlist or is a non-public address"
                    )));
                }
            };
            let mut builder = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .timeout(self.config.fetch_timeout);
            if let Some(url::Host::Domain(d)) = url.host() {
                builder = builder.resolve_to_addrs(d, &addrs);
            }
            let client = builder.build().map_err(|_| fail("cannot build the HTTP client".into()))?;
            let response = client
                .get(url.clone())
                .send()
                .await
                .map_err(|e| fail(describe(&e, self.config.fetch_timeout)))?;
            let status = response.status();
            if status.is_redirection() {
                let next = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|loc| url.join(loc).ok())
                    .ok_or_else(|| {
                        fail(format!("server answered HTTP {status} without a usable Location"))
                    })?;
                if !matches!(next.scheme(), "http" | "https") {
                    return Err(fail(format!("redirect {} refused: not an http(s) URL", hop + 1)));
                }
                url = next;
                continue;
            }
            if !status.is_success() {
                return Err(fail(format!("server answered HTTP {status}")));
            }
            if let Some(len) = response.content_length()
                && len > self.config.max_bytes
            {
                return Err(self.too_large(original, len));
            }
            let mut body = Vec::new();
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| fail(describe(&e, self.config.fetch_timeout)))?;
                let size = body.len() as u64 + chunk.len() as u64;
                if size > self.config.max_bytes {
                    return Err(self.too_large(original, size));
                }
                body.extend_from_slice(&chunk);
            }
            return Ok(body);
        }
        Err(fail(format!("more than {MAX_REDIRECTS} redirects")))
    }
}

/// The scheme of `s` (`http`, `data`, `file`, …) when it looks like a URI rather than base64.
fn scheme(s: &str) -> Option<&str> {
    let (scheme, rest) = s.split_once(':')?;
    let valid = !scheme.is_empty()
        && scheme.len() <= 32
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    // `data:` and `blob:` have no `//`; every other scheme we could meet in a resource link does.
    (valid
        && (scheme.eq_ignore_ascii_case("data")
            || scheme.eq_ignore_ascii_case("blob")
            || rest.starts_with("//")))
    .then_some(scheme)
}

#[async_trait::async_trait]
impl ImageSource for DefaultImageSource {
    async fn fetch(&self, image: &str) -> Result<Vec<u8>> {
        let image = image.trim();
        if image.is_empty() {
            return Err(Error::InvalidArgument {
                field: "image",
                message: "empty; give a data: URL, base64 image bytes or a blob reference".into(),
            });
        }
        if let Some(id) = blob_id(image) {
            return self.read_blob(&id).await;
        }
        match scheme(image).map(str::to_ascii_lowercase).as_deref() {
            Some("data") => self.decode_data_url(image),
            Some("blob") => Err(Error::ImageFetch {
                source_desc: image.chars().take(200).collect(),
                message:
                    "not a blob reference: use blob:<sha256> with the 64 hex digits of the blob's SHA-256"
                        .into(),
            }),
            Some("http" | "https") => self.fetch_http(image).await,
            Some("file") => Err(Error::ImageFetch {
                source_desc: image.chars().take(200).collect(),
                message: "file:// URLs are never read by this server; upload the image to the router's blob \
                          store (blob:<sha256>) or send it inline as a data: URL"
                    .into(),
            }),
            Some(other) => Err(Error::ImageFetch {
                source_desc: image.chars().take(200).collect(),
                message: format!(
                    "unsupported URI scheme `{other}`; this server resolves data: URLs, blob references \
                     (blob:<sha256>) and allowlisted http(s) URLs"
                ),
            }),
            None => self.decode_base64(image, "inline base64"),
        }
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
        assert!(err.contains("file:// URLs are never read"), "{err}");
        let err = block(src.fetch("switchboard://blobs/abc")).unwrap_err().to_string();
        assert!(err.contains("unsupported URI scheme `switchboard`"), "{err}");
        let err = block(src.fetch("blob:abc")).unwrap_err().to_string();
        assert!(err.contains("not a blob reference"), "{err}");
    }

    #[test]
    fn blob_references_are_recognised() {
        let id = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
        assert_eq!(blob_id(&format!("blob:{id}")).as_deref(), Some(id));
        assert_eq!(blob_id(&format!("blob:sha256:{}", id.to_uppercase())).as_deref(), Some(id));
        assert_eq!(blob_id(&format!("http://127.0.0.1:7010/blobs/{id}")).as_deref(), Some(id));
        assert_eq!(blob_id(&format!("http://localhost/blobs/{id}")).as_deref(), Some(id));
        assert_eq!(blob_id(&format!("http://[::1]:1/blobs/{id}")).as_deref(), Some(id));
        assert_eq!(blob_id(&format!("http://example.com/blobs/{id}")), None, "not the router's own");
        assert_eq!(blob_id(&format!("http://127.0.0.1/blobs/{id}/x")), None);
        assert_eq!(blob_id("http://127.0.0.1/blobs/../../etc/passwd"), None);
        assert!(is_network_reference("http://127.0.0.1/x"));
        assert!(!is_network_reference(&format!("http://127.0.0.1/blobs/{id}")));
        assert!(!is_network_reference("aGVsbG8="));
    }

    #[test]
    fn blobs_are_read_from_the_blob_directory_under_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let id = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
        std::fs::write(dir.path().join(id), b"hello").unwrap();
        let src = DefaultImageSource::new(ImageSourceConfig {
            blob_dir: Some(dir.path().to_path_buf()),
            ..ImageSourceConfig::default()
        });
        assert_eq!(block(src.fetch(&format!("blob:{id}"))).unwrap(), b"hello");
        assert_eq!(block(src.fetch(&format!("http://127.0.0.1:1/blobs/{id}"))).unwrap(), b"hello");
        let missing = "0".repeat(64);
        let err = block(src.fetch(&format!("blob:{missing}"))).unwrap_err().to_string();
        assert!(err.contains("no such blob"), "{err}");
        let small = DefaultImageSource::new(ImageSourceConfig {
            blob_dir: Some(dir.path().to_path_buf()),
            max_bytes: 2,
            ..ImageSourceConfig::default()
        });
        let err = block(small.fetch(&format!("blob:{id}"))).unwrap_err().to_string();
        assert!(err.contains("over the 2 byte limit"), "{err}");
        let err = block(DefaultImageSource::default().fetch(&format!("blob:{id}"))).unwrap_err().to_string();
        assert!(err.contains("no blob store configured"), "{err}");
    }
}
