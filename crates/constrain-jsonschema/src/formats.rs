//! `format` values as regular languages, following the RFCs the specification cites.
//!
//! Where the exact language is not regular or would be huge, a *subset* is used, so the grammar
//! stays sound: leap seconds only at `23:59:60` in UTC (`Z` or a zero offset), host names of at
//! most eight labels of at most 30 characters (which keeps them within 253 characters), e-mail
//! addresses with a dot-atom local part (no quoted local parts).

use crate::re::{ecma, narrow_length, Re};

const H16: &str = "[0-9A-Fa-f]{1,4}";
const DEC_OCTET: &str = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";

fn ipv4() -> String {
    format!("{DEC_OCTET}(\\.{DEC_OCTET}){{3}}")
}

fn ipv6() -> String {
    let ls32 = format!("({H16}:{H16}|{})", ipv4());
    let h = |n: usize| format!("({H16}:){{{n}}}");
    let upto = |n: usize| format!("(({H16}:){{0,{n}}}{H16})?");
    let forms = [
        format!("{}{ls32}", h(6)),
        format!("::{}{ls32}", h(5)),
        format!("({H16})?::{}{ls32}", h(4)),
        format!("{}::{}{ls32}", upto(1), h(3)),
        format!("{}::{}{ls32}", upto(2), h(2)),
        format!("{}::{H16}:{ls32}", upto(3)),
        format!("{}::{ls32}", upto(4)),
        format!("{}::{H16}", upto(5)),
        format!("{}::", upto(6)),
    ];
    format!("({})", forms.join("|"))
}

fn date() -> String {
    let leap_years = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)";
    format!(
        "([0-9]{{4}}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))|{leap_years}-02-29)"
    )
}

fn time() -> String {
    let hm = "([01][0-9]|2[0-3]):[0-5][0-9]";
    let offset = format!("([zZ]|[+-]{hm})");
    format!("({hm}:[0-5][0-9](\\.[0-9]+)?{offset}|23:59:60(\\.[0-9]+)?([zZ]|[+-]00:00))")
}

fn hostname() -> String {
    let label = "[A-Za-z0-9]([A-Za-z0-9-]{0,28}[A-Za-z0-9])?";
    format!("{label}(\\.{label}){{0,7}}")
}

/// Internationalized host names, restricted to ASCII labels that are not A-labels (`xn--`,
/// punycode): those are valid without IDNA processing.
fn idn_hostname() -> String {
    let an = "[A-Za-z0-9]";
    let mid = "[A-Za-z0-9-]";
    // A tail of 1..=n characters that ends with a letter or digit.
    let tail = |n: usize, first: &str| format!("({an}|{first}{mid}{{0,{}}}{an})", n - 2);
    let label = [
        an.to_string(),
        format!("[A-WYZa-wyz0-9]{mid}{{0,28}}{an}"),
        format!("[xX]{}", tail(29, "[A-MO-Za-mo-z0-9-]")),
        format!("[xX][nN]{}?", tail(28, "[A-Za-z0-9]")),
        format!("[xX][nN]-{}", tail(27, "[A-Za-z0-9]")),
    ]
    .join("|");
    format!("({label})(\\.({label})){{0,7}}")
}

fn uri_template() -> String {
    let pct = "%[0-9A-Fa-f]{2}";
    let literal = format!("([\\x21\\x23\\x24\\x26\\x28-\\x3B\\x3D\\x3F-\\x5B\\x5D\\x5F\\x61-\\x7A\\x7E\\u00A0-\\uD7FF\\uE000-\\uFFFD]|{pct})");
    let varchar = format!("([A-Za-z0-9_]|{pct})");
    let varname = format!("{varchar}(\\.?{varchar})*");
    let varspec = format!("{varname}(:[1-9][0-9]{{0,3}}|\\*)?");
    let expression = format!("\\{{[+#./;?&=,!@|]?{varspec}(,{varspec})*\\}}");
    format!("({literal}|{expression})*")
}

