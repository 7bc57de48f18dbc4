//! Nobody pays twice: the claims an apply takes on its live episodes when its cache is
//! shared through a store ([`super::remote`]), so that shards, or colleagues' applies of
//! one study, never send one episode's requests twice.
//!
//! Before a live episode starts, its claim (`claims/episodes/<execute key>`) is taken
//! create-only ([`super::claims`]). An episode whose claim another process holds is
//! deferred: the scheduler frees its slot and holds back the arm that follows it. Every
//! [`EpisodeClaims::POLL`] the apply takes in what the store gained
//! ([`super::cache::Cache::refresh`]); a deferred episode that its holder committed
//! meanwhile is reused like any cached node, and one whose holder's claim expired (the
//! holder died) is taken over, by exactly one taker. A claim taken from another holder
//! (expired, or released after its holder committed the episode since this apply
//! planned) is checked at the next poll before its episode runs: the store is listed
//! once a poll for every such episode, never once per episode. Held claims are
//! renewed every third of their time to live while their episodes run, and released
//! once the episode's nodes are committed (and so in the store): a claim released any
//! earlier would let a waiter find the episode neither claimed nor committed, and run
//! it again.
//!
//! Claims compare the machines' clocks: they must agree to well within the time to
//! live (`--claim-ttl`, 60 s by default), as NTP keeps them.
//!
//! Simulated episodes take no claim: they cost nothing, and a round trip to the store
//! each would cost more than running them.
//!
//! Never: runs, commits or orders an episode (the apply, the committer and the
//! scheduler do), or decides that a held episode is committed by anything but the
//! cache's own index.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use petgraph::graph::NodeIndex;

use super::claims::{Claim, Holder};
use super::remote::{Remote, RemoteError};

/// Who takes claims, and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimSettings {
    /// Shown to whoever finds a claim held: host, process and command, never a secret.
    pub holder: String,
    /// How long a claim outlives its holder's last renewal.
    pub ttl: Duration,
}

impl ClaimSettings {
    /// The default time to live of a claim or lease.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(60);

    /// This process as a holder: its host, its pid and `what` it runs.
    pub fn of_this_process(what: &str, ttl: Duration) -> ClaimSettings {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .map(|h| h.trim().to_string())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "a host".to_string());
        ClaimSettings {
            holder: format!("{host} pid {} ({what})", std::process::id()),
            ttl,
        }
    }
}

/// Whether an episode may run here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// Its claim is ours, and nobody held it before: run it.
    Ours,
    /// Its claim is ours, taken from a holder that released it or let it expire: the
    /// holder may have committed the episode meanwhile, so it is deferred until the
    /// next poll has looked in the store ([`Resolved`] then says which).
    AfterAnother,
    /// Another process holds it: the episode is deferred.
    Held(Holder),
}

/// What a poll of the deferred episodes found.
#[derive(Debug, Default)]
pub struct Resolved {
    /// Deferred episodes their holders committed: reuse them.
    pub committed: Vec<NodeIndex>,
    /// Deferred episodes whose claims are ours and that the store, looked at since
    /// they were taken, does not hold: run them.
    pub taken_over: Vec<NodeIndex>,
}

/// The claims of one apply.
pub struct EpisodeClaims {
    remote: Arc<Remote>,
    settings: ClaimSettings,
    /// Claims held, by execute node: the claim's name and its current ETag.
    held: HashMap<NodeIndex, (String, String)>,
    /// Episodes whose claims another process holds, by execute node: the claim's name.
    deferred: Vec<(NodeIndex, String)>,
    /// Episodes whose claims were taken from another holder since the last poll: run
    /// once the next poll finds them not committed.
    checking: Vec<NodeIndex>,
    /// Episodes ended here whose claims wait for their nodes to be committed.
    ending: Vec<NodeIndex>,
    /// Holders already announced.
    told: HashSet<String>,
    last_renewal: Instant,
    last_poll: Instant,
}

impl std::fmt::Debug for EpisodeClaims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EpisodeClaims")
            .field("held", &self.held.len())
            .field("deferred", &self.deferred.len())
            .finish_non_exhaustive()
    }
}

