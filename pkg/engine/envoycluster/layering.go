package envoycluster

import (
	"fmt"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// block is one of the TrafficPolicy blocks istiod layers as a whole.
type block int

const (
	bConnectionPool block = iota
	bOutlierDetection
	bLoadBalancer
	bTLS
	bTunnel
	bProxyProtocol
	bRetryBudget
	numBlocks
)

var blockNames = [numBlocks]string{"connectionPool", "outlierDetection", "loadBalancer", "tls", "tunnel", "proxyProtocol", "retryBudget"}

func (k block) String() string { return blockNames[k] }

// portBlocks are the blocks a portLevelSettings entry has (util.go shadowCopyPortTrafficPolicy).
var portBlocks = []block{bConnectionPool, bLoadBalancer, bOutlierDetection, bTLS}

// get returns block k of p, or nil.
func get(p *networking.TrafficPolicy, k block) any {
	if p == nil {
		return nil
	}
	var v any
	switch k {
	case bConnectionPool:
		if p.ConnectionPool != nil {
			v = p.ConnectionPool
		}
	case bOutlierDetection:
		if p.OutlierDetection != nil {
			v = p.OutlierDetection
		}
	case bLoadBalancer:
		if p.LoadBalancer != nil {
			v = p.LoadBalancer
		}
	case bTLS:
		if p.Tls != nil {
			v = p.Tls
		}
	case bTunnel:
		if p.Tunnel != nil {
			v = p.Tunnel
		}
	case bProxyProtocol:
		if p.ProxyProtocol != nil {
			v = p.ProxyProtocol
		}
	case bRetryBudget:
		if p.RetryBudget != nil {
			v = p.RetryBudget
		}
	}
	return v
}

// put sets block k of p to v (nil clears it).
func put(p *networking.TrafficPolicy, k block, v any) {
	switch k {
	case bConnectionPool:
		p.ConnectionPool, _ = v.(*networking.ConnectionPoolSettings)
	case bOutlierDetection:
		p.OutlierDetection, _ = v.(*networking.OutlierDetection)
	case bLoadBalancer:
		p.LoadBalancer, _ = v.(*networking.LoadBalancerSettings)
	case bTLS:
		p.Tls, _ = v.(*networking.ClientTLSSettings)
	case bTunnel:
		p.Tunnel, _ = v.(*networking.TrafficPolicy_TunnelSettings)
	case bProxyProtocol:
		p.ProxyProtocol, _ = v.(*networking.TrafficPolicy_ProxyProtocol)
	case bRetryBudget:
		p.RetryBudget, _ = v.(*networking.TrafficPolicy_RetryBudget)
	}
}

// shallowCopy mirrors model.ShallowCopyTrafficPolicy: the seven blocks, without portLevelSettings.
func shallowCopy(p *networking.TrafficPolicy) *networking.TrafficPolicy {
	if p == nil {
		return nil
	}
	out := &networking.TrafficPolicy{}
	for k := range numBlocks {
		put(out, k, get(p, k))
	}
	return out
}

// dropped is a block that some layer had but the effective policy does not use.
type dropped struct {
	block block
	value any
	src   source
	// reason is the Shadow reason: "dropped: …" or "overridden: …".
	reason string
}

// effective is the TrafficPolicy istiod hands to applyTrafficPolicy for one cluster, with the
// layer each block came from and the blocks that lost on the way.
type effective struct {
	policy  *networking.TrafficPolicy
	src     [numBlocks]source
	dropped []dropped
	// portEntry is the DestinationRule portLevelSettings entry used for this port, if any.
	portEntry bool
	// subsetPortEntry is the subset portLevelSettings entry used for this port, if any.
	subsetPortEntry bool
}

// firstPortEntry mirrors util.GetPortLevelTrafficPolicy's lookup: entries match on port.number
// only, and the first match wins.
func firstPortEntry(p *networking.TrafficPolicy, port uint32) *networking.TrafficPolicy_PortTrafficPolicy {
	for _, e := range p.GetPortLevelSettings() {
		if e.GetPort() != nil && e.GetPort().GetNumber() == port {
			return e
		}
	}
	return nil
}

// portPolicy mirrors util.go shadowCopyPortTrafficPolicy: a new policy holding only the entry's
// four blocks. Everything else of the enclosing policy is not inherited.
func portPolicy(e *networking.TrafficPolicy_PortTrafficPolicy) *networking.TrafficPolicy {
	return &networking.TrafficPolicy{
		ConnectionPool:   e.ConnectionPool,
		LoadBalancer:     e.LoadBalancer,
		OutlierDetection: e.OutlierDetection,
		Tls:              e.Tls,
	}
}

// trafficPolicyRef is the DestinationRule whose top-level trafficPolicy the merged rule uses.
func (b *builder) trafficPolicyRef() *provenance.Ref {
	r := b.in.Rule
	if r == nil {
		return nil
	}
	if r.TrafficPolicyFrom != nil {
		ref := *r.TrafficPolicyFrom
		return &ref
	}
	ref := r.Primary
	return &ref
}

// subsetRef is the DestinationRule that defined subset i of the merged rule.
func (b *builder) subsetRef(i int) *provenance.Ref {
	r := b.in.Rule
	if i < len(r.SubsetFrom) && !r.SubsetFrom[i].IsZero() {
		ref := r.SubsetFrom[i]
		return &ref
	}
	ref := r.Primary
	return &ref
}

func (b *builder) meshSource() source {
	s := source{layer: provenance.LayerMeshDefaultTrafficPolicy, prefix: "defaultTrafficPolicy", mesh: true}
	if snap := b.in.Snapshot; snap != nil && snap.MeshConfigSource != nil {
		r := *snap.MeshConfigSource
		s.ref = &r
	}
	return s
}

// resolveDefault computes the policy of the default cluster `outbound|<port>||<host>`, exactly as
// cluster_builder.go applyDestinationRule does: DR top level (P0), resolved for the port by
// util.GetPortLevelTrafficPolicy (P1), overlaid on the MeshConfig baseline by
// cluster_traffic_policy.go applyDefaultTrafficPolicy (P2).
func (b *builder) resolveDefault(d *diagnostics) *effective {
	e := &effective{}
	port := b.in.Port.Number
	var top *networking.TrafficPolicy
	if b.in.Rule != nil && b.in.Rule.Spec != nil {
		top = b.in.Rule.Spec.TrafficPolicy
	}
	topSrc := source{layer: provenance.LayerDestinationRule, ref: b.trafficPolicyRef(), prefix: "spec.trafficPolicy"}
	if top != nil {
		e.policy = top
		for k := range numBlocks {
			if get(top, k) != nil {
				e.src[k] = topSrc
			}
		}
		if entry := firstPortEntry(top, port); entry != nil {
			// Port-level settings replace the whole top-level policy for this port: blocks the
			// entry omits fall back to defaults, and retryBudget/proxyProtocol/tunnel (which have
			// no port-level form) are dropped. util.go GetPortLevelTrafficPolicy.
			e.portEntry = true
			pSrc := source{layer: provenance.LayerPortLevel, ref: topSrc.ref,
				prefix: fmt.Sprintf("spec.trafficPolicy.portLevelSettings[port=%d]", port)}
			np := portPolicy(entry)
			var lost []block
			for k := range numBlocks {
				if v := get(top, k); v != nil && k != bTunnel {
					e.dropped = append(e.dropped, dropped{block: k, value: v, src: topSrc,
						reason: fmt.Sprintf("dropped: portLevelSettings[port=%d] replaces the whole top-level policy for this port", port)})
					if get(np, k) == nil {
						lost = append(lost, k)
					}
				}
			}
			e.policy = np
			e.src = [numBlocks]source{}
			for _, k := range portBlocks {
				if get(np, k) != nil {
					e.src[k] = pSrc
				}
			}
			if len(lost) > 0 {
				b.diagPortDrops(d, lost, topSrc, pSrc, np, "the top-level policy")
			}
		}
	}

	// applyDefaultTrafficPolicy: block-level overlay of the MeshConfig baseline.
	mdtp := b.mesh.GetDefaultTrafficPolicy()
	mSrc := b.meshSource()
	for _, k := range []block{bConnectionPool, bOutlierDetection} {
		var mv any
		if k == bConnectionPool && mdtp.GetConnectionPool() != nil {
			mv = mdtp.GetConnectionPool()
		}
		if k == bOutlierDetection && mdtp.GetOutlierDetection() != nil {
			mv = mdtp.GetOutlierDetection()
		}
		if mv == nil {
			continue
		}
		if get(e.policy, k) == nil {
			if e.policy == nil {
				e.policy = &networking.TrafficPolicy{}
			} else if e.policy == top {
				e.policy = shallowCopy(top)
			}
			put(e.policy, k, mv)
			e.src[k] = mSrc
			continue
		}
		winner := e.src[k]
		e.dropped = append(e.dropped, dropped{block: k, value: mv, src: mSrc,
			reason: fmt.Sprintf("dropped: %s sets %s, which replaces the MeshConfig defaultTrafficPolicy.%s block whole (fields are not merged)", winner.title(), k, k)})
		d.add(diag.MeshBaselineShadowed.New(
			fmt.Sprintf("%s sets %s for port %d, which replaces the whole MeshConfig defaultTrafficPolicy.%s (fields are not merged)", winner.title(), k, port, k),
			fmt.Sprintf("repeat the MeshConfig defaultTrafficPolicy.%s fields you want to keep in the DestinationRule block", k),
			refsOf(winner.ref)...))
	}
	return e
}

// resolveSubset computes the policy of subset cluster i: util.MergeSubsetTrafficPolicy over the
// default cluster's policy, block by block (model.MergeTrafficPolicy), with the subset's own
// portLevelSettings replacing the four port blocks wholesale. The mesh baseline is not
// re-applied here.
func (b *builder) resolveSubset(def *effective, i int, d *diagnostics) *effective {
	ss := b.in.Rule.Spec.Subsets[i]
	port := b.in.Port.Number
	e := &effective{policy: def.policy, src: def.src, portEntry: def.portEntry}
	e.dropped = append(e.dropped, def.dropped...)
	sp := ss.GetTrafficPolicy()
	if sp == nil {
		return e
	}
	ref := b.subsetRef(i)
	sSrc := source{layer: provenance.LayerSubset, ref: ref, prefix: fmt.Sprintf("spec.subsets[name=%s].trafficPolicy", ss.Name)}
	subPolicy := sp
	var subSrc [numBlocks]source
	for k := range numBlocks {
		if get(sp, k) != nil {
			subSrc[k] = sSrc
		}
	}
	hasPort := false
	if entry := firstPortEntry(sp, port); entry != nil {
		hasPort = true
		e.subsetPortEntry = true
		pSrc := source{layer: provenance.LayerSubsetPortLevel, ref: ref,
			prefix: fmt.Sprintf("spec.subsets[name=%s].trafficPolicy.portLevelSettings[port=%d]", ss.Name, port)}
		subPolicy = portPolicy(entry)
		subSrc = [numBlocks]source{}
		var lost []block
		for k := range numBlocks {
			if v := get(sp, k); v != nil && k != bTunnel {
				e.dropped = append(e.dropped, dropped{block: k, value: v, src: sSrc,
					reason: fmt.Sprintf("dropped: subsets[name=%s].trafficPolicy.portLevelSettings[port=%d] replaces the subset's top-level policy for this port", ss.Name, port)})
				if get(subPolicy, k) == nil {
					lost = append(lost, k)
				}
			}
		}
		for _, k := range portBlocks {
			if get(subPolicy, k) != nil {
				subSrc[k] = pSrc
			}
		}
		if len(lost) > 0 {
			b.diagPortDrops(d, lost, sSrc, pSrc, subPolicy, "the subset's top-level policy")
		}
		// The mesh baseline is not re-applied to a subset port-level entry
		// (docs/semantics/cluster.md#subsets; no Istio test pins it).
		mdtp := b.mesh.GetDefaultTrafficPolicy()
		for _, k := range []block{bConnectionPool, bOutlierDetection} {
			meshHas := (k == bConnectionPool && mdtp.GetConnectionPool() != nil) || (k == bOutlierDetection && mdtp.GetOutlierDetection() != nil)
			if meshHas && get(subPolicy, k) == nil {
				d.add(diag.MeshBaselineLostAtSubsetPort.New(
					fmt.Sprintf("%s has no %s, so subset %s on port %d gets no MeshConfig defaultTrafficPolicy.%s (istiod does not re-apply the mesh baseline at subset port level)", pSrc.title(), k, ss.Name, port, k),
					fmt.Sprintf("set %s in the subset's portLevelSettings entry", k),
					refsOf(ref)...))
			}
		}
	}
	if def.policy == nil {
		e.policy = subPolicy
		e.src = subSrc
		return e
	}
	merged := shallowCopy(def.policy)
	for k := range numBlocks {
		replace := get(subPolicy, k) != nil
		if hasPort && (k == bConnectionPool || k == bOutlierDetection || k == bLoadBalancer || k == bTLS) {
			replace = true
		}
		if !replace {
			continue
		}
		if old := get(merged, k); old != nil && k != bTunnel {
			reason := fmt.Sprintf("overridden: %s sets %s, which replaces the inherited block whole", subSrc[k].title(), k)
			if get(subPolicy, k) == nil {
				reason = fmt.Sprintf("dropped: subsets[name=%s].trafficPolicy.portLevelSettings[port=%d] has no %s, which unsets the inherited block", ss.Name, port, k)
			}
			e.dropped = append(e.dropped, dropped{block: k, value: old, src: e.src[k], reason: reason})
		}
		put(merged, k, get(subPolicy, k))
		e.src[k] = subSrc[k]
	}
	e.policy = merged
	return e
}

// diagPortDrops reports D14: a portLevelSettings entry drops blocks of the enclosing policy.
func (b *builder) diagPortDrops(d *diagnostics, lost []block, from, entry source, np *networking.TrafficPolicy, what string) {
	mdtp := b.mesh.GetDefaultTrafficPolicy()
	var parts []string
	for _, k := range lost {
		repl := "nothing"
		switch k {
		case bConnectionPool:
			repl = "Istio's built-in limits"
			if mdtp.GetConnectionPool() != nil && entry.layer == provenance.LayerPortLevel {
				repl = "MeshConfig defaultTrafficPolicy.connectionPool"
			}
		case bOutlierDetection:
			repl = "no outlier detection"
			if mdtp.GetOutlierDetection() != nil && entry.layer == provenance.LayerPortLevel {
				repl = "MeshConfig defaultTrafficPolicy.outlierDetection"
			}
		case bLoadBalancer:
			repl = "Istio's default LEAST_REQUEST"
		case bTLS:
			repl = "auto-mTLS or plaintext"
		}
		parts = append(parts, fmt.Sprintf("%s (now %s)", k, repl))
	}
	d.add(diag.PortLevelDropsBlocks.New(
		fmt.Sprintf("%s replaces %s for port %d and drops %s", entry.title(), what, b.in.Port.Number, strings.Join(parts, ", ")),
		fmt.Sprintf("repeat the blocks you want to keep inside %s: port-level settings never inherit", entry.prefix),
		refsOf(from.ref)...))
}

func refsOf(r *provenance.Ref) []provenance.Ref {
	if r == nil {
		return nil
	}
	return []provenance.Ref{*r}
}
