#!/usr/bin/env bash
# Start-up benchmark of the test kube-apiserver: time from spawn to the "ready" line
# for one server, then for N (default 3) started in parallel, and VmRSS of each
# once ready. Usage: tests/kube-apiserver/bench.sh [N]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
"$here/build.sh"
bin="${TERN_KUBE_APISERVER:-$root/target/kube-apiserver/tern-kube-apiserver}"
n="${1:-3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/tern-kas-bench.XXXXXX")"
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# start NAME -> spawns one server in the background, records its pid
start() {
  local name="$1" port
  port="$(free_port)"
  mkdir -p "$work/$name"
  "$bin" -port "$port" -data-dir "$work/$name/data" -kubeconfig "$work/$name/kubeconfig" \
    >"$work/$name/out" 2>"$work/$name/err" &
  pids+=("$!")
  echo "$!" >"$work/$name/pid"
}

# wait_ready NAME T0 -> prints ms from T0 to the ready line
wait_ready() {
  local name="$1" t0="$2" pid
  pid="$(cat "$work/$name/pid")"
  for _ in $(seq 1 1200); do
    if grep -q '^ready ' "$work/$name/out" 2>/dev/null; then
      echo $(( $(now_ms) - t0 )); return 0
    fi
    kill -0 "$pid" 2>/dev/null || { echo "server $name died:" >&2; tail -n 20 "$work/$name/err" >&2; return 1; }
    sleep 0.02
  done
  echo "server $name not ready within 24s" >&2; tail -n 20 "$work/$name/err" >&2; return 1
}

rss() { awk '/^VmRSS/ {printf "%d MiB", $2/1024}' "/proc/$(cat "$work/$1/pid")/status"; }

stop_all() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}

echo "binary: ${bin#"$root/"}  ($(nproc) cores)"

t0="$(now_ms)"; start single
ms="$(wait_ready single "$t0")"
sleep 2  # let post-start hooks settle before reading RSS
echo "one server:      ready in ${ms} ms; VmRSS $(rss single) (2 s after ready)"
t1="$(now_ms)"; stop_all
echo "one server:      SIGTERM -> exited in $(( $(now_ms) - t1 )) ms"

t0="$(now_ms)"
for i in $(seq 1 "$n"); do start "par$i"; done
waiters=()
for i in $(seq 1 "$n"); do wait_ready "par$i" "$t0" >"$work/par$i/ms" & waiters+=("$!"); done
for w in "${waiters[@]}"; do wait "$w"; done
line="$n in parallel:  ready in"
for i in $(seq 1 "$n"); do line+=" $(cat "$work/par$i/ms") ms"; [[ $i -lt $n ]] && line+=","; done
echo "$line (spawn of the first -> each ready line)"
sleep 2
line="$n in parallel:  VmRSS"
for i in $(seq 1 "$n"); do line+=" $(rss "par$i")"; [[ $i -lt $n ]] && line+=","; done
echo "$line"
t1="$(now_ms)"; stop_all
echo "$n in parallel:  SIGTERM -> all exited in $(( $(now_ms) - t1 )) ms"
