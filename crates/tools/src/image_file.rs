//! Image files read_file hands the model as image blocks: PNG, JPEG, GIF and WebP, known by
//! their first bytes, base64-encoded within the providers' size limit.

use crate::ImageData;
use base64::Engine;
use std::io::Read;
use std::path::Path;

/// The most image bytes sent: 5 MiB once base64-encoded, Anthropic's limit per image (OpenAI's
/// is larger). A larger image is downscaled ([`crate::image_fit`]).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024 / 4 * 3;

/// The image type of the file at `path` (`image/png`, …), known by its first bytes; `None`
/// when it is not a PNG, JPEG, GIF or WebP file (or cannot be read).
pub fn sniff_file(path: &Path) -> Option<&'static str> {
    let mut start = [0u8; 16];
    let mut file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut read = 0;
    while read < start.len() {
        match file.read(&mut start[read..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
    sniff(&start[..read])
}

/// The media type of an image format the providers take, from the file's first bytes.
pub fn sniff(start: &[u8]) -> Option<&'static str> {
    if start.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if start.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if start.starts_with(b"GIF87a") || start.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if start.len() >= 12 && start.starts_with(b"RIFF") && &start[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The image block for `bytes` of type `media_type`.
pub fn encode(media_type: &str, bytes: &[u8]) -> ImageData {
    ImageData {
        media_type: media_type.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    }
}

/// A size in bytes as people read it (`3.2 MB`, `812 KB`).
pub fn human_size(bytes: u64) -> String {
    const MB: f64 = 1024.0 * 1024.0;
    let bytes_f = bytes as f64;
    if bytes_f >= MB {
        format!("{:.2} MB", bytes_f / MB)
    } else if bytes >= 1024 {
        format!("{} KB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_known_by_their_magic_bytes() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), Some("image/png"));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a\x01\0"), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\x24\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"RIFF\x24\0\0\0WAVEfmt "), None);
        assert_eq!(sniff(b"plain text"), None);
    }

    #[test]
    fn encoding_is_standard_base64_and_the_limit_fits_five_mib_encoded() {
        assert_eq!(encode("image/png", b"hi!").data, "aGkh");
        assert!(MAX_IMAGE_BYTES.div_ceil(3) * 4 <= 5 * 1024 * 1024);
        assert_eq!(human_size(3 * 1024 * 1024 + 300_000), "3.29 MB");
        assert_eq!(human_size(MAX_IMAGE_BYTES as u64), "3.75 MB");
        assert_eq!(human_size(2048), "2 KB");
    }
}
