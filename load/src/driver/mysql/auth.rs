//! caching_sha2_password, Oracle MySQL's default authentication since 8.0 and its only password
//! plugin since 9.0 (mysql_native_password is gone there): the scramble that answers the server's
//! nonce, and the password encrypted with the server's RSA key for full authentication over TCP.
//!
//! No TLS is needed: the plugin's full authentication has two ways that need none, the password in
//! clear over a Unix socket (which the server counts as a secure transport) and, over TCP, the
//! password encrypted with the RSA public key the server hands out on request. The RSA key is asked
//! for on each full authentication, never taken from a file: the benchmarks run against servers they
//! started themselves, on a trusted network, so a key swapped in transit is no threat here.

use rsa::pkcs1::DecodeRsaPublicKey;
use rsa::pkcs8::DecodePublicKey;
use rsa::{Oaep, RsaPublicKey};
use sha2::{Digest, Sha256};

/// caching_sha2_password's answer to the server's 20-byte nonce:
/// SHA256(password) XOR SHA256(SHA256(SHA256(password)) + nonce); empty for an empty password.
pub fn sha2_scramble(password: &[u8], nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha256::digest(password);
    let stage2 = Sha256::digest(stage1);
    let mix = Sha256::new().chain_update(stage2).chain_update(nonce).finalize();
    stage1.iter().zip(mix).map(|(a, b)| a ^ b).collect()
}

/// The password and its terminating NUL, XORed with the scramble repeated: what full
/// authentication encrypts (the server XORs it back after decrypting, so a ciphertext replayed on
/// another connection, with another scramble, is worth nothing).
pub fn xor_password(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = password.iter().copied().chain([0]).collect();
    if !scramble.is_empty() {
        for (b, s) in out.iter_mut().zip(scramble.iter().cycle()) {
            *b ^= s;
        }
    }
    out
}

