//! Running an agent's CLI headless: its output kept in files, a time
//! limit, and the test failed, with what it wrote, where it exits other
//! than 0 or runs past the limit.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one run of a CLI left.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Runs `command` (its arguments, environment and folder set), its output
/// kept in `home`; fails the test where it exits other than 0 or runs
/// past `limit` (then it is killed).
pub fn run(mut command: Command, home: &Path, limit: Duration) -> Run {
    let out = home.join("cli.stdout");
    let err = home.join("cli.stderr");
    command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let started = Instant::now();
    let mut child = command.spawn().expect("the CLI starts");
    let status = loop {
        if let Some(status) = child.try_wait().expect("the CLI's status") {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let run = Run {
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        elapsed: started.elapsed(),
    };
    let tail = |s: &str| {
        let skip = s.chars().count().saturating_sub(4_000);
        s.chars().skip(skip).collect::<String>()
    };
    match status {
        None => panic!(
            "the CLI ran past {limit:?} and was killed\n--- stdout\n{}\n--- stderr\n{}",
            tail(&run.stdout),
            tail(&run.stderr)
        ),
        Some(s) if !s.success() => panic!(
            "the CLI failed ({s})\n--- stdout\n{}\n--- stderr\n{}",
            tail(&run.stdout),
            tail(&run.stderr)
        ),
        Some(_) => run,
    }
}

/// Files for an agent to read: `fNN.txt` for `n` in `1..=count`, each
/// starting with `marker(n)`, then numbered lines of ten of `words`
/// (drawn from `seed`), to `5 KB + (n * 7 % spread) KB`.
pub fn write_files(
    dir: &Path,
    count: usize,
    spread: usize,
    words: &[&str],
    mut seed: u64,
    marker: fn(usize) -> String,
) {
    for n in 1..=count {
        let size = 5_000 + (n * 7 % spread) * 1_000;
        let mut text = format!("{}\n", marker(n));
        let mut line = 0;
        while text.len() < size {
            line += 1;
            text.push_str(&format!("f{n:02} line {line}:"));
            for _ in 0..10 {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                text.push(' ');
                text.push_str(words[(seed >> 33) as usize % words.len()]);
            }
            text.push('\n');
        }
        std::fs::write(dir.join(format!("f{n:02}.txt")), text).unwrap();
    }
}
