package index

import (
	"sort"
	"strings"
	"sync"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// DomainSuffix is the cluster domain istiod appends to Kubernetes Service names
// (`<name>.<ns>.svc.<domain>`); istiod's default, which this tool assumes.
const DomainSuffix = meshhost.DomainSuffix

// ClusterID is istiod's default cluster name (features.ClusterName), written into the
// `topology.istio.io/cluster` label of every endpoint.
const ClusterID = "Kubernetes"

// Index is the read-only lookup layer over one Snapshot. Build it once; every method is safe to
// call many times, also concurrently, and never changes the snapshot. What a proxy's sidecar
// scope imports is computed once per proxy namespace and labels and kept.
type Index struct {
	snap *model.Snapshot
	root string

	// services are the registry services (one per Kubernetes Service and per ServiceEntry host),
	// sorted as istiod's SortServicesByCreationTime sorts them.
	services []*regService
	// groups are the services by hostname, then namespace: istiod's
	// ServiceIndex.HostnameAndNamespace plus the merged view of every definition.
	groups map[string]map[string]*serviceGroup
	// public and exportedTo are istiod's ServiceIndex.public and exportedToNamespace.
	public     []*regService
	exportedTo map[string][]*regService
	// workloads are the pods and WorkloadEntries by namespace, for label selection, and
	// workloadsByLabel the same lists by namespace and label (each in the order of workloads).
	workloads        map[string][]*workload
	workloadsByLabel map[string]map[labelKV][]*workload
	// workloadByRef finds the workload behind an endpoint.
	workloadByRef map[provenance.Ref]*workload
	// nodes are the snapshot's Nodes by name, for pod localities.
	nodes map[string]*corev1.Node

	drs  []*drInfo
	drIx drIndex
	// drsByHost are the DestinationRules by resolved host, and wildcardDRs those whose host is
	// a wildcard, each in the order of drs.
	drsByHost   map[string][]*drInfo
	wildcardDRs []*drInfo

	vss []*vsInfo

	peerAuthn *peerAuthnIndex

	// mu guards the sidecar scopes by proxy namespace (one per distinct set of labels), made
	// on first use.
	mu     sync.Mutex
	scopes map[string][]scopeEntry
	// unmatched are the DestinationRules whose host matches no service, found on first use:
	// every host's diagnostics read them, so they have their own lock, not mu, which is held
	// while a scope is built.
	unmatchedOnce sync.Once
	unmatched     []*drInfo
	// proxyScopes are the scopes scopeFor found, by *Proxy: the explanations of one proxy ask
	// for it on every host, and check asks for several proxies in turn on every core.
	proxyScopes sync.Map
	// vsRejected is D33 of each VirtualService by provenance.Ref, found once
	// (virtualServiceRejected).
	vsRejected sync.Map
}

// Build indexes snap. It never fails: objects it cannot interpret are skipped the way istiod
// skips them, and the diagnostics say so where it matters.
func Build(snap *model.Snapshot) *Index {
	if snap == nil {
		snap = &model.Snapshot{}
	}
	ix := &Index{snap: snap, root: snap.RootNamespace()}
	ix.buildWorkloads()
	ix.buildServices()
	ix.buildDestinationRules()
	ix.buildVirtualServices()
	ix.buildPeerAuthentications()
	return ix
}

// Snapshot returns the snapshot the index was built from.
func (ix *Index) Snapshot() *model.Snapshot { return ix.snap }

// RootNamespace is MeshConfig rootNamespace (default istio-system).
func (ix *Index) RootNamespace() string { return ix.root }

// TrustDomain is MeshConfig trustDomain, default cluster.local.
func (ix *Index) TrustDomain() string {
	if td := ix.snap.MeshConfig.GetTrustDomain(); td != "" {
		return td
	}
	return "cluster.local"
}

// spiffeID is spiffe.MustGenSpiffeURIForTrustDomain: `spiffe://<td>/ns/<ns>/sa/<sa>`.
func spiffeID(trustDomain, ns, sa string) string {
	return "spiffe://" + trustDomain + "/ns/" + ns + "/sa/" + sa
}

// mostSpecificHostMatch is model.MostSpecificHostMatch (pilot/pkg/model/config.go): an exact key
// first, otherwise the most specific wildcard key whose suffix covers needle. For a wildcard
// needle only wildcard keys are considered.
func mostSpecificHostMatch[V any](needle string, specific, wildcard map[string]V) (string, V, bool) {
	var zero V
	suffixOf := needle
	if meshhost.Name(needle).IsWildCarded() {
		if v, ok := wildcard[needle]; ok {
			return needle, v, true
		}
		suffixOf = needle[1:]
	} else if v, ok := specific[needle]; ok {
		return needle, v, true
	}
	found := false
	var match string
	for h := range wildcard {
		if !strings.HasSuffix(suffixOf, h[1:]) {
			continue
		}
		if !found || meshhost.MoreSpecific(meshhost.Name(h), meshhost.Name(match)) {
			match, found = h, true
		}
	}
	if !found {
		return "", zero, false
	}
	return match, wildcard[match], true
}

// labelSet is a label selector as a list, for matching many label maps against it.
type labelSet []labelKV

func labelPairs(sel map[string]string) labelSet {
	out := make(labelSet, 0, len(sel))
	for k, v := range sel {
		out = append(out, labelKV{k, v})
	}
	return out
}

// matches is meshhost.LabelsSubsetOf(the selector, l).
func (s labelSet) matches(l map[string]string) bool {
	for _, kv := range s {
		if got, ok := l[kv.key]; !ok || got != kv.value {
			return false
		}
	}
	return true
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// formatLabels prints labels as `a=b,c=d` (sorted), or `{}` when empty.
func formatLabels(l map[string]string) string {
	if len(l) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(l))
	for _, k := range sortedKeys(l) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

func sidecarRef(sc *networkingv1.Sidecar) provenance.Ref {
	return provenance.Ref{Kind: "Sidecar", Namespace: sc.Namespace, Name: sc.Name}
}

func drRef(dr *networkingv1.DestinationRule) provenance.Ref {
	return provenance.Ref{Kind: "DestinationRule", Namespace: dr.Namespace, Name: dr.Name}
}

func vsRef(vs *networkingv1.VirtualService) provenance.Ref {
	return provenance.Ref{Kind: "VirtualService", Namespace: vs.Namespace, Name: vs.Name}
}
