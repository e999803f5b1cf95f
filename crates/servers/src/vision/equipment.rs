//! What the image shows: the equipment kind, named by the operator or admitted unknown, and the component group
//! the finding is about.
//!
//! A thermal image alone does not say whether it shows a panel, a PV module or ducks on a pond, and the criteria
//! differ by equipment (NETA bands for electrical equipment, IEC TS 62446-3 classes for PV modules, none
//! published for bearings or building envelopes). So the equipment is taken, in this order, from
//!
//! 1. the operator (`equipment` argument),
//! 2. a component map (a pick-and-place list only exists for circuit boards),
//! 3. the operator's context text, when it names exactly one kind of equipment ([`from_context`]),
//!
//! and is otherwise [`Equipment::Unknown`], with the reason. The report states which source decided
//! ([`EquipmentSource`]).
//!
//! The **component** ([`component_for`]) is the group the knowledge base and the repair plan work on (see
//! `knowledge::taxonomy`): from the component map's part class on boards, from words of the context (`lug`,
//! `breaker`, `busbar`…) on panels, else from the failure mode's shape (a hot joint is a termination, an evenly
//! warm run is a conductor).

use serde::{Deserialize, Serialize};

use super::components::ComponentClass;

/// What kind of equipment the image shows; decides the criteria (NETA, IEC TS 62446-3 or none), the failure
/// modes considered and (in the reasoning server) the safety preamble.
///
/// Wire names are kebab-case; `panel` and `board` are kept from the first version, the other spellings are
/// accepted as aliases (`electrical-panel`, `switchgear`, `circuit-board`, `pcb`, `motor`, `bearing`, `pv`,
/// `solar`, `building`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Equipment {
    /// Switchgear, panelboards, MCCs, disconnects, busways: connections and conductors.
    #[serde(alias = "electrical-panel", alias = "switchgear", alias = "switchboard", alias = "panelboard")]
    Panel,
    /// Printed circuit boards: capacitors, semiconductors, regulators.
    #[serde(alias = "circuit-board", alias = "pcb")]
    Board,
    /// Electric motors, bearings, couplings.
    #[serde(alias = "motor", alias = "bearing", alias = "motor-or-bearing")]
    MotorBearing,
    /// Photovoltaic modules and strings.
    #[serde(alias = "pv", alias = "solar", alias = "solar-module", alias = "photovoltaic")]
    PvModule,
    /// Power and distribution transformers.
    Transformer,
    /// Walls, roofs, windows, floors.
    #[serde(alias = "building", alias = "envelope")]
    BuildingEnvelope,
    /// Something else the operator named.
    Other,
    /// Not known: nothing identified it.
    Unknown,
}

/// Every accepted spelling of [`Equipment`] on the wire (canonical names first).
pub const EQUIPMENT_NAMES: &[&str] = &[
    "panel",
    "board",
    "motor-bearing",
    "pv-module",
    "transformer",
    "building-envelope",
    "other",
    "unknown",
    "electrical-panel",
    "switchgear",
    "switchboard",
    "panelboard",
    "circuit-board",
    "pcb",
    "motor",
    "bearing",
    "motor-or-bearing",
    "pv",
    "solar",
    "solar-module",
    "photovoltaic",
    "building",
    "envelope",
];

impl Equipment {
    /// The canonical wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Equipment::Panel => "panel",
            Equipment::Board => "board",
            Equipment::MotorBearing => "motor-bearing",
            Equipment::PvModule => "pv-module",
            Equipment::Transformer => "transformer",
            Equipment::BuildingEnvelope => "building-envelope",
            Equipment::Other => "other",
            Equipment::Unknown => "unknown",
        }
    }

    /// Words for an operator.
    pub fn describe(self) -> &'static str {
        match self {
            Equipment::Panel => "electrical panel / switchgear",
            Equipment::Board => "circuit board",
            Equipment::MotorBearing => "motor or bearing",
            Equipment::PvModule => "PV module",
            Equipment::Transformer => "transformer",
            Equipment::BuildingEnvelope => "building envelope",
            Equipment::Other => "other equipment",
            Equipment::Unknown => "unknown equipment",
        }
    }

    /// Whether NETA MTS Table 100.18 applies (electrical equipment).
    pub fn uses_neta(self) -> bool {
        matches!(self, Equipment::Panel | Equipment::Board | Equipment::Transformer)
    }
}

/// Which input decided the equipment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EquipmentSource {
    /// The operator's `equipment` argument.
    Operator,
    /// A component map was given (only boards have one).
    ComponentMap,
    /// The operator's context text named it.
    Context,
    /// Nothing identified it.
    None,
}

