//! Where an [`OpenAiProvider`](crate::OpenAiProvider)'s API key comes from,
//! and where it may go.

use memory_core::ProviderError;

/// The environment variable a provider reads its key from when none is
/// named; its key is sent only to the OpenAI API (see [`is_openai_api`]).
///
/// ```
/// assert_eq!(memory_openai::DEFAULT_API_KEY_ENV, "OPENAI_API_KEY");
/// ```
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// The host of the OpenAI API.
const OPENAI_API_HOST: &str = "api.openai.com";

/// Whether `base_url` is the OpenAI API: `https`, host `api.openai.com`.
/// Only then does the key of [`DEFAULT_API_KEY_ENV`] go with a request;
/// any other endpoint (a local server, a gateway, a third party, or the
/// OpenAI host over plain `http`) gets a key only from a variable named
/// with [`with_api_key_env`](crate::OpenAiProvider::with_api_key_env) or
/// given with [`with_api_key`](crate::OpenAiProvider::with_api_key).
///
/// ```
/// use memory_openai::is_openai_api;
/// assert!(is_openai_api("https://api.openai.com/v1"));
/// assert!(is_openai_api("https://API.OpenAI.com:443/v1/"));
/// assert!(!is_openai_api("http://api.openai.com/v1"));
/// assert!(!is_openai_api("https://api.openai.com.example.net/v1"));
/// assert!(!is_openai_api("https://gateway.example/api.openai.com/v1"));
/// assert!(!is_openai_api("http://127.0.0.1:8080/v1"));
/// assert!(!is_openai_api("not a url"));
/// ```
pub fn is_openai_api(base_url: &str) -> bool {
    reqwest::Url::parse(base_url)
        .is_ok_and(|url| url.scheme() == "https" && url.host_str() == Some(OPENAI_API_HOST))
}

/// Where the API key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ApiKey {
    /// [`DEFAULT_API_KEY_ENV`], for the OpenAI API only; no key when it is
    /// unset.
    Default,
    /// A named variable, for any endpoint; an error when it is unset.
    Env(String),
    /// Given.
    Given(String),
}

impl ApiKey {
    /// The key to send to `base_url` now, if any.
    ///
    /// # Errors
    ///
    /// [`ProviderError::Authentication`] naming the variable when a named
    /// variable is unset or empty.
    pub(crate) fn for_endpoint(&self, base_url: &str) -> Result<Option<String>, ProviderError> {
        match self {
            Self::Default if is_openai_api(base_url) => Ok(read(DEFAULT_API_KEY_ENV)),
            Self::Default => Ok(None),
            Self::Env(var) => read(var).map(Some).ok_or_else(|| {
                ProviderError::Authentication(format!(
                    "the environment variable {var}, named to hold the API key, is not set \
                     (or is empty); set it, or name the variable that holds the key"
                ))
            }),
            Self::Given(key) => Ok(Some(key.clone())),
        }
    }

    /// What `Debug` shows: where the key comes from, never the key.
    pub(crate) fn describe(&self, base_url: &str) -> String {
        match self {
            Self::Default if is_openai_api(base_url) => {
                format!("from ${DEFAULT_API_KEY_ENV} (<redacted>)")
            }
            Self::Default => format!("none (${DEFAULT_API_KEY_ENV} goes only to the OpenAI API)"),
            Self::Env(var) => format!("from ${var} (<redacted>)"),
            Self::Given(_) => "<redacted>".to_string(),
        }
    }
}

/// The variable's value, when it is set and not blank.
fn read(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|k| !k.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_variable_that_is_unset_is_an_error_naming_it() {
        let key = ApiKey::Env("MEMORY_OPENAI_TEST_NEVER_SET".into());
        let Err(ProviderError::Authentication(message)) =
            key.for_endpoint("https://api.openai.com/v1")
        else {
            panic!("an unset named variable must be an authentication error");
        };
        assert!(
            message.contains("MEMORY_OPENAI_TEST_NEVER_SET"),
            "{message}"
        );
    }

    #[test]
    fn a_given_key_goes_anywhere() {
        let key = ApiKey::Given("sk-given".into());
        assert_eq!(
            key.for_endpoint("http://127.0.0.1:9/v1")
                .unwrap()
                .as_deref(),
            Some("sk-given")
        );
    }
}
