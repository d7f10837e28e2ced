//! The bootstrap data in cloud-init's `#cloud-config` format, as upstream's CABPK writes it
//! (`bootstrap/kubeadm/internal/cloudinit/`): a Jinja-templated cloud-config (so that kubeadm
//! configurations may use `{{ ds.meta_data.* }}`) whose `write_files` carry the user's files,
//! the cluster certificates a control plane machine needs and kubeadm's configuration, and
//! whose `runcmd` runs the pre-kubeadm commands, `kubeadm init` or `kubeadm join`, then the
//! post-kubeadm commands. A successful kubeadm run writes
//! `/run/cluster-api/bootstrap-success.complete`, the sentinel of the bootstrap contract.
//!
//! Pure functions: files and passwords from Secrets are resolved by the caller.

use serde_json::{Map, Value, json};

use crate::api::bootstrap::{DiskSetup, Encoding, Ntp, PartitionTableType, User};

/// The path of kubeadm's configuration on the first control plane machine.
pub const INIT_CONFIG_PATH: &str = "/run/kubeadm/kubeadm.yaml";

/// The path of kubeadm's configuration on joining machines.
pub const JOIN_CONFIG_PATH: &str = "/run/kubeadm/kubeadm-join-config.yaml";

/// The file whose existence says that kubeadm succeeded (the bootstrap contract's sentinel).
pub const SENTINEL_PATH: &str = "/run/cluster-api/bootstrap-success.complete";

/// A file cloud-init writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteFile {
    pub path: String,
    pub owner: String,
    pub permissions: String,
    pub encoding: Option<Encoding>,
    pub append: bool,
    pub content: String,
}

impl WriteFile {
    /// A file of root's, readable by root's group, as upstream writes kubeadm's and the
    /// certificates.
    pub fn root(path: &str, content: String) -> WriteFile {
        WriteFile {
            path: path.into(),
            owner: "root:root".into(),
            permissions: "0640".into(),
            encoding: None,
            append: false,
            content,
        }
    }
}

/// Whether the machine initializes the cluster or joins it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KubeadmCommand {
    Init,
    Join,
}

/// Everything a machine's cloud-config says.
#[derive(Clone, Debug, Default)]
pub struct CloudConfig<'a> {
    /// The user's files (contents resolved), then the certificates, then kubeadm's
    /// configuration.
    pub files: Vec<WriteFile>,
    pub boot_commands: &'a [String],
    pub pre_kubeadm_commands: &'a [String],
    pub post_kubeadm_commands: &'a [String],
    /// The users, with passwords resolved.
    pub users: Vec<User>,
    pub ntp: Option<&'a Ntp>,
    pub disk_setup: Option<&'a DiskSetup>,
    pub mounts: &'a [Vec<String>],
    /// `spec.verbosity`, kubeadm's `--v`.
    pub verbosity: Option<i32>,
}

/// The cloud-config that runs `command` with the configuration at its path, which must be among
/// `config.files`.
pub fn render(config: &CloudConfig<'_>, command: KubeadmCommand) -> String {
    let mut files = config.files.clone();
    // kubeadm's sentinel goes into /run/cluster-api; a file there creates the directory, which
    // also works where `mkdir -p` does not (Windows).
    files.push(WriteFile::root(
        "/run/cluster-api/placeholder",
        "This placeholder file is used to create the /run/cluster-api sub directory in a way \
         that is compatible with both Linux and Windows (mkdir -p /run/cluster-api does not \
         work with Windows)"
            .into(),
    ));
    let verbosity = config
        .verbosity
        .map(|level| format!(" --v {level}"))
        .unwrap_or_default();
    let kubeadm = match command {
        KubeadmCommand::Init => format!("kubeadm init --config {INIT_CONFIG_PATH}{verbosity}"),
        KubeadmCommand::Join => format!("kubeadm join --config {JOIN_CONFIG_PATH}{verbosity}"),
    };
    let mut runcmd: Vec<String> = config.pre_kubeadm_commands.to_vec();
    runcmd.push(format!("{kubeadm} && echo success > {SENTINEL_PATH}"));
    runcmd.extend(config.post_kubeadm_commands.iter().cloned());

    let mut sections: Vec<(&str, Value)> = vec![
        (
            "write_files",
            Value::Array(files.iter().map(write_file).collect()),
        ),
        ("runcmd", json!(runcmd)),
    ];
    if !config.boot_commands.is_empty() {
        sections.push(("bootcmd", json!(config.boot_commands)));
    }
    if let Some(ntp) = config.ntp {
        let mut section = Map::new();
        if let Some(enabled) = ntp.enabled {
            section.insert("enabled".into(), json!(enabled));
        }
        if !ntp.servers.is_empty() {
            section.insert("servers".into(), json!(ntp.servers));
        }
        sections.push(("ntp", Value::Object(section)));
    }
    if !config.users.is_empty() {
        sections.push((
            "users",
            Value::Array(config.users.iter().map(user).collect()),
        ));
    }
    if let Some(disk_setup) = config.disk_setup {
        if !disk_setup.partitions.is_empty() {
            sections.push(("disk_setup", disks(disk_setup)));
        }
        if !disk_setup.filesystems.is_empty() {
            sections.push(("fs_setup", filesystems(disk_setup)));
        }
    }
    if !config.mounts.is_empty() {
        sections.push(("mounts", json!(config.mounts)));
    }

    let mut text = String::from("## template: jinja\n#cloud-config\n");
    for (key, value) in sections {
        let mut section = Map::new();
        section.insert(key.into(), value);
        text.push('\n');
        text.push_str(&serde_yaml::to_string(&section).expect("JSON values serialize as YAML"));
    }
    text
}

