package source

import (
	"encoding/json"
	"fmt"

	jsoniter "github.com/json-iterator/go"

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
// undecoded as json.RawMessage) and its status skipped.
type liveEnvelope[S any] struct {
	metav1.TypeMeta
	Metadata liveMeta `json:"metadata"`
	Spec     S        `json:"spec"`
}

// decodeLive decodes one listed Istio object, parsing its bytes once. The spec goes through
// the type's own UnmarshalJSON (the legacy jsonpb decoder, unknown fields allowed), as the
// Istio clientset decodes it.
func decodeLive(ki *kindInfo, js []byte) (object, error) {
	env := &liveEnvelope[json.RawMessage]{}
	if err := pageJSON.Unmarshal(js, env); err != nil {
		return nil, fmt.Errorf("decoding a listed %s: %w", ki.kind, err)
	}
	return decodeEnvelope(ki, env)
}

// decodeNeededVirtualService is decodeLive for a listed VirtualService that needed
// (Spec.VirtualServiceNeeded) keeps, and nil for one it leaves out. A VirtualService is
// decoded in full, as from a file: what the answer says of it (its routes, and what Istio's
// validation rejects in it, D33) must not depend on how it was read.
func decodeNeededVirtualService(ki *kindInfo, listed []byte, needed func(listed []byte) bool) (object, error) {
	if !needed(listed) {
		return nil, nil
	}
	return decodeLive(ki, listed)
}

// decodeEnvelope is decodeLive for an object of another kind whose envelope is already read.
func decodeEnvelope(ki *kindInfo, env *liveEnvelope[json.RawMessage]) (object, error) {
	if ki.fresh == nil {
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