/// RFC 3986 pieces shared by `uri`, `uri-reference`, `iri` and `iri-reference`.
fn uri_parts(iri: bool) -> (String, String, String, String) {
    let ucs = if iri {
        "\\u00A0-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFEF"
    } else {
        ""
    };
    let unreserved = format!("\\-A-Za-z0-9._~{ucs}");
    let sub = "!$&'()*+,;=";
    let pct = "%[0-9A-Fa-f]{2}";
    let pchar = format!("([{unreserved}{sub}:@]|{pct})");
    let query = format!("([{unreserved}{sub}:@/?]|{pct})*");
    let ip_literal = format!(
        "\\[({}|[vV][0-9A-Fa-f]+\\.[{unreserved}{sub}:]+)\\]",
        ipv6()
    );
    let reg_name = format!("([{unreserved}{sub}]|{pct})*");
    let host = format!("({ip_literal}|{}|{reg_name})", ipv4());
    let userinfo = format!("([{unreserved}{sub}:]|{pct})*");
    let authority = format!("({userinfo}@)?{host}(:[0-9]*)?");
    let segment = format!("{pchar}*");
    let segment_nz = format!("{pchar}+");
    let path_abempty = format!("(/{segment})*");
    let path_absolute = format!("/({segment_nz}(/{segment})*)?");
    let path_rootless = format!("{segment_nz}(/{segment})*");
    let hier = format!("(//{authority}{path_abempty}|{path_absolute}|{path_rootless})?");
    let segment_nz_nc = format!("([{unreserved}{sub}@]|{pct})+");
    let path_noscheme = format!("{segment_nz_nc}(/{segment})*");
    let relative = format!("(//{authority}{path_abempty}|{path_absolute}|{path_noscheme})?");
    let tail = format!("(\\?{query})?(#{query})?");
    let scheme = "[A-Za-z][A-Za-z0-9+.-]*".to_string();
    (scheme, hier, relative, tail)
}

fn uri(iri: bool) -> String {
    let (scheme, hier, _, tail) = uri_parts(iri);
    format!("{scheme}:{hier}{tail}")
}

fn uri_reference(iri: bool) -> String {
    let (scheme, hier, relative, tail) = uri_parts(iri);
    format!("({scheme}:{hier}|{relative}){tail}")
}

/// The local part of an address: a dot-atom (no quoted strings).
fn email_local() -> String {
    let atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
    format!("{atext}+(\\.{atext}+)*")
}

fn email() -> String {
    format!("{}@({}|\\[{}\\])", email_local(), hostname(), ipv4())
}

/// An address whose local part is at most 64 octets (RFC 5321 section 4.5.3.1.1; all its
/// characters are ASCII), `domain` after the `@`. The exact language of dot-atoms that short
/// does not fit an expression budget, so the length is shared out among the atoms (a subset:
/// every address of one atom, or of several short ones, is kept).
fn email_re(domain: &str) -> Option<Re> {
    let local = ecma::search_language(&format!("^(?:{})$", email_local())).ok()?;
    let local = narrow_length(&local, 1, 64);
    let domain = ecma::search_language(&format!("^(?:{domain})$")).ok()?;
    Some(Re::concat(vec![local, Re::literal("@"), domain]))
}

fn duration() -> String {
    let n = "[0-9]+";
    let time = format!("T({n}H({n}M({n}S)?)?|{n}M({n}S)?|{n}S)");
    let date = format!("({n}Y({n}M({n}D)?)?|{n}M({n}D)?|{n}D)");
    format!("P({date}({time})?|{time}|{n}W)")
}

/// The ECMA-262 pattern (anchored) of a known format.
fn pattern(name: &str) -> Option<String> {
    Some(match name {
        "date" => date(),
        "time" => time(),
        "date-time" => format!("{}[tT]{}", date(), time()),
        "duration" => duration(),
        "email" => email(),
        "hostname" => hostname(),
        "idn-hostname" => idn_hostname(),
        "idn-email" => format!("{}@{}", email_local(), idn_hostname()),
        "uri-template" => uri_template(),
        "ipv4" => ipv4(),
        "ipv6" => ipv6(),
        "uuid" => {
            "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}".into()
        }
        "uri" => uri(false),
        "uri-reference" => uri_reference(false),
        "iri" => uri(true),
        "iri-reference" => uri_reference(true),
        "json-pointer" => "(/([^~/]|~[01])*)*".into(),
        "relative-json-pointer" => "(0|[1-9][0-9]*)(#|(/([^~/]|~[01])*)*)".into(),
        _ => return None,
    })
}

/// Formats the specification defines that are not regular languages.
pub(crate) const NOT_REGULAR: &[&str] = &["regex"];

/// For the formats enforced on a subset of their language (see the module documentation), a
/// superset: strings outside it are surely not of the format, strings between the two are
/// undecided. The complement of such a format cannot be taken.
pub(crate) fn superset_re(name: &str) -> Option<Re> {
    let hm = "([01][0-9]|2[0-3]):[0-5][0-9]";
    let time = format!("{hm}:([0-5][0-9]|60)(\\.[0-9]+)?([zZ]|[+-]{hm})");
    let p = match name {
        "time" => time,
        "date-time" => format!("{}[tT]{time}", date()),
        "email" | "idn-email" => ".+@.+".to_string(),
        "hostname" | "idn-hostname" => "\\S+".to_string(),
        _ => return None,
    };
    ecma::search_language(&format!("^(?:{p})$")).ok()
}

