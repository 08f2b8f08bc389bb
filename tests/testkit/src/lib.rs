//! Test support: starts real kube-apiserver + etcd processes for Tern tests.
//!
//! Each [`TestCluster`] is one independent Kubernetes API server (the real
//! `k8s.io/kubernetes` kube-apiserver with an embedded etcd, built by
//! `tests/kube-apiserver/build.sh`), with its own data dir and port: a "cluster" per
//! geo tag.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tern_testkit::Error> {
//! use tern_testkit::TestCluster;
//! let clusters = TestCluster::start_many(&["eu", "us"]).await?;
//! let eu = &clusters[0];
//! eu.install_crds_from_file("tests/fixtures/widget-crd.yaml").await?;
//! let ns = eu.create_namespace("demo").await?;
//! let sa_client = eu.service_account_client(&ns, "reader").await?;
//! # let _ = sa_client; Ok(()) }
//! ```
//!
//! Processes are killed when the [`TestCluster`] is dropped (also while a test
//! panics), and the Go side asks the kernel for SIGTERM when the test process dies.
//!
//! Environment:
//! - `TERN_KUBE_APISERVER`: path of the binary (default
//!   `<workspace>/target/kube-apiserver/tern-kube-apiserver`).
//! - `TERN_TESTKIT_READY_TIMEOUT`: seconds to wait for the ready line (default 60).
//! - `TERN_TESTKIT_KEEP=1`: keep data dirs (certs, etcd, `apiserver.log`) after the test.

mod process;

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, Config};

use process::ApiServerProcess;

/// Field manager used by the testkit's own server-side applies.
pub const FIELD_MANAGER: &str = "tern-testkit";

/// Errors of the test kit.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "test kube-apiserver binary not found at {}: run tests/kube-apiserver/build.sh \
         from the repository root (or set TERN_KUBE_APISERVER to the binary)",
        path.display()
    )]
    BinaryMissing { path: PathBuf },
    #[error("cluster {cluster:?}: could not start {}: {source}", path.display())]
    Spawn {
        cluster: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "cluster {cluster:?}: port {port} on 127.0.0.1 is already in use; last stderr lines:\n{stderr}"
    )]
    PortTaken {
        cluster: String,
        port: u16,
        stderr: String,
    },
    #[error(
        "cluster {cluster:?}: kube-apiserver not ready within {secs}s; last stderr lines:\n{stderr}"
    )]
    NotReady {
        cluster: String,
        secs: u64,
        stderr: String,
    },
    #[error(
        "cluster {cluster:?}: kube-apiserver exited before it was ready ({status}); last stderr lines:\n{stderr}"
    )]
    Exited {
        cluster: String,
        status: String,
        stderr: String,
    },
    #[error("cluster {cluster:?} is not running (stopped)")]
    NotRunning { cluster: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("{}: invalid YAML: {source}", path.display())]
    Yaml {
        path: PathBuf,
        source: serde_yaml::Error,
    },
    #[error("kubeconfig {}: {source}", path.display())]
    Kubeconfig {
        path: PathBuf,
        source: kube::config::KubeconfigError,
    },
    #[error("timed out after {secs}s waiting for {what}")]
    Timeout { what: String, secs: u64 },
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// Installs rustls' ring crypto provider once (kube's `rustls-tls` feature alone
/// does not pick one).
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Root of the Cargo workspace (two levels above this crate's manifest).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .unwrap_or(manifest)
        .to_path_buf()
}

/// Path of the tern-kube-apiserver binary: `$TERN_KUBE_APISERVER` or
/// `<workspace>/target/kube-apiserver/tern-kube-apiserver`.
pub fn apiserver_binary() -> PathBuf {
    match std::env::var_os("TERN_KUBE_APISERVER") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => workspace_root().join("target/kube-apiserver/tern-kube-apiserver"),
    }
}

fn ready_timeout() -> Duration {
    let secs = std::env::var("TERN_TESTKIT_READY_TIMEOUT")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|s| *s > 0)
        .unwrap_or(60);
    Duration::from_secs(secs)
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(io_err("binding a free port"))?;
    let port = l
        .local_addr()
        .map_err(io_err("reading a free port"))?
        .port();
    Ok(port)
}

