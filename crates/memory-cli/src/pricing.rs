//! [`Pricing`]: what a model call costs under a provider's prefix cache, in
//! units of one fresh (uncached) input token.
//!
//! A call's context splits into the prefix it shares with the previous
//! call's context, which the provider's prefix cache serves
//! (`cached_tokens`), and the rest (`uncached_tokens`), which is written to
//! the cache. Summarizer calls are billed as plain input and output:
//!
//! ```text
//! cost = uncached x write + cached x read + summarizer_input x 1 + summarizer_output x output
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

/// Price factors, relative to one fresh input token.
///
/// ```
/// use memory_cli::pricing::Pricing;
/// let p = Pricing::parse("anthropic").unwrap();
/// assert_eq!((p.write, p.read, p.output), (1.25, 0.10, 5.0));
/// // 1,000 tokens, 800 of them cached, and a summary of 500 in, 100 out.
/// assert!((p.cost(200, 800, 500, 100) - (250.0 + 80.0 + 500.0 + 500.0)).abs() < 1e-9);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// The profile's name (`anthropic`, `openai`, `gemini`, `flat`, `custom`).
    pub name: &'static str,
    /// Factor of an input token not served from the cache (written to it).
    pub write: f64,
    /// Factor of an input token served from the cache.
    pub read: f64,
    /// Factor of a summarizer output token.
    pub output: f64,
}

/// The named profiles `--pricing` accepts: `(name, write, read, output)`.
pub const PROFILES: &[(&str, f64, f64, f64)] = &[
    ("anthropic", 1.25, 0.10, 5.0),
    ("openai", 1.0, 0.50, 4.0),
    ("gemini", 1.0, 0.25, 4.0),
    ("flat", 1.0, 1.0, 1.0),
];

impl Default for Pricing {
    /// The `anthropic` profile.
    ///
    /// ```
    /// assert_eq!(memory_cli::pricing::Pricing::default().name, "anthropic");
    /// ```
    fn default() -> Self {
        let (name, write, read, output) = PROFILES[0];
        Self {
            name,
            write,
            read,
            output,
        }
    }
}

impl Pricing {
    /// The profile `spec` names: one of [`PROFILES`], or `custom:W,R,O`
    /// (three non-negative numbers).
    ///
    /// # Errors
    ///
    /// A sentence naming what is wrong and what is accepted.
    ///
    /// ```
    /// use memory_cli::pricing::Pricing;
    /// let p = Pricing::parse("custom:2,0.2,8").unwrap();
    /// assert_eq!((p.name, p.write, p.read, p.output), ("custom", 2.0, 0.2, 8.0));
    /// assert!(Pricing::parse("custom:1,2").is_err());
    /// assert!(Pricing::parse("azure").unwrap_err().contains("anthropic, openai, gemini, flat"));
    /// ```
    pub fn parse(spec: &str) -> Result<Self, String> {
        let spec = spec.trim();
        if let Some(&(name, write, read, output)) = PROFILES.iter().find(|p| p.0 == spec) {
            return Ok(Self {
                name,
                write,
                read,
                output,
            });
        }
        let Some(factors) = spec.strip_prefix("custom:") else {
            let known: Vec<&str> = PROFILES.iter().map(|p| p.0).collect();
            return Err(format!(
                "unknown pricing `{spec}`; use one of {}, or custom:W,R,O",
                known.join(", ")
            ));
        };
        let numbers: Vec<f64> = factors
            .split(',')
            .map(|f| f.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                format!("`{spec}`: custom:W,R,O takes three numbers, e.g. custom:1.25,0.1,5")
            })?;
        match numbers[..] {
            [write, read, output] if numbers.iter().all(|n| n.is_finite() && *n >= 0.0) => {
                Ok(Self {
                    name: "custom",
                    write,
                    read,
                    output,
                })
            }
            _ => Err(format!(
                "`{spec}`: custom:W,R,O takes three non-negative numbers (write, read, output), e.g. custom:1.25,0.1,5"
            )),
        }
    }

    /// The cost of one call, in fresh input tokens.
    ///
    /// ```
    /// let flat = memory_cli::pricing::Pricing::parse("flat").unwrap();
    /// assert_eq!(flat.cost(10, 90, 0, 0), 100.0);
    /// ```
    pub fn cost(
        &self,
        uncached: usize,
        cached: usize,
        summarizer_input: u64,
        summarizer_output: u64,
    ) -> f64 {
        uncached as f64 * self.write
            + cached as f64 * self.read
            + summarizer_input as f64
            + summarizer_output as f64 * self.output
    }
}

impl fmt::Display for Pricing {
    /// `anthropic (write 1.25, read 0.1, output 5)`.
    ///
    /// ```
    /// let p = memory_cli::pricing::Pricing::default();
    /// assert_eq!(p.to_string(), "anthropic (write 1.25, read 0.1, output 5)");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (write {}, read {}, output {})",
            self.name, self.write, self.read, self.output
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_parses_with_its_factors() {
        for &(name, write, read, output) in PROFILES {
            let p = Pricing::parse(name).unwrap();
            assert_eq!((p.write, p.read, p.output), (write, read, output));
        }
        assert_eq!(Pricing::parse("openai").unwrap().read, 0.5);
        assert_eq!(Pricing::parse("gemini").unwrap().read, 0.25);
    }

    #[test]
    fn custom_factors_are_checked() {
        for bad in [
            "custom:",
            "custom:1,2,x",
            "custom:1,-1,2",
            "custom:1,2,3,4",
            "custom:nan,1,1",
        ] {
            assert!(Pricing::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_cost_follows_the_formula() {
        let p = Pricing::parse("openai").unwrap();
        // 300 fresh x 1 + 700 cached x 0.5 + 1,000 summarizer in + 200 out x 4.
        assert_eq!(
            p.cost(300, 700, 1_000, 200),
            300.0 + 350.0 + 1_000.0 + 800.0
        );
    }
}
