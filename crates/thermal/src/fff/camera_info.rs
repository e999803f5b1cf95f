//! The CameraInfo record (type 0x20): calibration constants, the scene conditions stored at capture,
//! the colour-bar range and camera identity.
//!
//! Offsets follow the design notes (section 2.6); temperatures are stored in kelvin and converted to
//! °C here so that nothing downstream deals with kelvin.

use crate::bytes::{ByteOrder, Bytes};
use crate::error::Result;
use crate::fff::Record;
use crate::planck::{AtmosphericTransmission, Conditions, KELVIN, PlanckConstants};

/// Capture time as stored by the camera.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CaptureTime {
    /// Seconds since the Unix epoch (camera clock).
    pub unix_seconds: u32,
    /// Milliseconds within the second.
    pub millis: u32,
    /// Time-zone field in minutes, as stored.
    pub timezone_minutes: i16,
}

/// Everything radiometry needs from CameraInfo, plus identity fields for reports.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CameraInfo {
    /// Byte order the record was stored in.
    pub byte_order: ByteOrder,
    /// Planck calibration constants.
    pub planck: PlanckConstants,
    /// Atmospheric transmission coefficients.
    pub transmission: AtmosphericTransmission,
    /// Scene conditions stored by the camera (emissivity, distance, temperatures in °C, humidity 0–1).
    pub conditions: Conditions,
    /// IR window temperature, °C (not used by the single-path formula).
    pub ir_window_c: f64,
    /// IR window transmission (not used by the single-path formula).
    pub ir_window_transmission: f64,
    /// Top of the camera's calibrated range, °C.
    pub camera_range_max_c: f64,
    /// Bottom of the camera's calibrated range, °C.
    pub camera_range_min_c: f64,
    /// Camera model, e.g. "FLIR E40".
    pub camera_model: String,
    /// Camera part number.
    pub part_number: String,
    /// Camera serial number.
    pub serial_number: String,
    /// Camera software version.
    pub software: String,
    /// Lens model.
    pub lens_model: String,
    /// Horizontal field of view, degrees.
    pub field_of_view_deg: f64,
    /// RawValueRangeMin (0x310), when the record is long enough.
    pub raw_value_range_min: Option<u16>,
    /// RawValueRangeMax (0x312).
    pub raw_value_range_max: Option<u16>,
    /// RawValueMedian (0x338): centre of the display colour bar in raw counts.
    pub raw_value_median: Option<u16>,
    /// RawValueRange (0x33C): width of the display colour bar in raw counts.
    pub raw_value_range: Option<u16>,
    /// Capture time (0x384).
    pub capture_time: Option<CaptureTime>,
    /// Focus distance in metres (0x45C).
    pub focus_distance_m: Option<f64>,
}

impl CameraInfo {
    /// The display colour bar in raw counts: `RawValueMedian ± RawValueRange / 2`.
    pub fn colour_bar_raw(&self) -> Option<(f64, f64)> {
        let m = f64::from(self.raw_value_median?);
        let r = f64::from(self.raw_value_range?);
        (r > 0.0).then(|| (m - r / 2.0, m + r / 2.0))
    }
}

/// Reads a CameraInfo record (in its own byte order).
pub(crate) fn read(record: &Record<'_>) -> Result<CameraInfo> {
    let b: Bytes<'_> = record.bytes;
    let f = |off: usize| b.f32(off).map(f64::from);
    let k = |off: usize| b.f32(off).map(|v| f64::from(v) - KELVIN);
    let mut humidity = f(0x3C)?;
    if humidity > 2.0 {
        humidity /= 100.0;
    }
    let conditions = Conditions {
        emissivity: f(0x20)?,
        distance_m: f(0x24)?,
        reflected_c: k(0x28)?,
        atmospheric_c: k(0x2C)?,
        relative_humidity: humidity,
    };
    let planck = PlanckConstants {
        r1: f(0x58)?,
        b: f(0x5C)?,
        f: f(0x60)?,
        o: f64::from(b.i32(0x308)?),
        r2: f(0x30C)?,
    };
    let transmission = AtmosphericTransmission {
        alpha1: f(0x70)?,
        alpha2: f(0x74)?,
        beta1: f(0x78)?,
        beta2: f(0x7C)?,
        x: f(0x80)?,
    };
    let capture_time = match (b.u32(0x384), b.u32(0x388), b.i16(0x38C)) {
        (Ok(unix_seconds), Ok(millis), Ok(timezone_minutes)) => {
            Some(CaptureTime { unix_seconds, millis, timezone_minutes })
        }
        _ => None,
    };
    Ok(CameraInfo {
        byte_order: b.order(),
        planck,
        transmission,
        conditions,
        ir_window_c: k(0x30)?,
        ir_window_transmission: f(0x34)?,
        camera_range_max_c: k(0x90)?,
        camera_range_min_c: k(0x94)?,
        camera_model: b.string(0xD4, 32)?,
        part_number: b.string(0xF4, 16)?,
        serial_number: b.string(0x104, 16)?,
        software: b.string(0x114, 16)?,
        lens_model: b.string(0x170, 32)?,
        field_of_view_deg: f(0x1B4)?,
        raw_value_range_min: b.u16(0x310).ok(),
        raw_value_range_max: b.u16(0x312).ok(),
        raw_value_median: b.u16(0x338).ok(),
        raw_value_range: b.u16(0x33C).ok(),
        capture_time,
        focus_distance_m: b.f32(0x45C).ok().map(f64::from),
    })
}
