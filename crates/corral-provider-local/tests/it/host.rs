use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use corral_provider_local::host::{Host, LocalMachine, MachineRequest};

/// The pool the tests take clusters' /24s from: `10.77.0.0/16`, the provider's own default.
const POOL: u8 = 77;

/// Deletes a cluster's machines and network when the test ends, passed or not, so that a
/// failing test leaves nothing behind on the host.
pub(crate) struct Cleanup(pub Host, pub &'static str);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let (host, cluster) = (self.0.clone(), self.1);
        // Drop cannot await: a thread with its own runtime does the deleting.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let _ = runtime.block_on(host.delete_cluster("default", cluster));
        })
        .join();
    }
}

#[allow(unsafe_code)]
pub(crate) fn host(root: &Path) -> Host {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "the local provider's tests make network namespaces and cgroups: run them as root, as CI does"
    );
    assert!(
        std::process::Command::new("ip")
            .arg("-V")
            .output()
            .is_ok_and(|output| output.status.success()),
        "iproute2's `ip` is needed (apt-get install iproute2)"
    );
    Host::new(root, POOL).expect("a cgroup hierarchy")
}

fn request(cluster: &str, name: &str) -> MachineRequest {
    MachineRequest {
        uid: uuid(),
        namespace: "default".to_owned(),
        name: name.to_owned(),
        cluster_name: cluster.to_owned(),
    }
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn link_exists(name: &str) -> bool {
    std::process::Command::new("ip")
        .args(["link", "show", "dev", name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn process_alive(pid: i32) -> bool {
    // /proc/<pid>/stat's state: a process killed but not yet reaped is a zombie, 'Z'.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next())
        })
        .is_some_and(|state| state != 'Z' && state != 'X')
}

/// A TCP server inside the machine on port 8080, answering "hello from <name>".
fn serve_hello(host: &Host, machine: &LocalMachine) -> tokio::process::Child {
    serve_hello_on(host, machine, 8080)
}

/// A TCP server inside the machine, answering "hello from <name>" to every connection.
pub(crate) fn serve_hello_on(
    host: &Host,
    machine: &LocalMachine,
    port: u16,
) -> tokio::process::Child {
    let script = format!(
        "import socket\n\
         s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
         s.bind(('{}', {port})); s.listen()\n\
         while True:\n    c, _ = s.accept(); c.sendall(b'hello from {}'); c.close()\n",
        machine.address, machine.name
    );
    host.spawn(
        machine,
        tokio::process::Command::new("python3")
            .args(["-c", &script])
            .kill_on_drop(true),
    )
    .expect("python3 in the machine")
}

fn read_hello(address: Ipv4Addr) -> Option<String> {
    use std::io::Read;
    let mut stream =
        TcpStream::connect_timeout(&SocketAddr::from((address, 8080)), Duration::from_secs(1))
            .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

async fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    for _ in 0..300 {
        if let Some(value) = probe() {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen in 15 s");
}

#[tokio::test]
async fn a_machine_is_a_namespace_on_its_clusters_bridge_and_deleting_it_leaves_nothing() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let _cleanup = Cleanup(host.clone(), "alpha");
    let first = host
        .create_machine(&request("alpha", "alpha-cp-1"))
        .await
        .unwrap();
    let second = host
        .create_machine(&request("alpha", "alpha-md-1"))
        .await
        .unwrap();
    assert_eq!(first.provider_id, "local://alpha/alpha-cp-1");
    assert_eq!(first.bridge, second.bridge);
    assert_ne!(first.address, second.address);
    assert_eq!(
        first.address.octets()[..3],
        second.address.octets()[..3],
        "one /24 per cluster"
    );
    assert!(Path::new("/run/netns").join(&first.netns).exists());
    assert!(link_exists(&first.host_veth) && link_exists(&first.bridge));

    // Creating again with the uid gives the machine recorded, nothing new.
    let again = host
        .create_machine(&MachineRequest {
            uid: first.uid.clone(),
            namespace: "default".into(),
            name: "alpha-cp-1".into(),
            cluster_name: "alpha".into(),
        })
        .await
        .unwrap();
    assert_eq!(again, first);

    // Processes run inside: in the machine's network namespace and cgroup, forks included.
    let server = serve_hello(&host, &first);
    let forked = host
        .spawn(
            &first,
            tokio::process::Command::new("sh")
                .args(["-c", "sleep 600 & exec sleep 600"])
                .kill_on_drop(true),
        )
        .unwrap();
    let server_pid = server.id().unwrap() as i32;
    let netns_inode = std::fs::metadata(Path::new("/run/netns").join(&first.netns))
        .map(|metadata| std::os::unix::fs::MetadataExt::ino(&metadata))
        .unwrap();
    let process_netns = std::fs::metadata(format!("/proc/{server_pid}/ns/net"))
        .map(|metadata| std::os::unix::fs::MetadataExt::ino(&metadata))
        .unwrap();
    assert_eq!(
        process_netns, netns_inode,
        "the process is not in the machine's namespace"
    );
    let processes = eventually("the fork to join the cgroup", || {
        let processes = host.cgroup(&first.uid).processes().unwrap();
        (processes.len() >= 3).then_some(processes)
    })
    .await;
    assert!(processes.contains(&server_pid), "{processes:?}");
    assert!(
        processes.contains(&(forked.id().unwrap() as i32)),
        "{processes:?}"
    );

    // Reached from the host through the bridge, and from the other machine.
    let hello = eventually("the machine to answer from the host", || {
        read_hello(first.address)
    })
    .await;
    assert_eq!(hello, "hello from alpha-cp-1");
    let client = host
        .spawn(
            &second,
            tokio::process::Command::new("python3")
                .args([
                    "-c",
                    &format!(
                        "import socket; s = socket.create_connection(('{}', 8080), 5); print(s.recv(100).decode())",
                        first.address
                    ),
                ])
                .stdout(Stdio::piped()),
        )
        .unwrap()
        .wait_with_output()
        .await
        .unwrap();
    assert!(client.status.success(), "{client:?}");
    assert_eq!(
        String::from_utf8_lossy(&client.stdout).trim(),
        "hello from alpha-cp-1"
    );

    // Another Host on the root (the provider restarted) finds both.
    let restarted = Host::new(root.path(), POOL).unwrap();
    assert_eq!(
        restarted.machines().await.unwrap(),
        vec![first.clone(), second.clone()]
    );

    // Deleting kills every process, and removes the namespace, the veth, the cgroup, the state.
    assert!(restarted.delete_machine(&first.uid).await.unwrap());
    for pid in &processes {
        assert!(!process_alive(*pid), "process {pid} outlived its machine");
    }
    assert!(!Path::new("/run/netns").join(&first.netns).exists());
    assert!(!link_exists(&first.host_veth));
    assert!(!host.cgroup(&first.uid).path().exists());
    assert!(!host.machine_dir(&first.uid).exists());
    assert!(
        !restarted.delete_machine(&first.uid).await.unwrap(),
        "deleted twice"
    );
    assert_eq!(read_hello(first.address), None);

    // The cluster's network stays while a machine of it does.
    assert!(!host.delete_network("default", "alpha").await.unwrap());
    assert!(host.delete_machine(&second.uid).await.unwrap());
    assert!(host.delete_network("default", "alpha").await.unwrap());
    assert!(!link_exists(&first.bridge));
    assert_eq!(host.machines().await.unwrap(), vec![]);
}

#[tokio::test]
async fn clusters_get_their_own_bridge_and_subnet() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let _cleanup = (Cleanup(host.clone(), "one"), Cleanup(host.clone(), "two"));
    let a = host.create_machine(&request("one", "one-1")).await.unwrap();
    let b = host.create_machine(&request("two", "two-1")).await.unwrap();
    assert_ne!(a.bridge, b.bridge);
    assert_ne!(a.address.octets()[..3], b.address.octets()[..3]);
    for machine in [&a, &b] {
        host.delete_machine(&machine.uid).await.unwrap();
        host.delete_network("default", &machine.cluster_name)
            .await
            .unwrap();
        assert!(!link_exists(&machine.bridge));
    }
}

#[tokio::test]
async fn a_namespace_without_a_record_is_an_orphan_and_deleting_it_cleans_up() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let _cleanup = Cleanup(host.clone(), "gamma");
    let machine = host
        .create_machine(&request("gamma", "gamma-1"))
        .await
        .unwrap();
    let sleeper = host
        .spawn(
            &machine,
            tokio::process::Command::new("sleep")
                .arg("600")
                .kill_on_drop(true),
        )
        .unwrap();
    assert!(!host.orphans().await.unwrap().contains(&machine.uid));

    // A crash lost the record (or another state root made it): the namespace is an orphan.
    std::fs::remove_dir_all(host.machine_dir(&machine.uid)).unwrap();
    assert!(host.orphans().await.unwrap().contains(&machine.uid));
    assert!(host.delete_machine(&machine.uid).await.unwrap());
    assert!(!process_alive(sleeper.id().unwrap() as i32));
    assert!(!host.orphans().await.unwrap().contains(&machine.uid));
    assert!(!link_exists(&machine.host_veth));
    host.delete_network("default", "gamma").await.unwrap();
}

#[tokio::test]
async fn creating_again_after_a_crash_finishes_a_half_made_machine() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let _cleanup = Cleanup(host.clone(), "delta");
    let request = request("delta", "delta-1");
    // The namespace was made, then the process died: no veth, no record.
    let netns = host.netns_name(&request.uid);
    let made = std::process::Command::new("ip")
        .args(["netns", "add", &netns])
        .status()
        .unwrap();
    assert!(made.success());
    let machine = host.create_machine(&request).await.unwrap();
    assert_eq!(machine.netns, netns);
    assert!(link_exists(&machine.host_veth));
    let routes = std::process::Command::new("ip")
        .args(["-n", &netns, "route", "show", "default"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&routes.stdout).contains("default via"),
        "{routes:?}"
    );
    host.delete_machine(&machine.uid).await.unwrap();
    host.delete_network("default", "delta").await.unwrap();
}
