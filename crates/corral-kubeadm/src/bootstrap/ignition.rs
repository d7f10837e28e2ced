//! The bootstrap data in Ignition's format, for `spec.format: ignition`, as upstream's CABPK
//! writes it (`bootstrap/kubeadm/pkg/ignition/`, `clc/clc.go`): upstream renders a Container
//! Linux Config and transpiles it with Flatcar's transpiler into an **Ignition v2.3** config
//! (`ignition.version` `2.3.0`; upstream's book: "This initial implementation uses Ignition v2
//! and was tested with Flatcar Container Linux only"). Corral writes the same Ignition JSON
//! directly:
//!
//! - `storage.files`: the user's files (contents resolved; `base64` ones decoded), the cluster
//!   certificates of a control plane machine, `/etc/sudoers.d/<user>` for users with `sudo`,
//!   `/etc/ssh/sshd_config` allowing password login for users with `lockPassword: false`,
//!   `/etc/kubeadm.sh` (pre-kubeadm commands, `kubeadm init|join --config /etc/kubeadm.yml`,
//!   the bootstrap sentinel, then the post-kubeadm commands), `/etc/kubeadm.yml` (kubeadm's
//!   configuration) and `/etc/ntp.conf` when NTP servers are given; every content a `data:` URL;
//! - `passwd.users`; `storage.disks` and `storage.filesystems` from `diskSetup`;
//! - `systemd.units`: `kubeadm.service`, which runs `/etc/kubeadm.sh` once (while
//!   `/etc/kubeadm.yml` exists; the script moves it to `/tmp`), `ntpd.service` when NTP is
//!   enabled, and a `.mount` unit per `mounts` entry.
//!
//! What upstream's webhook forbids with Ignition is refused here with the field named
//! ([`unsupported`]): `bootCommands`, `gzip` file encodings, `users[].inactive`, partition
//! tables other than `gpt`, `filesystems[].partition` and `replaceFS`; and `spec.ignition` without
//! `format: ignition` ([`refusal`]). Corral also refuses
//! `ignition.containerLinuxConfig.additionalConfig`: merging it needs a Container Linux Config
//! to Ignition translator, which Corral does not have.
//!
//! Pure functions: files and passwords from Secrets are resolved by the caller.

use base64::Engine;
use serde_json::{Map, Value, json};

use super::cloud_init::{KubeadmCommand, SENTINEL_PATH, WriteFile};
use crate::api::bootstrap::{
    DiskSetup, Encoding, Format, KubeadmConfigSpec, Ntp, PartitionTableType, User,
};

#[cfg(test)]
mod tests;

/// The Ignition spec version upstream's transpiler emits.
pub const IGNITION_VERSION: &str = "2.3.0";

/// Where kubeadm's configuration is written (upstream's path).
pub const KUBEADM_CONFIG_PATH: &str = "/etc/kubeadm.yml";

/// The script `kubeadm.service` runs.
pub const KUBEADM_SCRIPT_PATH: &str = "/etc/kubeadm.sh";

const KUBEADM_UNIT: &str = "[Unit]
Description=kubeadm
# Run only once. After successful run, this file is moved to /tmp/.
ConditionPathExists=/etc/kubeadm.yml
After=network.target
[Service]
# To not restart the unit when it exits, as it is expected.
Type=oneshot
ExecStart=/bin/bash /etc/kubeadm.sh
[Install]
WantedBy=multi-user.target
";

const SSHD_CONFIG: &str = "# Use most defaults for sshd configuration.
Subsystem sftp internal-sftp
ClientAliveInterval 180
UseDNS no
UsePAM yes
PrintLastLog no # handled by PAM
PrintMotd no # handled by PAM

Match User ";

const NTP_CONF_TAIL: &str = "
# Warning: Using default NTP settings will leave your NTP
# server accessible to all hosts on the Internet.

# If you want to deny all machines (including your own)
# from accessing the NTP server, uncomment:
#restrict default ignore

# Default configuration:
# - Allow only time queries, at a limited rate, sending KoD when in excess.
# - Allow all local queries (IPv4, IPv6)
restrict default nomodify nopeer noquery notrap limited kod
restrict 127.0.0.1
restrict [::1]
";

