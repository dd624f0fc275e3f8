//! Images attached to a prompt: an `@shot.png` mention, or an image file's path pasted into
//! the REPL (shown as `[Image #N]`). Each is read and fitted to the providers' limits as
//! read_file's images are, and goes to the model as an image block beside the prompt's text.

use crate::term::image_paste::Pasted;
use std::path::Path;
use troupe_protocol::ImageData;
use troupe_tools::image_fit::{self, Fitted};

/// The image file at `path` of type `media_type`, fitted to the providers' limits; the error
/// says what went wrong and what to do.
pub fn load(path: &Path, media_type: &str) -> Result<Fitted, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    if size > image_fit::MAX_SOURCE_BYTES as u64 {
        return Err(format!(
            "{} is {} bytes, more than the {} troupe reads to downscale an image; attach a \
             smaller copy",
            path.display(),
            size,
            image_fit::MAX_SOURCE_BYTES
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    image_fit::fit(media_type, &bytes).map_err(|why| format!("{}: {why}", path.display()))
}

/// The images a prompt collects, with a line for each that could not be attached.
#[derive(Debug, Default)]
pub struct Collected {
    /// The images, in order.
    pub images: Vec<ImageData>,
    /// What went wrong with the ones left out.
    pub problems: Vec<String>,
    /// Notes on the ones downscaled (`shot.png: downscaled from … to …`).
    pub notes: Vec<String>,
}

impl Collected {
    /// Attaches the image file at `path` (shown as `name`).
    pub fn add(&mut self, name: &str, path: &Path, media_type: &str) {
        match load(path, media_type) {
            Ok(fitted) => self.fitted(name, fitted),
            Err(why) => self.problems.push(why),
        }
    }

    /// Attaches an image made ready (shown as `name`).
    fn fitted(&mut self, name: &str, fitted: Fitted) {
        if let Some(note) = fitted.note() {
            self.notes.push(format!("{name}: {note}"));
        }
        self.images.push(fitted.image);
    }
}

/// The pasted images that a prompt's `[Image #N]`s name, attached.
pub fn pasted(images: &[Pasted]) -> Collected {
    let mut collected = Collected::default();
    for image in images {
        match image {
            Pasted::File(path) => match troupe_tools::image_file::sniff_file(path) {
                Some(media_type) => collected.add(&path.display().to_string(), path, media_type),
                None => collected.problems.push(format!(
                    "{} is gone or no longer an image file",
                    path.display()
                )),
            },
            Pasted::Copied { media_type, bytes } => match image_fit::fit(media_type, bytes) {
                Ok(fitted) => collected.fitted("the clipboard's image", fitted),
                Err(why) => collected
                    .problems
                    .push(format!("the clipboard's image: {why}")),
            },
        }
    }
    collected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_files_are_known_by_their_bytes_not_their_names() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let png = dir.path().join("a.txt");
        std::fs::write(&png, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap_or_default();
        let text = dir.path().join("b.png");
        std::fs::write(&text, "not an image").unwrap_or_default();
        assert_eq!(
            troupe_tools::image_file::sniff_file(&png),
            Some("image/png")
        );
        assert_eq!(troupe_tools::image_file::sniff_file(&text), None);
        assert_eq!(troupe_tools::image_file::sniff_file(dir.path()), None);
        let mut collected = Collected::default();
        // A small image goes as it is, even one whose header the decoder would not read: the
        // provider judges it.
        collected.add("a.txt", &png, "image/png");
        assert_eq!(collected.images.len(), 1);
        let pasted = pasted(&[
            Pasted::File(png.clone()),
            Pasted::File(dir.path().join("gone.png")),
            Pasted::Copied {
                media_type: "image/png",
                bytes: std::fs::read(&png).unwrap_or_default().into(),
            },
        ]);
        assert_eq!(pasted.images.len(), 2);
        assert_eq!(pasted.images[0], pasted.images[1]);
        assert_eq!(pasted.images[0], collected.images[0]);
        assert!(
            pasted.problems[0].contains("gone.png is gone"),
            "{:?}",
            pasted.problems
        );
    }
}
