package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/sidecarauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/waypointauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/ztunnelauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/plan"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/render"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// FormatZtunnel is the -o value that prints the ztunnel Authorizations themselves.
const FormatZtunnel = render.FormatZtunnel

// AuthzFormats are the -o values of `authz`.
var AuthzFormats = []string{render.FormatTable, render.FormatWide, render.FormatJSON, render.FormatYAML, FormatZtunnel, render.FormatEnvoy}

// AuthzOptions are the inputs of `authz pod/NAME | deployment/NAME | service/NAME |
// waypoint/NAME | -l SELECTOR`.
type AuthzOptions struct {
	*CommonOptions

	// Output is -o.
	Output string
	// Selector is -l.
	Selector string

	// Load reads the snapshot (source.Load); Explain is the engine
	// (ExplainAuthz: ztunnel or sidecar, per pod).
	Load    LoadFunc
	Explain func(*model.Snapshot, ztunnelauthz.Query) ([]*explain.Result, error)
	// ExplainWaypoint is the engine of waypoint/NAME (waypointauthz.Explain).
	ExplainWaypoint func(*model.Snapshot, waypointauthz.Query) (*explain.Result, error)

	query   ztunnelauthz.Query
	plan    *plan.Authz
	printer render.Printer
	// waypoint is the query of waypoint/NAME, wplan its reads.
	waypoint *waypointauthz.Query
	wplan    *plan.Waypoint
}

