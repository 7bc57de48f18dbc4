//! The user's tool (upstream's `tools/user_tools.py`): `end_conversation`.
//!
//! It flips `conversation_active` on the conversation's last message (the user's call
//! to this tool, when the execution environment runs it), and refuses if the
//! conversation has already ended. Upstream shows it to the user simulator only.
//!
//! Never: adds a message; the caller records the call and its answer.

use serde_json::Value;

use super::{Module, Tool, ToolError};
use crate::clock::Clock;
use crate::context::{Context, Namespace};

pub(crate) const TOOLS: &[Tool] = &[Tool {
    name: "end_conversation",
    module: Module::UserTools,
    params: &[],
    typechecked: false,
    result_keys: &[],
    run: end_conversation,
}];

fn end_conversation(ctx: &mut Context, _: Clock, _: &super::Args) -> Result<Value, ToolError> {
    let mut last = ctx.get_database(Namespace::Sandbox, None, false)?;
    let active = last
        .last()
        .and_then(|r| r.get("conversation_active"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if !active {
        return Err(ToolError::Value("Conversation already ended".into()));
    }
    for row in &mut last {
        let flipped = !row
            .get("conversation_active")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        row.insert("conversation_active".into(), Value::Bool(flipped));
    }
    ctx.update_database(Namespace::Sandbox, last)?;
    Ok(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::execute;
    use crate::tools::tests::base_world;
    use serde_json::json;

    #[test]
    fn ends_once() {
        let mut w = base_world();
        let last = w.max_sandbox_message_index();
        assert_eq!(
            execute(&mut w, Clock::EXPORT, "end_conversation", &json!({})),
            Ok(Value::Null)
        );
        let rows = w.get_database(Namespace::Sandbox, None, true).unwrap();
        let row = rows
            .iter()
            .rev()
            .find(|r| r["sandbox_message_index"] == last)
            .unwrap();
        assert_eq!(row["conversation_active"], false);
        assert_eq!(w.max_sandbox_message_index(), last);
        assert_eq!(
            execute(&mut w, Clock::EXPORT, "end_conversation", &json!({}))
                .unwrap_err()
                .to_string(),
            "ValueError: Conversation already ended"
        );
    }
}
