//! The decoded result: a value frame with its statistics, labelled with how far it can be trusted.
//!
//! [`Radiometry`] is the seam between "these are temperatures" and "these are only relative
//! positions on a colour scale"; every consumer must look at it before printing a number with a
//! °C sign.

use crate::dji::DjiInfo;
use crate::error::Result;
use crate::false_colour::PaletteFit;
use crate::fff::RecordEntry;
use crate::fff::camera_info::CameraInfo;
use crate::fff::palette_info::PaletteInfo;
use crate::fff::raw_data::RawEncoding;
use crate::frame::{Frame, RawFrame};
use crate::hotspot::{self, HotspotConfig, HotspotReport, Rect};
use crate::planck::TemperatureModel;
use crate::stats::Stats;

/// The container the bytes were recognised as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum SourceFormat {
    /// FLIR radiometric JPEG (FFF in APP1 "FLIR" chunks).
    FlirJpeg {
        /// Number of APP1 chunks joined.
        chunks: usize,
    },
    /// A bare FFF file (one frame).
    Fff,
    /// A FLIR SEQ sequence (several FFF frames).
    Seq {
        /// The frame decoded (0-based).
        frame: usize,
        /// Frames in the file.
        frames: usize,
    },
    /// DJI R-JPEG (APP3 raw counts + APP4/APP5 parameters); never absolute.
    DjiRjpeg,
    /// A plain JPEG with no radiometric data (treated as false colour).
    Jpeg,
    /// A plain PNG with no radiometric data (false colour, or 16-bit grey counts).
    Png,
}

/// How a relative frame was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum RelativeMethod {
    /// Sensor counts rescaled to 0–1 between the frame's min and max. Monotonic in scene radiance,
    /// so the hottest and coldest pixels are exact, but not linear in temperature.
    RawCounts,
    /// Colours of the visible false-colour image mapped back onto a palette curve (0 = cold end of
    /// the colour bar, 1 = hot end). Saturates outside the colour bar; approximate.
    PaletteInversion,
}

/// Which pixel grid a frame lives on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum FrameSource {
    /// The thermal sensor's raw frame.
    RawSensor,
    /// The visible (display) image, which may be upscaled, cropped or rotated relative to the sensor.
    VisibleImage,
}

/// Whether values are temperatures.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Radiometry {
    /// Values are object temperatures in °C from the camera's Planck calibration.
    Absolute {
        /// The conversion used, including any user overrides.
        model: TemperatureModel,
    },
    /// Values are relative, 0 (coldest) … 1 (hottest); no temperature can be read from them.
    Relative {
        /// How the relative scale was made.
        method: RelativeMethod,
        /// Palette inverted (for [`RelativeMethod::PaletteInversion`]).
        palette: Option<String>,
        /// Which pixel grid the frame uses.
        frame_source: FrameSource,
        /// Why only a relative analysis is possible.
        reason: String,
    },
}

/// Summary of a palette inversion.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct InversionSummary {
    /// Fraction of pixels that received a value.
    pub coverage: f64,
    /// Pixels masked as overlay text or markers.
    pub overlay_px: usize,
    /// Pixels masked as an on-image colour bar.
    pub colour_bar_px: usize,
    /// Pixels rejected as too far from the palette curve.
    pub off_palette_px: usize,
    /// Fit of each candidate palette, best first.
    pub fits: Vec<PaletteFit>,
}

/// A decoded thermal image.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ThermalImage {
    /// Container format.
    pub format: SourceFormat,
    /// Whether `frame` holds °C or relative values.
    pub radiometry: Radiometry,
    /// Per-pixel values (°C or 0–1), `NaN` where undefined.
    pub frame: Frame,
    /// Statistics of `frame`; positions in `frame` coordinates.
    pub stats: Stats,
    /// Raw sensor counts, when the file has them.
    #[serde(skip)]
    pub raw: Option<RawFrame>,
    /// How the FLIR raw frame was stored.
    pub raw_encoding: Option<RawEncoding>,
    /// FLIR CameraInfo.
    pub camera: Option<CameraInfo>,
    /// FLIR PaletteInfo.
    pub palette_info: Option<PaletteInfo>,
    /// DJI R-JPEG facts.
    pub dji: Option<DjiInfo>,
    /// Palette inversion summary, for relative frames made from colours.
    pub inversion: Option<InversionSummary>,
    /// FFF directory entries (FLIR files).
    pub records: Vec<RecordEntry>,
}

impl ThermalImage {
    /// True when values are temperatures in °C.
    pub fn is_absolute(&self) -> bool {
        matches!(self.radiometry, Radiometry::Absolute { .. })
    }

    /// The temperature model, for absolute images.
    pub fn model(&self) -> Option<&TemperatureModel> {
        match &self.radiometry {
            Radiometry::Absolute { model } => Some(model),
            Radiometry::Relative { .. } => None,
        }
    }

    /// The display colour bar limits in °C (`RawValueMedian ± RawValueRange / 2` through the
    /// temperature model), for absolute FLIR images that store them.
    pub fn colour_bar_c(&self) -> Option<(f64, f64)> {
        let model = self.model()?;
        let (lo, hi) = self.camera.as_ref()?.colour_bar_raw()?;
        Some((model.raw_to_celsius(lo), model.raw_to_celsius(hi)))
    }

    /// The value (°C or relative) at column `x`, row `y`.
    pub fn value_at(&self, x: usize, y: usize) -> Option<f64> {
        self.frame.get(x, y)
    }

    /// Hot regions; `config.delta` is in the frame's unit (°C, or 0–1 for relative frames).
    pub fn hotspots(&self, config: &HotspotConfig) -> Result<HotspotReport> {
        hotspot::detect(&self.frame, config)
    }

    /// Mean value inside a rectangle (e.g. a reference component).
    pub fn region_mean(&self, rect: Rect) -> Result<f64> {
        hotspot::region_mean(&self.frame, rect)
    }
}
