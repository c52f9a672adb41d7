package istiorun

import (
	"fmt"
	"sort"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"istio.io/api/annotation"
	"istio.io/istio/pilot/pkg/model"
	v3 "istio.io/istio/pilot/pkg/xds/v3"
)

// authzNetworkFilters and authzHTTPFilters are the filters `-o envoy` keeps of a sidecar's
// inbound chains: those that decide who gets in.
var (
	authzNetworkFilters = map[string]bool{"envoy.filters.network.rbac": true, "envoy.filters.network.ext_authz": true}
	authzHTTPFilters    = map[string]bool{"envoy.filters.http.rbac": true, "envoy.filters.http.ext_authz": true}
)

// httpConnectionManager is the name of the network filter that holds a chain's HTTP filters.
const httpConnectionManager = "envoy.filters.network.http_connection_manager"

// Inbound runs istiod in process on the scenario, connects the sidecar of the pod the authz
// command names over ADS, and returns the filter chains of the `virtualInbound` listener istiod
// sends it (LDS), reduced by AuthzChains, in istiod's order (see CanonicalChainOrder for the
// part of that order that changes from run to run).
func Inbound(sc *Scenario) ([]*listener.FilterChain, error) {
	ConfigureLogging()
	if sc.Args.Verb != "authz" {
		return nil, fmt.Errorf("not an authz scenario: %q", sc.Command)
	}
	pods, err := sc.selectPods()
	if err != nil {
		return nil, err
	}
	if len(pods) != 1 {
		return nil, fmt.Errorf("a sidecar scenario names one pod; %q selects %d", sc.Command, len(pods))
	}
	pod := pods[0]
	if _, injected := pod.Annotations[annotation.SidecarStatus.Name]; !injected {
		return nil, &NoProxyError{Pod: pod.Namespace + "/" + pod.Name, Missing: annotation.SidecarStatus.Name + " annotation"}
	}
	if pod.Status.PodIP == "" {
		return nil, &NoProxyError{Pod: pod.Namespace + "/" + pod.Name, Missing: "status.podIP"}
	}
	proxy := sc.PodProxy(pod)
	resources, err := sc.Push(proxy, v3.ListenerType, "listeners")
	if err != nil {
		return nil, err
	}
	var vi *listener.Listener
	for _, r := range resources {
		l := &listener.Listener{}
		if err := r.UnmarshalTo(l); err != nil {
			return nil, err
		}
		if l.Name == model.VirtualInboundListenerName {
			vi = l
		}
	}
	if vi == nil {
		return nil, fmt.Errorf("istiod sent pod %s/%s no %s listener", pod.Namespace, pod.Name, model.VirtualInboundListenerName)
	}
	return AuthzChains(vi)
}

// AuthzChains reduces each filter chain of a listener to what `-o envoy` shows for a sidecar:
// its name, filterChainMatch and transportSocket, and of its filters only the authorization
// ones, in order: the network RBAC and ext_authz filters of the chain, then the HTTP RBAC and
// ext_authz filters of its HTTP connection manager (as Filters with the same name and config).
func AuthzChains(l *listener.Listener) ([]*listener.FilterChain, error) {
	var out []*listener.FilterChain
	for _, fc := range l.FilterChains {
		c := &listener.FilterChain{
			Name:             fc.Name,
			FilterChainMatch: fc.FilterChainMatch,
			TransportSocket:  fc.TransportSocket,
		}
		var httpFilters []*listener.Filter
		for _, f := range fc.Filters {
			switch {
			case authzNetworkFilters[f.Name]:
				c.Filters = append(c.Filters, f)
			case f.Name == httpConnectionManager:
				m := &hcm.HttpConnectionManager{}
				if err := f.GetTypedConfig().UnmarshalTo(m); err != nil {
					return nil, fmt.Errorf("chain %s: %s: %v", fc.Name, f.Name, err)
				}
				for _, hf := range m.HttpFilters {
					if authzHTTPFilters[hf.Name] {
						httpFilters = append(httpFilters, &listener.Filter{
							Name:       hf.Name,
							ConfigType: &listener.Filter_TypedConfig{TypedConfig: hf.GetTypedConfig()},
						})
					}
				}
			}
		}
		c.Filters = append(c.Filters, httpFilters...)
		out = append(out, c)
	}
	return out, nil
}

// IsPerPortPassthrough says whether a chain is one of the passthrough chains istiod adds for
// a portLevelMtls port that no Service exposes (authn.Builder.ForPassthrough): named
// `virtualInbound` or `virtualInbound-catchall-http`, with a destination port.
func IsPerPortPassthrough(c *listener.FilterChain) bool {
	return (c.Name == model.VirtualInboundListenerName || c.Name == model.VirtualInboundCatchAllHTTPFilterChainName) &&
		c.GetFilterChainMatch().GetDestinationPort() != nil
}

// CanonicalChainOrder sorts the per-port passthrough chains by port, in place, leaving every
// other chain where it is and the chains of one port in istiod's order. istiod emits those
// chains in the iteration order of a Go map (authn.Builder.ForPassthrough ranges over
// PortLevelSetting()), so with two or more such ports their order changes from push to push.
func CanonicalChainOrder(chains []*listener.FilterChain) {
	var idx []int
	var sub []*listener.FilterChain
	for i, c := range chains {
		if IsPerPortPassthrough(c) {
			idx = append(idx, i)
			sub = append(sub, c)
		}
	}
	sort.SliceStable(sub, func(i, j int) bool {
		return sub[i].FilterChainMatch.DestinationPort.Value < sub[j].FilterChainMatch.DestinationPort.Value
	})
	for k, i := range idx {
		chains[i] = sub[k]
	}
}

// InboundJSON writes filter chains the way `-o envoy` does for a sidecar pod: a JSON array of
// protojson objects, indented by two spaces, with a final newline.
func InboundJSON(chains []*listener.FilterChain) ([]byte, error) {
	return protoArrayJSON(chains, func(c *listener.FilterChain) string { return "filter chain " + c.Name })
}

// RunInbound runs a sidecar authz scenario and returns Istio's `-o envoy` output, with the
// per-port passthrough chains in canonical order (CanonicalChainOrder), so that a want file
// does not change from run to run.
func RunInbound(sc *Scenario) ([]byte, error) {
	cs, err := Inbound(sc)
	if err != nil {
		return nil, err
	}
	CanonicalChainOrder(cs)
	return InboundJSON(cs)
}

// RunInboundAsSent is RunInbound with the chains in the order istiod sent them.
func RunInboundAsSent(sc *Scenario) ([]byte, error) {
	cs, err := Inbound(sc)
	if err != nil {
		return nil, err
	}
	return InboundJSON(cs)
}
