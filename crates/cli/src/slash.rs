//! The project's custom slash commands and output style, for every way the lead is driven:
//! `troupe -p "/name args"`, stream-json prompts and the REPL run the command's prompt with its
//! `allowed-tools` granted and its `model` in force for that turn only; `system/init` and the
//! SDK's `initialize` answer list them, with the connected MCP servers' prompts. The output style chosen by the `outputStyle` setting
//! shapes the lead's system prompt.

use crate::render::stream_json::SLASH_COMMANDS;
use std::path::Path;
use std::sync::Arc;
use troupe_agent::permissions::{Policy, Rules};
use troupe_agent::{Agent, Extension};
use troupe_catalog::commands::{self, Commands, Lookup, Scope};
use troupe_catalog::output_styles::{self, OutputStyle, OutputStyleExtension};
use troupe_mcp::McpManager;
use troupe_model::Model;
use troupe_protocol::session::Prompt;
use troupe_settings::Settings;

/// What the project defines for the lead's conversation besides agents and skills.
pub struct Custom {
    /// The custom slash commands.
    pub commands: Commands,
    /// The output style in force (`None`: `default`).
    pub style: Option<OutputStyle>,
    /// Every style's name, `default` first.
    pub style_names: Vec<String>,
}

impl Custom {
    /// Reads the commands and styles of the scopes `--setting-sources` lets in (`None`: all),
    /// and picks the style the `outputStyle` setting names; an unknown style is a warning
    /// naming the ones there are, and the default style applies.
    pub fn load(
        workspace: &Path,
        home: Option<&Path>,
        sources: Option<&str>,
        settings: &Settings,
    ) -> anyhow::Result<Custom> {
        let allowed =
            |scope: &str| sources.is_none_or(|list| list.split(',').any(|s| s.trim() == scope));
        let home = home.filter(|_| allowed("user"));
        let mut found = commands::load(workspace, home);
        if !allowed("project") {
            found.commands.retain(|c| c.scope != Scope::Project);
        }
        for skipped in &found.skipped {
            eprintln!(
                "troupe: warning: skipped slash command {}: {}",
                skipped.path.display(),
                skipped.why
            );
        }
        let styles = output_styles::load(allowed("project").then_some(workspace), home);
        for (path, why) in &styles.skipped {
            eprintln!(
                "troupe: warning: skipped output style {}: {why}",
                path.display()
            );
        }
        let chosen = settings
            .other
            .get("outputStyle")
            .and_then(serde_json::Value::as_str)
            .unwrap_or(output_styles::DEFAULT);
        let style = match styles.choose(chosen) {
            Ok(style) => style.cloned(),
            Err(e) => {
                eprintln!("troupe: warning: settings outputStyle: {e}; the default style applies");
                None
            }
        };
        Ok(Custom {
            commands: found,
            style,
            style_names: styles.names(),
        })
    }

    /// These commands with `more` after them (a plugin's, a skill's); one whose name is taken
    /// is left out, as a later file of a name is.
    pub fn with_commands(mut self, more: Vec<commands::SlashCommand>) -> Custom {
        for command in more {
            if !self
                .commands
                .commands
                .iter()
                .any(|c| c.name == command.name)
            {
                self.commands.commands.push(command);
            }
        }
        self
    }

    /// The style's name as `system/init` reports it.
    pub fn style_name(&self) -> &str {
        self.style
            .as_ref()
            .map_or(output_styles::DEFAULT, |s| s.name.as_str())
    }

    /// The extension that puts the style into the lead's prompt, if a style is in force.
    pub fn style_extension(&self) -> Option<Arc<dyn Extension>> {
        let style = self.style.clone()?;
        Some(Arc::new(OutputStyleExtension::new(style)))
    }

    /// Whether the style replaces the coding agent's identity.
    pub fn drops_coding_identity(&self) -> bool {
        self.style
            .as_ref()
            .is_some_and(|s| !s.keep_coding_instructions)
    }

    /// Every slash command's name: the built-in ones, the project's and the user's, then the
    /// prompts of the connected MCP servers.
    pub fn all_names(&self, mcp: &McpManager) -> Vec<String> {
        SLASH_COMMANDS
            .iter()
            .map(|s| s.to_string())
            .chain(self.commands.names())
            .chain(mcp.prompts().into_iter().map(|p| p.name))
            .collect()
    }

