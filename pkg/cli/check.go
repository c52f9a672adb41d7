package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/check"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/plan"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/render"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// FailOnLevels are the --fail-on values of `check`, most severe first.
var FailOnLevels = []string{string(explain.SeverityError), string(explain.SeverityWarning), string(explain.SeverityInfo), "never"}

// CheckOptions are the inputs of `check`.
type CheckOptions struct {
	*CommonOptions

	// Output is -o.
	Output string
	// AllNamespaces is -A: check the clients and workloads of every namespace.
	AllNamespaces bool
	// FailOn is --fail-on.
	FailOn string
	// Ignore is --ignore: diagnostic IDs to silence.
	Ignore []string
	// Diff is --diff: only the findings the --overlay change introduces or removes.
	Diff bool

	// Load reads the snapshot (source.Load); Check is the engine (check.Run).
	Load  LoadFunc
	Check func(*model.Snapshot, check.Options) (*explain.CheckReport, error)

	// namespaces are the namespaces checked (nil: all).
	namespaces []string
	plan       *plan.Check
	printer    render.CheckPrinter
}

// FindingsError is a check that found something at or above --fail-on: Main prints it and
// exits ExitFindings.
type FindingsError struct {
	Count  int
	FailOn string
}

// Error says how many findings failed the check.
func (e *FindingsError) Error() string {
	s := "s"
	if e.Count == 1 {
		s = ""
	}
	return fmt.Sprintf("check found %d finding%s at or above %s (--fail-on %s)", e.Count, s, e.FailOn, e.FailOn)
}

