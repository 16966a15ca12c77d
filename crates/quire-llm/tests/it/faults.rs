use std::time::{Duration, Instant};

use quire_llm::{LlmError, Provider, build_client};
use quire_testkit::{Fault, Reply, Script, ScriptedServer};
use quire_types::{Message, ModelRequest};

use crate::common::{KEY, KEY_ENV, MODES, mode, settings};

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![Message::system("sys"), Message::user("hi")],
        ..Default::default()
    }
}

fn fault(f: Fault) -> Reply {
    Reply::Fault(f)
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_succeeds() {
    for (provider, stream) in [(Provider::OpenAi, false), (Provider::Anthropic, true)] {
        let m = mode(provider, stream);
        let server = ScriptedServer::start(Script::sequence(vec![
            fault(Fault::RateLimited {
                retry_after_secs: 1,
            }),
            Reply::text("ok"),
        ]))
        .await;
        let mut s = settings(provider, stream, &server);
        // Cap for hints is 4 × 1 s, so the 1 s hint is used as given.
        s.retry_max_delay = Duration::from_secs(1);
        let client = build_client(s).unwrap();
        let started = Instant::now();
        let response = client.complete(&request()).await.unwrap();
        let elapsed = started.elapsed();
        assert_eq!(response.content, "ok", "{m}");
        assert_eq!(server.requests().len(), 2, "{m}");
        assert!(
            elapsed >= Duration::from_millis(950),
            "{m}: retried after {elapsed:?}"
        );
        assert!(elapsed < Duration::from_secs(3), "{m}: {elapsed:?}");
        server.assert_clean();
    }
}

#[tokio::test]
async fn retry_after_hint_is_capped() {
    let server = ScriptedServer::start(Script::sequence(vec![
        fault(Fault::RateLimited {
            retry_after_secs: 60,
        }),
        Reply::text("ok"),
    ]))
    .await;
    // retry_max_delay 50 ms: a 60 s hint is cut to 200 ms.
    let client = build_client(settings(Provider::OpenAi, true, &server)).unwrap();
    let started = Instant::now();
    client.complete(&request()).await.unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(180) && elapsed < Duration::from_secs(2),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn server_error_then_success() {
    for (provider, stream) in MODES {
        let m = mode(provider, stream);
        let server = ScriptedServer::start(Script::sequence(vec![
            fault(Fault::ServerError),
            Reply::text("ok"),
        ]))
        .await;
        let client = build_client(settings(provider, stream, &server)).unwrap();
        assert_eq!(
            client.complete(&request()).await.unwrap().content,
            "ok",
            "{m}"
        );
        assert_eq!(server.requests().len(), 2, "{m}");
    }
}

#[tokio::test]
async fn exhausted_retries_report_attempts() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let limited = ScriptedServer::start(Script::from_fn(|_, _| {
            Reply::Fault(Fault::RateLimited {
                retry_after_secs: 0,
            })
        }))
        .await;
        let err = build_client(settings(provider, false, &limited))
            .unwrap()
            .complete(&request())
            .await
            .unwrap_err();
        assert!(
            matches!(err, LlmError::RateLimited { attempts: 3 }),
            "{provider}: {err:?}"
        );
        assert_eq!(limited.requests().len(), 3);
        assert!(err.to_string().contains("3 attempt"), "{err}");

        let failing =
            ScriptedServer::start(Script::from_fn(|_, _| Reply::Fault(Fault::ServerError))).await;
        let err = build_client(settings(provider, true, &failing))
            .unwrap()
            .complete(&request())
            .await
            .unwrap_err();
        match &err {
            LlmError::Server {
                status: 500,
                attempts: 3,
                detail,
            } => {
                assert!(detail.contains("scripted"), "{detail}")
            }
            other => panic!("{provider}: {other:?}"),
        }
        assert_eq!(failing.requests().len(), 3);
    }
}

