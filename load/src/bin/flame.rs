//! dbsweep-flame: folds `perf script` output into stacks and draws flame graphs, with the
//! `inferno` crate (the Rust port of Brendan Gregg's FlameGraph scripts).
//!
//! * `collapse`: `perf script` text on stdin -> folded stacks on stdout, one `comm;root;...;leaf N` a line.
//!   Each sample counts its period when the event header shows one, so run `perf script -F` without
//!   `period` to count samples.
//! * `svg --title T`: folded stacks on stdin -> an SVG flame graph on stdout.
//! * `diff --title T BASE TARGET`: two folded files -> a differential flame graph on stdout: the target's
//!   shape, each frame red where its share of the samples grew from BASE to TARGET and blue where it shrank.
//!   BASE is scaled to TARGET's total first, so profiles of different lengths compare.
//!
//! The SVGs are self-contained (inline CSS and JavaScript, no external fonts or scripts).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use inferno::collapse::perf::{Folder, Options as CollapseOptions};
use inferno::collapse::Collapse;
use inferno::differential::{self, Options as DiffOptions};
use inferno::flamegraph::{self, Options as FlameOptions};

#[derive(Parser)]
#[command(name = "dbsweep-flame", version, about = "Folds perf stacks and draws flame graphs (with inferno)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// `perf script` text on stdin -> folded stacks on stdout.
    Collapse,
    /// Folded stacks on stdin -> SVG flame graph on stdout.
    Svg {
        #[arg(long)]
        title: String,
        #[arg(long)]
        subtitle: Option<String>,
    },
    /// Two folded files -> differential SVG flame graph on stdout (red: more in TARGET, blue: less).
    Diff {
        #[arg(long)]
        title: String,
        #[arg(long)]
        subtitle: Option<String>,
        base: PathBuf,
        target: PathBuf,
    },
}

/// Folds `perf script` output (inferno's collapse-perf, single-threaded, no addresses or pids in frames).
fn collapse<R: BufRead, W: Write>(input: R, output: W) -> io::Result<()> {
    let mut folder = Folder::from(CollapseOptions::default());
    folder.collapse(input, output)
}

fn flame_options(title: &str, subtitle: Option<&str>) -> FlameOptions<'static> {
    let mut opt = FlameOptions::default();
    opt.title = title.to_string();
    opt.subtitle = subtitle.map(str::to_string);
    // Colours from each function's name, not at random: the same function has the same colour in every graph,
    // and the same input gives the same SVG.
    opt.hash = true;
    opt
}

/// Draws folded stacks as a flame graph. inferno fails on input without a single stack.
fn svg<R: BufRead, W: Write>(title: &str, subtitle: Option<&str>, input: R, output: W) -> io::Result<()> {
    let mut opt = flame_options(title, subtitle);
    flamegraph::from_reader(&mut opt, input, output)
}

/// Draws the differential flame graph of two folded profiles, the base normalised to the target's total.
fn diff<R1: BufRead, R2: BufRead, W: Write>(
    title: &str,
    subtitle: Option<&str>,
    base: R1,
    target: R2,
    output: W,
) -> io::Result<()> {
    let mut both = Vec::new();
    differential::from_readers(DiffOptions { normalize: true, strip_hex: false }, base, target, &mut both)?;
    let mut opt = flame_options(title, subtitle);
    flamegraph::from_reader(&mut opt, both.as_slice(), output)
}

