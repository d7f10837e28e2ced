use super::*;

const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_NAME_PART_MESSAGE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn errors(result: Result<(), Vec<String>>) -> Vec<String> {
    result.expect_err("value should be invalid")
}

#[test]
fn dns1123_subdomain_accepts_valid_names() {
    for name in [
        "a",
        "0",
        "example.com",
        "a-b.c-d",
        "1.2.3",
        "a--b",
        &"a".repeat(253),
    ] {
        assert_eq!(is_dns1123_subdomain(name), Ok(()), "{name}");
    }
}

#[test]
fn dns1123_subdomain_rejects_bad_syntax_with_apimachinery_message() {
    for name in [
        "", "A", "-a", "a-", ".a", "a.", "a..b", "a_b", "a b", "é", "a/b", "a.-b",
    ] {
        assert_eq!(
            errors(is_dns1123_subdomain(name)),
            vec![SUBDOMAIN_MESSAGE],
            "{name:?}"
        );
    }
}

#[test]
fn dns1123_subdomain_reports_length_before_syntax() {
    assert_eq!(
        errors(is_dns1123_subdomain(&"a".repeat(254))),
        vec!["must be no more than 253 characters"]
    );
    assert_eq!(
        errors(is_dns1123_subdomain(&format!("{}-", "a".repeat(254)))),
        vec!["must be no more than 253 characters", SUBDOMAIN_MESSAGE]
    );
}

#[test]
fn dns1123_label_accepts_valid_labels() {
    for name in ["a", "default", "kube-system", "0abc", &"z".repeat(63)] {
        assert_eq!(is_dns1123_label(name), Ok(()), "{name}");
    }
}

#[test]
fn dns1123_label_says_dots_are_the_problem_for_subdomains() {
    assert_eq!(
        errors(is_dns1123_label("a.b")),
        vec!["must not contain dots"]
    );
}

#[test]
fn dns1123_label_rejects_bad_syntax_and_length() {
    for name in ["", "Abc", "a_b", "-a", "a-", "a..b"] {
        assert_eq!(
            errors(is_dns1123_label(name)),
            vec![LABEL_MESSAGE],
            "{name:?}"
        );
    }
    assert_eq!(
        errors(is_dns1123_label(&"a".repeat(64))),
        vec!["must be no more than 63 characters"]
    );
}

#[test]
fn dns1035_label_needs_a_leading_letter() {
    assert_eq!(is_dns1035_label("my-svc"), Ok(()));
    assert_eq!(
        errors(is_dns1035_label("1abc")),
        vec![
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
        ]
    );
}

#[test]
fn qualified_name_accepts_keys_with_and_without_prefix() {
    for key in [
        "app",
        "App_Name-1.x",
        "example.com/app",
        "cluster.x-k8s.io/cluster-name",
        "a/b",
        &"x".repeat(63),
        &format!("{}/{}", "p".repeat(253), "n".repeat(63)),
    ] {
        assert_eq!(is_qualified_name(key), Ok(()), "{key}");
    }
}

#[test]
fn qualified_name_reports_each_part() {
    assert_eq!(
        errors(is_qualified_name("")),
        vec!["name part must be non-empty", QUALIFIED_NAME_PART_MESSAGE]
    );
    assert_eq!(
        errors(is_qualified_name("/app")),
        vec!["prefix part must be non-empty"]
    );
    assert_eq!(
        errors(is_qualified_name("Example.com/app")),
        vec![format!("prefix part {SUBDOMAIN_MESSAGE}")]
    );
    assert_eq!(
        errors(is_qualified_name("example.com/")),
        vec!["name part must be non-empty", QUALIFIED_NAME_PART_MESSAGE]
    );
    assert_eq!(
        errors(is_qualified_name("-app")),
        vec![QUALIFIED_NAME_PART_MESSAGE]
    );
    assert_eq!(
        errors(is_qualified_name(&"x".repeat(64))),
        vec!["name part must be no more than 63 characters"]
    );
}

