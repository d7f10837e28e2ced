use super::{DataDirLock, Holder, LockError};

#[test]
fn a_second_lock_on_a_held_data_dir_fails_and_names_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let held = DataDirLock::acquire(dir.path()).unwrap();
    held.record_url("http://127.0.0.1:6443").unwrap();
    // flock conflicts between two opens of the file even within one process.
    let error = DataDirLock::acquire(dir.path()).unwrap_err();
    let LockError::InUse { holder, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(
        holder,
        &Holder {
            pid: Some(std::process::id()),
            url: Some("http://127.0.0.1:6443".into()),
        }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "{} is in use by corral (pid {}, listening on http://127.0.0.1:6443); stop it first, or use another --data-dir",
            dir.path().display(),
            std::process::id()
        )
    );
}

#[test]
fn a_released_lock_can_be_taken_again_and_its_old_contents_are_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let held = DataDirLock::acquire(dir.path()).unwrap();
    held.record_url("http://127.0.0.1:40000/a-longer-url-than-the-next")
        .unwrap();
    drop(held);
    let again = DataDirLock::acquire(dir.path()).unwrap();
    let text = std::fs::read_to_string(dir.path().join(super::LOCK_FILE)).unwrap();
    assert_eq!(text, format!("pid: {}\n", std::process::id()));
    drop(again);
}

#[test]
fn a_holder_still_starting_or_unreadable_is_still_named() {
    assert_eq!(
        Holder::parse("pid: 12\n").to_string(),
        "corral (pid 12, starting)"
    );
    assert_eq!(
        Holder::parse("").to_string(),
        "another corral (pid unknown, starting)"
    );
}
