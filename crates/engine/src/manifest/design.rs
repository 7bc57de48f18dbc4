//! The design the analyses are checked against, read off a manifest
//! ([`Manifest::design`], [`design_of_parts`]), and the analyses its design cannot run
//! ([`Manifest::skipped_analyses`]).
//!
//! Owns: the one place that turns the manifest's factors (blocks, arms, cells,
//! configurations) into the analysis crate's [`Design`].
//!
//! Never: decides what an analysis needs (each kind says so on the [`Design`]).

use std::collections::BTreeSet;

use tbb_analysis::{AnalysisKind, BlockShape, Design};
use tbb_core::compile::cell::Cell;
use tbb_harness::{Actor, Arm, Delivery, Menu, PromptVariant};

use super::{Block, Manifest};

impl Manifest {
    /// The design of this manifest: the one place that reads its factors for the
    /// analyses.
    pub fn design(&self) -> Design {
        let manifest = self;
        let configurations: Vec<String> = manifest
            .configurations
            .iter()
            .map(|c| c.name.clone())
            .collect();
        Design {
            plays_toolsandbox: manifest.toolsandbox.is_some(),
            ..design_of_parts(
                &manifest.blocks,
                &manifest.arms,
                &manifest.cells,
                &configurations,
            )
        }
    }

    /// The analyses of a manifest that cannot run on its design, in manifest order, with
    /// why: `tbb manifest check` and `tbb plan` list them, the DAG leaves them out and the
    /// report notes them. An analysis cannot run when its kind's needs are not met by the
    /// [`Design`], or when it reads a table of this study that no runnable analysis listed
    /// before it writes.
    pub fn skipped_analyses(&self) -> Vec<(AnalysisKind, String)> {
        let manifest = self;
        let design = manifest.design();
        let mut written: BTreeSet<&str> = BTreeSet::new();
        let mut out = Vec::new();
        for a in &manifest.analyses {
            let unmet = a.kind.kind().needs(&a.params, &design).or_else(|| {
                a.kind
                    .table_inputs()
                    .find(|t| a.from_study(t).is_none() && !written.contains(t))
                    .map(|t| {
                        format!(
                            "it reads the `{t}` table, which no analysis listed before it writes; \
                             list one that does, or read another study's with \
                             `inputs = {{ {t} = {{ from = \"<study>\" }} }}`"
                        )
                    })
            });
            match unmet {
                Some(why) => out.push((a.kind, why)),
                None => written.extend(a.kind.kind().outputs().iter().copied()),
            }
        }
        out
    }
}

/// The design of a manifest's resolved parts, before the manifest is assembled
/// (its analyses' names are checked against it while it loads); whether it plays
/// ToolSandbox is the caller's to set.
pub fn design_of_parts(
    blocks: &[Block],
    arms: &[Arm],
    cells: &[Cell],
    configurations: &[String],
) -> Design {
    let caps: BTreeSet<u32> = blocks
        .iter()
        .flat_map(|b| {
            b.completion_caps
                .iter()
                .chain(b.configuration_caps.values().flatten())
                .copied()
        })
        .chain(arms.iter().filter_map(|a| a.completion_cap))
        .collect();
    let run: BTreeSet<usize> = blocks.iter().flat_map(|b| b.arms.iter().copied()).collect();
    let mut prompts: Vec<PromptVariant> = Vec::new();
    let mut deliveries: Vec<Delivery> = Vec::new();
    let mut actors: Vec<Actor> = Vec::new();
    let mut menus: Vec<Menu> = Vec::new();
    for form in arms.iter().map(|a| a.form) {
        if !menus.contains(&form.menu) {
            menus.push(form.menu);
        }
        if !prompts.contains(&form.prompt) {
            prompts.push(form.prompt);
        }
        if !deliveries.contains(&form.delivery) {
            deliveries.push(form.delivery);
        }
        if !actors.contains(&form.actor) {
            actors.push(form.actor);
        }
    }
    Design {
        cells: cells.to_vec(),
        menus,
        prompts,
        deliveries,
        actors,
        configurations: configurations.to_vec(),
        arms: arms
            .iter()
            .enumerate()
            .filter(|(i, _)| run.contains(i))
            .map(|(_, a)| a.name.clone())
            .collect(),
        blocks: blocks
            .iter()
            .map(|b| BlockShape {
                cells: b.cells.clone(),
                families: b.families.len(),
                repeats: b.repeats,
                arms: b
                    .arms
                    .iter()
                    .filter_map(|&i| arms.get(i).map(|a| a.name.clone()))
                    .collect(),
            })
            .collect(),
        completion_caps: caps.into_iter().collect(),
        plays_toolsandbox: false,
    }
}
