//! The string formats apiextensions validates (kube-openapi's `strfmt` registry, restricted
//! to the formats CRDs may use). Anything else in `format` is ignored, as upstream does.
//!
//! The checks follow the Go validators they stand for; where those lean on Go's standard
//! library (`net/mail`, `net/url`), the check here is the closest plain rule.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

/// Whether apiextensions validates this string format. Names compare without dashes, as the
/// registry normalizes them (`date-time` is `datetime`).
pub fn is_supported(format: &str) -> bool {
    matches!(
        normalize(format).as_str(),
        "bsonobjectid"
            | "uri"
            | "email"
            | "hostname"
            | "ipv4"
            | "ipv6"
            | "cidr"
            | "mac"
            | "uuid"
            | "uuid3"
            | "uuid4"
            | "uuid5"
            | "isbn"
            | "isbn10"
            | "isbn13"
            | "creditcard"
            | "ssn"
            | "hexcolor"
            | "rgbcolor"
            | "byte"
            | "password"
            | "date"
            | "duration"
            | "datetime"
            | "k8sshortname"
            | "k8slongname"
    )
}

fn normalize(format: &str) -> String {
    format.replace('-', "")
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("built-in format patterns compile")
}

static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID3: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static SSN: LazyLock<Regex> = LazyLock::new(|| regex(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static HEX_COLOR: LazyLock<Regex> = LazyLock::new(|| regex(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGB_COLOR: LazyLock<Regex> = LazyLock::new(|| {
    let byte = r"(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])";
    regex(&format!(r"^rgb\(\s*{byte}\s*,\s*{byte}\s*,\s*{byte}\s*\)$"))
});
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
});
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})$",
    )
});
static DATE_TIME_CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});
static SHORT_NAME: LazyLock<Regex> = LazyLock::new(|| regex(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
static LONG_NAME: LazyLock<Regex> =
    LazyLock::new(|| regex(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"));
static DURATION_PART: LazyLock<Regex> = LazyLock::new(|| regex(r"((\d+)\s*([A-Za-zµ]+))"));
static EMAIL: LazyLock<Regex> = LazyLock::new(|| regex(r"^[^\s<>@]+@[^\s<>@]+$"));

/// Whether `value` is valid in `format` (which [`is_supported`] accepted).
pub fn is_valid(format: &str, value: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(value),
        "email" => is_email(value),
        "hostname" => {
            HOSTNAME.is_match(value)
                && value.len() <= 255
                && value.split('.').all(|part| part.len() <= 63)
        }
        "ipv4" => parse_ip(value).is_some() && value.contains('.'),
        "ipv6" => parse_ip(value).is_some() && value.contains(':'),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uuid" => UUID.is_match(value),
        "uuid3" => UUID3.is_match(value),
        "uuid4" => UUID4.is_match(value),
        "uuid5" => UUID5.is_match(value),
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => is_credit_card(value),
        "ssn" => SSN.is_match(value),
        "hexcolor" => HEX_COLOR.is_match(value),
        "rgbcolor" => RGB_COLOR.is_match(value),
        "byte" => BASE64.is_match(value),
        "password" => true,
        "date" => is_date(value),
        "duration" => parse_duration(value).is_some(),
        "datetime" => is_date_time(value),
        "k8sshortname" => value.len() <= 63 && SHORT_NAME.is_match(value),
        "k8slongname" => value.len() <= 253 && LONG_NAME.is_match(value),
        _ => true,
    }
}

/// Go's `url.ParseRequestURI`: an absolute URI or an absolute path, without spaces or
/// control characters.
fn is_request_uri(value: &str) -> bool {
    if value.is_empty() || value.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if value.starts_with('/') {
        return true;
    }
    let Some((scheme, rest)) = value.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
}

/// `net/mail.ParseAddress`, approximately: `local@domain`, optionally as
/// `Display Name <local@domain>`.
fn is_email(value: &str) -> bool {
    let value = value.trim();
    let address = match (value.rfind('<'), value.strip_suffix('>')) {
        (Some(open), Some(inner)) => &inner[open + 1..],
        _ => value,
    };
    EMAIL.is_match(address)
}

/// An IP address as Go's sloppy parser takes it: IPv4 may have leading zeros.
pub fn parse_ip(value: &str) -> Option<std::net::IpAddr> {
    if let Ok(v6) = value.parse::<Ipv6Addr>() {
        return Some(v6.into());
    }
    let parts: Vec<&str> = value.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (octet, part) in octets.iter_mut().zip(parts) {
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *octet = part.parse().ok()?;
    }
    Some(Ipv4Addr::from(octets).into())
}

fn is_cidr(value: &str) -> bool {
    let Some((address, prefix)) = value.split_once('/') else {
        return false;
    };
    let Some(ip) = parse_ip(address) else {
        return false;
    };
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let Ok(bits) = prefix.parse::<u32>() else {
        return false;
    };
    bits <= if ip.is_ipv4() { 32 } else { 128 }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx:…`, `xx-xx-…` or `xxxx.xxxx.…`.
fn is_mac(value: &str) -> bool {
    let hex = |s: &str, width: usize| s.len() == width && s.bytes().all(|b| b.is_ascii_hexdigit());
    let valid_count = |n: usize| matches!(n, 6 | 8 | 20);
    if value.contains(':') || value.contains('-') {
        let separator = if value.contains(':') { ':' } else { '-' };
        let parts: Vec<&str> = value.split(separator).collect();
        valid_count(parts.len()) && parts.iter().all(|p| hex(p, 2))
    } else if value.contains('.') {
        let parts: Vec<&str> = value.split('.').collect();
        valid_count(parts.len() * 2) && parts.iter().all(|p| hex(p, 4))
    } else {
        false
    }
}

fn isbn_digits(value: &str) -> String {
    value
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect()
}

fn is_isbn10(value: &str) -> bool {
    let digits = isbn_digits(value);
    let bytes = digits.as_bytes();
    if bytes.len() != 10
        || !bytes[..9].iter().all(u8::is_ascii_digit)
        || !(bytes[9].is_ascii_digit() || bytes[9] == b'X')
    {
        return false;
    }
    let sum: u32 = bytes
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let digit = if *b == b'X' { 10 } else { u32::from(b - b'0') };
            (i as u32 + 1) * digit
        })
        .sum();
    sum.is_multiple_of(11)
}

fn is_isbn13(value: &str) -> bool {
    let digits = isbn_digits(value);
    let bytes = digits.as_bytes();
    if bytes.len() != 13 || !bytes.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = bytes[..12]
        .iter()
        .enumerate()
        .map(|(i, b)| u32::from(b - b'0') * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    (10 - sum % 10) % 10 == u32::from(bytes[12] - b'0')
}

fn is_credit_card(value: &str) -> bool {
    let digits: String = value.chars().filter(|c| *c != ' ' && *c != '-').collect();
    if !CREDIT_CARD.is_match(&digits) {
        return false;
    }
    let mut sum = 0;
    for (i, b) in digits.bytes().rev().enumerate() {
        let mut digit = u32::from(b - b'0');
        if i % 2 == 1 {
            digit *= 2;
            if digit > 9 {
                digit -= 9;
            }
        }
        sum += digit;
    }
    sum % 10 == 0
}

/// Go's `time.Parse("2006-01-02", …)`: four-digit year, two-digit month and day, a real date.
pub fn parse_date(value: &str) -> Option<chrono::NaiveDate> {
    let bytes = value.as_bytes();
    let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
    if bytes.len() != 10
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || !digits(0..4)
        || !digits(5..7)
        || !digits(8..10)
    {
        return None;
    }
    chrono::NaiveDate::from_ymd_opt(
        value[0..4].parse().ok()?,
        value[5..7].parse().ok()?,
        value[8..10].parse().ok()?,
    )
}

fn is_date(value: &str) -> bool {
    parse_date(value).is_some()
}

/// strfmt's `IsDateTime`: a date, `t` (any case), then a clock with an optional fraction and
/// `z` or an offset.
fn is_date_time(value: &str) -> bool {
    if value.len() < 4 {
        return false;
    }
    let lower = value.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(clock) = DATE_TIME_CLOCK.captures(parts[1]) else {
        return false;
    };
    &clock[1] <= "23" && &clock[2] <= "59" && &clock[3] <= "59"
}

/// A duration as strfmt parses it: Go's `time.ParseDuration`, or failing that any
/// `<digits><unit>` parts with units from nanoseconds to weeks. Returns nanoseconds.
pub fn parse_duration(value: &str) -> Option<i128> {
    if let Some(nanos) = parse_go_duration(value) {
        return Some(nanos);
    }
    const UNITS: [(&[&str], i128); 8] = [
        (&["ns", "nano"], 1),
        (&["us", "µs", "micro"], 1_000),
        (&["ms", "milli"], 1_000_000),
        (&["s", "sec"], 1_000_000_000),
        (&["m", "min"], 60_000_000_000),
        (&["h", "hr", "hour"], 3_600_000_000_000),
        (&["d", "day"], 86_400_000_000_000),
        (&["w", "wk", "week"], 604_800_000_000_000),
    ];
    let mut total: i128 = 0;
    let mut matched = false;
    for captures in DURATION_PART.captures_iter(value) {
        let factor: i128 = captures[2].parse().ok()?;
        let unit = captures[3].trim().to_lowercase();
        for (variants, multiplier) in UNITS {
            let last = variants.len() - 1;
            for (i, variant) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(variant)) || unit.eq_ignore_ascii_case(variant) {
                    matched = true;
                    total += factor * multiplier;
                }
            }
        }
    }
    matched.then_some(total)
}

/// Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`.
pub fn parse_go_duration(value: &str) -> Option<i128> {
    let (negative, mut rest) = match value.as_bytes().first() {
        Some(b'-') => (true, &value[1..]),
        Some(b'+') => (false, &value[1..]),
        _ => (false, value),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_end];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return None;
        }
        let amount: f64 = number.parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let multiplier: f64 = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += amount * multiplier;
    }
    let nanos = total.round() as i128;
    Some(if negative { -nanos } else { nanos })
}
