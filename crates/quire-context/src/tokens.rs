//! Local token accounting: o200k BPE counts, cached per text, calibrated
//! against what the provider reports.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, OnceLock};

use quire_core::TokenEstimator;
use quire_types::{Message, ModelRequest, ToolSpec};
use tiktoken_rs::CoreBPE;

/// Framing tokens per message (role, separators), as OpenAI documents it.
const PER_MESSAGE: u64 = 4;
/// Framing per tool call and per tool definition.
const PER_CALL: u64 = 4;
const PER_TOOL: u64 = 8;
/// Priming of the reply.
const PER_REQUEST: u64 = 3;
/// Past this many cached texts the cache starts over (a long session's
/// texts are mostly gone from the conversation by then).
const CACHE_LIMIT: usize = 20_000;
/// Weight of the newest provider figure in the calibration average.
const EMA_WEIGHT: f64 = 0.3;

/// The BPE vocabulary, parsed once per process (the data is embedded in the
/// binary). `None` if it could not be built: counts fall back to chars/4.
fn bpe() -> Option<&'static CoreBPE> {
    static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| match tiktoken_rs::o200k_base() {
        Ok(bpe) => Some(bpe),
        Err(err) => {
            tracing::warn!(%err, "o200k tokenizer unavailable; counting 4 characters a token");
            None
        }
    })
    .as_ref()
}

/// Counts prompt tokens locally before each request.
///
/// Counting a whole request with BPE each step would cost milliseconds on a
/// long session; texts rarely change once in the conversation, so counts are
/// cached by content hash and a step only tokenizes what is new. The
/// provider's tokenizer differs (and frames messages its own way), so a
/// running average of `reported / estimated` scales estimates into the
/// provider's units for the budget checks.
#[derive(Default)]
pub struct TokenCounter {
    cache: Mutex<HashMap<(u64, usize), u64>>,
    calibration: Mutex<Calibration>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Calibration {
    /// Provider tokens per local token; 0 until the first observation.
    factor: f64,
    samples: u32,
}

impl TokenCounter {
    pub fn new() -> TokenCounter {
        TokenCounter::default()
    }

    /// BPE tokens of a text.
    pub fn count_text(&self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        let mut hasher = DefaultHasher::new();
        text.hash(&mut hasher);
        let key = (hasher.finish(), text.len());
        if let Ok(cache) = self.cache.lock()
            && let Some(n) = cache.get(&key)
        {
            return *n;
        }
        let n = match bpe() {
            Some(bpe) => bpe.encode_ordinary(text).len() as u64,
            None => text.len().div_ceil(4) as u64,
        };
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(key, n);
        }
        n
    }

    /// One message as sent: its text, its tool calls, and the framing.
    pub fn count_message(&self, message: &Message) -> u64 {
        let mut n = PER_MESSAGE + self.count_text(message.text());
        if let Message::Assistant { tool_calls, .. } = message {
            for call in tool_calls {
                n += PER_CALL + self.count_text(&call.name) + self.count_text(&call.arguments);
            }
        }
        if let Message::Tool { name, .. } = message {
            n += self.count_text(name);
        }
        n
    }

    pub fn count_messages(&self, messages: &[Message]) -> u64 {
        messages.iter().map(|m| self.count_message(m)).sum()
    }

    fn count_tool(&self, tool: &ToolSpec) -> u64 {
        PER_TOOL
            + self.count_text(&tool.name)
            + self.count_text(&tool.description)
            + self.count_text(&tool.parameters.to_string())
    }

    /// A whole request, uncalibrated (what the trajectory records).
    pub fn count_request(&self, request: &ModelRequest) -> u64 {
        PER_REQUEST
            + self.count_messages(&request.messages)
            + request
                .tools
                .iter()
                .map(|t| self.count_tool(t))
                .sum::<u64>()
    }

