//! A toy analysis kind, compiled only into tests: proof that a kind is one file plus
//! one line in the registry ([`crate::kinds`]). It counts each configuration's episodes and multiplies
//! the count by its one typed parameter, `factor`, and counts the study's variants (so
//! that it reads both the episodes and the `variants` table).
//!
//! Never: ships in the binary (`#[cfg(test)]`).

use serde::{Deserialize, Serialize};

use tbb_analysis::{AnalysisError, Context, Input, Output, ParamProblem, Produced, Typed};
use tbb_tables::TableBuilder;

/// The `toy` analysis kind.
pub struct Toy;

/// Its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToyParams {
    /// What each count is multiplied by (1 to 100).
    pub factor: u32,
}

impl Typed for Toy {
    type Params = ToyParams;
    const NAME: &'static str = "toy";
    const VERSION: &'static str = "toy/1";
    const INPUTS: &'static [Input] = &[Input::Episodes, Input::Variants];
    const OUTPUTS: &'static [&'static str] = &["toy"];

    fn check(params: &ToyParams) -> Vec<ParamProblem> {
        if (1..=100).contains(&params.factor) {
            return Vec::new();
        }
        vec![ParamProblem {
            path: "factor".into(),
            message: format!("factor = {} is out of range", params.factor),
            help: Some("give a factor from 1 to 100".into()),
        }]
    }

    fn run(params: &ToyParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let mut counts: std::collections::BTreeMap<&str, u64> = Default::default();
        for row in input.episodes {
            *counts.entry(row.configuration.as_str()).or_default() += 1;
        }
        let variants = input
            .tables
            .get("variants")
            .map_or(0, |v| v.num_rows() as u64);
        let batch = TableBuilder::new()
            .text("configuration", counts.keys())
            .u64(
                "scaled_episodes",
                counts.values().map(|n| n * u64::from(params.factor)),
            )
            .u64("variants", counts.values().map(|_| variants))
            .build("toy")?;
        Ok(vec![Output {
            table: "toy",
            batch,
        }]
        .into())
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use arrow_array::{Array, StringArray, UInt64Array};

    use crate::pipeline::{apply, Paths, Study};

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn manifest(dir: &Path, toy: &str) -> PathBuf {
        let catalogue = repo().join("manifests/configurations.toml");
        let text = format!(
            r#"
[study]
name = "toy-study"
catalogue = "{}"

[families]
names = ["overdue-escalation-harbor"]

[[cells.list]]
v = 8
w = "low"
d = "raw"

[configurations]
names = ["sim-dunlin-max"]

[[analyses]]
kind = "toy"
{toy}
"#,
            catalogue.display()
        );
        let path = dir.join("toy.toml");
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        path
    }

    fn paths(dir: &Path) -> Paths {
        Paths {
            families: repo().join("families"),
            prompts: repo().join("prompts"),
            outputs: dir.join("outputs"),
            lockfiles: dir.join("lockfiles"),
            cache: None,
        }
    }

    #[test]
    fn a_toy_kind_loads_plans_and_runs_to_its_table() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = manifest(dir.path(), "factor = 7");
        let study = Study::load(&path, &[], &paths(dir.path())).unwrap_or_else(|e| panic!("{e}"));
        assert!(study.dag.find("analysis[toy]").is_some());
        assert!(study.dag.find("table[toy]").is_some());
        let mut cache = study.cache().unwrap_or_else(|e| panic!("{e}"));
        let plan = study.plan(&cache).unwrap_or_else(|e| panic!("{e}"));
        let providers = apply::providers(&study).unwrap_or_else(|e| panic!("{e}"));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let summary = rt
            .block_on(apply::run(
                &study,
                &mut cache,
                plan,
                &providers,
                &apply::Options::default(),
            ))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(summary.failures, vec![]);
        let (batches, _) = tbb_tables::read_table(&study.outputs().join("toy.parquet"))
            .unwrap_or_else(|e| panic!("{e}"));
        let config = batches[0]
            .column_by_name("configuration")
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .map(|c| c.value(0).to_string());
        let scaled = batches[0]
            .column_by_name("scaled_episodes")
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            .map(|c| c.value(0));
        // One family × one cell × one configuration × one lane = 1 episode, × 7.
        assert_eq!(config.as_deref(), Some("sim-dunlin-max"));
        assert_eq!(scaled, Some(7));
        let variants = batches[0]
            .column_by_name("variants")
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            .map(|c| c.value(0));
        assert_eq!(variants, Some(1), "one family at one cell");
        // A second plan has nothing to run.
        let cache = study.cache().unwrap_or_else(|e| panic!("{e}"));
        assert!(study.plan(&cache).is_ok_and(|p| p.is_empty()));
    }

    #[test]
    fn a_toy_parameter_is_checked_at_its_span() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for (toy, expect) in [
            ("factr = 7", "did you mean `factor`?"),
            ("factor = 0", "factor = 0 is out of range"),
            (
                "factor = \"seven\"",
                "`factor` of the toy analysis is invalid",
            ),
        ] {
            let path = manifest(dir.path(), toy);
            let Err(e) = Study::load(&path, &[], &paths(dir.path())) else {
                panic!("{toy} loads")
            };
            let mut text = String::new();
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
                .with_width(200)
                .render_report(&mut text, &e)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(text.contains(expect), "{toy}: {text}");
            assert!(text.contains(toy), "{toy}: the span shows the line: {text}");
        }
    }
}
