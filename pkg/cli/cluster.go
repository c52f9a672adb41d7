package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/render"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// ClusterFormats are the -o values of `cluster`.
var ClusterFormats = []string{render.FormatTable, render.FormatWide, render.FormatJSON, render.FormatYAML, render.FormatEnvoy}

// ClusterOptions are the inputs of `cluster HOST[:PORT]`.
type ClusterOptions struct {
	*CommonOptions

	// Output is -o.
	Output string
	// Port is --port (0: every port, unless HOST:PORT names one).
	Port uint32
	// Subset is --subset.
	Subset string
	// From is --from: pod/NAME or namespace/NS.
	From string
	// AllNamespaces is -A: read DestinationRules in every namespace, to report those that
	// target the host but are never consulted for the client (D2).
	AllNamespaces bool

	// Load reads the snapshot (source.Load); Explain is the engine (envoycluster.Explain).
	Load    LoadFunc
	Explain func(*model.Snapshot, envoycluster.Query) (*explain.Result, error)

	query   envoycluster.Query
	plan    clusterPlan
	spec    source.Spec
	printer render.Printer
}

// NewCmdCluster returns the `cluster` command. runF replaces Run in tests (nil: Run).
func NewCmdCluster(common *CommonOptions, runF func(context.Context, *ClusterOptions) error) *cobra.Command {
	o := &ClusterOptions{CommonOptions: common, Output: render.FormatTable}
	cmd := &cobra.Command{
		Use:   "cluster HOST[:PORT]",
		Short: "Show the Envoy Clusters istiod generates for a host, and where every field comes from",
		Long: longDesc(`
			Show the outbound Envoy Clusters (CDS) istiod generates for HOST in a sidecar, and where
			every field comes from: the service registry, MeshConfig and its defaultTrafficPolicy,
			the DestinationRule istiod selects for that client (top level, portLevelSettings,
			subsets), auto-mTLS, or istiod's and Envoy's defaults.

			HOST is a Service name resolved in -n (reviews), name.namespace (reviews.bookinfo), an
			FQDN (reviews.bookinfo.svc.cluster.local), or a ServiceEntry host (api.example.com).
			Without a port every port of the service is explained; without --subset the default
			cluster and every subset cluster.

			The client is a sidecar in the -n namespace unless --from names a pod (its namespace,
			labels and IPs count) or another namespace. DestinationRules are looked up where istiod
			looks: the client namespace, the service namespace and the root namespace, and only
			there are they read. With -A DestinationRules are read in every namespace too, to
			report those that target the host from a namespace istiod never consults for this
			client (diagnostic D2); the Clusters are the same either way.

			Files (-f) are read as the cluster would be: objects that a cluster read would not
			return (a DestinationRule outside the lookup namespaces without -A, say) are left out,
			so the same command line gives the same answer from files and from a cluster.

			Output formats: table (default), wide (adds what each value overrode), json and yaml
			(the explanation document, docs/output.md), envoy (the Clusters as the JSON istiod
			sends, comparable with istioctl proxy-config cluster -o json).`),
		Example: examples(`
			# All clusters of reviews for a sidecar in bookinfo
			kubectl mesh-explain cluster reviews -n bookinfo

			# One port and subset, as seen by a specific client pod, with what each value overrode
			kubectl mesh-explain cluster reviews.bookinfo:9080 --subset v1 --from pod/productpage-v1-6b746f74dc-2r8hz -n bookinfo -o wide

			# A ServiceEntry host, for a client in namespace frontend
			kubectl mesh-explain cluster api.example.com --from namespace/frontend

			# Also report DestinationRules for reviews that no lookup ever reaches (D2)
			kubectl mesh-explain cluster reviews -n bookinfo -A

			# Offline: only the manifests in a directory tree; no cluster or kubeconfig is used
			kubectl mesh-explain cluster reviews -n bookinfo -f manifests/ -R -o envoy

			# What-if: the live cluster with a changed DestinationRule applied over it
			kubectl mesh-explain cluster reviews -n bookinfo -f reviews-dr.yaml --overlay`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf(cmd, "cluster takes exactly one HOST[:PORT] argument, got %d", len(args))
			}
			return nil
		},
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.Output, "output", "o", o.Output, "Output format: "+strings.Join(ClusterFormats, "|"))
	fs.Uint32Var(&o.Port, "port", o.Port, "Explain only this service port (same as HOST:PORT)")
	fs.StringVar(&o.Subset, "subset", o.Subset, "Explain only this DestinationRule subset")
	fs.StringVar(&o.From, "from", o.From, "The client sidecar: pod/NAME (in -n) or namespace/NS (default: a sidecar in -n)")
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces,
		"Also read DestinationRules in every namespace, to report rules that target this host but can never apply (D2)")
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletions(ClusterFormats...))
	_ = cmd.RegisterFlagCompletionFunc("from", fixedCompletions("pod/", "namespace/"))
	return cmd
}

