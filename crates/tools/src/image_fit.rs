//! Images fitted to the providers' limits before they are sent: one whose long edge is past
//! [`MAX_EDGE`] pixels, or whose encoding is past [`MAX_IMAGE_BYTES`], is downscaled (its
//! aspect ratio kept) and encoded again; one within both goes as it is, byte for byte.

use crate::image_file::{encode, MAX_IMAGE_BYTES};
use crate::ImageData;
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};
use std::io::Cursor;

/// The longest edge sent, in pixels: Anthropic's recommended most (it takes up to 8000, but
/// scales anything past this down itself, at the cost of the upload and latency).
pub const MAX_EDGE: u32 = 1568;

/// The most bytes read from an image file (or taken from a prompt) to fit it: a larger one is
/// refused rather than decoded.
pub const MAX_SOURCE_BYTES: usize = 64 * 1024 * 1024;

/// Memory the decoder may take for one image.
const DECODE_LIMIT: u64 = 512 * 1024 * 1024;

/// An image made ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    /// The image as sent.
    pub image: ImageData,
    /// Its size as read, in pixels, when it was downscaled; `None` when it goes as it was.
    pub resized_from: Option<(u32, u32)>,
    /// Its size as sent, in pixels (`(0, 0)` when its header could not be read but it went
    /// as it was).
    pub size: (u32, u32),
}

impl Fitted {
    /// A note for the person or the model: `downscaled from 4000×3000 to 1568×1176`, or
    /// nothing.
    pub fn note(&self) -> Option<String> {
        let (w, h) = self.resized_from?;
        Some(match (w, h) == self.size {
            true => format!("encoded again to fit {MAX_IMAGE_BYTES} bytes"),
            false => format!("downscaled from {w}×{h} to {}×{}", self.size.0, self.size.1),
        })
    }
}

/// `bytes` of an image of type `media_type` made ready to send: as they are when within the
/// limits, else downscaled to [`MAX_EDGE`] on the long edge and encoded again (an opaque
/// image as JPEG when its PNG is still too large; smaller still when that is too). The error
/// says what was wrong with the image.
pub fn fit(media_type: &str, bytes: &[u8]) -> Result<Fitted, String> {
    if bytes.len() > MAX_SOURCE_BYTES {
        return Err(format!(
            "the image is {} bytes; troupe reads images up to {MAX_SOURCE_BYTES} bytes",
            bytes.len()
        ));
    }
    let format = format_of(media_type)
        .ok_or_else(|| format!("{media_type} is not an image type troupe sends"))?;
    let dims = reader(bytes, format).into_dimensions().ok();
    let within = |(w, h): (u32, u32)| w.max(h) <= MAX_EDGE;
    if bytes.len() <= MAX_IMAGE_BYTES && dims.is_none_or(within) {
        return Ok(Fitted {
            image: encode(media_type, bytes),
            resized_from: None,
            size: dims.unwrap_or((0, 0)),
        });
    }
    let mut reader = reader(bytes, format);
    let mut limits = Limits::default();
    limits.max_alloc = Some(DECODE_LIMIT);
    reader.limits(limits);
    let undecodable =
        |e: image::ImageError| format!("the image could not be decoded to downscale it: {e}");
    let mut decoder = reader.into_decoder().map_err(undecodable)?;
    // A photo's EXIF orientation is applied: the copy sent has no EXIF to say it.
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let mut decoded = DynamicImage::from_decoder(decoder).map_err(undecodable)?;
    decoded.apply_orientation(orientation);
    let original = (decoded.width(), decoded.height());
    let mut edge = MAX_EDGE.min(original.0.max(original.1));
    loop {
        let scaled = decoded.resize(edge, edge, image::imageops::FilterType::Triangle);
        let (mut media_type, mut out) = reencode(&scaled, format)?;
        if out.len() > MAX_IMAGE_BYTES && !scaled.color().has_alpha() {
            // A photo kept as PNG: as JPEG it fits at this size.
            (media_type, out) = reencode(&scaled, ImageFormat::Jpeg)?;
        }
        if out.len() <= MAX_IMAGE_BYTES {
            return Ok(Fitted {
                image: encode(media_type, &out),
                resized_from: Some(original),
                size: (scaled.width(), scaled.height()),
            });
        }
        if edge <= 64 {
            return Err(format!(
                "the image is still over {MAX_IMAGE_BYTES} bytes at {edge} pixels"
            ));
        }
        edge = edge * 3 / 4;
    }
}

fn reader(bytes: &[u8], format: ImageFormat) -> ImageReader<Cursor<&[u8]>> {
    let mut reader = ImageReader::new(Cursor::new(bytes));
    reader.set_format(format);
    reader
}

fn format_of(media_type: &str) -> Option<ImageFormat> {
    match media_type {
        "image/png" => Some(ImageFormat::Png),
        "image/jpeg" => Some(ImageFormat::Jpeg),
        "image/gif" => Some(ImageFormat::Gif),
        "image/webp" => Some(ImageFormat::WebP),
        _ => None,
    }
}

