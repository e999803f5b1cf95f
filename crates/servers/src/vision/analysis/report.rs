//! The report `analyze_thermal_image` returns: [`VisionReport`] and its parts, as they appear on the wire
//! (`structuredContent`), and [`render_text`], the plain-text rendering placed in `content`.

use serde::{Deserialize, Serialize};
use switchboard_thermal::Rect;

use super::{ComponentOut, Equipment, EquipmentSource, ReferenceMethod};
use crate::vision::components::ComponentClass;
use crate::vision::severity::Severity;

/// A rectangle in frame pixels, as it appears on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoxPx {
    /// Left column.
    pub x: usize,
    /// Top row.
    pub y: usize,
    /// Width.
    pub width: usize,
    /// Height.
    pub height: usize,
}

impl From<Rect> for BoxPx {
    fn from(r: Rect) -> Self {
        Self { x: r.x, y: r.y, width: r.width, height: r.height }
    }
}

impl BoxPx {
    /// Whether pixel `(x, y)` lies inside.
    pub fn contains(&self, x: usize, y: usize) -> bool {
        x >= self.x && x < self.x + self.width && y >= self.y && y < self.y + self.height
    }
}

/// A point in frame pixels (fractional for centroids).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PointPx {
    /// Column.
    pub x: f64,
    /// Row.
    pub y: f64,
}

/// How a relative analysis was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelativeInfo {
    /// `raw-counts` or `palette-inversion`.
    pub method: String,
    /// Palette inverted, for palette inversion.
    pub palette: Option<String>,
    /// One-line label to show next to any figure from this analysis.
    pub label: String,
    /// Why only a relative analysis is possible.
    pub reason: String,
}

/// The image that was analysed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageInfo {
    /// Frame width in pixels (the grid of every coordinate in the report).
    pub width: usize,
    /// Frame height in pixels.
    pub height: usize,
    /// `flir-jpeg`, `fff`, `flir-seq`, `dji-rjpeg`, `jpeg` or `png`.
    pub format: String,
    /// Camera model, when the file names it.
    pub camera: Option<String>,
}

/// Scene conditions used for the temperature conversion (absolute analyses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionsUsed {
    /// Emissivity.
    pub emissivity: f64,
    /// Object distance, m.
    pub distance_m: f64,
    /// Reflected apparent temperature, °C.
    pub reflected_c: f64,
    /// Atmospheric temperature, °C.
    pub atmospheric_c: f64,
    /// Relative humidity, 0–1.
    pub relative_humidity: f64,
    /// Which of these the caller overrode (the rest come from the file).
    pub overridden: Vec<String>,
}

/// One hot region.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotspotOut {
    /// Bounding box.
    pub bbox: BoxPx,
    /// Centroid.
    pub centroid: PointPx,
    /// Hottest pixel of the region.
    pub hottest: PointPx,
    /// Largest temperature, °C (`null` for relative analyses).
    pub max_c: Option<f64>,
    /// Mean temperature, °C (`null` for relative analyses).
    pub mean_c: Option<f64>,
    /// Pixels in the region.
    pub area_px: usize,
    /// `max_c` minus the reference, °C (`null` for relative analyses).
    pub delta_ref_c: Option<f64>,
    /// Largest relative value 0–1 (relative analyses only).
    pub max_relative: Option<f64>,
}

/// The reference the ΔT is measured against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceOut {
    /// How it was chosen.
    pub method: ReferenceMethod,
    /// Its temperature, °C (`null` for relative analyses).
    pub temperature_c: Option<f64>,
    /// The region, for `method: region`.
    pub region: Option<BoxPx>,
    /// Its relative value 0–1 (relative analyses only).
    pub relative_value: Option<f64>,
}

/// The component suspected of causing the top hotspot (or a cold exception).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuspectedComponent {
    /// Reference designator.
    pub designator: String,
    /// Distance from the component centre to the hottest (or coldest) point, pixels.
    pub distance_px: f64,
    /// Kind of part, from the designator prefix.
    pub class: ComponentClass,
    /// Value column of the component map, when given.
    pub value: Option<String>,
    /// Package column, when given.
    pub package: Option<String>,
    /// Temperature at the component centre (3×3 mean), °C, for absolute analyses.
    pub temperature_c: Option<f64>,
}

/// The failure-mode hypothesis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureMode {
    /// `none`, `loose-connection`, `overload-imbalance`, `failed-cold-component`, `capacitor-overheating`,
    /// `semiconductor-overheating`, `component-overheating`, `pv-hotspot`, `pv-substring-heated`,
    /// `bearing-overheating`, `motor-overheating`, `envelope-anomaly` or `undetermined` (unknown equipment).
    pub kind: String,
    /// The hypothesis in words, with what to check.
    pub hypothesis: String,
    /// The measurements it rests on.
    pub evidence: Vec<String>,
}

