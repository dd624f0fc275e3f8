//! The questions that are the call itself, in the REPL: `ask_user_question`'s questions, one
//! menu each (its options, then "Other" to type an answer; a number, several for a
//! multi-select, or words typed on a line without a terminal), and `exit_plan_mode`'s plan with
//! Claude Code's three answers (auto-accept edits, approve edits by hand, keep planning).

use super::ReplApprover;
use crate::render::sanitize::terminal;
use crate::term::menu::{Choice, Menu};
use crossterm::style::{ContentStyle, Stylize};
use serde_json::{json, Map, Value};
use troupe_agent::session_tools::{questions_of, QuestionOption, UserQuestion};
use troupe_agent::{Approval, Question};

/// The answer a menu's "Other" choice sends before the words typed.
const OTHER: &str = "o";

impl ReplApprover {
    /// Prints `text` with `menu` (on a terminal) and waits for the answer; `None` when nobody
    /// is at the prompt.
    async fn answer_of(&self, text: String, menu: Menu) -> Option<String> {
        if self.printer.is_live() {
            self.printer.offer(&text, menu);
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.asks.send(super::Ask { text, reply }).ok()?;
        answer.await.ok()
    }

    fn bold(&self, text: &str) -> String {
        super::diff::paint(self.colour, ContentStyle::new().bold(), text)
    }

    /// `ask_user_question`: each question in turn; the answers go back in the input.
    pub(super) async fn ask_questions(&self, q: &Question<'_>) -> Approval {
        let questions = match questions_of(q.input) {
            Ok(questions) => questions,
            Err(e) => return Approval::Deny(e),
        };
        let live = self.printer.is_live();
        let mut answers = Map::new();
        for question in &questions {
            let text = self.question_text(question, live);
            let Some(reply) = self.answer_of(text, question_menu(question)).await else {
                return Approval::Deny("nobody is at the prompt to answer".to_string());
            };
            match chosen(&reply, question) {
                Some(answer) => answers.insert(question.question.clone(), answer.into()),
                None => return Approval::Deny("The user declined to answer the questions.".into()),
            };
        }
        let mut input = q.input.clone();
        if let Some(fields) = input.as_object_mut() {
            fields.insert("answers".to_string(), Value::Object(answers));
        }
        Approval::AllowWith(input)
    }

    fn question_text(&self, q: &UserQuestion, menu: bool) -> String {
        let mut lines = vec![self.bold(&format!(
            "[{}] {}",
            terminal(&q.header),
            terminal(&q.question)
        ))];
        // On a terminal the menu lists the options.
        for (i, option) in q.options.iter().enumerate().filter(|_| !menu) {
            lines.push(format!("  {}. {}", i + 1, labelled(option)));
        }
        if !menu || q.multi_select {
            let several = match q.multi_select {
                true => "numbers separated by commas for several",
                false => "its number",
            };
            lines.push(format!("  (type {several}, or an answer of your own)"));
        }
        lines.join("\n")
    }

    /// `exit_plan_mode`: the plan and what to do with it.
    pub(super) async fn approve_plan(&self, q: &Question<'_>) -> Approval {
        let plan = q.input.get("plan").and_then(Value::as_str).unwrap_or("");
        let mut text = vec![self.bold("Here is the agent's plan:")];
        text.extend(plan.trim().lines().map(|l| format!("  {}", terminal(l))));
        text.push(self.bold("Would you like to proceed?"));
        if !self.printer.is_live() {
            text.push("  [a]uto-accept edits / [m]anually approve edits / [N]o, keep planning (and say why)".into());
        }
        let Some(reply) = self.answer_of(text.join("\n"), plan_menu()).await else {
            return Approval::Deny("nobody is at the prompt to approve the plan".to_string());
        };
        let reply = reply.trim();
        let (head, rest) = reply.split_once(char::is_whitespace).unwrap_or((reply, ""));
        let mode = match head.to_ascii_lowercase().as_str() {
            "1" | "a" | "auto" | "y" | "yes" => "acceptEdits",
            "2" | "m" | "manual" => "default",
            _ => {
                let feedback = rest.trim();
                return Approval::Deny(match feedback.is_empty() {
                    true => "The user wants to keep planning: the plan was not approved. \
                             Stay in plan mode and ask what to change."
                        .to_string(),
                    false => format!(
                        "The user wants to keep planning: the plan was not approved. \
                         Their feedback: {feedback}"
                    ),
                });
            }
        };
        self.printer.line(&format!("⏵ permission mode {mode}"));
        let mut input = q.input.clone();
        if let Some(fields) = input.as_object_mut() {
            fields.insert("mode".to_string(), json!(mode));
        }
        Approval::AllowWith(input)
    }
}

/// A question's menu: its options, then "Other" (Esc takes it with nothing typed: declined).
fn question_menu(q: &UserQuestion) -> Menu {
    let mut choices: Vec<Choice> = q
        .options
        .iter()
        .enumerate()
        .map(|(i, option)| Choice {
            label: labelled(option),
            answer: (i + 1).to_string(),
            tell: false,
        })
        .collect();
    choices.push(Choice {
        label: "Other".to_string(),
        answer: OTHER.to_string(),
        tell: true,
    });
    Menu {
        escape: choices.len() - 1,
        choices,
        tell_label: "— type your answer (Enter sends, Esc declines)".to_string(),
    }
}

/// An option as shown: its label, and what it means when it says.
fn labelled(option: &QuestionOption) -> String {
    match option.description.is_empty() {
        true => terminal(&option.label).into_owned(),
        false => format!(
            "{} — {}",
            terminal(&option.label),
            terminal(&option.description)
        ),
    }
}

/// The plan's menu, as Claude Code offers it.
fn plan_menu() -> Menu {
    let choice = |label: &str, answer: &str, tell| Choice {
        label: label.to_string(),
        answer: answer.to_string(),
        tell,
    };
    Menu {
        choices: vec![
            choice("Yes, and auto-accept edits", "a", false),
            choice("Yes, and manually approve edits", "m", false),
            choice("No, keep planning", "n", true),
        ],
        escape: 2,
        tell_label: "— what should change? (Enter sends, Esc says nothing)".to_string(),
    }
}

/// The answer in `reply` to `q`: option numbers (several for a multi-select) as their labels,
/// "Other" and the words typed, or the words themselves; `None` when declined.
fn chosen(reply: &str, q: &UserQuestion) -> Option<String> {
    let reply = reply.trim();
    if reply.is_empty() || reply == OTHER {
        return None;
    }
    if let Some(words) = reply.strip_prefix(&format!("{OTHER}\n")) {
        let words = words.trim();
        return (!words.is_empty()).then(|| words.to_string());
    }
    let picks: Option<Vec<&str>> = reply
        .split([',', ' '])
        .filter(|t| !t.is_empty())
        .map(|t| {
            let n: usize = t.parse().ok()?;
            q.options.get(n.checked_sub(1)?).map(|o| o.label.as_str())
        })
        .collect();
    match picks {
        Some(picks) if !picks.is_empty() && (q.multi_select || picks.len() == 1) => {
            Some(picks.join(", "))
        }
        _ => Some(reply.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(multi: bool) -> UserQuestion {
        serde_json::from_value(json!({
            "question": "Which?", "header": "Pick", "multiSelect": multi,
            "options": [{"label": "Red", "description": ""}, {"label": "Blue", "description": ""}]
        }))
        .unwrap()
    }

    #[test]
    fn numbers_other_and_words_answer() {
        let one = question(false);
        assert_eq!(chosen("2", &one).as_deref(), Some("Blue"));
        assert_eq!(chosen("o\nGreen", &one).as_deref(), Some("Green"));
        assert_eq!(
            chosen("green please", &one).as_deref(),
            Some("green please")
        );
        assert_eq!(chosen("1,2", &one).as_deref(), Some("1,2"));
        assert_eq!(chosen("o", &one), None);
        assert_eq!(chosen("", &one), None);
        assert_eq!(
            chosen("1, 2", &question(true)).as_deref(),
            Some("Red, Blue")
        );
        let menu = question_menu(&one);
        assert_eq!(menu.choices.len(), 3);
        assert_eq!(menu.escape, 2);
    }
}
