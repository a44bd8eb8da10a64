//! URI references (RFC 3986): resolving `$id` and `$ref` against a base, and JSON pointers in
//! fragments.

/// A URI split into its five components (RFC 3986, appendix B).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Uri {
    scheme: Option<String>,
    authority: Option<String>,
    path: String,
    query: Option<String>,
    fragment: Option<String>,
}

impl Uri {
    pub(crate) fn parse(text: &str) -> Uri {
        let (rest, fragment) = match text.find('#') {
            Some(i) => (&text[..i], Some(text[i + 1..].to_string())),
            None => (text, None),
        };
        let (rest, query) = match rest.find('?') {
            Some(i) => (&rest[..i], Some(rest[i + 1..].to_string())),
            None => (rest, None),
        };
        let (scheme, rest) = match rest.find([':', '/']) {
            Some(i)
                if rest.as_bytes()[i] == b':'
                    && i > 0
                    && rest[..i]
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) =>
            {
                (Some(rest[..i].to_ascii_lowercase()), &rest[i + 1..])
            }
            _ => (None, rest),
        };
        let (authority, path) = match rest.strip_prefix("//") {
            Some(r) => {
                let end = r.find('/').unwrap_or(r.len());
                (Some(r[..end].to_string()), r[end..].to_string())
            }
            None => (None, rest.to_string()),
        };
        Uri {
            scheme,
            authority,
            path,
            query,
            fragment,
        }
    }

    pub(crate) fn fragment(&self) -> Option<&str> {
        self.fragment.as_deref()
    }

    /// The same URI without its fragment.
    pub(crate) fn without_fragment(&self) -> Uri {
        Uri {
            fragment: None,
            ..self.clone()
        }
    }

    /// `reference` resolved against `self` (RFC 3986, section 5.2.2).
    pub(crate) fn resolve(&self, reference: &str) -> Uri {
        let r = Uri::parse(reference);
        if r.scheme.is_some() {
            return Uri {
                path: remove_dot_segments(&r.path),
                ..r
            };
        }
        let mut t = Uri {
            scheme: self.scheme.clone(),
            authority: None,
            path: String::new(),
            query: None,
            fragment: r.fragment.clone(),
        };
        if r.authority.is_some() {
            t.authority = r.authority;
            t.path = remove_dot_segments(&r.path);
            t.query = r.query;
            return t;
        }
        t.authority = self.authority.clone();
        if r.path.is_empty() {
            t.path = self.path.clone();
            t.query = r.query.or_else(|| self.query.clone());
        } else {
            t.path = if r.path.starts_with('/') {
                remove_dot_segments(&r.path)
            } else {
                remove_dot_segments(&merge(self, &r.path))
            };
            t.query = r.query;
        }
        t
    }
}

impl std::fmt::Display for Uri {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(s) = &self.scheme {
            write!(f, "{s}:")?;
        }
        if let Some(a) = &self.authority {
            write!(f, "//{a}")?;
        }
        write!(f, "{}", self.path)?;
        if let Some(q) = &self.query {
            write!(f, "?{q}")?;
        }
        if let Some(fr) = &self.fragment {
            write!(f, "#{fr}")?;
        }
        Ok(())
    }
}

fn merge(base: &Uri, path: &str) -> String {
    if base.authority.is_some() && base.path.is_empty() {
        return format!("/{path}");
    }
    match base.path.rfind('/') {
        Some(i) => format!("{}{}", &base.path[..=i], path),
        None => path.to_string(),
    }
}

fn remove_dot_segments(path: &str) -> String {
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len() - 1;
    let mut out: Vec<&str> = Vec::with_capacity(segments.len());
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 || out.first().is_some_and(|s| !s.is_empty()) {
                    out.pop();
                }
                if i == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    out.join("/")
}

/// Percent-decoding (`%25` → `%`); `None` if the result is not UTF-8.
pub(crate) fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The reference tokens of a JSON pointer (`/a~1b/~0c` → `["a/b", "~c"]`); `None` if it is
/// not a pointer.
pub(crate) fn pointer_tokens(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    Some(
        rest.split('/')
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

/// One reference token escaped for a JSON pointer.
pub(crate) fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3986_examples() {
        let base = Uri::parse("http://a/b/c/d;p?q");
        for (r, want) in [
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g"),
            ("?y", "http://a/b/c/d;p?y"),
            ("#s", "http://a/b/c/d;p?q#s"),
            ("", "http://a/b/c/d;p?q"),
            ("../g", "http://a/b/g"),
            ("../../g", "http://a/g"),
            ("g#s", "http://a/b/c/g#s"),
            ("urn:x:y", "urn:x:y"),
        ] {
            assert_eq!(base.resolve(r).to_string(), want, "{r}");
        }
    }

    #[test]
    fn pointers_and_percent_encoding() {
        assert_eq!(
            pointer_tokens("/a~1b/~0c/0"),
            Some(vec!["a/b".into(), "~c".into(), "0".into()])
        );
        assert_eq!(pointer_tokens(""), Some(vec![]));
        assert_eq!(pointer_tokens("a"), None);
        assert_eq!(percent_decode("a%25b%22c"), Some("a%b\"c".into()));
        assert_eq!(percent_decode("100%"), Some("100%".into()));
        assert_eq!(escape_token("a/b~c"), "a~1b~0c");
    }
}
