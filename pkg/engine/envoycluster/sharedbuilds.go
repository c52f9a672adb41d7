package envoycluster

import (
	"slices"
	"sync"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
)

// SharedBuilds keeps the diagnostics of the cluster builds of one index for the Explainers that
// share it (HostDiagnostics). The builds read of the client proxy only its pod, labels, IPs and
// locality, and only for fields of the clusters: the DNS lookup family (dnsLookupFamily, from
// the IPs), the endpoints' priorities (proxyLocality, and applyFailoverPriorities from the
// labels) and the origins of those fields (proxyOrigin, from the pod). No diagnostic of a build
// reads those fields or their origins (the diagnostics of layering.go, shadows.go, tls.go,
// trafficpolicy.go and locality.go read the service, the rule, the settings and their origins),
// and everything else the builds read is the service, the selected rule and the index. So every
// proxy gets the same build diagnostics for a service and rule, and they are made once for all.
// TestHostDiagnosticsMatchHost compares them with each proxy's own builds, for every pod and
// namespace of every cluster scenario. It is safe for concurrent use.
type SharedBuilds struct {
	ix *index.Index
	mu sync.Mutex
	m  map[buildKey]*sharedBuild
}

// buildKey is what the diagnostics of the builds depend on, besides the index: the service (as
// the scope hands it over), the selected rule, and whether the proxy is a gateway's (a
// router's clusters differ: discovery type, downstream protocol, credentialName). The keys
// hold their pointers, so neither is collected and its address reused while SharedBuilds
// lives.
type buildKey struct {
	svc    *index.Service
	rule   *index.ConsolidatedRule
	router bool
}

type sharedBuild struct {
	once  sync.Once
	diags []explain.Diagnostic
	err   error
}

// NewSharedBuilds returns an empty SharedBuilds for the Explainers over ix.
func NewSharedBuilds(ix *index.Index) *SharedBuilds {
	return &SharedBuilds{ix: ix, m: map[buildKey]*sharedBuild{}}
}

// HostDiagnostics is the diagnostics of Host(hostname), in the same order (the host's, then
// those of every cluster), and the service in the proxy's scope (nil outside it), without the
// clusters. With shared (which may be nil) the builds are made once for every proxy of the
// index that selects the same rule for the same service. The slice returned is the caller's to
// append to.
func (e *Explainer) HostDiagnostics(hostname string, shared *SharedBuilds) (*index.Service, []explain.Diagnostic, error) {
	hc, in, err := e.prepare(hostname, 0, "", slowPaths{})
	if err != nil {
		return nil, nil, err
	}
	diags := slices.Clip(hc.Diagnostics)
	if in == nil {
		return hc.Service, diags, nil
	}
	var built []explain.Diagnostic
	if shared != nil && shared.ix == e.ix {
		built, err = shared.diagnostics(*in)
	} else {
		built, err = buildDiagnostics(*in)
	}
	if err != nil {
		return nil, nil, err
	}
	return hc.Service, append(diags, built...), nil
}

// diagnostics is buildDiagnostics(in), made once per service and rule.
func (s *SharedBuilds) diagnostics(in Input) ([]explain.Diagnostic, error) {
	k := buildKey{svc: in.Service, rule: in.Rule, router: in.router()}
	s.mu.Lock()
	b := s.m[k]
	if b == nil {
		b = &sharedBuild{}
		s.m[k] = b
	}
	s.mu.Unlock()
	b.once.Do(func() { b.diags, b.err = buildDiagnostics(in) })
	return slices.Clip(b.diags), b.err
}

// buildDiagnostics builds the clusters of in.Service and returns their diagnostics, in order.
func buildDiagnostics(in Input) ([]explain.Diagnostic, error) {
	built, err := buildPorts(in, 0)
	if err != nil {
		return nil, err
	}
	var out []explain.Diagnostic
	for _, b := range built {
		out = append(out, b.Diagnostics...)
	}
	return out, nil
}
