//! The transport-free core of `analyze_thermal_image`: bytes and options in, a [`VisionReport`] out.
//!
//! Steps, in order:
//!
//! 1. **Decode** with `switchboard-thermal` (FLIR → absolute °C; DJI R-JPEG, plain JPEG/PNG → relative 0–1,
//!    labelled). Caller overrides (emissivity, distance, reflected temperature) replace the stored scene values;
//!    `ambient_c`, when given, is also used as the atmospheric temperature of the transmission model (it is the
//!    same air).
//! 2. **Reference**: the mean of `reference_region` (a similar component under similar load: NETA's preferred
//!    comparison) or else the frame median; `reference_method: "ambient"` compares against `ambient_c` instead.
//! 3. **Hotspots**: connected regions above *reference + half the peak rise* (at least 1 °C, the first NETA
//!    step), so each hotspot is the core of a warm area rather than everything warmer than the background.
//!    None are reported when the peak rises less than 1 °C above the reference.
//! 4. **Equipment** ([`super::equipment`]): the operator's, else board when a component map is given, else the one
//!    the context names, else `unknown` with the reason.
//!    **Severity** from [`super::severity`] by the criteria for that equipment: NETA bands (ΔT of the hottest
//!    pixel vs the reference, and vs ambient only when the caller gave `ambient_c`) for electrical equipment,
//!    IEC TS 62446-3 classes for PV modules, no band otherwise. The temperatures do not depend on it.
//! 5. **Suspected component** from the `component_map` ([`super::components`]): the part nearest the hottest
//!    pixel of the top hotspot.
//! 6. **Failure-mode hypothesis** ([`hypothesise`]): documented heuristics over the hotspot's shape, the kind of
//!    equipment and the suspected part.
//! 7. **Confidence** and **notes** (emissivity, relative analysis, load, reference, limits).

use serde::{Deserialize, Serialize};
use switchboard_thermal::{
    DecodeOptions, HotspotConfig, Overrides, Radiometry, Rect, Reference, RelativeMethod, SourceFormat,
    ThermalImage, decode,
};

use super::components;
pub use super::equipment::{ComponentOut, Equipment, EquipmentSource};
use super::severity::{self, Band, Severity};
use crate::error::{Error, Result};

mod hypothesis;
mod report;

pub use self::hypothesis::{Evidence, LARGE_WARM_FRACTION, LOCALISED_CORE_FRACTION, hypothesise};
pub use self::report::{
    BoxPx, ConditionsUsed, FailureMode, HotspotOut, ImageInfo, PointPx, ReferenceOut, RelativeInfo,
    SuspectedComponent, VisionReport, render_text,
};

/// Default number of hotspots reported.
pub const DEFAULT_MAX_HOTSPOTS: usize = 8;

/// Rise above the reference (°C) below which nothing counts as a finding: the first step of NETA Table 100.18.
pub const MIN_RISE_C: f64 = 1.0;

/// A component this much colder than the similar-component reference (°C) is a cold exception.
pub const COLD_EXCEPTION_C: f64 = 4.0;

/// How the reference temperature was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReferenceMethod {
    /// The median of the whole frame (background included).
    Median,
    /// The mean of the caller's `reference_region` (a similar component under similar load).
    Region,
    /// The caller's `ambient_c`.
    Ambient,
}

impl ReferenceMethod {
    /// The lower-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ReferenceMethod::Median => "median",
            ReferenceMethod::Region => "region",
            ReferenceMethod::Ambient => "ambient",
        }
    }
}

/// Options of [`analyze`] (the tool arguments other than the image).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnalyzeOptions {
    /// Emissivity override, (0, 1].
    pub emissivity: Option<f64>,
    /// Reflected apparent temperature override, °C.
    pub reflected_temp_c: Option<f64>,
    /// Object distance override, m.
    pub distance_m: Option<f64>,
    /// Ambient air temperature, °C; enables the NETA ambient criterion.
    pub ambient_c: Option<f64>,
    /// Reference region (a similar component) in frame pixels.
    pub reference_region: Option<Rect>,
    /// Explicit reference method; default: `region` when a region is given, else `median`.
    pub reference_method: Option<ReferenceMethod>,
    /// Parsed component map.
    pub components: Option<Vec<components::Component>>,
    /// Equipment kind from the operator; default: `board` when a component map is given, else what the context
    /// names, else `unknown`.
    pub equipment: Option<Equipment>,
    /// The operator's context text (load, equipment, component), used to identify the equipment and component.
    pub context: Option<String>,
    /// Hotspots to report (0 means [`DEFAULT_MAX_HOTSPOTS`]).
    pub max_hotspots: usize,
}

