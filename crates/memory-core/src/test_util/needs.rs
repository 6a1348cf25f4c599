//! [`Needs`]: a test's service or data, found through an environment
//! variable; skipped honestly when it is missing.

use std::path::PathBuf;

/// What a test needs from its environment: a variable, and how to set it.
///
/// [`value`](Needs::value) and [`file`](Needs::file) hand back what the
/// test needs when it is there. When it is not, they print a notice and
/// return `None` (the test then returns early: a skip), except under CI
/// (`CI` set to anything but `""`, `0`, `false` or `no`, as CI services
/// set it), where they panic with the variable and how to provide it: a
/// CI run that lost its database or data must fail, not pass by skipping.
///
/// ```
/// use memory_core::test_util::Needs;
///
/// const REDIS: Needs = Needs {
///     var: "MY_PROJECT_REDIS_URL",
///     how: "start one with `docker run -p 6379:6379 redis` and set the variable",
/// };
/// # if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false") { return; }
/// // Unset here: a notice on stderr, and `None`.
/// assert_eq!(REDIS.value(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// The environment variable.
    pub var: &'static str,
    /// What to do to provide it (start a server, point at a folder).
    pub how: &'static str,
}

/// The PostgreSQL server the store tests write to.
///
/// ```
/// assert_eq!(memory_core::test_util::POSTGRES.var, "MEMORY_POSTGRES_URL");
/// ```
pub const POSTGRES: Needs = Needs {
    var: "MEMORY_POSTGRES_URL",
    how: "run `source .ci/postgres.sh` to start a throwaway server on 127.0.0.1 and set it",
};

/// The real data sets (agent trajectories, LoCoMo) the data-driven tests and
/// benchmarks read.
///
/// ```
/// assert_eq!(memory_core::test_util::DATA.var, "MEMORY_DATA_DIR");
/// ```
pub const DATA: Needs = Needs {
    var: "MEMORY_DATA_DIR",
    how: "set it to the folder holding the data sets (`agent-trajectories/`, `locomo/`)",
};

/// What a lookup comes to.
#[derive(Debug, PartialEq, Eq)]
enum Outcome<T> {
    Found(T),
    /// Missing, not under CI: the notice to print.
    Skip(String),
    /// Missing under CI: the failure message.
    Fail(String),
}

impl Needs {
    /// The variable's value when it is set and not empty.
    ///
    /// # Panics
    ///
    /// Under CI when the variable is unset or empty, with a message naming
    /// it and saying how to set it (that is how the test fails).
    ///
    /// ```
    /// use memory_core::test_util::Needs;
    /// const SHELL_PATH: Needs = Needs { var: "PATH", how: "set a PATH" };
    /// assert!(SHELL_PATH.value().is_some());
    /// ```
    #[track_caller]
    pub fn value(&self) -> Option<String> {
        let value = std::env::var(self.var).ok().filter(|v| !v.is_empty());
        self.settle(self.decide(value, None, under_ci()))
    }

    /// The file `relative` under the folder the variable names, when the
    /// variable is set and the file exists.
    ///
    /// # Panics
    ///
    /// Under CI when the variable is unset or the file is missing, with a
    /// message naming both and saying how to provide them.
    ///
    /// ```
    /// # if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false") { return; }
    /// let data = memory_core::test_util::DATA;
    /// if let Some(path) = data.file("locomo/locomo-dev.json") {
    ///     assert!(path.exists());
    /// }
    /// ```
    #[track_caller]
    pub fn file(&self, relative: &str) -> Option<PathBuf> {
        let value = std::env::var(self.var).ok().filter(|v| !v.is_empty());
        let outcome = match self.decide(value, None, under_ci()) {
            Outcome::Found(dir) => {
                let path = PathBuf::from(dir).join(relative);
                let exists = path.exists();
                self.decide(exists.then_some(path), Some(relative), under_ci())
            }
            Outcome::Skip(notice) => Outcome::Skip(notice),
            Outcome::Fail(message) => Outcome::Fail(message),
        };
        self.settle(outcome)
    }

