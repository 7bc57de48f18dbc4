//! From a cost matrix to a snapshot similarity, as upstream's `snapshot_similarity` does
//! with `scipy.optimize.linear_sum_assignment` and numpy.
//!
//! Owns three numeric rules: a matrix holding NaN scores 0 (scipy raises, upstream
//! returns 0); the one-to-one assignment of target rows to snapshot rows with the least
//! total cost, where an infinite cost is forbidden and no finite assignment scores 0; and
//! the similarity `exp(-mean)` of the chosen costs, summed in numpy's pairwise order.
//! Never computes a cost.

use super::error::EvaluationError;

/// The exact search enumerates subsets of snapshot rows; targets in the scenarios have
/// one or two rows.
const MAX_ROWS: usize = 16;

/// numpy's pairwise summation (`np.add.reduce` on a contiguous float64 array).
pub(crate) fn numpy_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        let mut res = 0.0;
        for &x in a {
            res += x;
        }
        res
    } else if n <= 128 {
        let mut r = [0.0; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - n % 8 {
            for (j, rj) in r.iter_mut().enumerate() {
                *rj += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &x in &a[i..] {
            res += x;
        }
        res
    } else {
        let mut half = n / 2;
        half -= half % 8;
        numpy_sum(&a[..half]) + numpy_sum(&a[half..])
    }
}

/// The assignment (column of each row) with the least finite total cost, `None` if every
/// assignment has an infinite cost. On equal totals the first found is kept; scipy may
/// pick another, which can only move the mean in its last bits.
fn best_assignment(cost: &[Vec<f64>]) -> Option<Vec<usize>> {
    let n = cost.len();
    let full = 1usize << n;
    // best[mask]: least cost of giving the first popcount(mask) rows the columns in mask.
    let mut best = vec![f64::INFINITY; full];
    let mut choice = vec![usize::MAX; full];
    best[0] = 0.0;
    for mask in 0..full {
        if best[mask].is_infinite() {
            continue;
        }
        let row = mask.count_ones() as usize;
        if row == n {
            continue;
        }
        for (col, &c) in cost[row].iter().enumerate() {
            if mask & (1 << col) != 0 || c.is_infinite() {
                continue;
            }
            let next = mask | (1 << col);
            let total = best[mask] + c;
            if total < best[next] {
                best[next] = total;
                choice[next] = col;
            }
        }
    }
    if best[full - 1].is_infinite() {
        return None;
    }
    let mut cols = vec![0; n];
    let mut mask = full - 1;
    for row in (0..n).rev() {
        let col = choice[mask];
        cols[row] = col;
        mask &= !(1 << col);
    }
    Some(cols)
}

/// The similarity of a square cost matrix (`None` entries are NaN).
pub(crate) fn similarity(cost: &[Vec<Option<f64>>]) -> Result<f64, EvaluationError> {
    let n = cost.len();
    if n > MAX_ROWS {
        return Err(EvaluationError::TooManyRows(n));
    }
    let Some(cost) = cost
        .iter()
        .map(|row| row.iter().copied().collect::<Option<Vec<f64>>>())
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(0.0);
    };
    let Some(cols) = best_assignment(&cost) else {
        return Ok(0.0);
    };
    let chosen: Vec<f64> = cols.iter().enumerate().map(|(r, &c)| cost[r][c]).collect();
    let mean = numpy_sum(&chosen) / n as f64;
    Ok((-mean).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cheapest_finite_assignment_is_chosen() {
        let inf = f64::INFINITY;
        let cost = vec![vec![Some(0.0), Some(0.5)], vec![Some(inf), Some(0.0)]];
        assert_eq!(similarity(&cost).unwrap(), 1.0);
        let cost = vec![vec![Some(inf), Some(0.0)], vec![Some(inf), Some(0.0)]];
        assert_eq!(similarity(&cost).unwrap(), 0.0);
        let cost = vec![vec![Some(0.2), None]];
        assert_eq!(similarity(&cost).unwrap(), 0.0);
        let cost = vec![vec![Some(1.0), Some(0.1)], vec![Some(0.1), Some(1.0)]];
        assert_eq!(similarity(&cost).unwrap(), (-0.1f64).exp());
    }

    #[test]
    fn pairwise_summation_matches_numpy_blocks() {
        let a: Vec<f64> = (0..20).map(|i| 0.1 * i as f64).collect();
        let mut r = [0.0; 8];
        r.copy_from_slice(&a[..8]);
        for i in (8..16).step_by(8) {
            for j in 0..8 {
                r[j] += a[i + j];
            }
        }
        let mut want = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for x in &a[16..] {
            want += x;
        }
        assert_eq!(numpy_sum(&a), want);
    }
}
