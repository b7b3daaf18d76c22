//! Hashtags: `#` followed by letters, digits or `_`.

/// Hashtags counted per post; later ones are ignored.
pub const MAX_TAGS_PER_POST: usize = 10;
/// The longest tag counted, in characters; a longer run is not a tag.
pub const MAX_TAG_CHARS: usize = 64;

fn tag_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The distinct hashtags of `text`, lower-cased, in order of first appearance, at most
/// [`MAX_TAGS_PER_POST`].
///
/// A `#` starts a tag only at the start of the text or after a character that cannot be
/// part of one (so `a#b` and `##b` hold none); the tag is the longest run of Unicode
/// letters, digits and `_` after it. A lone `#` or one followed by punctuation is no
/// tag; punctuation ends one (`#rust,` is `rust`).
pub fn hashtags(text: &str) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
    let mut previous: Option<char> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let starts = c == '#' && previous.is_none_or(|p| !tag_char(p) && p != '#');
        previous = Some(c);
        if !starts {
            continue;
        }
        let body = &text[at + 1..];
        let end = body.find(|c: char| !tag_char(c)).unwrap_or(body.len());
        let run = &body[..end];
        if run.is_empty() {
            continue;
        }
        // Skip the run so that a `#` right after it is not taken for a new tag start.
        while chars.peek().is_some_and(|(i, _)| *i <= at + end) {
            previous = chars.next().map(|(_, c)| c);
        }
        if run.chars().count() > MAX_TAG_CHARS {
            continue;
        }
        let tag = run.to_lowercase();
        if !tags.contains(&tag) {
            tags.push(tag);
            if tags.len() == MAX_TAGS_PER_POST {
                break;
            }
        }
    }
    tags
}

/// Whether `tag` is something [`hashtags`] could produce (for tags named in a path).
pub fn is_tag(tag: &str) -> bool {
    let chars = tag.chars().count();
    (1..=MAX_TAG_CHARS).contains(&chars) && tag.chars().all(tag_char) && tag.to_lowercase() == tag
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_cases() {
        assert_eq!(hashtags("hello #Rust and #rust"), ["rust"]);
        assert_eq!(hashtags("# alone, #, ## and #!"), Vec::<String>::new());
        assert_eq!(
            hashtags("#rust, #go. (#zig) #c++"),
            ["rust", "go", "zig", "c"]
        );
        assert_eq!(
            hashtags("#Café #ÜBER #日本語 #x_1"),
            ["café", "über", "日本語", "x_1"]
        );
        assert_eq!(hashtags("mail a#b ##c #d#e"), ["d"]);
        assert_eq!(hashtags("#123 #_"), ["123", "_"]);
        let many: String = (0..15).map(|i| format!("#t{i} ")).collect();
        assert_eq!(hashtags(&many).len(), MAX_TAGS_PER_POST);
        assert_eq!(hashtags(&many)[9], "t9");
        assert!(hashtags(&format!("#{}", "a".repeat(65))).is_empty());
        assert_eq!(hashtags(&format!("#{}", "a".repeat(64))).len(), 1);
    }

    #[test]
    fn path_tags() {
        assert!(is_tag("rust") && is_tag("日本語") && is_tag("x_1"));
        assert!(!is_tag("Rust") && !is_tag("") && !is_tag("a-b") && !is_tag("#a"));
    }
}
