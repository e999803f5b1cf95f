//! `GET /api/blobs/{sha256}/thermal`: an uploaded image decoded by the thermal reader into
//! what the panel needs to draw it — size, radiometry, range and every pixel's value.
//!
//! The values travel as base64 of little-endian `f32`, row-major (x = column, y = row,
//! origin top-left: the grid vision's hotspots are reported in), `NaN` where a pixel has
//! none. That is 4 bytes a pixel instead of ~8 characters of JSON, and the browser reads it
//! with one `Float32Array`. Images that are not radiometric get the reader's relative 0–1
//! analysis, flagged (`radiometric: false`, `unit: "relative"`, no °C figures). The frame is
//! bounded ([`MAX_VIEW_PIXELS`]) so one request cannot ask for an unbounded answer.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use switchboard_thermal::{DecodeOptions, Radiometry, RelativeMethod, SourceFormat, ThermalImage};
use ts_rs::TS;

use super::view::PointPx;

/// Largest frame the thermal view answers with (16 MiB of temperatures); the thermal
/// sensors the reader knows are far below it (640 × 512 is 0.3 Mpx).
pub const MAX_VIEW_PIXELS: usize = 4 * 1024 * 1024;

/// Why an image has no thermal view.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ThermalViewError {
    /// The reader refused the bytes (corrupt, truncated, not an image).
    #[error("cannot read thermal image: {0}")]
    Decode(#[from] switchboard_thermal::Error),
    /// The frame is larger than [`MAX_VIEW_PIXELS`].
    #[error(
        "the image's frame of {width} × {height} pixels exceeds the thermal view's bound of {max} pixels"
    )]
    TooLarge {
        /// Columns.
        width: usize,
        /// Rows.
        height: usize,
        /// The bound.
        max: usize,
    },
}

/// How a relative frame was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RelativeInfo {
    /// `raw-counts` or `palette-inversion`.
    pub method: String,
    /// Why only a relative analysis is possible.
    pub reason: String,
}

/// `GET /api/blobs/{sha256}/thermal`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ThermalView {
    /// The blob.
    pub sha256: String,
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Values are °C from the camera's radiometric calibration.
    pub radiometric: bool,
    /// `C` for temperatures, `relative` for a 0 (coldest) … 1 (hottest) scale.
    pub unit: String,
    /// The container the reader recognised (`flir-jpeg`, `fff`, `flir-seq`, `dji-rjpeg`,
    /// `jpeg`, `png`).
    pub format: String,
    /// Coldest temperature, °C (`null` when not radiometric).
    pub min_c: Option<f64>,
    /// Hottest temperature, °C (`null` when not radiometric).
    pub max_c: Option<f64>,
    /// Smallest value in `unit`.
    pub min: f64,
    /// Largest value in `unit`.
    pub max: f64,
    /// Where the largest value is.
    pub hottest: PointPx,
    /// Where the smallest value is.
    pub coldest: PointPx,
    /// How the relative scale was made (not radiometric only).
    pub relative: Option<RelativeInfo>,
    /// `width × height` values as little-endian `f32`, row-major, base64 (standard alphabet,
    /// padded); `NaN` where a pixel has no value.
    pub temps: String,
}

fn format_name(format: SourceFormat) -> &'static str {
    match format {
        SourceFormat::FlirJpeg { .. } => "flir-jpeg",
        SourceFormat::Fff => "fff",
        SourceFormat::Seq { .. } => "flir-seq",
        SourceFormat::DjiRjpeg => "dji-rjpeg",
        SourceFormat::Jpeg => "jpeg",
        SourceFormat::Png => "png",
    }
}

fn point((x, y): (usize, usize)) -> PointPx {
    PointPx { x: x as f64, y: y as f64 }
}

/// Decodes `bytes` (the blob `sha256`) with the default reader options. CPU-bound: call it
/// off the async workers.
///
/// # Errors
/// [`ThermalViewError::Decode`] with the reader's error; [`ThermalViewError::TooLarge`].
pub fn thermal_view(sha256: &str, bytes: &[u8]) -> Result<ThermalView, ThermalViewError> {
    let image = switchboard_thermal::decode(bytes, &DecodeOptions::default())?;
    view_of(sha256, &image)
}

fn view_of(sha256: &str, image: &ThermalImage) -> Result<ThermalView, ThermalViewError> {
    let (width, height) = (image.frame.width, image.frame.height);
    let too_large = || ThermalViewError::TooLarge { width, height, max: MAX_VIEW_PIXELS };
    if width.saturating_mul(height) > MAX_VIEW_PIXELS {
        return Err(too_large());
    }
    let mut raw = Vec::with_capacity(image.frame.values.len() * 4);
    for v in &image.frame.values {
        raw.extend_from_slice(&(*v as f32).to_le_bytes());
    }
    let radiometric = image.is_absolute();
    let relative = match &image.radiometry {
        Radiometry::Absolute { .. } => None,
        Radiometry::Relative { method, reason, .. } => Some(RelativeInfo {
            method: match method {
                RelativeMethod::RawCounts => "raw-counts",
                RelativeMethod::PaletteInversion => "palette-inversion",
            }
            .to_owned(),
            reason: reason.clone(),
        }),
    };
    let stats = &image.stats;
    Ok(ThermalView {
        sha256: sha256.to_owned(),
        width: u32::try_from(width).map_err(|_| too_large())?,
        height: u32::try_from(height).map_err(|_| too_large())?,
        radiometric,
        unit: if radiometric { "C" } else { "relative" }.to_owned(),
        format: format_name(image.format).to_owned(),
        min_c: radiometric.then_some(stats.min),
        max_c: radiometric.then_some(stats.max),
        min: stats.min,
        max: stats.max,
        hottest: point(stats.hottest_xy),
        coldest: point(stats.coldest_xy),
        relative,
        temps: STANDARD.encode(raw),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_bytes_are_the_readers_error() {
        let e = thermal_view("x", b"\xff\xd8\xff\xe0 not a jpeg").expect_err("refused");
        assert!(matches!(e, ThermalViewError::Decode(_)), "{e}");
        assert!(e.to_string().starts_with("cannot read thermal image: "), "{e}");
    }
}