fn round(v: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (v * f).round() / f
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

/// Mean of the 3×3 neighbourhood around `(x, y)` (clipped to the frame).
fn spot_mean(image: &ThermalImage, x: f64, y: f64) -> Option<f64> {
    let (w, h) = (image.frame.width, image.frame.height);
    if x < 0.0 || y < 0.0 || x >= w as f64 || y >= h as f64 {
        return None;
    }
    let (cx, cy) = (x.round() as usize, y.round() as usize);
    let rect = Rect {
        x: cx.saturating_sub(1),
        y: cy.saturating_sub(1),
        width: (cx + 2).min(w) - cx.saturating_sub(1),
        height: (cy + 2).min(h) - cy.saturating_sub(1),
    };
    image.region_mean(rect).ok()
}

fn validate(opts: &AnalyzeOptions) -> Result<()> {
    let finite = |field: &'static str, v: Option<f64>| match v {
        Some(v) if !v.is_finite() => {
            Err(Error::InvalidArgument { field, message: format!("{v} is not finite") })
        }
        _ => Ok(()),
    };
    finite("ambient_c", opts.ambient_c)?;
    if let Some(a) = opts.ambient_c
        && !(-60.0..=200.0).contains(&a)
    {
        return Err(Error::InvalidArgument {
            field: "ambient_c",
            message: format!("{a} °C is outside -60…200 °C"),
        });
    }
    if opts.reference_method == Some(ReferenceMethod::Ambient) && opts.ambient_c.is_none() {
        return Err(Error::InvalidArgument {
            field: "reference_method",
            message: "`ambient` needs `ambient_c`".into(),
        });
    }
    if opts.reference_method == Some(ReferenceMethod::Region) && opts.reference_region.is_none() {
        return Err(Error::InvalidArgument {
            field: "reference_method",
            message: "`region` needs `reference_region`".into(),
        });
    }
    Ok(())
}

