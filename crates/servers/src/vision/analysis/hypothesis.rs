//! The failure-mode hypothesis ([`hypothesise`]): documented heuristics over the top hotspot's shape, the
//! kind of equipment and the suspected part.

use super::Equipment;
use super::report::{FailureMode, SuspectedComponent};
use crate::vision::components::ComponentClass;

/// What [`hypothesise`] looks at.
#[derive(Debug)]
pub struct Evidence<'a> {
    /// Temperatures are absolute.
    pub absolute: bool,
    /// Equipment kind.
    pub equipment: Equipment,
    /// Peak rise over the reference (°C, or relative units).
    pub rise: f64,
    /// Smallest rise that counts.
    pub floor: f64,
    /// Hottest value.
    pub max_c: f64,
    /// The top hotspot at half the peak rise.
    pub core: Option<&'a switchboard_thermal::Hotspot>,
    /// The warm area around it (a fifth of the peak rise).
    pub warm: Option<&'a switchboard_thermal::Hotspot>,
    /// Pixels in the frame.
    pub frame_px: usize,
    /// The suspected component.
    pub suspected: Option<&'a SuspectedComponent>,
    /// A cold exception: designator and how much colder than the reference.
    pub cold: Option<&'a (String, f64)>,
}

/// A hotspot is *localised* when its half-rise core is under this fraction of the warm area around it.
pub const LOCALISED_CORE_FRACTION: f64 = 0.4;

/// A warm area covering more than this fraction of the frame is a whole component or conductor, not a joint.
pub const LARGE_WARM_FRACTION: f64 = 0.25;