/// Everything a machine's Ignition config says.
#[derive(Clone, Debug, Default)]
pub struct IgnitionConfig<'a> {
    /// The user's files (contents resolved), then the certificates.
    pub files: Vec<WriteFile>,
    pub pre_kubeadm_commands: &'a [String],
    pub post_kubeadm_commands: &'a [String],
    /// The users, with passwords resolved.
    pub users: Vec<User>,
    pub ntp: Option<&'a Ntp>,
    pub disk_setup: Option<&'a DiskSetup>,
    pub mounts: &'a [Vec<String>],
    /// `spec.verbosity`, kubeadm's `--v`.
    pub verbosity: Option<i32>,
    /// kubeadm's configuration (for init: the ClusterConfiguration and InitConfiguration).
    pub kubeadm_config: String,
}

/// Why the KubeadmConfig's Ignition settings cannot be honoured, naming the field: with
/// `spec.format: ignition`, what [`unsupported`] refuses; otherwise a `spec.ignition` without
/// that format (upstream's webhook rule). `None` when nothing is wrong.
pub fn refusal(spec: &KubeadmConfigSpec) -> Option<String> {
    if spec.format == Some(Format::Ignition) {
        unsupported(spec)
    } else if spec.ignition != Default::default() {
        Some("spec.format: must be set to \"ignition\" if spec.ignition is set".into())
    } else {
        None
    }
}

/// Why the KubeadmConfig cannot be rendered as Ignition, naming the field; `None` when it can.
pub fn unsupported(spec: &KubeadmConfigSpec) -> Option<String> {
    let not_supported = |field: String| {
        Some(format!(
            "{field}: not supported when spec.format is ignition"
        ))
    };
    if spec
        .ignition
        .container_linux_config
        .additional_config
        .as_deref()
        .is_some_and(|config| !config.trim().is_empty())
    {
        return Some(
            "spec.ignition.containerLinuxConfig.additionalConfig: not supported by Corral (merging a Container Linux Config needs a translator to Ignition, which Corral does not have); use spec.files, or spec.format cloud-config"
                .into(),
        );
    }
    if !spec.boot_commands.is_empty() {
        return not_supported("spec.bootCommands".into());
    }
    for (index, user) in spec.users.iter().enumerate() {
        if user.inactive == Some(true) {
            return not_supported(format!("spec.users[{index}].inactive"));
        }
    }
    for (index, file) in spec.files.iter().enumerate() {
        if matches!(file.encoding, Some(Encoding::Gzip | Encoding::GzipBase64)) {
            return not_supported(format!("spec.files[{index}].encoding"));
        }
    }
    for (index, partition) in spec.disk_setup.partitions.iter().enumerate() {
        if partition
            .table_type
            .is_some_and(|table| table != PartitionTableType::Gpt)
        {
            return Some(format!(
                "spec.diskSetup.partitions[{index}].tableType: only partition type \"gpt\" is supported when spec.format is ignition"
            ));
        }
    }
    for (index, filesystem) in spec.disk_setup.filesystems.iter().enumerate() {
        if filesystem.replace_fs.is_some() {
            return not_supported(format!("spec.diskSetup.filesystems[{index}].replaceFS"));
        }
        if filesystem.partition.is_some() {
            return not_supported(format!("spec.diskSetup.filesystems[{index}].partition"));
        }
    }
    None
}

