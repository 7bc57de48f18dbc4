//! The unit conversions `unit_conversion` performs, as pint 0.23 (upstream's pin) does
//! them for the units this table holds.
//!
//! Upstream hands the agent's unit names to pint's default registry, and on an
//! undefined name tries again with both names lowercased. The scenarios convert
//! temperatures (Celsius and Fahrenheit, in either case); the table also holds common
//! lengths, masses, times and volumes. Factors are pint's root-unit factors as pint
//! computes them (with its rounding), and a conversion is `amount × (from / to)` for
//! multiplicative units and `to.from_reference(from.to_reference(amount))` for the
//! offset temperature units. Temperatures match pint's to the bit; a multiplicative
//! conversion may differ from pint's in the last bits where pint multiplies out the
//! units' definition chains in another order (gallon to liter does).
//!
//! Pint parses arbitrary unit expressions with prefixes and plurals; a name this table
//! does not hold is refused as unsupported rather than guessed.
//!
//! Never: converts between dimensions.

/// A physical dimension, as pint names it in its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dim {
    Length,
    Mass,
    Time,
    Temperature,
    Volume,
}

impl Dim {
    fn label(self) -> &'static str {
        match self {
            Dim::Length => "[length]",
            Dim::Mass => "[mass]",
            Dim::Time => "[time]",
            Dim::Temperature => "[temperature]",
            Dim::Volume => "[length] ** 3",
        }
    }
}

/// One unit: pint's canonical name, the names accepted for it, its dimension, and its
/// converter (`reference = value × scale + offset`).
struct Unit {
    canonical: &'static str,
    names: &'static [&'static str],
    dim: Dim,
    scale: f64,
    offset: f64,
}

const fn unit(
    canonical: &'static str,
    names: &'static [&'static str],
    dim: Dim,
    scale: f64,
) -> Unit {
    Unit {
        canonical,
        names,
        dim,
        scale,
        offset: 0.0,
    }
}

// pint: degree_Fahrenheit = 5 / 9 * kelvin; offset: 233.15 + 200 / 9.
const FIVE_NINTHS: f64 = 5.0 / 9.0;
const FAHRENHEIT_OFFSET: f64 = 233.15 + 200.0 / 9.0;

const UNITS: &[Unit] = &[
    unit(
        "meter",
        &["meter", "meters", "metre", "metres", "m"],
        Dim::Length,
        1.0,
    ),
    unit(
        "kilometer",
        &["kilometer", "kilometers", "kilometre", "kilometres", "km"],
        Dim::Length,
        1000.0,
    ),
    unit(
        "centimeter",
        &[
            "centimeter",
            "centimeters",
            "centimetre",
            "centimetres",
            "cm",
        ],
        Dim::Length,
        0.01,
    ),
    unit(
        "millimeter",
        &[
            "millimeter",
            "millimeters",
            "millimetre",
            "millimetres",
            "mm",
        ],
        Dim::Length,
        0.001,
    ),
    unit("mile", &["mile", "miles", "mi"], Dim::Length, 1609.344),
    unit("yard", &["yard", "yards", "yd"], Dim::Length, 0.9144),
    unit(
        "foot",
        &["foot", "feet", "ft"],
        Dim::Length,
        0.30479999999999996,
    ),
    unit("inch", &["inch", "inches", "in"], Dim::Length, 0.0254),
    unit(
        "nautical_mile",
        &["nautical_mile", "nautical_miles", "nmi"],
        Dim::Length,
        1852.0,
    ),
    unit("gram", &["gram", "grams", "g"], Dim::Mass, 1.0),
    unit(
        "kilogram",
        &["kilogram", "kilograms", "kg"],
        Dim::Mass,
        1000.0,
    ),
    unit(
        "milligram",
        &["milligram", "milligrams", "mg"],
        Dim::Mass,
        0.001,
    ),
    unit(
        "pound",
        &["pound", "pounds", "lb"],
        Dim::Mass,
        453.5923700000001,
    ),
    unit(
        "ounce",
        &["ounce", "ounces", "oz"],
        Dim::Mass,
        28.349523125000005,
    ),
    unit("stone", &["stone", "stones"], Dim::Mass, 6350.293180000001),
    unit("ton", &["ton", "tons"], Dim::Mass, 907184.7400000001),
    unit(
        "metric_ton",
        &["metric_ton", "metric_tons", "tonne", "tonnes", "t"],
        Dim::Mass,
        1_000_000.0,
    ),
    unit("second", &["second", "seconds", "s", "sec"], Dim::Time, 1.0),
    unit("minute", &["minute", "minutes", "min"], Dim::Time, 60.0),
    unit("hour", &["hour", "hours", "h", "hr"], Dim::Time, 3600.0),
    unit("day", &["day", "days", "d"], Dim::Time, 86400.0),
    unit("week", &["week", "weeks"], Dim::Time, 604_800.0),
    unit(
        "liter",
        &["liter", "liters", "litre", "litres", "l", "L"],
        Dim::Volume,
        0.0010000000000000002,
    ),
    unit(
        "milliliter",
        &[
            "milliliter",
            "milliliters",
            "millilitre",
            "millilitres",
            "ml",
            "mL",
        ],
        Dim::Volume,
        1.0000000000000002e-06,
    ),
    unit(
        "gallon",
        &["gallon", "gallons", "gal"],
        Dim::Volume,
        0.0037854117839999993,
    ),
    unit(
        "quart",
        &["quart", "quarts", "qt"],
        Dim::Volume,
        0.0009463529459999998,
    ),
    unit(
        "pint",
        &["pint", "pints", "pt"],
        Dim::Volume,
        0.0004731764729999999,
    ),
    unit("cup", &["cup", "cups"], Dim::Volume, 0.00023658823649999996),
    unit(
        "fluid_ounce",
        &["fluid_ounce", "fluid_ounces", "floz"],
        Dim::Volume,
        2.9573529562499994e-05,
    ),
    unit(
        "tablespoon",
        &["tablespoon", "tablespoons", "tbsp"],
        Dim::Volume,
        1.4786764781249997e-05,
    ),
    unit(
        "teaspoon",
        &["teaspoon", "teaspoons", "tsp"],
        Dim::Volume,
        4.928921593749999e-06,
    ),
    unit(
        "kelvin",
        &["kelvin", "kelvins", "K", "degK", "degree_Kelvin", "degreeK"],
        Dim::Temperature,
        1.0,
    ),
    Unit {
        canonical: "degree_Celsius",
        names: &["celsius", "degC", "degree_Celsius", "degreeC", "°C"],
        dim: Dim::Temperature,
        scale: 1.0,
        offset: 273.15,
    },
    Unit {
        canonical: "degree_Fahrenheit",
        names: &["fahrenheit", "degF", "degree_Fahrenheit", "degreeF", "°F"],
        dim: Dim::Temperature,
        scale: FIVE_NINTHS,
        offset: FAHRENHEIT_OFFSET,
    },
    Unit {
        canonical: "degree_Rankine",
        names: &["rankine", "degR", "degree_Rankine", "degreeR", "°R"],
        dim: Dim::Temperature,
        scale: FIVE_NINTHS,
        offset: 0.0,
    },
];

