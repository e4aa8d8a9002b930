//! The SQLite C API, opened at run time from a shared library (`libloading`), behind a small safe
//! interface: a `Library` (the resolved functions), a `Connection` (one `sqlite3*`, its busy
//! handler and, when asked, its statement trace) and its statements. Every `unsafe` block of the
//! SQLite driver is in this file.
//!
//! Only functions that SQLite 3.34 already has are used (`sqlite3_prepare_v3` is looked up but
//! optional). A connection is opened with SQLITE_OPEN_NOMUTEX and used by one thread at a time.

use super::busy::BusyState;
use super::capture::Capture;
use libloading::Library as Dl;
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const SQLITE_OK: c_int = 0;
pub const SQLITE_ROW: c_int = 100;
pub const SQLITE_DONE: c_int = 101;
/// sqlite3_errmsg's code when the failure came from this side (an SQL text with a NUL, say).
pub const SQLITE_MISUSE: c_int = 21;
/// A string or statement too large.
pub const SQLITE_TOOBIG: c_int = 18;
pub const SQLITE_NULL: c_int = 5;
pub const OPEN_READWRITE: c_int = 0x0000_0002;
pub const OPEN_CREATE: c_int = 0x0000_0004;
pub const OPEN_NOMUTEX: c_int = 0x0000_8000;
const PREPARE_PERSISTENT: c_uint = 0x01;
const TRACE_STMT: c_uint = 0x01;
const TRACE_PROFILE: c_uint = 0x02;
const TRACE_ROW: c_uint = 0x04;
/// The progress handler is called every this many virtual machine instructions of a statement.
const PROGRESS_EVERY: c_int = 1000;

/// `sqlite3`, opaque.
#[repr(C)]
pub struct RawDb {
    _opaque: [u8; 0],
}

/// `sqlite3_stmt`, opaque.
#[repr(C)]
pub struct RawStmt {
    _opaque: [u8; 0],
}

type Destructor = Option<unsafe extern "C" fn(*mut c_void)>;
type BusyCallback = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
type TraceCallback = unsafe extern "C" fn(c_uint, *mut c_void, *mut c_void, *mut c_void) -> c_int;
type ExecCallback = unsafe extern "C" fn(*mut c_void, c_int, *mut *mut c_char, *mut *mut c_char) -> c_int;
type ProgressCallback = unsafe extern "C" fn(*mut c_void) -> c_int;

/// The functions used, as sqlite3.h declares them.
struct Fns {
    open_v2: unsafe extern "C" fn(*const c_char, *mut *mut RawDb, c_int, *const c_char) -> c_int,
    close_v2: unsafe extern "C" fn(*mut RawDb) -> c_int,
    prepare_v2: unsafe extern "C" fn(*mut RawDb, *const c_char, c_int, *mut *mut RawStmt, *mut *const c_char) -> c_int,
    prepare_v3: Option<
        unsafe extern "C" fn(*mut RawDb, *const c_char, c_int, c_uint, *mut *mut RawStmt, *mut *const c_char) -> c_int,
    >,
    bind_int64: unsafe extern "C" fn(*mut RawStmt, c_int, i64) -> c_int,
    bind_text: unsafe extern "C" fn(*mut RawStmt, c_int, *const c_char, c_int, Destructor) -> c_int,
    bind_null: unsafe extern "C" fn(*mut RawStmt, c_int) -> c_int,
    step: unsafe extern "C" fn(*mut RawStmt) -> c_int,
    reset: unsafe extern "C" fn(*mut RawStmt) -> c_int,
    clear_bindings: unsafe extern "C" fn(*mut RawStmt) -> c_int,
    finalize: unsafe extern "C" fn(*mut RawStmt) -> c_int,
    column_count: unsafe extern "C" fn(*mut RawStmt) -> c_int,
    column_type: unsafe extern "C" fn(*mut RawStmt, c_int) -> c_int,
    column_int64: unsafe extern "C" fn(*mut RawStmt, c_int) -> i64,
    column_text: unsafe extern "C" fn(*mut RawStmt, c_int) -> *const u8,
    column_bytes: unsafe extern "C" fn(*mut RawStmt, c_int) -> c_int,
    changes: unsafe extern "C" fn(*mut RawDb) -> c_int,
    get_autocommit: unsafe extern "C" fn(*mut RawDb) -> c_int,
    errmsg: unsafe extern "C" fn(*mut RawDb) -> *const c_char,
    extended_errcode: unsafe extern "C" fn(*mut RawDb) -> c_int,
    exec: unsafe extern "C" fn(*mut RawDb, *const c_char, Option<ExecCallback>, *mut c_void, *mut *mut c_char) -> c_int,
    busy_handler: unsafe extern "C" fn(*mut RawDb, Option<BusyCallback>, *mut c_void) -> c_int,
    progress_handler: unsafe extern "C" fn(*mut RawDb, c_int, Option<ProgressCallback>, *mut c_void),
    trace_v2: unsafe extern "C" fn(*mut RawDb, c_uint, Option<TraceCallback>, *mut c_void) -> c_int,
    sql: unsafe extern "C" fn(*mut RawStmt) -> *const c_char,
    libversion: unsafe extern "C" fn() -> *const c_char,
    sourceid: unsafe extern "C" fn() -> *const c_char,
    threadsafe: unsafe extern "C" fn() -> c_int,
    free: unsafe extern "C" fn(*mut c_void),
}