fn open(path: &PathBuf) -> io::Result<BufReader<File>> {
    File::open(path).map(BufReader::new).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

fn run(command: Command) -> io::Result<()> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match command {
        Command::Collapse => collapse(stdin.lock(), &mut out)?,
        Command::Svg { title, subtitle } => {
            // Read it whole first, so an empty input is told apart from inferno's own errors.
            let mut folded = Vec::new();
            stdin.lock().read_to_end(&mut folded)?;
            if folded.iter().all(u8::is_ascii_whitespace) {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "no stacks on stdin: nothing to draw"));
            }
            svg(&title, subtitle.as_deref(), folded.as_slice(), &mut out)?
        }
        Command::Diff { title, subtitle, base, target } => {
            diff(&title, subtitle.as_deref(), open(&base)?, open(&target)?, &mut out)?
        }
    }
    out.flush()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe downstream is not our failure to report.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dbsweep-flame: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Two samples as `perf script -F comm,pid,tid,time,event,ip,sym,dso` prints them, then one with a period.
    const SCRIPT: &str = "\
prog 10/10 100.000001: cpu-clock: \n\
\t            11f2 hot (/tmp/prog)\n\
\t            1249 main (/tmp/prog)\n\
\t           2724a __libc_start_call_main (/usr/lib/libc.so.6)\n\
\n\
prog 10/10 100.000003: cpu-clock: \n\
\t            11f2 hot (/tmp/prog)\n\
\t            1249 main (/tmp/prog)\n\
\t           2724a __libc_start_call_main (/usr/lib/libc.so.6)\n\
\n\
prog 10/10 100.000005: cpu-clock: \n\
\t            1300 cold (/tmp/prog)\n\
\t            1249 main (/tmp/prog)\n\
\t           2724a __libc_start_call_main (/usr/lib/libc.so.6)\n\
\n";

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn collapse_folds_stacks_root_first_with_the_process_name() {
        let mut out = Vec::new();
        collapse(SCRIPT.as_bytes(), &mut out).unwrap();
        let folded = text(out);
        let mut lines: Vec<&str> = folded.lines().collect();
        lines.sort_unstable();
        assert_eq!(lines, ["prog;__libc_start_call_main;main;cold 1", "prog;__libc_start_call_main;main;hot 2"]);
    }

    #[test]
    fn svg_is_titled_and_names_the_frames_with_their_samples() {
        let mut out = Vec::new();
        svg("A title", Some("a subtitle"), "p;main;hot 3\np;main;cold 1\n".as_bytes(), &mut out).unwrap();
        let svg = text(out);
        assert!(svg.starts_with("<?xml"));
        assert!(svg.contains("A title") && svg.contains("a subtitle"));
        assert!(svg.contains("<title>hot (3 samples, 75.00%)</title>"), "{svg}");
        assert!(!svg.contains("src=\"http"), "no external resources");
    }

    #[test]
    fn svg_is_deterministic() {
        let draw = || {
            let mut out = Vec::new();
            svg("t", None, "p;main;hot 3\np;main;cold 1\n".as_bytes(), &mut out).unwrap();
            out
        };
        assert_eq!(draw(), draw());
    }

    #[test]
    fn svg_of_nothing_fails() {
        assert!(svg("t", None, "".as_bytes(), Vec::new()).is_err());
    }

    fn fill_of(svg: &str, function: &str) -> String {
        // Each frame is `<g><title>NAME (...)</title><rect ... fill="rgb(...)" .../>...`.
        let at = svg.find(&format!("<title>{function} (")).unwrap_or_else(|| panic!("no frame {function}"));
        let rest = &svg[at..];
        let fill = &rest[rest.find("fill=\"").unwrap() + 6..];
        fill[..fill.find('"').unwrap()].to_string()
    }

    fn reddish(rgb: &str) -> bool {
        let v: Vec<u32> =
            rgb.trim_start_matches("rgb(").trim_end_matches(')').split(',').map(|s| s.parse().unwrap()).collect();
        v[0] > v[2]
    }

    #[test]
    fn diff_is_red_where_the_share_grew_and_blue_where_it_shrank_whatever_the_totals() {
        // Base: hot 90 %, cold 10 % of 100 samples. Target: hot 50 %, cold 50 % of 1000 samples: every frame has
        // more samples in the target, but only cold's share grew.
        let base = "p;main;hot 90\np;main;cold 10\n";
        let target = "p;main;hot 500\np;main;cold 500\n";
        let mut out = Vec::new();
        diff("d", None, base.as_bytes(), target.as_bytes(), &mut out).unwrap();
        let svg = text(out);
        assert!(reddish(&fill_of(&svg, "cold")), "{}", fill_of(&svg, "cold"));
        assert!(!reddish(&fill_of(&svg, "hot")), "{}", fill_of(&svg, "hot"));
        // The tooltip gives the target's samples and the change of share: cold 10 % -> 50 %.
        assert!(svg.contains("<title>cold (500 samples, 50.00%; +40.00%)</title>"), "{svg}");
        assert!(svg.contains("<title>hot (500 samples, 50.00%; -40.00%)</title>"), "{svg}");
    }
}
