//! The authorize page's CSRF token: the time it was issued and an HMAC-SHA256, under a
//! key drawn at random when the process starts, of that time and every field of the
//! authorization request the form carries. A form posted back must carry a token this
//! process issued for exactly those fields within [`FORM_TTL_MS`]; the MAC is checked
//! in constant time. The key is per process: behind several processes, a form must be
//! posted to the process that served it (or the user signs in again).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::super::Social;

/// How long a form may be open before it is posted.
pub const FORM_TTL_MS: i64 = 30 * 60 * 1000;

pub struct FormKey([u8; 32]);

impl Default for FormKey {
    fn default() -> Self {
        FormKey(rand::random())
    }
}

impl FormKey {
    fn mac(&self, issued_ms: i64, fields: &[&str]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        mac.update(&issued_ms.to_be_bytes());
        for field in fields {
            // Length-prefixed, so that no two field lists write the same bytes.
            mac.update(&(field.len() as u64).to_be_bytes());
            mac.update(field.as_bytes());
        }
        mac
    }

    /// A token for a form carrying `fields`, issued at `now_ms`.
    pub fn issue(&self, fields: &[&str], now_ms: i64) -> String {
        let tag = self.mac(now_ms, fields).finalize().into_bytes();
        let mut bytes = now_ms.to_be_bytes().to_vec();
        bytes.extend_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Whether `token` was issued here for `fields`, no longer than [`FORM_TTL_MS`] ago.
    pub fn check(&self, token: &str, fields: &[&str], now_ms: i64) -> bool {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(token.as_bytes()) else {
            return false;
        };
        if bytes.len() != 8 + 32 {
            return false;
        }
        let issued_ms = i64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
        let age = now_ms.saturating_sub(issued_ms);
        if !(0..=FORM_TTL_MS).contains(&age) {
            return false;
        }
        self.mac(issued_ms, fields)
            .verify_slice(&bytes[8..])
            .is_ok()
    }
}

impl Social {
    /// A CSRF token for the authorize form carrying `fields`.
    pub fn form_token(&self, fields: &[&str]) -> String {
        self.oauth.forms.issue(fields, self.oauth_now())
    }

    /// Whether `token` was issued by [`Social::form_token`] for `fields`, lately.
    pub fn form_token_holds(&self, token: &str, fields: &[&str]) -> bool {
        self.oauth.forms.check(token, fields, self.oauth_now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_holds_for_its_fields_and_its_time_only() {
        let key = FormKey::default();
        let token = key.issue(&["app", "https://a.example/cb"], 1000);
        assert!(key.check(&token, &["app", "https://a.example/cb"], 2000));
        assert!(!key.check(&token, &["app", "https://evil.example/cb"], 2000));
        assert!(!key.check(&token, &["ap", "phttps://a.example/cb"], 2000));
        assert!(!key.check(
            &token,
            &["app", "https://a.example/cb"],
            1000 + FORM_TTL_MS + 1
        ));
        assert!(!FormKey::default().check(&token, &["app", "https://a.example/cb"], 2000));
        assert!(!key.check("", &[], 0));
    }
}
