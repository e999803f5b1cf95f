//! Which network addresses the vision server may fetch images from: the allowlist and the address policy.
//!
//! A tool argument is attacker-controlled: any MCP client can name any URL. Left alone, a server that fetches
//! URLs reads the router's own routes, local services and the cloud metadata address on the client's behalf. So
//! the rule is *deny unless listed*:
//!
//! - an entry is a host name (`images.example.com`, optionally `:port`), an IP address (optionally `:port`,
//!   IPv6 in brackets with a port) or a CIDR block (`10.20.0.0/16`, `2001:db8::/32`);
//! - a URL is checked **after DNS resolution**, on every address, and again on every redirect (the fetcher
//!   follows redirects itself): an address is usable when a CIDR/IP entry contains it, or when the URL's host
//!   name is listed *and* the address is public;
//! - "not public" ([`is_special`]) covers loopback, private, link-local, CGNAT, unspecified, multicast,
//!   documentation and reserved ranges, unique-local IPv6, and every IPv6 form that embeds an IPv4 address
//!   (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible, NAT64, 6to4, Teredo). A listed name that resolves to such an
//!   address is refused (DNS rebinding), unless the address itself is listed.
//!
//! The URL parser (WHATWG rules, the `url` crate) has already turned decimal, octal and hex IPv4 spellings
//! (`http://2130706433/`) into dotted addresses before these checks see them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// One allowlist entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowRule {
    /// A host name (lower case, no trailing dot), on any port or on one port.
    Host {
        /// The name as it appears in URLs.
        name: String,
        /// The only port allowed, when given.
        port: Option<u16>,
    },
    /// An address block (a single address is a /32 or /128), on any port or on one port.
    Net {
        /// The network address.
        addr: IpAddr,
        /// Prefix length in bits.
        prefix: u8,
        /// The only port allowed, when given (single addresses only).
        port: Option<u16>,
    },
}

impl FromStr for AllowRule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let bad = |why: &str| format!("allowlist entry {s:?}: {why}");
        if s.is_empty() {
            return Err(bad("empty"));
        }
        if s.contains("://") {
            return Err(bad("give a host, host:port, IP or CIDR block, not a URL"));
        }
        if let Some((addr, prefix)) = s.split_once('/') {
            let addr: IpAddr = addr.parse().map_err(|_| bad("not an IP address before `/`"))?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let prefix: u8 =
                prefix.parse().ok().filter(|p| *p <= max).ok_or_else(|| bad("bad prefix length"))?;
            return Ok(AllowRule::Net { addr, prefix, port: None });
        }
        if let Ok(sa) = s.parse::<std::net::SocketAddr>() {
            let prefix = if sa.is_ipv4() { 32 } else { 128 };
            return Ok(AllowRule::Net { addr: sa.ip(), prefix, port: Some(sa.port()) });
        }
        if let Ok(addr) = s.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            let prefix = if addr.is_ipv4() { 32 } else { 128 };
            return Ok(AllowRule::Net { addr, prefix, port: None });
        }
        let (name, port) = match s.rsplit_once(':') {
            Some((name, port)) => (name, Some(port.parse::<u16>().map_err(|_| bad("bad port"))?)),
            None => (s, None),
        };
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let valid = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|l| {
                !l.is_empty() && l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
        if !valid {
            return Err(bad("not a valid host name"));
        }
        Ok(AllowRule::Host { name, port })
    }
}

impl std::fmt::Display for AllowRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AllowRule::Host { name, port: Some(p) } => write!(f, "{name}:{p}"),
            AllowRule::Host { name, port: None } => write!(f, "{name}"),
            AllowRule::Net { addr, port: Some(p), .. } => {
                write!(f, "{}", std::net::SocketAddr::new(*addr, *p))
            }
            AllowRule::Net { addr, prefix, port: None } => write!(f, "{addr}/{prefix}"),
        }
    }
}

/// Parses a list of entries (e.g. from a config file); the error names the first bad entry.
///
/// # Errors
/// A message naming the entry and what is wrong with it.
pub fn parse_rules<S: AsRef<str>>(entries: &[S]) -> Result<Vec<AllowRule>, String> {
    entries.iter().map(|e| e.as_ref().parse()).collect()
}

fn port_ok(rule: Option<u16>, port: u16) -> bool {
    rule.is_none_or(|p| p == port)
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

/// Whether the host *name* of a URL is listed (for `port`).
pub fn name_listed(rules: &[AllowRule], host: &str, port: u16) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    rules.iter().any(|r| matches!(r, AllowRule::Host { name, port: p } if *name == host && port_ok(*p, port)))
}

