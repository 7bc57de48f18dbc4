//! The distance `calculate_lat_lon_distance` reports: the geodesic on the WGS-84
//! ellipsoid, which upstream takes from geopy's `distance` (Karney's algorithm).
//!
//! Here it is Vincenty's inverse formula on the same ellipsoid, which agrees with
//! Karney's to well under a millimetre wherever it converges; for nearly antipodal
//! points, where Vincenty's iteration may not converge, the distance is refused as
//! unsupported rather than returned wrong.
//!
//! Never: approximates the earth as a sphere.

const A: f64 = 6_378_137.0;
const F: f64 = 1.0 / 298.257_223_563;
const B: f64 = A * (1.0 - F);

/// The geodesic distance in kilometres, or `None` where Vincenty does not converge.
pub fn geodesic_km(lat0: f64, lon0: f64, lat1: f64, lon1: f64) -> Option<f64> {
    if lat0 == lat1 && lon0 == lon1 {
        return Some(0.0);
    }
    let l = (lon1 - lon0).to_radians();
    let u1 = ((1.0 - F) * lat0.to_radians().tan()).atan();
    let u2 = ((1.0 - F) * lat1.to_radians().tan()).atan();
    let (sin_u1, cos_u1) = u1.sin_cos();
    let (sin_u2, cos_u2) = u2.sin_cos();
    let mut lambda = l;
    for _ in 0..200 {
        let (sin_l, cos_l) = lambda.sin_cos();
        let sin_sigma =
            ((cos_u2 * sin_l).powi(2) + (cos_u1 * sin_u2 - sin_u1 * cos_u2 * cos_l).powi(2)).sqrt();
        if sin_sigma == 0.0 {
            return Some(0.0);
        }
        let cos_sigma = sin_u1 * sin_u2 + cos_u1 * cos_u2 * cos_l;
        let sigma = sin_sigma.atan2(cos_sigma);
        let sin_alpha = cos_u1 * cos_u2 * sin_l / sin_sigma;
        let cos2_alpha = 1.0 - sin_alpha * sin_alpha;
        let cos_2sm = if cos2_alpha == 0.0 {
            0.0
        } else {
            cos_sigma - 2.0 * sin_u1 * sin_u2 / cos2_alpha
        };
        let c = F / 16.0 * cos2_alpha * (4.0 + F * (4.0 - 3.0 * cos2_alpha));
        let previous = lambda;
        lambda = l
            + (1.0 - c)
                * F
                * sin_alpha
                * (sigma
                    + c * sin_sigma * (cos_2sm + c * cos_sigma * (-1.0 + 2.0 * cos_2sm * cos_2sm)));
        if (lambda - previous).abs() < 1e-12 {
            let u_sq = cos2_alpha * (A * A - B * B) / (B * B);
            let big_a =
                1.0 + u_sq / 16384.0 * (4096.0 + u_sq * (-768.0 + u_sq * (320.0 - 175.0 * u_sq)));
            let big_b = u_sq / 1024.0 * (256.0 + u_sq * (-128.0 + u_sq * (74.0 - 47.0 * u_sq)));
            let delta_sigma = big_b
                * sin_sigma
                * (cos_2sm
                    + big_b / 4.0
                        * (cos_sigma * (-1.0 + 2.0 * cos_2sm * cos_2sm)
                            - big_b / 6.0
                                * cos_2sm
                                * (-3.0 + 4.0 * sin_sigma * sin_sigma)
                                * (-3.0 + 4.0 * cos_2sm * cos_2sm)));
            return Some(B * big_a * (sigma - delta_sigma) / 1000.0);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_geopy_to_a_millimetre() {
        // geopy 2.4.1's `distance(a, b).kilometers`.
        let cases = [
            (
                (37.334606, -122.009102),
                (37.8199, -122.4786),
                67.97851262172776,
            ),
            (
                (37.8199, -122.4786),
                (37.334606, -122.009102),
                67.97851262172776,
            ),
            ((0.0, 0.0), (0.0, 1.0), 111.31949079327356),
            ((51.5, -0.12), (40.7, -74.0), 5586.501473062145),
            ((-33.9, 151.2), (35.7, 139.7), 7797.236865157442),
            ((10.0, 10.0), (10.0, 10.0), 0.0),
        ];
        for ((a0, o0), (a1, o1), km) in cases {
            let d = geodesic_km(a0, o0, a1, o1).unwrap();
            assert!((d - km).abs() < 1e-6, "{d} vs {km}");
        }
    }

    #[test]
    fn nearly_antipodal_points_are_refused() {
        assert_eq!(geodesic_km(0.0, 0.0, 0.5, 179.7), None);
    }
}