/// A loaded SQLite library: its path and functions. Shared (`Arc`) by every connection, so it
/// stays loaded while one is open.
pub struct Library {
    path: String,
    f: Fns,
    // Declared last, so it is unloaded after nothing can call into it any more.
    _dl: Dl,
}

/// An error SQLite reported: the extended result code and sqlite3_errmsg's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub code: c_int,
    pub message: String,
}

/// Text from SQLite (NUL-terminated, UTF-8 unless the database says otherwise).
///
/// # Safety
/// `p` is null or points to a NUL-terminated string valid for the duration of the call.
unsafe fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the caller's contract.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl Library {
    /// Opens the library at `path` and resolves every function; the error is one line naming the path.
    pub fn load(path: &Path) -> Result<Arc<Library>, String> {
        let shown = path.display().to_string();
        // SAFETY: loading a shared library runs its initialisers. The path is the SQLite library the
        // user named; SQLite's own initialisers only set up its static state.
        let dl = unsafe { Dl::new(path) }.map_err(|e| format!("cannot load the SQLite library {shown}: {e}"))?;
        let missing = |name: &str, e: libloading::Error| {
            format!("{shown} is not an SQLite library of version 3.34 or later: it lacks {name} ({e})")
        };
        macro_rules! sym {
            ($name:literal) => {{
                // SAFETY: the field this initialises has the type sqlite3.h declares for $name, and the
                // pointer is used only while `_dl`, stored alongside it, keeps the library loaded.
                let s = unsafe { dl.get(concat!($name, "\0").as_bytes()) }.map_err(|e| missing($name, e))?;
                *s
            }};
        }
        let f = Fns {
            open_v2: sym!("sqlite3_open_v2"),
            close_v2: sym!("sqlite3_close_v2"),
            prepare_v2: sym!("sqlite3_prepare_v2"),
            // SAFETY: as for sym!: the declared type of sqlite3_prepare_v3 (absent before 3.20).
            prepare_v3: unsafe { dl.get(b"sqlite3_prepare_v3\0") }.ok().map(|s| *s),
            bind_int64: sym!("sqlite3_bind_int64"),
            bind_text: sym!("sqlite3_bind_text"),
            bind_null: sym!("sqlite3_bind_null"),
            step: sym!("sqlite3_step"),
            reset: sym!("sqlite3_reset"),
            clear_bindings: sym!("sqlite3_clear_bindings"),
            finalize: sym!("sqlite3_finalize"),
            column_count: sym!("sqlite3_column_count"),
            column_type: sym!("sqlite3_column_type"),
            column_int64: sym!("sqlite3_column_int64"),
            column_text: sym!("sqlite3_column_text"),
            column_bytes: sym!("sqlite3_column_bytes"),
            changes: sym!("sqlite3_changes"),
            get_autocommit: sym!("sqlite3_get_autocommit"),
            errmsg: sym!("sqlite3_errmsg"),
            extended_errcode: sym!("sqlite3_extended_errcode"),
            exec: sym!("sqlite3_exec"),
            busy_handler: sym!("sqlite3_busy_handler"),
            progress_handler: sym!("sqlite3_progress_handler"),
            trace_v2: sym!("sqlite3_trace_v2"),
            sql: sym!("sqlite3_sql"),
            libversion: sym!("sqlite3_libversion"),
            sourceid: sym!("sqlite3_sourceid"),
            threadsafe: sym!("sqlite3_threadsafe"),
            free: sym!("sqlite3_free"),
        };
        Ok(Arc::new(Library { path: shown, f, _dl: dl }))
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// sqlite3_libversion(), e.g. "3.40.1".
    pub fn version(&self) -> String {
        // SAFETY: no arguments; returns a static string.
        unsafe { text((self.f.libversion)()) }
    }

    /// sqlite3_sourceid(): the check-in's date and hash.
    pub fn source_id(&self) -> String {
        // SAFETY: no arguments; returns a static string.
        unsafe { text((self.f.sourceid)()) }
    }

    /// sqlite3_threadsafe(): 0 when built with SQLITE_THREADSAFE=0 (no locking at all: only one
    /// thread may use the library).
    pub fn threadsafe(&self) -> i32 {
        // SAFETY: no arguments.
        unsafe { (self.f.threadsafe)() }
    }

    #[cfg(test)]
    pub fn has_prepare_v3(&self) -> bool {
        self.f.prepare_v3.is_some()
    }
}

