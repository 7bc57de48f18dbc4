//! The phone-number check upstream's tools make: `phonenumbers.parse(number)` with no
//! default region (phonenumbers 8.13.39), which only checks that the text can be read
//! as an international number.
//!
//! This is the part of that parser the check depends on: the number must start (after
//! leading junk such as `tel:`) with a plus sign, hold at least three digits before any
//! letter, begin with a known country calling code, and leave a national number of 2 to
//! 17 digits. Letters after the digits are read as a keypad word (`+1-800-FLOWERS`), as
//! phonenumbers does. Extensions (`x12`, `;ext=5`) are not split off, so their digits
//! count toward the national number's length, and a national prefix (the `1` after
//! `+1`) is not stripped before the length check: a number phonenumbers accepts only
//! because of either may be refused here as too long.
//!
//! Never: formats or normalises a number; the tools store the text they were given.

/// The country calling codes phonenumbers 8.13.39 knows.
const COUNTRY_CODES: &[u16] = &[
    1, 7, 20, 27, 30, 31, 32, 33, 34, 36, 39, 40, 41, 43, 44, 45, 46, 47, 48, 49, 51, 52, 53, 54,
    55, 56, 57, 58, 60, 61, 62, 63, 64, 65, 66, 81, 82, 84, 86, 90, 91, 92, 93, 94, 95, 98, 211,
    212, 213, 216, 218, 220, 221, 222, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234,
    235, 236, 237, 238, 239, 240, 241, 242, 243, 244, 245, 246, 247, 248, 249, 250, 251, 252, 253,
    254, 255, 256, 257, 258, 260, 261, 262, 263, 264, 265, 266, 267, 268, 269, 290, 291, 297, 298,
    299, 350, 351, 352, 353, 354, 355, 356, 357, 358, 359, 370, 371, 372, 373, 374, 375, 376, 377,
    378, 380, 381, 382, 383, 385, 386, 387, 389, 420, 421, 423, 500, 501, 502, 503, 504, 505, 506,
    507, 508, 509, 590, 591, 592, 593, 594, 595, 596, 597, 598, 599, 670, 672, 673, 674, 675, 676,
    677, 678, 679, 680, 681, 682, 683, 685, 686, 687, 688, 689, 690, 691, 692, 800, 808, 850, 852,
    853, 855, 856, 870, 878, 880, 881, 882, 883, 886, 888, 960, 961, 962, 963, 964, 965, 966, 967,
    968, 970, 971, 972, 973, 974, 975, 976, 977, 979, 992, 993, 994, 995, 996, 998,
];

/// phonenumbers' `NumberParseException`: its error type and message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("({code}) {message}")]
pub struct PhoneError {
    /// phonenumbers' error type (0 invalid country code, 1 not a number, 2 too short
    /// after the country code, 4 too long).
    pub code: u8,
    /// Its message.
    pub message: &'static str,
}

const NOT_A_NUMBER: PhoneError = PhoneError {
    code: 1,
    message: "The string supplied did not seem to be a phone number.",
};

fn is_plus(c: char) -> bool {
    c == '+' || c == '＋'
}

fn is_punctuation(c: char) -> bool {
    c.is_whitespace()
        || matches!(c,
            '-' | 'x' | '‐'..='―' | '−' | 'ー' | '－'..='／' | '\u{ad}' | '\u{200b}' | '\u{2060}'
            | '(' | ')' | '（' | '）' | '［' | '］' | '.' | '[' | ']' | '/' | '~' | '⁓' | '∼' | '～' | '*')
}

fn keypad(c: char) -> Option<u8> {
    let c = c.to_ascii_uppercase();
    Some(match c {
        '0'..='9' => c as u8 - b'0',
        'A'..='C' => 2,
        'D'..='F' => 3,
        'G'..='I' => 4,
        'J'..='L' => 5,
        'M'..='O' => 6,
        'P'..='S' => 7,
        'T'..='V' => 8,
        'W'..='Z' => 9,
        _ => return None,
    })
}

/// Whether the text reads as a phone number at all: leading plus signs, then at least
/// three digits (punctuation between them allowed), then digits, letters and
/// punctuation only; or exactly two digits.
fn viable(s: &str) -> bool {
    if s.len() == 2 && s.chars().all(|c| c.is_ascii_digit()) {
        return true;
    }
    let rest = s.trim_start_matches(is_plus);
    let mut digits = 0;
    let mut chars = rest.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_digit() {
            digits += 1;
        } else if !is_punctuation(c) {
            break;
        }
        chars.next();
    }
    digits >= 3 && chars.all(|c| c.is_ascii_digit() || c.is_alphabetic() || is_punctuation(c))
}

/// `phonenumbers.parse(number)` without a region: `Ok` if it would parse.
pub fn validate(number: &str) -> Result<(), PhoneError> {
    if number.chars().count() > 250 {
        return Err(PhoneError {
            code: 4,
            message: "The string supplied was too long to parse.",
        });
    }
    let start = number.find(|c: char| is_plus(c) || c.is_ascii_digit());
    let Some(start) = start else {
        return Err(NOT_A_NUMBER);
    };
    let candidate = number[start..]
        .split(';')
        .next()
        .unwrap_or_default()
        .trim_end_matches(|c: char| !c.is_alphanumeric() && c != '#');
    if !viable(candidate) {
        return Err(NOT_A_NUMBER);
    }
    if !candidate.starts_with(is_plus) {
        return Err(PhoneError {
            code: 0,
            message: "Missing or invalid default region.",
        });
    }
    let digits: Vec<u8> = candidate.chars().filter_map(keypad).collect();
    let code_len = (1..=3.min(digits.len())).find(|&n| {
        digits[0] != 0
            && COUNTRY_CODES.contains(&digits[..n].iter().fold(0u16, |a, d| a * 10 + u16::from(*d)))
    });
    let Some(code_len) = code_len else {
        return Err(PhoneError {
            code: 0,
            message: "Could not interpret numbers after plus-sign.",
        });
    };
    match digits.len() - code_len {
        n if n < 2 => Err(PhoneError {
            code: 2,
            message: "The string supplied is too short to be a phone number.",
        }),
        n if n > 17 => Err(PhoneError {
            code: 4,
            message: "The string supplied is too long to be a phone number.",
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_phonenumbers_on_these() {
        // phonenumbers 8.13.39's verdicts.
        let cases: &[(&str, Option<u8>)] = &[
            ("+11233344455", None),
            ("+1234560987", None),
            ("1233344455", Some(0)),
            ("123-456-7890", Some(0)),
            ("+1 (123) 334-4455", None),
            ("+", Some(1)),
            ("+1", Some(1)),
            ("+12", Some(1)),
            ("+999123456", Some(0)),
            ("+0123", Some(0)),
            ("  +11233344455  ", None),
            ("abc", Some(1)),
            ("+1abc2345678", Some(1)),
            ("+1-800-FLOWERS", None),
            ("+11233344455;ext=5", None),
            ("tel:+11233344455", None),
            ("+123456789012345678901", Some(4)),
            ("+44 20 7946 0958", None),
            ("+8", Some(1)),
            ("", Some(1)),
            ("+11233344455a", None),
            ("+112333444551234567", None),
            ("+11233344455123456789", Some(4)),
        ];
        for &(number, code) in cases {
            assert_eq!(validate(number).err().map(|e| e.code), code, "{number:?}");
        }
        assert_eq!(
            validate("123-456-7890").unwrap_err().to_string(),
            "(0) Missing or invalid default region."
        );
    }
}