/// Phrases that name equipment in free text, longest first within each kind. Multi-word phrases are matched
/// before single words, and a matched phrase's words do not count again (`solar panel` is PV, not a panel).
const CONTEXT_PHRASES: &[(Equipment, &[&str])] = &[
    (
        Equipment::PvModule,
        &["solar panel", "solar module", "pv module", "pv panel", "pv string", "photovoltaic", "solar", "pv"],
    ),
    (
        Equipment::Panel,
        &[
            "distribution board",
            "consumer unit",
            "load centre",
            "load center",
            "bus bar",
            "panelboard",
            "switchboard",
            "switchgear",
            "panel",
            "breaker",
            "breakers",
            "mcc",
            "busbar",
            "busway",
            "lug",
            "lugs",
            "neutral",
            "disconnect",
            "fuse",
            "fuses",
            "feeder",
            "contactor",
        ],
    ),
    (
        Equipment::Board,
        &[
            "circuit board",
            "pcb",
            "pcba",
            "capacitor",
            "regulator",
            "mosfet",
            "smd",
            "microcontroller",
            "solder",
        ],
    ),
    (Equipment::MotorBearing, &["motor", "bearing", "bearings", "pump", "gearbox", "coupling"]),
    (Equipment::Transformer, &["transformer", "xfmr"]),
    (
        Equipment::BuildingEnvelope,
        &[
            "thermal bridge",
            "floor heating",
            "underfloor",
            "wall",
            "ceiling",
            "window",
            "facade",
            "insulation",
            "building",
        ],
    ),
];

/// Lower-case words of `text` separated by single spaces, padded with a space at each end.
fn normalise(text: &str) -> String {
    let words: Vec<String> =
        text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    format!(" {} ", words.join(" "))
}

