package check

import (
	"regexp"
	"strings"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// fieldPath finds a field path in a fix or message: `spec.host`, `spec.subsets[name=v1]`,
// `metadata.labels[app]`.
var fieldPath = regexp.MustCompile(`\b(spec|metadata)((\.[A-Za-z_][A-Za-z0-9_]*)|(\[[^\]\s]*\]))+`)

// locate sets the resource to change (the first the diagnostic names, else the subject of the
// answer), the field its fix names, and the file position of that field (else of the object)
// when the object was read from a file.
func locate(snap *model.Snapshot, f *explain.Finding, subject *provenance.Ref) {
	switch {
	case len(f.Resources) > 0:
		r := f.Resources[0]
		f.Resource = &r
	case subject != nil:
		r := *subject
		f.Resource = &r
	default:
		return
	}
	f.Field = findFieldPath(f.Fix)
	if f.Field == "" {
		f.Field = findFieldPath(f.Message)
	}
	k := model.ObjectKey{Kind: f.Resource.Kind, Namespace: f.Resource.Namespace, Name: f.Resource.Name}
	if f.Field != "" && snap.Fields != nil {
		// The locator knows the paths the loader reads; `spec.egress[].hosts` is found as
		// `spec.egress`.
		for p := f.Field; p != ""; p = parent(p) {
			if pos := snap.Fields.FieldPosition(k, p); pos != nil {
				f.Position = pos
				return
			}
		}
	}
	f.Position = snap.Position(k)
}

// findFieldPath is fieldPath.FindString, without running the expression on text that cannot
// match (most messages and fixes name no field).
func findFieldPath(s string) string {
	if !strings.Contains(s, "spec") && !strings.Contains(s, "metadata") {
		return ""
	}
	return fieldPath.FindString(s)
}

// parent drops the last step of a field path.
func parent(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return ""
	}
	return p[:i]
}
