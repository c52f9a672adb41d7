package envoycluster

import (
	"math"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// Output path prefixes, in Envoy JSON spelling.
const (
	hpoTypeName = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
	pHPO        = "typedExtensionProtocolOptions[" + hpoTypeName + "]"
	pCB         = "circuitBreakers.thresholds[0]"
	pIstioMeta  = "metadata.filterMetadata[istio]"
	pKeepalive  = "upstreamConnectionOptions.tcpKeepalive"
)

// source says which configuration layer a TrafficPolicy block came from.
type source struct {
	layer provenance.Layer
	// ref is the DestinationRule (or the MeshConfig source) holding the block.
	ref *provenance.Ref
	// prefix is the CRD path of the TrafficPolicy holding the block:
	// `spec.trafficPolicy.portLevelSettings[port=9080]`, or `defaultTrafficPolicy` for MeshConfig.
	prefix string
	// mesh marks the MeshConfig defaultTrafficPolicy baseline.
	mesh bool
}

// title is the human name of the layer: `DestinationRule bookinfo/reviews portLevelSettings[port=9080]`.
func (s source) title() string {
	if s.mesh {
		return "MeshConfig defaultTrafficPolicy"
	}
	p := strings.TrimPrefix(s.prefix, "spec.")
	p = strings.TrimPrefix(p, "trafficPolicy.")
	name := "DestinationRule"
	if s.ref != nil {
		name = s.ref.String()
	}
	if p == "trafficPolicy" {
		return name + " trafficPolicy"
	}
	return name + " " + p
}

// origin returns the origin of field (relative to the TrafficPolicy, CRD spelling) of source s.
func (b *builder) origin(s source, field string) provenance.Origin {
	path := joinField(s.prefix, field)
	// The Ref is shared by every origin of the source: origins are never changed.
	o := provenance.Origin{Layer: s.layer, Field: path, Resource: s.ref}
	if s.mesh {
		o.Position = b.meshPosition()
		return o
	}
	o.Position = b.position(s.ref, path)
	return o
}

// fieldPaths holds the joined CRD paths of origin, shared by every build: the prefixes and
// fields are few (policy paths, port numbers, subset names) and every cluster asks again.
var fieldPaths = struct {
	sync.RWMutex
	m map[[2]string]string
}{m: map[[2]string]string{}}

// maxFieldPaths bounds fieldPaths; beyond it paths are joined on every call.
const maxFieldPaths = 1 << 16

// joinField returns prefix + "." + field.
func joinField(prefix, field string) string {
	k := [2]string{prefix, field}
	fieldPaths.RLock()
	p, ok := fieldPaths.m[k]
	fieldPaths.RUnlock()
	if ok {
		return p
	}
	p = prefix + "." + field
	fieldPaths.Lock()
	if len(fieldPaths.m) < maxFieldPaths {
		fieldPaths.m[k] = p
	}
	fieldPaths.Unlock()
	return p
}

// positionCache holds the file positions of fields (nil when the snapshot knows none), each
// looked up once. One cache serves every build of an Explainer; it is safe for concurrent use.
type positionCache struct {
	mu sync.Mutex
	m  map[positionKey]*provenance.Position
}

type positionKey struct {
	object model.ObjectKey
	field  string
}

// lookup returns the position of k in snap, looking it up the first time it is asked.
func (c *positionCache) lookup(snap *model.Snapshot, k positionKey) *provenance.Position {
	c.mu.Lock()
	p, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return p
	}
	p = snap.FieldPosition(k.object, k.field)
	c.mu.Lock()
	if c.m == nil {
		c.m = map[positionKey]*provenance.Position{}
	}
	c.m[k] = p
	c.mu.Unlock()
	return p
}

// deferred is the Position of an origin whose position a deferring build left to
// resolvePositions, which looks it up from the origin's Resource and Field. It stands for "not
// looked up yet" and is replaced before the origin is shown.
var deferred = &provenance.Position{}

// deferredName is deferred for an origin that locates its Resource's metadata.name, not its
// Field (the `istio.config` metadata names the rule, not a field of it).
var deferredName = &provenance.Position{}

// position returns the file position of a field of an object, when the snapshot knows it.
// Origins of the same field share the Position. When the build defers positions it returns
// deferred, for resolvePositions.
func (b *builder) position(ref *provenance.Ref, field string) *provenance.Position {
	if b.in.Snapshot == nil || ref == nil {
		return nil
	}
	if b.in.deferPositions {
		return deferred
	}
	return b.in.positions.lookup(b.in.Snapshot, positionKey{model.ObjectKey{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}, field})
}

