//! The retrieval menu: the `k` tool schemas that BM25 ranks highest against the
//! rendered user request.
//!
//! Owns: what a tool's document is (its name, a space, its description — the
//! parameters are left out), the query (the user request as the model reads it), and
//! the order of ties (score descending, then name ascending, then menu position), so
//! the same request and schemas always give the same menu whatever order they come in.
//!
//! The kept schemas stay in the menu's own presentation order: retrieval decides which
//! tools are visible, not where they sit, so a retrieval arm differs from the full menu
//! in membership only.
//!
//! Never: sees which tools are operational or required (it gets schemas, which do not
//! say), or anything but the request text and the schemas.

use super::bm25::Index;
use crate::ToolSchema;

/// The score of each schema of `menu` against `request`, in menu order.
pub fn scores(request: &str, menu: &[ToolSchema]) -> Vec<f64> {
    let documents: Vec<String> = menu
        .iter()
        .map(|t| format!("{} {}", t.name, t.description))
        .collect();
    Index::new(&documents).scores(request)
}

/// Menu positions from best to worst: score descending, then name, then position.
pub fn ranking(request: &str, menu: &[ToolSchema]) -> Vec<usize> {
    let s = scores(request, menu);
    let mut order: Vec<usize> = (0..menu.len()).collect();
    order.sort_by(|&a, &b| {
        s[b].total_cmp(&s[a])
            .then_with(|| menu[a].name.cmp(&menu[b].name))
            .then(a.cmp(&b))
    });
    order
}

/// The positions of the top `k` schemas, ascending (menu order). The whole menu when
/// it has `k` schemas or fewer.
pub fn top_k(request: &str, menu: &[ToolSchema], k: usize) -> Vec<usize> {
    let mut keep: Vec<usize> = ranking(request, menu).into_iter().take(k).collect();
    keep.sort_unstable();
    keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object"}).into(),
        }
    }

    fn menu() -> Vec<ToolSchema> {
        vec![
            tool("mail_send", "Send a message."),
            tool("recv_read_invoice", "Read one invoice record by id."),
            tool("recv_search", "Search receivables records."),
            tool("cal_read_event", "Read one calendar event by id."),
        ]
    }

    #[test]
    fn the_best_matches_are_kept_in_menu_order() {
        let request = "Look up the invoice in receivables and read the record.";
        let order = ranking(request, &menu());
        assert_eq!(order[0], 1, "{order:?}");
        assert_eq!(top_k(request, &menu(), 2), [1, 2]);
        assert_eq!(top_k(request, &menu(), 10), [0, 1, 2, 3]);
        assert!(top_k(request, &menu(), 0).is_empty());
    }

    #[test]
    fn ties_break_by_name_whatever_the_input_order() {
        // No term of the request occurs anywhere: every score is 0.
        let request = "zebra";
        assert_eq!(ranking(request, &menu()), [3, 0, 1, 2]);
        let mut reversed = menu();
        reversed.reverse();
        let names = |m: &[ToolSchema], order: Vec<usize>| -> Vec<String> {
            order.into_iter().map(|i| m[i].name.clone()).collect()
        };
        assert_eq!(
            names(&menu(), ranking(request, &menu())),
            names(&reversed, ranking(request, &reversed))
        );
    }

    #[test]
    fn parameters_are_not_part_of_the_document() {
        let mut m = menu();
        m[0].parameters = json!({"properties": {"invoice": {"type": "string"}}}).into();
        assert_eq!(scores("invoice", &m)[0], 0.0);
    }
}
