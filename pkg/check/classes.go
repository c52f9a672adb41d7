package check

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// sidecarStatusAnnotation marks a pod the injector gave a sidecar (annotation.SidecarStatus).
const sidecarStatusAnnotation = "sidecar.istio.io/status"

// Client is one client proxy the hosts are explained for: the default sidecar of a namespace
// (a sidecar without labels, `cluster HOST -n NS`), the sidecar of a pod, or the proxy of a
// gateway's pod (`cluster HOST --from pod/NAME`).
type Client struct {
	// Ref is `Namespace NS` for the namespace default, `Pod NS/NAME` for a pod.
	Ref provenance.Ref
	// Namespace is the client's config namespace.
	Namespace string
	// Labels are the pod's labels (nil for the namespace default).
	Labels map[string]string
	// Router marks a gateway's pod: its istio-proxy runs as a router, whose scope and
	// clusters istiod builds otherwise than a sidecar's (docs/semantics/cluster.md).
	Router bool
}

// Class is a group of clients that get the same findings for every host: the same
// namespace, the same kind of proxy (sidecar or router), and the same values of the labels
// any workloadSelector that can apply to them reads. The first member is explained for all.
type Class struct {
	Namespace string
	// Key tells classes apart within a namespace: the labels that matter, `k=v` sorted.
	Key string
	// Router marks a class of gateways' pods; it never takes a sidecar class's answers.
	Router  bool
	Members []Client
}

// labelKeys are the pod label keys that decide what a client sidecar in a namespace gets,
// found from the objects that select client sidecars by labels:
//   - a Sidecar with a workloadSelector in the namespace (istiod's doGetSidecarScope);
//   - an EnvoyFilter with a workloadSelector in the namespace or the root namespace (its
//     CLUSTER patches are reported as D30);
//   - a DestinationRule with a workloadSelector in the namespace: it decides the selection
//     (pick). The selection diagnostics also name the proxy's labels in full
//     (diag.SelectorRuleShadowsFallback, diag.SelectorRuleIgnored in pkg/index/drdiag.go), so members of a class whose labels differ elsewhere get those
//     diagnostics worded for themselves: classOccurrences asks again for each of them, for
//     the hosts where the answer names the labels (namesLabels).
type labelKeys struct {
	keys map[string]bool
}

func (k *labelKeys) add(sel map[string]string) {
	for key := range sel {
		if k.keys == nil {
			k.keys = map[string]bool{}
		}
		k.keys[key] = true
	}
}

// key spells the labels of l that k reads.
func (k labelKeys) key(l map[string]string) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(l)) {
		if k.keys[name] {
			parts = append(parts, name+"="+l[name])
		}
	}
	return strings.Join(parts, ",")
}

// namespaceLabelKeys returns the labelKeys of every namespace.
func namespaceLabelKeys(snap *model.Snapshot) map[string]*labelKeys {
	out := map[string]*labelKeys{}
	get := func(ns string) *labelKeys {
		k := out[ns]
		if k == nil {
			k = &labelKeys{}
			out[ns] = k
		}
		return k
	}
	var rootFilters []map[string]string
	for _, sc := range snap.Sidecars {
		if ws := sc.Spec.GetWorkloadSelector(); ws != nil {
			get(sc.Namespace).add(ws.GetLabels())
		}
	}
	root := snap.RootNamespace()
	for _, ef := range snap.EnvoyFilters {
		if ws := ef.Spec.GetWorkloadSelector(); ws != nil {
			get(ef.Namespace).add(ws.GetLabels())
			if ef.Namespace == root {
				rootFilters = append(rootFilters, ws.GetLabels())
			}
		}
	}
	for _, dr := range snap.DestinationRules {
		if ws := dr.Spec.GetWorkloadSelector(); ws != nil {
			get(dr.Namespace).add(ws.GetMatchLabels())
		}
	}
	if len(rootFilters) > 0 {
		for _, ns := range clientNamespaces(snap, nil) {
			for _, sel := range rootFilters {
				get(ns).add(sel)
			}
		}
	}
	return out
}

// isSidecarPod reports whether the injector gave pod a sidecar, not a gateway's proxy (which
// the gateway injection template gives with the same annotation: isGatewayProxy).
func isSidecarPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[sidecarStatusAnnotation]
	return ok && !pod.Spec.HostNetwork && !isGatewayProxy(pod)
}

