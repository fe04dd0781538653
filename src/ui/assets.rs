//! The pages' static files, embedded in the binary. Each is served under a name carrying a hash of its content
//! (`/assets/app-<hash>.css`), so browsers may cache it for a year; a new build with other content gets a new name.

use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// One embedded file.
#[derive(Debug)]
pub struct Asset {
    /// The URL path the pages link to (with the content hash).
    pub path: String,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The bytes.
    pub bytes: &'static [u8],
    /// A strong `ETag` (the content hash, quoted).
    pub etag: String,
}

fn asset(stem: &str, ext: &str, content_type: &'static str, bytes: &'static [u8]) -> Asset {
    let digest = Sha256::digest(bytes);
    let hash: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    Asset { path: format!("/assets/{stem}-{hash}.{ext}"), content_type, bytes, etag: format!("\"{hash}\"") }
}

/// Every embedded file: the stylesheet, the script, the icon.
pub fn all() -> &'static [Asset; 3] {
    static ASSETS: OnceLock<[Asset; 3]> = OnceLock::new();
    ASSETS.get_or_init(|| {
        [
            asset("app", "css", "text/css; charset=utf-8", include_bytes!("assets/app.css")),
            asset("app", "js", "text/javascript; charset=utf-8", include_bytes!("assets/app.js")),
            asset("favicon", "svg", "image/svg+xml", include_bytes!("assets/favicon.svg")),
        ]
    })
}

/// The stylesheet.
pub fn css() -> &'static Asset {
    &all()[0]
}

/// The script.
pub fn js() -> &'static Asset {
    &all()[1]
}

/// The icon.
pub fn favicon() -> &'static Asset {
    &all()[2]
}

/// The asset served at `path`, if any.
pub fn find(path: &str) -> Option<&'static Asset> {
    all().iter().find(|a| a.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_have_content_hashed_names() {
        for a in all() {
            assert!(a.path.starts_with("/assets/"), "{}", a.path);
            assert_eq!(find(&a.path).map(|f| f.bytes.len()), Some(a.bytes.len()));
            assert!(a.path.contains(a.etag.trim_matches('"')));
        }
        assert!(find("/assets/app.css").is_none());
    }
}