#[tokio::test]
async fn unauthorized_names_the_variable_but_never_the_key() {
    for (provider, stream) in MODES {
        let m = mode(provider, stream);
        let server = ScriptedServer::start(Script::sequence(vec![Reply::text("unused")]))
            .await
            .with_api_key("sk-the-right-key-000000000000");
        let client = build_client(settings(provider, stream, &server)).unwrap();
        let err = client.complete(&request()).await.unwrap_err();
        assert!(
            matches!(&err, LlmError::Unauthorized { status: 401, env_var } if env_var == KEY_ENV),
            "{m}: {err:?}"
        );
        let text = format!("{err} {err:?}");
        assert!(text.contains(&format!("${KEY_ENV}")), "{m}: {text}");
        assert!(!text.contains(KEY), "{m}: {text}");
        assert!(!text.contains("0123456789abcdef"), "{m}: {text}");
        assert_eq!(server.requests().len(), 1, "{m}: 401 must not be retried");
    }
}

#[tokio::test]
async fn not_found_is_model_not_found() {
    let bodies = [
        (
            Provider::OpenAi,
            r#"{"error":{"message":"The model `configured-model` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
        ),
        (
            Provider::Anthropic,
            r#"{"type":"error","error":{"type":"not_found_error","message":"model: configured-model"}}"#,
        ),
    ];
    for (provider, body) in bodies {
        let server = ScriptedServer::start(Script::sequence(vec![fault(Fault::Status(
            404,
            body.into(),
        ))]))
        .await;
        let err = build_client(settings(provider, true, &server))
            .unwrap()
            .complete(&request())
            .await
            .unwrap_err();
        match &err {
            LlmError::ModelNotFound { model, detail } => {
                assert_eq!(model, "configured-model");
                assert!(detail.contains("configured-model"), "{detail}");
            }
            other => panic!("{provider}: {other:?}"),
        }
        assert!(!err.is_retryable());
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn context_overflow_is_recognised() {
    let bodies = [
        (
            Provider::OpenAi,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ),
        (
            Provider::Anthropic,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        ),
    ];
    for (provider, body) in bodies {
        let server = ScriptedServer::start(Script::sequence(vec![fault(Fault::Status(
            400,
            body.into(),
        ))]))
        .await;
        let err = build_client(settings(provider, false, &server))
            .unwrap()
            .complete(&request())
            .await
            .unwrap_err();
        assert!(
            matches!(err, LlmError::ContextLengthExceeded { .. }),
            "{provider}: {err:?}"
        );
        assert!(err.to_string().contains("context window"), "{err}");
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn other_400_is_bad_request_with_truncated_detail() {
    let long = format!(
        r#"{{"error":{{"message":"invalid tools: {}"}}}}"#,
        "x".repeat(2000)
    );
    let server =
        ScriptedServer::start(Script::sequence(vec![fault(Fault::Status(400, long))])).await;
    let err = build_client(settings(Provider::OpenAi, false, &server))
        .unwrap()
        .complete(&request())
        .await
        .unwrap_err();
    match err {
        LlmError::BadRequest {
            status: 400,
            detail,
        } => {
            assert!(detail.starts_with("invalid tools:"), "{detail}");
            assert!(detail.chars().count() <= 301, "{}", detail.len());
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn malformed_json_is_malformed_and_not_retried() {
    for (provider, stream) in MODES {
        let m = mode(provider, stream);
        let server = ScriptedServer::start(Script::sequence(vec![
            fault(Fault::MalformedJson),
            Reply::text("unused"),
        ]))
        .await;
        let err = build_client(settings(provider, stream, &server))
            .unwrap()
            .complete(&request())
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Malformed { .. }), "{m}: {err:?}");
        assert_eq!(server.requests().len(), 1, "{m}");
    }
}

#[tokio::test]
async fn cut_stream_is_retried() {
    for (provider, stream) in MODES {
        let m = mode(provider, stream);
        let server = ScriptedServer::start(Script::sequence(vec![
            fault(Fault::CutStream),
            Reply::text("complete"),
        ]))
        .await;
        let client = build_client(settings(provider, stream, &server)).unwrap();
        let response = client.complete(&request()).await.unwrap();
        assert_eq!(response.content, "complete", "{m}");
        assert_eq!(server.requests().len(), 2, "{m}");
    }
}

#[tokio::test]
async fn cut_stream_every_time_gives_connection_error() {
    for (provider, stream) in [(Provider::OpenAi, true), (Provider::Anthropic, true)] {
        let server =
            ScriptedServer::start(Script::from_fn(|_, _| Reply::Fault(Fault::CutStream))).await;
        let err = build_client(settings(provider, stream, &server))
            .unwrap()
            .complete(&request())
            .await
            .unwrap_err();
        assert!(
            matches!(err, LlmError::Connection { attempts: 3, .. }),
            "{provider}: {err:?}"
        );
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test]
async fn delay_past_timeout_is_timeout() {
    for (provider, stream) in MODES {
        let m = mode(provider, stream);
        let server = ScriptedServer::start(Script::sequence(vec![fault(Fault::Delay(
            Duration::from_secs(3),
            Box::new(Reply::text("late")),
        ))]))
        .await;
        let mut s = settings(provider, stream, &server);
        s.request_timeout = Duration::from_millis(300);
        s.max_attempts = 1;
        let started = Instant::now();
        let err = build_client(s)
            .unwrap()
            .complete(&request())
            .await
            .unwrap_err();
        let elapsed = started.elapsed();
        assert!(
            matches!(err, LlmError::Timeout { after, attempts: 1 } if after == Duration::from_millis(300)),
            "{m}: {err:?}"
        );
        assert!(elapsed < Duration::from_millis(1500), "{m}: {elapsed:?}");
    }
}

#[tokio::test]
async fn timeout_is_retried() {
    let server = ScriptedServer::start(Script::sequence(vec![
        fault(Fault::Delay(
            Duration::from_secs(3),
            Box::new(Reply::text("late")),
        )),
        Reply::text("on time"),
    ]))
    .await;
    let mut s = settings(Provider::Anthropic, false, &server);
    s.request_timeout = Duration::from_millis(300);
    let response = build_client(s).unwrap().complete(&request()).await.unwrap();
    assert_eq!(response.content, "on time");
}

#[tokio::test]
async fn drip_past_idle_timeout_is_timeout() {
    for (provider, stream) in MODES {
        let m = mode(provider, stream);
        let server = ScriptedServer::start(Script::sequence(vec![fault(Fault::DripStream(
            Duration::from_millis(600),
        ))]))
        .await;
        let mut s = settings(provider, stream, &server);
        s.request_timeout = Duration::from_millis(200);
        s.max_attempts = 1;
        let started = Instant::now();
        let err = build_client(s)
            .unwrap()
            .complete(&request())
            .await
            .unwrap_err();
        let elapsed = started.elapsed();
        assert!(matches!(err, LlmError::Timeout { .. }), "{m}: {err:?}");
        assert!(elapsed < Duration::from_millis(1000), "{m}: {elapsed:?}");
    }
}

/// Each chunk arrives within the idle timeout, but the whole stream would
/// take ~2 s: the overall limit (800 ms) ends it.
#[tokio::test]
async fn slow_drip_hits_the_overall_cap() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let server = ScriptedServer::start(Script::sequence(vec![fault(Fault::DripStream(
            Duration::from_millis(120),
        ))]))
        .await;
        let mut s = settings(provider, true, &server);
        s.idle_timeout = Duration::from_millis(200);
        s.request_timeout = Duration::from_millis(800);
        s.max_attempts = 1;
        let started = Instant::now();
        let err = build_client(s)
            .unwrap()
            .complete(&request())
            .await
            .unwrap_err();
        let elapsed = started.elapsed();
        assert!(
            matches!(err, LlmError::Timeout { after, .. } if after == Duration::from_millis(800)),
            "{provider}: {err:?}"
        );
        assert!(
            elapsed >= Duration::from_millis(750) && elapsed < Duration::from_millis(1500),
            "{elapsed:?}"
        );
    }
}

#[tokio::test]
async fn fast_drip_completes() {
    let server = ScriptedServer::start(Script::sequence(vec![fault(Fault::DripStream(
        Duration::from_millis(5),
    ))]))
    .await;
    let response = build_client(settings(Provider::Anthropic, true, &server))
        .unwrap()
        .complete(&request())
        .await
        .unwrap();
    assert_eq!(response.content, quire_testkit::FAULT_STREAM_TEXT);
}

#[tokio::test]
async fn connection_refused_is_connection_error() {
    // Bind then drop to get a port with nothing listening.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut s = quire_llm::ClientSettings::new(
        Provider::OpenAi,
        "m",
        format!("http://127.0.0.1:{port}/v1"),
    );
    s.max_attempts = 2;
    s.retry_base_delay = Duration::from_millis(5);
    s.retry_max_delay = Duration::from_millis(10);
    let err = build_client(s)
        .unwrap()
        .complete(&request())
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::Connection { attempts: 2, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("connect"), "{err}");
}

/// Defaults that suit slow and reasoning models: stream, wait up to 300 s
/// for a token (the first one too), and give a whole answer 30 minutes.
#[test]
fn defaults_wait_for_slow_models() {
    let s = quire_llm::ClientSettings::new(Provider::OpenAi, "m", "http://127.0.0.1:1/v1");
    assert!(s.stream);
    assert_eq!(s.idle_timeout, Duration::from_secs(300));
    assert_eq!(s.request_timeout, Duration::from_secs(1800));
}

fn observed() -> (
    std::sync::Arc<std::sync::Mutex<Vec<quire_llm::RetryNotice>>>,
    impl Fn(&quire_llm::RetryNotice) + Send + Sync,
) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    (seen, move |n: &quire_llm::RetryNotice| {
        sink.lock().unwrap().push(n.clone())
    })
}

/// A model that thinks before its first token, within the idle limit, is
/// waited for: one request, no retry, the answer kept.
#[tokio::test]
async fn a_slow_first_token_within_the_idle_limit_is_not_retried() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let server = ScriptedServer::start(Script::sequence(vec![fault(Fault::SlowFirstToken(
            Duration::from_millis(900),
            Box::new(Reply::text("thought it through")),
        ))]))
        .await;
        let mut s = settings(provider, true, &server);
        s.idle_timeout = Duration::from_millis(1500);
        s.request_timeout = Duration::from_secs(5);
        let (seen, observe) = observed();
        let started = Instant::now();
        let response = build_client(s)
            .unwrap()
            .complete_observed(&request(), &observe)
            .await
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(900));
        assert_eq!(response.content, "thought it through", "{provider}");
        assert!(seen.lock().unwrap().is_empty(), "{provider}: no retry");
        assert_eq!(server.requests().len(), 1, "{provider}");
        // Past the idle limit, the same silence is a stall.
        let server = ScriptedServer::start(Script::sequence(vec![fault(Fault::SlowFirstToken(
            Duration::from_millis(900),
            Box::new(Reply::text("too late")),
        ))]))
        .await;
        let mut s = settings(provider, true, &server);
        s.idle_timeout = Duration::from_millis(300);
        s.max_attempts = 1;
        let err = build_client(s)
            .unwrap()
            .complete(&request())
            .await
            .unwrap_err();
        assert!(
            matches!(err, LlmError::Timeout { after, .. } if after == Duration::from_millis(300)),
            "{provider}: {err:?}"
        );
    }
}

