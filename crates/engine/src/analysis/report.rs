//! The `report` analysis kind: renders `report.md`, `report.html` and the figures from
//! the tables of every analysis listed before it (the rendering is `crate::report`'s).
//!
//! Never: computes a statistic; it reads the tables it is given.

use super::{AnalysisError, Context, Input, NoParams, Produced, Typed};

/// The `report` analysis kind.
pub struct Report;

impl Typed for Report {
    type Params = NoParams;
    const NAME: &'static str = "report";
    const VERSION: &'static str = "report/7";
    const INPUTS: &'static [Input] = &[Input::EveryAnalysis];
    const OUTPUTS: &'static [&'static str] = &[];

    fn run(_params: &NoParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let rendered = crate::report::render(input.study, input.tables, input.skipped)?;
        Ok(Produced {
            tables: Vec::new(),
            files: rendered.into_files(),
        })
    }
}
