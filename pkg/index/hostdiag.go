package index

import (
	"fmt"
	"strings"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/strdist"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
)

// HostDiagnostics are the findings about svc itself for the rule selected for the proxy: D1 for
// DestinationRules that look meant for svc but whose host matches no service (`name.ns`,
// `name.ns.svc`, a short name resolved in another namespace, a near miss) with D33 for what
// Istio's validation rejects in them, D28 for a rule on an
// ExternalName alias, D18 for a DNS service port without endpoints (istiod drops its cluster)
// and D17 for subsets whose labels select no endpoint.
func (ix *Index) HostDiagnostics(p *Proxy, svc *Service, sel Selection) []explain.Diagnostic {
	if svc == nil {
		return nil
	}
	var out []explain.Diagnostic
	for _, d := range ix.unmatchedDRs() {
		if why, ok := typoOf(d, svc); ok {
			out = append(out, diag.HostMatchesNoService.New(
				fmt.Sprintf("%s host %q matches no service: %s, so it does not apply to %s", d.ref, d.obj.Spec.GetHost(), why, svc.Hostname),
				fmt.Sprintf("set spec.host of %s to %s", d.ref, svc.Hostname),
				d.ref))
			// D33: what Istio's validation rejects in the near miss, its host first of all.
			out = append(out, d.rejectedByValidation()...)
		}
	}
	if svc.Resolution == Alias {
		for _, d := range ix.drsByHost[svc.Hostname] {
			out = append(out, diag.RuleOnExternalNameAlias.New(
				fmt.Sprintf("%s is for %s, an ExternalName alias of %s: istiod builds no cluster for an alias, so the rule has no effect; traffic uses the clusters and DestinationRule of %s",
					d.ref, svc.Hostname, svc.ExternalName, svc.ExternalName),
				fmt.Sprintf("set spec.host of %s to %s", d.ref, svc.ExternalName),
				d.ref, svc.Ref))
		}
		diag.Sort(out, diag.KeepAll)
		return out
	}
	dns := svc.Resolution == DNSLB || svc.Resolution == DNSRoundRobinLB
	if dns {
		for _, port := range svc.Ports {
			if port.Protocol == protocolUDP || len(svc.Endpoints[port.Number]) > 0 {
				continue
			}
			why := "it has no endpoint for the port"
			fix := fmt.Sprintf("add spec.endpoints to %s, or a workloadSelector that selects workloads", svc.Ref)
			if svc.Selector != nil {
				why = fmt.Sprintf("its workloadSelector (%s) selects no pod or WorkloadEntry in namespace %s", formatLabels(svc.Selector), svc.Namespace)
				fix = fmt.Sprintf("change spec.workloadSelector of %s to labels of existing workloads, or remove it so the host itself is resolved", svc.Ref)
			}
			out = append(out, diag.DNSClusterDropped.New(
				fmt.Sprintf("%s is resolved by DNS and %s: istiod drops cluster outbound|%d||%s (a DNS cluster without endpoints is not sent)",
					svc.Ref, why, port.Number, svc.Hostname),
				fix,
				svc.Ref))
		}
	}
	if sel.Rule != nil && !svc.EndpointsUnknown {
		for i, s := range sel.Rule.Spec.GetSubsets() {
			if len(s.GetLabels()) == 0 {
				continue
			}
			var empty []string
			all := 0
			want := labelPairs(s.GetLabels())
			for _, port := range svc.Ports {
				if port.Protocol == protocolUDP {
					continue
				}
				all++
				found := false
				for _, ep := range svc.Endpoints[port.Number] {
					if want.matches(ep.Labels) {
						found = true
						break
					}
				}
				if !found {
					empty = append(empty, fmt.Sprint(port.Number))
				}
			}
			if len(empty) == 0 {
				continue
			}
			from := sel.Rule.Primary
			if i < len(sel.Rule.SubsetFrom) {
				from = sel.Rule.SubsetFrom[i]
			}
			where := "no endpoint of " + svc.Hostname
			if len(empty) < all {
				where += " on port " + strings.Join(empty, ",")
			}
			effect := "its clusters have no endpoints and requests routed to it fail with 503 UH"
			if dns {
				effect = "istiod does not generate its clusters at all (a DNS subset cluster is filtered by the subset labels)"
				if svc.Selector == nil && len(svc.Endpoints) > 0 && allUnlabelled(svc) {
					effect += "; the endpoints of a DNS ServiceEntry without endpoints or workloadSelector have no labels"
				}
			}
			out = append(out, diag.SubsetSelectsNothing.New(
				fmt.Sprintf("subset %q of %s (labels %s) selects %s: %s", s.GetName(), from, formatLabels(s.GetLabels()), where, effect),
				fmt.Sprintf("change the labels of subset %q in %s to labels the endpoints of %s have", s.GetName(), from, svc.Hostname),
				from))
		}
	}
	diag.Sort(out, diag.KeepAll)
	return out
}

