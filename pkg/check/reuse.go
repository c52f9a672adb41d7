package check

import (
	"slices"
	"sync"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// A namespace's pods that a workloadSelector DestinationRule sets apart get a class of their
// own (labelKeys), but such a rule changes their answer only for the hosts it can be for, and
// only when it selects them and not the namespace default (or the other way round): the
// proxy's labels reach the answer of a host only through the DestinationRule lookup of the
// client namespace (index pick and whyNot: the workloadSelector rules for the host there), the
// Sidecar that selects the proxy, and the EnvoyFilters that select it. In a namespace with no
// Sidecar and no EnvoyFilter selecting by labels (and no root EnvoyFilter that does), a pod's
// answer for a host is the namespace default's, whose class is explained first, unless a
// workloadSelector DestinationRule of the namespace that can be for the host
// (index.RuleMayApply) selects the pod: the pod's class takes the default's answer instead of
// building the host's clusters again. Where that answer prints the proxy's labels (the
// selection diagnostics of the rules that select neither, namesLabels), the class takes it in
// its own words (relabel). With N namespaces, P pods set apart and H hosts, the hosts
// explained go from (N+P)·H to N·H plus, for each pod, the hosts of the rules that select it.
// TestRunEqualsUnionOnBenchMesh, TestReuseFindsTheSame and the scenario tests compare the
// result with every client's own answer.

// hostAnswer is what a class's answer for a host holds, but the proxy's own diagnostics.
type hostAnswer struct {
	// inScope is false when the host is outside the proxy's scope.
	inScope bool
	subject provenance.Ref
	diags   []explain.Diagnostic
	// keys are the causes of diags (causeOf), made once for every class that takes the answer.
	keys []cause
	// names marks an answer that prints the labels of the proxy it was made for (namesLabels).
	names bool
}

// only is the answer with only the diagnostics keep keeps.
func (a hostAnswer) only(keep func(explain.Diagnostic) bool) hostAnswer {
	out := hostAnswer{inScope: a.inScope, subject: a.subject, names: a.names}
	for i, d := range a.diags {
		if keep(d) {
			out.diags = append(out.diags, d)
			out.keys = append(out.keys, a.keys[i])
		}
	}
	return out
}

// reusePlan says which classes take the answers of their namespace default's class.
type reusePlan struct {
	// base maps a class to the class of its namespace's default sidecar, whose answers it
	// takes where it can.
	base map[*Class]*Class
	// answers are the answers of each base class, by the place of their host in hosts (nil:
	// none kept), written while the base class is explained and read only after.
	answers map[*Class][]*hostAnswer
	// selectorHosts are the spec.host of the workloadSelector DestinationRules of each
	// namespace; selectorRules the rules themselves.
	selectorHosts ruleHosts
	selectorRules map[string][]selectorRule
	// hosts are the hosts every class is explained for, in order (set by prepare).
	hosts []string
	// mu guards selected: by namespace, whether a workloadSelector DestinationRule of the
	// namespace can be for each host of hosts, found once for the classes of the namespace.
	mu       sync.Mutex
	selected map[string][]bool
}

// planReuse finds the classes that can take their namespace default's answers.
func planReuse(snap *model.Snapshot, classes []*Class) *reusePlan {
	p := &reusePlan{base: map[*Class]*Class{}, answers: map[*Class][]*hostAnswer{}, selectorHosts: newRuleHosts(),
		selectorRules: map[string][]selectorRule{}}
	root := snap.RootNamespace()
	blocked := map[string]bool{}
	for _, sc := range snap.Sidecars {
		if sc.Spec.GetWorkloadSelector() != nil {
			blocked[sc.Namespace] = true
		}
	}
	for _, ef := range snap.EnvoyFilters {
		if ef.Spec.GetWorkloadSelector() != nil {
			if ef.Namespace == root {
				return p
			}
			blocked[ef.Namespace] = true
		}
	}
	for _, dr := range snap.DestinationRules {
		if dr.Spec.GetWorkloadSelector() != nil {
			p.selectorHosts.add(dr.Namespace, dr.Spec.GetHost())
			p.selectorRules[dr.Namespace] = append(p.selectorRules[dr.Namespace],
				selectorRule{host: dr.Spec.GetHost(), selector: dr.Spec.GetWorkloadSelector().GetMatchLabels()})
		}
	}
	defaults := map[string]*Class{}
	for _, c := range classes {
		if c.Key == "" && c.Members[0].Ref.Kind == "Namespace" {
			defaults[c.Namespace] = c
		}
	}
	for _, c := range classes {
		b := defaults[c.Namespace]
		if c.Key == "" || c.Router || b == nil || blocked[c.Namespace] || c.Namespace == root {
			continue
		}
		p.base[c] = b
		p.answers[b] = nil
	}
	return p
}

// prepare sets the hosts the classes are explained for, before any is.
func (p *reusePlan) prepare(hosts []string) {
	if p == nil {
		return
	}
	p.hosts = hosts
	for b := range p.answers {
		p.answers[b] = make([]*hostAnswer, len(hosts))
	}
}

// records reports whether c's answers are kept for other classes.
func (p *reusePlan) records(c *Class) bool {
	if p == nil {
		return false
	}
	_, ok := p.answers[c]
	return ok
}

// record keeps c's answer for the host at i of hosts, noting whether it names the proxy's
// labels (named, namesLabels): a proxy with other labels takes it in its own words.
func (p *reusePlan) record(c *Class, named func(explain.Diagnostic) bool, i int, a hostAnswer) {
	a.names = slices.ContainsFunc(a.diags, named)
	p.answers[c][i] = &a
}

// folds reports whether c's answers taken from its base class are the base's answers in
// full: the base lists its namespace (`Namespace NS`, which stands for every sidecar of the
// namespace that gets its answer) and its proxy diagnostics are c's (proxyKeys).
func (p *reusePlan) folds(ix *index.Index, c *Class, proxyKeys []cause) (bool, error) {
	if p == nil || p.base[c] == nil {
		return false, nil
	}
	b := p.base[c]
	if b.Members[0].Ref.Kind != "Namespace" {
		return false, nil
	}
	proxy, err := b.proxy(ix)
	if err != nil {
		return false, err
	}
	return slices.Equal(keysOf(envoycluster.NewExplainer(ix, proxy).ProxyDiagnostics()), proxyKeys), nil
}

// selectorRule is a workloadSelector DestinationRule: its spec.host and the labels it selects.
type selectorRule struct {
	host     string
	selector map[string]string
}

// taking is what a class can take of its base class's answers.
type taking struct {
	answers []*hostAnswer
	// own marks the hosts the class answers itself: a workloadSelector DestinationRule of its
	// namespace that can be for the host selects the class's proxy but not the base's, or the
	// other way round (nil: none).
	own []bool
	// relabel rewrites the labels of the base's proxy as the class's, in the answers that
	// print them.
	relabel relabeler
}

// taking returns what c, whose proxy has labels, can take of its base class's answers; nil
// when it takes none.
func (p *reusePlan) taking(c *Class, labels map[string]string) *taking {
	if p == nil || p.base[c] == nil {
		return nil
	}
	b := p.base[c]
	return &taking{answers: p.answers[b], own: p.ownHosts(c.Namespace, b.Members[0].Labels, labels),
		relabel: newRelabeler(b.Members[0].Labels, labels)}
}

// answer returns the base class's answer for the host at i of hosts, in the class's words,
// when the class can take it, else nil.
func (t *taking) answer(i int) *hostAnswer {
	if t == nil || t.own != nil && t.own[i] || t.answers[i] == nil {
		return nil
	}
	a := t.answers[i]
	if !a.names {
		return a
	}
	diags, changed := t.relabel.apply(a.diags)
	if !changed {
		return a
	}
	// Only the messages changed; a key holds the message only when there is no fix (causeOf),
	// so the base's keys serve unless a changed message has none (D5 and D6 have a fix).
	keys := a.keys
	for i := range diags {
		if diags[i].Fix == "" && diags[i].Message != a.diags[i].Message {
			if &keys[0] == &a.keys[0] {
				keys = slices.Clone(a.keys)
			}
			keys[i] = causeOf(diags[i])
		}
	}
	return &hostAnswer{inScope: a.inScope, subject: a.subject, diags: diags, keys: keys, names: true}
}

// ownHosts marks the hosts of hosts for which a workloadSelector DestinationRule of namespace
// can apply and selects a proxy with labels but not one with base (or the other way round);
// nil when there are none.
func (p *reusePlan) ownHosts(namespace string, base, labels map[string]string) []bool {
	apart := newRuleHosts()
	for _, r := range p.selectorRules[namespace] {
		if meshhost.LabelsSubsetOf(r.selector, labels) != meshhost.LabelsSubsetOf(r.selector, base) {
			apart.add(namespace, r.host)
		}
	}
	if !apart.any(namespace) {
		return nil
	}
	may := p.selectedIn(namespace)
	own := make([]bool, len(p.hosts))
	for i, host := range p.hosts {
		own[i] = may[i] && apart.mayApply(host, namespace)
	}
	return own
}

// selectedIn reports, for each host of hosts, whether a workloadSelector DestinationRule of
// namespace can be for it (ruleHosts.mayApply); nil when the namespace has none. The classes
// of a namespace narrow it down to the rules that set them apart (ownHosts).
func (p *reusePlan) selectedIn(namespace string) []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.selected[namespace]; ok {
		return s
	}
	var s []bool
	if p.selectorHosts.any(namespace) {
		s = make([]bool, len(p.hosts))
		for i, host := range p.hosts {
			s[i] = p.selectorHosts.mayApply(host, namespace)
		}
	}
	if p.selected == nil {
		p.selected = map[string][]bool{}
	}
	p.selected[namespace] = s
	return s
}

// phases orders the classes for hostOccurrences: those whose answers others take first, then
// those that take them.
func (p *reusePlan) phases(classes []*Class) [][]int {
	var first, second []int
	for i, c := range classes {
		if p != nil && p.base[c] != nil {
			second = append(second, i)
		} else {
			first = append(first, i)
		}
	}
	return [][]int{first, second}
}
