//! The `component_map` argument: a pick-and-place (centroid) list that names what sits under a hotspot.
//!
//! Format: CSV text, one component per line, `designator, x, y[, more columns…]`.
//!
//! - **Coordinates are pixels of the analysed thermal frame** (x = column, y = row, origin top-left; the frame size
//!   is reported as `image.width × image.height`), *not* millimetres and not the display JPEG, which is often
//!   upscaled or cropped. Convert board coordinates to frame pixels before calling (e.g. with two fiducials).
//! - The separator is `,`, `;` or a tab (whichever the first data line uses). Blank lines and lines starting with
//!   `#` are skipped. Fields may be quoted with `"`.
//! - A header line is optional. It is recognised when its x/y fields are not numbers; it may then name the columns
//!   in any order: designator (`designator`, `ref`, `refdes`, `reference`, `part`), x (`x`, `mid x`, `posx`,
//!   `center-x`, …), y likewise, and optionally `value`/`comment`/`val` and `package`/`footprint`. Without a header
//!   the columns are designator, x, y, and optionally value and package.
//!
//! The suspected component is the one whose centre is nearest to the hotspot's hottest pixel.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Largest number of components accepted (a generous board).
pub const MAX_COMPONENTS: usize = 100_000;

/// One placed component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Component {
    /// Reference designator (`C12`, `U3`, `Q1`).
    pub designator: String,
    /// Centre column in frame pixels.
    pub x: f64,
    /// Centre row in frame pixels.
    pub y: f64,
    /// Value or comment column (`100uF 25V`), when given.
    pub value: Option<String>,
    /// Package or footprint column, when given.
    pub package: Option<String>,
}

/// What kind of part a designator prefix names (IEEE 315 / IPC conventions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ComponentClass {
    /// `C`: capacitor (electrolytics age fastest with heat).
    Capacitor,
    /// `U`, `IC`, `Q`, `D`, `VR`, `T`… semiconductors and regulators.
    Semiconductor,
    /// `R`, `RN`: resistor.
    Resistor,
    /// `L`, `FB`: inductor or ferrite.
    Inductor,
    /// `TR`, `XFMR`: transformer.
    Transformer,
    /// `F`: fuse.
    Fuse,
    /// `J`, `P`, `CN`, `X`, `TB`: connector or terminal.
    Connector,
    /// Anything else.
    Other,
}

impl ComponentClass {
    /// The kebab-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentClass::Capacitor => "capacitor",
            ComponentClass::Semiconductor => "semiconductor",
            ComponentClass::Resistor => "resistor",
            ComponentClass::Inductor => "inductor",
            ComponentClass::Transformer => "transformer",
            ComponentClass::Fuse => "fuse",
            ComponentClass::Connector => "connector",
            ComponentClass::Other => "other",
        }
    }
}

/// Classifies a designator by its alphabetic prefix.
pub fn classify(designator: &str) -> ComponentClass {
    let prefix: String = designator
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_uppercase();
    match prefix.as_str() {
        "C" | "CP" | "CE" => ComponentClass::Capacitor,
        "U" | "IC" | "Q" | "D" | "VR" | "LED" | "ZD" | "M" => ComponentClass::Semiconductor,
        "R" | "RN" | "RV" | "RT" => ComponentClass::Resistor,
        "L" | "FB" => ComponentClass::Inductor,
        "T" | "TR" | "XFMR" => ComponentClass::Transformer,
        "F" | "FU" => ComponentClass::Fuse,
        "J" | "P" | "CN" | "X" | "TB" | "K" => ComponentClass::Connector,
        _ => ComponentClass::Other,
    }
}

#[derive(Debug, Clone, Copy)]
struct Columns {
    designator: usize,
    x: usize,
    y: usize,
    value: Option<usize>,
    package: Option<usize>,
}

const DEFAULT_COLUMNS: Columns = Columns { designator: 0, x: 1, y: 2, value: Some(3), package: Some(4) };

fn split(line: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            c if c == sep && !quoted => out.push(std::mem::take(&mut field).trim().to_owned()),
            c => field.push(c),
        }
    }
    out.push(field.trim().to_owned());
    out
}

fn norm(name: &str) -> String {
    name.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase()
}

fn header_columns(fields: &[String]) -> Option<Columns> {
    let find = |names: &[&str]| fields.iter().position(|f| names.contains(&norm(f).as_str()));
    let designator = find(&["designator", "ref", "refdes", "reference", "part", "name", "des"])?;
    let x = find(&["x", "midx", "posx", "centerx", "centrex", "cx", "xpx", "locationx"])?;
    let y = find(&["y", "midy", "posy", "centery", "centrey", "cy", "ypx", "locationy"])?;
    let value = find(&["value", "val", "comment"]);
    let package = find(&["package", "footprint", "pattern"]);
    Some(Columns { designator, x, y, value, package })
}

