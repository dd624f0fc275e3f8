use super::*;
use crate::ToolSpec;
use troupe_protocol::{ChatMessage, ContentBlock};

fn request(system: String, marks: Option<CacheMarks>, messages: Vec<ChatMessage>) -> ModelRequest {
    ModelRequest {
        model: "claude-sonnet-4-5".into(),
        system: system.into(),
        messages,
        tools: Vec::<ToolSpec>::new().into(),
        max_tokens: 10,
        agent: "lead".into(),
        cache: marks,
    }
}

fn assistant(text: &str) -> ChatMessage {
    ChatMessage {
        role: Role::Assistant,
        content: vec![ContentBlock::text(text)],
    }
}

#[test]
fn the_system_prompt_is_cut_at_the_marks() {
    let marks = CacheMarks {
        shared_end: 3,
        stable_end: 5,
    };
    assert_eq!(
        system_pieces("abcdefg", &marks),
        vec![(0, 3), (3, 5), (5, 7)]
    );
    // Marks at the end or repeated cut nothing more.
    let whole = CacheMarks {
        shared_end: 7,
        stable_end: 7,
    };
    assert_eq!(system_pieces("abcdefg", &whole), vec![(0, 7)]);
}

#[test]
fn breakpoints_go_on_long_enough_prefixes_only() {
    // 8,000 bytes shared (2,000 tokens), 100 bytes of identity, a short date.
    let system = format!("{}{}{}", "s".repeat(8_000), "i".repeat(100), "date");
    let marks = CacheMarks {
        shared_end: 8_000,
        stable_end: 8_100,
    };
    let messages = vec![
        ChatMessage::user_text("first"),
        assistant("answer"),
        ChatMessage::user_text("second"),
    ];
    let plan = plan(&request(system.clone(), Some(marks), messages.clone()), 0);
    assert_eq!(plan.system, vec![0, 1]);
    // The newest message and the one the previous round ended with.
    assert_eq!(plan.messages, vec![0, 2]);

    // A short prompt caches nothing.
    let short = plan_of("tiny".into(), marks, messages.clone());
    assert_eq!(short, Breakpoints::default());

    // No marks: a one-off request, never cached.
    assert_eq!(
        super::plan(&request(system, None, messages), 0),
        Breakpoints::default()
    );
}

fn plan_of(system: String, marks: CacheMarks, messages: Vec<ChatMessage>) -> Breakpoints {
    plan(&request(system, Some(marks), messages), 0)
}

#[test]
fn never_more_than_four_and_haiku_needs_more() {
    let system = "s".repeat(5_000);
    let marks = CacheMarks {
        shared_end: 4_500,
        stable_end: 4_800,
    };
    let messages = vec![
        ChatMessage::user_text("a"),
        assistant("b"),
        ChatMessage::user_text("c"),
    ];
    let plan = plan_of(system.clone(), marks, messages.clone());
    assert_eq!(plan.system.len() + plan.messages.len(), 4);
    let mut haiku = request(system, Some(marks), messages);
    haiku.model = "claude-haiku-4-5".into();
    // 1,250 tokens: enough for Sonnet, not for Haiku's 2,048.
    assert_eq!(super::plan(&haiku, 0), Breakpoints::default());
    assert_eq!(min_cacheable_tokens("claude-haiku-4-5"), 2_048);
}

#[test]
fn the_variable_turns_caching_off() {
    let env = |v: &'static str| move |k: &str| (k == DISABLE_VAR).then(|| v.to_string());
    assert!(!PromptCache::from_env(&env("1")).enabled);
    assert!(!PromptCache::from_env(&env("true")).enabled);
    assert!(PromptCache::from_env(&env("0")).enabled);
    assert!(PromptCache::from_env(&|_: &str| None).enabled);
    assert_eq!(CacheTtl::parse("1h"), Some(CacheTtl::OneHour));
    assert_eq!(CacheTtl::parse("2h"), None);
}
