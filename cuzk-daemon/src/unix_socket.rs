//! The Unix socket, private from its first instant. `bind` creates the socket file with
//! the process umask's rights, and a chmod after it leaves a window in which another user
//! could connect (and keep the connection). So the socket is bound inside a fresh 0700
//! directory beside the target, set to 0600 there, and only then renamed into place: a
//! bound socket keeps working under its new name.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use tokio::net::UnixListener;

pub fn bind_private(path: &Path) -> anyhow::Result<UnixListener> {
    let name = path
        .file_name()
        .ok_or_else(|| anyhow::anyhow!("unix socket {}: not a file path", path.display()))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let staging = parent.join(format!(
        ".{}.{}.staging",
        name.to_string_lossy(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&staging)
        .map_err(|e| anyhow::anyhow!("creating {}: {e}", staging.display()))?;
    let bound = (|| {
        let tmp = staging.join(name);
        let listener = UnixListener::bind(&tmp)
            .map_err(|e| anyhow::anyhow!("binding {}: {e}", path.display()))?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
        // A stale socket from an earlier run is replaced (rename over it is atomic).
        std::fs::rename(&tmp, path)
            .map_err(|e| anyhow::anyhow!("moving the socket to {}: {e}", path.display()))?;
        Ok(listener)
    })();
    let _ = std::fs::remove_dir_all(&staging);
    bound
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn socket_is_0600_and_accepts_at_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cuzk.sock");
        std::fs::write(&path, "stale").unwrap();
        let listener = bind_private(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let client = tokio::net::UnixStream::connect(&path);
        let (accepted, connected) = tokio::join!(listener.accept(), client);
        accepted.unwrap();
        connected.unwrap();
        // Nothing of the staging directory is left behind.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1);
    }
}
