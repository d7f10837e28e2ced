//! A cluster's control plane endpoint: a TCP proxy (upstream's docker provider runs HAProxy
//! for this) that hands each connection to one of the control plane machines' API servers.
//! It listens on the cluster bridge's gateway address, so the host and the cluster's machines
//! reach it alike.
//!
//! Backends are taken in turn. One that does not accept within [`CONNECT_TIMEOUT`] (a machine
//! that was killed: its address no longer answers ARP, so a connect would hang for seconds) is
//! set aside for [`SET_ASIDE`] and the connection goes to the next one, so a client sees no
//! error while another backend is up; a probe brings a set-aside backend back as soon as it
//! accepts again. A backend that accepts and then closes or resets the connection before its
//! first answer (an API server dying) is replaced the same way: the client's first bytes are
//! kept until a backend answers and sent again to the next one, which is as far as a TCP proxy
//! can hide a failed backend. TLS passes through untouched: the API servers' certificates name
//! the endpoint.
//!
//! Started with [`LoadBalancer::start_checked`] (the local provider's endpoints), it also checks
//! every backend's API server as upstream's HAProxy does (`option httpchk GET /healthz`, `check
//! check-ssl verify none`): `GET /readyz` over TLS every [`CHECK_INTERVAL`]; a backend that
//! does not answer 200 within [`CHECK_TIMEOUT`] (an API server whose etcd member was removed,
//! on a machine about to be deleted) gets new connections only when no other backend is ready.

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

/// How often each backend's readiness is checked (with [`LoadBalancer::start_checked`]).
pub const CHECK_INTERVAL: Duration = Duration::from_millis(250);

