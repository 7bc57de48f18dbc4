//! Reading the user request as a model would: the fixed phrasing of its lines.
//!
//! The request text carries, each on a line of its own (other lines are free prose and
//! ignored):
//!
//! ```text
//! Required source route: workspace "W", region "R", collection "C".
//! Start with the search query "Q".
//! Requested facts: f1, f2, f3.
//! Decision policy: answer "A" if f1 equals "x" and f2 is greater than 3; otherwise answer "B".
//! State change: if the decision is "A", call TOOL with id = the id of the current record holding f1, field = "x"; otherwise change nothing.
//! State change: none; do not create, change, send, pay or delete anything.
//! Answer schema: respond with raw JSON only, exactly {"decision": "A" | "B", "f1": string, ..., "sources": [record id, ...]}.
//! ```
//!
//! Constants are JSON literals; they are read with a streaming JSON reader, so a string
//! constant may hold any character (" and ", "; ", quotes) without confusing the parser.
//! This module knows the phrasing only — nothing of the code that renders it.

use serde_json::Value as Json;

/// The source route the request names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Route {
    /// Workspace.
    pub workspace: String,
    /// Region.
    pub region: String,
    /// Collection.
    pub collection: String,
}

impl Route {
    /// How many of the three coordinates two routes share.
    pub fn shared(&self, other: &Route) -> usize {
        usize::from(self.workspace == other.workspace)
            + usize::from(self.region == other.region)
            + usize::from(self.collection == other.collection)
    }
}

/// A comparison operator of the policy language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `equals`
    Equals,
    /// `does not equal`
    NotEquals,
    /// `is greater than`
    GreaterThan,
    /// `is less than`
    LessThan,
    /// `is at least`
    AtLeast,
    /// `is at most`
    AtMost,
    /// `is before`
    Before,
    /// `is after`
    After,
    /// `is one of`
    OneOf,
}

/// Longest phrases first, so that no phrase is read as a prefix of another.
const OPS: [(&str, Op); 9] = [
    ("does not equal", Op::NotEquals),
    ("is greater than", Op::GreaterThan),
    ("is less than", Op::LessThan),
    ("is at least", Op::AtLeast),
    ("is at most", Op::AtMost),
    ("is before", Op::Before),
    ("is after", Op::After),
    ("is one of", Op::OneOf),
    ("equals", Op::Equals),
];

impl Op {
    /// The phrase the request uses.
    pub fn phrase(self) -> &'static str {
        OPS.iter()
            .find(|(_, op)| *op == self)
            .map_or("", |(p, _)| p)
    }
}

/// One comparison of a fact with a constant.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// Fact name.
    pub fact: String,
    /// Operator.
    pub op: Op,
    /// The constant.
    pub value: Json,
}

/// `answer "label" if c1 and c2`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Label.
    pub label: String,
    /// Conditions, all of which must hold.
    pub when: Vec<Condition>,
}

/// The decision policy: the first rule whose conditions all hold, else `otherwise`.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Rules in order.
    pub rules: Vec<Rule>,
    /// The default label.
    pub otherwise: String,
}

fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

impl Condition {
    /// Whether the condition holds for `value`; comparisons between mismatched types
    /// (a misread integer that is a string, say) do not hold.
    pub fn holds(&self, value: &Json) -> bool {
        let ints = || Some((value.as_i64()?, self.value.as_i64()?));
        let dates = || {
            let (a, b) = (value.as_str()?, self.value.as_str()?);
            (is_iso_date(a) && is_iso_date(b)).then(|| (a.to_string(), b.to_string()))
        };
        match self.op {
            Op::Equals => value == &self.value,
            Op::NotEquals => value != &self.value,
            Op::GreaterThan => ints().is_some_and(|(a, b)| a > b),
            Op::LessThan => ints().is_some_and(|(a, b)| a < b),
            Op::AtLeast => ints().is_some_and(|(a, b)| a >= b),
            Op::AtMost => ints().is_some_and(|(a, b)| a <= b),
            Op::Before => dates().is_some_and(|(a, b)| a < b),
            Op::After => dates().is_some_and(|(a, b)| a > b),
            Op::OneOf => self.value.as_array().is_some_and(|a| a.contains(value)),
        }
    }
}