/// `image` encoded again: a JPEG as JPEG, anything else as PNG (a GIF keeps its first frame;
/// WebP is written losslessly as PNG, which every provider takes).
fn reencode(image: &DynamicImage, format: ImageFormat) -> Result<(&'static str, Vec<u8>), String> {
    let mut out = Vec::new();
    let written = match format {
        ImageFormat::Jpeg => {
            let encoder =
                image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
            DynamicImage::ImageRgb8(image.to_rgb8()).write_with_encoder(encoder)
        }
        _ => image.write_to(&mut Cursor::new(&mut out), ImageFormat::Png),
    };
    written.map_err(|e| format!("the downscaled image could not be encoded: {e}"))?;
    let media_type = match format {
        ImageFormat::Jpeg => "image/jpeg",
        _ => "image/png",
    };
    Ok((media_type, out))
}

/// The quality a downscaled JPEG is written at.
const JPEG_QUALITY: u8 = 85;

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x * y) % 256) as u8])
        });
        let mut out = Vec::new();
        DynamicImage::ImageRgb8(image)
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .unwrap_or_else(|e| panic!("{e}"));
        out
    }

    fn decoded_size(image: &ImageData) -> (u32, u32) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&image.data)
            .unwrap_or_else(|e| panic!("{e}"));
        let decoded = image::load_from_memory(&bytes).unwrap_or_else(|e| panic!("{e}"));
        (decoded.width(), decoded.height())
    }

    #[test]
    fn an_image_within_the_limits_goes_byte_for_byte() {
        let small = png(40, 30);
        let fitted = fit("image/png", &small).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fitted.image, encode("image/png", &small));
        assert_eq!((fitted.resized_from, fitted.size), (None, (40, 30)));
        assert_eq!(fitted.note(), None);
    }

    #[test]
    fn a_large_image_is_downscaled_keeping_its_aspect_ratio() {
        let wide = png(3000, 1000);
        let fitted = fit("image/png", &wide).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fitted.resized_from, Some((3000, 1000)));
        assert_eq!(fitted.size, (1568, 523));
        assert_eq!(decoded_size(&fitted.image), (1568, 523));
        assert_eq!(fitted.image.media_type, "image/png");
        assert_eq!(
            fitted.note().as_deref(),
            Some("downscaled from 3000×1000 to 1568×523")
        );
        let mut jpeg = Vec::new();
        image::load_from_memory(&png(1000, 2000))
            .unwrap_or_else(|e| panic!("{e}"))
            .write_to(&mut Cursor::new(&mut jpeg), ImageFormat::Jpeg)
            .unwrap_or_else(|e| panic!("{e}"));
        let tall = fit("image/jpeg", &jpeg).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tall.image.media_type, "image/jpeg");
        assert_eq!(decoded_size(&tall.image), (784, 1568));
    }

    #[test]
    fn a_photo_turned_by_its_exif_orientation_is_sent_turned() {
        let mut jpeg = Vec::new();
        image::load_from_memory(&png(2000, 1000))
            .unwrap_or_else(|e| panic!("{e}"))
            .write_to(&mut Cursor::new(&mut jpeg), ImageFormat::Jpeg)
            .unwrap_or_else(|e| panic!("{e}"));
        // An APP1 segment whose EXIF says "rotate 90° clockwise" (orientation 6).
        let mut exif = b"Exif\0\0II*\0\x08\0\0\0\x01\0".to_vec();
        exif.extend([0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0]);
        let mut segment = vec![0xFF, 0xE1];
        segment.extend(u16::try_from(exif.len() + 2).unwrap_or(0).to_be_bytes());
        segment.extend(exif);
        jpeg.splice(2..2, segment);
        let fitted = fit("image/jpeg", &jpeg).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fitted.resized_from, Some((1000, 2000)));
        assert_eq!(decoded_size(&fitted.image), (784, 1568));
    }

    #[test]
    fn an_opaque_image_too_large_as_png_goes_as_jpeg() {
        let mut seed: u32 = 7;
        let noise = image::RgbImage::from_fn(1600, 1600, |_, _| {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let [a, b, c, _] = seed.to_le_bytes();
            image::Rgb([a, b, c])
        });
        let mut png = Vec::new();
        DynamicImage::ImageRgb8(noise)
            .write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
            .unwrap_or_else(|e| panic!("{e}"));
        let fitted = fit("image/png", &png).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fitted.image.media_type, "image/jpeg");
        assert_eq!(fitted.size, (1568, 1568));
        assert!(fitted.image.data.len() <= 5 * 1024 * 1024);
    }

    #[test]
    fn what_cannot_be_fitted_says_why() {
        let mut broken = png(2000, 2000);
        broken.truncate(200);
        let why = fit("image/png", &broken).unwrap_err();
        assert!(why.contains("could not be decoded"), "{why}");
        let why = fit("image/bmp", b"BM").unwrap_err();
        assert!(why.contains("not an image type"), "{why}");
    }
}
