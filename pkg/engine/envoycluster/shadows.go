package envoycluster

import (
	"fmt"
	"strings"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// addShadows attaches every dropped block's would-be values to the output paths they would
// have written, so the explanation shows what a port-level entry, a subset or a DestinationRule
// block discarded. The would-be values are computed by running the same mapping on a scratch
// cluster that has only the dropped block.
func (st *clusterState) addShadows() {
	for _, dr := range st.eff.dropped {
		prefix := dr.src.prefix + "." + dr.block.String()
		switch dr.block {
		case bTLS:
			tls := dr.value.(*networking.ClientTLSSettings)
			st.rec.Shadow("transportSocket", provenance.Shadow{Origin: st.b.origin(dr.src, "tls.mode"), Value: "tls " + tls.Mode.String(), Reason: dr.reason})
			continue
		case bProxyProtocol:
			pp := dr.value.(*networking.TrafficPolicy_ProxyProtocol)
			st.rec.Shadow("transportSocket", provenance.Shadow{Origin: st.b.origin(dr.src, "proxyProtocol.version"), Value: "PROXY protocol " + pp.Version.String(), Reason: dr.reason})
			continue
		}
		sc := st.scratchFor(dr)
		sc.st.rec.EachValue(func(t *provenance.FieldTrace) {
			if t.NotSent || t.Origin.Layer != dr.src.layer || !strings.HasPrefix(t.Origin.Field, prefix) {
				return
			}
			st.rec.Shadow(t.Path, provenance.Shadow{Origin: t.Origin, Value: t.Value, Reason: dr.reason})
		})
		sc.release()
	}
}

// scratch is the state scratchFor evaluates a dropped block on. Its parts are reused from one
// dropped block to the next (scratches): nothing of it outlives addShadows, which copies the
// values and origins it reads.
type scratch struct {
	st     clusterState
	eff    effective
	policy networking.TrafficPolicy
	c      clusterv3.Cluster
	typ    clusterv3.Cluster_Type
	lb     clusterv3.Cluster_CommonLbConfig
	d      diagnostics
}

var scratches = sync.Pool{New: func() any { return &scratch{} }}

// release empties sc and returns it, and its Recorder, to their pools.
func (sc *scratch) release() {
	putRecorder(sc.st.rec)
	sc.st, sc.eff = clusterState{}, effective{}
	sc.policy = networking.TrafficPolicy{}
	sc.c, sc.typ, sc.lb = clusterv3.Cluster{}, clusterv3.Cluster_Type{}, clusterv3.Cluster_CommonLbConfig{}
	scratches.Put(sc)
}

// scratchFor evaluates a dropped block alone on a copy of the cluster's starting point. The
// caller reads sc.st.rec, then releases sc.
func (st *clusterState) scratchFor(dr dropped) *scratch {
	sc := scratches.Get().(*scratch)
	p := &sc.policy
	put(p, dr.block, dr.value)
	sc.eff.policy = p
	sc.eff.src[dr.block] = dr.src
	sc.typ.Type = st.c.GetType()
	sc.c.Name, sc.c.ClusterDiscoveryType, sc.c.CommonLbConfig = st.c.Name, &sc.typ, &sc.lb
	sc.d.off = true
	sc.st = clusterState{b: st.b, c: &sc.c, rec: getRecorder(), d: &sc.d, eff: &sc.eff,
		subset: st.subset, subsetIndex: st.subsetIndex, defaultSNI: st.defaultSNI, scratch: true}
	s := &sc.st
	if st.hpo != nil {
		s.hpo = proto.Clone(st.hpo).(*httpv3.HttpProtocolOptions)
	}
	switch dr.block {
	case bConnectionPool:
		cp := p.ConnectionPool
		s.applyH2Upgrade(cp)
		s.applyConnectionPool(cp, nil)
	case bRetryBudget:
		s.applyConnectionPool(&networking.ConnectionPoolSettings{}, p.RetryBudget)
	case bOutlierDetection:
		s.applyOutlierDetection(p.OutlierDetection)
	case bLoadBalancer:
		s.applyLoadBalancer(p.LoadBalancer)
	}
	return sc
}

// policyDiagnostics reports the load-balancer, outlier-detection and listener-side surprises of
// the effective policy (D23, D24, D27, D29).
func (st *clusterState) policyDiagnostics() {
	b := st.b
	p := st.eff.policy
	name := st.c.Name
	if lb := p.GetLoadBalancer(); lb != nil {
		src := st.eff.src[bLoadBalancer]
		if ch := lb.GetConsistentHash(); ch != nil {
			if lb.GetWarmup() != nil || lb.GetWarmupDurationSecs() != nil {
				st.d.add(diag.ConsistentHashInconsistent.New(
					fmt.Sprintf("%s combines consistentHash with warmup: cluster %s hashes, and a slow-start config only stays when ringHash/maglev set no size", src.title(), name),
					"drop warmup: slow start does not apply to hash load balancers",
					refsOf(src.ref)...))
			}
			proto := b.in.Port.Protocol
			if !isHTTP(proto) && !isAuto(proto) && !ch.GetUseSourceIp() {
				st.d.add(diag.ConsistentHashInconsistent.New(
					fmt.Sprintf("%s hashes on a header, cookie or query parameter, but port %d is %s: only useSourceIp reaches the TCP proxy, so cluster %s is a hash cluster without hash input", src.title(), b.in.Port.Number, proto, name),
					"use consistentHash.useSourceIp for TCP ports",
					refsOf(src.ref)...))
			}
		}
		if lb.GetBackendUtilization() != nil {
			st.d.add(diag.ConsistentHashInconsistent.New(
				fmt.Sprintf("%s sets loadBalancer.backendUtilization, which this istiod version does not read: cluster %s uses %s", src.title(), name, st.c.LbPolicy),
				"use a simple policy, or an istiod version that supports backendUtilization",
				refsOf(src.ref)...))
		}
		if lb.GetSimple() == networking.LoadBalancerSettings_PASSTHROUGH && b.in.Service.Resolution != index.Passthrough {
			st.d.add(diag.PassthroughOnResolvedService.New(
				fmt.Sprintf("%s sets loadBalancer.simple PASSTHROUGH: cluster %s becomes ORIGINAL_DST and connects to the original destination IP, ignoring the service's endpoints", src.title(), name),
				"remove PASSTHROUGH unless clients address pods directly",
				refsOf(src.ref)...))
		}
	}
	if st.subsetIndex < 0 && st.eff.portEntry {
		top := b.in.Rule.Spec.GetTrafficPolicy()
		entry := firstPortEntry(top, b.in.Port.Number)
		if top.GetLoadBalancer().GetConsistentHash() != nil && entry.GetLoadBalancer() == nil {
			st.d.add(diag.ConsistentHashInconsistent.New(
				fmt.Sprintf("the top-level consistentHash is dropped for port %d by its portLevelSettings entry: cluster %s is %s, while routes still hash (RDS reads the top level)", b.in.Port.Number, name, st.c.LbPolicy),
				"repeat loadBalancer.consistentHash inside the portLevelSettings entry",
				refsOf(b.trafficPolicyRef())...))
		}
	}
	if od := p.GetOutlierDetection(); od != nil {
		src := st.eff.src[bOutlierDetection]
		var notes []string
		if od.Consecutive_5XxErrors == nil {
			notes = append(notes, "consecutive5xxErrors is unset, so Envoy still ejects a host after 5 consecutive 5xx")
		}
		if od.ConsecutiveErrors != 0 { //nolint:staticcheck // deprecated field, reported because istiod ignores it
			notes = append(notes, "the deprecated consecutiveErrors is ignored")
		}
		if len(od.GetOutlierDetectionHttpErrorCodes()) > 0 {
			notes = append(notes, "outlierDetectionHttpErrorCodes is not read by this istiod version (ejection still counts 5xx)")
		}
		if len(notes) > 0 {
			st.d.add(diag.OutlierDetectionSurprise.New(
				fmt.Sprintf("outlierDetection from %s on cluster %s: %s", src.title(), name, strings.Join(notes, "; ")),
				"set the outlier detection fields explicitly",
				refsOf(src.ref)...))
		}
	}
	if tcp := p.GetConnectionPool().GetTcp(); tcp != nil && (tcp.IdleTimeout != nil || tcp.MaxConnectionDuration != nil) {
		src := st.eff.src[bConnectionPool]
		if src.layer != provenance.LayerDestinationRule {
			st.d.add(diag.TCPSettingsBelowTopLevel.New(
				fmt.Sprintf("%s sets connectionPool.tcp idleTimeout or maxConnectionDuration: cluster %s carries them for HTTP, but the TCP proxy listener only reads them from the DestinationRule's top-level trafficPolicy", src.title(), name),
				"set tcp.idleTimeout and tcp.maxConnectionDuration at the top level for TCP traffic",
				refsOf(src.ref)...))
		}
	}
}
