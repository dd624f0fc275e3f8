//! read_file, write_file and edit_file.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{err, ok, Fixture};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

#[tokio::test]
async fn read_file_numbers_lines_like_cat_n_padded_to_the_widest_number() {
    let f = Fixture::new();
    f.write("a.txt", "first\nsecond\r\nthird");
    let text = ok(f.call("read_file", json!({"path": "a.txt"})).await);
    assert_eq!(text, "1\tfirst\n2\tsecond\n3\tthird\n");
}

#[tokio::test]
async fn read_file_windows_with_offset_and_limit_and_says_what_remains() {
    let f = Fixture::new();
    let content: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    f.write("ten.txt", &content);
    let text = ok(f
        .call(
            "read_file",
            json!({"path": "ten.txt", "offset": 3, "limit": 2}),
        )
        .await);
    assert!(text.starts_with("3\tline 3\n4\tline 4\n"), "{text}");
    assert!(!text.contains("line 5"));
    assert!(text.contains("6 more lines"), "{text}");
    assert!(text.contains("offset=5"), "{text}");
    // The last window has no note.
    let text = ok(f
        .call("read_file", json!({"path": "ten.txt", "offset": 9}))
        .await);
    assert_eq!(text, " 9\tline 9\n10\tline 10\n");
    let message = err(f
        .call("read_file", json!({"path": "ten.txt", "offset": 11}))
        .await);
    assert!(message.contains("10 lines"), "{message}");
}

#[tokio::test]
async fn read_file_defaults_to_2000_lines() {
    let f = Fixture::new();
    let content: String = (1..=2500).map(|i| format!("{i}\n")).collect();
    f.write("big.txt", &content);
    let text = ok(f.call("read_file", json!({"path": "big.txt"})).await);
    assert!(
        text.contains("\n   1\t1\n") || text.starts_with("   1\t1\n"),
        "{text}"
    );
    assert!(text.contains("2000\t2000\n"));
    assert!(!text.contains("\t2001\n"));
    assert!(
        text.contains("500 more lines"),
        "{}",
        &text[text.len() - 200..]
    );
}

#[tokio::test]
async fn read_file_cuts_very_long_lines() {
    let f = Fixture::new();
    f.write("long.txt", "x".repeat(5000));
    let text = ok(f.call("read_file", json!({"path": "long.txt"})).await);
    assert!(text.len() < 2200, "{}", text.len());
    assert!(text.contains("2000 of 5000"), "{text}");
}

#[tokio::test]
async fn read_file_refuses_binary_files_directories_and_missing_files() {
    let f = Fixture::new();
    f.write("bin.dat", b"\x7fELF\x00\x01\x02");
    let message = err(f.call("read_file", json!({"path": "bin.dat"})).await);
    assert!(message.contains("binary"), "{message}");

    std::fs::create_dir(f.root().join("dir")).unwrap();
    let message = err(f.call("read_file", json!({"path": "dir"})).await);
    assert!(message.contains("directory"), "{message}");

    let message = err(f.call("read_file", json!({"path": "src/missing.rs"})).await);
    assert!(message.contains("not found"), "{message}");
    assert!(message.contains("glob"), "{message}");
    assert!(message.contains("missing.rs"), "{message}");

    f.write("empty.txt", "");
    let text = ok(f.call("read_file", json!({"path": "empty.txt"})).await);
    assert!(text.contains("empty"), "{text}");
}

#[tokio::test]
async fn malformed_input_is_an_error_naming_the_problem() {
    let f = Fixture::new();
    let message = err(f.call("read_file", json!({"path": 42})).await);
    assert!(
        message.contains("read_file") && message.contains("invalid type"),
        "{message}"
    );
    let message = err(f.call("read_file", json!({})).await);
    assert!(message.contains("missing field `path`"), "{message}");
    let message = err(f.call("write_file", json!({"path": "a"})).await);
    assert!(message.contains("missing field `content`"), "{message}");
    let message = err(f
        .call(
            "edit_file",
            json!({"path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"}),
        )
        .await);
    assert!(message.contains("invalid type"), "{message}");
    let message = err(f.call("bash", json!({"command": ["ls"]})).await);
    assert!(message.contains("invalid type"), "{message}");
    let message = err(f
        .call("grep", json!({"pattern": "x", "output_mode": "lines"}))
        .await);
    assert!(message.contains("unknown variant"), "{message}");
    let message = err(f.call("glob", json!("*.rs")).await);
    assert!(message.contains("glob"), "{message}");
}

