//! Serving connections, hardened against slow and greedy clients:
//! - a request's header must arrive within `server.header_timeout` (hyper's header read
//!   timer, which also runs while a kept-alive connection waits for its next request);
//! - a connection that moves no byte either way for `server.idle_timeout` is closed;
//! - at most `server.max_connections` are served at once: past that, a new connection
//!   gets a 503 written without waiting and is closed, while the others go on;
//! - a request with more than [`MAX_HEADERS`] header fields gets 431 problem+json. hyper
//!   answers its own 431 with an empty body, so its limit is raised to
//!   [`PARSED_HEADERS`] and ours is checked before routing; only a request past that (or
//!   past hyper's header buffer, about 400 KiB) still gets hyper's bare 431.
//!
//! Shutdown stops accepting, then lets each connection finish its request in flight.
//! Connections may be upgraded (the Mastodon streaming WebSocket); an upgraded one
//! leaves this accounting, and ends when the event hub closes its stream.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::ServiceExt;

use super::error::ApiError;

/// Header fields a request may carry (hyper's own default).
pub const MAX_HEADERS: usize = 100;
/// Header fields hyper parses before answering its bare 431. Past its default of 100 it
/// allocates room for this many per request (64 bytes each, uninitialised), the price of
/// answering problem+json up to here.
pub const PARSED_HEADERS: usize = 1000;

#[derive(Debug, Clone, Copy)]
pub struct ConnectionSettings {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

/// What a connection past the cap is told before it is closed.
fn refusal() -> Vec<u8> {
    let body = r#"{"type":"/problems/unavailable","title":"Service Unavailable","status":503,"detail":"too many connections; try again shortly"}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The answer to a request with `count` header fields, more than [`MAX_HEADERS`].
fn too_many_headers(count: usize) -> Response {
    ApiError::new(
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "too-many-headers",
        format!("a request may carry at most {MAX_HEADERS} header fields; this one has {count}"),
    )
    .into_response()
}

/// Serves `app` on `listener` until `shutdown`, then drains the open connections.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    settings: ConnectionSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(settings.max_connections));
    // Set on shutdown: every connection finishes its request in flight, then closes.
    let (stopping, _) = tokio::sync::watch::channel(false);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(settings.header_timeout)
        .max_headers(PARSED_HEADERS);
    let refusal = refusal();
    let epoch = Instant::now();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            metrics::counter!("http_connections_refused_total").increment(1);
            // Never waits: a client that does not read simply misses the explanation.
            let _ = stream.try_write(&refusal);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let activity = Arc::new(AtomicU64::new(epoch.elapsed().as_millis() as u64));
        let io = Watched {
            stream,
            activity: activity.clone(),
            epoch,
        };
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            let app = app.clone();
            async move {
                let count = request.headers().len();
                if count > MAX_HEADERS {
                    return Ok::<_, Infallible>(too_many_headers(count));
                }
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(peer));
                app.oneshot(request).await
            }
        });
        let connection = http
            .serve_connection(TokioIo::new(io), service)
            .with_upgrades();
        let mut stop = stopping.subscribe();
        let idle_timeout = settings.idle_timeout;
        tokio::spawn(async move {
            let _slot = slot;
            tokio::pin!(connection);
            let served = tokio::select! {
                served = connection.as_mut() => Some(served),
                () = idle(activity.clone(), epoch, idle_timeout) => None,
                () = async {
                    let _ = stop.wait_for(|stopping| *stopping).await;
                } => {
                    connection.as_mut().graceful_shutdown();
                    tokio::select! {
                        served = connection.as_mut() => Some(served),
                        () = idle(activity, epoch, idle_timeout) => None,
                    }
                }
            };
            match served {
                Some(Err(error)) => tracing::debug!(error = %error, %peer, "connection ended"),
                None => tracing::debug!(%peer, "closing an idle connection"),
                Some(Ok(())) => {}
            }
        });
    }
    drop(listener);
    stopping.send_replace(true);
    // Every connection holds a slot until it ends.
    let all = u32::try_from(settings.max_connections).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
    Ok(())
}

/// Returns once no byte has moved for `timeout`.
async fn idle(activity: Arc<AtomicU64>, epoch: Instant, timeout: Duration) {
    loop {
        let last = epoch + Duration::from_millis(activity.load(Ordering::Relaxed));
        let deadline = last + timeout;
        if Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep_until(deadline.into()).await;
    }
}

/// A TCP stream that notes when bytes last moved, in milliseconds since `epoch`.
struct Watched {
    stream: TcpStream,
    activity: Arc<AtomicU64>,
    epoch: Instant,
}

impl Watched {
    fn touch(&self) {
        self.activity
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.touch();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