/// Why a conversion was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UnitError {
    /// A name this table does not hold (pint may or may not know it).
    #[error("unit '{0}' is not in this sandbox's unit table")]
    Unsupported(String),
    /// Units of different dimensions (pint's `DimensionalityError` text).
    #[error("Cannot convert from '{from}' ({from_dim}) to '{to}' ({to_dim})")]
    Dimensionality {
        /// pint's name of the source unit.
        from: &'static str,
        /// Its dimension.
        from_dim: &'static str,
        /// pint's name of the target unit.
        to: &'static str,
        /// Its dimension.
        to_dim: &'static str,
    },
}

fn find(name: &str) -> Option<&'static Unit> {
    UNITS.iter().find(|u| u.names.contains(&name.trim()))
}

/// `pint.Quantity(amount, from).to(to).magnitude`, retried lowercased when a name is
/// not found, as upstream's tool does.
pub fn convert(amount: f64, from: &str, to: &str) -> Result<f64, UnitError> {
    let (src, dst) = match (find(from), find(to)) {
        (Some(s), Some(d)) => (s, d),
        _ => {
            let (from, to) = (from.to_lowercase(), to.to_lowercase());
            match (find(&from), find(&to)) {
                (Some(s), Some(d)) => (s, d),
                (None, _) => return Err(UnitError::Unsupported(from)),
                (_, None) => return Err(UnitError::Unsupported(to)),
            }
        }
    };
    if src.dim != dst.dim {
        return Err(UnitError::Dimensionality {
            from: src.canonical,
            from_dim: src.dim.label(),
            to: dst.canonical,
            to_dim: dst.dim.label(),
        });
    }
    if src.offset == 0.0 && dst.offset == 0.0 {
        Ok(amount * (src.scale / dst.scale))
    } else {
        let reference = amount * src.scale + src.offset;
        Ok((reference - dst.offset) / dst.scale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperatures_match_pint_to_the_bit() {
        // pint 0.23's magnitudes.
        let cases = [
            ("celsius", "fahrenheit", 0.0, 31.999999999999936),
            ("celsius", "fahrenheit", 1.0, 33.79999999999993),
            ("celsius", "fahrenheit", 25.0, 76.99999999999993),
            ("celsius", "fahrenheit", 100.0, 211.99999999999991),
            ("celsius", "fahrenheit", -40.0, -40.000000000000064),
            ("celsius", "fahrenheit", 98.6, 209.47999999999996),
            ("fahrenheit", "celsius", 0.0, -17.777777777777743),
            ("fahrenheit", "celsius", 32.0, 5.684341886080802e-14),
            ("fahrenheit", "celsius", 98.6, 37.00000000000006),
            ("degF", "degC", 100.0, 37.77777777777783),
            ("celsius", "kelvin", -40.0, 233.14999999999998),
            ("kelvin", "celsius", 25.0, -248.14999999999998),
            ("Celsius", "Fahrenheit", 1.0, 33.79999999999993),
        ];
        for (from, to, amount, expected) in cases {
            assert_eq!(
                convert(amount, from, to),
                Ok(expected),
                "{amount} {from} → {to}"
            );
        }
    }

    #[test]
    fn multiplicative_units_match_pint() {
        assert_eq!(convert(1.0, "meter", "mile"), Ok(0.0006213711922373339));
        assert_eq!(convert(2.0, "kilometer", "mile"), Ok(1.242742384474668));
        assert_eq!(convert(1.0, "pound", "kilogram"), Ok(0.4535923700000001));
        // pint multiplies the definition chains of both units (gallon → cubic inch →
        // … and liter → decimetre³); dividing the two root factors can differ in the
        // last bits.
        let gallon = convert(1.0, "gallon", "liter").unwrap();
        assert!((gallon - 3.785411783999999).abs() < 1e-14);
    }

    #[test]
    fn refusals() {
        assert_eq!(
            convert(1.0, "meter", "kg").unwrap_err().to_string(),
            "Cannot convert from 'meter' ([length]) to 'kilogram' ([mass])"
        );
        assert_eq!(
            convert(1.0, "BEEG", "Yoshi"),
            Err(UnitError::Unsupported("beeg".into()))
        );
    }
}
