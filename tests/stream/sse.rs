//! A small Server-Sent Events client over reqwest, for the stream tests.

use futures::StreamExt;
use futures::stream::BoxStream;

/// One event as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub event: String,
    pub id: Option<String>,
    pub data: serde_json::Value,
}

pub struct Client {
    body: BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl Client {
    /// Opens `user`'s timeline stream; panics unless it answers 200 text/event-stream.
    pub async fn open(
        client: &reqwest::Client,
        base: &str,
        user: &str,
        token: Option<String>,
        last: Option<&str>,
    ) -> Client {
        let mut request = client.get(format!("{base}/v1/users/{user}/timeline/stream"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(last) = last {
            request = request.header("Last-Event-ID", last);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        Client::of(response)
    }

    /// A client reading `response`, which must be a 200 `text/event-stream`.
    pub fn of(response: reqwest::Response) -> Client {
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Client {
            body: response
                .bytes_stream()
                .map(|r| r.map(|b| b.to_vec()))
                .boxed(),
            buffer: String::new(),
        }
    }

    /// The next event (comments skipped); `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Message> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut message = Message {
                    event: "message".to_owned(),
                    id: None,
                    data: serde_json::Value::Null,
                };
                let mut data = String::new();
                for line in block.lines() {
                    let (field, value) = line.split_once(':').unwrap_or((line, ""));
                    let value = value.strip_prefix(' ').unwrap_or(value);
                    match field {
                        "event" => message.event = value.to_owned(),
                        "id" => message.id = Some(value.to_owned()),
                        "data" => data.push_str(value),
                        _ => {}
                    }
                }
                if data.is_empty() && message.id.is_none() {
                    continue; // a keep-alive comment
                }
                message.data = serde_json::from_str(&data).unwrap();
                return Some(message);
            }
            let chunk = self.body.next().await?.ok()?;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}
