//! Replays every seed and crash input under `fuzz/corpus/<target>/` through the fuzz
//! targets' own functions (`fuzz/src/targets.rs`, included by path), so that `cargo test`
//! on stable exercises the corpus that `scripts/fuzz.sh` grows and the crashes it found.
//! Seeds named `valid-*` are real payloads and must be accepted: proof that the targets
//! reach their parsers' deep paths and not only the first rejection.

#[path = "../../fuzz/src/targets.rs"]
mod targets;

use std::path::Path;

#[test]
fn every_corpus_file_is_ok_or_a_clean_error() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    for (name, target) in targets::TARGETS {
        let dir = corpus.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no corpus for target {name}");
        for file in &files {
            let data = std::fs::read(file).unwrap();
            let run = std::panic::catch_unwind(|| target(&data));
            let accepted = run.unwrap_or_else(|_| panic!("{name}: {} panicked", file.display()));
            let valid = file
                .file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with("valid-"));
            assert!(
                accepted || !valid,
                "{name}: {} was rejected",
                file.display()
            );
        }
        eprintln!("{name}: {} inputs", files.len());
    }
}