/// Options for [`TestCluster::start_with`].
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// Binary to run; default [`apiserver_binary`].
    pub binary: Option<PathBuf>,
    /// Fixed secure port; default: a free one (retried on a port race).
    pub port: Option<u16>,
    /// Bound on the wait for the ready line; default `$TERN_TESTKIT_READY_TIMEOUT` or 60 s.
    pub ready_timeout: Option<Duration>,
}

impl StartOptions {
    fn binary(&self) -> PathBuf {
        self.binary.clone().unwrap_or_else(apiserver_binary)
    }

    fn ready_timeout(&self) -> Duration {
        self.ready_timeout.unwrap_or_else(ready_timeout)
    }
}

/// One independent kube-apiserver + etcd ("a cluster"), named by a geo tag.
pub struct TestCluster {
    name: String,
    options: StartOptions,
    port: u16,
    data_dir: PathBuf,
    kubeconfig: PathBuf,
    // Dropped after the process (field order): the process is killed in Drop.
    process: Option<ApiServerProcess>,
    config: Option<Config>,
    client: Option<Client>,
    _dir: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for TestCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCluster")
            .field("name", &self.name)
            .field("url", &self.server_url())
            .field("data_dir", &self.data_dir)
            .field("running", &self.is_running())
            .finish()
    }
}

impl TestCluster {
    /// Starts one API server named `name` (a geo tag such as "eu") on a fresh data
    /// dir and a free port, and waits until it is ready.
    pub async fn start(name: &str) -> Result<Self> {
        Self::start_with(name, StartOptions::default()).await
    }

    /// Like [`Self::start`], with explicit options.
    pub async fn start_with(name: &str, options: StartOptions) -> Result<Self> {
        let mut c = Self::prepare(name, options)?;
        c.launch(c.options.port.is_none()).await?;
        Ok(c)
    }

    /// Starts one API server per name, in parallel. Returned in the order given.
    /// If any fails, the others are stopped and the first error is returned.
    pub async fn start_many(names: &[&str]) -> Result<Vec<Self>> {
        let mut clusters = names
            .iter()
            .map(|n| Self::prepare(n, StartOptions::default()))
            .collect::<Result<Vec<_>>>()?;
        futures::future::try_join_all(clusters.iter_mut().map(|c| c.launch(true))).await?;
        Ok(clusters)
    }

    fn prepare(name: &str, options: StartOptions) -> Result<Self> {
        install_crypto_provider();
        let bin = options.binary();
        if !bin.is_file() {
            return Err(Error::BinaryMissing { path: bin });
        }
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let dir = tempfile::Builder::new()
            .prefix(&format!("tern-testkit-{safe}-"))
            .tempdir()
            .map_err(io_err("creating a data dir"))?;
        let data_dir = dir.path().to_path_buf();
        let keep = std::env::var_os("TERN_TESTKIT_KEEP").is_some_and(|v| !v.is_empty() && v != "0");
        let dir = if keep {
            eprintln!(
                "tern-testkit: keeping data dir of cluster {name:?}: {}",
                data_dir.display()
            );
            let _ = dir.keep();
            None
        } else {
            Some(dir)
        };
        Ok(Self {
            name: name.to_string(),
            port: options.port.unwrap_or(0),
            options,
            kubeconfig: data_dir.join("admin.kubeconfig"),
            data_dir,
            process: None,
            config: None,
            client: None,
            _dir: dir,
        })
    }

    /// Spawns the process and waits for its ready line. With `new_port`, picks a free
    /// port (and retries on a port race); otherwise reuses the current one.
    async fn launch(&mut self, new_port: bool) -> Result<()> {
        let bin = self.options.binary();
        if !bin.is_file() {
            return Err(Error::BinaryMissing { path: bin });
        }
        let attempts = if new_port { 3 } else { 1 };
        let mut last = None;
        for _ in 0..attempts {
            if new_port {
                self.port = free_port()?;
            }
            match ApiServerProcess::start(
                &bin,
                &self.name,
                self.port,
                &self.data_dir,
                &self.kubeconfig,
                self.options.ready_timeout(),
            )
            .await
            {
                Ok(p) => {
                    self.process = Some(p);
                    last = None;
                    break;
                }
                Err(e @ Error::PortTaken { .. }) if new_port => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        if let Some(e) = last {
            return Err(e);
        }
        if self.client.is_none() {
            let kc =
                Kubeconfig::read_from(&self.kubeconfig).map_err(|source| Error::Kubeconfig {
                    path: self.kubeconfig.clone(),
                    source,
                })?;
            let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(|source| Error::Kubeconfig {
                    path: self.kubeconfig.clone(),
                    source,
                })?;
            self.client = Some(Client::try_from(config.clone())?);
            self.config = Some(config);
        }
        Ok(())
    }

    /// The geo tag / name given at start.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `https://127.0.0.1:PORT`.
    pub fn server_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Path of the admin kubeconfig (token of a `system:masters` user, CA data).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// Data dir: etcd data, PKI, `apiserver.log` (the server's stderr).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn is_running(&self) -> bool {
        self.process.is_some()
    }

    /// Process id of the running API server.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.pid())
    }

