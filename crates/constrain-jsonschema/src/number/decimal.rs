//! Exact decimal numbers for schema bounds and `multipleOf`, of any size.

use std::cmp::Ordering;

/// `±digits × 10^exp`, normalized: `digits` has no leading or trailing zeros; zero has no
/// digits and is never negative.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    exp: i64,
}

impl Decimal {
    pub(crate) fn zero() -> Decimal {
        Decimal {
            negative: false,
            digits: Vec::new(),
            exp: 0,
        }
    }

    /// The value of a JSON number, exactly as written for integers and as the shortest
    /// round-tripping decimal for floating-point ones.
    pub(crate) fn from_json(n: &serde_json::Number) -> Option<Decimal> {
        if let Some(i) = n.as_i64() {
            return Decimal::parse(&i.to_string());
        }
        if let Some(u) = n.as_u64() {
            return Decimal::parse(&u.to_string());
        }
        let f = n.as_f64()?;
        if !f.is_finite() {
            return None;
        }
        Decimal::parse(&format!("{f:e}"))
    }

    /// Parses JSON number syntax (also accepting a leading `+` in the exponent).
    pub(crate) fn parse(text: &str) -> Option<Decimal> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (int, frac) = match mantissa.find('.') {
            Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
            None => (mantissa, ""),
        };
        if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
        let exp = exp.checked_sub(frac.len() as i64)?;
        Some(Decimal::normalized(negative, digits, exp))
    }

    fn normalized(negative: bool, mut digits: Vec<u8>, mut exp: i64) -> Decimal {
        let lead = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..lead);
        while digits.last() == Some(&0) {
            digits.pop();
            exp += 1;
        }
        if digits.is_empty() {
            return Decimal::zero();
        }
        Decimal {
            negative,
            digits,
            exp,
        }
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    pub(crate) fn is_negative(&self) -> bool {
        self.negative
    }

    pub(crate) fn is_integer(&self) -> bool {
        self.exp >= 0
    }

    pub(crate) fn abs(&self) -> Decimal {
        Decimal {
            negative: false,
            ..self.clone()
        }
    }

    pub(crate) fn neg(&self) -> Decimal {
        if self.is_zero() {
            return self.clone();
        }
        Decimal {
            negative: !self.negative,
            ..self.clone()
        }
    }

    /// Number of digits before the decimal point (0 for magnitudes below 1).
    fn int_len(&self) -> i64 {
        if self.is_zero() {
            0
        } else {
            self.digits.len() as i64 + self.exp
        }
    }

    /// Digit at decimal position `p` (0 = units, 1 = tens, -1 = tenths...).
    fn digit_at(&self, p: i64) -> u8 {
        // digits[i] has position exp + (len - 1 - i).
        let i = self.exp + self.digits.len() as i64 - 1 - p;
        if i < 0 || i >= self.digits.len() as i64 {
            0
        } else {
            self.digits[i as usize]
        }
    }

    /// The integer part's digits of the magnitude (`"0"` below 1) and the fraction's digits
    /// (no trailing zeros).
    pub(crate) fn plain_parts(&self) -> (String, String) {
        if self.is_zero() {
            return ("0".into(), String::new());
        }
        let n = self.int_len();
        let int: String = if n <= 0 {
            "0".into()
        } else {
            (0..n)
                .rev()
                .map(|p| char::from(b'0' + self.digit_at(p)))
                .collect()
        };
        let lowest = self.exp.min(0);
        let frac: String = (lowest..0)
            .rev()
            .map(|p| char::from(b'0' + self.digit_at(p)))
            .collect();
        (int, frac)
    }

    /// The smallest integer not below `self`.
    pub(crate) fn ceil(&self) -> Decimal {
        if self.is_integer() {
            return self.clone();
        }
        let t = self.truncate();
        if self.negative {
            t
        } else {
            t.succ()
        }
    }

    /// The largest integer not above `self`.
    pub(crate) fn floor(&self) -> Decimal {
        if self.is_integer() {
            return self.clone();
        }
        let t = self.truncate();
        if self.negative {
            t.pred()
        } else {
            t
        }
    }

    fn truncate(&self) -> Decimal {
        let (int, _) = self.plain_parts();
        let d = Decimal::parse(&int).unwrap_or_else(Decimal::zero);
        if self.negative {
            d.neg()
        } else {
            d
        }
    }

    /// `self + 1`, for an integer.
    pub(crate) fn succ(&self) -> Decimal {
        if self.negative {
            self.abs().magnitude_minus_one().neg()
        } else {
            self.magnitude_plus_one()
        }
    }

    /// `self - 1`, for an integer.
    pub(crate) fn pred(&self) -> Decimal {
        if self.negative || self.is_zero() {
            self.abs().magnitude_plus_one().neg()
        } else {
            self.magnitude_minus_one()
        }
    }

    fn int_digits(&self) -> Vec<u8> {
        self.plain_parts().0.bytes().map(|b| b - b'0').collect()
    }

    /// `|self| + 1` for an integer.
    fn magnitude_plus_one(&self) -> Decimal {
        let mut digits = self.int_digits();
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, 1);
                break;
            }
            i -= 1;
            if digits[i] == 9 {
                digits[i] = 0;
            } else {
                digits[i] += 1;
                break;
            }
        }
        Decimal::normalized(false, digits, 0)
    }

    /// `|self| - 1` for a non-zero integer.
    fn magnitude_minus_one(&self) -> Decimal {
        let mut digits = self.int_digits();
        let mut i = digits.len();
        while i > 0 {
            i -= 1;
            if digits[i] == 0 {
                digits[i] = 9;
            } else {
                digits[i] -= 1;
                break;
            }
        }
        Decimal::normalized(false, digits, 0)
    }

    /// `self × 10^k`.
    pub(crate) fn shift(&self, k: i64) -> Decimal {
        if self.is_zero() {
            return self.clone();
        }
        Decimal {
            exp: self.exp + k,
            ..self.clone()
        }
    }

    /// The exponent of the lowest non-zero digit (0 for zero).
    pub(crate) fn scale(&self) -> i64 {
        self.exp
    }

    /// The magnitude as an integer, when it is one that fits.
    pub(crate) fn to_u128(&self) -> Option<u128> {
        if !self.is_integer() || self.negative {
            return None;
        }
        let mut v: u128 = 0;
        for &d in &self.digits {
            v = v.checked_mul(10)?.checked_add(u128::from(d))?;
        }
        for _ in 0..self.exp {
            v = v.checked_mul(10)?;
        }
        Some(v)
    }

    /// The remainder of the integer magnitude divided by `m`.
    pub(crate) fn magnitude_mod(&self, m: u128) -> Option<u128> {
        if !self.is_integer() || m == 0 {
            return None;
        }
        let mut r: u128 = 0;
        for &d in &self.digits {
            r = (r.checked_mul(10)? + u128::from(d)) % m;
        }
        for _ in 0..self.exp {
            r = r.checked_mul(10)? % m;
        }
        Some(r)
    }

    /// Whether `self` is an integer multiple of `m` (`m > 0`).
    pub(crate) fn is_multiple_of(&self, m: &Decimal) -> Option<bool> {
        if self.is_zero() {
            return Some(true);
        }
        // Scale both so that m is an integer: self / m integer ⇔ self·10^s / m·10^s integer.
        let s = (-m.exp).max(0);
        let x = self.abs().shift(s);
        let y = m.abs().shift(s);
        if !x.is_integer() {
            return Some(false);
        }
        let y = y.to_u128()?;
        Some(x.magnitude_mod(y)? == 0)
    }
}

