#!/usr/bin/env bash
# verify-imports.sh: the import direction of STYLE.md R3, checked by machine. Engines, index,
# model, explain and provenance never import the CLI, renderers, the loader, cobra, lipgloss or
# client-go; renderers never import engines, index, source or model.
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
for p in engine/envoycluster engine/ztunnelauthz index model explain explain/diag provenance; do
  [[ -d pkg/$p ]] && check "./pkg/$p" "$pure" "engines are pure: no CLI, rendering, loading or clients"
done
if [[ -d pkg/meshhost ]]; then
  bad=$(go list -deps -f '{{.ImportPath}}' ./pkg/meshhost | grep -E '^[^/]+\.[^/]+/' | grep -vx "$mod/pkg/meshhost" || true)
  [[ -z "$bad" ]] || { echo "import rule broken (meshhost imports the standard library only):"; echo "$bad" | sed 's/^/  /'; fail=1; }
fi
[[ -d pkg/plan ]] && check "./pkg/plan" "^$mod/pkg/(cli|render|engine/.*)$" "the read plan sees no command, printer or engine"
[[ -d pkg/render ]] && check "./pkg/render" "^$mod/pkg/(engine/envoycluster|index|source|model)$" "renderers see only explain.Result"
[[ -d pkg/explain/diag ]] && check "./pkg/explain/diag" "^$mod/pkg/(engine/|index|model|source|render|cli)" "the diagnostics catalogue sees only explain and provenance"
exit $fail
