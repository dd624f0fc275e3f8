//! Bodies written once: splicing fields into an object, and one serialisation per tool set.

use super::*;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        input_schema: json!({"type": "object"}).into(),
    }
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("not JSON: {e}"))
}

#[test]
fn fields_are_spliced_in_after_the_head_in_order() {
    let head = json!({"model": "m", "text": "a \"quoted\" }"});
    let body = object_with(&head, &[("tools", b"[1,2]"), ("tool_choice", b"\"auto\"")])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        std::str::from_utf8(&body).unwrap_or_default(),
        r#"{"model":"m","text":"a \"quoted\" }","tools":[1,2],"tool_choice":"auto"}"#
    );
    // Into an empty object, and with nothing to splice.
    let empty = object_with(&json!({}), &[("tools", b"[]")]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parse(&empty), json!({"tools": []}));
    assert_eq!(
        parse(&object_with(&head, &[]).unwrap_or_else(|e| panic!("{e}"))),
        head
    );
    // Anything but an object is refused, not spliced into.
    assert!(object_with(&json!([1]), &[("tools", b"[]")]).is_err());
}

#[test]
fn a_shared_tool_set_is_serialised_once_and_another_set_on_its_own() {
    let cache = ToolsJson::default();
    let builds = AtomicUsize::new(0);
    let build = |tools: &[ToolSpec]| {
        builds.fetch_add(1, Ordering::SeqCst);
        serde_json::to_vec(&tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>())
    };
    let shared: Arc<[ToolSpec]> = vec![spec("bash"), spec("glob")].into();
    let other: Arc<[ToolSpec]> = vec![spec("bash")].into();
    for _ in 0..3 {
        let json = cache
            .get(&shared.clone(), build)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parse(&json), json!(["bash", "glob"]));
    }
    assert_eq!(builds.load(Ordering::SeqCst), 1);
    let json = cache.get(&other, build).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parse(&json), json!(["bash"]));
    assert_eq!(builds.load(Ordering::SeqCst), 2);
    // A set that was dropped is never mistaken for a new one at the same address.
    drop(other);
    let fresh: Arc<[ToolSpec]> = vec![spec("read")].into();
    let json = cache.get(&fresh, build).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parse(&json), json!(["read"]));
    // Many sets: the cache stays small and still answers for the newest.
    let sets: Vec<Arc<[ToolSpec]>> = (0..20)
        .map(|i| vec![spec(&format!("t{i}"))].into())
        .collect();
    for set in &sets {
        cache.get(set, build).unwrap_or_else(|e| panic!("{e}"));
    }
    let kept = cache.kept.lock().map(|k| k.len()).unwrap_or_default();
    assert!(kept <= KEPT_SETS, "{kept}");
    let before = builds.load(Ordering::SeqCst);
    cache
        .get(&sets[19], build)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(builds.load(Ordering::SeqCst), before);
}