/// What a trace callback needs: the functions it calls, and the counts.
struct TraceState {
    lib: Arc<Library>,
    db: NonNull<RawDb>,
    capture: RefCell<Capture>,
}

/// A statement time limit: the progress handler's state. SQLite calls the handler only on the thread
/// using the connection, so plain Cells do.
#[derive(Debug, Default)]
pub struct Deadline {
    /// How long a statement may run; None: for ever.
    limit: Cell<Option<Duration>>,
    /// When the statement running now must end: set at the handler's first call during it (a
    /// thousand instructions in), cleared when it ends.
    until: Cell<Option<Instant>>,
}

impl Deadline {
    /// The handler's answer: whether the statement running must stop now.
    fn expired(&self) -> bool {
        let Some(limit) = self.limit.get() else { return false };
        let now = Instant::now();
        match self.until.get() {
            Some(until) => now >= until,
            None => {
                self.until.set(Some(now + limit));
                false
            }
        }
    }

    /// The statement running ended: the next one has its own time.
    fn statement_done(&self) {
        self.until.set(None);
    }
}

/// One open database connection. Not Sync: one thread uses it at a time.
pub struct Connection {
    lib: Arc<Library>,
    db: NonNull<RawDb>,
    /// The busy handler's state, owned here (from Box::into_raw) and freed after the close.
    busy: NonNull<BusyState>,
    /// The progress handler's state (the statement time limit), freed after the close.
    deadline: NonNull<Deadline>,
    /// The trace's state, when statements are captured; freed after the close (which writes them out).
    trace: Option<NonNull<TraceState>>,
    /// Statements kept prepared for the connection's life, finalized before the close.
    kept: Vec<NonNull<RawStmt>>,
}

// SAFETY: the library is thread-safe (the driver refuses one built with SQLITE_THREADSAFE=0), and a
// NOMUTEX connection may be used from any thread as long as only one uses it at a time, which
// owning it (Connection is not Sync) guarantees. The busy and trace states are touched only by
// SQLite's callbacks, on the thread that is calling into the connection, and by this owner.
unsafe impl Send for Connection {}

