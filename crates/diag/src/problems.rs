//! The bound on problem reports, shared by every loader that lists all its problems at
//! once (manifests, the configuration catalogue, family files).
//!
//! Owns: how many problems a report lists ([`MAX_SHOWN`]) and the one way a longer list
//! is cut ([`bound`]). A generated file with thousands of mistakes gets a readable
//! report, and the total still says how many there are.
//!
//! Never: decides what a problem is, or drops one without counting it.

/// Problems a report lists at most.
pub const MAX_SHOWN: usize = 50;

/// Keeps the first [`MAX_SHOWN`] problems and returns how many there were in all. When
/// some were cut, `more(cut)` makes the closing entry ("… and N more") if the report
/// has one; `None` leaves the count to the report's own message.
pub fn bound<P>(problems: &mut Vec<P>, more: impl FnOnce(usize) -> Option<P>) -> usize {
    let total = problems.len();
    if total > MAX_SHOWN {
        problems.truncate(MAX_SHOWN);
        problems.extend(more(total - MAX_SHOWN));
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_list_keeps_the_first_problems_and_its_closing_entry() {
        let mut long: Vec<String> = (0..120).map(|i| i.to_string()).collect();
        let total = bound(&mut long, |cut| Some(format!("… and {cut} more")));
        assert_eq!(total, 120);
        assert_eq!(long.len(), MAX_SHOWN + 1);
        assert_eq!(long[MAX_SHOWN - 1], "49");
        assert_eq!(long[MAX_SHOWN], "… and 70 more");

        let mut short: Vec<String> = (0..3).map(|i| i.to_string()).collect();
        assert_eq!(bound(&mut short, |_| Some("never".into())), 3);
        assert_eq!(short, ["0", "1", "2"]);

        let mut bare: Vec<u32> = (0..51).collect();
        assert_eq!(bound(&mut bare, |_| None), 51);
        assert_eq!(bare.len(), MAX_SHOWN);
    }
}
