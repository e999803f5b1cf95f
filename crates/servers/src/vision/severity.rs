//! Severity of a thermal finding: NETA Table 100.18 "Thermographic Survey – Suggested Actions Based on
//! Temperature Rise" (ANSI/NETA ATS/MTS), applied as written.
//!
//! | ΔT vs similar component / reference | ΔT vs ambient air | band | action |
//! |---|---|---|---|
//! | 1–3 °C | 1–10 °C | `possible` | possible deficiency; warrants investigation |
//! | 4–15 °C | 11–20 °C | `probable` | indicates probable deficiency; repair as time permits |
//! | — | 21–40 °C | `monitor` | monitor until corrective measures can be accomplished |
//! | >15 °C | >40 °C | `major` | major discrepancy; repair immediately |
//!
//! The table's ranges are whole degrees; measured values are continuous, so each range is read as running up to
//! the start of the next one: vs reference `[1, 4)` possible, `[4, 15]` probable, `> 15` major; vs ambient
//! `[1, 11)` possible, `[11, 21)` probable, `[21, 40]` monitor, `> 40` major. Below 1 °C there is no
//! deficiency (the table starts at 1 °C, the smallest difference NETA requires an imager to resolve).
//!
//! The overall band is the worse of the criteria that apply. The ambient criterion applies **only** when the caller
//! gives the ambient air temperature: a warm pipe or a loaded transformer is not defective just for being above
//! the air around it, and guessing the ambient from the image would turn every warm object into a finding.

use serde::{Deserialize, Serialize};

/// NETA action for the `possible` band.
pub const ACTION_POSSIBLE: &str = "possible deficiency; warrants investigation";
/// NETA action for the `probable` band.
pub const ACTION_PROBABLE: &str = "indicates probable deficiency; repair as time permits";
/// NETA action for the `monitor` band.
pub const ACTION_MONITOR: &str = "monitor until corrective measures can be accomplished";
/// NETA action for the `major` band.
pub const ACTION_MAJOR: &str = "major discrepancy; repair immediately";
/// Action when no criterion reaches 1 °C.
pub const ACTION_NONE: &str = "no deficiency indicated; no action beyond routine surveys";

/// A NETA Table 100.18 band, ordered from harmless to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Band {
    /// ΔT below 1 °C on every criterion that applies.
    None,
    /// Possible deficiency.
    Possible,
    /// Probable deficiency.
    Probable,
    /// Monitor (ambient criterion 21–40 °C only).
    Monitor,
    /// Major discrepancy.
    Major,
}

impl Band {
    /// The NETA suggested action.
    pub fn action(self) -> &'static str {
        match self {
            Band::None => ACTION_NONE,
            Band::Possible => ACTION_POSSIBLE,
            Band::Probable => ACTION_PROBABLE,
            Band::Monitor => ACTION_MONITOR,
            Band::Major => ACTION_MAJOR,
        }
    }

    /// The lower-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Band::None => "none",
            Band::Possible => "possible",
            Band::Probable => "probable",
            Band::Monitor => "monitor",
            Band::Major => "major",
        }
    }
}

/// Band for a ΔT against a similar component under similar load (or another reference).
pub fn band_vs_reference(delta_c: f64) -> Band {
    if !delta_c.is_finite() || delta_c < 1.0 {
        Band::None
    } else if delta_c < 4.0 {
        Band::Possible
    } else if delta_c <= 15.0 {
        Band::Probable
    } else {
        Band::Major
    }
}

/// Band for a ΔT against ambient air.
pub fn band_vs_ambient(delta_c: f64) -> Band {
    if !delta_c.is_finite() || delta_c < 1.0 {
        Band::None
    } else if delta_c < 11.0 {
        Band::Possible
    } else if delta_c < 21.0 {
        Band::Probable
    } else if delta_c <= 40.0 {
        Band::Monitor
    } else {
        Band::Major
    }
}

/// Distance (°C) from `delta_c` to the nearest band edge of its criterion; small values mean the band could flip
/// with a small measurement error (used to lower confidence).
pub fn margin_to_edge(delta_c: f64, ambient: bool) -> f64 {
    let edges: &[f64] = if ambient { &[1.0, 11.0, 21.0, 40.0] } else { &[1.0, 4.0, 15.0] };
    edges.iter().map(|e| (delta_c - e).abs()).fold(f64::INFINITY, f64::min)
}

