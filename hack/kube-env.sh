#!/usr/bin/env bash
# kube-env.sh: a real kube-apiserver and etcd for the end-to-end suite, built from the Go module
# proxy and cached outside the work tree (keyed by version).
#
#   hack/kube-env.sh install       build (or reuse) kube-apiserver and etcd
#   hack/kube-env.sh up DIR        start etcd + kube-apiserver on 127.0.0.1, free ports; state in DIR
#   hack/kube-env.sh crds DIR      install the Istio CRDs from istio.io/api and the Gateway API
#                                  Gateway and GatewayClass CRDs, and wait until Established
#   hack/kube-env.sh down DIR      stop every process `up` started (by PID)
#
# DIR receives: admin.kubeconfig, tokens.csv, pids, logs, audit.log, env (ports).
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
STAGING_VERSION="${STAGING_VERSION:-v0.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.0}"
ISTIO_API_VERSION="${ISTIO_API_VERSION:-v1.32.0}"
CACHE_ROOT="${MESH_EXPLAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mesh-explain}"
BIN_DIR="$CACHE_ROOT/kube-$KUBE_VERSION-etcd-$ETCD_VERSION"
APISERVER="$BIN_DIR/kube-apiserver"
# etcd lives in its own directory: its key includes the revision of the wrapper main below,
# so a fixed wrapper never reuses a binary built from an older one.
ETCD_WRAPPER_REV=2
ETCD="$CACHE_ROOT/etcd-$ETCD_VERSION-w$ETCD_WRAPPER_REV/etcd"

log() { printf 'kube-env: %s\n' "$*" >&2; }

install_bins() {
  if [[ -x "$APISERVER" && -x "$ETCD" ]]; then
    log "using cached binaries: $APISERVER, $ETCD"
    return 0
  fi
  mkdir -p "$BIN_DIR" "$(dirname "$ETCD")"
  # One build at a time: a second install (another checkout's test run) waits for the first
  # and then uses its binaries instead of compiling the apiserver again beside it.
  if command -v flock >/dev/null && [[ -z "${KUBE_ENV_LOCKED:-}" ]]; then
    log "waiting for any other install to finish (lock $CACHE_ROOT/install.lock)"
    KUBE_ENV_LOCKED=1 flock "$CACHE_ROOT/install.lock" "$0" install
    return
  fi
  local work; work="$(mktemp -d)"
  local gocache="$work/gocache"
  trap 'rm -rf "$work"' RETURN
  if [[ ! -x "$ETCD" ]]; then
    log "building etcd $ETCD_VERSION (cached in $(dirname "$ETCD"))"
    mkdir -p "$work/etcd"
    cat > "$work/etcd/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
    (cd "$work/etcd" && go mod init local/etcd >/dev/null 2>&1 &&
      GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null &&
      GOFLAGS=-mod=mod go mod tidy >/dev/null &&
      GOCACHE="$gocache" CGO_ENABLED=0 go build -mod=mod -o "$ETCD.tmp" . && mv "$ETCD.tmp" "$ETCD")
  fi
  if [[ ! -x "$APISERVER" ]]; then
    log "building kube-apiserver $KUBE_VERSION (about 10 minutes cold; cached in $BIN_DIR)"
    mkdir -p "$work/kas"
    (cd "$work/kas" && go mod init local/kas >/dev/null 2>&1)
    local kdir
    kdir="$(cd "$work/kas" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [[ -n "$kdir" ]] || { log "cannot download k8s.io/kubernetes@$KUBE_VERSION"; return 1; }
    {
      echo "module local/kas"
      echo
      echo "go 1.26"
      echo
      echo "require k8s.io/kubernetes $KUBE_VERSION"
      echo
      echo "replace ("
      # every staging module k8s.io/kubernetes replaces with ./staging, at the published version
      sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$kdir/go.mod" |
        grep -v -e '^k8s.io/sample-cli-plugin$' -e '^k8s.io/sample-controller$' |
        while read -r m; do echo "	$m => $m $STAGING_VERSION"; done
      echo ")"
    } > "$work/kas/go.mod"
    cat > "$work/kas/main.go" <<'GO'
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }
GO
    (cd "$work/kas" && GOFLAGS=-mod=mod go mod tidy >/dev/null &&
      GOCACHE="$gocache" CGO_ENABLED=0 go build -mod=mod -o "$APISERVER.tmp" . && mv "$APISERVER.tmp" "$APISERVER")
  fi
  log "binaries ready: $APISERVER, $ETCD"
}

