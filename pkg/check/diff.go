package check

import "github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"

// Diff is the report of what changed from before (the live state) to after (the live state
// with the change applied over it): the findings of after that before lacks (added), and those
// of before that after lacks (removed). A finding silenced on one side only counts as changed.
func Diff(before, after *explain.CheckReport) *explain.CheckReport {
	out := *after
	out.Scope.Diff = true
	out.Findings = nil
	had := map[string]explain.Finding{}
	for _, f := range before.Findings {
		had[Key(f.Diagnostic)] = f
	}
	has := map[string]bool{}
	for _, f := range after.Findings {
		k := Key(f.Diagnostic)
		has[k] = true
		if b, ok := had[k]; ok && (b.Ignored == "") == (f.Ignored == "") {
			continue
		}
		f.Change = explain.ChangeAdded
		out.Findings = append(out.Findings, f)
	}
	for _, f := range before.Findings {
		if !has[Key(f.Diagnostic)] {
			f.Change = explain.ChangeRemoved
			out.Findings = append(out.Findings, f)
		}
	}
	out.Warnings = append(append([]string(nil), after.Warnings...), before.Warnings...)
	SortFindings(out.Findings)
	return &out
}