/// Numeric order (the derived `Ord` of [`Decimal`] is only structural).
pub(crate) fn compare(a: &Decimal, b: &Decimal) -> Ordering {
    match (a.negative, b.negative) {
        (false, true) => {
            return if a.is_zero() && b.is_zero() {
                Ordering::Equal
            } else {
                Ordering::Greater
            }
        }
        (true, false) => return Ordering::Less,
        _ => {}
    }
    let mag = compare_magnitude(a, b);
    if a.negative {
        mag.reverse()
    } else {
        mag
    }
}

fn compare_magnitude(a: &Decimal, b: &Decimal) -> Ordering {
    match (a.is_zero(), b.is_zero()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    let (la, lb) = (a.int_len(), b.int_len());
    if la != lb {
        return la.cmp(&lb);
    }
    let top = la.max(lb) - 1;
    let bottom = a.exp.min(b.exp);
    let mut p = top;
    while p >= bottom {
        let o = a.digit_at(p).cmp(&b.digit_at(p));
        if o != Ordering::Equal {
            return o;
        }
        p -= 1;
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).expect(s)
    }

    #[test]
    fn parse_and_normalize() {
        assert_eq!(d("1.50"), d("15e-1"));
        assert_eq!(d("-0.0"), Decimal::zero());
        assert_eq!(d("100").plain_parts(), ("100".into(), "".into()));
        assert_eq!(d("0.025").plain_parts(), ("0".into(), "025".into()));
        assert_eq!(d("12.5e1").plain_parts(), ("125".into(), "".into()));
        assert!(d("1e2").is_integer() && !d("1.5").is_integer());
    }

    #[test]
    fn ordering_by_value() {
        assert_eq!(compare(&d("2"), &d("10")), Ordering::Less);
        assert_eq!(compare(&d("-2"), &d("-10")), Ordering::Greater);
        assert_eq!(compare(&d("0.5"), &d("0.45")), Ordering::Greater);
        assert_eq!(compare(&d("1.0"), &d("1")), Ordering::Equal);
        assert_eq!(compare(&d("-0.1"), &d("0")), Ordering::Less);
    }

    #[test]
    fn rounding() {
        assert_eq!(d("1.5").ceil(), d("2"));
        assert_eq!(d("1.5").floor(), d("1"));
        assert_eq!(d("-1.5").ceil(), d("-1"));
        assert_eq!(d("-1.5").floor(), d("-2"));
        assert_eq!(d("-0.5").ceil(), Decimal::zero());
        assert_eq!(d("9.9").ceil(), d("10"));
        assert_eq!(d("3").floor(), d("3"));
        assert_eq!(d("-1").succ(), Decimal::zero());
        assert_eq!(d("0").pred(), d("-1"));
        assert_eq!(d("100").pred(), d("99"));
        assert_eq!(d("-99").pred(), d("-100"));
    }

    #[test]
    fn multiples() {
        assert_eq!(d("7.5").is_multiple_of(&d("2.5")), Some(true));
        assert_eq!(d("7.6").is_multiple_of(&d("2.5")), Some(false));
        assert_eq!(d("0.0075").is_multiple_of(&d("0.0001")), Some(true));
        assert_eq!(d("1e30").is_multiple_of(&d("3")), Some(false));
        assert_eq!(
            Decimal::from_json(&serde_json::Number::from_f64(0.1).expect("finite")),
            Some(d("0.1"))
        );
    }
}
