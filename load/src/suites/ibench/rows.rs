//! Row generation (methodology §2.2): random column values, the data string
//! with its random suffix, and the multi-row INSERT text written into a
//! reused buffer.

use base64::Engine;
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

pub const CASHREGISTERS: u32 = 1_000;
pub const PRODUCTS: u32 = 10_000;
pub const CUSTOMERS: u32 = 100_000;
pub const MAX_PRICE: u32 = 500;
pub const DATA_LEN_MIN: usize = 10;
pub const DATA_LEN_MAX: usize = 20;
/// iibench's data_random_pct.
pub const DATA_RANDOM_PCT: usize = 50;
/// The base64 buffer the random part of `data` is sliced from.
pub const FILLER_LEN: usize = 4 << 20;

/// `len` characters of base64 text from random bytes; shared by all clients
/// (read-only), made once per step from the seed.
pub fn filler(seed: u64, len: usize) -> Arc<str> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0xF11E_5EED);
    let mut raw = vec![0u8; len.div_ceil(4) * 3];
    rng.fill_bytes(&mut raw);
    let mut text = base64::engine::general_purpose::STANDARD.encode(&raw);
    text.truncate(len);
    text.into()
}

/// How many trailing characters of a data value of length `len` are random:
/// int(len × 0.75 × data_random_pct / 100), as iibench computes it.
pub fn random_len(len: usize) -> usize {
    len * 3 * DATA_RANDOM_PCT / 400
}

/// One client's row source. Deterministic given its seed (apart from the timestamp).
pub struct RowGen {
    rng: SmallRng,
    filler: Arc<str>,
    /// The second `stamp` was made for, so the local time is formatted once per second.
    stamp_sec: i64,
    stamp: String,
    /// Write the price rounded to an integer instead of with two decimals.
    whole_price: bool,
}

impl RowGen {
    pub fn new(seed: u64, filler: Arc<str>) -> RowGen {
        assert!(filler.len() > DATA_LEN_MAX && filler.is_ascii(), "the filler is ASCII, longer than a value");
        RowGen {
            rng: SmallRng::seed_from_u64(seed),
            filler,
            stamp_sec: i64::MIN,
            stamp: String::new(),
            whole_price: false,
        }
    }

    /// Writes each price as the integer an INT column that rounds would store (12.50 as 13), for an
    /// engine that keeps a decimal in an INT column. The random values drawn stay the same.
    pub fn whole_price(mut self, yes: bool) -> RowGen {
        self.whole_price = yes;
        self
    }

    /// Appends one data value: L uniform in [10, 20], 'a' then random_len(L) characters of the filler.
    pub fn push_data(&mut self, out: &mut String) {
        let len = self.rng.gen_range(DATA_LEN_MIN..=DATA_LEN_MAX);
        let random = random_len(len);
        for _ in 0..len - random {
            out.push('a');
        }
        let at = self.rng.gen_range(0..=self.filler.len() - random);
        // ASCII, so every index is a char boundary.
        out.push_str(&self.filler[at..at + random]);
    }

    /// Writes a whole INSERT of `rows` rows into `out` (cleared first), each row stamped with the local
    /// time of `unix_sec`. `prefix` is sql::insert_prefix of the table.
    pub fn write_insert(&mut self, prefix: &str, rows: u64, unix_sec: i64, out: &mut String) {
        if unix_sec != self.stamp_sec {
            self.stamp = local_stamp(unix_sec);
            self.stamp_sec = unix_sec;
        }
        out.clear();
        out.push_str(prefix);
        for i in 0..rows {
            if i > 0 {
                out.push(',');
            }
            out.push_str("('");
            out.push_str(&self.stamp);
            out.push_str("',");
            push_uint(out, self.rng.gen_range(0..CASHREGISTERS));
            out.push(',');
            push_uint(out, self.rng.gen_range(0..CUSTOMERS));
            out.push(',');
            push_uint(out, self.rng.gen_range(0..PRODUCTS));
            out.push(',');
            // Uniform in [0, 500) with two decimals; the INT column rounds it on assignment.
            let cents = self.rng.gen_range(0..MAX_PRICE * 100);
            if self.whole_price {
                // Rounded half away from zero, as Postgres rounds a numeric into an integer.
                push_uint(out, (cents + 50) / 100);
            } else {
                push_uint(out, cents / 100);
                out.push('.');
                out.push(char::from(b'0' + (cents % 100 / 10) as u8));
                out.push(char::from(b'0' + (cents % 10) as u8));
            }
            out.push_str(",'");
            self.push_data(out);
            out.push_str("')");
        }
    }
}

/// Seconds since the epoch, now.
pub fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// Decimal digits without going through fmt (this is the insert path's hot loop).
#[inline]
fn push_uint(out: &mut String, mut v: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        out.push(char::from(d));
    }
}

