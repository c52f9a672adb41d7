package envoycluster

import (
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// The typed setters write one field of the Cluster and its trace in one call, spelling the
// trace's value from the value written, so the two cannot disagree. field points at the proto
// field; path is its output path (provenance.FieldTrace.Path). TestTracesMatchClusters checks
// every traced value against the field of every cluster of the scenarios and a generated mesh.

// setU32 writes v into the UInt32Value field.
func (st *clusterState) setU32(field **wrapperspb.UInt32Value, path string, v uint32, o provenance.Origin) {
	*field = u32(v)
	st.set(path, fmtU32(v), o)
}

// setU64 writes v into the UInt64Value field.
func (st *clusterState) setU64(field **wrapperspb.UInt64Value, path string, v uint64, o provenance.Origin) {
	*field = wrapperspb.UInt64(v)
	st.set(path, strconv.FormatUint(v, 10), o)
}

// setDuration writes d into the Duration field (the message itself, shared with the input:
// clusters are never written to once built).
func (st *clusterState) setDuration(field **durationpb.Duration, path string, d *durationpb.Duration, o provenance.Origin) {
	*field = d
	st.set(path, fmtDuration(d), o)
}

// setPercent writes v into the Percent field; the trace spells it `v%`.
func (st *clusterState) setPercent(field **typev3.Percent, path string, v float64, o provenance.Origin) {
	*field = &typev3.Percent{Value: v}
	st.set(path, fmtPercent(v), o)
}

// percents are the spellings of the whole percentages, made once.
var percents = func() (out [101]string) {
	for i := range out {
		out[i] = strconv.Itoa(i) + "%"
	}
	return out
}()

// fmtPercent spells v as `v%`, a whole percentage without an allocation.
func fmtPercent(v float64) string {
	if i := int(v); float64(i) == v && i >= 0 && i < len(percents) {
		return percents[i]
	}
	return fmtFloat(v) + "%"
}

// setBool writes v into the bool field.
func (st *clusterState) setBool(field *bool, path string, v bool, o provenance.Origin) {
	*field = v
	st.set(path, strconv.FormatBool(v), o)
}

// setLbPolicy writes the cluster's lbPolicy.
func (st *clusterState) setLbPolicy(p clusterv3.Cluster_LbPolicy, o provenance.Origin) {
	st.c.LbPolicy = p
	st.set("lbPolicy", p.String(), o)
}
