use super::*;

#[test]
fn versions_parse_tolerantly_and_skew_is_one_minor_either_way() {
    assert_eq!(major_minor("v1.35.0"), Some((1, 35)));
    assert_eq!(major_minor("1.34"), Some((1, 34)));
    assert_eq!(major_minor("v1.35.0-rc.1+abc"), Some((1, 35)));
    assert_eq!(major_minor("v1.x"), None);
    assert_eq!(major_minor(""), None);
    assert!(is_supported_version_skew((1, 35), (1, 34)));
    assert!(is_supported_version_skew((1, 35), (1, 36)));
    assert!(is_supported_version_skew((1, 35), (1, 35)));
    assert!(!is_supported_version_skew((1, 35), (1, 33)));
    assert!(!is_supported_version_skew((1, 35), (2, 35)));
}
