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
            for (code, response) in responses {
                if code.starts_with('4') || code.starts_with('5') {
                    assert!(
                        response["content"]["application/problem+json"].is_object(),
                        "{method} {path} {code} is not problem+json"
                    );
                }
            }
        }
    }
}
