#!/usr/bin/env bash
# verify-code-patterns.sh: mistakes this codebase has made, found by pattern (part of
# `make verify`). Each check prints the offending lines and what to do instead.
#
#   hack/verify-code-patterns.sh [--citations=report|fail]
#
# 1. Diagnostic IDs: production code names an ID only through the catalogue in
#    pkg/explain/diag (`diag.TLSConflict.New(...)`), never as a bare "D19" or "A05" literal, and
#    builds no explain.Diagnostic by hand. Test files (*_test.go) are exempt: an ID is a public,
#    stable string (the `id` of -o json, the sections of docs/diagnostics.md), and a test that
#    spells it out fails when a constant is renumbered by mistake.
# 2. Citations: comments and docs point to files in this repository or to Istio's source, never
#    to documents outside it: a sibling notes folder, numbered spec sections, a style guide or
#    its rule numbers (the patterns are in the git grep below).
#    --citations=report (the default, or VERIFY_CITATIONS=report) lists them without failing;
#    --citations=fail (or VERIFY_CITATIONS=fail) makes them fail the check.
set -euo pipefail
cd "$(dirname "$0")/.."

citations="${VERIFY_CITATIONS:-report}"
for arg in "$@"; do
  case "$arg" in
    --citations=report|--citations=fail) citations="${arg#--citations=}" ;;
    *) echo >&2 "usage: $0 [--citations=report|fail]"; exit 64 ;;
  esac
done
case "$citations" in report|fail) ;; *) echo >&2 "VERIFY_CITATIONS must be report or fail"; exit 64 ;; esac

fail=0
# report TITLE OUTPUT: print a finding.
report() {
  echo >&2 "$1"
  printf '%s\n' "$2" | sed 's/^/  /' >&2
}

out="$(git grep -nE '"[DASW][0-9]{1,2}"' -- '*.go' ':!*_test.go' ':!pkg/explain/diag/' || true)"
if [[ -n "$out" ]]; then
  report 'Bare diagnostic ID literals: use the named constant of pkg/explain/diag (and add the ID to its catalogue and docs/diagnostics.md):' "$out"
  fail=1
fi

fields='(ID|Severity|Message|Fix|Resources):'
out="$(git grep -nE -e "(^|[^]])explain\.Diagnostic\{[[:space:]]*(\$|$fields)" -e "explain\.Diagnostic\{\{[[:space:]]*(\$|$fields)" \
  -- '*.go' ':!*_test.go' ':!pkg/explain/diag/' || true)"
if [[ -n "$out" ]]; then
  report 'Diagnostics built by hand: create them through the catalogue (diag.<Name>.New or .At), so the ID and severity come from it:' "$out"
  fail=1
fi

# The section sign is spelled in octal so that this line cites nothing itself.
sect="$(printf '\302\247')"
out="$(git grep -nE "(^|[^[:alnum:]_-])s[h]ared/|spec ${sect}|${sect} ?[0-9]|S[T]YLE[.]md|\\bR[0-9]{1,2}\\b" -- . ':!hack/verify-code-patterns.sh' || true)"
if [[ -n "$out" ]]; then
  if [[ "$citations" == fail ]]; then
    report 'Citations of documents outside the repository: point to a file under docs/ or to Istio'"'"'s source (file and function) instead:' "$out"
    fail=1
  else
    report 'Citations of documents outside the repository (REPORT ONLY, not failing; --citations=fail or VERIFY_CITATIONS=fail makes this fail): point to a file under docs/ or to Istio'"'"'s source instead:' "$out"
  fi
fi

exit $fail
