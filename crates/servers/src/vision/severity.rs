//! Severity of a thermal finding, by the criteria that apply to the equipment:
//!
//! - **electrical equipment** (panels, switchgear, boards, transformers): NETA Table 100.18 ([`assess`]);
//! - **PV modules**: the classes of abnormality of IEC TS 62446-3 ([`assess_pv`]);
//! - **everything else, and unknown equipment**: no published ΔT criteria, so no band ([`ungraded`]); the ΔT
//!   figures and the hotspot are still reported, and the plan starts with what the operator should confirm.
//!
//! # NETA Table 100.18
//!
//! "Thermographic Survey – Suggested Actions Based on Temperature Rise" (ANSI/NETA ATS/MTS), applied as written.
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

/// The standard [`assess`] applies.
pub const NETA: &str = "NETA MTS Table 100.18";
/// The standard [`assess_pv`] applies.
pub const IEC_62446_3: &str = "IEC TS 62446-3";

/// ΔT (K) from which a PV module finding is a thermal abnormality (class CoA 2).
pub const PV_COA2_FROM_C: f64 = 3.0;
/// ΔT (K) above which a PV module finding is a safety-relevant thermal abnormality (class CoA 3).
pub const PV_COA3_ABOVE_C: f64 = 20.0;

/// The IEC TS 62446-3 class of abnormality for a ΔT against similar modules (or cells) under the same
/// irradiance: `CoA 1` no abnormality, `CoA 2` thermal abnormality, `CoA 3` safety-relevant thermal abnormality.
///
/// The standard defines the three classes and leaves the class of a pattern to the thermographer; the ΔT
/// thresholds here ([`PV_COA2_FROM_C`], [`PV_COA3_ABOVE_C`]) are this tool's screening rule, stated in the
/// criterion text and in the knowledge base (`pv-iec-62446-3-classes`).
pub fn pv_class(delta_c: f64) -> (&'static str, &'static str) {
    if !delta_c.is_finite() || delta_c < PV_COA2_FROM_C {
        ("CoA 1", "no abnormality; no action beyond the routine inspection")
    } else if delta_c <= PV_COA3_ABOVE_C {
        (
            "CoA 2",
            "thermal abnormality: find the cause (cell, bypass diode, connection, soiling) and plan its correction",
        )
    } else {
        (
            "CoA 3",
            "safety-relevant thermal abnormality: isolate the module or string and repair or replace it before \
             returning it to service",
        )
    }
}

/// Grades a PV module finding by IEC TS 62446-3 ([`pv_class`]); `None` ΔT (relative analysis) is not graded.
pub fn assess_pv(delta_ref_c: Option<f64>, reference_label: &str) -> Severity {
    let Some(d) = delta_ref_c else {
        return ungraded(
            "not assessed: no temperatures (relative analysis), so IEC TS 62446-3 classes cannot be applied",
            "re-take the image with a radiometric camera (or export radiometric data) to classify it",
        );
    };
    let (class, action) = pv_class(d);
    Severity {
        standard: IEC_62446_3.into(),
        band: None,
        class: Some(class.into()),
        criterion: format!(
            "ΔT {d:.1} °C vs reference ({reference_label}) → {class} (IEC TS 62446-3 classes of abnormality; \
             screening thresholds of this tool: < {PV_COA2_FROM_C} K CoA 1, {PV_COA2_FROM_C}–{PV_COA3_ABOVE_C} K \
             CoA 2, > {PV_COA3_ABOVE_C} K CoA 3; valid at ≥ 600 W/m² stable irradiance)"
        ),
        action: action.into(),
        assessed: true,
    }
}

/// A finding that is not graded: `criterion` says why, `action` what to do first.
pub fn ungraded(criterion: impl Into<String>, action: impl Into<String>) -> Severity {
    Severity {
        standard: "none".into(),
        band: None,
        class: None,
        criterion: criterion.into(),
        action: action.into(),
        assessed: false,
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
    /// The criteria applied: [`NETA`], [`IEC_62446_3`] or `none`.
    pub standard: String,
    /// The NETA band (the worse of the criteria that applied); `null` unless NETA criteria were applied.
    pub band: Option<Band>,
    /// The IEC TS 62446-3 class of abnormality (`CoA 1`–`CoA 3`); `null` unless PV criteria were applied.
    pub class: Option<String>,
    /// Which criterion decided the band or class, with the figures (or why none could be applied).
    pub criterion: String,
    /// The suggested action (for an ungraded finding: what to confirm first).
    pub action: String,
    /// False when no criterion could be applied (relative analysis, unknown equipment, equipment without
    /// published ΔT criteria): `band` and `class` are then `null`.
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
            return ungraded(
                "not assessed: no temperatures (relative analysis), so NETA ΔT bands cannot be applied",
                "re-take the image with a radiometric camera (or export radiometric data) to grade it",
            );
        }
        (Some((b, d)), None) => (b, ref_text(b, d)),
        (None, Some((b, d))) => (b, amb_text(b, d)),
        (Some((rb, rd)), Some((ab, ad))) => {
            let decided = if ab > rb { amb_text(ab, ad) } else { ref_text(rb, rd) };
            let other = if ab > rb { ref_text(rb, rd) } else { amb_text(ab, ad) };
            (rb.max(ab), format!("{decided}; also {other}"))
        }
    };
    Severity {
        standard: NETA.into(),
        band: Some(band),
        class: None,
        criterion,
        action: band.action().into(),
        assessed: true,
    }
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
        assert_eq!((s.band, s.action.as_str()), (Some(Band::Possible), ACTION_POSSIBLE));
        let s = assess(Some(2.0), "median", Some(30.0));
        assert_eq!(s.band, Some(Band::Monitor));
        assert!(s.criterion.starts_with("ΔT 30.0 °C vs ambient"), "{}", s.criterion);
        let s = assess(Some(20.0), "median", Some(30.0));
        assert_eq!((s.band, s.action.as_str()), (Some(Band::Major), ACTION_MAJOR));
        assert_eq!(s.standard, NETA);
        let s = assess(None, "", None);
        assert!(!s.assessed && s.band.is_none());
        assert_eq!(serde_json::to_value(Band::Major).unwrap(), "major");
        assert!(margin_to_edge(15.2, false) < 0.3);
    }

    #[test]
    fn pv_classes_follow_the_screening_thresholds() {
        assert_eq!(pv_class(1.0).0, "CoA 1");
        assert_eq!(pv_class(3.0).0, "CoA 2");
        assert_eq!(pv_class(20.0).0, "CoA 2");
        assert_eq!(pv_class(25.0).0, "CoA 3");
        let s = assess_pv(Some(12.0), "frame median");
        assert_eq!((s.standard.as_str(), s.class.as_deref(), s.band), (IEC_62446_3, Some("CoA 2"), None));
        assert!(!assess_pv(None, "").assessed);
    }
}
