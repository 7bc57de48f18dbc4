//! The scripted user of a ToolSandbox scenario: what the user says after each of the
//! agent's replies.
//!
//! Upstream plays the user with a language model prompted with the scenario's task.
//! Offline the user is a script over that task. A single-user-turn scenario ends at the
//! agent's first reply, as upstream's user does once the agent has answered (the script
//! is exact there). A multi-turn scenario's task is read as a list of facts, its
//! sentences in the user's own voice; each reply of the agent is answered with the next
//! fact, and the conversation ends when the facts run out. Sentences that only say the
//! user knows nothing more are not facts.
//!
//! Owns: reading the task out of the user simulator's prompt and the order the facts are
//! released in.
//!
//! Never: reads the agent's reply for meaning (a scripted user cannot), or the scenario's
//! milestones.

use serde_json::Value;
use tbb_toolsandbox::context::{Context, Namespace};

/// Where the user simulator's prompt puts the task.
const TASK_MARK: &str = "want User B to complete:";

/// What the user does after the agent's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserMove {
    /// Says this to the agent.
    Say(String),
    /// Ends the conversation (upstream's `end_conversation`).
    End,
}

/// The scripted user of one episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedUser {
    facts: Vec<String>,
    released: usize,
}

impl ScriptedUser {
    /// The user of a scenario whose starting world is `world`: no facts when it has a
    /// single user turn.
    pub fn new(world: &Context, multi_turn: bool) -> ScriptedUser {
        let facts = if multi_turn {
            task(world).map(|t| facts(&t)).unwrap_or_default()
        } else {
            Vec::new()
        };
        ScriptedUser { facts, released: 0 }
    }

    /// The facts, in release order.
    pub fn facts(&self) -> &[String] {
        &self.facts
    }

    /// The next move, after a reply of the agent.
    pub fn after_reply(&mut self) -> UserMove {
        match self.facts.get(self.released) {
            Some(fact) => {
                self.released += 1;
                UserMove::Say(fact.clone())
            }
            None => UserMove::End,
        }
    }
}

/// The task of the user simulator's last prompt (the earlier ones belong to its few-shot
/// examples), if the world has one.
pub fn task(world: &Context) -> Option<String> {
    let rows = world.get_database(Namespace::Sandbox, None, true).ok()?;
    rows.iter()
        .rev()
        .find(|r| {
            r.get("sender").and_then(Value::as_str) == Some("SYSTEM")
                && r.get("recipient").and_then(Value::as_str) == Some("USER")
        })
        .and_then(|r| r.get("content").and_then(Value::as_str))
        .and_then(|prompt| prompt.rsplit_once(TASK_MARK))
        .map(|(_, task)| task.trim().to_string())
}

/// The task's sentences as the user says them: "you (User A)" and "your (User A's)"
/// become "I" and "my"; a sentence saying the user knows nothing more is left out.
pub fn facts(task: &str) -> Vec<String> {
    let voiced = task
        .replace("your (User A's)", "my")
        .replace("Your (User A's)", "My")
        .replace("you (User A)", "I")
        .replace("You (User A)", "I");
    sentences(&voiced)
        .into_iter()
        .filter(|s| !says_nothing_more(s))
        .collect()
}

/// Sentences ending in `.`, `?` or `!` followed by a space or the end (a decimal point
/// or an abbreviation inside a sentence stays in it).
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        current.push(c);
        if matches!(c, '.' | '?' | '!') && chars.peek().is_none_or(|n| n.is_whitespace()) {
            let s = current.trim().to_string();
            if !s.is_empty() {
                out.push(s);
            }
            current.clear();
        }
    }
    let rest = current.trim();
    if !rest.is_empty() {
        out.push(rest.to_string());
    }
    out
}

fn says_nothing_more(sentence: &str) -> bool {
    let s = sentence.to_lowercase();
    s.contains("do not have more information") || s.contains("don't have more information")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_task_becomes_the_user_s_facts() {
        assert_eq!(
            facts("Find the content of your (User A's) most recent message. You do not have more information."),
            ["Find the content of my most recent message."]
        );
        assert_eq!(
            facts("Send a message to Bart saying: Hey what's up. It costs 3.5 dollars!"),
            [
                "Send a message to Bart saying: Hey what's up.",
                "It costs 3.5 dollars!"
            ]
        );
    }

    #[test]
    fn a_single_turn_user_ends_at_the_first_reply_and_a_multi_turn_one_when_out_of_facts() {
        let world = Context::from_tables(Default::default());
        let mut single = ScriptedUser::new(&world, false);
        assert_eq!(single.after_reply(), UserMove::End);
        let mut multi = ScriptedUser {
            facts: facts("Do this. Then that."),
            released: 0,
        };
        assert_eq!(multi.after_reply(), UserMove::Say("Do this.".into()));
        assert_eq!(multi.after_reply(), UserMove::Say("Then that.".into()));
        assert_eq!(multi.after_reply(), UserMove::End);
    }
}
