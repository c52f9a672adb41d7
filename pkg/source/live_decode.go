package source

import (
	"encoding/json"
	"fmt"

	jsoniter "github.com/json-iterator/go"

	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pageJSON decodes what the API server lists of Istio's kinds (they arrive as JSON: custom
// resources have no protobuf form). It is json-iterator in its encoding/json-compatible
// configuration, which Kubernetes itself links (sigs.k8s.io/structured-merge-diff): the same
// field matching, embedding, Unmarshaler and RawMessage rules as encoding/json, at about twice
// its speed on a page of VirtualServices, the largest list a `cluster` reads
// (TestPageJSONDecodesAsEncodingJSON checks the two agree).
var pageJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// skipJSON is a JSON value that is read past and not kept.
type skipJSON struct{}

func (*skipJSON) UnmarshalJSON([]byte) error { return nil }

// liveMeta is an object's metadata without its managedFields: they are large, and nothing
// reads them. The outer field hides ObjectMeta's of the same JSON name.
type liveMeta struct {
	metav1.ObjectMeta
	ManagedFields skipJSON `json:"managedFields"`
}

// liveEnvelope is an Istio object as the API server lists it, its spec read into S (left
// undecoded as json.RawMessage, or a lightVirtualService) and its status skipped.
type liveEnvelope[S any] struct {
	metav1.TypeMeta
	Metadata liveMeta `json:"metadata"`
	Spec     S        `json:"spec"`
}

// decodeLive decodes one listed Istio object, parsing its bytes once. The spec goes through
// the type's own UnmarshalJSON (the legacy jsonpb decoder, unknown fields allowed), as the
// Istio clientset decodes it; a VirtualService is decoded in part (decodeVirtualServiceSpec).
func decodeLive(ki *kindInfo, js []byte) (object, error) {
	if ki.kind == KindVirtualService {
		env := &liveEnvelope[lightVirtualService]{}
		if err := pageJSON.Unmarshal(js, env); err != nil {
			return nil, fmt.Errorf("decoding a listed %s: %w", ki.kind, err)
		}
		return decodeVirtualService(ki, env)
	}
	env := &liveEnvelope[json.RawMessage]{}
	if err := pageJSON.Unmarshal(js, env); err != nil {
		return nil, fmt.Errorf("decoding a listed %s: %w", ki.kind, err)
	}
	return decodeEnvelope(ki, env)
}

// decodeVirtualService is decodeLive for a VirtualService whose envelope is already read.
func decodeVirtualService(_ *kindInfo, env *liveEnvelope[lightVirtualService]) (object, error) {
	x := &networkingv1.VirtualService{TypeMeta: env.TypeMeta, ObjectMeta: env.Metadata.ObjectMeta}
	env.Spec.fill(&x.Spec)
	return x, nil
}

// decodeNeededVirtualService is decodeLive for a listed VirtualService that needed
// (Spec.VirtualServiceNeeded) keeps, and nil for one it leaves out.
func decodeNeededVirtualService(ki *kindInfo, listed []byte, needed func(listed []byte) bool) (object, error) {
	if !needed(listed) {
		return nil, nil
	}
	return decodeLive(ki, listed)
}

// decodeEnvelope is decodeLive for an object of another kind whose envelope is already read.
func decodeEnvelope(ki *kindInfo, env *liveEnvelope[json.RawMessage]) (object, error) {
	if ki.fresh == nil || ki.kind == KindVirtualService {
		return nil, fmt.Errorf("%s is not an Istio kind", ki.kind)
	}
	p := ki.fresh()
	*p.tm, *p.om = env.TypeMeta, env.Metadata.ObjectMeta
	if len(env.Spec) > 0 && !isNull(env.Spec) {
		if err := decodeSpecAsClientset(env.Spec, p.spec); err != nil {
			return nil, fmt.Errorf("decoding %s %s/%s: %w", ki.kind, p.o.GetNamespace(), p.o.GetName(), err)
		}
	}
	return p.o, nil
}

// lightDestinationRule is the part of a DestinationRule its lookup reads (pkg/index
// destinationrule.go): the host, exportTo and the workload selector.
type lightDestinationRule struct {
	Host             string   `json:"host"`
	ExportTo         []string `json:"exportTo"`
	WorkloadSelector *struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"workloadSelector"`
}

// decodeDestinationRule is decodeEnvelope for a DestinationRule: in full when inFull says so
// for its namespace and host, else in its lookup fields only. A spec whose lookup fields do not
// read is decoded in full, so that the error is the full decoder's.
func decodeDestinationRule(ki *kindInfo, env *liveEnvelope[json.RawMessage], inFull func(namespace, host string) bool) (object, error) {
	l := &lightDestinationRule{}
	if len(env.Spec) == 0 || isNull(env.Spec) || pageJSON.Unmarshal(env.Spec, l) != nil || inFull(env.Metadata.Namespace, l.Host) {
		return decodeEnvelope(ki, env)
	}
	x := &networkingv1.DestinationRule{TypeMeta: env.TypeMeta, ObjectMeta: env.Metadata.ObjectMeta}
	x.Spec.Host, x.Spec.ExportTo = l.Host, l.ExportTo
	if ws := l.WorkloadSelector; ws != nil {
		x.Spec.WorkloadSelector = &typev1beta1.WorkloadSelector{MatchLabels: ws.MatchLabels}
	}
	return x, nil
}

// The part of a VirtualService the cluster engine reads (pkg/index routes.go and scope.go):
// hosts, gateways, exportTo, and for every HTTP, TCP and TLS route its destinations (host,
// subset, port), mirrors, delegate and match source namespaces. Everything else (retries,
// timeouts, rewrites, fault injection, header and URI matches...) is skipped: the list of every
// VirtualService in the mesh is the largest read, and most of it concerns neither the host nor
// the client.
type (
	lightVirtualService struct {
		Hosts    []string    `json:"hosts"`
		Gateways []string    `json:"gateways"`
		ExportTo []string    `json:"exportTo"`
		HTTP     []lightHTTP `json:"http"`
		TCP      []lightL4   `json:"tcp"`
		TLS      []lightL4   `json:"tls"`
	}
	lightHTTP struct {
		Match []struct {
			SourceNamespace string `json:"sourceNamespace"`
		} `json:"match"`
		Route   []lightRoute `json:"route"`
		Mirror  *lightDest   `json:"mirror"`
		Mirrors []lightRoute `json:"mirrors"`
		// Delegate is *struct, not a value, so that `"delegate": null` reads as no delegate.
		Delegate *struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"delegate"`
	}
	lightL4 struct {
		Route []lightRoute `json:"route"`
	}
	lightRoute struct {
		Destination *lightDest `json:"destination"`
	}
	lightDest struct {
		Host   string `json:"host"`
		Subset string `json:"subset"`
		Port   *struct {
			Number uint32 `json:"number"`
		} `json:"port"`
	}
)

