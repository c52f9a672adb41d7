package cli

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/render"
)

// Dynamic completion (cobra's __complete, which kubectl's plugin completion calls through
// kubectl_complete-mesh_explain): hosts, pods, deployments, services, waypoints, subsets, ports,
// namespaces and contexts, from the -f files when given, else from the cluster with one cheap
// read bounded by lookupTimeout. A failure completes nothing and prints nothing.

// registerCompletions sets the argument and flag completions of root and its subcommands. The
// root command calls it only when it runs cobra's hidden __complete command: cobra keeps flag
// completions in a package-level map keyed by the flag, which holds every registered flag, its
// value and so these options (and the standard input they read) for the life of the process.
// A command-line run builds one tree and exits; tests and fuzz targets build thousands.
func registerCompletions(o *CommonOptions, root *cobra.Command) {
	_ = root.RegisterFlagCompletionFunc("namespace", o.completeNamespaces)
	_ = root.RegisterFlagCompletionFunc("context", o.completeContexts)
	_ = root.RegisterFlagCompletionFunc("color", fixedCompletions(render.ColorModes...))
	for _, c := range root.Commands() {
		switch c.Name() {
		case "cluster":
			c.ValidArgsFunction = o.completeHosts
			_ = c.RegisterFlagCompletionFunc("output", fixedCompletions(outputCompletions(ClusterFormats)...))
			_ = c.RegisterFlagCompletionFunc("from", o.completeFrom)
			_ = c.RegisterFlagCompletionFunc("subset", o.completeSubsets)
			_ = c.RegisterFlagCompletionFunc("port", o.completePorts)
		case "authz":
			c.ValidArgsFunction = o.completeWorkloads
			_ = c.RegisterFlagCompletionFunc("output", fixedCompletions(outputCompletions(AuthzFormats)...))
		case "check":
			_ = c.RegisterFlagCompletionFunc("output", fixedCompletions(render.CheckFormats...))
			_ = c.RegisterFlagCompletionFunc("fail-on", fixedCompletions(FailOnLevels...))
		case "version":
			_ = c.RegisterFlagCompletionFunc("output", fixedCompletions("json", "yaml"))
		}
	}
}

const noFiles = cobra.ShellCompDirectiveNoFileComp

// completionNamespace is -n, else the kubeconfig context's namespace, else default; it never fails.
func (o *CommonOptions) completionNamespace() string {
	if ns, err := o.Namespace(); err == nil {
		return ns
	}
	return "default"
}

// completionFiles returns the -f objects, or nil when there are no -f files.
func (o *CommonOptions) completionFiles(cmd *cobra.Command) *model.Snapshot {
	if len(o.Filenames) == 0 {
		return nil
	}
	return o.filesSnapshot(completionContext(cmd), o.completionNamespace())
}

func completionContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// withPrefix keeps the values that start with toComplete.
func withPrefix(values []string, toComplete string) []string {
	out := []string{}
	for _, v := range values {
		if strings.HasPrefix(v, toComplete) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// completeHosts completes the HOST of cluster: the Services of -n by name, Services elsewhere as
// name.namespace, and ServiceEntry hosts (files); from a cluster, the Services of -n.
func (o *CommonOptions) completeHosts(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, noFiles
	}
	ns := o.completionNamespace()
	if kind, _, ok := strings.Cut(toComplete, "/"); ok && isServiceKind(kind) {
		// kubectl's svc/NAME: the Services of -n.
		var out []string
		for _, n := range o.workloadNames(cmd, "service", ns) {
			out = append(out, kind+"/"+n)
		}
		return withPrefix(out, toComplete), noFiles
	}
	var hosts []string
	if snap := o.completionFiles(cmd); snap != nil {
		for _, s := range snap.Services {
			if s.Namespace == ns {
				hosts = append(hosts, s.Name)
			} else {
				hosts = append(hosts, s.Name+"."+s.Namespace)
			}
		}
		for _, se := range snap.ServiceEntries {
			hosts = append(hosts, se.Spec.GetHosts()...)
		}
	} else if len(o.Filenames) == 0 {
		ctx, cancel := context.WithTimeout(completionContext(cmd), lookupTimeout)
		defer cancel()
		if cs, err := o.lookupClient(); err == nil {
			if l, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{}); err == nil {
				for _, s := range l.Items {
					hosts = append(hosts, s.Name)
				}
			}
		}
	}
	return withPrefix(hosts, toComplete), noFiles
}

// kindPrefixed completes KIND/NAME: the kinds while no kind is typed, then the names of that
// kind in -n.
func (o *CommonOptions) kindPrefixed(cmd *cobra.Command, toComplete string, kinds []string, names func(kind, ns string) []string) ([]cobra.Completion, cobra.ShellCompDirective) {
	kind, _, typed := strings.Cut(toComplete, "/")
	if !typed {
		var out []string
		for _, k := range kinds {
			out = append(out, k+"/")
		}
		return withPrefix(out, toComplete), noFiles | cobra.ShellCompDirectiveNoSpace
	}
	if !slices.Contains(kinds, kind) {
		return nil, noFiles
	}
	var out []string
	for _, n := range names(kind, o.completionNamespace()) {
		out = append(out, kind+"/"+n)
	}
	return withPrefix(out, toComplete), noFiles
}

// completeWorkloads completes the subject of authz: pod/NAME, deployment/NAME, service/NAME and
// waypoint/NAME in -n.
func (o *CommonOptions) completeWorkloads(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, noFiles
	}
	return o.kindPrefixed(cmd, toComplete, []string{"pod", "deployment", "service", "waypoint"}, func(kind, ns string) []string {
		return o.workloadNames(cmd, kind, ns)
	})
}

