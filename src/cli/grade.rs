//! `tbb grade TRACE.json [--json]`.

use std::path::PathBuf;

use clap::Args;
use miette::Result;

use super::{family, load, print_json, Cli, CliError};
use crate::compile::compile;
use crate::grade::{grade, trace::Trace};

#[derive(Debug, Args)]
pub struct GradeArgs {
    /// The trace file (JSON).
    trace: PathBuf,
    /// Print the verdict as JSON.
    #[arg(long)]
    json: bool,
}

pub fn exec(cli: &Cli, args: &GradeArgs) -> Result<()> {
    let bad = |message: String| CliError::Trace {
        path: args.trace.clone(),
        message,
    };
    let text = tbb_diag::input::read_text(&args.trace, tbb_diag::input::MAX_DATA_BYTES)
        .map_err(|e| bad(e.to_string()))?;
    let trace: Trace = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let set = load(&cli.families)?;
    let fam = family(&set, &trace.family)?;
    let variant = compile(fam, &trace.cell).map_err(CliError::from)?;
    let verdict = grade(&variant, &trace);
    if args.json {
        print_json(&verdict);
        return Ok(());
    }
    let marks: Vec<String> = verdict
        .obligations
        .in_order()
        .iter()
        .map(|(o, ok)| format!("{o:?}{}", if *ok { "✓" } else { "✗" }))
        .collect();
    say!("variant {}  vts={}", verdict.variant_id, verdict.vts);
    say!("obligations {}", marks.join(" "));
    if let (Some(o), Some(f)) = (verdict.first_unmet, verdict.terminal_flag) {
        say!(
            "failure record ({o:?}, {})",
            crate::compile::cell::level_name(&f)
        );
    }
    for e in &verdict.integrity_errors {
        say!("integrity: {e}");
    }
    Ok(())
}
