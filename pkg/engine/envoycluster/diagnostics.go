package envoycluster

import "github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"

// diagnostics collects findings, dropping exact duplicates (the default cluster and its subset
// clusters often share a cause).
type diagnostics struct {
	list []explain.Diagnostic
	// off silences the collector (used when evaluating a dropped block for its shadows).
	off bool
}

func (d *diagnostics) add(x explain.Diagnostic) {
	if d == nil || d.off {
		return
	}
	// A cluster has a handful of findings: a scan finds a duplicate faster than a set would.
	for i := range d.list {
		if d.list[i].ID == x.ID && d.list[i].Message == x.Message {
			return
		}
	}
	d.list = append(d.list, x)
}
