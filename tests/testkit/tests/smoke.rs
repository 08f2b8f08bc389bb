//! Smoke tests proving the test kit drives a real kube-apiserver: CRDs, custom
//! objects, watch, server-side apply conflicts, the status subresource, RBAC with a
//! ServiceAccount token, restart persistence and several clusters at once.
//!
//! Needs the binary: run `tests/kube-apiserver/build.sh` first.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::CustomResource;
use kube::api::{
    Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::{WatchStreamExt, watcher};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tern_testkit::{Error, StartOptions, TestCluster};

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "testkit.tern.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    schema = "disabled"
)]
pub struct WidgetSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_size: Option<i64>,
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn widget(name: &str, size: i64, color: &str) -> Widget {
    Widget::new(
        name,
        WidgetSpec {
            size: Some(size),
            color: Some(color.into()),
        },
    )
}

/// A cluster with the Widget CRD installed and a fresh namespace.
async fn cluster_with_crd(tag: &str) -> Result<(TestCluster, String)> {
    let c = TestCluster::start(tag).await?;
    c.install_crds_from_file(fixture("widget-crd.yaml")).await?;
    let ns = c.create_namespace("smoke").await?;
    Ok((c, ns))
}

fn api_code<T: std::fmt::Debug>(r: kube::Result<T>) -> Result<u16> {
    match r {
        Err(kube::Error::Api(s)) => Ok(s.code),
        other => bail!("expected an API error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_is_served_and_custom_objects_crud_and_watch() -> Result<()> {
    let (c, ns) = cluster_with_crd("eu").await?;
    let served = c.served_resources("testkit.tern.dev/v1").await?;
    ensure!(
        served.iter().any(|r| r == "widgets"),
        "widgets not in discovery: {served:?}"
    );
    ensure!(
        served.iter().any(|r| r == "widgets/status"),
        "status subresource not served: {served:?}"
    );

    let api: Api<Widget> = Api::namespaced(c.client(), &ns);
    let start_rv = api
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .context("list rv")?;

    // Create + read.
    let created = api
        .create(&PostParams::default(), &widget("w1", 1, "red"))
        .await?;
    ensure!(created.metadata.uid.is_some());
    let got = api.get("w1").await?;
    ensure!(
        got.spec
            == WidgetSpec {
                size: Some(1),
                color: Some("red".into())
            },
        "got {:?}",
        got.spec
    );

    // Patch (merge): size changes, color stays.
    let patched = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await?;
    ensure!(
        patched.spec.size == Some(2) && patched.spec.color.as_deref() == Some("red"),
        "{:?}",
        patched.spec
    );

    // Schema validation is real: a negative size is rejected (422).
    let bad = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": -1}})),
        )
        .await;
    ensure!(api_code(bad)? == 422);

    // Watch from before the create: ADDED(size 1) then MODIFIED(size 2).
    let wp = WatchParams::default().timeout(10);
    let mut stream = api.watch(&wp, &start_rv).await?.boxed();
    let mut seen = Vec::new();
    while let Some(ev) = stream.try_next().await? {
        match ev {
            WatchEvent::Added(w) => seen.push(("ADDED", w.spec.size)),
            WatchEvent::Modified(w) => seen.push(("MODIFIED", w.spec.size)),
            WatchEvent::Deleted(w) => seen.push(("DELETED", w.spec.size)),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => bail!("watch error: {e:?}"),
        }
        if seen.len() >= 2 {
            break;
        }
    }
    ensure!(
        seen == vec![("ADDED", Some(1)), ("MODIFIED", Some(2))],
        "watch saw {seen:?}"
    );

    // kube-runtime's watcher sees a new object appear.
    let mut objects = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    api.create(&PostParams::default(), &widget("w2", 7, "blue"))
        .await?;
    let found = tokio::time::timeout(Duration::from_secs(15), async {
        while let Some(w) = objects.try_next().await? {
            if w.metadata.name.as_deref() == Some("w2") {
                return Ok::<_, anyhow::Error>(w);
            }
        }
        bail!("watcher stream ended")
    })
    .await
    .context("watcher did not see w2 within 15s")??;
    ensure!(found.spec.size == Some(7));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_conflict_is_409() -> Result<()> {
    let (c, ns) = cluster_with_crd("us").await?;
    let api: Api<Widget> = Api::namespaced(c.client(), &ns);
    let apply = |size: i64| {
        json!({
            "apiVersion": "testkit.tern.dev/v1", "kind": "Widget",
            "metadata": {"name": "shared"}, "spec": {"size": size},
        })
    };
    api.patch(
        "shared",
        &PatchParams::apply("manager-a"),
        &Patch::Apply(apply(1)),
    )
    .await?;

    // Another manager setting the same field without force: 409 Conflict.
    let conflict = api
        .patch(
            "shared",
            &PatchParams::apply("manager-b"),
            &Patch::Apply(apply(2)),
        )
        .await;
    match conflict {
        Err(kube::Error::Api(s)) => {
            ensure!(s.code == 409, "expected 409, got {s:?}");
            ensure!(s.reason == "Conflict", "reason {:?}", s.reason);
            ensure!(
                s.message.contains("manager-a"),
                "message should name the owner: {}",
                s.message
            );
        }
        other => bail!("expected a 409 conflict, got {other:?}"),
    }
    ensure!(
        api.get("shared").await?.spec.size == Some(1),
        "conflicting apply must not change the object"
    );

    // A disjoint field is fine; forcing takes ownership.
    let color = json!({"apiVersion": "testkit.tern.dev/v1", "kind": "Widget",
        "metadata": {"name": "shared"}, "spec": {"color": "green"}});
    api.patch(
        "shared",
        &PatchParams::apply("manager-c"),
        &Patch::Apply(color),
    )
    .await?;
    let forced = api
        .patch(
            "shared",
            &PatchParams::apply("manager-b").force(),
            &Patch::Apply(apply(2)),
        )
        .await?;
    ensure!(
        forced.spec
            == WidgetSpec {
                size: Some(2),
                color: Some("green".into())
            },
        "{:?}",
        forced.spec
    );
    let managers: Vec<String> = forced
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    ensure!(
        managers.contains(&"manager-b".to_string()) && managers.contains(&"manager-c".to_string()),
        "{managers:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_subresource_separates_spec_and_status() -> Result<()> {
    let (c, ns) = cluster_with_crd("ap").await?;
    let api: Api<Widget> = Api::namespaced(c.client(), &ns);
    let created = api
        .create(&PostParams::default(), &widget("s1", 1, "red"))
        .await?;
    let gen1 = created.metadata.generation.context("generation")?;

    // A status patch that also tries to change spec: only status changes.
    let st = api
        .patch_status(
            "s1",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"size": 99}, "status": {"phase": "Ready", "observedSize": 1}}),
            ),
        )
        .await?;
    ensure!(
        st.spec.size == Some(1),
        "status patch changed spec: {:?}",
        st.spec
    );
    ensure!(
        st.status
            == Some(WidgetStatus {
                phase: Some("Ready".into()),
                observed_size: Some(1)
            }),
        "{:?}",
        st.status
    );
    ensure!(
        st.metadata.generation == Some(gen1),
        "status change must not bump generation"
    );

    // A main-resource patch that also tries to change status: only spec changes.
    let sp = api
        .patch(
            "s1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 3}, "status": {"phase": "Bogus"}})),
        )
        .await?;
    ensure!(sp.spec.size == Some(3));
    ensure!(
        sp.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Ready"),
        "{:?}",
        sp.status
    );
    ensure!(
        sp.metadata.generation == Some(gen1 + 1),
        "spec change must bump generation"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_denies_service_account_until_role_binding() -> Result<()> {
    let (c, ns) = cluster_with_crd("rbac").await?;
    let admin: Api<Widget> = Api::namespaced(c.client(), &ns);
    admin
        .create(&PostParams::default(), &widget("r1", 1, "red"))
        .await?;

    let sa = c.service_account_client(&ns, "reader").await?;
    // TokenRequest gave a real ServiceAccount identity.
    let review = Api::<SelfSubjectReview>::all(sa.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await?;
    let user = review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .unwrap_or_default();
    ensure!(
        user == format!("system:serviceaccount:{ns}:reader"),
        "identity {user:?}"
    );

    let as_sa: Api<Widget> = Api::namespaced(sa.clone(), &ns);
    ensure!(
        api_code(as_sa.list(&ListParams::default()).await)? == 403,
        "list must be forbidden without a role"
    );
    ensure!(api_code(as_sa.get("r1").await)? == 403);

    let role = Role {
        metadata: ObjectMeta {
            name: Some("widget-reader".into()),
            ..Default::default()
        },
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["testkit.tern.dev".into()]),
            resources: Some(vec!["widgets".into()]),
            verbs: vec!["get".into(), "list".into(), "watch".into()],
            ..Default::default()
        }]),
    };
    Api::<Role>::namespaced(c.client(), &ns)
        .create(&PostParams::default(), &role)
        .await?;
    let binding = RoleBinding {
        metadata: ObjectMeta {
            name: Some("widget-reader".into()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: "widget-reader".into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: "reader".into(),
            namespace: Some(ns.clone()),
            ..Default::default()
        }]),
    };
    Api::<RoleBinding>::namespaced(c.client(), &ns)
        .create(&PostParams::default(), &binding)
        .await?;

    // The RBAC authorizer sees the binding through an informer: allow a moment.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let list = loop {
        match as_sa.list(&ListParams::default()).await {
            Ok(l) => break l,
            Err(kube::Error::Api(s)) if s.code == 403 && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => bail!("list after RoleBinding: {e}"),
        }
    };
    ensure!(list.items.len() == 1);
    ensure!(as_sa.get("r1").await?.spec.size == Some(1));
    // Exactly the granted verbs: create and other resources stay forbidden.
    ensure!(
        api_code(
            as_sa
                .create(&PostParams::default(), &widget("r2", 2, "blue"))
                .await
        )? == 403
    );
    let cms: Api<ConfigMap> = Api::namespaced(sa, &ns);
    ensure!(api_code(cms.list(&ListParams::default()).await)? == 403);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_on_same_data_dir_keeps_objects() -> Result<()> {
    let (mut c, ns) = cluster_with_crd("restart").await?;
    let api: Api<Widget> = Api::namespaced(c.client(), &ns);
    let uid = api
        .create(&PostParams::default(), &widget("keep", 5, "gold"))
        .await?
        .metadata
        .uid;
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("kept".into()),
            ..Default::default()
        },
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..Default::default()
    };
    Api::<ConfigMap>::namespaced(c.client(), &ns)
        .create(&PostParams::default(), &cm)
        .await?;
    let token = c.service_account_token(&ns, "survivor").await?;
    let old_pid = c.pid().context("pid")?;
    let port = c.port();

    c.stop().await?;
    ensure!(!c.is_running());
    ensure!(
        !std::path::Path::new(&format!("/proc/{old_pid}")).exists(),
        "process {old_pid} still exists"
    );
    ensure!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port {port} still open after stop"
    );
    ensure!(matches!(
        c.create_namespace("x").await,
        Err(Error::NotRunning { .. })
    ));

    c.restart().await?;
    ensure!(c.port() == port && c.pid() != Some(old_pid));
    let got = api.get("keep").await?; // the pre-restart client still works
    ensure!(
        got.metadata.uid == uid && got.spec.size == Some(5),
        "{got:?}"
    );
    let cm = Api::<ConfigMap>::namespaced(c.client(), &ns)
        .get("kept")
        .await?;
    ensure!(cm.data.unwrap_or_default().get("k").map(String::as_str) == Some("v"));
    ensure!(
        c.served_resources("testkit.tern.dev/v1")
            .await?
            .contains(&"widgets".to_string())
    );
    // Same service-account signing key: a token minted before the restart still works.
    let sa = c.client_with_token(&token)?;
    let review = Api::<SelfSubjectReview>::all(sa)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await?;
    let user = review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .unwrap_or_default();
    ensure!(
        user == format!("system:serviceaccount:{ns}:survivor"),
        "{user:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_independent_clusters_and_drop_kills_them() -> Result<()> {
    let clusters = TestCluster::start_many(&["eu", "us", "ap"]).await?;
    let names: Vec<&str> = clusters.iter().map(|c| c.name()).collect();
    ensure!(names == ["eu", "us", "ap"]);
    let mut ports: Vec<u16> = clusters.iter().map(|c| c.port()).collect();
    ports.sort_unstable();
    ports.dedup();
    ensure!(ports.len() == 3, "ports must differ");
    for c in &clusters {
        ensure!(c.kubeconfig_path().is_file());
        ensure!(c.client().apiserver_version().await?.minor == "36");
    }

    // Objects are per cluster.
    let eu: Api<ConfigMap> = Api::namespaced(clusters[0].client(), "default");
    let us: Api<ConfigMap> = Api::namespaced(clusters[1].client(), "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("geo".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    eu.create(&PostParams::default(), &cm).await?;
    ensure!(eu.get_opt("geo").await?.is_some());
    ensure!(
        us.get_opt("geo").await?.is_none(),
        "clusters must not share storage"
    );

    let pids: Vec<u32> = clusters.iter().filter_map(|c| c.pid()).collect();
    ensure!(pids.len() == 3);
    drop(clusters);
    for pid in pids {
        ensure!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "pid {pid} survived drop"
        );
    }
    Ok(())
}

