//! `tbb compile FAMILY --v --w --d [--r] [--depth] [--json]`.

use clap::Args;
use miette::Result;
use serde::Serialize;
use serde_json::Value as Json;

use super::{family, load, print_json, CellArgs, Cli, CliError};
use crate::compile::{compile, study_cells, Cell, Program};
use crate::family::FamilySet;
use crate::grade::{grade, reference::reference_trace};

#[derive(Debug, Args)]
pub struct CompileArgs {
    /// Family name (see `tbb families`).
    #[arg(required_unless_present = "all")]
    family: Option<String>,
    /// Compile every family at every cell of its study (the 12 capacity cells for core
    /// and holdout families, depths 2, 6, 14 and 30 for frontier and holdout families),
    /// grade each reference trace, and print one line per family.
    #[arg(long, conflicts_with_all = ["family", "json"])]
    all: bool,
    #[command(flatten)]
    cell: CellArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// With --json, include the full record store.
    #[arg(long, requires = "json")]
    store: bool,
}

#[derive(Serialize)]
struct Summary<'a> {
    variant_id: &'a str,
    variant_hash: &'a str,
    family: &'a str,
    intent: &'a str,
    cell: Cell,
    user_request: &'a str,
    menu: Vec<String>,
    operational_tools: &'a [String],
    certified_min_calls: u32,
    call_limit: u32,
    turn_limit: u32,
    answer: Json,
    reference_program: &'a Program,
    permitted_change: &'a Option<crate::compile::ExpectedChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    store: Option<&'a crate::compile::Store>,
}

pub fn exec(cli: &Cli, args: &CompileArgs) -> Result<()> {
    let set = load(&cli.families)?;
    let Some(name) = &args.family else {
        return compile_all(&set);
    };
    let fam = family(&set, name)?;
    let v = compile(fam, &args.cell.cell()).map_err(CliError::from)?;
    if args.json {
        print_json(&Summary {
            variant_id: &v.variant_id,
            variant_hash: &v.variant_hash,
            family: &v.family,
            intent: &v.intent,
            cell: v.cell,
            user_request: &v.user_request,
            menu: v.menu_names(),
            operational_tools: &v.operational_tools,
            certified_min_calls: v.certified_min_calls,
            call_limit: v.call_limit,
            turn_limit: v.turn_limit,
            answer: v.answer(),
            reference_program: &v.reference_program,
            permitted_change: &v.permitted_change,
            store: args.store.then_some(&v.store),
        });
        return Ok(());
    }
    say!("variant {}  ({} at {})", v.variant_id, v.family, v.cell);
    say!("\n== user request\n{}", v.user_request);
    say!("\n== menu ({} tools; * operational)", v.menu.len());
    for t in &v.menu {
        say!("{} {}", if t.operational { "*" } else { " " }, t.name);
    }
    say!("\n== reference program");
    for (i, s) in v.reference_program.steps.iter().enumerate() {
        let after: Vec<String> = s.after.iter().map(|a| format!("#{a}")).collect();
        say!(
            "#{i} {} {}{}",
            s.call.tool,
            s.call.arguments,
            if after.is_empty() {
                String::new()
            } else {
                format!("  after {}", after.join(", "))
            }
        );
    }
    say!(
        "\ncertified minimum {} calls; call limit {}; turn limit {}",
        v.certified_min_calls,
        v.call_limit,
        v.turn_limit
    );
    say!("answer {}", v.answer_text());
    Ok(())
}

fn compile_all(set: &FamilySet) -> Result<()> {
    let (mut variants, mut passed) = (0, 0);
    for fam in &set.families {
        let cells = study_cells(fam.split());
        let mut ok = 0;
        let mut mins = Vec::new();
        for cell in &cells {
            let v = compile(fam, cell).map_err(CliError::from)?;
            if grade(&v, &reference_trace(&v)).vts {
                ok += 1;
            }
            mins.push(v.certified_min_calls);
        }
        mins.sort_unstable();
        mins.dedup();
        let mins: Vec<String> = mins.iter().map(u32::to_string).collect();
        say!(
            "{:<38} {:>2} cells  reference VTS {:>2}/{:<2}  certified minima {}",
            fam.name,
            cells.len(),
            ok,
            cells.len(),
            mins.join(",")
        );
        variants += cells.len();
        passed += ok;
    }
    say!("{variants} variants compiled; {passed} reference traces graded VTS = true");
    Ok(())
}