func allUnlabelled(svc *Service) bool {
	for _, eps := range svc.Endpoints {
		for _, ep := range eps {
			if len(ep.Labels) > 0 {
				return false
			}
		}
	}
	return true
}

// unmatchedDRs are the DestinationRules whose host reaches no registry service, in the order of
// drs, computed on first use.
func (ix *Index) unmatchedDRs() []*drInfo {
	ix.unmatchedOnce.Do(func() {
		for _, d := range ix.drs {
			if !ix.hostHasService(d.host) {
				ix.unmatched = append(ix.unmatched, d)
			}
		}
	})
	return ix.unmatched
}

// hostHasService reports whether a DestinationRule host reaches any registry service: an exact
// hostname, or a wildcard covering one.
func (ix *Index) hostHasService(host string) bool {
	if _, ok := ix.groups[host]; ok {
		return true
	}
	if !meshhost.Name(host).IsWildCarded() {
		return false
	}
	for h := range ix.groups {
		if meshhost.Name(h).SubsetOf(meshhost.Name(host)) {
			return true
		}
	}
	return false
}

// typoOf says why a DestinationRule whose host matches nothing was probably meant for svc.
func typoOf(d *drInfo, svc *Service) (string, bool) {
	return MeantFor(d.obj.Spec.GetHost(), d.host, d.ns, svc.Hostname, svc.Name, svc.Namespace, svc.Kubernetes)
}

// MeantFor says why a DestinationRule of namespace ruleNS with host raw (as written; host is
// raw resolved in ruleNS, meshhost.ResolveShortname), were no service to hold it, was probably
// meant for the service svcHost (a Kubernetes Service named svcName in svcNS when kubernetes):
// a host with a dot taken literally, a short name expanded in the rule's own namespace, or a
// near miss. This is D1's test; `cluster` also uses it to get the Services such rules name
// before it answers, since it reads only the host's own Service of its namespace (pkg/plan
// Cluster).
func MeantFor(raw, host, ruleNS, svcHost, svcName, svcNS string, kubernetes bool) (string, bool) {
	if raw == "" || meshhost.Name(raw).IsWildCarded() {
		return "", false
	}
	if strings.Contains(raw, ".") && strings.HasPrefix(svcHost, host+".") {
		return "a host with a dot is taken literally (only a name without dots is expanded to <name>.<namespace>.svc." + DomainSuffix + ")", true
	}
	if !strings.Contains(raw, ".") && kubernetes && raw == svcName && ruleNS != svcNS {
		return fmt.Sprintf("a short name is expanded in the rule's own namespace, to %s", host), true
	}
	// Hosts whose lengths differ by more than the limit are further apart than it.
	if limit := 2; abs(len(host)-len(svcHost)) <= limit && strdist.Levenshtein(host, svcHost) <= limit {
		return "it differs from the service's host by a few characters", true
	}
	return "", false
}

// UnmatchedDestinationRules lists every DestinationRule whose host matches no Service or
// ServiceEntry (D1), whatever the queried host.
func (ix *Index) UnmatchedDestinationRules() []explain.Diagnostic {
	var out []explain.Diagnostic
	for _, d := range ix.unmatchedDRs() {
		if d.host == "" {
			continue
		}
		msg := fmt.Sprintf("%s host %q matches no service", d.ref, d.obj.Spec.GetHost())
		if d.obj.Spec.GetHost() != d.host {
			msg += fmt.Sprintf(" (a short name is expanded in the rule's own namespace, to %s)", d.host)
		}
		fix := fmt.Sprintf("set spec.host of %s to the full hostname of an existing Service or ServiceEntry", d.ref)
		if s := ix.suggestHosts(d.host, d.ns); strings.HasPrefix(s, "did you mean") {
			fix += " (" + s + ")"
		}
		out = append(out, diag.HostMatchesNoService.New(msg, fix, d.ref))
	}
	diag.Sort(out, diag.KeepAll)
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
