//! Format detection and the decode pipeline: bytes in, [`ThermalImage`] out.
//!
//! The order of trust is fixed here: FLIR radiometric data (absolute °C) wins; a DJI R-JPEG gets a
//! labelled relative analysis; anything else that is an image is inverted as false colour.

use crate::dji;
use crate::error::{Error, Result};
use crate::false_colour::{self, InversionConfig};
use crate::fff::{self, Fff, camera_info, palette_info, raw_data};
use crate::frame::{Frame, RawFrame};
use crate::image::{FrameSource, InversionSummary, Radiometry, RelativeMethod, SourceFormat, ThermalImage};
use crate::jpeg;
use crate::planck::{Conditions, TemperatureModel};
use crate::seq;
use crate::stats;

/// Scene conditions that replace the values stored in the file (absolute images only).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Overrides {
    /// Object emissivity, (0, 1].
    pub emissivity: Option<f64>,
    /// Object distance, metres.
    pub distance_m: Option<f64>,
    /// Reflected apparent temperature, °C.
    pub reflected_c: Option<f64>,
    /// Atmospheric (ambient) temperature, °C.
    pub atmospheric_c: Option<f64>,
    /// Relative humidity, fraction 0–1.
    pub relative_humidity: Option<f64>,
}

impl Overrides {
    /// Checks each given override is in range, naming the field when not.
    pub fn validate(&self) -> Result<()> {
        // Neutral values for the fields not given, so only the given ones can fail.
        self.apply(Conditions {
            emissivity: 1.0,
            distance_m: 0.0,
            reflected_c: 20.0,
            atmospheric_c: 20.0,
            relative_humidity: 0.5,
        })
        .validate()
    }

    /// `base` with the given fields replaced.
    pub fn apply(&self, base: Conditions) -> Conditions {
        Conditions {
            emissivity: self.emissivity.unwrap_or(base.emissivity),
            distance_m: self.distance_m.unwrap_or(base.distance_m),
            reflected_c: self.reflected_c.unwrap_or(base.reflected_c),
            atmospheric_c: self.atmospheric_c.unwrap_or(base.atmospheric_c),
            relative_humidity: self.relative_humidity.unwrap_or(base.relative_humidity),
        }
    }
}

/// Where a DJI R-JPEG's relative frame comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DjiSource {
    /// The APP3 sensor counts, rescaled 0–1 (exact hottest/coldest pixel).
    #[default]
    RawCounts,
    /// The visible false-colour JPEG, palette-inverted.
    VisibleImage,
}

/// Options for [`decode`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecodeOptions {
    /// SEQ frame to decode (0-based); must be 0 for single-frame inputs.
    pub frame_index: usize,
    /// Scene conditions replacing the stored ones (absolute images only).
    pub overrides: Overrides,
    /// Relative source for DJI R-JPEGs.
    pub dji_source: DjiSource,
    /// Palette inversion settings for false-colour inputs.
    pub inversion: InversionConfig,
}

const PNG_MAGIC: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

/// Detects the format of `bytes` and decodes it.
pub fn decode(bytes: &[u8], opts: &DecodeOptions) -> Result<ThermalImage> {
    opts.overrides.validate()?;
    if jpeg::is_jpeg(bytes) {
        let layout = jpeg::walk(bytes)?;
        if let Some(blob) = jpeg::join_flir_chunks(&layout)? {
            check_single_frame(opts)?;
            let chunks = layout.with_marker(0xE1).filter(|s| s.payload.starts_with(b"FLIR\0")).count();
            return from_fff(&blob, 0, SourceFormat::FlirJpeg { chunks }, opts);
        }
        if dji::is_dji(&layout) {
            check_single_frame(opts)?;
            return from_dji(bytes, &layout, opts);
        }
        check_single_frame(opts)?;
        let rgb = jpeg::decode_rgb(bytes, "plain JPEG image")?;
        return from_false_colour(&rgb, SourceFormat::Jpeg, opts, "a plain JPEG holds no radiometric data");
    }
    if fff::has_magic(bytes) {
        let ranges = seq::frame_ranges(bytes)?;
        let frames = ranges.len();
        let &(start, end) = ranges
            .get(opts.frame_index)
            .ok_or(Error::FrameIndex { requested: opts.frame_index, available: frames })?;
        let blob = bytes.get(start..end.max(start)).unwrap_or_default();
        let format = if frames > 1 {
            SourceFormat::Seq { frame: opts.frame_index, frames }
        } else {
            SourceFormat::Fff
        };
        // Records may legitimately point past the computed end only if the file is cut; give the
        // parser the rest of the file so its error names the record.
        let blob = if end >= bytes.len() { bytes.get(start..).unwrap_or(blob) } else { blob };
        return from_fff(blob, start, format, opts);
    }
    if bytes.starts_with(PNG_MAGIC) {
        check_single_frame(opts)?;
        return from_png(bytes, opts);
    }
    Err(Error::UnknownFormat { magic: bytes.iter().take(8).copied().collect() })
}