// decodeVirtualServiceSpec fills the fields of spec that lightVirtualService lists.
func decodeVirtualServiceSpec(js []byte, spec *networking.VirtualService) error {
	l := &lightVirtualService{}
	if err := pageJSON.Unmarshal(js, l); err != nil {
		return err
	}
	l.fill(spec)
	return nil
}

// fill sets the fields of spec that l holds.
func (l *lightVirtualService) fill(spec *networking.VirtualService) {
	spec.Hosts, spec.Gateways, spec.ExportTo = l.Hosts, l.Gateways, l.ExportTo
	for _, h := range l.HTTP {
		r := &networking.HTTPRoute{Mirror: h.Mirror.proto()}
		for _, m := range h.Match {
			r.Match = append(r.Match, &networking.HTTPMatchRequest{SourceNamespace: m.SourceNamespace})
		}
		for _, rd := range h.Route {
			r.Route = append(r.Route, &networking.HTTPRouteDestination{Destination: rd.Destination.proto()})
		}
		for _, m := range h.Mirrors {
			r.Mirrors = append(r.Mirrors, &networking.HTTPMirrorPolicy{Destination: m.Destination.proto()})
		}
		if h.Delegate != nil {
			r.Delegate = &networking.Delegate{Name: h.Delegate.Name, Namespace: h.Delegate.Namespace}
		}
		spec.Http = append(spec.Http, r)
	}
	for _, t := range l.TCP {
		r := &networking.TCPRoute{}
		for _, rd := range t.Route {
			r.Route = append(r.Route, &networking.RouteDestination{Destination: rd.Destination.proto()})
		}
		spec.Tcp = append(spec.Tcp, r)
	}
	for _, t := range l.TLS {
		r := &networking.TLSRoute{}
		for _, rd := range t.Route {
			r.Route = append(r.Route, &networking.RouteDestination{Destination: rd.Destination.proto()})
		}
		spec.Tls = append(spec.Tls, r)
	}
}

func (d *lightDest) proto() *networking.Destination {
	if d == nil {
		return nil
	}
	out := &networking.Destination{Host: d.Host, Subset: d.Subset}
	if d.Port != nil {
		out.Port = &networking.PortSelector{Number: d.Port.Number}
	}
	return out
}