/// The index of a statement kept by a connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StmtId(usize);

impl Connection {
    /// Opens `path` with `flags`, with `busy` as its busy handler's state.
    pub fn open(lib: &Arc<Library>, path: &Path, flags: c_int, busy: BusyState) -> Result<Connection, Error> {
        let cpath = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| Error { code: SQLITE_MISUSE, message: "the path contains a NUL byte".into() })?;
        let mut db: *mut RawDb = ptr::null_mut();
        // SAFETY: a valid C string, a valid out-pointer, the default VFS (null).
        let rc = unsafe { (lib.f.open_v2)(cpath.as_ptr(), &mut db, flags, ptr::null()) };
        let Some(db) = NonNull::new(db) else {
            return Err(Error { code: rc, message: "out of memory opening the database".into() });
        };
        let busy = NonNull::from(Box::leak(Box::new(busy)));
        let deadline = NonNull::from(Box::leak(Box::<Deadline>::default()));
        // Built before any check, so an error below closes the handle (and frees `busy`) on drop.
        let c = Connection { lib: lib.clone(), db, busy, deadline, trace: None, kept: Vec::new() };
        if rc != SQLITE_OK {
            return Err(c.error());
        }
        // SAFETY: an open handle; the callback's argument lives until after the close (Drop).
        let rc = unsafe { (lib.f.busy_handler)(db.as_ptr(), Some(on_busy), busy.as_ptr().cast()) };
        if rc != SQLITE_OK {
            return Err(c.error());
        }
        Ok(c)
    }

    /// The last error on this connection.
    #[cold]
    fn error(&self) -> Error {
        // SAFETY: an open handle; errmsg's text is copied before any other call on it.
        unsafe {
            Error {
                code: (self.lib.f.extended_errcode)(self.db.as_ptr()),
                message: text((self.lib.f.errmsg)(self.db.as_ptr())),
            }
        }
    }

    pub fn busy(&self) -> &BusyState {
        // SAFETY: allocated in open, freed only in drop; SQLite's callback takes only shared references too.
        unsafe { self.busy.as_ref() }
    }

    fn deadline(&self) -> &Deadline {
        // SAFETY: allocated in open, freed only in drop; the handler takes only shared references too.
        unsafe { self.deadline.as_ref() }
    }

    /// Stops every later statement with SQLITE_INTERRUPT once it has run `limit` (None: no limit),
    /// through the progress handler (installed only while there is a limit).
    pub fn set_time_limit(&mut self, limit: Option<Duration>) {
        self.deadline().limit.set(limit);
        self.deadline().statement_done();
        let db = self.db.as_ptr();
        // SAFETY: an open handle; the handler's argument lives until after the close (Drop).
        unsafe {
            match limit {
                Some(_) => {
                    (self.lib.f.progress_handler)(db, PROGRESS_EVERY, Some(on_progress), self.deadline.as_ptr().cast())
                }
                None => (self.lib.f.progress_handler)(db, 0, None, ptr::null_mut()),
            }
        }
    }

    /// A statement ended (whatever its outcome): counts its lock wait, and starts the next one's time.
    #[inline]
    pub fn statement_done(&self) {
        self.busy().statement_done();
        self.deadline().statement_done();
    }

    /// Counts every statement this connection runs (calls and rows) into `capture`, until it is closed.
    pub fn trace(&mut self, capture: Capture) -> Result<(), Error> {
        if self.trace.is_some() {
            return Ok(());
        }
        let state = TraceState { lib: self.lib.clone(), db: self.db, capture: RefCell::new(capture) };
        let state = NonNull::from(Box::leak(Box::new(state)));
        self.trace = Some(state);
        let mask = TRACE_STMT | TRACE_PROFILE | TRACE_ROW;
        // SAFETY: an open handle; the state lives until after the close (Drop).
        let rc = unsafe { (self.lib.f.trace_v2)(self.db.as_ptr(), mask, Some(on_trace), state.as_ptr().cast()) };
        if rc != SQLITE_OK {
            return Err(self.error());
        }
        Ok(())
    }

    /// Runs SQL text with sqlite3_exec (rows are discarded).
    pub fn exec(&self, sql: &str) -> Result<(), Error> {
        let c = CString::new(sql)
            .map_err(|_| Error { code: SQLITE_MISUSE, message: "the SQL contains a NUL byte".into() })?;
        let mut msg: *mut c_char = ptr::null_mut();
        // SAFETY: an open handle, a C string, no callback, and an out-pointer for the message.
        let rc = unsafe { (self.lib.f.exec)(self.db.as_ptr(), c.as_ptr(), None, ptr::null_mut(), &mut msg) };
        // SAFETY: msg is null or a string sqlite3_exec allocated, which sqlite3_free releases.
        let message = unsafe {
            let m = text(msg);
            (self.lib.f.free)(msg.cast());
            m
        };
        if rc == SQLITE_OK {
            return Ok(());
        }
        let code = self.error().code;
        Err(Error { code, message })
    }

    /// Prepares the first statement of `sql`: None when it holds only spaces or comments. Returns
    /// the statement and the bytes of `sql` it took.
    fn prepare_raw(&self, sql: &str, persistent: bool) -> Result<(Option<NonNull<RawStmt>>, usize), Error> {
        let len = c_int::try_from(sql.len())
            .map_err(|_| Error { code: SQLITE_TOOBIG, message: "the SQL text is longer than 2 GB".into() })?;
        let mut stmt: *mut RawStmt = ptr::null_mut();
        let mut tail: *const c_char = ptr::null();
        let db = self.db.as_ptr();
        let head = sql.as_ptr().cast::<c_char>();
        let rc = match (persistent, self.lib.f.prepare_v3) {
            // SAFETY: an open handle; the text and its length in bytes (no NUL needed); out-pointers.
            (true, Some(v3)) => unsafe { v3(db, head, len, PREPARE_PERSISTENT, &mut stmt, &mut tail) },
            // SAFETY: as above.
            _ => unsafe { (self.lib.f.prepare_v2)(db, head, len, &mut stmt, &mut tail) },
        };
        if rc != SQLITE_OK {
            return Err(self.error());
        }
        let used =
            if tail.is_null() { sql.len() } else { (tail as usize).saturating_sub(head as usize).min(sql.len()) };
        Ok((NonNull::new(stmt), used))
    }

    /// Prepares `sql` (one statement) for the connection's life.
    pub fn keep(&mut self, sql: &str) -> Result<StmtId, Error> {
        let (stmt, used) = self.prepare_raw(sql, true)?;
        let Some(stmt) = stmt else {
            return Err(Error { code: 1, message: format!("no statement in {sql:?}") });
        };
        let extra = !sql[used..].trim().is_empty();
        self.kept.push(stmt);
        if extra {
            return Err(Error { code: 1, message: format!("more than one statement in {sql:?}") });
        }
        Ok(StmtId(self.kept.len() - 1))
    }

    /// A kept statement.
    #[inline]
    pub fn kept(&self, id: StmtId) -> Stmt<'_> {
        Stmt { conn: self, raw: self.kept[id.0] }
    }

    /// Prepares the first statement of `sql` for one use; also returns the rest of the text.
    pub fn once<'s>(&self, sql: &'s str) -> Result<(Option<Once<'_>>, &'s str), Error> {
        let (stmt, used) = self.prepare_raw(sql, false)?;
        let rest = sql.get(used..).unwrap_or("");
        Ok((stmt.map(|raw| Once(Stmt { conn: self, raw })), rest))
    }

    /// Rows changed by the latest INSERT, UPDATE or DELETE.
    #[inline]
    pub fn changes(&self) -> u64 {
        // SAFETY: an open handle.
        unsafe { (self.lib.f.changes)(self.db.as_ptr()) }.max(0) as u64
    }

    /// Outside a transaction block (autocommit).
    pub fn autocommit(&self) -> bool {
        // SAFETY: an open handle.
        unsafe { (self.lib.f.get_autocommit)(self.db.as_ptr()) != 0 }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let f = &self.lib.f;
        // SAFETY: the kept statements belong to this handle and are finalized once; after the close
        // no callback can run, so the busy and trace states (from Box::leak) are freed last.
        unsafe {
            for s in self.kept.drain(..) {
                (f.finalize)(s.as_ptr());
            }
            (f.close_v2)(self.db.as_ptr());
            drop(Box::from_raw(self.busy.as_ptr()));
            drop(Box::from_raw(self.deadline.as_ptr()));
            if let Some(t) = self.trace.take() {
                // Dropping the capture writes its counts out.
                drop(Box::from_raw(t.as_ptr()));
            }
        }
    }
}