free_port() {
  python3 - <<'PY' 2>/dev/null || echo $(( 20000 + RANDOM % 20000 ))
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

up() {
  local dir="${1:?usage: up DIR}"
  install_bins
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  local etcd_port peer_port api_port
  etcd_port="$(free_port)"; peer_port="$(free_port)"; api_port="$(free_port)"
  : > "$dir/pids"
  "$ETCD" --data-dir "$dir/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "default=http://127.0.0.1:$peer_port" --log-level warn \
    > "$dir/etcd.log" 2>&1 &
  echo $! >> "$dir/pids"
  local etcd_ok=""
  for _ in $(seq 1 300); do
    if curl -fsS "http://127.0.0.1:$etcd_port/health" >/dev/null 2>&1; then etcd_ok=1; break; fi
    sleep 0.1
  done
  [[ -n "$etcd_ok" ]] || { log "etcd did not become healthy; see $dir/etcd.log"; tail -20 "$dir/etcd.log" >&2; return 1; }
  openssl genrsa -out "$dir/sa.key" 2048 >/dev/null 2>&1
  openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" >/dev/null 2>&1
  local admin_token; admin_token="admin-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  # token,user,uid,"group1,group2"
  {
    echo "$admin_token,admin,admin,system:masters"
    echo "reader-$admin_token,reader,reader"
    echo "nopa-$admin_token,nopa,nopa"
    echo "nobody-$admin_token,nobody,nobody"
  } > "$dir/tokens.csv"
  cat > "$dir/audit-policy.yaml" <<'YAML'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
YAML
  "$APISERVER" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --endpoint-reconciler-type none \
    --secure-port "$api_port" --cert-dir "$dir/certs" \
    --token-auth-file "$dir/tokens.csv" --authorization-mode RBAC \
    --service-account-key-file "$dir/sa.pub" --service-account-signing-key-file "$dir/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range 10.96.0.0/16 \
    --disable-admission-plugins ServiceAccount \
    --audit-log-path "$dir/audit.log" --audit-policy-file "$dir/audit-policy.yaml" \
    > "$dir/kube-apiserver.log" 2>&1 &
  echo $! >> "$dir/pids"
  write_kubeconfig "$dir/admin.kubeconfig" "$api_port" "$admin_token"
  write_kubeconfig "$dir/reader.kubeconfig" "$api_port" "reader-$admin_token"
  write_kubeconfig "$dir/nopa.kubeconfig" "$api_port" "nopa-$admin_token"
  write_kubeconfig "$dir/nobody.kubeconfig" "$api_port" "nobody-$admin_token"
  echo "API_PORT=$api_port" > "$dir/env"
  echo "ETCD_PORT=$etcd_port" >> "$dir/env"
  local ok=""
  for _ in $(seq 1 600); do
    if curl -ksS -H "Authorization: Bearer $admin_token" "https://127.0.0.1:$api_port/readyz" 2>/dev/null | grep -q '^ok$'; then
      ok=1; break
    fi
    sleep 0.1
  done
  [[ -n "$ok" ]] || { log "kube-apiserver did not become ready; see $dir/kube-apiserver.log"; tail -20 "$dir/kube-apiserver.log" >&2; return 1; }
  log "kube-apiserver ready on https://127.0.0.1:$api_port (kubeconfig $dir/admin.kubeconfig)"
}

write_kubeconfig() {
  local file="$1" port="$2" token="$3"
  cat > "$file" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$port
    insecure-skip-tls-verify: true
users:
- name: e2e
  user:
    token: $token
contexts:
- name: e2e
  context:
    cluster: e2e
    user: e2e
current-context: e2e
YAML
}

crds() {
  local dir="${1:?usage: crds DIR}"
  local apidir
  apidir="$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "istio.io/api@$ISTIO_API_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -f "$apidir/kubernetes/customresourcedefinitions.gen.yaml" ]] || { log "istio.io/api@$ISTIO_API_VERSION has no CRD file"; return 1; }
  kubectl --kubeconfig "$dir/admin.kubeconfig" apply --server-side -f "$apidir/kubernetes/customresourcedefinitions.gen.yaml" >/dev/null
  # The Gateway API Gateway and GatewayClass CRDs (waypoints), from the Go module the project
  # builds with (go.sum pins it), never downloaded from elsewhere.
  local gwdir
  gwdir="$(cd "$(dirname "$0")/.." && go mod download -json sigs.k8s.io/gateway-api | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -f "$gwdir/config/crd/standard/gateway.networking.k8s.io_gateways.yaml" ]] || { log "sigs.k8s.io/gateway-api has no Gateway CRD file"; return 1; }
  kubectl --kubeconfig "$dir/admin.kubeconfig" apply --server-side \
    -f "$gwdir/config/crd/standard/gateway.networking.k8s.io_gateways.yaml" \
    -f "$gwdir/config/crd/standard/gateway.networking.k8s.io_gatewayclasses.yaml" >/dev/null
  kubectl --kubeconfig "$dir/admin.kubeconfig" wait --for condition=Established --timeout=60s crd --all >/dev/null
  log "Istio and Gateway API CRDs established"
}

down() {
  local dir="${1:?usage: down DIR}"
  [[ -f "$dir/pids" ]] || return 0
  local pid
  # stop in reverse order: apiserver first, then etcd
  for pid in $(tac "$dir/pids"); do
    kill "$pid" 2>/dev/null || true
  done
  for pid in $(tac "$dir/pids"); do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -f "$dir/pids"
}

case "${1:-}" in
  install) install_bins ;;
  up) up "${2:-}" ;;
  crds) crds "${2:-}" ;;
  down) down "${2:-}" ;;
  bindir) echo "$BIN_DIR" ;;
  *) echo "usage: $0 install|up DIR|crds DIR|down DIR|bindir" >&2; exit 2 ;;
esac