// Complete turns the arguments and flags into the engine query, the read plan and the printer.
func (o *ClusterOptions) Complete(cmd *cobra.Command, args []string) error {
	if o.Load == nil {
		o.Load = source.Load
	}
	if o.Explain == nil {
		o.Explain = envoycluster.Explain
	}
	host, port, err := parseHostPort(args[0])
	if err != nil {
		return usageErrorf(cmd, "invalid HOST[:PORT] %q: %v", args[0], err)
	}
	if o.Port > 65535 {
		return usageErrorf(cmd, "--port %d is not a port number (1 to 65535)", o.Port)
	}
	if port != 0 && o.Port != 0 && port != o.Port {
		return usageErrorf(cmd, "--port %d conflicts with the port in %q", o.Port, args[0])
	}
	if port == 0 {
		port = o.Port
	}
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	from, err := parseFrom(o.From, ns)
	if err != nil {
		return usageErrorf(cmd, "invalid --from %q: %v", o.From, err)
	}
	o.query = envoycluster.Query{Host: host, Namespace: ns, Port: port, Subset: o.Subset, From: from}

	p, err := render.For(o.Output, o.renderOptions(ClusterFormats))
	if err != nil {
		return &UsageError{Cmd: cmd, Err: err}
	}
	o.printer = p

	root, err := o.meshRootNamespace()
	if err != nil {
		return err
	}
	o.spec = o.sourceSpec(ns)
	o.spec.DestinationRuleInFull = rulesInFull(o.query)
	o.spec.VirtualServiceNeeded = virtualServicesNeeded(o.query)
	o.plan = newClusterPlan(o.query, firstNonEmpty(root, o.IstioNamespace))
	o.plan.rootKnown = root != ""
	o.plan.allDestinationRules = o.AllNamespaces
	return nil
}

// Validate checks flag combinations.
func (o *ClusterOptions) Validate(cmd *cobra.Command) error {
	if err := o.CommonOptions.Validate(cmd); err != nil {
		return err
	}
	if o.query.Host == "" {
		return usageErrorf(cmd, "HOST must not be empty")
	}
	return nil
}

// Run loads the snapshot, explains the host and prints the result.
func (o *ClusterOptions) Run(ctx context.Context) error {
	snap, err := o.load(ctx)
	if err != nil {
		return err
	}
	res, err := o.Explain(snap, o.query)
	var nf *explain.NotFoundError
	if errors.As(err, &nf) && !o.plan.allServices {
		// The minimal reads did not find the host: read every Service so the engine can
		// suggest the nearest one.
		o.plan.allServices = true
		if wide, lerr := o.load(ctx); lerr == nil {
			snap = wide
			res, err = o.Explain(snap, o.query)
		}
	}
	printed := reportIssues(o.ErrOut, snap)
	if err != nil {
		return err
	}
	if res == nil {
		return errors.New("the cluster engine returned no result")
	}
	if why, ok := snap.Incomplete[source.KindNode]; ok {
		res.Warnings = append(res.Warnings, fmt.Sprintf("locality is unknown for some pods: Nodes could not be read (%s); "+
			"locality load balancing (distribute, failover) may differ from what istiod pushes", why))
	}
	if o.Output == render.FormatEnvoy {
		reportWarnings(o.ErrOut, res.Warnings, printed)
	}
	return o.printer.Print(o.Out, res)
}

