//! `tbb explain MANIFEST NODE`: why a node would rerun — its cached and current key
//! inputs side by side, and the reasons the plan gives.

use std::path::PathBuf;

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{study, Cli};
use crate::family::closest;
use crate::pipeline::key::diff;
use crate::pipeline::PipelineError;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The manifest file.
    manifest: PathBuf,
    /// The node: its identity (`execute[cfg=…, …]`, as `tbb plan --show-cached` prints
    /// it) or a prefix of its key.
    node: String,
    /// Override a manifest key; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    #[command(flatten)]
    models: super::models::ModelArgs,
}

pub fn exec(cli: &Cli, args: &ExplainArgs) -> Result<()> {
    let study = study(cli, &args.manifest, &args.set, &args.models.models()?)?;
    let cache = study.cache()?;
    let dag = &study.dag;
    let found = dag.find(&args.node).or_else(|| {
        let hits: Vec<_> = dag
            .nodes()
            .filter(|(_, n)| args.node.len() >= 6 && n.key.starts_with(&args.node))
            .map(|(i, _)| i)
            .collect();
        (hits.len() == 1).then(|| hits[0])
    });
    let Some(index) = found else {
        let ids: Vec<String> = dag.nodes().map(|(_, n)| n.id()).collect();
        let help = match closest(&args.node, ids.iter().map(String::as_str)) {
            Some(s) => format!("did you mean `{s}`?"),
            None => "`tbb plan MANIFEST --show-cached` lists every node".into(),
        };
        return Err(PipelineError::UnknownNode {
            id: args.node.clone(),
            help,
        }
        .into());
    };
    let node = &dag.graph[index];
    let input = dag.key_input(index).full();
    say!("{}", node.id());
    say!("  key     {}", node.key);
    let pretty =
        |v: &crate::pipeline::KeyInput| serde_json::to_string_pretty(v).unwrap_or_default();
    match cache.latest(&node.id()) {
        Some(e) if e.key == crate::pipeline::cache_index::Digest::of(&node.key) => {
            say!(
                "  status  cached: its key input is unchanged\n\nkey input:\n{}",
                pretty(&input)
            );
        }
        Some(e) => {
            let texts = cache.texts(&[e]).map_err(PipelineError::from)?;
            let cached_key = texts.first().map(|t| t.key.as_str()).unwrap_or_default();
            say!("  cached  {cached_key}");
            let objects = |h: &str| cache.object(h).or_else(|| dag.objects.get(h).cloned());
            match cache.key_input(e).map_err(PipelineError::from)? {
                Some(old) => {
                    say!("  status  reruns:");
                    for r in diff(&old, &input, &objects) {
                        say!("    ~ {r}");
                    }
                    say!(
                        "\ncached key input:\n{}\n\ncurrent key input:\n{}",
                        pretty(&old),
                        pretty(&input)
                    );
                }
                None => say!("  status  reruns: its cached key input is unreadable"),
            }
        }
        None => say!(
            "  status  new: never run under this identity\n\nkey input:\n{}",
            pretty(&input)
        ),
    }
    Ok(())
}
