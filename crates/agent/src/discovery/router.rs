//! The connector-first router: before the first request, keep only the tools of the
//! connector that the user request's route names, when that route is unique.
//!
//! Owns: reading the route from the request (`workspace "W", region "R", collection
//! "C"`, the three values JSON strings, anywhere in the text) and the coordinates from
//! each schema's description (`Connector coordinates: workspace=W; region=R;
//! collection=C.`), and the decision. A connector, as the router sees it, is the set
//! of visible tools that declare the same three coordinates.
//!
//! The decision: every distinct route the request names is collected. No route, or
//! more than one, leaves the menu unchanged ([`Unchanged::NoRoute`],
//! [`Unchanged::Ambiguous`]); so does a route that no visible tool declares
//! ([`Unchanged::NoConnector`]). Otherwise the menu narrows to the tools whose three
//! coordinates equal the route's, in menu order: a connector that shares two of the
//! three (a near-miss) is dropped like any other.
//!
//! It reads what a model is shown and nothing else: its inputs are the rendered
//! request and the tool schemas (name, description, parameters) — never which tools
//! are operational or required. This file is deliberately independent of the
//! simulated agents' own reading of the same text (`crate::sim`): the router is a
//! repair, not part of the panel.
//!
//! Never: guesses between candidate routes, narrows on a partial match, or looks at
//! the tools' names to decide which connector is meant.

use crate::ToolSchema;

/// The three coordinates of a route or a connector.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Coordinates {
    /// Workspace.
    pub workspace: String,
    /// Region.
    pub region: String,
    /// Collection.
    pub collection: String,
}

/// Why the router left the menu as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unchanged {
    /// The request names no route.
    NoRoute,
    /// The request names several different routes.
    Ambiguous(Vec<Coordinates>),
    /// No visible tool declares the route's coordinates.
    NoConnector(Coordinates),
}

/// What the router decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Keep these menu positions (ascending): the tools of the route's connector.
    Narrow {
        /// The route the request names.
        route: Coordinates,
        /// Menu positions kept.
        keep: Vec<usize>,
    },
    /// Leave the menu as it is.
    Unchanged(Unchanged),
}

impl Decision {
    /// The positions visible after the decision, over a menu of `len` schemas.
    pub fn visible(&self, len: usize) -> Vec<usize> {
        match self {
            Decision::Narrow { keep, .. } => keep.clone(),
            Decision::Unchanged(_) => (0..len).collect(),
        }
    }
}

/// Routes `menu` for `request`.
pub fn route(request: &str, menu: &[ToolSchema]) -> Decision {
    let mut routes = requested_routes(request);
    routes.sort();
    routes.dedup();
    let route = match routes.len() {
        0 => return Decision::Unchanged(Unchanged::NoRoute),
        1 => routes.remove(0),
        _ => return Decision::Unchanged(Unchanged::Ambiguous(routes)),
    };
    let keep: Vec<usize> = menu
        .iter()
        .enumerate()
        .filter(|(_, t)| declared(&t.description).as_ref() == Some(&route))
        .map(|(i, _)| i)
        .collect();
    if keep.is_empty() {
        return Decision::Unchanged(Unchanged::NoConnector(route));
    }
    Decision::Narrow { route, keep }
}

/// Every `workspace "W", region "R", collection "C"` of the text, in order.
pub fn requested_routes(text: &str) -> Vec<Coordinates> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("workspace ") {
        let after = &rest[at + "workspace ".len()..];
        match route_at(after) {
            Some((route, tail)) => {
                out.push(route);
                rest = tail;
            }
            None => rest = after,
        }
    }
    out
}

/// Reads `"W", region "R", collection "C"` at the start of `s`; returns the route and
/// what follows it.
fn route_at(s: &str) -> Option<(Coordinates, &str)> {
    let (workspace, s) = json_string(s)?;
    let s = s.strip_prefix(", region ")?;
    let (region, s) = json_string(s)?;
    let s = s.strip_prefix(", collection ")?;
    let (collection, s) = json_string(s)?;
    Some((
        Coordinates {
            workspace,
            region,
            collection,
        },
        s,
    ))
}

/// A JSON string literal at the start of `s`, and what follows it.
fn json_string(s: &str) -> Option<(String, &str)> {
    if !s.starts_with('"') {
        return None;
    }
    let mut stream = serde_json::Deserializer::from_str(s).into_iter::<String>();
    let value = stream.next()?.ok()?;
    let used = stream.byte_offset();
    Some((value, s.get(used..)?))
}