/// The failure-mode heuristics (ASTM E1934: warm exceptions come from loose or deteriorated connections, shorts,
/// overloads, imbalance or faulty parts; cool exceptions from failed components):
///
/// 1. No rise ≥ 1 °C: `failed-cold-component` when a mapped part is ≥ 4 °C colder than the similar-component
///    reference, else `none`.
/// 2. Boards: the suspected part's class decides: capacitor → `capacitor-overheating` (electrolytic life halves
///    per 10 °C), semiconductor/regulator → `semiconductor-overheating` (junction limits), connector →
///    `loose-connection`; otherwise `component-overheating`.
/// 3. Panels: the *shape* decides. The core (above half the peak rise) is compared with the warm area (above a
///    fifth of it). A small core inside a larger warm area (core < 40 % of it, warm area < 25 % of the frame) is
///    heat produced at one point and conducted away: a high-resistance joint, i.e. a `loose-connection` at a lug,
///    terminal or conductor end. A core filling most of its warm area, or a warm area over a quarter of the frame,
///    is a body heated evenly: `overload-imbalance` (or an undersized conductor). Transformers likewise.
/// 4. PV modules, motors/bearings: the same shape test names `pv-hotspot` / `pv-substring-heated` and
///    `bearing-overheating` / `motor-overheating`; building envelopes `envelope-anomaly`.
/// 5. Other or unknown equipment: `undetermined`: a cause cannot be judged without knowing what the image shows.
pub fn hypothesise(e: &Evidence<'_>) -> FailureMode {
    let unit = if e.absolute { " °C" } else { " (relative)" };
    let mut evidence = vec![format!("peak rise {:.2}{unit} over the reference", e.rise)];
    if e.rise < e.floor {
        if let Some((designator, colder)) = e.cold {
            return FailureMode {
                kind: "failed-cold-component".into(),
                hypothesis: format!(
                    "{designator} is {colder:.1} °C colder than the reference component under similar load: a \
                     failed, open or unpowered part (ASTM E1934 cool exception); check its supply and continuity"
                ),
                evidence,
            };
        }
        return FailureMode {
            kind: "none".into(),
            hypothesis: "no thermal anomaly: nothing rises 1 °C or more above the reference".into(),
            evidence,
        };
    }
    let (Some(core), Some(warm)) = (e.core, e.warm) else {
        return FailureMode {
            kind: "undetermined".into(),
            hypothesis: "a rise was measured but no hot region could be isolated".into(),
            evidence,
        };
    };
    let concentration = core.area_px as f64 / warm.area_px.max(1) as f64;
    let warm_fraction = warm.area_px as f64 / e.frame_px.max(1) as f64;
    evidence.push(format!(
        "hot core {} px inside a warm area of {} px ({:.0} % of it; warm area {:.1} % of the frame)",
        core.area_px,
        warm.area_px,
        concentration * 100.0,
        warm_fraction * 100.0
    ));
    let localised = concentration < LOCALISED_CORE_FRACTION && warm_fraction < LARGE_WARM_FRACTION;
    if e.equipment == Equipment::Board {
        let (kind, hypothesis) = match e.suspected.map(|s| (s.class, s.designator.as_str())) {
            Some((ComponentClass::Capacitor, d)) => {
                let life = if e.absolute {
                    let factor = |rated: f64| 2f64.powf((rated - e.max_c) / 10.0);
                    format!(
                        " At {:.0} °C a 105 °C-rated electrolytic keeps {:.2}× its rated life and an 85 °C part \
                         {:.2}× (life doubles per 10 °C below rating).",
                        e.max_c,
                        factor(105.0),
                        factor(85.0)
                    )
                } else {
                    String::new()
                };
                (
                    "capacitor-overheating",
                    format!(
                        "{d} (capacitor) is the hot spot: high ripple current, rising ESR (ageing, dried \
                         electrolyte) or heat from a neighbour.{life} Check ripple, ESR and the temperature rating."
                    ),
                )
            }
            Some((ComponentClass::Semiconductor, d)) => (
                "semiconductor-overheating",
                format!(
                    "{d} (semiconductor/regulator) is the hot spot: excess dissipation (load, input-output \
                     difference of a linear regulator, switching losses) or poor heat-sinking (thermal pad, \
                     heatsink, airflow). The junction is hotter than the package surface; typical limit 125 °C, \
                     absolute maximum 150 °C."
                ),
            ),
            Some((ComponentClass::Connector, d)) => (
                "loose-connection",
                format!("{d} (connector/terminal) is the hot spot: a loose, worn or corroded contact (high resistance)."),
            ),
            Some((class, d)) => (
                "component-overheating",
                format!(
                    "{d} ({}) is the hot spot: dissipation beyond its rating or derating, or a fault downstream \
                     drawing excess current.",
                    class.as_str()
                ),
            ),
            None => (
                "component-overheating",
                "a board component is overheating (capacitor or semiconductor most likely); give a component_map \
                 to name it"
                    .to_owned(),
            ),
        };
        return FailureMode { kind: kind.into(), hypothesis, evidence };
    }
    match e.equipment {
        Equipment::Panel | Equipment::Transformer => {}
        Equipment::PvModule => {
            return if localised {
                FailureMode {
                    kind: "pv-hotspot".into(),
                    hypothesis: "a local hot spot on the module: a hot cell (crack, shunt, partial shading or \
                                 soiling) or a hot junction box or connector; check the module surface, the cell \
                                 under the spot and the bypass diodes"
                        .into(),
                    evidence,
                }
            } else {
                FailureMode {
                    kind: "pv-substring-heated".into(),
                    hypothesis: "an extended warm area: a heated substring (conducting bypass diode) or a whole \
                                 module warmer than its neighbours (open circuit, not at its maximum power point); \
                                 measure the string and the module, check the bypass diodes"
                        .into(),
                    evidence,
                }
            };
        }
        Equipment::MotorBearing => {
            return if localised {
                FailureMode {
                    kind: "bearing-overheating".into(),
                    hypothesis: "heat concentrated at one point of the machine, typical of a bearing (lubrication, \
                                 wear, misalignment or overload of the bearing) or a coupling; compare with the \
                                 other bearing and a baseline"
                        .into(),
                    evidence,
                }
            } else {
                FailureMode {
                    kind: "motor-overheating".into(),
                    hypothesis:
                        "the machine body is evenly warm: overload, blocked cooling, voltage unbalance or a \
                                 winding fault; measure the currents and check the cooling"
                            .into(),
                    evidence,
                }
            };
        }
        Equipment::BuildingEnvelope => {
            return FailureMode {
                kind: "envelope-anomaly".into(),
                hypothesis: "a thermal anomaly of the building envelope (missing insulation, thermal bridge, air \
                             leakage or moisture) or a heat source behind it; interpret with the inside-outside \
                             temperature difference and the construction"
                    .into(),
                evidence,
            };
        }
        Equipment::Board | Equipment::Other | Equipment::Unknown => {
            return FailureMode {
                kind: "undetermined".into(),
                hypothesis:
                    "a hot spot was measured, but its cause cannot be judged without knowing what the \
                             equipment and the component are; confirm them first"
                        .into(),
                evidence,
            };
        }
    }
    if localised {
        FailureMode {
            kind: "loose-connection".into(),
            hypothesis: "loose or deteriorated connection or termination: the heat is concentrated in a small spot \
                         with a steep gradient, typical of a high-resistance joint at a lug, terminal, bolted joint or \
                         conductor end; check torque, corrosion and conductor damage"
                .into(),
            evidence,
        }
    } else {
        FailureMode {
            kind: "overload-imbalance".into(),
            hypothesis: "overload or phase imbalance: a whole conductor or component is evenly warm rather than hot \
                         at one joint; measure the phase currents, compare with the rating and the other phases, and \
                         check for an undersized conductor or harmonics"
                .into(),
            evidence,
        }
    }
}
