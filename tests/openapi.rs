//! The committed spec must match the code.

#[test]
fn committed_openapi_matches_the_code() {
    let committed = std::fs::read_to_string("openapi/openapi.json").expect("openapi/openapi.json");
    assert!(
        committed == socialite::http::openapi_json(),
        "openapi/openapi.json is stale: run `cargo run -- openapi > openapi/openapi.json`"
    );
}

#[test]
fn every_operation_documents_its_errors() {
    let spec: serde_json::Value = serde_json::from_str(&socialite::http::openapi_json()).unwrap();
    for (path, item) in spec["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let responses = operation["responses"].as_object().unwrap();
            let takes_input =
                path.contains('{') || matches!(method.as_str(), "post" | "put" | "patch");
            if takes_input && path != "/openapi.json" {
                assert!(
                    responses.keys().any(|code| code.starts_with('4')),
                    "{method} {path} documents no 4xx"
                );
            }
            // The Mastodon API's errors are `{"error"}` JSON, or a page on the HTML
            // authorize page.
            let expected = if socialite::http::mastodon::error::is_mastodon_path(path) {
                ["application/json", "text/html"]
            } else {
                ["application/problem+json"; 2]
            };
            for (code, response) in responses {
                if code.starts_with('4') || code.starts_with('5') {
                    assert!(
                        expected.iter().any(|t| response["content"][t].is_object()),
                        "{method} {path} {code} is not {expected:?}"
                    );
                }
            }
        }
    }
}

/// Every operation that takes a JSON body documents the `Json` extractor's rejections
/// (400 malformed, 413 too large, 415 not JSON), which any of them can answer.
#[test]
fn every_json_body_documents_its_rejections() {
    let spec: serde_json::Value = serde_json::from_str(&socialite::http::openapi_json()).unwrap();
    let mut bodies = 0;
    for (path, item) in spec["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if operation["requestBody"].is_null() {
                continue;
            }
            bodies += 1;
            for code in ["400", "413", "415"] {
                assert!(
                    operation["responses"][code].is_object(),
                    "{method} {path} takes a JSON body but does not document {code}"
                );
            }
        }
    }
    assert!(
        bodies >= 3,
        "POST /v1/users, PATCH /v1/users/{{id}}, POST .../posts"
    );
}

/// The timeline stream's 200 describes one event, which is how OpenAPI before 3.2
/// (and schemathesis) read a `text/event-stream` schema: an object with the `event`
/// names the server sends, its `data` and its `id`, not the whole body as a string.
#[test]
fn the_stream_documents_one_event() {
    let spec: serde_json::Value = serde_json::from_str(&socialite::http::openapi_json()).unwrap();
    let ok = &spec["paths"]["/v1/users/{id}/timeline/stream"]["get"]["responses"]["200"];
    let reference = ok["content"]["text/event-stream"]["schema"]["$ref"]
        .as_str()
        .expect("the event schema is a component");
    let schemas = &spec["components"]["schemas"];
    let event = &schemas[reference.trim_start_matches("#/components/schemas/")];
    assert_eq!(event["type"], "object");
    assert_eq!(event["required"], serde_json::json!(["event", "data"]));
    assert_eq!(event["properties"]["data"]["type"], "string");
    assert_eq!(event["properties"]["id"]["type"], "string");
    let names = event["properties"]["event"]["$ref"].as_str().unwrap();
    assert_eq!(
        schemas[names.trim_start_matches("#/components/schemas/")]["enum"],
        serde_json::json!(["item", "delete", "notification", "reset"])
    );
}

/// The spec's constraints on texts are the server's: a value schemathesis (or any client)
/// generates from the schema is accepted, and one outside it is refused. Checked for
/// every Unicode scalar value against the pattern, and at the length bounds.
#[test]
fn text_constraints_in_the_spec_are_the_servers() {
    use socialite::domain::{validate_display_name, validate_post_text};
    let spec: serde_json::Value = serde_json::from_str(&socialite::http::openapi_json()).unwrap();
    let schemas = &spec["components"]["schemas"];
    type Validator = fn(&str) -> Result<(), String>;
    let fields: [(&str, &str, Validator); 3] = [
        ("CreateUser", "display_name", validate_display_name),
        ("UpdateUser", "display_name", validate_display_name),
        ("CreatePost", "text", validate_post_text),
    ];
    for (schema, field, validate) in fields {
        let property = &schemas[schema]["properties"][field];
        let pattern = property["pattern"].as_str().expect("a pattern");
        let pattern = regex::Regex::new(pattern).expect("the pattern compiles");
        let (min, max) = (
            property["minLength"].as_u64().expect("minLength") as usize,
            property["maxLength"].as_u64().expect("maxLength") as usize,
        );
        for c in (0..=0x10FFFF_u32).filter_map(char::from_u32) {
            let one = c.to_string();
            assert_eq!(
                pattern.is_match(&one),
                validate(&one).is_ok(),
                "{schema}.{field}: U+{:04X}",
                c as u32
            );
        }
        assert!(
            validate(&"é".repeat(max)).is_ok(),
            "{schema}.{field} at {max}"
        );
        assert!(
            validate(&"é".repeat(max + 1)).is_err(),
            "{schema}.{field} past {max}"
        );
        assert_eq!(min, 1);
        assert!(validate("").is_err() && validate(" \u{3000}x").is_ok());
    }
}

#[test]
fn the_health_status_and_the_mastodon_status_are_two_schemas() {
    let spec: serde_json::Value = serde_json::from_str(&socialite::http::openapi_json()).unwrap();
    let schemas = &spec["components"]["schemas"];
    let health = &spec["paths"]["/healthz"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"]["$ref"];
    let name = health.as_str().unwrap().rsplit('/').next().unwrap();
    assert!(
        schemas[name]["properties"]["content"].is_null(),
        "/healthz names the Mastodon status: {}",
        schemas[name]
    );
    assert!(schemas["MastoStatus"]["properties"]["favourites_count"].is_object());
}
