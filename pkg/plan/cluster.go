package plan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// ClusterQuery is what decides the reads of `cluster HOST`.
type ClusterQuery struct {
	// Host is the host as typed (lower case); Namespace is -n, where a short name resolves.
	Host, Namespace string
	// ClientNamespace is the namespace of the client sidecar (-n, or --from's).
	ClientNamespace string
	// ClientPod is the name of the --from pod, in ClientNamespace; "" for any other client.
	ClientPod string
	// ClientDeployment is the name of the --from deployment, in ClientNamespace, whose first
	// pod is the client; "" for any other client.
	ClientDeployment string
}

// Cluster is what `cluster` reads from a cluster (and keeps of files). DestinationRule lookup
// only consults the client namespace, the service namespace and the root namespace (istiod
// pilot/pkg/model/push_context.go destinationRule), so DestinationRules, Sidecars,
// PeerAuthentications and EnvoyFilters are read there only; Services and Pods where the service
// and the client pod live (and the Deployments there, for --from deployment/NAME);
// ServiceEntries, WorkloadEntries and VirtualServices everywhere (a host may be defined, and a
// subset routed to, from any namespace). With AllDestinationRules DestinationRules are read
// everywhere, for the rules no lookup reaches (D2).
type Cluster struct {
	q    ClusterQuery
	base source.Spec
	p    clusterReads
}

// clusterReads is the part of the plan a snapshot corrects.
type clusterReads struct {
	root                string
	rootKnown           bool
	podNamespace        string
	serviceNamespaces   []string
	allServices         bool
	allDestinationRules bool
}

// NewCluster plans the reads of q. base is the Spec of the command's flags, without Reads;
// root is the root namespace assumed (MeshConfig's, when rootKnown, else the Istio namespace);
// allDestinationRules is -A.
func NewCluster(q ClusterQuery, base source.Spec, root string, rootKnown, allDestinationRules bool) *Cluster {
	c := &Cluster{q: q, base: base}
	c.base.DestinationRuleInFull = func(namespace, host string) bool {
		return index.RuleMayApply(q.Host, q.Namespace, host, namespace)
	}
	c.base.VirtualServiceNeeded = index.VirtualServiceFilter(q.Host)
	c.p = clusterReads{root: root, rootKnown: rootKnown, allDestinationRules: allDestinationRules}
	if q.ClientPod != "" || q.ClientDeployment != "" {
		c.p.podNamespace = q.ClientNamespace
	}
	c.p.serviceNamespaces = namespaces(meshhost.ServiceNamespace(q.Host, q.Namespace))
	return c
}

// istioNamespace is the namespace istiod runs in (--istio-namespace).
func (c *Cluster) istioNamespace() string {
	if c.base.IstioNamespace != "" {
		return c.base.IstioNamespace
	}
	return source.DefaultIstioNamespace
}

// Reads are the reads of the plan as it stands.
func (c *Cluster) Reads() []source.Read {
	p, client := c.p, c.q.ClientNamespace
	lookup := namespaces(append([]string{client, p.root}, p.serviceNamespaces...)...)
	workloads := c.workloadNamespaces()
	services := []source.Read{{Kind: source.KindService, Namespaces: workloads}}
	if name, ns := c.serviceName(); name != "" && ns != p.podNamespace {
		// Of the Services of the host's namespace the answer needs the host's own: it is got
		// by name, not listed (the client pod's namespace is listed: the pod's own Services
		// count).
		others := slices.DeleteFunc(slices.Clone(p.serviceNamespaces), func(n string) bool { return n == ns })
		services = []source.Read{{Kind: source.KindService, Namespaces: []string{ns}, Names: []string{name}}}
		if listed := namespaces(append(others, p.podNamespace)...); len(listed) > 0 {
			services = append(services, source.Read{Kind: source.KindService, Namespaces: listed})
		}
	}
	if p.allServices {
		services = []source.Read{{Kind: source.KindService}}
	}
	drs := lookup
	if p.allDestinationRules {
		drs = nil
	}
	reads := []source.Read{
		{Kind: source.KindDestinationRule, Namespaces: drs},
		{Kind: source.KindSidecar, Namespaces: lookup},
		{Kind: source.KindPeerAuthentication, Namespaces: lookup},
		{Kind: source.KindEnvoyFilter, Namespaces: namespaces(client, p.root)},
		// istiod's namespace too: its topology.istio.io/network label is the network of the
		// pods without one (it is mostly the root namespace, read already).
		{Kind: source.KindNamespace, Namespaces: namespaces(append(slices.Clone(lookup), c.istioNamespace())...)},
	}
	reads = append(append(reads, services...),
		source.Read{Kind: source.KindPod, Namespaces: workloads},
		source.Read{Kind: source.KindServiceEntry},
		source.Read{Kind: source.KindWorkloadEntry},
		source.Read{Kind: source.KindVirtualService},
	)
	if c.q.ClientDeployment != "" {
		reads = append(reads, source.Read{Kind: source.KindDeployment, Namespaces: namespaces(client)})
	}
	return reads
}

