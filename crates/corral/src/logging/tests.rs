use std::io::Write;
use std::path::Path;

use super::{RotatingFile, describe_problems};

#[test]
fn a_full_log_moves_to_dot_one_and_only_keep_old_ones_stay() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corral.log");
    let mut log = RotatingFile::open(path.clone(), 10, 2).unwrap();
    for line in ["first...\n", "second..\n", "third...\n", "fourth..\n"] {
        log.write_all(line.as_bytes()).unwrap();
    }
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).ok();
    assert_eq!(read("corral.log").as_deref(), Some("fourth..\n"));
    assert_eq!(read("corral.log.1").as_deref(), Some("third...\n"));
    assert_eq!(read("corral.log.2").as_deref(), Some("second..\n"));
    assert_eq!(read("corral.log.3"), None);
}

#[test]
fn a_reopened_log_counts_what_it_holds_already() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corral.log");
    std::fs::write(&path, "from before\n").unwrap();
    let mut log = RotatingFile::open(path.clone(), 16, 1).unwrap();
    log.write_all(b"now\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "from before\nnow\n"
    );
    log.write_all(b"later\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "later\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("corral.log.1")).unwrap(),
        "from before\nnow\n"
    );
}

#[test]
fn problems_are_counted_in_words_with_the_log_to_read() {
    let log = Path::new(".corral/corral.log");
    assert_eq!(describe_problems(0, 0, log), None);
    assert_eq!(
        describe_problems(1, 0, log).unwrap(),
        "1 warning — see .corral/corral.log"
    );
    assert_eq!(
        describe_problems(3, 2, log).unwrap(),
        "2 errors, 3 warnings — see .corral/corral.log"
    );
}