    /// What `found` comes to; `file` names the file looked for under the
    /// variable's folder, when that is what is missing.
    fn decide<T>(&self, found: Option<T>, file: Option<&str>, ci: bool) -> Outcome<T> {
        if let Some(found) = found {
            return Outcome::Found(found);
        }
        let missing = match file {
            None => format!("{} is not set", self.var),
            Some(file) => format!("{file} is not in the folder {} names", self.var),
        };
        if ci {
            Outcome::Fail(format!(
                "{}{missing}, and under CI a test must not skip: {}",
                test_name(),
                self.how
            ))
        } else {
            Outcome::Skip(format!("skipping {}{missing} ({})", test_name(), self.how))
        }
    }

    #[track_caller]
    fn settle<T>(&self, outcome: Outcome<T>) -> Option<T> {
        match outcome {
            Outcome::Found(found) => Some(found),
            Outcome::Skip(notice) => {
                eprintln!("{notice}");
                None
            }
            Outcome::Fail(message) => panic!("{message}"),
        }
    }
}

/// Whether this runs under CI: `CI` set to anything but `""`, `0`,
/// `false` or `no`.
fn under_ci() -> bool {
    std::env::var("CI")
        .is_ok_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "" | "0" | "false" | "no"))
}

/// `"NAME: "` for the test running on this thread (the test harness names
/// its threads after the tests), or nothing.
fn test_name() -> String {
    match std::thread::current().name() {
        Some(name) if name != "main" => format!("{name}: "),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    const PROBED: Needs = Needs {
        var: "MEMORY_TEST_UTIL_PROBE",
        how: "start the probe service",
    };

    #[test]
    fn found_values_are_handed_back() {
        assert_eq!(PROBED.decide(Some(7), None, true), Outcome::Found(7));
    }

    #[test]
    fn missing_values_skip_locally_and_fail_under_ci() {
        let Outcome::Skip(notice) = PROBED.decide::<String>(None, None, false) else {
            panic!("a local run skips");
        };
        assert!(
            notice.contains("MEMORY_TEST_UTIL_PROBE is not set"),
            "{notice}"
        );
        assert!(notice.contains("start the probe service"), "{notice}");
        let Outcome::Fail(message) = PROBED.decide::<String>(None, Some("a/b.json"), true) else {
            panic!("a CI run fails");
        };
        assert!(
            message.contains("a/b.json is not in the folder MEMORY_TEST_UTIL_PROBE names"),
            "{message}"
        );
        assert!(
            message.contains("must not skip: start the probe service"),
            "{message}"
        );
    }

    /// Not a test of its own: what `a_missing_service_fails_under_ci_and_skips_elsewhere`
    /// runs in a child process, with the environment it sets.
    #[test]
    #[ignore = "run by a_missing_service_fails_under_ci_and_skips_elsewhere"]
    fn probe() {
        if let Some(value) = PROBED.value() {
            println!("probed {value}");
        }
    }

    fn run_probe(env: &[(&str, &str)]) -> (bool, String) {
        let mut command = Command::new(std::env::current_exe().expect("the test binary"));
        command
            .args([
                "--ignored",
                "--exact",
                "test_util::needs::tests::probe",
                "--nocapture",
            ])
            .env_remove("CI")
            .env_remove(PROBED.var);
        for (var, value) in env {
            command.env(var, value);
        }
        let output = command.output().expect("run the test binary");
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        (output.status.success(), text)
    }

    #[test]
    fn a_missing_service_fails_under_ci_and_skips_elsewhere() {
        let (passed, output) = run_probe(&[("CI", "true")]);
        assert!(
            !passed,
            "under CI=true a missing service must fail:\n{output}"
        );
        assert!(
            output.contains("MEMORY_TEST_UTIL_PROBE is not set, and under CI"),
            "{output}"
        );

        let (passed, output) = run_probe(&[]);
        assert!(passed, "locally a missing service skips:\n{output}");
        assert!(
            output.contains(
                "skipping test_util::needs::tests::probe: MEMORY_TEST_UTIL_PROBE is not set"
            ),
            "{output}"
        );

        let (passed, output) = run_probe(&[("CI", "false")]);
        assert!(passed, "CI=false is not CI:\n{output}");

        let (passed, output) = run_probe(&[("CI", "true"), (PROBED.var, "up")]);
        assert!(passed && output.contains("probed up"), "{output}");
    }
}