    /// The SDK's `initialize` answer's `commands`: `{name, description, argumentHint}`.
    pub fn described(&self, mcp: &McpManager) -> Vec<serde_json::Value> {
        let built_in = SLASH_COMMANDS
            .iter()
            .map(|name| serde_json::json!({"name": name, "description": "", "argumentHint": ""}));
        let custom = self.commands.commands.iter().map(|c| {
            serde_json::json!({
                "name": c.name,
                "description": format!("{} {}", c.description, c.label()).trim(),
                "argumentHint": c.argument_hint.clone().unwrap_or_default(),
            })
        });
        let prompts = mcp.prompts().into_iter().map(|p| {
            serde_json::json!({
                "name": p.name,
                "description": format!("{} (MCP)", p.description).trim_start(),
                "argumentHint": p.argument_hint(),
            })
        });
        built_in.chain(custom).chain(prompts).collect()
    }
}

/// What a command's turn changed, put back by [`CommandTurn::end`].
#[derive(Default)]
#[must_use = "end() puts the lead's policy and model back"]
pub struct CommandTurn {
    policy: Option<Policy>,
    model: Option<(Arc<dyn Model>, String)>,
}

impl CommandTurn {
    /// Puts back the policy and model the command's turn replaced.
    pub fn end(self, agent: &mut Agent) {
        if let Some(policy) = self.policy {
            agent.set_policy(policy);
        }
        if let Some((model, name)) = self.model {
            agent.set_model(model, name);
        }
    }
}

/// The prompt to run for `prompt`: an MCP server's prompt (`/mcp__<server>__<prompt> args`,
/// `mcp_prompt`), a custom command's expanded prompt (its `allowed-tools` and
/// `model` put in force until [`CommandTurn::end`], its ``!`cmd` ``s run and `@path`s attached,
/// `slash_body`), or the prompt itself (the `@path`s of its typed part attached when
/// `attach_in` gives the folder they are relative to and that part). Images the prompt carries (an SDK client's) stay with it. An
/// ambiguous short name, a bad `allowed-tools` rule or a refused ``!`cmd` `` is an error saying
/// what to do instead.
pub async fn begin(
    agent: &mut Agent,
    prompt: Prompt,
    commands: &Commands,
    mcp: &McpManager,
    attach_in: Option<(&Path, &str)>,
) -> Result<(Prompt, CommandTurn), String> {
    let Prompt {
        text: prompt,
        images,
    } = prompt;
    let with_images = |mut made: Prompt| {
        made.images.extend(images.iter().cloned());
        made
    };
    if let Some(ran) = crate::mcp_prompt::run(mcp, &prompt).await {
        return ran.map(|text| (with_images(text.into()), CommandTurn::default()));
    }
    let (command, args) = match commands.lookup(&prompt) {
        Lookup::Unknown => {
            let made = match attach_in {
                Some((dir, typed)) => crate::repl_input::attach_from(&prompt, typed, dir),
                None => prompt.into(),
            };
            return Ok((with_images(made), CommandTurn::default()));
        }
        Lookup::Ambiguous(names) => {
            return Err(format!(
                "{} names several commands: type one of /{}",
                prompt.split_whitespace().next().unwrap_or(""),
                names.join(", /")
            ))
        }
        Lookup::Found(command, args) => (command, args),
    };
    let expanded = command.expand(args);
    let mut turn = CommandTurn::default();
    if !command.allowed_tools.is_empty() {
        let granted = Rules::parse(&command.allowed_tools, &[], &[]).map_err(|e| {
            format!(
                "/{}: allowed-tools in {}: {e}",
                command.name,
                command.path.display()
            )
        })?;
        let saved = agent.policy().clone();
        let mut policy = saved.clone();
        policy.rules.extend(granted);
        agent.set_policy(policy);
        turn.policy = Some(saved);
    }
    let mut expanded = match crate::slash_body::prepare(agent, &command.name, &expanded).await {
        Ok(ready) => ready,
        Err(why) => {
            turn.end(agent);
            return Err(why);
        }
    };
    let said = agent
        .prompt_expanded(troupe_agent::Expansion {
            command: &command.name,
            args,
            source: command.scope.as_str(),
            prompt: &expanded.text,
        })
        .await;
    if let Some(refusal) = said.halt.or(said.block) {
        turn.end(agent);
        return Err(refusal);
    }
    for context in said.context {
        expanded.text.push_str("\n\n");
        expanded.text.push_str(&context);
    }
    if let Some(model) = &command.model {
        let saved = (agent.model_client(), agent.config().model.clone());
        // The same client: the model's name goes with each request.
        let name = crate::commands::model::full_name(agent, model);
        agent.set_model(agent.model_client(), name);
        turn.model = Some(saved);
    }
    Ok((with_images(expanded), turn))
}
