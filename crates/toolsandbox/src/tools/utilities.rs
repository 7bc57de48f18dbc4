//! Time, unit, distance and holiday utilities (upstream's `tools/utilities.py`).
//!
//! Time is UTC and Python's naive `datetime` arithmetic ([`crate::calendar`]); "now"
//! is the frozen [`Clock`]. Units are pint's for the table in [`crate::units`], the
//! distance is the WGS-84 geodesic ([`crate::geo`]), and `search_holiday` ranks the US
//! holidays of the year by `partial_ratio` against the name and answers the best one's
//! midnight if it scores above 90 (ties go to the later date), needing wifi as upstream
//! does to simulate a web service.
//!
//! Never: reads the system clock or time zone.

use serde_json::{json, Value};

use super::args::{check_latitude, check_longitude, check_timestamp, opt, req, Args, Ty};
use super::setting;
use super::{Module, Tool, ToolError};
use crate::calendar::{self, DateTime, TimeError};
use crate::clock::Clock;
use crate::context::Context;
use crate::{fuzzy, geo, units};

pub(crate) const TOOLS: &[Tool] = &[
    tool("get_current_timestamp", &[], &[], |_, clock, _| {
        Ok(Value::from(clock.now()))
    }),
    tool(
        "timestamp_to_datetime_info",
        &[req("timestamp", Ty::Float)],
        &[
            "year",
            "month",
            "day",
            "hour",
            "minute",
            "second",
            "isoweekday",
        ],
        timestamp_to_datetime_info,
    ),
    tool(
        "datetime_info_to_timestamp",
        &[
            req("year", Ty::Int),
            req("month", Ty::Int),
            req("day", Ty::Int),
            req("hour", Ty::Int),
            req("minute", Ty::Int),
            req("second", Ty::Int),
        ],
        &[],
        datetime_info_to_timestamp,
    ),
    tool(
        "shift_timestamp",
        &[
            req("timestamp", Ty::Float),
            opt("weeks", Ty::Int, false),
            opt("days", Ty::Int, false),
            opt("hours", Ty::Int, false),
            opt("minutes", Ty::Int, false),
            opt("seconds", Ty::Int, false),
        ],
        &[],
        shift_timestamp,
    ),
    tool(
        "timestamp_diff",
        &[req("timestamp_0", Ty::Float), req("timestamp_1", Ty::Float)],
        &["days", "seconds"],
        timestamp_diff,
    ),
    tool(
        "seconds_to_hours_minutes_seconds",
        &[req("seconds", Ty::Float)],
        &["hour", "minute", "second"],
        seconds_to_hours_minutes_seconds,
    ),
    tool(
        "unit_conversion",
        &[
            req("amount", Ty::Float),
            req("from_unit", Ty::Str),
            req("to_unit", Ty::Str),
        ],
        &[],
        unit_conversion,
    ),
    tool(
        "calculate_lat_lon_distance",
        &[
            req("latitude_0", Ty::Float),
            req("longitude_0", Ty::Float),
            req("latitude_1", Ty::Float),
            req("longitude_1", Ty::Float),
        ],
        &[],
        calculate_lat_lon_distance,
    ),
    tool(
        "search_holiday",
        &[req("holiday_name", Ty::Str), opt("year", Ty::Int, true)],
        &[],
        search_holiday,
    ),
];

const fn tool(
    name: &'static str,
    params: &'static [super::args::Param],
    result_keys: &'static [&'static str],
    run: fn(&mut Context, Clock, &Args) -> Result<Value, ToolError>,
) -> Tool {
    Tool {
        name,
        module: Module::Utilities,
        params,
        typechecked: true,
        result_keys,
        run,
    }
}

fn time_error(e: TimeError) -> ToolError {
    ToolError::Value(e.to_string())
}

fn datetime_arg(args: &Args, name: &str) -> Result<DateTime, ToolError> {
    DateTime::from_timestamp(args.number(name).unwrap_or(f64::NAN)).map_err(time_error)
}

fn timestamp_to_datetime_info(_: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    check_timestamp(args, "timestamp")?;
    let dt = datetime_arg(args, "timestamp")?;
    let (year, month, day) = dt.date();
    let (hour, minute, second) = dt.time();
    Ok(
        json!({"year": year, "month": month, "day": day, "hour": hour, "minute": minute,
              "second": second, "isoweekday": dt.iso_weekday()}),
    )
}

fn datetime_info_to_timestamp(_: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    let get = |n: &str| args.int(n).unwrap_or(0);
    let (year, month, day) = (get("year"), get("month"), get("day"));
    let (hour, minute, second) = (get("hour"), get("minute"), get("second"));
    // Python's `datetime` constructor checks in this order, with these messages.
    if !(1..=9999).contains(&year) {
        return Err(ToolError::Value(format!("year {year} is out of range")));
    }
    if !(1..=12).contains(&month) {
        return Err(ToolError::Value("month must be in 1..12".into()));
    }
    let month = month as u32;
    if !(1..=i64::from(calendar::days_in_month(year, month))).contains(&day) {
        return Err(ToolError::Value("day is out of range for month".into()));
    }
    for (value, name, max) in [
        (hour, "hour", 23),
        (minute, "minute", 59),
        (second, "second", 59),
    ] {
        if !(0..=max).contains(&value) {
            return Err(ToolError::Value(format!("{name} must be in 0..{max}")));
        }
    }
    let seconds = calendar::days_from_civil(year, month, day as u32) * 86_400
        + hour * 3600
        + minute * 60
        + second;
    Ok(Value::from(seconds as f64))
}

