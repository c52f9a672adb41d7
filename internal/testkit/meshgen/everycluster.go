package meshgen

import (
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// EveryClusterBench is what the every-cluster benchmarks (BenchmarkClusterEveryClusterOfProxy
// of pkg/engine/envoycluster, and the paired run beside Istio's in conformance/istiorun) build
// once: the index of a snapshot and the benchmark's client proxy in it.
type EveryClusterBench struct {
	Index *index.Index
	Proxy *index.Proxy
}

// NewEveryClusterBench builds the index of snap and finds the client proxy of q in it.
func NewEveryClusterBench(snap *model.Snapshot, q Queries) (*EveryClusterBench, error) {
	ix := index.Build(snap)
	proxy, err := ix.Proxy("pod", q.ClientNamespace, q.ClientPod)
	if err != nil {
		return nil, err
	}
	return &EveryClusterBench{Index: ix, Proxy: proxy}, nil
}

// EveryCluster returns the clusters istiod would push to the client proxy for every host in
// its scope, each explained with the origin of every field, through a new Explainer (what
// istiod's BuildClusters does for the proxy, with the index as its PushContext), and the number
// of scope, selection, host and route diagnostics of the hosts that have clusters.
func (eb *EveryClusterBench) EveryCluster() ([]*envoycluster.Built, int, error) {
	e := envoycluster.NewExplainer(eb.Index, eb.Proxy)
	var out []*envoycluster.Built
	diags := 0
	for _, h := range e.Hosts() {
		hc, err := e.Host(h)
		if err != nil {
			return nil, 0, err
		}
		if hc.Service == nil || hc.Service.Resolution == index.Alias {
			continue
		}
		diags += len(hc.Diagnostics)
		for i := range hc.Clusters {
			if hc.Clusters[i].Cluster != nil {
				out = append(out, &hc.Clusters[i])
			}
		}
	}
	return out, diags, nil
}
