//! Rendering a run's [`Event`]s: progress bars for a terminal ([`Bars`]), plain lines
//! when stderr is a pipe or a file ([`Plain`]), one JSON object a line for machines
//! ([`Json`]), or nothing ([`Silent`], the library's default).
//!
//! Owns: how progress looks, and the choice among the renderings ([`Rendering`]).
//!
//! Never: changes what a run does or publishes (a reporter only listens), writes to
//! stdout (that is the command's result), or prints a node's text unescaped (plain
//! lines hold counts; JSON escapes what it quotes).

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use super::eta;
use super::events::{Event, Stage};
use super::verdicts::errors_text;
use tbb_report::format::count;

/// What renders a run's events. Called from the run's tasks and threads at once.
pub trait Reporter: Send + Sync {
    /// Renders one event.
    fn event(&self, event: &Event<'_>);

    /// Whether it wants [`Event::RequestFinished`]: counting requests wraps every
    /// provider call, so a reporter that shows none asks for none.
    fn counts_requests(&self) -> bool {
        true
    }

    /// Whether it reads the node's identity in [`Event::NodeFinished`]: a DAG node makes
    /// its identity when asked (a string per finished node), so a reporter that shows
    /// none is handed an empty one.
    fn names_nodes(&self) -> bool {
        true
    }
}

/// Renders nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Reporter for Silent {
    fn event(&self, _: &Event<'_>) {}

    fn counts_requests(&self) -> bool {
        false
    }

    fn names_nodes(&self) -> bool {
        false
    }
}

/// Which rendering a command's stderr gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendering {
    /// Progress bars.
    Bars,
    /// Plain lines.
    Plain,
    /// JSON lines.
    Json,
}

impl Rendering {
    /// JSON when the command was asked for JSON, bars on a terminal, plain lines
    /// otherwise.
    pub fn choose(json: bool, stderr_is_terminal: bool) -> Rendering {
        match (json, stderr_is_terminal) {
            (true, _) => Rendering::Json,
            (false, true) => Rendering::Bars,
            (false, false) => Rendering::Plain,
        }
    }

    /// A reporter of this rendering on stderr.
    pub fn on_stderr(self) -> Arc<dyn Reporter> {
        match self {
            Rendering::Bars => Arc::new(Bars::on_stderr()),
            Rendering::Plain => Arc::new(Plain::new(Box::new(std::io::stderr()))),
            Rendering::Json => Arc::new(Json::new(Box::new(std::io::stderr()))),
        }
    }
}