impl EpisodeClaims {
    /// How often deferred episodes are looked for in the store.
    pub const POLL: Duration = Duration::from_secs(1);

    /// Claims on `remote` taken as `settings` say.
    pub fn new(remote: Arc<Remote>, settings: ClaimSettings) -> EpisodeClaims {
        EpisodeClaims {
            remote,
            settings,
            held: HashMap::new(),
            deferred: Vec::new(),
            checking: Vec::new(),
            ending: Vec::new(),
            told: HashSet::new(),
            last_renewal: Instant::now(),
            last_poll: Instant::now(),
        }
    }

    /// The claim of the episode whose execute node has `key`.
    fn name(key: &str) -> String {
        format!("episodes/{key}")
    }

    /// Takes the claim of episode `execute` (execute key `key`): [`Taken::Ours`] or
    /// [`Taken::AfterAnother`] when it is this process's (already, or now), else the
    /// episode is deferred.
    pub fn take(&mut self, execute: NodeIndex, key: &str) -> Result<Taken, RemoteError> {
        if self.held.contains_key(&execute) {
            return Ok(Taken::Ours);
        }
        let name = Self::name(key);
        match self
            .remote
            .claim(&name, &self.settings.holder, now_ms(), self.settings.ttl)?
        {
            Claim::Won {
                e_tag,
                after_another,
            } => {
                self.held.insert(execute, (name, e_tag));
                if after_another {
                    self.checking.push(execute);
                    return Ok(Taken::AfterAnother);
                }
                Ok(Taken::Ours)
            }
            Claim::Held(holder) => {
                self.deferred.push((execute, name));
                Ok(Taken::Held(holder))
            }
        }
    }

    /// Whether `holder` is announced for the first time (the caller says so once).
    pub fn first_news_of(&mut self, holder: &str) -> bool {
        self.told.insert(holder.to_string())
    }

    /// Releases the claim of episode `execute`, taken and then found committed by its
    /// previous holder: it is not run here.
    fn give_back(&mut self, execute: NodeIndex) -> Result<(), RemoteError> {
        match self.held.remove(&execute) {
            Some((name, e_tag)) => self.remote.release(&name, &self.settings.holder, &e_tag),
            None => Ok(()),
        }
    }

    /// Whether claims wait for pending nodes to be committed before they are released
    /// (others may be waiting on them: the caller commits soon).
    pub fn has_ending(&self) -> bool {
        !self.ending.is_empty()
    }

    /// Episode `execute` ended here: its claim is released once its nodes are
    /// committed ([`EpisodeClaims::committed`]).
    pub fn ended(&mut self, execute: NodeIndex) {
        if self.held.contains_key(&execute) {
            self.ending.push(execute);
        }
    }

    /// Everything pending is committed (and pushed): releases the claims of the
    /// episodes that ended.
    pub fn committed(&mut self) -> Result<(), RemoteError> {
        for execute in std::mem::take(&mut self.ending) {
            if let Some((name, e_tag)) = self.held.remove(&execute) {
                self.remote.release(&name, &self.settings.holder, &e_tag)?;
            }
        }
        Ok(())
    }

    /// Whether episodes wait for other processes, or for a look in the store.
    pub fn has_deferred(&self) -> bool {
        !self.deferred.is_empty() || !self.checking.is_empty()
    }

