//! The read side of a server engine's connection: one reused buffer that the stream is read into,
//! as much as a read gives, and that the protocol's reader takes whole messages from or skips
//! them in. Shared by the Postgres and MariaDB readers, which differ only in their framing.

use std::io::{self, Read};
use std::ops::{Index, Range};

/// Bytes read from the server and not yet consumed.
pub struct ReadBuf {
    buf: Vec<u8>,
    /// Unconsumed bytes are buf[start..end].
    start: usize,
    end: usize,
}

impl ReadBuf {
    pub fn new(capacity: usize) -> ReadBuf {
        ReadBuf { buf: vec![0; capacity], start: 0, end: 0 }
    }

    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// The first `n` unconsumed bytes, which `fill` has buffered.
    #[inline]
    pub fn peek(&self, n: usize) -> &[u8] {
        &self.buf[self.start..self.start + n]
    }

    /// Consumes `n` buffered bytes; returns where they are (valid until the next read).
    #[inline]
    pub fn take(&mut self, n: usize) -> Range<usize> {
        let at = self.start..self.start + n;
        self.start = at.end;
        at
    }

    /// One read from `src`, after making room for `need` bytes from `start`.
    #[inline]
    fn read_more<R: Read>(&mut self, src: &mut R, need: usize) -> io::Result<()> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.start + need > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if need > self.buf.len() {
                self.buf.resize(need, 0);
            }
        }
        loop {
            match src.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection")),
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads until `need` bytes are buffered (the buffer grows for a larger message).
    #[inline]
    pub fn fill<R: Read>(&mut self, src: &mut R, need: usize) -> io::Result<()> {
        while self.buffered() < need {
            self.read_more(src, need)?;
        }
        Ok(())
    }

    /// Consumes `total` bytes without keeping them, reading past them as needed: a large message
    /// streams through the buffer, never buffered whole.
    #[inline]
    pub fn skip<R: Read>(&mut self, src: &mut R, mut total: usize) -> io::Result<()> {
        loop {
            let have = self.buffered();
            if have >= total {
                self.start += total;
                return Ok(());
            }
            total -= have;
            self.start = 0;
            self.end = 0;
            self.read_more(src, 1)?;
        }
    }
}

/// The bytes at a range `take` returned.
impl Index<Range<usize>> for ReadBuf {
    type Output = [u8];

    #[inline]
    fn index(&self, r: Range<usize>) -> &[u8] {
        &self.buf[r]
    }
}

#[cfg(test)]
pub mod tests {
    use std::collections::VecDeque;
    use std::io::{self, Read};

    /// A byte source that hands out its chunks one read at a time (a read gets at most one chunk,
    /// less if the buffer is smaller), and counts reads.
    pub struct Chunks {
        chunks: VecDeque<Vec<u8>>,
        pub reads: usize,
    }

    impl Chunks {
        pub fn new(chunks: Vec<Vec<u8>>) -> Chunks {
            Chunks { chunks: chunks.into(), reads: 0 }
        }
    }

    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            let Some(front) = self.chunks.front_mut() else { return Ok(0) };
            let n = front.len().min(buf.len());
            buf[..n].copy_from_slice(&front[..n]);
            front.drain(..n);
            if front.is_empty() {
                self.chunks.pop_front();
            }
            Ok(n)
        }
    }
}
