//! Unit tests of the flags' reading and each wire's fields.

use super::*;

fn flags(thinking: Option<&str>, budget: Option<u32>, effort: Option<&str>) -> Reasoning {
    Reasoning::from_flags(thinking, budget, effort).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_sdk_flags_read_as_claude_code_reads_them() {
    assert!(flags(None, None, None).is_unset());
    assert_eq!(
        flags(Some("adaptive"), None, None).thinking,
        Thinking::Adaptive
    );
    assert_eq!(
        flags(Some("enabled"), None, None).thinking,
        Thinking::Adaptive
    );
    assert_eq!(flags(Some("disabled"), None, None).thinking, Thinking::Off);
    assert_eq!(flags(None, Some(0), None).thinking, Thinking::Off);
    assert_eq!(
        flags(None, Some(5000), None).thinking,
        Thinking::Budget(5000)
    );
    assert_eq!(flags(None, None, Some("HIGH")).effort, Some(Effort::High));
    let err = Reasoning::from_flags(Some("sometimes"), None, None).err();
    assert!(err.is_some_and(|e| e.contains("adaptive, enabled or disabled")));
    let err = Reasoning::from_flags(None, None, Some("extreme")).err();
    assert!(err.is_some_and(|e| e.contains("--effort") && e.contains("xhigh")));
}

#[test]
fn model_names_give_their_version() {
    for (name, version) in [
        ("claude-sonnet-4-5", Some((4, 5))),
        ("claude-sonnet-4-5-20250929", Some((4, 5))),
        ("claude-opus-4-20250514", Some((4, 0))),
        ("claude-3-7-sonnet-20250219", Some((3, 7))),
        ("claude-opus-4-6", Some((4, 6))),
        ("us.anthropic.claude-opus-4-6-v1:0", Some((4, 6))),
        ("claude-haiku-4-5@20251001", Some((4, 5))),
        ("claude-opus-5", Some((5, 0))),
        ("gpt-4o", None),
        ("claude-x", None),
    ] {
        assert_eq!(claude_version(name), version, "{name}");
    }
}

#[test]
fn older_models_get_a_budget_below_max_tokens() {
    let budget = flags(None, Some(5000), None).anthropic("claude-sonnet-4-5", 8192);
    assert_eq!(
        budget.thinking,
        Some(json!({"type": "enabled", "budget_tokens": 5000}))
    );
    assert_eq!(budget.max_tokens, 8192);
    assert_eq!(budget.output_config, None);
    // A budget at or above max_tokens raises max_tokens, keeping the answer's room.
    let big = flags(None, Some(20_000), None).anthropic("claude-sonnet-4-5", 8192);
    assert_eq!(big.max_tokens, 28_192);
    // The API's minimum budget.
    let small = flags(None, Some(10), None).anthropic("claude-sonnet-4-5", 8192);
    assert_eq!(
        small.thinking,
        Some(json!({"type": "enabled", "budget_tokens": MIN_THINKING_BUDGET}))
    );
    // Effort alone, or adaptive, becomes the effort's budget.
    let effort = flags(None, None, Some("low")).anthropic("claude-sonnet-4-5", 8192);
    assert_eq!(
        effort.thinking,
        Some(json!({"type": "enabled", "budget_tokens": 4000}))
    );
    let adaptive = flags(Some("adaptive"), None, None).anthropic("some-proxy-model", 4096);
    assert_eq!(
        adaptive.thinking,
        Some(json!({"type": "enabled", "budget_tokens": 16_000}))
    );
    assert_eq!(adaptive.max_tokens, 20_096);
}

#[test]
fn newer_models_think_adaptively_with_an_effort() {
    let r = flags(Some("adaptive"), None, Some("medium")).anthropic("claude-opus-4-6", 8192);
    assert_eq!(r.thinking, Some(json!({"type": "adaptive"})));
    assert_eq!(r.output_config, Some(json!({"effort": "medium"})));
    assert_eq!(r.max_tokens, 8192);
    // A budget is only on or off there.
    let r = flags(None, Some(40_000), None).anthropic("claude-sonnet-4-6", 8192);
    assert_eq!(r.thinking, Some(json!({"type": "adaptive"})));
    assert_eq!((r.output_config, r.max_tokens), (None, 8192));
    // xhigh is Opus 4.7's; before it, high.
    let r = flags(None, None, Some("xhigh")).anthropic("claude-sonnet-4-6", 8192);
    assert_eq!(r.output_config, Some(json!({"effort": "high"})));
    let r = flags(None, None, Some("xhigh")).anthropic("claude-opus-4-7", 8192);
    assert_eq!(r.output_config, Some(json!({"effort": "xhigh"})));
    // Thinking off keeps the effort, which also governs the answer.
    let r = flags(Some("disabled"), None, Some("low")).anthropic("claude-opus-4-6", 8192);
    assert_eq!(r.thinking, None);
    assert_eq!(r.output_config, Some(json!({"effort": "low"})));
}

#[test]
fn nothing_asked_sends_nothing() {
    for model in ["claude-sonnet-4-5", "claude-opus-4-6"] {
        let r = Reasoning::default().anthropic(model, 8192);
        assert_eq!(
            (r.thinking, r.output_config, r.max_tokens),
            (None, None, 8192)
        );
        let off = flags(Some("disabled"), None, None).anthropic(model, 8192);
        assert_eq!((off.thinking, off.output_config), (None, None));
    }
    assert_eq!(Reasoning::default().openai_effort(), None);
    assert_eq!(flags(Some("adaptive"), None, None).openai_effort(), None);
}

#[test]
fn openai_servers_get_a_reasoning_effort() {
    assert_eq!(flags(None, None, Some("low")).openai_effort(), Some("low"));
    assert_eq!(flags(None, None, Some("max")).openai_effort(), Some("high"));
    assert_eq!(flags(None, Some(2000), None).openai_effort(), Some("low"));
    assert_eq!(
        flags(None, Some(8000), None).openai_effort(),
        Some("medium")
    );
    assert_eq!(
        flags(None, Some(30_000), None).openai_effort(),
        Some("high")
    );
    assert_eq!(
        flags(Some("disabled"), None, Some("high")).openai_effort(),
        None
    );
}
