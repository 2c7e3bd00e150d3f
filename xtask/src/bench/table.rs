//! A plain-text table with aligned columns, and number formats shared by the benches.

use std::time::Duration;

/// Column alignment.
#[derive(Clone, Copy)]
pub enum Align {
    /// Pad on the right.
    Left,
    /// Pad on the left.
    Right,
}

/// Rows of cells rendered with columns padded to their widest cell.
pub struct Table {
    header: Vec<(&'static str, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(header: Vec<(&'static str, Align)>) -> Table {
        Table {
            header,
            rows: Vec::new(),
        }
    }

    /// Add a row (missing cells are blank).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text, two spaces between columns, a rule under the header.
    pub fn render(&self) -> String {
        let cell = |row: &[String], i: usize| row.get(i).cloned().unwrap_or_default();
        let widths: Vec<usize> = (0..self.header.len())
            .map(|i| {
                self.rows
                    .iter()
                    .map(|r| cell(r, i).chars().count())
                    .chain([self.header[i].0.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<String>| {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| match self.header[i].1 {
                    Align::Left => format!("{c:<w$}", w = widths[i]),
                    Align::Right => format!("{c:>w$}", w = widths[i]),
                })
                .collect();
            parts.join("  ").trim_end().to_string() + "\n"
        };
        let mut out = line(self.header.iter().map(|h| h.0.to_string()).collect());
        out += &line(widths.iter().map(|&w| "-".repeat(w)).collect());
        for row in &self.rows {
            out += &line((0..self.header.len()).map(|i| cell(row, i)).collect());
        }
        out
    }
}

/// Seconds with three decimals: `1.234s`.
pub fn secs(d: Duration) -> String {
    format!("{:.3}s", d.as_secs_f64())
}

/// KiB as MiB with one decimal: `45.2 MiB`.
pub fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// A ratio with two decimals: `2.41x`.
pub fn ratio(r: f64) -> String {
    format!("{r:.2}x")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_aligned() {
        let mut t = Table::new(vec![("tool", Align::Left), ("time", Align::Right)]);
        t.row(vec!["rg".into(), "1.0s".into()]);
        t.row(vec!["lesson lint".into(), "12.5s".into()]);
        assert_eq!(
            t.render(),
            "tool          time\n-----------  -----\nrg            1.0s\nlesson lint  12.5s\n"
        );
    }
}
