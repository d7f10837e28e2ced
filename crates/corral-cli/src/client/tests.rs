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

/// A kubeconfig of two contexts, `a` (current, namespace `ns-a`) and `b` (namespace `ns-b`),
/// on two servers; `current` replaces the current context.
fn two_contexts(dir: &std::path::Path, current: &str) -> super::KubeconfigSource {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster:\n    server: http://127.0.0.1:1111\n- name: b\n  cluster:\n    server: http://127.0.0.1:2222\ncontexts:\n- name: a\n  context:\n    cluster: a\n    user: u\n    namespace: ns-a\n- name: b\n  context:\n    cluster: b\n    user: u\n    namespace: ns-b\ncurrent-context: {current}\nusers:\n- name: u\n  user: {{}}\n"
        ),
    )
    .unwrap();
    KubeconfigSource {
        flag: Some(path),
        env: None,
        home: None,
    }
}

#[tokio::test]
async fn kubeconfig_context_picks_the_server_and_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let source = two_contexts(dir.path(), "a");
    let current = super::Connection::open(&source).await.unwrap();
    assert_eq!(current.server, "http://127.0.0.1:1111");
    assert_eq!(current.default_namespace, "ns-a");
    let chosen = super::Connection::open_context(&source, Some("b"))
        .await
        .unwrap();
    assert_eq!(chosen.server, "http://127.0.0.1:2222");
    assert_eq!(chosen.default_namespace, "ns-b");
}

#[tokio::test]
async fn an_unknown_context_is_named_with_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let source = two_contexts(dir.path(), "a");
    let Err(error) = super::Connection::open_context(&source, Some("c")).await else {
        panic!("context c does not exist");
    };
    assert!(matches!(error, crate::Error::Usage(_)), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("has no context c (it has: a, b)"),
        "{error}"
    );

    let source = two_contexts(dir.path(), "gone");
    let Err(error) = super::Connection::open(&source).await else {
        panic!("the current context does not exist");
    };
    assert!(
        matches!(error, crate::Error::ReadKubeconfig { .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("its current-context gone is not one of its contexts (a, b)"),
        "{error}"
    );
}
