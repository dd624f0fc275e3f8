//! The person's answer to a permission question: the menu offered on a terminal, and the
//! answer read back from what was chosen or typed (`y`, `a`, `r`, `n`, a menu number, or a
//! refusal followed by what to do instead).

use super::scope::Scope;
use crate::render::sanitize::terminal;
use crate::term::menu::{Choice, Menu};

/// What the person answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    Yes,
    No,
    Always,
    Remember,
}

impl Answer {
    /// The answer in `text`, and what to do instead when it refuses with more words
    /// (`n` and a newline or a blank, then the words). `always` says whether the question
    /// offered "always" (menu choice 2); without it, `2` is the refusal.
    pub(super) fn parse(text: &str, always: bool) -> (Answer, Option<String>) {
        let text = text.trim();
        let (head, rest) = match text.find(|c: char| c.is_whitespace() || c == ',' || c == ':') {
            Some(i) => (&text[..i], &text[i..]),
            None => (text, ""),
        };
        let answer = match head.to_ascii_lowercase().as_str() {
            "y" | "yes" | "1" => Answer::Yes,
            "a" | "always" => Answer::Always,
            "2" if always => Answer::Always,
            "r" | "remember" => Answer::Remember,
            _ => Answer::No,
        };
        let refusal = matches!(head.to_ascii_lowercase().as_str(), "n" | "no" | "2" | "3");
        let instead = rest.trim_start_matches([',', ':']).trim();
        let instead =
            (answer == Answer::No && refusal && !instead.is_empty()).then(|| instead.to_string());
        (answer, instead)
    }
}

/// The menu of a permission question: yes, "always" for `scope` when there is one, and no
/// with what to do instead.
pub(super) fn menu(scope: Option<&Scope>) -> Menu {
    let choice = |label: String, answer: &str, tell: bool| Choice {
        label,
        answer: answer.to_string(),
        tell,
    };
    let mut choices = vec![choice("Yes".into(), "y", false)];
    if let Some(scope) = scope {
        let label = format!(
            "Yes, and don't ask again this session for {}",
            terminal(&scope.label)
        );
        choices.push(choice(label, "a", false));
    }
    let no = "No, and tell the agent what to do differently".to_string();
    choices.push(choice(no, "n", true));
    Menu {
        escape: choices.len() - 1,
        choices,
        tell_label: "— what should the agent do instead? (Enter sends, Esc refuses without a word)"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_words_and_numbers_answer() {
        let p = |t: &str| Answer::parse(t, true);
        assert_eq!(p("y"), (Answer::Yes, None));
        assert_eq!(p(" YES "), (Answer::Yes, None));
        assert_eq!(p("1"), (Answer::Yes, None));
        assert_eq!(p("a"), (Answer::Always, None));
        assert_eq!(p("2"), (Answer::Always, None));
        assert_eq!(Answer::parse("2", false), (Answer::No, None));
        assert_eq!(p("r"), (Answer::Remember, None));
        assert_eq!(p(""), (Answer::No, None));
        assert_eq!(p("nope"), (Answer::No, None));
        assert_eq!(p("3"), (Answer::No, None));
    }

    #[test]
    fn a_refusal_carries_what_to_do_instead() {
        let p = |t: &str| Answer::parse(t, true);
        assert_eq!(
            p("n\nuse rg instead"),
            (Answer::No, Some("use rg instead".into()))
        );
        assert_eq!(p("no, use rg"), (Answer::No, Some("use rg".into())));
        assert_eq!(
            p("3: run the tests first"),
            (Answer::No, Some("run the tests first".into()))
        );
        assert_eq!(p("maybe later"), (Answer::No, None));
    }

    #[test]
    fn the_menu_shows_the_scope_and_refuses_on_esc() {
        let scope = Scope {
            rules: vec!["Bash(cargo test:*)".into()],
            label: "\"cargo test:*\"".into(),
        };
        let m = menu(Some(&scope));
        let labels: Vec<&str> = m.choices.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "Yes",
                "Yes, and don't ask again this session for \"cargo test:*\"",
                "No, and tell the agent what to do differently"
            ]
        );
        assert_eq!(m.escape, 2);
        assert_eq!(menu(None).choices.len(), 2);
    }
}