#[tokio::test]
async fn clear_errors_for_missing_binary_and_taken_port() -> Result<()> {
    let missing = TestCluster::start_with(
        "none",
        StartOptions {
            binary: Some("/nonexistent/tern-kube-apiserver".into()),
            ..Default::default()
        },
    )
    .await;
    match missing {
        Err(e @ Error::BinaryMissing { .. }) => {
            ensure!(
                e.to_string().contains("tests/kube-apiserver/build.sh"),
                "{e}"
            );
        }
        other => bail!("expected BinaryMissing, got {other:?}"),
    }

    let taken = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    let port = taken.local_addr()?.port();
    match TestCluster::start_with(
        "busy",
        StartOptions {
            port: Some(port),
            ..Default::default()
        },
    )
    .await
    {
        Err(Error::PortTaken { port: p, .. }) => ensure!(p == port),
        other => bail!("expected PortTaken, got {other:?}"),
    }
    Ok(())
}

/// Helper run in a child test process by the two tests below: starts a cluster,
/// writes the API server's pid to `$TERN_TESTKIT_HELPER_PIDFILE`, then either panics
/// (`$TERN_TESTKIT_HELPER_PANIC`) or waits to be killed.
#[tokio::test]
#[ignore = "helper: run by panicking_or_killed_test_process_leaks_no_apiserver"]
async fn helper_hold_cluster() -> Result<()> {
    let Some(pidfile) = std::env::var_os("TERN_TESTKIT_HELPER_PIDFILE") else {
        return Ok(());
    };
    let c = TestCluster::start("helper").await?;
    let pid = c.pid().context("pid")?;
    std::fs::write(
        PathBuf::from(&pidfile).with_extension("tmp"),
        pid.to_string(),
    )?;
    std::fs::rename(PathBuf::from(&pidfile).with_extension("tmp"), &pidfile)?;
    if std::env::var_os("TERN_TESTKIT_HELPER_PANIC").is_some() {
        panic!("deliberate panic while holding cluster {}", c.name());
    }
    tokio::time::sleep(Duration::from_secs(120)).await;
    Ok(())
}

