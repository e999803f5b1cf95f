//! Ad-hoc upstream servers from `switchboard serve`'s command line:
//! `--upstream [NAME=]URL` and `--upstream-cmd '[NAME=]COMMAND ARGS…'`.
//!
//! They become the same [`ServerSpec`]s as the config file's `[servers.NAME]` tables (built
//! through [`spec_from_toml`], so the same validation applies), which keeps the registry
//! unaware of where a server came from. The boundary is here, not in the router crate,
//! because naming a server after its URL or program is a command-line convenience: the
//! config file always names its servers.
//!
//! A name not given is derived — from the URL's host and port, or from the command's
//! program (the package or script for `npx`/`uvx`/`node`/`python` launchers) — and made
//! unique with a `-2`, `-3`… suffix against the config's servers and earlier flags. A
//! name given explicitly must be unique as it is.

use std::collections::BTreeSet;
use std::path::Path;

use switchboard_router::ServerSpec;
use switchboard_router::config::{ServerToml, spec_from_toml};

/// `source` of the servers defined by flags (shown by `switchboard servers`).
pub const SOURCE: &str = "command line";

/// Longest server name the registry accepts.
const MAX_NAME: usize = 64;

/// A bad `--upstream`/`--upstream-cmd` value; each message is one line. Parse errors leave
/// the flag and value out (clap's `invalid value 'V' for '--FLAG'` precedes them); errors
/// found later, when names are assigned, name both.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// `--upstream` without an http(s):// or ws(s):// URL.
    #[error("not an http(s):// or ws(s):// URL (use [NAME=]URL)")]
    NotAUrl,
    /// `--upstream-cmd` with no program.
    #[error("no command given (use '[NAME=]COMMAND ARGS…')")]
    EmptyCommand,
    /// `--upstream-cmd` whose quoting does not close.
    #[error("unbalanced quotes or a trailing backslash")]
    BadQuoting,
    /// `NAME=` with a name the registry would refuse.
    #[error("server name {name:?} is invalid (use 1–64 of A–Z a–z 0–9 - _ .)")]
    BadName {
        /// The name given.
        name: String,
    },
    /// An explicit name that the config or an earlier flag already uses.
    #[error("{flag} {value:?}: a server named {name:?} already exists (give another NAME=)")]
    Duplicate {
        /// `--upstream` or `--upstream-cmd`.
        flag: &'static str,
        /// The flag's value.
        value: String,
        /// The name given.
        name: String,
    },
    /// The spec was refused by the router's validation.
    #[error("{flag} {value:?}: {message}")]
    Invalid {
        /// `--upstream` or `--upstream-cmd`.
        flag: &'static str,
        /// The flag's value.
        value: String,
        /// Why.
        message: String,
    },
}

/// One `--upstream` or `--upstream-cmd` value, parsed but not yet named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamFlag {
    /// `--upstream [NAME=]URL`: Streamable HTTP (`http`, `https`) or WebSocket (`ws`, `wss`).
    Url {
        /// `NAME=` if given.
        name: Option<String>,
        /// The URL.
        url: String,
        /// The flag's value as typed (for messages).
        value: String,
    },
    /// `--upstream-cmd '[NAME=]COMMAND ARGS…'`: a stdio child, split like a POSIX shell does
    /// (quotes and backslashes; no variables, globs or pipes).
    Command {
        /// `NAME=` if given.
        name: Option<String>,
        /// Program and arguments.
        argv: Vec<String>,
        /// The flag's value as typed (for messages).
        value: String,
    },
}

impl UpstreamFlag {
    fn flag(&self) -> &'static str {
        match self {
            UpstreamFlag::Url { .. } => "--upstream",
            UpstreamFlag::Command { .. } => "--upstream-cmd",
        }
    }

    fn value(&self) -> &str {
        match self {
            UpstreamFlag::Url { value, .. } | UpstreamFlag::Command { value, .. } => value,
        }
    }

    fn explicit_name(&self) -> Option<&str> {
        match self {
            UpstreamFlag::Url { name, .. } | UpstreamFlag::Command { name, .. } => name.as_deref(),
        }
    }

    /// The name used when none is given.
    pub fn derived_name(&self) -> String {
        match self {
            UpstreamFlag::Url { url, .. } => name_from_url(url),
            UpstreamFlag::Command { argv, .. } => name_from_command(argv),
        }
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// Splits `NAME=REST` when the part before the first `=` looks like a name (a URL's or a
/// path's first `=` comes after a `:` or `/`, so it never does).
fn split_name(value: &str) -> (Option<&str>, &str) {
    match value.split_once('=') {
        Some((name, rest))
            if !name.is_empty()
                && name.bytes().all(|b| !b.is_ascii_whitespace() && b != b':' && b != b'/') =>
        {
            (Some(name), rest)
        }
        _ => (None, value),
    }
}

fn has_url_scheme(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, rest)| {
        matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https" | "ws" | "wss") && !rest.is_empty()
    })
}

