#!/usr/bin/env bash
# bench.sh: the performance benchmark of docs/performance.md, from a clean clone.
#
#   hack/bench.sh [--scale F] [--repeat N] [--offline-repeat N] [--no-slope] [--skip live,check,analyze,engine,istio]
#                 [--workdir DIR] [--keep] [--seed N] [--workers N] [--engine-timeout DURATION]
#
# It starts a real kube-apiserver and etcd (hack/kube-env.sh), fills them with the synthetic mesh
# of hack/meshgen (--scale 1: 10,000 Services over 100 namespaces, 20,000 Pods, 5,000
# DestinationRules, 2,000 PeerAuthentications, 1,000 AuthorizationPolicies, 1,000
# VirtualServices, a waypoint in each of the 25 ambient namespaces with 1,000 more
# AuthorizationPolicies attached to them by targetRefs), writes the same objects to files, and
# measures side by side:
#   1. kubectl mesh-explain cluster/authz (ambient pod, sidecar pod, waypoint) live (wall time,
#      peak RSS);
#   2. the bare API reads those commands make, issued by a minimal client (meshgen bare-reads);
#   3. the same explains offline with -f on the files;
#   4. `check -A` live, its bare reads, and `check -A -f` on the files beside `istioctl analyze
#      --use-kube=false -A` on them (istioctl from hack/istioctl.sh), with what each finds;
#   5. the engines alone (go test -bench, snapshot loaded);
#   6. Istio's own cluster generation for the same proxy and mesh (conformance module), by turns
#      with the engine's every-cluster loop in one process, their ratio taken per round.
# With the slope on (the default) it does so at F/4, F/2 and F, growing the cluster in place.
# The results go to DIR/report.md (default DIR: a new directory under /tmp) and stdout.
# `make bench BENCH_FLAGS="--scale 0.1"` passes flags through make.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

scale=1
repeat=5
offline_repeat=0
slope=1
skip=""
workdir=""
keep=0
seed=1
workers=8
engine_timeout=20m

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
# shellcheck disable=SC2086 # BENCH_FLAGS is a list of words
set -- ${BENCH_FLAGS:-} "$@"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --scale) scale="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --offline-repeat) offline_repeat="$2"; shift 2 ;;
    --no-slope) slope=0; shift ;;
    --skip) skip="$2"; shift 2 ;;
    --workdir) workdir="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --seed) seed="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --engine-timeout) engine_timeout="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench.sh: unknown flag $1" >&2; usage >&2; exit 2 ;;
  esac
done
skipped() { [[ ",$skip," == *",$1,"* ]]; }
log() { printf 'bench: %s\n' "$*" >&2; }

[[ -x /usr/bin/time ]] || { log "GNU time (/usr/bin/time, Debian package 'time') is needed to measure peak RSS"; exit 1; }
if [[ -z "$workdir" ]]; then
  workdir="$(mktemp -d /tmp/mesh-explain-bench.XXXXXX)"
fi
mkdir -p "$workdir/bin"
workdir="$(cd "$workdir" && pwd)"
log "working in $workdir"

# The scales: F/4, F/2, F for the slope, else F alone.
if [[ "$slope" == 1 ]]; then
  scales="$(awk -v f="$scale" 'BEGIN { printf "%g %g %g", f/4, f/2, f }')"
else
  scales="$scale"
fi
scale_list="${scales// /,}"

log "building the plugin and meshgen"
make -s build
cp bin/kubectl-mesh_explain "$workdir/bin/"
CGO_ENABLED=0 go build -ldflags '-s -w' -o "$workdir/bin/meshgen" ./hack/meshgen
meshgen="$workdir/bin/meshgen"
plugin="$workdir/bin/kubectl-mesh_explain"
sizes=(--seed "$seed")

check_flags=()
skipped check && check_flags+=(--check=false)
if ! skipped analyze && ! skipped check; then
  log "building (or reusing) istioctl"
  check_flags+=(--istioctl "$(hack/istioctl.sh)")