fn shift_timestamp(_: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    check_timestamp(args, "timestamp")?;
    let dt = datetime_arg(args, "timestamp")?;
    let get = |n: &str| i128::from(args.int(n).unwrap_or(0));
    let delta = get("weeks") * 604_800
        + get("days") * 86_400
        + get("hours") * 3600
        + get("minutes") * 60
        + get("seconds");
    let delta =
        i64::try_from(delta).map_err(|_| ToolError::Value("date value out of range".into()))?;
    let shifted = dt
        .shifted(delta)
        .map_err(|_| ToolError::Value("date value out of range".into()))?;
    Ok(Value::from(shifted.timestamp()))
}

fn timestamp_diff(_: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    check_timestamp(args, "timestamp_0")?;
    check_timestamp(args, "timestamp_1")?;
    let t0 = datetime_arg(args, "timestamp_0")?;
    let t1 = datetime_arg(args, "timestamp_1")?;
    let micros = t1.total_micros() - t0.total_micros();
    let day = 86_400_000_000i128;
    let days = micros.div_euclid(day);
    let seconds = micros.rem_euclid(day) / 1_000_000;
    Ok(json!({"days": days as i64, "seconds": seconds as i64}))
}

fn seconds_to_hours_minutes_seconds(
    _: &mut Context,
    _: Clock,
    args: &Args,
) -> Result<Value, ToolError> {
    let dt = datetime_arg(args, "seconds")?;
    let (hour, minute, second) = dt.time();
    Ok(json!({"hour": hour, "minute": minute, "second": second}))
}

fn unit_conversion(_: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    let amount = args.number("amount").unwrap_or(f64::NAN);
    let from = args.text("from_unit").unwrap_or_default();
    let to = args.text("to_unit").unwrap_or_default();
    match units::convert(amount, from, to) {
        Ok(v) => Ok(Value::from(v)),
        Err(e @ units::UnitError::Dimensionality { .. }) => {
            Err(ToolError::Dimensionality(e.to_string()))
        }
        Err(e @ units::UnitError::Unsupported(_)) => Err(ToolError::Unsupported(e.to_string())),
    }
}

fn calculate_lat_lon_distance(_: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    check_latitude(args, "latitude_0")?;
    check_latitude(args, "latitude_1")?;
    check_longitude(args, "longitude_0")?;
    check_longitude(args, "longitude_1")?;
    let n = |k: &str| args.number(k).unwrap_or(f64::NAN);
    geo::geodesic_km(
        n("latitude_0"),
        n("longitude_0"),
        n("latitude_1"),
        n("longitude_1"),
    )
    .map(Value::from)
    .ok_or_else(|| {
        ToolError::Unsupported(
            "the geodesic between nearly antipodal points does not converge here".into(),
        )
    })
}