// workloadNamespaces are the namespaces whose Pods (and Services) the plan lists: the client
// pod's and the host's.
func (c *Cluster) workloadNamespaces() []string {
	return namespaces(append([]string{c.p.podNamespace}, c.p.serviceNamespaces...)...)
}

// serviceName is the Kubernetes Service the host names and its namespace ("" when the host is
// not of a Service's form: a wildcard, or a name of a ServiceEntry only).
func (c *Cluster) serviceName() (name, namespace string) {
	ns := meshhost.ServiceNamespace(c.q.Host, c.q.Namespace)
	if ns == "" {
		return "", ""
	}
	name, _, _ = strings.Cut(c.q.Host, ".")
	return name, ns
}

// Spec is the Spec of a load of reads: the command's, with the plan's predicates.
func (c *Cluster) Spec(reads []source.Read) source.Spec {
	s := c.base
	s.Reads = reads
	return s
}

// Answer loads what the host's answer needs (Load) and explains it. When the host is not found,
// every Service is read and the host explained again, so that the error can suggest the nearest
// one. A load that fails gives no snapshot. When the Nodes could not be read, the answer says
// that locality is unknown.
func (c *Cluster) Answer(ctx context.Context, load Loader, explainer func(*model.Snapshot) (*explain.Result, error)) (*model.Snapshot, *explain.Result, error) {
	snap, err := c.Load(ctx, load)
	if err != nil {
		return nil, nil, err
	}
	res, err := explainer(snap)
	var nf *explain.NotFoundError
	if errors.As(err, &nf) && !c.p.allServices {
		c.p.allServices = true
		if wide, lerr := c.Load(ctx, load); lerr == nil {
			snap = wide
			res, err = explainer(snap)
		}
	}
	if err != nil {
		return snap, nil, err
	}
	if res == nil {
		return snap, nil, errors.New("the cluster engine returned no result")
	}
	if why, ok := snap.Incomplete[source.KindNode]; ok {
		res.Warnings = append(res.Warnings, fmt.Sprintf("locality is unknown for some pods: Nodes could not be read (%s); "+
			"locality load balancing (distribute, failover) may differ from what istiod pushes", why))
	}
	return snap, res, nil
}

// Load reads the planned kinds. Reads are planned from guesses (the root namespace, the
// namespace of a ServiceEntry host); when the snapshot proves a guess wrong, the plan is
// corrected and read again. Files are filtered by the same plan and go through the same
// corrections, so files and a cluster with the same objects give the same snapshot. Once the
// plan settles, the Nodes of the pods that matter are read (loadNodes).
func (c *Cluster) Load(ctx context.Context, load Loader) (*model.Snapshot, error) {
	// A correction only adds namespaces or fixes the root namespace, so it settles after one
	// more read; the bound guards against a cluster that changes between reads.
	const maxReads = 3
	for i := 1; ; i++ {
		snap, err := load(ctx, c.Spec(c.Reads()))
		if err != nil {
			return snap, err
		}
		next := c.refine(snap)
		if next.equal(c.p) || i == maxReads {
			return c.loadNodes(ctx, load, snap)
		}
		c.p = next
	}
}

