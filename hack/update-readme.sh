#!/usr/bin/env bash
# update-readme.sh: regenerate the output samples in README.md from the bundled examples, so the
# README shows what the plugin really prints. `--check` fails when the README is out of date.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(mktemp -d)/kubectl-mesh_explain"
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/kubectl-mesh_explain

sample() { # marker command...
  local marker="$1"; shift
  local out
  out="$(cd testdata/examples && NO_COLOR=1 COLUMNS=120 "$bin" "$@" 2>&1 || true)"
  python3 - "$marker" "kubectl mesh-explain $*" "$out" <<'PY'
import sys, re
marker, cmd, out = sys.argv[1], sys.argv[2], sys.argv[3]
path = "README.md.new"
s = open(path).read()
block = "<!-- %s:begin -->\n```console\n$ %s\n%s\n```\n<!-- %s:end -->" % (marker, cmd, out.rstrip("\n"), marker)
s2, n = re.subn(r"<!-- %s:begin -->.*?<!-- %s:end -->" % (re.escape(marker), re.escape(marker)), lambda m: block, s, flags=re.S)
if n != 1:
    sys.exit("README.md has no %s markers" % marker)
open(path, "w").write(s2)
PY
}
cp README.md README.md.new
sample cluster-sample cluster ratings -n bookinfo --from pod/productpage-v1 -f bookinfo
sample authz-sample authz pod/a -n foo -f ambient
sample authz-sidecar-sample authz pod/productpage-v1 -n bookinfo -f sidecar
sample authz-waypoint-sample authz waypoint/waypoint -n bookinfo -f waypoint
sample check-sample check -f bookinfo
sample check-sidecar-sample check -f sidecar
sample check-waypoint-sample check -f waypoint
if [[ "${1:-}" == "--check" ]]; then
  if ! diff -u README.md README.md.new; then
    rm -f README.md.new
    echo "README.md output samples are out of date: run hack/update-readme.sh" >&2
    exit 1
  fi
  rm -f README.md.new
else
  mv README.md.new README.md
fi