/// Analyses one thermal image.
///
/// # Errors
/// [`Error::Thermal`] when the bytes are not a readable image (corrupt, truncated FLIR segment, unknown format) or
/// the reference region lies outside the frame; [`Error::InvalidArgument`] for out-of-range options.
pub fn analyze(bytes: &[u8], opts: &AnalyzeOptions) -> Result<VisionReport> {
    validate(opts)?;
    let overrides = Overrides {
        emissivity: opts.emissivity,
        distance_m: opts.distance_m,
        reflected_c: opts.reflected_temp_c,
        atmospheric_c: opts.ambient_c,
        relative_humidity: None,
    };
    let image =
        decode(bytes, &DecodeOptions { overrides, ..DecodeOptions::default() }).map_err(|e| match e {
            switchboard_thermal::Error::UnknownFormat { .. } => Error::UnknownImageFormat,
            other => Error::Thermal(other),
        })?;
    let absolute = image.is_absolute();
    let stats = image.stats;
    let (equipment, equipment_source, equipment_reason) =
        super::equipment::identify(opts.equipment, opts.components.is_some(), opts.context.as_deref());
    let mut notes = Vec::new();
    if equipment == Equipment::Unknown {
        notes.push(format!(
            "equipment {equipment_reason}; ΔT figures and the hotspot are reported without a severity band"
        ));
    }

    // Reference.
    let method = opts.reference_method.unwrap_or(if opts.reference_region.is_some() {
        ReferenceMethod::Region
    } else {
        ReferenceMethod::Median
    });
    let (reference_value, reference_label) = match method {
        ReferenceMethod::Region => {
            let rect = opts
                .reference_region
                .ok_or(Error::InvalidArgument { field: "reference_region", message: "missing".into() })?;
            let v = image.region_mean(rect)?;
            let label = if absolute {
                format!(
                    "mean of reference region {}×{} at ({}, {}) = {v:.1} °C",
                    rect.width, rect.height, rect.x, rect.y
                )
            } else {
                format!("mean of reference region {}×{} at ({}, {})", rect.width, rect.height, rect.x, rect.y)
            };
            (v, label)
        }
        ReferenceMethod::Median => {
            let label = if absolute {
                format!("frame median {:.1} °C", stats.median)
            } else {
                "frame median".to_owned()
            };
            (stats.median, label)
        }
        ReferenceMethod::Ambient => {
            let a = opts.ambient_c.unwrap_or(stats.median);
            if !absolute {
                return Err(Error::InvalidArgument {
                    field: "reference_method",
                    message: "`ambient` needs temperatures, but this image allows only a relative analysis"
                        .into(),
                });
            }
            (a, format!("ambient air {a:.1} °C"))
        }
    };
    if method == ReferenceMethod::Median {
        notes.push(
            "the reference is the frame median (background included); give `reference_region` on a similar \
             component under similar load for NETA's similar-component comparison"
                .to_owned(),
        );
    }

    // Hotspots: the core above half the peak rise (≥ 1 °C, or ≥ 0.05 of the relative scale).
    let rise = stats.max - reference_value;
    let floor = if absolute { MIN_RISE_C } else { 0.05 };
    let max_regions = if opts.max_hotspots == 0 { DEFAULT_MAX_HOTSPOTS } else { opts.max_hotspots };
    let detect = |delta: f64| {
        image.hotspots(&HotspotConfig {
            reference: Reference::Value(reference_value),
            delta,
            min_area_px: 1,
            eight_connected: true,
            max_regions,
        })
    };
    let (core, warm) = if rise >= floor {
        let core = detect(floor.max(0.5 * rise))?.hotspots;
        let warm = detect(floor.max(0.2 * rise))?.hotspots;
        (core, warm)
    } else {
        (Vec::new(), Vec::new())
    };
    let hotspots: Vec<HotspotOut> = core
        .iter()
        .map(|h| HotspotOut {
            bbox: h.bbox.into(),
            centroid: PointPx { x: round(h.centroid.0, 2), y: round(h.centroid.1, 2) },
            hottest: PointPx { x: h.max_xy.0 as f64, y: h.max_xy.1 as f64 },
            max_c: absolute.then(|| round(h.max, 2)),
            mean_c: absolute.then(|| round(h.mean, 2)),
            area_px: h.area_px,
            delta_ref_c: absolute.then(|| round(h.delta_max, 2)),
            max_relative: (!absolute).then(|| round(h.max, 4)),
        })
        .collect();

    // Severity.
    let delta_ref = absolute.then_some(rise);
    let delta_amb = if absolute { opts.ambient_c.map(|a| stats.max - a) } else { None };
    let delta_ref_for_band = if method == ReferenceMethod::Ambient { None } else { delta_ref };
    let severity = match equipment {
        e if e.uses_neta() => severity::assess(
            delta_ref_for_band.map(|d| round(d, 2)),
            &reference_label,
            delta_amb.map(|d| round(d, 2)),
        ),
        Equipment::PvModule => severity::assess_pv(delta_ref.map(|d| round(d, 2)), &reference_label),
        Equipment::Unknown => severity::ungraded(
            format!(
                "not graded: the equipment is unknown ({equipment_reason}), and severity criteria depend on it \
                 (NETA MTS Table 100.18 for electrical equipment, IEC TS 62446-3 for PV modules)"
            ),
            "confirm what the image shows (the equipment and the component under the hotspot) and the operating \
             conditions, then analyse again with `equipment`",
        ),
        other => severity::ungraded(
            format!(
                "not graded: no published ΔT severity criteria for {} (ISO 18434-1 for machines and ISO 6781 / EN \
                 13187 for buildings give methods, not ΔT bands)",
                other.describe()
            ),
            "compare with a baseline of the same equipment or with similar equipment under similar conditions, \
             and confirm the cause before acting",
        ),
    };
    if absolute && opts.ambient_c.is_none() && equipment.uses_neta() {
        notes.push(
            "ΔT vs ambient not assessed: no `ambient_c` given (the ambient criterion is applied only when the air \
             temperature is supplied; a warm object is not a defect just for being above the air)"
                .to_owned(),
        );
    }

    // Components.
    let mut suspected = None;
    let mut cold: Option<(String, f64)> = None;
    if let Some(comps) = &opts.components {
        let (w, h) = (image.frame.width as f64, image.frame.height as f64);
        let outside = comps.iter().filter(|c| c.x >= w || c.y >= h).count();
        if outside > 0 {
            notes.push(format!(
                "{outside} component(s) of the component_map lie outside the {}×{} frame: coordinates must be \
                 thermal-frame pixels, not millimetres or display-image pixels",
                image.frame.width, image.frame.height
            ));
        }
        if let Some(top) = core.first() {
            let (hx, hy) = (top.max_xy.0 as f64, top.max_xy.1 as f64);
            if let Some((c, d)) = components::nearest(comps, hx, hy) {
                suspected = Some(SuspectedComponent {
                    designator: c.designator.clone(),
                    distance_px: round(d, 2),
                    class: components::classify(&c.designator),
                    value: c.value.clone(),
                    package: c.package.clone(),
                    temperature_c: if absolute {
                        spot_mean(&image, c.x, c.y).map(|t| round(t, 2))
                    } else {
                        None
                    },
                });
            }
        } else if absolute && method == ReferenceMethod::Region {
            // Cold exception: a part clearly colder than its loaded peer (failed, open or unpowered).
            cold = comps
                .iter()
                .filter_map(|c| spot_mean(&image, c.x, c.y).map(|t| (c, t)))
                .filter(|(_, t)| reference_value - t >= COLD_EXCEPTION_C)
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(c, t)| {
                    suspected = Some(SuspectedComponent {
                        designator: c.designator.clone(),
                        distance_px: 0.0,
                        class: components::classify(&c.designator),
                        value: c.value.clone(),
                        package: c.package.clone(),
                        temperature_c: Some(round(t, 2)),
                    });
                    (c.designator.clone(), reference_value - t)
                });
        }
    }

    let mut failure_mode = hypothesise(&Evidence {
        absolute,
        equipment,
        rise,
        floor,
        max_c: stats.max,
        core: core.first(),
        warm: warm.first(),
        frame_px: image.frame.width * image.frame.height,
        suspected: suspected.as_ref(),
        cold: cold.as_ref(),
    });
    let component = super::equipment::component_for(
        equipment,
        &failure_mode.kind,
        suspected.as_ref().map(|s| s.class),
        opts.context.as_deref(),
    );
    if component.source == "context" && failure_mode.kind != "none" {
        failure_mode.evidence.push(format!("the context names the component: {}", component.kind));
    }

    // Notes.
    let conditions = image.model().map(|m| {
        let c = m.conditions;
        let mut overridden = Vec::new();
        for (name, given) in [
            ("emissivity", opts.emissivity.is_some()),
            ("distance_m", opts.distance_m.is_some()),
            ("reflected_c", opts.reflected_temp_c.is_some()),
            ("atmospheric_c", opts.ambient_c.is_some()),
        ] {
            if given {
                overridden.push(name.to_owned());
            }
        }
        ConditionsUsed {
            emissivity: round(c.emissivity, 3),
            distance_m: round(c.distance_m, 2),
            reflected_c: round(c.reflected_c, 2),
            atmospheric_c: round(c.atmospheric_c, 2),
            relative_humidity: round(c.relative_humidity, 3),
            overridden,
        }
    });
    if let Some(c) = &conditions {
        let source = if opts.emissivity.is_some() { "given" } else { "stored in the file" };
        notes.push(format!(
            "emissivity {:.2} ({source}): bare or shiny metal (bare ≈ 0.15, polished copper 0.02–0.03) reads far \
             too cold at this setting, so a hot spot on a bare lug, busbar or pad may be understated; measure on \
             insulation, tape, paint or oxidised metal (0.6–0.78), or pass `emissivity`",
            c.emissivity
        ));
        if equipment == Equipment::Board {
            notes.push(
                "boards: use emissivity 0.9 for solder mask and plastic packages; the camera sees the package \
                 surface, so the junction is hotter (TJ = TA + PD·θJA; typical limit 125 °C, absolute maximum \
                 150 °C)"
                    .to_owned(),
            );
        }
    }
    let relative = match &image.radiometry {
        Radiometry::Relative { method, palette, reason, .. } => {
            let method_name = match method {
                RelativeMethod::RawCounts => "raw-counts",
                RelativeMethod::PaletteInversion => "palette-inversion",
            };
            let how = match method {
                RelativeMethod::RawCounts => "sensor counts rescaled between the coldest and hottest pixel",
                RelativeMethod::PaletteInversion => {
                    "false colours mapped back onto a palette (approximate, saturates at the colour-bar ends)"
                }
            };
            notes.push(format!(
                "relative analysis: values are 0–1 positions ({how}), not temperatures ({reason}); hotspot \
                 locations are meaningful, °C figures and NETA bands are not"
            ));
            Some(RelativeInfo {
                method: method_name.to_owned(),
                palette: palette.clone(),
                label: format!("relative (0–1, {method_name}): no temperatures"),
                reason: reason.clone(),
            })
        }
        Radiometry::Absolute { .. } => None,
    };
    notes.push(
        "ΔT depends on load: NFPA 70B asks for surveys at ≥ 40 % of normal load with the load recorded (NETA: \
         maximum possible load); the rise scales roughly with (I/I_rated)^1.6–2, so confirm under known load"
            .to_owned(),
    );
    if absolute && matches!(equipment, Equipment::Panel | Equipment::Transformer) && stats.max > 60.0 {
        notes.push(format!(
            "hottest point {:.1} °C exceeds the 60 °C termination rating of circuits ≤ 100 A (75 °C above 100 A; \
             NEC 110.14(C))",
            stats.max
        ));
    }
    if absolute && equipment == Equipment::Board && stats.max > 110.0 {
        notes.push(format!(
            "hottest point {:.1} °C is within 20 °C of FR-4's glass transition (Tg 130–140 °C)",
            stats.max
        ));
    }

    let confidence =
        confidence(&image, opts, method, &severity, delta_ref_for_band, delta_amb, suspected.as_ref());

    Ok(VisionReport {
        radiometric: absolute,
        analysis: if absolute { "absolute" } else { "relative" }.to_owned(),
        relative,
        image: ImageInfo {
            width: image.frame.width,
            height: image.frame.height,
            format: format_name(image.format).to_owned(),
            camera: image
                .camera
                .as_ref()
                .map(|c| c.camera_model.trim().to_owned())
                .filter(|m| !m.is_empty())
                .or_else(|| image.dji.as_ref().map(|_| "DJI R-JPEG camera".to_owned())),
        },
        equipment,
        equipment_source,
        equipment_reason,
        component,
        conditions,
        min_c: absolute.then(|| round(stats.min, 2)),
        max_c: absolute.then(|| round(stats.max, 2)),
        mean_c: absolute.then(|| round(stats.mean, 2)),
        hottest: PointPx { x: stats.hottest_xy.0 as f64, y: stats.hottest_xy.1 as f64 },
        hotspots,
        reference: ReferenceOut {
            method,
            temperature_c: absolute.then(|| round(reference_value, 2)),
            region: if method == ReferenceMethod::Region {
                opts.reference_region.map(BoxPx::from)
            } else {
                None
            },
            relative_value: (!absolute).then(|| round(reference_value, 4)),
        },
        delta_t_ref_c: delta_ref.map(|d| round(d, 2)),
        delta_t_ambient_c: delta_amb.map(|d| round(d, 2)),
        severity,
        suspected_component: suspected,
        failure_mode,
        confidence,
        notes,
    })
}

