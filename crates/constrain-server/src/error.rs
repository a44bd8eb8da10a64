//! Errors as OpenAI clients expect them: a status code and
//! `{"error": {"message", "type", "param", "code"}}`; and the errors of starting the server.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered to the client.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// For a person.
    pub message: String,
    /// OpenAI's error type (`invalid_request_error`, `authentication_error`, ...).
    pub kind: &'static str,
    /// The request field at fault, if one is.
    pub param: Option<String>,
    /// A machine-readable code (`invalid_api_key`, `model_not_found`, ...).
    pub code: Option<&'static str>,
}

impl ApiError {
    /// 400: the request is malformed or cannot be served as asked.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param: None,
            code: None,
        }
    }

    /// 400 about one field of the request.
    pub fn invalid_param(param: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            param: Some(param.to_string()),
            code: Some("invalid_value"),
            ..ApiError::bad_request(message)
        }
    }

    /// 401: a missing or wrong API key.
    pub fn unauthorized() -> ApiError {
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            message: "Incorrect or missing API key: send it as `Authorization: Bearer KEY`".into(),
            kind: "authentication_error",
            param: None,
            code: Some("invalid_api_key"),
        }
    }

    /// 404: no such route.
    pub fn not_found(method: &str, path: &str) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: format!("no route {method} {path}; see GET /openapi.json"),
            kind: "invalid_request_error",
            param: None,
            code: Some("not_found"),
        }
    }

    /// 405: the route exists, not with this method.
    pub fn method_not_allowed(method: &str, path: &str) -> ApiError {
        ApiError {
            status: StatusCode::METHOD_NOT_ALLOWED,
            message: format!("{path} does not take {method}; see GET /openapi.json"),
            kind: "invalid_request_error",
            param: None,
            code: Some("method_not_allowed"),
        }
    }

    /// 413: the body is over the limit.
    pub fn too_large(limit: usize) -> ApiError {
        ApiError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            message: format!(
                "the request body is larger than the server's limit of {limit} bytes \
                 (--max-body-bytes)"
            ),
            kind: "invalid_request_error",
            param: None,
            code: Some("request_too_large"),
        }
    }

    /// 429: the queue is full; try again shortly.
    pub fn busy(queue: usize) -> ApiError {
        ApiError {
            status: StatusCode::TOO_MANY_REQUESTS,
            message: format!(
                "the server is busy: {queue} requests are already waiting (--max-queue); retry later"
            ),
            kind: "rate_limit_error",
            param: None,
            code: Some("server_busy"),
        }
    }

    /// 503: the server is shutting down or its scheduler is gone.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: message.into(),
            kind: "server_error",
            param: None,
            code: Some("unavailable"),
        }
    }

    /// 504: the request ran past its deadline (`--request-timeout-s`) before it was done.
    pub fn deadline() -> ApiError {
        ApiError {
            status: StatusCode::GATEWAY_TIMEOUT,
            message: "the request ran past the server's deadline (--request-timeout-s) before \
                      its answer was complete; ask for fewer tokens or retry later"
                .into(),
            kind: "server_error",
            param: None,
            code: Some("timeout"),
        }
    }

    /// 500: something failed inside the server.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
            kind: "server_error",
            param: None,
            code: None,
        }
    }

    /// With this `param`.
    pub fn with_param(mut self, param: &str) -> ApiError {
        self.param = Some(param.to_string());
        self
    }

    /// With this `code`.
    pub fn with_code(mut self, code: &'static str) -> ApiError {
        self.code = Some(code);
        self
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        json!({
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            response
                .headers_mut()
                .insert("retry-after", HeaderValue::from_static("1"));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert("www-authenticate", HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// A constraint that does not compile: 400 naming the keyword and its JSON pointer (schemas),
/// or the budget that ran out.
pub fn constraint_error(param: &str, err: &constrain::Error) -> ApiError {
    use constrain::{Error, SchemaError};
    let message = match err {
        Error::Schema(SchemaError::Unsupported {
            keyword,
            pointer,
            reason,
        }) => format!(
            "{param}: the schema cannot be enforced: keyword '{keyword}' at JSON pointer \
             '{pointer}': {reason}"
        ),
        Error::Schema(
            e @ SchemaError::LimitExceeded {
                budget: constrain_engine::Budget::CompileTime,
                ..
            },
        ) => {
            format!("{param}: {e} (the compile-time budget is --compile-timeout-ms)")
        }
        Error::Schema(e) => match e.pointer() {
            Some(pointer) => format!("{param}: {e} (JSON pointer '{pointer}')"),
            None => format!("{param}: {e}"),
        },
        Error::Grammar(
            e @ constrain_engine::GrammarError::LimitExceeded {
                budget: constrain_engine::Budget::CompileTime,
                ..
            },
        ) => {
            format!("{param}: {e} (the compile-time budget is --compile-timeout-ms)")
        }
        Error::Grammar(e) => format!("{param}: {e}"),
        other => format!("{param}: {other}"),
    };
    ApiError::invalid_param(param, message).with_code(match err {
        Error::Schema(_) => "invalid_schema",
        Error::Gbnf(_) => "invalid_grammar",
        Error::StructuralTag(_) | Error::StructuralTagPart { .. } => "invalid_structural_tag",
        _ => "invalid_constraint",
    })
}

/// Why the server could not start (or stopped serving).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The model, or its chat template, could not be read.
    #[error(transparent)]
    Model(#[from] constrain_llama::LlamaError),
    /// The scheduler's model side (llama.cpp's context) could not be made.
    #[error("{0}")]
    Slots(String),
    /// The Jinja chat template (`--chat-template-file`, `--jinja`) does not compile.
    #[error("chat template: {0}")]
    Template(String),
    /// The scheduler's thread could not be started.
    #[error("starting the scheduler thread: {0}")]
    Thread(#[source] std::io::Error),
    /// The scheduler's thread ended before saying whether its model side was made.
    #[error("the scheduler thread stopped before creating its context")]
    SchedulerGone,
    /// `--host` and `--port` do not make a socket address.
    #[error("--host {host} --port {port}: {message}")]
    Address {
        /// The host given.
        host: String,
        /// The port given.
        port: u16,
        /// Why it is not an address.
        message: String,
    },
    /// The address could not be listened on.
    #[error("listening on {addr}: {source}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The async runtime could not start, or serving failed.
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_the_openai_shape() {
        let body = ApiError::invalid_param("temperature", "too hot").body();
        assert_eq!(
            body,
            json!({"error": {"message": "too hot", "type": "invalid_request_error",
                              "param": "temperature", "code": "invalid_value"}})
        );
        assert_eq!(ApiError::unauthorized().status, StatusCode::UNAUTHORIZED);
        assert_eq!(ApiError::busy(3).status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            ApiError::too_large(10).status,
            StatusCode::PAYLOAD_TOO_LARGE
        );
    }

    #[test]
    fn a_schema_error_names_keyword_and_pointer() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "strnig"}}});
        let err = constrain::Constraint::JsonSchema(schema)
            .grammar()
            .unwrap_err();
        let api = constraint_error("response_format.json_schema.schema", &err);
        assert_eq!(api.status, StatusCode::BAD_REQUEST);
        assert!(api.message.contains("/properties/a"), "{}", api.message);
        assert_eq!(api.code, Some("invalid_schema"));
    }

    #[test]
    fn a_busy_answer_says_when_to_retry() {
        let response = ApiError::busy(1).into_response();
        assert_eq!(response.headers()["retry-after"], "1");
    }
}
