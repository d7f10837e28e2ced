use serde_yaml::Value;

use super::*;
use crate::api::bootstrap::{Filesystem, Partition, PartitionSpec};

/// The cloud-config as data, after checking its two header lines.
fn parse(text: &str) -> Value {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("## template: jinja"));
    assert_eq!(lines.next(), Some("#cloud-config"));
    serde_yaml::from_str(text).unwrap()
}

#[test]
fn init_runs_kubeadm_init_between_the_users_commands_and_writes_the_sentinel() {
    let pre = vec!["echo pre".to_string()];
    let post = vec!["echo post".to_string()];
    let config = CloudConfig {
        files: vec![WriteFile::root(
            INIT_CONFIG_PATH,
            "kind: InitConfiguration\n".into(),
        )],
        pre_kubeadm_commands: &pre,
        post_kubeadm_commands: &post,
        verbosity: Some(5),
        ..Default::default()
    };
    let cloud_config = parse(&render(&config, KubeadmCommand::Init));
    let runcmd: Vec<&str> = cloud_config["runcmd"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|command| command.as_str().unwrap())
        .collect();
    assert_eq!(
        runcmd,
        [
            "echo pre",
            "kubeadm init --config /run/kubeadm/kubeadm.yaml --v 5 && echo success > /run/cluster-api/bootstrap-success.complete",
            "echo post",
        ]
    );
    let files = cloud_config["write_files"].as_sequence().unwrap();
    assert_eq!(files[0]["path"], "/run/kubeadm/kubeadm.yaml");
    assert_eq!(files[0]["owner"], "root:root");
    assert_eq!(files[0]["permissions"], "0640");
    assert_eq!(files[0]["content"], "kind: InitConfiguration\n");
    assert_eq!(files[1]["path"], "/run/cluster-api/placeholder");
    // Sections that have nothing to say are left out.
    for absent in [
        "bootcmd",
        "ntp",
        "users",
        "disk_setup",
        "fs_setup",
        "mounts",
    ] {
        assert!(cloud_config.get(absent).is_none(), "{absent}");
    }
}

#[test]
fn join_carries_users_ntp_disks_mounts_and_encoded_files_in_cloud_inits_names() {
    let boot = vec!["echo boot".to_string()];
    let ntp = Ntp {
        enabled: Some(true),
        servers: vec!["time.example.com".into()],
    };
    let disk_setup = DiskSetup {
        partitions: vec![Partition {
            device: "/dev/sdb".into(),
            disk_layout: vec![
                PartitionSpec {
                    percentage: 30,
                    partition_type: Some("LinuxSwap".into()),
                },
                PartitionSpec {
                    percentage: 70,
                    partition_type: None,
                },
            ],
            table_type: Some(PartitionTableType::Gpt),
            ..Default::default()
        }],
        filesystems: vec![Filesystem {
            device: "/dev/sdb1".into(),
            filesystem: "ext4".into(),
            label: Some("data".into()),
            ..Default::default()
        }],
    };
    let mounts = vec![vec!["LABEL=data".to_string(), "/data".to_string()]];
    let mut file = WriteFile::root("/etc/blob", "aGVsbG8=".into());
    file.encoding = Some(Encoding::GzipBase64);
    file.append = true;
    let config = CloudConfig {
        files: vec![file],
        boot_commands: &boot,
        users: vec![User {
            name: "ops".into(),
            lock_password: Some(true),
            ssh_authorized_keys: vec!["ssh-ed25519 AAAA".into()],
            home_dir: Some("/home/ops".into()),
            ..Default::default()
        }],
        ntp: Some(&ntp),
        disk_setup: Some(&disk_setup),
        mounts: &mounts,
        ..Default::default()
    };
    let cloud_config = parse(&render(&config, KubeadmCommand::Join));
    assert_eq!(
        cloud_config["runcmd"][0],
        "kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml && echo success > /run/cluster-api/bootstrap-success.complete"
    );
    assert_eq!(cloud_config["write_files"][0]["encoding"], "gz+b64");
    assert_eq!(cloud_config["write_files"][0]["append"], true);
    assert_eq!(cloud_config["bootcmd"][0], "echo boot");
    assert_eq!(cloud_config["ntp"]["servers"][0], "time.example.com");
    let user = &cloud_config["users"][0];
    assert_eq!(user["name"], "ops");
    assert_eq!(user["lock_passwd"], true);
    assert_eq!(user["homedir"], "/home/ops");
    assert_eq!(user["ssh_authorized_keys"][0], "ssh-ed25519 AAAA");
    let disk = &cloud_config["disk_setup"]["/dev/sdb"];
    assert_eq!(disk["table_type"], "gpt");
    assert_eq!(disk["layout"][0][0], 30);
    assert_eq!(disk["layout"][0][1], "82");
    assert_eq!(disk["layout"][1], 70);
    assert_eq!(cloud_config["fs_setup"][0]["label"], "data");
    assert_eq!(cloud_config["mounts"][0][1], "/data");
}
