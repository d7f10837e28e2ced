use super::prefix_end;

#[test]
fn prefix_end_bumps_the_last_byte() {
    assert_eq!(prefix_end("/registry/").as_deref(), Some("/registry0"));
    assert_eq!(prefix_end(""), None);
}