/// `YYYY-MM-DD HH:MM:SS` in the local time zone, as iibench stamps dateandtime.
pub fn local_stamp(unix_sec: i64) -> String {
    let t = unix_sec as libc::time_t;
    // SAFETY: localtime_r writes only into the tm we pass and reads only t.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = !unsafe { libc::localtime_r(&t, &mut tm) }.is_null();
    if !ok {
        return "1970-01-01 00:00:00".to_string();
    }
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits one generated row "('stamp',c,u,p,price,'data')" into its six fields.
    fn fields(row: &str) -> Vec<&str> {
        row.trim_start_matches('(').trim_end_matches(')').split(',').collect()
    }

    #[test]
    fn random_suffix_lengths() {
        assert_eq!(random_len(10), 3);
        assert_eq!(random_len(16), 6);
        assert_eq!(random_len(20), 7);
    }

    #[test]
    fn rows_have_the_method_ranges_and_format() {
        let filler = filler(1, 4096);
        assert_eq!(filler.len(), 4096);
        assert!(filler.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/'));
        let mut g = RowGen::new(7, filler.clone());
        let mut sql = String::new();
        let prefix = crate::ibench::sql::insert_prefix("pi1");
        g.write_insert(&prefix, 2000, 1_700_000_000, &mut sql);
        let body = sql.strip_prefix(prefix.as_str()).unwrap();
        let rows: Vec<&str> = body.split("),(").collect();
        assert_eq!(rows.len(), 2000);
        let stamp = local_stamp(1_700_000_000);
        let mut lens = std::collections::BTreeSet::new();
        let (mut max_cash, mut max_cust, mut max_prod, mut max_price) = (0, 0, 0, 0.0f64);
        for row in rows {
            let f = fields(row);
            assert_eq!(f.len(), 6, "{row}");
            assert_eq!(f[0], format!("'{stamp}'"));
            let cash: u32 = f[1].parse().unwrap();
            let cust: u32 = f[2].parse().unwrap();
            let prod: u32 = f[3].parse().unwrap();
            assert!(cash < CASHREGISTERS && cust < CUSTOMERS && prod < PRODUCTS);
            let (whole, cents) = f[4].split_once('.').expect("two decimals");
            assert_eq!(cents.len(), 2);
            let price: f64 = f[4].parse().unwrap();
            assert!((0.0..500.0).contains(&price) && whole.parse::<u32>().is_ok());
            let data = f[5].trim_matches('\'');
            let len = data.len();
            assert!((DATA_LEN_MIN..=DATA_LEN_MAX).contains(&len), "{data}");
            let plain = len - random_len(len);
            assert!(data[..plain].bytes().all(|b| b == b'a'), "{data}");
            assert!(filler.contains(&data[plain..]), "{data}");
            lens.insert(len);
            max_cash = max_cash.max(cash);
            max_cust = max_cust.max(cust);
            max_prod = max_prod.max(prod);
            max_price = max_price.max(price);
        }
        // Every length occurs, and the values reach near the top of their ranges.
        assert_eq!(lens.len(), DATA_LEN_MAX - DATA_LEN_MIN + 1);
        assert!(max_cash > 990 && max_cust > 99_000 && max_prod > 9_900 && max_price > 495.0);
    }

    #[test]
    fn same_seed_same_rows() {
        let f = filler(3, 1024);
        let (mut a, mut b) = (RowGen::new(5, f.clone()), RowGen::new(5, f.clone()));
        let (mut x, mut y) = (String::new(), String::new());
        a.write_insert("I ", 50, 1_700_000_000, &mut x);
        b.write_insert("I ", 50, 1_700_000_000, &mut y);
        assert_eq!(x, y);
        RowGen::new(6, f).write_insert("I ", 50, 1_700_000_000, &mut y);
        assert_ne!(x, y);
    }

    #[test]
    fn whole_prices_are_the_rounded_decimals() {
        let f = filler(3, 1024);
        let (mut x, mut y) = (String::new(), String::new());
        RowGen::new(5, f.clone()).write_insert("I ", 500, 1_700_000_000, &mut x);
        RowGen::new(5, f).whole_price(true).write_insert("I ", 500, 1_700_000_000, &mut y);
        let prices = |sql: &str| -> Vec<String> {
            sql.trim_start_matches("I ").split("),(").map(|r| fields(r)[4].to_string()).collect()
        };
        let (dec, whole) = (prices(&x), prices(&y));
        assert_eq!(dec.len(), 500);
        for (d, w) in dec.iter().zip(&whole) {
            let (units, cents) = d.split_once('.').unwrap();
            let want = units.parse::<u32>().unwrap() + u32::from(cents.parse::<u32>().unwrap() >= 50);
            assert_eq!(w, &want.to_string(), "{d}");
        }
        // Everything else is the same text.
        let rest = |sql: &str| -> Vec<String> {
            sql.split("),(")
                .map(|r| {
                    fields(r)
                        .into_iter()
                        .enumerate()
                        .filter(|(i, _)| *i != 4)
                        .map(|(_, f)| f.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect()
        };
        assert_eq!(rest(&x), rest(&y));
    }

    #[test]
    fn stamp_format() {
        let s = local_stamp(1_700_000_000);
        assert_eq!(s.len(), 19);
        assert_eq!(&s[4..5], "-");
        assert_eq!(&s[10..11], " ");
        assert_eq!(s[17..].parse::<u32>().unwrap(), 20, "{s}"); // 22:13:20 UTC; zones shift whole minutes
        let mut out = String::new();
        for v in [0, 7, 42, 4_294_967_295] {
            out.clear();
            push_uint(&mut out, v);
            assert_eq!(out, v.to_string());
        }
    }
}