// loadNodes is the second read phase. istiod takes a pod's locality from the topology labels
// of the Node it runs on (the kube controller's getPodLocality), for the client sidecar and for
// the endpoints alike, so the Nodes of the client pod and of the pods the host's Services and
// ServiceEntries select are read, once those pods are known: one get per node name, run
// concurrently by the loader. The same phase gets the Services whose absence would make a
// DestinationRule that was read look meant for the host (NearMissServices), and the client
// namespace's pods when a workloadSelector rule there needs them (SelectorPodReads). Files are
// filtered by the same reads. A node or Service that does not exist is simply absent; a node
// read that is refused or fails leaves the locality of the pods on it unknown, with a warning,
// and the explanation goes on.
func (c *Cluster) loadNodes(ctx context.Context, load Loader, snap *model.Snapshot) (*model.Snapshot, error) {
	names := c.NodeNames(snap)
	var reads []source.Read
	if len(names) > 0 {
		reads = append(reads, source.Read{Kind: source.KindNode, Namespaces: names})
	}
	services := c.NearMissReads(snap)
	reads = append(reads, services...)
	pods := c.SelectorPodReads(snap)
	reads = append(reads, pods...)
	if len(reads) == 0 {
		return snap, nil
	}
	spec := c.Spec(reads)
	spec.Supplement = true
	more, err := load(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		more = &model.Snapshot{Incomplete: map[string]string{}}
		if len(names) > 0 {
			msg := fmt.Sprintf("cannot get nodes/%s: %v; locality unknown for the pods on them", strings.Join(names, ", nodes/"), err)
			more.Issues = append(more.Issues, model.LoadIssue{Severity: "warning", Message: msg, Incomplete: []string{source.KindNode}})
			more.Incomplete[source.KindNode] = msg
		}
		if len(services) > 0 {
			msg := fmt.Sprintf("cannot read the Services DestinationRules name near the host: %v; a rule reported as matching no service (D1) may match one", err)
			more.Issues = append(more.Issues, model.LoadIssue{Severity: "warning", Message: msg, Incomplete: []string{source.KindService}})
			more.Incomplete[source.KindService] = msg
		}
		if len(pods) > 0 {
			msg := fmt.Sprintf("cannot list the pods of namespace %s: %v; a workloadSelector DestinationRule reported as selecting no workload there (D6) may select some", c.q.ClientNamespace, err)
			more.Issues = append(more.Issues, model.LoadIssue{Severity: "warning", Message: msg, Incomplete: []string{source.KindPod}})
			more.Incomplete[source.KindPod] = msg
		}
	}
	mergeSecondPhase(snap, more)
	return snap, nil
}

// SelectorPodReads is the list of the client namespace's Pods, when the plan does not list
// them and a DestinationRule of that namespace with a workloadSelector may be for the host: a
// rule that does not select the client says whether it selects any workload of its namespace
// (D6, index whyNot), which only those pods tell. Nil otherwise.
func (c *Cluster) SelectorPodReads(snap *model.Snapshot) []source.Read {
	client := c.q.ClientNamespace
	if client == "" || slices.Contains(c.workloadNamespaces(), client) {
		return nil
	}
	for _, dr := range snap.DestinationRules {
		if dr.Namespace == client && dr.Spec.GetWorkloadSelector() != nil && index.RuleMayApply(c.q.Host, c.q.Namespace, dr.Spec.GetHost(), dr.Namespace) {
			return []source.Read{{Kind: source.KindPod, Namespaces: []string{client}}}
		}
	}
	return nil
}

// nearMissLimit is the number of Services of one namespace the second phase gets by name;
// beyond it, it lists the namespace's Services.
const nearMissLimit = 10

// NearMissReads are the reads of NearMissServices, one per namespace: the names, or the
// namespace's list when there are more than nearMissLimit.
func (c *Cluster) NearMissReads(snap *model.Snapshot) []source.Read {
	var reads []source.Read
	byNS := c.NearMissServices(snap)
	for _, ns := range slices.Sorted(maps.Keys(byNS)) {
		r := source.Read{Kind: source.KindService, Namespaces: []string{ns}}
		if len(byNS[ns]) <= nearMissLimit {
			r.Names = byNS[ns]
		}
		reads = append(reads, r)
	}
	return reads
}