/// The coordinates a description declares, if it declares all three.
pub fn declared(description: &str) -> Option<Coordinates> {
    const LEAD: &str = "Connector coordinates:";
    let at = description.rfind(LEAD)?;
    let rest = description[at + LEAD.len()..].trim().trim_end_matches('.');
    let (mut workspace, mut region, mut collection) = (None, None, None);
    for part in rest.split(';') {
        let (key, value) = part.split_once('=')?;
        let value = Some(value.trim().to_string());
        match key.trim() {
            "workspace" => workspace = value,
            "region" => region = value,
            "collection" => collection = value,
            _ => return None,
        }
    }
    Some(Coordinates {
        workspace: workspace?,
        region: region?,
        collection: collection?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, ws: &str, region: &str, coll: &str) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: format!(
                "Does a thing. Connector coordinates: workspace={ws}; region={region}; collection={coll}."
            ),
            parameters: json!({"type": "object"}).into(),
        }
    }

    fn menu() -> Vec<ToolSchema> {
        vec![
            tool("a_search", "northwind-finance", "eu-west", "receivables"),
            // A near miss: same workspace and collection, another region.
            tool("b_search", "northwind-finance", "us-east", "receivables"),
            tool(
                "a_read_invoice",
                "northwind-finance",
                "eu-west",
                "receivables",
            ),
            tool("c_search", "contoso-ops", "ap-south", "mailbox"),
            ToolSchema {
                name: "lookup".into(),
                description: "No coordinates at all.".into(),
                parameters: json!({}).into(),
            },
        ]
    }

    const REQUEST: &str = "Collections review for invoice INV-1.\n\
        Required source route: workspace \"northwind-finance\", region \"eu-west\", collection \"receivables\".\n\
        Start with the search query \"INV-1\".";

    #[test]
    fn a_unique_route_keeps_exactly_its_connector() {
        let d = route(REQUEST, &menu());
        let Decision::Narrow { route, keep } = d else {
            panic!("{d:?}")
        };
        assert_eq!(keep, [0, 2]);
        assert_eq!(route.region, "eu-west");
    }

    #[test]
    fn an_absent_route_leaves_the_menu_unchanged() {
        let d = route("Collections review for invoice INV-1.", &menu());
        assert_eq!(d, Decision::Unchanged(Unchanged::NoRoute));
        assert_eq!(d.visible(5), [0, 1, 2, 3, 4]);
        // A malformed route line is no route.
        let broken = "Required source route: workspace northwind-finance, region \"eu-west\".";
        assert_eq!(
            route(broken, &menu()),
            Decision::Unchanged(Unchanged::NoRoute)
        );
    }

    #[test]
    fn an_ambiguous_route_leaves_the_menu_unchanged() {
        let two = format!(
            "{REQUEST}\nOr use workspace \"northwind-finance\", region \"us-east\", collection \"receivables\"."
        );
        let d = route(&two, &menu());
        let Decision::Unchanged(Unchanged::Ambiguous(routes)) = &d else {
            panic!("{d:?}")
        };
        assert_eq!(routes.len(), 2);
        assert_eq!(d.visible(5), [0, 1, 2, 3, 4]);
        // The same route named twice is still one route.
        let twice = format!("{REQUEST}\nAgain: workspace \"northwind-finance\", region \"eu-west\", collection \"receivables\".");
        assert!(matches!(route(&twice, &menu()), Decision::Narrow { .. }));
    }

    #[test]
    fn a_route_no_tool_declares_leaves_the_menu_unchanged() {
        let other = REQUEST.replace("eu-west", "eu-central");
        assert!(matches!(
            route(&other, &menu()),
            Decision::Unchanged(Unchanged::NoConnector(_))
        ));
    }

    #[test]
    fn quoted_values_may_hold_escapes_and_separators() {
        let text = r#"workspace "a\"b, c", region "r; s", collection "x=y""#;
        let routes = requested_routes(text);
        assert_eq!(routes.len(), 1);
        assert_eq!(routes[0].workspace, "a\"b, c");
        assert_eq!(routes[0].region, "r; s");
        assert_eq!(
            declared("X. Connector coordinates: workspace=a; region=b; collection=c."),
            Some(Coordinates {
                workspace: "a".into(),
                region: "b".into(),
                collection: "c".into()
            })
        );
        assert_eq!(
            declared("Connector coordinates: workspace=a; region=b."),
            None
        );
    }
}
