//! The registration allowlist: the router opens connections only to URLs whose host a rule
//! names, so `POST /register` cannot make it reach into a network its operator did not mean
//! to expose (a request forger's classic use of a router). A rule is an IP address, a CIDR
//! range (`10.0.0.0/8`, `fd00::/8`) or a host name matched exactly (case-insensitively, no
//! wildcard). Host names are compared as written, not resolved: a host name rule trusts that
//! name's DNS. The default allows loopback only.

use std::fmt;
use std::net::IpAddr;

/// The rules allowed by default: loopback only.
pub const DEFAULT_ALLOW: [&str; 3] = ["127.0.0.0/8", "::1", "localhost"];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    Net { addr: IpAddr, prefix: u8 },
    Host(String),
}

/// A parsed allowlist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowlist {
    rules: Vec<Rule>,
    written: Vec<String>,
}

impl Default for Allowlist {
    fn default() -> Self {
        Allowlist::parse(DEFAULT_ALLOW).unwrap_or(Allowlist { rules: Vec::new(), written: Vec::new() })
    }
}

impl fmt::Display for Allowlist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.written.is_empty() { f.write_str("nothing") } else { f.write_str(&self.written.join(", ")) }
    }
}

/// Why a registration's URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlRefusal {
    /// Not an absolute http(s) URL.
    #[error("url {url:?} is not an http:// or https:// URL")]
    NotHttp {
        /// The URL as given.
        url: String,
    },
    /// Its host matches no rule.
    #[error("url {url:?} is not allowed: host {host} is not in [router] registration_allow ({allow})")]
    NotAllowed {
        /// The URL as given.
        url: String,
        /// Its host.
        host: String,
        /// The rules.
        allow: String,
    },
}

impl Allowlist {
    /// Parses rules; the error names the rule that is not an address, range or host name.
    pub fn parse<S: AsRef<str>>(rules: impl IntoIterator<Item = S>) -> Result<Allowlist, String> {
        let mut out = Allowlist { rules: Vec::new(), written: Vec::new() };
        for r in rules {
            let r = r.as_ref().trim();
            out.rules.push(parse_rule(r)?);
            out.written.push(r.to_owned());
        }
        Ok(out)
    }

    /// Accepts `url` when it is http(s) and its host matches a rule.
    pub fn check(&self, url: &str) -> Result<(), UrlRefusal> {
        let parsed = url::Url::parse(url).ok().filter(|u| matches!(u.scheme(), "http" | "https"));
        let Some(host) = parsed.as_ref().and_then(url::Url::host) else {
            return Err(UrlRefusal::NotHttp { url: url.to_owned() });
        };
        let allowed = match &host {
            url::Host::Ipv4(a) => self.allows_ip(IpAddr::V4(*a)),
            url::Host::Ipv6(a) => self.allows_ip(IpAddr::V6(*a)),
            url::Host::Domain(d) => {
                self.rules.iter().any(|r| matches!(r, Rule::Host(h) if h.eq_ignore_ascii_case(d)))
            }
        };
        if allowed {
            Ok(())
        } else {
            Err(UrlRefusal::NotAllowed {
                url: url.to_owned(),
                host: host.to_string(),
                allow: self.to_string(),
            })
        }
    }

    fn allows_ip(&self, ip: IpAddr) -> bool {
        // An IPv4-mapped IPv6 address is the IPv4 address it maps.
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        self.rules.iter().any(|r| match r {
            Rule::Net { addr, prefix } => in_net(ip, *addr, *prefix),
            Rule::Host(_) => false,
        })
    }
}

fn parse_rule(r: &str) -> Result<Rule, String> {
    let bad = || format!("{r:?} is not an IP address, a CIDR range or a host name");
    if let Some((a, p)) = r.split_once('/') {
        let addr: IpAddr = a.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix: u8 = p.parse().ok().filter(|p| *p <= max).ok_or_else(bad)?;
        return Ok(Rule::Net { addr, prefix });
    }
    if let Ok(addr) = r.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return Ok(Rule::Net { addr, prefix: if addr.is_ipv4() { 32 } else { 128 } });
    }
    let host_ok = !r.is_empty()
        && r.len() <= 253
        && r.split('.').all(|l| {
            !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if host_ok { Ok(Rule::Host(r.to_ascii_lowercase())) } else { Err(bad()) }
}

fn in_net(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix)) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(prefix)) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_only_by_default() {
        let a = Allowlist::default();
        assert!(a.check("http://127.0.0.1:8080/mcp").is_ok());
        assert!(a.check("http://127.9.9.9/mcp").is_ok());
        assert!(a.check("http://[::1]:9/mcp").is_ok());
        assert!(a.check("http://LOCALHOST:9/mcp").is_ok());
        assert!(a.check("http://[::ffff:127.0.0.1]:9/mcp").is_ok());
        assert_eq!(
            a.check("http://10.0.0.5:8080/mcp").unwrap_err().to_string(),
            "url \"http://10.0.0.5:8080/mcp\" is not allowed: host 10.0.0.5 is not in [router] registration_allow (127.0.0.0/8, ::1, localhost)"
        );
        assert!(a.check("http://localhost.evil.com/mcp").is_err());
        assert!(matches!(a.check("file:///etc/passwd"), Err(UrlRefusal::NotHttp { .. })));
    }

    #[test]
    fn ranges_and_names() {
        let a = Allowlist::parse(["10.1.0.0/16", "fd00::/8", "chaos.internal"]).unwrap();
        assert!(a.check("http://10.1.2.3/mcp").is_ok());
        assert!(a.check("http://10.2.0.1/mcp").is_err());
        assert!(a.check("https://[fd12::1]/mcp").is_ok());
        assert!(a.check("http://Chaos.Internal:1/mcp").is_ok());
        assert!(a.check("http://127.0.0.1/mcp").is_err());
        assert!(Allowlist::parse(["10.0.0.0/40"]).is_err());
        assert!(Allowlist::parse(["http://x"]).is_err());
    }
}
