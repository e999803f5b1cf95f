//! The `[router]` keys of self-registration, capability labels and the scheduler, checked at
//! load (each error names the key and the fix) and turned into the types the gateway
//! ([`RegistrationConfig`]) and the router ([`SchedulerConfig`], [`KnownLabels`]) take.

use std::sync::OnceLock;
use std::time::Duration;

use switchboard_gateway::registration::{
    Allowlist, DEFAULT_MCP_VERSIONS, RegistrationConfig, RegistrationPaths, allow::DEFAULT_ALLOW,
};
use switchboard_router::SchedulerConfig;
use switchboard_router::ServerSpec;
use switchboard_router::federation::PrefixMode;
use switchboard_router::labels::KnownLabels;

use super::RouterToml;

/// What the `[router]` table says beyond the registry's own settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RouterSettings {
    /// How registrations are judged (router id, revisions, allowlist, labels, intervals).
    pub registration: RegistrationConfig,
    /// Where the registration routes are mounted (fixed for the life of a listener).
    pub registration_paths: RegistrationPaths,
    /// How the scheduler chooses among replicas.
    pub scheduler: SchedulerConfig,
    /// The capability labels servers may carry.
    pub labels: KnownLabels,
    /// `[router] prefix`, when set (the same setting as `[endpoint] prefix`).
    pub prefix: Option<PrefixMode>,
}

impl Default for RouterSettings {
    fn default() -> Self {
        RouterSettings {
            registration: RegistrationConfig {
                router_id: process_router_id().to_owned(),
                ..Default::default()
            },
            registration_paths: RegistrationPaths::default(),
            scheduler: SchedulerConfig::default(),
            labels: KnownLabels::default(),
            prefix: None,
        }
    }
}

/// This process's router id when the configuration names none: the host name and 8 random
/// hex digits from the OS, drawn once (a reload keeps it).
pub fn process_router_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let mut bytes = [0u8; 4];
        let random = match getrandom::fill(&mut bytes) {
            Ok(()) => bytes.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            Err(_) => format!("{:08x}", std::process::id()),
        };
        let host = std::fs::read_to_string("/etc/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .or_else(|| std::env::var("COMPUTERNAME").ok())
            .map(|h| h.trim().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect::<String>())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "switchboard".to_owned());
        format!("{host}-{random}")
    })
}

fn check_path(source: &str, key: &str, p: &str) -> anyhow::Result<String> {
    let reserved = ["/mcp", "/healthz", "/blobs", "/api"];
    let ok = p.starts_with('/')
        && p.len() > 1
        && p.len() <= 128
        && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"/-_.".contains(&b))
        && !p.ends_with('/')
        && !reserved.iter().any(|r| p == *r || p.starts_with(&format!("{r}/")));
    anyhow::ensure!(
        ok,
        "{source}: [router].{key} {p:?} must be a path like \"/register\" (letters, digits, '/', '-', '_', '.'; not /mcp, /healthz, /blobs or /api)"
    );
    Ok(p.to_owned())
}

/// Reads and checks the `[router]` keys of this module.
pub fn settings(r: &RouterToml, source: &str) -> anyhow::Result<RouterSettings> {
    let mut s = RouterSettings::default();
    let reg = &mut s.registration;
    if let Some(id) = &r.router_id {
        anyhow::ensure!(
            !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_graphic()),
            "{source}: [router].router_id {id:?} must be 1–128 printable characters without spaces"
        );
        reg.router_id = id.clone();
    }
    if let Some(versions) = &r.mcp_version {
        anyhow::ensure!(
            !versions.is_empty(),
            "{source}: [router].mcp_version is empty: list at least one of {}",
            DEFAULT_MCP_VERSIONS.join(", ")
        );
        for v in versions {
            anyhow::ensure!(
                DEFAULT_MCP_VERSIONS.contains(&v.as_str()),
                "{source}: [router].mcp_version {v:?} is not a revision this router speaks ({})",
                DEFAULT_MCP_VERSIONS.join(", ")
            );
        }
        reg.mcp_versions = versions.clone();
    }
    let p = &mut s.registration_paths;
    if let Some(v) = &r.registration_path {
        p.registration = check_path(source, "registration_path", v)?;
    }
    if let Some(v) = &r.confirm_path {
        p.confirm = check_path(source, "confirm_path", v)?;
    }
    if let Some(v) = &r.status_path {
        p.status = check_path(source, "status_path", v)?;
    }
    anyhow::ensure!(
        p.registration != p.confirm && p.registration != p.status && p.confirm != p.status,
        "{source}: [router].registration_path, confirm_path and status_path must differ"
    );
    let allow: Vec<String> = r
        .registration_allow
        .clone()
        .unwrap_or_else(|| DEFAULT_ALLOW.iter().map(|s| (*s).to_owned()).collect());
    reg.allow = Allowlist::parse(&allow).map_err(|e| {
        anyhow::anyhow!(
            "{source}: [router].registration_allow: {e} (write an IP address, a CIDR range or a host name)"
        )
    })?;
    if let Some(n) = r.max_registered_servers {
        anyhow::ensure!(
            (1..=10_000).contains(&n),
            "{source}: [router].max_registered_servers must be between 1 and 10000 (it is {n})"
        );
        reg.max_servers = n;
    }
    let sch = &mut s.scheduler;
    if let Some(ms) = r.load_sampling_interval_ms {
        anyhow::ensure!(
            (100..=3_600_000).contains(&ms),
            "{source}: [router].load_sampling_interval_ms must be between 100 and 3600000 (it is {ms})"
        );
        sch.load_sampling_interval = Duration::from_millis(ms);
    }
    reg.load_sampling_interval = sch.load_sampling_interval;
    if let Some(n) = r.max_fallback_retries {
        anyhow::ensure!(n <= 16, "{source}: [router].max_fallback_retries must be at most 16 (it is {n})");
        sch.max_fallback_retries = n;
    }
    if let Some(secs) = r.session_affinity_window_secs {
        anyhow::ensure!(
            (1..=86_400).contains(&secs),
            "{source}: [router].session_affinity_window_secs must be between 1 and 86400 (it is {secs})"
        );
        sch.affinity_window = Duration::from_secs(secs);
    }
    if let Some(t) = r.overload_threshold {
        anyhow::ensure!(
            t.is_finite() && t > 0.0,
            "{source}: [router].overload_threshold must be a number above 0 (it is {t})"
        );
        sch.overload_threshold = t;
    }
    if let Some(on) = r.detect_replicas {
        sch.detect_replicas = on;
    }
    for l in &r.labels {
        let ok = !l.is_empty()
            && l.len() <= 64
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
        anyhow::ensure!(
            ok,
            "{source}: [router].labels: {l:?} is not a valid label (letters, digits, '-', '_', '.')"
        );
    }
    s.labels = KnownLabels::new(r.labels.iter().cloned());
    reg.labels = s.labels.clone();
    s.prefix = r.prefix;
    Ok(s)
}

/// Refuses a server label nobody declared, with the closest known one.
pub fn check_labels(specs: &[ServerSpec], labels: &KnownLabels, source: &str) -> anyhow::Result<()> {
    for spec in specs {
        labels.check_all(&spec.name, &spec.labels).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
    }
    Ok(())
}
