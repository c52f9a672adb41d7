#!/usr/bin/env bash
# release-check.sh: the release path, checked on a snapshot of HEAD (make release-check).
#
#   1. goreleaser check (.goreleaser.yaml)
#   2. a snapshot release of the host's platform only (one target), in a clean clone of HEAD
#   3. plugin.yaml rendered as krew-release-bot renders it, with the snapshot archive's sha256
#   4. krew's own validator (validate-krew-manifest) on the rendered manifest
#   5. kubectl krew install --manifest ... --archive ... into a temporary KREW_ROOT
#   6. kubectl mesh-explain version --client, through krew's shim
#
# goreleaser and krew are built from the Go module proxy at the pinned versions below and
# cached outside the work tree (like hack/kube-env.sh caches the apiserver).
set -euo pipefail

GORELEASER_VERSION="${GORELEASER_VERSION:-v2.17.0}"
KREW_VERSION="${KREW_VERSION:-v0.4.3}"
CACHE_ROOT="${MESH_EXPLAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mesh-explain}"
TOOLS="$CACHE_ROOT/release-tools-goreleaser-$GORELEASER_VERSION-krew-$KREW_VERSION"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

log() { printf 'release-check: %s\n' "$*" >&2; }

install_tools() {
  if [[ -x "$TOOLS/goreleaser" && -x "$TOOLS/krew" && -x "$TOOLS/validate-krew-manifest" ]]; then
    log "using cached tools in $TOOLS"
    return 0
  fi
  mkdir -p "$TOOLS"
  log "building goreleaser $GORELEASER_VERSION and krew $KREW_VERSION from the module proxy (cached in $TOOLS)"
  GOBIN="$TOOLS" CGO_ENABLED=0 GOFLAGS= go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
  GOBIN="$TOOLS" CGO_ENABLED=0 GOFLAGS= go install "sigs.k8s.io/krew/cmd/krew@$KREW_VERSION" \
    "sigs.k8s.io/krew/cmd/validate-krew-manifest@$KREW_VERSION"
}

install_tools
command -v kubectl >/dev/null || { log "kubectl is required"; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone --quiet "$ROOT" "$work/src"
cd "$work/src"

log "goreleaser check"
"$TOOLS/goreleaser" check

os="$(go env GOOS)" arch="$(go env GOARCH)"
log "snapshot release for $os/$arch"
# `goreleaser release` has no single-target mode (only `build` does): the snapshot runs on a
# copy of .goreleaser.yaml whose build lists this platform only; everything else is as released.
sed -e "s/^    goos: \[.*\]$/    goos: [$os]/" -e "s/^    goarch: \[.*\]$/    goarch: [$arch]/" .goreleaser.yaml >"$work/goreleaser.yaml"
grep -q "goos: \[$os\]" "$work/goreleaser.yaml" && grep -q "goarch: \[$arch\]" "$work/goreleaser.yaml" ||
  { log "could not narrow .goreleaser.yaml to $os/$arch"; exit 1; }
"$TOOLS/goreleaser" release --snapshot --clean --config "$work/goreleaser.yaml" \
  --skip=publish,sign,sbom >"$work/goreleaser.log" 2>&1 || { cat "$work/goreleaser.log" >&2; exit 1; }

archive="$(ls dist/kubectl-mesh_explain_*_"${os}_${arch}".tar.gz)"
name="$(basename "$archive")"
tag="${name#kubectl-mesh_explain_}"
tag="${tag%_"${os}_${arch}".tar.gz}"
sha="$(sha256sum "$archive" | cut -d' ' -f1)"
grep -q "$sha  $name" dist/checksums.txt || { log "$name: sha256 $sha is not in checksums.txt"; exit 1; }
log "archive $name, sha256 $sha"

# The rendering krew-release-bot does: {{ .TagName }} is the tag, each addURIAndSha call
# becomes the uri and sha256 of that archive. Only this platform's archive exists here, so
# the manifest keeps only its platform entry.
manifest="$work/mesh-explain.yaml"
TAG="$tag" SHA="$sha" OS="$os" ARCH="$arch" python3 - "$ROOT/plugin.yaml" "$manifest" <<'PY'
import os, re, sys
src, dst = sys.argv[1], sys.argv[2]
text = open(src).read().replace("{{ .TagName }}", os.environ["TAG"])
head, _, plats = text.partition("  platforms:\n")
entries = re.split(r"(?m)^(?=  - selector:)", plats)
keep = [e for e in entries if f"os: {os.environ['OS']}\n" in e and f"arch: {os.environ['ARCH']}\n" in e]
if len(keep) != 1:
    sys.exit(f"no single platform entry for {os.environ['OS']}/{os.environ['ARCH']} in plugin.yaml")
def uri_sha(m):
    return f'{m.group(1)}uri: {m.group(2)}\n{m.group(1)}sha256: {os.environ["SHA"]}'
entry = re.sub(r'(?m)^( *)\{\{addURIAndSha "([^"]+)" \S+ *\}\}', uri_sha, keep[0])
if "{{" in entry or "{{" in head:
    sys.exit("unrendered template left in plugin.yaml")
open(dst, "w").write(head + "  platforms:\n" + entry)
PY

log "validate-krew-manifest"
"$TOOLS/validate-krew-manifest" -manifest "$manifest" -skip-install

log "kubectl krew install --manifest --archive (KREW_ROOT=$work/krew)"
export KREW_ROOT="$work/krew" KREW_NO_UPGRADE_CHECK=1
mkdir -p "$work/bin"
ln -s "$TOOLS/krew" "$work/bin/kubectl-krew"
export PATH="$KREW_ROOT/bin:$work/bin:$PATH"
kubectl krew install --manifest="$manifest" --archive="$archive"

log "kubectl mesh-explain version --client (through krew's shim $KREW_ROOT/bin/kubectl-mesh_explain)"
kubectl mesh-explain version --client
# The snapshot's version is stamped in: v<next patch>-next+<short commit>, and the commit.
commit="$(git rev-parse HEAD)"
out="$(kubectl mesh-explain version --client -o json)"
case "$out" in
  *"\"version\": \"v"*"-next+${commit:0:7}\""*"\"commit\": \"$commit\""*) ;;
  *) log "the installed plugin does not report the snapshot's version and commit $commit:"; echo "$out" >&2; exit 1 ;;
esac
test -x "$KREW_ROOT/store/mesh-explain/$tag/kubectl_complete-mesh_explain" ||
  { log "kubectl_complete-mesh_explain is not in the installed plugin"; exit 1; }
log "ok: $name installed with krew and ran"