/// A stream that starts and then stalls is cut at the idle limit and sent
/// again; the retry is told with the limit and the tokens the stalled
/// attempt reported (Anthropic reports the prompt's at the start).
#[tokio::test]
async fn a_stalled_stream_is_retried_and_the_retry_is_told_with_its_tokens() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let server = ScriptedServer::start(Script::sequence(vec![
            fault(Fault::StallStream),
            Reply::text("second time lucky"),
        ]))
        .await;
        let mut s = settings(provider, true, &server);
        s.idle_timeout = Duration::from_millis(300);
        s.request_timeout = Duration::from_secs(5);
        let (seen, observe) = observed();
        let started = Instant::now();
        let response = build_client(s)
            .unwrap()
            .complete_observed(&request(), &observe)
            .await
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(3), "{provider}");
        assert_eq!(response.content, "second time lucky");
        assert_eq!(server.requests().len(), 2, "{provider}");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{provider}: {seen:?}");
        let notice = &seen[0];
        assert_eq!((notice.attempt, notice.max_attempts), (1, 3));
        assert_eq!(notice.timed_out_after, Some(Duration::from_millis(300)));
        assert!(notice.elapsed >= Duration::from_millis(300));
        if provider == Provider::Anthropic {
            assert!(notice.usage.prompt_tokens > 0, "{notice:?}");
        }
        assert!(!notice.reason.contains(KEY));
    }
}
