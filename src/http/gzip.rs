//! gzip for the bodies kept rendered: a client that accepts it (browsers and the HTTP
//! libraries of the Mastodon clients all say so in `Accept-Encoding`) is served a kept
//! page compressed once, when it was kept, instead of at every read. Nothing else is
//! compressed here; a reverse proxy in front may compress the rest, and passes a body
//! that already has a `Content-Encoding` through as it is.

use std::io::Write;

use axum::http::{HeaderMap, header};
use flate2::Compression;
use flate2::write::GzEncoder;

/// Whether `Accept-Encoding` admits gzip: `gzip` (or `x-gzip`), or failing that `*`,
/// with a weight above 0. A weight that does not parse admits nothing.
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    let (mut gzip, mut any) = (None, None);
    let values = headers.get_all(header::ACCEPT_ENCODING).iter();
    for coding in values
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
    {
        let mut parts = coding.split(';');
        let name = parts.next().unwrap_or_default().trim();
        let weight = parts
            .find_map(|p| {
                let (key, value) = p.split_once('=')?;
                key.trim().eq_ignore_ascii_case("q").then(|| value.trim())
            })
            .map_or(Some(1.0), |q| q.parse::<f32>().ok())
            .unwrap_or(0.0);
        if name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip") {
            gzip = Some(weight);
        } else if name == "*" {
            any = Some(weight);
        }
    }
    gzip.or(any).is_some_and(|w| w > 0.0)
}

/// `data` gzipped, at the fast level: a page is compressed once and served many times,
/// so the size matters more than the time, but the time is spent while a reader waits.
pub fn gzip(data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(data.len() / 4), Compression::fast());
    encoder.write_all(data)?;
    encoder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accepts(values: &[&str]) -> bool {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        accepts_gzip(&headers)
    }

    #[test]
    fn accept_encoding_is_read_with_its_weights() {
        assert!(!accepts(&[]));
        assert!(accepts(&["gzip"]));
        assert!(accepts(&["gzip, deflate, br, zstd"]));
        assert!(accepts(&["br", "GZip;q=0.5"]));
        assert!(accepts(&["x-gzip"]));
        assert!(accepts(&["*"]));
        assert!(!accepts(&["identity"]));
        assert!(!accepts(&["br, deflate"]));
        assert!(!accepts(&["gzip;q=0"]));
        assert!(!accepts(&["gzip ; q=0.0, br"]));
        assert!(
            !accepts(&["gzip;q=0, *"]),
            "gzip's own weight wins over *'s"
        );
        assert!(!accepts(&["*;q=0"]));
        assert!(!accepts(&["gzip;q=oops"]));
    }

    #[test]
    fn a_gzipped_body_reads_back_whole() {
        use std::io::Read;
        let body = br#"[{"id":"1","content":"<p>hello</p>"}]"#.repeat(200);
        let packed = gzip(&body).unwrap();
        assert!(packed.len() * 10 < body.len(), "{} bytes", packed.len());
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&packed[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, body);
    }
}