fn confidence(
    image: &ThermalImage,
    opts: &AnalyzeOptions,
    method: ReferenceMethod,
    severity: &Severity,
    delta_ref: Option<f64>,
    delta_amb: Option<f64>,
    suspected: Option<&SuspectedComponent>,
) -> f64 {
    let mut c = match &image.radiometry {
        Radiometry::Absolute { .. } => 0.85,
        Radiometry::Relative { method: RelativeMethod::RawCounts, .. } => 0.45,
        Radiometry::Relative { .. } => 0.3,
    };
    if image.is_absolute() && opts.emissivity.is_none() {
        c *= 0.9;
    }
    if method == ReferenceMethod::Median {
        c *= 0.9;
    }
    // A ΔT close to a band edge could flip the band with a small error.
    if severity.assessed {
        let margin = match (delta_ref, delta_amb) {
            (Some(r), Some(a)) if severity::band_vs_ambient(a) > severity::band_vs_reference(r) => {
                severity::margin_to_edge(a, true)
            }
            (Some(r), _) => severity::margin_to_edge(r, false),
            (None, Some(a)) => severity::margin_to_edge(a, true),
            (None, None) => f64::INFINITY,
        };
        c *= 0.7 + 0.3 * (margin / 2.0).min(1.0);
    }
    if let Some(s) = suspected {
        let diag = (image.frame.width as f64).hypot(image.frame.height as f64);
        if s.distance_px > 0.05 * diag {
            c *= 0.8;
        }
    }
    if matches!(severity.band, Some(Band::None)) || severity.class.as_deref() == Some("CoA 1") {
        // "Nothing found" is as trustworthy as the measurement itself.
        c = c.max(0.5);
    }
    round(c.clamp(0.05, 0.99), 2)
}
