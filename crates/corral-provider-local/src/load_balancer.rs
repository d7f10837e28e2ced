//! A cluster's control plane endpoint: a TCP proxy (upstream's docker provider runs HAProxy
//! for this) that hands each connection to one of the control plane machines' API servers.
//! It listens on the cluster bridge's gateway address, so the host and the cluster's machines
//! reach it alike.
//!
//! Backends are taken in turn. One that does not accept within [`CONNECT_TIMEOUT`] (a machine
//! that was killed: its address no longer answers ARP, so a connect would hang for seconds) is
//! set aside for [`SET_ASIDE`] and the connection goes to the next one, so a client sees no
//! error while another backend is up; a probe brings a set-aside backend back as soon as it
//! accepts again. TLS passes through untouched: the API servers' certificates name the
//! endpoint.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// How long a backend gets to accept a connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// How long a backend that did not accept is skipped unless the probe finds it back.
pub const SET_ASIDE: Duration = Duration::from_secs(5);

/// How often set-aside backends are probed.
const PROBE_INTERVAL: Duration = Duration::from_millis(500);

#[derive(Default)]
struct Backends {
    addresses: Vec<SocketAddr>,
    /// Until when each address (by position in `addresses`) is set aside.
    aside_until: Vec<Option<Instant>>,
    next: usize,
}

impl Backends {
    /// The backends in the order to try them: those not set aside from the next in turn on,
    /// then the set-aside ones (better a slow try than none).
    fn order(&mut self) -> Vec<SocketAddr> {
        let count = self.addresses.len();
        if count == 0 {
            return Vec::new();
        }
        let start = self.next % count;
        self.next = self.next.wrapping_add(1);
        let now = Instant::now();
        let (mut up, mut aside) = (Vec::new(), Vec::new());
        for offset in 0..count {
            let index = (start + offset) % count;
            match self.aside_until[index] {
                Some(until) if until > now => aside.push(self.addresses[index]),
                _ => up.push(self.addresses[index]),
            }
        }
        up.extend(aside);
        up
    }

    fn set_aside(&mut self, address: SocketAddr, until: Option<Instant>) {
        if let Some(index) = self.addresses.iter().position(|a| *a == address) {
            self.aside_until[index] = until;
        }
    }
}

/// A running load balancer; stops when dropped.
pub struct LoadBalancer {
    address: SocketAddr,
    backends: Arc<Mutex<Backends>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl LoadBalancer {
    /// Listens on `listen` (port 0 picks one) and forwards to `backends`.
    pub async fn start(
        listen: SocketAddr,
        backends: Vec<SocketAddr>,
    ) -> std::io::Result<LoadBalancer> {
        let listener = TcpListener::bind(listen).await?;
        let address = listener.local_addr()?;
        let state = Arc::new(Mutex::new(Backends::default()));
        let balancer = LoadBalancer {
            address,
            backends: state.clone(),
            tasks: vec![
                tokio::spawn(accept(listener, state.clone())),
                tokio::spawn(probe(state)),
            ],
        };
        balancer.set_backends(backends);
        Ok(balancer)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Replaces the backends (machines came or went); a kept backend keeps its state.
    pub fn set_backends(&self, addresses: Vec<SocketAddr>) {
        let mut backends = self
            .backends
            .lock()
            .expect("the backends lock is not poisoned");
        let aside_until = addresses
            .iter()
            .map(|address| {
                backends
                    .addresses
                    .iter()
                    .position(|a| a == address)
                    .and_then(|index| backends.aside_until[index])
            })
            .collect();
        backends.addresses = addresses;
        backends.aside_until = aside_until;
    }

    pub fn backends(&self) -> Vec<SocketAddr> {
        self.backends
            .lock()
            .expect("the backends lock is not poisoned")
            .addresses
            .clone()
    }
}

impl Drop for LoadBalancer {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn accept(listener: TcpListener, backends: Arc<Mutex<Backends>>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            // Out of file descriptors, say: wait rather than spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        tokio::spawn(forward(client, backends.clone()));
    }
}

async fn forward(mut client: TcpStream, backends: Arc<Mutex<Backends>>) {
    let order = backends
        .lock()
        .expect("the backends lock is not poisoned")
        .order();
    for address in order {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(mut backend)) => {
                let _ = client.set_nodelay(true);
                let _ = backend.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut client, &mut backend).await;
                return;
            }
            _ => {
                tracing::debug!(%address, "Setting aside a control plane backend that does not accept");
                backends
                    .lock()
                    .expect("the backends lock is not poisoned")
                    .set_aside(address, Some(Instant::now() + SET_ASIDE));
            }
        }
    }
    // No backend: the client's connection is closed.
}

/// Brings set-aside backends back as soon as they accept.
async fn probe(backends: Arc<Mutex<Backends>>) {
    loop {
        tokio::time::sleep(PROBE_INTERVAL).await;
        let aside: Vec<SocketAddr> = {
            let backends = backends.lock().expect("the backends lock is not poisoned");
            let now = Instant::now();
            backends
                .addresses
                .iter()
                .zip(&backends.aside_until)
                .filter(|(_, until)| until.is_some_and(|until| until > now))
                .map(|(address, _)| *address)
                .collect()
        };
        for address in aside {
            if let Ok(Ok(_)) =
                tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await
            {
                backends
                    .lock()
                    .expect("the backends lock is not poisoned")
                    .set_aside(address, None);
            }
        }
    }
}

#[cfg(test)]
mod tests;
