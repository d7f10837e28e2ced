use super::*;

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("corral-directory-")
        .tempdir()
        .unwrap()
}

fn message(result: Result<impl std::fmt::Debug, Error>) -> String {
    result.expect_err("an error").to_string()
}

#[test]
fn every_document_of_every_file_is_read_and_empty_ones_are_skipped() {
    let dir = scratch();
    std::fs::write(
        dir.path().join("Cluster_default_a.yaml"),
        "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: a, namespace: default}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("more.yaml"),
        "---\napiVersion: v1\nkind: Secret\nmetadata: {name: a-kubeconfig, namespace: default}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: other}\n",
    )
    .unwrap();
    let objects = read_directory(dir.path()).unwrap();
    let read: Vec<String> = objects
        .iter()
        .map(|(file, object)| {
            format!(
                "{} {}",
                file.file_name().unwrap().to_string_lossy(),
                identity(object)
            )
        })
        .collect();
    assert_eq!(
        read,
        [
            "Cluster_default_a.yaml Cluster default/a",
            "more.yaml Secret default/a-kubeconfig",
            "more.yaml ConfigMap other/c",
        ]
    );
}

#[test]
fn a_file_that_is_not_an_object_is_named_with_the_field_it_lacks() {
    let dir = scratch();
    let file = dir.path().join("cluster.yaml");
    std::fs::write(
        &file,
        "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: a}\n",
    )
    .unwrap();
    let error = message(read_directory(dir.path()));
    assert!(
        error.contains(&format!(
            "{} holds an object without metadata.namespace",
            file.display()
        )),
        "{error}"
    );
    assert!(error.contains("nothing was restored"), "{error}");

    std::fs::write(&file, "kind: [unclosed").unwrap();
    let error = message(read_directory(dir.path()));
    assert!(error.contains("cluster.yaml is not YAML"), "{error}");

    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(dir.path().join("nested")).unwrap();
    let error = message(read_directory(dir.path()));
    assert!(error.contains("nested is a directory"), "{error}");
}

#[test]
fn a_missing_or_empty_directory_has_nothing_to_restore() {
    let dir = scratch();
    let error = message(read_directory(dir.path()));
    assert!(error.contains("holds no objects"), "{error}");
    let error = message(read_directory(&dir.path().join("missing")));
    assert!(error.contains("does not exist"), "{error}");
}

#[test]
fn the_backup_directory_must_exist_be_empty_and_a_directory() {
    let dir = scratch();
    check_writable_empty_directory(dir.path()).unwrap();
    // The write probe is gone again.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    let error = message(check_writable_empty_directory(&dir.path().join("missing")));
    assert!(
        error.contains("does not exist; create it (mkdir -p"),
        "{error}"
    );

    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let error = message(check_writable_empty_directory(&file));
    assert!(error.contains("is not a directory"), "{error}");
    let error = message(check_writable_empty_directory(dir.path()));
    assert!(error.contains("is not empty"), "{error}");
}

#[test]
fn files_are_named_as_upstream() {
    let key = super::super::ObjectKey {
        group: "cluster.x-k8s.io".into(),
        kind: "MachineDeployment".into(),
        namespace: "ns".into(),
        name: "md-0".into(),
    };
    assert_eq!(file_name(&key), "MachineDeployment_ns_md-0.yaml");
}
