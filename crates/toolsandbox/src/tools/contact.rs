//! The contact book (upstream's `tools/contact.py`).
//!
//! `search_contacts` matches `person_id`, `phone_number` and `is_self` exactly and
//! `name` and `relationship` fuzzily (`WRatio` ≥ 90), and is not type-checked upstream.
//! Adding a contact refuses a second self entry; a modified contact is removed and
//! added again, so it moves to the end of the book. Phone numbers are checked as
//! `phonenumbers.parse` checks them.
//!
//! Never: lets the book hold two self entries.

use serde_json::{Map, Value};

use super::args::{check_phone, not_given, opt, req, Args, Param, Ty};
use super::search::{filter, How};
use super::{new_id, rows_value, Module, Tool, ToolError};
use crate::clock::Clock;
use crate::context::{Context, Namespace, Row};
use crate::py;

const COLUMNS: &[&str] = &[
    "person_id",
    "name",
    "phone_number",
    "relationship",
    "is_self",
];

pub(crate) const TOOLS: &[Tool] = &[
    Tool {
        name: "add_contact",
        module: Module::Contact,
        params: &[
            req("name", Ty::Str),
            req("phone_number", Ty::Str),
            opt("relationship", Ty::Str, true),
            opt("is_self", Ty::Bool, false),
        ],
        typechecked: true,
        result_keys: &[],
        run: add_contact,
    },
    Tool {
        name: "modify_contact",
        module: Module::Contact,
        params: &[
            req("person_id", Ty::Str),
            not_given("name", Ty::Str),
            not_given("phone_number", Ty::Str),
            not_given("relationship", Ty::Str),
            not_given("is_self", Ty::Bool),
        ],
        typechecked: true,
        result_keys: &[],
        run: modify_contact,
    },
    Tool {
        name: "remove_contact",
        module: Module::Contact,
        params: &[req("person_id", Ty::Str)],
        typechecked: true,
        result_keys: &[],
        run: remove_contact,
    },
    Tool {
        name: "search_contacts",
        module: Module::Contact,
        params: SEARCH,
        typechecked: false,
        result_keys: COLUMNS,
        run: |c, _, a| search(c, a).map(rows_value),
    },
];

const SEARCH: &[Param] = &[
    not_given("person_id", Ty::Str),
    not_given("name", Ty::Str),
    not_given("phone_number", Ty::Str),
    not_given("relationship", Ty::Str),
    not_given("is_self", Ty::Bool),
];

/// upstream's `search_contacts` on the current snapshot.
pub(crate) fn search(ctx: &Context, args: &Args) -> Result<Vec<Row>, ToolError> {
    check_phone(args, "phone_number")?;
    let rows = ctx.get_database(Namespace::Contact, None, false)?;
    filter(
        rows,
        &[
            ("person_id", How::Exact, args.get("person_id")),
            ("name", How::Fuzzy(90.0), args.get("name")),
            ("phone_number", How::Exact, args.get("phone_number")),
            ("relationship", How::Fuzzy(90.0), args.get("relationship")),
            ("is_self", How::Exact, args.get("is_self")),
        ],
    )
}

/// The contacts whose `column` is `value`, as a nested `search_contacts` call finds them.
pub(crate) fn search_by(ctx: &Context, column: &str, value: Value) -> Result<Vec<Row>, ToolError> {
    let mut m = Map::new();
    m.insert(column.into(), value);
    let args = Args::parse("search_contacts", SEARCH, false, &Value::Object(m))?;
    search(ctx, &args)
}

fn self_exists_error() -> ToolError {
    ToolError::Duplicate("Self entry already exists. Cannot add another one.".into())
}

