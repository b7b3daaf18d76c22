//! A post's text as Mastodon's `content` HTML: escaped, in paragraphs (a blank line
//! between them, `<br />` for a single newline), with its hashtags and mentions linked
//! as Mastodon links them. What counts as a hashtag or a mention is the engine's rule
//! ([`hashtags`], [`mentions`]): this only finds where each of those it returned stands
//! in the text, so the links and the `tags` and `mentions` arrays always agree.

use std::fmt::Write;

use crate::domain::{hashtags, mentions};
use crate::http::mastodon::Origin;

use super::account::profile_url;
use super::tag::tag_url;

fn tag_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' => out.push_str("<br />"),
            c => out.push(c),
        }
    }
}

/// The hashtags and the mentions of a text, as the engine parses them.
pub struct Parsed {
    pub tags: Vec<String>,
    pub mentions: Vec<String>,
}

impl Parsed {
    pub fn of(text: &str) -> Parsed {
        Parsed {
            tags: hashtags(text),
            mentions: mentions(text),
        }
    }
}

/// `text` as HTML, the runs that are among `parsed` linked.
pub fn render(origin: &Origin, text: &str, parsed: &Parsed) -> String {
    let text = text.replace("\r\n", "\n");
    let mut out = String::with_capacity(text.len() + 16);
    let paragraphs = text
        .split("\n\n")
        .map(|p| p.trim_matches('\n'))
        .filter(|p| !p.is_empty());
    for paragraph in paragraphs {
        out.push_str("<p>");
        linked_into(&mut out, origin, paragraph, parsed);
        out.push_str("</p>");
    }
    out
}

fn linked_into(out: &mut String, origin: &Origin, text: &str, parsed: &Parsed) {
    let mut previous: Option<char> = None;
    let mut plain_from = 0;
    let mut at = 0;
    while let Some(c) = text[at..].chars().next() {
        let rest = &text[at + c.len_utf8()..];
        let link = match c {
            '#' if previous.is_none_or(|p| !tag_char(p) && p != '#') => {
                let end = rest.find(|c: char| !tag_char(c)).unwrap_or(rest.len());
                let run = &rest[..end];
                let tag = run.to_lowercase();
                (!run.is_empty() && parsed.tags.contains(&tag)).then(|| {
                    let url = tag_url(origin, &tag);
                    let mut html = String::new();
                    let _ = write!(
                        html,
                        "<a href=\"{url}\" class=\"mention hashtag\" rel=\"tag\">#<span>"
                    );
                    escape_into(&mut html, run);
                    html.push_str("</span></a>");
                    (run.len(), html)
                })
            }
            '@' if previous.is_none_or(|p| !id_char(p) && p != '@') => {
                let end = rest.find(|c: char| !id_char(c)).unwrap_or(rest.len());
                let run = &rest[..end];
                (!run.is_empty() && parsed.mentions.iter().any(|m| m == run)).then(|| {
                    let url = profile_url(origin, run);
                    let html = format!(
                        "<span class=\"h-card\"><a href=\"{url}\" class=\"u-url mention\">@<span>{run}</span></a></span>"
                    );
                    (run.len(), html)
                })
            }
            _ => None,
        };
        match link {
            Some((run_len, html)) => {
                escape_into(out, &text[plain_from..at]);
                out.push_str(&html);
                at += c.len_utf8() + run_len;
                plain_from = at;
                previous = text[..at].chars().next_back();
            }
            None => {
                at += c.len_utf8();
                previous = Some(c);
            }
        }
    }
    escape_into(out, &text[plain_from..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderMap;

    fn html(text: &str) -> String {
        let settings = crate::http::mastodon::Settings {
            public_url: Some("https://s.example".to_owned()),
            title: "t".to_owned(),
        };
        let origin = Origin::of(&settings, &HeaderMap::new());
        render(&origin, text, &Parsed::of(text))
    }

    #[test]
    fn text_is_escaped_and_split_into_paragraphs() {
        assert_eq!(
            html("a <b> & \"c\"\nd\n\ne'"),
            "<p>a &lt;b&gt; &amp; &quot;c&quot;<br />d</p><p>e&#39;</p>"
        );
        assert_eq!(html(""), "");
    }

    #[test]
    fn hashtags_and_mentions_are_linked_as_the_engine_parses_them() {
        assert_eq!(
            html("hi @bob, #Rust!"),
            "<p>hi <span class=\"h-card\"><a href=\"https://s.example/@bob\" class=\"u-url mention\">@<span>bob</span></a></span>, \
             <a href=\"https://s.example/tags/rust\" class=\"mention hashtag\" rel=\"tag\">#<span>Rust</span></a>!</p>"
        );
        // Not a tag or a mention by the engine's rule: left as text.
        assert_eq!(
            html("a#b mail@host ##c @@d"),
            "<p>a#b mail@host ##c @@d</p>"
        );
        let long = format!("#{}", "a".repeat(65));
        assert_eq!(html(&long), format!("<p>{long}</p>"));
    }
}