fn check_single_frame(opts: &DecodeOptions) -> Result<()> {
    if opts.frame_index == 0 {
        Ok(())
    } else {
        Err(Error::FrameIndex { requested: opts.frame_index, available: 1 })
    }
}

/// Decodes one FFF frame to absolute temperatures.
fn from_fff(blob: &[u8], base: usize, format: SourceFormat, opts: &DecodeOptions) -> Result<ThermalImage> {
    let fff = Fff::parse(blob, base)?;
    let missing = |record| Error::MissingRecord { record, directory_offset: fff.directory_offset };
    let raw_entry = fff.find(fff::RECORD_RAW_DATA).ok_or_else(|| missing("RawData (type 0x01)"))?;
    let cam_entry = fff.find(fff::RECORD_CAMERA_INFO).ok_or_else(|| missing("CameraInfo (type 0x20)"))?;
    let (raw, encoding) = raw_data::read(&fff.record(raw_entry, "RawData record (type 0x01)")?)?;
    let cam_record = fff.record(cam_entry, "CameraInfo record (type 0x20)")?;
    let camera = camera_info::read(&cam_record)?;
    let palette_info = match fff.find(fff::RECORD_PALETTE_INFO) {
        Some(e) => Some(palette_info::read(&fff.record(e, "PaletteInfo record (type 0x22)")?)?),
        None => None,
    };
    let conditions = opts.overrides.apply(camera.conditions);
    conditions
        .validate()
        .map_err(|e| cam_record.error(format!("stored scene value rejected ({e}); override it")))?;
    let model = TemperatureModel::new(camera.planck, camera.transmission, conditions)?;
    let frame = temperatures(&raw, &model)?;
    let stats = stats::compute(&frame)?;
    Ok(ThermalImage {
        format,
        radiometry: Radiometry::Absolute { model },
        frame,
        stats,
        raw: Some(raw),
        raw_encoding: Some(encoding),
        camera: Some(camera),
        palette_info,
        dji: None,
        inversion: None,
        records: fff.records.clone(),
    })
}

/// Converts every raw count through a lookup table over the frame's raw range.
fn temperatures(raw: &RawFrame, model: &TemperatureModel) -> Result<Frame> {
    let (lo, hi) = raw.min_max().unwrap_or((0, 0));
    let lut: Vec<f64> = (lo..=hi).map(|s| model.raw_to_celsius(f64::from(s))).collect();
    let values =
        raw.data.iter().map(|&s| lut.get(usize::from(s - lo)).copied().unwrap_or(f64::NAN)).collect();
    Frame::new(raw.width, raw.height, values)
}

/// Rescales counts to 0–1 between the frame's min and max.
fn relative_counts(raw: &RawFrame) -> Result<Frame> {
    let (lo, hi) = raw.min_max().unwrap_or((0, 0));
    let span = f64::from(hi - lo);
    let values = raw.data.iter().map(|&s| if span > 0.0 { f64::from(s - lo) / span } else { 0.0 }).collect();
    Frame::new(raw.width, raw.height, values)
}

const DJI_REASON: &str = "DJI R-JPEG raw counts need DJI's proprietary calibration to become temperatures";