/// How long a readiness check may take.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Backends {
    addresses: Vec<SocketAddr>,
    /// Until when each address (by position in `addresses`) is set aside.
    aside_until: Vec<Option<Instant>>,
    /// Whether each address failed its last readiness check.
    unready: Vec<bool>,
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
                _ if self.unready[index] => aside.push(self.addresses[index]),
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

    fn set_ready(&mut self, address: SocketAddr, ready: bool) {
        if let Some(index) = self.addresses.iter().position(|a| *a == address) {
            if self.unready[index] == ready {
                tracing::info!(%address, ready, "A control plane backend's readiness changed");
            }
            self.unready[index] = !ready;
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
        Self::start_with(listen, backends, false).await
    }

    /// Like [`LoadBalancer::start`], with the backends' API servers checked (`GET /readyz`).
    pub async fn start_checked(
        listen: SocketAddr,
        backends: Vec<SocketAddr>,
    ) -> std::io::Result<LoadBalancer> {
        Self::start_with(listen, backends, true).await
    }

    async fn start_with(
        listen: SocketAddr,
        backends: Vec<SocketAddr>,
        checked: bool,
    ) -> std::io::Result<LoadBalancer> {
        let listener = TcpListener::bind(listen).await?;
        let address = listener.local_addr()?;
        let state = Arc::new(Mutex::new(Backends::default()));
        let mut tasks = vec![
            tokio::spawn(accept(listener, state.clone())),
            tokio::spawn(probe(state.clone())),
        ];
        if checked {
            tasks.push(tokio::spawn(check(state.clone())));
        }
        let balancer = LoadBalancer {
            address,
            backends: state,
            tasks,
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
        let kept: Vec<Option<usize>> = addresses
            .iter()
            .map(|address| backends.addresses.iter().position(|a| a == address))
            .collect();
        let aside_until = kept
            .iter()
            .map(|index| index.and_then(|index| backends.aside_until[index]))
            .collect();
        // A new backend is ready until a check says otherwise (better a try than none).
        let unready = kept
            .iter()
            .map(|index| index.is_some_and(|index| backends.unready[index]))
            .collect();
        backends.addresses = addresses;
        backends.aside_until = aside_until;
        backends.unready = unready;
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
    // What the client sent first (a TLS ClientHello), kept to send again to the next backend
    // when one closes or resets the connection before answering.
    let mut first = Vec::new();
    for address in order {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(mut backend)) => {
                let _ = client.set_nodelay(true);
                let _ = backend.set_nodelay(true);
                match first_answer(&mut client, &mut backend, &mut first).await {
                    FirstAnswer::Answered(answer) => {
                        use tokio::io::AsyncWriteExt;
                        if client.write_all(&answer).await.is_ok() {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut backend).await;
                        }
                        return;
                    }
                    FirstAnswer::ClientGone => return,
                    FirstAnswer::BackendFailed => {
                        tracing::debug!(%address, "A control plane backend closed a connection before answering; trying the next");
                    }
                }
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

/// How a backend took a connection's first bytes.
enum FirstAnswer {
    /// It answered with these bytes.
    Answered(Vec<u8>),
    /// The client closed the connection before it sent anything.
    ClientGone,
    /// It closed or reset the connection before answering: another backend may take it.
    BackendFailed,
}

/// Sends the client's first bytes (read into `first` unless a previous backend got them
/// already) to `backend` and waits for its first answer. Until a backend answers, the client
/// (speaking TLS, which waits for the server's hello) has sent nothing else, so a backend that
/// fails before answering can be replaced without the client noticing.
async fn first_answer(
    client: &mut TcpStream,
    backend: &mut TcpStream,
    first: &mut Vec<u8>,
) -> FirstAnswer {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buffer = vec![0u8; 16 * 1024];
    if first.is_empty() {
        // A protocol where the server speaks first goes straight through.
        let mut from_client = vec![0u8; 16 * 1024];
        tokio::select! {
            read = client.read(&mut from_client) => match read {
                Ok(0) | Err(_) => return FirstAnswer::ClientGone,
                Ok(read) => first.extend_from_slice(&from_client[..read]),
            },
            read = backend.read(&mut buffer) => return match read {
                Ok(0) | Err(_) => FirstAnswer::BackendFailed,
                Ok(read) => {
                    buffer.truncate(read);
                    FirstAnswer::Answered(buffer)
                }
            },
        }
    }
    if backend.write_all(first).await.is_err() {
        return FirstAnswer::BackendFailed;
    }
    match backend.read(&mut buffer).await {
        Ok(0) | Err(_) => FirstAnswer::BackendFailed,
        Ok(read) => {
            buffer.truncate(read);
            FirstAnswer::Answered(buffer)
        }
    }
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

/// Checks every backend's readiness, every [`CHECK_INTERVAL`].
async fn check(backends: Arc<Mutex<Backends>>) {
    let tls = Arc::new(check_tls());
    loop {
        tokio::time::sleep(CHECK_INTERVAL).await;
        let addresses = backends
            .lock()
            .expect("the backends lock is not poisoned")
            .addresses
            .clone();
        let checks = addresses.into_iter().map(|address| {
            let tls = tls.clone();
            async move { (address, ready(address, tls).await) }
        });
        for (address, ready) in join_all(checks).await {
            backends
                .lock()
                .expect("the backends lock is not poisoned")
                .set_ready(address, ready);
        }
    }
}

/// Runs the futures concurrently, each on its own task.
async fn join_all<T: Send + 'static>(
    futures: impl Iterator<Item = impl std::future::Future<Output = T> + Send + 'static>,
) -> Vec<T> {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut results = Vec::with_capacity(handles.len());
    for handle in handles {
        if let Ok(result) = handle.await {
            results.push(result);
        }
    }
    results
}

/// Whether the API server at `address` answers `GET /readyz` with 200 within
/// [`CHECK_TIMEOUT`].
async fn ready(address: SocketAddr, tls: Arc<rustls::ClientConfig>) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let check = async {
        let tcp = TcpStream::connect(address).await.ok()?;
        let name = rustls::pki_types::ServerName::IpAddress(address.ip().into());
        let mut stream = tokio_rustls::TlsConnector::from(tls)
            .connect(name, tcp)
            .await
            .ok()?;
        let request =
            format!("GET /readyz HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut answer = Vec::new();
        let mut buffer = [0u8; 64];
        while answer.len() < 12 {
            let read = stream.read(&mut buffer).await.ok()?;
            if read == 0 {
                break;
            }
            answer.extend_from_slice(&buffer[..read]);
        }
        Some(answer.starts_with(b"HTTP/1.1 200"))
    };
    matches!(
        tokio::time::timeout(CHECK_TIMEOUT, check).await,
        Ok(Some(true))
    )
}

/// TLS for the checks: the server's certificate chain is not verified (HAProxy's `verify
/// none`: the check only reads a status, sends nothing secret), its handshake signature is.
fn check_tls() -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth()
}

#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests;
