#!/usr/bin/env bash
# Tern's test command: prepares what a fresh machine lacks, then runs every test.
# Idempotent; safe to run again. Usage: tests/run.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain: wasm32-unknown-unknown (strategies are built for it)"
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown
fi

if [ -x tests/kube-apiserver/build.sh ]; then
    step "kube-apiserver + etcd for the Kubernetes tests (built once, cached in target/)"
    tests/kube-apiserver/build.sh
fi

step "cargo test"
cargo test --workspace --locked "$@"
