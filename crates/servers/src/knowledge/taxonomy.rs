//! Component groups and failure modes: the structure that ties a diagnosis to the manual sections about it.
//!
//! A section's `kind` is specific (`lug`, `neutral-bar`, `mccb`); a diagnosis usually knows less (a hot joint in
//! a panel is a *termination*, not yet a lug or a neutral bar). The **group** is the level both can name: the
//! diagnosed component family. Knowledge queries filter and boost on it, reasoning takes plan steps only from
//! sections of the diagnosed group, and the evaluation scores plans by it, so the three agree by construction.
//!
//! A section's **modes** are the failure modes (the vision server's `failure_mode.kind` values) it is about:
//! its `modes:` metadata line when it has one, else the default of its group ([`default_modes`]).

/// Group of the method and criteria sections (survey practice, standards): they apply to every diagnosis and
/// are never a component's repair procedure.
pub const METHOD_GROUP: &str = "survey-method";

/// `(group, section kinds in it)`. A kind not listed is its own group.
const GROUPS: &[(&str, &[&str])] = &[
    (
        "termination",
        &["termination", "lug", "neutral-bar", "ground-bar", "splice", "terminal-block", "cable-termination"],
    ),
    ("breaker", &["breaker", "mccb", "afci-breaker", "gfci-breaker"]),
    ("bus", &["bus", "bus-bar", "busway"]),
    ("conductor", &["conductor", "cable", "receptacle"]),
    ("fuse", &["fuse", "fuse-clip", "ptc-fuse"]),
    ("disconnect", &["disconnect", "meter-socket", "transfer-switch"]),
    ("contactor", &["contactor", "relay", "overload-relay", "motor-starter", "soft-starter", "mcc-bucket"]),
    ("battery", &["battery", "ups"]),
    ("capacitor-bank", &["capacitor-bank", "reactor"]),
    ("transformer", &["transformer-unit", "dry-type-transformer", "control-transformer"]),
    ("drive", &["drive", "vfd"]),
    ("surge-protection", &["surge-protection", "spd", "varistor"]),
    ("motor", &["motor", "bearing", "motor-capacitor"]),
    ("pv-module", &["pv-module", "pv-cell", "pv-bypass-diode", "pv-junction-box", "pv-connector"]),
    ("building-envelope", &["building-envelope"]),
    (
        "capacitor",
        &[
            "capacitor",
            "electrolytic-capacitor",
            "ceramic-capacitor",
            "film-capacitor",
            "tantalum-capacitor",
            "polymer-capacitor",
            "supercapacitor",
        ],
    ),
    (
        "semiconductor",
        &[
            "semiconductor",
            "mosfet",
            "igbt",
            "bjt",
            "thyristor",
            "solid-state-relay",
            "diode",
            "bridge-rectifier",
            "tvs-diode",
            "zener-diode",
            "ic",
            "microcontroller",
            "fpga",
            "gate-driver",
            "motor-driver",
            "op-amp",
            "interface-ic",
            "regulator",
            "switching-regulator",
            "ldo",
            "dc-dc-module",
        ],
    ),
    ("power-supply", &["power-supply"]),
    ("connector", &["connector", "pcb-terminal-block"]),
    ("resistor", &["resistor", "shunt-resistor", "ntc-thermistor", "ptc-thermistor"]),
    ("magnetics", &["inductor", "transformer", "current-transformer"]),
    ("pcb", &["pcb", "pcb-trace", "via", "solder-joint", "pcb-laminate"]),
    (METHOD_GROUP, &[METHOD_GROUP]),
];

/// The group of a section kind (or of a group name, which maps to itself).
pub fn group_of(kind: &str) -> String {
    let kind = kind.trim().to_ascii_lowercase().replace([' ', '_'], "-");
    GROUPS
        .iter()
        .find(|(group, kinds)| *group == kind || kinds.contains(&kind.as_str()))
        .map_or(kind, |(group, _)| (*group).to_owned())
}

/// Failure modes a section of `group` is about when it declares none.
pub fn default_modes(group: &str) -> &'static [&'static str] {
    match group {
        "termination" | "breaker" | "bus" | "disconnect" | "connector" | "contactor" => &["loose-connection"],
        "conductor" | "transformer" | "capacitor-bank" => &["overload-imbalance"],
        "capacitor" => &["capacitor-overheating"],
        "semiconductor" | "power-supply" => &["semiconductor-overheating"],
        "fuse" | "resistor" | "magnetics" | "pcb" | "drive" | "surge-protection" => {
            &["component-overheating"]
        }
        "motor" => &["motor-overheating"],
        "pv-module" => &["pv-hotspot"],
        "building-envelope" => &["envelope-anomaly"],
        _ => &[],
    }
}

/// Which equipment kinds (the vision server's `equipment` values) a group occurs in; `None`: every kind.
pub fn equipment_of(group: &str) -> Option<&'static [&'static str]> {
    Some(match group {
        METHOD_GROUP => return None,
        "termination" | "conductor" => &["panel", "transformer", "motor-bearing"],
        "breaker" | "bus" | "disconnect" | "battery" | "capacitor-bank" | "drive" | "surge-protection" => {
            &["panel"]
        }
        "contactor" => &["panel", "motor-bearing", "board"],
        "fuse" => &["panel", "board"],
        "transformer" => &["transformer", "panel"],
        "motor" => &["motor-bearing"],
        "pv-module" => &["pv-module"],
        "building-envelope" => &["building-envelope"],
        "capacitor" | "semiconductor" | "power-supply" | "connector" | "resistor" | "magnetics" | "pcb" => {
            &["board"]
        }
        _ => return None,
    })
}

/// Whether a query's group is given and meaningful (`unknown` and empty are not).
pub fn is_known(group: &str) -> bool {
    let g = group.trim();
    !g.is_empty() && !g.eq_ignore_ascii_case("unknown") && !g.eq_ignore_ascii_case("none")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_groups() {
        assert_eq!(group_of("lug"), "termination");
        assert_eq!(group_of("Neutral bar"), "termination");
        assert_eq!(group_of("termination"), "termination");
        assert_eq!(group_of("battery"), "battery");
        assert_eq!(group_of("ups"), "battery");
        assert_eq!(group_of("electrolytic-capacitor"), "capacitor");
        assert_eq!(group_of("something-new"), "something-new");
        assert_eq!(default_modes("termination"), ["loose-connection"]);
        assert!(equipment_of("battery").unwrap().contains(&"panel"));
        assert!(equipment_of(METHOD_GROUP).is_none());
        assert!(!is_known("unknown") && is_known("termination"));
    }
}
