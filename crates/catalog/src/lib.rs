//! What a project defines for its agents, in the folders Claude Code users already keep them:
//! skills (`.troupe/skills/*/SKILL.md`, `.claude/skills/*/SKILL.md`, and the user's) offered
//! through a catalog in the system prompt and `load_skill`; agent definitions
//! (`.troupe/agents/*.md`, `.claude/agents/*.md`) and the `task` subagent tool that uses them.

pub mod agents;
pub mod frontmatter;
pub mod skills;
pub mod subagent;

pub use skills::{Skill, Skills, SkillsExtension, SkippedSkill};
