//! The OpenAPI document of the API this server serves (`GET /openapi.json`).

use serde_json::{json, Value};

/// OpenAPI 3.1 for every route, the request fields read (OpenAI's and the extensions) and the
/// responses.
pub fn document() -> Value {
    let error = json!({"$ref": "#/components/responses/Error"});
    let errors = json!({
        "400": error, "401": error, "404": error, "413": error, "429": error, "500": error, "503": error
    });
    let with_errors = |ok: Value| {
        let mut responses = errors.clone();
        responses["200"] = ok;
        responses
    };
    let responses_path = json!({"post": {
        "summary": "OpenAI's Responses API: input items, function tools and their outputs, text.format json_schema; `stream: true` answers with typed server-sent events (response.created ... response.completed).",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ResponsesRequest"}}}},
        "responses": with_errors(json!({"description": "The response, or its event stream.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Response"}}, "text/event-stream": {}}}))
    }});
    let mut document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "constrain serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "OpenAI-compatible chat and text completions whose structured outputs and tool calls follow their schemas every time. Every route but /health needs `Authorization: Bearer KEY` when the server runs with --api-key."
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": {
                "Error": {
                    "description": "An error, as OpenAI returns them.",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
                }
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {"error": {"type": "object", "required": ["message", "type"], "properties": {
                        "message": {"type": "string"},
                        "type": {"type": "string", "examples": ["invalid_request_error", "authentication_error", "rate_limit_error", "server_error"]},
                        "param": {"type": ["string", "null"]},
                        "code": {"type": ["string", "null"]}
                    }}}
                },
                "Sampling": {
                    "type": "object",
                    "properties": {
                        "model": {"type": "string", "description": "The served model's id (GET /v1/models); may be omitted."},
                        "max_tokens": {"type": "integer", "minimum": 1},
                        "temperature": {"type": "number", "minimum": 0, "maximum": 2, "default": 1},
                        "top_p": {"type": "number", "minimum": 0, "maximum": 1, "default": 1},
                        "seed": {"type": "integer"},
                        "stop": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": 4}]},
                        "n": {"type": "integer", "minimum": 1},
                        "presence_penalty": {"type": "number", "minimum": -2, "maximum": 2},
                        "frequency_penalty": {"type": "number", "minimum": -2, "maximum": 2},
                        "logit_bias": {"type": "object", "additionalProperties": {"type": "number", "minimum": -100, "maximum": 100}},
                        "stream": {"type": "boolean"},
                        "stream_options": {"type": "object", "properties": {"include_usage": {"type": "boolean"}}},
                        "top_k": {"type": "integer", "minimum": 0, "description": "Extension."},
                        "min_p": {"type": "number", "minimum": 0, "maximum": 1, "description": "Extension."},
                        "typical_p": {"type": "number", "minimum": 0, "maximum": 1, "description": "Extension."},
                        "repeat_penalty": {"type": "number", "description": "Extension: CTRL's repetition penalty (1 = off)."},
                        "lookup": {"type": "integer", "minimum": 0, "maximum": 16, "description": "Extension: speculative decoding by prompt lookup, drafts of up to this many tokens (0 = off)."},
                        "trace": {"type": "boolean", "description": "Extension: each choice (each stream chunk, for the tokens it carries) gets `trace`, one step per token: origin (sampled, forced, budget), tokens allowed, the probability mass the mask removed, the top candidates before and after the mask and the funnel."},
                        "grammar": {"type": "string", "description": "Extension: a grammar the output follows: GBNF (start rule root), or Lark (start rule start) with grammar_syntax lark."},
                        "grammar_syntax": {"enum": ["gbnf", "lark"], "description": "Extension: the notation of grammar (default gbnf)."},
                        "regex": {"type": "string", "description": "Extension: a regular expression the output matches in full."},
                        "json_schema": {"type": "object", "description": "Extension: a JSON Schema the output is valid against."}
                    }
                },
                "ResponseFormat": {
                    "oneOf": [
                        {"type": "object", "required": ["type"], "properties": {"type": {"const": "text"}}},
                        {"type": "object", "required": ["type"], "properties": {"type": {"const": "json_object"}}},
                        {"type": "object", "required": ["type", "json_schema"], "properties": {
                            "type": {"const": "json_schema"},
                            "json_schema": {"type": "object", "properties": {
                                "name": {"type": "string"}, "description": {"type": "string"},
                                "schema": {"type": "object"}, "strict": {"type": "boolean"}
                            }}
                        }}
                    ]
                },
                "Message": {
                    "type": "object",
                    "required": ["role"],
                    "properties": {
                        "role": {"enum": ["system", "developer", "user", "assistant", "tool"]},
                        "content": {"oneOf": [{"type": "string"}, {"type": "null"}, {"type": "array", "items": {"type": "object", "properties": {"type": {"const": "text"}, "text": {"type": "string"}}}}]},
                        "name": {"type": "string"},
                        "tool_calls": {"type": "array", "items": {"$ref": "#/components/schemas/ToolCall"}},
                        "tool_call_id": {"type": "string"}
                    }
                },
                "Tool": {
                    "type": "object",
                    "required": ["type", "function"],
                    "properties": {
                        "type": {"const": "function"},
                        "function": {"type": "object", "required": ["name"], "properties": {
                            "name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
                            "description": {"type": "string"},
                            "parameters": {"type": "object", "description": "JSON Schema of the arguments."},
                            "strict": {"type": "boolean"}
                        }}
                    }
                },
                "ToolCall": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"}, "type": {"const": "function"},
                        "function": {"type": "object", "properties": {"name": {"type": "string"}, "arguments": {"type": "string"}}}
                    }
                },
                "ChatCompletionRequest": {
                    "allOf": [{"$ref": "#/components/schemas/Sampling"}],
                    "type": "object",
                    "required": ["messages"],
                    "properties": {
                        "messages": {"type": "array", "items": {"$ref": "#/components/schemas/Message"}, "minItems": 1},
                        "max_completion_tokens": {"type": "integer", "minimum": 1},
                        "logprobs": {"type": "boolean"},
                        "top_logprobs": {"type": "integer", "minimum": 0, "maximum": 20},
                        "response_format": {"$ref": "#/components/schemas/ResponseFormat"},
                        "tools": {"type": "array", "items": {"$ref": "#/components/schemas/Tool"}},
                        "tool_choice": {"oneOf": [
                            {"enum": ["none", "auto", "required"]},
                            {"type": "object", "properties": {"type": {"const": "function"}, "function": {"type": "object", "properties": {"name": {"type": "string"}}}}}
                        ]},
                        "parallel_tool_calls": {"type": "boolean", "default": true}
                    }
                },
                "CompletionRequest": {
                    "allOf": [{"$ref": "#/components/schemas/Sampling"}],
                    "type": "object",
                    "required": ["prompt"],
                    "properties": {
                        "prompt": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": 1}, {"type": "array", "items": {"type": "integer"}}]},
                        "logprobs": {"type": "integer", "minimum": 0, "maximum": 20},
                        "response_format": {"$ref": "#/components/schemas/ResponseFormat"}
                    }
                },
                "Constraint": {
                    "type": "object",
                    "description": "Extension field of responses to constrained requests: the output was enforced to follow this constraint (also with strict: false).",
                    "properties": {
                        "type": {"enum": ["json_schema", "json_object", "regex", "grammar", "lark", "structural_tag", "tool_calls"]},
                        "enforced": {"const": true},
                        "strict": {"type": ["boolean", "null"], "description": "The strict flag as the request gave it."},
                        "triggered_by": {"type": ["string", "null"], "description": "With tool_choice auto: the text that opened the constrained part."},
                        "cached": {"type": "boolean", "description": "Whether the compiled grammar came from the cache."},
                        "warnings": {"type": "array", "items": {"type": "string"}, "description": "Schema keywords accepted but not enforced (unknown formats...)."}
                    }
                },
                "ChatCompletion": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"}, "object": {"const": "chat.completion"}, "created": {"type": "integer"},
                        "model": {"type": "string"}, "system_fingerprint": {"type": "string"},
                        "choices": {"type": "array", "items": {"type": "object", "properties": {
                            "index": {"type": "integer"},
                            "message": {"type": "object", "properties": {
                                "role": {"const": "assistant"}, "content": {"type": ["string", "null"]},
                                "tool_calls": {"type": "array", "items": {"$ref": "#/components/schemas/ToolCall"}}
                            }},
                            "logprobs": {"type": ["object", "null"]},
                            "finish_reason": {"enum": ["stop", "length", "tool_calls"]}
                        }}},
                        "usage": {"type": "object", "properties": {"prompt_tokens": {"type": "integer"}, "completion_tokens": {"type": "integer"}, "total_tokens": {"type": "integer"}, "completion_tokens_details": {"type": "object", "description": "With lookup: drafted tokens kept and rejected.", "properties": {"accepted_prediction_tokens": {"type": "integer"}, "rejected_prediction_tokens": {"type": "integer"}}}}},
                        "constraint": {"$ref": "#/components/schemas/Constraint"}
                    }
                }
            }
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/chat/completions": {"post": {
                "summary": "Chat completion (text, structured output, tool calls); `stream: true` answers with server-sent events ending in `data: [DONE]`.",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChatCompletionRequest"}}}},
                "responses": with_errors(json!({"description": "The completion, or an event stream of chat.completion.chunk objects.",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChatCompletion"}}, "text/event-stream": {}}}))
            }},
            "/v1/completions": {"post": {
                "summary": "Text completion of a raw prompt.",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CompletionRequest"}}}},
                "responses": with_errors(json!({"description": "The completion (object text_completion), or an event stream.", "content": {"application/json": {}, "text/event-stream": {}}}))
            }},
            "/v1/models": {"get": {
                "summary": "The served model.",
                "responses": with_errors(json!({"description": "A list with one model.", "content": {"application/json": {}}}))
            }},
            "/health": {"get": {
                "summary": "Liveness; needs no API key.",
                "security": [],
                "responses": {"200": {"description": "{\"status\": \"ok\", ...}", "content": {"application/json": {}}}}
            }},
            "/inspect": {"get": {
                "summary": "The inspector: a page that runs traced generations and opens `constrain --trace` files; needs no API key (its requests carry it).",
                "security": [],
                "responses": {"200": {"description": "One self-contained HTML page.", "content": {"text/html": {}}}}
            }},
            "/metrics": {"get": {
                "summary": "Prometheus text: requests, tokens, queue, active, mask, eval and compile time, cache, mass removed by traced masks.",
                "responses": with_errors(json!({"description": "Prometheus exposition format.", "content": {"text/plain": {}}}))
            }},
            "/openapi.json": {"get": {
                "summary": "This document.",
                "responses": with_errors(json!({"description": "OpenAPI 3.1.", "content": {"application/json": {}}}))
            }}
        }
    });
    // Added apart: one `json!` this large would recurse past the macro's limit.
    document["components"]["schemas"]["ResponsesRequest"] = responses_request();
    document["components"]["schemas"]["Response"] = response();
    document["paths"]["/v1/responses"] = responses_path;
    document
}

