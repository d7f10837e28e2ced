use super::*;

fn fixed(values: &'static [&'static str]) -> impl FnMut() -> String {
    let mut next = values.iter();
    move || next.next().expect("enough random values").to_string()
}

#[test]
fn default_template_is_machine_set_name_dash_random() {
    let name = machine_name(None, "prod", "md-1-abcde", &mut fixed(&["xyz42"])).unwrap();
    assert_eq!(name, "md-1-abcde-xyz42");
}

#[test]
fn template_fields_are_replaced_with_any_spacing() {
    let template = "{{.cluster.name}}-{{ .machineSet.name }}-w-{{ .random }}";
    let name = machine_name(Some(template), "prod", "ms", &mut fixed(&["bcdfg"])).unwrap();
    assert_eq!(name, "prod-ms-w-bcdfg");
}

#[test]
fn random_is_required_and_unknown_fields_refused() {
    assert_eq!(
        machine_name(
            Some("{{ .machineSet.name }}"),
            "c",
            "ms",
            &mut fixed(&["aaaaa"])
        ),
        Err(NamingError::MissingRandom)
    );
    let error = machine_name(
        Some("{{ .nope }}-{{ .random }}"),
        "c",
        "ms",
        &mut fixed(&["a"]),
    )
    .unwrap_err();
    assert!(matches!(error, NamingError::Render { .. }), "{error:?}");
    let error =
        machine_name(Some("{{ .random }}-{{ oops"), "c", "ms", &mut fixed(&["a"])).unwrap_err();
    assert!(matches!(error, NamingError::Render { .. }), "{error:?}");
}

/// Upstream `templateGenerator.GenerateName`: longer than 63 characters, cut to 58 and five
/// more random characters.
#[test]
fn long_names_are_cut_to_58_plus_random() {
    let machine_set = "m".repeat(70);
    let name = machine_name(None, "c", &machine_set, &mut fixed(&["aaaaa", "zzzzz"])).unwrap();
    assert_eq!(name.len(), 63);
    assert_eq!(name, format!("{}zzzzz", "m".repeat(58)));
}

#[test]
fn random_suffixes_use_the_alphabet_and_differ() {
    let a = random_suffix();
    let b = random_suffix();
    assert_eq!(a.len(), RANDOM_LENGTH);
    assert!(a.bytes().all(|byte| ALPHABET.contains(&byte)), "{a}");
    assert_ne!(a, b);
}

/// FNV-1a reference vectors.
#[test]
fn fnv32a_matches_reference_vectors() {
    assert_eq!(fnv32a(b""), 0x811c_9dc5);
    assert_eq!(fnv32a(b"a"), 0xe40c_292c);
    assert_eq!(fnv32a(b"foobar"), 0xbf9c_f968);
}

#[test]
fn label_values_are_kept_or_hashed() {
    assert_eq!(format_label_value("md-1-abcde"), "md-1-abcde");
    assert_eq!(format_label_value(""), "");
    let long = "x".repeat(64);
    let hashed = format_label_value(&long);
    assert!(
        hashed.starts_with("hash_") && hashed.ends_with("_z"),
        "{hashed}"
    );
    // Four bytes of hash are six base64 characters without padding.
    assert_eq!(hashed.len(), "hash_".len() + 6 + "_z".len());
    assert!(is_valid_label_value(&hashed));
    assert!(!is_valid_label_value("-leading"));
    assert!(!is_valid_label_value("a b"));
}

#[test]
fn base64url_without_padding() {
    assert_eq!(base64url_no_pad(b"foobar"), "Zm9vYmFy");
    assert_eq!(base64url_no_pad(b"fo"), "Zm8");
    assert_eq!(base64url_no_pad(&[0xfb, 0xff]), "-_8");
}