fn from_dji(bytes: &[u8], layout: &jpeg::Layout<'_>, opts: &DecodeOptions) -> Result<ThermalImage> {
    match opts.dji_source {
        DjiSource::RawCounts => {
            let (info, raw) = dji::read(layout, true)?;
            let raw = raw.ok_or_else(|| Error::Dji { reason: "APP3 raw frame missing".into() })?;
            let frame = relative_counts(&raw)?;
            let stats = stats::compute(&frame)?;
            Ok(ThermalImage {
                format: SourceFormat::DjiRjpeg,
                radiometry: Radiometry::Relative {
                    method: RelativeMethod::RawCounts,
                    palette: None,
                    frame_source: FrameSource::RawSensor,
                    reason: DJI_REASON.into(),
                },
                frame,
                stats,
                raw: Some(raw),
                raw_encoding: None,
                camera: None,
                palette_info: None,
                dji: Some(info),
                inversion: None,
                records: Vec::new(),
            })
        }
        DjiSource::VisibleImage => {
            let (info, _) = dji::read(layout, false)?;
            let rgb = jpeg::decode_rgb(bytes, "DJI R-JPEG visible image")?;
            let mut image = from_false_colour(&rgb, SourceFormat::DjiRjpeg, opts, DJI_REASON)?;
            image.dji = Some(info);
            Ok(image)
        }
    }
}

fn from_false_colour(
    rgb: &false_colour::RgbImage,
    format: SourceFormat,
    opts: &DecodeOptions,
    reason: &str,
) -> Result<ThermalImage> {
    let inv = false_colour::invert(rgb, &opts.inversion)?;
    let stats = stats::compute(&inv.frame)?;
    Ok(ThermalImage {
        format,
        radiometry: Radiometry::Relative {
            method: RelativeMethod::PaletteInversion,
            palette: Some(inv.palette.name.clone()),
            frame_source: FrameSource::VisibleImage,
            reason: reason.to_owned(),
        },
        frame: inv.frame,
        stats,
        raw: None,
        raw_encoding: None,
        camera: None,
        palette_info: None,
        dji: None,
        inversion: Some(InversionSummary {
            coverage: inv.coverage,
            overlay_px: inv.overlay_px,
            colour_bar_px: inv.colour_bar_px,
            off_palette_px: inv.off_palette_px,
            fits: inv.fits,
        }),
        records: Vec::new(),
    })
}

fn from_png(bytes: &[u8], opts: &DecodeOptions) -> Result<ThermalImage> {
    // IHDR: bit depth at byte 24, colour type at byte 25.
    let grey16 = bytes.get(24) == Some(&16) && bytes.get(25) == Some(&0);
    if grey16 {
        let raw = raw_data::decode_png16(bytes, "16-bit greyscale PNG", crate::bytes::ByteOrder::Big)?;
        let frame = relative_counts(&raw)?;
        let stats = stats::compute(&frame)?;
        return Ok(ThermalImage {
            format: SourceFormat::Png,
            radiometry: Radiometry::Relative {
                method: RelativeMethod::RawCounts,
                palette: None,
                frame_source: FrameSource::RawSensor,
                reason: "a 16-bit PNG carries counts but no calibration".into(),
            },
            frame,
            stats,
            raw: Some(raw),
            raw_encoding: None,
            camera: None,
            palette_info: None,
            dji: None,
            inversion: None,
            records: Vec::new(),
        });
    }
    let rgb = false_colour::decode_png_rgb(bytes, "plain PNG image")?;
    from_false_colour(&rgb, SourceFormat::Png, opts, "a plain PNG holds no radiometric data")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_bytes_and_bad_overrides_are_named() {
        let msg = decode(b"GIF89a...", &DecodeOptions::default()).unwrap_err().to_string();
        assert!(msg.starts_with("unrecognised image format: first bytes are [47, 49, 46"), "{msg}");
        let opts = DecodeOptions {
            overrides: Overrides { emissivity: Some(1.5), ..Overrides::default() },
            ..DecodeOptions::default()
        };
        let msg = decode(b"", &opts).unwrap_err().to_string();
        assert!(msg.starts_with("invalid option `emissivity`"), "{msg}");
        assert!(decode(&[], &DecodeOptions::default()).is_err());
    }

    #[test]
    fn relative_counts_span_zero_to_one() {
        let raw = RawFrame { width: 3, height: 1, data: vec![10, 20, 30] };
        assert_eq!(relative_counts(&raw).unwrap().values, vec![0.0, 0.5, 1.0]);
        let flat = RawFrame { width: 2, height: 1, data: vec![7, 7] };
        assert_eq!(relative_counts(&flat).unwrap().values, vec![0.0, 0.0]);
    }
}