/// The body of `POST /v1/responses`.
fn responses_request() -> Value {
    json!({
        "allOf": [{"$ref": "#/components/schemas/Sampling"}],
        "type": "object",
        "description": "OpenAI's Responses API. The sampling extensions (seed, top_k, grammar, regex, json_schema...) are taken as on the chat route.",
        "properties": {
            "input": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "object", "description": "A message (role user, system, developer or assistant; content a string or input_text / output_text parts), a function_call item (call_id, name, arguments) or a function_call_output item (call_id, output)."}}]},
            "instructions": {"type": "string"},
            "max_output_tokens": {"type": "integer", "minimum": 1},
            "tools": {"type": "array", "items": {"type": "object", "required": ["type", "name"], "properties": {
                "type": {"const": "function"},
                "name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
                "description": {"type": "string"},
                "parameters": {"type": "object", "description": "JSON Schema of the arguments."},
                "strict": {"type": "boolean"}
            }}},
            "tool_choice": {"oneOf": [
                {"enum": ["none", "auto", "required"]},
                {"type": "object", "properties": {"type": {"const": "function"}, "name": {"type": "string"}}}
            ]},
            "parallel_tool_calls": {"type": "boolean", "default": true},
            "text": {"type": "object", "properties": {"format": {"oneOf": [
                {"type": "object", "required": ["type"], "properties": {"type": {"const": "text"}}},
                {"type": "object", "required": ["type"], "properties": {"type": {"const": "json_object"}}},
                {"type": "object", "required": ["type"], "properties": {
                    "type": {"const": "json_schema"}, "name": {"type": "string"}, "description": {"type": "string"},
                    "schema": {"type": "object"}, "strict": {"type": "boolean"}
                }}
            ]}}},
            "previous_response_id": {"type": "string", "description": "Continue a stored response (kept in memory within --responses-store-bytes)."},
            "store": {"type": "boolean", "default": true}
        }
    })
}

/// The `response` object of `POST /v1/responses`.
fn response() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"}, "object": {"const": "response"}, "created_at": {"type": "integer"},
            "status": {"enum": ["completed", "incomplete", "failed", "in_progress"]},
            "incomplete_details": {"type": ["object", "null"], "properties": {"reason": {"const": "max_output_tokens"}}},
            "model": {"type": "string"},
            "output": {"type": "array", "items": {"type": "object", "description": "A message (content: output_text parts) or a function_call (call_id, name, arguments as JSON text)."}},
            "usage": {"type": "object", "properties": {"input_tokens": {"type": "integer"}, "output_tokens": {"type": "integer"}, "total_tokens": {"type": "integer"}}},
            "constraint": {"$ref": "#/components/schemas/Constraint"}
        }
    })
}
