package cli

import (
	"context"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// lookupTimeout bounds the small extra reads that completion, hints and the version check
// make: they help, and must never hold a command up.
const lookupTimeout = 3 * time.Second

// lookupClient returns a clientset for the small extra reads, its requests bounded by
// lookupTimeout.
func (o *CommonOptions) lookupClient() (kubernetes.Interface, error) {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = lookupTimeout
	// No client-side throttling waits: a lookup makes one or two requests.
	cfg.QPS, cfg.Burst = -1, -1
	return kubernetes.NewForConfig(cfg)
}

// filesSnapshot returns every object of the -f files, unfiltered, or nil when they cannot be
// read. Standard input is used only when it was read already (o.stdin): completion never
// waits on it.
func (o *CommonOptions) filesSnapshot(ctx context.Context, namespace string) *model.Snapshot {
	spec := source.Spec{Recursive: o.Recursive, DefaultNamespace: namespace, IstioNamespace: o.IstioNamespace}
	for _, f := range o.Filenames {
		if f != "-" || o.stdin != nil {
			spec.Files = append(spec.Files, f)
		}
	}
	if len(spec.Files) == 0 {
		return nil
	}
	if slices.Contains(spec.Files, "-") {
		spec.Stdin = o.stdin.reader()
	}
	snap, err := source.Load(ctx, spec)
	if err != nil {
		return nil
	}
	return snap
}