fn write_file(file: &WriteFile) -> Value {
    let mut entry = Map::new();
    entry.insert("path".into(), json!(file.path));
    entry.insert("owner".into(), json!(file.owner));
    entry.insert("permissions".into(), json!(file.permissions));
    if let Some(encoding) = file.encoding {
        // cloud-init's names for upstream's encodings.
        let name = match encoding {
            Encoding::Base64 => "b64",
            Encoding::Gzip => "gzip",
            Encoding::GzipBase64 => "gz+b64",
        };
        entry.insert("encoding".into(), json!(name));
    }
    if file.append {
        entry.insert("append".into(), json!(true));
    }
    entry.insert("content".into(), json!(file.content));
    Value::Object(entry)
}

fn user(user: &User) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), json!(user.name));
    let mut text = |key: &str, value: &Option<String>| {
        if let Some(value) = value {
            entry.insert(key.into(), json!(value));
        }
    };
    text("gecos", &user.gecos);
    text("groups", &user.groups);
    text("homedir", &user.home_dir);
    text("passwd", &user.passwd);
    text("primary_group", &user.primary_group);
    text("shell", &user.shell);
    text("sudo", &user.sudo);
    if let Some(inactive) = user.inactive {
        entry.insert("inactive".into(), json!(inactive));
    }
    if let Some(lock) = user.lock_password {
        entry.insert("lock_passwd".into(), json!(lock));
    }
    if !user.ssh_authorized_keys.is_empty() {
        entry.insert(
            "ssh_authorized_keys".into(),
            json!(user.ssh_authorized_keys),
        );
    }
    Value::Object(entry)
}

/// cloud-init's `disk_setup`: one entry per device.
fn disks(disk_setup: &DiskSetup) -> Value {
    let mut devices = Map::new();
    for partition in &disk_setup.partitions {
        let mut entry = Map::new();
        let table_type = match partition.table_type {
            Some(PartitionTableType::Gpt) => "gpt",
            _ => "mbr",
        };
        entry.insert("table_type".into(), json!(table_type));
        let layout = if partition.disk_layout.is_empty() {
            json!(partition.layout.unwrap_or(false))
        } else {
            Value::Array(
                partition
                    .disk_layout
                    .iter()
                    .map(|spec| match &spec.partition_type {
                        Some(kind) => json!([spec.percentage, partition_type_code(kind)]),
                        None => json!(spec.percentage),
                    })
                    .collect(),
            )
        };
        entry.insert("layout".into(), layout);
        if let Some(overwrite) = partition.overwrite {
            entry.insert("overwrite".into(), json!(overwrite));
        }
        devices.insert(partition.device.clone(), Value::Object(entry));
    }
    Value::Object(devices)
}

/// The MBR type code cloud-init takes for a named partition type; a GPT GUID is passed as it
/// is.
fn partition_type_code(kind: &str) -> String {
    match kind {
        "Linux" => "83",
        "LinuxSwap" => "82",
        "LinuxRAID" => "fd",
        "LVM" => "8e",
        "Fat32" => "0c",
        "NTFS" => "07",
        "LinuxExtended" => "05",
        guid => guid,
    }
    .to_string()
}

/// cloud-init's `fs_setup`.
fn filesystems(disk_setup: &DiskSetup) -> Value {
    Value::Array(
        disk_setup
            .filesystems
            .iter()
            .map(|filesystem| {
                let mut entry = Map::new();
                entry.insert("device".into(), json!(filesystem.device));
                entry.insert("filesystem".into(), json!(filesystem.filesystem));
                if let Some(label) = &filesystem.label {
                    entry.insert("label".into(), json!(label));
                }
                if let Some(partition) = &filesystem.partition {
                    entry.insert("partition".into(), json!(partition));
                }
                if let Some(overwrite) = filesystem.overwrite {
                    entry.insert("overwrite".into(), json!(overwrite));
                }
                if let Some(replace) = &filesystem.replace_fs {
                    entry.insert("replace_fs".into(), json!(replace));
                }
                if !filesystem.extra_opts.is_empty() {
                    entry.insert("extra_opts".into(), json!(filesystem.extra_opts));
                }
                Value::Object(entry)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests;