/// The line a person reads for an event that is news rather than progress, escaped
/// (it quotes a catalogue and a server).
fn news(event: &Event<'_>) -> Option<String> {
    match event {
        Event::RouteStopped {
            route,
            failures,
            cause,
        } => Some(
            tbb_diag::terminal::escape(&format!(
                "stopped route {route}: {failures} episodes in a row ended as infrastructure \
                 failures (the last: {cause}); its other episodes are not run and stay planned"
            ))
            .into_owned(),
        ),
        Event::ClaimHeld { holder, .. } => Some(
            tbb_diag::terminal::escape(&format!(
                "episodes claimed by {holder}, which shares the cache, are left to it and \
                 reused once committed (run here only if its claims expire)"
            ))
            .into_owned(),
        ),
        Event::ClaimsLost { count } => Some(format!(
            "{count} claims expired before they could be renewed and were taken over: \
             their episodes may be paid for twice (is this machine's clock right?)"
        )),
        Event::LeaseHeld { holder } => Some(
            tbb_diag::terminal::escape(&format!(
                "Blocking: waiting for the shared cache's publishing lease, held by {holder}"
            ))
            .into_owned(),
        ),
        _ => None,
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Progress bars on stderr: one per stage that has nodes (a stage with none draws
/// nothing), the requests bar with the tokens per second the routes return.
pub struct Bars {
    multi: MultiProgress,
    bars: Mutex<HashMap<Stage, ProgressBar>>,
    tokens: AtomicU64,
    started: Instant,
}

impl Bars {
    /// Bars drawn on stderr (indicatif draws nothing when it is not a terminal).
    pub fn on_stderr() -> Bars {
        Bars::with_target(ProgressDrawTarget::stderr())
    }

    fn with_target(target: ProgressDrawTarget) -> Bars {
        Bars {
            multi: MultiProgress::with_draw_target(target),
            bars: Mutex::new(HashMap::new()),
            tokens: AtomicU64::new(0),
            started: Instant::now(),
        }
    }

    fn bar(&self, stage: Stage) -> Option<ProgressBar> {
        lock(&self.bars).get(&stage).cloned()
    }

    fn start(&self, stage: Stage, nodes: u64) {
        if nodes == 0 && stage != Stage::Requests {
            return;
        }
        // Our own remaining time and rate rather than indicatif's `{eta}` and
        // `{per_sec}`: see `eta`'s module doc.
        let template = match stage {
            Stage::Requests => "{prefix:>9} [{bar:32}] {pos}/≈{len} {msg} {remaining}",
            _ => "{prefix:>9} [{bar:32}] {pos}/{len} {rate} {remaining}",
        };
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .with_key(
                "remaining",
                |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let total = state.len().unwrap_or(0);
                    let _ = w.write_str(&eta::eta_text(state.elapsed(), state.pos(), total));
                },
            )
            .with_key(
                "rate",
                |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let seconds = state.elapsed().as_secs_f64().max(1e-3);
                    let _ = w.write_str(&eta::rate_text(state.pos() as f64 / seconds, "nodes"));
                },
            )
            .progress_chars("=> ");
        let bar = self.multi.add(ProgressBar::new(nodes.max(1)));
        bar.set_style(style);
        bar.set_prefix(stage.name());
        lock(&self.bars).insert(stage, bar);
    }

    fn request(&self, tokens: u64) {
        let Some(bar) = self.bar(Stage::Requests) else {
            return;
        };
        let total = self.tokens.fetch_add(tokens, Ordering::Relaxed) + tokens;
        bar.inc(1);
        // The estimate was short: the bar grows with the run.
        if bar.position() > bar.length().unwrap_or(0) {
            bar.set_length(bar.position());
        }
        let seconds = self.started.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(eta::rate_text(total as f64 / seconds, "tok"));
    }
}

impl Reporter for Bars {
    fn event(&self, event: &Event<'_>) {
        match *event {
            Event::StageStarted { stage, nodes } => self.start(stage, nodes),
            Event::NodeFinished { stage, .. } => {
                if let Some(bar) = self.bar(stage) {
                    bar.inc(1);
                }
            }
            Event::RequestFinished { tokens } => self.request(tokens),
            Event::StageFinished {
                stage,
                failed,
                verdicts,
                ..
            } => {
                if let Some(bar) = self.bar(stage) {
                    bar.finish();
                }
                // The bars are cleared at the end: what the episodes came to stays.
                if let Some(verdicts) = verdicts {
                    let _ = self.multi.println(format!(
                        "{}: {}",
                        stage.name(),
                        verdicts.stage_text(failed)
                    ));
                }
            }
            Event::Finished => {
                let _ = self.multi.clear();
            }
            Event::RouteStopped { .. }
            | Event::ClaimHeld { .. }
            | Event::ClaimsLost { .. }
            | Event::LeaseHeld { .. } => {
                if let Some(line) = news(event) {
                    let _ = self.multi.println(line);
                }
            }
        }
    }

    fn names_nodes(&self) -> bool {
        false
    }
}

/// `done` of `nodes` as a whole percentage, rounded to the nearest (1 of 7: 14), but
/// never 100 before the last node nor 0 after the first.
fn percent(done: u64, nodes: u64) -> u64 {
    let Some(rounded) = (done * 200 + nodes).checked_div(nodes * 2) else {
        return 0;
    };
    match rounded {
        0 if done > 0 => 1,
        100.. if done < nodes => 99,
        p => p,
    }
}

/// How far a stage is, for plain lines.
#[derive(Debug, Default)]
struct Progress {
    nodes: u64,
    done: u64,
    /// The last tenth a line was written at.
    tenth: u64,
}

/// Plain lines: a stage's size when it starts, a line each time it passes a tenth of it
/// (with the true percentage done), and its counts when it ends (the episodes stage's
/// verdicts, apart from its errors); no control characters, so a log or CI keeps them as they are.
pub struct Plain {
    out: Mutex<Box<dyn Write + Send>>,
    stages: Mutex<HashMap<Stage, Progress>>,
}

impl Plain {
    /// Lines written to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Plain {
        Plain {
            out: Mutex::new(out),
            stages: Mutex::new(HashMap::new()),
        }
    }

    fn line(&self, text: &str) {
        let mut out = lock(&self.out);
        // Progress is a courtesy: a closed pipe must not stop the run.
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

impl Reporter for Plain {
    fn event(&self, event: &Event<'_>) {
        match *event {
            Event::StageStarted { stage, nodes } => {
                lock(&self.stages).insert(
                    stage,
                    Progress {
                        nodes,
                        ..Progress::default()
                    },
                );
                match stage {
                    Stage::Requests => {
                        self.line(&format!("requests: ≈{} expected", count(nodes)));
                    }
                    _ if nodes > 0 => {
                        self.line(&format!("{}: {} to run", stage.name(), count(nodes)));
                    }
                    _ => {}
                }
            }
            Event::NodeFinished { stage, .. } => {
                let line = {
                    let mut stages = lock(&self.stages);
                    let p = stages.entry(stage).or_default();
                    p.done += 1;
                    let tenth = (p.done * 10).checked_div(p.nodes).unwrap_or(0);
                    (tenth > p.tenth && p.done < p.nodes).then(|| {
                        p.tenth = tenth;
                        format!(
                            "{}: {}/{} ({}%)",
                            stage.name(),
                            count(p.done),
                            count(p.nodes),
                            percent(p.done, p.nodes)
                        )
                    })
                };
                if let Some(line) = line {
                    self.line(&line);
                }
            }
            Event::RequestFinished { .. } => {}
            Event::StageFinished {
                stage,
                done,
                failed,
                verdicts,
            } => {
                let nodes = lock(&self.stages).remove(&stage).map_or(0, |p| p.nodes);
                match (stage, verdicts) {
                    (Stage::Requests, _) => {
                        self.line(&format!("requests: {} sent", count(done)));
                    }
                    _ if nodes == 0 && done + failed == 0 => {}
                    (_, Some(verdicts)) => self.line(&format!(
                        "{}: {}",
                        stage.name(),
                        verdicts.stage_text(failed)
                    )),
                    (Stage::Certify, None) => self.line(&format!(
                        "certify: {} done, {} failed",
                        count(done),
                        count(failed)
                    )),
                    (_, None) => self.line(&format!(
                        "{}: {} done, {}",
                        stage.name(),
                        count(done),
                        errors_text(failed)
                    )),
                }
            }
            Event::Finished => {}
            Event::RouteStopped { .. }
            | Event::ClaimHeld { .. }
            | Event::ClaimsLost { .. }
            | Event::LeaseHeld { .. } => {
                if let Some(line) = news(event) {
                    self.line(&line);
                }
            }
        }
    }

    fn counts_requests(&self) -> bool {
        false
    }

    fn names_nodes(&self) -> bool {
        false
    }
}

/// One JSON object a line ([`Event::json`]), every event but the requests one by one
/// (their stage's end gives how many were sent).
pub struct Json {
    out: Mutex<Box<dyn Write + Send>>,
}

impl Json {
    /// Lines written to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Json {
        Json {
            out: Mutex::new(out),
        }
    }
}

impl Reporter for Json {
    fn event(&self, event: &Event<'_>) {
        if matches!(event, Event::RequestFinished { .. }) {
            return;
        }
        let mut out = lock(&self.out);
        let _ = writeln!(out, "{}", event.json());
        let _ = out.flush();
    }

    fn counts_requests(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::verdicts::{Tally, Verdicts};

    /// A writer whose bytes the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            lock(&self.0).extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8_lossy(&lock(&self.0)).to_string()
        }
    }

    /// A small apply: a compile stage with nothing to run, 20 episodes (one failed),
    /// two requests, two analyses.
    fn run(reporter: &dyn Reporter) {
        let e = |event: Event<'_>| reporter.event(&event);
        e(Event::StageStarted {
            stage: Stage::Compile,
            nodes: 0,
        });
        e(Event::StageFinished {
            stage: Stage::Compile,
            done: 0,
            failed: 0,
            verdicts: None,
        });
        e(Event::StageStarted {
            stage: Stage::Episodes,
            nodes: 20,
        });
        e(Event::StageStarted {
            stage: Stage::Requests,
            nodes: 1500,
        });
        for k in 0..20 {
            if k < 2 {
                e(Event::RequestFinished { tokens: 10 });
            }
            e(Event::NodeFinished {
                stage: Stage::Episodes,
                node: "execute[cfg=\u{1b}[31mred]",
                ok: k != 7,
            });
        }
        let verdicts = Verdicts {
            run: Tally {
                episodes: 19,
                verified_successes: 5,
                task_failures: 13,
                infra_failures: 1,
                terminal_flags: [("truncation".into(), 8), ("wrong_conclusion".into(), 5)].into(),
            },
            ..Verdicts::default()
        };
        e(Event::StageFinished {
            stage: Stage::Episodes,
            done: 19,
            failed: 1,
            verdicts: Some(&verdicts),
        });
        e(Event::StageFinished {
            stage: Stage::Requests,
            done: 2,
            failed: 0,
            verdicts: None,
        });
        e(Event::StageStarted {
            stage: Stage::Analyses,
            nodes: 2,
        });
        for _ in 0..2 {
            e(Event::NodeFinished {
                stage: Stage::Analyses,
                node: "analysis[contrasts]",
                ok: true,
            });
        }
        e(Event::StageFinished {
            stage: Stage::Analyses,
            done: 2,
            failed: 0,
            verdicts: None,
        });
        e(Event::Finished);
    }

    #[test]
    fn plain_lines_give_each_stage_its_size_its_tenths_and_its_counts() {
        let out = Shared::default();
        run(&Plain::new(Box::new(out.clone())));
        let expected = [
            "episodes: 20 to run",
            "requests: ≈1,500 expected",
            "episodes: 2/20 (10%)",
            "episodes: 4/20 (20%)",
            "episodes: 6/20 (30%)",
            "episodes: 8/20 (40%)",
            "episodes: 10/20 (50%)",
            "episodes: 12/20 (60%)",
            "episodes: 14/20 (70%)",
            "episodes: 16/20 (80%)",
            "episodes: 18/20 (90%)",
            "episodes: 19 run: 5 verified successes, 13 task failures (truncation ×8, \
             wrong_conclusion ×5), 1 infrastructure failure; 1 error (listed at the end)",
            "requests: 2 sent",
            "analyses: 2 to run",
            "analyses: 1/2 (50%)",
            "analyses: 2 done, no errors",
        ];
        assert_eq!(out.text(), expected.map(|l| format!("{l}\n")).concat());
        assert!(!out.text().contains('\u{1b}'), "no node text, no escapes");
    }

    /// Issue 29: "analyses: 1/7 (10%)" read as a tenth done where a seventh was.
    #[test]
    fn plain_lines_print_at_each_tenth_passed_with_the_true_percentage() {
        let out = Shared::default();
        let plain = Plain::new(Box::new(out.clone()));
        plain.event(&Event::StageStarted {
            stage: Stage::Analyses,
            nodes: 7,
        });
        for _ in 0..7 {
            plain.event(&Event::NodeFinished {
                stage: Stage::Analyses,
                node: "analysis[x]",
                ok: true,
            });
        }
        let lines: Vec<String> = out.text().lines().skip(1).map(str::to_string).collect();
        assert_eq!(
            lines,
            [
                "analyses: 1/7 (14%)",
                "analyses: 2/7 (29%)",
                "analyses: 3/7 (43%)",
                "analyses: 4/7 (57%)",
                "analyses: 5/7 (71%)",
                "analyses: 6/7 (86%)",
            ]
        );
        assert_eq!(
            (
                percent(1, 1000),
                percent(999, 1000),
                percent(1, 3),
                percent(0, 0)
            ),
            (1, 99, 33, 0)
        );
    }

    #[test]
    fn json_lines_are_every_event_but_single_requests_with_node_text_escaped() {
        let out = Shared::default();
        run(&Json::new(Box::new(out.clone())));
        let text = out.text();
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        // 2 + 2 starts, 20 episodes, 2 stage ends, 1 + 2 + 1 analyses, the end.
        assert_eq!(events.len(), 2 + 2 + 20 + 2 + 4 + 1, "{text}");
        assert_eq!(
            events[0],
            serde_json::json!({"event": "stage_started", "stage": "compile", "nodes": 0})
        );
        assert!(events.iter().all(|e| e["event"] != "request_finished"));
        assert_eq!(
            events[4 + 7],
            serde_json::json!({
                "event": "node_finished", "stage": "episodes",
                "node": "execute[cfg=\u{1b}[31mred]", "ok": false
            })
        );
        assert!(!text.contains('\u{1b}'), "escaped in the JSON text");
        // The episodes stage's end carries its verdicts, apart from its errors.
        assert_eq!(events[24]["stage"], "episodes", "{text}");
        assert_eq!(events[24]["failed"], 1);
        assert_eq!(
            events[24]["verdicts"]["run"],
            serde_json::json!({
                "episodes": 19, "verified_successes": 5, "task_failures": 13,
                "infra_failures": 1,
                "terminal_flags": {"truncation": 8, "wrong_conclusion": 5}
            })
        );
        assert!(events[25].get("verdicts").is_none(), "{text}");
        assert_eq!(
            events.last(),
            Some(&serde_json::json!({"event": "finished"}))
        );
    }

    #[test]
    fn bars_draw_a_stage_only_when_it_has_nodes_and_grow_the_requests_estimate() {
        let bars = Bars::with_target(ProgressDrawTarget::hidden());
        run(&bars);
        assert!(
            bars.bar(Stage::Compile).is_none(),
            "an empty stage draws nothing"
        );
        let episodes = bars
            .bar(Stage::Episodes)
            .unwrap_or_else(|| panic!("no bar"));
        assert_eq!((episodes.position(), episodes.length()), (20, Some(20)));
        let requests = bars
            .bar(Stage::Requests)
            .unwrap_or_else(|| panic!("no bar"));
        assert_eq!(requests.length(), Some(1500), "the estimate is its length");
        assert!(requests.is_finished());
        let bars = Bars::with_target(ProgressDrawTarget::hidden());
        bars.event(&Event::StageStarted {
            stage: Stage::Requests,
            nodes: 0,
        });
        for _ in 0..3 {
            bars.event(&Event::RequestFinished { tokens: 1 });
        }
        let requests = bars
            .bar(Stage::Requests)
            .unwrap_or_else(|| panic!("no bar"));
        assert_eq!((requests.position(), requests.length()), (3, Some(3)));
    }

    #[test]
    fn json_when_asked_bars_on_a_terminal_plain_lines_otherwise() {
        assert_eq!(Rendering::choose(true, true), Rendering::Json);
        assert_eq!(Rendering::choose(true, false), Rendering::Json);
        assert_eq!(Rendering::choose(false, true), Rendering::Bars);
        assert_eq!(Rendering::choose(false, false), Rendering::Plain);
    }
}