// namePosition is the position of the metadata.name of ref, for an origin whose Field is not
// the field located. When the build defers positions it returns deferredName.
func (b *builder) namePosition(ref *provenance.Ref) *provenance.Position {
	if b.in.Snapshot == nil || ref == nil {
		return nil
	}
	if b.in.deferPositions {
		return deferredName
	}
	return b.in.positions.lookup(b.in.Snapshot, positionKey{model.ObjectKey{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}, "metadata.name"})
}

// resolvePositions fills in the Origins of the builds of bs kept compactly, and the positions
// the builds deferred: every origin whose Position is deferred gets the position of its
// Resource's Field (deferredName: of its Resource's metadata.name), or none.
func resolvePositions(snap *model.Snapshot, cache *positionCache, bs []Built) {
	fill := func(o *provenance.Origin) {
		field := o.Field
		switch o.Position {
		case deferred:
		case deferredName:
			field = "metadata.name"
		default:
			return
		}
		o.Position = nil
		if snap == nil || o.Resource == nil || field == "" {
			return
		}
		o.Position = cache.lookup(snap, positionKey{model.ObjectKey{Kind: o.Resource.Kind, Namespace: o.Resource.Namespace, Name: o.Resource.Name}, field})
	}
	for i := range bs {
		if bs[i].Origins == nil && !bs[i].traces.IsZero() {
			bs[i].Origins, bs[i].traces = bs[i].traces.Traces(), provenance.SharedTraces{}
		}
		for j := range bs[i].Origins {
			t := &bs[i].Origins[j]
			fill(&t.Origin)
			for k := range t.Shadowed {
				fill(&t.Shadowed[k].Origin)
			}
		}
	}
}

func (b *builder) meshPosition() *provenance.Position {
	if b.in.Snapshot == nil {
		return nil
	}
	return b.in.Snapshot.MeshConfigPosition
}

// meshOrigin is the origin of a MeshConfig field (`connectTimeout`, `tcpKeepalive.time`). A field
// the user did not set is istiod's mesh default.
func (b *builder) meshOrigin(field string) provenance.Origin {
	o, set := b.in.Snapshot.MeshConfigOrigin(field, "")
	if !set {
		o.Note = "istiod mesh default (pkg/config/mesh DefaultMeshConfig)"
	}
	return o
}

// istioDefault is a value istiod writes whatever the configuration says; note names the rule.
func istioDefault(note string) provenance.Origin {
	return provenance.Origin{Layer: provenance.LayerIstioDefault, Note: note}
}

// envoyDefault is a value istiod does not send.
func envoyDefault(note string) provenance.Origin {
	return provenance.Origin{Layer: provenance.LayerEnvoyDefault, Note: note}
}

// flagOrigin is a value decided by an istiod feature flag.
func flagOrigin(name, note string) provenance.Origin {
	return provenance.Origin{Layer: provenance.LayerIstiodFlag, Field: name, Note: note}
}

// registryOrigin is a value derived from the Service or ServiceEntry.
func (b *builder) registryOrigin(field, note string) provenance.Origin {
	o := provenance.Origin{Layer: provenance.LayerRegistry, Field: field, Note: note}
	if ref := b.serviceRef; ref != nil {
		o.Resource = ref
		if field != "" {
			o.Position = b.position(ref, field)
		}
	}
	return o
}

// proxyOrigin is a value taken from the client proxy.
func (b *builder) proxyOrigin(field, note string) provenance.Origin {
	o := provenance.Origin{Layer: provenance.LayerProxy, Field: field, Note: note}
	if p := b.in.Proxy; p != nil && p.Pod != nil {
		r := *p.Pod
		o.Resource = &r
	}
	return o
}

// portField is the CRD path of the service port in the Service (`port`) or ServiceEntry (`number`).
func (b *builder) portField() string {
	if b.portPath == "" {
		if b.in.Service.Kubernetes {
			b.portPath = "spec.ports[port=" + fmtU32(b.in.Port.Number) + "]"
		} else {
			b.portPath = "spec.ports[number=" + fmtU32(b.in.Port.Number) + "]"
		}
	}
	return b.portPath
}

func fmtDuration(d *durationpb.Duration) string {
	if d == nil {
		return ""
	}
	return d.AsDuration().String()
}

// fmtU32 spells v in decimal; the values every cluster carries (Istio's circuit-breaker maxima,
// enforcement percentages) without an allocation.
func fmtU32(v uint32) string {
	switch v {
	case math.MaxUint32:
		return "4294967295"
	case 100:
		return "100"
	}
	return strconv.FormatUint(uint64(v), 10)
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
