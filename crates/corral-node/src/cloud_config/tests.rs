use std::collections::BTreeMap;

use corral_kubeadm::api::bootstrap::Encoding;
use corral_kubeadm::bootstrap::cloud_init::{self, KubeadmCommand, WriteFile as Written};

use super::*;

fn metadata() -> BTreeMap<&'static str, String> {
    BTreeMap::from([("local_hostname", "demo-cp-1".to_owned())])
}

/// Bootstrap data as the kubeadm bootstrap provider renders it.
fn bootstrap_data(command: KubeadmCommand) -> String {
    let pre = vec!["echo before".to_owned()];
    let config = cloud_init::CloudConfig {
        files: vec![
            Written {
                permissions: "0600".into(),
                ..Written::root("/etc/kubernetes/pki/ca.key", "KEY".into())
            },
            Written {
                encoding: Some(Encoding::Base64),
                ..Written::root("/etc/motd", "aGVsbG8gZnJvbSBiNjQ=".into())
            },
            Written::root(
                cloud_init::INIT_CONFIG_PATH,
                "nodeRegistration:\n  name: '{{ ds.meta_data.local_hostname }}'\n".into(),
            ),
        ],
        pre_kubeadm_commands: &pre,
        ..Default::default()
    };
    cloud_init::render(&config, command)
}

#[test]
fn files_are_written_under_the_root_decoded_with_their_permissions() {
    let root = tempfile::tempdir().unwrap();
    let config = CloudConfig::parse(&bootstrap_data(KubeadmCommand::Init), &metadata()).unwrap();
    config.write_files(root.path()).unwrap();
    let key = root.path().join("etc/kubernetes/pki/ca.key");
    assert_eq!(std::fs::read_to_string(&key).unwrap(), "KEY");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("etc/motd")).unwrap(),
        "hello from b64"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("run/kubeadm/kubeadm.yaml")).unwrap(),
        "nodeRegistration:\n  name: 'demo-cp-1'\n",
        "the Jinja variable is filled from the metadata"
    );
}

#[test]
fn the_kubeadm_commands_are_recognised_and_the_rest_kept_as_they_are() {
    let init = CloudConfig::parse(&bootstrap_data(KubeadmCommand::Init), &metadata()).unwrap();
    assert_eq!(
        init.commands(),
        vec![
            Command::Other("echo before".into()),
            Command::KubeadmInit {
                config: cloud_init::INIT_CONFIG_PATH.into()
            },
        ]
    );
    let join = CloudConfig::parse(&bootstrap_data(KubeadmCommand::Join), &metadata()).unwrap();
    assert_eq!(
        join.commands()[1],
        Command::KubeadmJoin {
            config: cloud_init::JOIN_CONFIG_PATH.into()
        }
    );
}

#[test]
fn bad_bootstrap_data_says_what_is_wrong() {
    let unknown = bootstrap_data(KubeadmCommand::Init).replace("local_hostname", "zone");
    assert_eq!(
        CloudConfig::parse(&unknown, &metadata())
            .unwrap_err()
            .to_string(),
        "the bootstrap data uses {{ ds.meta_data.zone }}, which the machine's metadata does not have"
    );
    assert!(matches!(
        CloudConfig::parse("{\"ignition\": {}}", &metadata()),
        Err(Error::NotCloudConfig)
    ));
    let escaping = "#cloud-config\nwrite_files:\n- path: /etc/../../outside\n  content: x\n";
    let config = CloudConfig::parse(escaping, &metadata()).unwrap();
    let root = tempfile::tempdir().unwrap();
    assert_eq!(
        config.write_files(root.path()).unwrap_err().to_string(),
        "write_files /etc/../../outside: the path leaves the machine's root (`..`)"
    );
    let encoding = "#cloud-config\nwrite_files:\n- path: /x\n  encoding: rot13\n  content: x\n";
    assert_eq!(
        CloudConfig::parse(encoding, &metadata())
            .unwrap()
            .write_files(root.path())
            .unwrap_err()
            .to_string(),
        "write_files /x: encoding \"rot13\" is not one of cloud-init's"
    );
}
