#!/usr/bin/env bash
# istioctl.sh: istioctl built from the istio.io/istio version the conformance module pins (the
# `tool` line in conformance/go.mod), cached outside the work tree keyed by that version, the
# way hack/kube-env.sh caches kube-apiserver. Prints the binary's path on stdout.
#
#   hack/istioctl.sh          build (or reuse) istioctl and print its path
#
# The first build compiles istioctl and everything it imports (many minutes cold); later runs
# reuse the cached binary. The build uses the conformance module's go.sum, so it needs no
# network once the module cache holds istio.io/istio and its dependencies.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_ROOT="${MESH_EXPLAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mesh-explain}"

log() { printf 'istioctl: %s\n' "$*" >&2; }

version="$(cd "$ROOT/conformance" && go list -m -f '{{.Version}}' istio.io/istio)"
[[ -n "$version" ]] || { log "conformance/go.mod does not require istio.io/istio"; exit 1; }
bin="$CACHE_ROOT/istioctl-$version/istioctl"

if [[ ! -x "$bin" ]]; then
  mkdir -p "$(dirname "$bin")"
  # One build at a time: a second caller waits for the first and then reuses its binary.
  if command -v flock >/dev/null && [[ -z "${ISTIOCTL_LOCKED:-}" ]]; then
    log "waiting for any other build to finish (lock $CACHE_ROOT/istioctl.lock)"
    ISTIOCTL_LOCKED=1 flock "$CACHE_ROOT/istioctl.lock" "$0" >/dev/null
  else
    log "building istioctl $version (slow cold; cached in $(dirname "$bin"))"
    # Plain `go build` flags, the ones the conformance tests compile Istio with, so the
    # packages they share come from the build cache.
    (cd "$ROOT/conformance" &&
      go build -o "$bin.tmp" istio.io/istio/istioctl/cmd/istioctl &&
      mv "$bin.tmp" "$bin")
  fi
fi
[[ -x "$bin" ]] || { log "no istioctl at $bin"; exit 1; }
echo "$bin"