/// A value bound to a parameter.
#[derive(Debug, Clone, Copy)]
pub enum Bind<'a> {
    Int(i64),
    Text(&'a [u8]),
    Null,
}

/// A prepared statement of a connection (not owned: see `Once` and `Connection::kept`).
pub struct Stmt<'c> {
    conn: &'c Connection,
    raw: NonNull<RawStmt>,
}

/// One row of a running statement.
pub struct Row<'s> {
    f: &'s Fns,
    raw: NonNull<RawStmt>,
}

impl Row<'_> {
    pub fn columns(&self) -> usize {
        // SAFETY: a statement positioned on a row.
        unsafe { (self.f.column_count)(self.raw.as_ptr()) }.max(0) as usize
    }

    /// Column `i` as text, None for NULL.
    pub fn text(&self, i: usize) -> Option<String> {
        self.bytes(i).map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// Column `i` as text, None for NULL, borrowed until the statement moves on.
    pub fn bytes(&self, i: usize) -> Option<&[u8]> {
        let i = c_int::try_from(i).ok()?;
        let s = self.raw.as_ptr();
        // SAFETY: a statement positioned on a row; the text pointer is read before its byte count
        // (as SQLite asks), and stays valid until the next step, reset or finalize, none of which can
        // happen while `self` is borrowed.
        unsafe {
            if (self.f.column_type)(s, i) == SQLITE_NULL {
                return None;
            }
            let p = (self.f.column_text)(s, i);
            let n = (self.f.column_bytes)(s, i).max(0) as usize;
            if p.is_null() {
                return Some(&[]);
            }
            Some(std::slice::from_raw_parts(p, n))
        }
    }

    pub fn int(&self, i: usize) -> i64 {
        // SAFETY: a statement positioned on a row (an out-of-range column reads as 0).
        unsafe { (self.f.column_int64)(self.raw.as_ptr(), i as c_int) }
    }
}