// isGatewayProxy reports whether pod's istio-proxy runs as a gateway (router) or a waypoint:
// istiod builds its clusters and listeners otherwise than a sidecar's (model.ProxyType), so
// it is not a sidecar client; a router is a client of its own kind (isRouterPod).
func isGatewayProxy(pod *corev1.Pod) bool {
	_, _, ok := model.GatewayOrWaypoint(pod)
	return ok
}

// isRouterPod reports whether pod's istio-proxy runs as a router: a gateway's pod, which
// `cluster --from pod/NAME` explains as istiod builds a gateway's clusters.
func isRouterPod(pod *corev1.Pod) bool {
	typ, _ := model.ProxyType(pod)
	return typ == model.ProxyRouter
}

// isWaypointProxy reports whether pod's istio-proxy runs as a waypoint.
func isWaypointProxy(pod *corev1.Pod) bool {
	typ, _ := model.ProxyType(pod)
	return typ == model.ProxyWaypoint
}

// clientNamespaces are the namespaces of the snapshot (Namespace objects and the namespaces of
// every object), sorted; only those of want when want is not nil.
func clientNamespaces(snap *model.Snapshot, want []string) []string {
	if want != nil {
		return slices.Sorted(slices.Values(slices.Clone(want)))
	}
	var out []string
	for _, ns := range snap.Namespaces {
		out = append(out, ns.Name)
	}
	for k := range snap.Sources {
		if k.Namespace != "" {
			out = append(out, k.Namespace)
		}
	}
	for _, p := range snap.Pods {
		out = append(out, p.Namespace)
	}
	for _, s := range snap.Services {
		out = append(out, s.Namespace)
	}
	for _, s := range snap.ServiceEntries {
		out = append(out, s.Namespace)
	}
	for _, d := range snap.DestinationRules {
		out = append(out, d.Namespace)
	}
	for _, v := range snap.VirtualServices {
		out = append(out, v.Namespace)
	}
	for _, s := range snap.Sidecars {
		out = append(out, s.Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Clients returns the client proxies of namespaces (nil: every namespace of the snapshot):
// the default sidecar of each namespace but the root namespace, whose sidecar is the mesh's
// own configuration namespace rather than a client, the sidecar of every injected pod, and
// the proxy of every gateway's pod (Router).
func Clients(snap *model.Snapshot, namespaces []string) []Client {
	nss := clientNamespaces(snap, namespaces)
	root := snap.RootNamespace()
	var out []Client
	for _, ns := range nss {
		if ns != root {
			out = append(out, Client{Ref: provenance.Ref{Kind: "Namespace", Name: ns}, Namespace: ns})
		}
		for _, pod := range snap.Pods {
			if pod.Namespace != ns {
				continue
			}
			switch {
			case isSidecarPod(pod):
				out = append(out, Client{Ref: provenance.Ref{Kind: "Pod", Namespace: ns, Name: pod.Name}, Namespace: ns, Labels: pod.Labels})
			case isRouterPod(pod):
				out = append(out, Client{Ref: provenance.Ref{Kind: "Pod", Namespace: ns, Name: pod.Name}, Namespace: ns, Labels: pod.Labels, Router: true})
			}
		}
	}
	return out
}

// Classes groups clients into classes, in the order of their first member.
func Classes(snap *model.Snapshot, clients []Client) []*Class {
	keys := namespaceLabelKeys(snap)
	byKey := map[string]*Class{}
	var out []*Class
	for _, c := range clients {
		lk := keys[c.Namespace]
		if lk == nil {
			lk = &labelKeys{}
		}
		k := lk.key(c.Labels)
		id := c.Namespace + "\x00" + k
		if c.Router {
			id += "\x00router"
		}
		cl := byKey[id]
		if cl == nil {
			cl = &Class{Namespace: c.Namespace, Key: k, Router: c.Router}
			byKey[id] = cl
			out = append(out, cl)
		}
		cl.Members = append(cl.Members, c)
	}
	return out
}

// proxy is the index proxy of the class's first member.
func (c *Class) proxy(ix *index.Index) (*index.Proxy, error) {
	return memberProxy(ix, c.Members[0])
}

// memberProxy is the index proxy of a client.
func memberProxy(ix *index.Index, m Client) (*index.Proxy, error) {
	if m.Ref.Kind == "Pod" {
		return ix.Proxy("pod", m.Namespace, m.Ref.Name)
	}
	return ix.Proxy("namespace", m.Namespace, "")
}

// byLabels splits the members into groups with the same labels, the first member's group
// first.
func (c *Class) byLabels() [][]Client {
	var out [][]Client
	for _, m := range c.Members {
		i := slices.IndexFunc(out, func(g []Client) bool { return maps.Equal(g[0].Labels, m.Labels) })
		if i < 0 {
			out = append(out, []Client{m})
			continue
		}
		out[i] = append(out[i], m)
	}
	return out
}

// labelsText is how the selection diagnostics print a proxy's labels (index formatLabels):
// `a=b,c=d` sorted, `{}` when there are none.
func labelsText(l map[string]string) string {
	if len(l) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

// namesLabels reports whether a diagnostic's message names the proxy labels l, as
// diag.SelectorRuleShadowsFallback (`this proxy (labels l)`) and diag.SelectorRuleIgnored
// (`this proxy's labels (l)`) do, the only diagnostics that print them; the labels are spelled
// once, for every diagnostic asked.
func namesLabels(l map[string]string) func(explain.Diagnostic) bool {
	t := labelsText(l)
	a, b := "(labels "+t+")", "labels ("+t+")"
	d5, d6 := string(diag.SelectorRuleShadowsFallback), string(diag.SelectorRuleIgnored)
	return func(d explain.Diagnostic) bool {
		return (d.ID == d5 || d.ID == d6) &&
			(strings.Contains(d.Message, a) || strings.Contains(d.Message, b))
	}
}

// relabeler rewrites the answer of a proxy with one set of labels as a proxy with another
// gets it, its phrases spelled once, when both are members of one class (the same namespace,
// and the same values of every label a workloadSelector there reads): the index reads of a
// proxy only its namespace and labels, and the labels only to match those workloadSelectors,
// which decide alike for both, and to print them in two messages,
// diag.SelectorRuleShadowsFallback (`this proxy (labels l) is not one of them`) and
// diag.SelectorRuleIgnored (`which does not match this proxy's labels (l)`); the build
// diagnostics read nothing of the proxy (envoycluster.SharedBuilds). So only those two
// messages change. TestRunEqualsUnionOnBenchMesh compares with every member's own answer.
type relabeler struct{ phrases [2][2]string }

func newRelabeler(from, to map[string]string) relabeler {
	f, t := labelsText(from), labelsText(to)
	return relabeler{phrases: [2][2]string{
		{"this proxy (labels " + f + ") is not one of them", "this proxy (labels " + t + ") is not one of them"},
		{"which does not match this proxy's labels (" + f + ")", "which does not match this proxy's labels (" + t + ")"},
	}}
}

// apply returns diags relabelled, and whether any message changed; diags itself when none did.
func (r relabeler) apply(diags []explain.Diagnostic) ([]explain.Diagnostic, bool) {
	var out []explain.Diagnostic
	for i := range diags {
		if id := diag.ID(diags[i].ID); id != diag.SelectorRuleShadowsFallback && id != diag.SelectorRuleIgnored {
			continue
		}
		m := diags[i].Message
		for _, p := range r.phrases {
			m = strings.Replace(m, p[0], p[1], 1)
		}
		if m == diags[i].Message {
			continue
		}
		if out == nil {
			out = slices.Clone(diags)
		}
		out[i].Message = m
	}
	if out == nil {
		return diags, false
	}
	return out, true
}

// groupNames spells a group of members: `Namespace NS` for the group of the namespace
// default, else its pods.
func groupNames(g []Client) []string {
	out := make([]string, 0, len(g))
	for _, m := range g {
		if m.Ref.Kind == "Namespace" {
			return []string{m.Ref.String()}
		}
		out = append(out, m.Ref.String())
	}
	return out
}

// names spells the class for a finding: `Namespace NS` when the namespace default is a member
// (it stands for every sidecar of the namespace that no workloadSelector sets apart), else its
// pods.
func (c *Class) names() []string {
	for _, m := range c.Members {
		if m.Ref.Kind == "Namespace" {
			return []string{m.Ref.String()}
		}
	}
	out := make([]string, 0, len(c.Members))
	for _, m := range c.Members {
		out = append(out, m.Ref.String())
	}
	return out
}