/// Full authentication's message over TCP: `xor_password` encrypted with the server's RSA public key
/// `pem` (PEM text as the server sends it; SubjectPublicKeyInfo, or PKCS#1 as a fallback) with
/// RSA-OAEP, SHA-1 and MGF1-SHA-1 (OpenSSL's RSA_PKCS1_OAEP_PADDING, which the server decrypts with).
/// The error says what was wrong, to follow "the server's RSA public key".
pub fn encrypt_password(pem: &[u8], password: &[u8], scramble: &[u8]) -> Result<Vec<u8>, String> {
    let text = std::str::from_utf8(pem).map_err(|_| "is not PEM text".to_string())?;
    // The server sends its key file as it is: a trailing newline (or NUL) is no part of the PEM.
    let text = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    if text.is_empty() {
        return Err(
            "is empty (the server has no RSA key pair: see caching_sha2_password_auto_generate_rsa_keys)".into()
        );
    }
    let key = RsaPublicKey::from_public_key_pem(text)
        .or_else(|_| RsaPublicKey::from_pkcs1_pem(text))
        .map_err(|e| format!("does not parse as a PEM RSA public key ({e})"))?;
    let message = xor_password(password, scramble);
    key.encrypt(&mut rand::thread_rng(), Oaep::new::<sha1::Sha1>(), &message)
        .map_err(|e| format!("cannot encrypt a password of {} bytes ({e})", password.len()))
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use rsa::pkcs8::{DecodePrivateKey, EncodePublicKey, LineEnding};
    use rsa::RsaPrivateKey;

    /// A 1024-bit RSA key made once with `openssl genpkey` for the tests (small, so decrypting in
    /// a debug build is quick; the key is worth nothing).
    pub const TEST_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIICdwIBADANBgkqhkiG9w0BAQEFAASCAmEwggJdAgEAAoGBAN81fyXt7zupSSlh
BNIi8/Oil3ThBecQq78URiRrvVW3i44oicsXQEB0PNMio0i4BKpnm6fDdzG7KoPK
a/tPzSNQlM5BQAC7a0y4cUcEjAgCM4Xk95UXDn0Gx3Rf5MuvhmT5YOwcaYYc4ZPH
e+wXCJq72DUHvfT7i92a7Vt2PDDhAgMBAAECgYEAxKkPw81lcL1wdoLCipq9MbXZ
l+MDHliz2YD1Y/WBNdqnnLLe5Q8xTxia1rO4BcQMaE8s95zikfCEPuXESgI/i+4O
mAnTICDx2FjtXAMAQA3GBa5yJZhFt1ohwLLQP6ibngKJR4ShCkvXCwwZNuAXVKeH
8XoRpY2fr06D+c62mDkCQQD766ZV1LPkbNHMbyayC5YiaH9gCO417Cx1ze59HOCC
eG3wFnZfCAo6vmDX5TkW4IHZDZALz2bpgNRn4+GLsD2XAkEA4tLSWdXI1gcVlgju
lePW7DlsIiL1Uv1gV2exMJ7RYMUwxxe/x6V2nMhTYlg3wsc0MUnq1qij3m53eAaT
RdlERwJAOR39sZovS0ws6SgOYvHjkVuV/aUotUsd7XvKZc2FTa+WZYgCQJunDhia
BnkvT3OJnTfJABR/JdQS1JdDTROhcwJAaCfC6/mdZZqPMPwdArtC3+pmWy6OVHOB
H+G/ncHwB23FPkcLi5PRaaEbmRdFU63Bq7hzm+qIhQVY2sa6LeLc1QJBALi9df9X
y7sTYvIECDHWV+RA2oSczDIHM7bcGfT+DyvREiKPCitTLS5NJWa60+8i6EyPcZZV
94ILoGHKtp/ckjg=
-----END PRIVATE KEY-----
";

    /// The test key, and its public half as a server sends it (SubjectPublicKeyInfo PEM).
    pub fn test_key() -> (RsaPrivateKey, String) {
        let key = RsaPrivateKey::from_pkcs8_pem(TEST_KEY).unwrap();
        let public = key.to_public_key().to_public_key_pem(LineEnding::LF).unwrap();
        (key, public)
    }

    #[test]
    fn the_sha2_scramble() {
        // SHA256("secret") XOR SHA256(SHA256(SHA256("secret")) + nonce), computed apart with Python's hashlib.
        let nonce: Vec<u8> = (1..=20).collect();
        let want = [
            0x74, 0x6e, 0xbe, 0x20, 0x5d, 0x56, 0xa0, 0x70, 0x7a, 0xcb, 0x3e, 0x79, 0x6e, 0x83, 0x4e, 0x0d, 0xd7, 0xb1,
            0xd6, 0x17, 0x43, 0xb2, 0x6b, 0xd5, 0x20, 0x2c, 0x7a, 0x62, 0x32, 0x30, 0xc7, 0xc9,
        ];
        assert_eq!(sha2_scramble(b"secret", &nonce), want);
        assert!(sha2_scramble(b"", &nonce).is_empty());
    }

    #[test]
    fn the_password_is_xored_with_the_scramble_repeated() {
        assert_eq!(xor_password(b"ab", &[1, 2]), [b'a' ^ 1, b'b' ^ 2, 1]);
        assert_eq!(xor_password(b"abcd", &[1, 2]), [b'a' ^ 1, b'b' ^ 2, b'c' ^ 1, b'd' ^ 2, 1]);
        assert_eq!(xor_password(b"", &[7; 20]), [7]);
    }

    #[test]
    fn the_password_is_encrypted_with_oaep_sha1() {
        let (key, public) = test_key();
        let scramble: Vec<u8> = (1..=20).collect();
        // With a trailing newline and NUL, as a server may send its key file.
        let sent = format!("{public}\n\0");
        let cipher = encrypt_password(sent.as_bytes(), b"secret", &scramble).unwrap();
        assert_eq!(cipher.len(), 128);
        let plain = key.decrypt(Oaep::new::<sha1::Sha1>(), &cipher).unwrap();
        assert_eq!(plain, xor_password(b"secret", &scramble));
        // OAEP is randomized: the same password encrypts differently each time.
        assert_ne!(encrypt_password(public.as_bytes(), b"secret", &scramble).unwrap(), cipher);
        let bad = |pem: &[u8]| encrypt_password(pem, b"secret", &scramble).unwrap_err();
        assert!(bad(b"").starts_with("is empty"), "{}", bad(b""));
        assert!(bad(b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n").starts_with("does not parse"));
        // A 1024-bit key takes at most 128 - 2 * 20 - 2 = 86 bytes.
        let long = encrypt_password(public.as_bytes(), &[b'x'; 86], &scramble).unwrap_err();
        assert!(long.starts_with("cannot encrypt a password of 86 bytes"), "{long}");
    }
}
