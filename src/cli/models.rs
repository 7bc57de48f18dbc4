//! `--model PROVIDER/MODEL` (repeatable) and `--base-url URL`: the flags that aim a
//! study at served models without editing the catalogue, shared by every command that
//! loads a study (`plan`, `apply`, `certify`, `reproduce`, `report`, `status`, `show`,
//! `explain`, `dag`) so that all of them load the same one. What a flag makes
//! is `crate::provider::model`'s; how it replaces the manifest's configurations is
//! `crate::manifest::Models`'.

use clap::Args;

use crate::manifest::Models;
use crate::provider::model::{self, ModelError};

#[derive(Debug, Args, Default, Clone)]
pub struct ModelArgs {
    /// Run this model instead of the manifest's configurations: PROVIDER/MODEL with
    /// PROVIDER openai, anthropic or google (e.g. openai/gpt-4.1-mini); repeatable.
    /// Its configuration is named PROVIDER-MODEL (openai-gpt-4.1-mini), takes the
    /// protocol's defaults, and its key from OPENAI_API_KEY, ANTHROPIC_API_KEY or
    /// GEMINI_API_KEY (else GOOGLE_API_KEY). Give the same flags to every command on the
    /// study (plan, apply, certify, reproduce, report, ...).
    #[arg(long = "model", value_name = "PROVIDER/MODEL")]
    pub model: Vec<String>,
    /// The OpenAI-compatible server of the openai/ models (default: OPENAI_BASE_URL,
    /// else OpenAI's API); a server on this machine gets no key.
    #[arg(long, value_name = "URL", requires = "model")]
    pub base_url: Option<String>,
}

impl ModelArgs {
    /// The configurations of the flags, reading `OPENAI_BASE_URL` from this process.
    pub fn models(&self) -> Result<Models, ModelError> {
        let env = |name: &str| std::env::var(name).ok();
        let made = model::configurations(&self.model, self.base_url.as_deref(), &env)?;
        Ok(Models {
            configurations: self.model.iter().cloned().zip(made).collect(),
        })
    }

    /// The flags as a command line takes them again (` --model a --base-url u`).
    pub fn flags(&self) -> String {
        let mut out = String::new();
        for m in &self.model {
            out.push_str(&format!(" --model {m}"));
        }
        if let Some(url) = &self.base_url {
            out.push_str(&format!(" --base-url {url}"));
        }
        out
    }
}
