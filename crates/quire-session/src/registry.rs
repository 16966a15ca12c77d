use std::sync::Arc;

use quire_config::AgentConfig;
use quire_core::Extension;
use quire_core::extensions::ProtocolExtension;
use quire_tools::{Finisher, TestRunner, WorkspaceTools};
use quire_workspace::SessionCopy;

use crate::error::SessionError;

/// Extension names an agent config may list, in no particular order.
pub const KNOWN_EXTENSIONS: &[&str] = &["protocol", "workspace_tools", "tests", "finish"];

/// Builds the extensions an agent config lists, in its order.
pub fn build_extensions(
    config: &AgentConfig,
    copy: Arc<SessionCopy>,
    test_command: Option<String>,
) -> Result<Vec<Arc<dyn Extension>>, SessionError> {
    config
        .extensions
        .iter()
        .map(|name| -> Result<Arc<dyn Extension>, SessionError> {
            Ok(match name.as_str() {
                "protocol" => Arc::new(ProtocolExtension::new()),
                "workspace_tools" => Arc::new(WorkspaceTools::new(copy.clone())),
                "tests" => Arc::new(TestRunner::new(copy.clone(), test_command.clone())),
                "finish" => Arc::new(Finisher::new(copy.clone())),
                other => {
                    return Err(SessionError::UnknownExtension {
                        name: other.to_string(),
                        known: KNOWN_EXTENSIONS.join(", "),
                    });
                }
            })
        })
        .collect()
}
