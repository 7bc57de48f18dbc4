//! Number formatting for the report: one function per kind of quantity, so every
//! table prints the same quantity the same way.
//!
//! Owns: decimals, signs, separators and the mark of a missing value.
//!
//! Invariants: output depends on the value only (Rust's float formatting is exact and
//! platform-independent), so the report is byte-identical across runs and machines.
//! A value that rounds to zero prints without a minus sign. NaN and infinities print
//! as [`MISSING`]: the analyses write "undefined" (no truncated episode, a constant
//! variable in a correlation) as a null, which the column reader turns into NaN.
//!
//! Never: rounds before comparing (the p-value floor is compared on the raw values).

/// What an undefined value prints as.
pub(crate) const MISSING: &str = "—";

/// `x` with `decimals` decimals, `-0.0` normalised to `0.0`.
pub(crate) fn fixed(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return MISSING.to_string();
    }
    let s = format!("{x:.decimals$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// A difference in percentage points, with an explicit sign: `+0.8`, `-12.3`, `0.0`.
pub(crate) fn effect_pp(x: f64) -> String {
    let s = fixed(x, 1);
    if x.is_finite() && !s.starts_with('-') && s != fixed(0.0, 1) {
        format!("+{s}")
    } else {
        s
    }
}

/// An interval in percentage points: `[-14.6, -9.9]`.
pub(crate) fn interval_pp(low: f64, high: f64) -> String {
    if !low.is_finite() || !high.is_finite() {
        return MISSING.to_string();
    }
    format!("[{}, {}]", fixed(low, 1), fixed(high, 1))
}

/// An estimate with its interval: `-12.3 [-14.6, -9.9]`.
pub(crate) fn effect_with_interval(estimate: f64, low: f64, high: f64) -> String {
    if !low.is_finite() || !high.is_finite() {
        return effect_pp(estimate);
    }
    format!("{} {}", effect_pp(estimate), interval_pp(low, high))
}

/// A p-value. At (or below) its floor — the smallest value the test can resolve, such
/// as `1 / draws` for a bootstrap — it prints as `≤` the floor, because the true p may
/// be smaller. Otherwise as [`plain_p`].
pub(crate) fn p_value(p: f64, floor: f64) -> String {
    if !p.is_finite() {
        return MISSING.to_string();
    }
    if at_floor(p, floor) {
        return format!("≤{}", plain_p(round_up_small(floor)));
    }
    plain_p(p)
}

/// Whether `p` is at (or below) the smallest value its test can resolve; the relative
/// tolerance absorbs the float error of `1 / draws` computed two ways.
pub(crate) fn at_floor(p: f64, floor: f64) -> bool {
    p.is_finite() && floor.is_finite() && floor > 0.0 && p <= floor * (1.0 + 1e-9)
}

/// A p-value without a floor (a Holm-adjusted p, say): three decimals from 0.01 up,
/// two significant digits below (trailing zeros dropped, so a floor of `1 / 10,000`
/// reads `0.0001`).
pub(crate) fn plain_p(p: f64) -> String {
    if !p.is_finite() {
        MISSING.to_string()
    } else if p >= 0.01 || p == 0.0 {
        fixed(p, 3)
    } else {
        let digits = (-p.log10()).floor() as usize + 2;
        let s = fixed(p, digits.min(12));
        s.trim_end_matches('0').to_string()
    }
}

/// A small positive `x` rounded *up* to the two significant digits [`plain_p`]
/// shows, so that "≤ floor" stays true after rounding (`2 / 4096 = 0.000488…` reads
/// `0.00049`, `1 / 4096 = 0.000244…` reads `0.00025`, not `0.00024`).
fn round_up_small(x: f64) -> f64 {
    if !(x > 0.0 && x < 0.01) {
        return x;
    }
    let digits = ((-x.log10()).floor() + 2.0).min(12.0);
    let scale = 10f64.powf(digits);
    // The tolerance keeps an exact decimal such as 1e-4 from rounding up to 1.1e-4.
    ((x * scale) * (1.0 - 1e-9)).ceil() / scale
}

/// A share (0..=1) as a percentage with one decimal: `13.6%`.
pub(crate) fn percent(share: f64) -> String {
    if !share.is_finite() {
        return MISSING.to_string();
    }
    format!("{}%", fixed(100.0 * share, 1))
}

/// A count with thousands separators: `26,576`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A non-negative quantity rounded to a whole number, with separators (tokens per
/// episode): `4,699`.
pub(crate) fn whole(x: f64) -> String {
    if !x.is_finite() {
        return MISSING.to_string();
    }
    let rounded = x.abs().round();
    // Quantities the report prints this way (tokens) stay far below 2^53.
    let magnitude = count(rounded as u64);
    if x < 0.0 && rounded > 0.0 {
        format!("-{magnitude}")
    } else {
        magnitude
    }
}

/// A difference with an explicit sign and `decimals` decimals: `+0.125`, `-0.500`,
/// `0.000` (a difference of ToolSandbox similarities).
pub(crate) fn signed_fixed(x: f64, decimals: usize) -> String {
    let s = fixed(x, decimals);
    if x.is_finite() && !s.starts_with('-') && s != fixed(0.0, decimals) {
        format!("+{s}")
    } else {
        s
    }
}

/// A difference with its interval, `decimals` decimals: `-0.125 [-0.375, 0.500]`.
pub(crate) fn fixed_with_interval(estimate: f64, low: f64, high: f64, decimals: usize) -> String {
    if !low.is_finite() || !high.is_finite() {
        return signed_fixed(estimate, decimals);
    }
    format!(
        "{} [{}, {}]",
        signed_fixed(estimate, decimals),
        fixed(low, decimals),
        fixed(high, decimals)
    )
}

/// A difference of whole quantities (tokens per episode) with an explicit sign:
/// `+4,699`, `-12`, `0`.
pub(crate) fn signed_whole(x: f64) -> String {
    let s = whole(x);
    if x.is_finite() && !s.starts_with('-') && s != "0" {
        format!("+{s}")
    } else {
        s
    }
}

/// A difference of whole quantities with its interval: `+130 [60, 1,200]`.
pub(crate) fn whole_with_interval(estimate: f64, low: f64, high: f64) -> String {
    if !low.is_finite() || !high.is_finite() {
        return signed_whole(estimate);
    }
    format!(
        "{} [{}, {}]",
        signed_whole(estimate),
        whole(low),
        whole(high)
    )
}

/// A correlation coefficient: `-0.95`.
pub(crate) fn correlation(r: f64) -> String {
    fixed(r, 2)
}

/// US dollars: cents from one dollar up, four decimals below (sim panels cost
/// fractions of a cent per episode).
pub(crate) fn usd(x: f64) -> String {
    if !x.is_finite() {
        return MISSING.to_string();
    }
    let decimals = if x.abs() >= 1.0 { 2 } else { 4 };
    let s = fixed(x, decimals);
    match s.split_once('.') {
        Some((int, frac)) => {
            let (sign, int) = int.strip_prefix('-').map_or(("", int), |i| ("-", i));
            let int = int.parse::<u64>().map_or_else(|_| int.to_string(), count);
            format!("{sign}${int}.{frac}")
        }
        None => format!("${s}"),
    }
}

/// A count out of a total: `6/84`.
pub(crate) fn ratio(part: u64, total: u64) -> String {
    format!("{}/{}", count(part), count(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_the_paper() {
        assert_eq!(effect_pp(-12.34), "-12.3");
        assert_eq!(effect_pp(0.8), "+0.8");
        assert_eq!(effect_pp(-0.04), "0.0");
        assert_eq!(effect_pp(f64::NAN), MISSING);
        assert_eq!(interval_pp(-14.61, -9.94), "[-14.6, -9.9]");
        assert_eq!(effect_with_interval(3.0, 0.2, 5.7), "+3.0 [0.2, 5.7]");
        assert_eq!(percent(0.136), "13.6%");
        assert_eq!(count(18_144), "18,144");
        assert_eq!(count(26_576), "26,576");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000_000), "1,000,000");
        assert_eq!(whole(4_698.6), "4,699");
        assert_eq!(usd(768.384), "$768.38");
        assert_eq!(usd(1_234.5), "$1,234.50");
        assert_eq!(usd(0.020454), "$0.0205");
        assert_eq!(correlation(-0.9512), "-0.95");
        assert_eq!(ratio(6, 84), "6/84");
        assert_eq!(signed_fixed(0.125, 3), "+0.125");
        assert_eq!(signed_fixed(-0.0001, 3), "0.000");
        assert_eq!(
            fixed_with_interval(-0.125, -0.375, 0.5, 3),
            "-0.125 [-0.375, 0.500]"
        );
        assert_eq!(signed_whole(4_698.6), "+4,699");
        assert_eq!(signed_whole(-0.4), "0");
        assert_eq!(
            whole_with_interval(130.0, 60.0, 1_200.0),
            "+130 [60, 1,200]"
        );
        assert_eq!(whole_with_interval(-12.0, f64::NAN, 1.0), "-12");
    }

    #[test]
    fn p_values_at_the_floor_are_upper_bounds() {
        assert_eq!(p_value(0.0001, 0.0001), "≤0.0001");
        assert_eq!(p_value(0.011, 0.0001), "0.011");
        assert_eq!(p_value(0.0098, 2.0 / 4096.0), "0.0098");
        assert_eq!(p_value(0.00034, 0.0001), "0.00034");
        assert_eq!(p_value(0.001, 0.001), "≤0.001");
        assert_eq!(p_value(2.0 / 4096.0, 2.0 / 4096.0), "≤0.00049");
        assert_eq!(p_value(1.0 / 4096.0, 1.0 / 4096.0), "≤0.00025");
        assert_eq!(plain_p(1.0), "1.000");
        assert_eq!(plain_p(0.0008), "0.0008");
    }
}
