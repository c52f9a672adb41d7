package plan

import (
	"context"
	"slices"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// Loader is source.Load with the command's flags in the Spec: the plan sets the Spec's Reads
// and its predicates, the Loader the rest.
type Loader func(context.Context, source.Spec) (*model.Snapshot, error)

// namespaces is a sorted, de-duplicated namespace list for a source.Read; it is never nil
// (nil means all namespaces to the loader). Empty names are dropped.
func namespaces(nss ...string) []string {
	out := []string{}
	for _, ns := range nss {
		if ns != "" {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
