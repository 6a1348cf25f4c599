//! An agent's CLI from npm, pinned: installed once into a cache that
//! outlives the test run (`$XDG_CACHE_HOME` or `$HOME/.cache`, under
//! `memory-serve-tests/`), and found there by later runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The binary `bin` of npm package `package` at `version`, installed
/// first where it is not yet; `None` (after a notice) where npm is missing
/// or the install fails, unless the `CI` variable is set: then the test
/// fails instead.
pub fn installed(package: &str, version: &str, bin: &str) -> Option<PathBuf> {
    let name = package.rsplit('/').next().unwrap_or(package);
    let dir = cache_dir(&format!("{name}-{version}"));
    let binary = dir
        .as_ref()
        .map(|d| d.join("node_modules").join(".bin").join(bin));
    if let Some(binary) = binary.as_ref().filter(|b| works(b, version)) {
        return Some(binary.clone());
    }
    let why = match (&dir, &binary) {
        (Some(dir), Some(binary)) => {
            let installed = Command::new("npm")
                .args(["install", "--prefix"])
                .arg(dir)
                .args(["--no-audit", "--no-fund", "--loglevel=error"])
                .arg(format!("{package}@{version}"))
                .stdout(Stdio::null())
                .status();
            match installed {
                Ok(s) if s.success() && works(binary, version) => return Some(binary.clone()),
                Ok(s) if s.success() => {
                    format!("{} does not run after the install", binary.display())
                }
                Ok(s) => format!("`npm install {package}@{version}` failed ({s})"),
                Err(e) => format!("npm cannot be run ({e})"),
            }
        }
        _ => "no cache folder (neither XDG_CACHE_HOME nor HOME is set)".to_string(),
    };
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("skipped: {package} is not available: {why}");
    None
}

/// The cache folder `name`.
fn cache_dir(name: &str) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("memory-serve-tests").join(name))
}

/// Whether `binary` answers `--version` with `version`.
fn works(binary: &Path, version: &str) -> bool {
    Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains(version))
}
