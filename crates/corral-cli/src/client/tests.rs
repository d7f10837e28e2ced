use super::KubeconfigSource;

#[test]
fn the_flag_wins_even_when_the_file_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let source = KubeconfigSource {
        flag: Some(dir.path().join("missing")),
        env: Some(dir.path().join("other").into_os_string()),
        home: Some(dir.path().to_path_buf()),
    };
    assert_eq!(source.paths().unwrap(), vec![dir.path().join("missing")]);
}

#[test]
fn kubeconfig_lists_the_present_files_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::write(&a, "").unwrap();
    std::fs::write(&b, "").unwrap();
    let env = std::env::join_paths([b.clone(), dir.path().join("absent"), a.clone()]).unwrap();
    let source = KubeconfigSource {
        flag: None,
        env: Some(env),
        home: None,
    };
    assert_eq!(source.paths().unwrap(), vec![b, a]);
}

#[test]
fn home_kube_config_is_the_fallback() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".kube")).unwrap();
    std::fs::write(dir.path().join(".kube/config"), "").unwrap();
    let source = KubeconfigSource {
        flag: None,
        env: Some("".into()),
        home: Some(dir.path().to_path_buf()),
    };
    assert_eq!(
        source.paths().unwrap(),
        vec![dir.path().join(".kube/config")]
    );
}

#[test]
fn no_kubeconfig_names_every_place_looked_at_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let source = KubeconfigSource {
        flag: None,
        env: Some(dir.path().join("gone").into_os_string()),
        home: Some(dir.path().to_path_buf()),
    };
    let message = source.paths().unwrap_err().to_string();
    assert!(
        message.contains(&dir.path().join("gone").display().to_string()),
        "{message}"
    );
    assert!(message.contains(".kube/config"), "{message}");
    assert!(message.contains("--kubeconfig"), "{message}");
    assert!(!message.contains('\n'), "{message}");
}