/// A `data:` URL of the bytes (RFC 2397; everything but unreserved characters
/// percent-encoded), as Ignition reads file contents.
pub fn data_url(bytes: &[u8]) -> String {
    let mut url = String::with_capacity(bytes.len() + 6);
    url.push_str("data:,");
    for &byte in bytes {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            url.push(byte as char);
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url
}

/// A file permission such as `0640` (octal, as YAML reads it in upstream's template) as
/// Ignition's decimal mode; `None` for an empty or invalid one.
fn mode(permissions: &str) -> Option<u32> {
    let permissions = permissions.trim();
    if permissions.is_empty() {
        return None;
    }
    u32::from_str_radix(permissions, 8).ok()
}

/// An Ignition file entry of the root filesystem.
fn file(path: &str, contents: &[u8], mode: Option<u32>, owner: &str, append: bool) -> Value {
    let mut entry = Map::new();
    entry.insert("filesystem".into(), json!("root"));
    entry.insert("path".into(), json!(path));
    entry.insert(
        "contents".into(),
        json!({ "source": data_url(contents), "verification": {} }),
    );
    if let Some(mode) = mode {
        entry.insert("mode".into(), json!(mode));
    }
    // `user[:group]`, as upstream's `ParseOwner`.
    let mut parts = owner.splitn(2, ':');
    if let Some(user) = parts.next().map(str::trim).filter(|u| !u.is_empty()) {
        entry.insert("user".into(), json!({ "name": user }));
    }
    if let Some(group) = parts.next().map(str::trim).filter(|g| !g.is_empty()) {
        entry.insert("group".into(), json!({ "name": group }));
    }
    if append {
        entry.insert("append".into(), json!(true));
    }
    Value::Object(entry)
}

fn user(user: &User) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), json!(user.name));
    if let Some(gecos) = &user.gecos {
        entry.insert("gecos".into(), json!(gecos));
    }
    if let Some(groups) = &user.groups {
        let groups: Vec<&str> = groups.split(", ").collect();
        entry.insert("groups".into(), json!(groups));
    }
    if let Some(home_dir) = &user.home_dir {
        entry.insert("homeDir".into(), json!(home_dir));
    }
    if let Some(shell) = &user.shell {
        entry.insert("shell".into(), json!(shell));
    }
    if let Some(password_hash) = &user.passwd {
        entry.insert("passwordHash".into(), json!(password_hash));
    }
    if let Some(primary_group) = &user.primary_group {
        entry.insert("primaryGroup".into(), json!(primary_group));
    }
    if !user.ssh_authorized_keys.is_empty() {
        entry.insert("sshAuthorizedKeys".into(), json!(user.ssh_authorized_keys));
    }
    Value::Object(entry)
}

/// The systemd mount unit name of a mount point (upstream `MountpointName`: `/var/lib/etcd`
/// is `var-lib-etcd`).
fn mount_unit_name(mount_point: &str) -> String {
    let name = mount_point.replace('/', "-");
    format!("{}.mount", name.trim_start_matches('-'))
}

/// The script `kubeadm.service` runs (upstream's `/etc/kubeadm.sh`).
fn kubeadm_script(config: &IgnitionConfig<'_>, command: KubeadmCommand) -> String {
    let subcommand = match command {
        KubeadmCommand::Init => "init",
        KubeadmCommand::Join => "join",
    };
    let verbosity = config
        .verbosity
        .map(|level| format!(" --v {level}"))
        .unwrap_or_default();
    let mut script = String::from("#!/bin/bash\nset -e\n");
    for command in config.pre_kubeadm_commands {
        script.push_str(command);
        script.push('\n');
    }
    script.push_str(&format!(
        "\nkubeadm {subcommand} --config {KUBEADM_CONFIG_PATH}{verbosity}\n"
    ));
    script.push_str(&format!(
        "mkdir -p /run/cluster-api && echo success > {SENTINEL_PATH}\n"
    ));
    script.push_str(&format!("mv {KUBEADM_CONFIG_PATH} /tmp/\n"));
    for command in config.post_kubeadm_commands {
        script.push_str(command);
        script.push('\n');
    }
    script
}