// load reads the planned kinds. Reads are planned from guesses (the root namespace, the
// namespace of a ServiceEntry host); when the snapshot proves a guess wrong, the plan is
// corrected and read again. Files are filtered by the same plan and go through the same
// corrections, so files and a cluster with the same objects give the same snapshot. Once the
// plan settles, the Nodes of the pods that matter are read (loadNodes).
func (o *ClusterOptions) load(ctx context.Context) (*model.Snapshot, error) {
	// A correction only adds namespaces or fixes the root namespace, so it settles after one
	// more read; the bound guards against a cluster that changes between reads.
	const maxReads = 3
	for i := 1; ; i++ {
		snap, err := o.Load(ctx, o.planned(o.spec, o.plan.reads()))
		if err != nil {
			return snap, err
		}
		next := o.plan.refine(snap, o.query)
		if next.equal(o.plan) || i == maxReads {
			return o.loadNodes(ctx, snap)
		}
		o.plan = next
	}
}

// loadNodes is the second read phase. istiod takes a pod's locality from the topology labels
// of the Node it runs on (the kube controller's getPodLocality), for the client sidecar and for
// the endpoints alike, so the Nodes of the client pod and of the pods the host's Services and
// ServiceEntries select are read, once those pods are known: one get per node name, run
// concurrently by the loader, and nothing else. Files are filtered by the same reads. A node
// that does not exist is simply absent; a read that is refused or fails leaves the locality of
// the pods on it unknown, with a warning, and the explanation goes on.
func (o *ClusterOptions) loadNodes(ctx context.Context, snap *model.Snapshot) (*model.Snapshot, error) {
	names := nodeNames(snap, o.query)
	if len(names) == 0 {
		return snap, nil
	}
	nodes, err := o.Load(ctx, o.planned(o.spec, []source.Read{{Kind: source.KindNode, Namespaces: names}}))
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		msg := fmt.Sprintf("cannot get nodes/%s: %v; locality unknown for the pods on them", strings.Join(names, ", nodes/"), err)
		nodes = &model.Snapshot{
			Issues:     []model.LoadIssue{{Severity: "warning", Message: msg, Incomplete: []string{source.KindNode}}},
			Incomplete: map[string]string{source.KindNode: msg},
		}
	}
	mergeNodes(snap, nodes)
	return snap, nil
}