    /// How long until something is due (a renewal, or a poll of deferred episodes).
    pub fn next_due(&self) -> Duration {
        let renewal = (!self.held.is_empty()).then(|| {
            self.renewal_every()
                .saturating_sub(self.last_renewal.elapsed())
        });
        // Claims that wait for a commit are released within a poll's time.
        let poll = (self.has_deferred() || self.has_ending())
            .then(|| Self::POLL.saturating_sub(self.last_poll.elapsed()));
        match (renewal, poll) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(Self::POLL),
        }
    }

    fn renewal_every(&self) -> Duration {
        self.settings.ttl / 3
    }

    /// Renews the held claims when a third of their time to live has passed. Returns
    /// how many were lost (expired and taken over: this process stalled for longer
    /// than the time to live, and their episodes may be paid for twice).
    pub fn renew_due(&mut self) -> Result<usize, RemoteError> {
        if self.last_renewal.elapsed() < self.renewal_every() {
            return Ok(0);
        }
        self.last_renewal = Instant::now();
        let mut lost = Vec::new();
        for (&execute, (name, e_tag)) in &mut self.held {
            let renewed = self.remote.renew(
                name,
                &self.settings.holder,
                e_tag,
                now_ms(),
                self.settings.ttl,
            )?;
            match renewed {
                Some(fresh) => *e_tag = fresh,
                None => lost.push(execute),
            }
        }
        for execute in &lost {
            self.held.remove(execute);
        }
        Ok(lost.len())
    }

    /// When a poll is due: `is_committed` says whether the cache (refreshed by the
    /// caller just before) holds an episode's nodes. The claims taken from another
    /// holder since the last poll are given back when their episodes are committed and
    /// run otherwise; the deferred episodes' claims are tried again, and those whose
    /// holders' claims expired or were released become ours, to be checked at the next
    /// poll (the store may have gained them between the caller's look and the take).
    pub fn poll_due(
        &mut self,
        is_committed: &dyn Fn(NodeIndex) -> bool,
    ) -> Result<Resolved, RemoteError> {
        let mut resolved = Resolved::default();
        if self.last_poll.elapsed() < Self::POLL {
            return Ok(resolved);
        }
        self.last_poll = Instant::now();
        for execute in std::mem::take(&mut self.checking) {
            if is_committed(execute) {
                self.give_back(execute)?;
                resolved.committed.push(execute);
            } else {
                resolved.taken_over.push(execute);
            }
        }
        let mut still = Vec::new();
        for (execute, name) in std::mem::take(&mut self.deferred) {
            if is_committed(execute) {
                resolved.committed.push(execute);
                continue;
            }
            match self
                .remote
                .claim(&name, &self.settings.holder, now_ms(), self.settings.ttl)?
            {
                Claim::Won { e_tag, .. } => {
                    self.held.insert(execute, (name, e_tag));
                    self.checking.push(execute);
                }
                Claim::Held(_) => still.push((execute, name)),
            }
        }
        self.deferred = still;
        Ok(resolved)
    }

    /// Whether a poll is due now.
    pub fn poll_is_due(&self) -> bool {
        self.has_deferred() && self.last_poll.elapsed() >= Self::POLL
    }

    /// Gives up every claim held (an apply that stops early: its episodes not committed
    /// are free for others at once rather than after the time to live).
    pub fn release_all(&mut self) {
        for (_, (name, e_tag)) in self.held.drain() {
            // Best effort: a claim not released expires.
            let _ = self.remote.release(&name, &self.settings.holder, &e_tag);
        }
        self.ending.clear();
        self.checking.clear();
    }
}