// NewCmdCheck returns the `check` command. runF replaces Run in tests (nil: Run).
func NewCmdCheck(common *CommonOptions, runF func(context.Context, *CheckOptions) error) *cobra.Command {
	o := &CheckOptions{CommonOptions: common, Output: render.FormatTable, FailOn: string(explain.SeverityError)}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Report every silent failure of the mesh configuration in a namespace, the mesh or a set of files",
		Long: longDesc(`
			Report every finding the cluster and authz commands would report, for everything in
			scope: every host (Service and ServiceEntry) with every port and subset, as seen from
			every client that sees it differently, every workload (the ztunnel
			answer for an ambient pod, the sidecar answer for a pod with a sidecar), and every
			waypoint (a Gateway of class istio-waypoint, answered as authz waypoint/NAME).
			Each finding is reported once, with the hosts, clients, workloads and waypoints it
			affects, and the object and field to change (file:line when read from files).

			Clients are the default sidecar of each namespace, every injected pod, and every
			gateway's pod (its istio-proxy runs as a router: explained as cluster --from
			explains it); those that must get the same answer (the same namespace and kind of
			proxy, and the same values of the labels the workloadSelectors of Sidecars,
			EnvoyFilters and DestinationRules read) are explained once. A gateway's pod is not a
			workload unless ztunnel captures it.

			Scope: the -n namespace (default: the namespace of the kubeconfig context), every
			namespace with -A, or, with -f and no -n, every namespace of the files. With
			--overlay and no -n, every namespace: a changed rule reaches clients anywhere.
			--diff (with --overlay) reports only the findings the change introduces or removes
			against the live state.

			Findings are silenced with --ignore ID,... or, on one object, with the annotation
			mesh-explain.io/ignore: "D19,A07" (on an object the finding names, or on the
			Service, ServiceEntry, Pod or Gateway it is about); -o wide lists them with the
			reason.

			Exit codes: 0 when nothing at or above --fail-on was found, 79 when something was
			(the code istioctl analyze uses), and the codes of every command otherwise (1 failed,
			64 usage error, 65 malformed input).

			Output formats: table (default, grouped by the object to change), wide (every
			affected host, client, workload and waypoint, and the silenced findings), json and yaml (the
			CheckReport document, docs/output.md), sarif (SARIF 2.1.0 for code scanning,
			docs/ci.md).`),
		Example: examples(`
			# Every finding for the clients and workloads of namespace bookinfo
			kubectl mesh-explain check -n bookinfo

			# The whole mesh, failing on warnings too
			kubectl mesh-explain check -A --fail-on warning

			# Offline, in a pipeline: manifests to SARIF for code scanning
			kubectl mesh-explain check -f manifests/ -R -o sarif

			# Before merging: what a change introduces or removes against the live cluster
			kubectl mesh-explain check -f manifests/ -R --overlay --diff`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf(cmd, "check takes no arguments, got %q", args[0])
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
	fs.StringVarP(&o.Output, "output", "o", o.Output, "Output format: "+strings.Join(render.CheckFormats, "|"))
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Check the clients, workloads and waypoints of every namespace")
	fs.StringVar(&o.FailOn, "fail-on", o.FailOn, "Exit 79 when a finding at or above this severity is found: "+strings.Join(FailOnLevels, "|"))
	fs.StringSliceVar(&o.Ignore, "ignore", o.Ignore, "Silence these diagnostic IDs (D19,A07)")
	fs.BoolVar(&o.Diff, "diff", o.Diff, "With --overlay: report only the findings the change introduces or removes against the live state")
	return cmd
}

// Complete turns the flags into the scope, the read plan and the printer.
func (o *CheckOptions) Complete(cmd *cobra.Command, _ []string) error {
	if o.Load == nil {
		o.Load = source.Load
	}
	if o.Check == nil {
		o.Check = check.Run
	}
	nsSet := *o.ConfigFlags.Namespace != ""
	switch {
	case o.AllNamespaces:
		o.namespaces = nil
	case !nsSet && len(o.Filenames) > 0:
		// Files: every namespace they hold; an overlay reaches clients anywhere.
		o.namespaces = nil
	default:
		ns, err := o.Namespace()
		if err != nil {
			return err
		}
		o.namespaces = []string{ns}
	}
	p, err := render.ForCheck(o.Output, o.renderOptions(render.CheckFormats))
	if err != nil {
		return &UsageError{Cmd: cmd, Err: err}
	}
	o.printer = p
	root, err := o.meshRootNamespace()
	if err != nil {
		return err
	}
	ns := "default"
	if len(o.namespaces) == 1 {
		ns = o.namespaces[0]
	}
	o.plan = plan.NewCheck(o.namespaces, o.sourceSpec(ns), firstNonEmpty(root, o.IstioNamespace), root != "")
	return nil
}

// Validate checks flag combinations.
func (o *CheckOptions) Validate(cmd *cobra.Command) error {
	if err := o.CommonOptions.Validate(cmd); err != nil {
		return err
	}
	if o.AllNamespaces && *o.ConfigFlags.Namespace != "" {
		return usageErrorf(cmd, "give either -n or -A, not both")
	}
	if !slices.Contains(FailOnLevels, o.FailOn) {
		return usageErrorf(cmd, "invalid --fail-on %q (allowed: %s)", o.FailOn, strings.Join(FailOnLevels, ", "))
	}
	if o.Diff && !o.Overlay {
		return usageErrorf(cmd, "--diff compares an --overlay change with the live state: add --overlay and -f")
	}
	for _, id := range check.ParseIDs(strings.Join(o.Ignore, ",")) {
		if _, ok := diag.ID(id).Entry(); !ok {
			return usageErrorf(cmd, "--ignore %s: no such diagnostic (docs/diagnostics.md lists them)", id)
		}
	}
	return nil
}

// Run loads the snapshot, checks it, prints the report and fails as --fail-on says.
func (o *CheckOptions) Run(ctx context.Context) error {
	snap, err := o.plan.Load(ctx, o.loader(o.Load), o.plan.Base())
	if err != nil {
		return err
	}
	reportIssues(o.ErrOut, snap)
	opts := check.Options{Namespaces: o.namespaces, Revision: o.Revision, Ignore: o.Ignore}
	rep, err := o.Check(snap, opts)
	if err != nil {
		return err
	}
	if o.Diff {
		live := o.plan.Base()
		live.Files, live.Overlay, live.Cache = nil, false, nil
		liveSnap, err := o.plan.Load(ctx, o.loader(o.Load), live)
		if err != nil {
			return err
		}
		before, err := o.Check(liveSnap, opts)
		if err != nil {
			return err
		}
		rep = check.Diff(before, rep)
	}
	gaps := unread(snap)
	if len(gaps.what) > 0 {
		rep.Incomplete = gaps.what
		rep.Warnings = gaps.addTo(rep.Warnings)
	}
	if err := o.printer.PrintCheck(o.Out, rep); err != nil {
		return err
	}
	if n := failing(rep, o.FailOn); n > 0 {
		// Findings outrank an incomplete read: what was found is wrong either way.
		return &FindingsError{Count: n, FailOn: o.FailOn}
	}
	return o.incomplete(gaps)
}

// failing counts the findings that fail the check: not silenced, at or above failOn, and with
// --diff introduced by the change.
func failing(rep *explain.CheckReport, failOn string) int {
	if failOn == "never" {
		return 0
	}
	limit := explain.Severity(failOn).Rank()
	n := 0
	for _, f := range rep.Findings {
		if f.Ignored == "" && f.Severity.Rank() <= limit && f.Change != explain.ChangeRemoved {
			n++
		}
	}
	return n
}
