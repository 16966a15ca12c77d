use quire_types::ModelRequest;

/// Counts a request's prompt tokens before it is sent.
///
/// Core only needs a number for the trajectory; the `context` extension
/// installs a BPE counter (and calibrates it) so core does not depend on a
/// tokenizer.
pub trait TokenEstimator: Send + Sync {
    /// Prompt tokens of `request` as counted locally (uncalibrated).
    fn estimate(&self, request: &ModelRequest) -> u64;

    /// The provider reported `reported` prompt tokens for a request this
    /// estimator counted as `estimated`; a calibrating estimator learns from it.
    fn observe(&self, _estimated: u64, _reported: u64) {}
}

/// Four characters a token: the fallback when no tokenizer is installed.
#[derive(Debug, Default, Clone, Copy)]
pub struct CharEstimator;

impl TokenEstimator for CharEstimator {
    fn estimate(&self, request: &ModelRequest) -> u64 {
        let chars: usize = request
            .messages
            .iter()
            .map(|m| m.text().len())
            .sum::<usize>()
            + request
                .tools
                .iter()
                .map(|t| t.description.len() + t.parameters.to_string().len())
                .sum::<usize>();
        (chars / 4) as u64
    }
}