// completeFrom completes --from: pod/NAME and deployment/NAME in -n, namespace/NS.
func (o *CommonOptions) completeFrom(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return o.kindPrefixed(cmd, toComplete, []string{"pod", "deployment", "namespace"}, func(kind, ns string) []string {
		if kind == "namespace" {
			return o.namespaceNames(cmd)
		}
		return o.workloadNames(cmd, kind, ns)
	})
}

// workloadNames returns the names of the pods, deployments, services or waypoints (Gateways of
// class istio-waypoint) of ns.
func (o *CommonOptions) workloadNames(cmd *cobra.Command, kind, ns string) []string {
	var objs []objectRef
	if snap := o.completionFiles(cmd); snap != nil {
		objs = snapshotObjects(snap, kind)
	} else if len(o.Filenames) == 0 {
		ctx, cancel := context.WithTimeout(completionContext(cmd), lookupTimeout)
		defer cancel()
		cs, err := o.lookupClient()
		if err != nil {
			return nil
		}
		objs = listObjects(ctx, cs, kind, ns, metav1.ListOptions{Limit: 500})
	}
	var out []string
	for _, r := range objs {
		if r.namespace == ns {
			out = append(out, r.name)
		}
	}
	return out
}

// namespaceNames returns the namespaces of the -f objects, or the cluster's.
func (o *CommonOptions) namespaceNames(cmd *cobra.Command) []string {
	var out []string
	if snap := o.completionFiles(cmd); snap != nil {
		for _, n := range snap.Namespaces {
			out = append(out, n.Name)
		}
		for _, p := range snap.Pods {
			out = append(out, p.Namespace)
		}
		for _, s := range snap.Services {
			out = append(out, s.Namespace)
		}
		return out
	}
	if len(o.Filenames) > 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(completionContext(cmd), lookupTimeout)
	defer cancel()
	if cs, err := o.lookupClient(); err == nil {
		if l, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
			for _, n := range l.Items {
				out = append(out, n.Name)
			}
		}
	}
	return out
}

func (o *CommonOptions) completeNamespaces(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return withPrefix(o.namespaceNames(cmd), toComplete), noFiles
}

// completeContexts completes --context from the kubeconfig (kubectl's own completion lists the
// same contexts).
func (o *CommonOptions) completeContexts(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	cfg, err := o.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, noFiles
	}
	var out []string
	for name := range cfg.Contexts {
		out = append(out, name)
	}
	return withPrefix(out, toComplete), noFiles
}

// hostService returns the namespace and name of the Service HOST names (reviews, reviews.ns,
// reviews.ns.svc...), with ns the -n namespace.
func hostService(host, ns string) (string, string) {
	host, _, _ = strings.Cut(host, ":")
	parts := strings.Split(host, ".")
	if len(parts) >= 2 {
		return parts[1], parts[0]
	}
	return ns, host
}

// completeSubsets completes --subset: the subsets of the DestinationRules for the host of
// args[0], from the files, or from the DestinationRules of the host's namespace and -n.
func (o *CommonOptions) completeSubsets(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, noFiles
	}
	ns := o.completionNamespace()
	svcNs, svc := hostService(args[0], ns)
	matches := func(host, ruleNs string) bool {
		hns, h := hostService(host, ruleNs)
		return h == svc && hns == svcNs || strings.HasPrefix(host, svc+"."+svcNs+".") || host == args[0]
	}
	var out []string
	if snap := o.completionFiles(cmd); snap != nil {
		for _, dr := range snap.DestinationRules {
			if matches(dr.Spec.GetHost(), dr.Namespace) {
				for _, s := range dr.Spec.GetSubsets() {
					out = append(out, s.GetName())
				}
			}
		}
		return withPrefix(out, toComplete), noFiles
	}
	if len(o.Filenames) > 0 {
		return nil, noFiles
	}
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, noFiles
	}
	cfg.Timeout = lookupTimeout
	ic, err := istioclient.NewForConfig(cfg)
	if err != nil {
		return nil, noFiles
	}
	ctx, cancel := context.WithTimeout(completionContext(cmd), lookupTimeout)
	defer cancel()
	nss := []string{ns}
	if svcNs != ns {
		nss = append(nss, svcNs)
	}
	for _, n := range nss {
		l, err := ic.NetworkingV1().DestinationRules(n).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, dr := range l.Items {
			if matches(dr.Spec.GetHost(), dr.Namespace) {
				for _, s := range dr.Spec.GetSubsets() {
					out = append(out, s.GetName())
				}
			}
		}
	}
	return withPrefix(out, toComplete), noFiles
}

// completePorts completes --port: the ports of the Service of args[0].
func (o *CommonOptions) completePorts(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, noFiles
	}
	svcNs, svc := hostService(args[0], o.completionNamespace())
	var out []string
	if snap := o.completionFiles(cmd); snap != nil {
		for _, s := range snap.Services {
			if s.Name == svc && s.Namespace == svcNs {
				for _, p := range s.Spec.Ports {
					out = append(out, strconv.Itoa(int(p.Port)))
				}
			}
		}
		return withPrefix(out, toComplete), noFiles
	}
	if len(o.Filenames) > 0 {
		return nil, noFiles
	}
	ctx, cancel := context.WithTimeout(completionContext(cmd), lookupTimeout)
	defer cancel()
	if cs, err := o.lookupClient(); err == nil {
		if s, err := cs.CoreV1().Services(svcNs).Get(ctx, svc, metav1.GetOptions{}); err == nil {
			for _, p := range s.Spec.Ports {
				out = append(out, strconv.Itoa(int(p.Port)))
			}
		}
	}
	return withPrefix(out, toComplete), noFiles
}
