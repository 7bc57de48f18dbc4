//! Benchmark of the harness overhead per request at V = 128: building the request with
//! 128 schemas, recording it in the transcript, parsing the response, executing the
//! tool and updating the budgets, against a zero-latency in-process provider that
//! replays the reference program. Run with `cargo bench --bench harness`.

// Test and bench code: a panic is the failure report, so unwrapping is allowed here
// (the workspace denies it in library code).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use tbb::compile::{compile, Cell, Encoding, Workflow};
use tbb::family::FamilySet;
use tbb::harness::{run_episode, ArmForm, EpisodeSpec, Menu, Prompts};
use tbb::provider::{
    BoxFuture, ChatRequest, ChatResponse, Configuration, Finish, Message, Provider, ProviderError,
    ReasoningSource, ToolCall, Usage,
};

/// Replays the reference program: the n-th request (counted from the conversation,
/// so no state is kept) gets the n-th call, then the answer.
struct Replay {
    calls: Vec<(String, String)>,
    answer: String,
}

impl Provider for Replay {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        let turn = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let usage = Some(Usage {
            input_tokens: 100,
            cached_tokens: 0,
            output_tokens: 10,
            reasoning_tokens: None,
            reasoning_source: ReasoningSource::Unknown,
        });
        let response = match self.calls.get(turn) {
            Some((tool, args)) => ChatResponse {
                text: None,
                tool_calls: vec![ToolCall {
                    id: format!("c{turn}"),
                    name: tool.clone(),
                    arguments: args.clone(),
                }],
                finish: Finish::ToolCalls,
                finish_raw: "tool_calls".into(),
                usage,
                usage_error: None,
                violation: None,
                http_status: None,
                raw: json!({}),
            },
            None => ChatResponse {
                text: Some(self.answer.clone()),
                tool_calls: vec![],
                finish: Finish::Stop,
                finish_raw: "stop".into(),
                usage,
                usage_error: None,
                violation: None,
                http_status: None,
                raw: json!({}),
            },
        };
        Box::pin(async move { Ok(response) })
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(set) = FamilySet::load(&root.join("families")) else {
        std::process::exit(2)
    };
    let Ok(prompts) = Prompts::load(&root.join("prompts")) else {
        std::process::exit(2)
    };
    let config: Configuration = match toml::from_str("name = \"replay\"\norganization = \"bench\"\nprovider = \"openai\"\nmodel = \"replay\"\nprices = { input_per_mtok = 1.0, output_per_mtok = 1.0 }") {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2)
        }
    };
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        std::process::exit(2)
    };
    for lane in [Menu::Routed, Menu::Fixed] {
        let mut per_request = Vec::new();
        for family in set
            .families
            .iter()
            .filter(|f| f.split() == tbb::family::Split::Core)
        {
            let Ok(v) = compile(family, &Cell::new(128, Workflow::High, Encoding::Linked)) else {
                continue;
            };
            let provider = Replay {
                calls: v
                    .reference_program
                    .steps
                    .iter()
                    .map(|s| (s.call.tool.clone(), s.call.arguments.to_string()))
                    .collect(),
                answer: v.answer_text(),
            };
            let spec = EpisodeSpec {
                arm: ArmForm {
                    menu: lane,
                    ..ArmForm::baseline()
                },
                ..EpisodeSpec::frozen(&v, &config)
            };
            for _ in 0..5 {
                let start = Instant::now();
                let e = rt.block_on(run_episode(&provider, &spec, &prompts, None));
                let elapsed = start.elapsed();
                assert!(e.verdict.vts);
                per_request.push(elapsed / e.verdict.requests);
            }
        }
        per_request.sort();
        let median: Duration = per_request[per_request.len() / 2];
        println!("harness overhead per request at V=128 ({lane:?} lane): median {:.1} µs over {} episodes", median.as_secs_f64() * 1e6, per_request.len());
    }
}
