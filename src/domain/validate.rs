//! Input rules shared by the HTTP layer and the seeder.

/// User ids are 1–32 characters of `[A-Za-z0-9_]`.
pub fn validate_user_id(id: &str) -> Result<(), String> {
    let ok =
        (1..=32).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!("user id {id:?} must match ^[A-Za-z0-9_]{{1,32}}$"))
    }
}

/// Display names are 1–64 characters (Unicode scalar values), not blank. Blank is
/// `char::is_whitespace` throughout; the OpenAPI spec's pattern lists those characters.
pub fn validate_display_name(name: &str) -> Result<(), String> {
    let chars = name.chars().count();
    if !(1..=64).contains(&chars) || name.trim().is_empty() {
        return Err(format!(
            "display_name must be 1-64 characters and not blank; got {chars}"
        ));
    }
    Ok(())
}

/// The longest post text, in characters (Unicode scalar values).
pub const MAX_POST_CHARS: usize = 500;

/// Post texts are 1–[`MAX_POST_CHARS`] characters, not blank.
pub fn validate_post_text(text: &str) -> Result<(), String> {
    let chars = text.chars().count();
    if !(1..=MAX_POST_CHARS).contains(&chars) || text.trim().is_empty() {
        return Err(format!(
            "text must be 1-{MAX_POST_CHARS} characters and not blank; got {chars}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids() {
        assert!(validate_user_id("alice_1").is_ok());
        assert!(validate_user_id(&"a".repeat(32)).is_ok());
        assert!(validate_user_id(&"a".repeat(33)).is_err());
        assert!(validate_user_id("").is_err());
        assert!(validate_user_id("al ice").is_err());
        assert!(validate_user_id("é").is_err());
    }

    #[test]
    fn texts_count_characters_not_bytes() {
        assert!(validate_post_text(&"é".repeat(500)).is_ok());
        assert!(validate_post_text(&"é".repeat(501)).is_err());
        assert!(validate_post_text("   ").is_err());
        assert!(validate_display_name(&"ü".repeat(64)).is_ok());
        assert!(validate_display_name(&"ü".repeat(65)).is_err());
    }
}
