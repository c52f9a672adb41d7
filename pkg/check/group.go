package check

import (
	"errors"
	"slices"
	"strings"
	"sync"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/parallel"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// The default sidecars of most namespaces see most hosts alike. The answer for a host from a
// namespace's default sidecar (`cluster HOST -n NS`: the index's scope, DestinationRule
// lookup and routes, the cluster builds) reads of the client namespace only what that
// namespace holds or is named by: its Sidecar (or the root namespace's default one), its
// EnvoyFilters, its ServiceEntries, the DestinationRules and VirtualServices it holds for the
// host (the first step of the DestinationRule lookup, the routes it sees), whether it is the
// host's own namespace or the root namespace, and the exportTo lists that name it. A namespace
// that holds none of these for a host, and is named by no exportTo anywhere, sees every object
// that can reach the host's answer exactly as every other such namespace does: an object
// exported to "*" it sees, one exported to "." or to other names it does not. The default
// sidecars of those namespaces get one answer for the host, made once (groupPlan) instead of
// once per namespace; with N namespaces and H hosts the answers go from N·H to a few per host.
//
// The answer taken must not name the namespace it was made for: it is shared only when none of
// its diagnostics names that namespace (as a word of its message or fix, or as the namespace
// of a resource), so no wording of a client's own namespace is handed to another.
// TestRunEqualsUnionOnBenchMesh compares the result with every client's own answer, and
// TestGroupsShareAnswers that the bench mesh shares answers at all.

// groupPlan holds the facts that tell, for a namespace default and a host, whether the
// namespace sees the host as every other plain namespace does, and the answers shared.
type groupPlan struct {
	// apart are the namespaces never grouped: with a Sidecar, an EnvoyFilter or a
	// ServiceEntry, named by an exportTo, or the root namespace.
	apart map[string]bool
	// rules are, by namespace, the spec.host of its DestinationRules and the hosts and
	// destination hosts of its VirtualServices.
	rules ruleHosts
	// hostNamespaces are the namespaces of the services of each hostname.
	hostNamespaces map[string][]string

	mu sync.Mutex
	// answers are the shared answers by host; a host whose answer named its namespace maps
	// to an answer with shared false.
	answers map[string]groupAnswer
	// made counts the answers made for groups, taken the answers taken from them.
	made, taken int

	// Set by prepare, for the hosts the classes are explained for, by their place:
	// plainIn marks, for each namespace default's class, the hosts it sees as every plain
	// namespace does (plain). The classes of listing are those whose proxy diagnostics do not
	// name the proxy's labels; for each host, sharers are the names of those that see it
	// plainly, and leader the first of them in class order, which lists their shared answer
	// once for all of them (the finding's occurrences, clients and first place are the same as
	// if each listed it).
	plainIn map[*Class][]bool
	listing map[*Class]bool
	leader  []*Class
	sharers [][]string
}

type groupAnswer struct {
	a      hostAnswer
	shared bool
}

// planGroups gathers the facts of snap; nil when no namespace can be grouped (a Sidecar in
// the root namespace applies to every namespace without its own, and its egress hosts may be
// relative to the client's namespace).
func planGroups(snap *model.Snapshot, ix *index.Index) *groupPlan {
	root := snap.RootNamespace()
	p := &groupPlan{apart: map[string]bool{root: true}, rules: newRuleHosts(),
		hostNamespaces: map[string][]string{}, answers: map[string]groupAnswer{}}
	for _, s := range ix.Services() {
		p.hostNamespaces[s.Hostname] = append(p.hostNamespaces[s.Hostname], s.Namespace)
	}
	named := func(list []string) {
		for _, e := range list {
			if e = strings.TrimSpace(e); e != "" && e != "." && e != "*" && e != "~" {
				p.apart[e] = true
			}
		}
	}
	for _, sc := range snap.Sidecars {
		if sc.Namespace == root {
			return nil
		}
		p.apart[sc.Namespace] = true
	}
	for _, ef := range snap.EnvoyFilters {
		p.apart[ef.Namespace] = true
	}
	for _, se := range snap.ServiceEntries {
		p.apart[se.Namespace] = true
		named(se.Spec.GetExportTo())
	}
	for _, s := range snap.Services {
		if v, ok := s.Annotations["networking.istio.io/exportTo"]; ok {
			named(strings.Split(v, ","))
		}
	}
	if m := snap.MeshConfig; m != nil {
		named(m.GetDefaultServiceExportTo())
		named(m.GetDefaultDestinationRuleExportTo())
		named(m.GetDefaultVirtualServiceExportTo())
	}
	for _, dr := range snap.DestinationRules {
		named(dr.Spec.GetExportTo())
		p.rules.add(dr.Namespace, dr.Spec.GetHost())
	}
	for _, vs := range snap.VirtualServices {
		named(vs.Spec.GetExportTo())
		hosts, ok := virtualServiceHosts(&vs.Spec)
		if !ok {
			p.apart[vs.Namespace] = true
			continue
		}
		for _, h := range hosts {
			p.rules.add(vs.Namespace, h)
		}
	}
	return p
}

// ruleHosts are the hosts of rules by namespace, each resolved in its namespace once, so that
// mayApply is index.RuleMayApply for every rule of a namespace at once.
type ruleHosts struct {
	// exact are the resolved hosts; wildcard holds the namespaces with a wildcard among
	// them, which may be for any host.
	exact    map[string]map[string]bool
	wildcard map[string]bool
}

func newRuleHosts() ruleHosts {
	return ruleHosts{exact: map[string]map[string]bool{}, wildcard: map[string]bool{}}
}

// add notes that a rule of namespace ns is for host h.
func (r ruleHosts) add(ns, h string) {
	rh := strings.ToLower(meshhost.ResolveShortname(h, ns))
	if meshhost.Name(rh).IsWildCarded() {
		r.wildcard[ns] = true
		return
	}
	if r.exact[ns] == nil {
		r.exact[ns] = map[string]bool{}
	}
	r.exact[ns][rh] = true
}

// any reports whether ns has a rule.
func (r ruleHosts) any(ns string) bool { return r.wildcard[ns] || len(r.exact[ns]) > 0 }

// mayApply reports whether a rule of ns can be for host (index.RuleMayApply).
func (r ruleHosts) mayApply(host, ns string) bool {
	if r.wildcard[ns] {
		return true
	}
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	if meshhost.Name(h).IsWildCarded() {
		return true
	}
	return slices.ContainsFunc(meshhost.Candidates(h, ns), func(c string) bool { return r.exact[ns][c] })
}

// virtualServiceHosts are the hosts a VirtualService is for and routes or mirrors to; false
// when it delegates (the delegate's routes are another object's).
func virtualServiceHosts(vs *networking.VirtualService) ([]string, bool) {
	out := append([]string(nil), vs.GetHosts()...)
	dest := func(d *networking.Destination) {
		if d != nil {
			out = append(out, d.GetHost())
		}
	}
	for _, h := range vs.GetHttp() {
		if h.GetDelegate() != nil {
			return nil, false
		}
		for _, r := range h.GetRoute() {
			dest(r.GetDestination())
		}
		dest(h.GetMirror())
		for _, m := range h.GetMirrors() {
			dest(m.GetDestination())
		}
	}
	for _, t := range vs.GetTcp() {
		for _, r := range t.GetRoute() {
			dest(r.GetDestination())
		}
	}
	for _, t := range vs.GetTls() {
		for _, r := range t.GetRoute() {
			dest(r.GetDestination())
		}
	}
	return out, true
}

// plain reports whether the default sidecar of c's namespace sees host as every other plain
// namespace does: c is a namespace default, its namespace is not set apart, holds no service
// of the host, and holds no DestinationRule or VirtualService that can be for the host.
func (p *groupPlan) plain(c *Class, host string) bool {
	if p == nil || c.Key != "" || c.Members[0].Ref.Kind != "Namespace" {
		return false
	}
	ns := c.Namespace
	if p.apart[ns] || slices.Contains(p.hostNamespaces[host], ns) {
		return false
	}
	return !p.rules.mayApply(host, ns)
}

// prepare finds, for hosts, which namespace defaults of classes see each plainly, and which
// class lists each host's shared answer for them.
func (p *groupPlan) prepare(ix *index.Index, classes []*Class, hosts []string) error {
	if p == nil {
		return nil
	}
	var defaults []*Class
	for _, c := range classes {
		if c.Key == "" && c.Members[0].Ref.Kind == "Namespace" {
			defaults = append(defaults, c)
		}
	}
	in := make([][]bool, len(defaults))
	lists := make([]bool, len(defaults))
	errs := make([]error, len(defaults))
	parallel.Each(len(defaults), func(k int) {
		c := defaults[k]
		in[k] = make([]bool, len(hosts))
		for i, h := range hosts {
			in[k][i] = p.plain(c, h)
		}
		proxy, err := c.proxy(ix)
		if err != nil {
			errs[k] = err
			return
		}
		lists[k] = !slices.ContainsFunc(envoycluster.NewExplainer(ix, proxy).ProxyDiagnostics(), namesLabels(proxy.Labels))
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	p.plainIn, p.listing = map[*Class][]bool{}, map[*Class]bool{}
	p.leader, p.sharers = make([]*Class, len(hosts)), make([][]string, len(hosts))
	for k, c := range defaults {
		p.plainIn[c] = in[k]
		if !lists[k] {
			continue
		}
		p.listing[c] = true
		names := c.names()
		for i := range hosts {
			if in[k][i] {
				if p.leader[i] == nil {
					p.leader[i] = c
				}
				p.sharers[i] = append(p.sharers[i], names...)
			}
		}
	}
	return nil
}

// plainAt is plain for the host at i of the hosts of prepare.
func (p *groupPlan) plainAt(c *Class, i int) bool {
	return p != nil && p.plainIn[c] != nil && p.plainIn[c][i]
}

// lists reports whether c's shared answers are listed by the leader of each host.
func (p *groupPlan) lists(c *Class) bool { return p != nil && p.listing[c] }

// leads reports whether c lists the shared answer of the host at i for every class of sharers.
func (p *groupPlan) leads(c *Class, i int) bool { return p.leader[i] == c }

// answer returns the shared answer for host, if one was made.
func (p *groupPlan) answer(host string) (hostAnswer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g, ok := p.answers[host]
	if ok && g.shared {
		p.taken++
		return g.a, true
	}
	return hostAnswer{}, false
}

// record keeps the answer a plain namespace got for host, to be shared unless it names that
// namespace, and reports whether the answer kept for host (this one, or one recorded before it)
// is shared: if so a is that answer (every plain namespace sees the host alike).
func (p *groupPlan) record(ns, host string, a hostAnswer) bool {
	shared := true
	for _, d := range a.diags {
		if namesNamespace(d, ns) {
			shared = false
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	g, ok := p.answers[host]
	if !ok {
		g = groupAnswer{a: a, shared: shared}
		p.answers[host] = g
		p.made++
	}
	return g.shared
}

// namesNamespace reports whether d names ns: a resource of ns, or ns as a word of the message
// or the fix (between characters a namespace name cannot hold, so also within a hostname).
func namesNamespace(d explain.Diagnostic, ns string) bool {
	for _, r := range d.Resources {
		if r.Namespace == ns {
			return true
		}
	}
	return hasWord(d.Message, ns) || hasWord(d.Fix, ns)
}

func hasWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(w)
		if (start == 0 || !nameChar(s[start-1])) && (end == len(s) || !nameChar(s[end])) {
			return true
		}
		i = start + 1
	}
}

// nameChar is a character of a namespace name (an RFC 1123 label).
func nameChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-'
}