impl Stmt<'_> {
    /// Binds `params` (1-based, in order), steps to the end calling `row` for each row, then
    /// resets the statement and clears its bindings whatever happened. Returns the rows.
    #[inline]
    pub fn run<'p>(
        &self,
        params: impl IntoIterator<Item = Bind<'p>>,
        mut row: impl FnMut(&Row<'_>),
    ) -> Result<u64, Error> {
        let f = &self.conn.lib.f;
        let s = self.raw.as_ptr();
        let mut result = Ok(0);
        for (i, p) in params.into_iter().enumerate() {
            let i = i as c_int + 1;
            let p = match p {
                Bind::Text(t) if c_int::try_from(t.len()).is_err() => {
                    result = Err(Error { code: SQLITE_TOOBIG, message: format!("parameter {i} is longer than 2 GB") });
                    break;
                }
                p => p,
            };
            // SAFETY: a valid statement. Text is bound without a copy (SQLITE_STATIC, a null
            // destructor): it stays borrowed until clear_bindings below, before this returns.
            let rc = unsafe {
                match p {
                    Bind::Int(v) => (f.bind_int64)(s, i, v),
                    Bind::Text(t) => (f.bind_text)(s, i, t.as_ptr().cast(), t.len() as c_int, None),
                    Bind::Null => (f.bind_null)(s, i),
                }
            };
            if rc != SQLITE_OK {
                result = Err(self.conn.error());
                break;
            }
        }
        if result.is_ok() {
            let mut rows = 0u64;
            let r = Row { f, raw: self.raw };
            loop {
                // SAFETY: a valid statement with its parameters bound.
                match unsafe { (f.step)(s) } {
                    SQLITE_ROW => {
                        rows += 1;
                        row(&r);
                    }
                    SQLITE_DONE => break,
                    _ => {
                        result = Err(self.conn.error());
                        break;
                    }
                }
            }
            if result.is_ok() {
                result = Ok(rows);
            }
        }
        // SAFETY: a valid statement. reset repeats the step's error, already taken above.
        unsafe {
            (f.reset)(s);
            (f.clear_bindings)(s);
        }
        result
    }
}

