//! Builds strategy guest crates into components: `cargo build` for `wasm32-unknown-unknown`, then
//! `wit-component`, reproducibly (paths remapped, custom sections stripped, lock file honoured).

use std::path::{Path, PathBuf};
use std::process::Command;

use wasm_encoder::{Module, RawSection};
use wasmparser::{Parser, Payload};
use wit_component::ComponentEncoder;

/// What to build and where the components go.
#[derive(Debug, Clone)]
pub struct BuildRequest {
    /// The guest crate or workspace directory (holding `Cargo.toml`).
    pub crate_dir: PathBuf,
    /// Packages to build; empty means every package with a `cdylib` target.
    pub packages: Vec<String>,
    /// Where `<strategy>.wasm` files are written.
    pub out_dir: PathBuf,
    /// Cargo's target directory; defaults to `<crate_dir>/target`.
    pub target_dir: Option<PathBuf>,
}

/// One built component.
#[derive(Debug, Clone)]
pub struct BuiltComponent {
    /// The strategy name: `[package.metadata.tern] strategy`, else the package name.
    pub strategy: String,
    pub package: String,
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

/// Why a build failed, with what the user needs to fix it.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cannot run cargo: {0}")]
    Cargo(String),
    #[error("the wasm32-unknown-unknown target is missing: run `rustup target add wasm32-unknown-unknown`")]
    MissingTarget,
    #[error("cargo build failed (exit {code:?}):\n{stderr}")]
    Compile { code: Option<i32>, stderr: String },
    #[error("no package with a cdylib target found in {0}")]
    NothingToBuild(String),
    #[error("package '{0}' not found, or it has no cdylib target")]
    UnknownPackage(String),
    #[error("cannot turn {package} into a component: {message}")]
    Componentize { package: String, message: String },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

/// A guest package, as `cargo metadata` reports it.
struct GuestPackage {
    name: String,
    lib_name: String,
    strategy: String,
}

/// Builds the requested guest packages and writes one component per package into `out_dir`.
pub fn build_components(request: &BuildRequest) -> Result<Vec<BuiltComponent>, BuildError> {
    let crate_dir = request.crate_dir.canonicalize().map_err(|e| io_error(&request.crate_dir, e))?;
    let manifest = crate_dir.join("Cargo.toml");
    let target_dir = request.target_dir.clone().unwrap_or_else(|| crate_dir.join("target"));
    std::fs::create_dir_all(&target_dir).map_err(|e| io_error(&target_dir, e))?;
    let target_dir = target_dir.canonicalize().map_err(|e| io_error(&target_dir, e))?;
    let guests = select(guest_packages(&manifest)?, &request.packages)?;
    if guests.is_empty() {
        return Err(BuildError::NothingToBuild(crate_dir.display().to_string()));
    }

    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.arg("build").arg("--release").arg("--target").arg("wasm32-unknown-unknown").arg("--manifest-path").arg(&manifest);
    if crate_dir.join("Cargo.lock").exists() {
        cargo.arg("--locked");
    }
    for guest in &guests {
        cargo.arg("-p").arg(&guest.name);
    }
    cargo
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("RUSTFLAGS", remap_flags(&crate_dir, &target_dir))
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_BUILD_TARGET");
    let output = cargo.output().map_err(|e| BuildError::Cargo(e.to_string()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if stderr.contains("may not be installed") || stderr.contains("can't find crate for `core`") {
            return Err(BuildError::MissingTarget);
        }
        return Err(BuildError::Compile { code: output.status.code(), stderr });
    }

    std::fs::create_dir_all(&request.out_dir).map_err(|e| io_error(&request.out_dir, e))?;
    let mut built = Vec::new();
    for guest in guests {
        let core_path = target_dir.join("wasm32-unknown-unknown/release").join(format!("{}.wasm", guest.lib_name));
        let core = std::fs::read(&core_path).map_err(|e| io_error(&core_path, e))?;
        let bytes = componentize(&core).map_err(|message| BuildError::Componentize { package: guest.name.clone(), message })?;
        let path = request.out_dir.join(format!("{}.wasm", guest.strategy));
        std::fs::write(&path, &bytes).map_err(|e| io_error(&path, e))?;
        built.push(BuiltComponent { strategy: guest.strategy, package: guest.name, path, bytes });
    }
    Ok(built)
}

/// Turns a core module built with wit-bindgen into a component, without names or producer notes.
pub fn componentize(core: &[u8]) -> Result<Vec<u8>, String> {
    let stripped = strip_custom_sections(core)?;
    ComponentEncoder::default()
        .validate(true)
        .module(&stripped)
        .and_then(|mut encoder| encoder.encode())
        .map_err(|e| format!("{e:#}"))
}

/// Drops custom sections (names, producers, debug info) except wit-bindgen's `component-type` ones.
fn strip_custom_sections(core: &[u8]) -> Result<Vec<u8>, String> {
    let mut module = Module::new();
    for payload in Parser::new(0).parse_all(core) {
        let payload = payload.map_err(|e| e.to_string())?;
        if let Payload::CustomSection(section) = &payload {
            if !section.name().starts_with("component-type") {
                continue;
            }
        }
        if let Some((id, range)) = payload.as_section() {
            module.section(&RawSection { id, data: &core[range] });
        }
    }
    Ok(module.finish())
}

/// Makes builds independent of where the checkout, the target dir and the cargo home are.
fn remap_flags(crate_dir: &Path, target_dir: &Path) -> String {
    let mut flags = vec![
        format!("--remap-path-prefix={}=/build/src", crate_dir.display()),
        format!("--remap-path-prefix={}=/build/target", target_dir.display()),
    ];
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
    if let Some(home) = cargo_home {
        flags.push(format!("--remap-path-prefix={}=/build/cargo", home.display()));
    }
    flags.join(" ")
}

fn guest_packages(manifest: &Path) -> Result<Vec<GuestPackage>, BuildError> {
    let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--no-deps", "--manifest-path"])
        .arg(manifest)
        .output()
        .map_err(|e| BuildError::Cargo(e.to_string()))?;
    if !output.status.success() {
        return Err(BuildError::Cargo(String::from_utf8_lossy(&output.stderr).into_owned()));
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| BuildError::Cargo(format!("cargo metadata: {e}")))?;
    let mut guests = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let Some(name) = package["name"].as_str() else { continue };
        let cdylib = package["targets"].as_array().into_iter().flatten().find(|t| {
            t["crate_types"].as_array().is_some_and(|types| types.iter().any(|k| k == "cdylib"))
        });
        let Some(lib_name) = cdylib.and_then(|t| t["name"].as_str()) else { continue };
        let strategy = package["metadata"]["tern"]["strategy"].as_str().unwrap_or(name);
        guests.push(GuestPackage { name: name.to_string(), lib_name: lib_name.replace('-', "_"), strategy: strategy.to_string() });
    }
    guests.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(guests)
}

fn select(all: Vec<GuestPackage>, wanted: &[String]) -> Result<Vec<GuestPackage>, BuildError> {
    if wanted.is_empty() {
        return Ok(all);
    }
    if let Some(missing) = wanted.iter().find(|w| !all.iter().any(|g| &g.name == *w)) {
        return Err(BuildError::UnknownPackage(missing.clone()));
    }
    Ok(all.into_iter().filter(|g| wanted.contains(&g.name)).collect())
}

fn io_error(path: &Path, error: std::io::Error) -> BuildError {
    BuildError::Io { path: path.display().to_string(), message: error.to_string() }
}
