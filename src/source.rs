//! Reading files and mapping byte offsets to 1-based lines and character columns.

use std::ops::Range;
use std::path::{Path, PathBuf};

/// What a reading thread's buffer holds before it grows: more than almost any lesson file.
const READ_BUFFER: usize = 64 << 10;
/// A buffer that grew past this for a large file is let go rather than kept for the next.
const KEPT_BUFFER: usize = 2 << 20;

/// The UTF-8 byte order mark.
pub const BOM: &str = "\u{feff}";

/// A file's text with a line index. Offsets everywhere in the crate are byte offsets into `text`.
#[derive(Debug, Clone)]
pub struct Source {
    /// The path as shown in diagnostics (relative to where the command runs when possible).
    pub path: PathBuf,
    /// The file's text. For a file that is not valid UTF-8 this is the valid prefix only.
    pub text: String,
    /// Built on first use: most files of a clean bank never need a position.
    line_starts: std::sync::OnceLock<Vec<usize>>,
}

/// Why a file's bytes could not be taken as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadProblem {
    /// The file is larger than the configured limit; none of its text is kept.
    TooLarge {
        /// The file's size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// The bytes are not UTF-8; `offset` is the first invalid byte.
    InvalidUtf8 {
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// The text holds a NUL byte at `offset` (a binary file, or a corrupted one).
    NulByte {
        /// Byte offset of the NUL.
        offset: usize,
    },
    /// The file could not be read at all.
    Io {
        /// The operating system's message.
        message: String,
    },
}

impl Source {
    /// Wrap text that is already in memory.
    pub fn new(path: impl Into<PathBuf>, text: String) -> Self {
        Source {
            path: path.into(),
            text,
            line_starts: std::sync::OnceLock::new(),
        }
    }

    /// Keep only the first `end` bytes (clamped down to a character boundary), in a buffer of
    /// their size: for a document whose rest nothing will point into again.
    pub fn keep_prefix(&mut self, end: usize) {
        let end = floor_char_boundary(&self.text, end.min(self.text.len()));
        if end < self.text.len() {
            self.text = self.text[..end].to_owned();
            self.line_starts = std::sync::OnceLock::new();
        }
    }

    fn starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| line_starts(&self.text))
    }

    /// Read a file, refusing files over `limit` bytes (reading no more than `limit + 1` of them).
    ///
    /// On a problem the returned `Source` holds as much text as can be shown (for an invalid
    /// UTF-8 file, the valid prefix), so that the diagnostic can still point into it.
    pub fn read(path: &Path, display: PathBuf, limit: u64) -> (Source, Option<ReadProblem>) {
        Source::read_opened(std::fs::File::open(path), display, limit)
    }

    /// [`Source::read`] of a file already opened (or that failed to open), shown as `display`.
    pub fn read_opened(
        file: std::io::Result<std::fs::File>,
        display: PathBuf,
        limit: u64,
    ) -> (Source, Option<ReadProblem>) {
        use std::io::Read;
        let failed = |err: std::io::Error| {
            let problem = ReadProblem::Io {
                message: err.to_string(),
            };
            (Source::new(display.clone(), String::new()), Some(problem))
        };
        // this runs for every file of the bank: one open, reads into a buffer this thread keeps
        // until one returns nothing, one close (no fstat, as ripgrep), then one exact copy
        let mut file = match file {
            Ok(file) => file,
            Err(err) => return failed(err),
        };
        thread_local! {
            static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let read = BUFFER.with_borrow_mut(|buffer| {
            buffer.clear();
            buffer.reserve(READ_BUFFER);
            // `take` bounds a file that is over the limit, or grows while it is read
            let read = file
                .by_ref()
                .take(limit + 1)
                .read_to_end(buffer)
                .map(|_| (buffer.len() as u64 <= limit).then(|| buffer.to_vec()));
            if buffer.capacity() > KEPT_BUFFER {
                *buffer = Vec::new();
            }
            read
        });
        match read {
            Err(err) => failed(err),
            Ok(Some(bytes)) => Source::from_bytes(display, bytes),
            Ok(None) => {
                let size = file
                    .metadata()
                    .map_or(limit + 1, |m| m.len().max(limit + 1));
                let problem = ReadProblem::TooLarge { size, limit };
                (Source::new(display, String::new()), Some(problem))
            }
        }
    }

    /// Take bytes as text, reporting invalid UTF-8 and NUL bytes.
    pub fn from_bytes(display: PathBuf, bytes: Vec<u8>) -> (Source, Option<ReadProblem>) {
        match String::from_utf8(bytes) {
            Ok(text) => {
                let nul = memchr_nul(text.as_bytes());
                (
                    Source::new(display, text),
                    nul.map(|offset| ReadProblem::NulByte { offset }),
                )
            }
            Err(err) => {
                let offset = err.utf8_error().valid_up_to();
                let mut bytes = err.into_bytes();
                bytes.truncate(offset);
                let text = String::from_utf8(bytes).expect("prefix up to valid_up_to is UTF-8");
                (
                    Source::new(display, text),
                    Some(ReadProblem::InvalidUtf8 { offset }),
                )
            }
        }
    }

    /// Number of lines (a trailing newline does not start a new line).
    pub fn line_count(&self) -> usize {
        let starts = self.starts();
        let n = starts.len();
        if n > 1 && starts[n - 1] == self.text.len() {
            n - 1
        } else {
            n
        }
    }

    /// Byte offset where `line` (1-based) starts, after a BOM on line 1.
    pub fn line_start(&self, line: usize) -> usize {
        let starts = self.starts();
        starts[line.clamp(1, starts.len()) - 1]
    }

    /// The text of `line` (1-based) without its line ending.
    pub fn line_text(&self, line: usize) -> &str {
        let start = self.line_start(line);
        let end = self.starts().get(line).copied().unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// The 1-based line and 1-based character column of a byte offset.
    ///
    /// Offsets past the end map to the end; offsets inside a character map to that character;
    /// offsets inside a line ending (after a `\r`) map to the end of the line's text.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(&self.text, offset.min(self.text.len()));
        let starts = self.starts();
        let line = starts.partition_point(|&s| s <= offset).max(1);
        let start = starts[line - 1];
        let col = if offset < start {
            // inside the BOM
            1
        } else {
            let content_end = start + self.line_text(line).len();
            self.text[start..offset.min(content_end)].chars().count() + 1
        };
        (line, col)
    }

    /// Start and end positions of a byte range, both as 1-based (line, column).
    pub fn range_positions(&self, range: &Range<usize>) -> ((usize, usize), (usize, usize)) {
        (self.line_col(range.start), self.line_col(range.end))
    }
}