impl Policy {
    /// The label for these fact values (a missing fact makes its conditions fail).
    pub fn decide(&self, fact: impl Fn(&str) -> Option<Json>) -> String {
        for rule in &self.rules {
            if rule
                .when
                .iter()
                .all(|c| fact(&c.fact).is_some_and(|v| c.holds(&v)))
            {
                return rule.label.clone();
            }
        }
        self.otherwise.clone()
    }
}

/// The value of one argument of the requested state change.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    /// A JSON constant.
    Literal(Json),
    /// `the value of FACT`.
    FactValue(String),
    /// `the id of the current record holding FACT`.
    HolderId(String),
}

/// `State change: if the decision is "A", call TOOL with k = v, ...; otherwise change nothing.`
#[derive(Debug, Clone, PartialEq)]
pub struct StateChange {
    /// The decision that fires it.
    pub when: String,
    /// The tool to call.
    pub tool: String,
    /// Arguments in order.
    pub args: Vec<(String, ArgValue)>,
}

/// The JSON type of an answer field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// `string`
    String,
    /// `integer`
    Integer,
    /// `boolean`
    Boolean,
    /// `"YYYY-MM-DD"`
    Date,
}

/// The answer schema: decision labels and the fact fields with their types.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerSchema {
    /// The decision labels offered.
    pub labels: Vec<String>,
    /// Fact fields in order.
    pub fields: Vec<(String, FieldType)>,
}

/// Everything the request asks, as read from its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Required route.
    pub route: Route,
    /// The first search query.
    pub start_query: String,
    /// Requested facts, in order.
    pub facts: Vec<String>,
    /// Decision policy.
    pub policy: Policy,
    /// The permitted state change, if any.
    pub state_change: Option<StateChange>,
    /// The answer schema.
    pub schema: AnswerSchema,
}

/// A request line that does not follow the phrasing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read the request: {0}")]
pub struct ParseError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError(msg.into()))
}

/// A cursor over one line.
struct Cursor<'a> {
    s: &'a str,
}

impl<'a> Cursor<'a> {
    fn eat(&mut self, prefix: &str) -> Result<(), ParseError> {
        match self.s.strip_prefix(prefix) {
            Some(rest) => {
                self.s = rest;
                Ok(())
            }
            None => err(format!("expected `{prefix}` at `{}`", head(self.s))),
        }
    }

    fn try_eat(&mut self, prefix: &str) -> bool {
        self.eat(prefix).is_ok()
    }

    fn json(&mut self) -> Result<Json, ParseError> {
        // Numbers and bare literals are not self-delimiting in a JSON stream ("30;" is a
        // stream error), so they are cut out first.
        let bare = self
            .s
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.')))
            .unwrap_or(self.s.len());
        let starts_bare = self.s.starts_with(|c: char| {
            c.is_ascii_digit() || c == '-' || c == 't' || c == 'f' || c == 'n'
        });
        if starts_bare && bare > 0 {
            let token = &self.s[..bare];
            let token = token.strip_suffix('.').unwrap_or(token);
            if let Ok(v) = serde_json::from_str::<Json>(token) {
                self.s = &self.s[token.len()..];
                return Ok(v);
            }
        }
        let mut stream = serde_json::Deserializer::from_str(self.s).into_iter::<Json>();
        match stream.next() {
            Some(Ok(v)) => {
                self.s = &self.s[stream.byte_offset()..];
                Ok(v)
            }
            _ => err(format!("expected a JSON constant at `{}`", head(self.s))),
        }
    }

    fn string(&mut self) -> Result<String, ParseError> {
        match self.json()? {
            Json::String(s) => Ok(s),
            other => err(format!("expected a string, found {other}")),
        }
    }

    /// An identifier: letters, digits, `_`, `-`, `.`.
    fn ident(&mut self) -> Result<String, ParseError> {
        self.name(true)
    }

    /// A name that may end a sentence: a trailing `.` is not part of it.
    fn ident_trim_dot(&mut self) -> Result<String, ParseError> {
        self.name(false)
    }

    /// Letters, digits, `_` and `-`, and `.` when `dots` says so.
    fn name(&mut self, dots: bool) -> Result<String, ParseError> {
        let end = self
            .s
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || (dots && c == '.')))
            .unwrap_or(self.s.len());
        if end == 0 {
            return err(format!("expected a name at `{}`", head(self.s)));
        }
        let (id, rest) = self.s.split_at(end);
        self.s = rest;
        Ok(id.to_string())
    }
}

fn head(s: &str) -> &str {
    let mut end = s.len().min(40);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn line_with<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(prefix))
}