fn add_contact(ctx: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    check_phone(args, "phone_number")?;
    let is_self = args.flag("is_self").unwrap_or(false);
    if is_self && !search_by(ctx, "is_self", Value::Bool(true))?.is_empty() {
        return Err(self_exists_error());
    }
    let mut row = Row::new();
    for column in ["name", "phone_number", "relationship"] {
        row.insert(
            column.into(),
            args.get(column).cloned().unwrap_or(Value::Null),
        );
    }
    row.insert("is_self".into(), Value::Bool(is_self));
    let id = new_id(
        ctx,
        Namespace::Contact,
        "person_id",
        &Value::Object(row.clone()),
    );
    row.insert("person_id".into(), Value::from(id.as_str()));
    ctx.add_to_database(Namespace::Contact, vec![row])?;
    Ok(Value::from(id))
}

fn modify_contact(ctx: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    let fields = ["name", "phone_number", "relationship", "is_self"];
    if fields.iter().all(|f| args.get(f).is_none()) {
        return Err(ToolError::Value(
            "No update information given. At least one new field should be provided among \
             [name, phone_number, relationship, is_self] in order to modify contact"
                .into(),
        ));
    }
    check_phone(args, "phone_number")?;
    let person_id = args.text("person_id").unwrap_or_default();
    let selves = search_by(ctx, "is_self", Value::Bool(true))?;
    if let Some(first) = selves.first() {
        if args.flag("is_self") == Some(true)
            && first.get("person_id") != Some(&Value::from(person_id))
        {
            return Err(self_exists_error());
        }
    }
    let matching: Vec<Row> = ctx
        .get_database(Namespace::Contact, None, false)?
        .into_iter()
        .filter(|r| r.get("person_id").and_then(Value::as_str) == Some(person_id))
        .collect();
    let id_text = format!("person_id={}", py::str_repr(person_id));
    let mut row = match matching.as_slice() {
        [] => {
            return Err(ToolError::NoData(format!(
                "No db entry matching {id_text} found"
            )))
        }
        [one] => one.clone(),
        _ => {
            return Err(ToolError::Duplicate(format!(
                "More than 1 entry with {id_text} found"
            )))
        }
    };
    for f in fields {
        if let Some(v) = args.get(f) {
            row.insert(f.into(), v.clone());
        }
    }
    ctx.remove_from_database(Namespace::Contact, |r| {
        r.get("person_id").and_then(Value::as_str) == Some(person_id)
    })?;
    ctx.add_to_database(Namespace::Contact, vec![row])?;
    Ok(Value::Null)
}