#[tokio::test]
async fn write_file_creates_parents_and_reports_create_or_overwrite() {
    let f = Fixture::new();
    let text = ok(f
        .call(
            "write_file",
            json!({"path": "deep/er/new.txt", "content": "héllo"}),
        )
        .await);
    assert!(text.contains("Created deep/er/new.txt"), "{text}");
    assert!(text.contains("6 bytes"), "{text}");
    assert_eq!(f.read("deep/er/new.txt"), "héllo");

    let text = ok(f
        .call(
            "write_file",
            json!({"path": "deep/er/new.txt", "content": "bye"}),
        )
        .await);
    assert!(text.contains("Overwrote"), "{text}");
    assert!(text.contains("3 bytes"), "{text}");
    assert_eq!(f.read("deep/er/new.txt"), "bye");
    // No temp files are left behind.
    let names: Vec<_> = std::fs::read_dir(f.root().join("deep/er"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["new.txt"]);
}

#[tokio::test]
async fn write_file_keeps_permissions_and_refuses_directories() {
    let f = Fixture::new();
    f.write("run.sh", "#!/bin/sh\n");
    let path = f.root().join("run.sh");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    ok(f.call(
        "write_file",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho\n"}),
    )
    .await);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);

    std::fs::create_dir(f.root().join("dir")).unwrap();
    let message = err(f
        .call("write_file", json!({"path": "dir", "content": "x"}))
        .await);
    assert!(message.contains("directory"), "{message}");
}

#[tokio::test]
async fn edit_file_replaces_exactly_one_occurrence() {
    let f = Fixture::new();
    f.write("a.rs", "fn a() {}\nfn b() {}\n");
    let text = ok(f
        .call(
            "edit_file",
            json!({"path": "a.rs", "old_string": "fn b", "new_string": "fn c"}),
        )
        .await);
    assert!(text.contains("replaced 1 occurrence"), "{text}");
    assert!(text.contains("line 2"), "{text}");
    assert_eq!(f.read("a.rs"), "fn a() {}\nfn c() {}\n");
}

#[tokio::test]
async fn edit_file_errors_on_no_match_many_matches_and_no_change() {
    let f = Fixture::new();
    f.write("a.txt", "x = 1\nx = 1\n");
    let message = err(f
        .call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "y = 1", "new_string": "y = 2"}),
        )
        .await);
    assert!(message.contains("not found"), "{message}");
    assert!(message.contains("read_file"), "{message}");

    let message = err(f
        .call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2"}),
        )
        .await);
    assert!(message.contains("2 times"), "{message}");
    assert!(message.contains("replace_all"), "{message}");

    let message = err(f
        .call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "x", "new_string": "x"}),
        )
        .await);
    assert!(message.contains("identical"), "{message}");
    let message = err(f
        .call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "", "new_string": "x"}),
        )
        .await);
    assert!(message.contains("empty"), "{message}");
    let message = err(f
        .call(
            "edit_file",
            json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
        )
        .await);
    assert!(message.contains("does not exist"), "{message}");
    assert_eq!(f.read("a.txt"), "x = 1\nx = 1\n");
}

#[tokio::test]
async fn edit_file_replace_all_replaces_every_occurrence() {
    let f = Fixture::new();
    f.write("a.txt", "x = 1\ny\nx = 1\n");
    let text = ok(f
        .call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2", "replace_all": true}),
        )
        .await);
    assert!(text.contains("replaced 2 occurrences"), "{text}");
    assert_eq!(f.read("a.txt"), "x = 2\ny\nx = 2\n");
}

