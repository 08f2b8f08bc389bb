#!/usr/bin/env bash
# Builds tests/kube-apiserver (a real kube-apiserver + embedded etcd, from Go modules)
# into <repo>/target/kube-apiserver/tern-kube-apiserver. Rebuilds only when the Go
# sources, go.mod, go.sum or the Go version change (hash stamp next to the binary).
# Usage: tests/kube-apiserver/build.sh [--force]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out_dir="$root/target/kube-apiserver"
bin="$out_dir/tern-kube-apiserver"
stamp="$bin.stamp"
log="$out_dir/build.log"

die() { echo "tests/kube-apiserver/build.sh: $*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "'go' not found in PATH (need Go >= 1.26 to build the test kube-apiserver)"
mkdir -p "$out_dir"

# One build at a time (parallel test runners may call this concurrently).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$out_dir/.build.lock"
  flock 9
fi

hash="$(
  cd "$here"
  { go version; printf '%s\n' "${GOFLAGS:-}" "${GOARCH:-}" "${GOOS:-}";
    LC_ALL=C ls -1 -- *.go go.mod go.sum | while read -r f; do printf '== %s\n' "$f"; cat -- "$f"; done
  } | sha256sum | cut -d' ' -f1
)"

if [[ "${1:-}" != "--force" && -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$hash" ]]; then
  exit 0
fi

echo "building test kube-apiserver -> ${bin#"$root/"} (first build takes several minutes)" >&2
start=$SECONDS
tmp="$bin.tmp.$$"
trap 'rm -f "$tmp"' EXIT
if ! (cd "$here" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o "$tmp" . ) >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  die "go build failed (full log: ${log#"$root/"})"
fi
mv -f "$tmp" "$bin"
printf '%s\n' "$hash" >"$stamp"
echo "built ${bin#"$root/"} in $((SECONDS - start))s" >&2