fn remove_contact(ctx: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    let person_id = args.text("person_id").unwrap_or_default();
    ctx.remove_from_database(Namespace::Contact, |r| {
        r.get("person_id").and_then(Value::as_str) == Some(person_id)
    })
    .map_err(|_| {
        ToolError::NoData(format!(
            "No db entry matching person_id={} found",
            py::str_repr(person_id)
        ))
    })?;
    Ok(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::execute;
    use crate::tools::tests::base_world;
    use serde_json::json;

    fn run(ctx: &mut Context, name: &str, args: Value) -> Result<Value, ToolError> {
        execute(ctx, Clock::EXPORT, name, &args)
    }

    fn names(v: &Value) -> Vec<&str> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn search_matches_exactly_and_fuzzily() {
        let mut w = base_world();
        let found = run(&mut w, "search_contacts", json!({"name": "Fredrik"})).unwrap();
        assert_eq!(names(&found), ["Fredrik Thordendal"]);
        assert_eq!(
            found[0],
            json!({"person_id": "9e137f06-916a-5310-8174-cf0b7e9f7054", "name": "Fredrik Thordendal",
                   "phone_number": "+12453344098", "relationship": "friend", "is_self": false})
        );
        let friends = run(&mut w, "search_contacts", json!({"relationship": "friend"})).unwrap();
        assert_eq!(names(&friends), ["Fredrik Thordendal", "John Petrucci"]);
        let me = run(&mut w, "search_contacts", json!({"relationship": "myself"})).unwrap();
        assert_eq!(names(&me), ["Tomas Haake"]);
        let by_phone = run(
            &mut w,
            "search_contacts",
            json!({"phone_number": "+10000000000"}),
        );
        assert_eq!(names(&by_phone.unwrap()), ["Homer S"]);
        let none = run(&mut w, "search_contacts", json!({"name": "Bart"})).unwrap();
        assert_eq!(none, json!([]));
        assert!(matches!(
            run(&mut w, "search_contacts", json!({})),
            Err(ToolError::Value(_))
        ));
        assert_eq!(
            run(&mut w, "search_contacts", json!({"phone_number": "1234"}))
                .unwrap_err()
                .to_string(),
            "phonenumbers.phonenumberutil.NumberParseException: (0) Missing or invalid default region."
        );
    }

    #[test]
    fn add_then_find_and_refuse_a_second_self() {
        let mut w = base_world();
        let id = run(
            &mut w,
            "add_contact",
            json!({"name": "Bart", "phone_number": "+19876543210", "relationship": "son"}),
        )
        .unwrap();
        let id = id.as_str().unwrap().to_owned();
        assert_eq!(id.len(), 36);
        let found = run(&mut w, "search_contacts", json!({"person_id": id})).unwrap();
        assert_eq!(
            found,
            json!([{"person_id": id, "name": "Bart", "phone_number": "+19876543210",
                    "relationship": "son", "is_self": false}])
        );
        // The same contact again gets a different id.
        let again = run(
            &mut w,
            "add_contact",
            json!({"name": "Bart", "phone_number": "+19876543210", "relationship": "son"}),
        )
        .unwrap();
        assert_ne!(again.as_str().unwrap(), id);
        assert_eq!(
            run(
                &mut w,
                "add_contact",
                json!({"name": "Me", "phone_number": "+11111111111", "is_self": true})
            )
            .unwrap_err()
            .to_string(),
            "polars.exceptions.DuplicateError: Self entry already exists. Cannot add another one."
        );
    }

    #[test]
    fn ids_are_deterministic() {
        let add = json!({"name": "Bart", "phone_number": "+19876543210"});
        let a = run(&mut base_world(), "add_contact", add.clone()).unwrap();
        let b = run(&mut base_world(), "add_contact", add).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn modify_moves_the_contact_to_the_end() {
        let mut w = base_world();
        let homer = "e3570ab6-0819-5032-be1e-2b366390c8ef";
        run(
            &mut w,
            "modify_contact",
            json!({"person_id": homer, "phone_number": "+15555555555"}),
        )
        .unwrap();
        let all = w.get_database(Namespace::Contact, None, false).unwrap();
        assert_eq!(all.len(), 4);
        assert_eq!(all[3]["person_id"], homer);
        assert_eq!(all[3]["phone_number"], "+15555555555");
        assert_eq!(all[3]["name"], "Homer S");
        assert_eq!(
            run(&mut w, "modify_contact", json!({"person_id": homer})).unwrap_err().to_string(),
            "ValueError: No update information given. At least one new field should be provided among \
             [name, phone_number, relationship, is_self] in order to modify contact"
        );
        assert_eq!(
            run(
                &mut w,
                "modify_contact",
                json!({"person_id": "nope", "name": "X"})
            )
            .unwrap_err()
            .to_string(),
            "polars.exceptions.NoDataError: No db entry matching person_id='nope' found"
        );
        assert!(matches!(
            run(
                &mut w,
                "modify_contact",
                json!({"person_id": homer, "is_self": true})
            ),
            Err(ToolError::Duplicate(_))
        ));
    }

    #[test]
    fn remove() {
        let mut w = base_world();
        let homer = "e3570ab6-0819-5032-be1e-2b366390c8ef";
        run(&mut w, "remove_contact", json!({"person_id": homer})).unwrap();
        assert_eq!(
            w.get_database(Namespace::Contact, None, false)
                .unwrap()
                .len(),
            3
        );
        assert_eq!(
            run(&mut w, "remove_contact", json!({"person_id": homer}))
                .unwrap_err()
                .to_string(),
            format!(
                "polars.exceptions.NoDataError: No db entry matching person_id='{homer}' found"
            )
        );
    }
}
