package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/ztunnelauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/render"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// FormatZtunnel is the -o value that prints the ztunnel Authorizations themselves.
const FormatZtunnel = render.FormatZtunnel

// AuthzFormats are the -o values of `authz`.
var AuthzFormats = []string{render.FormatTable, render.FormatWide, render.FormatJSON, render.FormatYAML, FormatZtunnel}

// AuthzOptions are the inputs of `authz pod/NAME | deployment/NAME | -l SELECTOR`.
type AuthzOptions struct {
	*CommonOptions

	// Output is -o.
	Output string
	// Selector is -l.
	Selector string

	// Load reads the snapshot (source.Load); Explain is the engine (ztunnelauthz.Explain).
	Load    LoadFunc
	Explain func(*model.Snapshot, ztunnelauthz.Query) ([]*explain.Result, error)

	query   ztunnelauthz.Query
	root    string
	rootSet bool
	spec    source.Spec
	printer render.Printer
	// listPods: list the pods of -n even for pod/NAME (after the pod was not found by name).
	listPods bool
}

// NewCmdAuthz returns the `authz` command. runF replaces Run in tests (nil: Run).
func NewCmdAuthz(common *CommonOptions, runF func(context.Context, *AuthzOptions) error) *cobra.Command {
	o := &AuthzOptions{CommonOptions: common, Output: render.FormatTable}
	cmd := &cobra.Command{
		Use:   "authz (pod/NAME | deployment/NAME | -l SELECTOR)",
		Short: "Show the ztunnel Authorizations of an ambient workload, and where every rule comes from",
		Long: longDesc(`
			Show the Authorizations istiod sends to ztunnel for an ambient workload, and where every
			group, rule and match comes from: the AuthorizationPolicies of the root namespace, the
			workload's namespace and its selector, the effective PeerAuthentication (mesh,
			namespace and workload level, with port-level mTLS), and istiod's static STRICT policy.

			The workload is a pod, the pods of a deployment, or the pods a label selector matches,
			in the -n namespace. With several pods, json and yaml print a List.

			The answer needs every PeerAuthentication and AuthorizationPolicy of the workload's
			namespace and the root namespace: when either kind cannot be read (forbidden, say),
			nothing is printed and the command fails, naming what could not be read and why.

			Output formats: table (default), wide (adds what each value overrode), json and yaml
			(the explanation document, docs/output.md), ztunnel (the Authorizations as istiod
			sends them, in their proto JSON spelling as YAML).`),
		Example: examples(`
			# The authorization of one pod
			kubectl mesh-explain authz pod/productpage-v1-6b746f74dc-2r8hz -n bookinfo

			# Every pod of a deployment, as YAML
			kubectl mesh-explain authz deployment/reviews-v1 -n bookinfo -o yaml

			# Pods by label, offline from manifests, as the Authorizations ztunnel receives
			kubectl mesh-explain authz -l app=ratings -n bookinfo -f manifests/ -R -o ztunnel`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf(cmd, "authz takes one pod/NAME or deployment/NAME, got %d arguments", len(args))
			}
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return []string{"pod/", "deployment/"}, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		},
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
	fs.StringVarP(&o.Output, "output", "o", o.Output, "Output format: "+strings.Join(AuthzFormats, "|"))
	fs.StringVarP(&o.Selector, "selector", "l", o.Selector, "Explain the pods in -n that match this label selector (app=a,version!=v2)")
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletions(AuthzFormats...))
	return cmd
}