/// The `severity` object of the vision output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Severity {
    /// The worse band of the criteria that applied.
    pub band: Band,
    /// Which criterion decided the band, with the figures (or why none could be applied).
    pub criterion: String,
    /// The NETA suggested action for `band`.
    pub action: String,
    /// False when no criterion could be applied (relative analysis): `band` is then `none` by convention and says
    /// nothing about the equipment.
    pub assessed: bool,
}

/// Combines the reference and (optional) ambient criteria into a [`Severity`].
///
/// `reference_label` describes the reference (e.g. `frame median 34.7 °C`).
pub fn assess(delta_ref_c: Option<f64>, reference_label: &str, delta_ambient_c: Option<f64>) -> Severity {
    let by_ref = delta_ref_c.map(|d| (band_vs_reference(d), d));
    let by_amb = delta_ambient_c.map(|d| (band_vs_ambient(d), d));
    let ref_text = |band: Band, d: f64| {
        format!(
            "ΔT {d:.1} °C vs reference ({reference_label}) → {} (NETA Table 100.18, similar component: 1–3 °C \
             possible, 4–15 °C probable, >15 °C major)",
            band.as_str()
        )
    };
    let amb_text = |band: Band, d: f64| {
        format!(
            "ΔT {d:.1} °C vs ambient air → {} (NETA Table 100.18, vs ambient: 1–10 °C possible, 11–20 °C probable, \
             21–40 °C monitor, >40 °C major)",
            band.as_str()
        )
    };
    let (band, criterion) = match (by_ref, by_amb) {
        (None, None) => {
            return Severity {
                band: Band::None,
                criterion:
                    "not assessed: no temperatures (relative analysis), so NETA ΔT bands cannot be applied"
                        .into(),
                action:
                    "re-take the image with a radiometric camera (or export radiometric data) to grade it"
                        .into(),
                assessed: false,
            };
        }
        (Some((b, d)), None) => (b, ref_text(b, d)),
        (None, Some((b, d))) => (b, amb_text(b, d)),
        (Some((rb, rd)), Some((ab, ad))) => {
            let decided = if ab > rb { amb_text(ab, ad) } else { ref_text(rb, rd) };
            let other = if ab > rb { ref_text(rb, rd) } else { amb_text(ab, ad) };
            (rb.max(ab), format!("{decided}; also {other}"))
        }
    };
    Severity { band, criterion, action: band.action().into(), assessed: true }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_bands_follow_the_table() {
        let cases = [(0.4, Band::None), (1.0, Band::Possible), (3.9, Band::Possible), (4.0, Band::Probable)];
        for (d, b) in cases {
            assert_eq!(band_vs_reference(d), b, "{d}");
        }
        assert_eq!(band_vs_reference(15.0), Band::Probable);
        assert_eq!(band_vs_reference(15.1), Band::Major);
        assert_eq!(band_vs_reference(f64::NAN), Band::None);
    }

    #[test]
    fn ambient_bands_follow_the_table() {
        let cases = [
            (0.9, Band::None),
            (10.9, Band::Possible),
            (11.0, Band::Probable),
            (20.9, Band::Probable),
            (21.0, Band::Monitor),
            (40.0, Band::Monitor),
            (40.1, Band::Major),
        ];
        for (d, b) in cases {
            assert_eq!(band_vs_ambient(d), b, "{d}");
        }
    }

    #[test]
    fn overall_band_is_the_worse_and_ambient_only_when_given() {
        let s = assess(Some(2.0), "median", None);
        assert_eq!((s.band, s.action.as_str()), (Band::Possible, ACTION_POSSIBLE));
        let s = assess(Some(2.0), "median", Some(30.0));
        assert_eq!(s.band, Band::Monitor);
        assert!(s.criterion.starts_with("ΔT 30.0 °C vs ambient"), "{}", s.criterion);
        let s = assess(Some(20.0), "median", Some(30.0));
        assert_eq!((s.band, s.action.as_str()), (Band::Major, ACTION_MAJOR));
        let s = assess(None, "", None);
        assert!(!s.assessed && s.band == Band::None);
        assert_eq!(serde_json::to_value(Band::Major).unwrap(), "major");
        assert!(margin_to_edge(15.2, false) < 0.3);
    }
}