/// Parses one `--upstream [NAME=]URL` value (a clap value parser).
pub fn parse_url_flag(value: &str) -> Result<UpstreamFlag, UpstreamError> {
    let (name, url) = split_name(value);
    let url = url.trim();
    if !has_url_scheme(url) {
        return Err(UpstreamError::NotAUrl);
    }
    if let Some(n) = name.filter(|n| !valid_name(n)) {
        return Err(UpstreamError::BadName { name: n.to_owned() });
    }
    Ok(UpstreamFlag::Url { name: name.map(str::to_owned), url: url.to_owned(), value: value.to_owned() })
}

/// Parses one `--upstream-cmd '[NAME=]COMMAND ARGS…'` value (a clap value parser).
pub fn parse_cmd_flag(value: &str) -> Result<UpstreamFlag, UpstreamError> {
    let (name, rest) = split_name(value.trim_start());
    let argv = shlex::split(rest).ok_or(UpstreamError::BadQuoting)?;
    if argv.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(UpstreamError::EmptyCommand);
    }
    if let Some(n) = name.filter(|n| !valid_name(n)) {
        return Err(UpstreamError::BadName { name: n.to_owned() });
    }
    Ok(UpstreamFlag::Command { name: name.map(str::to_owned), argv, value: value.to_owned() })
}

/// Keeps `[A-Za-z0-9-_.]`, turns runs of anything else into one `-`, trims `-` at the
/// ends and caps the length; never empty.
fn sanitise(raw: &str) -> String {
    let mut out = String::new();
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_matches(|c| c == '-' || c == '.');
    let mut name: String = trimmed.chars().take(MAX_NAME - 4).collect();
    if name.is_empty() {
        name = "upstream".to_owned();
    }
    name
}

/// `http://127.0.0.1:8080/mcp` → `127-0-0-1-8080`; `https://mcp.example.com/` → `mcp-example-com`.
fn name_from_url(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    sanitise(&host_port.to_ascii_lowercase().replace(['.', ':', '[', ']'], "-"))
}

/// The file name without directories and a script extension.
fn stem(path: &str) -> &str {
    let file = Path::new(path).file_name().and_then(|f| f.to_str()).unwrap_or(path);
    for ext in [".js", ".mjs", ".cjs", ".ts", ".py", ".exe", ".sh"] {
        if let Some(s) = file.strip_suffix(ext).filter(|s| !s.is_empty()) {
            return s;
        }
    }
    file
}

/// A package spec (`@scope/server-foo@1.2`, `mcp-server-git==0.6`) → `server-foo`, `mcp-server-git`.
fn package_name(spec: &str) -> &str {
    let unscoped = spec.rsplit('/').next().unwrap_or(spec);
    let bare = unscoped.split(['@', '=', '<', '>', '~', '[']).next().unwrap_or(unscoped);
    if bare.is_empty() { unscoped } else { bare }
}

/// A script path → its name, or its package directory's when the file is a generic entry
/// point (`…/server-everything/dist/index.js` → `server-everything`).
fn script_name(path: &str) -> String {
    let s = stem(path);
    if !matches!(s, "index" | "main" | "__main__" | "server" | "cli") {
        return s.to_owned();
    }
    let generic = ["dist", "build", "lib", "src", "bin", "out", "."];
    Path::new(path)
        .ancestors()
        .skip(1)
        .filter_map(|p| p.file_name().and_then(|f| f.to_str()))
        .find(|d| !generic.contains(d))
        .unwrap_or(s)
        .to_owned()
}

/// The program's name, or for launchers (`npx`, `uvx`, `node`, `python`…) the package or
/// script they run.
fn name_from_command(argv: &[String]) -> String {
    let program = argv.first().map_or("", |p| stem(p));
    let first_operand = || argv.iter().skip(1).find(|a| !a.starts_with('-')).map(String::as_str);
    let derived = match program {
        "npx" | "bunx" | "pnpx" | "uvx" | "pipx" => first_operand().map(|p| package_name(p).to_owned()),
        "node" | "deno" | "bun" | "python" | "python3" | "uv" => {
            let module = argv.windows(2).find(|w| w[0] == "-m").map(|w| w[1].clone());
            module.or_else(|| first_operand().filter(|a| *a != "run").map(script_name))
        }
        _ => None,
    };
    sanitise(&derived.unwrap_or_else(|| program.to_owned()))
}

