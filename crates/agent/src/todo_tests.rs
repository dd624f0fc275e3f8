use super::*;
use serde_json::json;

fn item(content: &str, status: TodoStatus) -> TodoItem {
    TodoItem {
        content: content.into(),
        status,
        active_form: format!("{content}ing"),
    }
}

fn ctx() -> ToolContext {
    let dir = std::env::temp_dir();
    ToolContext::new(
        Arc::new(troupe_tools::Workspace::new(&dir).unwrap()),
        "lead",
    )
}

#[tokio::test]
async fn a_write_replaces_the_list_and_answers_with_a_checklist() {
    let list = TodoList::default();
    let tool = TodoWrite { list: list.clone() };
    let out = tool
        .call(
            json!({"todos": [
                {"content": "Read", "status": "completed", "activeForm": "Reading"},
                {"content": "Fix", "status": "in_progress", "activeForm": "Fixing"},
                {"content": "Test", "status": "pending", "activeForm": "Testing"}
            ]}),
            &ctx(),
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("3 items, 2 open"), "{}", out.content);
    assert!(
        out.content.contains("☒ Read\n◐ Fixing\n☐ Test"),
        "{}",
        out.content
    );
    assert_eq!(list.items().len(), 3);
}

#[tokio::test]
async fn two_items_in_progress_or_an_empty_one_are_refused_and_nothing_is_saved() {
    let list = TodoList::default();
    let tool = TodoWrite { list: list.clone() };
    let two = json!({"todos": [
        {"content": "a", "status": "in_progress", "activeForm": "A"},
        {"content": "b", "status": "in_progress", "activeForm": "B"}
    ]});
    let out = tool.call(two, &ctx()).await;
    assert!(
        out.is_error && out.content.contains("exactly one"),
        "{}",
        out.content
    );
    let empty = json!({"todos": [{"content": " ", "status": "pending", "activeForm": ""}]});
    assert!(tool.call(empty, &ctx()).await.is_error);
    let bad = json!({"todos": [{"content": "a", "status": "started", "activeForm": ""}]});
    assert!(tool.call(bad, &ctx()).await.is_error);
    assert!(list.items().is_empty());
}

#[test]
fn a_stale_unfinished_list_earns_one_reminder_every_few_rounds() {
    let list = TodoList::default();
    list.lock().items = vec![item("Fix", TodoStatus::Pending)];
    let reminder = Reminder { list: list.clone() };
    let mut reminders = Vec::new();
    for _ in 0..(2 * (REMIND_AFTER_ROUNDS + 1)) {
        let batch = reminder.fetch_now().unwrap();
        reminders.extend(batch.items);
    }
    assert_eq!(reminders.len(), 2);
    assert_ne!(reminders[0].id, reminders[1].id);
    assert!(reminders[0].text.contains("☐ Fix"), "{}", reminders[0].text);
    // A finished list is never nagged about.
    list.lock().items = vec![item("Fix", TodoStatus::Completed)];
    for _ in 0..10 {
        assert!(reminder.fetch_now().unwrap().items.is_empty());
    }
}

#[test]
fn the_list_is_restored_from_the_last_write_in_a_conversation() {
    let write = |content: &str| ChatMessage {
        role: troupe_protocol::Role::Assistant,
        content: vec![ContentBlock::ToolUse {
            id: format!("t-{content}"),
            name: TOOL_NAME.into(),
            input: json!({"todos": [{"content": content, "status": "pending", "activeForm": ""}]}),
        }],
    };
    let list = TodoList::default();
    list.restore(&[write("first"), write("second")]);
    assert_eq!(list.items()[0].content, "second");
}
