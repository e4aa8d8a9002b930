//! Parameter generators: how each value a statement is run with is drawn.
//! A generator yields one value, or several for an IN-list.

use super::prepare::digit_groups;
use crate::driver::{Param, ParamValue};
use rand::rngs::SmallRng;
use rand::Rng;
use std::fmt;
use std::fmt::Write;

/// How many values an IN-list has.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Count {
    /// `--range` (sysbench's `--random-points`).
    Range,
    Fixed(u32),
}

/// How far a range's upper bound lies above its lower bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Span {
    /// `+N`: sysbench's range_covered scripts, N+1 values.
    Range,
    /// `+N-1`: the stock read-only ranges, N values.
    RangeMinus1,
}

/// How a statement parameter is drawn for each execution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gen {
    /// A row id, uniform in [1, rows].
    Id,
    /// A k value, uniform in [1, rows] (the load draws k the same way).
    K,
    /// Always id 1: sysbench's update-one forces a table of one row.
    One,
    /// A row id, zipfian over [1, rows] with exponent `--zipf-exp`.
    ZipfId,
    /// An IN-list of uniform ids (duplicates possible, as in sysbench).
    Ids(Count),
    /// An IN-list of uniform k values.
    Ks(Count),
    /// The hot-points IN-list: always ids rows/2+1 ..= rows/2+N.
    HotIds,
    /// The value drawn just before, plus a span: the upper bound of a BETWEEN.
    Plus(Span),
    /// The first value of the statement run before: the INSERT of read-write
    /// and write-only puts back the id its DELETE removed.
    PrevId,
    /// A new c: ten groups of 11 digits (119 characters), as the load makes.
    C,
    /// A new pad: five groups of 11 digits (59 characters).
    Pad,
}

/// What the generators draw from; fixed for a run.
#[derive(Debug, Clone)]
pub struct Domain {
    pub rows: i32,
    pub range: u32,
    pub zipf: Zipf,
}

impl Domain {
    pub fn new(rows: i32, range: u32, zipf_exp: f64) -> Self {
        Domain { rows, range, zipf: Zipf::new(rows.max(1) as u64, zipf_exp) }
    }
}

impl Count {
    pub fn n(self, range: u32) -> u32 {
        match self {
            Count::Range => range,
            Count::Fixed(n) => n,
        }
    }
}

impl Gen {
    /// How many values (placeholders) this generator fills.
    pub fn width(self, range: u32) -> usize {
        match self {
            Gen::Ids(c) | Gen::Ks(c) => c.n(range) as usize,
            Gen::HotIds => range as usize,
            _ => 1,
        }
    }

    /// Whether `--range` changes what this generator draws.
    pub fn uses_range(self) -> bool {
        matches!(self, Gen::Ids(Count::Range) | Gen::Ks(Count::Range) | Gen::HotIds | Gen::Plus(_))
    }

    /// Appends this generator's values to `out`; `prev` holds the values of
    /// the statement run just before in the same event.
    pub fn draw(self, rng: &mut SmallRng, d: &Domain, prev: &[Value], out: &mut Vec<Value>) {
        let uniform = |rng: &mut SmallRng| Value::Int(rng.gen_range(1..=d.rows));
        match self {
            Gen::Id | Gen::K => out.push(uniform(rng)),
            Gen::One => out.push(Value::Int(1)),
            Gen::ZipfId => out.push(Value::Int(d.zipf.sample(rng) as i32)),
            Gen::Ids(c) | Gen::Ks(c) => out.extend((0..c.n(d.range)).map(|_| uniform(rng))),
            Gen::HotIds => {
                let base = d.rows / 2;
                out.extend((1..=d.range as i32).map(|i| Value::Int(base + i)));
            }
            Gen::Plus(span) => {
                let Some(&Value::Int(lo)) = out.last() else { panic!("Plus must follow an integer generator") };
                let n = d.range as i32;
                out.push(Value::Int(lo.saturating_add(if span == Span::Range { n } else { n - 1 })));
            }
            Gen::PrevId => out.push(*prev.first().expect("PrevId needs a statement before it")),
            Gen::C | Gen::Pad => {
                let mut t = Text::default();
                digit_groups(rng, if self == Gen::C { 10 } else { 5 }, |b| t.push(b));
                out.push(Value::Text(t));
            }
        }
    }
}

/// A bound parameter value. Plain data (no heap), so drawing values never allocates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i32),
    Text(Text),
}