// NewCmdAuthz returns the `authz` command. runF replaces Run in tests (nil: Run).
func NewCmdAuthz(common *CommonOptions, runF func(context.Context, *AuthzOptions) error) *cobra.Command {
	o := &AuthzOptions{CommonOptions: common, Output: render.FormatTable}
	cmd := &cobra.Command{
		Use:   "authz (pod/NAME | deployment/NAME | service/NAME | waypoint/NAME | -l SELECTOR)",
		Short: "Show who gets into a workload (ztunnel or sidecar), and where every rule comes from",
		Long: longDesc(`
			Show what decides who gets into a workload, and where every rule comes from. The
			data plane of each pod decides the answer:

			- an ambient pod: the Authorizations istiod sends to ztunnel, every group, rule and
			  match traced to the AuthorizationPolicies of the root namespace, the workload's
			  namespace and its selector, the effective PeerAuthentication (mesh, namespace and
			  workload level, with port-level mTLS), and istiod's static STRICT policy;
			- a pod with a sidecar (the sidecar.istio.io/status annotation): the filter chains of
			  the sidecar's inbound listener (virtualInbound) per port, TLS or plaintext from the
			  effective PeerAuthentication, and the RBAC and ext_authz filters istiod builds from
			  the AuthorizationPolicies, every permission and principal traced to its field;
			- a pod with neither is not captured by ztunnel, and the answer says so.

			A waypoint's pod (its istio-proxy runs as a waypoint) is answered by its waypoint,
			as authz waypoint/NAME. A gateway's pod (its istio-proxy runs as a router: an
			ingress or egress gateway) has no sidecar answer: naming only such pods is an error,
			and beside other pods they are left out with a warning, unless ztunnel captures the
			gateway, which then gets the ztunnel answer.

			waypoint/NAME (or gateway/NAME) explains an ambient waypoint (a Gateway of class
			istio-waypoint in -n): which Services, ServiceEntries and workloads it serves and why
			(the istio.io/use-waypoint labels, and its own Service, which must hold its address),
			and the filter chains of its main_internal listener with their RBAC and ext_authz
			filters, every permission and principal traced to the AuthorizationPolicy field and
			the targetRef that attached it. A Gateway without status.addresses is answered as it
			will be once istiod has programmed it, and the answer says so.

			The workload is a pod, the pods of a deployment, the pods a service selects (as
			kubectl resolves svc/NAME), or the pods a label selector matches, in the -n
			namespace. With several pods, json and yaml print a List.

			The answer needs every PeerAuthentication and AuthorizationPolicy of the workload's
			namespace and the root namespace: when either kind cannot be read (forbidden, say),
			nothing is printed and the command fails, naming what could not be read and why.

			Output formats: table (default), wide (adds what each value overrode), json and yaml
			(the explanation document, docs/output.md), ztunnel for an ambient pod (the
			Authorizations as istiod sends them, in their proto JSON spelling as YAML), envoy for a
			sidecar pod (the virtualInbound filter chains with their authorization filters, in
			protojson, in istiod's order) or a waypoint (its main_internal filter chains).`),
		Example: examples(`
			# The authorization of one pod
			kubectl mesh-explain authz pod/productpage-v1-6b746f74dc-2r8hz -n bookinfo

			# Every pod of a deployment, as YAML
			kubectl mesh-explain authz deployment/reviews-v1 -n bookinfo -o yaml

			# Every pod behind a service
			kubectl mesh-explain authz svc/reviews -n bookinfo

			# Pods by label, offline from manifests, as the Authorizations ztunnel receives
			kubectl mesh-explain authz -l app=ratings -n bookinfo -f manifests/ -R -o ztunnel

			# A sidecar pod, offline, as the inbound filter chains its sidecar receives
			kubectl mesh-explain authz pod/productpage-v1 -n bookinfo -f manifests/ -R -o envoy

			# What a waypoint serves and enforces
			kubectl mesh-explain authz waypoint/waypoint -n bookinfo`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf(cmd, "authz takes one pod/NAME, deployment/NAME, service/NAME or waypoint/NAME, got %d arguments", len(args))
			}
			return nil
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
	addShowDefaultsFlag(o.CommonOptions, cmd)
	fs.StringVarP(&o.Output, "output", "o", o.Output, outputUsage(AuthzFormats))
	fs.StringVarP(&o.Selector, "selector", "l", o.Selector, "Explain the pods in -n that match this label selector (app=a,version!=v2)")
	return cmd
}

// Complete turns the argument and flags into the engine query, the read plan and the printer.
func (o *AuthzOptions) Complete(cmd *cobra.Command, args []string) error {
	if o.Load == nil {
		o.Load = source.Load
	}
	if o.Explain == nil {
		o.Explain = ExplainAuthz
	}
	if o.ExplainWaypoint == nil {
		o.ExplainWaypoint = waypointauthz.Explain
	}
	switch {
	case len(args) == 1 && o.Selector != "":
		return usageErrorf(cmd, "give either %s or -l, not both", args[0])
	case len(args) == 0 && o.Selector == "":
		return usageErrorf(cmd, "name the workload: pod/NAME, deployment/NAME, service/NAME, waypoint/NAME or -l SELECTOR")
	}
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	o.query = ztunnelauthz.Query{Namespace: ns, Revision: o.Revision}
	if len(args) == 1 && isWaypointArg(args[0]) {
		name := args[0][strings.Index(args[0], "/")+1:]
		if name == "" || strings.Contains(name, "/") {
			return usageErrorf(cmd, "invalid waypoint %q: want waypoint/NAME or gateway/NAME", args[0])
		}
		o.waypoint = &waypointauthz.Query{Namespace: ns, Name: name, Protos: render.PrintsMessages(o.Output)}
	} else if len(args) == 1 {
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

	p, err := printerFor(o.Output, o.renderOptions(AuthzFormats))
	if err != nil {
		return &UsageError{Cmd: cmd, Err: err}
	}
	o.printer = p

	root, err := o.meshRootNamespace()
	if err != nil {
		return err
	}
	if o.waypoint != nil {
		if o.Output == FormatZtunnel {
			return usageErrorf(cmd, "-o ztunnel shows what ztunnel gets: use -o envoy for the filter chains of waypoint/%s", o.waypoint.Name)
		}
		o.wplan = plan.NewWaypoint(ns, o.waypoint.Name, o.sourceSpec(ns), firstNonEmpty(root, o.IstioNamespace), root != "")
		return nil
	}
	q := plan.AuthzQuery{Namespace: ns, Kind: o.query.Workload.Kind, Name: o.query.Workload.Name, Selector: o.query.Selector}
	o.plan = plan.NewAuthz(q, o.sourceSpec(ns), firstNonEmpty(root, o.IstioNamespace), root != "")
	return nil
}

// Validate checks flag combinations.
func (o *AuthzOptions) Validate(cmd *cobra.Command) error {
	return o.CommonOptions.Validate(cmd)
}

// Run plans the reads, loads the snapshot, explains the workload(s) and prints the results.
func (o *AuthzOptions) Run(ctx context.Context) error {
	if o.waypoint != nil {
		return o.runWaypoint(ctx)
	}
	snap, results, err := o.plan.Answer(ctx, o.loader(o.Load), func(snap *model.Snapshot) ([]*explain.Result, error) {
		return o.Explain(snap, o.query)
	})
	printed := reportIssues(o.ErrOut, snap)
	var proxies *proxyPodsError
	if errors.As(err, &proxies) {
		if ns, name := proxies.waypoint(); name != "" && o.Output != FormatZtunnel {
			// Every pod named runs the one waypoint: its answer is the waypoint's.
			fmt.Fprintln(o.ErrOut, proxies.answeringWaypoint(ns, name))
			return o.runWaypointOf(ctx, ns, name)
		}
	}
	if err != nil {
		return notFoundUnread(err, snap)
	}
	if err := o.checkFormat(results); err != nil {
		return err
	}
	gaps := unread(snap)
	for _, r := range results {
		gaps.mark(r)
	}
	if o.Output == FormatZtunnel || o.Output == render.FormatEnvoy || kubectlFormat(o.Output) {
		for _, r := range results {
			reportWarnings(o.ErrOut, r.Warnings, printed)
		}
	}
	var err2 error
	if o.query.Workload.Kind == "pod" && len(results) == 1 {
		err2 = o.printer.Print(o.Out, results[0])
	} else {
		err2 = o.printer.PrintList(o.Out, results)
	}
	if err2 != nil {
		return err2
	}
	return o.incomplete(gaps)
}

// isWaypointArg reports whether the argument is waypoint/NAME (or waypoints/NAME), or names the
// waypoint as kubectl names its Gateway: gateway/NAME, gateways/NAME, gtw/NAME.
func isWaypointArg(s string) bool {
	kind, _, ok := strings.Cut(s, "/")
	switch strings.ToLower(kind) {
	case "waypoint", "waypoints", "gateway", "gateways", "gtw":
		return ok
	}
	return false
}

// runWaypointOf answers `authz waypoint/NAME -n NS`, for pods that are its instances.
func (o *AuthzOptions) runWaypointOf(ctx context.Context, ns, name string) error {
	root, err := o.meshRootNamespace()
	if err != nil {
		return err
	}
	o.waypoint = &waypointauthz.Query{Namespace: ns, Name: name, Protos: render.PrintsMessages(o.Output)}
	o.wplan = plan.NewWaypoint(ns, name, o.sourceSpec(ns), firstNonEmpty(root, o.IstioNamespace), root != "")
	return o.runWaypoint(ctx)
}

// runWaypoint answers `authz waypoint/NAME`: the waypoint's reads, its explanation, printed.
func (o *AuthzOptions) runWaypoint(ctx context.Context) error {
	snap, err := o.wplan.Load(ctx, o.loader(o.Load))
	printed := reportIssues(o.ErrOut, snap)
	if err != nil {
		return err
	}
	if why, ok := snap.Incomplete[source.KindAuthorizationPolicy]; ok {
		return fmt.Errorf("cannot explain waypoint %s/%s: AuthorizationPolicies could not be read (%s)", o.waypoint.Namespace, o.waypoint.Name, why)
	}
	res, err := o.ExplainWaypoint(snap, *o.waypoint)
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

// parseWorkload parses pod/NAME, deployment/NAME or service/NAME (kubectl's short forms
// allowed).
func parseWorkload(s string) (ztunnelauthz.WorkloadRef, error) {
	const want = "want pod/NAME, deployment/NAME, service/NAME or waypoint/NAME"
	kind, name, ok := strings.Cut(s, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return ztunnelauthz.WorkloadRef{}, errors.New(want)
	}
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
		return ztunnelauthz.WorkloadRef{Kind: "pod", Name: name}, nil
	case "deployment", "deployments", "deploy":
		return ztunnelauthz.WorkloadRef{Kind: "deployment", Name: name}, nil
	case "service", "services", "svc":
		return ztunnelauthz.WorkloadRef{Kind: "service", Name: name}, nil
	}
	return ztunnelauthz.WorkloadRef{}, fmt.Errorf("unknown kind %q (%s)", kind, want)
}

// ExplainAuthz explains each pod with the engine of its data plane: a pod with a sidecar (the
// sidecar.istio.io/status annotation; istio-cni never captures such a pod) gets the sidecar
// answer, every other pod the ztunnel answer (which says when a pod is not captured), with the
// waypoints of its services when they use one.
func ExplainAuthz(snap *model.Snapshot, q ztunnelauthz.Query) ([]*explain.Result, error) {
	var sidecars *sidecarauthz.Explainer
	var proxies, captured []proxyPod
	results, err := ztunnelauthz.ExplainEach(snap, q, func(pod *corev1.Pod) *explain.Result {
		if p, ok := asProxyPod(pod); ok {
			if p.typ == model.ProxyRouter && !sidecarauthz.HasSidecar(pod) && ztunnelauthz.Ambient(snap, pod) {
				// A gateway ztunnel captures (deployed for a Gateway of class istio in an
				// ambient namespace): ztunnel's part of its inbound policy is an answer.
				captured = append(captured, p)
				return nil
			}
			proxies = append(proxies, p)
			return leftOut
		}
		if sidecarauthz.HasSidecar(pod) {
			if sidecars == nil {
				sidecars = sidecarauthz.NewExplainer(snap)
			}
			return sidecars.ExplainPod(pod)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if results, err = leaveOutProxyPods(results, proxies); err != nil {
		return nil, err
	}
	for _, p := range captured {
		if r := resultOf(results, p.pod); r != nil {
			r.Warnings = append(r.Warnings, p.ztunnelPartOnly())
		}
	}
	for _, r := range results {
		if pod := resultPod(snap, r); pod != nil && !isSidecarResult(r) {
			// The waypoints of the pod's services, after ztunnel's answer.
			if s := waypointauthz.PodSection(snap, pod); s != nil {
				r.Sections = append(r.Sections, *s)
			}
		}
	}
	return results, nil
}

// resultPod is the pod a Result is about.
func resultPod(snap *model.Snapshot, r *explain.Result) *corev1.Pod {
	name := strings.TrimPrefix(r.Subject.Workload, "pod/")
	for _, p := range snap.Pods {
		if p.Namespace == r.Subject.Namespace && p.Name == name {
			return p
		}
	}
	return nil
}

// isSidecarResult reports whether a Result is the sidecar answer.
func isSidecarResult(r *explain.Result) bool {
	return len(r.Sections) > 0 && r.Sections[0].Title == sidecarauthz.DataPlaneSection
}

// checkFormat rejects -o ztunnel for a sidecar pod and -o envoy for any other pod, naming the
// format that fits.
func (o *AuthzOptions) checkFormat(results []*explain.Result) error {
	for _, r := range results {
		switch {
		case o.Output == FormatZtunnel && isSidecarResult(r):
			return &UsageError{Err: fmt.Errorf("%s has a sidecar, which ztunnel does not serve: use -o envoy for its inbound filter chains", r.Subject.Workload)}
		case o.Output == render.FormatEnvoy && !isSidecarResult(r):
			return &UsageError{Err: fmt.Errorf("%s has no sidecar (-o envoy shows a sidecar's inbound filter chains): use -o ztunnel for the Authorizations ztunnel gets", r.Subject.Workload)}
		}
	}
	return nil
}
