//! Passwords: Argon2id with the `argon2` crate's default parameters (19 MiB of memory,
//! 2 passes, 1 lane: OWASP's recommended minimum), a random salt per hash, stored as
//! the PHC string. Hashing and verifying run on the blocking pool (tens of
//! milliseconds each); the crate compares in constant time. A password is never logged.

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

use crate::store::{StoreError, StoreResult};

/// Passwords are 8 to this many characters.
pub const MAX_PASSWORD_CHARS: usize = 128;
pub const MIN_PASSWORD_CHARS: usize = 8;

pub fn validate_password(password: &str) -> Result<(), String> {
    let chars = password.chars().count();
    if !(MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&chars) {
        return Err(format!(
            "a password is {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters"
        ));
    }
    Ok(())
}

/// The PHC string of `password` under a fresh salt.
pub async fn hash_password(password: &str) -> StoreResult<String> {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || {
        Argon2::default()
            .hash_password(password.as_bytes())
            .map(|hash| hash.to_string())
            .map_err(|e| StoreError::Backend(anyhow::anyhow!("hashing a password: {e}")))
    })
    .await
    .map_err(|e| StoreError::Backend(anyhow::anyhow!("password task failed: {e}")))?
}

/// Whether `password` matches `phc`. A stored hash that does not parse matches nothing.
pub async fn verify_password(password: &str, phc: &str) -> bool {
    let (password, phc) = (password.to_owned(), phc.to_owned());
    tokio::task::spawn_blocking(move || {
        let Ok(parsed) = PasswordHash::new(&phc) else {
            tracing::warn!("a stored password hash does not parse");
            return false;
        };
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_verifies_its_password_only() {
        let phc = hash_password("correct horse").await.unwrap();
        assert!(phc.starts_with("$argon2id$"), "{phc}");
        assert!(!phc.contains("correct horse"));
        assert!(verify_password("correct horse", &phc).await);
        assert!(!verify_password("correct horsE", &phc).await);
        assert!(!verify_password("correct horse", "not a hash").await);
        assert_ne!(phc, hash_password("correct horse").await.unwrap(), "salted");
        assert!(validate_password("short").is_err());
        assert!(validate_password(&"x".repeat(129)).is_err());
        assert!(validate_password("long enough").is_ok());
    }
}