/// The equipment the context names, or why it names none: `Ok(kind)` when exactly one kind is named,
/// `Err(reason)` when none or several are.
pub fn from_context(context: &str) -> Result<Equipment, String> {
    let mut text = normalise(context);
    let mut phrases: Vec<(Equipment, &str)> =
        CONTEXT_PHRASES.iter().flat_map(|(e, ps)| ps.iter().map(move |p| (*e, *p))).collect();
    phrases.sort_by_key(|(_, p)| std::cmp::Reverse(p.len()));
    let mut found: Vec<Equipment> = Vec::new();
    for (equipment, phrase) in phrases {
        let needle = format!(" {phrase} ");
        if text.contains(&needle) {
            text = text.replace(&needle, " | ");
            if !found.contains(&equipment) {
                found.push(equipment);
            }
        }
    }
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err("the context names no kind of equipment".into()),
        several => Err(format!(
            "the context names several kinds of equipment ({})",
            several.iter().map(|e| e.describe()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Decides the equipment: operator, then component map, then context, else unknown. Returns the kind, the
/// source and a one-line reason.
pub fn identify(
    operator: Option<Equipment>,
    has_component_map: bool,
    context: Option<&str>,
) -> (Equipment, EquipmentSource, String) {
    if let Some(e) = operator.filter(|e| *e != Equipment::Unknown) {
        return (e, EquipmentSource::Operator, format!("{} as given by the operator", e.describe()));
    }
    if has_component_map {
        return (
            Equipment::Board,
            EquipmentSource::ComponentMap,
            "circuit board: a component map (pick-and-place list) was given".into(),
        );
    }
    let context = context.map(str::trim).filter(|c| !c.is_empty());
    let why_not = match context.map(from_context) {
        Some(Ok(e)) => {
            return (
                e,
                EquipmentSource::Context,
                format!("{} named in the operator's context", e.describe()),
            );
        }
        Some(Err(reason)) => reason,
        None => "no equipment was given, no component map and no context".into(),
    };
    (
        Equipment::Unknown,
        EquipmentSource::None,
        format!(
            "unknown: {why_not}; a thermal image alone does not show what the equipment is (give `equipment`, \
             e.g. --equipment panel)"
        ),
    )
}

/// The component the finding is about, at the level the knowledge base and the repair plan work on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentOut {
    /// Component kind (`lug`, `termination`, `capacitor`, `pv-module`, …; `unknown` when not known).
    pub kind: String,
    /// Component group (the diagnosed component family: `termination`, `conductor`, `capacitor`, …;
    /// `unknown` when not known).
    pub group: String,
    /// What decided it: `component-map`, `context`, `failure-mode`, `equipment` or `none`.
    pub source: String,
}

/// Words of the context that name a panel component, most specific first: `(word, kind, group)`.
const CONTEXT_COMPONENTS: &[(&str, &str, &str)] = &[
    ("lug", "lug", "termination"),
    ("lugs", "lug", "termination"),
    ("neutral", "neutral-bar", "termination"),
    ("terminal", "termination", "termination"),
    ("splice", "splice", "termination"),
    ("busbar", "bus-bar", "bus"),
    ("bus", "bus-bar", "bus"),
    ("busway", "busway", "bus"),
    ("breaker", "breaker", "breaker"),
    ("breakers", "breaker", "breaker"),
    ("mccb", "mccb", "breaker"),
    ("fuse", "fuse", "fuse"),
    ("fuses", "fuse", "fuse"),
    ("contactor", "contactor", "contactor"),
    ("starter", "motor-starter", "contactor"),
    ("disconnect", "disconnect", "disconnect"),
    ("isolator", "disconnect", "disconnect"),
    ("cable", "cable", "conductor"),
    ("conductor", "cable", "conductor"),
    ("wire", "cable", "conductor"),
    ("feeder", "cable", "conductor"),
];

fn part(kind: &str, group: &str, source: &str) -> ComponentOut {
    ComponentOut { kind: kind.into(), group: group.into(), source: source.into() }
}

/// The component for a finding on `equipment` with failure mode `mode`, given the class of the suspected part
/// (component map) and the context.
pub fn component_for(
    equipment: Equipment,
    mode: &str,
    class: Option<ComponentClass>,
    context: Option<&str>,
) -> ComponentOut {
    if mode == "none" {
        return part("none", "none", "failure-mode");
    }
    match equipment {
        Equipment::Board => match class {
            Some(c) => {
                let group = match c {
                    ComponentClass::Capacitor => "capacitor",
                    ComponentClass::Semiconductor => "semiconductor",
                    ComponentClass::Resistor => "resistor",
                    ComponentClass::Inductor | ComponentClass::Transformer => "magnetics",
                    ComponentClass::Fuse => "fuse",
                    ComponentClass::Connector => "connector",
                    ComponentClass::Other => "unknown",
                };
                part(c.as_str(), group, "component-map")
            }
            None => part("unknown", "unknown", "none"),
        },
        Equipment::Panel => {
            let words = normalise(context.unwrap_or_default());
            if let Some((_, kind, group)) =
                CONTEXT_COMPONENTS.iter().find(|(w, ..)| words.contains(&format!(" {w} ")))
            {
                return part(kind, group, "context");
            }
            match mode {
                "loose-connection" => part("termination", "termination", "failure-mode"),
                "overload-imbalance" => part("conductor", "conductor", "failure-mode"),
                _ => part("unknown", "unknown", "none"),
            }
        }
        Equipment::Transformer => part("dry-type-transformer", "transformer", "equipment"),
        Equipment::PvModule => part("pv-module", "pv-module", "equipment"),
        Equipment::MotorBearing => {
            if mode == "bearing-overheating" {
                part("bearing", "motor", "failure-mode")
            } else {
                part("motor", "motor", "equipment")
            }
        }
        Equipment::BuildingEnvelope => part("building-envelope", "building-envelope", "equipment"),
        Equipment::Other | Equipment::Unknown => part("unknown", "unknown", "none"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_and_aliases() {
        for (text, e) in [
            ("\"panel\"", Equipment::Panel),
            ("\"electrical-panel\"", Equipment::Panel),
            ("\"board\"", Equipment::Board),
            ("\"pcb\"", Equipment::Board),
            ("\"pv-module\"", Equipment::PvModule),
            ("\"motor\"", Equipment::MotorBearing),
        ] {
            assert_eq!(serde_json::from_str::<Equipment>(text).unwrap(), e, "{text}");
        }
        for name in EQUIPMENT_NAMES {
            assert!(serde_json::from_str::<Equipment>(&format!("\"{name}\"")).is_ok(), "{name}");
        }
        assert_eq!(serde_json::to_value(Equipment::PvModule).unwrap(), "pv-module");
    }

    #[test]
    fn the_context_names_one_kind_or_none() {
        assert_eq!(from_context("main switchboard, 70 % load"), Ok(Equipment::Panel));
        assert_eq!(from_context("neutral lug in the basement"), Ok(Equipment::Panel));
        assert_eq!(from_context("roof-top solar panel string 3"), Ok(Equipment::PvModule));
        assert_eq!(from_context("pump motor, drive end bearing"), Ok(Equipment::MotorBearing));
        assert!(from_context("ducks on a pond").unwrap_err().contains("names no kind"));
        assert!(from_context("transformer and pump motor").unwrap_err().contains("several"));
        let (e, src, why) = identify(None, false, None);
        assert_eq!((e, src), (Equipment::Unknown, EquipmentSource::None));
        assert!(why.starts_with("unknown: no equipment was given"), "{why}");
        let (e, src, _) = identify(Some(Equipment::Panel), true, Some("solar"));
        assert_eq!((e, src), (Equipment::Panel, EquipmentSource::Operator));
        let (e, src, _) = identify(None, true, None);
        assert_eq!((e, src), (Equipment::Board, EquipmentSource::ComponentMap));
    }

    #[test]
    fn components_follow_the_map_the_context_or_the_shape() {
        let c = component_for(Equipment::Panel, "loose-connection", None, None);
        assert_eq!((c.group.as_str(), c.source.as_str()), ("termination", "failure-mode"));
        let c = component_for(Equipment::Panel, "loose-connection", None, Some("hot neutral lug"));
        assert_eq!((c.kind.as_str(), c.group.as_str()), ("lug", "termination"));
        let c =
            component_for(Equipment::Board, "capacitor-overheating", Some(ComponentClass::Capacitor), None);
        assert_eq!(c.group, "capacitor");
        assert_eq!(component_for(Equipment::Unknown, "undetermined", None, None).group, "unknown");
    }
}
