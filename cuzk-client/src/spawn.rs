//! Starting a daemon of our own (bench --spawn, demo, tests): the `cuzk-daemon` binary next
//! to this one, on a free loopback port, its stderr (TIMELINE included) captured to a file.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub struct SpawnedDaemon {
    pub child: Child,
    /// `127.0.0.1:port`
    pub addr: String,
    /// Where the daemon's stderr goes.
    pub log_path: PathBuf,
}

/// The daemon binary: $CUZK_DAEMON, else `cuzk-daemon` beside the running executable.
pub fn daemon_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("CUZK_DAEMON") {
        return PathBuf::from(p);
    }
    let me = std::env::current_exe().unwrap_or_default();
    let dir = me.parent().unwrap_or(Path::new("."));
    // Test executables live in target/<profile>/deps; the binary one level up.
    for d in [dir, dir.parent().unwrap_or(dir)] {
        let p = d.join("cuzk-daemon");
        if p.exists() {
            return p;
        }
    }
    PathBuf::from("cuzk-daemon")
}

impl SpawnedDaemon {
    /// Start the daemon with extra `args`, logging to `log_path`, and wait until it listens.
    ///
    /// Unless `args` name a `--data-dir`, the daemon gets a fresh one of its own beside the
    /// log (`<log>.data`, emptied first): a daemon spawned for a bench, the demo or a test
    /// must neither share the user's job journal nor resume jobs of an earlier run.
    pub async fn start(args: &[String], log_path: &Path) -> anyhow::Result<SpawnedDaemon> {
        Self::start_with_env(args, &[], log_path).await
    }

    /// As `start`, with extra environment variables for the daemon (e.g. test hooks).
    pub async fn start_with_env(
        args: &[String],
        env: &[(&str, &str)],
        log_path: &Path,
    ) -> anyhow::Result<SpawnedDaemon> {
        let bin = daemon_binary();
        let mut own_data_dir = Vec::new();
        if !args
            .iter()
            .any(|a| a == "--data-dir" || a.starts_with("--data-dir="))
        {
            let dir = log_path.with_extension("data");
            // Only the journal file: never a recursive delete of a path derived from input.
            let _ = std::fs::remove_file(dir.join("journal.redb"));
            own_data_dir = vec!["--data-dir".to_string(), dir.display().to_string()];
        }
        let mut child = Command::new(&bin)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .args(&own_data_dir)
            .args(args)
            // Our own daemon on loopback: a token in the caller's environment is meant for
            // some other daemon, and our client does not send it.
            .env_remove("CUZK_AUTH_TOKEN")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| anyhow::anyhow!("starting {}: {e}", bin.display()))?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut lines = BufReader::new(stderr).lines();
        let mut log = tokio::fs::File::create(log_path).await?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let addr = loop {
            let line = tokio::time::timeout_at(deadline.into(), lines.next_line())
                .await
                .map_err(|_| anyhow::anyhow!("daemon did not start listening within 60 s"))??
                .ok_or_else(|| {
                    anyhow::anyhow!("daemon exited before listening; see {}", log_path.display())
                })?;
            use tokio::io::AsyncWriteExt;
            log.write_all(format!("{line}\n").as_bytes()).await?;
            if let Some(a) = line.strip_prefix("cuzk-daemon listening on ") {
                if !a.starts_with("unix:") {
                    break a.trim().to_string();
                }
            }
        };
        // Keep copying stderr to the log for the daemon's lifetime.
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            while let Ok(Some(line)) = lines.next_line().await {
                if log.write_all(format!("{line}\n").as_bytes()).await.is_err() {
                    break;
                }
            }
            let _ = log.flush().await;
        });
        Ok(SpawnedDaemon {
            child,
            addr,
            log_path: log_path.to_path_buf(),
        })
    }

    /// Send a signal (e.g. 15, SIGTERM) to the daemon, if it still runs.
    pub fn signal(&self, sig: i32) {
        if let Some(pid) = self.child.id() {
            // SAFETY: plain kill(2) on our own child's pid.
            unsafe { libc_kill(pid as i32, sig) };
        }
    }

    /// SIGTERM, then wait for a clean exit.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.signal(15);
        let _ = tokio::time::timeout(Duration::from_secs(60), self.child.wait()).await;
        // Give the log copier a moment to drain.
        tokio::time::sleep(Duration::from_millis(200)).await;
        Ok(())
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}
