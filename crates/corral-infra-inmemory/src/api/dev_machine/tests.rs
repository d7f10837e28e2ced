use std::time::Duration;

use super::{ProvisioningSettings, parse_go_duration};

#[test]
fn go_durations_parse_as_time_parse_duration_reads_them() {
    let cases = [
        ("0", Some(Duration::ZERO)),
        ("0s", Some(Duration::ZERO)),
        ("10s", Some(Duration::from_secs(10))),
        ("1m30s", Some(Duration::from_secs(90))),
        ("1.5h", Some(Duration::from_secs(5400))),
        ("300ms", Some(Duration::from_millis(300))),
        (".5s", Some(Duration::from_millis(500))),
        ("1h2m3s4ms5us6ns", Some(Duration::new(3723, 4_005_006))),
        ("2µs", Some(Duration::from_micros(2))),
        ("", None),
        ("10", None),
        ("10 s", None),
        ("s", None),
        ("-1s", None),
        ("1d", None),
        ("1..5s", None),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_go_duration(text), expected, "{text:?}");
    }
}

#[test]
fn provisioning_settings_parse_or_say_which_value_is_wrong() {
    let settings = |duration: &str, jitter: Option<&str>| ProvisioningSettings {
        startup_duration: duration.into(),
        startup_jitter: jitter.map(Into::into),
    };
    assert_eq!(
        settings("2s", Some("0.2")).parse(),
        Ok((Duration::from_secs(2), 0.2))
    );
    assert_eq!(
        settings("2s", None).parse(),
        Ok((Duration::from_secs(2), 0.0))
    );
    assert_eq!(
        settings("two", None).parse().unwrap_err().0,
        "startupDuration \"two\" is not a duration such as 10s or 1m30s"
    );
    assert_eq!(
        settings("2s", Some("-1")).parse().unwrap_err().0,
        "startupJitter \"-1\" is not a non-negative decimal number such as 0.2"
    );
}
