package envoycluster

import (
	"fmt"
	"math"
	"sort"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// lbSetting is the locality or zone-aware setting loadbalancer.GetEffectiveLbSetting picks, with
// where it came from.
type lbSetting struct {
	locality *networking.LocalityLoadBalancerSetting
	zone     *networking.ZoneAwareLoadBalancerSetting
	force    bool
	// origin returns the origin of a field of the setting (`distribute`, `failover`), "" for the
	// setting itself.
	origin func(field string) provenance.Origin
	title  string
}

// Topology labels used by the traffic-distribution failover priorities.
const (
	labelNetwork  = "topology.istio.io/network"
	labelRegion   = "topology.kubernetes.io/region"
	labelZone     = "topology.kubernetes.io/zone"
	labelSubzone  = "topology.istio.io/subzone"
	labelHostname = "kubernetes.io/hostname"
)

// effectiveLbSetting mirrors loadbalancer.go GetEffectiveLbSetting: DR zoneAwareLbSetting, DR
// localityLbSetting, the Service's traffic distribution, MeshConfig zoneAwareLbSetting, MeshConfig
// localityLbSetting; the first that exists wins whole (no merging), and `enabled: false` means none.
func (st *clusterState) effectiveLbSetting(lb *networking.LoadBalancerSettings) *lbSetting {
	b := st.b
	dr := func(base string) func(string) provenance.Origin {
		return func(f string) provenance.Origin {
			if f != "" {
				f = "." + f
			}
			return st.blockOrigin(bLoadBalancer, "loadBalancer."+base+f)
		}
	}
	mesh := func(base string) func(string) provenance.Origin {
		return func(f string) provenance.Origin {
			if f != "" {
				f = "." + f
			}
			return b.meshOrigin(base + f)
		}
	}
	if za := lb.GetZoneAwareLbSetting(); za != nil {
		return &lbSetting{zone: za, origin: dr("zoneAwareLbSetting"), title: st.eff.src[bLoadBalancer].title() + " zoneAwareLbSetting"}
	}
	if l := lb.GetLocalityLbSetting(); l != nil {
		if l.GetEnabled() != nil && !l.GetEnabled().GetValue() {
			return nil
		}
		return &lbSetting{locality: l, origin: dr("localityLbSetting"), title: st.eff.src[bLoadBalancer].title() + " localityLbSetting"}
	}
	switch b.in.Service.TrafficDistribution {
	case "PreferSameZone":
		return &lbSetting{locality: &networking.LocalityLoadBalancerSetting{Enabled: wrapperspb.Bool(true),
			FailoverPriority: []string{labelNetwork, labelRegion, labelZone}}, force: true,
			origin: func(string) provenance.Origin {
				return b.registryOrigin("spec.trafficDistribution", "PreferSameZone: failover by network, region, zone")
			}, title: "traffic distribution PreferSameZone"}
	case "PreferSameNode":
		return &lbSetting{locality: &networking.LocalityLoadBalancerSetting{Enabled: wrapperspb.Bool(true),
			FailoverPriority: []string{labelNetwork, labelRegion, labelZone, labelSubzone, labelHostname}}, force: true,
			origin: func(string) provenance.Origin {
				return b.registryOrigin("spec.trafficDistribution", "PreferSameNode: failover by network, region, zone, subzone, node")
			}, title: "traffic distribution PreferSameNode"}
	}
	if za := b.mesh.GetZoneAwareLbSetting(); za != nil {
		return &lbSetting{zone: za, origin: mesh("zoneAwareLbSetting"), title: "MeshConfig zoneAwareLbSetting"}
	}
	if l := b.mesh.GetLocalityLbSetting(); l != nil {
		if l.GetEnabled() != nil && !l.GetEnabled().GetValue() {
			return nil
		}
		if b.meshLocality == nil {
			b.meshLocality = &lbSetting{locality: l, origin: mesh("localityLbSetting"), title: "MeshConfig localityLbSetting"}
		}
		return b.meshLocality
	}
	return nil
}

// applyLocality mirrors LBSettings.ApplyToCluster for locality and zone-aware settings.
func (st *clusterState) applyLocality(lb *networking.LoadBalancerSettings) {
	c := st.c
	s := st.effectiveLbSetting(lb)
	if s == nil {
		s = &lbSetting{origin: func(string) provenance.Origin { return provenance.Origin{} }}
	}
	if s.zone != nil {
		st.applyZoneAware(s)
		return
	}
	// Failover needs outlier detection (or a forced setting): without it Envoy never leaves
	// priority 0. locality_weighted_lb_config is set only when weights or failover will be used,
	// since it changes how LEAST_REQUEST and friends pick hosts.
	l := s.locality
	enableFailover := s.force || c.OutlierDetection != nil
	var wo provenance.Origin
	switch {
	case st.b.flags.LocalityWeightedLbConfig:
		wo = flagOrigin("ENABLE_LOCALITY_WEIGHTED_LB_CONFIG", "")
	case l.GetDistribute() != nil:
		wo = s.origin("distribute")
	case enableFailover && l.GetFailover() != nil:
		wo = s.origin("failover")
	case enableFailover && l.GetFailoverPriority() != nil:
		wo = s.origin("failoverPriority")
	}
	if wo.Layer != provenance.LayerNone {
		c.CommonLbConfig.LocalityConfigSpecifier = &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig_{
			LocalityWeightedLbConfig: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig{}}
		st.set("commonLbConfig.localityWeightedLbConfig", "{}", wo)
	}
	if !enableFailover && l.GetDistribute() == nil && (len(l.GetFailover()) > 0 || len(l.GetFailoverPriority()) > 0) {
		st.d.add(diag.OutlierDetectionSurprise.New(
			fmt.Sprintf("%s configures locality failover, but cluster %s has no outlierDetection, so no failover happens", s.title, c.Name),
			"add an outlierDetection block: Envoy only fails over once it ejects unhealthy endpoints",
			refsOf(s.origin("").Resource)...))
	}
	if c.LoadAssignment != nil && l != nil {
		st.applyLocalityLoadBalancer(s, c.OutlierDetection != nil || s.force)
	}
}

// applyZoneAware mirrors ZoneAwareLBSettings.ApplyToCluster for a sidecar.
func (st *clusterState) applyZoneAware(s *lbSetting) {
	c := st.c
	z := s.zone
	var minSize *wrapperspb.UInt64Value
	if m := z.GetMinClusterSize(); m != nil {
		minSize = wrapperspb.UInt64(uint64(m.GetValue()))
	}
	if z.GetEnabled() != nil && !z.GetEnabled().GetValue() {
		c.CommonLbConfig.LocalityConfigSpecifier = &clusterv3.Cluster_CommonLbConfig_ZoneAwareLbConfig_{ZoneAwareLbConfig: &clusterv3.Cluster_CommonLbConfig_ZoneAwareLbConfig{
			RoutingEnabled: &typev3.Percent{Value: 0}, MinClusterSize: minSize}}
		st.set("commonLbConfig.zoneAwareLbConfig.routingEnabled", "0%", withNote(s.origin("enabled"), "enabled: false suppresses Envoy's own zone-aware routing"))
		if minSize != nil {
			st.set("commonLbConfig.zoneAwareLbConfig.minClusterSize", fmt.Sprint(minSize.GetValue()), s.origin("minClusterSize"))
		}
		return
	}
	c.CommonLbConfig.LocalityConfigSpecifier = &clusterv3.Cluster_CommonLbConfig_ZoneAwareLbConfig_{ZoneAwareLbConfig: &clusterv3.Cluster_CommonLbConfig_ZoneAwareLbConfig{MinClusterSize: minSize}}
	if minSize != nil {
		st.set("commonLbConfig.zoneAwareLbConfig.minClusterSize", fmt.Sprint(minSize.GetValue()), s.origin("minClusterSize"))
	} else {
		st.set("commonLbConfig.zoneAwareLbConfig", "{}", s.origin(""))
	}
	la := c.LoadAssignment
	if la == nil {
		return
	}
	if len(z.GetFailoverPriority()) > 0 {
		st.applyFailoverPriorities(z.GetFailoverPriority())
	}
	// Region bucketing: the proxy's region at priority 0, failover targets next, the rest last.
	proxyRegion := st.b.proxyLocality().GetRegion()
	prio := map[int][]int{}
	for i, ep := range la.Endpoints {
		r := ep.GetLocality().GetRegion()
		p := 0
		if r != proxyRegion {
			p = 2
			for _, f := range z.GetFailover() {
				if f.From == proxyRegion {
					if r == f.To {
						p = 1
					}
					break
				}
			}
		}
		v := int(ep.Priority*3) + p
		ep.Priority = uint32(v)
		prio[v] = append(prio[v], i)
	}
	compactPriorities(la, prio)
	st.tracePriorities(s.origin("failover"))
}

// proxyLocality is the client proxy's locality (util.ConvertLocality).
func (b *builder) proxyLocality() *corev3.Locality { return convertLocality(b.in.Proxy.Locality) }

func convertLocality(l string) *corev3.Locality {
	if l == "" {
		return &corev3.Locality{}
	}
	parts := strings.SplitN(l, "/", 3)
	out := &corev3.Locality{Region: parts[0]}
	if len(parts) > 1 {
		out.Zone = parts[1]
	}
	if len(parts) > 2 {
		out.SubZone = parts[2]
	}
	return out
}

// localityMatch mirrors util.LocalityMatch: `*` and missing parts match anything below the region.
func localityMatch(proxy *corev3.Locality, rule string) bool {
	r := convertLocality(rule)
	return (r.Region == "*" || proxy.GetRegion() == r.Region) &&
		(r.Zone == "*" || r.Zone == "" || proxy.GetZone() == r.Zone) &&
		(r.SubZone == "*" || r.SubZone == "" || proxy.GetSubZone() == r.SubZone)
}

// lbPriority mirrors util.LbPriority.
func lbPriority(proxy, ep *corev3.Locality) int {
	if proxy.GetRegion() == ep.GetRegion() {
		if proxy.GetZone() == ep.GetZone() {
			if proxy.GetSubZone() == ep.GetSubZone() {
				return 0
			}
			return 1
		}
		return 2
	}
	return 3
}

// applyLocalityLoadBalancer mirrors loadbalancer.go ApplyLocalityLoadBalancer on the inline load
// assignment of a DNS cluster (EDS clusters get the same treatment in EDS, outside CDS).
func (st *clusterState) applyLocalityLoadBalancer(s *lbSetting, enableFailover bool) {
	l := s.locality
	switch {
	case l.GetDistribute() != nil:
		st.applyLocalityWeights(l.GetDistribute(), s.origin("distribute"))
	case enableFailover:
		if len(l.GetFailoverPriority()) > 0 {
			st.applyFailoverPriorities(l.GetFailoverPriority())
			if len(l.GetFailover()) != 0 {
				st.applyLocalityFailover(l.GetFailover())
			}
			st.tracePriorities(s.origin("failoverPriority"))
			return
		}
		st.applyLocalityFailover(l.GetFailover())
		o := s.origin("failover")
		if len(l.GetFailover()) == 0 {
			o = withNote(s.origin(""), "default failover: same region/zone/subzone first, then zone, region, others (outlierDetection enables it)")
		}
		st.tracePriorities(o)
	}
}

// applyLocalityWeights mirrors loadbalancer.go applyLocalityWeights. Destinations are visited in
// sorted order (istiod iterates a map).
func (st *clusterState) applyLocalityWeights(distribute []*networking.LocalityLoadBalancerSetting_Distribute, o provenance.Origin) {
	la := st.c.LoadAssignment
	proxy := st.b.proxyLocality()
	for _, d := range distribute {
		if d == nil || !localityMatch(proxy, d.From) {
			continue
		}
		mis := map[int]bool{}
		for i := range la.Endpoints {
			mis[i] = true
		}
		tos := make([]string, 0, len(d.To))
		for k := range d.To {
			tos = append(tos, k)
		}
		sort.Strings(tos)
		for _, to := range tos {
			weight := d.To[to]
			dest := map[int]uint32{}
			total := uint32(0)
			for i, ep := range la.Endpoints {
				if mis[i] && localityMatch(ep.Locality, to) {
					delete(mis, i)
					w := uint32(1)
					if ep.LoadBalancingWeight != nil {
						w = ep.LoadBalancingWeight.Value
					}
					dest[i] = w
					total += w
				}
			}
			for i, ow := range dest {
				if v := float64(ow*weight) / float64(total); v > 0 {
					la.Endpoints[i].LoadBalancingWeight = u32(uint32(math.Ceil(v)))
					st.set(fmt.Sprintf("loadAssignment.endpoints[%d].loadBalancingWeight", i), fmtU32(uint32(math.Ceil(v))),
						withNote(o, fmt.Sprintf("%s gets %d%% of the traffic from %s, split by endpoint weight", to, weight, d.From)))
				}
			}
		}
		for i := range mis {
			if la.Endpoints[i] != nil {
				la.Endpoints[i].LbEndpoints = nil
				st.set(fmt.Sprintf("loadAssignment.endpoints[%d].lbEndpoints", i), "removed",
					withNote(o, "locality not listed in distribute: its endpoints are removed"))
			}
		}
		break
	}
}

// applyLocalityFailover mirrors loadbalancer.go applyLocalityFailover.
func (st *clusterState) applyLocalityFailover(failover []*networking.LocalityLoadBalancerSetting_Failover) {
	// Priority 0 for the proxy's subzone, 1 its zone, 2 its region, 3 elsewhere, 4 for regions the
	// failover list rules out; multiplied by 5 to keep failoverPriority buckets, then compacted.
	la := st.c.LoadAssignment
	proxy := st.b.proxyLocality()
	prio := map[int][]int{}
	for i, ep := range la.Endpoints {
		p := lbPriority(proxy, ep.Locality)
		if p == 3 {
			for _, f := range failover {
				if f.From == proxy.GetRegion() {
					if ep.Locality == nil || ep.Locality.Region != f.To {
						p = 4
					}
					break
				}
			}
		}
		v := int(la.Endpoints[i].Priority*5) + p
		la.Endpoints[i].Priority = uint32(v)
		prio[v] = append(prio[v], i)
	}
	compactPriorities(la, prio)
}

// compactPriorities renumbers priorities 0..N without gaps.
func compactPriorities(la *endpointv3.ClusterLoadAssignment, prio map[int][]int) {
	ps := make([]int, 0, len(prio))
	for p := range prio {
		ps = append(ps, p)
	}
	sort.Ints(ps)
	for i, p := range ps {
		if i != p {
			for _, idx := range prio[p] {
				la.Endpoints[idx].Priority = uint32(i)
			}
		}
	}
}

func (st *clusterState) tracePriorities(o provenance.Origin) {
	for i, ep := range st.c.LoadAssignment.GetEndpoints() {
		st.set(fmt.Sprintf("loadAssignment.endpoints[%d].priority", i), fmtU32(ep.Priority), o)
	}
}

// wrappedLocality mirrors loadbalancer.WrappedLocalityLbEndpoints for a DNS default cluster: all
// the endpoints of the port, next to the first locality group only (as cluster.go builds it).
type wrappedLocality struct {
	endpoints []index.Endpoint
	lle       *endpointv3.LocalityLbEndpoints
}

// applyFailoverPriorities mirrors loadbalancer.go applyFailoverPriorities and
// applyFailoverPriorityPerLocality: endpoints are split by how many of the priority labels they
// share with the proxy, and the load assignment is replaced by the split groups.
func (st *clusterState) applyFailoverPriorities(priorities []string) {
	proxyLabels := st.b.in.Proxy.Labels
	w := st.dnsWrapped
	if len(proxyLabels) == 0 || w == nil || w.lle == nil {
		return
	}
	lowest := len(priorities)
	includesNetwork := lowest > 0 && priorities[0] == labelNetwork
	names := make([]string, len(priorities))
	overrides := map[string]string{}
	for i, p := range priorities {
		parts := strings.Split(p, "=")
		names[i] = parts[0]
		if len(parts) == 2 {
			overrides[parts[0]] = parts[1]
		}
	}
	prio := map[int][]int{}
	for i, ep := range w.endpoints {
		if i >= len(w.lle.LbEndpoints) {
			break
		}
		p, adjust := 0, 0
		for j, name := range names {
			want, ok := overrides[name]
			if !ok {
				want = proxyLabels[name]
			}
			if want != ep.Labels[name] {
				if j == 0 && includesNetwork {
					adjust = len(priorities)
					continue
				}
				p = lowest - j
				break
			}
		}
		p += adjust
		prio[p] = append(prio[p], i)
	}
	ps := make([]int, 0, len(prio))
	for p := range prio {
		ps = append(ps, p)
	}
	sort.Ints(ps)
	out := make([]*endpointv3.LocalityLbEndpoints, len(ps))
	for i, p := range ps {
		g := &endpointv3.LocalityLbEndpoints{Locality: w.lle.Locality, Proximity: w.lle.Proximity, Priority: uint32(p)}
		var weight uint32
		for _, idx := range prio[p] {
			g.LbEndpoints = append(g.LbEndpoints, w.lle.LbEndpoints[idx])
			weight += w.lle.LbEndpoints[idx].GetLoadBalancingWeight().GetValue()
		}
		g.LoadBalancingWeight = u32(weight)
		out[i] = g
	}
	// Renumber without gaps (applyFailoverPriorities).
	for i := range out {
		out[i].Priority = uint32(i)
	}
	st.c.LoadAssignment.Endpoints = out
}