#[test]
fn qualified_name_with_two_slashes_gets_one_summary_message() {
    assert_eq!(
        errors(is_qualified_name("a/b/c")),
        vec![
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    );
}

#[test]
fn label_value_may_be_empty() {
    for value in ["", "v", "My_Value-1.0", &"v".repeat(63)] {
        assert_eq!(is_valid_label_value(value), Ok(()), "{value:?}");
    }
}

#[test]
fn label_value_rejects_bad_syntax_and_length() {
    for value in ["-v", "v-", "a b", "a/b", "ü"] {
        assert_eq!(
            errors(is_valid_label_value(value)),
            vec![LABEL_VALUE_MESSAGE],
            "{value:?}"
        );
    }
    assert_eq!(
        errors(is_valid_label_value(&"v".repeat(64))),
        vec!["must be no more than 63 characters"]
    );
}

#[test]
fn path_segment_names_exclude_dots_slashes_and_percent() {
    assert_eq!(is_valid_path_segment_name("a.b"), Ok(()));
    assert_eq!(is_valid_path_segment_name("..."), Ok(()));
    assert_eq!(is_valid_path_segment_name(""), Ok(()));
    assert_eq!(
        errors(is_valid_path_segment_name(".")),
        vec!["may not be '.'"]
    );
    assert_eq!(
        errors(is_valid_path_segment_name("..")),
        vec!["may not be '..'"]
    );
    assert_eq!(
        errors(is_valid_path_segment_name("a/b%c")),
        vec!["may not contain '/'", "may not contain '%'"]
    );
}

#[test]
fn path_segment_prefixes_may_be_dots() {
    assert_eq!(validate_path_segment_name(".", true), Ok(()));
    assert_eq!(validate_path_segment_name("..", true), Ok(()));
    assert_eq!(
        errors(validate_path_segment_name("a%", true)),
        vec!["may not contain '%'"]
    );
    assert_eq!(
        errors(validate_path_segment_name("..", false)),
        vec!["may not be '..'"]
    );
}

#[test]
fn generate_name_prefixes_may_end_with_a_dash() {
    assert_eq!(name_is_dns_subdomain("web-", true), Ok(()));
    assert_eq!(name_is_dns_label("web-", true), Ok(()));
    assert_eq!(name_is_dns_subdomain("a-", true), Ok(()));
    assert_eq!(
        errors(name_is_dns_subdomain("web-", false)),
        vec![SUBDOMAIN_MESSAGE]
    );
    // Only the trailing dash is forgiven.
    assert_eq!(
        errors(name_is_dns_subdomain("-web-", true)),
        vec![SUBDOMAIN_MESSAGE]
    );
    assert_eq!(
        errors(name_is_dns_subdomain("Web-", true)),
        vec![SUBDOMAIN_MESSAGE]
    );
    // A lone dash is not masked, as in apimachinery.
    assert_eq!(
        errors(name_is_dns_subdomain("-", true)),
        vec![SUBDOMAIN_MESSAGE]
    );
    // Non-ASCII stays invalid when the mask would split a character.
    assert_eq!(
        errors(name_is_dns_subdomain("é-", true)),
        vec![SUBDOMAIN_MESSAGE]
    );
}

#[test]
fn generate_name_prefixes_follow_the_label_rule_for_namespaces() {
    assert_eq!(
        errors(name_is_dns_label("a.b-", true)),
        vec!["must not contain dots"]
    );
}

#[test]
fn generated_name_base_keeps_at_most_58_bytes() {
    assert_eq!(MAX_GENERATED_NAME_BASE_LENGTH, 58);
    assert_eq!(generated_name_base("web-"), "web-");
    let exact = "a".repeat(58);
    assert_eq!(generated_name_base(&exact), exact);
    let long = format!("{}-tail", "b".repeat(60));
    assert_eq!(generated_name_base(&long), "b".repeat(58));
}

#[test]
fn generated_name_base_never_splits_a_character() {
    // 57 ASCII bytes, then a two-byte character that straddles the 58-byte cut.
    let name = format!("{}é-", "a".repeat(57));
    assert_eq!(generated_name_base(&name), "a".repeat(57));
}

#[test]
fn regex_error_without_examples_has_no_example_list() {
    assert_eq!(
        regex_error("bad", "x+", &[]),
        "bad (regex used for validation is 'x+')"
    );
}