fi

results=()
if ! skipped live; then
  kube="$workdir/kube"
  hack/kube-env.sh install
  cleanup() {
    if [[ "$keep" == 1 ]]; then
      log "the API server keeps running (kubeconfig $kube/admin.kubeconfig); stop it with: hack/kube-env.sh down $kube"
    else
      hack/kube-env.sh down "$kube" || true
    fi
  }
  trap cleanup EXIT
  hack/kube-env.sh up "$kube"
  hack/kube-env.sh crds "$kube"
  prev=""
  for s in $scales; do
    log "scale $s: filling the API server"
    since=()
    [[ -n "$prev" ]] && since=(--since-scale "$prev")
    "$meshgen" load --kubeconfig "$kube/admin.kubeconfig" --scale "$s" "${sizes[@]}" --workers "$workers" "${since[@]}"
    log "scale $s: writing the files"
    "$meshgen" files --out "$workdir/files-$s" --scale "$s" "${sizes[@]}"
    log "scale $s: measuring"
    "$meshgen" measure --kubeconfig "$kube/admin.kubeconfig" --plugin "$plugin" --files "$workdir/files-$s" \
      --scale "$s" "${sizes[@]}" --repeat "$repeat" --offline-repeat "$offline_repeat" \
      --audit-log "$kube/audit.log" "${check_flags[@]}" --out "$workdir/results-$s.json" >&2
    results+=("$workdir/results-$s.json")
    rm -rf "$workdir/files-$s"
    prev="$s"
  done
  cleanup
  trap - EXIT
fi

# go test -bench, one benchmark and one scale per run, so a run that exceeds the timeout loses
# only its own line.
bench_runs=()
bench() { # name package dir benchtime count [rounds of a paired benchmark]
  local name="$1" pkg="$2" dir="$3" benchtime="$4" count="$5" rounds="${6:-1}" out
  for s in $scales; do
    out="$workdir/bench-$name-$s.txt"
    log "go test -bench $name at scale $s"
    if ! (cd "$dir" && MESH_EXPLAIN_BENCH_SCALE="$s" MESH_EXPLAIN_BENCH_ROUNDS="$rounds" go test -run '^$' -bench "^Benchmark$name\$" \
        -benchtime "$benchtime" -count "$count" -timeout "$engine_timeout" "$pkg") > "$out" 2>&1; then
      log "go test -bench $name at scale $s failed or timed out after $engine_timeout; see $out"
      echo "Benchmark$name/timeout scale=$s after $engine_timeout" >> "$workdir/bench-failures.txt"
    fi
    bench_runs+=(--bench "$out")
  done
}
if ! skipped engine; then
  bench ClusterExplainHost ./pkg/engine/envoycluster "$root" 1s "$repeat"
  bench ClusterIndexBuild ./pkg/engine/envoycluster "$root" 1s "$repeat"
  bench AuthzExplainWorkload ./pkg/engine/ztunnelauthz "$root" 1s "$repeat"
  bench WaypointExplain ./pkg/engine/waypointauthz "$root" 1s "$repeat"
  bench ClusterEveryClusterOfProxy ./pkg/engine/envoycluster "$root" 1s "$repeat"
fi
if ! skipped istio; then
  # Istio's BuildClusters and the every-cluster loop by turns in one process, --repeat rounds:
  # their ratio is taken per round (BenchmarkIstioBuildClusters alone: go test -bench in
  # conformance/istiorun).
  bench EveryClusterPaired ./istiorun "$root/conformance" 1s 1 "$repeat"
fi

"$meshgen" report "${bench_runs[@]}" "${results[@]}" > "$workdir/report.md"
if [[ -f "$workdir/bench-failures.txt" ]]; then
  { echo; echo "Benchmarks that failed or timed out:"; sed 's/^/- /' "$workdir/bench-failures.txt"; } >> "$workdir/report.md"
fi
cat "$workdir/report.md"
log "report: $workdir/report.md (scales $scale_list)"
