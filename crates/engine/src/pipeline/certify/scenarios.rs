//! Certification of a study's ToolSandbox episodes: each graded again from its saved
//! world, as the paper re-grades ToolSandbox rows, without running a tool or asking a
//! provider, and the row compared field by field with the one its grade node stored.
//!
//! Owns: which scenario nodes are certified and their certificates.
//!
//! Never: writes to the cache or repairs a stored row.

use petgraph::graph::NodeIndex;
use tbb_tables::ScenarioEpisodeRow;

use super::{compare, Certificate, CertifyError};
use crate::pipeline::cache::Cache;
use crate::pipeline::dag::Work;
use crate::pipeline::events::{Event, Stage};
use crate::pipeline::reporter::Reporter;
use crate::pipeline::Study;

/// One played scenario to certify.
pub(super) struct ScenarioJob {
    /// Its scenario node.
    pub run: NodeIndex,
    /// Its grade node.
    pub grade: NodeIndex,
}

/// The scenario nodes of the configurations `selected` admits, in DAG order.
pub(super) fn jobs(study: &Study, selected: &dyn Fn(usize) -> bool) -> Vec<ScenarioJob> {
    let dag = &study.dag;
    dag.nodes()
        .filter_map(|(i, n)| match n.work {
            Work::Scenario { config, .. } if selected(config) => Some(ScenarioJob {
                run: i,
                grade: dag.scenario_grade_of(i)?,
            }),
            _ => None,
        })
        .collect()
}

/// Certifies `jobs` (every one in the cache: the caller checked).
pub(super) fn certify(
    study: &Study,
    cache: &Cache,
    jobs: &[ScenarioJob],
    reporter: &dyn Reporter,
) -> Result<Vec<Certificate>, CertifyError> {
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let dag = &study.dag;
    let data = study
        .toolsandbox()
        .map_err(|e| CertifyError::ToolSandboxData {
            detail: e.to_string(),
        })?;
    let keys: Vec<&str> = jobs
        .iter()
        .flat_map(|j| {
            [
                dag.graph[j.run].key.as_ref(),
                dag.graph[j.grade].key.as_ref(),
            ]
        })
        .collect();
    let payloads = cache.payloads(&keys)?;
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        let run = &dag.graph[job.run];
        let grade = &dag.graph[job.grade];
        let spec = data.spec(&study.manifest, &run.work);
        let mut certificate = Certificate {
            id: run.id(),
            node_key: grade.key.to_string(),
            episode_key: spec.as_ref().map(tbb_harness::scenario::scenario_key),
            configuration: spec
                .as_ref()
                .map_or_else(String::new, |s| s.config.name.clone()),
            block: String::new(),
            arm: String::new(),
            variant_id: spec
                .as_ref()
                .map_or_else(String::new, |s| s.scenario.name.clone()),
            lane: String::new(),
            repair: String::new(),
            cap: spec.as_ref().map_or(0, |s| s.completion_cap),
            repeat: spec.as_ref().map_or(0, |s| s.repeat),
            passed: false,
            mismatched: Vec::new(),
            first_difference: None,
        };
        let stored: Option<Result<ScenarioEpisodeRow, String>> = payloads
            .get(&*grade.key)
            .map(|p| crate::pipeline::rows::read(p));
        certificate.first_difference = match (spec, stored) {
            (None, _) => Some("not a scenario node of this manifest".into()),
            (_, None) => Some("its stored row is not in the cache".into()),
            (_, Some(Err(e))) => Some(format!("its stored row is unreadable: {e}")),
            (Some(spec), Some(Ok(stored))) => {
                match crate::pipeline::scenarios::regrade(
                    &spec,
                    &run.id(),
                    &run.key,
                    payloads.get(&*run.key).map(String::as_str),
                    &grade.key,
                ) {
                    Err(e) => Some(format!("its saved world does not grade: {e}")),
                    Ok(regraded) => {
                        let differences = compare(&regraded, &stored, true);
                        certificate.mismatched = differences.iter().map(|d| d.0.clone()).collect();
                        differences.first().map(|(field, new, old)| {
                            format!("{field}: graded again {new}, stored {old}")
                        })
                    }
                }
            }
        };
        certificate.passed = certificate.first_difference.is_none();
        reporter.event(&Event::NodeFinished {
            stage: Stage::Certify,
            node: &certificate.id,
            ok: certificate.passed,
        });
        out.push(certificate);
    }
    Ok(out)
}
