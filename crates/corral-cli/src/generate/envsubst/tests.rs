use super::*;

fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| {
        pairs
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    }
}

#[test]
fn plain_references_take_the_value() {
    let out = substitute(
        "name: ${CLUSTER_NAME}-md-0",
        lookup(&[("CLUSTER_NAME", "dev")]),
    );
    assert_eq!(out.unwrap(), "name: dev-md-0");
}

#[test]
fn colon_defaults_apply_when_unset_or_empty() {
    for template in ["${A:=x}", "${A:-x}"] {
        assert_eq!(
            substitute(template, lookup(&[])).unwrap(),
            "x",
            "{template}"
        );
        assert_eq!(
            substitute(template, lookup(&[("A", "")])).unwrap(),
            "x",
            "{template}"
        );
        assert_eq!(
            substitute(template, lookup(&[("A", "v")])).unwrap(),
            "v",
            "{template}"
        );
    }
}

#[test]
fn plain_defaults_apply_only_when_unset() {
    for template in ["${A=x}", "${A-x}"] {
        assert_eq!(
            substitute(template, lookup(&[])).unwrap(),
            "x",
            "{template}"
        );
        assert_eq!(
            substitute(template, lookup(&[("A", "")])).unwrap(),
            "",
            "{template}"
        );
    }
}

#[test]
fn defaults_are_literal_quotes_and_brackets_included() {
    let out = substitute(
        r#"cidrBlocks: ${POD_CIDR:=["192.168.0.0/16"]} domain: ${D:="cluster.local"}"#,
        lookup(&[]),
    );
    assert_eq!(
        out.unwrap(),
        r#"cidrBlocks: ["192.168.0.0/16"] domain: "cluster.local""#
    );
}

#[test]
fn unset_variables_without_default_are_all_named_once() {
    let missing = substitute("${B} ${A} ${B} ${C:=c}", lookup(&[])).unwrap_err();
    assert_eq!(missing, vec!["A".to_string(), "B".to_string()]);
}

#[test]
fn text_that_is_not_a_reference_is_kept() {
    let template = "cost: $5, ${ spaced }, ${1X}, ${A?x}, ${open, $HOME";
    assert_eq!(substitute(template, lookup(&[])).unwrap(), template);
}

#[test]
fn variables_lists_required_and_optional_with_their_defaults() {
    let template = "${NAME} ${VERSION} ${POD:=[a]} ${NAME:=n} ${COUNT=1}";
    assert_eq!(
        variables(template),
        Variables {
            required: vec!["NAME".into(), "VERSION".into()],
            optional: vec![("COUNT".into(), "1".into()), ("POD".into(), "[a]".into())],
        }
    );
}
