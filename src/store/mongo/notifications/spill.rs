//! An external sort of notification causes by recipient, so that a rebuild holds a
//! bounded number of them in memory whatever the data set's size: records are buffered
//! up to a run's size, sorted and written to a temporary file (in the system's temporary
//! directory, removed when done) as a run; the runs are then merged, recipient by
//! recipient, reading one record ahead in each. Memory: a run's records, plus one record
//! and a read buffer per run.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

use crate::domain::PostId;
use crate::store::{StoreError, StoreResult};

/// One record: a cause of a notification of `user`, or (`kind` [`EXISTS`]) the user's
/// creation time, which decides whether a mention of them counts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Record {
    pub user: String,
    pub kind: u8,
    pub actor: String,
    pub post: Option<PostId>,
    pub at: i64,
}

/// The kind of a user's own record.
pub(super) const EXISTS: u8 = u8::MAX;

fn io(error: std::io::Error) -> StoreError {
    StoreError::Backend(anyhow::anyhow!("spilling notification causes: {error}"))
}

fn write_str(out: &mut impl Write, s: &str) -> std::io::Result<()> {
    out.write_all(&(s.len() as u32).to_le_bytes())?;
    out.write_all(s.as_bytes())
}

fn read_str(input: &mut impl Read) -> std::io::Result<String> {
    let mut len = [0; 4];
    input.read_exact(&mut len)?;
    let mut bytes = vec![0; u32::from_le_bytes(len) as usize];
    input.read_exact(&mut bytes)?;
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

fn write_record(out: &mut impl Write, r: &Record) -> std::io::Result<()> {
    write_str(out, &r.user)?;
    out.write_all(&[r.kind, u8::from(r.post.is_some())])?;
    write_str(out, &r.actor)?;
    out.write_all(&r.post.map_or([0; 12], |p| p.bytes()))?;
    out.write_all(&r.at.to_le_bytes())
}

/// The next record, `None` at the end of the run.
fn read_record(input: &mut impl Read) -> std::io::Result<Option<Record>> {
    let user = match read_str(input) {
        Ok(user) => user,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut flags = [0; 2];
    input.read_exact(&mut flags)?;
    let actor = read_str(input)?;
    let mut post = [0; 12];
    input.read_exact(&mut post)?;
    let mut at = [0; 8];
    input.read_exact(&mut at)?;
    Ok(Some(Record {
        user,
        kind: flags[0],
        actor,
        post: (flags[1] == 1).then(|| PostId::from_bytes(post)),
        at: i64::from_le_bytes(at),
    }))
}

/// Records gathered into sorted runs on disk.
pub(super) struct Spill {
    buffer: Vec<Record>,
    dir: PathBuf,
    runs: Vec<PathBuf>,
    run_size: usize,
}

impl Drop for Spill {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Spill {
    pub(super) fn new(run_size: usize) -> StoreResult<Spill> {
        let dir = std::env::temp_dir().join(format!(
            "socialite-notifications-{}-{:016x}",
            std::process::id(),
            rand::random::<u64>()
        ));
        std::fs::create_dir_all(&dir).map_err(io)?;
        Ok(Spill {
            buffer: Vec::with_capacity(run_size.min(1 << 16)),
            dir,
            runs: Vec::new(),
            run_size: run_size.max(1),
        })
    }

    pub(super) fn push(&mut self, record: Record) -> StoreResult<()> {
        self.buffer.push(record);
        if self.buffer.len() >= self.run_size {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> StoreResult<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.buffer.sort_unstable();
        let path = self.dir.join(format!("run-{}", self.runs.len()));
        let mut out = BufWriter::new(File::create(&path).map_err(io)?);
        for record in self.buffer.drain(..) {
            write_record(&mut out, &record).map_err(io)?;
        }
        out.flush().map_err(io)?;
        self.runs.push(path);
        Ok(())
    }

    /// How many runs were written so far (for tests).
    #[cfg(test)]
    fn runs(&self) -> usize {
        self.runs.len()
    }

    /// The records merged, one recipient at a time, in recipient order.
    pub(super) fn merged(mut self) -> StoreResult<Merged> {
        self.flush()?;
        let mut readers = Vec::with_capacity(self.runs.len());
        let mut heads = BinaryHeap::new();
        for (index, path) in self.runs.iter().enumerate() {
            let mut reader = BufReader::with_capacity(64 * 1024, File::open(path).map_err(io)?);
            if let Some(record) = read_record(&mut reader).map_err(io)? {
                heads.push(Reverse((record, index)));
            }
            readers.push(reader);
        }
        Ok(Merged {
            _spill: self,
            readers,
            heads,
        })
    }
}

/// The runs being merged.
pub(super) struct Merged {
    /// Holds the files until the merge ends.
    _spill: Spill,
    readers: Vec<BufReader<File>>,
    heads: BinaryHeap<Reverse<(Record, usize)>>,
}

impl Merged {
    /// The next recipient's records, in order; `None` once every run is read.
    pub(super) fn next_user(&mut self) -> StoreResult<Option<(String, Vec<Record>)>> {
        let Some(Reverse((first, _))) = self.heads.peek() else {
            return Ok(None);
        };
        let user = first.user.clone();
        let mut records = Vec::new();
        while let Some(Reverse((record, _))) = self.heads.peek() {
            if record.user != user {
                break;
            }
            let Some(Reverse((record, run))) = self.heads.pop() else {
                break;
            };
            records.push(record);
            if let Some(next) = read_record(&mut self.readers[run]).map_err(io)? {
                self.heads.push(Reverse((next, run)));
            }
        }
        Ok(Some((user, records)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_grouped_by_user_in_order_across_runs() {
        let mut spill = Spill::new(3).unwrap();
        let users = ["cy", "al", "bo", "al", "cy", "al", "bo", "dee"];
        for (i, user) in users.iter().enumerate() {
            let post = (i % 2 == 0).then(|| PostId::at(1_700_000_000_000 + i as i64, 1));
            spill
                .push(Record {
                    user: (*user).into(),
                    kind: i as u8,
                    actor: format!("a{i}"),
                    post,
                    at: i as i64,
                })
                .unwrap();
        }
        assert_eq!(spill.runs(), 2, "two full runs, the rest still buffered");
        let dir = spill.dir.clone();
        let mut merged = spill.merged().unwrap();
        let mut got = Vec::new();
        while let Some((user, records)) = merged.next_user().unwrap() {
            assert!(records.iter().all(|r| r.user == user));
            assert!(records.windows(2).all(|w| w[0] <= w[1]));
            got.push((user, records.len()));
        }
        let want = [("al", 3), ("bo", 2), ("cy", 2), ("dee", 1)];
        let want: Vec<(String, usize)> = want.iter().map(|(u, n)| (u.to_string(), *n)).collect();
        assert_eq!(got, want);
        drop(merged);
        assert!(!dir.exists(), "the runs are removed");
    }
}
