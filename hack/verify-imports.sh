#!/usr/bin/env bash
# verify-imports.sh: the import direction of docs/project-layout.md, checked by machine.
#   - Engines, index, model, explain and provenance never import the CLI, renderers, the loader,
#     cobra, lipgloss or client-go.
#   - Renderers never import engines, index, source or model: they see only explain.Result.
#   - The diagnostics catalogue (explain/diag) sees only explain and provenance.
#   - The loader (source) never imports index or engines: it reads, it does not decide.
#   - provenance imports the standard library only: it is the plain-data vocabulary every
#     other package shares.
#   - Production packages never import hack/ (tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/mesh-explain/kubectl-mesh-explain
fail=0
check() { # package-pattern forbidden-regex reason
  local pkgs="$1" forbidden="$2" reason="$3" bad
  bad=$(go list -deps -f '{{.ImportPath}}' $pkgs 2>/dev/null | grep -E "$forbidden" || true)
  if [[ -n "$bad" ]]; then
    echo "import rule broken ($reason) by $pkgs:"; echo "$bad" | sed 's/^/  /'; fail=1
  fi
}
pure="^($mod/pkg/(cli|render|source)|github.com/spf13/cobra|github.com/charmbracelet/lipgloss|k8s.io/client-go/(kubernetes|rest|tools)|istio.io/client-go/pkg/clientset)"
for p in engine/envoycluster engine/ztunnelauthz engine/envoyrbac engine/sidecarauthz engine/waypointauthz check index model explain explain/diag provenance webhook; do
  [[ -d pkg/$p ]] && check "./pkg/$p" "$pure" "engines are pure: no CLI, rendering, loading or clients"
done
if [[ -d pkg/meshhost ]]; then
  bad=$(go list -deps -f '{{.ImportPath}}' ./pkg/meshhost | grep -E '^[^/]+\.[^/]+/' | grep -vx "$mod/pkg/meshhost" || true)
  [[ -z "$bad" ]] || { echo "import rule broken (meshhost imports the standard library only):"; echo "$bad" | sed 's/^/  /'; fail=1; }
fi
[[ -d pkg/plan ]] && check "./pkg/plan" "^$mod/pkg/(cli|render|engine/.*)$" "the read plan sees no command, printer or engine"
[[ -d pkg/render ]] && check "./pkg/render/..." "^$mod/pkg/(engine(/.*)?|index|source|model|check)$" "renderers see only explain.Result"
[[ -d pkg/webhook ]] && check "./pkg/webhook" "^$mod/pkg/(engine(/.*)?|index|model|source|render|cli|check|plan)$" "validation sees the Istio API types, not the snapshot or the engines"
[[ -d pkg/explain/diag ]] && check "./pkg/explain/diag" "^$mod/pkg/(engine/|index|model|source|render|cli)" "the diagnostics catalogue sees only explain and provenance"
[[ -d pkg/source ]] && check "./pkg/source/..." "^$mod/pkg/(engine(/.*)?|index)$" "the loader reads; it does not index or explain"

# provenance: the standard library only (go list's .Standard is true for those packages).
if [[ -d pkg/provenance ]]; then
  bad=$(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./pkg/provenance/... | grep -v "^$mod/pkg/provenance\(/.*\)\?$" || true)
  if [[ -n "$bad" ]]; then
    echo "import rule broken (provenance imports the standard library only) by ./pkg/provenance:"; echo "$bad" | sed 's/^/  /'; fail=1
  fi
fi

# Nothing under pkg/ or cmd/ imports hack/, not even its tests: hack/ holds tools, and what
# tests share lives in internal/testkit.
bad=$(go list -test -f '{{.ImportPath}}: {{join .Imports " "}}' ./pkg/... ./cmd/... | grep -E " $mod/hack(/| |$)" | cut -d: -f1 | sort -u || true)
if [[ -n "$bad" ]]; then
  echo "import rule broken (pkg/ and cmd/ never import hack/) by:"; echo "$bad" | sed 's/^/  /'; fail=1
fi
exit $fail