// nodeNames returns the nodes, sorted, of the client pod (--from pod/NAME) and of the pods the
// host's Services (spec.selector) and ServiceEntries (workloadSelector) select, except those
// the snapshot already holds.
func nodeNames(snap *model.Snapshot, q envoycluster.Query) []string {
	type selector struct {
		namespace string
		labels    map[string]string
	}
	var selectors []selector
	candidates := hostCandidates(q.Host, q.Namespace)
	for _, svc := range snap.Services {
		if len(svc.Spec.Selector) > 0 && slices.Contains(candidates, svc.Name+"."+svc.Namespace+".svc.cluster.local") {
			selectors = append(selectors, selector{svc.Namespace, svc.Spec.Selector})
		}
	}
	for _, se := range snap.ServiceEntries {
		ws := se.Spec.GetWorkloadSelector().GetLabels()
		if len(ws) > 0 && slices.ContainsFunc(se.Spec.GetHosts(), func(h string) bool {
			return slices.ContainsFunc(candidates, func(c string) bool { return hostMatches(h, c) })
		}) {
			selectors = append(selectors, selector{se.Namespace, ws})
		}
	}
	var out []string
	for _, pod := range snap.Pods {
		node := pod.Spec.NodeName
		if node == "" || snap.Node(node) != nil {
			continue
		}
		wanted := q.From.Kind == envoycluster.ProxyPod && pod.Namespace == q.From.Namespace && pod.Name == q.From.Name
		for _, sel := range selectors {
			if wanted {
				break
			}
			wanted = pod.Namespace == sel.namespace && labelsMatch(sel.labels, pod.Labels)
		}
		if wanted {
			out = append(out, node)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// labelsMatch is a Kubernetes equality selector: every label of sel is set to the same value.
func labelsMatch(sel, labels map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// mergeNodes adds what the node read found to snap: the Nodes snap does not hold yet, their
// sources, and the load issues about Nodes (a node load of files reads the files again, so
// their other issues are already in snap).
func mergeNodes(snap, nodes *model.Snapshot) {
	for _, n := range nodes.Nodes {
		if snap.Node(n.Name) != nil {
			continue
		}
		snap.Nodes = append(snap.Nodes, n)
		key := model.ObjectKey{Kind: source.KindNode, Name: n.Name}
		if src, ok := nodes.Sources[key]; ok {
			if snap.Sources == nil {
				snap.Sources = map[model.ObjectKey]model.Source{}
			}
			snap.Sources[key] = src
		}
	}
	snap.Sort()
	for _, is := range nodes.Issues {
		about := slices.Contains(is.Incomplete, source.KindNode) || (is.Resource != nil && is.Resource.Kind == source.KindNode)
		if about && !slices.ContainsFunc(snap.Issues, func(x model.LoadIssue) bool { return issueLine(x) == issueLine(is) }) {
			snap.Issues = append(snap.Issues, is)
		}
	}
	if why, ok := nodes.Incomplete[source.KindNode]; ok {
		if snap.Incomplete == nil {
			snap.Incomplete = map[string]string{}
		}
		snap.Incomplete[source.KindNode] = why
	}
}

// clusterPlan is what `cluster` reads from a cluster (and keeps of files). DestinationRule
// lookup only consults the client namespace, the service namespace and the root namespace
// (istiod pilot/pkg/model/push_context.go destinationRule), so DestinationRules, Sidecars,
// PeerAuthentications and EnvoyFilters are read there only; Services and Pods where the service
// and the client pod live; ServiceEntries, WorkloadEntries and VirtualServices everywhere (a
// host may be defined, and a subset routed to, from any namespace). With -A DestinationRules
// are read everywhere, for the rules no lookup reaches (D2).
type clusterPlan struct {
	root                string
	rootKnown           bool
	clientNamespace     string
	podNamespace        string
	serviceNamespaces   []string
	allServices         bool
	allDestinationRules bool
}

func newClusterPlan(q envoycluster.Query, root string) clusterPlan {
	p := clusterPlan{root: root, clientNamespace: q.Namespace}
	switch q.From.Kind {
	case envoycluster.ProxyPod:
		p.clientNamespace = q.From.Namespace
		p.podNamespace = q.From.Namespace
	case envoycluster.ProxyNamespace:
		p.clientNamespace = q.From.Namespace
	}
	p.serviceNamespaces = namespaces(serviceNamespace(q.Host, q.Namespace))
	return p
}

func (p clusterPlan) reads() []source.Read {
	lookup := namespaces(append([]string{p.clientNamespace, p.root}, p.serviceNamespaces...)...)
	workloads := namespaces(append([]string{p.podNamespace}, p.serviceNamespaces...)...)
	services := workloads
	if p.allServices {
		services = nil
	}
	drs := lookup
	if p.allDestinationRules {
		drs = nil
	}
	reads := []source.Read{
		{Kind: source.KindDestinationRule, Namespaces: drs},
		{Kind: source.KindSidecar, Namespaces: lookup},
		{Kind: source.KindPeerAuthentication, Namespaces: lookup},
		{Kind: source.KindEnvoyFilter, Namespaces: namespaces(p.clientNamespace, p.root)},
		{Kind: source.KindNamespace, Namespaces: namespaces(append([]string{p.clientNamespace, p.root}, p.serviceNamespaces...)...)},
		{Kind: source.KindService, Namespaces: services},
		{Kind: source.KindPod, Namespaces: workloads},
		{Kind: source.KindServiceEntry},
		{Kind: source.KindWorkloadEntry},
		{Kind: source.KindVirtualService},
	}
	return reads
}

// refine corrects the plan with what a snapshot shows: the root namespace MeshConfig sets, and
// the namespaces of ServiceEntries that define the host.
func (p clusterPlan) refine(snap *model.Snapshot, q envoycluster.Query) clusterPlan {
	next := p
	if !p.rootKnown {
		next.root = snap.RootNamespace()
	}
	svc := append([]string(nil), p.serviceNamespaces...)
	candidates := hostCandidates(q.Host, q.Namespace)
	for _, se := range snap.ServiceEntries {
		for _, h := range se.Spec.GetHosts() {
			if slices.ContainsFunc(candidates, func(c string) bool { return hostMatches(h, c) }) {
				svc = append(svc, se.Namespace)
			}
		}
	}
	next.serviceNamespaces = namespaces(svc...)
	return next
}

func (p clusterPlan) equal(q clusterPlan) bool {
	return p.root == q.root && p.clientNamespace == q.clientNamespace && p.podNamespace == q.podNamespace &&
		p.allServices == q.allServices && p.allDestinationRules == q.allDestinationRules &&
		slices.Equal(p.serviceNamespaces, q.serviceNamespaces)
}

// parseHostPort splits HOST[:PORT]. A host cannot contain a colon, so the last colon
// separates the port.
func parseHostPort(s string) (string, uint32, error) {
	s = strings.TrimSpace(s)
	host, portStr, hasPort := strings.Cut(s, ":")
	if hasPort {
		if strings.Contains(portStr, ":") {
			return "", 0, errors.New("more than one colon")
		}
		n, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil || n == 0 {
			return "", 0, fmt.Errorf("port %q is not a number from 1 to 65535", portStr)
		}
		return strings.ToLower(host), uint32(n), validateHost(host)
	}
	return strings.ToLower(host), 0, validateHost(host)
}

func validateHost(h string) error {
	if h == "" {
		return errors.New("the host is empty")
	}
	if strings.ContainsAny(h, "/ \t") {
		return errors.New("a host is a name, not a path or URL")
	}
	return nil
}

// serviceNamespace returns the namespace of a Kubernetes service host: the -n namespace for a
// short name, `ns` for `name.ns`, `name.ns.svc` and `name.ns.svc.<domain>`; "" for any other
// host (a ServiceEntry host, whose namespace is found from the ServiceEntries).
func serviceNamespace(host, ns string) string {
	if strings.HasPrefix(host, "*") {
		return ""
	}
	labels := strings.Split(host, ".")
	switch {
	case len(labels) == 1:
		return ns
	case len(labels) == 2:
		return labels[1]
	case len(labels) >= 3 && labels[2] == "svc":
		return labels[1]
	}
	return ""
}

// hostCandidates are the names a host may be defined under: as typed, and expanded to the
// Kubernetes FQDN in the default cluster domain.
func hostCandidates(host, ns string) []string {
	out := []string{host}
	labels := strings.Split(host, ".")
	switch {
	case strings.HasPrefix(host, "*"):
	case len(labels) == 1:
		out = append(out, host+"."+ns+".svc.cluster.local")
	case len(labels) == 2:
		out = append(out, host+".svc.cluster.local")
	case len(labels) == 3 && labels[2] == "svc":
		out = append(out, host+".cluster.local")
	}
	return out
}

// rulesInFull is source.Spec.DestinationRuleInFull for the host q explains: a live
// DestinationRule that cannot apply to the host (index.RuleMayApply) is read in its lookup
// fields only, which is all the explanation reads of it.
func rulesInFull(q envoycluster.Query) func(namespace, host string) bool {
	return func(namespace, host string) bool {
		return index.RuleMayApply(q.Host, q.Namespace, host, namespace)
	}
}

// virtualServicesNeeded is source.Spec.VirtualServiceNeeded for the host q explains: a live
// VirtualService that has no route destination for the host (index.VirtualServiceFilter)
// changes nothing in its explanation, and is left out undecoded.
func virtualServicesNeeded(q envoycluster.Query) func(listed []byte) bool {
	return index.VirtualServiceFilter(q.Host)
}

// hostMatches reports whether the ServiceEntry host h defines host: the same name, or a
// wildcard `*.suffix` covering it.
func hostMatches(h, host string) bool {
	h = strings.ToLower(h)
	if h == host {
		return true
	}
	if strings.HasPrefix(h, "*") {
		return strings.HasSuffix(host, h[1:])
	}
	return false
}

// parseFrom parses --from: pod/NAME (a pod in ns), namespace/NS, or "" (a sidecar in ns).
func parseFrom(s, ns string) (envoycluster.ProxyRef, error) {
	if s == "" {
		return envoycluster.ProxyRef{Kind: envoycluster.ProxyDefault, Namespace: ns}, nil
	}
	kind, name, ok := strings.Cut(s, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return envoycluster.ProxyRef{}, errors.New("want pod/NAME or namespace/NS")
	}
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
		return envoycluster.ProxyRef{Kind: envoycluster.ProxyPod, Namespace: ns, Name: name}, nil
	case "namespace", "namespaces", "ns":
		return envoycluster.ProxyRef{Kind: envoycluster.ProxyNamespace, Namespace: name}, nil
	}
	return envoycluster.ProxyRef{}, fmt.Errorf("unknown kind %q (want pod/NAME or namespace/NS)", kind)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