    /// Provider tokens per local token, learnt from the usage reports (1.0
    /// until the first report).
    pub fn factor(&self) -> f64 {
        match self.calibration.lock() {
            Ok(c) if c.samples > 0 => c.factor,
            _ => 1.0,
        }
    }

    /// A local count in the provider's units.
    pub fn calibrated(&self, local: u64) -> u64 {
        (local as f64 * self.factor()).round() as u64
    }

    /// Learns from one request: the local count and the provider's figure.
    pub fn calibrate(&self, estimated: u64, reported: u64) {
        if estimated == 0 || reported == 0 {
            return;
        }
        // A provider whose tokenizer is wildly different, or a server that
        // reports nonsense, must not make compaction fire on every step or
        // never: clamp to a plausible range.
        let ratio = (reported as f64 / estimated as f64).clamp(0.25, 4.0);
        if let Ok(mut c) = self.calibration.lock() {
            c.factor = if c.samples == 0 {
                ratio
            } else {
                c.factor * (1.0 - EMA_WEIGHT) + ratio * EMA_WEIGHT
            };
            c.samples += 1;
            tracing::debug!(
                estimated,
                reported,
                factor = c.factor,
                "token count calibrated"
            );
        }
    }
}

impl TokenEstimator for TokenCounter {
    fn estimate(&self, request: &ModelRequest) -> u64 {
        self.count_request(request)
    }

    fn observe(&self, estimated: u64, reported: u64) {
        self.calibrate(estimated, reported);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quire_types::ToolCall;

    #[test]
    fn counts_with_bpe_not_characters() {
        let counter = TokenCounter::new();
        // "hello world" is two o200k tokens; chars/4 would say 3.
        assert_eq!(counter.count_text("hello world"), 2);
        assert_eq!(counter.count_text(""), 0);
        let long = "fn main() { println!(\"hi\"); }\n".repeat(100);
        let n = counter.count_text(&long);
        assert!(n > 500 && n < long.len() as u64 / 2, "{n}");
        // Cached: the same answer again.
        assert_eq!(counter.count_text(&long), n);
    }

    #[test]
    fn messages_count_calls_and_framing() {
        let counter = TokenCounter::new();
        let plain = Message::assistant("ok", vec![]);
        let with_call = Message::assistant(
            "ok",
            vec![ToolCall::new("c1", "read_file", r#"{"path":"src/a.py"}"#)],
        );
        assert!(counter.count_message(&with_call) > counter.count_message(&plain) + PER_CALL);
        assert_eq!(counter.count_message(&plain), PER_MESSAGE + 1);
    }

    #[test]
    fn calibration_is_an_average_of_reported_over_estimated() {
        let counter = TokenCounter::new();
        assert_eq!(counter.calibrated(1000), 1000);
        counter.calibrate(1000, 1500);
        assert_eq!(counter.calibrated(1000), 1500);
        counter.calibrate(1000, 1000);
        // 1.5 * 0.7 + 1.0 * 0.3
        assert_eq!(counter.calibrated(1000), 1350);
        counter.calibrate(10, 100_000);
        assert!(counter.factor() <= 4.0);
        counter.calibrate(0, 10);
    }

    #[test]
    fn counting_a_long_session_is_fast_once_cached() {
        let counter = TokenCounter::new();
        let messages: Vec<Message> = (0..60)
            .map(|i| {
                Message::tool(
                    format!("c{i}"),
                    "read_file",
                    format!("{i}| x = {i}\n").repeat(200),
                    false,
                )
            })
            .collect();
        let request = ModelRequest {
            messages,
            ..ModelRequest::default()
        };
        let first = counter.count_request(&request);
        let started = std::time::Instant::now();
        for _ in 0..10 {
            assert_eq!(counter.count_request(&request), first);
        }
        // Generous for debug builds; the release figure is in the bench.
        assert!(
            started.elapsed().as_millis() < 500,
            "{:?}",
            started.elapsed()
        );
    }
}
