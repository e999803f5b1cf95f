//! Radiometric thermal images in pure Rust: bytes in, temperatures (or a clearly labelled relative
//! scale), statistics and hotspots out.
//!
//! This crate is the vision server's only contact with thermal file formats. It does no I/O and no
//! async work, so the router, the desktop app and tests can all feed it bytes from anywhere.
//!
//! * FLIR radiometric JPEG (APP1 "FLIR" chunks → FFF), bare FFF and SEQ files are read to °C with the
//!   camera's Planck calibration and a single-path atmospheric transmission ([`planck`]), with user
//!   overrides for emissivity, distance, reflected and atmospheric temperature, and humidity.
//! * DJI R-JPEGs and plain JPEG/PNG images get a *relative* 0–1 analysis, labelled
//!   [`Radiometry::Relative`], from sensor counts or by inverting the false-colour palette.
//! * [`hotspot`] finds connected warm regions against a median, region or fixed reference.
//!
//! ```no_run
//! use switchboard_thermal::{decode, DecodeOptions, HotspotConfig};
//! # fn main() -> Result<(), switchboard_thermal::Error> {
//! let bytes = std::fs::read("FLIR0001.jpg").unwrap_or_default();
//! let image = decode(&bytes, &DecodeOptions::default())?;
//! if image.is_absolute() {
//!     println!("max {:.1} °C at {:?}", image.stats.max, image.stats.hottest_xy);
//! }
//! let report = image.hotspots(&HotspotConfig::default())?;
//! # let _ = report;
//! # Ok(())
//! # }
//! ```
//!
//! Corrupt or truncated input yields an [`Error`] naming the byte offset, segment or record; it never
//! panics.

mod bytes;
pub mod decode;
pub mod dji;
pub mod error;
pub mod false_colour;
pub mod fff;
pub mod frame;
pub mod hotspot;
pub mod image;
mod jpeg;
pub mod palette;
pub mod planck;
pub mod seq;
pub mod stats;

pub use bytes::ByteOrder;
pub use decode::{DecodeOptions, DjiSource, Overrides, decode};
pub use error::{Error, Result};
pub use false_colour::{InversionConfig, RgbImage, invert};
pub use fff::camera_info::CameraInfo;
pub use fff::palette_info::PaletteInfo;
pub use frame::{Frame, RawFrame};
pub use hotspot::{Hotspot, HotspotConfig, HotspotReport, Rect, Reference};
pub use image::{FrameSource, Radiometry, RelativeMethod, SourceFormat, ThermalImage};
pub use palette::{Palette, PaletteKind};
pub use planck::{Conditions, TemperatureModel};
pub use stats::Stats;