// Complete turns the argument and flags into the engine query, the read plan and the printer.
func (o *AuthzOptions) Complete(cmd *cobra.Command, args []string) error {
	if o.Load == nil {
		o.Load = source.Load
	}
	if o.Explain == nil {
		o.Explain = ztunnelauthz.Explain
	}
	switch {
	case len(args) == 1 && o.Selector != "":
		return usageErrorf(cmd, "give either %s or -l, not both", args[0])
	case len(args) == 0 && o.Selector == "":
		return usageErrorf(cmd, "name the workload: pod/NAME, deployment/NAME or -l SELECTOR")
	}
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	o.query = ztunnelauthz.Query{Namespace: ns, Revision: o.Revision}
	if len(args) == 1 {
		w, err := parseWorkload(args[0])
		if err != nil {
			return usageErrorf(cmd, "invalid workload %q: %v", args[0], err)
		}
		o.query.Workload = w
	} else {
		if _, err := labels.Parse(o.Selector); err != nil {
			return usageErrorf(cmd, "invalid selector %q: %v", o.Selector, err)
		}
		o.query.Selector = o.Selector
	}

	p, err := render.For(o.Output, o.renderOptions(AuthzFormats))
	if err != nil {
		return &UsageError{Cmd: cmd, Err: err}
	}
	o.printer = p

	root, err := o.meshRootNamespace()
	if err != nil {
		return err
	}
	o.root, o.rootSet = firstNonEmpty(root, o.IstioNamespace), root != ""
	o.spec = o.sourceSpec(ns)
	return nil
}

// Validate checks flag combinations.
func (o *AuthzOptions) Validate(cmd *cobra.Command) error {
	return o.CommonOptions.Validate(cmd)
}

// reads is what `authz` reads from a cluster: the workload's and the root namespace's
// Namespace objects (ambient enrolment, by get), the pod of pod/NAME (by get) or the pods (and
// deployments) of -n, the PeerAuthentications and AuthorizationPolicies of -n and the root
// namespace, and the Services of -n (waypoint and service-targeted policies).
func (o *AuthzOptions) reads(root string) []source.Read {
	ns := o.query.Namespace
	pods := source.Read{Kind: source.KindPod, Namespaces: namespaces(ns)}
	if o.podByName() {
		pods.Names = []string{o.query.Workload.Name}
	}
	reads := []source.Read{
		{Kind: source.KindNamespace, Namespaces: namespaces(ns, root)},
		pods,
		{Kind: source.KindPeerAuthentication, Namespaces: namespaces(ns, root)},
		{Kind: source.KindAuthorizationPolicy, Namespaces: namespaces(ns, root)},
		{Kind: source.KindService, Namespaces: namespaces(ns)},
	}
	if o.query.Workload.Kind == "deployment" {
		reads = append(reads, source.Read{Kind: source.KindDeployment, Namespaces: namespaces(ns)})
	}
	return reads
}

// load reads the planned kinds, and reads again when MeshConfig names another root namespace
// than the one assumed. Files are filtered by the same plan and go through the same
// correction, so files and a cluster with the same objects give the same snapshot.
func (o *AuthzOptions) load(ctx context.Context) (*model.Snapshot, error) {
	root := o.root
	for {
		snap, err := o.Load(ctx, o.planned(o.spec, o.reads(root)))
		if err != nil || o.rootSet || snap.RootNamespace() == root {
			return snap, err
		}
		root = snap.RootNamespace()
		o.rootSet = true
	}
}

// podByName reports whether the query is pod/NAME, read by name rather than by listing the
// pods of its namespace.
func (o *AuthzOptions) podByName() bool {
	return o.query.Selector == "" && o.query.Workload.Kind == "pod" && !o.listPods
}