fn search_holiday(ctx: &mut Context, clock: Clock, args: &Args) -> Result<Value, ToolError> {
    if !setting::get(ctx, "wifi")? {
        return Err(ToolError::Connection("Wifi is not enabled".into()));
    }
    let year = match args.int("year") {
        Some(y) => y,
        None => {
            DateTime::from_timestamp(clock.now())
                .map_err(time_error)?
                .date()
                .0
        }
    };
    if !(1..=9999).contains(&year) {
        return Err(ToolError::Unsupported(format!(
            "holidays of the year {year}"
        )));
    }
    let query = fuzzy::default_process(args.text("holiday_name").unwrap_or_default());
    let best = calendar::us_holidays(year)
        .into_iter()
        .map(|(date, name)| {
            let score = fuzzy::partial_ratio(&query, &fuzzy::default_process(&name));
            (score, date, name)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    Ok(match best {
        Some((score, (y, m, d), _)) if score > 90.0 => {
            Value::from(DateTime::from_date(y, m, d).timestamp())
        }
        _ => Value::Null,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::execute;
    use crate::tools::tests::base_world;

    fn run(name: &str, args: Value) -> Result<Value, ToolError> {
        execute(&mut base_world(), Clock::EXPORT, name, &args)
    }

    #[test]
    fn now_and_datetime_info() {
        assert_eq!(
            run("get_current_timestamp", json!({})),
            Ok(json!(1796455147.0))
        );
        assert_eq!(
            run(
                "timestamp_to_datetime_info",
                json!({"timestamp": 1796455147.0})
            ),
            Ok(
                json!({"year": 2026, "month": 12, "day": 5, "hour": 7, "minute": 19, "second": 7, "isoweekday": 6})
            )
        );
        // upstream's own test, in UTC: 2024-03-25 22:02:30, a Monday.
        let info =
            json!({"year": 2024, "month": 3, "day": 25, "hour": 22, "minute": 2, "second": 30});
        let ts = run("datetime_info_to_timestamp", info).unwrap();
        assert_eq!(ts, json!(1711404150.0));
        assert_eq!(
            run("timestamp_to_datetime_info", json!({"timestamp": ts})).unwrap()["isoweekday"],
            1
        );
        // The milestone of add_reminder_content_and_date_and_time.
        let info =
            json!({"year": 2024, "month": 3, "day": 22, "hour": 17, "minute": 0, "second": 0});
        assert_eq!(
            run("datetime_info_to_timestamp", info),
            Ok(json!(1711126800.0))
        );
        assert_eq!(
            run(
                "datetime_info_to_timestamp",
                json!({"year": 2024, "month": 2, "day": 30, "hour": 0, "minute": 0, "second": 0})
            )
            .unwrap_err()
            .to_string(),
            "ValueError: day is out of range for month"
        );
        assert!(matches!(
            run(
                "datetime_info_to_timestamp",
                json!({"year": 2024.0, "month": 2, "day": 3, "hour": 0, "minute": 0, "second": 0})
            ),
            Err(ToolError::Type(_))
        ));
    }

    #[test]
    fn shifting_and_differences() {
        // Tomorrow at 5 PM, as the reminder milestones expect it.
        let tomorrow = run(
            "shift_timestamp",
            json!({"timestamp": 1796455147.0, "days": 1}),
        )
        .unwrap();
        assert_eq!(tomorrow, json!(1796541547.0));
        assert_eq!(
            run(
                "shift_timestamp",
                json!({"timestamp": 1796181239.741119, "weeks": -1, "hours": 2})
            ),
            Ok(json!(1795583639.0 + 741119.0 / 1e6))
        );
        assert_eq!(
            run(
                "timestamp_diff",
                json!({"timestamp_0": 1796455147.0, "timestamp_1": 1798156800.0})
            ),
            Ok(json!({"days": 19, "seconds": 60053}))
        );
        assert_eq!(
            run(
                "timestamp_diff",
                json!({"timestamp_0": 1798156800.0, "timestamp_1": 1796455147.0})
            ),
            Ok(json!({"days": -20, "seconds": 26347}))
        );
        assert_eq!(
            run("seconds_to_hours_minutes_seconds", json!({"seconds": 3725})),
            Ok(json!({"hour": 1, "minute": 2, "second": 5}))
        );
    }

    #[test]
    fn units_and_distance() {
        let f = run(
            "unit_conversion",
            json!({"amount": 1, "from_unit": "Celsius", "to_unit": "Fahrenheit"}),
        );
        assert_eq!(f, Ok(json!(33.79999999999993)));
        assert_eq!(
            run("unit_conversion", json!({"amount": 1.0, "from_unit": "meter", "to_unit": "kg"}))
                .unwrap_err()
                .to_string(),
            "pint.errors.DimensionalityError: Cannot convert from 'meter' ([length]) to 'kilogram' ([mass])"
        );
        assert!(matches!(
            run(
                "unit_conversion",
                json!({"amount": 1.0, "from_unit": "furlong", "to_unit": "meter"})
            ),
            Err(ToolError::Unsupported(_))
        ));
        let d = run(
            "calculate_lat_lon_distance",
            json!({"latitude_0": 37.334606, "longitude_0": -122.009102, "latitude_1": 37.8199, "longitude_1": -122.4786}),
        )
        .unwrap();
        assert!((d.as_f64().unwrap() - 67.97851262172776).abs() < 1e-6);
    }

    #[test]
    fn holidays_need_wifi_and_default_to_this_year() {
        let christmas_2026 = 1798156800.0;
        assert_eq!(
            run("search_holiday", json!({"holiday_name": "Christmas Day"})),
            Ok(json!(christmas_2026))
        );
        assert_eq!(
            run(
                "search_holiday",
                json!({"holiday_name": "Christmas Day", "year": 2026})
            ),
            Ok(json!(christmas_2026))
        );
        assert_eq!(
            run(
                "search_holiday",
                json!({"holiday_name": "Thanksgiving", "year": null})
            ),
            Ok(json!(1795651200.0))
        );
        // upstream's own test cases.
        assert_eq!(
            run("search_holiday", json!({"holiday_name": "Axlearn Day"})),
            Ok(Value::Null)
        );
        assert_eq!(
            run(
                "search_holiday",
                json!({"holiday_name": "new years", "year": 2024})
            ),
            Ok(json!(1704067200.0))
        );
        assert_eq!(
            run(
                "search_holiday",
                json!({"holiday_name": "new years eve", "year": 2024})
            ),
            Ok(Value::Null)
        );
        let mut w = base_world();
        execute(
            &mut w,
            Clock::EXPORT,
            "set_wifi_status",
            &json!({"on": false}),
        )
        .unwrap();
        assert_eq!(
            execute(
                &mut w,
                Clock::EXPORT,
                "search_holiday",
                &json!({"holiday_name": "Christmas"})
            )
            .unwrap_err()
            .to_string(),
            "ConnectionError: Wifi is not enabled"
        );
    }
}
