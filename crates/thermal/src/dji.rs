//! DJI R-JPEG (M2EA, M3T, H20T, M30T …): detection, the APP3 raw frame and the APP4 parameters.
//!
//! These files carry a 16-bit sensor frame in APP3 segments, but turning it into temperatures needs
//! DJI's proprietary SDK curves (APP5 calibration). This crate therefore never reports DJI values as
//! °C: it offers a *relative* analysis, either from the raw counts (monotonic in scene radiance, so
//! the hottest pixel is exact) or by inverting the visible false-colour JPEG.
//!
//! DJI XT2/XT-R files carry standard FLIR FFF chunks instead and are read as FLIR files.

use crate::bytes::{ByteOrder, sample_u16};
use crate::error::{Error, Result};
use crate::frame::{RawFrame, checked_area};
use crate::jpeg::Layout;

/// Scene parameters stored in APP4 (the "ThermalParams2" layout), as the camera stored them.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct DjiParams {
    /// Ambient temperature, °C.
    pub ambient_c: f64,
    /// Object distance, metres.
    pub distance_m: f64,
    /// Emissivity.
    pub emissivity: f64,
    /// Relative humidity, fraction 0–1.
    pub relative_humidity: f64,
    /// Reflected temperature, °C.
    pub reflected_c: f64,
}

/// What was found in a DJI R-JPEG.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DjiInfo {
    /// Size of the visible JPEG (the thermal frame has the same size on these cameras).
    pub width: usize,
    /// Height of the visible JPEG.
    pub height: usize,
    /// Number of APP3 segments joined into the raw frame.
    pub app3_segments: usize,
    /// Bytes of APP5 calibration data (not interpreted).
    pub calibration_bytes: usize,
    /// APP4 parameters, when the layout is recognised.
    pub params: Option<DjiParams>,
}

/// True when the JPEG looks like a DJI R-JPEG: APP3 data plus APP4/APP5 thermal segments, and no
/// FLIR chunks (the caller checks FLIR first).
pub(crate) fn is_dji(layout: &Layout<'_>) -> bool {
    let app3 = layout.with_marker(0xE3).count();
    let app45 = layout.with_marker(0xE4).count() + layout.with_marker(0xE5).count();
    let app3_len: usize = layout.with_marker(0xE3).map(|s| s.payload.len()).sum();
    let size_match =
        layout.frame_size.is_some_and(|(w, h)| w.saturating_mul(h).saturating_mul(2) == app3_len);
    app3 > 0 && (app45 > 0 || size_match)
}

/// Reads the DJI facts and, when `want_raw`, the APP3 raw frame (little-endian u16, visible-image size).
pub(crate) fn read(layout: &Layout<'_>, want_raw: bool) -> Result<(DjiInfo, Option<RawFrame>)> {
    let (width, height) = layout.frame_size.ok_or_else(|| Error::Dji {
        reason: "no SOF segment before start-of-scan, so the frame size is unknown".into(),
    })?;
    let n = checked_area(width, height, "DJI visible image SOF segment")?;
    let app3: Vec<_> = layout.with_marker(0xE3).collect();
    let params = layout.with_marker(0xE4).next().and_then(|s| params_v2(s.payload));
    let calibration_bytes = layout.with_marker(0xE5).map(|s| s.payload.len()).sum();
    let info = DjiInfo { width, height, app3_segments: app3.len(), calibration_bytes, params };
    if !want_raw {
        return Ok((info, None));
    }
    let mut joined = Vec::with_capacity(app3.iter().map(|s| s.payload.len()).sum());
    for s in &app3 {
        joined.extend_from_slice(s.payload);
    }
    let needed = n * 2;
    if joined.len() != needed {
        let first = app3.first().map_or(0, |s| s.offset);
        return Err(Error::Dji {
            reason: format!(
                "{} APP3 segment(s) from byte {first} hold {} bytes, a {width}x{height} 16-bit frame needs {needed}",
                app3.len(),
                joined.len()
            ),
        });
    }
    let data = joined.chunks_exact(2).map(|p| sample_u16(p, ByteOrder::Little)).collect();
    Ok((info, Some(RawFrame { width, height, data })))
}

/// Parses APP4 in the "ThermalParams2" layout: five little-endian f32 at 0 (or at 32), recognised by
/// the bytes `2c 01 20 00` 32 bytes further on.
fn params_v2(app4: &[u8]) -> Option<DjiParams> {
    const TAG: &[u8] = &[0x2C, 0x01, 0x20, 0x00];
    let base = if app4.get(32..36) == Some(TAG) {
        0
    } else if app4.get(64..68) == Some(TAG) {
        32
    } else {
        return None;
    };
    let f = |i: usize| -> Option<f64> {
        let at = base + i * 4;
        let b: [u8; 4] = app4.get(at..at + 4)?.try_into().ok()?;
        Some(f64::from(f32::from_le_bytes(b)))
    };
    let p = DjiParams {
        ambient_c: f(0)?,
        distance_m: f(1)?,
        emissivity: f(2)?,
        relative_humidity: f(3)?,
        reflected_c: f(4)?,
    };
    let plausible = p.emissivity > 0.0
        && p.emissivity <= 1.0
        && (0.0..=1.0).contains(&p.relative_humidity)
        && p.distance_m.is_finite()
        && p.ambient_c.is_finite()
        && p.reflected_c.is_finite();
    plausible.then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_v2_layout_is_recognised_and_implausible_values_dropped() {
        let mut app4 = Vec::new();
        for v in [25.0f32, 5.0, 0.95, 0.5, 24.0] {
            app4.extend(v.to_le_bytes());
        }
        app4.resize(32, 0);
        app4.extend([0x2C, 0x01, 0x20, 0x00]);
        let p = params_v2(&app4).unwrap();
        assert_eq!(p.distance_m, 5.0);
        assert_eq!(p.reflected_c, 24.0);
        app4[8..12].copy_from_slice(&7.0f32.to_le_bytes());
        assert!(params_v2(&app4).is_none());
        assert!(params_v2(&[0; 10]).is_none());
    }
}
