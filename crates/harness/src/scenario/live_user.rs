//! A live user for a ToolSandbox scenario: a configuration prompted as upstream prompts
//! its user simulator, sent through tbb's own routes and recorded in a transcript of its
//! own, like any provider call.
//!
//! The user reads the conversation as upstream's user role does: the sandbox messages
//! visible to the user, the prompts the system gave it as system messages, the agent's
//! messages to it as the other party's and its own messages to the agent as its own; its
//! exchanges with the execution environment are left out. After an agent's message it is
//! offered one tool, `end_conversation`: a call of it ends the conversation, a text
//! answer is said to the agent.
//!
//! Owns: the user's view of the world, its request and what its response means.
//!
//! Never: reads the scenario's milestones, or writes into the world (the scenario loop
//! does, as upstream's roles write).

use serde_json::Value;
use tbb_core::grade::trace::InfraFailure;
use tbb_provider::retry::RouteLimits;
use tbb_provider::{ChatRequest, Configuration, Message, Provider, ToolSchema};
use tbb_toolsandbox::context::{Context, Namespace};

use super::super::exchange::{self, Exchange, Route};
use super::super::transcript::{BlobStore, Transcript};
use super::user::UserMove;

/// The user's one tool, as upstream offers it.
const END_CONVERSATION: &str = "end_conversation";

/// A live user of one episode.
pub struct LiveUser<'a> {
    route: Route<'a>,
    tools: Vec<ToolSchema>,
    /// Its requests and responses.
    pub transcript: Transcript,
    /// Provider attempts, retries included.
    pub attempts: u32,
}

impl<'a> LiveUser<'a> {
    /// A user played by `config` through `provider`, offered `end_conversation` as
    /// `tools` has it.
    pub fn new(
        provider: &'a dyn Provider,
        config: &'a Configuration,
        routes: Option<&'a RouteLimits>,
        completion_cap: u32,
        tools: Vec<ToolSchema>,
        episode_key: &str,
    ) -> LiveUser<'a> {
        LiveUser {
            route: Route {
                provider,
                routes,
                config,
                completion_cap,
            },
            tools,
            transcript: Transcript::new(&format!("{episode_key}/user")),
            attempts: 0,
        }
    }

    /// The user's next move after the agent's message, the world as it stands; `Err`
    /// when its route failed.
    pub async fn after_reply(
        &mut self,
        world: &Context,
        blobs: &mut BlobStore,
    ) -> Result<UserMove, InfraFailure> {
        let request = ChatRequest {
            model: self.route.config.model.clone(),
            messages: user_view(world),
            tools: self.tools.clone(),
            max_completion_tokens: self.route.completion_cap,
            sampling: tbb_provider::chat::Sampling {
                temperature: Some(self.route.config.profile.temperature),
                seed: None,
                parallel_tool_calls: None,
            },
        };
        let tools_ref = super::super::transcript::put_tools(&request.tools, blobs);
        match exchange::send(
            self.route,
            &request,
            &tools_ref,
            &mut self.transcript,
            blobs,
            &mut self.attempts,
        )
        .await
        {
            Exchange::Failed { infra, .. } => Err(infra),
            Exchange::Answered(sent) => Ok(read(&sent.response)),
        }
    }
}

/// What a response of the user means: a call of `end_conversation` ends the
/// conversation; text is said to the agent; a response with neither ends it too (the
/// user has nothing to say).
fn read(response: &tbb_provider::ChatResponse) -> UserMove {
    if response
        .tool_calls
        .iter()
        .any(|c| c.name == END_CONVERSATION)
    {
        return UserMove::End;
    }
    match response.text.as_deref().map(str::trim) {
        Some(text) if !text.is_empty() => UserMove::Say(text.to_string()),
        _ => UserMove::End,
    }
}

/// The conversation as the user sees it (upstream's `OpenAIAPIUser.to_openai_messages`
/// over the messages visible to the user).
pub fn user_view(world: &Context) -> Vec<Message> {
    let rows = world
        .get_database(Namespace::Sandbox, None, true)
        .unwrap_or_default();
    let text = |r: &tbb_toolsandbox::context::Row, k: &str| {
        r.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    rows.iter()
        .filter(|r| {
            r.get("visible_to")
                .and_then(Value::as_array)
                .is_some_and(|v| v.iter().any(|x| x.as_str() == Some("USER")))
        })
        .filter_map(|r| {
            let content = text(r, "content");
            match (text(r, "sender").as_str(), text(r, "recipient").as_str()) {
                ("SYSTEM", "USER") => Some(Message::System { content }),
                // The roles are reversed: the agent is the other party of the user.
                ("AGENT", "USER") => Some(Message::User { content }),
                ("USER", "AGENT") => Some(Message::Assistant {
                    content: Some(content),
                    tool_calls: Vec::new(),
                }),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tbb_toolsandbox::scenario::Scenarios;

    #[test]
    fn the_user_sees_its_prompts_as_system_and_the_agent_as_the_other_party() {
        let scenarios = Scenarios::builtin().unwrap_or_else(|e| panic!("{e}"));
        let scenario = scenarios
            .get("send_message_with_contact_content_cellular_off_multiple_user_turn")
            .unwrap_or_else(|| panic!("the scenario is in the export"));
        let mut world = scenario.starting_context.clone();
        tbb_toolsandbox::record::agent_to_user(&mut world, "Whom should I write to?")
            .unwrap_or_else(|e| panic!("{e}"));
        let view = user_view(&world);
        assert!(
            matches!(view.first(), Some(Message::System { .. })),
            "{view:?}"
        );
        assert_eq!(
            view.last(),
            Some(&Message::User {
                content: "Whom should I write to?".into()
            })
        );
        // Its own first message to the agent is its own turn.
        assert!(view.iter().any(|m| matches!(
            m,
            Message::Assistant {
                content: Some(_),
                ..
            }
        )));
    }

    #[test]
    fn a_call_of_end_conversation_ends_and_text_is_said() {
        let mut response = tbb_provider::ChatResponse {
            text: Some("My number is +1 555".into()),
            tool_calls: Vec::new(),
            finish: tbb_provider::Finish::Stop,
            finish_raw: "stop".into(),
            usage: None,
            usage_error: None,
            violation: None,
            http_status: None,
            raw: Value::Null,
        };
        assert_eq!(read(&response), UserMove::Say("My number is +1 555".into()));
        response.tool_calls.push(tbb_provider::ToolCall {
            id: "c".into(),
            name: END_CONVERSATION.into(),
            arguments: "{}".into(),
        });
        assert_eq!(read(&response), UserMove::End);
    }
}