/// Whether an address block or address entry contains `ip` (for `port`). An IPv4-mapped IPv6 address is
/// matched only by IPv6 entries that contain it as written, never by the IPv4 entry of the address it embeds.
pub fn addr_listed(rules: &[AllowRule], ip: IpAddr, port: u16) -> bool {
    rules.iter().any(|r| matches!(r, AllowRule::Net { addr, prefix, port: p } if in_net(ip, *addr, *prefix) && port_ok(*p, port)))
}

fn special_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64.0.0/10
        || (a == 192 && b == 0 && ip.octets()[2] == 0) // IETF protocol assignments 192.0.0.0/24
        || (a == 198 && (b == 18 || b == 19)) // benchmarking 198.18.0.0/15
        || a >= 240 // reserved 240.0.0.0/4
}

fn special_v6(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (seg[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (seg[0] & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated)
        || ip.to_ipv4_mapped().is_some() // ::ffff:a.b.c.d
        || (seg[..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible ::a.b.c.d (deprecated)
        || (seg[0] == 0x64 && seg[1] == 0xff9b) // NAT64 64:ff9b::/96 and 64:ff9b:1::/48
        || seg[0] == 0x2002 // 6to4 embeds an IPv4 address
        || (seg[0] == 0x2001 && seg[1] == 0) // Teredo 2001::/32
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation 2001:db8::/32
        || seg[0] == 0x0100 && seg[1..4] == [0, 0, 0] // discard-only 100::/64
}

/// Whether `ip` is anything but a public unicast address (see the module docs for the ranges).
pub fn is_special(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

/// Why an address may not be used, or `None` when it may: listed by address, or public under a listed name.
pub fn refusal(rules: &[AllowRule], name_is_listed: bool, ip: IpAddr, port: u16) -> Option<String> {
    if addr_listed(rules, ip, port) {
        return None;
    }
    if is_special(ip) {
        let what = match ip {
            IpAddr::V4(v4) if v4.is_loopback() => "a loopback address",
            IpAddr::V6(v6) if v6.is_loopback() => "a loopback address",
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => "an IPv4-mapped IPv6 address",
            IpAddr::V4(v4) if v4.is_private() => "a private address",
            IpAddr::V4(v4) if v4.is_link_local() => "a link-local address",
            _ => "a non-public address",
        };
        return Some(format!("{ip} is {what}, which is refused unless the allowlist names it"));
    }
    if name_is_listed { None } else { Some(format!("{ip} port {port} is not in the allowlist")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_and_print() {
        let rules = parse_rules(&[
            "images.example.com",
            "cdn.example.com:8443",
            "10.0.0.0/8",
            "127.0.0.1:9000",
            "[::1]:80",
            "2001:db8::1",
        ])
        .unwrap();
        let printed: Vec<String> = rules.iter().map(ToString::to_string).collect();
        assert_eq!(
            printed,
            [
                "images.example.com",
                "cdn.example.com:8443",
                "10.0.0.0/8",
                "127.0.0.1:9000",
                "[::1]:80",
                "2001:db8::1/128"
            ]
        );
        assert!(parse_rules(&["http://x"]).unwrap_err().contains("not a URL"));
        assert!(parse_rules(&["10.0.0.0/33"]).unwrap_err().contains("prefix"));
        assert!(parse_rules(&["bad host"]).unwrap_err().contains("host name"));
    }

    #[test]
    fn special_addresses_are_refused_unless_listed() {
        let none: Vec<AllowRule> = Vec::new();
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "169.254.169.254",
            "::1",
            "::ffff:127.0.0.1",
            "fe80::1",
            "fd00::1",
            "0.0.0.0",
            "100.64.0.1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(is_special(ip), "{ip}");
            assert!(refusal(&none, true, ip, 80).is_some(), "{ip}");
        }
        let public: IpAddr = "93.184.216.34".parse().unwrap();
        assert!(!is_special(public));
        assert!(refusal(&none, false, public, 80).is_some(), "an unlisted public address is refused");
        assert!(refusal(&none, true, public, 80).is_none(), "a listed name's public address is allowed");
        let rules = parse_rules(&["127.0.0.1:9000", "10.0.0.0/8"]).unwrap();
        assert!(refusal(&rules, false, "127.0.0.1".parse().unwrap(), 9000).is_none());
        assert!(refusal(&rules, false, "127.0.0.1".parse().unwrap(), 9001).is_some(), "other port");
        assert!(refusal(&rules, false, "10.9.9.9".parse().unwrap(), 1).is_none());
        assert!(refusal(&rules, false, "::ffff:127.0.0.1".parse().unwrap(), 9000).is_some(), "mapped form");
    }
}
