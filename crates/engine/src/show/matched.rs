//! An episode page's matched episodes: among the pages a study writes, those of the
//! same unit with one pressure changed (the other side of a contrast's pair), so a
//! reader goes from a failure at V = 128 to the same task at V = 8.
//!
//! Owns: which identities are matched. Two execute identities match when their fields
//! have the same names in the same order and differ in exactly one value, and that
//! field is a pressure ([`PRESSURES`]): the configuration, family, arm, cap and repeat
//! all agree.
//!
//! Never: decides which pages are written (the report does), or reads anything but
//! the identity fields it is given.

/// The identity fields that are pressures of a cell.
pub const PRESSURES: [&str; 5] = ["v", "w", "d", "r", "depth"];

/// A link from one page to a matched page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    /// What differs, as `field = value` of the matched episode (`v = 8`).
    pub change: String,
    /// Its page's key (the execute key; its file is `show::page_name(key)`).
    pub key: String,
}

/// For each of `episodes` (`(execute key, identity fields)`), its matched episodes
/// among the others, in the order given.
pub fn matched(episodes: &[(&str, &[(&'static str, String)])]) -> Vec<Vec<Matched>> {
    episodes
        .iter()
        .map(|(key, fields)| {
            episodes
                .iter()
                .filter(|(other, _)| other != key)
                .filter_map(|(other, other_fields)| {
                    let change = one_pressure_apart(fields, other_fields)?;
                    Some(Matched {
                        change,
                        key: (*other).to_string(),
                    })
                })
                .collect()
        })
        .collect()
}

/// `field = value` of `b` when `a` and `b` differ in exactly one field, a pressure.
fn one_pressure_apart(a: &[(&str, String)], b: &[(&str, String)]) -> Option<String> {
    if a.len() != b.len() || a.iter().zip(b).any(|(x, y)| x.0 != y.0) {
        return None;
    }
    let mut differing = a.iter().zip(b).filter(|(x, y)| x.1 != y.1);
    let (_, (name, value)) = differing.next()?;
    if differing.next().is_some() || !PRESSURES.contains(name) {
        return None;
    }
    Some(format!("{name} = {value}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(cfg: &str, v: &str, w: &str, repeat: &str) -> Vec<(&'static str, String)> {
        vec![
            ("cfg", cfg.into()),
            ("family", "harbor".into()),
            ("v", v.into()),
            ("w", w.into()),
            ("repeat", repeat.into()),
        ]
    }

    #[test]
    fn only_episodes_one_pressure_apart_are_matched() {
        let a = fields("sim-a", "128", "low", "0");
        let at_8 = fields("sim-a", "8", "low", "0");
        let high = fields("sim-a", "128", "high", "0");
        let two_apart = fields("sim-a", "8", "high", "0");
        let other_config = fields("sim-b", "128", "low", "0");
        let other_repeat = fields("sim-a", "8", "low", "1");
        let episodes: Vec<(&str, &[(&'static str, String)])> = vec![
            ("a", &a),
            ("b", &at_8),
            ("c", &high),
            ("d", &two_apart),
            ("e", &other_config),
            ("f", &other_repeat),
        ];
        let found = matched(&episodes);
        let keys = |i: usize| -> Vec<(&str, &str)> {
            found[i]
                .iter()
                .map(|m| (m.key.as_str(), m.change.as_str()))
                .collect()
        };
        assert_eq!(keys(0), [("b", "v = 8"), ("c", "w = high")]);
        // d is one pressure from b and from c, never from a; each link names the
        // matched episode's own level.
        assert_eq!(keys(3), [("b", "w = low"), ("c", "v = 128")]);
        // A configuration or a repeat apart is another unit.
        assert!(keys(4).is_empty());
        assert_eq!(keys(5), Vec::<(&str, &str)>::new());
    }
}