/// The longest text value: c is CHAR(120).
pub const TEXT_CAP: usize = 120;

/// A short string kept inline.
#[derive(Clone, Copy, PartialEq)]
pub struct Text {
    len: u8,
    bytes: [u8; TEXT_CAP],
}

impl Default for Text {
    fn default() -> Self {
        Text { len: 0, bytes: [0; TEXT_CAP] }
    }
}

impl Text {
    /// Appends one ASCII byte; panics past TEXT_CAP (the generators stay below it).
    #[inline]
    pub fn push(&mut self, b: u8) {
        assert!(b.is_ascii(), "Text holds ASCII only");
        self.bytes[self.len as usize] = b;
        self.len += 1;
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len as usize]).expect("ASCII only")
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        let mut t = Text::default();
        s.bytes().for_each(|b| t.push(b));
        t
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Value {
    /// The value as an SQL literal, for runs without prepared statements.
    pub fn write_literal(&self, out: &mut String) {
        match self {
            Value::Int(v) => write!(out, "{v}").expect("writing to a String"),
            Value::Text(s) => {
                out.push('\'');
                for c in s.as_str().chars() {
                    if c == '\'' {
                        out.push('\'');
                    }
                    out.push(c);
                }
                out.push('\'');
            }
        }
    }
}

impl Param for Value {
    #[inline]
    fn value(&self) -> ParamValue<'_> {
        match self {
            Value::Int(v) => ParamValue::Int(*v as i64),
            Value::Text(s) => ParamValue::Text(s.as_bytes()),
        }
    }
}

/// Zipfian integers over [1, n]: P(k) proportional to k^-s. Uses
/// rejection-inversion (Hörmann and Derflinger, 1996): invert the integral H
/// of the continuous hat h(x) = x^-s, round to the nearest integer k, and
/// accept when the draw falls in the part of k's cell whose area is h(k).
/// Constant memory and time for any n, which a table-based sampler is not.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: f64,
    s: f64,
    /// H(1.5) - h(1): the low end of the draw, so k=1 gets area h(1) = 1.
    h_lo: f64,
    /// H(n + 0.5): the high end.
    h_hi: f64,
    /// Draws with k - x below this are accepted without evaluating H (a squeeze).
    squeeze: f64,
}

impl Zipf {
    /// `s` must be positive and finite (checked by the caller's option validation).
    pub fn new(n: u64, s: f64) -> Self {
        let mut z = Zipf { n: n as f64, s, h_lo: 0.0, h_hi: 0.0, squeeze: 0.0 };
        z.h_lo = z.big_h(1.5) - 1.0;
        z.h_hi = z.big_h(n as f64 + 0.5);
        z.squeeze = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        z
    }

    pub fn sample(&self, rng: &mut SmallRng) -> u64 {
        loop {
            let u = self.h_hi + rng.gen::<f64>() * (self.h_lo - self.h_hi);
            let x = self.big_h_inv(u);
            let k = x.round().clamp(1.0, self.n);
            if k - x <= self.squeeze || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// H(x) = (x^(1-s) - 1) / (1-s), written so that s = 1 (where H = ln x) is exact.
    fn big_h(&self, x: f64) -> f64 {
        let lx = x.ln();
        expm1_over_x((1.0 - self.s) * lx) * lx
    }

    fn big_h_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.s)).max(-1.0);
        (ln1p_over_x(t) * y).exp()
    }
}

/// (e^x - 1) / x, continuous at 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x / 2.0 * (1.0 + x / 3.0)
    }
}

