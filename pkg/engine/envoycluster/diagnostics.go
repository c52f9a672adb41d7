package envoycluster

import (
	"cmp"
	"slices"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// diag is one finding before it becomes an explain.Diagnostic.
type diag struct {
	id   string
	sev  explain.Severity
	refs []provenance.Ref
	msg  string
	fix  string
}

// diagnostics collects findings, dropping exact duplicates (the default cluster and its subset
// clusters often share a cause).
type diagnostics struct {
	list []explain.Diagnostic
	// off silences the collector (used when evaluating a dropped block for its shadows).
	off bool
}

func (d *diagnostics) add(x diag) {
	if d == nil || d.off {
		return
	}
	// A cluster has a handful of findings: a scan finds a duplicate faster than a set would.
	for i := range d.list {
		if d.list[i].ID == x.id && d.list[i].Message == x.msg {
			return
		}
	}
	d.list = append(d.list, explain.Diagnostic{ID: x.id, Severity: x.sev, Message: x.msg, Resources: x.refs, Fix: x.fix})
}

// sortDiagnostics orders diagnostics by severity rank, then ID, then message, and removes
// duplicates (R9).
func sortDiagnostics(ds []explain.Diagnostic) []explain.Diagnostic {
	slices.SortStableFunc(ds, func(a, b explain.Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Severity.Rank(), b.Severity.Rank()), compareIDs(a.ID, b.ID), cmp.Compare(a.Message, b.Message))
	})
	return slices.CompactFunc(ds, func(a, b explain.Diagnostic) bool {
		return a.ID == b.ID && a.Severity == b.Severity && a.Message == b.Message
	})
}

// compareIDs orders D2 before D10 (numeric after a common letter prefix).
func compareIDs(a, b string) int {
	na, pa := splitID(a)
	nb, pb := splitID(b)
	return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(na, nb), cmp.Compare(a, b))
}

func splitID(id string) (int, string) {
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	n := 0
	for _, c := range id[i:] {
		n = n*10 + int(c-'0')
	}
	return n, id[:i]
}