// Run loads the snapshot, explains the workload(s) and prints the results.
func (o *AuthzOptions) Run(ctx context.Context) error {
	snap, results, err := o.loadAndExplain(ctx)
	if notFound := (*explain.NotFoundError)(nil); snap != nil && errors.As(err, &notFound) && o.podByName() {
		// The pod read by name is not there: read again, listing its namespace, so that the
		// error lists the pods that are.
		o.listPods = true
		snap, results, err = o.loadAndExplain(ctx)
	}
	if snap == nil {
		return err
	}
	printed := reportIssues(o.ErrOut, snap)
	if err != nil {
		return err
	}
	if len(results) == 0 {
		if o.query.Selector != "" {
			return &explain.NotFoundError{What: fmt.Sprintf("pods matching %q in namespace %s", o.query.Selector, o.query.Namespace)}
		}
		return &explain.NotFoundError{What: fmt.Sprintf("%s/%s in namespace %s", o.query.Workload.Kind, o.query.Workload.Name, o.query.Namespace)}
	}
	if o.Output == FormatZtunnel {
		for _, r := range results {
			reportWarnings(o.ErrOut, r.Warnings, printed)
		}
	}
	if o.query.Workload.Kind == "pod" && len(results) == 1 {
		return o.printer.Print(o.Out, results[0])
	}
	return o.printer.PrintList(o.Out, results)
}

// loadAndExplain loads the snapshot and explains the query. A load that fails, and a snapshot
// that cannot answer (its other issues reported), give no snapshot and the error.
func (o *AuthzOptions) loadAndExplain(ctx context.Context) (*model.Snapshot, []*explain.Result, error) {
	snap, err := o.load(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := o.unanswerable(snap); err != nil {
		reportIssues(o.ErrOut, withoutRequired(snap))
		return nil, nil, err
	}
	results, err := o.Explain(snap, o.query)
	return snap, results, err
}

// requiredKinds are the kinds without which no ztunnel policy can be explained: the
// PeerAuthentications decide the mTLS policy and the AuthorizationPolicies the rest, and a
// missing one may change any of it.
var requiredKinds = []requiredKind{
	{source.KindPeerAuthentication, "PeerAuthentications"},
	{source.KindAuthorizationPolicy, "AuthorizationPolicies"},
}

type requiredKind struct{ kind, plural string }

// unanswerable returns the error for a snapshot that lacks a required kind: `cannot explain
// ztunnel policy for pod foo/a: PeerAuthentications could not be read (forbidden: ...)`.
func (o *AuthzOptions) unanswerable(snap *model.Snapshot) error {
	var missing []string
	for _, k := range requiredKinds {
		if why, ok := snap.Incomplete[k.kind]; ok {
			missing = append(missing, fmt.Sprintf("%s could not be read (%s)", k.plural, why))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("cannot explain ztunnel policy for %s: %s", o.subject(), strings.Join(missing, "; "))
}

// subject names what was asked about: pod foo/a, deployment foo/web, or the pods of a selector.
func (o *AuthzOptions) subject() string {
	if o.query.Selector != "" {
		return fmt.Sprintf("pods matching %q in namespace %s", o.query.Selector, o.query.Namespace)
	}
	return fmt.Sprintf("%s %s/%s", o.query.Workload.Kind, o.query.Namespace, o.query.Workload.Name)
}

// withoutRequired returns snap without the load issues that say a required kind could not be
// read (the error says it already).
func withoutRequired(snap *model.Snapshot) *model.Snapshot {
	required := func(kind string) bool {
		return slices.ContainsFunc(requiredKinds, func(r requiredKind) bool { return r.kind == kind })
	}
	out := *snap
	out.Issues = nil
	for _, is := range snap.Issues {
		if !slices.ContainsFunc(is.Incomplete, required) {
			out.Issues = append(out.Issues, is)
		}
	}
	return &out
}

// parseWorkload parses pod/NAME or deployment/NAME (kubectl's short forms allowed).
func parseWorkload(s string) (ztunnelauthz.WorkloadRef, error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return ztunnelauthz.WorkloadRef{}, errors.New("want pod/NAME or deployment/NAME")
	}
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
		return ztunnelauthz.WorkloadRef{Kind: "pod", Name: name}, nil
	case "deployment", "deployments", "deploy":
		return ztunnelauthz.WorkloadRef{Kind: "deployment", Name: name}, nil
	}
	return ztunnelauthz.WorkloadRef{}, fmt.Errorf("unknown kind %q (want pod/NAME or deployment/NAME)", kind)
}