/// Turns the flags into server specs. `taken` holds the names already defined (config file,
/// `mcp.json`); derived names get a `-2`, `-3`… suffix until unique, explicit ones must be.
pub fn to_specs(flags: &[UpstreamFlag], taken: &[String]) -> Result<Vec<ServerSpec>, UpstreamError> {
    let mut used: BTreeSet<String> = taken.iter().cloned().collect();
    let mut specs = Vec::with_capacity(flags.len());
    for f in flags {
        let name = match f.explicit_name() {
            Some(n) if used.contains(n) => {
                return Err(UpstreamError::Duplicate {
                    flag: f.flag(),
                    value: f.value().to_owned(),
                    name: n.to_owned(),
                });
            }
            Some(n) => n.to_owned(),
            None => {
                let base = f.derived_name();
                let mut candidate = base.clone();
                let mut k = 2;
                while used.contains(&candidate) {
                    candidate = format!("{base}-{k}");
                    k += 1;
                }
                candidate
            }
        };
        let toml = match f {
            UpstreamFlag::Url { url, .. } => ServerToml { url: Some(url.clone()), ..Default::default() },
            UpstreamFlag::Command { argv, .. } => ServerToml {
                command: argv.first().cloned(),
                args: argv.iter().skip(1).cloned().collect(),
                ..Default::default()
            },
        };
        let spec = spec_from_toml(&name, toml, SOURCE).map_err(|e| UpstreamError::Invalid {
            flag: f.flag(),
            value: f.value().to_owned(),
            message: e.to_string(),
        })?;
        used.insert(name);
        specs.push(spec);
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use switchboard_router::TransportSpec;

    fn names(flags: &[UpstreamFlag], taken: &[&str]) -> Vec<String> {
        let taken: Vec<String> = taken.iter().map(|s| (*s).to_owned()).collect();
        to_specs(flags, &taken).unwrap().into_iter().map(|s| s.name).collect()
    }

    #[test]
    fn urls_are_named_after_host_and_port() {
        let flags = [
            parse_url_flag("http://127.0.0.1:8080/mcp").unwrap(),
            parse_url_flag("https://mcp.example.com/mcp?x=1").unwrap(),
            parse_url_flag("ws://[::1]:9000/mcp").unwrap(),
            parse_url_flag("http://127.0.0.1:8080/other").unwrap(),
        ];
        assert_eq!(names(&flags, &[]), ["127-0-0-1-8080", "mcp-example-com", "1-9000", "127-0-0-1-8080-2"]);
    }

    #[test]
    fn explicit_names_and_transports() {
        let f = parse_url_flag("fx=http://127.0.0.1:1/mcp?a=b").unwrap();
        assert_eq!(
            f,
            UpstreamFlag::Url {
                name: Some("fx".into()),
                url: "http://127.0.0.1:1/mcp?a=b".into(),
                value: "fx=http://127.0.0.1:1/mcp?a=b".into()
            }
        );
        let specs = to_specs(&[f, parse_url_flag("w=ws://h/mcp").unwrap()], &[]).unwrap();
        assert!(matches!(specs[0].transport, TransportSpec::Http { .. }));
        assert!(matches!(specs[1].transport, TransportSpec::Ws { .. }));
        assert_eq!(specs[0].source, SOURCE);
    }

    #[test]
    fn commands_are_split_like_a_shell_and_named_after_what_they_run() {
        let f = parse_cmd_flag(r#"node "/opt/my peers/server-everything/dist/index.js" stdio"#).unwrap();
        let UpstreamFlag::Command { argv, name, .. } = &f else { panic!() };
        assert_eq!(argv, &["node", "/opt/my peers/server-everything/dist/index.js", "stdio"]);
        assert_eq!(name, &None);
        let flags = [
            f,
            parse_cmd_flag("npx -y @modelcontextprotocol/server-everything@2026.8.31").unwrap(),
            parse_cmd_flag("uvx mcp-server-git==0.6 --repository .").unwrap(),
            parse_cmd_flag("python3 -m mcp_server_time").unwrap(),
            parse_cmd_flag("/usr/local/bin/mcp-fixture --transport stdio").unwrap(),
            parse_cmd_flag("/usr/local/bin/mcp-fixture --transport stdio --era legacy").unwrap(),
            parse_cmd_flag("t=mcp-fixture --transport stdio").unwrap(),
        ];
        assert_eq!(
            names(&flags, &["mcp-server-git"]),
            [
                "server-everything",
                "server-everything-2",
                "mcp-server-git-2",
                "mcp_server_time",
                "mcp-fixture",
                "mcp-fixture-2",
                "t"
            ]
        );
    }

    #[test]
    fn bad_values_are_one_line_errors() {
        for (r, want) in [
            (parse_url_flag("localhost:3000"), "not an http(s):// or ws(s):// URL"),
            (parse_url_flag("bad name=http://h/"), "not an http(s)"),
            (parse_url_flag("b@d=http://h/"), "server name \"b@d\" is invalid"),
            (parse_cmd_flag(""), "no command given"),
            (parse_cmd_flag("x=  "), "no command given"),
            (parse_cmd_flag("node 'unclosed"), "unbalanced quotes"),
        ] {
            let e = r.unwrap_err().to_string();
            assert!(e.contains(want) && !e.contains('\n'), "{e}");
        }
        let dup = to_specs(&[parse_url_flag("vision=http://h/mcp").unwrap()], &["vision".to_owned()]);
        assert!(dup.unwrap_err().to_string().contains("already exists"));
    }
}
