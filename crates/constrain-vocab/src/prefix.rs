//! Removing the "dummy prefix" space that some tokenizers insert before the text.
//!
//! SentencePiece-style tokenizers often prepend `▁` (a `Prepend` normalizer, or a
//! `Metaspace` pre-tokenizer with `prepend_scheme` `always`/`first`), and some byte-level
//! ones set `add_prefix_space` on their `ByteLevel` pre-tokenizer. Either way the ids no
//! longer spell the input: `encode("a")` would spell `" a"`. Generated text continues a
//! prompt, so its ids must spell exactly the text; these edits switch that insertion off.
//! They work on the components' JSON form and report whether anything changed.

use serde_json::Value;

/// Drops `Prepend` normalizers (also inside a `Sequence`). Returns whether any was dropped.
pub(crate) fn strip_prepend_normalizers(normalizer: &mut Value) -> bool {
    if let Some(parts) = normalizer
        .get_mut("normalizers")
        .and_then(Value::as_array_mut)
    {
        let before = parts.len();
        parts.retain(|part| !is_type(part, "Prepend"));
        let mut changed = parts.len() != before;
        for part in parts.iter_mut() {
            changed |= strip_prepend_normalizers(part);
        }
        return changed;
    }
    if is_type(normalizer, "Prepend") {
        *normalizer = Value::Null;
        return true;
    }
    false
}

/// Turns off prefix-space insertion in `Metaspace` and `ByteLevel` pre-tokenizers (also
/// inside a `Sequence`). Returns whether anything changed.
pub(crate) fn disable_prefix_space(pre_tokenizer: &mut Value) -> bool {
    if let Some(parts) = pre_tokenizer
        .get_mut("pretokenizers")
        .and_then(Value::as_array_mut)
    {
        let mut changed = false;
        for part in parts.iter_mut() {
            changed |= disable_prefix_space(part);
        }
        return changed;
    }
    let Some(fields) = pre_tokenizer.as_object_mut() else {
        return false;
    };
    let kind = fields
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let is_metaspace = kind == "Metaspace";
    if !is_metaspace && kind != "ByteLevel" {
        return false;
    }
    let mut changed = false;
    if fields.get("add_prefix_space").and_then(Value::as_bool) == Some(true) {
        fields.insert("add_prefix_space".into(), Value::Bool(false));
        changed = true;
    }
    if is_metaspace && fields.get("prepend_scheme").and_then(Value::as_str) != Some("never") {
        fields.insert("prepend_scheme".into(), Value::String("never".into()));
        changed = true;
    }
    changed
}

fn is_type(component: &Value, name: &str) -> bool {
    component.get("type").and_then(Value::as_str) == Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prepend_is_dropped_from_sequences_and_alone() {
        let mut seq = json!({"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]});
        assert!(strip_prepend_normalizers(&mut seq));
        assert_eq!(seq["normalizers"].as_array().map(Vec::len), Some(1));
        assert!(!strip_prepend_normalizers(&mut seq));

        let mut alone = json!({"type": "Prepend", "prepend": "▁"});
        assert!(strip_prepend_normalizers(&mut alone));
        assert!(alone.is_null());

        let mut nfc = json!({"type": "NFC"});
        assert!(!strip_prepend_normalizers(&mut nfc));
    }

    #[test]
    fn prefix_space_is_switched_off() {
        let mut meta = json!({"type": "Metaspace", "replacement": "▁",
            "prepend_scheme": "always", "split": true});
        assert!(disable_prefix_space(&mut meta));
        assert_eq!(meta["prepend_scheme"], "never");
        assert!(!disable_prefix_space(&mut meta));

        let mut seq = json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split"},
            {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true}]});
        assert!(disable_prefix_space(&mut seq));
        assert_eq!(seq["pretokenizers"][1]["add_prefix_space"], false);

        let mut plain = json!({"type": "ByteLevel", "add_prefix_space": false});
        assert!(!disable_prefix_space(&mut plain));
    }
}