/// ln(1 + x) / x, continuous at 0.
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x / 2.0 * (1.0 - 2.0 * x / 3.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Chi-square critical value for 99 degrees of freedom at p = 0.001.
    const CHI2_99_P001: f64 = 148.23;

    fn chi_square(observed: &[u64], expected_p: &[f64]) -> f64 {
        let total: u64 = observed.iter().sum();
        observed
            .iter()
            .zip(expected_p)
            .map(|(&o, &p)| {
                let e = p * total as f64;
                (o as f64 - e).powi(2) / e
            })
            .sum()
    }

    fn zipf_p(n: usize, s: f64) -> Vec<f64> {
        let w: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-s)).collect();
        let sum: f64 = w.iter().sum();
        w.iter().map(|x| x / sum).collect()
    }

    fn draw_counts(gen: Gen, d: &Domain, draws: usize, seed: u64) -> Vec<u64> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut counts = vec![0u64; d.rows as usize];
        let mut out = Vec::new();
        for _ in 0..draws {
            out.clear();
            gen.draw(&mut rng, d, &[], &mut out);
            let Value::Int(v) = out[0] else { unreachable!() };
            assert!((1..=d.rows).contains(&v), "{v} outside [1, {}]", d.rows);
            counts[v as usize - 1] += 1;
        }
        counts
    }

    #[test]
    fn zipf_fits_exact_probabilities() {
        let d = Domain::new(100, 100, 0.8);
        let counts = draw_counts(Gen::ZipfId, &d, 200_000, 42);
        let chi2 = chi_square(&counts, &zipf_p(100, 0.8));
        assert!(chi2 < CHI2_99_P001, "chi2 = {chi2}");
        // The test has power: the same draws are far from zipf(1.0) and from uniform.
        assert!(chi_square(&counts, &zipf_p(100, 1.0)) > 10.0 * CHI2_99_P001);
        assert!(chi_square(&counts, &[0.01; 100]) > 10.0 * CHI2_99_P001);
    }

    #[test]
    fn zipf_handles_other_exponents_and_edges() {
        for s in [0.5, 1.0, 1.5] {
            let d = Domain::new(100, 100, s);
            let chi2 = chi_square(&draw_counts(Gen::ZipfId, &d, 100_000, 7), &zipf_p(100, s));
            assert!(chi2 < CHI2_99_P001, "s = {s}: chi2 = {chi2}");
        }
        let mut rng = SmallRng::seed_from_u64(1);
        assert!((0..1000).all(|_| Zipf::new(1, 0.8).sample(&mut rng) == 1));
        let big = Zipf::new(i32::MAX as u64, 0.8);
        assert!((0..10_000).all(|_| (1..=i32::MAX as u64).contains(&big.sample(&mut rng))));
    }

    #[test]
    fn uniform_ids_fit() {
        let d = Domain::new(100, 100, 0.8);
        for g in [Gen::Id, Gen::K] {
            let chi2 = chi_square(&draw_counts(g, &d, 200_000, 3), &[0.01; 100]);
            assert!(chi2 < CHI2_99_P001, "{g:?}: chi2 = {chi2}");
        }
    }

    #[test]
    fn hot_points_are_always_the_same_window() {
        let d = Domain::new(10_000, 5, 0.8);
        let mut rng = SmallRng::seed_from_u64(9);
        let want: Vec<Value> = (5001..=5005).map(Value::Int).collect();
        for _ in 0..100 {
            let mut out = Vec::new();
            Gen::HotIds.draw(&mut rng, &d, &[], &mut out);
            assert_eq!(out, want);
        }
    }

    #[test]
    fn lists_ranges_and_reuse() {
        let d = Domain::new(1000, 10, 0.8);
        let mut rng = SmallRng::seed_from_u64(5);
        let mut out = Vec::new();
        Gen::Ids(Count::Range).draw(&mut rng, &d, &[], &mut out);
        Gen::Ks(Count::Fixed(3)).draw(&mut rng, &d, &[], &mut out);
        assert_eq!(out.len(), 13);
        out.clear();
        Gen::Id.draw(&mut rng, &d, &[], &mut out);
        Gen::Plus(Span::Range).draw(&mut rng, &d, &[], &mut out);
        Gen::Plus(Span::RangeMinus1).draw(&mut rng, &d, &[], &mut out);
        let Value::Int(lo) = out[0] else { unreachable!() };
        assert_eq!(out[1..], [Value::Int(lo + 10), Value::Int(lo + 19)]);
        let prev = [Value::Int(77), Value::Int(1)];
        out.clear();
        Gen::PrevId.draw(&mut rng, &d, &prev, &mut out);
        Gen::C.draw(&mut rng, &d, &prev, &mut out);
        Gen::Pad.draw(&mut rng, &d, &prev, &mut out);
        assert_eq!(out[0], Value::Int(77));
        let (Value::Text(c), Value::Text(pad)) = (&out[1], &out[2]) else { unreachable!() };
        assert_eq!((c.as_str().len(), pad.as_str().len()), (119, 59));
    }

    #[test]
    fn literals_quote_text() {
        let mut s = String::new();
        Value::Int(-3).write_literal(&mut s);
        s.push(' ');
        Value::Text("a'b".into()).write_literal(&mut s);
        assert_eq!(s, "-3 'a''b'");
    }
}
