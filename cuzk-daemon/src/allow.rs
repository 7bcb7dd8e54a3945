//! Who may connect to the TCP listener: source-address ranges, checked when a connection is
//! accepted, before a byte of it is read. Curio's client speaks plaintext gRPC with no token,
//! so for a daemon that serves a Curio node on another machine this list is what stands
//! between the network and the prover. The default is loopback only.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// An address range: `10.0.0.0/8`, `fd00::/8`, or one address (`192.0.2.7`, `::1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        // An IPv4 peer of a dual-stack listener arrives as ::ffff:a.b.c.d.
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                prefix_eq(u32::from(net).into(), u32::from(ip).into(), self.prefix, 32)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(u128::from(net), u128::from(ip), self.prefix, 128)
            }
            _ => false,
        }
    }
}

fn prefix_eq(net: u128, ip: u128, prefix: u8, bits: u8) -> bool {
    if prefix == 0 {
        return true;
    }
    let shift = bits - prefix;
    (net >> shift) == (ip >> shift)
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .trim()
            .parse()
            .map_err(|e| format!("{s:?}: not an address range (e.g. 10.0.0.0/8, fd00::/8): {e}"))?;
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => bits,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|&p| p <= bits)
                .ok_or_else(|| format!("{s:?}: the prefix length must be 0..={bits}"))?,
        };
        Ok(Cidr { addr, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// The ranges a peer must be in; loopback when none are configured.
#[derive(Clone, Debug)]
pub struct Allowlist(Vec<Cidr>);

impl Allowlist {
    pub fn parse(ranges: &[String]) -> anyhow::Result<Self> {
        let cidrs = if ranges.is_empty() {
            vec![
                "127.0.0.0/8".parse().expect("valid"),
                "::1/128".parse().expect("valid"),
            ]
        } else {
            ranges
                .iter()
                .map(|r| r.parse::<Cidr>().map_err(|e| anyhow::anyhow!("allow: {e}")))
                .collect::<anyhow::Result<_>>()?
        };
        Ok(Allowlist(cidrs))
    }

    pub fn allows(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|c| c.contains(ip))
    }

    /// Whether only loopback peers can pass (then exposing the port exposes nothing).
    pub fn loopback_only(&self) -> bool {
        self.0.iter().all(|c| c.addr.is_loopback() && c.prefix >= 8)
    }
}

impl fmt::Display for Allowlist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        write!(f, "{}", all.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_match_their_addresses_only() {
        let a = Allowlist::parse(&["10.0.0.0/8".into(), "fd00::/8".into(), "192.0.2.7".into()])
            .unwrap();
        for yes in ["10.1.2.3", "::ffff:10.9.9.9", "fd12::1", "192.0.2.7"] {
            assert!(a.allows(ip(yes)), "{yes}");
        }
        for no in [
            "11.0.0.1",
            "127.0.0.1",
            "::1",
            "fe80::1",
            "192.0.2.8",
            "::ffff:11.0.0.1",
        ] {
            assert!(!a.allows(ip(no)), "{no}");
        }
        assert!(!a.loopback_only());
    }

    #[test]
    fn the_default_is_loopback() {
        let a = Allowlist::parse(&[]).unwrap();
        assert!(a.allows(ip("127.0.0.1")) && a.allows(ip("::1")));
        assert!(a.allows(ip("::ffff:127.0.0.1")));
        assert!(!a.allows(ip("10.0.0.1")) && !a.allows(ip("2001:db8::1")));
        assert!(a.loopback_only());
        let everyone = Allowlist::parse(&["0.0.0.0/0".into(), "::/0".into()]).unwrap();
        assert!(everyone.allows(ip("203.0.113.9")) && everyone.allows(ip("2001:db8::1")));
    }

    #[test]
    fn bad_ranges_are_refused() {
        for bad in [
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "host.example",
            "10.0.0.0/x",
            "",
        ] {
            assert!(Allowlist::parse(&[bad.into()]).is_err(), "{bad}");
        }
    }
}