fn number(field: &str) -> Option<f64> {
    let trimmed = field.trim().trim_end_matches("px");
    trimmed.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Parses the CSV text described in the module documentation.
///
/// # Errors
/// [`Error::ComponentMap`] naming the 1-based line when a line has too few fields, a non-numeric or negative
/// coordinate, or an empty designator; or when no component is listed.
pub fn parse(text: &str) -> Result<Vec<Component>> {
    let err = |line: usize, message: String| Error::ComponentMap { line, message };
    let mut sep = None;
    let mut columns = None;
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let sep = *sep.get_or_insert_with(|| {
            if line.contains('\t') {
                '\t'
            } else if line.contains(';') && !line.contains(',') {
                ';'
            } else {
                ','
            }
        });
        let fields = split(line, sep);
        if columns.is_none() {
            let looks_like_data = fields.len() >= 3
                && number(fields.get(1).map_or("", String::as_str)).is_some()
                && number(fields.get(2).map_or("", String::as_str)).is_some();
            if looks_like_data {
                columns = Some(DEFAULT_COLUMNS);
            } else {
                columns = Some(header_columns(&fields).ok_or_else(|| {
                    err(
                        line_no,
                        "expected `designator, x, y` (numbers in frame pixels) or a header naming the designator, \
                         x and y columns"
                            .into(),
                    )
                })?);
                continue;
            }
        }
        let cols = columns.unwrap_or(DEFAULT_COLUMNS);
        let get = |idx: usize| fields.get(idx).map(String::as_str);
        let (Some(designator), Some(x), Some(y)) = (get(cols.designator), get(cols.x), get(cols.y)) else {
            return Err(err(line_no, format!("needs designator, x and y; found {} field(s)", fields.len())));
        };
        if designator.is_empty() {
            return Err(err(line_no, "empty designator".into()));
        }
        let coord = |name: &str, v: &str| {
            number(v).filter(|n| *n >= 0.0).ok_or_else(|| {
                err(line_no, format!("{name} `{v}` is not a non-negative number of frame pixels"))
            })
        };
        let (x, y) = (coord("x", x)?, coord("y", y)?);
        let opt = |idx: Option<usize>| idx.and_then(get).filter(|s| !s.is_empty()).map(str::to_owned);
        out.push(Component {
            designator: designator.to_owned(),
            x,
            y,
            value: opt(cols.value),
            package: opt(cols.package),
        });
        if out.len() > MAX_COMPONENTS {
            return Err(err(line_no, format!("more than {MAX_COMPONENTS} components")));
        }
    }
    if out.is_empty() {
        return Err(err(1, "no components listed".into()));
    }
    Ok(out)
}

/// The component nearest to `(x, y)` and its distance in pixels.
pub fn nearest(components: &[Component], x: f64, y: f64) -> Option<(&Component, f64)> {
    components.iter().map(|c| (c, (c.x - x).hypot(c.y - y))).min_by(|a, b| a.1.total_cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headerless_and_header_forms() {
        let c = parse("C12, 40, 30\nU3,10,12,LM7805,TO-220\n").unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].designator.as_str(), c[0].x, c[0].y), ("C12", 40.0, 30.0));
        assert_eq!(c[1].value.as_deref(), Some("LM7805"));
        let c = parse("# exported\nRef;Val;Package;PosX;PosY\nQ1;IRF540;TO-220;5;6\n").unwrap();
        assert_eq!((c[0].designator.as_str(), c[0].x, c[0].y), ("Q1", 5.0, 6.0));
        assert_eq!(c[0].package.as_deref(), Some("TO-220"));
        let c = parse("\"Designator\",\"Mid X\",\"Mid Y\"\n\"R1\",\"1\",\"2\"").unwrap();
        assert_eq!(c[0].designator, "R1");
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("C1,1,2\nC2,abc,3").unwrap_err().to_string();
        assert_eq!(e, "component_map line 2: x `abc` is not a non-negative number of frame pixels");
        let e = parse("foo,bar,baz").unwrap_err().to_string();
        assert!(e.starts_with("component_map line 1: expected `designator, x, y`"), "{e}");
        assert!(parse("\n# nothing\n").is_err());
    }

    #[test]
    fn nearest_and_classes() {
        let c = parse("C1,0,0\nU2,10,10").unwrap();
        let (n, d) = nearest(&c, 9.0, 10.0).unwrap();
        assert_eq!((n.designator.as_str(), d), ("U2", 1.0));
        assert_eq!(classify("C12"), ComponentClass::Capacitor);
        assert_eq!(classify("u3"), ComponentClass::Semiconductor);
        assert_eq!(classify("J1"), ComponentClass::Connector);
        assert_eq!(classify("99"), ComponentClass::Other);
    }
}
