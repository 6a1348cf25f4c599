//! [`Table`]: figures side by side, one column per pipeline, for stdout.

/// A plain-text table: a label column, then one right-aligned column per
/// heading.
///
/// ```
/// use memory_cli::Table;
/// let mut table = Table::new(["window", "window,window"]);
/// table.row("calls", [15, 15]);
/// table.row("cache breaks", ["3", "3"]);
/// assert_eq!(
///     table.to_string(),
///     "              window  window,window\n\
///      calls             15             15\n\
///      cache breaks       3              3"
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    headings: Vec<String>,
    rows: Vec<(String, Vec<String>)>,
}

impl Table {
    /// A table with these column headings and no rows yet.
    ///
    /// ```
    /// assert_eq!(memory_cli::Table::new(["a"]).rows(), 0);
    /// ```
    pub fn new<S: Into<String>>(headings: impl IntoIterator<Item = S>) -> Self {
        Self {
            headings: headings.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row: its label and one cell per column (missing cells are
    /// blank, extra ones dropped).
    ///
    /// ```
    /// let mut t = memory_cli::Table::new(["a", "b"]);
    /// t.row("x", [1]);
    /// assert_eq!(t.rows(), 1);
    /// ```
    pub fn row<T: ToString>(
        &mut self,
        label: impl Into<String>,
        cells: impl IntoIterator<Item = T>,
    ) -> &mut Self {
        let mut cells: Vec<String> = cells.into_iter().map(|c| c.to_string()).collect();
        cells.resize(self.headings.len(), String::new());
        self.rows.push((label.into(), cells));
        self
    }

    /// Number of rows.
    ///
    /// ```
    /// assert_eq!(memory_cli::Table::default().rows(), 0);
    /// ```
    pub fn rows(&self) -> usize {
        self.rows.len()
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let width = |s: &str| s.chars().count();
        let label_width = self
            .rows
            .iter()
            .map(|(label, _)| width(label))
            .max()
            .unwrap_or(0);
        let widths: Vec<usize> = self
            .headings
            .iter()
            .enumerate()
            .map(|(i, heading)| {
                self.rows
                    .iter()
                    .map(|(_, cells)| width(&cells[i]))
                    .chain([width(heading)])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |label: &str, cells: &[String]| {
            let mut line = format!("{label:<label_width$}");
            for (cell, w) in cells.iter().zip(&widths) {
                line.push_str(&format!("  {cell:>w$}"));
            }
            line.trim_end().to_string()
        };
        let mut lines = vec![line("", &self.headings)];
        lines.extend(self.rows.iter().map(|(label, cells)| line(label, cells)));
        f.write_str(&lines.join("\n"))
    }
}
