use super::*;
use crate::api::bootstrap::{Filesystem, Partition};

/// The bytes of a `data:,` URL.
fn decode(url: &str) -> Vec<u8> {
    let encoded = url.strip_prefix("data:,").expect("a data URL");
    let bytes = encoded.as_bytes();
    let mut out = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            out.push(u8::from_str_radix(&encoded[index + 1..index + 3], 16).unwrap());
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    out
}

fn files(document: &Value) -> Vec<(String, Value)> {
    document["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| (file["path"].as_str().unwrap().to_string(), file.clone()))
        .collect()
}

fn content(document: &Value, path: &str) -> String {
    let (_, file) = files(document)
        .into_iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("{path} is written"));
    String::from_utf8(decode(file["contents"]["source"].as_str().unwrap())).unwrap()
}

#[test]
fn data_urls_escape_everything_but_unreserved_characters() {
    assert_eq!(data_url(b"a b/c\n%"), "data:,a%20b%2Fc%0A%25");
    assert_eq!(
        decode(&data_url("ünïcode\t!".as_bytes())),
        "ünïcode\t!".as_bytes()
    );
}

#[test]
fn an_init_machine_gets_kubeadm_its_files_users_and_units_as_ignition_2_3() {
    let pre = vec!["echo pre".to_string()];
    let post = vec!["echo post".to_string()];
    let ntp = Ntp {
        enabled: Some(true),
        servers: vec!["time.example.com".into()],
    };
    let disk_setup = DiskSetup {
        filesystems: vec![Filesystem {
            device: "/dev/sdb1".into(),
            filesystem: "ext4".into(),
            label: Some("etcd_disk".into()),
            ..Default::default()
        }],
        partitions: vec![Partition {
            device: "/dev/sdb".into(),
            layout: Some(true),
            overwrite: Some(false),
            ..Default::default()
        }],
    };
    let mounts = vec![vec![
        "etcd_disk".to_string(),
        "/var/lib/etcd".to_string(),
        "defaults".to_string(),
        "noatime".to_string(),
    ]];
    let config = IgnitionConfig {
        files: vec![
            WriteFile {
                path: "/etc/motd".into(),
                owner: "core:wheel".into(),
                permissions: "0644".into(),
                encoding: None,
                append: false,
                content: "welcome".into(),
            },
            WriteFile {
                path: "/etc/binary".into(),
                owner: "root".into(),
                permissions: "0600".into(),
                encoding: Some(Encoding::Base64),
                append: true,
                content: "aGVsbG8=".into(),
            },
        ],
        pre_kubeadm_commands: &pre,
        post_kubeadm_commands: &post,
        users: vec![User {
            name: "ops".into(),
            groups: Some("wheel, docker".into()),
            sudo: Some("ALL=(ALL) NOPASSWD:ALL".into()),
            lock_password: Some(false),
            passwd: Some("$6$hash".into()),
            ssh_authorized_keys: vec!["ssh-ed25519 AAAA".into()],
            ..Default::default()
        }],
        ntp: Some(&ntp),
        disk_setup: Some(&disk_setup),
        mounts: &mounts,
        verbosity: Some(5),
        kubeadm_config: "kind: ClusterConfiguration\n---\nkind: InitConfiguration\n".into(),
    };
    let document: Value =
        serde_json::from_str(&render(&config, KubeadmCommand::Init).unwrap()).unwrap();

    assert_eq!(document["ignition"]["version"], "2.3.0");
    assert_eq!(
        content(&document, "/etc/kubeadm.yml"),
        "---\nkind: ClusterConfiguration\n---\nkind: InitConfiguration\n"
    );
    let script = content(&document, "/etc/kubeadm.sh");
    let order: Vec<usize> = [
        "echo pre",
        "kubeadm init --config /etc/kubeadm.yml --v 5",
        "echo success > /run/cluster-api/bootstrap-success.complete",
        "mv /etc/kubeadm.yml /tmp/",
        "echo post",
    ]
    .iter()
    .map(|line| {
        script
            .find(line)
            .unwrap_or_else(|| panic!("{line} in {script}"))
    })
    .collect();
    assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{script}");

    let all = files(&document);
    let motd = &all.iter().find(|(p, _)| p == "/etc/motd").unwrap().1;
    assert_eq!(motd["mode"], 0o644);
    assert_eq!(motd["user"]["name"], "core");
    assert_eq!(motd["group"]["name"], "wheel");
    assert_eq!(motd["filesystem"], "root");
    let binary = &all.iter().find(|(p, _)| p == "/etc/binary").unwrap().1;
    assert_eq!(
        decode(binary["contents"]["source"].as_str().unwrap()),
        b"hello"
    );
    assert_eq!(binary["append"], true);
    assert_eq!(binary.get("group"), None);
    assert_eq!(
        content(&document, "/etc/sudoers.d/ops"),
        "ops ALL=(ALL) NOPASSWD:ALL\n"
    );
    assert!(content(&document, "/etc/ssh/sshd_config").contains("Match User ops"));
    assert!(content(&document, "/etc/ntp.conf").contains("server time.example.com"));

    let user = &document["passwd"]["users"][0];
    assert_eq!(user["name"], "ops");
    assert_eq!(user["groups"], json!(["wheel", "docker"]));
    assert_eq!(user["passwordHash"], "$6$hash");
    assert_eq!(user["sshAuthorizedKeys"], json!(["ssh-ed25519 AAAA"]));

    let units = document["systemd"]["units"].as_array().unwrap();
    let names: Vec<&str> = units.iter().map(|u| u["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["kubeadm.service", "ntpd.service", "var-lib-etcd.mount"]
    );
    assert!(
        units[0]["contents"]
            .as_str()
            .unwrap()
            .contains("ConditionPathExists=/etc/kubeadm.yml")
    );
    let mount = units[2]["contents"].as_str().unwrap();
    assert!(
        mount.contains("What=/dev/sdb1\nWhere=/var/lib/etcd\nOptions=defaults,noatime"),
        "{mount}"
    );

    assert_eq!(
        document["storage"]["disks"],
        json!([{ "device": "/dev/sdb", "wipeTable": false, "partitions": [{}] }])
    );
    assert_eq!(
        document["storage"]["filesystems"][0]["mount"]["format"],
        "ext4"
    );
    assert_eq!(document["storage"]["filesystems"][0]["name"], "etcd_disk");
}

#[test]
fn a_joining_machine_runs_kubeadm_join_and_bad_base64_names_the_file() {
    let config = IgnitionConfig {
        kubeadm_config: "kind: JoinConfiguration\n".into(),
        ..Default::default()
    };
    let document: Value =
        serde_json::from_str(&render(&config, KubeadmCommand::Join).unwrap()).unwrap();
    assert!(
        content(&document, "/etc/kubeadm.sh").contains("kubeadm join --config /etc/kubeadm.yml\n")
    );
    assert_eq!(document["passwd"], json!({}));

    let config = IgnitionConfig {
        files: vec![WriteFile {
            path: "/etc/broken".into(),
            encoding: Some(Encoding::Base64),
            content: "not base64!".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let error = render(&config, KubeadmCommand::Join).unwrap_err();
    assert!(error.contains("/etc/broken"), "{error}");
}

#[test]
fn what_ignition_cannot_do_is_refused_with_the_field_named() {
    let refused = |spec: KubeadmConfigSpec| unsupported(&spec).expect("refused");
    let mut spec = KubeadmConfigSpec::default();
    assert_eq!(unsupported(&spec), None);
    spec.ignition.container_linux_config.additional_config = Some("storage: {}".into());
    assert!(refused(spec).starts_with("spec.ignition.containerLinuxConfig.additionalConfig"));

    let spec = KubeadmConfigSpec {
        boot_commands: vec!["echo".into()],
        ..Default::default()
    };
    assert_eq!(
        refused(spec),
        "spec.bootCommands: not supported when spec.format is ignition"
    );

    let mut spec = KubeadmConfigSpec::default();
    spec.files.push(Default::default());
    spec.files.push(crate::api::bootstrap::File {
        encoding: Some(Encoding::GzipBase64),
        ..Default::default()
    });
    assert!(refused(spec).starts_with("spec.files[1].encoding"));

    let mut spec = KubeadmConfigSpec::default();
    spec.disk_setup.partitions.push(Partition {
        table_type: Some(PartitionTableType::Mbr),
        ..Default::default()
    });
    assert!(refused(spec).starts_with("spec.diskSetup.partitions[0].tableType"));

    let mut spec = KubeadmConfigSpec::default();
    spec.users.push(User {
        inactive: Some(true),
        ..Default::default()
    });
    assert!(refused(spec).starts_with("spec.users[0].inactive"));

    // What the controller checks: the above with format ignition, and spec.ignition only with it.
    let mut spec = KubeadmConfigSpec::default();
    spec.ignition.container_linux_config.strict = Some(true);
    assert_eq!(
        refusal(&spec).as_deref(),
        Some("spec.format: must be set to \"ignition\" if spec.ignition is set")
    );
    spec.format = Some(Format::Ignition);
    assert_eq!(refusal(&spec), None);
    spec.boot_commands.push("echo".into());
    assert!(refusal(&spec).unwrap().starts_with("spec.bootCommands"));
}