/// Alive = exists and is not a zombie (a reparented, unreaped process is gone for us).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
        Err(_) => false,
    }
}

fn run_helper(panic: bool) -> Result<(std::process::Child, u32, tempfile::TempDir)> {
    let tmp = tempfile::tempdir()?;
    let pidfile = tmp.path().join("apiserver.pid");
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["--ignored", "--exact", "helper_hold_cluster", "--nocapture"])
        .env("TERN_TESTKIT_HELPER_PIDFILE", &pidfile)
        .env("TMPDIR", tmp.path()) // the helper's data dir lands here and is removed with it
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if panic {
        cmd.env("TERN_TESTKIT_HELPER_PANIC", "1");
    }
    let mut child = cmd.spawn()?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(s) = std::fs::read_to_string(&pidfile) {
            return Ok((child, s.trim().parse()?, tmp));
        }
        if let Some(status) = child.try_wait()? {
            bail!("helper exited before starting a cluster: {status}");
        }
        ensure!(
            std::time::Instant::now() < deadline,
            "helper did not start a cluster within 60s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_gone(pid: u32, within: Duration) -> bool {
    let deadline = std::time::Instant::now() + within;
    while alive(pid) {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

#[test]
fn panicking_or_killed_test_process_leaks_no_apiserver() -> Result<()> {
    // A panicking test: Drop kills the API server before the process exits.
    let (mut child, pid, _tmp) = run_helper(true)?;
    let status = child.wait()?;
    ensure!(!status.success(), "helper should have failed by panicking");
    ensure!(
        wait_gone(pid, Duration::from_secs(5)),
        "API server {pid} survived a panicking test"
    );

    // A SIGKILLed test process (no Drop): PR_SET_PDEATHSIG takes the server down.
    let (mut child, pid, _tmp) = run_helper(false)?;
    ensure!(alive(pid));
    child.kill()?;
    child.wait()?;
    ensure!(
        wait_gone(pid, Duration::from_secs(20)),
        "API server {pid} leaked after its test process was killed"
    );
    Ok(())
}
