use std::time::Duration;

use quire_llm::{ClientSettings, Provider};
use quire_testkit::ScriptedServer;

/// Shaped like a real key so the redactor's shape rules would catch it too.
pub const KEY: &str = "sk-test-0123456789abcdefghij";
pub const KEY_ENV: &str = "QUIRE_TEST_API_KEY";

/// Every protocol/transport combination.
pub const MODES: [(Provider, bool); 4] = [
    (Provider::OpenAi, false),
    (Provider::OpenAi, true),
    (Provider::Anthropic, false),
    (Provider::Anthropic, true),
];

pub fn base_url(provider: Provider, server: &ScriptedServer) -> String {
    match provider {
        Provider::OpenAi => server.openai_base_url(),
        Provider::Anthropic => server.anthropic_base_url(),
    }
}

/// Fast settings for tests: short backoff, a few attempts.
pub fn settings(provider: Provider, stream: bool, server: &ScriptedServer) -> ClientSettings {
    let mut s = ClientSettings::new(provider, "configured-model", base_url(provider, server));
    s.api_key_env = KEY_ENV.to_string();
    s.api_key = Some(KEY.to_string());
    s.stream = stream;
    s.request_timeout = Duration::from_secs(5);
    s.max_attempts = 3;
    s.retry_base_delay = Duration::from_millis(10);
    s.retry_max_delay = Duration::from_millis(50);
    s
}

pub fn mode(provider: Provider, stream: bool) -> String {
    format!(
        "{provider} {}",
        if stream { "stream" } else { "non-stream" }
    )
}
