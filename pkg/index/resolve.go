package index

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/strdist"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
)

// ResolveHost turns the host a user typed into the registry services with that hostname, one per
// namespace that defines it (sorted by namespace). It accepts a short name (resolved in
// namespace, as kubectl would), `name.ns`, `name.ns.svc`, a full hostname, a ServiceEntry host
// including a wildcard one (as written, or in lower case), and a name that only a wildcard ServiceEntry host covers (the most
// specific one is returned, as istiod builds clusters only for the wildcard host). When nothing
// matches it returns an *explain.NotFoundError whose Hint names the nearest known hostnames.
func (ix *Index) ResolveHost(host, namespace string) ([]*Service, error) {
	// istiod compares hosts as written: a ServiceEntry host API.example.com is not
	// api.example.com. The host is looked up as typed first, then in lower case, as DNS reads
	// it and as every Kubernetes Service name is.
	// A host is tried exactly as given first: a ServiceEntry may hold a host istiod's
	// validation would reject, spaces and all, and it is still that entry's host.
	typed := strings.TrimSuffix(strings.TrimSpace(host), ".")
	h := strings.ToLower(typed)
	cands := append(append([]string{host}, meshhost.Candidates(typed, namespace)...), meshhost.Candidates(h, namespace)...)
	for _, cand := range cands {
		if byNs, ok := ix.groups[cand]; ok {
			return ix.groupServices(byNs), nil
		}
	}
	if !meshhost.Name(h).IsWildCarded() {
		best := ""
		for known := range ix.groups {
			if meshhost.Name(known).IsWildCarded() && meshhost.Name(h).SubsetOf(meshhost.Name(known)) && (best == "" || meshhost.MoreSpecific(meshhost.Name(known), meshhost.Name(best))) {
				best = known
			}
		}
		if best != "" {
			return ix.groupServices(ix.groups[best]), nil
		}
	}
	return nil, &explain.NotFoundError{
		What: fmt.Sprintf("host %q", host),
		Hint: ix.suggestHosts(h, namespace),
	}
}

// RuleMayApply reports whether a DestinationRule in ruleNamespace with spec.host ruleHost can be
// the rule, or part of the merged rule, of the service ResolveHost finds for host: its host,
// resolved in its namespace, is one of the hostnames host may stand for, or either is a
// wildcard (which this check does not try to match). A rule for which it is false reaches the
// explanation of host only through its lookup fields (host, exportTo, workloadSelector), in
// the diagnostics of rules that do not apply.
func RuleMayApply(host, namespace, ruleHost, ruleNamespace string) bool {
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	rh := strings.ToLower(meshhost.ResolveShortname(ruleHost, ruleNamespace))
	if meshhost.Name(h).IsWildCarded() || meshhost.Name(rh).IsWildCarded() {
		return true
	}
	return slices.Contains(meshhost.Candidates(h, namespace), rh)
}

func (ix *Index) groupServices(byNs map[string]*serviceGroup) []*Service {
	out := make([]*Service, 0, len(byNs))
	for _, ns := range sortedKeys(byNs) {
		out = append(out, byNs[ns].merged)
	}
	return out
}

// suggestHosts ranks known hostnames by how likely the user meant them: the same service name
// in another namespace, a hostname the input is a prefix or suffix of, then edit distance.
func (ix *Index) suggestHosts(h, namespace string) string {
	cands := meshhost.Candidates(h, namespace)
	full := cands[len(cands)-1]
	first, _, _ := strings.Cut(h, ".")
	type scored struct {
		host  string
		score int
	}
	var all []scored
	for known := range ix.groups {
		score := -1
		knownFirst, _, _ := strings.Cut(known, ".")
		switch {
		case strings.HasPrefix(known, h+"."):
			score = 0
		case !meshhost.Name(known).IsWildCarded() && knownFirst == first:
			score = 1
		case strings.HasSuffix(known, "."+h) || (meshhost.Name(known).IsWildCarded() && strings.HasSuffix(h, known[1:])):
			score = 2
		default:
			d := min(strdist.Levenshtein(full, known), strdist.Levenshtein(h, known))
			if limit := max(2, len(known)/10); d <= limit {
				score = 3 + d
			}
		}
		if score >= 0 {
			all = append(all, scored{known, score})
		}
	}
	if len(all) == 0 {
		return fmt.Sprintf("no Service or ServiceEntry has a similar host; a short name is looked up in namespace %s", orDefault(namespace))
	}
	slices.SortFunc(all, func(a, b scored) int { return cmp.Or(cmp.Compare(a.score, b.score), strings.Compare(a.host, b.host)) })
	if len(all) > 3 {
		all = all[:3]
	}
	names := make([]string, 0, len(all))
	for _, s := range all {
		names = append(names, s.host)
	}
	if len(names) == 1 {
		return "did you mean " + names[0] + "?"
	}
	return "did you mean one of " + strings.Join(names, ", ") + "?"
}

func orDefault(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}
