//! The words of a display name, as the account search indexes them: maximal runs of
//! alphanumeric characters (Unicode's `Alphabetic` and `Numeric`), each lower-cased
//! (Unicode's full lower-casing, which may add a combining mark: `İ` becomes `i̇`). "Alice Liddell"
//! has `alice` and `liddell`; "Jean-Luc O'Brien" `jean`, `luc`, `o`, `brien`; "Zoë Ünal" `zoë`,
//! `ünal`. A search term matches a word it starts (a prefix of the word, compared bytewise on the
//! lower-cased text, as both stores compare strings).

/// The most words one name indexes: a display name has at most 100 characters, so at
/// most 50 words; the bound holds whatever the validator allows.
pub const MAX_NAME_WORDS: usize = 64;

/// The distinct words of `text`, lower-cased, sorted bytewise (at most
/// [`MAX_NAME_WORDS`], the first ones by that order).
pub fn name_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.sort_unstable();
    words.dedup();
    words.truncate(MAX_NAME_WORDS);
    words
}

/// The least string above every string that starts with `prefix`: `prefix` followed by
/// U+10FFFF, which is no alphanumeric character, so no word has it. Strings compare
/// bytewise as UTF-8 on both stores (SQLite's `BINARY`, MongoDB's default), and every
/// character's encoding is below U+10FFFF's (`F4 8F BF BF`).
pub fn word_prefix_end(prefix: &str) -> String {
    let mut end = String::with_capacity(prefix.len() + 4);
    end.push_str(prefix);
    end.push(char::MAX);
    end
}

/// Whether every one of `terms` starts some word of `name` (the check a search makes
/// of each hit against the profile as it stands).
pub fn name_matches(name: &str, terms: &[String]) -> bool {
    let words = name_words(name);
    terms
        .iter()
        .all(|term| words.iter().any(|w| w.starts_with(term.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_anything_not_alphanumeric_and_lowercases() {
        assert_eq!(name_words("Alice Liddell"), ["alice", "liddell"]);
        assert_eq!(
            name_words("Jean-Luc O'Brien, Jr."),
            ["brien", "jean", "jr", "luc", "o"]
        );
        assert_eq!(name_words("ZOË  Ünal ünal"), ["zoë", "ünal"]);
        assert_eq!(name_words("東京 タワー"), ["タワー", "東京"]);
        assert!(name_words("  -- !! ").is_empty());
    }

    #[test]
    fn a_prefix_end_bounds_every_word_that_starts_with_it() {
        let end = word_prefix_end("lid");
        for word in ["lid", "liddell", "lidö", "lid東"] {
            assert!(word >= "lid" && word < end.as_str(), "{word}");
        }
        assert!("lie" > end.as_str());
    }

    #[test]
    fn matches_when_every_term_starts_a_word() {
        let terms = |t: &str| name_words(t);
        assert!(name_matches("Alice Liddell", &terms("lidd")));
        assert!(name_matches("Alice Liddell", &terms("ali lid")));
        assert!(!name_matches("Alice Liddell", &terms("ice")));
        assert!(!name_matches("Alice Liddell", &terms("alice bob")));
    }
}
