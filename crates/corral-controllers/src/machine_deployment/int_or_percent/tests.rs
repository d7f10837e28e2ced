use super::*;

fn percent(text: &str) -> IntOrString {
    IntOrString::String(text.into())
}

#[test]
fn numbers_are_taken_as_they_are() {
    assert_eq!(scaled_value(&IntOrString::Int(3), 10, true), Ok(3));
    assert_eq!(scaled_value(&IntOrString::Int(30), 10, false), Ok(30));
}

#[test]
fn percentages_round_as_asked() {
    assert_eq!(scaled_value(&percent("39%"), 10, true), Ok(4));
    assert_eq!(scaled_value(&percent("39%"), 10, false), Ok(3));
    assert_eq!(scaled_value(&percent("25%"), 3, true), Ok(1));
    assert_eq!(scaled_value(&percent("25%"), 3, false), Ok(0));
    assert_eq!(scaled_value(&percent("50%"), 10, true), Ok(5));
    assert_eq!(scaled_value(&percent("0%"), 0, true), Ok(0));
    assert_eq!(scaled_value(&percent("100%"), 7, false), Ok(7));
}

#[test]
fn strings_without_a_percent_sign_are_refused() {
    assert_eq!(
        scaled_value(&percent("5"), 7, true),
        Err(IntOrPercentError::NotAPercentage)
    );
    assert_eq!(
        scaled_value(&percent("abcdef"), 3, false)
            .unwrap_err()
            .to_string(),
        "invalid value for IntOrString: invalid type: string is not a percentage"
    );
    assert_eq!(
        scaled_value(&percent("oops%"), 3, false),
        Err(IntOrPercentError::InvalidPercentage("oops%".into()))
    );
}

#[test]
fn display_shows_what_was_written() {
    assert_eq!(display(&IntOrString::Int(3)), "3");
    assert_eq!(display(&percent("40%")), "40%");
}