/// A statement prepared for one use, finalized when dropped.
pub struct Once<'c>(Stmt<'c>);

impl<'c> std::ops::Deref for Once<'c> {
    type Target = Stmt<'c>;
    fn deref(&self) -> &Stmt<'c> {
        &self.0
    }
}

impl Drop for Once<'_> {
    fn drop(&mut self) {
        // SAFETY: this statement is owned here and finalized once.
        unsafe { (self.0.conn.lib.f.finalize)(self.0.raw.as_ptr()) };
    }
}

/// SQLite's busy handler: waits (or gives up) as the connection's BusyState decides.
unsafe extern "C" fn on_busy(state: *mut c_void, count: c_int) -> c_int {
    // SAFETY: `state` is the BusyState this connection was opened with; it is freed only after
    // the close, and only shared references to it are ever made.
    let state = unsafe { &*(state as *const BusyState) };
    c_int::from(state.wait(count))
}

/// SQLite's progress handler: a non-zero answer interrupts the statement (SQLITE_INTERRUPT).
unsafe extern "C" fn on_progress(state: *mut c_void) -> c_int {
    // SAFETY: `state` is the Deadline this connection was opened with; it is freed only after the
    // close, and only shared references to it are ever made.
    let state = unsafe { &*(state as *const Deadline) };
    c_int::from(state.expired())
}

/// The statement trace: counts statements started, rows returned, and rows changed.
unsafe extern "C" fn on_trace(kind: c_uint, ctx: *mut c_void, p: *mut c_void, x: *mut c_void) -> c_int {
    // SAFETY: `ctx` is the TraceState registered with this connection, freed only after the close.
    let state = unsafe { &*(ctx as *const TraceState) };
    // A callback from inside a callback (none is expected) is not counted.
    let Ok(mut capture) = state.capture.try_borrow_mut() else { return 0 };
    let f = &state.lib.f;
    let stmt = p as usize;
    match kind {
        TRACE_STMT => {
            // SAFETY: for SQLITE_TRACE_STMT, P is a live statement.
            let sql = unsafe { (f.sql)(p.cast()) };
            // X is the statement's own text (the very pointer sqlite3_sql returns) when it starts
            // running; a "-- ..." comment when a trigger program of it starts (not a call of its own).
            if !sql.is_null() && sql.cast_mut().cast::<c_void>() == x {
                // SAFETY: the statement's NUL-terminated text, copied at once.
                capture.started(stmt, &unsafe { text(sql) });
            }
        }
        TRACE_ROW => capture.row(stmt),
        // SAFETY: an open handle (the callback runs inside a call on it).
        TRACE_PROFILE => capture.finished(stmt, || unsafe { (f.changes)(state.db.as_ptr()) }.max(0) as u64),
        _ => {}
    }
    0
}