// NearMissServices are the Services, by namespace (names sorted), that the snapshot lacks and
// that DestinationRules in it name by a Service host which, were no Service to hold it, D1
// would report as probably meant for the host (index.MeantFor: a near miss, a short name
// expanded in another namespace): the plan gets the host's own Service by name and lists no
// other Service of its namespace, nor of the root namespace or the client's, so whether such
// a rule matches a service is not known from the first reads.
func (c *Cluster) NearMissServices(snap *model.Snapshot) map[string][]string {
	listed, all := c.listedServiceNamespaces()
	if all {
		return nil
	}
	type target struct{ host, name, ns string }
	var targets []target
	for _, h := range meshhost.Candidates(c.q.Host, c.q.Namespace) {
		name, ns := serviceOf(h)
		targets = append(targets, target{h, name, ns})
	}
	have := map[string]bool{}
	for _, s := range snap.Services {
		have[s.Namespace+"/"+s.Name] = true
	}
	out := map[string][]string{}
	for _, dr := range snap.DestinationRules {
		raw := dr.Spec.GetHost()
		host := meshhost.ResolveShortname(raw, dr.Namespace)
		name, ns := serviceOf(host)
		if name == "" || listed[ns] || have[ns+"/"+name] {
			continue
		}
		for _, t := range targets {
			if _, ok := index.MeantFor(raw, host, dr.Namespace, t.host, t.name, t.ns, t.name != ""); ok {
				have[ns+"/"+name] = true
				out[ns] = append(out[ns], name)
				break
			}
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

// listedServiceNamespaces are the namespaces whose Services the plan lists; all when it lists
// them everywhere.
func (c *Cluster) listedServiceNamespaces() (map[string]bool, bool) {
	listed := map[string]bool{}
	for _, r := range c.Reads() {
		if r.Kind != source.KindService || r.Names != nil {
			continue
		}
		if r.Namespaces == nil {
			return nil, true
		}
		for _, ns := range r.Namespaces {
			listed[ns] = true
		}
	}
	return listed, false
}

// serviceOf is the name and namespace of the Kubernetes Service a fully qualified host
// (`name.namespace.svc.<domain>`) names; "" for any other host.
func serviceOf(h string) (name, namespace string) {
	rest, ok := strings.CutSuffix(h, ".svc."+meshhost.DomainSuffix)
	if !ok {
		return "", ""
	}
	name, namespace, ok = strings.Cut(rest, ".")
	if !ok || name == "" || namespace == "" || strings.Contains(namespace, ".") {
		return "", ""
	}
	return name, namespace
}

// NodeNames returns the nodes, sorted, of the client pod (a --from deployment's first pod) and of
// the pods the host's Services (spec.selector) and ServiceEntries (workloadSelector) select,
// except those the snapshot already holds.
func (c *Cluster) NodeNames(snap *model.Snapshot) []string {
	type selector struct {
		namespace string
		labels    map[string]string
	}
	var selectors []selector
	candidates := meshhost.Candidates(c.q.Host, c.q.Namespace)
	for _, svc := range snap.Services {
		if len(svc.Spec.Selector) > 0 && slices.Contains(candidates, svc.Name+"."+svc.Namespace+".svc."+meshhost.DomainSuffix) {
			selectors = append(selectors, selector{svc.Namespace, svc.Spec.Selector})
		}
	}
	for _, se := range snap.ServiceEntries {
		ws := se.Spec.GetWorkloadSelector().GetLabels()
		if len(ws) > 0 && definesHost(se.Spec.GetHosts(), candidates) {
			selectors = append(selectors, selector{se.Namespace, ws})
		}
	}
	client := c.q.ClientPod
	if c.q.ClientDeployment != "" {
		// The client is the deployment's first pod (index.Proxy).
		if pods, _, _ := snap.DeploymentPods(c.q.ClientNamespace, c.q.ClientDeployment); len(pods) > 0 {
			client = pods[0].Name
		}
	}
	var out []string
	for _, pod := range snap.Pods {
		node := pod.Spec.NodeName
		if node == "" || snap.Node(node) != nil {
			continue
		}
		wanted := client != "" && pod.Namespace == c.q.ClientNamespace && pod.Name == client
		for _, sel := range selectors {
			if wanted {
				break
			}
			wanted = pod.Namespace == sel.namespace && meshhost.LabelsSubsetOf(sel.labels, pod.Labels)
		}
		if wanted {
			out = append(out, node)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// definesHost reports whether one of a ServiceEntry's hosts defines one of the names the typed
// host stands for: the same name, or a wildcard covering it (host.Name.SubsetOf).
func definesHost(seHosts, candidates []string) bool {
	return slices.ContainsFunc(seHosts, func(h string) bool {
		h = strings.ToLower(h)
		return slices.ContainsFunc(candidates, func(c string) bool { return meshhost.Name(c).SubsetOf(meshhost.Name(h)) })
	})
}

// mergeSecondPhase adds what the second phase found to snap: the Nodes, Services and Pods snap
// does not hold yet, their sources, and the load issues about those kinds (a load of files in that
// phase reads the files again, so their other issues are already in snap).
func mergeSecondPhase(snap, more *model.Snapshot) {
	var added []model.ObjectKey
	for _, n := range more.Nodes {
		if snap.Node(n.Name) == nil {
			snap.Nodes = append(snap.Nodes, n)
			added = append(added, model.ObjectKey{Kind: source.KindNode, Name: n.Name})
		}
	}
	for _, svc := range more.Services {
		if !slices.ContainsFunc(snap.Services, func(s *corev1.Service) bool { return s.Namespace == svc.Namespace && s.Name == svc.Name }) {
			snap.Services = append(snap.Services, svc)
			added = append(added, model.ObjectKey{Kind: source.KindService, Namespace: svc.Namespace, Name: svc.Name})
		}
	}
	for _, pod := range more.Pods {
		if !slices.ContainsFunc(snap.Pods, func(p *corev1.Pod) bool { return p.Namespace == pod.Namespace && p.Name == pod.Name }) {
			snap.Pods = append(snap.Pods, pod)
			added = append(added, model.ObjectKey{Kind: source.KindPod, Namespace: pod.Namespace, Name: pod.Name})
		}
	}
	for _, key := range added {
		if src, ok := more.Sources[key]; ok {
			if snap.Sources == nil {
				snap.Sources = map[model.ObjectKey]model.Source{}
			}
			snap.Sources[key] = src
		}
	}
	snap.Sort()
	for _, kind := range []string{source.KindNode, source.KindService, source.KindPod} {
		for _, is := range more.Issues {
			about := slices.Contains(is.Incomplete, kind) || (is.Resource != nil && is.Resource.Kind == kind)
			if about && !slices.ContainsFunc(snap.Issues, func(x model.LoadIssue) bool { return x.String() == is.String() }) {
				snap.Issues = append(snap.Issues, is)
			}
		}
		if why, ok := more.Incomplete[kind]; ok {
			if snap.Incomplete == nil {
				snap.Incomplete = map[string]string{}
			}
			snap.Incomplete[kind] = why
		}
	}
}

// refine corrects the plan with what a snapshot shows: the root namespace MeshConfig sets, and
// the namespaces of ServiceEntries that define the host.
func (c *Cluster) refine(snap *model.Snapshot) clusterReads {
	next := c.p
	if !c.p.rootKnown {
		next.root = snap.RootNamespace()
	}
	svc := append([]string(nil), c.p.serviceNamespaces...)
	candidates := meshhost.Candidates(c.q.Host, c.q.Namespace)
	for _, se := range snap.ServiceEntries {
		for _, h := range se.Spec.GetHosts() {
			if definesHost([]string{h}, candidates) {
				svc = append(svc, se.Namespace)
			}
		}
	}
	next.serviceNamespaces = namespaces(svc...)
	return next
}

func (p clusterReads) equal(q clusterReads) bool {
	return p.root == q.root && p.podNamespace == q.podNamespace &&
		p.allServices == q.allServices && p.allDestinationRules == q.allDestinationRules &&
		slices.Equal(p.serviceNamespaces, q.serviceNamespaces)
}