/// The decoded-string language of format `name`, if it is one this compiler enforces.
pub(crate) fn format_re(name: &str) -> Option<Re> {
    match name {
        "email" => email_re(&format!("{}|\\[{}\\]", hostname(), ipv4())),
        "idn-email" => email_re(&idn_hostname()),
        _ => ecma::search_language(&format!("^(?:{})$", pattern(name)?)).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, good: &[&str], bad: &[&str]) {
        let re = format_re(name).expect("known format");
        let m = regex_automata::meta::Regex::builder()
            .build_from_hir(&regex_syntax::hir::Hir::concat(vec![
                regex_syntax::hir::Hir::look(regex_syntax::hir::Look::Start),
                re.to_hir(),
                regex_syntax::hir::Hir::look(regex_syntax::hir::Look::End),
            ]))
            .expect("builds");
        for g in good {
            assert!(m.is_match(g), "{name}: {g} should match");
        }
        for b in bad {
            assert!(!m.is_match(b), "{name}: {b} should not match");
        }
    }

    #[test]
    fn dates_and_times() {
        check(
            "date",
            &["2024-02-29", "2000-02-29", "1999-12-31", "2023-04-30"],
            &[
                "2023-02-29",
                "1900-02-29",
                "2023-04-31",
                "2023-13-01",
                "2023-1-01",
                "20230101",
            ],
        );
        check(
            "time",
            &[
                "12:00:00Z",
                "23:59:60Z",
                "08:30:06.283185+01:00",
                "00:00:00z",
            ],
            &[
                "24:00:00Z",
                "12:00:00",
                "12:60:00Z",
                "22:59:60Z",
                "12:00:00+1:00",
            ],
        );
        check(
            "date-time",
            &["2023-01-01T12:00:00Z", "2023-01-01t12:00:00.5-05:30"],
            &["2023-01-01 12:00:00Z", "2023-01-01T12:00:00"],
        );
        check(
            "duration",
            &["P1Y2M3DT4H5M6S", "PT1S", "P4W", "P1D"],
            &["P", "PT", "P1S", "P1W2D", "1Y"],
        );
    }

    #[test]
    fn network_names() {
        check(
            "ipv4",
            &["192.168.0.1", "0.0.0.0", "255.255.255.255"],
            &["256.1.1.1", "01.1.1.1", "1.1.1", "1.1.1.1.1"],
        );
        check(
            "ipv6",
            &[
                "::1",
                "::",
                "2001:db8::8a2e:370:7334",
                "1:2:3:4:5:6:7:8",
                "::ffff:192.168.0.1",
                "1::",
            ],
            &["1:2:3:4:5:6:7:8:9", "12345::", "1:::2", ":1", "1::2::3"],
        );
        check(
            "hostname",
            &["example.com", "a-b.c", "localhost"],
            &["-a.com", "a..b", "a_b.com", ""],
        );
        let local_64 = format!("{}@example.com", "a".repeat(64));
        let local_65 = format!("{}@example.com", "a".repeat(65));
        check(
            "email",
            &[
                "joe.bloggs@example.com",
                "a+b@x.y",
                "first.middle.last@example.com",
                &local_64,
            ],
            &["joe", "@example.com", "a@", "a..b@x.com", &local_65],
        );
        check("idn-email", &[&local_64], &[&local_65]);
        check(
            "idn-hostname",
            &["example.com", "a-b.c", "xn.com", "xna", "x-n--a.b", "xn-a"],
            &["xn--abc.com", "a.XN--b", "-a.com"],
        );
        check("idn-email", &["joe@example.com"], &["joe@xn--x.com", "joe"]);
        check(
            "uri-template",
            &[
                "http://example.com/{id}",
                "/users{?q,limit}",
                "{+path:10}/here",
                "plain",
            ],
            &["{", "{a b}", "}{"],
        );
        check(
            "uuid",
            &["2eb8aa08-aa98-11ea-b4aa-73b441d16380"],
            &[
                "2eb8aa08-aa98-11ea-b4aa-73b441d1638",
                "2eb8aa08aa9811eab4aa73b441d16380",
            ],
        );
    }

    #[test]
    fn uris_and_pointers() {
        check(
            "uri",
            &[
                "http://example.com/a?b=c#d",
                "urn:isbn:0451450523",
                "mailto:x@y.z",
                "http://[::1]:80/",
            ],
            &[
                "//example.com",
                "/relative",
                "http://exa mple.com",
                "1http://x",
            ],
        );
        check(
            "uri-reference",
            &["/relative", "#frag", "", "../x?y", "http://e.com"],
            &["\\\\windows", "a b"],
        );
        check("json-pointer", &["", "/a~1b/0", "/"], &["a", "/~2"]);
        check(
            "relative-json-pointer",
            &["0", "1/a", "2#"],
            &["-1", "01", "/a"],
        );
    }
}