/// Reads a request.
pub fn parse(text: &str) -> Result<Request, ParseError> {
    let need = |prefix: &str| {
        line_with(text, prefix).ok_or_else(|| ParseError(format!("no line starting `{prefix}`")))
    };
    let route = parse_route(need("Required source route: ")?)?;
    let start_query = {
        let mut c = Cursor {
            s: need("Start with the search query ")?,
        };
        c.string()?
    };
    let facts: Vec<String> = need("Requested facts: ")?
        .trim_end_matches('.')
        .split(',')
        .map(|f| f.trim().to_string())
        .filter(|f| !f.is_empty())
        .collect();
    let policy = parse_policy(need("Decision policy: ")?)?;
    let state_change = parse_state_change(need("State change: ")?)?;
    let schema = parse_schema(need("Answer schema: ")?)?;
    Ok(Request {
        route,
        start_query,
        facts,
        policy,
        state_change,
        schema,
    })
}

fn parse_route(s: &str) -> Result<Route, ParseError> {
    let mut c = Cursor { s };
    c.eat("workspace ")?;
    let workspace = c.string()?;
    c.eat(", region ")?;
    let region = c.string()?;
    c.eat(", collection ")?;
    let collection = c.string()?;
    Ok(Route {
        workspace,
        region,
        collection,
    })
}

/// `answer "A" if COND and COND; answer "B" if ...; otherwise answer "C".`
pub fn parse_policy(s: &str) -> Result<Policy, ParseError> {
    let mut c = Cursor { s };
    let mut rules = Vec::new();
    loop {
        if c.try_eat("otherwise answer ") {
            let otherwise = c.string()?;
            return Ok(Policy { rules, otherwise });
        }
        c.eat("answer ")?;
        let label = c.string()?;
        c.eat(" if ")?;
        let mut when = Vec::new();
        loop {
            let fact = c.ident()?;
            c.eat(" ")?;
            let Some(&(phrase, op)) = OPS.iter().find(|(p, _)| c.s.starts_with(p)) else {
                return err(format!("unknown comparison at `{}`", head(c.s)));
            };
            c.eat(phrase)?;
            c.eat(" ")?;
            let value = c.json()?;
            when.push(Condition { fact, op, value });
            if c.try_eat(" and ") {
                continue;
            }
            c.eat("; ")?;
            break;
        }
        rules.push(Rule { label, when });
    }
}

fn parse_state_change(s: &str) -> Result<Option<StateChange>, ParseError> {
    if s.starts_with("none") {
        return Ok(None);
    }
    let mut c = Cursor { s };
    c.eat("if the decision is ")?;
    let when = c.string()?;
    c.eat(", call ")?;
    let tool = c.ident()?;
    c.eat(" with ")?;
    let mut args = Vec::new();
    loop {
        let key = c.ident()?;
        c.eat(" = ")?;
        let value = if c.try_eat("the id of the current record holding ") {
            ArgValue::HolderId(c.ident_trim_dot()?)
        } else if c.try_eat("the value of ") {
            ArgValue::FactValue(c.ident_trim_dot()?)
        } else {
            ArgValue::Literal(c.json()?)
        };
        args.push((key, value));
        if c.try_eat(", ") {
            continue;
        }
        c.eat("; otherwise change nothing")?;
        break;
    }
    Ok(Some(StateChange { when, tool, args }))
}

