//! The client's own resource use, for the summary.

/// CPU time this process has used, user and system, in seconds.
pub fn own_cpu() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass and reads nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// Peak resident memory of this process, in KB.
pub fn own_max_rss_kb() -> u64 {
    // SAFETY: as in own_cpu.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_maxrss as u64
}
