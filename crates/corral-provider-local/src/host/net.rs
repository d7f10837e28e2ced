//! The kernel's network objects of machines, through iproute2's `ip`: bridges, veth pairs,
//! named network namespaces (`ip netns` keeps them as bind mounts under `/run/netns`).
//! Each `ensure_*` / `create_*` looks before it makes, so running it again after a crash
//! finishes what was begun.

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::path::PathBuf;

use super::{HostError, LocalMachine};

const NETNS_DIR: &str = "/run/netns";

pub(super) fn netns_path(netns: &str) -> PathBuf {
    PathBuf::from(NETNS_DIR).join(netns)
}

pub(super) fn netns_exists(netns: &str) -> bool {
    netns_path(netns).exists()
}

pub(super) fn list_netns() -> Result<Vec<String>, HostError> {
    super::list_dir(std::path::Path::new(NETNS_DIR))
}

/// Runs `ip` with these arguments; its standard error is the error.
async fn ip(args: &[&str]) -> Result<String, HostError> {
    let output = tokio::process::Command::new("ip")
        .args(args)
        .output()
        .await
        .map_err(HostError::IpMissing)?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(HostError::Ip {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

async fn link_exists(name: &str) -> Result<bool, HostError> {
    Ok(ip(&["-o", "link", "show"])
        .await?
        .lines()
        .any(|line| link_name(line) == Some(name)))
}

/// The name in a line of `ip -o link show`: `3: cvh0a1b2c3d4e@if2: <BROADCAST,...`.
fn link_name(line: &str) -> Option<&str> {
    let name = line.split(": ").nth(1)?;
    Some(name.split('@').next().unwrap_or(name))
}

/// The bridge with the gateway address of its /24, up.
pub(super) async fn ensure_bridge(bridge: &str, gateway: Ipv4Addr) -> Result<(), HostError> {
    if !link_exists(bridge).await? {
        ip(&["link", "add", bridge, "type", "bridge"]).await?;
    }
    let address = format!("{gateway}/24");
    let shown = ip(&["-o", "-4", "addr", "show", "dev", bridge]).await?;
    if !shown.contains(&format!("inet {address} ")) {
        ip(&["addr", "add", &address, "dev", bridge]).await?;
    }
    ip(&["link", "set", bridge, "up"]).await?;
    Ok(())
}

/// The machine's namespace and its veth pair: `eth0` inside with the machine's address and a
/// default route through the gateway, the host's end on the cluster's bridge.
pub(super) async fn create_machine_link(
    machine: &LocalMachine,
    peer: &str,
    gateway: Ipv4Addr,
) -> Result<(), HostError> {
    let netns = machine.netns.as_str();
    if !netns_exists(netns) {
        ip(&["netns", "add", netns]).await?;
    }
    // A pair half made by a crash (the host's end without the namespace's) is made again.
    delete_link(&machine.host_veth).await?;
    ip(&[
        "link",
        "add",
        &machine.host_veth,
        "type",
        "veth",
        "peer",
        "name",
        peer,
        "netns",
        netns,
    ])
    .await?;
    ip(&[
        "link",
        "set",
        &machine.host_veth,
        "master",
        &machine.bridge,
        "up",
    ])
    .await?;
    let address = format!("{}/24", machine.address);
    let gateway = gateway.to_string();
    for args in [
        &["-n", netns, "link", "set", peer, "name", "eth0"][..],
        &["-n", netns, "addr", "add", &address, "dev", "eth0"],
        &["-n", netns, "link", "set", "eth0", "up"],
        &["-n", netns, "link", "set", "lo", "up"],
        &["-n", netns, "route", "add", "default", "via", &gateway],
    ] {
        ip(args).await?;
    }
    Ok(())
}

pub(super) async fn delete_netns(netns: &str) -> Result<(), HostError> {
    match ip(&["netns", "delete", netns]).await {
        Err(_) if !netns_exists(netns) => Ok(()),
        other => other.map(drop),
    }
}

/// Deletes the link when it exists. A veth's host end also goes away by itself, a moment
/// after its namespace is deleted (the kernel cleans namespaces up in the background): seen
/// here, then gone before the delete, it counts as deleted.
pub(super) async fn delete_link(name: &str) -> Result<(), HostError> {
    if link_exists(name).await? {
        match ip(&["link", "delete", name]).await {
            Err(_) if !link_exists(name).await? => {}
            other => other.map(drop)?,
        }
    }
    Ok(())
}

/// The /24s (as their first three octets) that the host's addresses and routes already use,
/// so that a cluster's subnet never shadows a network the host is on.
pub(super) async fn subnets_in_use() -> Result<HashSet<[u8; 3]>, HostError> {
    let mut in_use = HashSet::new();
    let addresses = ip(&["-o", "-4", "addr", "show"]).await?;
    let routes = ip(&["-4", "route", "show", "table", "all"]).await?;
    let words = addresses
        .lines()
        .filter_map(|line| line.split_whitespace().skip_while(|w| *w != "inet").nth(1))
        .chain(
            routes
                .lines()
                .filter_map(|line| line.split_whitespace().next()),
        );
    for word in words {
        let (address, prefix) = word.split_once('/').unwrap_or((word, "32"));
        let (Ok(address), Ok(prefix)) = (address.parse::<Ipv4Addr>(), prefix.parse::<u32>()) else {
            continue;
        };
        if prefix < 16 {
            // A wide route (a VPN's 10.0.0.0/8, say) would rule out the whole pool; only
            // addresses and routes of /16 or narrower count.
            continue;
        }
        let first = u32::from(address) & (u32::MAX << (32 - prefix.min(32)));
        let last = first | !(u32::MAX << (32 - prefix.min(32)));
        for block in (first >> 8)..=(last >> 8) {
            let [_, a, b, c] = block.to_be_bytes();
            in_use.insert([a, b, c]);
        }
    }
    Ok(in_use)
}
