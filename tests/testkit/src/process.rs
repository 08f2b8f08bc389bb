//! The tern-kube-apiserver child process: spawning, the ready line, stderr capture,
//! stopping and killing.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// Lines of stderr kept in memory (the whole stream goes to `<data dir>/apiserver.log`).
const TAIL_KEEP: usize = 200;
/// Lines of stderr shown in an error.
const TAIL_SHOW: usize = 40;
/// Exit code of tern-kube-apiserver when its port is taken.
const EXIT_PORT_TAKEN: i32 = 3;

type Job = Box<dyn FnOnce() + Send>;

/// All children are spawned from one long-lived thread: the Go side sets
/// PR_SET_PDEATHSIG, which fires when the *thread* that forked it exits. Spawning
/// from a test's own thread (or a tokio blocking-pool thread) would kill the API
/// server when that thread ends; this thread lives as long as the test process.
fn spawn_on_spawner_thread(cmd: Command) -> std::io::Result<Child> {
    static SPAWNER: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("tern-testkit-spawner".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            });
        if let Err(e) = spawned {
            eprintln!("tern-testkit: cannot start the spawner thread: {e}");
        }
        tx
    });
    let (tx, rx) = mpsc::sync_channel(1);
    let mut cmd = cmd;
    let job: Job = Box::new(move || {
        let _ = tx.send(cmd.spawn());
    });
    if sender.send(job).is_err() {
        return Err(std::io::Error::other("tern-testkit spawner thread is gone"));
    }
    rx.recv().unwrap_or_else(|_| {
        Err(std::io::Error::other(
            "tern-testkit spawner thread dropped the request",
        ))
    })
}

pub(crate) struct ApiServerProcess {
    child: Child,
    cluster: String,
    tail: Arc<Mutex<VecDeque<String>>>,
    stderr_done: Arc<AtomicBool>,
}

impl ApiServerProcess {
    /// Spawns the binary and waits (bounded) for its `ready ` line.
    pub(crate) async fn start(
        bin: &Path,
        cluster: &str,
        port: u16,
        data_dir: &Path,
        kubeconfig: &Path,
        timeout: Duration,
    ) -> Result<Self> {
        let mut cmd = Command::new(bin);
        cmd.arg("-port")
            .arg(port.to_string())
            .arg("-data-dir")
            .arg(data_dir)
            .arg("-kubeconfig")
            .arg(kubeconfig)
            .arg("-ready-timeout")
            .arg(format!("{}s", timeout.as_secs() + 5))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Own process group, so that stop/kill reach anything it might fork.
            .process_group(0);
        let mut child = spawn_on_spawner_thread(cmd).map_err(|source| Error::Spawn {
            cluster: cluster.to_string(),
            path: bin.to_path_buf(),
            source,
        })?;

        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_KEEP)));
        let stderr_done = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();

        if let Some(stdout) = child.stdout.take() {
            let _ = std::thread::Builder::new()
                .name(format!("apiserver-{cluster}-stdout"))
                .spawn(move || {
                    let mut ready_tx = Some(ready_tx);
                    // Keep reading to EOF: a closed pipe would kill the Go side (SIGPIPE).
                    for line in BufReader::new(stdout).lines() {
                        let Ok(line) = line else { break };
                        if line.starts_with("ready ")
                            && let Some(tx) = ready_tx.take()
                        {
                            let _ = tx.send(());
                        }
                    }
                });
        }
        if let Some(stderr) = child.stderr.take() {
            let tail = tail.clone();
            let done = stderr_done.clone();
            let log_path = data_dir.join("apiserver.log");
            let _ = std::thread::Builder::new()
                .name(format!("apiserver-{cluster}-stderr"))
                .spawn(move || {
                    let mut log = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(log_path)
                        .ok();
                    for line in BufReader::new(stderr).lines() {
                        let Ok(line) = line else { break };
                        if let Some(f) = log.as_mut() {
                            let _ = writeln!(f, "{line}");
                        }
                        if let Ok(mut t) = tail.lock() {
                            if t.len() == TAIL_KEEP {
                                t.pop_front();
                            }
                            t.push_back(line);
                        }
                    }
                    done.store(true, Ordering::SeqCst);
                });
        }

        let mut proc = Self {
            child,
            cluster: cluster.to_string(),
            tail,
            stderr_done,
        };
        match tokio::time::timeout(timeout, ready_rx).await {
            Ok(Ok(())) => Ok(proc),
            Ok(Err(_)) => {
                // stdout closed without the ready line: the process is exiting.
                let status = proc.wait_exit(Duration::from_secs(10)).await;
                proc.wait_stderr_drained(Duration::from_secs(2)).await;
                let stderr = proc.stderr_tail();
                let port_taken = status.and_then(|s| s.code()) == Some(EXIT_PORT_TAKEN)
                    || stderr.contains("address already in use");
                if port_taken {
                    Err(Error::PortTaken {
                        cluster: proc.cluster.clone(),
                        port,
                        stderr,
                    })
                } else {
                    Err(Error::Exited {
                        cluster: proc.cluster.clone(),
                        status: describe(status),
                        stderr,
                    })
                }
            }
            Err(_) => {
                let stderr = proc.stderr_tail();
                proc.kill_now();
                Err(Error::NotReady {
                    cluster: proc.cluster.clone(),
                    secs: timeout.as_secs(),
                    stderr,
                })
            }
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last stderr lines, joined.
    pub(crate) fn stderr_tail(&self) -> String {
        let Ok(t) = self.tail.lock() else {
            return String::new();
        };
        let skip = t.len().saturating_sub(TAIL_SHOW);
        t.iter()
            .skip(skip)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Sends `sig` to the process group, unless the child has already been reaped.
    fn signal_group(&mut self, sig: libc::c_int) {
        if let Ok(None) = self.child.try_wait() {
            // Not reaped yet, so the pid (= process group id) is still ours.
            let Ok(pgid) = libc::pid_t::try_from(self.child.id()) else {
                return;
            };
            // SAFETY: plain syscall on a process group we created.
            unsafe {
                libc::killpg(pgid, sig);
            }
        }
    }

    async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => return Some(s),
                Ok(None) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(25)).await
                }
                _ => return None,
            }
        }
    }

    async fn wait_stderr_drained(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.stderr_done.load(Ordering::SeqCst) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Graceful stop: SIGTERM to the group, SIGKILL after `grace`.
    pub(crate) async fn stop(mut self, grace: Duration) -> Result<()> {
        self.signal_group(libc::SIGTERM);
        if self.wait_exit(grace).await.is_none() {
            self.kill_now();
        }
        self.wait_stderr_drained(Duration::from_secs(2)).await;
        Ok(())
    }

    /// SIGKILL to the group and reap (used by Drop, also while panicking).
    pub(crate) fn kill_now(&mut self) {
        self.signal_group(libc::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ApiServerProcess {
    fn drop(&mut self) {
        self.kill_now();
    }
}

fn describe(status: Option<ExitStatus>) -> String {
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => s.to_string(),
        },
        None => "still running after stdout closed".to_string(),
    }
}