#[tokio::test]
async fn edit_file_hints_at_crlf_and_refuses_non_utf8() {
    let f = Fixture::new();
    f.write("win.txt", "a\r\nb\r\n");
    let message = err(f
        .call(
            "edit_file",
            json!({"path": "win.txt", "old_string": "a\nb", "new_string": "c"}),
        )
        .await);
    assert!(message.contains("CRLF"), "{message}");
    f.write("latin1.txt", b"caf\xe9");
    let message = err(f
        .call(
            "edit_file",
            json!({"path": "latin1.txt", "old_string": "caf", "new_string": "bar"}),
        )
        .await);
    assert!(message.contains("UTF-8"), "{message}");
}

/// A 1×1 PNG.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\0\x05\0\x01\xff\x89\x99=\x1d\0\0\0\0IEND\xaeB`\x82";

#[tokio::test]
async fn read_file_returns_an_image_block_for_png_jpeg_gif_and_webp() {
    use base64::Engine;
    let f = Fixture::new();
    let webp = b"RIFF\x1a\0\0\0WEBPVP8L\x0d\0\0\0\x2f\0\0\0\x10\x07\x10\x11\x11\x88\x88\xfe\x07\0";
    let jpeg = [
        0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, b'J', b'F', b'I', b'F', 0, 0xFF, 0xD9,
    ];
    let gif = b"GIF89a\x01\0\x01\0\0\0\0;";
    let files: [(&str, &[u8], &str); 4] = [
        ("shot.png", PNG, "image/png"),
        ("photo.jpg", &jpeg, "image/jpeg"),
        ("anim.gif", gif, "image/gif"),
        // The kind comes from the bytes, not the name.
        ("misnamed.bin", webp, "image/webp"),
    ];
    for (name, bytes, media_type) in files {
        f.write(name, bytes);
        let output = f.call("read_file", json!({"path": name})).await;
        assert!(!output.is_error, "{name}: {}", output.content);
        assert!(
            output.content.contains(name) && output.content.contains(media_type),
            "{}",
            output.content
        );
        assert_eq!(output.images.len(), 1, "{name}");
        assert_eq!(output.images[0].media_type, media_type);
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(&output.images[0].data)
            .unwrap();
        assert_eq!(decoded, bytes, "{name}");
    }
}

#[tokio::test]
async fn read_file_downscales_a_large_image_and_refuses_one_too_large_to_read() {
    use base64::Engine;
    let f = Fixture::new();
    let photo = image::RgbImage::from_fn(2400, 1200, |x, y| {
        image::Rgb([(x % 251) as u8, (y % 241) as u8, ((x ^ y) % 256) as u8])
    });
    let mut png = Vec::new();
    photo
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    f.write("wide.png", &png);
    let output = f.call("read_file", json!({"path": "wide.png"})).await;
    assert!(!output.is_error, "{}", output.content);
    assert!(
        output
            .content
            .contains("downscaled from 2400×1200 to 1568×784"),
        "{}",
        output.content
    );
    let sent = base64::engine::general_purpose::STANDARD
        .decode(&output.images[0].data)
        .unwrap();
    let sent = image::load_from_memory(&sent).unwrap();
    assert_eq!((sent.width(), sent.height()), (1568, 784));
    // Past what troupe reads to downscale: refused with what to do (a sparse file).
    f.write("huge.png", PNG);
    std::fs::OpenOptions::new()
        .write(true)
        .open(f.dir.path().join("huge.png"))
        .unwrap()
        .set_len(troupe_tools::image_fit::MAX_SOURCE_BYTES as u64 + 1)
        .unwrap();
    let output = f.call("read_file", json!({"path": "huge.png"})).await;
    assert!(output.is_error && output.images.is_empty());
    assert!(
        output.content.contains("huge.png is an image of 64.00 MB")
            && output.content.contains("smaller copy"),
        "{}",
        output.content
    );
}

#[tokio::test]
async fn read_file_refuses_other_binaries() {
    let f = Fixture::new();
    f.write("data.bin", b"\0\x01\x02 not an image");
    let message = err(f.call("read_file", json!({"path": "data.bin"})).await);
    assert!(message.contains("binary file"), "{message}");
}
