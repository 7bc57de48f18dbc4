//! The decision-policy language: evaluation and its fixed English phrasing.
//!
//! A policy is an ordered list of rules, each a conjunction of comparisons between a
//! fact and a constant, plus a default label. The same structure renders to one fixed
//! sentence shape (see [`render`]) so that a program can parse the request text as
//! reliably as a model can read it. This module never sees records or tools.

use serde_json::Value as Json;

use super::schema::{ConditionDef, FactType, Op, PolicyDef};

/// Whether `value` has the JSON shape of `fact_type`.
pub fn has_type(value: &Json, fact_type: FactType) -> bool {
    match fact_type {
        FactType::String => value.is_string(),
        FactType::Integer => value.is_i64(),
        FactType::Boolean => value.is_boolean(),
        FactType::Date => value.as_str().is_some_and(is_iso_date),
    }
}

/// `YYYY-MM-DD` with a plausible month and day; ISO dates then compare as strings.
pub fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !(digits(0..4) && digits(5..7) && digits(8..10)) {
        return false;
    }
    let month: u32 = s[5..7].parse().unwrap_or(0);
    let day: u32 = s[8..10].parse().unwrap_or(0);
    (1..=12).contains(&month) && (1..=31).contains(&day)
}

/// Evaluates one condition against a fact value. `None` when the comparison is not
/// defined for these types (validation rejects such policies before they are used).
pub fn holds(cond: &ConditionDef, value: &Json) -> Option<bool> {
    let int_cmp = |f: fn(i64, i64) -> bool| Some(f(value.as_i64()?, cond.value.as_i64()?));
    let date_cmp = |f: fn(&str, &str) -> bool| {
        let (a, b) = (value.as_str()?, cond.value.as_str()?);
        (is_iso_date(a) && is_iso_date(b)).then(|| f(a, b))
    };
    match cond.op {
        Op::Equals => Some(value == &cond.value),
        Op::NotEquals => Some(value != &cond.value),
        Op::GreaterThan => int_cmp(|a, b| a > b),
        Op::LessThan => int_cmp(|a, b| a < b),
        Op::AtLeast => int_cmp(|a, b| a >= b),
        Op::AtMost => int_cmp(|a, b| a <= b),
        Op::Before => date_cmp(|a, b| a < b),
        Op::After => date_cmp(|a, b| a > b),
        Op::OneOf => Some(cond.value.as_array()?.contains(value)),
    }
}

/// The label the policy gives for `facts` (fact name -> value); `None` if a condition
/// names a missing fact or compares incompatible types.
pub fn decide(policy: &PolicyDef, fact: impl Fn(&str) -> Option<Json>) -> Option<String> {
    for rule in &policy.rules {
        let mut all = true;
        for cond in &rule.when {
            if !holds(cond, &fact(&cond.fact)?)? {
                all = false;
            }
        }
        if all {
            return Some(rule.label.clone());
        }
    }
    Some(policy.otherwise.clone())
}

/// The fixed phrase of an operator.
pub fn op_phrase(op: Op) -> &'static str {
    match op {
        Op::Equals => "equals",
        Op::NotEquals => "does not equal",
        Op::GreaterThan => "is greater than",
        Op::LessThan => "is less than",
        Op::AtLeast => "is at least",
        Op::AtMost => "is at most",
        Op::Before => "is before",
        Op::After => "is after",
        Op::OneOf => "is one of",
    }
}

/// Renders the policy as one line:
/// `Decision policy: answer "A" if f1 equals "x" and f2 is greater than 3; answer "B"
/// if ...; otherwise answer "C".` Constants are JSON literals, so they parse back
/// exactly.
pub fn render(policy: &PolicyDef) -> String {
    let mut out = String::from("Decision policy: ");
    for rule in &policy.rules {
        let conds: Vec<String> = rule
            .when
            .iter()
            .map(|c| format!("{} {} {}", c.fact, op_phrase(c.op), c.value))
            .collect();
        out.push_str(&format!(
            "answer {} if {}; ",
            Json::String(rule.label.clone()),
            conds.join(" and ")
        ));
    }
    out.push_str(&format!(
        "otherwise answer {}.",
        Json::String(policy.otherwise.clone())
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::schema::RuleDef;
    use serde_json::json;

    fn policy() -> PolicyDef {
        PolicyDef {
            rules: vec![RuleDef {
                label: "escalate".into(),
                when: vec![
                    ConditionDef {
                        fact: "status".into(),
                        op: Op::Equals,
                        value: json!("overdue"),
                    },
                    ConditionDef {
                        fact: "days".into(),
                        op: Op::GreaterThan,
                        value: json!(30),
                    },
                ],
            }],
            otherwise: "hold".into(),
        }
    }

    #[test]
    fn first_rule_whose_conditions_all_hold_decides() {
        let p = policy();
        let facts = |s: &'static str, d: i64| {
            move |k: &str| match k {
                "status" => Some(json!(s)),
                "days" => Some(json!(d)),
                _ => None,
            }
        };
        assert_eq!(
            decide(&p, facts("overdue", 31)).as_deref(),
            Some("escalate")
        );
        assert_eq!(decide(&p, facts("overdue", 30)).as_deref(), Some("hold"));
        assert_eq!(decide(&p, facts("open", 90)).as_deref(), Some("hold"));
        assert_eq!(decide(&p, |_| None), None);
    }

    #[test]
    fn renders_in_the_fixed_phrasing() {
        assert_eq!(
            render(&policy()),
            r#"Decision policy: answer "escalate" if status equals "overdue" and days is greater than 30; otherwise answer "hold"."#
        );
    }

    #[test]
    fn dates_compare_chronologically_and_reject_garbage() {
        let c = ConditionDef {
            fact: "d".into(),
            op: Op::Before,
            value: json!("2026-03-01"),
        };
        assert_eq!(holds(&c, &json!("2026-02-28")), Some(true));
        assert_eq!(holds(&c, &json!("2026-03-01")), Some(false));
        assert_eq!(holds(&c, &json!("March 1")), None);
        assert!(!is_iso_date("2026-13-01"));
    }
}