    /// Last lines the API server wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.process
            .as_ref()
            .map(|p| p.stderr_tail())
            .unwrap_or_default()
    }

    /// An admin client (`system:masters`). Stays valid across [`Self::restart`].
    pub fn client(&self) -> Client {
        // Set by every successful start; a TestCluster is only handed out started.
        match &self.client {
            Some(c) => c.clone(),
            None => unreachable!("TestCluster is only returned after a successful start"),
        }
    }

    /// The admin [`kube::Config`] (for building clients with other settings).
    pub fn config(&self) -> Config {
        match &self.config {
            Some(c) => c.clone(),
            None => unreachable!("TestCluster is only returned after a successful start"),
        }
    }

    /// A client that authenticates with `token` instead of the admin token.
    pub fn client_with_token(&self, token: &str) -> Result<Client> {
        let mut config = self.config();
        config.auth_info = AuthInfo {
            token: Some(token.to_string().into()),
            ..AuthInfo::default()
        };
        Ok(Client::try_from(config)?)
    }

    fn ensure_running(&self) -> Result<()> {
        if self.process.is_none() {
            return Err(Error::NotRunning {
                cluster: self.name.clone(),
            });
        }
        Ok(())
    }

    /// Stops the API server gracefully (SIGTERM, then SIGKILL after 20 s); the data
    /// dir is kept so that [`Self::restart`] can bring it back.
    pub async fn stop(&mut self) -> Result<()> {
        if let Some(p) = self.process.take() {
            p.stop(Duration::from_secs(20)).await?;
        }
        Ok(())
    }

    /// Starts the API server again on the same data dir and port (stopping it first
    /// if it runs). Objects, CA, admin token and service-account keys survive.
    pub async fn restart(&mut self) -> Result<()> {
        self.stop().await?;
        self.launch(false).await
    }

    /// Applies every CustomResourceDefinition in a (multi-document) YAML file and
    /// waits until each is established and served. Returns the applied CRDs.
    pub async fn install_crds_from_file(
        &self,
        path: impl AsRef<Path>,
    ) -> Result<Vec<CustomResourceDefinition>> {
        let path = path.as_ref();
        let text =
            std::fs::read_to_string(path).map_err(io_err(format!("reading {}", path.display())))?;
        let crds = parse_crds(&text).map_err(|source| Error::Yaml {
            path: path.to_path_buf(),
            source,
        })?;
        if crds.is_empty() {
            return Err(Error::Invalid(format!(
                "{}: no CustomResourceDefinition found",
                path.display()
            )));
        }
        self.install_crds(&crds).await
    }

    /// Server-side applies CRDs and waits until each is established and served.
    pub async fn install_crds(
        &self,
        crds: &[CustomResourceDefinition],
    ) -> Result<Vec<CustomResourceDefinition>> {
        self.ensure_running()?;
        let api: Api<CustomResourceDefinition> = Api::all(self.client());
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        let mut out = Vec::with_capacity(crds.len());
        for crd in crds {
            let name = crd.metadata.name.clone().ok_or_else(|| {
                Error::Invalid("CustomResourceDefinition without metadata.name".into())
            })?;
            let mut crd = crd.clone();
            crd.metadata.managed_fields = None;
            crd.metadata.resource_version = None;
            crd.status = None;
            out.push(api.patch(&name, &pp, &Patch::Apply(&crd)).await?);
        }
        for crd in &out {
            self.wait_crd_served(crd, Duration::from_secs(30)).await?;
        }
        Ok(out)
    }

    /// Waits until a CRD is Established and every served version is in discovery.
    pub async fn wait_crd_served(
        &self,
        crd: &CustomResourceDefinition,
        timeout: Duration,
    ) -> Result<()> {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let api: Api<CustomResourceDefinition> = Api::all(self.client());
        let what = format!("CRD {name} to be established");
        tokio::time::timeout(
            timeout,
            await_condition(api, &name, conditions::is_crd_established()),
        )
        .await
        .map_err(|_| Error::Timeout {
            what: what.clone(),
            secs: timeout.as_secs(),
        })?
        .map_err(|e| Error::Invalid(format!("waiting for {what}: {e}")))?;
        let group = &crd.spec.group;
        let plural = &crd.spec.names.plural;
        let deadline = tokio::time::Instant::now() + timeout;
        for v in crd.spec.versions.iter().filter(|v| v.served) {
            let gv = format!("{group}/{}", v.name);
            loop {
                let served = match self.client().list_api_group_resources(&gv).await {
                    Ok(list) => list.resources.iter().any(|r| &r.name == plural),
                    Err(_) => false,
                };
                if served {
                    break;
                }
                if tokio::time::Instant::now() > deadline {
                    return Err(Error::Timeout {
                        what: format!("{plural}.{gv} to be served"),
                        secs: timeout.as_secs(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    /// Creates a throwaway namespace named `<prefix>-<random>` and returns its name.
    /// (No namespace controller runs, so deleting it would leave it Terminating:
    /// tests just leave it; the data dir goes away with the cluster.)
    pub async fn create_namespace(&self, prefix: &str) -> Result<String> {
        self.ensure_running()?;
        let api: Api<Namespace> = Api::all(self.client());
        let ns = Namespace {
            metadata: ObjectMeta {
                generate_name: Some(format!("{prefix}-")),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        let created = api.create(&PostParams::default(), &ns).await?;
        created
            .metadata
            .name
            .ok_or_else(|| Error::Invalid("created namespace has no name".into()))
    }

    /// Creates the ServiceAccount `namespace/name` if missing.
    pub async fn ensure_service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<ServiceAccount> {
        self.ensure_running()?;
        let api: Api<ServiceAccount> = Api::namespaced(self.client(), namespace);
        if let Some(sa) = api.get_opt(name).await? {
            return Ok(sa);
        }
        let sa = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        };
        match api.create(&PostParams::default(), &sa).await {
            Ok(sa) => Ok(sa),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(api.get(name).await?),
            Err(e) => Err(e.into()),
        }
    }

    /// Mints a token for the ServiceAccount `namespace/name` through the TokenRequest
    /// API (creating the ServiceAccount if missing). Valid for one hour.
    pub async fn service_account_token(&self, namespace: &str, name: &str) -> Result<String> {
        self.ensure_service_account(namespace, name).await?;
        let api: Api<ServiceAccount> = Api::namespaced(self.client(), namespace);
        let tr = TokenRequest {
            spec: Some(TokenRequestSpec {
                expiration_seconds: Some(3600),
                ..TokenRequestSpec::default()
            }),
            ..TokenRequest::default()
        };
        let tr = api
            .create_token_request(name, &PostParams::default(), &tr)
            .await?;
        tr.status
            .and_then(|s| s.token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "TokenRequest for {namespace}/{name} returned no token"
                ))
            })
    }

    /// A client acting as the ServiceAccount `namespace/name` (created if missing),
    /// so a test can act with exactly the RBAC it grants that account.
    pub async fn service_account_client(&self, namespace: &str, name: &str) -> Result<Client> {
        let token = self.service_account_token(namespace, name).await?;
        self.client_with_token(&token)
    }

    /// Lists the names of the served resources of `group/version` (discovery).
    pub async fn served_resources(&self, group_version: &str) -> Result<Vec<String>> {
        let list = self
            .client()
            .list_api_group_resources(group_version)
            .await?;
        Ok(list.resources.into_iter().map(|r| r.name).collect())
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        // ApiServerProcess's own Drop sends SIGKILL to the process group and reaps it.
        drop(self.process.take());
    }
}

/// Parses every `kind: CustomResourceDefinition` document of a YAML stream.
pub fn parse_crds(text: &str) -> Result<Vec<CustomResourceDefinition>, serde_yaml::Error> {
    use serde::Deserialize;
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        let value = serde_yaml::Value::deserialize(doc)?;
        if value.is_null() {
            continue;
        }
        if value.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition") {
            continue;
        }
        out.push(serde_yaml::from_value(value)?);
    }
    Ok(out)
}
