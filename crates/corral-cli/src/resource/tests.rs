use super::*;

#[test]
fn kinds_parse_by_short_singular_plural_and_qualified_names() {
    let all = [Kind::MachineDeployment, Kind::KubeadmControlPlane];
    for text in [
        "md/a",
        "MachineDeployment/a",
        "machinedeployments/a",
        "machinedeployment.cluster.x-k8s.io/a",
    ] {
        assert_eq!(
            ResourceRef::parse(text, &all).unwrap().kind,
            Kind::MachineDeployment,
            "{text}"
        );
    }
    let kcp = ResourceRef::parse("kcp/cp", &all).unwrap();
    assert_eq!(
        kcp,
        ResourceRef {
            kind: Kind::KubeadmControlPlane,
            name: "cp".into()
        }
    );
}

#[test]
fn other_kinds_and_malformed_names_are_usage_errors_saying_what_is_accepted() {
    for text in ["md", "md/", "pod/a", "md/a/b", "kcp/a"] {
        match ResourceRef::parse(text, &[Kind::MachineDeployment]) {
            Err(Error::Usage(message)) => assert!(message.contains("md/NAME"), "{message}"),
            other => panic!("{text}: {other:?}"),
        }
    }
}