/// The Ignition config (JSON) that runs `command` with `config.kubeadm_config`. Files with
/// `base64` encoding are decoded; one that does not decode is an error naming its path.
pub fn render(config: &IgnitionConfig<'_>, command: KubeadmCommand) -> Result<String, String> {
    let mut files = Vec::new();
    for user in &config.users {
        if let Some(sudo) = &user.sudo {
            files.push(file(
                &format!("/etc/sudoers.d/{}", user.name),
                format!("{} {sudo}\n", user.name).as_bytes(),
                Some(0o600),
                "",
                false,
            ));
        }
    }
    let password_users: Vec<&str> = config
        .users
        .iter()
        .filter(|user| user.lock_password == Some(false))
        .map(|user| user.name.as_str())
        .collect();
    if !password_users.is_empty() {
        files.push(file(
            "/etc/ssh/sshd_config",
            format!(
                "{SSHD_CONFIG}{}\n  PasswordAuthentication yes\n",
                password_users.join(",")
            )
            .as_bytes(),
            Some(0o600),
            "",
            false,
        ));
    }
    for write_file in &config.files {
        let contents = match write_file.encoding {
            Some(Encoding::Base64) => base64::engine::general_purpose::STANDARD
                .decode(write_file.content.trim())
                .map_err(|error| {
                    format!("file {}: content is not base64 ({error})", write_file.path)
                })?,
            _ => write_file.content.clone().into_bytes(),
        };
        files.push(file(
            &write_file.path,
            &contents,
            mode(&write_file.permissions),
            &write_file.owner,
            write_file.append,
        ));
    }
    files.push(file(
        KUBEADM_SCRIPT_PATH,
        kubeadm_script(config, command).as_bytes(),
        Some(0o700),
        "",
        false,
    ));
    // Upstream's template starts the file with a document separator; Corral's kubeadm YAML
    // starts every document with one already.
    let kubeadm_config = if config.kubeadm_config.starts_with("---") {
        config.kubeadm_config.clone()
    } else {
        format!("---\n{}", config.kubeadm_config)
    };
    files.push(file(
        KUBEADM_CONFIG_PATH,
        kubeadm_config.as_bytes(),
        Some(0o600),
        "",
        false,
    ));
    let ntp_enabled = config.ntp.is_some_and(|ntp| ntp.enabled == Some(true));
    if let Some(ntp) = config.ntp.filter(|_| ntp_enabled)
        && !ntp.servers.is_empty()
    {
        let mut conf = String::from("# Common pool\n");
        for server in &ntp.servers {
            conf.push_str(&format!("server {server}\n"));
        }
        conf.push_str(NTP_CONF_TAIL);
        files.push(file(
            "/etc/ntp.conf",
            conf.as_bytes(),
            Some(0o644),
            "",
            false,
        ));
    }

    let mut units =
        vec![json!({ "name": "kubeadm.service", "enabled": true, "contents": KUBEADM_UNIT })];
    if ntp_enabled {
        units.push(json!({ "name": "ntpd.service", "enabled": true }));
    }
    let devices_by_label = |label: &str| {
        config.disk_setup.and_then(|disk_setup| {
            disk_setup
                .filesystems
                .iter()
                .find(|fs| fs.label.as_deref() == Some(label))
                .map(|fs| fs.device.clone())
        })
    };
    for mount in config.mounts {
        let (Some(label), Some(mount_point)) = (mount.first(), mount.get(1)) else {
            continue;
        };
        let options = mount.get(2..).unwrap_or_default().join(",");
        let device = devices_by_label(label).unwrap_or_default();
        units.push(json!({
            "name": mount_unit_name(mount_point),
            "enabled": true,
            "contents": format!(
                "[Unit]\nDescription = Mount {label}\n\n[Mount]\nWhat={device}\nWhere={mount_point}\nOptions={options}\n\n[Install]\nWantedBy=multi-user.target\n"
            ),
        }));
    }

    let mut storage = Map::new();
    if let Some(disk_setup) = config.disk_setup {
        if !disk_setup.partitions.is_empty() {
            let disks: Vec<Value> = disk_setup
                .partitions
                .iter()
                .map(|partition| {
                    let mut disk = Map::new();
                    disk.insert("device".into(), json!(partition.device));
                    if let Some(overwrite) = partition.overwrite {
                        disk.insert("wipeTable".into(), json!(overwrite));
                    }
                    if partition.layout == Some(true) {
                        disk.insert("partitions".into(), json!([{}]));
                    }
                    Value::Object(disk)
                })
                .collect();
            storage.insert("disks".into(), Value::Array(disks));
        }
        if !disk_setup.filesystems.is_empty() {
            let filesystems: Vec<Value> = disk_setup
                .filesystems
                .iter()
                .map(|fs| {
                    let label = fs.label.clone().unwrap_or_default();
                    let mut mount = Map::new();
                    mount.insert("device".into(), json!(fs.device));
                    mount.insert("format".into(), json!(fs.filesystem));
                    mount.insert("wipeFilesystem".into(), json!(fs.overwrite == Some(true)));
                    if !label.is_empty() {
                        mount.insert("label".into(), json!(label));
                    }
                    if !fs.extra_opts.is_empty() {
                        mount.insert("options".into(), json!(fs.extra_opts));
                    }
                    json!({ "name": label, "mount": mount })
                })
                .collect();
            storage.insert("filesystems".into(), Value::Array(filesystems));
        }
    }
    storage.insert("files".into(), Value::Array(files));

    let mut passwd = Map::new();
    if !config.users.is_empty() {
        passwd.insert(
            "users".into(),
            Value::Array(config.users.iter().map(user).collect()),
        );
    }
    let document = json!({
        "ignition": {
            "config": {},
            "security": { "tls": {} },
            "timeouts": {},
            "version": IGNITION_VERSION,
        },
        "networkd": {},
        "passwd": passwd,
        "storage": storage,
        "systemd": { "units": units },
    });
    Ok(serde_json::to_string(&document).expect("JSON serializes"))
}
