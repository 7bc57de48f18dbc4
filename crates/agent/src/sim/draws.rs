//! The simulated agents' randomness: which of it is the model's disposition toward a
//! task, and which the run's sampling.
//!
//! A model given the same task twice at a low temperature mostly does the same thing:
//! most of its choices follow from the task, and sampling redraws a share of them. So
//! every draw here takes its value from one of two streams: the task's, seeded by the
//! agent and the task it was given (the first user message), the same in every run
//! and under every menu, encoding and prompt; or the run's, seeded by the agent and the
//! request's sampling seed. Each value is the run's with chance `run_variance` (a
//! parameter, [`super::params::Params::run_variance`]), else the task's. Repeats of one
//! task then disagree as often as that share makes them, and two cells of a matched pair
//! meet mostly the same draws, as a model's paired runs do.
//!
//! A draw is named by what it decides (a request's turn, a record's perception, a
//! hand-off's disposition) so that a later request of the same episode re-derives it.
//! Nothing here reads the conversation beyond its opening messages (the first user
//! message; without a sampling seed, the system prompt too): seeding costs a few short
//! hashes per request, not every message again.
//!
//! Never: decides anything itself, or reads a parameter other than `run_variance`.

use std::convert::Infallible;

use rand::{Rng, SeedableRng, TryRng};
use rand_chacha::ChaCha8Rng;

use crate::{ChatRequest, Message};

/// The two seeds of an episode's draws and the share the run's takes.
#[derive(Debug, Clone, Copy)]
pub struct Salts {
    task: [u8; 32],
    run: [u8; 32],
    run_share: f64,
}

impl Salts {
    /// The salts of `request`'s episode for the agent salted `agent`.
    pub fn of(agent: &[u8; 32], request: &ChatRequest, run_variance: f64) -> Salts {
        let first_user = request.messages.iter().find_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        });
        let mut task = blake3::Hasher::new();
        task.update(b"tbb sim task/1\0");
        task.update(agent);
        task.update(first_user.unwrap_or_default().as_bytes());
        let mut run = blake3::Hasher::new();
        run.update(b"tbb sim run/1\0");
        run.update(agent);
        match request.sampling.seed {
            Some(s) => {
                run.update(&s.to_le_bytes());
            }
            // Without a seed, a run is told apart by its opening messages (its prompt
            // and task), as before any seed existed.
            None => {
                run.update(b"no seed");
                for m in request.messages.iter().take(2) {
                    if let Message::System { content } | Message::User { content } = m {
                        run.update(content.as_bytes()).update(b"\0");
                    }
                }
            }
        }
        Salts {
            task: *task.finalize().as_bytes(),
            run: *run.finalize().as_bytes(),
            run_share: run_variance.clamp(0.0, 1.0),
        }
    }

    /// The draws of one decision, named by `parts`.
    pub fn draws(&self, parts: &[&[u8]]) -> Draws {
        let seed = |salt: &[u8; 32], stream: &[u8]| {
            let mut h = blake3::Hasher::new();
            h.update(stream);
            h.update(salt);
            for p in parts {
                h.update(&(p.len() as u64).to_le_bytes());
                h.update(p);
            }
            ChaCha8Rng::from_seed(*h.finalize().as_bytes())
        };
        Draws {
            task: seed(&self.task, b"task\0"),
            run: seed(&self.run, b"run\0"),
            mix: seed(&self.run, b"mix\0"),
            run_share: self.run_share,
        }
    }
}

/// A random stream mixing the task's and the run's (an [`rand::Rng`]).
#[derive(Debug, Clone)]
pub struct Draws {
    task: ChaCha8Rng,
    run: ChaCha8Rng,
    mix: ChaCha8Rng,
    run_share: f64,
}

impl Draws {
    /// Whether the next value is the run's. Every stream advances on every value, so
    /// the task's values line up across runs whatever the mix chose.
    fn pick<T>(&mut self, task: T, run: T) -> T {
        let u = (self.mix.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        if u < self.run_share {
            run
        } else {
            task
        }
    }
}

impl TryRng for Draws {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let (task, run) = (self.task.next_u32(), self.run.next_u32());
        Ok(self.pick(task, run))
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let (task, run) = (self.task.next_u64(), self.run.next_u64());
        Ok(self.pick(task, run))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.try_next_u64()?.to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::Sampling;
    use rand::RngExt;

    fn request(task: &str, seed: u64) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![
                Message::System {
                    content: "s".into(),
                },
                Message::User {
                    content: task.into(),
                },
            ],
            tools: Vec::new(),
            max_completion_tokens: 1024,
            sampling: Sampling {
                temperature: Some(0.0),
                seed: Some(seed),
                parallel_tool_calls: Some(false),
            },
        }
    }

    fn values(task: &str, seed: u64, share: f64) -> Vec<f64> {
        let salts = Salts::of(&[1; 32], &request(task, seed), share);
        let mut d = salts.draws(&[b"turn", &0u64.to_le_bytes()]);
        (0..4_000).map(|_| d.random::<f64>()).collect()
    }

    fn shared(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / a.len() as f64
    }

    #[test]
    fn two_runs_of_a_task_share_the_draws_the_run_does_not_redraw() {
        // The run's share 0.3: a value agrees across two runs when both took the task's
        // (0.7 × 0.7 = 0.49).
        let (a, b) = (values("t", 1, 0.3), values("t", 2, 0.3));
        assert!((shared(&a, &b) - 0.49).abs() < 0.03, "{}", shared(&a, &b));
        // All the run's: nothing shared; none: everything.
        assert_eq!(shared(&values("t", 1, 1.0), &values("t", 2, 1.0)), 0.0);
        assert_eq!(values("t", 1, 0.0), values("t", 2, 0.0));
        // Another task in another run shares nothing; the same run is the same.
        assert_eq!(shared(&a, &values("u", 3, 0.3)), 0.0);
        assert_eq!(a, values("t", 1, 0.3));
    }

    #[test]
    fn mixed_values_stay_uniform() {
        let v = values("t", 1, 0.3);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
        assert!(v.iter().all(|x| (0.0..1.0).contains(x)));
    }
}
