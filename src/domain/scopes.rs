//! OAuth 2 scopes as Mastodon defines them: the top-level `read`, `write`, `follow`,
//! `push` and `profile`, and the granular `read:statuses`, `write:follows`, ... A
//! granted set satisfies a required scope when it holds the scope itself, its top level
//! (`read` for `read:accounts`), or, for the follow family, the legacy `follow`.

use std::collections::BTreeSet;

/// The scopes this server grants, top level first.
pub const TOP_SCOPES: [&str; 5] = ["read", "write", "follow", "push", "profile"];

/// The granular scopes this server knows (Mastodon's, minus `admin:*`).
pub const GRANULAR_SCOPES: [&str; 24] = [
    "read:accounts",
    "read:blocks",
    "read:bookmarks",
    "read:favourites",
    "read:filters",
    "read:follows",
    "read:lists",
    "read:mutes",
    "read:notifications",
    "read:search",
    "read:statuses",
    "write:accounts",
    "write:blocks",
    "write:bookmarks",
    "write:conversations",
    "write:favourites",
    "write:filters",
    "write:follows",
    "write:lists",
    "write:media",
    "write:mutes",
    "write:notifications",
    "write:reports",
    "write:statuses",
];

/// What the legacy `follow` scope stands for.
const FOLLOW_FAMILY: [&str; 6] = [
    "read:blocks",
    "write:blocks",
    "read:follows",
    "write:follows",
    "read:mutes",
    "write:mutes",
];

/// Whether `scope` is one this server knows.
pub fn is_scope(scope: &str) -> bool {
    TOP_SCOPES.contains(&scope) || GRANULAR_SCOPES.contains(&scope)
}

/// A set of scopes, written space-separated.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scopes(BTreeSet<String>);

impl Scopes {
    /// Parses a space-separated list (`+` too, as some clients send it in forms).
    /// Refuses an unknown scope, naming it; an empty list is `default`.
    pub fn parse(text: &str, default: &str) -> Result<Scopes, String> {
        let text = if text.trim().is_empty() {
            default
        } else {
            text
        };
        let mut set = BTreeSet::new();
        for scope in text.split([' ', '+', '\t', '\n']).filter(|s| !s.is_empty()) {
            if !is_scope(scope) {
                return Err(format!("unknown scope {scope:?}"));
            }
            set.insert(scope.to_owned());
        }
        Ok(Scopes(set))
    }

    /// Every scope: what a `/v1` token (which has none) stands for.
    pub fn all() -> Scopes {
        Scopes(
            TOP_SCOPES
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<BTreeSet<_>>(),
        )
    }

    /// Whether every scope of `self` is within `granted` (each one held as itself, or
    /// through its top level).
    pub fn within(&self, granted: &Scopes) -> bool {
        self.0.iter().all(|scope| granted.satisfies(scope))
    }

    /// Whether these scopes allow what `required` names.
    pub fn satisfies(&self, required: &str) -> bool {
        if self.0.contains(required) {
            return true;
        }
        let Some((top, _)) = required.split_once(':') else {
            return false;
        };
        self.0.contains(top) || (FOLLOW_FAMILY.contains(&required) && self.0.contains("follow"))
    }

    /// Whether any of `required` is allowed.
    pub fn satisfies_any(&self, required: &[&str]) -> bool {
        required.iter().any(|r| self.satisfies(r))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

impl std::fmt::Display for Scopes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        // Top-level scopes first, in Mastodon's order, then the granular ones.
        let ordered = TOP_SCOPES
            .iter()
            .filter(|t| self.0.contains(**t))
            .map(|s| (*s).to_owned())
            .chain(
                self.0
                    .iter()
                    .filter(|s| !TOP_SCOPES.contains(&s.as_str()))
                    .cloned(),
            );
        for scope in ordered {
            if !first {
                f.write_str(" ")?;
            }
            f.write_str(&scope)?;
            first = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_granular_scope_is_held_through_its_top_level() {
        let read = Scopes::parse("read", "").unwrap();
        assert!(read.satisfies("read:accounts"));
        assert!(!read.satisfies("write:statuses"));
        let follow = Scopes::parse("follow", "").unwrap();
        assert!(follow.satisfies("write:follows"));
        assert!(!follow.satisfies("write:statuses"));
        let granular = Scopes::parse("read:statuses", "").unwrap();
        assert!(granular.satisfies("read:statuses"));
        assert!(!granular.satisfies("read"));
        assert!(!granular.satisfies("read:accounts"));
        assert!(
            Scopes::parse("read:statuses write", "")
                .unwrap()
                .within(&Scopes::parse("read write follow", "").unwrap())
        );
        assert!(!Scopes::parse("push", "").unwrap().within(&read));
        assert!(Scopes::parse("admin:read", "").is_err());
        assert_eq!(Scopes::parse("", "read").unwrap().to_string(), "read");
        assert_eq!(
            Scopes::parse("write:statuses push read", "")
                .unwrap()
                .to_string(),
            "read push write:statuses"
        );
    }
}
