//! A tool result's content in words: text as it is, other blocks as one
//! line each (the model cannot look at an image; the user learns it came).

use rmcp::model::CallToolResult;
use serde_json::Value;

/// The result's text, blocks joined by newlines; the structured content
/// as JSON when there is no other content.
pub(crate) fn result_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result
        .content
        .iter()
        .filter_map(|block| serde_json::to_value(block).ok())
        .map(|block| block_text(&block))
        .collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

fn block_text(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or("");
    match field("type") {
        "text" => field("text").to_string(),
        kind @ ("image" | "audio") => format!(
            "[{kind} content, {}, {} bytes of base64 not shown]",
            field("mimeType"),
            field("data").len()
        ),
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!("[binary resource {uri} not shown]"),
            }
        }
        "resource_link" => format!("[resource link {}]", field("uri")),
        other => format!("[{other} content not shown]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_kept_and_other_blocks_are_named() {
        let block =
            serde_json::json!({"type": "image", "mimeType": "image/png", "data": "aGVsbG8="});
        assert_eq!(
            block_text(&block),
            "[image content, image/png, 8 bytes of base64 not shown]"
        );
        let text = serde_json::json!({"type": "text", "text": "hi"});
        assert_eq!(block_text(&text), "hi");
        let resource = serde_json::json!({"type": "resource", "resource": {"uri": "file:///a", "text": "body"}});
        assert_eq!(block_text(&resource), "[resource file:///a]\nbody");
    }
}