/// The structured output of `analyze_thermal_image`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VisionReport {
    /// True when the values are temperatures from the camera's radiometric calibration.
    pub radiometric: bool,
    /// `absolute` or `relative`.
    pub analysis: String,
    /// How the relative analysis was made (relative analyses only).
    pub relative: Option<RelativeInfo>,
    /// The analysed frame.
    pub image: ImageInfo,
    /// Equipment kind (`unknown` when nothing identified it).
    pub equipment: Equipment,
    /// Which input decided `equipment`: `operator`, `component-map`, `context` or `none`.
    pub equipment_source: EquipmentSource,
    /// Why `equipment` is what it is, in words (for `unknown`: why nothing identified it).
    pub equipment_reason: String,
    /// The component the finding is about (kind and group, the diagnosed component family), and what decided it.
    pub component: ComponentOut,
    /// Scene conditions used (absolute analyses).
    pub conditions: Option<ConditionsUsed>,
    /// Coldest temperature, °C (`null` for relative analyses).
    pub min_c: Option<f64>,
    /// Hottest temperature, °C (`null` for relative analyses).
    pub max_c: Option<f64>,
    /// Mean temperature, °C (`null` for relative analyses).
    pub mean_c: Option<f64>,
    /// The hottest pixel of the frame.
    pub hottest: PointPx,
    /// Hot regions, hottest first.
    pub hotspots: Vec<HotspotOut>,
    /// The reference.
    pub reference: ReferenceOut,
    /// Hottest temperature minus the reference, °C (`null` for relative analyses).
    pub delta_t_ref_c: Option<f64>,
    /// Hottest temperature minus `ambient_c`; `null` when no ambient was given.
    pub delta_t_ambient_c: Option<f64>,
    /// NETA grading.
    pub severity: Severity,
    /// The part under the top hotspot, when a component map was given.
    pub suspected_component: Option<SuspectedComponent>,
    /// Probable cause.
    pub failure_mode: FailureMode,
    /// Confidence in the grading and hypothesis, 0–1.
    pub confidence: f64,
    /// Caveats an operator must read with the figures.
    pub notes: Vec<String>,
}

/// The plain-text rendering placed in `content`.
pub fn render_text(r: &VisionReport) -> String {
    let mut t = String::new();
    let cam = r.image.camera.as_deref().unwrap_or("unknown camera");
    t.push_str(&format!(
        "{} {}×{} ({cam}), {} analysis",
        r.image.format, r.image.width, r.image.height, r.analysis
    ));
    if let Some(rel) = &r.relative {
        t.push_str(&format!(" — {}", rel.label));
    }
    t.push('\n');
    if let (Some(min), Some(max), Some(mean)) = (r.min_c, r.max_c, r.mean_c) {
        t.push_str(&format!(
            "min {min:.1} °C, max {max:.1} °C at ({}, {}), mean {mean:.1} °C\n",
            r.hottest.x, r.hottest.y
        ));
    }
    if let (Some(rt), Some(d)) = (r.reference.temperature_c, r.delta_t_ref_c) {
        t.push_str(&format!("reference ({}) {rt:.1} °C, ΔT {d:.1} °C\n", r.reference.method.as_str()));
    }
    if let Some(d) = r.delta_t_ambient_c {
        t.push_str(&format!("ΔT vs ambient {d:.1} °C\n"));
    }
    t.push_str(&format!("equipment: {} ({})\n", r.equipment.as_str(), r.equipment_reason));
    let grade = match (&r.severity.band, &r.severity.class) {
        (Some(b), _) => b.as_str().to_owned(),
        (None, Some(c)) => c.clone(),
        (None, None) => "not graded".to_owned(),
    };
    t.push_str(&format!("severity: {grade} — {} ({})\n", r.severity.action, r.severity.criterion));
    for (i, h) in r.hotspots.iter().enumerate() {
        let value = match (h.max_c, h.max_relative) {
            (Some(m), _) => format!("max {m:.1} °C"),
            (None, Some(m)) => format!("max {m:.2} (relative)"),
            _ => String::new(),
        };
        t.push_str(&format!(
            "hotspot {}: {value}, {} px, box {}×{} at ({}, {})\n",
            i + 1,
            h.area_px,
            h.bbox.width,
            h.bbox.height,
            h.bbox.x,
            h.bbox.y
        ));
    }
    if let Some(s) = &r.suspected_component {
        t.push_str(&format!("suspected component: {} ({:.1} px away)\n", s.designator, s.distance_px));
    }
    t.push_str(&format!("failure mode: {} — {}\n", r.failure_mode.kind, r.failure_mode.hypothesis));
    t.push_str(&format!("confidence {:.2}\n", r.confidence));
    for n in &r.notes {
        t.push_str(&format!("note: {n}\n"));
    }
    t
}
