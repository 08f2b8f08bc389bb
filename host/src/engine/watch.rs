//! The directory source: every `name.wasm` in a watched directory is the strategy `name`, reloaded when
//! the file changes and removed when it goes.
//!
//! Watches the directory itself (not the files) and rescans it periodically, because Kubernetes
//! updates a mounted ConfigMap by swapping a `..data` symlink, which per-file watches can miss. A file is
//! reloaded only when its content digest changes.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use super::error::LoadError;
use super::registry::{StrategyRegistry, StrategySource};
use super::sandbox::Digest;

/// How eagerly the directory is watched.
#[derive(Debug, Clone, Copy)]
pub struct WatchOptions {
    /// Quiet time after the last change before the directory is read (a write is often many events).
    pub debounce: Duration,
    /// A full rescan this often, whatever the events said.
    pub rescan_interval: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions { debounce: Duration::from_millis(150), rescan_interval: Duration::from_secs(30) }
    }
}

/// Why a directory cannot be watched.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("strategy directory {path}: {message}")]
    Directory { path: String, message: String },
}

enum Signal {
    Changed,
    Stop,
}

/// A running directory source; dropping it stops the watch (registered strategies stay).
pub struct DirectoryWatcher {
    signal: Sender<Signal>,
    thread: Option<JoinHandle<()>>,
    _watcher: notify::RecommendedWatcher,
}

impl DirectoryWatcher {
    /// Loads every strategy in `dir` now, then keeps the registry in step with the directory.
    pub fn start(registry: Arc<StrategyRegistry>, dir: &Path, options: WatchOptions) -> Result<Self, WatchError> {
        let dir_error = |message: String| WatchError::Directory { path: dir.display().to_string(), message };
        if !dir.is_dir() {
            return Err(dir_error("not a directory".to_string()));
        }
        let (tx, rx) = channel();
        let events = tx.clone();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if event.is_ok() {
                let _ = events.send(Signal::Changed);
            }
        })
        .map_err(|e| dir_error(e.to_string()))?;
        watcher.watch(dir, RecursiveMode::NonRecursive).map_err(|e| dir_error(e.to_string()))?;

        let mut sync = DirectorySync { registry, dir: dir.to_path_buf(), seen: HashMap::new() };
        sync.run();
        let thread = std::thread::Builder::new()
            .name("tern-strategy-dir".into())
            .spawn(move || {
                loop {
                    match rx.recv_timeout(options.rescan_interval) {
                        Ok(Signal::Changed) => {
                            if !wait_until_quiet(&rx, options.debounce) {
                                return;
                            }
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(Signal::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                    }
                    sync.run();
                }
            })
            .map_err(|e| dir_error(e.to_string()))?;
        Ok(DirectoryWatcher { signal: tx, thread: Some(thread), _watcher: watcher })
    }
}

/// Drains change signals until none arrives for `quiet`; false when asked to stop.
fn wait_until_quiet(rx: &std::sync::mpsc::Receiver<Signal>, quiet: Duration) -> bool {
    loop {
        match rx.recv_timeout(quiet) {
            Ok(Signal::Changed) => continue,
            Err(RecvTimeoutError::Timeout) => return true,
            Ok(Signal::Stop) | Err(RecvTimeoutError::Disconnected) => return false,
        }
    }
}

impl Drop for DirectoryWatcher {
    fn drop(&mut self) {
        let _ = self.signal.send(Signal::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Brings the registry in step with the directory's current content.
struct DirectorySync {
    registry: Arc<StrategyRegistry>,
    dir: PathBuf,
    /// The digest last tried for each name (loaded or rejected): unchanged files are not reloaded.
    seen: HashMap<String, Digest>,
}

impl DirectorySync {
    fn run(&mut self) {
        let files = match strategy_files(&self.dir) {
            Ok(files) => files,
            Err(error) => {
                tracing::warn!(dir = %self.dir.display(), %error, "cannot list the strategy directory; keeping what is loaded");
                return;
            }
        };
        for (name, path) in &files {
            self.load(name, path);
        }
        let gone: Vec<String> = self.seen.keys().filter(|name| !files.contains_key(*name)).cloned().collect();
        for name in gone {
            self.seen.remove(&name);
            let ours = self.registry.get(&name).is_some_and(|s| matches!(&s.source, StrategySource::File(p) if p.parent() == Some(self.dir.as_path())));
            if ours {
                self.registry.remove(&name);
            }
        }
    }

    fn load(&mut self, name: &str, path: &Path) {
        let source = StrategySource::File(path.to_path_buf());
        let bytes = match read_capped(path, self.registry.engine().limits().max_component_bytes) {
            Ok(bytes) => bytes,
            Err(error) => {
                self.registry.reject(name, source, error);
                return;
            }
        };
        let digest = Digest::of(&bytes);
        if self.seen.get(name) == Some(&digest) {
            return;
        }
        self.seen.insert(name.to_string(), digest);
        // Errors are published by the registry; the previous version keeps serving.
        let _ = self.registry.register(name, &bytes, source);
    }
}

/// `name -> path` for every `name.wasm` file (symlinks followed; hidden entries skipped).
fn strategy_files(dir: &Path) -> std::io::Result<HashMap<String, PathBuf>> {
    let mut files = HashMap::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else { continue };
        let Some(name) = file_name.strip_suffix(".wasm") else { continue };
        if name.is_empty() || file_name.starts_with('.') || !path.is_file() {
            continue;
        }
        files.insert(name.to_string(), path);
    }
    Ok(files)
}

/// The file's bytes, refusing files over `limit` without reading them whole.
fn read_capped(path: &Path, limit: usize) -> Result<Vec<u8>, LoadError> {
    let io = |e: std::io::Error| LoadError::Io { path: path.display().to_string(), message: e.to_string() };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() > limit {
        let size = std::fs::metadata(path).map(|m| m.len() as usize).unwrap_or(bytes.len());
        return Err(LoadError::TooLarge { size, limit });
    }
    Ok(bytes)
}
