package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/plan"
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
	// From is --from: pod/NAME, deployment/NAME or namespace/NS.
	From string
	// AllNamespaces is -A: read DestinationRules in every namespace, to report those that
	// target the host but are never consulted for the client (D2).
	AllNamespaces bool

	// Load reads the snapshot (source.Load); Explain is the engine (envoycluster.Explain).
	Load    LoadFunc
	Explain func(*model.Snapshot, envoycluster.Query) (*explain.Result, error)

	query   envoycluster.Query
	plan    *plan.Cluster
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

			HOST is a Service name resolved in -n (reviews, or kubectl's svc/reviews),
			name.namespace (reviews.bookinfo), an FQDN (reviews.bookinfo.svc.cluster.local), or a
			ServiceEntry host (api.example.com).
			Without a port every port of the service is explained; without --subset the default
			cluster and every subset cluster.

			The client is a sidecar in the -n namespace unless --from names a pod (its namespace,
			labels and IPs count), a deployment (its first pod by name, as istioctl picks one for
			deployment/NAME) or another namespace. DestinationRules are looked up where istiod
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

			# As seen by a pod of a deployment
			kubectl mesh-explain cluster reviews -n bookinfo --from deploy/productpage-v1

			# As the ingress gateway gets them (a gateway's pod: its istio-proxy runs as a router)
			kubectl mesh-explain cluster reviews.bookinfo -n istio-ingress --from deploy/istio-ingressgateway

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
	addShowDefaultsFlag(o.CommonOptions, cmd)
	fs.StringVarP(&o.Output, "output", "o", o.Output, outputUsage(ClusterFormats))
	fs.Uint32Var(&o.Port, "port", o.Port, "Explain only this service port (same as HOST:PORT)")
	fs.StringVar(&o.Subset, "subset", o.Subset, "Explain only this DestinationRule subset")
	fs.StringVar(&o.From, "from", o.From, "The client proxy: pod/NAME or deployment/NAME (its first pod) in -n, a sidecar or a gateway's, or namespace/NS (default: a sidecar in -n)")
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces,
		"Also read DestinationRules in every namespace, to report rules that target this host but can never apply (D2)")
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

	p, err := printerFor(o.Output, o.renderOptions(ClusterFormats))
	if err != nil {
		return &UsageError{Cmd: cmd, Err: err}
	}
	o.printer = p

	root, err := o.meshRootNamespace()
	if err != nil {
		return err
	}
	o.plan = plan.NewCluster(clusterPlanQuery(o.query), o.sourceSpec(ns), firstNonEmpty(root, o.IstioNamespace), root != "", o.AllNamespaces)
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

// Run plans the reads, loads the snapshot, explains the host and prints the result.
func (o *ClusterOptions) Run(ctx context.Context) error {
	snap, res, err := o.plan.Answer(ctx, o.loader(o.Load), func(snap *model.Snapshot) (*explain.Result, error) {
		return o.Explain(snap, o.query)
	})
	printed := reportIssues(o.ErrOut, snap)
	if err != nil {
		return notFoundUnread(err, snap)
	}
	gaps := unread(snap)
	gaps.mark(res)
	if o.Output == render.FormatEnvoy || kubectlFormat(o.Output) {
		reportWarnings(o.ErrOut, res.Warnings, printed)
	}
	if err := o.printer.Print(o.Out, res); err != nil {
		return err
	}
	return o.incomplete(gaps)
}

// clusterPlanQuery is what of q decides the reads.
func clusterPlanQuery(q envoycluster.Query) plan.ClusterQuery {
	pq := plan.ClusterQuery{Host: q.Host, Namespace: q.Namespace, ClientNamespace: q.Namespace}
	switch q.From.Kind {
	case envoycluster.ProxyPod:
		pq.ClientNamespace, pq.ClientPod = q.From.Namespace, q.From.Name
	case envoycluster.ProxyDeployment:
		pq.ClientNamespace, pq.ClientDeployment = q.From.Namespace, q.From.Name
	case envoycluster.ProxyNamespace:
		pq.ClientNamespace = q.From.Namespace
	}
	return pq
}

// parseHostPort splits HOST[:PORT]. A host cannot contain a colon, so the last colon
// separates the port. kubectl's svc/NAME (service/, services/) stands for the Service NAME in
// -n, that is the short host NAME.
func parseHostPort(s string) (string, uint32, error) {
	s = strings.TrimSpace(s)
	host, portStr, hasPort := strings.Cut(s, ":")
	if kind, name, ok := strings.Cut(host, "/"); ok && isServiceKind(kind) {
		if name == "" || strings.ContainsAny(name, "./") {
			return "", 0, fmt.Errorf("%s/NAME names a Service in -n: %q is not a Service name", kind, name)
		}
		host = name
	}
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

// isServiceKind reports whether kind is kubectl's spelling of Services.
func isServiceKind(kind string) bool {
	switch strings.ToLower(kind) {
	case "svc", "service", "services":
		return true
	}
	return false
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

// parseFrom parses --from: pod/NAME (a pod in ns), deployment/NAME (its first pod),
// namespace/NS, or "" (a sidecar in ns).
func parseFrom(s, ns string) (envoycluster.ProxyRef, error) {
	const want = "want pod/NAME, deployment/NAME or namespace/NS"
	if s == "" {
		return envoycluster.ProxyRef{Kind: envoycluster.ProxyDefault, Namespace: ns}, nil
	}
	kind, name, ok := strings.Cut(s, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return envoycluster.ProxyRef{}, errors.New(want)
	}
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
		return envoycluster.ProxyRef{Kind: envoycluster.ProxyPod, Namespace: ns, Name: name}, nil
	case "deployment", "deployments", "deploy":
		return envoycluster.ProxyRef{Kind: envoycluster.ProxyDeployment, Namespace: ns, Name: name}, nil
	case "namespace", "namespaces", "ns":
		return envoycluster.ProxyRef{Kind: envoycluster.ProxyNamespace, Namespace: name}, nil
	}
	return envoycluster.ProxyRef{}, fmt.Errorf("unknown kind %q (%s)", kind, want)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