/// `respond with raw JSON only, exactly {"decision": "A" | "B", "f": type, ..., "sources": [record id, ...]}.`
fn parse_schema(s: &str) -> Result<AnswerSchema, ParseError> {
    let mut c = Cursor { s };
    let at =
        c.s.find('{')
            .ok_or_else(|| ParseError("the answer schema has no `{`".into()))?;
    c.s = &c.s[at + 1..];
    c.eat("\"decision\": ")?;
    let mut labels = vec![c.string()?];
    while c.try_eat(" | ") {
        labels.push(c.string()?);
    }
    let mut fields = Vec::new();
    loop {
        c.eat(", ")?;
        let key = c.string()?;
        c.eat(": ")?;
        if key == "sources" {
            break;
        }
        let ty = if c.try_eat("string") {
            FieldType::String
        } else if c.try_eat("integer") {
            FieldType::Integer
        } else if c.try_eat("boolean") {
            FieldType::Boolean
        } else if c.try_eat("\"YYYY-MM-DD\"") {
            FieldType::Date
        } else {
            return err(format!("unknown field type at `{}`", head(c.s)));
        };
        fields.push((key, ty));
    }
    Ok(AnswerSchema { labels, fields })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HARBOR: &str = r#"Collections review for invoice INV-20417.
Required source route: workspace "northwind-finance", region "eu-west", collection "receivables".
Start with the search query "INV-20417".
Requested facts: status, days_overdue, commitment_date, collector_email.
Decision policy: answer "escalate" if status equals "overdue" and days_overdue is greater than 30 and commitment_date is before "2026-03-01"; otherwise answer "hold".
State change: if the decision is "escalate", call nwf_euw_recv_update_invoice with id = the id of the current record holding status, field = "escalation", value = "collections"; otherwise change nothing.
Evidence: list in "sources" the id of every current record that supplied a requested fact.
Answer schema: respond with raw JSON only, exactly {"decision": "escalate" | "hold", "status": string, "days_overdue": integer, "commitment_date": "YYYY-MM-DD", "collector_email": string, "sources": [record id, ...]}."#;

    #[test]
    fn reads_every_line_of_a_request() {
        let r = match parse(HARBOR) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(r.route.workspace, "northwind-finance");
        assert_eq!(r.route.region, "eu-west");
        assert_eq!(r.route.collection, "receivables");
        assert_eq!(r.start_query, "INV-20417");
        assert_eq!(
            r.facts,
            [
                "status",
                "days_overdue",
                "commitment_date",
                "collector_email"
            ]
        );
        assert_eq!(r.policy.rules.len(), 1);
        assert_eq!(r.policy.rules[0].when[1].op, Op::GreaterThan);
        assert_eq!(r.policy.rules[0].when[1].value, json!(30));
        assert_eq!(r.policy.otherwise, "hold");
        let sc = r.state_change.unwrap_or_else(|| panic!("no state change"));
        assert_eq!(sc.tool, "nwf_euw_recv_update_invoice");
        assert_eq!(
            sc.args[0],
            ("id".into(), ArgValue::HolderId("status".into()))
        );
        assert_eq!(
            sc.args[2],
            ("value".into(), ArgValue::Literal(json!("collections")))
        );
        assert_eq!(r.schema.labels, ["escalate", "hold"]);
        assert_eq!(
            r.schema.fields[2],
            ("commitment_date".into(), FieldType::Date)
        );
    }

    #[test]
    fn constants_may_hold_separators() {
        let p = parse_policy(
            r#"answer "a; b" if x equals "p and q; r" and y is one of ["s", "t"]; otherwise answer "c"."#,
        );
        let p = p.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.rules[0].label, "a; b");
        assert_eq!(p.rules[0].when[0].value, json!("p and q; r"));
        assert_eq!(p.rules[0].when[1].op, Op::OneOf);
        let facts = |x: &'static str, y: &'static str| {
            move |k: &str| match k {
                "x" => Some(json!(x)),
                "y" => Some(json!(y)),
                _ => None,
            }
        };
        assert_eq!(p.decide(facts("p and q; r", "t")), "a; b");
        assert_eq!(p.decide(facts("p and q; r", "u")), "c");
    }

    #[test]
    fn a_send_with_prose_and_fact_values() {
        let line = r#"State change: if the decision is "notify", call x_send_to_owner with to = the value of owner_email, subject = "CTR-1", body = "Your loop is confirmed; see you."; otherwise change nothing."#;
        let sc = parse_state_change(line.trim_start_matches("State change: "));
        let sc = sc
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("none"));
        assert_eq!(sc.args[0].1, ArgValue::FactValue("owner_email".into()));
        assert_eq!(
            sc.args[2].1,
            ArgValue::Literal(json!("Your loop is confirmed; see you."))
        );
        assert_eq!(
            parse_state_change("none; do not create anything."),
            Ok(None)
        );
    }

    #[test]
    fn dates_and_mismatched_types() {
        let c = Condition {
            fact: "d".into(),
            op: Op::Before,
            value: json!("2026-03-01"),
        };
        assert!(c.holds(&json!("2026-02-28")));
        assert!(!c.holds(&json!("2026-03-01")));
        assert!(!c.holds(&json!(5)));
        let g = Condition {
            fact: "n".into(),
            op: Op::GreaterThan,
            value: json!(3),
        };
        assert!(g.holds(&json!(4)) && !g.holds(&json!("4")));
    }
}