fn memchr_nul(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(0, bytes)
}

fn line_starts(text: &str) -> Vec<usize> {
    let first = if text.starts_with(BOM) { BOM.len() } else { 0 };
    let mut starts = Vec::with_capacity(text.len() / 32 + 2);
    starts.push(first);
    starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
    starts
}

/// The largest char boundary at or below `offset`.
pub fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters_and_skips_bom() {
        let src = Source::new("a.md", format!("{BOM}ab\r\né x\n"));
        assert_eq!(src.line_col(3), (1, 1));
        assert_eq!(src.line_col(4), (1, 2));
        let x = src.text.find('x').unwrap();
        assert_eq!(src.line_col(x), (2, 3));
        assert_eq!(src.line_text(1), "ab");
        assert_eq!(src.line_count(), 2);
    }

    #[test]
    fn offsets_inside_a_line_ending_map_to_the_end_of_the_line() {
        let src = Source::new("a.md", "ab\r\ncd\r".to_string());
        assert_eq!(src.line_col(2), (1, 3));
        assert_eq!(src.line_col(3), (1, 3));
        assert_eq!(src.line_col(4), (2, 1));
        assert_eq!(src.line_col(src.text.len()), (2, 3));
    }

    #[test]
    fn invalid_utf8_keeps_valid_prefix() {
        let (src, problem) = Source::from_bytes("x".into(), b"ok\n\xff rest".to_vec());
        assert_eq!(problem, Some(ReadProblem::InvalidUtf8 { offset: 3 }));
        assert_eq!(src.text, "ok\n");
        assert_eq!(src.line_col(3), (2, 1));
    }
}