/// Milliseconds since the Unix epoch (a claim's expiry, compared across machines).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(store: &Arc<object_store::memory::InMemory>) -> Arc<Remote> {
        Arc::new(super::super::claims::tests::remote(store))
    }

    fn claims(store: &Arc<object_store::memory::InMemory>, who: &str, ttl: u64) -> EpisodeClaims {
        EpisodeClaims::new(
            remote(store),
            ClaimSettings {
                holder: who.to_string(),
                ttl: Duration::from_millis(ttl),
            },
        )
    }

    fn n(i: usize) -> NodeIndex {
        NodeIndex::new(i)
    }

    #[test]
    fn an_episode_held_elsewhere_is_deferred_then_reused_once_its_holder_commits_it() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let (mut a, mut b) = (claims(&store, "a", 60_000), claims(&store, "b", 60_000));
        assert_eq!(a.take(n(1), "k1").ok(), Some(Taken::Ours));
        assert_eq!(a.take(n(1), "k1").ok(), Some(Taken::Ours), "held already");
        match b.take(n(1), "k1") {
            Ok(Taken::Held(h)) => assert_eq!(h.holder, "a"),
            other => panic!("{other:?}"),
        }
        assert!(b.has_deferred());
        assert!(b.first_news_of("a") && !b.first_news_of("a"));
        // Not committed yet, and still held: it stays deferred.
        b.last_poll = Instant::now() - EpisodeClaims::POLL;
        let resolved = b.poll_due(&|_| false).unwrap_or_else(|e| panic!("{e}"));
        assert!(resolved.committed.is_empty() && resolved.taken_over.is_empty());
        assert!(b.has_deferred());
        // Ended and committed by a: released; b reuses its nodes.
        a.ended(n(1));
        a.committed().unwrap_or_else(|e| panic!("{e}"));
        b.last_poll = Instant::now() - EpisodeClaims::POLL;
        let resolved = b.poll_due(&|e| e == n(1)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resolved.committed, [n(1)]);
        assert!(!b.has_deferred());
        // A latecomer that planned before the commit takes the released claim: the
        // episode waits for the next poll, which finds it committed and gives the
        // claim back.
        let mut c = claims(&store, "c", 60_000);
        assert_eq!(c.take(n(1), "k1").ok(), Some(Taken::AfterAnother));
        assert!(c.has_deferred() && !c.poll_is_due());
        c.last_poll = Instant::now() - EpisodeClaims::POLL;
        let resolved = c.poll_due(&|e| e == n(1)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resolved.committed, [n(1)]);
        assert!(resolved.taken_over.is_empty() && !c.has_deferred() && c.held.is_empty());
        // Given back, so the next taker is free to take it too.
        let mut d = claims(&store, "d", 60_000);
        assert_eq!(d.take(n(1), "k1").ok(), Some(Taken::AfterAnother));
        // Not committed after all (its holder stopped early): it runs after the poll.
        d.last_poll = Instant::now() - EpisodeClaims::POLL;
        let resolved = d.poll_due(&|_| false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resolved.taken_over, [n(1)]);
        assert!(d.held.contains_key(&n(1)));
    }

    #[test]
    fn an_ended_episode_s_claim_waits_for_its_commit_and_brings_the_next_wake_up_near() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let mut a = claims(&store, "a", 600_000);
        assert_eq!(a.take(n(1), "k1").ok(), Some(Taken::Ours));
        // Nothing deferred: only the renewal (a third of ten minutes) is due.
        assert!(a.next_due() > EpisodeClaims::POLL);
        a.ended(n(1));
        assert!(a.has_ending());
        assert!(a.next_due() <= EpisodeClaims::POLL);
        a.committed().unwrap_or_else(|e| panic!("{e}"));
        assert!(!a.has_ending());
        assert!(matches!(
            claims(&store, "b", 600_000).take(n(1), "k1"),
            Ok(Taken::AfterAnother)
        ));
    }

    #[test]
    fn a_dead_holder_s_claim_is_taken_over_and_a_live_one_s_is_renewed() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let (mut dead, mut live, mut waiter) = (
            claims(&store, "dead", 1_000),
            claims(&store, "live", 1_000),
            claims(&store, "waiter", 1_000),
        );
        assert_eq!(dead.take(n(1), "k1").ok(), Some(Taken::Ours));
        assert_eq!(live.take(n(2), "k2").ok(), Some(Taken::Ours));
        assert!(matches!(waiter.take(n(1), "k1"), Ok(Taken::Held(_))));
        assert!(matches!(waiter.take(n(2), "k2"), Ok(Taken::Held(_))));
        // `live` renews in time, `dead` never does.
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(400));
            assert_eq!(live.renew_due().ok(), Some(0));
        }
        waiter.last_poll = Instant::now() - EpisodeClaims::POLL;
        let resolved = waiter
            .poll_due(&|_| false)
            .unwrap_or_else(|e| panic!("{e}"));
        // Taken over now, run once the next poll finds it still not committed.
        assert!(resolved.taken_over.is_empty() && resolved.committed.is_empty());
        assert!(waiter.held.contains_key(&n(1)));
        waiter.last_poll = Instant::now() - EpisodeClaims::POLL;
        let resolved = waiter
            .poll_due(&|_| false)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resolved.taken_over, [n(1)]);
        assert!(waiter.has_deferred(), "k2 is still live's");
        // The dead holder, back, finds its claim lost when it renews.
        assert_eq!(dead.renew_due().ok(), Some(1));
    }
}
